//! Issue 25, sections 3 and 4: what the three tools do when their own
//! streams or output files fail, and what reaches a terminal.
//!
//! - A closed stdout or stderr (`| head -1`) ends a tool quietly, exit 0; a
//!   full one (`> /dev/full`) is `error: …`, exit 1; never a panic (101).
//! - Every output file of one invocation is one batch: all or none, the
//!   files it would have replaced as they were, no folder left behind.
//! - Two outputs of one invocation that reach one file are refused.
//! - Invisible characters from the command line or an input are escaped.
//!
//! Every case runs the real binaries as subprocesses.

mod common;
use common::child::{Stream, assert_broken_streams_are_handled, assert_escaped, chain, names};
use common::{run, s, stderr, write};
use std::path::{Path, PathBuf};
use std::process::Command;

const RLX_OPT: &str = env!("CARGO_BIN_EXE_rlx-opt");
const RLX_TRACE: &str = env!("CARGO_BIN_EXE_rlx-trace");


/// A graph, and two traces rlx-run's driver wrote of it (unfused and fused).
struct Fixture {
    dir: tempfile::TempDir,
    graph: PathBuf,
    traces: [PathBuf; 2],
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let graph = write(dir.path(), "g.graph", chain());
    let fused = dir.path().join("fused.graph");
    assert!(run(RLX_OPT, &["--fuse-welch-peaks=force=true", s(&graph), "-o", s(&fused)]).status.success());
    let traces = [dir.path().join("unfused.json"), dir.path().join("fused.json")];
    // rlx-run's driver in this process (the binary is rlx-ext's); the
    // outputs go elsewhere, the folder holds what the tests expect.
    let outputs = tempfile::tempdir().unwrap();
    for (g, t) in [(&graph, &traces[0]), (&fused, &traces[1])] {
        let args = ["rlx-run", s(g), "--random-inputs=1", "--trace", s(t), "--output-dir", s(outputs.path())];
        assert_eq!(rlx_opt::run_cli::main_with_args(args.map(String::from).to_vec()), 0, "{args:?}");
    }
    Fixture { dir, graph, traces }
}


/// Issue 25: `rlx-trace summary t.json | head -1` panicked with `failed
/// printing to stdout: Broken pipe` (exit 101), as did eleven more
/// invocations, on a closed pipe or on `/dev/full`.
#[test]
fn a_closed_stream_ends_quietly_and_a_full_one_is_an_error() {
    let f = fixture();
    let (graph, [a, b]) = (s(&f.graph), [s(&f.traces[0]), s(&f.traces[1])]);
    let cases: Vec<(&str, Vec<&str>, Stream)> = vec![
        (RLX_TRACE, vec!["summary", a], Stream::Stdout),
        (RLX_TRACE, vec!["diff", a, b], Stream::Stdout),
        (RLX_TRACE, vec!["diff", a, b, "--format=json"], Stream::Stdout),
        (RLX_OPT, vec!["--list-passes"], Stream::Stdout),
        (RLX_OPT, vec!["--help"], Stream::Stdout),
        (RLX_TRACE, vec!["--help"], Stream::Stdout),
        (RLX_OPT, vec![graph], Stream::Stdout),
        (RLX_OPT, vec!["--emit=mlir", graph], Stream::Stdout),
        (RLX_OPT, vec!["--fuse-welch-peaks=force=true", "--fusion-report=-", graph, "-o", "/dev/null"], Stream::Stderr),
        (RLX_OPT, vec!["--print-io-profile", graph, "-o", "/dev/null"], Stream::Stderr),
        (RLX_OPT, vec!["--dce", "--pass-statistics", graph, "-o", "/dev/null"], Stream::Stderr),
        (RLX_OPT, vec!["--dce", "--timing", graph, "-o", "/dev/null"], Stream::Stderr),
        (RLX_OPT, vec!["--dce", "--print-ir-after-all", graph, "-o", "/dev/null"], Stream::Stderr),
    ];
    assert_broken_streams_are_handled(&cases);
}

/// A symlink to `/dev/full`: a destination that takes no bytes, found only
/// when it is written, last of its batch.
fn full_link(dir: &Path, name: &str) -> PathBuf {
    let link = dir.join(name);
    std::os::unix::fs::symlink("/dev/full", &link).unwrap();
    link
}

/// Issue 25: rlx-opt wrote the fusion report and the kernels when `-o`
/// failed, and the kernels when the report failed.
#[test]
fn rlx_opt_outputs_are_one_batch_restored_on_failure() {
    let f = fixture();
    let dir = f.dir.path();
    let kernels = dir.join("kernels");
    let report = write(dir, "report.json", "old report");
    let output = write(dir, "out.graph", "old graph");
    let bad = full_link(dir, "full");
    let args = |o: &Path, r: &Path| -> Vec<String> {
        ["--fuse-welch-peaks=force=true", s(&f.graph), "-o", s(o), &format!("--emit-kernels={}", s(&kernels)), "--fusion-report", s(r)].map(String::from).to_vec()
    };
    for (o, r) in [(&bad, &report), (&output, &bad)] {
        let args = args(o, r);
        let r = Command::new(RLX_OPT).args(&args).output().unwrap();
        assert_eq!(r.status.code(), Some(1), "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains("No space left on device"), "{}", stderr(&r));
        assert_eq!(std::fs::read(&report).unwrap(), b"old report", "{args:?}: the report was replaced");
        assert_eq!(std::fs::read(&output).unwrap(), b"old graph", "{args:?}: -o was replaced");
        assert!(!kernels.exists(), "{args:?}: the kernels were written");
        assert_eq!(names(dir), ["full", "fused.graph", "fused.json", "g.graph", "out.graph", "report.json", "unfused.json"]);
    }
    let r = Command::new(RLX_OPT).args(args(&output, &report)).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(kernels.is_dir() && std::fs::read_to_string(&report).unwrap().starts_with('[') && std::fs::read_to_string(&output).unwrap().starts_with("graph"));
}

/// Issue 25: silent overwrites, exit 0: a trace inside the output folder,
/// the report and `-o` on one file, two graphs of one name sharing a
/// kernel folder. Each is refused before anything is written.
#[test]
fn two_outputs_of_one_run_never_share_a_file() {
    let f = fixture();
    let dir = f.dir.path();
    let same = "another output of this run goes to the same file";

    // rlx-run's trace and outputs: rlx-ext/tests/rlx_run_io_failures.rs.
    let both = dir.join("both.json");
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("both.json", &link).unwrap();
    for report in [&both, &link] {
        let r = run(RLX_OPT, &["--fuse-welch-peaks=force=true", s(&f.graph), "-o", s(&both), "--fusion-report", s(report)]);
        assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
        assert!(stderr(&r).contains(same), "{}", stderr(&r));
        assert!(!both.exists(), "something was written");
    }
    // `/dev/null` takes any number of outputs.
    let r = run(RLX_OPT, &["--fuse-welch-peaks=force=true", s(&f.graph), "-o", "/dev/null", "--fusion-report", "/dev/null"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));

    let twice = write(dir, "twice.graph", format!("{}// -----\n{}", chain(), chain()));
    let kernels = dir.join("kernels");
    let r = run(RLX_OPT, &["--split-input-file", "--fuse-welch-peaks=force=true", s(&twice), "-o", "/dev/null", &format!("--emit-kernels={}", s(&kernels))]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    // The cause named: two graphs of one name (an adversarial run found the
    // bare "same file" message hard to read).
    assert!(stderr(&r).contains("two graphs of this run are named @welch_chains_1"), "{}", stderr(&r));
    assert!(!kernels.exists(), "something was written");
}

/// An adversarial run: a report written over the file it was made of,
/// exit 0 (`rlx-opt g.graph --fusion-report=g.graph`, `rlx-trace diff t.json
/// t.json -o t.json`). Refused, the input kept; `-o` over the graph read is
/// a rewrite in place, as mlir-opt allows.
#[test]
fn an_output_never_replaces_a_file_the_run_reads() {
    let f = fixture();
    let dir = f.dir.path();
    let reads = "it is a file this run reads";
    let graph = write(dir, "own.graph", chain());
    let link = dir.join("own-link.graph");
    std::os::unix::fs::symlink("own.graph", &link).unwrap();
    for report in [&graph, &link] {
        let r = run(RLX_OPT, &["--fuse-welch-peaks=force=true", s(&graph), "-o", "/dev/null", "--fusion-report", s(report)]);
        assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
        assert!(stderr(&r).contains(reads), "{}", stderr(&r));
        assert_eq!(std::fs::read_to_string(&graph).unwrap(), chain(), "the graph was replaced");
    }
    // Nor over a device profile a pass reads.
    let profile = dir.join("profile.json");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cpu.json"), &profile).unwrap();
    let before = std::fs::read(&profile).unwrap();
    let r = run(RLX_OPT, &[&format!("--fuse-welch-peaks=profile={}", s(&profile)), s(&graph), "-o", "/dev/null", "--fusion-report", s(&profile)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(reads), "{}", stderr(&r));
    assert_eq!(std::fs::read(&profile).unwrap(), before, "the profile was replaced");
    // `-o` neither (it replaced the profile with the graph, exit 0: an
    // adversarial run); only the graph read is rewritten in place.
    let r = run(RLX_OPT, &[&format!("--fuse-welch-peaks=profile={}", s(&profile)), s(&graph), "-o", s(&profile)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(&format!("cannot write '{}': {reads}", s(&profile))), "{}", stderr(&r));
    assert_eq!(std::fs::read(&profile).unwrap(), before, "-o replaced the profile");
    let r = run(RLX_OPT, &["--fuse-welch-peaks=force=true", s(&graph), "-o", s(&graph)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(std::fs::read_to_string(&graph).unwrap().contains("rlx_opt.welch_peaks"), "-o rewrites its graph in place");

    let trace = dir.join("own.json");
    std::fs::copy(&f.traces[0], &trace).unwrap();
    let before = std::fs::read(&trace).unwrap();
    let r = run(RLX_TRACE, &["diff", s(&trace), s(&f.traces[1]), "-o", s(&trace)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(reads), "{}", stderr(&r));
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was replaced");
}

/// Issue 25, section 3: a path that is not UTF-8 was reopened through
/// `to_string_lossy`, which writes elsewhere (and the tools panicked on
/// such an argument before that).
#[test]
fn paths_that_are_not_utf8_are_written_where_they_say() {
    use std::os::unix::ffi::OsStrExt;
    let f = fixture();
    // rlx-run's `--output-dir`: rlx-ext/tests/rlx_run_io_failures.rs.
    let output = f.dir.path().join(std::ffi::OsStr::from_bytes(b"g\xfe.graph"));
    let r = Command::new(RLX_OPT).arg(&f.graph).arg("-o").arg(&output).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(output.is_file());
    {
        let lossy = "g\u{fffd}.graph";
        assert!(!f.dir.path().join(lossy).exists(), "a lossy name was written: {lossy}");
    }
    // …and read from where they say (an adversarial run: the input was
    // refused as a usage error, exit 2, where `-o` took the same name).
    let r = Command::new(RLX_OPT).arg(&output).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(r.stdout, std::fs::read(&output).unwrap());
    let bad = f.dir.path().join(std::ffi::OsStr::from_bytes(b"bad\xfe.graph"));
    std::fs::write(&bad, "garbage").unwrap();
    let r = Command::new(RLX_OPT).arg(&bad).output().unwrap();
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("bad\u{fffd}.graph:1:1: error: expected `graph`"), "{}", stderr(&r));
}


/// Issue 25: `unknown pass`, `unknown target`, profile paths, rlx-trace's
/// kernel and device names reached the terminal with raw escape sequences,
/// and a 30,000-pass pipeline error echoed 120 KB.
#[test]
fn control_bytes_are_escaped_and_echoes_bounded() {
    let f = fixture();
    let graph = s(&f.graph);
    let esc = "\u{1b}]0;owned\u{7}\u{1b}[2J";
    for (args, code) in [
        (vec![format!("--pass-pipeline=dce,{esc}"), graph.into()], 2),
        (vec![format!("--fuse-welch-peaks=target={esc}"), graph.into()], 2),
        (vec![format!("--fuse-welch-peaks=profile=/nonexistent/{esc}.json"), graph.into()], 2),
        (vec![format!("{esc}.graph")], 1),
        // Below a file: a folder that cannot be made (nothing is created outside the test's folder).
        (vec![graph.into(), "-o".into(), format!("{graph}/{esc}")], 1),
    ] {
        let r = Command::new(RLX_OPT).args(&args).output().unwrap();
        assert_eq!(r.status.code(), Some(code), "{args:?}: {}", stderr(&r));
        assert_escaped(&r, &format!("rlx-opt {args:?}"));
    }
    // rlx-run's `--output-dir`: rlx-ext/tests/rlx_run_io_failures.rs.

    // 30,000 passes, with and without spaces (an argument takes at most 128 KiB).
    let pipelines = [format!("--pass-pipeline={}{{", "dce,".repeat(30_000)), format!("--pass-pipeline={}{{", "d, ".repeat(30_000)), format!("--pass-pipeline={},", "d, ".repeat(30_000))];
    for pipeline in pipelines {
        let r = run(RLX_OPT, &[&pipeline, graph]);
        assert_eq!(r.status.code(), Some(2), "{}", &stderr(&r)[..200.min(stderr(&r).len())]);
        assert!(stderr(&r).len() < 1000, "{} bytes of message", stderr(&r).len());
    }

    // A device profile whose device name carries them, quoted by the fusion report's table.
    let mut profile: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cpu.json")).unwrap()).unwrap();
    // And a line break, which forged a line of the table (an adversarial run).
    profile["device"] = format!("CPU{esc}\nplan of fake %99: forged").into();
    let profile = write(f.dir.path(), "evil-profile.json", profile.to_string());
    let r = run(RLX_OPT, &[&format!("--fuse-welch-peaks=profile={}", s(&profile)), "--fusion-report=-", graph, "-o", "/dev/null"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(stderr(&r).contains("profile (CPU"), "the table quotes the device: {}", stderr(&r));
    assert_escaped(&r, "rlx-opt --fusion-report=-");
    assert!(stderr(&r).contains("\\u{a}plan of fake %99: forged") && !stderr(&r).lines().any(|l| l.starts_with("plan of fake")), "{}", stderr(&r));

    // A trace whose kernel and device names carry escape sequences.
    let trace = write(
        f.dir.path(),
        "evil.json",
        serde_json::json!({
            "deviceProperties": [{"name": format!("GPU{esc}"), "computeMajor": 9}],
            "traceEvents": [
                {"name": format!("kernel{esc}"), "cat": "kernel", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 7, "args": {"device": 0, "stream": 7}},
                {"name": format!("gemm{esc}"), "cat": "kernel", "ph": "X", "ts": 10, "dur": 5, "pid": 1, "tid": 7, "args": {"device": 0, "stream": 7}}
            ]
        })
        .to_string(),
    );
    let r = run(RLX_TRACE, &["summary", s(&trace)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_escaped(&r, "rlx-trace summary");
    let r = run(RLX_TRACE, &["diff", s(&trace), s(&f.traces[0])]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_escaped(&r, "rlx-trace diff");
}

/// A run killed before it prints leaves nothing beside its destination:
/// the temporary file was made when the run started, and a run killed
/// while reading (SIGTERM, an abort) left it behind, empty (an adversarial
/// run). It is made when the first byte is written.
#[test]
fn a_run_killed_before_printing_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("graph @big {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4] f32\n");
    for i in 1..=1_000_000 {
        text += &format!("  %{i} = {{\"Activation\":\"Relu\"}}(%{}) : [4] f32\n", i - 1);
    }
    text += "  return %1000000\n}\n";
    let input = write(dir.path(), "big.graph", text);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    // Reading and converting a million nodes takes seconds; printing MLIR starts after.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlx-opt")).args([s(&input), "--emit=mlir", "-o", s(&out_dir.join("out.mlir"))]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // An unwritable folder is still said before the run reads anything.
    let r = run(env!("CARGO_BIN_EXE_rlx-opt"), &[s(&input), "-o", "/proc/nowhere/out.graph"]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).starts_with("rlx-opt: error: cannot write '/proc/nowhere/out.graph'"), "{}", stderr(&r));
}
