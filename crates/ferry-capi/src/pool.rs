//! `ferry_pool` (registered memory) and `ferry_buf` (one buffer of it, filled by C and then
//! given to a message, which references it instead of copying it).
#![allow(unsafe_code)]

use ferry::buf::{BufMut, Pool, PoolConfig};

use crate::error::{Error, ferry_status, guard};
use crate::ptr;

/// A pool of registered memory: where encoded headers and zero-copy values live. Thread-safe.
/// Free with `ferry_pool_free`; buffers, messages and encodings made from it keep its memory
/// alive after that.
pub struct ferry_pool {
    pub(crate) pool: Pool,
}

/// A pool buffer C fills before giving it to a message (`ferry_msg_set_buf`, which takes it).
pub struct ferry_buf {
    pub(crate) buf: BufMut,
    pub(crate) pool: Pool,
}

pub(crate) fn no_memory(e: impl std::fmt::Display) -> Error {
    Error::new(ferry_status::FERRY_NO_MEMORY, e.to_string())
}

/// Makes a pool of at most `max_bytes` (a multiple of 8 MiB; 0: 256 MiB), in 8 MiB regions
/// mapped as they are needed. On success `*out` is yours: free it with `ferry_pool_free`.
///
/// # Safety
/// `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_pool_new(max_bytes: usize, out: *mut *mut ferry_pool) -> ferry_status {
    guard(|| {
        let config = PoolConfig {
            max_bytes: if max_bytes == 0 { 256 << 20 } else { max_bytes },
            mlock: false,
            ..PoolConfig::default()
        };
        let pool = Pool::new(config)
            .map_err(|e| Error::new(ferry_status::FERRY_INVALID_ARGUMENT, format!("pool: {e}")))?;
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(Box::new(ferry_pool { pool }))) }
    })
}

/// Frees a pool handle (null is ignored). Memory still in use by buffers, messages, encodings
/// or views stays valid until they are freed.
///
/// # Safety
/// `pool` is null or from `ferry_pool_new`, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_pool_free(pool: *mut ferry_pool) {
    // SAFETY: a pool of ours, given back once (header contract).
    drop(unsafe { ptr::take(pool) });
}

/// Allocates a buffer of `len` writable bytes (their content is unspecified: fill them through
/// `ferry_buf_data`). On success `*out` is yours until you give it to `ferry_msg_set_buf` or
/// `ferry_msg_push_buf`, or free it with `ferry_buf_free`.
///
/// # Safety
/// `pool` is a live pool; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_buf_new(
    pool: *const ferry_pool,
    len: usize,
    out: *mut *mut ferry_buf,
) -> ferry_status {
    guard(|| {
        // SAFETY: a live pool (header contract).
        let pool = unsafe { ptr::arg(pool, "pool") }?;
        let mut buf = pool.pool.alloc(len).map_err(no_memory)?;
        buf.set_len(len);
        let handle = Box::new(ferry_buf {
            buf,
            pool: pool.pool.clone(),
        });
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(handle)) }
    })
}

/// The buffer's bytes, to fill: `ferry_buf_len` of them, valid until the buffer is given to a
/// message or freed.
///
/// # Safety
/// `buf` is a live buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_buf_data(buf: *mut ferry_buf) -> *mut u8 {
    // SAFETY: a live buffer, not used elsewhere during the call (header contract).
    match unsafe { buf.as_mut() } {
        Some(b) => b.buf.capacity_mut().as_mut_ptr(),
        None => std::ptr::null_mut(),
    }
}

/// The buffer's length in bytes (0 for null).
///
/// # Safety
/// `buf` is null or a live buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_buf_len(buf: *const ferry_buf) -> usize {
    // SAFETY: null or a live buffer (header contract).
    unsafe { buf.as_ref() }.map_or(0, |b| b.buf.len())
}

/// Frees a buffer that was not given to a message (null is ignored).
///
/// # Safety
/// `buf` is null or from `ferry_buf_new`, not given to a message, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_buf_free(buf: *mut ferry_buf) {
    // SAFETY: a buffer of ours, given back once (header contract).
    drop(unsafe { ptr::take(buf) });
}
