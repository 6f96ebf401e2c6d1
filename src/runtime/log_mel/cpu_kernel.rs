//! The native CPU lowering of the fused log-mel op: one real-input FFT per
//! frame (a half-length complex FFT of its even and odd samples, a group of
//! frames per rustfft call; never two frames in one transform, which leaks
//! the louder one's rounding into a quiet neighbour's log), and the
//! epilogue (power, mel bands, log compression) on [`LANES`] frames at once,
//! one frame per SIMD lane (the spectra transposed bin-major by 8×8 blocks,
//! so even the split into the one-sided power is lane-wide): each band's
//! sum runs in bin order per frame, as RLX's does, while the lanes hide its
//! latency. The split, transposed, took half the kernel's time one frame
//! at a time (12.6 ms → 8.0 ms for Whisper's 24,000 frames here). Groups of frames spread over
//! rayon's pool with per-thread scratch; each filter's band is found once
//! per op; nothing but the `[rows, n_mels]` result is written. Built twice,
//! for the baseline CPU and for AVX2+FMA, picked at run time.

use super::{Geometry, LOG_FLOOR, frame, geometry, log10_finite, mel_bands};
use crate::fused::LogMelAttrs;
use crate::fused::log_mel::DYNAMIC_RANGE;
use crate::runtime::{RuntimeError, Tensor, TensorRef};
use rayon::prelude::*;
use rustfft::num_complex::Complex;

/// Frames whose epilogue runs together, one per lane (the device model
/// prices the kernel by these groups).
const LANES: usize = crate::analysis::plan::CPU_FRAMES_PER_GROUP as usize;

/// Groups of [`LANES`] frames one task takes at most: enough to amortise the
/// task, few enough that every core gets some of a short clip.
const GROUPS_PER_TASK: usize = 8;

pub fn cpu_kernel(attrs: &LogMelAttrs, input: TensorRef<'_>, filters: TensorRef<'_>, window: Option<TensorRef<'_>>) -> Result<Tensor, RuntimeError> {
    let g = geometry(attrs, input, filters, window)?;
    let mut out = Tensor::zeros(g.out_shape.clone());
    cpu_kernel_into(attrs, &g, input, filters, window, &mut out.data);
    Ok(out)
}

/// [`cpu_kernel`] into `out` (`g.rows · n_mels` values), for operands
/// [`geometry`] accepted as `g`: what a runtime that owns the output (RLX's)
/// calls, with no copy.
pub fn cpu_kernel_into(attrs: &LogMelAttrs, g: &Geometry, input: TensorRef<'_>, filters: TensorRef<'_>, window: Option<TensorRef<'_>>, out: &mut [f32]) {
    debug_assert_eq!(out.len(), g.rows * attrs.n_mels as usize, "the caller sizes the output by the geometry");
    cpu_kernel_rows(attrs, g, input, filters, window, 0, out, true)
}

/// Rows `first..` of [`cpu_kernel_into`]'s result, as many as `out` holds
/// (whole rows), on rayon's pool if `parallel`, else on this thread: so a
/// caller outside the pool (RLX's graph thread) can take a share of the
/// rows while the pool runs the rest.
#[allow(clippy::too_many_arguments)]
pub fn cpu_kernel_rows(attrs: &LogMelAttrs, g: &Geometry, input: TensorRef<'_>, filters: TensorRef<'_>, window: Option<TensorRef<'_>>, first: usize, out: &mut [f32], parallel: bool) {
    let mels = attrs.n_mels as usize;
    let rows = out.len() / mels;
    debug_assert!(first + rows <= g.rows && out.len().is_multiple_of(mels), "whole rows of the result");
    let run = Run::new(attrs, g, input, filters, window);
    let groups = rows.div_ceil(LANES);
    let task = |scratch: &mut Scratch, (task, out): (usize, &mut [f32]), rows_per_task: usize| {
        for (i, group) in out.chunks_mut(LANES * mels).enumerate() {
            run.group(scratch, first + task * rows_per_task + i * LANES, group);
        }
    };
    if parallel && groups > 1 {
        let rows_per_task = LANES * groups.div_ceil(rayon::current_num_threads()).clamp(1, GROUPS_PER_TASK);
        out.par_chunks_mut(rows_per_task * mels).enumerate().for_each_init(|| run.scratch(), |scratch, item| task(scratch, item, rows_per_task));
    } else {
        task(&mut run.scratch(), (0, out), rows);
    }
}

/// One op's run: the FFT planned once, the bands packed once, the operands.
struct Run<'a> {
    attrs: &'a LogMelAttrs,
    g: &'a Geometry,
    input: TensorRef<'a>,
    window: Option<TensorRef<'a>>,
    transform: Transform,
    bands: Bands,
}

/// How a frame becomes its one-sided spectrum.
enum Transform {
    /// Even n_fft: the frame's even and odd samples as the real and
    /// imaginary parts of a complex FFT of n_fft/2, a group's frames in one
    /// in-place rustfft call, split here into the one-sided power
    /// (`X[k] = E[k] + W^k·O[k]`, `W^k` from `twiddles`). What realfft does
    /// per frame, out of place; batched and fused with the power it took
    /// half the time. Each frame still has a transform of its own.
    Packed { fft: std::sync::Arc<dyn rustfft::Fft<f32>>, twiddles: Vec<Complex<f32>> },
    /// Odd n_fft: realfft, a frame at a time.
    Real(std::sync::Arc<dyn realfft::RealToComplex<f32>>),
}

/// Each filter's band and its weights, packed: filter m's weights for bins
/// `start[m]..start[m] + len[m]` at `weights[offset[m]..]`.
struct Bands {
    start: Vec<usize>,
    len: Vec<usize>,
    offset: Vec<usize>,
    weights: Vec<f32>,
}

impl Bands {
    fn of(filters: TensorRef<'_>, bins: usize) -> Bands {
        let ranges = mel_bands(filters, bins);
        let mut b = Bands { start: Vec::new(), len: Vec::new(), offset: Vec::new(), weights: Vec::new() };
        for (m, r) in ranges.iter().enumerate() {
            b.start.push(r.start);
            b.len.push(r.len());
            b.offset.push(b.weights.len());
            b.weights.extend_from_slice(&filters.data[m * bins + r.start..m * bins + r.end]);
        }
        b
    }
}

/// What one task reuses from group to group.
struct Scratch {
    /// `Real`: one frame; `Packed`: unused.
    frame: Vec<f32>,
    /// `Real`: one frame's spectrum; `Packed`: the group's packed frames, in place.
    spectrum: Vec<Complex<f32>>,
    work: Vec<Complex<f32>>,
    /// `Packed`: the group's spectra transposed, bin-major (bin k of lane l
    /// at `[k][l]`); `Real`: unused.
    re: Vec<[f32; LANES]>,
    im: Vec<[f32; LANES]>,
    /// The group's power, bin-major: bin k of lane l at `k·LANES + l`.
    power: Vec<f32>,
    /// The group's log mel values, filter-major.
    logs: Vec<[f32; LANES]>,
}

impl<'a> Run<'a> {
    fn new(attrs: &'a LogMelAttrs, g: &'a Geometry, input: TensorRef<'a>, filters: TensorRef<'a>, window: Option<TensorRef<'a>>) -> Self {
        let n = attrs.n_fft as usize;
        let transform = if n.is_multiple_of(2) {
            let twiddles = (0..=n / 2).map(|k| Complex::from_polar(1.0, -std::f64::consts::TAU * k as f64 / n as f64)).map(|w| Complex::new(w.re as f32, w.im as f32)).collect();
            Transform::Packed { fft: crate::runtime::fft::forward_fft(n / 2), twiddles }
        } else {
            Transform::Real(crate::runtime::fft::forward_real_fft(n))
        };
        let bands = Bands::of(filters, attrs.bins() as usize);
        Run { attrs, g, input, window, transform, bands }
    }

    fn scratch(&self) -> Scratch {
        let bins = self.attrs.bins() as usize;
        let (frame, spectrum, work) = match &self.transform {
            Transform::Packed { fft, .. } => (Vec::new(), vec![Complex::new(0.0, 0.0); fft.len() * LANES], vec![Complex::new(0.0, 0.0); fft.get_inplace_scratch_len()]),
            Transform::Real(fft) => (fft.make_input_vec(), fft.make_output_vec(), fft.make_scratch_vec()),
        };
        let half = match &self.transform {
            Transform::Packed { fft, .. } => fft.len(),
            Transform::Real(_) => 0,
        };
        Scratch { frame, spectrum, work, re: vec![[0.0; LANES]; half], im: vec![[0.0; LANES]; half], power: vec![0f32; bins * LANES], logs: vec![[0f32; LANES]; self.attrs.n_mels as usize] }
    }

    /// Rows `first..` (up to [`LANES`] of them, as many as `out` holds) into `out`.
    fn group(&self, s: &mut Scratch, first: usize, out: &mut [f32]) {
        let mels = self.attrs.n_mels as usize;
        let rows = out.len() / mels;
        // The norm's factor on each amplitude, applied before squaring,
        // with the transform's scale undone (`LogMelAttrs::transform_scale`).
        let amplitude = self.attrs.kernel_amplitude();
        // Lanes past the last row repeat it: their results are not written.
        let row = |lane: usize| first + lane.min(rows - 1);
        match &self.transform {
            Transform::Packed { fft, twiddles } => {
                let half = fft.len();
                for (lane, z) in s.spectrum.chunks_exact_mut(half).enumerate() {
                    self.pack(row(lane), z);
                }
                // The next group's frames start loading while this one
                // is transformed and finished: 5.6 → 5.2 ms at Whisper's
                // shape here (the odd-length path, bound by its per-frame
                // transforms, gained nothing measurable).
                self.prefetch_group(first + LANES);
                fft.process_with_scratch(&mut s.spectrum, &mut s.work);
                let lanes = [&mut s.re[..], &mut s.im[..]];
                finish(Finish::Packed { spectrum: &s.spectrum, twiddles, amplitude, lanes }, &self.bands, &mut s.power, &mut s.logs, out);
            }
            Transform::Real(fft) => {
                for lane in 0..LANES {
                    self.transform(fft.as_ref(), s, row(lane));
                    for (k, z) in s.spectrum.iter().enumerate() {
                        s.power[k * LANES + lane] = (z * amplitude).norm_sqr();
                    }
                }
                finish(Finish::Power, &self.bands, &mut s.power, &mut s.logs, out);
            }
        }
    }

    /// Start loading the frames of the group from row `first` (those of
    /// the op's rows), while this group is transformed and finished.
    fn prefetch_group(&self, first: usize) {
        for row in first..(first + LANES).min(self.g.rows) {
            crate::runtime::prefetch(frame(self.attrs, self.g, self.input, row));
        }
    }

    /// Row `row`'s frame, windowed and zero-padded to n_fft, as `z[j] =
    /// (x[2j], x[2j+1])`; under `inf_is_nan`, ±∞ loaded as NaN.
    fn pack(&self, row: usize, z: &mut [Complex<f32>]) {
        // The rule folded into the load, instantiated for the op's flag (a
        // pass of its own after the load cost 15% of the kernel at
        // Whisper's shape).
        match self.attrs.inf_is_nan {
            true => self.pack_as::<true>(row, z),
            false => self.pack_as::<false>(row, z),
        }
    }

    fn pack_as<const INF_IS_NAN: bool>(&self, row: usize, z: &mut [Complex<f32>]) {
        let x = frame(self.attrs, self.g, self.input, row);
        // Loaded at the transform's scale (`LogMelAttrs::transform_scale`).
        let scale = self.attrs.transform_scale();
        let load = |x: f32, w: f32| crate::fused::inf_as_nan(INF_IS_NAN, x * w) * scale;
        let sample = |t: usize| x.get(t).map_or(0.0, |x| load(*x, self.window.map_or(1.0, |w| w.data[t])));
        let whole = x.len() / 2;
        match self.window {
            Some(w) => z[..whole].iter_mut().zip(x.chunks_exact(2).zip(w.data.chunks_exact(2))).for_each(|(d, (x, w))| *d = Complex::new(load(x[0], w[0]), load(x[1], w[1]))),
            None => z[..whole].iter_mut().zip(x.chunks_exact(2)).for_each(|(d, x)| *d = Complex::new(load(x[0], 1.0), load(x[1], 1.0))),
        }
        // An odd frame length leaves one sample for the next slot; the rest is padding.
        for (j, d) in z.iter_mut().enumerate().skip(whole) {
            *d = Complex::new(sample(2 * j), sample(2 * j + 1));
        }
    }

    /// Row `row`'s frame, windowed and zero-padded, through realfft into `s.spectrum`.
    fn transform(&self, fft: &dyn realfft::RealToComplex<f32>, s: &mut Scratch, row: usize) {
        let len = self.attrs.frame_len as usize;
        let x = frame(self.attrs, self.g, self.input, row);
        let (head, tail) = s.frame.split_at_mut(len);
        let scale = self.attrs.transform_scale();
        match self.attrs.inf_is_nan {
            true => load_as::<true>(x, self.window, scale, head),
            false => load_as::<false>(x, self.window, scale, head),
        }
        tail.fill(0.0);
        // The lengths are the plan's own (make_*_vec): the FFT cannot refuse them.
        fft.process_with_scratch(&mut s.frame, &mut s.spectrum, &mut s.work).expect("buffers sized by the plan");
    }
}

/// A frame's samples `x`, windowed, at the transform's `scale`, into
/// `head`; under `INF_IS_NAN` (the op's flag, instantiated for it as in
/// [`Run::pack_as`]), ±∞ loaded as NaN.
fn load_as<const INF_IS_NAN: bool>(x: &[f32], window: Option<TensorRef<'_>>, scale: f32, head: &mut [f32]) {
    let load = |v: f32| crate::fused::inf_as_nan(INF_IS_NAN, v) * scale;
    match window {
        Some(w) => head.iter_mut().zip(x).zip(w.data).for_each(|((d, x), w)| *d = load(x * w)),
        None => head.iter_mut().zip(x).for_each(|(d, x)| *d = load(*x)),
    }
}

/// What is left of a group once its transforms ran.
enum Finish<'s> {
    /// The packed half-length spectra, lane after lane, still to split
    /// into the one-sided power; `lanes` is scratch for them transposed.
    Packed { spectrum: &'s [Complex<f32>], twiddles: &'s [Complex<f32>], amplitude: f32, lanes: [&'s mut [[f32; LANES]]; 2] },
    /// The power is already in place.
    Power,
}

/// The group's power (split from the packed spectra where needed), its
/// mel bands and RLX's compression into `out` (row-major, as many rows as
/// it holds), on the widest SIMD this CPU has.
fn finish(what: Finish<'_>, bands: &Bands, power: &mut [f32], logs: &mut [[f32; LANES]], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA, checked just above.
        return unsafe { finish_avx2(what, bands, power, logs, out) };
    }
    finish_lanes(what, bands, power, logs, out, transpose_lanes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn finish_avx2(what: Finish<'_>, bands: &Bands, power: &mut [f32], logs: &mut [[f32; LANES]], out: &mut [f32]) {
    // A closure in a `target_feature` function has its features: the call is safe.
    finish_lanes(what, bands, power, logs, out, |spectrum, re, im| transpose_avx2(spectrum, re, im))
}

/// [`finish`] for one instruction set (inlined into each instance), with
/// its way of transposing the spectra.
#[inline(always)]
fn finish_lanes(what: Finish<'_>, bands: &Bands, power: &mut [f32], logs: &mut [[f32; LANES]], out: &mut [f32], transpose: impl FnOnce(&[Complex<f32>], &mut [[f32; LANES]], &mut [[f32; LANES]])) {
    if let Finish::Packed { spectrum, twiddles, amplitude, lanes: [re, im] } = what {
        transpose(spectrum, re, im);
        split_power(twiddles, amplitude, re, im, power);
    }
    epilogue_lanes(bands, power, logs, out)
}

/// The [`LANES`] spectra (lane l's N bins at `l·N..`) bin-major into `re`
/// and `im` (N each): bin k of lane l at `[k][l]`, one value at a time.
#[inline(always)]
fn transpose_lanes(spectrum: &[Complex<f32>], re: &mut [[f32; LANES]], im: &mut [[f32; LANES]]) {
    let half = re.len();
    for (l, z) in spectrum.chunks_exact(half).enumerate() {
        for ((z, re), im) in z.iter().zip(re.iter_mut()).zip(im.iter_mut()) {
            re[l] = z.re;
            im[l] = z.im;
        }
    }
}

/// [`transpose_lanes`] by 8×8 blocks in AVX registers: four bins of the 8
/// lanes, interleaved re/im, are 8 rows of 8 floats, and their transpose
/// is those bins' `re` and `im` rows in turn. A quarter of the kernel's
/// time went to the scalar transpose.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn transpose_avx2(spectrum: &[Complex<f32>], re: &mut [[f32; LANES]], im: &mut [[f32; LANES]]) {
    use std::arch::x86_64::*;
    const { assert!(LANES == 8) };
    let half = re.len();
    assert!(spectrum.len() == LANES * half && im.len() == half, "8 spectra of N bins, N rows each");
    let whole = half / 4 * 4;
    let base = spectrum.as_ptr() as *const f32;
    for k in (0..whole).step_by(4) {
        // SAFETY: row l reads bins k..k+4 of lane l, inside `spectrum`
        // (k + 4 ≤ N, checked length 8·N); the stores write rows k..k+4
        // of `re` and `im` (N each), 8 floats each.
        unsafe {
            let r: [__m256; 8] = std::array::from_fn(|l| _mm256_loadu_ps(base.add(2 * (l * half + k))));
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            // Row j of the transpose: float j of every lane's four bins,
            // re of bin k + j/2 for even j, its im for odd j.
            let rows = [
                _mm256_permute2f128_ps::<0x20>(u0, u4),
                _mm256_permute2f128_ps::<0x20>(u1, u5),
                _mm256_permute2f128_ps::<0x20>(u2, u6),
                _mm256_permute2f128_ps::<0x20>(u3, u7),
                _mm256_permute2f128_ps::<0x31>(u0, u4),
                _mm256_permute2f128_ps::<0x31>(u1, u5),
                _mm256_permute2f128_ps::<0x31>(u2, u6),
                _mm256_permute2f128_ps::<0x31>(u3, u7),
            ];
            for (i, pair) in rows.chunks_exact(2).enumerate() {
                _mm256_storeu_ps(re[k + i].as_mut_ptr(), pair[0]);
                _mm256_storeu_ps(im[k + i].as_mut_ptr(), pair[1]);
            }
        }
    }
    for k in whole..half {
        for l in 0..LANES {
            re[k][l] = spectrum[l * half + k].re;
            im[k][l] = spectrum[l * half + k].im;
        }
    }
}

/// The one-sided power of the [`LANES`] frames packed and transposed in
/// `re` and `im` (lane l's `Z = FFT(x[2j] + i·x[2j+1])`, length N =
/// n_fft/2, bin k at `[k][l]`) into `power`, bin-major, every lane of a bin
/// at once: with `a = Z[k mod N]` and `b = conj Z[(N−k) mod N]`, `E = (a +
/// b)/2`, `O = (a − b)/2i`, and `X[k] = E + W^k·O` for k in 0..=N, each
/// scaled by `amplitude` before it is squared.
#[inline(always)]
fn split_power(twiddles: &[Complex<f32>], amplitude: f32, re: &[[f32; LANES]], im: &[[f32; LANES]], power: &mut [f32]) {
    let half = re.len();
    // Whole-lane chunks: no bounds check per lane, so the lanes vectorise.
    for (k, (p, w)) in power.as_chunks_mut::<LANES>().0.iter_mut().zip(twiddles).enumerate().take(half + 1) {
        // k = 0 and k = N both pair Z[0] with itself; no other index wraps.
        let (a, b) = if k == 0 || k == half { (0, 0) } else { (k, half - k) };
        let (a_re, a_im, b_re, b_im) = (&re[a], &im[a], &re[b], &im[b]);
        for l in 0..LANES {
            // b is conj Z[N−k]: its imaginary part flips sign. Halved
            // before they are added: a sum of two values above f32's
            // largest / 2 would overflow, and E + W·O give ∞ − ∞.
            let (ar, ai, br, bi) = (a_re[l] * 0.5, a_im[l] * 0.5, b_re[l] * 0.5, b_im[l] * 0.5);
            let (e_re, e_im) = (ar + br, ai - bi);
            let (d_re, d_im) = (ar - br, ai + bi);
            // X = E + W·(d.im − i·d.re), still at the transform's scale;
            // the amplitude (which undoes it) once X is whole: scaled
            // back before the sum, a loud bin's halves overflowed again
            // (an adversarial run).
            let x_re = (e_re + (w.re * d_im + w.im * d_re)) * amplitude;
            let x_im = (e_im + (w.im * d_im - w.re * d_re)) * amplitude;
            p[l] = x_re * x_re + x_im * x_im;
        }
    }
}

/// One [`LANES`]-wide pass: per filter, its band summed in bin order in
/// every lane; the log of every value (branch-free: a floored value takes
/// the floor's log, ∞ stays ∞; a NaN was floored by `max`, as in RLX); per
/// lane, the floor at its largest log − 8 and `(v + 4) / 4`. Inlined into
/// each instruction-set instance.
#[inline(always)]
fn epilogue_lanes(bands: &Bands, power: &[f32], logs: &mut [[f32; LANES]], out: &mut [f32]) {
    let mels = logs.len();
    let floor_log = LOG_FLOOR.log10();
    let mut top = [f32::NEG_INFINITY; LANES];
    for (m, log) in logs.iter_mut().enumerate() {
        let mut acc = [0f32; LANES];
        let weights = &bands.weights[bands.offset[m]..bands.offset[m] + bands.len[m]];
        let band = &power[bands.start[m] * LANES..(bands.start[m] + bands.len[m]) * LANES];
        for (w, p) in weights.iter().zip(band.chunks_exact(LANES)) {
            for l in 0..LANES {
                // p·w, then the add: RLX's order, and no fused rounding.
                acc[l] += p[l] * w;
            }
        }
        for l in 0..LANES {
            let v = acc[l].max(LOG_FLOOR);
            let fast = log10_finite(v);
            log[l] = if v <= LOG_FLOOR { floor_log } else if v == f32::INFINITY { f32::INFINITY } else { fast };
            top[l] = top[l].max(log[l]);
        }
    }
    for (l, row) in out.chunks_mut(mels).enumerate() {
        let floor = top[l] - DYNAMIC_RANGE;
        for (v, log) in row.iter_mut().zip(logs.iter()) {
            *v = (log[l].max(floor) + 4.0) / 4.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fused::LogMelInput;
    use rand::{RngExt, SeedableRng};

    fn random(shape: Vec<usize>, seed: u64) -> Tensor {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let len = shape.iter().product();
        Tensor::new(shape, (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect())
    }

    /// Triangular filters like rlx-ir's, sparse rows with zeros around a band.
    fn filters(mels: usize, bins: usize) -> Tensor {
        let mut data = vec![0f32; mels * bins];
        for m in 0..mels {
            let (lo, hi) = (m * bins / (mels + 1), ((m + 2) * bins / (mels + 1)).min(bins));
            for k in lo..hi {
                data[m * bins + k] = 1.0 - ((2 * k) as f32 - (lo + hi) as f32).abs() / (hi - lo) as f32;
            }
        }
        Tensor::new(vec![mels, bins], data)
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        assert_eq!(a.shape, b.shape);
        a.data.iter().zip(&b.data).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    #[test]
    /// Lengths cover odd n_fft (realfft), even ones whose half is a multiple
    /// of 4 (whole 8×8 transposes) and not (98, 100: the remainder path).
    fn the_kernel_matches_the_reference_on_every_length_and_layout() {
        for (n_fft, frame_len, rows, mels) in [(375, 375, 9, 40), (75, 61, 3, 10), (400, 333, 5, 40), (64, 64, 1, 10), (400, 400, 37, 80), (400, 300, 5, 40), (512, 512, 64, 128), (1024, 1000, 3, 40), (160, 160, 2, 10), (98, 98, 11, 10), (100, 90, 17, 20)] {
            let attrs = LogMelAttrs { frame_len, ..LogMelAttrs::frames(n_fft, mels) };
            let input = random(vec![rows, frame_len as usize], n_fft);
            let filters = filters(mels as usize, attrs.bins() as usize);
            let want = reference_of(&attrs, &input, &filters, None);
            let got = cpu_kernel(&attrs, input.view(), filters.view(), None).unwrap();
            assert!(max_diff(&got, &want) < 1e-4, "n_fft {n_fft}, {rows} frames: {}", max_diff(&got, &want));
            let window = random(vec![frame_len as usize], 7);
            let windowed = LogMelAttrs { window: true, ..attrs.clone() };
            let want = reference_of(&windowed, &input, &filters, Some(&window));
            let got = cpu_kernel(&windowed, input.view(), filters.view(), Some(window.view())).unwrap();
            assert!(max_diff(&got, &want) < 1e-4, "windowed n_fft {n_fft}: {}", max_diff(&got, &want));
        }
        let signal = LogMelAttrs { input_layout: LogMelInput::Signal, hop: Some(160), frames: Some(9), ..LogMelAttrs::frames(400, 40) };
        let input = random(vec![3, 1700], 3);
        let filters = filters(40, 201);
        let want = reference_of(&signal, &input, &filters, None);
        assert_eq!(want.shape, [9, 3, 40]);
        let got = cpu_kernel(&signal, input.view(), filters.view(), None).unwrap();
        assert!(max_diff(&got, &want) < 1e-4, "signal: {}", max_diff(&got, &want));
    }

    /// A silent frame beside a loud one is exactly RLX's floor value: no
    /// rounding of its neighbour reaches it (a kernel that packed two real
    /// frames into one complex FFT gave −1.23 here instead of −1.5).
    #[test]
    fn a_silent_frame_beside_a_loud_one_stays_silent() {
        let attrs = LogMelAttrs::frames(400, 80);
        let mut input = random(vec![4, 400], 5);
        input.data.iter_mut().take(400).for_each(|x| *x *= 100.0);
        input.data[400..800].fill(0.0);
        let got = cpu_kernel(&attrs, input.view(), filters(80, 201).view(), None).unwrap();
        assert!(got.data[80..160].iter().all(|v| *v == -1.5), "{:?}", &got.data[80..90]);
    }

    /// Frames loud enough that their power overflows f32 give ∞ as RLX does.
    #[test]
    fn overflowing_power_is_infinite_as_in_the_reference() {
        let attrs = LogMelAttrs::frames(64, 10);
        let mut input = random(vec![3, 64], 9);
        input.data[64..128].iter_mut().for_each(|x| *x *= 1e30);
        let filters = filters(10, 33);
        let want = reference_of(&attrs, &input, &filters, None);
        let got = cpu_kernel(&attrs, input.view(), filters.view(), None).unwrap();
        assert!(got.data[10..20].iter().all(|v| *v == f32::INFINITY), "{:?}", &got.data[10..20]);
        for (a, b) in want.data.iter().zip(&got.data) {
            assert!(a == b || (a - b).abs() < 1e-4, "reference {a}, kernel {b}");
        }
    }

    /// The AVX2 transpose is the scalar one, for every remainder of N by 4.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_transpose_is_the_scalar_one() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return eprintln!("SKIPPED: this CPU has no AVX2");
        }
        for half in 1..=13 {
            let spectrum: Vec<Complex<f32>> = (0..LANES * half).map(|i| Complex::new(i as f32, -(i as f32) - 0.5)).collect();
            let mut want = [vec![[0f32; LANES]; half], vec![[0f32; LANES]; half]];
            let mut got = want.clone();
            let [re, im] = &mut want;
            transpose_lanes(&spectrum, re, im);
            let [re, im] = &mut got;
            // SAFETY: the CPU has AVX2, checked above.
            unsafe { transpose_avx2(&spectrum, re, im) };
            assert_eq!(got, want, "N = {half}");
        }
    }

    fn reference_of(attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Tensor {
        super::super::reference(attrs, input, filters, window).unwrap()
    }

    #[test]
    fn operands_that_do_not_fit_are_refused() {
        let attrs = LogMelAttrs::frames(64, 10);
        let input = random(vec![4, 64], 1);
        let wrong = filters(10, 32);
        let e = cpu_kernel(&attrs, input.view(), wrong.view(), None).unwrap_err();
        assert!(e.to_string().contains("the op needs [10, 33]"), "{e}");
        let short = random(vec![4, 63], 1);
        assert!(cpu_kernel(&attrs, short.view(), filters(10, 33).view(), None).is_err());
    }
}
