//! The real `rlx-opt` binary on big graphs of independent Welch chains
//! (5 nodes each), end to end (parse, verify, passes, verify, print, write),
//! with its peak RSS; for the fusion runs also the pass's own time, from
//! `--timing`, to show that it grows linearly.
//!
//! Then RLX's own long-signal forms, built and printed by rlx-ir 0.2.19,
//! which makes one `Narrow` + `Reshape` per frame: `Graph::spectrogram` of
//! one `[1, T]` recording (256/128 Hann, power) → mean → TopK 16 (T/64
//! nodes), and Whisper's log-mel front end over one `[T]` recording (frames
//! of 400 at hop 160 → `Fft` → `LogMel`: T/80 nodes, up to 2·10^6). Their
//! rows show the pass's time (`fuse-welch-peaks`, `fuse-log-mel`) beside
//! the parse time of the same run (`--timing`); a pass must stay within 2×
//! of parsing.
//!
//! Last, one MLIR module of many functions: the reader's time per function
//! and the run's peak RSS (the module is read one function at a time).
//!
//! `cargo bench --bench end_to_end` (optionally `-- 200000` for the chain
//! counts to run, `-- samples=10000000` for the recordings of both long
//! forms, `-- functions` for the module alone). 200,000 chains = 1,000,000
//! nodes.

#[path = "common/measure.rs"]
mod measure;

use std::process::Command;

const RUNS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, chain, samples, path] = &args[..]
        && flag == WRITE_LONG_GRAPH
    {
        let chain = LONG_CHAINS.iter().find(|c| c.name == chain).unwrap_or_else(|| panic!("no long chain `{chain}`"));
        std::fs::write(path, rlx_ir::text::print(&(chain.build)(samples.parse().unwrap()))).unwrap();
        return;
    }
    let dir = std::env::temp_dir().join(format!("rlx-opt-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // `-- functions`: only the module of many functions.
    if args.iter().any(|a| a == "functions") {
        many_functions(&dir, &[10_000, 100_000, 1_000_000]);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let counts: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let samples: Vec<usize> = args.iter().filter_map(|a| a.strip_prefix("samples=")?.parse().ok()).collect();
    // Nothing asked: every size, each long chain at its own recordings.
    let (counts, samples) = match (counts.is_empty(), samples.is_empty()) {
        (true, true) => (vec![2_000, 20_000, 200_000], None),
        _ => (counts, Some(samples)),
    };
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
    for chain in &LONG_CHAINS {
        long_signals(&dir, chain, samples.as_deref().unwrap_or(chain.samples));
    }
    nested_views(&dir, &[100_000, 1_000_000]);
    many_functions(&dir, &[10_000, 100_000, 1_000_000]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One MLIR module of `n` functions (each its argument returned, a graph of
/// an input and an output): read and printed as n graphs. Its reader once
/// checked each function's name against every graph before it (6.95 s at
/// 80,000 functions).
fn many_functions(dir: &std::path::Path, counts: &[usize]) {
    println!("
one MLIR module of n functions: rlx-opt --timing in.mlir (median of {RUNS})");
    println!("{:>9} {:>9} {:>9} {:>12} {:>12}", "functions", "input_MB", "parse_s", "parse_us/fn", "peak_rss_MB");
    for &n in counts {
        let input = dir.join(format!("functions_{n}.mlir"));
        let mut text = String::from("module {\n");
        for i in 0..n {
            text += &format!("  func.func @g{i}(%x: tensor<2xf32>) -> tensor<2xf32> {{\n    return %x : tensor<2xf32>\n  }}\n");
        }
        text += "}\n";
        std::fs::write(&input, text).unwrap();
        let size = std::fs::metadata(&input).unwrap().len() as f64 / 1e6;
        let output = dir.join("out.graph");
        let mut runs: Vec<(f64, i64)> = (0..RUNS)
            .map(|_| {
                let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-opt"));
                command.args(["--timing", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
                let m = measure::run(command);
                let parse = m.stderr.lines().find(|l| l.split_whitespace().last() == Some("parse")).and_then(|l| l.split_whitespace().next()?.parse().ok());
                (parse.unwrap_or_else(|| panic!("no `parse` line in --timing: {}", m.stderr)), m.peak_kb)
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (parse, peak) = (runs[RUNS / 2].0, runs.iter().map(|r| r.1).max().unwrap_or(0));
        println!("{n:>9} {size:>9.1} {parse:>9.3} {:>12.2} {:>12.1}", parse * 1e6 / n as f64, peak as f64 / 1024.0);
    }
}

/// `n` nested `Narrow` views of one signal, each one element shorter: every
/// pass on them, and rlx-run (which once copied every view: 21 s at 10^5).
fn nested_views(dir: &std::path::Path, counts: &[usize]) {
    println!("\nnested Narrow views (median of {RUNS}): rlx-opt --dce --print-io-profile --fuse-welch-peaks --timing; rlx-run --random-inputs=1");
    // rlx-run is rlx-ext's binary, beside rlx-opt once built
    // (`cargo build --release --bin rlx-run`); without it, its column is NaN.
    let rlx_run = Some(std::path::Path::new(env!("CARGO_BIN_EXE_rlx-opt")).with_file_name("rlx-run")).filter(|p| p.is_file());
    if rlx_run.is_none() {
        println!("(rlx-run not built: `cargo build --release --bin rlx-run` first for its column)");
    }
    println!("{:>9} {:>9} {:>10} {:>10} {:>10}", "nodes", "input_MB", "passes_s", "rlx-opt_s", "rlx-run_s");
    for &n in counts {
        let mut text = format!("graph @nested {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [{}] f32\n", n + 1);
        for i in 1..=n {
            text += &format!("  %{i} = {{\"Narrow\":{{\"axis\":0,\"start\":1,\"len\":{}}}}}(%{}) : [{}] f32\n", n + 1 - i, i - 1, n + 1 - i);
        }
        text += &format!("  return %{n}\n}}\n");
        let input = dir.join(format!("nested_{n}.graph"));
        std::fs::write(&input, text).unwrap();
        let size = std::fs::metadata(&input).unwrap().len() as f64 / 1e6;
        let output = dir.join("out.graph");
        let mut opt = Vec::new();
        let mut passes = Vec::new();
        let mut run = Vec::new();
        for _ in 0..RUNS {
            let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-opt"));
            command.args(["--dce", "--print-io-profile", "--fuse-welch-peaks", "--timing", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
            let m = measure::run(command);
            let pass_time = |name: &str| m.stderr.lines().find(|l| l.split_whitespace().last() == Some(name)).and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok()).unwrap_or(0.0);
            passes.push(pass_time("dce") + pass_time("print-io-profile") + pass_time("fuse-welch-peaks"));
            opt.push(m.secs);
            if let Some(rlx_run) = &rlx_run {
                let mut command = Command::new(rlx_run);
                command.args([input.to_str().unwrap(), "--random-inputs=1"]).stdout(std::process::Stdio::null());
                run.push(measure::run(command).secs);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        println!("{:>9} {size:>9.1} {:>10.3} {:>10.3} {:>10.3}", n + 1, median(&mut passes), median(&mut opt), median(&mut run));
    }
}

/// The bench run as the writer of one long chain's graph: `CHAIN SAMPLES PATH`.
const WRITE_LONG_GRAPH: &str = "--write-long-graph";

/// A chain RLX users build over one long recording, framed by rlx-ir's
/// builders (a `Narrow` + `Reshape` per frame): the pass that fuses it, and
/// the op it fuses into.
struct LongChain {
    name: &'static str,
    title: &'static str,
    build: fn(usize) -> rlx_ir::Graph,
    pass: &'static str,
    fused_op: &'static str,
    /// The recordings' lengths when none are asked.
    samples: &'static [usize],
}

const LONG_CHAINS: [LongChain; 2] = [
    LongChain {
        name: "spectrogram",
        title: "RLX spectrogram(256/128 Hann) → mean → TopK 16 over one [1, T] signal",
        build: spectrogram_topk,
        pass: "fuse-welch-peaks",
        fused_op: "rlx_opt.welch_peaks",
        samples: &[1_000_000, 3_000_000, 10_000_000],
    },
    LongChain {
        name: "log_mel",
        title: "RLX log-mel front end, Whisper's framing (400/160) → Concat(x, x − x) → Fft → LogMel (80 mels) over one [T] signal",
        build: framed_log_mel,
        pass: "fuse-log-mel",
        fused_op: "rlx_opt.log_mel",
        // Two nodes a hop of 160 samples: 10^6 frames, 2·10^6 nodes, at 1.6·10^8
        // (2.8 hours at 16 kHz).
        samples: &[10_000_000, 40_000_000, 160_000_000],
    },
];

/// A long chain over one recording of each length in `samples`: parse
/// time and pass time of the same `--timing` runs, and their ratio.
fn long_signals(dir: &std::path::Path, chain: &LongChain, samples: &[usize]) {
    if samples.is_empty() {
        return;
    }
    let pass_flag = format!("--{}=target=cpu", chain.pass);
    println!("\n{}, {pass_flag} --timing (median of {RUNS})", chain.title);
    println!("{:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12}", "samples", "nodes", "input_MB", "parse_s", "pass_s", "pass/parse", "peak_rss_MB");
    for &t in samples {
        let input = dir.join(format!("{}_{t}.graph", chain.name));
        // Built and printed by a child process: a child's peak RSS (wait4)
        // counts what its parent held when it forked, and rlx-ir's graph of
        // 10^7 samples takes gigabytes that this process would keep.
        let status = Command::new(std::env::current_exe().unwrap()).args([WRITE_LONG_GRAPH, chain.name, &t.to_string()]).arg(&input).status().unwrap();
        assert!(status.success(), "writing the {} graph of {t} samples failed", chain.name);
        let nodes = std::fs::read_to_string(&input).unwrap().lines().filter(|l| l.trim_start().starts_with('%')).count();
        let size = std::fs::metadata(&input).unwrap().len() as f64 / 1e6;
        let output = dir.join("out.graph");
        let args = [pass_flag.as_str(), "--timing", input.to_str().unwrap(), "-o", output.to_str().unwrap()];
        let runs: Vec<(f64, f64, i64)> = (0..RUNS)
            .map(|_| {
                let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-opt"));
                command.args(args);
                let m = measure::run(command);
                let phase = |name: &str| -> f64 {
                    let line = m.stderr.lines().find(|l| l.split_whitespace().last() == Some(name)).unwrap_or_else(|| panic!("no `{name}` line in --timing: {}", m.stderr));
                    line.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap()
                };
                (phase("parse"), phase(chain.pass), m.peak_kb)
            })
            .collect();
        let median = |f: &dyn Fn(&(f64, f64, i64)) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (parse, pass) = (median(&|r| r.0), median(&|r| r.1));
        let peak = runs.iter().map(|r| r.2).max().unwrap_or(0);
        println!("{t:>10} {nodes:>9} {size:>9.1} {parse:>9.3} {pass:>9.3} {:>10.2} {:>12.1}", pass / parse, peak as f64 / 1024.0);
        let fused = std::fs::read_to_string(&output).unwrap();
        assert!(fused.contains(chain.fused_op), "the {} chain over {t} samples was not fused", chain.name);
    }
}

/// `spectrogram(x, 256, 128, Hann, power) → mean over frames → TopK 16 →
/// GatherElements`, as RLX users build it.
fn spectrogram_topk(samples: usize) -> rlx_ir::Graph {
    use rlx_ir::ops::spectral::WindowKind;
    use rlx_ir::{DType, Graph, Op, Shape, op::ReduceOp};
    let mut g = Graph::new("long_signal");
    let x = g.input("x", Shape::new(&[1, samples], DType::F32));
    let s = g.spectrogram(x, 256, 128, WindowKind::Hann, true, false);
    let mean = g.reduce(s, ReduceOp::Mean, vec![0], false, Shape::new(&[1, 129], DType::F32));
    let idx = g.add_node(Op::TopK { k: 16 }, vec![mean], Shape::new(&[1, 16], DType::F32));
    let vals = g.gather_elements(mean, idx, 1);
    g.set_outputs(vec![idx, vals]);
    g
}

/// Whisper's front end over one recording of `samples` at 16 kHz: frames
/// of 400 at hop 160 cut as `Graph::stft` cuts them (a `Narrow` and a
/// `Reshape` per frame, one `Concat`), then RLX's log-mel chain
/// (`Concat(x, x − x)` → `Fft` → `LogMel`), the filterbank an input.
fn framed_log_mel(samples: usize) -> rlx_ir::Graph {
    use rlx_ir::op::BinaryOp;
    use rlx_ir::{DType, Graph, Op, Shape};
    const N_FFT: usize = 400;
    const HOP: usize = 160;
    const MELS: usize = 80;
    let mut g = Graph::new("long_log_mel");
    let x = g.input("signal", Shape::new(&[samples], DType::F32));
    let frames = 1 + samples.checked_sub(N_FFT).unwrap_or_else(|| panic!("a recording of {samples} samples is shorter than one frame of {N_FFT}")) / HOP;
    let rows: Vec<_> = (0..frames)
        .map(|f| {
            let frame = g.add_node(Op::Narrow { axis: 0, start: f * HOP, len: N_FFT }, vec![x], Shape::new(&[N_FFT], DType::F32));
            g.add_node(Op::Reshape { new_shape: vec![1, N_FFT as i64] }, vec![frame], Shape::new(&[1, N_FFT], DType::F32))
        })
        .collect();
    let framed = g.add_node(Op::Concat { axis: 0 }, rows, Shape::new(&[frames, N_FFT], DType::F32));
    let zero = g.binary(BinaryOp::Sub, framed, framed, Shape::new(&[frames, N_FFT], DType::F32));
    let block = g.add_node(Op::Concat { axis: 1 }, vec![framed, zero], Shape::new(&[frames, 2 * N_FFT], DType::F32));
    let spectrum = g.fft(block, false);
    let filters = g.input("mel_filters", Shape::new(&[MELS, N_FFT / 2 + 1], DType::F32));
    let out = g.log_mel(spectrum, filters);
    g.set_outputs(vec![out]);
    g
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
