//! The block protocol without I/O: blocks, ring entries, credits, acknowledgements and implicit
//! request ids, as one side sees them. It reads and writes shared memory through [`Shared`] and
//! never waits, sleeps or touches a descriptor: an operation that cannot proceed (no credit, a
//! full ring) returns and leaves the waiting to its driver, [`ShmConnection`](crate::ShmConnection)
//! (busy-polling, then an eventfd doorbell). The style is `ferry-net`'s queue and reader, and
//! quinn-proto's: the same core runs under deterministic tests (an in-memory pair, random
//! interleavings), loom (the ring words) and the fuzzer (arbitrary peer memory).
//!
//! An endpoint [`send`](Endpoint::send)s messages into the block it fills; a full block (or
//! [`close_block`](Endpoint::close_block)) is ready, and [`publish`](Endpoint::publish) puts
//! ready blocks in the ring while credits and ring room last, carrying the acknowledgements this
//! side owes in their preambles ([`publish_acks`](Endpoint::publish_acks) sends them alone when
//! there is no block). [`poll`](Endpoint::poll) consumes the peer's entries (acknowledgements
//! return credits and free blocks; blocks are queued) and [`next`](Endpoint::next) hands out
//! their messages one at a time, each validated against the peer's region. After pushing an
//! entry, [`take_wake`](Endpoint::take_wake) says whether the peer sleeps and must be woken.

mod ring;

#[cfg(loom)]
mod loom;
#[cfg(all(test, not(loom)))]
mod tests;

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use ferry_buf::{BufMut, Pool, SharedBuf};
use ferry_transport::{Meta, Payload, TransportError};
use ferry_wire::Outgoing;

pub use self::ring::Shared;
use self::ring::{Rings, protocol};
use crate::ShmStats;
use crate::layout::{
    BLOCK_ALIGN, FORM_EXPLICIT_ID, FORM_FERRY, MSG_HEADER_LEN, MsgHeader, NO_BLOCK, PREAMBLE_LEN, Preamble,
    control_len, entry, message_space, split_entry,
};

/// Bytes of a received block loaded ahead as soon as its ring entry is read: four cache
/// lines, a small message's preamble, header and header segment.
const PREFETCH_LEN: usize = 256;

/// The most credits a side may give: its table of received blocks ([`Releases`]) has a slot for
/// each block the peer may have unacknowledged, a fixed power of two above this many.
pub const MAX_CREDITS: u32 = 512;
const RELEASE_SLOTS: usize = 2 * MAX_CREDITS as usize;

/// What the two sides agreed at setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Bytes per block: a block is ready once it holds this many (a larger message gets a
    /// block of its own). Between [`BLOCK_ALIGN`] and the pool's largest buffer.
    pub block_size: usize,
    /// Messages per block: a block is also ready once it holds this many (at least 1).
    /// Pipelined small messages then travel as several blocks, so that while the peer works
    /// through one this side fills the next, instead of the two taking turns on one big
    /// block (a sender-side choice; the receiver takes any count its block holds).
    pub block_messages: u32,
    /// Blocks each side may have unacknowledged: between 1 and half the ring, at most
    /// [`MAX_CREDITS`].
    pub credits: u32,
    /// Entries in each side's ring (the same on both sides).
    pub ring: usize,
    /// Offset of the peer's control area in its region.
    pub peer_control: usize,
    /// The peer said at setup that it never sleeps on its doorbell (it busy-polls only and
    /// never raises its `sleeping` word): entries are then published with release stores
    /// alone, without the sequentially consistent fence and the read of `sleeping` that the
    /// sleep handshake needs (see `Rings::push` in `ring.rs`).
    pub peer_never_sleeps: bool,
}

/// Keeps a received block unacknowledged while a message of it is alive: every
/// [`Incoming`] holds one. The block's slot in [`Releases`] counts its holds: set to the
/// block's message count when it arrives (each message handed out takes one), one more per
/// clone, one less per drop; so receiving a block allocates nothing, and a message costs a
/// counter, not a reference count and an allocation per block.
#[derive(Debug)]
pub struct Hold {
    seq: u64,
    releases: Rc<Releases>,
}

impl Clone for Hold {
    fn clone(&self) -> Hold {
        let n = self.releases.slot(self.seq);
        // At most the messages a block holds plus the frames cloned from them: a count this
        // high is a bug (as an `Rc`'s overflow would be).
        n.set(n.get().checked_add(1).expect("holds of a block overflowed"));
        Hold {
            seq: self.seq,
            releases: Rc::clone(&self.releases),
        }
    }
}

impl Drop for Hold {
    #[inline]
    fn drop(&mut self) {
        self.releases.release(self.seq);
    }
}

/// Received blocks, in order, and how many holds each has left. Acknowledgements cover the
/// released prefix: a block is acknowledged only when it and every earlier block have no live
/// message, so the sender reclaims in order.
#[derive(Debug)]
struct Releases {
    /// Sequence number of the oldest block not yet released in order.
    first: Cell<u64>,
    /// Sequence number of the next block to arrive.
    end: Cell<u64>,
    /// Live holds per block in `first..end`, at its sequence number modulo the length: a
    /// power of two above the credits, since the peer may have at most `credits` blocks
    /// unacknowledged (checked before a block is added) and a block leaves once released.
    /// Fixed, so that a slot is found with a constant mask and no bounds check.
    live: Box<[Cell<u32>; RELEASE_SLOTS]>,
    /// Released blocks not yet acknowledged to the peer.
    pending: Cell<u32>,
}

impl Releases {
    fn new() -> Releases {
        Releases {
            first: Cell::new(0),
            end: Cell::new(0),
            live: Box::new(std::array::from_fn(|_| Cell::new(0))),
            pending: Cell::new(0),
        }
    }

    fn slot(&self, seq: u64) -> &Cell<u32> {
        &self.live[seq as usize % RELEASE_SLOTS]
    }

    /// Adds the next block with `holds` (at least 1); returns its sequence number.
    fn add(&self, holds: u32) -> u64 {
        let seq = self.end.get();
        debug_assert!(((seq - self.first.get()) as usize) < self.live.len());
        self.slot(seq).set(holds);
        self.end.set(seq + 1);
        seq
    }

    fn release(&self, seq: u64) {
        let n = self.slot(seq);
        n.set(n.get() - 1);
        if n.get() == 0 && seq == self.first.get() {
            // `seq` itself is released: look from the next one on.
            let (mut first, end) = (seq + 1, self.end.get());
            while first < end && self.slot(first).get() == 0 {
                first += 1;
            }
            self.pending.set(self.pending.get() + (first - seq) as u32);
            self.first.set(first);
        }
    }
}

/// A received message: its header has been read out of the peer's block and checked to lie in
/// it; a Ferry message's bytes are validated when viewed (`View::decode_at` on the region).
#[derive(Debug)]
pub struct Incoming {
    /// Kind, flags and request id (the implicit one unless the sender wrote another).
    pub meta: Meta,
    /// Whether the payload is a Ferry message (sent with `send`) rather than raw bytes.
    pub ferry: bool,
    /// Offset of the payload in the peer's region.
    pub offset: usize,
    /// Bytes of the payload (a Ferry message's header segment).
    pub len: usize,
    /// Keeps the block unacknowledged until dropped.
    pub hold: Hold,
}

/// A received block whose messages are handed out one at a time.
#[derive(Debug)]
struct Pending {
    /// The block's sequence number (its holds are counted in `Releases`).
    seq: u64,
    /// Next message header.
    pos: usize,
    end: usize,
    left: u32,
}

/// A block this side sends: being filled, filled and waiting for a credit (ready), or
/// published and waiting for its acknowledgement (in flight). It stays a `BufMut` throughout
/// (never frozen): this side writes it only while filling it, and again only once the peer
/// has acknowledged it.
#[derive(Debug)]
struct Block {
    block: BufMut,
    /// The block's bucket (its offset in the pool's memory, its memfd, over [`BLOCK_ALIGN`])
    /// and its capacity, found once when it was taken. 32 bits each, as the bucket of a ring
    /// entry and a pool buffer's size are, so that a block is 64 bytes (with ferry-buf's
    /// 24-byte `BufMut`) rather than 80: it moves twice a round trip (into the queue when
    /// closed, back to being filled when acknowledged).
    bucket: u32,
    capacity: u32,
    /// Bytes in use: the preamble and the messages so far (the `BufMut`'s own length is not
    /// kept: only this side reads it).
    len: u32,
    count: u32,
    /// The values its messages reference, held until the block is acknowledged.
    held: Vec<SharedBuf>,
}

/// One side of the block protocol. See the module docs.
#[derive(Debug)]
pub struct Endpoint {
    pool: Pool,
    setup: Setup,
    rings: Rings,
    credits: u32,
    // Sending.
    /// The block being filled. When a block is acknowledged and none is being filled, it
    /// becomes this one, emptied: one block in flight at a time then costs no pool allocation
    /// and no release, and its values' list no heap allocation.
    filling: Option<Block>,
    /// The blocks sent and not yet acknowledged, oldest first: `published` of them in flight,
    /// then the ready ones (closed, waiting for a credit or ring room). A block stays in its
    /// place from its closing to its acknowledgement.
    blocks: VecDeque<Block>,
    published: usize,
    /// An emptied list of held values (from an acknowledged block) for the next block taken
    /// from the pool.
    spare_held: Vec<SharedBuf>,
    send_seq: u64,
    wake: bool,
    /// Whether this side's sleep announcement is up (its `sleeping` word is 1).
    announced: bool,
    // Receiving.
    recv_seq: u64,
    peer_unacked: u32,
    queue: VecDeque<Pending>,
    releases: Rc<Releases>,
    failed: bool,
    stats: ShmStats,
}

impl Endpoint {
    /// An endpoint that sends from `pool` and reads the peer's region through `mem`. Fails if
    /// `setup` is out of range or the peer's control area does not lie in its region.
    pub fn new(pool: &Pool, setup: Setup, mem: &impl Shared) -> Result<Endpoint, TransportError> {
        let config = |what: String| Err(TransportError::Config(what));
        if setup.block_size < BLOCK_ALIGN || setup.block_size > pool.max_class() {
            return config(format!(
                "block_size must be between {BLOCK_ALIGN} and the pool's largest buffer ({})",
                pool.max_class()
            ));
        }
        if setup.block_messages == 0 {
            return config("block_messages must be at least 1".into());
        }
        if setup.ring < 2
            || setup.credits == 0
            || setup.credits as usize > setup.ring / 2
            || setup.credits > MAX_CREDITS
        {
            return config(format!(
                "credits ({}) must be between 1 and half the ring ({}), at most {MAX_CREDITS}",
                setup.credits, setup.ring
            ));
        }
        if setup.peer_control % 8 != 0 || !mem.contains(setup.peer_control, control_len(setup.ring)) {
            return config("bad setup message from the peer: control area outside the shared memory".into());
        }
        Ok(Endpoint {
            pool: pool.clone(),
            setup,
            rings: Rings::new(setup.ring, setup.peer_control),
            credits: setup.credits,
            filling: None,
            blocks: VecDeque::new(),
            published: 0,
            spare_held: Vec::new(),
            send_seq: 0,
            wake: false,
            announced: false,
            recv_seq: 0,
            peer_unacked: 0,
            queue: VecDeque::new(),
            releases: Rc::new(Releases::new()),
            failed: false,
            stats: ShmStats::default(),
        })
    }

    /// The pool this side sends from.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Counters so far (the driver's own, sleeps and wake-ups, included).
    pub fn stats(&self) -> ShmStats {
        self.stats
    }

    pub(crate) fn stats_mut(&mut self) -> &mut ShmStats {
        &mut self.stats
    }

    /// Credits left: blocks this side may publish before an acknowledgement.
    pub fn credits(&self) -> u32 {
        self.credits
    }

    /// Whether blocks are ready and wait for a credit or ring room.
    pub fn has_ready(&self) -> bool {
        self.blocks.len() > self.published
    }

    /// Whether something waits to be published: messages in the block being filled or in
    /// ready blocks, or acknowledgements owed.
    pub fn has_unsent(&self) -> bool {
        self.filling.as_ref().is_some_and(|f| f.count > 0) || self.has_ready() || self.owes_acks()
    }

    /// Whether acknowledgements are owed to the peer.
    pub fn owes_acks(&self) -> bool {
        self.releases.pending.get() > 0
    }

    /// Bytes sent and not yet acknowledged: published blocks and the values they reference.
    pub fn in_flight(&self) -> usize {
        self.blocks
            .iter()
            .take(self.published)
            .map(|f| f.len as usize + f.held.iter().map(SharedBuf::len).sum::<usize>())
            .sum()
    }

    /// Blocks published and not yet acknowledged (each holds a credit).
    pub fn blocks_in_flight(&self) -> usize {
        self.published
    }

    /// The request id the next message gets implicitly (not written to shared memory).
    pub fn next_request_id(&self) -> u64 {
        self.send_seq
    }

    /// `Err(Poisoned)` once an operation has failed.
    pub fn check(&self) -> Result<(), TransportError> {
        if self.failed {
            Err(TransportError::Poisoned)
        } else {
            Ok(())
        }
    }

    /// Poisons the endpoint and releases what it sends from; returns `e`.
    pub fn fail(&mut self, e: TransportError) -> TransportError {
        self.failed = true;
        self.filling = None;
        self.blocks.clear();
        self.published = 0;
        e
    }

    fn guard<T>(&mut self, r: Result<T, TransportError>) -> Result<T, TransportError> {
        r.map_err(|e| self.fail(e))
    }

    /// Whether a peer was found sleeping when an entry was pushed since the last call: the
    /// driver must wake it.
    pub fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.wake)
    }

    /// Makes sure a block is being filled and has room for `need` more bytes (a full one
    /// becomes ready).
    #[inline]
    fn room(&mut self, need: usize) -> Result<(), TransportError> {
        if self
            .filling
            .as_ref()
            .is_some_and(|f| (f.capacity - f.len) as usize >= need)
        {
            return Ok(());
        }
        self.new_block(need)
    }

    /// A new block to fill, from the pool, with room for `need` bytes; the one being filled,
    /// if any, becomes ready (or, empty, as a failed send leaves it, goes back to the pool).
    fn new_block(&mut self, need: usize) -> Result<(), TransportError> {
        if let Some(f) = self.filling.take()
            && f.count > 0
        {
            self.blocks.push_back(f);
        }
        let block = self
            .pool
            .alloc((PREAMBLE_LEN + need).max(self.setup.block_size))?;
        self.filling = Some(Block {
            bucket: (self.pool.offset_of(&block).expect("pool memory") / BLOCK_ALIGN) as u32,
            // A pool buffer's size is below 2^32 (ferry-buf's regions are).
            capacity: block.capacity() as u32,
            len: PREAMBLE_LEN as u32,
            block,
            count: 0,
            held: std::mem::take(&mut self.spare_held),
        });
        Ok(())
    }

    /// The header of the next message; `send_seq` advances only once it is queued.
    fn header(&self, meta: Meta, len: usize, ferry: bool) -> MsgHeader {
        let implicit = meta.request_id == self.send_seq;
        MsgHeader {
            len: len as u32,
            kind: meta.kind,
            flags: meta.flags,
            form: if ferry { FORM_FERRY } else { 0 } | if implicit { 0 } else { FORM_EXPLICIT_ID },
            request_id: if implicit { 0 } else { meta.request_id },
        }
    }

    /// A message was written in the filling block at `space` bytes from its end.
    #[inline]
    fn queued(&mut self, space: usize) {
        let f = self.filling.as_mut().expect("the message's block");
        // At most the room checked, below the capacity.
        f.len += space as u32;
        f.count += 1;
        self.send_seq += 1;
        self.stats.messages_sent += 1;
        if f.len as usize >= self.setup.block_size || f.count >= self.setup.block_messages {
            let f = self.filling.take().expect("the message's block");
            self.blocks.push_back(f);
        }
    }

    /// Queues a Ferry message in the block being filled: its header segment is written there,
    /// its zero-copy values are referenced where they lie in the pool (values elsewhere are
    /// copied into the pool once). A failed send queues nothing and uses no request id.
    // Inlined into the connection's `send`: one call layer less per message.
    #[inline]
    pub fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.check()?;
        let layout = msg.layout();
        if layout.head_len > u32::MAX as usize {
            return Err(TransportError::TooLong {
                len: layout.head_len,
                max: u32::MAX as usize,
            });
        }
        let space = message_space(layout.head_len);
        let header = self.header(meta, layout.head_len, true);
        self.room(space)?;
        let pool = &self.pool;
        let Block {
            block,
            bucket,
            len: at,
            held,
            ..
        } = self.filling.as_mut().expect("room made it");
        let (at, block_offset) = (*at as usize, *bucket as usize * BLOCK_ALIGN);
        let (mut referenced, mut copied) = (0u64, 0u64);
        let mut lost = None;
        let held_before = held.len();
        let out = &mut block.capacity_mut()[at..at + MSG_HEADER_LEN + layout.head_len];
        header.write(out);
        let written = msg.write_head_in(
            &layout,
            &mut out[MSG_HEADER_LEN..],
            (block_offset + at + MSG_HEADER_LEN) as u64,
            &mut |value| {
                let buf = match pool.recover(value) {
                    Some(buf) => {
                        referenced += value.len() as u64;
                        buf
                    }
                    None => match pool.copy_from(value) {
                        Ok(buf) => {
                            copied += value.len() as u64;
                            buf
                        }
                        Err(e) => {
                            lost = Some(e);
                            return None;
                        }
                    },
                };
                let offset = pool.offset_of(&buf)? as u64;
                held.push(buf);
                Some(offset)
            },
        );
        if let Err(e) = lost.map_or(written.map_err(TransportError::from), |e| Err(e.into())) {
            held.truncate(held_before);
            return Err(e);
        }
        self.stats.bytes_referenced += referenced;
        self.stats.bytes_copied_in += copied;
        self.queued(space);
        Ok(())
    }

    /// Queues a raw payload, copied into the block being filled (the receiver reads raw
    /// payloads contiguously, so gather parts are copied too).
    pub fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        self.check()?;
        let len = payload.len();
        if len > u32::MAX as usize {
            return Err(TransportError::TooLong {
                len,
                max: u32::MAX as usize,
            });
        }
        let (head, parts): (&[u8], &[SharedBuf]) = match payload {
            Payload::Bytes(bytes) => (bytes, &[]),
            Payload::Gather { head, parts } => (head, parts),
        };
        let space = message_space(len);
        let header = self.header(meta, len, false);
        self.room(space)?;
        let f = self.filling.as_mut().expect("room made it");
        let at = f.len as usize;
        let out = &mut f.block.capacity_mut()[at..at + MSG_HEADER_LEN + len];
        header.write(out);
        let mut pos = MSG_HEADER_LEN;
        for part in std::iter::once(head).chain(parts.iter().map(|p| &p[..])) {
            out[pos..pos + part.len()].copy_from_slice(part);
            pos += part.len();
        }
        self.queued(space);
        Ok(())
    }

    /// Makes the block being filled ready, if it holds a message.
    pub fn close_block(&mut self) {
        if let Some(f) = self.filling.take_if(|f| f.count > 0) {
            self.blocks.push_back(f);
        }
    }

    fn take_acks(&mut self) -> u32 {
        let acks = self.releases.pending.replace(0);
        self.peer_unacked -= acks;
        acks
    }

    /// Publishes ready blocks while credits and ring room last; returns whether none is left.
    #[inline]
    pub fn publish(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        self.check()?;
        self.publish_unchecked(mem)
    }

    /// [`publish`](Self::publish) without the poisoned check, for a driver that made it
    /// ([`check`](Self::check)) earlier in the same operation (nothing since has failed, or
    /// the operation would have returned): a receive passes through four such layers.
    #[inline]
    pub(crate) fn publish_unchecked(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        // Inlined: a caller that looks for work (every poll) finds none without a call.
        if !self.has_ready() {
            return Ok(true);
        }
        let r = self.publish_inner(mem);
        self.guard(r)
    }

    fn publish_inner(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        while self.has_ready() {
            if self.credits == 0 || !self.rings.has_space(mem)? {
                return Ok(false);
            }
            let acks = self.take_acks();
            let b = &mut self.blocks[self.published];
            Preamble {
                count: b.count,
                len: b.len,
                acks,
            }
            .write(b.block.capacity_mut());
            let bucket = b.bucket;
            self.published += 1;
            self.credits -= 1;
            self.stats.blocks_sent += 1;
            self.wake |= self
                .rings
                .push(mem, entry(bucket, 0), self.setup.peer_never_sleeps);
        }
        Ok(true)
    }

    /// Sends the acknowledgements owed in an entry of their own (it costs no credit: two peers
    /// out of credits, each owing the other, would otherwise wait for ever). Returns whether
    /// none is left owed (false: the ring is full).
    #[inline]
    pub fn publish_acks(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        self.check()?;
        self.publish_acks_unchecked(mem)
    }

    /// [`publish_acks`](Self::publish_acks) without the poisoned check (see
    /// [`publish_unchecked`](Self::publish_unchecked)).
    #[inline]
    pub(crate) fn publish_acks_unchecked(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        if !self.owes_acks() {
            return Ok(true);
        }
        self.publish_owed_acks(mem)
    }

    fn publish_owed_acks(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        let space = self.rings.has_space(mem);
        if !self.guard(space)? {
            return Ok(false);
        }
        let acks = self.take_acks();
        self.stats.ack_entries_sent += 1;
        self.wake |= self
            .rings
            .push(mem, entry(NO_BLOCK, acks), self.setup.peer_never_sleeps);
        Ok(true)
    }

    #[inline(always)]
    fn acked(&mut self, n: u32, at: usize) -> Result<(), TransportError> {
        if n as usize > self.published {
            return Err(protocol("acknowledgement of blocks never sent", at));
        }
        self.published -= n as usize;
        self.credits += n;
        let mut left = n;
        // The first block acknowledged is the next to fill if none is being filled: moved once,
        // straight into place, then emptied there. The others go back to the pool, out of line
        // (a block at a time, as with one in flight, has none).
        if left > 0 && self.filling.is_none() {
            self.filling = self.blocks.pop_front();
            let f = self.filling.as_mut().expect("counted in flight");
            f.held.clear();
            // The lines its messages filled, which the peer has read since (it loads the
            // first `PREFETCH_LEN` bytes of every block): taken back for writing now, while
            // this side still has the peer's messages to read, not by the next send's stores.
            let used = (f.len as usize).min(PREFETCH_LEN);
            crate::sys::prefetch_write(&mut f.block.capacity_mut()[..used]);
            f.len = PREAMBLE_LEN as u32;
            f.count = 0;
            left -= 1;
        }
        if left > 0 {
            self.release_acked(left);
        }
        Ok(())
    }

    /// Gives `n` acknowledged blocks back to the pool, oldest first (a block is being filled);
    /// keeps the largest emptied list of held values for the next block taken.
    fn release_acked(&mut self, n: u32) {
        for _ in 0..n {
            let mut f = self.blocks.pop_front().expect("counted in flight");
            f.held.clear();
            if self.spare_held.capacity() < f.held.capacity() {
                self.spare_held = f.held;
            }
        }
    }

    /// Consumes every entry the peer has published: acknowledgements free blocks and return
    /// credits, blocks are queued for [`next`](Self::next). Returns whether anything arrived.
    /// A peer that closed with nothing left to consume is `Err(Closed)`.
    pub fn poll(&mut self, mem: &mut impl Shared) -> Result<bool, TransportError> {
        self.check()?;
        let r = self.poll_inner(mem, true);
        self.guard(r)
    }

    /// [`poll`](Self::poll) for a busy-polling loop: when no entry has arrived, the peer's
    /// `closed` word and ring head (read to tell a close or a lying peer from nothing yet)
    /// are read only if `look`. A loop that spins sets `look` now and then, so that most of
    /// its spins read one line, the next slot, and do not pull the head's line back each
    /// time the peer publishes. A close is then seen at the next `look`.
    pub fn poll_spinning(&mut self, mem: &mut impl Shared, look: bool) -> Result<bool, TransportError> {
        self.check()?;
        self.poll_spinning_unchecked(mem, look)
    }

    /// [`poll_spinning`](Self::poll_spinning) without the poisoned check (see
    /// [`publish_unchecked`](Self::publish_unchecked)).
    #[inline]
    pub(crate) fn poll_spinning_unchecked(
        &mut self,
        mem: &mut impl Shared,
        look: bool,
    ) -> Result<bool, TransportError> {
        let r = self.poll_inner(mem, look);
        self.guard(r)
    }

    fn poll_inner(&mut self, mem: &mut impl Shared, look: bool) -> Result<bool, TransportError> {
        // At most a ring's worth per call: bounded work, whatever tags the peer writes.
        let mut taken = 0;
        while taken < self.setup.ring {
            let Some((e, slot)) = self.rings.next_entry(mem) else {
                break;
            };
            taken += 1;
            let (bucket, acks) = split_entry(e);
            if bucket == NO_BLOCK {
                self.acked(acks, slot)?;
            } else {
                // The preamble, the first message header and the start of its payload: their
                // addresses are known now, so their lines travel together instead of each
                // after the one that names it.
                mem.prefetch(bucket as usize * BLOCK_ALIGN, PREFETCH_LEN);
                self.receive_block(mem, bucket as usize * BLOCK_ALIGN)?;
            }
        }
        if taken == 0 {
            if look {
                self.rings.idle(mem)?;
            }
            return Ok(false);
        }
        self.rings.consumed(mem);
        Ok(true)
    }

    fn receive_block(&mut self, mem: &impl Shared, at: usize) -> Result<(), TransportError> {
        let pre = mem
            .load_words(at)
            .ok_or_else(|| protocol("block outside the shared memory", at))?;
        let pre = Preamble::from_words(pre);
        let len = pre.len as usize;
        if len < PREAMBLE_LEN || !mem.contains(at, len) {
            return Err(protocol("block length outside the shared memory", at));
        }
        if pre.count as usize > (len - PREAMBLE_LEN) / MSG_HEADER_LEN {
            return Err(protocol("more messages than the block holds", at));
        }
        self.peer_unacked += 1;
        if self.peer_unacked > self.setup.credits {
            return Err(protocol("the peer sent beyond its credits", at));
        }
        self.acked(pre.acks, at)?;
        self.stats.blocks_received += 1;
        // One hold per message; the block is released when the last of them (or, with no
        // message, at once) goes.
        let seq = self.releases.add(pre.count.max(1));
        if pre.count == 0 {
            self.releases.release(seq);
        } else {
            // Messages are parsed as they are handed out: queued work stays bounded by the
            // credits, whatever counts the peer writes.
            self.queue.push_back(Pending {
                seq,
                pos: at + PREAMBLE_LEN,
                end: at + len,
                left: pre.count,
            });
        }
        Ok(())
    }

    /// The next message of the oldest received block, its header validated.
    #[inline]
    pub fn next(&mut self, mem: &impl Shared) -> Result<Option<Incoming>, TransportError> {
        self.check()?;
        self.next_unchecked(mem)
    }

    /// [`next`](Self::next) without the poisoned check (see
    /// [`publish_unchecked`](Self::publish_unchecked)).
    #[inline]
    pub(crate) fn next_unchecked(&mut self, mem: &impl Shared) -> Result<Option<Incoming>, TransportError> {
        // Inlined: a caller that looks before polling (every receive) finds none without a call.
        if self.queue.is_empty() {
            return Ok(None);
        }
        let r = self.next_inner(mem);
        self.guard(r)
    }

    fn next_inner(&mut self, mem: &impl Shared) -> Result<Option<Incoming>, TransportError> {
        let p = self.queue.front_mut().expect("a received block");
        let pos = p.pos;
        if MSG_HEADER_LEN > p.end - pos {
            return Err(protocol("message header past the block", pos));
        }
        let h = mem
            .load_words(pos)
            .ok_or_else(|| protocol("message header past the block", pos))?;
        let h = MsgHeader::from_words(h);
        if h.form & !(FORM_FERRY | FORM_EXPLICIT_ID) != 0 {
            return Err(protocol("unknown message form", pos));
        }
        let space = message_space(h.len as usize);
        if space > p.end - pos {
            return Err(protocol("message past the block", pos));
        }
        p.pos += space;
        p.left -= 1;
        // This message's hold, counted when the block arrived.
        let hold = Hold {
            seq: p.seq,
            releases: Rc::clone(&self.releases),
        };
        if p.left == 0 {
            self.queue.pop_front();
        }
        let implicit = self.recv_seq;
        self.recv_seq += 1;
        self.stats.messages_received += 1;
        Ok(Some(Incoming {
            meta: Meta {
                kind: h.kind,
                flags: h.flags,
                request_id: if h.form & FORM_EXPLICIT_ID != 0 {
                    h.request_id
                } else {
                    implicit
                },
            },
            ferry: h.form & FORM_FERRY != 0,
            offset: pos + MSG_HEADER_LEN,
            len: h.len as usize,
            hold,
        }))
    }

    /// Announces that this side is about to wait for the peer, then looks again: returns
    /// whether the peer published or closed since (then do not sleep). While announced, the
    /// peer's next entry, a block or an acknowledgement alone, reports a wake-up
    /// ([`take_wake`](Self::take_wake) on its side).
    pub fn announce_sleep(&mut self, mem: &mut impl Shared) -> bool {
        self.announced = true;
        self.rings.announce_sleep(mem)
    }

    /// Whether an [`announce_sleep`](Self::announce_sleep) is up (not yet withdrawn).
    pub fn announced(&self) -> bool {
        self.announced
    }

    /// Withdraws [`announce_sleep`](Self::announce_sleep); with none up, does nothing (no
    /// store to the word the peer reads on every publication).
    pub fn withdraw(&mut self, mem: &mut impl Shared) {
        if std::mem::take(&mut self.announced) {
            self.rings.withdraw(mem);
        }
    }

    /// Tells the peer this side has shut down (a sleeping peer is to be woken: see
    /// [`take_wake`](Self::take_wake)).
    pub fn close(&mut self, mem: &mut impl Shared) {
        self.wake |= self.rings.close(mem);
    }
}
