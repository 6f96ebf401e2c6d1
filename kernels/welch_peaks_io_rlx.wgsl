// The operands in RLX's arena, by rlx-wgpu's custom-kernel convention: one
// storage window over every operand, and
//   params = [out_off, out_len, n_inputs, _pad, in0_off, in0_len, in1_off, in1_len]
// in f32 elements of that window. Each dispatch is one RLX op: operand 0 is
// the segments (the spectra for the multi-pass `rows` and `peaks_of`),
// operand 1 the window, the result the peaks (the spectra for `columns`
// and `rows`). The four-step `rows` reads one spectrum tensor and writes
// the next. A split plan's partial spectra are the result of its first op
// and operand 0 of its last.

@group(0) @binding(0) var<storage, read_write> arena: array<f32>;
@group(0) @binding(1) var<storage, read> params: array<u32>;

fn segs_at(i: u32) -> f32 {
    return arena[params[4] + i];
}

fn window_at(t: u32) -> f32 {
    return arena[params[6] + t];
}

fn peaks_set(i: u32, v: f32) {
    arena[params[0] + i] = v;
}

fn spectrum_in(i: u32) -> vec2<f32> {
    let at = params[4] + 2u * i;
    return vec2<f32>(arena[at], arena[at + 1u]);
}

fn spectrum_out(i: u32, v: vec2<f32>) {
    let at = params[0] + 2u * i;
    arena[at] = v.x;
    arena[at + 1u] = v.y;
}

fn partials_get(i: u32) -> f32 {
    return arena[params[4] + i];
}

fn partials_set(i: u32, v: f32) {
    arena[params[0] + i] = v;
}
