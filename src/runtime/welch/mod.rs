//! The fused Welch-peaks op, twice: [`reference`], its definition in plain
//! code (what the interpreter runs), and [`cpu_kernel`], the native CPU
//! lowering (FFTs planned once per power-of-two length and process, batch
//! entries spread over cores, per-thread scratch, top-k by selection, no
//! spectrum materialised).
//! Both share the segment addressing and the peak order, so they can only
//! differ by FFT rounding. One file a job: `reference.rs`, `cpu_kernel.rs`
//! (the batch plan), `split.rs` (the split plan on a CPU), [`passes`] (the
//! GPU plans' launches as CPU passes); here what they share (the FFTs, the
//! segment addressing, the peak order and layout).

mod cpu_kernel;
pub mod passes;
mod reference;
mod split;

pub use cpu_kernel::cpu_kernel_rows;
pub use passes::{partial_psds_into, partial_psds_of_pair_spectra, pair_spectra_into, peaks_from_pair_spectra, peaks_of_partials};
pub use reference::{accumulate_power, reference};
pub use split::{cpu_kernel_split, this_cpu};

use super::RuntimeError;
use super::tensor::{Tensor, TensorRef};
use crate::fused::{InputLayout, OutputLayout, PlanName, WelchPeaksAttrs};
use std::cmp::Ordering;
use crate::runtime::fft::forward_fft;
#[cfg(test)]
use std::sync::Arc;

/// The peak order: NaN first (as `torch.topk`), then larger power, then the lower bin.
pub fn peak_order(a: (usize, f32), b: (usize, f32)) -> Ordering {
    match (a.1.is_nan(), b.1.is_nan()) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (true, true) => a.0.cmp(&b.0),
        (false, false) => b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal).then(a.0.cmp(&b.0)),
    }
}

/// A `u64` whose descending order is [`peak_order`]: the power's bits made
/// monotonic (every NaN above every number), then the complemented bin so
/// that equal powers rank the lower bin first. Integer keys make the top-k
/// selection a few cheap compares per bin.
fn peak_key(bin: usize, power: f32) -> u64 {
    let bits = if power.is_nan() {
        u32::MAX
    } else {
        let b = power.to_bits();
        if b >> 31 == 1 { !b } else { b | 1 << 31 }
    };
    ((bits as u64) << 32) | (!(bin as u32)) as u64
}

/// The `k` first bins of `psd` in [`peak_order`], using `keys` as scratch.
pub fn top_k(psd: &[f32], k: usize, keys: &mut Vec<u64>, top: &mut Vec<(usize, f32)>) {
    keys.clear();
    keys.extend(psd.iter().enumerate().map(|(j, p)| peak_key(j, *p)));
    let k = k.min(keys.len());
    if k == 0 {
        top.clear();
        return;
    }
    if k < keys.len() {
        keys.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
    }
    keys[..k].sort_unstable_by(|a, b| b.cmp(a));
    top.clear();
    top.extend(keys[..k].iter().map(|key| {
        let bin = !(*key as u32) as usize;
        (bin, psd[bin])
    }));
}

/// Geometry of one run of the op on an operand of `input_shape`.
pub struct Geometry {
    pub batch: usize,
    pub batch_shape: Vec<usize>,
    pub bins: usize,
}

/// The geometry of a run, once the operands are checked against the
/// attributes (by the op's one definition, `WelchPeaksAttrs::batch_of`).
pub fn geometry(attrs: &WelchPeaksAttrs, input: TensorRef<'_>, window: Option<TensorRef<'_>>) -> Result<Geometry, RuntimeError> {
    let batch_shape = super::check_operands(attrs, input, window)?;
    Ok(Geometry { batch: batch_shape.iter().product(), batch_shape, bins: attrs.n_fft as usize / 2 + 1 })
}

/// The `frame_len` samples of segment `s` of batch entry `b`.
pub fn segment<'a>(attrs: &WelchPeaksAttrs, input: TensorRef<'a>, batch: usize, b: usize, s: usize) -> &'a [f32] {
    let len = attrs.frame_len as usize;
    let start = match attrs.input_layout {
        InputLayout::Rows => (b * attrs.segments as usize + s) * len,
        InputLayout::Frames => (s * batch + b) * len,
        InputLayout::Signal => b * input.shape[input.shape.len() - 1] + s * attrs.hop.unwrap_or(0) as usize,
    };
    &input.data[start..start + len]
}

/// Write the `k` peaks of `psd` into one output row, in the op's layout.
pub fn write_peaks(attrs: &WelchPeaksAttrs, peaks: &[(usize, f32)], out: &mut [f32]) {
    let k = attrs.k as usize;
    for i in 0..k {
        let (bin, power) = peaks.get(i).map_or((-1.0, f32::NEG_INFINITY), |(b, p)| (*b as f32, *p));
        match attrs.output_layout {
            OutputLayout::Interleaved => {
                out[2 * i] = bin;
                out[2 * i + 1] = power;
            }
            OutputLayout::Planar => {
                out[i] = bin;
                out[k + i] = power;
            }
        }
    }
}

/// The result's shape: the batch dims, then the `2k` peak values.
pub fn output_shape(attrs: &WelchPeaksAttrs, g: &Geometry) -> Vec<usize> {
    let mut shape = g.batch_shape.clone();
    shape.push(2 * attrs.k as usize);
    shape
}

fn output(attrs: &WelchPeaksAttrs, g: &Geometry) -> Tensor {
    Tensor::zeros(output_shape(attrs, g))
}

// The plans' dispatcher lives here, above the batch (`cpu_kernel`) and
// split (`split`) plans, which share pieces one way only (split uses the
// batch plan's rows), so neither imports the other back.
/// The native CPU lowering. Working memory is per thread (one FFT buffer and
/// its scratch, one PSD row), never proportional to the batch.
///
/// Segments go through the FFT two at a time: with `z = x + i·y`,
/// `|X[j]|² + |Y[j]|² = (|Z[j]|² + |Z[n−j]|²) / 2`, and Welch only ever needs
/// that sum. One complex FFT of length n serves two segments and no
/// real-to-complex post-processing is needed; an odd segment out pairs with zeros.
pub fn cpu_kernel(attrs: &WelchPeaksAttrs, input: TensorRef<'_>, window: Option<TensorRef<'_>>) -> Result<Tensor, RuntimeError> {
    let g = geometry(attrs, input, window)?;
    let mut out = output(attrs, &g);
    cpu_kernel_into(attrs, &g, input, window, &mut out.data);
    Ok(out)
}

/// [`cpu_kernel`] into a caller's buffer of `g`'s output length (RLX's
/// arena): the operands checked into `g` by [`geometry`]. Runs the op's
/// `plan`: `split` spreads each entry's segments over rayon's pool, any
/// other plan a task per batch entry.
pub fn cpu_kernel_into(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, out: &mut [f32]) {
    match attrs.plan {
        Some(PlanName::Split) => cpu_kernel_split(attrs, g, input, window, out, &this_cpu()),
        _ => cpu_kernel_rows(attrs, g, input, window, 0, out, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;


    fn attrs(n_fft: u64, segments: u64, k: u64) -> WelchPeaksAttrs {
        WelchPeaksAttrs::rlx(n_fft, segments, k)
    }

    #[test]
    fn power_of_two_plans_are_kept_and_other_lengths_are_not() {
        assert!(Arc::ptr_eq(&forward_fft(1024), &forward_fft(1024)));
        assert!(!Arc::ptr_eq(&forward_fft(1000), &forward_fft(1000)));
        assert!(!Arc::ptr_eq(&forward_fft(1 << 17), &forward_fft(1 << 17)));
        assert_eq!(forward_fft(1024).len(), 1024);
    }

    #[test]
    fn nan_first_then_power_then_lower_bin() {
        let mut v = [(0, 1.0), (1, f32::NAN), (2, 3.0), (3, 3.0), (4, f32::NAN), (5, -1.0)];
        v.sort_by(|a, b| peak_order(*a, *b));
        let bins: Vec<usize> = v.iter().map(|p| p.0).collect();
        assert_eq!(bins, [1, 4, 2, 3, 0, 5]);
    }

    #[test]
    fn streaming_top_k_is_the_sorted_prefix() {
        let psd = [3.0, 1.0, 3.0, f32::NAN, 7.0, 7.0, -2.0, f32::NAN, 0.5, 3.0];
        let mut all: Vec<(usize, f32)> = psd.iter().copied().enumerate().collect();
        all.sort_by(|a, b| peak_order(*a, *b));
        for k in 1..=psd.len() {
            let mut top = Vec::new();
            top_k(&psd, k, &mut Vec::new(), &mut top);
            let got: Vec<usize> = top.iter().map(|p| p.0).collect();
            let want: Vec<usize> = all[..k].iter().map(|p| p.0).collect();
            assert_eq!(got, want, "k = {k}");
        }
    }

    #[test]
    fn exact_ties_go_to_the_lower_bin_in_both_kernels() {
        // Silence: every bin has power 0.
        let a = attrs(8, 2, 3);
        let x = Tensor::zeros(vec![4, 8]);
        for out in [reference(&a, &x, None).unwrap(), cpu_kernel(&a, x.view(), None).unwrap()] {
            assert_eq!(out.data, [0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0]);
        }
    }

    #[test]
    fn surplus_slots_and_nan_inputs_are_defined() {
        // k = 7 > 5 bins: two (-1, -inf) slots.
        let a = attrs(8, 1, 7);
        let x = Tensor::new(vec![1, 8], (0..8).map(|i| i as f32).collect());
        let (r, c) = (reference(&a, &x, None).unwrap(), cpu_kernel(&a, x.view(), None).unwrap());
        assert_eq!(&r.data[10..], [-1.0, f32::NEG_INFINITY, -1.0, f32::NEG_INFINITY]);
        assert_eq!(r.data[..10].iter().step_by(2).collect::<Vec<_>>(), c.data[..10].iter().step_by(2).collect::<Vec<_>>());
        // A NaN sample makes every bin NaN: bins come out in order, powers NaN.
        let mut y = x.clone();
        y.data[3] = f32::NAN;
        for out in [reference(&a, &y, None).unwrap(), cpu_kernel(&a, y.view(), None).unwrap()] {
            let bins: Vec<f32> = out.data.iter().step_by(2).copied().collect();
            assert_eq!(bins, [0.0, 1.0, 2.0, 3.0, 4.0, -1.0, -1.0]);
            assert!(out.data[1].is_nan());
        }
    }
}
