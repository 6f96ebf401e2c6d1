//! The CPU kernels' FFT front end, shared by both fused ops: rustfft plans
//! of any length (rustfft picks mixed-radix, Rader or Bluestein itself),
//! and realfft's real-input plans on top of them.

use std::sync::{Arc, LazyLock, Mutex};

/// The forward FFT of length `n`. Planning computes every twiddle (13 µs
/// at n_fft 1024, 50 µs at 4096 here: most of a one-entry call), so the
/// plans of power-of-two lengths up to [`MAX_N_FFT`](crate::analysis::plan::MAX_N_FFT)
/// are kept for the process (17 lengths at most: a few MiB of twiddles);
/// any other length is planned per call, so no graph can grow the cache.
pub fn forward_fft(n: usize) -> Arc<dyn rustfft::Fft<f32>> {
    static PLANNER: LazyLock<Mutex<rustfft::FftPlanner<f32>>> = LazyLock::new(|| Mutex::new(rustfft::FftPlanner::new()));
    if n.is_power_of_two() && n as u64 <= crate::analysis::plan::MAX_N_FFT {
        // A planner a panic left poisoned still holds only whole plans.
        PLANNER.lock().unwrap_or_else(|e| e.into_inner()).plan_fft_forward(n)
    } else {
        rustfft::FftPlanner::new().plan_fft_forward(n)
    }
}


/// The real-input forward FFT of length `n` (`n/2 + 1` bins out), on
/// rustfft's plans; planned per call, as non-cached lengths are.
pub fn forward_real_fft(n: usize) -> Arc<dyn realfft::RealToComplex<f32>> {
    realfft::RealFftPlanner::<f32>::new().plan_fft_forward(n)
}
