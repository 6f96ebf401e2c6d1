//! Issue 15, hardening: one regression test per class of hostile input
//! found (and fixed). Each test names the class; the inputs are examples of
//! it. Every tool must answer bad input with a clear error and exit 1 (2 for
//! usage), never a crash, a hang, an unbounded allocation or a half-written
//! output.

mod common;
use common::child::{fused_graph, welch_attrs};
use common::{rlx_opt, run, s, stderr, write};
use std::path::Path;





fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}


/// A Welch chain with two outputs (the spectrum and the peaks).
fn chain() -> String {
    rlx_opt::testgen::welch_chains(1, 8, 16, 4, 3)
}

// ---- Output files: nothing is written unless everything succeeds --------

#[test]
fn output_files_rlx_opt_writes_kernels_and_report_only_when_every_graph_succeeded() {
    let dir = tmp();
    let text = format!("{}// -----\ngraph @broken {{\n  %0 = nonsense\n}}\n", chain());
    let input = write(dir.path(), "two.graph", &text);
    let kernels = dir.path().join("kernels");
    let report = dir.path().join("report.json");
    let output = dir.path().join("out.graph");
    let r = rlx_opt(&["--split-input-file", "--fuse-welch-peaks=force=true", s(&input), "-o", s(&output), &format!("--emit-kernels={}", s(&kernels)), "--fusion-report", s(&report)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(!kernels.exists() && !report.exists() && !output.exists(), "a failed run wrote files");
    // The same without the broken graph writes all three.
    let input = write(dir.path(), "one.graph", chain());
    let r = rlx_opt(&["--fuse-welch-peaks=force=true", s(&input), "-o", s(&output), &format!("--emit-kernels={}", s(&kernels)), "--fusion-report", s(&report)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(kernels.join("welch_chains_1").is_dir() && report.is_file() && output.is_file());
}

#[test]
fn output_files_go_through_symlinks_and_dash_is_stdout() {
    let dir = tmp();
    let input = write(dir.path(), "g.graph", chain());
    let target = write(dir.path(), "target.graph", "old");
    let link = dir.path().join("link.graph");
    std::os::unix::fs::symlink("target.graph", &link).unwrap();
    let r = rlx_opt(&[s(&input), "-o", s(&link)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&target).unwrap().starts_with("graph @welch_chains_1"));
    // A link into a missing folder: the error names the path as typed, not where it leads.
    let dangling = dir.path().join("dangling.graph");
    std::os::unix::fs::symlink("missing/out.graph", &dangling).unwrap();
    let r = rlx_opt(&[s(&input), "-o", s(&dangling)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(&format!("cannot write '{}'", s(&dangling))), "{}", stderr(&r));
    for stdout in ["-", "/dev/stdout"] {
        let r = rlx_opt(&[s(&input), "-o", stdout]);
        assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
        assert!(String::from_utf8_lossy(&r.stdout).starts_with("graph @welch_chains_1"), "-o {stdout}");
    }
}

// ---- Usage errors exit 2 --------------------------------------------------

#[test]
fn usage_errors_exit_2() {
    let dir = tmp();
    let graph = write(dir.path(), "g.graph", chain());
    // rlx-run's: rlx-ext/tests/rlx_run_hardening.rs.
    for args in [vec![s(&graph), "--emit-kernels="], vec![s(&graph), "-o", ""], vec![s(&graph), "--fusion-report", ""]] {
        let r = rlx_opt(&args);
        assert_eq!(r.status.code(), Some(2), "rlx-opt {args:?}: {}", stderr(&r));
    }
}

// ---- Recursion without a depth limit; unbounded expansion -----------------

/// An MLIR graph whose one op carries attribute `a = {attr}`, after `aliases`.
fn mlir_with_attr(aliases: &str, attr: &str) -> String {
    format!(
        "{aliases}module {{\n  func.func @g(%arg0: tensor<4xf32>) -> tensor<4xf32> {{\n    %0 = \"rlx.Foo\"(%arg0) {{a = {attr}}} : (tensor<4xf32>) -> tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }}\n}}\n"
    )
}

/// What an MLIR error says: with the `mlir` feature, MLIR itself reads MLIR
/// input first and refuses some inputs in its own words.
fn mlir_says(ours: &'static str, mlir: &'static str) -> &'static str {
    if cfg!(feature = "mlir") { mlir } else { ours }
}

/// `rlx-opt` on `text` (written as `name`): exit 1 with `expected` in the message.
fn refused(name: &str, text: &str, expected: &str) {
    let dir = tmp();
    let path = write(dir.path(), name, text);
    let r = rlx_opt(&[s(&path)]);
    assert_eq!(r.status.code(), Some(1), "{name}: {}", stderr(&r));
    assert!(stderr(&r).contains(expected), "{name}: {}", stderr(&r));
}

#[test]
fn nesting_is_bounded_in_every_reader() {
    let n = 30_000;
    refused("deep_array.mlir", &mlir_with_attr("", &format!("{}1{}", "[".repeat(n), "]".repeat(n))), "nested deeper than 128 levels");
    refused("deep_dict.mlir", &mlir_with_attr("", &format!("{}1{}", "{a = ".repeat(n), "}".repeat(n))), "nested deeper than 128 levels");
    refused("deep_module.mlir", &format!("{}{}", "module {\n".repeat(n), "}\n".repeat(n)), "nested deeper than 128 levels");
    let deep_region = format!("{}{}", "\"x.y\"() ({\n".repeat(n), "}) : () -> ()\n".repeat(n));
    refused("deep_region.mlir", &format!("module {{\n{deep_region}}}\n"), "nested deeper than 128 levels");
    // RLX value syntax nested past the limit is not understood: the op stays
    // opaque and round-trips exactly through every format.
    let dir = tmp();
    let deep = format!("graph @g {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [4] f32\n  %1 = Clamp{{min: {}1{}, max: 1.0}}(%0) : [4] f32\n  return %1\n}}\n", "{min: ".repeat(n), "}".repeat(n));
    let input = write(dir.path(), "deep.graph", &deep);
    for emit in ["mlir", "json"] {
        let there = dir.path().join(format!("deep.{emit}"));
        let r = rlx_opt(&[s(&input), &format!("--emit={emit}"), "-o", s(&there)]);
        assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
        let back = rlx_opt(&[s(&there)]);
        assert_eq!(String::from_utf8_lossy(&back.stdout), deep, "graph → {emit} → graph");
    }
}

#[test]
fn attribute_aliases_cannot_refer_to_themselves_or_explode() {
    refused("self.mlir", &mlir_with_attr("#a = [#a]\n", "#a"), mlir_says("attribute alias #a refers to itself", "undefined symbol alias id 'a'"));
    refused("cycle.mlir", &mlir_with_attr("#a = [#b]\n#b = {x = #a}\n", "#a"), mlir_says("refers to itself", "undefined symbol alias id 'b'"));
    // Aliases defined before use, as MLIR requires.
    let laughs: String = "#l10 = [1]\n".to_string() + &(0..10).rev().map(|i| format!("#l{i} = [{}]\n", vec![format!("#l{}", i + 1); 10].join(", "))).collect::<String>();
    refused("laughs.mlir", &mlir_with_attr(&laughs, "#l0"), "expands to more than 1048576 values");
    // A chain of aliases deeper than the limit.
    let chain: String = "#c1000 = 1\n".to_string() + &(0..1000).rev().map(|i| format!("#c{i} = [#c{}]\n", i + 1)).collect::<String>();
    refused("chain.mlir", &mlir_with_attr(&chain, "#c0"), "nested deeper than 128 levels");
}

// ---- Allocation before validation ------------------------------------------

#[test]
fn sizes_are_refused_before_anything_is_allocated() {
    refused("dense.mlir", &mlir_with_attr("", "dense<1.0> : tensor<4000000000xf32>"), "would take 16000000000 bytes; the limit is 4.0 GiB");
    let huge = "module {\n  func.func @g(%arg0: tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32> {\n    return %arg0 : tensor<4294967296x4294967296xf32>\n  }\n}\n";
    refused("huge.mlir", huge, "has a byte size that overflows 64 bits");
}


// ---- Accepted though invalid ---------------------------------------------

fn graph_of(lines: &[&str], ret: &str) -> String {
    format!("graph @g {{\n{}\n  return {ret}\n}}\n", lines.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"))
}

#[test]
fn the_verifier_checks_result_shapes_and_dtypes() {
    let a = r#"%0 = {"Input":{"name":"a"}} : [2, 3] f32"#;
    let b = r#"%1 = {"Input":{"name":"b"}} : [3, 4] f32"#;
    refused("matmul.graph", &graph_of(&[a, b, "%2 = MatMul(%0, %1) : [2, 5] f32"], "%2"), "but the operands give [2, 4]");
    refused("matmul_inner.graph", &graph_of(&[a, a.replace("%0", "%1").replace("\"a\"", "\"b\"").as_str(), "%2 = MatMul(%0, %1) : [2, 3] f32"], "%2"), "inner dims differ");
    let empty = rlx_opt(&[s(&write(tmp().path(), "empty.graph", ""))]);
    assert_eq!(empty.status.code(), Some(1), "an empty file is no graph");
    refused("norm.graph", &graph_of(&[r#"%0 = {"Input":{"name":"z"}} : [6] f32"#, "%1 = ComplexNormSq(%0) : [6] f32"], "%1"), "operand must be complex");
    let spectrum = r#"%0 = {"Input":{"name":"s"}} : [2, 0] f32"#;
    let filters = r#"%1 = {"Input":{"name":"f"}} : [3, 1] f32"#;
    refused("logmel.graph", &graph_of(&[spectrum, filters, r#"%2 = "LogMel"(%0, %1) : [2, 3] f32"#], "%2"), "must be even and non-zero");
}

#[test]
fn fused_op_attributes_that_overflow_are_refused() {
    let attrs = welch_attrs(16, 16, 8, 4).replace(r#""lowering""#, r#""power_scale":1e308,"lowering""#);
    refused("scale.graph", &fused_graph(&attrs, "8, 16", "1, 8"), "outside f32's normal range");
    // hop × segments past 2^64 in the signal layout.
    let attrs = r#"{"form":"welch_peaks","input_layout":"signal","hop":18446744073709551615,"n_fft":16,"frame_len":16,"segments":2,"k":4,"doubling":"rlx","output_layout":"interleaved","lowering":"cpu"}"#;
    refused("hop.graph", &fused_graph(attrs, "1, 64", "1, 8"), "overflow");
    // rlx-run refuses it too: rlx-ext/tests/rlx_run_hardening.rs.
}

#[test]
fn graph_names_from_json_and_mlir_must_be_spellable() {
    let json = r#"{"name":"g {\n}\ngraph @other","nodes":[{"id":0,"op":{"Input":{"name":"x"}},"inputs":[],"shape":{"dims":[{"Static":4}],"dtype":"F32"}}],"outputs":[0]}"#;
    refused("name.json", json, "is not one `graph @name` can spell");
    let mlir = mlir_with_attr("", "1").replace("@g(", "@\"a b\"(");
    refused("name.mlir", &mlir, "is not one `graph @name` can spell");
}

// ---- Messages ----------------------------------------------------------

#[test]
fn messages_are_visible_bounded_and_said_once() {
    let dir = tmp();
    // A byte-order mark is read past.
    let bom = write(dir.path(), "bom.graph", format!("\u{feff}{}", chain()));
    let r = rlx_opt(&[s(&bom)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // NUL bytes are shown escaped; an 800 KB token is clipped.
    let nul = write(dir.path(), "nul.graph", "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4] f32\n  %1 = \u{0}\u{0}(%0) : [4] f32\n  return %1\n}\n");
    let r = rlx_opt(&[s(&nul)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(!stderr(&r).contains('\0') && stderr(&r).contains("\\u{0}"), "{}", stderr(&r));
    let long = write(dir.path(), "long.graph", format!("graph @g {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [4] {}\n  return %0\n}}\n", "q".repeat(800_000)));
    let r = rlx_opt(&[s(&long)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).len() < 1000, "{} bytes of message", stderr(&r).len());
    // rlx-run says a located error once, as rlx-opt does:
    // rlx-ext/tests/rlx_run_hardening.rs.
}

#[test]
fn mlir_input_gets_the_checks_the_text_reader_makes() {
    let base = mlir_with_attr("", "1");
    refused("id.mlir", &base.replace("{a = 1}", "{a = 1, rlx.id = -5 : i64}"), "`rlx.id` must be an integer in 0..2^32");
    let redefined = base.replace("    return %0", "    %0 = \"rlx.Foo\"(%arg0) {a = 2} : (tensor<4xf32>) -> tensor<4xf32>\n    return %0");
    refused("redefined.mlir", &redefined, mlir_says("redefinition of value %0", "redefinition of SSA value '%0'"));
    let function = &base[base.find("  func.func").unwrap()..base.rfind("}\n").unwrap()];
    refused("twice.mlir", &format!("module {{\n{function}{function}}}\n"), mlir_says("redefinition of symbol @g", "redefinition of symbol named 'g'"));
    refused("alias.mlir", &mlir_with_attr("#a = 1\n#a = 2\n", "#a"), mlir_says("redefinition of alias #a", "redefinition of attribute alias id 'a'"));
    let result = base.replace("-> tensor<4xf32> {", "-> tensor<5xf32> {");
    refused("result.mlir", &result, mlir_says("declares result 0 as [5] f32 but returns [4] f32", "doesn't match function result type"));
    refused("ragged.mlir", &mlir_with_attr("", "1").replace("{a = 1}", "{value = dense<[[1.0], [2.0, 3.0]]> : tensor<2x2xf32>}").replace("rlx.Foo", "rlx.Constant").replace("(%arg0)", "()").replace("(tensor<4xf32>) -> tensor<4xf32>\n", "() -> tensor<4xf32>\n"), mlir_says("is not shaped [2, 2]", "tensor literal is invalid"));
}

#[test]
fn split_input_emitted_as_mlir_is_one_module_per_chunk() {
    let dir = tmp();
    // Two chunks whose graphs share a name: one module held both, with two
    // functions of one symbol (invalid MLIR).
    let input = write(dir.path(), "split.graph", format!("{}// -----\n{}", chain(), chain()));
    let out = dir.path().join("split.mlir");
    let r = rlx_opt(&["--split-input-file", "--emit=mlir", s(&input), "-o", s(&out)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.matches("// -----").count(), 1, "{text}");
    let back = rlx_opt(&["--split-input-file", s(&out)]);
    assert_eq!(back.status.code(), Some(0), "{}", stderr(&back));
    assert_eq!(String::from_utf8_lossy(&back.stdout).matches("graph @welch_chains_1").count(), 2);
    // An error in the second chunk is at its line in the file (with the
    // mlir feature too, where MLIR's parser is not given a NUL byte).
    let text = text.replacen("// -----\n", "// -----\n\0\n", 1);
    let second_at = text.lines().position(|l| l == "\0").unwrap() + 1;
    let nul = write(dir.path(), "nul.mlir", &text);
    let r = rlx_opt(&["--split-input-file", s(&nul)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(&format!("nul.mlir:{second_at}:")), "line {second_at}: {}", stderr(&r));
}

// ---- The IO profile and the gate never decide on saturated numbers ---------

#[test]
fn the_gate_refuses_to_price_overflowing_graphs_and_unbounded_knobs() {
    let dir = tmp();
    let huge = write(dir.path(), "huge.graph", rlx_opt::testgen::welch_chains(1, 1 << 36, 1 << 24, 1 << 20, 4));
    let report = dir.path().join("report.json");
    let r = rlx_opt(&["--fuse-welch-peaks", s(&huge), "--fusion-report", s(&report), "-o", s(&dir.path().join("out.graph"))]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let candidate = &report[0];
    assert_eq!(candidate["decision"], "rejected", "{candidate}");
    assert!(candidate["reason"].as_str().unwrap().contains("overflow 64 bits"), "{candidate}");
    let small = write(dir.path(), "small.graph", chain());
    for knob in ["dispatch-ns=1e308", "min-gain-ns=nan"] {
        let r = rlx_opt(&[&format!("--fuse-welch-peaks={knob}"), s(&small)]);
        assert_eq!(r.status.code(), Some(2), "{knob}: {}", stderr(&r));
        assert!(stderr(&r).contains("must be a number in 0..=1e15"), "{knob}: {}", stderr(&r));
    }
    // A bandwidth below 1 byte/ns was taken as 1 without a word (an
    // adversarial run): refused, as a huge one is.
    for knob in ["memory-bw=1e300", "memory-bw=0", "readback-bw=0.5"] {
        let r = rlx_opt(&[&format!("--fuse-welch-peaks={knob}"), s(&small)]);
        assert_eq!(r.status.code(), Some(2), "{knob}: {}", stderr(&r));
        assert!(stderr(&r).contains("must be a number in 1..=1e15 (bytes/ns; RLX's cost model takes less as 1)"), "{knob}: {}", stderr(&r));
    }
}

// ---- rlx-trace: numbers checked, memory bounded ---------------------------

#[test]
fn traces_with_impossible_numbers_are_refused_where_they_are() {
    let dir = tmp();
    let event = |extra: &str| format!(r#"{{"traceEvents":[{{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1}},{{"ph":"X","cat":"kernel","name":"k2","ts":1,{extra}}}]}}"#);
    for (name, extra, expected) in [
        ("negative.json", r#""dur":-1"#, "duration -1 µs is not in 0..=1e12"),
        ("huge.json", r#""dur":1e308"#, "is not in 0..=1e12"),
        ("bytes.json", r#""dur":1,"args":{"bytes":-5}}"#, "a copy of -5 bytes"),
        ("fraction.json", r#""dur":1,"args":{"bytes":1.5}}"#, "is not an integer"),
        // The thread as the ids are (an adversarial run: 1e300 counted as thread 0).
        ("thread.json", r#""dur":1,"tid":1e300"#, "1e+300 is past ±2^53"),
    ] {
        let text = event(extra);
        // The copy event needs its own category; the kernel form checks the rest.
        let text = if name == "bytes.json" || name == "fraction.json" { text.replacen(r#""cat":"kernel","name":"k2""#, r#""cat":"gpu_memcpy","name":"Memcpy DtoH""#, 1).replace("}}]}", "}]}") } else { text };
        let path = write(dir.path(), name, &text);
        let r = run(env!("CARGO_BIN_EXE_rlx-trace"), &["summary", s(&path)]);
        assert_eq!(r.status.code(), Some(1), "{name}: {}", stderr(&r));
        assert!(stderr(&r).contains(expected), "{name}: {}", stderr(&r));
        assert!(stderr(&r).contains(&format!("{}:1:", s(&path))), "{name}: the place is named: {}", stderr(&r));
    }
    // A duration of −0.0 is 0, not a total of "-0.0 µs".
    let path = write(dir.path(), "minus_zero.json", r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":-0.0,"tid":"main"}]}"#);
    let r = run(env!("CARGO_BIN_EXE_rlx-trace"), &["summary", s(&path)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(!String::from_utf8_lossy(&r.stdout).contains("-0"), "{}", String::from_utf8_lossy(&r.stdout));
}

#[test]
fn json_errors_name_the_node_they_are_in() {
    let json = "{\"name\":\"g\",\"nodes\":[\n  {\"id\":0,\"op\":{\"Input\":{\"name\":\"x\"}},\"inputs\":[],\"shape\":{\"dims\":[{\"Static\":4}],\"dtype\":\"F32\"},\"name\":null},\n  {\"id\":1,\"op\":{\"Input\":{\"name\":\"y\"}},\"inputs\":[7],\"shape\":{\"dims\":[{\"Static\":4}],\"dtype\":\"F32\"},\"name\":null}\n],\"outputs\":[0]}\n";
    let dir = tmp();
    let path = write(dir.path(), "g.json", json);
    let r = rlx_opt(&[s(&path)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).starts_with(&format!("{}:3:3: error: node %1: an input refers to undefined node id 7", s(&path))), "{}", stderr(&r));
    let typo = write(dir.path(), "t.json", json.replace("\"inputs\":[7]", "\"inputs\":[]").replacen("\"F32\"},\"name\":null},\n  {", "\"F99\"},\"name\":null},\n  {", 1));
    let r = rlx_opt(&[s(&typo)]);
    assert!(stderr(&r).starts_with(&format!("{}:2:3: error: node %0: unknown dtype `F99`", s(&typo))), "{}", stderr(&r));
}

// ---- Fuzzing findings (fuzz/): each one a regression test -------------------

/// Every input a fuzz target found (`tests/fuzz_findings/`, named for what
/// was wrong) is refused cleanly: exit 1, one located error, no panic.
#[test]
fn fuzz_findings_are_refused_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_findings");
    let mut found = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let r = rlx_opt(&[s(&path)]);
        assert_eq!(r.status.code(), Some(1), "{}: {}", path.display(), stderr(&r));
        assert!(stderr(&r).starts_with(&format!("{}:", s(&path))) && !stderr(&r).contains("panicked"), "{}", stderr(&r));
        found += 1;
    }
    assert!(found >= 1);
    // mlir_position_after_user.mlir: an argument placed by `rlx.position`
    // after its users read as a graph whose round trip reordered it.
    let r = rlx_opt(&[s(&dir.join("mlir_position_after_user.mlir"))]);
    assert!(stderr(&r).contains("uses %0, which `rlx.position` places after it"), "{}", stderr(&r));
    // rlx_text_word_inside_a_character.graph: a keyword check sliced the
    // line inside a multi-byte character (a panic).
    let r = rlx_opt(&[s(&dir.join("rlx_text_word_inside_a_character.graph"))]);
    assert!(stderr(&r).contains(":12:"), "{}", stderr(&r));
    // rlx_text_json_error_inside_a_character.graph: serde_json placed the
    // error of line 5's op at a byte inside a multi-byte character, where
    // the column count sliced the line (a panic). Every line is parsed; the
    // first error in the file is the one said.
    let r = rlx_opt(&[s(&dir.join("rlx_text_json_error_inside_a_character.graph"))]);
    assert!(stderr(&r).contains(":4:303: error: invalid `Custom` op"), "{}", stderr(&r));
    // mlir_dense_hex_not_ascii.mlir: a hex dense literal with a non-ASCII
    // character was sliced two bytes at a time (a panic).
    let r = rlx_opt(&[s(&dir.join("mlir_dense_hex_not_ascii.mlir"))]);
    if cfg!(feature = "mlir") {
        // With the mlir feature, MLIR's own parser reads the file first and
        // is not given the NUL byte the fuzzer also put in it (line 37).
        assert!(stderr(&r).contains(":37:4197: error: NUL byte in MLIR input"), "{}", stderr(&r));
    } else {
        assert!(stderr(&r).contains(":35:5: error:") && stderr(&r).contains("hexadecimal dense literal: `ú` at digit 314 is not a hexadecimal digit"), "{}", stderr(&r));
    }
    // mlir_node_id_twice.mlir: `rlx.id = 11` on one op and, on a later op
    // without one, the id after its predecessor's (11 again): the graph
    // printed two `%11`s, which no reader takes back.
    // The fuzzer also renamed the Fft's `algo` to `invealgo`, which was
    // dropped then and is refused now (a field Fft does not have); with its
    // name back, the ids are what is wrong.
    let r = rlx_opt(&[s(&dir.join("mlir_node_id_twice.mlir"))]);
    assert!(stderr(&r).contains(":6:5: error: `rlx.Fft`: attribute `invealgo` is not a field of `Fft` (it would be dropped)"), "{}", stderr(&r));
    let renamed = std::fs::read_to_string(dir.join("mlir_node_id_twice.mlir")).unwrap().replace("invealgo", "algo");
    let scratch = tmp();
    let r = rlx_opt(&[s(&write(scratch.path(), "mlir_node_id_twice.mlir", renamed))]);
    assert!(stderr(&r).contains(":15:5: error: %11 gets node id 11 (one after the node before it), which %12 already has"), "{}", stderr(&r));
}
