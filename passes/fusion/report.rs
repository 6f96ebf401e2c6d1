//! The fusion report's entry for each root: what matched, what was decided, why.

use super::price::Priced;
use super::{Fuser, MatchedChain};
use crate::analysis::picker::ProfileChoice;
use crate::fused::ChainForm;
use crate::fusion_report::{Candidate, Decision};
use crate::ir::NodeId;
use crate::matcher::Miss;
use crate::rewrite::Rewriter;

impl Fuser {
    fn candidate(&self, rw: &Rewriter<'_>, form: &'static str, root: NodeId, nodes: &[NodeId]) -> Candidate {
        let g = rw.graph();
        Candidate {
            graph: self.graph_name.clone(),
            form,
            root: format!("%{}", g.node(root).label),
            nodes: nodes.iter().map(|n| format!("%{}", g.node(*n).label)).collect(),
            names: nodes.iter().filter_map(|n| g.node(*n).name.clone()).collect(),
            target: self.target,
            model: self.gate.model,
            decision: Decision::NotMatched,
            reason: String::new(),
            before: None,
            after: None,
            benefit: None,
            gate: None,
            fused_attrs: None,
            fused_node: None,
            plan: None,
            plan_reason: None,
            predictions: Vec::new(),
            profile_device: None,
        }
    }

    /// Record a root whose chain did not match.
    pub(super) fn near_miss(&mut self, rw: &Rewriter<'_>, form: &'static str, root: NodeId, miss: Miss) {
        self.decisions.push(Decision::NotMatched);
        if self.report {
            let nodes = if miss.node == root { vec![root] } else { vec![root, miss.node] };
            let mut c = self.candidate(rw, form, root, &nodes);
            c.reason = miss.reason;
            self.candidates.push(c);
        }
    }

    /// The report's entry for a priced chain.
    pub(super) fn describe(&self, rw: &Rewriter<'_>, chain: &MatchedChain, priced: &Priced, decision: Decision, choice: Option<&ProfileChoice>) -> Candidate {
        let mut c = self.candidate(rw, chain.form, chain.root, &chain.matched);
        let score = &priced.score;
        let mut kept_note = if priced.kept > 0 { format!("; {} node(s) of the chain stay for other users", priced.kept) } else { String::new() };
        if let Some(note) = &chain.lowering_note {
            kept_note.push_str(&format!("; runs as a host call: {note}"));
        }
        let unpriceable = priced.before.saturated() || priced.after.saturated();
        c.reason = match decision {
            _ if unpriceable => format!("the graph's byte counts overflow 64 bits: the gate cannot price this chain{}{kept_note}", if decision == Decision::Forced { "; fused because force=true" } else { "" }),
            Decision::Fused | Decision::Rejected if choice.is_some() => format!("{}{kept_note}", choice.map(ProfileChoice::reason).unwrap_or_default()),
            Decision::Forced if choice.is_some() => format!("force=true; {}{kept_note}", choice.map(ProfileChoice::reason).unwrap_or_default()),
            Decision::Fused => format!("score {:.1} ns ≥ min-gain {:.1} ns{kept_note}", score.score_ns, score.min_gain_ns),
            Decision::Forced => {
                format!("force=true; the gate alone would not fuse (score {:.1} ns < {:.1} ns){kept_note}", score.score_ns, score.min_gain_ns)
            }
            _ => format!("score {:.1} ns < min-gain {:.1} ns{kept_note}", score.score_ns, score.min_gain_ns),
        };
        c.decision = decision;
        c.before = Some(priced.before);
        c.after = Some(priced.after);
        c.benefit = Some(priced.benefit);
        c.gate = Some(priced.score);
        c.fused_attrs = serde_json::to_value(&chain.attrs).ok();
        c.plan = chain.pick.as_ref().map(|p| p.plan);
        c.plan_reason = chain.pick.as_ref().map(|p| p.reason.clone());
        c.predictions = choice.map(|c| c.predictions.clone()).unwrap_or_default();
        c.profile_device = choice.map(|c| c.device.clone());
        c
    }
}

pub const fn form_name(form: ChainForm) -> &'static str {
    match form {
        ChainForm::WelchPeaks => "welch_peaks",
        ChainForm::SpectrogramTopk => "spectrogram_topk",
    }
}
