//! protobuf-JSON to and from [`DynamicMessage`], after the proto3 JSON mapping.
//!
//! Output (`to_json`) is canonical and deterministic: one line, fields in ascending field
//! number order under their `json_name` (lowerCamelCase unless the schema says otherwise),
//! implicit-presence fields omitted when they hold their default, and
//!
//! - `int64`, `uint64`, `sint64`, `fixed64`, `sfixed64` as decimal strings; 32-bit integers as numbers;
//! - `float`/`double` as the shortest decimal that reads back to the same value, without a
//!   trailing `.0` (`1`, `0.1`, `1e+300`), and `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - `bytes` as standard base64 with padding; enums as their name (a number the schema does
//!   not name stays a number);
//! - maps as objects with string keys (`"true"`, `"-3"`, ...) in the message's key order;
//!   repeated fields as arrays; nested messages as objects; oneof members as ordinary fields.
//!
//! Input (`parse`, then `from_json`) accepts more, as the mapping requires: a field by its
//! `json_name` or its proto name; integers as numbers (also `1e3`) or strings; floats as numbers
//! or strings; enums by name or number; `bytes` in standard or URL-safe base64, padded or not;
//! `null` for "absent". It rejects unknown fields, a field given twice (the same key twice, or
//! its JSON name and its proto name), a map key given twice (the same key twice, or two
//! spellings of one key such as `"1"` and `"01"`), two members of one oneof, values out of
//! range, and a message without one of its proto2 `required` fields. A key given twice is
//! caught by [`parse`]: serde_json's own parser keeps the last value without a word, so text
//! parsed with `serde_json::from_str` has already lost it.
//!
//! NOT supported: the special JSON forms of the well-known types. `google.protobuf.Timestamp`,
//! `Duration`, `Any`, the wrappers, `Struct`/`Value` and `FieldMask` are read and written as
//! ordinary messages (`{"seconds":"1","nanos":5}`, not `"1970-01-01T00:00:01.000000005Z"`).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ferry_wire::{DynamicMessage, HybridBytes, Kind, List, MessageDesc, Value};
use prost_reflect::{FieldDescriptor, Kind as PKind, MessageDescriptor};
use serde_json::Value as Json;

use crate::values::{implicit_presence, is_default};

/// Why a JSON document does not fit the schema: what, and where (a path like `inner.tags[2]`).
#[derive(Debug)]
pub struct JsonError {
    /// Path segments, innermost first.
    path: Vec<String>,
    what: String,
}

impl JsonError {
    fn new(what: impl Into<String>) -> Self {
        JsonError {
            path: Vec::new(),
            what: what.into(),
        }
    }

    fn at(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }
}

/// A path as text (`inner.tags[2]`) from its segments, outermost first.
fn path_text<'s>(outermost_first: impl IntoIterator<Item = &'s String>) -> String {
    let mut path = String::new();
    for seg in outermost_first {
        if !seg.starts_with('[') && !path.is_empty() {
            path.push('.');
        }
        path.push_str(seg);
    }
    path
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            return f.write_str(&self.what);
        }
        write!(f, "at `{}`: {}", path_text(self.path.iter().rev()), self.what)
    }
}

impl std::error::Error for JsonError {}

/// The fields of `md` in ascending number order.
fn fields_by_number(md: &MessageDescriptor) -> Vec<FieldDescriptor> {
    let mut fields: Vec<_> = md.fields().collect();
    fields.sort_by_key(|f| f.number());
    fields
}

/// The Ferry descriptor of the message a field of `desc` refers to.
fn nested<'d>(desc: &'d MessageDesc<'d>, number: u32) -> Option<&'d MessageDesc<'d>> {
    match desc.field(number)?.kind {
        Kind::Message(d) => Some(d),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Text to JSON

/// Parses JSON text like `serde_json::from_str`, but rejects an object that has the same key
/// twice, at any depth (message fields and map keys alike): protobuf's JSON mapping does not
/// accept duplicate fields, and last-one-wins would drop a value without a word. The error
/// names the key by its path and gives its line and column:
/// ``invalid JSON: `children[1].name` given twice at line 1 column 42``.
pub fn parse(text: &str) -> Result<Json, JsonError> {
    let invalid = |e: serde_json::Error| JsonError::new(format!("invalid JSON: {e}"));
    let mut de = serde_json::Deserializer::from_str(text);
    let mut path = Vec::new();
    let json =
        serde::de::DeserializeSeed::deserialize(Unique { path: &mut path }, &mut de).map_err(invalid)?;
    de.end().map_err(invalid)?;
    Ok(json)
}

/// A JSON value whose objects have unique keys; `path` is where it sits (as in [`JsonError`],
/// outermost first).
struct Unique<'p> {
    path: &'p mut Vec<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Unique<'_> {
    type Value = Json;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Unique<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Json, E> {
        Ok(Json::from(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Json, E> {
        Ok(Json::from(u))
    }

    fn visit_f64<E>(self, x: f64) -> Result<Json, E> {
        // JSON text has no NaN or infinity, so this is never null (as in serde_json's own).
        Ok(serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(format!("[{}]", items.len()));
            let item = seq.next_element_seed(Unique {
                path: &mut *self.path,
            })?;
            self.path.pop();
            match item {
                Some(item) => items.push(item),
                None => return Ok(Json::Array(items)),
            }
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut obj = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let twice = obj.contains_key(&key);
            self.path.push(key);
            if twice {
                let path = path_text(self.path.iter());
                return Err(serde::de::Error::custom(format_args!("`{path}` given twice")));
            }
            let value = map.next_value_seed(Unique {
                path: &mut *self.path,
            })?;
            let key = self.path.pop().unwrap_or_default();
            obj.insert(key, value);
        }
        Ok(Json::Object(obj))
    }
}

// ---------------------------------------------------------------------------------------------
// JSON to message

/// Reads a protobuf-JSON object as a message of type `md` (whose Ferry descriptor is `desc`).
/// `bytes` and `string` values are owned, so they are copied when the message is encoded; the
/// message borrows only `desc` (and so the schema that owns it).
///
/// Read the text with [`parse`]: a `serde_json::Value` has no duplicate keys left to reject.
pub fn from_json<'d>(
    md: &MessageDescriptor,
    desc: &'d MessageDesc<'d>,
    json: &Json,
) -> Result<DynamicMessage<'d>, JsonError> {
    let Json::Object(obj) = json else {
        return Err(JsonError::new(format!(
            "expected an object for message `{}`, found {}",
            md.full_name(),
            type_of(json)
        )));
    };
    let mut m = DynamicMessage::new(desc);
    let mut given: HashMap<u32, &str> = HashMap::new();
    let mut oneofs: HashMap<String, String> = HashMap::new();
    for (key, value) in obj {
        let f = md
            .get_field_by_json_name(key)
            .or_else(|| md.get_field_by_name(key))
            .ok_or_else(|| JsonError::new(format!("message `{}` has no field `{key}`", md.full_name())))?;
        let err_at = |e: JsonError| e.at(f.name().to_owned());
        if let Some(first) = given.insert(f.number(), key) {
            return Err(err_at(JsonError::new(format!(
                "given twice, as `{first}` and `{key}`"
            ))));
        }
        if value.is_null() {
            continue;
        }
        if let Some(o) = f.containing_oneof().filter(|o| !o.is_synthetic()) {
            if let Some(other) = oneofs.insert(o.name().to_owned(), f.name().to_owned()) {
                return Err(err_at(JsonError::new(format!(
                    "`{other}` of the same oneof `{}` is set too",
                    o.name()
                ))));
            }
        }
        set_field(&mut m, &f, value).map_err(err_at)?;
    }
    for f in md.fields() {
        if f.cardinality() == prost_reflect::Cardinality::Required && m.get(f.number()).is_none() {
            return Err(JsonError::new(format!("missing required field `{}`", f.name())));
        }
    }
    Ok(m)
}

fn set_field(m: &mut DynamicMessage<'_>, f: &FieldDescriptor, json: &Json) -> Result<(), JsonError> {
    let desc = m.desc();
    let n = f.number();
    let mismatch = |e: ferry_wire::TypeMismatch| JsonError::new(e.to_string());
    if f.is_map() {
        let Json::Object(obj) = json else {
            return Err(JsonError::new(format!(
                "expected an object (a map), found {}",
                type_of(json)
            )));
        };
        let PKind::Message(entry) = f.kind() else {
            return Err(JsonError::new("map field without an entry message"));
        };
        let entry_desc =
            nested(desc, n).ok_or_else(|| JsonError::new("map field without an entry descriptor"))?;
        let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        for (k, v) in obj {
            let at = |e: JsonError| e.at(format!("[{}]", serde_json::Value::from(k.as_str())));
            let key = map_key(&kf.kind(), k).map_err(at)?;
            if v.is_null() {
                return Err(at(JsonError::new("a map value cannot be null")));
            }
            let value = singular(&vf.kind(), nested(entry_desc, 2), v).map_err(at)?;
            let before = map_len(m, n);
            m.insert_map_entry(n, key, value).map_err(mismatch)?;
            if map_len(m, n) == before {
                // Two spellings of one key (`"1"` and `"01"`): as invalid as the same key twice.
                return Err(at(JsonError::new("the same map key as another entry")));
            }
        }
        return Ok(());
    }
    if f.is_list() {
        let Json::Array(items) = json else {
            return Err(JsonError::new(format!(
                "expected an array, found {}",
                type_of(json)
            )));
        };
        let kind = f.kind();
        let child = nested(desc, n);
        let ferry_kind = desc
            .field(n)
            .map(|f| f.kind)
            .ok_or_else(|| JsonError::new("field missing from the Ferry descriptor"))?;
        let mut list = List::empty(ferry_kind);
        for (i, item) in items.iter().enumerate() {
            let at = |e: JsonError| e.at(format!("[{i}]"));
            if item.is_null() {
                return Err(at(JsonError::new("a list element cannot be null")));
            }
            let v = singular(&kind, child, item).map_err(at)?;
            if !list.push(v) {
                return Err(at(JsonError::new("element of the wrong kind")));
            }
        }
        return m.set(n, Value::List(list)).map_err(mismatch);
    }
    let v = singular(&f.kind(), nested(desc, n), json)?;
    if implicit_presence(f) && is_default(&v) {
        // proto3 implicit presence: the default is not written (as generated code does).
        return Ok(());
    }
    m.set(n, v).map_err(mismatch)
}

/// The number of entries of map field `n` of `m`.
fn map_len(m: &DynamicMessage<'_>, n: u32) -> usize {
    match m.get(n) {
        Some(Value::List(List::Messages(entries))) => entries.len(),
        _ => 0,
    }
}

/// One value of kind `kind`; `child` is the Ferry descriptor when `kind` is a message.
fn singular<'d>(
    kind: &PKind,
    child: Option<&'d MessageDesc<'d>>,
    json: &Json,
) -> Result<Value<'d>, JsonError> {
    Ok(match kind {
        PKind::Bool => match json {
            Json::Bool(b) => Value::Bool(*b),
            _ => return Err(expected("true or false", json)),
        },
        PKind::Int32 | PKind::Sint32 | PKind::Sfixed32 => Value::I32(int(json)?),
        PKind::Int64 | PKind::Sint64 | PKind::Sfixed64 => Value::I64(int(json)?),
        PKind::Uint32 | PKind::Fixed32 => Value::U32(int(json)?),
        PKind::Uint64 | PKind::Fixed64 => Value::U64(int(json)?),
        PKind::Float => {
            let x = float(json)?;
            let y = x as f32;
            if x.is_finite() && y.is_infinite() {
                return Err(JsonError::new(format!("{x:e} is out of range for float")));
            }
            Value::F32(y)
        }
        PKind::Double => Value::F64(float(json)?),
        PKind::String => match json {
            Json::String(s) => Value::Bytes(HybridBytes::from_vec(s.clone().into_bytes())),
            _ => return Err(expected("a string", json)),
        },
        PKind::Bytes => match json {
            Json::String(s) => Value::Bytes(HybridBytes::from_vec(base64_decode(s)?)),
            _ => return Err(expected("a base64 string", json)),
        },
        PKind::Enum(e) => match json {
            Json::String(s) => match e.get_value_by_name(s) {
                Some(v) => Value::I32(v.number()),
                None => {
                    return Err(JsonError::new(format!(
                        "enum `{}` has no value `{s}`",
                        e.full_name()
                    )));
                }
            },
            Json::Number(_) => Value::I32(int(json)?),
            _ => return Err(expected("an enum name or number", json)),
        },
        PKind::Message(md) => {
            let desc = child.ok_or_else(|| JsonError::new("no descriptor for a nested message"))?;
            Value::Message(from_json(md, desc, json)?)
        }
    })
}

fn map_key(kind: &PKind, key: &str) -> Result<Value<'static>, JsonError> {
    Ok(match kind {
        PKind::Bool => match key {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(JsonError::new("a bool map key must be \"true\" or \"false\"")),
        },
        PKind::String => Value::Bytes(HybridBytes::from_vec(key.as_bytes().to_vec())),
        _ => singular(kind, None, &Json::String(key.to_owned()))?,
    })
}

fn type_of(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "a bool",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn expected(what: &str, json: &Json) -> JsonError {
    JsonError::new(format!("expected {what}, found {}", type_of(json)))
}

/// An integer of type `T` from a JSON number or a string holding one (`"12"`, `"1e3"`).
fn int<T: TryFrom<i128>>(json: &Json) -> Result<T, JsonError> {
    let wide: i128 = match json {
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                i128::from(i)
            } else if let Some(u) = n.as_u64() {
                i128::from(u)
            } else {
                integral(n.as_f64().unwrap_or(f64::NAN), &n.to_string())?
            }
        }
        Json::String(s) => match s.parse::<i128>() {
            Ok(i) => i,
            Err(_) => match s.parse::<f64>() {
                Ok(x) if !s.trim().is_empty() && !s.contains(['N', 'n', 'I', 'i']) => integral(x, s)?,
                _ => return Err(JsonError::new(format!("`{s}` is not an integer"))),
            },
        },
        _ => return Err(expected("an integer", json)),
    };
    T::try_from(wide).map_err(|_| {
        JsonError::new(format!(
            "{wide} is out of range for {}",
            std::any::type_name::<T>()
        ))
    })
}

fn integral(x: f64, text: &str) -> Result<i128, JsonError> {
    // 2^100 bounds the conversion; the caller's range check gives the precise message.
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 2f64.powi(100) {
        Ok(x as i128)
    } else {
        Err(JsonError::new(format!("{text} is not an integer")))
    }
}

fn float(json: &Json) -> Result<f64, JsonError> {
    match json {
        Json::Number(n) => n
            .as_f64()
            .ok_or_else(|| JsonError::new(format!("{n} is not a number"))),
        Json::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => match serde_json::from_str::<Json>(s) {
                Ok(Json::Number(n)) => n
                    .as_f64()
                    .ok_or_else(|| JsonError::new(format!("`{s}` is not a number"))),
                _ => Err(JsonError::new(format!("`{s}` is not a number"))),
            },
        },
        _ => Err(expected("a number", json)),
    }
}

fn base64_decode(s: &str) -> Result<Vec<u8>, JsonError> {
    let config = GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let alphabet = if s.contains(['-', '_']) {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    GeneralPurpose::new(alphabet, config)
        .decode(s)
        .map_err(|e| JsonError::new(format!("invalid base64: {e}")))
}

// ---------------------------------------------------------------------------------------------
// Message to JSON

/// Writes `m` (of type `md`) as canonical protobuf-JSON, on one line, without a newline.
pub fn to_json(md: &MessageDescriptor, m: &DynamicMessage<'_>, out: &mut String) {
    out.push('{');
    let mut first = true;
    for f in fields_by_number(md) {
        let Some(v) = m.get(f.number()) else { continue };
        if implicit_presence(&f) && is_default(v) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        string(f.json_name(), out);
        out.push(':');
        field_value(&f, v, out);
    }
    out.push('}');
}

fn field_value(f: &FieldDescriptor, v: &Value<'_>, out: &mut String) {
    let kind = f.kind();
    if f.is_map() {
        let PKind::Message(entry) = &kind else {
            return out.push_str("{}");
        };
        let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        out.push('{');
        if let Value::List(List::Messages(entries)) = v {
            for (i, e) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let mut key = String::new();
                match e.get(1) {
                    Some(k) => scalar(&kf.kind(), k, &mut key),
                    None => default_of(&kf.kind(), &mut key),
                }
                // Keys are strings: quote numbers and bools; strings already are.
                if key.starts_with('"') {
                    out.push_str(&key);
                } else {
                    string(&key, out);
                }
                out.push(':');
                match e.get(2) {
                    Some(x) => scalar(&vf.kind(), x, out),
                    None => default_of(&vf.kind(), out),
                }
            }
        }
        out.push('}');
        return;
    }
    match v {
        Value::List(l) => {
            out.push('[');
            let sep = |out: &mut String, i: usize| {
                if i > 0 {
                    out.push(',');
                }
            };
            match l {
                List::Bool(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    out.push_str(if *x { "true" } else { "false" });
                }),
                List::I32(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    scalar(&kind, &Value::I32(*x), out);
                }),
                List::I64(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    scalar(&kind, &Value::I64(*x), out);
                }),
                List::U32(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    scalar(&kind, &Value::U32(*x), out);
                }),
                List::U64(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    scalar(&kind, &Value::U64(*x), out);
                }),
                List::F32(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    scalar(&kind, &Value::F32(*x), out);
                }),
                List::F64(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    scalar(&kind, &Value::F64(*x), out);
                }),
                List::Bytes(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    bytes(&kind, x.as_slice(), out);
                }),
                List::Messages(x) => x.iter().enumerate().for_each(|(i, x)| {
                    sep(out, i);
                    if let PKind::Message(md) = &kind {
                        to_json(md, x, out);
                    }
                }),
            }
            out.push(']');
        }
        v => scalar(&kind, v, out),
    }
}

/// The JSON of a singular value of kind `kind`.
fn scalar(kind: &PKind, v: &Value<'_>, out: &mut String) {
    use std::fmt::Write as _;
    match v {
        Value::Bool(x) => out.push_str(if *x { "true" } else { "false" }),
        Value::I32(x) => match kind {
            PKind::Enum(e) => match e.get_value(*x) {
                Some(ev) => string(ev.name(), out),
                None => {
                    let _ = write!(out, "{x}");
                }
            },
            _ => {
                let _ = write!(out, "{x}");
            }
        },
        Value::U32(x) => {
            let _ = write!(out, "{x}");
        }
        Value::I64(x) => {
            let _ = write!(out, "\"{x}\"");
        }
        Value::U64(x) => {
            let _ = write!(out, "\"{x}\"");
        }
        Value::F32(x) => float_text(
            x.is_nan(),
            x.is_infinite(),
            *x < 0.0,
            serde_json::to_string(x),
            out,
        ),
        Value::F64(x) => float_text(
            x.is_nan(),
            x.is_infinite(),
            *x < 0.0,
            serde_json::to_string(x),
            out,
        ),
        Value::Bytes(b) => bytes(kind, b.as_slice(), out),
        Value::Message(m) => {
            if let PKind::Message(md) = kind {
                to_json(md, m, out);
            }
        }
        Value::List(_) => out.push_str("null"),
    }
}

fn float_text(nan: bool, inf: bool, neg: bool, text: serde_json::Result<String>, out: &mut String) {
    if nan {
        out.push_str("\"NaN\"");
    } else if inf {
        out.push_str(if neg { "\"-Infinity\"" } else { "\"Infinity\"" });
    } else {
        let text = text.unwrap_or_else(|_| "0".to_owned());
        out.push_str(text.strip_suffix(".0").unwrap_or(&text));
    }
}

fn bytes(kind: &PKind, b: &[u8], out: &mut String) {
    match kind {
        // Strings were checked for UTF-8 when decoded; lossy only guards the impossible case.
        PKind::String => string(&String::from_utf8_lossy(b), out),
        _ => string(&base64::engine::general_purpose::STANDARD.encode(b), out),
    }
}

/// The default value of a kind (a map entry without its key or value).
fn default_of(kind: &PKind, out: &mut String) {
    match kind {
        PKind::Message(_) => out.push_str("{}"),
        PKind::String | PKind::Bytes => out.push_str("\"\""),
        PKind::Bool => out.push_str("false"),
        PKind::Int64 | PKind::Sint64 | PKind::Sfixed64 | PKind::Uint64 | PKind::Fixed64 => {
            out.push_str("\"0\"")
        }
        PKind::Enum(_) => scalar(kind, &Value::I32(0), out),
        _ => out.push('0'),
    }
}

fn string(s: &str, out: &mut String) {
    // Serializing a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> (crate::Schema, MessageDescriptor) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ferry-cli/tests/data");
        let s = crate::Schema::load(&[dir.join("everything.proto")], &[&dir]).unwrap();
        let md = s.descriptor("ferry.test.Everything").unwrap();
        (s, md)
    }

    fn round_trip(input: &str) -> String {
        let (s, md) = schema();
        let desc = s.message(md.full_name()).unwrap();
        let m = from_json(&md, desc, &serde_json::from_str(input).unwrap()).unwrap();
        let mut out = String::new();
        to_json(&md, &m, &mut out);
        out
    }

    #[test]
    fn accepts_the_lenient_forms() {
        let out = round_trip(
            r#"{"i64":5,"u64":"1e3","f32":"Infinity","f64":"-0","color":2,"raw":"-_8","opt_i32":0,
                "i32":0,"text":"","int_map":{"-2":"b","1":"a"}}"#,
        );
        assert_eq!(
            out,
            r#"{"i64":"5","u64":"1000","f32":"Infinity","f64":-0,"raw":"+/8=","color":"BLUE","intMap":{"-2":"b","1":"a"},"optI32":0}"#
        );
    }

    #[test]
    fn rejects_with_a_path() {
        let (s, md) = schema();
        let desc = s.message(md.full_name()).unwrap();
        let bad = |s: &str| from_json(&md, desc, &parse(s).unwrap()).unwrap_err().to_string();
        assert_eq!(
            bad(r#"{"nope":1}"#),
            "message `ferry.test.Everything` has no field `nope`"
        );
        assert_eq!(
            bad(r#"{"i32":2147483648}"#),
            "at `i32`: 2147483648 is out of range for i32"
        );
        assert_eq!(
            bad(r#"{"children":[{},{"u32s":[1,-1]}]}"#),
            "at `children[1].u32s[1]`: -1 is out of range for u32"
        );
        assert_eq!(
            bad(r#"{"name":"a","id":1}"#),
            "at `name`: `id` of the same oneof `choice` is set too"
        );
        assert_eq!(
            bad(r#"{"optI32":1,"opt_i32":2}"#),
            "at `opt_i32`: given twice, as `optI32` and `opt_i32`"
        );
        assert_eq!(bad(r#"{"f32":1e39}"#), "at `f32`: 1e39 is out of range for float");
        assert_eq!(
            bad(r#"{"intMap":{"1":"a","01":"b"}}"#),
            "at `int_map[\"1\"]`: the same map key as another entry"
        );
    }

    /// The same as serde_json's parser on documents without a repeated key.
    #[test]
    fn parse_reads_what_serde_json_reads() {
        for text in [
            "null",
            " true ",
            r#"[1,-2,18446744073709551615,-9223372036854775808,0.1,1e300,-0.0,"s\u00e9"]"#,
            r#"{"a":{"b":[{},{"c":null}]},"d":[],"e":{}}"#,
            "0.30000000000000004",
        ] {
            let ours = parse(text).unwrap();
            let theirs: Json = serde_json::from_str(text).unwrap();
            assert_eq!(ours, theirs, "{text}");
        }
        for text in ["", "{", "[1,]", r#"{"a":1}x"#, "{a:1}"] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with("invalid JSON: "), "{text}: {e}");
        }
    }

    #[test]
    fn parse_rejects_a_key_given_twice_at_any_depth() {
        let twice = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            twice(r#"{"i32":1,"i32":2}"#),
            "invalid JSON: `i32` given twice at line 1 column 14"
        );
        assert_eq!(
            twice(r#"{"children":[{},{"text":"a",  "text":"b"}]}"#),
            "invalid JSON: `children[1].text` given twice at line 1 column 36"
        );
        // A map field's keys too (protobuf's JSON mapping allows no duplicate map keys).
        assert_eq!(
            twice("{\"intMap\":{\"1\":\"a\",\n\"1\":\"b\"}}"),
            "invalid JSON: `intMap.1` given twice at line 2 column 3"
        );
        // Equal keys only: the same field under two names is `from_json`'s to catch.
        assert!(parse(r#"{"optI32":1,"opt_i32":2}"#).is_ok());
    }
}
