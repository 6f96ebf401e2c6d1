//! RLX alone against RLX with rlx-ext installed, on RLX's own log-mel
//! chains (frames → `Concat(x, Sub(x, x))` → `Fft` → `LogMel`), on the CPU:
//! one test, since the registered passes are process-wide (RLX alone runs
//! first). The output is a log: values agree within 1e-4 absolute.

mod common;
use common::run;
use rlx_ir::op::BinaryOp;
use rlx_ir::{DType, Graph, Op, Shape};
use rlx_runtime::Device;

/// RLX's native log-mel chain on `[frames, n_fft]`, filters rlx-ir's mel
/// filterbank, as a constant or as the input `mel_filters`.
fn log_mel(frames: usize, n_fft: usize, n_mels: usize, const_filters: bool) -> Graph {
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
fn inputs(graph: &Graph, n_fft: usize, n_mels: usize) -> Vec<(String, Vec<f32>)> {
    common::inputs(graph)
        .into_iter()
        .map(|(name, data)| match name.as_str() {
            "mel_filters" => (name, rlx_ir::filterbank::mel_filterbank(16000.0, n_fft, n_mels, 0.0, 8000.0)),
            _ => (name, data),
        })
        .collect()
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).flat_map(|(x, y)| {
        assert_eq!(x.len(), y.len());
        x.iter().zip(y).map(|(p, q)| (p - q).abs())
    }).fold(0.0, f32::max)
}

#[test]
fn rlx_with_install_matches_rlx_alone_on_log_mel_chains() {
    let mut cases = Vec::new();
    for n_fft in [64, 128, 256, 400, 512, 1024] {
        for (n_mels, frames) in [(10, 1), (40, 37), (80, 37), (128, 300)] {
            for const_filters in [true, false] {
                cases.push((log_mel(frames, n_fft, n_mels, const_filters), n_fft, n_mels));
            }
        }
    }
    cases.push((log_mel(3000, 400, 80, false), 400, 80));
    let alone: Vec<_> = cases.iter().map(|(g, n, m)| run(Device::Cpu, g.clone(), &inputs(g, *n, *m))).collect();

    // Log-mel off: the chains stay RLX's.
    rlx_ext::install_with("target=cpu log-mel=false").unwrap();
    let (fused, _) = rlx_ext::fuse_reporting(&cases[0].0, "target=cpu log-mel=false").unwrap();
    assert!(!rlx_ir::text::print(&fused).contains("rlx_opt.log_mel"), "log-mel=false fused a log-mel chain");

    rlx_ext::install("cpu").unwrap();
    let recording = rlx_ext::Recording::start();
    for ((graph, n_fft, n_mels), alone) in cases.iter().zip(&alone) {
        let with_ext = run(Device::Cpu, graph.clone(), &inputs(graph, *n_fft, *n_mels));
        let calls = recording.take();
        assert_eq!(calls.len(), 1, "{}: the fused op's CPU kernel ran once, not {calls:?}", graph.name);
        let diff = max_diff(alone, &with_ext);
        assert!(diff <= 1e-4, "{}: RLX alone and with rlx-ext differ by {diff}", graph.name);
    }
    let report = recording.take_fusion_reports();
    assert_eq!(report.len(), cases.len(), "one report per graph compiled");
    assert!(report.iter().all(|r| r.fused() == 1), "every chain fused once");
}
