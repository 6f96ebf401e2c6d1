//! RLX alone against RLX with rlx-ext installed, same Session, same inputs:
//! RLX's WelchPeaks chain at n_fft 256, 8 segments, k 16, batch 8192 (the
//! issue's shape) and 2048, on the CPU and, where a Vulkan device opens
//! (lavapipe here), on RLX's wgpu backend. Median of 7 runs after a warm-up.
//! A fused op RLX's wgpu backend hosts (runs through the CPU kernel, as it
//! does when its arena puts an op's operands in different binding stripes)
//! is reported as such. With the `cuda` feature, RLX's CUDA backend too
//! where a CUDA device opens. On wgpu, also with the pass deciding from the
//! shipped lavapipe profile (`install_with`).
//!
//! The work itself is the line with the signal on the device (a `Param` set
//! once: no run uploads it). RLX's input floor (taking the input in,
//! returning one row) and each run's time above it are timed in alternating
//! rounds and reported as a median with its quartiles: the difference of two
//! runs of about the same length (CUDA at batch 2048) is mostly noise.
//!
//!     cargo bench -p rlx-ext --bench session [--features cuda] [-- cpu|wgpu|cuda]

use rlx_ext::{Recording, uninstall};
use rlx_opt::testgen::welch_chains;
use rlx_runtime::{Device, Session};
#[path = "../../benches/common/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    // `-- cpu`, `-- wgpu` or `-- cuda` measures one device (cargo passes `--bench` too).
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let mut candidates = vec![("cpu", Device::Cpu), ("wgpu", Device::Gpu)];
    if cfg!(feature = "cuda") {
        candidates.push(("cuda", Device::Cuda));
    }
    let devices: Vec<(&str, Device)> = candidates
        .into_iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|o| o == name))
        .filter(|(_, d)| std::panic::catch_unwind(|| Session::try_new(*d).is_ok()).unwrap_or(false))
        .collect();
    let (n_fft, segments, k) = (256u64, 8u64, 16u64);
    for batch in [8192u64, 2048] {
        let rows = batch * segments;
        // The peaks only, as a model reading them would return.
        let text = welch_chains(1, rows, n_fft, segments, k).replace("return %3, %4", "return %4");
        let graph = rlx_ir::text::parse(&text).expect("generated graph parses");
        // The same chain over a signal that stays on the device: a Param,
        // uploaded once by `set_param`, where the Input is uploaded by each run.
        let param = "{\"Input\":{\"name\":\"segs0\"}}";
        let resident = rlx_ir::text::parse(&text.replacen(param, "{\"Param\":{\"name\":\"segs0\"}}", 1)).expect("the Param form parses");
        // What any graph over this input pays per run: RLX taking the input
        // in and returning its first row.
        let floor_text = format!(
            "graph @input_floor {{\n  %0 = {param} : [{rows}, {n_fft}] f32 #\"segs0\"\n  %1 = {{\"Narrow\":{{\"axis\":0,\"start\":0,\"len\":1}}}}(%0) : [1, {n_fft}] f32\n  return %1\n}}\n"
        );
        let floor_graph = rlx_ir::text::parse(&floor_text).expect("the floor graph parses");
        let x: Vec<f32> = (0..rows * n_fft).map(|i| ((i % 977) as f32 * 0.013).sin()).collect();
        println!(
            "RLX WelchPeaks chain, batch {batch}, n_fft {n_fft}, {segments} segments, k {k} (median of 7 runs, ms; floor and above it: median [quartiles] of {ROUNDS} rounds)"
        );
        for (name, device) in &devices {
            uninstall();
            // Each timed on a settled machine: RLX's pool threads spin a
            // while after a run, and would slow what runs next.
            let settle = || std::thread::sleep(std::time::Duration::from_millis(100));
            let per_run = |graph: &rlx_ir::Graph| {
                let mut compiled = Session::new(*device).compile(graph.clone());
                settle();
                median_ms(7, || drop(compiled.run(&[("segs0", &x)])))
            };
            let on_device = |graph: &rlx_ir::Graph| {
                let mut compiled = Session::new(*device).compile(graph.clone());
                compiled.set_param("segs0", &x);
                settle();
                median_ms(7, || drop(compiled.run(&[])))
            };
            let (alone, alone_resident) = (per_run(&graph), on_device(&resident));
            let alone_above = above_floor(*device, &graph, &floor_graph, &x);
            rlx_ext::install(name).expect("known target");
            let recording = Recording::start();
            let (fused, fused_resident) = (per_run(&graph), on_device(&resident));
            let hosted = *name != "cpu" && !recording.take().is_empty();
            let fused_above = above_floor(*device, &graph, &floor_graph, &x);
            let how = if hosted { "   (RLX hosted the fused op: its CPU kernel ran)" } else { "" };
            println!("{name:>5}: RLX alone {alone:9.2}   RLX + rlx-ext {fused:9.2}   {:.1}× faster{how}", alone / fused);
            // The kernel's figure: no run uploads the signal.
            println!(
                "       signal on the device (a Param set once), the work itself: RLX alone {alone_resident:9.2}   RLX + rlx-ext {fused_resident:9.2}   {:.1}× faster",
                alone_resident / fused_resident
            );
            // A difference of two runs of similar length is mostly their
            // noise (at batch 2048 on CUDA the fused op's came out ≈ 0):
            // only with its spread.
            println!("       input floor (RLX taking the input in, returning one row) {}", alone_above.floor);
            println!("       above the floor, run minus floor per round: RLX alone {}, RLX + rlx-ext {}", alone_above.above, fused_above.above);
            // A shipped profile of this device, where there is one: the
            // pass deciding from measurements rather than RLX's constants.
            if let Some(profile) = PROFILES.iter().find(|(target, _)| target == name).map(|(_, path)| path) {
                rlx_ext::install_with(&format!("target={name} profile={profile}")).expect("the shipped profile loads");
                let calibrated = per_run(&graph);
                println!("       with {profile}: RLX + rlx-ext {calibrated:9.2}   {:.1}× faster than RLX alone", alone / calibrated);
            }
        }
    }
}

/// Rounds of the input floor against the graph.
const ROUNDS: usize = 15;

/// A median with its quartiles, in ms.
struct Spread {
    median: f64,
    quartiles: (f64, f64),
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        Spread { median: at(0.5), quartiles: (at(0.25), at(0.75)) }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2} [{:.2}, {:.2}]", self.median, self.quartiles.0, self.quartiles.1)
    }
}

/// The floor, and a run's time above it.
struct AboveFloor {
    floor: Spread,
    above: Spread,
}

/// The floor graph and `graph` run in turns, [`ROUNDS`] rounds after a
/// warm-up of each, every other round in the other order: the floor's time,
/// and per round the graph's minus the floor's.
fn above_floor(device: Device, graph: &rlx_ir::Graph, floor_graph: &rlx_ir::Graph, x: &[f32]) -> AboveFloor {
    let mut run = Session::new(device).compile(graph.clone());
    let mut floor = Session::new(device).compile(floor_graph.clone());
    let time = |compiled: &mut rlx_runtime::CompiledGraph| {
        let start = std::time::Instant::now();
        drop(compiled.run(&[("segs0", x)]));
        start.elapsed().as_secs_f64() * 1e3
    };
    time(&mut run);
    time(&mut floor);
    let (mut floors, mut above) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (r, f) = if round % 2 == 0 {
            let r = time(&mut run);
            (r, time(&mut floor))
        } else {
            let f = time(&mut floor);
            (time(&mut run), f)
        };
        floors.push(f);
        above.push(r - f);
    }
    AboveFloor { floor: Spread::of(floors), above: Spread::of(above) }
}

/// The shipped device profiles the bench also decides with (`rlx-run
/// --calibrate`; lavapipe's is this kind of machine's software Vulkan).
const PROFILES: &[(&str, &str)] = &[("wgpu", "../examples/profiles/wgpu_lavapipe.json")];
