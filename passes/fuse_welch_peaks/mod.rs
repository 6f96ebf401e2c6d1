//! `fuse-welch-peaks`: find FFT → Welch-peaks chains, ask the target's IO
//! gate whether fusing each one pays, and replace the ones it accepts with
//! one `rlx_opt.welch_peaks` op (see `src/fused.rs` for its meaning).
//!
//! Two chain forms, one file each: RLX's own `WelchPeaks` op (`native.rs`),
//! and the spectrogram + mean + TopK chain RLX users build from primitives
//! (`spectrogram.rs`). Both produce a [`MatchedChain`]; the pass prices it
//! (`price.rs`), with a device profile picks how it runs (`choose.rs`),
//! describes it for the fusion report (`report.rs`) and carries it out
//! (`rewrite.rs`). The pass's options are read in `options.rs`.
//! Intermediate results other nodes still use are kept, and priced as kept.

mod chain;
mod choose;
mod native;
mod options;
mod price;
mod report;
mod rewrite;
mod spectrogram;

pub use chain::{ChainPattern, MatchedChain, fft_norm, power_scale, zero_plane};
pub use options::{FuseWelchPeaks, INFO};
pub use report::form_name;

use crate::analysis::device_profile::DeviceProfile;
use crate::analysis::io_profile::{ProfileRules, profile_with};
use crate::analysis::{CostModel, IoFusionGate, IoProfile, Target};
use crate::diag::Diagnostic;
use crate::fused::{PlanName, WelchPeaksAttrs};
use crate::fusion_report::{Candidate, Decision, FusionCandidates};
use crate::ir::{Graph, Op};
use crate::pass::{Pass, PassContext, Statistic, Statistics};
use crate::rewrite::{Pattern, Rewriter, apply_patterns_greedily};
use rewrite::apply;

impl Pass for FuseWelchPeaks {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&self, graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic> {
        let target = match (&self.device, self.target) {
            (Some(device), None) => device.target_kind().unwrap_or(cx.target),
            (_, target) => target.unwrap_or(cx.target),
        };
        if let Some(measured) = self.device.as_ref().and_then(|d| d.target_kind()).filter(|m| *m != target) {
            return Err(Diagnostic::whole_file(format!("fuse-welch-peaks: the profile measured a {measured} device, the pass targets {target}")));
        }
        let rules = ProfileRules { count_view_outputs: self.model == CostModel::Corrected };
        let mut fuser = Fuser {
            graph_name: graph.name.clone(),
            target,
            gate: self.gate(target),
            rules,
            force: self.force,
            device: self.device.clone(),
            force_plan: self.force_plan,
            native_kernels: self.native_kernels,
            drop_spectrum_output: self.drop_spectrum_output,
            profile: profile_with(graph, rules),
            report: cx.results::<FusionCandidates>().is_some(),
            decisions: Vec::new(),
            candidates: Vec::new(),
            last_op: None,
        };
        let patterns: [&dyn Pattern<Fuser>; 2] = [&native::PATTERN, &spectrogram::PATTERN];
        let rewritten = apply_patterns_greedily(graph, &patterns, &mut fuser)?;
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
}

/// What the two patterns share: the gate, the running profile, the report.
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
    last_op: Option<(WelchPeaksAttrs, Op)>,
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
