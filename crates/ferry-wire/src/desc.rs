//! Message descriptors: the schema facts the decoder validates against.
//!
//! Generated code (and hand-written types in the same shape) emits one `static` [`MessageDesc`]
//! per message; recursive messages refer to their own static.
//!
//! Descriptors borrow for `'d`: their names, their fields and the messages their fields refer
//! to. A generated descriptor is a `MessageDesc<'static>`; one built at run time (by
//! `ferry-reflect`'s `Schema`, from `.proto` files) borrows the schema that owns it, and so
//! does every [`View`](crate::View) and [`DynamicMessage`](crate::DynamicMessage) of it. A
//! `&'static MessageDesc<'static>` coerces to any shorter `&'d MessageDesc<'d>` (descriptors
//! are covariant in `'d`).

/// The protobuf kind of a field.
#[derive(Clone, Copy)]
pub enum Kind<'d> {
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
    Message(&'d MessageDesc<'d>),
}

/// Names a nested message instead of printing its descriptor, which may contain itself.
impl core::fmt::Debug for Kind<'_> {
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

impl Kind<'_> {
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
pub struct FieldDesc<'d> {
    /// Name as written in the schema.
    pub name: &'d str,
    /// Field number, 1 ..= 2^29 - 1.
    pub number: u32,
    /// Kind.
    pub kind: Kind<'d>,
    /// Cardinality.
    pub label: Label,
    /// Index of the oneof this field belongs to, if any.
    pub oneof: Option<u16>,
}

impl<'d> FieldDesc<'d> {
    /// A field outside any oneof.
    pub const fn new(name: &'d str, number: u32, kind: Kind<'d>, label: Label) -> Self {
        FieldDesc {
            name,
            number,
            kind,
            label,
            oneof: None,
        }
    }
}

/// A message type.
///
/// Generated code writes one `static` per message with [`MessageDesc::new`]; recursive messages
/// refer to their own static. Descriptors built at run time (from a `.proto` file, by tools)
/// may be recursive too: create each with [`MessageDesc::with_cell`] over a [`FieldsCell`]
/// that outlives it, then [`FieldsCell::set`] its fields once every message they refer to
/// exists. Whoever owns the cells and the descriptors (an arena) frees them; nothing is leaked.
pub struct MessageDesc<'d> {
    /// Fully qualified name, e.g. `ferry.sample.KvPair`.
    pub name: &'d str,
    fields: Fields<'d>,
    /// Whether this is a map entry (key = field 1, value = field 2).
    pub map_entry: bool,
}

/// Prints the fields, whose nested messages [`Kind`] names rather than prints.
impl core::fmt::Debug for MessageDesc<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MessageDesc")
            .field("name", &self.name)
            .field("fields", &self.fields())
            .field("map_entry", &self.map_entry)
            .finish()
    }
}

enum Fields<'d> {
    /// Given with the descriptor ([`MessageDesc::new`]).
    Given(&'d [FieldDesc<'d>]),
    /// Set later, once ([`MessageDesc::with_cell`]). Behind a trait object so that only reading
    /// is reachable from a descriptor: that keeps `MessageDesc` covariant in `'d`, which a
    /// `&'d FieldsCell<'d>` (a cell, writable through `&`) would not be.
    Cell(&'d dyn ReadFields),
}

/// Read access to a [`FieldsCell`], for any lifetime the reader's borrow allows.
trait ReadFields: Sync {
    fn fields(&self) -> &[FieldDesc<'_>];
}

/// The fields of a run-time [`MessageDesc`], given once after the descriptor exists: how
/// descriptors of recursive and mutually recursive messages come to refer to each other.
#[derive(Debug, Default)]
pub struct FieldsCell<'d>(std::sync::OnceLock<&'d [FieldDesc<'d>]>);

impl ReadFields for FieldsCell<'_> {
    fn fields(&self) -> &[FieldDesc<'_>] {
        self.0.get().copied().unwrap_or_default()
    }
}

/// [`FieldsCell::set`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldsError {
    /// The cell already has its fields.
    #[error("the fields were already set")]
    AlreadySet,
    /// Fields must be in strictly ascending number order.
    #[error("field {number} is not in ascending field number order")]
    NotAscending {
        /// The first field number that is not larger than the one before it.
        number: u32,
    },
}

impl<'d> FieldsCell<'d> {
    /// An empty cell: a descriptor over it has no fields until [`set`](Self::set).
    pub const fn new() -> Self {
        FieldsCell(std::sync::OnceLock::new())
    }

    /// Gives the descriptors over this cell their fields (ascending field numbers), once.
    pub fn set(&self, fields: &'d [FieldDesc<'d>]) -> Result<(), FieldsError> {
        if let Some(w) = fields.windows(2).find(|w| w[0].number >= w[1].number) {
            return Err(FieldsError::NotAscending { number: w[1].number });
        }
        self.0.set(fields).map_err(|_| FieldsError::AlreadySet)
    }
}

impl<'d> MessageDesc<'d> {
    /// A descriptor with its fields, which must be in ascending field number order.
    pub const fn new(name: &'d str, fields: &'d [FieldDesc<'d>], map_entry: bool) -> Self {
        MessageDesc {
            name,
            fields: Fields::Given(fields),
            map_entry,
        }
    }

    /// A descriptor whose fields are those of `cell`: none until [`FieldsCell::set`].
    pub fn with_cell(name: &'d str, cell: &'d FieldsCell<'d>, map_entry: bool) -> Self {
        MessageDesc {
            name,
            fields: Fields::Cell(cell),
            map_entry,
        }
    }

    /// Fields in ascending field number order.
    #[inline]
    pub fn fields(&self) -> &'d [FieldDesc<'d>] {
        match self.fields {
            Fields::Given(f) => f,
            Fields::Cell(cell) => cell.fields(),
        }
    }

    /// The field with this number.
    #[inline]
    pub fn field(&self, number: u32) -> Option<&'d FieldDesc<'d>> {
        let fields = self.fields();
        // Most schemas number their fields 1, 2, 3, ...: then field n is the n-th.
        if let Some(f) = fields.get((number as usize).wrapping_sub(1)) {
            if f.number == number {
                return Some(f);
            }
        }
        let i = fields.binary_search_by_key(&number, |f| f.number).ok()?;
        fields.get(i)
    }

    /// The field with this name.
    pub fn field_by_name(&self, name: &str) -> Option<&'d FieldDesc<'d>> {
        self.fields().iter().find(|f| f.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles only while descriptors are covariant: a generated `&'static MessageDesc<'static>`
    /// must pass where a schema's shorter-lived descriptors do.
    #[allow(dead_code)]
    fn covariant<'short, 'long: 'short>(d: &'short MessageDesc<'long>) -> &'short MessageDesc<'short> {
        d
    }

    #[test]
    fn cell_descriptors_can_be_recursive() {
        let cell = FieldsCell::new();
        let node = MessageDesc::with_cell("t.Node", &cell, false);
        assert!(node.fields().is_empty());
        let fields = [
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
                kind: Kind::Message(&node),
                label: Label::Optional,
                oneof: None,
            },
        ];
        cell.set(&fields).unwrap();
        assert_eq!(node.field(2).map(|f| f.name), Some("next"));
        assert!(matches!(node.field(2).unwrap().kind, Kind::Message(d) if core::ptr::eq(d, &node)));
        assert_eq!(cell.set(&fields), Err(FieldsError::AlreadySet));
        let backwards = [fields[1], fields[0]];
        assert_eq!(
            FieldsCell::new().set(&backwards),
            Err(FieldsError::NotAscending { number: 1 })
        );
    }
}
