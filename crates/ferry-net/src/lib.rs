//! Ferry's kernel datapath: serialize-and-send over TCP.
//!
//! A [`Connection`] takes Ferry objects (anything that implements
//! [`Outgoing`](ferry_wire::Outgoing)) and raw payloads, frames them
//! ([`frame`]: 16 bytes of length, kind, flags and request id), batches many frames per
//! system call, and hands them to the kernel in one of five [`Mode`]s:
//!
//! | mode | user-space copies of zero-copy values | kernel call | buffers held until |
//! |---|---|---|---|
//! | [`Mode::Copy`] | 1 (into staging) | `sendmsg`, one entry per batch | the call returns |
//! | [`Mode::Gather`] | 0 | `sendmsg`, 1 + Z entries per message | the call returns |
//! | [`Mode::ZeroCopy`] | 0 | `sendmsg(MSG_ZEROCOPY)` | the error-queue completion |
//! | [`Mode::Uring`] | 0 | io_uring `SENDMSG_ZC` / `SEND_ZC` (registered regions) | the notification CQE |
//! | [`Mode::Auto`] | per message ([`auto`]) | per call | as for the call |
//! | any but copy, over [`tls`] | 1 (into TLS records, encrypted there) | `sendmsg` of the records | rustls has copied them |
//!
//! Over TLS ([`Connection::tls_server`], [`Connection::connect_tls`]) the zero-copy modes
//! cannot apply (the kernel sees ciphertext in a rustls record buffer, never the caller's
//! memory): zerocopy, uring and auto send as gather, whose gather list rustls encrypts into
//! records with one copy ([`SendStats::tls_copied`]); copy mode stages first, then encrypts.
//!
//! Receiving reads many frames per `readv` into pool buffers and hands each up as a
//! [`SharedBuf`](ferry_buf::SharedBuf) sub-buffer, decoded in place
//! ([`reader`](crate::Frame) explains the one case that copies).
//!
//! ```text
//!  send(meta, &msg) ──► staging BufMut: [frame hdr | msg head]…   + SharedBuf refs to values
//!                          │ flush / batch full
//!                          ▼
//!  writing batch: frozen staging + refs ──► sendmsg / SENDMSG_ZC (partial writes resume)
//!                          │ fully written
//!                          ▼
//!  copy, gather: dropped ── zerocopy, uring: held until the kernel's completion, then dropped
//! ```
//!
//! ```
//! use std::net::TcpListener;
//! use ferry_wire::sample::Record;
//! use ferry_buf::{Pool, PoolConfig};
//! use ferry_net::{Config, Connection, Meta, Mode};
//! use ferry_wire::{Context, Message};
//!
//! let pool = Pool::new(PoolConfig { max_bytes: 256 << 20, ..PoolConfig::default() })?;
//! let listener = TcpListener::bind("127.0.0.1:0")?;
//! let mut client = Connection::connect(listener.local_addr()?, &pool, &Config::with_mode(Mode::Gather))?;
//! let mut server = Connection::new(listener.accept()?.0, &pool, &Config::default())?;
//!
//! let ctx = Context::new(pool.clone());
//! let value = pool.copy_from(&[7u8; 8192])?;         // lives in the pool: sent by reference
//! let mut rec = Record::new(&ctx);
//! rec.set_key(&b"user:42"[..]);
//! rec.append_field(&value[..]);
//! client.send(Meta::new(1, 42), &rec)?;              // queued in the batch
//! client.flush()?;                                    // one sendmsg: [frame | head] + value
//!
//! let frame = server.recv()?;                         // a sub-buffer of a pool read buffer
//! assert_eq!(frame.meta().request_id, 42);
//! let view = Record::decode_shared(frame.payload())?;  // validated, read in place
//! assert_eq!(view.fields().get(0), Some(&value[..]));
//! assert_eq!(client.stats().send.queue.zero_copy_values_copied, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it is not: an RPC layer (request ids are carried, not matched), kTLS, or UDP. On
//! loopback and veth the kernel copies on delivery, so the zero-copy modes can at best save
//! sender CPU there; [`CompletionCounters::copied`] reports how often the kernel copied.
//!
//! Blocking and non-blocking: [`Connection::recv`] waits in `poll(2)`,
//! [`Connection::try_recv`] never waits (`Ok(None)` when no whole frame has arrived); sends
//! wait by default and return [`TransportError::WouldBlock`] after
//! [`Connection::set_nonblocking`] (for run-to-completion loops on `epoll`, which poll the
//! socket, [`AsFd`](std::os::fd::AsFd)). [`AsyncConnection`] drives the same code from tokio.
//! `Connection` implements [`Transport`] (`ferry-transport`), so the same code runs over
//! `ferry-shm`; received [`Frame`]s are `Send`. Unsafe code is confined to `sys/` (the syscalls) and the two call sites in the
//! sender that hand a batch to them.

#![deny(unsafe_code)]

pub mod auto;
mod budget;
mod completions;
mod config;
mod conn;
pub mod frame;
pub mod probe;
mod queue;
mod reader;
mod receiver;
mod sender;
#[allow(unsafe_code)]
mod sys;
pub mod tls;
#[cfg(feature = "tokio")]
mod tokio;
mod transport;

pub use budget::{FrameBudget, Reservation};
pub use completions::CompletionCounters;
pub use config::{Config, Mode};
pub use conn::{Connection, Stats};
pub use ferry_transport::{FrameError, Meta, Payload, Received, Transport, TransportError};
pub use frame::FrameHeader;
pub use queue::QueueCounters;
pub use reader::{
    EXACT_SMALL_RUN, Frame, FrameReader, GUESS_BYTES, MAX_GUESSES, MAX_READ_TARGETS, ReadTargets,
    RecvCounters,
};
pub use receiver::Receiver;
pub use sender::{SendStats, Sender};
pub use tls::{ClientAuth, Handshake, PeerIdentity, TlsClient, TlsError, TlsServer};
#[cfg(feature = "tokio")]
pub use tokio::AsyncConnection;
