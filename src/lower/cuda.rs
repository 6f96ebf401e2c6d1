//! The CUDA kernel: specialised with entry points for its operands'
//! bindings (arguments of their own, or RLX's arena), and with the `cuda`
//! feature through NVRTC (loaded at run time by cudarc): compiled for a real
//! architecture so that ptxas also runs and catches register and
//! shared-memory overuse.

use super::{Bindings, FftPasses, KernelEntry, LowerError, Specialization, fill};
use crate::opt_in::CudaForm;

pub const TEMPLATE: &str = include_str!("../../kernels/welch_peaks.cu");
/// The multi-pass plans: radix-2 stage launches, or the four-step FFT
/// (where the plan asks for it: `DeviceLimits::four_step`).
pub const MULTIPASS_TEMPLATE: &str = include_str!("../../kernels/welch_peaks_multipass.cu");
pub const FOUR_STEP_TEMPLATE: &str = include_str!("../../kernels/welch_peaks_four_step.cu");
/// Both multi-pass templates' last passes, pasted in for `{{MULTIPASS_POWER}}`.
pub const MULTIPASS_POWER: &str = include_str!("../../kernels/welch_peaks_multipass_power.cuh");
/// Constants and helpers both templates paste in for `{{COMMON}}`.
pub const COMMON: &str = include_str!("../../kernels/welch_peaks_common.cuh");
/// Entry points with an argument per operand, and in RLX's signature.
pub const ENTRIES: &str = include_str!("../../kernels/welch_peaks_entries.cuh");
pub const ENTRIES_RLX: &str = include_str!("../../kernels/welch_peaks_entries_rlx.cuh");
/// RLX's custom-kernel signature (`RLX_CUSTOM_ARGS`), before either fused
/// op's RLX entry points.
pub const RLX_CUSTOM_ARGS: &str = include_str!("../../kernels/rlx_custom_args.cuh");
/// The one-pass batch plan's entry point (every entry: [`KernelEntry`]).
pub const ENTRY: &str = KernelEntry::WelchPeaks.name();
/// The entry point RLX launches for a launch of [`super::launches`]
/// (`welch_peaks`, `load`, `stage` with the stage in extra e0, `columns`,
/// `rows`, `partial_psd`, ...): every one has a twin in rlx-cuda's fixed custom-kernel signature,
/// `rlx_` and its name (`welch_peaks_entries_rlx.cuh`).
pub fn rlx_entry(entry: KernelEntry) -> String {
    format!("rlx_{}", entry.name())
}

/// The CUDA source of the specialisation's plan, with arguments per operand.
pub fn source(spec: &Specialization) -> Result<String, LowerError> {
    source_with(spec, Bindings::Buffers)
}

/// The CUDA source of the specialisation's plan for operands bound as
/// `bindings` (in RLX's arena the stage is a kernel argument, extra e0),
/// in the source forms this process uses ([`SourceForms::in_use`]).
pub fn source_with(spec: &Specialization, bindings: Bindings) -> Result<String, LowerError> {
    source_for(spec, bindings, SourceForms::in_use())
}

/// The alternative forms that change the CUDA source but not the plan (its
/// launches, buffers and shared memory stay the same): each on or off by
/// default as a GPU session measured it against the form it replaces, and
/// its variable overrides that ([`crate::opt_in`]). `SourceForms::default()`
/// is every form off: the kernels as first written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceForms {
    /// The one-pass entries' launch bounds ask for the most blocks an SM
    /// that compile without a spill ([`occupancy_bounds`];
    /// `RLX_OPT_CUDA_OCCUPANCY=1`; off: 0.90× on the H200's goal cell).
    pub occupancy: bool,
    /// The one-pass batch kernel's top-k, in blocks of several warps, by warps
    /// (`RLX_OPT_CUDA_WARP_TOPK=1`; off: 0.69–0.97× on the H200): each warp takes its lanes' k largest
    /// keys in k rounds of warp reductions with no block barrier, then one
    /// barrier, then one warp merges the warps' lists; where the block's
    /// lists fit in the FFT's shared memory (warps · k keys), else today's
    /// k rounds of a block-wide maximum (two barriers a round).
    pub warp_topk: bool,
    /// The one-pass kernels' FFT runs its first pass on each thread's
    /// samples as loaded, in registers (on; `RLX_OPT_CUDA_LOAD_PASS=0`
    /// turns it off: 1.02–1.10× on the H200), where
    /// they hold whole butterflies of it (`LOAD_PASS` in
    /// kernels/welch_peaks.cu: the powers of two from 128 to 4096 points,
    /// not 64 or 400): the samples are not stored for the FFT to read back, one
    /// round trip through shared memory and one barrier fewer a pair.
    pub load_pass: bool,
    /// The one-pass kernels' FFT in the registers of a one-warp block
    /// (on; `RLX_OPT_CUDA_REGISTER_FFT=0` turns it off: up to 1.41× on the
    /// H200), where [`register_fft_fits`]: each
    /// lane takes the DFT of its own P = n_fft/32 points, then the lanes'
    /// 32-point DFTs run as five radix-2 stages of shuffles
    /// (`fft_warp_run` in kernels/fft_mixed_radix.cuh), and each bin's
    /// mirror comes from its lane by a shuffle: no shared memory and no
    /// barrier a pair, where the shared-memory FFT takes a round trip and
    /// a barrier a pass. The bins' powers reach the top-k's layout through
    /// shared memory once an entry. It takes the load pass's place.
    pub register_fft: bool,
}

impl SourceForms {
    /// The forms this process uses: each form's default, or what its
    /// variable says.
    pub fn in_use() -> SourceForms {
        SourceForms {
            occupancy: CudaForm::Occupancy.in_use(),
            warp_topk: CudaForm::WarpTopK.in_use(),
            load_pass: CudaForm::LoadPass.in_use(),
            register_fft: CudaForm::RegisterFft.in_use(),
        }
    }

    /// Whether these forms run the register FFT in the kernel of `spec`:
    /// asked, where it fits ([`register_fft_fits`]), and, where the load
    /// pass would take the kernel instead, on a grid of at most
    /// [`REGISTER_FFT_MOST_BLOCKS`] blocks.
    pub fn register_fft_in(&self, spec: &Specialization) -> bool {
        let load_pass_instead = self.load_pass && load_pass_fits(spec);
        self.register_fft && register_fft_fits(spec) && !(load_pass_instead && blocks(spec) > REGISTER_FFT_MOST_BLOCKS)
    }

    /// Whether these forms run the load pass in the kernel of `spec`:
    /// asked, where it fits ([`load_pass_fits`]) and the register FFT,
    /// which has no shared-memory first pass, does not take its place.
    pub fn load_pass_in(&self, spec: &Specialization) -> bool {
        self.load_pass && !self.register_fft_in(spec) && load_pass_fits(spec)
    }
}

/// The most blocks a one-pass grid has for the register FFT to take a
/// kernel the load pass also fits (128 and 256 points). On an H200 (both
/// full roofline grids, stop 53) the register FFT is the faster where the
/// grid is short of filling the GPU (up to 1,024 blocks: 1.00–1.40×, as
/// 1.09–1.11× at 1024 × 64 × 256) and the slower past it, where the
/// kernel is bound by throughput rather than latency (8192 × 8 × 256:
/// 0.92–0.95×, the goal cell 50.5 µs against the load pass's 48.0; the
/// split plans of 1,088 blocks and more: 0.91–0.99×). Lengths the load
/// pass does not fit (64, 96, 160, 192) take the register FFT on any grid
/// (64 points: 0.99–1.52×). A fixed count, measured on the H200's 132
/// SMs: a GPU of fewer SMs is full sooner, and there the load pass may
/// pay from fewer blocks on (its next GPU session can say).
pub const REGISTER_FFT_MOST_BLOCKS: u64 = 1024;

/// The blocks of the one-pass kernel of `spec`, as its launch list has
/// them (a block an entry, or an entry's chunks in a split plan).
fn blocks(spec: &Specialization) -> u64 {
    super::launches(&spec.kernel).first().map_or(0, |l| l.groups)
}

/// Whether the one-pass kernel of `spec` loads the next pair's samples
/// (a packed segment's points) into registers while this pair's FFT runs
/// (`PREFETCH` in kernels/welch_peaks.cu): up to 8 points a thread, or 16
/// for power-of-two FFTs (the lengths measured on the H200); other lengths
/// store each pair straight into shared memory when its FFT starts. The
/// rule was made while ptxas spilled at n_fft 400, 1000 and 3000; the
/// spills were the launch bounds' doing (the entries now take (WG, 1)),
/// and prefetching every length is not yet measured.
pub fn prefetches(spec: &Specialization) -> bool {
    let n = spec.fft_len();
    n.div_ceil(u64::from(spec.kernel.threads.max(1))) <= 8 || n.is_power_of_two()
}

/// Whether the load pass ([`SourceForms::load_pass`]) fits the one-pass
/// kernel of `spec`: each thread prefetches the next pair's samples
/// ([`prefetches`]), the FFT's N points over the block, and they hold
/// whole butterflies of its first pass (N / its points a multiple of the
/// block). The kernel asserts the same.
pub fn load_pass_fits(spec: &Specialization) -> bool {
    let (n, threads) = (spec.fft_len(), u64::from(spec.kernel.threads));
    let samples = n.div_ceil(threads.max(1));
    let first = super::fft::cuda_first_pass_points(n).map_or(0, u64::from);
    spec.kernel.fft == FftPasses::OnePass && prefetches(spec) && samples * threads == n && first > 0 && (n / first).is_multiple_of(threads)
}

/// Whether the register FFT ([`SourceForms::register_fft`]) takes the
/// one-pass kernel of `spec`: a block of one warp (n_fft up to 512), a
/// segment pair a transform (not a packed segment), and a length the
/// warp's lanes share evenly, each with 2 to 8 points
/// ([`super::fft::warp_radices`]: 64, 96, 128, 160, 192, 256; longer
/// lanes take far more registers than the shared-memory FFT). The kernel
/// asserts the same.
pub fn register_fft_fits(spec: &Specialization) -> bool {
    let k = &spec.kernel;
    k.fft == FftPasses::OnePass && !k.packed && u64::from(k.threads) == super::fft::WARP_LANES && super::fft::warp_radices(spec.fft_len()).is_some()
}

/// The launch bounds the occupancy form tries for blocks of `threads` on
/// an SM of `sm`, most blocks first: the blocks its registers hold when
/// each thread keeps [`OCCUPANCY_REGISTERS`] registers, in turn (at most
/// the blocks it keeps resident, each above 1, none twice).
///
/// By default ptxas takes registers that keep few blocks resident, far
/// fewer than shared memory allows (sm_90, 8 segments an entry):
///
/// | n_fft | threads | registers | blocks an SM | bound kept | registers | blocks an SM | shared memory allows |
/// |---|---|---|---|---|---|---|---|
/// | 256 | 32 | 72 | 28 | 32 | 54 | 32 | 32 |
/// | 512 | 32 | 134 | 15 | 19 | 96 | 21 | 32 |
/// | 1024, k 64 | 64 | 113 | 8 | 12 | 80 | 12 | 21 |
/// | 2048 | 128 | 134 | 3 | 5 | 96 | 5 | 10 |
/// | 4096 | 256 | 94 | 2 | 3 | 80 | 3 | 5 |
///
/// Most of those registers are the 16 samples of the next pair a thread
/// holds while the current FFT runs (at one segment an entry, with no
/// next pair, the 4096-point kernel takes 48). The bounds tried before the
/// one kept spilled (4 at 4096: 92 bytes; 16 at 1024; 32 to 21 at 512).
/// At 256, 28 → 32 blocks took occupancy from 44% to 50%, which Nsight
/// Compute reported as register-bound on an H100.
pub fn occupancy_bounds(threads: u32, sm: SmResources) -> Vec<u32> {
    let mut bounds: Vec<u32> = OCCUPANCY_REGISTERS.iter().map(|cap| (sm.registers / (threads.max(1) * cap)).min(sm.blocks)).filter(|b| *b > 1).collect();
    bounds.dedup();
    bounds
}

/// Registers a thread keeps under each of [`occupancy_bounds`], in turn
/// (ptxas rounds a bound's budget down to a count it allocates: 19 blocks
/// of 32 threads, 107 registers, gave 96).
pub const OCCUPANCY_REGISTERS: [u32; 5] = [64, 80, 96, 104, 128];

/// What an SM holds that an occupancy bound shares out: 32-bit registers
/// and resident blocks. A device's own figures where one is at hand (its
/// driver's attributes: rlx-run's CUDA runtime, rlx-ext on RLX's device),
/// else [`SmResources::SM_90`]'s. They differ between GPUs: sm_86 and
/// sm_87 keep 16 blocks an SM, sm_89 24, where a bound of 32 would ask
/// ptxas for registers that no SM of theirs can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmResources {
    pub registers: u32,
    pub blocks: u32,
}

impl SmResources {
    /// An SM of sm_80 and sm_90 (A100, H100, H200): 65,536 registers, 32
    /// blocks.
    pub const SM_90: SmResources = SmResources { registers: 65536, blocks: 32 };
}

/// [`source_with`] in the source forms `forms`, its one-pass entries'
/// launch bounds asking for no number of blocks an SM (`MIN_BLOCKS` 1).
/// The occupancy form's bound is found by compiling ([`compile_for`]):
/// which bound ptxas can meet without a spill depends on the length, the
/// segments, the window, the form and the arch (sm_90, one warp a block:
/// 32 blocks at most lengths, 25 at 160 points with a next pair to
/// prefetch, 19 at 512, 21 for the register FFT at 256 with a window;
/// sm_80 32 at all of them), so a source not compiled here asks for none
/// rather than a guess that would spill.
pub fn source_for(spec: &Specialization, bindings: Bindings, forms: SourceForms) -> Result<String, LowerError> {
    source_bounded(spec, bindings, forms, 1)
}

/// [`source_for`] with the one-pass entries' launch bounds asking for
/// `blocks` an SM.
fn source_bounded(spec: &Specialization, bindings: Bindings, forms: SourceForms, blocks: u32) -> Result<String, LowerError> {
    // The FFT front end both fused ops share: once, or for the four-step
    // FFT twice (its columns' and its rows' lengths).
    let (template, ffts) = match spec.kernel.fft {
        FftPasses::OnePass => (TEMPLATE, vec![("{{FFT}}", super::fft::cuda(spec.fft_len())?)]),
        FftPasses::MultiPass => (MULTIPASS_TEMPLATE, Vec::new()),
        FftPasses::FourStep { n1, n2 } => (FOUR_STEP_TEMPLATE, vec![("{{FFT_COLUMNS}}", super::fft::cuda_prefixed(n1.into(), "col")?), ("{{FFT_ROWS}}", super::fft::cuda_prefixed(n2.into(), "row")?)]),
    };
    let entries = entries_for(bindings, ENTRIES, ENTRIES_RLX);
    let mut text = template.replace("{{COMMON}}", COMMON).replace("{{SAMPLES}}", super::CUDA_SAMPLES).replace("{{ENTRIES}}", &entries).replace("{{MULTIPASS_POWER}}", MULTIPASS_POWER);
    for (placeholder, fft) in ffts {
        text = text.replace(placeholder, &fft);
    }
    let text = text.replace("{{MIN_BLOCKS}}", &blocks.to_string()).replace("{{WARP_TOPK}}", &u8::from(forms.warp_topk).to_string())
        .replace("{{REGISTER_FFT}}", &u8::from(forms.register_fft_in(spec)).to_string())
        .replace("{{LOAD_PASS}}", &u8::from(forms.load_pass_in(spec)).to_string())
        .replace("{{PREFETCH}}", &u8::from(prefetches(spec)).to_string())
        .replace("{{PACKED}}", &u8::from(spec.kernel.packed).to_string());
    fill(&text, spec)
}

/// A kernel's entry points for operands bound as `bindings`: `buffers`, or
/// `rlx` after RLX's signature.
pub fn entries_for(bindings: Bindings, buffers: &str, rlx: &str) -> String {
    match bindings {
        Bindings::Buffers => buffers.to_string(),
        Bindings::RlxArena { .. } => format!("{RLX_CUSTOM_ARGS}\n{rlx}"),
    }
}

/// Whether the NVRTC library can be loaded (it is looked up by name, so its
/// folder must be on `LD_LIBRARY_PATH`).
#[cfg(feature = "cuda")]
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compile the specialised kernel to PTX for `arch` (`sm_90`, `sm_80`, …)
/// with ptxas verbose output; returns the CUDA source, the PTX and NVRTC's
/// log. A register spill or a local-memory stack frame is refused.
#[cfg(feature = "cuda")]
pub fn compile(spec: &Specialization, arch: &str) -> Result<(String, String, String), LowerError> {
    compile_with(spec, Bindings::Buffers, arch)
}

/// [`compile`] with entry points for operands bound as `bindings`.
#[cfg(feature = "cuda")]
pub fn compile_with(spec: &Specialization, bindings: Bindings, arch: &str) -> Result<(String, String, String), LowerError> {
    compile_for(spec, bindings, arch, SourceForms::in_use())
}

/// [`compile_with`] in the source forms `forms`. With the occupancy form,
/// the one-pass entries' bounds are tried in turn ([`occupancy_bounds`]),
/// and the first that compiles without a spill is kept, else none (1):
/// the returned source says which (`MIN_BLOCKS`).
#[cfg(feature = "cuda")]
pub fn compile_for(spec: &Specialization, bindings: Bindings, arch: &str, forms: SourceForms) -> Result<(String, String, String), LowerError> {
    compile_on(spec, bindings, arch, forms, SmResources::SM_90)
}

/// [`compile_for`] for a device whose SMs hold `sm`: the occupancy
/// bounds tried are its own ([`occupancy_bounds`]).
#[cfg(feature = "cuda")]
pub fn compile_on(spec: &Specialization, bindings: Bindings, arch: &str, forms: SourceForms, sm: SmResources) -> Result<(String, String, String), LowerError> {
    let compile = |blocks| compile_source(source_bounded(spec, bindings, forms, blocks)?, "welch_peaks.cu", arch, &|entry| may_spill(spec.kernel.fft, entry));
    let bounds = if forms.occupancy && spec.kernel.fft == FftPasses::OnePass { occupancy_bounds(spec.kernel.threads, sm) } else { Vec::new() };
    first_without_spill(&bounds, compile)
}

/// `compile` at each of `bounds` in turn, the first result that is not a
/// register spill (a success, or any other error, returned at once); if
/// every bound spills, `compile` at 1 (no bound).
#[cfg(feature = "cuda")]
fn first_without_spill<T>(bounds: &[u32], compile: impl Fn(u32) -> Result<T, LowerError>) -> Result<T, LowerError> {
    for &blocks in bounds {
        match compile(blocks) {
            Err(LowerError::Spill { .. }) => continue,
            compiled => return compiled,
        }
    }
    compile(1)
}

/// The source [`compile_with`] compiles for `arch`: with the occupancy
/// form asked for, a one-pass plan and NVRTC at hand, the bound it keeps
/// (found by compiling: a compile a bound tried, for each launch step of
/// a plan that asks, one or two); otherwise [`source_with`]'s. For a
/// runtime that compiles the source itself (RLX's, which compiles for its
/// device's arch: rlx-ext asks for that arch, `rlx_cuda_arch`).
#[cfg(feature = "cuda")]
pub fn source_as_compiled(spec: &Specialization, bindings: Bindings, arch: &str, sm: SmResources) -> Result<String, LowerError> {
    let forms = SourceForms::in_use();
    let bounded = forms.occupancy && spec.kernel.fft == FftPasses::OnePass && !occupancy_bounds(spec.kernel.threads, sm).is_empty();
    if bounded && nvrtc_available() { compile_on(spec, bindings, arch, forms, sm).map(|(source, _, _)| source) } else { source_for(spec, bindings, forms) }
}

/// Whether entry point `entry` (either kind) of a plan whose FFT passes as
/// `fft` may spill: the multi-pass plans' last passes keep up to 129 bins
/// per thread, a local-memory array by design; their FFT passes (load,
/// stage, columns, rows) and every one-pass entry must not.
#[cfg(feature = "cuda")]
fn may_spill(fft: FftPasses, entry: &str) -> bool {
    let last_passes = [KernelEntry::PeaksOf, KernelEntry::PartialOf, KernelEntry::PeaksOfPartials];
    fft != FftPasses::OnePass && last_passes.iter().any(|e| entry == e.name() || entry == rlx_entry(*e))
}

/// Compile a specialised CUDA source (either fused op's) named `file` to
/// PTX for `arch`, refusing a register spill in any entry point but those
/// `may_spill` names.
#[cfg(feature = "cuda")]
pub fn compile_source(source: String, file: &str, arch: &str, may_spill: &dyn Fn(&str) -> bool) -> Result<(String, String, String), LowerError> {
    use cudarc::nvrtc::result;
    use std::ffi::{CStr, CString};
    if !nvrtc_available() {
        return Err(LowerError::NvrtcMissing);
    }
    let nvrtc = |message: String| LowerError::Nvrtc { arch: arch.to_string(), message };
    let src = CString::new(source.as_str()).map_err(|e| nvrtc(e.to_string()))?;
    let name = CString::new(file).map_err(|e| nvrtc(e.to_string()))?;
    let program = result::create_program(&src, Some(&name)).map_err(|e| nvrtc(format!("{e:?}")))?;
    let options = [format!("--gpu-architecture={arch}"), "--ptxas-options=-v".into(), "--std=c++17".into()];
    // SAFETY: `program` is a live NVRTC program until destroyed below; the
    // log and PTX buffers are NUL-terminated by NVRTC.
    let outcome = unsafe {
        let compiled = result::compile_program(program, &options);
        let log = result::get_program_log(program).map(|raw| CStr::from_ptr(raw.as_ptr()).to_string_lossy().into_owned()).unwrap_or_default();
        let ptx = compiled.and_then(|_| result::get_ptx(program)).map(|raw| CStr::from_ptr(raw.as_ptr()).to_string_lossy().into_owned());
        let _ = result::destroy_program(program);
        (ptx, log)
    };
    match outcome {
        (Ok(ptx), log) => {
            match first_spill(&log, may_spill) {
                Some(line) => Err(LowerError::Spill { arch: arch.to_string(), line }),
                None => Ok((source, ptx, log)),
            }
        }
        (Err(e), log) => Err(nvrtc(format!("{e:?}\n{log}"))),
    }
}

/// The first register spill ptxas's verbose log reports in an entry point
/// `may_spill` does not name, as `entry: line` (ptxas names each function,
/// then gives its spills).
#[cfg(feature = "cuda")]
fn first_spill(log: &str, may_spill: &dyn Fn(&str) -> bool) -> Option<String> {
    let mut entry = "";
    for line in log.lines() {
        if let Some((_, name)) = line.split_once("Function properties for ") {
            entry = name.trim();
        } else if line.contains("spill stores") && !line.contains(" 0 bytes spill stores") && !may_spill(entry) {
            // "ptxas         .     88 bytes stack frame, …": what follows the dot.
            let spills = line.split_once(" . ").map_or(line, |(_, rest)| rest).trim();
            return Some(format!("{entry}: {spills}"));
        }
    }
    None
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::{FftPasses, LowerError, first_spill, first_without_spill, may_spill};

    /// The bounds are tried most blocks first: a spill moves on, anything
    /// else (a success, or another error) is the answer; all spilling, no
    /// bound (1).
    #[test]
    fn the_first_bound_without_a_spill_is_kept() {
        let spill = || LowerError::Spill { arch: "sm_90".into(), line: "welch_peaks: 8 bytes spill stores".into() };
        // The bound kept, and the bounds tried, when all above `fits` spill.
        let run = |bounds: &[u32], fits: u32| {
            let tried = std::cell::RefCell::new(Vec::new());
            let kept = first_without_spill(bounds, |blocks| {
                tried.borrow_mut().push(blocks);
                if blocks > fits { Err(spill()) } else { Ok(blocks) }
            });
            (kept.map_err(|e| e.to_string()), tried.into_inner())
        };
        assert_eq!(run(&[4, 3, 2], 3), (Ok(3), vec![4, 3]));
        assert_eq!(run(&[32, 25], 1), (Ok(1), vec![32, 25, 1]));
        assert_eq!(run(&[], 0), (Err(spill().to_string()), vec![1]));
        let nvrtc = |blocks: u32| if blocks == 4 { Err(LowerError::NvrtcMissing) } else { Ok(blocks) };
        assert!(matches!(first_without_spill(&[4, 3], nvrtc), Err(LowerError::NvrtcMissing)), "another error is not skipped");
    }

    #[test]
    fn only_the_multi_pass_last_passes_may_spill() {
        let four_step = FftPasses::FourStep { n1: 64, n2: 128 };
        for entry in ["peaks_of", "rlx_peaks_of", "partial_of", "rlx_peaks_of_partials"] {
            assert!(may_spill(four_step, entry) && may_spill(FftPasses::MultiPass, entry), "{entry}");
            assert!(!may_spill(FftPasses::OnePass, entry), "{entry} in one pass");
        }
        for entry in ["columns", "rlx_rows", "load", "rlx_stage", "welch_peaks", "peaks_of_x"] {
            assert!(!may_spill(four_step, entry), "{entry}");
        }
    }

    /// ptxas's log of a multi-pass plan (n_fft 65536, sm_90): the last
    /// passes' spills are allowed where the caller says so, an FFT pass's
    /// never.
    #[test]
    fn a_spill_is_refused_by_entry_point() {
        let log = "ptxas info    : Function properties for peaks_of\n\
                   ptxas         .     88 bytes stack frame, 232 bytes spill stores, 176 bytes spill loads\n\
                   ptxas info    : Function properties for rows\n\
                   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        let last_passes = |e: &str| e.contains("peaks_of");
        assert_eq!(first_spill(log, &last_passes), None);
        assert_eq!(first_spill(log, &|_| false).as_deref(), Some("peaks_of: 88 bytes stack frame, 232 bytes spill stores, 176 bytes spill loads"));
        let columns = log.replace("for rows", "for columns").replace(" 0 bytes spill stores", " 8 bytes spill stores");
        assert!(first_spill(&columns, &last_passes).is_some_and(|l| l.starts_with("columns:")));
    }
}


#[cfg(all(test, feature = "cuda"))]
mod nvrtc_tests {
    use super::*;
    use crate::analysis::Target;
    use crate::analysis::plan::DeviceLimits;
    use crate::fused::{PlanName, WelchPeaksAttrs};

    /// The registers ptxas gave entry point `entry`, from its verbose log.
    fn registers(log: &str, entry: &str) -> u32 {
        let after = log.split(&format!("Function properties for {entry}")).nth(1).unwrap_or_else(|| panic!("no {entry} in {log}"));
        let used = after.split("Used ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok());
        used.unwrap_or_else(|| panic!("no register count for {entry} in {log}"))
    }

    /// The load pass fits the one-pass kernels of the powers of two from
    /// 128 points (whole first-pass butterflies in each thread's
    /// prefetched samples), not 64 (16 butterflies of 4 for a warp), 400
    /// or 1000 (not prefetched), 160 (40 butterflies for a warp) or a
    /// multi-pass plan; NVRTC compiles it where it fits (the kernel
    /// asserts the same), and the source asks for it only there.
    #[test]
    fn the_load_pass_fits_whole_first_pass_butterflies() {
        let spec = |n: u64, plan| {
            let attrs = WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(n, 8, 4) };
            crate::lower::specialize_for(&attrs, &[64, n as usize], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap()
        };
        let fits: Vec<u64> = [64, 128, 160, 256, 400, 512, 1000, 1024, 2048, 4096].into_iter().filter(|n| load_pass_fits(&spec(*n, PlanName::Batch))).collect();
        assert_eq!(fits, [128, 256, 512, 1024, 2048, 4096]);
        assert!(!load_pass_fits(&spec(1024, PlanName::Multipass)));
        // Prefetching: at most 8 samples a thread (160 on a warp: 5), or a
        // power of two (1024 on 64 threads: 16); not 400 on a warp (13)
        // nor 1000 on 64 threads (16). The source says which.
        let prefetching: Vec<u64> = [160, 400, 1000, 1024].into_iter().filter(|n| prefetches(&spec(*n, PlanName::Batch))).collect();
        assert_eq!(prefetching, [160, 1024]);
        for n in [160, 400] {
            let source = source_for(&spec(n, PlanName::Batch), Bindings::Buffers, SourceForms::default()).unwrap();
            assert!(source.contains(&format!("#define PREFETCH {}\n", u8::from(n == 160))), "n_fft {n}");
        }
        if !nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            return println!("SKIPPED the load pass's compiles: libnvrtc.so.12 not on LD_LIBRARY_PATH");
        }
        let load_pass = SourceForms { load_pass: true, ..SourceForms::default() };
        for n in [64, 256, 4096] {
            let (source, _, _) = compile_for(&spec(n, PlanName::Batch), Bindings::Buffers, "sm_90", load_pass).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
            assert_eq!(source.contains("#define LOAD_PASS 1\n"), n != 64, "n_fft {n}");
        }
    }

    /// Where the load pass fits too (128 and 256 points), the register FFT
    /// takes grids of up to [`REGISTER_FFT_MOST_BLOCKS`] blocks and leaves
    /// larger ones to the load pass, as measured on an H200; a length the
    /// load pass does not fit (64) keeps it on any grid, and without the
    /// load pass it takes every grid it fits.
    #[test]
    fn the_register_fft_leaves_full_grids_to_the_load_pass() {
        let spec = |n: u64, rows: usize, plan| {
            let attrs = WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(n, 8, 16) };
            crate::lower::specialize_for(&attrs, &[rows, n as usize], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap()
        };
        let both = SourceForms { register_fft: true, load_pass: true, ..SourceForms::default() };
        let registers_alone = SourceForms { load_pass: false, ..both };
        // Entries of 8 segments: 1,024 blocks, then 1,025 and 8,192.
        for (n, entries, register, load_pass) in [(256, 1024, true, false), (256, 1025, false, true), (256, 8192, false, true), (128, 8192, false, true), (64, 8192, true, false)] {
            let s = spec(n, 8 * entries, PlanName::Batch);
            assert_eq!((s.kernel.groups, s.kernel.chunks), (entries as u64, 1));
            assert_eq!((both.register_fft_in(&s), both.load_pass_in(&s)), (register, load_pass), "n_fft {n}, {entries} blocks");
            assert!(registers_alone.register_fft_in(&s), "n_fft {n}, {entries} blocks, no load pass");
            let source = source_for(&s, Bindings::Buffers, both).unwrap();
            assert!(source.contains(&format!("#define REGISTER_FFT {}\n", u8::from(register))), "n_fft {n}");
        }
        // A split plan counts its chunks: 1,024 entries of 8 segments cut
        // in two are 2,048 blocks (512 in two, 1,024: the register FFT).
        let half = spec(256, 8 * 512, PlanName::Split);
        assert_eq!((half.kernel.groups, half.kernel.chunks), (512, 2));
        assert!(both.register_fft_in(&half));
        let split = spec(256, 8 * 1024, PlanName::Split);
        assert!(split.kernel.groups * split.kernel.chunks > REGISTER_FFT_MOST_BLOCKS, "{:?}", (split.kernel.groups, split.kernel.chunks));
        assert!(!both.register_fft_in(&split) && both.load_pass_in(&split));
    }

    /// The register FFT takes the one-warp one-pass kernels whose length
    /// gives each lane 2 to 8 points (not 32: one point a lane; not 400:
    /// 32 does not divide it; not 480 or 512: too many registers), never a
    /// packed segment or a multi-pass plan; the source
    /// asks for it only there and then leaves the load pass out, and NVRTC
    /// compiles it for both signatures with no spill (`compile_source`
    /// refuses one) and no warning.
    #[test]
    fn the_register_fft_takes_one_warp_lengths_of_two_radices() {
        let spec = |n: u64, segments: u64, plan, limits: &DeviceLimits| {
            let attrs = WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(n, segments, 4) };
            crate::lower::specialize_for(&attrs, &[64 * segments as usize, n as usize], Target::Cuda, limits).unwrap()
        };
        let assumed = DeviceLimits::assumed(Target::Cuda);
        let lengths = [32, 64, 96, 128, 160, 192, 256, 288, 320, 384, 400, 480, 500, 512, 640, 1024];
        let fits: Vec<u64> = lengths.into_iter().filter(|n| register_fft_fits(&spec(*n, 8, PlanName::Batch, &assumed))).collect();
        assert_eq!(fits, [64, 96, 128, 160, 192, 256]);
        assert!(register_fft_fits(&spec(256, 8, PlanName::Split, &assumed)));
        assert!(!register_fft_fits(&spec(256, 8, PlanName::Multipass, &assumed)));
        // A one-segment entry is packed by default (not a pair: no register
        // FFT); paired with zeros, it takes it.
        let paired = DeviceLimits { packed_segment: false, ..assumed };
        assert!(!register_fft_fits(&spec(256, 1, PlanName::Batch, &assumed)) && register_fft_fits(&spec(256, 1, PlanName::Batch, &paired)));
        let forms = SourceForms { register_fft: true, load_pass: true, ..SourceForms::default() };
        for n in [160, 256, 400] {
            let source = source_for(&spec(n, 8, PlanName::Batch, &assumed), Bindings::Buffers, forms).unwrap();
            let register = n != 400;
            assert!(source.contains(&format!("#define REGISTER_FFT {}\n", u8::from(register))), "n_fft {n}");
            assert!(!(register && source.contains("#define LOAD_PASS 1\n")), "n_fft {n}: the load pass beside the register FFT");
        }
        if !nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            return println!("SKIPPED the register FFT's compiles: libnvrtc.so.12 not on LD_LIBRARY_PATH");
        }
        for n in [64, 96, 160, 192, 256] {
            for (bindings, arch) in [(Bindings::Buffers, "sm_90"), (Bindings::RlxArena { stage: 0 }, "sm_80")] {
                let spec = spec(n, 8, PlanName::Batch, &assumed);
                let (_, _, log) = compile_for(&spec, bindings, arch, forms).unwrap_or_else(|e| panic!("n_fft {n}, {arch}: {e}"));
                assert!(!log.contains("warning"), "n_fft {n}, {arch}: NVRTC warns:\n{log}");
            }
        }
    }

    /// Asked for occupancy, the one-warp one-pass entries fit 32 blocks an
    /// SM (at most 64 registers, no spill: `compile_source` refuses one) in
    /// both signatures: the goal cell's geometry (n_fft 256, 8 segments,
    /// k 16), and n_fft 64. Not compiled, the source asks for no bound in
    /// any form ([`source_for`]).
    #[test]
    fn occupancy_bounds_one_warp_blocks_to_a_full_sm() {
        let occupancy = SourceForms { occupancy: true, ..SourceForms::default() };
        let every_form = SourceForms { occupancy: true, warp_topk: true, load_pass: true, register_fft: true };
        let spec = |n: u64, plan| {
            let attrs = WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(n, 8, 16) };
            crate::lower::specialize_for(&attrs, &[8192 * 8, n as usize], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap()
        };
        for n in [64, 160, 256, 512] {
            for forms in [SourceForms::default(), occupancy, every_form] {
                let source = source_for(&spec(n, PlanName::Batch), Bindings::Buffers, forms).unwrap();
                assert!(source.contains("#define MIN_BLOCKS 1u\n"), "n_fft {n}, {forms:?}: a bound in a source not compiled");
            }
        }
        if !nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            return println!("SKIPPED occupancy bound test: libnvrtc.so.12 not on LD_LIBRARY_PATH");
        }
        for (n, plan, entry) in [(256u64, PlanName::Batch, "welch_peaks"), (64, PlanName::Batch, "welch_peaks"), (256, PlanName::Split, "partial_psd")] {
            let spec = spec(n, plan);
            assert_eq!(spec.kernel.threads, 32, "n_fft {n}");
            let (source, _, log) = compile_for(&spec, Bindings::Buffers, "sm_90", occupancy).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
            assert!(source.contains("#define MIN_BLOCKS 32u"), "n_fft {n}");
            assert!(registers(&log, entry) <= 65536 / (32 * SmResources::SM_90.blocks), "n_fft {n} {entry}: {log}");
            let (_, _, log) = compile_for(&spec, Bindings::RlxArena { stage: 0 }, "sm_90", occupancy).unwrap_or_else(|e| panic!("n_fft {n} in RLX's signature: {e}"));
            assert!(registers(&log, &format!("rlx_{entry}")) <= 64, "n_fft {n} rlx_{entry}: {log}");
        }
    }

    /// Why a source not compiled asks for no bound: among one-warp blocks
    /// alone, the bound ptxas meets without a spill (sm_90) depends on the
    /// segments (a next pair to prefetch), the window, the form and the
    /// arch, not on the block's width: at 160 points 25 blocks with 8
    /// segments, 32 with one; the register FFT at 256 points 21 with a
    /// window, 32 without; sm_80 32 in each.
    #[test]
    fn one_warp_bounds_depend_on_more_than_the_block() {
        if !nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            return println!("SKIPPED occupancy bound test: libnvrtc.so.12 not on LD_LIBRARY_PATH");
        }
        let occupancy = SourceForms { occupancy: true, ..SourceForms::default() };
        let register_fft = SourceForms { register_fft: true, ..occupancy };
        let cases = [(160u64, 8u64, false, occupancy, 25), (160, 1, false, occupancy, 32), (256, 8, true, register_fft, 21), (256, 8, false, register_fft, 32)];
        for (n, segments, window, forms, kept) in cases {
            let attrs = WelchPeaksAttrs { plan: Some(PlanName::Batch), window, ..WelchPeaksAttrs::rlx(n, segments, 16) };
            let spec = crate::lower::specialize_for(&attrs, &[64 * segments as usize, n as usize], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
            assert_eq!(spec.kernel.threads, 32, "n_fft {n}");
            let bound = |arch, bindings| {
                let (source, _, _) = compile_for(&spec, bindings, arch, forms).unwrap_or_else(|e| panic!("n_fft {n}, {arch}: {e}"));
                source.split("#define MIN_BLOCKS ").nth(1).and_then(|rest| rest.split('u').next()).and_then(|b| b.parse::<u32>().ok())
            };
            let what = format!("n_fft {n}, {segments} segments, window {window}, {forms:?}");
            assert_eq!(bound("sm_90", Bindings::Buffers), Some(kept), "{what}");
            assert_eq!(bound("sm_80", Bindings::RlxArena { stage: 0 }), Some(SmResources::SM_90.blocks), "{what}, sm_80");
        }
    }

    /// The bounds tried are the SM's own: an SM of 16 blocks (sm_86, an
    /// RTX 3090's) is asked for at most 16, and NVRTC compiles a one-warp
    /// block there with that bound. With an H100's figures it was asked
    /// for 32, which ptxas ignores there with a warning ("Value of
    /// minnctapersm … is out of range"): no bound at all.
    #[test]
    fn occupancy_bounds_share_out_the_devices_sm() {
        let sm_86 = SmResources { registers: 65536, blocks: 16 };
        assert_eq!(occupancy_bounds(32, sm_86), [16]);
        assert_eq!(occupancy_bounds(32, SmResources::SM_90), [32, 25, 21, 19, 16]);
        assert_eq!(occupancy_bounds(64, sm_86), [16, 12, 10, 9, 8]);
        assert_eq!(occupancy_bounds(256, SmResources { registers: 32768, blocks: 16 }), [2]);
        if !nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            return println!("SKIPPED the sm_86 compile: libnvrtc.so.12 not on LD_LIBRARY_PATH");
        }
        let attrs = WelchPeaksAttrs { plan: Some(PlanName::Batch), ..WelchPeaksAttrs::rlx(256, 8, 16) };
        let spec = crate::lower::specialize_for(&attrs, &[64 * 8, 256], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
        let occupancy = SourceForms { occupancy: true, ..SourceForms::default() };
        for (sm, kept) in [(sm_86, 16), (SmResources::SM_90, 32)] {
            let (source, _, log) = compile_on(&spec, Bindings::Buffers, "sm_86", occupancy, sm).unwrap_or_else(|e| panic!("{sm:?}: {e}"));
            assert!(source.contains(&format!("#define MIN_BLOCKS {kept}u\n")), "{sm:?}: not the bound {kept}");
            let ignored = log.contains("Value of minnctapersm for entry welch_peaks is out of range");
            assert_eq!(ignored, sm != sm_86, "{sm:?}: NVRTC's log:\n{log}");
            assert!(sm != sm_86 || !log.contains("warning"), "NVRTC warns:\n{log}");
        }
    }

    /// Asked for occupancy, each cell of `occupancy_bounds`' table keeps
    /// the bound the table gives, the first that does not spill (so the
    /// earlier ones are tried and dropped: one at 1024 and 4096, three at
    /// 512), in both signatures; its registers let that many blocks fit an
    /// SM, and the default's do not. The split plan's `partial_psd` too.
    #[test]
    fn occupancy_keeps_the_most_blocks_that_do_not_spill() {
        if !nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            return println!("SKIPPED occupancy bound test: libnvrtc.so.12 not on LD_LIBRARY_PATH");
        }
        let cases = [
            (512u64, 16u64, PlanName::Batch, "welch_peaks", 32, 19),
            (1024, 64, PlanName::Batch, "welch_peaks", 64, 12),
            (2048, 16, PlanName::Batch, "welch_peaks", 128, 5),
            (4096, 16, PlanName::Batch, "welch_peaks", 256, 3),
            (4096, 16, PlanName::Split, "partial_psd", 256, 3),
        ];
        for (n, k, plan, entry, threads, kept) in cases {
            let attrs = WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(n, 8, k) };
            let spec = crate::lower::specialize_for(&attrs, &[1024 * 8, n as usize], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
            assert_eq!(spec.kernel.threads, threads, "n_fft {n}");
            assert!(occupancy_bounds(threads, SmResources::SM_90).contains(&kept) && occupancy_bounds(threads, SmResources::SM_90)[0] > kept, "n_fft {n}: {:?}", occupancy_bounds(threads, SmResources::SM_90));
            let fit = |registers: u32| SmResources::SM_90.registers / (registers * threads);
            let (_, _, log) = compile_for(&spec, Bindings::Buffers, "sm_90", SourceForms::default()).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
            let by_default = registers(&log, entry);
            let occupancy = SourceForms { occupancy: true, ..SourceForms::default() };
            let (source, _, log) = compile_for(&spec, Bindings::Buffers, "sm_90", occupancy).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
            assert!(source.contains(&format!("#define MIN_BLOCKS {kept}u")), "n_fft {n}: not the bound {kept}");
            let bounded = registers(&log, entry);
            assert!(fit(bounded) >= kept && fit(by_default) < kept, "n_fft {n} {entry}: {by_default} registers by default, {bounded} bounded");
            let (source, _, _) = compile_for(&spec, Bindings::RlxArena { stage: 0 }, "sm_90", occupancy).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
            assert!(source.contains(&format!("#define MIN_BLOCKS {kept}u")), "n_fft {n} in RLX's signature: not the bound {kept}");
        }
    }
}

