//! The README's "Quick start inside RLX" program, word for word (CI checks
//! that the two agree, builds this example and runs it).

use rlx_runtime::{Device, Session};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The fused op's kernels, and fuse-welch-peaks as an RLX IR pass deciding for the CPU.
    rlx_ext::install("cpu")?;

    let text = std::fs::read_to_string("examples/graphs/spectrogram_mean_topk.graph")?;
    let graph = rlx_ir::text::parse(&text)?;
    let eeg: Vec<f32> = (0..8 * 1024).map(|i| (i as f32 * 0.37).sin()).collect(); // input `eeg`: [8, 1024] f32

    let mut compiled = Session::new(Device::Cpu).compile(graph); // the pass runs here
    let outputs = compiled.run(&[("eeg", &eeg)]);
    println!("top bins of the first channel: {:?}", &outputs[0][..4]);

    // One JSON report per compiled graph, the same as `rlx-opt --fusion-report`:
    // "decision": "fused" for the chain above.
    for report in rlx_ext::take_fusion_reports() {
        println!("{}: {} chain(s) fused\n{}", report.graph, report.fused(), report.to_json());
    }
    // Graphs the pass could not take were compiled unfused; here is why (also logged
    // through the `log` crate under the target `rlx_ext`).
    for failure in rlx_ext::take_pass_failures() {
        eprintln!("not fused: {failure}");
    }
    Ok(())
}
