//! What fitting either fused op to RLX's GPU kernels shares
//! ([`crate::specialize`], [`crate::log_mel_ops`]): the limits RLX's devices
//! are planned with, and the key that names a specialisation.

use rlx_opt::analysis::Target;
use rlx_opt::analysis::loop_budget::LAVAPIPE_LOOP_ITERATIONS;
use rlx_opt::analysis::plan::DeviceLimits;
use rlx_opt::ir::TensorType;
use std::hash::{Hash, Hasher};

/// The limits RLX's device is planned with. The pass cannot see which
/// adapter RLX's wgpu backend opens, and lavapipe (CI's) silently ends
/// kernels past its loop budget, so wgpu plans keep within it: on other
/// devices that splits long entries into more workgroups, and a top-k past
/// the budget (k from about 2,900 at n_fft 4096, 440 at 65,536) runs the
/// CPU kernel through RLX's host staging instead of a WGSL kernel. CUDA
/// plans take the opt-in forms the environment asks for
/// (`DeviceLimits::assumed_as_asked`), as rlx-run's CUDA runtime does.
pub fn rlx_limits(target: Target) -> DeviceLimits {
    match target {
        Target::Wgpu => DeviceLimits { max_loop_iterations: LAVAPIPE_LOOP_ITERATIONS, ..DeviceLimits::assumed(target) },
        _ => DeviceLimits::assumed_as_asked(target),
    }
}

/// A key for one specialisation: the target, the op's attributes and the
/// operand's shape (stable within a process, where RLX's caches live).
pub fn key(target: Target, op_text: &str, input: &TensorType) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (target.name(), op_text, input.to_string()).hash(&mut h);
    h.finish()
}
