//! The tokio driver (being written).
