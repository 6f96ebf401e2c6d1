//! The lowering plan of a fused op: which kernel runs it on a target, and
//! with what geometry, or why no kernel can. One function, [`plan`], answers
//! for pricing (the IO profile prices a native kernel without a host thunk),
//! lowering (`lower::specialize`, `--emit-kernels`) and every runtime, so an
//! op is never priced as native and then refused when it runs.
//!
//! A plan is named ([`PlanName`], the op's `plan` attribute): `batch` and
//! `split` on every target, `multipass` and `split-multipass` on GPUs. The
//! pass's picker chooses it; this function only makes it concrete, and
//! where the device cannot hold an FFT in workgroup memory it takes the
//! multi-pass form of the same plan.
//!
//! The kernels index with 32 bits and bind whole buffers, so the plan checks
//! the FFT length, the index range and the device's binding and workgroup
//! memory limits. At compile time the limits are those every device of the
//! target is assumed to have ([`DeviceLimits::assumed`]); a runtime passes
//! its device's own.
//!
//! One job a file: the devices' limits (`limits`), how split plans cut an
//! entry (`split`), a kernel's geometry for one shape (`geometry`), and here
//! the plan itself.

mod geometry;
mod limits;
pub mod log_mel;
mod split;

pub use geometry::{FftPasses, FourStep, FourStepPass, KernelGeometry, MAX_FOUR_STEP_PASS_LEN};
pub use limits::{CPU_TASKS_PER_THREAD, DeviceLimits, MAX_INDEXED_VALUES, MAX_N_FFT, MAX_ONE_PASS_N_FFT, MAX_THREADS};
pub use log_mel::{CPU_FRAMES_PER_GROUP, LogMelPlan, MAX_LOG_MEL_N_FFT, fft_radices, log_mel_gpu_lowering, log_mel_plan, log_mel_sizes};
pub use split::{SplitBounds, split_chunks};

use super::Target;
use crate::fused::{LogMelAttrs, Lowering, PlanName, WelchPeaksAttrs};
use crate::ir::{DType, TensorType};
use geometry::Form;
use serde::Serialize;

/// How a fused op runs on a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub lowering: Lowering,
    /// The plan that runs: the one asked for, in its multi-pass form where
    /// the FFT does not fit the device's workgroup memory, split where an
    /// entry has more pairs than one of its workgroups may transform, and
    /// in its batch form where a split would leave one chunk per entry.
    pub name: PlanName,
    /// The GPU kernel's geometry; `None` for the CPU kernel, and for GPU
    /// kernels whose input has dynamic dims (sized when they run).
    pub kernel: Option<KernelGeometry>,
}

/// Why no native kernel runs an op: it then runs as a host call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("{target} has no kernel for the fused op")]
    NoKernel { target: Target },
    #[error("the {plan} plan is for GPUs; the CPU runs `batch` or `split`")]
    PlanNotOnTarget { plan: PlanName, target: Target },
    #[error("the GPU kernels need n_fft ≥ 2, not {n_fft} (the CPU kernel takes any length)")]
    FftLength { n_fft: u64 },
    /// Neither CUDA multi-pass FFT takes the length: the four-step FFT
    /// needs two factors of at least 2, the radix-2 stages a power of two.
    #[error("not fused on CUDA: n_fft {n_fft} needs the multi-pass plan (longer than one block's shared memory holds, or asked for), and neither multi-pass FFT takes it: the four-step FFT needs factors n1·n2 with 2 ≤ n1 ≤ n2 ≤ {MAX_FOUR_STEP_PASS_LEN}, the radix-2 stages a power of two")]
    MultiPassFftLength { n_fft: u64 },
    /// The WGSL four-step FFT needs a factor pair with both passes' FFTs
    /// in workgroup memory.
    #[error("not fused on the GPU: n_fft {n_fft} has no factors n1·n2 with n1 ≤ n2 ≤ {MAX_FOUR_STEP_PASS_LEN} for the four-step multi-pass FFT")]
    FourStepFftLength { n_fft: u64 },
    #[error("n_fft {n_fft} is longer than the GPU kernels take (at most {MAX_N_FFT}, multi-pass beyond {MAX_ONE_PASS_N_FFT})")]
    FftTooLong { n_fft: u64 },
    #[error("the operand does not fit the op: {0}")]
    Operand(crate::fused::OperandError),
    /// Boxed: it holds two tensor types, and every error that carries an
    /// `Unsupported` (the lowering's, the runtimes') would grow with it.
    #[error("the operand does not fit the op: {0}")]
    LogMelOperand(Box<crate::fused::LogMelOperandError>),
    #[error("{what} holds {values} values, more than the kernels' 32-bit indexing takes ({MAX_INDEXED_VALUES})")]
    IndexRange { what: &'static str, values: u64 },
    #[error("{what} takes {bytes} bytes, more than one binding covers on this device ({limit})")]
    Binding { what: &'static str, bytes: u64, limit: u64 },
    #[error("the kernel needs {bytes} bytes of workgroup memory, the device offers {limit}")]
    WorkgroupMemory { bytes: u64, limit: u64 },
    #[error("{what} takes {iterations} loop iterations in one kernel invocation, more than this device runs ({budget} usable; lavapipe ends longer loops early)")]
    LoopBudget { what: &'static str, iterations: u64, budget: u64 },
    /// The mixed-radix FFT of the log-mel kernels takes lengths of 2, 3 and 5 only.
    /// `factor` is the smallest prime factor above 5 (for a length past
    /// 2^34 whose every such factor is past 2^17, their product: see
    /// `log_mel::fft_radices`).
    #[error("not fused on the GPU: n_fft {n_fft} has a prime factor above 5 ({factor}); the GPU kernels' mixed-radix FFT takes radices 2, 3, 4 and 5")]
    FftFactor { n_fft: u64, factor: u64 },
    #[error("n_fft {n_fft} is longer than the GPU log-mel kernels take (at most {MAX_LOG_MEL_N_FFT})")]
    LogMelFftTooLong { n_fft: u64 },
}

/// The plan of the op with `attrs` on an operand of type `input`, on `target`.
pub fn plan(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target, limits: &DeviceLimits) -> Result<Plan, Unsupported> {
    let lowering = match target {
        Target::Cpu => return cpu_plan(attrs, input, target, limits),
        Target::Cuda => Lowering::Cuda,
        Target::Wgpu => Lowering::Spirv,
        Target::Metal | Target::Mlx => Lowering::Msl,
        Target::Rocm | Target::Tpu => return Err(Unsupported::NoKernel { target }),
    };
    let n = attrs.n_fft;
    if n < 2 {
        return Err(Unsupported::FftLength { n_fft: n });
    }
    if n > MAX_N_FFT {
        return Err(Unsupported::FftTooLong { n_fft: n });
    }
    // The one-pass kernels' FFT is the mixed-radix one both ops share.
    fft_radices(n)?;
    // CUDA's FFT buffer is padded: a device with less shared memory takes
    // the multi-pass plan where the padded buffer does not fit.
    let buffer = if target == Target::Cuda { cuda_fft_buffer_len(n) } else { n };
    let one_pass_fits = n <= MAX_ONE_PASS_N_FFT && 8 * buffer <= limits.max_workgroup_bytes;
    let multipass = attrs.plan.is_some_and(PlanName::is_multipass) || !one_pass_fits;
    let threads = block_threads(target, n, multipass);
    let bounds = SplitBounds::of(attrs, multipass, limits)?;
    let split = attrs.plan.is_some_and(PlanName::is_split) || !bounds.entry_fits;
    let name = PlanName::with(split, multipass);
    let fft = multipass_fft(target, n, name.is_multipass(), limits)?;
    let packed = packs_one_segment(attrs, target, fft, limits);
    let (twiddle_table, shared_bytes) = match fft {
        FftPasses::OnePass => {
            // A packed segment's FFT is half as long: so is its buffer.
            let buffer = if packed { cuda_fft_buffer_len(n / 2) } else { buffer };
            let table = wgsl_twiddle_table(target, n, 8 * buffer, limits);
            (table, 8 * buffer + if table { twiddle_table_bytes(n) } else { 0 })
        }
        // The top-k's scratch: a key a thread.
        FftPasses::MultiPass => (false, 8 * threads as u64),
        FftPasses::FourStep { n1, n2 } => {
            // CUDA pads each FFT's buffer as its one-pass kernel does (its
            // tables are constant memory).
            let slots = |len| if target == Target::Cuda { cuda_fft_buffer_len(len) } else { len };
            let buffer = 8 * FourStep { n1: n1.into(), n2: n2.into() }.buffer_points(threads, slots);
            let table = wgsl_twiddle_table(target, n1.max(n2).into(), buffer, limits);
            let tables = if table { twiddle_table_bytes(n1.max(n2).into()) } else { 0 };
            (table, (buffer + tables).max(8 * threads as u64))
        }
    };
    if shared_bytes > limits.max_workgroup_bytes {
        return Err(Unsupported::WorkgroupMemory { bytes: shared_bytes, limit: limits.max_workgroup_bytes });
    }
    let batch = attrs.batch_of(input).map_err(Unsupported::Operand)?;
    let (Some(shape), Some(batch)) = (input.static_dims(), batch.iter().map(|d| d.as_static()).collect::<Option<Vec<u64>>>()) else {
        return Ok(Plan { lowering, name, kernel: None });
    };
    let form = Form { name, fft, split, multipass, threads, shared_bytes, twiddle_table, packed };
    let kernel = geometry::kernel_plan(attrs, &shape, &batch, form, &bounds, limits)?;
    Ok(Plan { lowering, name: kernel.plan, kernel: Some(kernel) })
}

/// Whether the plan's kernel takes each entry's one segment as a complex
/// FFT of half its length ([`KernelGeometry::packed`]): CUDA's one-pass
/// kernels where `limits` ask for it ([`DeviceLimits::packed_segment`]),
/// for an even n_fft from 4 (the half-length FFT has at least 2 points).
/// The block keeps the threads of the full length: each holds as many bins
/// as unpacked, and loads and transforms half as many points.
fn packs_one_segment(attrs: &WelchPeaksAttrs, target: Target, fft: FftPasses, limits: &DeviceLimits) -> bool {
    target == Target::Cuda && limits.packed_segment && fft == FftPasses::OnePass && attrs.segments == 1 && attrs.n_fft >= 4 && attrs.n_fft.is_multiple_of(2)
}

/// How a plan's FFT passes over device memory: in one kernel, or in a
/// multi-pass form: the four-step FFT (WGSL always; CUDA by default, any
/// length of 2s, 3s and 5s with both factors at least 2: CUDA's FFT has no
/// 1-point form), or CUDA's radix-2 stages (powers of two), which CUDA
/// takes where `limits` turn the four-step FFT off
/// (`RLX_OPT_CUDA_FOUR_STEP=0`) or it does not take the length. A length
/// the radix-2 stages do not take keeps the four-step FFT even then: the
/// form is a choice between kernels, never a refusal, so the pass (which
/// plans with the assumed limits) and a runtime (with the environment's)
/// lower the same ops to CUDA.
pub(crate) fn multipass_fft(target: Target, n: u64, multipass: bool, limits: &DeviceLimits) -> Result<FftPasses, Unsupported> {
    let cuda = target == Target::Cuda;
    let four_step = FourStep::of(n).filter(|f| !cuda || f.n1 >= 2).map(|f| FftPasses::FourStep { n1: f.n1 as u32, n2: f.n2 as u32 });
    let stages = (cuda && n.is_power_of_two()).then_some(FftPasses::MultiPass);
    let preferred = if !cuda || limits.four_step { four_step.or(stages) } else { stages.or(four_step) };
    match (multipass, preferred) {
        (false, _) => Ok(FftPasses::OnePass),
        // The four-step FFT's factors are at most MAX_FOUR_STEP_PASS_LEN.
        (true, Some(fft)) => Ok(fft),
        (true, None) if cuda => Err(Unsupported::MultiPassFftLength { n_fft: n }),
        (true, None) => Err(Unsupported::FourStepFftLength { n_fft: n }),
    }
}

/// Whether a WGSL kernel whose other workgroup memory takes `shared_bytes`
/// reads its FFT's stage twiddles from a table in workgroup memory
/// (`kernels/fft_twiddles_table.wgsl`: W_n^i for i < n, filled once per
/// workgroup): where the table fits beside the rest. CUDA's table is in
/// constant memory (`FFT_TWIDDLES`), outside this count.
pub fn wgsl_twiddle_table(target: Target, n: u64, shared_bytes: u64, limits: &DeviceLimits) -> bool {
    target != Target::Cuda && shared_bytes + twiddle_table_bytes(n) <= limits.max_workgroup_bytes
}

/// Workgroup memory of the WGSL FFT's twiddle table at length `n`.
pub fn twiddle_table_bytes(n: u64) -> u64 {
    8 * n
}

/// Points of the CUDA FFT's shared buffer at length `n` (`FFT_BUF_LEN`):
/// its padding, `fft_at` in kernels/fft_mixed_radix.cuh (five after every
/// 16 points and one after every 256, against bank conflicts), up to the
/// last point's slot.
pub fn cuda_fft_buffer_len(n: u64) -> u64 {
    let last = n.saturating_sub(1);
    last + 5 * (last >> 4) + (last >> 8) + 1
}

/// Threads of a workgroup (block): a power of two, for the top-k's
/// reductions, and at most the FFT's length. The CUDA one-pass kernel's
/// block is one warp up to 512 points (no block-wide barrier: `__syncwarp`
/// and shuffles), and past that just enough threads that each loads at most
/// 16 samples of a pair (its registers); the WGSL and multi-pass kernels
/// take up to 256.
pub fn block_threads(target: Target, n: u64, multipass: bool) -> u32 {
    let largest = MAX_THREADS.min(1 << n.ilog2());
    match target {
        Target::Cuda if !multipass => largest.min((n.div_ceil(16) as u32).next_power_of_two().max(32)),
        _ => largest,
    }
}

/// The CPU kernel's plan: `batch`, or `split` unless that would leave one
/// chunk per entry; no geometry (the CPU kernel sizes itself).
fn cpu_plan(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target, limits: &DeviceLimits) -> Result<Plan, Unsupported> {
    match attrs.plan {
        None | Some(PlanName::Batch) => Ok(Plan { lowering: Lowering::Cpu, name: PlanName::Batch, kernel: None }),
        Some(PlanName::Split) => {
            // One chunk per entry is the batch plan (a static batch at least the device's parallelism).
            let batch = attrs.batch_of(input).ok().and_then(|d| d.iter().try_fold(1u64, |p, d| d.as_static().and_then(|d| p.checked_mul(d))));
            let one_chunk = batch.is_some_and(|b| split_chunks(b, attrs.segments.div_ceil(2), limits.parallelism, u64::MAX).0 == 1);
            Ok(Plan { lowering: Lowering::Cpu, name: if one_chunk { PlanName::Batch } else { PlanName::Split }, kernel: None })
        }
        Some(plan) => Err(Unsupported::PlanNotOnTarget { plan, target }),
    }
}
/// The lowering of an op on `target` with the limits assumed at compile time:
/// a native kernel where [`plan`] finds one, else a host call.
pub fn lowering_for(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target) -> Result<Lowering, Unsupported> {
    plan(attrs, input, target, &DeviceLimits::assumed(target)).map(|p| p.lowering)
}

/// Which kernel runs a fused log-mel op on `target`: the CPU kernel takes
/// any FFT length; a GPU's takes lengths of factors 2, 3 and 5 up to
/// [`MAX_LOG_MEL_N_FFT`] within the memory the target is assumed to have
/// ([`log_mel_sizes`], [`log_mel_gpu_lowering`]); otherwise why not, and
/// the op is a host call.
pub fn log_mel_lowering(attrs: &LogMelAttrs, input: &TensorType, target: Target) -> Result<Lowering, Unsupported> {
    attrs.lead_of(input).map_err(|e| Unsupported::LogMelOperand(Box::new(e)))?;
    match target {
        Target::Cpu => Ok(Lowering::Cpu),
        target => {
            log_mel_sizes(attrs, input, &DeviceLimits::assumed(target))?;
            log_mel_gpu_lowering(attrs, target)
        }
    }
}

/// The target whose kernel a recorded lowering names (`Host` has none).
pub fn target_of(lowering: Lowering) -> Option<Target> {
    match lowering {
        Lowering::Cpu => Some(Target::Cpu),
        Lowering::Cuda => Some(Target::Cuda),
        Lowering::Spirv => Some(Target::Wgpu),
        Lowering::Msl => Some(Target::Metal),
        Lowering::Host => None,
    }
}

/// `shape` as an f32 tensor type, for runtimes that plan a concrete input.
pub fn f32_type(shape: &[usize]) -> TensorType {
    TensorType::new(&shape.iter().map(|d| *d as u64).collect::<Vec<_>>(), DType::F32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::loop_budget;

    fn rows(n_fft: u64, k: u64, rows: u64) -> (WelchPeaksAttrs, TensorType) {
        (WelchPeaksAttrs::rlx(n_fft, 8, k), TensorType::new(&[rows, n_fft], DType::F32))
    }

    /// CUDA packs a one-segment entry where asked (its default): an even n_fft from 4 on
    /// a one-pass plan, the full length's threads, the half-length FFT's
    /// buffer; never unasked, never with two segments, an odd length, a
    /// multi-pass plan or on another target.
    #[test]
    fn cuda_packs_one_segment_entries_where_asked() {
        let asked = DeviceLimits::assumed(Target::Cuda);
        assert!(asked.packed_segment, "CUDA's default");
        let one = |n: u64, segments: u64| (WelchPeaksAttrs::rlx(n, segments, 4), f32_type(&[6 * segments as usize, n as usize]));
        let kernel = |(a, t): (WelchPeaksAttrs, TensorType), target, limits: &DeviceLimits| plan(&a, &t, target, limits).unwrap().kernel.unwrap();
        let k = kernel(one(1024, 1), Target::Cuda, &asked);
        assert_eq!((k.packed, k.fft_len(1024), k.threads, k.shared_bytes), (true, 512, 64, 8 * cuda_fft_buffer_len(512)));
        assert!(kernel(one(4, 1), Target::Cuda, &asked).packed);
        assert!(!kernel(one(1024, 1), Target::Cuda, &DeviceLimits { packed_segment: false, ..asked }).packed, "not asked");
        assert!(!kernel(one(1024, 2), Target::Cuda, &asked).packed, "two segments");
        assert!(!kernel(one(375, 1), Target::Cuda, &asked).packed, "odd n_fft");
        assert!(!kernel(one(2, 1), Target::Cuda, &asked).packed, "a 1-point FFT");
        assert!(!kernel(one(8192, 1), Target::Cuda, &asked).packed, "multi-pass");
        assert!(!kernel(one(1024, 1), Target::Wgpu, &DeviceLimits { packed_segment: true, ..DeviceLimits::assumed(Target::Wgpu) }).packed, "WGSL");
    }

    /// The CUDA FFT's buffer ends one past the last point's padded slot
    /// (the kernel's `fft_at`, written out here), and the one-pass plan
    /// asks for that much shared memory: 43,088 bytes at n_fft 4096, under
    /// the 48 KiB of a block's static shared memory.
    #[test]
    fn the_cuda_fft_buffer_holds_every_padded_slot() {
        // The kernel's padding, as written there.
        let kernel = include_str!("../../../kernels/fft_mixed_radix.cuh");
        assert!(kernel.contains("return i + 5u * (i >> 4) + (i >> 8);"), "fft_at changed: change cuda_fft_buffer_len with it");
        let fft_at = |i: u64| i + 5 * (i >> 4) + (i >> 8);
        for n in [2, 6, 16, 17, 64, 200, 256, 257, 400, 1000, 4096] {
            assert_eq!(cuda_fft_buffer_len(n), (0..n).map(fft_at).max().unwrap() + 1, "n {n}");
        }
        let attrs = WelchPeaksAttrs::rlx(4096, 2, 4);
        let planned = plan(&attrs, &f32_type(&[2, 4096]), Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
        assert_eq!(planned.kernel.unwrap().shared_bytes, 43_088);
        // A device whose block holds 16 KiB: n_fft 2048's 16,384 unpadded
        // bytes would fit, its padded buffer does not: multi-pass.
        let small = DeviceLimits { max_workgroup_bytes: 16 << 10, ..DeviceLimits::assumed(Target::Cuda) };
        let attrs = WelchPeaksAttrs::rlx(2048, 2, 4);
        let planned = plan(&attrs, &f32_type(&[2, 2048]), Target::Cuda, &small).unwrap();
        assert!(planned.name.is_multipass(), "{}", planned.name);
    }

    #[test]
    fn limits_are_checked_with_a_reason() {
        let cuda = DeviceLimits::assumed(Target::Cuda);
        // Lengths of 2s, 3s and 5s in one pass; a larger prime factor, or a
        // multi-pass plan of a length that is not a power of two, refused.
        let (a, t) = rows(400, 4, 16);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap().fft, FftPasses::OnePass);
        let (a, t) = rows(98, 4, 16);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap_err(), Unsupported::FftFactor { n_fft: 98, factor: 7 });
        assert_eq!(plan(&a, &t, Target::Cpu, &cuda).unwrap().lowering, Lowering::Cpu);
        // Past one pass: the four-step FFT (CUDA's default, WGSL's only
        // form) takes any length of 2s, 3s and 5s; CUDA's radix-2 stages
        // (RLX_OPT_CUDA_FOUR_STEP=0) powers of two, other lengths keeping
        // the four-step FFT there too (a form is never a refusal).
        let wgpu = DeviceLimits::assumed(Target::Wgpu);
        let stages = DeviceLimits { four_step: false, ..cuda };
        let (a, t) = rows(4800, 4, 16);
        for limits in [cuda, stages] {
            assert_eq!(plan(&a, &t, Target::Cuda, &limits).unwrap().kernel.unwrap().fft, FftPasses::FourStep { n1: 64, n2: 75 });
        }
        assert_eq!(plan(&a, &t, Target::Wgpu, &wgpu).unwrap().kernel.unwrap().fft, FftPasses::FourStep { n1: 64, n2: 75 });
        // Turning the four-step FFT off touches no other target: WGSL has no other.
        assert_eq!(plan(&a, &t, Target::Wgpu, &DeviceLimits { four_step: false, ..wgpu }).unwrap().kernel.unwrap().fft, FftPasses::FourStep { n1: 64, n2: 75 });
        let (a, t) = rows(480, 4, 16);
        let forced = WelchPeaksAttrs { plan: Some(PlanName::Multipass), ..a };
        assert_eq!(plan(&forced, &t, Target::Cuda, &stages).unwrap().kernel.unwrap().fft, FftPasses::FourStep { n1: 20, n2: 24 });
        assert_eq!(plan(&forced, &t, Target::Metal, &wgpu).unwrap().kernel.unwrap().fft, FftPasses::FourStep { n1: 20, n2: 24 });
        let (a, t) = rows(512, 4, 16);
        let forced = WelchPeaksAttrs { plan: Some(PlanName::Multipass), ..a };
        assert_eq!(plan(&forced, &t, Target::Cuda, &stages).unwrap().kernel.unwrap().fft, FftPasses::MultiPass);
        let (a, t) = rows(65536, 4, 16);
        let k = plan(&a, &t, Target::Wgpu, &wgpu).unwrap().kernel.unwrap();
        // Two 256-point passes: 64 lanes an FFT, 4 FFTs a workgroup (8 KiB), tables of 2 KiB.
        assert_eq!((k.fft, k.shared_bytes, k.twiddle_table), (FftPasses::FourStep { n1: 256, n2: 256 }, 8 * 1024 + 8 * 256, true));
        let (a, t) = rows(1, 1, 16);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap_err(), Unsupported::FftLength { n_fft: 1 });
        let (a, t) = rows(8192, 4, 16);
        assert_eq!(plan(&a, &t, Target::Cuda, &stages).unwrap().kernel.unwrap().fft, FftPasses::MultiPass);
        assert!(matches!(plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap().fft, FftPasses::FourStep { .. }));
        let (a, t) = rows(131072, 4, 16);
        assert!(plan(&a, &t, Target::Cuda, &cuda).unwrap_err().to_string().contains("at most 65536"));
        let (a, t) = rows(4096, 256, 16);
        let k = plan(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap().kernel.unwrap();
        // 4096 points fill the 32 KiB: no room for the twiddle table; 2048
        // points take it beside the buffer (WGSL; CUDA's is constant memory).
        assert_eq!((k.threads, k.groups, k.shared_bytes, k.fft, k.twiddle_table), (256, 2, 32768, FftPasses::OnePass, false));
        let (a, t) = rows(2048, 8, 16);
        let k = plan(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap().kernel.unwrap();
        assert_eq!((k.shared_bytes, k.twiddle_table), (16 * 2048, true));
        assert!(!plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap().twiddle_table);
        let (a, t) = rows(8, 5, 8);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap().threads, 8);
        // CUDA's one-pass block: one warp up to 512 points, then 16 samples a thread.
        let threads = |n| block_threads(Target::Cuda, n, false);
        assert_eq!([6, 20, 256, 400, 512, 1024, 3000, 4096].map(threads), [4, 16, 32, 32, 32, 64, 256, 256]);
        assert_eq!((block_threads(Target::Cuda, 8192, true), block_threads(Target::Wgpu, 256, false)), (256, 256));
        assert_eq!(plan(&a, &t, Target::Rocm, &cuda).unwrap_err(), Unsupported::NoKernel { target: Target::Rocm });
    }

    /// CUDA's four-step form, its default: every length of 2s, 3s and 5s
    /// from 4 to 65536 has a multi-pass plan in four steps within a block's
    /// 48 KiB, its per-FFT buffers padded as the kernel pads them; 4800,
    /// which the radix-2 stages do not take, among them. 5 (1 · 5: CUDA's
    /// FFT has no 1-point form, and 5 is no power of two) is refused with
    /// the reason.
    #[test]
    fn cuda_four_step_plans_take_every_smooth_length() {
        let cuda = DeviceLimits { four_step: true, ..DeviceLimits::assumed(Target::Cuda) };
        let (a, t) = rows(4800, 4, 16);
        let k = plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap();
        // 16 FFTs of 75 points (16 lanes each) in the larger pass: 16 · 95 padded points.
        assert_eq!((k.fft, k.shared_bytes, k.twiddle_table), (FftPasses::FourStep { n1: 64, n2: 75 }, 8 * 16 * 95, false));
        let forced = |n| (WelchPeaksAttrs { plan: Some(PlanName::Multipass), ..rows(n, 1, 8).0 }, rows(n, 1, 8).1);
        let (a, t) = forced(5);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap_err(), Unsupported::MultiPassFftLength { n_fft: 5 });
        for n in (6..=65536u64).filter(|n| fft_radices(*n).is_ok()).chain([4]) {
            let (forced, t) = forced(n);
            let k = plan(&forced, &t, Target::Cuda, &cuda).unwrap_or_else(|e| panic!("n {n}: {e}")).kernel.unwrap();
            assert!(matches!(k.fft, FftPasses::FourStep { .. }) && k.shared_bytes <= cuda.max_workgroup_bytes, "n {n}: {:?}, {} bytes", k.fft, k.shared_bytes);
        }
    }

    /// The review's case: an op past the 2³¹-value index limit was recorded
    /// as `cuda`, priced as native, then refused by rlx-run.
    #[test]
    fn ops_past_the_index_range_have_no_kernel() {
        let (a, t) = rows(256, 4, 1 << 24);
        let e = lowering_for(&a, &t, Target::Cuda).unwrap_err();
        assert!(matches!(e, Unsupported::IndexRange { what: "the input", .. }), "{e}");
        let (a, t) = rows(256, 4, 1 << 20);
        // 1 GiB of input: within CUDA's index range, past wgpu's default binding.
        assert_eq!(lowering_for(&a, &t, Target::Cuda).unwrap(), Lowering::Cuda);
        assert!(matches!(lowering_for(&a, &t, Target::Wgpu).unwrap_err(), Unsupported::Binding { .. }));
    }

    #[test]
    fn small_workgroup_memory_takes_the_multi_pass_plan() {
        let (a, t) = rows(4096, 4, 16);
        let small = DeviceLimits { max_binding_bytes: 1 << 30, max_workgroup_bytes: 16 * 1024, parallelism: 1, max_loop_iterations: u64::MAX, four_step: true, log_mel_warps: false, packed_segment: false };
        assert_eq!(plan(&a, &t, Target::Wgpu, &small).unwrap().kernel.unwrap().fft, FftPasses::FourStep { n1: 64, n2: 64 });
        let tiny = DeviceLimits { max_binding_bytes: 1 << 30, max_workgroup_bytes: 1024, parallelism: 1, max_loop_iterations: u64::MAX, four_step: true, log_mel_warps: false, packed_segment: false };
        assert!(matches!(plan(&a, &t, Target::Wgpu, &tiny).unwrap_err(), Unsupported::WorkgroupMemory { .. }));
    }

    #[test]
    fn split_plans_cut_pairs_into_even_chunks_within_the_device_limit() {
        assert_eq!(split_chunks(1, 32768, 32, u64::MAX), (32, 1024));
        assert_eq!(split_chunks(3, 10, 7, u64::MAX), (3, 4));
        assert_eq!(split_chunks(1, 5, 100, u64::MAX), (5, 1));
        assert_eq!(split_chunks(1000, 5, 100, u64::MAX), (1, 5));
        assert_eq!(split_chunks(1, 5000, 2, 1024), (5, 1024));
        // An entry longer than a workgroup may take is split even when batch was asked for.
        let (a, _) = rows(256, 4, 1);
        let a = WelchPeaksAttrs { segments: 10000, plan: Some(PlanName::Batch), ..a };
        let t = TensorType::new(&[10000, 256], DType::F32);
        let lavapipe = DeviceLimits { max_loop_iterations: loop_budget::LAVAPIPE_LOOP_ITERATIONS, parallelism: 2, ..DeviceLimits::assumed(Target::Wgpu) };
        let p = plan(&a, &t, Target::Wgpu, &lavapipe).unwrap();
        let k = p.kernel.unwrap();
        // 5,000 pairs of 13 loop iterations each are past lavapipe's usable
        // 61,440: two chunks of 2,500 (of at most 4,725).
        assert_eq!((p.name, k.chunks, k.pairs_per_chunk, k.partials_len), (PlanName::Split, 2, 2500, 2 * 129));
        assert_eq!(plan(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap().name, PlanName::Batch);
        // On the CPU too, a split into one chunk per entry is the batch plan.
        let cpu = DeviceLimits::assumed(Target::Cpu);
        let split = WelchPeaksAttrs { plan: Some(PlanName::Split), ..WelchPeaksAttrs::rlx(256, 8, 4) };
        assert_eq!(plan(&split, &TensorType::new(&[8192 * 8, 256], DType::F32), Target::Cpu, &cpu).unwrap().name, PlanName::Batch);
        assert_eq!(plan(&split, &TensorType::new(&[8, 256], DType::F32), Target::Cpu, &cpu).unwrap().name, PlanName::Split);
    }

    /// The review's cases on lavapipe's budget: a split whose parallelism
    /// asks for more chunks than the last pass can sum takes fewer, longer
    /// ones; one pair whose top-k leaves no room has no plan (not the batch
    /// form past the budget).
    #[test]
    fn splits_keep_every_kernel_within_the_loop_budget() {
        let lavapipe = DeviceLimits { max_loop_iterations: loop_budget::LAVAPIPE_LOOP_ITERATIONS, parallelism: 256, ..DeviceLimits::assumed(Target::Wgpu) };
        let budget = loop_budget::usable(loop_budget::LAVAPIPE_LOOP_ITERATIONS);
        let a = WelchPeaksAttrs { plan: Some(PlanName::SplitMultipass), ..WelchPeaksAttrs::rlx(65536, 200, 400) };
        let t = TensorType::new(&[200, 65536], DType::F32);
        let k = plan(&a, &t, Target::Wgpu, &lavapipe).unwrap().kernel.unwrap();
        let bounds = SplitBounds::of(&a, true, &lavapipe).unwrap();
        assert!(k.chunks >= 2 && k.chunks <= bounds.max_chunks && k.chunks < 100, "{} chunks", k.chunks);
        assert!(bounds.loops.peaks_of_partials(k.chunks) <= budget);
        let a = WelchPeaksAttrs::rlx(4096, 2, 2925);
        let e = plan(&a, &TensorType::new(&[2, 4096], DType::F32), Target::Wgpu, &lavapipe).unwrap_err();
        assert!(matches!(e, Unsupported::LoopBudget { what: "one segment pair with the top-k", .. }), "{e}");
        // Real GPUs have no such budget.
        assert!(plan(&a, &TensorType::new(&[2, 4096], DType::F32), Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).is_ok());
    }

    #[test]
    fn dynamic_inputs_are_planned_without_a_geometry() {
        let a = WelchPeaksAttrs::rlx(256, 8, 4);
        let t = TensorType { dims: [crate::ir::Dim::Dynamic(0), crate::ir::Dim::Static(256)].into_iter().collect(), dtype: DType::F32 };
        assert_eq!(plan(&a, &t, Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap(), Plan { lowering: Lowering::Cuda, name: PlanName::Batch, kernel: None });
    }
}
