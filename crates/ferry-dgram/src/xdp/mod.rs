//! The AF_XDP driver: an [`Endpoint`] on an AF_XDP socket bound to one queue of one
//! interface, whose UMEM is one region of the application's pool, and a small XDP program
//! that steers the endpoint's UDP port to it.
//!
//! Sending: each [`Transmit`](crate::Transmit) is written into a free UMEM frame behind Ethernet, IPv4 and UDP
//! headers ([`frame::write_headers`]), put on the TX ring, and the kernel is kicked with
//! `sendto`. Receiving: the XDP program redirects the port's packets into the socket's RX
//! ring; each frame is parsed ([`frame::parse`]), handed to the core, and goes straight back to
//! the fill ring. `sys.rs` keeps the books of who owns each frame.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ferry_buf::{BufMut, Pool, RegionInfo, SharedBuf};
use ferry_transport::Meta;
use thiserror::Error;

use crate::{Config, ConfigError, ConnectError, DriverStats, Endpoint, Event, SendError, SessionId, Stats};

pub mod frame;
mod program;
#[allow(unsafe_code)]
mod sys;
mod transport;

pub use transport::{NoNeighbour, XdpConnConfig, XdpConnection, XdpListener};

use frame::{Addresses, HEADERS_LEN, Mac};

/// RX descriptors handled per [`XdpEndpoint::drive`] at most, so a flood cannot starve sending.
const MAX_RECV: u32 = 1024;
/// The most rings' entries (the fill ring's frames are as many).
const MAX_RING: usize = 2048;
/// The most frames one packet may span (the kernel's `MAX_SKB_FRAGS` + 1 is 18).
const MAX_FRAGS: usize = 17;
/// Packets the kernel's poll sends at most before it waits (`TX_BATCH_SIZE` in copy mode):
/// with more in the TX ring, a `sendto` kick goes first.
const POLL_SENDS: u32 = 32;
/// How long a wait lasts at most while the device refuses frames (it wakes no one when it
/// takes them again): the driver then retries.
const BUSY_RETRY: Duration = Duration::from_millis(1);

/// The driver's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct XdpConfig {
    /// The protocol core's. Its MTU (the UDP payload) plus 42 bytes of headers is the longest
    /// frame: over one UMEM frame, a packet spans several (multi-buffer, `XDP_USE_SG`, at
    /// most 17). The link's MTU must be at least the MTU plus 28.
    pub endpoint: Config,
    /// The interface to bind to.
    pub ifname: String,
    /// Its receive queue.
    pub queue: u32,
    /// This endpoint's IPv4 address and UDP port (the XDP program steers this port here).
    pub local: SocketAddrV4,
    /// The interface's MAC address, the frames' source.
    pub mac: Mac,
    /// The UMEM frame size, 2048 or 4096 (a size class of the pool). Default 4096.
    pub frame_size: usize,
    /// Try zero-copy mode first. Default true (veth refuses it; copy mode then runs).
    pub zero_copy: bool,
    /// Try native (driver) XDP first. Default true; generic (SKB) mode otherwise.
    pub native: bool,
}

impl XdpConfig {
    /// The defaults, for `ifname`/`queue` at `local` with `mac`.
    pub fn new(ifname: &str, queue: u32, local: SocketAddrV4, mac: Mac) -> XdpConfig {
        XdpConfig {
            endpoint: Config::default(),
            ifname: ifname.to_owned(),
            queue,
            local,
            mac,
            frame_size: 4096,
            zero_copy: true,
            native: true,
        }
    }
}

/// Why [`XdpEndpoint::bind`] failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum XdpError {
    /// The AF_XDP socket (or the interface lookup) failed.
    #[error("AF_XDP socket on {ifname} queue {queue}: {source}")]
    Socket {
        /// The interface.
        ifname: String,
        /// The queue.
        queue: u32,
        /// The kernel's error.
        source: io::Error,
    },
    /// A step of loading or attaching the XDP program failed.
    #[error("XDP program: cannot {step}: {source}")]
    Program {
        /// What was being done.
        step: &'static str,
        /// Why it failed (aya's error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The pool cannot give a UMEM.
    #[error("UMEM from the pool: {0}")]
    Umem(String),
    /// The protocol core's configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The MTU does not fit 17 frames, or the frame size is not 2048 or 4096.
    #[error(
        "{MAX_FRAGS} frames of {frame} bytes cannot hold an MTU of {mtu} plus {HEADERS_LEN} bytes of headers (frame size must be 2048 or 4096)"
    )]
    FrameSize {
        /// The frame size asked for.
        frame: usize,
        /// The core's MTU.
        mtu: usize,
    },
}

/// The driver's counters, with the core's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// Whether the socket runs in zero-copy mode (else copy mode: the kernel copies each
    /// frame between the UMEM and its own buffers).
    pub zero_copy: bool,
    /// Whether the XDP program runs in the driver (native, DRV) mode, else generic (SKB) mode.
    pub native: bool,
    /// The UMEM's frames.
    pub umem_frames: usize,
    /// UMEM frames the kernel holds (fill, RX, TX and completion rings) when counted.
    pub frames_in_use: usize,
    /// Packets put on the TX ring (one or, multi-buffer, several frames each).
    pub packets_sent: u64,
    /// Packets taken from the RX ring (one or, multi-buffer, several frames each).
    pub packets_received: u64,
    /// Received packets that were not a well-formed IPv4 UDP datagram to this address and
    /// port, or longer than the MTU allows.
    pub packets_refused: u64,
    /// Transmits dropped because the peer's MAC is not known (the core retransmits data).
    pub no_neighbour: u64,
    /// `sendto` kicks.
    pub kicks: u64,
    /// `poll` calls ([`XdpEndpoint::drive`]'s waits).
    pub poll_calls: u64,
    /// The kernel's count of packets that found the fill ring empty.
    pub fill_ring_empty: u64,
    /// The kernel's count of packets dropped for want of a frame (or too long for one).
    pub rx_dropped: u64,
    /// The kernel's count of packets dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// The protocol core's counters.
    pub endpoint: Stats,
}

impl From<XdpStats> for DriverStats {
    fn from(s: XdpStats) -> DriverStats {
        DriverStats {
            syscalls: s.syscalls(),
            umem_frames_in_use: Some(s.frames_in_use as u64),
            endpoint: s.endpoint,
        }
    }
}

impl XdpStats {
    /// Every syscall counted: `sendto` kicks and `poll`.
    pub fn syscalls(&self) -> u64 {
        self.kicks + self.poll_calls
    }
}

/// An [`Endpoint`] on an AF_XDP socket. Single-threaded and never blocking unless asked, like
/// [`UdpEndpoint`](crate::UdpEndpoint): [`drive`](Self::drive) does the I/O and runs the
/// timers, [`poll_event`](Self::poll_event) returns what happened. The socket is [`AsFd`]
/// (readable when packets wait).
pub struct XdpEndpoint {
    // Detached first: no packet is steered to a socket that is going away.
    _program: program::Program,
    xsk: sys::Xsk,
    endpoint: Endpoint,
    local: SocketAddrV4,
    mac: Mac,
    /// Peers' MACs: given to [`connect`](Self::connect), or learnt from their frames.
    neighbours: HashMap<Ipv4Addr, Mac>,
    max_neighbours: usize,
    events: VecDeque<Event>,
    /// The last kick left packets in the TX ring (the device refused them for now).
    tx_busy: bool,
    stats: XdpStats,
}

impl XdpEndpoint {
    /// Takes one region of `pool` as the UMEM (every slot of its `frame_size` class: the
    /// class must have no region yet), opens an AF_XDP socket on `config.ifname`/`queue`
    /// (zero-copy if the driver takes it, else copy mode), loads and attaches the XDP program
    /// (native if the driver takes it, else generic), and starts an endpoint receiving into
    /// `pool`, seeded from the kernel's random numbers.
    pub fn bind(config: XdpConfig, pool: Pool) -> Result<XdpEndpoint, XdpError> {
        let mtu = config.endpoint.mtu;
        let max_packet = HEADERS_LEN + mtu;
        if !matches!(config.frame_size, 2048 | 4096) || max_packet > config.frame_size * MAX_FRAGS {
            return Err(XdpError::FrameSize {
                frame: config.frame_size,
                mtu,
            });
        }
        let socket_error = |source| XdpError::Socket {
            ifname: config.ifname.clone(),
            queue: config.queue,
            source,
        };
        let (region, frames) = umem_frames(&pool, config.frame_size)?;
        let ring = (frames.len() / 2).min(MAX_RING);
        if ring < max_packet.div_ceil(config.frame_size) {
            return Err(XdpError::Umem(format!(
                "{} frames: too few for two rings of packets of {max_packet} bytes (use a larger region)",
                frames.len()
            )));
        }
        let ifindex = sys::ifindex(&config.ifname).map_err(socket_error)?;
        let xsk = sys::Xsk::open(
            ifindex,
            config.queue,
            frames,
            &region,
            ring as u32,
            config.zero_copy,
            max_packet,
        )
        .map_err(socket_error)?;
        let program = program::Program::attach(
            &config.ifname,
            config.queue,
            config.local.port(),
            &xsk,
            config.native,
        )?;
        let seed = sys::random_u64().map_err(socket_error)?;
        let max_neighbours = config.endpoint.max_sessions;
        let endpoint = Endpoint::new(config.endpoint, pool, seed)?;
        Ok(XdpEndpoint {
            stats: XdpStats {
                zero_copy: xsk.zero_copy(),
                native: program.native(),
                umem_frames: xsk.frame_count(),
                ..XdpStats::default()
            },
            _program: program,
            xsk,
            endpoint,
            local: config.local,
            mac: config.mac,
            neighbours: HashMap::new(),
            max_neighbours,
            events: VecDeque::new(),
            tx_busy: false,
        })
    }

    /// The address the endpoint receives at.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// The protocol core, for its session state.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The counters (the kernel's are read now; left at 0 if it will not say).
    pub fn stats(&self) -> XdpStats {
        let kernel = self.xsk.kernel_stats().unwrap_or_default();
        XdpStats {
            frames_in_use: self.xsk.frames_in_use(),
            fill_ring_empty: kernel.fill_ring_empty,
            rx_dropped: kernel.rx_dropped,
            rx_ring_full: kernel.rx_ring_full,
            endpoint: self.endpoint.stats(),
            ..self.stats
        }
    }

    /// Opens a session to `peer`, whose MAC is `mac` ([`Endpoint::connect`]); the Connect
    /// leaves on the next [`drive`](Self::drive).
    pub fn connect(&mut self, peer: SocketAddrV4, mac: Mac) -> Result<SessionId, ConnectError> {
        self.neighbours.insert(*peer.ip(), mac);
        self.endpoint.connect(peer.into())
    }

    /// Queues a message ([`Endpoint::send`]); it leaves on the next [`drive`](Self::drive).
    pub fn send(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), SendError> {
        self.endpoint.send(session, meta, data)
    }

    /// Closes a session ([`Endpoint::close`]).
    pub fn close(&mut self, session: SessionId) -> Result<Vec<Meta>, SendError> {
        self.endpoint.close(session)
    }

    /// The next event: what the last [`drive`](Self::drive) received.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When the next timer is due: an event loop's wait ends there at the latest.
    pub fn deadline(&self) -> Option<Instant> {
        self.endpoint.poll_timeout()
    }

    /// One step, as [`UdpEndpoint::drive`](crate::UdpEndpoint::drive): sends what the core
    /// has; waits up to `timeout` for a packet or the next timer (not at all if `timeout` is
    /// zero or events wait; at most 1 ms while the device refuses frames, then it retries);
    /// receives what is there and runs the timers that are due; then sends again, unless that
    /// made events (the application's answers then leave with the acknowledgements on the
    /// next `drive`).
    ///
    /// A step that waits sends with its `poll` (the kernel's poll transmits the TX ring first,
    /// up to 32 packets in copy mode): one syscall both sends and waits. Otherwise a `sendto`
    /// kicks the kernel.
    pub fn drive(&mut self, timeout: Duration) -> io::Result<()> {
        let now = Instant::now();
        self.write(now);
        let mut wait = if self.events.is_empty() {
            timeout
        } else {
            Duration::ZERO
        };
        if let Some(at) = self.endpoint.poll_timeout() {
            wait = wait.min(at.saturating_duration_since(now));
        }
        let poll_sends = !wait.is_zero() && !self.tx_busy && self.xsk.tx_outstanding() <= POLL_SENDS;
        if !poll_sends {
            self.kick()?;
        }
        if self.tx_busy {
            wait = wait.min(BUSY_RETRY);
        }
        if !wait.is_zero() {
            self.stats.poll_calls += 1;
            let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            self.xsk.poll(ms)?;
        }
        // What the poll left (a busy device): a kick says whether the device is busy.
        self.kick()?;
        let now = Instant::now();
        self.receive(now);
        if self.endpoint.poll_timeout().is_some_and(|at| at <= now) {
            self.endpoint.handle_timeout(now);
        }
        self.events
            .extend(std::iter::from_fn(|| self.endpoint.poll_event()));
        if self.events.is_empty() {
            self.write(now);
            self.kick()?;
        }
        Ok(())
    }

    /// Sends what the core has now, without receiving (a `sendto` kick if anything is
    /// queued): what arrives meanwhile stays in the RX ring, which keeps the socket readable.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write(Instant::now());
        self.kick()
    }

    /// Whether the device left frames in the TX ring at the last kick: an outer loop should
    /// drive again within 1 ms (nothing wakes it when the device takes them).
    pub fn busy(&self) -> bool {
        self.tx_busy
    }

    /// Sends the TX ring's published packets with `sendto` (none if it is empty), and notes
    /// whether the device left some (`tx_busy`).
    fn kick(&mut self) -> io::Result<()> {
        let (calls, result) = self.xsk.kick();
        self.stats.kicks += calls;
        self.tx_busy = self.xsk.tx_pending();
        result
    }

    /// Hands every frame in the RX ring (up to [`MAX_RECV`]) to the core.
    fn receive(&mut self, now: Instant) {
        let XdpEndpoint {
            xsk,
            endpoint,
            local,
            neighbours,
            max_neighbours,
            stats,
            ..
        } = self;
        let (n, dropped) = xsk.recv(MAX_RECV, |bytes| match frame::parse(bytes) {
            Ok(d) if d.addresses.dst == *local => {
                let src = d.addresses.src;
                // A packet the core cannot use is dropped and counted there, and teaches
                // nothing: only a peer the core accepts is answered.
                let accepted = endpoint.handle_packet(now, src.into(), d.payload).is_ok();
                if accepted && (neighbours.len() < *max_neighbours || neighbours.contains_key(src.ip())) {
                    neighbours.insert(*src.ip(), d.addresses.src_mac);
                }
            }
            _ => stats.packets_refused += 1,
        });
        self.stats.packets_received += u64::from(n);
        self.stats.packets_refused += u64::from(dropped);
    }

    /// Writes what the core has into free frames and publishes them on the TX ring (they
    /// leave on the next kick or poll).
    fn write(&mut self, now: Instant) {
        self.xsk.reclaim();
        while self.xsk.can_send() {
            let Some(t) = self.endpoint.poll_transmit(now) else {
                break;
            };
            let dst = match t.destination {
                SocketAddr::V4(dst) => dst,
                SocketAddr::V6(_) => {
                    self.stats.no_neighbour += 1;
                    continue;
                }
            };
            let Some(&dst_mac) = self.neighbours.get(dst.ip()) else {
                self.stats.no_neighbour += 1;
                continue;
            };
            let addresses = Addresses {
                src_mac: self.mac,
                dst_mac,
                src: self.local,
                dst,
            };
            let mut headers = [0; HEADERS_LEN];
            // Neither fails: bind checked that the MTU and the headers fit the frames.
            let sent = frame::write_headers(&mut headers, &addresses, t.len()).is_ok()
                && self.xsk.send(&[&headers, t.header(), t.payload()]);
            self.stats.packets_sent += u64::from(sent);
        }
        // With no free frame or TX slot, what the core has waits in it for the next round.
        self.xsk.publish_tx();
    }
}

impl AsFd for XdpEndpoint {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.xsk.as_fd()
    }
}

/// Every slot of one fresh region of `pool`'s `frame` class, and the region: the UMEM.
fn umem_frames(pool: &Pool, frame: usize) -> Result<(RegionInfo, Vec<BufMut>), XdpError> {
    let seen: Arc<Mutex<Vec<RegionInfo>>> = Arc::default();
    // The hook stays with the pool for ever; it records only while this function runs.
    let hook_seen = Arc::downgrade(&seen);
    pool.on_region(move |r| {
        if let Some(seen) = hook_seen.upgrade().filter(|_| r.class == frame) {
            seen.lock().unwrap_or_else(PoisonError::into_inner).push(*r);
        }
    });
    let regions = || seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if !regions().is_empty() {
        return Err(XdpError::Umem(format!(
            "the pool's {frame}-byte class already has a region: give the driver a pool whose {frame}-byte class is unused"
        )));
    }
    let first = pool.alloc(frame).map_err(|e| XdpError::Umem(e.to_string()))?;
    let [region] = regions()[..] else {
        return Err(XdpError::Umem(format!("no {frame}-byte region appeared")));
    };
    if region.class != frame || first.capacity() != frame {
        return Err(XdpError::Umem(format!("{frame} is not a size class of the pool")));
    }
    let mut frames = Vec::with_capacity(region.len / frame);
    frames.push(first);
    while frames.len() < region.len / frame {
        frames.push(pool.alloc(frame).map_err(|e| XdpError::Umem(e.to_string()))?);
    }
    if regions().len() != 1 {
        return Err(XdpError::Umem(format!(
            "another {frame}-byte region was added meanwhile (the pool is shared with another thread)"
        )));
    }
    Ok((region, frames))
}

#[cfg(test)]
mod tests {
    use ferry_buf::PoolConfig;

    use super::*;

    fn pool() -> Pool {
        Pool::new(PoolConfig {
            region_size: 1 << 20,
            max_bytes: 16 << 20,
            huge_pages: false,
            ..PoolConfig::default()
        })
        .expect("pool")
    }

    #[test]
    fn the_umem_is_every_slot_of_one_fresh_region() {
        let pool = pool();
        let (region, mut frames) = umem_frames(&pool, 4096).expect("umem");
        assert_eq!((region.class, region.len, frames.len()), (4096, 1 << 20, 256));
        assert_eq!(sys::check_tiling(&mut frames, &region), Ok(()));
        assert_eq!(frames[0].as_ptr(), region.addr);
        // The class's later buffers come from another region, never from the UMEM.
        let other = pool.alloc(4096).expect("alloc");
        assert!(!(region.addr.addr()..region.addr.addr() + region.len).contains(&other.as_ptr().addr()));
    }

    #[test]
    fn a_class_already_in_use_is_refused() {
        let pool = pool();
        let _taken = pool.alloc(2048).expect("alloc");
        assert!(matches!(umem_frames(&pool, 2048), Err(XdpError::Umem(_))));
        assert!(umem_frames(&pool, 4096).is_ok(), "another class is fresh");
    }

    #[test]
    fn frames_that_do_not_tile_the_region_are_refused() {
        let pool = pool();
        let (region, mut frames) = umem_frames(&pool, 4096).expect("umem");
        let last = frames.pop().expect("a frame");
        assert!(sys::check_tiling(&mut frames, &region).is_err());
        // `last` is still held: the class's next slot is in a new region.
        frames.push(pool.alloc(4096).expect("a slot of another region"));
        assert!(sys::check_tiling(&mut frames, &region).is_err());
        frames.pop();
        frames.push(last);
        assert_eq!(sys::check_tiling(&mut frames, &region), Ok(()));
    }

    #[test]
    fn bind_checks_the_frame_size_and_the_interface() {
        let local = "10.0.0.1:7000".parse().unwrap();
        let mut config = XdpConfig::new("lo", 0, local, [2, 0, 0, 0, 0, 1]);
        config.frame_size = 3000;
        assert!(matches!(
            XdpEndpoint::bind(config.clone(), pool()),
            Err(XdpError::FrameSize { .. })
        ));
        config.frame_size = 2048;
        config.endpoint.mtu = 2048 * MAX_FRAGS - HEADERS_LEN + 1;
        assert!(matches!(
            XdpEndpoint::bind(config.clone(), pool()),
            Err(XdpError::FrameSize { .. })
        ));
        // Packets of 17 frames each: a 1 MiB region of 2 KiB frames has room for 256 / 2.
        config.endpoint.mtu = 2048 * MAX_FRAGS - HEADERS_LEN;
        config.ifname = "ferry-no-such0".into();
        assert!(matches!(
            XdpEndpoint::bind(config.clone(), pool()),
            Err(XdpError::Socket { .. })
        ));
        let small = Pool::new(PoolConfig {
            region_size: 64 << 10,
            max_bytes: 16 << 20,
            huge_pages: false,
            ..PoolConfig::default()
        })
        .expect("pool");
        assert!(matches!(
            XdpEndpoint::bind(config.clone(), small),
            Err(XdpError::Umem(_))
        ));
        config.endpoint.mtu = 1472;
        config.ifname = "ferry-no-such0".into();
        match XdpEndpoint::bind(config, pool()) {
            Err(XdpError::Socket { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::ENODEV)),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("bound to an interface that is not there"),
        }
    }

    #[test]
    fn the_endpoint_is_send() {
        fn send<T: Send>() {}
        send::<XdpEndpoint>();
    }
}
