//! Analyses over the IR: RLX's IO profile, the fusion gate built on it, and
//! the lowering plan both pricing and the back ends use, and the picker
//! that names the plan of each fused op.

pub mod device_profile;
pub mod gate;
pub mod io_profile;
pub mod loop_budget;
pub mod picker;
pub mod plan;
pub mod target;

pub use gate::{CostModel, FusionBenefit, GateKnob, GateScore, IoFusionGate, fusion_benefit};
pub use io_profile::{IoProfile, ProfileRules, node_profile, profile, profile_with};
pub use plan::{DeviceLimits, FftPasses, KernelGeometry, Plan, Unsupported, plan};
pub use target::Target;
