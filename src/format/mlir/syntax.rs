//! A reader for MLIR's generic operation form, plus the custom forms of
//! `module`, `func.func` and `func.return` that `mlir-opt` prints by default.
//! It builds a light syntax tree with byte spans; ops of other dialects in
//! generic form are read (their attributes and types kept as raw spans), so a
//! host can rewrite the `rlx` functions of a module and leave the rest as it
//! was. This is rlx-opt's own reader so that the mlir-opt plugin, which must
//! not link a second MLIR, reads modules the same way rlx-opt does.

use crate::ir::{Dim, TensorType};
use std::collections::HashMap;
use std::ops::Range;

/// A syntax error at a byte offset.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

type Result<T> = std::result::Result<T, SyntaxError>;

#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Tensor(TensorType),
    Function(Vec<Type>, Vec<Type>),
    /// Any other type, with why rlx-opt cannot use it; `text` is its spelling.
    Other { text: String, why: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Int { value: i128, ty: Option<String> },
    Float(f64),
    Bool(bool),
    Str(String),
    Unit,
    Array(Vec<Attr>),
    /// `array<i64: 1, 2>` and friends.
    DenseArray(Vec<Attr>),
    Dict(Vec<(String, Attr)>),
    /// `dense<…> : type`: the literal between the brackets, decoded on use.
    Dense { literal: String, ty: Type },
    Type(Type),
    /// `#alias`, resolved against the file's alias definitions on use.
    Alias(String),
    /// Anything else, by its spelling.
    Other(String),
}

/// Dictionary entries: name, value, and the span of the value as written.
pub type Entries = Vec<(String, Attr, Range<usize>)>;

#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Name(String),
    Alias(String),
    File { file: String, line: u32, col: u32 },
    Other,
}

#[derive(Debug, Clone)]
pub struct Operation {
    pub name: String,
    /// From the first result (or the name) to the end of the trailing location.
    pub span: Range<usize>,
    pub results: Vec<String>,
    pub operands: Vec<(String, usize)>,
    /// Properties (`<{…}>`), with the source span of each value. Not read
    /// for `rlx.*` ops (see `dict_spans` and [`parse_dict_at`]): ops spelled
    /// alike need reading once.
    pub properties: Entries,
    /// Discardable attributes (`{…}`), with the source span of each value;
    /// not read for `rlx.*` ops either.
    pub attributes: Entries,
    pub regions: Vec<Vec<Block>>,
    pub operand_types: Vec<Type>,
    pub result_types: Vec<Type>,
    pub loc: Option<Location>,
    /// The span of the trailing `loc(…)`, as written.
    pub loc_span: Option<Range<usize>>,
    /// The spans of the properties and the attribute dictionary, as written
    /// (empty when absent): equal spellings mean equal attributes.
    pub dict_spans: [Range<usize>; 2],
}

impl Operation {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.properties.iter().chain(&self.attributes).find(|(k, _, _)| k == name).map(|(_, a, _)| a)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Block {
    pub args: Vec<BlockArg>,
    pub ops: Vec<Operation>,
}

#[derive(Debug, Clone)]
pub struct BlockArg {
    pub name: String,
    pub offset: usize,
    pub ty: Type,
    pub loc: Option<Location>,
    /// The span of the `loc(…)`, as written.
    pub loc_span: Option<Range<usize>>,
}

/// A parsed file: its top-level operations and alias definitions.
#[derive(Debug, Clone, Default)]
pub struct Module {
    pub ops: Vec<Operation>,
    pub attr_aliases: HashMap<String, Attr>,
    pub loc_aliases: HashMap<String, Location>,
}

impl Module {
    /// A location with aliases followed.
    pub fn resolve<'m>(&'m self, loc: Option<&'m Location>) -> Option<&'m Location> {
        match loc? {
            Location::Alias(alias) => self.loc_aliases.get(alias),
            other => Some(other),
        }
    }

    /// The name a location gives a value.
    pub fn loc_name<'m>(&'m self, loc: Option<&'m Location>) -> Option<&'m str> {
        match self.resolve(loc)? {
            Location::Name(name) => Some(name),
            _ => None,
        }
    }
}

pub fn parse(text: &str) -> Result<Module> {
    let mut p = Parser { src: text.as_bytes(), text, pos: 0 };
    let mut module = Module::default();
    loop {
        p.skip_ws();
        match p.peek() {
            None => break,
            Some(b'#') => {
                let name = p.alias_name()?;
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
                p.alias_name()?;
                p.expect(b"=")?;
                p.ty()?;
            }
            Some(b'{') if p.src[p.pos..].starts_with(b"{-#") => match p.text[p.pos..].find("#-}") {
                Some(end) => p.pos += end + 3,
                None => return p.fail("unterminated `{-#` section"),
            },
            Some(_) => module.ops.push(p.operation()?),
        }
    }
    Ok(module)
}

/// Read the attribute dictionary at `span` of `text`: the properties or
/// attributes of an `rlx.*` op, which [`parse`] only delimits.
pub fn parse_dict_at(text: &str, span: Range<usize>) -> Result<Entries> {
    if span.is_empty() {
        return Ok(Vec::new());
    }
    Parser { src: text.as_bytes(), text, pos: span.start }.dict()
}

struct Parser<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn fail<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(SyntaxError { offset: self.pos.min(self.src.len()), message: message.into() })
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.src.get(self.pos) {
            if b.is_ascii_whitespace() {
                self.pos += 1;
            } else if self.src[self.pos..].starts_with(b"//") {
                while self.src.get(self.pos).is_some_and(|&b| b != b'\n') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.src.get(self.pos).copied()
    }

    fn eat(&mut self, token: &[u8]) -> bool {
        self.skip_ws();
        if self.src[self.pos..].starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &[u8]) -> Result<()> {
        if self.eat(token) {
            Ok(())
        } else {
            let found = self.found();
            self.fail(format!("expected `{}`, found {found}", String::from_utf8_lossy(token)))
        }
    }

    fn found(&mut self) -> String {
        self.skip_ws();
        match self.src.get(self.pos) {
            None => "end of file".into(),
            Some(_) => {
                let rest = &self.text[self.pos..];
                let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len()).min(24);
                let end = (0..=end).rev().find(|&e| rest.is_char_boundary(e)).unwrap_or(0);
                format!("`{}`", &rest[..end])
            }
        }
    }

    /// A bare identifier: letters, digits, `_`, `$`, `.`, `-` after the first.
    fn ident(&mut self) -> Option<&str> {
        self.skip_ws();
        let start = self.pos;
        if !self.src.get(start).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
            return None;
        }
        self.pos += 1;
        while self.src.get(self.pos).is_some_and(|&b| b.is_ascii_alphanumeric() || b"_$.".contains(&b)) {
            self.pos += 1;
        }
        Some(&self.text[start..self.pos])
    }

    /// `#name` or `!name` at an alias definition.
    fn alias_name(&mut self) -> Result<String> {
        self.pos += 1;
        let start = self.pos;
        while self.src.get(self.pos).is_some_and(|&b| b.is_ascii_alphanumeric() || b"_$.-".contains(&b)) {
            self.pos += 1;
        }
        if start == self.pos {
            return self.fail("expected an alias name");
        }
        Ok(self.text[start..self.pos].to_string())
    }

    /// `%name` (with an optional `#N` result index); returns the name and its offset.
    fn value_id(&mut self) -> Result<(String, usize)> {
        self.skip_ws();
        let start = self.pos;
        if self.src.get(self.pos) != Some(&b'%') {
            let found = self.found();
            return self.fail(format!("expected a value (`%name`), found {found}"));
        }
        self.pos += 1;
        while self.src.get(self.pos).is_some_and(|&b| b.is_ascii_alphanumeric() || b"_$.-#".contains(&b)) {
            self.pos += 1;
        }
        if self.pos == start + 1 {
            return self.fail("expected a value name after `%`");
        }
        Ok((self.text[start..self.pos].to_string(), start))
    }

    fn string(&mut self) -> Result<String> {
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b'"') {
            let found = self.found();
            return self.fail(format!("expected a string, found {found}"));
        }
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.src.get(self.pos) {
                None | Some(b'\n') => return self.fail("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    let escaped = self.src.get(self.pos + 1).copied();
                    let (byte, len) = match escaped {
                        Some(b'"') => (b'"', 2),
                        Some(b'\\') => (b'\\', 2),
                        Some(b'n') => (b'\n', 2),
                        Some(b't') => (b'\t', 2),
                        _ => match self.text.get(self.pos + 1..self.pos + 3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                            Some(b) => (b, 3),
                            None => return self.fail("invalid escape in string"),
                        },
                    };
                    bytes.push(byte);
                    self.pos += len;
                }
                Some(&b) => {
                    bytes.push(b);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| SyntaxError { offset: self.pos, message: "string is not UTF-8".into() })
    }

    /// Skip a bracketed group starting at the current opener, strings and
    /// `->` inside included; returns its text.
    fn balanced(&mut self) -> Result<&str> {
        self.skip_ws();
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(&b) = self.src.get(self.pos) {
            match b {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'-' if self.src.get(self.pos + 1) == Some(&b'>') => self.pos += 1,
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b')' | b']' | b'}' | b'>' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        return Ok(&self.text[start..self.pos]);
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        self.pos = start;
        self.fail("unbalanced brackets")
    }

    fn operation(&mut self) -> Result<Operation> {
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

    fn peek_loc(&mut self) -> bool {
        let save = self.pos;
        self.skip_ws();
        let is_loc = self.src[self.pos..].starts_with(b"loc(");
        self.pos = save;
        is_loc
    }

    fn empty_op(name: String) -> Operation {
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

    fn generic_rest(&mut self, name: String) -> Result<Operation> {
        let lazy = name.starts_with(super::mapping::OP_PREFIX);
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
            op.regions = self.list(b")", Self::region)?;
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

    fn custom_module(&mut self) -> Result<Operation> {
        let mut op = Self::empty_op("builtin.module".into());
        if self.peek() == Some(b'@') {
            self.pos += 1;
            let name = self.symbol_name()?;
            op.properties.push(("sym_name".into(), Attr::Str(name), 0..0));
        }
        if self.eat(b"attributes") {
            op.attributes = self.dict()?;
        }
        op.regions.push(self.region()?);
        Ok(op)
    }

    fn symbol_name(&mut self) -> Result<String> {
        if self.src.get(self.pos) == Some(&b'"') {
            self.string()
        } else {
            let start = self.pos;
            while self.src.get(self.pos).is_some_and(|&b| b.is_ascii_alphanumeric() || b"_$.-".contains(&b)) {
                self.pos += 1;
            }
            Ok(self.text[start..self.pos].to_string())
        }
    }

    fn custom_func(&mut self) -> Result<Operation> {
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
        let args = self.list(b")", |p| {
            let arg = p.block_arg(true)?;
            arg_attrs.push(Attr::Dict(arg.1.into_iter().map(|(k, v, _)| (k, v)).collect()));
            Ok(arg.0)
        })?;
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
        let inputs = args.iter().map(|a| a.ty.clone()).collect();
        op.properties.push(("function_type".into(), Attr::Type(Type::Function(inputs, results)), 0..0));
        if !args.is_empty() {
            op.properties.push(("arg_attrs".into(), Attr::Array(arg_attrs), 0..0));
        }
        if self.eat(b"attributes") {
            op.attributes = self.dict()?;
        }
        if self.peek() == Some(b'{') {
            let mut region = self.region()?;
            if let Some(entry) = region.first_mut() {
                entry.args = args;
            }
            op.regions.push(region);
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

    /// Comma-separated items up to `close` (consumed); the opener is already read.
    fn list<T>(&mut self, close: &[u8], mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(close) {
                return Ok(items);
            }
            self.expect(b",")?;
        }
    }

    /// `%name: type {attributes}? loc(…)?`; attributes only in a function's signature.
    fn block_arg(&mut self, with_attributes: bool) -> Result<(BlockArg, Entries)> {
        let (name, offset) = self.value_id()?;
        self.expect(b":")?;
        let ty = self.ty()?;
        let attrs = if with_attributes && self.peek() == Some(b'{') { self.dict()? } else { Vec::new() };
        let (loc, loc_span) = self.optional_location()?;
        Ok((BlockArg { name, offset, ty, loc, loc_span }, attrs))
    }

    fn custom_return(&mut self) -> Result<Operation> {
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

    fn region(&mut self) -> Result<Vec<Block>> {
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
                    blocks.last_mut().expect("a region has a block").ops.push(op);
                }
            }
        }
        Ok(blocks)
    }

    fn optional_location(&mut self) -> Result<(Option<Location>, Option<Range<usize>>)> {
        if !self.peek_loc() {
            return Ok((None, None));
        }
        self.skip_ws();
        let start = self.pos;
        let loc = self.location()?;
        Ok((Some(loc), Some(start..self.pos)))
    }

    fn location(&mut self) -> Result<Location> {
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

    fn dict(&mut self) -> Result<Entries> {
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

    fn integer(&mut self) -> Result<i128> {
        self.skip_ws();
        let start = self.pos;
        if self.src.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        while self.src.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.text[start..self.pos].parse().or_else(|_| self.fail("expected an integer"))
    }

    fn attr(&mut self) -> Result<Attr> {
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

    fn ty(&mut self) -> Result<Type> {
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
            let body = self.balanced()?;
            let body = &body[1..body.len() - 1];
            return Ok(tensor_type(body).unwrap_or_else(|why| Type::Other { text: format!("tensor<{body}>"), why }));
        }
        if self.peek() == Some(b'!') {
            self.alias_name()?;
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

fn is_attr_keyword(word: &str) -> bool {
    matches!(word, "affine_map" | "affine_set" | "dense_resource" | "sparse" | "strided" | "distinct" | "loc")
}

fn type_spelling(ty: Type) -> String {
    match ty {
        Type::Other { text, .. } => text,
        Type::Tensor(_) => "tensor".into(),
        Type::Function(..) => "function".into(),
    }
}

/// The inside of `tensor<…>`: `8x?x128xf32`, `f32`; any other element type or
/// an encoding is reported with the reason.
fn tensor_type(body: &str) -> std::result::Result<Type, String> {
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
    match super::mapping::dtype_of_element(rest) {
        Some(dtype) => Ok(Type::Tensor(TensorType { dims, dtype })),
        None => Err(format!("unknown element type `{rest}` (rlx-opt reads f32, f16, bf16, f64, i1, i8, i16, i32, i64, ui8, ui32, complex<f32>, complex<f64>)")),
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
        let m = parse(text).unwrap();
        let func = &m.ops[0].regions[0][0].ops[0];
        assert_eq!(func.name, "func.func");
        let block = &func.regions[0][0];
        assert_eq!(block.args[0].name, "%arg0");
        assert_eq!(m.loc_name(block.args[0].loc.as_ref()), Some("x"));
        let op = &block.ops[0];
        let attrs = parse_dict_at(text, op.dict_spans[1].clone()).unwrap();
        let attr = |k: &str| attrs.iter().find(|(n, _, _)| n == k).map(|(_, a, _)| a.clone());
        assert_eq!(attr("n"), Some(Attr::Int { value: 1, ty: Some("i64".into()) }));
        assert_eq!(attr("f"), Some(Attr::Float(1.5e-3)));
        assert_eq!(attr("u"), Some(Attr::Unit));
        assert_eq!(m.loc_name(op.loc.as_ref()), Some("relu"));
        assert_eq!(block.ops[1].name, "func.return");
        assert_eq!(&text[op.span.clone()][..4], "%0 =");
    }

    #[test]
    fn element_types_are_checked() {
        assert!(matches!(tensor_type("4xf32"), Ok(Type::Tensor(_))));
        assert!(matches!(tensor_type("2xcomplex<f32>"), Ok(Type::Tensor(_))));
        assert!(tensor_type("4xf8E4M3FN").unwrap_err().contains("unknown element type `f8E4M3FN`"));
        assert!(tensor_type("*xf32").is_err());
    }

    #[test]
    fn syntax_errors_have_offsets() {
        let e = parse("\"builtin.module\"() ({\n  %0 = \"rlx.X\"(%1 : () -> ()\n}) : () -> ()").unwrap_err();
        assert_eq!(e.message, "expected `,`, found `:`");
        assert!(e.offset > 20);
    }
}
