//! Compiles `schema/record.proto` into prost types without `protoc`: the pure-Rust
//! `protox` parser produces the descriptors and `prost-build` generates the code into
//! `OUT_DIR`. Every `bytes` field becomes `bytes::Bytes`, so encoding borrows the
//! application's buffers and decoding slices the input instead of copying.
//!
//! FlatBuffers and Cap'n Proto code is NOT generated here: their compilers are not on
//! a fresh machine, so that code is committed under `src/generated/` (see `regen.sh`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "schema/record.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["schema"])?;
    prost_build::Config::new().bytes(["."]).compile_fds(descriptors)?;
    Ok(())
}
