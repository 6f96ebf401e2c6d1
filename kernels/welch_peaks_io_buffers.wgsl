// The operands as bindings of their own (rlx-run, --emit-kernels), and the
// split plans' partial power spectra: pasted into both WGSL kernels for
// the IO placeholder.

@group(0) @binding(0) var<storage, read> segs: array<f32>;
@group(0) @binding(1) var<storage, read> window: array<f32>;
@group(0) @binding(2) var<storage, read_write> peaks: array<f32>;

fn segs_at(i: u32) -> f32 {
    return segs[i];
}

fn window_at(t: u32) -> f32 {
    return window[t];
}

fn peaks_set(i: u32, v: f32) {
    peaks[i] = v;
}

@group(0) @binding(5) var<storage, read_write> partials: array<f32>;

fn partials_get(i: u32) -> f32 {
    return partials[i];
}

fn partials_set(i: u32, v: f32) {
    partials[i] = v;
}
