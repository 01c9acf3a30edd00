//! Byte-level constants and primitives of wire format v1 (`docs/wire-format.md`).
//!
//! A message header is
//!
//! ```text
//! +0           u16 chunk count C, u16 flags (0 in v1), u32 entry count E
//! +8           C chunk descriptors of 16 bytes: u32 group, u32 rank base, u64 bits
//! +8+16C       E entries of 8 bytes, in ascending field number order
//! ```
//!
//! Bit `b` of the chunk with group `g` says that field `64 * g + b` is present.

/// Bytes before the chunk table.
pub const PREAMBLE_LEN: usize = 8;
/// Bytes of one chunk descriptor.
pub const CHUNK_LEN: usize = 16;
/// Bytes of one entry.
pub const ENTRY_LEN: usize = 8;
/// Field numbers per chunk.
pub const CHUNK_FIELDS: u32 = 64;
/// The largest field number protobuf allows.
pub const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;
/// The largest message, in bytes: offsets and lengths are `u32`.
pub const MAX_MESSAGE_LEN: u64 = u32::MAX as u64;
/// Alignment of every item in the header and copied regions, relative to the message start.
pub const ALIGN: usize = 8;

/// Length of a header with `chunks` chunk descriptors and `entries` entries.
pub const fn header_len(chunks: usize, entries: usize) -> usize {
    PREAMBLE_LEN + CHUNK_LEN * chunks + ENTRY_LEN * entries
}

/// The preamble of a header with `chunks` chunk descriptors and `entries` entries, as one
/// little-endian word: u16 chunk count, u16 flags (0), u32 entry count (each truncated to its
/// width; the writer reports counts that do not fit).
pub const fn preamble(chunks: usize, entries: usize) -> u64 {
    chunks as u16 as u64 | (entries as u32 as u64) << 32
}

/// The first word of a chunk descriptor, little-endian: u32 group, u32 rank base.
pub const fn chunk_word(group: u32, rank: u32) -> u64 {
    group as u64 | (rank as u64) << 32
}

/// Splits a preamble word (little-endian) into chunk count, flags and entry count.
pub const fn split_preamble(word: u64) -> (u16, u16, u32) {
    (word as u16, (word >> 16) as u16, (word >> 32) as u32)
}

/// Splits a chunk descriptor, read as one little-endian `u128`, into group, rank base and bits.
pub const fn split_chunk(word: u128) -> (u32, u32, u64) {
    (word as u32, (word >> 32) as u32, (word >> 64) as u64)
}

/// Rounds `n` up to a multiple of [`ALIGN`].
pub const fn align(n: usize) -> usize {
    (n + ALIGN - 1) & !(ALIGN - 1)
}

/// The chunk group of a field number.
pub const fn group_of(field: u32) -> u32 {
    field / CHUNK_FIELDS
}

/// The bit of a field number inside its chunk.
pub const fn bit_of(field: u32) -> u64 {
    1 << (field % CHUNK_FIELDS)
}

/// Packs a range entry: offset in the low half, length in the high half.
pub const fn range_entry(offset: u32, len: u32) -> u64 {
    offset as u64 | (len as u64) << 32
}

/// Unpacks a range entry into (offset, length).
pub const fn split_range(entry: u64) -> (u32, u32) {
    (entry as u32, (entry >> 32) as u32)
}

/// Reads a little-endian `u64` at `at`, or `None` past the end.
#[inline]
pub fn read_u64(buf: &[u8], at: usize) -> Option<u64> {
    let end = at.checked_add(8)?;
    let bytes: [u8; 8] = buf.get(at..end)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// Reads a little-endian `u32` at `at`, or `None` past the end.
#[inline]
pub fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    let bytes: [u8; 4] = buf.get(at..end)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Reads a little-endian `u16` at `at`, or `None` past the end.
#[inline]
pub fn read_u16(buf: &[u8], at: usize) -> Option<u16> {
    let end = at.checked_add(2)?;
    let bytes: [u8; 2] = buf.get(at..end)?.try_into().ok()?;
    Some(u16::from_le_bytes(bytes))
}

/// The whole `N`-byte words of `bytes`, in order (a partial word at the end is left out): how
/// the decoder walks chunk descriptors, entries and pointer arrays without a length check per
/// word (`<[u8]>::as_chunks`, which needs Rust 1.88).
#[inline]
pub fn words<const N: usize>(bytes: &[u8]) -> Words<'_, N> {
    Words(bytes)
}

/// Word `i` of `bytes` as in [`words`], if it is whole.
#[inline]
pub fn word<const N: usize>(bytes: &[u8], i: usize) -> Option<&[u8; N]> {
    bytes.get(i.checked_mul(N)?..)?.first_chunk()
}

/// The iterator of [`words`].
#[derive(Debug, Clone)]
pub struct Words<'b, const N: usize>(&'b [u8]);

impl<'b, const N: usize> Iterator for Words<'b, N> {
    type Item = &'b [u8; N];

    #[inline]
    fn next(&mut self) -> Option<&'b [u8; N]> {
        let (word, rest) = self.0.split_first_chunk()?;
        self.0 = rest;
        Some(word)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.len() / N;
        (n, Some(n))
    }
}

impl<const N: usize> ExactSizeIterator for Words<'_, N> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_len_and_align() {
        assert_eq!(header_len(0, 0), 8);
        assert_eq!(header_len(1, 2), 8 + 16 + 16);
        assert_eq!(preamble(3, 5).to_le_bytes(), [3, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(preamble(0x1_0003, 5).to_le_bytes(), [3, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(chunk_word(2, 7).to_le_bytes(), [2, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(split_preamble(preamble(3, 5) | 0x9 << 16), (3, 9, 5));
        let chunk = u128::from(chunk_word(2, 7)) | u128::from(0x8000_0000_0000_0001u64) << 64;
        assert_eq!(split_chunk(chunk), (2, 7, 0x8000_0000_0000_0001));
        assert_eq!(align(0), 0);
        assert_eq!(align(1), 8);
        assert_eq!(align(8), 8);
        assert_eq!(align(9), 16);
    }

    #[test]
    fn groups_and_bits() {
        assert_eq!(group_of(1), 0);
        assert_eq!(bit_of(1), 2);
        assert_eq!(group_of(63), 0);
        assert_eq!(group_of(64), 1);
        assert_eq!(bit_of(64), 1);
        assert_eq!(group_of(MAX_FIELD_NUMBER), (1 << 23) - 1);
    }

    #[test]
    fn range_entry_round_trip() {
        let e = range_entry(0x1234_5678, 0x9abc_def0);
        assert_eq!(e.to_le_bytes(), [0x78, 0x56, 0x34, 0x12, 0xf0, 0xde, 0xbc, 0x9a]);
        assert_eq!(split_range(e), (0x1234_5678, 0x9abc_def0));
    }

    #[test]
    fn words_are_whole() {
        let b = [1u8, 2, 3, 4, 5, 6, 7];
        let w: Vec<&[u8; 2]> = words::<2>(&b).collect();
        assert_eq!(w, [&[1, 2], &[3, 4], &[5, 6]]);
        assert_eq!(words::<2>(&b).len(), 3);
        assert_eq!(word::<2>(&b, 2), Some(&[5, 6]));
        assert_eq!(word::<2>(&b, 3), None);
        assert_eq!(word::<2>(&b, usize::MAX), None);
    }

    #[test]
    fn reads_stop_at_the_end() {
        let b = [1u8, 0, 0, 0, 0, 0, 0, 0, 2];
        assert_eq!(read_u64(&b, 0), Some(1));
        assert_eq!(read_u64(&b, 2), None);
        assert_eq!(read_u32(&b, 5), Some(2 << 24));
        assert_eq!(read_u32(&b, 6), None);
        assert_eq!(read_u16(&b, usize::MAX), None);
    }
}
