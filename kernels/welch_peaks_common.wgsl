// What both WGSL kernels share (pasted in for the COMMON placeholder when
// specialised): the constants of the specialisation, the per-bin weight,
// integer keys whose order is the peak order, the workgroup-wide top-k,
// and the last pass of the split plans. Each kernel provides
// scratch_get/scratch_set, a workgroup buffer of at least WG keys.

const N: u32 = {{N}}u;
const FRAME_LEN: u32 = {{FRAME_LEN}}u;
const SEGMENTS: u32 = {{SEGMENTS}}u;
// Pairs of segments: each pair shares one complex FFT.
const PAIRS: u32 = {{PAIRS}}u;
// Split plans: the pairs of each batch entry in CHUNKS chunks of
// PAIRS_PER_CHUNK (the last may have fewer); 1 and PAIRS otherwise.
const CHUNKS: u32 = {{CHUNKS}}u;
const PAIRS_PER_CHUNK: u32 = {{PAIRS_PER_CHUNK}}u;
const K: u32 = {{K}}u;
const BINS: u32 = {{BINS}}u;
const WG: u32 = {{WG}}u;
// Bins per thread.
const BPT: u32 = {{BPT}}u;
// Words of the per-thread "already taken" bit set: ceil(BPT / 32).
const TW: u32 = {{TW}}u;
const BATCH: u32 = {{BATCH}}u;
// Segment s of batch entry b starts at b·BATCH_STRIDE + s·SEGMENT_STRIDE.
const BATCH_STRIDE: u32 = {{BATCH_STRIDE}}u;
const SEGMENT_STRIDE: u32 = {{SEGMENT_STRIDE}}u;
const HAS_WINDOW: bool = {{HAS_WINDOW}};
const DOUBLING: bool = {{DOUBLING}};
// 1 / segments / 2 (the ½ of the pair formula).
const SCALE: f32 = {{SCALE}};
// The FFT norm's factor on each amplitude, applied before squaring (as the
// unfused chain does): 1 under RLX's default norm.
const AMP: f32 = {{AMP}};
const INF_IS_NAN: bool = {{INF_IS_NAN}};
const INTERLEAVED: bool = {{INTERLEAVED}};

fn weight(j: u32) -> f32 {
    if (DOUBLING && j != 0u && j != BINS - 1u) {
        return 2.0 * SCALE;
    }
    return SCALE;
}

// A key whose (hi, lo) order is the peak order: the power's bits made
// monotonic with every NaN on top, then the complemented bin.
fn key_of(power: f32, bin: u32) -> vec2<u32> {
    let bits = bitcast<u32>(power);
    var hi: u32;
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u) {
        hi = 0xffffffffu;
    } else if ((bits >> 31u) == 1u) {
        hi = ~bits;
    } else {
        hi = bits | 0x80000000u;
    }
    return vec2<u32>(hi, ~bin);
}

fn power_of(key: vec2<u32>) -> f32 {
    if (key.x >= 0x80000000u) {
        return bitcast<f32>(key.x & 0x7fffffffu);
    }
    return bitcast<f32>(~key.x);
}

fn greater(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}

// The workgroup-wide maximum of the threads' heads (`block_max`) and the
// invocation ids it needs (`Lane`): with subgroup operations or with
// workgroup memory alone, as the adapter allows (src/lower/wgsl.rs).
{{TOPK}}

// Thread tid's head: the key of its largest bin not yet taken; (0, 0),
// below every key, when none is left.
fn head_of(tid: u32, psd: ptr<function, array<f32, BPT>>, taken: ptr<function, array<u32, TW>>) -> vec2<u32> {
    var head = vec2<u32>(0u, 0u);
    for (var i = 0u; i < BPT; i++) {
        let j = tid + i * WG;
        if (j < BINS && ((*taken)[i / 32u] & (1u << (i % 32u))) == 0u) {
            let key = key_of((*psd)[i], j);
            if (greater(key, head)) {
                head = key;
            }
        }
    }
    return head;
}

// Thread `tid` holds the power of bins tid + i·WG in `psd`. Each thread
// keys its bins once and keeps its largest (its head); each of K rounds
// the workgroup's largest head wins, and only the thread that held it
// takes its next. The peaks go to `peaks[row ..]`; slots past the bin
// count get (−1, −inf). Call from uniform control flow (it has barriers).
fn write_peaks(lane: Lane, psd: ptr<function, array<f32, BPT>>, row: u32) {
    let tid = lane.tid;
    var taken: array<u32, TW>;
    for (var w = 0u; w < TW; w++) {
        taken[w] = 0u;
    }
    var head = head_of(tid, psd, &taken);
    for (var r = 0u; r < K; r++) {
        let win = block_max(lane, head, r);
        var bin = -1.0;
        var power = bitcast<f32>(0xff800000u);
        if (win.x != 0u || win.y != 0u) {
            let j = ~win.y;
            if (j % WG == tid) {
                let i = j / WG;
                taken[i / 32u] |= 1u << (i % 32u);
                head = head_of(tid, psd, &taken);
            }
            bin = f32(j);
            power = power_of(win);
        }
        if (tid == 0u) {
            if (INTERLEAVED) {
                peaks_set(row + 2u * r, bin);
                peaks_set(row + 2u * r + 1u, power);
            } else {
                peaks_set(row + r, bin);
                peaks_set(row + K + r, power);
            }
        }
    }
}

// inf_as_nan: ±∞ loaded as NaN under INF_IS_NAN (samples.wgsl).
{{SAMPLES}}

// Sample t of the pair of segments starting at x0 (the second when has_y),
// windowed, as z = x + i·y; zero past FRAME_LEN (the padding).
fn windowed_pair(x0: u32, t: u32, has_y: bool) -> vec2<f32> {
    var v = vec2<f32>(0.0, 0.0);
    if (t < FRAME_LEN) {
        var w = 1.0;
        if (HAS_WINDOW) {
            w = window_at(t);
        }
        v.x = inf_as_nan(segs_at(x0 + t) * w);
        if (has_y) {
            v.y = inf_as_nan(segs_at(x0 + SEGMENT_STRIDE + t) * w);
        }
    }
    return v;
}

// The bin whose transform pairs with bin j's (n − j mod n, for j ≤ n/2;
// any n: the one-pass kernels' FFT is mixed-radix).
fn mirror(j: u32) -> u32 {
    return select(N - j, 0u, j == 0u);
}

// Bin j's weighted power from a pair's transform: |X|² + |Y|² =
// (|Z[j]|² + |Z[n−j]|²) / 2, the ½ inside the weight.
fn pair_power(z: vec2<f32>, m: vec2<f32>, j: u32) -> f32 {
    let za = AMP * z;
    let ma = AMP * m;
    return weight(j) * (dot(za, za) + dot(ma, ma));
}

// The batch entry of a workgroup in a 2-D grid of workgroups.
fn batch_entry(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return wid.x + wid.y * groups.x;
}

// Split plans: the pairs of chunk c, as first and end.
fn chunk_pairs(c: u32) -> vec2<u32> {
    return vec2<u32>(c * PAIRS_PER_CHUNK, min(PAIRS, (c + 1u) * PAIRS_PER_CHUNK));
}

// Split plans: thread tid's bins of the partial power spectrum of work
// item `item` (batch entry · CHUNKS + chunk).
fn write_partials(tid: u32, psd: ptr<function, array<f32, BPT>>, item: u32) {
    for (var i = 0u; i < BPT; i++) {
        let j = tid + i * WG;
        if (j < BINS) {
            partials_set(item * BINS + j, (*psd)[i]);
        }
    }
}

// Split plans, last pass: one workgroup per batch entry sums the partial
// spectra of its chunks, in chunk order, then takes its top-k.
@compute @workgroup_size({{WG}})
fn peaks_of_partials(
    lane: Lane,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let tid = lane.tid;
    let b = batch_entry(wid, groups);
    if (b >= BATCH) {
        return;
    }
    var psd: array<f32, BPT>;
    for (var i = 0u; i < BPT; i++) {
        psd[i] = 0.0;
        let j = tid + i * WG;
        if (j < BINS) {
            for (var c = 0u; c < CHUNKS; c++) {
                psd[i] += partials_get((b * CHUNKS + c) * BINS + j);
            }
        }
    }
    write_peaks(lane, &psd, b * 2u * K);
}
