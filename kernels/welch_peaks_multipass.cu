// Fused Welch peaks for CUDA, multi-pass plans (n_fft > 4096, or asked
// for), radix-2 form: load, one radix-2 stage per launch (the stage is a
// kernel argument), peaks_of — through a global spectrum buffer,
// specialised by the same double-brace placeholders as the other kernels.
// Power-of-two lengths. (welch_peaks_four_step.cu is the four-step form.)

#define WELCH_MULTIPASS 1
#define WELCH_FOUR_STEP 0

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


// The power of the spectra and the last passes (peaks_of, partial_of),
// bin j of a pair's spectrum at SPECTRUM_SLOT(j): here in order.
#define SPECTRUM_SLOT(j) (j)
{{MULTIPASS_POWER}}

{{ENTRIES}}
