//! The server side of one session: calls in progress, their deadlines, cancellation, and the
//! bound on how many a client may have open.

use std::time::{Duration, Instant};

use ferry_transport::Meta;

use super::calls::{Call, Calls};
use crate::CallId;
use crate::id::IdMap;
use crate::metadata::Metadata;
use crate::status::{Code, Status};
use crate::wire::{self, Frame, RpcError};

/// Server settings, per session.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Calls in progress at most (default 64): a request past it is answered with
    /// `RESOURCE_EXHAUSTED` at once, so a client cannot make the server queue without bound.
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
    /// A request past the limit: send the status frame given, and do not handle it.
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

    /// A frame from the client (`raw`: its payload if raw, `None` for a Ferry message), at
    /// `now`. An error breaks the protocol: close the connection.
    pub fn on_frame(
        &mut self,
        meta: Meta,
        raw: Option<&[u8]>,
        now: Instant,
    ) -> Result<Option<Event>, RpcError> {
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
            Frame::Request { method, id: wire_id } => {
                let id = CallId(wire_id);
                if self.calls.get(id).is_some() {
                    return Err(RpcError::DuplicateId { id: wire_id });
                }
                let budget = self.budgets.remove(&id);
                // Most calls carry none: no lookup then.
                let metadata = match self.metadata.is_empty() {
                    true => Metadata::new(),
                    false => self.metadata.remove(&id).unwrap_or_default(),
                };
                if self.calls.len() >= self.config.max_in_flight {
                    let status = Status::new(
                        Code::ResourceExhausted,
                        format!("server busy ({} calls in progress)", self.config.max_in_flight),
                    );
                    let (meta, payload) = status_frame(method, id, &status);
                    return Ok(Some(Event::Refused { id, meta, payload }));
                }
                let deadline = budget.and_then(|b| now.checked_add(b));
                self.calls.insert(id, Call::new(method, deadline));
                Ok(Some(Event::Request {
                    id,
                    method,
                    deadline,
                    metadata,
                }))
            }
            Frame::Cancel { id } => {
                let id = CallId(id);
                self.budgets.remove(&id);
                self.metadata.remove(&id);
                Ok(self.calls.end(id).map(|_| Event::Cancelled { id }))
            }
            Frame::Response { id, .. } => Err(direction(id, "response")),
            Frame::ResponseMetadata { id, .. } => Err(direction(id, "response metadata")),
            Frame::Failed { id, .. } => Err(direction(id, "status")),
        }
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

    /// The frame carrying call `id`'s response `metadata`, to send before its response or
    /// status frame: its `Meta` and raw payload. `None` (send nothing) when `metadata` is
    /// empty, the call is no longer in progress, or its metadata frame already went out (one
    /// per call: later metadata is dropped). The call stays in progress.
    pub fn response_metadata(&mut self, id: CallId, metadata: &Metadata) -> Option<(Meta, Vec<u8>)> {
        if metadata.is_empty() {
            return None;
        }
        let call = self.calls.get_mut(id)?;
        if std::mem::replace(&mut call.sent_metadata, true) {
            return None;
        }
        Some(wire::metadata_frame(call.method, id.0, true, metadata))
    }

    /// Ends call `id` with a response: the metadata to send the response message with, or
    /// `None` if the call is no longer in progress (cancelled, expired): send nothing.
    pub fn respond(&mut self, id: CallId) -> Option<Meta> {
        let call = self.calls.end(id)?;
        Some(Meta {
            kind: call.method,
            flags: wire::RESPONSE,
            request_id: id.0,
        })
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
