//! RLX's value syntax (`Reshape{new_shape: [8]}`, `Activation(Gelu)`), the form
//! RLX prints an op in when JSON cannot carry one of its floats, converted to
//! the JSON the serde form would have. Only the subset that ops use is read:
//! constructs outside it make the op opaque, never an error, so no valid RLX
//! text is refused.

use crate::limits::MAX_NESTING;

/// Convert one value-syntax op to JSON. Non-finite floats become JSON strings
/// (`"-inf"`), which no typed view accepts as a number.
pub fn to_json(text: &str) -> Result<String, String> {
    let mut p = Converter { src: text.as_bytes(), pos: 0, depth: 0, out: String::with_capacity(text.len() + 16) };
    p.value()?;
    p.skip_ws();
    if p.pos != p.src.len() {
        return Err(format!("unexpected text after the op: `{}`", &text[p.pos..]));
    }
    Ok(p.out)
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

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.eat(b) { Ok(()) } else { Err(format!("expected `{}` in value syntax", b as char)) }
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
    fn value(&mut self) -> Result<(), String> {
        if self.depth >= MAX_NESTING {
            return Err(format!("value syntax nested deeper than {MAX_NESTING} levels"));
        }
        self.depth += 1;
        let value = self.value_here();
        self.depth -= 1;
        value
    }

    fn value_here(&mut self) -> Result<(), String> {
        match self.peek().ok_or("unexpected end of value syntax")? {
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
            other => Err(format!("unsupported value syntax at `{}`", other as char)),
        }
    }

    fn string(&mut self) -> Result<(), String> {
        let start = self.pos;
        self.pos += 1;
        let mut escaped = false;
        while let Some(&b) = self.src.get(self.pos) {
            self.pos += 1;
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    self.out.push_str(std::str::from_utf8(&self.src[start..self.pos]).map_err(|e| e.to_string())?);
                    return Ok(());
                }
                _ => {}
            }
        }
        Err("unterminated string in value syntax".into())
    }

    fn number(&mut self) -> Result<(), String> {
        let negative = self.eat(b'-');
        let word = self.take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'));
        let word = if negative { format!("-{word}") } else { word.to_string() };
        if word.ends_with("inf") || word.ends_with("nan") {
            self.out.push_str(&format!("\"{word}\""));
        } else if serde_json::from_str::<serde_json::Number>(&word).is_ok() {
            self.out.push_str(&word);
        } else {
            return Err(format!("`{word}` is not a number"));
        }
        Ok(())
    }

    /// `true`/`false`/`none`, `inf`/`nan`, a unit variant, `Name(..)` or `Name{..}`.
    fn word(&mut self) -> Result<(), String> {
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
    fn fields(&mut self) -> Result<(), String> {
        self.out.push('{');
        self.list(b'}', |p| {
            p.skip_ws();
            let key = p.take_while(|b| b.is_ascii_alphanumeric() || b == b'_').to_string();
            if key.is_empty() {
                return Err("expected a field name in value syntax".into());
            }
            p.expect(b':')?;
            p.out.push_str(&format!("\"{key}\":"));
            p.value()
        })?;
        self.out.push('}');
        Ok(())
    }

    /// Comma-separated items up to `close`; returns how many there were.
    fn list(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Result<(), String>) -> Result<usize, String> {
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
    use super::to_json;

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
        assert!(to_json(&deep(30_000)).unwrap_err().contains("nested deeper than 128"));
        let calls = format!("{}1{}", "B(".repeat(30_000), ")".repeat(30_000));
        assert!(to_json(&calls).unwrap_err().contains("nested deeper"));
    }

    #[test]
    fn rejects_what_it_does_not_read() {
        assert!(to_json("Foo{a: #{1: 2}}").is_err());
        assert!(to_json("Foo{a: 1").is_err());
    }
}
