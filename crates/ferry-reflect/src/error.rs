//! Why a schema could not be loaded or used at run time.

/// Why a schema could not be loaded, or a message of it cannot be described. Names the file,
/// line and construct where it can.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
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
}

impl SchemaError {
    pub(crate) fn parse(e: protox::Error) -> Self {
        let mut msg = format!("{e:?}");
        // protox does not know editions at all; say what its parse error means.
        if msg.contains("found 'edition'") {
            msg.push_str(" (editions are not supported: Ferry reads proto2 and proto3 files)");
        }
        SchemaError::Parse(msg)
    }
}
