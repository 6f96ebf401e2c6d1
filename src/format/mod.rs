//! Front and back ends around the IR: RLX text, the serde JSON form, MLIR's
//! generic form, Graphviz.

pub mod dot;
mod error;
pub mod json;
pub mod mlir;
pub mod rlx_text;

pub use error::FormatError;

use crate::ir::Graph;
use crate::limits::{MAX_OUTPUT_BYTES, bytes as shown_bytes};

/// A format graphs are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// RLX textual IR (`.graph`).
    Graph,
    /// The serde JSON form (`.json`).
    Json,
    /// MLIR (`.mlir`): a module of functions of `rlx.*` ops, one graph each.
    Mlir,
}

impl InputFormat {
    pub const ALL: [InputFormat; 3] = [InputFormat::Graph, InputFormat::Json, InputFormat::Mlir];

    /// The name `--input-format` takes.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Graph => "graph",
            InputFormat::Json => "json",
            InputFormat::Mlir => "mlir",
        }
    }

    /// By file extension: `.json` is JSON, `.mlir` MLIR, anything else RLX text.
    pub fn for_path(path: impl AsRef<std::path::Path>) -> InputFormat {
        let path = path.as_ref().as_os_str().as_encoded_bytes();
        if path.ends_with(b".json") {
            InputFormat::Json
        } else if path.ends_with(b".mlir") {
            InputFormat::Mlir
        } else {
            InputFormat::Graph
        }
    }

    /// Parse the graphs in text that starts on line `first_line` of its file
    /// (one, except for an MLIR module of several functions).
    pub fn parse_all(self, text: &str, first_line: u32) -> Result<Vec<Graph>, FormatError> {
        match self {
            InputFormat::Graph => Ok(vec![rlx_text::parse_from_line(text, first_line)?]),
            InputFormat::Json => Ok(vec![json::parse_from_line(text, first_line)?]),
            InputFormat::Mlir => mlir::parse(text, first_line),
        }
    }

    /// Parse text that holds exactly one graph.
    pub fn parse(self, text: &str, first_line: u32) -> Result<Graph, FormatError> {
        let mut graphs = self.parse_all(text, first_line)?;
        match graphs.len() {
            1 => Ok(graphs.pop().expect("one graph")),
            n => Err(FormatError::NotOneGraph(n)),
        }
    }
}

/// A format graphs are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// RLX textual IR, as rlx-ir prints it.
    Graph,
    /// The serde JSON form rlx-ir reads.
    Json,
    /// Graphviz DOT; fused ops are highlighted.
    Dot,
    /// MLIR's generic form: a module with one `func.func` per graph.
    Mlir,
}

impl Emit {
    pub const ALL: [Emit; 4] = [Emit::Graph, Emit::Json, Emit::Dot, Emit::Mlir];

    /// The name `--emit` takes.
    pub fn name(self) -> &'static str {
        match self {
            Emit::Graph => "graph",
            Emit::Json => "json",
            Emit::Dot => "dot",
            Emit::Mlir => "mlir",
        }
    }

    pub fn print(self, graph: &Graph) -> String {
        match self {
            Emit::Graph => rlx_text::print(graph),
            Emit::Json => json::print(graph),
            Emit::Dot => dot::print(graph),
            Emit::Mlir => mlir::print(std::slice::from_ref(graph)),
        }
    }

    /// Refuse to print `graph` where that would take more than `room`
    /// bytes, before anything is written or built: RLX text and JSON are
    /// measured exactly (after a cheap bound that settles most graphs); MLIR
    /// and DOT are built in memory and measured there, MLIR's constants (its
    /// hex digits) counted here first.
    pub fn check_size(self, graph: &Graph, room: u64) -> Result<(), OutputTooLarge> {
        let (size, at_least) = match self {
            Emit::Graph if rlx_text::printed_len_bound(graph) <= room => return Ok(()),
            Emit::Graph => (rlx_text::printed_len(graph), false),
            Emit::Json if json::printed_len_bound(graph) <= room => return Ok(()),
            Emit::Json => {
                let mut counter = Counter::default();
                json::write(graph, &mut counter).expect("counting cannot fail");
                (counter.total(), false)
            }
            Emit::Mlir => (mlir_dense_len(graph), true),
            Emit::Dot => return Ok(()),
        };
        if size > room { Err(OutputTooLarge { size, at_least }) } else { Ok(()) }
    }

    /// Stream `graph`; RLX text and JSON, the formats of big graphs, are never
    /// held in memory whole.
    pub fn write(self, graph: &Graph, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match self {
            Emit::Graph => rlx_text::write(graph, out),
            Emit::Json => json::write(graph, out),
            Emit::Dot | Emit::Mlir => out.write_all(self.print(graph).as_bytes()),
        }
    }
}

/// A writer that only counts what it is given: the size of an output
/// before it is written.
#[derive(Debug, Default)]
pub struct Counter(u64);

impl Counter {
    pub fn add(&mut self, n: usize) {
        self.0 = self.0.saturating_add(n as u64);
    }

    pub fn total(&self) -> u64 {
        self.0
    }
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A writer that counts what passes through it to another.
pub struct Tally<'a, W: std::io::Write + ?Sized> {
    inner: &'a mut W,
    total: u64,
}

impl<'a, W: std::io::Write + ?Sized> Tally<'a, W> {
    pub fn new(inner: &'a mut W) -> Self {
        Tally { inner, total: 0 }
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

impl<W: std::io::Write + ?Sized> std::io::Write for Tally<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.total += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// An output past [`MAX_OUTPUT_BYTES`], found before it was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the output would take {}{size} bytes; the limit is {MAX_OUTPUT_BYTES} bytes ({}), the most rlx-opt reads back", if *at_least { "at least " } else { "" }, shown_bytes(MAX_OUTPUT_BYTES))]
pub struct OutputTooLarge {
    pub size: u64,
    /// Whether `size` is what was counted before stopping (the output is larger).
    pub at_least: bool,
}

/// Dense constants' hex digits alone, the least an MLIR module of `graph` takes.
pub fn mlir_dense_len(graph: &Graph) -> u64 {
    graph.nodes().iter().map(|n| match n.op.kind() {
        crate::ir::OpKind::Constant { data } => 2 * data.len() as u64,
        _ => 0,
    }).fold(0, u64::saturating_add)
}

/// The separator between graphs with `--split-input-file`, as mlir-opt spells it.
pub const SPLIT_MARKER: &str = "// -----";

/// One graph's text within a split file, with the line it starts on (1-based).
pub struct Chunk<'a> {
    pub first_line: u32,
    pub text: &'a str,
}

impl Chunk<'_> {
    /// Whether the chunk holds no graph at all, in a format whose chunks
    /// hold one: blank, or only `//` comments in RLX text. mlir-opt takes
    /// such a chunk (an empty module: a split file ending in a separator,
    /// or two separators in a row) and prints nothing of it; so does
    /// rlx-opt. (An MLIR chunk holds any number, none included.)
    pub fn holds_nothing(&self, format: InputFormat) -> bool {
        match format {
            InputFormat::Graph => self.text.lines().all(rlx_text::is_blank_or_comment),
            InputFormat::Json => self.text.trim().is_empty(),
            InputFormat::Mlir => false,
        }
    }
}

/// Split `text` at lines that start with `// -----`.
pub fn split_input(text: &str) -> Vec<Chunk<'_>> {
    let mut chunks = Vec::new();
    let (mut start, mut first_line, mut line) = (0usize, 1u32, 1u32);
    let mut offset = 0usize;
    for raw in text.split_inclusive('\n') {
        if raw.trim_start().starts_with(SPLIT_MARKER) {
            chunks.push(Chunk { first_line, text: &text[start..offset] });
            start = offset + raw.len();
            first_line = line + 1;
        }
        offset += raw.len();
        line += 1;
    }
    chunks.push(Chunk { first_line, text: &text[start..] });
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph with what makes sizes hard: constants of every digit count,
    /// a name needing escapes, dynamic dims, value syntax.
    fn awkward() -> Graph {
        let data: Vec<String> = (0..=255u32).chain(0..=255).map(|b| b.to_string()).collect();
        let text = format!(
            "graph @sizes {{\n  %0 = {{\"Constant\":{{\"data\":[{}]}}}} : [128] f32 #\"tab\\there \\\"q\\\" \\u0001\"\n  %7 = {{\"Input\":{{\"name\":\"x\"}}}} : [?3, 128] f32\n  %8 = Clamp{{min: -inf, max: 0.0}}(%7) : [?3, 128] f32\n  %9 = {{\"Binary\":\"Add\"}}(%8, %0) : [?3, 128] f32\n  return %9, %0\n}}\n",
            data.join(",")
        );
        rlx_text::parse(&text).unwrap()
    }

    /// Issue 25: sizes are measured exactly before printing, and the cheap
    /// bounds never fall below them.
    #[test]
    fn printed_sizes_are_exact_and_bounded() {
        let g = awkward();
        let text = rlx_text::print(&g);
        assert_eq!(rlx_text::printed_len(&g), text.len() as u64);
        assert!(rlx_text::printed_len_bound(&g) >= text.len() as u64);
        assert!(json::printed_len_bound(&g) >= json::print(&g).len() as u64);
        for emit in [Emit::Graph, Emit::Json] {
            let len = emit.print(&g).len() as u64;
            assert_eq!(emit.check_size(&g, len), Ok(()), "{emit:?}");
            assert_eq!(emit.check_size(&g, len - 1), Err(OutputTooLarge { size: len, at_least: false }), "{emit:?}");
        }
        assert_eq!(Emit::Mlir.check_size(&g, 1023), Err(OutputTooLarge { size: 1024, at_least: true }));
    }

    /// Streaming JSON writes what rlx-ir's serde form is, and reads back.
    #[test]
    fn json_streams_constants_from_their_bytes() {
        let g = awkward();
        let printed = json::print(&g);
        assert!(printed.contains(r#""op":{"Constant":{"data":[0,1,2,"#), "{printed}");
        assert_eq!(json::print(&json::parse(&printed).unwrap()), printed);
        assert_eq!(rlx_text::print(&json::parse(&printed).unwrap()), rlx_text::print(&g));
    }
}
