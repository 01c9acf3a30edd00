//! Lifetimes the compiler cannot see across the C boundary: descriptors, messages and views are
//! stored as `'static` beside (or, for C's memory, under the header's contract with) what they
//! borrow. Each object declares the borrowed owner after the borrowing field, so that the
//! borrower drops first.
#![allow(unsafe_code)]

use ferry::wire::{MessageDesc, View};

/// A schema's descriptor as `'static`.
///
/// # Safety
/// The object storing the result also holds an `Arc` of the schema that owns `desc`, dropped
/// after every use of the result.
pub(crate) unsafe fn desc<'s>(desc: &'s MessageDesc<'s>) -> &'static MessageDesc<'static> {
    // SAFETY: only the lifetime changes (`MessageDesc` is covariant and has no drop glue); the
    // schema stays alive for as long as the result is used, by the caller's contract.
    unsafe { std::mem::transmute::<&'s MessageDesc<'s>, &'static MessageDesc<'static>>(desc) }
}

/// A view as `'static`.
///
/// # Safety
/// The bytes the view reads (the caller's buffer, a response frame the storing object owns, or
/// a root view's bytes for a nested view) and its descriptor's schema stay alive and unchanged
/// for as long as the result is used.
pub(crate) unsafe fn view(view: View<'_>) -> View<'static> {
    // SAFETY: only the lifetime changes (`View` is `Copy`: no drop glue); what it borrows
    // outlives the result by the caller's contract.
    unsafe { std::mem::transmute::<View<'_>, View<'static>>(view) }
}

/// Bytes of C memory as `'static`.
///
/// # Safety
/// The memory stays alive and unchanged for as long as the result is used (the header's
/// contract for a buffer given to `ferry_view_decode`).
pub(crate) unsafe fn bytes(bytes: &[u8]) -> &'static [u8] {
    // SAFETY: only the lifetime changes; the caller keeps the memory alive and unchanged.
    unsafe { std::mem::transmute::<&[u8], &'static [u8]>(bytes) }
}
