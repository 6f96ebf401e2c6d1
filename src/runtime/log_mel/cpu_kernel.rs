//! The native CPU lowering of the fused log-mel op: two real frames per
//! complex FFT (`z = x + i·y`, split by the FFT's symmetry), a block of
//! frame pairs transformed per call, blocks spread over rayon's pool with
//! per-thread scratch, each filter's band found once per op, and nothing
//! but the `[rows, n_mels]` result written.

use super::{Geometry, apply_bands, compress, frame, geometry, mel_bands};
use crate::fused::LogMelAttrs;
use crate::runtime::{RuntimeError, Tensor, TensorRef};
use rayon::prelude::*;
use rustfft::num_complex::Complex;

/// Frame pairs transformed by one FFT call: enough to amortise the call
/// and keep a block in L2 (32 × 1024 × 8 bytes = 256 KiB at n_fft 1024).
const PAIRS_PER_BLOCK: usize = 32;

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
    let mels = attrs.n_mels as usize;
    debug_assert_eq!(out.len(), g.rows * mels, "the caller sizes the output by the geometry");
    let run = Run::new(attrs, g, input, filters, window);
    let rows_per_block = 2 * run.pairs_per_block();
    out.par_chunks_mut(rows_per_block * mels).enumerate().for_each_init(|| run.scratch(), |scratch, (block, out)| {
        run.block(scratch, block * rows_per_block, out);
    });
}

/// One op's run: the FFT planned once, the bands found once, the operands.
struct Run<'a> {
    attrs: &'a LogMelAttrs,
    g: &'a Geometry,
    input: TensorRef<'a>,
    filters: TensorRef<'a>,
    window: Option<TensorRef<'a>>,
    fft: std::sync::Arc<dyn rustfft::Fft<f32>>,
    bands: Vec<std::ops::Range<usize>>,
}

/// What one task reuses from block to block.
struct Scratch {
    buf: Vec<Complex<f32>>,
    work: Vec<Complex<f32>>,
    power: [Vec<f32>; 2],
}

impl<'a> Run<'a> {
    fn new(attrs: &'a LogMelAttrs, g: &'a Geometry, input: TensorRef<'a>, filters: TensorRef<'a>, window: Option<TensorRef<'a>>) -> Self {
        let fft = crate::runtime::fft::forward_fft(attrs.n_fft as usize);
        let bands = mel_bands(filters, attrs.bins() as usize);
        Run { attrs, g, input, filters, window, fft, bands }
    }

    /// Fewer pairs per block when the frames are few, so that every core gets some.
    fn pairs_per_block(&self) -> usize {
        let pairs = self.g.rows.div_ceil(2);
        pairs.div_ceil(rayon::current_num_threads()).clamp(1, PAIRS_PER_BLOCK)
    }

    fn scratch(&self) -> Scratch {
        let n = self.attrs.n_fft as usize;
        let zero = Complex::new(0f32, 0f32);
        let bins = self.attrs.bins() as usize;
        Scratch {
            buf: vec![zero; n * self.pairs_per_block()],
            work: vec![zero; self.fft.get_inplace_scratch_len()],
            power: [vec![0f32; bins], vec![0f32; bins]],
        }
    }

    /// Rows `first..` into `out`, a whole number of rows (the last block may be short).
    fn block(&self, scratch: &mut Scratch, first: usize, out: &mut [f32]) {
        let (n, bins, mels) = (self.attrs.n_fft as usize, self.attrs.bins() as usize, self.attrs.n_mels as usize);
        let rows = out.len() / mels;
        let pairs = rows.div_ceil(2);
        let buf = &mut scratch.buf[..pairs * n];
        for (p, z) in buf.chunks_mut(n).enumerate() {
            let row = first + 2 * p;
            let second = (2 * p + 1 < rows).then(|| row + 1);
            self.load_pair(row, second, z);
        }
        self.fft.process_with_scratch(buf, &mut scratch.work);
        let scale = self.attrs.power_scale as f32;
        for (p, z) in buf.chunks(n).enumerate() {
            let [px, py] = &mut scratch.power;
            split_power(z, bins, scale, px, py);
            for (i, power) in [px, py].into_iter().enumerate().take(rows - 2 * p) {
                let mel = &mut out[(2 * p + i) * mels..(2 * p + i + 1) * mels];
                apply_bands(&self.bands, self.filters.data, bins, power, mel);
                compress(mel);
            }
        }
    }

    /// Row `x` (and row `y`, if any) windowed as the real and imaginary parts of `z`, zero-padded.
    fn load_pair(&self, x: usize, y: Option<usize>, z: &mut [Complex<f32>]) {
        let len = self.attrs.frame_len as usize;
        let (head, tail) = z.split_at_mut(len);
        let xs = frame(self.attrs, self.g, self.input, x);
        let ys = y.map(|y| frame(self.attrs, self.g, self.input, y));
        match (ys, self.window) {
            (Some(ys), Some(w)) => head.iter_mut().zip(xs.iter().zip(ys)).zip(w.data).for_each(|((d, (x, y)), w)| *d = Complex::new(x * w, y * w)),
            (Some(ys), None) => head.iter_mut().zip(xs.iter().zip(ys)).for_each(|(d, (x, y))| *d = Complex::new(*x, *y)),
            (None, Some(w)) => head.iter_mut().zip(xs).zip(w.data).for_each(|((d, x), w)| *d = Complex::new(x * w, 0.0)),
            (None, None) => head.iter_mut().zip(xs).for_each(|(d, x)| *d = Complex::new(*x, 0.0)),
        }
        tail.fill(Complex::new(0.0, 0.0));
    }
}

/// The one-sided power of both real frames packed in `z = FFT(x + i·y)`:
/// with `a = Z[k]` and `b = Z[(n−k) mod n]`, `X[k] = (a + b̄)/2` and
/// `Y[k] = (a − b̄)/2i`, so `|X[k]|² = |a + b̄|²/4` and `|Y[k]|² = |a − b̄|²/4`.
fn split_power(z: &[Complex<f32>], bins: usize, scale: f32, px: &mut [f32], py: &mut [f32]) {
    let n = z.len();
    let quarter = 0.25 * scale;
    for k in 0..bins {
        let (a, b) = (z[k], z[(n - k) % n]);
        px[k] = quarter * ((a.re + b.re).powi(2) + (a.im - b.im).powi(2));
        py[k] = quarter * ((a.re - b.re).powi(2) + (a.im + b.im).powi(2));
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
    fn the_kernel_matches_the_reference_on_every_length_and_layout() {
        for (n_fft, frame_len, rows, mels) in [(64, 64, 1, 10), (400, 400, 37, 80), (400, 300, 5, 40), (512, 512, 64, 128), (1024, 1000, 3, 40), (160, 160, 2, 10)] {
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
