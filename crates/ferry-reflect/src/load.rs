//! Parsing: `.proto` files to a descriptor pool, with the pure-Rust `protox` compiler (no
//! `protoc`). Google's well-known types (`google/protobuf/*.proto`) are always importable.

use std::path::Path;

use prost_reflect::DescriptorPool;

use crate::SchemaError;

/// Parses `files` (and everything they import, searched in `includes`) into one pool, with
/// source info (comments, line numbers) kept for generated docs and error messages.
pub fn load(
    files: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> Result<DescriptorPool, SchemaError> {
    let mut compiler = protox::Compiler::new(includes).map_err(SchemaError::parse)?;
    compiler.include_imports(true).include_source_info(true);
    compiler.open_files(files).map_err(SchemaError::parse)?;
    Ok(compiler.descriptor_pool())
}
