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

use super::Target;
use super::loop_budget::{self, KernelLoops};
use crate::fused::{InputLayout, Lowering, PlanName, WelchPeaksAttrs};
use crate::ir::{DType, TensorType};
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
    /// without an error ([`loop_budget`]), so there long entries are split
    /// and a top-k past it has no kernel.
    pub max_loop_iterations: u64,
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
            Target::Cuda | Target::Rocm => DeviceLimits { max_binding_bytes: u64::MAX, max_workgroup_bytes: 48 * 1024, parallelism: 1056, max_loop_iterations: u64::MAX },
            Target::Cpu => DeviceLimits { max_binding_bytes: u64::MAX, max_workgroup_bytes: u64::MAX, parallelism: CPU_TASKS_PER_THREAD * 8, max_loop_iterations: u64::MAX },
            _ => DeviceLimits { max_binding_bytes: 128 << 20, max_workgroup_bytes: 32 * 1024, parallelism: 256, max_loop_iterations: u64::MAX },
        }
    }
}

/// Tasks per CPU thread a split plan aims for.
pub const CPU_TASKS_PER_THREAD: u64 = 4;

/// How a split plan cuts the `pairs` segment pairs of each of `batch`
/// entries: `(chunks, pairs_per_chunk)`, enough chunks that
/// `batch × chunks` reaches `parallelism` and no chunk has more than
/// `max_per_chunk` pairs, no chunk empty, only the last one shorter.
pub fn split_chunks(batch: u64, pairs: u64, parallelism: u64, max_per_chunk: u64) -> (u64, u64) {
    let pairs = pairs.max(1);
    let wanted = parallelism.div_ceil(batch.max(1)).clamp(1, pairs);
    let per_chunk = pairs.div_ceil(wanted).min(max_per_chunk.max(1));
    (pairs.div_ceil(per_chunk), per_chunk)
}

/// What the device's loop budget ([`loop_budget`]) allows the plans of one
/// op: whether one workgroup can take a whole entry, and how a split must
/// cut it so that each of its kernels stays within the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitBounds {
    /// The batch (or multi-pass) form's per-entry kernel fits.
    pub entry_fits: bool,
    /// The most pairs one split work item may take (`partial_psd`, `partial_of`).
    pub max_chunk_pairs: u64,
    /// The most chunks one entry's partial spectra may be summed from
    /// (`peaks_of_partials`).
    pub max_chunks: u64,
    loops: KernelLoops,
    budget: u64,
}

impl SplitBounds {
    /// The bounds of an op with `attrs` on a device with `limits`, or why
    /// no plan of the FFT form (`multipass` or not) fits its loop budget.
    pub fn of(attrs: &WelchPeaksAttrs, multipass: bool, limits: &DeviceLimits) -> Result<SplitBounds, Unsupported> {
        let threads = MAX_THREADS.min(attrs.n_fft.clamp(1, MAX_THREADS as u64) as u32) as u64;
        let loops = KernelLoops { n_fft: attrs.n_fft, threads, bins: attrs.bins(), k: attrs.k };
        let budget = loop_budget::usable(limits.max_loop_iterations);
        let over = |what, iterations| Err(Unsupported::LoopBudget { what, iterations, budget });
        if loops.top_k() > budget {
            return over("the top-k", loops.top_k());
        }
        let pairs = attrs.segments.div_ceil(2);
        let entry_fits = if multipass { loops.multipass_peaks(pairs) } else { loops.one_pass_batch(pairs) } <= budget;
        if budget == u64::MAX {
            return Ok(SplitBounds { entry_fits, max_chunk_pairs: u64::MAX, max_chunks: u64::MAX, loops, budget });
        }
        // A split that cannot leave the batch form must cut an entry in two
        // at least: one pair past the budget has no plan.
        let most_pairs = loops.max_chunk_pairs(multipass, budget);
        let max_chunk_pairs = if entry_fits { most_pairs } else { most_pairs.min(pairs / 2) };
        if max_chunk_pairs == 0 {
            return over("one segment pair with the top-k", if multipass { loops.multipass_peaks(1) } else { loops.one_pass_batch(1) });
        }
        let max_chunks = loops.max_partials(budget);
        if !entry_fits && max_chunks < 2 {
            return over("summing two partial spectra", loops.peaks_of_partials(2));
        }
        Ok(SplitBounds { entry_fits, max_chunk_pairs, max_chunks, loops, budget })
    }

    /// How a split cuts `pairs` pairs of each of `batch` entries for
    /// `parallelism` workers within these bounds: `(chunks, pairs_per_chunk)`
    /// as [`split_chunks`], with fewer, longer chunks where the combining
    /// kernel could not sum so many; an error where no cut fits both.
    pub fn cut(&self, batch: u64, pairs: u64, parallelism: u64) -> Result<(u64, u64), Unsupported> {
        let (chunks, per_chunk) = split_chunks(batch, pairs, parallelism, self.max_chunk_pairs);
        if chunks <= self.max_chunks {
            return Ok((chunks, per_chunk));
        }
        let per_chunk = pairs.max(1).div_ceil(self.max_chunks.max(1));
        let chunks = pairs.max(1).div_ceil(per_chunk);
        match per_chunk <= self.max_chunk_pairs {
            true => Ok((chunks, per_chunk)),
            false => {
                let fewest = pairs.max(1).div_ceil(self.max_chunk_pairs.max(1));
                Err(Unsupported::LoopBudget { what: "summing the partial spectra", iterations: self.loops.peaks_of_partials(fewest), budget: self.budget })
            }
        }
    }
}

/// How a GPU kernel computes the FFT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FftPlan {
    /// One kernel: the FFT in workgroup memory.
    OnePass,
    /// `load`, one `stage` per radix-2 stage, then `peaks_of`, through a
    /// global spectrum buffer (for FFTs longer than workgroup memory holds).
    MultiPass,
}

/// The geometry of a GPU kernel for one input shape: every length a launch
/// binds is fixed here, and runtimes check their buffers against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelPlan {
    /// The named plan this geometry runs (as [`Plan::name`]).
    pub plan: PlanName,
    pub fft: FftPlan,
    pub threads: u32,
    /// Workgroups/blocks of the one-pass and `peaks_of` kernels: one per batch entry.
    pub groups: u64,
    pub shared_bytes: u64,
    /// f32 values of each binding.
    pub input_len: u64,
    /// 1 when the op has no window (a dummy binding of one value).
    pub window_len: u64,
    pub output_len: u64,
    /// Complex values of the multi-pass plan's spectrum buffer (0 for one pass).
    pub spectra_len: u64,
    pub log2n: u32,
    /// Split plans: chunks of segment pairs per batch entry (1 otherwise),
    /// the pairs of each chunk (the last may have fewer), and the f32
    /// values of the partial power spectra (batch × chunks × bins; 0 otherwise).
    pub chunks: u64,
    pub pairs_per_chunk: u64,
    pub partials_len: u64,
    /// Values between batch entries and between segments of one entry.
    pub batch_stride: u64,
    pub segment_stride: u64,
}

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
    pub kernel: Option<KernelPlan>,
}

/// Why no native kernel runs an op: it then runs as a host call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("{target} has no kernel for the fused op")]
    NoKernel { target: Target },
    #[error("the {plan} plan is for GPUs; the CPU runs `batch` or `split`")]
    PlanNotOnTarget { plan: PlanName, target: Target },
    #[error("the GPU kernels need a power-of-two n_fft ≥ 2, not {n_fft} (the CPU kernel takes any length)")]
    FftLength { n_fft: u64 },
    #[error("n_fft {n_fft} is longer than the GPU kernels take (at most {MAX_N_FFT}, multi-pass beyond {MAX_ONE_PASS_N_FFT})")]
    FftTooLong { n_fft: u64 },
    #[error("the operand does not fit the op: {0}")]
    Operand(crate::fused::OperandError),
    #[error("{what} holds {values} values, more than the kernels' 32-bit indexing takes ({MAX_INDEXED_VALUES})")]
    IndexRange { what: &'static str, values: u64 },
    #[error("{what} takes {bytes} bytes, more than one binding covers on this device ({limit})")]
    Binding { what: &'static str, bytes: u64, limit: u64 },
    #[error("the kernel needs {bytes} bytes of workgroup memory, the device offers {limit}")]
    WorkgroupMemory { bytes: u64, limit: u64 },
    #[error("{what} takes {iterations} loop iterations in one kernel invocation, more than this device runs ({budget} usable; lavapipe ends longer loops early)")]
    LoopBudget { what: &'static str, iterations: u64, budget: u64 },
}

/// The plan of the op with `attrs` on an operand of type `input`, on `target`.
pub fn plan(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target, limits: &DeviceLimits) -> Result<Plan, Unsupported> {
    let lowering = match target {
        Target::Cpu => {
            return match attrs.plan {
                None | Some(PlanName::Batch) => Ok(Plan { lowering: Lowering::Cpu, name: PlanName::Batch, kernel: None }),
                Some(PlanName::Split) => {
                    // One chunk per entry is the batch plan (a static batch at least the device's parallelism).
                    let batch = attrs.batch_of(input).ok().and_then(|d| d.iter().try_fold(1u64, |p, d| d.as_static().and_then(|d| p.checked_mul(d))));
                    let one_chunk = batch.is_some_and(|b| split_chunks(b, attrs.segments.div_ceil(2), limits.parallelism, u64::MAX).0 == 1);
                    Ok(Plan { lowering: Lowering::Cpu, name: if one_chunk { PlanName::Batch } else { PlanName::Split }, kernel: None })
                }
                Some(plan) => Err(Unsupported::PlanNotOnTarget { plan, target }),
            };
        }
        Target::Cuda => Lowering::Cuda,
        Target::Wgpu => Lowering::Spirv,
        Target::Metal | Target::Mlx => Lowering::Msl,
        Target::Rocm | Target::Tpu => return Err(Unsupported::NoKernel { target }),
    };
    let n = attrs.n_fft;
    if !n.is_power_of_two() || n < 2 {
        return Err(Unsupported::FftLength { n_fft: n });
    }
    if n > MAX_N_FFT {
        return Err(Unsupported::FftTooLong { n_fft: n });
    }
    let threads = MAX_THREADS.min(n as u32);
    let one_pass_fits = n <= MAX_ONE_PASS_N_FFT && 8 * n <= limits.max_workgroup_bytes;
    let multipass = attrs.plan.is_some_and(PlanName::is_multipass) || !one_pass_fits;
    let bounds = SplitBounds::of(attrs, multipass, limits)?;
    let pairs = attrs.segments.div_ceil(2);
    let split = attrs.plan.is_some_and(PlanName::is_split) || !bounds.entry_fits;
    let name = PlanName::with(split, multipass);
    let fft = if name.is_multipass() { FftPlan::MultiPass } else { FftPlan::OnePass };
    let shared_bytes = match fft {
        FftPlan::OnePass => 8 * n,
        FftPlan::MultiPass => 8 * threads as u64,
    };
    if shared_bytes > limits.max_workgroup_bytes {
        return Err(Unsupported::WorkgroupMemory { bytes: shared_bytes, limit: limits.max_workgroup_bytes });
    }
    let batch = attrs.batch_of(input).map_err(Unsupported::Operand)?;
    let (Some(shape), Some(batch)) = (input.static_dims(), batch.iter().map(|d| d.as_static()).collect::<Option<Vec<u64>>>()) else {
        return Ok(Plan { lowering, name, kernel: None });
    };
    let too_many = |what| Unsupported::IndexRange { what, values: u64::MAX };
    let batch: u64 = batch.iter().try_fold(1u64, |p, d| p.checked_mul(*d)).ok_or(too_many("the batch"))?;
    let input_len = shape.iter().try_fold(1u64, |p, d| p.checked_mul(*d)).ok_or(too_many("the input"))?;
    let spectra_len = match fft {
        FftPlan::OnePass => 0,
        FftPlan::MultiPass => batch.checked_mul(pairs).and_then(|v| v.checked_mul(n)).ok_or(too_many("the spectra"))?,
    };
    let output_len = batch.checked_mul(2 * attrs.k).ok_or(too_many("the output"))?;
    let (chunks, pairs_per_chunk) = match split {
        true => bounds.cut(batch, pairs, limits.parallelism)?,
        false => (1, pairs),
    };
    // One chunk per entry is the batch form, with one pass fewer.
    let (split, name) = if split && chunks == 1 { (false, PlanName::with(false, multipass)) } else { (split, name) };
    let partials_len = match split {
        true => batch.checked_mul(chunks).and_then(|v| v.checked_mul(attrs.bins())).ok_or(too_many("the partial spectra"))?,
        false => 0,
    };
    let frame_len = attrs.frame_len;
    let (batch_stride, segment_stride) = match attrs.input_layout {
        InputLayout::Rows => (attrs.segments.checked_mul(frame_len).ok_or(too_many("a batch entry"))?, frame_len),
        InputLayout::Frames => (frame_len, batch.checked_mul(frame_len).ok_or(too_many("a frame"))?),
        InputLayout::Signal => (*shape.last().unwrap_or(&0), attrs.hop.unwrap_or(0)),
    };
    // One segment has no second one to step to: its stride is never used,
    // and a huge unused hop (2^63, which the CPU runs) must not make the
    // stride check below refuse the op. The kernels only read segment s + 1
    // when s + 1 < SEGMENTS.
    let segment_stride = if attrs.segments == 1 { 0 } else { segment_stride };
    let window_len = if attrs.window { frame_len } else { 1 };
    for (what, values, bytes_per_value) in
        [("the input", input_len, 4), ("the window", window_len, 4), ("the output", output_len, 4), ("the spectra", spectra_len, 8), ("the partial spectra", partials_len, 4)]
    {
        if values > MAX_INDEXED_VALUES {
            return Err(Unsupported::IndexRange { what, values });
        }
        let bytes = values * bytes_per_value;
        if bytes > limits.max_binding_bytes {
            return Err(Unsupported::Binding { what, bytes, limit: limits.max_binding_bytes });
        }
    }
    if batch_stride.max(segment_stride) > MAX_INDEXED_VALUES {
        return Err(Unsupported::IndexRange { what: "a stride", values: batch_stride.max(segment_stride) });
    }
    let kernel = KernelPlan {
        plan: name,
        fft,
        threads,
        groups: batch,
        shared_bytes,
        input_len,
        window_len,
        output_len,
        spectra_len,
        log2n: n.trailing_zeros(),
        chunks,
        pairs_per_chunk,
        partials_len,
        batch_stride,
        segment_stride,
    };
    Ok(Plan { lowering, name, kernel: Some(kernel) })
}

/// The lowering of an op on `target` with the limits assumed at compile time:
/// a native kernel where [`plan`] finds one, else a host call.
pub fn lowering_for(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target) -> Result<Lowering, Unsupported> {
    plan(attrs, input, target, &DeviceLimits::assumed(target)).map(|p| p.lowering)
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

    fn rows(n_fft: u64, k: u64, rows: u64) -> (WelchPeaksAttrs, TensorType) {
        (WelchPeaksAttrs::rlx(n_fft, 8, k), TensorType::new(&[rows, n_fft], DType::F32))
    }

    #[test]
    fn limits_are_checked_with_a_reason() {
        let cuda = DeviceLimits::assumed(Target::Cuda);
        let (a, t) = rows(100, 4, 16);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap_err(), Unsupported::FftLength { n_fft: 100 });
        assert_eq!(plan(&a, &t, Target::Cpu, &cuda).unwrap().lowering, Lowering::Cpu);
        let (a, t) = rows(8192, 4, 16);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap().fft, FftPlan::MultiPass);
        let (a, t) = rows(131072, 4, 16);
        assert!(plan(&a, &t, Target::Cuda, &cuda).unwrap_err().to_string().contains("at most 65536"));
        let (a, t) = rows(4096, 256, 16);
        let k = plan(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap().kernel.unwrap();
        assert_eq!((k.threads, k.groups, k.shared_bytes, k.fft), (256, 2, 32768, FftPlan::OnePass));
        let (a, t) = rows(8, 5, 8);
        assert_eq!(plan(&a, &t, Target::Cuda, &cuda).unwrap().kernel.unwrap().threads, 8);
        assert_eq!(plan(&a, &t, Target::Rocm, &cuda).unwrap_err(), Unsupported::NoKernel { target: Target::Rocm });
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
        let small = DeviceLimits { max_binding_bytes: 1 << 30, max_workgroup_bytes: 16 * 1024, parallelism: 1, max_loop_iterations: u64::MAX };
        assert_eq!(plan(&a, &t, Target::Wgpu, &small).unwrap().kernel.unwrap().fft, FftPlan::MultiPass);
        let tiny = DeviceLimits { max_binding_bytes: 1 << 30, max_workgroup_bytes: 1024, parallelism: 1, max_loop_iterations: u64::MAX };
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
        let a = WelchPeaksAttrs { segments: 5000, plan: Some(PlanName::Batch), ..a };
        let t = TensorType::new(&[5000, 256], DType::F32);
        let lavapipe = DeviceLimits { max_loop_iterations: loop_budget::LAVAPIPE_LOOP_ITERATIONS, parallelism: 2, ..DeviceLimits::assumed(Target::Wgpu) };
        let p = plan(&a, &t, Target::Wgpu, &lavapipe).unwrap();
        let k = p.kernel.unwrap();
        // 2,500 pairs of 31 loop iterations each are past lavapipe's usable
        // 61,440: two chunks of 1,250 (of at most 1,981).
        assert_eq!((p.name, k.chunks, k.pairs_per_chunk, k.partials_len), (PlanName::Split, 2, 1250, 2 * 129));
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
        let a = WelchPeaksAttrs::rlx(4096, 2, 2920);
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
