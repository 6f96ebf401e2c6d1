//! A petgraph view of a [`Graph`] for graph algorithms: one petgraph node per
//! op (its weight is the [`NodeId`], and petgraph's index equals it), one edge
//! per operand use, from the operand to its user, weighted by the operand
//! position.

use super::{Graph, NodeId};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, Reversed};

pub type GraphView = DiGraph<NodeId, u32, u32>;

pub fn build(graph: &Graph) -> GraphView {
    let edges: usize = graph.nodes().iter().map(|n| n.operands.len()).sum();
    let mut view = GraphView::with_capacity(graph.len(), edges);
    for id in graph.ids() {
        view.add_node(id);
    }
    for (user, node) in graph.nodes().iter().enumerate() {
        for (pos, operand) in node.operands.iter().enumerate() {
            view.add_edge(NodeIndex::new(operand.index()), NodeIndex::new(user), pos as u32);
        }
    }
    view
}

/// A topological order of all nodes, or a node on a cycle.
pub fn topological_order(view: &GraphView) -> Result<Vec<NodeId>, NodeId> {
    petgraph::algo::toposort(view, None)
        .map(|order| order.into_iter().map(|ix| view[ix]).collect())
        .map_err(|cycle| view[cycle.node_id()])
}

/// Which nodes the given roots depend on, the roots included.
pub fn reaching(view: &GraphView, roots: impl IntoIterator<Item = NodeId>) -> Vec<bool> {
    let mut seen = vec![false; view.node_count()];
    let reversed = Reversed(view);
    let mut dfs = Dfs::empty(reversed);
    for root in roots {
        dfs.move_to(NodeIndex::new(root.index()));
        while let Some(ix) = dfs.next(reversed) {
            seen[ix.index()] = true;
        }
    }
    seen
}

/// Put a verified (acyclic) graph in dependency order, which RLX's text
/// format requires; graphs already in order are left untouched.
pub fn ensure_dependency_order(graph: &mut Graph) {
    if !graph.is_topologically_ordered() {
        let order = topological_order(&build(graph)).expect("verified graphs are acyclic");
        graph.permute(&order);
    }
}
