//! The fused log-mel op's definition in plain code: a full complex FFT of
//! each zero-padded frame, its one-sided power, the mel bands, the log
//! compression. What `Reference` runs, and the oracle of the kernels.

use super::{apply_bands, compress, frame, geometry, mel_bands};
use crate::fused::LogMelAttrs;
use crate::runtime::{RuntimeError, Tensor};
use rustfft::num_complex::Complex;

pub fn reference(attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
    let g = geometry(attrs, input.view(), filters.view(), window.map(Tensor::view))?;
    let (n, bins, mels) = (attrs.n_fft as usize, attrs.bins() as usize, attrs.n_mels as usize);
    let fft = rustfft::FftPlanner::<f32>::new().plan_fft_forward(n);
    let bands = mel_bands(filters.view(), bins);
    // Transformed at a power-of-two scale undone on the amplitude
    // (`LogMelAttrs::transform_scale`): no sum overflows on the way.
    let (scale, amplitude) = (attrs.transform_scale(), attrs.kernel_amplitude());
    let mut data = Vec::with_capacity(g.rows * mels);
    let mut mel = vec![0f32; mels];
    for row in 0..g.rows {
        let mut buf = vec![Complex::new(0f32, 0f32); n];
        for (t, x) in frame(attrs, &g, input.view(), row).iter().enumerate() {
            let v = x * window.map_or(1.0, |w| w.data[t]);
            buf[t] = Complex::new(v, crate::fused::imaginary_plane(attrs.inf_is_nan, v)) * scale;
        }
        fft.process(&mut buf);
        // Scaled, then squared: the unfused chain's order.
        let power: Vec<f32> = buf[..bins].iter().map(|z| (z * amplitude).norm_sqr()).collect();
        apply_bands(&bands, &filters.data, bins, &power, &mut mel);
        compress(&mut mel);
        data.extend_from_slice(&mel);
    }
    Ok(Tensor::new(g.out_shape, data))
}
