//! rlx-opt beside mlir-opt on the same big graph in both forms (issue 6), and
//! the mlir-opt plugin against mlir-opt's own round trip (issue 8): wall time
//! (median of 5) and peak RSS of each real binary.
//!
//! `cargo build --release -p rlx-welch-opt-mlir && cargo bench --bench mlir [--features mlir] [-- CHAINS]`.
//! CHAINS Welch chains (default 25,000) are 4·CHAINS MLIR ops plus CHAINS
//! function arguments (the graph inputs), 5·CHAINS graph nodes.

#[path = "common/measure.rs"]
#[allow(dead_code)]
mod measure;

use std::path::Path;
use std::process::Command;

const RUNS: usize = 5;

fn main() {
    let chains: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(25_000);
    let mlir_opt = std::env::var("MLIR_OPT").unwrap_or_else(|_| "/usr/lib/llvm-22/bin/mlir-opt".into());
    if !Path::new(&mlir_opt).exists() {
        println!("SKIPPED: {mlir_opt} not found (apt-get install mlir-22-tools)");
        return;
    }
    let rlx_opt = env!("CARGO_BIN_EXE_rlx-opt");
    let plugin = Path::new(rlx_opt).with_file_name("librlx_opt_mlir.so");
    let dir = std::env::temp_dir().join(format!("rlx-opt-mlir-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (graph, module) = (path("in.graph"), path("in.mlir"));
    std::fs::write(&graph, rlx_opt::testgen::welch_chains(chains, 16, 256, 8, 8)).unwrap();
    measure::run(command(rlx_opt, &["--emit=mlir", &graph, "-o", &module]));
    let version = String::from_utf8(Command::new(rlx_opt).arg("--version").output().unwrap().stdout).unwrap();
    let ops = std::fs::read_to_string(&module).unwrap().lines().filter(|l| l.contains("= \"rlx.")).count();
    println!("{} Welch chains: {ops} rlx ops + {chains} arguments; in.graph {:.1} MB, in.mlir {:.1} MB; {}", chains,
        size_mb(&graph), size_mb(&module), version.trim());

    let out = path("out");
    let pipeline = "--pass-pipeline=builtin.module(rlx-fuse-welch-peaks{target=cpu})";
    let load = format!("--load-pass-plugin={}", plugin.display());
    let mut cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("mlir-opt round trip (parse+verify+print)", mlir_opt.clone(), vec!["--allow-unregistered-dialect", &module, "-o", &out]),
        ("rlx-opt --fuse-welch-peaks in.graph", rlx_opt.into(), vec!["--fuse-welch-peaks", &graph, "-o", &out]),
        ("rlx-opt --fuse-welch-peaks --emit=mlir in.graph", rlx_opt.into(), vec!["--fuse-welch-peaks", "--emit=mlir", &graph, "-o", &out]),
        ("rlx-opt --emit=mlir in.graph", rlx_opt.into(), vec!["--emit=mlir", &graph, "-o", &out]),
        ("rlx-opt --fuse-welch-peaks --emit=mlir in.mlir", rlx_opt.into(), vec!["--fuse-welch-peaks", "--emit=mlir", &module, "-o", &out]),
    ];
    if plugin.exists() {
        cases.push(("mlir-opt + plugin rlx-fuse-welch-peaks", mlir_opt.clone(), vec!["--allow-unregistered-dialect", &load, pipeline, &module, "-o", &out]));
    } else {
        println!("(plugin not measured: {} missing; cargo build --release -p rlx-welch-opt-mlir)", plugin.display());
    }
    println!("{:<48} {:>9} {:>9} {:>12} {:>10}", "command", "median_s", "min_s", "peak_rss_MB", "vs_mlir-opt");
    let mut baseline = None;
    for (name, program, args) in cases {
        let mut runs: Vec<measure::Measured> = (0..RUNS).map(|_| measure::run(command(&program, &args))).collect();
        runs.sort_by(|a, b| a.secs.total_cmp(&b.secs));
        let median = runs[RUNS / 2].secs;
        let peak = runs.iter().map(|r| r.peak_kb).max().unwrap_or(0) as f64 / 1024.0;
        let base = *baseline.get_or_insert(median);
        println!("{name:<48} {median:>9.3} {:>9.3} {peak:>12.1} {:>9.2}x", runs[0].secs, median / base);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn command(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args);
    c
}

fn size_mb(path: &str) -> f64 {
    std::fs::metadata(path).unwrap().len() as f64 / 1e6
}
