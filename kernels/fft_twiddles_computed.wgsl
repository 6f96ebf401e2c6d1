// The stages' twiddles computed where they are used (pasted in for
// FFT_TWIDDLES where the kernel's workgroup memory has no room for a table).

// Nothing to prepare.
fn fft_prepare(tid: u32) {}

// W_m^e.
fn fft_stage_twiddle(e: u32, m: u32) -> vec2<f32> {
    return fft_twiddle(e, m);
}
