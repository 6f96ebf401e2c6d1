//! The fused log-mel CPU kernel against its floor, in one run: the kernel
//! on Whisper's geometry (8 clips of 3,000 frames, n_fft 400, 80 mels, by
//! default), a bare batched FFT of the same frames two to a complex FFT
//! (what any FFT-based method pays), and the numpy pipeline of
//! `benches/numpy_log_mel.py` where python3 with numpy runs.
//!
//! `cargo bench --bench log_mel_cpu` (optionally `-- FRAMES N_FFT MELS`;
//! `-- kernel` times the kernel alone, for a profiler)

use rayon::prelude::*;
use rlx_opt::fused::LogMelAttrs;
use rlx_opt::runtime::{Tensor, log_mel};
use rustfft::num_complex::Complex;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (frames, n_fft, mels) = match args.as_slice() {
        [f, n, m] => (*f, *n, *m),
        _ => (24_000, 400, 80),
    };
    let attrs = LogMelAttrs::frames(n_fft as u64, mels as u64);
    let input = Tensor::new(vec![frames, n_fft], (0..frames * n_fft).map(|i| ((i % 977) as f32 * 0.013).sin()).collect());
    let filters = rlx_opt::runtime::calibrate::triangles(mels, n_fft / 2 + 1);
    let kernel_only = std::env::args().any(|a| a == "kernel");
    let fused = median_ms(if kernel_only { 50 } else { 7 }, || {
        std::hint::black_box(log_mel::cpu_kernel(&attrs, input.view(), filters.view(), None).unwrap());
    });
    // RLX's `Sub(x, x)` plane (`inf_is_nan`): every frame's samples
    // checked for ±∞ once loaded.
    let sub_plane = LogMelAttrs { inf_is_nan: true, ..attrs.clone() };
    let fused_sub = median_ms(if kernel_only { 50 } else { 7 }, || {
        std::hint::black_box(log_mel::cpu_kernel(&sub_plane, input.view(), filters.view(), None).unwrap());
    });
    if kernel_only {
        println!("{frames} frames, n_fft {n_fft}, {mels} mels: fused kernel {fused:.2} ms ({fused_sub:.2} ms with inf_is_nan)");
        return;
    }
    let fft = rustfft::FftPlanner::<f32>::new().plan_fft_forward(n_fft);
    let mut buf = vec![Complex::new(0f32, 0f32); frames.div_ceil(2) * n_fft];
    let floor = median_ms(7, || {
        buf.par_chunks_mut(32 * n_fft).enumerate().for_each(|(b, chunk)| {
            for (p, z) in chunk.chunks_mut(n_fft).enumerate() {
                let row = 2 * (32 * b + p);
                let x = &input.data[row * n_fft..(row + 1) * n_fft];
                match input.data.get((row + 1) * n_fft..(row + 2) * n_fft) {
                    Some(y) => z.iter_mut().zip(x.iter().zip(y)).for_each(|(z, (x, y))| *z = Complex::new(*x, *y)),
                    None => z.iter_mut().zip(x).for_each(|(z, x)| *z = Complex::new(*x, 0.0)),
                }
            }
            fft.process(chunk);
        });
    });
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/numpy_log_mel.py");
    let numpy = std::process::Command::new("python3")
        .args([script, "--frames", &frames.to_string(), "--n-fft", &n_fft.to_string(), "--mels", &mels.to_string()])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|j| j["median_ms"].as_f64());
    println!("{frames} frames, n_fft {n_fft}, {mels} mels, {} threads", rayon::current_num_threads());
    println!("fused kernel {fused:.2} ms ({fused_sub:.2} ms with inf_is_nan, RLX's Sub(x, x) plane); batched FFT floor {floor:.2} ms ({:.0}% of the kernel)", 100.0 * floor / fused);
    match numpy {
        Some(n) => println!("numpy {n:.2} ms: the kernel is {:.1}× faster", n / fused),
        None => println!("numpy: not run (python3 with numpy not found)"),
    }
}
