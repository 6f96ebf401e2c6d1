//! The serde form: the JSON rlx-ir 0.2.19 writes for `Graph`
//! (`{"name", "nodes": [{"id", "op", "inputs", "shape", "name", "origin"}], "outputs"}`),
//! so `serde_json::from_str::<rlx_ir::Graph>` reads what rlx-opt writes.
//! Node ids are the textual labels. An op RLX can only print in its value
//! syntax (a non-finite float) is written as a JSON string holding that text.

use crate::format::FormatError;
use crate::ir::{DType, Dim, Graph, Node, NodeId, NodeOrigin, Op, OpError, TensorType, op::is_ident};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::io::Write as _;

#[derive(Serialize, Deserialize)]
struct JsonGraph {
    name: String,
    nodes: Vec<JsonNode>,
    outputs: Vec<u32>,
}

#[derive(Serialize, Deserialize)]
struct JsonNode {
    id: u32,
    op: Box<RawValue>,
    inputs: Vec<u32>,
    shape: JsonShape,
    name: Option<String>,
    #[serde(default)]
    origin: Option<Box<NodeOrigin>>,
}

#[derive(Serialize, Deserialize)]
struct JsonShape {
    dims: Vec<JsonDim>,
    dtype: String,
}

#[derive(Serialize, Deserialize)]
enum JsonDim {
    Static(u64),
    Dynamic(u32),
}

/// What [`write`] writes for one node: [`JsonNode`]'s fields, borrowed.
#[derive(Serialize)]
struct JsonNodeOut<'a> {
    id: u32,
    op: OpOut<'a>,
    inputs: Vec<u32>,
    shape: JsonShape,
    name: &'a Option<String>,
    origin: &'a Option<Box<NodeOrigin>>,
}

/// An op as JSON: a constant's bytes serialised straight from memory (serde
/// spells a byte array exactly as RLX's text does), anything else its text.
struct OpOut<'a>(&'a Op);

impl Serialize for OpOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_canonical_constant() {
            return self.0.kind().serialize(serializer);
        }
        op_to_raw(self.0).serialize(serializer)
    }
}

pub fn print(graph: &Graph) -> String {
    let mut out = Vec::new();
    write(graph, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// Stream `graph` as rlx-ir's serde JSON, one line; constants are never
/// spelled whole in memory.
pub fn write(graph: &Graph, out: &mut impl std::io::Write) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct JsonGraphOut<'a> {
        name: &'a str,
        nodes: Vec<JsonNodeOut<'a>>,
        outputs: Vec<u32>,
    }
    let nodes = graph
        .nodes()
        .iter()
        .map(|node| JsonNodeOut {
            id: node.label,
            op: OpOut(&node.op),
            inputs: node.operands.iter().map(|o| graph.node(*o).label).collect(),
            shape: JsonShape {
                dims: node
                    .ty
                    .dims
                    .iter()
                    .map(|d| match *d {
                        Dim::Static(n) => JsonDim::Static(n),
                        Dim::Dynamic(s) => JsonDim::Dynamic(s),
                    })
                    .collect(),
                dtype: node.ty.dtype.serde_name().to_string(),
            },
            name: &node.name,
            origin: &node.origin,
        })
        .collect();
    let outputs = graph.outputs.iter().map(|o| graph.node(*o).label).collect();
    let doc = JsonGraphOut { name: &graph.name, nodes, outputs };
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut buffered, &doc)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}

/// The length of [`write`]'s output or more, in one cheap pass over the nodes.
pub fn printed_len_bound(graph: &Graph) -> u64 {
    let per_node = graph.nodes().iter().map(|n| {
        // The op's JSON: its text, or that text as a JSON string (escaped as `\u00XX` at worst).
        let op = if n.op.is_json() { n.op.text_len() as u64 } else { 2 + 6 * n.op.text_len() as u64 };
        // `{"id":…,"op":…,"inputs":[…],"shape":{"dims":[{"Static":…},…],"dtype":"…"},"name":"…","origin":null},`
        let text_len = |s: &Option<String>| 2 + 6 * s.as_ref().map_or(0, |s| s.len() as u64);
        // `{"hir":…,"label":"…","pass":"…"}` in `"origin":…`'s place.
        let origin = n.origin.as_ref().map_or(0, |o| 48 + text_len(&o.label) + text_len(&o.pass));
        128 + op + 11 * n.operands.len() as u64 + 32 * n.ty.dims.len() as u64 + text_len(&n.name) + origin
    });
    per_node.fold(64 + 6 * graph.name.len() as u64 + 11 * graph.outputs.len() as u64, u64::saturating_add)
}

fn op_to_raw(op: &Op) -> Box<RawValue> {
    let text = op.text();
    let json = if op.is_json() { text.into_owned() } else if is_ident(&text) {
        format!("\"{text}\"")
    } else {
        serde_json::to_string(&*text).expect("strings serialise")
    };
    RawValue::from_string(json).expect("op text is valid JSON")
}

/// A JSON string holds a bare unit op (`"MatMul"`) or value-syntax text;
/// anything else is the op's JSON itself.
fn op_from_raw(raw: &RawValue) -> Result<Op, OpError> {
    let text = raw.get();
    if text.starts_with('"') {
        let inner: String = serde_json::from_str(text).map_err(|e| OpError { message: e.to_string(), offset: None })?;
        return crate::format::rlx_text::op_from_spelling(&inner);
    }
    // RLX text holds an op on one line: the line breaks between a JSON
    // op's tokens (a pretty-printed file) go, which changes nothing else
    // (JSON has none inside its strings). Kept, they printed an op over two
    // lines, and `--emit=mlir` an `rlx.text` its reader refuses (a review).
    if text.contains(['\n', '\r']) {
        return Op::parse(&text.replace(['\n', '\r'], ""));
    }
    Op::parse(text)
}

pub fn parse(text: &str) -> Result<Graph, FormatError> {
    parse_from_line(text, 1)
}

/// Parse a graph whose first line is line `first_line` of its file.
pub fn parse_from_line(text: &str, first_line: u32) -> Result<Graph, FormatError> {
    let doc: JsonGraph = serde_json::from_str(text).map_err(|e| {
        let loc = crate::ir::Loc { line: e.line() as u32 + first_line - 1, col: e.column().max(1) as u32 };
        FormatError::at(loc, format!("invalid graph JSON: {e}"))
    })?;
    if !crate::ir::is_graph_name(&doc.name) {
        return Err(FormatError::whole_file(format!("graph name {:?} is not one `graph @name` can spell (letters, digits, `_`, `.`)", crate::diag::clip(&doc.name))));
    }
    let mut graph = Graph::new(doc.name);
    // An error in a node names the node's place in the file.
    let node_at = |index: usize, message: String| match node_locs(text, first_line).get(index) {
        Some(loc) => FormatError::at(*loc, message),
        None => FormatError::whole_file(message),
    };
    let mut ids = HashMap::with_capacity(doc.nodes.len());
    for (index, node) in doc.nodes.iter().enumerate() {
        if ids.insert(node.id, NodeId(ids.len() as u32)).is_some() {
            return Err(node_at(index, format!("node id {} is defined twice", node.id)));
        }
    }
    let resolve = |label: u32, what: &str| ids.get(&label).copied().ok_or_else(|| format!("{what} refers to undefined node id {label}"));
    for (index, node) in doc.nodes.into_iter().enumerate() {
        let at = |m: String| node_at(index, format!("node %{}: {m}", node.id));
        let op = op_from_raw(&node.op).map_err(|e| at(e.message))?;
        let operands = node.inputs.iter().map(|&i| resolve(i, "an input").map_err(&at)).collect::<Result<_, _>>()?;
        let dtype = DType::from_serde_name(&node.shape.dtype).ok_or_else(|| at(format!("unknown dtype `{}`", node.shape.dtype)))?;
        let dims = node
            .shape
            .dims
            .iter()
            .map(|d| match *d {
                JsonDim::Static(n) => Dim::Static(n),
                JsonDim::Dynamic(s) => Dim::Dynamic(s),
            })
            .collect();
        let ty = TensorType { dims, dtype };
        if ty.byte_size_overflows() {
            return Err(at(format!("shape {ty} has a byte size that overflows u64")));
        }
        graph.push(Node { label: node.id, op, operands, ty, name: node.name, loc: None, origin: node.origin });
    }
    graph.outputs = doc.outputs.iter().map(|&o| resolve(o, "an output").map_err(FormatError::whole_file)).collect::<Result<_, _>>()?;
    Ok(graph)
}

/// Where each node of a graph's JSON starts, read again only when an error
/// needs a place (serde's typed read has lost the places by then).
fn node_locs(text: &str, first_line: u32) -> Vec<crate::ir::Loc> {
    #[derive(Deserialize)]
    struct Nodes<'a> {
        #[serde(borrow)]
        nodes: Vec<&'a RawValue>,
    }
    let Ok(doc) = serde_json::from_str::<Nodes<'_>>(text) else { return Vec::new() };
    doc.nodes
        .iter()
        .map(|raw| {
            let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            crate::diag::loc_in_chunk(text.as_bytes(), offset, first_line)
        })
        .collect()
}
