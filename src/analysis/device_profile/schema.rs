//! The profile's fields, as `rlx-run --calibrate` writes them (JSON).

use crate::analysis::Target;
use crate::fused::PlanName;
use serde::{Deserialize, Serialize};

/// A plan's name, which must be a string: serde_json reads an enum from
/// anything else as "expected value", naming neither the field nor what
/// it holds (an adversarial run); through a string it says "invalid type:
/// integer `0`, expected a string", or lists the plans for an unknown one.
fn plan_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PlanName, D::Error> {
    use serde::de::IntoDeserializer;
    let name = String::deserialize(d)?;
    PlanName::deserialize(name.into_deserializer())
}

/// The `format` a profile file carries.
pub const FORMAT: &str = "rlx-opt device profile 2";

/// One FFT length as the device runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FftCost {
    pub n_fft: u64,
    /// The plan that ran it (`batch`, or `multipass` past workgroup memory).
    #[serde(deserialize_with = "plan_name")]
    pub plan: PlanName,
    /// Once a call, before any work: planning the FFT, finding the pipeline.
    #[serde(default)]
    pub setup_ns: f64,
    /// One worker: one pair of segments through the FFT, its power added.
    pub pair_ns: f64,
    /// One worker: the top-k of one entry, `topk_base_ns + k · topk_per_k_ns`.
    pub topk_base_ns: f64,
    pub topk_per_k_ns: f64,
}

/// The k the unfused chain's line is measured at.
pub const UNFUSED_CALIBRATION_K: u64 = 4;

/// The unfused chain as the target's runtime (RLX's Session) runs it, at
/// one FFT length: a graph run's fixed cost and each segment's, at
/// [`UNFUSED_CALIBRATION_K`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnfusedCost {
    pub n_fft: u64,
    pub call_ns: f64,
    pub segment_ns: f64,
    /// Each entry's top-k, per peak past the line's k: RLX's TopK costs
    /// with k (4 entries of one segment at n_fft 256 took 24 µs at k 4 and
    /// 66 µs at k 64 here). Profiles without it price every k as the line's.
    #[serde(default)]
    pub topk_per_k_ns: f64,
}

/// The mel count the log-mel line is measured at (Whisper's).
pub const LOG_MEL_CALIBRATION_MELS: u64 = 80;

/// The fused log-mel op at one FFT length, as the device runs it (its
/// native kernel): one worker taking one frame through the FFT, the power,
/// [`LOG_MEL_CALIBRATION_MELS`] bands and their logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogMelCost {
    pub n_fft: u64,
    pub frame_ns: f64,
}

/// RLX running the log-mel chain unfused (frames → `Concat` → `Fft` →
/// `LogMel`, [`LOG_MEL_CALIBRATION_MELS`] mels) at one FFT length: a
/// run's fixed cost and each frame's, the line through runs of growing
/// frame counts in RLX's own Session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnfusedLogMelCost {
    pub n_fft: u64,
    pub call_ns: f64,
    pub frame_ns: f64,
}

/// A measured device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    pub format: String,
    /// `cpu`, `wgpu` or `cuda`.
    pub target: String,
    /// The device, as its driver names it.
    pub device: String,
    /// Work items a split plan aims for (CPU tasks, workgroups): its chunks.
    pub parallelism: u64,
    /// Work items the device runs at the same time (CPU threads, lavapipe's
    /// threads, a GPU's resident workgroups): the width of a wave.
    pub workers: u64,
    /// Loop iterations one kernel invocation may run (see `DeviceLimits`).
    pub max_loop_iterations: u64,
    /// A call of the fused op with almost nothing to do, end to end.
    pub call_ns: f64,
    /// What a call adds when its work spreads over more than one worker
    /// (waking a CPU pool's threads).
    #[serde(default)]
    pub spread_ns: f64,
    /// Each launch a call makes beyond its first.
    pub pass_ns: f64,
    /// Bytes per ns: host to device and back (0: the device is the host),
    /// and the device reading its own memory.
    pub upload_bw: f64,
    pub readback_bw: f64,
    pub memory_bw: f64,
    /// Per FFT length, ascending.
    pub fft: Vec<FftCost>,
    /// Each plan on a small grid after the fit: measured and predicted.
    #[serde(default)]
    pub checks: Vec<PlanCheck>,
    /// RLX running the chain unfused, per FFT length (measured where
    /// rlx-run has RLX, the `rlx` feature; else the chain's IO profile and
    /// this device's FFT throughput stand in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfused: Vec<UnfusedCost>,
    /// The fused log-mel op per FFT length, ascending. A profile without
    /// it (calibrated before the op had a line) leaves log-mel to the gate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_mel: Vec<LogMelCost>,
    /// RLX running the log-mel chain unfused, per FFT length (where rlx-run
    /// has RLX; else the chain's IO profile and this device's FFT
    /// throughput stand in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfused_log_mel: Vec<UnfusedLogMelCost>,
    /// A GPU's host CPU, measured with it: what a host call of the fused op
    /// costs. (Written `host` in the file.)
    #[serde(rename = "host", default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<Box<DeviceProfile>>,
}

/// One plan on one shape, measured after calibration and predicted by the
/// fitted profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanCheck {
    #[serde(deserialize_with = "plan_name")]
    pub plan: PlanName,
    pub batch: u64,
    pub segments: u64,
    pub n_fft: u64,
    pub k: u64,
    pub measured_ms: f64,
    pub predicted_ms: f64,
}

impl DeviceProfile {
    pub fn target_kind(&self) -> Option<Target> {
        Target::from_name(&self.target).filter(|t| matches!(t, Target::Cpu | Target::Wgpu | Target::Cuda))
    }
}
