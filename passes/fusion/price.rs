//! What fusing a matched chain changes in the graph's IO profile, and the
//! gate's score for it.

use super::{Fuser, MatchedChain};
use crate::analysis::io_profile::{node_profile, op_profile};
use crate::analysis::{IoProfile, fusion_benefit};
use crate::ir::{Dim, NodeId, Op, OpKind, TensorType};
use crate::rewrite::Rewriter;

impl Fuser {
    /// The graph's profile with `chain` fused, and the gate's score for it.
    /// Before: the nodes that go, and the outputs that are dropped. After:
    /// the fused node, its views, and dropped outputs as plain nodes.
    pub(super) fn price(&mut self, rw: &Rewriter<'_>, chain: &MatchedChain) -> Priced {
        let dropped: Vec<NodeId> = if self.drop_spectrum_output && rw.is_output(chain.spectrum) {
            vec![chain.spectrum]
        } else {
            Vec::new()
        };
        let roots: Vec<NodeId> = chain.replacements.iter().map(|(r, _)| *r).collect();
        let dead = rw.dead_after_replacing(&roots, &chain.matched, &dropped);
        let g = rw.graph();
        let mut before_local = IoProfile::default();
        let mut after_local = IoProfile::default();
        for &n in &dead {
            before_local = before_local.plus(node_profile(g, n, rw.is_output(n), self.rules));
        }
        // A dropped output that stays computed (something else uses it) costs
        // the same before and after, less its output write.
        for &n in dropped.iter().filter(|d| !dead.contains(d)) {
            before_local = before_local.plus(node_profile(g, n, rw.is_output(n), self.rules));
            after_local = after_local.plus(node_profile(g, n, false, self.rules));
        }
        let fused_op = self.fused_op(&chain.attrs);
        let fused_ty = chain.attrs.result_type(&chain.batch);
        let mut fused_operands = vec![&g.node(chain.input).ty];
        if let Some(f) = chain.filters {
            fused_operands.push(&g.node(f).ty);
        }
        if let Some(w) = chain.window {
            fused_operands.push(&g.node(w).ty);
        }
        let fused_is_output = chain.replacements.iter().any(|(r, view)| view.is_none() && rw.is_output(*r));
        after_local = after_local.plus(op_profile(&fused_op, fused_operands, &fused_ty, fused_is_output, self.rules));
        for (root, view) in &chain.replacements {
            if let Some((_, len)) = view {
                let view_ty = view_type(&fused_ty, *len);
                let narrow = Op::from_kind(OpKind::Narrow { axis: 0, start: 0, len: *len });
                after_local = after_local.plus(op_profile(&narrow, [&fused_ty], &view_ty, rw.is_output(*root), self.rules));
            }
        }
        let before = self.profile;
        let after = before.minus(before_local).plus(after_local);
        let benefit = fusion_benefit(&before, &after);
        let mut score = self.gate.score(&benefit);
        // Byte counts past 2^64 make every term meaningless: never fuse on them.
        if before.saturated() || after.saturated() {
            score.fuse = false;
        }
        let kept = chain.matched.len() - dead.len().min(chain.matched.len());
        Priced { dropped, kept, before, after, chain: before_local, benefit, score, fused_op, fused_ty }
    }
}

/// A chain's price: what the rewrite would change, and the gate's verdict.
pub(super) struct Priced {
    /// Graph outputs the rewrite drops (`drop-spectrum-output`).
    pub dropped: Vec<NodeId>,
    /// Nodes of the chain that stay for other users.
    pub kept: usize,
    pub before: IoProfile,
    pub after: IoProfile,
    /// What the nodes fusing removes cost as they are.
    pub chain: IoProfile,
    pub benefit: crate::analysis::FusionBenefit,
    pub score: crate::analysis::GateScore,
    pub fused_op: Op,
    pub fused_ty: TensorType,
}

pub(super) fn view_type(fused: &TensorType, len: u64) -> TensorType {
    let mut ty = fused.clone();
    if let Some(last) = ty.dims.last_mut() {
        *last = Dim::Static(len);
    }
    ty
}

