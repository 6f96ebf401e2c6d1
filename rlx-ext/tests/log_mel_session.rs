//! RLX alone against RLX with rlx-ext installed, on RLX's own log-mel
//! chains (frames → `Concat(x, Sub(x, x))` → `Fft` → `LogMel`), on the CPU:
//! one test, since the registered passes are process-wide (RLX alone runs
//! first). The output is a log: values agree within 1e-4 absolute.

mod common;
use common::log_mel::{FRAMES_WITH_INFINITIES, chains, inputs, max_diff};
use common::run;
use rlx_runtime::Device;

#[test]
fn rlx_with_install_matches_rlx_alone_on_log_mel_chains() {
    let cases = chains();
    let alone: Vec<_> = cases.iter().map(|(g, n, m)| run(Device::Cpu, g.clone(), &inputs(g, *n, *m))).collect();
    // RLX alone floors the frames holding ±∞ (its `Sub(x, x)` plane is NaN
    // there), and only those: what the fused op must match.
    for ((graph, n_fft, n_mels), alone) in cases.iter().zip(&alone) {
        let frames = alone[0].len() / n_mels;
        if frames >= FRAMES_WITH_INFINITIES {
            let floored: Vec<usize> = (0..frames).filter(|f| alone[0][f * n_mels..(f + 1) * n_mels].iter().all(|v| *v == -1.5)).collect();
            assert_eq!(floored, [0, 2], "{} (n_fft {n_fft}): RLX alone's floored frames", graph.name);
        }
    }

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
