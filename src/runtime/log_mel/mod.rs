//! The fused log-mel op, twice: [`reference`], its definition in plain code
//! (one full complex FFT per frame, what the interpreter's `Reference`
//! runs), and [`cpu_kernel`], the native CPU lowering (one real-input FFT
//! per frame, frames spread over cores, per-thread scratch, each filter's
//! non-zero band found once per op, nothing but the result written).
//! Both share what this file holds: the operand checks, the frame
//! addressing, the mel bands and the log compression, so they can only
//! differ by FFT rounding.

mod cpu_kernel;
mod reference;

pub use cpu_kernel::{cpu_kernel, cpu_kernel_into, cpu_kernel_rows};
pub use reference::reference;

use super::RuntimeError;
use super::tensor::TensorRef;
use crate::fused::{LogMelAttrs, LogMelInput};
pub use crate::fused::log_mel::{DYNAMIC_RANGE, LOG_FLOOR};

/// Where an op's frames are and where its result goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// The result's shape: the leading dims, then `n_mels`.
    pub out_shape: Vec<usize>,
    /// Frames, the result's rows.
    pub rows: usize,
    /// Signal layout: batch entries per frame index, and the signal's length.
    pub batch: usize,
    pub signal_len: usize,
}

/// The operands fit the attributes (the input by `LogMelAttrs::lead_of`,
/// the filters `[n_mels, bins]`, the window `[frame_len]`): every kernel
/// checks this before it reads a value.
pub fn geometry(attrs: &LogMelAttrs, input: TensorRef<'_>, filters: TensorRef<'_>, window: Option<TensorRef<'_>>) -> Result<Geometry, RuntimeError> {
    let operands = |m: String| RuntimeError::Operands(m);
    // check() holds the kernels' n_fft bound too.
    attrs.check().map_err(|e| operands(e.to_string()))?;
    let ty = crate::ir::TensorType::new(&input.shape.iter().map(|d| *d as u64).collect::<Vec<_>>(), crate::ir::DType::F32);
    let lead = attrs.lead_of(&ty).map_err(|e| operands(e.to_string()))?;
    let lead: Vec<usize> = lead.iter().map(|d| d.as_static().unwrap_or(0) as usize).collect();
    if filters.shape != [attrs.n_mels as usize, attrs.bins() as usize] {
        return Err(operands(format!("the filters are {:?}, the op needs [{}, {}]", filters.shape, attrs.n_mels, attrs.bins())));
    }
    match (attrs.window, window) {
        (true, Some(w)) if w.len() as u64 == attrs.frame_len => {}
        (false, None) => {}
        (true, Some(w)) => return Err(operands(format!("the window has {} values, the op needs {}", w.len(), attrs.frame_len))),
        (true, None) => return Err(operands("the op takes a window and none was given".into())),
        (false, Some(_)) => return Err(operands("the op takes no window but was given one".into())),
    }
    let rows: usize = lead.iter().product();
    let signal_len = *input.shape.last().unwrap_or(&0);
    let batch = match attrs.input_layout {
        LogMelInput::Frames => rows,
        LogMelInput::Signal => lead[1..].iter().product(),
    };
    let mut out_shape = lead;
    out_shape.push(attrs.n_mels as usize);
    Ok(Geometry { out_shape, rows, batch, signal_len })
}

/// The `frame_len` samples of result row `row`.
pub fn frame<'a>(attrs: &LogMelAttrs, g: &Geometry, input: TensorRef<'a>, row: usize) -> &'a [f32] {
    let len = attrs.frame_len as usize;
    let start = match attrs.input_layout {
        LogMelInput::Frames => row * len,
        // Rows run frame-major ([frames, batch…]): row = s·batch + b.
        LogMelInput::Signal => (row % g.batch) * g.signal_len + (row / g.batch) * attrs.hop.unwrap_or(0) as usize,
    };
    &input.data[start..start + len]
}

/// Each filter's band: the bins from its first to its last non-zero weight
/// (empty for an all-zero filter), as RLX's `MelBands::from_dense` finds
/// them. Found once per op; the per-frame sums then read only the bands.
pub fn mel_bands(filters: TensorRef<'_>, bins: usize) -> Vec<std::ops::Range<usize>> {
    filters
        .data
        .chunks(bins)
        .map(|row| match row.iter().position(|w| *w != 0.0) {
            Some(first) => first..bins - row.iter().rev().position(|w| *w != 0.0).unwrap_or(0),
            None => 0..0,
        })
        .collect()
}

/// `mel[m] = Σ_k power[k] · filters[m][k]` over each filter's band, in bin order.
pub fn apply_bands(bands: &[std::ops::Range<usize>], filters: &[f32], bins: usize, power: &[f32], mel: &mut [f32]) {
    for (m, (band, out)) in bands.iter().zip(mel.iter_mut()).enumerate() {
        let weights = &filters[m * bins + band.start..m * bins + band.end];
        *out = weights.iter().zip(&power[band.clone()]).fold(0.0, |acc, (w, p)| acc + p * w);
    }
}

/// RLX's `compress_log_mel` on one frame's mel values, in place:
/// `log10(max(v, 1e-10))`, floored at the frame's largest − 8, then `(v + 4) / 4`.
pub fn compress(mel: &mut [f32]) {
    let mut top = f32::NEG_INFINITY;
    for v in mel.iter_mut() {
        *v = v.max(LOG_FLOOR).log10();
        top = top.max(*v);
    }
    let floor = top - DYNAMIC_RANGE;
    for v in mel.iter_mut() {
        *v = (v.max(floor) + 4.0) / 4.0;
    }
}

/// `log10(x)` for a finite, normal `x > 0`, within a few f32 ulps of libm's
/// (checked over every power of two and a dense sweep in the tests): `x =
/// m·2^e` with `m` in [√½, √2), `ln m = 2·atanh(s)`, `s = (m−1)/(m+1)`, by
/// its series to s⁹ (|s| ≤ 0.172: the next term is below 1e-9). Branch-free,
/// so a loop over a frame's values vectorises.
pub fn log10_finite(x: f32) -> f32 {
    const LN2: f32 = std::f32::consts::LN_2;
    const LOG10_E: f32 = std::f32::consts::LOG10_E;
    let bits = x.to_bits();
    // m in [1, 2), then halved (and e raised) when above √2.
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let high = m > std::f32::consts::SQRT_2;
    let m = if high { m * 0.5 } else { m };
    let e = ((bits >> 23) & 0xff) as i32 - 127 + high as i32;
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let series = 1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0))));
    let ln_m = 2.0 * s * series;
    (e as f32 * LN2 + ln_m) * LOG10_E
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Tensor;

    #[test]
    fn bands_span_first_to_last_non_zero() {
        let filters = Tensor::new(vec![3, 5], vec![0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0]);
        assert_eq!(mel_bands(filters.view(), 5), vec![1..4, 0..0, 0..5]);
    }

    /// The fast log10 agrees with libm's over the range a log-mel sees (the
    /// 1e-10 floor up to 1e38), within 8e-6 absolute (2 ulps of 38): far
    /// below the 1e-4 the op's results are held to.
    #[test]
    // 1.4142 and 1.4143 bracket √2 on purpose: the mantissa's halving point.
    #[allow(clippy::approx_constant)]
    fn the_fast_log10_agrees_with_libm() {
        let mut worst = 0f32;
        let mut x = 1e-10f32;
        while x < 1e38 {
            for y in [x, x * 1.0001, x * std::f32::consts::SQRT_2, x * 1.4142, x * 1.4143, x * 1.9999] {
                worst = worst.max((log10_finite(y) - y.log10()).abs());
            }
            x *= 1.013;
        }
        assert!(worst < 8e-6, "the fast log10 is off by {worst}");
        for e in -33..38 {
            let x = 10f32.powi(e);
            assert!((log10_finite(x) - x.log10()).abs() < 8e-6, "log10(1e{e}) = {}", log10_finite(x));
        }
    }

    #[test]
    fn compression_floors_each_frame_at_its_max_less_eight() {
        let mut mel = [1e4, 1e-9, 0.0, 1.0];
        compress(&mut mel);
        // log10: 4, −9 → floored to −4, 0 (1e-10 → −10 → −4), 0.
        assert_eq!(mel, [2.0, 0.0, 0.0, 1.0]);
    }
}
