//! What an RPC frame means: the transport's [`Meta`] (method id in `kind`, call id in
//! `request_id`, and the flags below) and, for control frames, a small raw payload. Every frame
//! from the peer goes through [`parse`], which validates it before anything uses it.
//!
//! ```text
//! flags   frame        payload (raw bytes)                           sent by
//! 0       request      the request message (any payload)             client
//! 8       deadline     u64 LE: microseconds of budget left           client, before its request
//! 4       cancel       empty                                         client
//! 1       response     the response message (any payload)            server
//! 1|2     status       u8 code, then the message (UTF-8)             server, instead of a response
//! ```
//!
//! The deadline is a relative budget, as gRPC's `grpc-timeout` is: the two sides' clocks are
//! never compared. A call with no deadline sends no deadline frame.

use std::time::Duration;

use ferry_transport::Meta;

use crate::status::{Code, Status};

/// Flag: the frame answers a call.
pub const RESPONSE: u8 = 1;
/// Flag (with [`RESPONSE`]): the answer is a status, not a response message.
pub const STATUS: u8 = 2;
/// Flag: the client cancels a call.
pub const CANCEL: u8 = 4;
/// Flag: the budget of the call whose request follows.
pub const DEADLINE: u8 = 8;

/// The longest status message accepted from a peer, in bytes.
pub const MAX_STATUS_MESSAGE: usize = 4096;

/// A frame that breaks the RPC protocol. Names what was wrong; the connection should close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// Flags no frame has.
    #[error("call {id}: unknown flag combination {flags:#04x}")]
    Flags {
        /// The call id.
        id: u64,
        /// The flags.
        flags: u8,
    },
    /// A control frame whose payload is a Ferry message, or of the wrong length.
    #[error("call {id}: {frame} frame payload of {len:?} bytes (expected {expected})")]
    Payload {
        /// The call id.
        id: u64,
        /// Which control frame.
        frame: &'static str,
        /// Its raw length (`None`: a Ferry message).
        len: Option<usize>,
        /// What it should be.
        expected: &'static str,
    },
    /// A status code outside 1..=16 (0, OK, is never sent as a status).
    #[error("call {id}: status code {code}")]
    Code {
        /// The call id.
        id: u64,
        /// The code byte.
        code: u8,
    },
    /// A status message that is not UTF-8.
    #[error("call {id}: status message is not UTF-8 (valid up to byte {valid_up_to})")]
    StatusText {
        /// The call id.
        id: u64,
        /// Where the bad text starts.
        valid_up_to: usize,
    },
    /// A frame this side never receives (a request sent to a client, a response to a server).
    #[error("call {id}: a {frame} frame sent to the {side}")]
    Direction {
        /// The call id.
        id: u64,
        /// What arrived.
        frame: &'static str,
        /// Which side received it.
        side: &'static str,
    },
    /// A request whose id is already in progress, or a deadline given twice.
    #[error("call {id}: id already in use")]
    DuplicateId {
        /// The call id.
        id: u64,
    },
    /// Deadlines for more calls than the server admits, with no requests.
    #[error("call {id}: more pending deadlines than the server admits calls ({max})")]
    TooManyDeadlines {
        /// The call id.
        id: u64,
        /// The limit.
        max: usize,
    },
    /// A response whose method is not the call's.
    #[error("call {id}: response for method {got}, the call was to {expected}")]
    Method {
        /// The call id.
        id: u64,
        /// The method the call was to.
        expected: u16,
        /// The method the response names.
        got: u16,
    },
}

/// A validated RPC frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A request of `method` (its payload is the request message).
    Request {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
    },
    /// The budget of call `id`, whose request follows.
    Deadline {
        /// Call id.
        id: u64,
        /// Time left when it was sent.
        budget: Duration,
    },
    /// The client gave up on call `id`.
    Cancel {
        /// Call id.
        id: u64,
    },
    /// The response to call `id` (its payload is the response message).
    Response {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
    },
    /// Call `id` failed.
    Failed {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
        /// Why.
        status: Status,
    },
}

/// Validates a frame: `meta` as received, `raw` the payload of a raw frame (`None` for a Ferry
/// message, whose bytes only the handler reads).
pub fn parse(meta: Meta, raw: Option<&[u8]>) -> Result<Frame, RpcError> {
    let id = meta.request_id;
    let payload = |frame, expected, ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(RpcError::Payload {
                id,
                frame,
                len: raw.map(<[u8]>::len),
                expected,
            })
        }
    };
    match meta.flags {
        0 => Ok(Frame::Request {
            method: meta.kind,
            id,
        }),
        RESPONSE => Ok(Frame::Response {
            method: meta.kind,
            id,
        }),
        DEADLINE => {
            payload("deadline", "8 raw bytes", raw.is_some_and(|b| b.len() == 8))?;
            let b: [u8; 8] = raw.and_then(|b| b.try_into().ok()).expect("checked");
            Ok(Frame::Deadline {
                id,
                budget: Duration::from_micros(u64::from_le_bytes(b)),
            })
        }
        CANCEL => {
            payload("cancel", "0 raw bytes", raw.is_some_and(<[u8]>::is_empty))?;
            Ok(Frame::Cancel { id })
        }
        f if f == RESPONSE | STATUS => {
            let ok = raw.is_some_and(|b| !b.is_empty() && b.len() <= 1 + MAX_STATUS_MESSAGE);
            payload("status", "1 code byte and at most 4096 bytes of text", ok)?;
            let b = raw.expect("checked");
            let code = match Code::from_u8(b[0]) {
                Some(Code::Ok) | None => return Err(RpcError::Code { id, code: b[0] }),
                Some(code) => code,
            };
            let message = std::str::from_utf8(&b[1..]).map_err(|e| RpcError::StatusText {
                id,
                valid_up_to: e.valid_up_to(),
            })?;
            Ok(Frame::Failed {
                method: meta.kind,
                id,
                status: Status::new(code, message),
            })
        }
        flags => Err(RpcError::Flags { id, flags }),
    }
}

/// The payload of a status frame: the code, then the message, cut to [`MAX_STATUS_MESSAGE`]
/// bytes at a character boundary.
pub fn status_payload(status: &Status) -> Vec<u8> {
    let mut end = status.message.len().min(MAX_STATUS_MESSAGE);
    while !status.message.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Vec::with_capacity(1 + end);
    out.push(status.code as u8);
    out.extend_from_slice(&status.message.as_bytes()[..end]);
    out
}

/// The payload of a deadline frame (microseconds, saturating).
pub fn deadline_payload(budget: Duration) -> [u8; 8] {
    u64::try_from(budget.as_micros())
        .unwrap_or(u64::MAX)
        .to_le_bytes()
}
