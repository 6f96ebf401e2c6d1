//! RLX alone against RLX with rlx-ext installed, same Session, same inputs:
//! RLX's WelchPeaks chain at n_fft 256, 8 segments, k 16, batch 8192 (the
//! issue's shape) and 2048, on the CPU and, where a Vulkan device opens
//! (lavapipe here), on RLX's wgpu backend. Median of 7 runs after a warm-up.
//! A fused op RLX's wgpu backend hosts (runs through the CPU kernel, as it
//! does when its arena puts an op's operands in different binding stripes)
//! is reported as such.
//!
//!     cargo bench -p rlx-ext --bench session [-- cpu|wgpu]

use rlx_opt::rlx_host::engine::{record_kernel_calls, take_kernel_calls};
use rlx_opt::rlx_host::ir_pass::uninstall;
use rlx_opt::testgen::welch_chains;
use rlx_runtime::{Device, Session};
#[path = "../../benches/common/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    // `-- cpu` or `-- wgpu` measures one device (cargo passes `--bench` too).
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let devices: Vec<(&str, Device)> = [("cpu", Device::Cpu), ("wgpu", Device::Gpu)]
        .into_iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|o| o == name))
        .filter(|(_, d)| std::panic::catch_unwind(|| Session::try_new(*d).is_ok()).unwrap_or(false))
        .collect();
    let (n_fft, segments, k) = (256u64, 8u64, 16u64);
    record_kernel_calls();
    for batch in [8192u64, 2048] {
        // The peaks only, as a model reading them would return.
        let text = welch_chains(1, batch * segments, n_fft, segments, k).replace("return %3, %4", "return %4");
        let graph = rlx_ir::text::parse(&text).expect("generated graph parses");
        let x: Vec<f32> = (0..batch * segments * n_fft).map(|i| ((i % 977) as f32 * 0.013).sin()).collect();
        println!("RLX WelchPeaks chain, batch {batch}, n_fft {n_fft}, {segments} segments, k {k} (median of 7 runs, ms)");
        for (name, device) in &devices {
            uninstall();
            let alone = {
                let mut compiled = Session::new(*device).compile(graph.clone());
                median_ms(7, || drop(compiled.run(&[("segs0", &x)])))
            };
            rlx_ext::install(name).expect("known target");
            let mut compiled = Session::new(*device).compile(graph.clone());
            take_kernel_calls();
            let fused = median_ms(7, || drop(compiled.run(&[("segs0", &x)])));
            let hosted = *name != "cpu" && !take_kernel_calls().is_empty();
            let how = if hosted { "   (RLX hosted the fused op: its CPU kernel ran)" } else { "" };
            println!("{name:>5}: RLX alone {alone:9.2}   RLX + rlx-ext {fused:9.2}   {:.1}× faster{how}", alone / fused);
        }
    }
}
