//! Status codes: gRPC's numbering, so that a gateway maps them one to one.

use crate::metadata::Metadata;

/// What happened to a call. The numbers are gRPC's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Code {
    /// Success (never sent as a status frame: a response message means OK).
    Ok = 0,
    /// The caller cancelled the call.
    Cancelled = 1,
    /// An error with no better code.
    Unknown = 2,
    /// The request is malformed (it did not decode, or a field is invalid).
    InvalidArgument = 3,
    /// The deadline passed before the call completed.
    DeadlineExceeded = 4,
    /// A requested entity was not found.
    NotFound = 5,
    /// The entity a call would create exists.
    AlreadyExists = 6,
    /// The caller may not do this.
    PermissionDenied = 7,
    /// A limit was reached (the server's window of calls, memory).
    ResourceExhausted = 8,
    /// The system is not in the state the call needs.
    FailedPrecondition = 9,
    /// The call was aborted (a conflict).
    Aborted = 10,
    /// A value is out of its valid range.
    OutOfRange = 11,
    /// No such method on this server.
    Unimplemented = 12,
    /// A bug on the server (a handler that panicked).
    Internal = 13,
    /// The connection is gone or the server is shutting down; retrying may work.
    Unavailable = 14,
    /// Unrecoverable data loss.
    DataLoss = 15,
    /// The caller is not authenticated.
    Unauthenticated = 16,
}

impl Code {
    /// The code numbered `n`, if any.
    pub const fn from_u8(n: u8) -> Option<Code> {
        use Code::*;
        Some(match n {
            0 => Ok,
            1 => Cancelled,
            2 => Unknown,
            3 => InvalidArgument,
            4 => DeadlineExceeded,
            5 => NotFound,
            6 => AlreadyExists,
            7 => PermissionDenied,
            8 => ResourceExhausted,
            9 => FailedPrecondition,
            10 => Aborted,
            11 => OutOfRange,
            12 => Unimplemented,
            13 => Internal,
            14 => Unavailable,
            15 => DataLoss,
            16 => Unauthenticated,
            _ => return None,
        })
    }

    /// The code's name as gRPC spells it: `OK`, `CANCELLED`, ..., `UNAUTHENTICATED`.
    pub const fn name(self) -> &'static str {
        use Code::*;
        match self {
            Ok => "OK",
            Cancelled => "CANCELLED",
            Unknown => "UNKNOWN",
            InvalidArgument => "INVALID_ARGUMENT",
            DeadlineExceeded => "DEADLINE_EXCEEDED",
            NotFound => "NOT_FOUND",
            AlreadyExists => "ALREADY_EXISTS",
            PermissionDenied => "PERMISSION_DENIED",
            ResourceExhausted => "RESOURCE_EXHAUSTED",
            FailedPrecondition => "FAILED_PRECONDITION",
            Aborted => "ABORTED",
            OutOfRange => "OUT_OF_RANGE",
            Unimplemented => "UNIMPLEMENTED",
            Internal => "INTERNAL",
            Unavailable => "UNAVAILABLE",
            DataLoss => "DATA_LOSS",
            Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

/// A code and a message for people: the outcome of a failed call, with the trailers the server
/// sent with it (e.g. `grpc-status-details-bin`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct Status {
    /// What happened.
    pub code: Code,
    /// Why, in words.
    pub message: String,
    /// The failed call's trailers (empty if none). A handler that returns a status with
    /// metadata sends it as the trailers, instead of what it set with `Call::set_trailers`;
    /// a client gets here the trailers the server sent with the status.
    pub metadata: Metadata,
}

impl Status {
    /// A status of `code` saying `message`, with no metadata.
    pub fn new(code: Code, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
            metadata: Metadata::new(),
        }
    }

    /// The same status with `metadata`.
    pub fn with_metadata(self, metadata: Metadata) -> Status {
        Status { metadata, ..self }
    }
}

/// The status a request that does not decode gets: the error names the field and offset.
pub(crate) fn invalid_request(e: &ferry_wire::DecodeError) -> Status {
    Status::new(Code::InvalidArgument, format!("request does not decode: {e}"))
}

/// The status a call gets when its request is refused by the transport alone (see
/// [`frame_alone`](crate::conn::frame_alone)).
pub(crate) fn unsent_request(e: &ferry_transport::TransportError) -> Status {
    Status::new(Code::InvalidArgument, format!("the request cannot be sent: {e}"))
}

/// The status a call gets when its response is refused by the transport alone (see
/// [`frame_alone`](crate::conn::frame_alone)).
pub(crate) fn unsent_response(e: &ferry_transport::TransportError) -> Status {
    Status::new(Code::Internal, format!("sending the response: {e}"))
}

/// The status a call gets when its response does not decode (the server's bug).
pub(crate) fn bad_response(e: &ferry_wire::DecodeError) -> Status {
    Status::new(Code::Internal, format!("the response does not decode: {e}"))
}
