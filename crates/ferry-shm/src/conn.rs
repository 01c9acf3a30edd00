//! A shared-memory connection: setup, the block protocol, credits, acknowledgements and
//! notification.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{Ordering, fence};
use std::time::{Duration, Instant};

use ferry_buf::{BufMut, Pool, SharedBuf};
use ferry_transport::{FrameError, Meta, Payload, TransportError};
use ferry_wire::{DecodeError, Limits, MessageDesc, Outgoing, View};

use crate::layout::{
    BLOCK_ALIGN, CLOSED, CONTROL_LEN, FORM_EXPLICIT_ID, FORM_FERRY, MSG_HEADER_LEN, MsgHeader, NO_BLOCK,
    PEER_TAIL, PREAMBLE_LEN, Preamble, RING, RING_AT, RING_HEAD, SLEEPING, entry, message_space, split_entry,
};
use crate::sys::{self, Mapping, OwnWord};

/// Connection settings.
#[derive(Debug, Clone)]
pub struct ShmConfig {
    /// Bytes per block (default 16 KiB). Messages are batched into blocks; a message larger
    /// than a block gets a block of its own.
    pub block_size: usize,
    /// Blocks this side may have unacknowledged (default 256; the smaller of the two sides'
    /// values is used, at most half the ring).
    pub credits: u32,
    /// How long to busy-poll for the peer before sleeping on the doorbell (default 50 µs).
    /// `Duration::ZERO` sleeps at once (no idle CPU); `Duration::MAX` never sleeps.
    pub spin: Duration,
}

impl Default for ShmConfig {
    fn default() -> ShmConfig {
        ShmConfig {
            block_size: 16 << 10,
            credits: 256,
            spin: Duration::from_micros(50),
        }
    }
}

/// Counters of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShmStats {
    /// Messages sent.
    pub messages_sent: u64,
    /// Blocks published.
    pub blocks_sent: u64,
    /// Acknowledgement-only ring entries (no data to carry them).
    pub ack_entries_sent: u64,
    /// Bytes of zero-copy values referenced in place in shared memory.
    pub bytes_referenced: u64,
    /// Bytes of values copied into shared memory (they lived outside this connection's pool).
    pub bytes_copied_in: u64,
    /// Messages received.
    pub messages_received: u64,
    /// Blocks received.
    pub blocks_received: u64,
    /// Times a send waited for credits.
    pub credit_waits: u64,
    /// Times this side went to sleep on its doorbell.
    pub sleeps: u64,
    /// Times this side rang the peer's doorbell.
    pub wakeups: u64,
}

const MAGIC: [u8; 8] = *b"FERRYSHM";
/// How long the setup exchange may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const VERSION: u32 = 1;
const HELLO_LEN: usize = 32;

/// Received blocks, in order, and which of them every frame has released. Acknowledgements
/// cover the released prefix: a block is acknowledged only when it and every earlier block
/// have no live frame, so the sender can reclaim in order.
#[derive(Debug, Default)]
struct Releases {
    /// Sequence number of `live[0]`.
    first: u64,
    /// Per received block: whether any frame of it is alive.
    live: VecDeque<bool>,
    /// Released blocks not yet acknowledged to the peer.
    pending: u32,
}

impl Releases {
    fn release(&mut self, seq: u64) {
        let i = (seq - self.first) as usize;
        self.live[i] = false;
        while self.live.front() == Some(&false) {
            self.live.pop_front();
            self.first += 1;
            self.pending += 1;
        }
    }
}

/// Keeps a received block unacknowledged while a frame of it lives.
#[derive(Debug)]
struct BlockToken {
    seq: u64,
    releases: Rc<RefCell<Releases>>,
}

impl Drop for BlockToken {
    fn drop(&mut self) {
        self.releases.borrow_mut().release(self.seq);
    }
}

/// A received block whose messages are handed out one at a time.
#[derive(Debug)]
struct Pending {
    token: Rc<BlockToken>,
    /// Next message header.
    pos: usize,
    end: usize,
    left: u32,
}

/// A received message: read in place in the peer's memory, which stays mapped and
/// unacknowledged (so the peer cannot reuse it) until this frame is dropped. `!Send`: frames
/// belong to the connection's thread.
#[derive(Debug, Clone)]
pub struct ShmFrame {
    meta: Meta,
    ferry: bool,
    offset: usize,
    len: usize,
    mapping: Rc<Mapping>,
    _token: Rc<BlockToken>,
}

impl ShmFrame {
    /// Kind, flags and request id.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// Whether the frame is a Ferry message (sent with `send`) rather than raw bytes.
    pub fn is_message(&self) -> bool {
        self.ferry
    }

    /// The payload of a frame sent with `send_payload`, in the peer's memory; `None` for a
    /// Ferry message, whose values lie elsewhere in the region (use [`view`](Self::view)).
    pub fn bytes(&self) -> Option<&[u8]> {
        (!self.ferry).then(|| &self.mapping.bytes()[self.offset..self.offset + self.len])
    }

    /// Validates the Ferry message and returns its view, reading in place in the peer's memory.
    /// `limits` apply as given: `max_message_len` bounds the bytes the message references
    /// (its header segment and values), not the region they lie in (`View::decode_at`).
    pub fn view(&self, desc: &'static MessageDesc, limits: &Limits) -> Result<View<'_>, DecodeError> {
        View::decode_at(self.region(), self.offset, desc, limits)
    }

    /// The whole region the peer shares (its memfd): what a view reads from.
    pub fn region(&self) -> &[u8] {
        self.mapping.bytes()
    }

    /// Offset of the payload (a Ferry message's root header) in [`region`](Self::region).
    pub fn offset(&self) -> usize {
        self.offset
    }
}

/// Waits for connections on a Unix socket path.
#[derive(Debug)]
pub struct ShmListener {
    listener: UnixListener,
    path: PathBuf,
}

impl ShmListener {
    /// Binds `path`, first removing a stale socket left there (only a socket: any other file
    /// makes `bind` fail).
    pub fn bind(path: impl AsRef<Path>) -> Result<ShmListener, TransportError> {
        use std::os::unix::fs::FileTypeExt;
        let path = path.as_ref().to_path_buf();
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(&path);
        }
        let listener = UnixListener::bind(&path).map_err(|e| TransportError::io("bind", e))?;
        Ok(ShmListener { listener, path })
    }

    /// Accepts one connection; its blocks and values are allocated from `pool`, which must be
    /// [`shared`](ferry_buf::PoolConfig::shared).
    pub fn accept(&self, pool: &Pool, config: &ShmConfig) -> Result<ShmConnection, TransportError> {
        let (sock, _) = self
            .listener
            .accept()
            .map_err(|e| TransportError::io("accept", e))?;
        ShmConnection::handshake(sock, pool, config)
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ShmListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn protocol(error: FrameError, offset: usize) -> TransportError {
    TransportError::Frame {
        offset: offset as u64,
        error,
    }
}

/// One end of a shared-memory connection. See the crate docs for the protocol.
#[derive(Debug)]
pub struct ShmConnection {
    sock: UnixStream,
    pool: Pool,
    config: ShmConfig,
    /// This side's control area, in its pool (the peer maps it).
    control: BufMut,
    doorbell: OwnedFd,
    peer_doorbell: OwnedFd,
    peer: Rc<Mapping>,
    peer_control: usize,
    credits: u32,
    max_credits: u32,
    // Sending.
    block: Option<BufMut>,
    block_count: u32,
    held: Vec<SharedBuf>,
    in_flight: VecDeque<(SharedBuf, Vec<SharedBuf>)>,
    head: u64,
    send_seq: u64,
    // Receiving.
    peer_tail: u64,
    recv_seq: u64,
    blocks_seen: u64,
    peer_unacked: u32,
    queue: VecDeque<Pending>,
    releases: Rc<RefCell<Releases>>,
    failed: bool,
    spins: u32,
    stats: ShmStats,
}

impl ShmConnection {
    /// Connects to a listener at `path`.
    pub fn connect(
        path: impl AsRef<Path>,
        pool: &Pool,
        config: &ShmConfig,
    ) -> Result<ShmConnection, TransportError> {
        let sock = UnixStream::connect(path).map_err(|e| TransportError::io("connect", e))?;
        ShmConnection::handshake(sock, pool, config)
    }

    fn handshake(sock: UnixStream, pool: &Pool, config: &ShmConfig) -> Result<ShmConnection, TransportError> {
        let Some(memfd) = pool.memfd() else {
            return Err(TransportError::Config(
                "the shared-memory transport needs a shared pool".into(),
            ));
        };
        if config.block_size < BLOCK_ALIGN || config.block_size > pool.max_class() {
            return Err(TransportError::Config(format!(
                "block_size must be between {BLOCK_ALIGN} and the pool's largest buffer ({})",
                pool.max_class()
            )));
        }
        let mut control = pool.alloc(CONTROL_LEN)?;
        control.capacity_mut()[..CONTROL_LEN].fill(0);
        control.set_len(CONTROL_LEN);
        let control_offset = pool.offset_of(&control).expect("pool memory");
        let doorbell = sys::eventfd().map_err(|e| TransportError::io("eventfd", e))?;
        let credits = config.credits.clamp(1, (RING / 2) as u32);

        let mut hello = [0u8; HELLO_LEN];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..12].copy_from_slice(&VERSION.to_le_bytes());
        hello[12..16].copy_from_slice(&credits.to_le_bytes());
        hello[16..24].copy_from_slice(&(control_offset as u64).to_le_bytes());
        hello[24..28].copy_from_slice(&(RING as u32).to_le_bytes());
        // A peer that connects and says nothing must not hold `accept` for ever.
        sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))
            .and_then(|()| sock.set_write_timeout(Some(HANDSHAKE_TIMEOUT)))
            .map_err(|e| TransportError::io("setsockopt(SO_RCVTIMEO)", e))?;
        sys::send_fds(&sock, &hello, &[memfd, doorbell.as_fd()])
            .map_err(|e| TransportError::io("sendmsg(SCM_RIGHTS)", e))?;
        let mut theirs = [0u8; HELLO_LEN];
        let mut fds =
            sys::recv_fds(&sock, &mut theirs, 2).map_err(|e| TransportError::io("recvmsg(SCM_RIGHTS)", e))?;
        let bad =
            |what: &'static str| TransportError::Config(format!("bad setup message from the peer: {what}"));
        if theirs[..8] != MAGIC {
            return Err(bad("not a Ferry shared-memory peer"));
        }
        let word = |i: usize| u32::from_le_bytes(theirs[i..i + 4].try_into().expect("4 bytes"));
        if word(8) != VERSION {
            return Err(bad("unsupported version"));
        }
        if word(24) != RING as u32 {
            return Err(bad("ring size differs"));
        }
        if fds.len() != 2 {
            return Err(bad("expected a memfd and an eventfd"));
        }
        let peer_doorbell = fds.pop().expect("two");
        sys::adopt_doorbell(&peer_doorbell).map_err(|e| TransportError::io("the peer's doorbell", e))?;
        let peer_memfd = fds.pop().expect("two");
        let peer = Mapping::map_readonly(peer_memfd.as_fd())
            .map_err(|e| TransportError::io("mmap of the peer's memfd", e))?;
        drop(peer_memfd);
        let peer_control = u64::from_le_bytes(theirs[16..24].try_into().expect("8 bytes"));
        let peer_control = usize::try_from(peer_control).map_err(|_| bad("control area offset"))?;
        if peer_control % 8 != 0 || !peer.contains(peer_control, CONTROL_LEN) {
            return Err(bad("control area outside the shared memory"));
        }
        let credits = credits.min(word(12).max(1));
        sock.set_nonblocking(true)
            .map_err(|e| TransportError::io("fcntl(O_NONBLOCK)", e))?;
        Ok(ShmConnection {
            sock,
            pool: pool.clone(),
            config: config.clone(),
            control,
            doorbell,
            peer_doorbell,
            peer: Rc::new(peer),
            peer_control,
            credits,
            max_credits: credits,
            block: None,
            block_count: 0,
            held: Vec::new(),
            in_flight: VecDeque::new(),
            head: 0,
            send_seq: 0,
            peer_tail: 0,
            recv_seq: 0,
            blocks_seen: 0,
            peer_unacked: 0,
            queue: VecDeque::new(),
            releases: Rc::default(),
            failed: false,
            spins: 0,
            stats: ShmStats::default(),
        })
    }

    /// The pool this connection sends from: build values in it to send them with no copy.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Counters so far.
    pub fn stats(&self) -> ShmStats {
        self.stats
    }

    /// Bytes sent and not yet acknowledged: the published blocks the peer may still read and
    /// the values they reference (held until the acknowledgement).
    pub fn in_flight(&self) -> usize {
        self.in_flight
            .iter()
            .map(|(block, values)| block.len() + values.iter().map(SharedBuf::len).sum::<usize>())
            .sum()
    }

    /// Blocks sent and not yet acknowledged (each holds a credit).
    pub fn blocks_in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The request id the next message gets implicitly: send it with this id and the id is
    /// not written to shared memory (the receiver counts messages the same way).
    pub fn next_request_id(&self) -> u64 {
        self.send_seq
    }

    fn own(&mut self, offset: usize) -> OwnWord {
        OwnWord::new(self.control.capacity_mut(), offset)
    }

    fn peer_word(&self, offset: usize) -> u64 {
        self.peer.load_u64(self.peer_control + offset).unwrap_or(0)
    }

    fn check(&self) -> Result<(), TransportError> {
        if self.failed {
            Err(TransportError::Poisoned)
        } else {
            Ok(())
        }
    }

    fn fail(&mut self, e: TransportError) -> TransportError {
        self.failed = true;
        self.block = None;
        self.held.clear();
        self.in_flight.clear();
        e
    }

    /// Space for `need` bytes in the current block, publishing it first if it is full.
    fn room(&mut self, need: usize) -> Result<(), TransportError> {
        if let Some(block) = &self.block {
            if block.capacity() - block.len() >= need {
                return Ok(());
            }
            self.publish()?;
        }
        let mut block = self
            .pool
            .alloc((PREAMBLE_LEN + need).max(self.config.block_size))?;
        block.set_len(PREAMBLE_LEN);
        self.block = Some(block);
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

    /// Queues a Ferry message in the current block: its header segment is written there, and
    /// its zero-copy values are referenced where they lie in this connection's pool (values
    /// elsewhere are copied into the pool once). The block is published when full or on
    /// [`flush`](Self::flush).
    pub fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.check()?;
        let layout = msg.layout();
        if layout.head_len > u32::MAX as usize {
            return Err(TransportError::TooLong {
                len: layout.head_len,
                max: u32::MAX as usize,
            });
        }
        self.room(message_space(layout.head_len))?;
        let header = self.header(meta, layout.head_len, true);
        let pool = &self.pool;
        let held = &mut self.held;
        let block = self.block.as_mut().expect("room allocated it");
        let at = block.len();
        let block_offset = pool.offset_of(block).expect("pool memory");
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
            // Nothing was queued: the message's id is not used, its values not held.
            self.held.truncate(held_before);
            return Err(e);
        }
        block.set_len(at + message_space(layout.head_len));
        self.send_seq += 1;
        self.block_count += 1;
        self.stats.messages_sent += 1;
        self.stats.bytes_referenced += referenced;
        self.stats.bytes_copied_in += copied;
        if self.block_count >= 1
            && self
                .block
                .as_ref()
                .is_some_and(|b| b.len() >= self.config.block_size)
        {
            self.publish()?;
        }
        Ok(())
    }

    /// Queues a raw payload, copied into the current block (shared memory: the receiver reads
    /// raw payloads contiguously, so gather parts are copied too).
    pub fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        self.check()?;
        let len = payload.len();
        let (head, parts): (&[u8], &[SharedBuf]) = match payload {
            Payload::Bytes(bytes) => (bytes, &[]),
            Payload::Gather { head, parts } => (head, parts),
        };
        if len > u32::MAX as usize {
            return Err(TransportError::TooLong {
                len,
                max: u32::MAX as usize,
            });
        }
        self.room(message_space(len))?;
        let header = self.header(meta, len, false);
        let block = self.block.as_mut().expect("room allocated it");
        let at = block.len();
        let out = &mut block.capacity_mut()[at..at + MSG_HEADER_LEN + len];
        header.write(out);
        let mut pos = MSG_HEADER_LEN;
        for part in std::iter::once(head).chain(parts.iter().map(|p| &p[..])) {
            out[pos..pos + part.len()].copy_from_slice(part);
            pos += part.len();
        }
        block.set_len(at + message_space(len));
        self.send_seq += 1;
        self.block_count += 1;
        self.stats.messages_sent += 1;
        if self
            .block
            .as_ref()
            .is_some_and(|b| b.len() >= self.config.block_size)
        {
            self.publish()?;
        }
        Ok(())
    }

    /// Publishes the current block (waiting for a credit if none is left) and any
    /// acknowledgements owed: the Nagle-like tick of the event loop.
    pub fn flush(&mut self) -> Result<(), TransportError> {
        self.check()?;
        if self.block.is_some() {
            self.publish()?;
        }
        self.publish_acks()
    }

    fn take_acks(&mut self) -> u32 {
        let acks = std::mem::take(&mut self.releases.borrow_mut().pending);
        self.peer_unacked -= acks;
        acks
    }

    /// Waits for room in this side's ring (the peer consumes entries as it polls).
    fn ring_space(&mut self) -> Result<(), TransportError> {
        let mut start = None;
        loop {
            let consumed = self.peer_word(PEER_TAIL);
            if consumed > self.head {
                return Err(self.fail(protocol(
                    FrameError::Protocol("the peer consumed unpublished entries"),
                    0,
                )));
            }
            if self.head - consumed < RING as u64 {
                return Ok(());
            }
            self.wait(&mut start)?;
        }
    }

    fn push_entry(&mut self, e: u64) {
        let slot = RING_AT + 8 * (self.head % RING as u64) as usize;
        self.own(slot).store(e);
        self.head += 1;
        let head = self.head;
        self.own(RING_HEAD).store(head);
        self.wake();
    }

    fn wake(&mut self) {
        // Pairs with the fence in `wait`: either the peer sees our new head, or we see its
        // sleeping flag and ring its doorbell.
        fence(Ordering::SeqCst);
        if self.peer_word(SLEEPING) != 0 {
            self.stats.wakeups += 1;
            let _ = sys::ring(self.peer_doorbell.as_fd());
        }
    }

    fn publish(&mut self) -> Result<(), TransportError> {
        let mut start = None;
        while self.credits == 0 {
            self.stats.credit_waits += 1;
            // Acknowledgement-only entries cost no credit: send what this side owes, or two
            // peers out of credits, each owing the other, would wait for ever.
            self.publish_acks()?;
            if !self.poll_incoming()? {
                self.wait(&mut start)?;
            }
        }
        self.ring_space()?;
        let mut block = self.block.take().expect("a block to publish");
        let preamble = Preamble {
            count: std::mem::take(&mut self.block_count),
            len: block.len() as u32,
            acks: self.take_acks(),
        };
        preamble.write(&mut block.capacity_mut()[..PREAMBLE_LEN]);
        let block = block.freeze();
        let bucket = (self.pool.offset_of(&block).expect("pool memory") / BLOCK_ALIGN) as u32;
        self.credits -= 1;
        self.in_flight.push_back((block, std::mem::take(&mut self.held)));
        self.stats.blocks_sent += 1;
        self.push_entry(entry(bucket, 0));
        Ok(())
    }

    fn publish_acks(&mut self) -> Result<(), TransportError> {
        if self.releases.borrow().pending == 0 {
            return Ok(());
        }
        self.ring_space()?;
        let acks = self.take_acks();
        self.stats.ack_entries_sent += 1;
        self.push_entry(entry(NO_BLOCK, acks));
        Ok(())
    }

    fn acked(&mut self, n: u32, at: usize) -> Result<(), TransportError> {
        if n as usize > self.in_flight.len() {
            return Err(protocol(
                FrameError::Protocol("acknowledgement of blocks never sent"),
                at,
            ));
        }
        self.in_flight.drain(..n as usize);
        self.credits += n;
        Ok(())
    }

    /// Processes every entry the peer has published: acknowledgements free blocks and return
    /// credits, blocks become frames. Returns whether anything arrived.
    fn poll_incoming(&mut self) -> Result<bool, TransportError> {
        let result = self.poll_inner();
        result.map_err(|e| self.fail(e))
    }

    fn poll_inner(&mut self) -> Result<bool, TransportError> {
        // `closed` before the head: a peer that publishes and then closes is seen to publish.
        let closed = self.peer_word(CLOSED) != 0;
        let head = self.peer_word(RING_HEAD);
        if head == self.peer_tail {
            return if closed {
                Err(TransportError::Closed)
            } else {
                Ok(false)
            };
        }
        if head < self.peer_tail || head - self.peer_tail > RING as u64 {
            return Err(protocol(
                FrameError::Protocol("ring head out of range"),
                self.peer_control,
            ));
        }
        while self.peer_tail < head {
            let slot = self.peer_control + RING_AT + 8 * (self.peer_tail % RING as u64) as usize;
            let (bucket, acks) = split_entry(self.peer.load_u64(slot).unwrap_or(0));
            self.peer_tail += 1;
            if bucket == NO_BLOCK {
                self.acked(acks, slot)?;
            } else {
                self.receive_block(bucket as usize * BLOCK_ALIGN)?;
            }
        }
        let tail = self.peer_tail;
        self.own(PEER_TAIL).store(tail);
        Ok(true)
    }

    fn receive_block(&mut self, at: usize) -> Result<(), TransportError> {
        let mut pre = [0u8; PREAMBLE_LEN];
        self.peer
            .copy_out(at, &mut pre)
            .ok_or_else(|| protocol(FrameError::Protocol("block outside the shared memory"), at))?;
        let pre = Preamble::read(&pre);
        let len = pre.len as usize;
        if len < PREAMBLE_LEN || !self.peer.contains(at, len) {
            return Err(protocol(
                FrameError::Protocol("block length outside the shared memory"),
                at,
            ));
        }
        if pre.count as usize > (len - PREAMBLE_LEN) / MSG_HEADER_LEN {
            return Err(protocol(
                FrameError::Protocol("more messages than the block holds"),
                at,
            ));
        }
        self.peer_unacked += 1;
        if self.peer_unacked > self.max_credits {
            return Err(protocol(
                FrameError::Protocol("the peer sent beyond its credits"),
                at,
            ));
        }
        self.acked(pre.acks, at)?;
        let seq = self.blocks_seen;
        self.blocks_seen += 1;
        self.stats.blocks_received += 1;
        self.releases.borrow_mut().live.push_back(true);
        let token = Rc::new(BlockToken {
            seq,
            releases: Rc::clone(&self.releases),
        });
        if pre.count > 0 {
            // Messages are parsed as they are handed out: queued work stays bounded by the
            // credits, whatever counts the peer writes.
            self.queue.push_back(Pending {
                token,
                pos: at + PREAMBLE_LEN,
                end: at + len,
                left: pre.count,
            });
        }
        // Frames share the token; the block is released when the last of them (or, with no
        // message, the token itself) goes.
        Ok(())
    }

    /// The next message of the oldest received block, validated.
    fn next_frame(&mut self) -> Result<Option<ShmFrame>, TransportError> {
        let Some(p) = self.queue.front_mut() else {
            return Ok(None);
        };
        let pos = p.pos;
        let mut h = [0u8; MSG_HEADER_LEN];
        if MSG_HEADER_LEN > p.end - pos {
            return Err(self.fail(protocol(
                FrameError::Protocol("message header past the block"),
                pos,
            )));
        }
        self.peer
            .copy_out(pos, &mut h)
            .expect("inside the block, inside the mapping");
        let h = MsgHeader::read(&h);
        if h.form & !(FORM_FERRY | FORM_EXPLICIT_ID) != 0 {
            return Err(self.fail(protocol(FrameError::Protocol("unknown message form"), pos)));
        }
        let space = message_space(h.len as usize);
        if space > p.end - pos {
            return Err(self.fail(protocol(FrameError::Protocol("message past the block"), pos)));
        }
        p.pos += space;
        p.left -= 1;
        let token = if p.left == 0 {
            self.queue.pop_front().expect("the front").token
        } else {
            Rc::clone(&p.token)
        };
        let implicit = self.recv_seq;
        self.recv_seq += 1;
        self.stats.messages_received += 1;
        Ok(Some(ShmFrame {
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
            mapping: Rc::clone(&self.peer),
            _token: token,
        }))
    }

    /// Waits a little for the peer: busy-polls until `config.spin` has passed since the first
    /// wait of this operation (`since`, set then),
    /// then sleeps on the doorbell (bounded, so a dead peer is noticed).
    fn wait(&mut self, since: &mut Option<Instant>) -> Result<(), TransportError> {
        // The clock is first read when a wait begins, not on every send or receive.
        let since = *since.get_or_insert_with(Instant::now);
        self.spins = self.spins.wrapping_add(1);
        // The clock is read every 64 spins (it cost a quarter of a busy-polling profile).
        let spin = self.config.spin;
        if !spin.is_zero() && (self.spins % 64 != 0 || since.elapsed() < spin) {
            std::hint::spin_loop();
            // A peer that dies sets no flag: look at the socket now and then, even when
            // configured never to sleep.
            if self.spins % 4096 == 0 && sys::hung_up(self.sock.as_fd()) {
                return Err(self.fail(TransportError::io(
                    "peer",
                    io::Error::from(io::ErrorKind::ConnectionReset),
                )));
            }
            return Ok(());
        }
        self.own(SLEEPING).store(1);
        fence(Ordering::SeqCst);
        let head = self.peer_word(RING_HEAD);
        let mut hung_up = false;
        if head == self.peer_tail {
            self.stats.sleeps += 1;
            hung_up = sys::wait(self.doorbell.as_fd(), self.sock.as_fd(), 100)
                .map_err(|e| TransportError::io("poll", e))?;
        }
        self.own(SLEEPING).store(0);
        sys::drain(self.doorbell.as_fd());
        if hung_up && self.peer_word(RING_HEAD) == self.peer_tail {
            let mut b = [0u8; 1];
            let closed = matches!((&self.sock).read(&mut b), Ok(0));
            if closed || self.peer_word(CLOSED) != 0 {
                let e = if self.peer_word(CLOSED) != 0 {
                    TransportError::Closed
                } else {
                    TransportError::io("peer", io::Error::from(io::ErrorKind::ConnectionReset))
                };
                return Err(self.fail(e));
            }
        }
        Ok(())
    }

    /// The next message: publishes what is queued and owed, then busy-polls and sleeps
    /// (per [`ShmConfig::spin`]) until the peer sends one.
    pub fn recv(&mut self) -> Result<ShmFrame, TransportError> {
        self.check()?;
        let mut start = None;
        loop {
            if let Some(frame) = self.next_frame()? {
                return Ok(frame);
            }
            self.flush()?;
            if !self.poll_incoming()? {
                self.wait(&mut start)?;
            }
        }
    }

    /// The next message if one has arrived, never waiting: `Ok(None)` when none has. Publishes
    /// the block being filled (and acknowledgements owed) when a credit is free; it never
    /// waits for one.
    ///
    /// Returning `Ok(None)` arms the doorbell: this side announces that it waits, so the peer's
    /// next publication writes the eventfd that [`as_fd`](AsFd::as_fd) returns, and a poll loop
    /// wakes. The announcement is withdrawn on the next call.
    pub fn try_recv(&mut self) -> Result<Option<ShmFrame>, TransportError> {
        self.check()?;
        self.own(SLEEPING).store(0);
        sys::drain(self.doorbell.as_fd());
        if let Some(frame) = self.next_frame()? {
            return Ok(Some(frame));
        }
        if self.credits > 0 {
            self.flush()?;
        } else {
            self.publish_acks()?;
        }
        if self.poll_incoming()? {
            return self.next_frame();
        }
        // Announce the wait, then look again: either the peer sees the flag and rings, or this
        // side sees what it published (the fences pair as in `wait` and `wake`).
        self.own(SLEEPING).store(1);
        fence(Ordering::SeqCst);
        if self.poll_incoming()? {
            self.own(SLEEPING).store(0);
            return self.next_frame();
        }
        if sys::hung_up(self.sock.as_fd()) {
            // The socket closed: take what was published before it did, then fail.
            if self.poll_incoming()? {
                return self.next_frame();
            }
            return Err(self.fail(TransportError::io(
                "peer",
                io::Error::from(io::ErrorKind::ConnectionReset),
            )));
        }
        Ok(None)
    }

    /// Waits until the peer has acknowledged every block sent (all values may be reused).
    pub fn wait_idle(&mut self) -> Result<(), TransportError> {
        self.flush()?;
        let mut start = None;
        while !self.in_flight.is_empty() {
            if !self.poll_incoming()? {
                self.publish_acks()?;
                self.wait(&mut start)?;
            }
        }
        Ok(())
    }
}

/// Dropping discards unflushed messages (as a TCP connection's queued frames are: flushing
/// here could wait for credits for ever) and releases blocks the peer has not acknowledged.
/// A peer that still holds frames of those blocks keeps reading valid memory (its mapping
/// stays), but the pool may reuse it: call [`ShmConnection::wait_idle`] before dropping when
/// the peer's frames must stay unchanged.
impl Drop for ShmConnection {
    fn drop(&mut self) {
        self.own(CLOSED).store(1);
        self.wake();
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// The doorbell: an eventfd the peer writes when it publishes while this side waits. See
/// [`ShmConnection::try_recv`] for how a poll loop arms it. A peer that dies without closing
/// does not ring it; the next call on the connection notices.
impl AsFd for ShmConnection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.doorbell.as_fd()
    }
}

impl ferry_transport::Transport for ShmConnection {
    type Frame = ShmFrame;

    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        ShmConnection::send(self, meta, msg)
    }

    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        ShmConnection::send_payload(self, meta, payload)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        ShmConnection::flush(self)
    }

    fn recv(&mut self) -> Result<ShmFrame, TransportError> {
        ShmConnection::recv(self)
    }

    fn try_recv(&mut self) -> Result<Option<ShmFrame>, TransportError> {
        ShmConnection::try_recv(self)
    }

    fn in_flight(&self) -> usize {
        ShmConnection::in_flight(self)
    }
}

impl ferry_transport::Received for ShmFrame {
    fn meta(&self) -> Meta {
        self.meta
    }

    fn bytes(&self) -> Option<&[u8]> {
        ShmFrame::bytes(self)
    }

    fn view(&self, desc: &'static MessageDesc, limits: &Limits) -> Result<View<'_>, DecodeError> {
        ShmFrame::view(self, desc, limits)
    }
}
