//! What can go wrong reading a trace or a categories file. Each error
//! displays as the line rlx-trace prints, `FILE:LINE:COL: error: …` where the
//! place is known, like a compiler's diagnostics. That line includes the
//! cause's message, since rlx-trace prints one line per error; `source()`
//! still gives the cause to callers that want it.

use std::io;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum TraceError {
    /// The trace could not be opened or read.
    #[error("{}: error: cannot read: {source}", name(file))]
    Io { file: Option<String>, source: io::Error },
    /// A gzipped trace could not be decompressed.
    #[error("{}: error: {source}", name(file))]
    Gzip { file: Option<String>, source: io::Error },
    /// The trace is not JSON, or not a Chrome trace; `line` and `column`
    /// (1-based, in the decompressed text) are 0 when serde_json gives none.
    #[error("{}: error: invalid trace JSON: {source}", place(file, *line, *column))]
    Json { file: Option<String>, line: usize, column: usize, source: serde_json::Error },
    /// Something follows the trace's JSON value.
    #[error("{}: error: text after the trace: {source}", place(file, *line, *column))]
    TrailingText { file: Option<String>, line: usize, column: usize, source: serde_json::Error },
    /// The trace is valid but has nothing to compare.
    #[error("{}: error: the trace has no GPU kernels or rlx-run op events", name(file))]
    NoKernels { file: Option<String> },
    /// The categories file is not valid TOML of the expected shape.
    #[error("categories file: {source}")]
    Categories { source: toml::de::Error },
    /// A category's glob pattern is invalid.
    #[error("category `{category}`: pattern `{pattern}`: {source}")]
    Pattern { category: String, pattern: String, source: globset::Error },
    /// A category's patterns could not be compiled together.
    #[error("category `{category}`: {source}")]
    Category { category: String, source: globset::Error },
}

impl TraceError {
    /// The error of reading `path`: the loader works on readers, which have
    /// no name, so the file is filled in by whoever opened it.
    pub fn in_file(mut self, path: &str) -> Self {
        match &mut self {
            TraceError::Io { file, .. } | TraceError::Gzip { file, .. } | TraceError::Json { file, .. } | TraceError::TrailingText { file, .. } | TraceError::NoKernels { file } => {
                *file = Some(path.to_string());
            }
            TraceError::Categories { .. } | TraceError::Pattern { .. } | TraceError::Category { .. } => {}
        }
        self
    }
}

/// The file's name, or nothing for a trace read from an unnamed reader (the
/// message then starts with `:` or `: error:`, for a caller to prefix).
fn name(file: &Option<String>) -> &str {
    file.as_deref().unwrap_or("")
}

/// `file:line:column`, or the file alone when the position is unknown.
fn place(file: &Option<String>, line: usize, column: usize) -> String {
    match line {
        0 => name(file).to_string(),
        _ => format!("{}:{line}:{column}", name(file)),
    }
}
