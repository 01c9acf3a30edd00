//! Validated, zero-copy views of encoded messages.

use core::fmt;
use core::marker::PhantomData;

use ferry_buf::SharedBuf;

use super::error::{DecodeError, DecodeErrorKind as K};
use crate::desc::{FieldDesc, Kind, Label, MessageDesc};
use crate::hybrid::{Context, HybridBytes};
use crate::layout::{self, CHUNK_LEN, ENTRY_LEN, MAX_FIELD_NUMBER, PREAMBLE_LEN, read_u16, read_u64};
use crate::scalar::Scalar;

/// Limits applied while validating peer bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest message accepted, in bytes (the format's own limit is 4 GiB - 1).
    pub max_message_len: u64,
    /// Deepest nesting of messages accepted (the root is depth 0); at most [`Limits::MAX_DEPTH`].
    pub max_depth: u32,
    /// Most fields and list elements, counted over the whole message (bounds validation work).
    pub max_elements: u64,
}

impl Limits {
    /// The deepest nesting any [`Limits`] allows: validation and readers recurse once per
    /// level, so this bounds their stack use (a larger `max_depth` is clamped to it).
    pub const MAX_DEPTH: u32 = 256;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_len: 64 << 20,
            max_depth: 64,
            max_elements: 1 << 22,
        }
    }
}

/// A validated view of one message (the root or a nested one) inside an encoded buffer.
///
/// Created only by [`View::decode`] / [`View::decode_shared`], which validate the whole message
/// against its descriptor first; accessors then read in place, copy nothing and never panic
/// (they return `None` or an empty list for anything they cannot read).
#[derive(Clone, Copy)]
pub struct View<'b> {
    root: &'b [u8],
    owner: Option<&'b SharedBuf>,
    desc: &'b MessageDesc<'b>,
    at: usize,
    chunks: usize,
}

impl fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View")
            .field("message", &self.desc.name)
            .field("header_at", &self.at)
            .field("chunks", &self.chunks)
            .finish_non_exhaustive()
    }
}

impl<'b> View<'b> {
    /// Validates `buf` as a `desc` message and returns its view. The view borrows both: a
    /// generated type's `&'static` descriptor, or one that a run-time schema owns (the view
    /// then cannot outlive the schema).
    #[inline]
    pub fn decode(buf: &'b [u8], desc: &'b MessageDesc<'b>, limits: &Limits) -> Result<Self, DecodeError> {
        Self::decode_inner(buf, 0, None, Extent::Buffer, desc, limits)
    }

    /// Validates the `desc` message whose root header sits at offset `at` of `region`, with
    /// region-relative offsets (written by
    /// [`Outgoing::write_head_in`](crate::Outgoing::write_head_in)): how a shared-memory
    /// transport reads a message in place, its zero-copy values wherever the sender put them
    /// in the region. `limits.max_message_len` bounds the message, not the region: the bytes
    /// of its root header and of every range it references (each reference counted, so
    /// overlapping references count again).
    #[inline]
    pub fn decode_at(
        region: &'b [u8],
        at: usize,
        desc: &'b MessageDesc<'b>,
        limits: &Limits,
    ) -> Result<Self, DecodeError> {
        Self::decode_inner(region, at, None, Extent::Referenced, desc, limits)
    }

    /// Like [`View::decode`]; `bytes` fields can then be taken as shared sub-buffers of `buf`.
    #[inline]
    pub fn decode_shared(
        buf: &'b SharedBuf,
        desc: &'b MessageDesc<'b>,
        limits: &Limits,
    ) -> Result<Self, DecodeError> {
        Self::decode_inner(buf, 0, Some(buf), Extent::Buffer, desc, limits)
    }

    fn decode_inner(
        root: &'b [u8],
        at: usize,
        owner: Option<&'b SharedBuf>,
        extent: Extent,
        desc: &'b MessageDesc<'b>,
        limits: &Limits,
    ) -> Result<Self, DecodeError> {
        let len = root.len() as u64;
        if at > root.len() {
            let kind = K::HeaderOutOfBounds {
                needed: PREAMBLE_LEN as u64,
                available: 0,
            };
            return Err(DecodeError::new(kind, at as u64));
        }
        let max = limits.max_message_len.min(layout::MAX_MESSAGE_LEN);
        if extent == Extent::Buffer && len > max {
            return Err(DecodeError::new(K::MessageTooLarge { len, max }, 0));
        }
        let limits = &Limits {
            max_depth: limits.max_depth.min(Limits::MAX_DEPTH),
            ..*limits
        };
        let mut v = Validator {
            root,
            limits,
            budget: limits.max_elements,
            cursor: at,
            referenced: 0,
            max_referenced: if extent == Extent::Referenced {
                max
            } else {
                u64::MAX
            },
            error: None,
        };
        let mut validate = || {
            let chunks = v.header(at, None)?;
            v.reference(at, (v.cursor - at) as u64)?;
            let view = View {
                root,
                owner,
                desc,
                at,
                chunks,
            };
            v.message(&view, 0)?;
            Ok(view)
        };
        validate().map_err(|Failed| v.error.take().expect("a failed check records its error"))
    }

    /// The message's descriptor.
    pub fn desc(&self) -> &'b MessageDesc<'b> {
        self.desc
    }

    /// The received buffer, for views made by [`View::decode_shared`].
    pub fn owner(&self) -> Option<&'b SharedBuf> {
        self.owner
    }

    /// The whole buffer this view reads from: the encoded root message, or the region given to
    /// [`View::decode_at`].
    pub fn root(&self) -> &'b [u8] {
        self.root
    }

    fn entries_at(&self) -> usize {
        self.at + PREAMBLE_LEN + CHUNK_LEN * self.chunks
    }

    /// The chunk descriptors of this view's header.
    #[inline]
    fn table(&self) -> layout::Words<'b, CHUNK_LEN> {
        chunk_table(self.root, self.at, self.chunks)
    }

    /// The bytes from this view's entries on (its entries, then whatever follows them).
    #[inline]
    fn entries(&self) -> &'b [u8] {
        self.root.get(self.entries_at()..).unwrap_or_default()
    }

    /// The entry of `field` and its offset, if present.
    #[inline]
    fn entry_at(&self, field: u32) -> Option<(usize, u64)> {
        let group = layout::group_of(field);
        let chunk = self
            .table()
            .map(|c| layout::split_chunk(u128::from_le_bytes(*c)))
            .find(|c| c.0 >= group)?;
        entry_in(chunk, self.entries(), self.entries_at(), field)
    }

    /// The raw 8-byte entry of `field`, if present.
    #[inline]
    pub fn entry(&self, field: u32) -> Option<u64> {
        self.entry_at(field).map(|(_, e)| e)
    }

    /// Whether `field` is present.
    pub fn has(&self, field: u32) -> bool {
        self.entry(field).is_some()
    }

    /// A singular scalar.
    #[inline]
    pub fn scalar<T: Scalar>(&self, field: u32) -> Option<T> {
        self.entry(field).map(T::from_entry)
    }

    #[inline]
    fn range(&self, entry: u64) -> Option<&'b [u8]> {
        let (off, len) = layout::split_range(entry);
        let start = off as usize;
        self.root.get(start..start.checked_add(len as usize)?)
    }

    /// A singular `bytes` (or the raw bytes of a `string`), in place.
    #[inline]
    pub fn bytes(&self, field: u32) -> Option<&'b [u8]> {
        self.range(self.entry(field)?)
    }

    /// A singular `bytes` as a shared sub-buffer of the received buffer (views made by
    /// [`View::decode_shared`] only).
    pub fn shared(&self, field: u32) -> Option<SharedBuf> {
        self.owner?.slice_ref(self.bytes(field)?)
    }

    /// A singular `string`, UTF-8 checked now. `Ok(None)` when absent. The error's path starts
    /// at this view's message; see [`View::within_field`] for the fields above it.
    pub fn str(&self, field: u32) -> Result<Option<&'b str>, DecodeError> {
        let Some((at, e)) = self.entry_at(field) else {
            return Ok(None);
        };
        let b = self.range(e).unwrap_or_default();
        match core::str::from_utf8(b) {
            Ok(s) => Ok(Some(s)),
            Err(err) => {
                let name = self.desc.field(field).map_or("?", |f| f.name);
                Err(DecodeError::invalid_utf8(
                    err.valid_up_to(),
                    at as u64,
                    self.desc.name,
                    name,
                ))
            }
        }
    }

    /// Adds field `field` of this view's message to the front of `err`'s path.
    ///
    /// A view knows no enclosing messages, so an error from one of its accessors (a string
    /// that is not UTF-8, section 8.3 of the wire format) names the path from this view down.
    /// A reader that descends into field `field` and gets an error back calls this on the
    /// way out, level by level, so the error names the whole path from the root as a
    /// validation error does: `Outer.inner > Inner.s`. Called only on the error path
    /// (`result.map_err(|e| view.within_field(n, e))`), so reading costs nothing more.
    #[cold]
    #[inline(never)]
    pub fn within_field(&self, field: u32, err: DecodeError) -> DecodeError {
        match self.desc.field(field) {
            Some(f) => err.within(self.desc.name, f.name),
            None => err.within(self.desc.name, &field.to_string()),
        }
    }

    /// A `bytes` field as an outgoing value: a zero-copy reference into the received buffer
    /// when it reaches the context's threshold and the view was decoded from a shared buffer
    /// (a counted sub-buffer, or a borrow when the buffer is in the context's pool), else
    /// borrowed (copied when re-sent).
    pub fn hybrid(&self, field: u32, ctx: &'b Context) -> Option<HybridBytes<'b>> {
        Some(HybridBytes::received(self.bytes(field)?, self.owner, ctx))
    }

    /// A singular nested message of type `desc` (the descriptor of the field, as validated).
    pub fn message(&self, field: u32) -> Option<View<'b>> {
        let f = self.desc.field(field)?;
        let desc = match (f.kind, f.label) {
            (Kind::Message(d), Label::Optional | Label::Required) => d,
            _ => return None,
        };
        let e = self.entry(field)?;
        self.child(layout::split_range(e).0 as usize, desc)
    }

    /// The bytes of repeated field `field` if the schema says it is repeated and `kind_ok`
    /// accepts its kind: only such fields were validated as lists. Empty otherwise.
    fn list(&self, field: u32, kind_ok: impl Fn(Kind) -> bool) -> &'b [u8] {
        match self.desc.field(field) {
            Some(f) if f.label == Label::Repeated && kind_ok(f.kind) => {
                self.entry(field).and_then(|e| self.range(e)).unwrap_or_default()
            }
            _ => &[],
        }
    }

    fn child(&self, at: usize, desc: &'b MessageDesc<'b>) -> Option<View<'b>> {
        let chunks = read_u16(self.root, at)? as usize;
        Some(View {
            root: self.root,
            owner: self.owner,
            desc,
            at,
            chunks,
        })
    }

    /// A repeated scalar (empty when absent, or when the schema's field is not a repeated
    /// scalar of `T`'s width). Accessors only read what validation checked.
    pub fn scalars<T: Scalar>(&self, field: u32) -> ScalarList<'b, T> {
        let data = self.list(field, |k| k.packed_width() == Some(T::WIDTH));
        ScalarList {
            data,
            _t: PhantomData,
        }
    }

    /// A repeated `bytes` or `string` (empty when absent).
    pub fn bytes_list(&self, field: u32) -> BytesList<'b> {
        let ptrs = self.list(field, |k| matches!(k, Kind::Bytes | Kind::String));
        BytesList {
            root: self.root,
            owner: self.owner,
            ptrs,
        }
    }

    /// A repeated message or map (empty when absent).
    pub fn messages(&self, field: u32) -> MessageList<'b> {
        let (desc, ptrs) = match self.desc.field(field).map(|f| f.kind) {
            Some(Kind::Message(d)) => (d, self.list(field, |_| true)),
            _ => (self.desc, &[][..]),
        };
        MessageList {
            parent: *self,
            desc,
            ptrs,
        }
    }

    /// Present field numbers, ascending (known and unknown).
    pub fn present_fields(&self) -> impl Iterator<Item = u32> + use<'b> {
        self.table().flat_map(|c| {
            let (g, _, bits) = layout::split_chunk(u128::from_le_bytes(*c));
            (0..64u32)
                .filter(move |b| bits & (1 << b) != 0)
                .filter_map(move |b| g.checked_mul(64)?.checked_add(b))
        })
    }
}

/// A chunk descriptor as (group, rank base, bits).
type Chunk = (u32, u32, u64);

/// The chunk descriptors of the header at `at` with `chunks` chunks (empty if they are not all
/// in `root`).
#[inline]
fn chunk_table(root: &[u8], at: usize, chunks: usize) -> layout::Words<'_, CHUNK_LEN> {
    let start = at + PREAMBLE_LEN;
    layout::words(root.get(start..start + CHUNK_LEN * chunks).unwrap_or_default())
}

/// The present fields of a validated header, walked once in ascending order.
struct Present<'b> {
    chunks: layout::Words<'b, CHUNK_LEN>,
    /// The number of field 0 of the current chunk (64 times its group).
    first: u32,
    /// The current chunk's bits not yet passed; the lowest is the next present field.
    bits: u64,
    /// The entry index of that field.
    rank: usize,
}

impl<'b> Present<'b> {
    #[inline]
    fn new(table: layout::Words<'b, CHUNK_LEN>) -> Self {
        Present {
            chunks: table,
            first: 0,
            bits: 0,
            rank: 0,
        }
    }

    /// The entry index of `field` if it is present. Calls must ask for ascending numbers:
    /// the present fields below `field` are passed for good.
    #[inline]
    fn find(&mut self, field: u32) -> Option<usize> {
        loop {
            if self.bits == 0 {
                // The rank carries over: each chunk's rank base counts the bits before it.
                let (group, _, bits) = layout::split_chunk(u128::from_le_bytes(*self.chunks.next()?));
                self.first = group * layout::CHUNK_FIELDS;
                self.bits = bits;
                continue;
            }
            let number = self.first + self.bits.trailing_zeros();
            if number >= field {
                return (number == field).then_some(self.rank);
            }
            self.bits &= self.bits - 1;
            self.rank += 1;
        }
    }
}

/// The entry of `field` and its offset, if `chunk` (the first of its header's chunks whose
/// group is not below the field's) says it is present.
#[inline]
fn entry_in(chunk: Chunk, entries: &[u8], entries_at: usize, field: u32) -> Option<(usize, u64)> {
    let (group, base, bits) = chunk;
    let bit = layout::bit_of(field);
    if group != layout::group_of(field) || bits & bit == 0 {
        return None;
    }
    let rank = base as usize + (bits & (bit - 1)).count_ones() as usize;
    let e = layout::word::<ENTRY_LEN>(entries, rank)?;
    Some((entries_at + ENTRY_LEN * rank, u64::from_le_bytes(*e)))
}

/// The error of chunk `i` of the header at `header`, which broke one of the rules (checked in
/// the order of section 8.1, H6).
#[cold]
#[inline(never)]
fn chunk_error(
    header: usize,
    i: usize,
    group: u32,
    base: u32,
    bits: u64,
    next_group: u64,
    rank: u32,
) -> DecodeError {
    let chunk = i as u32;
    let kind = if u64::from(group) < next_group {
        K::ChunkOrder { chunk }
    } else if bits == 0 || (group == 0 && bits & 1 != 0) || group > layout::group_of(MAX_FIELD_NUMBER) {
        K::BadChunk { chunk }
    } else {
        K::RankMismatch {
            chunk,
            found: base,
            expected: rank,
        }
    };
    DecodeError::new(kind, (header + PREAMBLE_LEN + CHUNK_LEN * i) as u64)
}

/// A packed list of scalars, read in place.
#[derive(Clone, Copy)]
pub struct ScalarList<'b, T> {
    data: &'b [u8],
    _t: PhantomData<T>,
}

impl<'b, T: Scalar> ScalarList<'b, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len() / T::WIDTH
    }
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i`.
    pub fn get(&self, i: usize) -> Option<T> {
        let start = i.checked_mul(T::WIDTH)?;
        self.data
            .get(start..start.checked_add(T::WIDTH)?)
            .map(T::read_packed)
    }
    /// The elements.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + use<'b, T> {
        self.data.chunks_exact(T::WIDTH).map(T::read_packed)
    }
    /// The packed little-endian bytes.
    pub fn as_bytes(&self) -> &'b [u8] {
        self.data
    }
}

impl<T: Scalar> fmt::Debug for ScalarList<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A list of `bytes` or `string` values, read in place.
#[derive(Clone, Copy)]
pub struct BytesList<'b> {
    root: &'b [u8],
    owner: Option<&'b SharedBuf>,
    ptrs: &'b [u8],
}

impl<'b> BytesList<'b> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.ptrs.len() / ENTRY_LEN
    }
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn at(&self, ptr: &[u8; ENTRY_LEN]) -> &'b [u8] {
        let (off, len) = layout::split_range(u64::from_le_bytes(*ptr));
        let start = off as usize;
        start
            .checked_add(len as usize)
            .and_then(|end| self.root.get(start..end))
            .unwrap_or_default()
    }
    /// Element `i`.
    pub fn get(&self, i: usize) -> Option<&'b [u8]> {
        layout::word(self.ptrs, i).map(|p| self.at(p))
    }
    /// Element `i` as an outgoing value; see [`View::hybrid`].
    pub fn hybrid(&self, i: usize, ctx: &'b Context) -> Option<HybridBytes<'b>> {
        Some(HybridBytes::received(self.get(i)?, self.owner, ctx))
    }

    /// The elements as outgoing values, each as [`hybrid`](Self::hybrid) makes it (exact
    /// size: collected into one allocation of the right length).
    pub fn hybrids(&self, ctx: &'b Context) -> impl ExactSizeIterator<Item = HybridBytes<'b>> + use<'b> {
        let owner = self.owner;
        self.iter().map(move |b| HybridBytes::received(b, owner, ctx))
    }

    /// Element `i` as a shared sub-buffer (views from [`View::decode_shared`] only).
    pub fn shared(&self, i: usize) -> Option<SharedBuf> {
        self.owner?.slice_ref(self.get(i)?)
    }
    /// The elements.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'b [u8]> + use<'b> {
        let me = *self;
        layout::words(self.ptrs).map(move |p| me.at(p))
    }
    /// The elements as text, each UTF-8 checked.
    pub fn strs(&self) -> impl ExactSizeIterator<Item = Result<&'b str, core::str::Utf8Error>> + use<'b> {
        self.iter().map(core::str::from_utf8)
    }
}

impl fmt::Debug for BytesList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A list of nested messages (or map entries), each a lazy [`View`].
#[derive(Clone, Copy)]
pub struct MessageList<'b> {
    parent: View<'b>,
    desc: &'b MessageDesc<'b>,
    ptrs: &'b [u8],
}

impl<'b> MessageList<'b> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.ptrs.len() / ENTRY_LEN
    }
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn at(&self, ptr: &[u8; ENTRY_LEN]) -> Option<View<'b>> {
        let (off, _) = layout::split_range(u64::from_le_bytes(*ptr));
        self.parent.child(off as usize, self.desc)
    }
    /// Element `i`.
    pub fn get(&self, i: usize) -> Option<View<'b>> {
        self.at(layout::word(self.ptrs, i)?)
    }
    /// The elements.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = View<'b>> + use<'b> {
        let me = *self;
        // Validated lists always yield a view; the fallback keeps the iterator exact-size.
        let empty = View {
            root: &[],
            owner: None,
            desc: self.desc,
            at: 0,
            chunks: 0,
        };
        layout::words(self.ptrs).map(move |p| me.at(p).unwrap_or(empty))
    }
}

impl fmt::Debug for MessageList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// What `Limits::max_message_len` bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extent {
    /// The buffer holding the whole message.
    Buffer,
    /// The bytes the message references in a shared region (`decode_at`).
    Referenced,
}

/// Whole-message validation, run once by [`View::decode`].
///
/// Headers, pointer arrays and packed arrays ("structures") must lie at increasing,
/// non-overlapping offsets in walk order (`cursor` is the end of the last one). Without this
/// rule, many pointers could name one nested header and a small message would unfold into an
/// exponential tree; with it, decoded structure is bounded by the message length.
///
/// A failed check records its error in `error` and returns [`Failed`], so that the checks'
/// results stay a register wide on the path that does not fail.
struct Validator<'b, 'l> {
    root: &'b [u8],
    limits: &'l Limits,
    budget: u64,
    cursor: usize,
    /// Bytes referenced so far (root header included), against `max_referenced`.
    referenced: u64,
    max_referenced: u64,
    /// Why validation stopped, once a check returned [`Failed`].
    error: Option<DecodeError>,
}

/// A check failed; the error is in [`Validator::error`].
struct Failed;

/// What a check returns.
type Checked<T = ()> = Result<T, Failed>;

impl<'b> Validator<'b, '_> {
    /// Records `kind` at offset `at` as the reason validation stops.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, kind: K, at: usize) -> Failed {
        self.failed(DecodeError::new(kind, at as u64))
    }

    #[cold]
    fn failed(&mut self, err: DecodeError) -> Failed {
        self.error = Some(err);
        Failed
    }

    /// Adds field `field` of `desc` to the recorded error's path (while unwinding).
    #[cold]
    #[inline(never)]
    fn within(&mut self, desc: &MessageDesc<'_>, field: &FieldDesc<'_>) -> Failed {
        self.error = self.error.take().map(|e| e.within(desc.name, field.name));
        Failed
    }

    fn spend(&mut self, n: u64, at: usize) -> Checked {
        match self.budget.checked_sub(n) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => {
                let max = self.limits.max_elements;
                Err(self.fail(K::TooManyElements { max }, at))
            }
        }
    }

    /// Claims `[start, start + len)` as the next structure in walk order.
    fn claim(&mut self, entry_at: usize, start: usize, len: usize) -> Checked {
        if start < self.cursor {
            let kind = K::StructureOverlap {
                start: start as u64,
                previous_end: self.cursor as u64,
            };
            return Err(self.fail(kind, entry_at));
        }
        self.cursor = start + len;
        Ok(())
    }

    /// Checks the header at `at`; returns its chunk count.
    #[inline(always)]
    fn header(&mut self, at: usize, declared: Option<u64>) -> Checked<usize> {
        let available = (self.root.len() as u64).saturating_sub(at as u64);
        let Some(preamble) = read_u64(self.root, at) else {
            let kind = K::HeaderOutOfBounds {
                needed: PREAMBLE_LEN as u64,
                available,
            };
            return Err(self.fail(kind, at));
        };
        let (chunks, flags, entries) = layout::split_preamble(preamble);
        if flags != 0 {
            return Err(self.fail(K::UnknownFlags(flags), at));
        }
        let (chunks, entries) = (chunks as usize, u64::from(entries));
        let needed = (PREAMBLE_LEN + CHUNK_LEN * chunks) as u64 + ENTRY_LEN as u64 * entries;
        if needed > available {
            return Err(self.fail(K::HeaderOutOfBounds { needed, available }, at));
        }
        if let Some(declared) = declared {
            if declared != needed {
                let kind = K::HeaderLength {
                    declared,
                    actual: needed,
                };
                return Err(self.fail(kind, at));
            }
        }
        self.spend(entries, at)?;
        self.cursor = at + needed as usize;
        // In bounds: the whole header was checked above. One test per chunk; which rule a
        // chunk breaks is worked out only on the error path.
        let table = chunk_table(self.root, at, chunks);
        let mut rank = 0u32;
        let mut next_group = 0u64;
        for (i, c) in table.enumerate() {
            let (group, base, bits) = layout::split_chunk(u128::from_le_bytes(*c));
            let bad = u64::from(group) < next_group
                || bits == 0
                || bits & u64::from(group == 0) != 0
                || group > layout::group_of(MAX_FIELD_NUMBER)
                || base != rank;
            if bad {
                return Err(self.failed(chunk_error(at, i, group, base, bits, next_group, rank)));
            }
            rank += bits.count_ones();
            next_group = u64::from(group) + 1;
        }
        if u64::from(rank) != entries {
            let kind = K::EntryCount {
                found: entries as u32,
                expected: rank,
            };
            return Err(self.fail(kind, at));
        }
        Ok(chunks)
    }

    fn range(&mut self, at: usize, e: u64) -> Checked<(usize, usize)> {
        let (off, len) = layout::split_range(e);
        let message_len = self.root.len() as u64;
        if u64::from(off) + u64::from(len) > message_len {
            let kind = K::RangeOutOfBounds {
                offset: off,
                len,
                message_len,
            };
            return Err(self.fail(kind, at));
        }
        self.reference(at, u64::from(len))?;
        Ok((off as usize, len as usize))
    }

    /// Counts `len` referenced bytes against the message-size limit (`decode_at` only).
    fn reference(&mut self, at: usize, len: u64) -> Checked {
        self.referenced += len;
        if self.referenced > self.max_referenced {
            let kind = K::MessageTooLarge {
                len: self.referenced,
                max: self.max_referenced,
            };
            return Err(self.fail(kind, at));
        }
        Ok(())
    }

    /// Validates every known field of `view`; unknown fields are skipped. The schema's fields
    /// and the header's present fields are both in ascending order: one walk over both finds
    /// every entry, each present field's rank counted on the way (no lookup per field).
    fn message(&mut self, view: &View<'b>, depth: u32) -> Checked {
        let desc = view.desc;
        let entries = view.entries();
        let entries_at = view.entries_at();
        let mut present = Present::new(view.table());
        let mut oneofs_seen = 0u64;
        for (i, f) in desc.fields().iter().enumerate() {
            let rank = present.find(f.number);
            let Some((at, e)) = rank.and_then(|r| {
                Some((
                    entries_at + ENTRY_LEN * r,
                    u64::from_le_bytes(*layout::word::<ENTRY_LEN>(entries, r)?),
                ))
            }) else {
                if f.label == Label::Required {
                    self.fail(K::MissingRequired, view.at);
                    return Err(self.within(desc, f));
                }
                continue;
            };
            if let Some(o) = f.oneof {
                let mask = 1u64 << (o % 64);
                if o >= 64 || oneofs_seen & mask != 0 {
                    let earlier = desc.fields()[..i]
                        .iter()
                        .find(|g| g.oneof == Some(o) && view.has(g.number));
                    if let Some(first) = earlier {
                        let kind = K::OneofConflict {
                            first: first.number,
                            second: f.number,
                        };
                        self.fail(kind, at);
                        return Err(self.within(desc, f));
                    }
                }
                oneofs_seen |= mask;
            }
            if let Err(Failed) = self.field(view, f.kind, f.label, at, e, depth) {
                return Err(self.within(desc, f));
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn field(
        &mut self,
        view: &View<'b>,
        kind: Kind<'b>,
        label: Label,
        at: usize,
        e: u64,
        depth: u32,
    ) -> Checked {
        if label != Label::Repeated {
            return match kind {
                Kind::String | Kind::Bytes => self.range(at, e).map(|_| ()),
                Kind::Message(d) => self.nested(view, at, e, d, depth),
                _ => Ok(()),
            };
        }
        let (off, len) = self.range(at, e)?;
        let width = kind.packed_width().unwrap_or(ENTRY_LEN);
        if len % width != 0 {
            let kind = K::ListLength {
                len: len as u32,
                width: width as u32,
            };
            return Err(self.fail(kind, at));
        }
        let n = len / width;
        self.spend(n as u64, at)?;
        if n > 0 {
            self.claim(at, off, len)?;
        }
        match kind {
            Kind::Message(d) => self.messages(view, off, n, d, depth),
            Kind::String | Kind::Bytes => self.ranges(off, len),
            _ => Ok(()),
        }
    }

    /// The pointers of a `bytes`/`string` list at `off` (`len` bytes, in the message): each a
    /// range inside it. One pass sums the lengths and tests every range with no early exit;
    /// only a list that fails is walked again, pointer by pointer, to name the first culprit.
    #[inline]
    fn ranges(&mut self, off: usize, len: usize) -> Checked {
        let ptrs = layout::words::<ENTRY_LEN>(self.root.get(off..off + len).unwrap_or_default());
        let message_len = self.root.len() as u64;
        let mut outside = false;
        let mut total = 0u64;
        for p in ptrs {
            let (o, l) = layout::split_range(u64::from_le_bytes(*p));
            outside |= u64::from(o) + u64::from(l) > message_len;
            total += u64::from(l);
        }
        // `referenced <= max_referenced` holds after every successful `reference`.
        if outside || total > self.max_referenced - self.referenced {
            return self.ranges_one_by_one(off, len / ENTRY_LEN);
        }
        self.referenced += total;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn ranges_one_by_one(&mut self, off: usize, n: usize) -> Checked {
        for i in 0..n {
            let p = off + ENTRY_LEN * i;
            self.range(p, read_u64(self.root, p).unwrap_or(0))?;
        }
        Ok(())
    }

    /// The pointers of a list of `n` messages (or map entries) at `off`: each a nested header.
    fn messages(
        &mut self,
        view: &View<'b>,
        off: usize,
        n: usize,
        d: &'b MessageDesc<'b>,
        depth: u32,
    ) -> Checked {
        let mut previous_key = None;
        for i in 0..n {
            let p = off + ENTRY_LEN * i;
            let pe = read_u64(self.root, p).unwrap_or(0);
            self.nested(view, p, pe, d, depth)?;
            if d.map_entry {
                // Keys strictly ascending: no duplicates, one order (section 4.6).
                let key = view
                    .child(layout::split_range(pe).0 as usize, d)
                    .and_then(|e| map_key(&e));
                if key.is_some() && previous_key.is_some() && key <= previous_key {
                    let kind = K::MapKeyOrder { index: i as u32 };
                    return Err(self.fail(kind, p));
                }
                previous_key = key;
            }
        }
        Ok(())
    }

    fn nested(
        &mut self,
        view: &View<'b>,
        at: usize,
        e: u64,
        desc: &'b MessageDesc<'b>,
        depth: u32,
    ) -> Checked {
        let (off, len) = self.range(at, e)?;
        if depth + 1 > self.limits.max_depth {
            let max = self.limits.max_depth;
            return Err(self.fail(K::TooDeep { max }, at));
        }
        self.claim(at, off, len)?;
        let chunks = self.header(off, Some(len as u64))?;
        let child = View {
            root: self.root,
            owner: view.owner,
            desc,
            at: off,
            chunks,
        };
        self.message(&child, depth + 1)
    }
}

/// A map key, ordered as encoders must emit them: integers numerically, strings and bytes
/// bytewise, `false` before `true`.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum MapKey<'b> {
    Signed(i64),
    Unsigned(u64),
    Bytes(&'b [u8]),
}

/// The key (field 1) of a validated map entry, read as the reader's schema types it; an absent
/// key is the default. `None` for kinds that cannot be map keys.
fn map_key<'b>(entry: &View<'b>) -> Option<MapKey<'b>> {
    let kind = entry.desc.field(1)?.kind;
    Some(match kind {
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => {
            MapKey::Signed(i64::from(entry.scalar::<i32>(1).unwrap_or(0)))
        }
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => MapKey::Signed(entry.scalar::<i64>(1).unwrap_or(0)),
        Kind::UInt32 | Kind::Fixed32 => MapKey::Unsigned(u64::from(entry.scalar::<u32>(1).unwrap_or(0))),
        Kind::UInt64 | Kind::Fixed64 => MapKey::Unsigned(entry.scalar::<u64>(1).unwrap_or(0)),
        Kind::Bool => MapKey::Unsigned(u64::from(entry.scalar::<bool>(1).unwrap_or(false))),
        Kind::String | Kind::Bytes => MapKey::Bytes(entry.bytes(1).unwrap_or_default()),
        Kind::Float | Kind::Double | Kind::Message(_) => return None,
    })
}
