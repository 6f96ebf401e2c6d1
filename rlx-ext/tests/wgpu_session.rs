//! RLX alone against RLX with `install("wgpu")` on RLX's wgpu backend
//! (lavapipe in CI): the fused ops run as rlx-opt's WGSL kernels, fitted to
//! RLX's arena, one dispatch per op (several for a multi-pass plan).

mod common;
use common::{compare_with_rlx_alone, vulkan_available};
use rlx_runtime::Device;

#[test]
fn rlx_with_install_matches_rlx_alone_on_wgpu() {
    if !vulkan_available() {
        eprintln!("SKIPPED rlx_with_install_matches_rlx_alone_on_wgpu: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let on_gpu = compare_with_rlx_alone(Device::Gpu, "wgpu", 1e-4, |name, fused| {
        if name.contains("n_fft=8192") {
            // The four-step FFT: columns, rows, then the peaks.
            assert!(fused.contains(".columns") && fused.contains(".rows") && fused.contains(".peaks") && !fused.contains(".stage"), "{name}: the multi-pass plan as ops in sequence");
        }
        // One long signal: its segments spread over workgroups, the partial
        // spectra an op's result and the next op's operand.
        if name.contains("segments=4097") || name.contains("segments=67") {
            assert!(fused.contains(".partial") && fused.contains(".peaks"), "{name}: the split plan as ops in sequence:\n{fused}");
        }
    });
    assert!(on_gpu >= 6, "{on_gpu} fused ops ran on the WGSL kernels");
}
