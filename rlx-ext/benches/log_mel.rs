//! RLX's log-mel front end (frames → `Concat(x, Sub(x, x))` → `Fft` →
//! `LogMel`), RLX alone against RLX with rlx-ext installed, same `Session`,
//! same inputs (random frames, rlx-ir's mel filterbank as an input):
//! - CPU, Whisper's geometry: 8 clips of 3,000 frames, n_fft 400, 80 mels;
//!   and the numpy pipeline of `benches/numpy_log_mel.py` on the same shape,
//!   where `python3` with numpy runs;
//! - wgpu (lavapipe here), where a Vulkan device opens: n_fft 512, 1,000
//!   frames, 64 mels, both ways; and one Whisper clip (3,000 × 400, 128
//!   mels) with rlx-ext (RLX alone gives no result within 500 s there).
//!   rlx-ext twice: installed for wgpu (the WGSL kernels in RLX's arena),
//!   and with the shipped lavapipe profile, which picks the host call (the
//!   CPU kernel: on lavapipe the WGSL runs on the same CPU, slower).
//!
//! Each both ways: the frames an input, uploaded by every run (RLX zeroes
//! and fills its arena with them: a floor both sides pay), and resident, a
//! Param set once (a run is then the work itself, as numpy's is).
//! Median of the runs after a warm-up, in ms (rlx-ext's side ten times as
//! many calls as RLX alone's), and where rlx-ext's CPU kernel ran, its own
//! median call in the resident runs (the rest of a run is RLX's); one JSON
//! line per measurement.
//!
//!     cargo bench -p rlx-ext --bench log_mel [-- cpu|wgpu] [ext]
//!
//! `ext` times RLX + rlx-ext only (no RLX alone, no numpy): for a profiler.

use rlx_ext::uninstall;
use rlx_ir::op::BinaryOp;
use rlx_ir::{DType, Graph, Op, Shape};
use rlx_runtime::{Device, Session};
#[path = "../../benches/common/timing.rs"]
mod timing;
use timing::median_ms;

/// RLX's native log-mel chain on `[frames, n_fft]`, the filters an input;
/// the frames an input (uploaded by each run) or, `resident`, a Param
/// (uploaded once by `set_param`).
fn chain(frames: usize, n_fft: usize, mels: usize, resident: bool) -> Graph {
    let mut g = Graph::new("log_mel");
    let shape = Shape::new(&[frames, n_fft], DType::F32);
    let x = match resident {
        true => g.add_node(Op::Param { name: "frames".into() }, vec![], shape),
        false => g.input("frames", shape),
    };
    let zero = g.binary(BinaryOp::Sub, x, x, Shape::new(&[frames, n_fft], DType::F32));
    let block = g.add_node(Op::Concat { axis: 1 }, vec![x, zero], Shape::new(&[frames, 2 * n_fft], DType::F32));
    let spec = g.fft(block, false);
    let filters = g.input("mel_filters", Shape::new(&[mels, n_fft / 2 + 1], DType::F32));
    let out = g.log_mel(spec, filters);
    g.set_outputs(vec![out]);
    g
}

struct Case {
    device: &'static str,
    /// rlx-ext's install options.
    options: &'static str,
    frames: usize,
    n_fft: usize,
    mels: usize,
    /// Time RLX alone too (not where it takes minutes).
    alone: bool,
    runs: usize,
}

/// Per run (the frames an input, uploaded by every run) and resident (a
/// Param set once, so a run is the work itself), in ms.
fn measure(device: Device, case: &Case, with_ext: bool) -> Timing {
    uninstall();
    if with_ext {
        rlx_ext::install_with(case.options).expect("rlx-ext installs");
    }
    let frames: Vec<f32> = (0..case.frames * case.n_fft).map(|i| ((i % 977) as f32 * 0.013).sin()).collect();
    let bank = rlx_ir::filterbank::mel_filterbank(16000.0, case.n_fft, case.mels, 0.0, 8000.0);
    // RLX's pool threads spin a while after a run: each timing starts settled.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(100));
    // RLX alone takes most of a second a call on the CPU; with rlx-ext a
    // call is milliseconds, where one slow call moves a median of five by
    // a fifth: ten times the calls.
    let runs = if with_ext { 10 * case.runs } else { case.runs };
    let mut compiled = Session::new(device).compile(chain(case.frames, case.n_fft, case.mels, false));
    let inputs: [(&str, &[f32]); 2] = [("frames", &frames), ("mel_filters", &bank)];
    settle();
    let per_run = median_ms(runs, || {
        std::hint::black_box(compiled.run(&inputs));
    });
    drop(compiled);
    let mut compiled = Session::new(device).compile(chain(case.frames, case.n_fft, case.mels, true));
    compiled.set_param("frames", &frames);
    settle();
    let recording = rlx_ext::Recording::start();
    let resident = median_ms(runs, || {
        std::hint::black_box(compiled.run(&[("mel_filters", &bank)]));
    });
    // The op's CPU kernel's own calls (none on a GPU kernel): what of a
    // resident run is the kernel, and what is RLX's.
    // The first call is median_ms's warm-up.
    let mut calls: Vec<f64> = recording.take().iter().skip(1).map(|c| c.duration.as_secs_f64() * 1e3).collect();
    calls.sort_by(f64::total_cmp);
    let kernel = calls.get(calls.len() / 2).copied();
    Timing { per_run, resident, kernel }
}

#[derive(Clone, Copy)]
struct Timing {
    per_run: f64,
    resident: f64,
    /// The median call of the op's CPU kernel in the resident runs, if it ran.
    kernel: Option<f64>,
}

fn numpy_ms(case: &Case) -> Option<f64> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/numpy_log_mel.py");
    let out = std::process::Command::new("python3")
        .args([script, "--frames", &case.frames.to_string(), "--n-fft", &case.n_fft.to_string(), "--mels", &case.mels.to_string()])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let line = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    json["median_ms"].as_f64()
}

/// rlx-ext deciding from the shipped profile of lavapipe.
const LAVAPIPE: &str = concat!("target=wgpu profile=", env!("CARGO_MANIFEST_DIR"), "/../examples/profiles/wgpu_lavapipe.json");

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let ext_only = args.iter().any(|a| a == "ext");
    let only: Vec<&String> = args.iter().filter(|a| *a != "ext").collect();
    let wanted = |d: &str| only.is_empty() || only.iter().any(|o| o.as_str() == d);
    let opens = |d: Device| std::panic::catch_unwind(|| Session::try_new(d).is_ok()).unwrap_or(false);
    let mut cases = Vec::new();
    if wanted("cpu") {
        cases.push(Case { device: "cpu", options: "target=cpu", frames: 24_000, n_fft: 400, mels: 80, alone: true, runs: 5 });
    }
    if wanted("wgpu") && opens(Device::Gpu) {
        for options in ["target=wgpu", LAVAPIPE] {
            cases.push(Case { device: "wgpu", options, frames: 1_000, n_fft: 512, mels: 64, alone: true, runs: 5 });
            cases.push(Case { device: "wgpu", options, frames: 3_000, n_fft: 400, mels: 128, alone: false, runs: 5 });
        }
    } else if wanted("wgpu") {
        eprintln!("SKIPPED wgpu: no Vulkan device opens (install mesa-vulkan-drivers for lavapipe)");
    }
    for case in &cases {
        let device = if case.device == "cpu" { Device::Cpu } else { Device::Gpu };
        let with_ext = measure(device, case, true);
        let alone = (case.alone && !ext_only).then(|| measure(device, case, false));
        let numpy = (case.device == "cpu" && !ext_only).then(|| numpy_ms(case)).flatten();
        let ratio = |x: Option<f64>, ext: f64| x.map(|x| format!("{:.1}×", x / ext)).unwrap_or_else(|| "-".into());
        let ms = |x: Option<f64>| x.map(|a| format!("{a:.2} ms")).unwrap_or_else(|| if ext_only { "not run (ext)" } else { "not run (minutes)" }.into());
        println!("{:<5} {} frames, n_fft {}, {} mels; rlx-ext with `{}`", case.device, case.frames, case.n_fft, case.mels, case.options);
        println!(
            "      frames uploaded by each run: RLX + rlx-ext {:.2} ms; RLX alone {} ({})",
            with_ext.per_run,
            ms(alone.map(|a| a.per_run)),
            ratio(alone.map(|a| a.per_run), with_ext.per_run)
        );
        println!(
            "      frames resident (a Param set once): RLX + rlx-ext {:.2} ms; RLX alone {} ({})",
            with_ext.resident,
            ms(alone.map(|a| a.resident)),
            ratio(alone.map(|a| a.resident), with_ext.resident)
        );
        if let Some(kernel) = with_ext.kernel {
            println!("      of a resident run with rlx-ext, the op's CPU kernel {kernel:.2} ms (median call), RLX the rest");
        }
        if case.device == "cpu" {
            let numpy_ms = numpy.map(|n| format!("{n:.2} ms")).unwrap_or_else(|| "not run".into());
            println!("      numpy {numpy_ms}: per run {}, resident {}", ratio(numpy, with_ext.per_run), ratio(numpy, with_ext.resident));
        }
        let json = serde_json::json!({
            "device": case.device, "rlx_ext_options": case.options, "frames": case.frames, "n_fft": case.n_fft, "mels": case.mels,
            "rlx_ext_ms": with_ext.per_run, "rlx_alone_ms": alone.map(|a| a.per_run),
            "rlx_ext_resident_ms": with_ext.resident, "rlx_alone_resident_ms": alone.map(|a| a.resident),
            "rlx_ext_cpu_kernel_ms": with_ext.kernel,
            "numpy_ms": numpy,
        });
        println!("{json}");
    }
}
