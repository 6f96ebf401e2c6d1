//! RLX with rlx-ext installed on RLX's CUDA backend, the log-mel op on its
//! CUDA kernels in RLX's signature (the default with the `cuda` feature;
//! `RLX_EXT_CUDA_LOG_MEL=0` would keep the host call), against RLX alone on
//! the CPU, as the wgpu test does. Needs the
//! `cuda` feature and an NVIDIA GPU (`scripts/gpu-run.sh
//! test-log_mel_cuda_session`); skips visibly otherwise. NVRTC compiles the
//! same entry points on every build (`lower::log_mel`'s NVRTC test).

mod common;

#[test]
fn log_mel_runs_as_cuda_kernels_in_rlx_cuda_sessions() {
    #[cfg(not(feature = "cuda"))]
    eprintln!("SKIPPED log_mel_runs_as_cuda_kernels_in_rlx_cuda_sessions: built without the `cuda` feature (cargo test -p rlx-ext --features cuda)");
    #[cfg(feature = "cuda")]
    on_cuda();
}

#[cfg(feature = "cuda")]
fn on_cuda() {
    use rlx_runtime::{Device, Session};
    if std::env::var("RLX_EXT_CUDA_LOG_MEL").is_ok_and(|v| v == "0") {
        return eprintln!("SKIPPED log_mel_runs_as_cuda_kernels_in_rlx_cuda_sessions: RLX_EXT_CUDA_LOG_MEL=0 keeps the op a host call");
    }
    // Fitting needs no GPU: both ops in RLX's signature, the bands the third
    // operand (with `RLX_EXT_CUDA_LOG_MEL=0` the op stays a host call: the
    // pass's `native-kernels=false`, checked in `decisions.rs`).
    let (graph, _, _) = common::log_mel::chains().swap_remove(0);
    let fused = rlx_ir::text::print(&rlx_ext::fuse(graph, "target=cuda").unwrap());
    let fitted: Vec<&str> = fused.lines().filter(|l| l.contains("rlx_opt.log_mel.cuda.")).collect();
    assert!(fitted.len() == 2 && fitted[0].contains(".bands") && fitted[1].contains(r#""num_inputs":3"#), "{fused}");
    if !std::panic::catch_unwind(|| Session::try_new(Device::Cuda).is_ok()).unwrap_or(false) {
        eprintln!("SKIPPED log_mel_runs_as_cuda_kernels_in_rlx_cuda_sessions (the run): no CUDA device");
        return;
    }
    // The warp form by default, the block form where RLX_OPT_CUDA_LOG_MEL_WARPS=0.
    eprintln!("log-mel warp form asked: {}", rlx_opt::opt_in::CudaForm::LogMelWarps.in_use());
    common::log_mel::compare_fitted(Device::Cuda, "cuda");
}
