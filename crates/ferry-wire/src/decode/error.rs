//! Decode errors: what went wrong, at which byte offset, in which field.

use core::fmt;

/// What is wrong with the input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The message is larger than [`Limits::max_message_len`](super::Limits).
    MessageTooLarge {
        /// Length of the input (for `View::decode_at`: the bytes the message references so far).
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A header does not fit in the message.
    HeaderOutOfBounds {
        /// Bytes the header needs from its start.
        needed: u64,
        /// Bytes left in the message from its start.
        available: u64,
    },
    /// A nested message's range does not match its header's length.
    HeaderLength {
        /// Length given by the parent's entry.
        declared: u64,
        /// Length the header describes.
        actual: u64,
    },
    /// The preamble's flags are not zero (a later format version?).
    UnknownFlags(u16),
    /// Chunk groups are not strictly ascending.
    ChunkOrder {
        /// Index of the offending chunk.
        chunk: u32,
    },
    /// A chunk has no bits, or names field 0 or a field above 2^29 - 1.
    BadChunk {
        /// Index of the offending chunk.
        chunk: u32,
    },
    /// A chunk's rank base does not count the entries before it.
    RankMismatch {
        /// Index of the offending chunk.
        chunk: u32,
        /// The rank base written.
        found: u32,
        /// The number of earlier entries.
        expected: u32,
    },
    /// The entry count does not match the bits set.
    EntryCount {
        /// The count written.
        found: u32,
        /// Bits set in the chunks.
        expected: u32,
    },
    /// A range lies (partly) outside the message.
    RangeOutOfBounds {
        /// Start of the range.
        offset: u32,
        /// Length of the range.
        len: u32,
        /// Length of the message.
        message_len: u64,
    },
    /// A packed list's length is not a multiple of its element width.
    ListLength {
        /// Length of the list in bytes.
        len: u32,
        /// Width of one element.
        width: u32,
    },
    /// A nested header or list array starts before the end of the previous one in walk order
    /// (overlapping or aliased structures are rejected).
    StructureOverlap {
        /// Start of the offending structure.
        start: u64,
        /// End of the previous structure.
        previous_end: u64,
    },
    /// Nesting deeper than [`Limits::max_depth`](super::Limits).
    TooDeep {
        /// The limit.
        max: u32,
    },
    /// More fields and list elements than [`Limits::max_elements`](super::Limits).
    TooManyElements {
        /// The limit.
        max: u64,
    },
    /// Two fields of one oneof are present.
    OneofConflict {
        /// Field number seen first.
        first: u32,
        /// Field number seen second.
        second: u32,
    },
    /// A map's entries are not in strictly ascending key order (a duplicate or unordered key).
    MapKeyOrder {
        /// Index of the offending entry.
        index: u32,
    },
    /// A proto2 `required` field is absent.
    MissingRequired,
    /// A `string` field is not UTF-8.
    InvalidUtf8 {
        /// Bytes of valid UTF-8 before the error.
        valid_up_to: usize,
    },
}

/// A decode error: the kind, the byte offset (from the message start) and the field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    kind: DecodeErrorKind,
    offset: u64,
    /// (message, field) pairs, innermost first. Owned: a run-time schema's names may not
    /// outlive the error (copied only on the error path, at most one pair per nesting level).
    path: Vec<(Box<str>, Box<str>)>,
}

impl DecodeError {
    pub(crate) fn new(kind: DecodeErrorKind, offset: u64) -> Self {
        DecodeError {
            kind,
            offset,
            path: Vec::new(),
        }
    }

    /// A `string` that is not UTF-8, at `offset` in field `message.field`.
    pub(crate) fn invalid_utf8(valid_up_to: usize, offset: u64, message: &str, field: &str) -> Self {
        DecodeError::new(DecodeErrorKind::InvalidUtf8 { valid_up_to }, offset).within(message, field)
    }

    /// Adds an enclosing field to the path (called while unwinding).
    pub(crate) fn within(mut self, message: &str, field: &str) -> Self {
        self.path.push((message.into(), field.into()));
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &DecodeErrorKind {
        &self.kind
    }

    /// Byte offset, from the start of the message, of the header, entry or range at fault.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The field path, outermost first, as `Message.field` strings.
    pub fn path(&self) -> impl Iterator<Item = String> + '_ {
        self.path.iter().rev().map(|(m, f)| format!("{m}.{f}"))
    }
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DecodeErrorKind::*;
        match self {
            MessageTooLarge { len, max } => write!(f, "message of {len} bytes exceeds the limit of {max}"),
            HeaderOutOfBounds { needed, available } => {
                write!(f, "header needs {needed} bytes, {available} available")
            }
            HeaderLength { declared, actual } => {
                write!(f, "nested header is {actual} bytes, its entry says {declared}")
            }
            UnknownFlags(x) => write!(f, "unknown header flags {x:#06x}"),
            ChunkOrder { chunk } => write!(f, "chunk {chunk} is not in ascending group order"),
            BadChunk { chunk } => write!(f, "chunk {chunk} is empty or names an invalid field number"),
            RankMismatch {
                chunk,
                found,
                expected,
            } => {
                write!(f, "chunk {chunk} has rank base {found}, expected {expected}")
            }
            EntryCount { found, expected } => {
                write!(f, "entry count {found} does not match the {expected} bits set")
            }
            RangeOutOfBounds {
                offset,
                len,
                message_len,
            } => write!(
                f,
                "range {offset}+{len} lies outside the {message_len}-byte message"
            ),
            ListLength { len, width } => {
                write!(
                    f,
                    "list of {len} bytes is not a multiple of the {width}-byte element"
                )
            }
            StructureOverlap { start, previous_end } => write!(
                f,
                "structure at {start} starts before the end of the previous one ({previous_end})"
            ),
            TooDeep { max } => write!(f, "nesting deeper than {max}"),
            TooManyElements { max } => write!(f, "more than {max} fields and elements"),
            OneofConflict { first, second } => {
                write!(f, "fields {first} and {second} of one oneof are both set")
            }
            MissingRequired => write!(f, "required field is missing"),
            MapKeyOrder { index } => {
                write!(
                    f,
                    "map entry {index} does not follow the previous key in strictly ascending order"
                )
            }
            InvalidUtf8 { valid_up_to } => {
                write!(f, "string is not UTF-8 (valid up to byte {valid_up_to})")
            }
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "decode error")?;
        let mut path = self.path();
        if let Some(first) = path.next() {
            write!(f, " in field `{first}")?;
            for p in path {
                write!(f, " > {p}")?;
            }
            write!(f, "`")?;
        }
        write!(f, " at byte {}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for DecodeError {}
