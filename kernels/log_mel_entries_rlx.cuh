// The log-mel entry points in RLX's custom-kernel signature (rlx-cuda's
// CudaGpuKernel; RLX_CUSTOM_ARGS from rlx_custom_args.cuh), pasted into
// log_mel.cu for the ENTRIES placeholder. Each is an RLX op of its own:
//   `rlx_mel_bands`: operand 0 the filters, the result the bands, (first,
//   end) pairs held as f32 (RLX's host staging copies f32 tensors);
//   `rlx_log_mel`: operands the frames, the filters, the bands, then the
//   window when the op has one; the result the mel values.

extern "C" __global__ void __launch_bounds__(BANDS_WG) rlx_mel_bands(RLX_CUSTOM_ARGS) {
    unsigned int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m < MELS) {
        uint2 band = band_of(arena + in0_off, m);
        arena[out_off + 2u * m] = (float)band.x;
        arena[out_off + 2u * m + 1u] = (float)band.y;
    }
}

extern "C" __global__ void __launch_bounds__(WG) rlx_log_mel(RLX_CUSTOM_ARGS) {
    const float* bands = arena + in2_off;
    log_mel_body(arena + in0_off, arena + in3_off, arena + in1_off, bands, arena + out_off);
}
