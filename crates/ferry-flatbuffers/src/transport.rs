//! Sending a built [`Message`](crate::Message) over a Ferry transport, and reading a received
//! frame as a FlatBuffer: [`read_frame`], with [`ReadError`].
//!
//! # Sending
//!
//! A finished message is a list of pool slices; `transport.send_payload(meta,
//! message.payload())` sends it as one frame, `Payload::Gather { head: &[], parts: slices }`:
//!
//! - **TCP (`ferry-net`)**, in every send mode (copy, gather, zerocopy, uring, auto): the 16-byte
//!   frame header is the only byte written into the staging buffer; each slice is one gather
//!   entry of `sendmsg` (or io_uring `SENDMSG_ZC`) referencing its block, which the batch holds
//!   by reference count until the kernel has copied it (copy and gather modes: the call
//!   returned) or its zero-copy completion has arrived (zerocopy, uring). A message of more
//!   slices than one call takes (1024, Linux's `UIO_MAXIOV`) goes out in several calls, the
//!   queue resuming where the last one stopped, so a frame can have any number of slices up to
//!   `max_frame_len` bytes.
//! - **Shared memory (`ferry-shm`)**: the slices are copied, one after the other, into the
//!   block being filled, right after the message header: the receiver reads a payload
//!   contiguously inside its block.
//!
//! Either way the receiver gets the bytes contiguous ([`Received::bytes`]: a sub-buffer of a
//! pool read buffer over TCP, a range of the peer's block over shared memory), aligned as the
//! verifier needs (it checks alignment relative to the start of the buffer, which the message
//! keeps), and reads them with the stock `flatbuffers` reader: [`read_frame`] verifies first.
//!
//! # Why a one-slice message is copied over shared memory, not referenced in place
//!
//! A message built in the connection's shared pool (`ShmConnection::pool`, which the peer maps)
//! could in principle be named by its offset instead of copied, as `ferry-shm` already does
//! for a Ferry message's zero-copy values. It is not done, because:
//!
//! - `ferry-shm`'s protocol has no form for it: a payload's bytes must lie in its block right
//!   after its message header (the receiver checks exactly that). Referencing a buffer
//!   elsewhere needs a new message form carrying a region offset, its validation on receipt,
//!   and the sender holding the buffer until the block is acknowledged: a change of the
//!   shared-memory protocol (its layout, core, model and fuzz target), not something this crate
//!   can add on top.
//! - Only a message of one slice could benefit (the receiver reads a payload contiguously),
//!   and with [`PoolAllocator`](crate::PoolAllocator)'s growth rule every message longer than
//!   its first block (2 KiB unless set) has two slices or more: the one-slice messages are the
//!   short ones, where the copy is short too.
//! - Wrapping the FlatBuffer as a Ferry message with one referenced `bytes` field would get
//!   the reference today, but the receiver would then read a Ferry message (no
//!   [`Received::bytes`], a view to decode first) instead of a FlatBuffer, unlike over TCP.
//!
//! # Peer memory
//!
//! The stock reader trusts what its verifier checked: after `flatbuffers::root` its accessors
//! read offsets without bounds checks. Over TCP a frame is this process's own pool buffer and
//! cannot change. Over shared memory [`Received::bytes`] is the *peer's* memory, mapped
//! read-only here but still writable by the peer, which could change an offset after the
//! verifier looked at it. [`read_frame`] reads in place, as `Received::bytes` gives it; for a
//! peer that is not trusted, verify a private copy instead (the `rpc` module's adapter
//! does: it copies shared-memory payloads into a pool buffer of this side before verifying).

use std::any::type_name;

use ferry_transport::Received;
use stock::{Follow, InvalidFlatbuffer, Verifiable, VerifierOptions};

/// Why a received frame could not be read as a FlatBuffer. Each variant names the frame (its
/// kind and request id) and says what was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The frame carries a Ferry message (sent with `send`, over shared memory), whose bytes
    /// are not contiguous: it is not a payload sent with `send_payload`.
    #[error("frame of kind {kind} (request id {request_id}) is a Ferry message, not a FlatBuffers payload")]
    NotPayload {
        /// The frame's kind.
        kind: u16,
        /// The frame's request id.
        request_id: u64,
    },
    /// The verifier rejected the payload as a FlatBuffer whose root is `root`.
    #[error(
        "frame of kind {kind} (request id {request_id}, {len} bytes) is not a valid `{root}` FlatBuffer: {}",
        describe(error)
    )]
    Invalid {
        /// The root type asked for (its Rust type name).
        root: &'static str,
        /// The frame's kind.
        kind: u16,
        /// The frame's request id.
        request_id: u64,
        /// The payload's length.
        len: usize,
        /// What the verifier found, and where (its error trace names the fields).
        #[source]
        error: InvalidFlatbuffer,
    },
}

/// Verifies `frame`'s payload as a FlatBuffer whose root is a `T` (with `opts`' limits on depth,
/// tables and apparent size) and returns the root, read in place.
///
/// Over shared memory the payload is the peer's memory: see the module docs ("Peer memory")
/// before reading a frame from a peer that is not trusted.
///
/// ```
/// use std::net::TcpListener;
/// use ferry_buf::{Pool, PoolConfig};
/// use ferry_flatbuffers::{FlatBufferBuilder, ReadError, VerifierOptions, read_frame};
/// use ferry_net::{Config, Connection, Meta};
///
/// let pool = Pool::new(PoolConfig { max_bytes: 64 << 20, ..PoolConfig::default() })?;
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let mut client = Connection::connect(listener.local_addr()?, &pool, &Config::default())?;
/// let mut server = Connection::new(listener.accept()?.0, &pool, &Config::default())?;
///
/// // A FlatBuffer whose root is a string, sent as its slices.
/// let mut fbb = FlatBufferBuilder::with_pool(&pool);
/// let root = fbb.create_string("ferry");
/// fbb.finish(root, None);
/// client.send_payload(Meta::new(7, 1), fbb.finished_message().payload())?;
/// client.send_payload(Meta::new(7, 2), ferry_net::Payload::Bytes(&[0xff; 3]))?;
/// client.flush()?;
///
/// let opts = VerifierOptions::default();
/// let frame = server.recv()?;
/// assert_eq!(read_frame::<&str>(&frame, &opts)?, "ferry");
/// // Bytes that are not a FlatBuffer: a typed error naming the frame, never a panic.
/// let frame = server.recv()?;
/// let err = read_frame::<&str>(&frame, &opts).unwrap_err();
/// assert!(matches!(err, ReadError::Invalid { request_id: 2, len: 3, .. }), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_frame<'f, T>(frame: &'f impl Received, opts: &VerifierOptions) -> Result<T::Inner, ReadError>
where
    T: Follow<'f> + Verifiable + 'f,
{
    let meta = frame.meta();
    let Some(bytes) = frame.bytes() else {
        return Err(ReadError::NotPayload {
            kind: meta.kind,
            request_id: meta.request_id,
        });
    };
    stock::root_with_opts::<T>(opts, bytes).map_err(|error| ReadError::Invalid {
        root: type_name::<T>(),
        kind: meta.kind,
        request_id: meta.request_id,
        len: bytes.len(),
        error,
    })
}

/// The verifier's error on one line: its message, then the trace of where it was found
/// (`while verifying table field ...`), which its `Display` spreads over indented lines.
pub(crate) fn describe(error: &InvalidFlatbuffer) -> String {
    let text = error.to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim().trim_end_matches('.'))
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_error_is_one_line_with_its_trace() {
        // A root offset pointing past the end.
        let err = stock::root::<&str>(&[0xf0, 0, 0, 0]).unwrap_err();
        let one = describe(&err);
        assert!(!one.contains('\n') && !one.contains('\t'), "{one:?}");
        assert!(one.contains("out of bounds"), "{one:?}");
    }
}
