//! The limits a server holds each connection to, in one place: how many connections, how long
//! one may idle, and (set where the transport is configured) how long its handshake may take
//! and how much memory it may hold.
//!
//! | limit | where | default | at the edge |
//! |---|---|---|---|
//! | connections open at once (over all the server's loops; handshakes included) | [`ConnLimits::max_connections`] | 4096 | the next is accepted and closed at once: `ferry_rpc_connections_closed_total{reason="limit"}` |
//! | idle time of a served session (no frame, no call in progress) | [`ConnLimits::idle_timeout`] | none | closed: `reason="idle"` |
//! | TLS handshake | [`TlsServer::handshake_timeout`](ferry_net::TlsServer) | 10 s | closed: `reason="handshake_timeout"` |
//! | shared-memory setup | [`ShmConfig::handshake_timeout`](ferry_shm::ShmConfig::handshake_timeout) | 10 s | closed: `reason="handshake_timeout"` |
//! | calls in progress per session | [`ServerConfig::max_in_flight`](crate::session::ServerConfig) | 64 | `RESOURCE_EXHAUSTED`; while answers wait for a client that does not read, no more requests are read (the queued output is bounded by the calls in progress) |
//! | a frame received (TCP) | [`ferry_net::Config::max_frame_len`] | 8 MiB − 16 | the connection fails (a length prefix past it is refused before its bytes are buffered) |
//! | frames in progress over the server's TCP connections (a length prefix gets its buffer before the bytes come) | [`ferry_net::Config::frame_budget`] (one [`FrameBudget`](ferry_net::FrameBudget) for all the server's loops) | 256 MiB | the frame that would pass it fails its connection: [`FrameError::OverBudget`](ferry_net::FrameError) |
//! | receive buffer (TCP) | [`ferry_net::Config::read_buf`] (a larger frame in progress: a buffer of its length) | 256 KiB | at most [`LoopConfig::frames_per_turn`](crate::LoopConfig::frames_per_turn) frames are handled per turn; the rest wait in the kernel |
//! | unacknowledged blocks (shared memory) | [`ShmConfig::credits`](ferry_shm::ShmConfig::credits) × block size | 256 × 16 KiB | sends wait for acknowledgements |
//!
//! Every close of the server's own accord is counted by reason in
//! [`Metrics::closed_count`](crate::Metrics::closed_count).
//!
//! Both drivers apply them all, with one policy (this module's [`accept`] and
//! [`ConnLimits::idle_deadline`]): the event-loop [`Server`](crate::Server) counts in its
//! services' metrics, the tokio driver ([`AsyncServer`](crate::tokio::AsyncServer)) in
//! [`AsyncServer::metrics`](crate::tokio::AsyncServer::metrics) (there the TLS handshake and
//! the shared-memory setup are each session task's first await).

use std::time::{Duration, Instant};

use ferry_buf::Pool;
use ferry_transport::TransportError;

use crate::conn::{Accepted, ConnConfig, Listener};
use crate::metrics::{Admitted, Metrics};

/// Limits on a server's connections (see the module docs for the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections open at once over all of a server's loops, shared-memory setups and TLS
    /// handshakes included (default 4096). One more is accepted and closed at once, before
    /// any setup (the client sees its connection close: `UNAVAILABLE`), and counted.
    pub max_connections: usize,
    /// A served session with no call in progress that has received nothing for this long is
    /// closed (default `None`: never). Looked at on every turn, and at least every 100 ms
    /// while the loop sleeps.
    pub idle_timeout: Option<Duration>,
}

impl ConnLimits {
    /// When a served session with nothing in progress whose last frame came at `last_frame`
    /// is closed for idling (`None`: never).
    pub(crate) fn idle_deadline(&self, last_frame: Instant) -> Option<Instant> {
        self.idle_timeout.map(|idle| last_frame + idle)
    }

    /// What a session closed for idling fails with.
    pub(crate) fn idle_error(&self) -> TransportError {
        TransportError::Io {
            op: "idle",
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "no frame for {:?} (ConnLimits::idle_timeout)",
                    self.idle_timeout.unwrap_or_default()
                ),
            ),
        }
    }
}

/// What one accept under the limits gave.
// Moved once per accept, as `Listener::try_accept`'s result is: boxing would allocate per peer.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Admission {
    /// A connection (or shared-memory setup) to serve, holding its place under the limit.
    Admitted(Accepted, Admitted),
    /// A peer past [`ConnLimits::max_connections`]: accepted, closed at once and counted.
    Refused,
}

/// Accepts the next peer waiting on `listener` under `limits`, counted in `metrics`
/// (`Ok(None)`: none waits); a shared-memory peer's pool comes from `shm_pool`. Both drivers
/// accept through here.
pub(crate) fn accept(
    listener: &Listener,
    pool: &Pool,
    config: &ConnConfig,
    limits: &ConnLimits,
    metrics: &Metrics,
    shm_pool: impl FnOnce() -> Result<Pool, TransportError>,
) -> Result<Option<Admission>, TransportError> {
    let Some(admitted) = metrics.admit(limits.max_connections) else {
        if !listener.try_refuse()? {
            return Ok(None);
        }
        metrics.closed(crate::Closed::Limit);
        return Ok(Some(Admission::Refused));
    };
    Ok(listener
        .try_accept_with(pool, config, shm_pool)?
        .map(|accepted| Admission::Admitted(accepted, admitted)))
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            max_connections: 4096,
            idle_timeout: None,
        }
    }
}

/// Why a handshake that ended in `e` ended: past its deadline (TLS's or shared memory's
/// timeout), or failed.
pub(crate) fn handshake_end(e: &ferry_transport::TransportError) -> crate::Closed {
    let timed_out = match e {
        _ if matches!(
            ferry_net::TlsError::of(e),
            Some(ferry_net::TlsError::HandshakeTimeout(_))
        ) =>
        {
            true
        }
        ferry_transport::TransportError::Io { source, .. } => source.kind() == std::io::ErrorKind::TimedOut,
        _ => false,
    };
    if timed_out {
        crate::Closed::HandshakeTimeout
    } else {
        crate::Closed::HandshakeFailed
    }
}
