//! The one error type of the schema compiler.

/// Why a schema could not be compiled. Names the file, line and construct where it can.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The `.proto` files do not parse or do not resolve, or use something Ferry does not
    /// support (the same error as at run time, from `ferry-reflect`).
    #[error(transparent)]
    Schema(#[from] ferry_reflect::SchemaError),
    /// Code generation failed (a configuration problem, or a service generator's output that
    /// is not Rust).
    #[error("{0}")]
    Codegen(String),
    /// Writing generated files failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file being written.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}
