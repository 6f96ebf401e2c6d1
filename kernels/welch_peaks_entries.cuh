// Entry points with an argument per operand (rlx-run, --emit-kernels),
// pasted into both CUDA kernels for the ENTRIES placeholder.
#if WELCH_MULTIPASS && WELCH_FOUR_STEP
extern "C" __global__ void __launch_bounds__(WG) columns(const float* __restrict__ segs, const float* __restrict__ window, float2* __restrict__ spectra) {
    columns_body(segs, window, spectra);
}

// In place: each block reads its rows whole before it writes them.
extern "C" __global__ void __launch_bounds__(WG) rows(float2* spectra) {
    rows_body(spectra, spectra);
}
#elif WELCH_MULTIPASS
extern "C" __global__ void __launch_bounds__(WG) load(const float* __restrict__ segs, const float* __restrict__ window, float2* __restrict__ spectra) {
    load_body(segs, window, spectra);
}

// In place: the stage's index is an argument, one kernel for every stage.
extern "C" __global__ void __launch_bounds__(WG) stage(float2* spectra, unsigned int stage) {
    stage_body(spectra, spectra, stage);
}
#endif

#if WELCH_MULTIPASS

extern "C" __global__ void __launch_bounds__(WG) peaks_of(const float2* __restrict__ spectra, float* __restrict__ peaks) {
    peaks_of_body(spectra, peaks);
}

extern "C" __global__ void __launch_bounds__(WG) partial_of(const float2* __restrict__ spectra, float* __restrict__ partials) {
    partial_of_body(spectra, partials);
}
#else
// (WG, MIN_BLOCKS): by default (WG, 1), at least one block per SM, so
// ptxas may take every register it needs; with (WG) alone it held some
// one-pass kernels to fewer and spilled 4 to 8 bytes (n_fft 400, 480, 1000
// on sm_80 and sm_90). MIN_BLOCKS is welch_peaks.cu's (lower::cuda::min_blocks).
extern "C" __global__ void __launch_bounds__(WG, MIN_BLOCKS) welch_peaks(const float* __restrict__ segs, const float* __restrict__ window, float* __restrict__ peaks) {
    welch_peaks_body(segs, window, peaks);
}

extern "C" __global__ void __launch_bounds__(WG, MIN_BLOCKS) partial_psd(const float* __restrict__ segs, const float* __restrict__ window, float* __restrict__ partials) {
    partial_psd_body(segs, window, partials);
}
#endif

// Both FFT forms: the split plans' last pass.
extern "C" __global__ void __launch_bounds__(WG) peaks_of_partials(const float* __restrict__ partials, float* __restrict__ peaks) {
    peaks_of_partials_body(partials, peaks);
}
