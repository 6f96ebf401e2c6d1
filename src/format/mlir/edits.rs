//! Edits that turn the `rlx` functions of a module, as MLIR holds them, into
//! the functions a pass made of them: how the mlir-opt plugin puts a rewrite
//! back without printing and parsing whole functions again. Ops the pass left
//! alone stay the very same MLIR operations (attributes, locations and all);
//! only new ops are built, from text.
//!
//! One entry per line; a reference to a value is `a<i>` (argument i), `o<i>`
//! (op i of the function's body as it was, the return not counted) or `n<i>`
//! (the i-th op this function's edits create).
//!
//! ```text
//! F <i>                              the i-th func.func of the module, in textual order
//! K <op> [<ref>…]                    move op to the end of the body; with refs, set its operands
//! N <op|-> <ref>…\t<name>\t<result type>\t<attribute dictionary>
//!                                    create an op at the end of the body (located where op was)
//! S <op>\t<name>\t<attribute>        set an attribute of an op
//! A <arg>\t<name>\t<attribute>       set an attribute of an argument
//! R [<ref>…]                         the return's operands
//! T\t<type>\t…                       the function's new result types
//! ```
//! Ops of the body that no `K` entry keeps are erased.

use super::convert::{Converted, Origin};
use super::mapping::{self, ATTR_ID, ATTR_POSITION};
use super::writer;
use crate::ir::{Graph, NodeId};
use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write as _;

/// How a node of the rewritten graph relates to the function as it was.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Kept(Origin),
    /// The i-th new op.
    New(usize),
}

impl std::fmt::Display for Fate {
    /// The value's reference in the edits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fate::Kept(Origin::Arg(i)) => write!(f, "a{i}"),
            Fate::Kept(Origin::Op(i)) => write!(f, "o{i}"),
            Fate::New(i) => write!(f, "n{i}"),
        }
    }
}

/// Append the edits from `before` (with its origins) to `after` for the
/// `index`-th function. Labels identify nodes across the rewrite.
pub fn function_edits(index: usize, before: &Converted, after: &Graph, out: &mut String) -> Result<(), EditError> {
    let old = &before.graph;
    let old_by_label: HashMap<u32, NodeId> = old.ids().map(|id| (old.node(id).label, id)).collect();
    let (fate, new_count) = fates(before, &old_by_label, after);
    let args = before.origins.iter().filter(|o| matches!(o, Origin::Arg(_))).count();
    if fate.iter().filter(|f| matches!(f, Fate::Kept(Origin::Arg(_)))).count() != args || after.len() - new_count < args {
        return Err(EditError::ArgumentsChanged);
    }
    let write_references = |ids: &[NodeId], out: &mut String| {
        for &id in ids {
            let _ = write!(out, " {}", fate[id.index()]);
        }
    };
    let mut cache = mapping::AttributeCache::default();
    let explicit_of: HashMap<Origin, (Option<u32>, Option<usize>)> = before.origins.iter().copied().zip(before.explicit.iter().copied()).collect();

    let _ = writeln!(out, "F {index}");
    // The reader numbers a node one past the node before it unless `rlx.id`
    // says otherwise, and places arguments by `rlx.position`: set them where
    // the new order would read differently.
    let mut implicit = 0u32;
    for (position, id) in after.ids().enumerate() {
        let node = after.node(id);
        let mut id_attr = None;
        match fate[id.index()] {
            Fate::Kept(origin) => {
                let (old_id, old_position) = explicit_of[&origin];
                if old_id.unwrap_or(implicit) != node.label {
                    id_attr = Some(node.label);
                }
                match origin {
                    Origin::Arg(i) => {
                        if old_position.unwrap_or(i) != position {
                            let _ = writeln!(out, "A {i}\t{ATTR_POSITION}\t{position} : i64");
                        }
                        if let Some(label) = id_attr {
                            let _ = writeln!(out, "A {i}\t{ATTR_ID}\t{label} : i64");
                        }
                    }
                    Origin::Op(i) => {
                        let was = old_by_label[&node.label];
                        let operands = node.operands.iter().map(|&o| fate[o.index()]);
                        let old_operands = old.node(was).operands.iter().map(|&o| Fate::Kept(before.origins[o.index()]));
                        let _ = write!(out, "K {i}");
                        if !operands.eq(old_operands) {
                            write_references(&node.operands, out);
                        }
                        out.push('\n');
                        if let Some(label) = id_attr {
                            let _ = writeln!(out, "S {i}\t{ATTR_ID}\t{label} : i64");
                        }
                    }
                }
            }
            Fate::New(_) => {
                let attrs = writer::node_attributes(&mut cache, node, implicit, None);
                let located_at = match old_by_label.get(&node.label).map(|o| before.origins[o.index()]) {
                    Some(Origin::Op(i)) => i.to_string(),
                    _ => "-".to_string(),
                };
                let _ = write!(out, "N {located_at}");
                write_references(&node.operands, out);
                let _ = write!(out, "\t{}{}\t", mapping::OP_PREFIX, node.op.name());
                mapping::write_tensor_type(&node.ty, out);
                out.push('\t');
                writer::write_dict(&attrs, node, out);
                out.push('\n');
            }
        }
        implicit = node.label.wrapping_add(1);
    }
    out.push('R');
    write_references(&after.outputs, out);
    out.push('\n');
    write_result_types(old, after, out);
    Ok(())
}

/// Per node of `after`, whether it is a node of `before` unchanged (same
/// label, op text, type and name) or new; and how many are new.
fn fates(before: &Converted, old_by_label: &HashMap<u32, NodeId>, after: &Graph) -> (Vec<Fate>, usize) {
    let old = &before.graph;
    let mut fate: Vec<Fate> = Vec::with_capacity(after.len());
    let mut new_count = 0;
    for id in after.ids() {
        let node = after.node(id);
        let same = old_by_label.get(&node.label).filter(|&&o| {
            let was = old.node(o);
            was.op.same_text(&node.op) && was.ty == node.ty && was.name == node.name
        });
        fate.push(match same {
            Some(&o) => Fate::Kept(before.origins[o.index()]),
            None => {
                new_count += 1;
                Fate::New(new_count - 1)
            }
        });
    }
    (fate, new_count)
}

/// The `T` entry, where the function's result types changed.
fn write_result_types(old: &Graph, after: &Graph, out: &mut String) {
    let types = |g: &Graph| g.outputs.iter().map(|&o| g.node(o).ty.clone()).collect::<Vec<_>>();
    if types(old) != types(after) {
        out.push('T');
        for &o in &after.outputs {
            out.push('\t');
            mapping::write_tensor_type(&after.node(o).ty, out);
        }
        out.push('\n');
    }
}

/// Why a rewrite cannot be written as edits of the function it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("the pass changed the function's arguments, which the plugin cannot put back")]
    ArgumentsChanged,
}

#[cfg(test)]
mod tests {
    use super::super::{convert, functions_in_order, syntax};
    use super::*;

    #[test]
    fn a_rewrite_that_changes_an_argument_is_refused() {
        let text = "func.func @f(%x: tensor<4xf32> {rlx.Input = {name = \"x\"}}) -> tensor<4xf32> {\n  \
                    %0 = \"rlx.Binary\"(%x, %x) {rlx.value = \"Add\"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n  \
                    return %0 : tensor<4xf32>\n}\n";
        let lines = convert::Lines::new(text, 1);
        let module = syntax::parse(text, &convert::READ_OPTIONS).unwrap();
        let func = functions_in_order(&module)[0];
        let before = convert::convert_function(&module, func, &lines).unwrap();
        let mut after = before.graph.clone();
        let arg = after.ids().next().unwrap();
        after.node_mut(arg).name = Some("y".into());
        let e = function_edits(0, &before, &after, &mut String::new()).unwrap_err();
        assert_eq!(e, EditError::ArgumentsChanged);
        assert_eq!(e.to_string(), "the pass changed the function's arguments, which the plugin cannot put back");
        // Unchanged, the same function gives edits.
        function_edits(0, &before, &before.graph, &mut String::new()).unwrap();
    }
}
