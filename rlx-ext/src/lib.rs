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
//! ```
//!
//! The kernels are the sources in rlx-opt's `kernels/`, fitted to RLX's
//! binding conventions by rlx-opt's template step. RLX compiles and caches
//! custom GPU kernels per op name, so on a GPU each fused op is renamed for
//! its specialisation (`rlx_opt.welch_peaks.wgpu.<key>`), and a multi-pass
//! plan (n_fft > 4096) becomes its passes as ops in sequence. The work is
//! done in rlx-opt's `rlx_host` module, which `rlx-run --engine=rlx` shares.

use rlx_opt::rlx_host;

/// What went wrong: an unknown target, bad pass options, a graph the pass
/// cannot read, a kernel that could not be made.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] rlx_host::HostError);

/// The fused op's extension (shape inference, verification) and its kernels: CPU, wgpu, and CUDA
/// with the `cuda` feature. Idempotent.
///
/// The CPU kernel is registered under the fused op's name at once; GPU
/// kernels are registered per specialisation, when the pass (or
/// [`fuse`]) fits an op to them. Without the pass, a graph fused by the
/// `rlx-opt` command line runs the CPU kernel, staged through the host on a GPU.
pub fn install_kernels() {
    rlx_host::kernels::install_kernels();
}

/// `install_kernels()`, plus fuse-welch-peaks as an RLX IR pass deciding for `target`
/// (the names `--target` takes). Idempotent; a second call with another target replaces the first.
pub fn install(target: &str) -> Result<(), Error> {
    Ok(rlx_host::ir_pass::install(target)?)
}

/// `install_kernels()`, plus fuse-welch-peaks as an RLX IR pass with `options` as the pass flag
/// takes them: `install_with("target=wgpu profile=lavapipe.json")` decides from a device profile
/// (`rlx-run --calibrate`), as `rlx-opt --fuse-welch-peaks="target=wgpu profile=…"` does.
/// `install(target)` is `install_with("target=…")`. The pass is made by this call: a profile is
/// read once, a relative path from the working directory of this call. Bad options, or a profile
/// that cannot be read or measured another target, are this call's error. A later call replaces
/// the pass. A graph the pass cannot take later is compiled unfused: see [`take_pass_failures`].
pub fn install_with(options: &str) -> Result<(), Error> {
    Ok(rlx_host::ir_pass::install_with(options)?)
}

/// The pass on an in-memory RLX graph; `options` as the pass flag takes them ("target=cuda force=true").
pub fn fuse(graph: rlx_ir::Graph, options: &str) -> Result<rlx_ir::Graph, Error> {
    Ok(rlx_host::ir_pass::fuse(graph, options)?)
}

/// Why the registered pass left graphs as they were since the last call, oldest first (the
/// latest 64 are kept). RLX's passes have no error path: a graph the pass cannot take is compiled
/// unfused, and the reason is also logged through the `log` crate as a warning under the target
/// `rlx_ext` (what the pass decided is logged there at debug level).
pub fn take_pass_failures() -> Vec<Error> {
    rlx_host::ir_pass::take_failures().into_iter().map(Error).collect()
}
