//! What lies in shared memory: the control area, ring entries, block preambles and message
//! headers. All little-endian; every field read from the peer is copied out, then validated.
//!
//! ```text
//! control area (one per side, in its own memfd; the peer maps it read-only), one cache line
//! per word group, so that the peer's reads of a rarely written word (sleeping) do not miss
//! each time a busy one (ring_head, peer_tail) changes
//!   0  u64 ring_head    entries this side has published in its ring (written after each entry)
//!  64  u64 peer_tail    entries of the peer's ring this side has consumed
//! 128  u64 sleeping     1 while this side sleeps on its doorbell
//! 136  u64 closed       1 once this side has shut down
//! 192  u64 ring[RING]   entry i at 192 + 8 (i mod RING)
//!
//! ring entry (u64): bucket (u32, bits 0-31) | acks (u16, bits 32-47) | tag (u16, bits 48-63)
//!   bucket = u32::MAX: no block, only `acks` (an acknowledgement with no data to carry it)
//!   else: a block at offset bucket * 1024 of the sender's memfd; acks are in its preamble
//!   tag = (i + 1) mod 2^16 for entry i: the receiver polls the slot of the entry it expects
//!     next and takes it when the tag matches (a slot holds 0 before its first entry, then the
//!     entry one lap, RING entries, earlier: neither matches), so a message costs it one
//!     line, not ring_head and then the slot. ring_head is still written after the slot and
//!     read when the slot shows nothing new: by the sleep handshake, and to catch a lying peer
//!
//! block: preamble, then `count` messages, each 8-aligned
//!   preamble (16 B): u32 count, u32 len (bytes of the block in use), u32 acks, u32 0
//!   message header (24 B): u32 len, u16 kind, u8 flags, u8 form, u64 request_id, u32 0, u32 0
//!     form bit 0: a Ferry message (the payload is its header segment, region-relative,
//!                 root at the payload's offset); else raw bytes
//!     form bit 1: request_id is explicit; else it is the implicit id (see `conn.rs`)
//!   payload (len bytes), padded to 8
//! ```

/// Blocks are addressed by bucket: offset / `BLOCK_ALIGN`.
pub const BLOCK_ALIGN: usize = 1024;
/// Bytes of a block preamble.
pub const PREAMBLE_LEN: usize = 16;
/// Bytes of a message header.
pub const MSG_HEADER_LEN: usize = 24;
/// Entries in each side's notification ring.
pub const RING: usize = 1024;
/// Bytes of the control area.
pub const CONTROL_LEN: usize = control_len(RING);

/// Bytes of a control area whose ring has `ring` entries.
pub const fn control_len(ring: usize) -> usize {
    RING_AT + 8 * ring
}
/// Ring entry bucket meaning "acknowledgements only".
pub const NO_BLOCK: u32 = u32::MAX;

pub(crate) const RING_HEAD: usize = 0;
pub(crate) const PEER_TAIL: usize = 64;
pub(crate) const SLEEPING: usize = 128;
pub(crate) const CLOSED: usize = 136;
pub(crate) const RING_AT: usize = 192;

pub(crate) const FORM_FERRY: u8 = 1;
pub(crate) const FORM_EXPLICIT_ID: u8 = 2;

const _: () = assert!(CONTROL_LEN % 8 == 0 && PREAMBLE_LEN % 8 == 0 && MSG_HEADER_LEN % 8 == 0);

/// A block preamble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Preamble {
    pub(crate) count: u32,
    pub(crate) len: u32,
    pub(crate) acks: u32,
}

impl Preamble {
    /// Writes the preamble at the start of `out` (two words: one bounds check).
    #[inline]
    pub(crate) fn write(&self, out: &mut [u8]) {
        let out = out
            .first_chunk_mut::<PREAMBLE_LEN>()
            .expect("room for a preamble");
        let word = u64::from(self.count) | u64::from(self.len) << 32;
        out[..8].copy_from_slice(&word.to_le_bytes());
        out[8..].copy_from_slice(&u64::from(self.acks).to_le_bytes());
    }

    /// The preamble in its two words (little-endian), as [`Shared::load_words`] reads them.
    ///
    /// [`Shared::load_words`]: crate::proto::Shared::load_words
    pub(crate) fn from_words([first, second]: [u64; 2]) -> Preamble {
        Preamble {
            count: first as u32,
            len: (first >> 32) as u32,
            acks: second as u32,
        }
    }

    #[cfg(test)]
    pub(crate) fn read(b: &[u8; PREAMBLE_LEN]) -> Preamble {
        Preamble::from_words(words(b))
    }
}

/// A message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MsgHeader {
    pub(crate) len: u32,
    pub(crate) kind: u16,
    pub(crate) flags: u8,
    pub(crate) form: u8,
    pub(crate) request_id: u64,
}

impl MsgHeader {
    /// Writes the header at the start of `out` (three words: one bounds check).
    #[inline]
    pub(crate) fn write(&self, out: &mut [u8]) {
        let out = out
            .first_chunk_mut::<MSG_HEADER_LEN>()
            .expect("room for a message header");
        let word = u64::from(self.len)
            | u64::from(self.kind) << 32
            | u64::from(self.flags) << 48
            | u64::from(self.form) << 56;
        out[..8].copy_from_slice(&word.to_le_bytes());
        out[8..16].copy_from_slice(&self.request_id.to_le_bytes());
        out[16..].fill(0);
    }

    /// The header in its three words (little-endian), as [`Shared::load_words`] reads them.
    ///
    /// [`Shared::load_words`]: crate::proto::Shared::load_words
    pub(crate) fn from_words([first, request_id, _]: [u64; 3]) -> MsgHeader {
        MsgHeader {
            len: first as u32,
            kind: (first >> 32) as u16,
            flags: (first >> 48) as u8,
            form: (first >> 56) as u8,
            request_id,
        }
    }

    #[cfg(test)]
    pub(crate) fn read(b: &[u8; MSG_HEADER_LEN]) -> MsgHeader {
        MsgHeader::from_words(words(b))
    }
}

/// The little-endian words of `b`.
#[cfg(test)]
fn words<const N: usize>(b: &[u8]) -> [u64; N] {
    std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")))
}

/// A ring entry without its tag ([`tagged`] adds it). `acks` above `u16::MAX` is cut to
/// `u16::MAX` (a sender owes at most its peer's credits, at most half the ring).
pub(crate) const fn entry(bucket: u32, acks: u32) -> u64 {
    let acks = if acks > u16::MAX as u32 {
        u16::MAX as u32
    } else {
        acks
    };
    bucket as u64 | (acks as u64) << 32
}

/// `(bucket, acks)` of a ring entry (its tag ignored).
pub(crate) const fn split_entry(e: u64) -> (u32, u32) {
    (e as u32, (e >> 32) as u16 as u32)
}

/// The tag of entry number `seq` (counting from 0) of a ring.
pub(crate) const fn tag(seq: u64) -> u16 {
    seq.wrapping_add(1) as u16
}

/// Entry `e` tagged as entry number `seq`.
pub(crate) const fn tagged(e: u64, seq: u64) -> u64 {
    e & !(0xffff << 48) | (tag(seq) as u64) << 48
}

/// The tag of a ring entry.
pub(crate) const fn entry_tag(e: u64) -> u16 {
    (e >> 48) as u16
}

/// Bytes a message of `payload` bytes takes in a block.
pub(crate) const fn message_space(payload: usize) -> usize {
    MSG_HEADER_LEN + payload.next_multiple_of(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_both_ways() {
        let p = Preamble {
            count: 3,
            len: 0x0102,
            acks: 7,
        };
        let mut b = [0xffu8; PREAMBLE_LEN];
        p.write(&mut b);
        assert_eq!(b, [3, 0, 0, 0, 2, 1, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Preamble::read(&b), p);
        let h = MsgHeader {
            len: 5,
            kind: 0x0201,
            flags: 9,
            form: FORM_FERRY | FORM_EXPLICIT_ID,
            request_id: 0x0807_0605_0403_0201,
        };
        let mut b = [0xffu8; MSG_HEADER_LEN];
        h.write(&mut b);
        assert_eq!(&b[..16], &[5, 0, 0, 0, 1, 2, 9, 3, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[16..], &[0; 8]);
        assert_eq!(MsgHeader::read(&b), h);
        assert_eq!(split_entry(entry(12, 34)), (12, 34));
        assert_eq!(split_entry(entry(12, u32::MAX)), (12, u16::MAX as u32));
        let e = tagged(entry(12, 34), 2);
        assert_eq!(e.to_le_bytes(), [12, 0, 0, 0, 34, 0, 3, 0]);
        assert_eq!((split_entry(e), entry_tag(e)), ((12, 34), 3));
        assert_eq!(entry_tag(tagged(e, u64::from(u16::MAX))), 0);
        // A slot's previous lap (RING entries earlier) and its initial zero never match.
        assert_ne!(tag(RING as u64 + 5), tag(5));
        assert!((0..RING as u64).all(|i| tag(i) != 0));
        assert_eq!(message_space(1), 32);
    }
}
