//! Compiles the test schemas with `ferry-build`, as a user's `build.rs` would.

fn main() -> Result<(), ferry_build::BuildError> {
    ferry_build::compile_protos(
        &["proto/ferry/test/all.proto", "proto/ferry/test/other.proto"],
        &["proto"],
    )
}
