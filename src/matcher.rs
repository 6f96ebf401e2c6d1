//! Declarative matchers over ops, operand positions, attributes, shapes and
//! use counts. Each step either narrows the match or says, as a [`Miss`],
//! which node broke it and why: the fusion report shows that reason for
//! near misses.
//!
//! ```
//! # use rlx_opt::{format::rlx_text, matcher::At, ir::{NodeId, OpCode}};
//! let g = rlx_text::parse("graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4, 8] f32\n  %1 = {\"TopK\":{\"k\":2}}(%0) : [4, 2] f32\n  return %1\n}").unwrap();
//! let topk = At::new(&g, NodeId(1)).op(OpCode::TopK).unwrap();
//! let input = topk.operand(0).unwrap().op(OpCode::Input).unwrap();
//! assert_eq!(input.ty().rank(), 2);
//! let miss = At::new(&g, NodeId(1)).op(OpCode::Reduce).map(|_| ()).unwrap_err();
//! assert_eq!(miss.reason, "%1 is `TopK`, not `Reduce`");
//! ```

use crate::ir::{Graph, Node, NodeId, OpCode, OpKind, TensorType};

/// Why a match failed, at which node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    pub node: NodeId,
    pub reason: String,
}

pub type MatchResult<T> = Result<T, Miss>;

/// A position in the graph during a match.
#[derive(Clone, Copy)]
pub struct At<'g> {
    graph: &'g Graph,
    pub id: NodeId,
}

impl<'g> At<'g> {
    pub fn new(graph: &'g Graph, id: NodeId) -> Self {
        At { graph, id }
    }

    pub fn node(&self) -> &'g Node {
        self.graph.node(self.id)
    }

    pub fn kind(&self) -> &'g OpKind {
        self.node().op.kind()
    }

    pub fn ty(&self) -> &'g TensorType {
        &self.node().ty
    }

    /// A miss at this node.
    pub fn miss(&self, reason: impl Into<String>) -> Miss {
        Miss { node: self.id, reason: reason.into() }
    }

    /// The node is a `code` op.
    pub fn op(self, code: OpCode) -> MatchResult<Self> {
        if self.kind().code() == code {
            Ok(self)
        } else {
            Err(self.miss(format!("%{} is `{}`, not `{code:?}`", self.node().label, self.node().op.name())))
        }
    }

    /// The node is a `code` op, with `view` of its attributes (`view` answers
    /// `None` only for other ops).
    pub fn op_with<T>(self, code: OpCode, view: impl FnOnce(&OpKind) -> Option<T>) -> MatchResult<(Self, T)> {
        let at = self.op(code)?;
        match view(at.kind()) {
            Some(value) => Ok((at, value)),
            None => Err(at.miss(format!("%{}: the `{code:?}` op's attributes are not as expected", at.node().label))),
        }
    }

    /// The op's attributes satisfy `pred`, described by `what` for the report.
    pub fn attr(self, what: &str, pred: impl FnOnce(&OpKind) -> bool) -> MatchResult<Self> {
        if pred(self.kind()) { Ok(self) } else { Err(self.miss(format!("`{}` %{}: {what}", self.node().op.name(), self.node().label))) }
    }

    /// The result type satisfies `pred`.
    pub fn shape(self, what: &str, pred: impl FnOnce(&TensorType) -> bool) -> MatchResult<Self> {
        if pred(self.ty()) { Ok(self) } else { Err(self.miss(format!("%{} {}: {what}", self.node().label, self.ty()))) }
    }

    /// The node has exactly `n` operands.
    pub fn arity(self, n: usize) -> MatchResult<Self> {
        let got = self.node().operands.len();
        if got == n { Ok(self) } else { Err(self.miss(format!("%{} has {got} operands, not {n}", self.node().label))) }
    }

    /// Operand `i`.
    pub fn operand(self, i: usize) -> MatchResult<At<'g>> {
        self.node()
            .operands
            .get(i)
            .map(|&id| At { graph: self.graph, id })
            .ok_or_else(|| self.miss(format!("%{} has no operand {i}", self.node().label)))
    }

    /// The node is `other` (the same value used twice, say).
    pub fn same_as(self, other: NodeId, what: &str) -> MatchResult<Self> {
        if self.id == other { Ok(self) } else { Err(self.miss(format!("%{}: {what}", self.node().label))) }
    }
}
