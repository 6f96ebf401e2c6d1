//! The fused Welch-peaks CPU kernel against what it replaces, in one run:
//! the unfused graph in the reference interpreter, a bare batched real FFT
//! of the same segments (the floor for any FFT-based method), and
//! scipy.signal.welch + top-k (`benches/scipy_welch.py`, when scipy is
//! installed). 8 segments per signal, k = 16.
//!
//! The fused kernel twice: as for a constant zero plane, and as for RLX's
//! `Sub(x, x)` plane (`inf_is_nan`: every sample loaded through the ±∞
//! rule), `fused_ms` and `sub_ms`.
//!
//! `cargo bench --bench welch_cpu` (optionally `-- BATCH N_FFT` for one case).

use rayon::prelude::*;
use rlx_opt::fused::WelchPeaksAttrs;
use rlx_opt::runtime::{Reference, Tensor, random_inputs, run, welch};
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

const SEGMENTS: usize = 8;
const K: usize = 16;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let cases: Vec<(usize, usize)> = match args.as_slice() {
        [b, n] => vec![(*b, *n)],
        _ => [64, 1024, 8192].iter().flat_map(|b| [128, 256, 1024].map(|n| (*b, n))).collect(),
    };
    println!("{:>6} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9} {:>9}", "batch", "n_fft", "fused_ms", "sub_ms", "fft_ms", "interp_ms", "scipy_ms", "fft/fused", "int/fused", "x_scipy");
    for (batch, n) in cases {
        let graph = rlx_opt::format::rlx_text::parse(&rlx_opt::testgen::welch_chains(1, (batch * SEGMENTS) as u64, n as u64, SEGMENTS as u64, K as u64)).unwrap();
        let inputs = random_inputs(&graph, 1).unwrap();
        let segs = inputs.values().next().unwrap();
        let attrs = WelchPeaksAttrs::rlx(n as u64, SEGMENTS as u64, K as u64);
        let fused = median_ms(7, || drop(welch::cpu_kernel(&attrs, segs.view(), None).unwrap()));
        let sub_plane = WelchPeaksAttrs { inf_is_nan: true, ..attrs.clone() };
        let fused_sub = median_ms(7, || drop(welch::cpu_kernel(&sub_plane, segs.view(), None).unwrap()));
        // The spectra (67 MB at batch 8192, n_fft 256) and the plan made
        // once, outside the timed calls: the fused kernel allocates neither.
        let plan = realfft::RealFftPlanner::<f32>::new().plan_fft_forward(n);
        let mut spectra = vec![rustfft::num_complex::Complex::new(0f32, 0f32); segs.shape[0] * (n / 2 + 1)];
        let fft = median_ms(7, || bare_fft(plan.as_ref(), segs, n, &mut spectra));
        let interp = median_ms(if batch * n > 1 << 20 { 1 } else { 3 }, || drop(run(&graph, &inputs, &Reference).unwrap()));
        let scipy = scipy_ms(batch, n);
        println!(
            "{batch:>6} {n:>6} {fused:>12.3} {fused_sub:>12.3} {fft:>12.3} {interp:>12.3} {:>12} {:>9.2} {:>9.1} {:>9}",
            scipy.map_or("-".into(), |s| format!("{s:.3}")),
            fft / fused,
            interp / fused,
            scipy.map_or("-".into(), |s| format!("{:.1}", s / fused)),
        );
    }
}

/// Every segment's real FFT, in parallel, spectra written out to `spectra`
/// (allocated by the caller): what any FFT-based Welch has to do at least.
fn bare_fft(plan: &dyn realfft::RealToComplex<f32>, segs: &Tensor, n: usize, spectra: &mut [rustfft::num_complex::Complex<f32>]) {
    spectra.par_chunks_mut(n / 2 + 1).zip(segs.data.par_chunks(n)).for_each_init(
        || (plan.make_input_vec(), plan.make_scratch_vec()),
        |(input, scratch), (out, seg)| {
            input.copy_from_slice(seg);
            plan.process_with_scratch(input, out, scratch).unwrap();
        },
    );
    std::hint::black_box(&spectra);
}

/// scipy's time for the same shape, from `benches/scipy_welch.py`; `None` without scipy.
fn scipy_ms(batch: usize, n: usize) -> Option<f64> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/scipy_welch.py");
    let out = std::process::Command::new("python3").args([script, &batch.to_string(), &n.to_string(), &SEGMENTS.to_string(), &K.to_string()]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}
