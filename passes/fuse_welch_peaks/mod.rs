//! `fuse-welch-peaks`: find FFT → Welch-peaks chains, ask the target's IO
//! gate whether fusing each one pays, and replace the ones it accepts with
//! one `rlx_opt.welch_peaks` op (see `src/fused/mod.rs` for its meaning).
//!
//! Two chain forms, one file each: RLX's own `WelchPeaks` op (`native.rs`),
//! and the spectrogram + mean + TopK chain RLX users build from primitives
//! (`spectrogram.rs`). Both produce a [`MatchedChain`]; the fusing engine
//! (`passes/fusion`) prices, picks, reports and rewrites.

mod native;
mod spectrogram;

pub use crate::passes::fusion::spectral_front::{fft_norm, power_scale, zero_plane};
pub use crate::passes::fusion::{ChainPattern, FuseOptions, MatchedChain, form_name};

use crate::diag::Diagnostic;
use crate::ir::Graph;
use crate::pass::{OptionError, Pass, PassContext, PassInfo, PassOptions, Statistics};
use crate::passes::fusion::{self, FUSE_OPTIONS, Fuser};
use crate::rewrite::Pattern;

pub const INFO: PassInfo = PassInfo {
    name: "fuse-welch-peaks",
    description: "Fuse FFT→Welch-peaks chains into one rlx_opt.welch_peaks op where the target's IO gate says it pays",
    options: FUSE_OPTIONS,
    create,
};

fn create(options: &PassOptions) -> Result<Box<dyn Pass>, OptionError> {
    Ok(Box::new(FuseWelchPeaks(fusion::options::read(INFO.name, options)?)))
}

/// The pass, with its options.
pub struct FuseWelchPeaks(pub FuseOptions);

impl Pass for FuseWelchPeaks {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&self, graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic> {
        let patterns: [&dyn Pattern<Fuser>; 2] = [&native::PATTERN, &spectrogram::PATTERN];
        fusion::run(INFO.name, &self.0, &patterns, graph, cx)
    }
}
