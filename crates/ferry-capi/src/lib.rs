//! Ferry's C library: `libferry_capi.so` / `libferry_capi.a` and `include/ferry.h` (generated
//! from these sources by cbindgen; `tests/header.rs` fails when it is stale).
//!
//! It wraps the Rust implementation and never re-implements the wire format: schemas are
//! `ferry-reflect`'s, messages `ferry-wire`'s `DynamicMessage`, views its `View`, calls
//! `ferry-rpc`'s blocking `Channel`.
//!
//! | object | made by | freed by | notes |
//! |---|---|---|---|
//! | `ferry_pool` | `ferry_pool_new` | `ferry_pool_free` | thread-safe; what it lent stays valid |
//! | `ferry_buf` | `ferry_buf_new` | `ferry_buf_free`, or given to `ferry_msg_set_buf`/`_push_buf` | C fills it; a message references it |
//! | `ferry_schema` | `ferry_schema_load` | `ferry_schema_free` | thread-safe; may go before its types, messages, views |
//! | `ferry_type` | `ferry_schema_type` | `ferry_type_free` | holds its schema |
//! | `ferry_msg` | `ferry_msg_new`, `ferry_msg_new_field` | `ferry_msg_free`, or given to a parent | copies values it is given (not pool buffers) |
//! | `ferry_encoded` | `ferry_msg_encode` | `ferry_encoded_free` | a gather list; holds every buffer it points at |
//! | `ferry_view` | `ferry_view_decode`, `ferry_channel_call`, `ferry_view_msg(_at)` | `ferry_view_free` | reads in place: the decoded bytes (yours), a response frame (its own), or its root's (nested) |
//! | `ferry_channel` | `ferry_channel_open` | `ferry_channel_free` | one thread: the one that opened it |
//!
//! Errors: every call that can fail returns a `ferry_status` (`FERRY_OK` is 0); the details of
//! the last failure on the calling thread (message; a decode error's kind, byte offset and
//! field path; a failed call's gRPC code) are read with `ferry_last_error*`, errno-style, until
//! the next failure on that thread. Every entry point that can fail catches panics
//! (`FERRY_PANIC`); the rest (frees, plain getters) cannot fail, and a panic there would abort,
//! as Rust's `extern "C"` functions do: no unwinding crosses into C.
//!
//! Unsafe code: the entry points are `unsafe extern "C"` functions (C passes raw pointers);
//! their pointers become references only in `ptr.rs` (null-checked), and lifetimes C owns are
//! erased only in `erase.rs`.
//!
//! What it is not: a code generator for C structs (messages are built and read by field number
//! at run time); a streaming RPC client or a server (unary calls only); thread-safe for messages,
//! views or channels.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

mod channel;
mod erase;
mod error;
mod json;
mod msg;
mod pool;
mod ptr;
mod schema;
mod view;

pub use channel::*;
pub use error::{
    ferry_last_error, ferry_last_error_kind, ferry_last_error_offset, ferry_last_error_path,
    ferry_last_error_rpc_code, ferry_status,
};
pub use json::*;
pub use msg::*;
pub use pool::*;
pub use schema::*;
pub use view::*;
