//! Issue 25, sections 3 and 4, for rlx-run (moved here with its binary from
//! the core's tests/io_failures.rs, which keeps rlx-opt's and rlx-trace's):
//! what it does when its own streams or output files fail, and what reaches
//! a terminal.
//!
//! - A closed stdout (`| head -1`) ends it quietly, exit 0; a full one
//!   (`> /dev/full`) is `error: …`, exit 1; never a panic (101).
//! - Every output file of one invocation is one batch: all or none, the
//!   files it would have replaced as they were, no folder left behind.
//! - Two outputs of one invocation that reach one file are refused.
//! - Invisible characters from the command line are escaped.
//!
//! Every case runs the real binary as a subprocess.

mod cli;
use cli::child::{Stream, assert_broken_streams_are_handled, assert_escaped, chain, names, with_broken};
use cli::{rlx_opt_in_process, s, stderr, write, write_npy};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RLX_RUN: &str = env!("CARGO_BIN_EXE_rlx-run");

fn run(bin: &str, args: &[&str]) -> Output {
    cli::run(bin, args)
}


/// A graph, and two traces rlx-run wrote of it (unfused and fused).
struct Fixture {
    dir: tempfile::TempDir,
    graph: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let graph = write(dir.path(), "g.graph", chain());
    let fused = dir.path().join("fused.graph");
    assert_eq!(rlx_opt_in_process(&["--fuse-welch-peaks=force=true", s(&graph), "-o", s(&fused)]), 0);
    let traces = [dir.path().join("unfused.json"), dir.path().join("fused.json")];
    for (g, t) in [(&graph, &traces[0]), (&fused, &traces[1])] {
        let r = run(RLX_RUN, &[s(g), "--random-inputs=1", "--trace", s(t)]);
        assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    }
    Fixture { dir, graph }
}


/// Issue 25: eleven invocations panicked on a closed pipe or on
/// `/dev/full` (exit 101); rlx-run's.
#[test]
fn a_closed_stream_ends_quietly_and_a_full_one_is_an_error() {
    let f = fixture();
    let graph = s(&f.graph);
    let cases: Vec<(&str, Vec<&str>, Stream)> = vec![
        (RLX_RUN, vec![graph, "--random-inputs=1"], Stream::Stdout),
        (RLX_RUN, vec![graph, "--random-inputs=1", "--repeat", "2"], Stream::Stdout),
        (RLX_RUN, vec!["--version"], Stream::Stdout),
    ];
    assert_broken_streams_are_handled(&cases);
}

/// A full stdout fails the run before any file is written: stdout comes
/// first in the batch, as it cannot be taken back.
#[test]
fn a_full_stdout_writes_no_files() {
    let f = fixture();
    let trace = f.dir.path().join("t.json");
    let [_, full] = with_broken(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--repeat", "1", "--trace", s(&trace)], Stream::Stdout);
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    assert!(!trace.exists(), "the trace was written although the run failed");
}

/// A symlink to `/dev/full`: a destination that takes no bytes, found only
/// when it is written, last of its batch.
fn full_link(dir: &Path, name: &str) -> PathBuf {
    let link = dir.join(name);
    std::os::unix::fs::symlink("/dev/full", &link).unwrap();
    link
}

/// Issue 25: rlx-run wrote `--trace` and `0.npy` when `1.npy` failed, and a
/// failed run left its new `--output-dir` behind.
#[test]
fn rlx_run_outputs_are_one_batch_restored_on_failure() {
    let f = fixture();
    let out = f.dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("0.npy"), b"before").unwrap();
    full_link(&out, "1.npy");
    let trace = write(f.dir.path(), "trace.json", "old trace");
    let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--output-dir", s(&out), "--trace", s(&trace)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains("1.npy") && stderr(&r).contains("No space left on device"), "{}", stderr(&r));
    assert_eq!(std::fs::read(out.join("0.npy")).unwrap(), b"before", "output 0 was replaced");
    assert_eq!(std::fs::read(&trace).unwrap(), b"old trace", "the trace was replaced");
    assert_eq!(names(&out), ["0.npy", "1.npy"], "nothing stray is left");
    assert_eq!(names(f.dir.path()), ["fused.graph", "fused.json", "g.graph", "out", "trace.json", "unfused.json"]);

    // A new output folder (two levels) is removed again when the trace fails.
    let fresh = f.dir.path().join("new/out");
    let bad_trace = full_link(f.dir.path(), "bad.json");
    let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--output-dir", s(&fresh), "--trace", s(&bad_trace)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(!f.dir.path().join("new").exists(), "the failed run left its output folder");

    // The same run with writable destinations writes all of them.
    std::fs::remove_file(out.join("1.npy")).unwrap();
    let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--output-dir", s(&out), "--trace", s(&trace)]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_ne!(std::fs::read(out.join("0.npy")).unwrap(), b"before");
    assert!(out.join("1.npy").is_file() && std::fs::read_to_string(&trace).unwrap().contains("traceEvents"));
    assert_eq!(names(&out), ["0.npy", "1.npy"]);
}

/// Issue 25: silent overwrites, exit 0: a trace inside the output folder.
/// Refused before anything is written.
#[test]
fn two_outputs_of_one_run_never_share_a_file() {
    let f = fixture();
    let dir = f.dir.path();
    let out = dir.join("out");
    let same = "another output of this run goes to the same file";

    for trace in [out.join("0.npy"), out.join("../out/./0.npy")] {
        let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--output-dir", s(&out), "--trace", s(&trace)]);
        assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
        assert!(stderr(&r).contains(same) && stderr(&r).contains("0.npy"), "{}", stderr(&r));
        assert!(!out.exists(), "something was written");
    }
    // Another name for the same file: through `..`, and through a symlink.
    std::fs::create_dir(&out).unwrap();
    let alias = dir.join("alias");
    std::os::unix::fs::symlink("out", &alias).unwrap();
    for trace in [format!("{}/../out/1.npy", s(&out)), format!("{}/1.npy", s(&alias))] {
        let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--output-dir", s(&out), "--trace", &trace]);
        assert_eq!(r.status.code(), Some(1), "{trace}: {}", stderr(&r));
        assert!(names(&out).is_empty());
    }
    // A trace beside the outputs is fine.
    let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--output-dir", s(&out), "--trace", s(&out.join("trace.json"))]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(names(&out), ["0.npy", "1.npy", "trace.json"]);
}

/// An adversarial run: `rlx-run g.graph --trace g.graph` replaced the
/// graph with its trace, exit 0. No output may replace the graph or an
/// `.npy` input the run read.
#[test]
fn an_output_never_replaces_a_file_the_run_reads() {
    let f = fixture();
    let dir = f.dir.path();
    let reads = "it is a file this run reads";
    let graph = std::fs::read(&f.graph).unwrap();
    let r = run(RLX_RUN, &[s(&f.graph), "--random-inputs=1", "--trace", s(&f.graph)]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(reads), "{}", stderr(&r));
    assert_eq!(std::fs::read(&f.graph).unwrap(), graph, "the graph was replaced");

    // Output 0 written into the folder that holds the input it read, as 0.npy.
    let wanted = rlx_opt::runtime::graph_inputs(&rlx_opt::format::rlx_text::parse(&String::from_utf8(graph).unwrap()).unwrap()).unwrap();
    let [(name, shape)] = &wanted[..] else { panic!("the fixture has one input: {wanted:?}") };
    let out = dir.join("outputs");
    std::fs::create_dir(&out).unwrap();
    let input = out.join("0.npy");
    write_npy(&input, &shape.iter().map(|d| *d as u64).collect::<Vec<_>>(), &vec![0.5f32; shape.iter().product()]);
    let before = std::fs::read(&input).unwrap();
    let spec = format!("{name}={}", s(&input));
    let r = run(RLX_RUN, &[s(&f.graph), "--output-dir", s(&out), "--input", &spec]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(stderr(&r).contains(reads) && stderr(&r).contains("0.npy"), "{}", stderr(&r));
    assert_eq!(std::fs::read(&input).unwrap(), before, "the input was replaced");
}

/// Issue 25, section 3: a path that is not UTF-8 was reopened through
/// `to_string_lossy`, which writes elsewhere (and the tools panicked on
/// such an argument before that).
#[test]
fn paths_that_are_not_utf8_are_written_where_they_say() {
    use std::os::unix::ffi::OsStrExt;
    let f = fixture();
    let odd = f.dir.path().join(std::ffi::OsStr::from_bytes(b"out\xff"));
    let r = Command::new(RLX_RUN).arg(&f.graph).arg("--random-inputs=1").arg("--output-dir").arg(&odd).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(odd.join("0.npy").is_file(), "not written under the name given: {:?}", names(f.dir.path()));
    {
        let lossy = "out\u{fffd}";
        assert!(!f.dir.path().join(lossy).exists(), "a lossy name was written: {lossy}");
    }
    // …and a graph read from where its name says (an adversarial run: it
    // was refused as a usage error, exit 2).
    let graph = f.dir.path().join(std::ffi::OsStr::from_bytes(b"g\xfe.graph"));
    std::fs::copy(&f.graph, &graph).unwrap();
    let r = Command::new(RLX_RUN).arg(&graph).arg("--random-inputs=1").output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
}


/// Issue 25: paths reached the terminal with raw escape sequences.
#[test]
fn control_bytes_are_escaped_and_echoes_bounded() {
    let f = fixture();
    let graph = s(&f.graph);
    let esc = "\u{1b}]0;owned\u{7}\u{1b}[2J";
    let r = Command::new(RLX_RUN).arg(graph).arg("--random-inputs=1").arg("--output-dir").arg(format!("{graph}/{esc}")).output().unwrap();
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert_escaped(&r, "rlx-run --output-dir");
}
