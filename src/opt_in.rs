//! The CUDA forms that wait for a GPU: compiled and checked here (NVRTC,
//! ptxas, the plan tests) but not yet run on one, so each stays behind an
//! environment variable (`NAME=1`) until a GPU session has run it against
//! the reference and A/B'd it with the default (`scripts/gpu-run.sh
//! pending`). A kernel that never ran does not replace one that did; once
//! a form wins, it becomes the default and leaves this list.

/// One opt-in CUDA form.
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

    /// Whether this process asks for it.
    pub fn asked(self) -> bool {
        asked(self.variable())
    }
}

/// Whether the environment sets `variable` to `1`: how every opt-in is
/// asked for (rlx-ext's `RLX_EXT_CUDA_LOG_MEL` too). Anything else, unset
/// included, keeps the default.
pub fn asked(variable: &str) -> bool {
    std::env::var(variable).is_ok_and(|v| v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_one_asks() {
        // A variable no other test reads, so setting it races with nothing.
        let var = "RLX_OPT_TEST_OPT_IN_ONLY_A_ONE_ASKS";
        for (value, want) in [(None, false), (Some("0"), false), (Some("true"), false), (Some(" 1"), false), (Some("1"), true)] {
            // SAFETY: no other thread reads this variable.
            unsafe {
                match value {
                    Some(v) => std::env::set_var(var, v),
                    None => std::env::remove_var(var),
                }
            }
            assert_eq!(asked(var), want, "{value:?}");
        }
    }

    /// The GPU script tests every form (`NAME=1`) and A/Bs it against the
    /// default (`NAME=$…`): a new form is not left out of the next GPU
    /// window.
    #[test]
    fn the_gpu_script_tests_and_compares_every_form() {
        let script = include_str!("../scripts/gpu-run.sh");
        for form in CudaForm::ALL {
            for how in ["1", "$"] {
                let set = format!("{}={how}", form.variable());
                assert!(script.contains(&set), "scripts/gpu-run.sh never sets {set}");
            }
        }
    }

    #[test]
    fn every_form_has_its_own_variable_and_name() {
        let vars: std::collections::BTreeSet<_> = CudaForm::ALL.iter().map(|f| f.variable()).collect();
        let names: std::collections::BTreeSet<_> = CudaForm::ALL.iter().map(|f| f.name()).collect();
        assert_eq!((vars.len(), names.len()), (CudaForm::ALL.len(), CudaForm::ALL.len()));
    }
}
