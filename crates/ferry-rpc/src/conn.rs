//! One connection of any transport, chosen by address: what the drivers hold. Every call
//! forwards to `ferry-net`, `ferry-shm` or `ferry-dgram`; nothing here knows the RPC protocol.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_dgram::{
    DgramFrame, UdpConnConfig, UdpConnection, UdpListener, XdpConnConfig, XdpConnection, XdpListener,
};
use ferry_net::{Connection, Handshake, PeerIdentity, TlsClient, TlsServer};
use ferry_shm::{ShmConfig, ShmConnection, ShmFrame, ShmHandshake, ShmListener, ShmStep};
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use ferry_wire::{Context, DecodeError, Limits, MessageDesc, Outgoing, View};

use crate::{Addr, Thresholds};

/// How often a waiting shared-memory connection is looked at even if its doorbell stays
/// quiet: a peer that dies without closing rings nothing (TCP reports it as readable).
pub(crate) const SHM_CHECK: Duration = Duration::from_millis(100);

/// Whether a send failed for its frame alone (too long, unencodable, no pool buffer): the
/// transport queued nothing of it and the connection stays usable, so only its call fails.
pub(crate) fn frame_alone(e: &TransportError) -> bool {
    matches!(
        e,
        TransportError::TooLong { .. } | TransportError::Encode(_) | TransportError::Pool(_)
    )
}

/// Which transport a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// TCP (`ferry-net`).
    Tcp,
    /// Shared memory (`ferry-shm`).
    Shm,
    /// Datagrams over UDP (`ferry-dgram`).
    Udp,
    /// Datagrams over AF_XDP (`ferry-dgram`).
    Xdp,
}

impl TransportKind {
    /// Every kind, each at the index `kind as usize`.
    pub(crate) const ALL: [TransportKind; 4] = [
        TransportKind::Tcp,
        TransportKind::Shm,
        TransportKind::Udp,
        TransportKind::Xdp,
    ];

    /// `"tcp"`, `"shm"`, `"udp"` or `"xdp"` (the `transport` label of the metrics).
    pub const fn label(self) -> &'static str {
        match self {
            TransportKind::Tcp => "tcp",
            TransportKind::Shm => "shm",
            TransportKind::Udp => "udp",
            TransportKind::Xdp => "xdp",
        }
    }
}

/// How connections are set up, for either transport.
#[derive(Debug, Clone)]
pub struct ConnConfig {
    /// TCP settings (send mode, batching, frame and buffer sizes).
    pub tcp: ferry_net::Config,
    /// Shared-memory settings (block size, credits, spinning).
    pub shm: ShmConfig,
    /// UDP settings (the datagram protocol's limits, batching, offloads, handshake timeout).
    pub udp: UdpConnConfig,
    /// AF_XDP settings (the datagram protocol's limits, the endpoint's pool and UMEM frames,
    /// zero-copy and native XDP, handshake timeout).
    pub xdp: XdpConnConfig,
    /// The pool each shared-memory connection gets for itself (it must be `shared`): the peer
    /// maps it, so no two sessions share one and a peer sees only its own session's memory.
    /// Unused when [`shared_pool`](Self::shared_pool) is set.
    pub shm_pool: PoolConfig,
    /// One pool that every session sends from, instead of the loop's (TCP) and a pool of each
    /// shared-memory session's own: a store keeps its values in it, so that responses reference
    /// them in place on both transports (a value outside a session's pool is copied). It must
    /// be [`shared`](PoolConfig::shared). Every shared-memory peer then maps all of it
    /// read-only, values and other sessions' blocks alike: use it only for data that every
    /// client may read. Default `None`.
    pub shared_pool: Option<Pool>,
    /// The zero-copy threshold of each transport's sessions (default: [`Thresholds::load`]).
    pub thresholds: Thresholds,
    /// What `tls://` listeners serve with: certificate chain, key, client certificates
    /// required or not, handshake timeout. Binding a `tls://` address without it fails.
    pub tls_server: Option<TlsServer>,
    /// What `tls://` clients connect with: roots, SNI, client certificate (mTLS), handshake
    /// timeout. Connecting to a `tls://` address without it fails.
    pub tls_client: Option<TlsClient>,
}

impl Default for ConnConfig {
    fn default() -> ConnConfig {
        ConnConfig {
            tcp: ferry_net::Config::default(),
            shm: ShmConfig::default(),
            udp: UdpConnConfig::default(),
            xdp: XdpConnConfig::default(),
            shm_pool: PoolConfig {
                shared: true,
                region_size: 2 << 20,
                max_bytes: 256 << 20,
                ..PoolConfig::default()
            },
            shared_pool: None,
            thresholds: Thresholds::load(),
            tls_server: None,
            tls_client: None,
        }
    }
}

impl ConnConfig {
    /// The pool of a loop or client: [`shared_pool`](Self::shared_pool) if set, else a new one
    /// from `config`.
    pub(crate) fn loop_pool(&self, config: &PoolConfig) -> Result<Pool, TransportError> {
        match &self.shared_pool {
            Some(pool) => Ok(pool.clone()),
            None => Ok(Pool::new(config.clone())?),
        }
    }

    /// The pool of a new shared-memory connection.
    pub(crate) fn shm_pool(&self) -> Result<Pool, TransportError> {
        self.loop_pool(&self.shm_pool)
    }

    /// What messages of a session over `conn` are built with: the pool its values must lie in
    /// to be sent by reference (the shared-memory connection's own, else `tcp_pool`) and the
    /// transport's threshold (UDP takes TCP's: both are sockets, and a UDP send copies every
    /// value into the message's buffer whatever the threshold).
    pub(crate) fn context(&self, conn: &Conn, tcp_pool: &Pool) -> Context {
        match conn {
            Conn::Shm(c) => Context::new(c.pool().clone()).with_threshold(self.thresholds.shm),
            Conn::Tcp(_) | Conn::Udp(_) | Conn::Xdp(_) => {
                Context::new(tcp_pool.clone()).with_threshold(self.thresholds.tcp)
            }
        }
    }

    /// The client TLS settings, or why a `tls://` address cannot be used.
    pub(crate) fn client_tls(&self) -> Result<&TlsClient, TransportError> {
        self.tls_client.as_ref().ok_or_else(|| {
            TransportError::Config("a tls:// address needs ConnConfig::tls_client (roots, SNI)".into())
        })
    }
}

/// A connection of either transport.
// A session holds its connection in place for its whole life and touches it on every frame:
// boxing the larger variant would add a pointer chase per frame to save a few hundred bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Conn {
    /// TCP.
    Tcp(Connection),
    /// Shared memory.
    Shm(ShmConnection),
    /// UDP: one datagram session.
    Udp(UdpConnection),
    /// AF_XDP: one datagram session.
    Xdp(XdpConnection),
}

/// A frame received on a [`Conn`]: a pool sub-buffer (TCP, `Send`), a range of the peer's
/// shared memory (`!Send`), or the pool buffer a UDP message was reassembled in (`Send`).
#[derive(Debug, Clone)]
pub enum Frame {
    /// From TCP.
    Tcp(ferry_net::Frame),
    /// From shared memory.
    Shm(ShmFrame),
    /// From a datagram session, over UDP or AF_XDP: the pool buffer the message was
    /// reassembled in.
    Dgram(DgramFrame),
}

/// The first socket address `a` (`host:port`) resolves to.
fn resolve(a: &str) -> Result<SocketAddr, TransportError> {
    let mut addrs = a
        .to_socket_addrs()
        .map_err(|e| TransportError::io("resolve", e))?;
    addrs.next().ok_or_else(|| {
        TransportError::io(
            "resolve",
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("{a} has no address")),
        )
    })
}

impl Conn {
    /// The sender's count of [`Frame::window_len`]: what `msg`, sent with `send`, will count
    /// against a stream's byte window at the receiver (its encoded length over TCP, nothing
    /// over shared memory, as over TCP over UDP). A raw payload counts its length on every
    /// transport.
    pub fn window_len<M: Outgoing + ?Sized>(&self, msg: &M) -> usize {
        match self {
            Conn::Tcp(_) | Conn::Udp(_) | Conn::Xdp(_) => msg.layout().total_len(),
            Conn::Shm(_) => 0,
        }
    }

    /// Connects to `addr`: TCP frames use `pool`; a shared-memory connection gets a new shared
    /// pool of its own (`config.shm_pool`), or sends from `config.shared_pool`.
    pub fn connect(addr: &Addr, pool: &Pool, config: &ConnConfig) -> Result<Conn, TransportError> {
        match addr {
            Addr::Tcp(a) => Connection::connect(a.as_str(), pool, &config.tcp).map(Conn::Tcp),
            Addr::Tls(a) => {
                Connection::connect_tls(a, pool, &config.tcp, config.client_tls()?).map(Conn::Tcp)
            }
            Addr::Shm(path) => ShmConnection::connect(path, &config.shm_pool()?, &config.shm).map(Conn::Shm),
            Addr::Udp(a) => UdpConnection::connect(resolve(a)?, pool, &config.udp).map(Conn::Udp),
            Addr::Xdp { ifname, queue, addr } => {
                XdpConnection::connect(ifname, *queue, *addr, pool, &config.xdp).map(Conn::Xdp)
            }
        }
    }

    /// The peer's certificate's subject and SANs over TLS (a client's under mTLS); `None`
    /// without TLS or certificate.
    pub fn peer_identity(&self) -> Option<Arc<PeerIdentity>> {
        match self {
            Conn::Tcp(c) => c.peer_identity(),
            Conn::Shm(_) | Conn::Udp(_) | Conn::Xdp(_) => None,
        }
    }

    /// Moves a TLS handshake on without waiting ([`Connection::handshake_step`]); `Done` at
    /// once for every other connection.
    pub fn handshake_step(&mut self) -> Result<Handshake, TransportError> {
        match self {
            Conn::Tcp(c) => c.handshake_step(),
            Conn::Shm(_) | Conn::Udp(_) | Conn::Xdp(_) => Ok(Handshake::Done),
        }
    }

    /// While a TLS handshake is in progress, when it must be done by.
    pub fn handshake_deadline(&self) -> Option<Instant> {
        match self {
            Conn::Tcp(c) => c.handshake_deadline(),
            Conn::Shm(_) | Conn::Udp(_) | Conn::Xdp(_) => None,
        }
    }

    /// Which transport.
    pub fn kind(&self) -> TransportKind {
        match self {
            Conn::Tcp(_) => TransportKind::Tcp,
            Conn::Shm(_) => TransportKind::Shm,
            Conn::Udp(_) => TransportKind::Udp,
            Conn::Xdp(_) => TransportKind::Xdp,
        }
    }

    /// Sends and flushes return [`TransportError::WouldBlock`] instead of waiting for the
    /// socket (TCP) or for credits (shared memory); what could not be taken is not queued.
    /// UDP sends never wait (what the window or the socket will not take yet waits in the
    /// connection).
    pub fn set_nonblocking(&mut self, yes: bool) {
        match self {
            Conn::Tcp(c) => c.set_nonblocking(yes),
            Conn::Shm(c) => c.set_nonblocking(yes),
            Conn::Udp(_) | Conn::Xdp(_) => {}
        }
    }

    /// A datagram connection's counters (its protocol core's, its driver's syscalls): what
    /// the metrics' `ferry_dgram_*` series sum. `None` for TCP and shared memory, and for now
    /// for AF_XDP: an `XdpConnection`'s stats are its endpoint's, shared by every session on
    /// the interface queue, so a sum over connections would count them once per session.
    pub fn datagram_stats(&self) -> Option<ferry_dgram::DriverStats> {
        match self {
            Conn::Tcp(_) | Conn::Shm(_) | Conn::Xdp(_) => None,
            Conn::Udp(c) => Some(c.stats().into()),
        }
    }

    /// Whether queued frames (or shared-memory acknowledgements) wait to be written.
    pub fn has_unsent(&mut self) -> bool {
        match self {
            Conn::Tcp(c) => c.sender().has_pending(),
            Conn::Shm(c) => c.has_unsent(),
            Conn::Udp(c) => c.has_unsent(),
            Conn::Xdp(_) => false,
        }
    }

    /// The next frame if one has arrived, for a busy-polling loop: over shared memory it reads
    /// memory only and does not arm the doorbell (the peer then never writes the eventfd);
    /// over TCP it is [`try_recv`](Transport::try_recv). Call `try_recv` before sleeping.
    pub fn poll_recv(&mut self) -> Result<Option<Frame>, TransportError> {
        match self {
            Conn::Shm(c) => Ok(c.poll_recv()?.map(Frame::Shm)),
            other => other.try_recv(),
        }
    }

    /// Waits until the descriptor is readable (a frame may have arrived), at most `timeout`,
    /// and over shared memory at most 100 ms: a peer that dies rings no doorbell, so the
    /// caller's next [`try_recv`](Transport::try_recv) must look. Call after `try_recv`
    /// returned `None` (which arms it).
    pub fn wait_readable(&self, timeout: Option<Duration>) -> Result<(), TransportError> {
        let timeout = match self {
            Conn::Tcp(_) | Conn::Udp(_) | Conn::Xdp(_) => timeout,
            Conn::Shm(_) => Some(timeout.map_or(SHM_CHECK, |t| t.min(SHM_CHECK))),
        };
        crate::sys::wait_readable(self.as_fd(), timeout).map_err(|e| TransportError::io("poll", e))
    }
}

impl AsFd for Conn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Tcp(c) => c.as_fd(),
            Conn::Shm(c) => c.as_fd(),
            Conn::Udp(c) => c.as_fd(),
            Conn::Xdp(c) => c.as_fd(),
        }
    }
}

impl Transport for Conn {
    type Frame = Frame;

    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        match self {
            Conn::Tcp(c) => c.send(meta, msg),
            Conn::Shm(c) => c.send(meta, msg),
            Conn::Udp(c) => c.send(meta, msg),
            Conn::Xdp(c) => c.send(meta, msg),
        }
    }

    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        match self {
            Conn::Tcp(c) => c.send_payload(meta, payload),
            Conn::Shm(c) => c.send_payload(meta, payload),
            Conn::Udp(c) => c.send_payload(meta, payload),
            Conn::Xdp(c) => c.send_payload(meta, payload),
        }
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        match self {
            Conn::Tcp(c) => c.flush(),
            Conn::Shm(c) => c.flush(),
            Conn::Udp(c) => c.flush(),
            Conn::Xdp(c) => c.flush(),
        }
    }

    fn recv(&mut self) -> Result<Frame, TransportError> {
        match self {
            Conn::Tcp(c) => c.recv().map(Frame::Tcp),
            Conn::Shm(c) => c.recv().map(Frame::Shm),
            Conn::Udp(c) => c.recv().map(Frame::Dgram),
            Conn::Xdp(c) => c.recv().map(Frame::Dgram),
        }
    }

    fn try_recv(&mut self) -> Result<Option<Frame>, TransportError> {
        match self {
            Conn::Tcp(c) => Ok(c.try_recv()?.map(Frame::Tcp)),
            Conn::Shm(c) => Ok(c.try_recv()?.map(Frame::Shm)),
            Conn::Udp(c) => Ok(c.try_recv()?.map(Frame::Dgram)),
            Conn::Xdp(c) => Ok(c.try_recv()?.map(Frame::Dgram)),
        }
    }

    fn in_flight(&self) -> usize {
        match self {
            Conn::Tcp(c) => c.in_flight(),
            Conn::Shm(c) => c.in_flight(),
            Conn::Udp(c) => c.in_flight(),
            Conn::Xdp(c) => c.in_flight(),
        }
    }
}

impl Frame {
    /// What this frame counts against a stream's byte window: the payload bytes it holds in
    /// this side's memory. Over TCP that is the whole payload; over shared memory a raw
    /// payload's length, and nothing for a Ferry message, whose bytes stay in the sender's
    /// pool (bounded by the transport's own credits). UDP counts as TCP does.
    /// [`Conn::window_len`] is the sender's count of the same.
    pub fn window_len(&self) -> usize {
        match self {
            Frame::Tcp(f) => f.payload().len(),
            Frame::Shm(f) => f.bytes().map_or(0, <[u8]>::len),
            Frame::Dgram(f) => f.payload().len(),
        }
    }

    /// The payload as the pool buffer it was received into (TCP); `None` over shared memory.
    pub fn shared(&self) -> Option<&SharedBuf> {
        match self {
            Frame::Tcp(f) => Some(f.payload()),
            Frame::Dgram(f) => Some(f.payload()),
            Frame::Shm(_) => None,
        }
    }

    /// Copies a shared-memory frame that a stream holds while its reader does not take it into
    /// `ctx`'s pool (`desc` re-encodes a Ferry message read in place; without it such a frame
    /// stays as it is): the peer's blocks are acknowledged only once every frame of them, and
    /// of every earlier block, is dropped, so a held frame would stop the whole connection once
    /// the peer's credits run out. Returns whether it copied: a TCP frame is a pool buffer
    /// already, and a frame the pool has no room for stays in place.
    pub(crate) fn detach(
        &mut self,
        desc: Option<&'static MessageDesc<'static>>,
        ctx: &Context,
        limits: &Limits,
    ) -> bool {
        if !matches!(self, Frame::Shm(_)) {
            return false;
        }
        let copied = match crate::workers::SendFrame::from_frame(self.clone(), desc, ctx, limits) {
            Ok(crate::workers::SendFrame::Copied { meta, buf }) => ferry_net::Frame::from_parts(meta, buf),
            _ => None,
        };
        match copied {
            Some(copied) => {
                *self = Frame::Tcp(copied);
                true
            }
            None => false,
        }
    }
}

impl Received for Frame {
    fn meta(&self) -> Meta {
        match self {
            Frame::Tcp(f) => f.meta(),
            Frame::Shm(f) => f.meta(),
            Frame::Dgram(f) => f.meta(),
        }
    }

    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Frame::Tcp(f) => Some(f.payload()),
            Frame::Shm(f) => f.bytes(),
            Frame::Dgram(f) => f.bytes(),
        }
    }

    fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &Limits) -> Result<View<'a>, DecodeError> {
        match self {
            Frame::Tcp(f) => f.view(desc, limits),
            Frame::Shm(f) => f.view(desc, limits),
            Frame::Dgram(f) => f.view(desc, limits),
        }
    }
}

/// A listening socket of either transport.
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// TCP whose connections run TLS with these settings.
    Tls(TcpListener, TlsServer),
    /// The Unix-socket rendezvous of shared-memory connections.
    Shm(ShmListener),
    /// A UDP socket whose peers' sessions each get a connected socket of their own (boxed: it
    /// carries its connections' configuration, and a listener is made once).
    Udp(Box<UdpListener>),
    /// An AF_XDP socket on one interface queue, whose sessions share it (boxed, as UDP's).
    Xdp(Box<XdpListener>),
}

impl Listener {
    /// The statistics of an endpoint all its sessions share (AF_XDP: one socket per interface
    /// queue), which their connections do not report; `None` for the others.
    pub fn shared_endpoint_stats(&self) -> Option<ferry_dgram::DriverStats> {
        match self {
            Listener::Xdp(l) => Some(l.stats().into()),
            Listener::Tcp(_) | Listener::Tls(..) | Listener::Shm(_) | Listener::Udp(_) => None,
        }
    }

    /// Listens on `addr` (`tcp://127.0.0.1:0` picks a free port; see
    /// [`local_addr`](Self::local_addr)); a `tls://` address serves with
    /// `config.tls_server`, and fails without it.
    pub fn bind(addr: &Addr, config: &ConnConfig) -> Result<Listener, TransportError> {
        let tcp = |a: &str| {
            let l = TcpListener::bind(a).map_err(|e| TransportError::io("bind", e))?;
            l.set_nonblocking(true)
                .map_err(|e| TransportError::io("fcntl(O_NONBLOCK)", e))?;
            Ok(l)
        };
        match addr {
            Addr::Tcp(a) => tcp(a).map(Listener::Tcp),
            Addr::Tls(a) => {
                let tls = config.tls_server.clone().ok_or_else(|| {
                    TransportError::Config(format!(
                        "{addr} needs ConnConfig::tls_server (certificate chain and key)"
                    ))
                })?;
                Ok(Listener::Tls(tcp(a)?, tls))
            }
            Addr::Shm(path) => ShmListener::bind(path).map(Listener::Shm),
            Addr::Udp(a) => {
                UdpListener::bind(resolve(a)?, config.udp.clone()).map(|l| Listener::Udp(Box::new(l)))
            }
            Addr::Xdp { ifname, queue, addr } => {
                XdpListener::bind(ifname, *queue, *addr, &config.xdp).map(|l| Listener::Xdp(Box::new(l)))
            }
        }
    }

    /// The address it listens on, with the port the kernel chose.
    pub fn local_addr(&self) -> Result<Addr, TransportError> {
        let port = |l: &TcpListener| {
            l.local_addr()
                .map(|a| a.to_string())
                .map_err(|e| TransportError::io("getsockname", e))
        };
        match self {
            Listener::Tcp(l) => port(l).map(Addr::Tcp),
            Listener::Tls(l, _) => port(l).map(Addr::Tls),
            Listener::Shm(l) => Ok(Addr::Shm(l.path().to_path_buf())),
            Listener::Udp(l) => Ok(Addr::Udp(l.local_addr().to_string())),
            Listener::Xdp(l) => Ok(Addr::Xdp {
                ifname: l.ifname().to_owned(),
                queue: l.queue(),
                addr: l.local_addr(),
            }),
        }
    }

    /// A waiting connection, or `None` if none waits. Nothing here waits for the peer: TCP
    /// frames use `pool`; a TLS connection is returned handshaking, and its reads move the
    /// handshake on ([`Conn::handshake_step`], bounded by [`Conn::handshake_deadline`]); a
    /// shared-memory peer is returned as its setup ([`Accepted::Shm`]: a shared pool of its
    /// own, or `config.shared_pool`, and this side's setup message sent), which the caller
    /// steps ([`Accepted::step`]) when it polls readable, until
    /// [`ShmConfig::handshake_timeout`].
    pub fn try_accept(&self, pool: &Pool, config: &ConnConfig) -> Result<Option<Accepted>, TransportError> {
        self.try_accept_with(pool, config, || config.shm_pool())
    }

    /// [`try_accept`](Self::try_accept), a shared-memory peer's pool from `shm_pool`.
    pub(crate) fn try_accept_with(
        &self,
        pool: &Pool,
        config: &ConnConfig,
        shm_pool: impl FnOnce() -> Result<Pool, TransportError>,
    ) -> Result<Option<Accepted>, TransportError> {
        let accepted = match self {
            Listener::Tcp(l) => match accept(l)? {
                Some(stream) => Accepted::Conn(Conn::Tcp(Connection::new(stream, pool, &config.tcp)?)),
                None => return Ok(None),
            },
            Listener::Tls(l, tls) => match accept(l)? {
                Some(stream) => {
                    Accepted::Conn(Conn::Tcp(Connection::tls_server(stream, pool, &config.tcp, tls)?))
                }
                None => return Ok(None),
            },
            Listener::Shm(l) => match l.try_accept(shm_pool, &config.shm)? {
                Some(setup) => Accepted::Shm(setup),
                None => return Ok(None),
            },
            Listener::Udp(l) => match l.try_accept(pool)? {
                Some(conn) => Accepted::Conn(Conn::Udp(conn)),
                None => return Ok(None),
            },
            Listener::Xdp(l) => match l.try_accept(pool)? {
                Some(conn) => Accepted::Conn(Conn::Xdp(conn)),
                None => return Ok(None),
            },
        };
        Ok(Some(accepted))
    }

    /// Accepts a waiting connection and closes it at once, without setting anything up (over
    /// the connection limit: the peer sees its connection closed); `false` if none waits.
    pub fn try_refuse(&self) -> Result<bool, TransportError> {
        match self {
            Listener::Tcp(l) | Listener::Tls(l, _) => Ok(accept(l)?.is_some()),
            Listener::Shm(l) => l.try_refuse(),
            Listener::Udp(l) => l.try_refuse(),
            Listener::Xdp(l) => l.try_refuse(),
        }
    }
}

/// A waiting TCP connection, or `None`.
fn accept(l: &TcpListener) -> Result<Option<std::net::TcpStream>, TransportError> {
    match l.accept() {
        Ok((stream, _)) => Ok(Some(stream)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(TransportError::io("accept", e)),
    }
}

/// A connection just accepted.
// Made once per connection and moved into its session at once: a box would cost an
// allocation per accept to save moves.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Accepted {
    /// A connection to serve (TCP; TLS still handshaking as a state of the connection).
    Conn(Conn),
    /// A shared-memory peer whose setup message has not been read yet.
    Shm(ShmHandshake),
}

impl Accepted {
    /// Moves a shared-memory setup on without waiting: `Ok(Ok(conn))` once it is done (at once
    /// for [`Accepted::Conn`]), `Ok(Err(self))` while the peer's setup message has not come
    /// (step again once [`as_fd`](AsFd::as_fd) polls readable, or past
    /// [`deadline`](Self::deadline), when the step fails naming the timeout).
    pub fn step(self) -> Result<Result<Conn, Accepted>, TransportError> {
        match self {
            Accepted::Conn(conn) => Ok(Ok(conn)),
            Accepted::Shm(setup) => Ok(match setup.step()? {
                ShmStep::Done(conn) => Ok(Conn::Shm(conn)),
                ShmStep::Waiting(setup) => Err(Accepted::Shm(setup)),
            }),
        }
    }

    /// When a shared-memory setup must be done by; `None` for a connection.
    pub fn deadline(&self) -> Option<Instant> {
        match self {
            Accepted::Conn(_) => None,
            Accepted::Shm(setup) => Some(setup.deadline()),
        }
    }
}

/// The connection's descriptor, or the setup's Unix socket (readable when the peer's setup
/// message came).
impl AsFd for Accepted {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Accepted::Conn(c) => c.as_fd(),
            Accepted::Shm(s) => s.as_fd(),
        }
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Tcp(l) | Listener::Tls(l, _) => l.as_fd(),
            Listener::Shm(l) => l.as_fd(),
            Listener::Udp(l) => l.as_fd(),
            Listener::Xdp(l) => l.as_fd(),
        }
    }
}
