// What both CUDA kernels share (pasted in for the COMMON placeholder when
// specialised): the constants of the specialisation, integer keys whose
// order is the peak order, the per-bin weight, the top-k (warp shuffles,
// then one exchange between warps), and the split plans' partial spectra
// and last pass.

#define N {{N}}u
#define LOG2N {{LOG2N}}u
#define FRAME_LEN {{FRAME_LEN}}u
#define SEGMENTS {{SEGMENTS}}u
// Pairs of segments; split plans cut each entry's pairs into CHUNKS chunks
// of PAIRS_PER_CHUNK (the last may have fewer); 1 and PAIRS otherwise.
#define PAIRS {{PAIRS}}u
#define CHUNKS {{CHUNKS}}ull
#define PAIRS_PER_CHUNK {{PAIRS_PER_CHUNK}}u
#define K {{K}}u
#define BINS {{BINS}}u
#define WG {{WG}}u
#define BPT {{BPT}}u
#define BATCH {{BATCH}}u
#define BATCH_STRIDE {{BATCH_STRIDE}}ull
#define SEGMENT_STRIDE {{SEGMENT_STRIDE}}ull
#define HAS_WINDOW {{HAS_WINDOW}}
#define DOUBLING {{DOUBLING}}
#define SCALE {{SCALE}}f
// The FFT norm's factor on each amplitude, applied before squaring (as the
// unfused chain does): 1 under RLX's default norm.
#define AMP {{AMP}}f
#define INF_IS_NAN {{INF_IS_NAN}}
#define INTERLEAVED {{INTERLEAVED}}
// The top-k of blocks of several warps by warps (write_peaks; opt-in,
// RLX_OPT_CUDA_WARP_TOPK=1, lower::cuda::SourceForms).
#define WARP_TOPK {{WARP_TOPK}}

// A peak's key: its power's order bits above its bin's complement, so that
// the larger key is the earlier peak (NaN first, then power, ties to the
// lower bin); 0 is no candidate (a real key's high word is never 0).
typedef unsigned long long Key;

__device__ __forceinline__ Key key_of(float power, unsigned int bin) {
    unsigned int bits = __float_as_uint(power);
    unsigned int hi;
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u) {
        hi = 0xffffffffu;
    } else if (bits >> 31) {
        hi = ~bits;
    } else {
        hi = bits | 0x80000000u;
    }
    return ((Key)hi << 32) | (Key)(~bin);
}

__device__ __forceinline__ float power_of(Key k) {
    const unsigned int hi = (unsigned int)(k >> 32);
    return __uint_as_float(hi >= 0x80000000u ? (hi & 0x7fffffffu) : ~hi);
}

__device__ __forceinline__ float weight(unsigned int j) {
    return (DOUBLING && j != 0u && j != BINS - 1u) ? 2.0f * SCALE : SCALE;
}

// Warps of the block, and the lanes of a block of at most one warp.
#define WARPS ((WG + 31u) / 32u)
// The warps' top-k merges one list per lane of warp 0.
static_assert(WARPS <= 32u, "a block has at most 32 warps");
#define LANES ((WG) >= 32u ? 0xffffffffu : ((1u << (WG)) - 1u))

// The largest key of the warp, in every lane, no shared memory: on sm_80
// and later two warp reductions (redux.sync: the largest high word, then
// the largest low word among the lanes holding it), else shuffles (five
// rounds of two 32-bit shuffles and a 64-bit compare).
__device__ __forceinline__ Key warp_max(Key v) {
#if __CUDA_ARCH__ >= 800
    const unsigned int hi = __reduce_max_sync(LANES, (unsigned int)(v >> 32));
    const unsigned int lo = __reduce_max_sync(LANES, (unsigned int)(v >> 32) == hi ? (unsigned int)v : 0u);
    return ((Key)hi << 32) | (Key)lo;
#else
#pragma unroll
    for (unsigned int offset = (WG < 32u ? WG : 32u) / 2u; offset > 0u; offset >>= 1u) {
        const Key other = __shfl_xor_sync(LANES, v, offset);
        v = other > v ? other : v;
    }
    return v;
#endif
}

// The largest key of the block, in every thread: each warp's by warp_max,
// then (blocks of several warps) the warps' through `scratch` (WARPS keys
// of shared memory), two barriers.
__device__ __forceinline__ Key block_max(Key v, Key* scratch, unsigned int tid) {
    v = warp_max(v);
    if (WARPS > 1u) {
        if ((tid & 31u) == 0u) scratch[tid / 32u] = v;
        __syncthreads();
        v = scratch[0];
        for (unsigned int w = 1u; w < WARPS; w++) v = scratch[w] > v ? scratch[w] : v;
        __syncthreads();
    }
    return v;
}

// Peak r of `row` from its key (0: no candidate, the slot gets (−1, −inf)).
__device__ __forceinline__ void write_peak(float* row, unsigned int r, Key win) {
    float bin = -1.0f;
    float power = __uint_as_float(0xff800000u);
    if (win != 0ull) {
        bin = (float)(~(unsigned int)win);
        power = power_of(win);
    }
    if (INTERLEAVED) {
        row[2 * r] = bin;
        row[2 * r + 1] = power;
    } else {
        row[r] = bin;
        row[K + r] = power;
    }
}

// The thread's keys after `win` was taken: if its head won, that key is
// cleared and the next largest is its head. Unrolled, so that keys stays
// in registers where BPT is small (the one-pass plans; the multi-pass
// plan's 129 bins a thread are local memory, as its psd is).
__device__ __forceinline__ void next_head(Key (&keys)[BPT], Key& head, Key win) {
    if (win == 0ull || head != win) return;
    head = 0ull;
#pragma unroll
    for (unsigned int i = 0; i < BPT; i++) {
        keys[i] = keys[i] == win ? 0ull : keys[i];
        head = keys[i] > head ? keys[i] : head;
    }
}

// write_peaks' warp form (WARP_TOPK): each warp's K largest keys into its
// row of `scratch` (WARPS·K keys), one barrier, then warp 0 merges the rows.
__device__ __forceinline__ void write_peaks_by_warps(unsigned int tid, Key (&keys)[BPT], Key head, Key* scratch, float* row) {
    const unsigned int lane = tid & 31u, warp = tid / 32u;
    Key* list = scratch + warp * K;
    for (unsigned int r = 0; r < K; r++) {
        const Key win = warp_max(head);
        if (lane == r % 32u) list[r] = win;
        next_head(keys, head, win);
    }
    __syncthreads();
    if (warp != 0u) return;
    unsigned int taken = 0;
    Key candidate = lane < WARPS ? scratch[lane * K] : 0ull;
    for (unsigned int r = 0; r < K; r++) {
        const Key win = warp_max(candidate);
        if (lane == r % 32u) write_peak(row, r, win);
        if (win != 0ull && candidate == win) {
            taken++;
            candidate = taken < K ? scratch[lane * K + taken] : 0ull;
        }
    }
}

// Thread `tid` holds the power of bins tid + i·WG in `psd`. Each thread
// keys its bins once and keeps its largest key (its head); K rounds of a
// block argmax over the heads (block_max; `scratch` is WARPS keys of
// shared memory) write the peaks to `row`, peak r by thread r mod WG, and
// only the thread whose head won clears that key and finds its next head
// (keys are distinct: the bin is in each). Slots past the bin count get
// (−1, −inf).
//
// With WARP_TOPK, a block of several warps whose lists fit `scratch`
// (WARPS·K ≤ CAPACITY keys; a caller with room for none passes 0) takes
// them by warps instead: each warp K
// rounds of warp_max over its own lanes' heads, with no block barrier,
// into its row of `scratch` (largest first, 0 past its keys); one barrier;
// then warp 0 merges the WARPS rows, lane w following row w, in K rounds
// of warp_max over the rows' heads, lane r mod 32 writing peak r. Keys are
// distinct, so the merge is the block's order: the same peaks. Two
// barriers a round become one in all.
template <unsigned int CAPACITY>
__device__ __forceinline__ void write_peaks(unsigned int tid, const float (&psd)[BPT], Key* scratch, float* row) {
    Key keys[BPT];
    Key head = 0ull;
#pragma unroll
    for (unsigned int i = 0; i < BPT; i++) {
        const unsigned int j = tid + i * WG;
        keys[i] = j < BINS ? key_of(psd[i], j) : 0ull;
        head = keys[i] > head ? keys[i] : head;
    }
    // if/else, not an early return: NVRTC warns of a loop that a constant
    // condition leaves unreachable.
    if (WARP_TOPK && WARPS > 1u && K <= CAPACITY / WARPS) {
        write_peaks_by_warps(tid, keys, head, scratch, row);
    } else {
        for (unsigned int r = 0; r < K; r++) {
            const Key win = block_max(head, scratch, tid);
            next_head(keys, head, win);
            if (tid == r % WG) write_peak(row, r, win);
        }
    }
}

// c times the twiddle of butterfly `pos` in a stage of span 2·half: the
// radix-2 step both kernels take, in shared or in global memory.
__device__ __forceinline__ float2 twiddled(float2 c, unsigned int pos, unsigned int half) {
    float sn, cs;
    sincospif(-2.0f * (float)pos / (float)(2u * half), &sn, &cs);
    return make_float2(c.x * cs - c.y * sn, c.x * sn + c.y * cs);
}

// inf_as_nan: ±∞ loaded as NaN under INF_IS_NAN (samples.cuh).
{{SAMPLES}}

// Sample t of the pair of segments starting at x (the second when has_y),
// windowed, as z = x + i·y; zero past FRAME_LEN (the padding).
__device__ __forceinline__ float2 windowed_pair(const float* __restrict__ x, const float* __restrict__ window, unsigned int t, bool has_y) {
    float2 v = make_float2(0.0f, 0.0f);
    if (t < FRAME_LEN) {
        const float w = HAS_WINDOW ? window[t] : 1.0f;
        v.x = inf_as_nan(x[t] * w);
        if (has_y) v.y = inf_as_nan(x[SEGMENT_STRIDE + t] * w);
    }
    return v;
}

// Where sample t goes in the FFT's bit-reversed input order.
__device__ __forceinline__ unsigned int bit_reversed(unsigned int t) {
    return __brev(t) >> (32u - LOG2N);
}

// The first index of butterfly q in radix-2 stage `stage`; its partner is
// 1 << stage further, and its twiddle position q mod (1 << stage).
__device__ __forceinline__ unsigned int butterfly_first(unsigned int q, unsigned int stage) {
    return ((q >> stage) << (stage + 1)) + (q & ((1u << stage) - 1u));
}

// The bin whose transform pairs with bin j's (n − j mod n, for j ≤ n/2;
// any n: the one-pass kernels' FFT is mixed-radix).
__device__ __forceinline__ unsigned int mirror(unsigned int j) {
    return j == 0u ? 0u : N - j;
}

// Bin j's weighted power from a pair's transform: |X|² + |Y|² =
// (|Z[j]|² + |Z[n−j]|²) / 2, the ½ inside the weight.
__device__ __forceinline__ float pair_power(float2 z, float2 m, unsigned int j) {
    z = make_float2(AMP * z.x, AMP * z.y);
    m = make_float2(AMP * m.x, AMP * m.y);
    return weight(j) * (z.x * z.x + z.y * z.y + m.x * m.x + m.y * m.y);
}

// The batch entry of a block in a 2-D grid of blocks.
__device__ __forceinline__ unsigned long long batch_entry() {
    return blockIdx.x + (unsigned long long)blockIdx.y * gridDim.x;
}

// Split plans: the first pair of chunk c, and the end of its pairs.
__device__ __forceinline__ unsigned int chunk_first(unsigned long long c) {
    return (unsigned int)(c * PAIRS_PER_CHUNK);
}

__device__ __forceinline__ unsigned int chunk_end(unsigned long long c) {
    const unsigned long long end = (c + 1) * PAIRS_PER_CHUNK;
    return end < PAIRS ? (unsigned int)end : PAIRS;
}

// Split plans: thread tid's bins of the partial power spectrum of work
// item `item` (batch entry · CHUNKS + chunk).
__device__ __forceinline__ void write_partials(unsigned int tid, const float (&psd)[BPT], float* __restrict__ partials, unsigned long long item) {
#pragma unroll
    for (unsigned int i = 0; i < BPT; i++) {
        const unsigned int j = tid + i * WG;
        if (j < BINS) partials[item * BINS + j] = psd[i];
    }
}

// Split plans, last pass: one block per batch entry sums the partial
// spectra of its chunks, in chunk order, then takes its top-k.
__device__ __forceinline__ void peaks_of_partials_body(const float* __restrict__ partials, float* __restrict__ peaks) {
    __shared__ Key best[WARPS];
    const unsigned int tid = threadIdx.x;
    const unsigned long long b = batch_entry();
    if (b >= BATCH) return;
    float psd[BPT];
    for (unsigned int i = 0; i < BPT; i++) {
        psd[i] = 0.0f;
        const unsigned int j = tid + i * WG;
        if (j < BINS) {
            for (unsigned long long c = 0; c < CHUNKS; c++) psd[i] += partials[(b * CHUNKS + c) * BINS + j];
        }
    }
    write_peaks<0>(tid, psd, best, peaks + b * 2ull * K);
}
