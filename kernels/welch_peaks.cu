// Fused Welch peaks (rlx_opt.welch_peaks) for CUDA, the FFT in shared
// memory (or, where the register FFT takes the kernel, in a warp's
// registers): one block per batch entry (`welch_peaks`, the batch plan), or per
// chunk of an entry's segment pairs (`partial_psd`, then
// `peaks_of_partials`: the split plan).
//
// The same algorithm as welch_peaks.wgsl, specialised the same way (the
// double-brace placeholders, src/lower/mod.rs) and compiled at run time by NVRTC.
// Pairs of segments share one FFT in shared memory (the mixed-radix FFT
// the CUDA kernels share, fft_mixed_radix.cuh, pasted in for the FFT
// placeholder)
// (|X|² + |Y|² = (|Z[j]|² + |Z[n−j]|²) / 2), or, where an entry has one
// segment and the plan packs it (PACKED), its even and odd samples share an
// FFT of half the length; each thread accumulates the
// power of the bins it owns in registers; k rounds of a block-wide argmax on
// integer keys pick the peaks (NaN first, then power, ties to the lower bin).
// A block is one warp for FFTs up to 512 points (the plan's threads): no
// block-wide barrier then, only __syncwarp and shuffles.
// Plain CUDA C++: NVRTC has no headers of its own.

#define WELCH_MULTIPASS 0
#define WELCH_FOUR_STEP 0
// Blocks per SM the entry points' launch bounds ask ptxas to fit
// registers for (lower::cuda::min_blocks).
#define MIN_BLOCKS {{MIN_BLOCKS}}u

{{COMMON}}

{{FFT}}

// A one-segment entry as one complex FFT of N/2 points, its even samples
// the real parts and its odd ones the imaginary (on by default,
// RLX_OPT_CUDA_PACKED_SEGMENT=0 turns it off: KernelGeometry::packed),
// split into the one-sided spectrum after the FFT; else pairs of segments,
// the second zeros past the last.
#define PACKED {{PACKED}}
// The FFT's points a block loads: N pairs of samples (x[t], y[t]), or the
// packed segment's N/2 points (x[2j], x[2j+1]).
#define LOAD_POINTS (PACKED ? FFT_N : N)
static_assert(!PACKED || (SEGMENTS == 1u && 2u * FFT_N == N), "a packed segment is one segment's FFT of half its length");
// Points of a segment pair each thread loads (the plan keeps it ≤ 16).
#define SAMPLES_PER_THREAD ((LOAD_POINTS + WG - 1u) / WG)
// Whether the next pair's samples are loaded while this pair's FFT runs
// (lower::cuda::prefetches says where, and why); else each pair is stored
// straight into shared memory when its FFT starts.
#define PREFETCH {{PREFETCH}}

// The load pass (on by default, RLX_OPT_CUDA_LOAD_PASS=0 turns it off,
// lower::cuda::SourceForms):
// where each thread's prefetched samples tid + i·WG hold whole butterflies
// of the FFT's first pass (the pass's butterfly at fft_position(t) takes
// samples t + j·FFT_N/FFT_FIRST_POINTS, t below FFT_N/FFT_FIRST_POINTS: a
// multiple of WG), the thread runs that pass on them in registers and
// stores its results, instead of storing the samples for fft_run to read
// back: one round trip through shared memory and one barrier fewer a pair.
// Rust decides where it fits (lower::cuda::load_pass_fits), and the
// compiler checks it here.
#define LOAD_PASS {{LOAD_PASS}}
static_assert(!LOAD_PASS || (PREFETCH && SAMPLES_PER_THREAD * WG == LOAD_POINTS && (LOAD_POINTS / FFT_FIRST_POINTS) % WG == 0u),
              "the load pass needs whole first-pass butterflies in each thread's prefetched samples");

// The register FFT (on by default, RLX_OPT_CUDA_REGISTER_FFT=0 turns it
// off, lower::cuda::SourceForms::register_fft): a one-warp block transforms
// each pair in its lanes' registers (fft_warp_run), no shared memory and
// no barrier a pair; Rust decides where it fits
// (lower::cuda::register_fft_fits) and, where the load pass fits too,
// runs it only on grids of at most REGISTER_FFT_MOST_BLOCKS blocks
// (lower::cuda::SourceForms::register_fft_in); the compiler checks the
// fit here.
#define REGISTER_FFT {{REGISTER_FFT}}
#if REGISTER_FFT
static_assert(WG == 32u && !PACKED && !LOAD_PASS && FFT_WARP_POINTS * 32u == N, "the register FFT is a one-warp block's, a pair a transform");
#endif

// Sample t of the segment starting at x, windowed; 0 past its frame.
__device__ __forceinline__ float windowed_sample(const float* __restrict__ x, const float* __restrict__ window, unsigned int t) {
    return t < FRAME_LEN ? inf_as_nan(x[t] * (HAS_WINDOW ? window[t] : 1.0f)) : 0.0f;
}

// Point t of the FFT of the pair of segments starting at x: (x[t], y[t])
// windowed, or a packed segment's (x[2t], x[2t+1]).
__device__ __forceinline__ float2 load_point(const float* __restrict__ x, const float* __restrict__ window, unsigned int t, bool has_y) {
    if (PACKED) return make_float2(windowed_sample(x, window, 2u * t), windowed_sample(x, window, 2u * t + 1u));
    return windowed_pair(x, window, t, has_y);
}

// Thread tid's points tid + i·WG of the pair of segments starting at x,
// windowed: coalesced loads, the warp reading consecutive floats.
__device__ __forceinline__ void load_pair(float2 (&v)[SAMPLES_PER_THREAD], const float* __restrict__ x, const float* __restrict__ window, bool has_y) {
    const unsigned int tid = threadIdx.x;
#pragma unroll
    for (unsigned int i = 0; i < SAMPLES_PER_THREAD; i++) {
        const unsigned int t = tid + i * WG;
        if (t < LOAD_POINTS) v[i] = load_point(x, window, t, has_y);
    }
}

// Bin j's weighted power from the transform in `buf`: a pair's
// (pair_power), or a packed segment's |X[j]|², X[j] split from
// Z = FFT(x[2t] + i·x[2t+1]) (fft_split_bin), twice (the weight halves it
// for the pair formula).
__device__ __forceinline__ float bin_power(const float2* buf, unsigned int j) {
    if (!PACKED) return pair_power(buf[fft_at(j)], buf[fft_at(mirror(j))], j);
    const float2 z = fft_split_bin(buf, j);
    const float2 x = make_float2(AMP * z.x, AMP * z.y);
    return weight(j) * 2.0f * (x.x * x.x + x.y * x.y);
}

// The first sample of segment pair `pair` of batch entry b.
__device__ __forceinline__ const float* pair_at(const float* __restrict__ segs, unsigned long long b, unsigned int pair) {
    return segs + b * BATCH_STRIDE + 2ull * pair * SEGMENT_STRIDE;
}

#if REGISTER_FFT
// Lane `lane`'s points lane + 32·m of the pair of segments starting at x,
// windowed: the warp reads 32 consecutive floats a point.
__device__ __forceinline__ void load_lane_points(float2 (&v)[FFT_WARP_POINTS], const float* __restrict__ x, const float* __restrict__ window, bool has_y,
                                                 unsigned int lane) {
#pragma unroll
    for (unsigned int m = 0; m < FFT_WARP_POINTS; m++) v[m] = windowed_pair(x, window, lane + 32u * m, has_y);
}

// add_pairs in the warp's registers. Lane l holds bins q + P·r of each
// transform (r = fft_warp_lane(l): the bit reversal is its own inverse),
// and adds their power over the pairs in power[q]. Bin j's mirror N − j is
// value P − q of lane l ^ 31 (row 31 − r), or for q = 0 value 0 of row
// (32 − r) mod 32: one shuffle a value, by every lane. Then the powers go
// to the top-k's layout (bin tid + i·WG in psd[i]) through `buf`, once.
__device__ __forceinline__ void add_pairs_in_registers(float2* buf, const float* __restrict__ segs, const float* __restrict__ window, unsigned long long b,
                                                       unsigned int first, unsigned int end, float (&psd)[BPT]) {
    const unsigned int lane = threadIdx.x;
    if (first >= end) return;
    const unsigned int row = fft_warp_lane(lane);
    const unsigned int mirror_lane = fft_warp_lane((32u - row) & 31u);
    float power[FFT_WARP_POINTS];
#pragma unroll
    for (unsigned int q = 0; q < FFT_WARP_POINTS; q++) power[q] = 0.0f;
    float2 next[FFT_WARP_POINTS];
    load_lane_points(next, pair_at(segs, b, first), window, 2u * first + 1u < SEGMENTS, lane);
    for (unsigned int pair = first; pair < end; pair++) {
        float2 v[FFT_WARP_POINTS];
#pragma unroll
        for (unsigned int m = 0; m < FFT_WARP_POINTS; m++) v[m] = next[m];
        // The next pair's loads in flight while this one transforms.
        if (pair + 1u < end) load_lane_points(next, pair_at(segs, b, pair + 1u), window, 2u * pair + 3u < SEGMENTS, lane);
        fft_warp_run(v, lane);
#pragma unroll
        for (unsigned int q = 0; q < FFT_WARP_POINTS; q++) {
            const float2 m = fft_shfl(v[(FFT_WARP_POINTS - q) % FFT_WARP_POINTS], q == 0u ? mirror_lane : lane ^ 31u);
            const unsigned int j = q + FFT_WARP_POINTS * row;
            if (j < BINS) power[q] += pair_power(v[q], m, j);
        }
    }
#pragma unroll
    for (unsigned int q = 0; q < FFT_WARP_POINTS; q++) {
        const unsigned int j = q + FFT_WARP_POINTS * row;
        if (j < BINS) buf[j] = make_float2(power[q], 0.0f);
    }
    __syncwarp();
#pragma unroll
    for (unsigned int i = 0; i < BPT; i++) {
        const unsigned int j = lane + i * WG;
        if (j < BINS) psd[i] += buf[j].x;
    }
    // Every read done before the top-k writes its keys over `buf` (its
    // one-warp rounds write none today: kept so that a top-k that does
    // cannot race these reads).
    __syncwarp();
}
#endif

// Add the power of segment pairs first..end of batch entry b to the bins
// thread tid owns, through `buf` (FFT_BUF_LEN points of shared memory). The next
// pair's loads are issued before this pair's FFT (PREFETCH), so that they
// are in flight while it computes; a block of one warp syncs with __syncwarp.
__device__ __forceinline__ void add_pairs(float2* buf, const float* __restrict__ segs, const float* __restrict__ window, unsigned long long b,
                                          unsigned int first, unsigned int end, float (&psd)[BPT]) {
#if REGISTER_FFT
    add_pairs_in_registers(buf, segs, window, b, first, end, psd);
#else
    const unsigned int tid = threadIdx.x;
    if (first >= end) return;
    float2 v[SAMPLES_PER_THREAD];
    if (PREFETCH) load_pair(v, pair_at(segs, b, first), window, 2u * first + 1u < SEGMENTS);
    for (unsigned int pair = first; pair < end; pair++) {
        if (LOAD_PASS) {
#if LOAD_PASS
            fft_load_first_pass(buf, v, tid);
#endif
            if (pair + 1u < end) load_pair(v, pair_at(segs, b, pair + 1u), window, 2u * pair + 3u < SEGMENTS);
        } else if (PREFETCH) {
#pragma unroll
            for (unsigned int i = 0; i < SAMPLES_PER_THREAD; i++) {
                const unsigned int t = tid + i * WG;
                if (t < LOAD_POINTS) buf[fft_at(fft_position(t))] = v[i];
            }
            if (pair + 1u < end) load_pair(v, pair_at(segs, b, pair + 1u), window, 2u * pair + 3u < SEGMENTS);
        } else {
            // Straight into shared memory, no samples held in registers.
            const float* x = pair_at(segs, b, pair);
            const bool has_y = 2u * pair + 1u < SEGMENTS;
            for (unsigned int t = tid; t < LOAD_POINTS; t += WG) {
                buf[fft_at(fft_position(t))] = load_point(x, window, t, has_y);
            }
        }
        fft_sync();
        if (LOAD_PASS) {
            fft_run_after_first(buf, tid);
        } else {
            fft_run(buf, tid);
        }
        // Unrolled: every index into psd is a constant, so it stays in registers.
#pragma unroll
        for (unsigned int i = 0; i < BPT; i++) {
            const unsigned int j = tid + i * WG;
            if (j < BINS) {
                psd[i] += bin_power(buf, j);
            }
        }
        fft_sync();
    }
#endif
}

// The kernels; their entry points (arguments per operand, or RLX's arena)
// are pasted in for the ENTRIES placeholder below.
// The top-k reuses the FFT's shared memory (8·FFT_BUF_LEN bytes is the plan's whole
// budget): as many keys as points, of which it takes WARPS (one per warp),
// or with WARP_TOPK WARPS·K where they fit (write_peaks' CAPACITY). A union,
// so that the keys are objects of their own type there, not float2 storage
// read through a Key* (strict aliasing). add_pairs ends on a barrier: every
// read of the spectrum is done before the first key is written.
union OnePassShared {
    float2 fft[FFT_BUF_LEN];
    Key keys[FFT_BUF_LEN];
};
static_assert(sizeof(OnePassShared) == sizeof(float2) * FFT_BUF_LEN, "the top-k's keys fit in the FFT's shared memory");

__device__ __forceinline__ void welch_peaks_body(const float* __restrict__ segs, const float* __restrict__ window, float* __restrict__ peaks) {
    __shared__ OnePassShared shared;
    const unsigned long long b = batch_entry();
    if (b >= BATCH) return;
    float psd[BPT];
#pragma unroll
    for (unsigned int i = 0; i < BPT; i++) psd[i] = 0.0f;
    add_pairs(shared.fft, segs, window, b, 0, PAIRS, psd);
    write_peaks<FFT_BUF_LEN>(threadIdx.x, psd, shared.keys, peaks + b * 2ull * K);
}

// Split plan, first pass: work item (batch entry, chunk) per block.
__device__ __forceinline__ void partial_psd_body(const float* __restrict__ segs, const float* __restrict__ window, float* __restrict__ partials) {
    __shared__ float2 buf[FFT_BUF_LEN];
    const unsigned long long item = batch_entry();
    if (item >= (unsigned long long)BATCH * CHUNKS) return;
    float psd[BPT];
#pragma unroll
    for (unsigned int i = 0; i < BPT; i++) psd[i] = 0.0f;
    const unsigned long long c = item % CHUNKS;
    add_pairs(buf, segs, window, item / CHUNKS, chunk_first(c), chunk_end(c), psd);
    write_partials(threadIdx.x, psd, partials, item);
}

{{ENTRIES}}
