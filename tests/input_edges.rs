//! Issue 25, section 4: input at the edges of what each tool takes. Invalid
//! input that was accepted (a WelchPeaks k whose 2k wraps, trace integers
//! past ±2^53 of one sign, gzip traces with trailing bytes, device profiles
//! outside any physical range) is refused with a clear error; valid input
//! that was refused, or answered with a misleading message (a dynamic
//! n_mels, split JSON output, input names holding `=` or empty, two inputs
//! of one name, a profile with a byte-order mark, an unused hop of 2^63 on
//! wgpu), is taken, or named for what it is.

mod common;
use common::{rlx_opt, rlx_run, rlx_trace, s, stderr, stdout, write};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output};









fn graph_of(lines: &[&str], ret: &str) -> String {
    format!("graph @g {{\n{}\n  return {ret}\n}}\n", lines.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"))
}

fn write_npy(path: &Path, shape: &[u64], data: &[f32]) {
    use npyz::WriterBuilder;
    let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(std::fs::File::create(path).unwrap()).begin_nd().unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

fn read_npy(path: &Path) -> Vec<f32> {
    npyz::NpyFile::new(std::fs::File::open(path).unwrap()).unwrap().into_vec::<f32>().unwrap()
}

// ---- The verifier -----------------------------------------------------------

/// `k = 2^63` doubled wrapped to a result row of 0 values, and the graph
/// verified where the spectrum's width is dynamic (nothing else bounds k).
#[test]
fn welch_peaks_whose_2k_wraps_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spectrum = r#"%0 = {"Input":{"name":"s"}} : [8, ?0] f32"#;
    // (A static row past 2^61 values is refused by the reader, by its bytes.)
    for (k, row) in [(1u64 << 63, "0"), (1u64 << 63, "?1"), (u64::MAX, "?1")] {
        let peaks = format!(r#"%1 = {{"WelchPeaks":{{"k":{k},"n_segments":8}}}}(%0) : [1, {row}] f32"#);
        let path = write(dir.path(), "k.graph", graph_of(&[spectrum, &peaks], "%1"));
        let r = rlx_opt(&[s(&path)]);
        assert_eq!(r.status.code(), Some(1), "k = {k}: {}", stderr(&r));
        let expected = format!("{}:3:8: error: `WelchPeaks` op %1: k = {k} is too large: a result row holds 2k values, and 2k must be below 2^64", s(&path));
        assert!(stderr(&r).starts_with(&expected), "k = {k}: {}", stderr(&r));
    }
    // The largest k whose 2k fits still verifies against a dynamic width.
    let k = (1u64 << 63) - 1;
    let peaks = format!(r#"%1 = {{"WelchPeaks":{{"k":{k},"n_segments":8}}}}(%0) : [1, ?1] f32"#);
    let path = write(dir.path(), "ok.graph", graph_of(&[spectrum, &peaks], "%1"));
    let r = rlx_opt(&[s(&path)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
}

/// Filters `[?, n_bins]` (a filterbank chosen at run time) leave n_mels,
/// the result's last dim, dynamic: any declared n_mels matches. It once
/// became 0 ("result is declared [4, 40] but the operands give [4, 0]").
#[test]
fn log_mel_with_a_dynamic_n_mels_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let spectrum = r#"%0 = {"Input":{"name":"s"}} : [4, 512] f32"#;
    let dynamic = r#"%1 = {"Input":{"name":"f"}} : [?0, 129] f32"#;
    let path = write(dir.path(), "dyn.graph", graph_of(&[spectrum, dynamic, "%2 = LogMel(%0, %1) : [4, 40] f32"], "%2"));
    let r = rlx_opt(&[s(&path)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // Static filters still fix it, and the leading dims still count.
    let fixed = r#"%1 = {"Input":{"name":"f"}} : [30, 129] f32"#;
    let path = write(dir.path(), "static.graph", graph_of(&[spectrum, fixed, "%2 = LogMel(%0, %1) : [4, 40] f32"], "%2"));
    let r = rlx_opt(&[s(&path)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains("result is declared [4, 40] but the operands give [4, 30]"), "{}", stderr(&r));
    let path = write(dir.path(), "rows.graph", graph_of(&[spectrum, dynamic, "%2 = LogMel(%0, %1) : [5, 40] f32"], "%2"));
    let r = rlx_opt(&[s(&path)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains("result is declared [5, 40] but the operands give [4, ?0]"), "{}", stderr(&r));
}

// ---- rlx-opt: split output reads back ----------------------------------------

/// `--split-input-file --emit=json` separates its documents with `// -----`
/// as the text output does, so rlx-opt reads them back (they were once
/// concatenated JSON that nothing reads).
#[test]
fn split_json_output_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let first = rlx_opt::testgen::welch_chains(1, 8, 16, 4, 3);
    let second = graph_of(&[r#"%0 = {"Input":{"name":"x"}} : [4] f32"#, r#"%1 = {"Binary":"Add"}(%0, %0) : [4] f32"#], "%1");
    let input = write(dir.path(), "two.graph", format!("{first}// -----\n{second}"));
    let json = dir.path().join("two.json");
    let r = rlx_opt(&["--split-input-file", "--emit=json", s(&input), "-o", s(&json)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let text = std::fs::read_to_string(&json).unwrap();
    let documents: Vec<&str> = text.split("// -----\n").collect();
    assert_eq!(documents.len(), 2, "{text}");
    for d in &documents {
        serde_json::from_str::<serde_json::Value>(d).unwrap_or_else(|e| panic!("{e}: {d}"));
    }
    // Back to text: the graphs as they went in; back to JSON: the same JSON.
    let r = rlx_opt(&["--split-input-file", s(&json)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let direct = rlx_opt(&["--split-input-file", s(&input)]);
    assert_eq!(stdout(&r), stdout(&direct));
    let r = rlx_opt(&["--split-input-file", "--emit=json", s(&json)]);
    assert_eq!(stdout(&r), text);
    // One graph: one document, no separator.
    let one = write(dir.path(), "one.graph", &first);
    let r = rlx_opt(&["--split-input-file", "--emit=json", s(&one)]);
    assert!(!stdout(&r).contains("// -----"), "{}", stdout(&r));
}

// ---- rlx-run: naming inputs ---------------------------------------------------

fn add_graph(names: &[(&str, &str)]) -> String {
    let mut lines: Vec<String> = names.iter().enumerate().map(|(i, (name, shape))| format!(r#"%{i} = {{"Input":{{"name":{name:?}}}}} : [{shape}] f32"#)).collect();
    let n = names.len();
    lines.push(format!(r#"%{n} = {{"Binary":"Add"}}(%0, %{}) : [{}] f32"#, n - 1, names[0].1));
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    graph_of(&refs, &format!("%{n}"))
}

/// Input names are any strings: one holding `=` and the empty one can be
/// given, paths holding `=` still work for ordinary names, and every
/// suggestion in a message is an argument that works as suggested.
#[test]
fn any_input_name_can_be_given() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.npy");
    write_npy(&a, &[2], &[1.0, 2.0]);
    std::fs::create_dir(dir.path().join("run=1")).unwrap();
    let b = dir.path().join("run=1").join("b.npy");
    write_npy(&b, &[2], &[10.0, 20.0]);
    let out = dir.path().join("out");
    let sum = |r: &Output| {
        assert_eq!(r.status.code(), Some(0), "{}", stderr(r));
        read_npy(&out.join("0.npy"))
    };
    // `a=b` and ``: the name ends at the `=` that leaves a graph input before it.
    let graph = write(dir.path(), "eq.graph", add_graph(&[("a=b", "2"), ("", "2")]));
    let r = rlx_run(&[s(&graph), "--input", &format!("a=b={}", s(&a)), "--input", &format!("={}", s(&b)), "--output-dir", s(&out)]);
    assert_eq!(sum(&r), [11.0, 22.0]);
    // Missing, each is suggested as an argument that then works.
    let r = rlx_run(&[s(&graph), "--input", &format!("a=b={}", s(&a))]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains("missing input `` (shape [2]): give --input =FILE.npy or --random-inputs=SEED"), "{}", stderr(&r));
    // An ordinary name with a path holding `=` reads as before.
    let graph = write(dir.path(), "plain.graph", add_graph(&[("x", "2"), ("y", "2")]));
    let r = rlx_run(&[s(&graph), "--input", &format!("x={}", s(&b)), "--input", &format!("y={}", s(&a)), "--output-dir", s(&out)]);
    assert_eq!(sum(&r), [11.0, 22.0]);
    let r = rlx_run(&[s(&graph), "--input", &format!("z={}", s(&a))]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains("the graph has no input `z` (inputs: x, y)"), "{}", stderr(&r));
    // Inputs `a` and `a=b`: the longer name wins, the shorter is one spelling away.
    let graph = write(dir.path(), "both.graph", add_graph(&[("a", "2"), ("a=b", "2")]));
    std::fs::copy(&a, dir.path().join("b=a.npy")).unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_rlx-run")).current_dir(dir.path()).args([s(&graph), "--input", &format!("a=b={}", s(&b)), "--input", "a=./b=a.npy", "--output-dir", s(&out)]).output().unwrap();
    assert_eq!(sum(&r), [11.0, 22.0]);
    // A name a shell would take apart is suggested quoted; one starting with `-` works too.
    let graph = write(dir.path(), "odd.graph", add_graph(&[("my input's", "2"), ("-x", "2")]));
    let r = rlx_run(&[s(&graph), "--input", &format!("-x={}", s(&a))]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains(r#"give --input 'my input'\''s=FILE.npy' or"#), "{}", stderr(&r));
    let quoted = Command::new("sh").arg("-c").arg(format!(r#"exec "$0" "$1" --input 'my input'\''s={}' --input -x={} --output-dir "$2""#, s(&b), s(&a))).args([env!("CARGO_BIN_EXE_rlx-run"), s(&graph), s(&out)]).output().unwrap();
    assert_eq!(sum(&quoted), [11.0, 22.0]);
}

/// Two inputs of one name take one tensor: fine where they agree on its
/// type, an error naming both where they do not (once a shape error at
/// whichever ran second), with `--input` and with random inputs alike.
#[test]
fn two_inputs_of_one_name_must_agree() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.npy");
    write_npy(&x, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let lines = [r#"%0 = {"Input":{"name":"x"}} : [4] f32"#, r#"%1 = {"Input":{"name":"x"}} : [8] f32"#, r#"%2 = {"Concat":{"axis":0}}(%0, %1) : [12] f32"#];
    let graph = write(dir.path(), "dup.graph", graph_of(&lines, "%2"));
    let expected = "input `x`: two nodes take it, %0 as [4] f32 and %1 as [8] f32: no one tensor can feed both (rename one of them)";
    for args in [vec![s(&graph).to_string(), "--input".into(), format!("x={}", s(&x))], vec![s(&graph).to_string(), "--random-inputs=1".into()]] {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = rlx_run(&refs);
        assert_eq!(r.status.code(), Some(1), "{args:?}");
        assert!(stderr(&r).contains(expected), "{args:?}: {}", stderr(&r));
    }
    let same = [lines[0], &lines[1].replace("[8]", "[4]"), &lines[2].replace("[12]", "[8]")];
    let graph = write(dir.path(), "same.graph", graph_of(&same, "%2"));
    let out = dir.path().join("out");
    let r = rlx_run(&[s(&graph), "--input", &format!("x={}", s(&x)), "--output-dir", s(&out)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(read_npy(&out.join("0.npy")), [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]);
}

// ---- rlx-run --target=wgpu: an unused hop -------------------------------------

/// One segment in the signal layout never steps by its hop: a hop of 2^63
/// runs on the CPU, and the wgpu plan once refused it as a stride past the
/// index range.
#[test]
fn an_unused_hop_does_not_stop_the_gpu_plan() {
    use rlx_opt::analysis::Target;
    use rlx_opt::analysis::plan::{DeviceLimits, plan};
    let attrs = r#"{"form":"welch_peaks","input_layout":"signal","hop":9223372036854775808,"n_fft":16,"frame_len":16,"segments":1,"k":4,"doubling":"rlx","output_layout":"interleaved","lowering":"spirv"}"#;
    let parsed: rlx_opt::fused::WelchPeaksAttrs = serde_json::from_str(attrs).unwrap();
    let input = rlx_opt::ir::TensorType::new(&[2, 16], rlx_opt::ir::DType::F32);
    for target in [Target::Wgpu, Target::Cuda] {
        let p = plan(&parsed, &input, target, &DeviceLimits::assumed(target)).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(p.kernel.expect("static shapes: a kernel").segment_stride, 0);
    }
    // Two segments do step by it: past the index range, refused.
    let two: rlx_opt::fused::WelchPeaksAttrs = serde_json::from_str(&attrs.replace(r#""hop":9223372036854775808"#, r#""hop":4294967296"#).replace(r#""segments":1"#, r#""segments":2"#)).unwrap();
    let long = rlx_opt::ir::TensorType::new(&[1, 4294967312], rlx_opt::ir::DType::F32);
    assert!(plan(&two, &long, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).is_err());

    // On the device: the same peaks as the CPU kernel.
    let bytes: Vec<String> = attrs.bytes().map(|b| b.to_string()).collect();
    let text = format!(
        "graph @g {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [2, 16] f32\n  %1 = {{\"Custom\":{{\"name\":\"rlx_opt.welch_peaks\",\"num_inputs\":1,\"attrs\":[{}]}}}}(%0) : [2, 8] f32\n  return %1\n}}\n",
        bytes.join(",")
    );
    let dir = tempfile::tempdir().unwrap();
    let graph = write(dir.path(), "hop.graph", text);
    let (cpu, gpu) = (dir.path().join("cpu"), dir.path().join("gpu"));
    let r = rlx_run(&[s(&graph), "--random-inputs=7", "--output-dir", s(&cpu)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = rlx_run(&[s(&graph), "--random-inputs=7", "--target=wgpu", "--output-dir", s(&gpu)]);
    if r.status.code() == Some(1) && stderr(&r).contains("--target=wgpu: ") && !stderr(&r).contains("refused") && !stderr(&r).contains("stride") {
        let _ = writeln!(std::io::stderr(), "SKIPPED an_unused_hop_does_not_stop_the_gpu_plan on wgpu: {}", stderr(&r));
        return;
    }
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let (a, b) = (read_npy(&cpu.join("0.npy")), read_npy(&gpu.join("0.npy")));
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-4 * x.abs().max(1.0), "{a:?} vs {b:?}");
    }
}

// ---- rlx-trace: integers and gzip members -----------------------------------

fn trace_with_id(id: &str) -> String {
    format!(r#"{{"traceEvents":[{{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1,"args":{{"External id":{id}}}}}]}}"#)
}

/// One range for trace integers, whatever their sign or spelling: within
/// ±2^53 they count; past it they are refused with one message (−2^63 was
/// accepted, through a wrapping `abs`, while 2^53+1 was refused).
#[test]
fn trace_integers_have_one_range_of_either_sign() {
    let dir = tempfile::tempdir().unwrap();
    for id in ["9007199254740992", "-9007199254740992", r#""-9007199254740992""#, "0", "-9007199254740992.0"] {
        let path = write(dir.path(), "ok.json", trace_with_id(id));
        let r = rlx_trace(&["summary", s(&path)]);
        assert_eq!(r.status.code(), Some(0), "{id}: {}", stderr(&r));
    }
    for (id, shown) in [
        ("9007199254740993", "9007199254740993"),
        ("-9007199254740993", "-9007199254740993"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("9223372036854775808", "9223372036854775808"),
        ("18446744073709551615", "18446744073709551615"),
        (r#""-9223372036854775808""#, "-9223372036854775808"),
        (r#""-99999999999999999999999999999999999999999""#, "-99999999999999999999999999999999999999999"),
        ("-1e19", "-1e+19"),
    ] {
        let path = write(dir.path(), "past.json", trace_with_id(id));
        let r = rlx_trace(&["summary", s(&path)]);
        assert_eq!(r.status.code(), Some(1), "{id}: {}", stderr(&r));
        let expected = format!("{shown} is past ±2^53, where a trace stops counting exactly");
        assert!(stderr(&r).contains(&expected) && stderr(&r).starts_with(&format!("{}:1:", s(&path))), "{id}: {}", stderr(&r));
    }
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

/// A gzip file is a series of members (RFC 1952): a trace split over two
/// is read whole (it was "EOF while parsing a string"); bytes after the
/// last member that are no member are refused, not ignored; a second
/// complete document in a second member is text after the trace.
#[test]
fn gzip_traces_are_read_member_by_member_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_with_id("1");
    let (head, tail) = trace.as_bytes().split_at(30);
    let two = write(dir.path(), "two.json.gz", [gzip(head), gzip(tail)].concat());
    let r = rlx_trace(&["summary", s(&two)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let one = write(dir.path(), "two.json.gz", gzip(trace.as_bytes()));
    let whole = rlx_trace(&["summary", s(&one)]);
    assert_eq!(stdout(&whole), stdout(&r), "the same trace in one member");

    let garbage = write(dir.path(), "garbage.json.gz", [gzip(trace.as_bytes()), b"hello".to_vec()].concat());
    let r = rlx_trace(&["summary", s(&garbage)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    let offset = gzip(trace.as_bytes()).len();
    let expected = format!("{}: error: trailing data after gzip member 1: the bytes from offset {offset} on (0x68 0x65 0x6c 0x6c…) are not a gzip member", s(&garbage));
    assert!(stderr(&r).starts_with(&expected), "{}", stderr(&r));
    let zeros = write(dir.path(), "zeros.json.gz", [gzip(head), gzip(tail), vec![0; 512]].concat());
    let r = rlx_trace(&["summary", s(&zeros)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("trailing data after gzip member 2"), "{}", stderr(&r));
    // A damaged second member is named.
    let mut bad = gzip(tail);
    bad.truncate(bad.len() - 4);
    let r = rlx_trace(&["summary", s(&write(dir.path(), "bad.json.gz", [gzip(head), bad].concat()))]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("gzip member 2"), "{}", stderr(&r));

    let doubled = write(dir.path(), "doubled.json.gz", [gzip(trace.as_bytes()), gzip(trace.as_bytes())].concat());
    let r = rlx_trace(&["summary", s(&doubled)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("error: text after the trace"), "{}", stderr(&r));
}

// ---- Device profiles -----------------------------------------------------------

const CPU_PROFILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cpu.json");

fn profile() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(CPU_PROFILE).unwrap()).unwrap()
}

/// rlx-opt with `profile`: its exit code, stderr and fusion report.
fn fuse_with(dir: &Path, profile: &[u8]) -> (Option<i32>, String, serde_json::Value) {
    let path = write(dir, "profile.json", profile);
    let graph = write(dir, "g.graph", rlx_opt::testgen::welch_chains(1, 64, 256, 8, 4));
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let r = rlx_opt(&[&format!("--fuse-welch-peaks=profile={}", s(&path)), s(&graph), "--fusion-report", s(&report), "-o", s(&dir.join("out.graph"))]);
    let report = std::fs::read_to_string(&report).ok().map_or(serde_json::Value::Null, |t| serde_json::from_str(&t).unwrap());
    (r.status.code(), stderr(&r), report)
}

/// Every number of a profile is finite and physical, or the profile is
/// refused naming the field: `memory_bw: 5e-324` once made a NaN prediction
/// win the pick, others gave `null` timings or a reason 300 digits long.
#[test]
fn device_profiles_must_be_physical() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err, report) = fuse_with(dir.path(), std::fs::read(CPU_PROFILE).unwrap().as_slice());
    assert_eq!(code, Some(0), "the shipped profile: {err}");
    assert!(report[0]["reason"].as_str().unwrap().starts_with("profile ("), "{report}");
    for (pointer, value, expected) in [
        ("/memory_bw", serde_json::json!(5e-324), "memory_bw is 5e-324, not a bandwidth in 1e-3..=1e6 bytes/ns"),
        ("/memory_bw", serde_json::json!(1e300), "memory_bw is 1e300, not a bandwidth"),
        ("/upload_bw", serde_json::json!(1e-9), "upload_bw is 1e-9, not a bandwidth in 1e-3..=1e6 bytes/ns (or 0: the device is the host)"),
        ("/call_ns", serde_json::json!(1e300), "call_ns is 1e300, not a time in 0..=1e12 ns"),
        ("/spread_ns", serde_json::json!(-1.0), "spread_ns is -1, not a time"),
        ("/fft/1/pair_ns", serde_json::json!(1e13), "pair_ns is 10000000000000, not a time"),
        ("/workers", serde_json::json!(0), "workers is 0, not in 1..=16777216"),
        ("/parallelism", serde_json::json!(1u64 << 40), "parallelism is 1099511627776, not in 1..=16777216"),
        ("/fft/0/n_fft", serde_json::json!(1u64 << 40), "an n_fft is 1099511627776, not in 1..=16777216"),
        ("/unfused/0/segment_ns", serde_json::json!(1e200), "unfused segment_ns is 1e200, not a time"),
        ("/checks/0/measured_ms", serde_json::json!(1e300), "a check's measured_ms is 1e300, not a time in 0..=1e6 ms"),
    ] {
        let mut p = profile();
        *p.pointer_mut(pointer).unwrap() = value;
        let (code, err, _) = fuse_with(dir.path(), serde_json::to_string(&p).unwrap().as_bytes());
        assert_ne!(code, Some(0), "{pointer}: {err}");
        assert!(err.contains(&format!("profile.json: {expected}")), "{pointer}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Zero times are measurements ("nothing measurable"), as calibration writes them.
    let mut p = profile();
    *p.pointer_mut("/spread_ns").unwrap() = serde_json::json!(0.0);
    assert_eq!(fuse_with(dir.path(), serde_json::to_string(&p).unwrap().as_bytes()).0, Some(0));
}

/// A profile within every range may still extrapolate to an infinite time
/// (a log-log line from 1e-300 ns to 1e12 ns, far past its lengths): such a
/// prediction is dropped with a reason, never compared, never `null`.
#[test]
fn predictions_that_are_not_finite_are_dropped_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = profile();
    let fft = |n: u64, pair: f64| serde_json::json!({"n_fft": n, "plan": "batch", "setup_ns": 0.0, "pair_ns": pair, "topk_base_ns": 0.0, "topk_per_k_ns": 0.0});
    p["fft"] = serde_json::json!([fft(1, 1e-300), fft(2, 1e12)]);
    let (code, err, report) = fuse_with(dir.path(), serde_json::to_string(&p).unwrap().as_bytes());
    assert_eq!(code, Some(0), "{err}");
    let candidate = &report[0];
    assert_eq!(candidate["decision"], "rejected", "{candidate}");
    let reason = candidate["reason"].as_str().unwrap();
    assert!(reason.contains("no fused alternative has a finite prediction: not fused; dropped, no finite prediction: fused batch (inf ns)"), "{reason}");
    let predictions = candidate["predictions"].as_array().unwrap();
    assert_eq!(predictions.iter().map(|p| p["alternative"].as_str().unwrap()).collect::<Vec<_>>(), ["unfused"], "{candidate}");
    assert!(!candidate["predictions"].to_string().contains("null"), "{candidate}");
    assert!(reason.len() < 400, "{reason}");
}

/// A byte-order mark before a profile is read past, as before a graph.
#[test]
fn a_profile_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let with_bom = [b"\xef\xbb\xbf".as_slice(), &std::fs::read(CPU_PROFILE).unwrap()].concat();
    let (code, err, plain) = fuse_with(dir.path(), std::fs::read(CPU_PROFILE).unwrap().as_slice());
    assert_eq!(code, Some(0), "{err}");
    let (code, err, report) = fuse_with(dir.path(), &with_bom);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(report, plain);
}
