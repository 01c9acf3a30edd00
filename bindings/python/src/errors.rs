//! The exceptions: `ferry.Error` and, under it, one class per operation. Each carries what
//! the Rust error names as attributes (a decode error's `kind`, `offset` and `path`; an RPC
//! error's gRPC `code`).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(ferry, Error, PyException, "Every error Ferry raises.");
create_exception!(
    ferry,
    SchemaError,
    Error,
    "The .proto files do not load, or name no such message."
);
create_exception!(
    ferry,
    DecodeError,
    Error,
    "Bytes that are not a valid message: `kind` (the Rust DecodeErrorKind's name), `offset` (bytes \
     from the message start) and `path` (the fields from the root down, as `Message.field`)."
);
create_exception!(
    ferry,
    EncodeError,
    Error,
    "A value that does not fit its field (`path` names it), or JSON that does not fit the message."
);
create_exception!(
    ferry,
    RpcError,
    Error,
    "A call that failed: `code` (gRPC's number), `code_name` (`NOT_FOUND`...) and `details`."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("EncodeError", py.get_type::<EncodeError>())?;
    m.add("RpcError", py.get_type::<RpcError>())?;
    Ok(())
}

/// A `ferry_wire::DecodeError` as `ferry.DecodeError`.
pub(crate) fn decode_error(py: Python<'_>, e: &ferry_wire::DecodeError) -> PyErr {
    let kind = format!("{:?}", e.kind());
    let kind = kind.split([' ', '{', '(']).next().unwrap_or_default();
    let err = DecodeError::new_err(e.to_string());
    let value = err.value(py);
    // Setting attributes on a fresh exception object does not fail.
    let _ = value.setattr("kind", kind);
    let _ = value.setattr("offset", e.offset());
    let _ = value.setattr("path", e.path().collect::<Vec<_>>());
    err
}

/// An encode error at `path` (outermost first), saying `what`.
pub(crate) fn encode_error(py: Python<'_>, path: &[String], what: impl std::fmt::Display) -> PyErr {
    let text = if path.is_empty() {
        what.to_string()
    } else {
        // `items[0].s`: an index follows its field without a dot.
        let mut text = String::new();
        for seg in path {
            if !seg.starts_with('[') && !text.is_empty() {
                text.push('.');
            }
            text.push_str(seg);
        }
        format!("at `{text}`: {what}")
    };
    let err = EncodeError::new_err(text);
    let _ = err.value(py).setattr("path", path.to_vec());
    err
}

/// A failed call's status as `ferry.RpcError`.
pub(crate) fn rpc_error(py: Python<'_>, s: &ferry_rpc::Status) -> PyErr {
    let err = RpcError::new_err(format!("{}: {}", s.code.name(), s.message));
    let value = err.value(py);
    let _ = value.setattr("code", s.code as u8);
    let _ = value.setattr("code_name", s.code.name());
    let _ = value.setattr("details", s.message.as_str());
    err
}
