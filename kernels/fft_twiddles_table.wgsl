// The stages' twiddles from a table in workgroup memory (pasted in for
// FFT_TWIDDLES where the kernel's workgroup memory holds it beside the
// FFT's buffer): W_FFT_N^i for i < FFT_N, computed once per workgroup, so
// that a butterfly loads its twiddles instead of computing a cos and a sin
// for each.

var<workgroup> fft_table: array<vec2<f32>, FFT_N>;

// Fill the table. Call once, from uniform control flow, before the first
// stage; a barrier must pass between them (the kernels' load barrier).
fn fft_prepare(tid: u32) {
    for (var i = tid; i < FFT_N; i += WG) {
        fft_table[i] = fft_twiddle(i, FFT_N);
    }
}

// W_m^e = W_FFT_N^{e·FFT_N/m} (m divides FFT_N, e < m).
fn fft_stage_twiddle(e: u32, m: u32) -> vec2<f32> {
    return fft_table[e * (FFT_N / m)];
}
