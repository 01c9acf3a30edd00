//! A shared-memory connection: setup, the block protocol, credits, acknowledgements and
//! notification.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::time::{Duration, Instant};

use ferry_buf::{BufMut, Pool};
use ferry_transport::{Meta, Payload, TransportError};
use ferry_wire::{DecodeError, Limits, MessageDesc, Outgoing, View};

use crate::layout::{BLOCK_ALIGN, RING, control_len};
use crate::proto::{Endpoint, Hold, Incoming, MAX_CREDITS, Setup, Shared};
use crate::sys::{self, Mapping, OwnWords};

/// Connection settings.
#[derive(Debug, Clone)]
pub struct ShmConfig {
    /// Bytes per block (default 16 KiB). Messages are batched into blocks; a message larger
    /// than a block gets a block of its own.
    pub block_size: usize,
    /// Messages per block (default 16): a block is published once it holds this many, even
    /// if it has room for more. With many small messages in flight this keeps several blocks
    /// circulating, so that both sides work at once: one block of 128 requests (or, as 64 B
    /// requests fill 16 KiB, a block of 127 and one of 1) makes the two sides take turns. A
    /// block costs one credit, one ring entry and one publication. Measured with `ferry bench
    /// shm` (64 B, 32/128/256 in flight): 16 is within a few per cent of the best at each;
    /// 8 loses ~7 % at 128 and more, 32 halves the rate at 32 in flight (one block again).
    pub block_messages: u32,
    /// Blocks this side may have unacknowledged (default 256; the smaller of the two sides'
    /// values is used, at most half the ring).
    pub credits: u32,
    /// How long to busy-poll for the peer before sleeping on the doorbell (default 50 µs).
    /// `Duration::ZERO` sleeps at once (no idle CPU); `Duration::MAX` never sleeps.
    pub spin: Duration,
    /// This side never sleeps on its doorbell, and says so at setup (default false). Its waits
    /// busy-poll for ever (`spin` is ignored) and [`ShmConnection::try_recv`] does not arm the
    /// doorbell (it is [`ShmConnection::poll_recv`]), so [`as_fd`](AsFd::as_fd) never becomes
    /// readable: for a thread that only busy-polls this connection. In return the peer
    /// publishes without a sequentially consistent fence and never reads this side's
    /// `sleeping` word (the sleep handshake it no longer needs).
    pub never_sleep: bool,
    /// How long the setup exchange may take (default 10 s): a blocking
    /// [`connect`](ShmConnection::connect) or [`accept`](ShmListener::accept) fails with
    /// `io::ErrorKind::TimedOut` past it, and a [`ShmHandshake`] that has not completed by its
    /// deadline fails its next [`step`](ShmHandshake::step) the same way.
    pub handshake_timeout: Duration,
}

impl Default for ShmConfig {
    fn default() -> ShmConfig {
        ShmConfig {
            block_size: 16 << 10,
            block_messages: 16,
            credits: 256,
            spin: Duration::from_micros(50),
            never_sleep: false,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
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
/// How long the setup exchange may take unless [`ShmConfig::handshake_timeout`] says otherwise.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// 2: ring entries carry a sequence tag (`layout.rs`).
const VERSION: u32 = 2;
const HELLO_LEN: usize = 32;
/// The setup message's flags word (bytes 28..32): this side never sleeps on its doorbell.
const NEVER_SLEEPS: u32 = 1;
/// [`ShmConnection::recv`], busy-polling, reads the peer's ring head and closed word once per
/// this many polls, and [`ShmConnection::poll_recv`] once per this many calls that found
/// nothing (the rest read the next ring slot only). The peer writes its head at every
/// publication: read on every empty poll, its line moved to this side once per message, and a
/// poll that missed on it (just written) saw the entry written before it one miss later.
const SPINS_PER_LOOK: u32 = 64;
/// [`ShmConnection::poll_recv`] looks at the socket for a hang-up once per this many calls
/// that found nothing (a dead peer sets no word in shared memory).
const POLLS_PER_HANG_UP_CHECK: u32 = 1024;

/// An error of the setup exchange: the socket's timeout (`EAGAIN`) is reported as
/// `TimedOut`, not as [`TransportError::WouldBlock`], which would tell a caller of
/// [`ShmListener::try_accept`] that nobody was waiting.
fn setup_io(op: &'static str, e: io::Error) -> TransportError {
    if e.kind() == io::ErrorKind::WouldBlock {
        return setup_timed_out(op);
    }
    TransportError::io(op, e)
}

/// The error of a setup exchange that did not complete within its timeout.
fn setup_timed_out(op: &'static str) -> TransportError {
    TransportError::Io {
        op,
        source: io::Error::new(
            io::ErrorKind::TimedOut,
            "the peer did not complete the shared-memory setup in time",
        ),
    }
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
    _hold: Hold,
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
    ///
    /// A message sent with `send` is read with region-relative offsets (`View::decode_at`):
    /// `limits.max_message_len` bounds the bytes the message references (its header segment
    /// and values), not the region they lie in. A frame sent with `send_payload` is read as
    /// one contiguous Ferry message (`View::decode` over [`bytes`](Self::bytes)): what
    /// `Outgoing::to_vec`, or `write_head` followed by the zero-copy values in order, produces;
    /// its values must lie inside the payload. Either way nothing is copied, and, as over TCP,
    /// any frame can be viewed: raw bytes that are not a message of `desc` are a
    /// `DecodeError`, never a panic.
    // Inlined into the caller's crate: a wrapper, once per message.
    #[inline]
    pub fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &Limits) -> Result<View<'a>, DecodeError> {
        match self.bytes() {
            Some(bytes) => View::decode(bytes, desc, limits),
            None => View::decode_at(self.region(), self.offset, desc, limits),
        }
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

/// Waits for connections on a Unix socket path: [`accept`](Self::accept) waits for one,
/// [`try_accept`](Self::try_accept) takes one only if it is waiting (for a poll loop, which
/// polls the listening socket, [`as_fd`](AsFd::as_fd), for readability first).
#[derive(Debug)]
pub struct ShmListener {
    listener: UnixListener,
    path: PathBuf,
    /// Whether the listening socket is non-blocking (`try_accept` makes it so, `accept`
    /// undoes it).
    nonblocking: AtomicBool,
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
        Ok(ShmListener {
            listener,
            path,
            nonblocking: AtomicBool::new(false),
        })
    }

    /// Puts the listening socket in blocking or non-blocking mode, if it is not already.
    fn set_nonblocking(&self, yes: bool) -> Result<(), TransportError> {
        if self.nonblocking.load(Ordering::Relaxed) != yes {
            self.listener
                .set_nonblocking(yes)
                .map_err(|e| TransportError::io("fcntl(O_NONBLOCK)", e))?;
            self.nonblocking.store(yes, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Accepts one connection, waiting for a peer to connect; its blocks and values are
    /// allocated from `pool`, which must be [`shared`](ferry_buf::PoolConfig::shared). Puts
    /// the listening socket back in blocking mode if [`try_accept`](Self::try_accept) left it
    /// non-blocking (so do not mix the two on one listener from several threads at once).
    pub fn accept(&self, pool: &Pool, config: &ShmConfig) -> Result<ShmConnection, TransportError> {
        self.set_nonblocking(false)?;
        let (sock, _) = self
            .listener
            .accept()
            .map_err(|e| TransportError::io("accept", e))?;
        ShmConnection::handshake(sock, pool, config)
    }

    /// Accepts one connection if a peer is waiting, `Ok(None)` if none is: for a poll loop,
    /// after the listening socket ([`as_fd`](AsFd::as_fd)) polls readable. Its blocks and
    /// values are allocated from the pool `pool` makes, which must be
    /// [`shared`](ferry_buf::PoolConfig::shared); it is called only once a peer was accepted
    /// (a pool is a memory file and its mappings: too much to make and drop for nobody).
    /// The listening socket is left non-blocking (until [`accept`](Self::accept)).
    ///
    /// Nothing here waits: this side's setup message is sent and the peer's is left to
    /// [`ShmHandshake::step`], which the caller makes when the handshake's socket
    /// ([`as_fd`](AsFd::as_fd)) polls readable. A peer that connects and says nothing costs
    /// its handshake (a socket, a pool, an eventfd) until [`ShmConfig::handshake_timeout`],
    /// never the caller's time.
    pub fn try_accept(
        &self,
        pool: impl FnOnce() -> Result<Pool, TransportError>,
        config: &ShmConfig,
    ) -> Result<Option<ShmHandshake>, TransportError> {
        self.set_nonblocking(true)?;
        let sock = match self.listener.accept() {
            Ok((sock, _)) => sock,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(TransportError::io("accept", e)),
        };
        // Linux does not pass the listener's O_NONBLOCK on to accepted sockets: the setup
        // exchange's reads must not wait.
        sock.set_nonblocking(true)
            .map_err(|e| TransportError::io("fcntl(O_NONBLOCK)", e))?;
        let deadline = Instant::now() + config.handshake_timeout;
        let half = Half::start(sock, &pool()?, config)?;
        Ok(Some(ShmHandshake { half, deadline }))
    }

    /// Accepts a waiting peer and closes its socket at once, with no pool and no setup (a
    /// server over its connection limit): the peer's setup fails as the socket closes.
    /// `false` if none waits. Leaves the listening socket non-blocking, as `try_accept` does.
    pub fn try_refuse(&self) -> Result<bool, TransportError> {
        self.set_nonblocking(true)?;
        match self.listener.accept() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(TransportError::io("accept", e)),
        }
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A shared-memory connection being set up, on the accepting side: this side's setup message
/// is sent, the peer's not yet read. [`step`](Self::step) reads it when it has come (poll
/// [`as_fd`](AsFd::as_fd), the Unix socket, for readability first); past the deadline
/// ([`ShmConfig::handshake_timeout`] from the accept) the step fails with
/// `io::ErrorKind::TimedOut`. Dropping it closes the socket: the peer's setup fails.
#[derive(Debug)]
pub struct ShmHandshake {
    half: Half,
    deadline: Instant,
}

/// What [`ShmHandshake::step`] came to.
// Made once per connection and matched at once: boxing the connection would cost an
// allocation and a pointer chase for its whole life to save a move of a few hundred bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum ShmStep {
    /// The peer's setup message was read and checked: the connection is up.
    Done(ShmConnection),
    /// Nothing from the peer yet: step again once the socket polls readable, or once the
    /// deadline has passed (to fail it).
    Waiting(ShmHandshake),
}

impl ShmHandshake {
    /// Reads the peer's setup message if it has come, without waiting. A message that arrives
    /// in pieces is refused (a peer sends its 32 bytes and two descriptors with one
    /// `sendmsg`, which a Unix stream socket delivers whole), as is one that breaks the setup
    /// rules; a peer that closed fails the step too.
    pub fn step(self) -> Result<ShmStep, TransportError> {
        let mut theirs = [0u8; HELLO_LEN];
        match sys::recv_fds(&self.half.sock, &mut theirs, 2) {
            Ok(fds) => self.half.finish(&theirs, fds).map(ShmStep::Done),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= self.deadline {
                    Err(setup_timed_out("recvmsg(SCM_RIGHTS)"))
                } else {
                    Ok(ShmStep::Waiting(self))
                }
            }
            Err(e) => Err(TransportError::io("recvmsg(SCM_RIGHTS)", e)),
        }
    }

    /// When the setup must be done by.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// The handshake's Unix socket: readable when the peer's setup message (or its close) came.
impl AsFd for ShmHandshake {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.half.sock.as_fd()
    }
}

/// One side's half of the setup: its control area, doorbell and setup message, sent.
#[derive(Debug)]
struct Half {
    sock: UnixStream,
    pool: Pool,
    control: BufMut,
    doorbell: OwnedFd,
    credits: u32,
    config: ShmConfig,
}

impl Half {
    /// Checks the settings, makes this side's control area and doorbell and sends the setup
    /// message (with the pool's memfd and the doorbell).
    fn start(sock: UnixStream, pool: &Pool, config: &ShmConfig) -> Result<Half, TransportError> {
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
        let mut control = pool.alloc(control_len(RING))?;
        control.capacity_mut().fill(0);
        control.set_len(control_len(RING));
        let control_offset = pool.offset_of(&control).expect("pool memory");
        let doorbell = sys::eventfd().map_err(|e| TransportError::io("eventfd", e))?;
        let credits = config.credits.clamp(1, ((RING / 2) as u32).min(MAX_CREDITS));

        let mut hello = [0u8; HELLO_LEN];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..12].copy_from_slice(&VERSION.to_le_bytes());
        hello[12..16].copy_from_slice(&credits.to_le_bytes());
        hello[16..24].copy_from_slice(&(control_offset as u64).to_le_bytes());
        hello[24..28].copy_from_slice(&(RING as u32).to_le_bytes());
        hello[28..32].copy_from_slice(&u32::from(config.never_sleep).to_le_bytes());
        // 32 bytes into a new socket's empty buffer: a non-blocking send takes them whole.
        sys::send_fds(&sock, &hello, &[memfd, doorbell.as_fd()])
            .map_err(|e| setup_io("sendmsg(SCM_RIGHTS)", e))?;
        Ok(Half {
            sock,
            pool: pool.clone(),
            control,
            doorbell,
            credits,
            config: config.clone(),
        })
    }

    /// Checks the peer's setup message and descriptors, maps its memory and makes the
    /// connection.
    fn finish(
        self,
        theirs: &[u8; HELLO_LEN],
        mut fds: Vec<OwnedFd>,
    ) -> Result<ShmConnection, TransportError> {
        let Half {
            sock,
            pool,
            control,
            doorbell,
            credits,
            config,
        } = self;
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
        let mem = Memory {
            control: OwnWords::new(control),
            peer: Rc::new(peer),
        };
        let setup = Setup {
            block_size: config.block_size,
            block_messages: config.block_messages.max(1),
            credits: credits.min(word(12).max(1)),
            ring: RING,
            peer_control,
            // Any other bit is read as "may sleep": the safe side.
            peer_never_sleeps: word(28) == NEVER_SLEEPS,
        };
        let core = Endpoint::new(&pool, setup, &mem)?;
        sock.set_nonblocking(true)
            .map_err(|e| TransportError::io("fcntl(O_NONBLOCK)", e))?;
        Ok(ShmConnection {
            sock,
            mem,
            core,
            doorbell,
            peer_doorbell,
            spin: if config.never_sleep {
                Duration::MAX
            } else {
                config.spin
            },
            never_sleep: config.never_sleep,
            spins: 0,
            idle_polls: 0,
            nonblocking: false,
        })
    }
}

/// The listening socket: readable when a peer waits to be accepted
/// ([`ShmListener::try_accept`]). Not the descriptor of any connection.
impl AsFd for ShmListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }
}

impl Drop for ShmListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The memory of one connection: this side's control area (in its pool, which the peer maps)
/// and the peer's whole region, mapped read-only.
#[derive(Debug)]
pub(crate) struct Memory {
    control: OwnWords,
    peer: Rc<Mapping>,
}

#[cfg(all(test, not(loom)))]
impl Memory {
    /// One side's memory in a single process: a control area for a ring of `ring` entries in
    /// `own`, and `peer`'s memfd mapped read-only. Returns it and the control area's offset.
    pub(crate) fn in_process(own: &Pool, peer: &Pool, ring: usize) -> (Memory, usize) {
        let mut control = own.alloc(control_len(ring)).expect("room for a control area");
        control.capacity_mut().fill(0);
        control.set_len(control_len(ring));
        let offset = own.offset_of(&control).expect("pool memory");
        let peer = Mapping::map_readonly(peer.memfd().expect("a shared pool")).expect("mapping the peer");
        (
            Memory {
                control: OwnWords::new(control),
                peer: Rc::new(peer),
            },
            offset,
        )
    }

    /// The peer's region.
    pub(crate) fn region(&self) -> &[u8] {
        self.peer.bytes()
    }
}

impl Shared for Memory {
    fn load(&self, offset: usize) -> Option<u64> {
        self.peer.load_u64(offset)
    }

    fn copy_out(&self, offset: usize, out: &mut [u8]) -> Option<()> {
        self.peer.copy_out(offset, out)
    }

    fn load_words<const N: usize>(&self, offset: usize) -> Option<[u64; N]> {
        self.peer.load_words(offset)
    }

    fn peer_len(&self) -> usize {
        self.peer.bytes().len()
    }

    fn prefetch(&self, offset: usize, len: usize) {
        self.peer.prefetch(offset, len);
    }

    fn store(&mut self, offset: usize, value: u64) {
        self.control.store(offset, value);
    }

    fn fence(&self) {
        fence(Ordering::SeqCst);
    }
}

/// One end of a shared-memory connection: the block protocol ([`proto::Endpoint`]) driven over
/// the two mappings, with busy-polling and an eventfd doorbell for waits. See the crate docs.
#[derive(Debug)]
pub struct ShmConnection {
    sock: UnixStream,
    mem: Memory,
    core: Endpoint,
    doorbell: OwnedFd,
    peer_doorbell: OwnedFd,
    spin: Duration,
    /// [`ShmConfig::never_sleep`]: never announce a sleep (the peer publishes without the
    /// fence, so an announcement could be missed).
    never_sleep: bool,
    spins: u32,
    /// Calls of `poll_recv` that found nothing (it looks at the socket every
    /// [`POLLS_PER_HANG_UP_CHECK`]).
    idle_polls: u32,
    /// Sends and flushes return `WouldBlock` rather than wait for credits.
    nonblocking: bool,
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

    /// The setup exchange on a blocking socket, waiting at most
    /// [`ShmConfig::handshake_timeout`] for the peer (a peer that connects and says nothing
    /// must not hold `accept` for ever).
    fn handshake(sock: UnixStream, pool: &Pool, config: &ShmConfig) -> Result<ShmConnection, TransportError> {
        sock.set_read_timeout(Some(config.handshake_timeout))
            .and_then(|()| sock.set_write_timeout(Some(config.handshake_timeout)))
            .map_err(|e| TransportError::io("setsockopt(SO_RCVTIMEO)", e))?;
        let half = Half::start(sock, pool, config)?;
        let mut theirs = [0u8; HELLO_LEN];
        let fds =
            sys::recv_fds(&half.sock, &mut theirs, 2).map_err(|e| setup_io("recvmsg(SCM_RIGHTS)", e))?;
        half.finish(&theirs, fds)
    }

    /// The pool this connection sends from: build values in it to send them with no copy.
    pub fn pool(&self) -> &Pool {
        self.core.pool()
    }

    /// Counters so far.
    pub fn stats(&self) -> ShmStats {
        self.core.stats()
    }

    /// Bytes sent and not yet acknowledged: the published blocks the peer may still read and
    /// the values they reference (held until the acknowledgement).
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    /// Blocks sent and not yet acknowledged (each holds a credit).
    pub fn blocks_in_flight(&self) -> usize {
        self.core.blocks_in_flight()
    }

    /// The request id the next message gets implicitly: send it with this id and the id is
    /// not written to shared memory (the receiver counts messages the same way).
    pub fn next_request_id(&self) -> u64 {
        self.core.next_request_id()
    }

    /// Rings the peer's doorbell if an entry found it sleeping.
    fn wake(&mut self) {
        if self.core.take_wake() {
            self.core.stats_mut().wakeups += 1;
            let _ = sys::ring(self.peer_doorbell.as_fd());
        }
    }

    /// Non-blocking mode (`yes`), or back to the default, blocking mode. In non-blocking mode
    /// [`send`](Self::send), [`send_payload`](Self::send_payload) and [`flush`](Self::flush)
    /// never wait for credits or ring room: blocks that cannot be published yet stay queued
    /// and go out on later calls (`send`, `flush`, `try_recv` and `poll_recv` publish what
    /// credits allow). Memory stays bounded: while a queued block waits, `send` and
    /// `send_payload` refuse the next message with [`TransportError::WouldBlock`] and take
    /// nothing (retry it later, as with `ferry-net`'s non-blocking sender), so at most
    /// `credits` blocks are in flight and one (or, when a message does not fit in the room
    /// left, two) wait, besides the block being filled. `flush` returns `WouldBlock` while
    /// anything stays unpublished ([`has_unsent`](Self::has_unsent)).
    ///
    /// What to wait on after `WouldBlock`: credits come back only as acknowledgements in the
    /// peer's ring entries, and every entry the peer publishes (an acknowledgement alone
    /// included) rings the doorbell once it is armed. So call [`try_recv`](Self::try_recv)
    /// until it returns `None` (it publishes what returned credits allow, and arms the
    /// doorbell); if `has_unsent()` is then still true, poll [`as_fd`](AsFd::as_fd) for
    /// readability before retrying, else retry at once. (Ring room never holds a block back
    /// while a credit is left, since credits are at most half the ring.) A busy-polling loop
    /// retries after [`poll_recv`](Self::poll_recv) instead, with no doorbell.
    ///
    /// Receiving is unchanged: [`recv`](Self::recv) still waits for a message, though not for
    /// credits; [`wait_idle`](Self::wait_idle) waits in either mode.
    pub fn set_nonblocking(&mut self, yes: bool) {
        self.nonblocking = yes;
    }

    /// Whether something is queued and not yet published: messages in a block (the one being
    /// filled, or ready and waiting for a credit) or acknowledgements owed to the peer (frames
    /// dropped since the last publication). [`flush`](Self::flush) publishes them (in
    /// non-blocking mode, as far as credits allow). Published blocks the peer has not yet
    /// acknowledged do not count: see [`blocks_in_flight`](Self::blocks_in_flight).
    pub fn has_unsent(&self) -> bool {
        self.core.has_unsent()
    }

    /// Publishes ready blocks and owed acknowledgements as far as credits and ring room allow,
    /// taking in the acknowledgements that have arrived; never waits. Returns whether every
    /// ready block went out.
    fn push_ready(&mut self) -> Result<bool, TransportError> {
        loop {
            let done = self.core.publish(&mut self.mem)?;
            self.core.publish_acks(&mut self.mem)?;
            self.wake();
            // What arrived may be credits: go round again (the peer's blocks are bounded by its
            // credits and this side's ready blocks are finite, so this ends).
            if done || !self.core.poll(&mut self.mem)? {
                return Ok(done);
            }
        }
    }

    /// Before queueing a message in non-blocking mode: `WouldBlock` (nothing queued) while
    /// ready blocks still wait for credits once what can go out has gone.
    #[inline]
    fn make_room(&mut self) -> Result<(), TransportError> {
        if self.nonblocking && self.core.has_ready() && !self.push_ready()? {
            return Err(TransportError::WouldBlock);
        }
        Ok(())
    }

    /// After queueing a message: publishes the blocks it made ready (waiting for credits in
    /// blocking mode; in non-blocking mode, what is left stays queued).
    #[inline]
    fn queued(&mut self) -> Result<(), TransportError> {
        if self.core.has_ready() {
            if self.nonblocking {
                self.push_ready()?;
            } else {
                self.push_out()?;
            }
        }
        Ok(())
    }

    /// Publishes every ready block, waiting for credits and ring room.
    fn push_out(&mut self) -> Result<(), TransportError> {
        let mut start = None;
        let mut counted = false;
        while !self.core.publish(&mut self.mem)? {
            if self.core.credits() == 0 && !counted {
                self.core.stats_mut().credit_waits += 1;
                counted = true;
            }
            // Acknowledgements cost no credit: send what this side owes, or two peers out of
            // credits, each owing the other, would wait for ever.
            self.core.publish_acks(&mut self.mem)?;
            self.wake();
            if !self.core.poll(&mut self.mem)? {
                self.wait(&mut start)?;
            }
        }
        self.wake();
        Ok(())
    }

    /// Queues a Ferry message in the current block: its header segment is written there, and
    /// its zero-copy values are referenced where they lie in this connection's pool (values
    /// elsewhere are copied into the pool once). The block is published when full (waiting for
    /// a credit if none is left) or on [`flush`](Self::flush).
    ///
    /// In [non-blocking mode](Self::set_nonblocking) it never waits: a full block with no
    /// credit stays queued, and while one does, the call returns
    /// [`TransportError::WouldBlock`] with the message not taken (and no request id used).
    pub fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.make_room()?;
        self.core.send(meta, msg)?;
        self.queued()
    }

    /// Queues a raw payload, copied into the current block (shared memory: the receiver reads
    /// raw payloads contiguously, so gather parts are copied too). Waits, or in non-blocking
    /// mode returns `WouldBlock` with nothing taken, as [`send`](Self::send) does.
    pub fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        self.make_room()?;
        self.core.send_payload(meta, payload)?;
        self.queued()
    }

    /// Publishes the current block (waiting for a credit if none is left) and any
    /// acknowledgements owed: the Nagle-like tick of the event loop.
    ///
    /// In [non-blocking mode](Self::set_nonblocking) it publishes what credits allow, never
    /// waits, and returns [`TransportError::WouldBlock`] if anything stays unpublished
    /// ([`has_unsent`](Self::has_unsent)); it goes out on later calls.
    pub fn flush(&mut self) -> Result<(), TransportError> {
        if !self.nonblocking {
            return self.flush_blocking();
        }
        self.core.check()?;
        self.core.close_block();
        self.push_ready()?;
        if self.core.has_unsent() {
            return Err(TransportError::WouldBlock);
        }
        Ok(())
    }

    /// [`flush`](Self::flush) for `recv`: in non-blocking mode what stays queued
    /// (`WouldBlock`) is no error, later calls publish it; in blocking mode it waits.
    fn tick(&mut self) -> Result<(), TransportError> {
        match self.flush() {
            Err(TransportError::WouldBlock) => Ok(()),
            other => other,
        }
    }

    /// `flush` in blocking mode: waits for credits and ring room, whatever the mode. Inlined
    /// into `flush`, its caller per call (one call frame less).
    #[inline(always)]
    fn flush_blocking(&mut self) -> Result<(), TransportError> {
        // Checked once: a failure below returns at once.
        self.core.check()?;
        self.core.close_block();
        // Out at once unless credits or ring room are short; only then the waiting loop.
        if !self.core.publish_unchecked(&mut self.mem)? {
            self.push_out()?;
        }
        let mut start = None;
        while !self.core.publish_acks_unchecked(&mut self.mem)? {
            if !self.core.poll(&mut self.mem)? {
                self.wait(&mut start)?;
            }
        }
        self.wake();
        Ok(())
    }

    /// Waits a little for the peer: busy-polls until `spin` has passed since the first wait of
    /// this operation (`since`, set then), then sleeps on the doorbell (bounded, so a dead
    /// peer is noticed).
    fn wait(&mut self, since: &mut Option<Instant>) -> Result<(), TransportError> {
        self.spins = self.spins.wrapping_add(1);
        // Never sleeping (`Duration::MAX`): no clock at all. Else the clock is read once every
        // 64 spins (it cost a quarter of a busy-polling profile), the first reading starting
        // the wait's count: a wait that ends within 64 spins, as a busy call's usually does,
        // reads none, and the spin lasts at most 64 spins longer than configured.
        let spinning = self.spin == Duration::MAX
            || (!self.spin.is_zero()
                && (self.spins % 64 != 0 || {
                    let since = *since.get_or_insert_with(Instant::now);
                    since.elapsed() < self.spin
                }));
        if spinning {
            std::hint::spin_loop();
            // A peer that dies sets no flag: look at the socket now and then, even when
            // configured never to sleep.
            if self.spins % 4096 == 0 && sys::hung_up(self.sock.as_fd()) {
                return Err(self.reset());
            }
            return Ok(());
        }
        let mut hung_up = false;
        if !self.core.announce_sleep(&mut self.mem) {
            self.core.stats_mut().sleeps += 1;
            hung_up = sys::wait(self.doorbell.as_fd(), self.sock.as_fd(), 100)
                .map_err(|e| TransportError::io("poll", e))?;
        }
        self.core.withdraw(&mut self.mem);
        sys::drain(self.doorbell.as_fd());
        // A closed socket with nothing published and no closed word: the peer died.
        if hung_up && !self.core.poll(&mut self.mem)? {
            let mut b = [0u8; 1];
            match (&self.sock).read(&mut b) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                _ => return Err(self.reset()),
            }
        }
        Ok(())
    }

    /// Fails the connection: the peer went away without saying so.
    fn reset(&mut self) -> TransportError {
        self.core.fail(TransportError::io(
            "peer",
            io::Error::from(io::ErrorKind::ConnectionReset),
        ))
    }

    fn frame(&self, m: Incoming) -> ShmFrame {
        ShmFrame {
            meta: m.meta,
            ferry: m.ferry,
            offset: m.offset,
            len: m.len,
            mapping: Rc::clone(&self.mem.peer),
            _hold: m.hold,
        }
    }

    /// The next message: publishes what is queued and owed, then busy-polls and sleeps
    /// (per [`ShmConfig::spin`]) until the peer sends one. In non-blocking mode it publishes
    /// what credits allow (and more as they come back while it waits) without waiting for
    /// them; it still waits for a message.
    pub fn recv(&mut self) -> Result<ShmFrame, TransportError> {
        if let Some(m) = self.core.next(&self.mem)? {
            return Ok(self.frame(m));
        }
        self.tick()?;
        let mut start = None;
        let mut polls = 0u32;
        loop {
            // The peer's head and closed word once per SPINS_PER_LOOK polls (the first
            // included); the others read the next ring slot alone.
            let look = polls % SPINS_PER_LOOK == 0;
            polls = polls.wrapping_add(1);
            if self.core.poll_spinning(&mut self.mem, look)? {
                if let Some(m) = self.core.next(&self.mem)? {
                    return Ok(self.frame(m));
                }
                // Only acknowledgements, or blocks with no message (released at once): what
                // they allow or owe goes out before waiting again. Nothing else changes while
                // this side waits here (frames are released on this thread).
                self.tick()?;
            } else {
                self.wait(&mut start)?;
                // A wait that saw the socket hang up has consumed what was published before.
                if let Some(m) = self.core.next(&self.mem)? {
                    return Ok(self.frame(m));
                }
            }
        }
    }

    /// The next message if one has arrived, never waiting: `Ok(None)` when none has. Publishes
    /// the block being filled (and acknowledgements owed) as far as credits and ring room
    /// allow; it never waits for either.
    ///
    /// With [`ShmConfig::never_sleep`] it is [`poll_recv`](Self::poll_recv): nothing is armed.
    ///
    /// Returning `Ok(None)` arms the doorbell: this side announces that it waits, so the peer's
    /// next publication writes the eventfd that [`as_fd`](AsFd::as_fd) returns, and a poll loop
    /// wakes. The announcement is withdrawn on the next call (of this or of
    /// [`poll_recv`](Self::poll_recv)). Each call reads the eventfd (to clear it) and, when it
    /// finds nothing, polls the socket for a hang-up: two system calls, which a busy-polling
    /// loop avoids with `poll_recv`.
    pub fn try_recv(&mut self) -> Result<Option<ShmFrame>, TransportError> {
        if self.never_sleep {
            return self.poll_recv();
        }
        self.core.check()?;
        self.core.withdraw(&mut self.mem);
        sys::drain(self.doorbell.as_fd());
        let mut armed = false;
        loop {
            if let Some(m) = self.core.next(&self.mem)? {
                if armed {
                    self.core.withdraw(&mut self.mem);
                }
                return Ok(Some(self.frame(m)));
            }
            if self.core.credits() > 0 {
                self.core.close_block();
            }
            self.core.publish(&mut self.mem)?;
            self.core.publish_acks(&mut self.mem)?;
            self.wake();
            // What arrives may be acknowledgements only (credits back, no message): publish
            // what they allow and look again, and arm before returning `None` whatever came.
            if self.core.poll(&mut self.mem)? {
                continue;
            }
            if armed {
                break;
            }
            // Announce the wait, then look again: either the peer sees the flag and rings, or
            // this side sees what it published.
            self.core.announce_sleep(&mut self.mem);
            armed = true;
        }
        if sys::hung_up(self.sock.as_fd()) {
            // The socket closed: take what was published before it did, then fail.
            if self.core.poll(&mut self.mem)? {
                if let Some(m) = self.core.next(&self.mem)? {
                    return Ok(Some(self.frame(m)));
                }
            }
            return Err(self.reset());
        }
        Ok(None)
    }

    /// The next message if one has arrived, never waiting and never arming the doorbell: for
    /// a loop that busy-polls its connections. Like [`try_recv`](Self::try_recv), it publishes
    /// the block being filled (and acknowledgements owed) as far as credits and ring room
    /// allow, and fails the same way when the peer has closed or gone: within 64 calls that
    /// find nothing (they read the peer's closed word and ring head once per 64, and its next
    /// ring slot every time).
    ///
    /// Unlike `try_recv`, returning `Ok(None)` announces nothing: the peer never writes the
    /// eventfd on this side's behalf, so publishing costs it no system call, and a loop that
    /// wants to sleep must call `try_recv` (which arms the doorbell) before it waits on
    /// [`as_fd`](AsFd::as_fd). An announcement an earlier `try_recv` left up is withdrawn (and
    /// the eventfd cleared) by the first call. Otherwise the call reads and writes shared
    /// memory only, with no system call and no clock read, except that one in 1024 of the calls
    /// that find nothing looks at the socket (a peer that dies sets no word in shared memory), and
    /// that a publication that finds the peer asleep rings its doorbell.
    pub fn poll_recv(&mut self) -> Result<Option<ShmFrame>, TransportError> {
        self.core.check()?;
        if self.core.announced() {
            self.core.withdraw(&mut self.mem);
            sys::drain(self.doorbell.as_fd());
        }
        // Checked above: a failure below returns at once.
        loop {
            if let Some(m) = self.core.next_unchecked(&self.mem)? {
                return Ok(Some(self.frame(m)));
            }
            if self.core.credits() > 0 {
                self.core.close_block();
            }
            self.core.publish_unchecked(&mut self.mem)?;
            self.core.publish_acks_unchecked(&mut self.mem)?;
            self.wake();
            // Acknowledgements alone (credits back) may let more out: publish and look again.
            // The peer's next ring slot only: its head and closed word below, now and then.
            if !self.core.poll_spinning_unchecked(&mut self.mem, false)? {
                break;
            }
        }
        self.idle_polls = self.idle_polls.wrapping_add(1);
        // The peer's head and closed word once per SPINS_PER_LOOK calls that find nothing, as
        // `recv` does (a close, or a lying head, is seen then); what arrived meanwhile is taken.
        if self.idle_polls % SPINS_PER_LOOK == 0 && self.core.poll(&mut self.mem)? {
            if let Some(m) = self.core.next(&self.mem)? {
                return Ok(Some(self.frame(m)));
            }
        }
        if self.idle_polls % POLLS_PER_HANG_UP_CHECK == 0 && sys::hung_up(self.sock.as_fd()) {
            // As in `try_recv`: take what was published before the socket closed, then fail.
            if self.core.poll(&mut self.mem)? {
                if let Some(m) = self.core.next(&self.mem)? {
                    return Ok(Some(self.frame(m)));
                }
            }
            return Err(self.reset());
        }
        Ok(None)
    }

    /// Waits until the peer has acknowledged every block sent (all values may be reused).
    /// Publishes what is queued first, waiting for credits in either mode.
    pub fn wait_idle(&mut self) -> Result<(), TransportError> {
        self.flush_blocking()?;
        let mut start = None;
        while self.core.blocks_in_flight() > 0 {
            if !self.core.poll(&mut self.mem)? {
                self.core.publish_acks(&mut self.mem)?;
                self.wake();
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
        self.core.close(&mut self.mem);
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

    fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &Limits) -> Result<View<'a>, DecodeError> {
        ShmFrame::view(self, desc, limits)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::os::fd::AsFd;
    use std::thread;
    use std::time::Duration;

    use ferry_testkit::{DEADLINE, shared_pool, within};
    use ferry_transport::{Meta, Payload, TransportError};

    use super::{ShmConfig, ShmConnection, ShmHandshake, ShmListener, ShmStep};
    use crate::sys;

    /// Whether `listener` polls readable (a peer waits to be accepted) within `timeout_ms`:
    /// `sys::wait` reports its second descriptor; the first, a fresh eventfd, never fires.
    fn readable(listener: &ShmListener, timeout_ms: i32) -> bool {
        let never = sys::eventfd().unwrap();
        sys::wait(never.as_fd(), listener.as_fd(), timeout_ms).unwrap()
    }

    /// Steps `handshake` each time its socket polls readable until the connection is up.
    fn complete(mut handshake: ShmHandshake) -> ShmConnection {
        let never = sys::eventfd().unwrap();
        loop {
            handshake = match handshake.step().unwrap() {
                ShmStep::Done(conn) => return conn,
                ShmStep::Waiting(h) => h,
            };
            sys::wait(never.as_fd(), handshake.as_fd(), DEADLINE.as_millis() as i32).unwrap();
        }
    }

    /// A peer on its own thread: connects, sends `hello`, expects `world` back, acknowledges
    /// it, and sees the accepting side close.
    fn peer(path: std::path::PathBuf) -> thread::JoinHandle<()> {
        thread::spawn(move || {
            let pool = shared_pool();
            let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
            conn.send_payload(Meta::new(1, 0), Payload::Bytes(b"hello"))
                .unwrap();
            conn.flush().unwrap();
            let f = conn.recv().unwrap();
            assert_eq!(f.bytes(), Some(&b"world"[..]));
            drop(f);
            conn.flush().unwrap();
            assert!(matches!(conn.recv(), Err(TransportError::Closed)));
        })
    }

    /// The accepting side of [`peer`]'s exchange.
    fn serve(mut conn: ShmConnection) {
        let f = conn.recv().unwrap();
        assert_eq!(f.bytes(), Some(&b"hello"[..]));
        drop(f);
        conn.send_payload(Meta::new(2, 0), Payload::Bytes(b"world"))
            .unwrap();
        conn.wait_idle().unwrap();
    }

    /// Regression (issue 28): a peer that connects and says nothing, or says too little, or
    /// closes, costs the accepting side a handshake, never a wait. `try_accept` and `step`
    /// return while it is silent (a wait here would be the old 10 s one, past the test's
    /// watchdog); the step past the deadline fails `TimedOut`; a partial setup message or a
    /// close fails the step at once; the listener keeps accepting good peers meanwhile.
    #[test]
    fn a_silent_peer_costs_a_handshake_not_a_wait() {
        use std::io::Write;
        use std::os::unix::net::UnixStream;
        within("silent peers", || {
            let pool = shared_pool();
            let listener = ShmListener::bind(
                std::env::temp_dir().join(format!("ferry-shm-unit-{}-silent.sock", std::process::id())),
            )
            .unwrap();
            let long = ShmConfig::default();
            let silent = UnixStream::connect(listener.path()).unwrap();
            let waiting = listener
                .try_accept(|| Ok(pool.clone()), &long)
                .unwrap()
                .expect("the silent peer");
            let waiting = match waiting.step().unwrap() {
                ShmStep::Waiting(h) => h,
                ShmStep::Done(_) => panic!("set up with a peer that said nothing"),
            };
            // A good peer is served while the silent one waits.
            let good = peer(listener.path().to_path_buf());
            assert!(readable(&listener, DEADLINE.as_millis() as i32));
            serve(complete(
                listener.try_accept(|| Ok(pool.clone()), &long).unwrap().unwrap(),
            ));
            good.join().unwrap();
            drop(waiting);

            // Past the deadline (zero here) the step names the timeout.
            let expired = ShmConfig {
                handshake_timeout: Duration::ZERO,
                ..ShmConfig::default()
            };
            let _silent2 = UnixStream::connect(listener.path()).unwrap();
            let h = listener
                .try_accept(|| Ok(pool.clone()), &expired)
                .unwrap()
                .unwrap();
            match h.step() {
                Err(TransportError::Io { source, .. }) => {
                    assert_eq!(source.kind(), std::io::ErrorKind::TimedOut, "{source}")
                }
                other => panic!("expected a timeout, got {other:?}"),
            }

            // Half a setup message, then a close: each fails its step, with no wait.
            let mut partial = UnixStream::connect(listener.path()).unwrap();
            let h = listener.try_accept(|| Ok(pool.clone()), &long).unwrap().unwrap();
            partial.write_all(b"FERRY").unwrap();
            sys::wait(
                sys::eventfd().unwrap().as_fd(),
                h.as_fd(),
                DEADLINE.as_millis() as i32,
            )
            .unwrap();
            assert!(h.step().is_err(), "a partial setup message is refused");
            let closing = UnixStream::connect(listener.path()).unwrap();
            let h = listener.try_accept(|| Ok(pool.clone()), &long).unwrap().unwrap();
            drop(closing);
            assert!(h.step().is_err(), "a peer that closed fails the setup");
            drop(silent);
            assert_eq!(pool.stats().buffers_outstanding(), 0, "every control area back");
        });
    }

    /// A poll loop's accept: with nobody waiting the listening socket does not poll readable
    /// and `try_accept` returns `None`; a peer that connects makes it readable and
    /// `try_accept` returns a working connection; then nobody again. A blocking `accept`
    /// afterwards waits again (the listener is back in blocking mode), for a peer that
    /// connects later.
    #[test]
    fn try_accept_takes_a_waiting_peer_and_only_then() {
        within("try_accept", || {
            let pool = shared_pool();
            let listener = ShmListener::bind(
                std::env::temp_dir().join(format!("ferry-shm-unit-{}-try-accept.sock", std::process::id())),
            )
            .unwrap();
            let config = ShmConfig::default();
            assert!(!readable(&listener, 0), "readable with nobody connecting");
            // Regression: no pool is made while nobody waits (the tokio server made and dropped
            // one on every wake of its thread).
            let no_pool = || -> Result<ferry_buf::Pool, TransportError> { panic!("a pool made for nobody") };
            assert!(listener.try_accept(no_pool, &config).unwrap().is_none());
            assert!(listener.try_accept(no_pool, &config).unwrap().is_none());

            let first = peer(listener.path().to_path_buf());
            assert!(
                readable(&listener, DEADLINE.as_millis() as i32),
                "a connecting peer makes the listener readable"
            );
            let handshake = listener
                .try_accept(|| Ok(pool.clone()), &config)
                .unwrap()
                .expect("the peer that made it readable");
            serve(complete(handshake));
            first.join().unwrap();
            assert!(!readable(&listener, 0));
            assert!(listener.try_accept(no_pool, &config).unwrap().is_none());

            let path = listener.path().to_path_buf();
            let late = thread::spawn(move || {
                thread::sleep(Duration::from_millis(50));
                peer(path).join().unwrap();
            });
            serve(
                listener
                    .accept(&pool, &config)
                    .expect("accept waits for the late peer"),
            );
            late.join().unwrap();
            assert_eq!(pool.stats().buffers_outstanding(), 0, "every buffer back");
        });
    }
}
