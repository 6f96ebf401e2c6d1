//! Front and back ends around the IR: RLX text, the serde JSON form, Graphviz.

pub mod dot;
pub mod json;
pub mod rlx_text;

use crate::diag::Diagnostic;
use crate::ir::Graph;

/// A format graphs are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// RLX textual IR (`.graph`).
    Graph,
    /// The serde JSON form (`.json`).
    Json,
}

impl InputFormat {
    /// By file extension: `.json` is JSON, anything else RLX text.
    pub fn for_path(path: &str) -> InputFormat {
        if path.ends_with(".json") { InputFormat::Json } else { InputFormat::Graph }
    }

    /// Parse a graph whose text starts on line `first_line` of its file.
    pub fn parse(self, text: &str, first_line: u32) -> Result<Graph, Diagnostic> {
        match self {
            InputFormat::Graph => rlx_text::parse_from_line(text, first_line),
            InputFormat::Json => json::parse_from_line(text, first_line),
        }
    }
}

/// A format graphs are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// RLX textual IR, as rlx-ir prints it.
    Graph,
    /// The serde JSON form rlx-ir reads.
    Json,
    /// Graphviz DOT; fused ops are highlighted.
    Dot,
}

impl Emit {
    pub fn print(self, graph: &Graph) -> String {
        match self {
            Emit::Graph => rlx_text::print(graph),
            Emit::Json => json::print(graph),
            Emit::Dot => dot::print(graph),
        }
    }

    /// Stream `graph`; RLX text, the format of big graphs, is never held in memory whole.
    pub fn write(self, graph: &Graph, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match self {
            Emit::Graph => rlx_text::write(graph, out),
            Emit::Json | Emit::Dot => out.write_all(self.print(graph).as_bytes()),
        }
    }
}

/// The separator between graphs with `--split-input-file`, as mlir-opt spells it.
pub const SPLIT_MARKER: &str = "// -----";

/// One graph's text within a split file, with the line it starts on (1-based).
pub struct Chunk<'a> {
    pub first_line: u32,
    pub text: &'a str,
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
