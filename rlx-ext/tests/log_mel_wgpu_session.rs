//! RLX with rlx-ext installed on RLX's wgpu backend (lavapipe in CI) against
//! RLX alone on the CPU, on RLX's own log-mel chains and the log-mel
//! fixtures: each fused op runs as two WGSL dispatches in RLX's arena (the
//! filters' bands, then the frames), no host call. RLX alone on wgpu is the
//! wrong reference here: it takes minutes on LogMel (host steps and its own
//! FFT). The output is a log: values agree within 1e-4 absolute.

mod common;
use common::log_mel::{chains, inputs, max_diff};
use common::{run, vulkan_available};
use rlx_runtime::Device;

#[test]
fn log_mel_runs_as_wgsl_kernels_in_rlx_wgpu_sessions() {
    if !vulkan_available() {
        eprintln!("SKIPPED log_mel_runs_as_wgsl_kernels_in_rlx_wgpu_sessions: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let mut cases: Vec<(String, rlx_ir::Graph, Vec<(String, Vec<f32>)>)> = chains().into_iter().map(|(g, n_fft, n_mels)| (g.name.clone(), g.clone(), inputs(&g, n_fft, n_mels))).collect();
    // The fixtures: a window and framing (the window the op's fourth
    // operand), input filters, a spectrum another op still reads.
    for (name, g) in common::corpus().into_iter().filter(|(_, g)| g.nodes().iter().any(|n| matches!(n.op, rlx_ir::Op::LogMel))) {
        let data = common::inputs(&g);
        cases.push((name, g, data));
    }
    let alone: Vec<_> = cases.iter().map(|(_, g, data)| run(Device::Cpu, g.clone(), data)).collect();

    rlx_ext::install("wgpu").unwrap();
    let mut windowed = 0;
    for ((name, graph, data), alone) in cases.iter().zip(&alone) {
        let fused = rlx_ir::text::print(&rlx_ext::fuse(graph.clone(), "target=wgpu").unwrap());
        assert!(fused.contains("rlx_opt.log_mel.wgpu.") && fused.contains(".bands"), "{name}: not fitted to the WGSL kernels:\n{fused}");
        windowed += fused.lines().any(|l| l.contains("rlx_opt.log_mel.wgpu.") && l.contains(r#""num_inputs":4"#)) as usize;
        let recording = rlx_ext::Recording::start();
        let with_ext = run(Device::Gpu, graph.clone(), data);
        let (native, hosted) = (recording.native_gpu_uses(), recording.take());
        assert!(hosted.is_empty(), "{name}: CPU kernels ran through the host: {hosted:?}");
        // Two dispatches per log-mel op (the bands, the frames), one per op
        // of a Welch-peaks plan (a fixture holds both fusions).
        let dispatches = fused.lines().filter(|l| l.contains(".wgpu.")).count();
        assert!(dispatches >= 2 && native == dispatches, "{name}: {native} dispatches, the fused graph has {dispatches} fitted ops:\n{fused}");
        let diff = max_diff(alone, &with_ext);
        assert!(diff <= 1e-4, "{name}: RLX + rlx-ext on wgpu and RLX alone on the CPU differ by {diff}");
    }
    assert!(windowed >= 1, "no windowed op among the cases");
}
