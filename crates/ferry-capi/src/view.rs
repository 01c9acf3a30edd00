//! `ferry_view`: a message validated once and read in place, with typed accessors that return
//! values, or pointers into the received bytes.
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::sync::Arc;

use ferry::rpc::Response;
use ferry::wire::{FieldDesc, Kind, Label, Limits, Scalar, View};
use ferry_reflect::Schema;

use crate::error::{Error, ferry_status, guard, guard_value};
use crate::schema::{ferry_type, field, field_number};
use crate::{erase, ptr};

/// A validated message, read in place. A root view (from `ferry_view_decode` or
/// `ferry_channel_call`) reads the bytes it was decoded from; a nested view (from
/// `ferry_view_msg`/`ferry_view_msg_at`) reads its root's, and is valid only while its root is.
/// Accessors never copy: a pointer they return is valid while the root view is (and, for
/// `ferry_view_decode`, while your bytes are).
pub struct ferry_view {
    pub(crate) view: View<'static>,
    /// A response frame the view reads (declared after `view`: dropped after it).
    _frame: Option<Box<Response<()>>>,
    /// The schema of the view's type.
    pub(crate) schema: Arc<Schema>,
}

impl ferry_view {
    /// A root view of a response frame.
    pub(crate) fn of_response(
        ty: &ferry_type,
        response: Response<()>,
        limits: &Limits,
    ) -> Result<ferry_view, Error> {
        use ferry::transport::Received;
        let frame = Box::new(response);
        let view = frame
            .frame()
            .view(ty.desc, limits)
            .map_err(|e| Error::decode(&e))?;
        Ok(ferry_view {
            // SAFETY: the view reads the frame, which the new object owns in a box that does
            // not move, and `ty`'s schema, which it holds.
            view: unsafe { erase::view(view) },
            _frame: Some(frame),
            schema: Arc::clone(&ty.schema),
        })
    }
}

/// `len` bytes, in place: a `bytes` or `string` value. `ptr` is null for an absent field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ferry_slice {
    /// First byte (not NUL-terminated).
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl ferry_slice {
    const ABSENT: ferry_slice = ferry_slice {
        ptr: std::ptr::null(),
        len: 0,
    };

    fn of(bytes: &[u8]) -> ferry_slice {
        ferry_slice {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }
}

/// What a decoder accepts (`docs/wire-format.md` section 8.2).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ferry_limits {
    /// Largest message, in bytes.
    pub max_message_len: u64,
    /// Deepest nesting (the root is depth 0; at most 256).
    pub max_depth: u32,
    /// Most fields and list elements over the whole message.
    pub max_elements: u64,
}

/// The default limits: 64 MiB, depth 64, 4 Mi elements (change a field, pass the rest).
#[unsafe(no_mangle)]
pub extern "C" fn ferry_limits_default() -> ferry_limits {
    let l = Limits::default();
    ferry_limits {
        max_message_len: l.max_message_len,
        max_depth: l.max_depth,
        max_elements: l.max_elements,
    }
}

/// Validates `len` bytes at `data` as a message of type `ty`, within `limits` (null: the
/// defaults). On success `*out` is yours: free it with `ferry_view_free`. It reads `data` in
/// place: keep those bytes alive and unchanged until then. `FERRY_DECODE`: the
/// `ferry_last_error*` functions give the kind, byte offset and field path.
///
/// # Safety
/// `ty` is live; `data` points to `len` bytes (or is null with `len` 0) that stay alive and
/// unchanged until the view is freed; `limits` is null or valid; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_decode(
    ty: *const ferry_type,
    data: *const u8,
    len: usize,
    limits: *const ferry_limits,
    out: *mut *mut ferry_view,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live type, `len` bytes at `data`, null or valid limits (header contract).
        let (ty, data, limits) = unsafe {
            (
                ptr::arg(ty, "type")?,
                ptr::slice(data, len, "data")?,
                limits.as_ref(),
            )
        };
        let limits = limits.map_or_else(Limits::default, |l| Limits {
            max_message_len: l.max_message_len,
            max_depth: l.max_depth,
            max_elements: l.max_elements,
        });
        // SAFETY: the caller keeps `data` alive and unchanged until the view is freed.
        let data = unsafe { erase::bytes(data) };
        let view = View::decode(data, ty.desc, &limits).map_err(|e| Error::decode(&e))?;
        let handle = Box::new(ferry_view {
            view,
            _frame: None,
            schema: Arc::clone(&ty.schema),
        });
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// Frees a view (null is ignored): a root view releases what it reads (a response frame); free
/// its nested views first.
///
/// # Safety
/// `view` is null or a view of this library, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_free(view: *mut ferry_view) {
    // SAFETY: a view of ours, given back once (header contract).
    drop(unsafe { ptr::take(view) });
}

/// The number of the field called `name`; 0 if there is none (with a `FERRY_NOT_FOUND` last
/// error). Accessors take field numbers: look names up once.
///
/// # Safety
/// `view` is live; `name` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_field(view: *const ferry_view, name: *const c_char) -> u32 {
    // SAFETY: a live view (header contract).
    match unsafe { view.as_ref() } {
        // SAFETY: a NUL-terminated name (header contract).
        Some(v) => unsafe { field_number(v.view.desc(), name) },
        None => 0,
    }
}

/// Whether field `number` is present (a repeated field: not empty). False for null.
///
/// # Safety
/// `view` is null or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_has(view: *const ferry_view, number: u32) -> bool {
    // SAFETY: null or live (header contract).
    unsafe { view.as_ref() }.is_some_and(|v| v.view.has(number))
}

/// The number of elements of repeated field `number` (of a map: its entries); 0 if absent, and
/// 0 with a `FERRY_TYPE_MISMATCH` or `FERRY_NOT_FOUND` last error for a singular or unknown one.
///
/// # Safety
/// `view` is live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_count(view: *const ferry_view, number: u32) -> usize {
    guard_value(0, || {
        // SAFETY: a live view (header contract).
        let v = unsafe { ptr::arg(view, "view") }?.view;
        let f = field(v.desc(), number)?;
        if f.label != Label::Repeated {
            return Err(wrong(&v, f, "ferry_view_count"));
        }
        Ok(match class(f.kind) {
            Class::Bool => v.scalars::<bool>(number).len(),
            Class::I32 => v.scalars::<i32>(number).len(),
            Class::I64 => v.scalars::<i64>(number).len(),
            Class::U32 => v.scalars::<u32>(number).len(),
            Class::U64 => v.scalars::<u64>(number).len(),
            Class::F32 => v.scalars::<f32>(number).len(),
            Class::F64 => v.scalars::<f64>(number).len(),
            Class::Bytes => v.bytes_list(number).len(),
            Class::Message => v.messages(number).len(),
        })
    })
}

/// What C type reads a field kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Bool,
    I32,
    I64,
    U32,
    U64,
    F32,
    F64,
    Bytes,
    Message,
}

fn class(kind: Kind<'_>) -> Class {
    match kind {
        Kind::Bool => Class::Bool,
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => Class::I32,
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => Class::I64,
        Kind::UInt32 | Kind::Fixed32 => Class::U32,
        Kind::UInt64 | Kind::Fixed64 => Class::U64,
        Kind::Float => Class::F32,
        Kind::Double => Class::F64,
        Kind::String | Kind::Bytes => Class::Bytes,
        Kind::Message(_) => Class::Message,
    }
}

fn wrong(v: &View<'_>, f: &FieldDesc<'_>, accessor: &str) -> Error {
    let repeated = if f.label == Label::Repeated {
        "repeated "
    } else {
        ""
    };
    Error::new(
        ferry_status::FERRY_TYPE_MISMATCH,
        format!(
            "field `{}.{}` is {repeated}{:?}: {accessor} does not read it",
            v.desc().name,
            f.name,
            f.kind
        ),
    )
}

/// The field `number` of `v`, if `accessor` (of class `want`, for elements when `at`) reads it.
fn checked<'d>(
    v: &View<'d>,
    number: u32,
    want: Class,
    at: bool,
    accessor: &str,
) -> Result<&'d FieldDesc<'d>, Error> {
    let f = field(v.desc(), number)?;
    if class(f.kind) != want || (f.label == Label::Repeated) != at {
        return Err(wrong(v, f, accessor));
    }
    Ok(f)
}

fn out_of_range(v: &View<'_>, number: u32, index: usize, len: usize) -> Error {
    Error::new(
        ferry_status::FERRY_NOT_FOUND,
        format!(
            "index {index} of field {number} of `{}`: it has {len} elements",
            v.desc().name
        ),
    )
}

/// Reads a scalar: singular (`index` `None`; an absent field reads as 0) or an element.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
unsafe fn scalar<T: Scalar + Default>(
    view: *const ferry_view,
    number: u32,
    index: Option<usize>,
    want: Class,
    accessor: &str,
    out: *mut T,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live view (this function's contract).
        let v = unsafe { ptr::arg(view, "view") }?.view;
        checked(&v, number, want, index.is_some(), accessor)?;
        let value = match index {
            None => v.scalar::<T>(number).unwrap_or_default(),
            Some(i) => {
                let list = v.scalars::<T>(number);
                list.get(i)
                    .ok_or_else(|| out_of_range(&v, number, i, list.len()))?
            }
        };
        // SAFETY: `out` is writable (this function's contract).
        unsafe { ptr::out(out, "out", value) }
    })
}

/// Reads singular field `number` (`bool`) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_bool(
    view: *const ferry_view,
    number: u32,
    out: *mut bool,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::Bool, "ferry_view_bool", out) }
}

/// Reads element `index` of repeated field `number` (`bool`) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_bool_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut bool,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::Bool, "ferry_view_bool_at", out) }
}

/// Reads singular field `number` (`int32`, `sint32`, `sfixed32`, or an enum's number) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_i32(view: *const ferry_view, number: u32, out: *mut i32) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::I32, "ferry_view_i32", out) }
}

/// Reads element `index` of repeated field `number` (`int32`, `sint32`, `sfixed32`, or an enum's number) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_i32_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut i32,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::I32, "ferry_view_i32_at", out) }
}

/// Reads singular field `number` (`int64`, `sint64`, `sfixed64`) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_i64(view: *const ferry_view, number: u32, out: *mut i64) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::I64, "ferry_view_i64", out) }
}

/// Reads element `index` of repeated field `number` (`int64`, `sint64`, `sfixed64`) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_i64_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut i64,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::I64, "ferry_view_i64_at", out) }
}

/// Reads singular field `number` (`uint32`, `fixed32`) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_u32(view: *const ferry_view, number: u32, out: *mut u32) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::U32, "ferry_view_u32", out) }
}

/// Reads element `index` of repeated field `number` (`uint32`, `fixed32`) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_u32_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut u32,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::U32, "ferry_view_u32_at", out) }
}

/// Reads singular field `number` (`uint64`, `fixed64`) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_u64(view: *const ferry_view, number: u32, out: *mut u64) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::U64, "ferry_view_u64", out) }
}

/// Reads element `index` of repeated field `number` (`uint64`, `fixed64`) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_u64_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut u64,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::U64, "ferry_view_u64_at", out) }
}

/// Reads singular field `number` (`float`) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_f32(view: *const ferry_view, number: u32, out: *mut f32) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::F32, "ferry_view_f32", out) }
}

/// Reads element `index` of repeated field `number` (`float`) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_f32_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut f32,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::F32, "ferry_view_f32_at", out) }
}

/// Reads singular field `number` (`double`) into `*out`: its default (0) when absent.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_f64(view: *const ferry_view, number: u32, out: *mut f64) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, None, Class::F64, "ferry_view_f64", out) }
}

/// Reads element `index` of repeated field `number` (`double`) into `*out`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_f64_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut f64,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { scalar(view, number, Some(index), Class::F64, "ferry_view_f64_at", out) }
}

/// The `bytes`/`string` field `number` of `view`, if `accessor` (`text`: UTF-8 checked, a
/// `string` field only; `list`: a repeated field) reads it.
fn bytes_field<'d>(
    v: &View<'d>,
    number: u32,
    list: bool,
    text: bool,
    accessor: &str,
) -> Result<&'d FieldDesc<'d>, Error> {
    let f = checked(v, number, Class::Bytes, list, accessor)?;
    if text && !matches!(f.kind, Kind::String) {
        return Err(wrong(v, f, accessor));
    }
    Ok(f)
}

/// `b`, a value of field `f` of `v`, checked to be UTF-8 (an `InvalidUtf8` decode error at its
/// first bad byte if not).
fn utf8(v: &View<'_>, f: &FieldDesc<'_>, b: &[u8]) -> Result<(), Error> {
    let Err(e) = std::str::from_utf8(b) else {
        return Ok(());
    };
    let at = b.as_ptr() as usize - v.root().as_ptr() as usize + e.valid_up_to();
    let path = format!("{}.{}", v.desc().name, f.name);
    let what = format!("field `{path}` is not UTF-8 at byte {at}");
    Err(Error::at(what, "InvalidUtf8", at as u64, path))
}

/// Reads singular `bytes`/`string` field `number` in place (`text`: UTF-8 checked).
///
/// # Safety
/// `view` is live; `out` is valid for a write.
unsafe fn bytes(
    view: *const ferry_view,
    number: u32,
    text: bool,
    accessor: &str,
    out: *mut ferry_slice,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live view (this function's contract).
        let v = unsafe { ptr::arg(view, "view") }?.view;
        let f = bytes_field(&v, number, false, text, accessor)?;
        let value = v.bytes(number);
        if text && let Some(b) = value {
            utf8(&v, f, b)?;
        }
        // SAFETY: `out` is writable (this function's contract).
        unsafe { ptr::out(out, "out", value.map_or(ferry_slice::ABSENT, ferry_slice::of)) }
    })
}

/// Reads the elements of repeated `bytes`/`string` field `number` in place into `out[..cap]`
/// (`text`: each UTF-8 checked); `*count` is the number of elements.
///
/// # Safety
/// `view` is live; `out` points to `cap` writable slices (or is null with `cap` 0); `count` is
/// valid for a write.
unsafe fn bytes_list(
    view: *const ferry_view,
    number: u32,
    text: bool,
    accessor: &str,
    out: *mut ferry_slice,
    cap: usize,
    count: *mut usize,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live view (this function's contract).
        let v = unsafe { ptr::arg(view, "view") }?.view;
        let f = bytes_field(&v, number, true, text, accessor)?;
        let list = v.bytes_list(number);
        // SAFETY: `count` is writable (this function's contract).
        unsafe { ptr::out(count, "count", list.len()) }?;
        let n = cap.min(list.len());
        // SAFETY: `cap` writable slices at `out` (this function's contract); `n <= cap`.
        let out = unsafe { ptr::slice_mut(out, n, "out") }?;
        for (slot, b) in out.iter_mut().zip(list.iter()) {
            if text {
                utf8(&v, f, b)?;
            }
            *slot = ferry_slice::of(b);
        }
        Ok(())
    })
}

/// Reads singular field `number` (`bytes` or `string`) in place: `out->ptr` points into the
/// received bytes (null when absent), valid while the root view is.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_bytes(
    view: *const ferry_view,
    number: u32,
    out: *mut ferry_slice,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { bytes(view, number, false, "ferry_view_bytes", out) }
}

/// Reads repeated field `number` (`bytes` or `string`) in place, in one call: its first `cap`
/// elements into `out[0..cap]` (pointers into the received bytes, valid while the root view
/// is), and its number of elements into `*count` (pass `cap` 0 to learn it).
///
/// # Safety
/// `view` is live; `out` points to `cap` writable `ferry_slice`s (or is null with `cap` 0);
/// `count` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_bytes_list(
    view: *const ferry_view,
    number: u32,
    out: *mut ferry_slice,
    cap: usize,
    count: *mut usize,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { bytes_list(view, number, false, "ferry_view_bytes_list", out, cap, count) }
}

/// Reads singular `string` field `number` in place, checked to be UTF-8 (`FERRY_DECODE`, kind
/// `InvalidUtf8`, at the first bad byte, if not). Not NUL-terminated: use `out->len`.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_str(
    view: *const ferry_view,
    number: u32,
    out: *mut ferry_slice,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { bytes(view, number, true, "ferry_view_str", out) }
}

/// Reads repeated `string` field `number` in place, as `ferry_view_bytes_list` does, each
/// element read checked to be UTF-8 as `ferry_view_str` checks.
///
/// # Safety
/// As for `ferry_view_bytes_list`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_str_list(
    view: *const ferry_view,
    number: u32,
    out: *mut ferry_slice,
    cap: usize,
    count: *mut usize,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { bytes_list(view, number, true, "ferry_view_str_list", out, cap, count) }
}

/// A nested view: singular (`index` `None`; null when absent) or an element.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
unsafe fn message(
    view: *const ferry_view,
    number: u32,
    index: Option<usize>,
    accessor: &str,
    out: *mut *mut ferry_view,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live view (this function's contract).
        let parent = unsafe { ptr::arg(view, "view") }?;
        let v = parent.view;
        checked(&v, number, Class::Message, index.is_some(), accessor)?;
        let nested = match index {
            None => v.message(number),
            Some(i) => {
                let list = v.messages(number);
                Some(
                    list.get(i)
                        .ok_or_else(|| out_of_range(&v, number, i, list.len()))?,
                )
            }
        };
        // The nested view reads the root's bytes: it is valid while the root is (header).
        let handle = nested.map_or(std::ptr::null_mut(), |view| {
            Box::into_raw(Box::new(ferry_view {
                view,
                _frame: None,
                schema: Arc::clone(&parent.schema),
            }))
        });
        // SAFETY: `out` is writable (this function's contract).
        unsafe { ptr::out(out, "out", handle) }
    })
}

/// A view of singular message field `number` (`*out` null when absent). A non-null `*out` is
/// yours: free it with `ferry_view_free` before its root view.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_msg(
    view: *const ferry_view,
    number: u32,
    out: *mut *mut ferry_view,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { message(view, number, None, "ferry_view_msg", out) }
}

/// A view of element `index` of repeated message field `number` (of a map: entry `index`, in
/// key order, with the key as field 1 and the value as field 2), as `ferry_view_msg` gives.
///
/// # Safety
/// `view` is live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_view_msg_at(
    view: *const ferry_view,
    number: u32,
    index: usize,
    out: *mut *mut ferry_view,
) -> ferry_status {
    // SAFETY: as this function's contract.
    unsafe { message(view, number, Some(index), "ferry_view_msg_at", out) }
}
