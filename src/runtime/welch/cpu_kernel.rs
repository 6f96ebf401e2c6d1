//! The native CPU lowering of the batch plan: FFTs planned once per
//! power-of-two length and process, segments transformed two at a time,
//! batch entries spread over cores, per-thread scratch, top-k by selection,
//! no spectrum materialised. The split plan ([`super::split`]) and the
//! CPU passes ([`super::passes`]) reuse its pieces; [`super::cpu_kernel`]
//! picks between the batch and split plans.

use super::{Geometry, forward_fft, segment, top_k, write_peaks};
use crate::fused::WelchPeaksAttrs;
use crate::lower::power_weight;
use crate::runtime::prefetch;
use crate::runtime::tensor::TensorRef;
use rayon::prelude::*;
use rustfft::num_complex::Complex;
use std::sync::Arc;

/// What one CPU task reuses from item to item: the FFT buffer and its
/// scratch, a PSD row, the top-k scratch.
pub(super) struct Scratch {
    pub(super) buf: Vec<Complex<f32>>,
    pub(super) work: Vec<Complex<f32>>,
    pub(super) psd: Vec<f32>,
    pub(super) keys: Vec<u64>,
    pub(super) peaks: Vec<(usize, f32)>,
}

/// The CPU kernel of one op on one operand: the FFT planned once, the
/// per-bin weights, and the operands.
pub(super) struct CpuRun<'a> {
    attrs: &'a WelchPeaksAttrs,
    g: &'a Geometry,
    input: TensorRef<'a>,
    window: Option<TensorRef<'a>>,
    fft: Arc<dyn rustfft::Fft<f32>>,
    weights: PairWeights,
}

impl<'a> CpuRun<'a> {
    pub(super) fn new(attrs: &'a WelchPeaksAttrs, g: &'a Geometry, input: TensorRef<'a>, window: Option<TensorRef<'a>>) -> Self {
        let fft = forward_fft(attrs.n_fft as usize);
        CpuRun { attrs, g, input, window, fft, weights: pair_weights(attrs, g.bins) }
    }

    pub(super) fn scratch(&self) -> Scratch {
        let n = self.attrs.n_fft as usize;
        let zero = Complex::new(0f32, 0f32);
        Scratch {
            buf: vec![zero; n],
            work: vec![zero; self.fft.get_inplace_scratch_len()],
            psd: vec![0f32; self.g.bins],
            keys: Vec::with_capacity(self.g.bins),
            peaks: Vec::with_capacity((self.attrs.k as usize).min(self.g.bins)),
        }
    }

    /// Add the power of segment pairs `pairs` of batch entry `b` to `psd`.
    pub(super) fn add_pairs(&self, buf: &mut [Complex<f32>], work: &mut [Complex<f32>], b: usize, pairs: std::ops::Range<usize>, psd: &mut [f32]) {
        let (attrs, g, input) = (self.attrs, self.g, self.input);
        let segments = attrs.segments as usize;
        let end = (2 * pairs.end).min(segments);
        for s in pairs.map(|p| 2 * p) {
            load_pair(attrs, g, input, self.window, b, s, buf);
            // Start loading the next pair while this one is transformed:
            // the kernel is bound by reading its input.
            if s + 2 < end {
                prefetch(segment(attrs, input, g.batch, b, s + 2));
                if s + 3 < end {
                    prefetch(segment(attrs, input, g.batch, b, s + 3));
                }
            } else if b + 1 < g.batch {
                prefetch(segment(attrs, input, g.batch, b + 1, 0));
                prefetch(segment(attrs, input, g.batch, b + 1, 1.min(segments - 1)));
            }
            self.fft.process_with_scratch(buf, work);
            add_pair_power(&self.weights, buf, psd);
        }
    }

    /// The peaks of `scratch.psd` into one output row.
    pub(super) fn write_row(&self, scratch: &mut Scratch, out: &mut [f32]) {
        top_k(&scratch.psd, self.attrs.k as usize, &mut scratch.keys, &mut scratch.peaks);
        write_peaks(self.attrs, &scratch.peaks, out);
    }
}

/// Rows `first..` of the `batch` plan's result into `out` (a whole
/// number of rows), a task per batch entry spread over rayon's pool or,
/// with `parallel` false, on the calling thread alone.
pub fn cpu_kernel_rows(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, first: usize, out: &mut [f32], parallel: bool) {
    let run = CpuRun::new(attrs, g, input, window);
    let pairs = (attrs.segments as usize).div_ceil(2);
    let row = |scratch: &mut Scratch, (i, out): (usize, &mut [f32])| {
        let Scratch { buf, work, psd, .. } = scratch;
        psd.fill(0.0);
        run.add_pairs(buf, work, first + i, 0..pairs, psd);
        run.write_row(scratch, out);
    };
    let row_len = 2 * attrs.k as usize;
    // One row runs here: handing it to the pool costs two thread switches
    // and nothing runs beside it.
    if parallel && out.len() > row_len {
        out.par_chunks_mut(row_len).enumerate().for_each_init(|| run.scratch(), row);
    } else {
        let mut scratch = run.scratch();
        out.chunks_mut(row_len).enumerate().for_each(|item| row(&mut scratch, item));
    }
}

/// What a pair's power is weighed by: per bin its power weight
/// ([`power_weight`]) and the ½ of the pair formula; the norm's amplitude
/// factor, applied before squaring.
pub(super) struct PairWeights {
    per_bin: Vec<f32>,
    amplitude: f32,
}

pub(super) fn pair_weights(attrs: &WelchPeaksAttrs, bins: usize) -> PairWeights {
    PairWeights { per_bin: (0..bins).map(|j| (power_weight(attrs, j, bins) * 0.5) as f32).collect(), amplitude: crate::fused::amplitude_scale(attrs.power_scale) }
}

/// Segments `s` and `s + 1` of batch entry `b` (zeros past the last), windowed,
/// as the real and imaginary parts of `buf`, zero-padded to `n_fft`; under
/// `inf_is_nan`, ±∞ loaded as NaN.
pub(super) fn load_pair(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, b: usize, s: usize, buf: &mut [Complex<f32>]) {
    // The rule folded into the load, instantiated for the op's flag, as in
    // the log-mel kernels' loads.
    match attrs.inf_is_nan {
        true => load_pair_as::<true>(attrs, g, input, window, b, s, buf),
        false => load_pair_as::<false>(attrs, g, input, window, b, s, buf),
    }
}

fn load_pair_as<const INF_IS_NAN: bool>(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, b: usize, s: usize, buf: &mut [Complex<f32>]) {
    let len = attrs.frame_len as usize;
    let x = segment(attrs, input, g.batch, b, s);
    let (head, tail) = buf.split_at_mut(len);
    let load = |v: f32| crate::fused::inf_as_nan(INF_IS_NAN, v);
    if s + 1 < attrs.segments as usize {
        let y = segment(attrs, input, g.batch, b, s + 1);
        match window {
            Some(w) => head.iter_mut().zip(x.iter().zip(y)).zip(w.data).for_each(|((d, (x, y)), w)| *d = Complex::new(load(x * w), load(y * w))),
            None => head.iter_mut().zip(x.iter().zip(y)).for_each(|(d, (x, y))| *d = Complex::new(load(*x), load(*y))),
        }
    } else {
        match window {
            Some(w) => head.iter_mut().zip(x).zip(w.data).for_each(|((d, x), w)| *d = Complex::new(load(x * w), 0.0)),
            None => head.iter_mut().zip(x).for_each(|(d, x)| *d = Complex::new(load(*x), 0.0)),
        }
    }
    tail.fill(Complex::new(0.0, 0.0));
}

/// Add one pair's power to `psd`: `|a·Z[j]|² + |a·Z[n−j]|²`, weighted
/// (`psd[0]` gets `2·|a·Z[0]|²`, the same sum at j = 0), `a` the norm's
/// amplitude factor (not multiplied in where it is 1: RLX's default norm).
pub(super) fn add_pair_power(weights: &PairWeights, buf: &[Complex<f32>], psd: &mut [f32]) {
    let a = weights.amplitude;
    match a == 1.0 {
        true => add_weighted(&weights.per_bin, buf, psd, |z| z.norm_sqr()),
        false => add_weighted(&weights.per_bin, buf, psd, |z| (z * a).norm_sqr()),
    }
}

#[inline(always)]
fn add_weighted(weights: &[f32], buf: &[Complex<f32>], psd: &mut [f32], power: impl Fn(Complex<f32>) -> f32) {
    let n = buf.len();
    let bins = psd.len();
    psd[0] += weights[0] * 2.0 * power(buf[0]);
    let mirrored = buf[n + 1 - bins..].iter().rev();
    for ((p, w), (a, b)) in psd[1..].iter_mut().zip(&weights[1..]).zip(buf[1..bins].iter().zip(mirrored)) {
        *p += w * (power(*a) + power(*b));
    }
}
