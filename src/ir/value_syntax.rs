//! RLX's value syntax (`Reshape{new_shape: [8]}`, `Activation(Gelu)`), the form
//! RLX prints an op in when JSON cannot carry one of its floats, converted to
//! the JSON the serde form would have. Only the subset that ops use is read:
//! constructs outside it make the op opaque, never an error, so no valid RLX
//! text is refused.

use crate::limits::MAX_NESTING;

/// Convert one value-syntax op to JSON. Non-finite floats become JSON strings
/// (`"-inf"`), which no typed view accepts as a number.
pub fn to_json(text: &str) -> Result<String, ValueSyntaxError> {
    let mut p = Converter { src: text.as_bytes(), pos: 0, depth: 0, out: String::with_capacity(text.len() + 16) };
    p.value()?;
    p.skip_ws();
    if p.pos != p.src.len() {
        return Err(ValueSyntaxError::TrailingText(text[p.pos..].into()));
    }
    Ok(p.out)
}

/// Why text is not value syntax rlx-opt reads (the op then stays opaque).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueSyntaxError {
    #[error("unexpected text after the op: `{0}`")]
    TrailingText(String),
    #[error("expected `{0}` in value syntax")]
    Expected(char),
    #[error("value syntax nested deeper than {MAX_NESTING} levels")]
    TooDeep,
    /// A construct outside the subset ops use, at this character.
    #[error("unsupported value syntax at `{0}`")]
    Unsupported(char),
    #[error("unexpected end of value syntax")]
    End,
    #[error("unterminated string in value syntax")]
    UnterminatedString,
    #[error("`{0}` is not a number")]
    NotANumber(String),
    #[error("expected a field name in value syntax")]
    ExpectedFieldName,
    #[error(transparent)]
    Utf8(#[from] std::str::Utf8Error),
}

struct Converter<'a> {
    src: &'a [u8],
    pos: usize,
    /// Brackets, braces and parentheses open around `pos`.
    depth: usize,
    out: String,
}

impl Converter<'_> {
    fn skip_ws(&mut self) {
        while self.src.get(self.pos).is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.src.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), ValueSyntaxError> {
        if self.eat(b) { Ok(()) } else { Err(ValueSyntaxError::Expected(b as char)) }
    }

    fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &str {
        let start = self.pos;
        while self.src.get(self.pos).is_some_and(|&b| pred(b)) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.src[start..self.pos]).unwrap_or_default()
    }

    /// One value, at most [`MAX_NESTING`] levels deep (the recursion would
    /// otherwise overflow the stack on hostile input).
    fn value(&mut self) -> Result<(), ValueSyntaxError> {
        if self.depth >= MAX_NESTING {
            return Err(ValueSyntaxError::TooDeep);
        }
        self.depth += 1;
        let value = self.value_here();
        self.depth -= 1;
        value
    }

    fn value_here(&mut self) -> Result<(), ValueSyntaxError> {
        match self.peek().ok_or(ValueSyntaxError::End)? {
            b'"' => self.string(),
            b'[' => {
                self.pos += 1;
                self.out.push('[');
                self.list(b']', Self::value)?;
                self.out.push(']');
                Ok(())
            }
            b'{' => {
                self.pos += 1;
                self.fields()
            }
            b'-' | b'0'..=b'9' => self.number(),
            b if b.is_ascii_alphabetic() || b == b'_' => self.word(),
            other => Err(ValueSyntaxError::Unsupported(other as char)),
        }
    }

    fn string(&mut self) -> Result<(), ValueSyntaxError> {
        let start = self.pos;
        self.pos += 1;
        let mut escaped = false;
        while let Some(&b) = self.src.get(self.pos) {
            self.pos += 1;
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    self.out.push_str(std::str::from_utf8(&self.src[start..self.pos]).map_err(ValueSyntaxError::Utf8)?);
                    return Ok(());
                }
                _ => {}
            }
        }
        Err(ValueSyntaxError::UnterminatedString)
    }

    fn number(&mut self) -> Result<(), ValueSyntaxError> {
        let negative = self.eat(b'-');
        let word = self.take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'));
        let word = if negative { format!("-{word}") } else { word.to_string() };
        if word.ends_with("inf") || word.ends_with("nan") {
            self.out.push_str(&format!("\"{word}\""));
        } else if serde_json::from_str::<serde_json::Number>(&word).is_ok() {
            self.out.push_str(&word);
        } else {
            return Err(ValueSyntaxError::NotANumber(word));
        }
        Ok(())
    }

    /// `true`/`false`/`none`, `inf`/`nan`, a unit variant, `Name(..)` or `Name{..}`.
    fn word(&mut self) -> Result<(), ValueSyntaxError> {
        let word = self.take_while(|b| b.is_ascii_alphanumeric() || b == b'_').to_string();
        match word.as_str() {
            "true" | "false" => self.out.push_str(&word),
            "none" => self.out.push_str("null"),
            "inf" | "nan" => self.out.push_str(&format!("\"{word}\"")),
            _ if self.src.get(self.pos) == Some(&b'(') => {
                self.pos += 1;
                self.out.push_str(&format!("{{\"{word}\":"));
                let mark = self.out.len();
                let count = self.list(b')', Self::value)?;
                if count != 1 {
                    self.out.insert(mark, '[');
                    self.out.push(']');
                }
                self.out.push('}');
            }
            _ if self.src.get(self.pos) == Some(&b'{') => {
                self.pos += 1;
                self.out.push_str(&format!("{{\"{word}\":"));
                self.fields()?;
                self.out.push('}');
            }
            _ => self.out.push_str(&format!("\"{word}\"")),
        }
        Ok(())
    }

    /// `name: value, …}` after the opening brace.
    fn fields(&mut self) -> Result<(), ValueSyntaxError> {
        self.out.push('{');
        self.list(b'}', |p| {
            p.skip_ws();
            let key = p.take_while(|b| b.is_ascii_alphanumeric() || b == b'_').to_string();
            if key.is_empty() {
                return Err(ValueSyntaxError::ExpectedFieldName);
            }
            p.expect(b':')?;
            p.out.push_str(&format!("\"{key}\":"));
            p.value()
        })?;
        self.out.push('}');
        Ok(())
    }

    /// Comma-separated items up to `close`; returns how many there were.
    fn list(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Result<(), ValueSyntaxError>) -> Result<usize, ValueSyntaxError> {
        let mut count = 0;
        while !self.eat(close) {
            if count > 0 {
                self.expect(b',')?;
                self.out.push(',');
                if self.eat(close) {
                    break;
                }
            }
            item(self)?;
            count += 1;
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::{ValueSyntaxError, to_json};

    #[test]
    fn converts_structs_tuples_and_floats() {
        assert_eq!(to_json("Reshape{new_shape: [8, -1]}").unwrap(), r#"{"Reshape":{"new_shape":[8,-1]}}"#);
        assert_eq!(to_json("Activation(Gelu)").unwrap(), r#"{"Activation":"Gelu"}"#);
        assert_eq!(to_json("Clamp{min: -inf, max: 0.0}").unwrap(), r#"{"Clamp":{"min":"-inf","max":0.0}}"#);
        assert_eq!(to_json(r#"Input{name: "x, }"}"#).unwrap(), r#"{"Input":{"name":"x, }"}}"#);
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = |n: usize| format!("Foo{{a: {}1{}}}", "[".repeat(n), "]".repeat(n));
        assert!(to_json(&deep(100)).is_ok());
        assert_eq!(to_json(&deep(30_000)).unwrap_err(), ValueSyntaxError::TooDeep);
        assert_eq!(ValueSyntaxError::TooDeep.to_string(), "value syntax nested deeper than 128 levels");
        let calls = format!("{}1{}", "B(".repeat(30_000), ")".repeat(30_000));
        assert_eq!(to_json(&calls).unwrap_err(), ValueSyntaxError::TooDeep);
    }

    #[test]
    fn rejects_what_it_does_not_read() {
        assert_eq!(to_json("Foo{a: #{1: 2}}").unwrap_err(), ValueSyntaxError::Unsupported('#'));
        assert_eq!(to_json("Foo{a: 1").unwrap_err(), ValueSyntaxError::Expected(','));
    }
}
