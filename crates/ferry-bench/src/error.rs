//! The one error type of the harness: a case that cannot run says which system and why.

/// Why a benchmark case could not be set up or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// prost rejected its own encoding (a harness bug) or could not encode.
    #[error("prost: {0}")]
    ProstDecode(#[from] prost::DecodeError),
    /// prost could not encode into the output buffer.
    #[error("prost: {0}")]
    ProstEncode(#[from] prost::EncodeError),
    /// The FlatBuffers verifier rejected the buffer.
    #[error("flatbuffers: {0}")]
    Flatbuffers(#[from] flatbuffers::InvalidFlatbuffer),
    /// Cap'n Proto failed to build, frame or read the message.
    #[error("capnp: {0}")]
    Capnp(#[from] capnp::Error),
    /// rkyv could not serialize, or its validator rejected the archive.
    #[error("rkyv: {0}")]
    Rkyv(#[from] rkyv::rancor::Error),
    /// Ferry could not allocate, encode or decode.
    #[error("ferry: {0}")]
    Ferry(String),
    /// A shape has more fields than the system's list length type holds.
    #[error("{system}: {fields} fields do not fit the format's list length")]
    TooManyFields {
        /// The system that refused.
        system: &'static str,
        /// The shape's field count.
        fields: usize,
    },
    /// A key-value request that a peer's schema cannot carry: its keys are strings, and this
    /// key is not UTF-8.
    #[error("{system}: key {key:?} is not UTF-8 (the schema's keys are strings)")]
    KeyNotUtf8 {
        /// The peer that refused.
        system: &'static str,
        /// The key, lossily as text.
        key: String,
    },
    /// A decoder ran before `prepare` gave it an input.
    #[error("{system}: decode_and_read called before prepare")]
    NotPrepared {
        /// The decoder that was not prepared.
        system: &'static str,
    },
    /// A benchmark could not be set up or its measuring thread failed: a schema it loads at
    /// run time, pinning, a panic.
    #[error("{0}")]
    Setup(String),
    /// Two systems read other values from the same input: they would not be doing the same
    /// work, so the benchmark refuses to time them (a harness or codec bug).
    #[error("{system} reads other values than {reference} from {input}: {detail}")]
    Mismatch {
        /// The system checked.
        system: &'static str,
        /// The system it is checked against.
        reference: &'static str,
        /// Which input, e.g. "Ints of 64 elements".
        input: String,
        /// The first difference.
        detail: String,
    },
    /// A name on the command line matches no shape, system or operation.
    #[error("unknown {what} {name:?}; expected one of: {expected}")]
    Unknown {
        /// What kind of name it was: "shape", "system" or "operation".
        what: &'static str,
        /// The name as given.
        name: String,
        /// The accepted names, comma separated.
        expected: String,
    },
}
