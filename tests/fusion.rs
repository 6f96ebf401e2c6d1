//! `fuse-welch-peaks` then `fuse-log-mel` on every fixture in `tests/fixtures/`, for the targets
//! whose gates disagree: the rewritten graph and the fusion report, side by
//! side in one snapshot per fixture (beside it, in `tests/fixtures/snapshots/`).
//! Also checks, for every run, that rlx-ir reads the rewritten graph and that
//! the report's last after-profile is the profile of the graph the pass
//! really produced.

use insta::{assert_snapshot, glob, with_settings};
use rlx_opt::analysis::io_profile::{ProfileRules, profile_with};
use rlx_opt::analysis::{CostModel, Target};
use rlx_opt::format::rlx_text;
use rlx_opt::fused::Lowering;
use rlx_opt::fusion_report::{Candidate, Decision};
use rlx_opt::ir::Graph;
use rlx_opt::pass::{OptionError, PassContext, PassInfo, PassOptions};
use rlx_opt::passes::{fuse_log_mel, fuse_welch_peaks};
use rlx_opt::verify::verify;

/// Run `fuse-welch-peaks` as the driver does; returns the graph and the report.
fn fuse(text: &str, options: &str) -> (Graph, Vec<Candidate>) {
    fuse_with(&[&fuse_welch_peaks::INFO], text, options)
}

/// Run the passes `infos` in order, each with `options`, as a pipeline does.
fn fuse_with(infos: &[&PassInfo], text: &str, options: &str) -> (Graph, Vec<Candidate>) {
    let mut graph = rlx_text::parse(text).unwrap();
    verify(&graph).unwrap();
    let mut cx = PassContext::new(Target::Cpu, rlx_opt::pass::ReportFormat::Text);
    cx.request::<rlx_opt::fusion_report::FusionCandidates>();
    for info in infos {
        let pass = (info.create)(&PassOptions::parse(options, info).unwrap()).unwrap();
        pass.run(&mut graph, &mut cx).unwrap();
        verify(&graph).unwrap();
    }
    (graph, cx.take::<rlx_opt::fusion_report::FusionCandidates>().0)
}

fn check_invariants(name: &str, graph: &Graph, report: &[Candidate], model: CostModel) {
    let printed = rlx_text::print(graph);
    rlx_ir::text::parse(&printed).unwrap_or_else(|e| panic!("{name}: rlx-ir rejects the rewritten graph: {e}"));
    let rules = ProfileRules { count_view_outputs: model == CostModel::Corrected };
    if let Some(last) = report.iter().rev().find(|c| matches!(c.decision, Decision::Fused | Decision::Forced)) {
        assert_eq!(last.after, Some(profile_with(graph, rules)), "{name}: the report's after-profile is not the rewritten graph's");
    }
}

#[test]
fn fixtures_per_target() {
    with_settings!({ snapshot_path => "fixtures/snapshots" }, {
        glob!("fixtures/*.graph", |path| {
            let text = std::fs::read_to_string(path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy();
            let mut out = String::new();
            for target in [Target::Cpu, Target::Cuda, Target::Metal, Target::Wgpu] {
                let (graph, report) = fuse_with(&[&fuse_welch_peaks::INFO, &fuse_log_mel::INFO], &text, &format!("target={}", target.name()));
                check_invariants(&name, &graph, &report, CostModel::Rlx);
                out.push_str(&format!("// ===== target={} =====\n", target.name()));
                out.push_str(&rlx_text::print(&graph));
                out.push_str(&rlx_opt::fusion_report::to_json(&report));
            }
            assert_snapshot!(out);
        });
    });
}

#[test]
fn options_change_the_decision() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graphs/welch_native.graph")).unwrap();
    // ROCm has CUDA's gate but no kernel for the fused op: it stays a host
    // thunk like WelchPeaks, and with the spectrum returned only 2 MiB of
    // traffic is saved: rejected.
    let (graph, report) = fuse(&text, "target=rocm");
    assert_eq!(report[0].decision, Decision::Rejected);
    assert!(rlx_text::print(&graph).contains("WelchPeaks"));
    // On CUDA the native kernel also removes WelchPeaks' host round trip.
    let (graph, report) = fuse(&text, "target=cuda");
    assert_eq!(report[0].decision, Decision::Fused);
    // The fused op's attributes (bytes in the printed graph) and the report both say CUDA.
    let lowerings: Vec<_> = graph.nodes().iter().filter_map(|n| n.op.welch_peaks()).map(|a| a.unwrap().lowering).collect();
    assert_eq!(lowerings, [Some(Lowering::Cuda)]);
    assert_eq!(report[0].fused_attrs.as_ref().unwrap()["lowering"], "cuda");
    check_invariants("cuda", &graph, &report, CostModel::Rlx);
    // A lower threshold, or force, fuses it.
    let (_, report) = fuse(&text, "target=rocm min-gain-ns=0");
    assert_eq!(report[0].decision, Decision::Fused);
    let (graph, report) = fuse(&text, "target=rocm force=true");
    assert_eq!(report[0].decision, Decision::Forced);
    check_invariants("forced", &graph, &report, CostModel::Rlx);
    // Peaks-only readback: the spectrum leaves the outputs and its chain dies.
    let (graph, report) = fuse(&text, "target=rocm drop-spectrum-output=true");
    assert_eq!(report[0].decision, Decision::Fused);
    assert_eq!(graph.outputs.len(), 1);
    assert_eq!(graph.len(), 2, "{}", rlx_text::print(&graph));
    check_invariants("dropped", &graph, &report, CostModel::Rlx);
    // The corrected model prices Metal's unified readback at memory bandwidth.
    let (_, rlx) = fuse(&text, "target=metal");
    let (_, corrected) = fuse(&text, "target=metal model=corrected");
    assert_eq!(rlx[0].gate.unwrap().model, CostModel::Rlx);
    assert_eq!(corrected[0].gate.unwrap().model, CostModel::Corrected);
    // Gate knobs override the target's defaults.
    let (_, cheap) = fuse(&text, "target=cuda dispatch-ns=0 roundtrip-ns=0 memory-bw=1 readback-bw=1 unified=true thunk-penalty-ns=0");
    assert_eq!(cheap[0].gate.unwrap().device_traffic_ns, 2_097_152.0);
}

#[test]
fn bad_options_are_refused() {
    let create = |o: &str| PassOptions::parse(o, &fuse_welch_peaks::INFO).and_then(|o| (fuse_welch_peaks::INFO.create)(&o).map(|_| ()));
    assert_eq!(create("model=fast").unwrap_err().to_string(), "unknown model `fast` (expected rlx or corrected)");
    assert_eq!(create("force=yes").unwrap_err().to_string(), "option `force` of `fuse-welch-peaks` takes true or false, got `yes`");
    assert!(create("min-gain-ns=-1").unwrap_err().to_string().contains("must be a number in 0..=1e15"));
    // Each refusal is its own variant: callers can tell them apart.
    assert!(matches!(create("min-gain-ns=nan"), Err(OptionError::OutOfRange { key: "min-gain-ns", .. })));
    assert!(matches!(create("target=gpu"), Err(OptionError::UnknownTarget { .. })));
    assert!(matches!(create("force-plan=fast"), Err(OptionError::UnknownPlan { key: "force-plan", .. })));
    assert!(matches!(create("profile=/nonexistent/profile.json"), Err(OptionError::Profile(_))));
}

#[test]
fn fusion_is_linear_in_chains() {
    // Many chains in one graph: every one is fused, none is missed.
    let text = rlx_opt::testgen::welch_chains(300, 16, 32, 4, 3);
    let (graph, report) = fuse(&text, "target=cpu");
    assert_eq!(report.len(), 300);
    assert!(report.iter().all(|c| c.decision == Decision::Fused));
    assert_eq!(graph.nodes().iter().filter(|n| n.op.name() == "Custom").count(), 300);
    check_invariants("chains", &graph, &report, CostModel::Rlx);
}
