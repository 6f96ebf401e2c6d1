//! User-facing errors: a place in a file and what is wrong there, rendered
//! as `file:line:col: error: message` the way compilers print them.

use crate::ir::Loc;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// `None` when the error concerns the whole input (it cannot be read, say).
    pub loc: Option<Loc>,
    pub message: String,
}

impl Diagnostic {
    pub fn at(loc: Loc, message: impl Into<String>) -> Self {
        Diagnostic { loc: Some(loc), message: message.into() }
    }

    pub fn whole_file(message: impl Into<String>) -> Self {
        Diagnostic { loc: None, message: message.into() }
    }

    /// At `loc` when known (nodes a pass created have none).
    pub fn maybe_at(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Diagnostic { loc, message: message.into() }
    }

    pub fn render(&self, file: &str) -> String {
        Rendered { file, diag: self }.to_string()
    }
}

struct Rendered<'a> {
    file: &'a str,
    diag: &'a Diagnostic,
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.diag.loc {
            Some(Loc { line, col }) => write!(f, "{}:{line}:{col}: error: {}", self.file, self.diag.message),
            None => write!(f, "{}: error: {}", self.file, self.diag.message),
        }
    }
}

/// Where a byte offset of `text` sits, as a 1-based line and column (in characters).
pub fn loc_of_offset(text: &[u8], offset: usize) -> Loc {
    let before = &text[..offset.min(text.len())];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
    Loc { line: line as u32, col: col as u32 }
}
