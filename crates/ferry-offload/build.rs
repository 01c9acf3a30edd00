//! Compiles the engine protocol's schema (`proto/ferry/offload/description.proto`) and the demo
//! service (`demo.proto`, for the examples and tests) with `ferry-build`, keeping the demo's
//! encoded descriptors (what a host sends the engine); gRPC's interop schema
//! (`proto/grpc/testing/test.proto`, for the interop host) the same way; and, for the tests
//! only, the demo's prost types and tonic code (the reference server and the tonic client) into
//! `OUT_DIR/tonic`, and the encoded descriptors of `tests/proto/ferry/offload/streams.proto`
//! (every method shape, for the streaming tests' hand-written host) into
//! `OUT_DIR/streams_descriptors.bin`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/ferry/offload/description.proto",
        "proto/ferry/offload/demo.proto",
    ];
    ferry_build::Config::new()
        // The tonic-style trait too (`TonicDemo`), for examples/tonic_style.rs.
        .service_generator(Box::new(ferry_build::RpcGenerator::new().tonic_style(true)))
        .file_descriptor_set_path("demo_descriptors.bin")
        .compile_protos(&protos, &["proto"])?;
    // gRPC's interop schema, unchanged (streaming methods too, so no tonic-style trait), for
    // the interop host.
    ferry_build::Config::new()
        .file_name("grpc_testing.rs")
        .file_descriptor_set_path("interop_descriptors.bin")
        .compile_protos(&["proto/grpc/testing/test.proto"], &["proto"])?;
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let out = out_dir.join("tonic");
    std::fs::create_dir_all(&out)?;
    let tonic = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .service_generator();
    prost_build::Config::new()
        .out_dir(&out)
        .service_generator(tonic)
        .compile_fds(protox::compile(["proto/ferry/offload/demo.proto"], ["proto"])?)?;
    println!("cargo:rerun-if-changed=tests/proto");
    let streams = protox::compile(["ferry/offload/streams.proto"], ["tests/proto", "proto"])?;
    std::fs::write(
        out_dir.join("streams_descriptors.bin"),
        prost::Message::encode_to_vec(&streams),
    )?;
    Ok(())
}
