//! A stream on the blocking client: messages sent as the window allows (waiting for room
//! while reading what comes), messages received in place, headers, trailers, cancellation on
//! drop.

use std::marker::PhantomData;

use ferry_transport::{Meta, Payload, Transport, TransportError};
use ferry_wire::{Context, Outgoing};

use crate::CallId;
use crate::channel::{Channel, Inner, Response};
use crate::conn::{Conn, frame_alone};
use crate::metadata::Metadata;
use crate::status::{Code, Status, unsent_request};

/// A stream opened by [`Channel::open`]: [`send`](Self::send) messages and
/// [`end`](Self::end), [`recv`](Self::recv) the server's messages (or iterate) until its end,
/// then read the [`trailers`](Self::trailers). Each direction has a window: a send waits for
/// room, reading (and keeping) what arrives for every call of the channel meanwhile; a message
/// received is granted back to the server once [`recv`](Self::recv) takes it. Dropped before
/// its end, the stream is cancelled (the server's handler is told).
///
/// What arrives for a stream is kept until taken, at most a window of it: in place when it
/// comes while `recv` waits for it, else (over shared memory) copied into the channel's pool.
/// A message kept in place would hold its block of the server's memory, and `ferry-shm`
/// acknowledges blocks in order, so a stream left unread would stall the whole channel once
/// the server had published `ShmConfig::credits` blocks past it. The copies cost a copy (and a
/// re-encoding of a Ferry message, with the descriptor of `M`) and are counted by
/// [`Channel::held_copies`]; a stream read as it comes makes none. A stream opened as
/// [`Raw`](crate::Raw) has no descriptor: a Ferry message that comes on it stays in place.
pub struct BlockingStream<'c, M> {
    channel: &'c Channel,
    id: CallId,
    /// The stream's end was returned by `recv` (dropping it cancels nothing).
    done: bool,
    /// [`end`](Self::end) was called.
    half_closed: bool,
    trailers: Metadata,
    _message: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for BlockingStream<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingStream")
            .field("id", &self.id)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<'c, M> BlockingStream<'c, M> {
    pub(crate) fn new(channel: &'c Channel, id: CallId) -> BlockingStream<'c, M> {
        BlockingStream {
            channel,
            id,
            done: false,
            half_closed: false,
            trailers: Metadata::new(),
            _message: PhantomData,
        }
    }

    /// The call's id within its session.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// The context to build messages with (the channel's).
    pub fn context(&self) -> &'c Context {
        self.channel.context()
    }

    /// Sends a Ferry message, waiting while the server's window is spent: gathered over TCP,
    /// referenced in place over shared memory. Fails with the stream's status once it has
    /// ended, `FAILED_PRECONDITION` after [`end`](Self::end), and `INVALID_ARGUMENT` for a
    /// message the transport refuses (the stream is then cancelled).
    pub fn send(&mut self, msg: &(impl Outgoing + ?Sized)) -> Result<(), Status> {
        self.send_with(&mut |conn| conn.window_len(msg), &mut |conn, meta| {
            conn.send(meta, msg)
        })
    }

    /// Sends a raw payload, as [`send`](Self::send) does (for methods without a request type).
    pub fn send_payload(&mut self, payload: Payload<'_>) -> Result<(), Status> {
        self.send_with(&mut |_| payload.len(), &mut |conn, meta| {
            conn.send_payload(meta, payload)
        })
    }

    fn send_with(
        &mut self,
        len: &mut dyn FnMut(&Conn) -> usize,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Result<(), Status> {
        if self.half_closed {
            return Err(Status::new(
                Code::FailedPrecondition,
                "a message after the stream's end()",
            ));
        }
        let id = self.id;
        let mut inner = self.channel.inner.borrow_mut();
        let waited = inner.wait(None, |i| i.core.can_send(id) || ended(i, id));
        if let Some(status) = end_status(&inner, id) {
            return Err(status);
        }
        waited?;
        let inner = &mut *inner;
        let conn = inner.conn.as_mut().expect("the wait found the connection open");
        let meta = inner.core.send(id, len(conn)).expect("the window is open");
        match send(conn, meta) {
            Ok(()) => Ok(()),
            // Counted against the window and not sent: the stream cannot go on.
            Err(e) if frame_alone(&e) => {
                if let Some((cancel, ())) = inner.core.cancel(id) {
                    let _ = conn.send_payload(cancel, Payload::Bytes(&[]));
                }
                let status = unsent_request(&e);
                if let Some(inbox) = inner.streams.get_mut(&id) {
                    inbox.end = Some(Err(status.clone()));
                }
                Err(status)
            }
            Err(e) => Err(inner.lost(&e)),
        }
    }

    /// Half-closes the stream: no more messages from this side (the server's handler sees
    /// its end). Nothing if the stream has ended or was half-closed already.
    pub fn end(&mut self) -> Result<(), Status> {
        self.half_closed = true;
        let mut inner = self.channel.inner.borrow_mut();
        let inner = &mut *inner;
        let (Some(meta), Some(conn)) = (inner.core.end(self.id), inner.conn.as_mut()) else {
            return Ok(());
        };
        match conn
            .send_payload(meta, Payload::Bytes(&[]))
            .and_then(|()| conn.flush())
        {
            Ok(()) => Ok(()),
            Err(e) => Err(inner.lost(&e)),
        }
    }

    /// The headers the server sent before its first message, waiting for them (empty if it
    /// sent none: a message or the end came first).
    pub fn headers(&mut self) -> Metadata {
        let id = self.id;
        let mut inner = self.channel.inner.borrow_mut();
        let _ = inner.wait(None, |i| i.streams.get(&id).is_none_or(|s| s.headers.is_some()));
        inner
            .streams
            .get(&id)
            .and_then(|s| s.headers.clone())
            .unwrap_or_default()
    }

    /// The server's next message, read in place, waiting for it; `None` once the stream has
    /// ended with OK (then read the [`trailers`](Self::trailers)); the status it failed with,
    /// once. A stream's messages carry no headers of their own: see [`headers`](Self::headers).
    pub fn recv(&mut self) -> Option<Result<Response<M>, Status>> {
        if self.done {
            return None;
        }
        let id = self.id;
        let mut inner = self.channel.inner.borrow_mut();
        let waited = inner.wait(Some(id), |i| {
            i.streams
                .get(&id)
                .is_none_or(|s| !s.messages.is_empty() || s.end.is_some())
        });
        let inner = &mut *inner;
        let Some(inbox) = inner.streams.get_mut(&id) else {
            self.done = true;
            return Some(Err(waited.err().unwrap_or_else(|| gone(id))));
        };
        if let Some(frame) = inbox.messages.pop_front() {
            let grant = inner.core.consumed(id, frame.window_len());
            if let (Some((meta, grant)), Some(conn)) = (grant, inner.conn.as_mut()) {
                // Sent with the next flush: before this side waits again.
                if let Err(e) = conn.send_payload(meta, Payload::Bytes(&grant)) {
                    inner.lost(&e);
                }
            }
            let limits = self.channel.limits();
            return Some(Ok(Response::new(frame, limits, Metadata::new(), Metadata::new())));
        }
        // The end stays in the inbox (a later send fails with it) until the stream is dropped.
        self.done = true;
        match inbox.end.clone() {
            Some(Ok(trailers)) => {
                self.trailers = trailers;
                None
            }
            Some(Err(status)) => Some(Err(status)),
            None => Some(Err(waited.err().unwrap_or_else(|| gone(id)))),
        }
    }

    /// The trailers the server ended the stream with (after [`recv`](Self::recv) returned
    /// `None`; a failure's are in [`Status::metadata`]).
    pub fn trailers(&self) -> &Metadata {
        &self.trailers
    }
}

impl<M> Iterator for BlockingStream<'_, M> {
    type Item = Result<Response<M>, Status>;

    fn next(&mut self) -> Option<Self::Item> {
        self.recv()
    }
}

/// Cancels the stream if it has not ended: the server is told, and its handler stops.
impl<M> Drop for BlockingStream<'_, M> {
    fn drop(&mut self) {
        let Ok(mut inner) = self.channel.inner.try_borrow_mut() else {
            return;
        };
        let inner = &mut *inner;
        inner.streams.remove(&self.id);
        if let (Some((cancel, ())), Some(conn)) = (inner.core.cancel(self.id), inner.conn.as_mut()) {
            let sent = conn
                .send_payload(cancel, Payload::Bytes(&[]))
                .and_then(|()| conn.flush());
            if let Err(e) = sent {
                inner.lost(&e);
            }
        }
    }
}

/// Whether stream `id` has ended (its end arrived, or it is no longer known).
fn ended(inner: &Inner, id: CallId) -> bool {
    inner.streams.get(&id).is_none_or(|s| s.end.is_some())
}

/// Why a send on stream `id` cannot go: the status it ended with, or this side's end.
fn end_status(inner: &Inner, id: CallId) -> Option<Status> {
    match inner.streams.get(&id) {
        None => Some(gone(id)),
        Some(s) => match &s.end {
            Some(Err(status)) => Some(status.clone()),
            Some(Ok(_)) => Some(Status::new(Code::FailedPrecondition, "the stream has ended")),
            None => None,
        },
    }
}

fn gone(id: CallId) -> Status {
    Status::new(Code::Cancelled, format!("stream {id} is over"))
}
