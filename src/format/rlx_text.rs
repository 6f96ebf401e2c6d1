//! RLX's textual IR (rlx-ir 0.2.19 `text::print` / `text::parse`):
//!
//! ```text
//! graph    := "graph" "@" ident "{" node* return? "}"     one item per line
//! node     := "%" int "=" op operands? ":" shape name?
//! operands := "(" ("%" int),* ")"
//! shape    := "[" dim,* "]" dtype          dim := int | "?" int
//! name     := "#" json-string
//! return   := "return" ("%" int),*
//! ```
//! Lines starting with `//` are comments. Ids are labels: they need not be
//! dense or ordered, and (unlike rlx-ir) an operand may name a node defined
//! further down; the verifier then checks the graph for cycles and the driver
//! prints it in dependency order, which rlx-ir requires.

use crate::format::FormatError;
use crate::ir::{DType, Dim, Graph, Loc, Node, NodeId, Op, OpError, TensorType};
use smallvec::SmallVec;
#[cfg(feature = "parallel")]
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::{self, Write};

/// Print `graph` exactly as rlx-ir's `text::print` does.
pub fn print(graph: &Graph) -> String {
    let mut out = Vec::with_capacity(64 + graph.len() * 96);
    write(graph, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("printed text is UTF-8")
}

/// Stream `graph` in RLX's text form. Written byte by byte rather than
/// through `fmt`: printing is a third of a 10^6-node run.
pub fn write(graph: &Graph, out: &mut impl Write) -> io::Result<()> {
    write_with(graph, out, |op, out| op.write_text(out))
}

/// The exact length of [`write`]'s output, without spelling any op (a
/// constant's length is known from its bytes).
pub fn printed_len(graph: &Graph) -> u64 {
    let mut counter = crate::format::Counter::default();
    write_with(graph, &mut counter, |op, counter| {
        counter.add(op.text_len());
        Ok(())
    })
    .expect("counting cannot fail");
    counter.total()
}

/// [`printed_len`] or more, in one cheap pass over the nodes: most graphs
/// are far inside the output limit, and this says so without formatting.
pub fn printed_len_bound(graph: &Graph) -> u64 {
    let per_node = graph.nodes().iter().map(|n| {
        // `  %id = ` op `(%a, %b)` ` : [d, d] dtype` ` #"name"` (a name's
        // characters are escaped as `\u00XX` at worst).
        16 + n.op.text_len() as u64 + 2 + 13 * n.operands.len() as u64 + 6 + 22 * n.ty.dims.len() as u64 + 6 + 5 + 6 * n.name.as_ref().map_or(0, |s| s.len() as u64)
    });
    per_node.fold(16 + graph.name.len() as u64 + 12 + 12 * graph.outputs.len() as u64, u64::saturating_add)
}

fn write_with<W: Write>(graph: &Graph, out: &mut W, mut write_op: impl FnMut(&Op, &mut W) -> io::Result<()>) -> io::Result<()> {
    let mut num = itoa::Buffer::new();
    writeln!(out, "graph @{} {{", graph.name)?;
    for node in graph.nodes() {
        out.write_all(b"  %")?;
        out.write_all(num.format(node.label).as_bytes())?;
        out.write_all(b" = ")?;
        write_op(&node.op, out)?;
        if !node.operands.is_empty() {
            out.write_all(b"(")?;
            write_labels(graph, &node.operands, out)?;
            out.write_all(b")")?;
        }
        out.write_all(b" : [")?;
        for (i, dim) in node.ty.dims.iter().enumerate() {
            if i > 0 {
                out.write_all(b", ")?;
            }
            match dim {
                Dim::Static(n) => out.write_all(num.format(*n).as_bytes())?,
                Dim::Dynamic(s) => {
                    out.write_all(b"?")?;
                    out.write_all(num.format(*s).as_bytes())?;
                }
            }
        }
        out.write_all(b"] ")?;
        out.write_all(node.ty.dtype.name().as_bytes())?;
        if let Some(name) = &node.name {
            out.write_all(b" #")?;
            serde_json::to_writer(&mut *out, name)?;
        }
        out.write_all(b"\n")?;
    }
    if !graph.outputs.is_empty() {
        out.write_all(b"  return ")?;
        write_labels(graph, &graph.outputs, out)?;
        out.write_all(b"\n")?;
    }
    out.write_all(b"}\n")
}

fn write_labels(graph: &Graph, ids: &[NodeId], out: &mut impl Write) -> io::Result<()> {
    let mut num = itoa::Buffer::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.write_all(b", ")?;
        }
        out.write_all(b"%")?;
        out.write_all(num.format(graph.node(*id).label).as_bytes())?;
    }
    Ok(())
}

/// Parse one graph.
pub fn parse(text: &str) -> Result<Graph, FormatError> {
    parse_from_line(text, 1)
}

/// Parse one graph whose first line is line `first_line` of its file, so
/// that locations name the file's own lines.
pub fn parse_from_line(text: &str, first_line: u32) -> Result<Graph, FormatError> {
    Parser { first_line }.parse(text)
}

/// Label → node: a table for labels up to a few times the node count (what
/// printers produce), hashed beyond.
struct Labels {
    dense: Vec<u32>,
    dense_limit: u32,
    sparse: HashMap<u32, NodeId>,
}

/// Node lines per parallel parsing job.
#[cfg(feature = "parallel")]
const PARALLEL_LINES: usize = 4096;
const UNDEFINED: u32 = u32::MAX;

impl Labels {
    fn for_nodes(count: usize) -> Self {
        let dense_limit = count.saturating_mul(4).saturating_add(1024).min(u32::MAX as usize) as u32;
        Labels { dense: Vec::new(), dense_limit, sparse: HashMap::new() }
    }

    fn lookup(&self, label: u32) -> Option<NodeId> {
        if label < self.dense_limit {
            self.dense.get(label as usize).filter(|ix| **ix != UNDEFINED).map(|ix| NodeId(*ix))
        } else {
            self.sparse.get(&label).copied()
        }
    }

    fn define(&mut self, label: u32, id: NodeId) {
        if label < self.dense_limit {
            if self.dense.len() <= label as usize {
                self.dense.resize(label as usize + 1, UNDEFINED);
            }
            self.dense[label as usize] = id.0;
        } else {
            self.sparse.insert(label, id);
        }
    }

    fn resolve(&self, label: u32, loc: Loc) -> Result<NodeId, FormatError> {
        self.lookup(label).ok_or_else(|| FormatError::at(loc, format!("use of undefined value %{label}")))
    }
}

#[derive(Default)]
struct Parser {
    first_line: u32,
}

/// A line the reader skips: blank, or a `//` comment.
pub fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with("//")
}

impl Parser {
    /// Node lines are parsed in parallel into their final place; labels are
    /// then defined and resolved in order, and an error is always the first
    /// one in the file.
    fn parse(self, text: &str) -> Result<Graph, FormatError> {
        let first_line = self.first_line;
        let mut lines = text.lines().enumerate().map(|(i, l)| (i as u32 + first_line, l)).filter(|(_, l)| !is_blank_or_comment(l));

        let Some((lineno, header)) = lines.next() else {
            return Err(FormatError::at(Loc { line: first_line, col: 1 }, "empty input: expected `graph @name {`"));
        };
        let mut cur = Cursor::new(header, lineno);
        cur.expect("graph")?;
        cur.expect("@")?;
        let name = cur.take_while(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !crate::ir::is_graph_name(name) {
            return cur.err("expected a graph name after `@` (letters, digits, `_`, `.`)");
        }
        let name = name.to_string();
        cur.expect("{")?;
        cur.expect_end()?;

        let mut body = Vec::new();
        let mut ret = None;
        let mut closed = false;
        let mut last_line = (lineno, header);
        for (lineno, line) in lines.by_ref() {
            last_line = (lineno, line);
            if line.trim() == "}" {
                closed = true;
                break;
            }
            let mut cur = Cursor::new(line, lineno);
            if ret.is_some() {
                cur.skip_ws();
                return cur.err("expected `}` after `return`");
            }
            if cur.eat_word("return") {
                ret = Some((lineno, line));
            } else {
                body.push((lineno, line));
            }
        }
        // Collected in order into one exact allocation, then unwrapped in
        // place; small graphs are not worth waking the thread pool for.
        let mut parsed = Vec::with_capacity(body.len());
        let parse_line = |(n, l): &(u32, &str)| parse_node(l, *n);
        #[cfg(feature = "parallel")]
        if body.len() < PARALLEL_LINES {
            parsed.extend(body.iter().map(parse_line));
        } else {
            body.par_iter().with_min_len(PARALLEL_LINES).map(parse_line).collect_into_vec(&mut parsed);
        }
        #[cfg(not(feature = "parallel"))]
        parsed.extend(body.iter().map(parse_line));
        let nodes = parsed.into_iter().collect::<Result<Vec<Node>, FormatError>>()?;
        let mut graph = Graph::with_nodes(name, nodes);
        let outputs = ret.map(|(n, l)| parse_return(l, n)).transpose()?;
        if !closed {
            let (line, text) = last_line;
            let col = text.chars().count() as u32 + 1;
            return Err(FormatError::at(
                Loc { line, col },
                format!("unexpected end of input: missing `}}` to close graph @{}", graph.name),
            ));
        }
        if let Some((lineno, line)) = lines.next() {
            let col = line.len() - line.trim_start().len() + 1;
            return Err(FormatError::at(
                Loc { line: lineno, col: col as u32 },
                "unexpected text after the graph's closing `}` (several graphs in one file need --split-input-file)",
            ));
        }

        let labels = resolve_labels(&mut graph, &body)?;
        if let Some((outputs, loc)) = outputs {
            graph.return_loc = Some(loc);
            graph.outputs = outputs.into_iter().map(|(label, loc)| labels.resolve(label, loc)).collect::<Result<_, _>>()?;
        }
        Ok(graph)
    }
}

/// Define every node's label (a label defined twice is an error at the
/// second) and resolve the operands' labels to node ids.
fn resolve_labels(graph: &mut Graph, body: &[(u32, &str)]) -> Result<Labels, FormatError> {
    let mut labels = Labels::for_nodes(graph.len());
    for id in graph.ids() {
        let node = graph.node(id);
        if let Some(previous) = labels.lookup(node.label) {
            let first = graph.node(previous).loc.unwrap_or_default();
            let (n, l) = body[id.index()];
            return Err(FormatError::at(
                Cursor::new(l, n).label()?.1,
                format!("redefinition of %{} (first defined on line {})", node.label, first.line),
            ));
        }
        labels.define(node.label, id);
    }
    for id in graph.ids() {
        let resolved: Option<SmallVec<[NodeId; 2]>> = graph.node(id).operands.iter().map(|l| labels.lookup(l.0)).collect();
        match resolved {
            Some(operands) => graph.node_mut(id).operands = operands,
            None => {
                let (n, l) = body[id.index()];
                return Err(undefined_operand(l, n, &labels));
            }
        }
    }
    Ok(labels)
}

/// The error for the first operand of this node line that names no node.
fn undefined_operand(line: &str, lineno: u32, labels: &Labels) -> FormatError {
    let mut cur = Cursor::new(line, lineno);
    let located: Result<(), FormatError> = (|| {
        cur.label()?;
        cur.expect("=")?;
        cur.op_text()?;
        cur.expect("(")?;
        loop {
            let (label, loc) = cur.label()?;
            labels.resolve(label, loc)?;
            cur.expect(",")?;
        }
    })();
    located.expect_err("the line has an undefined operand")
}

/// `return %a, %b`: the labels with their locations, and where `return` is.
fn parse_return(line: &str, lineno: u32) -> Result<(Vec<(u32, Loc)>, Loc), FormatError> {
    let mut cur = Cursor::new(line, lineno);
    cur.eat_word("return");
    let loc = cur.loc();
    let mut labels = Vec::new();
    loop {
        labels.push(cur.label()?);
        if !cur.eat(",") {
            break;
        }
    }
    cur.expect_end()?;
    Ok((labels, loc))
}

/// `%id = op(operands) : shape #"name"`; operands hold their labels for now.
fn parse_node(line: &str, lineno: u32) -> Result<Node, FormatError> {
    let mut cur = Cursor::new(line, lineno);
    let (label, _) = cur.label()?;
    cur.expect("=")?;
    cur.skip_ws();
    let op_loc = cur.loc();
    let op_text = cur.op_text()?;
    let op = Op::parse(op_text).map_err(|e| {
        // The characters before the error's byte (serde_json's may fall inside one).
        let col = op_loc.col + e.offset.map_or(0, |o| op_text.char_indices().take_while(|&(i, _)| i < o).count() as u32);
        FormatError::at(Loc { col, ..op_loc }, e.message)
    })?;
    let mut operands = SmallVec::new();
    if cur.eat("(") && !cur.eat(")") {
        loop {
            operands.push(NodeId(cur.label()?.0));
            if cur.eat(",") {
                continue;
            }
            cur.expect(")")?;
            break;
        }
    }
    cur.expect(":")?;
    let ty = cur.tensor_type()?;
    let name = if cur.eat("#") {
        let loc = cur.loc();
        let json = cur.json_string()?;
        Some(serde_json::from_str::<String>(json).map_err(|e| FormatError::at(loc, format!("bad node name: {e}")))?)
    } else {
        None
    };
    cur.expect_end()?;
    Ok(Node { label, op, operands, ty, name, loc: Some(op_loc), origin: None })
}

/// An op spelled on its own, where a format carries RLX's text of it (a
/// JSON string, MLIR's `rlx.text`): exactly what a graph line holds as one
/// op, or refused. Printed into a line as it is, more (a line break, an
/// operand list, a type) added nodes or whole graphs to the printed file,
/// and an unclosed bracket made a file rlx-opt could not read back.
pub(crate) fn op_from_spelling(text: &str) -> Result<Op, OpError> {
    check_op_spelling(text)?;
    Op::parse(text)
}

/// Whether `text` is one op's spelling, as [`op_from_spelling`] reads it.
pub(crate) fn check_op_spelling(text: &str) -> Result<(), OpError> {
    let refused = |message: String| OpError { message, offset: None };
    if let Some(at) = text.find(['\n', '\r']) {
        return Err(refused(format!("op `{}` holds a line break (at byte {at}): an op is spelled on one line", crate::diag::echo_in_line(text))));
    }
    if text.trim_matches([' ', '\t']).len() != text.len() {
        return Err(refused(format!("op `{}` has spaces around it", crate::diag::clip(text))));
    }
    let mut cursor = Cursor::new(text, 1);
    let extent = cursor.op_text().map_err(|e| refused(format!("`{}` is not an op: {e}", crate::diag::clip(text))))?;
    if extent.len() != text.len() {
        let rest = &text[cursor.pos..];
        return Err(refused(format!("`{}` is more than one op: `{}` follows the op `{}`", crate::diag::clip(text), crate::diag::clip(rest), crate::diag::clip(extent))));
    }
    Ok(())
}

/// A position within one line.
struct Cursor<'a> {
    line: &'a str,
    pos: usize,
    lineno: u32,
    /// The last column computed, as (byte offset, column), so that columns
    /// along a long line (a `return` of 10^5 ids) cost O(1) each.
    col_at: std::cell::Cell<(usize, u32)>,
}

impl<'a> Cursor<'a> {
    fn new(line: &'a str, lineno: u32) -> Self {
        Cursor { line, pos: 0, lineno, col_at: std::cell::Cell::new((0, 1)) }
    }

    fn rest(&self) -> &'a str {
        &self.line[self.pos..]
    }

    fn loc(&self) -> Loc {
        let (from, col) = match self.col_at.get() {
            (at, col) if at <= self.pos => (at, col),
            _ => (0, 1),
        };
        let col = col + self.line[from..self.pos].chars().count() as u32;
        self.col_at.set((self.pos, col));
        Loc { line: self.lineno, col }
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, FormatError> {
        Err(FormatError::at(self.loc(), message))
    }

    fn found(&self) -> String {
        let rest: String = self.rest().chars().take(24).collect();
        if rest.is_empty() { "end of line".into() } else { format!("`{rest}`") }
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start_matches([' ', '\t', '\r']).len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    /// A keyword, not the prefix of a longer identifier.
    fn eat_word(&mut self, word: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        // Only past a match is `word.len()` a char boundary of `rest`.
        let matched = rest.starts_with(word) && rest[word.len()..].chars().next().is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
        if matched {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), FormatError> {
        if self.eat(token) {
            Ok(())
        } else {
            let found = self.found();
            self.err(format!("expected `{token}`, found {found}"))
        }
    }

    fn expect_end(&mut self) -> Result<(), FormatError> {
        self.skip_ws();
        if self.rest().is_empty() {
            Ok(())
        } else {
            let found = self.found();
            self.err(format!("unexpected {found} at end of line"))
        }
    }

    fn take_while(&mut self, pred: impl Fn(char) -> bool) -> &'a str {
        self.skip_ws();
        let rest = self.rest();
        let end = rest.find(|c| !pred(c)).unwrap_or(rest.len());
        self.pos += end;
        &rest[..end]
    }

    fn integer<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, FormatError> {
        self.skip_ws();
        let loc = self.loc();
        let digits = self.take_while(|c| c.is_ascii_digit());
        if digits.is_empty() {
            let found = self.found();
            return self.err(format!("expected {what}, found {found}"));
        }
        digits
            .parse()
            .map_err(|_| FormatError::at(loc, format!("{what} `{digits}` is too large")))
    }

    /// `%12` → label 12, with the location of the `%`.
    fn label(&mut self) -> Result<(u32, Loc), FormatError> {
        self.skip_ws();
        let loc = self.loc();
        if !self.eat("%") {
            let found = self.found();
            return self.err(format!("expected a value id like `%0`, found {found}"));
        }
        Ok((self.integer("a value id")?, loc))
    }

    /// The op's extent: a balanced JSON value, or an identifier with an
    /// optional value-syntax payload (`Name{…}`, `Name(…)` but not `Name(%0)`).
    fn op_text(&mut self) -> Result<&'a str, FormatError> {
        self.skip_ws();
        let start = self.pos;
        if self.rest().starts_with(['{', '[', '"']) {
            self.balanced()?;
        } else {
            let ident = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
            if ident.is_empty() {
                let found = self.found();
                return self.err(format!("expected an op, found {found}"));
            }
            let rest = self.rest();
            let operands_next = rest.strip_prefix('(').is_some_and(|r| r.trim_start().starts_with(['%', ')']));
            if rest.starts_with(['{', '(']) && !operands_next {
                self.balanced()?;
            }
        }
        Ok(&self.line[start..self.pos])
    }

    /// Consume one bracketed or quoted run, nesting and strings respected.
    fn balanced(&mut self) -> Result<(), FormatError> {
        let bytes = self.rest().as_bytes();
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        for (i, &b) in bytes.iter().enumerate() {
            let closes_here = if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                !in_string && depth == 0
            } else {
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' | b'(' => depth += 1,
                    b'}' | b']' | b')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                depth == 0 && matches!(b, b'}' | b']' | b')')
            };
            if closes_here {
                self.pos += i + 1;
                return Ok(());
            }
        }
        self.err("unterminated op: brackets or quotes are not closed on this line")
    }

    fn json_string(&mut self) -> Result<&'a str, FormatError> {
        self.skip_ws();
        if !self.rest().starts_with('"') {
            let found = self.found();
            return self.err(format!("expected a quoted name after `#`, found {found}"));
        }
        let start = self.pos;
        self.balanced()?;
        Ok(&self.line[start..self.pos])
    }

    fn tensor_type(&mut self) -> Result<TensorType, FormatError> {
        self.skip_ws();
        let loc = self.loc();
        self.expect("[")?;
        let mut dims = SmallVec::new();
        if !self.eat("]") {
            loop {
                let dim = if self.eat("?") {
                    Dim::Dynamic(self.integer("a dynamic dim symbol")?)
                } else {
                    Dim::Static(self.integer("a dimension")?)
                };
                dims.push(dim);
                if self.eat(",") {
                    continue;
                }
                self.expect("]")?;
                break;
            }
        }
        self.skip_ws();
        let dtype_loc = self.loc();
        let word = self.take_while(|c| c.is_ascii_alphanumeric());
        let Some(dtype) = DType::from_name(word) else {
            let shown = if word.is_empty() { self.found() } else { format!("`{word}`") };
            return Err(FormatError::at(
                dtype_loc,
                format!("unknown dtype {shown} (expected one of f32, f16, bf16, f64, i8, i16, i32, i64, u8, u32, bool, c64, c128)"),
            ));
        };
        let ty = TensorType { dims, dtype };
        if ty.byte_size_overflows() {
            return Err(FormatError::at(loc, format!("shape {ty} has a byte size that overflows u64")));
        }
        Ok(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let d = parse(text).unwrap_err();
        let loc = d.loc().unwrap();
        format!("{}:{}: {}", loc.line, loc.col, d)
    }

    #[test]
    fn round_trips_byte_for_byte() {
        let text = "graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2, ?1] f32 #\"x\"\n  %1 = MatMul(%0, %0) : [2, 2] f32\n  %2 = Clamp{min: -inf, max: 0.0}(%1) : [2, 2] f32\n  return %2, %0\n}\n";
        assert_eq!(print(&parse(text).unwrap()), text);
    }

    #[test]
    fn forward_references_resolve() {
        let g = parse("graph @g {\n  %5 = {\"Activation\":\"Relu\"}(%2) : [2] f32\n  %2 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n  return %5\n}").unwrap();
        assert_eq!(g.node(NodeId(0)).operands[0], NodeId(1));
        assert!(!g.is_topologically_ordered());
    }

    #[test]
    fn errors_name_line_and_column() {
        assert_eq!(err(""), "1:1: empty input: expected `graph @name {`");
        assert_eq!(err("grph @g {\n}"), "1:1: expected `graph`, found `grph @g {`");
        assert_eq!(err("graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f33\n}"), "2:37: unknown dtype `f33` (expected one of f32, f16, bf16, f64, i8, i16, i32, i64, u8, u32, bool, c64, c128)");
        assert_eq!(err("graph @g {\n  %1 = MatMul(%0, %7) : [2] f32\n}"), "2:15: use of undefined value %0");
        assert_eq!(err("graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32\n  %0 = {\"Input\":{\"name\":\"y\"}} : [2] f32\n}"), "3:3: redefinition of %0 (first defined on line 2)");
        assert_eq!(err("graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2] f32"), "2:40: unexpected end of input: missing `}` to close graph @g");
        assert_eq!(err("graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4294967296, 4294967296] f32\n}"), "2:33: shape [4294967296, 4294967296] f32 has a byte size that overflows u64");
        assert_eq!(err("graph @g {\n  %0 = {\"Input\":{\"nam\":\"x\"}} : [2] f32\n}").split(':').take(3).collect::<Vec<_>>().join(":"), "2:27: invalid `Input` op");
        assert_eq!(err("graph @g {\n}\ngraph @h {\n}"), "3:1: unexpected text after the graph's closing `}` (several graphs in one file need --split-input-file)");
    }
}
