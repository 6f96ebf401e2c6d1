//! The one definition of how an RLX node looks in MLIR, used by the writer,
//! the reader and every host (rlx-opt, the melior pass, the mlir-opt plugin).
//!
//! - An op `{"Name": payload}` is the operation `"rlx.Name"`. A struct payload
//!   becomes one attribute per field (JSON integers as `i64`, floats as `f64`,
//!   strings, bools, arrays, objects as dictionaries, `null` as `unit`); any
//!   other payload is the attribute `rlx.value`; a unit op has none.
//! - `Constant`'s bytes are dense elements of the node's tensor type (`value`);
//!   `Custom`'s JSON attribute bytes are a string.
//! - Attributes are dictionaries, so MLIR sorts them: when the op's text cannot
//!   be rebuilt from them byte for byte (an op rlx-opt does not know whose
//!   fields RLX prints in another order, value syntax), `rlx.text` carries the
//!   text. It is a spelling hint only: the reader uses it only when it says
//!   what the attributes say, so edited attributes always win.
//! - Graph inputs (`Input`, `Param`) are function arguments. MLIR wants
//!   argument attributes to belong to a dialect, so the op's attributes sit in
//!   one dictionary named after the op (`rlx.Input = {name = "x"}`), beside
//!   `rlx.position`, the node's place in the graph.
//!   A node's id is implicit (one more than the node before it) unless
//!   `rlx.id` says otherwise; debug names are `loc("name")`.

use crate::ir::{DType, Dim, Op, OpKind, TensorType, value_syntax};
use serde_json::{Map, Value};

pub const OP_PREFIX: &str = "rlx.";
pub const ATTR_VALUE: &str = "rlx.value";
pub const ATTR_TEXT: &str = "rlx.text";
pub const ATTR_ID: &str = "rlx.id";
pub const ATTR_POSITION: &str = "rlx.position";
/// The symbol of each dynamic dim (`?3`), in order: MLIR's `?` has none.
pub const ATTR_SYMBOLS: &str = "rlx.symbols";

/// An op attribute before it is spelled: a JSON value, or a constant's bytes
/// as dense elements of the node's tensor type.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Json(Value),
    Dense(Vec<u8>),
}

/// MLIR's name of an element type: RLX's, except where MLIR spells it otherwise.
pub fn element_type(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "ui8",
        DType::U32 => "ui32",
        DType::Bool => "i1",
        DType::C64 => "complex<f32>",
        DType::C128 => "complex<f64>",
        other => other.name(),
    }
}

pub fn dtype_of_element(name: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|d| element_type(*d) == name)
}

/// `tensor<8x1024xf32>`, `tensor<?x128xf32>`, `tensor<f32>`.
pub fn write_tensor_type(ty: &TensorType, out: &mut String) {
    out.push_str("tensor<");
    for dim in &ty.dims {
        match dim {
            Dim::Static(n) => out.push_str(itoa::Buffer::new().format(*n)),
            Dim::Dynamic(_) => out.push('?'),
        }
        out.push('x');
    }
    out.push_str(element_type(ty.dtype));
    out.push('>');
}

/// Symbols of the dynamic dims, when there are any.
pub fn dynamic_symbols(ty: &TensorType) -> Option<Value> {
    let symbols: Vec<Value> = ty.dims.iter().filter_map(|d| match d {
        Dim::Dynamic(s) => Some(Value::from(*s)),
        Dim::Static(_) => None,
    }).collect();
    (!symbols.is_empty()).then_some(Value::Array(symbols))
}

/// The op's attributes (sorted by name, as MLIR keeps them), with `rlx.text`
/// added when they alone would not give back the op's exact text.
pub fn op_attributes(op: &Op, ty: &TensorType) -> Vec<(String, AttrValue)> {
    // A constant's bytes go straight to dense elements: through `payload`
    // each byte would become a JSON value of its own (32 bytes and more).
    if let OpKind::Constant { data } = op.kind()
        && dense_fits(ty, data.len())
    {
        let mut attrs = vec![("value".to_string(), AttrValue::Dense(data.clone()))];
        if !op.is_canonical_constant() {
            attrs.push((ATTR_TEXT.to_string(), AttrValue::Json(Value::String(op.text().into_owned()))));
        }
        return attrs;
    }
    let mut attrs = match payload(op) {
        Some(Value::Object(fields)) => fields.into_iter().map(|(k, v)| (k, AttrValue::Json(v))).collect(),
        Some(other) => vec![(ATTR_VALUE.to_string(), AttrValue::Json(other))],
        None => Vec::new(),
    };
    // (A constant whose bytes fit its type went out as dense elements above.)
    if let OpKind::Custom { attrs: bytes, .. } = op.kind()
        && let Ok(json) = std::str::from_utf8(bytes)
    {
        set(&mut attrs, "attrs", "attrs", AttrValue::Json(Value::String(json.to_string())));
    }
    attrs.sort_by(|a, b| a.0.cmp(&b.0));
    let rebuilt = op_from_attributes(op.name(), attrs.clone(), None);
    if !rebuilt.as_ref().is_ok_and(|r| r.same_text(op)) {
        attrs.push((ATTR_TEXT.to_string(), AttrValue::Json(Value::String(op.text().into_owned()))));
        attrs.sort_by(|a, b| a.0.cmp(&b.0));
    }
    attrs
}

/// [`op_attributes`], remembered per op spelling: graphs repeat a few op
/// configurations many times, and working out each op's attributes means
/// parsing and re-spelling its JSON. Constants, whose attributes depend on
/// their type, are never remembered.
#[derive(Default)]
pub struct AttributeCache {
    known: std::collections::HashMap<String, Vec<(String, AttrValue)>>,
}

impl AttributeCache {
    pub fn op_attributes(&mut self, op: &Op, ty: &TensorType) -> Vec<(String, AttrValue)> {
        if matches!(op.kind(), OpKind::Constant { .. }) {
            return op_attributes(op, ty);
        }
        if let Some(attrs) = self.known.get(&*op.text()) {
            return attrs.clone();
        }
        let attrs = op_attributes(op, ty);
        self.known.insert(op.text().into_owned(), attrs.clone());
        attrs
    }
}

/// Rebuild an op from its name (without `rlx.`) and attributes; `rlx.*`
/// attributes other than `rlx.value` and `rlx.text` must be removed first.
pub fn op_from_attributes(name: &str, attrs: Vec<(String, AttrValue)>, text: Option<&str>) -> Result<Op, MappingError> {
    // RLX's op names are identifiers; the name is printed as it is, and
    // `rlx.Foo(%0) : [4] f32\0A  %7 = Bar` added a node to the printed
    // graph (an adversarial run).
    if !crate::ir::op::is_ident(name) {
        return Err(MappingError::OpName);
    }
    // The text may be what the op prints as: it must be one op's spelling.
    if let Some(text) = text {
        crate::format::rlx_text::check_op_spelling(text).map_err(|e| MappingError::Op(format!("`{ATTR_TEXT}`: {}", e.message)))?;
    }
    if name == "Constant" && attrs.iter().any(|(_, a)| matches!(a, AttrValue::Dense(_))) {
        return constant_from_attributes(attrs, text);
    }
    let mut value = None;
    let mut fields = Map::new();
    for (key, attr) in attrs {
        let json = match (name, key.as_str(), attr) {
            // (A Constant with dense elements was read above.)
            (_, _, AttrValue::Dense(_)) => return Err(MappingError::DenseAttribute { key }),
            ("Custom", "attrs", AttrValue::Json(Value::String(s))) => (key, s.into_bytes().into_iter().map(Value::from).collect()),
            (_, ATTR_TEXT, _) => continue,
            (_, ATTR_VALUE, AttrValue::Json(v)) => {
                value = Some(v);
                continue;
            }
            (_, _, AttrValue::Json(v)) => (key, v),
        };
        // (Keys given twice were refused by the reader.)
        fields.insert(json.0, json.1);
    }
    let payload = match (value, fields.is_empty()) {
        (Some(_), false) => return Err(MappingError::ValueWithFields),
        (Some(v), true) => Some(v),
        (None, false) => Some(Value::Object(fields)),
        (None, true) => None,
    };
    let whole = match &payload {
        Some(p) => Value::Object(Map::from_iter([(name.to_string(), p.clone())])),
        None => Value::String(name.to_string()),
    };
    if let Some(text) = text
        && let Ok(op) = Op::parse(text)
        && op.name() == name
    {
        match as_json(&op) {
            Some(json) if same_json(&without_empty_payload(json.clone()), &without_empty_payload(whole.clone())) => return Ok(op),
            Some(_) => {}
            // A payload rlx-opt cannot read as attributes (JSON nested deeper
            // than serde_json reads, value syntax it does not know) was
            // written as `rlx.text` alone: the text is the op. With other
            // attributes beside it the two cannot be compared: refuse rather
            // than lose either.
            None if payload.is_none() => return Ok(op),
            None => return Err(MappingError::TextNotComparable),
        }
    }
    let spelled = match payload {
        Some(_) => serde_json::to_string(&whole).map_err(|e| MappingError::Spelling(e.to_string()))?,
        None => name.to_string(),
    };
    let op = Op::parse(&spelled).map_err(|e| MappingError::Op(e.message))?;
    if op.is_opaque() {
        return Ok(op);
    }
    let op = Op::from_kind(op.kind().clone());
    // A known op keeps only its own fields: any other attribute was dropped
    // without a word (`important = "keep me"` on a Narrow: an adversarial run).
    if let (Some(Value::Object(given)), Some(Value::Object(kept))) = (&payload, self::payload(&op))
        && let Some(key) = given.keys().find(|k| !kept.contains_key(*k))
    {
        return Err(MappingError::UnknownField { key: key.clone(), op: name.to_string() });
    }
    Ok(op)
}

/// Why attributes do not make an op.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    #[error("attribute `{key}`: dense elements are only read as a Constant's `value`")]
    DenseAttribute { key: String },
    #[error("dense elements are only read as a Constant's `value`")]
    DenseNotValue,
    #[error("`{ATTR_VALUE}` cannot be combined with field attributes")]
    ValueWithFields,
    #[error("an rlx op's name is an identifier (ASCII letters, digits, `_`)")]
    OpName,
    #[error("attribute `{key}` is not a field of `{op}` (it would be dropped)")]
    UnknownField { key: String, op: String },
    #[error("`{ATTR_TEXT}` holds an op whose payload cannot be compared with its other attributes")]
    TextNotComparable,
    #[error("attribute `{key}`: a `Constant` with dense `value` takes no other attribute")]
    ConstantAttribute { key: String },
    /// The attributes as JSON could not be spelled (serde_json's message).
    #[error("{0}")]
    Spelling(String),
    /// The spelled op is not one RLX reads (the op parser's message).
    #[error("{0}")]
    Op(String),
}

/// A `Constant` from its dense `value`, its bytes kept as they are (never a
/// JSON value per byte: issue 25's 400 MB splat asked for 12.8 GB that way).
/// The text hint is used when it is this constant spelled otherwise.
fn constant_from_attributes(attrs: Vec<(String, AttrValue)>, text: Option<&str>) -> Result<Op, MappingError> {
    let mut data = None;
    for (key, attr) in attrs {
        match (key.as_str(), attr) {
            ("value", AttrValue::Dense(bytes)) => data = Some(bytes),
            (ATTR_TEXT, _) => {}
            // RLX's Constant has no other field: one would be lost in the round trip.
            (other, _) => return Err(MappingError::ConstantAttribute { key: other.into() }),
        }
    }
    let op = Op::constant(data.ok_or(MappingError::DenseNotValue)?);
    if let Some(text) = text
        && let Ok(hinted) = Op::parse(text)
        && hinted.kind() == op.kind()
    {
        return Ok(hinted);
    }
    Ok(op)
}

/// JSON equality that tells −0.0 from 0.0, as serde_json's `==` does not:
/// an attribute edited from one to the other is an edit (the text hint
/// won over it, and the edit was lost).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y && x.as_f64().map(f64::is_sign_negative) == y.as_f64().map(f64::is_sign_negative),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w))),
        _ => a == b,
    }
}

/// `{"Name": {}}` says no more than the unit op `"Name"`, and has no attributes.
fn without_empty_payload(op: Value) -> Value {
    match op {
        Value::Object(map) if map.len() == 1 && map.values().all(|p| p.as_object().is_some_and(|f| f.is_empty())) => {
            Value::String(map.into_iter().next().map(|(k, _)| k).unwrap_or_default())
        }
        other => other,
    }
}

/// The op's payload as JSON (`None` for a unit op or value syntax rlx-opt cannot read).
fn payload(op: &Op) -> Option<Value> {
    match as_json(op)? {
        Value::Object(map) => map.into_iter().next().map(|(_, v)| v),
        _ => None,
    }
}

/// The whole op as JSON: `{"Name": payload}`, or `"Name"` for a unit op.
fn as_json(op: &Op) -> Option<Value> {
    let text = op.text();
    let text: &str = &text;
    if op.is_json() {
        serde_json::from_str(text).ok()
    } else if text == op.name() {
        Some(Value::String(text.to_string()))
    } else {
        serde_json::from_str(&value_syntax::to_json(text).ok()?).ok()
    }
}

fn dense_fits(ty: &TensorType, len: usize) -> bool {
    ty.dtype != DType::Bool && ty.num_elements().is_some_and(|n| n > 0) && ty.byte_size() == Some(len as u64)
}

fn set(attrs: &mut Vec<(String, AttrValue)>, from: &str, to: &str, value: AttrValue) {
    attrs.retain(|(k, _)| k != from);
    attrs.push((to.to_string(), value));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str, ty: &TensorType) -> (Op, bool) {
        let op = Op::parse(text).unwrap();
        let attrs = op_attributes(&op, ty);
        let hint = attrs.iter().find(|(k, _)| k == ATTR_TEXT).map(|(_, v)| match v {
            AttrValue::Json(Value::String(s)) => s.clone(),
            _ => unreachable!(),
        });
        (op_from_attributes(op.name(), attrs, hint.as_deref()).unwrap(), hint.is_some())
    }

    #[test]
    fn known_ops_need_no_text_hint() {
        let ty = TensorType::new(&[2, 4], DType::F32);
        for text in [
            r#"{"Narrow":{"axis":1,"start":0,"len":65}}"#,
            r#"{"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}"#,
            r#"{"Binary":"Sub"}"#,
            "ComplexNormSq",
            r#"{"Constant":{"data":[0,0,128,63,0,0,0,64,0,0,64,64,0,0,128,64,0,0,160,64,0,0,192,64,0,0,224,64,0,0,0,65]}}"#,
            r#"{"Custom":{"name":"rlx_opt.welch_peaks","num_inputs":1,"attrs":[123,125]}}"#,
        ] {
            assert_eq!(round_trip(text, &ty), (Op::parse(text).unwrap(), false), "{text}");
        }
    }

    #[test]
    fn other_spellings_travel_as_text() {
        let ty = TensorType::new(&[4], DType::F32);
        for text in [r#"{"Softmax":{"axis":1,"a":2}}"#, "Clamp{min: -inf, max: 1.0}", r#"{"Odd":{}}"#, "MatMul"] {
            let (op, _) = round_trip(text, &ty);
            assert_eq!(op.text(), text);
        }
        assert!(round_trip(r#"{"Softmax":{"axis":1,"a":2}}"#, &ty).1);
        assert!(!round_trip("MatMul", &ty).1);
    }

    #[test]
    fn edited_attributes_win_over_the_text_hint() {
        let attrs = vec![("axis".to_string(), AttrValue::Json(Value::from(3)))];
        let op = op_from_attributes("Softmax", attrs, Some(r#"{"Softmax":{"axis":1}}"#)).unwrap();
        assert_eq!(op.text(), r#"{"Softmax":{"axis":3}}"#);
    }

    /// An adversarial run: `min = -0.0` edited to `0.0` (and back) in MLIR
    /// came back as the hint's spelling, the edit lost.
    #[test]
    fn an_edited_zero_sign_wins_over_the_text_hint() {
        let hint = r#"{"Activation":{"Clamp":{"min":-0.0,"max":1.0}}}"#;
        let attrs = |min: f64| vec![("Clamp".to_string(), AttrValue::Json(serde_json::json!({"max": 1.0, "min": min})))];
        assert_eq!(op_from_attributes("Activation", attrs(0.0), Some(hint)).unwrap().text(), r#"{"Activation":{"Clamp":{"max":1.0,"min":0.0}}}"#);
        assert_eq!(op_from_attributes("Activation", attrs(-0.0), Some(hint)).unwrap().text(), hint);
        let hint = r#"{"Activation":{"Clamp":{"min":0.0,"max":1.0}}}"#;
        assert!(op_from_attributes("Activation", attrs(-0.0), Some(hint)).unwrap().text().contains(r#""min":-0.0"#));
        assert!(same_json(&serde_json::json!([1, {"a": 0.5}]), &serde_json::json!([1, {"a": 0.5}])));
        assert!(!same_json(&serde_json::json!(1), &serde_json::json!(1.0)), "an integer is not a float, as serde_json has it");
    }

    #[test]
    fn attributes_that_make_no_op_say_why() {
        let both = vec![(ATTR_VALUE.to_string(), AttrValue::Json(Value::from(1))), ("axis".to_string(), AttrValue::Json(Value::from(3)))];
        let e = op_from_attributes("Softmax", both, None).unwrap_err();
        assert_eq!(e, MappingError::ValueWithFields);
        assert_eq!(e.to_string(), "`rlx.value` cannot be combined with field attributes");
        let dense = vec![("axis".to_string(), AttrValue::Dense(vec![0]))];
        assert_eq!(op_from_attributes("Softmax", dense, None).unwrap_err(), MappingError::DenseAttribute { key: "axis".into() });
        let extra = vec![("value".to_string(), AttrValue::Dense(vec![0])), ("axis".to_string(), AttrValue::Json(Value::from(3)))];
        assert_eq!(op_from_attributes("Constant", extra, None).unwrap_err(), MappingError::ConstantAttribute { key: "axis".into() });
    }

    #[test]
    fn element_types_map_both_ways() {
        for d in DType::ALL {
            assert_eq!(dtype_of_element(element_type(d)), Some(d));
        }
        assert_eq!(dtype_of_element("f8E4M3FN"), None);
    }
}
