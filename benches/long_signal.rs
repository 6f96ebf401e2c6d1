//! Long signals: the shapes the batch plan leaves on one worker.
//! 1. One entry of 65,536 segments (n_fft 256, k 16) against 8,192 entries
//!    of 8 (the same bytes), each with the `batch` and `split` plans and the
//!    picker's choice, on the CPU (all cores) and on wgpu (lavapipe here)
//!    where a Vulkan adapter is.
//! 2. One signal of 10^7 samples in the spectrogram form (hop n_fft/2, Hann,
//!    n_fft 256: 78,124 segments) against `scipy.signal.welch` on the same
//!    signal, detrend off (`benches/scipy_welch.py`, when scipy is installed).
//!
//! `cargo bench --bench long_signal`

use rlx_opt::analysis::Target;
use rlx_opt::analysis::picker::pick;
use rlx_opt::analysis::plan::{DeviceLimits, f32_type};
use rlx_opt::fused::{ChainForm, Doubling, InputLayout, OutputLayout, PlanName, WelchPeaksAttrs};
use rlx_opt::runtime::{CpuKernel, FusedKernel, Tensor, welch};
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

const N_FFT: u64 = 256;
const K: u64 = 16;

fn main() {
    let kernels = wgpu_kernels();
    let mut backends: Vec<(&str, Box<dyn FusedKernel>, DeviceLimits, Target)> = vec![("cpu", Box::new(CpuKernel), welch::this_cpu(), Target::Cpu)];
    if let Some((k, limits)) = kernels {
        backends.push(("wgpu", k, limits, Target::Wgpu));
    }
    println!("{:<6} {:<18} {:<16} {:>10}  {:<8}", "device", "shape", "plan", "ms", "picked");
    for (device, kernel, limits, target) in &backends {
        let mut best = Vec::new();
        for (batch, segments) in [(1u64, 65536u64), (8192, 8)] {
            let attrs = WelchPeaksAttrs::rlx(N_FFT, segments, K);
            let shape = [(batch * segments) as usize, N_FFT as usize];
            let x = noise(&shape);
            let picked = pick(&attrs, &f32_type(&shape), *target, limits, None).map(|p| p.plan).ok();
            let mut times = Vec::new();
            for plan in [PlanName::Batch, PlanName::Split] {
                let a = WelchPeaksAttrs { plan: Some(plan), ..attrs.clone() };
                let ms = median_ms(5, || drop(kernel.run(&a, &x, None).unwrap()));
                let mark = if picked == Some(plan) { "yes" } else { "" };
                println!("{device:<6} {:<18} {:<16} {ms:>10.3}  {mark:<8}", format!("{batch} x {segments}"), plan.name());
                times.push((plan, ms));
            }
            let chosen = times.iter().find(|(p, _)| Some(*p) == picked).map_or(f64::NAN, |(_, ms)| *ms);
            best.push(chosen);
        }
        println!("{device}: 1 x 65536 at {:.2}x the time of 8192 x 8 (picked plans; goal ≤ 1.2x)\n", best[0] / best[1]);
    }
    spectrogram_against_scipy();
}

fn wgpu_kernels() -> Option<(Box<dyn FusedKernel>, DeviceLimits)> {
    match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => {
            let limits = k.limits();
            println!("wgpu adapter: {}", k.adapter);
            Some((Box::new(k), limits))
        }
        Err(e) => {
            println!("wgpu: skipped ({e})");
            None
        }
    }
}

/// Uniform noise in [-1, 1), the same for every run.
fn noise(shape: &[usize]) -> Tensor {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    Tensor::new(shape.to_vec(), (0..shape.iter().product()).map(|_| rng.random_range(-1.0f32..1.0)).collect())
}

/// The spectrogram form on one 10^7-sample signal, with the plan the
/// picker names for this machine's CPU, against scipy.
fn spectrogram_against_scipy() {
    const SAMPLES: u64 = 10_000_000;
    let hop = N_FFT / 2;
    let segments = (SAMPLES - N_FFT) / hop + 1;
    let attrs = WelchPeaksAttrs {
        form: ChainForm::SpectrogramTopk,
        input_layout: InputLayout::Signal,
        n_fft: N_FFT,
        frame_len: N_FFT,
        hop: Some(hop),
        segments,
        k: K,
        window: true,
        power_scale: 1.0,
        inf_is_nan: false,
        doubling: Doubling::Rlx,
        output_layout: OutputLayout::Planar,
        lowering: None,
        plan: None,
    };
    let shape = [1, SAMPLES as usize];
    let picked = pick(&attrs, &f32_type(&shape), Target::Cpu, &welch::this_cpu(), None).unwrap();
    let attrs = WelchPeaksAttrs { plan: Some(picked.plan), ..attrs };
    let x = noise(&shape);
    let n = N_FFT as usize;
    let hann = Tensor::new(vec![n], (0..n).map(|t| 0.5 - 0.5 * (std::f32::consts::TAU * t as f32 / n as f32).cos()).collect());
    let fused = median_ms(5, || drop(welch::cpu_kernel(&attrs, x.view(), Some(hann.view())).unwrap()));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/scipy_welch.py");
    let args = ["1", &N_FFT.to_string(), &segments.to_string(), &K.to_string(), "hann", "3"].map(String::from);
    let scipy: Option<f64> = std::process::Command::new("python3")
        .arg(script)
        .args(&args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
    println!("spectrogram of {SAMPLES} samples ({segments} segments, n_fft {N_FFT}, Hann), plan {} ({}):", picked.plan, picked.reason);
    match scipy {
        Some(s) => println!("  fused cpu {fused:.2} ms, scipy.signal.welch {s:.1} ms: {:.0}x (goal ≥ 100x)", s / fused),
        None => println!("  fused cpu {fused:.2} ms; scipy not installed: no comparison"),
    }
}
