//! What a device offers the kernels, and the kernels' own fixed bounds.

use crate::analysis::Target;
use crate::opt_in::CudaForm;
use serde::Serialize;

/// Threads per workgroup/block (fewer for tiny FFTs, so the FFT buffer can
/// hold the top-k reduction).
pub const MAX_THREADS: u32 = 256;
/// The longest FFT the one-pass kernel holds in workgroup memory (8 bytes a
/// point); longer FFTs take the multi-pass plan.
pub const MAX_ONE_PASS_N_FFT: u64 = 4096;
/// The longest FFT of the multi-pass plan (each thread keeps 129 bins).
pub const MAX_N_FFT: u64 = 65536;
/// Values one kernel buffer may hold: the kernels index with 32 bits, and
/// some index arithmetic goes up to twice a buffer's length.
pub const MAX_INDEXED_VALUES: u64 = u32::MAX as u64 / 2;

/// What a device offers the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DeviceLimits {
    /// Bytes one storage buffer binding may cover.
    pub max_binding_bytes: u64,
    /// Workgroup (shared) memory of one workgroup or block, in bytes.
    pub max_workgroup_bytes: u64,
    /// Work items (CPU tasks, workgroups, blocks) the device keeps busy at
    /// once: split plans cut each entry's segments into enough chunks that
    /// batch × chunks reaches it.
    pub parallelism: u64,
    /// Loop iterations one kernel invocation may run, all loops together.
    /// Real GPUs take any number; lavapipe leaves every loop after 65,535
    /// without an error ([`loop_budget`](crate::analysis::loop_budget)), so there long entries are split
    /// and a top-k past it has no kernel.
    pub max_loop_iterations: u64,
    /// The multi-pass plans' FFT in four steps (`FftPasses::FourStep`:
    /// two passes through device memory) rather than a radix-2 stage a
    /// launch. WGSL has only the four-step form. CUDA takes it only where a
    /// runtime asks ([`CudaForm::FourStep`], `RLX_OPT_CUDA_FOUR_STEP=1`)
    /// until its four-step kernel has run on a GPU and matched the
    /// reference: the radix-2 stages, which have, stay the default.
    pub four_step: bool,
    /// The log-mel kernel's warp form on CUDA (a warp per frame, several
    /// frames a block, no block-wide barrier: [`LogMelPlan::frames_per_group`](super::LogMelPlan::frames_per_group))
    /// rather than a block per frame. Only where a runtime asks
    /// ([`CudaForm::LogMelWarps`], `RLX_OPT_CUDA_LOG_MEL_WARPS=1`) until it has run on a GPU and matched the
    /// reference: the block form, which has, stays the default.
    pub log_mel_warps: bool,
    /// CUDA's one-pass Welch kernels take an entry of one segment as one
    /// complex FFT of half its length (the segment's even samples the real
    /// parts, its odd ones the imaginary), split into its one-sided
    /// spectrum, rather than as a pair with a segment of zeros: half the
    /// FFT ([`KernelGeometry::packed`](super::KernelGeometry::packed); even
    /// n_fft from 4). Only where a runtime asks ([`CudaForm::PackedSegment`],
    /// `RLX_OPT_CUDA_PACKED_SEGMENT=1`) until it has run on a GPU and
    /// matched the reference.
    pub packed_segment: bool,
}

impl DeviceLimits {
    /// What every device of `target` is taken to offer when a graph is
    /// compiled: wgpu's default binding limit (128 MiB) and the 32 KiB of
    /// workgroup memory of Metal, lavapipe and desktop Vulkan drivers; CUDA's
    /// 48 KiB of static shared memory and no binding limit beyond the index
    /// range. Parallelism: an H100's 132 SMs with 8 blocks of 256 threads
    /// each; 256 workgroups for an unknown wgpu device; 4 tasks for each of
    /// 8 CPU cores. Fixed numbers, so that a compiled graph does not depend
    /// on the machine that compiled it; runtimes plan with their device's own.
    pub fn assumed(target: Target) -> DeviceLimits {
        match target {
            Target::Cuda | Target::Rocm => DeviceLimits { max_binding_bytes: u64::MAX, max_workgroup_bytes: 48 * 1024, parallelism: 1056, max_loop_iterations: u64::MAX, four_step: false, log_mel_warps: false, packed_segment: false },
            Target::Cpu => DeviceLimits { max_binding_bytes: u64::MAX, max_workgroup_bytes: u64::MAX, parallelism: CPU_TASKS_PER_THREAD * 8, max_loop_iterations: u64::MAX, four_step: true, log_mel_warps: false, packed_segment: false },
            _ => DeviceLimits { max_binding_bytes: 128 << 20, max_workgroup_bytes: 32 * 1024, parallelism: 256, max_loop_iterations: u64::MAX, four_step: true, log_mel_warps: false, packed_segment: false },
        }
    }

    /// What kernels for `target` are planned with when no device is at
    /// hand ([`assumed`](Self::assumed)) and, on CUDA, the opt-in forms this
    /// process asks for: what `--emit-kernels` writes and what rlx-ext fits
    /// to RLX's devices.
    pub fn assumed_as_asked(target: Target) -> DeviceLimits {
        match target {
            Target::Cuda => DeviceLimits::assumed(target).with_cuda_opt_ins(),
            _ => DeviceLimits::assumed(target),
        }
    }

    /// These limits with the opt-in CUDA forms this process asks for
    /// ([`crate::opt_in`]) switched on: what every runtime that plans for a
    /// CUDA device applies (rlx-run's, rlx-ext's fitting for RLX), so that
    /// one environment gives both the same plans.
    pub fn with_cuda_opt_ins(self) -> DeviceLimits {
        self.with_opt_ins(CudaForm::asked)
    }

    /// These limits with each form `asked` says yes to switched on (the
    /// forms that are plan limits; the occupancy bound is the CUDA
    /// emitter's).
    pub fn with_opt_ins(self, asked: impl Fn(CudaForm) -> bool) -> DeviceLimits {
        DeviceLimits {
            four_step: self.four_step || asked(CudaForm::FourStep),
            log_mel_warps: self.log_mel_warps || asked(CudaForm::LogMelWarps),
            packed_segment: self.packed_segment || asked(CudaForm::PackedSegment),
            ..self
        }
    }
}

/// Tasks per CPU thread a split plan aims for.
pub const CPU_TASKS_PER_THREAD: u64 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// Each plan form turns on its own limit and nothing else, and no
    /// opt-in turns off what a target already has (WGSL's four-step FFT).
    #[test]
    fn each_opt_in_switches_its_own_limit_on() {
        let cuda = DeviceLimits::assumed(Target::Cuda);
        assert_eq!(cuda.with_opt_ins(|_| false), cuda);
        assert_eq!(cuda.with_opt_ins(|f| f == CudaForm::FourStep), DeviceLimits { four_step: true, ..cuda });
        assert_eq!(cuda.with_opt_ins(|f| f == CudaForm::LogMelWarps), DeviceLimits { log_mel_warps: true, ..cuda });
        assert_eq!(cuda.with_opt_ins(|f| f == CudaForm::PackedSegment), DeviceLimits { packed_segment: true, ..cuda });
        assert_eq!(cuda.with_opt_ins(|f| f == CudaForm::Occupancy), cuda);
        let wgpu = DeviceLimits::assumed(Target::Wgpu);
        assert!(wgpu.with_opt_ins(|_| false).four_step);
    }
}
