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
    rlx_ir::text::parse(&text).map_err(|e| ExtError::Convert { direction: "to rlx-ir", message: e.to_string() })
}
