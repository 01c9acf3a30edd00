//! Generated schema code, one module per system, never edited by hand.
//!
//! - [`record_prost`]: prost types, and in [`record_prost::echo`] the tonic service of
//!   `ferry bench rpc`'s tonic peer (`rpc/tonic.rs`), generated at build time by `build.rs`
//!   (protox, no `protoc`).
//! - [`record_generated`]: `flatc --rust` output, committed (see `regen.sh`).
//! - [`record_capnp`]: `capnp compile -orust` output, committed (see `regen.sh`).
//! - [`kv_prost`], [`kv_generated`], [`kv_capnp`]: the same three for the key-value store's
//!   requests and responses (`schema/kv.*`), which the peers of `ferry bench kv` speak
//!   ([`crate::kv::peers`]).
//! - [`demo_prost`]: prost types and the tonic client and server (`demo_client::DemoClient`,
//!   `demo_server::{Demo, DemoServer}`) of the offload engine's demo schema
//!   (`crates/ferry-offload/proto/ferry/offload/demo.proto`, package `ferry.offload.demo`),
//!   generated at build time by `build.rs`: the tonic host's side of `ferry bench offload`
//!   ([`crate::offload`]).
//! - [`interop_prost`]: prost types and tonic service code of gRPC's interop schema
//!   (`crates/ferry-offload/proto/grpc/testing/test.proto`, package `grpc.testing`): the tonic
//!   `TestService` host of `ferry bench offload --figures streams`.
//! - [`zflat_record_generated`]: `flatc --rust` output for the zFlatBuffers paper's Record
//!   (`schema/zflat_record.fbs`), committed (see `regen.sh`).
//!
//! The workspace lints (`missing_docs`, `unsafe_code`, documented unsafe blocks) hold for the
//! code we write, not for what the schema compilers emit, so they are relaxed here and only here;
//! rustfmt skips these files so that `regen.sh` output stays byte-for-byte as generated.

/// prost types for `schema/record.proto`; every `bytes` field is `bytes::Bytes`.
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod record_prost {
    include!(concat!(env!("OUT_DIR"), "/ferry_bench.rs"));

    /// The tonic client (`echo_client::EchoClient`) and server (`echo_server::{Echo,
    /// EchoServer}`) of `schema/echo.proto`, package `ferry_bench.echo`: nested here as the
    /// package is, so that the generated code's `super::Record` is the prost type above.
    pub mod echo {
        include!(concat!(env!("OUT_DIR"), "/ferry_bench.echo.rs"));
    }

    /// The tonic client (`streams_client::StreamsClient`) and server
    /// (`streams_server::{Streams, StreamsServer}`) of `schema/stream.proto`, package
    /// `ferry_bench.stream`: the tonic peer of `ferry bench rpc`'s streams.
    pub mod stream {
        include!(concat!(env!("OUT_DIR"), "/ferry_bench.stream.rs"));
    }
}

/// prost types and tonic service code for the offload engine's demo schema (package
/// `ferry.offload.demo`: `Ints`, `Chars`, `Small`, `Kinds`, ... and the `Demo` service);
/// every `bytes` field is `bytes::Bytes`.
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod demo_prost {
    include!(concat!(env!("OUT_DIR"), "/ferry.offload.demo.rs"));
}

/// prost types and tonic service code for gRPC's interop schema (package `grpc.testing`:
/// `StreamingOutputCallRequest`, ... and `test_service_server::{TestService, TestServiceServer}`).
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod interop_prost {
    include!(concat!(env!("OUT_DIR"), "/grpc.testing.rs"));
}

/// FlatBuffers types for `schema/record.fbs` (flatc 25.12.19).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod record_generated;

/// Cap'n Proto types for `schema/record.capnp` (capnp 0.9.2, capnpc 0.27.0).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod record_capnp;

/// prost types for `schema/kv.proto` (package `ferry_bench.kv`); every `bytes` field is
/// `bytes::Bytes`.
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod kv_prost {
    include!(concat!(env!("OUT_DIR"), "/ferry_bench.kv.rs"));
}

/// FlatBuffers types for `schema/kv.fbs` (flatc 25.12.19).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod kv_generated;

/// FlatBuffers types for `schema/zflat_record.fbs` (flatc 25.12.19): the zFlatBuffers paper's
/// Record, read and verified by `ferry bench flatbuffers` (its builders write the same slots).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod zflat_record_generated;

/// Cap'n Proto types for `schema/kv.capnp` (capnp 0.9.2, capnpc 0.27.0).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod kv_capnp;
