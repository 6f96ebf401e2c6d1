//! Both Welch-peaks chain forms built with rlx-ir's own builders, run by
//! RLX alone and by RLX with rlx-ext installed (`install("cpu")`), in the
//! same process: the peaks, the time of each, and what the pass decided.
//!
//!     cargo run --release -p rlx-ext --example session

use rlx_ir::ops::spectral::WindowKind;
use rlx_ir::op::{BinaryOp, ReduceOp};
use rlx_ir::{DType, Graph, Op, Shape};
use rlx_runtime::{Device, Session};
use std::time::Instant;

const BATCH: usize = 2048;
const N_FFT: usize = 256;
const SEGMENTS: usize = 8;
const K: usize = 8;

/// RLX's WelchPeaks over an FFT of zero-imaginary segments.
fn welch_native() -> Graph {
    let mut g = Graph::new("welch_native");
    let rows = BATCH * SEGMENTS;
    let x = g.input("segs", Shape::new(&[rows, N_FFT], DType::F32));
    let zeros = g.binary(BinaryOp::Sub, x, x, Shape::new(&[rows, N_FFT], DType::F32));
    let block = g.concat(vec![x, zeros], 1, Shape::new(&[rows, 2 * N_FFT], DType::F32));
    let spectrum = g.fft(block, false);
    let peaks = g.welch_peaks(spectrum, K, SEGMENTS);
    g.set_outputs(vec![peaks]);
    g
}

/// A Hann spectrogram, its mean over frames, and TopK with the values gathered.
fn spectrogram_topk() -> Graph {
    let mut g = Graph::new("spectrogram_topk");
    let signal = N_FFT / 2 * (SEGMENTS + 1);
    let x = g.input("eeg", Shape::new(&[BATCH, signal], DType::F32));
    let power = g.spectrogram(x, N_FFT, N_FFT / 2, WindowKind::Hann, true, false);
    let bins = N_FFT / 2 + 1;
    let mean = g.reduce(power, ReduceOp::Mean, vec![0], false, Shape::new(&[BATCH, bins], DType::F32));
    let top = g.add_node(Op::TopK { k: K }, vec![mean], Shape::new(&[BATCH, K], DType::F32));
    let values = g.gather_elements(mean, top, 1);
    g.set_outputs(vec![top, values]);
    g
}

fn signal(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i as f32) * 0.37).sin() + 0.5 * ((i as f32) * 0.011).cos()).collect()
}

/// Compile and run `graph` once to warm up, then time the median of 5 runs.
fn run(graph: &Graph, input: &str, data: &[f32]) -> (Vec<Vec<f32>>, f64) {
    let mut compiled = Session::new(Device::Cpu).compile(graph.clone());
    let mut out = compiled.run(&[(input, data)]);
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            out = compiled.run(&[(input, data)]);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (out, times[2])
}

fn main() -> Result<(), rlx_ext::Error> {
    let forms = [("welch_peaks over fft", welch_native(), "segs"), ("spectrogram + mean + TopK", spectrogram_topk(), "eeg")];
    let alone: Vec<_> = forms
        .iter()
        .map(|(_, g, input)| {
            let len = g.nodes()[0].shape.num_elements().expect("static input");
            run(g, input, &signal(len))
        })
        .collect();
    rlx_ext::install("cpu")?;
    for ((name, graph, input), (alone_out, alone_ms)) in forms.iter().zip(alone) {
        let len = graph.nodes()[0].shape.num_elements().expect("static input");
        let (out, ms) = run(graph, input, &signal(len));
        let head: Vec<String> = out.last().expect("an output")[..2 * K.min(4)].iter().map(|v| format!("{v:.3}")).collect();
        let same = out.len() == alone_out.len() && out.iter().zip(&alone_out).all(|(a, b)| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1.0)));
        println!("{name}: batch {BATCH}, n_fft {N_FFT}, {SEGMENTS} segments, k {K}");
        println!("  first row: [{}, …]", head.join(", "));
        println!("  RLX alone {alone_ms:.2} ms, RLX + rlx-ext {ms:.2} ms ({:.1}×), same result: {same}", alone_ms / ms);
        // What the installed pass decided when RLX compiled the graph: the
        // report `rlx-opt --fusion-report` makes (`to_json()`, `to_table()`).
        for report in rlx_ext::take_fusion_reports() {
            println!("  fuse-welch-peaks fused {} of {} candidate chain(s) of {}", report.fused(), report.candidates.len(), report.graph);
        }
    }
    Ok(())
}
