//! The CUDA kernels' alternative forms, each behind an environment
//! variable. A form is written and checked here (NVRTC, ptxas, the plan
//! tests, the CPU emulation) and stays off until a GPU session has run it
//! against the reference and A/B'd it with the form it would replace
//! (`scripts/gpu-run.sh pending`): a kernel that never ran does not replace
//! one that did. A form that matched and won is on by default
//! ([`CudaForm::by_default`]); its variable still turns it off (`NAME=0`),
//! so the next GPU session can A/B it again. A form that matched but lost
//! stays off, with its measurement beside it.
//!
//! Measured on an NVIDIA H200 (stop 53, `scripts/gpu-run.sh` A/B steps,
//! every form matched the reference in `test-plans-opt-ins`,
//! `test-cuda_session-opt-ins` and `test-gpu_log_mel-warps`):
//! - four-step: the multi-pass cells 1.6–4.7× faster (8192 × 8 × 256:
//!   468 → 283 µs; 1024 × 8 × 8192: 2736 → 587 µs). On.
//! - packed segment: the one-segment cells 1.04–1.68× faster. On.
//! - register FFT: the one-warp cells up to 1.41× faster (the goal cell
//!   51.5 → 50.4 µs, batch 1 9.1 → 7.4 µs), k 64 3% slower. On.
//! - load pass: 1.02–1.10× on the goal cell and the cells of 1024 and
//!   4096 points (goal 51.4 → 48.0 µs). On.
//! - log-mel warps: Whisper's 24,000 frames 83.8 → 65.1 µs, 1.2–1.4×. On.
//! - warp top-k: 0.69–0.97× (slower on every cell it changes). Off.
//! - occupancy bound: the goal cell 0.90×, other cells 0.99–1.06×. Off.

/// One alternative CUDA form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaForm {
    /// The multi-pass plans' FFT in four steps rather than a radix-2 stage
    /// a launch ([`DeviceLimits::four_step`](crate::analysis::plan::DeviceLimits::four_step)).
    FourStep,
    /// The Welch one-pass FFT's first pass run on each thread's samples as
    /// loaded, in registers: one round trip through shared memory and one
    /// barrier fewer a pair
    /// ([`lower::cuda::SourceForms::load_pass`](crate::lower::cuda::SourceForms::load_pass)).
    LoadPass,
    /// The log-mel kernel's warp form: a warp per frame, no block barrier
    /// ([`DeviceLimits::log_mel_warps`](crate::analysis::plan::DeviceLimits::log_mel_warps)).
    LogMelWarps,
    /// The one-pass Welch kernels' one-segment entries as one complex FFT
    /// of half the length (the segment's even and odd samples), split into
    /// its one-sided spectrum: half the FFT, where today a one-segment
    /// entry pairs its segment with zeros
    /// ([`DeviceLimits::packed_segment`](crate::analysis::plan::DeviceLimits::packed_segment)).
    PackedSegment,
    /// The one-pass Welch entries' launch bounds asking for the most blocks
    /// an SM that compile without a spill
    /// ([`lower::cuda::occupancy_bounds`](crate::lower::cuda::occupancy_bounds)).
    Occupancy,
    /// The Welch top-k of blocks of several warps by warps: each warp's
    /// own k rounds, one barrier, then one warp merging their lists
    /// ([`lower::cuda::SourceForms::warp_topk`](crate::lower::cuda::SourceForms::warp_topk)).
    WarpTopK,
    /// The Welch one-pass FFT of one-warp blocks in the warp's registers:
    /// each lane's points through their own DFT, then the lanes' by
    /// shuffles; no shared memory and no barrier a pair
    /// ([`lower::cuda::SourceForms::register_fft`](crate::lower::cuda::SourceForms::register_fft)).
    RegisterFft,
}

impl CudaForm {
    pub const ALL: [CudaForm; 7] =
        [CudaForm::FourStep, CudaForm::LoadPass, CudaForm::LogMelWarps, CudaForm::PackedSegment, CudaForm::Occupancy, CudaForm::WarpTopK, CudaForm::RegisterFft];

    /// The environment variable that asks for it.
    pub fn variable(self) -> &'static str {
        match self {
            CudaForm::FourStep => "RLX_OPT_CUDA_FOUR_STEP",
            CudaForm::LoadPass => "RLX_OPT_CUDA_LOAD_PASS",
            CudaForm::LogMelWarps => "RLX_OPT_CUDA_LOG_MEL_WARPS",
            CudaForm::PackedSegment => "RLX_OPT_CUDA_PACKED_SEGMENT",
            CudaForm::Occupancy => "RLX_OPT_CUDA_OCCUPANCY",
            CudaForm::WarpTopK => "RLX_OPT_CUDA_WARP_TOPK",
            CudaForm::RegisterFft => "RLX_OPT_CUDA_REGISTER_FFT",
        }
    }

    /// Its name in a bench's JSON (`forms`).
    pub fn name(self) -> &'static str {
        match self {
            CudaForm::FourStep => "four_step",
            CudaForm::LoadPass => "load_pass",
            CudaForm::LogMelWarps => "log_mel_warps",
            CudaForm::PackedSegment => "packed_segment",
            CudaForm::Occupancy => "occupancy_bound",
            CudaForm::WarpTopK => "warp_topk",
            CudaForm::RegisterFft => "register_fft",
        }
    }

    /// Whether it is on when the environment says nothing: it ran on a
    /// GPU, matched the reference and beat the form it replaces (the
    /// measurements are in this module's header).
    pub fn by_default(self) -> bool {
        match self {
            CudaForm::FourStep | CudaForm::LoadPass | CudaForm::LogMelWarps | CudaForm::PackedSegment | CudaForm::RegisterFft => true,
            CudaForm::Occupancy | CudaForm::WarpTopK => false,
        }
    }

    /// What the environment says of it: `NAME=1` on, `NAME=0` off (to
    /// A/B a default form against the one it replaced), anything else,
    /// unset included, nothing.
    pub fn overridden(self) -> Option<bool> {
        word_of(std::env::var(self.variable()).ok().as_deref())
    }

    /// Whether this process uses it: as the environment says, else its
    /// default.
    pub fn in_use(self) -> bool {
        self.overridden().unwrap_or(self.by_default())
    }
}

/// A form variable's value as a word on the form: `1` on, `0` off, else none.
fn word_of(value: Option<&str>) -> Option<bool> {
    match value {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => None,
    }
}

/// Whether a switch outside [`CudaForm`] (rlx-ext's `RLX_EXT_CUDA_LOG_MEL`)
/// is on: as its variable says (`1` on, `0` off), else `default`.
pub fn switch(variable: &str, default: bool) -> bool {
    word_of(std::env::var(variable).ok().as_deref()).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU script tests every form on (`NAME=1`) and off (`NAME=0`),
    /// whatever its default, and A/Bs the two (`NAME=$…`): neither side of
    /// a form is left out of the next GPU window.
    #[test]
    fn the_gpu_script_tests_and_compares_every_form() {
        let script = include_str!("../scripts/gpu-run.sh");
        // Every Welch form is set off with the others (`with_welch_forms 0`),
        // the log-mel warps on their own.
        let off_with_the_others = |var: &str| script.contains(&format!("{var}=$value")) && script.contains("with_welch_forms 0 step");
        for form in CudaForm::ALL {
            let var = form.variable();
            for how in ["1", "$"] {
                assert!(script.contains(&format!("{var}={how}")), "scripts/gpu-run.sh never sets {var}={how}");
            }
            assert!(script.contains(&format!("{var}=0")) || off_with_the_others(var), "scripts/gpu-run.sh never sets {var}=0");
        }
    }

    /// Unset leaves each form at its default; `1` and `0` override it
    /// either way; any other value is no word at all. (The variables
    /// themselves are not set here: the lib's other tests plan and emit
    /// kernels with the defaults, in parallel with this one.)
    #[test]
    fn a_variable_overrides_the_default_both_ways() {
        for (value, want) in [(None, None), (Some("1"), Some(true)), (Some("0"), Some(false)), (Some("yes"), None), (Some(" 1"), None), (Some(""), None)] {
            assert_eq!(word_of(value), want, "{value:?}");
        }
        // Both kinds of default exist: the winners on, the losers off.
        assert!(CudaForm::ALL.iter().any(|f| f.by_default()) && CudaForm::ALL.iter().any(|f| !f.by_default()));
    }

    #[test]
    fn every_form_has_its_own_variable_and_name() {
        let vars: std::collections::BTreeSet<_> = CudaForm::ALL.iter().map(|f| f.variable()).collect();
        let names: std::collections::BTreeSet<_> = CudaForm::ALL.iter().map(|f| f.name()).collect();
        assert_eq!((vars.len(), names.len()), (CudaForm::ALL.len(), CudaForm::ALL.len()));
    }
}
