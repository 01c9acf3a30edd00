//! The client side of one session: call ids, the request window, deadlines, cancellation.

use std::time::{Duration, Instant};

use ferry_transport::Meta;

use super::calls::{Call, Calls};
use crate::CallId;
use crate::status::{Code, Status};
use crate::wire::{self, Frame, RpcError};

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
/// call has a deadline), then the request message with `request`'s metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// The call's id.
    pub id: CallId,
    /// A raw deadline frame to send first: its metadata and payload.
    pub deadline: Option<(Meta, [u8; 8])>,
    /// Metadata of the request message.
    pub request: Meta,
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
    },
    /// The call failed: a status from the server, its deadline, or the connection's loss.
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
}

impl Client {
    /// A session with no call yet.
    pub fn new(config: ClientConfig) -> Client {
        Client {
            config,
            next_id: 0,
            calls: Calls::default(),
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
        self.calls.insert(id, Call { method, deadline });
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
    /// Returns how a call ended, or `None` for the answer to a call that already ended (it
    /// was cancelled or expired here): drop it. An error breaks the protocol: close.
    pub fn on_frame(&mut self, meta: Meta, raw: Option<&[u8]>) -> Result<Option<Outcome>, RpcError> {
        let (method, id, status) = match wire::parse(meta, raw)? {
            Frame::Response { method, id } => (method, CallId(id), None),
            Frame::Failed { method, id, status } => (method, CallId(id), Some(status)),
            Frame::Request { id, .. } => return Err(direction(id, "request")),
            Frame::Deadline { id, .. } => return Err(direction(id, "deadline")),
            Frame::Cancel { id } => return Err(direction(id, "cancel")),
        };
        match self.calls.get(id) {
            None => return Ok(None),
            Some(call) if call.method != method => {
                return Err(RpcError::Method {
                    id: id.0,
                    expected: call.method,
                    got: method,
                });
            }
            Some(_) => {}
        }
        self.calls.end(id);
        Ok(Some(match status {
            None => Outcome::Response { id, method },
            Some(status) => Outcome::Failed { id, method, status },
        }))
    }

    /// Gives up on call `id`: returns the cancel frame to send (the server stops working on
    /// it), or `None` if the call already ended. Its answer, if one comes, is dropped.
    pub fn cancel(&mut self, id: CallId) -> Option<Meta> {
        let call = self.calls.end(id)?;
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
