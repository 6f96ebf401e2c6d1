// Entry points in RLX's custom-kernel signature (rlx-cuda's CudaGpuKernel;
// RLX_CUSTOM_ARGS from rlx_custom_args.cuh). Each pass of a plan is an RLX op of its own:
// operand 0 is the segments (the spectra for `stage`, `rows` and
// `peaks_of`), operand 1 the window; a multi-pass `stage` or `rows` reads
// one spectrum tensor and writes the next, a radix-2 stage's index in
// extra e0; a split plan's partial
// spectra are its first op's result and its last op's operand 0. Pasted into both CUDA
// kernels for the ENTRIES placeholder.
#if WELCH_MULTIPASS
// The spectra, complex values in the arena, at f32 offset `off`. float2
// loads and stores need 8-byte alignment: an even offset. RLX's CUDA arena
// places every buffer on a 16-byte boundary (rlx-cuda 0.2.19, compile.rs:
// plan_f32_uniform_with_half(.., 16, ..)), and the spectra are always a
// custom op's own result, never a view into another buffer; but RLX's
// kernel contract does not promise it, so an odd offset stops the kernel
// here (a launch error that RLX reports) rather than making misaligned
// accesses.
__device__ __forceinline__ float2* spectra_at(float* arena, unsigned off) {
    if (off & 1u) __trap();
    return reinterpret_cast<float2*>(arena + off);
}

#if WELCH_FOUR_STEP
extern "C" __global__ void __launch_bounds__(WG) rlx_columns(RLX_CUSTOM_ARGS) {
    columns_body(arena + in0_off, arena + in1_off, spectra_at(arena, out_off));
}

// One spectrum tensor in, the next out.
extern "C" __global__ void __launch_bounds__(WG) rlx_rows(RLX_CUSTOM_ARGS) {
    rows_body(spectra_at(arena, in0_off), spectra_at(arena, out_off));
}
#else
extern "C" __global__ void __launch_bounds__(WG) rlx_load(RLX_CUSTOM_ARGS) {
    load_body(arena + in0_off, arena + in1_off, spectra_at(arena, out_off));
}

extern "C" __global__ void __launch_bounds__(WG) rlx_stage(RLX_CUSTOM_ARGS) {
    stage_body(spectra_at(arena, in0_off), spectra_at(arena, out_off), e0);
}
#endif

extern "C" __global__ void __launch_bounds__(WG) rlx_peaks_of(RLX_CUSTOM_ARGS) {
    peaks_of_body(spectra_at(arena, in0_off), arena + out_off);
}

extern "C" __global__ void __launch_bounds__(WG) rlx_partial_of(RLX_CUSTOM_ARGS) {
    partial_of_body(spectra_at(arena, in0_off), arena + out_off);
}
#else
extern "C" __global__ void __launch_bounds__(WG, MIN_BLOCKS) rlx_welch_peaks(RLX_CUSTOM_ARGS) {
    welch_peaks_body(arena + in0_off, arena + in1_off, arena + out_off);
}

extern "C" __global__ void __launch_bounds__(WG, MIN_BLOCKS) rlx_partial_psd(RLX_CUSTOM_ARGS) {
    partial_psd_body(arena + in0_off, arena + in1_off, arena + out_off);
}
#endif

// A split plan's last op: its partial spectra as operand 0.
extern "C" __global__ void __launch_bounds__(WG) rlx_peaks_of_partials(RLX_CUSTOM_ARGS) {
    peaks_of_partials_body(arena + in0_off, arena + out_off);
}
