//! What goes wrong reading a graph, and where in its text.

use crate::diag::Diagnostic;
use crate::ir::Loc;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The text breaks its format at a place (line and column).
    #[error("{message}")]
    At { loc: Loc, message: String },
    /// The input as a whole is wrong (it names a node no line defines, say).
    #[error("{message}")]
    Whole { message: String },
    /// Text that must hold one graph holds another number (an MLIR module of several functions).
    #[error("expected one graph, found {0} functions")]
    NotOneGraph(usize),
}

impl FormatError {
    pub fn at(loc: Loc, message: impl Into<String>) -> Self {
        FormatError::At { loc, message: message.into() }
    }

    pub fn whole_file(message: impl Into<String>) -> Self {
        FormatError::Whole { message: message.into() }
    }

    /// At `loc` when known.
    pub fn maybe_at(loc: Option<Loc>, message: impl Into<String>) -> Self {
        match loc {
            Some(loc) => FormatError::at(loc, message),
            None => FormatError::whole_file(message),
        }
    }

    pub fn loc(&self) -> Option<Loc> {
        match self {
            FormatError::At { loc, .. } => Some(*loc),
            _ => None,
        }
    }

    /// `file:line:col: error: …`, through the one renderer.
    pub fn render(&self, file: &str) -> String {
        Diagnostic::from(self.clone()).render(file)
    }
}

impl From<FormatError> for Diagnostic {
    fn from(e: FormatError) -> Diagnostic {
        Diagnostic::maybe_at(e.loc(), e.to_string())
    }
}
