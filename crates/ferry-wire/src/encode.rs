//! Encoding: the [`Encode`] trait that message types implement, and the object interface
//! ([`Outgoing`]) that transports call for serialize-and-send.
//!
//! A message type implements one method, [`Encode::visit`], which hands each present field to a
//! [`Visitor`] in ascending field-number order. The runtime's visitors do the rest: one computes
//! the [`Layout`], one writes the header segment (headers, scalars, copied data), one lists the
//! zero-copy entries. All three walk the fields in the same order, so the offsets the writer
//! assigns to zero-copy data match the order in which [`Outgoing::for_each_zero_copy`] reports
//! them. Nothing on this path allocates.
//!
//! That generic visitor path is what [`DynamicMessage`](crate::DynamicMessage) and hand-written
//! types use. Generated types (and the sample [`Record`](crate::sample::Record)) also override
//! [`Encode::size_into`] and [`Encode::write_into`] with straight-line code over their fields
//! that calls the small helpers of [`Sizes`], [`Header`], [`Entries`] and [`Writer`]:
//! one sizing pass without visitors, one writing pass that writes each header with a single
//! bounds check, and, through [`Outgoing::write_head_gather`], the zero-copy entries listed
//! during that pass instead of in another walk. Both paths produce identical bytes
//! ([`VisitorPath`] forces the generic one, for tests).

use std::collections::BTreeMap;
use std::io::IoSlice;

use ferry_buf::SharedBuf;

use crate::hybrid::{AsHybrid, HybridBytes, HybridStr};
use crate::layout::{self, ALIGN, CHUNK_LEN, ENTRY_LEN, PREAMBLE_LEN};
use crate::scalar::Scalar;

mod direct;

pub use direct::{Entries, Header, Reserved, Shape, Sizes};

/// Receives the present fields of a message, in ascending field-number order.
///
/// Empty lists must not be passed (an absent repeated field is the empty list).
pub trait Visitor<'a> {
    /// A singular scalar (including enums, as `i32`).
    fn scalar<T: Scalar>(&mut self, field: u32, value: T);
    /// A singular `bytes` or `string`.
    fn bytes(&mut self, field: u32, value: &HybridBytes<'a>);
    /// A singular nested message.
    fn message<M: Encode<'a> + ?Sized>(&mut self, field: u32, value: &M);
    /// A repeated scalar, packed.
    fn scalars<T: Scalar>(&mut self, field: u32, values: &[T]);
    /// A repeated `bytes` or `string`.
    fn bytes_list<B: AsHybrid<'a>>(&mut self, field: u32, values: &[B]);
    /// A repeated message (or a map, as its entries).
    fn messages<M, I>(&mut self, field: u32, values: I)
    where
        M: Encode<'a>,
        I: ExactSizeIterator<Item = M>;
}

/// A message type that can be encoded.
///
/// [`visit`](Self::visit) is the one required method. [`size_into`](Self::size_into) and
/// [`write_into`](Self::write_into) default to the generic visitor path; generated code
/// overrides them with straight-line code that must produce exactly the same sizes and bytes.
pub trait Encode<'a> {
    /// Passes every present field to `v`, in ascending field-number order.
    fn visit<V: Visitor<'a>>(&self, v: &mut V);

    /// The name of the first proto2 `required` field that is not set, if any: encoding such a
    /// message fails with [`EncodeError::MissingRequired`] (a decoder would reject it).
    fn missing_required(&self) -> Option<&str> {
        None
    }

    /// Adds this message's bytes (its header, copied data, nested messages) and zero-copy
    /// entries to `s`; returns the shape of its own header. Default: one visitor walk.
    #[inline]
    fn size_into(&self, s: &mut Sizes) -> Shape {
        let mut v = Sizer {
            s,
            p: Presence::default(),
        };
        self.visit(&mut v);
        let shape = v.p.shape();
        s.header(shape)
    }

    /// Reserves this message's header at the writer's next free offset, writes its header and
    /// data, and returns its range entry. Default: the visitor walks (presence, then header).
    #[inline]
    fn write_into(&self, w: &mut Writer<'_>) -> u64 {
        w.nested_generic(self)
    }
}

impl<'a, M: Encode<'a> + ?Sized> Encode<'a> for &M {
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        (**self).visit(v)
    }
    fn missing_required(&self) -> Option<&str> {
        (**self).missing_required()
    }
    #[inline]
    fn size_into(&self, s: &mut Sizes) -> Shape {
        (**self).size_into(s)
    }
    #[inline]
    fn write_into(&self, w: &mut Writer<'_>) -> u64 {
        (**self).write_into(w)
    }
}

impl<'a, M: Encode<'a> + ?Sized> Encode<'a> for Box<M> {
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        (**self).visit(v)
    }
    fn missing_required(&self) -> Option<&str> {
        (**self).missing_required()
    }
    #[inline]
    fn size_into(&self, s: &mut Sizes) -> Shape {
        (**self).size_into(s)
    }
    #[inline]
    fn write_into(&self, w: &mut Writer<'_>) -> u64 {
        (**self).write_into(w)
    }
}

/// Encodes `M` through the generic visitor path only, nested messages included (it forwards
/// [`Encode::visit`] and nothing else): what tests compare a generated encoder against.
#[derive(Debug, Clone, Copy)]
pub struct VisitorPath<M>(pub M);

impl<'a, M: Encode<'a>> Encode<'a> for VisitorPath<M> {
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        self.0.visit(&mut ForceGeneric(v))
    }
    fn missing_required(&self) -> Option<&str> {
        self.0.missing_required()
    }
}

/// Passes fields through, wrapping each nested message in [`VisitorPath`].
struct ForceGeneric<'v, V>(&'v mut V);

impl<'a, V: Visitor<'a>> Visitor<'a> for ForceGeneric<'_, V> {
    fn scalar<T: Scalar>(&mut self, field: u32, value: T) {
        self.0.scalar(field, value)
    }
    fn bytes(&mut self, field: u32, value: &HybridBytes<'a>) {
        self.0.bytes(field, value)
    }
    fn message<M: Encode<'a> + ?Sized>(&mut self, field: u32, value: &M) {
        self.0.message(field, &VisitorPath(value))
    }
    fn scalars<T: Scalar>(&mut self, field: u32, values: &[T]) {
        self.0.scalars(field, values)
    }
    fn bytes_list<B: AsHybrid<'a>>(&mut self, field: u32, values: &[B]) {
        self.0.bytes_list(field, values)
    }
    fn messages<M, I>(&mut self, field: u32, values: I)
    where
        M: Encode<'a>,
        I: ExactSizeIterator<Item = M>,
    {
        self.0.messages(field, values.map(VisitorPath))
    }
}

/// A value that can stand as a map key or value (field 1 or 2 of a map entry).
pub trait FieldValue<'a> {
    /// Visits this value as field `field`.
    fn visit_as<V: Visitor<'a>>(&self, field: u32, v: &mut V);
}

impl<'a, T: Scalar> FieldValue<'a> for T {
    fn visit_as<V: Visitor<'a>>(&self, field: u32, v: &mut V) {
        v.scalar(field, *self)
    }
}
impl<'a> FieldValue<'a> for HybridBytes<'a> {
    fn visit_as<V: Visitor<'a>>(&self, field: u32, v: &mut V) {
        v.bytes(field, self)
    }
}
impl<'a> FieldValue<'a> for HybridStr<'a> {
    fn visit_as<V: Visitor<'a>>(&self, field: u32, v: &mut V) {
        v.bytes(field, self.as_bytes())
    }
}

/// One map entry as a message: key = field 1, value = field 2, both always present.
pub struct MapEntry<'m, K, V>(pub &'m K, pub &'m V);

impl<'a, K: FieldValue<'a>, V: FieldValue<'a>> Encode<'a> for MapEntry<'_, K, V> {
    fn visit<Vis: Visitor<'a>>(&self, v: &mut Vis) {
        self.0.visit_as(1, v);
        self.1.visit_as(2, v);
    }
}

/// Visits a map field; entries go out in ascending key order, as the format requires.
pub fn visit_map<'a, K, Val, Vis>(v: &mut Vis, field: u32, map: &BTreeMap<K, Val>)
where
    K: FieldValue<'a>,
    Val: FieldValue<'a>,
    Vis: Visitor<'a>,
{
    if !map.is_empty() {
        v.messages(field, map.iter().map(|(k, val)| MapEntry(k, val)));
    }
}

/// Sizes of an encoded message: a header segment, then `zero_copy_count` referenced buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// Bytes of the header segment: all headers, inline scalars and copied data.
    pub head_len: usize,
    /// Bytes referenced by zero-copy entries.
    pub zero_copy_len: usize,
    /// Number of zero-copy entries.
    pub zero_copy_count: usize,
    /// Shape of the root header, so that writing needs no second presence walk.
    root: Shape,
}

impl Layout {
    /// Total encoded length.
    pub fn total_len(&self) -> usize {
        self.head_len + self.zero_copy_len
    }
}

/// Errors of encoding.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The message would exceed the format's 4 GiB limit.
    #[error("message of {len} bytes exceeds the format limit of {max} bytes")]
    TooLarge {
        /// Encoded length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A message has more than 65535 presence chunks (field numbers spread over that many groups of 64).
    #[error("a message has {chunks} presence chunks; the format allows 65535")]
    TooManyChunks {
        /// Chunks needed.
        chunks: usize,
    },
    /// A proto2 `required` field is not set.
    #[error("required field `{field}` is not set")]
    MissingRequired {
        /// Name of the field.
        field: String,
    },
    /// The message type visited a field number out of ascending order, twice, or outside
    /// 1 ..= 2^29 - 1 (a bug in the type's `Encode` implementation).
    #[error("field {field} visited out of order or out of range")]
    FieldOrder {
        /// The offending field number.
        field: u32,
    },
    /// A zero-copy value's memory is no longer a shared pool buffer (cannot happen while the
    /// message borrows it; reported rather than assumed).
    #[error("a zero-copy value is no longer a shared pool buffer")]
    NotShared,
    /// The output slice does not match the layout (the message changed between `layout` and `write_head`?).
    #[error("header segment needs {needed} bytes, output has {got}")]
    OutputSize {
        /// Bytes the message needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
}

/// An outgoing message as a transport sees it: the object interface of serialize-and-send
/// (Cornflakes section 3.2.3), implemented for every [`Encode`] type.
///
/// It is dyn-compatible: a transport or an RPC layer can hold `&dyn Outgoing` (responses of
/// different types in one queue). Transports take `M: Outgoing + ?Sized`, so the same call
/// accepts a concrete message (statically dispatched) or a `dyn Outgoing`; the callbacks of
/// [`write_head_in`](Self::write_head_in) and [`for_each_zero_copy`](Self::for_each_zero_copy)
/// are `dyn` either way, once per zero-copy value (the visitors underneath already were).
pub trait Outgoing {
    /// Sizes of the header segment and the zero-copy entries (one pass over the fields).
    fn layout(&self) -> Layout;

    /// Writes the header segment into `out`, whose length must be `layout.head_len`.
    fn write_head(&self, layout: &Layout, out: &mut [u8]) -> Result<(), EncodeError>;

    /// Writes the header segment of a message that lives inside a larger region both peers
    /// map (a shared-memory transport): the segment will sit at offset `base` of the region,
    /// and each zero-copy value stays where it is, at the offset `locate` returns for it. Every
    /// offset is then region-relative; read it with [`View::decode_at`](crate::View::decode_at).
    ///
    /// Fails with [`EncodeError::NotShared`] if `locate` cannot place a zero-copy value, and
    /// with [`EncodeError::TooLarge`] if an offset would not fit in 32 bits.
    fn write_head_in(
        &self,
        layout: &Layout,
        out: &mut [u8],
        base: u64,
        locate: &mut dyn FnMut(&[u8]) -> Option<u64>,
    ) -> Result<(), EncodeError>;

    /// [`write_head`](Self::write_head), also calling `f` with the bytes of each zero-copy
    /// value in wire order (what [`for_each_zero_copy`](Self::for_each_zero_copy) reports),
    /// during the same pass over the fields. On an error, the values already passed to `f`
    /// mean nothing.
    fn write_head_gather(
        &self,
        layout: &Layout,
        out: &mut [u8],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), EncodeError>;

    /// Calls `f` with the bytes of each zero-copy value, in wire order: the gather entries
    /// after the header segment, pointing at the original memory.
    fn for_each_zero_copy(&self, f: &mut dyn FnMut(&[u8]));

    /// Encodes into one contiguous vector (copies the zero-copy data: for tests and tools).
    fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let layout = self.layout();
        let total = layout.total_len() as u64;
        if total > layout::MAX_MESSAGE_LEN {
            return Err(EncodeError::TooLarge {
                len: total,
                max: layout::MAX_MESSAGE_LEN,
            });
        }
        let mut out = vec![0u8; layout.head_len];
        self.write_head(&layout, &mut out)?;
        out.reserve(layout.zero_copy_len);
        self.for_each_zero_copy(&mut |b| out.extend_from_slice(b));
        Ok(out)
    }

    /// Appends a counted reference (refcount + 1) to each zero-copy value, in wire order: what
    /// a zero-copy send holds until the kernel's completion, beyond the message's lifetime.
    fn zero_copy_bufs(&self, out: &mut Vec<SharedBuf>) -> Result<(), EncodeError>;
}

impl<'a, M: Encode<'a>> Outgoing for M {
    #[inline]
    fn layout(&self) -> Layout {
        let mut s = Sizes::default();
        let root = self.size_into(&mut s);
        Layout {
            head_len: s.head,
            zero_copy_len: s.zc_len,
            zero_copy_count: s.zc_count,
            root,
        }
    }

    fn write_head(&self, layout: &Layout, out: &mut [u8]) -> Result<(), EncodeError> {
        write_head_with(self, layout, out, 0, Refs::After)
    }

    fn write_head_in(
        &self,
        layout: &Layout,
        out: &mut [u8],
        base: u64,
        locate: &mut dyn FnMut(&[u8]) -> Option<u64>,
    ) -> Result<(), EncodeError> {
        write_head_with(self, layout, out, base, Refs::Located(locate))
    }

    fn write_head_gather(
        &self,
        layout: &Layout,
        out: &mut [u8],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), EncodeError> {
        let refs = if layout.zero_copy_count == 0 {
            Refs::After
        } else {
            Refs::Listed(f)
        };
        write_head_with(self, layout, out, 0, refs)
    }

    fn for_each_zero_copy(&self, f: &mut dyn FnMut(&[u8])) {
        self.visit(&mut ZeroCopyLister {
            f: &mut |v: &HybridBytes<'a>| f(v.as_slice()),
        });
    }

    fn zero_copy_bufs(&self, out: &mut Vec<SharedBuf>) -> Result<(), EncodeError> {
        let mut lost = false;
        self.visit(&mut ZeroCopyLister {
            f: &mut |v: &HybridBytes<'a>| match v.to_shared() {
                Some(b) => out.push(b),
                None => lost = true,
            },
        });
        if lost { Err(EncodeError::NotShared) } else { Ok(()) }
    }
}

/// Where a zero-copy value sits in a shared region (`write_head_in`).
type Locate<'l> = dyn FnMut(&[u8]) -> Option<u64> + 'l;

/// Receives each zero-copy value as it is placed (`write_head_gather`).
type List<'l> = dyn FnMut(&[u8]) + 'l;

/// Where the writer puts zero-copy values.
enum Refs<'o> {
    /// After the segment, in walk order (`write_head`).
    After,
    /// After the segment, each also passed to the list (`write_head_gather`).
    Listed(&'o mut List<'o>),
    /// Where they are in a shared region (`write_head_in`).
    Located(&'o mut Locate<'o>),
}

/// An error found while writing, kept until the tree is written. When several are found, the
/// one of the lowest [`rank`](Self::rank) is reported (of one kind, the first found).
enum Fault {
    NotShared,
    MissingRequired(String),
    FieldOrder(u32),
    TooManyChunks(usize),
    /// Reported as [`EncodeError::OutputSize`] with the bytes the tree took.
    OutputSize,
}

impl Fault {
    fn rank(&self) -> u8 {
        match self {
            Fault::NotShared => 0,
            Fault::MissingRequired(_) => 1,
            Fault::FieldOrder(_) => 2,
            Fault::TooManyChunks(_) => 3,
            Fault::OutputSize => 4,
        }
    }

    /// Records this fault in `slot`, kept if it ranks before the one already there.
    #[cold]
    #[inline(never)]
    fn record(self, slot: &mut Option<Fault>) {
        if slot.as_ref().is_none_or(|old| self.rank() < old.rank()) {
            *slot = Some(self);
        }
    }
}

/// `write_head`, `write_head_in` and `write_head_gather`: offsets are `base +` their place in
/// the segment, and zero-copy values go where `refs` says. Inlined into its three callers: the
/// call and the `Writer` on its stack cost about 40 instructions a message, a tenth of size-64's
/// (`always`: in the bench binary, with more callers, a plain `#[inline]` was not taken).
#[inline(always)]
fn write_head_with<'a, 'o, M: Encode<'a> + ?Sized>(
    m: &M,
    layout: &Layout,
    out: &'o mut [u8],
    base: u64,
    refs: Refs<'o>,
) -> Result<(), EncodeError> {
    let total = layout.total_len() as u64;
    let end = base.saturating_add(layout.head_len as u64);
    if total > layout::MAX_MESSAGE_LEN || end > layout::MAX_MESSAGE_LEN {
        return Err(EncodeError::TooLarge {
            len: total.max(end),
            max: layout::MAX_MESSAGE_LEN,
        });
    }
    if out.len() != layout.head_len {
        return Err(EncodeError::OutputSize {
            needed: layout.head_len,
            got: out.len(),
        });
    }
    let mut w = Writer {
        out,
        copy: 0,
        zc: layout.head_len,
        base: base as usize,
        refs,
        root: layout.root,
        fault: None,
    };
    m.write_into(&mut w);
    let fault = match w.fault {
        None if w.copy == layout.head_len => return Ok(()),
        None => Fault::OutputSize,
        Some(fault) => fault,
    };
    Err(match fault {
        Fault::NotShared => EncodeError::NotShared,
        Fault::MissingRequired(field) => EncodeError::MissingRequired { field },
        Fault::FieldOrder(field) => EncodeError::FieldOrder { field },
        Fault::TooManyChunks(chunks) => EncodeError::TooManyChunks { chunks },
        Fault::OutputSize => EncodeError::OutputSize {
            needed: w.copy,
            got: layout.head_len,
        },
    })
}

/// Counts chunks and entries of one message, without descending.
#[derive(Default)]
struct Presence {
    chunks: usize,
    entries: usize,
    last_group: Option<u32>,
}

impl Presence {
    fn of<'a, M: Encode<'a> + ?Sized>(m: &M) -> Self {
        let mut p = Presence::default();
        m.visit(&mut p);
        p
    }

    fn shape(&self) -> Shape {
        Shape {
            chunks: self.chunks,
            entries: self.entries,
        }
    }

    fn header_len(&self) -> usize {
        layout::header_len(self.chunks, self.entries)
    }

    #[inline]
    fn see(&mut self, field: u32) {
        let g = layout::group_of(field);
        if self.last_group != Some(g) {
            debug_assert!(self.last_group.is_none_or(|last| last < g), "fields out of order");
            self.chunks += 1;
            self.last_group = Some(g);
        }
        self.entries += 1;
    }
}

impl<'a> Visitor<'a> for Presence {
    fn scalar<T: Scalar>(&mut self, field: u32, _: T) {
        self.see(field)
    }
    fn bytes(&mut self, field: u32, _: &HybridBytes<'a>) {
        self.see(field)
    }
    fn message<M: Encode<'a> + ?Sized>(&mut self, field: u32, _: &M) {
        self.see(field)
    }
    fn scalars<T: Scalar>(&mut self, field: u32, _: &[T]) {
        self.see(field)
    }
    fn bytes_list<B: AsHybrid<'a>>(&mut self, field: u32, _: &[B]) {
        self.see(field)
    }
    fn messages<M: Encode<'a>, I: ExactSizeIterator<Item = M>>(&mut self, field: u32, _: I) {
        self.see(field)
    }
}

/// The generic sizing visitor: adds to `s`; `p` is the presence of the message being visited.
struct Sizer<'s> {
    s: &'s mut Sizes,
    p: Presence,
}

impl<'a> Visitor<'a> for Sizer<'_> {
    fn scalar<T: Scalar>(&mut self, field: u32, _: T) {
        self.p.see(field);
    }
    fn bytes(&mut self, field: u32, value: &HybridBytes<'a>) {
        self.p.see(field);
        self.s.bytes(value)
    }
    fn message<M: Encode<'a> + ?Sized>(&mut self, field: u32, value: &M) {
        self.p.see(field);
        value.size_into(self.s);
    }
    fn scalars<T: Scalar>(&mut self, field: u32, values: &[T]) {
        self.p.see(field);
        self.s.scalars(values)
    }
    fn bytes_list<B: AsHybrid<'a>>(&mut self, field: u32, values: &[B]) {
        self.p.see(field);
        self.s.bytes_list(values)
    }
    fn messages<M: Encode<'a>, I: ExactSizeIterator<Item = M>>(&mut self, field: u32, values: I) {
        self.p.see(field);
        self.s.messages(values)
    }
}

/// Writes the header segment of one message tree (what [`Encode::write_into`] is given).
/// `copy` is the next free offset of the copied region, `zc` the offset the next zero-copy
/// buffer will have. An out-of-range write or any other error records a fault instead
/// of panicking (out of range is possible only if the message changed after its layout was
/// taken); the fault is reported once the tree is written, so the hot path sets one field per
/// message and tests it once.
pub struct Writer<'o> {
    out: &'o mut [u8],
    copy: usize,
    zc: usize,
    /// Added to every offset written (the segment's place in a shared region).
    base: usize,
    /// Where zero-copy values go.
    refs: Refs<'o>,
    /// The root's header shape, from its layout (the generic path then needs no presence walk).
    root: Shape,
    fault: Option<Fault>,
}

/// The state of the header being written for one message.
struct HeaderCursor {
    /// Offset of the message's header.
    at: usize,
    /// Offset of the next entry.
    entry: usize,
    /// Index of the current chunk, if any.
    chunk: Option<usize>,
    group: u32,
    bits: u64,
    rank: u32,
    /// The last field number written.
    last: Option<u32>,
}

impl Writer<'_> {
    fn fault(&mut self, fault: Fault) {
        fault.record(&mut self.fault)
    }

    /// An out-of-range write, or a header whose presence does not match its layout.
    fn fail(&mut self) {
        Fault::OutputSize.record(&mut self.fault)
    }

    #[inline]
    fn put(&mut self, at: usize, data: &[u8]) {
        match self.out.get_mut(at..at + data.len()) {
            Some(dst) => dst.copy_from_slice(data),
            None => self.fail(),
        }
    }

    #[inline]
    fn put_u64(&mut self, at: usize, v: u64) {
        self.put(at, &v.to_le_bytes())
    }

    /// Reserves `len` bytes in the copied region and returns the slice of `align(len)` bytes,
    /// its padding already zeroed (one 8-byte store: the caller's data then overwrites the
    /// front of that word).
    #[inline]
    fn reserve(&mut self, len: usize) -> (usize, Option<&mut [u8]>) {
        let at = self.copy;
        let end = at + layout::align(len);
        self.copy = end;
        let mut dst = self.out.get_mut(at..end);
        match dst.as_deref_mut() {
            Some(d) if len % ALIGN != 0 => {
                let n = d.len();
                d[n - ALIGN..].copy_from_slice(&[0; ALIGN]);
            }
            Some(_) => {}
            None => Fault::OutputSize.record(&mut self.fault),
        }
        (at, dst)
    }

    /// The range entry for `len` bytes at `at` in the segment (or past it).
    #[inline]
    fn range(&self, at: usize, len: usize) -> u64 {
        // `base + head_len + zero-copy bytes` was checked against 4 GiB before writing.
        layout::range_entry((self.base + at) as u32, len as u32)
    }

    /// Places a bytes value and returns its range entry (always inlined: it runs once per
    /// value, and the compiler stopped inlining it on its own when `reference` grew a match).
    #[inline(always)]
    fn place(&mut self, b: &HybridBytes<'_>) -> u64 {
        let (data, zero_copy) = b.parts();
        if zero_copy {
            return self.reference(data);
        }
        self.copy_in(data)
    }

    /// Places a zero-copy value: located in the shared region, or next after the segment.
    #[inline]
    fn reference(&mut self, data: &[u8]) -> u64 {
        let len = data.len();
        match &mut self.refs {
            Refs::After => {}
            Refs::Listed(list) => list(data),
            Refs::Located(locate) => {
                let at = locate(data).filter(|&at| at.saturating_add(len as u64) <= layout::MAX_MESSAGE_LEN);
                let Some(at) = at else {
                    self.fault(Fault::NotShared);
                    return layout::range_entry(0, len as u32);
                };
                return layout::range_entry(at as u32, len as u32);
            }
        }
        let at = self.zc;
        self.zc += len;
        self.range(at, len)
    }

    /// Copies a value into the copied region (one bounds check, padding zeroed).
    #[inline]
    fn copy_in(&mut self, data: &[u8]) -> u64 {
        let len = data.len();
        if len == 0 {
            return layout::range_entry(0, 0);
        }
        let at = self.copy;
        let end = at + layout::align(len);
        self.copy = end;
        match self.out.get_mut(at..end) {
            Some(dst) => {
                // Zero the last word (padding), then copy over its front.
                if let Some(last) = dst.last_chunk_mut::<ALIGN>() {
                    *last = [0; ALIGN];
                }
                if let Some(d) = dst.get_mut(..len) {
                    d.copy_from_slice(data);
                }
            }
            None => self.fail(),
        }
        self.range(at, len)
    }

    /// The generic path of [`Encode::write_into`]: the root's presence comes from its layout
    /// (it alone is written at offset 0), a nested message's from a presence walk.
    pub(crate) fn nested_generic<'a, M: Encode<'a> + ?Sized>(&mut self, m: &M) -> u64 {
        let p = if self.copy == 0 {
            Presence {
                chunks: self.root.chunks,
                entries: self.root.entries,
                last_group: None,
            }
        } else {
            Presence::of(m)
        };
        let len = p.header_len();
        let (at, _) = self.reserve(len);
        self.write_message(at, m, &p);
        self.range(at, len)
    }

    /// Writes message `m` whose header starts at `at` (already reserved).
    fn write_message<'a, M: Encode<'a> + ?Sized>(&mut self, at: usize, m: &M, p: &Presence) {
        if let Some(field) = m.missing_required() {
            self.fault(Fault::MissingRequired(field.to_owned()));
        }
        if p.chunks > usize::from(u16::MAX) {
            self.fault(Fault::TooManyChunks(p.chunks));
        }
        let mut h = HeaderWriter {
            w: self,
            cur: HeaderCursor {
                at,
                entry: at + PREAMBLE_LEN + CHUNK_LEN * p.chunks,
                chunk: None,
                group: 0,
                bits: 0,
                rank: 0,
                last: None,
            },
        };
        m.visit(&mut h);
        h.finish_chunk();
        // The presence given must be the message's own (the layout may be stale).
        if h.cur.rank as usize != p.entries || h.cur.chunk.map_or(0, |i| i + 1) != p.chunks {
            self.fail();
        }
        self.put_u64(at, layout::preamble(p.chunks, p.entries));
    }
}

struct HeaderWriter<'w, 'o> {
    w: &'w mut Writer<'o>,
    cur: HeaderCursor,
}

impl HeaderWriter<'_, '_> {
    fn finish_chunk(&mut self) {
        if let Some(i) = self.cur.chunk {
            let at = self.cur.at + PREAMBLE_LEN + CHUNK_LEN * i;
            let c = &self.cur;
            let mut d = [0u8; CHUNK_LEN];
            d[..8].copy_from_slice(&layout::chunk_word(c.group, c.rank - c.bits.count_ones()).to_le_bytes());
            d[8..].copy_from_slice(&c.bits.to_le_bytes());
            self.w.put(at, &d);
        }
    }

    /// Records `field` as present and writes its entry.
    #[inline]
    fn entry(&mut self, field: u32, value: u64) {
        // The visitor contract: ascending, valid field numbers. A message type that breaks it
        // gets an error, never silently misplaced entries.
        let ascending = self.cur.last.is_none_or(|last| field > last);
        if !ascending || field == 0 || field > layout::MAX_FIELD_NUMBER {
            self.w.fault(Fault::FieldOrder(field));
        }
        self.cur.last = Some(field);
        let g = layout::group_of(field);
        if self.cur.chunk.is_none() || self.cur.group != g {
            self.finish_chunk();
            self.cur.chunk = Some(self.cur.chunk.map_or(0, |i| i + 1));
            self.cur.group = g;
            self.cur.bits = 0;
        }
        self.cur.bits |= layout::bit_of(field);
        self.cur.rank += 1;
        let at = self.cur.entry;
        self.cur.entry += ENTRY_LEN;
        self.w.put_u64(at, value);
    }
}

impl<'a> Visitor<'a> for HeaderWriter<'_, '_> {
    fn scalar<T: Scalar>(&mut self, field: u32, value: T) {
        self.entry(field, value.to_entry())
    }
    fn bytes(&mut self, field: u32, value: &HybridBytes<'a>) {
        let e = self.w.place(value);
        self.entry(field, e)
    }
    fn message<M: Encode<'a> + ?Sized>(&mut self, field: u32, value: &M) {
        let e = value.write_into(self.w);
        self.entry(field, e)
    }
    fn scalars<T: Scalar>(&mut self, field: u32, values: &[T]) {
        let len = values.len() * T::WIDTH;
        let (at, dst) = self.w.reserve(len);
        if let Some(dst) = dst {
            for (chunk, v) in dst.chunks_exact_mut(T::WIDTH).zip(values) {
                v.write_packed(chunk);
            }
        }
        let e = self.w.range(at, len);
        self.entry(field, e)
    }
    fn bytes_list<B: AsHybrid<'a>>(&mut self, field: u32, values: &[B]) {
        let len = values.len() * ENTRY_LEN;
        let (at, _) = self.w.reserve(len);
        for (i, b) in values.iter().enumerate() {
            let e = self.w.place(b.as_hybrid());
            self.w.put_u64(at + i * ENTRY_LEN, e);
        }
        let e = self.w.range(at, len);
        self.entry(field, e)
    }
    fn messages<M: Encode<'a>, I: ExactSizeIterator<Item = M>>(&mut self, field: u32, values: I) {
        let len = values.len() * ENTRY_LEN;
        let (at, _) = self.w.reserve(len);
        let n = values.len();
        let mut count = 0;
        for (i, m) in values.enumerate() {
            let e = m.write_into(self.w);
            self.w.put_u64(at + i * ENTRY_LEN, e);
            count += 1;
        }
        if count != n {
            self.w.fail(); // an iterator that misreported its length
        }
        let e = self.w.range(at, len);
        self.entry(field, e)
    }
}

const _: () = assert!(ALIGN == ENTRY_LEN && CHUNK_LEN % ALIGN == 0 && PREAMBLE_LEN % ALIGN == 0);

struct ZeroCopyLister<'f, F> {
    f: &'f mut F,
}

impl<'a, F: FnMut(&HybridBytes<'a>)> Visitor<'a> for ZeroCopyLister<'_, F> {
    fn scalar<T: Scalar>(&mut self, _: u32, _: T) {}
    fn bytes(&mut self, _: u32, value: &HybridBytes<'a>) {
        if value.is_zero_copy() {
            (self.f)(value)
        }
    }
    fn message<M: Encode<'a> + ?Sized>(&mut self, _: u32, value: &M) {
        value.visit(self)
    }
    fn scalars<T: Scalar>(&mut self, _: u32, _: &[T]) {}
    fn bytes_list<B: AsHybrid<'a>>(&mut self, _: u32, values: &[B]) {
        for v in values {
            let v = v.as_hybrid();
            if v.is_zero_copy() {
                (self.f)(v)
            }
        }
    }
    fn messages<M: Encode<'a>, I: ExactSizeIterator<Item = M>>(&mut self, _: u32, values: I) {
        for m in values {
            m.visit(self)
        }
    }
}

/// The gather list of an encoded message: its header segment, then each zero-copy buffer.
pub fn iovecs<'s>(head: &'s [u8], zero_copy: &'s [SharedBuf], out: &mut Vec<IoSlice<'s>>) {
    out.push(IoSlice::new(head));
    out.extend(zero_copy.iter().map(|b| IoSlice::new(b)));
}
