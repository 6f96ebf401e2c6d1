// The multi-pass plans' last passes, both FFT forms (pasted into
// welch_peaks_multipass.cu and welch_peaks_four_step.cu for the
// MULTIPASS_POWER placeholder): the power of a pair's spectrum, bin j at
// SPECTRUM_SLOT(j) of the pair's N values (the includer defines it: in
// order after radix-2 stages, by row and column after the four-step FFT),
// summed over pairs, then the top-k or the split plans' partial spectra.

// The bins thread tid owns of the power of spectrum pairs first..end of
// batch entry b, into psd.
__device__ __forceinline__ void spectra_power(const float2* __restrict__ spectra, unsigned long long b, unsigned int first, unsigned int end, float (&psd)[BPT]) {
    const unsigned int tid = threadIdx.x;
    for (unsigned int i = 0; i < BPT; i++) {
        psd[i] = 0.0f;
        const unsigned int j = tid + i * WG;
        if (j < BINS) {
            for (unsigned int pair = first; pair < end; pair++) {
                const float2* z = spectra + (b * PAIRS + pair) * N;
                psd[i] += pair_power(z[SPECTRUM_SLOT(j)], z[SPECTRUM_SLOT(mirror(j))], j);
            }
        }
    }
}

__device__ __forceinline__ void peaks_of_body(const float2* __restrict__ spectra, float* __restrict__ peaks) {
    __shared__ Key best[WARPS];
    const unsigned long long b = batch_entry();
    if (b >= BATCH) return;
    float psd[BPT];
    spectra_power(spectra, b, 0, PAIRS, psd);
    write_peaks<0>(threadIdx.x, psd, best, peaks + b * 2ull * K);
}

// Split-multipass plan: work item (batch entry, chunk) per block.
__device__ __forceinline__ void partial_of_body(const float2* __restrict__ spectra, float* __restrict__ partials) {
    const unsigned long long item = batch_entry();
    if (item >= (unsigned long long)BATCH * CHUNKS) return;
    float psd[BPT];
    const unsigned long long c = item % CHUNKS;
    spectra_power(spectra, item / CHUNKS, chunk_first(c), chunk_end(c), psd);
    write_partials(threadIdx.x, psd, partials, item);
}
