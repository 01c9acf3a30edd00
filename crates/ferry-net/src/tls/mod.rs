//! TLS over a [`Connection`](crate::Connection): rustls, driven sans-IO.
//!
//! rustls' [`Connection`](rustls::Connection) is fed the bytes the socket gave and asked for the
//! bytes to write; the sender, the receiver and the drivers above (blocking, an event loop,
//! tokio) own the socket and the waiting. The handshake is a state of the connection:
//! [`Connection::handshake_step`](crate::Connection::handshake_step) moves it on without
//! waiting and says what it waits for, bounded by a deadline
//! ([`TlsServer::handshake_timeout`]), so a loop never blocks on a peer that says nothing.
//!
//! The path of one frame, and its one copy:
//!
//! ```text
//!  send(meta, &msg) ──► staging [frame hdr | msg head]… + SharedBuf refs to values  (the gather list)
//!                          │ flush
//!                          ▼
//!  rustls Writer::write_vectored(gather list) ─► per record (≤ 16 KiB): one memcpy of the
//!      plaintext into a fresh record buffer, then AEAD seal in place over that buffer
//!      (SendStats::tls_copied counts these bytes; the gather list's buffers are released here)
//!                          │
//!                          ▼
//!  records (owned by rustls until written) ──► write_tls: plain sendmsg (writev), ≤ 64 records a call
//! ```
//!
//! rustls' `unbuffered` API was the other candidate: its `WriteTraffic::encrypt` takes one
//! contiguous slice, so a gather list would make one record per entry (22 bytes of overhead
//! and a seal call per 16-byte frame header) or need a concatenation first (a second copy).
//! The buffered `Connection::writer().write_vectored` hands the whole list to rustls'
//! fragmenter (`OutboundChunks`), which copies each record's plaintext once
//! (`PrefixedPayload::extend_from_chunks`) and seals it in place
//! (`seal_in_place_append_tag`, rustls 0.23 with ring).
//!
//! Measured, not guessed: `examples/tls_copies.rs` sends 32 frames of a 64-byte head and a
//! 256 KiB referenced value; under `valgrind --tool=dhat --mode=copy` the sending side's only
//! copy of the values is `PrefixedPayload::extend_from_chunks` (8,388,608 bytes in 544 calls,
//! one per record: each value byte once), and the frame headers and heads (2,560 bytes) are
//! copied with them by inlined copies ([`SendStats::tls_copied`](crate::SendStats::tls_copied)
//! counts both: 8,391,168, every wire byte once).
//!
//! Receiving copies twice with rustls' buffered API: records are read into rustls' buffer
//! (by the kernel) and opened in place there, then rustls moves each record's plaintext into
//! its received-plaintext buffer (`CommonState::take_received_plaintext`, 8,391,168 bytes in
//! the run above), and [`Receiver`](crate::Receiver) copies it into the
//! [`FrameReader`](crate::FrameReader)'s targets (`Reader::read`, 8,391,168 bytes);
//! [`Stats::recv_tls_copied`](crate::Stats::recv_tls_copied) counts both. rustls also
//! compacts its record buffer behind records it has consumed (`DeframerVecBuffer::discard`,
//! 2.2 MB in that run, not counted). rustls' `unbuffered` API would open records in a buffer
//! of ours and leave one copy; it is the next step for the receiving side.
//!
//! MSG_ZEROCOPY and io_uring `SEND_ZC` cannot apply (the kernel would see our ciphertext, not
//! the caller's buffers): under TLS every mode but [`Mode::Copy`](crate::Mode::Copy) sends as
//! [`Mode::Gather`](crate::Mode::Gather), and records go out by plain `sendmsg`.

mod config;
mod error;
mod identity;
pub(crate) mod session;
#[cfg(feature = "test-certs")]
pub mod test_certs;

pub use config::{ClientAuth, DEFAULT_HANDSHAKE_TIMEOUT, TlsClient, TlsServer};
pub use error::TlsError;
pub use identity::PeerIdentity;

/// Where a handshake stands ([`Connection::handshake_step`](crate::Connection::handshake_step)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Done: application data flows (also for a connection without TLS).
    Done,
    /// Not yet: wait until the socket is readable (`read`) or writable (`write`), then step
    /// again. Both may be set.
    Waiting {
        /// Waits for bytes from the peer.
        read: bool,
        /// Has bytes to write.
        write: bool,
    },
}

#[cfg(feature = "tokio")]
impl Handshake {
    /// What a tokio driver waits for before the next step; `None` when done.
    pub fn interest(self) -> Option<tokio::io::Interest> {
        use tokio::io::Interest;
        match self {
            Handshake::Done => None,
            Handshake::Waiting {
                read: true,
                write: true,
            } => Some(Interest::READABLE | Interest::WRITABLE),
            Handshake::Waiting { write: true, .. } => Some(Interest::WRITABLE),
            Handshake::Waiting { .. } => Some(Interest::READABLE),
        }
    }
}
