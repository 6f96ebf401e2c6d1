//! The fusing engine the fusing passes share (`fuse-welch-peaks`,
//! `fuse-log-mel`): a pass's chain patterns each produce a [`MatchedChain`];
//! the engine prices it against the target's IO gate (`price.rs`), with a
//! device profile picks how it runs (`choose.rs`), describes it for the
//! fusion report (`report.rs`) and carries it out (`rewrite.rs`). The
//! options every fusing pass takes are read in `options.rs`; the front of
//! the spectral chains (frames, window, zero plane, framing) is matched by
//! `spectral_front.rs`. Intermediate results other nodes still use are
//! kept, and priced as kept.

mod chain;
mod choose;
pub mod options;
mod price;
mod report;
mod rewrite;
pub mod spectral_front;

pub use chain::{ChainPattern, MatchedChain};
pub use options::{FUSE_OPTIONS, FuseOptions};
pub use report::form_name;

use crate::analysis::device_profile::DeviceProfile;
use crate::analysis::io_profile::{ProfileRules, profile_with};
use crate::analysis::{CostModel, IoFusionGate, IoProfile, Target};
use crate::diag::Diagnostic;
use crate::fused::{FusedAttrs, PlanName};
use crate::fusion_report::{Candidate, Decision, FusionCandidates};
use crate::ir::{Graph, Op};
use crate::pass::{PassContext, Statistic, Statistics};
use crate::rewrite::{Pattern, Rewriter, apply_patterns_greedily};
use rewrite::apply;

/// Run the fusing pass `pass` with `options` and its chain `patterns` on `graph`.
pub fn run(pass: &'static str, options: &FuseOptions, patterns: &[&dyn Pattern<Fuser>], graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic> {
    let target = match (&options.device, options.target) {
        (Some(device), None) => device.target_kind().unwrap_or(cx.target),
        (_, target) => target.unwrap_or(cx.target),
    };
    if let Some(measured) = options.device.as_ref().and_then(|d| d.target_kind()).filter(|m| *m != target) {
        return Err(Diagnostic::whole_file(format!("{pass}: the profile measured a {measured} device, the pass targets {target}")));
    }
    let rules = ProfileRules { count_view_outputs: options.model == CostModel::Corrected };
    let mut fuser = Fuser {
        graph_name: graph.name.clone(),
        target,
        gate: options.gate(target),
        rules,
        force: options.force,
        device: options.device.clone(),
        force_plan: options.force_plan,
        native_kernels: options.native_kernels,
        drop_spectrum_output: options.drop_spectrum_output,
        profile: profile_with(graph, rules),
        report: cx.results::<FusionCandidates>().is_some(),
        decisions: Vec::new(),
        candidates: Vec::new(),
        last_op: None,
    };
    let rewritten = apply_patterns_greedily(graph, patterns, &mut fuser)?;
    let count = |d: Decision| fuser.decisions.iter().filter(|x| **x == d).count() as u64;
    let stats = vec![
        Statistic { name: "candidates", description: "Chains whose root op was found", value: fuser.decisions.len() as u64 },
        Statistic { name: "fused", description: "Chains fused because the gate accepted them", value: count(Decision::Fused) },
        Statistic { name: "forced", description: "Chains fused by force=true against the gate", value: count(Decision::Forced) },
        Statistic { name: "rejected", description: "Chains the gate rejected", value: count(Decision::Rejected) },
        Statistic { name: "not-matched", description: "Roots whose chain is not a fusable form", value: count(Decision::NotMatched) },
        Statistic { name: "nodes-removed", description: "Nodes the rewrites left unused, removed", value: rewritten.nodes_removed },
    ];
    if let Some(report) = cx.results::<FusionCandidates>() {
        report.0.append(&mut fuser.candidates);
    }
    Ok(stats)
}

/// What a pass's patterns share: the gate, the running profile, the report.
pub struct Fuser {
    graph_name: String,
    target: Target,
    gate: IoFusionGate,
    rules: ProfileRules,
    force: bool,
    device: Option<std::sync::Arc<DeviceProfile>>,
    force_plan: Option<PlanName>,
    native_kernels: bool,
    drop_spectrum_output: bool,
    /// The profile of the graph as it stands, kept up to date as chains fuse,
    /// so each candidate is priced in O(chain) rather than O(graph).
    profile: IoProfile,
    /// Describe every candidate (only when a report was asked for: at 10^5
    /// chains the descriptions cost more than the matching).
    report: bool,
    decisions: Vec<Decision>,
    candidates: Vec<Candidate>,
    /// The last fused op built, reused while the attributes repeat.
    last_op: Option<(FusedAttrs, Op)>,
}

impl Fuser {
    /// Price `chain`, record the decision, and rewrite when it is to fuse.
    fn decide(&mut self, rw: &mut Rewriter<'_>, mut chain: MatchedChain) -> bool {
        let mut priced = self.price(rw, &chain);
        let choice = self.choose(rw, &mut chain, &priced);
        if choice.is_some() {
            // The pick may change the op's plan or lowering: price what is built.
            priced = self.price(rw, &chain);
        }
        let fuse = match &choice {
            Some(c) if !priced.before.saturated() && !priced.after.saturated() => c.fuse,
            _ => priced.score.fuse,
        };
        let decision = match (fuse, self.force) {
            (true, _) => Decision::Fused,
            (false, true) => Decision::Forced,
            (false, false) => Decision::Rejected,
        };
        self.decisions.push(decision);
        let mut candidate = self.report.then(|| self.describe(rw, &chain, &priced, decision, choice.as_ref()));
        let fuse = decision != Decision::Rejected;
        if fuse {
            let fused = apply(rw, &chain, priced.fused_op, priced.fused_ty, &priced.dropped);
            self.profile = priced.after;
            if let Some(c) = &mut candidate {
                c.fused_node = Some(format!("%{}", rw.node(fused).label));
            }
        }
        self.candidates.extend(candidate);
        fuse
    }
}
