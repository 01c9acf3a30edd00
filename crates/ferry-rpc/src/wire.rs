//! What an RPC frame means: the transport's [`Meta`] (method id in `kind`, call id in
//! `request_id`, and the flags below) and, for control frames, a small raw payload. Every frame
//! from the peer goes through [`parse`], which validates it before anything uses it.
//!
//! ```text
//! flags     frame        payload (raw bytes)                         sent by
//! 8         deadline     u64 LE: microseconds of budget left         client, before its request or open
//! 16        metadata     metadata (below)                            client, before its request or open
//! 0         request      the request message (any payload)           client: a unary call
//! 32        open         empty                                       client: a streaming call
//! 64        message      a stream's message (any payload)            client, between open and end
//! 128       end          empty                                       client: no more messages (half-close)
//! 4         cancel       empty                                       client
//! 32|64     window       u32 LE messages, u32 LE bytes               client: more credit for the server's messages
//! 1|16      headers      metadata                                    server, before its first message or answer
//! 1|64      message      a stream's message (any payload)            server
//! 1|32|64   window       u32 LE messages, u32 LE bytes               server: more credit for the client's messages
//! 1|2|16    trailers     metadata                                    server, just before the response or status
//! 1         response     the response message (any payload)         server: ends a unary call
//! 1|2       status       u8 code, then the message (UTF-8)           server: ends a call (OK ends a stream only)
//! ```
//!
//! The deadline is a relative budget, as gRPC's `grpc-timeout` is: the two sides' clocks are
//! never compared. A call with no deadline sends no deadline frame. It covers a stream whole.
//!
//! A streaming call (client-, server- or bidirectional streaming: the session does not tell
//! them apart) is opened, carries messages each way, is half-closed by the client's end frame
//! and ended by the server's status, OK or not. Each direction of a stream has a window: the
//! receiver's credit in messages and bytes, [`STREAM_WINDOW_MESSAGES`] and
//! [`STREAM_WINDOW_BYTES`] at the open, grown by window frames as the receiver consumes. A
//! message may be sent while both are positive (its length may overdraw the bytes), so a
//! receiver holds at most a window and one message per stream. A message past the window
//! breaks the stream (not the connection): the server ends it with `INTERNAL`, the client
//! cancels it.
//!
//! Metadata (gRPC's request headers, and the server's headers and trailers) goes in one frame
//! each, only when there is some. Its payload:
//!
//! ```text
//! u16 LE  entry count                       at most MAX_METADATA_ENTRIES (64)
//! then per entry:
//! u16 LE  key length, then the key          non-empty, ASCII [0-9a-z_.-] (gRPC's rule)
//! u32 LE  value length, then the value      any bytes
//! ```
//!
//! The whole payload is at most [`MAX_METADATA_BYTES`] (8 KiB), with no byte after the last
//! entry. A second frame of a kind for a call, or one out of its place, breaks the protocol.

use std::time::Duration;

use ferry_transport::Meta;

use crate::metadata::{Metadata, MetadataError};
use crate::status::{Code, Status};

pub use crate::metadata::{MAX_METADATA_BYTES, MAX_METADATA_ENTRIES};

/// Flag: the frame answers a call.
pub const RESPONSE: u8 = 1;
/// Flag (with [`RESPONSE`]): the answer is a status, not a response message.
pub const STATUS: u8 = 2;
/// Flag: the client cancels a call.
pub const CANCEL: u8 = 4;
/// Flag: the budget of the call whose request follows.
pub const DEADLINE: u8 = 8;
/// Flag: the metadata of the call whose request (alone) follows, or the server's headers (with
/// [`RESPONSE`]) or trailers (with [`RESPONSE`] and [`STATUS`]).
pub const METADATA: u8 = 16;
/// Flag: the client opens a streaming call (with [`MESSAGE`]: a window frame).
pub const OPEN: u8 = 32;
/// Flag: a message of a stream (with [`OPEN`]: a window frame).
pub const MESSAGE: u8 = 64;
/// Flag: the client sends no more messages on a stream.
pub const END: u8 = 128;
/// Flags of a window frame (with [`RESPONSE`] when the server sends it).
pub const WINDOW: u8 = OPEN | MESSAGE;

/// Messages a stream's receiver takes at the open, each way, before granting more.
pub const STREAM_WINDOW_MESSAGES: u32 = 32;
/// Bytes a stream's receiver takes at the open, each way, before granting more.
pub const STREAM_WINDOW_BYTES: u32 = 1 << 20;

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
    /// A status code outside 0..=16.
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
    /// A metadata frame whose payload does not decode or breaks a limit.
    #[error("call {id}: {frame} frame: {error}")]
    Metadata {
        /// The call id.
        id: u64,
        /// Which frame: `metadata` (the client's) or `response metadata` (the server's).
        frame: &'static str,
        /// What is wrong.
        #[source]
        error: MetadataError,
    },
    /// A second metadata frame for a call, or one after its request (or its answer).
    #[error("call {id}: a second {frame} frame, or one after the call's {after}")]
    DuplicateMetadata {
        /// The call id.
        id: u64,
        /// Which frame.
        frame: &'static str,
        /// What it came after: `request` or `answer`.
        after: &'static str,
    },
    /// Metadata for more calls than the server admits, with no requests.
    #[error("call {id}: more pending metadata frames than the server admits calls ({max})")]
    TooManyMetadata {
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
    /// The metadata of call `id`, whose request follows.
    Metadata {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
        /// The entries.
        metadata: Metadata,
    },
    /// The client opens streaming call `id` to `method`.
    Open {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
    },
    /// A message of stream `id` (its payload is the message): the client's, or the server's
    /// (`response`).
    Message {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
        /// Sent by the server.
        response: bool,
    },
    /// The client sends no more messages on stream `id`.
    End {
        /// Call id.
        id: u64,
    },
    /// More credit for the receiver of this frame to send on stream `id`: the client's grant,
    /// or the server's (`response`).
    Window {
        /// Call id.
        id: u64,
        /// Sent by the server.
        response: bool,
        /// Messages granted.
        messages: u32,
        /// Bytes granted.
        bytes: u32,
    },
    /// The server's headers for call `id`, before its first message or its answer.
    Headers {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
        /// The entries.
        metadata: Metadata,
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
    /// The server's trailers for call `id`, whose response or status follows.
    Trailers {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
        /// The entries.
        metadata: Metadata,
    },
    /// Call `id` ended with a status: a failure, or OK ending a stream.
    Status {
        /// Method id.
        method: u16,
        /// Call id.
        id: u64,
        /// The status.
        status: Status,
    },
}

/// Whether a frame with `flags` carries a message (a request, a response or a stream's
/// message: any payload, read by the handler or caller) rather than a raw control payload.
pub fn carries_message(flags: u8) -> bool {
    matches!(flags, 0 | RESPONSE | MESSAGE) || flags == RESPONSE | MESSAGE
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
        METADATA => Ok(Frame::Metadata {
            method: meta.kind,
            id,
            metadata: parse_metadata(id, "metadata", raw)?,
        }),
        f if f == RESPONSE | METADATA => Ok(Frame::Headers {
            method: meta.kind,
            id,
            metadata: parse_metadata(id, "headers", raw)?,
        }),
        f if f == RESPONSE | STATUS | METADATA => Ok(Frame::Trailers {
            method: meta.kind,
            id,
            metadata: parse_metadata(id, "trailers", raw)?,
        }),
        OPEN => {
            payload("open", "0 raw bytes", raw.is_some_and(<[u8]>::is_empty))?;
            Ok(Frame::Open {
                method: meta.kind,
                id,
            })
        }
        END => {
            payload("end", "0 raw bytes", raw.is_some_and(<[u8]>::is_empty))?;
            Ok(Frame::End { id })
        }
        MESSAGE => Ok(Frame::Message {
            method: meta.kind,
            id,
            response: false,
        }),
        f if f == RESPONSE | MESSAGE => Ok(Frame::Message {
            method: meta.kind,
            id,
            response: true,
        }),
        f if f == WINDOW || f == RESPONSE | WINDOW => {
            payload("window", "8 raw bytes", raw.is_some_and(|b| b.len() == 8))?;
            let b = raw.expect("checked");
            let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
            Ok(Frame::Window {
                id,
                response: f & RESPONSE != 0,
                messages: word(0),
                bytes: word(4),
            })
        }
        f if f == RESPONSE | STATUS => {
            let ok = raw.is_some_and(|b| !b.is_empty() && b.len() <= 1 + MAX_STATUS_MESSAGE);
            payload("status", "1 code byte and at most 4096 bytes of text", ok)?;
            let b = raw.expect("checked");
            let Some(code) = Code::from_u8(b[0]) else {
                return Err(RpcError::Code { id, code: b[0] });
            };
            let message = std::str::from_utf8(&b[1..]).map_err(|e| RpcError::StatusText {
                id,
                valid_up_to: e.valid_up_to(),
            })?;
            Ok(Frame::Status {
                method: meta.kind,
                id,
                status: Status::new(code, message),
            })
        }
        flags => Err(RpcError::Flags { id, flags }),
    }
}

/// Validates a metadata frame's payload (`raw`: `None` for a Ferry message, refused): the
/// limits, every key, no trailing byte.
pub fn parse_metadata(id: u64, frame: &'static str, raw: Option<&[u8]>) -> Result<Metadata, RpcError> {
    let Some(bytes) = raw else {
        return Err(RpcError::Payload {
            id,
            frame,
            len: None,
            expected: "raw bytes",
        });
    };
    Metadata::decode(bytes).map_err(|error| RpcError::Metadata { id, frame, error })
}

/// The frame carrying call `id`'s `metadata` with `flags` ([`METADATA`]: the client's;
/// `RESPONSE | METADATA`: the server's headers; `RESPONSE | STATUS | METADATA`: its trailers):
/// its `Meta` and payload.
pub fn metadata_frame(method: u16, id: u64, flags: u8, metadata: &Metadata) -> (Meta, Vec<u8>) {
    let meta = Meta {
        kind: method,
        flags,
        request_id: id,
    };
    (meta, metadata.encode())
}

/// The payload of a window frame granting `messages` and `bytes`.
pub fn window_payload(messages: u32, bytes: u32) -> [u8; 8] {
    let mut out = [0; 8];
    out[..4].copy_from_slice(&messages.to_le_bytes());
    out[4..].copy_from_slice(&bytes.to_le_bytes());
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(flags: u8) -> Meta {
        Meta {
            kind: 7,
            flags,
            request_id: 3,
        }
    }

    fn sample() -> Metadata {
        let mut md = Metadata::new();
        md.append("x-user", "ann").unwrap();
        md.append("trace-bin", vec![0, 1, 255]).unwrap();
        md.append("x-user", "bob").unwrap();
        md
    }

    /// The bytes of [`sample`], written out by hand.
    const SAMPLE: &[u8] = &[
        3, 0, // three entries
        6, 0, b'x', b'-', b'u', b's', b'e', b'r', 3, 0, 0, 0, b'a', b'n', b'n', //
        9, 0, b't', b'r', b'a', b'c', b'e', b'-', b'b', b'i', b'n', 3, 0, 0, 0, 0, 1, 255, //
        6, 0, b'x', b'-', b'u', b's', b'e', b'r', 3, 0, 0, 0, b'b', b'o', b'b',
    ];

    fn metadata_error(raw: &[u8]) -> MetadataError {
        match parse(meta(METADATA), Some(raw)) {
            Err(RpcError::Metadata {
                id: 3,
                frame: "metadata",
                error,
            }) => error,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn metadata_round_trips_both_ways() {
        let md = sample();
        let (m, payload) = metadata_frame(7, 3, METADATA, &md);
        assert_eq!(m, meta(METADATA));
        assert_eq!(payload, SAMPLE);
        assert_eq!(
            parse(m, Some(SAMPLE)),
            Ok(Frame::Metadata {
                method: 7,
                id: 3,
                metadata: md.clone()
            })
        );
        let (m, payload) = metadata_frame(7, 3, RESPONSE | METADATA, &md);
        assert_eq!(m, meta(RESPONSE | METADATA));
        assert_eq!(
            parse(m, Some(&payload)),
            Ok(Frame::Headers {
                method: 7,
                id: 3,
                metadata: md.clone()
            })
        );
        let (m, payload) = metadata_frame(7, 3, RESPONSE | STATUS | METADATA, &md);
        assert_eq!(
            parse(m, Some(&payload)),
            Ok(Frame::Trailers {
                method: 7,
                id: 3,
                metadata: md
            })
        );
        // No entry at all is well formed (senders send nothing instead).
        assert_eq!(
            parse(meta(METADATA), Some(&[0, 0])),
            Ok(Frame::Metadata {
                method: 7,
                id: 3,
                metadata: Metadata::new()
            })
        );
    }

    #[test]
    fn metadata_as_a_ferry_message_is_refused() {
        assert_eq!(
            parse(meta(RESPONSE | METADATA), None),
            Err(RpcError::Payload {
                id: 3,
                frame: "headers",
                len: None,
                expected: "raw bytes"
            })
        );
    }

    #[test]
    fn metadata_truncated_anywhere_is_refused() {
        for cut in 0..SAMPLE.len() {
            let err = metadata_error(&SAMPLE[..cut]);
            assert!(
                matches!(err, MetadataError::Truncated { len, .. } if len == cut),
                "{cut}: {err}"
            );
        }
        assert_eq!(
            metadata_error(&SAMPLE[..1]),
            MetadataError::Truncated {
                entry: 0,
                what: "count",
                len: 1
            }
        );
        assert_eq!(
            metadata_error(&SAMPLE[..20]),
            MetadataError::Truncated {
                entry: 1,
                what: "key",
                len: 20
            }
        );
        // A value length past the end: refused before anything is allocated for it.
        let mut huge = vec![1, 0, 1, 0, b'k'];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            metadata_error(&huge),
            MetadataError::Truncated {
                entry: 0,
                what: "value",
                len: 9
            }
        );
    }

    #[test]
    fn metadata_trailing_bytes_are_refused() {
        let mut raw = SAMPLE.to_vec();
        raw.push(0);
        assert_eq!(
            metadata_error(&raw),
            MetadataError::Trailing { count: 3, extra: 1 }
        );
    }

    #[test]
    fn metadata_bad_keys_are_refused() {
        assert_eq!(
            metadata_error(&[1, 0, 0, 0, 0, 0, 0, 0]),
            MetadataError::EmptyKey { entry: 0 }
        );
        let mut upper = SAMPLE.to_vec();
        upper[4] = b'X';
        assert_eq!(
            metadata_error(&upper),
            MetadataError::KeyByte {
                entry: 0,
                byte: b'X',
                offset: 0
            }
        );
        let mut colon = SAMPLE.to_vec();
        colon[19] = b':';
        assert_eq!(
            metadata_error(&colon),
            MetadataError::KeyByte {
                entry: 1,
                byte: b':',
                offset: 0
            }
        );
        let mut high = SAMPLE.to_vec();
        high[5] = 0xc3;
        assert!(matches!(
            metadata_error(&high),
            MetadataError::KeyByte {
                entry: 0,
                byte: 0xc3,
                offset: 1
            }
        ));
    }

    #[test]
    fn metadata_limits_are_enforced() {
        // 65 entries of a one-byte key and no value: small, but too many.
        let mut many = vec![65, 0];
        for _ in 0..65 {
            many.extend_from_slice(&[1, 0, b'k', 0, 0, 0, 0]);
        }
        assert_eq!(
            metadata_error(&many),
            MetadataError::TooManyEntries {
                count: 65,
                max: MAX_METADATA_ENTRIES
            }
        );
        // 64 is the limit, and fine.
        many[0] = 64;
        many.truncate(2 + 64 * 7);
        assert!(parse(meta(METADATA), Some(&many)).is_ok());
        // One entry whose value makes the payload one byte too long.
        let value = MAX_METADATA_BYTES - 2 - 2 - 1 - 4 + 1;
        let mut big = vec![1, 0, 1, 0, b'k'];
        big.extend_from_slice(&(value as u32).to_le_bytes());
        big.resize(big.len() + value, b'v');
        assert_eq!(
            metadata_error(&big),
            MetadataError::TooLarge {
                len: MAX_METADATA_BYTES + 1,
                max: MAX_METADATA_BYTES
            }
        );
        big.pop();
        big[5..9].copy_from_slice(&((value - 1) as u32).to_le_bytes());
        assert!(parse(meta(METADATA), Some(&big)).is_ok());
    }

    #[test]
    fn metadata_flags_with_others_are_unknown() {
        for flags in [
            METADATA | DEADLINE,
            METADATA | CANCEL,
            METADATA | OPEN,
            END | RESPONSE,
        ] {
            assert_eq!(
                parse(meta(flags), Some(SAMPLE)),
                Err(RpcError::Flags { id: 3, flags })
            );
        }
    }

    #[test]
    fn stream_frames_parse_and_check_their_payloads() {
        assert_eq!(parse(meta(OPEN), Some(&[])), Ok(Frame::Open { method: 7, id: 3 }));
        assert_eq!(parse(meta(END), Some(&[])), Ok(Frame::End { id: 3 }));
        assert_eq!(
            parse(meta(RESPONSE | MESSAGE), None),
            Ok(Frame::Message {
                method: 7,
                id: 3,
                response: true
            })
        );
        assert_eq!(
            parse(meta(WINDOW), Some(&window_payload(5, 70_000))),
            Ok(Frame::Window {
                id: 3,
                response: false,
                messages: 5,
                bytes: 70_000
            })
        );
        for (flags, raw, frame) in [
            (OPEN, Some(&[1u8][..]), "open"),
            (OPEN, None, "open"),
            (END, Some(&[0u8; 2][..]), "end"),
            (RESPONSE | WINDOW, Some(&[0u8; 7][..]), "window"),
            (WINDOW, None, "window"),
        ] {
            assert!(
                matches!(parse(meta(flags), raw), Err(RpcError::Payload { frame: f, .. }) if f == frame),
                "{flags:#x}"
            );
        }
    }

    #[test]
    fn an_ok_status_parses_and_codes_past_16_do_not() {
        assert_eq!(
            parse(meta(RESPONSE | STATUS), Some(&[0])),
            Ok(Frame::Status {
                method: 7,
                id: 3,
                status: Status::new(Code::Ok, "")
            })
        );
        assert_eq!(
            parse(meta(RESPONSE | STATUS), Some(&[17, b'x'])),
            Err(RpcError::Code { id: 3, code: 17 })
        );
    }
}
