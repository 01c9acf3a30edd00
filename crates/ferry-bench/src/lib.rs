//! Every Ferry benchmark, in one library.
//!
//! What it is:
//! - the harness every benchmark shares ([`harness`]): thread pinning and per-thread CPU time
//!   (the crate's only unsafe code, in one small module), run budgets, repetitions and medians,
//!   latency histograms ([`hdrhistogram`]), the JSON results files ([`harness::report`]),
//!   progress bars on stderr ([`indicatif`], drawn only on a terminal), the options every
//!   `ferry bench` command takes ([`harness::cli`]); and SVG line charts ([`plot`]);
//! - one module per end-to-end benchmark, the only code here that calls a transport:
//!   [`datapath`] (`ferry bench datapath`: one-way TCP streams in every send mode), [`shm`]
//!   (`ferry bench shm`: round trips over shared memory against a raw ping-pong and TCP) and
//!   [`rpc`] (`ferry bench rpc`: echo calls through `ferry-rpc` against a no-serialization
//!   echo, the peer libraries, tonic (its peer is in `rpc/tonic.rs`) and the ping-pong), [`kv`] (`ferry bench kv`) and [`redis`]
//!   (`ferry bench redis`: Ferry's Redis-protocol server against `redis-server`, both driven
//!   by `redis-benchmark` as child processes), and [`offload`] (the DPU offload paper's
//!   figures: [`offload::decode`], Figure 7, decode time against element count for prost, the
//!   offload engine's decoder and the host's in-place validation). The `ferry` binary parses
//!   their options and calls their `run` (or [`offload::decode::figure7`]);
//! - the serializer peers and workloads of the Criterion targets (`benches/serialize.rs`,
//!   `benches/decode.rs`) and of the `ferry-callgrind` instruction-count driver: each system
//!   (the memcpy floor, prost, FlatBuffers, Cap'n Proto, Ferry) is one file under [`systems`],
//!   the workloads are [`shapes`]; the benches loop over [`systems::SERIALIZERS`] and
//!   [`systems::DECODERS`], and `ferry bench rpc` uses [`systems::CODECS`] (both sides of an
//!   echo with each peer library).
//!
//! What it is NOT: a test suite (its tests check the harness and that every system round-trips
//! the shapes, so the numbers measure the right thing; they assert nothing about speed), or a
//! dependency of any library crate (only the `ferry` binary uses it).
//!
//! Who owns which buffer, per serialize call:
//!
//! ```text
//!  application (Shape)         system (reused across calls)          caller
//!  key: Bytes ─┐               prost:   Record{Bytes..} ──encode──▶ Vec<u8>  ─▶ &[u8]
//!  field: Bytes├── borrowed ──▶ flatbuf: FlatBufferBuilder ─finish──────────────▶ &[u8]
//!  field: Bytes┘   (read)      capnp:   scratch segment ──write_message─▶ Vec<u8> ─▶ &[u8]
//!                              memcpy:  ─────────────copy───────────▶ Vec<u8>  ─▶ &[u8]
//! ```
//!
//! The returned slice is "bytes ready for a socket write" and stays valid until the next call.

pub mod datapath;
pub mod error;
pub mod flatbuffers;
pub mod generated;
pub mod harness;
pub mod kv;
pub mod offload;
pub mod plot;
pub mod redis;
pub mod rpc;
pub mod shapes;
pub mod shm;
pub mod systems;

pub use error::BenchError;
pub use shapes::Shape;
pub use systems::{Decoder, Serializer, Sink};

/// The end-to-end benchmarks' error type: it crosses thread boundaries.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
