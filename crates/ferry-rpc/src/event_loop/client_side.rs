//! The client side of an event loop: sessions to other servers, calls started with
//! continuations, cancellation, and a call's end (its continuation runs with the response or
//! the status).

use std::time::{Duration, Instant};

use ferry_transport::{Meta, Transport, TransportError};
use ferry_wire::{Message, Outgoing};

use super::session::{ClientSide, Role};
use super::{Continuation, EventLoop, LoopSession, SessionId};
use crate::conn::{Conn, Frame, frame_alone};
use crate::service::{Encoded, Incoming};
use crate::session::{ClientEvent, Outcome};
use crate::status::{Code, Status, bad_response, unsent_request};
use crate::{Addr, CallId};

impl EventLoop {
    /// Connects to a server; the session's calls go out with [`call`](Self::call).
    pub fn connect(&mut self, addr: &Addr) -> Result<SessionId, TransportError> {
        let conn = Conn::connect(addr, &self.pool, &self.config.conn)?;
        Ok(self.insert(
            conn,
            Role::Client(ClientSide {
                core: crate::session::Client::new(self.config.client.clone()),
                timeout: None,
            }),
        ))
    }

    /// Sets the deadline of the session's calls, counted from each call's start.
    pub fn set_timeout(&mut self, id: SessionId, timeout: Option<Duration>) {
        if let Some(Role::Client(c)) = self.get_mut(id).map(|s| &mut s.role) {
            c.timeout = timeout;
        }
    }

    /// Starts a call: the request is serialized and queued at once (sent at the end of the
    /// turn, batched with the others); `then` runs on this loop with the response, read in
    /// place, or the status: exactly once, whatever happens (response, status, deadline,
    /// cancellation, the connection's loss). Refused at once (and `then` dropped unrun) when
    /// the session's request window is full (`RESOURCE_EXHAUSTED`) or it is gone
    /// (`UNAVAILABLE`).
    ///
    /// Calls from the loop carry no metadata, and response metadata from the server is
    /// dropped (it is read by [`Channel`](crate::Channel) and
    /// [`AsyncChannel`](crate::tokio::AsyncChannel), through their `call_with`).
    pub fn call(
        &mut self,
        id: SessionId,
        method: u16,
        request: &(impl Outgoing + ?Sized),
        then: Continuation,
    ) -> Result<CallId, Status> {
        self.start_call(id, method, |conn, meta| conn.send(meta, request), then)
    }

    /// [`call`](Self::call) for a raw method: `payload` is sent as it is (over TCP a
    /// `Payload::Gather`'s parts are referenced, over shared memory copied into a block), and
    /// the continuation reads the response with [`Incoming::bytes`].
    pub fn call_payload(
        &mut self,
        id: SessionId,
        method: u16,
        payload: ferry_transport::Payload<'_>,
        then: Continuation,
    ) -> Result<CallId, Status> {
        self.start_call(id, method, |conn, meta| conn.send_payload(meta, payload), then)
    }

    fn start_call(
        &mut self,
        id: SessionId,
        method: u16,
        send: impl FnOnce(&mut Conn, Meta) -> Result<(), TransportError>,
        then: Continuation,
    ) -> Result<CallId, Status> {
        let last_work = self.last_work;
        let session = self.get_mut(id).ok_or_else(gone)?;
        let Role::Client(client) = &mut session.role else {
            return Err(Status::new(Code::FailedPrecondition, "not a client session"));
        };
        // `now` matters only to a call with a deadline: a call without one reads no clock.
        let now = client.timeout.map_or(last_work, |_| Instant::now());
        let deadline = client.timeout.and_then(|t| now.checked_add(t));
        let start = client.core.start(method, client.timeout, now, then)?;
        if let Some((meta, budget)) = start.deadline {
            if let Err(e) = session
                .conn
                .send_payload(meta, ferry_transport::Payload::Bytes(&budget))
            {
                client.core.cancel(start.id);
                return Err(send_failed(&e));
            }
        }
        if let Err(e) = send(&mut session.conn, start.request) {
            // The deadline frame (if any) went out: cancel tells the server to forget it.
            if let Some((meta, _)) = client.core.cancel(start.id) {
                let _ = session
                    .conn
                    .send_payload(meta, ferry_transport::Payload::Bytes(&[]));
            }
            return Err(send_failed(&e));
        }
        session.dirty = true;
        if let Some(at) = deadline {
            self.due.by(at);
        }
        Ok(start.id)
    }

    /// [`call`](Self::call) with a typed continuation: the response validated as an `M`.
    pub fn call_then<M: Message<'static>>(
        &mut self,
        session: LoopSession,
        method: u16,
        request: &(impl Outgoing + ?Sized),
        then: impl for<'f> FnOnce(&mut EventLoop, Result<M::View<'f>, Status>) + 'static,
    ) -> Result<CallId, Status> {
        self.set_timeout(session.id, session.timeout);
        self.call(
            session.id,
            method,
            request,
            Box::new(move |lp, result| {
                then(
                    lp,
                    result.and_then(|r| r.decode::<M>().map_err(|e| bad_response(&e))),
                )
            }),
        )
    }

    /// Gives up on call `call` of session `id`: its continuation runs now with `CANCELLED`,
    /// and the server is told to stop. Nothing happens if the call already ended.
    pub fn cancel(&mut self, id: SessionId, call: CallId) {
        let Some(session) = self.get_mut(id) else { return };
        let Role::Client(client) = &mut session.role else {
            return;
        };
        let Some((meta, then)) = client.core.cancel(call) else {
            return;
        };
        session.transmit(meta, Encoded::default());
        then(self, Err(Status::new(Code::Cancelled, "cancelled by the client")));
    }

    /// A client session's call ended with `outcome`: its continuation runs with the response
    /// `frame` (read in place) or the status.
    pub(super) fn on_outcome(&mut self, i: usize, event: ClientEvent<Continuation>, frame: &Frame) {
        let (then, status) = match event {
            ClientEvent::Ended(Outcome::Response { value, .. }) => (value, None),
            ClientEvent::Ended(Outcome::Failed { status, value, .. }) => (value, Some(status)),
            ClientEvent::Aborted(Outcome::Failed { status, value, .. }, cancel) => {
                if let Some(s) = &mut self.slots[i].session {
                    s.transmit(cancel, Encoded::from_vec(Vec::new()));
                }
                (value, Some(status))
            }
            // This loop opens no streams, so no stream event can come (and an aborted call
            // always failed).
            _ => return,
        };
        let limits = self.config.limits;
        match status {
            None => then(
                self,
                Ok(Incoming {
                    frame,
                    limits: &limits,
                    shared: frame.shared(),
                }),
            ),
            Some(status) => then(self, Err(status)),
        }
    }
}

fn gone() -> Status {
    Status::new(Code::Unavailable, "no such session (closed)")
}

fn send_failed(e: &TransportError) -> Status {
    match e {
        TransportError::WouldBlock => {
            Status::new(Code::ResourceExhausted, "the connection's send queue is full")
        }
        e if frame_alone(e) => unsent_request(e),
        e => Status::new(Code::Unavailable, format!("sending the request: {e}")),
    }
}
