//! A device measured by `rlx-run --calibrate`, and what it predicts: the
//! time of each way to run a matched chain (unfused as the target runs it,
//! each fused plan, a host call), from the profile's IO and compute terms.
//!
//! The log-mel op (one way to run: no plans) on R frames of n_fft: `call_ns`,
//! then ⌈R / workers⌉ waves of `frame_ns(n_fft)` (measured at 80 mels)
//! overlapping the frames' reads at `memory_bw`; unfused, the chain's IO
//! profile and one complex FFT of n_fft per frame at this device's
//! `pair_ns` (RLX transforms `[x | 0]`, a pair's worth) where no RLX line
//! was measured, else RLX's line: a run's fixed cost and each frame's.
//!
//! The model of one fused-op call on a shape of B entries of S segments
//! (P = ⌈S/2⌉ pairs, each one complex FFT of n_fft) and k peaks:
//! - work items: B (batch plans) or B·chunks (split plans), each taking q
//!   pairs at `pair_ns(n_fft)`, then its top-k (`topk_base_ns + k ·
//!   topk_per_k_ns`) or, split, its partial spectrum;
//! - the items run in ⌈items / workers⌉ waves; a split plan then sums
//!   the chunks and takes each entry's top-k;
//! - `call_ns` per call, `pass_ns` per further launch; the work overlaps
//!   reading the input at `memory_bw` (the larger of the two counts); the
//!   input moved at `upload_bw` and the result at `readback_bw` where the
//!   device is not the host.
//!
//! Every constant is measured on the device, none assumed: see
//! `runtime::calibrate`.
//!
//! One job a file: the profile's fields (`schema`), the rules a usable one
//! keeps (`check`), reading one from a file (`file`), the log-log
//! interpolation between measured lengths (`interpolate`), and the model
//! that predicts each alternative (`model`).


mod check;
mod file;
mod interpolate;
mod model;
mod schema;

pub use check::InvalidProfile;
pub use file::{MAX_PROFILE_BYTES, ProfileError};
pub use model::{Alternative, Prediction};
pub use schema::{DeviceProfile, FORMAT, FftCost, LOG_MEL_CALIBRATION_MELS, LogMelCost, PlanCheck, UNFUSED_CALIBRATION_K, UnfusedCost, UnfusedLogMelCost};

#[cfg(test)]
use crate::fused::PlanName;

#[cfg(test)]
pub(crate) fn example() -> DeviceProfile {
    DeviceProfile {
        format: FORMAT.into(),
        target: "cpu".into(),
        device: "test".into(),
        parallelism: 8,
        workers: 2,
        max_loop_iterations: u64::MAX,
        call_ns: 20_000.0,
        spread_ns: 0.0,
        pass_ns: 5_000.0,
        upload_bw: 0.0,
        readback_bw: 0.0,
        memory_bw: 10.0,
        fft: [64u64, 256, 1024].iter().map(|n| FftCost { n_fft: *n, plan: PlanName::Batch, setup_ns: 0.0, pair_ns: *n as f64 * 4.0, topk_base_ns: *n as f64, topk_per_k_ns: 10.0 }).collect(),
        checks: Vec::new(),
        unfused: Vec::new(),
        log_mel: [256u64, 400, 1024].iter().map(|n| LogMelCost { n_fft: *n, frame_ns: *n as f64 * 3.0 }).collect(),
        unfused_log_mel: Vec::new(),
        host_cpu: None,
    }
}

