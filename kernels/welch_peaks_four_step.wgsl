// Fused Welch peaks, multi-pass plans: for FFTs too long for one
// workgroup's memory (n_fft > 4096, or asked for). Same meaning and
// specialisation as welch_peaks.wgsl; the FFT is the four-step one, through
// a global spectrum buffer: a pair's N = N1·N2 samples z[t] (windowed,
// zero-padded, z = x + i·y) are an N1 × N2 matrix, t = N2·j1 + j2, and
//   columns — its N2 column FFTs (N1 points over j1), each value then
//             twiddled by W_N^{j2·k1}, written to row k1, column j2;
//   rows    — its N1 row FFTs (N2 points over j2), in place: bin
//             k = k1 + N1·k2 ends at row k1, column k2 (`bin_at`);
//   peaks_of — one workgroup per batch entry: the pair formula
//             |X|² + |Y|² = (|Z[j]|² + |Z[n−j]|²) / 2 accumulated per bin,
//             then the top-k; or, in the split-multipass plan,
//             `partial_of` per chunk of an entry's pairs, then
//             `peaks_of_partials`.
// Two passes through device memory for any length, where radix-2 stages
// took one per factor of 2. Each pass runs its FFTs in workgroup memory
// with the mixed-radix FFT every kernel shares, pasted in twice (`col_`
// and `row_`: src/lower/fft.rs), several FFTs side by side in a workgroup
// (COL_FFTS, ROW_FFTS), COL_LANES / ROW_LANES invocations each; consecutive
// invocations load consecutive samples.

{{COMMON}}

{{FFT_COLUMNS}}

{{FFT_ROWS}}

// The operands (segs_at, window_at, peaks_set, spectrum_in, spectrum_out):
// bindings of their own, or RLX's arena, where each pass is an op of its
// own (src/lower/wgsl.rs picks the snippet).
{{IO}}

const N1: u32 = {{N1}}u;
const N2: u32 = {{N2}}u;
const COL_LANES: u32 = {{COL_LANES}}u;
const COL_FFTS: u32 = {{COL_FFTS}}u;
const ROW_LANES: u32 = {{ROW_LANES}}u;
const ROW_FFTS: u32 = {{ROW_FFTS}}u;
// Points of the FFT buffer: the larger of COL_FFTS·N1 and ROW_FFTS·N2.
const FS_POINTS: u32 = {{FS_POINTS}}u;

var<workgroup> buf: array<vec2<u32>, FS_POINTS>;
var<workgroup> best: array<vec2<u32>, WG>;
// The first point of this invocation's FFT in `buf` (each FFT pass sets it
// before its FFT runs).
var<private> fft_base: u32;

fn col_get(i: u32) -> vec2<f32> {
    return bitcast<vec2<f32>>(buf[fft_base + i]);
}

fn col_set(i: u32, v: vec2<f32>) {
    buf[fft_base + i] = bitcast<vec2<u32>>(v);
}

fn row_get(i: u32) -> vec2<f32> {
    return bitcast<vec2<f32>>(buf[fft_base + i]);
}

fn row_set(i: u32, v: vec2<f32>) {
    buf[fft_base + i] = bitcast<vec2<u32>>(v);
}

fn scratch_get(i: u32) -> vec2<u32> {
    return best[i];
}

fn scratch_set(i: u32, v: vec2<u32>) {
    best[i] = v;
}

// Where bin k of a pair's spectrum is, from the start of the pair's N
// values: row k mod N1, column k / N1.
fn bin_at(k: u32) -> u32 {
    return (k % N1) * N2 + k / N1;
}

// Workgroup g runs column FFTs g·COL_FFTS + c (c < COL_FFTS), counted over
// every pair of every entry: FFT f is column f mod N2 of pair f / N2.
// Invocation i loads point j1 = i / COL_FFTS of FFT c = i mod COL_FFTS, so
// that consecutive invocations read consecutive samples of a row.
@compute @workgroup_size({{WG}})
fn columns(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let first = batch_entry(wid, groups) * COL_FFTS;
    let total = BATCH * PAIRS * N2;
    col_prepare(tid);
    for (var i = tid; i < COL_FFTS * N1; i += WG) {
        let c = i % COL_FFTS;
        let f = first + c;
        if (f < total) {
            let j1 = i / COL_FFTS;
            let pair = (f / N2) % PAIRS;
            let s = 2u * pair;
            let x0 = (f / (N2 * PAIRS)) * BATCH_STRIDE + s * SEGMENT_STRIDE;
            let v = windowed_pair(x0, N2 * j1 + f % N2, s + 1u < SEGMENTS);
            buf[c * N1 + col_position(j1)] = bitcast<vec2<u32>>(v);
        }
    }
    workgroupBarrier();
    fft_base = (tid / COL_LANES) * N1;
    col_run(tid % COL_LANES);
    for (var i = tid; i < COL_FFTS * N1; i += WG) {
        let c = i % COL_FFTS;
        let f = first + c;
        if (f < total) {
            let k1 = i / COL_FFTS;
            let j2 = f % N2;
            let v = bitcast<vec2<f32>>(buf[c * N1 + k1]);
            // W_N^{j2·k1}: j2·k1 < N, exact in f32 below 2^24.
            spectrum_out((f / N2) * N + k1 * N2 + j2, col_mul(v, col_twiddle(j2 * k1, N)));
        }
    }
}

// Workgroup g runs row FFTs g·ROW_FFTS + c, counted over every pair: row
// r is row r mod N1 of pair r / N1, its N2 values at r·N2.
@compute @workgroup_size({{WG}})
fn rows(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let first = batch_entry(wid, groups) * ROW_FFTS;
    let total = BATCH * PAIRS * N1;
    row_prepare(tid);
    for (var i = tid; i < ROW_FFTS * N2; i += WG) {
        let c = i / N2;
        let r = first + c;
        if (r < total) {
            let j2 = i % N2;
            buf[c * N2 + row_position(j2)] = bitcast<vec2<u32>>(spectrum_in(r * N2 + j2));
        }
    }
    workgroupBarrier();
    fft_base = (tid / ROW_LANES) * N2;
    row_run(tid % ROW_LANES);
    for (var i = tid; i < ROW_FFTS * N2; i += WG) {
        let r = first + i / N2;
        if (r < total) {
            spectrum_out(first * N2 + i, bitcast<vec2<f32>>(buf[i]));
        }
    }
}

// The bins thread tid owns of the power of spectrum pairs first..end of
// batch entry b.
fn spectra_power(tid: u32, b: u32, first: u32, end: u32) -> array<f32, BPT> {
    var psd: array<f32, BPT>;
    for (var i = 0u; i < BPT; i++) {
        psd[i] = 0.0;
        let j = tid + i * WG;
        if (j < BINS) {
            let at = bin_at(j);
            let mirrored = bin_at(mirror(j));
            for (var pair = first; pair < end; pair++) {
                let base = (b * PAIRS + pair) * N;
                psd[i] += pair_power(spectrum_in(base + at), spectrum_in(base + mirrored), j);
            }
        }
    }
    return psd;
}

@compute @workgroup_size({{WG}})
fn peaks_of(lane: Lane, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let tid = lane.tid;
    let b = batch_entry(wid, groups);
    if (b >= BATCH) {
        return;
    }
    var psd = spectra_power(tid, b, 0u, PAIRS);
    write_peaks(lane, &psd, b * 2u * K);
}

// Split-multipass plan: work item (batch entry, chunk) per workgroup.
@compute @workgroup_size({{WG}})
fn partial_of(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let item = batch_entry(wid, groups);
    if (item >= BATCH * CHUNKS) {
        return;
    }
    let pairs = chunk_pairs(item % CHUNKS);
    var psd = spectra_power(tid, item / CHUNKS, pairs.x, pairs.y);
    write_partials(tid, &psd, item);
}
