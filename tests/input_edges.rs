//! Issue 25, section 4: input at the edges of what each tool takes. Invalid
//! input that was accepted (a WelchPeaks k whose 2k wraps, trace integers
//! past ±2^53 of one sign, gzip traces with trailing bytes, device profiles
//! outside any physical range) is refused with a clear error; valid input
//! that was refused, or answered with a misleading message (a dynamic
//! n_mels, split JSON output, input names holding `=` or empty, two inputs
//! of one name, a profile with a byte-order mark, an unused hop of 2^63 on
//! wgpu), is taken, or named for what it is.

mod common;
use common::{rlx_opt, rlx_trace, s, stderr, stdout, write};
use std::io::Write as _;
use std::path::Path;









fn graph_of(lines: &[&str], ret: &str) -> String {
    format!("graph @g {{\n{}\n  return {ret}\n}}\n", lines.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"))
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
    // Empty chunks (blank JSON between two separators, one at the end)
    // hold no graph and print nothing, as mlir-opt takes them; an empty
    // file without the flag is still refused.
    let gappy = write(dir.path(), "gappy.json", text.replace("// -----\n", "// -----\n \n// -----\n") + "// -----\n");
    let r = rlx_opt(&["--split-input-file", "--emit=json", s(&gappy)]);
    assert_eq!((r.status.code(), stdout(&r)), (Some(0), text.clone()), "{}", stderr(&r));
    let empty = write(dir.path(), "empty.json", " \n");
    assert_eq!(rlx_opt(&[s(&empty)]).status.code(), Some(1));
}

/// A JSON graph of an input `x` and one node whose op is `op` (JSON), with
/// node 0's `origin` as given.
fn json_graph(op: &str, origin: &str) -> String {
    format!(
        r#"{{"name":"n","nodes":[{{"id":0,"op":{{"Input":{{"name":"x"}}}},"inputs":[],"shape":{{"dims":[{{"Static":2}}],"dtype":"F32"}},"name":"x","origin":{origin}}},{{"id":1,"op":{op},"inputs":[0],"shape":{{"dims":[{{"Static":2}}],"dtype":"F32"}},"name":null,"origin":null}}],"outputs":[1]}}"#
    )
}

/// An op written as a JSON string is RLX text of one op, printed into a line
/// as it is: a line break in it added nodes to the printed graph, an
/// operand list or a type after it made text that did not read back (an
/// adversarial run). Refused, naming the node; one op's spelling is read.
#[test]
fn json_op_strings_are_one_op_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let refused = [
        (r#""Relu(%0) : [2] f32\n  %2 = {\"Activation\":\"Tanh\"}""#, "holds a line break"),
        (r#""Relu\r""#, "holds a line break"),
        (r#""Relu{""#, "is not an op: unterminated op"),
        (r#""Foo : [3]""#, "is more than one op: ` : [3]` follows the op `Foo`"),
        (r#""Relu(%0""#, "is more than one op"),
        (r#"" Relu""#, "has spaces around it"),
        (r#""Relu ""#, "has spaces around it"),
        (r#""""#, "is not an op"),
    ];
    for (op, message) in refused {
        let input = write(dir.path(), "op.json", json_graph(op, "null"));
        let r = rlx_opt(&[s(&input)]);
        assert_eq!(r.status.code(), Some(1), "{op}: {}", stdout(&r));
        assert!(stderr(&r).contains("op.json:1:") && stderr(&r).contains("node %1:") && stderr(&r).contains(message), "{op}: {}", stderr(&r));
        assert!(stdout(&r).is_empty() && stderr(&r).lines().count() == 1, "{op}: {}", stderr(&r));
    }
    // A bare op and value syntax (a non-finite float) read, and print as RLX does.
    for (op, line) in [(r#""Relu""#, "%1 = Relu(%0) : [2] f32"), (r#""Clamp{min: -inf, max: 0.0}""#, "%1 = Clamp{min: -inf, max: 0.0}(%0) : [2] f32")] {
        let input = write(dir.path(), "op.json", json_graph(op, "null"));
        let r = rlx_opt(&[s(&input)]);
        assert_eq!(r.status.code(), Some(0), "{op}: {}", stderr(&r));
        assert!(stdout(&r).contains(line), "{op}: {}", stdout(&r));
        let r = rlx_opt(&["--emit=json", s(&input)]);
        assert_eq!(stdout(&r).trim_end(), json_graph(op, "null"));
    }
    // A pretty-printed JSON op is one op on one line, in text and through MLIR.
    let pretty = write(dir.path(), "pretty.json", json_graph("{\"Activation\":\n  \"Relu\"}", "null"));
    let r = rlx_opt(&[s(&pretty)]);
    assert!(stdout(&r).contains("  %1 = {\"Activation\":  \"Relu\"}(%0) : [2] f32\n"), "{}", stdout(&r));
    let through = dir.path().join("pretty.mlir");
    assert_eq!(rlx_opt(&[s(&pretty), "--emit=mlir", "-o", s(&through)]).status.code(), Some(0));
    let r = rlx_opt(&[s(&through)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // MLIR's `rlx.text` is the same: one op, or refused.
    let mlir = "\"builtin.module\"() ({\n  \"func.func\"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = \"n\"}> ({\n  ^bb0(%0: tensor<2xf32>):\n    %1 = \"rlx.Relu\"(%0) {rlx.text = \"Relu(%0) : [2] f32\\0A  %2 = Tanh\"} : (tensor<2xf32>) -> tensor<2xf32>\n    \"func.return\"(%1) : (tensor<2xf32>) -> ()\n  }) : () -> ()\n}) : () -> ()\n";
    let input = write(dir.path(), "op.mlir", mlir);
    let r = rlx_opt(&[s(&input)]);
    assert_eq!(r.status.code(), Some(1), "{}", stdout(&r));
    assert!(stderr(&r).contains("op.mlir:4:") && stderr(&r).contains("holds a line break"), "{}", stderr(&r));
    let r = rlx_opt(&[s(&write(dir.path(), "op.mlir", mlir.replace("Relu(%0) : [2] f32\\0A  %2 = Tanh", "Relu")))]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // So is the op's name, which is printed as it is: an identifier.
    let named = mlir.replace("\"rlx.Relu\"", "\"rlx.Foo(%0) : [2] f32\\0A  %7 = Bar\"").replace(" {rlx.text = \"Relu(%0) : [2] f32\\0A  %2 = Tanh\"}", "");
    let r = rlx_opt(&[s(&write(dir.path(), "name.mlir", named))]);
    assert_eq!(r.status.code(), Some(1), "{}", stdout(&r));
    assert!(stderr(&r).contains("name.mlir:4:5: error: `rlx.Foo(%0) : [2] f32\\u{a}  %7 = Bar`: an rlx op's name is an identifier"), "{}", stderr(&r));
}

/// RLX's JSON carries each node's provenance (`origin`: HIR block, label,
/// pass); it was read and dropped, and any value taken (an adversarial
/// run). It is kept through JSON, moves to the fused op with the node it
/// replaces, and a field RLX does not have is refused. (RLX's text, and so
/// rlx-opt's text and MLIR, has no place for it.)
#[test]
fn json_origins_are_kept_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let origin = r#"{"hir":7,"label":"layer0.ffn","pass":"fuse"}"#;
    let input = write(dir.path(), "o.json", json_graph(r#"{"Activation":"Relu"}"#, origin));
    let r = rlx_opt(&["--emit=json", s(&input)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(stdout(&r).trim_end(), json_graph(r#"{"Activation":"Relu"}"#, origin));
    // RLX reads the same origin from it.
    let rlx: rlx_ir::Graph = serde_json::from_str(&stdout(&r)).unwrap();
    let theirs = rlx.nodes().first().and_then(|n| n.origin.clone()).expect("RLX reads the origin");
    assert_eq!((theirs.hir.map(|h| h.0), theirs.label.as_deref(), theirs.pass.as_deref()), (Some(7), Some("layer0.ffn"), Some("fuse")));
    let bad = write(dir.path(), "bad.json", json_graph(r#"{"Activation":"Relu"}"#, r#"{"weird":1}"#));
    let r = rlx_opt(&[s(&bad)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).contains("unknown field `weird`"), "{}", stderr(&r));
    // The fused op takes the origin of the WelchPeaks it replaces.
    let graph = rlx_opt::testgen::welch_chains(1, 8, 16, 4, 3);
    let text = write(dir.path(), "w.graph", &graph);
    let json = rlx_opt(&["--emit=json", s(&text)]);
    let mut doc: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let peaks = doc["nodes"].as_array_mut().unwrap().iter_mut().find(|n| n["op"].get("WelchPeaks").is_some()).expect("a WelchPeaks node");
    peaks["origin"] = serde_json::from_str(origin).unwrap();
    let edited = write(dir.path(), "w.json", doc.to_string());
    let r = rlx_opt(&["--fuse-welch-peaks", "--emit=json", s(&edited)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let fused: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    let op = fused["nodes"].as_array().unwrap().iter().find(|n| n["op"].to_string().contains("rlx_opt.welch_peaks")).expect("fused");
    assert_eq!(op["origin"], serde_json::from_str::<serde_json::Value>(origin).unwrap());
}

// ---- rlx-run: naming inputs, an unused hop on wgpu ---------------------------
// rlx-ext/tests/rlx_run_input_edges.rs, with the rlx-run binary.

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
        ("/fft/1/pair_ns", serde_json::json!(1e13), "fft[1].pair_ns is 10000000000000, not a time"),
        ("/workers", serde_json::json!(0), "workers is 0, not in 1..=16777216"),
        ("/parallelism", serde_json::json!(1u64 << 40), "parallelism is 1099511627776, not in 1..=16777216"),
        ("/fft/0/n_fft", serde_json::json!(1u64 << 40), "fft[0].n_fft is 1099511627776, not in 1..=16777216"),
        ("/unfused/0/segment_ns", serde_json::json!(1e200), "unfused[0].segment_ns is 1e200, not a time"),
        ("/checks/0/measured_ms", serde_json::json!(1e300), "checks[0].measured_ms is 1e300, not a time in 0..=1e6 ms"),
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

/// A profile is an object of named fields, read with its errors located
/// once: serde also read a list of the fields' values in order as a
/// profile, and said a parse error's place twice (an adversarial run); an
/// empty `profile=` says so.
#[test]
fn device_profiles_are_objects_and_their_errors_are_located_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile();
    let positional: Vec<&serde_json::Value> = p.as_object().unwrap().values().collect();
    for text in [serde_json::to_string(&positional).unwrap(), "\n  []".to_string(), "7".to_string()] {
        let (code, err, _) = fuse_with(dir.path(), text.as_bytes());
        assert_eq!(code, Some(2), "{err}");
        let line = if text.starts_with('\n') { "2:3" } else { "1:1" };
        assert!(err.contains(&format!("profile.json:{line}: a device profile is a JSON object (`{{…}}`)")), "{text}: {err}");
    }
    let mut p = profile();
    p.as_object_mut().unwrap().remove("device");
    let (code, err, _) = fuse_with(dir.path(), serde_json::to_string(&p).unwrap().as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("profile.json:1:") && err.contains(": missing field `device`") && !err.contains(" at line "), "{err}");
    // A plan that is not a string is named as such (serde_json said only "expected value").
    let mut p = profile();
    p["fft"][0]["plan"] = serde_json::json!(0);
    let (code, err, _) = fuse_with(dir.path(), serde_json::to_string(&p).unwrap().as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(": invalid type: integer `0`, expected a string"), "{err}");
    let graph = write(dir.path(), "g.graph", rlx_opt::testgen::welch_chains(1, 64, 256, 8, 4));
    let r = rlx_opt(&["--fuse-welch-peaks=profile=", s(&graph)]);
    assert_eq!((r.status.code(), stderr(&r)), (Some(2), "rlx-opt: error: cannot read device profile '': the path is empty (profile=PATH)\n".to_string()));
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
