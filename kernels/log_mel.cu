// The fused log-mel op (rlx_opt.log_mel) in CUDA: the twin of log_mel.wgsl
// (what it computes is described there and in src/fused/log_mel.rs), with
// the shared mixed-radix FFT (fft_mixed_radix.cuh) pasted in for the FFT
// placeholder. Two launches per op run: `mel_bands` (a thread per filter),
// then `log_mel` (a block per frame pair).

#define WG {{WG}}u
#define BANDS_WG {{BANDS_WG}}u

{{FFT}}

#define FRAME_LEN {{FRAME_LEN}}u
#define BINS {{BINS}}u
#define MELS {{MELS}}u
#define ROWS {{ROWS}}u
#define PAIRS {{PAIRS}}u
#define SIGNAL {{SIGNAL}}
#define BATCH {{BATCH}}u
#define SIGNAL_LEN {{SIGNAL_LEN}}u
#define HOP {{HOP}}u
#define HAS_WINDOW {{HAS_WINDOW}}
// power_scale / 4: the ¼ of splitting a pair's transform.
#define SCALE {{SCALE}}f
#define LOG_FLOOR 1e-10f
#define DYNAMIC_RANGE 8.0f

// Filter m's band: (first, end), (0, 0) for a filter of zeros.
extern "C" __global__ void __launch_bounds__(BANDS_WG) mel_bands(const float* __restrict__ filters, uint2* __restrict__ bands) {
    unsigned int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= MELS) {
        return;
    }
    unsigned int first = BINS, last = 0u;
    for (unsigned int k = 0u; k < BINS; k++) {
        if (filters[m * BINS + k] != 0.0f) {
            first = min(first, k);
            last = k;
        }
    }
    bands[m] = first == BINS ? make_uint2(0u, 0u) : make_uint2(first, last + 1u);
}

__device__ __forceinline__ unsigned int frame_start(unsigned int row) {
    return SIGNAL ? (row % BATCH) * SIGNAL_LEN + (row / BATCH) * HOP : row * FRAME_LEN;
}

__device__ __forceinline__ float sample(const float* __restrict__ frames, const float* __restrict__ window, unsigned int start, unsigned int t) {
    return frames[start + t] * (HAS_WINDOW ? window[t] : 1.0f);
}

extern "C" __global__ void __launch_bounds__(WG) log_mel(
    const float* __restrict__ frames,
    const float* __restrict__ window,
    const float* __restrict__ filters,
    const uint2* __restrict__ bands,
    float* __restrict__ mels) {
    __shared__ float2 buf[FFT_N];
    // Both frames' power of each bin, then their mel values (x: the pair's
    // first frame, y: its second), and their floors.
    __shared__ float2 power[BINS];
    __shared__ float2 mel[MELS];
    __shared__ float2 floors;
    unsigned int pair = blockIdx.x + blockIdx.y * gridDim.x;
    if (pair >= PAIRS) {
        return;
    }
    unsigned int tid = threadIdx.x;
    unsigned int row = 2u * pair;
    bool has_y = row + 1u < ROWS;
    unsigned int x0 = frame_start(row), y0 = frame_start(row + 1u);
    for (unsigned int t = tid; t < FFT_N; t += WG) {
        float2 z = make_float2(0.0f, 0.0f);
        if (t < FRAME_LEN) {
            z.x = sample(frames, window, x0, t);
            if (has_y) {
                z.y = sample(frames, window, y0, t);
            }
        }
        buf[fft_position(t)] = z;
    }
    __syncthreads();
    fft_run(buf, tid);
    for (unsigned int k = tid; k < BINS; k += WG) {
        float2 a = buf[k], b = buf[(FFT_N - k) % FFT_N];
        float2 x = make_float2(a.x + b.x, a.y - b.y), y = make_float2(a.x - b.x, a.y + b.y);
        power[k] = make_float2(SCALE * (x.x * x.x + x.y * x.y), SCALE * (y.x * y.x + y.y * y.y));
    }
    __syncthreads();
    for (unsigned int m = tid; m < MELS; m += WG) {
        uint2 band = bands[m];
        float2 acc = make_float2(0.0f, 0.0f);
        for (unsigned int k = band.x; k < band.y; k++) {
            float w = filters[m * BINS + k];
            acc.x += power[k].x * w;
            acc.y += power[k].y * w;
        }
        mel[m] = make_float2(log10f(fmaxf(acc.x, LOG_FLOOR)), log10f(fmaxf(acc.y, LOG_FLOOR)));
    }
    __syncthreads();
    if (tid == 0u) {
        float2 top = mel[0];
        for (unsigned int m = 1u; m < MELS; m++) {
            top = make_float2(fmaxf(top.x, mel[m].x), fmaxf(top.y, mel[m].y));
        }
        floors = make_float2(top.x - DYNAMIC_RANGE, top.y - DYNAMIC_RANGE);
    }
    __syncthreads();
    float2 lowest = floors;
    for (unsigned int m = tid; m < MELS; m += WG) {
        mels[row * MELS + m] = (fmaxf(mel[m].x, lowest.x) + 4.0f) / 4.0f;
        if (has_y) {
            mels[(row + 1u) * MELS + m] = (fmaxf(mel[m].y, lowest.y) + 4.0f) / 4.0f;
        }
    }
}
