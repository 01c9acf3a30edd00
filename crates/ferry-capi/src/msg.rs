//! `ferry_msg`: a message built field by field (a `DynamicMessage`), and its encodings: into a
//! gather list of pool buffers (`ferry_encoded`) or contiguously into C memory.
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::sync::Arc;

use ferry::buf::SharedBuf;
use ferry::wire::{Context, DynamicMessage, HybridBytes, Kind, Outgoing, Value};
use ferry_reflect::Schema;

use crate::error::{Error, ferry_status, guard};
use crate::pool::{ferry_buf, ferry_pool, no_memory};
use crate::schema::{ferry_type, field, field_number};
use crate::{erase, ptr};

/// A message being built. Not thread-safe (one thread at a time). Values set on it are copied
/// into it, except pool buffers given with `ferry_msg_set_buf`/`ferry_msg_push_buf`, which it
/// references.
pub struct ferry_msg {
    pub(crate) msg: DynamicMessage<'static>,
    /// Owns the descriptors `msg` refers to (declared after it: dropped after it).
    pub(crate) schema: Arc<Schema>,
}

/// One entry of a gather list: `len` bytes at `base`. The same layout as POSIX `struct iovec`
/// (a `ferry_iovec *` may be passed to `writev` as a `struct iovec *`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ferry_iovec {
    /// First byte.
    pub base: *const u8,
    /// Length in bytes.
    pub len: usize,
}

const _: () = {
    assert!(size_of::<ferry_iovec>() == size_of::<libc::iovec>());
    assert!(align_of::<ferry_iovec>() == align_of::<libc::iovec>());
    assert!(std::mem::offset_of!(ferry_iovec, len) == std::mem::offset_of!(libc::iovec, iov_len));
};

/// An encoded message as a gather list: the header segment (a pool buffer holding every header,
/// scalar and copied value), then each referenced pool buffer. It owns counted references to
/// all of them: the bytes stay valid and unchanged until `ferry_encoded_free`, whatever happens
/// to the message.
pub struct ferry_encoded {
    iov: Vec<ferry_iovec>,
    len: usize,
    /// What `iov` points into (declared after it).
    _head: SharedBuf,
    _zero_copy: Vec<SharedBuf>,
}

fn new_msg(schema: &Arc<Schema>, desc: &ferry::wire::MessageDesc<'_>) -> ferry_msg {
    ferry_msg {
        // SAFETY: `desc` is `schema`'s, which the new object holds.
        msg: DynamicMessage::new(unsafe { erase::desc(desc) }),
        schema: Arc::clone(schema),
    }
}

/// A new, empty message of type `ty`. On success `*out` is yours: free it with
/// `ferry_msg_free`, or give it to a parent with `ferry_msg_set_msg`/`ferry_msg_push_msg`.
///
/// # Safety
/// `ty` is a live type; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_new(ty: *const ferry_type, out: *mut *mut ferry_msg) -> ferry_status {
    guard(|| {
        // SAFETY: a live type (header contract).
        let ty = unsafe { ptr::arg(ty, "type") }?;
        let handle = Box::new(new_msg(&ty.schema, ty.desc));
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// A new, empty message of the type of `parent`'s message field `field` (to set on it with
/// `ferry_msg_set_msg` or `ferry_msg_push_msg`; for a map field, an entry: key is field 1,
/// value field 2). On success `*out` is yours, as from `ferry_msg_new`.
///
/// # Safety
/// `parent` is a live message; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_new_field(
    parent: *const ferry_msg,
    field_no: u32,
    out: *mut *mut ferry_msg,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live message (header contract).
        let parent = unsafe { ptr::arg(parent, "parent") }?;
        let f = field(parent.msg.desc(), field_no)?;
        let Kind::Message(desc) = f.kind else {
            return Err(Error::new(
                ferry_status::FERRY_TYPE_MISMATCH,
                format!("field `{}.{}` is not a message", parent.msg.desc().name, f.name),
            ));
        };
        let handle = Box::new(new_msg(&parent.schema, desc));
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// Frees a message (null is ignored). Encodings made from it stay valid.
///
/// # Safety
/// `msg` is null or a message of this library not given to a parent, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_free(msg: *mut ferry_msg) {
    // SAFETY: a message of ours, given back once (header contract).
    drop(unsafe { ptr::take(msg) });
}

/// The number of the field called `name` (its `.proto` name); 0 if there is none (with a
/// `FERRY_NOT_FOUND` last error). Every setter takes field numbers: look names up once.
///
/// # Safety
/// `msg` is a live message; `name` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_field(msg: *const ferry_msg, name: *const c_char) -> u32 {
    // SAFETY: a live message (header contract).
    match unsafe { msg.as_ref() } {
        // SAFETY: a NUL-terminated name (header contract).
        Some(m) => unsafe { field_number(m.msg.desc(), name) },
        None => 0,
    }
}

fn mismatch(msg: &DynamicMessage<'_>, e: ferry::wire::TypeMismatch) -> Error {
    let what = if msg.desc().field_by_name(&e.field).is_some() || e.field.parse::<u32>().is_err() {
        "does not fit"
    } else {
        "does not exist in"
    };
    Error::new(
        ferry_status::FERRY_TYPE_MISMATCH,
        format!(
            "value {what} field `{}.{}` (wrong type, a list/singular mix, or a string that is not UTF-8)",
            e.message, e.field
        ),
    )
}

/// Sets (or, with `push`, appends to) field `number` of `msg`.
///
/// # Safety
/// `msg` is a live message.
unsafe fn put(
    msg: *mut ferry_msg,
    number: u32,
    push: bool,
    value: impl FnOnce() -> Result<Value<'static>, Error>,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live message, used by this call alone (header contract).
        let m = unsafe { ptr::arg_mut(msg, "msg") }?;
        let v = value()?;
        let done = if push {
            m.msg.push(number, v)
        } else {
            m.msg.set(number, v)
        };
        done.map_err(|e| mismatch(&m.msg, e))
    })
}

/// Sets singular field `number`: `bool`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_bool(msg: *mut ferry_msg, number: u32, value: bool) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::Bool(value))) }
}

/// Appends to repeated field `number`: `bool`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_bool(msg: *mut ferry_msg, number: u32, value: bool) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::Bool(value))) }
}

/// Sets singular field `number`: `int32`, `sint32`, `sfixed32`, or an enum's number.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_i32(msg: *mut ferry_msg, number: u32, value: i32) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::I32(value))) }
}

/// Appends to repeated field `number`: `int32`, `sint32`, `sfixed32`, or an enum's number.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_i32(msg: *mut ferry_msg, number: u32, value: i32) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::I32(value))) }
}

/// Sets singular field `number`: `int64`, `sint64`, `sfixed64`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_i64(msg: *mut ferry_msg, number: u32, value: i64) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::I64(value))) }
}

/// Appends to repeated field `number`: `int64`, `sint64`, `sfixed64`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_i64(msg: *mut ferry_msg, number: u32, value: i64) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::I64(value))) }
}

/// Sets singular field `number`: `uint32`, `fixed32`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_u32(msg: *mut ferry_msg, number: u32, value: u32) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::U32(value))) }
}

/// Appends to repeated field `number`: `uint32`, `fixed32`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_u32(msg: *mut ferry_msg, number: u32, value: u32) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::U32(value))) }
}

/// Sets singular field `number`: `uint64`, `fixed64`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_u64(msg: *mut ferry_msg, number: u32, value: u64) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::U64(value))) }
}

/// Appends to repeated field `number`: `uint64`, `fixed64`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_u64(msg: *mut ferry_msg, number: u32, value: u64) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::U64(value))) }
}

/// Sets singular field `number`: `float`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_f32(msg: *mut ferry_msg, number: u32, value: f32) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::F32(value))) }
}

/// Appends to repeated field `number`: `float`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_f32(msg: *mut ferry_msg, number: u32, value: f32) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::F32(value))) }
}

/// Sets singular field `number`: `double`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_f64(msg: *mut ferry_msg, number: u32, value: f64) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::F64(value))) }
}

/// Appends to repeated field `number`: `double`.
///
/// # Safety
/// `msg` is a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_f64(msg: *mut ferry_msg, number: u32, value: f64) -> ferry_status {
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || Ok(Value::F64(value))) }
}

/// Sets singular field `number` (`bytes`, or `string`: UTF-8 checked) to a copy of `len` bytes
/// at `data` (which you keep).
///
/// # Safety
/// `msg` is a live message; `data` points to `len` bytes (or is null with `len` 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_bytes(
    msg: *mut ferry_msg,
    number: u32,
    data: *const u8,
    len: usize,
) -> ferry_status {
    // SAFETY: a live message, and `len` bytes at `data` (header contract).
    unsafe { put(msg, number, false, || copied(data, len)) }
}

/// Appends a copy of `len` bytes at `data` to repeated field `number` (`bytes` or `string`).
///
/// # Safety
/// As for `ferry_msg_set_bytes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_bytes(
    msg: *mut ferry_msg,
    number: u32,
    data: *const u8,
    len: usize,
) -> ferry_status {
    // SAFETY: a live message, and `len` bytes at `data` (header contract).
    unsafe { put(msg, number, true, || copied(data, len)) }
}

/// # Safety
/// `data` points to `len` bytes (or is null with `len` 0).
unsafe fn copied(data: *const u8, len: usize) -> Result<Value<'static>, Error> {
    // SAFETY: `len` bytes at `data` (this function's contract).
    let data = unsafe { ptr::slice(data, len, "data") }?;
    Ok(Value::Bytes(HybridBytes::from_vec(data.to_vec())))
}

/// Sets singular field `number` (`bytes` or `string`) to a pool buffer, which the message takes
/// in every case (do not use or free `buf` afterwards). A buffer of at least 512 bytes is
/// referenced by the encoding (a gather entry of its own in `ferry_msg_encode`); a shorter one
/// is copied into the header segment.
///
/// # Safety
/// `msg` is a live message; `buf` is a buffer from `ferry_buf_new` not given away before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_buf(
    msg: *mut ferry_msg,
    number: u32,
    buf: *mut ferry_buf,
) -> ferry_status {
    // SAFETY: a buffer of ours, given once (header contract).
    let buf = unsafe { ptr::take(buf) };
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || referenced(buf)) }
}

/// Appends a pool buffer to repeated field `number` (`bytes` or `string`), as
/// `ferry_msg_set_buf` sets one.
///
/// # Safety
/// As for `ferry_msg_set_buf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_buf(
    msg: *mut ferry_msg,
    number: u32,
    buf: *mut ferry_buf,
) -> ferry_status {
    // SAFETY: a buffer of ours, given once (header contract).
    let buf = unsafe { ptr::take(buf) };
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, true, || referenced(buf)) }
}

fn referenced(buf: Option<Box<ferry_buf>>) -> Result<Value<'static>, Error> {
    let ferry_buf { buf, pool } =
        *buf.ok_or_else(|| Error::new(ferry_status::FERRY_INVALID_ARGUMENT, "`buf` is null"))?;
    Ok(Value::Bytes(HybridBytes::from_shared(
        buf.freeze(),
        &Context::new(pool),
    )))
}

/// Sets singular message field `number` to `child`, which the parent takes in every case (do
/// not use or free `child` afterwards). Make `child` with `ferry_msg_new_field`.
///
/// # Safety
/// `msg` is a live message; `child` is a message of this library not given away before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_set_msg(
    msg: *mut ferry_msg,
    number: u32,
    child: *mut ferry_msg,
) -> ferry_status {
    // SAFETY: a message of ours, given once (header contract).
    let child = unsafe { ptr::take(child) };
    // SAFETY: a live message (header contract).
    unsafe { put(msg, number, false, || Ok(Value::Message(nested(child)?))) }
}

/// Appends `child` to repeated message field `number`, taking it as `ferry_msg_set_msg` does.
/// For a map field, `child` is an entry (key field 1 and value field 2 both set): entries are
/// kept in key order, and a key given again replaces the earlier entry.
///
/// # Safety
/// As for `ferry_msg_set_msg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_push_msg(
    msg: *mut ferry_msg,
    number: u32,
    child: *mut ferry_msg,
) -> ferry_status {
    // SAFETY: a message of ours, given once (header contract).
    let child = unsafe { ptr::take(child) };
    guard(|| {
        let child = nested(child)?;
        // SAFETY: a live message, used by this call alone (header contract).
        let m = unsafe { ptr::arg_mut(msg, "msg") }?;
        let done = if child.desc().map_entry {
            let (Some(key), Some(value)) = (child.get(1), child.get(2)) else {
                return Err(Error::new(
                    ferry_status::FERRY_INVALID_ARGUMENT,
                    format!(
                        "map entry `{}` needs its key (1) and value (2) set",
                        child.desc().name
                    ),
                ));
            };
            m.msg.insert_map_entry(number, key.clone(), value.clone())
        } else {
            m.msg.push(number, Value::Message(child))
        };
        done.map_err(|e| mismatch(&m.msg, e))
    })
}

fn nested(child: Option<Box<ferry_msg>>) -> Result<DynamicMessage<'static>, Error> {
    // The child's schema handle may go: a parent takes only children of its own schema (the
    // setters compare descriptors), which it holds.
    let child = child.ok_or_else(|| Error::new(ferry_status::FERRY_INVALID_ARGUMENT, "`child` is null"))?;
    let ferry_msg { msg, schema: _ } = *child;
    Ok(msg)
}

/// The layout of `msg`, checked against the format's limits.
fn encode_error(e: ferry::wire::EncodeError) -> Error {
    Error::new(ferry_status::FERRY_ENCODE, e.to_string())
}

/// Encodes `msg` contiguously into `out` (`cap` bytes), every value copied. `*len` is set to
/// the encoded length in every case but a null argument; if it exceeds `cap`, nothing is
/// written and the status is `FERRY_BUFFER_TOO_SMALL` (call with `cap` 0 to learn the length).
///
/// # Safety
/// `msg` is a live message; `out` points to `cap` writable bytes (or is null with `cap` 0);
/// `len` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_encode_into(
    msg: *const ferry_msg,
    out: *mut u8,
    cap: usize,
    len: *mut usize,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live message (header contract).
        let m = unsafe { ptr::arg(msg, "msg") }?;
        let layout = m.msg.layout();
        let total = layout.total_len();
        // SAFETY: `len` is writable (header contract).
        unsafe { ptr::out(len, "len", total) }?;
        if total > cap {
            return Err(Error::new(
                ferry_status::FERRY_BUFFER_TOO_SMALL,
                format!("the message needs {total} bytes; the buffer holds {cap}"),
            ));
        }
        // SAFETY: `cap >= total` writable bytes at `out` (header contract).
        let buf = unsafe { ptr::slice_mut(out, total, "out") }?;
        let (head, mut rest) = buf.split_at_mut(layout.head_len);
        m.msg.write_head(&layout, head).map_err(encode_error)?;
        m.msg.for_each_zero_copy(&mut |value| {
            let (to, tail) = std::mem::take(&mut rest).split_at_mut(value.len());
            to.copy_from_slice(value);
            rest = tail;
        });
        Ok(())
    })
}

/// Encodes `msg` into pool buffers, as a gather list (`ferry_encoded_iov`): the header segment
/// in a buffer of `pool`, then the pool buffers the message references, in place. On success
/// `*out` is yours: free it with `ferry_encoded_free`.
///
/// # Safety
/// `msg` and `pool` are live; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_msg_encode(
    msg: *const ferry_msg,
    pool: *const ferry_pool,
    out: *mut *mut ferry_encoded,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live message and pool (header contract).
        let (m, pool) = unsafe { (ptr::arg(msg, "msg")?, ptr::arg(pool, "pool")?) };
        let layout = m.msg.layout();
        let mut head = pool.pool.alloc(layout.head_len).map_err(no_memory)?;
        head.set_len(layout.head_len);
        m.msg
            .write_head(&layout, &mut head.capacity_mut()[..layout.head_len])
            .map_err(encode_error)?;
        let head = head.freeze();
        let mut zero_copy = Vec::with_capacity(layout.zero_copy_count);
        m.msg.zero_copy_bufs(&mut zero_copy).map_err(encode_error)?;
        let iov = std::iter::once(&head)
            .chain(&zero_copy)
            .map(|b| ferry_iovec {
                base: b.as_ptr(),
                len: b.len(),
            })
            .collect();
        let handle = Box::new(ferry_encoded {
            iov,
            len: layout.total_len(),
            _head: head,
            _zero_copy: zero_copy,
        });
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// The gather list: `*count` entries (set unless `count` is null), owned by `encoded` and valid
/// until `ferry_encoded_free`. Null for a null `encoded`.
///
/// # Safety
/// `encoded` is null or live; `count` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_encoded_iov(
    encoded: *const ferry_encoded,
    count: *mut usize,
) -> *const ferry_iovec {
    // SAFETY: null or live (header contract).
    let Some(e) = (unsafe { encoded.as_ref() }) else {
        return std::ptr::null();
    };
    if !count.is_null() {
        // SAFETY: not null, and writable (header contract).
        unsafe { count.write(e.iov.len()) };
    }
    e.iov.as_ptr()
}

/// The encoded length: the sum of the gather list's lengths (0 for null).
///
/// # Safety
/// `encoded` is null or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_encoded_len(encoded: *const ferry_encoded) -> usize {
    // SAFETY: null or live (header contract).
    unsafe { encoded.as_ref() }.map_or(0, |e| e.len)
}

/// Frees an encoding and releases the buffers it holds (null is ignored).
///
/// # Safety
/// `encoded` is null or from `ferry_msg_encode`, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_encoded_free(encoded: *mut ferry_encoded) {
    // SAFETY: an encoding of ours, given back once (header contract).
    drop(unsafe { ptr::take(encoded) });
}
