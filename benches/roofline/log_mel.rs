//! The fused log-mel op against the same roofline: Whisper's geometry
//! (n_fft 400, 80 and 128 mels, 3,000 frames a 30-second clip) and a
//! power-of-two neighbour, the frames resident, the filters' bands found
//! once, the frames' launch timed by CUDA events beside a device-to-device
//! copy of as many bytes as it reads and writes (the frames and the mels).

use rlx_opt::fused::LogMelAttrs;
use rlx_opt::runtime::Tensor;
use rlx_opt::runtime::calibrate::triangles;
use rlx_opt::runtime::cuda_kernel::CudaKernels;
use serde::Serialize;

/// (n_fft, frames, mels): Whisper's one clip, 8 clips (the CPU goal's
/// batch) and 32, at 80 and 128 mels; n_fft 512 beside them.
const CELLS: [(usize, usize, usize); 7] =
    [(400, 3000, 80), (400, 24_000, 80), (400, 96_000, 80), (400, 24_000, 128), (400, 96_000, 128), (512, 24_000, 80), (512, 96_000, 80)];

/// The headline cell: 8 Whisper clips at 80 mels.
pub const GOAL: (usize, usize, usize) = (400, 24_000, 80);

#[derive(Serialize)]
pub struct Row {
    pub n_fft: usize,
    pub frames: usize,
    pub mels: usize,
    pub input_bytes: usize,
    /// The mels the kernel writes (4·frames·mels).
    pub output_bytes: usize,
    pub kernel_us: f64,
    pub gbps: f64,
    pub copy_gbps: f64,
    pub roofline_pct: f64,
    /// The kernel's form: a warp per frame (the default), with its frames
    /// a block, or a block per frame (`RLX_OPT_CUDA_LOG_MEL_WARPS=0`).
    pub warps: bool,
    pub frames_per_block: u32,
}

/// Every cell (the goal's alone when `goal_only`), timed over windows of
/// `window_ms`, a line each on stdout.
pub fn measure(cuda: &CudaKernels, window_ms: f64, goal_only: bool) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    println!("{:>5} {:>7} {:>5} {:>10} {:>9} {:>6}  form", "n_fft", "frames", "mels", "kernel_us", "GB/s", "%roof");
    let mut rows = Vec::new();
    for (n_fft, frames, mels) in CELLS.into_iter().filter(|c| !goal_only || *c == GOAL) {
        let attrs = LogMelAttrs::frames(n_fft as u64, mels as u64);
        let input = Tensor::new(vec![frames, n_fft], super::noise(frames * n_fft, n_fft as u64));
        let filters = triangles(mels, n_fft / 2 + 1);
        let plan = rlx_opt::lower::log_mel::specialize(&attrs, &input.shape, rlx_opt::analysis::Target::Cuda, &cuda.limits())?.plan;
        let kernel_us = cuda.time_log_mel_us(&attrs, &input, &filters, window_ms)?;
        // Bytes read and written (the mels are 20% of the frames at 80 mels),
        // against a copy of as many bytes.
        let (input_bytes, output_bytes) = (4 * frames * n_fft, 4 * frames * mels);
        let copy_gbps = cuda.copy_gbps(input_bytes + output_bytes, window_ms)?;
        let gbps = (input_bytes + output_bytes) as f64 / (kernel_us * 1e-6) / 1e9;
        let row = Row { n_fft, frames, mels, input_bytes, output_bytes, kernel_us, gbps, copy_gbps, roofline_pct: 100.0 * gbps / copy_gbps, warps: plan.warps, frames_per_block: plan.frames_per_group };
        let form = if plan.warps { format!("warps ({} a block)", plan.frames_per_group) } else { "block".to_string() };
        println!("{:>5} {:>7} {:>5} {:>10.2} {:>9.1} {:>6.1}  {form}", n_fft, frames, mels, kernel_us, gbps, row.roofline_pct);
        rows.push(row);
    }
    Ok(rows)
}
