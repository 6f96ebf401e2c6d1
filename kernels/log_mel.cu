// The fused log-mel op (rlx_opt.log_mel) in CUDA: the twin of log_mel.wgsl
// (what it computes is described there and in src/fused/log_mel.rs), with
// the shared mixed-radix FFT (fft_mixed_radix.cuh) pasted in for the FFT
// placeholder. Two launches per op run: `mel_bands` (a thread per filter),
// then `log_mel` (each frame with a transform of its own: an even n_fft
// packed into a complex FFT of half its length, an odd one a full complex
// FFT of the frame), in one of two forms (LogMelPlan::warps):
//   the warp form, a warp per frame and FRAMES_PER_BLOCK frames a block,
//   nothing but __syncwarp between its steps and the frame's maximum by
//   shuffles (CUDA's default up to LOG_MEL_MAX_WARP_FFT points: it ran on
//   an H200 and matched the reference; RLX_OPT_CUDA_LOG_MEL_WARPS=0 turns
//   it off);
//   the block form, a block per frame (WGSL's, and CUDA's for longer FFTs
//   or with RLX_OPT_CUDA_LOG_MEL_WARPS=0).

#define WG {{WG}}u
#define BANDS_WG {{BANDS_WG}}u
#define LOG_MEL_WARPS {{LOG_MEL_WARPS}}
#define FRAMES_PER_BLOCK {{FRAMES_PER_BLOCK}}u

#if LOG_MEL_WARPS
// Each FFT is one warp's, synced by the warp alone.
#define FFT_LANES 32u
#define FFT_WARP_SYNC
#endif

{{FFT}}

#define FRAME_LEN {{FRAME_LEN}}u
#define BINS {{BINS}}u
#define MELS {{MELS}}u
#define N_FFT {{N_FFT}}u
#define PACKED {{PACKED}}
static_assert(PACKED ? N_FFT == 2u * FFT_N : N_FFT == FFT_N, "an even n_fft is packed into a transform of half its length");
#define ROWS {{ROWS}}u
#define SIGNAL {{SIGNAL}}
#define BATCH {{BATCH}}u
#define SIGNAL_LEN {{SIGNAL_LEN}}u
#define HOP {{HOP}}u
#define HAS_WINDOW {{HAS_WINDOW}}
// Each frame is transformed at TRANSFORM_SCALE (a power of two: no FFT sum
// of loud samples overflows f32 on the way), undone in AMP, the FFT norm's
// factor on each amplitude (√power_scale · 1/TRANSFORM_SCALE), applied
// before squaring, as the unfused chain does (LogMelAttrs::transform_scale).
#define TRANSFORM_SCALE {{TRANSFORM_SCALE}}f
#define AMP {{AMP}}f
#define INF_IS_NAN {{INF_IS_NAN}}
#define LOG_FLOOR 1e-10f
#define DYNAMIC_RANGE 8.0f

// Filter m's band: (first, end), (0, 0) for a filter of zeros.
__device__ __forceinline__ uint2 band_of(const float* __restrict__ filters, unsigned int m) {
    unsigned int first = BINS, last = 0u;
    for (unsigned int k = 0u; k < BINS; k++) {
        if (filters[m * BINS + k] != 0.0f) {
            first = min(first, k);
            last = k;
        }
    }
    return first == BINS ? make_uint2(0u, 0u) : make_uint2(first, last + 1u);
}

// The bands as `mel_bands` wrote them: (first, end) pairs of u32, or in
// RLX's arena pairs of f32 (exact: a band's bins stay far below 2^24).
__device__ __forceinline__ uint2 band_get(const uint2* __restrict__ bands, unsigned int m) {
    return bands[m];
}

__device__ __forceinline__ uint2 band_get(const float* __restrict__ bands, unsigned int m) {
    return make_uint2((unsigned int)bands[2u * m], (unsigned int)bands[2u * m + 1u]);
}

__device__ __forceinline__ unsigned int frame_start(unsigned int row) {
    return SIGNAL ? (row % BATCH) * SIGNAL_LEN + (row / BATCH) * HOP : row * FRAME_LEN;
}

// inf_as_nan: ±∞ loaded as NaN under INF_IS_NAN (samples.cuh).
{{SAMPLES}}

__device__ __forceinline__ float sample(const float* __restrict__ frames, const float* __restrict__ window, unsigned int start, unsigned int t) {
    return inf_as_nan(frames[start + t] * (HAS_WINDOW ? window[t] : 1.0f)) * TRANSFORM_SCALE;
}

// Row `row`'s samples (windowed, zero-padded) into `buf`, each at its
// fft_position, by `lanes` threads from `tid`.
__device__ __forceinline__ void load_frame(const float* __restrict__ frames, const float* __restrict__ window, unsigned int row, float2* buf, unsigned int tid, unsigned int lanes) {
    unsigned int x0 = frame_start(row);
    for (unsigned int j = tid; j < FFT_N; j += lanes) {
        float2 z = make_float2(0.0f, 0.0f);
        if (PACKED) {
            unsigned int t = 2u * j;
            if (t < FRAME_LEN) {
                z.x = sample(frames, window, x0, t);
            }
            if (t + 1u < FRAME_LEN) {
                z.y = sample(frames, window, x0, t + 1u);
            }
        } else if (j < FRAME_LEN) {
            z.x = sample(frames, window, x0, j);
        }
        buf[fft_at(fft_position(j))] = z;
    }
}

// The one-sided power of the transformed frame in `buf` into `power`.
__device__ __forceinline__ void power_of(const float2* buf, float* power, unsigned int tid, unsigned int lanes) {
    for (unsigned int k = tid; k < BINS; k += lanes) {
        // An even n_fft's bins split from its packed transform.
        const float2 z = PACKED ? fft_split_bin(buf, k) : buf[fft_at(k % FFT_N)];
        const float2 x = make_float2(AMP * z.x, AMP * z.y);
        power[k] = x.x * x.x + x.y * x.y;
    }
}

// log10 of filter m's sum over its band of `power`, floored at LOG_FLOOR.
template <typename Bands>
__device__ __forceinline__ float log_mel_of(const float* __restrict__ filters, Bands bands, const float* power, unsigned int m) {
    uint2 band = band_get(bands, m);
    float acc = 0.0f;
    for (unsigned int k = band.x; k < band.y; k++) {
        acc += power[k] * filters[m * BINS + k];
    }
    return log10f(fmaxf(acc, LOG_FLOOR));
}

// Each frame's transform, power, bands, log and floor, in the plan's form.
// The warp form: warp w of the block takes row blockIndex·FRAMES_PER_BLOCK
// + w with its own slices of shared memory; every step syncs the warp
// only, and the frame's maximum is a butterfly of shuffles (every lane
// ends with it). A warp past the last row leaves at once: no barrier of
// the block waits for it. The block form: a block per frame, a barrier
// between steps, thread 0 finding the maximum.
template <typename Bands>
__device__ __forceinline__ void log_mel_body(
    const float* __restrict__ frames,
    const float* __restrict__ window,
    const float* __restrict__ filters,
    Bands bands,
    float* __restrict__ mels) {
#if LOG_MEL_WARPS
    __shared__ float2 bufs[FRAMES_PER_BLOCK][FFT_BUF_LEN];
    __shared__ float powers[FRAMES_PER_BLOCK][BINS];
    __shared__ float mel_values[FRAMES_PER_BLOCK][MELS];
    const unsigned int warp = threadIdx.x / 32u, lane = threadIdx.x % 32u;
    const unsigned int row = (blockIdx.x + blockIdx.y * gridDim.x) * FRAMES_PER_BLOCK + warp;
    if (row >= ROWS) {
        return;
    }
    float2* buf = bufs[warp];
    float* power = powers[warp];
    float* mel = mel_values[warp];
    load_frame(frames, window, row, buf, lane, 32u);
    __syncwarp();
    fft_run(buf, lane);
    power_of(buf, power, lane, 32u);
    __syncwarp();
    float top = -__int_as_float(0x7f800000); // −∞
    for (unsigned int m = lane; m < MELS; m += 32u) {
        mel[m] = log_mel_of(filters, bands, power, m);
        top = fmaxf(top, mel[m]);
    }
#pragma unroll
    for (unsigned int offset = 16u; offset > 0u; offset /= 2u) {
        top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
    }
    // Each lane reads back only the mel values it wrote.
    float floor_value = top - DYNAMIC_RANGE;
    for (unsigned int m = lane; m < MELS; m += 32u) {
        mels[row * MELS + m] = (fmaxf(mel[m], floor_value) + 4.0f) / 4.0f;
    }
#else
    __shared__ float2 buf[FFT_BUF_LEN];
    // The frame's power of each bin, then its mel values, and its floor.
    __shared__ float power[BINS];
    __shared__ float mel[MELS];
    __shared__ float lowest;
    unsigned int row = blockIdx.x + blockIdx.y * gridDim.x;
    if (row >= ROWS) {
        return;
    }
    unsigned int tid = threadIdx.x;
    load_frame(frames, window, row, buf, tid, WG);
    __syncthreads();
    fft_run(buf, tid);
    power_of(buf, power, tid, WG);
    __syncthreads();
    for (unsigned int m = tid; m < MELS; m += WG) {
        mel[m] = log_mel_of(filters, bands, power, m);
    }
    __syncthreads();
    if (tid == 0u) {
        float top = mel[0];
        for (unsigned int m = 1u; m < MELS; m++) {
            top = fmaxf(top, mel[m]);
        }
        lowest = top - DYNAMIC_RANGE;
    }
    __syncthreads();
    float floor_value = lowest;
    for (unsigned int m = tid; m < MELS; m += WG) {
        mels[row * MELS + m] = (fmaxf(mel[m], floor_value) + 4.0f) / 4.0f;
    }
#endif
}

// The entry points: an argument per operand (log_mel_entries.cuh) or RLX's
// custom-kernel signature (log_mel_entries_rlx.cuh).
{{ENTRIES}}
