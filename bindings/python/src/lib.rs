//! The Python package `ferry` (its extension module, `ferry._ferry`): Ferry's run-time schemas,
//! zero-copy views and blocking RPC channel, wrapping the Rust crates. Nothing of the wire
//! format is implemented here: encoding and validation are `ferry-wire`'s, schemas and
//! protobuf-JSON `ferry-reflect`'s, calls `ferry-rpc`'s.
//!
//! ```text
//! Schema.load ─> Schema (Arc<ferry_reflect::Schema>: owns every descriptor)
//!   .message("pkg.Msg") ─> MessageType (the schema + the message's name)
//!     .encode(dict) ─> bytes            (a DynamicMessage, encoded with every value copied)
//!     .decode(bytes) ─> View            (validated once; holds the schema and the bytes object)
//!        .field / ["field"] ─> int, float, str, View, list, dict, or a memoryview of the
//!                              bytes object (no copy; it keeps the bytes object alive)
//! Channel(addr).call(path, request bytes) ─> response bytes (the GIL released while waiting)
//! ```
//!
//! What it is not: a protobuf runtime (no generated classes, no mutation of views), or a
//! second implementation of the format.

mod channel;
mod encode;
mod errors;
mod held;
mod schema;
mod view;

use pyo3::prelude::*;

/// The extension module: its classes and exceptions (re-exported by `ferry/__init__.py`).
#[pymodule]
fn _ferry(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<schema::Schema>()?;
    m.add_class::<schema::MessageType>()?;
    m.add_class::<view::View>()?;
    m.add_class::<channel::Channel>()?;
    errors::register(m)?;
    Ok(())
}
