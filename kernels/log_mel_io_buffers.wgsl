// The log-mel kernels' operands as bindings of their own (rlx-run,
// --emit-kernels): the Welch kernels' binding numbers for the same roles.

@group(0) @binding(0) var<storage, read> frames: array<f32>;
@group(0) @binding(1) var<storage, read> window: array<f32>;
@group(0) @binding(2) var<storage, read_write> mels: array<f32>;
@group(0) @binding(3) var<storage, read> filters: array<f32>;
@group(0) @binding(5) var<storage, read_write> bands: array<vec2<u32>>;

fn frames_at(i: u32) -> f32 {
    return frames[i];
}

fn window_at(t: u32) -> f32 {
    return window[t];
}

fn filters_at(i: u32) -> f32 {
    return filters[i];
}

fn band_filters_at(i: u32) -> f32 {
    return filters[i];
}

fn bands_get(m: u32) -> vec2<u32> {
    return bands[m];
}

fn bands_set(m: u32, band: vec2<u32>) {
    bands[m] = band;
}

fn mels_set(i: u32, v: f32) {
    mels[i] = v;
}
