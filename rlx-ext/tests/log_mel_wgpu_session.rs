//! RLX with rlx-ext installed on RLX's wgpu backend (lavapipe in CI) against
//! RLX alone on the CPU, on RLX's own log-mel chains and the log-mel
//! fixtures: each fused op runs as two WGSL dispatches in RLX's arena (the
//! filters' bands, then the frames), no host call. RLX alone on wgpu is the
//! wrong reference here: it takes minutes on LogMel (host steps and its own
//! FFT). The output is a log: values agree within 1e-4 absolute.

mod common;
use common::log_mel::compare_fitted;
use common::vulkan_available;
use rlx_runtime::Device;

#[test]
fn log_mel_runs_as_wgsl_kernels_in_rlx_wgpu_sessions() {
    if !vulkan_available() {
        eprintln!("SKIPPED log_mel_runs_as_wgsl_kernels_in_rlx_wgpu_sessions: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    compare_fitted(Device::Gpu, "wgpu");
}
