//! The fused Welch-peaks op, twice: [`reference`], its definition in plain
//! code (what the interpreter runs), and [`cpu_kernel`], the native CPU
//! lowering (real FFTs planned once, batch entries spread over cores,
//! per-thread scratch, top-k by selection, no spectrum materialised).
//! Both share the segment addressing and the peak order, so they can only
//! differ by FFT rounding.

use super::tensor::Tensor;
use crate::fused::{Doubling, InputLayout, OutputLayout, WelchPeaksAttrs};
use rayon::prelude::*;
use rustfft::num_complex::Complex;
use std::cmp::Ordering;

/// The peak order: NaN first (as `torch.topk`), then larger power, then the lower bin.
pub fn peak_order(a: (usize, f32), b: (usize, f32)) -> Ordering {
    match (a.1.is_nan(), b.1.is_nan()) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (true, true) => a.0.cmp(&b.0),
        (false, false) => b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal).then(a.0.cmp(&b.0)),
    }
}

/// Geometry of one run of the op on an operand of `input_shape`.
pub struct Geometry {
    pub batch: usize,
    pub batch_shape: Vec<usize>,
    pub bins: usize,
}

pub fn geometry(attrs: &WelchPeaksAttrs, input_shape: &[usize]) -> Geometry {
    let batch_shape: Vec<usize> = match attrs.input_layout {
        InputLayout::Rows => vec![input_shape[0] / attrs.segments as usize],
        InputLayout::Frames => input_shape[1..input_shape.len() - 1].to_vec(),
        InputLayout::Signal => input_shape[..input_shape.len() - 1].to_vec(),
    };
    Geometry { batch: batch_shape.iter().product(), batch_shape, bins: attrs.n_fft as usize / 2 + 1 }
}

/// The `frame_len` samples of segment `s` of batch entry `b`.
pub fn segment<'a>(attrs: &WelchPeaksAttrs, input: &'a Tensor, batch: usize, b: usize, s: usize) -> &'a [f32] {
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
    let scale = (attrs.power_scale / attrs.segments as f64) as f32;
    for (j, (p, x)) in psd.iter_mut().zip(spectrum).enumerate() {
        let doubled = attrs.doubling == Doubling::Rlx && j != 0 && j != bins - 1;
        let c = if doubled { 2.0 } else { 1.0 };
        *p += scale * c * (x.re * x.re + x.im * x.im);
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

fn output(attrs: &WelchPeaksAttrs, g: &Geometry) -> Tensor {
    let mut shape = g.batch_shape.clone();
    shape.push(2 * attrs.k as usize);
    Tensor::zeros(shape)
}

/// The op's definition: per segment a full complex FFT, all bins sorted.
pub fn reference(attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Tensor {
    let g = geometry(attrs, &input.shape);
    let n = attrs.n_fft as usize;
    let fft = rustfft::FftPlanner::<f32>::new().plan_fft_forward(n);
    let mut out = output(attrs, &g);
    let row = 2 * attrs.k as usize;
    for b in 0..g.batch {
        let mut psd = vec![0f32; g.bins];
        for s in 0..attrs.segments as usize {
            let mut buf = vec![Complex::new(0f32, 0f32); n];
            for (t, x) in segment(attrs, input, g.batch, b, s).iter().enumerate() {
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
    out
}

/// The native CPU lowering. Working memory is per thread (one FFT buffer,
/// its output, one PSD row), never proportional to the batch.
pub fn cpu_kernel(attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Tensor {
    let g = geometry(attrs, &input.shape);
    let n = attrs.n_fft as usize;
    let len = attrs.frame_len as usize;
    let k = attrs.k as usize;
    let fft = realfft::RealFftPlanner::<f32>::new().plan_fft_forward(n);
    let mut out = output(attrs, &g);
    let row = 2 * k;
    let scratch = || {
        let samples = fft.make_input_vec();
        let spectrum = fft.make_output_vec();
        let work = fft.make_scratch_vec();
        (samples, spectrum, work, vec![0f32; g.bins], Vec::<(usize, f32)>::with_capacity(g.bins))
    };
    out.data.par_chunks_mut(row).enumerate().for_each_init(scratch, |(samples, spectrum, work, psd, peaks), (b, out)| {
        psd.fill(0.0);
        for s in 0..attrs.segments as usize {
            let seg = segment(attrs, input, g.batch, b, s);
            match window {
                Some(w) => samples[..len].iter_mut().zip(seg).zip(&w.data).for_each(|((d, x), w)| *d = x * w),
                None => samples[..len].copy_from_slice(seg),
            }
            samples[len..].fill(0.0);
            fft.process_with_scratch(samples, spectrum, work).expect("buffers come from the plan");
            accumulate_power(attrs, psd, &spectrum[..g.bins]);
        }
        peaks.clear();
        peaks.extend(psd.iter().copied().enumerate());
        let top = k.min(peaks.len());
        if top < peaks.len() {
            peaks.select_nth_unstable_by(top - 1, |a, b| peak_order(*a, *b));
            peaks.truncate(top);
        }
        peaks.sort_unstable_by(|a, b| peak_order(*a, *b));
        write_peaks(attrs, peaks, out);
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fused::ChainForm;

    fn attrs(n_fft: u64, segments: u64, k: u64) -> WelchPeaksAttrs {
        WelchPeaksAttrs {
            form: ChainForm::WelchPeaks,
            input_layout: InputLayout::Rows,
            n_fft,
            frame_len: n_fft,
            hop: None,
            segments,
            k,
            window: false,
            power_scale: 1.0,
            doubling: Doubling::Rlx,
            output_layout: OutputLayout::Interleaved,
        }
    }

    #[test]
    fn nan_first_then_power_then_lower_bin() {
        let mut v = vec![(0, 1.0), (1, f32::NAN), (2, 3.0), (3, 3.0), (4, f32::NAN), (5, -1.0)];
        v.sort_by(|a, b| peak_order(*a, *b));
        let bins: Vec<usize> = v.iter().map(|p| p.0).collect();
        assert_eq!(bins, [1, 4, 2, 3, 0, 5]);
    }

    #[test]
    fn exact_ties_go_to_the_lower_bin_in_both_kernels() {
        // Silence: every bin has power 0.
        let a = attrs(8, 2, 3);
        let x = Tensor::zeros(vec![4, 8]);
        for out in [reference(&a, &x, None), cpu_kernel(&a, &x, None)] {
            assert_eq!(out.data, [0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0]);
        }
    }

    #[test]
    fn surplus_slots_and_nan_inputs_are_defined() {
        // k = 7 > 5 bins: two (-1, -inf) slots.
        let a = attrs(8, 1, 7);
        let x = Tensor::new(vec![1, 8], (0..8).map(|i| i as f32).collect());
        let (r, c) = (reference(&a, &x, None), cpu_kernel(&a, &x, None));
        assert_eq!(&r.data[10..], [-1.0, f32::NEG_INFINITY, -1.0, f32::NEG_INFINITY]);
        assert_eq!(r.data[..10].iter().step_by(2).collect::<Vec<_>>(), c.data[..10].iter().step_by(2).collect::<Vec<_>>());
        // A NaN sample makes every bin NaN: bins come out in order, powers NaN.
        let mut y = x.clone();
        y.data[3] = f32::NAN;
        for out in [reference(&a, &y, None), cpu_kernel(&a, &y, None)] {
            let bins: Vec<f32> = out.data.iter().step_by(2).copied().collect();
            assert_eq!(bins, [0.0, 1.0, 2.0, 3.0, 4.0, -1.0, -1.0]);
            assert!(out.data[1].is_nan());
        }
    }
}
