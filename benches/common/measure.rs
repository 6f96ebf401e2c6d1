//! Running a binary under measurement, shared by the benchmarks: wall time,
//! the child's own peak RSS (wait4 reports that process's, not earlier
//! children's), and what it wrote to stderr.

use std::process::{Command, Stdio};
use std::time::Instant;

pub struct Measured {
    pub secs: f64,
    pub peak_kb: i64,
    pub stderr: String,
}

/// Run to completion; panics (with its stderr) if it fails.
// wait4 reaps the child itself, which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn run(mut command: Command) -> Measured {
    let start = Instant::now();
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid, and wait4 writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid);
    let stderr = reader.join().unwrap();
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{command:?} failed: {stderr}");
    Measured { secs, peak_kb: usage.ru_maxrss, stderr }
}
