// The log-mel kernels' operands in RLX's arena, by rlx-wgpu's custom-kernel
// convention: one storage window over every operand, and
//   params = [out_off, out_len, n_inputs, _pad, in0_off, in0_len, in1_off, in1_len, ...]
// in f32 elements of that window. Each entry point is one RLX op:
//   `mel_bands`: operand 0 the filters, the result the bands;
//   `log_mel`: operands the frames, the filters, the bands, then the window
//   when the op has one; the result the mel values.
// The bands are (first, end) bin pairs held as f32 values in the arena
// (exact: a band's bins stay far below 2^24), so RLX's host staging, which
// copies f32 tensors, carries them unchanged to a CPU kernel and back.

@group(0) @binding(0) var<storage, read_write> arena: array<f32>;
@group(0) @binding(1) var<storage, read> params: array<u32>;

fn frames_at(i: u32) -> f32 {
    return arena[params[4] + i];
}

fn filters_at(i: u32) -> f32 {
    return arena[params[6] + i];
}

fn bands_get(m: u32) -> vec2<u32> {
    let at = params[8] + 2u * m;
    return vec2<u32>(u32(arena[at]), u32(arena[at + 1u]));
}

fn window_at(t: u32) -> f32 {
    return arena[params[10] + t];
}

fn band_filters_at(i: u32) -> f32 {
    return arena[params[4] + i];
}

fn bands_set(m: u32, band: vec2<u32>) {
    let at = params[0] + 2u * m;
    arena[at] = f32(band.x);
    arena[at + 1u] = f32(band.y);
}

fn mels_set(i: u32, v: f32) {
    arena[params[0] + i] = v;
}
