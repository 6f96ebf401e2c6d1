// Fused Welch peaks (rlx_opt.welch_peaks) for CUDA, the FFT in shared
// memory: one block per batch entry (`welch_peaks`, the batch plan), or per
// chunk of an entry's segment pairs (`partial_psd`, then
// `peaks_of_partials`: the split plan).
//
// The same algorithm as welch_peaks.wgsl, specialised the same way (the
// double-brace placeholders, src/lower/mod.rs) and compiled at run time by NVRTC.
// Pairs of segments share one FFT in shared memory (the mixed-radix FFT
// the CUDA kernels share, fft_mixed_radix.cuh, pasted in for the FFT
// placeholder)
// (|X|² + |Y|² = (|Z[j]|² + |Z[n−j]|²) / 2); each thread accumulates the
// power of the bins it owns in registers; k rounds of a block-wide argmax on
// integer keys pick the peaks (NaN first, then power, ties to the lower bin).
// Plain CUDA C++: NVRTC has no headers of its own.

#define WELCH_MULTIPASS 0

{{COMMON}}

{{FFT}}

// Add the power of segment pairs first..end of batch entry b to the bins
// thread tid owns, through `buf` (N points of shared memory).
__device__ __forceinline__ void add_pairs(float2* buf, const float* __restrict__ segs, const float* __restrict__ window, unsigned long long b,
                                          unsigned int first, unsigned int end, float (&psd)[BPT]) {
    const unsigned int tid = threadIdx.x;
    for (unsigned int pair = first; pair < end; pair++) {
        const unsigned long long s = 2ull * pair;
        const float* x = segs + b * BATCH_STRIDE + s * SEGMENT_STRIDE;
        const bool has_y = s + 1 < SEGMENTS;
        for (unsigned int t = tid; t < N; t += WG) {
            buf[fft_position(t)] = windowed_pair(x, window, t, has_y);
        }
        __syncthreads();
        fft_run(buf, tid);
        for (unsigned int i = 0; i < BPT; i++) {
            const unsigned int j = tid + i * WG;
            if (j < BINS) {
                psd[i] += pair_power(buf[j], buf[mirror(j)], j);
            }
        }
        __syncthreads();
    }
}

// The kernels; their entry points (arguments per operand, or RLX's arena)
// are pasted in for the ENTRIES placeholder below.
// The top-k reuses the FFT's shared memory (8·N bytes is the plan's whole
// budget; WG ≤ N keys fit): a union, so that the keys are objects of their
// own type there, not float2 storage read through a Key* (strict aliasing).
// add_pairs ends on a barrier: every read of the spectrum is done before
// the first key is written.
union OnePassShared {
    float2 fft[N];
    Key keys[WG];
};
static_assert(sizeof(OnePassShared) == sizeof(float2) * N, "the top-k's keys fit in the FFT's shared memory");

__device__ __forceinline__ void welch_peaks_body(const float* __restrict__ segs, const float* __restrict__ window, float* __restrict__ peaks) {
    __shared__ OnePassShared shared;
    const unsigned long long b = batch_entry();
    if (b >= BATCH) return;
    float psd[BPT];
    for (unsigned int i = 0; i < BPT; i++) psd[i] = 0.0f;
    add_pairs(shared.fft, segs, window, b, 0, PAIRS, psd);
    write_peaks(threadIdx.x, psd, shared.keys, peaks + b * 2ull * K);
}

// Split plan, first pass: work item (batch entry, chunk) per block.
__device__ __forceinline__ void partial_psd_body(const float* __restrict__ segs, const float* __restrict__ window, float* __restrict__ partials) {
    __shared__ float2 buf[N];
    const unsigned long long item = batch_entry();
    if (item >= (unsigned long long)BATCH * CHUNKS) return;
    float psd[BPT];
    for (unsigned int i = 0; i < BPT; i++) psd[i] = 0.0f;
    const unsigned long long c = item % CHUNKS;
    add_pairs(buf, segs, window, item / CHUNKS, chunk_first(c), chunk_end(c), psd);
    write_partials(threadIdx.x, psd, partials, item);
}

{{ENTRIES}}
