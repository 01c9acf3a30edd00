//! Helpers on values shared by the JSON and protobuf codecs: field presence (which fields an
//! encoder omits when they hold their default) and building lists.

use ferry_wire::{Kind, List, Value};
use prost_reflect::FieldDescriptor;

/// A field without explicit presence: omitted on output when it holds its default.
pub(crate) fn implicit_presence(f: &FieldDescriptor) -> bool {
    !f.supports_presence() && !f.is_list() && !f.is_map()
}

/// Whether `v` is its kind's default: `0`, `false`, empty (bitwise for floats).
pub(crate) fn is_default(v: &Value<'_>) -> bool {
    match v {
        Value::Bool(x) => !x,
        Value::I32(x) => *x == 0,
        Value::I64(x) => *x == 0,
        Value::U32(x) => *x == 0,
        Value::U64(x) => *x == 0,
        // Bitwise zero: -0.0 is not the default (as in protobuf).
        Value::F32(x) => x.to_bits() == 0,
        Value::F64(x) => x.to_bits() == 0,
        Value::Bytes(b) => b.is_empty(),
        Value::Message(_) | Value::List(_) => false,
    }
}

/// An empty list for elements of `kind`.
pub(crate) fn empty_list<'a>(kind: Kind) -> List<'a> {
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

/// Appends `v` to `list`; false if it is of another kind.
pub(crate) fn push<'a>(list: &mut List<'a>, v: Value<'a>) -> bool {
    match (list, v) {
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
