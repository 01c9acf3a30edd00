//! [`Transport`] over AF_XDP: one [`XdpConnection`] is one session with one peer, while one
//! AF_XDP socket (one [`XdpEndpoint`], one XDP program) per interface queue carries every
//! session on it. The endpoint and its sessions' mailboxes are the *hub*, shared by the
//! listener and the connections it accepted, or by a process's client connections on that
//! queue (`Arc<Mutex<..>>`: ferry-rpc's server shares a listener between its loop threads, so
//! it must be `Sync`; uncontended, the lock costs a few atomic operations per call).
//!
//! - **Client hubs** are found in a process-wide registry by network namespace, interface
//!   and queue (`Weak` references): a `connect` opens a session on the live hub or binds one,
//!   and the last connection's drop releases the socket and the program. A listener and
//!   clients on one interface in one process exclude each other (the interface runs one
//!   program): only clients share.
//!
//! - **Whoever runs first distributes.** Any caller ([`XdpListener::try_accept`], a
//!   connection's `try_recv`, `recv`, `flush`) drives the endpoint and files what came: a
//!   message or a session's end into that session's mailbox, whose connection's eventfd it
//!   writes (so an event loop polling that descriptor reads the connection), and a new
//!   session into the listener's queue. Messages a connection sends beyond its session's
//!   window wait in the hub too, beside its mailbox, and every drive moves them as
//!   acknowledgements free room: those come in at the shared socket and ring no connection.
//! - **Descriptors.** The hub's is an `epoll` set of the AF_XDP socket and a `timerfd` armed
//!   at the core's next timer (`udp/wake.rs`), so a loop polling it wakes for packets and
//!   retransmissions alike; it is the listener's. Every session has an eventfd, readable
//!   while its mailbox holds a message or its end (or, during a client's handshake, once the
//!   Accept came): an accepted connection's descriptor. A client connection's is an `epoll`
//!   set of its eventfd and the hub's descriptor, so that every client of a hub wakes for
//!   packets and timers and one of them drives. A new session that another caller filed
//!   arms the timer to fire at once, so the listener's descriptor turns readable.
//! - **Ports and peers.** The hub holds a kernel UDP socket bound to its address (port 0
//!   picks one), so no kernel socket takes the port the XDP program steers away. A client
//!   finds its peer's MAC through the kernel: a datagram from a socket connected to the
//!   peer's discard port makes the kernel resolve it (ARP passes the XDP program), read back
//!   from `/proc/thread-self/net/arp`; the peer must be on the interface's link.
//! - **Frames, errors, acknowledgements** as on [`UdpConnection`](crate::UdpConnection):
//!   a received message is the pool buffer it was reassembled in (the endpoint's own pool,
//!   made from [`XdpConnConfig::pool`]); a send serializes into the connection's pool and the
//!   driver copies each packet into a UMEM frame; a session's end fails the next call with
//!   `ConnectionReset` or `TimedOut`, the [`SessionError`](crate::SessionError) inside.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_transport::{Meta, Payload, Transport, TransportError};
use ferry_wire::Outgoing;
use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec, epoll, eventfd};
use thiserror::Error;

use super::frame::Mac;
use super::{BUSY_RETRY, XdpConfig, XdpEndpoint, XdpError, XdpStats, sys};
use crate::conn::{DgramFrame, gather, serialize, session_ended};
use crate::udp::wake::Wake;
use crate::{Config, Event, SessionError, SessionId};

/// The UDP port a client's neighbour lookup sends its one datagram to (discard: the peer's
/// kernel answers with an ICMP error, or drops it).
const DISCARD_PORT: u16 = 9;
/// The longest pause between binds of a queue the kernel has not released yet.
const BUSY_QUEUE_PAUSE: Duration = Duration::from_millis(20);
/// How long a neighbour lookup waits for that answer before it looks and sends again.
const LOOKUP_ROUND: Duration = Duration::from_millis(50);

/// How AF_XDP connections and listeners are made.
#[derive(Debug, Clone)]
pub struct XdpConnConfig {
    /// The protocol core's settings; its `max_message_len` is lowered to what the pools hold.
    /// Default: [`UdpConnConfig`](crate::UdpConnConfig)'s (64 credits and a window of 64 messages, a peer
    /// given up after 16 timeouts capped at 1 s), for the same reasons.
    pub endpoint: Config,
    /// The endpoint's own pool: one region of its `frame_size` class is the UMEM, the rest
    /// holds received messages. Default: 2 MiB regions (a UMEM of 512 frames), 256 MiB at most.
    pub pool: PoolConfig,
    /// The UMEM frame size, 2048 or 4096. Default 4096.
    pub frame_size: usize,
    /// Try zero-copy mode first. Default true (veth refuses it; copy mode then runs).
    pub zero_copy: bool,
    /// Try native (driver) XDP first. Default true; generic (SKB) mode otherwise.
    pub native: bool,
    /// How long [`XdpConnection::connect`] waits for the peer's MAC and then its Accept,
    /// each; and how long a bind retries a queue whose previous socket the kernel has not
    /// released yet (it does so from a work queue, after the close). Default 5 s.
    pub handshake_timeout: Duration,
}

impl Default for XdpConnConfig {
    fn default() -> Self {
        XdpConnConfig {
            endpoint: crate::UdpConnConfig::default().udp.endpoint,
            pool: PoolConfig {
                region_size: 2 << 20,
                max_bytes: 256 << 20,
                ..PoolConfig::default()
            },
            frame_size: 4096,
            zero_copy: true,
            native: true,
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// The kernel did not resolve the peer's MAC in time: the inner error of the
/// [`TransportError::Io`] (kind `TimedOut`) that [`XdpConnection::connect`] returns.
#[derive(Debug, Error)]
#[error(
    "no complete ARP entry for {peer} on {ifname} within {timeout:?} (the peer must be on the interface's link)"
)]
pub struct NoNeighbour {
    /// The peer.
    pub peer: Ipv4Addr,
    /// The interface.
    pub ifname: String,
    /// The timeout.
    pub timeout: Duration,
}

/// One session's mailbox in the hub.
#[derive(Debug, Default)]
struct Slot {
    frames: VecDeque<DgramFrame>,
    /// Messages its connection sent beyond the session's window, in order: here, not in the
    /// connection, so that whoever drives the endpoint moves them when acknowledgements
    /// free room (those come in at the shared socket, and ring no connection).
    backlog: VecDeque<(Meta, SharedBuf)>,
    /// How the session ended, until its connection reports it.
    ended: Option<SessionError>,
    /// The session is established (a client's, once the Accept came).
    connected: bool,
    /// A client's session whose `connect` has not seen the Accept yet: the eventfd is written
    /// when it comes (whoever filed it), so that the waiting `connect` wakes.
    handshake: bool,
    /// The peer, once connected.
    peer: Option<SocketAddrV4>,
    /// The connection's eventfd, written while the mailbox is not empty (or the Accept of a
    /// client's handshake waits).
    bell: Option<Arc<OwnedFd>>,
    rung: bool,
}

impl Slot {
    /// Brings the eventfd up to date: readable while a message or the end waits.
    fn ring(&mut self) {
        let Some(bell) = &self.bell else { return };
        let due = !self.frames.is_empty() || self.ended.is_some() || (self.handshake && self.connected);
        if due && !self.rung {
            // Fails only if the counter would overflow: it is readable then anyway.
            let _ = rustix::io::write(&**bell, &1u64.to_ne_bytes());
        } else if !due && self.rung {
            // Fails only if it was not readable.
            let _ = rustix::io::read(&**bell, &mut [0; 8]);
        }
        self.rung = due;
    }
}

/// The endpoint and the sessions' mailboxes.
struct Hub {
    driver: XdpEndpoint,
    wake: Wake,
    slots: HashMap<SessionId, Slot>,
    /// The sessions whose backlog is not empty: what [`Hub::feed`] visits (a drive runs per
    /// call, and a scan of every slot per drive would cost what the sessions number).
    backlogged: Vec<SessionId>,
    /// Sessions a peer opened, not yet handed out (a listener's hub only).
    accepts: VecDeque<SessionId>,
    listening: bool,
    /// The longest message, as the endpoint's pool allows.
    max_len: usize,
    /// Holds the port against kernel sockets.
    _port: UdpSocket,
}

impl Hub {
    /// Binds an endpoint on `ifname`/`queue` at `ip:port` (port 0: the kernel picks one).
    fn bind(
        ifname: &str,
        queue: u32,
        local: SocketAddrV4,
        config: &XdpConnConfig,
        listening: bool,
    ) -> Result<Hub, TransportError> {
        let port = UdpSocket::bind(local).map_err(|e| TransportError::io("xdp port", e))?;
        let local = match port.local_addr() {
            Ok(SocketAddr::V4(a)) => a,
            Ok(_) => return Err(TransportError::Config("xdp:// takes IPv4 addresses".into())),
            Err(e) => return Err(TransportError::io("getsockname", e)),
        };
        let (_, mac) = sys::interface_addrs(ifname).map_err(|e| TransportError::io("getifaddrs", e))?;
        let mac =
            mac.ok_or_else(|| TransportError::Config(format!("interface {ifname} has no MAC address")))?;
        let mut xdp = XdpConfig::new(ifname, queue, local, mac);
        xdp.endpoint = config.endpoint.clone();
        xdp.frame_size = config.frame_size;
        xdp.zero_copy = config.zero_copy;
        xdp.native = config.native;
        // A socket on this queue closed just before (a client's previous connection) frees
        // it only when the kernel's work queue has run: until then the bind fails with EBUSY,
        // and nothing says when it is free, so the bind is tried again, a bounded time.
        let deadline = Instant::now() + config.handshake_timeout;
        let mut pause = Duration::from_millis(1);
        let (driver, max_len) = loop {
            let pool = Pool::new(config.pool.clone())?;
            let pool_max = u32::try_from(pool.max_class()).unwrap_or(u32::MAX);
            xdp.endpoint.max_message_len = xdp.endpoint.max_message_len.min(pool_max);
            match XdpEndpoint::bind(xdp.clone(), pool) {
                Ok(driver) => break (driver, xdp.endpoint.max_message_len as usize),
                Err(XdpError::Socket { source, .. })
                    if source.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(BUSY_QUEUE_PAUSE);
                }
                Err(XdpError::Socket { source, .. }) => return Err(TransportError::io("xdp socket", source)),
                Err(other) => return Err(TransportError::Config(other.to_string())),
            }
        };
        let wake = Wake::new(driver.as_fd()).map_err(|e| TransportError::io("epoll_create", e))?;
        Ok(Hub {
            driver,
            wake,
            slots: HashMap::new(),
            backlogged: Vec::new(),
            accepts: VecDeque::new(),
            listening,
            max_len,
            _port: port,
        })
    }

    /// One step of the endpoint (waiting up to `timeout`), its events filed, the backlogs
    /// moved as the windows allow (and sent), the timer set.
    fn drive(&mut self, timeout: Duration) -> io::Result<()> {
        let driven = self.driver.drive(timeout);
        self.file();
        if self.feed() {
            self.driver.flush()?;
        }
        self.update_wake()?;
        driven
    }

    /// Queues `data` behind `session`'s backlog, then feeds.
    fn queue(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), TransportError> {
        // The slot goes only with the connection (its drop) or a refused session's.
        let slot = self.slots.get_mut(&session).ok_or(TransportError::Poisoned)?;
        if slot.backlog.is_empty() {
            self.backlogged.push(session);
        }
        slot.backlog.push_back((meta, data));
        self.feed();
        Ok(())
    }

    /// Moves the backlogged sessions' messages into them as their windows allow; whether any
    /// moved.
    fn feed(&mut self) -> bool {
        let mut fed = false;
        let (slots, driver) = (&mut self.slots, &mut self.driver);
        self.backlogged.retain(|session| {
            // A session whose connection went takes its backlog with it.
            let Some(slot) = slots.get_mut(session) else {
                return false;
            };
            while let Some((meta, data)) = slot.backlog.pop_front() {
                if driver.send(*session, meta, data.clone()).is_err() {
                    // The window is full (or the session is gone, which its mailbox reports).
                    slot.backlog.push_front((meta, data));
                    return true;
                }
                fed = true;
            }
            false
        });
        fed
    }

    /// Files the endpoint's events into the mailboxes and the accept queue.
    fn file(&mut self) {
        while let Some(event) = self.driver.poll_event() {
            match event {
                Event::Connected { session, peer } => match self.slots.get_mut(&session) {
                    Some(slot) => {
                        slot.connected = true;
                        slot.ring();
                    }
                    None if self.listening => {
                        let peer = match peer {
                            SocketAddr::V4(a) => Some(a),
                            SocketAddr::V6(_) => None,
                        };
                        self.slots.insert(
                            session,
                            Slot {
                                connected: true,
                                peer,
                                ..Slot::default()
                            },
                        );
                        self.accepts.push_back(session);
                    }
                    // A peer that opened a session to a client: a connection is one session.
                    None => {
                        let _ = self.driver.close(session);
                    }
                },
                Event::Message {
                    session, meta, data, ..
                } => {
                    if let Some(slot) = self.slots.get_mut(&session) {
                        slot.frames.push_back(DgramFrame::new(meta, data));
                        slot.ring();
                    }
                }
                Event::SessionReset { session, error, .. } | Event::SessionClosed { session, error, .. } => {
                    if let Some(slot) = self.slots.get_mut(&session) {
                        slot.ended.get_or_insert(error);
                        slot.ring();
                    }
                }
            }
        }
    }

    /// Sends what the core has now.
    fn flush(&mut self) -> io::Result<()> {
        let flushed = self.driver.flush();
        self.update_wake()?;
        flushed
    }

    /// Arms the timer at the core's next timer; at once while sessions wait to be accepted
    /// (so the listener's descriptor polls readable) or the device refused frames.
    fn update_wake(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let deadline = if !self.accepts.is_empty() {
            Some(now)
        } else if self.driver.busy() {
            let retry = now + BUSY_RETRY;
            Some(self.driver.deadline().map_or(retry, |d| d.min(retry)))
        } else {
            self.driver.deadline()
        };
        self.wake.update(self.driver.as_fd(), deadline, false, now)
    }
}

/// Locks the hub; a caller that panicked holding it left nothing half-done that matters
/// (each step leaves the endpoint consistent).
fn lock(hub: &Mutex<Hub>) -> MutexGuard<'_, Hub> {
    hub.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A duplicate of the hub's descriptor.
fn hub_fd(hub: &Hub) -> Result<Arc<OwnedFd>, TransportError> {
    hub.wake
        .as_fd()
        .try_clone_to_owned()
        .map(Arc::new)
        .map_err(|e| TransportError::io("dup", e))
}

/// A session's eventfd, unwritten.
fn bell() -> Result<Arc<OwnedFd>, TransportError> {
    eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)
        .map(Arc::new)
        .map_err(|e| TransportError::io("eventfd", e.into()))
}

/// Where a client hub is: the network namespace of the calling thread (its `nsfs` device and
/// inode), the interface, the queue.
type HubKey = ((u64, u64), String, u32);

/// The process's client hubs, each live while a connection holds it: `connect` joins the one
/// on its interface queue or binds it.
static CLIENT_HUBS: Mutex<Vec<(HubKey, Weak<Mutex<Hub>>)>> = Mutex::new(Vec::new());

/// The client hub on `ifname`/`queue` in the calling thread's namespace: the live one, or one
/// bound now at `ip` (a port the kernel picks) with `config`.
fn client_hub(
    ifname: &str,
    queue: u32,
    ip: Ipv4Addr,
    config: &XdpConnConfig,
) -> Result<Arc<Mutex<Hub>>, TransportError> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/thread-self/ns/net")
        .map_err(|e| TransportError::io("reading /proc/thread-self/ns/net", e))?;
    let key = ((ns.dev(), ns.ino()), ifname.to_owned(), queue);
    let mut hubs = CLIENT_HUBS.lock().unwrap_or_else(PoisonError::into_inner);
    hubs.retain(|(_, hub)| hub.strong_count() > 0);
    if let Some(hub) = hubs
        .iter()
        .filter(|(k, _)| *k == key)
        .find_map(|(_, hub)| hub.upgrade())
    {
        return Ok(hub);
    }
    // Bound under the registry's lock, so that two first connections bind one hub.
    let hub = Arc::new(Mutex::new(Hub::bind(
        ifname,
        queue,
        SocketAddrV4::new(ip, 0),
        config,
        false,
    )?));
    hubs.push((key, Arc::downgrade(&hub)));
    Ok(hub)
}

/// A client connection's descriptor: an `epoll` set of its eventfd and the hub's descriptor,
/// readable when its mailbox has something or the hub has work for whoever drives it.
fn client_fd(bell: &OwnedFd, hub: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let set = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(&set, bell, epoll::EventData::new_u64(0), epoll::EventFlags::IN)?;
    epoll::add(&set, hub, epoll::EventData::new_u64(1), epoll::EventFlags::IN)?;
    Ok(set)
}

/// One session with one peer over an AF_XDP socket: a [`Transport`].
pub struct XdpConnection {
    hub: Arc<Mutex<Hub>>,
    /// The hub's descriptor (a blocking `recv` waits on it).
    hub_fd: Arc<OwnedFd>,
    /// This connection's: its eventfd (accepted) or an epoll set of it and the hub's (a
    /// client's).
    fd: Arc<OwnedFd>,
    session: SessionId,
    peer: SocketAddrV4,
    local: SocketAddrV4,
    pool: Pool,
    max_len: usize,
    /// Whether `try_recv` acknowledges what it receives before returning it (a client's),
    /// as on [`UdpConnection`](crate::UdpConnection).
    ack_at_once: bool,
    /// Why the connection ended, until reported once.
    failure: Option<TransportError>,
    dead: bool,
}

impl XdpConnection {
    /// Connects to the server at `peer` through interface `ifname`, queue `queue`: this
    /// side's address is the interface's first IPv4 address and a port the kernel picks; the
    /// peer's MAC is the kernel's (a lookup waited for up to `config.handshake_timeout`, then
    /// an error of kind `TimedOut` with a [`NoNeighbour`] inside); then the handshake, as long
    /// again (then `TimedOut` with a [`HandshakeTimeout`](crate::HandshakeTimeout)).
    ///
    /// The client connections of a process on one interface queue (in one network
    /// namespace) share one endpoint, a session each: the first binds it with `config`, the
    /// others join it (its address, pool and core settings are the first's), and the last
    /// one's drop releases it. A listener on the same interface in the same process excludes
    /// them (an interface runs one XDP program): the bind fails with `EBUSY`, after retrying
    /// for `config.handshake_timeout`. Messages are serialized into `pool`.
    pub fn connect(
        ifname: &str,
        queue: u32,
        peer: SocketAddrV4,
        pool: &Pool,
        config: &XdpConnConfig,
    ) -> Result<XdpConnection, TransportError> {
        let (ips, _) = sys::interface_addrs(ifname).map_err(|e| TransportError::io("getifaddrs", e))?;
        let ip = *ips
            .first()
            .ok_or_else(|| TransportError::Config(format!("interface {ifname} has no IPv4 address")))?;
        let mac = neighbour(ifname, ip, *peer.ip(), config.handshake_timeout)?;
        let hub = client_hub(ifname, queue, ip, config)?;
        let bell = bell()?;
        let (session, fd, hub_fd, local, max_len) = {
            let mut hub = lock(&hub);
            let hub_fd = hub_fd(&hub)?;
            let fd = client_fd(&bell, hub.wake.as_fd()).map_err(|e| TransportError::io("epoll_create", e))?;
            let session = hub
                .driver
                .connect(peer, mac)
                .map_err(|e| TransportError::Config(e.to_string()))?;
            let slot = Slot {
                handshake: true,
                bell: Some(bell),
                ..Slot::default()
            };
            hub.slots.insert(session, slot);
            (
                session,
                Arc::new(fd),
                hub_fd,
                hub.driver.local_addr(),
                hub.max_len,
            )
        };
        // From here on, a failure drops the connection, which takes its slot and session out.
        let conn = XdpConnection {
            hub,
            hub_fd,
            fd,
            session,
            peer,
            local,
            pool: pool.clone(),
            max_len,
            ack_at_once: true,
            failure: None,
            dead: false,
        };
        let deadline = Instant::now() + config.handshake_timeout;
        loop {
            let connects = {
                // A clone, so that `conn` can be returned from under the lock.
                let hub = Arc::clone(&conn.hub);
                let mut hub = lock(&hub);
                hub.drive(Duration::ZERO)
                    .map_err(|e| TransportError::io("xdp handshake", e))?;
                let slot = hub.slots.get_mut(&session).ok_or(TransportError::Poisoned)?;
                if let Some(e) = slot.ended {
                    return Err(session_ended("xdp handshake", e));
                }
                if slot.connected {
                    slot.handshake = false;
                    slot.ring();
                    return Ok(conn);
                }
                hub.driver.stats().endpoint.packets_sent
            };
            let now = Instant::now();
            if now >= deadline {
                let timeout = crate::HandshakeTimeout {
                    peer: peer.into(),
                    timeout: config.handshake_timeout,
                    connects,
                };
                return Err(TransportError::Io {
                    op: "xdp handshake",
                    source: io::Error::new(io::ErrorKind::TimedOut, timeout),
                });
            }
            conn.wait(Some(deadline - now))
                .map_err(|e| TransportError::io("poll", e))?;
        }
    }

    /// Waits, unlocked, up to `timeout` (`None`: no limit), for this session's mailbox or the
    /// hub (a packet, a timer).
    fn wait(&self, timeout: Option<Duration>) -> io::Result<()> {
        let timeout = timeout.map(|t| Timespec {
            tv_sec: t.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: t.subsec_nanos().into(),
        });
        let mut fds = [
            PollFd::new(&*self.fd, PollFlags::IN),
            PollFd::new(&*self.hub_fd, PollFlags::IN),
        ];
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The session's peer.
    pub fn peer(&self) -> SocketAddrV4 {
        self.peer
    }

    /// This side's address.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// The endpoint's counters (the core's, the driver's syscalls and mode, the UMEM frames
    /// in use): shared by every session on the endpoint, a listener's included.
    pub fn stats(&self) -> XdpStats {
        lock(&self.hub).driver.stats()
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

    /// The next message in the mailbox, the eventfd brought up to date; the session's end
    /// becomes the connection's failure.
    fn take(&mut self, hub: &mut Hub) -> Option<DgramFrame> {
        let slot = hub.slots.get_mut(&self.session)?;
        let frame = slot.frames.pop_front();
        if frame.is_none()
            && let Some(e) = slot.ended.take()
        {
            slot.ring();
            self.fail(session_ended("xdp session", e));
            return None;
        }
        slot.ring();
        frame
    }

    /// [`Transport::try_recv`]: the next message without waiting. With `ack_now`, messages
    /// just received are acknowledged before the first is returned.
    fn next_frame(&mut self, ack_now: bool) -> Result<Option<DgramFrame>, TransportError> {
        let hub = Arc::clone(&self.hub);
        let mut hub = lock(&hub);
        if let Some(frame) = self.take(&mut hub) {
            return Ok(Some(frame));
        }
        self.check()?;
        // Sends what waits, receives what came (for every session), runs due timers.
        if let Err(e) = hub.drive(Duration::ZERO) {
            self.fail(TransportError::io("xdp receive", e));
        }
        let frame = self.take(&mut hub);
        if ack_now
            && frame.is_some()
            && let Err(e) = hub.flush()
        {
            self.fail(TransportError::io("xdp send", e));
        }
        match frame {
            Some(frame) => Ok(Some(frame)),
            None => self.check().map(|()| None),
        }
    }

    fn queue(&mut self, meta: Meta, data: SharedBuf) -> Result<(), TransportError> {
        lock(&self.hub).queue(self.session, meta, data)
    }
}

impl Drop for XdpConnection {
    /// Tells the peer the session is gone (one Reset, not retransmitted), as a TCP close does.
    fn drop(&mut self) {
        let mut hub = lock(&self.hub);
        hub.slots.remove(&self.session);
        if !self.dead && hub.driver.close(self.session).is_ok() {
            let _ = hub.flush();
        }
    }
}

impl std::fmt::Debug for XdpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpConnection")
            .field("session", &self.session)
            .field("peer", &self.peer)
            .field("local", &self.local)
            .field("dead", &self.dead)
            .finish_non_exhaustive()
    }
}

impl AsFd for XdpConnection {
    /// Readable when a message or the session's end waits (an accepted connection's eventfd),
    /// or, on a client's, also when a packet came to its hub or a timer is due: call
    /// [`Transport::try_recv`] until `None` before waiting.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Transport for XdpConnection {
    type Frame = DgramFrame;

    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.check()?;
        let buf = serialize(&self.pool, msg, self.max_len)?;
        self.queue(meta, buf)
    }

    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        self.check()?;
        let buf = gather(&self.pool, payload, self.max_len)?;
        self.queue(meta, buf)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.check()?;
        let mut hub = lock(&self.hub);
        hub.feed();
        hub.flush().map_err(|e| TransportError::io("xdp send", e))
    }

    fn recv(&mut self) -> Result<DgramFrame, TransportError> {
        loop {
            if let Some(frame) = self.next_frame(true)? {
                return Ok(frame);
            }
            if let Err(e) = self.wait(None) {
                self.fail(TransportError::io("poll", e));
            }
        }
    }

    fn try_recv(&mut self) -> Result<Option<DgramFrame>, TransportError> {
        self.next_frame(self.ack_at_once)
    }

    fn in_flight(&self) -> usize {
        let hub = lock(&self.hub);
        let backlog: usize = hub
            .slots
            .get(&self.session)
            .map_or(0, |s| s.backlog.iter().map(|(_, d)| d.len()).sum());
        let session = hub
            .driver
            .endpoint()
            .session_stats(self.session)
            .map_or(0, |s| s.bytes_in_flight);
        backlog + session
    }
}

/// An AF_XDP server: the endpoint on one interface queue, whose sessions it hands out as
/// connections.
pub struct XdpListener {
    hub: Arc<Mutex<Hub>>,
    fd: Arc<OwnedFd>,
    local: SocketAddrV4,
    ifname: String,
    queue: u32,
    max_len: usize,
}

impl XdpListener {
    /// Serves on interface `ifname`, queue `queue`, at `local` (one of the interface's
    /// addresses; port 0 picks one: see [`local_addr`](Self::local_addr)), in an endpoint
    /// whose pool (UMEM and received messages) is made from `config.pool`.
    pub fn bind(
        ifname: &str,
        queue: u32,
        local: SocketAddrV4,
        config: &XdpConnConfig,
    ) -> Result<XdpListener, TransportError> {
        let hub = Hub::bind(ifname, queue, local, config, true)?;
        let fd = hub_fd(&hub)?;
        Ok(XdpListener {
            local: hub.driver.local_addr(),
            max_len: hub.max_len,
            hub: Arc::new(Mutex::new(hub)),
            fd,
            ifname: ifname.to_owned(),
            queue,
        })
    }

    /// The address it serves on.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// The interface.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The queue.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// The endpoint's counters, every session's together.
    pub fn stats(&self) -> XdpStats {
        lock(&self.hub).driver.stats()
    }

    /// Drives the endpoint (files what came for every session, runs due timers) and returns
    /// the next session a peer opened as a connection (messages serialized into `pool`), or
    /// `None`. Never waits.
    pub fn try_accept(&self, pool: &Pool) -> Result<Option<XdpConnection>, TransportError> {
        let mut hub = lock(&self.hub);
        let Some(session) = self.next_session(&mut hub)? else {
            return Ok(None);
        };
        let bell = match bell() {
            Ok(bell) => bell,
            Err(e) => {
                hub.slots.remove(&session);
                let _ = hub.driver.close(session);
                return Err(e);
            }
        };
        let mut peer = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
        if let Some(slot) = hub.slots.get_mut(&session) {
            slot.bell = Some(Arc::clone(&bell));
            slot.ring();
            peer = slot.peer.unwrap_or(peer);
        }
        Ok(Some(XdpConnection {
            hub: Arc::clone(&self.hub),
            hub_fd: Arc::clone(&self.fd),
            fd: bell,
            session,
            peer,
            local: self.local,
            pool: pool.clone(),
            max_len: self.max_len,
            ack_at_once: false,
            failure: None,
            dead: false,
        }))
    }

    /// Drives the endpoint and refuses the next session a peer opened (closed with a Reset:
    /// the client's calls fail with `ConnectionReset`); `false` if none waits.
    pub fn try_refuse(&self) -> Result<bool, TransportError> {
        let mut hub = lock(&self.hub);
        let Some(session) = self.next_session(&mut hub)? else {
            return Ok(false);
        };
        hub.slots.remove(&session);
        if hub.driver.close(session).is_ok() {
            hub.flush().map_err(|e| TransportError::io("xdp send", e))?;
        }
        Ok(true)
    }

    /// One step of the endpoint, then the next session waiting that has not ended already.
    fn next_session(&self, hub: &mut Hub) -> Result<Option<SessionId>, TransportError> {
        hub.drive(Duration::ZERO)
            .map_err(|e| TransportError::io("xdp receive", e))?;
        while let Some(session) = hub.accepts.pop_front() {
            if hub.slots.get(&session).is_some_and(|s| s.ended.is_none()) {
                hub.update_wake()
                    .map_err(|e| TransportError::io("timerfd_settime", e))?;
                return Ok(Some(session));
            }
            hub.slots.remove(&session);
        }
        hub.update_wake()
            .map_err(|e| TransportError::io("timerfd_settime", e))?;
        Ok(None)
    }
}

impl std::fmt::Debug for XdpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpListener")
            .field("ifname", &self.ifname)
            .field("queue", &self.queue)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl AsFd for XdpListener {
    /// The hub's: readable when a packet came, a timer is due or a session waits.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The MAC of `peer` on `ifname` as the kernel resolves it: a datagram from `ip` to the peer's
/// discard port makes the kernel look it up (ARP), waited for until the peer's ICMP answer or
/// [`LOOKUP_ROUND`], then read from the ARP table; again until `timeout`.
fn neighbour(ifname: &str, ip: Ipv4Addr, peer: Ipv4Addr, timeout: Duration) -> Result<Mac, TransportError> {
    let deadline = Instant::now() + timeout;
    let socket = UdpSocket::bind((ip, 0)).map_err(|e| TransportError::io("neighbour lookup", e))?;
    socket
        .connect((peer, DISCARD_PORT))
        .and_then(|()| socket.set_read_timeout(Some(LOOKUP_ROUND)))
        .map_err(|e| TransportError::io("neighbour lookup", e))?;
    loop {
        let table = std::fs::read_to_string("/proc/thread-self/net/arp")
            .map_err(|e| TransportError::io("reading /proc/thread-self/net/arp", e))?;
        if let Some(mac) = arp_entry(&table, ifname, peer) {
            return Ok(mac);
        }
        if Instant::now() >= deadline {
            let e = NoNeighbour {
                peer,
                ifname: ifname.to_owned(),
                timeout,
            };
            return Err(TransportError::Io {
                op: "neighbour lookup",
                source: io::Error::new(io::ErrorKind::TimedOut, e),
            });
        }
        // Either may fail (no route yet, the ICMP error itself): the table says what came of it.
        let _ = socket.send(&[]);
        let _ = socket.recv(&mut [0; 1]);
    }
}

/// The complete entry for `ip` on `ifname` in the kernel's ARP table (`/proc/net/arp`).
fn arp_entry(table: &str, ifname: &str, ip: Ipv4Addr) -> Option<Mac> {
    // IP address, HW type, Flags, HW address, Mask, Device.
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [addr, _, flags, hw, _, dev] = f[..] else {
            return None;
        };
        let complete = u32::from_str_radix(flags.trim_start_matches("0x"), 16).is_ok_and(|f| f & 0x2 != 0);
        if addr.parse() != Ok(ip) || dev != ifname || !complete {
            return None;
        }
        let mut mac = [0; 6];
        let mut parts = hw.split(':');
        for b in &mut mac {
            *b = u8::from_str_radix(parts.next()?, 16).ok()?;
        }
        parts.next().is_none().then_some(mac)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "IP address       HW type     Flags       HW address            Mask     Device
10.252.0.2       0x1         0x2         02:fe:00:00:00:02     *        xa1
10.252.0.3       0x1         0x0         00:00:00:00:00:00     *        xa1
10.252.0.4       0x1         0x2         02:fe:00:00:00:04     *        other
";

    #[test]
    fn an_arp_entry_counts_when_complete_and_on_the_interface() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            arp_entry(TABLE, "xa1", ip("10.252.0.2")),
            Some([2, 0xfe, 0, 0, 0, 2])
        );
        assert_eq!(arp_entry(TABLE, "xa1", ip("10.252.0.3")), None, "incomplete");
        assert_eq!(
            arp_entry(TABLE, "xa1", ip("10.252.0.4")),
            None,
            "another interface"
        );
        assert_eq!(arp_entry(TABLE, "xa1", ip("10.252.0.9")), None, "absent");
        assert_eq!(arp_entry("garbage\n1 2 3\n", "xa1", ip("10.252.0.2")), None);
    }

    #[test]
    fn connections_and_listeners_are_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<XdpConnection>();
        both::<XdpListener>();
    }
}
