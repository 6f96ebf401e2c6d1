//! RLX's IO fusion gate (`rlx_compile::IoFusionGate`): is a rewrite from one
//! IO profile to another worth it on a target?
//!
//! The score in ns is
//! `launches·dispatch + syncs·roundtrip + device_bytes/memory_bw + readback_bytes/rb`
//! over the signed savings, minus `thunk_penalty` per sync point the rewrite
//! adds; fuse when it reaches `min_gain`.
//!
//! RLX's formula has a flaw kept here on purpose, as the default, so that
//! decisions match RLX: with unified memory RLX sets `rb = 0` and divides by
//! `max(rb, 1)`, charging 1 ns per byte read back, the *most* expensive rate
//! rather than the cheapest. [`CostModel::Corrected`] charges unified-memory
//! readback at the memory bandwidth instead; every report names the model used.

use super::io_profile::IoProfile;
use super::target::Target;
use serde::Serialize;

/// Which readback term the score uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostModel {
    /// RLX's formula, flaw included: decisions match RLX.
    #[default]
    Rlx,
    /// Unified-memory readback costs bytes / memory bandwidth.
    Corrected,
}

impl CostModel {
    pub fn from_name(name: &str) -> Option<CostModel> {
        match name {
            "rlx" => Some(CostModel::Rlx),
            "corrected" => Some(CostModel::Corrected),
            _ => None,
        }
    }
}

/// Predicted savings from `before` to `after`; positive means the rewrite helps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FusionBenefit {
    pub launches_saved: i64,
    pub sync_points_saved: i64,
    pub host_readback_bytes_saved: i64,
    pub device_traffic_bytes_saved: i64,
}

/// Signed difference of two profiles. Like RLX, readback savings are taken
/// from the output bytes.
pub fn fusion_benefit(before: &IoProfile, after: &IoProfile) -> FusionBenefit {
    let diff = |a: u64, b: u64| (a as i128 - b as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    FusionBenefit {
        launches_saved: diff(before.kernel_launches, after.kernel_launches),
        sync_points_saved: diff(before.sync_points, after.sync_points),
        host_readback_bytes_saved: diff(before.host_output_bytes, after.host_output_bytes),
        device_traffic_bytes_saved: diff(before.device_traffic_bytes, after.device_traffic_bytes),
    }
}

/// The gate's knobs. Bandwidths are in bytes per ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IoFusionGate {
    pub dispatch_ns: f64,
    pub roundtrip_ns: f64,
    pub memory_bw: f64,
    pub readback_bw: f64,
    pub unified: bool,
    pub thunk_penalty_ns: f64,
    pub min_gain_ns: f64,
    pub model: CostModel,
}

/// A numeric knob of the gate a pass option may override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateKnob {
    DispatchNs,
    RoundtripNs,
    MemoryBw,
    ReadbackBw,
    ThunkPenaltyNs,
    MinGainNs,
}

impl GateKnob {
    pub const ALL: [GateKnob; 6] =
        [GateKnob::DispatchNs, GateKnob::RoundtripNs, GateKnob::MemoryBw, GateKnob::ReadbackBw, GateKnob::ThunkPenaltyNs, GateKnob::MinGainNs];

    /// The pass option that sets it (`dispatch-ns`, …).
    pub fn option(self) -> &'static str {
        match self {
            GateKnob::DispatchNs => "dispatch-ns",
            GateKnob::RoundtripNs => "roundtrip-ns",
            GateKnob::MemoryBw => "memory-bw",
            GateKnob::ReadbackBw => "readback-bw",
            GateKnob::ThunkPenaltyNs => "thunk-penalty-ns",
            GateKnob::MinGainNs => "min-gain-ns",
        }
    }
}

impl IoFusionGate {
    /// The gate with `knob` set to `value` (−0 as 0: the report printed
    /// `min-gain-ns=-0` as `-0.0`, an adversarial run).
    pub fn with(mut self, knob: GateKnob, value: f64) -> IoFusionGate {
        let value = value + 0.0;
        *match knob {
            GateKnob::DispatchNs => &mut self.dispatch_ns,
            GateKnob::RoundtripNs => &mut self.roundtrip_ns,
            GateKnob::MemoryBw => &mut self.memory_bw,
            GateKnob::ReadbackBw => &mut self.readback_bw,
            GateKnob::ThunkPenaltyNs => &mut self.thunk_penalty_ns,
            GateKnob::MinGainNs => &mut self.min_gain_ns,
        } = value;
        self
    }
}

/// Each term of a gate decision, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GateScore {
    pub launch_ns: f64,
    pub sync_ns: f64,
    pub device_traffic_ns: f64,
    pub readback_ns: f64,
    pub thunk_penalty_ns: f64,
    pub score_ns: f64,
    pub min_gain_ns: f64,
    pub fuse: bool,
    pub model: CostModel,
}

impl IoFusionGate {
    /// RLX's per-target defaults.
    pub fn for_target(target: Target) -> IoFusionGate {
        let (dispatch_ns, roundtrip_ns, memory_bw, readback_bw, unified, thunk_penalty_ns, min_gain_ns) = match target {
            Target::Metal | Target::Mlx => (500.0, 5_000.0, 200.0, 200.0, true, 2_000_000.0, 1_000.0),
            Target::Cuda | Target::Rocm => (2_000.0, 20_000.0, 800.0, 50.0, false, 15_000_000.0, 5_000.0),
            Target::Wgpu | Target::Tpu => (3_000.0, 30_000.0, 100.0, 40.0, false, 25_000_000.0, 10_000.0),
            Target::Cpu => (50.0, 0.0, 50.0, 50.0, true, 0.0, 0.0),
        };
        IoFusionGate { dispatch_ns, roundtrip_ns, memory_bw, readback_bw, unified, thunk_penalty_ns, min_gain_ns, model: CostModel::Rlx }
    }

    /// The bandwidth readback bytes are divided by.
    fn readback_rate(&self) -> f64 {
        match (self.model, self.unified) {
            (_, false) => self.readback_bw.max(1.0),
            // RLX: rb = 0 for unified memory, then max(rb, 1) = 1 B/ns.
            (CostModel::Rlx, true) => 1.0,
            (CostModel::Corrected, true) => self.memory_bw.max(1.0),
        }
    }

    pub fn score(&self, benefit: &FusionBenefit) -> GateScore {
        let launch_ns = benefit.launches_saved as f64 * self.dispatch_ns;
        let sync_ns = benefit.sync_points_saved as f64 * self.roundtrip_ns;
        let device_traffic_ns = benefit.device_traffic_bytes_saved as f64 / self.memory_bw.max(1.0);
        let readback_ns = benefit.host_readback_bytes_saved as f64 / self.readback_rate();
        let added_syncs = (-benefit.sync_points_saved).max(0) as f64;
        let thunk_penalty_ns = added_syncs * self.thunk_penalty_ns;
        let score_ns = launch_ns + sync_ns + device_traffic_ns + readback_ns - thunk_penalty_ns;
        GateScore {
            launch_ns,
            sync_ns,
            device_traffic_ns,
            readback_ns,
            thunk_penalty_ns,
            score_ns,
            min_gain_ns: self.min_gain_ns,
            fuse: score_ns >= self.min_gain_ns,
            model: self.model,
        }
    }

    pub fn should_fuse(&self, before: &IoProfile, after: &IoProfile) -> bool {
        self.score(&fusion_benefit(before, after)).fuse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RLX's own gate cases: a spectrum readback of 32 MiB replaced by 1 MiB of
    /// peaks, at the price of a launch, a host thunk and more device traffic.
    fn rlx_case() -> (IoProfile, IoProfile) {
        let dense = IoProfile { kernel_launches: 3, sync_points: 0, host_output_bytes: 33_554_432, device_traffic_bytes: 184_549_376 };
        let fused = IoProfile { kernel_launches: 4, sync_points: 1, host_output_bytes: 1_048_576, device_traffic_bytes: 219_152_384 };
        (dense, fused)
    }

    #[test]
    fn metal_fuses_welch_peaks() {
        let (dense, fused) = rlx_case();
        let gate = IoFusionGate::for_target(Target::Metal);
        let s = gate.score(&fusion_benefit(&dense, &fused));
        assert_eq!(s.launch_ns, -500.0);
        assert_eq!(s.sync_ns, -5_000.0);
        assert_eq!(s.device_traffic_ns, -34_603_008.0 / 200.0);
        // The flaw: 32,505,856 bytes at 1 B/ns.
        assert_eq!(s.readback_ns, 32_505_856.0);
        assert_eq!(s.thunk_penalty_ns, 2_000_000.0);
        assert!((s.score_ns - 30_327_340.96).abs() < 1e-6, "{}", s.score_ns);
        assert!(s.fuse);
        assert!(gate.should_fuse(&dense, &fused));
    }

    #[test]
    fn wgpu_rejects_welch_peaks() {
        let (dense, fused) = rlx_case();
        let gate = IoFusionGate::for_target(Target::Wgpu);
        let s = gate.score(&fusion_benefit(&dense, &fused));
        assert_eq!(s.readback_ns, 32_505_856.0 / 40.0);
        assert_eq!(s.thunk_penalty_ns, 25_000_000.0);
        assert!((s.score_ns - (-3_000.0 - 30_000.0 - 346_030.08 + 812_646.4 - 25_000_000.0)).abs() < 1e-6);
        assert!(!s.fuse);
        assert!(!gate.should_fuse(&dense, &fused));
    }

    #[test]
    fn corrected_model_prices_unified_readback_at_memory_bandwidth() {
        let (dense, fused) = rlx_case();
        let gate = IoFusionGate { model: CostModel::Corrected, ..IoFusionGate::for_target(Target::Metal) };
        let s = gate.score(&fusion_benefit(&dense, &fused));
        assert_eq!(s.readback_ns, 32_505_856.0 / 200.0);
        // Without the 1 ns/byte readback the thunk penalty dominates.
        assert!(!s.fuse);
        // Non-unified targets score the same under both models.
        let cuda = IoFusionGate::for_target(Target::Cuda);
        let b = fusion_benefit(&dense, &fused);
        assert_eq!(cuda.score(&b).score_ns, IoFusionGate { model: CostModel::Corrected, ..cuda }.score(&b).score_ns);
    }

    /// Every knob sets its own field and only it (an unknown key used to
    /// become `min_gain_ns` silently).
    #[test]
    fn each_knob_sets_its_own_field() {
        let base = IoFusionGate::for_target(Target::Cuda);
        for knob in GateKnob::ALL {
            let g = base.with(knob, 12345.0);
            let fields = [g.dispatch_ns, g.roundtrip_ns, g.memory_bw, g.readback_bw, g.thunk_penalty_ns, g.min_gain_ns];
            assert_eq!(fields.iter().filter(|v| **v == 12345.0).count(), 1, "{knob:?}");
            assert_eq!(GateKnob::ALL.iter().filter(|k| k.option() == knob.option()).count(), 1);
        }
        // −0 is 0, as the report prints it.
        assert!(base.with(GateKnob::MinGainNs, -0.0).min_gain_ns.is_sign_positive());
    }

    /// A restatement of RLX 0.2.19's table (`rlx_compile`'s
    /// `io_fusion_gate_for_target`); RLX's code itself is compared in
    /// `rlx-ext/tests/decisions.rs`, `the_gate_scores_as_rlx_compile_does`.
    #[test]
    fn per_target_defaults_restate_rlx_table() {
        let cpu = IoFusionGate::for_target(Target::Cpu);
        assert_eq!((cpu.dispatch_ns, cpu.roundtrip_ns, cpu.memory_bw, cpu.readback_bw, cpu.unified, cpu.thunk_penalty_ns, cpu.min_gain_ns), (50.0, 0.0, 50.0, 50.0, true, 0.0, 0.0));
        assert_eq!(IoFusionGate::for_target(Target::Rocm), IoFusionGate::for_target(Target::Cuda));
        assert_eq!(IoFusionGate::for_target(Target::Mlx), IoFusionGate::for_target(Target::Metal));
        assert_eq!(IoFusionGate::for_target(Target::Tpu), IoFusionGate::for_target(Target::Wgpu));
    }
}
