//! The sans-IO core: one session's state on each side. [`Client`] and [`Server`] take frames
//! and `now` and return the frames to send and how calls end; they never touch a socket, a
//! clock or a thread, so their tests run deterministically (random interleavings, reordering,
//! loss of the peer: `tests/sessions.rs`). The drivers ([`EventLoop`](crate::EventLoop),
//! [`Channel`](crate::Channel), [`tokio`](crate::tokio)) own the I/O around them.

mod calls;
mod client;
mod server;

pub use client::{Client, ClientConfig, ClientEvent, Outcome, Start};
pub use server::{Event, Server, ServerConfig};

/// Why a stream's message could not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// The receiver's window is spent: wait for its grant (an `Event::Window`).
    Window,
    /// The call is over (or is not a stream): drop the message.
    Ended,
}
