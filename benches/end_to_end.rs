//! The real `rlx-opt` binary on big graphs of independent Welch chains
//! (5 nodes each), end to end (parse, verify, passes, verify, print, write),
//! with its peak RSS; for the fusion runs also the pass's own time, from
//! `--timing`, to show that it grows linearly.
//!
//! `cargo bench --bench end_to_end` (optionally `-- 200000` for the chain
//! counts to run). 200,000 chains = 1,000,000 nodes.

#[path = "common/measure.rs"]
mod measure;

use std::process::Command;

const RUNS: usize = 5;

fn main() {
    let counts: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let counts = if counts.is_empty() { vec![2_000, 20_000, 200_000] } else { counts };
    let dir = std::env::temp_dir().join(format!("rlx-opt-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let modes: [(&str, &[&str]); 3] = [
        ("parse+verify+print", &[]),
        ("fuse, cpu (all fused)", &["--fuse-welch-peaks=target=cpu", "--timing"]),
        ("fuse, cuda (all rejected)", &["--fuse-welch-peaks=target=cuda", "--timing"]),
    ];
    println!("{:<26} {:>9} {:>9} {:>10} {:>10} {:>10} {:>12}", "mode", "nodes", "input_MB", "median_s", "min_s", "pass_s", "peak_rss_MB");
    for chains in counts {
        let input = dir.join(format!("welch_{chains}.graph"));
        std::fs::write(&input, rlx_opt::testgen::welch_chains(chains, 16, 256, 8, 8)).unwrap();
        let size = std::fs::metadata(&input).unwrap().len() as f64 / 1e6;
        let output = dir.join("out.graph");
        for (mode, flags) in modes {
            let mut args: Vec<&str> = flags.to_vec();
            args.extend([input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
            let mut runs: Vec<Run> = (0..RUNS).map(|_| run_measured(&args)).collect();
            if flags.is_empty() {
                assert_eq!(std::fs::read(&output).unwrap(), std::fs::read(&input).unwrap(), "round trip changed the graph");
            }
            runs.sort_by(|a, b| a.secs.total_cmp(&b.secs));
            let peak = runs.iter().map(|r| r.peak_kb).max().unwrap_or(0);
            let mut pass: Vec<f64> = runs.iter().filter_map(|r| r.pass_secs).collect();
            pass.sort_by(f64::total_cmp);
            let pass = pass.get(pass.len() / 2).map_or("-".to_string(), |p| format!("{p:.3}"));
            println!(
                "{mode:<26} {:>9} {size:>9.1} {:>10.3} {:>10.3} {pass:>10} {:>12.1}",
                chains * 5,
                runs[RUNS / 2].secs,
                runs[0].secs,
                peak as f64 / 1024.0
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

struct Run {
    secs: f64,
    peak_kb: i64,
    pass_secs: Option<f64>,
}

/// One run of rlx-opt, with the fusion pass's own time from `--timing`.
fn run_measured(args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-opt"));
    command.args(args);
    let m = measure::run(command);
    let pass_secs = m.stderr.lines().find(|l| l.trim_end().ends_with("fuse-welch-peaks")).and_then(|l| l.split_whitespace().next()?.parse().ok());
    Run { secs: m.secs, peak_kb: m.peak_kb, pass_secs }
}
