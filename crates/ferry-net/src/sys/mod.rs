//! The unsafe edge: syscalls that hand memory to the kernel. Everything else in the crate is
//! safe code, except the two call sites in `sender.rs` that pass a batch to these functions.

pub(crate) mod socket;
pub(crate) mod uring;

/// Reused scratch space for one call's gather list.
#[derive(Debug, Default)]
pub(crate) struct Iovecs(pub(crate) Vec<libc::iovec>);

// SAFETY: the entries are plain addresses, rebuilt from the send queue (whose buffers are
// `Send`) before each call and only passed to the kernel by the thread that owns the sender.
unsafe impl Send for Iovecs {}
