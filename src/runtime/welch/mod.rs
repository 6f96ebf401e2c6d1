//! The fused Welch-peaks op, twice: [`reference`], its definition in plain
//! code (what the interpreter runs), and [`cpu_kernel`], the native CPU
//! lowering (FFTs planned once per power-of-two length and process, batch
//! entries spread over cores, per-thread scratch, top-k by selection, no
//! spectrum materialised).
//! Both share the segment addressing and the peak order, so they can only
//! differ by FFT rounding. The GPU plans' launches as CPU passes are in
//! [`passes`].

pub mod passes;

pub use passes::{partial_psds_into, partial_psds_of_pair_spectra, pair_spectra_into, peaks_from_pair_spectra, peaks_of_partials};

use super::RuntimeError;
use super::tensor::{Tensor, TensorRef};
use crate::analysis::Target;
use crate::analysis::plan::{CPU_TASKS_PER_THREAD, DeviceLimits, split_chunks};
use crate::fused::{InputLayout, OutputLayout, PlanName, WelchPeaksAttrs};
use crate::lower::power_weight;
use rayon::prelude::*;
use rustfft::num_complex::Complex;
use std::cmp::Ordering;
use std::sync::{Arc, LazyLock, Mutex};

/// The forward FFT of length `n`. Planning computes every twiddle (13 µs
/// at n_fft 1024, 50 µs at 4096 here: most of a one-entry call), so the
/// plans of power-of-two lengths up to [`MAX_N_FFT`](crate::analysis::plan::MAX_N_FFT)
/// are kept for the process (17 lengths at most: a few MiB of twiddles);
/// any other length is planned per call, so no graph can grow the cache.
fn forward_fft(n: usize) -> Arc<dyn rustfft::Fft<f32>> {
    static PLANNER: LazyLock<Mutex<rustfft::FftPlanner<f32>>> = LazyLock::new(|| Mutex::new(rustfft::FftPlanner::new()));
    if n.is_power_of_two() && n as u64 <= crate::analysis::plan::MAX_N_FFT {
        // A planner a panic left poisoned still holds only whole plans.
        PLANNER.lock().unwrap_or_else(|e| e.into_inner()).plan_fft_forward(n)
    } else {
        rustfft::FftPlanner::new().plan_fft_forward(n)
    }
}

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

/// Add one segment's power to `psd`, in RLX's order of operations: each
/// term is scaled by `1/S` (and doubled) before it is summed.
pub fn accumulate_power(attrs: &WelchPeaksAttrs, psd: &mut [f32], spectrum: &[Complex<f32>]) {
    let bins = psd.len();
    for (j, (p, x)) in psd.iter_mut().zip(spectrum).enumerate() {
        // The weight in f64 then f32 is the f32 scale times 1 or 2: doubling is exact.
        *p += power_weight(attrs, j, bins) as f32 * (x.re * x.re + x.im * x.im);
    }
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
                let w = window.map_or(1.0, |w| w.data[t]);
                buf[t] = Complex::new(x * w, 0.0);
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

/// This machine's CPU as the split plan sees it: rayon's threads, a few
/// tasks each so that uneven chunks still balance.
pub fn this_cpu() -> DeviceLimits {
    let threads = rayon::current_num_threads() as u64;
    DeviceLimits { parallelism: CPU_TASKS_PER_THREAD * threads, ..DeviceLimits::assumed(Target::Cpu) }
}

/// What one CPU task reuses from item to item: the FFT buffer and its
/// scratch, a PSD row, the top-k scratch.
struct Scratch {
    buf: Vec<Complex<f32>>,
    work: Vec<Complex<f32>>,
    psd: Vec<f32>,
    keys: Vec<u64>,
    peaks: Vec<(usize, f32)>,
}

/// The CPU kernel of one op on one operand: the FFT planned once, the
/// per-bin weights, and the operands.
struct CpuRun<'a> {
    attrs: &'a WelchPeaksAttrs,
    g: &'a Geometry,
    input: TensorRef<'a>,
    window: Option<TensorRef<'a>>,
    fft: Arc<dyn rustfft::Fft<f32>>,
    weights: Vec<f32>,
}

impl<'a> CpuRun<'a> {
    fn new(attrs: &'a WelchPeaksAttrs, g: &'a Geometry, input: TensorRef<'a>, window: Option<TensorRef<'a>>) -> Self {
        let fft = forward_fft(attrs.n_fft as usize);
        CpuRun { attrs, g, input, window, fft, weights: pair_weights(attrs, g.bins) }
    }

    fn scratch(&self) -> Scratch {
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
    fn add_pairs(&self, buf: &mut [Complex<f32>], work: &mut [Complex<f32>], b: usize, pairs: std::ops::Range<usize>, psd: &mut [f32]) {
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
    fn write_row(&self, scratch: &mut Scratch, out: &mut [f32]) {
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

/// The `split` plan: the segment pairs of each entry cut into chunks
/// ([`split_chunks`]) so that batch × chunks tasks keep `device` busy; each
/// task adds up its chunk's power, the chunks of an entry are summed, then
/// its top-k taken. Entries go a group at a time, so the partial spectra
/// held at once stay near `device.parallelism` rows whatever the batch.
pub fn cpu_kernel_split(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, out: &mut [f32], device: &DeviceLimits) {
    let run = CpuRun::new(attrs, g, input, window);
    let pairs = (attrs.segments as usize).div_ceil(2);
    let (chunks, per_chunk) = split_chunks(g.batch as u64, pairs as u64, device.parallelism, u64::MAX);
    let (chunks, per_chunk) = (chunks as usize, per_chunk as usize);
    if chunks == 1 {
        // One chunk per entry is the batch plan.
        return cpu_kernel_rows(attrs, g, input, window, 0, out, true);
    }
    let row_len = 2 * attrs.k as usize;
    let entries_per_group = (4 * device.parallelism as usize).div_ceil(chunks).max(1);
    for (group, rows) in out.chunks_mut(entries_per_group * row_len).enumerate() {
        let first = group * entries_per_group;
        let entries = rows.len() / row_len.max(1);
        let partials: Vec<Vec<f32>> = (0..entries * chunks)
            .into_par_iter()
            .map_init(
                || run.scratch(),
                |Scratch { buf, work, .. }, item| {
                    let (b, c) = (first + item / chunks, item % chunks);
                    let mut psd = vec![0f32; g.bins];
                    run.add_pairs(buf, work, b, c * per_chunk..((c + 1) * per_chunk).min(pairs), &mut psd);
                    psd
                },
            )
            .collect();
        let combine = |scratch: &mut Scratch, (out, parts): (&mut [f32], &[Vec<f32>])| {
            scratch.psd.fill(0.0);
            for part in parts {
                scratch.psd.iter_mut().zip(part).for_each(|(p, x)| *p += x);
            }
            run.write_row(scratch, out);
        };
        // One entry's combining runs here (see `cpu_kernel_rows`).
        if entries > 1 {
            rows.par_chunks_mut(row_len).zip(partials.par_chunks(chunks)).for_each_init(|| run.scratch(), combine);
        } else {
            let mut scratch = run.scratch();
            rows.chunks_mut(row_len).zip(partials.chunks(chunks)).for_each(|item| combine(&mut scratch, item));
        }
    }
}

/// Per bin: its power weight ([`power_weight`]) and the ½ of the pair formula.
fn pair_weights(attrs: &WelchPeaksAttrs, bins: usize) -> Vec<f32> {
    (0..bins).map(|j| (power_weight(attrs, j, bins) * 0.5) as f32).collect()
}

/// Segments `s` and `s + 1` of batch entry `b` (zeros past the last), windowed,
/// as the real and imaginary parts of `buf`, zero-padded to `n_fft`.
fn load_pair(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, b: usize, s: usize, buf: &mut [Complex<f32>]) {
    let len = attrs.frame_len as usize;
    let x = segment(attrs, input, g.batch, b, s);
    let (head, tail) = buf.split_at_mut(len);
    let pair = |(d, (x, y)): (&mut Complex<f32>, (&f32, f32))| *d = Complex::new(*x, y);
    if s + 1 < attrs.segments as usize {
        let y = segment(attrs, input, g.batch, b, s + 1);
        match window {
            Some(w) => head.iter_mut().zip(x.iter().zip(y)).zip(w.data).for_each(|((d, (x, y)), w)| *d = Complex::new(x * w, y * w)),
            None => head.iter_mut().zip(x.iter().zip(y.iter().copied())).for_each(pair),
        }
    } else {
        match window {
            Some(w) => head.iter_mut().zip(x).zip(w.data).for_each(|((d, x), w)| *d = Complex::new(x * w, 0.0)),
            None => head.iter_mut().zip(x.iter().zip(std::iter::repeat(0.0))).for_each(pair),
        }
    }
    tail.fill(Complex::new(0.0, 0.0));
}

/// Add one pair's power to `psd`: `|Z[j]|² + |Z[n−j]|²`, weighted
/// (`psd[0]` gets `2·|Z[0]|²`, the same sum at j = 0).
fn add_pair_power(weights: &[f32], buf: &[Complex<f32>], psd: &mut [f32]) {
    let n = buf.len();
    let bins = psd.len();
    psd[0] += weights[0] * 2.0 * buf[0].norm_sqr();
    let mirrored = buf[n + 1 - bins..].iter().rev();
    for ((p, w), (a, b)) in psd[1..].iter_mut().zip(&weights[1..]).zip(buf[1..bins].iter().zip(mirrored)) {
        *p += w * (a.norm_sqr() + b.norm_sqr());
    }
}

/// Hint the cache to load `data` (a no-op where the hint does not exist).
fn prefetch(data: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in data.chunks(16) {
        // SAFETY: prefetching is a hint; it never faults, whatever the address.
        unsafe { std::arch::x86_64::_mm_prefetch(line.as_ptr().cast(), std::arch::x86_64::_MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
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
