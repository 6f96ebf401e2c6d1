//! Carrying out a fusion: the fused node, its views, the chain's uses rewired.

use super::price::view_type;
use super::{Fuser, MatchedChain};
use crate::fused::FusedAttrs;
use crate::ir::{NodeId, Op, OpKind, TensorType};
use crate::rewrite::Rewriter;

impl Fuser {
    /// The fused op for `attrs`, sharing its text with the previous one when equal.
    pub(super) fn fused_op(&mut self, attrs: &FusedAttrs) -> Op {
        match &self.last_op {
            Some((a, op)) if a == attrs => op.clone(),
            _ => {
                let op = Op::from_fused(attrs);
                self.last_op = Some((attrs.clone(), op.clone()));
                op
            }
        }
    }
}

/// Build the fused node and its views and rewire the chain's results to them.
pub(super) fn apply(rw: &mut Rewriter<'_>, chain: &MatchedChain, op: Op, ty: TensorType, dropped: &[NodeId]) -> NodeId {
    rw.set_insertion_point(chain.root);
    let mut operands = vec![chain.input];
    operands.extend(chain.filters);
    if let Some(w) = chain.window {
        let frame_len = chain.attrs.frame_len();
        let window_ty = &rw.node(w).ty;
        let window = if window_ty.rank() == 1 {
            w
        } else {
            let flat = TensorType::new(&[frame_len], window_ty.dtype);
            rw.create(Op::from_kind(OpKind::Reshape { new_shape: vec![frame_len as i64] }), &[w], flat)
        };
        operands.push(window);
    }
    let fused = rw.create(op, &operands, ty.clone());
    for (root, view) in &chain.replacements {
        let replacement = match view {
            None => fused,
            Some((start, len)) => {
                let axis = ty.rank() as u64 - 1;
                rw.create(Op::from_kind(OpKind::Narrow { axis, start: *start, len: *len }), &[fused], view_type(&ty, *len))
            }
        };
        rw.replace_all_uses(*root, replacement);
    }
    for d in dropped {
        rw.remove_output(*d);
    }
    fused
}
