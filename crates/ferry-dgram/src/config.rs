//! The endpoint's configuration and its validation.

use std::time::Duration;

use thiserror::Error;

use crate::Timely;
use crate::packet::MAX_HEADER_LEN;

/// The largest credit count: the selective-acknowledgement bitmap covers 64 packets.
pub const MAX_CREDITS: u32 = 64;

/// Endpoint configuration. Both ends of a session should use the same `credits`, `window` and
/// `max_message_len`: a receiver drops (and counts) what exceeds its own, and the sender then
/// recovers by retransmission or, for a message the receiver cannot take, gives the session up.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The largest datagram this endpoint sends or accepts (the UDP payload: header and data).
    /// Default 1472, what a 1500-byte Ethernet MTU leaves after the IPv4 (20) and UDP (8)
    /// headers. A data packet carries `mtu - 73` bytes of message (the largest header,
    /// [`MAX_HEADER_LEN`], is a message's first packet): 1399 by default. The two ends of a
    /// session agree on the smaller of their sizes in the handshake.
    pub mtu: usize,
    /// Packets a session may have sent but not yet acknowledged (eRPC: 32), the cap of the
    /// congestion window too. 1 to [`MAX_CREDITS`]; default 32.
    pub credits: u32,
    /// Messages a session may have in flight (sent, not yet wholly acknowledged) (eRPC: 8).
    /// [`Endpoint::send`](crate::Endpoint::send) refuses more. At least 1.
    pub window: usize,
    /// The longest message sent or accepted. Default 4 MiB; at most what the pool's largest
    /// class holds, and at most 65535 packets.
    pub max_message_len: u32,
    /// Sessions at once; a Connect beyond it is dropped and counted. Default 1024.
    pub max_sessions: usize,
    /// The retransmission timeout before any RTT sample. Default 50 ms.
    pub rto_initial: Duration,
    /// The lower bound of the retransmission timeout. Default 2 ms (a datacenter's RTTs are
    /// tens of microseconds; eRPC uses 5 ms).
    pub rto_min: Duration,
    /// The upper bound, which exponential backoff stops at. Default 500 ms.
    pub rto_max: Duration,
    /// Consecutive timeouts without progress after which the peer is given up and the session
    /// closed ([`Event::SessionClosed`](crate::Event::SessionClosed)). Default 10.
    pub max_timeouts: u32,
    /// Congestion control by the RTT gradient (Timely-style) instead of additive increase;
    /// loss still halves the window. Default `None`: AIMD alone.
    pub timely: Option<Timely>,
    /// Reset packets queued at once (answers to packets for unknown sessions); more are dropped
    /// and counted, so a flood of forged packets cannot make this endpoint a reflector. Default 64.
    pub max_pending_resets: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mtu: 1472,
            credits: 32,
            window: 8,
            max_message_len: 4 << 20,
            max_sessions: 1024,
            rto_initial: Duration::from_millis(50),
            rto_min: Duration::from_millis(2),
            rto_max: Duration::from_millis(500),
            max_timeouts: 10,
            max_pending_resets: 64,
            timely: None,
        }
    }
}

/// A configuration rule broken.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid ferry-dgram configuration: {0}")]
pub struct ConfigError(pub &'static str);

impl Config {
    /// The message bytes one data packet carries.
    pub fn segment_size(&self) -> usize {
        self.mtu.saturating_sub(MAX_HEADER_LEN)
    }

    /// The smallest segment size a peer may ask for: the one that still cuts the longest
    /// message into at most 65535 packets.
    pub(crate) fn min_segment(&self) -> usize {
        (self.max_message_len as usize)
            .div_ceil(usize::from(u16::MAX))
            .max(1)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let seg = self.segment_size();
        if seg == 0 || seg > usize::from(u16::MAX) {
            return Err(ConfigError(
                "mtu must leave 1 to 65535 bytes of payload after the 73-byte header",
            ));
        }
        if seg < self.min_segment() {
            return Err(ConfigError(
                "max_message_len must fit in 65535 packets of mtu's payload",
            ));
        }
        if !(1..=MAX_CREDITS).contains(&self.credits) {
            return Err(ConfigError("credits must be 1 to 64"));
        }
        if self.window == 0 || self.max_sessions == 0 {
            return Err(ConfigError("window and max_sessions must be at least 1"));
        }
        if self.rto_min.is_zero() || self.rto_min > self.rto_max {
            return Err(ConfigError("rto_min must be positive and at most rto_max"));
        }
        if let Some(t) = self.timely
            && !(t.t_low <= t.t_high && t.beta > 0.0 && t.beta <= 1.0)
        {
            return Err(ConfigError("timely needs t_low <= t_high and beta in (0, 1]"));
        }
        if !(self.rto_min..=self.rto_max).contains(&self.rto_initial) {
            return Err(ConfigError("rto_initial must lie between rto_min and rto_max"));
        }
        Ok(())
    }
}
