//! Hostile-peer tests: a peer that speaks the handshake (with the crate's own descriptor
//! passing) and then writes whatever it likes into its own shared memory: ring entries,
//! preambles, message headers, Ferry header segments, control words, and a doorbell or memfd
//! that misbehaves. Every violation must be a typed error (a
//! `FrameError::Protocol` frame error, or a `DecodeError` from `ShmFrame::view`), never a
//! panic, an out-of-bounds read or a hang; the victim's pool gets every buffer back.
//!
//! The victim is a real [`ShmConnection`]; the hostile peer and the victim run on one thread,
//! so every interleaving is deterministic: the peer writes, then the victim polls.

use ferry_wire::{Message as _, MessageView as _};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use ferry_buf::{BufMut, Pool, PoolConfig, SharedBuf};
use ferry_transport::{FrameError, Meta, Payload, TransportError};
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Context, Limits, Outgoing};

use crate::layout::{
    BLOCK_ALIGN, CLOSED, CONTROL_LEN, FORM_EXPLICIT_ID, FORM_FERRY, MSG_HEADER_LEN, MsgHeader, NO_BLOCK,
    PEER_TAIL, PREAMBLE_LEN, Preamble, RING, RING_AT, RING_HEAD, SLEEPING, entry, message_space, split_entry,
    tag, tagged,
};
use crate::sys::{self, Mapping};
use crate::{ShmConfig, ShmConnection, ShmFrame, ShmListener};

/// The setup message (see `ShmConnection::handshake`): magic, version, credits, control
/// area offset, ring size.
const HELLO_LEN: usize = 32;
const MAGIC: &[u8; 8] = b"FERRYSHM";
const DEADLINE: Duration = Duration::from_secs(10);
const ROLE_VAR: &str = "FERRY_SHM_UNIT_ROLE";

/// Small shared pools: 4 MiB memfds with 1 MiB regions.
fn pool() -> Pool {
    Pool::new(PoolConfig {
        shared: true,
        region_size: 1 << 20,
        max_bytes: 4 << 20,
        huge_pages: false,
        mlock: false,
    })
    .expect("shared pool")
}

fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

fn limits() -> Limits {
    Limits {
        max_message_len: 1 << 30,
        ..Limits::default()
    }
}

fn socket_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferry-shm-unit-{}-{name}.sock", std::process::id()))
}

fn config(credits: u32) -> ShmConfig {
    ShmConfig {
        credits,
        ..ShmConfig::default()
    }
}

/// A valid setup message naming a control area at `control`, offering `credits`.
fn hello(control: usize, credits: u32) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&2u32.to_le_bytes());
    h[12..16].copy_from_slice(&credits.to_le_bytes());
    h[16..24].copy_from_slice(&(control as u64).to_le_bytes());
    h[24..28].copy_from_slice(&(RING as u32).to_le_bytes());
    h
}

/// The victim accepts on a fresh listener after the hostile side has connected and `speak`
/// has written its setup message (queued in the socket: no second thread needed).
fn victim_accepts(
    name: &str,
    victim_pool: &Pool,
    config: &ShmConfig,
    speak: impl FnOnce(&UnixStream),
) -> (Result<ShmConnection, TransportError>, UnixStream) {
    let listener = ShmListener::bind(socket_path(name)).expect("bind");
    let sock = UnixStream::connect(listener.path()).expect("connect");
    speak(&sock);
    (listener.accept(victim_pool, config), sock)
}

/// The hostile peer: its own shared pool (whose memfd the victim maps), a control area and
/// blocks in it that it writes byte by byte, and a read-only view of the victim's memory.
struct Hostile {
    pool: Pool,
    control: BufMut,
    blocks: Vec<BufMut>,
    sock: UnixStream,
    _doorbell: OwnedFd,
    victim: Mapping,
    victim_control: usize,
    _victim_doorbell: OwnedFd,
    head: u64,
}

/// A victim connection and the hostile peer it is connected to.
struct Pair {
    hostile: Hostile,
    conn: ShmConnection,
    victim_pool: Pool,
}

impl Pair {
    /// Connects a victim (with `credits`) to a hostile peer offering `credits`.
    fn new(name: &str, credits: u32) -> Pair {
        Pair::with_doorbell(name, credits, None)
    }

    /// Like [`Pair::new`], with `doorbell` passed as the hostile side's doorbell instead of
    /// an eventfd.
    fn with_doorbell(name: &str, credits: u32, doorbell: Option<BorrowedFd<'_>>) -> Pair {
        Pair::with_hello(name, credits, doorbell, 0)
    }

    /// Like [`Pair::with_doorbell`], with `flags` in the setup message's flags word.
    fn with_hello(name: &str, credits: u32, doorbell: Option<BorrowedFd<'_>>, flags: u32) -> Pair {
        let pool = pool();
        let mut control = pool.alloc(CONTROL_LEN).unwrap();
        control.capacity_mut().fill(0);
        control.set_len(CONTROL_LEN);
        let control_offset = pool.offset_of(&control).unwrap();
        let own_doorbell = sys::eventfd().unwrap();
        let victim_pool = self::pool();
        let (conn, sock) = victim_accepts(name, &victim_pool, &config(credits), |sock| {
            let bell = doorbell.unwrap_or(own_doorbell.as_fd());
            sys::send_fds(
                sock,
                &{
                    let mut h = hello(control_offset, credits);
                    h[28..32].copy_from_slice(&flags.to_le_bytes());
                    h
                },
                &[pool.memfd().unwrap(), bell],
            )
            .unwrap();
        });
        let conn = conn.expect("the victim accepts a well-formed setup");
        let mut theirs = [0u8; HELLO_LEN];
        let mut fds = sys::recv_fds(&sock, &mut theirs, 2).unwrap();
        assert_eq!(fds.len(), 2);
        let victim_doorbell = fds.pop().unwrap();
        let victim = Mapping::map_readonly(fds[0].as_fd()).unwrap();
        let victim_control = u64::from_le_bytes(theirs[16..24].try_into().unwrap()) as usize;
        Pair {
            hostile: Hostile {
                pool,
                control,
                blocks: Vec::new(),
                sock,
                _doorbell: own_doorbell,
                victim,
                victim_control,
                _victim_doorbell: victim_doorbell,
                head: 0,
            },
            conn,
            victim_pool,
        }
    }

    /// The victim's next frame, if any (one poll, no waiting).
    fn poll(&mut self) -> Result<Option<ShmFrame>, TransportError> {
        self.conn.try_recv()
    }

    /// The protocol violation the victim reports on its next poll; then checks that the
    /// connection stays failed.
    fn violation(&mut self) -> &'static str {
        let what = match self.poll() {
            Err(TransportError::Frame {
                error: FrameError::Protocol(what),
                ..
            }) => what,
            other => panic!("expected a protocol error, got {other:?}"),
        };
        self.assert_poisoned();
        what
    }

    fn assert_poisoned(&mut self) {
        assert!(matches!(self.poll(), Err(TransportError::Poisoned)));
        assert!(matches!(
            self.conn.send_payload(Meta::new(1, 0), Payload::Bytes(b"x")),
            Err(TransportError::Poisoned)
        ));
    }

    /// Drops the victim's connection and checks that its pool has every buffer back.
    fn finish(self) {
        let Pair {
            hostile,
            conn,
            victim_pool,
        } = self;
        drop(conn);
        assert_eq!(outstanding(&victim_pool), 0, "the victim leaked pool buffers");
        drop(hostile);
    }
}

impl Hostile {
    /// Bytes of the hostile side's memfd (all the victim maps).
    fn memfd_len(&self) -> usize {
        self.pool.config().max_bytes
    }

    /// Writes control word `at` (the victim reads it atomically; this thread is the only
    /// writer and the victim polls only after it returns).
    fn word(&mut self, at: usize, value: u64) {
        self.control.capacity_mut()[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }

    /// Publishes a ring entry: the entry in its slot, tagged with its number, then the head.
    fn push(&mut self, e: u64) {
        let head = self.head;
        self.push_raw(tagged(e, head));
    }

    /// Writes `e` as it is (its tag included) in the next slot, then advances the head.
    fn push_raw(&mut self, e: u64) {
        let slot = RING_AT + 8 * (self.head % RING as u64) as usize;
        self.word(slot, e);
        self.head += 1;
        let head = self.head;
        self.word(RING_HEAD, head);
    }

    fn publish(&mut self, bucket: u32, acks: u32) {
        self.push(entry(bucket, acks));
    }

    /// A new block holding `bytes` (at least 1 KiB, so bucket-aligned); returns its bucket.
    fn block(&mut self, bytes: &[u8]) -> u32 {
        let mut b = self.pool.alloc(bytes.len().max(BLOCK_ALIGN)).unwrap();
        b.capacity_mut().fill(0);
        b.capacity_mut()[..bytes.len()].copy_from_slice(bytes);
        let offset = self.pool.offset_of(&b).unwrap();
        assert_eq!(
            offset % BLOCK_ALIGN,
            0,
            "pool buffers of 1 KiB and more are bucket-aligned"
        );
        self.blocks.push(b);
        (offset / BLOCK_ALIGN) as u32
    }

    /// The memory of the block at `bucket`, writable.
    fn block_mut(&mut self, bucket: u32) -> &mut [u8] {
        let pool = &self.pool;
        let b = self
            .blocks
            .iter_mut()
            .find(|b| pool.offset_of(b) == Some(bucket as usize * BLOCK_ALIGN))
            .expect("a block of this peer");
        b.capacity_mut()
    }

    /// A word of the victim's control area.
    fn victim_word(&self, at: usize) -> u64 {
        self.victim.load_u64(self.victim_control + at).unwrap()
    }

    /// Ring entry `i` of the victim.
    fn victim_entry(&self, i: u64) -> (u32, u32) {
        split_entry(self.victim_word(RING_AT + 8 * (i % RING as u64) as usize))
    }

    /// Marks every entry the victim published as consumed (as a well-behaved peer does).
    fn consume_victim_ring(&mut self) {
        let head = self.victim_word(RING_HEAD);
        self.word(PEER_TAIL, head);
    }

    /// A Ferry record (key `key`, one zero-copy field `value` of this peer's pool, placed
    /// where `locate` says) as the only message of a new block; returns the bucket and the
    /// offset of the message's root header in the memfd.
    fn record_block(
        &mut self,
        key: &[u8],
        value: &SharedBuf,
        mut locate: impl FnMut(&[u8]) -> Option<u64>,
    ) -> (u32, usize) {
        let ctx = Context::new(self.pool.clone());
        let mut r = Record::new(&ctx);
        r.set_key(key);
        r.append_field(&value[..]);
        assert!(r.fields()[0].is_zero_copy());
        let layout = r.layout();
        let payload = PREAMBLE_LEN + MSG_HEADER_LEN;
        let len = PREAMBLE_LEN + message_space(layout.head_len);
        let bucket = self.block(&vec![0u8; len]);
        let base = bucket as usize * BLOCK_ALIGN + payload;
        let block = self.block_mut(bucket);
        r.write_head_in(
            &layout,
            &mut block[payload..payload + layout.head_len],
            base as u64,
            &mut locate,
        )
        .unwrap();
        Preamble {
            count: 1,
            len: len as u32,
            acks: 0,
        }
        .write(&mut block[..PREAMBLE_LEN]);
        header(layout.head_len, FORM_FERRY, 0).write(&mut block[PREAMBLE_LEN..payload]);
        (bucket, base)
    }
}

/// A message header: kind 1, no flags.
fn header(len: usize, form: u8, request_id: u64) -> MsgHeader {
    MsgHeader {
        len: len as u32,
        kind: 1,
        flags: 0,
        form,
        request_id,
    }
}

/// Block bytes: a preamble (`count` as given, `len` the bytes built unless overridden) and
/// the messages, each header followed by its payload padded to 8.
fn block_bytes(messages: &[(MsgHeader, &[u8])], acks: u32) -> Vec<u8> {
    let mut b = vec![0u8; PREAMBLE_LEN];
    for (h, payload) in messages {
        let at = b.len();
        b.resize(at + MSG_HEADER_LEN + payload.len().next_multiple_of(8), 0);
        h.write(&mut b[at..at + MSG_HEADER_LEN]);
        b[at + MSG_HEADER_LEN..at + MSG_HEADER_LEN + payload.len()].copy_from_slice(payload);
    }
    let len = b.len() as u32;
    Preamble {
        count: messages.len() as u32,
        len,
        acks,
    }
    .write(&mut b[..PREAMBLE_LEN]);
    b
}

/// A block with a raw preamble (no messages written after it).
fn preamble_only(count: u32, len: u32, acks: u32) -> Vec<u8> {
    let mut b = vec![0u8; PREAMBLE_LEN];
    Preamble { count, len, acks }.write(&mut b);
    b
}

// ---------------------------------------------------------------------------------------------
// The harness speaks the protocol: well-formed traffic goes through, byte for byte.

#[test]
fn harness_valid_traffic_is_accepted() {
    let mut p = Pair::new("valid", 8);
    assert!(p.poll().unwrap().is_none(), "nothing published yet");

    // Payloads: implicit id (the count), explicit id, implicit again.
    let b = block_bytes(
        &[
            (header(5, 0, 0), b"hello"),
            (header(3, FORM_EXPLICIT_ID, 77), b"abc"),
            (header(0, 0, 0), b""),
        ],
        0,
    );
    let bucket = p.hostile.block(&b);
    p.hostile.publish(bucket, 0);
    let f0 = p.poll().unwrap().unwrap();
    let f1 = p.poll().unwrap().unwrap();
    let f2 = p.poll().unwrap().unwrap();
    assert_eq!((f0.bytes(), f0.meta()), (Some(&b"hello"[..]), Meta::new(1, 0)));
    assert_eq!((f1.bytes(), f1.meta()), (Some(&b"abc"[..]), Meta::new(1, 77)));
    assert_eq!((f2.bytes(), f2.meta()), (Some(&b""[..]), Meta::new(1, 2)));
    assert_eq!(
        f0.offset(),
        bucket as usize * BLOCK_ALIGN + PREAMBLE_LEN + MSG_HEADER_LEN
    );
    assert_eq!(
        p.hostile.victim_word(PEER_TAIL),
        1,
        "the victim consumed the entry"
    );

    // A Ferry record whose field is referenced in the hostile side's memory.
    let value = p.hostile.pool.copy_from(&[0xabu8; 1000]).unwrap();
    let at = p.hostile.pool.offset_of(&value).unwrap();
    let (bucket2, root) = p.hostile.record_block(b"key", &value, |_| Some(at as u64));
    p.hostile.publish(bucket2, 0);
    let f3 = p.poll().unwrap().unwrap();
    assert!(f3.is_message() && f3.bytes().is_none());
    assert_eq!(f3.offset(), root);
    assert_eq!(f3.meta().request_id, 3);
    let view = Record::decode_at(f3.region(), f3.offset(), &limits()).unwrap();
    assert_eq!(view.key(), b"key");
    let field = view.fields().get(0).unwrap();
    assert_eq!(field, &[0xabu8; 1000][..]);
    assert_eq!(field.as_ptr() as usize - f3.region().as_ptr() as usize, at);

    // Acknowledgements: none while a frame of block 1 lives; then block 1 alone (block 2 is
    // still read); then block 2.
    drop((f0, f1));
    assert!(p.poll().unwrap().is_none());
    assert_eq!(p.hostile.victim_word(RING_HEAD), 0, "block 1 still read: no ack");
    drop(f2);
    assert!(p.poll().unwrap().is_none());
    assert_eq!(p.hostile.victim_word(RING_HEAD), 1);
    assert_eq!(p.hostile.victim_entry(0), (NO_BLOCK, 1));
    drop(f3);
    assert!(p.poll().unwrap().is_none());
    assert_eq!(p.hostile.victim_word(RING_HEAD), 2);
    assert_eq!(p.hostile.victim_entry(1), (NO_BLOCK, 1));
    p.hostile.consume_victim_ring();

    // The victim sends two blocks; an acknowledgement of both frees them.
    for i in 0..2u8 {
        p.conn
            .send_payload(Meta::new(9, u64::from(i) + 5), Payload::Bytes(&[i; 10]))
            .unwrap();
        p.conn.flush().unwrap();
    }
    assert_eq!(p.conn.blocks_in_flight(), 2);
    assert_eq!(p.hostile.victim_word(RING_HEAD), 4);
    let (vb, acks) = p.hostile.victim_entry(2);
    assert_eq!(acks, 0);
    let mut pre = [0u8; PREAMBLE_LEN];
    p.hostile
        .victim
        .copy_out(vb as usize * BLOCK_ALIGN, &mut pre)
        .unwrap();
    let pre = Preamble::read(&pre);
    assert_eq!(
        (pre.count, pre.len as usize),
        (1, PREAMBLE_LEN + message_space(10))
    );
    let mut h = [0u8; MSG_HEADER_LEN];
    p.hostile
        .victim
        .copy_out(vb as usize * BLOCK_ALIGN + PREAMBLE_LEN, &mut h)
        .unwrap();
    let expected = MsgHeader {
        kind: 9,
        ..header(10, FORM_EXPLICIT_ID, 5)
    };
    assert_eq!(MsgHeader::read(&h), expected);
    p.hostile.publish(NO_BLOCK, 2);
    assert!(p.poll().unwrap().is_none());
    assert_eq!(p.conn.blocks_in_flight(), 0);
    p.finish();
}

// ---------------------------------------------------------------------------------------------
// Ring entries.

#[test]
fn ring_head_far_ahead() {
    for head in [RING as u64 + 1, u64::MAX] {
        let mut p = Pair::new("head-ahead", 8);
        p.hostile.word(RING_HEAD, head);
        assert_eq!(p.violation(), "ring head out of range");
        p.finish();
    }
}

#[test]
fn ring_head_moved_back() {
    let mut p = Pair::new("head-back", 8);
    p.hostile.publish(NO_BLOCK, 0);
    p.hostile.publish(NO_BLOCK, 0);
    assert!(p.poll().unwrap().is_none());
    p.hostile.word(RING_HEAD, 1);
    assert_eq!(p.violation(), "ring head out of range");
    p.finish();
}

/// The head counts an entry whose slot does not carry that entry's tag: no tag at all, the
/// tag of the entry a lap (`RING` entries) later or earlier, or another.
#[test]
fn ring_entry_without_its_sequence_tag() {
    for wrong in [0, tag(1), tag(RING as u64), tag(u64::MAX - 1), u16::MAX] {
        let mut p = Pair::new("tag-wrong", 8);
        p.hostile.push_raw(entry(NO_BLOCK, 0) | u64::from(wrong) << 48);
        assert_eq!(
            p.violation(),
            "ring entry without its sequence tag",
            "tag {wrong}"
        );
        p.finish();
    }
    // After a valid entry: the second slot carries the first's tag.
    let mut p = Pair::new("tag-repeated", 8);
    p.hostile.publish(NO_BLOCK, 0);
    assert!(p.poll().unwrap().is_none());
    p.hostile.push_raw(tagged(entry(NO_BLOCK, 0), 0));
    assert_eq!(p.violation(), "ring entry without its sequence tag");
    p.finish();
}

/// A slot with the right tag is taken (the tag publishes it) even if the head lags: one
/// behind is the race of a peer between its entry and its head; two behind is out of range.
#[test]
fn tagged_entry_without_the_head() {
    let mut p = Pair::new("tag-no-head", 8);
    let first = p.hostile.block(&block_bytes(&[(header(2, 0, 0), b"hi")], 0));
    p.hostile.word(RING_AT, tagged(entry(first, 0), 0));
    let f = p.poll().unwrap().expect("the tagged entry's frame");
    assert_eq!(f.bytes(), Some(&b"hi"[..]));
    assert!(
        p.poll().unwrap().is_none(),
        "a head one behind is a publication in progress"
    );
    let second = p.hostile.block(&block_bytes(&[(header(2, 0, 0), b"yo")], 0));
    p.hostile.word(RING_AT + 8, tagged(entry(second, 0), 1));
    let g = p.poll().unwrap().expect("the second tagged entry's frame");
    assert_eq!(g.bytes(), Some(&b"yo"[..]));
    assert_eq!(p.violation(), "ring head out of range");
    drop((f, g));
    p.finish();
}

/// A slot whose tag is wrong and whose head is not advanced is simply not there yet; the
/// entry published over it later is taken.
#[test]
fn untagged_slot_is_not_an_entry() {
    let mut p = Pair::new("tag-not-yet", 8);
    p.hostile.word(RING_AT, entry(NO_BLOCK, 1));
    assert!(p.poll().unwrap().is_none(), "an untagged slot is not an entry");
    let bucket = p.hostile.block(&block_bytes(&[(header(2, 0, 0), b"ok")], 0));
    p.hostile.publish(bucket, 0);
    let f = p.poll().unwrap().expect("the published entry's frame");
    assert_eq!(f.bytes(), Some(&b"ok"[..]));
    drop(f);
    p.finish();
}

/// The setup message's flags word: a peer that declares it never sleeps (1) is published to
/// without the sleep handshake, so if it sleeps anyway (raises `sleeping`) it is not woken;
/// the victim neither fails nor waits. Any other value is read as "may sleep": it is woken.
#[test]
fn never_sleeps_flag_that_lies() {
    for (flags, woken) in [(1u32, false), (0, true), (2, true), (u32::MAX, true)] {
        let mut p = Pair::with_hello("never-sleeps", 8, None, flags);
        p.hostile.word(SLEEPING, 1);
        p.conn
            .send_payload(Meta::new(1, 0), Payload::Bytes(b"abc"))
            .unwrap();
        p.conn.flush().unwrap();
        assert_eq!(p.conn.stats().wakeups > 0, woken, "flags {flags:#x}");
        assert_eq!(p.conn.blocks_in_flight(), 1);
        p.finish();
    }
}

#[test]
fn bucket_outside_the_memfd() {
    for bucket in [
        (4 << 20) / BLOCK_ALIGN as u32,
        (4 << 20) / BLOCK_ALIGN as u32 + 1,
        NO_BLOCK - 1,
    ] {
        let mut p = Pair::new("bucket", 8);
        assert_eq!(p.hostile.memfd_len(), 4 << 20);
        p.hostile.publish(bucket, 0);
        assert_eq!(
            p.violation(),
            "block outside the shared memory",
            "bucket {bucket}"
        );
        p.finish();
    }
    // The last bucket is inside; its bytes (never allocated) are zero: a preamble of length 0.
    let mut p = Pair::new("bucket-last", 8);
    let last = p.hostile.memfd_len() - BLOCK_ALIGN;
    p.hostile.publish((last / BLOCK_ALIGN) as u32, 0);
    assert_eq!(p.violation(), "block length outside the shared memory");
    p.finish();
}

// ---------------------------------------------------------------------------------------------
// Preambles.

#[test]
fn preamble_len_past_the_end() {
    for case in 0..4 {
        let mut p = Pair::new("preamble-len", 8);
        let bucket = p.hostile.block(&[]);
        let at = bucket as usize * BLOCK_ALIGN;
        let len = match case {
            0 => (p.hostile.memfd_len() - at + 1) as u32,
            1 => u32::MAX,
            2 => 0,
            _ => PREAMBLE_LEN as u32 - 1,
        };
        p.hostile.block_mut(bucket)[..PREAMBLE_LEN].copy_from_slice(&preamble_only(0, len, 0));
        p.hostile.publish(bucket, 0);
        assert_eq!(
            p.violation(),
            "block length outside the shared memory",
            "len {len}"
        );
        p.finish();
    }
}

#[test]
fn count_larger_than_the_block_holds() {
    for (count, len) in [
        (2, PREAMBLE_LEN + MSG_HEADER_LEN),
        (1, PREAMBLE_LEN + MSG_HEADER_LEN - 1),
        (u32::MAX, PREAMBLE_LEN),
        (u32::MAX, BLOCK_ALIGN),
    ] {
        let mut p = Pair::new("count", 8);
        let bucket = p.hostile.block(&preamble_only(count, len as u32, 0));
        p.hostile.publish(bucket, 0);
        assert_eq!(
            p.violation(),
            "more messages than the block holds",
            "count {count}, len {len}"
        );
        p.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Message headers.

#[test]
fn message_header_past_the_block() {
    let mut p = Pair::new("header-past", 8);
    // Two headers fit by count (16 + 2 * 24 = 64), but the first message's 8-byte payload
    // pushes the second header past the end.
    let mut b = block_bytes(&[(header(8, 0, 0), &[1; 8])], 0);
    b.resize(PREAMBLE_LEN + 2 * MSG_HEADER_LEN, 0);
    let len = b.len() as u32;
    b[..PREAMBLE_LEN].copy_from_slice(&preamble_only(2, len, 0));
    let bucket = p.hostile.block(&b);
    p.hostile.publish(bucket, 0);
    // Messages are validated as they are handed out: the first one is good.
    let first = p.conn.recv().unwrap();
    assert_eq!(first.bytes(), Some(&[1u8; 8][..]));
    drop(first);
    assert_eq!(p.violation(), "message header past the block");
    p.finish();
}

#[test]
fn message_len_past_the_block() {
    for len in [9, 100, 1 << 20, u32::MAX] {
        let mut p = Pair::new("message-len", 8);
        let mut b = block_bytes(&[(header(8, 0, 0), &[1; 8])], 0);
        header(0, 0, 0).write(&mut b[PREAMBLE_LEN..PREAMBLE_LEN + MSG_HEADER_LEN]);
        b[PREAMBLE_LEN..PREAMBLE_LEN + 4].copy_from_slice(&len.to_le_bytes());
        let bucket = p.hostile.block(&b);
        p.hostile.publish(bucket, 0);
        assert_eq!(p.violation(), "message past the block", "len {len}");
        p.finish();
    }
}

#[test]
fn unknown_form_bits() {
    for bit in 2..8 {
        let mut p = Pair::new("form", 8);
        let form = 1u8 << bit;
        let bucket = p
            .hostile
            .block(&block_bytes(&[(header(4, form | FORM_FERRY, 0), b"abcd")], 0));
        p.hostile.publish(bucket, 0);
        assert_eq!(p.violation(), "unknown message form", "form {form:#x}");
        p.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Acknowledgements, credits, consumption.

#[test]
fn acks_for_blocks_never_sent() {
    // In an acknowledgement-only entry.
    let mut p = Pair::new("acks-entry", 8);
    p.hostile.publish(NO_BLOCK, 1);
    assert_eq!(p.violation(), "acknowledgement of blocks never sent");
    p.finish();

    // In a block's preamble.
    let mut p = Pair::new("acks-preamble", 8);
    let bucket = p.hostile.block(&block_bytes(&[(header(1, 0, 0), b"x")], 1));
    p.hostile.publish(bucket, 0);
    assert_eq!(p.violation(), "acknowledgement of blocks never sent");
    p.finish();

    // One more than the victim has in flight, and u32::MAX.
    for acks in [3, u32::MAX] {
        let mut p = Pair::new("acks-more", 8);
        for _ in 0..2 {
            p.conn
                .send_payload(Meta::new(1, 0), Payload::Bytes(b"abc"))
                .unwrap();
            p.conn.flush().unwrap();
        }
        assert_eq!(p.conn.blocks_in_flight(), 2);
        p.hostile.publish(NO_BLOCK, acks);
        assert_eq!(
            p.violation(),
            "acknowledgement of blocks never sent",
            "acks {acks}"
        );
        assert_eq!(p.conn.blocks_in_flight(), 0, "a failed connection holds no block");
        p.finish();
    }
}

#[test]
fn more_blocks_than_credits() {
    // Four empty blocks at once, with four credits: accepted.
    let mut p = Pair::new("credits-within", 4);
    let bucket = p.hostile.block(&preamble_only(0, PREAMBLE_LEN as u32, 0));
    for _ in 0..4 {
        p.hostile.publish(bucket, 0);
    }
    assert!(p.poll().unwrap().is_none(), "four blocks are within the credits");
    p.finish();

    // Five at once (none acknowledged yet).
    let mut p = Pair::new("credits-at-once", 4);
    let bucket = p.hostile.block(&preamble_only(0, PREAMBLE_LEN as u32, 0));
    for _ in 0..5 {
        p.hostile.publish(bucket, 0);
    }
    assert_eq!(p.violation(), "the peer sent beyond its credits");
    p.finish();

    // Four blocks whose frames the victim holds (so it acknowledges none), then a fifth.
    let mut p = Pair::new("credits-held", 4);
    let mut held = Vec::new();
    for i in 0..4u8 {
        let bucket = p.hostile.block(&block_bytes(&[(header(1, 0, 0), &[i])], 0));
        p.hostile.publish(bucket, 0);
        held.push(p.poll().unwrap().expect("a frame"));
    }
    let bucket = p.hostile.block(&block_bytes(&[(header(1, 0, 0), &[4])], 0));
    p.hostile.publish(bucket, 0);
    assert_eq!(p.violation(), "the peer sent beyond its credits");
    assert_eq!(
        held[3].bytes(),
        Some(&[3u8][..]),
        "frames stay readable after the error"
    );
    drop(held);
    p.finish();
}

#[test]
fn peer_consumed_unpublished_entries() {
    let mut p = Pair::new("tail-ahead", 8);
    p.hostile.word(PEER_TAIL, 1);
    p.conn
        .send_payload(Meta::new(1, 0), Payload::Bytes(b"abc"))
        .unwrap();
    match p.conn.flush() {
        Err(TransportError::Frame {
            error: FrameError::Protocol(what),
            ..
        }) => assert_eq!(what, "the peer consumed unpublished entries"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    p.assert_poisoned();
    p.finish();
}

// ---------------------------------------------------------------------------------------------
// Ferry messages: offsets are region-relative and checked against the whole mapping.

#[test]
fn ferry_message_with_offsets_outside_the_region() {
    let mut p = Pair::new("ferry-outside", 8);
    let len = p.hostile.memfd_len();
    let value = p.hostile.pool.copy_from(&[7u8; 4096]).unwrap();
    // (The encoder itself refuses offsets whose end passes 4 GiB.)
    for offset in [len as u64 - 100, len as u64, u64::from(u32::MAX) - 4096] {
        let (bucket, _) = p.hostile.record_block(b"k", &value, |_| Some(offset));
        p.hostile.publish(bucket, 0);
        let f = p.poll().unwrap().expect("the block itself is well-formed");
        let e = f
            .view(&RECORD, &limits())
            .expect_err("a value outside the region");
        assert!(
            Record::decode_at(f.region(), f.offset(), &limits()).is_err(),
            "offset {offset}"
        );
        eprintln!("offset {offset}: {e}");
    }
    // A root header that claims more chunks than the region holds.
    let mut b = block_bytes(&[(header(8, FORM_FERRY, 0), &[0xff; 8])], 0);
    let at = PREAMBLE_LEN + MSG_HEADER_LEN;
    b[at..at + 8].copy_from_slice(&[0xff; 8]);
    let bucket = p.hostile.block(&b);
    p.hostile.publish(bucket, 0);
    let f = p.poll().unwrap().unwrap();
    assert!(f.view(&RECORD, &limits()).is_err());
    drop(f);
    p.finish();
}

/// Mutated Ferry header segments (random bytes, words and offsets overwritten in a valid
/// record) decode to an error or to a view whose every accessor stays inside the region.
#[test]
fn mutated_ferry_messages_never_panic() {
    let mut p = Pair::new("ferry-mutated", 8);
    let value = p.hostile.pool.copy_from(&[3u8; 2000]).unwrap();
    let at = p.hostile.pool.offset_of(&value).unwrap() as u64;
    let region_len = p.hostile.memfd_len();
    let mut rng = 0x1234_5678_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut ok, mut err) = (0, 0);
    for _ in 0..400 {
        let (bucket, root) = p.hostile.record_block(b"mutate me", &value, |_| Some(at));
        let payload = root - bucket as usize * BLOCK_ALIGN;
        let block = p.hostile.block_mut(bucket);
        let head_len = u32::from_le_bytes(block[PREAMBLE_LEN..PREAMBLE_LEN + 4].try_into().unwrap()) as usize;
        for _ in 0..1 + next() % 4 {
            let i = payload + (next() as usize % head_len);
            match next() % 3 {
                0 => block[i] = next() as u8,
                1 => block[i & !7..(i & !7) + 8].copy_from_slice(&next().to_le_bytes()),
                _ => block[i & !7..(i & !7) + 8]
                    .copy_from_slice(&(region_len as u64 - next() % 64).to_le_bytes()),
            }
        }
        p.hostile.publish(bucket, 0);
        let f = p.poll().unwrap().unwrap();
        match Record::decode_at(f.region(), f.offset(), &limits()) {
            Ok(view) => {
                ok += 1;
                walk(&f, &view);
            }
            Err(_) => err += 1,
        }
        drop(f);
        // Keep the victim's ring and credits flowing, and the hostile pool from filling up.
        assert!(p.poll().unwrap().is_none());
        p.hostile.consume_victim_ring();
        let b = p.hostile.blocks.pop().unwrap();
        drop(b);
    }
    eprintln!("{ok} mutated records decoded, {err} rejected");
    assert!(err > 0, "the mutations reach the validator");
    p.finish();
}

/// Reads everything a record view offers; every slice must lie inside the frame's region.
fn walk(f: &ShmFrame, view: &ferry_wire::sample::RecordView<'_>) {
    let region = f.region().as_ptr_range();
    let inside = |s: &[u8]| {
        let r = s.as_ptr_range();
        assert!(
            s.is_empty() || (region.start <= r.start && r.end <= region.end),
            "a slice outside the region"
        );
    };
    inside(view.key());
    for field in view.fields().iter() {
        inside(field);
    }
    for i in 0..view.fields().len() + 2 {
        if let Some(s) = view.fields().get(i) {
            inside(s);
        }
    }
    let v = view.view();
    let _ = v.present_fields().count();
    for n in [1, 2, 3, 64] {
        let _ = v.entry(n);
        if let Some(s) = v.bytes(n) {
            inside(s);
        }
        let _ = v.str(n);
        let _ = v.message(n);
        let _ = v.messages(n).iter().count();
        let _ = v.scalars::<u64>(n).iter().count();
    }
}

/// The peer rewrites a message (its header segment, then its value) after the victim
/// validated it: the view's accessors see other bytes but never read outside the region and
/// never panic.
#[test]
fn rewritten_after_validation() {
    let mut p = Pair::new("rewrite", 8);
    let value = p.hostile.pool.copy_from(&[1u8; 4000]).unwrap();
    let at = p.hostile.pool.offset_of(&value).unwrap() as u64;
    let (bucket, root) = p.hostile.record_block(b"before", &value, |_| Some(at));
    p.hostile.publish(bucket, 0);
    let f = p.poll().unwrap().unwrap();
    let view = Record::decode_at(f.region(), f.offset(), &limits()).unwrap();
    assert_eq!(view.key(), b"before");
    assert_eq!(view.fields().get(0), Some(&[1u8; 4000][..]));
    let payload = root - bucket as usize * BLOCK_ALIGN;
    let len = p.hostile.memfd_len() as u64;
    for fill in [
        0xffu64,
        0,
        len - 8,
        len << 32 | 0xffff_ffff,
        u64::MAX,
        0x0000_1000_0000_0010,
    ] {
        let block = p.hostile.block_mut(bucket);
        for w in block[payload..BLOCK_ALIGN].chunks_exact_mut(8) {
            w.copy_from_slice(&fill.to_le_bytes());
        }
        walk(&f, &view);
        let _ = f.view(&RECORD, &limits()).map(|v| v.present_fields().count());
    }
    drop(f);
    p.finish();
}

// ---------------------------------------------------------------------------------------------
// A peer that goes away, or misbehaves with its descriptors.

/// The peer closes its socket without setting its `closed` word (as a process that dies
/// does): a non-blocking poll must report it, not return "nothing yet" for ever.
#[test]
fn try_recv_notices_a_closed_socket() {
    let mut p = Pair::new("closed-try", 8);
    p.hostile.sock.shutdown(std::net::Shutdown::Both).unwrap();
    let r = p.poll();
    assert!(
        matches!(&r, Err(TransportError::Io { source, .. }) if source.kind() == std::io::ErrorKind::ConnectionReset)
            || matches!(r, Err(TransportError::Closed)),
        "try_recv after the peer hung up: {r:?}"
    );
    p.finish();
}

/// The same peer, seen by a busy-polling `poll_recv`, which looks at the socket only now and
/// then: it fails within `POLLS_PER_HANG_UP_CHECK` calls, not "nothing yet" for ever.
#[test]
fn poll_recv_notices_a_closed_socket() {
    let mut p = Pair::new("closed-poll", 8);
    p.hostile.sock.shutdown(std::net::Shutdown::Both).unwrap();
    let mut calls = 0;
    let e = loop {
        calls += 1;
        match p.conn.poll_recv() {
            Ok(None) => assert!(calls <= 1024, "still polling after {calls} calls"),
            Ok(Some(f)) => panic!("a frame from a peer that sent none: {f:?}"),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(&e, TransportError::Io { source, .. } if source.kind() == std::io::ErrorKind::ConnectionReset),
        "poll_recv after the peer hung up: {e:?}"
    );
    assert!(matches!(p.conn.poll_recv(), Err(TransportError::Poisoned)));
    p.finish();
}

/// The same peer, seen by a blocking `recv`: it fails (and does not hang).
#[test]
fn recv_notices_a_closed_socket() {
    guarded("recv-closed", || {
        let mut p = Pair::new("closed-recv", 8);
        p.hostile.sock.shutdown(std::net::Shutdown::Both).unwrap();
        let e = p.conn.recv().expect_err("the peer hung up");
        assert!(
            matches!(&e, TransportError::Io { source, .. } if source.kind() == std::io::ErrorKind::ConnectionReset),
            "{e:?}"
        );
        p.finish();
    });
}

/// A peer that hands over, as its doorbell, a descriptor whose writes can block (a full,
/// blocking socket) is refused at setup: ringing it could stall every send. (It used to be
/// accepted, and a `flush` then blocked in `write(2)` once the peer said it slept.)
#[test]
fn hostile_doorbell_is_refused() {
    guarded("doorbell", || {
        let (bell, _other_end) = UnixStream::pair().unwrap();
        bell.set_nonblocking(true).unwrap();
        let chunk = [0u8; 4096];
        while (&bell).write(&chunk).is_ok() {}
        bell.set_nonblocking(false).unwrap();
        let pool = pool();
        let control = pool.alloc(CONTROL_LEN).unwrap();
        let control_offset = pool.offset_of(&control).unwrap();
        let victim_pool = self::pool();
        let (conn, _sock) = victim_accepts("doorbell", &victim_pool, &config(8), |sock| {
            sys::send_fds(
                sock,
                &hello(control_offset, 8),
                &[pool.memfd().unwrap(), bell.as_fd()],
            )
            .unwrap();
        });
        match conn {
            Err(TransportError::Io {
                op: "the peer's doorbell",
                source,
            }) => {
                assert!(source.to_string().contains("not an eventfd"), "{source}");
            }
            other => panic!("expected the doorbell to be refused, got {other:?}"),
        }
    });
}

/// Runs `f` on a thread and fails the test if it does not finish within `DEADLINE` (a
/// deadlock guard; a thread stuck for ever is left behind).
fn guarded(what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        let _done = tx;
        f();
    });
    match rx.recv_timeout(DEADLINE) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("deadlock guard: {what} did not finish within {DEADLINE:?}")
        }
        _ => {
            if let Err(p) = t.join() {
                std::panic::resume_unwind(p);
            }
        }
    }
}

#[test]
fn setup_messages_that_are_refused() {
    let hostile = pool();
    let control = hostile.alloc(CONTROL_LEN).unwrap();
    let control_at = hostile.offset_of(&control).unwrap();
    let memfd_len = hostile.config().max_bytes;
    let bell = sys::eventfd().unwrap();
    let memfd = hostile.memfd().unwrap();
    let good = hello(control_at, 8);
    let edit = |f: &dyn Fn(&mut [u8; HELLO_LEN])| {
        let mut h = good;
        f(&mut h);
        h
    };
    let cases: Vec<(&str, [u8; HELLO_LEN], Vec<BorrowedFd<'_>>, bool)> = vec![
        (
            "bad magic",
            edit(&|h| h[0] = b'X'),
            vec![memfd, bell.as_fd()],
            true,
        ),
        ("version 3", edit(&|h| h[8] = 3), vec![memfd, bell.as_fd()], true),
        (
            "version 1 (untagged ring entries)",
            edit(&|h| h[8] = 1),
            vec![memfd, bell.as_fd()],
            true,
        ),
        ("ring size", edit(&|h| h[24] = 1), vec![memfd, bell.as_fd()], true),
        (
            "control outside",
            edit(&|h| h[16..24].copy_from_slice(&(memfd_len as u64).to_le_bytes())),
            vec![memfd, bell.as_fd()],
            true,
        ),
        (
            "control crossing the end",
            edit(&|h| h[16..24].copy_from_slice(&((memfd_len - 64) as u64).to_le_bytes())),
            vec![memfd, bell.as_fd()],
            true,
        ),
        (
            "control misaligned",
            edit(&|h| h[16..24].copy_from_slice(&(control_at as u64 + 4).to_le_bytes())),
            vec![memfd, bell.as_fd()],
            true,
        ),
        (
            "control offset u64::MAX",
            edit(&|h| h[16..24].copy_from_slice(&u64::MAX.to_le_bytes())),
            vec![memfd, bell.as_fd()],
            true,
        ),
        ("one descriptor", good, vec![memfd], false),
        ("no descriptor", good, vec![], false),
        (
            "three descriptors",
            good,
            vec![memfd, bell.as_fd(), bell.as_fd()],
            false,
        ),
        (
            "an eventfd as the memory",
            good,
            vec![bell.as_fd(), bell.as_fd()],
            false,
        ),
    ];
    for (what, h, fds, config_error) in cases {
        let victim_pool = pool();
        let (r, _sock) = victim_accepts("setup", &victim_pool, &config(8), |sock| {
            if fds.is_empty() {
                (&*sock).write_all(&h).unwrap();
            } else {
                sys::send_fds(sock, &h, &fds).unwrap();
            }
        });
        match r {
            Err(TransportError::Config(msg)) => eprintln!("{what}: {msg}"),
            // Descriptor trouble may also surface from the socket or the mapping.
            Err(e) if !config_error => eprintln!("{what}: {e}"),
            other => panic!("{what}: expected a refusal, got {other:?}"),
        }
        assert_eq!(outstanding(&victim_pool), 0, "{what}: the victim leaked");
    }
    // A peer that connects and hangs up without a word.
    let victim_pool = pool();
    let (r, _) = victim_accepts("setup-silent", &victim_pool, &config(8), |sock| {
        sock.shutdown(std::net::Shutdown::Write).unwrap();
    });
    assert!(r.is_err(), "{r:?}");
    assert_eq!(outstanding(&victim_pool), 0);
}

/// The peer shrinks its memfd after the victim mapped it: the victim's next look at the
/// peer's control area must not fault (SIGBUS). Runs in a child process, since a fault kills
/// the process.
#[test]
fn shrunk_memfd_does_not_crash_the_reader() {
    const TEST: &str = "tests::shrunk_memfd_does_not_crash_the_reader";
    if std::env::var_os(ROLE_VAR).is_some() {
        let mut p = Pair::new("shrunk", 8);
        let memfd = p.hostile.pool.memfd().unwrap().try_clone_to_owned().unwrap();
        // Shrinking fails only if the victim required a seal against it: also fine.
        let shrunk = File::from(memfd).set_len(0);
        println!("peer: shrink {shrunk:?}");
        let r = p.poll();
        println!("peer: survived {r:?}");
        drop(r);
        // The hostile side's own pool memory is gone too: never touch or free it.
        let Pair { hostile, conn, .. } = p;
        std::mem::forget(hostile);
        drop(conn);
        println!("peer: dropped");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(ROLE_VAR, "victim")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("peer: dropped"),
        "the victim process did not survive its peer shrinking the memfd ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn closed_word_then_nothing() {
    // The peer sets `closed` after publishing one block: the victim gets the frame, then
    // `Closed`.
    let mut p = Pair::new("closed-word", 8);
    let bucket = p.hostile.block(&block_bytes(&[(header(2, 0, 0), b"hi")], 0));
    p.hostile.publish(bucket, 0);
    p.hostile.word(CLOSED, 1);
    let f = p.poll().unwrap().expect("the frame published before the close");
    assert_eq!(f.bytes(), Some(&b"hi"[..]));
    assert!(matches!(p.poll(), Err(TransportError::Closed)));
    drop(f);
    p.finish();
}
