//! Values between measured FFT lengths: log-log interpolation.

use super::{DeviceProfile, FftCost};

/// `|ln(a / b)|`: how far apart two lengths are.
pub(super) fn log_distance(a: u64, b: u64) -> f64 {
    (a.max(1) as f64 / b.max(1) as f64).ln().abs()
}

/// The value at `n` of measured `(length, value)` points in ascending
/// length: a measured length's own value; between two, the log-log line
/// through them; beyond the ends, that of the nearest two. Where one
/// length is measured or a value is zero, per point from the nearest.
pub(super) fn interpolate(points: &[(u64, f64)], n: u64) -> f64 {
    if let Some((_, v)) = points.iter().find(|(m, _)| *m == n) {
        return *v;
    }
    let last = points.len() - 1;
    let i = points.partition_point(|(m, _)| *m < n).clamp(1.min(last), last);
    let ((n0, a), (n1, b)) = (points[i.saturating_sub(1)], points[i]);
    let (x, x0, x1) = (n.max(1) as f64, n0 as f64, n1 as f64);
    if n0 == n1 || a <= 0.0 || b <= 0.0 {
        let (m, v) = if log_distance(n0, n) <= log_distance(n1, n) { (x0, a) } else { (x1, b) };
        return v * x / m;
    }
    let t = (x / x0).ln() / (x1 / x0).ln();
    (a.ln() + t * (b.ln() - a.ln())).exp()
}

impl DeviceProfile {
    /// The costs at `n_fft`: a measured length as measured, others by
    /// log-log interpolation between the nearest two (per point beyond the ends).
    pub fn fft_at(&self, n_fft: u64) -> FftCost {
        let at = |value: fn(&FftCost) -> f64| interpolate(&self.fft.iter().map(|f| (f.n_fft, value(f))).collect::<Vec<_>>(), n_fft);
        let nearest = self.fft.iter().min_by(|a, b| log_distance(a.n_fft, n_fft).total_cmp(&log_distance(b.n_fft, n_fft))).expect("a checked profile has FFT lengths");
        FftCost {
            n_fft,
            plan: nearest.plan,
            setup_ns: at(|f| f.setup_ns),
            pair_ns: at(|f| f.pair_ns),
            topk_base_ns: at(|f| f.topk_base_ns),
            topk_per_k_ns: at(|f| f.topk_per_k_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::example;

    #[test]
    fn fft_costs_interpolate_between_measured_lengths() {
        let p = example();
        assert_eq!(p.fft_at(256).pair_ns, 1024.0);
        assert!((p.fft_at(128).pair_ns - 512.0).abs() < 1e-9);
        assert!((p.fft_at(4096).pair_ns - 16384.0).abs() < 1e-6, "{}", p.fft_at(4096).pair_ns);
        assert!((p.fft_at(16).pair_ns - 64.0).abs() < 1e-9);
    }
}
