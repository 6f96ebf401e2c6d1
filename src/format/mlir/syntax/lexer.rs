//! The reader's cursor and its low-level scanning: whitespace and comments,
//! punctuation, identifiers, value and alias names, strings, integers and
//! bracketed groups skipped whole. Nothing here knows the grammar of an
//! operation; the parsers in `generic` and `custom` are built from these.

/// A syntax error at a byte offset.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

use super::Options;
use super::tree::Operation;
use crate::limits::MAX_NESTING;

pub(super) type Result<T> = std::result::Result<T, SyntaxError>;

/// The cursor over the text being read: `src` and `text` are the same bytes,
/// `pos` the offset of the next one to read; `options` what the caller's
/// dialect says.
pub(super) struct Parser<'a> {
    pub(super) src: &'a [u8],
    pub(super) text: &'a str,
    pub(super) pos: usize,
    pub(super) options: &'a Options,
    /// Attributes, types and regions open around `pos`.
    pub(super) depth: usize,
    /// Takes each operation read at the top level or directly in a module's
    /// body instead of the tree (see [`parse_each`](super::parse_each)):
    /// `false` stops the read.
    pub(super) each: Option<&'a mut dyn FnMut(Operation) -> bool>,
    /// Whether the region being read is a module's body.
    pub(super) in_module_body: bool,
    /// The type aliases defined so far (`!t = …`; MLIR defines one before
    /// its uses), which this reader does not expand: a use says so.
    pub(super) type_aliases: std::collections::HashSet<String>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str, pos: usize, options: &'a Options) -> Self {
        Parser { src: text.as_bytes(), text, pos, options, depth: 0, each: None, in_module_body: false, type_aliases: Default::default() }
    }
}

impl Parser<'_> {
    /// Run `read` one level deeper, refusing past [`MAX_NESTING`] levels: the
    /// grammar is recursive, and hostile nesting would overflow the stack.
    pub(super) fn nested<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_NESTING {
            return self.fail(format!("nested deeper than {MAX_NESTING} levels"));
        }
        self.depth += 1;
        let read = read(self);
        self.depth -= 1;
        read
    }

    pub(super) fn fail<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(SyntaxError { offset: self.pos.min(self.src.len()), message: message.into() })
    }

    pub(super) fn skip_ws(&mut self) {
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

    pub(super) fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.src.get(self.pos).copied()
    }

    pub(super) fn eat(&mut self, token: &[u8]) -> bool {
        self.skip_ws();
        if self.src[self.pos..].starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, token: &[u8]) -> Result<()> {
        if self.eat(token) {
            Ok(())
        } else {
            let found = self.found();
            self.fail(format!("expected `{}`, found {found}", String::from_utf8_lossy(token)))
        }
    }

    pub(super) fn found(&mut self) -> String {
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
    pub(super) fn ident(&mut self) -> Option<&str> {
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
    pub(super) fn alias_name(&mut self) -> Result<String> {
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
    pub(super) fn value_id(&mut self) -> Result<(String, usize)> {
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

    pub(super) fn string(&mut self) -> Result<String> {
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
    pub(super) fn balanced(&mut self) -> Result<&str> {
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
                    let Some(open) = depth.checked_sub(1) else { return self.fail("unbalanced brackets") };
                    depth = open;
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

    pub(super) fn symbol_name(&mut self) -> Result<String> {
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

    /// Comma-separated items up to `close` (consumed); the opener is already read.
    pub(super) fn list<T>(&mut self, close: &[u8], mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
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

    pub(super) fn integer(&mut self) -> Result<i128> {
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
}
