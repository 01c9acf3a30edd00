//! Ferry's wire format, version 1: hybrid field values, the object interface that transports
//! use for serialize-and-send, and validated zero-copy views for decoding.
//!
//! The format is specified in `docs/wire-format.md`. In short, a message is
//!
//! ```text
//! [ header: presence chunks + one 8-byte entry per present field ][ copied data ][ zero-copy data ]
//! \____________________ header segment (one gather entry) _________/ \__ one entry per buffer __/
//! ```
//!
//! This crate is sans-IO: it never touches a socket. It is NOT the schema compiler (message
//! types implement [`Encode`] and [`Message`] and wrap [`View`]; `ferry-build` generates them)
//! and NOT the memory pool (that is `ferry-buf`).
//!
//! # Who owns what
//!
//! ```text
//! app's SharedBuf --&[u8]--> HybridBytes::new: borrows it (no refcount; the borrow keeps it alive)
//! app's SharedBuf --by value--> HybridBytes::from_shared: the message holds a counted reference
//!        | write_head: header segment (headers, scalars, copied values) into the caller's buffer
//!        | for_each_zero_copy: gather entries pointing at the original memory
//!        |   (or write_head_gather: header segment and gather entries in one pass)
//!        | zero_copy_bufs: counted references a send holds until its completion (refcount + 1 each)
//! received SharedBuf --View::decode_shared--> views borrow it; View::shared/hybrid reference it
//! ```
#![forbid(unsafe_code)]

pub mod decode;
pub mod desc;
pub mod dynamic;
pub mod encode;
pub mod hybrid;
pub mod layout;
mod message;
pub mod sample;
mod scalar;

pub use decode::{BytesList, DecodeError, DecodeErrorKind, Limits, MessageList, ScalarList, View};
pub use desc::{FieldDesc, FieldsCell, FieldsError, Kind, Label, MessageDesc};
pub use dynamic::{DynamicMessage, List, TypeMismatch, Value};
pub use encode::{
    Encode, EncodeError, Entries, FieldValue, Header, Layout, MapEntry, Outgoing, Reserved, Shape, Sizes,
    Visitor, VisitorPath, Writer, iovecs, visit_map,
};
pub use hybrid::{
    Arena, AsHybrid, Context, DEFAULT_THRESHOLD, HybridBytes, HybridStr, IntoHybrid, IntoHybridStr,
};
pub use message::{Message, MessageView};
pub use scalar::Scalar;
