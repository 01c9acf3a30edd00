//! Helpers on values shared by the JSON and protobuf codecs: field presence (which fields an
//! encoder omits when they hold their default).

use ferry_wire::Value;
use prost_reflect::FieldDescriptor;

/// A field without explicit presence: omitted on output when it holds its default.
pub fn implicit_presence(f: &FieldDescriptor) -> bool {
    !f.supports_presence() && !f.is_list() && !f.is_map()
}

/// Whether `v` is its kind's default: `0`, `false`, empty (bitwise for floats).
pub fn is_default(v: &Value<'_>) -> bool {
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
