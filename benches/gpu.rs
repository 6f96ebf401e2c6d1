//! The fused kernel on the GPU (run on the device machine): kernel time with
//! the data resident, algorithm bandwidth (input bytes / kernel time), and the
//! Vulkan path on the same card; `benches/torch_welch.py` times PyTorch's
//! usual way (unfold, window, rfft, power, mean, topk) with CUDA events.
//!
//! `cargo bench --bench gpu` — prints why it skips where there is no GPU.

use rlx_opt::fused::WelchPeaksAttrs;
use rlx_opt::runtime::{FusedKernel, Tensor};

fn main() {
    let cuda = rlx_opt::runtime::cuda_kernel::CudaKernels::new();
    let wgpu = rlx_opt::runtime::wgpu_kernel::WgpuKernels::new();
    if let Err(e) = &cuda {
        println!("CUDA: skipped ({e})");
    }
    match &wgpu {
        Ok(w) => println!("Vulkan adapter: {}", w.adapter),
        Err(e) => println!("Vulkan: skipped ({e})"),
    }
    println!("{:>7} {:>6} {:>12} {:>14} {:>14}", "batch", "n_fft", "cuda_ms", "cuda_GB/s", "vulkan_ms");
    for batch in [1024usize, 8192, 65536] {
        let (n, segments, k) = (256usize, 8usize, 16u64);
        let attrs = WelchPeaksAttrs::rlx(n as u64, segments as u64, k);
        let input = Tensor::new(vec![batch * segments, n], (0..batch * segments * n).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect());
        let bytes = (input.len() * 4) as f64;
        let cuda_ms = cuda.as_ref().ok().and_then(|c| c.time_kernel(&attrs, &input, None, 20).ok());
        let vulkan_ms = wgpu.as_ref().ok().map(|w| -> Result<f64, rlx_opt::runtime::RuntimeError> {
            let start = std::time::Instant::now();
            for _ in 0..3 {
                w.run(&attrs, &input, None)?;
            }
            Ok(start.elapsed().as_secs_f64() * 1e3 / 3.0)
        });
        println!(
            "{batch:>7} {n:>6} {:>12} {:>14} {:>14}",
            cuda_ms.map_or("-".into(), |t| format!("{t:.3}")),
            cuda_ms.map_or("-".into(), |t| format!("{:.1}", bytes / (t * 1e-3) / 1e9)),
            match vulkan_ms {
                None => "-".to_string(),
                Some(Ok(t)) => format!("{t:.3} (incl. copies)"),
                Some(Err(e)) => e.to_string(),
            },
        );
    }
}
