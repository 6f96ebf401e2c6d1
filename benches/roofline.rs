//! The fused op against the memory roofline: over a grid of shapes (batch
//! 1, 64, 1024, 8192 × segments 1, 8, 64 × n_fft 64, 256, 1024, 4096 × k 1,
//! 16, 64), each plan's kernel time on resident operands (CUDA events), its
//! bandwidth (input bytes ÷ time), and, measured in the same run on the
//! same device, that device's copy bandwidth over the same bytes (a
//! device-to-device copy, bytes read plus written: the roofline), and the
//! pipeline a CUDA user would write instead (cuFFT's batched real-to-complex
//! transform, then a power, mean and top-k kernel), whose peaks are compared
//! with the fused kernel's.
//!
//! `cargo bench --bench roofline [-- cuda]` — writes `roofline-<device>.json`
//! and `.svg` to `$ROOFLINE_OUT` (default `target/roofline`); cells whose
//! input is over `$ROOFLINE_MAX_BYTES` (default 1 GiB), cells with k above
//! the bin count, and cells left when `$ROOFLINE_BUDGET_S` seconds (default
//! 180) are spent are skipped and listed; `ROOFLINE_CELLS=goal` measures
//! the headline cell alone, `ROOFLINE_CELLS=multipass` the multi-pass
//! plans alone on their own cells (lengths to 65536, and 6000),
//! `ROOFLINE_CELLS=topk` the cells whose blocks have several warps at k 16
//! and 64 (the one-pass top-k's forms, and the occupancy bound's on them),
//! `ROOFLINE_CELLS=one_segment` the cells of one segment an entry (CUDA's
//! packed form, `RLX_OPT_CUDA_PACKED_SEGMENT=0/1`, compares on them),
//! `ROOFLINE_CELLS=one_warp` the cells of one-warp blocks, n_fft 64 and 256
//! (CUDA's register FFT, `RLX_OPT_CUDA_REGISTER_FFT=0/1`, compares on them),
//! `ROOFLINE_CELLS=8192x8x4096x16` one cell (batch × segments × n_fft × k)
//! alone, for a profiler. Then the fused log-mel op on Whisper's
//! geometry (`roofline/log_mel.rs`), in the same JSON under `log_mel`
//! (its goal cell alone with `ROOFLINE_CELLS=goal`, its cells alone with
//! `ROOFLINE_CELLS=log_mel`). RLX alone on the same data is rlx-ext's
//! `session` bench. Prints why it skips where there is no GPU.

#[path = "roofline/chart.rs"]
mod chart;
#[path = "roofline/cufft_pipeline.rs"]
mod cufft_pipeline;
#[path = "roofline/log_mel.rs"]
mod log_mel;
#[path = "roofline/wgpu_paths.rs"]
mod wgpu_paths;

use rlx_opt::analysis::Target;
use rlx_opt::fused::{PlanName, WelchPeaksAttrs};
use rlx_opt::runtime::cuda_kernel::CudaKernels;
use rlx_opt::runtime::{RuntimeError, Tensor};
use serde::Serialize;
use std::time::Instant;

const BATCHES: [usize; 4] = [1, 64, 1024, 8192];
const SEGMENTS: [usize; 3] = [1, 8, 64];
const N_FFTS: [usize; 4] = [64, 256, 1024, 4096];
const KS: [usize; 3] = [1, 16, 64];
/// The headline cell, and the latency cell, measured first.
const GOAL: Cell = Cell { batch: 8192, segments: 8, n_fft: 256, k: 16 };
const LATENCY: Cell = Cell { batch: 1, segments: 8, n_fft: 256, k: 16 };
/// Each timing fills about this many ms of back-to-back calls.
const WINDOW_MS: f64 = 20.0;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct Cell {
    batch: usize,
    segments: usize,
    n_fft: usize,
    k: usize,
}

impl Cell {
    fn input_bytes(&self) -> usize {
        self.batch * self.segments * self.n_fft * 4
    }

    fn attrs(&self, plan: PlanName) -> WelchPeaksAttrs {
        WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(self.n_fft as u64, self.segments as u64, self.k as u64) }
    }
}

/// One plan's measurement in one cell.
#[derive(Serialize)]
struct Row {
    #[serde(flatten)]
    cell: Cell,
    /// The plan that ran (a split into one chunk per entry runs as batch).
    plan: &'static str,
    asked: &'static str,
    input_bytes: usize,
    kernel_us: f64,
    gbps: f64,
    copy_gbps: f64,
    roofline_pct: f64,
    cufft_us: Option<f64>,
    vs_cufft: Option<f64>,
    /// Entries whose k peak bins equal the cuFFT pipeline's, in order.
    agrees_with_cufft: Option<String>,
}

#[derive(Serialize)]
struct Skipped {
    #[serde(flatten)]
    cell: Cell,
    plan: Option<&'static str>,
    reason: String,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if let Some(other) = args.iter().find(|a| !["cuda", "wgpu"].contains(&a.as_str())) {
        println!("roofline: `{other}` is not measured by this bench (`-- cuda`, `-- wgpu`); the CPU kernel's figures are the welch_cpu bench's");
        return;
    }
    if args.iter().any(|a| a == "wgpu") {
        if let Err(e) = run_wgpu() {
            eprintln!("roofline: {e}");
            std::process::exit(1);
        }
        return;
    }
    let cuda = match CudaKernels::new() {
        Ok(c) => c,
        Err(e) => {
            println!("roofline: skipped, no CUDA device ({e})");
            return;
        }
    };
    if let Err(e) = run(&cuda) {
        eprintln!("roofline: {e}");
        std::process::exit(1);
    }
}

/// The WGSL kernels' paths on the Vulkan adapter ([`wgpu_paths`]).
fn run_wgpu() -> Result<(), Box<dyn std::error::Error>> {
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(e) => {
            println!("roofline -- wgpu: skipped, no Vulkan adapter ({e})");
            return Ok(());
        }
    };
    let out = std::path::PathBuf::from(std::env::var("ROOFLINE_OUT").unwrap_or_else(|_| "target/roofline".into()));
    std::fs::create_dir_all(&out)?;
    if !kernels.subgroups() {
        println!("roofline -- wgpu: {} has no subgroup operations (wgpu's SUBGROUP feature): one path measured", kernels.adapter);
        return wgpu_paths::measure(&[("workgroup", kernels)], &out);
    }
    let workgroup = rlx_opt::runtime::wgpu_kernel::WgpuKernels::new()?.without_subgroups();
    wgpu_paths::measure(&[("workgroup", workgroup), ("subgroups", kernels)], &out)
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Whether `ROOFLINE_CELLS` names the group `name` of cells.
fn cells_asked(name: &str) -> bool {
    std::env::var("ROOFLINE_CELLS").is_ok_and(|v| v == name)
}

/// `ROOFLINE_CELLS=goal`: the goal cell alone, for a profiler.
fn goal_only() -> bool {
    cells_asked("goal")
}

/// `ROOFLINE_CELLS=log_mel`: the log-mel cells alone, to compare the
/// kernel's two forms (`RLX_OPT_CUDA_LOG_MEL_WARPS=0/1`) run by run.
fn log_mel_only() -> bool {
    cells_asked("log_mel")
}

/// `ROOFLINE_CELLS=multipass`: the multi-pass plans' cells alone, to
/// compare their two FFT forms (`RLX_OPT_CUDA_FOUR_STEP=0/1`) run by run.
fn multipass_only() -> bool {
    cells_asked("multipass")
}

/// `ROOFLINE_CELLS=topk`: the cells whose blocks have several warps
/// (n_fft 1024 and 4096) at k 16 and 64, to compare the one-pass top-k's
/// two forms (`RLX_OPT_CUDA_WARP_TOPK=0/1`), or the launch bounds of such
/// blocks (`RLX_OPT_CUDA_OCCUPANCY=0/1`), run by run.
fn topk_only() -> bool {
    cells_asked("topk")
}

/// `ROOFLINE_CELLS=one_segment`: the cells of one segment an entry, to
/// compare CUDA's packed form (`RLX_OPT_CUDA_PACKED_SEGMENT=0/1`) run by run.
fn one_segment_only() -> bool {
    cells_asked("one_segment")
}

/// `ROOFLINE_CELLS=one_warp`: the cells of one-warp blocks (n_fft 64 and
/// 256), to compare CUDA's register FFT (`RLX_OPT_CUDA_REGISTER_FFT=0/1`)
/// run by run.
fn one_warp_only() -> bool {
    cells_asked("one_warp")
}

/// The one-warp cells: the goal and latency cells, and the grid's large
/// cells of n_fft 256 over segments 1, 8 and 64 and of 64 over 8 and 64
/// (where the FFT weighs most against the top-k) at k 16, and one at k 64.
const ONE_WARP_CELLS: [Cell; 8] = [
    GOAL,
    LATENCY,
    Cell { batch: 8192, segments: 64, n_fft: 256, k: 16 },
    Cell { batch: 8192, segments: 1, n_fft: 256, k: 16 },
    Cell { batch: 8192, segments: 8, n_fft: 64, k: 16 },
    Cell { batch: 8192, segments: 64, n_fft: 64, k: 16 },
    Cell { batch: 1024, segments: 64, n_fft: 256, k: 16 },
    Cell { batch: 8192, segments: 8, n_fft: 256, k: 64 },
];

/// One segment an entry: the large cells of the grid's one-pass lengths
/// but the shortest, at k 1 and 16 (and 64 at 1024, where the top-k,
/// which packing leaves as it is, weighs most), and the latency shape at
/// one segment.
const ONE_SEGMENT_CELLS: [Cell; 8] = [
    Cell { batch: 8192, segments: 1, n_fft: 256, k: 16 },
    Cell { batch: 8192, segments: 1, n_fft: 1024, k: 1 },
    Cell { batch: 8192, segments: 1, n_fft: 1024, k: 16 },
    Cell { batch: 8192, segments: 1, n_fft: 1024, k: 64 },
    Cell { batch: 8192, segments: 1, n_fft: 4096, k: 1 },
    Cell { batch: 8192, segments: 1, n_fft: 4096, k: 16 },
    Cell { batch: 1024, segments: 1, n_fft: 4096, k: 16 },
    Cell { batch: 1, segments: 1, n_fft: 256, k: 16 },
];

/// The top-k's cells: one segment an entry (where the top-k weighs most)
/// and eight, at the two lengths whose blocks have several warps.
const TOPK_CELLS: [Cell; 8] = [
    Cell { batch: 8192, segments: 1, n_fft: 1024, k: 64 },
    Cell { batch: 8192, segments: 1, n_fft: 1024, k: 16 },
    Cell { batch: 8192, segments: 8, n_fft: 1024, k: 64 },
    Cell { batch: 8192, segments: 8, n_fft: 1024, k: 16 },
    Cell { batch: 8192, segments: 1, n_fft: 4096, k: 64 },
    Cell { batch: 1024, segments: 1, n_fft: 4096, k: 64 },
    Cell { batch: 1024, segments: 8, n_fft: 4096, k: 64 },
    Cell { batch: 1024, segments: 8, n_fft: 4096, k: 16 },
];

/// The multi-pass plans' cells: the goal cell and 4096 (where the plan is
/// asked for), the lengths past one block (8192 to 65536), and 6000, a
/// length the radix-2 stages refuse and the four-step FFT takes.
const MULTIPASS_CELLS: [Cell; 6] = [
    GOAL,
    Cell { batch: 1024, segments: 8, n_fft: 4096, k: 16 },
    Cell { batch: 1024, segments: 8, n_fft: 8192, k: 16 },
    Cell { batch: 256, segments: 8, n_fft: 16384, k: 16 },
    Cell { batch: 64, segments: 8, n_fft: 65536, k: 16 },
    Cell { batch: 1024, segments: 8, n_fft: 6000, k: 16 },
];

/// `ROOFLINE_CELLS=BATCHxSEGMENTSxN_FFTxK` (`8192x8x4096x16`): that cell
/// alone, no log-mel cells, for a profiler on any cell of the grid.
fn one_cell() -> Option<Cell> {
    let value = std::env::var("ROOFLINE_CELLS").ok()?;
    match value.split('x').map(|v| v.parse().ok()).collect::<Option<Vec<usize>>>()?[..] {
        [batch, segments, n_fft, k] => Some(Cell { batch, segments, n_fft, k }),
        _ => None,
    }
}

/// Every cell of the grid, the goal and latency cells first.
fn grid() -> Vec<Cell> {
    let mut cells = vec![GOAL, LATENCY];
    if log_mel_only() {
        return Vec::new();
    }
    if let Some(cell) = one_cell() {
        return vec![cell];
    }
    if goal_only() {
        return vec![GOAL];
    }
    if multipass_only() {
        return MULTIPASS_CELLS.to_vec();
    }
    if topk_only() {
        return TOPK_CELLS.to_vec();
    }
    if one_segment_only() {
        return ONE_SEGMENT_CELLS.to_vec();
    }
    if one_warp_only() {
        return ONE_WARP_CELLS.to_vec();
    }
    for batch in BATCHES.into_iter().rev() {
        for segments in SEGMENTS {
            for n_fft in N_FFTS {
                for k in KS {
                    let cell = Cell { batch, segments, n_fft, k };
                    if !cells.contains(&cell) {
                        cells.push(cell);
                    }
                }
            }
        }
    }
    cells
}

/// Deterministic noise in [−1, 1): no two bins' powers tie in practice.
fn noise(len: usize, seed: u64) -> Vec<f32> {
    use rayon::prelude::*;
    (0..len)
        .into_par_iter()
        .map(|i| {
            let mut z = (i as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z ^= z >> 27;
            (z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

/// The cuFFT pipeline on one cell's resident input: its time and peaks.
fn time_cufft(cuda: &CudaKernels, epilogue: &cudarc::driver::CudaFunction, cell: &Cell, on_device: &cudarc::driver::CudaSlice<f32>) -> Result<(f64, Vec<f32>), RuntimeError> {
    let mut pipeline = cufft_pipeline::CufftPipeline::new(cuda, epilogue, cell.batch, cell.segments, cell.n_fft, cell.k)?;
    let us = cuda.time_us(WINDOW_MS, &mut || pipeline.run(cuda, on_device))?;
    Ok((us, pipeline.peaks(cuda)?))
}

// Over 80 lines: the grid loop keeps each cell's input, copy figure and
// cuFFT run beside the plans measured on them.
fn run(cuda: &CudaKernels) -> Result<(), Box<dyn std::error::Error>> {
    let max_bytes = env_f64("ROOFLINE_MAX_BYTES", (1u64 << 30) as f64) as usize;
    let budget_s = env_f64("ROOFLINE_BUDGET_S", 180.0);
    let out = std::path::PathBuf::from(std::env::var("ROOFLINE_OUT").unwrap_or_else(|_| "target/roofline".into()));
    std::fs::create_dir_all(&out)?;
    println!("roofline on {} ({}); cells over {} MiB skipped; budget {budget_s} s", cuda.device, cuda.arch, max_bytes >> 20);
    let cufft = if cufft_pipeline::available() { Some(cufft_pipeline::epilogue(cuda)?) } else { None };
    if cufft.is_none() {
        println!("cuFFT: not found (libcufft.so on LD_LIBRARY_PATH): its pipeline is not timed");
    }
    let cells = grid();
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    let mut measurable = Vec::new();
    for cell in cells {
        if cell.input_bytes() > max_bytes {
            skipped.push(Skipped { cell, plan: None, reason: format!("input {} MiB over the memory budget", cell.input_bytes() >> 20) });
        } else if cell.k > cell.n_fft / 2 + 1 {
            skipped.push(Skipped { cell, plan: None, reason: format!("k {} above the {} bins", cell.k, cell.n_fft / 2 + 1) });
        } else {
            measurable.push(cell);
        }
    }
    // Every module first, NVRTC on every core.
    let started = Instant::now();
    let specs: Vec<_> = measurable
        .iter()
        .flat_map(|c| PlanName::ALL.map(|p| rlx_opt::lower::specialize_for(&c.attrs(p), &[c.batch * c.segments, c.n_fft], Target::Cuda, &cuda.limits())))
        .filter_map(Result::ok)
        .collect();
    cuda.precompile(&specs)?;
    println!("{} modules compiled in {:.1} s", specs.len(), started.elapsed().as_secs_f64());
    println!("{:>6} {:>4} {:>5} {:>3} {:>16} {:>10} {:>9} {:>6} {:>10} {:>8}", "batch", "segs", "n_fft", "k", "plan", "kernel_us", "GB/s", "%roof", "cufft_us", "vs_cufft");
    let started = Instant::now();
    let mut input: Option<(Cell, Tensor, f64)> = None;
    for cell in measurable {
        if started.elapsed().as_secs_f64() > budget_s {
            skipped.push(Skipped { cell, plan: None, reason: format!("the time budget (ROOFLINE_BUDGET_S={budget_s}) was spent") });
            continue;
        }
        let same_input = |c: &Cell| c.batch == cell.batch && c.segments == cell.segments && c.n_fft == cell.n_fft;
        if !input.as_ref().is_some_and(|(c, _, _)| same_input(c)) {
            let tensor = Tensor::new(vec![cell.batch * cell.segments, cell.n_fft], noise(cell.input_bytes() / 4, cell.n_fft as u64));
            let copy = cuda.copy_gbps(cell.input_bytes(), WINDOW_MS)?;
            input = Some((cell, tensor, copy));
        }
        let (_, tensor, copy_gbps) = input.as_ref().expect("made above");
        let mut cufft_peaks = None;
        let mut cufft_us = None;
        let mut cufft_tried = false;
        let mut ran = Vec::new();
        let plans = if multipass_only() { vec![PlanName::Multipass, PlanName::SplitMultipass] } else { PlanName::ALL.to_vec() };
        for asked in plans {
            let mut plan = match cuda.resident(&cell.attrs(asked), tensor, None) {
                Ok(p) => p,
                Err(e) => {
                    skipped.push(Skipped { cell, plan: Some(asked.name()), reason: e.to_string() });
                    continue;
                }
            };
            let name = plan.spec.kernel.plan;
            if ran.contains(&name) {
                continue;
            }
            ran.push(name);
            let kernel_us = cuda.time_us(WINDOW_MS, &mut || cuda.launch_resident(&mut plan))?;
            let peaks = cuda.peaks_of(&plan)?;
            if let (Some(epilogue), false) = (&cufft, cufft_tried) {
                cufft_tried = true;
                // A shape the pipeline cannot take is said and listed; the
                // fused plans' figures stand without it.
                match time_cufft(cuda, epilogue, &cell, plan.input()?) {
                    Ok((us, peaks)) => (cufft_us, cufft_peaks) = (Some(us), Some(peaks)),
                    Err(e) => {
                        println!("cuFFT pipeline not timed on {cell:?}: {e}");
                        skipped.push(Skipped { cell, plan: Some("cufft"), reason: e.to_string() });
                    }
                }
            }
            let gbps = cell.input_bytes() as f64 / (kernel_us * 1e-6) / 1e9;
            let row = Row {
                cell,
                plan: name.name(),
                asked: asked.name(),
                input_bytes: cell.input_bytes(),
                kernel_us,
                gbps,
                copy_gbps: *copy_gbps,
                roofline_pct: 100.0 * gbps / copy_gbps,
                cufft_us,
                vs_cufft: cufft_us.map(|c| c / kernel_us),
                agrees_with_cufft: cufft_peaks.as_ref().map(|c| agreement(&peaks, c, cell.k)),
            };
            println!(
                "{:>6} {:>4} {:>5} {:>3} {:>16} {:>10.2} {:>9.1} {:>6.1} {:>10} {:>8}  {}",
                cell.batch,
                cell.segments,
                cell.n_fft,
                cell.k,
                row.plan,
                kernel_us,
                gbps,
                row.roofline_pct,
                cufft_us.map_or("-".into(), |c| format!("{c:.2}")),
                row.vs_cufft.map_or("-".into(), |v| format!("{v:.1}×")),
                row.agrees_with_cufft.as_deref().unwrap_or(""),
            );
            rows.push(row);
        }
    }
    // The multi-pass comparison is the Welch op's alone.
    let log_mel = if multipass_only() || topk_only() || one_segment_only() || one_warp_only() || one_cell().is_some() { Vec::new() } else { log_mel::measure(cuda, WINDOW_MS, goal_only())? };
    write_outputs(cuda, &out, &rows, &skipped, &log_mel)
}

/// "m/n entries": entries whose peak bins equal the other pipeline's, in order.
fn agreement(ours: &[f32], theirs: &[f32], k: usize) -> String {
    let entries = ours.len() / (2 * k);
    let same = (0..entries).filter(|e| (0..k).all(|r| ours[(e * k + r) * 2] == theirs[(e * k + r) * 2])).count();
    format!("{same}/{entries} entries")
}

/// The JSON (device first, then one object per measured plan and cell),
/// the SVG chart, and the goals' figures on stdout.
fn write_outputs(cuda: &CudaKernels, out: &std::path::Path, rows: &[Row], skipped: &[Skipped], log_mel: &[log_mel::Row]) -> Result<(), Box<dyn std::error::Error>> {
    let slug: String = cuda.device.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let goal = rows.iter().find(|r| r.cell == GOAL && r.plan == "batch");
    let latency = rows.iter().filter(|r| r.cell == LATENCY).map(|r| r.kernel_us).fold(f64::INFINITY, f64::min);
    let big: Vec<&Row> = rows.iter().filter(|r| r.input_bytes >= 16 << 20).collect();
    let best_of_big = |pct: f64| {
        let mut cells: Vec<Cell> = big.iter().map(|r| r.cell).collect();
        cells.dedup();
        let over = cells.iter().filter(|c| big.iter().filter(|r| r.cell == **c).any(|r| r.roofline_pct >= pct)).count();
        format!("{over}/{} cells of at least 16 MiB reach {pct}% with their best plan", cells.len())
    };
    let goals = serde_json::json!({
        "batch_8192x8x256_k16": goal.map(|g| serde_json::json!({"roofline_pct": g.roofline_pct, "vs_cufft": g.vs_cufft, "kernel_us": g.kernel_us})),
        "cells_of_16_mib_at_30_pct": best_of_big(30.0),
        "batch_1x8x256_k16_us": latency.is_finite().then_some(latency),
        "log_mel_400x24000_mels80_pct": log_mel.iter().find(|r| (r.n_fft, r.frames, r.mels) == log_mel::GOAL).map(|r| r.roofline_pct),
    });
    // The kernels' opt-in forms this run had (a GPU session compares them run by run).
    let forms: serde_json::Map<String, serde_json::Value> = rlx_opt::opt_in::CudaForm::ALL.iter().map(|f| (f.name().to_string(), f.in_use().into())).collect();
    let json = serde_json::json!({"device": cuda.device, "arch": cuda.arch, "roofline": "device-to-device copy of the same bytes, bytes read plus written per second", "forms": forms, "goals": goals, "cells": rows, "skipped": skipped, "log_mel": log_mel});
    let json_path = out.join(format!("roofline-{slug}.json"));
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")?;
    let points: Vec<chart::Point> = rows.iter().map(|r| chart::Point { mib: r.input_bytes as f64 / (1 << 20) as f64, pct: r.roofline_pct, plan: r.plan }).collect();
    let svg_path = out.join(format!("roofline-{slug}.svg"));
    chart::write_svg(&svg_path, &cuda.device, &points)?;
    println!("goals: {}", serde_json::to_string(&goals)?);
    println!("{} measurements, {} skipped; wrote {} and {}", rows.len(), skipped.len(), json_path.display(), svg_path.display());
    Ok(())
}
