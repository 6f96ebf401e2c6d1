// The mixed-radix FFT in workgroup memory (radices 4, 2, 3, 5): the FFT
// front end of the GPU kernels, written once and pasted into each kernel
// for the FFT placeholder (src/lower/log_mel.rs). Forward, unnormalised,
// in place, decimation in time: sample t is stored at fft_position(t)
// (its mixed-radix digits reversed), then FFT_STAGES stages leave bin k at
// index k.
//
// The including kernel declares WG (its workgroup size) and gives the
// buffer: fft_get(i) and fft_set(i, v) over FFT_N complex values.
// Stage s has radix FFT_RADICES[s] and span FFT_SPANS[s] (the product of
// the earlier radices): its butterfly (block b, offset k < span) reads the
// r values at b·span·r + k + j·span, twiddles value j by W_{span·r}^{j·k},
// and writes their r-point DFT back to the same places.
//
// Loops are few on purpose: lavapipe counts every loop iteration of an
// invocation against one limit (src/analysis/loop_budget.rs), so the digit
// reversal is straight-line code (FFT_POSITION, written per length by
// src/lower/fft.rs) and each radix's butterfly is unrolled: a pair costs
// fewer iterations than the radix-2 FFT it replaced, whose counts the
// Welch plans' loop budget still uses.

const FFT_N: u32 = {{FFT_N}}u;
const FFT_STAGES: u32 = {{FFT_STAGES}}u;
const FFT_RADICES = array<u32, FFT_STAGES>({{FFT_RADICES}});
const FFT_SPANS = array<u32, FFT_STAGES>({{FFT_SPANS}});

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

// Value j of the butterfly at base (stride span), twiddled by W_m^{j·k}.
fn fft_in(base: u32, span: u32, k: u32, m: u32, j: u32) -> vec2<f32> {
    return fft_mul(fft_get(base + j * span), fft_twiddle(j * k, m));
}

fn fft_radix2(base: u32, span: u32, k: u32) {
    let a = fft_get(base);
    let b = fft_in(base, span, k, 2u * span, 1u);
    fft_set(base, a + b);
    fft_set(base + span, a - b);
}

fn fft_radix3(base: u32, span: u32, k: u32) {
    let m = 3u * span;
    let a = fft_get(base);
    let b = fft_in(base, span, k, m, 1u);
    let c = fft_in(base, span, k, m, 2u);
    // cos(2π/3) = −½, sin(2π/3).
    let t = a - 0.5 * (b + c);
    let u = 0.8660254037844386 * fft_minus_i(b - c);
    fft_set(base, a + b + c);
    fft_set(base + span, t + u);
    fft_set(base + 2u * span, t - u);
}

fn fft_radix4(base: u32, span: u32, k: u32) {
    let m = 4u * span;
    let a = fft_get(base);
    let b = fft_in(base, span, k, m, 1u);
    let c = fft_in(base, span, k, m, 2u);
    let d = fft_in(base, span, k, m, 3u);
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
    let m = 5u * span;
    let a = fft_get(base);
    let b = fft_in(base, span, k, m, 1u);
    let c = fft_in(base, span, k, m, 2u);
    let d = fft_in(base, span, k, m, 3u);
    let e = fft_in(base, span, k, m, 4u);
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

// Every stage, thread tid taking butterflies tid, tid + WG, …; a barrier
// after each. Call from uniform control flow once every sample is at its
// fft_position (and a barrier has passed); bin k is then at index k.
fn fft_run(tid: u32) {
    var radices = FFT_RADICES;
    var spans = FFT_SPANS;
    for (var s = 0u; s < FFT_STAGES; s++) {
        let r = radices[s];
        let span = spans[s];
        for (var p = tid; p < FFT_N / r; p += WG) {
            let k = p % span;
            let base = (p / span) * span * r + k;
            switch r {
                case 2u: {
                    fft_radix2(base, span, k);
                }
                case 3u: {
                    fft_radix3(base, span, k);
                }
                case 4u: {
                    fft_radix4(base, span, k);
                }
                default: {
                    fft_radix5(base, span, k);
                }
            }
        }
        workgroupBarrier();
    }
}
