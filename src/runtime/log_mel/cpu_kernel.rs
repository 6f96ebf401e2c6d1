//! The native CPU lowering of the fused log-mel op: one real-input FFT per
//! frame (realfft: a half-length complex FFT, so no second frame shares a
//! transform and leaks its rounding into a quiet neighbour's log), blocks
//! of frames spread over rayon's pool with per-thread scratch, each
//! filter's band found once per op, and nothing but the `[rows, n_mels]`
//! result written.

use super::{Geometry, apply_bands, compress, frame, geometry, mel_bands};
use crate::fused::LogMelAttrs;
use crate::runtime::{RuntimeError, Tensor, TensorRef};
use rayon::prelude::*;
use rustfft::num_complex::Complex;

/// Frames one task takes at most: enough to amortise the task, few enough
/// that every core gets some of a short clip.
const ROWS_PER_TASK: usize = 64;

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
    let rows_per_task = g.rows.div_ceil(rayon::current_num_threads()).clamp(1, ROWS_PER_TASK);
    out.par_chunks_mut(rows_per_task * mels).enumerate().for_each_init(|| run.scratch(), |scratch, (task, out)| {
        for (i, mel) in out.chunks_mut(mels).enumerate() {
            run.row(scratch, task * rows_per_task + i, mel);
        }
    });
}

/// One op's run: the FFT planned once, the bands found once, the operands.
struct Run<'a> {
    attrs: &'a LogMelAttrs,
    g: &'a Geometry,
    input: TensorRef<'a>,
    filters: TensorRef<'a>,
    window: Option<TensorRef<'a>>,
    fft: std::sync::Arc<dyn realfft::RealToComplex<f32>>,
    bands: Vec<std::ops::Range<usize>>,
}

/// What one task reuses from frame to frame.
struct Scratch {
    frame: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    work: Vec<Complex<f32>>,
    power: Vec<f32>,
}

impl<'a> Run<'a> {
    fn new(attrs: &'a LogMelAttrs, g: &'a Geometry, input: TensorRef<'a>, filters: TensorRef<'a>, window: Option<TensorRef<'a>>) -> Self {
        let fft = crate::runtime::fft::forward_real_fft(attrs.n_fft as usize);
        let bands = mel_bands(filters, attrs.bins() as usize);
        Run { attrs, g, input, filters, window, fft, bands }
    }

    fn scratch(&self) -> Scratch {
        let bins = self.attrs.bins() as usize;
        Scratch { frame: self.fft.make_input_vec(), spectrum: self.fft.make_output_vec(), work: self.fft.make_scratch_vec(), power: vec![0f32; bins] }
    }

    /// Row `row` of the result into `mel`.
    fn row(&self, s: &mut Scratch, row: usize, mel: &mut [f32]) {
        let len = self.attrs.frame_len as usize;
        let x = frame(self.attrs, self.g, self.input, row);
        let (head, tail) = s.frame.split_at_mut(len);
        match self.window {
            Some(w) => head.iter_mut().zip(x).zip(w.data).for_each(|((d, x), w)| *d = x * w),
            None => head.copy_from_slice(x),
        }
        tail.fill(0.0);
        // The lengths are the plan's own (make_*_vec): the FFT cannot refuse them.
        self.fft.process_with_scratch(&mut s.frame, &mut s.spectrum, &mut s.work).expect("buffers sized by the plan");
        let scale = self.attrs.power_scale as f32;
        for (p, z) in s.power.iter_mut().zip(&s.spectrum) {
            *p = scale * z.norm_sqr();
        }
        apply_bands(&self.bands, self.filters.data, self.attrs.bins() as usize, &s.power, mel);
        compress(mel);
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
