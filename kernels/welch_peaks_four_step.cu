// Fused Welch peaks for CUDA, multi-pass plans, four-step form: the twin of
// welch_peaks_four_step.wgsl (read it for the method). A pair's N = N1·N2
// samples are an N1 × N2 matrix, t = N2·j1 + j2; `columns` runs its N2
// column FFTs (N1 points, the windowed pair loaded by the pass itself)
// and twiddles them by W_N^{j2·k1} into row k1, column j2; `rows` runs its
// N1 row FFTs (N2 points); bin k = k1 + N1·k2 ends at row k1, column k2
// (SPECTRUM_SLOT); then peaks_of or partial_of. Each pass runs COL_FFTS
// (ROW_FFTS) FFTs side by side in a block, COL_LANES (ROW_LANES) threads
// each, with the mixed-radix FFT every kernel shares, pasted in twice
// (`col_`, `row_`: src/lower/fft.rs), in padded shared memory. CUDA's
// multi-pass plans take it by default (it ran on an H200 and matched the
// reference), for any length of 2s, 3s and 5s whose N1 and N2 are both
// at least 2; with RLX_OPT_CUDA_FOUR_STEP=0 a power of two takes the radix-2
// stages (welch_peaks_multipass.cu) and other lengths keep this form.

#define WELCH_MULTIPASS 1
#define WELCH_FOUR_STEP 1

{{COMMON}}

#define N1 {{N1}}u
#define N2 {{N2}}u
#define COL_LANES {{COL_LANES}}u
#define COL_FFTS {{COL_FFTS}}u
#define ROW_LANES {{ROW_LANES}}u
#define ROW_FFTS {{ROW_FFTS}}u

{{FFT_COLUMNS}}

{{FFT_ROWS}}

// Block g runs column FFTs g·COL_FFTS + c (c < COL_FFTS), over every pair
// of every entry: FFT f is column f mod N2 of pair f / N2. Thread i loads
// point j1 = i / COL_FFTS of FFT c = i mod COL_FFTS: consecutive threads
// read consecutive samples of a row.
__device__ __forceinline__ void columns_body(const float* __restrict__ segs, const float* __restrict__ window, float2* __restrict__ spectra) {
    __shared__ float2 buf[COL_FFTS * COL_BUF_LEN];
    const unsigned int tid = threadIdx.x;
    const unsigned long long first = batch_entry() * COL_FFTS;
    const unsigned long long total = (unsigned long long)BATCH * PAIRS * N2;
    for (unsigned int i = tid; i < COL_FFTS * N1; i += WG) {
        const unsigned int c = i % COL_FFTS;
        const unsigned long long f = first + c;
        if (f < total) {
            const unsigned int j1 = i / COL_FFTS;
            const unsigned long long pair = (f / N2) % PAIRS;
            const unsigned long long b = f / ((unsigned long long)N2 * PAIRS);
            const unsigned long long s = 2 * pair;
            const float2 v = windowed_pair(segs + b * BATCH_STRIDE + s * SEGMENT_STRIDE, window, N2 * j1 + (unsigned int)(f % N2), s + 1 < SEGMENTS);
            buf[c * COL_BUF_LEN + col_at(col_position(j1))] = v;
        }
    }
    __syncthreads();
    col_run(buf + (tid / COL_LANES) * COL_BUF_LEN, tid % COL_LANES);
    for (unsigned int i = tid; i < COL_FFTS * N1; i += WG) {
        const unsigned int c = i % COL_FFTS;
        const unsigned long long f = first + c;
        if (f < total) {
            const unsigned int k1 = i / COL_FFTS;
            const unsigned int j2 = (unsigned int)(f % N2);
            // W_N^{j2·k1}: j2·k1 < N.
            spectra[(f / N2) * N + k1 * N2 + j2] = col_mul(buf[c * COL_BUF_LEN + col_at(k1)], col_twiddle(j2 * k1, N));
        }
    }
}

// Block g runs row FFTs g·ROW_FFTS + c over every pair: row r is row
// r mod N1 of pair r / N1, its N2 values at r·N2. From `in` to `out`,
// which may be the same buffer (each block reads its rows whole first).
__device__ __forceinline__ void rows_body(const float2* in, float2* out) {
    __shared__ float2 buf[ROW_FFTS * ROW_BUF_LEN];
    const unsigned int tid = threadIdx.x;
    const unsigned long long first = batch_entry() * ROW_FFTS;
    const unsigned long long total = (unsigned long long)BATCH * PAIRS * N1;
    for (unsigned int i = tid; i < ROW_FFTS * N2; i += WG) {
        const unsigned int c = i / N2;
        if (first + c < total) buf[c * ROW_BUF_LEN + row_at(row_position(i % N2))] = in[first * N2 + i];
    }
    __syncthreads();
    row_run(buf + (tid / ROW_LANES) * ROW_BUF_LEN, tid % ROW_LANES);
    for (unsigned int i = tid; i < ROW_FFTS * N2; i += WG) {
        const unsigned int c = i / N2;
        if (first + c < total) out[first * N2 + i] = buf[c * ROW_BUF_LEN + row_at(i % N2)];
    }
}

// The power of the spectra and the last passes, bin j at row j mod N1,
// column j / N1.
#define SPECTRUM_SLOT(j) (((j) % N1) * N2 + (j) / N1)
{{MULTIPASS_POWER}}

{{ENTRIES}}
