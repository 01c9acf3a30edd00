//! Messages described at run time: a [`MessageDesc`] plus a map from field number to value.
//!
//! A `DynamicMessage<'a>` borrows its descriptor for `'a`, like its values: with a run-time
//! schema's descriptor it cannot outlive the schema.
//!
//! The same encoder and validator serve these and generated types, so both produce the same bytes
//! for the same message. Tools (`ferry encode`/`decode`) and property tests use this type.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::decode::{DecodeError, View};
use crate::desc::{FieldDesc, Kind, Label, MessageDesc};
use crate::encode::{Encode, Visitor};
use crate::hybrid::{Context, HybridBytes};

/// A singular value.
///
/// Equality is representational: floats compare by their bits, so a NaN equals the same NaN
/// and `-0.0` differs from `0.0` (what "decodes to the same message" needs).
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// `bool`.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32` and enums.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64`.
    I64(i64),
    /// `uint32`, `fixed32`.
    U32(u32),
    /// `uint64`, `fixed64`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// `bytes` and `string` (a string's bytes are UTF-8).
    Bytes(HybridBytes<'a>),
    /// A nested message.
    Message(DynamicMessage<'a>),
    /// A repeated field (or a map, as its entries).
    List(List<'a>),
}

/// A repeated value (equality as for [`Value`]).
#[derive(Debug, Clone)]
pub enum List<'a> {
    /// `repeated bool`.
    Bool(Vec<bool>),
    /// `repeated int32` (and the other 32-bit signed kinds, enums).
    I32(Vec<i32>),
    /// `repeated int64` (and the other 64-bit signed kinds).
    I64(Vec<i64>),
    /// `repeated uint32`, `fixed32`.
    U32(Vec<u32>),
    /// `repeated uint64`, `fixed64`.
    U64(Vec<u64>),
    /// `repeated float`.
    F32(Vec<f32>),
    /// `repeated double`.
    F64(Vec<f64>),
    /// `repeated bytes` / `string`.
    Bytes(Vec<HybridBytes<'a>>),
    /// `repeated` messages, or map entries in ascending key order.
    Messages(Vec<DynamicMessage<'a>>),
}

impl PartialEq for Value<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::I32(a), Value::I32(b)) => a == b,
            (Value::I64(a), Value::I64(b)) => a == b,
            (Value::U32(a), Value::U32(b)) => a == b,
            (Value::U64(a), Value::U64(b)) => a == b,
            (Value::F32(a), Value::F32(b)) => a.to_bits() == b.to_bits(),
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Message(a), Value::Message(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq for List<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (List::Bool(a), List::Bool(b)) => a == b,
            (List::I32(a), List::I32(b)) => a == b,
            (List::I64(a), List::I64(b)) => a == b,
            (List::U32(a), List::U32(b)) => a == b,
            (List::U64(a), List::U64(b)) => a == b,
            (List::F32(a), List::F32(b)) => a.iter().map(|x| x.to_bits()).eq(b.iter().map(|x| x.to_bits())),
            (List::F64(a), List::F64(b)) => a.iter().map(|x| x.to_bits()).eq(b.iter().map(|x| x.to_bits())),
            (List::Bytes(a), List::Bytes(b)) => a == b,
            (List::Messages(a), List::Messages(b)) => a == b,
            _ => false,
        }
    }
}

impl<'a> List<'a> {
    /// An empty list for elements of `kind`.
    pub fn empty(kind: Kind<'_>) -> List<'a> {
        match kind {
            Kind::Bool => List::Bool(Vec::new()),
            Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => List::I32(Vec::new()),
            Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => List::I64(Vec::new()),
            Kind::UInt32 | Kind::Fixed32 => List::U32(Vec::new()),
            Kind::UInt64 | Kind::Fixed64 => List::U64(Vec::new()),
            Kind::Float => List::F32(Vec::new()),
            Kind::Double => List::F64(Vec::new()),
            Kind::String | Kind::Bytes => List::Bytes(Vec::new()),
            Kind::Message(_) => List::Messages(Vec::new()),
        }
    }

    /// Appends `v`; false (and the list unchanged) if it is of another kind.
    pub fn push(&mut self, v: Value<'a>) -> bool {
        match (self, v) {
            (List::Bool(l), Value::Bool(x)) => l.push(x),
            (List::I32(l), Value::I32(x)) => l.push(x),
            (List::I64(l), Value::I64(x)) => l.push(x),
            (List::U32(l), Value::U32(x)) => l.push(x),
            (List::U64(l), Value::U64(x)) => l.push(x),
            (List::F32(l), Value::F32(x)) => l.push(x),
            (List::F64(l), Value::F64(x)) => l.push(x),
            (List::Bytes(l), Value::Bytes(x)) => l.push(x),
            (List::Messages(l), Value::Message(x)) => l.push(x),
            _ => return false,
        }
        true
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            List::Bool(v) => v.len(),
            List::I32(v) => v.len(),
            List::I64(v) => v.len(),
            List::U32(v) => v.len(),
            List::U64(v) => v.len(),
            List::F32(v) => v.len(),
            List::F64(v) => v.len(),
            List::Bytes(v) => v.len(),
            List::Messages(v) => v.len(),
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The value does not fit the field it was set on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("value does not fit field `{message}.{field}`")]
pub struct TypeMismatch {
    /// Message name.
    pub message: String,
    /// Field name (or number, if unknown).
    pub field: String,
}

/// A message whose type is known at run time.
#[derive(Clone)]
pub struct DynamicMessage<'a> {
    desc: &'a MessageDesc<'a>,
    fields: BTreeMap<u32, Value<'a>>,
}

impl core::fmt::Debug for DynamicMessage<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct(self.desc.name)
            .field("fields", &self.fields)
            .finish()
    }
}

impl PartialEq for DynamicMessage<'_> {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.desc, other.desc) && self.fields == other.fields
    }
}

fn fits(kind: Kind<'_>, label: Label, v: &Value<'_>) -> bool {
    use Kind as K;
    if label == Label::Repeated {
        let Value::List(l) = v else { return false };
        return match (kind, l) {
            (K::Bool, List::Bool(_)) => true,
            (K::Int32 | K::SInt32 | K::SFixed32 | K::Enum, List::I32(_)) => true,
            (K::Int64 | K::SInt64 | K::SFixed64, List::I64(_)) => true,
            (K::UInt32 | K::Fixed32, List::U32(_)) => true,
            (K::UInt64 | K::Fixed64, List::U64(_)) => true,
            (K::Float, List::F32(_)) => true,
            (K::Double, List::F64(_)) => true,
            (K::String, List::Bytes(b)) => b.iter().all(|b| core::str::from_utf8(b.as_slice()).is_ok()),
            (K::Bytes, List::Bytes(_)) => true,
            (K::Message(d), List::Messages(m)) => m.iter().all(|m| core::ptr::eq(m.desc, d)),
            _ => false,
        };
    }
    match (kind, v) {
        (K::Bool, Value::Bool(_)) => true,
        (K::Int32 | K::SInt32 | K::SFixed32 | K::Enum, Value::I32(_)) => true,
        (K::Int64 | K::SInt64 | K::SFixed64, Value::I64(_)) => true,
        (K::UInt32 | K::Fixed32, Value::U32(_)) => true,
        (K::UInt64 | K::Fixed64, Value::U64(_)) => true,
        (K::Float, Value::F32(_)) => true,
        (K::Double, Value::F64(_)) => true,
        (K::String, Value::Bytes(b)) => core::str::from_utf8(b.as_slice()).is_ok(),
        (K::Bytes, Value::Bytes(_)) => true,
        (K::Message(d), Value::Message(m)) => core::ptr::eq(m.desc, d),
        _ => false,
    }
}

/// Orders map keys (integers, bools, strings) the way encoders must emit them.
fn key_cmp(a: &Value<'_>, b: &Value<'_>) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::I32(x), Value::I32(y)) => x.cmp(y),
        (Value::I64(x), Value::I64(y)) => x.cmp(y),
        (Value::U32(x), Value::U32(y)) => x.cmp(y),
        (Value::U64(x), Value::U64(y)) => x.cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

impl<'a> DynamicMessage<'a> {
    /// An empty message of type `desc`.
    pub fn new(desc: &'a MessageDesc<'a>) -> Self {
        DynamicMessage {
            desc,
            fields: BTreeMap::new(),
        }
    }

    /// The message type.
    pub fn desc(&self) -> &'a MessageDesc<'a> {
        self.desc
    }

    fn field_desc(&self, number: u32) -> Result<&'a FieldDesc<'a>, TypeMismatch> {
        self.desc.field(number).ok_or_else(|| TypeMismatch {
            message: self.desc.name.to_owned(),
            field: number.to_string(),
        })
    }

    /// Sets field `number`; setting a oneof member clears the others. An empty list clears the field.
    pub fn set(&mut self, number: u32, value: Value<'a>) -> Result<(), TypeMismatch> {
        let f = self.field_desc(number)?;
        if !fits(f.kind, f.label, &value) {
            return Err(TypeMismatch {
                message: self.desc.name.to_owned(),
                field: f.name.to_string(),
            });
        }
        if let Some(o) = f.oneof {
            for g in self.desc.fields().iter().filter(|g| g.oneof == Some(o)) {
                self.fields.remove(&g.number);
            }
        }
        match value {
            Value::List(l) if l.is_empty() => {
                self.fields.remove(&number);
            }
            v => {
                self.fields.insert(number, v);
            }
        }
        Ok(())
    }

    /// Inserts into map field `number`, keeping entries in ascending key order; an equal key is replaced.
    pub fn insert_map_entry(
        &mut self,
        number: u32,
        key: Value<'a>,
        value: Value<'a>,
    ) -> Result<(), TypeMismatch> {
        let f = self.field_desc(number)?;
        let mismatch = || TypeMismatch {
            message: self.desc.name.to_owned(),
            field: f.name.to_string(),
        };
        let Kind::Message(entry_desc) = f.kind else {
            return Err(mismatch());
        };
        if !entry_desc.map_entry {
            return Err(mismatch());
        }
        let mut entry = DynamicMessage::new(entry_desc);
        entry.set(1, key).map_err(|_| mismatch())?;
        entry.set(2, value).map_err(|_| mismatch())?;
        let slot = self
            .fields
            .entry(number)
            .or_insert(Value::List(List::Messages(Vec::new())));
        let Value::List(List::Messages(entries)) = slot else {
            return Err(mismatch());
        };
        let k = entry.fields.get(&1);
        let pos = entries.binary_search_by(|e| match (e.fields.get(&1), k) {
            (Some(a), Some(b)) => key_cmp(a, b),
            _ => Ordering::Equal,
        });
        match pos {
            Ok(i) => entries[i] = entry,
            Err(i) => entries.insert(i, entry),
        }
        Ok(())
    }

    /// Field `number`, if set.
    pub fn get(&self, number: u32) -> Option<&Value<'a>> {
        self.fields.get(&number)
    }

    /// Removes field `number`.
    pub fn clear(&mut self, number: u32) {
        self.fields.remove(&number);
    }

    /// Set fields in ascending number order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Value<'a>)> {
        self.fields.iter().map(|(k, v)| (*k, v))
    }

    /// Reads a validated view into a dynamic message. `bytes` values borrow the view's buffer,
    /// or reference it when the view was decoded from a shared buffer and the value reaches the
    /// context's threshold. Unknown fields are dropped. Strings are UTF-8 checked; an error
    /// names the path from `view`'s message down to the string (`Outer.inner > Inner.s`).
    pub fn from_view(view: &View<'a>, ctx: &'a Context) -> Result<Self, DecodeError> {
        let mut m = DynamicMessage::new(view.desc());
        for f in view.desc().fields() {
            if !view.has(f.number) {
                continue;
            }
            let n = f.number;
            let value = if f.label == Label::Repeated {
                let list = match f.kind {
                    Kind::Bool => List::Bool(view.scalars(n).iter().collect()),
                    Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => {
                        List::I32(view.scalars(n).iter().collect())
                    }
                    Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => {
                        List::I64(view.scalars(n).iter().collect())
                    }
                    Kind::UInt32 | Kind::Fixed32 => List::U32(view.scalars(n).iter().collect()),
                    Kind::UInt64 | Kind::Fixed64 => List::U64(view.scalars(n).iter().collect()),
                    Kind::Float => List::F32(view.scalars(n).iter().collect()),
                    Kind::Double => List::F64(view.scalars(n).iter().collect()),
                    Kind::String | Kind::Bytes => {
                        let l = view.bytes_list(n);
                        let mut out = Vec::with_capacity(l.len());
                        for i in 0..l.len() {
                            let data = l.get(i).unwrap_or_default();
                            if matches!(f.kind, Kind::String) {
                                check_utf8(view, f, data)?;
                            }
                            out.push(HybridBytes::received(data, view.owner(), ctx));
                        }
                        List::Bytes(out)
                    }
                    Kind::Message(_) => {
                        let mut out = Vec::new();
                        for child in view.messages(n).iter() {
                            let child = DynamicMessage::from_view(&child, ctx);
                            out.push(child.map_err(|e| view.within_field(n, e))?);
                        }
                        List::Messages(out)
                    }
                };
                Value::List(list)
            } else {
                match f.kind {
                    Kind::Bool => Value::Bool(view.scalar(n).unwrap_or_default()),
                    Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => {
                        Value::I32(view.scalar(n).unwrap_or_default())
                    }
                    Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => {
                        Value::I64(view.scalar(n).unwrap_or_default())
                    }
                    Kind::UInt32 | Kind::Fixed32 => Value::U32(view.scalar(n).unwrap_or_default()),
                    Kind::UInt64 | Kind::Fixed64 => Value::U64(view.scalar(n).unwrap_or_default()),
                    Kind::Float => Value::F32(view.scalar(n).unwrap_or_default()),
                    Kind::Double => Value::F64(view.scalar(n).unwrap_or_default()),
                    Kind::String => {
                        view.str(n)?;
                        Value::Bytes(view.hybrid(n, ctx).unwrap_or_default())
                    }
                    Kind::Bytes => Value::Bytes(view.hybrid(n, ctx).unwrap_or_default()),
                    Kind::Message(_) => match view.message(n) {
                        Some(child) => {
                            let child = DynamicMessage::from_view(&child, ctx);
                            Value::Message(child.map_err(|e| view.within_field(n, e))?)
                        }
                        None => continue,
                    },
                }
            };
            if !matches!(&value, Value::List(l) if l.is_empty()) {
                m.fields.insert(n, value);
            }
        }
        Ok(m)
    }
}

fn check_utf8(view: &View<'_>, f: &FieldDesc<'_>, data: &[u8]) -> Result<(), DecodeError> {
    match core::str::from_utf8(data) {
        Ok(_) => Ok(()),
        Err(e) => {
            let offset = (data.as_ptr() as usize).wrapping_sub(view.root().as_ptr() as usize);
            Err(DecodeError::invalid_utf8(
                e.valid_up_to(),
                offset as u64,
                view.desc().name,
                f.name,
            ))
        }
    }
}

impl<'a> Encode<'a> for DynamicMessage<'a> {
    fn missing_required(&self) -> Option<&str> {
        let missing = self
            .desc
            .fields()
            .iter()
            .find(|f| f.label == Label::Required && !self.fields.contains_key(&f.number));
        missing.map(|f| f.name)
    }

    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        for (&n, value) in &self.fields {
            match value {
                Value::Bool(x) => v.scalar(n, *x),
                Value::I32(x) => v.scalar(n, *x),
                Value::I64(x) => v.scalar(n, *x),
                Value::U32(x) => v.scalar(n, *x),
                Value::U64(x) => v.scalar(n, *x),
                Value::F32(x) => v.scalar(n, *x),
                Value::F64(x) => v.scalar(n, *x),
                Value::Bytes(b) => v.bytes(n, b),
                Value::Message(m) => v.message(n, m),
                Value::List(l) if l.is_empty() => {}
                Value::List(l) => match l {
                    List::Bool(x) => v.scalars(n, x),
                    List::I32(x) => v.scalars(n, x),
                    List::I64(x) => v.scalars(n, x),
                    List::U32(x) => v.scalars(n, x),
                    List::U64(x) => v.scalars(n, x),
                    List::F32(x) => v.scalars(n, x),
                    List::F64(x) => v.scalars(n, x),
                    List::Bytes(x) => v.bytes_list(n, x),
                    List::Messages(x) => v.messages(n, x.iter()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_compare_by_bits() {
        assert_eq!(Value::F64(f64::NAN), Value::F64(f64::NAN));
        assert_ne!(Value::F32(0.0), Value::F32(-0.0));
        assert_eq!(List::F32(vec![f32::NAN, 1.0]), List::F32(vec![f32::NAN, 1.0]));
        assert_ne!(Value::I32(1), Value::U32(1));
    }
}
