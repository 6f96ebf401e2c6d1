//! RLX's log-mel front end (frames → `Concat(x, Sub(x, x))` → `Fft` →
//! `LogMel`), RLX alone against RLX with rlx-ext installed, same `Session`,
//! same inputs (random frames, rlx-ir's mel filterbank as an input):
//! - CPU, Whisper's geometry: 8 clips of 3,000 frames, n_fft 400, 80 mels;
//!   and the numpy pipeline of `benches/numpy_log_mel.py` on the same shape,
//!   where `python3` with numpy runs;
//! - wgpu (lavapipe here), where a Vulkan device opens: n_fft 512, 1,000
//!   frames, 64 mels, both ways; and one Whisper clip (3,000 × 400, 128
//!   mels) with rlx-ext (RLX alone gives no result within 500 s there).
//!
//! Median of the runs after a warm-up, in ms; one JSON line per measurement.
//!
//!     cargo bench -p rlx-ext --bench log_mel [-- cpu|wgpu]

use rlx_ext::uninstall;
use rlx_ir::op::BinaryOp;
use rlx_ir::{DType, Graph, Op, Shape};
use rlx_runtime::{Device, Session};
#[path = "../../benches/common/timing.rs"]
mod timing;
use timing::median_ms;

/// RLX's native log-mel chain on `[frames, n_fft]`, the filters an input.
fn chain(frames: usize, n_fft: usize, mels: usize) -> Graph {
    let mut g = Graph::new("log_mel");
    let x = g.input("frames", Shape::new(&[frames, n_fft], DType::F32));
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
    frames: usize,
    n_fft: usize,
    mels: usize,
    /// Time RLX alone too (not where it takes minutes).
    alone: bool,
    runs: usize,
}

fn measure(device: Device, case: &Case, with_ext: bool) -> f64 {
    uninstall();
    if with_ext {
        rlx_ext::install(if case.device == "cpu" { "cpu" } else { "wgpu" }).expect("rlx-ext installs");
    }
    let graph = chain(case.frames, case.n_fft, case.mels);
    let frames: Vec<f32> = (0..case.frames * case.n_fft).map(|i| ((i % 977) as f32 * 0.013).sin()).collect();
    let bank = rlx_ir::filterbank::mel_filterbank(16000.0, case.n_fft, case.mels, 0.0, 8000.0);
    let mut compiled = Session::new(device).compile(graph);
    let inputs: [(&str, &[f32]); 2] = [("frames", &frames), ("mel_filters", &bank)];
    median_ms(case.runs, || {
        std::hint::black_box(compiled.run(&inputs));
    })
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

fn main() {
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |d: &str| only.is_empty() || only.iter().any(|o| o == d);
    let opens = |d: Device| std::panic::catch_unwind(|| Session::try_new(d).is_ok()).unwrap_or(false);
    let mut cases = Vec::new();
    if wanted("cpu") {
        cases.push(Case { device: "cpu", frames: 24_000, n_fft: 400, mels: 80, alone: true, runs: 5 });
    }
    if wanted("wgpu") && opens(Device::Gpu) {
        cases.push(Case { device: "wgpu", frames: 1_000, n_fft: 512, mels: 64, alone: true, runs: 5 });
        cases.push(Case { device: "wgpu", frames: 3_000, n_fft: 400, mels: 128, alone: false, runs: 5 });
    } else if wanted("wgpu") {
        eprintln!("SKIPPED wgpu: no Vulkan device opens (install mesa-vulkan-drivers for lavapipe)");
    }
    for case in &cases {
        let device = if case.device == "cpu" { Device::Cpu } else { Device::Gpu };
        let with_ext = measure(device, case, true);
        let alone = case.alone.then(|| measure(device, case, false));
        let numpy = (case.device == "cpu").then(|| numpy_ms(case)).flatten();
        let ratio = |x: Option<f64>| x.map(|x| format!("{:.1}×", x / with_ext)).unwrap_or_else(|| "-".into());
        println!(
            "{:<5} {} frames, n_fft {}, {} mels: RLX + rlx-ext {with_ext:.2} ms; RLX alone {} ({}); numpy {} ({})",
            case.device,
            case.frames,
            case.n_fft,
            case.mels,
            alone.map(|a| format!("{a:.2} ms")).unwrap_or_else(|| "not run (minutes)".into()),
            ratio(alone),
            numpy.map(|n| format!("{n:.2} ms")).unwrap_or_else(|| "not run".into()),
            ratio(numpy),
        );
        let json = serde_json::json!({
            "device": case.device, "frames": case.frames, "n_fft": case.n_fft, "mels": case.mels,
            "rlx_ext_ms": with_ext, "rlx_alone_ms": alone, "numpy_ms": numpy,
        });
        println!("{json}");
    }
}
