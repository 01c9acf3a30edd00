//! Compiles the engine protocol's schema (`proto/ferry/offload/description.proto`) and the demo
//! service (`demo.proto`, for the examples and tests) with `ferry-build`, keeping the demo's
//! encoded descriptors (what a host sends the engine); gRPC's interop schema
//! (`proto/grpc/testing/test.proto`, for the interop host) the same way; and, for the tests only, the demo's prost
//! types and tonic code (the reference server and the tonic client) into `OUT_DIR/tonic`.

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
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("tonic");
    std::fs::create_dir_all(&out)?;
    let tonic = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .service_generator();
    prost_build::Config::new()
        .out_dir(&out)
        .service_generator(tonic)
        .compile_fds(protox::compile(["proto/ferry/offload/demo.proto"], ["proto"])?)?;
    Ok(())
}
