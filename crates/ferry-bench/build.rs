//! Compiles `schema/record.proto` and `schema/kv.proto` (the key-value store's prost peer)
//! into prost types, `schema/echo.proto` and `schema/stream.proto` into tonic clients and
//! servers, and the offload engine's demo schema
//! (`../ferry-offload/proto/ferry/offload/demo.proto`: the DPU paper's `Ints`, `Chars` and
//! `Small`, and the `Demo` service) into prost types and a tonic client and server, without
//! `protoc`: the pure-Rust `protox` parser produces the descriptors, `prost-build` generates
//! the messages and `tonic-prost-build` the service code into `OUT_DIR` (`ferry_bench.rs`,
//! `ferry_bench.kv.rs`, `ferry_bench.echo.rs`, `ferry_bench.stream.rs` and
//! `ferry.offload.demo.rs`, one file per package), and gRPC's interop schema
//! (`../ferry-offload/proto/grpc/testing/test.proto`, vendored unchanged) into prost types and
//! tonic servers with default methods (`grpc.testing.rs`).
//! Every `bytes` field becomes `bytes::Bytes`, so encoding borrows the application's
//! buffers and decoding slices the input instead of copying.
//!
//! FlatBuffers and Cap'n Proto code is NOT generated here: their compilers are not on
//! a fresh machine, so that code is committed under `src/generated/` (see `regen.sh`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "schema/record.proto",
        "schema/kv.proto",
        "schema/echo.proto",
        "schema/stream.proto",
        "../ferry-offload/proto/ferry/offload/demo.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["schema", "../ferry-offload/proto"])?;
    let tonic = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .service_generator();
    prost_build::Config::new()
        .bytes(["."])
        .service_generator(tonic)
        .compile_fds(descriptors)?;
    // gRPC's interop schema: its tonic servers answer UNIMPLEMENTED for the methods a host
    // does not override (the benchmark's serves two of `TestService`'s).
    let interop = "../ferry-offload/proto/grpc/testing/test.proto";
    println!("cargo:rerun-if-changed={interop}");
    let tonic = tonic_prost_build::configure()
        .build_client(false)
        .generate_default_stubs(true)
        .service_generator();
    prost_build::Config::new()
        .bytes(["."])
        .service_generator(tonic)
        .compile_fds(protox::compile([interop], ["../ferry-offload/proto"])?)?;
    Ok(())
}
