// The fused log-mel op (rlx_opt.log_mel), its meaning in src/fused/log_mel.rs:
// two launches per op run (src/lower/log_mel.rs lists them).
//   `mel_bands`: one thread per filter finds its band, the bins from its
//   first to its last non-zero weight (once per run, not per frame);
//   `log_mel`: one workgroup per pair of frames. z = x + i·y (windowed,
//   zero-padded to N) goes through the shared mixed-radix FFT
//   (fft_mixed_radix.wgsl, pasted for the FFT placeholder); bin k's power of
//   each frame comes from Z[k] and Z[N−k] (X = (Z[k] + conj Z[N−k]) / 2,
//   Y = (Z[k] − conj Z[N−k]) / 2i); each filter sums its band, in bin order;
//   then log10(max(v, 1e-10)), floored at the frame's largest − 8, (v + 4) / 4.
// Specialised per op and shape by replacing the double-brace placeholders,
// validated by naga, which writes SPIR-V and Metal from it.

{{FFT}}

const FRAME_LEN: u32 = {{FRAME_LEN}}u;
const BINS: u32 = {{BINS}}u;
const MELS: u32 = {{MELS}}u;
// Result rows (frames), and their pairs: one workgroup each.
const ROWS: u32 = {{ROWS}}u;
const PAIRS: u32 = {{PAIRS}}u;
const WG: u32 = {{WG}}u;
const BANDS_WG: u32 = {{BANDS_WG}}u;
// The signal layout: row s·BATCH + b starts at b·SIGNAL_LEN + s·HOP;
// the frames layout: row r at r·FRAME_LEN.
const SIGNAL: bool = {{SIGNAL}};
const BATCH: u32 = {{BATCH}}u;
const SIGNAL_LEN: u32 = {{SIGNAL_LEN}}u;
const HOP: u32 = {{HOP}}u;
const HAS_WINDOW: bool = {{HAS_WINDOW}};
// power_scale / 4: the ¼ of splitting a pair's transform.
const SCALE: f32 = {{SCALE}};
const LOG_FLOOR: f32 = 1e-10;
const DYNAMIC_RANGE: f32 = 8.0;
const LOG10_2: f32 = 0.3010299956639812;

@group(0) @binding(0) var<storage, read> frames: array<f32>;
@group(0) @binding(1) var<storage, read> window: array<f32>;
@group(0) @binding(2) var<storage, read_write> mels: array<f32>;
@group(0) @binding(3) var<storage, read> filters: array<f32>;
@group(0) @binding(5) var<storage, read_write> bands: array<vec2<u32>>;

var<workgroup> buf: array<vec2<f32>, FFT_N>;
// Both frames' power of each bin, then their mel values (x: the pair's
// first frame, y: its second), and their floors.
var<workgroup> power: array<vec2<f32>, BINS>;
var<workgroup> mel: array<vec2<f32>, MELS>;
var<workgroup> floors: vec2<f32>;

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
        if (filters[m * BINS + k] != 0.0) {
            first = min(first, k);
            last = k;
        }
    }
    if (first == BINS) {
        bands[m] = vec2<u32>(0u, 0u);
    } else {
        bands[m] = vec2<u32>(first, last + 1u);
    }
}

fn frame_start(row: u32) -> u32 {
    if (SIGNAL) {
        return (row % BATCH) * SIGNAL_LEN + (row / BATCH) * HOP;
    }
    return row * FRAME_LEN;
}

fn sample(start: u32, t: u32) -> f32 {
    var w = 1.0;
    if (HAS_WINDOW) {
        w = window[t];
    }
    return frames[start + t] * w;
}

fn log10_floored(v: vec2<f32>) -> vec2<f32> {
    return log2(max(v, vec2<f32>(LOG_FLOOR))) * LOG10_2;
}

@compute @workgroup_size({{WG}})
fn log_mel(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let pair = wid.x + wid.y * groups.x;
    if (pair >= PAIRS) {
        return;
    }
    let row = 2u * pair;
    let has_y = row + 1u < ROWS;
    let x0 = frame_start(row);
    let y0 = frame_start(row + 1u);
    for (var t = tid; t < FFT_N; t += WG) {
        var z = vec2<f32>(0.0, 0.0);
        if (t < FRAME_LEN) {
            z.x = sample(x0, t);
            if (has_y) {
                z.y = sample(y0, t);
            }
        }
        buf[fft_position(t)] = z;
    }
    workgroupBarrier();
    fft_run(tid);
    for (var k = tid; k < BINS; k += WG) {
        let a = buf[k];
        let b = buf[(FFT_N - k) % FFT_N];
        let x = vec2<f32>(a.x + b.x, a.y - b.y);
        let y = vec2<f32>(a.x - b.x, a.y + b.y);
        power[k] = SCALE * vec2<f32>(dot(x, x), dot(y, y));
    }
    workgroupBarrier();
    for (var m = tid; m < MELS; m += WG) {
        let band = bands[m];
        var acc = vec2<f32>(0.0, 0.0);
        for (var k = band.x; k < band.y; k++) {
            acc += power[k] * filters[m * BINS + k];
        }
        mel[m] = log10_floored(acc);
    }
    workgroupBarrier();
    if (tid == 0u) {
        var top = mel[0];
        for (var m = 1u; m < MELS; m++) {
            top = max(top, mel[m]);
        }
        floors = top - vec2<f32>(DYNAMIC_RANGE);
    }
    workgroupBarrier();
    let lowest = floors;
    for (var m = tid; m < MELS; m += WG) {
        let v = (max(mel[m], lowest) + 4.0) / 4.0;
        mels[row * MELS + m] = v.x;
        if (has_y) {
            mels[(row + 1u) * MELS + m] = v.y;
        }
    }
}
