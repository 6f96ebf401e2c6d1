//! Analyses over the IR: RLX's IO profile and the fusion gate built on it.

pub mod gate;
pub mod io_profile;

pub use gate::{CostModel, FusionBenefit, GateScore, IoFusionGate, Target, fusion_benefit};
pub use io_profile::{IoProfile, ProfileRules, node_profile, profile, profile_with};
