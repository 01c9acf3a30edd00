//! The straight-line encoder's runtime: what generated [`Encode::size_into`] and
//! [`Encode::write_into`] overrides call, one helper per field kind.
//!
//! A generated `size_into` tests each field's presence once, records it in a [`Header`] and
//! adds the field's bytes to [`Sizes`]; the root's shape it returns is kept in the `Layout`. A
//! generated `write_into` reserves the header ([`Writer::reserve_header`]: the root's shape is
//! the layout's, a nested message's comes from a presence pass), then in one pass over its
//! fields records each present one in a [`Header`] and places its data (collecting the entries
//! in [`Entries`]), and writes the whole header with [`Writer::header`]: one bounds check per
//! header, one per copied value. No visitor, no
//! per-entry order check (field numbers are constants the generator sorted).
//!
//! The helpers are the generic visitors' own steps (`Sizer` and `HeaderWriter` call the same
//! `Sizes` methods and `Writer::place`), so both paths produce the same bytes.

use super::{Encode, Writer};
use crate::hybrid::{AsHybrid, HybridBytes};
use crate::layout::{self, CHUNK_LEN, ENTRY_LEN, PREAMBLE_LEN};
use crate::scalar::Scalar;

/// The shape of one message header: presence chunks and entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// Presence chunks.
    pub chunks: usize,
    /// Entries (present fields).
    pub entries: usize,
}

impl Shape {
    /// Bytes of the header.
    #[inline]
    pub const fn header_len(&self) -> usize {
        layout::header_len(self.chunks, self.entries)
    }
}

/// Running sizes of a message tree: what [`Outgoing::layout`](super::Outgoing::layout)
/// reports. [`Encode::size_into`] adds to it.
#[derive(Debug, Default)]
pub struct Sizes {
    pub(super) head: usize,
    pub(super) zc_len: usize,
    pub(super) zc_count: usize,
}

impl Sizes {
    /// A `bytes` or `string` value: copied (aligned) or one zero-copy entry.
    #[inline]
    pub fn bytes(&mut self, b: &HybridBytes<'_>) {
        let (data, zero_copy) = b.parts();
        if zero_copy {
            self.zc_len += data.len();
            self.zc_count += 1;
        } else {
            self.head += layout::align(data.len());
        }
    }

    /// A repeated `bytes` or `string`: its list of entries and each value.
    #[inline]
    pub fn bytes_list<'a, B: AsHybrid<'a>>(&mut self, values: &[B]) {
        self.head += values.len() * ENTRY_LEN;
        for b in values {
            self.bytes(b.as_hybrid());
        }
    }

    /// A packed repeated scalar.
    #[inline]
    pub fn scalars<T: Scalar>(&mut self, values: &[T]) {
        self.head += layout::align(values.len() * T::WIDTH);
    }

    /// A nested message.
    #[inline]
    pub fn message<'a, M: Encode<'a> + ?Sized>(&mut self, m: &M) {
        m.size_into(self);
    }

    /// A repeated message (or a map, as its entries): its list of entries and each message.
    #[inline]
    pub fn messages<'a, M: Encode<'a>, I: ExactSizeIterator<Item = M>>(&mut self, values: I) {
        self.head += values.len() * ENTRY_LEN;
        for m in values {
            m.size_into(self);
        }
    }

    /// Adds a message's own header; returns its shape (what `size_into` returns).
    #[inline]
    pub fn header(&mut self, shape: Shape) -> Shape {
        self.head += shape.header_len();
        shape
    }
}

/// Presence of one message's fields, per chunk group: `G` is the number of distinct groups
/// (field number / 64) the message's fields fall in, indexed in ascending group order.
#[derive(Debug, Clone, Copy)]
pub struct Header<const G: usize> {
    bits: [u64; G],
    counts: [u32; G],
}

impl<const G: usize> Default for Header<G> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const G: usize> Header<G> {
    /// No field present.
    #[inline]
    pub const fn new() -> Self {
        Header {
            bits: [0; G],
            counts: [0; G],
        }
    }

    /// Marks a field present: its group's index `g` and its bit ([`layout::bit_of`]). Fields
    /// must be set in ascending field-number order, each once.
    #[inline]
    pub fn set(&mut self, g: usize, bit: u64) {
        self.bits[g] |= bit;
        self.counts[g] += 1;
    }

    /// Chunks and entries of the header.
    #[inline]
    pub fn shape(&self) -> Shape {
        let mut s = Shape::default();
        for (&bits, &count) in self.bits.iter().zip(&self.counts) {
            s.chunks += usize::from(bits != 0);
            s.entries += count as usize;
        }
        s
    }
}

/// The entries of one message, collected in field order while its data is placed, then
/// written with its header at once. `N` is at least the number of fields that can be present.
#[derive(Debug, Clone, Copy)]
pub struct Entries<const N: usize> {
    values: [u64; N],
    len: usize,
}

impl<const N: usize> Default for Entries<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Entries<N> {
    /// No entry yet.
    #[inline]
    pub const fn new() -> Self {
        Entries {
            values: [0; N],
            len: 0,
        }
    }

    /// Appends the next present field's entry.
    #[inline]
    pub fn push(&mut self, entry: u64) {
        if let Some(e) = self.values.get_mut(self.len) {
            *e = entry;
        }
        self.len += 1;
    }
}

/// A header reserved by [`Writer::reserve_header`]: its offset and the shape its length was
/// taken from, which [`Writer::header`] then writes (and checks the fields against).
#[derive(Debug, Clone, Copy)]
pub struct Reserved {
    at: usize,
    shape: Shape,
}

impl Writer<'_> {
    /// Reserves the header of the message about to be written at the next free offset of the
    /// copied region. The root's (at offset 0) shape is its layout's, taken by the sizing pass;
    /// a nested message's is `presence()`, a presence pass of its own (its header comes before
    /// its data, so its length is needed first). Checks the message's `missing_required` result
    /// first, as the generic path does.
    #[inline(always)]
    pub fn reserve_header(
        &mut self,
        missing_required: Option<&str>,
        presence: impl FnOnce() -> Shape,
    ) -> Reserved {
        if let Some(field) = missing_required {
            self.fault(super::Fault::MissingRequired(field.to_owned()));
        }
        let at = self.copy;
        let shape = if at == 0 { self.root } else { presence() };
        self.copy += shape.header_len();
        Reserved { at, shape }
    }

    /// Writes the header reserved as `r`: preamble, the chunk of each group present in
    /// `header` (group numbers in `groups`), the entries. The fields found present while the
    /// data was placed must fill the reserved shape exactly (a root changed since its layout
    /// does not: the write fails). One bounds check. Returns the message's range entry.
    /// (`always`: in the bench binary a plain `#[inline]` was not taken, 38 instructions a call.)
    #[inline(always)]
    pub fn header<const G: usize, const N: usize>(
        &mut self,
        r: Reserved,
        groups: &[u32; G],
        header: &Header<G>,
        entries: &Entries<N>,
    ) -> u64 {
        let Reserved { at, shape } = r;
        let len = shape.header_len();
        if shape.chunks > usize::from(u16::MAX) {
            self.fault(super::Fault::TooManyChunks(shape.chunks));
        }
        let (Some(e), Some(dst)) = (
            entries
                .values
                .get(..entries.len)
                .filter(|e| e.len() == shape.entries),
            self.out.get_mut(at..at + len),
        ) else {
            self.fail();
            return self.range(at, len);
        };
        let (pre, rest) = dst.split_at_mut(PREAMBLE_LEN);
        pre.copy_from_slice(&layout::preamble(shape.chunks, shape.entries).to_le_bytes());
        let (chunks, list) = rest.split_at_mut(CHUNK_LEN * shape.chunks);
        let mut rank = 0u32;
        let mut written = 0;
        let mut out = chunks.chunks_exact_mut(CHUNK_LEN);
        for ((&group, &bits), &count) in groups.iter().zip(&header.bits).zip(&header.counts) {
            if bits == 0 {
                continue;
            }
            if let Some(d) = out.next() {
                d[..8].copy_from_slice(&layout::chunk_word(group, rank).to_le_bytes());
                d[8..].copy_from_slice(&bits.to_le_bytes());
            }
            written += 1;
            rank += count;
        }
        for (d, v) in list.chunks_exact_mut(ENTRY_LEN).zip(e) {
            d.copy_from_slice(&v.to_le_bytes());
        }
        if written != shape.chunks {
            self.fail();
        }
        self.range(at, len)
    }

    /// A singular scalar: its entry (the value itself).
    #[inline]
    pub fn scalar<T: Scalar>(&mut self, value: T) -> u64 {
        value.to_entry()
    }

    /// A `bytes` or `string` value: copied into the segment or referenced; its range entry.
    #[inline]
    pub fn bytes(&mut self, b: &HybridBytes<'_>) -> u64 {
        self.place(b)
    }

    /// A repeated `bytes` or `string`: its list, then each value; the list's range entry.
    #[inline(always)]
    pub fn bytes_list<'a, B: AsHybrid<'a>>(&mut self, values: &[B]) -> u64 {
        let len = values.len() * ENTRY_LEN;
        let at = self.copy;
        self.copy += len;
        let mut e = at;
        for b in values {
            let v = self.place(b.as_hybrid());
            self.put_u64(e, v);
            e += ENTRY_LEN;
        }
        self.range(at, len)
    }

    /// A packed repeated scalar; its range entry.
    #[inline]
    pub fn scalars<T: Scalar>(&mut self, values: &[T]) -> u64 {
        let len = values.len() * T::WIDTH;
        let (at, dst) = self.reserve(len);
        if let Some(dst) = dst {
            for (chunk, v) in dst.chunks_exact_mut(T::WIDTH).zip(values) {
                v.write_packed(chunk);
            }
        }
        self.range(at, len)
    }

    /// A nested message; its range entry.
    #[inline]
    pub fn message<'a, M: Encode<'a> + ?Sized>(&mut self, m: &M) -> u64 {
        m.write_into(self)
    }

    /// A repeated message (or a map, as its entries): its list, then each message; the list's
    /// range entry.
    pub fn messages<'a, M: Encode<'a>, I: ExactSizeIterator<Item = M>>(&mut self, values: I) -> u64 {
        let n = values.len();
        let len = n * ENTRY_LEN;
        let at = self.copy;
        self.copy += len;
        let mut count = 0;
        for (i, m) in values.enumerate() {
            let e = m.write_into(self);
            self.put_u64(at + i * ENTRY_LEN, e);
            count += 1;
        }
        if count != n {
            self.fail(); // an iterator that misreported its length
        }
        self.range(at, len)
    }
}
