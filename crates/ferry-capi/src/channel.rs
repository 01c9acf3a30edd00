//! `ferry_channel`: blocking RPC calls over TCP or shared memory (ferry-rpc's `Channel`).
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::time::Duration;

use ferry::rpc::{CallOptions, Channel};
use ferry::transport::method_id;

use crate::error::{Error, ferry_status, guard};
use crate::msg::ferry_msg;
use crate::ptr;
use crate::schema::ferry_type;
use crate::view::ferry_view;

/// A connection to a Ferry RPC server, for one call at a time. NOT thread-safe: use it, and
/// free it and the response views it returned, on the thread that opened it.
pub struct ferry_channel {
    channel: Channel,
}

/// Connects to `addr`: `tcp://HOST:PORT` or `shm:///PATH/TO/SOCKET`. On success `*out` is
/// yours: free it with `ferry_channel_free`. `FERRY_RPC` with code 14 (UNAVAILABLE) if the
/// server cannot be reached, `FERRY_INVALID_ARGUMENT` if `addr` does not parse.
///
/// # Safety
/// `addr` is NUL-terminated; `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_channel_open(
    addr: *const c_char,
    out: *mut *mut ferry_channel,
) -> ferry_status {
    guard(|| {
        // SAFETY: a NUL-terminated address (header contract).
        let addr = unsafe { ptr::text(addr, "addr") }?;
        let channel = Channel::connect(addr).map_err(|s| match s.code {
            ferry::rpc::Code::InvalidArgument => Error::new(ferry_status::FERRY_INVALID_ARGUMENT, s.message),
            _ => Error::rpc(&s),
        })?;
        // SAFETY: `out` is writable (header contract).
        unsafe { ptr::out(out, "out", Box::into_raw(Box::new(ferry_channel { channel }))) }
    })
}

/// Closes the connection (null is ignored). Response views stay valid until freed.
///
/// # Safety
/// `channel` is null or from `ferry_channel_open` on this thread, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_channel_free(channel: *mut ferry_channel) {
    // SAFETY: a channel of ours, given back once (header contract).
    drop(unsafe { ptr::take(channel) });
}

/// Calls `method` (its full name, `/package.Service/Method`) with `request` and waits for the
/// response, at most `timeout_ms` milliseconds (0: no deadline). On success `*response` is a
/// view of the response as a message of `response_type`, reading the received frame in place:
/// yours, to free with `ferry_view_free` on this thread. Over shared memory the frame lies in
/// the server's memory, which it cannot reuse until the view is freed: free views soon.
/// `FERRY_RPC`: the call failed with the gRPC code `ferry_last_error_rpc_code` gives (5
/// NOT_FOUND, 4 DEADLINE_EXCEEDED, 12 UNIMPLEMENTED for an unknown method, ...).
///
/// # Safety
/// `channel`, `request` and `response_type` are live; `method` is NUL-terminated; `response` is
/// valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferry_channel_call(
    channel: *mut ferry_channel,
    method: *const c_char,
    request: *const ferry_msg,
    response_type: *const ferry_type,
    timeout_ms: u32,
    response: *mut *mut ferry_view,
) -> ferry_status {
    guard(|| {
        // SAFETY: live objects and a NUL-terminated method name (header contract).
        let (channel, method, request, ty) = unsafe {
            (
                ptr::arg(channel, "channel")?,
                ptr::text(method, "method")?,
                ptr::arg(request, "request")?,
                ptr::arg(response_type, "response_type")?,
            )
        };
        let options = CallOptions {
            timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms.into())),
            ..CallOptions::default()
        };
        let answer = channel
            .channel
            .call_with::<()>(method_id(method), &request.msg, &options)
            .map_err(|s| Error::rpc(&s))?;
        let limits = *answer.limits();
        let view = ferry_view::of_response(ty, answer, &limits)?;
        // SAFETY: `response` is writable (header contract).
        unsafe { ptr::out(response, "response", Box::into_raw(Box::new(view))) }
    })
}
