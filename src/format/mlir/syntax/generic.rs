//! The generic operation form (`%0 = "dialect.op"(%x) <{…}> ({…}) {…} : (…) -> …`)
//! and what every form shares: operations, regions, block arguments,
//! locations, attribute dictionaries, attributes and types.

use super::{Options, STOPPED};
use super::lexer::{Parser, Result};
use super::tree::{Attr, Block, BlockArg, Entries, Location, Operation, Type};
use crate::ir::{Dim, TensorType};
use std::ops::Range;

impl Parser<'_> {
    /// An operation in either form, with its results and trailing location.
    pub(super) fn operation(&mut self) -> Result<Operation> {
        self.skip_ws();
        let start = self.pos;
        let mut results = Vec::new();
        if self.peek() == Some(b'%') {
            loop {
                let (name, _) = self.value_id()?;
                if self.eat(b":") {
                    self.integer()?;
                }
                results.push(name);
                if !self.eat(b",") {
                    break;
                }
            }
            self.expect(b"=")?;
        }
        let mut op = match self.peek() {
            Some(b'"') => {
                let name = self.string()?;
                self.generic_rest(name)?
            }
            _ => {
                let at = self.pos;
                let name = self.ident().map(str::to_string);
                match name.as_deref() {
                    Some("module" | "builtin.module") => self.custom_module()?,
                    Some("func.func") => self.custom_func()?,
                    Some("return" | "func.return") => self.custom_return()?,
                    Some(other) => {
                        self.pos = at;
                        return self.fail(format!("cannot read the custom form of `{other}`; print the module in generic form (mlir-opt --mlir-print-op-generic)"));
                    }
                    None => {
                        let found = self.found();
                        return self.fail(format!("expected an operation, found {found}"));
                    }
                }
            }
        };
        op.results = results;
        (op.loc, op.loc_span) = self.optional_location()?;
        op.span = start..self.pos;
        Ok(op)
    }

    /// An operation with only its name, for a parser to fill in.
    pub(super) fn empty_op(name: String) -> Operation {
        Operation {
            name,
            span: 0..0,
            results: Vec::new(),
            operands: Vec::new(),
            properties: Vec::new(),
            attributes: Vec::new(),
            regions: Vec::new(),
            operand_types: Vec::new(),
            result_types: Vec::new(),
            loc: None,
            loc_span: None,
            dict_spans: [0..0, 0..0],
        }
    }

    /// The generic form after the quoted name: operands, successors
    /// (skipped), properties, regions, attributes and the function type.
    fn generic_rest(&mut self, name: String) -> Result<Operation> {
        let lazy = self.options.lazy_attributes_prefix.is_some_and(|prefix| name.starts_with(prefix));
        let mut op = Self::empty_op(name);
        self.expect(b"(")?;
        op.operands = self.list(b")", Self::value_id)?;
        if self.peek() == Some(b'[') {
            self.balanced()?;
        }
        if self.eat(b"<") {
            self.skip_ws();
            if self.peek() == Some(b'{') {
                (op.properties, op.dict_spans[0]) = self.dict_unless(lazy)?;
            } else {
                self.attr()?;
            }
            self.expect(b">")?;
        }
        if self.eat(b"(") {
            op.regions = if op.name == "builtin.module" { self.list(b")", Self::module_body)? } else { self.list(b")", Self::region)? };
        }
        if self.peek() == Some(b'{') {
            (op.attributes, op.dict_spans[1]) = self.dict_unless(lazy)?;
        }
        self.expect(b":")?;
        match self.ty()? {
            Type::Function(inputs, outputs) => {
                op.operand_types = inputs;
                op.result_types = outputs;
            }
            _ => return self.fail("expected the operation's function type `(…) -> …`"),
        }
        Ok(op)
    }

    /// A dictionary and its span; only delimited when `lazy`.
    fn dict_unless(&mut self, lazy: bool) -> Result<(Entries, Range<usize>)> {
        self.skip_ws();
        let start = self.pos;
        let entries = if lazy {
            self.balanced()?;
            Vec::new()
        } else {
            self.dict()?
        };
        Ok((entries, start..self.pos))
    }

    /// `%name: type {attributes}? loc(…)?`; attributes only in a function's signature.
    pub(super) fn block_arg(&mut self, with_attributes: bool) -> Result<(BlockArg, Entries)> {
        let (name, offset) = self.value_id()?;
        self.expect(b":")?;
        let ty = self.ty()?;
        let attrs = if with_attributes && self.peek() == Some(b'{') { self.dict()? } else { Vec::new() };
        let (loc, loc_span) = self.optional_location()?;
        Ok((BlockArg { name, offset, ty, loc, loc_span }, attrs))
    }

    /// `{ ^label(args): ops … }`: a region's blocks; ops before any label
    /// belong to the entry block.
    pub(super) fn region(&mut self) -> Result<Vec<Block>> {
        self.region_of(false)
    }

    /// A module's region: its ops go to [`Parser::each`] where there is one.
    pub(super) fn module_body(&mut self) -> Result<Vec<Block>> {
        self.region_of(true)
    }

    fn region_of(&mut self, module_body: bool) -> Result<Vec<Block>> {
        // A module's body is handed over only where the module itself was
        // (at the top level, or in a module's body): a module inside a
        // function or another op is that op's, as it ever was.
        let handed_over = module_body && self.in_module_body;
        let outer = std::mem::replace(&mut self.in_module_body, handed_over);
        let region = self.nested(Self::region_here);
        self.in_module_body = outer;
        region
    }

    /// Hand `op` to [`Parser::each`] where it takes this op; otherwise it is
    /// the caller's to keep.
    pub(super) fn hand_off(&mut self, op: Operation) -> Result<Option<Operation>> {
        match &mut self.each {
            Some(each) if self.in_module_body => match each(op) {
                true => Ok(None),
                false => self.fail(STOPPED),
            },
            _ => Ok(Some(op)),
        }
    }

    fn region_here(&mut self) -> Result<Vec<Block>> {
        self.expect(b"{")?;
        let mut blocks = vec![Block::default()];
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                Some(b'^') => {
                    let mut block = Block::default();
                    self.pos += 1;
                    self.ident();
                    if self.eat(b"(") {
                        block.args = self.list(b")", |p| Ok(p.block_arg(false)?.0))?;
                    }
                    self.expect(b":")?;
                    if blocks.len() == 1 && blocks[0].ops.is_empty() && blocks[0].args.is_empty() {
                        blocks[0] = block;
                    } else {
                        blocks.push(block);
                    }
                }
                None => return self.fail("unterminated region: expected `}`"),
                Some(_) => {
                    let op = self.operation()?;
                    if let Some(op) = self.hand_off(op)? {
                        blocks.last_mut().expect("a region has a block").ops.push(op);
                    }
                }
            }
        }
        Ok(blocks)
    }

    /// Whether a `loc(…)` comes next, consuming nothing.
    fn peek_loc(&mut self) -> bool {
        let save = self.pos;
        self.skip_ws();
        let is_loc = self.src[self.pos..].starts_with(b"loc(");
        self.pos = save;
        is_loc
    }

    /// `dense_resource<name> : type`, kept by its spelling: its data lives
    /// in the file's `{-# dialect_resources #-}`, which this reader skips,
    /// and rlx ops' attributes refuse it as not supported.
    fn dense_resource(&mut self) -> Result<Attr> {
        let start = self.pos;
        self.pos += "dense_resource".len();
        self.balanced()?;
        self.expect(b":")?;
        self.ty()?;
        Ok(Attr::Other(self.text[start..self.pos].to_string()))
    }

    /// A trailing `loc(…)` if there is one, with its span.
    pub(super) fn optional_location(&mut self) -> Result<(Option<Location>, Option<Range<usize>>)> {
        if !self.peek_loc() {
            return Ok((None, None));
        }
        self.skip_ws();
        let start = self.pos;
        let loc = self.location()?;
        Ok((Some(loc), Some(start..self.pos)))
    }

    /// `loc(…)`: a name, an alias, a file position; anything else is `Other`.
    pub(super) fn location(&mut self) -> Result<Location> {
        self.expect(b"loc(")?;
        let loc = match self.peek() {
            Some(b'#') => Location::Alias(self.alias_name()?),
            Some(b'"') => {
                let text = self.string()?;
                match self.peek() {
                    Some(b'(') => {
                        self.balanced()?;
                        Location::Name(text)
                    }
                    Some(b')') => Location::Name(text),
                    Some(b':') => {
                        self.pos += 1;
                        let line = self.integer()?;
                        let col = if self.eat(b":") { self.integer()? } else { 0 };
                        self.skip_to_close()?;
                        Location::File { file: text, line: line as u32, col: col as u32 }
                    }
                    _ => {
                        self.skip_to_close()?;
                        Location::Other
                    }
                }
            }
            _ => {
                self.skip_to_close()?;
                Location::Other
            }
        };
        self.expect(b")")?;
        Ok(loc)
    }

    /// Skip to the `)` that closes the group we are in (not consuming it).
    fn skip_to_close(&mut self) -> Result<()> {
        while let Some(b) = self.peek() {
            match b {
                b')' => return Ok(()),
                b'(' | b'[' | b'{' | b'<' => {
                    self.balanced()?;
                }
                b'"' => {
                    self.string()?;
                }
                _ => self.pos += 1,
            }
        }
        self.fail("unterminated location")
    }

    /// `{name = value, unit_name, …}`, with the span of each value.
    pub(super) fn dict(&mut self) -> Result<Entries> {
        self.expect(b"{")?;
        let mut entries = Vec::new();
        if self.eat(b"}") {
            return Ok(entries);
        }
        loop {
            let key = if self.peek() == Some(b'"') {
                self.string()?
            } else {
                match self.ident() {
                    Some(k) => k.to_string(),
                    None => {
                        let found = self.found();
                        return self.fail(format!("expected an attribute name, found {found}"));
                    }
                }
            };
            if self.eat(b"=") {
                self.skip_ws();
                let start = self.pos;
                let value = self.attr()?;
                entries.push((key, value, start..self.pos));
            } else {
                entries.push((key, Attr::Unit, self.pos..self.pos));
            }
            if self.eat(b"}") {
                return Ok(entries);
            }
            self.expect(b",")?;
        }
    }

    /// One attribute value; what rlx-opt never looks into is kept by its spelling.
    pub(super) fn attr(&mut self) -> Result<Attr> {
        self.nested(Self::attr_here)
    }

    fn attr_here(&mut self) -> Result<Attr> {
        let rest = &self.src[self.pos..];
        let attr = match self.peek() {
            None => return self.fail("expected an attribute, found end of file"),
            Some(b'"') => Attr::Str(self.string()?),
            Some(b'[') => {
                self.pos += 1;
                Attr::Array(self.list(b"]", Self::attr)?)
            }
            Some(b'{') => Attr::Dict(self.dict()?.into_iter().map(|(k, v, _)| (k, v)).collect()),
            Some(b'-' | b'0'..=b'9') => return self.number(),
            Some(b'#') => {
                let start = self.pos;
                self.alias_name()?;
                if self.peek() == Some(b'<') {
                    self.balanced()?;
                    Attr::Other(self.text[start..self.pos].to_string())
                } else {
                    Attr::Alias(self.text[start + 1..self.pos].to_string())
                }
            }
            Some(b'@') => {
                let start = self.pos;
                self.pos += 1;
                self.symbol_name()?;
                while self.src[self.pos..].starts_with(b"::@") {
                    self.pos += 3;
                    self.symbol_name()?;
                }
                Attr::Other(self.text[start..self.pos].to_string())
            }
            // Data in `{-# dialect_resources #-}`: refused in `convert`.
            _ if rest.starts_with(b"dense_resource<") => self.dense_resource()?,
            _ if rest.starts_with(b"dense<") => {
                self.pos += 5;
                let literal = self.balanced()?;
                let literal = literal[1..literal.len() - 1].to_string();
                self.expect(b":")?;
                Attr::Dense { literal, ty: self.ty()? }
            }
            _ if rest.starts_with(b"array<") => {
                self.pos += 6;
                self.ty()?;
                let mut items = Vec::new();
                if self.eat(b":") {
                    loop {
                        items.push(self.attr()?);
                        if !self.eat(b",") {
                            break;
                        }
                    }
                }
                self.expect(b">")?;
                Attr::DenseArray(items)
            }
            _ => {
                let save = self.pos;
                match self.ident() {
                    Some("true") => Attr::Bool(true),
                    Some("false") => Attr::Bool(false),
                    Some("unit") => Attr::Unit,
                    Some(word) if word.contains('<') || is_attr_keyword(word) => {
                        self.pos = save;
                        let start = self.pos;
                        self.ident();
                        if self.peek() == Some(b'<') {
                            self.balanced()?;
                        }
                        Attr::Other(self.text[start..self.pos].to_string())
                    }
                    _ => {
                        self.pos = save;
                        Attr::Type(self.ty()?)
                    }
                }
            }
        };
        Ok(attr)
    }

    /// An integer or float literal with its optional `: type`.
    fn number(&mut self) -> Result<Attr> {
        let start = self.pos;
        if self.src.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        if self.src[self.pos..].starts_with(b"0x") {
            self.pos += 2;
            while self.src.get(self.pos).is_some_and(u8::is_ascii_hexdigit) {
                self.pos += 1;
            }
        } else {
            while self.src.get(self.pos).is_some_and(|&b| b.is_ascii_digit() || b"+-.eE".contains(&b)) {
                let b = self.src[self.pos];
                if (b == b'+' || b == b'-') && !matches!(self.src[self.pos - 1], b'e' | b'E') {
                    break;
                }
                self.pos += 1;
            }
        }
        let literal = &self.text[start..self.pos];
        let ty = if self.eat(b":") { Some(type_spelling(self.ty()?)) } else { None };
        let is_float_ty = ty.as_deref().is_some_and(|t| matches!(t, "f16" | "bf16" | "f32" | "f64"));
        if let Some(hex) = literal.strip_prefix("0x") {
            let bits = u64::from_str_radix(hex, 16).or_else(|_| self.fail(format!("invalid hexadecimal literal `{literal}`")))?;
            return Ok(match ty.as_deref() {
                Some("f64") => Attr::Float(f64::from_bits(bits)),
                Some("f32") => Attr::Float(f32::from_bits(bits as u32) as f64),
                _ => Attr::Int { value: bits as i128, ty },
            });
        }
        if literal.contains(['.', 'e', 'E']) || is_float_ty {
            let value: f64 = literal.parse().or_else(|_| self.fail(format!("invalid float literal `{literal}`")))?;
            Ok(Attr::Float(value))
        } else {
            let value: i128 = literal.parse().or_else(|_| self.fail(format!("invalid integer literal `{literal}`")))?;
            Ok(Attr::Int { value, ty })
        }
    }

    /// A type: functions and tensors are read, anything else is kept by its spelling.
    pub(super) fn ty(&mut self) -> Result<Type> {
        self.nested(Self::ty_here)
    }

    fn ty_here(&mut self) -> Result<Type> {
        self.skip_ws();
        let start = self.pos;
        if self.eat(b"(") {
            let inputs = self.list(b")", Self::ty)?;
            self.expect(b"->")?;
            let outputs = if self.eat(b"(") { self.list(b")", Self::ty)? } else { vec![self.ty()?] };
            return Ok(Type::Function(inputs, outputs));
        }
        if self.src[self.pos..].starts_with(b"tensor<") {
            self.pos += 6;
            let options = self.options;
            let body = self.balanced()?;
            let body = &body[1..body.len() - 1];
            return Ok(tensor_type(body, options).unwrap_or_else(|why| Type::Other { text: format!("tensor<{body}>"), why }));
        }
        if self.peek() == Some(b'!') {
            let name = self.alias_name()?;
            // An alias defined above (`!t = tensor<4xf32>`), not expanded:
            // a name is not told from a dialect type's by its spelling.
            if self.type_aliases.contains(&name) {
                let text = self.text[start..self.pos].to_string();
                return Ok(Type::Other { why: format!("`{text}` is a type alias, which rlx-opt does not expand (not supported): write the type in place"), text });
            }
        } else if self.ident().is_none() {
            let found = self.found();
            return self.fail(format!("expected a type, found {found}"));
        }
        if self.src.get(self.pos) == Some(&b'<') {
            self.balanced()?;
        }
        let text = self.text[start..self.pos].to_string();
        Ok(Type::Other { why: format!("`{text}` is not a tensor type"), text })
    }
}

/// Attribute keywords that would otherwise read as types.
fn is_attr_keyword(word: &str) -> bool {
    matches!(word, "affine_map" | "affine_set" | "dense_resource" | "sparse" | "strided" | "distinct" | "loc")
}

/// The type of an integer or float literal, by its spelling (`i64`, `f32`).
fn type_spelling(ty: Type) -> String {
    match ty {
        Type::Other { text, .. } => text,
        Type::Tensor(_) => "tensor".into(),
        Type::Function(..) => "function".into(),
    }
}

/// The inside of `tensor<…>`: `8x?x128xf32`, `f32`; an element type the
/// caller's dialect does not know, or an encoding, is reported with the reason.
fn tensor_type(body: &str, options: &Options) -> std::result::Result<Type, String> {
    let mut dims = smallvec::SmallVec::new();
    let mut rest = body.trim();
    if rest.starts_with('*') {
        return Err("unranked tensors have no static rank".into());
    }
    loop {
        let end = rest.find('x').unwrap_or(0);
        let dim = &rest[..end];
        if dim == "?" {
            dims.push(Dim::Dynamic(u32::MAX));
        } else if !dim.is_empty() && dim.bytes().all(|b| b.is_ascii_digit()) {
            dims.push(Dim::Static(dim.parse().map_err(|_| format!("dimension `{dim}` is too large"))?));
        } else {
            break;
        }
        rest = &rest[end + 1..];
    }
    let mut depth = 0i32;
    let top_level_comma = rest.bytes().position(|b| {
        depth += (b == b'<') as i32 - (b == b'>') as i32;
        b == b',' && depth == 0
    });
    if top_level_comma.is_some() {
        return Err(format!("tensor encodings are not supported (`tensor<{body}>`)"));
    }
    match (options.element_type)(rest) {
        // The text and JSON readers refuse these too: sizes are computed in u64.
        Some(dtype) if (TensorType { dims: dims.clone(), dtype }).byte_size_overflows() => Err(format!("`tensor<{body}>` has a byte size that overflows 64 bits")),
        Some(dtype) => Ok(Type::Tensor(TensorType { dims, dtype })),
        None if options.known_element_types.is_empty() => Err(format!("unknown element type `{rest}`")),
        None => Err(format!("unknown element type `{rest}` ({})", options.known_element_types)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::TEST_OPTIONS;
    use super::*;

    #[test]
    fn element_types_are_checked() {
        assert!(matches!(tensor_type("4xf32", &TEST_OPTIONS), Ok(Type::Tensor(_))));
        assert!(matches!(tensor_type("2xcomplex<f32>", &TEST_OPTIONS), Ok(Type::Tensor(_))));
        assert!(tensor_type("4xf8E4M3FN", &TEST_OPTIONS).unwrap_err().contains("unknown element type `f8E4M3FN`"));
        assert!(tensor_type("*xf32", &TEST_OPTIONS).is_err());
    }
}
