// The multi-pass plan's spectrum buffer, transformed in place, and the
// radix-2 stage a `stage` dispatch runs, set per dispatch (one module for
// every stage, as in CUDA). Pasted after welch_peaks_io_buffers.wgsl.

@group(0) @binding(3) var<storage, read_write> spectra: array<vec2<f32>>;
@group(0) @binding(4) var<uniform> stage_index: u32;

fn spectrum_in(i: u32) -> vec2<f32> {
    return spectra[i];
}

fn spectrum_out(i: u32, v: vec2<f32>) {
    spectra[i] = v;
}
