//! [`Transport`] over UDP: one [`UdpConnection`] is one session with one peer, on a socket of
//! its own `connect(2)`ed to that peer, so that an event loop polls each connection's
//! descriptor as it does a TCP connection's.
//!
//! - **Client** ([`UdpConnection::connect`]): an ephemeral socket connected to the server, the
//!   handshake run to its Accept within [`UdpConnConfig::handshake_timeout`].
//! - **Server** ([`UdpListener`]): a socket bound with `SO_REUSEADDR` and `SO_REUSEPORT`. A
//!   Connect from a new peer makes a new socket with the same options, bound to the same
//!   address and connected to the peer: Linux then delivers that peer's datagrams to it (a
//!   connected socket scores higher in the UDP lookup, and `SO_REUSEPORT` never picks a
//!   connected socket for other peers: what QUIC servers rely on), and the Connect is handed
//!   to the new connection's own [`Endpoint`](crate::Endpoint). Datagrams from an accepted
//!   peer that still reach the listener (sent before the connected socket existed, or a
//!   retransmitted Connect) are dropped and counted: the protocol's retransmission covers
//!   them, and no second session is made. Datagrams for no session from anyone else are
//!   answered by a Reset, so a client of a server that restarted on the same port learns it
//!   on its next packet.
//! - **Frames**: a received message is the pool buffer it was reassembled in, read in place
//!   ([`Received::bytes`], [`Received::view`]). [`Transport::send`] serializes the Ferry
//!   message into one pool buffer (the hybrid layout: zero-copy values are copied there, the
//!   one user-space copy of this transport; the kernel copies again into its socket buffers,
//!   as for every UDP send); the packets then reference slices of it until acknowledged.
//! - **Readiness**: the descriptor ([`AsFd`]) is an `epoll` set of the socket and a `timerfd`
//!   armed at the core's next timer, so a loop that polls it also wakes to retransmit.
//!   Messages beyond the session's window wait in the connection, never blocking a send.
//! - **Errors**: a session that ends (the peer restarted, reset it, or stopped answering
//!   after [`Config::max_timeouts`](crate::Config::max_timeouts) timeouts) fails the next call
//!   with [`TransportError::Io`] of kind `ConnectionReset` or `TimedOut` whose inner error is
//!   the [`SessionError`]; later calls return [`TransportError::Poisoned`].

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use ferry_buf::{Pool, SharedBuf};
use ferry_transport::{Meta, Payload, Transport, TransportError};
use ferry_wire::Outgoing;
use socket2::{Domain, Protocol, Socket, Type};
use thiserror::Error;

use super::wake::Wake;
use super::{BindError, UdpConfig, UdpEndpoint, UdpStats, sys};
use crate::conn::{self, DgramFrame};
use crate::packet::{Body, Header, Limits, Packet, RESET_LEN};
use crate::{Config, Event, SessionId};

/// How UDP connections are made.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpConnConfig {
    /// The driver's and the protocol core's settings. The core's `max_message_len` is
    /// lowered to what the connection's pool holds. Default: [`UdpConfig::default`] but
    /// - [`MAX_CREDITS`](crate::MAX_CREDITS) (64) credits, not eRPC's 32, and a window of as
    ///   many messages, not eRPC's 8: a connection is one session carrying all of an RPC
    ///   session's calls, where eRPC gives a client many sessions, so the credits (packets
    ///   unacknowledged) are its flow control; with a window of 8, 128 calls in flight moved 8
    ///   a round trip, with 32 credits 32;
    /// - no GRO, whose 64 KiB receive buffers would cost every connection 2 MiB (32 of them)
    ///   where MTU-sized ones cost 46 KiB (GSO stays on);
    /// - a peer given up after 16 timeouts with the timeout capped at 1 s (the core's
    ///   defaults: 10 and 500 ms), about 8 s on loopback instead of 1.5 s: a blocking caller
    ///   acknowledges only inside its calls, so this is how long it may leave a connection
    ///   alone while messages come to it (see the crate docs).
    pub udp: UdpConfig,
    /// How long [`UdpConnection::connect`] waits for the server's Accept. Default 5 s.
    pub handshake_timeout: Duration,
}

impl Default for UdpConnConfig {
    fn default() -> Self {
        UdpConnConfig {
            udp: UdpConfig {
                endpoint: Config {
                    credits: crate::MAX_CREDITS,
                    window: crate::MAX_CREDITS as usize,
                    max_timeouts: 16,
                    rto_max: Duration::from_secs(1),
                    ..Config::default()
                },
                gro: false,
                ..UdpConfig::default()
            },
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// No Accept came within [`UdpConnConfig::handshake_timeout`]: the inner error of the
/// [`TransportError::Io`] (kind `TimedOut`) that [`UdpConnection::connect`] returns.
#[derive(Debug, Error)]
#[error("no Accept from {peer} within {timeout:?} ({connects} Connect packets sent)")]
pub struct HandshakeTimeout {
    /// The server.
    pub peer: SocketAddr,
    /// The timeout.
    pub timeout: Duration,
    /// Connect packets sent (the first and its retransmissions).
    pub connects: u64,
}

fn bind_error(e: BindError) -> TransportError {
    match e {
        BindError::Io(e) => TransportError::io("udp socket", e),
        other => TransportError::Config(other.to_string()),
    }
}

/// A non-blocking UDP socket bound to `local` (with `SO_REUSEADDR` and `SO_REUSEPORT` if
/// `reuse`), connected to `peer` if given.
fn udp_socket(local: SocketAddr, peer: Option<SocketAddr>, reuse: bool) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if reuse {
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
    }
    socket.bind(&local.into())?;
    if let Some(peer) = peer {
        socket.connect(&peer.into())?;
    }
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// One session with one peer over a connected UDP socket: a [`Transport`].
pub struct UdpConnection {
    driver: UdpEndpoint,
    wake: Wake,
    session: SessionId,
    peer: SocketAddr,
    pool: Pool,
    max_len: usize,
    /// Messages received and not yet taken.
    frames: VecDeque<DgramFrame>,
    /// Messages sent beyond the session's window, in order.
    backlog: VecDeque<(Meta, SharedBuf)>,
    /// Whether `try_recv` acknowledges what it receives before returning it: on a client's
    /// connection, whose caller (a blocking channel) may not call again for a while; a served
    /// connection's caller (the event loop, the tokio server) drains `try_recv` until `None`,
    /// whose drive sends the acknowledgements with the answers.
    ack_at_once: bool,
    /// The frames queued came from a drive that emptied the socket: the call that finds
    /// none left sends without receiving again, since what came after makes the descriptor
    /// readable (a `recvmmsg` that would mostly find nothing, saved once per drain).
    skip_receive: bool,
    /// Why the connection ended, until reported once.
    failure: Option<TransportError>,
    dead: bool,
    /// Alive while the connection is: the listener's record of its peer.
    alive: Arc<()>,
}

impl UdpConnection {
    fn new(
        socket: UdpSocket,
        peer: SocketAddr,
        pool: &Pool,
        config: &UdpConnConfig,
    ) -> Result<Self, TransportError> {
        let mut udp = config.udp.clone();
        let pool_max = u32::try_from(pool.max_class()).unwrap_or(u32::MAX);
        udp.endpoint.max_message_len = udp.endpoint.max_message_len.min(pool_max);
        let max_len = udp.endpoint.max_message_len as usize;
        let driver = UdpEndpoint::on_socket(socket, udp, pool.clone()).map_err(bind_error)?;
        let wake = Wake::new(driver.as_fd()).map_err(|e| TransportError::io("epoll_create", e))?;
        Ok(UdpConnection {
            driver,
            wake,
            session: SessionId::NONE,
            peer,
            pool: pool.clone(),
            max_len,
            frames: VecDeque::new(),
            backlog: VecDeque::new(),
            ack_at_once: false,
            skip_receive: false,
            failure: None,
            dead: false,
            alive: Arc::new(()),
        })
    }

    /// Connects to the server at `peer`: an ephemeral socket connected to it, and the
    /// handshake, waited for up to `config.handshake_timeout` (then an error of kind
    /// `TimedOut` with a [`HandshakeTimeout`] inside; a server port with no socket fails
    /// sooner, with `ConnectionRefused`, when the kernel reports it). Messages are received
    /// into `pool` and serialized into it.
    pub fn connect(
        peer: SocketAddr,
        pool: &Pool,
        config: &UdpConnConfig,
    ) -> Result<UdpConnection, TransportError> {
        let local: SocketAddr = match peer {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let socket =
            udp_socket(local, Some(peer), false).map_err(|e| TransportError::io("udp connect", e))?;
        let mut c = UdpConnection::new(socket, peer, pool, config)?;
        c.ack_at_once = true;
        c.session = c
            .driver
            .connect(peer)
            .map_err(|e| TransportError::Config(e.to_string()))?;
        let deadline = Instant::now() + config.handshake_timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                let timeout = HandshakeTimeout {
                    peer,
                    timeout: config.handshake_timeout,
                    connects: c.driver.stats().endpoint.packets_sent,
                };
                return Err(TransportError::Io {
                    op: "udp handshake",
                    source: io::Error::new(io::ErrorKind::TimedOut, timeout),
                });
            }
            c.driver
                .drive(deadline - now)
                .map_err(|e| TransportError::io("udp handshake", e))?;
            // A refusal fails the connection; a message that came with the Accept is kept.
            c.take_events();
            c.check()?;
            let connected = c.driver.endpoint().session_stats(c.session).map(|s| s.connected);
            if connected == Some(true) {
                c.update_wake()?;
                return Ok(c);
            }
        }
    }

    /// The session's peer.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The socket's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.driver.local_addr()
    }

    /// The driver's and the core's counters, the descriptor's syscalls included.
    pub fn stats(&self) -> UdpStats {
        UdpStats {
            wake_calls: self.wake.syscalls,
            ..self.driver.stats()
        }
    }

    /// Whether datagrams wait for room in the kernel's send buffer (they leave on a later
    /// `flush` or `try_recv`; the descriptor polls readable once there is room).
    pub fn has_unsent(&self) -> bool {
        self.driver.wants_write()
    }

    /// Records why the connection cannot go on (the first cause wins).
    fn fail(&mut self, e: TransportError) {
        if !self.dead {
            self.dead = true;
            self.failure = Some(e);
        }
    }

    /// The failure, once; then [`TransportError::Poisoned`].
    fn check(&mut self) -> Result<(), TransportError> {
        match self.failure.take() {
            Some(e) => Err(e),
            None if self.dead => Err(TransportError::Poisoned),
            None => Ok(()),
        }
    }

    /// Takes the core's events: this session's messages and end. A second session on this
    /// socket (only a peer that restarted at the same address makes one) is closed: a
    /// connection is one session.
    fn take_events(&mut self) {
        while let Some(event) = self.driver.poll_event() {
            match event {
                Event::Message {
                    session, meta, data, ..
                } if session == self.session => self.frames.push_back(DgramFrame::new(meta, data)),
                Event::SessionReset { session, error, .. } | Event::SessionClosed { session, error, .. }
                    if session == self.session =>
                {
                    self.fail(conn::session_ended("udp session", error));
                }
                Event::Connected { session, .. } if session != self.session => {
                    let _ = self.driver.close(session);
                }
                _ => {}
            }
        }
    }

    /// Moves backlogged messages into the session as its window allows; whether any moved.
    fn feed(&mut self) -> bool {
        let mut fed = false;
        while let Some((meta, data)) = self.backlog.pop_front() {
            if self.driver.send(self.session, meta, data.clone()).is_err() {
                // The window is full (or the session is gone, which an event reports).
                self.backlog.push_front((meta, data));
                break;
            }
            fed = true;
        }
        fed
    }

    fn update_wake(&mut self) -> Result<(), TransportError> {
        let (deadline, write) = (self.driver.deadline(), self.driver.wants_write());
        self.wake
            .update(self.driver.as_fd(), deadline, write, Instant::now())
            .map_err(|e| TransportError::io("timerfd_settime", e))
    }

    fn queue(&mut self, meta: Meta, data: SharedBuf) -> Result<(), TransportError> {
        self.backlog.push_back((meta, data));
        self.feed();
        Ok(())
    }

    /// [`Transport::try_recv`]: the next message without waiting. With `ack_now`, messages
    /// just received are acknowledged before the first is returned; without it, their
    /// acknowledgements wait for the next send or call (so they leave with the answers).
    fn next_frame(&mut self, ack_now: bool) -> Result<Option<DgramFrame>, TransportError> {
        if let Some(frame) = self.frames.pop_front() {
            return Ok(Some(frame));
        }
        self.check()?;
        if std::mem::take(&mut self.skip_receive) {
            // The answers and acknowledgements leave; due timers fire the descriptor.
            self.feed();
            self.driver.flush(Instant::now());
            self.update_wake()?;
            return self.check().map(|()| None);
        }
        // Sends what waits, receives what came, runs due timers.
        if let Err(e) = self.driver.drive(Duration::ZERO) {
            self.fail(TransportError::io("udp receive", e));
        }
        self.take_events();
        if self.feed() || (ack_now && !self.frames.is_empty()) {
            self.driver.flush(Instant::now());
        }
        self.update_wake()?;
        self.skip_receive = !self.frames.is_empty() && self.driver.drained();
        match self.frames.pop_front() {
            Some(frame) => Ok(Some(frame)),
            None => self.check().map(|()| None),
        }
    }
}

impl Drop for UdpConnection {
    /// Tells the peer the session is gone (one Reset, not retransmitted), as a TCP close does.
    fn drop(&mut self) {
        if !self.dead && self.driver.close(self.session).is_ok() {
            self.driver.flush(Instant::now());
        }
    }
}

impl std::fmt::Debug for UdpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpConnection")
            .field("session", &self.session)
            .field("peer", &self.peer)
            .field("frames", &self.frames.len())
            .field("backlog", &self.backlog.len())
            .field("dead", &self.dead)
            .finish_non_exhaustive()
    }
}

impl AsFd for UdpConnection {
    /// The `epoll` set of the socket and the retransmission timer: readable when a datagram
    /// came or a timer is due (call [`Transport::try_recv`] until `None` before waiting).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }
}

impl Transport for UdpConnection {
    type Frame = DgramFrame;

    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.check()?;
        let buf = conn::serialize(&self.pool, msg, self.max_len)?;
        self.queue(meta, buf)
    }

    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        self.check()?;
        let buf = conn::gather(&self.pool, payload, self.max_len)?;
        self.queue(meta, buf)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.check()?;
        self.feed();
        // Sends only: what arrives meanwhile stays in the socket, which keeps it readable.
        self.driver.flush(Instant::now());
        self.update_wake()
    }

    fn recv(&mut self) -> Result<DgramFrame, TransportError> {
        loop {
            if let Some(frame) = self.next_frame(true)? {
                return Ok(frame);
            }
            // Waits for a datagram or the core's next timer.
            if let Err(e) = self.driver.drive(Duration::MAX) {
                self.fail(TransportError::io("udp receive", e));
            }
            // What the wait brought is returned at once, its acknowledgement sent first.
            self.take_events();
            if let Some(frame) = self.frames.pop_front() {
                self.feed();
                self.driver.flush(Instant::now());
                self.update_wake()?;
                return Ok(frame);
            }
        }
    }

    fn try_recv(&mut self) -> Result<Option<DgramFrame>, TransportError> {
        self.next_frame(self.ack_at_once)
    }

    fn in_flight(&self) -> usize {
        let backlog: usize = self.backlog.iter().map(|(_, d)| d.len()).sum();
        let session = self
            .driver
            .endpoint()
            .session_stats(self.session)
            .map_or(0, |s| s.bytes_in_flight);
        backlog + session
    }
}

/// What a [`UdpListener`] saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpListenerStats {
    /// Datagrams received.
    pub datagrams: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Datagrams from a peer with a live connection (sent before its connected socket
    /// existed, or a retransmitted Connect): dropped.
    pub from_accepted: u64,
    /// Datagrams that are not packets: dropped.
    pub malformed: u64,
    /// Connects the new session refused (an unusable segment size): dropped.
    pub refused: u64,
    /// Packets for no session answered by a Reset.
    pub resets_sent: u64,
    /// Packets for no session not answered: Resets themselves, and those beyond
    /// [`Config::max_pending_resets`](crate::Config::max_pending_resets) in one
    /// [`try_accept`](UdpListener::try_accept).
    pub resets_suppressed: u64,
}

/// The listener's mutable part: shared by the loops that accept on it.
#[derive(Debug)]
struct ListenerState {
    /// Accepted peers, while their connection lives.
    accepted: HashMap<SocketAddr, Weak<()>>,
    stats: UdpListenerStats,
    buf: Vec<u8>,
}

/// A UDP server socket: accepts sessions, each on a socket of its own.
#[derive(Debug)]
pub struct UdpListener {
    socket: UdpSocket,
    local: SocketAddr,
    config: UdpConnConfig,
    limits: Limits,
    /// This listener's epoch, in its Resets: a peer whose session belonged to an earlier
    /// server on this port sees a new epoch and reports the restart.
    epoch: u64,
    state: Mutex<ListenerState>,
}

impl UdpListener {
    /// Listens on `addr` (port 0 picks one: see [`local_addr`](Self::local_addr)), with
    /// `SO_REUSEADDR` and `SO_REUSEPORT`, which the accepted sockets share.
    pub fn bind(addr: SocketAddr, config: UdpConnConfig) -> Result<UdpListener, TransportError> {
        let socket = udp_socket(addr, None, true).map_err(|e| TransportError::io("udp bind", e))?;
        let local = socket
            .local_addr()
            .map_err(|e| TransportError::io("getsockname", e))?;
        let epoch = sys::random_u64().map_err(|e| TransportError::io("getrandom", e))?;
        let mtu = config.udp.endpoint.mtu;
        Ok(UdpListener {
            socket,
            local,
            limits: Limits {
                max_datagram: mtu,
                max_message_len: config.udp.endpoint.max_message_len,
            },
            config,
            epoch,
            state: Mutex::new(ListenerState {
                accepted: HashMap::new(),
                stats: UdpListenerStats::default(),
                buf: vec![0; mtu],
            }),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The counters.
    pub fn stats(&self) -> UdpListenerStats {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).stats
    }

    /// Reads what waits on the socket until a Connect from a new peer, and returns its
    /// connection (the Accept sent, the session established; messages are received into and
    /// serialized into `pool`), or `None` once the socket is empty. Never waits.
    pub fn try_accept(&self, pool: &Pool) -> Result<Option<UdpConnection>, TransportError> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let st = &mut *guard;
        while let Some((from, n)) = self.next_connect(st)? {
            let socket =
                udp_socket(self.local, Some(from), true).map_err(|e| TransportError::io("udp accept", e))?;
            let mut conn = UdpConnection::new(socket, from, pool, &self.config)?;
            let now = Instant::now();
            let _ = conn.driver.endpoint.handle_packet(now, from, &st.buf[..n]);
            let Some(Event::Connected { session, .. }) = conn.driver.endpoint.poll_event() else {
                st.stats.refused += 1;
                continue;
            };
            conn.session = session;
            // The Accept leaves now.
            conn.driver.flush(now);
            conn.update_wake()?;
            st.accepted.retain(|_, w| w.strong_count() > 0);
            st.accepted.insert(from, Arc::downgrade(&conn.alive));
            st.stats.accepted += 1;
            return Ok(Some(conn));
        }
        Ok(None)
    }

    /// Reads what waits until a Connect from a new peer and refuses it with a Reset (the
    /// client's handshake fails with `ConnectionReset`); `false` once the socket is empty.
    pub fn try_refuse(&self) -> Result<bool, TransportError> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let st = &mut *guard;
        let Some((from, n)) = self.next_connect(st)? else {
            return Ok(false);
        };
        if let Ok(Packet { header, .. }) = Packet::decode(&st.buf[..n], &self.limits) {
            // A Reset must name a sender's session: this listener's stand-in.
            let src = SessionId((self.epoch as u32) | 1);
            self.send_reset(from, header.src, src);
        }
        st.stats.refused += 1;
        Ok(true)
    }

    /// Reads datagrams until a Connect from a peer without a live connection, whose length in
    /// `st.buf` it returns with the peer; `None` once the socket is empty. What else comes is
    /// dropped and counted, or answered by a Reset if it names a session.
    fn next_connect(&self, st: &mut ListenerState) -> Result<Option<(SocketAddr, usize)>, TransportError> {
        let mut resets = 0;
        loop {
            let (n, from) = match self.socket.recv_from(&mut st.buf) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(TransportError::io("recvfrom", e)),
            };
            st.stats.datagrams += 1;
            let Ok(Packet { header, .. }) = Packet::decode(&st.buf[..n], &self.limits) else {
                st.stats.malformed += 1;
                continue;
            };
            if st.accepted.get(&from).is_some_and(|w| w.strong_count() > 0) {
                st.stats.from_accepted += 1;
                continue;
            }
            match header.body {
                Body::Connect { .. } => return Ok(Some((from, n))),
                Body::Reset => st.stats.resets_suppressed += 1,
                _ if resets >= self.config.udp.endpoint.max_pending_resets => {
                    st.stats.resets_suppressed += 1;
                }
                _ => {
                    resets += 1;
                    self.send_reset(from, header.src, header.dst);
                    st.stats.resets_sent += 1;
                }
            }
        }
    }

    /// Tells `to` that this server has no session `src` for its session `dst`.
    fn send_reset(&self, to: SocketAddr, dst: SessionId, src: SessionId) {
        let reset = Header {
            dst,
            src,
            epoch: self.epoch,
            body: Body::Reset,
        };
        let mut bytes = [0; RESET_LEN];
        if reset.encode(&mut bytes).is_ok() {
            // A Reset the kernel cannot take now is not retried: the peer's next packet asks again.
            let _ = self.socket.send_to(&bytes, to);
        }
    }
}

impl AsFd for UdpListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}
