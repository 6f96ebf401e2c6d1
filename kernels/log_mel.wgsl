// The fused log-mel op (rlx_opt.log_mel), its meaning in src/fused/log_mel.rs:
// two launches per op run (src/lower/log_mel.rs lists them).
//   `mel_bands`: one thread per filter finds its band, the bins from its
//   first to its last non-zero weight (once per run, not per frame);
//   `log_mel`: one workgroup per frame, with a transform of its own (frames
//   never share one: a louder frame's rounding would land in a quieter
//   frame's spectrum, and the log shows it). For an even n_fft the frame's
//   real samples are packed as z[j] = x[2j] + i·x[2j+1] (windowed,
//   zero-padded to n_fft) and go through the shared mixed-radix FFT
//   (fft_mixed_radix.wgsl, pasted for the FFT placeholder) of length
//   FFT_N = n_fft / 2; bin k (0..=FFT_N, Z[FFT_N] = Z[0]) is then
//   X[k] = E[k] + W^k·O[k], E = (Z[k] + conj Z[N−k]) / 2,
//   O = (Z[k] − conj Z[N−k]) / 2i, W = exp(−2πi / n_fft). For an odd n_fft
//   the FFT is n_fft long, the frame the real part, the imaginary part 0.
//   Each filter sums its band of |AMP·X[k]|² (AMP = √power_scale · 1/TRANSFORM_SCALE,
//   the frame transformed at TRANSFORM_SCALE), in bin order; then
//   log10(max(v, 1e-10)), floored at the frame's largest − 8, (v + 4) / 4.
// Specialised per op and shape by replacing the double-brace placeholders,
// validated by naga, which writes SPIR-V and Metal from it.

{{FFT}}

const FRAME_LEN: u32 = {{FRAME_LEN}}u;
const BINS: u32 = {{BINS}}u;
const MELS: u32 = {{MELS}}u;
// The op's FFT length, and whether a frame is packed into a complex FFT of
// half its length (even N_FFT: FFT_N = N_FFT / 2) or not (odd: FFT_N = N_FFT).
const N_FFT: u32 = {{N_FFT}}u;
const PACKED: bool = {{PACKED}};
// Result rows (frames): one workgroup each.
const ROWS: u32 = {{ROWS}}u;
const WG: u32 = {{WG}}u;
// The whole workgroup runs a frame's FFT.
const FFT_LANES: u32 = WG;
const BANDS_WG: u32 = {{BANDS_WG}}u;
// The signal layout: row s·BATCH + b starts at b·SIGNAL_LEN + s·HOP;
// the frames layout: row r at r·FRAME_LEN.
const SIGNAL: bool = {{SIGNAL}};
const BATCH: u32 = {{BATCH}}u;
const SIGNAL_LEN: u32 = {{SIGNAL_LEN}}u;
const HOP: u32 = {{HOP}}u;
const HAS_WINDOW: bool = {{HAS_WINDOW}};
// Each frame is transformed at TRANSFORM_SCALE (a power of two: no FFT sum
// of loud samples overflows f32 on the way), undone in AMP, the FFT norm's
// factor on each amplitude (√power_scale · 1/TRANSFORM_SCALE), applied
// before squaring, as the unfused chain does (LogMelAttrs::transform_scale).
const TRANSFORM_SCALE: f32 = {{TRANSFORM_SCALE}};
const AMP: f32 = {{AMP}};
const INF_IS_NAN: bool = {{INF_IS_NAN}};
const LOG_FLOOR: f32 = 1e-10;
const DYNAMIC_RANGE: f32 = 8.0;
const LOG10_2: f32 = 0.3010299956639812;

// The operands, through frames_at, window_at, filters_at, bands_get,
// mels_set, and for `mel_bands` band_filters_at and bands_set: bindings of
// their own (log_mel_io_buffers.wgsl) or RLX's arena (log_mel_io_rlx.wgsl).
{{IO}}

var<workgroup> buf: array<vec2<f32>, FFT_N>;
// The frame's power of each bin, then its mel values, and its floor.
var<workgroup> power: array<f32, BINS>;
var<workgroup> mel: array<f32, MELS>;
var<workgroup> lowest: f32;

fn fft_get(i: u32) -> vec2<f32> {
    return buf[i];
}

fn fft_set(i: u32, v: vec2<f32>) {
    buf[i] = v;
}

// Filter m's band: (first, end), (0, 0) for a filter of zeros.
@compute @workgroup_size({{BANDS_WG}})
fn mel_bands(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = gid.x;
    if (m >= MELS) {
        return;
    }
    var first = BINS;
    var last = 0u;
    for (var k = 0u; k < BINS; k++) {
        // Non-zero by its bits, NaN included: WGSL may assume no NaNs, and
        // lavapipe's `NaN != 0.0` is false (the CPU's band holds a NaN).
        if ((bitcast<u32>(band_filters_at(m * BINS + k)) & 0x7fffffffu) != 0u) {
            first = min(first, k);
            last = k;
        }
    }
    if (first == BINS) {
        bands_set(m, vec2<u32>(0u, 0u));
    } else {
        bands_set(m, vec2<u32>(first, last + 1u));
    }
}

fn frame_start(row: u32) -> u32 {
    if (SIGNAL) {
        return (row % BATCH) * SIGNAL_LEN + (row / BATCH) * HOP;
    }
    return row * FRAME_LEN;
}

// inf_as_nan: ±∞ loaded as NaN under INF_IS_NAN (samples.wgsl).
{{SAMPLES}}

fn sample(start: u32, t: u32) -> f32 {
    var w = 1.0;
    if (HAS_WINDOW) {
        w = window_at(t);
    }
    return inf_as_nan(frames_at(start + t) * w) * TRANSFORM_SCALE;
}

fn log10_floored(v: f32) -> f32 {
    return log2(max(v, LOG_FLOOR)) * LOG10_2;
}

@compute @workgroup_size({{WG}})
fn log_mel(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let row = wid.x + wid.y * groups.x;
    if (row >= ROWS) {
        return;
    }
    let x0 = frame_start(row);
    // The FFT's twiddles (the load's barrier follows).
    fft_prepare(tid);
    for (var j = tid; j < FFT_N; j += WG) {
        var z = vec2<f32>(0.0, 0.0);
        if (PACKED) {
            let t = 2u * j;
            if (t < FRAME_LEN) {
                z.x = sample(x0, t);
            }
            if (t + 1u < FRAME_LEN) {
                z.y = sample(x0, t + 1u);
            }
        } else if (j < FRAME_LEN) {
            z.x = sample(x0, j);
        }
        buf[fft_position(j)] = z;
    }
    workgroupBarrier();
    fft_run(tid);
    for (var k = tid; k < BINS; k += WG) {
        var x = buf[k % FFT_N];
        if (PACKED) {
            let b = buf[(FFT_N - k) % FFT_N];
            // E = (Z[k] + conj Z[N−k]) / 2, O = −i·(Z[k] − conj Z[N−k]) / 2,
            // halved before they are added (exact for normal values): a sum
            // of two values above f32's largest / 2 would overflow.
            let h = 0.5 * x;
            let g = 0.5 * vec2<f32>(b.x, -b.y);
            let e = h + g;
            let o = fft_minus_i(h - g);
            x = e + fft_mul(fft_twiddle(k, N_FFT), o);
        }
        x = AMP * x;
        power[k] = dot(x, x);
    }
    workgroupBarrier();
    for (var m = tid; m < MELS; m += WG) {
        let band = bands_get(m);
        var acc = 0.0;
        for (var k = band.x; k < band.y; k++) {
            acc += power[k] * filters_at(m * BINS + k);
        }
        mel[m] = log10_floored(acc);
    }
    workgroupBarrier();
    if (tid == 0u) {
        var top = mel[0];
        for (var m = 1u; m < MELS; m++) {
            top = max(top, mel[m]);
        }
        lowest = top - DYNAMIC_RANGE;
    }
    workgroupBarrier();
    let floor_value = lowest;
    for (var m = tid; m < MELS; m += WG) {
        mels_set(row * MELS + m, (max(mel[m], floor_value) + 4.0) / 4.0);
    }
}
