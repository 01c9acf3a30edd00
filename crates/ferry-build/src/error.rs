//! The one error type of the schema compiler.

/// Why a schema could not be compiled. Names the file, line and construct where it can.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The `.proto` files do not parse or do not resolve (protox's message names file and line).
    #[error("{0}")]
    Parse(String),
    /// The schema uses something Ferry does not support.
    #[error("{file}:{line}: {construct} is not supported: {why}")]
    Unsupported {
        /// The `.proto` file.
        file: String,
        /// 1-based line, or 0 when unknown.
        line: u32,
        /// What, e.g. "editions" or "field `foo.Bar.baz`".
        construct: String,
        /// Why, and what to do instead.
        why: String,
    },
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

impl From<ferry_reflect::SchemaError> for BuildError {
    fn from(e: ferry_reflect::SchemaError) -> Self {
        match e {
            ferry_reflect::SchemaError::Parse(msg) => BuildError::Parse(msg),
            ferry_reflect::SchemaError::Unsupported {
                file,
                line,
                construct,
                why,
            } => BuildError::Unsupported {
                file,
                line,
                construct,
                why,
            },
            other => BuildError::Parse(other.to_string()),
        }
    }
}
