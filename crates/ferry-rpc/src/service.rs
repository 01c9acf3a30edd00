//! What a server runs: [`Service`] (implemented by the code `ferry-build` generates for each
//! `service`, or by hand for raw payloads), the handler's view of a call ([`Call`],
//! [`Request`]) and its way to answer ([`Reply`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use ferry_buf::SharedBuf;
use ferry_net::PeerIdentity;
use ferry_transport::{Payload, Received, Transport, TransportError};
use ferry_wire::{Context, DecodeError, Limits, Message, MessageDesc, Outgoing, View};

use crate::event_loop::StreamHandler;
use crate::metadata::Metadata;
use crate::status::{Code, Status, invalid_request};
use crate::{CallId, Conn};

/// Where a method's handler runs (eRPC's foreground and background request handlers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Inline on the event loop, with zero-copy access to the request where it arrived: for
    /// short handlers (a lookup, an echo). The loop serves nothing else while it runs.
    #[default]
    Foreground,
    /// On the server's worker pool: for handlers that block or compute. The request moves to
    /// the worker (a TCP frame is a refcounted pool buffer and moves as it is; a
    /// shared-memory frame is `!Send`, so it is copied into a pool buffer first), the worker
    /// serializes the response, and the loop sends it.
    Background,
}

/// One method of a service, as a server registers it.
#[derive(Debug, Clone, Copy)]
pub struct MethodInfo {
    /// `/package.Service/Method`.
    pub path: &'static str,
    /// The method id: `ferry_transport::method_id(path)`, the frame kind of its calls.
    pub id: u16,
    /// The request's descriptor: the server validates every request against it before the
    /// handler runs and answers `INVALID_ARGUMENT` if it does not decode. `None`: the
    /// requests are raw payloads the handler reads itself.
    pub request: Option<&'static MessageDesc<'static>>,
    /// Where the handler runs.
    pub mode: Mode,
    /// How many messages each way: a unary method is called with a request frame, a streaming
    /// one is opened (`wire`'s open frame); a call of the other kind is refused with
    /// `UNIMPLEMENTED`.
    pub shape: Shape,
}

/// How many messages each way a method takes: gRPC's four shapes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Shape {
    /// One request, one response.
    #[default]
    Unary,
    /// Many requests, one response.
    ClientStreaming,
    /// One request, many responses.
    ServerStreaming,
    /// Many each way.
    Bidirectional,
}

impl Shape {
    /// Whether calls are streams (anything but unary).
    pub fn is_streaming(self) -> bool {
        self != Shape::Unary
    }
}

/// A service a server can run: its methods and one entry point that dispatches a call. The
/// code `ferry-build` generates implements it for every `service` (wrapping the user's
/// implementation of the generated trait); implement it by hand to serve raw payloads.
pub trait Service: Send + Sync + 'static {
    /// The methods, each with its id, request type and mode. Called once, when the service is
    /// added to a server.
    fn methods(&self) -> Vec<MethodInfo>;

    /// Handles one call to `call.method()`: reads `request`, answers through `reply` (at most
    /// once) and returns `Ok`, or returns the status the call fails with. A handler that
    /// returns `Ok` without answering fails the call with `INTERNAL`; one that panics fails it
    /// with `INTERNAL` too, and the server keeps serving.
    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status>;

    /// Opens a stream to `call.method()` (a streaming method, see [`MethodInfo::shape`]) on an
    /// event loop: returns the handler the loop drives until the stream ends (see
    /// [`StreamHandler`]), or the status the call fails with at once. Headers set on `call`
    /// go out before the stream's first message. Streams run on the loop whatever the
    /// method's [`Mode`]. The default answers `UNIMPLEMENTED`.
    fn open(&self, call: &Call<'_>) -> Result<Box<dyn StreamHandler>, Status> {
        Err(Status::new(
            Code::Unimplemented,
            format!("method {} does not stream on this service", call.method()),
        ))
    }
}

/// What a handler knows about its call.
#[derive(Debug)]
pub struct Call<'a> {
    pub(crate) method: u16,
    pub(crate) id: CallId,
    pub(crate) deadline: Option<Instant>,
    pub(crate) ctx: &'a Context,
    pub(crate) cancelled: Option<&'a AtomicBool>,
    /// What the client sent before the request.
    pub(crate) metadata: Metadata,
    /// What goes with the answer.
    pub(crate) response_metadata: ResponseSlot,
    /// The client's certificate identity (TLS with client certificates).
    pub(crate) peer: Option<Arc<PeerIdentity>>,
}

impl<'a> Call<'a> {
    pub(crate) fn new(
        method: u16,
        id: CallId,
        deadline: Option<Instant>,
        ctx: &'a Context,
        cancelled: Option<&'a AtomicBool>,
        metadata: Metadata,
        peer: Option<Arc<PeerIdentity>>,
    ) -> Call<'a> {
        Call {
            method,
            id,
            deadline,
            ctx,
            cancelled,
            metadata,
            response_metadata: ResponseSlot::default(),
            peer,
        }
    }

    /// The client's certificate subject and SANs, over TLS with client certificates (mTLS);
    /// `None` otherwise.
    pub fn peer(&self) -> Option<&PeerIdentity> {
        self.peer.as_deref()
    }

    /// The method id.
    pub fn method(&self) -> u16 {
        self.method
    }

    /// The call's id within its session.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// When the client stops waiting (its budget, on this side's clock).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The context to build the response with: values in its pool (the session's send pool)
    /// are sent by reference, as are large fields taken from the request where the transport
    /// received it into pool memory (TCP).
    pub fn ctx(&self) -> &'a Context {
        self.ctx
    }

    /// Whether the client cancelled the call or its deadline passed (background handlers
    /// only: a foreground handler runs to completion before the loop reads the cancellation).
    /// A handler may stop early; its answer is dropped either way.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// The metadata the client sent with the call (gRPC's headers; empty if none).
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Sets the response headers (gRPC's initial metadata), replacing what was set before:
    /// they go out, in one frame, before the answer. Set them before answering
    /// (`reply.send`): once the answer is sent, they are dropped.
    pub fn set_headers(&self, metadata: Metadata) {
        self.response_metadata.set(|m| m.headers = metadata);
    }

    /// Sets the response trailers, replacing what was set before: they go out, in one frame,
    /// with the answer, a response or a failure status alike. A handler that fails with a
    /// [`Status`] carrying metadata sends that as its trailers instead.
    pub fn set_trailers(&self, metadata: Metadata) {
        self.response_metadata.set(|m| m.trailers = metadata);
    }

    /// Takes the response metadata (what is left is empty).
    pub(crate) fn take_response_metadata(&self) -> ResponseMetadata {
        self.response_metadata.take()
    }
}

/// What a handler set to go with its answer: gRPC's response headers and trailers.
#[derive(Debug, Default)]
pub(crate) struct ResponseMetadata {
    pub(crate) headers: Metadata,
    pub(crate) trailers: Metadata,
}

/// Where a handler's response metadata waits for the answer: a lock, not a `RefCell`, so
/// that `Call` stays `Sync` (never contended: the handler sets it, then the driver takes it,
/// on one thread), and a flag, so that a call whose handler set none (most) takes no lock.
#[derive(Debug, Default)]
pub(crate) struct ResponseSlot {
    set: AtomicBool,
    metadata: Mutex<ResponseMetadata>,
}

impl ResponseSlot {
    fn set(&self, f: impl FnOnce(&mut ResponseMetadata)) {
        f(&mut self.metadata.lock().unwrap_or_else(PoisonError::into_inner));
        self.set.store(true, Ordering::Release);
    }

    /// Whether the handler set any (a slot never set takes nothing: an empty default).
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Takes what the slot holds.
    pub(crate) fn take(&self) -> ResponseMetadata {
        if !self.is_set() {
            return ResponseMetadata::default();
        }
        std::mem::take(&mut *self.metadata.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A received request or response, borrowed for the duration of a handler or continuation.
#[derive(Clone, Copy)]
pub struct Incoming<'a> {
    pub(crate) frame: &'a dyn Received,
    pub(crate) limits: &'a Limits,
    /// The payload as a counted pool buffer, where the transport received it into one (TCP).
    pub(crate) shared: Option<&'a SharedBuf>,
}

impl std::fmt::Debug for Incoming<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming")
            .field("meta", &self.frame.meta())
            .finish_non_exhaustive()
    }
}

impl<'a> Incoming<'a> {
    /// Validates the frame as a message of `M` (with the session's limits) and reads it in
    /// place.
    pub fn decode<M: Message<'static>>(&self) -> Result<M::View<'a>, DecodeError> {
        let view = self.frame.view(M::desc(), self.limits)?;
        Ok(M::view_of(view).expect("validated against M::desc()"))
    }

    /// Validates the frame against `desc` and reads it in place.
    pub fn view(&self, desc: &'a MessageDesc<'a>) -> Result<View<'a>, DecodeError> {
        self.frame.view(desc, self.limits)
    }

    /// The payload as contiguous bytes, where the transport has it so (see
    /// [`Received::bytes`]): raw payloads on both transports, every frame over TCP.
    pub fn bytes(&self) -> Option<&'a [u8]> {
        self.frame.bytes()
    }

    /// The payload as the pool buffer it was received into, where the transport has one
    /// (every frame over TCP; `None` over shared memory, where the payload is the peer's
    /// memory). A raw handler can send it back by reference
    /// (`Payload::Gather { head: &[], parts: std::slice::from_ref(buf) }`: no copy), or hand
    /// it to a library that slices counted buffers (`SharedBuf::into_bytes`).
    pub fn shared(&self) -> Option<&'a SharedBuf> {
        self.shared
    }
}

/// A request as a handler gets it: validated against the method's request type (if it has
/// one) and read in place where it arrived.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub(crate) view: Option<View<'a>>,
    pub(crate) incoming: Incoming<'a>,
}

impl<'a> Request<'a> {
    /// The validated request, for a method with a request type.
    pub fn view(&self) -> Option<View<'a>> {
        self.view
    }

    /// The typed view: `M` must be the method's request type.
    pub fn decode<M: Message<'static>>(&self) -> Result<M::View<'a>, Status> {
        if let Some(v) = self.view.and_then(M::view_of) {
            return Ok(v);
        }
        self.incoming.decode::<M>().map_err(|e| invalid_request(&e))
    }

    /// The frame as received (raw bytes of a raw payload).
    pub fn incoming(&self) -> Incoming<'a> {
        self.incoming
    }
}

/// A serialized message (or raw payload) that owns what it sends: the header segment and
/// copied data in `head`, counted references to the zero-copy values in `parts`, in wire
/// order. What background handlers and the tokio driver hand back to be sent later; on the
/// wire it is identical to sending the message directly.
#[derive(Debug, Clone, Default)]
pub struct Encoded {
    pub(crate) head: Vec<u8>,
    pub(crate) parts: Vec<SharedBuf>,
}

impl Encoded {
    /// Serializes `msg`: the header segment and copied values are written once; zero-copy
    /// values are referenced (refcount + 1), not copied.
    pub fn message(msg: &(impl Outgoing + ?Sized)) -> Result<Encoded, Status> {
        let layout = msg.layout();
        let mut head = vec![0u8; layout.head_len];
        msg.write_head(&layout, &mut head).map_err(encode_failed)?;
        let mut parts = Vec::with_capacity(layout.zero_copy_count);
        msg.zero_copy_bufs(&mut parts).map_err(encode_failed)?;
        Ok(Encoded { head, parts })
    }

    /// A raw payload the caller owns, moved in (no copy).
    pub fn from_vec(bytes: Vec<u8>) -> Encoded {
        Encoded {
            head: bytes,
            parts: Vec::new(),
        }
    }

    /// A raw payload, copied.
    pub fn bytes(bytes: &[u8]) -> Encoded {
        Encoded {
            head: bytes.to_vec(),
            parts: Vec::new(),
        }
    }

    /// A transport payload, to send later: its bytes copied, its parts referenced.
    pub(crate) fn copy_of(payload: Payload<'_>) -> Encoded {
        match payload {
            Payload::Bytes(b) => Encoded::bytes(b),
            Payload::Gather { head, parts } => Encoded {
                head: head.to_vec(),
                parts: parts.to_vec(),
            },
        }
    }

    /// Total length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.parts.iter().map(|p| p.len()).sum::<usize>()
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As a transport payload (head copied, parts by reference where the transport can).
    pub fn payload(&self) -> Payload<'_> {
        Payload::Gather {
            head: &self.head,
            parts: &self.parts,
        }
    }
}

fn encode_failed(e: ferry_wire::EncodeError) -> Status {
    Status::new(Code::Internal, format!("response does not serialize: {e}"))
}

/// Where a handler's answer goes.
pub(crate) enum Sink<'r> {
    /// Serialize-and-send on the session's connection now (foreground).
    Conn(&'r mut dyn Outbox),
    /// Serialize now, send later (background handlers, the tokio driver).
    Encode(&'r mut Option<Encoded>),
}

/// The foreground sink: a session that sends the answer to one call, or queues it if the
/// transport will not take it now.
pub(crate) trait Outbox {
    /// Ends the call with a response sent by `send`; `Ok(false)` if the call is no longer in
    /// progress (nothing is sent).
    fn respond(
        &mut self,
        send: &mut dyn FnMut(&mut Conn, ferry_transport::Meta) -> Result<(), TransportError>,
        encode: &mut dyn FnMut() -> Result<Encoded, Status>,
    ) -> Result<bool, Status>;
}

/// The handler's way to answer its call: at most one [`send`](Self::send) (a message,
/// serialized and sent at once: Cornflakes' serialize-and-send) or
/// [`send_payload`](Self::send_payload) (raw bytes).
pub struct Reply<'r> {
    pub(crate) sink: Sink<'r>,
    pub(crate) sent: bool,
}

impl std::fmt::Debug for Reply<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

impl<'r> Reply<'r> {
    pub(crate) fn new(sink: Sink<'r>) -> Reply<'r> {
        Reply { sink, sent: false }
    }

    /// Sends `msg` as the response: in a foreground handler its header segment goes straight
    /// into the transport's send buffer and its zero-copy values (pool memory: the store's
    /// values, or the request's own buffers over TCP) are referenced, not copied.
    pub fn send(&mut self, msg: &(impl Outgoing + ?Sized)) -> Result<(), Status> {
        self.answer(&mut |conn, meta| conn.send(meta, msg), &mut || {
            Encoded::message(msg)
        })
    }

    /// Sends a raw payload as the response.
    pub fn send_payload(&mut self, payload: Payload<'_>) -> Result<(), Status> {
        self.answer(&mut |conn, meta| conn.send_payload(meta, payload), &mut || {
            Ok(Encoded::copy_of(payload))
        })
    }

    /// Sends an already serialized response.
    pub fn send_encoded(&mut self, encoded: Encoded) -> Result<(), Status> {
        let slot = std::cell::RefCell::new(Some(encoded));
        self.answer(
            &mut |conn, meta| {
                let e = slot.borrow();
                conn.send_payload(meta, e.as_ref().expect("taken only after sending").payload())
            },
            &mut || Ok(slot.borrow_mut().take().expect("taken once")),
        )
    }

    fn answer(
        &mut self,
        send: &mut dyn FnMut(&mut Conn, ferry_transport::Meta) -> Result<(), TransportError>,
        encode: &mut dyn FnMut() -> Result<Encoded, Status>,
    ) -> Result<(), Status> {
        if self.sent {
            return Err(Status::new(Code::Internal, "a handler answered its call twice"));
        }
        match &mut self.sink {
            Sink::Conn(outbox) => {
                outbox.respond(send, encode)?;
            }
            Sink::Encode(slot) => **slot = Some(encode()?),
        }
        self.sent = true;
        Ok(())
    }

    /// Whether the handler has answered.
    pub fn is_sent(&self) -> bool {
        self.sent
    }
}
