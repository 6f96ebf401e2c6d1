//! Are the picker's decisions right? On each device here (the CPU, and
//! wgpu where a Vulkan adapter opens: lavapipe on this machine), after
//! calibrating it as `rlx-run --calibrate` does, every cell of the grid
//! batch {1, 4, 16, 64, 256, 1024, 8192} × segments {1, 8, 64, 1024, 16384}
//! × n_fft {64, 256, 1024, 4096} × k {4, 64} is measured every way it runs,
//! every way through the same harness, RLX's own `Session` on the device
//! (`rlx-run --engine=rlx`: `rlx_ext::Compiled::new` and run, the input passed in
//! by each run):
//! - unfused: RLX's WelchPeaks chain;
//! - each plan of the fused op that runs as itself on the device: the graph
//!   fused with `force=true force-plan=<plan>`, its op run by the kernels
//!   registered with RLX (one RLX hosts on the CPU is noted);
//! - on a GPU, the host call: the graph fused with `native-kernels=false`,
//!   which RLX runs through the CPU kernel;
//!
//! then `fuse-welch-peaks{profile=…}` runs on the graph and its choice is
//! compared with the measured best, and each prediction with its
//! measurement. Cells over the device's input budget (the measuring time),
//! and cells with k above the bin count (RLX's chain leaves slots
//! unwritten), are skipped: each is printed and listed with its reason.
//!
//! Writes `benches/fidelity/<device>.json` (every cell), and
//! `<device>_decisions.svg` (picked against measured best) and
//! `<device>_ratio.svg` (predicted over measured, for the pick) with
//! plotters, and prints the summary.
//!
//! With the `cuda` feature, the same on the first CUDA device, where one opens.
//!
//!     cargo bench --bench fidelity [--features cuda] [-- cpu|wgpu|cuda]

use plotters::prelude::*;
use rlx_opt::analysis::Target;
use rlx_opt::analysis::device_profile::{Alternative, DeviceProfile};
use rlx_opt::analysis::plan::{f32_type, plan};
use rlx_opt::fused::{Lowering, PlanName, WelchPeaksAttrs};
use rlx_opt::fusion_report::{Candidate, Decision, FusionCandidates};
use rlx_opt::pass::{PassContext, PassOptions, ReportFormat};
use rlx_opt::passes::fuse_welch_peaks;
use rlx_ext::{Compiled, Recording, uninstall};
use rlx_opt::runtime::calibrate::{CalibrationDevice, calibrate};
#[cfg(feature = "cuda")]
use rlx_opt::runtime::FusedKernel;
use rlx_opt::runtime::{CpuKernel, Tensor, random_inputs};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

const BATCHES: [u64; 7] = [1, 4, 16, 64, 256, 1024, 8192];
const SEGMENTS: [u64; 5] = [1, 8, 64, 1024, 16384];
const N_FFTS: [u64; 4] = [64, 256, 1024, 4096];
const KS: [u64; 2] = [4, 64];

#[derive(Serialize)]
struct Cell {
    batch: u64,
    segments: u64,
    n_fft: u64,
    k: u64,
    /// Measured ms per alternative (`unfused`, `fused batch`, …).
    measured_ms: BTreeMap<String, f64>,
    /// Predicted ms per alternative, from the profile.
    predicted_ms: BTreeMap<String, f64>,
    picked: String,
    best: String,
    /// Measured time of the pick over the measured best.
    picked_over_best: f64,
    /// Predicted over measured, for the pick.
    picked_prediction_ratio: f64,
}

#[derive(Serialize)]
struct Report {
    device: String,
    target: String,
    /// How every alternative was timed ([`HARNESS`]).
    harness: String,
    input_budget_bytes: u64,
    profile: DeviceProfile,
    cells: Vec<Cell>,
    /// Cells not measured, each with its reason.
    skipped: Vec<String>,
    /// Alternatives of measured cells not measured, or measured as RLX
    /// hosted them.
    notes: Vec<String>,
    summary: Summary,
}

/// The one harness every alternative is timed in.
const HARNESS: &str = "RLX's Session on the device (rlx_ext::Compiled, as rlx-run --engine=rlx), the input passed in by each run; fused alternatives are the graph fused with force=true force-plan=<plan>, the host call with native-kernels=false";

#[derive(Serialize)]
struct Summary {
    cells: usize,
    picked_within_10_percent: f64,
    picked_prediction_within_2x: f64,
    all_predictions_within_2x: f64,
}

fn main() {
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    // RLX_OPT_FIDELITY_DIR: where a run on another machine (scripts/gpu-run.sh) keeps its results.
    let out_dir = std::env::var("RLX_OPT_FIDELITY_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/fidelity").to_string());
    let out_dir = out_dir.as_str();
    std::fs::create_dir_all(out_dir).expect("benches/fidelity is writable");
    if wanted("cpu") {
        let name = format!("CPU ({} threads)", rayon_threads());
        fidelity(Target::Cpu, "cpu", &name, &CpuKernel, 32 << 20, out_dir);
    }
    if wanted("wgpu") {
        match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
            // lavapipe runs the kernels a hundred times slower than the CPU kernel.
            Ok(k) => {
                let name = k.adapter.clone();
                fidelity(Target::Wgpu, "wgpu", &name, &k, 1 << 20, out_dir)
            }
            Err(e) => println!("wgpu: skipped ({e})"),
        }
    }
    #[cfg(feature = "cuda")]
    if wanted("cuda") {
        match rlx_opt::runtime::cuda_kernel::CudaKernels::new() {
            // The shape (batch 8192 × 8 segments at n_fft 256) is 64 MiB.
            Ok(k) => {
                let name = k.name();
                fidelity(Target::Cuda, "cuda", &name, &k, 64 << 20, out_dir)
            }
            Err(e) => println!("cuda: skipped ({e})"),
        }
    }
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn fidelity(target: Target, file: &str, name: &str, kernel: &dyn CalibrationDevice, budget: u64, out_dir: &str) {
    println!("{name}: calibrating");
    let mut profile = calibrate(target, name, kernel, &mut |_| {}).expect("calibration runs");
    if target != Target::Cpu {
        profile.host_cpu = Some(Box::new(calibrate(Target::Cpu, "host CPU", &CpuKernel, &mut |_| {}).expect("the host calibrates")));
    }
    profile.unfused = rlx_ext::calibrate_unfused(target, &mut |_| {}).expect("RLX runs the chain");
    let profile_path = std::env::temp_dir().join(format!("rlx-opt-fidelity-{file}.json"));
    std::fs::write(&profile_path, serde_json::to_string(&profile).unwrap()).unwrap();
    let options = PassOptions::parse(&format!("profile={}", profile_path.display()), &fuse_welch_peaks::INFO).unwrap();
    let pass = (fuse_welch_peaks::INFO.create)(&options).unwrap();
    let limits = kernel.device_limits();
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    let mut notes = Vec::new();
    let started = Instant::now();
    for n_fft in N_FFTS {
        for k in KS {
            for segments in SEGMENTS {
                for batch in BATCHES {
                    let what = format!("batch {batch} × {segments} segments, n_fft {n_fft}, k {k}");
                    let bytes = 4 * batch * segments * n_fft;
                    if bytes > budget {
                        skipped.push(format!("{what}: {bytes} bytes of input, over the {budget}-byte budget"));
                        continue;
                    }
                    if k > n_fft / 2 + 1 {
                        skipped.push(format!("{what}: k above the {} bins", n_fft / 2 + 1));
                        continue;
                    }
                    cells.push(cell(target, &limits, pass.as_ref(), batch, segments, n_fft, k, &mut notes));
                }
            }
        }
    }
    let n = cells.len().max(1) as f64;
    let within = |f: &dyn Fn(&Cell) -> bool| cells.iter().filter(|c| f(c)).count() as f64 / n;
    let all_ratios: Vec<f64> = cells.iter().flat_map(|c| c.predicted_ms.iter().filter_map(|(a, p)| c.measured_ms.get(a).map(|m| p / m))).collect();
    let summary = Summary {
        cells: cells.len(),
        picked_within_10_percent: within(&|c| c.picked_over_best <= 1.1),
        picked_prediction_within_2x: within(&|c| (0.5..=2.0).contains(&c.picked_prediction_ratio)),
        all_predictions_within_2x: all_ratios.iter().filter(|r| (0.5..=2.0).contains(*r)).count() as f64 / all_ratios.len().max(1) as f64,
    };
    println!(
        "{name}: {} cells in {:.0} s ({} skipped): pick within 10% of the best in {:.1}% (goal ≥ 95%), its prediction within 2× in {:.1}% (goal ≥ 90%); all predictions within 2× in {:.1}%",
        summary.cells,
        started.elapsed().as_secs_f64(),
        skipped.len(),
        100.0 * summary.picked_within_10_percent,
        100.0 * summary.picked_prediction_within_2x,
        100.0 * summary.all_predictions_within_2x
    );
    println!("{name}: {} cells skipped, not measured:", skipped.len());
    skipped.iter().for_each(|s| println!("  {s}"));
    if !notes.is_empty() {
        println!("{name}: notes on the measured cells:");
        notes.iter().for_each(|n| println!("  {n}"));
    }
    draw(&format!("{out_dir}/{file}_decisions.svg"), &format!("{name}: picked against measured best"), &cells, &|c| {
        let (color, label) = if c.picked == c.best {
            (RGBColor(70, 160, 90), short(&c.picked))
        } else if c.picked_over_best <= 1.1 {
            (RGBColor(170, 210, 120), format!("{}≈{}", short(&c.picked), short(&c.best)))
        } else {
            let red = (255.0 - 40.0 * c.picked_over_best.log2().min(4.0)) as u8;
            (RGBColor(red, 90, 80), format!("{}/{} {:.1}×", short(&c.picked), short(&c.best), c.picked_over_best))
        };
        (color, label)
    });
    draw(&format!("{out_dir}/{file}_ratio.svg"), &format!("{name}: predicted / measured, the picked alternative"), &cells, &|c| {
        let r = c.picked_prediction_ratio;
        let shade = (r.log2().abs().min(2.0) / 2.0 * 200.0) as u8;
        let color = if r >= 1.0 { RGBColor(255, 255 - shade, 255 - shade) } else { RGBColor(255 - shade, 255 - shade, 255) };
        (color, format!("{r:.2}"))
    });
    let report = Report { device: name.into(), target: target.name().into(), harness: HARNESS.into(), input_budget_bytes: budget, profile, cells, skipped, notes, summary };
    std::fs::write(format!("{out_dir}/{file}.json"), serde_json::to_string_pretty(&report).unwrap() + "\n").unwrap();
    println!("wrote {out_dir}/{file}.json, {file}_decisions.svg, {file}_ratio.svg");
}

/// The pass as `options` say on a copy of `graph`, and what it reported of
/// the chain.
fn fuse_with(graph: &rlx_opt::ir::Graph, target: Target, options: &str) -> (rlx_opt::ir::Graph, Candidate) {
    let options = PassOptions::parse(options, &fuse_welch_peaks::INFO).expect("the options parse");
    let pass = (fuse_welch_peaks::INFO.create)(&options).expect("the pass is created");
    run_pass(pass.as_ref(), graph, target)
}

/// `pass` on a copy of `graph`, and what it reported of the chain.
fn run_pass(pass: &dyn rlx_opt::pass::Pass, graph: &rlx_opt::ir::Graph, target: Target) -> (rlx_opt::ir::Graph, Candidate) {
    let mut g = graph.clone();
    let mut cx = PassContext::new(target, ReportFormat::Json);
    cx.request::<FusionCandidates>();
    pass.run(&mut g, &mut cx).expect("the pass runs");
    let candidate = cx.take::<FusionCandidates>().0.into_iter().next().expect("the chain is a candidate");
    (g, candidate)
}

/// The lowering the pass recorded in a fused op's attributes.
fn lowering_of(c: &Candidate) -> Option<Lowering> {
    c.fused_attrs.as_ref().and_then(|a| a.get("lowering")).and_then(|l| serde_json::from_value::<Lowering>(l.clone()).ok())
}

/// Every alternative runs through the same harness: RLX's `Session` on the
/// device (`rlx_ext::Compiled`, as `rlx-run --engine=rlx` runs a graph), the
/// input passed in by each run. The fused ones are the graph fused with
/// `force=true force-plan=<plan>` (a host call: `native-kernels=false`).
#[allow(clippy::too_many_arguments)]
fn cell(target: Target, limits: &rlx_opt::analysis::DeviceLimits, pass: &dyn rlx_opt::pass::Pass, batch: u64, segments: u64, n_fft: u64, k: u64, notes: &mut Vec<String>) -> Cell {
    let text = rlx_opt::testgen::welch_chains(1, batch * segments, n_fft, segments, k).replace("return %3, %4", "return %4");
    let graph = rlx_opt::format::rlx_text::parse(&text).expect("generated graphs parse");
    let inputs = random_inputs(&graph, 1).unwrap();
    let input: &Tensor = inputs.values().next().unwrap();
    let what = format!("batch {batch} × {segments} segments, n_fft {n_fft}, k {k}");
    // Unfused: RLX alone, timed on its own and left to settle (its pool's
    // threads spin a while after a run, and would slow what runs next).
    uninstall();
    let mut compiled = Compiled::new(&graph, target).expect("RLX compiles the chain");
    let mut rlx: Vec<(String, Box<dyn FnMut() + '_>)> = vec![("unfused".into(), Box::new(|| drop(compiled.run(&inputs).expect("RLX runs the chain"))))];
    let mut measured = time_rounds(&mut rlx);
    drop(rlx);
    std::thread::sleep(std::time::Duration::from_millis(50));
    // The fused alternatives, each a graph RLX compiles with the fused op:
    // each plan that runs as itself on the device.
    let attrs = WelchPeaksAttrs::rlx(n_fft, segments, k);
    let mut sessions: Vec<(String, Compiled)> = Vec::new();
    for name in PlanName::ALL {
        let asked = WelchPeaksAttrs { plan: Some(name), ..attrs.clone() };
        if !plan(&asked, &f32_type(&input.shape), target, limits).is_ok_and(|p| p.name == name) {
            continue;
        }
        let (fused, c) = fuse_with(&graph, target, &format!("force=true force-plan={name}"));
        if c.plan != Some(name) {
            notes.push(format!("{what}: fused {name} not measured: the pass fitted {:?} (its assumed device limits)", c.plan));
            continue;
        }
        sessions.push((Alternative::Fused(name).to_string(), Compiled::new(&fused, target).expect("RLX compiles the fused graph")));
    }
    hosted_by_rlx(target, &what, &mut sessions, &inputs, notes);
    let mut runners: Vec<(String, Box<dyn FnMut() + '_>)> =
        sessions.iter_mut().map(|(alternative, c)| (alternative.clone(), Box::new(|| drop(c.run(&inputs).expect("RLX runs the fused graph"))) as Box<dyn FnMut()>)).collect();
    measured.extend(time_rounds(&mut runners));
    drop(runners);
    drop(sessions);
    if target != Target::Cpu {
        // The host call: the fused op lowered as one, which RLX runs through
        // the CPU kernel (staged through the host), timed on its own once the
        // GPU's threads have settled (lavapipe's are the CPU's).
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (fused, c) = fuse_with(&graph, target, "force=true native-kernels=false");
        assert_eq!(lowering_of(&c), Some(Lowering::Host), "{what}: native-kernels=false lowers a host call");
        let mut host_session = Compiled::new(&fused, target).expect("RLX compiles the host call");
        let mut host: Vec<(String, Box<dyn FnMut() + '_>)> = vec![(Alternative::HostCall.to_string(), Box::new(|| drop(host_session.run(&inputs).expect("RLX runs the host call"))))];
        measured.extend(time_rounds(&mut host));
    }
    // The picker.
    let (_, c) = run_pass(pass, &graph, target);
    let picked = match (c.decision, c.plan) {
        (Decision::Fused | Decision::Forced, Some(p)) => Alternative::Fused(p),
        (Decision::Fused | Decision::Forced, None) => {
            if lowering_of(&c) == Some(Lowering::Host) { Alternative::HostCall } else { Alternative::Fused(PlanName::Batch) }
        }
        _ => Alternative::Unfused,
    }
    .to_string();
    let predicted: BTreeMap<String, f64> = c.predictions.iter().map(|p| (p.alternative.to_string(), p.ns / 1e6)).collect();
    let (best, best_ms) = measured.iter().min_by(|a, b| a.1.total_cmp(b.1)).map(|(a, m)| (a.clone(), *m)).unwrap();
    // A pick the bench could not measure counts as unfused.
    let picked_ms = measured.get(&picked).copied().unwrap_or(measured["unfused"]);
    let ratio = predicted.get(&picked).map_or(f64::NAN, |p| p / picked_ms);
    Cell { batch, segments, n_fft, k, measured_ms: measured, predicted_ms: predicted, picked_over_best: picked_ms / best_ms, picked, best, picked_prediction_ratio: ratio }
}

/// On a GPU, a fused plan RLX hosts on the CPU (its CPU kernel runs, as it
/// does when RLX's arena splits an op's operands over binding stripes) is
/// measured as what it ran, and noted.
fn hosted_by_rlx(target: Target, what: &str, sessions: &mut [(String, Compiled)], inputs: &std::collections::HashMap<String, Tensor>, notes: &mut Vec<String>) {
    if target == Target::Cpu {
        return;
    }
    for (alternative, compiled) in sessions.iter_mut() {
        let recording = Recording::start();
        compiled.run(inputs).expect("RLX runs the fused graph");
        if !recording.take().is_empty() {
            notes.push(format!("{what}: {alternative} measured as RLX ran it: hosted, through the CPU kernel"));
        }
    }
}

/// A named way to run one cell once.
type Runner<'a> = (String, Box<dyn FnMut() + 'a>);

/// Median ms of each runner, timed in rounds after at least 20 ms of
/// warm-up: 4 to 256 rounds, as many as fit in about 300 ms (a median of
/// 16 runs of 0.1 ms took 2 ms, and anything else the machine did in those
/// 2 ms doubled it).
fn time_rounds(runners: &mut [Runner<'_>]) -> BTreeMap<String, f64> {
    // Warm up for at least 20 ms: pools woken, caches and clocks up.
    let start = Instant::now();
    runners.iter_mut().for_each(|(_, f)| f());
    let round = start.elapsed().as_secs_f64();
    while start.elapsed().as_secs_f64() < 0.02 {
        runners.iter_mut().for_each(|(_, f)| f());
    }
    let rounds = (0.3 / round.max(1e-6)).clamp(4.0, 256.0) as usize;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); runners.len()];
    for round in 0..rounds {
        // Every other round backwards: a run leaves the input in cache for
        // the next, and no alternative should always be the next.
        let mut order: Vec<usize> = (0..runners.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let start = Instant::now();
            (runners[i].1)();
            times[i].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    runners
        .iter()
        .zip(times)
        .map(|((name, _), mut t)| {
            t.sort_by(f64::total_cmp);
            (name.clone(), t[t.len() / 2])
        })
        .collect()
}

/// `U`, `B`, `S`, `M`, `SM`, `H`: an alternative in a map cell.
fn short(alternative: &str) -> String {
    match alternative {
        "unfused" => "U",
        "fused batch" => "B",
        "fused split" => "S",
        "fused multipass" => "M",
        "fused split-multipass" => "SM",
        "host call" => "H",
        other => other,
    }
    .to_string()
}

/// A map of the grid: a row per (n_fft, k), a column per (segments, batch),
/// each measured cell coloured and labelled by `paint`.
fn draw(path: &str, title: &str, cells: &[Cell], paint: &dyn Fn(&Cell) -> (RGBColor, String)) {
    let (cw, ch, left, top) = (52i32, 26i32, 110i32, 70i32);
    let columns = (SEGMENTS.len() * BATCHES.len()) as i32;
    let rows = (N_FFTS.len() * KS.len()) as i32;
    let size = ((left + columns * cw + 20) as u32, (top + rows * ch + 60) as u32);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).unwrap();
    let font = |px: i32| ("sans-serif", px).into_font();
    root.draw(&Text::new(title.to_string(), (left, 10), font(16))).unwrap();
    for (si, s) in SEGMENTS.iter().enumerate() {
        let x = left + (si * BATCHES.len()) as i32 * cw;
        root.draw(&Text::new(format!("{s} segments"), (x + 4, 32), font(12))).unwrap();
        for (bi, b) in BATCHES.iter().enumerate() {
            root.draw(&Text::new(format!("b{b}"), (x + bi as i32 * cw + 4, 50), font(10))).unwrap();
        }
    }
    for (ni, n) in N_FFTS.iter().enumerate() {
        for (ki, k) in KS.iter().enumerate() {
            let row = (ni * KS.len() + ki) as i32;
            let y = top + row * ch;
            root.draw(&Text::new(format!("n {n}, k {k}"), (6, y + 8), font(12))).unwrap();
            for (si, s) in SEGMENTS.iter().enumerate() {
                for (bi, b) in BATCHES.iter().enumerate() {
                    let x = left + (si * BATCHES.len() + bi) as i32 * cw;
                    let found = cells.iter().find(|c| (c.batch, c.segments, c.n_fft, c.k) == (*b, *s, *n, *k));
                    let (color, label) = found.map_or((RGBColor(225, 225, 225), String::new()), paint);
                    root.draw(&Rectangle::new([(x, y), (x + cw - 2, y + ch - 2)], color.filled())).unwrap();
                    root.draw(&Text::new(label, (x + 3, y + 8), font(9))).unwrap();
                }
            }
        }
    }
    let legend = "U unfused (RLX) · B batch · S split · M multipass · SM split-multipass · H host call · grey: skipped (input budget, or k above the bins)";
    root.draw(&Text::new(legend.to_string(), (left, top + rows * ch + 20), font(11))).unwrap();
    root.present().unwrap();
}
