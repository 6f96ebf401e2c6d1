//! RLX alone against RLX with `install("cpu")`, on the CPU: one test, since
//! the registered pass is process-wide (RLX alone runs first).

mod common;
use common::{assert_close, corpus, inputs, run, surplus_slots};
use rlx_runtime::Device;

#[test]
fn rlx_with_install_matches_rlx_alone_on_the_cpu() {
    let corpus = corpus();
    let alone: Vec<_> = corpus.iter().map(|(_, g)| run(Device::Cpu, g.clone(), &inputs(g))).collect();
    rlx_ext::install("cpu").unwrap();
    rlx_ext::install("cpu").unwrap(); // idempotent
    let recording = rlx_ext::Recording::start();
    let mut fused_any = 0;
    for ((name, graph), alone) in corpus.iter().zip(&alone) {
        let fused = run(Device::Cpu, graph.clone(), &inputs(graph));
        fused_any += recording.take().len();
        assert_close(name, surplus_slots(graph), alone, &fused, 1e-5);
    }
    // The pass fused chains, and their kernel ran.
    assert!(fused_any >= 6, "the fused op's CPU kernel ran {fused_any} times");

    // Ops fitted to a GPU plan (named for their wgpu kernels, a multi-pass
    // plan split into its passes) still run where a CPU runs them: the CPU
    // session here, a GPU backend staging them through the host elsewhere.
    let (mut columns, mut rows, mut partials) = (0, 0, 0);
    for ((name, graph), alone) in corpus.iter().zip(&alone) {
        let fitted = rlx_ext::fuse(graph.clone(), "target=wgpu").unwrap();
        let text = rlx_ir::text::print(&fitted);
        columns += text.matches(".columns").count();
        rows += text.matches(".rows").count();
        partials += text.matches(".partial").count();
        let fused = run(Device::Cpu, fitted, &inputs(graph));
        assert_close(&format!("fitted to wgpu, run on the CPU: {name}"), surplus_slots(graph), alone, &fused, 1e-5);
    }
    // wgpu's multi-pass plans are the four-step FFT: a `columns` op and a `rows` op each.
    assert!(rows >= 2 && columns == rows, "multi-pass plans ran on the CPU as their passes ({columns} columns, {rows} rows ops)");
    assert!(partials >= 2, "split plans ran on the CPU as their passes ({partials} partial ops)");
}
