//! Parse + verify + print of big graphs of independent Welch chains, timed
//! end to end through the real `rlx-opt` binary, with its peak RSS.
//!
//! `cargo bench --bench parse_print` (optionally `-- 200000` for the chain
//! counts to run). Each chain is 5 nodes: 200,000 chains = 1,000,000 nodes.

use std::process::Command;
use std::time::Instant;

fn main() {
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect::<Vec<_>>();
    let counts = if counts.is_empty() { vec![2_000, 20_000, 200_000] } else { counts };
    let dir = tempfile_dir();
    println!("{:>9} {:>9} {:>10} {:>12} {:>12} {:>12}", "chains", "nodes", "input_MB", "median_s", "min_s", "peak_rss_MB");
    for chains in counts {
        let input = dir.join(format!("welch_{chains}.graph"));
        std::fs::write(&input, rlx_opt::testgen::welch_chains(chains, 16, 256, 8, 8)).unwrap();
        let size = std::fs::metadata(&input).unwrap().len() as f64 / 1e6;
        let output = dir.join("out.graph");
        let mut times = Vec::new();
        let mut peak_kb = 0;
        for _ in 0..5 {
            let (secs, rss) = run_measured(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
            times.push(secs);
            peak_kb = peak_kb.max(rss);
        }
        assert_eq!(std::fs::read(&output).unwrap(), std::fs::read(&input).unwrap(), "round trip changed the graph");
        times.sort_by(f64::total_cmp);
        println!(
            "{chains:>9} {:>9} {size:>10.1} {:>12.3} {:>12.3} {:>12.1}",
            chains * 5,
            times[times.len() / 2],
            times[0],
            peak_kb as f64 / 1024.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-opt-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Wall time of one run of rlx-opt, and its peak resident set in KiB.
fn run_measured(args: &[&str]) -> (f64, i64) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlx-opt")).args(args).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // wait4 reports the child's own peak RSS, not that of earlier children.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "rlx-opt failed");
    let _ = child.try_wait();
    (secs, usage.ru_maxrss)
}
