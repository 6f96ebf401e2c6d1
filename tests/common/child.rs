//! Helpers for tests that run a tool as a child process, shared by the
//! core's tests and rlx-ext's (which include this file by path): broken
//! output streams, a limited address space, a graph of one fused op.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Run `bin args` with `stream` going to a pipe whose reader is already
/// gone, then to `/dev/full`; the other stream is captured.
pub fn with_broken(bin: &str, args: &[&str], stream: Stream) -> [Output; 2] {
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        // Closed before the child starts: its first write gets EPIPE.
        drop(reader);
        Stdio::from(writer)
    };
    let full = || Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
    [closed(), full()].map(|broken| {
        let mut command = Command::new(bin);
        command.args(args).stdin(Stdio::null());
        match stream {
            Stream::Stdout => command.stdout(broken).stderr(Stdio::piped()),
            Stream::Stderr => command.stderr(broken).stdout(Stdio::piped()),
        };
        command.output().unwrap()
    })
}

/// Each case's `stream` broken both ways ([`with_broken`]): a closed one
/// ends the tool quietly (exit 0, nothing on stderr where stdout was
/// closed), a full one is `error: …` (exit 1, and for stdout the message
/// `error: cannot write to stdout: No space left on device`), never a panic.
pub fn assert_broken_streams_are_handled(cases: &[(&str, Vec<&str>, Stream)]) {
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    for (bin, args, stream) in cases {
        let name = std::path::Path::new(bin).file_name().unwrap().to_string_lossy();
        let [closed, full] = with_broken(bin, args, *stream);
        let seen = |o: &Output| format!("{name} {args:?} ({stream:?}): {}{}", stderr(o), String::from_utf8_lossy(&o.stdout));
        assert_eq!(closed.status.code(), Some(0), "a closed pipe ends the tool quietly: {}", seen(&closed));
        assert_eq!(full.status.code(), Some(1), "a full disk is an error: {}", seen(&full));
        for o in [&closed, &full] {
            assert!(!seen(o).contains("panicked"), "{}", seen(o));
        }
        if let Stream::Stdout = stream {
            assert!(stderr(&closed).is_empty(), "quietly: {}", seen(&closed));
            assert!(stderr(&full).contains("error: cannot write to stdout: No space left on device"), "{}", seen(&full));
        }
    }
}

/// `bin args…` with its address space limited to `limit` bytes, stdout
/// thrown away (what a run prints is not what is measured).
pub fn limited(bin: &str, args: &[&str], limit: u64) -> Output {
    let mut command = Command::new(bin);
    command.args(args).stdin(Stdio::null()).stdout(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let rlimit = libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: limit as libc::rlim_t };
            if libc::setrlimit(libc::RLIMIT_AS, &rlimit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    command.output().unwrap()
}

/// A graph of one fused op with attributes `attrs` (JSON) over an input of
/// `input` dims, declaring a result of `result` dims.
pub fn fused_graph(attrs: &str, input: &str, result: &str) -> String {
    let bytes: Vec<String> = attrs.bytes().map(|b| b.to_string()).collect();
    format!(
        "graph @g {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [{input}] f32\n  %1 = {{\"Custom\":{{\"name\":\"rlx_opt.welch_peaks\",\"num_inputs\":1,\"attrs\":[{}]}}}}(%0) : [{result}] f32\n  return %1\n}}\n",
        bytes.join(",")
    )
}

pub fn welch_attrs(n_fft: u64, frame_len: u64, segments: u64, k: u64) -> String {
    format!(r#"{{"form":"welch_peaks","input_layout":"rows","n_fft":{n_fft},"frame_len":{frame_len},"segments":{segments},"k":{k},"doubling":"rlx","output_layout":"interleaved","lowering":"cpu"}}"#)
}

/// A message or report that reached the terminal with a raw control byte.
pub fn assert_escaped(out: &Output, what: &str) {
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let text = format!("{}{}", stderr(out), String::from_utf8_lossy(&out.stdout));
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{what}: raw control bytes in {text:?}");
    assert!(text.contains("\\u{1b}"), "{what}: the escape is not shown: {text:?}");
}

/// A Welch chain with two outputs (the spectrum and the peaks).
pub fn chain() -> String {
    rlx_opt::testgen::welch_chains(1, 8, 16, 4, 3)
}

/// Every name in `dir`, sorted (to see that nothing stray is left).
pub fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}
