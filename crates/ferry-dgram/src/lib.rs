//! Ferry's datagram protocol core, modelled on eRPC (NSDI'19): sessions over unreliable
//! datagrams, messages cut into MTU-sized packets and reassembled in place into pool buffers,
//! per-session credits and a request window, loss recovery and congestion control; and its
//! UDP and AF_XDP drivers, each with a `ferry_transport::Transport` on it.
//!
//! **What it is:** a sans-IO state machine in the style of `quinn-proto`. An [`Endpoint`] is
//! fed datagrams ([`Endpoint::handle_packet`]) and the time ([`Endpoint::handle_timeout`] at
//! [`Endpoint::poll_timeout`]), and returns what to send ([`Endpoint::poll_transmit`]) and what
//! happened ([`Endpoint::poll_event`]). Every input takes `now`; nothing in the core reads a
//! clock, touches a socket or sleeps, so the tests drive two endpoints through a simulated network
//! with loss, reordering and duplication deterministically.
//!
//! Two drivers sit beside it. [`UdpEndpoint`] (`src/udp/`) owns a UDP socket and the
//! clock and moves the core's datagrams with `sendmmsg`/`recvmmsg`, GSO and GRO (see
//! [The UDP driver](#the-udp-driver)); on it, [`UdpConnection`] and [`UdpListener`] make
//! a `ferry_transport::Transport` of one session per connected socket, which ferry-rpc
//! serves and calls over as `udp://host:port` (see [The transport](#the-transport)).
//! [`XdpEndpoint`] (`src/xdp/`) moves them through an AF_XDP socket whose UMEM is one region
//! of the pool (see [The AF_XDP driver](#the-af_xdp-driver)); on it, [`XdpConnection`] and
//! [`XdpListener`] make a `Transport` of sessions sharing one socket per interface queue,
//! which ferry-rpc serves and calls over as `xdp://IFNAME/QUEUE@IP:PORT` (see
//! [The transport over AF_XDP](#the-transport-over-af_xdp)).
//!
//! **What it is not (yet):** secure against an on-path attacker: ids and epochs stop blind forgery and stale packets, not a
//! peer that sees the traffic (no encryption, no authentication).
//!
//! # Messages and buffers
//!
//! A message is a [`Meta`](ferry_transport::Meta) plus bytes, as on every Ferry transport. A
//! session is a reliable, ordered message stream (ferry-rpc's streams rely on order): each
//! message is delivered once, whole, in send order.
//!
//! ```text
//! sender                                        receiver
//! SharedBuf (the application's pool buffer)     Pool::alloc(msg_len) on the message's first packet seen
//!   │ held by the session until acknowledged      ▲ each packet's payload written once, at index * seg
//!   ▼                                             │
//! Transmit { header bytes, payload = a slice }  handle_packet(bytes): the driver's receive buffer,
//!   the driver gathers both (no payload copy)     read only during the call
//!                                               Event::Message { data: SharedBuf } ─► application
//! ```
//!
//! # Packets
//!
//! The format is in [`packet`]: a 20-byte common header (magic, version, type, the receiver's
//! and the sender's session ids, the sender's epoch), then Connect/Accept (segment size),
//! Data (message sequence number, session-wide packet number, index and count in the message,
//! message length, payload length, the sender's acknowledgement, the
//! [`Meta`](ferry_transport::Meta) on the first packet), Ack (cumulative packet number and a
//! 64-bit selective bitmap) or Reset. Version 2 (issue 33) put the acknowledgement in every
//! data packet and widened the bitmap; a version 1 peer's packets are refused. [`Packet::decode`]
//! is the only door for a peer's bytes: it checks every field before any is used and names
//! what is wrong and where.
//!
//! # Sessions
//!
//! A client's [`Endpoint::connect`] sends Connect with its segment size; the server answers
//! Accept with the smaller of both sizes and its own session id (a random nonzero `u32`). A
//! lost Connect is sent again on the retransmission timeout; a duplicate Connect gets the
//! Accept again. Messages sent before the Accept wait for it. Each endpoint has an epoch, a
//! random nonce per start (from the seed the driver gives [`Endpoint::new`]): a Connect from
//! the same address with a new epoch means the peer restarted, and its old sessions end with
//! [`Event::SessionReset`] and [`SessionError::PeerRestarted`], listing the metas of their
//! unacknowledged messages as failed. A server that will not take a session (over its
//! limit) answers the Connect with a Reset: the client's session ends with
//! [`SessionError::PeerReset`]. A packet for an unknown session is answered by a Reset
//! (at most [`Config::max_pending_resets`] queued), so a peer that restarted as a server is
//! found out on its old client's next packet. [`Endpoint::close`] ends a session at once and
//! tells the peer with a Reset. There is no idle timeout and no keepalive: a peer that vanishes
//! while nothing is in flight keeps its session here until it connects again with a new epoch
//! or the application closes it (a session with messages in flight is closed after
//! [`Config::max_timeouts`]).
//!
//! # Credits, window, acknowledgements and recovery
//!
//! - **Credits** (eRPC: 32, the default; at most 64): a session sends packet `p` only while
//!   `p < snd_una + credits`, where `snd_una` is the lowest unacknowledged packet. So at most
//!   `credits` packets are unacknowledged, and the receiver refuses (drops and counts) packets
//!   beyond its window.
//! - **Window** (eRPC: 8): at most 8 messages in flight per session;
//!   [`Endpoint::send`] returns [`SendError::WindowFull`] beyond.
//! - **Acknowledgements**, cumulative + selective: every data packet carries a session-wide
//!   packet number (consecutive across messages). The receiver acknowledges with the lowest
//!   packet number it has not received (`cum`) and a 64-bit bitmap of the packets above it
//!   that it has; with the credit rule, that covers everything in flight. **The
//!   acknowledgement rides on data:** every data packet carries its sender's current `cum`
//!   and bitmap (as eRPC returns credits on its responses), so an Ack goes alone only when a
//!   [`poll_transmit`](Endpoint::poll_transmit) round has one due and no data packet of the
//!   session leaves ([`Stats::lone_acks`] counts them). The short delay before a lone Ack is the
//!   driver's: the UDP driver sends nothing in a step that made events, so the application's
//!   answers leave in the next with the acknowledgements in them. One acknowledgement per
//!   round covers everything received since the last, and a duplicate is acknowledged again,
//!   so a lost one is repaired.
//! - **Loss recovery: selective repeat.** A packet with 3 packets acknowledged above it is
//!   lost and sent again once (fast retransmit); on the retransmission timeout every
//!   unacknowledged packet is sent again. The timeout follows RFC 6298 (smoothed RTT plus four
//!   deviations, Karn's rule: no sample from a retransmitted packet; doubled per timeout, between
//!   [`Config::rto_min`] and [`Config::rto_max`]); after [`Config::max_timeouts`] timeouts in a
//!   row without progress the session is closed ([`Event::SessionClosed`]).
//! - **Duplicates** are suppressed by packet number (below `cum` or already in the bitmap):
//!   a payload is written, and a message delivered, once.
//! - **Congestion control: AIMD** on the packets in flight (sent, not acknowledged, not taken
//!   as lost), capped by the credits: +1 packet per window's worth of acknowledged packets,
//!   halved (at least 1) on a loss event, whether found by the selective acknowledgements or
//!   by a timeout, once per window of data (losses of packets sent before the decrease belong
//!   to it). It starts at the credits, as eRPC starts at line rate.
//! - **Timely-style control** ([`Config::timely`], off by default) replaces the additive
//!   increase with Timely's rules (SIGCOMM'15) applied to the window once per RTT: +1 below
//!   `t_low`, `× (1 - β(1 - t_high/rtt))` above `t_high`, and between them +1 if the smoothed
//!   RTT difference is falling, else `× (1 - β · gradient)` (the difference over the lowest
//!   RTT seen). Loss still halves the window. A window, not Timely's paced rate: no pacing
//!   here (a driver may add it). The tests show it keeping a bottleneck queue below `t_high`
//!   where AIMD, seeing no loss, keeps it at a full window.
//!
//! # Limits
//!
//! Every one is in [`Config`] and checked: the MTU (default 1472: a 1500-byte IPv4 frame less
//! 28 bytes of IP and UDP; 1399 bytes of message per packet after the largest, 73-byte header),
//! the longest message (default 4 MiB, at most the pool's largest buffer and 65535 packets),
//! credits (1 to 64), window, sessions, pending resets. A receiver allocates at most `window`
//! reassembly buffers per session, each of a length the decoder has bounded. Whatever a peer
//! sends, nothing panics: a packet that cannot be used is dropped, returned as a [`Dropped`]
//! and counted in [`Stats::drops`].
//!
//! # Addresses
//!
//! Peers are [`SocketAddr`](std::net::SocketAddr)s, not a type parameter: both planned drivers
//! address peers by IP and port (UDP directly; AF_XDP builds its Ethernet/IP/UDP headers from
//! them and a neighbour lookup), and one concrete type keeps the API and its errors simple.
//!
//! # The UDP driver
//!
//! [`UdpEndpoint::bind`] makes a non-blocking socket, an [`Endpoint`] seeded from the kernel's
//! random numbers (`getrandom`), and a receive ring. [`UdpEndpoint::drive`] is one step of
//! an event loop: send everything the core has; wait (up to the caller's limit and the core's
//! next timer, never when given zero or when events wait) for the socket; receive everything
//! there; run due timers; and send again, unless the step made events: then the
//! application's answers and the acknowledgements leave together, in one `sendmmsg`, on the
//! next `drive`. The socket is `AsFd`, and [`UdpEndpoint::deadline`] and
//! [`UdpEndpoint::wants_write`] say what an outer loop should wait for.
//!
//! ```text
//! send:  Transmit { header, payload: slice of the message's SharedBuf }
//!          ─► iovecs (header, payload) straight into sendmmsg: no copy in user space; the
//!             transmit (and so the buffer) is held until the kernel has taken it
//!          GSO: a run of equal-sized datagrams to one peer is one sendmmsg entry with
//!             UDP_SEGMENT; the kernel (or the NIC) cuts it
//! recv:  recvmmsg into `batch` plain buffers (MTU-sized, or 64 KiB with GRO) ─► each datagram
//!          (a GRO buffer split by its UDP_GRO segment size) to Endpoint::handle_packet, which
//!          copies the payload once, into the message's pool buffer
//! ```
//!
//! **Probes and fallbacks.** GSO: at bind, a throwaway loopback socket sends two one-byte
//! datagrams as one `UDP_SEGMENT` send; any error means no GSO, and every datagram is then its
//! own `sendmmsg` entry. A GSO send later refused with `EIO` (a device without checksum
//! offload) or `EMSGSIZE` or `EINVAL` (a route whose MTU is below the segment: the probe's
//! one-byte segments pass it) turns GSO off for good. GRO: the
//! `UDP_GRO` socket option; refused means MTU-sized receive buffers. [`UdpConfig`] can force
//! either off; [`UdpStats`] says which path runs and counts syscalls, datagrams per syscall,
//! GSO entries and GRO buffers beside the core's [`Stats`]. On loopback a GSO send reaches a
//! GRO socket unsplit; without GSO on the sending side loopback never coalesces.
//!
//! **Errors.** A datagram the kernel refuses to send (other than for a full buffer) is
//! dropped and counted, and the core sends it again; a datagram longer than a receive buffer
//! is dropped and counted ([`UdpStats::truncated`]); everything else a peer sends goes to the
//! core, which drops and counts what it cannot use.
//!
//! **Unsafe code.** The crate denies `unsafe_code` rather than forbidding it: the driver's
//! syscalls and control messages (`sendmmsg`, `recvmmsg`, `UDP_SEGMENT`, `UDP_GRO`, `poll`,
//! `getrandom`) are the one module allowed it, `udp/sys.rs`, whose functions are all safe to
//! call (memory is lent to the kernel for the call only; headers, addresses and control
//! buffers live in a scratch the driver keeps and lends to each call, zeroed once rather than
//! per call). The protocol core has none.
//!
//! **A first measurement**, not a benchmark: `cargo run --release -p ferry-dgram --example
//! udp_echo 5`, a 64-byte echo over loopback, one thread per side blocking in `poll`, on a
//! 2-core machine busy with other builds and tests (load average 6 to 8). Four runs (two of
//! 3 s per case, two of 5 s) gave:
//! - 1 in flight: 9,000 to 16,000 calls/s; 4.0 syscalls per call on each side: one
//!   `sendmmsg` carrying the answer and the acknowledgement together, 1.5 `recvmmsg` and 1.5
//!   `poll` (1.3 datagrams per `recvmmsg`: the pair sent in one call is often received in two).
//! - 16 in flight: 131,000 to 196,000 calls/s; 0.24 syscalls per call on each side; 17
//!   datagrams per `sendmmsg`, as two entries: the 16 equal-sized messages as one GSO entry,
//!   and an acknowledgement.
//!
//! No TCP ran beside it, so there is no same-run ratio there.
//!
//! **Over ferry-rpc**, also a first measurement and not the benchmark (`ferry bench rpc` will
//! be): `cargo test --release -p ferry-rpc --test udp -- --ignored --nocapture` (the test
//! `measure_64_byte_echo_udp_against_tcp`; `FERRY_UDP_MEASURE_SECS` sets each point's time, 3 s
//! by default): a 64-byte raw echo through one event-loop server thread listening on both
//! `tcp://` and `udp://` on loopback, the two alternating in one run, 1 in flight from the
//! blocking `Channel`, 16 from one tokio `AsyncChannel`. On the same busy 2-core machine
//! (load average 6: another helper's builds and a CI run), two runs gave UDP at **0.52 and
//! 0.40×** TCP's calls/s at 1 in flight (6,720 and 6,470 against 12,800 and 16,170) and
//! **0.70 and 0.68×** at 16 (23,500 and 22,800 against 33,500 and 33,400): the UDP path is
//! slower here, target or not. Counted with `strace -f -c` over one run, a UDP call made about
//! 5.8 syscalls on the two sides together (1.8 `sendmmsg`, 2.7 `recvmmsg`, 0.75 `poll`, 0.5
//! `timerfd_settime`) and a TCP call about 5.5 (1.95 `sendmsg`, 3.6 `readv`), each plus its
//! share of the server's `epoll_wait`: a blocking client acknowledges each answer in a
//! datagram of its own (it cannot wait to piggyback it, see below), which wakes the server
//! once more per call, and a UDP session's descriptor is an `epoll` set inside the loop's.
//!
//! The same test now also runs 128 in flight (one tokio `AsyncChannel`, window 128), prints
//! the CPU time per call (the process's: client and server together) and, from the server's
//! `/metrics`, its UDP syscalls (`sendmmsg`, `recvmmsg`, `timerfd_settime`, `epoll_ctl`; not
//! the loop's `epoll_wait`) and packets per call. Five runs (2 to 3 s per point, load average
//! 4 to 7) gave UDP/TCP calls/s and CPU per call of:
//! - 1 in flight: 0.30 to 0.45× the calls/s at 2.0 to 2.8× the CPU per call. The server
//!   receives 3.0 packets per call (the blocking channel's deadline frame and its request are
//!   two messages, so two packets; and the client's acknowledgement of the answer) and sends
//!   2.0 to 3.0 (the answer, its acknowledgement of the request, and acknowledgements again
//!   after spurious timeouts), in 2.4 to 6.1 syscalls.
//! - 16 in flight: 0.62 to 1.06× at 1.0 to 1.5×; 1.1 to 1.7 packets each way and 0.25 to
//!   2.0 syscalls per call on the server.
//! - 128 in flight: **0.70 to 1.32× (median 1.04)** at 0.93 to 1.51× (median 0.99) the CPU
//!   per call: issue 33's target, 1.5× at no more CPU, is missed here. The server makes 0.14
//!   to 0.59 syscalls and 1.03 to 1.20 packets each way per call: acknowledgements ride in
//!   the `sendmmsg` of the answers and cover a batch. What remains is CPU shared by both sides
//!   on two busy cores (a flat profile: `epoll` in the loop and the nested set, the clock,
//!   zeroing 64 headers and addresses per `recvmmsg`, the core's per-packet scans), and
//!   the credits: 32 packets unacknowledged per session, so 32 calls per round trip.
//!
//! Two changes tried after those runs, each measured with the same command (2 s points, load
//! average 4 to 5):
//! - **Kept:** the `try_recv` that drains the last queued message does not receive again
//!   (see the transport's readiness below). The server's syscalls per call at 1 in flight
//!   fell from 2.30 to 2.41 to 2.07 to 2.09; calls/s moved within the noise (UDP/TCP at 1,
//!   16 and 128 in flight: 0.43 and 0.54×, 0.87 and 0.73×, 1.03 and 1.14× at 1.03 and
//!   0.89× the CPU per call).
//! - **Not kept:** a round's Ack sent after its data instead of before (so that a blocking
//!   client's `recvmmsg` finds the answer, not the Ack alone, and the answer and the Ack are
//!   one GSO entry): 2.0 `recvmmsg` per call on the client instead of 2.8, and UDP/TCP 0.53
//!   and 0.55× at 1 in flight, 1.20 and 1.21× at 0.82 and 0.83× the CPU per call at 128 (two
//!   runs). But a peer may then take an answer in one drive and the Ack of its request in
//!   the next, and senders that count their window by answers (this crate's `tests/udp.rs`
//!   echo, the `udp_echo` and `xdp_echo` examples) find it full; reverted until those handle
//!   `SendError::WindowFull`.
//! - **Changed with the packet format (version 2, issue 33):** at 1 in flight the server
//!   received 3 packets per call and sent 2: a blocking call is two messages (deadline,
//!   request), each a packet of its own, and each side's Ack was a datagram of its own. The
//!   acknowledgement now rides in every data packet (as eRPC piggybacks credit returns on
//!   responses), so the server's Ack leaves inside its answer; a blocking client still
//!   acknowledges an answer alone (it may not call again). Connections have 64 credits and a
//!   window of 64 (the bitmap is 64 bits wide). The profile behind it, and what remains (a
//!   datagram per message: several small messages per packet would cut it; not done), is in
//!   `docs/benchmarks/datagram.md`, "Issue 33, the packet format".
//!
//! **The stalls, explained: pool growth, not UDP.** ferry-rpc's `tests/udp.rs` first test
//! took 0.15 s in most release runs and 0.5 to 1.1 s in some, a server's connection unread for
//! 0.1 to 0.45 s meanwhile while its client retransmitted. Instrumented (not committed: the
//! patch checked, at every wait of the server's loop, whether any UDP socket or its `epoll`
//! set was readable and not reported, and traced every connection call with a timestamp):
//! no wakeup was lost, ever; during a stall every thread of the process stopped at once (the
//! three clients between two frames of one request, inside `send`'s pool allocation; the
//! server's loop inside a reassembly's). Timing `ferry-buf`'s region growth (`Pool::grow`)
//! found it: a new 8 MiB region, prefaulted and `mlock`ed (`MADV_HUGEPAGE`, with this
//! machine's THP `defrag=madvise`), took 50 to 150 ms on this busy 2-core machine; a run
//! makes 46 to 56 of them (each pool grows a region per size class the messages of 0 B to
//! 256 KiB use: some 400 MiB prefaulted). Over ten runs the test's time followed the growth
//! time: 0.11 to 0.17 s where the longest growth took 4 to 26 ms, 0.41 to 0.82 s where it took
//! 121 to 152 ms (0.7 to 1.8 s of growth in all, across threads). With THP disabled for the
//! process (`PR_SET_THP_DISABLE`), so 4 KiB pages, ten runs took 0.9 to 1.9 s (against 0.2
//! to 2.2 s with THP in the same minutes): the prefaulting itself is the cost. The
//! retransmissions meanwhile are the protocol doing its job. `ferry-buf` has since stopped
//! prefaulting on the allocating thread: a region mapped on demand faults its pages as they
//! are used, and later regions are mapped and prefaulted ahead by a grower thread. The
//! counters that show such a pause on `/metrics` are ferry-rpc's `ferry_dgram_timeouts_total`
//! and `ferry_dgram_retransmits_total` on a lossless path.
//!
//! **Not yet:** pacing, `IP_PKTINFO` (a socket bound to a wildcard address answers from
//! whichever address the kernel picks), ECN, and an event loop of several endpoints.
//!
//! # The transport
//!
//! [`UdpConnection`] is one session with one peer on a socket of its own, `connect(2)`ed to
//! the peer, so that an RPC event loop polls each connection's descriptor as it polls a TCP
//! connection's.
//!
//! ```text
//! client: UdpConnection::connect(server)        server: UdpListener::bind(addr)
//!   ephemeral socket, connect(2) to the server    socket on addr, SO_REUSEADDR + SO_REUSEPORT
//!   Connect ────────────────────────────────────► listener: a Connect from a new peer
//!                                                   new socket, same options, bound to addr,
//!                                                   connect(2) to the peer; its own Endpoint
//!   ◄────────────────────────────────────────────── takes the Connect and sends the Accept
//!   Data, Acks ◄────────────────────────────────► the connected socket (Linux prefers it for
//!                                                   that peer; SO_REUSEPORT never picks it
//!                                                   for another)
//! ```
//!
//! - **Accepting.** Datagrams from an accepted peer that still reach the listener (sent
//!   before its socket was connected, or a retransmitted Connect) are dropped and counted
//!   ([`UdpListenerStats::from_accepted`]): retransmission covers them, and no second session
//!   is made. A packet for no session from anyone else is answered by a Reset carrying the
//!   listener's own epoch, so the client of a server that restarted on the port learns it on
//!   its next packet ([`SessionError::PeerRestarted`]); garbage is dropped and counted.
//! - **Buffers.** A received message is the pool buffer it was reassembled in, read in place
//!   ([`DgramFrame`]: `bytes`, `view`). `send` serializes a Ferry message into one pool buffer
//!   (zero-copy values copied behind its header segment: this transport's one user-space
//!   copy; the kernel copies again into the socket buffer, as for any UDP send), and the
//!   packets reference slices of it until acknowledged; `in_flight` is the bytes so held,
//!   with the messages waiting beyond the window (they queue in the connection: a send
//!   never blocks).
//! - **Readiness.** The descriptor is an `epoll` set of the socket and a `timerfd` armed at
//!   the core's next timer, so a loop polling it wakes to retransmit too. `try_recv` never
//!   waits; `recv` waits in `poll` up to the next timer, running the timers meanwhile;
//!   `flush` only sends (what arrives stays in the socket, which stays readable). When the
//!   drive that queued messages emptied the socket, the `try_recv` that finds none left only
//!   sends and returns `None`, without a `recvmmsg` that would mostly find nothing: what came
//!   since makes the descriptor readable (due timers too: the `timerfd` is set again).
//! - **Acknowledgements.** `recv`, and `try_recv` on a client's connection, acknowledge what
//!   they received before returning it: the caller (a blocking channel) may not call again
//!   for a while. On a served connection `try_recv` leaves them for its next drive, which its
//!   caller (the event loop, the tokio server) makes when it drains `try_recv` to `None`, so
//!   they leave with the answers in one `sendmmsg`.
//! - **Statistics.** [`UdpConnection::stats`] gives the driver's and the core's counters;
//!   [`DriverStats`] (from them) is what every datagram driver reports, and what ferry-rpc's
//!   `/metrics` sums per transport (`ferry_dgram_*`: packets, retransmits, timeouts, credits
//!   stalled, drops by reason, syscalls, the smoothed RTT).
//! - **Errors.** The session's end fails the next call with `TransportError::Io` of kind
//!   `ConnectionReset` (the peer restarted or closed: dropping a connection sends a Reset, as
//!   a TCP close sends a FIN) or `TimedOut` ([`Config::max_timeouts`] timeouts without
//!   progress), the [`SessionError`] inside; a handshake without an Accept within
//!   [`UdpConnConfig::handshake_timeout`] fails with `TimedOut` and a [`HandshakeTimeout`].
//! - **A caller that does not call.** The protocol runs only inside the connection's calls:
//!   messages that come while the caller makes none (a blocking client between calls, a
//!   stream it does not read, an idle tokio channel), and what an acknowledgement of its that
//!   was lost should have covered, are acknowledged only at its next call. Meanwhile the
//!   peer retransmits, and after [`Config::max_timeouts`] timeouts without progress it gives
//!   the session up: with [`UdpConnConfig`]'s defaults (16 timeouts, capped at 1 s) about
//!   8 s on loopback. The caller's next call then fails with a reset, and a new connection
//!   works. The event-loop server and client, and the tokio server, poll every connection and
//!   never meet this. Keepalives or a driver thread would remove it; neither is here yet.
//!
//! # The AF_XDP driver
//!
//! [`XdpEndpoint::bind`] opens an AF_XDP socket on one queue of one interface (`xdp/`), whose
//! UMEM is one region of the application's pool: every slot of a fresh region of the 4096-byte
//! (or 2048-byte) class, held by the driver, slot `i` being UMEM frame `i` (the pool's
//! `on_region` hook finds the region). Zero-copy mode is tried first and copy mode taken if the
//! driver refuses (veth does); [`XdpStats`] says which ran. The rings are written by hand with
//! `libc` (`xdp/sys.rs`, the module's only unsafe code), not through xsk-rs, so that the UMEM
//! is pool memory and every step is in view. Who owns a frame when:
//!
//! ```text
//! receive (a fixed set of frames): fill ring ─► kernel writes a packet ─► RX ring ─► parsed
//!   (frame::parse), the payload handed to Endpoint::handle_packet (which copies it into the
//!   message's pool buffer) ─► back to the fill ring at once
//! send (the other frames): free list ─► Ethernet+IPv4+UDP headers (frame::write_headers), the
//!   core's header and payload copied in ─► TX ring ─► sendto kick ─► kernel (copies it out;
//!   a zero-copy NIC reads it) ─► completion ring ─► free list
//! ```
//!
//! So user space copies each payload once each way, as the UDP driver's kernel does; on a NIC
//! with zero-copy AF_XDP the kernel's copy goes. Frames carry UDP checksum 0 (allowed over
//! IPv4; a non-zero one received is verified) and no IP options; [`frame::parse`] checks every
//! field of a received frame (a pure function, ready for a fuzz target).
//!
//! **The XDP program** (`xdp-prog/redirect.c`) redirects IPv4 UDP packets to the endpoint's
//! port into the socket's XSKMAP slot (its queue) and passes everything else (ARP included)
//! to the kernel. It is built with clang (`xdp-prog/build.sh`; Debian: `clang libbpf-dev`) and
//! the object, `redirect.o`, is committed, so building the crate needs no clang. aya loads it
//! and attaches it in native (driver) mode, or generic (SKB) mode if the driver refuses; it is
//! detached when the endpoint drops. No map is pinned, so bpffs is not needed.
//!
//! **Peers** are IPv4 addresses and ports with a MAC: [`XdpEndpoint::connect`] takes the
//! peer's, and a server learns its clients' from their frames (no ARP; at most
//! [`Config::max_sessions`] entries). **Multi-buffer:** with an MTU over a frame (jumbo
//! frames), a packet spans up to 17 frames (`XDP_USE_SG`, all but the last marked
//! `XDP_PKT_CONTD`; the program is `xdp.frags`); a received one is gathered into one buffer
//! (one more copy) for the parser. **Not yet:** IPv6, several queues per endpoint, several
//! endpoints per interface (each attaches its own program, and an interface runs one XDP
//! program without libxdp's dispatcher: so one endpoint at a time on an interface, which a
//! process's `xdp://` clients share, or its listener). `tests/xdp.rs` runs an echo of 0 B to 64 KiB between two
//! namespaces over veth with native XDP at both ends (copy mode), again with the program in
//! generic mode, with MTU 9000 (three frames a packet), and through a bridge dropping 5 % of
//! packets.
//!
//! **Syscalls.** The socket is bound with `XDP_USE_NEED_WAKEUP`: a `drive` that waits sends
//! with its `poll` (the kernel's poll transmits the TX ring first, up to 32 packets in copy
//! mode), so one syscall both sends and waits; a `drive` that does not wait, or has more to
//! send, kicks with `sendto`. Receiving takes no syscall (the RX ring is read in place).
//! `XDP_USE_NEED_WAKEUP` needs Linux 5.4 or later, multi-buffer 6.6 or later (this machine
//! runs 6.18).
//!
//! **A first measurement**, not a benchmark: `cargo run --release -p ferry-dgram --example
//! xdp_echo 5` (root), a 64-byte echo over veth between two namespaces, UDP and AF_XDP in
//! the same run, on this 2-core machine with a load average of 4 to 6. Two runs (3 s and 5 s
//! per case) gave, AF_XDP against UDP: at 1 in flight 1.00 syscall per call on each side (the
//! `poll`) against 4.0, a ratio of 0.25, and 1.9 to 2.3 times the calls per second (19,700 to
//! 21,800 against 9,700 to 10,600); at 16 in flight 0.06 against 0.24 to 0.25 (ratio 0.25 to
//! 0.26), 2.5 to 2.6 times the calls per second (92,900 to 110,300 against 37,600 to 42,900).
//! Copy mode: the kernel copies each frame once more than zero-copy mode would.
//!
//! # The transport over AF_XDP
//!
//! One AF_XDP socket (one [`XdpEndpoint`], one XDP program) serves every session on its
//! interface queue, while an RPC event loop polls one descriptor per connection. So the
//! endpoint and a mailbox per session are a *hub* that the [`XdpListener`] and every
//! [`XdpConnection`] it accepted share, or a process's client connections on that queue
//! (`Arc<Mutex<..>>`: ferry-rpc's server shares a listener between loop threads, so it must
//! be `Sync`; uncontended, the lock is a few atomic operations per call):
//!
//! ```text
//! XdpListener::bind(ifname, queue, ip:port)     XdpConnection::connect(ifname, queue, server)
//!   hub: XdpEndpoint on the queue, a kernel       the interface's IPv4 address, a port the kernel
//!   UDP socket holding the port, descriptor =     picks; the server's MAC from the kernel's ARP
//!   epoll { AF_XDP socket, timerfd }              table (a datagram to its discard port first);
//!                                                 the process's client hub on the queue (found
//!                                                 by namespace, interface and queue; bound by
//!                                                 the first, released by the last), a session
//!                                                 on it, handshake
//! whoever calls first (try_accept, a connection's try_recv/recv/flush) drives the endpoint:
//!   Message / end of session ─► that session's mailbox, its eventfd written
//!   a new session ─► the accept queue, the timer set to fire at once (listener readable)
//! accepted connection: descriptor = its eventfd, readable while its mailbox holds something
//! client connection: descriptor = epoll { its eventfd, the hub's }, so one of them drives
//! ```
//!
//! Frames, sends, acknowledgements, `in_flight` and errors are as on [`UdpConnection`]
//! ([`DgramFrame`]: the endpoint's pool buffer the message was reassembled in, made from
//! [`XdpConnConfig::pool`], whose one region of 4 KiB slots is the UMEM); a send serializes
//! into the caller's pool and the driver copies each packet into a UMEM frame. A blocking
//! `recv` waits unlocked in `poll` on its mailbox and the hub. [`XdpConnection::stats`] gives
//! the endpoint's [`XdpStats`] (the core's counters, syscalls, copy or zero-copy mode, UMEM
//! frames in use), shared by every session of the hub. A client that joins a hub takes its
//! address, pool and core settings as the first client bound them. A listener and clients on
//! one interface in one process exclude each other: the second bind fails with `EBUSY`.
//!
//! **Limits and known gaps.** The peer must be on the interface's link (no routing: the MAC
//! is the peer's own); IPv4 only. Closing a socket frees its queue only when the kernel's work
//! queue has run, so a bind that finds the queue busy (`EBUSY`) tries again, backing off up to
//! 20 ms, for at most [`XdpConnConfig::handshake_timeout`]. A kernel UDP socket sending to an
//! AF_XDP port over veth leaves its checksum to an offload that never runs, so the driver
//! refuses its frames (`packets_refused`) unless it sends checksum 0 (`SO_NO_CHECK`). The
//! listener's descriptor is a nested `epoll` set, as the UDP connection's is.
//!
//! **A first measurement**, not a benchmark: `cargo test --release -p ferry-rpc --test xdp --
//! --ignored --nocapture` (`measure_64_byte_echo_xdp_against_udp`), 64 B raw echo over
//! `xdp://` and `udp://` between two namespaces on a bare veth pair (native XDP, copy mode),
//! one event-loop server thread per transport, the blocking channel at 1 in flight and one
//! tokio channel at 16, on this 2-core machine shared with other builds (load average 5 to
//! 6.5). Two runs (3 s a point, two points each): XDP at 1.53 and 2.41x UDP's calls/s at 1 in
//! flight (12,080 and 13,240 against 7,920 and 5,500) and 1.85 and 1.88x at 16 (30,490 and
//! 30,700 against 16,500 and 16,340). The server endpoint's own syscalls (kicks and polls: the
//! loop's `epoll_wait`, eventfd and timerfd calls not counted) were 1.0 to 1.9 per call at 1
//! in flight and 0.07 to 0.10 at 16. With no loss the server still counted a few hundred
//! timeouts over a run (the 2 ms minimum timeout against a machine this busy).
//!
//! # Example
//!
//! Two endpoints, bytes moved by hand (what a driver does with a socket):
//!
//! ```
//! use std::time::Instant;
//! use ferry_buf::{Pool, PoolConfig};
//! use ferry_dgram::{Config, Endpoint, Event};
//! use ferry_transport::Meta;
//!
//! let pool = Pool::new(PoolConfig { region_size: 1 << 20, max_bytes: 16 << 20, ..Default::default() })?;
//! let config = Config { max_message_len: 1 << 20, ..Config::default() };
//! let (a_addr, b_addr) = ("10.0.0.1:7000".parse()?, "10.0.0.2:7000".parse()?);
//! let mut a = Endpoint::new(config.clone(), pool.clone(), 1)?;
//! let mut b = Endpoint::new(config, pool, 2)?;
//! let session = a.connect(b_addr)?;
//! a.send_copy(session, Meta::new(1, 42), &[7; 5000])?;
//!
//! let now = Instant::now();
//! let mut delivered = None;
//! for _ in 0..10 {
//!     while let Some(t) = a.poll_transmit(now) {
//!         let _ = b.handle_packet(now, a_addr, &[t.header(), t.payload()].concat());
//!     }
//!     while let Some(t) = b.poll_transmit(now) {
//!         let _ = a.handle_packet(now, b_addr, &[t.header(), t.payload()].concat());
//!     }
//!     while let Some(e) = b.poll_event() {
//!         if let Event::Message { meta, data, .. } = e {
//!             delivered = Some((meta, data));
//!         }
//!     }
//! }
//! let (meta, data) = delivered.expect("delivered");
//! assert_eq!((meta, data.len()), (Meta::new(1, 42), 5000));
//! assert_eq!(a.session_stats(session).unwrap().credits, 32, "all acknowledged");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]

mod config;
mod congestion;
mod conn;
mod endpoint;
mod event;
pub mod packet;
mod rtt;
mod session;
mod stats;
mod udp;
mod xdp;

pub use config::{Config, ConfigError, MAX_CREDITS};
pub use congestion::Timely;
pub use conn::DgramFrame;
pub use endpoint::Endpoint;
pub use event::{ConnectError, Event, SendError, SessionError, Transmit};
pub use packet::{Packet, PacketError, SessionId};
pub use stats::{DriverStats, Dropped, Drops, SessionStats, Stats};
pub use udp::{
    BindError, HandshakeTimeout, UdpConfig, UdpConnConfig, UdpConnection, UdpEndpoint, UdpListener,
    UdpListenerStats, UdpStats,
};
pub use xdp::{
    NoNeighbour, XdpConfig, XdpConnConfig, XdpConnection, XdpEndpoint, XdpError, XdpListener, XdpStats, frame,
};
