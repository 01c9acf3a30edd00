//! Sample message types, written by hand in the shape `ferry-build` generates: what the
//! documentation, the tests and the benchmarks of every crate use (re-exported as
//! `ferry::sample`).
//!
//! [`Record`] is the Cornflakes/muSer object model (a key and a list of opaque fields), used by
//! the demo and the benchmarks:
//!
//! ```proto
//! message Record {
//!   bytes key = 1;
//!   repeated bytes fields = 2;
//! }
//! ```
//!
//! [`ALL_KINDS`] describes a message with every field kind in singular, repeated and map form, a
//! oneof, recursion and field numbers past 64; tests drive it through
//! [`DynamicMessage`](crate::DynamicMessage).

use crate::{
    Context, DecodeError, Encode, FieldDesc, HybridBytes, IntoHybrid, Kind, Label, Message, MessageDesc,
    MessageView, View, Visitor,
};

/// Descriptor of [`Record`].
pub static RECORD: MessageDesc = MessageDesc::new(
    "ferry.sample.Record",
    &[
        FieldDesc::new("key", 1, Kind::Bytes, Label::Optional),
        FieldDesc::new("fields", 2, Kind::Bytes, Label::Repeated),
    ],
    false,
);

/// A key and a list of opaque fields (the muSer / Cornflakes object shape).
#[derive(Debug, Clone)]
pub struct Record<'a> {
    ctx: &'a Context,
    key: HybridBytes<'a>,
    fields: Vec<HybridBytes<'a>>,
}

impl<'a> Record<'a> {
    /// An empty record whose fields follow `ctx`'s copy-or-reference rule.
    pub fn new(ctx: &'a Context) -> Self {
        Record {
            ctx,
            key: HybridBytes::EMPTY,
            fields: Vec::new(),
        }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &HybridBytes<'a> {
        &self.key
    }

    /// Sets the key (copy or reference is decided now).
    #[inline]
    pub fn set_key(&mut self, value: impl IntoHybrid<'a>) {
        self.key = value.into_hybrid(self.ctx);
    }

    /// Clears the key.
    pub fn clear_key(&mut self) {
        self.key = HybridBytes::EMPTY;
    }

    /// The fields.
    #[inline]
    pub fn fields(&self) -> &[HybridBytes<'a>] {
        &self.fields
    }

    /// Clears the list and reserves room for `capacity` fields.
    #[inline]
    pub fn init_fields(&mut self, capacity: usize) {
        self.fields.clear();
        self.fields.reserve(capacity);
    }

    /// Appends a field (copy or reference is decided now).
    #[inline]
    pub fn append_field(&mut self, value: impl IntoHybrid<'a>) {
        self.fields.push(value.into_hybrid(self.ctx));
    }

    /// Mutable access to the list.
    pub fn fields_mut(&mut self) -> &mut Vec<HybridBytes<'a>> {
        &mut self.fields
    }
}

impl<'a> Message<'a> for Record<'a> {
    type View<'b> = RecordView<'b>;

    fn desc() -> &'static MessageDesc<'static> {
        &RECORD
    }

    fn view_of(view: View<'_>) -> Option<RecordView<'_>> {
        std::ptr::eq(view.desc(), &RECORD).then_some(RecordView(view))
    }
}

impl<'a> Encode<'a> for Record<'a> {
    #[inline]
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        if !self.key.is_empty() {
            v.bytes(1, &self.key);
        }
        if !self.fields.is_empty() {
            v.bytes_list(2, &self.fields);
        }
    }

    #[inline(always)]
    fn size_into(&self, s: &mut crate::Sizes) -> crate::Shape {
        let mut h = crate::Header::<1>::new();
        if !self.key.is_empty() {
            h.set(0, crate::layout::bit_of(1));
            s.bytes(&self.key);
        }
        if !self.fields.is_empty() {
            h.set(0, crate::layout::bit_of(2));
            s.bytes_list(&self.fields);
        }
        s.header(h.shape())
    }

    #[inline(always)]
    fn write_into(&self, w: &mut crate::Writer<'_>) -> u64 {
        const GROUPS: [u32; 1] = [0];
        let r = w.reserve_header(Encode::missing_required(self), || {
            let mut h = crate::Header::<1>::new();
            if !self.key.is_empty() {
                h.set(0, crate::layout::bit_of(1));
            }
            if !self.fields.is_empty() {
                h.set(0, crate::layout::bit_of(2));
            }
            h.shape()
        });
        let mut h = crate::Header::<1>::new();
        let mut e = crate::Entries::<2>::new();
        if !self.key.is_empty() {
            h.set(0, crate::layout::bit_of(1));
            e.push(w.bytes(&self.key));
        }
        if !self.fields.is_empty() {
            h.set(0, crate::layout::bit_of(2));
            e.push(w.bytes_list(&self.fields));
        }
        w.header(r, &GROUPS, &h, &e)
    }
}

/// A validated, zero-copy view of an encoded [`Record`].
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'b>(View<'b>);

impl<'b> RecordView<'b> {
    /// The key, in place.
    #[inline]
    pub fn key(&self) -> &'b [u8] {
        self.0.bytes(1).unwrap_or_default()
    }

    /// The fields, in place.
    #[inline]
    pub fn fields(&self) -> crate::BytesList<'b> {
        self.0.bytes_list(2)
    }
}

impl<'b> MessageView<'b> for RecordView<'b> {
    type Message = Record<'b>;

    fn view(&self) -> &View<'b> {
        &self.0
    }

    /// An outgoing copy of this record that references the received buffer for large fields
    /// (decode, change a field, send back, without copying the untouched large fields).
    fn to_message(&self, ctx: &'b Context) -> Result<Record<'b>, DecodeError> {
        let mut r = Record::new(ctx);
        r.key = self.0.hybrid(1, ctx).unwrap_or_default();
        r.fields = self.fields().hybrids(ctx).collect();
        Ok(r)
    }
}

const fn oneof(name: &'static str, number: u32, kind: Kind<'static>, index: u16) -> FieldDesc<'static> {
    FieldDesc {
        name,
        number,
        kind,
        label: Label::Optional,
        oneof: Some(index),
    }
}

/// Every scalar kind, in the order of [`SCALAR_KINDS`].
pub const SCALAR_KINDS: [Kind; 14] = [
    Kind::Int32,
    Kind::Int64,
    Kind::UInt32,
    Kind::UInt64,
    Kind::SInt32,
    Kind::SInt64,
    Kind::Fixed32,
    Kind::Fixed64,
    Kind::SFixed32,
    Kind::SFixed64,
    Kind::Float,
    Kind::Double,
    Kind::Bool,
    Kind::Enum,
];

/// Map entry `map<string, int64>`.
pub static MAP_STRING_INT64: MessageDesc = MessageDesc::new(
    "ferry.sample.AllKinds.StrI64Entry",
    &[
        FieldDesc::new("key", 1, Kind::String, Label::Optional),
        FieldDesc::new("value", 2, Kind::Int64, Label::Optional),
    ],
    true,
);

/// Map entry `map<uint32, AllKinds>`.
pub static MAP_UINT32_MESSAGE: MessageDesc = MessageDesc::new(
    "ferry.sample.AllKinds.U32MsgEntry",
    &[
        FieldDesc::new("key", 1, Kind::UInt32, Label::Optional),
        FieldDesc::new("value", 2, Kind::Message(&ALL_KINDS), Label::Optional),
    ],
    true,
);

/// Map entry `map<bool, bytes>`.
pub static MAP_BOOL_BYTES: MessageDesc = MessageDesc::new(
    "ferry.sample.AllKinds.BoolBytesEntry",
    &[
        FieldDesc::new("key", 1, Kind::Bool, Label::Optional),
        FieldDesc::new("value", 2, Kind::Bytes, Label::Optional),
    ],
    true,
);

/// A message with every field kind: singular 1-16, repeated 21-36, nested/recursive 17-18 and
/// 37, maps 40-42, a oneof 50-52, and fields 100 and 70000 (past the first presence chunk).
pub static ALL_KINDS: MessageDesc = MessageDesc::new(
    "ferry.sample.AllKinds",
    &[
        FieldDesc::new("int32", 1, Kind::Int32, Label::Optional),
        FieldDesc::new("int64", 2, Kind::Int64, Label::Optional),
        FieldDesc::new("uint32", 3, Kind::UInt32, Label::Optional),
        FieldDesc::new("uint64", 4, Kind::UInt64, Label::Optional),
        FieldDesc::new("sint32", 5, Kind::SInt32, Label::Optional),
        FieldDesc::new("sint64", 6, Kind::SInt64, Label::Optional),
        FieldDesc::new("fixed32", 7, Kind::Fixed32, Label::Optional),
        FieldDesc::new("fixed64", 8, Kind::Fixed64, Label::Optional),
        FieldDesc::new("sfixed32", 9, Kind::SFixed32, Label::Optional),
        FieldDesc::new("sfixed64", 10, Kind::SFixed64, Label::Optional),
        FieldDesc::new("float", 11, Kind::Float, Label::Optional),
        FieldDesc::new("double", 12, Kind::Double, Label::Optional),
        FieldDesc::new("bool", 13, Kind::Bool, Label::Optional),
        FieldDesc::new("enum", 14, Kind::Enum, Label::Optional),
        FieldDesc::new("string", 15, Kind::String, Label::Optional),
        FieldDesc::new("bytes", 16, Kind::Bytes, Label::Optional),
        FieldDesc::new("child", 17, Kind::Message(&ALL_KINDS), Label::Optional),
        FieldDesc::new("record", 18, Kind::Message(&RECORD), Label::Optional),
        FieldDesc::new("r_int32", 21, Kind::Int32, Label::Repeated),
        FieldDesc::new("r_int64", 22, Kind::Int64, Label::Repeated),
        FieldDesc::new("r_uint32", 23, Kind::UInt32, Label::Repeated),
        FieldDesc::new("r_uint64", 24, Kind::UInt64, Label::Repeated),
        FieldDesc::new("r_sint32", 25, Kind::SInt32, Label::Repeated),
        FieldDesc::new("r_sint64", 26, Kind::SInt64, Label::Repeated),
        FieldDesc::new("r_fixed32", 27, Kind::Fixed32, Label::Repeated),
        FieldDesc::new("r_fixed64", 28, Kind::Fixed64, Label::Repeated),
        FieldDesc::new("r_sfixed32", 29, Kind::SFixed32, Label::Repeated),
        FieldDesc::new("r_sfixed64", 30, Kind::SFixed64, Label::Repeated),
        FieldDesc::new("r_float", 31, Kind::Float, Label::Repeated),
        FieldDesc::new("r_double", 32, Kind::Double, Label::Repeated),
        FieldDesc::new("r_bool", 33, Kind::Bool, Label::Repeated),
        FieldDesc::new("r_enum", 34, Kind::Enum, Label::Repeated),
        FieldDesc::new("r_string", 35, Kind::String, Label::Repeated),
        FieldDesc::new("r_bytes", 36, Kind::Bytes, Label::Repeated),
        FieldDesc::new("r_child", 37, Kind::Message(&ALL_KINDS), Label::Repeated),
        FieldDesc::new("m_str_i64", 40, Kind::Message(&MAP_STRING_INT64), Label::Repeated),
        FieldDesc::new(
            "m_u32_msg",
            41,
            Kind::Message(&MAP_UINT32_MESSAGE),
            Label::Repeated,
        ),
        FieldDesc::new(
            "m_bool_bytes",
            42,
            Kind::Message(&MAP_BOOL_BYTES),
            Label::Repeated,
        ),
        oneof("o_uint64", 50, Kind::UInt64, 0),
        oneof("o_string", 51, Kind::String, 0),
        oneof("o_child", 52, Kind::Message(&ALL_KINDS), 0),
        FieldDesc::new("far", 100, Kind::Fixed64, Label::Optional),
        FieldDesc::new("very_far", 70000, Kind::Bytes, Label::Optional),
    ],
    false,
);
