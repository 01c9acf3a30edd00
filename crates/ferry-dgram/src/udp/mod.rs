//! The UDP driver: one non-blocking socket, an [`Endpoint`], and the clock.
//!
//! Sending gathers each [`Transmit`]'s header and its slice of the message's pool buffer
//! straight into `sendmmsg` (no payload copy in user space), up to [`UdpConfig::batch`]
//! entries per call; with UDP GSO each entry is a run of equal-sized datagrams to one peer
//! that the kernel cuts (`UDP_SEGMENT`). Receiving is `recvmmsg` into a ring of plain
//! buffers; with UDP GRO one buffer may hold several datagrams of one flow, split here by the
//! `UDP_GRO` segment size. Both offloads are probed at [`UdpEndpoint::bind`] and fall back to
//! one datagram per entry or buffer; [`UdpStats`] says which path ran.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use ferry_buf::{Pool, SharedBuf};
use ferry_transport::Meta;
use thiserror::Error;

use crate::{
    Config, ConfigError, ConnectError, DriverStats, Endpoint, Event, SendError, SessionId, Stats, Transmit,
};

#[allow(unsafe_code)]
mod sys;
mod transport;
pub(crate) mod wake;

pub use transport::{HandshakeTimeout, UdpConnConfig, UdpConnection, UdpListener, UdpListenerStats};

use sys::{InMsg, MAX_BATCH, OutMsg, Scratch};

/// The most datagrams in one GSO entry (the kernel's `UDP_MAX_SEGMENTS` is 64 on older kernels).
const MAX_SEGMENTS: usize = 64;
/// The most bytes in one GSO entry: under the 65507-byte UDP payload limit of IPv4.
const MAX_GSO_BYTES: usize = 65_000;
/// A receive buffer's length with GRO: the largest UDP payload.
const GRO_BUFFER: usize = 65_535;
/// `recvmmsg` calls per [`UdpEndpoint::drive`] at most, so a flood cannot starve sending.
const MAX_RECV_ROUNDS: usize = 16;

/// The driver's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpConfig {
    /// The protocol core's.
    pub endpoint: Config,
    /// `sendmmsg`/`recvmmsg` entries per call, 1 to 64. Default 32.
    pub batch: usize,
    /// Use UDP GSO if the kernel has it. Default true; false forces the fallback.
    pub gso: bool,
    /// Use UDP GRO if the kernel has it. Default true; false forces the fallback.
    pub gro: bool,
    /// `SO_SNDBUF` and `SO_RCVBUF` asked for (the kernel caps them at its `wmem_max` and
    /// `rmem_max`). Default 4 MiB.
    pub socket_buffer: usize,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            endpoint: Config::default(),
            batch: 32,
            gso: true,
            gro: true,
            socket_buffer: 4 << 20,
        }
    }
}

/// Why [`UdpEndpoint::bind`] failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BindError {
    /// The socket could not be made or set up.
    #[error("udp socket: {0}")]
    Io(#[from] io::Error),
    /// The protocol core's configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// [`UdpConfig::batch`] is not 1 to 64.
    #[error("batch must be 1 to {MAX_BATCH}, not {0}")]
    Batch(usize),
}

/// The driver's counters, with the core's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Whether GSO is in use (asked for and found by the probe, and not given up since).
    pub gso: bool,
    /// Whether GRO is in use (asked for and accepted by the kernel).
    pub gro: bool,
    /// `sendmmsg` calls, those that sent nothing included.
    pub send_calls: u64,
    /// Datagrams the kernel took (a GSO entry counts each of its datagrams).
    pub datagrams_sent: u64,
    /// `sendmmsg` entries that carried several datagrams (GSO).
    pub gso_entries: u64,
    /// Datagrams dropped because the kernel refused them (the core retransmits).
    pub send_errors: u64,
    /// `recvmmsg` calls, those that found nothing included.
    pub recv_calls: u64,
    /// Datagrams handed to the core (each GRO segment counts).
    pub datagrams_received: u64,
    /// Receive buffers that held several datagrams (GRO).
    pub gro_buffers: u64,
    /// Datagrams longer than a receive buffer (so longer than the MTU), dropped.
    pub truncated: u64,
    /// `poll` calls ([`UdpEndpoint::drive`]'s waits).
    pub poll_calls: u64,
    /// A [`UdpConnection`]'s `timerfd_settime` and `epoll_ctl` calls on its descriptor (the
    /// retransmission timer, the interest in writability); zero for a bare endpoint.
    pub wake_calls: u64,
    /// The protocol core's counters.
    pub endpoint: Stats,
}

impl UdpStats {
    /// Datagrams sent per `sendmmsg` call.
    pub fn datagrams_per_send(&self) -> f64 {
        self.datagrams_sent as f64 / self.send_calls.max(1) as f64
    }

    /// Datagrams received per `recvmmsg` call.
    pub fn datagrams_per_recv(&self) -> f64 {
        self.datagrams_received as f64 / self.recv_calls.max(1) as f64
    }

    /// Every syscall counted: `sendmmsg`, `recvmmsg`, `poll`, and a connection's
    /// `timerfd_settime` and `epoll_ctl`.
    pub fn syscalls(&self) -> u64 {
        self.send_calls + self.recv_calls + self.poll_calls + self.wake_calls
    }
}

impl From<UdpStats> for DriverStats {
    fn from(s: UdpStats) -> DriverStats {
        DriverStats {
            endpoint: s.endpoint,
            syscalls: s.syscalls(),
            umem_frames_in_use: None,
        }
    }
}

/// An [`Endpoint`] on a UDP socket. Single-threaded and never blocking unless asked:
/// [`drive`](Self::drive) does the I/O and runs the timers, [`poll_event`](Self::poll_event)
/// returns what happened. For an event loop: the socket is [`AsFd`]; wait for it to be
/// readable (and writable while [`wants_write`](Self::wants_write)) or until
/// [`deadline`](Self::deadline), then call `drive(Duration::ZERO)`, take the events, and
/// call `drive(Duration::ZERO)` again if there were any (their answers and
/// acknowledgements leave then, together).
pub struct UdpEndpoint {
    socket: UdpSocket,
    endpoint: Endpoint,
    batch: usize,
    /// Transmits polled from the core and not yet taken by the kernel (it said `EAGAIN`).
    queue: VecDeque<Transmit>,
    /// Events taken from the core by the last [`drive`](Self::drive), for the application.
    events: VecDeque<Event>,
    /// Set when the kernel's send buffer is full; cleared by the next send that goes through.
    blocked: bool,
    /// Whether the last [`drive`](Self::drive)'s receiving stopped because the socket was
    /// empty (not at [`MAX_RECV_ROUNDS`]).
    drained: bool,
    /// The receive ring: `batch` buffers of `rx_len` bytes.
    rx: Vec<u8>,
    rx_len: usize,
    rx_msgs: Box<[InMsg; MAX_BATCH]>,
    /// The syscalls' headers and addresses, lent to each `sendmmsg` and `recvmmsg`.
    scratch: Box<Scratch>,
    stats: UdpStats,
}

impl UdpEndpoint {
    /// Binds a socket to `addr`, probes GSO and GRO (as far as `config` asks for them), and
    /// starts an endpoint receiving into `pool`, seeded from the kernel's random numbers.
    pub fn bind(addr: SocketAddr, config: UdpConfig, pool: Pool) -> Result<UdpEndpoint, BindError> {
        let socket = UdpSocket::bind(addr)?;
        UdpEndpoint::on_socket(socket, config, pool)
    }

    /// [`bind`](Self::bind) on a socket made elsewhere (bound, perhaps connected: the
    /// transport's per-peer sockets).
    pub(crate) fn on_socket(
        socket: UdpSocket,
        config: UdpConfig,
        pool: Pool,
    ) -> Result<UdpEndpoint, BindError> {
        if !(1..=MAX_BATCH).contains(&config.batch) {
            return Err(BindError::Batch(config.batch));
        }
        let addr = socket.local_addr()?;
        let mtu = config.endpoint.mtu;
        let endpoint = Endpoint::new(config.endpoint, pool, sys::random_u64()?)?;
        socket.set_nonblocking(true)?;
        sys::set_buffers(socket.as_fd(), config.socket_buffer)?;
        let gso = config.gso && probe_gso(addr);
        let gro = config.gro && sys::enable_gro(socket.as_fd()).is_ok();
        let rx_len = if gro { GRO_BUFFER } else { mtu };
        Ok(UdpEndpoint {
            socket,
            endpoint,
            batch: config.batch,
            queue: VecDeque::new(),
            events: VecDeque::new(),
            blocked: false,
            drained: false,
            rx: vec![0; rx_len * config.batch],
            rx_len,
            rx_msgs: Box::new([InMsg::EMPTY; MAX_BATCH]),
            scratch: Scratch::new(),
            stats: UdpStats {
                gso,
                gro,
                ..UdpStats::default()
            },
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The protocol core, for its session state.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The counters.
    pub fn stats(&self) -> UdpStats {
        UdpStats {
            endpoint: self.endpoint.stats(),
            ..self.stats
        }
    }

    /// Opens a session to `peer` ([`Endpoint::connect`]); the Connect leaves on the next
    /// [`drive`](Self::drive).
    pub fn connect(&mut self, peer: SocketAddr) -> Result<SessionId, ConnectError> {
        self.endpoint.connect(peer)
    }

    /// Queues a message ([`Endpoint::send`]); it leaves on the next [`drive`](Self::drive).
    pub fn send(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), SendError> {
        self.endpoint.send(session, meta, data)
    }

    /// Closes a session ([`Endpoint::close`]).
    pub fn close(&mut self, session: SessionId) -> Result<Vec<Meta>, SendError> {
        self.endpoint.close(session)
    }

    /// The next event: what the last [`drive`](Self::drive) received ([`Endpoint::poll_event`]).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When the next timer is due: an event loop's wait ends there at the latest.
    pub fn deadline(&self) -> Option<Instant> {
        self.endpoint.poll_timeout()
    }

    /// Whether datagrams wait for room in the kernel's send buffer: an event loop then also
    /// waits for the socket to be writable.
    pub fn wants_write(&self) -> bool {
        self.blocked
    }

    /// Whether the last [`drive`](Self::drive) received until the socket was empty (what came
    /// after makes it readable again).
    pub(crate) fn drained(&self) -> bool {
        self.drained
    }

    /// One step: sends what the core has (the application's messages, acknowledgements);
    /// waits up to `timeout` for a datagram, the next timer or, while
    /// [`wants_write`](Self::wants_write), room to send (not at all if `timeout` is zero or
    /// events wait to be taken); receives what is there and runs the timers that are due.
    /// Then, if that made events, it returns, so that what the application sends in answer
    /// leaves on the next `drive` in one `sendmmsg` with the acknowledgements; else it sends
    /// what the core has. So an application calls `drive` again after taking the events.
    ///
    /// Errors are the socket's (receive errors, and `poll`'s); a datagram the kernel refuses
    /// to send is dropped and counted instead, and the core sends it again.
    pub fn drive(&mut self, timeout: Duration) -> io::Result<()> {
        let now = Instant::now();
        self.flush(now);
        let mut wait = if self.events.is_empty() {
            timeout
        } else {
            Duration::ZERO
        };
        if let Some(at) = self.endpoint.poll_timeout() {
            wait = wait.min(at.saturating_duration_since(now));
        }
        if !wait.is_zero() {
            let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            self.stats.poll_calls += 1;
            sys::poll(self.socket.as_fd(), self.blocked, ms)?;
        }
        let now = Instant::now();
        self.receive(now)?;
        if self.endpoint.poll_timeout().is_some_and(|at| at <= now) {
            self.endpoint.handle_timeout(now);
        }
        self.events
            .extend(std::iter::from_fn(|| self.endpoint.poll_event()));
        if self.events.is_empty() {
            self.flush(now);
        }
        Ok(())
    }

    /// Receives until the socket is empty (or [`MAX_RECV_ROUNDS`] calls), handing every
    /// datagram to the core.
    fn receive(&mut self, now: Instant) -> io::Result<()> {
        self.drained = true;
        let fd = self.socket.as_fd();
        for _ in 0..MAX_RECV_ROUNDS {
            self.stats.recv_calls += 1;
            let n = match sys::recvmmsg(
                fd,
                &mut self.rx,
                self.rx_len,
                &mut self.rx_msgs,
                &mut self.scratch,
            ) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            for (m, buf) in self.rx_msgs[..n].iter().zip(self.rx.chunks_exact(self.rx_len)) {
                let Some(from) = m.from else { continue };
                if m.truncated {
                    self.stats.truncated += 1;
                    continue;
                }
                let bytes = &buf[..m.len];
                let seg = m.segment.unwrap_or(m.len);
                if seg == 0 || seg >= m.len {
                    self.stats.datagrams_received += 1;
                    let _ = self.endpoint.handle_packet(now, from, bytes);
                    continue;
                }
                self.stats.gro_buffers += 1;
                for d in bytes.chunks(seg) {
                    self.stats.datagrams_received += 1;
                    // A dropped packet is counted by the core; nothing to do here.
                    let _ = self.endpoint.handle_packet(now, from, d);
                }
            }
            if n < self.batch {
                return Ok(());
            }
        }
        self.drained = false;
        Ok(())
    }

    /// Sends what the core has until it has nothing or the kernel's buffer is full.
    fn flush(&mut self, now: Instant) {
        let fd = self.socket.as_fd();
        let per_entry = if self.stats.gso { MAX_SEGMENTS } else { 1 };
        loop {
            while self.queue.len() < self.batch * per_entry {
                let Some(t) = self.endpoint.poll_transmit(now) else {
                    break;
                };
                self.queue.push_back(t);
            }
            if self.queue.is_empty() {
                self.blocked = false;
                return;
            }
            let groups = group(&self.queue, self.batch, self.stats.gso);
            let iov: Vec<IoSlice<'_>> = self
                .queue
                .iter()
                .take(groups.iter().sum())
                .flat_map(|t| [IoSlice::new(t.header()), IoSlice::new(t.payload())])
                .filter(|s| !s.is_empty())
                .collect();
            let mut msgs = Vec::with_capacity(groups.len());
            let (mut at_t, mut at_iov) = (0, 0);
            for &count in &groups {
                let slices: usize = self
                    .queue
                    .range(at_t..at_t + count)
                    .map(|t| 1 + usize::from(!t.payload().is_empty()))
                    .sum();
                let first = &self.queue[at_t];
                msgs.push(OutMsg {
                    destination: first.destination,
                    iov: &iov[at_iov..at_iov + slices],
                    // `group` keeps every length within u16.
                    segment: (count > 1).then(|| first.len() as u16),
                });
                at_t += count;
                at_iov += slices;
            }
            self.stats.send_calls += 1;
            let result = sys::sendmmsg(fd, &msgs, &mut self.scratch);
            drop(msgs);
            drop(iov);
            match result {
                Ok(k) => {
                    self.blocked = false;
                    for &count in &groups[..k] {
                        self.stats.datagrams_sent += count as u64;
                        self.stats.gso_entries += u64::from(count > 1);
                        self.queue.drain(..count);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.blocked = true;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A device without checksum offload refuses GSO with EIO (quinn-udp's
                // experience), a route whose MTU is below the segment with EMSGSIZE (EINVAL
                // on older kernels): give GSO up and send the same datagrams one by one (the
                // kernel may fragment those).
                Err(e)
                    if groups[0] > 1
                        && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::EMSGSIZE)) =>
                {
                    self.stats.gso = false;
                    return self.flush(now);
                }
                Err(_) => {
                    self.stats.send_errors += groups[0] as u64;
                    self.queue.drain(..groups[0]);
                }
            }
        }
    }
}

impl AsFd for UdpEndpoint {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// Cuts the front of `queue` into at most `batch` `sendmmsg` entries, as transmit counts.
/// Without GSO every entry is one transmit; with it, an entry is a run to one destination of
/// equal lengths (the last may be shorter, as `UDP_SEGMENT` cuts), within the kernel's limits.
fn group(queue: &VecDeque<Transmit>, batch: usize, gso: bool) -> Vec<usize> {
    let mut groups = Vec::with_capacity(batch);
    let mut ts = queue.iter().peekable();
    while groups.len() < batch {
        let Some(first) = ts.next() else { break };
        let (seg, mut count, mut bytes) = (first.len(), 1, first.len());
        while gso && seg <= usize::from(u16::MAX) {
            let Some(next) = ts.peek() else { break };
            let fits = next.destination == first.destination
                && next.len() <= seg
                && count < MAX_SEGMENTS
                && bytes + next.len() <= MAX_GSO_BYTES;
            if !fits {
                break;
            }
            count += 1;
            bytes += next.len();
            let shorter = next.len() < seg;
            ts.next();
            if shorter {
                break;
            }
        }
        groups.push(count);
    }
    groups
}

/// Whether the kernel takes a `UDP_SEGMENT` send: two one-byte datagrams from a throwaway
/// socket of `addr`'s family to itself.
fn probe_gso(addr: SocketAddr) -> bool {
    let loopback: SocketAddr = match addr {
        SocketAddr::V4(_) => (Ipv4Addr::LOCALHOST, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::LOCALHOST, 0).into(),
    };
    let Ok(probe) = UdpSocket::bind(loopback) else {
        return false;
    };
    let Ok(destination) = probe.local_addr() else {
        return false;
    };
    let bytes = [0u8; 2];
    let iov = [IoSlice::new(&bytes)];
    let msg = OutMsg {
        destination,
        iov: &iov,
        segment: Some(1),
    };
    matches!(sys::sendmmsg(probe.as_fd(), &[msg], &mut Scratch::new()), Ok(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Body, Header};

    /// Transmits of the given datagram lengths (a 20-byte Reset header and a payload) to the
    /// given ports.
    fn queue(specs: &[(u16, usize)]) -> VecDeque<Transmit> {
        let pool = Pool::new(ferry_buf::PoolConfig {
            region_size: 1 << 20,
            max_bytes: 8 << 20,
            ..Default::default()
        })
        .expect("pool");
        let header = Header {
            dst: SessionId(1),
            src: SessionId(2),
            epoch: 3,
            body: Body::Reset,
        };
        specs
            .iter()
            .map(|&(port, len)| {
                let payload = pool.copy_from(&vec![0; len - 20]).expect("payload");
                let t = Transmit::new((Ipv4Addr::LOCALHOST, port).into(), &header, Some(payload));
                assert_eq!(t.len(), len);
                t
            })
            .collect()
    }

    #[test]
    fn without_gso_every_transmit_is_an_entry_up_to_the_batch() {
        let q = queue(&[(1, 100); 5]);
        assert_eq!(group(&q, 3, false), [1, 1, 1]);
        assert_eq!(group(&q, 8, false), [1; 5]);
    }

    #[test]
    fn gso_joins_equal_lengths_and_one_shorter_last() {
        let q = queue(&[(1, 100), (1, 100), (1, 100), (1, 60), (1, 100)]);
        assert_eq!(group(&q, 8, true), [4, 1]);
    }

    #[test]
    fn gso_never_joins_a_longer_datagram_or_another_peer() {
        let q = queue(&[(1, 100), (1, 120), (1, 120), (2, 120), (2, 50), (2, 50)]);
        assert_eq!(group(&q, 8, true), [1, 2, 2, 1]);
    }

    #[test]
    fn gso_entries_stay_within_the_kernels_limits() {
        let q = queue(&[(1, 100); 70]);
        assert_eq!(group(&q, 8, true), [MAX_SEGMENTS, 6]);
        let q = queue(&[(1, 1472); 50]);
        assert_eq!(
            group(&q, 8, true),
            [MAX_GSO_BYTES / 1472, 50 - MAX_GSO_BYTES / 1472]
        );
        assert_eq!(group(&q, 1, true), [MAX_GSO_BYTES / 1472]);
    }
}
