//! RLX's own log-mel chains, their inputs, and how far two runs differ.

use rlx_ir::op::BinaryOp;
use rlx_ir::{DType, Graph, Op, Shape};

/// RLX's native log-mel chain on `[frames, n_fft]`, filters rlx-ir's mel
/// filterbank, as a constant or as the input `mel_filters`.
pub fn log_mel(frames: usize, n_fft: usize, n_mels: usize, const_filters: bool) -> Graph {
    let mut g = Graph::new(format!("log_mel_f{frames}_n{n_fft}_m{n_mels}"));
    let x = g.input("frames", Shape::new(&[frames, n_fft], DType::F32));
    let zero = g.binary(BinaryOp::Sub, x, x, Shape::new(&[frames, n_fft], DType::F32));
    let block = g.add_node(Op::Concat { axis: 1 }, vec![x, zero], Shape::new(&[frames, 2 * n_fft], DType::F32));
    let spec = g.fft(block, false);
    let shape = Shape::new(&[n_mels, n_fft / 2 + 1], DType::F32);
    let filters = if const_filters {
        let bank = rlx_ir::filterbank::mel_filterbank(16000.0, n_fft, n_mels, 0.0, 8000.0);
        g.add_node(Op::Constant { data: bank.iter().flat_map(|v| v.to_le_bytes()).collect() }, vec![], shape)
    } else {
        g.input("mel_filters", shape)
    };
    let out = g.log_mel(spec, filters);
    g.set_outputs(vec![out]);
    g
}

/// Seeded frames in [-1, 1), and the filterbank where the filters are an input.
/// Where the chain has frames to spare ([`FRAMES_WITH_INFINITIES`] or more),
/// +∞ at sample 0 of frame 0 and at sample 100 of frame 2 (the last sample
/// of shorter frames): RLX's `Sub(x, x)` plane is NaN there, so each mel of
/// those frames is RLX's floor, −1.5, and the fused op (`inf_is_nan`) must
/// give the same.
pub fn inputs(graph: &Graph, n_fft: usize, n_mels: usize) -> Vec<(String, Vec<f32>)> {
    super::inputs(graph)
        .into_iter()
        .map(|(name, mut data)| match name.as_str() {
            "mel_filters" => (name, rlx_ir::filterbank::mel_filterbank(16000.0, n_fft, n_mels, 0.0, 8000.0)),
            "frames" if data.len() >= FRAMES_WITH_INFINITIES * n_fft => {
                data[0] = f32::INFINITY;
                data[2 * n_fft + 100.min(n_fft - 1)] = f32::INFINITY;
                (name, data)
            }
            _ => (name, data),
        })
        .collect()
}

/// The frame count from which [`inputs`] puts +∞ into frames 0 and 2.
pub const FRAMES_WITH_INFINITIES: usize = 37;

/// The largest |a − b| over every output, ∞ where either is NaN or one
/// alone is infinite (a fold by `f32::max` alone passes a NaN over).
pub fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    max_diff_by_output(a, b, &[])
}

/// As [`max_diff`], but the outputs `relative` marks (a Welch op's peaks,
/// whose powers run to thousands, where one ulp is 1.2e-4) take
/// |a − b| / max(1, |a|, |b|); the others, log-mel values, stay absolute.
pub fn max_diff_by_output(a: &[Vec<f32>], b: &[Vec<f32>], relative: &[bool]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).enumerate().flat_map(|(i, (x, y))| {
        assert_eq!(x.len(), y.len());
        let scaled = relative.get(i).copied().unwrap_or(false);
        x.iter().zip(y).map(move |(&p, &q)| match (p, q) {
            _ if p == q => 0.0,
            _ if !(p.is_finite() && q.is_finite()) => f32::INFINITY,
            _ if scaled => (p - q).abs() / 1f32.max(p.abs()).max(q.abs()),
            _ => (p - q).abs(),
        })
    }).fold(0.0, f32::max)
}

/// Which of `graph`'s outputs a Welch-peaks op makes ([`max_diff_by_output`]'s
/// `relative`).
pub fn welch_outputs(graph: &Graph) -> Vec<bool> {
    graph.outputs.iter().map(|id| matches!(graph.node(*id).op, rlx_ir::Op::WelchPeaks { .. })).collect()
}

/// The chains both sessions are tested on, with their n_fft and n_mels:
/// n_fft {64, 128, 256, 400, 512, 1024} × (mels, frames) {(10, 1), (40, 37),
/// (80, 37), (128, 300)} × filters constant and input, Whisper's clip, and
/// 37 frames of the odd length 375.
pub fn chains() -> Vec<(Graph, usize, usize)> {
    let mut cases = Vec::new();
    for n_fft in [64, 128, 256, 400, 512, 1024] {
        for (n_mels, frames) in [(10, 1), (40, 37), (80, 37), (128, 300)] {
            for const_filters in [true, false] {
                cases.push((log_mel(frames, n_fft, n_mels, const_filters), n_fft, n_mels));
            }
        }
    }
    cases.push((log_mel(3000, 400, 80, false), 400, 80));
    // An odd length: a transform of its own per frame (not packed), where
    // ±∞ at a sample no twiddle multiplies gives ∞, not NaN, unless the
    // load makes it NaN (see `inputs`).
    cases.push((log_mel(37, 375, 40, true), 375, 40));
    cases
}

/// RLX with rlx-ext installed for `target` on `device` against RLX alone
/// on the CPU, on [`chains`] and the corpus's log-mel fixtures (a window and
/// framing, input filters, a spectrum another op still reads): each fused op
/// fitted to `target`'s kernels, two dispatches each (the bands, the
/// frames), none through the host, within 1e-4 (absolute; relative for a
/// fixture's Welch peaks: [`max_diff_by_output`]). Every case runs before a
/// difference fails the test, so one run names them all.
pub fn compare_fitted(device: rlx_runtime::Device, target: &str) {
    /// A case's inputs, by name.
    type Inputs = Vec<(String, Vec<f32>)>;
    let mut cases: Vec<(String, rlx_ir::Graph, Inputs)> = chains().into_iter().map(|(g, n_fft, n_mels)| (g.name.clone(), g.clone(), inputs(&g, n_fft, n_mels))).collect();
    // The fixtures: a window and framing (the window the op's fourth
    // operand), input filters, a spectrum another op still reads.
    for (name, g) in super::corpus().into_iter().filter(|(_, g)| g.nodes().iter().any(|n| matches!(n.op, rlx_ir::Op::LogMel))) {
        let data = super::inputs(&g);
        cases.push((name, g, data));
    }
    let alone: Vec<_> = cases.iter().map(|(_, g, data)| super::run(rlx_runtime::Device::Cpu, g.clone(), data)).collect();

    rlx_ext::install(target).unwrap();
    let fitted = format!("rlx_opt.log_mel.{target}.");
    let mut windowed = 0;
    let mut differ = Vec::new();
    for ((name, graph, data), alone) in cases.iter().zip(&alone) {
        let fused = rlx_ir::text::print(&rlx_ext::fuse(graph.clone(), &format!("target={target}")).unwrap());
        assert!(fused.contains(&fitted) && fused.contains(".bands"), "{name}: not fitted to the {target} kernels:\n{fused}");
        windowed += fused.lines().any(|l| l.contains(&fitted) && l.contains(r#""num_inputs":4"#)) as usize;
        let recording = rlx_ext::Recording::start();
        let with_ext = super::run(device, graph.clone(), data);
        let (native, hosted) = (recording.native_gpu_uses(), recording.take());
        assert!(hosted.is_empty(), "{name}: CPU kernels ran through the host: {hosted:?}");
        // Two dispatches per log-mel op (the bands, the frames), one per op
        // of a Welch-peaks plan (a fixture holds both fusions).
        let dispatches = fused.lines().filter(|l| l.contains(&format!(".{target}."))).count();
        assert!(dispatches >= 2 && native == dispatches, "{name}: {native} dispatches, the fused graph has {dispatches} fitted ops:\n{fused}");
        let diff = max_diff_by_output(alone, &with_ext, &welch_outputs(graph));
        if diff > 1e-4 {
            differ.push(format!("{name}: RLX + rlx-ext on {target} and RLX alone on the CPU differ by {diff}"));
        }
    }
    assert!(differ.is_empty(), "{} of {} cases differ:\n{}", differ.len(), cases.len(), differ.join("\n"));
    assert!(windowed >= 1, "no windowed op among the cases");
}
