//! The fusion report: one entry per candidate chain, fused or not, with the
//! numbers and the reason behind the decision. JSON for tools (a stable,
//! deterministic array), a table for people.

use crate::analysis::{CostModel, FusionBenefit, GateScore, IoProfile, Target};
use crate::analysis::device_profile::Prediction;
use crate::fused::PlanName;
use serde::Serialize;
use std::fmt::Write as _;

/// The candidates fusion passes describe when a host asks for them
/// (`PassContext::request::<FusionCandidates>()`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FusionCandidates(pub Vec<Candidate>);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The gate said yes and the chain was rewritten.
    Fused,
    /// `force=true` rewrote it whatever the gate said.
    Forced,
    /// The chain matched but the gate said no.
    Rejected,
    /// The root op was found but the chain around it is not one the pass can fuse.
    NotMatched,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub graph: String,
    /// The chain form (`welch_peaks`, `spectrogram_topk`).
    pub form: &'static str,
    /// The node the match was rooted at (`%4`).
    pub root: String,
    /// Every node of the matched chain, or, for a near miss, the root and the node that broke the match.
    pub nodes: Vec<String>,
    /// Debug names of those nodes, where they have one.
    pub names: Vec<String>,
    pub target: Target,
    pub model: CostModel,
    pub decision: Decision,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<IoProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<IoProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benefit: Option<FusionBenefit>,
    /// Each benefit term in ns, the thunk penalty, the score and the threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateScore>,
    /// The fused op's attributes (as they are, decoded, in its `attrs` bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused_attrs: Option<serde_json::Value>,
    /// The label of the fused node, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused_node: Option<String>,
    /// The plan picked for the fused op (native kernels only), and the
    /// term that decided it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_reason: Option<String>,
    /// With a device profile: every alternative's predicted time, its
    /// terms, and the term that dominates it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub predictions: Vec<Prediction>,
    /// The device whose profile decided, where one did (its predictions
    /// may all be dropped as not finite, `predictions` then empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_device: Option<String>,
}

pub fn to_json(candidates: &[Candidate]) -> String {
    serde_json::to_string_pretty(candidates).expect("reports serialise") + "\n"
}

/// A table, one candidate per line, then the near-miss reasons.
pub fn to_table(candidates: &[Candidate]) -> String {
    use crate::diag::escape_in_line;
    let mut out = String::from("fusion report\n");
    let _ = writeln!(
        out,
        "{:<20} {:<17} {:<8} {:<6} {:<9} {:<11} {:>14} {:>12}  reason",
        "graph", "form", "root", "target", "model", "decision", "score_ns", "min_gain_ns"
    );
    for c in candidates {
        let (score, min) = c.gate.map_or((String::from("-"), String::from("-")), |g| (format!("{:.1}", g.score_ns), format!("{:.1}", g.min_gain_ns)));
        let model = match c.model {
            _ if c.profile_device.is_some() => "profile",
            CostModel::Rlx => "rlx",
            CostModel::Corrected => "corrected",
        };
        let decision = serde_json::to_value(c.decision).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<20} {:<17} {:<8} {:<6} {:<9} {:<11} {:>14} {:>12}  {}",
            c.graph, c.form, c.root, c.target.name(), model, decision, score, min, escape_in_line(&c.reason)
        );
    }
    if candidates.is_empty() {
        out.push_str("(no candidates)\n");
    }
    for c in candidates {
        if let (Some(plan), Some(reason)) = (c.plan, &c.plan_reason) {
            let _ = writeln!(out, "plan of {} {}: {plan} ({})", c.graph, c.root, escape_in_line(reason));
        }
        for p in &c.predictions {
            let _ = writeln!(out, "  predicted for {} {}: {:<22} {:>12.4} ms  ({} dominates)", c.graph, c.root, p.alternative.to_string(), p.ns / 1e6, p.deciding_term);
        }
    }
    // For a terminal: a reason may quote a device profile's `device`, which
    // is whatever the file says (its line breaks escaped in its field above,
    // so that it cannot forge a line of the report).
    crate::diag::escape_invisible(&out)
}
