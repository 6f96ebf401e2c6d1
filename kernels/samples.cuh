// How both ops' CUDA kernels load a windowed sample, written once and
// pasted into welch_peaks_common.cuh and log_mel.cu for the SAMPLES
// placeholder (src/lower/mod.rs, CUDA_SAMPLES); the twin of samples.wgsl.
// The including kernel defines INF_IS_NAN (the op's inf_is_nan).
//
// Under INF_IS_NAN a windowed sample that is ±∞ counts as NaN: the unfused
// chain's imaginary plane Sub(x, x) is NaN there, and so is every bin of
// the transform. A bit test, not x − x, which a compiler may fold to 0. The
// NaN is the canonical one (WGSL's keeps ∞'s sign; no power sees which):
// built from v's bits, it cost the 4096-point kernel under the occupancy
// bound a block an SM (3 became 2: lit fuse/emit_occupancy_bound.graph).
__device__ __forceinline__ float inf_as_nan(float v) {
    return INF_IS_NAN && (__float_as_uint(v) & 0x7fffffffu) == 0x7f800000u ? __uint_as_float(0x7fc00000u) : v;
}
