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
    /// launch. WGSL has only the four-step form. On CUDA it is the default
    /// ([`CudaForm::FourStep`]: it matched on an H200, 1.6–4.7× the radix-2
    /// stages); `RLX_OPT_CUDA_FOUR_STEP=0` plans the stages instead.
    pub four_step: bool,
    /// The log-mel kernel's warp form on CUDA (a warp per frame, several
    /// frames a block, no block-wide barrier: [`LogMelPlan::frames_per_group`](super::LogMelPlan::frames_per_group))
    /// rather than a block per frame. The default on CUDA
    /// ([`CudaForm::LogMelWarps`]: it matched on an H200, 1.2–1.4× the
    /// block form); `RLX_OPT_CUDA_LOG_MEL_WARPS=0` plans a block a frame.
    pub log_mel_warps: bool,
    /// CUDA's one-pass Welch kernels take an entry of one segment as one
    /// complex FFT of half its length (the segment's even samples the real
    /// parts, its odd ones the imaginary), split into its one-sided
    /// spectrum, rather than as a pair with a segment of zeros: half the
    /// FFT ([`KernelGeometry::packed`](super::KernelGeometry::packed); even
    /// n_fft from 4). The default on CUDA ([`CudaForm::PackedSegment`]: it
    /// matched on an H200, 1.04–1.68×); `RLX_OPT_CUDA_PACKED_SEGMENT=0`
    /// pairs the segment with zeros instead.
    pub packed_segment: bool,
}

impl DeviceLimits {
    /// What every device of `target` is taken to offer when a graph is
    /// compiled: wgpu's default binding limit (128 MiB) and the 32 KiB of
    /// workgroup memory of Metal, lavapipe and desktop Vulkan drivers; CUDA's
    /// 48 KiB of static shared memory and no binding limit beyond the index
    /// range, and CUDA's forms as they are by default ([`CudaForm::by_default`]). Parallelism: an H100's 132 SMs with 8 blocks of 256 threads
    /// each; 256 workgroups for an unknown wgpu device; 4 tasks for each of
    /// 8 CPU cores. Fixed numbers, so that a compiled graph does not depend
    /// on the machine that compiled it; runtimes plan with their device's own.
    pub fn assumed(target: Target) -> DeviceLimits {
        match target {
            Target::Cuda | Target::Rocm => DeviceLimits {
                max_binding_bytes: u64::MAX,
                max_workgroup_bytes: 48 * 1024,
                parallelism: 1056,
                max_loop_iterations: u64::MAX,
                four_step: CudaForm::FourStep.by_default(),
                log_mel_warps: CudaForm::LogMelWarps.by_default(),
                packed_segment: CudaForm::PackedSegment.by_default(),
            },
            Target::Cpu => DeviceLimits { max_binding_bytes: u64::MAX, max_workgroup_bytes: u64::MAX, parallelism: CPU_TASKS_PER_THREAD * 8, max_loop_iterations: u64::MAX, four_step: true, log_mel_warps: false, packed_segment: false },
            _ => DeviceLimits { max_binding_bytes: 128 << 20, max_workgroup_bytes: 32 * 1024, parallelism: 256, max_loop_iterations: u64::MAX, four_step: true, log_mel_warps: false, packed_segment: false },
        }
    }

    /// What kernels for `target` are planned with when no device is at
    /// hand ([`assumed`](Self::assumed)) and, on CUDA, the forms as this
    /// process's environment overrides them: what `--emit-kernels` writes
    /// and what rlx-ext fits to RLX's devices.
    pub fn assumed_as_asked(target: Target) -> DeviceLimits {
        match target {
            Target::Cuda => DeviceLimits::assumed(target).with_cuda_opt_ins(),
            _ => DeviceLimits::assumed(target),
        }
    }

    /// These limits with the CUDA forms as this process's environment
    /// overrides them ([`crate::opt_in`]: `NAME=1` on, `NAME=0` off): what
    /// every runtime that plans for a CUDA device applies (rlx-run's,
    /// rlx-ext's fitting for RLX), so that one environment gives both the
    /// same plans.
    pub fn with_cuda_opt_ins(self) -> DeviceLimits {
        self.with_opt_ins(CudaForm::overridden)
    }

    /// These limits with each form `word` has a word on switched as it
    /// says (the forms that are plan limits; the occupancy bound is the
    /// CUDA emitter's), the others as they were.
    pub fn with_opt_ins(self, word: impl Fn(CudaForm) -> Option<bool>) -> DeviceLimits {
        DeviceLimits {
            four_step: word(CudaForm::FourStep).unwrap_or(self.four_step),
            log_mel_warps: word(CudaForm::LogMelWarps).unwrap_or(self.log_mel_warps),
            packed_segment: word(CudaForm::PackedSegment).unwrap_or(self.packed_segment),
            ..self
        }
    }
}

/// Tasks per CPU thread a split plan aims for.
pub const CPU_TASKS_PER_THREAD: u64 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// A form's word switches its own limit, either way, and nothing
    /// else; no word leaves each as assumed, which is each form's default.
    #[test]
    fn each_form_switches_its_own_limit_either_way() {
        let cuda = DeviceLimits::assumed(Target::Cuda);
        assert_eq!((cuda.four_step, cuda.log_mel_warps, cuda.packed_segment), (true, true, true), "the forms measured faster on an H200");
        assert_eq!(cuda.with_opt_ins(|_| None), cuda);
        for on in [true, false] {
            let only = |form: CudaForm| move |f: CudaForm| (f == form).then_some(on);
            assert_eq!(cuda.with_opt_ins(only(CudaForm::FourStep)), DeviceLimits { four_step: on, ..cuda });
            assert_eq!(cuda.with_opt_ins(only(CudaForm::LogMelWarps)), DeviceLimits { log_mel_warps: on, ..cuda });
            assert_eq!(cuda.with_opt_ins(only(CudaForm::PackedSegment)), DeviceLimits { packed_segment: on, ..cuda });
            assert_eq!(cuda.with_opt_ins(only(CudaForm::Occupancy)), cuda);
        }
        let wgpu = DeviceLimits::assumed(Target::Wgpu);
        assert!(wgpu.with_opt_ins(|_| None).four_step);
    }
}
