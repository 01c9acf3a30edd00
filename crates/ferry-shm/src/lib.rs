//! Ferry's shared-memory transport: the block protocol of the DPU-offload paper
//! (`protobuf-deserialization-dpu-offload`, sections III and IV) between two processes on one
//! host, where shared memory replaces RDMA write-with-immediate.
//!
//! Each side's send buffer is its [`shared`](ferry_buf::PoolConfig::shared) pool: a memfd the
//! peer maps read-only as its receive buffer (the paper's mirrored SBuf/RBuf). Values built in
//! that pool are sent with no copy at all: a message's header segment goes into a *block*, its
//! zero-copy values stay where they are, and the receiver validates and reads the message in
//! place ([`ShmFrame::view`], region-relative offsets, `View::decode_at`).
//!
//! ```text
//!  sender (its memfd)                                   receiver (maps it read-only)
//!  ┌ control: ring_head, peer_tail, sleeping, closed, ring[1024] ┐ ◄─ polls the next slot's tag
//!  │ block @ bucket·1024: preamble {count, len, acks}             │ ◄─ copies out, validates
//!  │    msg header {len, kind, flags, form, id} + header segment  │ ◄─ View::decode_at
//!  │ values (pool buffers), referenced by region offset           │ ◄─ read in place
//!  └──────────────────────────────────────────────────────────────┘
//! ```
//!
//! - **Batching.** Messages accumulate in a block (8-aligned) that is published when full (16
//!   KiB or [`ShmConfig::block_messages`] messages) or on [`ShmConnection::flush`] (called by
//!   `recv` too: the Nagle-like tick). A ring entry names the block by bucket (offset / 1024),
//!   as the paper's immediate data does, and carries a sequence tag, so the receiver polls the
//!   slot it expects next rather than the ring head.
//! - **Blocks** come from the pool's free lists, so they survive out-of-order completion; the
//!   sender holds each block and the values its messages reference until acknowledged, and
//!   keeps the last acknowledged block for the next one it fills (no pool round trip per
//!   block when one is in flight at a time), taking back for writing (`prefetchw`) the lines
//!   of it the peer read as soon as the acknowledgement arrives, so that the next send's
//!   stores do not wait for them. Receiving a block allocates nothing either: its
//!   frames' holds are counted in a fixed table indexed by block sequence number (1024
//!   slots, above the most credits a side may give, `proto::MAX_CREDITS`).
//! - **Credits and implicit acknowledgements.** Each block costs a credit; the receiver
//!   acknowledges a block once every frame of it (and of every earlier block) is dropped, in the
//!   preamble of its next block, or in an acknowledgement-only ring entry if it has none.
//!   A send with no credit left waits, or, in non-blocking mode
//!   ([`ShmConnection::set_nonblocking`]), leaves the block queued and refuses the next
//!   message with `WouldBlock` until the block has gone out.
//! - **Request ids** are implicit: both sides count messages, so a message whose id is the
//!   count ([`ShmConnection::next_request_id`]) carries none; any other id is written out.
//! - **Notification:** busy-poll for [`ShmConfig::spin`], then sleep on an eventfd doorbell the
//!   peer rings only when this side says it sleeps. An event loop polls the doorbell
//!   ([`AsFd`](std::os::fd::AsFd)) instead: [`ShmConnection::try_recv`] returning `None`
//!   announces the wait, so the next publication rings it. A loop that busy-polls calls
//!   [`ShmConnection::poll_recv`], which never announces it, so the peer never rings. The
//!   same loop accepts connections: [`ShmListener`]'s socket polls readable when a peer
//!   waits, and [`ShmListener::try_accept`] takes it, returning a [`ShmHandshake`] that the
//!   loop steps when its socket polls readable (the setup is a state, bounded by
//!   [`ShmConfig::handshake_timeout`]: a peer that says nothing never holds the loop).
//! - **Untrusted peer:** the peer's memfd must be sealed against shrinking (else a truncation
//!   would make reads fault) and its doorbell must be an eventfd (made non-blocking); every ring
//!   entry, preamble and header is copied out of shared memory once and then validated against
//!   the mapping, and messages are parsed as they are handed out; violations are
//!   [`FrameError::Protocol`](ferry_transport::FrameError::Protocol) errors. A peer that exits or closes
//!   its socket fails pending operations; frames already received stay readable until dropped,
//!   and the mapping goes with the last of them.
//!
//! The protocol itself is [`proto`]: a sans-IO core that reads and writes shared memory
//! through a trait and never waits; [`ShmConnection`] drives it (setup over the Unix socket,
//! busy-polling, the eventfd doorbell), and `sys` holds the unsafe mapping, syscalls and write
//! prefetch.
//!
//! What it is not: a cross-host transport (RDMA could replace the shared-memory writes without
//! changing the protocol), or thread-safe (`ShmFrame` is `!Send`; one connection per thread):
//! a frame's drop records the release of its block in the connection's single-threaded
//! acknowledgement state, without a lock; frames that cross threads would need an atomic
//! release path the connection scans. It implements
//! [`ferry_transport::Transport`], and depends on neither `ferry-net` nor tokio.

#![deny(unsafe_code)]

mod conn;
pub mod layout;
pub mod proto;
#[allow(unsafe_code)]
mod sys;
#[cfg(test)]
mod tests;

pub use conn::{
    DEFAULT_HANDSHAKE_TIMEOUT, ShmConfig, ShmConnection, ShmFrame, ShmHandshake, ShmListener, ShmStats,
    ShmStep,
};
