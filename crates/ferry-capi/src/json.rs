//! protobuf-JSON (ferry-reflect's `json`, the proto3 mapping) into a message and out of a view.
#![allow(unsafe_code)]

use std::ffi::c_char;

use ferry::wire::{Context, DynamicMessage};
use ferry_reflect::json;

use crate::error::{Error, ferry_status, guard};
use crate::msg::ferry_msg;
use crate::ptr;
use crate::schema::ferry_type;
use crate::view::ferry_view;

/// A new message of type `ty` from protobuf-JSON text (`len` bytes at `text`, UTF-8, no NUL
/// needed): fields by JSON or proto name, 64-bit integers as numbers or strings, `bytes` in
/// base64; an unknown field or a key given twice is refused (`FERRY_JSON`, the message naming
/// the path). Values are copied. On success `*out` is yours, as from `ferry_msg_new`.
///
/// # Safety
/// `ty` is live; `text` points to `len` bytes; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_from_json(
    ty: *const ferry_type,
    text: *const c_char,
    len: usize,
    out: *mut *mut ferry_msg,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live type and `len` bytes at `text` (header contract).
        let (ty, text) = unsafe { (ptr::arg(ty, "type")?, ptr::slice(text.cast::<u8>(), len, "text")?) };
        let bad = |e: &dyn std::fmt::Display| {
            Error::new(ferry_status::FERRY_JSON, format!("{}: {e}", ty.desc.name))
        };
        let text = std::str::from_utf8(text).map_err(|e| bad(&e))?;
        let doc = json::parse(text).map_err(|e| bad(&e))?;
        let md = ty
            .schema
            .descriptor(ty.desc.name)
            .ok_or_else(|| bad(&"not in its schema"))?;
        let msg = json::from_json(&md, ty.desc, &doc).map_err(|e| bad(&e))?;
        let handle = Box::new(ferry_msg {
            msg,
            schema: ty.schema.clone(),
        });
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// Reads the whole message (every field; strings checked to be UTF-8: `FERRY_DECODE` if not)
/// as canonical protobuf-JSON: one line, fields in number order, defaults of implicit-presence
/// fields left out. `*len` is set to the text's length (without its NUL) in every case but a
/// null argument; the text and a NUL are written to `out` if `cap` holds both, else the status
/// is `FERRY_BUFFER_TOO_SMALL` (call with `cap` 0 to learn the length).
///
/// # Safety
/// `view` is live; `out` points to `cap` writable bytes (or is null with `cap` 0); `len` is
/// valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_to_json(
    view: *const ferry_view,
    out: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live view (header contract).
        let v = unsafe { ptr::arg(view, "view") }?;
        let m = DynamicMessage::from_view(&v.view, Context::copy_only()).map_err(|e| Error::decode(&e))?;
        let md = v.schema.descriptor(v.view.desc().name).ok_or_else(|| {
            Error::new(
                ferry_status::FERRY_NOT_FOUND,
                format!("`{}` is not in its schema", v.view.desc().name),
            )
        })?;
        let mut text = String::new();
        json::to_json(&md, &m, &mut text);
        // SAFETY: `len` is writable (header contract).
        unsafe { ptr::out(len, "len", text.len()) }?;
        if text.len() >= cap {
            return Err(Error::new(
                ferry_status::FERRY_BUFFER_TOO_SMALL,
                format!(
                    "the JSON text needs {} bytes and a NUL; the buffer holds {cap}",
                    text.len()
                ),
            ));
        }
        // SAFETY: `cap > text.len()` writable bytes at `out` (header contract).
        let dest = unsafe { ptr::slice_mut(out.cast::<u8>(), text.len() + 1, "out") }?;
        dest[..text.len()].copy_from_slice(text.as_bytes());
        dest[text.len()] = 0;
        Ok(())
    })
}
