// The mixed-radix FFT in shared memory (radices 4, 2, 3, 5): the FFT front
// end of the CUDA kernels, written once and pasted into each kernel for the
// FFT placeholder (src/lower/log_mel.rs); the twin of fft_mixed_radix.wgsl.
// Forward, unnormalised, in place, decimation in time: sample t is stored
// at fft_position(t) (its mixed-radix digits reversed), then FFT_STAGES
// stages leave bin k at index k. Stage s has radix FFT_RADICES[s] and span
// FFT_SPANS[s] (the product of the earlier radices): its butterfly (block
// b, offset k < span) reads the r values at b·span·r + k + j·span,
// twiddles value j by W_{span·r}^{j·k}, and writes their r-point DFT back.
// The including kernel defines WG, its block size, and may define
// FFT_LANES, the threads that run one FFT (WG unless a block runs several
// FFTs side by side: the four-step FFT's passes). A block of one warp or
// less (WG ≤ 32) syncs with __syncwarp only: no block-wide barrier; so
// does a kernel that defines FFT_WARP_SYNC, where each FFT is one whole
// warp's (FFT_LANES 32: the log-mel kernel's warp form). A
// kernel that takes FFTs of two lengths pastes this file in twice, its
// names' `fft_`/`FFT_` prefix changed (src/lower/fft.rs, `cuda_prefixed`).
// Twiddles come from FFT_TWIDDLES, W_N^i for i < N computed on the host in
// double precision (src/lower/fft.rs): one cached load each, where
// sincospif cost ~30 instructions per twiddle.

#define FFT_N {{FFT_N}}u
#define FFT_STAGES {{FFT_STAGES}}u
#define FFT_RADICES { {{FFT_RADICES}} }
#define FFT_SPANS { {{FFT_SPANS}} }
// The lanes of a block of at most one warp (every thread of a partial warp).
#define FFT_SYNC_MASK ((WG) >= 32u ? 0xffffffffu : ((1u << (WG)) - 1u))
#ifndef FFT_LANES
#define FFT_LANES WG
#endif

__device__ const float2 FFT_TWIDDLES[FFT_N] = { {{FFT_TWIDDLES}} };

// The shared-memory slot of point i: five float2 of padding after every
// 16 points and one more after every 256, so that a half-warp's 64-bit
// accesses fall in distinct banks in more of the FFT's patterns: the
// strided butterflies of spans 1 and 4, the digit-reversed stores of the
// samples, and the rows of larger lengths. A bank model of those accesses
// (docs/kernels.md) picked it: 1.25 wavefronts per request at n_fft 256
// and 1.18 at 4096, where one float2 after every 16 gave 1.64 and 2.53
// (Nsight Compute measured 1.65 at 256 on an H100). A buffer holds
// FFT_BUF_LEN values (src/analysis/plan: cuda_fft_buffer_len); every
// access goes through fft_at.
#define FFT_BUF_LEN (FFT_N + 5u * ((FFT_N - 1u) >> 4) + ((FFT_N - 1u) >> 8))

__device__ __forceinline__ unsigned int fft_at(unsigned int i) {
    return i + 5u * (i >> 4) + (i >> 8);
}

// The barrier between stages: the warp's own when the block is one warp.
__device__ __forceinline__ void fft_sync() {
#ifdef FFT_WARP_SYNC
    __syncwarp();
#else
    if (WG <= 32u) {
        __syncwarp(FFT_SYNC_MASK);
    } else {
        __syncthreads();
    }
#endif
}

__device__ __forceinline__ float2 fft_mul(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__device__ __forceinline__ float2 fft_add(float2 a, float2 b) {
    return make_float2(a.x + b.x, a.y + b.y);
}

__device__ __forceinline__ float2 fft_sub(float2 a, float2 b) {
    return make_float2(a.x - b.x, a.y - b.y);
}

__device__ __forceinline__ float2 fft_scale(float s, float2 a) {
    return make_float2(s * a.x, s * a.y);
}

// −i·z.
__device__ __forceinline__ float2 fft_minus_i(float2 z) {
    return make_float2(z.y, -z.x);
}

// W_m^e = exp(−2πi·e/m) = W_N^{e·N/m} from the table, for m dividing N
// and e < m: every stage's span·radix divides N.
__device__ __forceinline__ float2 fft_stage_twiddle(unsigned int e, unsigned int m) {
    return __ldg(&FFT_TWIDDLES[e * (FFT_N / m)]);
}

// W_m^e for any m (the split of a packed real FFT of length 2·N: the
// log-mel kernel's, and the Welch kernel's packed segment), computed.
__device__ __forceinline__ float2 fft_twiddle(unsigned int e, unsigned int m) {
    float s, c;
    sincospif(-2.0f * (float)e / (float)m, &s, &c);
    return make_float2(c, s);
}

// Bin k (k ≤ FFT_N) of a real sequence of 2·FFT_N points whose even
// samples were the real parts and odd samples the imaginary parts of the
// transform in `buf` (a packed real FFT: the log-mel kernels' even n_fft,
// the Welch kernels' packed segment), split from it:
// X[k] = E[k] + W_{2N}^k·O[k], E = (Z[k] + conj Z[N−k]) / 2 and
// O = −i·(Z[k] − conj Z[N−k]) / 2, N = FFT_N and indices mod N.
__device__ __forceinline__ float2 fft_split_bin(const float2* buf, unsigned int k) {
    const float2 a = buf[fft_at(k % FFT_N)];
    const float2 b = buf[fft_at((FFT_N - k) % FFT_N)];
    // Halved before they are added (exact for normal values): a sum of two
    // values above f32's largest / 2 would overflow, and E + W·O give ∞ − ∞.
    const float2 h = make_float2(0.5f * a.x, 0.5f * a.y), g = make_float2(0.5f * b.x, 0.5f * b.y);
    const float2 e = make_float2(h.x + g.x, h.y - g.y);
    const float2 o = fft_minus_i(make_float2(h.x - g.x, h.y + g.y));
    return fft_add(e, fft_mul(fft_twiddle(k, 2u * FFT_N), o));
}

// Where sample t goes: its digits (last stage's radix first) reversed.
__device__ __forceinline__ unsigned int fft_position(unsigned int t) {
    const unsigned int radices[FFT_STAGES] = FFT_RADICES;
    const unsigned int spans[FFT_STAGES] = FFT_SPANS;
    unsigned int position = 0u;
#pragma unroll
    for (int s = FFT_STAGES - 1; s >= 0; s--) {
        position += (t % radices[s]) * spans[s];
        t /= radices[s];
    }
    return position;
}

// The R-point DFT of v[0..R] in place.
template <unsigned int R>
__device__ __forceinline__ void fft_dft(float2* v) {
    float2 a = v[0], b = v[1];
    if constexpr (R == 2u) {
        v[0] = fft_add(a, b);
        v[1] = fft_sub(a, b);
    } else if constexpr (R == 3u) {
        float2 c = v[2];
        // cos(2π/3) = −½, sin(2π/3).
        float2 t = fft_sub(a, fft_scale(0.5f, fft_add(b, c)));
        float2 u = fft_scale(0.8660254037844386f, fft_minus_i(fft_sub(b, c)));
        v[0] = fft_add(a, fft_add(b, c));
        v[1] = fft_add(t, u);
        v[2] = fft_sub(t, u);
    } else if constexpr (R == 4u) {
        float2 c = v[2], d = v[3];
        float2 s0 = fft_add(a, c), d0 = fft_sub(a, c);
        float2 s1 = fft_add(b, d), d1 = fft_minus_i(fft_sub(b, d));
        v[0] = fft_add(s0, s1);
        v[1] = fft_add(d0, d1);
        v[2] = fft_sub(s0, s1);
        v[3] = fft_sub(d0, d1);
    } else {
        float2 c = v[2], d = v[3], e = v[4];
        // cos and sin of 2π/5 and 4π/5.
        const float c1 = 0.30901699437494745f, c2 = -0.8090169943749475f;
        const float s1 = 0.9510565162951535f, s2 = 0.5877852522924731f;
        float2 be = fft_add(b, e), cd = fft_add(c, d);
        float2 bme = fft_sub(b, e), cmd = fft_sub(c, d);
        float2 t1 = fft_add(a, fft_add(fft_scale(c1, be), fft_scale(c2, cd)));
        float2 t2 = fft_add(a, fft_add(fft_scale(c2, be), fft_scale(c1, cd)));
        float2 u1 = fft_minus_i(fft_add(fft_scale(s1, bme), fft_scale(s2, cmd)));
        float2 u2 = fft_minus_i(fft_sub(fft_scale(s2, bme), fft_scale(s1, cmd)));
        v[0] = fft_add(a, fft_add(be, cd));
        v[1] = fft_add(t1, u1);
        v[4] = fft_sub(t1, u1);
        v[2] = fft_add(t2, u2);
        v[3] = fft_sub(t2, u2);
    }
}

// R values v[0], v[STRIDE], …, v[(R−1)·STRIDE] in registers, value j
// twiddled by w^j (when `twiddle`; the first stage's are all 1), then
// replaced by their R-point DFT. w^j by products: one table load a
// butterfly.
template <unsigned int R, unsigned int STRIDE>
__device__ __forceinline__ void fft_butterfly(float2* v, bool twiddle, float2 w) {
    float2 t[R];
#pragma unroll
    for (unsigned int j = 0u; j < R; j++) t[j] = v[j * STRIDE];
    if (twiddle) {
        float2 wj = w;
#pragma unroll
        for (unsigned int j = 1u; j < R; j++) {
            t[j] = fft_mul(t[j], wj);
            wj = fft_mul(wj, w);
        }
    }
    fft_dft<R>(t);
#pragma unroll
    for (unsigned int j = 0u; j < R; j++) v[j * STRIDE] = t[j];
}

// One stage of radix R and span `span`, alone (see fft_pass).
template <unsigned int R>
__device__ __forceinline__ void fft_stage(float2* buf, unsigned int span, unsigned int tid) {
    for (unsigned int p = tid; p < FFT_N / R; p += FFT_LANES) {
        const unsigned int k = p % span;
        const unsigned int base = (p / span) * span * R + k;
        float2 v[R];
#pragma unroll
        for (unsigned int j = 0u; j < R; j++) v[j] = buf[fft_at(base + j * span)];
        fft_butterfly<R, 1u>(v, span > 1u, fft_stage_twiddle(k, span * R));
#pragma unroll
        for (unsigned int j = 0u; j < R; j++) buf[fft_at(base + j * span)] = v[j];
    }
}

// Two consecutive stages in registers, one round trip through shared
// memory instead of two (and one barrier): radix R1 at span `span`, then
// radix R2 at span·R1. Butterfly p (offset k = p mod span) holds the
// R1·R2 values base + m·span; the first stage's butterflies are the runs
// m = j1 + R1·j2 over j1 (twiddle W_{span·R1}^k), the second's the runs
// over j2 (offset k + j1·span: twiddle W_{span·R1·R2}^{k + j1·span}). Every
// butterfly of the second stage reads only values of the first's it
// holds, so the pair closes. Of every 16 values a thread holds one row of
// banks (base + m·span, the padded slots): no bank conflicts at span 1.
template <unsigned int R1, unsigned int R2>
__device__ __forceinline__ void fft_pass(float2* buf, unsigned int span, unsigned int tid) {
    constexpr unsigned int R = R1 * R2;
    for (unsigned int p = tid; p < FFT_N / R; p += FFT_LANES) {
        const unsigned int k = p % span;
        const unsigned int base = (p / span) * span * R + k;
        float2 v[R];
#pragma unroll
        for (unsigned int m = 0u; m < R; m++) v[m] = buf[fft_at(base + m * span)];
        const float2 w1 = fft_stage_twiddle(k, span * R1);
#pragma unroll
        for (unsigned int j2 = 0u; j2 < R2; j2++) fft_butterfly<R1, 1u>(&v[j2 * R1], span > 1u, w1);
#pragma unroll
        for (unsigned int j1 = 0u; j1 < R1; j1++) {
            fft_butterfly<R2, R1>(&v[j1], true, fft_stage_twiddle(k + j1 * span, span * R));
        }
#pragma unroll
        for (unsigned int m = 0u; m < R; m++) buf[fft_at(base + m * span)] = v[m];
    }
}

// The first pass (FFT_FIRST_R1, then FFT_FIRST_R2 where it has two
// stages; span 1, so its first stage has no twiddles) on one butterfly's
// FFT_FIRST_POINTS values in registers, v[m] the value of position
// base + m: what fft_run's first pass does after reading them from shared
// memory. For a kernel whose threads hold whole butterflies of samples as
// loaded (sample t + j·FFT_N/FFT_FIRST_POINTS is value m = j / R2 + R1·(j
// mod R2) of the butterfly at fft_position(t), for t below
// FFT_N/FFT_FIRST_POINTS): it stores the results at fft_at(base + m),
// syncs, and runs fft_run_after_first; one round trip through shared
// memory and one barrier fewer.
#define FFT_FIRST_R1 {{FFT_FIRST_R1}}u
#define FFT_FIRST_R2 {{FFT_FIRST_R2}}u
#define FFT_FIRST_POINTS (FFT_FIRST_R1 * FFT_FIRST_R2)

// A template, so that a pass of one stage (R2 1) never instantiates a
// 1-point butterfly.
template <unsigned int R1, unsigned int R2>
__device__ __forceinline__ void fft_first_pass(float2 (&v)[R1 * R2]) {
    const float2 one = make_float2(1.0f, 0.0f);
#pragma unroll
    for (unsigned int j2 = 0u; j2 < R2; j2++) fft_butterfly<R1, 1u>(&v[j2 * R1], false, one);
    if constexpr (R2 > 1u) {
#pragma unroll
        for (unsigned int j1 = 0u; j1 < R1; j1++) fft_butterfly<R2, R1>(&v[j1], true, fft_stage_twiddle(j1, R1 * R2));
    }
}

// Thread tid's samples as loaded, v[i] = sample tid + i·FFT_LANES, through
// the first pass into `buf` at their positions, where FFT_N /
// FFT_FIRST_POINTS is a multiple of FFT_LANES (the includer checks): the
// thread holds the butterflies at fft_position(tid + g·FFT_LANES) for g <
// FFT_LOAD_GROUPS, value j of butterfly g being v[g + FFT_LOAD_GROUPS·j].
// The caller then syncs and runs fft_run_after_first. Defined only where a
// thread holds at least one butterfly (no loop of zero rounds to warn of).
#define FFT_LOAD_GROUPS (FFT_N / FFT_FIRST_POINTS / FFT_LANES)
#if FFT_N / FFT_FIRST_POINTS / FFT_LANES > 0
__device__ __forceinline__ void fft_load_first_pass(float2* buf, const float2* v, unsigned int tid) {
#pragma unroll
    for (unsigned int g = 0u; g < FFT_LOAD_GROUPS; g++) {
        float2 butterfly[FFT_FIRST_POINTS];
#pragma unroll
        for (unsigned int j = 0u; j < FFT_FIRST_POINTS; j++) {
            butterfly[j / FFT_FIRST_R2 + FFT_FIRST_R1 * (j % FFT_FIRST_R2)] = v[g + FFT_LOAD_GROUPS * j];
        }
        fft_first_pass<FFT_FIRST_R1, FFT_FIRST_R2>(butterfly);
        const unsigned int base = fft_position(tid + g * FFT_LANES);
#pragma unroll
        for (unsigned int m = 0u; m < FFT_FIRST_POINTS; m++) buf[fft_at(base + m)] = butterfly[m];
    }
}
#endif

// fft_run without its first pass (see fft_first_pass).
__device__ __forceinline__ void fft_run_after_first(float2* buf, unsigned int tid) {
{{FFT_PASSES_AFTER_FIRST}}
}

// Every stage over the FFT_N values of `buf` (FFT_BUF_LEN of shared
// memory, at fft_at), in passes of one or two stages (FFT_PASSES, written
// per length by src/lower/fft.rs: consecutive stages whose radices
// multiply to at most MAX_PASS_POINTS share a pass), thread tid (below
// FFT_LANES) taking butterflies tid, tid + FFT_LANES, …; a barrier
// (fft_sync, the whole block's) after each pass. Call from every
// thread of the block once every sample is at its fft_position (and a
// barrier has passed); bin k is then at index k.
__device__ __forceinline__ void fft_run(float2* buf, unsigned int tid) {
{{FFT_PASSES}}
}

// The FFT in one warp's registers, no shared memory and no barrier (the
// Welch one-pass kernel's register form: on by default,
// RLX_OPT_CUDA_REGISTER_FFT=0 turns it off,
// lower::cuda::SourceForms::register_fft). N = 32·P: lane l holds the P
// points l + 32·m (coalesced as loaded). Point n = l + 32·m and bin
// k = q + P·r give W_N^{nk} = W_P^{mq} · W_N^{lq} · W_32^{lr}: each lane
// takes the P-point DFT of its own points (fft_first_pass: P's one or two
// radices, FFT_WARP_R1·FFT_WARP_R2), twiddles value q by W_N^{lq}, and the
// 32-point DFTs over the lanes run as five radix-2 decimation-in-frequency
// stages whose partners are lanes l ^ h (a shuffle a value a stage, two
// 32-bit shuffles each). Bin q + P·r is then value q of lane brev5(r)
// (fft_warp_lane). Defined where Rust found P's radices (src/lower/fft.rs,
// warp_radices: 32 divides N and P is 2 to 8 points).
#define FFT_WARP_R1 {{FFT_WARP_R1}}u
#define FFT_WARP_R2 {{FFT_WARP_R2}}u
#define FFT_WARP_POINTS (FFT_WARP_R1 * FFT_WARP_R2)
#if FFT_WARP_POINTS > 1
static_assert(FFT_WARP_POINTS * 32u == FFT_N, "a warp's lanes hold 32 points each of P");

__device__ __forceinline__ float2 fft_shfl_xor(float2 v, unsigned int mask) {
    return make_float2(__shfl_xor_sync(0xffffffffu, v.x, mask), __shfl_xor_sync(0xffffffffu, v.y, mask));
}

__device__ __forceinline__ float2 fft_shfl(float2 v, unsigned int lane) {
    return make_float2(__shfl_sync(0xffffffffu, v.x, lane), __shfl_sync(0xffffffffu, v.y, lane));
}

// The lane holding row r (r < 32) of the transform: r's five bits reversed.
__device__ __forceinline__ unsigned int fft_warp_lane(unsigned int r) {
    return __brev(r) >> 27u;
}

// v[m] = point lane + 32·m on entry; bin q + P·fft_warp_lane(lane) in v[q]
// on return. Every lane of the warp calls it (full-mask shuffles).
__device__ __forceinline__ void fft_warp_run(float2 (&v)[FFT_WARP_POINTS], unsigned int lane) {
    float2 b[FFT_WARP_POINTS];
    // The P-point DFT over m, its input digit-reversed (fft_first_pass).
#pragma unroll
    for (unsigned int m = 0u; m < FFT_WARP_POINTS; m++) b[m / FFT_WARP_R2 + FFT_WARP_R1 * (m % FFT_WARP_R2)] = v[m];
    fft_first_pass<FFT_WARP_R1, FFT_WARP_R2>(b);
    v[0] = b[0];
#pragma unroll
    for (unsigned int q = 1u; q < FFT_WARP_POINTS; q++) v[q] = fft_mul(b[q], __ldg(&FFT_TWIDDLES[lane * q]));
    // The 32-point DFTs over the lanes: the lower lane of each pair keeps
    // a + b, the upper (a − b)·W_{2h}^{l mod h}.
#pragma unroll
    for (unsigned int h = 16u; h > 0u; h >>= 1u) {
        const bool upper = (lane & h) != 0u;
        const float2 w = fft_stage_twiddle(lane & (h - 1u), 2u * h);
#pragma unroll
        for (unsigned int q = 0u; q < FFT_WARP_POINTS; q++) {
            const float2 other = fft_shfl_xor(v[q], h);
            v[q] = upper ? fft_mul(fft_sub(other, v[q]), w) : fft_add(v[q], other);
        }
    }
}
#endif
