//! Ferry's offload engine: a gRPC server that unchanged gRPC clients call, which decodes each
//! protobuf request into a Ferry message in memory it shares with the host, calls the host's
//! Ferry service over shared memory, and encodes the host's answer back into protobuf
//! (serialization offload). It runs as its own process on its own core, speaking the protocol a
//! DPU or SmartNIC backend would (the DPU offload paper; Zerializer).
//!
//! ```text
//!  gRPC clients ──HTTP/2──► engine (one pinned thread)                      host process
//!  (grpcurl, ghz,           tonic/h2; framing, gzip, status, grpc-timeout   ferry::rpc::Server
//!   grpcio, tonic)          decode protobuf → Ferry message ──shm block──►  generated trait:
//!                           (bytes land once, in the session's pool)        reads a validated view
//!                           encode protobuf ◄── Ferry response ◄──shm───────  answers a message
//! ```
//!
//! - [`engine`]: the engine ([`Engine::start`](engine::Engine::start), `ferry gateway`).
//! - [`host`]: the host's side: the `ferry.offload.Host` service that hands the engine its
//!   description table.
//! - [`table`]: the description table, validated. [`translate`]: protobuf ⇄ Ferry, timeouts,
//!   metadata, statuses (no I/O). [`framing`]: gRPC's message framing and compression (gzip,
//!   deflate), inflating within the size limit (no I/O).
//! - [`demo`]: the demo service (every field kind, failures, deadlines, the DPU paper's
//!   messages), and [`demo_host`]: its host, the generated trait implemented as any Ferry
//!   service is; served by the examples and in the tests and `ferry bench offload`.
//!
//! Every method shape is served: a unary call is one Ferry call, a gRPC stream (client,
//! server or both ways) one Ferry stream, with flow control end to end. The engine reads a
//! stream's request body only as fast as the host's stream window takes its messages, and takes
//! the host's answers only as fast as the gRPC client reads them (HTTP/2's window backs onto
//! the Ferry stream's): a client that stops reading stops the host's sends, and the engine
//! holds a few messages for it, not more. Size limits apply to each message, once inflated.
//!
//! What it is not: a proxy that forwards protobuf (the host never sees protobuf), a gRPC client,
//! a load balancer; no TLS, and no message encodings but gzip, deflate and identity (others
//! answer `UNIMPLEMENTED`, naming those).

#![forbid(unsafe_code)]

pub mod demo_host;
pub mod engine;
pub mod framing;
pub mod host;
pub mod interop_host;
pub mod table;
pub mod translate;

/// The code `ferry-build` generates for `proto/ferry/offload/*.proto`.
#[allow(missing_docs, clippy::all)]
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));
}

pub use generated::ferry::offload::demo;

/// The code `ferry-build` generates for gRPC's interop schema (`proto/grpc/testing/`,
/// vendored unchanged): package `grpc.testing`.
#[allow(missing_docs, clippy::all)]
pub mod grpc_testing {
    include!(concat!(env!("OUT_DIR"), "/grpc_testing.rs"));
}

/// The encoded `FileDescriptorSet` of gRPC's interop schema: what the interop host hands to
/// [`host::describe_async`].
pub const INTEROP_DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/interop_descriptors.bin"));

/// The encoded `FileDescriptorSet` of the demo service (and the engine protocol's schema): what
/// a demo host hands to [`host::describe`].
pub const DEMO_DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/demo_descriptors.bin"));
