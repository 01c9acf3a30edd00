//! The server side of one session: calls in progress (unary and streaming), their deadlines,
//! cancellation, streams' windows, and the bound on how many a client may have open.

use std::time::{Duration, Instant};

use ferry_transport::Meta;

use super::Blocked;
use super::calls::{Call, Calls, Refusal, Unadded};
use crate::CallId;
use crate::id::IdMap;
use crate::metadata::Metadata;
use crate::status::{Code, Status};
use crate::wire::{self, Frame, RpcError};

/// Server settings, per session.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Calls in progress at most, streams included (default 64): a request or open past it is
    /// answered with `RESOURCE_EXHAUSTED` at once, so a client cannot make the server queue
    /// without bound.
    pub max_in_flight: usize,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig { max_in_flight: 64 }
    }
}

/// What a frame from the client means for the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A call to handle: its frame holds the request message. Answer with
    /// [`Server::respond`] or [`Server::fail`].
    Request {
        /// Call id.
        id: CallId,
        /// Method id.
        method: u16,
        /// When the client stops waiting (from its budget and this side's `now`).
        deadline: Option<Instant>,
        /// The metadata the client sent before the request (empty if none).
        metadata: Metadata,
    },
    /// A streaming call to handle: its messages follow ([`Event::Message`]). Send with
    /// [`Server::send`], end with [`Server::finish`] or [`Server::fail`].
    Open {
        /// Call id.
        id: CallId,
        /// Method id.
        method: u16,
        /// When the client stops waiting (from its budget and this side's `now`).
        deadline: Option<Instant>,
        /// The metadata the client sent before the open (empty if none).
        metadata: Metadata,
    },
    /// A message of stream `id`: its frame holds it. Call [`Server::consumed`] once the
    /// handler has taken it.
    Message {
        /// Call id.
        id: CallId,
    },
    /// The client sends no more messages on stream `id`.
    HalfClosed {
        /// Call id.
        id: CallId,
    },
    /// The client granted more credit on stream `id`: a send that was blocked may go.
    Window {
        /// Call id.
        id: CallId,
    },
    /// A request or open past the limit: send the status frame given, and do not handle it.
    Refused {
        /// Call id.
        id: CallId,
        /// The status frame's metadata.
        meta: Meta,
        /// Its payload.
        payload: Vec<u8>,
    },
    /// The client cancelled a call in progress: its handler may stop, its answer is dropped.
    Cancelled {
        /// Call id.
        id: CallId,
    },
    /// The client broke stream `id`'s rules (a message past its window or after its end, a
    /// stream frame on a unary call): the call is over. Send the status frame given; its
    /// handler may stop, its answer is dropped.
    Aborted {
        /// Call id.
        id: CallId,
        /// The status frame's metadata.
        meta: Meta,
        /// Its payload.
        payload: Vec<u8>,
    },
}

/// The server side of one session (sans-IO). A call is in progress from its request to its
/// answer, its cancellation or its deadline, whichever comes first; an answer to a call no
/// longer in progress is not sent.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    calls: Calls,
    /// Budgets received for requests not yet arrived.
    budgets: IdMap<CallId, Duration>,
    /// Metadata received for requests not yet arrived (bounded as the budgets are).
    metadata: IdMap<CallId, Metadata>,
}

impl Server {
    /// A session with no call yet.
    pub fn new(config: ServerConfig) -> Server {
        Server {
            config,
            calls: Calls::default(),
            budgets: Default::default(),
            metadata: Default::default(),
        }
    }

    /// Calls in progress.
    pub fn in_flight(&self) -> usize {
        self.calls.len()
    }

    /// A frame from the client (`raw`: its payload if raw, `None` for a Ferry message; `len`:
    /// its payload's length), at `now`. An error breaks the protocol: close the connection.
    pub fn on_frame(
        &mut self,
        meta: Meta,
        raw: Option<&[u8]>,
        len: usize,
        now: Instant,
    ) -> Result<Option<Event>, RpcError> {
        // A request (no flag), the frame every unary call begins with, is read without the
        // general parse: it has no payload to check, and no parsed frame to drop.
        if meta.flags == 0 {
            return self.begin(meta.kind, meta.request_id, false, now).map(Some);
        }
        match wire::parse(meta, raw)? {
            Frame::Deadline { id: wire_id, budget } => {
                let id = CallId(wire_id);
                if self.calls.get(id).is_some() || self.budgets.contains_key(&id) {
                    return Err(RpcError::DuplicateId { id: wire_id });
                }
                if self.budgets.len() >= self.config.max_in_flight {
                    return Err(RpcError::TooManyDeadlines {
                        id: wire_id,
                        max: self.config.max_in_flight,
                    });
                }
                self.budgets.insert(id, budget);
                Ok(None)
            }
            Frame::Metadata {
                id: wire_id,
                metadata,
                ..
            } => {
                let id = CallId(wire_id);
                let after = if self.calls.get(id).is_some() {
                    "request"
                } else if self.metadata.contains_key(&id) {
                    "metadata"
                } else {
                    ""
                };
                if !after.is_empty() {
                    return Err(RpcError::DuplicateMetadata {
                        id: wire_id,
                        frame: "metadata",
                        after,
                    });
                }
                if self.metadata.len() >= self.config.max_in_flight {
                    return Err(RpcError::TooManyMetadata {
                        id: wire_id,
                        max: self.config.max_in_flight,
                    });
                }
                self.metadata.insert(id, metadata);
                Ok(None)
            }
            Frame::Request { method, id: wire_id } => Ok(Some(self.begin(method, wire_id, false, now)?)),
            Frame::Open { method, id: wire_id } => Ok(Some(self.begin(method, wire_id, true, now)?)),
            Frame::Message {
                id, response: false, ..
            } => Ok(self.stream_frame(CallId(id), |s| {
                s.received(len, true).map(|()| Event::Message { id: CallId(id) })
            })),
            Frame::End { id } => Ok(self.stream_frame(CallId(id), |s| {
                if std::mem::replace(&mut s.half_closed, true) {
                    return Err(Refusal::Closed);
                }
                Ok(Event::HalfClosed { id: CallId(id) })
            })),
            Frame::Window {
                id,
                response: false,
                messages,
                bytes,
            } => Ok(self.stream_frame(CallId(id), |s| {
                s.granted(messages, bytes);
                Ok(Event::Window { id: CallId(id) })
            })),
            Frame::Cancel { id } => {
                let id = CallId(id);
                self.budgets.remove(&id);
                self.metadata.remove(&id);
                Ok(self.calls.end(id).map(|_| Event::Cancelled { id }))
            }
            Frame::Response { id, .. } => Err(direction(id, "response")),
            Frame::Message { id, .. } => Err(direction(id, "response message")),
            Frame::Window { id, .. } => Err(direction(id, "response window")),
            Frame::Headers { id, .. } => Err(direction(id, "headers")),
            Frame::Trailers { id, .. } => Err(direction(id, "trailers")),
            Frame::Status { id, .. } => Err(direction(id, "status")),
        }
    }

    /// A request or an open: the call starts, with the budget and metadata sent before it, or
    /// is refused past the bound.
    fn begin(&mut self, method: u16, wire_id: u64, streaming: bool, now: Instant) -> Result<Event, RpcError> {
        let id = CallId(wire_id);
        // Most calls carry neither a budget nor metadata: no lookup then. (A duplicate id
        // breaks the protocol: what it takes from these tables goes with the connection.)
        let budget = match self.budgets.is_empty() {
            true => None,
            false => self.budgets.remove(&id),
        };
        let metadata = match self.metadata.is_empty() {
            true => Metadata::new(),
            false => self.metadata.remove(&id).unwrap_or_default(),
        };
        let deadline = budget.and_then(|b| now.checked_add(b));
        let call = Call::new(method, deadline, streaming, ());
        match self.calls.insert_new(id, call, self.config.max_in_flight) {
            Ok(()) => {}
            Err(Unadded::InProgress) => return Err(RpcError::DuplicateId { id: wire_id }),
            Err(Unadded::Full) => {
                let status = Status::new(
                    Code::ResourceExhausted,
                    format!("server busy ({} calls in progress)", self.config.max_in_flight),
                );
                let (meta, payload) = status_frame(method, id, &status);
                return Ok(Event::Refused { id, meta, payload });
            }
        }
        Ok(match streaming {
            false => Event::Request {
                id,
                method,
                deadline,
                metadata,
            },
            true => Event::Open {
                id,
                method,
                deadline,
                metadata,
            },
        })
    }

    /// A stream frame from the client for call `id`: `apply`'s event, or the call aborted when
    /// it breaks the stream's rules (or the call is unary); `None` when the call is no longer
    /// in progress (it ended here first: drop the frame).
    fn stream_frame(
        &mut self,
        id: CallId,
        apply: impl FnOnce(&mut super::calls::Stream) -> Result<Event, Refusal>,
    ) -> Option<Event> {
        let call = self.calls.get_mut(id)?;
        let why = match call.stream.as_mut() {
            None => "a stream frame on a unary call",
            Some(stream) => match apply(stream) {
                Ok(event) => return Some(event),
                Err(Refusal::Window) => "a message past the stream's window",
                Err(Refusal::Closed) => "a message or end after the client's end",
            },
        };
        let (meta, payload) = self
            .fail(id, &Status::new(Code::Internal, why))
            .expect("in progress");
        Some(Event::Aborted { id, meta, payload })
    }

    /// Stream `id`'s handler took a message of `len` bytes: the window frame to send (its `Meta`
    /// and raw payload) once half a window has been taken, else `None`.
    pub fn consumed(&mut self, id: CallId, len: usize) -> Option<(Meta, [u8; 8])> {
        let call = self.calls.get_mut(id)?;
        let (messages, bytes) = call.stream.as_mut()?.consumed(len)?;
        let meta = Meta {
            kind: call.method,
            flags: wire::RESPONSE | wire::WINDOW,
            request_id: id.0,
        };
        Some((meta, wire::window_payload(messages, bytes)))
    }

    /// Sends a message of `len` bytes on stream `id`: the `Meta` to send it with, or why not
    /// ([`Blocked::Window`]: wait for [`Event::Window`]; [`Blocked::Ended`]: drop it). Send the
    /// headers ([`headers`](Self::headers)) first: none go after a message.
    pub fn send(&mut self, id: CallId, len: usize) -> Result<Meta, Blocked> {
        let call = self.calls.get_mut(id).ok_or(Blocked::Ended)?;
        let stream = call.stream.as_mut().ok_or(Blocked::Ended)?;
        if !stream.can_send() {
            return Err(Blocked::Window);
        }
        stream.sent(len);
        call.headers_done = true;
        Ok(Meta {
            kind: call.method,
            flags: wire::RESPONSE | wire::MESSAGE,
            request_id: id.0,
        })
    }

    /// Whether stream `id` may send a message now (`false` also when it is not in progress).
    pub fn can_send(&self, id: CallId) -> bool {
        self.calls
            .get(id)
            .and_then(|c| c.stream.as_ref())
            .is_some_and(|s| s.can_send())
    }

    /// The metadata a response to call `id` is sent with, if the call is in progress; the
    /// call stays in progress (end it with [`respond`](Self::respond) once the response is
    /// queued).
    pub fn response_meta(&self, id: CallId) -> Option<Meta> {
        let call = self.calls.get(id)?;
        Some(Meta {
            kind: call.method,
            flags: wire::RESPONSE,
            request_id: id.0,
        })
    }

    /// The frame carrying call `id`'s headers (`metadata`), to send before its first message or
    /// its answer: its `Meta` and raw payload. `None` (send nothing) when `metadata` is empty,
    /// the call is no longer in progress, or its headers, a message or its trailers already
    /// went out (headers come once, first). The call stays in progress.
    pub fn headers(&mut self, id: CallId, metadata: &Metadata) -> Option<(Meta, Vec<u8>)> {
        self.metadata_frame(id, metadata, wire::RESPONSE | wire::METADATA)
    }

    /// The frame carrying call `id`'s trailers (`metadata`), to send just before the response or
    /// status that ends it: its `Meta` and raw payload. `None` (send nothing) when `metadata` is
    /// empty, the call is no longer in progress, or its trailers already went out. Headers
    /// can no longer go after it.
    pub fn trailers(&mut self, id: CallId, metadata: &Metadata) -> Option<(Meta, Vec<u8>)> {
        self.metadata_frame(id, metadata, wire::RESPONSE | wire::STATUS | wire::METADATA)
    }

    fn metadata_frame(&mut self, id: CallId, metadata: &Metadata, flags: u8) -> Option<(Meta, Vec<u8>)> {
        if metadata.is_empty() {
            return None;
        }
        let call = self.calls.get_mut(id)?;
        let trailers = flags & wire::STATUS != 0;
        let done = match trailers {
            true => &mut call.trailers_done,
            false => &mut call.headers_done,
        };
        if std::mem::replace(done, true) {
            return None;
        }
        call.headers_done = true;
        Some(wire::metadata_frame(call.method, id.0, flags, metadata))
    }

    /// Ends unary call `id` with a response: the metadata to send the response message with,
    /// or `None` if the call is no longer in progress (cancelled, expired) or is a stream
    /// (end those with [`finish`](Self::finish)): send nothing.
    pub fn respond(&mut self, id: CallId) -> Option<Meta> {
        let call = self.calls.end_unary(id)?;
        Some(Meta {
            kind: call.method,
            flags: wire::RESPONSE,
            request_id: id.0,
        })
    }

    /// Ends unary call `id` with a response that `send`, given the metadata to send it with,
    /// queues, with one look-up: `None` if the call is no longer in progress or is a stream
    /// (`send` not called); an error from `send` leaves the call in progress.
    pub(crate) fn respond_with<E>(
        &mut self,
        id: CallId,
        send: impl FnOnce(Meta) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        self.calls.end_unary_with(id, |call| {
            send(Meta {
                kind: call.method,
                flags: wire::RESPONSE,
                request_id: id.0,
            })
        })
    }

    /// Ends stream `id` with OK: the status frame to send (metadata and raw payload), or `None`
    /// if the call is no longer in progress or is unary (end those with
    /// [`respond`](Self::respond)).
    pub fn finish(&mut self, id: CallId) -> Option<(Meta, Vec<u8>)> {
        self.calls.get(id)?.stream?;
        self.fail(id, &Status::new(Code::Ok, ""))
    }

    /// Ends call `id` with `status`: the status frame to send (metadata and raw payload), or
    /// `None` if the call is no longer in progress.
    pub fn fail(&mut self, id: CallId, status: &Status) -> Option<(Meta, Vec<u8>)> {
        let call = self.calls.end(id)?;
        Some(status_frame(call.method, id, status))
    }

    /// The earliest deadline of a call in progress.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.calls.next_deadline()
    }

    /// Ends every call whose deadline is at or before `now`: returns each call's id with the
    /// `DEADLINE_EXCEEDED` status frame to send (its handler's answer will be dropped).
    pub fn expire(&mut self, now: Instant) -> Vec<(CallId, Meta, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some((id, call)) = self.calls.end_due(now) {
            let status = Status::new(Code::DeadlineExceeded, "deadline exceeded (server)");
            let (meta, payload) = status_frame(call.method, id, &status);
            out.push((id, meta, payload));
        }
        out
    }

    /// The connection is gone: forgets every call (their answers will not be sent) and
    /// returns their ids, in order, so handlers may stop.
    pub fn lost(&mut self) -> Vec<CallId> {
        self.budgets.clear();
        self.metadata.clear();
        self.calls.end_all().into_iter().map(|(id, _)| id).collect()
    }
}

fn status_frame(method: u16, id: CallId, status: &Status) -> (Meta, Vec<u8>) {
    let meta = Meta {
        kind: method,
        flags: wire::RESPONSE | wire::STATUS,
        request_id: id.0,
    };
    (meta, wire::status_payload(status))
}

fn direction(id: u64, frame: &'static str) -> RpcError {
    RpcError::Direction {
        id,
        frame,
        side: "server",
    }
}
