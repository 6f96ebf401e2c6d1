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
        let message = printable(&self.diag.message);
        // The file name is the user's, and may carry anything too; kept
        // whole so that it can be found.
        let file = escape_invisible(self.file);
        match self.diag.loc {
            Some(Loc { line, col }) => write!(f, "{file}:{line}:{col}: error: {message}"),
            None => write!(f, "{file}: error: {message}"),
        }
    }
}

/// The longest run of non-space characters a message shows; input echoed
/// into messages (a token, a name) may be megabytes long.
const LONGEST_WORD: usize = 80;

/// `message` as a terminal should show it: control characters, byte-order
/// marks and bidirectional overrides escaped (`\u{feff}`), so what is
/// wrong is visible, and every word longer than [`LONGEST_WORD`] clipped.
pub fn printable(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4096));
    let mut word = 0usize;
    let mut clipped = 0usize;
    let flush = |out: &mut String, clipped: &mut usize| {
        if *clipped > 0 {
            out.push_str(&format!("…(+{} chars)", *clipped));
            *clipped = 0;
        }
    };
    for c in message.chars() {
        if c == '\n' || c == ' ' {
            flush(&mut out, &mut clipped);
            word = 0;
            out.push(c);
            continue;
        }
        word += 1;
        if word > LONGEST_WORD {
            clipped += 1;
            continue;
        }
        if is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    flush(&mut out, &mut clipped);
    out
}

/// Control characters, byte-order marks, zero-width characters and
/// bidirectional overrides: what would change a terminal or hide in it.
fn is_invisible(c: char) -> bool {
    c.is_control() || matches!(c, '\u{feff}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with its invisible characters escaped as [`printable`] does, but
/// nothing clipped and line breaks kept: for reports whose names must stay
/// whole (kernel names in rlx-trace's tables, which can be long).
pub fn escape_invisible(text: &str) -> String {
    escape(text, |c| c != '\n' && is_invisible(c))
}

/// [`escape_invisible`] for a field of one line of a report: its line
/// breaks escaped too, so that what it quotes cannot start a line of its own.
pub fn escape_in_line(text: &str) -> String {
    escape(text, is_invisible)
}

fn escape(text: &str, escaped: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Input echoed into one line of a message: [`clip`]ped, its line breaks
/// and other invisible characters escaped ([`escape_in_line`]), so that a
/// name from a file can neither flood a message nor start a line of its own.
pub fn echo_in_line(text: &str) -> String {
    escape_in_line(&clip(text))
}

/// Characters [`clip`] leaves for the punctuation a message puts around
/// what it echoes (`` `…` ``, `'…'`, `@…`): the clipped word and its quotes
/// stay within [`LONGEST_WORD`], so [`printable`] does not clip it again.
const QUOTES: usize = 8;

/// `text` cut to [`LONGEST_WORD`] characters less room for its quotes,
/// for echoing input in a message: `xxx… (+N chars)`, the count a word of
/// its own, so that the whole message then passes [`printable`] as it is
/// (a count clipped again read `…(+8 chars) chars)` for 9,924 hidden).
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(LONGEST_WORD - QUOTES) {
        Some((end, _)) => format!("{}… (+{} chars)", &text[..end], text[end..].chars().count()),
        None => text.to_string(),
    }
}

/// [`loc_of_offset`] in a chunk of a file whose first line is line
/// `first_line` of the file (`--split-input-file`).
pub fn loc_in_chunk(text: &[u8], offset: usize, first_line: u32) -> Loc {
    let loc = loc_of_offset(text, offset);
    Loc { line: loc.line + first_line - 1, ..loc }
}

/// Where a byte offset of `text` sits, as a 1-based line and column (in characters).
pub fn loc_of_offset(text: &[u8], offset: usize) -> Loc {
    let before = &text[..offset.min(text.len())];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
    Loc { line: line as u32, col: col as u32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_invisible_characters_and_clip_long_words() {
        assert_eq!(printable("found `\u{feff}graph`"), "found `\\u{feff}graph`");
        assert_eq!(printable("a\0b"), "a\\u{0}b");
        let long = format!("token `{}` here", "x".repeat(800_000));
        let shown = printable(&long);
        assert!(shown.len() < 200 && shown.ends_with(" here") && shown.contains("…(+"), "{shown}");
        assert_eq!(printable("plain message, kept as it is"), "plain message, kept as it is");
    }

    /// An adversarial run: a word clipped by `clip` and then again by
    /// `printable` showed `…(+8 chars) chars)` for 9,924 hidden characters,
    /// and `(+22 chars)` for 20 with the closing backtick gone.
    #[test]
    fn a_clipped_echo_is_not_clipped_again() {
        let shown = printable(&format!("unknown pass `{}` (see --list-passes)", clip(&"y".repeat(100))));
        assert_eq!(shown, format!("unknown pass `{}… (+28 chars)` (see --list-passes)", "y".repeat(72)));
        let braces = format!("dce{}", "{".repeat(10_000));
        let shown = printable(&format!("unbalanced `{{` in pipeline `{}`", clip(&braces)));
        assert_eq!(shown, format!("unbalanced `{{` in pipeline `dce{}… (+9931 chars)`", "{".repeat(69)));
        // At the bound: 72 characters stay whole, 73 or 80 are clipped, and
        // quoted either way no word passes printable's bound.
        assert_eq!(clip(&"z".repeat(72)), "z".repeat(72));
        assert_eq!(clip(&"z".repeat(73)), format!("{}… (+1 chars)", "z".repeat(72)));
        for n in [72, 73, 79, 80, 81] {
            let quoted = format!("pass `{}` (see)", clip(&"ü".repeat(n)));
            assert_eq!(printable(&quoted), quoted, "{n} characters, quoted, clipped again");
        }
    }
}
