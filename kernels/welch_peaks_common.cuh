// Helpers both CUDA kernels share (pasted in for the COMMON placeholder when
// specialised, after the constants they use): integer keys whose order is
// the peak order, and the per-bin weight.

struct Key {
    unsigned int hi, lo;
};

__device__ __forceinline__ bool greater(Key a, Key b) {
    return a.hi > b.hi || (a.hi == b.hi && a.lo > b.lo);
}

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
    Key k = {hi, ~bin};
    return k;
}

__device__ __forceinline__ float power_of(Key k) {
    return __uint_as_float(k.hi >= 0x80000000u ? (k.hi & 0x7fffffffu) : ~k.hi);
}

__device__ __forceinline__ float weight(unsigned int j) {
    return (DOUBLING && j != 0u && j != BINS - 1u) ? 2.0f * SCALE : SCALE;
}
