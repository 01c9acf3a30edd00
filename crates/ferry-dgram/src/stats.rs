//! Counters an endpoint keeps: what a driver puts on `/metrics`.

use std::time::Duration;

/// Why a received packet was dropped. [`Endpoint::handle_packet`](crate::Endpoint::handle_packet)
/// returns it, and [`Drops`] counts each reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Dropped {
    /// Not a packet: the decoder's error.
    #[error("malformed packet: {0}")]
    Malformed(#[from] crate::PacketError),
    /// Addressed to a session this endpoint does not have (answered by a Reset, within
    /// [`Config::max_pending_resets`](crate::Config::max_pending_resets)).
    #[error("no such session")]
    UnknownSession,
    /// Names a session, but not from its peer's address, session or epoch.
    #[error("not from the session's peer (address, session id or epoch differ)")]
    Forged,
    /// Data or an acknowledgement for a session still waiting for its Accept.
    #[error("session not connected yet")]
    NotConnected,
    /// A packet (or Accept, or Connect) already received; acknowledged again, not used again.
    #[error("duplicate")]
    Duplicate,
    /// Beyond the session's credits or window, or acknowledging packets never sent.
    #[error("outside the session's credits or window")]
    OutOfWindow,
    /// Disagrees with earlier packets of its message (count, length, packet numbers, segment size).
    #[error("inconsistent with its message's other packets")]
    Inconsistent,
    /// A Connect while [`Config::max_sessions`](crate::Config::max_sessions) sessions exist.
    #[error("session limit reached")]
    SessionLimit,
    /// A Connect or Accept with a segment size this endpoint cannot use.
    #[error("unusable segment size in handshake")]
    Handshake,
    /// The pool had no buffer for a message's reassembly (the sender will retransmit).
    #[error("pool exhausted")]
    PoolExhausted,
}

/// Dropped packets, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// [`Dropped::Malformed`].
    pub malformed: u64,
    /// [`Dropped::UnknownSession`].
    pub unknown_session: u64,
    /// [`Dropped::Forged`].
    pub forged: u64,
    /// [`Dropped::NotConnected`].
    pub not_connected: u64,
    /// [`Dropped::Duplicate`].
    pub duplicate: u64,
    /// [`Dropped::OutOfWindow`].
    pub out_of_window: u64,
    /// [`Dropped::Inconsistent`].
    pub inconsistent: u64,
    /// [`Dropped::SessionLimit`].
    pub session_limit: u64,
    /// [`Dropped::Handshake`].
    pub handshake: u64,
    /// [`Dropped::PoolExhausted`].
    pub pool_exhausted: u64,
    /// Resets not sent because [`Config::max_pending_resets`](crate::Config::max_pending_resets) were queued.
    pub resets_suppressed: u64,
}

impl Drops {
    pub(crate) fn count(&mut self, d: &Dropped) {
        let n = match d {
            Dropped::Malformed(_) => &mut self.malformed,
            Dropped::UnknownSession => &mut self.unknown_session,
            Dropped::Forged => &mut self.forged,
            Dropped::NotConnected => &mut self.not_connected,
            Dropped::Duplicate => &mut self.duplicate,
            Dropped::OutOfWindow => &mut self.out_of_window,
            Dropped::Inconsistent => &mut self.inconsistent,
            Dropped::SessionLimit => &mut self.session_limit,
            Dropped::Handshake => &mut self.handshake,
            Dropped::PoolExhausted => &mut self.pool_exhausted,
        };
        *n += 1;
    }

    /// Each reason's count under a short name (`malformed`, `unknown_session`, ...), in the
    /// order of the fields: what a metrics exporter labels its series with.
    pub fn by_reason(&self) -> [(&'static str, u64); 11] {
        [
            ("malformed", self.malformed),
            ("unknown_session", self.unknown_session),
            ("forged", self.forged),
            ("not_connected", self.not_connected),
            ("duplicate", self.duplicate),
            ("out_of_window", self.out_of_window),
            ("inconsistent", self.inconsistent),
            ("session_limit", self.session_limit),
            ("handshake", self.handshake),
            ("pool_exhausted", self.pool_exhausted),
            ("resets_suppressed", self.resets_suppressed),
        ]
    }

    /// All drops together.
    pub fn total(&self) -> u64 {
        self.malformed
            + self.unknown_session
            + self.forged
            + self.not_connected
            + self.duplicate
            + self.out_of_window
            + self.inconsistent
            + self.session_limit
            + self.handshake
            + self.pool_exhausted
    }
}

/// An endpoint's counters since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets handed to the driver by [`poll_transmit`](crate::Endpoint::poll_transmit).
    pub packets_sent: u64,
    /// Datagrams handed in by [`handle_packet`](crate::Endpoint::handle_packet), dropped ones included.
    pub packets_received: u64,
    /// Data packets sent again (after a timeout or a gap).
    pub retransmits: u64,
    /// Acknowledgements sent in a datagram of their own (Ack packets), because no data packet
    /// of the session left to carry them. Included in `packets_sent`.
    pub lone_acks: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// Times a session had packets to send and no credit left (counted once per stall).
    pub credits_stalled: u64,
    /// Messages delivered to the application.
    pub messages_received: u64,
    /// The smoothed RTT of the session that last took a sample.
    pub rtt: Option<Duration>,
    /// Dropped packets by reason.
    pub drops: Drops,
}

/// What every datagram driver reports, whatever moves its packets: the protocol core's
/// counters, the driver's syscalls, and the frames of shared memory the NIC owns (AF_XDP's
/// UMEM; `None` for UDP). What ferry-rpc exports per datagram transport on its `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// The protocol core's counters.
    pub endpoint: Stats,
    /// The driver's syscalls (UDP: `sendmmsg`, `recvmmsg` and `poll`).
    pub syscalls: u64,
    /// UMEM frames in use (AF_XDP), `None` where there is no UMEM.
    pub umem_frames_in_use: Option<u64>,
}

/// One session's state, for tests and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStats {
    /// Whether the handshake is done.
    pub connected: bool,
    /// Packets sent and not yet acknowledged (at most `credits`).
    pub unacked: u32,
    /// Credits left: `credits - unacked`.
    pub credits: u32,
    /// The congestion window, in packets (1 to `credits`).
    pub cwnd: u32,
    /// Messages in flight (at most `window`).
    pub messages_in_flight: usize,
    /// Their bytes: what the session holds until the peer acknowledges them.
    pub bytes_in_flight: usize,
    /// The smoothed RTT, once sampled.
    pub srtt: Option<Duration>,
    /// The current retransmission timeout (with backoff).
    pub rto: Duration,
}
