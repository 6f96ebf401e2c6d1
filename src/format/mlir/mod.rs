//! MLIR's generic form: a graph is a `func.func` of `"rlx.<Op>"` operations
//! (see [`mapping`] for the rules). Read and written by rlx-opt's own code so
//! that every host — rlx-opt, the melior pass (`mlir` feature) and the
//! mlir-opt plugin, which must not link a second MLIR — converts the same way;
//! the `mlir` feature's tests check this reader and writer against MLIR's.

pub mod convert;
pub mod edits;
pub mod mapping;
pub mod syntax;
pub mod writer;

use crate::format::FormatError;
use crate::ir::Graph;
use convert::Lines;
use syntax::{Attr, Operation};

pub use writer::{Locations, print, print_with};

/// Every function of the module as a graph. Functions must consist of `rlx`
/// ops; anything else is an error that names it.
pub fn parse(text: &str, first_line: u32) -> Result<Vec<Graph>, FormatError> {
    let mut graphs = Vec::new();
    for_each_graph(text, first_line, |graph| {
        graphs.push(graph);
        Ok::<_, FormatError>(())
    })?;
    Ok(graphs)
}

/// [`parse`], handing each function's graph to `f` as soon as it is read:
/// the module is read twice, first whole for its syntax and aliases (MLIR
/// prints location aliases after the module) keeping no operation, then
/// function by function, each converted and dropped. A module of a million
/// functions is never held as a syntax tree (about 4 KB a function).
/// Errors come in the order of the text, syntax errors first.
pub fn for_each_graph<E: From<FormatError>>(text: &str, first_line: u32, mut f: impl FnMut(Graph) -> Result<(), E>) -> Result<(), E> {
    let lines = Lines::new(text, first_line);
    let syntax_error = |e: syntax::SyntaxError| FormatError::at(lines.loc(e.offset), e.message);
    let aliases = match syntax::parse_each(text, &convert::READ_OPTIONS, |_| Ok::<_, ()>(())) {
        Ok(aliases) => aliases,
        Err(syntax::EachError::Syntax(e)) => return Err(syntax_error(e).into()),
        Err(syntax::EachError::Each(())) => unreachable!("the first read keeps going"),
    };
    // Symbols are unique in MLIR: a second function of one name is an
    // error. A set, so that a module of n functions reads in linear time
    // (a scan of the graphs per function was quadratic: 6.95 s for 80,000).
    let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
    let read = syntax::parse_each(text, &convert::READ_OPTIONS, |op| {
        if op.name == "func.func"
            && let Some(Attr::Str(name)) = op.attr("sym_name")
            && !names.insert(name.clone())
        {
            return Err(FormatError::at(lines.loc(op.span.start), format!("redefinition of symbol @{}", crate::diag::clip(name))).into());
        }
        match graph_of(&aliases, &op, &lines)? {
            Some(graph) => f(graph),
            None => Ok(()),
        }
    });
    match read {
        Ok(_) => Ok(()),
        Err(syntax::EachError::Each(e)) => Err(e),
        // The first read found none.
        Err(syntax::EachError::Syntax(e)) => Err(syntax_error(e).into()),
    }
}

/// The graph of an op read at the top level or in a module's body: a
/// function's, or none for a module (its functions came before it).
fn graph_of(aliases: &syntax::Module, op: &Operation, lines: &Lines) -> Result<Option<Graph>, FormatError> {
    match op.name.as_str() {
        "builtin.module" => Ok(None),
        "func.func" if convert::is_rlx_function(op) => Ok(Some(convert::function_to_graph(aliases, op, lines)?)),
        "func.func" if is_declaration(op) => Err(FormatError::at(
            lines.loc(op.span.start),
            "function declarations (no body) are not supported: rlx-opt reads functions of rlx.* ops, each a graph (the MLIR pass and the mlir-opt plugin leave declarations alone)",
        )),
        "func.func" => {
            let other = op.regions.iter().flatten().flat_map(|b| &b.ops).find(|o| !o.name.starts_with(mapping::OP_PREFIX) && o.name != "func.return");
            match other {
                Some(o) => Err(FormatError::at(lines.loc(o.span.start), format!("`{}` is not an rlx op: rlx-opt reads functions of rlx.* ops (the MLIR pass and the mlir-opt plugin leave other functions alone)", crate::diag::echo_in_line(&o.name)))),
                // A graph of inputs and outputs only.
                None if op.regions.len() == 1 && op.regions[0].len() == 1 => Ok(Some(convert::function_to_graph(aliases, op, lines)?)),
                None => Err(FormatError::at(lines.loc(op.span.start), "function has no body (or more than one block)")),
            }
        }
        other => Err(FormatError::at(lines.loc(op.span.start), format!("`{}` is not a module or a function of rlx ops", crate::diag::echo_in_line(other)))),
    }
}

/// A function without a body: no region, or one of no blocks (generic
/// form), or one empty block (how the generic form's `({ })` reads).
fn is_declaration(op: &Operation) -> bool {
    match op.regions.as_slice() {
        [] => true,
        [blocks] => blocks.is_empty() || (blocks.len() == 1 && blocks[0].ops.is_empty() && blocks[0].args.is_empty()),
        _ => false,
    }
}

/// Apply `f` to every function of rlx ops in the module (at any depth) and
/// put back each one `f` changed; everything else keeps its exact text.
/// Returns the new text and how many functions changed.
pub fn rewrite_functions<E: From<FormatError>>(text: &str, mut f: impl FnMut(Graph) -> Result<Graph, E>) -> Result<(String, usize), E> {
    let lines = Lines::new(text, 1);
    let module = syntax::parse(text, &convert::READ_OPTIONS).map_err(|e| FormatError::at(lines.loc(e.offset), e.message))?;
    let functions = functions_in_order(&module).into_iter().filter(|f| convert::is_rlx_function(f));
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut changed = 0;
    for func in functions {
        let converted = convert::convert_function(&module, func, &lines)?;
        let locations = converted.locations(text);
        let graph = converted.graph;
        let rewritten = f(graph.clone())?;
        if rewritten == graph {
            continue;
        }
        out.push_str(&text[copied..func.span.start]);
        let mut func_text = String::new();
        writer::write_func_with(&rewritten, &kept_func_attributes(text, func), Locations::Spelled(&locations), &mut func_text);
        out.push_str(func_text.trim());
        copied = func.span.end;
        changed += 1;
    }
    out.push_str(&text[copied..]);
    Ok((out, changed))
}

/// Apply `f` to every function of rlx ops in the module and describe, as
/// [`edits`], how to turn each one `f` changed into its result; `None` when
/// nothing changed.
pub fn function_edits<E: From<FormatError>>(text: &str, mut f: impl FnMut(Graph) -> Result<Graph, E>) -> Result<Option<String>, E> {
    let lines = Lines::new(text, 1);
    let module = syntax::parse(text, &convert::READ_OPTIONS).map_err(|e| FormatError::at(lines.loc(e.offset), e.message))?;
    let mut out = String::new();
    for (index, func) in functions_in_order(&module).into_iter().enumerate() {
        if !convert::is_rlx_function(func) {
            continue;
        }
        let converted = convert::convert_function(&module, func, &lines)?;
        let rewritten = f(converted.graph.clone())?;
        if rewritten != converted.graph {
            edits::function_edits(index, &converted, &rewritten, &mut out).map_err(|e| FormatError::at(lines.loc(func.span.start), e.to_string()))?;
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Every `func.func` of the module, at any depth, in textual order (MLIR's pre-order walk).
fn functions_in_order(module: &syntax::Module) -> Vec<&Operation> {
    let mut functions = Vec::new();
    let mut stack: Vec<&Operation> = module.ops.iter().rev().collect();
    while let Some(op) = stack.pop() {
        if op.name == "func.func" {
            functions.push(op);
        }
        stack.extend(op.regions.iter().flatten().flat_map(|b| &b.ops).rev());
    }
    functions
}

/// The file location (`loc("file":line:col)`) of the innermost op of `text`
/// that covers `line`/`col` of it: where, in the user's file, an error that
/// rlx-opt found in a printed module really is.
pub fn source_location(text: &str, at: crate::ir::Loc) -> Option<(String, u32, u32)> {
    let module = syntax::parse(text, &convert::READ_OPTIONS).ok()?;
    let lines = Lines::new(text, 1);
    let mut found = None;
    let mut ops: Vec<&Operation> = module.ops.iter().collect();
    while let Some(op) = ops.pop() {
        let (start, end) = (lines.loc(op.span.start), lines.loc(op.span.end));
        if (start.line, start.col) <= (at.line, at.col) && (at.line, at.col) < (end.line, end.col) {
            if let Some(syntax::Location::File { file, line, col }) = module.resolve(op.loc.as_ref()) {
                found = Some((file.clone(), *line, *col));
            }
            ops.extend(op.regions.iter().flatten().flat_map(|b| &b.ops));
        }
    }
    found
}

/// A function's properties and attributes other than those the writer makes
/// (visibility, result attributes, attributes of other dialects), as spelled.
fn kept_func_attributes(text: &str, func: &Operation) -> writer::FuncAttributes {
    let spell = |(key, attr, span): &(String, Attr, std::ops::Range<usize>)| {
        if matches!(key.as_str(), "sym_name" | "function_type" | "arg_attrs") {
            return None;
        }
        let value = if !span.is_empty() {
            Some(text[span.clone()].to_string())
        } else if let Attr::Str(s) = attr {
            let mut quoted = String::new();
            writer::write_string(s, &mut quoted);
            Some(quoted)
        } else {
            None
        };
        Some((key.clone(), value))
    };
    writer::FuncAttributes {
        properties: func.properties.iter().filter_map(spell).collect(),
        attributes: func.attributes.iter().filter_map(spell).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module of two functions whose locations are aliases MLIR prints
    /// after the module (`--mlir-print-debuginfo`).
    const TRAILING_ALIASES: &str = r#"module {
  func.func @first(%x: tensor<4xf32> loc(#signal)) -> tensor<4xf32> {
    %0 = "rlx.Activation"(%x) {rlx.value = "Relu"} : (tensor<4xf32>) -> tensor<4xf32> loc(#relu)
    return %0 : tensor<4xf32>
  }
  func.func @second(%y: tensor<4xf32>) -> tensor<4xf32> {
    return %y : tensor<4xf32>
  }
}
#signal = loc("signal")
#relu = loc("relu")
"#;

    #[test]
    fn functions_come_one_at_a_time_named_by_aliases_defined_after_them() {
        let mut seen = Vec::new();
        for_each_graph(TRAILING_ALIASES, 1, |graph| {
            let names: Vec<Option<String>> = graph.nodes().iter().map(|n| n.name.clone()).collect();
            seen.push((graph.name.clone(), names));
            Ok::<_, FormatError>(())
        })
        .unwrap();
        let named = |names: &[&str]| names.iter().map(|n| Some(n.to_string())).collect::<Vec<_>>();
        assert_eq!(seen, [("first".to_string(), named(&["signal", "relu"])), ("second".to_string(), vec![None])]);
    }

    #[test]
    fn the_reader_keeps_no_function_it_handed_over() {
        let mut names = Vec::new();
        let module = syntax::parse_each(TRAILING_ALIASES, &convert::READ_OPTIONS, |op| {
            names.push(op.attr("sym_name").cloned().unwrap_or(Attr::Unit));
            Ok::<_, ()>(())
        })
        .unwrap();
        // The functions, then the module they were in, each handed over as
        // soon as it was read; the aliases kept.
        assert_eq!(names, [Attr::Str("first".into()), Attr::Str("second".into()), Attr::Unit]);
        assert!(module.ops.is_empty());
        assert_eq!(module.loc_name(Some(&syntax::Location::Alias("relu".into()))), Some("relu"));
    }

    /// A module inside another op is that op's: its functions are not
    /// handed over, and the op is the error, as before the reader streamed
    /// (it handed them over and ran them: a review).
    #[test]
    fn a_module_inside_another_op_is_not_read_as_the_file_s() {
        let text = "module {\n  \"foo.wrap\"() ({\n    module {\n      func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {\n        return %x : tensor<4xf32>\n      }\n    }\n  }) : () -> ()\n}\n";
        let e = for_each_graph(text, 1, |_| -> Result<(), FormatError> { panic!("no graph of the inner module") }).unwrap_err();
        assert_eq!((e.loc().map(|at| (at.line, at.col)), e.to_string().as_str()), (Some((2, 3)), "`foo.wrap` is not a module or a function of rlx ops"));
    }

    /// `f`'s error stops the read where it was given: the broken text after
    /// the first function is never read.
    #[test]
    fn an_error_from_the_caller_stops_the_read() {
        let text = TRAILING_ALIASES.replace("  func.func @second", "  ) garbage (\n  func.func @second");
        let mut calls = 0;
        let stopped = syntax::parse_each(&text, &convert::READ_OPTIONS, |_| {
            calls += 1;
            Err("stop")
        });
        assert_eq!(stopped.unwrap_err(), syntax::EachError::Each("stop"));
        assert_eq!(calls, 1);
        // Read whole, the same text fails at the garbage, before any function
        // is converted.
        let e = for_each_graph(&text, 1, |_| -> Result<(), FormatError> { panic!("no graph before the syntax error") }).unwrap_err();
        assert_eq!((e.loc().map(|at| at.line), e.to_string().as_str()), (Some(6), "expected an operation, found `)`"));
    }
}
