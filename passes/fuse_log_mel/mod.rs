//! `fuse-log-mel`: find frames → FFT → `LogMel` chains (RLX's Whisper-style
//! audio front end), ask the target's IO gate whether fusing each one pays,
//! and replace the ones it accepts with one `rlx_opt.log_mel` op (see
//! `src/fused/log_mel.rs` for its meaning). RLX materialises a
//! `[frames, 2·n_fft]` spectrum and runs `LogMel` as a host thunk; the
//! fused op reads the frames and writes `[frames, n_mels]`.
//!
//! The chain forms (`chain.rs`): RLX's native one, with a window
//! multiplied into the frames, with zero padding, and with
//! `Graph::spectrogram`'s framing of a signal in front. The fusing engine
//! (`passes/fusion`) prices, reports and rewrites, as for Welch peaks.

mod chain;

use crate::diag::Diagnostic;
use crate::ir::Graph;
use crate::pass::{OptionError, Pass, PassContext, PassInfo, PassOptions, Statistics};
use crate::passes::fusion::{self, FUSE_OPTIONS, FuseOptions, Fuser};
use crate::rewrite::Pattern;

pub use chain::FORM;

pub const INFO: PassInfo = PassInfo {
    name: "fuse-log-mel",
    description: "Fuse frames→FFT→LogMel chains (RLX's Whisper-style audio front end) into one rlx_opt.log_mel op where the target's IO gate says it pays",
    options: FUSE_OPTIONS,
    create,
};

fn create(options: &PassOptions) -> Result<Box<dyn Pass>, OptionError> {
    Ok(Box::new(FuseLogMel(fusion::options::read(INFO.name, options)?)))
}

/// The pass, with its options.
pub struct FuseLogMel(pub FuseOptions);

impl Pass for FuseLogMel {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&self, graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic> {
        let patterns: [&dyn Pattern<Fuser>; 1] = [&chain::PATTERN];
        fusion::run(INFO.name, &self.0, &patterns, graph, cx)
    }
}
