//! Micro-benchmark harness comparing serializers on the same shapes.
//!
//! What it is: the shared code behind the Criterion targets (`benches/serialize.rs`,
//! `benches/decode.rs`) and the `ferry-callgrind` instruction-count driver. Each system
//! (the memcpy floor, prost, FlatBuffers, Cap'n Proto, and later Ferry) is one file under
//! [`systems`]; the benches loop over [`systems::SERIALIZERS`] and [`systems::DECODERS`].
//!
//! What it is NOT: a test suite (its tests only check that every system round-trips the
//! shapes, so the numbers measure the right thing), an end-to-end RPC benchmark (no sockets,
//! no latency histograms), or part of the default workspace build.
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
pub mod generated;
pub mod harness;
pub mod plot;
pub mod shapes;
pub mod shm;
pub mod systems;

pub use error::BenchError;
pub use shapes::Shape;
pub use systems::{Decoder, Serializer, Sink};

/// The end-to-end benchmarks' error type: it crosses thread boundaries.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
