//! The two places where Python's ownership is stronger than what Rust's types can see, and the
//! only unsafe code of the crate.
//!
//! - [`Held`]: a [`View`] of a Python `bytes` object against a descriptor of a schema, kept in a
//!   Python object. Its borrows are valid as long as the bytes object and the schema live, and
//!   the `Held` owns a reference to both ([`Backing`]). It hands the view out only with the
//!   lifetime of a borrow of itself.
//! - [`Unsync`]: a `!Send` value (the RPC channel, a response frame) carried through
//!   `Python::detach`, which runs its closure on the calling thread while the GIL is released.
#![allow(unsafe_code)]

use std::sync::{Arc, OnceLock};

use ferry_wire::{DecodeError, Limits, MessageDesc, View};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView};

/// What a view borrows: the schema that owns its descriptor and the bytes object it reads.
pub(crate) struct Backing {
    pub(crate) schema: Arc<ferry_reflect::Schema>,
    pub(crate) data: Py<PyBytes>,
    /// A memoryview of all of `data`, made on first use: `bytes` fields are slices of it.
    pub(crate) memoryview: OnceLock<Py<PyMemoryView>>,
}

/// A validated view that owns what it borrows.
pub(crate) struct Held {
    /// Borrows `backing.schema`'s descriptors and `backing.data`'s bytes, not for `'static`:
    /// never handed out as `View<'static>`.
    view: View<'static>,
    backing: Arc<Backing>,
}

impl Held {
    /// Validates `backing.data` as a `message` of `backing.schema` (`None`: no such message).
    pub(crate) fn decode(
        py: Python<'_>,
        backing: Arc<Backing>,
        message: &str,
        limits: &Limits,
    ) -> Option<Result<Held, DecodeError>> {
        let desc: &MessageDesc<'_> = backing.schema.message(message)?;
        let data: &[u8] = backing.data.as_bytes(py);
        let view = match View::decode(data, desc, limits) {
            Ok(view) => view,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: `view` borrows `desc`, which lives in the arena of the `Schema` that
        // `backing.schema` keeps alive at a fixed address (an Arc), and `data`, the contents
        // of an immutable `bytes` object that `backing.data` keeps alive (CPython never moves
        // an object, and a `bytes` object's contents never change). The Arc is stored beside
        // the view and dropped after it, and the view is only handed out by `view()`, with the
        // lifetime of a borrow of `self`.
        let view = unsafe { std::mem::transmute::<View<'_>, View<'static>>(view) };
        Some(Ok(Held { view, backing }))
    }

    /// The view, for as long as `self` is borrowed.
    pub(crate) fn view(&self) -> View<'_> {
        self.view
    }

    /// What it borrows.
    pub(crate) fn backing(&self) -> &Arc<Backing> {
        &self.backing
    }

    /// A view that `project` derives from this one (a nested message, an element of a
    /// repeated message field), held the same way.
    pub(crate) fn project(&self, project: impl for<'a> FnOnce(View<'a>) -> Option<View<'a>>) -> Option<Held> {
        let child = project(self.view())?;
        // SAFETY: `project` works for every lifetime, so `child` borrows nothing but what
        // `self.view` borrows (or `'static` data): the schema and bytes that `backing`, cloned
        // into the new `Held`, keeps alive (see `decode`).
        let view = unsafe { std::mem::transmute::<View<'_>, View<'static>>(child) };
        Some(Held {
            view,
            backing: self.backing.clone(),
        })
    }
}

/// A value that is not `Send`, carried through `Python::detach` (which requires `Send`).
pub(crate) struct Unsync<T>(pub(crate) T);

// SAFETY: `Unsync` is built by the thread that holds the value and is only passed to
// `Python::detach`, which runs its closure on that same thread before it returns: the value
// never reaches another thread.
unsafe impl<T> Send for Unsync<T> {}
