// Fused Welch peaks (rlx_opt.welch_peaks), the FFT in workgroup memory:
// `welch_peaks`, one workgroup per batch entry (the batch plan); or, for
// the split plan, `partial_psd`, one workgroup per chunk of an entry's
// segment pairs, then `peaks_of_partials` (welch_peaks_common.wgsl).
//
// Specialised per fused op by replacing the double-brace placeholders with
// constants (src/lower/mod.rs), then validated by naga, which emits SPIR-V
// and Metal from it. The meaning is the one in src/fused.rs:
//   for each pair of segments, z = x + i·y (windowed, zero-padded) goes
//   through the in-workgroup mixed-radix FFT the GPU kernels share
//   (fft_mixed_radix.wgsl, pasted in for the FFT placeholder), and since Welch only needs
//   |X[j]|² + |Y[j]|² = (|Z[j]|² + |Z[n−j]|²) / 2, each thread adds that to
//   the bins it owns (private memory); then k rounds of a workgroup-wide
//   argmax pick the peaks: larger power first, NaN above all, ties to the
//   lower bin; slots past the bin count get (−1, −inf).
// Workgroup memory is the FFT buffer alone (8·N bytes); the top-k reduction
// reuses it. It holds integers, so reduction keys keep their exact bits.

{{COMMON}}

{{FFT}}

// The whole workgroup runs each pair's FFT.
const FFT_LANES: u32 = WG;

// The operands (segs_at, window_at, peaks_set): bindings of their own, or
// RLX's arena (src/lower/wgsl.rs picks the snippet).
{{IO}}

var<workgroup> buf: array<vec2<u32>, N>;

fn load(i: u32) -> vec2<f32> {
    return bitcast<vec2<f32>>(buf[i]);
}

fn store(i: u32, v: vec2<f32>) {
    buf[i] = bitcast<vec2<u32>>(v);
}

// The shared FFT's buffer.
fn fft_get(i: u32) -> vec2<f32> {
    return load(i);
}

fn fft_set(i: u32, v: vec2<f32>) {
    store(i, v);
}

// The top-k reduction reuses the FFT buffer.
fn scratch_get(i: u32) -> vec2<u32> {
    return buf[i];
}

fn scratch_set(i: u32, v: vec2<u32>) {
    buf[i] = v;
}

// Add the power of segment pairs first..end of batch entry b to the bins
// thread tid owns. Call from uniform control flow (it has barriers).
fn add_pairs(tid: u32, b: u32, first: u32, end: u32, psd: ptr<function, array<f32, BPT>>) {
    // The FFT's twiddles, once for every pair (the first load's barrier follows).
    fft_prepare(tid);
    for (var pair = first; pair < end; pair++) {
        let s = 2u * pair;
        let x0 = b * BATCH_STRIDE + s * SEGMENT_STRIDE;
        let has_y = s + 1u < SEGMENTS;
        for (var t = tid; t < N; t += WG) {
            store(fft_position(t), windowed_pair(x0, t, has_y));
        }
        workgroupBarrier();
        fft_run(tid);
        for (var i = 0u; i < BPT; i++) {
            let j = tid + i * WG;
            if (j < BINS) {
                (*psd)[i] += pair_power(load(j), load(mirror(j)), j);
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size({{WG}})
fn welch_peaks(
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
    }
    add_pairs(tid, b, 0u, PAIRS, &psd);
    write_peaks(lane, &psd, b * 2u * K);
}

// Split plan, first pass: work item (batch entry, chunk) per workgroup.
@compute @workgroup_size({{WG}})
fn partial_psd(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let item = batch_entry(wid, groups);
    if (item >= BATCH * CHUNKS) {
        return;
    }
    var psd: array<f32, BPT>;
    for (var i = 0u; i < BPT; i++) {
        psd[i] = 0.0;
    }
    let pairs = chunk_pairs(item % CHUNKS);
    add_pairs(tid, item / CHUNKS, pairs.x, pairs.y, &psd);
    write_partials(tid, &psd, item);
}
