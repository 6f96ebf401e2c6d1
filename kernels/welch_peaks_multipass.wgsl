// Fused Welch peaks, multi-pass plan: for FFTs too long for workgroup
// memory (n_fft > 4096). Same meaning and specialisation as
// welch_peaks.wgsl; the FFT runs in a global buffer instead:
//   load   — every pair of segments, windowed and zero-padded, as
//            z = x + i·y in bit-reversed order (one invocation per point);
//   stage  — one radix-2 butterfly stage in place (one invocation per
//            butterfly), dispatched LOG2N times, the stage index 0, 1, …
//            read from the uniform at binding 4;
//   peaks_of — one workgroup per batch entry: the pair formula
//            |X|² + |Y|² = (|Z[j]|² + |Z[n−j]|²) / 2 accumulated per bin,
//            then k rounds of a workgroup argmax on integer keys;
//            or, in the split-multipass plan, `partial_of` per chunk of
//            an entry's pairs, then `peaks_of_partials`.

{{COMMON}}

// The operands (segs_at, window_at, peaks_set, spectrum_in, spectrum_out)
// and `stage_index`, the radix-2 stage a `stage` dispatch runs: bindings of
// their own, or RLX's arena, where each pass is an op of its own
// (src/lower/wgsl.rs picks the snippet).
{{IO}}

var<workgroup> best: array<vec2<u32>, WG>;

fn scratch_get(i: u32) -> vec2<u32> {
    return best[i];
}

fn scratch_set(i: u32, v: vec2<u32>) {
    best[i] = v;
}

fn linear(lid: u32, wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return batch_entry(wid, groups) * WG + lid;
}

@compute @workgroup_size({{WG}})
fn load(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = linear(lid, wid, groups);
    if (i >= BATCH * PAIRS * N) {
        return;
    }
    let t = i % N;
    let pair = (i / N) % PAIRS;
    let b = i / (N * PAIRS);
    let s = 2u * pair;
    let v = windowed_pair(b * BATCH_STRIDE + s * SEGMENT_STRIDE, t, s + 1u < SEGMENTS);
    spectrum_out((i - t) + bit_reversed(t), v);
}

@compute @workgroup_size({{WG}})
fn stage(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = linear(lid, wid, groups);
    if (i >= BATCH * PAIRS * (N / 2u)) {
        return;
    }
    let fft = i / (N / 2u);
    let q = i % (N / 2u);
    let s = stage_index;
    let half = 1u << s;
    let pos = q & (half - 1u);
    let i0 = fft * N + butterfly_first(q, s);
    let i1 = i0 + half;
    let a = spectrum_in(i0);
    let t2 = twiddled(spectrum_in(i1), pos, half);
    spectrum_out(i0, a + t2);
    spectrum_out(i1, a - t2);
}

// The bins thread tid owns of the power of spectrum pairs first..end of
// batch entry b.
fn spectra_power(tid: u32, b: u32, first: u32, end: u32) -> array<f32, BPT> {
    var psd: array<f32, BPT>;
    for (var i = 0u; i < BPT; i++) {
        psd[i] = 0.0;
        let j = tid + i * WG;
        if (j < BINS) {
            for (var pair = first; pair < end; pair++) {
                let base = (b * PAIRS + pair) * N;
                psd[i] += pair_power(spectrum_in(base + j), spectrum_in(base + mirror(j)), j);
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
