//! Exact conversion between `rlx_ir::Graph` and rlx-opt's [`Graph`] through
//! RLX's textual IR, the format both sides read and write losslessly:
//! `rlx_ir::text::print` and `parse` are inverses (apart from node
//! provenance, which the text does not carry), and rlx-opt's reader keeps
//! every op verbatim, understood or not.

use crate::error::ExtError;
use rlx_opt::format::rlx_text;
use rlx_opt::ir::Graph;

/// rlx-opt's graph of an RLX graph.
pub fn from_rlx(graph: &rlx_ir::Graph) -> Result<Graph, ExtError> {
    let text = rlx_ir::text::print(graph);
    rlx_text::parse(&text).map_err(|e| ExtError::Convert { direction: "from rlx-ir", message: rlx_opt::diag::Diagnostic::from(e).render("<rlx graph>") })
}

/// The RLX graph of an rlx-opt graph.
pub fn to_rlx(graph: &Graph) -> Result<rlx_ir::Graph, ExtError> {
    let text = rlx_text::print(graph);
    rlx_ir::text::parse(&text).map_err(|e| ExtError::Convert { direction: "to rlx-ir", message: at_its_node(graph, &e.to_string()) })
}

/// RLX's message names a line of the text printed for it (a node a line,
/// from line 2): said of that node instead, by its op, label and line in
/// the user's file, and clipped (after an op it does not know RLX lists
/// all of its own, 3 KB: an adversarial run).
fn at_its_node(graph: &Graph, message: &str) -> String {
    let line_and_rest = message.strip_prefix("line ").and_then(|rest| rest.split_once(':')).and_then(|(n, rest)| Some((n.parse::<usize>().ok()?, rest.trim_start())));
    match line_and_rest.and_then(|(line, rest)| Some((graph.nodes().get(line.checked_sub(2)?)?, rest))) {
        Some((node, rest)) => {
            let line = node.loc.map(|l| format!(" (line {})", l.line)).unwrap_or_default();
            format!("`{}` op %{}{line}: RLX cannot take it: {}", node.op.name(), node.label, rlx_opt::diag::echo_in_line(rest))
        }
        None => rlx_opt::diag::echo_in_line(message),
    }
}
