//! The tokio driver: `async fn` handlers ([`AsyncService`], served by [`AsyncServer`]) and an
//! `async` client ([`AsyncChannel`]) over the same sans-IO core as the event loop.
//!
//! Thread-per-core, like the event loop: everything here is `!Send` and runs on one thread,
//! inside a [`tokio::task::LocalSet`] (or a current-thread runtime with `spawn_local`). A
//! shared-memory frame is `!Send` (its release updates the connection's single-threaded
//! acknowledgement state), and a session never leaves the thread that accepted it.
//!
//! Readiness comes from tokio's reactor: each connection (and listener) is registered through
//! an [`AsyncFd`](::tokio::io::unix::AsyncFd) on a duplicate of its descriptor, and the rule of
//! `ferry-transport` holds: drain `try_recv` until `None` (which arms the shared-memory
//! doorbell) before waiting. Sends never block the thread: connections are non-blocking, and
//! what the transport will not take waits for write readiness (TCP) or for the peer's
//! acknowledgements (shared memory).
//!
//! - [`AsyncChannel`]: no task of its own; whichever call future is polled drives the
//!   connection for all of them, and hands the reactor registration on when it ends.
//! - [`AsyncServer`]: a task per session and a task per call (aborted on cancellation or
//!   deadline); a session whose answers back up stops reading requests.
//!
//! Streams, as tonic has them (`Stream` in, `Stream` out), for the three streaming shapes:
//! [`AsyncChannel::open`] gives a [`RequestSink`] (`send`, `end`) and a [`ResponseStream`] (a
//! `futures_core::Stream` of [`Response`](crate::Response)s, then its trailers or the failure
//! status); [`AsyncService::stream`] gets a [`RequestStream`] (of [`AsyncRequest`]s) and a
//! [`ResponseSink`], and its result ends the stream. Every message is a Ferry message read in
//! place; each direction has a window, and a send waits for it.

mod client;
mod server;

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use ferry_net::PeerIdentity;
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Message, Outgoing};

use crate::metadata::Metadata;
use crate::service::{Encoded, MethodInfo, ResponseMetadata};
use crate::status::{Status, invalid_request};
use crate::{Accepted, CallId, Conn, Frame, ServicesError};

pub use client::{AsyncChannel, RequestSink, ResponseStream};
pub use server::{AsyncServer, RequestStream, ResponseSink};

/// Rounds of one poll of a session or a call at most (each round finds a readiness set, clears
/// it and goes again) before it yields to other tasks.
const ROUNDS: usize = 16;

/// Registers `fd` with the current runtime's reactor (must be called inside one).
///
/// Tokio 1.54 deprecates the safe `AsyncFd` constructors in favour of `unsafe` ones whose
/// contract is that the descriptor stays open, and names the same open file, for the
/// `AsyncFd`'s whole life. An [`OwnedFd`] the `AsyncFd` owns keeps exactly that contract (it is
/// closed only when the `AsyncFd` drops it, and it always returns the same descriptor), so the
/// safe constructor is sound here, and this crate stays `#![forbid(unsafe_code)]`. Every fd
/// given is a duplicate (`try_clone_to_owned`) of a connection's or listener's descriptor,
/// dropped before the connection or listener.
#[allow(deprecated)]
fn register_fd(
    fd: OwnedFd,
    interest: ::tokio::io::Interest,
) -> std::io::Result<::tokio::io::unix::AsyncFd<OwnedFd>> {
    ::tokio::io::unix::AsyncFd::with_interest(fd, interest)
}

/// Completes a TLS handshake on `conn` (at once for any other connection), waiting on
/// `fd`'s readiness, never past the handshake's deadline (the step after it names the timeout).
pub(crate) async fn handshake(
    conn: &mut Conn,
    fd: &::tokio::io::unix::AsyncFd<OwnedFd>,
) -> Result<(), TransportError> {
    loop {
        let Some(interest) = conn.handshake_step()?.interest() else {
            return Ok(());
        };
        let Some(deadline) = conn.handshake_deadline() else {
            continue;
        };
        if let Ok(ready) = ::tokio::time::timeout_at(deadline.into(), fd.ready(interest)).await {
            ready
                .map_err(|e| TransportError::io("epoll_wait", e))?
                .clear_ready();
        }
    }
}

/// Completes a shared-memory setup (at once for any other connection), waiting on its
/// socket's readiness, never past its deadline (the step after it names the timeout).
pub(crate) async fn setup(accepted: Accepted) -> Result<Conn, TransportError> {
    let mut accepted = match accepted.step()? {
        Ok(conn) => return Ok(conn),
        Err(waiting) => waiting,
    };
    let fd = accepted
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| register_fd(fd, ::tokio::io::Interest::READABLE))
        .map_err(|e| TransportError::io("registering a setup with the tokio reactor", e))?;
    loop {
        if let Some(deadline) = accepted.deadline() {
            if let Ok(ready) = ::tokio::time::timeout_at(deadline.into(), fd.readable()).await {
                ready
                    .map_err(|e| TransportError::io("epoll_wait", e))?
                    .clear_ready();
            }
        }
        accepted = match accepted.step()? {
            Ok(conn) => return Ok(conn),
            Err(waiting) => waiting,
        };
    }
}

/// One message a stream's sink sends: a Ferry message (serialize-and-send) or a raw payload.
#[derive(Clone, Copy)]
enum Out<'a> {
    Message(&'a dyn Outgoing),
    Payload(Payload<'a>),
}

impl Out<'_> {
    /// What it counts against the stream's window (see [`Conn::window_len`]).
    fn window_len(self, conn: &Conn) -> usize {
        match self {
            Out::Message(msg) => conn.window_len(msg),
            Out::Payload(payload) => payload.len(),
        }
    }

    /// Hands it to the transport with `meta`.
    fn send(self, conn: &mut Conn, meta: Meta) -> Result<(), TransportError> {
        match self {
            Out::Message(msg) => conn.send(meta, msg),
            Out::Payload(payload) => conn.send_payload(meta, payload),
        }
    }
}

/// A boxed, `!Send` future: what [`AsyncService::call`] returns.
pub type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// A service served by [`AsyncServer`]: the code `ferry-build` generates for each `service`
/// implements it (`AsyncEchoServer::new(my_impl)`, wrapping the user's `AsyncEcho`).
pub trait AsyncService: 'static {
    /// The methods (their `mode` is ignored: every handler is a task on the server's thread).
    fn methods(&self) -> Vec<MethodInfo>;

    /// Handles one call: the future answers with a serialized response or fails with a status.
    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>>;

    /// Handles one streaming call (a method whose [`MethodInfo::shape`] is not unary): reads
    /// the client's messages from `requests` (in order; `None` after the client's end) and
    /// sends its own with `responses` (each send waits for the client's window). `Ok` ends the
    /// stream with OK and the trailers set on `call`; `Err(status)` ends it with that status.
    /// A client-streaming method sends one message, a server-streaming one reads one.
    ///
    /// If the call ends first (the client cancels, the deadline passes), `requests` yields
    /// that status and sends fail with it: a handler waiting on either then sees it, one busy
    /// elsewhere is dropped (as a unary handler is); its result is dropped. The default
    /// answers `UNIMPLEMENTED`.
    fn stream(
        &self,
        call: AsyncCall,
        requests: RequestStream<()>,
        responses: ResponseSink,
    ) -> LocalBoxFuture<Result<(), Status>> {
        let _ = (requests, responses);
        let status = Status::new(
            crate::Code::Unimplemented,
            format!("method {} serves no streams here", call.method()),
        );
        Box::pin(std::future::ready(Err(status)))
    }
}

/// What an async handler knows about its call. Its clones share the response metadata.
#[derive(Debug, Clone)]
pub struct AsyncCall {
    pub(crate) method: u16,
    pub(crate) id: CallId,
    pub(crate) deadline: Option<Instant>,
    pub(crate) ctx: Context,
    /// Shared with the session, which sends the response metadata with the answer.
    pub(crate) metadata: Rc<CallMetadata>,
    pub(crate) peer: Option<Arc<PeerIdentity>>,
}

/// A call's metadata both ways, as an async handler and its session share it.
#[derive(Debug, Default)]
pub(crate) struct CallMetadata {
    pub(crate) request: Metadata,
    pub(crate) response: RefCell<ResponseMetadata>,
}

impl AsyncCall {
    /// The method id.
    pub fn method(&self) -> u16 {
        self.method
    }

    /// The client's certificate subject and SANs, over TLS with client certificates (mTLS);
    /// `None` otherwise.
    pub fn peer(&self) -> Option<&PeerIdentity> {
        self.peer.as_deref()
    }

    /// The call's id within its session.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// When the client stops waiting, on this side's clock (the handler's task is dropped
    /// then, as it is when the client cancels).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The context to build the response with (values in its pool go by reference).
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    /// The metadata the client sent with the call (gRPC's headers; empty if none).
    pub fn metadata(&self) -> &Metadata {
        &self.metadata.request
    }

    /// Sets the response headers (gRPC's initial metadata), replacing what was set before:
    /// they go out, in one frame, before the answer the handler's future resolves with.
    pub fn set_headers(&self, metadata: Metadata) {
        self.metadata.response.borrow_mut().headers = metadata;
    }

    /// Sets the response trailers, replacing what was set before: they go out, in one frame,
    /// with the answer, a response or a failure status alike. A handler that fails with a
    /// [`Status`] carrying metadata sends that as its trailers instead.
    pub fn set_trailers(&self, metadata: Metadata) {
        self.metadata.response.borrow_mut().trailers = metadata;
    }
}

/// A request as an async handler owns it: the frame where it arrived, read in place.
pub struct AsyncRequest<M> {
    pub(crate) frame: Frame,
    pub(crate) limits: Limits,
    pub(crate) _message: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for AsyncRequest<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncRequest")
            .field("meta", &self.frame.meta())
            .finish_non_exhaustive()
    }
}

impl<M> AsyncRequest<M> {
    /// The same request, read as an `N` (what generated code does with the method's type).
    pub fn typed<N>(self) -> AsyncRequest<N> {
        AsyncRequest {
            frame: self.frame,
            limits: self.limits,
            _message: PhantomData,
        }
    }

    /// The frame as received.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// The payload as contiguous bytes, where the transport has it so (raw payloads; every
    /// frame over TCP).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.frame.bytes()
    }
}

impl<M: Message<'static>> AsyncRequest<M> {
    /// Copies the request out of the peer's shared memory into `ctx`'s pool (over TCP it is a
    /// pool buffer already, and nothing is done), for a handler that keeps it for long, as a
    /// server-streaming one keeps its request while it streams: the peer's blocks are
    /// acknowledged in order, so a frame held in place holds back the credits of everything
    /// the peer sent after it, and the peer's sends (its window grants too) stop once they are
    /// spent. Generated server-streaming handlers get their request copied this way.
    pub fn detach(&mut self, ctx: &Context) {
        self.frame.detach(Some(M::desc()), ctx, &self.limits);
    }

    /// Validates the request and reads it in place (`INVALID_ARGUMENT`, naming the field and
    /// offset, if it does not decode).
    pub fn view(&self) -> Result<M::View<'_>, Status> {
        let view = self
            .frame
            .view(M::desc(), &self.limits)
            .map_err(|e| invalid_request(&e))?;
        Ok(M::view_of(view).expect("validated against M::desc()"))
    }
}

/// The async services of a server, by method id.
#[derive(Clone, Default)]
pub struct AsyncServices {
    pub(crate) methods: HashMap<u16, (Rc<dyn AsyncService>, MethodInfo)>,
}

impl std::fmt::Debug for AsyncServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut paths: Vec<&str> = self.methods.values().map(|(_, i)| i.path).collect();
        paths.sort_unstable();
        f.debug_struct("AsyncServices").field("methods", &paths).finish()
    }
}

impl AsyncServices {
    /// No services yet.
    pub fn new() -> AsyncServices {
        AsyncServices::default()
    }

    /// Adds a service; fails if one of its methods has the id of a method already added.
    pub fn service(mut self, service: impl AsyncService) -> Result<AsyncServices, ServicesError> {
        let service: Rc<dyn AsyncService> = Rc::new(service);
        for info in service.methods() {
            if let Some((_, other)) = self.methods.get(&info.id) {
                return Err(ServicesError::DuplicateMethod {
                    path: info.path,
                    other: other.path,
                    id: info.id,
                });
            }
            self.methods.insert(info.id, (Rc::clone(&service), info));
        }
        Ok(self)
    }
}
