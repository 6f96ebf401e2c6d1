// The mixed-radix FFT in workgroup memory (radices 4, 2, 3, 5): the FFT
// front end of the GPU kernels, written once and pasted into each kernel
// for the FFT placeholder (src/lower/log_mel.rs). Forward, unnormalised,
// in place, decimation in time: sample t is stored at fft_position(t)
// (its mixed-radix digits reversed), then FFT_STAGES stages leave bin k at
// index k.
//
// The including kernel declares WG (its workgroup size) and FFT_LANES (the
// invocations that run one FFT: WG, or a share of it where a workgroup
// runs several FFTs side by side) and gives the buffer: fft_get(i) and
// fft_set(i, v) over FFT_N complex values. A kernel that takes FFTs of two
// lengths pastes this file in twice, its names' `fft_`/`FFT_` prefix
// changed (src/lower/fft.rs, `wgsl_prefixed`).
// Stage s has radix r_s and span r_0·…·r_{s−1} (the radices in stage
// order: src/lower/fft.rs): its butterfly (block b, offset k < span) reads the
// r values at b·span·r + k + j·span, twiddles value j by W_{span·r}^{j·k},
// and writes their r-point DFT back to the same places.
//
// The stages and the digit reversal are straight-line code written per
// length by src/lower/fft.rs (FFT_RUN, FFT_POSITION), each radix's
// butterfly unrolled: every radix and span is a constant where it is used
// (lavapipe runs it 1.3× faster than with the radices read from an array),
// and the loops are few, as lavapipe counts every loop iteration of an
// invocation against one limit (src/analysis/loop_budget.rs).

const FFT_N: u32 = {{FFT_N}}u;
const FFT_STAGES: u32 = {{FFT_STAGES}}u;

fn fft_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// −i·z.
fn fft_minus_i(z: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(z.y, -z.x);
}

// W_m^e = exp(−2πi·e/m).
fn fft_twiddle(e: u32, m: u32) -> vec2<f32> {
    let angle = -6.283185307179586 * f32(e) / f32(m);
    return vec2<f32>(cos(angle), sin(angle));
}

// Where sample t goes: its digits (last stage's radix first) reversed.
fn fft_position(t: u32) -> u32 {
    var rest = t;
    var position = 0u;
{{FFT_POSITION}}
    return position;
}

// The stages' twiddles, W_m^e for a divisor m of FFT_N and e < m:
// `fft_stage_twiddle`, read from a table of W_FFT_N^i in workgroup memory
// where the kernel's memory holds one (filled by `fft_prepare`), computed
// otherwise (src/lower/fft.rs picks the snippet).
{{FFT_TWIDDLES}}

// Value j of the butterfly at base (stride span), twiddled by w = W_m^{j·k}.
// A butterfly looks up or computes W_m^k once and takes its powers by
// multiplying (two or three complex products where the radix asks for
// more): one cos and sin a butterfly instead of one a value.
fn fft_in(base: u32, span: u32, j: u32, w: vec2<f32>) -> vec2<f32> {
    return fft_mul(fft_get(base + j * span), w);
}

fn fft_radix2(base: u32, span: u32, k: u32) {
    let a = fft_get(base);
    let b = fft_in(base, span, 1u, fft_stage_twiddle(k, 2u * span));
    fft_set(base, a + b);
    fft_set(base + span, a - b);
}

fn fft_radix3(base: u32, span: u32, k: u32) {
    let w1 = fft_stage_twiddle(k, 3u * span);
    let a = fft_get(base);
    let b = fft_in(base, span, 1u, w1);
    let c = fft_in(base, span, 2u, fft_mul(w1, w1));
    // cos(2π/3) = −½, sin(2π/3).
    let t = a - 0.5 * (b + c);
    let u = 0.8660254037844386 * fft_minus_i(b - c);
    fft_set(base, a + b + c);
    fft_set(base + span, t + u);
    fft_set(base + 2u * span, t - u);
}

fn fft_radix4(base: u32, span: u32, k: u32) {
    let w1 = fft_stage_twiddle(k, 4u * span);
    let w2 = fft_mul(w1, w1);
    let a = fft_get(base);
    let b = fft_in(base, span, 1u, w1);
    let c = fft_in(base, span, 2u, w2);
    let d = fft_in(base, span, 3u, fft_mul(w2, w1));
    let s0 = a + c;
    let d0 = a - c;
    let s1 = b + d;
    let d1 = fft_minus_i(b - d);
    fft_set(base, s0 + s1);
    fft_set(base + span, d0 + d1);
    fft_set(base + 2u * span, s0 - s1);
    fft_set(base + 3u * span, d0 - d1);
}

fn fft_radix5(base: u32, span: u32, k: u32) {
    let w1 = fft_stage_twiddle(k, 5u * span);
    let w2 = fft_mul(w1, w1);
    let a = fft_get(base);
    let b = fft_in(base, span, 1u, w1);
    let c = fft_in(base, span, 2u, w2);
    let d = fft_in(base, span, 3u, fft_mul(w2, w1));
    let e = fft_in(base, span, 4u, fft_mul(w2, w2));
    // cos and sin of 2π/5 and 4π/5.
    let c1 = 0.30901699437494745;
    let c2 = -0.8090169943749475;
    let s1 = 0.9510565162951535;
    let s2 = 0.5877852522924731;
    let be = b + e;
    let cd = c + d;
    let t1 = a + c1 * be + c2 * cd;
    let t2 = a + c2 * be + c1 * cd;
    let u1 = fft_minus_i(s1 * (b - e) + s2 * (c - d));
    let u2 = fft_minus_i(s2 * (b - e) - s1 * (c - d));
    fft_set(base, a + be + cd);
    fft_set(base + span, t1 + u1);
    fft_set(base + 2u * span, t2 + u2);
    fft_set(base + 3u * span, t2 - u2);
    fft_set(base + 4u * span, t1 - u1);
}

// One stage of radix R and span `span`: lane `tid` (below FFT_LANES)
// takes butterflies tid, tid + FFT_LANES, … (block b, offset k < span).
fn fft_stage2(tid: u32, span: u32) {
    for (var p = tid; p < FFT_N / 2u; p += FFT_LANES) {
        let k = p % span;
        fft_radix2((p / span) * span * 2u + k, span, k);
    }
}

fn fft_stage3(tid: u32, span: u32) {
    for (var p = tid; p < FFT_N / 3u; p += FFT_LANES) {
        let k = p % span;
        fft_radix3((p / span) * span * 3u + k, span, k);
    }
}

fn fft_stage4(tid: u32, span: u32) {
    for (var p = tid; p < FFT_N / 4u; p += FFT_LANES) {
        let k = p % span;
        fft_radix4((p / span) * span * 4u + k, span, k);
    }
}

fn fft_stage5(tid: u32, span: u32) {
    for (var p = tid; p < FFT_N / 5u; p += FFT_LANES) {
        let k = p % span;
        fft_radix5((p / span) * span * 5u + k, span, k);
    }
}

// Every stage in order (FFT_RUN, written per length: a call with its
// radix and span as constants, then a barrier), `tid` the invocation's
// lane in its FFT (below FFT_LANES). Call from uniform control flow once
// every sample is at its fft_position and `fft_prepare` has run (and a
// barrier has passed); bin k is then at index k.
fn fft_run(tid: u32) {
{{FFT_RUN}}
}
