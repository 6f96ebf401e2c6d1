//! Operations: the verbatim op text plus a typed view for the ops passes understand.
//!
//! RLX writes an op as the serde JSON of its `Op` enum (`{"Concat":{"axis":1}}`),
//! a bare identifier for unit variants (`MatMul`), or its value syntax when a
//! float is not finite (`Clamp{min: -inf, max: 0.0}`). The text is kept exactly
//! as read so that every op, understood or not, prints back byte for byte;
//! [`OpKind`] is the parsed view of the ops rlx-opt reasons about.

use super::value_syntax;
use crate::fused::{LogMelAttrs, WelchPeaksAttrs};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why an op's text was refused, and where in that text (a byte offset) when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    pub message: String,
    pub offset: Option<usize>,
}

impl OpError {
    fn new(message: impl Into<String>) -> Self {
        OpError { message: message.into(), offset: None }
    }

    /// A serde error, its position moved from "line 1 column N" of the op text to an offset.
    fn json(prefix: &str, e: &serde_json::Error) -> Self {
        let text = e.to_string();
        let message = text.rsplit_once(" at line ").map_or(text.as_str(), |(m, _)| m);
        OpError { message: format!("{prefix}: {message}"), offset: (e.line() == 1).then(|| e.column().saturating_sub(1)) }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// An operation: its source text and what rlx-opt understands of it. The
/// text is shared, so the many identical ops a rewrite creates cost one copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    spelling: Spelling,
    kind: OpKind,
    /// For the fused Welch-peaks op, its attributes parsed once, when the op
    /// is made (or why they do not parse), so that the verifier, the IO
    /// profile, the interpreter and the emitters never re-read the JSON.
    welch_peaks: Option<std::sync::Arc<Result<WelchPeaksAttrs, String>>>,
    /// The same for the fused log-mel op.
    log_mel: Option<std::sync::Arc<Result<LogMelAttrs, String>>>,
}

/// How an op's text is kept. Every spelling gives back its text byte for
/// byte; two ops with the same text always have the same spelling, so
/// comparing ops compares texts.
#[derive(Debug, Clone, PartialEq)]
enum Spelling {
    /// The text as read, or as RLX prints a typed view.
    Text(std::sync::Arc<str>),
    /// A `Constant` exactly as RLX prints it (`{"Constant":{"data":[0,0,128,63]}}`),
    /// spelled from its bytes when printed: holding the text would cost up
    /// to four bytes per byte of data (issue 25: a 400 MB constant read from
    /// a 200-byte MLIR splat). `len` is the text's length.
    Constant { len: usize },
}

/// Typed views of the ops rlx-opt understands; field names and order mirror
/// rlx-ir 0.2.19's `Op`, so serialising a view gives RLX's own JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum OpKind {
    Input { name: String },
    Param { name: String },
    Constant { data: Vec<u8> },
    Activation(Value),
    Binary(String),
    Reshape { new_shape: Vec<i64> },
    Transpose { perm: Vec<u64> },
    Narrow { axis: u64, start: u64, len: u64 },
    Slice { axis: u64, start: u64, len: u64, step: i64 },
    Concat { axis: u64 },
    Reduce { op: ReduceOp, axes: Vec<u64>, keep_dim: bool },
    TopK { k: u64 },
    GatherElements { axis: i32 },
    ComplexNormSq,
    Custom { name: String, num_inputs: u32, attrs: Vec<u8> },
    Fft {
        inverse: bool,
        norm: FftNorm,
        #[serde(default = "native_fft_algo")]
        algo: Value,
    },
    LogMel,
    LogMelBackward,
    WelchPeaks { k: u64, n_segments: u64 },
    /// Any op rlx-opt does not understand; only its name is known.
    #[serde(skip)]
    Opaque { name: Box<str> },
}

/// Which op a node is, without its attributes: what matchers and rewrite
/// patterns test (the attributes are then read from [`OpKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpCode {
    Input,
    Param,
    Constant,
    Activation,
    Binary,
    Reshape,
    Transpose,
    Narrow,
    Slice,
    Concat,
    Reduce,
    TopK,
    GatherElements,
    ComplexNormSq,
    Custom,
    Fft,
    LogMel,
    LogMelBackward,
    WelchPeaks,
    /// An op rlx-opt does not understand.
    Opaque,
}

impl OpKind {
    pub fn code(&self) -> OpCode {
        match self {
            OpKind::Input { .. } => OpCode::Input,
            OpKind::Param { .. } => OpCode::Param,
            OpKind::Constant { .. } => OpCode::Constant,
            OpKind::Activation(_) => OpCode::Activation,
            OpKind::Binary(_) => OpCode::Binary,
            OpKind::Reshape { .. } => OpCode::Reshape,
            OpKind::Transpose { .. } => OpCode::Transpose,
            OpKind::Narrow { .. } => OpCode::Narrow,
            OpKind::Slice { .. } => OpCode::Slice,
            OpKind::Concat { .. } => OpCode::Concat,
            OpKind::Reduce { .. } => OpCode::Reduce,
            OpKind::TopK { .. } => OpCode::TopK,
            OpKind::GatherElements { .. } => OpCode::GatherElements,
            OpKind::ComplexNormSq => OpCode::ComplexNormSq,
            OpKind::Custom { .. } => OpCode::Custom,
            OpKind::Fft { .. } => OpCode::Fft,
            OpKind::LogMel => OpCode::LogMel,
            OpKind::LogMelBackward => OpCode::LogMelBackward,
            OpKind::WelchPeaks { .. } => OpCode::WelchPeaks,
            OpKind::Opaque { .. } => OpCode::Opaque,
        }
    }
}

fn native_fft_algo() -> Value {
    Value::String("Native".into())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FftNorm {
    Backward,
    Forward,
    Ortho,
}

/// Names of the [`OpKind`] variants that carry a typed view.
const KNOWN: &[&str] = &[
    "Input",
    "Param",
    "Constant",
    "Activation",
    "Binary",
    "Reshape",
    "Transpose",
    "Narrow",
    "Slice",
    "Concat",
    "Reduce",
    "TopK",
    "GatherElements",
    "ComplexNormSq",
    "Custom",
    "Fft",
    "LogMel",
    "LogMelBackward",
    "WelchPeaks",
];

impl Op {
    /// Parse an op from its textual form (JSON, bare identifier or value syntax).
    pub fn parse(text: &str) -> Result<Op, OpError> {
        let name = op_name(text).ok_or_else(|| OpError::new(format!("expected an op, found `{}`", snippet(text))))?;
        let known = KNOWN.contains(&name);
        let kind = if text.starts_with(['{', '"']) {
            if known {
                serde_json::from_str(text).map_err(|e| invalid(name, &e))?
            } else {
                serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| OpError::json("op is not valid JSON", &e))?;
                OpKind::Opaque { name: name.into() }
            }
        } else if text.len() == name.len() {
            if known {
                serde_json::from_str(&format!("\"{name}\"")).map_err(|e| OpError { offset: None, ..invalid(name, &e) })?
            } else {
                OpKind::Opaque { name: name.into() }
            }
        } else {
            // Value syntax rlx-opt cannot read stays opaque rather than refused.
            match value_syntax::to_json(text) {
                Ok(json) if known => serde_json::from_str(&json).map_err(|e| OpError { offset: None, ..invalid(name, &e) })?,
                _ => OpKind::Opaque { name: name.into() },
            }
        };
        Ok(Op::new(text, kind))
    }

    /// Build an op from a typed view, written as RLX prints it.
    pub fn from_kind(kind: OpKind) -> Op {
        let text = match &kind {
            OpKind::Constant { data } => {
                let len = constant_text_len(data);
                return Op { spelling: Spelling::Constant { len }, kind, welch_peaks: None, log_mel: None };
            }
            OpKind::Opaque { name } => name.to_string(),
            _ => {
                let json = serde_json::to_string(&kind).expect("typed ops serialise to JSON");
                match json.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    Some(unit) if is_ident(unit) => unit.to_string(),
                    _ => json,
                }
            }
        };
        Op::new(&text, kind)
    }

    /// A `Constant` of these bytes, as RLX prints it.
    pub fn constant(data: Vec<u8>) -> Op {
        Op::from_kind(OpKind::Constant { data })
    }

    fn new(text: &str, kind: OpKind) -> Op {
        // A constant RLX's way is kept as its bytes alone (see `Spelling`).
        if let OpKind::Constant { data } = &kind
            && is_canonical_constant(text, data)
        {
            return Op { spelling: Spelling::Constant { len: text.len() }, kind, welch_peaks: None, log_mel: None };
        }
        let (welch_peaks, log_mel) = match &kind {
            OpKind::Custom { name, attrs, .. } => (
                WelchPeaksAttrs::parse_custom(name, attrs).map(std::sync::Arc::new),
                LogMelAttrs::parse_custom(name, attrs).map(std::sync::Arc::new),
            ),
            _ => (None, None),
        };
        Op { spelling: Spelling::Text(text.into()), kind, welch_peaks, log_mel }
    }

    /// The fused Welch-peaks op carrying `attrs` (RLX's custom op).
    pub fn from_welch_peaks(attrs: &WelchPeaksAttrs) -> Op {
        Op::from_kind(OpKind::Custom { name: crate::fused::WELCH_PEAKS.into(), num_inputs: attrs.num_inputs(), attrs: attrs.to_bytes() })
    }

    /// The fused Welch-peaks op's attributes, if this is one.
    pub fn welch_peaks(&self) -> Option<Result<&WelchPeaksAttrs, &str>> {
        self.welch_peaks.as_deref().map(|r| r.as_ref().map_err(|e| e.as_str()))
    }

    /// Either fused op, carrying `attrs`.
    pub fn from_fused(attrs: &crate::fused::FusedAttrs) -> Op {
        match attrs {
            crate::fused::FusedAttrs::WelchPeaks(a) => Op::from_welch_peaks(a),
            crate::fused::FusedAttrs::LogMel(a) => Op::from_log_mel(a),
        }
    }

    /// The fused log-mel op carrying `attrs` (RLX's custom op).
    pub fn from_log_mel(attrs: &LogMelAttrs) -> Op {
        Op::from_kind(OpKind::Custom { name: crate::fused::LOG_MEL.into(), num_inputs: attrs.num_inputs(), attrs: attrs.to_bytes() })
    }

    /// The fused log-mel op's attributes, if this is one.
    pub fn log_mel(&self) -> Option<Result<&LogMelAttrs, &str>> {
        self.log_mel.as_deref().map(|r| r.as_ref().map_err(|e| e.as_str()))
    }

    /// The op's exact text. A constant's is spelled here from its bytes:
    /// printers stream it with [`Op::write_text`] instead.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.spelling {
            Spelling::Text(text) => std::borrow::Cow::Borrowed(text),
            Spelling::Constant { len } => {
                let mut out = Vec::with_capacity(*len);
                self.write_text(&mut out).expect("writing to memory cannot fail");
                std::borrow::Cow::Owned(String::from_utf8(out).expect("digits are UTF-8"))
            }
        }
    }

    /// The length of [`Op::text`] in bytes, without spelling it.
    pub fn text_len(&self) -> usize {
        match &self.spelling {
            Spelling::Text(text) => text.len(),
            Spelling::Constant { len } => *len,
        }
    }

    /// Write [`Op::text`] to `out`: a constant's digits are streamed, never
    /// held whole.
    pub fn write_text(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match (&self.spelling, &self.kind) {
            (Spelling::Constant { .. }, OpKind::Constant { data }) => write_constant(data, out),
            (Spelling::Text(text), _) => out.write_all(text.as_bytes()),
            (Spelling::Constant { .. }, _) => unreachable!("only constants are spelled from their bytes"),
        }
    }

    pub fn kind(&self) -> &OpKind {
        &self.kind
    }

    /// The op's variant name (`Fft`, `WelchPeaks`, or an opaque op's name).
    pub fn name(&self) -> &str {
        match (&self.kind, &self.spelling) {
            (OpKind::Opaque { name }, _) => name,
            (_, Spelling::Constant { .. }) => "Constant",
            (_, Spelling::Text(text)) => op_name(text).unwrap_or_default(),
        }
    }

    /// Whether dead-code elimination may remove this op once nothing uses it:
    /// not the graph's interface (Input, Param) and not an op rlx-opt does
    /// not understand (it may have effects rlx-opt cannot see).
    pub fn is_removable(&self) -> bool {
        !matches!(self.kind, OpKind::Input { .. } | OpKind::Param { .. } | OpKind::Opaque { .. })
    }

    pub fn is_opaque(&self) -> bool {
        matches!(self.kind, OpKind::Opaque { .. })
    }

    /// Whether the two ops have the same text, without spelling constants.
    pub fn same_text(&self, other: &Op) -> bool {
        match (&self.spelling, &other.spelling) {
            (Spelling::Constant { .. }, Spelling::Constant { .. }) => self.kind == other.kind,
            (Spelling::Text(a), Spelling::Text(b)) => a == b,
            // A text that spells a constant RLX's way is always held as bytes.
            _ => false,
        }
    }

    /// Whether this is a `Constant` spelled as RLX prints it (held as its
    /// bytes alone).
    pub fn is_canonical_constant(&self) -> bool {
        matches!(self.spelling, Spelling::Constant { .. })
    }

    /// Whether the text is JSON (as opposed to a bare identifier or value syntax).
    pub fn is_json(&self) -> bool {
        match &self.spelling {
            Spelling::Text(text) => text.starts_with(['{', '"']),
            Spelling::Constant { .. } => true,
        }
    }
}

/// What RLX prints before and after a constant's bytes.
const CONSTANT_HEAD: &str = r#"{"Constant":{"data":["#;
const CONSTANT_TAIL: &str = "]}}";

/// The length of `{"Constant":{"data":[…]}}` for these bytes: 1 to 3 digits
/// per byte, a comma between bytes.
pub fn constant_text_len(data: &[u8]) -> usize {
    let digits: usize = data.iter().map(|&b| 1 + usize::from(b >= 10) + usize::from(b >= 100)).sum();
    CONSTANT_HEAD.len() + digits + data.len().saturating_sub(1) + CONSTANT_TAIL.len()
}

/// Stream `{"Constant":{"data":[…]}}`, the bytes in decimal, through a
/// buffer (a 4 GiB constant is never spelled whole in memory).
pub fn write_constant(data: &[u8], out: &mut impl std::io::Write) -> std::io::Result<()> {
    out.write_all(CONSTANT_HEAD.as_bytes())?;
    let mut buf = Vec::with_capacity(1 << 16);
    for (i, &b) in data.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        if b >= 100 {
            buf.push(b'0' + b / 100);
        }
        if b >= 10 {
            buf.push(b'0' + b / 10 % 10);
        }
        buf.push(b'0' + b % 10);
        if buf.len() > (1 << 16) - 8 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.write_all(CONSTANT_TAIL.as_bytes())
}

/// Whether `text` is exactly what [`write_constant`] writes for `data`,
/// compared as it is written (nothing is spelled whole).
fn is_canonical_constant(text: &str, data: &[u8]) -> bool {
    /// A writer that checks what it is given against the rest of a text.
    struct Same<'a>(&'a [u8]);
    impl std::io::Write for Same<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(std::io::Error::other("differs")),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    if text.len() != constant_text_len(data) {
        return false;
    }
    let mut same = Same(text.as_bytes());
    write_constant(data, &mut same).is_ok() && same.0.is_empty()
}

fn invalid(name: &str, e: &serde_json::Error) -> OpError {
    OpError::json(&format!("invalid `{name}` op"), e)
}

fn snippet(text: &str) -> String {
    text.chars().take(24).collect()
}

pub fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The variant name of an op's text: the first key of a JSON object, the
/// content of a JSON string, or the leading identifier.
pub fn op_name(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"").or_else(|| text.strip_prefix('"'));
    let name = match rest {
        Some(rest) => &rest[..rest.find('"')?],
        None => {
            let end = text
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(text.len());
            &text[..end]
        }
    };
    is_ident(name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_peaks_attributes_round_trip_through_the_custom_op() {
        let attrs = WelchPeaksAttrs::rlx(256, 8, 16);
        let op = Op::from_welch_peaks(&attrs);
        assert!(op.text().starts_with(r#"{"Custom":{"name":"rlx_opt.welch_peaks","num_inputs":1,"attrs":[123,34"#));
        assert_eq!(op.welch_peaks().unwrap().unwrap(), &attrs);
        let reparsed = Op::parse(&op.text()).unwrap();
        assert_eq!(reparsed.welch_peaks().unwrap().unwrap(), &attrs);
    }

    #[test]
    fn known_ops_get_typed_views_and_keep_their_text() {
        let text = r#"{"Narrow":{"axis":1,"start":0,"len":65}}"#;
        let op = Op::parse(text).unwrap();
        assert_eq!(op.kind(), &OpKind::Narrow { axis: 1, start: 0, len: 65 });
        assert_eq!(op.text(), text);
        assert_eq!(op.name(), "Narrow");
    }

    #[test]
    fn unknown_ops_are_opaque_and_verbatim() {
        for text in [r#"{"Softmax":{"axis": -1}}"#, "MatMul", r#""MatMul""#, "Clamp{min: -inf, max: 0.0}"] {
            let op = Op::parse(text).unwrap();
            assert!(op.is_opaque(), "{text}");
            assert_eq!(op.text(), text);
        }
    }

    #[test]
    fn value_syntax_of_known_ops_is_understood() {
        let op = Op::parse("Reshape{new_shape: [8, -1]}").unwrap();
        assert_eq!(op.kind(), &OpKind::Reshape { new_shape: vec![8, -1] });
        let op = Op::parse("Activation(Gelu)").unwrap();
        assert_eq!(op.kind(), &OpKind::Activation(Value::String("Gelu".into())));
    }

    #[test]
    fn bad_ops_are_rejected_with_a_reason() {
        let e = Op::parse(r#"{"Concat":{"axs":1}}"#).unwrap_err();
        assert_eq!((e.message.as_str(), e.offset), ("invalid `Concat` op: missing field `axis`", Some(18)));
        let e = Op::parse(r#"{"Foo":{"a":}}"#).unwrap_err();
        assert_eq!((e.message.as_str(), e.offset), ("op is not valid JSON: expected value", Some(12)));
        assert!(Op::parse("%0").is_err());
    }

    /// Issue 25: a constant RLX's way is held as its bytes alone and spelled
    /// back exactly; another spelling keeps its text.
    #[test]
    fn constants_are_bytes_and_spell_back_exactly() {
        let text = r#"{"Constant":{"data":[0,9,10,99,100,255]}}"#;
        let op = Op::parse(text).unwrap();
        assert!(op.is_canonical_constant());
        assert_eq!((op.text(), op.text_len(), op.name()), (text.into(), text.len(), "Constant"));
        assert_eq!(op, Op::constant(vec![0, 9, 10, 99, 100, 255]));
        assert_eq!(constant_text_len(&[]), r#"{"Constant":{"data":[]}}"#.len());
        assert_eq!(Op::constant(Vec::new()).text(), r#"{"Constant":{"data":[]}}"#);
        for other in [r#"{"Constant": {"data": [0, 9]}}"#, r#"{"Constant":{"data":[0,09]}}"#, "Constant{data: [1, 2]}"] {
            let Ok(op) = Op::parse(other) else { continue };
            assert!(!op.is_canonical_constant(), "{other}");
            assert_eq!(op.text(), other);
            assert!(!op.same_text(&Op::from_kind(op.kind().clone())), "{other}");
        }
    }

    #[test]
    fn typed_ops_print_as_rlx_does() {
        assert_eq!(Op::from_kind(OpKind::ComplexNormSq).text(), "ComplexNormSq");
        let fft = Op::from_kind(OpKind::Fft { inverse: false, norm: FftNorm::Backward, algo: native_fft_algo() });
        assert_eq!(fft.text(), r#"{"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}"#);
        let wp = Op::from_kind(OpKind::WelchPeaks { k: 16, n_segments: 8 });
        assert_eq!(wp.text(), r#"{"WelchPeaks":{"k":16,"n_segments":8}}"#);
    }
}
