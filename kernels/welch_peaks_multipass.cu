// Fused Welch peaks for CUDA, multi-pass plan (n_fft > 4096): the same three
// passes as welch_peaks_multipass.wgsl — load, one radix-2 stage per launch
// (the stage is a kernel argument here), peaks_of — through a global
// spectrum buffer, specialised by the same double-brace placeholders.

#define WELCH_MULTIPASS 1

{{COMMON}}

__device__ __forceinline__ unsigned long long linear() {
    return batch_entry() * WG + threadIdx.x;
}

// The passes; their entry points (arguments per operand, or RLX's
// arena) are pasted in for the ENTRIES placeholder below.
__device__ __forceinline__ void load_body(const float* __restrict__ segs, const float* __restrict__ window, float2* __restrict__ spectra) {
    const unsigned long long i = linear();
    if (i >= (unsigned long long)BATCH * PAIRS * N) return;
    const unsigned int t = i % N;
    const unsigned long long pair = (i / N) % PAIRS;
    const unsigned long long b = i / ((unsigned long long)N * PAIRS);
    const unsigned long long s = 2 * pair;
    const float2 v = windowed_pair(segs + b * BATCH_STRIDE + s * SEGMENT_STRIDE, window, t, s + 1 < SEGMENTS);
    spectra[(i - t) + bit_reversed(t)] = v;
}

// One radix-2 stage from `in` to `out`, which may be the same buffer: each
// butterfly reads and writes its own two points.
__device__ __forceinline__ void stage_body(const float2* in, float2* out, unsigned int stage) {
    const unsigned long long i = linear();
    if (i >= (unsigned long long)BATCH * PAIRS * (N / 2)) return;
    const unsigned long long fft = i / (N / 2);
    const unsigned int q = i % (N / 2);
    const unsigned int half = 1u << stage;
    const unsigned int pos = q & (half - 1u);
    const unsigned long long i0 = fft * N + butterfly_first(q, stage);
    const unsigned long long i1 = i0 + half;
    const float2 a = in[i0];
    const float2 t2 = twiddled(in[i1], pos, half);
    out[i0] = make_float2(a.x + t2.x, a.y + t2.y);
    out[i1] = make_float2(a.x - t2.x, a.y - t2.y);
}


// The bins thread tid owns of the power of spectrum pairs first..end of
// batch entry b, into psd.
__device__ __forceinline__ void spectra_power(const float2* __restrict__ spectra, unsigned long long b, unsigned int first, unsigned int end, float (&psd)[BPT]) {
    const unsigned int tid = threadIdx.x;
    for (unsigned int i = 0; i < BPT; i++) {
        psd[i] = 0.0f;
        const unsigned int j = tid + i * WG;
        if (j < BINS) {
            for (unsigned int pair = first; pair < end; pair++) {
                const float2* z = spectra + (b * PAIRS + pair) * N;
                psd[i] += pair_power(z[j], z[mirror(j)], j);
            }
        }
    }
}

__device__ __forceinline__ void peaks_of_body(const float2* __restrict__ spectra, float* __restrict__ peaks) {
    __shared__ Key best[WARPS];
    const unsigned long long b = batch_entry();
    if (b >= BATCH) return;
    float psd[BPT];
    spectra_power(spectra, b, 0, PAIRS, psd);
    write_peaks(threadIdx.x, psd, best, peaks + b * 2ull * K);
}

// Split-multipass plan: work item (batch entry, chunk) per block.
__device__ __forceinline__ void partial_of_body(const float2* __restrict__ spectra, float* __restrict__ partials) {
    const unsigned long long item = batch_entry();
    if (item >= (unsigned long long)BATCH * CHUNKS) return;
    float psd[BPT];
    const unsigned long long c = item % CHUNKS;
    spectra_power(spectra, item / CHUNKS, chunk_first(c), chunk_end(c), psd);
    write_partials(threadIdx.x, psd, partials, item);
}

{{ENTRIES}}
