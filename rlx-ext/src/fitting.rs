//! What fitting either fused op to RLX's GPU kernels shares
//! ([`crate::specialize`], [`crate::log_mel_ops`]): the limits RLX's devices
//! are planned with, and the key that names a specialisation.

use rlx_opt::analysis::Target;
use rlx_opt::analysis::loop_budget::LAVAPIPE_LOOP_ITERATIONS;
use rlx_opt::analysis::plan::DeviceLimits;
use rlx_opt::ir::TensorType;
use rlx_opt::lower::cuda::SmResources;
use rlx_opt::runtime::cuda_kernel::{CudaAttributes, device_of, limits_of};
use std::sync::OnceLock;
use std::hash::{Hash, Hasher};

/// The limits RLX's device is planned with. The pass cannot see which
/// adapter RLX's wgpu backend opens, and lavapipe (CI's) silently ends
/// kernels past its loop budget, so wgpu plans keep within it: on other
/// devices that splits long entries into more workgroups, and a top-k past
/// the budget (k from about 2,900 at n_fft 4096, 440 at 65,536) runs the
/// CPU kernel through RLX's host staging instead of a WGSL kernel. CUDA
/// plans take RLX's CUDA device's own limits where its driver reports them
/// ([`rlx_cuda_device`]; else `DeviceLimits::assumed`'s, an H100's), and
/// the CUDA forms as they are by default or as the environment overrides
/// them (`NAME=1` on, `NAME=0` off), as rlx-run's CUDA runtime does.
pub fn rlx_limits(target: Target) -> DeviceLimits {
    // Only a CUDA plan asks the driver: a wgpu or CPU session opens no
    // CUDA context.
    match target {
        Target::Wgpu => DeviceLimits { max_loop_iterations: LAVAPIPE_LOOP_ITERATIONS, ..DeviceLimits::assumed(target) },
        Target::Cuda => rlx_cuda_device().and_then(|(attributes, _)| limits_of(attributes).ok()).unwrap_or_else(|| DeviceLimits::assumed_as_asked(target)),
        _ => DeviceLimits::assumed_as_asked(target),
    }
}

/// The arch NVRTC compiles RLX's CUDA kernels for when rlx-ext looks for
/// their occupancy bound: RLX's device's (RLX compiles its kernels for
/// it), else sm_90. The bound ptxas keeps differs between archs (one warp
/// a block at 160 points: 25 blocks on sm_90, 32 on sm_80).
pub fn rlx_cuda_arch() -> &'static str {
    rlx_cuda_device().map_or("sm_90", |(_, arch)| arch.as_str())
}

/// What an SM of RLX's CUDA device holds for the occupancy form's launch
/// bounds (`cuda::occupancy_bounds`): its driver's figures, else an
/// H100's.
pub fn rlx_cuda_sm() -> SmResources {
    rlx_cuda_device().and_then(|(attributes, _)| attributes.sm_resources().ok()).unwrap_or(SmResources::SM_90)
}

/// RLX's CUDA device (RLX's backend opens device 0) as its driver reports
/// it, read once a process; none without a driver or a device.
pub fn rlx_cuda_device() -> Option<&'static (CudaAttributes, String)> {
    static DEVICE: OnceLock<Option<(CudaAttributes, String)>> = OnceLock::new();
    DEVICE.get_or_init(|| std::panic::catch_unwind(|| device_of(0).ok()).ok().flatten()).as_ref()
}

/// A key for one specialisation: the target, the op's attributes and the
/// operand's shape (stable within a process, where RLX's caches live).
pub fn key(target: Target, op_text: &str, input: &TensorType) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (target.name(), op_text, input.to_string()).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUDA plans take RLX's device's own limits, and its kernels are
    /// compiled for its arch and SM, where a driver reports a device;
    /// without one (CI), an H100's and sm_90.
    #[test]
    fn cuda_plans_for_rlx_s_device_where_there_is_one() {
        match device_of(0) {
            Ok((attributes, arch)) => {
                println!("RLX's CUDA device: {arch}, {attributes:?}");
                assert_eq!(rlx_limits(Target::Cuda), limits_of(&attributes).unwrap());
                assert_eq!(rlx_cuda_arch(), arch);
                assert_eq!(rlx_cuda_sm(), attributes.sm_resources().unwrap());
            }
            Err(reason) => {
                println!("SKIPPED the device's limits ({reason}): the assumed ones checked");
                assert_eq!(rlx_limits(Target::Cuda), DeviceLimits::assumed_as_asked(Target::Cuda));
                assert_eq!(rlx_cuda_arch(), "sm_90");
                assert_eq!(rlx_cuda_sm(), SmResources::SM_90);
            }
        }
    }
}
