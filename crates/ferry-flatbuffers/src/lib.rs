//! zFlatBuffers: a FlatBuffers builder that never copies what it has written.
//!
//! The stock builder writes into one `Vec<u8>` from its end towards its start; when the vector
//! is full it doubles it and copies everything written so far into the new half (2,047 /
//! 32,767 / 131,071 bytes copied for the zFlatBuffers paper's 1 / 16 / 64 KiB Records), and a
//! reused builder zeroes its dirty part on every `reset`. This builder (section IV of
//! `zflatbuffers-zero-copy-serialization-for-datacenter-rpc`) takes blocks from a Ferry
//! [`Pool`](ferry_buf::Pool) instead: when the current block cannot hold the next item, its
//! free room is abandoned and a new block is spliced logically in front of it. The finished
//! [`Message`] is a list of slices of those blocks (Block / Slice / Message, the slices holding
//! their blocks by reference count) whose concatenation is byte for byte what the stock
//! builder produces for the same calls, so every FlatBuffers reader, in any language, reads
//! it. A transport sends the slices as one frame by scatter-gather
//! ([`Message::payload`]), and the receiver gets it contiguous.
//!
//! # Using it with `flatc --rust` code: a drop-in, not a generator
//!
//! `flatc --rust` output names the runtime as `::flatbuffers::...`. This crate re-exports the
//! whole stock runtime (tables, vectors, `Follow`, `Push`, `WIPOffset`, the verifier, `root`)
//! and replaces only [`FlatBufferBuilder`], [`Allocator`] and [`DefaultAllocator`], with the
//! methods generated code calls (`start_table`, `push_slot`, `push_slot_always`, `end_table`,
//! `required`, `create_string`, `create_vector`, `finish`, `finish_size_prefixed`, ...). So a
//! crate that depends on it under the name `flatbuffers`,
//!
//! ```toml
//! [dependencies]
//! flatbuffers = { package = "ferry-flatbuffers", version = "0.1" }
//! ```
//!
//! compiles its generated code unchanged, reads with the stock readers and verifier, and
//! builds with this builder. We chose this over generating builders of our own because users
//! keep their schemas, their `flatc` version and their generated code (readers, object API,
//! verifiers) exactly as they are; the build needs no `flatc` beyond the one the user already
//! runs; and there is one builder algorithm to keep identical to the stock one, not a second
//! code generator. The builder has every public item of the stock one (25.12.19) with its
//! signature, `new()` taking blocks from a process-wide [default pool](default_pool), and the
//! `std` and `serialize` features. What changes for the user: the copy-free result is a
//! [`Message`] ([`FlatBufferBuilder::finished_message`], or
//! [`FlatBufferBuilder::finished_slices`] to post without taking a reference), which is what
//! Ferry's transports send; `finished_data()`'s one slice is the block itself when the message
//! fits in one, else a copy made once (see [`FlatBufferBuilder`] for each difference). A
//! builder over a given pool is [`FlatBufferBuilder::with_pool`]. The stock crate
//! stays reachable as [`stock`] (its builder, for comparisons).
//!
//! ```
//! use ferry_buf::{Pool, PoolConfig};
//! use ferry_flatbuffers::FlatBufferBuilder;
//!
//! let pool = Pool::new(PoolConfig::default())?;
//! let mut fbb = FlatBufferBuilder::with_pool(&pool);
//! let name = fbb.create_string("ferry");
//! let start = fbb.start_table();
//! fbb.push_slot_always(4, name);
//! fbb.push_slot::<u32>(6, 42, 0);
//! let root = fbb.end_table(start);
//! fbb.finish(root, None);
//!
//! // The same calls on the stock builder give the same bytes.
//! let mut stock = ferry_flatbuffers::stock::FlatBufferBuilder::new();
//! let name = stock.create_string("ferry");
//! let start = stock.start_table();
//! stock.push_slot_always(4, name);
//! stock.push_slot::<u32>(6, 42, 0);
//! let root = stock.end_table(start);
//! stock.finish(root, None);
//! assert_eq!(fbb.finished_message().to_vec(), stock.finished_data());
//! # Ok::<(), ferry_buf::PoolError>(())
//! ```
//!
//! # What it is not
//!
//! A reader (the stock one is re-exported), a schema compiler (`flatc` is), or a transport:
//! `ferry-net` and `ferry-shm` send a [`Message`] as a payload, and `ferry-rpc` carries it as a
//! method's request or response.
//!
//! How a message travels and is read back on each transport is in [`transport`]
//! ([`read_frame`] verifies a received frame); `rpc` (feature `rpc`, on by default) serves
//! and calls `ferry-rpc` methods whose request and response are FlatBuffers.

mod backward;
mod blocks;
mod builder;
mod contiguous;
pub mod default_pool;
mod message;
mod push;
#[cfg(feature = "rpc")]
pub mod rpc;
pub mod transport;

// The stock runtime, for generated code and readers; the local items below shadow its builder.
pub use stock::*;

/// The `flatbuffers` crate itself, whose builder this one replaces (for comparisons, and for
/// code that wants the original).
pub use stock;

pub use blocks::{Allocator, PoolAllocator};
pub use builder::{BuildStats, FlatBufferBuilder};
pub use message::Message;
pub use transport::{ReadError, read_frame};

/// The builder's default block source (the stock crate's is a `Vec`).
pub type DefaultAllocator = PoolAllocator;
