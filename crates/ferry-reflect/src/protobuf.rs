//! The protobuf binary format to and from a Ferry [`DynamicMessage`]: what a gateway that
//! serves unchanged gRPC clients decodes requests with and encodes responses with.
//!
//! Decoding follows protobuf's rules as prost implements them: fields in any order; unknown
//! fields (any wire type, groups included) skipped; the last value of a singular scalar wins;
//! a singular message given twice is merged; a oneof keeps its last member; repeated scalars
//! are accepted packed and unpacked; a map entry may lack its key or value (the default) and
//! a repeated key replaces the earlier entry; enums are open (an unnamed number is kept, as
//! prost does, proto2 included); strings must be UTF-8. Peer bytes are untrusted: every
//! length is checked against the input before use, nothing is allocated from a count the peer
//! wrote, nesting is bounded by [`ProtobufLimits::max_depth`] and the input by
//! [`ProtobufLimits::max_len`], and every error names the message, field and byte offset.
//!
//! Encoding is canonical: fields in ascending number order, proto3 repeated scalars packed
//! (and proto2 ones where `[packed = true]`), implicit-presence fields omitted when they hold
//! their default, map entries with key and value written out, unknown fields not kept (a
//! [`DynamicMessage`] has none). This is the byte order `prost-reflect` writes, so the two
//! agree byte for byte (see the tests).
//!
//! Proto2 custom defaults (`[default = 7]`) are not materialized: an absent field stays absent
//! in the [`DynamicMessage`], and readers apply the default, as with Ferry's own format.

use std::collections::BTreeMap;

use ferry_wire::{Context, DynamicMessage, HybridBytes, Kind, List, MessageDesc, Value};
use prost_reflect::{FieldDescriptor, Kind as PKind, MessageDescriptor};

use crate::values::{implicit_presence, is_default};

/// Limits of [`decode`], against hostile input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtobufLimits {
    /// Deepest nesting of messages accepted (the root is depth 0). prost's limit is 100.
    pub max_depth: u32,
    /// Longest input accepted, in bytes.
    pub max_len: usize,
}

impl Default for ProtobufLimits {
    fn default() -> Self {
        ProtobufLimits {
            max_depth: 100,
            max_len: 64 << 20,
        }
    }
}

/// What is wrong with protobuf input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtobufErrorKind {
    /// The input ends inside a tag, a value or a length-delimited field.
    #[error("input ends inside a value")]
    Truncated,
    /// A varint is longer than 10 bytes, or its tenth byte overflows 64 bits.
    #[error("varint longer than 10 bytes or over 64 bits")]
    VarintTooLong,
    /// A tag with field number 0, or a wire type that does not exist (6, 7).
    #[error("invalid tag {0:#x}")]
    InvalidTag(u64),
    /// A known field arrives with a wire type its kind cannot have.
    #[error("wire type {found} for a field of kind {kind}")]
    WireType {
        /// The wire type in the tag.
        found: u8,
        /// The field's kind.
        kind: &'static str,
    },
    /// An end-group tag without its start, or for another field.
    #[error("unbalanced group")]
    Group,
    /// A `string` that is not UTF-8.
    #[error("string is not UTF-8")]
    InvalidUtf8,
    /// Nesting deeper than [`ProtobufLimits::max_depth`].
    #[error("nesting deeper than {0}")]
    TooDeep(u32),
    /// Input longer than [`ProtobufLimits::max_len`].
    #[error("input of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// The input's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The Ferry descriptor does not match the protobuf one (a schema bug, not peer input).
    #[error("the Ferry descriptor has no field {0}")]
    Schema(u32),
}

/// A decoding error: what, in which message and field, at which byte of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}: byte {offset}: {kind}", field.map(|f| format!(" field {f}")).unwrap_or_default())]
pub struct ProtobufError {
    /// Full name of the message being decoded.
    pub message: String,
    /// The field being decoded, if the error is inside one.
    pub field: Option<u32>,
    /// Offset in the whole input.
    pub offset: usize,
    /// What is wrong.
    pub kind: ProtobufErrorKind,
}

/// Decodes protobuf binary `input` as a message of `md` (`desc` is its Ferry descriptor, from
/// [`Schema::message`](crate::Schema::message)). `bytes` and `string` values borrow `input`
/// under `ctx`'s copy-or-reference rule; the message borrows `desc` too.
pub fn decode<'a>(
    md: &MessageDescriptor,
    desc: &'a MessageDesc<'a>,
    input: &'a [u8],
    ctx: &'a Context,
    limits: &ProtobufLimits,
) -> Result<DynamicMessage<'a>, ProtobufError> {
    if input.len() > limits.max_len {
        return Err(ProtobufError {
            message: md.full_name().to_string(),
            field: None,
            offset: 0,
            kind: ProtobufErrorKind::TooLarge {
                len: input.len(),
                max: limits.max_len,
            },
        });
    }
    let mut m = DynamicMessage::new(desc);
    Decoder { ctx, limits }.merge(md, &mut m, input, 0, 0)?;
    Ok(m)
}

/// Encodes `m` (a message of `md`) in protobuf's binary format.
pub fn encode(md: &MessageDescriptor, m: &DynamicMessage<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(md, m, &mut out);
    out
}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const I32: u8 = 5;

/// A cursor over one length-delimited region; `base` is its offset in the whole input.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn at(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, ProtobufErrorKind> {
        // One byte: the most common varint (tags, small values).
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self.buf.get(self.pos).ok_or(ProtobufErrorKind::Truncated)?;
            self.pos += 1;
            // The tenth byte holds bit 63 only: more would overflow 64 bits (prost refuses it).
            if i == 9 && b > 1 {
                return Err(ProtobufErrorKind::VarintTooLong);
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ProtobufErrorKind::VarintTooLong)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtobufErrorKind> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or(ProtobufErrorKind::Truncated)?;
        let b = &self.buf[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    fn len_delimited(&mut self) -> Result<(&'a [u8], usize), ProtobufErrorKind> {
        let n = self.varint()?;
        let at = self.at();
        let n = usize::try_from(n).map_err(|_| ProtobufErrorKind::Truncated)?;
        Ok((self.bytes(n)?, at))
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], ProtobufErrorKind> {
        let b = self.bytes(N)?;
        Ok(b.try_into().expect("N bytes"))
    }

    /// Skips the value of an unknown field of wire type `wt` (a group up to its end tag).
    fn skip(&mut self, wt: u8, number: u64, depth: u32, max_depth: u32) -> Result<(), ProtobufErrorKind> {
        match wt {
            VARINT => self.varint().map(drop),
            I64 => self.bytes(8).map(drop),
            I32 => self.bytes(4).map(drop),
            LEN => self.len_delimited().map(drop),
            START_GROUP => {
                if depth >= max_depth {
                    return Err(ProtobufErrorKind::TooDeep(max_depth));
                }
                loop {
                    let tag = self.varint()?;
                    let (n, w) = (tag >> 3, (tag & 7) as u8);
                    if w == END_GROUP {
                        return if n == number {
                            Ok(())
                        } else {
                            Err(ProtobufErrorKind::Group)
                        };
                    }
                    if n == 0 || w > I32 {
                        return Err(ProtobufErrorKind::InvalidTag(tag));
                    }
                    self.skip(w, n, depth + 1, max_depth)?;
                }
            }
            _ => Err(ProtobufErrorKind::Group),
        }
    }
}

struct Decoder<'a, 'l> {
    ctx: &'a Context,
    limits: &'l ProtobufLimits,
}

impl<'a> Decoder<'a, '_> {
    /// Merges the fields in `buf` (at `base` of the input) into `m`.
    fn merge(
        &self,
        md: &MessageDescriptor,
        m: &mut DynamicMessage<'a>,
        buf: &'a [u8],
        base: usize,
        depth: u32,
    ) -> Result<(), ProtobufError> {
        let err = |field: Option<u32>, offset: usize, kind| ProtobufError {
            message: md.full_name().to_string(),
            field,
            offset,
            kind,
        };
        if depth > self.limits.max_depth {
            return Err(err(None, base, ProtobufErrorKind::TooDeep(self.limits.max_depth)));
        }
        let desc = m.desc();
        // Repeated values of this occurrence of the message, appended to what `m` held.
        let mut lists: BTreeMap<u32, List<'a>> = BTreeMap::new();
        let mut r = Reader { buf, pos: 0, base };
        while r.pos < buf.len() {
            let at = r.at();
            let tag = r.varint().map_err(|k| err(None, at, k))?;
            let (number, wt) = (tag >> 3, (tag & 7) as u8);
            if number == 0 || number > u64::from(u32::MAX) || wt > I32 || wt == END_GROUP {
                return Err(err(None, at, ProtobufErrorKind::InvalidTag(tag)));
            }
            let number = number as u32;
            let (Some(fd), Some(f)) = (md.get_field(number), desc.field(number)) else {
                r.skip(wt, u64::from(number), depth, self.limits.max_depth)
                    .map_err(|k| err(Some(number), at, k))?;
                continue;
            };
            let fail = |k| err(Some(number), at, k);
            if fd.is_map() {
                expect(wt, LEN, &fd).map_err(fail)?;
                let (entry, start) = r.len_delimited().map_err(fail)?;
                let (key, value) = self.map_entry(&fd, f.kind, entry, start, depth)?;
                m.insert_map_entry(number, key, value)
                    .map_err(|_| fail(ProtobufErrorKind::Schema(number)))?;
            } else if fd.is_list() {
                let list = match lists.remove(&number) {
                    Some(l) => l,
                    None => match m.get(number) {
                        Some(Value::List(l)) => l.clone(),
                        _ => List::empty(f.kind),
                    },
                };
                let list = self
                    .repeated(&fd, f.kind, &mut r, wt, list, depth)
                    .map_err(|e| match e {
                        Nested::Here(k) => fail(k),
                        Nested::Inside(e) => e,
                    })?;
                lists.insert(number, list);
            } else {
                let value = match f.kind {
                    Kind::Message(d) => {
                        expect(wt, LEN, &fd).map_err(fail)?;
                        let (bytes, start) = r.len_delimited().map_err(fail)?;
                        let mut inner = match m.get(number) {
                            Some(Value::Message(prev)) => prev.clone(),
                            _ => DynamicMessage::new(d),
                        };
                        let PKind::Message(inner_md) = fd.kind() else {
                            return Err(fail(ProtobufErrorKind::Schema(number)));
                        };
                        self.merge(&inner_md, &mut inner, bytes, start, depth + 1)?;
                        Value::Message(inner)
                    }
                    k => self.scalar(&fd, k, &mut r, wt).map_err(fail)?,
                };
                if implicit_presence(&fd) && is_default(&value) {
                    // An implicit-presence field holding its default is absent (and a later
                    // default replaces an earlier value: last one wins).
                    m.clear(number);
                    continue;
                }
                m.set(number, value)
                    .map_err(|_| fail(ProtobufErrorKind::Schema(number)))?;
            }
        }
        for (number, list) in lists {
            m.set(number, Value::List(list))
                .map_err(|_| err(Some(number), base, ProtobufErrorKind::Schema(number)))?;
        }
        Ok(())
    }

    /// One map entry: its key and value, defaults where absent.
    fn map_entry(
        &self,
        fd: &FieldDescriptor,
        kind: Kind<'a>,
        buf: &'a [u8],
        base: usize,
        depth: u32,
    ) -> Result<(Value<'a>, Value<'a>), ProtobufError> {
        let (PKind::Message(entry_md), Kind::Message(entry_desc)) = (fd.kind(), kind) else {
            return Err(ProtobufError {
                message: fd.full_name().to_string(),
                field: Some(fd.number()),
                offset: base,
                kind: ProtobufErrorKind::Schema(fd.number()),
            });
        };
        let mut entry = DynamicMessage::new(entry_desc);
        self.merge(&entry_md, &mut entry, buf, base, depth + 1)?;
        let value_of = |n: u32, entry: &DynamicMessage<'a>| match entry.get(n) {
            Some(v) => v.clone(),
            None => default_value(entry_desc.field(n).map(|f| f.kind), self.ctx),
        };
        Ok((value_of(1, &entry), value_of(2, &entry)))
    }

    /// A scalar, string or bytes value of wire type `wt`.
    fn scalar(
        &self,
        fd: &FieldDescriptor,
        kind: Kind,
        r: &mut Reader<'a>,
        wt: u8,
    ) -> Result<Value<'a>, ProtobufErrorKind> {
        expect(wt, wire_type(kind), fd)?;
        read_scalar(kind, r, self.ctx)
    }

    /// Appends one occurrence of a repeated field (packed or not) to `list`.
    fn repeated(
        &self,
        fd: &FieldDescriptor,
        kind: Kind<'a>,
        r: &mut Reader<'a>,
        wt: u8,
        mut list: List<'a>,
        depth: u32,
    ) -> Result<List<'a>, Nested> {
        match kind {
            Kind::Message(d) => {
                expect(wt, LEN, fd).map_err(Nested::Here)?;
                let (bytes, start) = r.len_delimited().map_err(Nested::Here)?;
                let PKind::Message(inner_md) = fd.kind() else {
                    return Err(Nested::Here(ProtobufErrorKind::Schema(fd.number())));
                };
                let mut inner = DynamicMessage::new(d);
                self.merge(&inner_md, &mut inner, bytes, start, depth + 1)
                    .map_err(Nested::Inside)?;
                if let List::Messages(v) = &mut list {
                    v.push(inner);
                }
            }
            Kind::String | Kind::Bytes => {
                expect(wt, LEN, fd).map_err(Nested::Here)?;
                if let (Value::Bytes(b), List::Bytes(v)) =
                    (read_scalar(kind, r, self.ctx).map_err(Nested::Here)?, &mut list)
                {
                    v.push(b);
                }
            }
            k if wt == LEN => {
                // Packed: values back to back in one length-delimited field.
                let (bytes, start) = r.len_delimited().map_err(Nested::Here)?;
                let mut packed = Reader {
                    buf: bytes,
                    pos: 0,
                    base: start,
                };
                read_packed(k, &mut packed, &mut list, self.ctx).map_err(Nested::Here)?;
            }
            k => {
                expect(wt, wire_type(k), fd).map_err(Nested::Here)?;
                let v = read_scalar(k, r, self.ctx).map_err(Nested::Here)?;
                let pushed = list.push(v);
                debug_assert!(pushed, "read_scalar returns the list's kind");
            }
        }
        Ok(list)
    }
}

/// Most elements reserved ahead for a packed run: its byte length bounds its element count,
/// but a hostile length must not decide a large allocation (the list grows past this as
/// elements actually arrive).
const PACKED_RESERVE: usize = 1 << 16;

/// Appends the packed run `r` (all of it) to `list`: one loop per kind, each value pushed
/// straight into the list's typed vector.
fn read_packed<'a>(
    kind: Kind,
    r: &mut Reader<'a>,
    list: &mut List<'a>,
    ctx: &'a Context,
) -> Result<(), ProtobufErrorKind> {
    let end = r.buf.len();
    macro_rules! each {
        ($v:expr, $read:expr) => {{
            $v.reserve(end.min(PACKED_RESERVE));
            while r.pos < end {
                $v.push($read);
            }
            Ok(())
        }};
    }
    match (kind, list) {
        (Kind::UInt32, List::U32(v)) => each!(v, r.varint()? as u32),
        (Kind::Int32 | Kind::Enum, List::I32(v)) => each!(v, r.varint()? as i32),
        (Kind::UInt64, List::U64(v)) => each!(v, r.varint()?),
        (Kind::Int64, List::I64(v)) => each!(v, r.varint()? as i64),
        (Kind::Bool, List::Bool(v)) => each!(v, r.varint()? != 0),
        (Kind::SInt32, List::I32(v)) => each!(v, {
            let n = r.varint()? as u32;
            (n >> 1) as i32 ^ -((n & 1) as i32)
        }),
        (Kind::SInt64, List::I64(v)) => each!(v, {
            let n = r.varint()?;
            (n >> 1) as i64 ^ -((n & 1) as i64)
        }),
        (Kind::Fixed32, List::U32(v)) => each!(v, u32::from_le_bytes(r.fixed()?)),
        (Kind::SFixed32, List::I32(v)) => each!(v, i32::from_le_bytes(r.fixed()?)),
        (Kind::Float, List::F32(v)) => each!(v, f32::from_le_bytes(r.fixed()?)),
        (Kind::Fixed64, List::U64(v)) => each!(v, u64::from_le_bytes(r.fixed()?)),
        (Kind::SFixed64, List::I64(v)) => each!(v, i64::from_le_bytes(r.fixed()?)),
        (Kind::Double, List::F64(v)) => each!(v, f64::from_le_bytes(r.fixed()?)),
        (kind, list) => {
            // Not a packable scalar list (the descriptor would be wrong): one value at a time.
            while r.pos < end {
                let v = read_scalar(kind, r, ctx)?;
                if !list.push(v) {
                    return Err(ProtobufErrorKind::WireType {
                        found: LEN,
                        kind: "packed list of another kind",
                    });
                }
            }
            Ok(())
        }
    }
}

/// An error of a repeated field: in its own bytes, or inside a nested message (already named).
enum Nested {
    Here(ProtobufErrorKind),
    Inside(ProtobufError),
}

fn expect(found: u8, want: u8, fd: &FieldDescriptor) -> Result<(), ProtobufErrorKind> {
    if found == want {
        Ok(())
    } else {
        Err(ProtobufErrorKind::WireType {
            found,
            kind: kind_name(fd),
        })
    }
}

fn kind_name(fd: &FieldDescriptor) -> &'static str {
    match fd.kind() {
        PKind::Double => "double",
        PKind::Float => "float",
        PKind::Int32 => "int32",
        PKind::Int64 => "int64",
        PKind::Uint32 => "uint32",
        PKind::Uint64 => "uint64",
        PKind::Sint32 => "sint32",
        PKind::Sint64 => "sint64",
        PKind::Fixed32 => "fixed32",
        PKind::Fixed64 => "fixed64",
        PKind::Sfixed32 => "sfixed32",
        PKind::Sfixed64 => "sfixed64",
        PKind::Bool => "bool",
        PKind::String => "string",
        PKind::Bytes => "bytes",
        PKind::Message(_) => "message",
        PKind::Enum(_) => "enum",
    }
}

fn wire_type(kind: Kind) -> u8 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::SFixed64 => I64,
        Kind::Float | Kind::Fixed32 | Kind::SFixed32 => I32,
        Kind::String | Kind::Bytes | Kind::Message(_) => LEN,
        _ => VARINT,
    }
}

fn read_scalar<'a>(kind: Kind, r: &mut Reader<'a>, ctx: &'a Context) -> Result<Value<'a>, ProtobufErrorKind> {
    Ok(match kind {
        Kind::Bool => Value::Bool(r.varint()? != 0),
        // int32 and enums are sign-extended to 64 bits on the wire; the low 32 bits are the value.
        Kind::Int32 | Kind::Enum => Value::I32(r.varint()? as i32),
        Kind::Int64 => Value::I64(r.varint()? as i64),
        Kind::UInt32 => Value::U32(r.varint()? as u32),
        Kind::UInt64 => Value::U64(r.varint()?),
        Kind::SInt32 => {
            let n = r.varint()? as u32;
            Value::I32((n >> 1) as i32 ^ -((n & 1) as i32))
        }
        Kind::SInt64 => {
            let n = r.varint()?;
            Value::I64((n >> 1) as i64 ^ -((n & 1) as i64))
        }
        Kind::Fixed32 => Value::U32(u32::from_le_bytes(r.fixed()?)),
        Kind::SFixed32 => Value::I32(i32::from_le_bytes(r.fixed()?)),
        Kind::Float => Value::F32(f32::from_le_bytes(r.fixed()?)),
        Kind::Fixed64 => Value::U64(u64::from_le_bytes(r.fixed()?)),
        Kind::SFixed64 => Value::I64(i64::from_le_bytes(r.fixed()?)),
        Kind::Double => Value::F64(f64::from_le_bytes(r.fixed()?)),
        Kind::String => {
            let (b, _) = r.len_delimited()?;
            let s = std::str::from_utf8(b).map_err(|_| ProtobufErrorKind::InvalidUtf8)?;
            Value::Bytes(HybridBytes::new(s.as_bytes(), ctx))
        }
        Kind::Bytes => Value::Bytes(HybridBytes::new(r.len_delimited()?.0, ctx)),
        Kind::Message(_) => unreachable!("messages are decoded by Decoder::merge"),
    })
}

/// The default of a kind (a map entry's missing key or value).
fn default_value<'a>(kind: Option<Kind<'a>>, ctx: &'a Context) -> Value<'a> {
    match kind {
        Some(Kind::Bool) => Value::Bool(false),
        Some(Kind::Int64 | Kind::SInt64 | Kind::SFixed64) => Value::I64(0),
        Some(Kind::UInt32 | Kind::Fixed32) => Value::U32(0),
        Some(Kind::UInt64 | Kind::Fixed64) => Value::U64(0),
        Some(Kind::Float) => Value::F32(0.0),
        Some(Kind::Double) => Value::F64(0.0),
        Some(Kind::String | Kind::Bytes) => Value::Bytes(HybridBytes::new(&[], ctx)),
        Some(Kind::Message(d)) => Value::Message(DynamicMessage::new(d)),
        _ => Value::I32(0),
    }
}

// ---- encoding ----

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, number: u32, wt: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wt));
}

fn put_len(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A scalar's payload (no tag).
fn put_scalar(out: &mut Vec<u8>, kind: Kind, v: &Value<'_>) {
    match (kind, v) {
        (_, Value::Bool(b)) => put_varint(out, u64::from(*b)),
        (Kind::SInt32, Value::I32(x)) => put_varint(out, u64::from(((x << 1) ^ (x >> 31)) as u32)),
        (Kind::SFixed32, Value::I32(x)) => out.extend_from_slice(&x.to_le_bytes()),
        // int32 and enums: negative values are sign-extended to ten bytes.
        (_, Value::I32(x)) => put_varint(out, i64::from(*x) as u64),
        (Kind::SInt64, Value::I64(x)) => put_varint(out, ((x << 1) ^ (x >> 63)) as u64),
        (Kind::SFixed64, Value::I64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (_, Value::I64(x)) => put_varint(out, *x as u64),
        (Kind::Fixed32, Value::U32(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (_, Value::U32(x)) => put_varint(out, u64::from(*x)),
        (Kind::Fixed64, Value::U64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (_, Value::U64(x)) => put_varint(out, *x),
        (_, Value::F32(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (_, Value::F64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        _ => {}
    }
}

fn encode_value(out: &mut Vec<u8>, fd: &FieldDescriptor, kind: Kind, number: u32, v: &Value<'_>) {
    match (v, fd.kind()) {
        (Value::Message(inner), PKind::Message(md)) => put_len(out, number, &encode(&md, inner)),
        (Value::Bytes(b), _) => put_len(out, number, b.as_slice()),
        (v, _) => {
            put_tag(out, number, wire_type(kind));
            put_scalar(out, kind, v);
        }
    }
}

/// The elements of a list of scalars, as values.
fn scalar_values<'a>(list: &List<'a>) -> Vec<Value<'a>> {
    match list {
        List::Bool(l) => l.iter().map(|x| Value::Bool(*x)).collect(),
        List::I32(l) => l.iter().map(|x| Value::I32(*x)).collect(),
        List::I64(l) => l.iter().map(|x| Value::I64(*x)).collect(),
        List::U32(l) => l.iter().map(|x| Value::U32(*x)).collect(),
        List::U64(l) => l.iter().map(|x| Value::U64(*x)).collect(),
        List::F32(l) => l.iter().map(|x| Value::F32(*x)).collect(),
        List::F64(l) => l.iter().map(|x| Value::F64(*x)).collect(),
        List::Bytes(_) | List::Messages(_) => Vec::new(),
    }
}

fn encode_into(md: &MessageDescriptor, m: &DynamicMessage<'_>, out: &mut Vec<u8>) {
    let desc = m.desc();
    for (number, v) in m.iter() {
        let (Some(fd), Some(f)) = (md.get_field(number), desc.field(number)) else {
            continue;
        };
        match v {
            Value::List(List::Messages(entries)) if fd.is_map() => {
                let PKind::Message(entry_md) = fd.kind() else {
                    continue;
                };
                for entry in entries {
                    let mut body = Vec::new();
                    for n in [1, 2] {
                        if let (Some(efd), Some(ef), Some(ev)) =
                            (entry_md.get_field(n), entry.desc().field(n), entry.get(n))
                        {
                            encode_value(&mut body, &efd, ef.kind, n, ev);
                        }
                    }
                    put_len(out, number, &body);
                }
            }
            Value::List(List::Messages(items)) => {
                let PKind::Message(item_md) = fd.kind() else {
                    continue;
                };
                for item in items {
                    put_len(out, number, &encode(&item_md, item));
                }
            }
            Value::List(List::Bytes(items)) => {
                for b in items {
                    put_len(out, number, b.as_slice());
                }
            }
            Value::List(list) => {
                let values = scalar_values(list);
                if fd.is_packed() {
                    let mut body = Vec::new();
                    for v in &values {
                        put_scalar(&mut body, f.kind, v);
                    }
                    put_len(out, number, &body);
                } else {
                    for v in &values {
                        encode_value(out, &fd, f.kind, number, v);
                    }
                }
            }
            v => {
                if implicit_presence(&fd) && is_default(v) {
                    continue;
                }
                encode_value(out, &fd, f.kind, number, v);
            }
        }
    }
}
