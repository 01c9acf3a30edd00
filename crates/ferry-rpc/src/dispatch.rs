//! The dispatch policy every server driver shares (the event loop's foreground handlers, the
//! worker pool's background ones, the tokio server's handler tasks): which requests are refused
//! before a handler sees them, how a request is validated and its handler run under a panic
//! guard, what the handler's result makes of the call, and the frames that end the call.
//!
//! It sits below the drivers (`event_loop/`, `workers.rs`, `tokio/`) and above what handlers
//! see (`service.rs`), so no driver imports its policy from another.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ferry_transport::Meta;

use crate::CallId;
use crate::service::{Call, Encoded, Incoming, MethodInfo, Reply, Request, ResponseMetadata, Service, Sink};
use crate::session::Server;
use crate::status::{Code, Status, invalid_request};

/// Why a server refuses a call before any handler sees it: it is shutting down
/// (`UNAVAILABLE`), or no service has the method (`UNIMPLEMENTED`).
pub(crate) fn refusal(draining: bool, known: bool, method: u16) -> Option<Status> {
    if draining {
        Some(Status::new(Code::Unavailable, "the server is shutting down"))
    } else if !known {
        Some(Status::new(
            Code::Unimplemented,
            format!("no method with id {method} on this server"),
        ))
    } else {
        None
    }
}

/// Why a call of the wrong kind for its method is refused before a handler sees it: an open
/// (`opened`: a stream) to a unary method, or a request to a streaming one (`UNIMPLEMENTED`,
/// naming the method and its shape).
pub(crate) fn wrong_shape(info: &MethodInfo, opened: bool) -> Option<Status> {
    (info.shape.is_streaming() != opened).then(|| {
        let called = if opened {
            "opened as a stream"
        } else {
            "called with one request"
        };
        Status::new(
            Code::Unimplemented,
            format!("{} is a {:?} method, {called}", info.path, info.shape),
        )
    })
}

/// Validates the request against the method's type (`INVALID_ARGUMENT` if it does not decode)
/// and runs the handler under a panic guard, its answer going to `sink`: `Ok` once the call is
/// answered, else the status the call fails with (see [`handler_outcome`]). The response
/// metadata the handler set stays in `call`.
pub(crate) fn run_handler<'a>(
    service: &dyn Service,
    info: &MethodInfo,
    call: &Call<'a>,
    incoming: Incoming<'a>,
    sink: Sink<'_>,
) -> Result<(), Status> {
    let view = match info.request {
        Some(desc) => Some(incoming.view(desc).map_err(|e| invalid_request(&e))?),
        None => None,
    };
    let mut reply = Reply::new(sink);
    let result = catch_unwind(AssertUnwindSafe(|| {
        service.call(call, Request { view, incoming }, &mut reply)
    }));
    handler_outcome(result, reply.is_sent(), info.path)
}

/// The status of a call from its handler's result: a panic and a silent `Ok` are `INTERNAL`.
pub(crate) fn handler_outcome(
    result: std::thread::Result<Result<(), Status>>,
    sent: bool,
    path: &str,
) -> Result<(), Status> {
    match result {
        Ok(Ok(())) if sent => Ok(()),
        Ok(Ok(())) => Err(Status::new(
            Code::Internal,
            format!("{path}: the handler returned without answering"),
        )),
        Ok(Err(status)) if !sent => Err(status),
        // Answered, then failed: the answer stands.
        Ok(Err(_)) => Ok(()),
        Err(panic) if !sent => Err(panicked(path, &*panic)),
        Err(_) => Ok(()),
    }
}

/// The status of a call whose handler (of method `path`) panicked with `payload`.
pub(crate) fn panicked(path: &str, payload: &(dyn Any + Send)) -> Status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".into());
    Status::new(Code::Internal, format!("{path}: the handler panicked: {what}"))
}

/// Ends server call `id` with `result`, the handler's answer or the status it fails with:
/// the frames to send, in order: the headers the handler set, then its trailers (for a
/// failure, the status's own metadata if it carries some), then the response or the status.
/// Nothing if the call is no longer in progress (cancelled, expired).
pub(crate) fn end_call(
    core: &mut Server,
    id: CallId,
    result: Result<Encoded, Status>,
    set: ResponseMetadata,
) -> impl Iterator<Item = (Meta, Encoded)> + use<> {
    let headers = core.headers(id, &set.headers).map(raw);
    let frames = match result {
        Ok(encoded) => {
            let trailers = core.trailers(id, &set.trailers).map(raw);
            [headers, trailers, core.respond(id).map(|meta| (meta, encoded))]
        }
        Err(mut status) => {
            let trailers = match status.metadata.is_empty() {
                true => set.trailers,
                false => std::mem::take(&mut status.metadata),
            };
            let trailers = core.trailers(id, &trailers).map(raw);
            [headers, trailers, core.fail(id, &status).map(raw)]
        }
    };
    frames.into_iter().flatten()
}

/// Ends stream `id` with OK, its handler done: the frames to send, in order, as [`end_call`]
/// sends them: the headers the handler set (if no message took them first), its trailers, then
/// the OK status. Nothing if the call is no longer in progress. (A stream that fails ends
/// through `end_call`, as a unary call does.)
pub(crate) fn finish_stream(
    core: &mut Server,
    id: CallId,
    set: ResponseMetadata,
) -> impl Iterator<Item = (Meta, Encoded)> + use<> {
    let headers = core.headers(id, &set.headers);
    let trailers = core.trailers(id, &set.trailers);
    [headers, trailers, core.finish(id)]
        .into_iter()
        .flatten()
        .map(raw)
}

/// A control frame's raw payload, as what is sent.
fn raw((meta, payload): (Meta, Vec<u8>)) -> (Meta, Encoded) {
    (meta, Encoded::from_vec(payload))
}
