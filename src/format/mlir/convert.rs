//! Syntax trees of `rlx` functions to graphs, by the rules of [`super::mapping`].

use super::mapping::{self, ATTR_ID, ATTR_POSITION, ATTR_SYMBOLS, AttrValue, OP_PREFIX};
use super::syntax::{self, Attr, Module, Operation, Type};
use crate::format::FormatError;
use crate::ir::{DType, Dim, Graph, Loc, Node, NodeId, TensorType};
use crate::limits::{MAX_ALIAS_EXPANSION, MAX_ALIAS_EXPANSION_TOTAL, MAX_DENSE_BYTES_TOTAL, MAX_NESTING, MAX_TENSOR_BYTES, bytes as shown_bytes};
use serde_json::Value;
use rustc_hash::FxHashMap as HashMap;

/// The general MLIR reader set up for RLX: `rlx.*` ops' attributes are only
/// delimited, to be read once per spelling (see `convert_function`), and
/// tensors have RLX's element types.
pub const READ_OPTIONS: syntax::Options = syntax::Options {
    lazy_attributes_prefix: Some(OP_PREFIX),
    element_type: mapping::dtype_of_element,
    known_element_types: "rlx-opt reads f32, f16, bf16, f64, i1, i8, i16, i32, i64, ui8, ui32, complex<f32>, complex<f64>",
};

/// Byte offsets to 1-based lines and columns, for a file read from `first_line`.
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    first_line: u32,
    /// The last offset asked for and its column: a function's arguments all
    /// sit on one line, and counting that line's characters again for each
    /// would be quadratic.
    last: std::cell::Cell<(usize, u32)>,
    /// Values produced through attribute aliases so far, in every function
    /// of the module these lines are of, against [`MAX_ALIAS_EXPANSION_TOTAL`]
    /// (kept here because one `Lines` goes with one module's conversion).
    pub(super) aliased: std::cell::Cell<usize>,
    /// Bytes of dense elements decoded so far in the module, against
    /// [`MAX_DENSE_BYTES_TOTAL`] (a splat of a few bytes of text decodes
    /// to its whole tensor).
    pub(super) dense: std::cell::Cell<u64>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str, first_line: u32) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Lines { text, starts, first_line, last: std::cell::Cell::new((0, 1)), aliased: std::cell::Cell::new(0), dense: std::cell::Cell::new(0) }
    }

    pub fn loc(&self, offset: usize) -> Loc {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let (last_offset, last_col) = self.last.get();
        let (from, col) = if last_offset >= start && last_offset <= offset { (last_offset, last_col) } else { (start, 1) };
        let col = col + self.text.get(from..offset).map_or(0, |s| s.chars().count()) as u32;
        self.last.set((offset, col));
        Loc { line: self.first_line + line as u32, col }
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> FormatError {
        FormatError::at(self.loc(offset), message)
    }
}

/// Whether `op` is a function rlx-opt converts: a body of `rlx.*` ops and the return.
pub fn is_rlx_function(op: &Operation) -> bool {
    op.name == "func.func"
        && op.regions.len() == 1
        && op.regions[0].len() == 1
        && op.regions[0][0].ops.iter().all(|o| o.name.starts_with(OP_PREFIX) || o.name == "func.return")
        && op.regions[0][0].ops.iter().any(|o| o.name.starts_with(OP_PREFIX))
}

/// Convert an `rlx` function (see [`is_rlx_function`]) to a graph.
pub fn function_to_graph(module: &Module, func: &Operation, lines: &Lines) -> Result<Graph, FormatError> {
    Ok(convert_function(module, func, lines)?.graph)
}

/// Each node's MLIR location as written (`loc(…)`), by node label: labels
/// survive rewrites, so a node that replaces another takes its location.
pub type Locations = HashMap<u32, String>;

impl Converted {
    /// The locations of the nodes, as `text` spells them.
    pub fn locations(&self, text: &str) -> Locations {
        let spelled = self.loc_spans.iter().zip(self.graph.nodes()).filter_map(|(span, node)| Some((node.label, text[span.clone()?].to_string())));
        spelled.collect()
    }
}

/// Where a graph node came from in its function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The i-th argument.
    Arg(usize),
    /// The i-th op of the body (the return not counted).
    Op(usize),
}

/// A function as a graph, with what a host needs to put a rewrite back.
pub struct Converted {
    pub graph: Graph,
    /// Per node, the span of its `loc(…)` in the text.
    pub loc_spans: Vec<Option<std::ops::Range<usize>>>,
    /// Per node of `graph`, in its order.
    pub origins: Vec<Origin>,
    /// Per node, the `rlx.id` and `rlx.position` it was given explicitly.
    pub explicit: Vec<(Option<u32>, Option<usize>)>,
}

/// [`function_to_graph`], with the locations and origins of the nodes.
// Over 80 lines: the arguments' and ops' loops fill the same per-slot tables (values, nodes, spans, ids) that the
// numbering at the end reads; split, every piece would take all of them.
pub fn convert_function(module: &Module, func: &Operation, lines: &Lines) -> Result<Converted, FormatError> {
    let at = |offset: usize, message: String| lines.error(offset, message);
    let name = match func.attr("sym_name") {
        Some(Attr::Str(s)) if crate::ir::is_graph_name(s) => s.clone(),
        Some(Attr::Str(s)) => return Err(at(func.span.start, format!("function name {:?} is not one `graph @name` can spell (letters, digits, `_`, `.`)", crate::diag::clip(s)))),
        _ => return Err(at(func.span.start, "func.func has no `sym_name`".into())),
    };
    let block = &func.regions[0][0];
    let arg_attrs: Vec<Vec<(String, Attr)>> = match func.attr("arg_attrs") {
        Some(Attr::Array(items)) => items.iter().map(|a| match a {
            Attr::Dict(d) => d.clone(),
            _ => Vec::new(),
        }).collect(),
        _ => Vec::new(),
    };
    if arg_attrs.len() > block.args.len() {
        return Err(at(func.span.start, format!("`arg_attrs` has {} entries for {} arguments", arg_attrs.len(), block.args.len())));
    }
    let total = block.args.len() + block.ops.iter().filter(|o| o.name != "func.return").count();

    // Where each node goes: arguments by `rlx.position`, ops fill the rest in order.
    let mut slots: Vec<Option<usize>> = vec![None; total];
    let mut arg_slot = Vec::with_capacity(block.args.len());
    for (i, arg) in block.args.iter().enumerate() {
        let attrs = arg_attrs.get(i).map(Vec::as_slice).unwrap_or_default();
        let slot = match find(attrs, ATTR_POSITION) {
            Some(a) => match int_of(a) {
                Some(p) if (p as usize) < total && p >= 0 && slots[p as usize].is_none() => p as usize,
                _ => return Err(at(arg.offset, format!("`{ATTR_POSITION}` of {} is out of range or used twice", arg.name))),
            },
            None => i,
        };
        if slots[slot].is_some() {
            return Err(at(arg.offset, format!("`{ATTR_POSITION}` of {} is used twice", arg.name)));
        }
        slots[slot] = Some(i);
        arg_slot.push(slot);
    }
    let mut free = (0..total).filter(|&s| slots[s].is_none());
    let op_slot: Vec<usize> = block.ops.iter().filter(|o| o.name != "func.return").map(|_| free.next().expect("counted")).collect();

    let mut values: HashMap<&str, usize> = HashMap::with_capacity_and_hasher(total, Default::default());
    let mut nodes: Vec<Option<(Node, Option<u32>)>> = vec![None; total];
    let mut spans: Vec<Option<std::ops::Range<usize>>> = vec![None; total];
    let mut explicit = vec![(None, None); total];
    // Per node, its value name and where it is defined (for errors on its id).
    let mut defined_at: Vec<(&str, usize)> = vec![("", 0); total];
    let mut fresh_symbol = 0u32;
    let mut resolve_type = |ty: &Type, symbols: Option<&Attr>, offset: usize, what: &str| -> Result<TensorType, FormatError> {
        let mut t = tensor_of(ty).map_err(|why| at(offset, format!("{what}: {why}")))?;
        let mut given = match symbols {
            Some(Attr::DenseArray(items) | Attr::Array(items)) => items.iter().filter_map(int_of).collect::<Vec<_>>().into_iter(),
            _ => Vec::new().into_iter(),
        };
        for dim in t.dims.iter_mut() {
            if let Dim::Dynamic(s) = dim {
                *s = given.next().map(|v| v as u32).unwrap_or_else(|| {
                    fresh_symbol += 1;
                    fresh_symbol - 1
                });
            }
        }
        Ok(t)
    };

    for (i, arg) in block.args.iter().enumerate() {
        let attrs = arg_attrs.get(i).cloned().unwrap_or_default();
        refuse_duplicate_keys(&attrs, "attribute").map_err(|m| at(arg.offset, format!("argument {}: {m}", arg.name)))?;
        let ty = resolve_type(&arg.ty, find(&attrs, ATTR_SYMBOLS), arg.offset, &format!("argument {}", arg.name))?;
        let label = u32_attr(find(&attrs, ATTR_ID), ATTR_ID).map_err(|m| at(arg.offset, format!("argument {}: {m}", arg.name)))?;
        let mut ops = attrs.iter().filter(|(k, _)| k.starts_with(OP_PREFIX) && !matches!(k.as_str(), ATTR_ID | ATTR_POSITION | ATTR_SYMBOLS));
        let spelled = ops.next();
        // One op an argument: a second was dropped (`rlx.Input` beside `rlx.Param`: an adversarial run).
        if let (Some((first, _)), Some((second, _))) = (spelled, ops.next()) {
            return Err(at(arg.offset, format!("argument {}: `{first}` and `{second}` both spell its op; an argument is one op", arg.name)));
        }
        let (op_name, fields) = match spelled {
            Some((key, Attr::Dict(entries))) => {
                let fields = op_fields(module, entries, lines).map_err(|m| at(arg.offset, format!("argument {}: {m}", arg.name)))?;
                (key[OP_PREFIX.len()..].to_string(), fields)
            }
            Some((key, _)) => return Err(at(arg.offset, format!("argument {}: `{key}` must be a dictionary of the op's attributes", arg.name))),
            None => {
                let name = Value::String(arg.name.trim_start_matches('%').to_string());
                ("Input".to_string(), (vec![("name".to_string(), AttrValue::Json(name))], None))
            }
        };
        let op = mapping::op_from_attributes(&op_name, fields.0, fields.1.as_deref())
            .map_err(|m| at(arg.offset, format!("argument {}: {m}", arg.name)))?;
        let name = located_name(module, arg.loc.as_ref()).map_err(|m| at(arg.offset, format!("argument {}: {m}", arg.name)))?;
        let node = Node { label: 0, op, operands: Default::default(), ty, name, loc: Some(lines.loc(arg.offset)), origin: None };
        if values.insert(&arg.name, arg_slot[i]).is_some() {
            return Err(at(arg.offset, format!("redefinition of value {}", arg.name)));
        }
        nodes[arg_slot[i]] = Some((node, label));
        defined_at[arg_slot[i]] = (&arg.name, arg.offset);
        spans[arg_slot[i]] = arg.loc_span.clone();
        let position = u32_attr(find(&attrs, ATTR_POSITION), ATTR_POSITION).map_err(|m| at(arg.offset, format!("argument {}: {m}", arg.name)))?;
        explicit[arg_slot[i]] = (label, position.map(|p| p as usize));
    }

    let mut outputs = None;
    // By (name, properties, attributes) as spelled: the op, its explicit id, its symbols.
    type KnownOp = (crate::ir::Op, Option<u32>, Option<Attr>);
    let mut known_ops: HashMap<(&str, &str, &str), KnownOp> = HashMap::default();
    let mut ops = block.ops.iter().filter(|o| o.name != "func.return").zip(&op_slot);
    for op in &block.ops {
        let offset = op.span.start;
        if op.name == "func.return" {
            // The terminator ends the block (an op after it was taken and
            // moved before it: an adversarial run).
            if !std::ptr::eq(op, block.ops.last().expect("this op is in the block")) {
                return Err(at(offset, "`func.return` must be the last op of its block".into()));
            }
            let ids = operand_ids(op, &values, &nodes, lines)?;
            outputs = Some(ids);
            continue;
        }
        let (_, &slot) = ops.next().expect("counted");
        let op_name = &op.name[OP_PREFIX.len()..];
        // The name as messages show it: any string, in one line.
        // (Made only for a message: most ops have none.)
        let shown = || crate::diag::echo_in_line(&op.name);
        // Nothing of an op is dropped: a region (a body, a nested module)
        // was, without a word (an adversarial run).
        if !op.regions.is_empty() {
            return Err(at(offset, format!("`{}` has {} region(s); rlx ops have none", shown(), op.regions.len())));
        }
        if op.results.len() != 1 || op.result_types.len() != 1 {
            return Err(at(offset, format!("`{}` must have exactly one result", shown())));
        }
        // Ops spelled alike are alike: most graphs repeat a few op
        // configurations, so each spelling of the attributes is read once.
        let key = (op.name.as_str(), &lines.text[op.dict_spans[0].clone()], &lines.text[op.dict_spans[1].clone()]);
        let (rlx_op, label, symbols) = match known_ops.get(&key) {
            Some(known) => known.clone(),
            None => {
                let mut attrs = Vec::new();
                for span in &op.dict_spans {
                    let dict = super::syntax::parse_dict_at(lines.text, span.clone(), &READ_OPTIONS).map_err(|e| at(e.offset, e.message))?;
                    attrs.extend(dict.into_iter().map(|(k, v, _)| (k, v)));
                }
                let (fields, text) = op_fields(module, &attrs, lines).map_err(|m| at(offset, format!("`{}`: {m}", shown())))?;
                let rlx_op = mapping::op_from_attributes(op_name, fields, text.as_deref()).map_err(|m| at(offset, format!("`{}`: {m}", shown())))?;
                let label = u32_attr(find(&attrs, ATTR_ID), ATTR_ID).map_err(|m| at(offset, format!("`{}`: {m}", shown())))?;
                let known = (rlx_op, label, find(&attrs, ATTR_SYMBOLS).cloned());
                // A constant is not remembered: that would copy its bytes.
                if !matches!(known.0.kind(), crate::ir::OpKind::Constant { .. }) {
                    known_ops.insert(key, known.clone());
                }
                known
            }
        };
        let ty = resolve_type(&op.result_types[0], symbols.as_ref(), offset, &format!("result of `{}`", shown()))?;
        let operands = operand_ids(op, &values, &nodes, lines)?;
        // A graph's nodes come after what they use: an argument that
        // `rlx.position` places after one of its users has no exact graph.
        if let Some((used, _)) = op.operands.iter().zip(&operands).find(|(_, id)| id.0 as usize >= slot) {
            return Err(at(offset, format!("`{}` uses {}, which `{ATTR_POSITION}` places after it", shown(), used.0)));
        }
        let name = located_name(module, op.loc.as_ref()).map_err(|m| at(offset, format!("`{}`: {m}", shown())))?;
        let node = Node { label: 0, op: rlx_op, operands: operands.into(), ty, name, loc: Some(lines.loc(offset)), origin: None };
        if values.insert(&op.results[0], slot).is_some() {
            return Err(at(offset, format!("redefinition of value {}", op.results[0])));
        }
        nodes[slot] = Some((node, label));
        defined_at[slot] = (&op.results[0], offset);
        spans[slot] = op.loc_span.clone();
        explicit[slot] = (label, None);
    }
    let Some(outputs) = outputs else {
        return Err(at(func.span.start, format!("function @{name} has no `func.return`")));
    };
    if let Some(Attr::Type(Type::Function(params, results))) = func.attr("function_type") {
        // The arguments as the block declares them (checked after the
        // body, as the results are; a mismatch was taken, the block's
        // types winning: an adversarial run).
        if params.len() != block.args.len() {
            return Err(at(func.span.start, format!("function @{name} declares {} arguments but its block takes {}", params.len(), block.args.len())));
        }
        for (i, (declared, &slot)) in params.iter().zip(&arg_slot).enumerate() {
            let taken = &nodes[slot].as_ref().expect("arguments are defined").0.ty;
            match tensor_of(declared) {
                Ok(t) if same_mlir_type(&t, taken) => {}
                Ok(t) => return Err(at(block.args[i].offset, format!("function @{name} declares argument {i} as {t} but its block takes {taken}"))),
                Err(why) => return Err(at(func.span.start, format!("function @{name}: argument {i}: {why}"))),
            }
        }
        if results.len() != outputs.len() {
            return Err(at(func.span.start, format!("function @{name} declares {} results but returns {}", results.len(), outputs.len())));
        }
        for (i, (declared, id)) in results.iter().zip(&outputs).enumerate() {
            let returned = &nodes[id.0 as usize].as_ref().expect("returned values are defined").0.ty;
            match tensor_of(declared) {
                Ok(t) if same_mlir_type(&t, returned) => {}
                Ok(t) => return Err(at(func.span.start, format!("function @{name} declares result {i} as {t} but returns {returned}"))),
                Err(why) => return Err(at(func.span.start, format!("function @{name}: result {i}: {why}"))),
            }
        }
    }

    // A node without `rlx.id` takes the id after its predecessor's; ids
    // name values in RLX text, so one given twice has no exact graph.
    let mut next_label = 0u32;
    let mut labels: HashMap<u32, &str> = HashMap::with_capacity_and_hasher(total, Default::default());
    let mut graph_nodes = Vec::with_capacity(total);
    for (slot, n) in nodes.into_iter().enumerate() {
        let (mut node, label) = n.expect("every slot is filled");
        node.label = label.unwrap_or(next_label);
        next_label = node.label.wrapping_add(1);
        let (value, offset) = defined_at[slot];
        if let Some(other) = labels.insert(node.label, value) {
            let how = if label.is_some() { format!("its `{ATTR_ID}`") } else { "one after the node before it".to_string() };
            return Err(at(offset, format!("{value} gets node id {} ({how}), which {other} already has: node ids must be unique", node.label)));
        }
        graph_nodes.push(node);
    }
    let mut graph = Graph::with_nodes(name, graph_nodes);
    graph.outputs = outputs;
    let mut origins = vec![Origin::Arg(0); total];
    for (i, &slot) in arg_slot.iter().enumerate() {
        origins[slot] = Origin::Arg(i);
    }
    for (i, &slot) in op_slot.iter().enumerate() {
        origins[slot] = Origin::Op(i);
    }
    Ok(Converted { graph, loc_spans: spans, origins, explicit })
}

/// The name a value's location gives it, its aliases followed; an alias
/// that is not defined, or a chain of them that never ends, is refused as
/// MLIR refuses it (both were taken as no name: an adversarial run).
fn located_name(module: &Module, loc: Option<&super::syntax::Location>) -> Result<Option<String>, String> {
    match module.follow(loc)? {
        Some(super::syntax::Location::Name(name)) => Ok(Some(name.clone())),
        _ => Ok(None),
    }
}

/// The operands' node ids, checking the types the op spells against their definitions.
fn operand_ids(op: &Operation, values: &HashMap<&str, usize>, nodes: &[Option<(Node, Option<u32>)>], lines: &Lines) -> Result<Vec<NodeId>, FormatError> {
    if op.operand_types.len() != op.operands.len() {
        return Err(lines.error(op.span.start, format!("`{}` has {} operands but {} operand types", crate::diag::echo_in_line(&op.name), op.operands.len(), op.operand_types.len())));
    }
    op.operands
        .iter()
        .zip(&op.operand_types)
        .map(|((name, offset), ty)| {
            let &slot = values.get(name.as_str()).ok_or_else(|| lines.error(*offset, format!("use of undefined value {name}")))?;
            let defined = &nodes[slot].as_ref().expect("defined before use").0.ty;
            let spelled = tensor_of(ty).ok();
            if spelled.as_ref().is_none_or(|t| !same_mlir_type(t, defined)) {
                let mut want = String::new();
                mapping::write_tensor_type(defined, &mut want);
                return Err(lines.error(*offset, format!("{name} is used as {} but defined as {want}", type_text(ty))));
            }
            Ok(NodeId(slot as u32))
        })
        .collect()
}

fn type_text(ty: &Type) -> String {
    match ty {
        Type::Tensor(t) => {
            let mut s = String::new();
            mapping::write_tensor_type(t, &mut s);
            s
        }
        Type::Other { text, .. } => text.clone(),
        Type::Function(..) => "a function type".into(),
    }
}

/// Equal as MLIR sees them: dynamic dims match any dynamic dim.
fn same_mlir_type(a: &TensorType, b: &TensorType) -> bool {
    a.dtype == b.dtype
        && a.dims.len() == b.dims.len()
        && a.dims.iter().zip(&b.dims).all(|(x, y)| match (x, y) {
            (Dim::Static(p), Dim::Static(q)) => p == q,
            (Dim::Dynamic(_), Dim::Dynamic(_)) => true,
            _ => false,
        })
}

fn tensor_of(ty: &Type) -> Result<TensorType, String> {
    match ty {
        Type::Tensor(t) => Ok(t.clone()),
        Type::Other { why, .. } => Err(why.clone()),
        Type::Function(..) => Err("a function type is not a tensor type".into()),
    }
}

fn find<'a>(attrs: &'a [(String, Attr)], key: &str) -> Option<&'a Attr> {
    attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// An integer attribute that must fit a `u32` (ids, positions), if present.
fn u32_attr(attr: Option<&Attr>, key: &str) -> Result<Option<u32>, String> {
    match attr {
        None => Ok(None),
        Some(a) => match int_of(a).map(u32::try_from) {
            Some(Ok(v)) => Ok(Some(v)),
            _ => Err(format!("`{key}` must be an integer in 0..2^32")),
        },
    }
}

fn int_of(attr: &Attr) -> Option<i64> {
    match attr {
        Attr::Int { value, .. } => i64::try_from(*value).ok(),
        _ => None,
    }
}

/// The attributes that spell the op (not ids, positions, symbols), and the text hint.
type OpFields = (Vec<(String, AttrValue)>, Option<String>);

fn op_fields(module: &Module, attrs: &[(String, Attr)], lines: &Lines) -> Result<OpFields, String> {
    refuse_duplicate_keys(attrs, "attribute")?;
    let mut fields = Vec::new();
    let mut text = None;
    for (key, attr) in attrs {
        match key.as_str() {
            ATTR_ID | ATTR_POSITION | ATTR_SYMBOLS => {}
            mapping::ATTR_TEXT => match attr {
                Attr::Str(s) => text = Some(s.clone()),
                _ => return Err(format!("`{}` must be a string", mapping::ATTR_TEXT)),
            },
            _ => fields.push((key.clone(), attr_value(module, attr, lines).map_err(|m| format!("attribute `{key}`: {m}"))?)),
        }
    }
    Ok((fields, text))
}

/// MLIR refuses a dictionary with a key given twice; read, the last (or
/// the first, for `rlx.id` and `rlx.position`) won (an adversarial run).
/// `what` names the entries in the message: an op's attributes, or a
/// nested dictionary's keys.
fn refuse_duplicate_keys(attrs: &[(String, Attr)], what: &str) -> Result<(), String> {
    let mut seen = std::collections::HashSet::with_capacity(attrs.len());
    match attrs.iter().find(|(key, _)| !seen.insert(key.as_str())) {
        Some((key, _)) => Err(format!("{what} `{}` is given twice", crate::diag::echo_in_line(key))),
        None => Ok(()),
    }
}

fn attr_value(module: &Module, attr: &Attr, lines: &Lines) -> Result<AttrValue, String> {
    match attr {
        Attr::Dense { literal, ty } => {
            let ty = tensor_of(ty)?;
            // Counted before decoding: four `dense<1.0>` splats of 4 GB each
            // (669 bytes of text) aborted in the allocator (an adversarial run).
            // (A tensor past the one-tensor limit is decode_dense's error.)
            let size = ty.byte_size();
            let total = size.map_or(u64::MAX, |b| b.saturating_add(lines.dense.get()));
            if size.is_some_and(|b| b <= MAX_TENSOR_BYTES) && total > MAX_DENSE_BYTES_TOTAL {
                return Err(format!("dense elements of {ty} would bring the module's constants past {} together, the most they may decode to", shown_bytes(MAX_DENSE_BYTES_TOTAL)));
            }
            let bytes = decode_dense(literal, &ty).map_err(|e| e.to_string())?;
            lines.dense.set(total);
            Ok(AttrValue::Dense(bytes))
        }
        other => Ok(AttrValue::Json(Expansion { aliased: Some(&lines.aliased), ..Expansion::default() }.json_of(module, other)?)),
    }
}

/// An attribute being converted to JSON with its aliases expanded, bounded:
/// an alias that refers to itself is refused, and so is one whose expansion
/// outgrows [`MAX_ALIAS_EXPANSION`] values or [`MAX_NESTING`] levels (ten
/// aliases of ten references each would otherwise grow to 10^10 values).
#[derive(Default)]
struct Expansion<'m> {
    /// The aliases being expanded, outermost first.
    active: Vec<&'m str>,
    /// Values produced so far.
    values: usize,
    /// Arrays, dictionaries and aliases open: counted together, since an
    /// alias may hold a nested array that holds an alias.
    depth: usize,
    /// Values produced through aliases in the whole module so far: each
    /// attribute within its own bound, 10^4 ops each naming a 10^6-value
    /// alias (190 KB of text) still took gigabytes, each op's expansion
    /// held as its text (issue 25).
    aliased: Option<&'m std::cell::Cell<usize>>,
}

impl<'m> Expansion<'m> {
    fn json_of(&mut self, module: &'m Module, attr: &'m Attr) -> Result<Value, String> {
        self.values += 1;
        if self.values > MAX_ALIAS_EXPANSION {
            return Err(format!("the attribute expands to more than {MAX_ALIAS_EXPANSION} values through its aliases"));
        }
        if let Some(total) = self.aliased
            && !self.active.is_empty()
        {
            total.set(total.get() + 1);
            if total.get() > MAX_ALIAS_EXPANSION_TOTAL {
                return Err(format!("the module's attributes expand to more than {MAX_ALIAS_EXPANSION_TOTAL} values through their aliases"));
            }
        }
        if self.depth >= MAX_NESTING {
            return Err(format!("the attribute, its aliases expanded, is nested deeper than {MAX_NESTING} levels"));
        }
        self.depth += 1;
        let value = self.json_here(module, attr);
        self.depth -= 1;
        value
    }

    fn json_here(&mut self, module: &'m Module, attr: &'m Attr) -> Result<Value, String> {
        Ok(match attr {
            Attr::Int { value, ty } => match ty.as_deref() {
                Some("i1") => Value::Bool(*value != 0),
                _ => {
                    if let Ok(v) = i64::try_from(*value) {
                        Value::from(v)
                    } else {
                        Value::from(u64::try_from(*value).map_err(|_| format!("integer {value} does not fit in 64 bits"))?)
                    }
                }
            },
            Attr::Float(f) => Value::from(serde_json::Number::from_f64(*f).ok_or_else(|| format!("float {f} is not finite; RLX's JSON cannot hold it"))?),
            Attr::Bool(b) => Value::Bool(*b),
            Attr::Str(s) => Value::String(s.clone()),
            Attr::Unit => Value::Null,
            Attr::Array(items) | Attr::DenseArray(items) => Value::Array(items.iter().map(|a| self.json_of(module, a)).collect::<Result<_, _>>()?),
            Attr::Dict(entries) => {
                refuse_duplicate_keys(entries, "key")?;
                Value::Object(entries.iter().map(|(k, v)| Ok((k.clone(), self.json_of(module, v)?))).collect::<Result<_, String>>()?)
            }
            Attr::Alias(name) => {
                if self.active.contains(&name.as_str()) {
                    return Err(format!("attribute alias #{name} refers to itself"));
                }
                let aliased = module.attr_aliases.get(name).ok_or_else(|| format!("undefined attribute alias #{name}"))?;
                self.active.push(name.as_str());
                let value = self.json_of(module, aliased);
                self.active.pop();
                value?
            }
            Attr::Dense { .. } => return Err("dense elements are only read as a Constant's `value`".into()),
            Attr::Other(text) if text.starts_with("dense_resource<") => {
                return Err("dense_resource elements are not supported (their data lives in the file's dialect_resources): write the constant as dense<…>".into());
            }
            Attr::Type(_) | Attr::Other(_) => return Err("unsupported attribute kind (rlx ops take integers, floats, bools, strings, arrays and dictionaries)".into()),
        })
    }
}

/// The bytes of `dense<literal> : ty`: hex (`"0x…"`), a splat, or nested lists.
pub fn decode_dense(literal: &str, ty: &TensorType) -> Result<Vec<u8>, DenseError> {
    let n = ty.num_elements().ok_or(DenseError::DynamicShape)?;
    let size = ty.dtype.size_bytes();
    // Refused before anything is allocated: `dense<1.0> : tensor<4000000000xf32>` is 183 bytes of text.
    match n.checked_mul(size) {
        Some(total) if total <= MAX_TENSOR_BYTES => {}
        _ => return Err(DenseError::TooLarge { ty: ty.clone(), bytes: n.saturating_mul(size) }),
    }
    let (n, size) = (n as usize, size as usize);
    let literal = literal.trim();
    if let Some(hex) = literal.strip_prefix("\"0x").and_then(|s| s.strip_suffix('"')) {
        // Whole bytes of ASCII hex digits (which also makes the slicing below char-safe).
        if let Some((at, c)) = hex.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
            return Err(DenseError::HexDigit { digit: c, at: at + 1 });
        }
        if hex.len() % 2 != 0 {
            return Err(DenseError::HexOddDigits(hex.len()));
        }
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
            .collect::<Result<_, _>>()
            .map_err(|_| DenseError::HexInvalid)?;
        return match bytes.len() {
            len if len == n * size => Ok(bytes),
            len if len == size => Ok(bytes.repeat(n)),
            len => Err(DenseError::ByteCount { bytes: len, needed: n * size }),
        };
    }
    if literal.starts_with('[') {
        check_nesting(literal, &ty.dims)?;
    }
    let scalars: Vec<&str> = literal
        .split(|c: char| "[](),".contains(c))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let per_element = if matches!(ty.dtype, DType::C64 | DType::C128) { 2 } else { 1 };
    // A splat is one element, repeated below: reserving the whole tensor
    // for it too would take its size twice (in address space at least).
    let mut out = Vec::with_capacity(if scalars.len() == per_element { per_element * size } else { n * size });
    for s in &scalars {
        encode_scalar(s, ty.dtype, &mut out)?;
    }
    match scalars.len() {
        len if len == n * per_element => Ok(out),
        len if len == per_element => Ok(out.repeat(n)),
        len => Err(DenseError::ElementCount { elements: len / per_element, needed: n }),
    }
}

/// Why a `dense<…>` literal is not the bytes of its tensor type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DenseError {
    #[error("dense elements need a static shape")]
    DynamicShape,
    #[error("dense elements of {ty} would take {bytes} bytes; the limit is {}", shown_bytes(MAX_TENSOR_BYTES))]
    TooLarge { ty: TensorType, bytes: u64 },
    /// `at`: the digit's 1-based position.
    #[error("hexadecimal dense literal: `{}` at digit {at} is not a hexadecimal digit", digit.escape_debug())]
    HexDigit { digit: char, at: usize },
    #[error("hexadecimal dense literal: {0} digits are not whole bytes")]
    HexOddDigits(usize),
    #[error("invalid hexadecimal dense literal")]
    HexInvalid,
    #[error("dense literal has {bytes} bytes; tensor needs {needed}")]
    ByteCount { bytes: usize, needed: usize },
    #[error("dense literal has {elements} elements; tensor has {needed}")]
    ElementCount { elements: usize, needed: usize },
    /// A nested list shaped unlike the type (`literal` clipped, `dims` as written).
    #[error("dense literal `{literal}` is not shaped {dims}")]
    Shape { literal: String, dims: String },
    /// `element`: the MLIR element type (`f32`); `text`: the element, clipped.
    #[error("invalid {element} element `{text}`")]
    InvalidElement { element: &'static str, text: String },
    #[error("{element} element `{text}` is out of range")]
    OutOfRange { element: &'static str, text: String },
}

/// A nested-list literal holds `dims[d]` items at each depth `d` and its
/// elements (scalars, or `(re, im)` pairs) exactly at depth `dims.len()`:
/// a ragged list, or one shaped unlike its type, is refused rather than
/// read by its element count alone.
fn check_nesting(literal: &str, dims: &[Dim]) -> Result<(), DenseError> {
    let wrong = || DenseError::Shape { literal: crate::diag::clip(literal), dims: format!("{:?}", dims.iter().map(|d| d.as_static().unwrap_or(0)).collect::<Vec<_>>()) };
    let mut counts: Vec<u64> = Vec::new();
    let mut in_item = false;
    let mut in_pair = false;
    for c in literal.chars() {
        match c {
            _ if in_pair => in_pair = c != ')',
            '[' => {
                if counts.len() >= dims.len() {
                    return Err(wrong());
                }
                if let Some(parent) = counts.last_mut() {
                    *parent += 1;
                }
                counts.push(0);
                in_item = false;
            }
            ']' => {
                let level = counts.len().checked_sub(1).ok_or_else(wrong)?;
                let count = counts.pop().ok_or_else(wrong)?;
                if dims[level].as_static() != Some(count) {
                    return Err(wrong());
                }
                in_item = false;
            }
            ',' => in_item = false,
            c if c.is_whitespace() => {}
            _ => {
                if counts.len() != dims.len() {
                    return Err(wrong());
                }
                if !in_item {
                    *counts.last_mut().ok_or_else(wrong)? += 1;
                    in_item = true;
                }
                in_pair = c == '(';
            }
        }
    }
    if counts.is_empty() { Ok(()) } else { Err(wrong()) }
}

fn encode_scalar(s: &str, dtype: DType, out: &mut Vec<u8>) -> Result<(), DenseError> {
    let bad = || DenseError::InvalidElement { element: mapping::element_type(dtype), text: crate::diag::clip(s) };
    // `1e400` reads as infinity: only a literal that says inf or nan may be one.
    let float = |s: &str| -> Result<f64, DenseError> {
        let v = s.parse::<f64>().map_err(|_| bad())?;
        let spelled = s.contains("inf") || s.contains("nan");
        let fits = match dtype {
            DType::F32 | DType::C64 => (v as f32).is_finite(),
            DType::F16 => half::f16::from_f64(v).is_finite(),
            DType::BF16 => half::bf16::from_f64(v).is_finite(),
            _ => v.is_finite(),
        };
        if fits || spelled { Ok(v) } else { Err(DenseError::OutOfRange { element: mapping::element_type(dtype), text: crate::diag::clip(s) }) }
    };
    let range = |v: i128, lo: i128, hi: i128| if (lo..=hi).contains(&v) { Ok(v) } else { Err(DenseError::OutOfRange { element: mapping::element_type(dtype), text: v.to_string() }) };
    let int = || -> Result<i128, DenseError> {
        match s {
            "true" => Ok(1),
            "false" => Ok(0),
            _ => s.parse::<i128>().map_err(|_| bad()),
        }
    };
    let bits = |s: &str| s.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok());
    match dtype {
        DType::F32 | DType::C64 => out.extend(match bits(s) {
            Some(b) => (b as u32).to_le_bytes(),
            None => (float(s)? as f32).to_le_bytes(),
        }),
        DType::F64 | DType::C128 => out.extend(match bits(s) {
            Some(b) => b.to_le_bytes(),
            None => float(s)?.to_le_bytes(),
        }),
        DType::F16 => out.extend(match bits(s) {
            Some(b) => (b as u16).to_le_bytes(),
            None => half::f16::from_f64(float(s)?).to_le_bytes(),
        }),
        DType::BF16 => out.extend(match bits(s) {
            Some(b) => (b as u16).to_le_bytes(),
            None => half::bf16::from_f64(float(s)?).to_le_bytes(),
        }),
        DType::I8 => out.push(range(int()?, i8::MIN.into(), i8::MAX.into())? as u8),
        DType::U8 => out.push(range(int()?, 0, u8::MAX.into())? as u8),
        DType::Bool => out.push(range(int()?, 0, 1)? as u8),
        DType::I16 => out.extend((range(int()?, i16::MIN.into(), i16::MAX.into())? as i16).to_le_bytes()),
        DType::I32 => out.extend((range(int()?, i32::MIN.into(), i32::MAX.into())? as i32).to_le_bytes()),
        DType::U32 => out.extend((range(int()?, 0, u32::MAX.into())? as u32).to_le_bytes()),
        DType::I64 => out.extend((range(int()?, i64::MIN.into(), i64::MAX.into())? as i64).to_le_bytes()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_literals_in_every_spelling() {
        let ty = TensorType::new(&[2], DType::F32);
        let want: Vec<u8> = [1.0f32, 0.1].iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(decode_dense("[1.000000e+00, 1.000000e-01]", &ty).unwrap(), want);
        assert_eq!(decode_dense("\"0x0000803FCDCCCC3D\"", &ty).unwrap(), want);
        assert_eq!(decode_dense("1.0", &ty).unwrap(), [1.0f32, 1.0].iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!(decode_dense("[0x7FC00000, 0.0]", &ty).unwrap()[..4], 0x7FC0_0000u32.to_le_bytes());
        let c = TensorType::new(&[1], DType::C64);
        assert_eq!(decode_dense("[(1.0,2.0)]", &c).unwrap().len(), 8);
        assert!(decode_dense("[1.0, 2.0, 3.0]", &ty).unwrap_err().to_string().contains("is not shaped [2]"));
        assert!(matches!(decode_dense("[1.0, 2.0, 3.0]", &ty), Err(DenseError::Shape { .. })));
        assert_eq!(decode_dense("\"0x0G\"", &ty), Err(DenseError::HexDigit { digit: 'G', at: 2 }));
        assert_eq!(decode_dense("\"0x000\"", &ty).unwrap_err().to_string(), "hexadecimal dense literal: 3 digits are not whole bytes");
        assert_eq!(decode_dense("1.0, 2.0, 3.0", &ty), Err(DenseError::ElementCount { elements: 3, needed: 2 }));
    }

    /// Issue 15: literals shaped unlike their type, ragged ones, and values
    /// out of their type's range were read by element count or wrapped.
    #[test]
    fn dense_literals_must_fit_their_type() {
        let square = TensorType::new(&[2, 2], DType::F32);
        assert!(decode_dense("[[1.0, 2.0], [3.0, 4.0]]", &square).is_ok());
        for bad in ["[1.0, 2.0, 3.0, 4.0]", "[[1.0, 2.0, 3.0], [4.0]]", "[[1.0], [2.0, 3.0, 4.0]]", "[[[1.0, 2.0]], [3.0, 4.0]]", "[[1.0, 2.0], 3.0, 4.0]"] {
            assert!(decode_dense(bad, &square).unwrap_err().to_string().contains("is not shaped [2, 2]"), "{bad}");
        }
        let flat = TensorType::new(&[4], DType::F32);
        assert!(decode_dense("[[1.0, 2.0], [3.0, 4.0]]", &flat).is_err());
        let one = TensorType::new(&[1], DType::F32);
        assert!(decode_dense("[1e400]", &one).unwrap_err().to_string().contains("out of range"));
        assert!(decode_dense("[1e39]", &one).unwrap_err().to_string().contains("out of range"));
        assert!(decode_dense("[inf]", &one).is_ok());
        let bytes = TensorType::new(&[1], DType::I8);
        assert!(decode_dense("[300]", &bytes).unwrap_err().to_string().contains("out of range"));
        assert_eq!(decode_dense("[-128]", &bytes).unwrap(), [0x80]);
    }
}
