//! The client side of one session: call ids, the request window, deadlines, cancellation,
//! streams' windows.

use std::time::{Duration, Instant};

use ferry_transport::Meta;

use super::Blocked;
use super::calls::{Call, Calls, Refusal, Stream};
use crate::id::IdMap;
use crate::metadata::Metadata;
use crate::status::{Code, Status};
use crate::wire::{self, Frame, RpcError};
use crate::{CallId, wire::metadata_frame};

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Calls in flight at most, streams included (eRPC's request window; default 8): a call
    /// past it is refused with `RESOURCE_EXHAUSTED` before anything is sent.
    pub window: usize,
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig { window: 8 }
    }
}

/// The frames that start a call, for the driver to send in order: the deadline frame (if the
/// call has a deadline), the metadata frame (if the call has metadata:
/// [`metadata_frame`](Self::metadata_frame)), then, with `request`'s `Meta`, the request
/// message (a unary call) or an empty raw payload (the open of a stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// The call's id.
    pub id: CallId,
    /// A raw deadline frame to send first: its metadata and payload.
    pub deadline: Option<(Meta, [u8; 8])>,
    /// Metadata of the request message, or of the open frame.
    pub request: Meta,
}

impl Start {
    /// The frame carrying the call's `metadata` (its `Meta` and raw payload), to send after the
    /// deadline frame and before the request; `None` when `metadata` is empty (nothing is sent).
    pub fn metadata_frame(&self, metadata: &Metadata) -> Option<(Meta, Vec<u8>)> {
        (!metadata.is_empty()).then(|| {
            metadata_frame(
                self.request.kind,
                self.request.request_id,
                wire::METADATA,
                metadata,
            )
        })
    }
}

/// How a call ended, with the value the driver gave it at its start (see [`Client`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<V = ()> {
    /// The response of a unary call arrived: its frame holds the message.
    Response {
        /// The call's id.
        id: CallId,
        /// Its method.
        method: u16,
        /// The headers the server sent before it (empty if none).
        metadata: Metadata,
        /// The trailers the server sent with it (empty if none).
        trailers: Metadata,
        /// The driver's value.
        value: V,
    },
    /// A stream ended with OK.
    Finished {
        /// The call's id.
        id: CallId,
        /// Its method.
        method: u16,
        /// The trailers the server sent with its status (empty if none).
        trailers: Metadata,
        /// The driver's value.
        value: V,
    },
    /// The call failed: a status from the server (with its trailers in [`Status::metadata`]),
    /// its deadline, the session's refusal of a broken stream, or the connection's loss.
    Failed {
        /// The call's id.
        id: CallId,
        /// Its method.
        method: u16,
        /// Why.
        status: Status,
        /// The headers the server sent before it (empty if none; a stream's came as
        /// [`ClientEvent::Headers`]).
        headers: Metadata,
        /// The driver's value.
        value: V,
    },
}

impl<V> Outcome<V> {
    /// The call's id.
    pub fn id(&self) -> CallId {
        match self {
            Outcome::Response { id, .. } | Outcome::Finished { id, .. } | Outcome::Failed { id, .. } => *id,
        }
    }
}

/// What a frame from the server means for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent<V = ()> {
    /// A call ended.
    Ended(Outcome<V>),
    /// The server broke stream rules (a message past the window, a stream frame on a unary
    /// call): the call failed here. Send the cancel frame given, so the server stops too.
    Aborted(Outcome<V>, Meta),
    /// A stream's headers.
    Headers {
        /// The call's id.
        id: CallId,
        /// The entries.
        metadata: Metadata,
    },
    /// A message of stream `id`: its frame holds it. Call [`Client::consumed`] once it has
    /// been taken.
    Message {
        /// The call's id.
        id: CallId,
    },
    /// The server granted more credit on stream `id`: a send that was blocked may go.
    Window {
        /// The call's id.
        id: CallId,
    },
}

/// The client side of one session (sans-IO: it takes frames and `now`, and returns what to
/// send and how calls ended). Every call it starts ends exactly once: by a frame
/// ([`on_frame`](Self::on_frame)), its deadline ([`expire`](Self::expire)), the caller
/// ([`cancel`](Self::cancel)) or the connection's loss ([`lost`](Self::lost)).
///
/// Each call keeps a value `V` of the driver's, given at its start and handed back with its
/// end (in its [`Outcome`], or by [`cancel`](Self::cancel)): the event loop's continuation, so
/// that a call is one entry in one table; `()` for a driver that keeps nothing per call.
#[derive(Debug)]
pub struct Client<V = ()> {
    config: ClientConfig,
    next_id: u64,
    calls: Calls<V>,
    /// Headers received for unary calls whose answer has not come yet (bounded by the calls in
    /// flight: metadata for a call not in flight is dropped).
    metadata: IdMap<CallId, Metadata>,
    /// Trailers received for calls whose answer has not come yet (bounded the same way).
    trailers: IdMap<CallId, Metadata>,
}

impl<V> Client<V> {
    /// A session with no call yet.
    pub fn new(config: ClientConfig) -> Client<V> {
        Client {
            config,
            next_id: 0,
            calls: Calls::default(),
            metadata: IdMap::default(),
            trailers: IdMap::default(),
        }
    }

    /// Calls in flight.
    pub fn in_flight(&self) -> usize {
        self.calls.len()
    }

    /// Starts a unary call to `method`, to end `timeout` after `now` at the latest, keeping
    /// `value` until it ends. Refused with `RESOURCE_EXHAUSTED` when the window is full
    /// (`value` dropped).
    pub fn start(
        &mut self,
        method: u16,
        timeout: Option<Duration>,
        now: Instant,
        value: V,
    ) -> Result<Start, Status> {
        self.begin(method, timeout, now, false, value)
    }

    /// Opens a streaming call to `method`, to end `timeout` after `now` at the latest (the
    /// deadline covers the whole stream), keeping `value` until it ends. Refused with
    /// `RESOURCE_EXHAUSTED` when the window is full (`value` dropped).
    pub fn open(
        &mut self,
        method: u16,
        timeout: Option<Duration>,
        now: Instant,
        value: V,
    ) -> Result<Start, Status> {
        self.begin(method, timeout, now, true, value)
    }

    fn begin(
        &mut self,
        method: u16,
        timeout: Option<Duration>,
        now: Instant,
        streaming: bool,
        value: V,
    ) -> Result<Start, Status> {
        if self.calls.len() >= self.config.window {
            return Err(Status::new(
                Code::ResourceExhausted,
                format!("request window full ({} calls in flight)", self.config.window),
            ));
        }
        let id = CallId(self.next_id);
        self.next_id += 1;
        // A timeout too far away to represent is no deadline here (the budget is still sent).
        let deadline = timeout.and_then(|t| now.checked_add(t));
        self.calls
            .insert(id, Call::new(method, deadline, streaming, value));
        Ok(Start {
            id,
            deadline: timeout.map(|t| {
                let meta = Meta {
                    kind: method,
                    flags: wire::DEADLINE,
                    request_id: id.0,
                };
                (meta, wire::deadline_payload(t))
            }),
            request: Meta {
                kind: method,
                flags: if streaming { wire::OPEN } else { 0 },
                request_id: id.0,
            },
        })
    }

    /// Sends a message of `len` bytes on stream `id`: the `Meta` to send it with, or why not
    /// ([`Blocked::Window`]: wait for [`ClientEvent::Window`]; [`Blocked::Ended`]: the call is
    /// over or half-closed, drop it).
    pub fn send(&mut self, id: CallId, len: usize) -> Result<Meta, Blocked> {
        let call = self.calls.get_mut(id).ok_or(Blocked::Ended)?;
        let stream = call
            .stream
            .as_mut()
            .filter(|s| !s.half_closed)
            .ok_or(Blocked::Ended)?;
        if !stream.can_send() {
            return Err(Blocked::Window);
        }
        stream.sent(len);
        Ok(Meta {
            kind: call.method,
            flags: wire::MESSAGE,
            request_id: id.0,
        })
    }

    /// Whether stream `id` may send a message now (`false` also when it is not in flight or
    /// half-closed).
    pub fn can_send(&self, id: CallId) -> bool {
        self.calls
            .get(id)
            .and_then(|c| c.stream.as_ref())
            .is_some_and(|s| !s.half_closed && s.can_send())
    }

    /// Half-closes stream `id` (no more messages from this side): the end frame's `Meta` (its
    /// payload is empty and raw), or `None` if the call is over or already half-closed.
    pub fn end(&mut self, id: CallId) -> Option<Meta> {
        let call = self.calls.get_mut(id)?;
        let stream = call.stream.as_mut()?;
        if std::mem::replace(&mut stream.half_closed, true) {
            return None;
        }
        Some(Meta {
            kind: call.method,
            flags: wire::END,
            request_id: id.0,
        })
    }

    /// Stream `id`'s reader took a message of `len` bytes: the window frame to send (its `Meta`
    /// and raw payload) once half a window has been taken, else `None`.
    pub fn consumed(&mut self, id: CallId, len: usize) -> Option<(Meta, [u8; 8])> {
        let call = self.calls.get_mut(id)?;
        let (messages, bytes) = call.stream.as_mut()?.consumed(len)?;
        let meta = Meta {
            kind: call.method,
            flags: wire::WINDOW,
            request_id: id.0,
        };
        Some((meta, wire::window_payload(messages, bytes)))
    }

    /// A frame from the server (`raw`: its payload if raw, `None` for a Ferry message; `len`:
    /// its payload's length). Returns what it means, or `None` for a frame that means nothing
    /// now: a unary call's headers or any call's trailers (kept for the answer that follows), or
    /// a frame of a call that already ended here (cancelled or expired): drop it. An error
    /// breaks the protocol: close.
    pub fn on_frame(
        &mut self,
        meta: Meta,
        raw: Option<&[u8]>,
        len: usize,
    ) -> Result<Option<ClientEvent<V>>, RpcError> {
        // The frame a unary call ends with is read without the general parse: it has no
        // payload to check, and no parsed frame to drop.
        let (method, id, status) = if meta.flags == wire::RESPONSE {
            (meta.kind, CallId(meta.request_id), None)
        } else {
            match wire::parse(meta, raw)? {
                Frame::Response { method, id } => (method, CallId(id), None),
                Frame::Status { method, id, status } => (method, CallId(id), Some(status)),
                Frame::Headers { method, id, metadata } => {
                    if !self.check_method(CallId(id), method)? {
                        return Ok(None);
                    }
                    return self.headers(CallId(id), metadata);
                }
                Frame::Trailers { method, id, metadata } => {
                    if !self.check_method(CallId(id), method)? {
                        return Ok(None);
                    }
                    return self.keep_trailers(CallId(id), metadata).map(|()| None);
                }
                Frame::Message {
                    method,
                    id,
                    response: true,
                } => {
                    if !self.check_method(CallId(id), method)? {
                        return Ok(None);
                    }
                    return Ok(Some(self.stream_frame(CallId(id), |call, s| {
                        s.received(len, false)?;
                        call.headers_done = true;
                        Ok(ClientEvent::Message { id: CallId(id) })
                    })));
                }
                Frame::Window {
                    id,
                    response: true,
                    messages,
                    bytes,
                } => {
                    if self.calls.get(CallId(id)).is_none() {
                        return Ok(None);
                    }
                    return Ok(Some(self.stream_frame(CallId(id), |_, s| {
                        s.granted(messages, bytes);
                        Ok(ClientEvent::Window { id: CallId(id) })
                    })));
                }
                Frame::Request { id, .. } => return Err(direction(id, "request")),
                Frame::Open { id, .. } => return Err(direction(id, "open")),
                Frame::Message { id, .. } => return Err(direction(id, "message")),
                Frame::End { id } => return Err(direction(id, "end")),
                Frame::Window { id, .. } => return Err(direction(id, "window")),
                Frame::Deadline { id, .. } => return Err(direction(id, "deadline")),
                Frame::Metadata { id, .. } => return Err(direction(id, "metadata")),
                Frame::Cancel { id } => return Err(direction(id, "cancel")),
            }
        };
        // A unary call ends with a response or a failure (one look-up); a stream with a status.
        let call = match self.calls.end_unary_of(id, Some(method)) {
            Err(expected) => {
                return Err(RpcError::Method {
                    id: id.0,
                    expected,
                    got: method,
                });
            }
            Ok(Some(call)) => {
                if status.as_ref().is_some_and(|s| s.code == Code::Ok) {
                    let why = "an OK status without a response on a unary call";
                    return Ok(Some(self.aborted(id, call, why)));
                }
                call
            }
            // Not in flight, or a stream.
            Ok(None) => {
                if !self.check_method(id, method)? {
                    return Ok(None);
                }
                if status.is_none() {
                    return Ok(Some(self.abort(id, "a unary response on a stream")));
                }
                self.calls.end(id).expect("in flight")
            }
        };
        let headers = self.take_metadata(id);
        let trailers = take(&mut self.trailers, id);
        let value = call.value;
        Ok(Some(ClientEvent::Ended(match status {
            None => Outcome::Response {
                id,
                method,
                metadata: headers,
                trailers,
                value,
            },
            Some(status) if status.code == Code::Ok => Outcome::Finished {
                id,
                method,
                trailers,
                value,
            },
            Some(status) => Outcome::Failed {
                id,
                method,
                status: status.with_metadata(trailers),
                headers,
                value,
            },
        })))
    }

    /// A stream frame for call `id` (in flight): `apply`'s event, or the call aborted when it
    /// breaks the stream's rules or the call is unary.
    fn stream_frame(
        &mut self,
        id: CallId,
        apply: impl FnOnce(&mut Call<V>, &mut Stream) -> Result<ClientEvent<V>, Refusal>,
    ) -> ClientEvent<V> {
        let call = self.calls.get_mut(id).expect("in flight");
        let why = match call.stream {
            None => "a stream frame on a unary call",
            Some(mut stream) => {
                let result = apply(call, &mut stream);
                call.stream = Some(stream);
                match result {
                    Ok(event) => return event,
                    Err(_) => "a message past the stream's window",
                }
            }
        };
        self.abort(id, why)
    }

    /// Ends call `id` (in flight) because the server broke the protocol of one call.
    fn abort(&mut self, id: CallId, why: &str) -> ClientEvent<V> {
        let call = self.calls.end(id).expect("in flight");
        self.aborted(id, call, why)
    }

    /// Call `id`, just ended, failed because the server broke the protocol of one call.
    fn aborted(&mut self, id: CallId, call: Call<V>, why: &str) -> ClientEvent<V> {
        let headers = self.take_metadata(id);
        take(&mut self.trailers, id);
        let status = Status::new(Code::Internal, format!("the server broke the call: {why}"));
        let outcome = Outcome::Failed {
            id,
            method: call.method,
            status,
            headers,
            value: call.value,
        };
        ClientEvent::Aborted(outcome, cancel_meta(call.method, id))
    }

    /// A call's headers: a stream's are delivered, a unary call's kept for its answer.
    fn headers(&mut self, id: CallId, metadata: Metadata) -> Result<Option<ClientEvent<V>>, RpcError> {
        let call = self.calls.get_mut(id).expect("in flight");
        if std::mem::replace(&mut call.headers_done, true) {
            return Err(RpcError::DuplicateMetadata {
                id: id.0,
                frame: "headers",
                after: "headers, a message or trailers",
            });
        }
        if call.stream.is_some() {
            return Ok(Some(ClientEvent::Headers { id, metadata }));
        }
        self.metadata.insert(id, metadata);
        Ok(None)
    }

    /// Keeps a call's trailers for its end.
    fn keep_trailers(&mut self, id: CallId, metadata: Metadata) -> Result<(), RpcError> {
        let call = self.calls.get_mut(id).expect("in flight");
        call.headers_done = true;
        if std::mem::replace(&mut call.trailers_done, true) {
            return Err(RpcError::DuplicateMetadata {
                id: id.0,
                frame: "trailers",
                after: "trailers",
            });
        }
        self.trailers.insert(id, metadata);
        Ok(())
    }

    /// Whether call `id` is in flight (`false`: its frames are dropped); an error if it is,
    /// to another method than `method`.
    fn check_method(&self, id: CallId, method: u16) -> Result<bool, RpcError> {
        match self.calls.get(id) {
            None => Ok(false),
            Some(call) if call.method != method => Err(RpcError::Method {
                id: id.0,
                expected: call.method,
                got: method,
            }),
            Some(_) => Ok(true),
        }
    }

    fn take_metadata(&mut self, id: CallId) -> Metadata {
        take(&mut self.metadata, id)
    }

    /// Gives up on call `id`: returns the cancel frame to send (the server stops working on
    /// it) and the call's value, or `None` if the call already ended. Its answer, if one
    /// comes, is dropped.
    pub fn cancel(&mut self, id: CallId) -> Option<(Meta, V)> {
        let call = self.calls.end(id)?;
        self.take_metadata(id);
        take(&mut self.trailers, id);
        Some((cancel_meta(call.method, id), call.value))
    }

    /// The earliest deadline of a call in flight: when to call [`expire`](Self::expire).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.calls.next_deadline()
    }

    /// Ends every call whose deadline is at or before `now` with `DEADLINE_EXCEEDED`; returns
    /// each outcome with the cancel frame to send (so the server stops too).
    pub fn expire(&mut self, now: Instant) -> Vec<(Outcome<V>, Meta)> {
        let mut out = Vec::new();
        while let Some((id, call)) = self.calls.end_due(now) {
            let headers = self.take_metadata(id);
            take(&mut self.trailers, id);
            let status = Status::new(Code::DeadlineExceeded, "deadline exceeded (client)");
            out.push((
                Outcome::Failed {
                    id,
                    method: call.method,
                    status,
                    headers,
                    value: call.value,
                },
                cancel_meta(call.method, id),
            ));
        }
        out
    }

    /// The connection is gone: every call in flight fails with `UNAVAILABLE`, in id order.
    pub fn lost(&mut self) -> Vec<Outcome<V>> {
        self.metadata.clear();
        self.trailers.clear();
        self.calls
            .end_all()
            .into_iter()
            .map(|(id, call)| Outcome::Failed {
                id,
                method: call.method,
                status: Status::new(Code::Unavailable, "connection lost"),
                headers: Metadata::new(),
                value: call.value,
            })
            .collect()
    }
}

/// Takes what `map` holds for `id` (no lookup when it is empty, as it is for most calls).
fn take(map: &mut IdMap<CallId, Metadata>, id: CallId) -> Metadata {
    if map.is_empty() {
        return Metadata::new();
    }
    map.remove(&id).unwrap_or_default()
}

fn cancel_meta(method: u16, id: CallId) -> Meta {
    Meta {
        kind: method,
        flags: wire::CANCEL,
        request_id: id.0,
    }
}

fn direction(id: u64, frame: &'static str) -> RpcError {
    RpcError::Direction {
        id,
        frame,
        side: "client",
    }
}
