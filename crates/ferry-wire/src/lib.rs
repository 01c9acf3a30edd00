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
//! types implement [`Encode`] and wrap [`View`]; `ferry-build` will generate them) and NOT the
//! memory pool (that is `ferry-buf`).
//!
//! # Who owns what
//!
//! ```text
//! app data (pool) --HybridBytes::new--> message holds SharedBuf (refcount+1)
//!                                        | write_head: header segment written into the caller's buffer
//!                                        | for_each_zero_copy / zero_copy_bufs: gather entries (refcount+1 per held send)
//! received SharedBuf --View::decode_shared--> views borrow it; View::shared/hybrid clone sub-buffers
//! ```
#![deny(unsafe_code)]

pub mod decode;
pub mod desc;
pub mod dynamic;
pub mod encode;
pub mod hybrid;
pub mod layout;
mod scalar;

pub use decode::{BytesList, DecodeError, DecodeErrorKind, Limits, MessageList, ScalarList, View};
pub use desc::{FieldDesc, Kind, Label, MessageDesc};
pub use dynamic::{DynamicMessage, List, TypeMismatch, Value};
pub use encode::{Encode, EncodeError, FieldValue, Layout, MapEntry, Serialize, Visitor, iovecs, visit_map};
pub use hybrid::{
    Arena, AsHybrid, Context, DEFAULT_THRESHOLD, HybridBytes, HybridStr, IntoHybrid, IntoHybridStr,
};
pub use scalar::Scalar;
