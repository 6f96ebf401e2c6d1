//! A greedy pattern-rewrite driver in the spirit of MLIR's: patterns say what
//! they match and what they build; the driver owns the worklist, the use
//! lists, rewiring, clean-up and verification. It knows nothing about any
//! particular pattern.
//!
//! Order is deterministic: nodes are visited in graph order, patterns tried in
//! the order given, and nodes a rewrite creates are visited after the rest.

use crate::diag::Diagnostic;
use crate::ir::{Graph, Node, NodeId, Op, TensorType, view};
use crate::verify::verify;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::VecDeque;

/// A rewrite rooted at nodes of one op. `S` is state the patterns of one
/// run share (a pass's running cost model and report, say).
pub trait Pattern<S> {
    fn name(&self) -> &'static str;
    /// The op name (`WelchPeaks`, `TopK`, …) of the nodes this pattern is tried at.
    fn root_op(&self) -> crate::ir::OpCode;
    /// Match at `root`; rewrite through `rw` and return true, or leave the
    /// graph untouched and return false.
    fn match_and_rewrite(&self, root: NodeId, rw: &mut Rewriter<'_>, state: &mut S) -> bool;
}

/// The graph under rewriting, with the use lists a pattern needs.
pub struct Rewriter<'g> {
    graph: &'g mut Graph,
    users: Vec<SmallVec<[(NodeId, u32); 2]>>,
    /// Where each node appears in `graph.outputs`; removed outputs are
    /// tombstoned until the end, so positions stay valid.
    output_slots: Vec<SmallVec<[u32; 1]>>,
    created: Vec<NodeId>,
    /// Nodes whose uses a rewrite took away: where clean-up starts.
    replaced: Vec<NodeId>,
    /// Where created nodes go in the printed order: before this node.
    insertion_point: Option<NodeId>,
    /// Every created node with its insertion point.
    placed: Vec<(NodeId, NodeId)>,
}

impl<'g> Rewriter<'g> {
    pub fn new(graph: &'g mut Graph) -> Self {
        let mut users = vec![SmallVec::new(); graph.len()];
        for (i, node) in graph.nodes().iter().enumerate() {
            for (pos, operand) in node.operands.iter().enumerate() {
                users[operand.index()].push((NodeId(i as u32), pos as u32));
            }
        }
        let mut output_slots = vec![SmallVec::new(); graph.len()];
        for (slot, o) in graph.outputs.iter().enumerate() {
            output_slots[o.index()].push(slot as u32);
        }
        Rewriter { graph, users, output_slots, created: Vec::new(), replaced: Vec::new(), insertion_point: None, placed: Vec::new() }
    }

    pub fn graph(&self) -> &Graph {
        &*self.graph
    }

    pub fn node(&self, id: NodeId) -> &Node {
        self.graph.node(id)
    }

    /// The users of `id`, each with the operand position it uses `id` in.
    pub fn users(&self, id: NodeId) -> &[(NodeId, u32)] {
        &self.users[id.index()]
    }

    pub fn is_output(&self, id: NodeId) -> bool {
        !self.output_slots[id.index()].is_empty()
    }

    /// Operand uses plus appearances among the graph outputs.
    pub fn use_count(&self, id: NodeId) -> usize {
        self.users[id.index()].len() + self.output_slots[id.index()].len()
    }

    /// Which of `nodes` (a matched subgraph) would be left with no uses, and
    /// so removed, once every use of the `roots` is replaced and the
    /// `dropped` nodes are no longer outputs. A node survives if the graph
    /// returns it or anything outside the dead set uses it. Returns the roots,
    /// then the dead nodes in the order of `nodes`, each once.
    ///
    /// One walk from the roots towards the operands, counting for each
    /// candidate the uses not yet dead: linear in the matched nodes and their
    /// uses (a frame chain of RLX's spectrogram matches 2 nodes per frame,
    /// and a fixpoint over a list was quadratic in them).
    pub fn dead_after_replacing(&self, roots: &[NodeId], nodes: &[NodeId], dropped: &[NodeId]) -> Vec<NodeId> {
        let dropped: FxHashSet<NodeId> = dropped.iter().copied().collect();
        let mut dead: FxHashSet<NodeId> = roots.iter().copied().collect();
        // Live uses left for each candidate that may die.
        let mut live_uses: FxHashMap<NodeId, usize> = FxHashMap::default();
        for &n in nodes {
            let returned = self.is_output(n) && !dropped.contains(&n);
            if dead.contains(&n) || returned || !self.graph.node(n).op.is_removable() {
                continue;
            }
            live_uses.entry(n).or_insert_with(|| self.users(n).iter().filter(|(u, _)| !dead.contains(u)).count());
        }
        // The roots' uses were never counted, so the walk starts from the
        // candidates that had no other use.
        let mut stack: Vec<NodeId> = nodes.iter().copied().filter(|n| live_uses.get(n) == Some(&0) && dead.insert(*n)).collect();
        while let Some(user) = stack.pop() {
            // One use less per operand position, as the use lists count them.
            for &operand in &self.graph.node(user).operands {
                if let Some(uses) = live_uses.get_mut(&operand)
                    && !dead.contains(&operand)
                {
                    *uses -= 1;
                    if *uses == 0 {
                        dead.insert(operand);
                        stack.push(operand);
                    }
                }
            }
        }
        let mut listed: FxHashSet<NodeId> = FxHashSet::default();
        roots.iter().chain(nodes).copied().filter(|n| dead.contains(n) && listed.insert(*n)).collect()
    }

    /// Nodes created from now on go just before `at` in the graph's order
    /// (the root a rewrite replaces), so a fused op sits where its chain was.
    pub fn set_insertion_point(&mut self, at: NodeId) {
        self.insertion_point = Some(at);
    }

    /// Add a node; it gets a fresh label and is visited by the driver later.
    pub fn create(&mut self, op: Op, operands: &[NodeId], ty: TensorType) -> NodeId {
        let id = self.graph.add_node(op, operands, ty);
        if let Some(at) = self.insertion_point {
            self.placed.push((id, at));
        }
        self.users.push(SmallVec::new());
        self.output_slots.push(SmallVec::new());
        for (pos, operand) in operands.iter().enumerate() {
            self.users[operand.index()].push((id, pos as u32));
        }
        self.created.push(id);
        id
    }

    /// Point every use of `old`, graph outputs included, at `new`. `new`
    /// takes over `old`'s label and debug name, so the printed graph keeps
    /// its ids where it returns them (and RLX's provenance of it, where it
    /// has one); `old` gets a fresh label and is left for clean-up.
    pub fn replace_all_uses(&mut self, old: NodeId, new: NodeId) {
        for (user, pos) in std::mem::take(&mut self.users[old.index()]) {
            self.graph.node_mut(user).operands[pos as usize] = new;
            self.users[new.index()].push((user, pos));
        }
        for slot in std::mem::take(&mut self.output_slots[old.index()]) {
            self.graph.outputs[slot as usize] = new;
            self.output_slots[new.index()].push(slot);
        }
        self.replaced.push(old);
        let fresh = self.graph.fresh_label();
        let old_label = std::mem::replace(&mut self.graph.node_mut(old).label, fresh);
        self.graph.node_mut(new).label = old_label;
        if self.graph.node(new).name.is_none() {
            self.graph.node_mut(new).name = self.graph.node_mut(old).name.take();
        }
        if self.graph.node(new).origin.is_none() {
            self.graph.node_mut(new).origin = self.graph.node_mut(old).origin.take();
        }
    }

    /// Remove every appearance of `id` from the graph outputs (an interface
    /// change: only at a pass option's request).
    pub fn remove_output(&mut self, id: NodeId) {
        for slot in std::mem::take(&mut self.output_slots[id.index()]) {
            self.graph.outputs[slot as usize] = REMOVED;
        }
        self.replaced.push(id);
    }

    /// Remove what the rewrites left unused (replaced nodes and, transitively,
    /// their operands once nothing uses them) and put created nodes at their
    /// insertion points. Dead code the graph had before is not this driver's
    /// business (that is `dce`). Returns how many nodes went.
    fn finish(&mut self) -> usize {
        self.graph.outputs.retain(|o| *o != REMOVED);
        let mut erased = vec![false; self.graph.len()];
        // Uses by erased nodes, counted rather than removed from the use
        // lists: a signal with one `Narrow` per frame has a use list as long
        // as the frames, and removing from it once per erased frame was
        // quadratic in them.
        let mut erased_uses = vec![0usize; self.graph.len()];
        let mut stack = std::mem::take(&mut self.replaced);
        while let Some(n) = stack.pop() {
            let live_uses = self.use_count(n) - erased_uses[n.index()];
            if erased[n.index()] || live_uses > 0 || !self.graph.node(n).op.is_removable() {
                continue;
            }
            erased[n.index()] = true;
            for &operand in &self.graph.node(n).operands {
                erased_uses[operand.index()] += 1;
                stack.push(operand);
            }
        }
        let mut before: Vec<SmallVec<[NodeId; 2]>> = vec![SmallVec::new(); self.graph.len()];
        let mut placed = vec![false; self.graph.len()];
        for (id, at) in &self.placed {
            before[at.index()].push(*id);
            placed[id.index()] = true;
        }
        fn emit(id: NodeId, before: &[SmallVec<[NodeId; 2]>], order: &mut Vec<NodeId>) {
            for &b in &before[id.index()] {
                emit(b, before, order);
            }
            order.push(id);
        }
        let mut order = Vec::with_capacity(self.graph.len());
        for id in self.graph.ids().filter(|id| !placed[id.index()]) {
            emit(id, &before, &mut order);
        }
        order.retain(|id| !erased[id.index()]);
        self.graph.select(&order);
        erased.iter().filter(|e| **e).count()
    }
}

/// A tombstone for a removed output slot.
const REMOVED: NodeId = NodeId(u32::MAX);

/// What a run of the driver did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RewriteStats {
    pub rewrites: u64,
    pub nodes_removed: u64,
}

/// Apply `patterns` until none matches, then remove what the rewrites left
/// dead, restore dependency order and verify.
pub fn apply_patterns_greedily<S>(graph: &mut Graph, patterns: &[&dyn Pattern<S>], state: &mut S) -> Result<RewriteStats, Diagnostic> {
    let mut stats = RewriteStats::default();
    let mut rw = Rewriter::new(graph);
    let mut worklist: VecDeque<NodeId> = rw.graph.ids().collect();
    // Every rewrite removes its root's uses, so a node can only match a
    // bounded number of times; the cap turns a buggy pattern into an error
    // rather than a hang.
    let mut budget = 4 * worklist.len() as u64 + 1024;
    while let Some(id) = worklist.pop_front() {
        if rw.use_count(id) == 0 {
            continue;
        }
        for pattern in patterns {
            if rw.node(id).op.kind().code() != pattern.root_op() {
                continue;
            }
            if pattern.match_and_rewrite(id, &mut rw, state) {
                stats.rewrites += 1;
                let created = std::mem::take(&mut rw.created);
                worklist.extend(created);
                break;
            }
        }
        budget = budget.checked_sub(1).ok_or_else(|| Diagnostic::whole_file("pattern rewriting did not converge"))?;
    }
    stats.nodes_removed = rw.finish() as u64;
    view::ensure_dependency_order(graph);
    verify(graph).map_err(|e| Diagnostic::maybe_at(e.loc(), format!("rewrite produced an invalid graph: {e}")))?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::rlx_text;
    use crate::matcher::At;

    /// A toy pattern the engine knows nothing special about: `Relu(Relu(x))` → `Relu(x)`.
    struct DoubleRelu;

    impl Pattern<u32> for DoubleRelu {
        fn name(&self) -> &'static str {
            "double-relu"
        }

        fn root_op(&self) -> crate::ir::OpCode {
            crate::ir::OpCode::Activation
        }

        fn match_and_rewrite(&self, root: NodeId, rw: &mut Rewriter<'_>, count: &mut u32) -> bool {
            let is_relu = |k: &crate::ir::OpKind| matches!(k, crate::ir::OpKind::Activation(v) if v == "Relu");
            let Ok(inner) = At::new(rw.graph(), root).attr("relu", is_relu).and_then(|a| a.operand(0)?.attr("relu", is_relu)) else {
                return false;
            };
            let (x, inner_op, ty) = (inner.node().operands[0], inner.node().op.clone(), inner.ty().clone());
            rw.set_insertion_point(root);
            let single = rw.create(inner_op, &[x], ty);
            rw.replace_all_uses(root, single);
            *count += 1;
            true
        }
    }

    /// The nodes a rewrite would leave dead: a square uses its operand at
    /// two positions (both must go before it dies), a node with a user
    /// outside the match survives, and so does a returned one.
    #[test]
    fn dead_after_replacing_counts_every_use() {
        let node = |text: &str| -> String { format!("graph @g {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : [4] f32\n  %1 = {{\"Narrow\":{{\"axis\":0,\"start\":0,\"len\":2}}}}(%0) : [2] f32\n  %2 = {{\"Binary\":\"Mul\"}}(%1, %1) : [2] f32\n  %3 = {{\"Activation\":\"Relu\"}}(%2) : [2] f32\n{text}}}\n") };
        let matched = [NodeId(3), NodeId(2), NodeId(1), NodeId(0)];
        let alone = node("  return %3\n");
        let mut g = rlx_text::parse(&alone).unwrap();
        let rw = Rewriter::new(&mut g);
        assert_eq!(rw.dead_after_replacing(&[NodeId(3)], &matched, &[]), [NodeId(3), NodeId(2), NodeId(1)]);
        let shared = node("  %4 = {\"Activation\":\"Exp\"}(%1) : [2] f32\n  return %3, %4\n");
        let mut g = rlx_text::parse(&shared).unwrap();
        let rw = Rewriter::new(&mut g);
        assert_eq!(rw.dead_after_replacing(&[NodeId(3)], &matched, &[]), [NodeId(3), NodeId(2)]);
        let returned = node("  return %3, %2\n");
        let mut g = rlx_text::parse(&returned).unwrap();
        let rw = Rewriter::new(&mut g);
        assert_eq!(rw.dead_after_replacing(&[NodeId(3)], &matched, &[]), [NodeId(3)]);
        assert_eq!(rw.dead_after_replacing(&[NodeId(3)], &matched, &[NodeId(2)]), [NodeId(3), NodeId(2), NodeId(1)]);
    }

    #[test]
    fn rewrites_until_fixpoint_and_keeps_the_interface() {
        let text = "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n  %1 = {\"Activation\":\"Relu\"}(%0) : [2] f32\n  %2 = {\"Activation\":\"Relu\"}(%1) : [2] f32\n  %3 = {\"Activation\":\"Relu\"}(%2) : [2] f32 #\"out\"\n  %4 = {\"Activation\":\"Exp\"}(%3) : [2] f32\n  %9 = {\"Activation\":\"Tanh\"}(%0) : [2] f32\n  return %3, %4\n}\n";
        let mut g = rlx_text::parse(text).unwrap();
        let mut count = 0;
        let stats = apply_patterns_greedily(&mut g, &[&DoubleRelu], &mut count).unwrap();
        // Relu∘Relu∘Relu folds in two steps; the result keeps id %3 and its
        // name, sits where %3 was, and the dead %9 (not the engine's doing) stays;
        // removed: %1, %2, %3 and the intermediate fold.
        assert_eq!(count, 2);
        assert_eq!(stats, RewriteStats { rewrites: 2, nodes_removed: 4 });
        assert_eq!(
            rlx_text::print(&g),
            "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n  %3 = {\"Activation\":\"Relu\"}(%0) : [2] f32 #\"out\"\n  %4 = {\"Activation\":\"Exp\"}(%3) : [2] f32\n  %9 = {\"Activation\":\"Tanh\"}(%0) : [2] f32\n  return %3, %4\n}\n"
        );
    }
}
