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
    use super::common::{assert_close, corpus, inputs, run};
    use rlx_runtime::{Device, Session};

    pub fn compare() {
        if !std::panic::catch_unwind(|| Session::try_new(Device::Cuda).is_ok()).unwrap_or(false) {
            eprintln!("SKIPPED rlx_with_install_matches_rlx_alone_on_cuda: no CUDA device");
            return;
        }
        let corpus = corpus();
        let alone: Vec<_> = corpus
            .iter()
            .map(|(name, g)| {
                let result = std::panic::catch_unwind(|| run(Device::Cuda, g.clone(), &inputs(g))).ok();
                if result.is_none() {
                    eprintln!("SKIPPED {name} on CUDA: RLX alone panics on it");
                }
                result
            })
            .collect();
        rlx_ext::install("cuda").unwrap();
        let mut on_gpu = 0;
        for ((name, graph), alone) in corpus.iter().zip(&alone) {
            let Some(alone) = alone else { continue };
            let fused = rlx_ext::fuse(graph.clone(), "target=cuda").unwrap();
            on_gpu += rlx_ir::text::print(&fused).matches("rlx_opt.welch_peaks.cuda.").count();
            let with_ext = run(Device::Cuda, graph.clone(), &inputs(graph));
            assert_close(name, alone, &with_ext, 1e-4);
        }
        assert!(on_gpu >= 6, "{on_gpu} fused ops ran on the CUDA kernels");
    }
}
