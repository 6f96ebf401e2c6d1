// How both ops' WGSL kernels load a windowed sample, written once and
// pasted into welch_peaks_common.wgsl and log_mel.wgsl for the SAMPLES
// placeholder (src/lower/mod.rs, WGSL_SAMPLES); the twin of samples.cuh.
// The including kernel defines INF_IS_NAN (the op's inf_is_nan).
//
// Under INF_IS_NAN a windowed sample that is ±∞ counts as NaN: the unfused
// chain's imaginary plane Sub(x, x) is NaN there, and so is every bin of
// the transform. A bit test, not x − x, which a shader compiler may fold
// to 0; the NaN is made from v's own bits (quiet, ∞'s sign kept; CUDA's
// is the canonical NaN: no power sees which).
fn inf_as_nan(v: f32) -> f32 {
    let bits = bitcast<u32>(v);
    if (INF_IS_NAN && (bits & 0x7fffffffu) == 0x7f800000u) {
        return bitcast<f32>(bits | 0x00400000u);
    }
    return v;
}
