//! rlx-opt's fused FFT→Welch-peaks op inside RLX 0.2.19's own runtime,
//! through RLX's extension points: the op's extension and kernels (rlx-cpu's
//! `CpuKernel`, rlx-wgpu's `WgpuGpuKernel`, rlx-cuda's `CudaGpuKernel` with
//! the `cuda` feature), and `fuse-welch-peaks` as an RLX IR pass.
//!
//! ```no_run
//! rlx_ext::install("cpu").unwrap();
//! // Every graph RLX compiles from now on has its Welch chains fused where
//! // the CPU's IO gate says fusing pays:
//! // let compiled = rlx_runtime::Session::new(rlx_runtime::Device::Cpu).compile(graph);
//! // and what the pass decided for it:
//! for report in rlx_ext::take_fusion_reports() {
//!     println!("{}: {} chain(s) fused\n{}", report.graph, report.fused(), report.to_json());
//! }
//! ```
//!
//! The kernels are the sources in rlx-opt's `kernels/`, fitted to RLX's
//! binding conventions by rlx-opt's template step. RLX compiles and caches
//! custom GPU kernels per op name, so on a GPU each fused op is renamed for
//! its specialisation (`rlx_opt.welch_peaks.wgpu.<key>`), and a multi-pass
//! plan (n_fft > 4096) becomes its passes as ops in sequence.
//!
//! # What is process-wide
//!
//! RLX's extension points are registries of the process, so some of this
//! crate's state is too:
//! - the kernels and the op extension ([`install_kernels`]): registered
//!   once, never replaced;
//! - the installed pass ([`install`], [`install_with`]): RLX runs its
//!   registered passes on every compile of every `Session`, on every thread.
//!   A later install with other options replaces an earlier one (there is
//!   one pass) and says so: a warning through the `log` crate naming both;
//!   [`suspend`] turns it off until its guard drops and then gives back
//!   what was installed, unless someone installed or uninstalled meanwhile
//!   ([`calibrate_unfused`] suspends it this way);
//! - [`take_pass_failures`] and [`take_fusion_reports`]: what the installed
//!   pass did, queued for the process (the latest [`KEPT_FAILURES`] and
//!   [`KEPT_REPORTS`]); whoever takes them empties the queue.
//!   [`fuse_reporting`] gives a caller its own graph's report instead, and a
//!   [`Recording`] keeps its own copy of both;
//! - kernel calls and native GPU uses: a [`Recording`] is each caller's
//!   own and sees the whole process's kernels while it lives; recordings do
//!   not disturb each other.
//!
//! [`Compiled`] (what `rlx-run --engine=rlx` runs) holds no global state of
//! its own.

#![deny(missing_docs)]

mod calibrate;
mod caller_share;
mod convert;
mod engine;
mod error;
mod fitting;
mod fusion_report;
mod ir_pass;
mod kernels;
mod log_mel;
mod log_mel_ops;
mod recording;
mod registration;
mod rlx_run;
mod specialize;

use error::ExtError;
use rlx_opt::analysis::Target;
use rlx_opt::runtime::Tensor;
use std::collections::HashMap;
use std::time::Duration;

pub use fusion_report::FusionReport;
pub use ir_pass::{KEPT_FAILURES, KEPT_REPORTS, LOG_TARGET, Suspended, installed_options, suspend, uninstall};
pub use recording::{KernelCall, Recording};
pub use rlx_run::SessionEngine;

/// What went wrong: an unknown target, bad pass options, a graph the pass
/// cannot read, a kernel that could not be made, RLX refusing (or failing
/// on) a graph.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] ExtError);

/// The fused ops' extensions (shape inference, verification) and their kernels: for
/// `rlx_opt.welch_peaks` CPU, wgpu, and CUDA with the `cuda` feature; for `rlx_opt.log_mel` CPU,
/// wgpu, and CUDA with the `cuda` feature (`RLX_EXT_CUDA_LOG_MEL=0` has CUDA sessions call its
/// CPU kernel through the host instead). Idempotent.
///
/// The CPU kernel is registered under the fused op's name at once; GPU
/// kernels are registered per specialisation, when the pass (or
/// [`fuse`]) fits an op to them. Without the pass, a graph fused by the
/// `rlx-opt` command line runs the CPU kernel, staged through the host on a GPU.
pub fn install_kernels() {
    kernels::install_kernels();
    log_mel::install_log_mel();
}

/// `install_kernels()`, plus fuse-welch-peaks and fuse-log-mel as an RLX IR pass deciding for `target`
/// (the names `--target` takes). Idempotent; a second call with another target replaces the first
/// (logged as a warning under [`LOG_TARGET`]: the pass is process-wide).
pub fn install(target: &str) -> Result<(), Error> {
    Ok(ir_pass::install(target)?)
}

/// `install_kernels()`, plus fuse-welch-peaks and fuse-log-mel as an RLX IR pass with `options`
/// as the pass flags take them, and `welch-peaks=false` or `log-mel=false` to leave one fusion out: `install_with("target=wgpu profile=lavapipe.json")` decides from a device profile
/// (`rlx-run --calibrate`), as `rlx-opt --fuse-welch-peaks="target=wgpu profile=…"` does.
/// `install(target)` is `install_with("target=…")`. The pass is made by this call: a profile is
/// read once, a relative path from the working directory of this call. Bad options, or a profile
/// that cannot be read or measured another target, are this call's error. A later call with other
/// options replaces the pass, with a warning under [`LOG_TARGET`]. A graph the pass cannot take later is compiled unfused: see [`take_pass_failures`].
pub fn install_with(options: &str) -> Result<(), Error> {
    Ok(ir_pass::install_with(options)?)
}

/// The pass on an in-memory RLX graph; `options` as the pass flag takes them ("target=cuda force=true").
pub fn fuse(graph: rlx_ir::Graph, options: &str) -> Result<rlx_ir::Graph, Error> {
    Ok(ir_pass::fuse(graph, options)?)
}

/// [`fuse`], with what the pass decided for this graph: the fusion report
/// `rlx-opt --fusion-report` writes for it. Nothing process-wide is touched
/// but the kernels it registers.
pub fn fuse_reporting(graph: &rlx_ir::Graph, options: &str) -> Result<(rlx_ir::Graph, FusionReport), Error> {
    Ok(ir_pass::fuse_reporting(graph, options)?)
}

/// Why the registered pass left graphs as they were since the last call, oldest first (the
/// latest 64 are kept). RLX's passes have no error path: a graph the pass cannot take is compiled
/// unfused, and the reason is also logged through the `log` crate as a warning under the target
/// `rlx_ext` (what the pass decided is logged there at debug level).
pub fn take_pass_failures() -> Vec<Error> {
    ir_pass::take_failures().into_iter().map(Error).collect()
}

/// What the registered pass decided for each graph it fused since the last
/// call, oldest first (the latest [`KEPT_REPORTS`] are kept): one report per
/// graph RLX compiled that held a candidate chain (a graph with no FFT,
/// Welch-peaks or fused op is not looked at, and a graph the pass could not
/// take is a [`take_pass_failures`] entry instead).
pub fn take_fusion_reports() -> Vec<FusionReport> {
    ir_pass::take_reports()
}

/// RLX's device for `target`: cpu and wgpu, and cuda with the `cuda` feature.
pub fn rlx_device(target: Target) -> Result<rlx_runtime::Device, Error> {
    Ok(engine::device_for(target)?)
}

/// An rlx-opt graph compiled by RLX's own `Session` for one device, the fused
/// op's kernels installed (what `rlx-run --engine=rlx` runs): fused ops are
/// fitted to RLX's kernels for the target first, nothing else is rewritten,
/// so an unfused graph runs as RLX alone runs it. The installed pass, if
/// any, runs too, as on every compile.
pub struct Compiled(engine::Compiled);

impl Compiled {
    /// Compile `graph` (rlx-opt's IR: a `.graph` file as `rlx_opt::format`
    /// reads it) with RLX for `target`. RLX's own errors, and its panics
    /// (caught, kept off stderr), are this call's error.
    pub fn new(graph: &rlx_opt::ir::Graph, target: Target) -> Result<Compiled, Error> {
        Ok(Compiled(engine::compile(graph, target)?))
    }

    /// One run on `inputs`, by the graph's input names; the outputs in the
    /// graph's order and shapes.
    pub fn run(&mut self, inputs: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, Error> {
        Ok(self.0.run(inputs)?)
    }

    /// How many fused ops run on a GPU kernel registered with RLX (the rest
    /// run the CPU kernel, staged through the host on a GPU).
    pub fn gpu_kernels(&self) -> usize {
        self.0.gpu_kernels
    }

    /// How long RLX took to compile the graph.
    pub fn compile_time(&self) -> Duration {
        self.0.compile_time
    }
}

/// RLX running the unfused chain on `target`, measured for a device profile
/// (its `unfused` costs, as `rlx-run --calibrate` writes them): per FFT
/// length, RLX's WelchPeaks chain in RLX's own `Session`. `progress` is told
/// each step. The installed pass is suspended meanwhile ([`suspend`]).
pub fn calibrate_unfused(target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<rlx_opt::analysis::device_profile::UnfusedCost>, Error> {
    Ok(calibrate::calibrate_unfused(target, progress)?)
}

/// RLX running the unfused log-mel chain on `target` (a device profile's
/// `unfused_log_mel` costs): per FFT length, frames → `Concat` → `Fft` →
/// `LogMel` in RLX's own `Session`, as [`calibrate_unfused`] does for Welch.
pub fn calibrate_unfused_log_mel(target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<rlx_opt::analysis::device_profile::UnfusedLogMelCost>, Error> {
    Ok(calibrate::calibrate_unfused_log_mel(target, progress)?)
}

/// rlx-opt's graph of an RLX graph, exactly (through RLX's textual IR).
pub fn from_rlx(graph: &rlx_ir::Graph) -> Result<rlx_opt::ir::Graph, Error> {
    Ok(convert::from_rlx(graph)?)
}

/// The RLX graph of an rlx-opt graph, exactly (through RLX's textual IR).
pub fn to_rlx(graph: &rlx_opt::ir::Graph) -> Result<rlx_ir::Graph, Error> {
    Ok(convert::to_rlx(graph)?)
}
