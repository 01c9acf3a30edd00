//! The words both sides read: each side's ring of entries, its head and the peer's tail, the
//! sleeping flag and the closed flag. The rest of the protocol is single-writer memory
//! (blocks, values) published by these words; their orderings are checked with loom
//! (`proto/loom.rs`).

use ferry_transport::{FrameError, TransportError};

use crate::layout::{CLOSED, PEER_TAIL, RING_AT, RING_HEAD, SLEEPING, entry_tag, tag, tagged};

/// The memory two sides share, as the protocol core sees it: this side's control area, which
/// it writes, and the peer's region (its control area, blocks and values), which it only reads
/// and never trusts. [`ShmConnection`](crate::ShmConnection) implements it over its own pool
/// and a read-only mapping of the peer's; tests implement it over memory in one process and
/// over loom's atomics; the fuzz target over arbitrary bytes.
pub trait Shared {
    /// The 8-aligned word at `offset` of the peer's region, loaded with acquire ordering (what
    /// the peer wrote before storing it is visible); `None` outside the region.
    fn load(&self, offset: usize) -> Option<u64>;

    /// Copies `out.len()` bytes of the peer's region at `offset`; `None` outside the region.
    fn copy_out(&self, offset: usize, out: &mut [u8]) -> Option<()>;

    /// `N` words of the peer's region at `offset` (8-aligned), little-endian, each read once: a
    /// preamble or a message header (the ring entry that named them was loaded with acquire).
    /// `None` if unaligned or outside the region. By default, copied out with
    /// [`copy_out`](Self::copy_out).
    fn load_words<const N: usize>(&self, offset: usize) -> Option<[u64; N]> {
        if offset % 8 != 0 {
            return None;
        }
        let mut words = [0; N];
        for (i, w) in words.iter_mut().enumerate() {
            let mut b = [0; 8];
            self.copy_out(offset.checked_add(8 * i)?, &mut b)?;
            *w = u64::from_le_bytes(b);
        }
        Some(words)
    }

    /// Bytes in the peer's region.
    fn peer_len(&self) -> usize;

    /// Stores the word at `offset` of this side's control area, with release ordering (what
    /// this side wrote before is visible to a peer that loads the word).
    fn store(&mut self, offset: usize, value: u64);

    /// A sequentially consistent fence: a store before it and a load of the peer's memory
    /// after it are seen in that order by a peer with the same fence (the sleeping handshake).
    fn fence(&self);

    /// A hint that `len` bytes of the peer's region at `offset` are about to be read: start
    /// loading them (default: nothing).
    fn prefetch(&self, _offset: usize, _len: usize) {}

    /// Whether `len` bytes at `offset` lie in the peer's region.
    fn contains(&self, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.peer_len())
    }
}

/// The error of a peer that broke the protocol: `what`, at `offset` of its region. Cold and
/// out of line: inlined, its values were built ahead on the hot path (a loop that might fail
/// had its messages' lengths set up on every call).
#[cold]
#[inline(never)]
pub(crate) fn protocol(what: &'static str, offset: usize) -> TransportError {
    TransportError::Frame {
        offset: offset as u64,
        error: FrameError::Protocol(what),
    }
}

/// This side's position in both rings: entries it published in its own, entries it consumed
/// of the peer's.
#[derive(Debug)]
pub(crate) struct Rings {
    size: u64,
    peer_control: usize,
    /// Entries published in this side's ring.
    head: u64,
    /// Entries of the peer's ring consumed.
    tail: u64,
    /// `head % size` and `tail % size`, the slots they name, kept as they advance (a division
    /// per entry cost more than the rest of taking it).
    head_slot: usize,
    tail_slot: usize,
    /// The peer's `peer_tail` when this side last read it (how far it had consumed this
    /// side's ring), and whether it has been read at all.
    known_tail: u64,
    tail_read: bool,
    /// The highest head of the peer's ring read so far (a head never moves back).
    seen_head: u64,
}

impl Rings {
    pub(crate) fn new(size: usize, peer_control: usize) -> Rings {
        Rings {
            size: size as u64,
            peer_control,
            head: 0,
            tail: 0,
            head_slot: 0,
            tail_slot: 0,
            known_tail: 0,
            tail_read: false,
            seen_head: 0,
        }
    }

    /// A word of the peer's control area (validated to lie in its region at setup).
    fn peer(&self, mem: &impl Shared, word: usize) -> u64 {
        mem.load(self.peer_control + word).unwrap_or(0)
    }

    /// Whether this side's ring has room for an entry (the peer consumes entries as it polls).
    ///
    /// The peer's `peer_tail` is read only when the ring looks full by the value last read (and
    /// once at first): the tail only grows, so an old value understates the room and never
    /// lets an unconsumed entry be overwritten. Reading it on every publication cost a cache
    /// miss each time (the peer writes that line whenever it consumes).
    pub(crate) fn has_space(&mut self, mem: &impl Shared) -> Result<bool, TransportError> {
        if self.tail_read && self.head - self.known_tail < self.size {
            return Ok(true);
        }
        let consumed = self.peer(mem, PEER_TAIL);
        if consumed > self.head {
            return Err(protocol(
                "the peer consumed unpublished entries",
                self.peer_control,
            ));
        }
        self.known_tail = consumed;
        self.tail_read = true;
        Ok(self.head - consumed < self.size)
    }

    /// Publishes an entry (there must be room), tagged with its number, then the head.
    /// Returns whether the peer sleeps: it must be woken. The fence pairs with the one in
    /// [`announce_sleep`](Self::announce_sleep): either the peer sees the new head, or this
    /// side sees its flag.
    ///
    /// With `never_sleeps` (the peer declared at setup that it never announces a sleep) the
    /// fence and the read of `sleeping` are skipped: the store-load ordering they give only
    /// matters to a peer that may be asleep, and the release stores still publish the block
    /// before the entry and the entry before the head. The fence waits for every store of
    /// the block to leave the store buffer (cache lines the peer last read), on every entry.
    /// A peer that declared so and sleeps anyway only delays itself (its sleeps are bounded).
    pub(crate) fn push(&mut self, mem: &mut impl Shared, entry: u64, never_sleeps: bool) -> bool {
        mem.store(RING_AT + 8 * self.head_slot, tagged(entry, self.head));
        self.head += 1;
        self.head_slot = self.next_slot(self.head_slot);
        mem.store(RING_HEAD, self.head);
        if never_sleeps {
            return false;
        }
        mem.fence();
        self.peer(mem, SLEEPING) != 0
    }

    /// The next entry of the peer's ring, if published, and the offset it was read at: the
    /// slot of the entry expected next is read (once) and taken if its tag is that entry's.
    /// The peer stores the entry (release) before its head, so this costs one line, not the
    /// head's and then the slot's. Entries so taken are reported with
    /// [`consumed`](Self::consumed). When it returns `None`, [`idle`](Self::idle) says why.
    pub(crate) fn next_entry(&mut self, mem: &impl Shared) -> Option<(u64, usize)> {
        let slot = self.peer_control + RING_AT + 8 * self.tail_slot;
        let e = mem.load(slot)?;
        if entry_tag(e) != tag(self.tail) {
            return None;
        }
        self.tail += 1;
        self.tail_slot = self.next_slot(self.tail_slot);
        Some((e, slot))
    }

    /// The slot after `slot`.
    fn next_slot(&self, slot: usize) -> usize {
        if slot + 1 == self.size as usize {
            0
        } else {
            slot + 1
        }
    }

    /// After [`next_entry`](Self::next_entry) found nothing: `Err(Closed)` if the peer has
    /// closed with nothing left to consume, a protocol error if its head moved back, is out of
    /// range or claims an entry whose slot does not carry its tag, else `Ok(())` (nothing
    /// yet, or an entry that arrived meanwhile: poll again). Reads `closed` before the head,
    /// so that a peer that publishes and then closes is seen to publish.
    ///
    /// The head may lag one behind the entries taken: the peer stores an entry, then the
    /// head, and this side may take the entry by its tag in between. It cannot lag more: the
    /// entry before the last one taken was stored before the head that counts it, and taking
    /// the last one (acquire) made that head visible. A closed peer's head does not lag (it
    /// stored the head before `closed`).
    pub(crate) fn idle(&mut self, mem: &impl Shared) -> Result<(), TransportError> {
        let closed = self.peer(mem, CLOSED) != 0;
        let head = self.peer(mem, RING_HEAD);
        let out_of_range = || protocol("ring head out of range", self.peer_control + RING_HEAD);
        if head < self.seen_head {
            return Err(out_of_range());
        }
        self.seen_head = head;
        if head == self.tail {
            return if closed {
                Err(TransportError::Closed)
            } else {
                Ok(())
            };
        }
        if !closed && self.tail.checked_sub(1) == Some(head) {
            return Ok(());
        }
        if head < self.tail || head - self.tail > self.size {
            return Err(out_of_range());
        }
        // The head was stored after the entry: loaded (acquire) after the head, the slot
        // holds it, tagged, unless the peer lies.
        let slot = self.peer_control + RING_AT + 8 * self.tail_slot;
        if mem.load(slot).map(entry_tag) != Some(tag(self.tail)) {
            return Err(protocol("ring entry without its sequence tag", slot));
        }
        Ok(())
    }

    /// Tells the peer how far this side has consumed (frees room in its ring).
    pub(crate) fn consumed(&self, mem: &mut impl Shared) {
        mem.store(PEER_TAIL, self.tail);
    }

    /// Announces that this side is about to wait, then looks again: returns whether the peer
    /// has published (or closed) since, in which case it must not sleep. Withdraw with
    /// [`withdraw`](Self::withdraw).
    pub(crate) fn announce_sleep(&self, mem: &mut impl Shared) -> bool {
        mem.store(SLEEPING, 1);
        mem.fence();
        self.peer(mem, RING_HEAD) != self.tail || self.peer(mem, CLOSED) != 0
    }

    pub(crate) fn withdraw(&self, mem: &mut impl Shared) {
        mem.store(SLEEPING, 0);
    }

    /// Marks this side closed; returns whether the peer sleeps and must be woken to see it.
    pub(crate) fn close(&self, mem: &mut impl Shared) -> bool {
        mem.store(CLOSED, 1);
        mem.fence();
        self.peer(mem, SLEEPING) != 0
    }
}
