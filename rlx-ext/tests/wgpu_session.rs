//! RLX alone against RLX with `install("wgpu")` on RLX's wgpu backend
//! (lavapipe in CI): the fused ops run as rlx-opt's WGSL kernels, fitted to
//! RLX's arena, one dispatch per op (several for a multi-pass plan).

mod common;
use common::{assert_close, corpus, inputs, run, vulkan_available};
use rlx_runtime::Device;

#[test]
fn rlx_with_install_matches_rlx_alone_on_wgpu() {
    if !vulkan_available() {
        eprintln!("SKIPPED rlx_with_install_matches_rlx_alone_on_wgpu: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let corpus = corpus();
    // RLX alone on its wgpu backend. Graphs RLX 0.2.19 itself cannot run
    // there (its WelchPeaks GPU step panics on some) are left out, visibly.
    let alone: Vec<_> = corpus
        .iter()
        .map(|(name, g)| {
            let result = std::panic::catch_unwind(|| run(Device::Gpu, g.clone(), &inputs(g))).ok();
            if result.is_none() {
                eprintln!("SKIPPED {name} on wgpu: RLX alone panics on it");
            }
            result
        })
        .collect();
    rlx_ext::install("wgpu").unwrap();
    let mut on_gpu = 0;
    for ((name, graph), alone) in corpus.iter().zip(&alone) {
        let Some(alone) = alone else { continue };
        // What the registered pass makes of the graph (RLX compiles the same).
        let fused = rlx_ext::fuse(graph.clone(), "target=wgpu").unwrap();
        let text = rlx_ir::text::print(&fused);
        on_gpu += text.matches("rlx_opt.welch_peaks.wgpu.").count();
        if name.contains("n_fft=8192") {
            assert!(text.contains(".stage12") && text.contains(".peaks"), "{name}: the multi-pass plan as ops in sequence");
        }
        let with_ext = run(Device::Gpu, graph.clone(), &inputs(graph));
        assert_close(name, alone, &with_ext, 1e-4);
    }
    assert!(on_gpu >= 6, "{on_gpu} fused ops ran on the WGSL kernels");
}
