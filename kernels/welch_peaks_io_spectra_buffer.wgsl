// The multi-pass plans' spectrum buffer (the four-step FFT's `columns`
// writes it, `rows` transforms it in place, the last pass reads it).
// Pasted after welch_peaks_io_buffers.wgsl.

@group(0) @binding(3) var<storage, read_write> spectra: array<vec2<f32>>;

fn spectrum_in(i: u32) -> vec2<f32> {
    return spectra[i];
}

fn spectrum_out(i: u32, v: vec2<f32>) {
    spectra[i] = v;
}
