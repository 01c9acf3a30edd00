//! Errors: a status code returned by every call that can fail, and the last error's details
//! kept per thread (errno-like), read with `ferry_last_error*`.
//!
//! Every entry point runs its body under [`guard`], which catches a panic (a bug) and turns it
//! into `FERRY_PANIC`: no unwinding crosses the C boundary.
// `no_mangle` alone (no unsafe block here).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a call returned. `FERRY_OK` is 0; any other value is an error whose message (and,
/// where they apply, byte offset and gRPC code) the `ferry_last_error*` functions give on the
/// same thread until the next failing call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferry_status {
    /// Success.
    FERRY_OK = 0,
    /// A null pointer, a text that is not UTF-8, a value out of range, an address that does
    /// not parse.
    FERRY_INVALID_ARGUMENT = 1,
    /// No such message type or field.
    FERRY_NOT_FOUND = 2,
    /// The value or accessor does not fit the field's type (or a string is not UTF-8).
    FERRY_TYPE_MISMATCH = 3,
    /// The `.proto` files do not load.
    FERRY_SCHEMA = 4,
    /// The message cannot be encoded (a required field unset, the format's size limit).
    FERRY_ENCODE = 5,
    /// The bytes are not a valid message of the type: `ferry_last_error_offset` says where.
    FERRY_DECODE = 6,
    /// The pool has no room.
    FERRY_NO_MEMORY = 7,
    /// The call failed: `ferry_last_error_rpc_code` gives its gRPC status code.
    FERRY_RPC = 8,
    /// A bug in Ferry (a panic, caught at the boundary): please report the message.
    FERRY_PANIC = 9,
    /// The JSON text is not a message of the type (the message names the field path).
    FERRY_JSON = 10,
    /// The output buffer is too small: the length out-parameter says how much is needed.
    FERRY_BUFFER_TOO_SMALL = 11,
}

/// An error on its way to the caller: what is kept as the thread's last error.
#[derive(Debug)]
pub(crate) struct Error {
    status: ferry_status,
    message: String,
    offset: u64,
    rpc_code: i32,
    kind: String,
    path: String,
}

impl Error {
    pub(crate) fn new(status: ferry_status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
            offset: 0,
            rpc_code: 0,
            kind: String::new(),
            path: String::new(),
        }
    }

    /// A decode error of `kind` at byte `offset`, in the field `path` (outermost first).
    pub(crate) fn at(message: impl Into<String>, kind: &str, offset: u64, path: String) -> Error {
        Error {
            offset,
            kind: kind.to_owned(),
            path,
            ..Error::new(ferry_status::FERRY_DECODE, message)
        }
    }

    /// A decode error: its kind's name, offset and field path are kept.
    pub(crate) fn decode(e: &ferry::wire::DecodeError) -> Error {
        let debug = format!("{:?}", e.kind());
        let kind: String = debug.chars().take_while(char::is_ascii_alphanumeric).collect();
        let path = e.path().collect::<Vec<_>>().join(" > ");
        Error::at(e.to_string(), &kind, e.offset(), path)
    }

    /// A failed call, with its gRPC code.
    pub(crate) fn rpc(s: &ferry::rpc::Status) -> Error {
        Error {
            rpc_code: s.code as i32,
            ..Error::new(ferry_status::FERRY_RPC, format!("{:?}: {}", s.code, s.message))
        }
    }
}

struct LastError {
    message: CString,
    offset: u64,
    rpc_code: i32,
    kind: CString,
    path: CString,
}

/// `text` as a C string (cut at a NUL, if it has one).
fn c_string(text: String) -> CString {
    let mut bytes = text.into_bytes();
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    CString::new(bytes).unwrap_or_default()
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError {
        message: CString::default(),
        offset: 0,
        rpc_code: 0,
        kind: CString::default(),
        path: CString::default(),
    });
}

fn record(e: Error) -> ferry_status {
    LAST.with(|l| {
        *l.borrow_mut() = LastError {
            message: c_string(e.message),
            offset: e.offset,
            rpc_code: e.rpc_code,
            kind: c_string(e.kind),
            path: c_string(e.path),
        }
    });
    e.status
}

/// Runs an entry point's body: its error becomes the thread's last error and its status, and
/// a panic becomes `FERRY_PANIC` (never unwinding into C).
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Error>) -> ferry_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => ferry_status::FERRY_OK,
        Ok(Err(e)) => record(e),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            record(Error::new(
                ferry_status::FERRY_PANIC,
                format!("panic in ferry: {what}"),
            ))
        }
    }
}

/// [`guard`] for entry points that return a value rather than a status: `fallback` on error.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> Result<T, Error>) -> T {
    let mut value = None;
    guard(|| {
        value = Some(body()?);
        Ok(())
    });
    value.unwrap_or(fallback)
}

/// The last error's message on this thread (UTF-8, NUL-terminated; "" if none yet). Owned by
/// the library: valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn ferry_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().message.as_ptr())
}

/// The byte offset of the last `FERRY_DECODE` error on this thread, from the start of the
/// message (0 for other errors).
#[unsafe(no_mangle)]
pub extern "C" fn ferry_last_error_offset() -> u64 {
    LAST.with(|l| l.borrow().offset)
}

/// The gRPC status code of the last `FERRY_RPC` error on this thread (0 for other errors).
#[unsafe(no_mangle)]
pub extern "C" fn ferry_last_error_rpc_code() -> i32 {
    LAST.with(|l| l.borrow().rpc_code)
}

/// The kind of the last `FERRY_DECODE` error on this thread: the name of Rust's
/// `DecodeErrorKind` variant (`RangeOutOfBounds`, `InvalidUtf8`, ...; "" for other errors).
/// Valid as `ferry_last_error`'s text is.
#[unsafe(no_mangle)]
pub extern "C" fn ferry_last_error_kind() -> *const c_char {
    LAST.with(|l| l.borrow().kind.as_ptr())
}

/// The field path of the last `FERRY_DECODE` error on this thread, outermost first, as
/// `package.Message.field` entries joined by " > " ("" at the top level or for other errors).
/// Valid as `ferry_last_error`'s text is.
#[unsafe(no_mangle)]
pub extern "C" fn ferry_last_error_path() -> *const c_char {
    LAST.with(|l| l.borrow().path.as_ptr())
}
