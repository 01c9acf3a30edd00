//! The same schemas as `ferry-codegen-tests`, compiled for an edition 2021 crate.

fn main() -> Result<(), ferry_build::BuildError> {
    ferry_build::compile_protos(
        &["../proto/ferry/test/all.proto", "../proto/ferry/test/other.proto"],
        &["../proto"],
    )
}
