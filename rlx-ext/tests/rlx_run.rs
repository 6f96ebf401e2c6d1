//! `rlx-run` end to end: inputs from .npy or a seed, outputs as .npy, the
//! one-line summary of `--repeat`, Chrome traces, and clear errors. Run from
//! the repository root, as the README's commands are.

mod cli;
mod common;
use cli::{rlx_opt_in_process, write_npy};
use std::path::{Path, PathBuf};

fn rlx_run(args: &[&str]) -> (i32, String, String) {
    let out = cli::rlx_run(args);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-run-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_npy(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let npy = npyz::NpyFile::new(std::fs::File::open(path).unwrap()).unwrap();
    let shape = npy.shape().to_vec();
    (shape, npy.into_vec::<f32>().unwrap())
}

const GRAPH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/native_zero_constant.graph");

#[test]
fn outputs_are_npy_files_named_by_index_and_name() {
    let dir = tmp("outputs");
    let input = dir.join("segs.npy");
    let data: Vec<f32> = (0..16).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    write_npy(&input, &[4, 4], &data);
    let out = dir.join("out");
    let (code, stdout, stderr) = rlx_run(&[GRAPH, "--input", &format!("segs={}", input.display()), "--output-dir", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty());
    let (shape, peaks) = read_npy(&out.join("0_peaks.npy"));
    assert_eq!(shape, [2, 6]);
    // The same graph fused: the same peaks from the native kernel.
    let fused = dir.join("fused.graph");
    assert_eq!(rlx_opt_in_process(&["--fuse-welch-peaks", GRAPH, "-o", fused.to_str().unwrap()]), 0);
    let out2 = dir.join("out2");
    let (code, _, stderr) = rlx_run(&[fused.to_str().unwrap(), "--input", &format!("segs={}", input.display()), "--output-dir", out2.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let (fused_shape, fused_peaks) = read_npy(&out2.join("0_peaks.npy"));
    assert_eq!(fused_shape, [2, 6]);
    for (a, b) in peaks.iter().zip(&fused_peaks) {
        assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{peaks:?} vs {fused_peaks:?}");
    }
}

#[test]
fn repeat_prints_one_json_line_and_trace_has_an_event_per_op() {
    let dir = tmp("repeat");
    let trace = dir.join("trace.json");
    let (code, stdout, stderr) = rlx_run(&[GRAPH, "--random-inputs=3", "--repeat", "4", "--trace", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["runs"], 4);
    for key in ["median_ms", "min_ms", "max_ms", "signals_per_s"] {
        assert!(summary[key].as_f64().is_some_and(|v| v > 0.0), "{key} in {stdout}");
    }
    assert!(stdout.starts_with(r#"{"runs":4,"median_ms":"#));
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    assert_eq!(events[4]["cat"], "WelchPeaks");
    assert_eq!(events[4]["ph"], "X");
    assert!(events[4]["args"]["bytes_read"].as_u64() == Some(4 * 32));
}

#[test]
fn bad_inputs_get_clear_errors() {
    let dir = tmp("errors");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![], "missing input `segs` (shape [4, 4])"),
        (vec!["--input".into(), format!("nope={}", dir.join("x.npy").display())], "the graph has no input `nope` (inputs: segs)"),
        (vec!["--input".into(), format!("segs={}", dir.join("missing.npy").display())], "cannot read"),
        (vec!["--target=tpu".into(), "--random-inputs=1".into()], "target `tpu` has no runtime here"),
    ];
    for (args, expected) in cases {
        let mut all = vec![GRAPH.to_string()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let (code, _, stderr) = rlx_run(&refs);
        assert_eq!(code, 1, "{all:?}: {stderr}");
        assert!(stderr.contains(expected), "{all:?}: {stderr}");
        assert!(!stderr.contains("panicked"));
    }
    // A malformed --input is a usage error (exit 2): tests/hardening.rs.
    let wrong_shape = dir.join("wrong.npy");
    write_npy(&wrong_shape, &[2, 8], &[0f32; 16]);
    let (code, _, stderr) = rlx_run(&[GRAPH, "--input", &format!("segs={}", wrong_shape.display())]);
    assert_eq!((code, stderr.contains("must have shape [4, 4], the file has [2, 8]")), (1, true), "{stderr}");
    let wrong_type = dir.join("f64.npy");
    write_npy(&wrong_type, &[4, 4], &[0f64; 16]);
    let (code, _, stderr) = rlx_run(&[GRAPH, "--input", &format!("segs={}", wrong_type.display())]);
    assert_eq!((code, stderr.contains("must be little-endian float32")), (1, true), "{stderr}");
    let unsupported = dir.join("softmax.graph");
    std::fs::write(&unsupported, "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n  %1 = {\"Softmax\":{\"axis\":0}}(%0) : [2] f32\n  return %1\n}\n").unwrap();
    let (code, _, stderr) = rlx_run(&[unsupported.to_str().unwrap(), "--random-inputs=1"]);
    assert_eq!((code, stderr.contains("`Softmax` op %1: this op cannot be run")), (1, true), "{stderr}");
    // An op RLX does not know: said of its node and line, in one clipped
    // line (RLX's own message listed its every op, 3.4 KB: an adversarial run).
    let unknown = dir.join("unknown.graph");
    std::fs::write(&unknown, "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n\n  %1 = {\"Frobnicate\":{\"x\":1}}(%0) : [2] f32\n  return %0\n}\n").unwrap();
    let (code, _, stderr) = rlx_run(&["--engine=rlx", unknown.to_str().unwrap(), "--random-inputs=1"]);
    let want = format!("rlx-run: error: {}: --engine=rlx --target=cpu: converting the graph to rlx-ir: `Frobnicate` op %1 (line 4): RLX cannot take it: not a valid op: unknown variant `Frobnicate`", unknown.display());
    assert_eq!((code, stderr.starts_with(&want), stderr.lines().count()), (1, true, 1), "{stderr}");
    assert!(stderr.len() < want.len() + 200, "{stderr}");
    let (code, _, _) = rlx_run(&[GRAPH, "--bogus"]);
    assert_eq!(code, 2);
}

/// `--engine=rlx` runs the graph through RLX's own Session (kernels
/// installed) with the same inputs, outputs, `--repeat` JSON and `--trace`
/// as the interpreter: the two agree on a fused graph and an unfused one.
#[test]
fn engine_rlx_runs_through_rlx_and_agrees_with_the_interpreter() {
    let fused = tmp("engine_rlx").join("fused.graph");
    assert_eq!(rlx_opt_in_process(&["--fuse-welch-peaks=force=true", "examples/graphs/spectrogram_mean_topk.graph", "-o", fused.to_str().unwrap()]), 0);
    for graph in [fused.to_str().unwrap(), "examples/graphs/welch_native.graph"] {
        let mut outputs = Vec::new();
        for engine in ["interp", "rlx"] {
            let dir = tmp(&format!("engine_{engine}_out"));
            let (code, _, err) = rlx_run(&["--engine", engine, "--random-inputs=7", graph, "--output-dir", dir.to_str().unwrap()]);
            assert_eq!(code, 0, "{engine}: {err}");
            outputs.push((0..2).map(|i| std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(&format!("{i}"))).map(|p| read_npy(&p)).unwrap()).collect::<Vec<_>>());
        }
        for ((shape_a, a), (shape_b, b)) in outputs[0].iter().zip(&outputs[1]) {
            assert_eq!(shape_a, shape_b, "{graph}");
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1.0), "{graph}: interp {x}, rlx {y}");
            }
        }
    }
    let trace_path = tmp("engine_rlx_trace").join("trace.json");
    let (code, out, err) = rlx_run(&["--engine=rlx", "--random-inputs=7", fused.to_str().unwrap(), "--repeat=2", "--trace", trace_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(summary["runs"], 2);
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let names: Vec<&str> = trace["traceEvents"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"rlx compile") && names.contains(&"rlx run") && names.contains(&"rlx_opt.welch_peaks"), "{names:?}");
    // Without --repeat the one run is the trace's, as long as it took, and
    // the fused op's call lies within it (it was 0 µs long, stamped after).
    let (code, _, err) = rlx_run(&["--engine=rlx", "--random-inputs=7", fused.to_str().unwrap(), "--trace", trace_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let event = |name: &str| trace["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap();
    let (run, call) = (event("rlx run"), event("rlx_opt.welch_peaks"));
    let span = |e: &serde_json::Value| (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap());
    let ((run_start, run_end), (call_start, call_end)) = (span(&run), span(&call));
    assert!(run_start <= call_start && call_end <= run_end && call_end > call_start, "run {run}, call {call}");
    let (code, _, err) = rlx_run(&["--engine=rlx", "--target=metal", "--random-inputs=7", fused.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("--engine=rlx --target=metal") && err.contains("no RLX backend"), "{err}");
}

/// The Whisper-like chain RLX printed, fused by `fuse_flag`, through RLX's
/// Session on `target` (`--engine=rlx`) agrees with the interpreter on the
/// unfused chain; `check_trace` is handed rlx-run's trace of the fused run.
fn log_mel_through_rlx_matches_the_interpreter(name: &str, fuse_flag: &str, target: &str, check_trace: impl Fn(&str)) {
    let dir = tmp(name);
    let fused = dir.join("fused.graph");
    let original = "examples/graphs/log_mel_whisper_like.graph";
    assert_eq!(rlx_opt_in_process(&[fuse_flag, original, "-o", fused.to_str().unwrap()]), 0);
    assert!(std::fs::read_to_string(&fused).unwrap().contains("rlx_opt.log_mel"), "not fused");
    let mut outputs = Vec::new();
    for (engine, target, graph) in [("interp", "cpu", original), ("rlx", target, fused.to_str().unwrap())] {
        let out = dir.join(engine);
        let trace = dir.join(format!("{engine}.json"));
        let (code, _, err) = rlx_run(&["--engine", engine, "--target", target, "--random-inputs=3", graph, "--output-dir", out.to_str().unwrap(), "--trace", trace.to_str().unwrap()]);
        assert_eq!(code, 0, "{engine}: {err}");
        outputs.push(read_npy(&out.join("0.npy")));
        if engine == "rlx" {
            check_trace(&std::fs::read_to_string(trace).unwrap());
        }
    }
    assert_eq!(outputs[0].0, [300, 40]);
    assert_eq!(outputs[0].0, outputs[1].0);
    for (x, y) in outputs[0].1.iter().zip(&outputs[1].1) {
        assert!((x - y).abs() <= 1e-4, "interp (unfused) {x}, rlx on {target} (fused) {y}");
    }
}

/// The fused log-mel op through RLX's Session (`--engine=rlx`, its CPU
/// kernel registered by rlx-ext) agrees with the interpreter on the unfused
/// Whisper-like chain RLX printed; the trace names the kernel.
#[test]
fn engine_rlx_runs_the_fused_log_mel_op() {
    log_mel_through_rlx_matches_the_interpreter("engine_rlx_log_mel", "--fuse-log-mel", "cpu", |trace| {
        assert!(trace.contains("\"rlx_opt.log_mel\""), "the fused op's kernel ran in RLX: {trace}");
    });
}

/// On wgpu (lavapipe in CI) the log-mel op fused for wgpu runs as its WGSL
/// kernels in RLX's Session: the trace counts them, no CPU kernel runs
/// through the host, and the result is the interpreter's on the unfused chain.
#[test]
fn engine_rlx_runs_the_log_mel_wgsl_kernels_on_wgpu() {
    if !common::vulkan_available() {
        eprintln!("SKIPPED engine_rlx_runs_the_log_mel_wgsl_kernels_on_wgpu: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    log_mel_through_rlx_matches_the_interpreter("engine_rlx_log_mel_wgpu", "--fuse-log-mel=target=wgpu force=true", "wgpu", |trace| {
        assert!(trace.contains(r#""gpu_kernels":1}"#), "one fused op on the WGSL kernels: {trace}");
        assert!(!trace.contains(r#""rlx_opt.log_mel"#), "a CPU kernel ran through the host: {trace}");
    });
}

/// The interpreter on wgpu runs a log-mel op fused for the CPU whose
/// length the WGSL kernels take not (n_fft 98 = 2·7²) on the CPU kernel,
/// and says so; it was refused (an adversarial run).
#[test]
fn rlx_run_on_wgpu_runs_a_cpu_fused_op_the_gpu_takes_not_on_the_cpu() {
    if !common::vulkan_available() {
        eprintln!("SKIPPED rlx_run_on_wgpu_runs_a_cpu_fused_op_the_gpu_takes_not_on_the_cpu: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let dir = tmp("cpu_fused_on_wgpu");
    let graph = dir.join("n98.graph");
    std::fs::write(&graph, "graph @g {\n  %0 = {\"Input\":{\"name\":\"frames\"}} : [4, 98] f32\n  %1 = {\"Binary\":\"Sub\"}(%0, %0) : [4, 98] f32\n  %2 = {\"Concat\":{\"axis\":1}}(%0, %1) : [4, 196] f32\n  %3 = {\"Fft\":{\"inverse\":false,\"norm\":\"Backward\",\"algo\":\"Native\"}}(%2) : [4, 196] f32\n  %4 = {\"Input\":{\"name\":\"filters\"}} : [3, 50] f32\n  %5 = LogMel(%3, %4) : [4, 3] f32\n  return %5\n}\n").unwrap();
    let fused = dir.join("fused.graph");
    assert_eq!(rlx_opt_in_process(&["--fuse-log-mel=force=true", graph.to_str().unwrap(), "-o", fused.to_str().unwrap()]), 0);
    let mut outputs = Vec::new();
    for (target, file) in [("cpu", &graph), ("wgpu", &fused)] {
        let out = dir.join(target);
        let (code, _, err) = rlx_run(&["--target", target, "--random-inputs=3", file.to_str().unwrap(), "--output-dir", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{target}: {err}");
        if target == "wgpu" {
            assert!(err.contains("rlx-run: note: an op fused for the CPU ran on the CPU kernel: not fused on the GPU: n_fft 98 has a prime factor above 5 (7)"), "{err}");
        }
        outputs.push(read_npy(&out.join("0.npy")));
    }
    for (x, y) in outputs[0].1.iter().zip(&outputs[1].1) {
        assert!((x - y).abs() <= 1e-4, "unfused {x}, fused on wgpu {y}");
    }
}

/// RLX 0.2.19's wgpu backend panics running a Welch-peaks chain over no
/// segments (mapping a buffer of no bytes in rlx-wgpu's buffer.rs): rlx-run
/// says once that RLX failed, without the panic's own message on stderr,
/// and exits 1. (`tests/fixtures/mixed_opaque_dead.graph` panicked there
/// too; its LogMel beside other ops is now refused before RLX runs it.)
#[test]
fn rlx_panics_are_caught_quietly() {
    let dir = tmp("rlx_panics");
    let graph = dir.join("no_segments.graph");
    std::fs::write(
        &graph,
        r#"graph @no_segments {
  %0 = {"Input":{"name":"segs"}} : [0, 16] f32 #"segs"
  %1 = {"Binary":"Sub"}(%0, %0) : [0, 16] f32
  %2 = {"Concat":{"axis":1}}(%0, %1) : [0, 32] f32
  %3 = {"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}(%2) : [0, 32] f32
  %4 = {"WelchPeaks":{"k":2,"n_segments":1}}(%3) : [0, 4] f32
  return %4
}
"#,
    )
    .unwrap();
    let (code, out, err) = rlx_run(&["--engine=rlx", "--target=wgpu", "--random-inputs=1", graph.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(!err.contains("panicked at"), "{err}");
    // Lines of the Vulkan loader's about its environment are not rlx-run's.
    assert_eq!(err.lines().filter(|l| !l.contains("XDG_RUNTIME_DIR")).count(), 1, "{err}");
    let said = format!("rlx-run: error: {}: --engine=rlx --target=wgpu: RLX's wgpu backend failed on this graph (a defect of RLX 0.2.19): it panicked in run at rlx-wgpu-0.2.19/src/", graph.display());
    assert!(err.starts_with(&said), "{err}");
}

/// RLX 0.2.19's wgpu backend runs a LogMel right only where every other op
/// is one the LogMel needs: the fixture fused for Welch peaks only (a fused
/// op after the LogMel) read back zeros with exit 0 (an adversarial run), and
/// any op after it does so too; an op it does not need before it never
/// returned. rlx-run refuses those graphs before RLX sees them, naming the
/// way out; a LogMel with only its own chain still runs, and right.
#[test]
fn engine_rlx_refuses_a_log_mel_rlx_s_wgpu_backend_would_get_wrong() {
    let dir = tmp("lost_log_mel");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/spectrum_feeds_logmel.graph");
    let welch_only = dir.join("welch_only.graph");
    assert_eq!(rlx_opt_in_process(&["--fuse-welch-peaks=force=true", fixture, "-o", welch_only.to_str().unwrap()]), 0);
    let text = std::fs::read_to_string(fixture).unwrap();
    let log_mel_only = text.replace("  %6 = {\"WelchPeaks\":{\"k\":4,\"n_segments\":3}}(%4) : [2, 8] f32\n", "").replace("return %6, %5", "return %5");
    let consumed = log_mel_only.replace("  return %5", "  %8 = {\"Binary\":\"Add\"}(%5, %5) : [6, 4] f32\n  return %8");
    let beside = text.replace("(%4) : [2, 8] f32", "(%0, %0) : [2, 8] f32").replace("{\"WelchPeaks\":{\"k\":4,\"n_segments\":3}}", "{\"Binary\":\"Add\"}").replace("[2, 8] f32", "[6, 32] f32");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let refused = [
        (welch_only.to_str().unwrap().to_string(), "%5 (LogMel) is beside %6 (Custom)"),
        (write("consumed.graph", &consumed), "%5 (LogMel) is beside %8 (Binary)"),
        (write("beside.graph", &beside), "%5 (LogMel) is beside %6 (Binary)"),
    ];
    for (graph, beside) in &refused {
        let (code, out, err) = rlx_run(&["--engine=rlx", "--target=wgpu", "--random-inputs=1", graph]);
        assert_eq!((code, out.as_str()), (1, ""), "{graph}: {err}");
        let said = format!("rlx-run: error: {graph}: --engine=rlx --target=wgpu: RLX: its wgpu backend (0.2.19) runs a LogMel right only where every other op is one the LogMel needs (beside others it reads back as zeros, or the run never returns): {beside}; fuse it (rlx-opt --fuse-log-mel) or run on cpu");
        assert!(err.lines().any(|l| l == said), "{graph}: {err}");
        // On the CPU, RLX runs it.
        let (code, _, err) = rlx_run(&["--engine=rlx", "--target=cpu", "--random-inputs=1", graph]);
        assert_eq!(code, 0, "{graph}: {err}");
    }
    if !common::vulkan_available() {
        eprintln!("SKIPPED the LogMel alone on RLX's wgpu backend: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let alone = write("alone.graph", &log_mel_only);
    let (code, rlx, err) = rlx_run(&["--engine=rlx", "--target=wgpu", "--random-inputs=1", &alone]);
    assert_eq!(code, 0, "{err}");
    let (code, interpreted, err) = rlx_run(&["--random-inputs=1", &alone]);
    assert_eq!(code, 0, "{err}");
    let values = |summary: &str| -> Vec<f32> {
        let list = summary.split(": [").nth(1).unwrap().trim_end().trim_end_matches(']');
        list.split(", ").filter(|v| *v != "…").map(|v| v.parse().unwrap()).collect()
    };
    let (rlx, interpreted) = (values(&rlx), values(&interpreted));
    assert!(rlx.iter().any(|v| *v != 0.0), "{rlx:?}");
    assert!(rlx.iter().zip(&interpreted).all(|(a, b)| (a - b).abs() <= 1e-4), "{rlx:?} vs {interpreted:?}");
}

/// RLX 0.2.19's wgpu backend folds an unfused WelchPeaks and its FFT into
/// one kernel and loses the spectrum where the graph returns it too: the
/// README's `welch_native.graph` failed with "run: 1 outputs, the graph
/// returns 2" (an adversarial run). rlx-run says why before RLX runs it;
/// fused, the graph runs there, and without the spectrum returned RLX runs
/// it too.
#[test]
fn engine_rlx_refuses_a_spectrum_rlx_s_wgpu_backend_would_lose() {
    let dir = tmp("lost_spectrum");
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/graphs/welch_native.graph");
    let (code, out, err) = rlx_run(&["--engine=rlx", "--target=wgpu", "--random-inputs=1", readme]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    let said = format!("rlx-run: error: {readme}: --engine=rlx --target=wgpu: RLX: it drops the spectrum of an FFT that WelchPeaks reads where the peaks are returned too (0.2.19, every target but the cpu): %3 (Fft) is returned, and so is %4 (WelchPeaks), which reads it; fuse the chain (rlx-opt --fuse-welch-peaks), set RLX_NO_IO_PEAKS_OUTPUT=1, or run on cpu");
    assert!(err.lines().any(|l| l == said), "{err}");
    // An input returned beside the peaks it feeds is kept: only an FFT's
    // spectrum is dropped (a first rule refused this too: a review).
    let input_returned = dir.join("input_returned.graph");
    let text = "graph @g {\n  %0 = {\"Input\":{\"name\":\"spectra\"}} : [16, 512] f32 #\"spectra\"\n  %1 = {\"WelchPeaks\":{\"k\":4,\"n_segments\":8}}(%0) : [2, 8] f32\n  return %0, %1\n}\n";
    std::fs::write(&input_returned, text).unwrap();
    let (_, _, err) = rlx_run(&["--engine=rlx", "--target=wgpu", "--random-inputs=1", input_returned.to_str().unwrap()]);
    assert!(!err.contains("drops the spectrum"), "{err}");
    if !common::vulkan_available() {
        eprintln!("SKIPPED the fused chain on RLX's wgpu backend: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let fused = dir.join("fused.graph");
    assert_eq!(rlx_opt_in_process(&["--fuse-welch-peaks", readme, "-o", fused.to_str().unwrap()]), 0);
    let peaks_only = dir.join("peaks_only.graph");
    std::fs::write(&peaks_only, std::fs::read_to_string(readme).unwrap().replace("return %3, %4", "return %4")).unwrap();
    for graph in [&fused, &peaks_only] {
        let (code, _, err) = rlx_run(&["--engine=rlx", "--target=wgpu", "--random-inputs=1", graph.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {err}", graph.display());
    }
}

/// A folder given for the profile is refused before anything is measured
/// (it was refused after the whole calibration, a minute on lavapipe: an
/// adversarial run): before the device is even opened, so a target this
/// machine cannot measure says so second.
#[test]
fn calibrate_refuses_a_folder_first() {
    let dir = tmp("calibrate_folder");
    for target in ["--target=cpu", "--target=cuda"] {
        let (code, out, err) = rlx_run(&["--calibrate", target, "-o", dir.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (1, ""), "{err}");
        assert_eq!(err, format!("rlx-run: error: cannot write '{}': it is a directory\n", dir.display()));
    }
}

/// `--calibrate` measures the CPU and writes a profile the pass takes; the
/// profile's own checks hold a measurement and a prediction per plan and
/// shape; misuse is a usage error.
#[test]
fn calibrate_writes_a_profile_the_pass_takes() {
    let dir = tmp("calibrate");
    let path = dir.join("cpu.json");
    let (code, _, err) = rlx_run(&["--calibrate", "--target=cpu", "-o", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("each plan measured against the profile's prediction"), "{err}");
    let profile = rlx_opt::analysis::device_profile::DeviceProfile::load(path.to_str().unwrap()).unwrap();
    assert_eq!(profile.target, "cpu");
    assert_eq!(profile.fft.iter().map(|f| f.n_fft).collect::<Vec<_>>(), [64, 256, 1024, 4096, 16384]);
    assert!(profile.fft.iter().all(|f| f.pair_ns > 0.0), "{:?}", profile.fft);
    assert_eq!(profile.checks.len(), 10);
    assert!(profile.checks.iter().all(|c| c.measured_ms > 0.0 && c.predicted_ms > 0.0));
    // RLX's unfused chain is measured where rlx-run has RLX (this one has,
    // and RLX has a CPU backend); rlx-opt's driver without RLX skips it,
    // saying so (`run_cli`'s unit tests).
    assert_eq!(profile.unfused.len(), 5, "{err}");
    // And the log-mel op, fused (its kernel) and unfused (RLX), per length.
    assert_eq!(profile.log_mel.iter().map(|m| m.n_fft).collect::<Vec<_>>(), [64, 256, 400, 512, 1024]);
    assert!(profile.log_mel.iter().all(|m| m.frame_ns > 0.0), "{:?}", profile.log_mel);
    assert_eq!(profile.unfused_log_mel.len(), 5, "{err}");
    assert!(!err.contains("not measured: RLX's unfused log-mel chain on cpu"), "{err}");
    assert!(profile.unfused_log_mel.iter().all(|u| u.frame_ns > 0.0), "{:?}", profile.unfused_log_mel);
    assert!(!err.contains("rlx-run: warning: not measured: RLX's unfused chain on cpu"), "{err}");
    // The pass reads it back and predicts with it (the report
    // `rlx-opt --fuse-welch-peaks=profile=… --fusion-report=-` prints).
    let graph = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/graphs/welch_native.graph");
    let report = cli::fusion_report_table(Path::new(graph), &format!("profile={}", path.display()));
    assert!(report.contains("predicted for welch_native %4: unfused"), "{report}");
    for args in [&["--calibrate", "x.graph"][..], &["-o", "p.json", "x.graph"], &["--calibrate", "--trace", "t.json"]] {
        let (code, _, err) = rlx_run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let (code, _, err) = rlx_run(&["--calibrate", "--engine=rlx"]);
    assert_eq!((code, err.trim()), (1, "rlx-run: error: --calibrate measures rlx-run's own kernels: leave --engine at interp"));
}
