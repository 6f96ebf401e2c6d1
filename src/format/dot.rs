//! Graphviz output through petgraph's DOT writer. Fused ops (custom ops in
//! the `rlx_opt.` namespace) are filled and bold so a rewrite stands out;
//! other custom ops and ops rlx-opt does not understand are marked too.

use crate::ir::{Graph, OpKind, view};
use petgraph::dot::{Config, Dot};
use std::fmt::Write as _;

pub fn print(graph: &Graph) -> String {
    let view = view::build(graph);
    let outputs: Vec<usize> = graph.outputs.iter().map(|o| o.index()).collect();
    let node_attrs = |_, (ix, id): (petgraph::graph::NodeIndex<u32>, &crate::ir::NodeId)| {
        let node = graph.node(*id);
        let title = match node.op.kind() {
            OpKind::Custom { name, .. } => name.clone(),
            _ => node.op.name().to_string(),
        };
        let mut label = format!("%{} = {title}\\n{}", node.label, node.ty);
        if let Some(name) = &node.name {
            let _ = write!(label, "\\n#{}", escape(name));
        }
        let style = match node.op.kind() {
            OpKind::Custom { name, .. } if name.starts_with(crate::fused::NAMESPACE) => {
                "shape=box3d, style=\"filled,bold\", fillcolor=\"#ffb347\", penwidth=2"
            }
            OpKind::Custom { .. } => "style=filled, fillcolor=\"#ffe4b5\"",
            OpKind::Input { .. } | OpKind::Param { .. } | OpKind::Constant { .. } => "shape=ellipse",
            OpKind::Opaque { .. } => "style=dashed",
            _ => "",
        };
        let peripheries = if outputs.contains(&ix.index()) { ", peripheries=2" } else { "" };
        format!("label=\"{label}\" {style}{peripheries}")
    };
    let edge_attrs = |_, e: petgraph::graph::EdgeReference<'_, u32, u32>| format!("label=\"{}\"", e.weight());
    let dot = Dot::with_attr_getters(
        &view,
        &[Config::NodeNoLabel, Config::EdgeNoLabel, Config::GraphContentOnly],
        &edge_attrs,
        &node_attrs,
    );
    let mut out = format!("digraph \"{}\" {{\n    node [shape=box, fontname=\"monospace\"];\n", escape(&graph.name));
    let _ = write!(out, "{dot:?}");
    for (i, id) in graph.outputs.iter().enumerate() {
        let _ = writeln!(out, "    out{i} [shape=plaintext, label=\"return #{i}\"]\n    {} -> out{i} [style=dotted]", id.index());
    }
    out.push_str("}\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
