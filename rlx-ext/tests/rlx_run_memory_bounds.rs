//! Issue 25, memory from tiny inputs, for rlx-run (moved here with its
//! binary from the core's tests/memory_bounds.rs): rlx-run checks the
//! tensors a run holds against a budget before it allocates any. The
//! hostile runs go under an address-space limit (setrlimit in the child),
//! where an unbounded allocation aborts: each must end with exit 1 and a
//! message instead.

mod cli;
use cli::child::{limited};
use cli::{s, stderr, write};
use std::process::Output;

const RLX_RUN: &str = env!("CARGO_BIN_EXE_rlx-run");
/// What the issue's runs had: a 4 GB address space.
const FOUR_GB: u64 = 4_000_000_000;

fn run(bin: &str, args: &[&str]) -> Output {
    cli::run(bin, args)
}


/// Exit 1 (not a signal: an abort or the kernel's kill has no code), saying `expected`.
fn assert_refused(out: &Output, expected: &str) {
    assert_eq!(out.status.code(), Some(1), "status {:?}: {}", out.status, stderr(out));
    assert!(stderr(out).contains(expected), "expected {expected:?} in:\n{}", stderr(out));
    assert!(!stderr(out).contains("panicked") && !stderr(out).contains("memory allocation"), "{}", stderr(out));
}

// ---- rlx-run: the memory budget ----------------------------------------

/// `a + b` broadcast from [23000, 1] and [1, 23000]: a 2.1 GB intermediate
/// from two 92 KB inputs, then reduced to one number. `extra` more sums
/// held at once multiply that.
fn broadcast_graph(extra: usize) -> String {
    let mut lines = vec![
        r#"  %0 = {"Input":{"name":"a"}} : [23000, 1] f32"#.to_string(),
        r#"  %1 = {"Input":{"name":"b"}} : [1, 23000] f32"#.to_string(),
    ];
    for i in 0..=extra {
        let op = ["Add", "Sub", "Mul", "Div", "Max"][i % 5];
        lines.push(format!("  %{} = {{\"Binary\":\"{op}\"}}(%0, %1) : [23000, 23000] f32", 2 + i));
    }
    // Every sum is live until the reductions below use them all.
    let mut last = 2;
    for i in 1..=extra {
        let id = 2 + extra + i;
        lines.push(format!("  %{id} = {{\"Binary\":\"Add\"}}(%{last}, %{}) : [23000, 23000] f32", 2 + i));
        last = id;
    }
    let sum = 3 + 2 * extra;
    lines.push(format!("  %{sum} = {{\"Reduce\":{{\"op\":\"Sum\",\"axes\":[0, 1],\"keep_dim\":false}}}}(%{last}) : [] f32"));
    format!("graph @broadcast {{\n{}\n  return %{sum}\n}}\n", lines.join("\n"))
}

#[test]
fn rlx_run_refuses_a_run_past_its_memory_limit_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write(dir.path(), "broadcast.graph", broadcast_graph(0));
    let out = run(RLX_RUN, &[s(&graph), "--random-inputs=1", "--memory-limit=1GiB"]);
    assert_refused(
        &out,
        "broadcast.graph: error: the run would hold 2.0 GiB of tensors at once (2116184004 bytes, as `Reduce` %3 computes its [] f32 result); the memory limit is 1.0 GiB (--memory-limit); --memory-limit=BYTES raises it",
    );
    // Under the issue's 4 GB address space the default budget is half of it.
    let out = limited(RLX_RUN, &[s(&graph), "--random-inputs=1"], FOUR_GB);
    assert_refused(&out, "the memory limit is 1.9 GiB (the default: half of the address-space limit (ulimit -v))");
    // Five such sums held at once, six with the first total (12.7 GB), are
    // past the default anywhere (at most 8 GiB).
    let graph = write(dir.path(), "five.graph", broadcast_graph(4));
    let out = run(RLX_RUN, &[s(&graph), "--random-inputs=1"]);
    assert_refused(&out, "the run would hold 11.8 GiB of tensors at once (12696184000 bytes, as `Binary` %7 computes");
}

/// An FFT's working memory counts: a 10^8-point transform (its row
/// buffer, rustfft's scratch and twiddles, about 3 rows more) ran past a
/// check of its tensors alone (1.86 GiB of a 1.9 GiB budget) and aborted
/// in the allocator with signal 6 under a 4 GB address space (an
/// adversarial run).
#[test]
fn rlx_run_counts_an_ffts_working_memory() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write(
        dir.path(),
        "fft.graph",
        r#"graph @l {
  %0 = {"Input":{"name":"x"}} : [1, 100000000] f32 #"x"
  %1 = {"Binary":"Sub"}(%0, %0) : [1, 100000000] f32
  %2 = {"Concat":{"axis":1}}(%0, %1) : [1, 200000000] f32
  %3 = {"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}(%2) : [1, 200000000] f32
  return %3
}
"#,
    );
    let out = limited(RLX_RUN, &[s(&graph), "--random-inputs=1"], FOUR_GB);
    assert_refused(&out, "as `Fft` %3 computes its [1, 200000000] f32 result with 3.0 GiB of working memory); the memory limit is 1.9 GiB");
}

/// Inputs count: five 1 GiB inputs under a 4 GB address space are refused
/// before one is made.
#[test]
fn rlx_run_counts_its_inputs_against_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<String> = (0..5).map(|i| format!("  %{i} = {{\"Input\":{{\"name\":\"x{i}\"}}}} : [268435456] f32")).collect();
    lines.push(r#"  %5 = {"Binary":"Add"}(%0, %1) : [268435456] f32"#.into());
    let graph = write(dir.path(), "inputs.graph", format!("graph @inputs {{\n{}\n  return %5, %2, %3, %4\n}}\n", lines.join("\n")));
    let out = limited(RLX_RUN, &[s(&graph), "--random-inputs=1"], FOUR_GB);
    assert_refused(&out, "the run would hold 10.0 GiB of tensors at once (10737418240 bytes, as its outputs are copied out)");
}

#[test]
fn rlx_run_runs_within_a_budget_and_takes_only_byte_counts() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write(dir.path(), "small.graph", "graph @s {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4] f32\n  %1 = {\"Activation\":\"Exp\"}(%0) : [4] f32\n  return %1\n}\n");
    // The input, the result, and its copy out of the run: 48 bytes.
    let out = run(RLX_RUN, &[s(&graph), "--random-inputs=1", "--memory-limit=48"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(RLX_RUN, &[s(&graph), "--random-inputs=1", "--memory-limit=47"]);
    // Below 1 KiB the count is exact already: said once (an adversarial run).
    assert_refused(&out, "the run would hold 48 bytes of tensors at once (as its outputs are copied out); the memory limit is 47 bytes (--memory-limit)");
    for bad in ["--memory-limit=lots", "--memory-limit=0", "--memory-limit=1.5GiB"] {
        let out = run(RLX_RUN, &[s(&graph), "--random-inputs=1", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
    }
}
