//! Pointers from C: the one place they become references. Every function checks for null (an
//! `FERRY_INVALID_ARGUMENT` naming the argument) and trusts the rest of the header's contract:
//! a non-null pointer is what the header says (a live object made by this library, or memory
//! of the stated length), and nothing else uses it mutably meanwhile.
#![allow(unsafe_code)]

use std::ffi::{CStr, c_char};

use crate::error::{Error, ferry_status};

fn null(what: &str) -> Error {
    Error::new(ferry_status::FERRY_INVALID_ARGUMENT, format!("`{what}` is null"))
}

/// A shared reference to `*p`.
///
/// # Safety
/// `p` is null or points to a live `T` not mutated for `'a`.
pub(crate) unsafe fn arg<'a, T>(p: *const T, what: &str) -> Result<&'a T, Error> {
    // SAFETY: null is checked by `as_ref`; the rest is the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| null(what))
}

/// An exclusive reference to `*p`.
///
/// # Safety
/// `p` is null or points to a live `T` used by nothing else for `'a`.
pub(crate) unsafe fn arg_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Error> {
    // SAFETY: null is checked by `as_mut`; the rest is the caller's contract.
    unsafe { p.as_mut() }.ok_or_else(|| null(what))
}

/// Writes `value` to the out-parameter `p` (what it held is overwritten, not dropped).
///
/// # Safety
/// `p` is null or valid for a write of a `T`.
pub(crate) unsafe fn out<T>(p: *mut T, what: &str, value: T) -> Result<(), Error> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: not null, and writable by the caller's contract; `write` drops nothing.
    unsafe { p.write(value) };
    Ok(())
}

/// A NUL-terminated UTF-8 text.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that lives, unchanged, for `'a`.
pub(crate) unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: not null, NUL-terminated and live by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes.to_str().map_err(|e| {
        Error::new(
            ferry_status::FERRY_INVALID_ARGUMENT,
            format!("`{what}` is not UTF-8: {e}"),
        )
    })
}

/// `len` elements at `p` (null is accepted when `len` is 0).
///
/// # Safety
/// `p` is null or points to `len` initialized `T`s, unchanged for `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: not null, `len` elements, live and unchanged by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// `len` writable elements at `p` (null is accepted when `len` is 0), zeroed first: C memory
/// may be uninitialized, and a reference must not see that.
///
/// # Safety
/// `p` is null or points to `len` `T`s nothing else reads or writes for `'a`; all-zero bytes are
/// a valid `T` (bytes, `ferry_slice`).
pub(crate) unsafe fn slice_mut<'a, T: Copy>(p: *mut T, len: usize, what: &str) -> Result<&'a mut [T], Error> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: not null, `len` elements, exclusively ours by the caller's contract; zeroed (a
    // valid `T`, by the contract) before the slice is made.
    Ok(unsafe {
        p.write_bytes(0, len);
        std::slice::from_raw_parts_mut(p, len)
    })
}

/// Takes back an object the library handed out with [`Box::into_raw`] (`None` for null).
///
/// # Safety
/// `p` is null or came from `Box::<T>::into_raw` in this library and is not used again.
pub(crate) unsafe fn take<T>(p: *mut T) -> Option<Box<T>> {
    // SAFETY: null is checked; otherwise a box of ours, given back once, by the caller's contract.
    (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
}
