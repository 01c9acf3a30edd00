//! The interface every Ferry transport implements, so that an event loop, the RPC layer and
//! applications run over TCP (`ferry-net`) or shared memory (`ferry-shm`) unchanged.
//!
//! - [`Meta`]: what a frame says besides its payload (kind, flags, request id);
//!   [`method_id`]: the kind of an RPC method's frames, derived from its name.
//! - [`Payload`]: bytes that are not a Ferry message (another protocol's encoding, a
//!   forwarded frame), sent contiguously or as a copied head plus referenced pool buffers.
//! - [`TransportError`] and [`FrameError`]: one error type for both transports.
//! - [`Transport`] and [`Received`]: sending, blocking and non-blocking receive, readiness,
//!   and reading a received frame in place.
//! - [`Readiness`]: a level-triggered `epoll` set, what every event loop waits on (one
//!   implementation for `ferry-rpc`'s loop and `ferry redis`'s).
//! - [`pin_current_thread`]: thread pinning for the drivers that busy-poll (one implementation
//!   for every crate that pins).
//!
//! # Readiness: one thread, many connections
//!
//! Every transport is [`AsFd`](std::os::fd::AsFd). An event loop registers each
//! connection's descriptor with [`Readiness`] (or tokio's `AsyncFd`) for reading, and when it
//! is readable calls [`Transport::try_recv`] until it returns `Ok(None)`. `Ok(None)` also arms
//! the notification: a transport that buffers frames in user space, or whose peer signals
//! only a receiver that says it is waiting (shared memory), becomes readable again when the
//! next frame arrives only after `try_recv` has returned `None`. So the rule is: drain with
//! `try_recv` before every wait, and the descriptor is level-correct.
//!
//! # Threads
//!
//! A received frame of `ferry-net` is a [`SharedBuf`](ferry_buf::SharedBuf) sub-buffer and is
//! `Send`: it can go to a background handler. A `ferry-shm` frame is `!Send`: its release
//! (the acknowledgement of its block, which returns a credit to the peer) is recorded in the
//! connection's single-threaded state without a lock; handing it to another thread would
//! need an atomic release path. Code generic over [`Transport`] that moves frames between
//! threads states it with a `T::Frame: Send` bound, which the type system then checks.
//!
//! What it is not: a transport (no I/O here), an RPC layer (request ids are carried, not
//! matched), or a codec (`ferry-wire` is).

#![forbid(unsafe_code)]

mod affinity;
mod error;
mod meta;
mod method;
mod payload;
mod readiness;
mod transport;

pub use affinity::pin_current_thread;
pub use error::{FrameError, TransportError};
pub use meta::Meta;
pub use method::method_id;
pub use payload::Payload;
pub use readiness::{Interest, Readiness, Ready};
pub use transport::{Received, Transport};
