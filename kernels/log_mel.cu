// The fused log-mel op (rlx_opt.log_mel) in CUDA: the twin of log_mel.wgsl
// (what it computes is described there and in src/fused/log_mel.rs), with
// the shared mixed-radix FFT (fft_mixed_radix.cuh) pasted in for the FFT
// placeholder. Two launches per op run: `mel_bands` (a thread per filter),
// then `log_mel` (a block per frame, with a transform of its own: an even
// n_fft packed into a complex FFT of half its length, an odd one a full
// complex FFT of the frame).

#define WG {{WG}}u
#define BANDS_WG {{BANDS_WG}}u

{{FFT}}

#define FRAME_LEN {{FRAME_LEN}}u
#define BINS {{BINS}}u
#define MELS {{MELS}}u
#define N_FFT {{N_FFT}}u
#define PACKED {{PACKED}}
#define ROWS {{ROWS}}u
#define SIGNAL {{SIGNAL}}
#define BATCH {{BATCH}}u
#define SIGNAL_LEN {{SIGNAL_LEN}}u
#define HOP {{HOP}}u
#define HAS_WINDOW {{HAS_WINDOW}}
// power_scale.
#define SCALE {{SCALE}}f
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

__device__ __forceinline__ float sample(const float* __restrict__ frames, const float* __restrict__ window, unsigned int start, unsigned int t) {
    return frames[start + t] * (HAS_WINDOW ? window[t] : 1.0f);
}

// One frame per block: its transform, power, bands, log and floor.
template <typename Bands>
__device__ __forceinline__ void log_mel_body(
    const float* __restrict__ frames,
    const float* __restrict__ window,
    const float* __restrict__ filters,
    Bands bands,
    float* __restrict__ mels) {
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
    unsigned int x0 = frame_start(row);
    for (unsigned int j = tid; j < FFT_N; j += WG) {
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
    __syncthreads();
    fft_run(buf, tid);
    for (unsigned int k = tid; k < BINS; k += WG) {
        float2 x = buf[fft_at(k % FFT_N)];
        if (PACKED) {
            float2 b = buf[fft_at((FFT_N - k) % FFT_N)];
            // E = (Z[k] + conj Z[N−k]) / 2, O = −i·(Z[k] − conj Z[N−k]) / 2.
            float2 e = make_float2(0.5f * (x.x + b.x), 0.5f * (x.y - b.y));
            float2 o = fft_minus_i(make_float2(0.5f * (x.x - b.x), 0.5f * (x.y + b.y)));
            x = fft_add(e, fft_mul(fft_twiddle(k, N_FFT), o));
        }
        power[k] = SCALE * (x.x * x.x + x.y * x.y);
    }
    __syncthreads();
    for (unsigned int m = tid; m < MELS; m += WG) {
        uint2 band = band_get(bands, m);
        float acc = 0.0f;
        for (unsigned int k = band.x; k < band.y; k++) {
            acc += power[k] * filters[m * BINS + k];
        }
        mel[m] = log10f(fmaxf(acc, LOG_FLOOR));
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
}

// The entry points: an argument per operand (log_mel_entries.cuh) or RLX's
// custom-kernel signature (log_mel_entries_rlx.cuh).
{{ENTRIES}}
