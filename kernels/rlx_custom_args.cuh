// RLX's custom-kernel signature (rlx-cuda 0.2.19's CudaGpuKernel): the
// arena, element offsets and lengths of the result and of up to four
// operands, and four extras. Pasted before the RLX entry points of every
// CUDA kernel (welch_peaks_entries_rlx.cuh, log_mel_entries_rlx.cuh).
#define RLX_CUSTOM_ARGS float* arena, unsigned out_off, unsigned out_len, unsigned n_inputs, \
    unsigned in0_off, unsigned in0_len, unsigned in1_off, unsigned in1_len, \
    unsigned in2_off, unsigned in2_len, unsigned in3_off, unsigned in3_len, \
    unsigned e0, unsigned e1, unsigned e2, unsigned e3
