//! Message descriptors: the schema facts the decoder validates against.
//!
//! Generated code (and hand-written types in the same shape) emits one `static` [`MessageDesc`]
//! per message; recursive messages refer to their own static.

/// The protobuf kind of a field.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `sint32`.
    SInt32,
    /// `sint64`.
    SInt64,
    /// `fixed32`.
    Fixed32,
    /// `fixed64`.
    Fixed64,
    /// `sfixed32`.
    SFixed32,
    /// `sfixed64`.
    SFixed64,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `bool`.
    Bool,
    /// An enum (stored as `int32`; unknown values are kept).
    Enum,
    /// `string` (UTF-8 is checked when read as text).
    String,
    /// `bytes`.
    Bytes,
    /// A nested message.
    Message(&'static MessageDesc),
}

/// Names a nested message instead of printing its descriptor, which may contain itself.
impl core::fmt::Debug for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Kind::Message(d) => write!(f, "Message({})", d.name),
            Kind::Int32 => f.write_str("Int32"),
            Kind::Int64 => f.write_str("Int64"),
            Kind::UInt32 => f.write_str("UInt32"),
            Kind::UInt64 => f.write_str("UInt64"),
            Kind::SInt32 => f.write_str("SInt32"),
            Kind::SInt64 => f.write_str("SInt64"),
            Kind::Fixed32 => f.write_str("Fixed32"),
            Kind::Fixed64 => f.write_str("Fixed64"),
            Kind::SFixed32 => f.write_str("SFixed32"),
            Kind::SFixed64 => f.write_str("SFixed64"),
            Kind::Float => f.write_str("Float"),
            Kind::Double => f.write_str("Double"),
            Kind::Bool => f.write_str("Bool"),
            Kind::Enum => f.write_str("Enum"),
            Kind::String => f.write_str("String"),
            Kind::Bytes => f.write_str("Bytes"),
        }
    }
}

impl Kind {
    /// Width of one element in a packed list, or `None` for ranged kinds.
    pub const fn packed_width(self) -> Option<usize> {
        match self {
            Kind::Bool => Some(1),
            Kind::Int32
            | Kind::UInt32
            | Kind::SInt32
            | Kind::Fixed32
            | Kind::SFixed32
            | Kind::Float
            | Kind::Enum => Some(4),
            Kind::Int64 | Kind::UInt64 | Kind::SInt64 | Kind::Fixed64 | Kind::SFixed64 | Kind::Double => {
                Some(8)
            }
            Kind::String | Kind::Bytes | Kind::Message(_) => None,
        }
    }
}

/// Cardinality of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// At most one value; absent means the default (proto3 implicit and explicit presence, proto2 optional).
    Optional,
    /// proto2 `required`: the decoder rejects a message without it.
    Required,
    /// Any number of values; a map is a repeated field of its entry message.
    Repeated,
}

/// One field of a message.
#[derive(Debug, Clone, Copy)]
pub struct FieldDesc {
    /// Name as written in the schema.
    pub name: &'static str,
    /// Field number, 1 ..= 2^29 - 1.
    pub number: u32,
    /// Kind.
    pub kind: Kind,
    /// Cardinality.
    pub label: Label,
    /// Index of the oneof this field belongs to, if any.
    pub oneof: Option<u16>,
}

/// A message type.
///
/// Generated code writes one `static` per message with [`MessageDesc::new`]; recursive messages
/// refer to their own static. Descriptors built at run time (from a `.proto` file, by tools)
/// may be recursive too: create each with [`MessageDesc::dynamic`], leak it, then give it its
/// fields with [`MessageDesc::set_fields`] once every message it refers to exists.
#[derive(Debug)]
pub struct MessageDesc {
    /// Fully qualified name, e.g. `ferry.sample.KvPair`.
    pub name: &'static str,
    fields: Fields,
    /// Whether this is a map entry (key = field 1, value = field 2).
    pub map_entry: bool,
}

#[derive(Debug)]
enum Fields {
    Static(&'static [FieldDesc]),
    Dynamic(std::sync::OnceLock<&'static [FieldDesc]>),
}

/// [`MessageDesc::set_fields`] was called twice, on a static descriptor, or with fields out of order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fields of `{0}` cannot be set: already set, static, or not in ascending number order")]
pub struct FieldsError(pub &'static str);

impl MessageDesc {
    /// A descriptor with its fields, which must be in ascending field number order.
    pub const fn new(name: &'static str, fields: &'static [FieldDesc], map_entry: bool) -> Self {
        MessageDesc {
            name,
            fields: Fields::Static(fields),
            map_entry,
        }
    }

    /// A descriptor whose fields are given later, once, with [`MessageDesc::set_fields`]. Until
    /// then it has no fields.
    pub fn dynamic(name: &'static str, map_entry: bool) -> Self {
        MessageDesc {
            name,
            fields: Fields::Dynamic(std::sync::OnceLock::new()),
            map_entry,
        }
    }

    /// Gives a [`MessageDesc::dynamic`] descriptor its fields (ascending field numbers).
    pub fn set_fields(&self, fields: &'static [FieldDesc]) -> Result<(), FieldsError> {
        let ascending = fields.windows(2).all(|w| w[0].number < w[1].number);
        match &self.fields {
            Fields::Dynamic(cell) if ascending => cell.set(fields).map_err(|_| FieldsError(self.name)),
            _ => Err(FieldsError(self.name)),
        }
    }

    /// Fields in ascending field number order.
    #[inline]
    pub fn fields(&self) -> &'static [FieldDesc] {
        match &self.fields {
            Fields::Static(f) => f,
            Fields::Dynamic(cell) => cell.get().copied().unwrap_or_default(),
        }
    }

    /// The field with this number.
    pub fn field(&self, number: u32) -> Option<&'static FieldDesc> {
        let fields = self.fields();
        let i = fields.binary_search_by_key(&number, |f| f.number).ok()?;
        fields.get(i)
    }

    /// The field with this name.
    pub fn field_by_name(&self, name: &str) -> Option<&'static FieldDesc> {
        self.fields().iter().find(|f| f.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_descriptors_can_be_recursive() {
        let node: &'static MessageDesc = Box::leak(Box::new(MessageDesc::dynamic("t.Node", false)));
        assert!(node.fields().is_empty());
        let fields = Box::leak(Box::new([
            FieldDesc {
                name: "value",
                number: 1,
                kind: Kind::Int32,
                label: Label::Optional,
                oneof: None,
            },
            FieldDesc {
                name: "next",
                number: 2,
                kind: Kind::Message(node),
                label: Label::Optional,
                oneof: None,
            },
        ]));
        node.set_fields(fields).unwrap();
        assert_eq!(node.field(2).map(|f| f.name), Some("next"));
        assert!(matches!(node.field(2).unwrap().kind, Kind::Message(d) if core::ptr::eq(d, node)));
        assert_eq!(node.set_fields(fields), Err(FieldsError("t.Node")));
        static FIXED: MessageDesc = MessageDesc::new("t.Fixed", &[], false);
        assert!(FIXED.set_fields(&[]).is_err());
    }
}
