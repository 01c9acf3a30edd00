//! `ferry_schema` (`.proto` files loaded at run time) and `ferry_type` (one message type of it).
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::sync::Arc;

use ferry::wire::{FieldDesc, MessageDesc};
use ferry_reflect::Schema;

use crate::error::{Error, ferry_status, guard};
use crate::{erase, ptr};

/// Loaded `.proto` files. Thread-safe. Types, messages and views made from it keep what they
/// need of it alive: it may be freed before them.
pub struct ferry_schema {
    pub(crate) schema: Arc<Schema>,
}

/// One message type of a schema: what messages are built as and bytes decoded as.
pub struct ferry_type {
    pub(crate) desc: &'static MessageDesc<'static>,
    /// Owns `desc` (declared after it: dropped after it).
    pub(crate) schema: Arc<Schema>,
}

impl ferry_type {
    /// The type of `desc`, a descriptor of `schema`.
    pub(crate) fn of(schema: &Arc<Schema>, desc: &MessageDesc<'_>) -> ferry_type {
        ferry_type {
            // SAFETY: `desc` is `schema`'s, which the new object holds.
            desc: unsafe { erase::desc(desc) },
            schema: Arc::clone(schema),
        }
    }
}

/// The field `number` of `desc`.
pub(crate) fn field<'d>(desc: &'d MessageDesc<'d>, number: u32) -> Result<&'d FieldDesc<'d>, Error> {
    desc.field(number).ok_or_else(|| {
        Error::new(
            ferry_status::FERRY_NOT_FOUND,
            format!("message `{}` has no field {number}", desc.name),
        )
    })
}

/// The number of the field called `name` in `desc`; 0 (and a `FERRY_NOT_FOUND` last error)
/// if there is none.
///
/// # Safety
/// `name` is null or NUL-terminated.
pub(crate) unsafe fn field_number(desc: &MessageDesc<'_>, name: *const c_char) -> u32 {
    crate::error::guard_value(0, || {
        // SAFETY: a NUL-terminated string (header contract).
        let name = unsafe { ptr::text(name, "name") }?;
        desc.field_by_name(name).map(|f| f.number).ok_or_else(|| {
            Error::new(
                ferry_status::FERRY_NOT_FOUND,
                format!("message `{}` has no field `{name}`", desc.name),
            )
        })
    })
}

/// Loads `.proto` files (`files[0..nfiles]`, each found directly or under one of
/// `includes[0..nincludes]`, which also resolve imports), with no `protoc`. On success
/// `*out` is yours: free it with `ferry_schema_free`. `FERRY_SCHEMA`: the message names the
/// file and line.
///
/// # Safety
/// `files` and `includes` point to that many NUL-terminated strings (or are null with a count
/// of 0); `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_schema_load(
    files: *const *const c_char,
    nfiles: usize,
    includes: *const *const c_char,
    nincludes: usize,
    out: *mut *mut ferry_schema,
) -> ferry_status {
    guard(|| {
        // SAFETY: arrays of NUL-terminated strings of the given lengths (header contract).
        let (files, includes) = unsafe {
            (
                texts(files, nfiles, "files")?,
                texts(includes, nincludes, "includes")?,
            )
        };
        let schema = Schema::load(&files, &includes)
            .map_err(|e| Error::new(ferry_status::FERRY_SCHEMA, e.to_string()))?;
        let handle = Box::new(ferry_schema {
            schema: Arc::new(schema),
        });
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// # Safety
/// `p` points to `n` NUL-terminated strings (or is null with `n` 0).
unsafe fn texts<'a>(p: *const *const c_char, n: usize, what: &str) -> Result<Vec<&'a str>, Error> {
    // SAFETY: `n` pointers, by this function's contract.
    let ptrs = unsafe { ptr::slice(p, n, what) }?;
    // SAFETY: each a NUL-terminated string, by this function's contract.
    ptrs.iter().map(|&s| unsafe { ptr::text(s, what) }).collect()
}

/// Frees a schema handle (null is ignored). Types, messages and views made from it stay valid.
///
/// # Safety
/// `schema` is null or from `ferry_schema_load`, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_schema_free(schema: *mut ferry_schema) {
    // SAFETY: a schema of ours, given back once (header contract).
    drop(unsafe { ptr::take(schema) });
}

/// The message type called `name` (full name: `package.Message`, nested `package.Outer.Inner`).
/// On success `*out` is yours: free it with `ferry_type_free`. `FERRY_NOT_FOUND` if the schema
/// has no such message.
///
/// # Safety
/// `schema` is a live schema; `name` is NUL-terminated; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_schema_type(
    schema: *const ferry_schema,
    name: *const c_char,
    out: *mut *mut ferry_type,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live schema and a NUL-terminated name (header contract).
        let (schema, name) = unsafe { (ptr::arg(schema, "schema")?, ptr::text(name, "name")?) };
        let desc = schema.schema.message(name).ok_or_else(|| {
            Error::new(
                ferry_status::FERRY_NOT_FOUND,
                format!("the schema has no message `{name}`"),
            )
        })?;
        let handle = Box::new(ferry_type::of(&schema.schema, desc));
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// Frees a type handle (null is ignored). Messages and views of the type stay valid.
///
/// # Safety
/// `ty` is null or from this library, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_type_free(ty: *mut ferry_type) {
    // SAFETY: a type of ours, given back once (header contract).
    drop(unsafe { ptr::take(ty) });
}
