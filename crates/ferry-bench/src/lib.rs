//! Every Ferry benchmark, in one library.
//!
//! - [`harness`]: what every benchmark shares: the lifecycle ([`harness::lifecycle`]: plan, run,
//!   records, table, targets, plot, `--json`/`--from`), thread pinning and CPU accounting, the
//!   measurement window, the open-loop load generator, latency histograms, progress bars and
//!   the common options; [`plot`] draws the SVG charts.
//! - One module per end-to-end benchmark, the only code here that calls a transport:
//!   [`datapath`], [`shm`], [`rpc`], [`kv`], [`redis`], [`flatbuffers`] and [`offload`] (`ferry
//!   bench <name>`; the `ferry` binary parses their options and calls their `run`).
//! - The serializer peers and workloads of the Criterion targets (`benches/`) and of the
//!   `ferry-callgrind` driver: a file per system under [`systems`] (memcpy, prost, FlatBuffers,
//!   Cap'n Proto, rkyv, Ferry), the workloads in [`shapes`].
//!
//! Not a test suite (its tests check that the numbers measure the right thing, never a
//! speed), and a dependency of no library crate.

pub mod datapath;
pub mod error;
pub mod flatbuffers;
pub mod generated;
pub mod harness;
pub mod kv;
pub mod offload;
pub mod plot;
pub mod raft;
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
