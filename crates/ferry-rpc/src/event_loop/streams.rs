//! Streams served on an event loop: the handler a service opens for a streaming call
//! ([`StreamHandler`]), driven by the loop's events, and its way to answer ([`StreamOut`]).
//!
//! The loop delivers each message in place, where it arrived (as the unary foreground path
//! does), and grants the client more window once the handler has taken it. A handler whose
//! send found the window closed ([`Unsent::Full`]) is paused: the messages that come meanwhile
//! wait in the loop (at most a window of them) until the client grants room, when the handler
//! gets [`on_window`](StreamHandler::on_window) and then the held messages, so a client that
//! does not read cannot make the server buffer without bound. Over shared memory the messages
//! held for a paused handler are copied into the session's pool (a Ferry message re-encoded
//! with the method's request type; [`LoopStats::held_copies`](super::LoopStats) counts them):
//! held in place, each would keep its block of the client's memory, and blocks are
//! acknowledged in order, so the client's other streams of the session would stop once it had
//! published the transport's credits' worth of blocks past it.
//!
//! Streams run on the loop (foreground) whatever the method's `Mode`.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use ferry_transport::{Meta, Payload, Transport, TransportError};
use ferry_wire::{Context, Outgoing};

use super::EventLoop;
use super::server_side::admit;
use super::session::{Role, Session};
use crate::conn::{Frame, frame_alone};
use crate::dispatch::{panicked, validate};
use crate::metadata::Metadata;
use crate::service::{Encoded, Incoming, MethodInfo, Request, ResponseMetadata};
use crate::status::{Code, Status, unsent_response};
use crate::wire;
use crate::{CallId, Conn};

/// A streaming call's handler on an event loop, opened by [`Service::open`](crate::Service::open)
/// and driven by the loop until the stream ends: run to completion, never blocking (a send
/// the window refuses is taken up again in [`on_window`](Self::on_window)). Every callback
/// may end the stream: with [`StreamOut::finish`] (OK), or by returning the status it fails
/// with (a panic fails it with `INTERNAL`). Once the stream has ended, the handler is dropped.
pub trait StreamHandler {
    /// A message from the client, validated against the method's request type (if it has
    /// one) and read in place. The client is granted room for more once this returns.
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status>;

    /// The client sends no more messages (after the last [`on_message`](Self::on_message)).
    fn on_half_close(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status>;

    /// The client granted room after a send was refused with [`Unsent::Full`]: send more.
    fn on_window(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let _ = out;
        Ok(())
    }

    /// The stream ended without the handler: the client cancelled it (`CANCELLED`), its
    /// deadline passed (`DEADLINE_EXCEEDED`), the client broke its rules (`INTERNAL`), a
    /// message did not decode as the request type (`INVALID_ARGUMENT`, sent to the client) or
    /// the connection was lost (`UNAVAILABLE`). Nothing more can be sent.
    fn on_cancel(&mut self, why: &Status) {
        let _ = why;
    }
}

/// Why [`StreamOut::send`] did not send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// The client's window is spent: keep the message and send it from
    /// [`StreamHandler::on_window`]. No message is delivered until then.
    Full,
    /// The stream is over (finished, failed, or ended by a message that could not be sent):
    /// drop the message.
    Ended,
}

/// A served stream: its handler, what it set to go with its answer, and the messages that wait
/// for it while it is paused.
pub(crate) struct Served {
    handler: Box<dyn StreamHandler>,
    info: MethodInfo,
    /// The session's context (a clone: a handler builds with it while it sends).
    ctx: Context,
    state: ServedState,
    /// Messages arrived while the handler was paused, oldest first.
    held: VecDeque<Frame>,
    /// The client's end arrived and has not been delivered yet.
    half_closed: bool,
    started: Instant,
}

/// What a served stream's handler is told next.
pub(super) enum Step {
    Message(Frame),
    HalfClose,
    Window,
}

/// A stream handler's way to answer: messages sent straight into the transport (gathered over
/// TCP, in place over shared memory), the response headers and trailers, and the stream's end.
pub struct StreamOut<'s> {
    session: &'s mut Session,
    ctx: &'s Context,
    served: &'s mut ServedState,
    id: CallId,
    /// The code the stream ended with during this callback.
    ended: Option<Code>,
}

/// What a served stream's [`StreamOut`] reads and changes.
struct ServedState {
    deadline: Option<Instant>,
    /// The client's metadata.
    metadata: Metadata,
    /// What goes with the answer.
    set: ResponseMetadata,
    /// A send found the window closed: deliver nothing until the client grants room.
    paused: bool,
}

impl std::fmt::Debug for StreamOut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamOut")
            .field("id", &self.id)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<'s> StreamOut<'s> {
    /// The call's id within its session.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// The context to build messages with: values in its pool are sent by reference.
    pub fn ctx(&self) -> &'s Context {
        self.ctx
    }

    /// The metadata the client sent with the open.
    pub fn metadata(&self) -> &Metadata {
        &self.served.metadata
    }

    /// When the client stops waiting (the whole stream's deadline, on this side's clock).
    pub fn deadline(&self) -> Option<Instant> {
        self.served.deadline
    }

    /// Sets the response headers, replacing what was set before: they go out before the first
    /// message or the end (set them before either; after, they are dropped).
    pub fn set_headers(&mut self, metadata: Metadata) {
        self.served.set.headers = metadata;
    }

    /// Sets the trailers, replacing what was set before: they go out with the end, OK or not.
    pub fn set_trailers(&mut self, metadata: Metadata) {
        self.served.set.trailers = metadata;
    }

    /// Whether the stream has ended ([`finish`](Self::finish), or a send that ended it).
    pub fn is_ended(&self) -> bool {
        self.ended.is_some()
    }

    /// Sends `msg` to the client: its header segment straight into the transport's send
    /// buffer, its zero-copy values by reference (or serialized into the session's backlog
    /// when the transport will not take it now). [`Unsent::Full`]: the window is spent, send it
    /// again from [`StreamHandler::on_window`].
    pub fn send(&mut self, msg: &(impl Outgoing + ?Sized)) -> Result<(), Unsent> {
        let len = self.session.conn.window_len(msg);
        self.send_with(len, &mut |conn, meta| conn.send(meta, msg), &mut || {
            Encoded::message(msg)
        })
    }

    /// Sends a raw payload (for methods without a request type), as [`send`](Self::send) does.
    pub fn send_payload(&mut self, payload: Payload<'_>) -> Result<(), Unsent> {
        self.send_with(
            payload.len(),
            &mut |conn, meta| conn.send_payload(meta, payload),
            &mut || Ok(Encoded::copy_of(payload)),
        )
    }

    /// Ends the stream with OK (after the headers and with the trailers set). Nothing if it
    /// has ended.
    pub fn finish(&mut self) {
        self.end(Ok(()));
    }

    /// Ends the stream with `result` (once).
    fn end(&mut self, result: Result<(), Status>) {
        if self.ended.is_some() {
            return;
        }
        self.ended = Some(result.as_ref().map_or_else(|s| s.code, |()| Code::Ok));
        let set = std::mem::take(&mut self.served.set);
        self.session.end_stream(self.id, result, set);
    }

    /// Sends one message, `len` bytes against the window when sent directly (`send`), or the
    /// serialized length when it goes through the backlog (`encode`): what the client counts
    /// for the frame it receives either way.
    fn send_with(
        &mut self,
        len: usize,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
        encode: &mut dyn FnMut() -> Result<Encoded, Status>,
    ) -> Result<(), Unsent> {
        let Role::Server(server) = &mut self.session.role else {
            return Err(Unsent::Ended);
        };
        let core = &mut server.core;
        if self.ended.is_some() {
            return Err(Unsent::Ended);
        }
        let Some(meta) = core.response_meta(self.id) else {
            return Err(Unsent::Ended);
        };
        if !core.can_send(self.id) {
            self.served.paused = true;
            return Err(Unsent::Full);
        }
        let headers = core.headers(self.id, &std::mem::take(&mut self.served.set.headers));
        if let Some((meta, payload)) = headers {
            self.session.transmit(meta, Encoded::from_vec(payload));
        }
        let meta = Meta {
            flags: wire::RESPONSE | wire::MESSAGE,
            ..meta
        };
        let direct = match self.session.backlog.is_empty() {
            true => send(&mut self.session.conn, meta),
            false => Err(TransportError::WouldBlock),
        };
        let queued = match direct {
            Ok(()) => {
                self.session.dirty = true;
                None
            }
            Err(TransportError::WouldBlock) => match encode() {
                Ok(encoded) => Some(encoded),
                Err(status) => {
                    self.end(Err(status));
                    return Err(Unsent::Ended);
                }
            },
            Err(e) if frame_alone(&e) => {
                self.end(Err(unsent_response(&e)));
                return Err(Unsent::Ended);
            }
            Err(e) => {
                self.session.fail(e);
                return Err(Unsent::Ended);
            }
        };
        let len = queued.as_ref().map_or(len, Encoded::len);
        let Role::Server(server) = &mut self.session.role else {
            return Err(Unsent::Ended);
        };
        let charged = server.core.send(self.id, len);
        debug_assert_eq!(charged, Ok(meta), "the window was open and the call in progress");
        if let Some(encoded) = queued {
            self.session.backlog.push_back((meta, encoded));
        }
        Ok(())
    }
}

impl EventLoop {
    /// An open: refused, or its handler opened by the service and kept to be driven.
    pub(super) fn open_stream(
        &mut self,
        i: usize,
        id: CallId,
        method: u16,
        deadline: Option<Instant>,
        metadata: Metadata,
        now: Instant,
    ) {
        let metrics = self.services.metrics();
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let entry = match admit(&self.services, self.draining, method, true) {
            Ok(entry) => entry,
            Err(status) => {
                metrics.method(method).record(status.code, Duration::ZERO);
                s.end_call(id, Err(status), ResponseMetadata::default());
                return;
            }
        };
        let info = entry.info;
        let call = crate::service::Call::new(
            method,
            id,
            deadline,
            &s.ctx,
            None,
            metadata,
            s.conn.peer_identity(),
        );
        let opened = catch_unwind(AssertUnwindSafe(|| entry.service.open(&call)))
            .unwrap_or_else(|panic| Err(panicked(info.path, &*panic)));
        let set = call.take_response_metadata();
        let handler = match opened {
            Ok(handler) => handler,
            Err(status) => {
                metrics.method(method).record(status.code, Duration::ZERO);
                s.end_stream(id, Err(status), set);
                return;
            }
        };
        self.stats.foreground += 1;
        metrics.in_flight().inc();
        let Role::Server(server) = &mut s.role else { return };
        server.streams.insert(
            id,
            Served {
                handler,
                info,
                ctx: s.ctx.clone(),
                state: ServedState {
                    deadline,
                    metadata: call.metadata,
                    set,
                    paused: false,
                },
                held: VecDeque::new(),
                half_closed: false,
                started: now,
            },
        );
    }

    /// Drives served stream `id` of session `i` one step: a message, the client's end, or
    /// room granted; then delivers what waits while the handler is not paused.
    pub(super) fn stream_step(&mut self, i: usize, id: CallId, step: Step) {
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let Role::Server(server) = &mut s.role else { return };
        let Some(mut served) = server.streams.remove(&id) else {
            return;
        };
        let limits = self.config.limits;
        let mut ended = None;
        match step {
            Step::Message(frame) => served.held.push_back(frame),
            Step::HalfClose => served.half_closed = true,
            Step::Window if served.state.paused => {
                served.state.paused = false;
                ended = drive(s, &mut served, id, |h, out| h.on_window(out));
            }
            Step::Window => {}
        }
        while ended.is_none() && !served.state.paused {
            if let Some(frame) = served.held.pop_front() {
                let info = served.info;
                let incoming = Incoming {
                    frame: &frame,
                    limits: &limits,
                    shared: frame.shared(),
                };
                ended = match validate(&info, incoming) {
                    Ok(request) => drive(s, &mut served, id, |h, out| h.on_message(request, out)),
                    Err(status) => {
                        let set = std::mem::take(&mut served.state.set);
                        s.end_stream(id, Err(status.clone()), set);
                        tell(&mut served, &status);
                        Some(status.code)
                    }
                };
                if let (None, Role::Server(server)) = (ended, &mut s.role)
                    && let Some((meta, grant)) = server.core.consumed(id, frame.window_len())
                {
                    s.transmit(meta, Encoded::bytes(&grant));
                }
            } else if std::mem::take(&mut served.half_closed) {
                ended = drive(s, &mut served, id, |h, out| h.on_half_close(out));
            } else {
                break;
            }
        }
        if ended.is_none() && served.state.paused {
            let mut copied = 0;
            for frame in &mut served.held {
                copied += u64::from(frame.detach(served.info.request, &served.ctx, &limits));
            }
            if copied > 0 {
                self.stats.held_copies += copied;
                // The client's blocks those frames held are acknowledged with the next flush.
                s.dirty = true;
            }
        }
        match ended {
            Some(code) => self.stream_ended(&served, code),
            None => {
                let Some(s) = &mut self.slots[i].session else {
                    return;
                };
                if let Role::Server(server) = &mut s.role {
                    server.streams.insert(id, served);
                }
            }
        }
    }

    /// Served stream `id` of session `i` ended without its handler (cancelled, expired, broken
    /// or lost): the handler is told why.
    pub(super) fn stream_cancelled(&mut self, i: usize, id: CallId, why: Status) {
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let Role::Server(server) = &mut s.role else { return };
        if let Some(served) = server.streams.remove(&id) {
            self.cancel_served(served, &why);
        }
    }

    /// Tells a removed stream's handler why it ended.
    pub(super) fn cancel_served(&self, mut served: Served, why: &Status) {
        tell(&mut served, why);
        self.stream_ended(&served, why.code);
    }

    /// A served stream is over: the metrics count it.
    fn stream_ended(&self, served: &Served, code: Code) {
        let metrics = self.services.metrics();
        metrics.in_flight().dec();
        metrics
            .method(served.info.id)
            .record(code, served.started.elapsed());
    }
}

/// Tells a stream's handler that its stream ended without it.
fn tell(served: &mut Served, why: &Status) {
    // A handler that panics here has nothing left to fail.
    let _ = catch_unwind(AssertUnwindSafe(|| served.handler.on_cancel(why)));
}

/// Runs one callback of `served`'s handler under a panic guard, with a [`StreamOut`] on
/// session `s`: returns the code the stream ended with, if it did.
fn drive(
    s: &mut Session,
    served: &mut Served,
    id: CallId,
    callback: impl FnOnce(&mut dyn StreamHandler, &mut StreamOut<'_>) -> Result<(), Status>,
) -> Option<Code> {
    let Served {
        handler,
        info,
        ctx,
        state,
        ..
    } = served;
    let mut out = StreamOut {
        session: s,
        ctx,
        served: state,
        id,
        ended: None,
    };
    let result = catch_unwind(AssertUnwindSafe(|| callback(&mut **handler, &mut out)));
    match result {
        _ if out.ended.is_some() => {}
        Ok(Ok(())) => {}
        Ok(Err(status)) => out.end(Err(status)),
        Err(panic) => out.end(Err(panicked(info.path, &*panic))),
    }
    out.ended
}
