//! Graphs to generic-form MLIR: one `func.func` per graph in a `builtin.module`.

use super::mapping::{self, ATTR_ID, ATTR_POSITION, ATTR_SYMBOLS, AttrValue};
use super::convert;
use crate::ir::{Graph, Node, NodeId, OpKind, view};
use serde_json::Value;
use std::borrow::Cow;

/// Where the writer takes each node's location from.
#[derive(Debug, Clone, Copy)]
pub enum Locations<'a> {
    /// Debug names only (`loc("name")`); MLIR gives the other ops their place in the text.
    Names,
    /// Places in the file the graphs were read from (`loc("name"("in.graph":3:3))`);
    /// nodes a pass made have `loc(unknown)`.
    File(&'a str),
    /// Locations as a module spelled them, by node label; names for the rest.
    Spelled(&'a convert::Locations),
}

/// A module holding `graphs`, each as one function, with debug names as locations.
pub fn print(graphs: &[Graph]) -> String {
    print_with(graphs, Locations::Names)
}

/// A module holding `graphs`, with locations from `locations`.
pub fn print_with(graphs: &[Graph], locations: Locations) -> String {
    let mut out = String::with_capacity(64 + graphs.iter().map(|g| g.len() * 160).sum::<usize>());
    out.push_str("\"builtin.module\"() ({\n");
    for graph in graphs {
        write_func_with(graph, &FuncAttributes::default(), locations, &mut out);
    }
    out.push_str("}) : () -> ()\n");
    out
}

/// A function's properties and attributes the writer does not make itself,
/// as spelled in the source (`None`: a unit attribute).
#[derive(Debug, Clone, Default)]
pub struct FuncAttributes {
    pub properties: Vec<(String, Option<String>)>,
    pub attributes: Vec<(String, Option<String>)>,
}

/// One graph as a generic-form `func.func` carrying `kept` attributes too.
pub fn write_func_with(graph: &Graph, kept: &FuncAttributes, locations: Locations, out: &mut String) {
    let graph: Cow<Graph> = if graph.is_topologically_ordered() {
        Cow::Borrowed(graph)
    } else {
        let mut ordered = graph.clone();
        view::ensure_dependency_order(&mut ordered);
        Cow::Owned(ordered)
    };
    let is_arg = |id: NodeId| matches!(graph.node(id).op.kind(), OpKind::Input { .. } | OpKind::Param { .. });
    let args: Vec<NodeId> = graph.ids().filter(|&id| is_arg(id)).collect();
    let mut implicit_label = 0u32;
    let mut cache = mapping::AttributeCache::default();
    let mut attrs_of = |id: NodeId| {
        let node = graph.node(id);
        let attrs = node_attributes(&mut cache, node, implicit_label, is_arg(id).then_some(id.index()));
        implicit_label = node.label.wrapping_add(1);
        attrs
    };
    let all_attrs: Vec<Vec<(String, AttrValue)>> = graph.ids().map(&mut attrs_of).collect();

    out.push_str("  \"func.func\"() <{");
    if !args.is_empty() {
        out.push_str("arg_attrs = [");
        for (i, &id) in args.iter().enumerate() {
            sep(i, out);
            write_dict(&all_attrs[id.index()], graph.node(id), out);
        }
        out.push_str("], ");
    }
    out.push_str("function_type = (");
    for (i, &id) in args.iter().enumerate() {
        sep(i, out);
        mapping::write_tensor_type(&graph.node(id).ty, out);
    }
    out.push_str(") -> ");
    write_result_types(&graph, &graph.outputs, out);
    out.push_str(", sym_name = ");
    write_string(&graph.name, out);
    write_raw_entries(&kept.properties, true, out);
    out.push_str("}> ({\n");
    if !args.is_empty() {
        out.push_str("  ^bb0(");
        for (i, &id) in args.iter().enumerate() {
            sep(i, out);
            write_value_id(&graph, id, out);
            out.push_str(": ");
            mapping::write_tensor_type(&graph.node(id).ty, out);
            write_location(graph.node(id), locations, out);
        }
        out.push_str("):\n");
    }
    for id in graph.ids().filter(|&id| !is_arg(id)) {
        write_op(&graph, id, &all_attrs[id.index()], locations, out);
    }
    out.push_str("    \"func.return\"(");
    for (i, &id) in graph.outputs.iter().enumerate() {
        sep(i, out);
        write_value_id(&graph, id, out);
    }
    out.push_str(") : ");
    write_operand_types(&graph, &graph.outputs, out);
    out.push_str(" -> ()\n  })");
    if !kept.attributes.is_empty() {
        out.push_str(" {");
        write_raw_entries(&kept.attributes, false, out);
        out.push('}');
    }
    out.push_str(" : () -> ()\n");
}

/// One node of the body as a generic-form operation line.
fn write_op(graph: &Graph, id: NodeId, attrs: &[(String, AttrValue)], locations: Locations, out: &mut String) {
    let node = graph.node(id);
    out.push_str("    ");
    write_value_id(graph, id, out);
    out.push_str(" = \"");
    out.push_str(mapping::OP_PREFIX);
    out.push_str(node.op.name());
    out.push_str("\"(");
    for (i, &operand) in node.operands.iter().enumerate() {
        sep(i, out);
        write_value_id(graph, operand, out);
    }
    out.push(')');
    if !attrs.is_empty() {
        out.push(' ');
        write_dict(attrs, node, out);
    }
    out.push_str(" : ");
    write_operand_types(graph, &node.operands, out);
    out.push_str(" -> ");
    mapping::write_tensor_type(&node.ty, out);
    write_location(node, locations, out);
    out.push('\n');
}

fn write_raw_entries(entries: &[(String, Option<String>)], after_others: bool, out: &mut String) {
    for (i, (key, value)) in entries.iter().enumerate() {
        sep(i + after_others as usize, out);
        write_key(key, out);
        if let Some(value) = value {
            out.push_str(" = ");
            out.push_str(value);
        }
    }
}

/// A node's attributes, sorted: its op's, then `rlx.id` unless its label is
/// `implicit_label`, and the symbols of dynamic dims. For an argument at
/// `position`, MLIR wants attributes of a dialect: the op's attributes sit in
/// one dictionary named after it, beside `rlx.position`.
pub(super) fn node_attributes(cache: &mut mapping::AttributeCache, node: &Node, implicit_label: u32, position: Option<usize>) -> Vec<(String, AttrValue)> {
    let mut attrs = cache.op_attributes(&node.op, &node.ty);
    if let Some(position) = position {
        let fields: serde_json::Map<String, Value> = attrs
            .drain(..)
            .map(|(k, v)| match v {
                AttrValue::Json(j) => (k, j),
                AttrValue::Dense(bytes) => (k, bytes.into_iter().map(Value::from).collect()),
            })
            .collect();
        attrs.push((format!("{}{}", mapping::OP_PREFIX, node.op.name()), AttrValue::Json(Value::Object(fields))));
        attrs.push((ATTR_POSITION.to_string(), AttrValue::Json(Value::from(position))));
    }
    if node.label != implicit_label {
        attrs.push((ATTR_ID.to_string(), AttrValue::Json(Value::from(node.label))));
    }
    if let Some(symbols) = mapping::dynamic_symbols(&node.ty) {
        attrs.push((ATTR_SYMBOLS.to_string(), AttrValue::Json(symbols)));
    }
    attrs.sort_by(|a, b| a.0.cmp(&b.0));
    attrs
}

fn sep(i: usize, out: &mut String) {
    if i > 0 {
        out.push_str(", ");
    }
}

fn write_value_id(graph: &Graph, id: NodeId, out: &mut String) {
    out.push('%');
    out.push_str(itoa::Buffer::new().format(graph.node(id).label));
}

fn write_operand_types(graph: &Graph, ids: &[NodeId], out: &mut String) {
    out.push('(');
    for (i, &id) in ids.iter().enumerate() {
        sep(i, out);
        mapping::write_tensor_type(&graph.node(id).ty, out);
    }
    out.push(')');
}

fn write_result_types(graph: &Graph, ids: &[NodeId], out: &mut String) {
    if ids.len() == 1 {
        mapping::write_tensor_type(&graph.node(ids[0]).ty, out);
    } else {
        write_operand_types(graph, ids, out);
    }
}

fn write_location(node: &Node, locations: Locations, out: &mut String) {
    if let Locations::Spelled(table) = locations
        && let Some(spelled) = table.get(&node.label)
    {
        out.push(' ');
        out.push_str(spelled);
        return;
    }
    let file = match locations {
        Locations::File(file) => Some(file),
        _ => None,
    };
    if node.name.is_none() && file.is_none() {
        return;
    }
    out.push_str(" loc(");
    if let Some(name) = &node.name {
        write_string(name, out);
    }
    match (file, node.loc) {
        (Some(file), Some(at)) => {
            if node.name.is_some() {
                out.push('(');
            }
            write_string(file, out);
            out.push_str(&format!(":{}:{}", at.line, at.col));
            if node.name.is_some() {
                out.push(')');
            }
        }
        (Some(_), None) if node.name.is_none() => out.push_str("unknown"),
        _ => {}
    }
    out.push(')');
}

pub(super) fn write_dict(attrs: &[(String, AttrValue)], node: &Node, out: &mut String) {
    out.push('{');
    for (i, (key, value)) in attrs.iter().enumerate() {
        sep(i, out);
        write_key(key, out);
        out.push_str(" = ");
        match value {
            AttrValue::Json(v) => write_json(v, out),
            AttrValue::Dense(bytes) => {
                out.push_str("dense<\"0x");
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.reserve(2 * bytes.len());
                for &b in bytes {
                    out.push(HEX[usize::from(b >> 4)] as char);
                    out.push(HEX[usize::from(b & 15)] as char);
                }
                out.push_str("\"> : ");
                mapping::write_tensor_type(&node.ty, out);
            }
        }
    }
    out.push('}');
}

fn write_key(key: &str, out: &mut String) {
    let bare = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "_$.".contains(c));
    if bare { out.push_str(key) } else { write_string(key, out) }
}

/// A JSON value as an MLIR attribute (see [`mapping`]).
fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("unit"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(itoa::Buffer::new().format(i));
                out.push_str(" : i64");
            } else if let Some(u) = n.as_u64() {
                out.push_str(itoa::Buffer::new().format(u));
                out.push_str(" : ui64");
            } else {
                write_float(n.as_f64().unwrap_or_default(), out);
                out.push_str(" : f64");
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) if !items.is_empty() && items.iter().all(|v| v.is_i64()) => {
            out.push_str("array<i64: ");
            for (i, v) in items.iter().enumerate() {
                sep(i, out);
                out.push_str(itoa::Buffer::new().format(v.as_i64().unwrap_or_default()));
            }
            out.push('>');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                sep(i, out);
                write_json(v, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (k, v)) in fields.iter().enumerate() {
                sep(i, out);
                write_key(k, out);
                out.push_str(" = ");
                write_json(v, out);
            }
            out.push('}');
        }
    }
}

/// MLIR float literals need a `.` before any exponent (`1.0e-7`, not `1e-7`).
fn write_float(f: f64, out: &mut String) {
    let text = format!("{f:?}");
    match text.split_once('e') {
        Some((mantissa, exp)) if !mantissa.contains('.') => out.push_str(&format!("{mantissa}.0e{exp}")),
        _ => out.push_str(&text),
    }
}

/// An MLIR string literal: quotes, backslashes and control bytes escaped as `\XX`.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
