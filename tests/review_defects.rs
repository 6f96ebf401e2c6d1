//! Regression tests for the defects the architecture review (issue 12)
//! found, one test each, run as a user meets them: through the binaries
//! where a user would, through the library where only a library user can.

mod common;

use rlx_opt::fused::{Lowering, WelchPeaksAttrs};
use rlx_opt::format::{mlir, rlx_text};
use rlx_opt::ir::{Graph, Op};
use rlx_opt::pass::{PassContext, PassOptions};
use rlx_opt::passes::fuse_welch_peaks;
use rlx_opt::runtime::{CpuKernel, FusedKernel, Reference, Tensor};
use std::process::Command;

fn rlx_opt(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rlx-opt")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The fused op of `welch_native.graph` after fusing, with its attributes edited.
fn fused_native_with(edit: impl Fn(&mut serde_json::Value), num_inputs: u32, operands: &str) -> String {
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graphs/welch_native.graph")).unwrap();
    let mut graph = rlx_text::parse(&source).unwrap();
    let pass = (fuse_welch_peaks::INFO.create)(&PassOptions::parse("target=cpu", &fuse_welch_peaks::INFO).unwrap()).unwrap();
    pass.run(&mut graph, &mut PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text)).unwrap();
    let text = rlx_text::print(&graph);
    let line = text.lines().find(|l| l.contains("rlx_opt.welch_peaks")).unwrap();
    let attrs = graph.nodes().iter().find_map(|n| n.op.welch_peaks()).unwrap().unwrap();
    let mut json = serde_json::to_value(attrs).unwrap();
    edit(&mut json);
    let bytes: Vec<String> = serde_json::to_vec(&json).unwrap().iter().map(|b| b.to_string()).collect();
    let op = format!(r#"{{"Custom":{{"name":"rlx_opt.welch_peaks","num_inputs":{num_inputs},"attrs":[{}]}}}}"#, bytes.join(","));
    let (head, _) = line.split_once(" = ").unwrap();
    let ty = line.rsplit_once(" : ").unwrap().1;
    text.replace(line, &format!("{head} = {op}{operands} : {ty}"))
}

/// Defect 1: the verifier indexed past the operands of a fused op whose
/// operand count disagrees with its attributes (exit 101, a panic).
#[test]
fn verifier_refuses_fused_ops_whose_operands_disagree_with_their_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("no operands", fused_native_with(|_| {}, 0, "")),
        ("window without its operand", fused_native_with(|j| j["window"] = true.into(), 1, "(%0)")),
        ("window declared, two operands given to a windowless op", fused_native_with(|_| {}, 2, "(%0, %0)")),
    ];
    for (what, text) in cases {
        let path = dir.path().join("edited.graph");
        std::fs::write(&path, &text).unwrap();
        let (code, _, stderr) = rlx_opt(&[path.to_str().unwrap()]);
        assert_eq!(code, 1, "{what}: {stderr}");
        assert!(stderr.contains("edited.graph:6:8: error:"), "{what}: no place: {stderr}");
        assert!(stderr.contains("error: `Custom` op %4"), "{what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
}

/// Defect 2: a windowed op launched without its window read out of bounds
/// on CUDA. Every kernel now checks its operands against the attributes (and
/// the GPU runtimes every buffer against the plan) before reading a value.
#[test]
fn kernels_refuse_operands_that_disagree_with_the_attributes() {
    let attrs = WelchPeaksAttrs { window: true, ..WelchPeaksAttrs::rlx(8, 2, 3) };
    let x = Tensor::zeros(vec![4, 8]);
    let short = Tensor::zeros(vec![7]);
    for kernel in [&Reference as &dyn FusedKernel, &CpuKernel] {
        let missing = kernel.run(&attrs, &x, None).unwrap_err().to_string();
        assert!(missing.contains("takes a window"), "{missing}");
        let wrong = kernel.run(&attrs, &x, Some(&short)).unwrap_err().to_string();
        assert!(wrong.contains("the window has 7 values, the op needs 8"), "{wrong}");
        assert!(kernel.run(&attrs, &Tensor::zeros(vec![5, 8]), Some(&Tensor::zeros(vec![8]))).is_err(), "5 rows are not 2-segment entries");
    }
    // The plan fixes the window binding's length the GPU runtimes check against.
    let cuda = rlx_opt::analysis::Target::Cuda;
    let plan = rlx_opt::analysis::plan(&attrs, &rlx_opt::analysis::plan::f32_type(&[4, 8]), cuda, &rlx_opt::analysis::DeviceLimits::assumed(cuda)).unwrap();
    assert_eq!(plan.kernel.unwrap().window_len, 8);
}

/// Defect 3: frames concatenated in decreasing order underflowed
/// `starts[1] - starts[0]` in the spectrogram matcher (a panic in debug builds).
#[test]
fn frames_in_decreasing_order_are_a_near_miss_not_a_panic() {
    let graph = common::spectrogram_topk(2, 64, 16, 8, rlx_ir::ops::spectral::WindowKind::Hann, 4);
    let text = rlx_ir::text::print(&graph);
    let concat = text.lines().find(|l| l.contains(r#"{"Concat":{"axis":0}}"#)).unwrap();
    let (head, rest) = concat.split_once('(').unwrap();
    let (operands, tail) = rest.split_once(')').unwrap();
    let mut reversed: Vec<&str> = operands.split(", ").collect();
    reversed.reverse();
    let edited = text.replace(concat, &format!("{head}({}){tail}", reversed.join(", ")));
    assert_ne!(edited, text);
    let mut graph: Graph = rlx_text::parse(&edited).unwrap();
    rlx_opt::verify::verify(&graph).unwrap();
    let pass = (fuse_welch_peaks::INFO.create)(&PassOptions::parse("target=cpu force=true", &fuse_welch_peaks::INFO).unwrap()).unwrap();
    let mut cx = PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text);
    cx.request::<rlx_opt::fusion_report::FusionCandidates>();
    pass.run(&mut graph, &mut cx).unwrap();
    // Reversed frames are no regular framing of one signal: the chain is
    // fused with the frames as given, never with a wrapped-around hop.
    assert!(!rlx_text::print(&graph).contains(r#"\"input_layout\":\"signal\""#));
    // And the checked attribute arithmetic refuses a hop whose segments overflow.
    let attrs = WelchPeaksAttrs { input_layout: rlx_opt::fused::InputLayout::Signal, hop: Some(u64::MAX), ..WelchPeaksAttrs::rlx(8, 3, 2) };
    let e = attrs.check().unwrap_err();
    assert!(matches!(e, rlx_opt::fused::AttrsError::SignalOverflow { segments: 3, hop: u64::MAX }), "{e}");
    assert!(e.to_string().contains("overflow"));
    // A hop on rows or frames means nothing, and is refused (it was taken).
    let rows = WelchPeaksAttrs { hop: Some(4), ..WelchPeaksAttrs::rlx(8, 3, 2) };
    assert_eq!(rows.check().unwrap_err().to_string(), "a hop is the signal layout's: the rows and frames layouts take none");
}

/// Defect 4: every output file was created 0600, and a replaced 0644 file became 0600.
#[cfg(unix)]
#[test]
fn outputs_keep_the_mode_a_plain_write_gives() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graphs/welch_native.graph");
    let replaced = dir.path().join("replaced.graph");
    std::fs::write(&replaced, "old").unwrap();
    std::fs::set_permissions(&replaced, std::fs::Permissions::from_mode(0o644)).unwrap();
    let report = dir.path().join("report.json");
    let (code, _, stderr) = rlx_opt(&["--fuse-welch-peaks", input, "-o", replaced.to_str().unwrap(), &format!("--fusion-report={}", report.display())]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(mode(&replaced), 0o644);
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    assert_eq!(mode(&report), mode(&plain), "a new file gets the umask's mode");
}

/// Defect 5: graph → MLIR → graph dropped the payload of an op rlx-opt does
/// not understand when its JSON nests deeper than serde_json reads.
#[test]
fn deeply_nested_unknown_payloads_survive_mlir() {
    let depth = 3000;
    let payload = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    let op_text = format!(r#"{{"Mystery":{payload}}}"#);
    assert!(Op::parse(&op_text).unwrap().is_opaque());
    let text = format!("graph @deep {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [4] f32 #\"x\"\n  %1 = {op_text}(%0) : [4] f32\n  return %1\n}}\n");
    let graph = rlx_text::parse(&text).unwrap();
    let module = mlir::print(std::slice::from_ref(&graph));
    let back = mlir::parse(&module, 1).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(rlx_text::print(&back[0]), text);
}

/// One lowering plan: an op past the kernels' 32-bit index range was
/// recorded as `cuda`, priced without a host round trip, then refused by
/// rlx-run. The plan that prices it now records and prices it as a host call.
#[test]
fn ops_past_every_kernel_limit_are_recorded_and_priced_as_host_calls() {
    let rows: u64 = 1 << 24; // × 256 samples: 2³² values, past the index range
    let text = format!(
        "graph @huge {{\n  %0 = {{\"Input\":{{\"name\":\"segs\"}}}} : [{rows}, 256] f32 #\"segs\"\n  %1 = {{\"Binary\":\"Sub\"}}(%0, %0) : [{rows}, 256] f32\n  %2 = {{\"Concat\":{{\"axis\":1}}}}(%0, %1) : [{rows}, 512] f32\n  %3 = {{\"Fft\":{{\"inverse\":false,\"norm\":\"Backward\",\"algo\":\"Native\"}}}}(%2) : [{rows}, 512] f32\n  %4 = {{\"WelchPeaks\":{{\"k\":16,\"n_segments\":8}}}}(%3) : [{}, 32] f32\n  return %4\n}}\n",
        rows / 8
    );
    for (target, small_lowering) in [("cuda", Lowering::Cuda), ("wgpu", Lowering::Spirv)] {
        for (graph_text, want) in [(text.clone(), Lowering::Host), (text.replace(&rows.to_string(), "2048").replace(&(rows / 8).to_string(), "256"), small_lowering)] {
            let mut graph = rlx_text::parse(&graph_text).unwrap();
            let info = &fuse_welch_peaks::INFO;
            let pass = (info.create)(&PassOptions::parse(&format!("target={target} force=true"), info).unwrap()).unwrap();
            let mut cx = PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text);
            cx.request::<rlx_opt::fusion_report::FusionCandidates>();
            pass.run(&mut graph, &mut cx).unwrap();
            let attrs = graph.nodes().iter().find_map(|n| n.op.welch_peaks()).expect("fused").unwrap().clone();
            assert_eq!(attrs.lowering, Some(want), "{target}");
            let report = cx.take::<rlx_opt::fusion_report::FusionCandidates>().0;
            let syncs = report[0].after.unwrap().sync_points;
            assert_eq!(syncs, u64::from(want == Lowering::Host), "{target}: a host call costs a round trip, a kernel none");
            // The profile of the rewritten graph agrees with the report.
            assert_eq!(rlx_opt::analysis::profile(&graph).sync_points, syncs, "{target}");
        }
    }
}

/// The verifier counts a filterbank's bins in the singular too ("1 bins").
#[test]
fn filters_of_one_bin_are_counted_in_the_singular() {
    let text = "graph @g {\n  %0 = {\"Input\":{\"name\":\"s\"}} : [3, 4] f32\n  %1 = {\"Input\":{\"name\":\"f\"}} : [2, 1] f32\n  %2 = LogMel(%0, %1) : [3, 2] f32\n  return %2\n}\n";
    let graph = rlx_opt::format::rlx_text::parse(text).unwrap();
    let e = rlx_opt::verify::verify(&graph).unwrap_err().to_string();
    assert!(e.contains("filters have 1 bin but a spectrum of width 4 has 2 bins"), "{e}");
}
