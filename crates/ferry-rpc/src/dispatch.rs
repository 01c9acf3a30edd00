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
use crate::service::{
    Call, Encoded, Incoming, MethodInfo, Reply, Request, ResponseMetadata, Service, Shape, Sink,
};
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

/// Why a call of the wrong kind for its method's shape is refused: an open (`opened`) to a
/// unary method, or a request to a streaming one, is `UNIMPLEMENTED`, naming the method and
/// its shape.
pub(crate) fn shape_refusal(info: &MethodInfo, opened: bool) -> Option<Status> {
    if opened == info.shape.is_streaming() {
        return None;
    }
    let (how, shape) = match opened {
        true => ("opened as a stream", "unary"),
        false => ("called as unary", shape_name(info.shape)),
    };
    Some(Status::new(
        Code::Unimplemented,
        format!("{} {how}: the method is {shape}", info.path),
    ))
}

fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::Unary => "unary",
        Shape::ClientStreaming => "client-streaming",
        Shape::ServerStreaming => "server-streaming",
        Shape::Bidirectional => "bidirectional-streaming",
    }
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
    let request = validate(info, incoming)?;
    let mut reply = Reply::new(sink);
    let result = catch_unwind(AssertUnwindSafe(|| service.call(call, request, &mut reply)));
    handler_outcome(result, reply.is_sent(), info.path)
}

/// A request (or a stream's message) as a handler gets it: validated against the method's
/// request type, if it has one (`INVALID_ARGUMENT` if it does not decode).
pub(crate) fn validate<'a>(info: &MethodInfo, incoming: Incoming<'a>) -> Result<Request<'a>, Status> {
    let view = match info.request {
        Some(desc) => Some(incoming.view(desc).map_err(|e| invalid_request(&e))?),
        None => None,
    };
    Ok(Request { view, incoming })
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
    end_with(core, id, result.map(Some), set)
}

/// Ends stream `id` as [`end_call`] ends a unary call: `Ok` finishes it (an OK status), in
/// the same order of frames.
pub(crate) fn end_stream(
    core: &mut Server,
    id: CallId,
    result: Result<(), Status>,
    set: ResponseMetadata,
) -> impl Iterator<Item = (Meta, Encoded)> + use<> {
    end_with(core, id, result.map(|()| None), set)
}

/// A unary call's response (`Ok(Some)`), a stream's OK status (`Ok(None)`), or a failure.
fn end_with(
    core: &mut Server,
    id: CallId,
    result: Result<Option<Encoded>, Status>,
    set: ResponseMetadata,
) -> impl Iterator<Item = (Meta, Encoded)> + use<> {
    let headers = core.headers(id, &set.headers).map(raw);
    let frames = match result {
        Ok(answer) => {
            let trailers = core.trailers(id, &set.trailers).map(raw);
            let end = match answer {
                Some(encoded) => core.respond(id).map(|meta| (meta, encoded)),
                None => core.finish(id).map(raw),
            };
            [headers, trailers, end]
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

/// A control frame's raw payload, as what is sent.
fn raw((meta, payload): (Meta, Vec<u8>)) -> (Meta, Encoded) {
    (meta, Encoded::from_vec(payload))
}
