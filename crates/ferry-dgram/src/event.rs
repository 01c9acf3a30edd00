//! What an endpoint hands its driver and its application: transmits, events, errors.

use std::net::SocketAddr;

use ferry_buf::{PoolError, SharedBuf};
use ferry_transport::Meta;
use thiserror::Error;

use crate::packet::{Header, MAX_HEADER_LEN, SessionId};

/// One datagram to send: the header bytes and, for data, a reference into the message's
/// buffer, so a driver can gather the two (`sendmsg` with two iovecs, a NIC descriptor pair)
/// without copying the payload.
#[derive(Debug, Clone)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    header: [u8; MAX_HEADER_LEN],
    header_len: usize,
    payload: Option<SharedBuf>,
}

impl Transmit {
    pub(crate) fn new(destination: SocketAddr, header: &Header, payload: Option<SharedBuf>) -> Transmit {
        let mut bytes = [0; MAX_HEADER_LEN];
        let header_len = header
            .encode(&mut bytes)
            .expect("every header fits MAX_HEADER_LEN and the session places meta on index 0");
        Transmit {
            destination,
            header: bytes,
            header_len,
            payload,
        }
    }

    /// The header bytes (the whole datagram for every type but data).
    pub fn header(&self) -> &[u8] {
        &self.header[..self.header_len]
    }

    /// The payload: a slice of the message's pool buffer (empty for non-data packets).
    pub fn payload(&self) -> &[u8] {
        self.payload.as_deref().unwrap_or_default()
    }

    /// The datagram's length.
    pub fn len(&self) -> usize {
        self.header_len + self.payload().len()
    }

    /// Never: every packet has a header.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Why a session ended without the application asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The peer started again (a new epoch): its state, and so this session's, is gone.
    #[error("the peer restarted")]
    PeerRestarted,
    /// The peer answered with a Reset: it has no such session.
    #[error("the peer reset the session")]
    PeerReset,
    /// [`Config::max_timeouts`](crate::Config::max_timeouts) timeouts passed without progress.
    #[error("the peer stopped answering")]
    Unresponsive,
}

/// What happened, for the application.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// A session is ready: the Accept arrived (client) or a Connect was accepted (server).
    Connected {
        /// The session.
        session: SessionId,
        /// Its peer.
        peer: SocketAddr,
    },
    /// A whole message, in send order, exactly once.
    Message {
        /// The session it came on.
        session: SessionId,
        /// Its meta.
        meta: Meta,
        /// Its bytes, reassembled in place in one pool buffer.
        data: SharedBuf,
    },
    /// The peer restarted or reset the session; it is gone.
    SessionReset {
        /// The session.
        session: SessionId,
        /// Why.
        error: SessionError,
        /// The metas of messages sent and not wholly acknowledged: they failed (they may or
        /// may not have been delivered).
        failed: Vec<Meta>,
    },
    /// The peer stopped answering; the session is gone.
    SessionClosed {
        /// The session.
        session: SessionId,
        /// Why ([`SessionError::Unresponsive`]).
        error: SessionError,
        /// The metas of messages sent and not wholly acknowledged.
        failed: Vec<Meta>,
    },
}

/// Why [`Endpoint::send`](crate::Endpoint::send) refused a message. Nothing was queued.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// No such session (never opened, or reset or closed since).
    #[error("no session {0:?}")]
    UnknownSession(SessionId),
    /// `window` messages are in flight: wait for one to be acknowledged.
    #[error("window full: {window} messages in flight")]
    WindowFull {
        /// The configured window.
        window: usize,
    },
    /// Longer than [`Config::max_message_len`](crate::Config::max_message_len).
    #[error("message of {len} bytes exceeds max_message_len {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The limit.
        max: u32,
    },
    /// Copying the message into the pool failed.
    #[error(transparent)]
    Pool(#[from] PoolError),
}

/// Why [`Endpoint::connect`](crate::Endpoint::connect) refused.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// [`Config::max_sessions`](crate::Config::max_sessions) sessions exist.
    #[error("session limit of {0} reached")]
    SessionLimit(usize),
}
