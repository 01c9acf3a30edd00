//! The client side of one session: call ids, the request window, deadlines, cancellation.

use std::time::{Duration, Instant};

use ferry_transport::Meta;

use super::calls::{Call, Calls};
use crate::id::IdMap;
use crate::metadata::Metadata;
use crate::status::{Code, Status};
use crate::wire::{self, Frame, RpcError};
use crate::{CallId, wire::metadata_frame};

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Calls in flight at most (eRPC's request window; default 8): a call past it is refused
    /// with `RESOURCE_EXHAUSTED` before anything is sent.
    pub window: usize,
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig { window: 8 }
    }
}

/// The frames that start a call, for the driver to send in order: the deadline frame (if the
/// call has a deadline), the metadata frame (if the call has metadata:
/// [`metadata_frame`](Self::metadata_frame)), then the request message with `request`'s `Meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// The call's id.
    pub id: CallId,
    /// A raw deadline frame to send first: its metadata and payload.
    pub deadline: Option<(Meta, [u8; 8])>,
    /// Metadata of the request message.
    pub request: Meta,
}

impl Start {
    /// The frame carrying the call's `metadata` (its `Meta` and raw payload), to send after the
    /// deadline frame and before the request; `None` when `metadata` is empty (nothing is sent).
    pub fn metadata_frame(&self, metadata: &Metadata) -> Option<(Meta, Vec<u8>)> {
        (!metadata.is_empty())
            .then(|| metadata_frame(self.request.kind, self.request.request_id, false, metadata))
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The response arrived: its frame holds the message.
    Response {
        /// The call's id.
        id: CallId,
        /// Its method.
        method: u16,
        /// The metadata the server sent before it (empty if none).
        metadata: Metadata,
    },
    /// The call failed: a status from the server (with the metadata the server sent before
    /// it, in [`Status::metadata`]), its deadline, or the connection's loss.
    Failed {
        /// The call's id.
        id: CallId,
        /// Its method.
        method: u16,
        /// Why.
        status: Status,
    },
}

/// The client side of one session (sans-IO: it takes frames and `now`, and returns what to
/// send and how calls ended). Every call it starts ends exactly once: by a frame
/// ([`on_frame`](Self::on_frame)), its deadline ([`expire`](Self::expire)), the caller
/// ([`cancel`](Self::cancel)) or the connection's loss ([`lost`](Self::lost)).
#[derive(Debug)]
pub struct Client {
    config: ClientConfig,
    next_id: u64,
    calls: Calls,
    /// Response metadata received for calls whose answer has not come yet (bounded by the
    /// calls in flight: metadata for a call not in flight is dropped).
    metadata: IdMap<CallId, Metadata>,
}

impl Client {
    /// A session with no call yet.
    pub fn new(config: ClientConfig) -> Client {
        Client {
            config,
            next_id: 0,
            calls: Calls::default(),
            metadata: IdMap::default(),
        }
    }

    /// Calls in flight.
    pub fn in_flight(&self) -> usize {
        self.calls.len()
    }

    /// Starts a call to `method`, to end `timeout` after `now` at the latest. Refused with
    /// `RESOURCE_EXHAUSTED` when the window is full.
    pub fn start(&mut self, method: u16, timeout: Option<Duration>, now: Instant) -> Result<Start, Status> {
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
        self.calls.insert(id, Call::new(method, deadline));
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
            request: Meta::new(method, id.0),
        })
    }

    /// A frame from the server (`raw`: its payload if raw, `None` for a Ferry message).
    /// Returns how a call ended, or `None` for a frame that ends nothing: response metadata
    /// (kept for the answer that follows), or the answer to a call that already ended (it was
    /// cancelled or expired here): drop it. An error breaks the protocol: close.
    pub fn on_frame(&mut self, meta: Meta, raw: Option<&[u8]>) -> Result<Option<Outcome>, RpcError> {
        let (method, id, status) = match wire::parse(meta, raw)? {
            Frame::Response { method, id } => (method, CallId(id), None),
            Frame::Failed { method, id, status } => (method, CallId(id), Some(status)),
            Frame::ResponseMetadata { method, id, metadata } => {
                self.check_method(CallId(id), method)?;
                return self.response_metadata(CallId(id), metadata).map(|()| None);
            }
            Frame::Request { id, .. } => return Err(direction(id, "request")),
            Frame::Deadline { id, .. } => return Err(direction(id, "deadline")),
            Frame::Metadata { id, .. } => return Err(direction(id, "metadata")),
            Frame::Cancel { id } => return Err(direction(id, "cancel")),
        };
        if !self.check_method(id, method)? {
            return Ok(None);
        }
        self.calls.end(id);
        let metadata = self.take_metadata(id);
        Ok(Some(match status {
            None => Outcome::Response { id, method, metadata },
            Some(status) => Outcome::Failed {
                id,
                method,
                status: status.with_metadata(metadata),
            },
        }))
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

    /// Keeps the response metadata of a call in flight for its answer; drops that of a call
    /// no longer in flight.
    fn response_metadata(&mut self, id: CallId, metadata: Metadata) -> Result<(), RpcError> {
        if self.calls.get(id).is_none() {
            return Ok(());
        }
        if self.metadata.contains_key(&id) {
            return Err(RpcError::DuplicateMetadata {
                id: id.0,
                frame: "response metadata",
                after: "response metadata",
            });
        }
        self.metadata.insert(id, metadata);
        Ok(())
    }

    fn take_metadata(&mut self, id: CallId) -> Metadata {
        if self.metadata.is_empty() {
            return Metadata::new();
        }
        self.metadata.remove(&id).unwrap_or_default()
    }

    /// Gives up on call `id`: returns the cancel frame to send (the server stops working on
    /// it), or `None` if the call already ended. Its answer, if one comes, is dropped.
    pub fn cancel(&mut self, id: CallId) -> Option<Meta> {
        let call = self.calls.end(id)?;
        self.take_metadata(id);
        Some(cancel_meta(call.method, id))
    }

    /// The earliest deadline of a call in flight: when to call [`expire`](Self::expire).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.calls.next_deadline()
    }

    /// Ends every call whose deadline is at or before `now` with `DEADLINE_EXCEEDED`; returns
    /// each outcome with the cancel frame to send (so the server stops too).
    pub fn expire(&mut self, now: Instant) -> Vec<(Outcome, Meta)> {
        let mut out = Vec::new();
        while let Some((id, call)) = self.calls.end_due(now) {
            self.take_metadata(id);
            let status = Status::new(Code::DeadlineExceeded, "deadline exceeded (client)");
            out.push((
                Outcome::Failed {
                    id,
                    method: call.method,
                    status,
                },
                cancel_meta(call.method, id),
            ));
        }
        out
    }

    /// The connection is gone: every call in flight fails with `UNAVAILABLE`, in id order.
    pub fn lost(&mut self) -> Vec<Outcome> {
        self.metadata.clear();
        self.calls
            .end_all()
            .into_iter()
            .map(|(id, call)| Outcome::Failed {
                id,
                method: call.method,
                status: Status::new(Code::Unavailable, "connection lost"),
            })
            .collect()
    }
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
