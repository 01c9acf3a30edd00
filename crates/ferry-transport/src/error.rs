//! Errors: one enum for frames (or protocol units) read from a peer, one for everything a
//! connection of either transport can do.

use std::io;

use ferry_buf::PoolError;
use ferry_wire::EncodeError;

/// A frame header (TCP) or protocol unit (shared memory) from the peer that cannot be accepted.
/// The connection cannot resynchronise after one, so it closes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The version byte is not the one the transport speaks.
    #[error("frame version {found} (only 1 is understood)")]
    Version {
        /// The version byte received.
        found: u8,
    },
    /// The peer broke the transport's protocol (shared memory: a ring entry, block preamble or
    /// message header that cannot be accepted); the offset of the error says where.
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
    /// The payload length exceeds the configured limit.
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// The length the header announced.
        len: usize,
        /// The configured limit (`max_frame_len`).
        max: usize,
    },
    /// The payload would pass the receive budget that frames in progress share over a
    /// server's connections (TCP: `ferry_net::FrameBudget`).
    #[error(
        "frame of {len} bytes would pass the receive budget ({in_use} of {limit} bytes held by frames in progress)"
    )]
    OverBudget {
        /// The length the header announced.
        len: usize,
        /// Bytes the frames in progress held.
        in_use: usize,
        /// The budget.
        limit: usize,
    },
}

/// What a connection operation can fail with. Errors of the socket and from the peer close
/// the connection (later calls return [`TransportError::Poisoned`]); [`TransportError::WouldBlock`], and
/// the errors about one outgoing frame ([`TransportError::TooLong`], [`TransportError::Encode`],
/// [`TransportError::Pool`] while queueing), leave it usable with nothing queued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A non-blocking (`try_*`) call could not proceed; retry when the socket is ready.
    #[error("operation would block")]
    WouldBlock,
    /// The peer closed the stream between frames.
    #[error("connection closed by peer")]
    Closed,
    /// The peer closed the stream inside a frame.
    #[error("connection closed by peer {received} bytes into a frame of {expected} (header included)")]
    Truncated {
        /// Bytes of the frame received, header included.
        received: usize,
        /// Bytes the frame needed, header included.
        expected: usize,
    },
    /// The peer sent a frame that cannot be accepted; `offset` is its position in the stream.
    #[error("malformed frame at stream offset {offset}: {error}")]
    Frame {
        /// Byte offset of the frame header in the received stream.
        offset: u64,
        /// What is wrong with it.
        error: FrameError,
    },
    /// A frame to send is larger than the configured limit (`max_frame_len`).
    #[error("outgoing frame of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// Payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The message could not be serialized.
    #[error("serializing the message: {0}")]
    Encode(#[from] EncodeError),
    /// The pool could not supply a staging or receive buffer.
    #[error("buffer pool: {0}")]
    Pool(#[from] PoolError),
    /// A socket or io_uring call failed.
    #[error("{op}: {source}")]
    Io {
        /// The call that failed.
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The configuration does not fit the pool.
    #[error("configuration: {0}")]
    Config(String),
    /// The connection already failed or was shut down.
    #[error("connection is closed after an earlier error")]
    Poisoned,
}

impl TransportError {
    /// An OS error from `op` (`WouldBlock` becomes [`TransportError::WouldBlock`]).
    pub fn io(op: &'static str, source: io::Error) -> TransportError {
        if source.kind() == io::ErrorKind::WouldBlock {
            TransportError::WouldBlock
        } else {
            TransportError::Io { op, source }
        }
    }
}
