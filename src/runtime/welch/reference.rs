//! The op's definition in plain code: per segment a full complex FFT, the
//! power of every bin, all bins sorted. What the interpreter runs and every
//! kernel is checked against.

use super::{geometry, output, peak_order, segment, write_peaks};
use crate::fused::WelchPeaksAttrs;
use crate::lower::power_weight;
use crate::runtime::RuntimeError;
use crate::runtime::tensor::Tensor;
use rustfft::num_complex::Complex;

/// Add one segment's power to `psd`, in RLX's order of operations: the
/// transform scaled by the norm's amplitude factor, squared, each term
/// scaled by `1/S` (and doubled) before it is summed.
pub fn accumulate_power(attrs: &WelchPeaksAttrs, psd: &mut [f32], spectrum: &[Complex<f32>]) {
    let bins = psd.len();
    let a = crate::fused::amplitude_scale(attrs.power_scale);
    for (j, (p, x)) in psd.iter_mut().zip(spectrum).enumerate() {
        let x = x * a;
        // The weight in f64 rounded once to f32: 1/S times 1 or 2.
        *p += power_weight(attrs, j, bins) as f32 * (x.re * x.re + x.im * x.im);
    }
}

/// The op's definition: per segment a full complex FFT, all bins sorted.
pub fn reference(attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
    let g = geometry(attrs, input.view(), window.map(Tensor::view))?;
    let n = attrs.n_fft as usize;
    let fft = rustfft::FftPlanner::<f32>::new().plan_fft_forward(n);
    let mut out = output(attrs, &g);
    let row = 2 * attrs.k as usize;
    for b in 0..g.batch {
        let mut psd = vec![0f32; g.bins];
        for s in 0..attrs.segments as usize {
            let mut buf = vec![Complex::new(0f32, 0f32); n];
            for (t, x) in segment(attrs, input.view(), g.batch, b, s).iter().enumerate() {
                let v = x * window.map_or(1.0, |w| w.data[t]);
                buf[t] = Complex::new(v, crate::fused::imaginary_plane(attrs.inf_is_nan, v));
            }
            fft.process(&mut buf);
            accumulate_power(attrs, &mut psd, &buf[..g.bins]);
        }
        let mut peaks: Vec<(usize, f32)> = psd.into_iter().enumerate().collect();
        peaks.sort_by(|a, b| peak_order(*a, *b));
        write_peaks(attrs, &peaks, &mut out.data[b * row..(b + 1) * row]);
    }
    Ok(out)
}
