//! A reader for MLIR's generic operation form, plus the custom forms of
//! `module`, `func.func` and `func.return` that `mlir-opt` prints by default.
//! It builds a light syntax tree with byte spans; ops of other dialects in
//! generic form are read (their attributes and types kept as raw spans), so a
//! host can rewrite the `rlx` functions of a module and leave the rest as it
//! was. This is rlx-opt's own reader so that the mlir-opt plugin, which must
//! not link a second MLIR, reads modules the same way rlx-opt does.
//!
//! The reader knows MLIR, not RLX: what it needs of a dialect (which ops'
//! attributes to leave for later, which element types exist) the caller says
//! in [`Options`].

mod custom;
mod generic;
mod lexer;
mod tree;

pub use lexer::SyntaxError;
pub use tree::{Attr, Block, BlockArg, Entries, Location, Module, Operation, Type};

use crate::ir::DType;
use lexer::{Parser, Result};
use std::ops::Range;

/// What the reader is told by the dialect it reads for.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Ops whose name starts with this have their properties and attribute
    /// dictionaries only delimited, not read (see [`Operation::dict_spans`]
    /// and [`parse_dict_at`]): a caller that reads them once per spelling
    /// need not pay for reading every op's. `None` reads every op's.
    pub lazy_attributes_prefix: Option<&'static str>,
    /// A tensor's element type from its MLIR spelling (`f32`, `complex<f32>`);
    /// with `None` the tensor is a [`Type::Other`] that says why.
    pub element_type: fn(&str) -> Option<DType>,
    /// Which element types `element_type` knows, said in brackets after an
    /// unknown one so that the user learns what to write instead.
    pub known_element_types: &'static str,
}

pub fn parse(text: &str, options: &Options) -> Result<Module> {
    read(Parser::new(text, 0, options))
}

/// Why [`parse_each`] stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum EachError<E> {
    Syntax(SyntaxError),
    /// What `each` returned.
    Each(E),
}

/// Why the parser stopped when `each` did: no message anyone reads.
const STOPPED: &str = "stopped by the caller";

/// [`parse`], handing each operation read at the top level or directly in a
/// module's body (a module's own functions, a nested module after its
/// functions) to `each` as soon as it is read, instead of keeping it: a
/// module of many functions is read holding one at a time. The module
/// returned has the aliases and no operations. The aliases are those read so
/// far when `each` is called: where they matter, read them first with
/// `parse_each(text, options, |_| Ok(()))`.
pub fn parse_each<E>(text: &str, options: &Options, mut each: impl FnMut(Operation) -> std::result::Result<(), E>) -> std::result::Result<Module, EachError<E>> {
    let mut failed = None;
    let mut take = |op| match each(op) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    };
    let mut p = Parser::new(text, 0, options);
    p.each = Some(&mut take);
    p.in_module_body = true;
    let module = read(p);
    match (module, failed) {
        (_, Some(e)) => Err(EachError::Each(e)),
        (module, None) => module.map_err(EachError::Syntax),
    }
}

fn read(mut p: Parser<'_>) -> Result<Module> {
    let mut module = Module::default();
    loop {
        p.skip_ws();
        match p.peek() {
            None => break,
            Some(b'#') => {
                let at = p.pos;
                let name = p.alias_name()?;
                if module.attr_aliases.contains_key(&name) || module.loc_aliases.contains_key(&name) {
                    p.pos = at;
                    return p.fail(format!("redefinition of alias #{name}"));
                }
                p.expect(b"=")?;
                p.skip_ws();
                if p.src[p.pos..].starts_with(b"loc(") {
                    let loc = p.location()?;
                    module.loc_aliases.insert(name, loc);
                } else {
                    let attr = p.attr()?;
                    module.attr_aliases.insert(name, attr);
                }
            }
            Some(b'!') => {
                let name = p.alias_name()?;
                p.expect(b"=")?;
                p.ty()?;
                p.type_aliases.insert(name);
            }
            Some(b'{') if p.src[p.pos..].starts_with(b"{-#") => match p.text[p.pos..].find("#-}") {
                Some(end) => p.pos += end + 3,
                None => return p.fail("unterminated `{-#` section"),
            },
            Some(_) => {
                let op = p.operation()?;
                if let Some(op) = p.hand_off(op)? {
                    module.ops.push(op);
                }
            }
        }
    }
    Ok(module)
}

/// Check, without parsing, that no brackets of `text` nest deeper than
/// twice [`MAX_NESTING`](crate::limits::MAX_NESTING) (strings and comments
/// skipped): what this reader accepts stays far inside that, and MLIR's own
/// recursive parser, which reads the text first with the `mlir` feature,
/// overflows the stack on hostile nesting.
pub fn check_bracket_depth(text: &str) -> Result<()> {
    let limit = 2 * crate::limits::MAX_NESTING;
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            // An arrow closes nothing.
            b'-' if bytes.get(i + 1) == Some(&b'>') => i += 1,
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                if depth > limit {
                    return Err(SyntaxError { offset: i, message: format!("nested deeper than {} levels", crate::limits::MAX_NESTING) });
                }
            }
            b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Read the attribute dictionary at `span` of `text`: the properties or
/// attributes of an op that [`parse`] only delimits (see
/// [`Options::lazy_attributes_prefix`]).
pub fn parse_dict_at(text: &str, span: Range<usize>, options: &Options) -> Result<Entries> {
    if span.is_empty() {
        return Ok(Vec::new());
    }
    Parser::new(text, span.start, options).dict()
}

/// A small dialect for the reader's own tests: `rlx.*` ops' attributes are
/// read lazily, and two element types exist.
#[cfg(test)]
pub(super) const TEST_OPTIONS: Options = Options {
    lazy_attributes_prefix: Some("rlx."),
    element_type: test_element_type,
    known_element_types: "the tests read f32, complex<f32>",
};

#[cfg(test)]
fn test_element_type(name: &str) -> Option<DType> {
    match name {
        "f32" => Some(DType::F32),
        "complex<f32>" => Some(DType::C64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_generic_and_custom_forms() {
        let text = r#"#loc1 = loc("x")
module {
  func.func @f(%arg0: tensor<4x?xf32> {rlx.op = "Input"} loc(#loc1)) -> tensor<4x?xf32> {
    %0 = "rlx.Activation"(%arg0) {rlx.value = "Relu", n = 1 : i64, f = 1.5e-3 : f64, a = array<i64: 1, -2>, u} : (tensor<4x?xf32>) -> tensor<4x?xf32> loc("relu")
    return %0 : tensor<4x?xf32>
  }
}
"#;
        let m = parse(text, &TEST_OPTIONS).unwrap();
        let func = &m.ops[0].regions[0][0].ops[0];
        assert_eq!(func.name, "func.func");
        let block = &func.regions[0][0];
        assert_eq!(block.args[0].name, "%arg0");
        assert_eq!(m.loc_name(block.args[0].loc.as_ref()), Some("x"));
        let op = &block.ops[0];
        let attrs = parse_dict_at(text, op.dict_spans[1].clone(), &TEST_OPTIONS).unwrap();
        let attr = |k: &str| attrs.iter().find(|(n, _, _)| n == k).map(|(_, a, _)| a.clone());
        assert_eq!(attr("n"), Some(Attr::Int { value: 1, ty: Some("i64".into()) }));
        assert_eq!(attr("f"), Some(Attr::Float(1.5e-3)));
        assert_eq!(attr("u"), Some(Attr::Unit));
        assert_eq!(m.loc_name(op.loc.as_ref()), Some("relu"));
        assert_eq!(block.ops[1].name, "func.return");
        assert_eq!(&text[op.span.clone()][..4], "%0 =");
    }

    #[test]
    fn syntax_errors_have_offsets() {
        let e = parse("\"builtin.module\"() ({\n  %0 = \"rlx.X\"(%1 : () -> ()\n}) : () -> ()", &TEST_OPTIONS).unwrap_err();
        assert_eq!(e.message, "expected `,`, found `:`");
        assert!(e.offset > 20);
    }
}
