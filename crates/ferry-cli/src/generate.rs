//! `ferry gen`: the `build.rs` code generator (`ferry-build`) as a command.

use std::path::PathBuf;

use crate::schema::{CliError, ProtoFiles, schema_error};

/// Options of `ferry gen`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    files: ProtoFiles,
    /// Directory to write the generated Rust into (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// One file per protobuf package (`<package>.rs`), like prost-build, instead of one
    /// `ferry_protos.rs` with a module per package.
    #[arg(long)]
    file_per_package: bool,
}

/// Generates and writes the Rust types of every message, enum and service in the files.
pub fn run(args: &Args) -> Result<(), CliError> {
    let includes = args.files.includes()?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Usage(format!("{}: {e}", args.out.display())))?;
    ferry_build::Config::new()
        .out_dir(&args.out)
        .file_per_package(args.file_per_package)
        .compile_protos(&args.files.protos, &includes)
        .map_err(schema_error)
}
