//! The custom forms `mlir-opt` prints by default for `module`, `func.func`
//! and `func.return`, read into the same operations as their generic forms
//! (a function's name, type and argument attributes become its properties),
//! so that nothing after the reader tells the two apart.

use super::lexer::{Parser, Result};
use super::tree::{Attr, Operation, Type};

impl Parser<'_> {
    /// `module @name? attributes {…}? {…}`, after the keyword.
    pub(super) fn custom_module(&mut self) -> Result<Operation> {
        let mut op = Self::empty_op("builtin.module".into());
        if self.peek() == Some(b'@') {
            self.pos += 1;
            let name = self.symbol_name()?;
            op.properties.push(("sym_name".into(), Attr::Str(name), 0..0));
        }
        if self.eat(b"attributes") {
            op.attributes = self.dict()?;
        }
        op.regions.push(self.module_body()?);
        Ok(op)
    }

    /// `func.func private? @name(%arg: type {…}? loc(…)?, …) -> results
    /// attributes {…}? {…}?`, after the keyword; a declaration has no body.
    pub(super) fn custom_func(&mut self) -> Result<Operation> {
        let mut op = Self::empty_op("func.func".into());
        let save = self.pos;
        if let Some(vis @ ("private" | "public" | "nested")) = self.ident() {
            let vis = vis.to_string();
            op.properties.push(("sym_visibility".into(), Attr::Str(vis), 0..0));
        } else {
            self.pos = save;
        }
        self.expect(b"@")?;
        let name = self.symbol_name()?;
        op.properties.push(("sym_name".into(), Attr::Str(name), 0..0));
        self.expect(b"(")?;
        let mut arg_attrs = Vec::new();
        // A declaration's arguments are types alone (`@f(tensor<4xf32>)`):
        // read so that the function is refused as a declaration, not as
        // a missing `%name`.
        let mut declared = Vec::new();
        let args = self.list(b")", |p| {
            p.skip_ws();
            if p.peek() != Some(b'%') {
                declared.push(p.ty()?);
                if p.peek() == Some(b'{') {
                    p.dict()?;
                }
                p.optional_location()?;
                return Ok(None);
            }
            let arg = p.block_arg(true)?;
            arg_attrs.push(Attr::Dict(arg.1.into_iter().map(|(k, v, _)| (k, v)).collect()));
            Ok(Some(arg.0))
        })?;
        let named = args.len() - declared.len();
        let args: Vec<_> = args.into_iter().flatten().collect();
        if named > 0 && !declared.is_empty() {
            return self.fail("a function's arguments are all named (`%arg: type`) or, in a declaration, all types");
        }
        let mut results = Vec::new();
        if self.eat(b"->") {
            if self.eat(b"(") {
                results = self.list(b")", |p| {
                    let ty = p.ty()?;
                    if p.peek() == Some(b'{') {
                        p.dict()?;
                    }
                    Ok(ty)
                })?;
            } else {
                results.push(self.ty()?);
            }
        }
        let is_declaration = !declared.is_empty();
        let inputs = if is_declaration { declared } else { args.iter().map(|a| a.ty.clone()).collect() };
        op.properties.push(("function_type".into(), Attr::Type(Type::Function(inputs, results)), 0..0));
        if !args.is_empty() {
            op.properties.push(("arg_attrs".into(), Attr::Array(arg_attrs), 0..0));
        }
        if self.eat(b"attributes") {
            op.attributes = self.dict()?;
        }
        if self.peek() == Some(b'{') {
            if is_declaration {
                return self.fail("a function with a body names its arguments (`%arg: type`)");
            }
            let mut region = self.region()?;
            if let Some(entry) = region.first_mut() {
                entry.args = args;
            }
            op.regions.push(region);
        }
        Ok(op)
    }

    /// `return %a, %b : type, type`, or a bare `return`, after the keyword.
    pub(super) fn custom_return(&mut self) -> Result<Operation> {
        let mut op = Self::empty_op("func.return".into());
        if self.peek() == Some(b'%') {
            loop {
                op.operands.push(self.value_id()?);
                if !self.eat(b",") {
                    break;
                }
            }
            self.expect(b":")?;
            loop {
                op.operand_types.push(self.ty()?);
                if !self.eat(b",") {
                    break;
                }
            }
        }
        Ok(op)
    }
}
