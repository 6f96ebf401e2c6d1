//! RLX alone against RLX with rlx-ext installed, same Session, same inputs:
//! RLX's WelchPeaks chain at batch 8192, n_fft 256, 8 segments, k 16, on the
//! CPU and, where a Vulkan device opens (lavapipe here), on RLX's wgpu
//! backend. Median of 7 runs after a warm-up.
//!
//!     cargo bench -p rlx-ext --bench session

use rlx_opt::testgen::welch_chains;
use rlx_runtime::{Device, Session};
use std::time::Instant;

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    let (batch, n_fft, segments, k) = (8192u64, 256u64, 8u64, 16u64);
    // The peaks only, as a model reading them would return.
    let text = welch_chains(1, batch * segments, n_fft, segments, k).replace("return %3, %4", "return %4");
    let graph = rlx_ir::text::parse(&text).expect("generated graph parses");
    let x: Vec<f32> = (0..batch * segments * n_fft).map(|i| ((i % 977) as f32 * 0.013).sin()).collect();
    let devices: Vec<(&str, Device)> = [("cpu", Device::Cpu), ("wgpu", Device::Gpu)]
        .into_iter()
        .filter(|(_, d)| std::panic::catch_unwind(|| Session::try_new(*d).is_ok()).unwrap_or(false))
        .collect();
    println!("RLX WelchPeaks chain, batch {batch}, n_fft {n_fft}, {segments} segments, k {k} (median of 7 runs, ms)");
    let mut alone = Vec::new();
    for (name, device) in &devices {
        let mut compiled = Session::new(*device).compile(graph.clone());
        alone.push(median_ms(7, || drop(compiled.run(&[("segs0", &x)]))));
        println!("{name:>5}: RLX alone {:9.2}", alone.last().unwrap());
    }
    for ((name, device), alone) in devices.iter().zip(alone) {
        rlx_ext::install(name).expect("known target");
        let mut compiled = Session::new(*device).compile(graph.clone());
        let fused = median_ms(7, || drop(compiled.run(&[("segs0", &x)])));
        println!("{name:>5}: RLX + rlx-ext {fused:9.2}   {:.1}× faster", alone / fused);
    }
}
