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
    var radices = FFT_RADICES;
    var spans = FFT_SPANS;
    var rest = t;
    var position = 0u;
    for (var s = FFT_STAGES; s > 0u; s--) {
        let r = radices[s - 1u];
        position += (rest % r) * spans[s - 1u];
        rest /= r;
    }
    return position;
}

// The r-point DFT of v[0..r] in place (r in 2, 3, 4, 5).
fn fft_dft(v: ptr<function, array<vec2<f32>, 5>>, r: u32) {
    let a = (*v)[0];
    let b = (*v)[1];
    let c = (*v)[2];
    let d = (*v)[3];
    let e = (*v)[4];
    switch r {
        case 2u: {
            (*v)[0] = a + b;
            (*v)[1] = a - b;
        }
        case 3u: {
            // cos(2π/3) = −½, sin(2π/3).
            let t = a - 0.5 * (b + c);
            let u = 0.8660254037844386 * fft_minus_i(b - c);
            (*v)[0] = a + b + c;
            (*v)[1] = t + u;
            (*v)[2] = t - u;
        }
        case 4u: {
            let s0 = a + c;
            let d0 = a - c;
            let s1 = b + d;
            let d1 = fft_minus_i(b - d);
            (*v)[0] = s0 + s1;
            (*v)[1] = d0 + d1;
            (*v)[2] = s0 - s1;
            (*v)[3] = d0 - d1;
        }
        default: {
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
            (*v)[0] = a + be + cd;
            (*v)[1] = t1 + u1;
            (*v)[4] = t1 - u1;
            (*v)[2] = t2 + u2;
            (*v)[3] = t2 - u2;
        }
    }
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
            var v: array<vec2<f32>, 5>;
            v[0] = fft_get(base);
            for (var j = 1u; j < r; j++) {
                v[j] = fft_mul(fft_get(base + j * span), fft_twiddle(j * k, span * r));
            }
            fft_dft(&v, r);
            for (var j = 0u; j < r; j++) {
                fft_set(base + j * span, v[j]);
            }
        }
        workgroupBarrier();
    }
}
