//! Errors of pool and buffer operations.

/// Errors of pool operations.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolError {
    /// The request exceeds the largest size class: split the data or raise `region_size`.
    #[error("allocation of {requested} bytes exceeds the largest size class ({max} bytes)")]
    TooLarge {
        /// Bytes asked for.
        requested: usize,
        /// The largest size class (the region size).
        max: usize,
    },
    /// Every slot of this class is in use and `max_bytes` forbids another region. Back off
    /// (wait for buffers to be released) or copy into ordinary memory instead.
    #[error("pool exhausted: size class {class} bytes, limit {max_bytes} bytes")]
    Exhausted {
        /// The size class that had no free slot.
        class: usize,
        /// The configured limit.
        max_bytes: usize,
    },
    /// The configuration is invalid; the message names the rule broken.
    #[error("invalid pool configuration: {0}")]
    Config(&'static str),
    /// Reserving or mapping memory failed; the message carries the OS error.
    #[error("mapping a region failed: {0}")]
    Map(String),
}

/// A write would exceed a [`BufMut`](crate::BufMut)'s capacity.
#[derive(Debug, thiserror::Error)]
#[error("buffer capacity exceeded")]
pub struct CapacityError;
