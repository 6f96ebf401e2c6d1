// The log-mel entry points with an argument per operand (rlx-run,
// --emit-kernels), pasted into log_mel.cu for the ENTRIES placeholder.

extern "C" __global__ void __launch_bounds__(BANDS_WG) mel_bands(const float* __restrict__ filters, uint2* __restrict__ bands) {
    unsigned int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m < MELS) {
        bands[m] = band_of(filters, m);
    }
}

extern "C" __global__ void __launch_bounds__(WG) log_mel(
    const float* __restrict__ frames,
    const float* __restrict__ window,
    const float* __restrict__ filters,
    const uint2* __restrict__ bands,
    float* __restrict__ mels) {
    log_mel_body(frames, window, filters, bands, mels);
}
