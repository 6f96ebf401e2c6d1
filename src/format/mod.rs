//! Front and back ends around the IR: RLX text, the serde JSON form, MLIR's
//! generic form, Graphviz.

pub mod dot;
mod error;
pub mod json;
pub mod mlir;
pub mod rlx_text;

pub use error::FormatError;

use crate::ir::Graph;

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
    pub fn for_path(path: &str) -> InputFormat {
        if path.ends_with(".json") {
            InputFormat::Json
        } else if path.ends_with(".mlir") {
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

    /// Stream `graph`; RLX text, the format of big graphs, is never held in memory whole.
    pub fn write(self, graph: &Graph, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match self {
            Emit::Graph => rlx_text::write(graph, out),
            Emit::Json | Emit::Dot | Emit::Mlir => out.write_all(self.print(graph).as_bytes()),
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
