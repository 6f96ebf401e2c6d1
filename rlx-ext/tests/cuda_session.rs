//! RLX alone against RLX with `install("cuda")` on RLX's CUDA backend: the
//! fused ops run as rlx-opt's CUDA kernels in RLX's signature, compiled by
//! NVRTC when RLX first launches them. Needs the `cuda` feature
//! (`cargo test -p rlx-ext --features cuda`) and an NVIDIA GPU; skips
//! visibly otherwise. (NVRTC compiles the same entries on every build, GPU or
//! not: `tests/gpu.rs`.)

mod common;

#[test]
fn rlx_with_install_matches_rlx_alone_on_cuda() {
    #[cfg(not(feature = "cuda"))]
    eprintln!("SKIPPED rlx_with_install_matches_rlx_alone_on_cuda: built without the `cuda` feature (cargo test -p rlx-ext --features cuda)");
    #[cfg(feature = "cuda")]
    on_cuda::compare();
}

#[cfg(feature = "cuda")]
mod on_cuda {
    use super::common::compare_with_rlx_alone;
    use rlx_runtime::{Device, Session};

    pub fn compare() {
        if !std::panic::catch_unwind(|| Session::try_new(Device::Cuda).is_ok()).unwrap_or(false) {
            eprintln!("SKIPPED rlx_with_install_matches_rlx_alone_on_cuda: no CUDA device");
            return;
        }
        let on_gpu = compare_with_rlx_alone(Device::Cuda, "cuda", 1e-4, |_, _| {});
        assert!(on_gpu >= 6, "{on_gpu} fused ops ran on the CUDA kernels");
    }
}
