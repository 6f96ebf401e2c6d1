//! `cargo bench --bench roofline -- wgpu`: the WGSL kernels on the Vulkan
//! adapter (lavapipe here), each of its paths side by side in one run: with
//! subgroup operations where the adapter has them, and with workgroup
//! memory alone. A call's time includes uploading the input and reading the
//! peaks back (wgpu has no resident operands here; on lavapipe both are a
//! memcpy, small beside the kernel). Every path's peaks are compared with
//! the first path's, bins and powers exactly.

use super::{Cell, env_f64, noise};
use rlx_opt::runtime::wgpu_kernel::WgpuKernels;
use rlx_opt::runtime::{FusedKernel, Tensor};
use serde::Serialize;
use std::time::Instant;

/// lavapipe's grid: the regression cell (batch 1024 × 8 × 256, k 16)
/// and its neighbours in n_fft and k; batch 64 at the longer lengths, and
/// the multi-pass plans at 8192, 16384 and 65536.
fn cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for n_fft in [64, 256, 1024] {
        for k in [1, 16, 64] {
            cells.push(Cell { batch: 1024, segments: 8, n_fft, k });
        }
    }
    for (n_fft, k) in [(4096, 16), (8192, 16)] {
        cells.push(Cell { batch: 64, segments: 8, n_fft, k });
    }
    // The multi-pass plans (the four-step FFT) at longer lengths.
    cells.push(Cell { batch: 64, segments: 8, n_fft: 16384, k: 16 });
    cells.push(Cell { batch: 16, segments: 8, n_fft: 65536, k: 16 });
    cells
}

#[derive(Serialize)]
struct Row {
    #[serde(flatten)]
    cell: Cell,
    path: String,
    plan: String,
    ms: f64,
    /// The first path's time over this one's.
    speedup: f64,
    same_peaks: bool,
}

/// Median ms of `runs` calls.
fn median_ms(runs: usize, mut call: impl FnMut() -> Result<Tensor, rlx_opt::runtime::RuntimeError>) -> Result<(f64, Tensor), Box<dyn std::error::Error>> {
    let mut out = call()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        out = call()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[runs / 2], out))
}

/// Every cell on every path, printed and written as JSON to `out`.
pub fn measure(paths: &[(&str, WgpuKernels)], out: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let runs = env_f64("ROOFLINE_RUNS", 3.0).max(1.0) as usize;
    let adapter = paths.first().map_or(String::new(), |(_, k)| k.adapter.clone());
    println!("roofline -- wgpu on {adapter}: median of {runs} calls (upload, kernel, read back)");
    println!("{:>6} {:>4} {:>5} {:>3} {:>10} {:>10} {:>10} {:>8}", "batch", "segs", "n_fft", "k", "path", "plan", "ms", "speedup");
    let mut rows = Vec::new();
    for cell in cells() {
        let input = Tensor::new(vec![cell.batch * cell.segments, cell.n_fft], noise(cell.input_bytes() / 4, cell.n_fft as u64));
        let attrs = rlx_opt::fused::WelchPeaksAttrs::rlx(cell.n_fft as u64, cell.segments as u64, cell.k as u64);
        let mut first: Option<(f64, Tensor)> = None;
        for (path, kernels) in paths {
            let spec = rlx_opt::lower::specialize_for(&attrs, &input.shape, rlx_opt::analysis::Target::Wgpu, &kernels.limits())?;
            let (ms, peaks) = median_ms(runs, || kernels.run(&attrs, &input, None))?;
            let (base_ms, same_peaks) = match &first {
                None => (ms, true),
                Some((base, base_peaks)) => (*base, base_peaks.data.iter().zip(&peaks.data).all(|(a, b)| a.to_bits() == b.to_bits())),
            };
            let row = Row { cell, path: path.to_string(), plan: format!("{:?}", spec.kernel.plan), ms, speedup: base_ms / ms, same_peaks };
            println!("{:>6} {:>4} {:>5} {:>3} {:>10} {:>10} {:>10.2} {:>7.2}× {}", cell.batch, cell.segments, cell.n_fft, cell.k, path, row.plan, ms, row.speedup, if same_peaks { "" } else { "PEAKS DIFFER" });
            rows.push(row);
            first.get_or_insert((ms, peaks));
        }
    }
    let path = out.join("roofline-wgpu.json");
    std::fs::write(&path, serde_json::to_string_pretty(&serde_json::json!({"device": adapter, "timing": "median call: upload, kernel, read back", "cells": rows}))? + "\n")?;
    println!("wrote {}", path.display());
    Ok(())
}
