//! Issue 15, hardening, for rlx-run (moved here with its binary from the
//! core's tests/hardening.rs, which keeps rlx-opt's and rlx-trace's): every
//! tool must answer bad input with a clear error and exit 1 (2 for usage),
//! never a crash, a hang, an unbounded allocation or a half-written output.

mod cli;
use cli::child::{fused_graph, welch_attrs};
use cli::{rlx_run, s, stderr, write};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A Welch chain with two outputs (the spectrum and the peaks).
fn chain() -> String {
    rlx_opt::testgen::welch_chains(1, 8, 16, 4, 3)
}

fn graph_of(lines: &[&str], ret: &str) -> String {
    format!("graph @g {{\n{}\n  return {ret}\n}}\n", lines.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"))
}


// ---- Output files: nothing is written unless everything succeeds --------

#[test]
fn output_files_rlx_run_writes_all_outputs_and_the_trace_or_none() {
    let dir = tmp();
    let graph = write(dir.path(), "g.graph", chain());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("0.npy"), b"before").unwrap();
    // Output 1 cannot be written: a directory stands where it goes.
    std::fs::create_dir(out.join("1.npy")).unwrap();
    let trace = dir.path().join("trace.json");
    let r = rlx_run(&[s(&graph), "--random-inputs=1", "--output-dir", s(&out), "--trace", s(&trace)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("1.npy"), "{}", stderr(&r));
    assert_eq!(std::fs::read(out.join("0.npy")).unwrap(), b"before", "output 0 was overwritten");
    assert!(!trace.exists(), "the trace was written anyway");
}

// ---- Usage errors exit 2 --------------------------------------------------

#[test]
fn usage_errors_exit_2() {
    let dir = tmp();
    let graph = write(dir.path(), "g.graph", chain());
    for args in [
        vec![s(&graph), "--repeat", "0"],
        vec![s(&graph), "--repeat", "4294967295"],
        vec![s(&graph), "--input", "xnpy"],
        vec![s(&graph), "--output-dir", ""],
        vec![s(&graph), "--trace", ""],
    ] {
        let r = rlx_run(&args);
        assert_eq!(r.status.code(), Some(2), "rlx-run {args:?}: {}", stderr(&r));
    }
}

// ---- Sizes, headers and values refused before anything is allocated -----

/// `rlx-run` on `text` with random inputs: exit 1, `expected` in the message.
fn run_refused(text: &str, expected: &str) {
    let dir = tmp();
    let path = write(dir.path(), "g.graph", text);
    let r = rlx_run(&[s(&path), "--random-inputs=1"]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(expected), "{}", stderr(&r));
}

#[test]
fn rlx_run_refuses_sizes_before_allocating() {
    let big_input = "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [100000, 100000] f32\n  return %0\n}\n";
    run_refused(big_input, "the limit for one tensor is 4.0 GiB");
    run_refused(&fused_graph(&welch_attrs(16, 16, 8, 1_000_000_000), "8, 16", "1, 2000000000"), "the limit for one tensor is 4.0 GiB");
    run_refused(&fused_graph(&welch_attrs(1 << 31, 16, 8, 4), "8, 16", "1, 8"), "`Custom` op %1: n_fft 2147483648 is longer than the fused op's kernels take (at most 16777216)");
}

#[test]
fn rlx_run_checks_npy_headers_and_lengths_before_reading() {
    let dir = tmp();
    let graph = write(dir.path(), "g.graph", "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4] f32\n  return %0\n}\n");
    let header = |len: usize| {
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
        let mut h = format!("{dict}{}", " ".repeat(len - dict.len() - 1));
        h.push('\n');
        h
    };
    let mut v1 = b"\x93NUMPY\x01\x00".to_vec();
    v1.extend((118u16).to_le_bytes());
    v1.extend(header(118).as_bytes());
    // A v2 header declaring 0xFFFFFFF0 bytes.
    let mut huge = b"\x93NUMPY\x02\x00".to_vec();
    huge.extend(0xFFFF_FFF0u32.to_le_bytes());
    huge.extend(header(118).as_bytes());
    let truncated = [v1.clone(), vec![0; 8]].concat();
    let whole = [v1.clone(), vec![0; 16]].concat();
    for (name, bytes, expected) in [
        ("huge.npy", huge, Some("the header declares 4294967280 bytes")),
        ("truncated.npy", truncated, Some("truncated: the header declares 4 values (16 bytes of data), the file holds 8")),
        ("empty.npy", Vec::new(), Some("not a .npy file")),
        ("whole.npy", whole, None),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let r = rlx_run(&[s(&graph), "--input", &format!("x={}", s(&path))]);
        match expected {
            Some(expected) => {
                assert_eq!(r.status.code(), Some(1), "{name}: {}", stderr(&r));
                assert!(stderr(&r).contains(expected), "{name}: {}", stderr(&r));
            }
            None => assert_eq!(r.status.code(), Some(0), "{name}: {}", stderr(&r)),
        }
    }
}

#[test]
fn gather_indices_must_be_whole_and_in_range() {
    let data = r#"%0 = {"Input":{"name":"d"}} : [2, 3] f32"#;
    let idx = r#"%1 = {"Input":{"name":"i"}} : [2, 3] f32"#;
    // Random inputs in [-1, 1) are not whole numbers: once silently index 0.
    run_refused(&graph_of(&[data, idx, r#"%2 = {"GatherElements":{"axis":1}}(%0, %1) : [2, 3] f32"#], "%2"), "is not a whole number");
}

#[test]
fn fused_op_attributes_that_overflow_are_refused() {
    // hop × segments past 2^64 in the signal layout.
    let attrs = r#"{"form":"welch_peaks","input_layout":"signal","hop":18446744073709551615,"n_fft":16,"frame_len":16,"segments":2,"k":4,"doubling":"rlx","output_layout":"interleaved","lowering":"cpu"}"#;
    run_refused(&fused_graph(attrs, "1, 64", "1, 8"), "overflow");
}

// ---- Messages ----------------------------------------------------------

/// rlx-run says a located error once, as rlx-opt does.
#[test]
fn messages_are_said_once() {
    let dir = tmp();
    let bad = write(dir.path(), "bad.graph", "graph @g {\n  %0 = nonsense\n}\n");
    let r = rlx_run(&[s(&bad), "--random-inputs=1"]);
    assert_eq!(r.status.code(), Some(1));
    assert!(stderr(&r).starts_with(&format!("{}:2:", s(&bad))), "{}", stderr(&r));
    assert_eq!(stderr(&r).matches("error:").count(), 1, "{}", stderr(&r));
}
