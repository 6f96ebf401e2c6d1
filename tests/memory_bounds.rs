//! Issue 25, memory from tiny inputs: what a graph prints is bounded
//! (`MAX_OUTPUT_BYTES`) and measured before it is written, constants stay
//! bytes from reader to printer, and rlx-run checks the tensors a run holds
//! against a budget before it allocates any. The hostile runs go under an
//! address-space limit (setrlimit in the child), where an unbounded
//! allocation aborts: each must end with exit 1 and a message instead.

mod common;
use common::child::{limited};
use common::{run, s, stderr, stdout, write};
use std::process::Output;



const RLX_OPT: &str = env!("CARGO_BIN_EXE_rlx-opt");
/// What the runs had: a 4 GB address space.
const FOUR_GB: u64 = 4_000_000_000;



/// Exit 1 (not a signal: an abort or the kernel's kill has no code), saying `expected`.
fn assert_refused(out: &Output, expected: &str) {
    assert_eq!(out.status.code(), Some(1), "status {:?}: {}", out.status, stderr(out));
    assert!(stderr(out).contains(expected), "expected {expected:?} in:\n{}", stderr(out));
    assert!(!stderr(out).contains("panicked") && !stderr(out).contains("memory allocation"), "{}", stderr(out));
}

/// A module of one function returning `dense<1.0> : tensor<Nxf32>`.
fn splat(n: u64) -> String {
    format!(
        "\"builtin.module\"() ({{\n  \"func.func\"() <{{function_type = () -> tensor<{n}xf32>, sym_name = \"g\"}}> ({{\n    %0 = \"rlx.Constant\"() {{value = dense<1.0> : tensor<{n}xf32>}} : () -> tensor<{n}xf32>\n    \"func.return\"(%0) : (tensor<{n}xf32>) -> ()\n  }}) : () -> ()\n}}) : () -> ()\n"
    )
}

// ---- rlx-opt: a module of many functions ----------------------------------

/// A module of `n` functions, each its argument returned; function `bad`
/// (if any) returns a value it never defines.
fn functions(n: usize, bad: Option<usize>) -> String {
    let mut text = String::from("module {\n");
    for i in 0..n {
        let returned = if bad == Some(i) { "%undefined" } else { "%x" };
        text += &format!("  func.func @g{i}(%x: tensor<2xf32>) -> tensor<2xf32> {{\n    return {returned} : tensor<2xf32>\n  }}\n");
    }
    text + "}\n"
}

/// A module is read one function at a time, each printed as it is done:
/// 10^5 functions (9 MB) held the module's syntax tree and every graph at
/// once, 518 MB resident (about 5 KB a function), and aborted under a 300 MB
/// address space; now they print there (33 MB resident).
#[test]
fn a_module_of_many_functions_is_read_one_function_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000;
    let file = write(dir.path(), "many.mlir", functions(n, None));
    let target = dir.path().join("out.graph");
    let out = limited(RLX_OPT, &[s(&file), "-o", s(&target)], 300_000_000);
    assert_eq!(out.status.code(), Some(0), "status {:?}: {}", out.status, stderr(&out));
    let printed = std::fs::read_to_string(&target).unwrap();
    assert_eq!(printed.matches("graph @").count(), n);
    assert!(printed.ends_with("graph @g99999 {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n  return %0\n}\n"), "{}", &printed[printed.len() - 200..]);
}

/// Read one at a time, a module's graphs still print together: one bad
/// function prints none of the module's, as mlir-opt prints no module that
/// fails; the chunks around it print.
#[test]
fn a_module_with_a_bad_function_prints_none_of_its_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let split = format!("{}// -----\n{}// -----\n{}", functions(1, None), functions(3, Some(2)), functions(2, None));
    let file = write(dir.path(), "split.mlir", split);
    let out = run(RLX_OPT, &["--split-input-file", s(&file)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // rlx-opt's reader says it, or MLIR's first with the `mlir` feature.
    let said = ["use of undefined value %undefined", "MLIR: use of undeclared SSA value name"].map(|m| format!("split.mlir:15:12: error: {m}"));
    assert!(said.iter().any(|m| stderr(&out).contains(m.as_str())), "{}", stderr(&out));
    let printed = stdout(&out);
    let graphs: Vec<&str> = printed.lines().filter(|l| l.starts_with("graph @")).collect();
    assert_eq!(graphs, ["graph @g0 {", "graph @g0 {", "graph @g1 {"]);
}

// ---- rlx-opt: output bound, constants as bytes ---------------------------

/// The file: 290 bytes holding a 400 MB constant, which is 1.1 GB of
/// RLX text. It asked for 12.8 GB and aborted under a 4 GB address space;
/// now it is refused, before printing, in bounded memory.
#[test]
fn a_tiny_splat_that_prints_past_the_output_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "splat.mlir", splat(100_000_000));
    assert!(std::fs::metadata(&file).unwrap().len() < 300);
    let out = limited(RLX_OPT, &[s(&file), "-o", "-"], FOUR_GB);
    assert_refused(&out, "splat.mlir: error: the output would take 1100000074 bytes; the limit is 1073741824 bytes (1.0 GiB), the most rlx-opt reads back");
    // Nothing half-written to a file either.
    let target = dir.path().join("out.graph");
    let out = limited(RLX_OPT, &[s(&file), "-o", s(&target)], FOUR_GB);
    assert_refused(&out, "the output would take 1100000074 bytes");
    assert!(!target.exists());
}

/// Splats count together: four `dense<1.0>` of 800 MB each (a 700-byte
/// file), each within the one-tensor limit, decoded to 3.2 GB and aborted
/// in the allocator, in rlx-opt and rlx-run alike (an adversarial run, 4 GB each).
/// Refused before decoding, naming the constant past the module's bound.
#[test]
fn splats_past_the_modules_bound_are_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let t = "tensor<200000000xf32>";
    let constants: String = (0..4).map(|i| format!("    %{i} = \"rlx.Constant\"() {{value = dense<1.0> : {t}}} : () -> {t}\n")).collect();
    let text = format!("module {{\n  func.func @g() -> ({t}, {t}, {t}, {t}) {{\n{constants}    return %0, %1, %2, %3 : {t}, {t}, {t}, {t}\n  }}\n}}\n");
    let file = write(dir.path(), "splats.mlir", text);
    let out = limited(RLX_OPT, &[s(&file), "-o", "-"], FOUR_GB);
    assert_refused(&out, "splats.mlir:4:5: error: `rlx.Constant`: attribute `value`: dense elements of [200000000] f32 would bring the module's constants past 1.0 GiB together");
}

/// Constants under the limit print within a few bytes of memory per byte
/// of data: a 3·10^7 splat (120 MB, 330 MB of RLX text) asked for 3.84 GB
/// through one JSON value per byte; here it must print under a 2 GB
/// address space (the binary, its threads and allocator arenas included).
#[test]
fn constants_print_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "splat.mlir", splat(30_000_000));
    let out = limited(RLX_OPT, &[s(&file), "-o", "-"], 2_000_000_000);
    assert_eq!(out.status.code(), Some(0), "status {:?}: {}", out.status, stderr(&out));
}

/// Constants keep their bytes and their exact text through every format:
/// RLX's own spelling (held as bytes) and another spelling (kept as text,
/// carried through MLIR as `rlx.text`).
#[test]
fn constants_round_trip_exactly_through_every_format() {
    let dir = tempfile::tempdir().unwrap();
    // Every byte value, so each digit count and both ends appear.
    let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    let data = bytes.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
    let spaced = bytes.iter().map(u8::to_string).collect::<Vec<_>>().join(", ");
    let graph = format!(
        "graph @c {{\n  %0 = {{\"Constant\":{{\"data\":[{data}]}}}} : [128] f32 #\"rlx\"\n  %1 = {{\"Constant\": {{\"data\": [{spaced}]}}}} : [128] f32\n  %2 = {{\"Binary\":\"Add\"}}(%0, %1) : [128] f32\n  return %2\n}}\n"
    );
    let original = write(dir.path(), "c.graph", &graph);
    for emit in ["graph", "json", "mlir"] {
        let there = dir.path().join(format!("there.{}", if emit == "graph" { "graph" } else { emit }));
        let out = run(RLX_OPT, &[s(&original), &format!("--emit={emit}"), "-o", s(&there)]);
        assert_eq!(out.status.code(), Some(0), "{emit}: {}", stderr(&out));
        let back = run(RLX_OPT, &[s(&there), "-o", "-"]);
        assert_eq!(back.status.code(), Some(0), "{emit}: {}", stderr(&back));
        assert_eq!(String::from_utf8(back.stdout).unwrap(), graph, "through {emit}");
    }
}

// ---- rlx-run: the memory budget ----------------------------------------
// rlx-ext/tests/rlx_run_memory_bounds.rs, with the rlx-run binary.

/// `ops` ops naming a 10^5-value attribute alias (`#b`: 1000 `#a`s of 100
/// values), each with its own `rlx.id` (`distinct`) or all spelled alike.
fn laughs(ops: usize, distinct: bool) -> String {
    let a = vec!["1"; 100].join(", ");
    let b = vec!["#a"; 1000].join(", ");
    let body: Vec<String> = (1..=ops)
        .map(|i| {
            let id = if distinct { format!(", rlx.id = {i} : i64") } else { String::new() };
            format!("    %{i} = \"rlx.Foo\"(%0) {{a = #b{id}}} : (tensor<4xf32>) -> tensor<4xf32>")
        })
        .collect();
    format!(
        "#a = [{a}]\n#b = [{b}]\n\"builtin.module\"() ({{\n  \"func.func\"() <{{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = \"g\"}}> ({{\n  ^bb0(%0: tensor<4xf32>):\n{}\n    \"func.return\"(%{ops}) : (tensor<4xf32>) -> ()\n  }}) : () -> ()\n}}) : () -> ()\n",
        body.join("\n")
    )
}

/// Each attribute's expansion was bounded, the module's was not: 2000 ops
/// naming one 10^6-value alias, 187 KB of text, grew past 900 MB within
/// two minutes. What a module's attributes expand to through aliases is
/// bounded together; ops spelled alike are read once and count once.
#[test]
fn attribute_aliases_are_bounded_across_the_module() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "laughs.mlir", laughs(200, true));
    let out = limited(RLX_OPT, &[s(&file), "-o", "-"], FOUR_GB);
    assert_refused(&out, "error: `rlx.Foo`: attribute `a`: the module's attributes expand to more than 16777216 values through their aliases");
    let file = write(dir.path(), "alike.mlir", laughs(200, false));
    let out = limited(RLX_OPT, &[s(&file), "-o", "-"], FOUR_GB);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
