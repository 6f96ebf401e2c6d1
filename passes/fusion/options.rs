//! The options every fusing pass takes (`fuse-welch-peaks`, `fuse-log-mel`):
//! the gate's knobs, the model, the device profile (`profile=PATH`, read and
//! checked here), forcing. Each pass lists [`FUSE_OPTIONS`] and reads them
//! with [`read`].

use crate::analysis::device_profile::DeviceProfile;
use crate::analysis::{CostModel, GateKnob, IoFusionGate, Target};
use crate::fused::PlanName;
use crate::pass::{OptionError, OptionSpec, PassOptions};

/// The options of a fusing pass, in `--help` order.
pub const FUSE_OPTIONS: &[OptionSpec] = &[
        OptionSpec { name: "target", help: "target whose gate decides", default: "--target" },
        OptionSpec { name: "dispatch-ns", help: "cost of a kernel launch", default: "per target" },
        OptionSpec { name: "roundtrip-ns", help: "cost of a host sync", default: "per target" },
        OptionSpec { name: "memory-bw", help: "device memory bandwidth, bytes/ns", default: "per target" },
        OptionSpec { name: "readback-bw", help: "host readback bandwidth, bytes/ns", default: "per target" },
        OptionSpec { name: "unified", help: "host and device share memory (true|false)", default: "per target" },
        OptionSpec { name: "thunk-penalty-ns", help: "penalty per added host thunk", default: "per target" },
        OptionSpec { name: "min-gain-ns", help: "fuse when the score reaches this", default: "per target" },
        OptionSpec { name: "model", help: "rlx (RLX's formula) or corrected (unified readback at memory bandwidth)", default: "rlx" },
        OptionSpec { name: "force", help: "fuse every matched chain whatever the gate says (still reported)", default: "false" },
        OptionSpec {
            name: "native-kernels",
            help: "the runtime has the target's native kernels for the fused op; false prices and lowers every fused op as a host call (RLX's Metal, MLX, ROCm)",
            default: "true",
        },
        OptionSpec {
            name: "profile",
            help: "a device profile from `rlx-run --calibrate` (JSON): fuse where a fused plan is predicted faster than the chain, and pick the fastest plan",
            default: "none: the gate (model) decides, the rule picks",
        },
        OptionSpec {
            name: "force-plan",
            help: "run every fused op with this plan where it runs on the target: batch, split (any target), multipass, split-multipass (GPUs)",
            default: "picked per op",
        },
        OptionSpec {
            name: "drop-spectrum-output",
            help: "remove a fused chain's spectrum from the graph outputs (RLX's peaks-only readback; changes the interface)",
            default: "false",
        },
];

/// The largest value a gate knob takes (ns, or bytes per ns).
const MAX_KNOB: f64 = 1e15;

/// A fusing pass's options from `options`, errors naming the pass `pass`.
pub fn read(pass: &'static str, options: &PassOptions) -> Result<FuseOptions, OptionError> {
    let mut gate_overrides: Vec<(GateKnob, f64)> = Vec::new();
    for knob in GateKnob::ALL {
        let key = knob.option();
        if let Some(v) = options.get(key) {
            let value: f64 = v.parse().map_err(|_| OptionError::NotANumber { pass, key, value: v.into() })?;
            // Bounded so that every term of the score stays finite: byte
            // counts reach 1.8e19, and 1e15 ns is eleven days. A bandwidth
            // starts at 1 byte/ns: RLX's formula takes less as 1, and a
            // value it would silently change is refused instead.
            let (least, range) = match knob {
                GateKnob::MemoryBw | GateKnob::ReadbackBw => (1.0, "1..=1e15 (bytes/ns; RLX's cost model takes less as 1)"),
                _ => (0.0, "0..=1e15"),
            };
            if !(least..=MAX_KNOB).contains(&value) {
                return Err(OptionError::OutOfRange { pass, key, value: v.into(), range });
            }
            gate_overrides.push((knob, value));
        }
    }
    let flag = |key: &str| -> Result<Option<bool>, OptionError> {
        options
            .get(key)
            .map(|v| v.parse::<bool>().map_err(|_| OptionError::NotABool { pass, key: key.into(), value: v.into() }))
            .transpose()
    };
    let model = match options.get("model") {
        None => CostModel::Rlx,
        Some(m) => CostModel::from_name(m).ok_or_else(|| OptionError::UnknownModel { name: m.into(), expected: "rlx or corrected" })?,
    };
    let force_plan = match options.get("force-plan") {
        None => None,
        Some(name) => Some(PlanName::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = PlanName::ALL.iter().map(|p| p.name()).collect();
            OptionError::UnknownPlan { name: name.into(), key: "force-plan", expected: names.join(", ") }
        })?),
    };
    let target = options.target()?;
    let device = match options.get("profile") {
        None => None,
        Some(path) => {
            let profile = DeviceProfile::load(path)?;
            if let (Some(t), Some(measured)) = (target, profile.target_kind()) && t != measured {
                return Err(OptionError::ProfileTarget { pass, path: path.into(), measured, target: t });
            }
            Some(std::sync::Arc::new(profile))
        }
    };
    Ok(FuseOptions {
        device,
        force_plan,
        target,
        gate_overrides,
        unified: flag("unified")?,
        model,
        force: flag("force")?.unwrap_or(false),
        native_kernels: flag("native-kernels")?.unwrap_or(true),
        drop_spectrum_output: flag("drop-spectrum-output")?.unwrap_or(false),
    })
}

/// What a fusing pass was asked to do.
#[derive(Clone)]
pub struct FuseOptions {
    pub target: Option<Target>,
    /// `profile=PATH`: the measured device that decides and picks.
    pub device: Option<std::sync::Arc<DeviceProfile>>,
    /// `force-plan=NAME`: the plan of every fused op, where it runs.
    pub force_plan: Option<PlanName>,
    gate_overrides: Vec<(GateKnob, f64)>,
    unified: Option<bool>,
    pub model: CostModel,
    pub force: bool,
    /// False where the runtime has no native kernel for the target: every
    /// fused op is then a host call, and priced as one.
    pub native_kernels: bool,
    pub drop_spectrum_output: bool,
}

impl FuseOptions {
    /// The gate for `target` with this pass's overrides applied.
    pub fn gate(&self, target: Target) -> IoFusionGate {
        let mut gate = IoFusionGate { model: self.model, ..IoFusionGate::for_target(target) };
        for (knob, value) in &self.gate_overrides {
            gate = gate.with(*knob, *value);
        }
        if let Some(unified) = self.unified {
            gate.unified = unified;
        }
        gate
    }
}

