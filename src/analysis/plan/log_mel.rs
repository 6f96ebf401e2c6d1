//! The GPU plan of the fused log-mel op (`rlx_opt.log_mel`): whether a GPU
//! kernel takes it on a target, and with what FFT and workgroup. What the
//! `fuse-log-mel` pass asks ([`log_mel_gpu_lowering`], for
//! `super::log_mel_lowering`) and what the lowering
//! (`lower::log_mel`) and the GPU runtimes specialise from ([`log_mel_plan`]).
//!
//! The kernels (`kernels/log_mel.wgsl`, `kernels/log_mel.cu`) give each
//! frame a workgroup and a transform of its own, in workgroup memory, with
//! the mixed-radix FFT shared by both fused ops (`kernels/fft_mixed_radix.*`):
//! an even n_fft packs the frame's real samples into a complex FFT of half
//! its length (even samples the real parts, odd ones the imaginary parts)
//! and splits the result; an odd n_fft takes a complex FFT of its full
//! length. Frames never share a transform: the output is a log, and a loud
//! frame's rounding would show in a quiet neighbour's spectrum. Any length
//! whose prime factors are 2, 3 and 5 (400, 160, 1000, 375, …); a length with
//! a larger prime factor has no GPU kernel: the op then runs on the host.

use super::{DeviceLimits, MAX_INDEXED_VALUES, Unsupported};
use crate::analysis::Target;
use crate::fused::{LogMelAttrs, Lowering};

/// The longest FFT the log-mel kernels take (in workgroup memory).
pub const MAX_LOG_MEL_N_FFT: u64 = 4096;

/// Threads of the `mel_bands` launch's workgroups (one thread per filter).
pub const LOG_MEL_BANDS_THREADS: u32 = 64;

/// Threads that take one frame in CUDA's warp form: a warp.
pub const LOG_MEL_WARP_LANES: u32 = 32;

/// Warps (frames) of one block in CUDA's warp form, at most: 256 threads.
pub const LOG_MEL_MAX_WARPS: u32 = 8;

/// The longest complex FFT CUDA's warp form takes (n_fft 2048): a warp's
/// 32 lanes then run 8 to 16 butterflies each a stage; longer ones keep
/// the block form.
pub const LOG_MEL_MAX_WARP_FFT: u64 = 1024;

/// Frames the CPU kernel transforms and reduces together, one per SIMD
/// lane (`runtime::log_mel`): a worker's item, and the least it computes.
pub const CPU_FRAMES_PER_GROUP: u64 = 8;

/// The radices of the mixed-radix FFT of length `n`, in the order its
/// stages run: 4s first, then a 2, then 3s and 5s (400 → 4·4·5·5, 160 →
/// 4·4·2·5, 1000 → 4·2·5·5·5). A length with a prime factor above 5 has
/// none: the error names the factor.
pub fn fft_radices(n: u64) -> Result<Vec<u32>, Unsupported> {
    if n < 2 {
        return Err(Unsupported::FftFactor { n_fft: n, factor: n });
    }
    let mut rest = n;
    let mut count = |p: u64| {
        let mut k = 0;
        while rest.is_multiple_of(p) {
            rest /= p;
            k += 1;
        }
        k
    };
    let (twos, threes, fives) = (count(2), count(3), count(5));
    if rest != 1 {
        return Err(Unsupported::FftFactor { n_fft: n, factor: factor_above_5(rest) });
    }
    let mut radices = vec![4; twos / 2];
    radices.extend(std::iter::repeat_n(2, twos % 2));
    radices.extend(std::iter::repeat_n(3, threes));
    radices.extend(std::iter::repeat_n(5, fives));
    Ok(radices)
}

/// Odd candidates [`factor_above_5`] divides by at most: its cost is
/// bounded whatever the length (a search up to the factor itself ran for
/// hours on a prime near 2^61: fuzzing found it).
const FACTOR_SEARCH_BOUND: u64 = 1 << 17;

/// The smallest prime factor of `rest`, every factor of which is above 5:
/// trial division by odd numbers up to √rest (past it, `rest` is prime),
/// up to [`FACTOR_SEARCH_BOUND`]. A `rest` whose every factor is beyond
/// that (only past 2^34, far beyond any FFT length a kernel takes) is
/// named whole: then it holds the prime factors, not one of them.
fn factor_above_5(rest: u64) -> u64 {
    (7..FACTOR_SEARCH_BOUND).step_by(2).take_while(|p| p * p <= rest).find(|p| rest.is_multiple_of(*p)).unwrap_or(rest)
}

/// The GPU kernel of one log-mel op on a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMelPlan {
    pub lowering: Lowering,
    /// The FFT's stages ([`fft_radices`] of [`Self::fft_len`]).
    pub radices: Vec<u32>,
    /// Whether a frame is packed into a complex FFT of half its length
    /// (even n_fft) or transformed at its full length (odd).
    pub packed: bool,
    /// The complex FFT's length: n_fft / 2 when packed, else n_fft.
    pub fft_len: u64,
    /// Threads of the `log_mel` workgroup.
    pub threads: u32,
    /// CUDA's warp form ([`DeviceLimits::log_mel_warps`]): a warp of
    /// [`LOG_MEL_WARP_LANES`] threads per frame, no block-wide barrier.
    pub warps: bool,
    /// Frames one `log_mel` workgroup takes: 1 (a workgroup per frame), or
    /// in the warp form one per warp, as many as fit the block's shared
    /// memory, up to [`LOG_MEL_MAX_WARPS`].
    pub frames_per_group: u32,
    /// Workgroup memory of the `log_mel` workgroup: per frame, the FFT
    /// (8·fft_len bytes; CUDA's padded, 8·`cuda_fft_buffer_len`), the
    /// frame's power (4·bins) and mel values (4·n_mels); the block form's
    /// floor (4); WGSL's twiddle table where it fits (8·fft_len).
    pub shared_bytes: u64,
    /// WGSL: the FFT's stage twiddles from a table in workgroup memory
    /// ([`super::wgsl_twiddle_table`]).
    pub twiddle_table: bool,
}

/// Whether a GPU kernel takes the op with `attrs` on `target`, and how,
/// with the device's `limits` (the shape-independent part: the FFT length,
/// workgroup memory, loop budget; `lower::log_mel` checks the operands'
/// sizes once the shape is known).
pub fn log_mel_plan(attrs: &LogMelAttrs, target: Target, limits: &DeviceLimits) -> Result<LogMelPlan, Unsupported> {
    let lowering = match target {
        Target::Cuda => Lowering::Cuda,
        Target::Wgpu => Lowering::Spirv,
        Target::Metal | Target::Mlx => Lowering::Msl,
        Target::Cpu | Target::Rocm | Target::Tpu => return Err(Unsupported::NoKernel { target }),
    };
    let n_fft = attrs.n_fft;
    // Checked on n_fft itself, so that the error names the op's length (an
    // even n_fft of 2s, 3s and 5s has a half of them too, except 2 → 1).
    fft_radices(n_fft)?;
    if n_fft > MAX_LOG_MEL_N_FFT {
        return Err(Unsupported::LogMelFftTooLong { n_fft });
    }
    let packed = n_fft.is_multiple_of(2) && n_fft >= 4;
    let n = if packed { n_fft / 2 } else { n_fft };
    let radices = fft_radices(n)?;
    let (bins, mels) = (attrs.bins(), attrs.n_mels);
    // CUDA's FFT buffer is padded (super::cuda_fft_buffer_len).
    let buffer = if target == Target::Cuda { super::cuda_fft_buffer_len(n) } else { n };
    let without_table = 8 * buffer + 4 * bins + 4 * mels + 4;
    let twiddle_table = super::wgsl_twiddle_table(target, n, without_table, limits);
    let shared_bytes = without_table + if twiddle_table { super::twiddle_table_bytes(n) } else { 0 };
    if shared_bytes > limits.max_workgroup_bytes {
        return Err(Unsupported::WorkgroupMemory { bytes: shared_bytes, limit: limits.max_workgroup_bytes });
    }
    let warps = target == Target::Cuda && limits.log_mel_warps && n <= LOG_MEL_MAX_WARP_FFT;
    let (threads, frames_per_group, shared_bytes) = if warps {
        // As many frames as the block's shared memory holds (a frame's FFT, power and mel values; the floor is a shuffle's).
        let per_frame = without_table - 4;
        let frames = (1..=LOG_MEL_MAX_WARPS).rev().find(|f| *f as u64 * per_frame <= limits.max_workgroup_bytes).unwrap_or(1);
        (LOG_MEL_WARP_LANES * frames, frames, frames as u64 * per_frame)
    } else {
        // By the complex FFT's length: Whisper's 200 points (n_fft 400) ran
        // no faster on lavapipe with 128 threads than with 64.
        (if n <= 256 { 64 } else { 128 }, 1, shared_bytes)
    };
    if mels.saturating_mul(bins) > MAX_INDEXED_VALUES {
        return Err(Unsupported::IndexRange { what: "the filters", values: mels.saturating_mul(bins) });
    }
    // One invocation's loops (n: the complex FFT's length): the twiddle table's fill, the load, each FFT stage, the power, its
    // filters' bands (a band spans at most every bin), thread 0's maximum.
    let t = (threads / frames_per_group) as u64;
    let fft: u64 = radices.iter().map(|r| (n / *r as u64).div_ceil(t)).sum();
    let table = if twiddle_table { n.div_ceil(t) } else { 0 };
    let iterations = table + n.div_ceil(t) + fft + bins.div_ceil(t) + mels.div_ceil(t) * (bins + 1) + 2 * mels;
    if iterations > limits.max_loop_iterations {
        return Err(Unsupported::LoopBudget { what: "one frame's log-mel", iterations, budget: limits.max_loop_iterations });
    }
    Ok(LogMelPlan { lowering, radices, packed, fft_len: n, threads, warps, frames_per_group, shared_bytes, twiddle_table })
}

/// The operands' sizes for an input of type `input` against the kernels'
/// 32-bit indexing and the device's binding limit (`lower::log_mel::specialize`
/// checks them before every run; a pass may ask at compile time). An input
/// with dynamic dims passes: it is checked when it runs.
pub fn log_mel_sizes(attrs: &LogMelAttrs, input: &crate::ir::TensorType, limits: &DeviceLimits) -> Result<(), Unsupported> {
    let lead = attrs.lead_of(input).map_err(|e| Unsupported::LogMelOperand(Box::new(e)))?;
    let (Some(dims), Some(lead)) = (input.static_dims(), lead.iter().map(|d| d.as_static()).collect::<Option<Vec<u64>>>()) else { return Ok(()) };
    let product = |values: &[u64]| values.iter().try_fold(1u64, |p, v| p.checked_mul(*v)).unwrap_or(u64::MAX);
    let rows = product(&lead);
    let sizes = [("the input", product(&dims)), ("the result", rows.saturating_mul(attrs.n_mels)), ("the filters", attrs.n_mels.saturating_mul(attrs.bins()))];
    for (what, values) in sizes {
        if values > MAX_INDEXED_VALUES {
            return Err(Unsupported::IndexRange { what, values });
        }
        if values.saturating_mul(4) > limits.max_binding_bytes {
            return Err(Unsupported::Binding { what, bytes: values.saturating_mul(4), limit: limits.max_binding_bytes });
        }
    }
    Ok(())
}

/// The lowering the `fuse-log-mel` pass records for an op on `target`: the
/// target's GPU kernel when one takes it (with the limits every device of
/// the target is assumed to have), `Cpu` on the CPU; otherwise why not (the
/// op then runs as a host call, `lowering: host`, and the fusion report
/// says the reason: "not fused on the GPU: …").
pub fn log_mel_gpu_lowering(attrs: &LogMelAttrs, target: Target) -> Result<Lowering, Unsupported> {
    match target {
        Target::Cpu => Ok(Lowering::Cpu),
        _ => log_mel_plan(attrs, target, &DeviceLimits::assumed(target)).map(|p| p.lowering),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_of_2_3_5_have_radices_in_stage_order() {
        assert_eq!(fft_radices(400).unwrap(), [4, 4, 5, 5]);
        assert_eq!(fft_radices(160).unwrap(), [4, 4, 2, 5]);
        assert_eq!(fft_radices(1000).unwrap(), [4, 2, 5, 5, 5]);
        assert_eq!(fft_radices(1200).unwrap(), [4, 4, 3, 5, 5]);
        assert_eq!(fft_radices(2).unwrap(), [2]);
        assert_eq!(fft_radices(512).unwrap(), [4, 4, 4, 4, 2]);
        for n in [64u64, 128, 160, 256, 320, 400, 480, 512, 640, 1000, 1024, 1200] {
            assert_eq!(fft_radices(n).unwrap().iter().map(|r| *r as u64).product::<u64>(), n);
        }
    }

    #[test]
    fn a_prime_factor_above_5_is_named() {
        let e = fft_radices(98).unwrap_err();
        assert_eq!(e, Unsupported::FftFactor { n_fft: 98, factor: 7 });
        assert!(e.to_string().contains("prime factor above 5 (7)"), "{e}");
        assert_eq!(fft_radices(202).unwrap_err(), Unsupported::FftFactor { n_fft: 202, factor: 101 });
        assert_eq!(fft_radices(11 * 13).unwrap_err(), Unsupported::FftFactor { n_fft: 143, factor: 11 });
        // Primes, squares of primes and their products past the search's
        // bound, up to u64's largest prime: named at once (fuzzing found
        // the search running for hours on a prime near 2^61).
        let p = 131_071; // 2^17 − 1, a prime
        for (n, factor) in [(p, p), (4 * p * p, p), (2 * 7 * p, 7), ((1 << 61) - 1, (1 << 61) - 1), (u64::MAX - 58, u64::MAX - 58), (5 * 524_287 * 2_147_483_647, 524_287 * 2_147_483_647)] {
            assert_eq!(fft_radices(n).unwrap_err(), Unsupported::FftFactor { n_fft: n, factor }, "n {n}");
        }
    }

    #[test]
    fn the_pass_gets_a_lowering_or_the_reason() {
        let whisper = LogMelAttrs::frames(400, 80);
        assert_eq!(log_mel_gpu_lowering(&whisper, Target::Wgpu), Ok(Lowering::Spirv));
        assert_eq!(log_mel_gpu_lowering(&whisper, Target::Cuda), Ok(Lowering::Cuda));
        assert_eq!(log_mel_gpu_lowering(&whisper, Target::Metal), Ok(Lowering::Msl));
        assert_eq!(log_mel_gpu_lowering(&whisper, Target::Cpu), Ok(Lowering::Cpu));
        assert_eq!(log_mel_gpu_lowering(&whisper, Target::Rocm), Err(Unsupported::NoKernel { target: Target::Rocm }));
        let odd = LogMelAttrs::frames(98, 10);
        assert!(matches!(log_mel_gpu_lowering(&odd, Target::Wgpu), Err(Unsupported::FftFactor { factor: 7, .. })));
        assert_eq!(log_mel_gpu_lowering(&odd, Target::Cpu), Ok(Lowering::Cpu));
        let long = LogMelAttrs::frames(8192, 80);
        assert_eq!(log_mel_gpu_lowering(&long, Target::Cuda), Err(Unsupported::LogMelFftTooLong { n_fft: 8192 }));
        // Odd lengths take a full-length complex FFT.
        let odd = LogMelAttrs::frames(375, 40);
        let plan = log_mel_plan(&odd, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap();
        assert_eq!((plan.packed, plan.fft_len, plan.radices.clone()), (false, 375, vec![3, 5, 5, 5]));
        let plan = log_mel_plan(&whisper, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap();
        // The FFT, the power, the mels, the floor, and WGSL's twiddle table.
        assert_eq!((plan.packed, plan.fft_len, plan.threads, plan.shared_bytes, plan.twiddle_table), (true, 200, 64, 8 * 200 + 4 * 201 + 4 * 80 + 4 + 8 * 200, true));
        let cuda = log_mel_plan(&whisper, Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
        assert!(!cuda.twiddle_table, "CUDA's table is in constant memory");
        // No room for the table beside the rest: the twiddles are computed.
        let tight = DeviceLimits { max_workgroup_bytes: 8 * 200 + 4 * 201 + 4 * 80 + 4, ..DeviceLimits::assumed(Target::Wgpu) };
        let plan = log_mel_plan(&whisper, Target::Wgpu, &tight).unwrap();
        assert_eq!((plan.shared_bytes, plan.twiddle_table), (8 * 200 + 4 * 201 + 4 * 80 + 4, false));
        // 4096 points and 3000 mels: 36 KiB of workgroup memory, more than a
        // wgpu device is assumed to offer (32 KiB), less than CUDA's 48 KiB.
        let big = LogMelAttrs::frames(4096, 3000);
        assert!(matches!(log_mel_gpu_lowering(&big, Target::Wgpu), Err(Unsupported::WorkgroupMemory { .. })));
        assert_eq!(log_mel_gpu_lowering(&big, Target::Cuda), Ok(Lowering::Cuda));
    }

    /// CUDA's warp form (the default) only where on, only on CUDA, only up
    /// to 1,024 points: as many frames (warps) a block as its shared
    /// memory holds.
    #[test]
    fn the_warp_form_is_cudas_where_on_with_frames_by_shared_memory() {
        let whisper = LogMelAttrs::frames(400, 80);
        let off = DeviceLimits { log_mel_warps: false, ..DeviceLimits::assumed(Target::Cuda) };
        let block = log_mel_plan(&whisper, Target::Cuda, &off).unwrap();
        assert_eq!((block.warps, block.threads, block.frames_per_group), (false, 64, 1));
        let asked = DeviceLimits::assumed(Target::Cuda);
        assert!(asked.log_mel_warps, "CUDA's default");
        let warps = log_mel_plan(&whisper, Target::Cuda, &asked).unwrap();
        // Per frame: the padded FFT buffer (260 float2), the power, the mel values.
        let per_frame = 8 * 260 + 4 * 201 + 4 * 80;
        assert_eq!(crate::analysis::plan::cuda_fft_buffer_len(200), 260);
        assert_eq!((warps.warps, warps.threads, warps.frames_per_group, warps.shared_bytes), (true, 256, 8, 8 * per_frame));
        // 48 KiB hold 3 frames of 2,048 points' halves (n_fft 2048: 1,024 points, 1,025 bins).
        let long = log_mel_plan(&LogMelAttrs::frames(2048, 128), Target::Cuda, &asked).unwrap();
        let per_frame = 8 * crate::analysis::plan::cuda_fft_buffer_len(1024) + 4 * 1025 + 4 * 128;
        assert_eq!((long.threads, long.frames_per_group, long.shared_bytes), (96, 3, 3 * per_frame));
        assert!(long.shared_bytes <= asked.max_workgroup_bytes);
        // Longer FFTs, and other targets, keep a workgroup per frame.
        let longest = log_mel_plan(&LogMelAttrs::frames(4096, 80), Target::Cuda, &asked).unwrap();
        assert_eq!((longest.warps, longest.frames_per_group), (false, 1));
        let wgpu = DeviceLimits { log_mel_warps: true, ..DeviceLimits::assumed(Target::Wgpu) };
        let plan = log_mel_plan(&whisper, Target::Wgpu, &wgpu).unwrap();
        assert_eq!((plan.warps, plan.frames_per_group), (false, 1));
    }

    #[test]
    fn operand_sizes_are_checked_against_indexing_and_bindings() {
        use crate::ir::{DType, TensorType};
        let whisper = LogMelAttrs::frames(400, 80);
        let wgpu = DeviceLimits::assumed(Target::Wgpu);
        assert_eq!(log_mel_sizes(&whisper, &TensorType::new(&[3000, 400], DType::F32), &wgpu), Ok(()));
        // 128 MiB of frames is past wgpu's assumed binding limit; CUDA has none but the index range.
        let long = TensorType::new(&[90_000, 400], DType::F32);
        assert!(matches!(log_mel_sizes(&whisper, &long, &wgpu), Err(Unsupported::Binding { what: "the input", .. })));
        assert_eq!(log_mel_sizes(&whisper, &long, &DeviceLimits::assumed(Target::Cuda)), Ok(()));
        let huge = TensorType::new(&[6_000_000, 400], DType::F32);
        assert!(matches!(log_mel_sizes(&whisper, &huge, &DeviceLimits::assumed(Target::Cuda)), Err(Unsupported::IndexRange { what: "the input", .. })));
        assert!(matches!(log_mel_sizes(&whisper, &TensorType::new(&[3, 512], DType::F32), &wgpu), Err(Unsupported::LogMelOperand(_))));
    }
}
