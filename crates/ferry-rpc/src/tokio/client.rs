//! [`AsyncChannel`]: many calls in flight on one connection, each an `async fn` call, over the
//! same [`session::Client`](crate::session::Client) as the blocking [`Channel`](crate::Channel).
//!
//! # Who drives the connection
//!
//! No task of its own: whichever call future is polled drives the connection for every call.
//! A poll sends what it can of its own call, flushes, drains `try_recv` until `None` (which
//! arms the shared-memory doorbell), hands each outcome to the call it belongs to (waking that
//! call's task), and registers read interest (and, over TCP, write interest while frames wait)
//! on the [`AsyncFd`] of a duplicate of the connection's descriptor.
//!
//! `AsyncFd` keeps one waker per direction (and so does the shared-memory check timer): that
//! of the call that polled it last, the *reader*. When the reader ends (its outcome, its
//! deadline, or its future dropped) while other calls wait, it wakes one of them, preferably
//! one with no outcome yet, which polls, drives and becomes the reader; a call woken so that
//! ends without driving (its outcome had come meanwhile) hands on again. No call is left
//! parked with no one registered with the reactor. A call becomes the reader as soon as it
//! polls the descriptor, even in the poll that then finds its own outcome
//! (`tests/tokio_driver.rs`, `handoff_when_a_call_ends_in_the_poll_that_registered`).
//!
//! ```text
//!   call A ──poll──► send A ─► flush ─► drain try_recv ──► outcome of B: B.waker.wake()
//!                                                     └──► outcome of A: Ready
//!                                       register read interest (A is the reader)
//!   A ends as reader ──► wake one other waiting call (it registers next)
//! ```
//!
//! # Backpressure
//!
//! The connection is non-blocking: a request the transport will not take now (a full TCP send
//! queue, a shared-memory block with no credit) stays with its call future, which waits for
//! write readiness (TCP) or for the peer's acknowledgements (shared memory: they ring the
//! doorbell that the drain armed) and retries. Nothing is queued beyond the transport's own
//! bounded buffers; the request window ([`ClientConfig::window`](crate::session::ClientConfig))
//! bounds the calls, and so the responses to read.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::poll_fn;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::time::Sleep;
use ferry_buf::Pool;
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Outgoing};

use crate::channel::{CallOptions, ChannelConfig, NO_OPTIONS, Response, unreachable_server};
use crate::conn::{Conn, Frame, SHM_CHECK, TransportKind, frame_alone};
use crate::metadata::Metadata;
use crate::session::{Client, ClientEvent, Outcome};
use crate::status::{Code, Status, unsent_request};
use crate::{Addr, CallId};

/// An async client: many calls in flight on one connection, each an `async fn` call. `!Send`.
///
/// Calls are started in the order their futures are first polled; up to the request window
/// ([`ChannelConfig::client`]) may be in flight, and a call past it fails at once with
/// `RESOURCE_EXHAUSTED`. Sends never block the thread: the connection is non-blocking, and a
/// call whose request the transport cannot take now waits (as a future) for room. A call
/// future must be polled to completion or dropped: one left pending and never polled again may
/// hold the reactor registration the other calls wait on.
///
/// Over TCP, connecting is asynchronous. Over shared memory the setup exchange is
/// `ferry-shm`'s blocking handshake: it blocks the thread until the server accepts (at most
/// 10 s), so do not connect to an [`AsyncServer`](super::AsyncServer) running on the same
/// thread.
pub struct AsyncChannel {
    addr: Addr,
    ctx: Context,
    limits: Limits,
    inner: RefCell<Inner>,
    /// The pool TCP frames use (kept for the connection's life).
    _pool: Pool,
}

impl std::fmt::Debug for AsyncChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncChannel")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// A call in flight, as the driver sees it.
#[derive(Default)]
struct Slot {
    /// The task to wake when the outcome arrives.
    waker: Option<Waker>,
    /// The outcome, once known (a response with its metadata).
    done: Option<Result<(Frame, Metadata, Metadata), Status>>,
}

/// The connection and every call's state. Borrowed only inside a poll or a drop, never across
/// an `.await`.
struct Inner {
    /// Readiness of a duplicate of the connection's descriptor. Declared (and dropped) before
    /// `conn`.
    fd: Option<AsyncFd<OwnedFd>>,
    /// `None` once the connection is lost: calls then fail with `UNAVAILABLE`.
    conn: Option<Conn>,
    kind: TransportKind,
    core: Client,
    timeout: Option<Duration>,
    pending: HashMap<CallId, Slot>,
    /// The call that registered with the reactor last (see the module docs).
    reader: Option<CallId>,
    /// Cancel frames the transport has not taken yet.
    cancels: Vec<Meta>,
    /// Shared memory: the periodic look at a quiet connection (polled by the reader).
    check: Option<Pin<Box<Sleep>>>,
    /// Why the connection was lost.
    lost: Option<String>,
    /// Tasks to wake once the borrow is released.
    to_wake: Vec<Waker>,
}

impl AsyncChannel {
    /// Connects to `tcp://host:port` or `shm:///path` with the default settings.
    pub async fn connect(addr: &str) -> Result<AsyncChannel, Status> {
        AsyncChannel::connect_with(addr, ChannelConfig::default()).await
    }

    /// Connects with `config`. Fails with `INVALID_ARGUMENT` for an address that does not
    /// parse and `UNAVAILABLE` if the server cannot be reached. Call inside a tokio runtime
    /// with I/O enabled.
    pub async fn connect_with(addr: &str, config: ChannelConfig) -> Result<AsyncChannel, Status> {
        let addr: Addr = addr
            .parse()
            .map_err(|e| Status::new(Code::InvalidArgument, format!("{e}")))?;
        let pool = config
            .conn
            .loop_pool(&config.pool)
            .map_err(|e| Status::new(Code::ResourceExhausted, format!("{e}")))?;
        let mut conn = match &addr {
            Addr::Tcp(a) => {
                let stream = ::tokio::net::TcpStream::connect(a.as_str())
                    .await
                    .and_then(|s| s.into_std())
                    .map_err(|e| unreachable_server(&addr, &TransportError::io("connect", e)))?;
                ferry_net::Connection::new(stream, &pool, &config.conn.tcp)
                    .map(Conn::Tcp)
                    .map_err(|e| unreachable_server(&addr, &e))?
            }
            Addr::Shm(_) => {
                Conn::connect(&addr, &pool, &config.conn).map_err(|e| unreachable_server(&addr, &e))?
            }
        };
        conn.set_nonblocking(true);
        let fd =
            register(&conn).map_err(|e| unreachable_server(&addr, &TransportError::io("epoll_ctl", e)))?;
        let ctx = config.conn.context(&conn, &pool);
        Ok(AsyncChannel {
            inner: RefCell::new(Inner {
                fd: Some(fd),
                kind: conn.kind(),
                conn: Some(conn),
                core: Client::new(config.client.clone()),
                timeout: config.timeout,
                pending: HashMap::new(),
                reader: None,
                cancels: Vec::new(),
                check: None,
                lost: None,
                to_wake: Vec::new(),
            }),
            addr,
            ctx,
            limits: config.limits,
            _pool: pool,
        })
    }

    /// The context to build requests with (values in its pool travel by reference).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Sets each call's deadline, from its start (the default of
    /// [`CallOptions::timeout`]).
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        self.inner.borrow_mut().timeout = timeout;
    }

    /// Calls `method` with a Ferry message; resolves with the response (`M` is the response
    /// type [`Response::view`] reads: `()` to read the frame some other way). Dropping the
    /// future cancels the call (the server is told).
    pub async fn call<M>(
        &self,
        method: u16,
        request: &(impl Outgoing + ?Sized),
    ) -> Result<Response<M>, Status> {
        self.call_with(method, request, &NO_OPTIONS).await
    }

    /// [`call`](Self::call) with `options`: the call's own timeout and metadata.
    pub async fn call_with<M>(
        &self,
        method: u16,
        request: &(impl Outgoing + ?Sized),
        options: &CallOptions,
    ) -> Result<Response<M>, Status> {
        let (frame, headers, trailers) = self
            .round_trip(method, options, |conn, meta| conn.send(meta, request))
            .await?;
        Ok(Response::new(frame, self.limits, headers, trailers))
    }

    /// Calls a raw method with `payload`.
    pub async fn call_payload(&self, method: u16, payload: Payload<'_>) -> Result<Response<()>, Status> {
        self.call_payload_with(method, payload, &NO_OPTIONS).await
    }

    /// [`call_payload`](Self::call_payload) with `options`.
    pub async fn call_payload_with(
        &self,
        method: u16,
        payload: Payload<'_>,
        options: &CallOptions,
    ) -> Result<Response<()>, Status> {
        let (frame, headers, trailers) = self
            .round_trip(method, options, |conn, meta| conn.send_payload(meta, payload))
            .await?;
        Ok(Response::new(frame, self.limits, headers, trailers))
    }

    /// Starts a call, then sends and waits for it (see the module docs).
    async fn round_trip(
        &self,
        method: u16,
        options: &CallOptions,
        mut send: impl FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Result<(Frame, Metadata, Metadata), Status> {
        let now = Instant::now();
        let (start, timeout) = {
            let mut inner = self.inner.borrow_mut();
            if inner.conn.is_none() {
                let why = inner.lost.as_deref().unwrap_or("closed");
                return Err(Status::new(
                    Code::Unavailable,
                    format!("the connection is lost ({why})"),
                ));
            }
            let timeout = options.timeout.or(inner.timeout);
            let start = inner.core.start(method, timeout, now)?;
            inner.pending.insert(start.id, Slot::default());
            (start, timeout)
        };
        let metadata = start.metadata_frame(&options.metadata);
        let mut call = CallState {
            chan: self,
            id: start.id,
            stage: match (start.deadline, metadata.is_some()) {
                (Some(_), _) => Stage::Deadline,
                (None, true) => Stage::Metadata,
                (None, false) => Stage::Request,
            },
            start,
            metadata,
            sent_any: false,
            // The same instant the core computed the deadline from.
            timer: timeout
                .and_then(|t| now.checked_add(t))
                .map(|at| Box::pin(::tokio::time::sleep_until(at.into()))),
        };
        poll_fn(|cx| call.poll(cx, &mut send)).await
    }
}

/// Where a call's frames are: the next to go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The deadline frame (then the metadata frame, if any, then the request).
    Deadline,
    /// The metadata frame (then the request).
    Metadata,
    /// The request.
    Request,
    /// Everything is with the transport.
    Sent,
}

/// One call's future state; dropping it before the outcome cancels the call.
struct CallState<'c> {
    chan: &'c AsyncChannel,
    id: CallId,
    /// The frames to send.
    start: crate::session::Start,
    /// The metadata frame, if the call has metadata.
    metadata: Option<(Meta, Vec<u8>)>,
    stage: Stage,
    /// Whether a frame of the call went out (only then is a cancel frame worth sending).
    sent_any: bool,
    /// The call's deadline.
    timer: Option<Pin<Box<Sleep>>>,
}

impl CallState<'_> {
    fn poll(
        &mut self,
        cx: &mut TaskContext<'_>,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Poll<Result<(Frame, Metadata, Metadata), Status>> {
        let mut guard = self.chan.inner.borrow_mut();
        let result = self.poll_inner(&mut guard, cx, send);
        let to_wake = std::mem::take(&mut guard.to_wake);
        drop(guard);
        to_wake.into_iter().for_each(Waker::wake);
        result
    }

    fn poll_inner(
        &mut self,
        inner: &mut Inner,
        cx: &mut TaskContext<'_>,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Poll<Result<(Frame, Metadata, Metadata), Status>> {
        for _ in 0..super::ROUNDS {
            if let Some(result) = inner.take_done(self.id) {
                return Poll::Ready(result);
            }
            if let Some(timer) = &mut self.timer {
                if timer.as_mut().poll(cx).is_ready() {
                    self.timer = None;
                    inner.expire(Instant::now());
                    if let Some(result) = inner.take_done(self.id) {
                        return Poll::Ready(result);
                    }
                    // The timer fired before the core's clock says so (it cannot, but should
                    // it): end the call here all the same.
                    if let Some(cancel) = inner.core.cancel(self.id) {
                        if self.sent_any {
                            inner.cancels.push(cancel);
                        }
                        return Poll::Ready(Err(Status::new(
                            Code::DeadlineExceeded,
                            "deadline exceeded (client)",
                        )));
                    }
                }
            }
            if inner.conn.is_none() {
                // Lost: the outcome was handed out above; a call the core no longer knows
                // fails the same way.
                let why = inner.lost.as_deref().unwrap_or("closed");
                return Poll::Ready(Err(Status::new(
                    Code::Unavailable,
                    format!("connection lost: {why}"),
                )));
            }
            let blocked = match self.advance(inner, send) {
                Ok(blocked) => blocked,
                Err(status) => return Poll::Ready(Err(status)),
            };
            let again = inner.drive(cx, blocked);
            // Whoever polled the descriptor last holds its one waker, whatever comes next.
            inner.reader = Some(self.id);
            if let Some(result) = inner.take_done(self.id) {
                return Poll::Ready(result);
            }
            if !again && inner.conn.is_some() {
                self.park(inner, cx);
                return Poll::Pending;
            }
        }
        // Readiness that stays set (a closed state is final in tokio) must not hold the thread:
        // yield, and drive again when polled.
        self.park(inner, cx);
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Waits: this call holds the reactor registration now, and its task is woken with its
    /// outcome.
    fn park(&self, inner: &mut Inner, cx: &mut TaskContext<'_>) {
        inner.reader = Some(self.id);
        if let Some(slot) = inner.pending.get_mut(&self.id) {
            match &slot.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => slot.waker = Some(cx.waker().clone()),
            }
        }
    }

    /// Sends what is left of the call's frames; `Ok(true)` when the transport will not take
    /// the next one now.
    fn advance(
        &mut self,
        inner: &mut Inner,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Result<bool, Status> {
        loop {
            let Some(conn) = inner.conn.as_mut() else {
                return Ok(false);
            };
            let after_deadline = match self.metadata {
                Some(_) => Stage::Metadata,
                None => Stage::Request,
            };
            let sent = match (self.stage, &self.start.deadline, &self.metadata) {
                (Stage::Sent, ..) => return Ok(false),
                (Stage::Deadline, Some((meta, budget)), _) => conn
                    .send_payload(*meta, Payload::Bytes(budget))
                    .map(|()| after_deadline),
                (Stage::Metadata, _, Some((meta, payload))) => conn
                    .send_payload(*meta, Payload::Bytes(payload))
                    .map(|()| Stage::Request),
                (Stage::Request, ..) => send(conn, self.start.request).map(|()| Stage::Sent),
                // Stages are chosen from what the call has (round_trip, above).
                (Stage::Deadline | Stage::Metadata, ..) => Ok(Stage::Request),
            };
            match sent {
                Ok(next) => {
                    self.stage = next;
                    self.sent_any = true;
                    if next == Stage::Sent {
                        match conn.flush() {
                            Ok(()) | Err(TransportError::WouldBlock) => {}
                            Err(e) => inner.lose(&e),
                        }
                        return Ok(false);
                    }
                }
                Err(TransportError::WouldBlock) => return Ok(true),
                // About this frame alone: the connection stays usable with nothing queued.
                Err(e) if frame_alone(&e) => {
                    if let Some(cancel) = inner.core.cancel(self.id) {
                        if self.sent_any {
                            inner.cancels.push(cancel);
                        }
                    }
                    return Err(unsent_request(&e));
                }
                Err(e) => {
                    inner.lose(&e);
                    return Err(inner
                        .take_done(self.id)
                        .and_then(Result::err)
                        .unwrap_or_else(|| Status::new(Code::Unavailable, format!("connection lost: {e}"))));
                }
            }
        }
    }
}

impl Drop for CallState<'_> {
    /// Ends the call if it has not ended (a cancel frame tells the server if it heard of it; a
    /// late answer is dropped), and hands the reactor registration on if this call held it.
    fn drop(&mut self) {
        let Ok(mut guard) = self.chan.inner.try_borrow_mut() else {
            return;
        };
        let inner = &mut *guard;
        if let Some(cancel) = inner.core.cancel(self.id) {
            if self.sent_any && inner.conn.is_some() {
                inner.cancels.push(cancel);
                inner.send_cancels();
                if let Some(conn) = inner.conn.as_mut() {
                    match conn.flush() {
                        Ok(()) | Err(TransportError::WouldBlock) => {}
                        Err(e) => inner.lose(&e),
                    }
                }
            }
        }
        inner.pending.remove(&self.id);
        // Hand the registration on: if this call held it, or if it was handed to this call,
        // which ended without driving (its outcome had come), wake another waiting call:
        // preferably one still without an outcome, which drives when polled.
        if inner.reader.is_none_or(|r| r == self.id) {
            inner.reader = None;
            let next = inner
                .pending
                .values_mut()
                .filter(|s| s.waker.is_some())
                .min_by_key(|s| s.done.is_some())
                .and_then(|s| s.waker.take());
            if let Some(waker) = next {
                inner.to_wake.push(waker);
            }
        }
        let to_wake = std::mem::take(&mut inner.to_wake);
        drop(guard);
        to_wake.into_iter().for_each(Waker::wake);
    }
}

impl Inner {
    fn take_done(&mut self, id: CallId) -> Option<Result<(Frame, Metadata, Metadata), Status>> {
        self.pending.get_mut(&id)?.done.take()
    }

    /// Hands an outcome to its call and queues its task's wakeup.
    fn deliver(&mut self, id: CallId, result: Result<(Frame, Metadata, Metadata), Status>) {
        let Some(slot) = self.pending.get_mut(&id) else {
            return;
        };
        slot.done = Some(result);
        if let Some(w) = slot.waker.take() {
            self.to_wake.push(w);
        }
    }

    /// Ends the calls whose deadline has passed (`DEADLINE_EXCEEDED`) and tells the server.
    fn expire(&mut self, now: Instant) {
        for (outcome, cancel) in self.core.expire(now) {
            if let Outcome::Failed { id, status, .. } = outcome {
                self.deliver(id, Err(status));
            }
            self.cancels.push(cancel);
        }
        self.send_cancels();
    }

    /// Sends the cancel frames the transport takes now.
    fn send_cancels(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            self.cancels.clear();
            return;
        };
        let mut sent = 0;
        let mut failed = None;
        for &meta in &self.cancels {
            match conn.send_payload(meta, Payload::Bytes(&[])) {
                Ok(()) => sent += 1,
                Err(TransportError::WouldBlock) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.cancels.drain(..sent);
        if let Some(e) = failed {
            self.lose(&e);
        }
    }

    /// The connection is gone: descriptor first, then the connection; every call fails with
    /// `UNAVAILABLE`.
    fn lose(&mut self, why: &dyn std::fmt::Display) {
        if self.conn.is_none() {
            return;
        }
        let why = why.to_string();
        self.fd = None;
        self.conn = None;
        self.cancels.clear();
        self.check = None;
        for outcome in self.core.lost() {
            if let Outcome::Failed { id, .. } = outcome {
                self.deliver(
                    id,
                    Err(Status::new(Code::Unavailable, format!("connection lost: {why}"))),
                );
            }
        }
        self.lost = Some(why);
    }

    /// One frame from the server.
    fn on_frame(&mut self, frame: Frame) {
        let meta = frame.meta();
        let raw = if crate::wire::carries_message(meta.flags) {
            None
        } else {
            frame.bytes()
        };
        match self.core.on_frame(meta, raw, frame.window_len()) {
            Ok(Some(ClientEvent::Ended(Outcome::Response {
                id,
                metadata,
                trailers,
                ..
            }))) => self.deliver(id, Ok((frame, metadata, trailers))),
            Ok(Some(ClientEvent::Ended(Outcome::Failed { id, status, .. }))) => self.deliver(id, Err(status)),
            Ok(Some(ClientEvent::Aborted(Outcome::Failed { id, status, .. }, cancel))) => {
                self.cancels.push(cancel);
                self.deliver(id, Err(status));
            }
            // The late answer of a call that ended here; this client opens no streams.
            Ok(_) => {}
            Err(e) => self.lose(&format_args!("RPC protocol: {e}")),
        }
    }

    /// Flushes, drains `try_recv` until `None` (handing out outcomes), then registers with the
    /// reactor: read interest always, write interest over TCP while frames wait (`blocked`: a
    /// call's frame was refused). Returns whether a readiness was found set (and cleared): the
    /// caller goes round again.
    fn drive(&mut self, cx: &mut TaskContext<'_>, blocked: bool) -> bool {
        if !self.cancels.is_empty() {
            self.send_cancels();
        }
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        if conn.has_unsent() {
            match conn.flush() {
                Ok(()) | Err(TransportError::WouldBlock) => {}
                Err(e) => {
                    self.lose(&e);
                    return false;
                }
            }
        }
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return false;
            };
            match conn.try_recv() {
                Ok(Some(frame)) => self.on_frame(frame),
                Ok(None) => break,
                Err(e) => {
                    self.lose(&e);
                    return false;
                }
            }
        }
        let (Some(fd), Some(conn)) = (self.fd.as_ref(), self.conn.as_mut()) else {
            return false;
        };
        let mut again = false;
        let mut failed = None;
        match fd.poll_read_ready(cx) {
            Poll::Ready(Ok(mut ready)) => {
                ready.clear_ready();
                again = true;
            }
            Poll::Ready(Err(e)) => failed = Some(TransportError::io("epoll", e)),
            Poll::Pending => {}
        }
        match self.kind {
            TransportKind::Tcp => {
                if blocked || conn.has_unsent() || !self.cancels.is_empty() {
                    match fd.poll_write_ready(cx) {
                        Poll::Ready(Ok(mut ready)) => {
                            ready.clear_ready();
                            if let Conn::Tcp(c) = conn {
                                // Zero-copy modes: completions show as an error on the socket.
                                if let Err(e) = c.sender().poll_completions() {
                                    failed = Some(e);
                                }
                            }
                            again = true;
                        }
                        Poll::Ready(Err(e)) => failed = Some(TransportError::io("epoll", e)),
                        Poll::Pending => {}
                    }
                }
            }
            TransportKind::Shm => {
                let check = self
                    .check
                    .get_or_insert_with(|| Box::pin(::tokio::time::sleep(SHM_CHECK)));
                if check.as_mut().poll(cx).is_ready() {
                    check.as_mut().reset(::tokio::time::Instant::now() + SHM_CHECK);
                    again = true;
                }
            }
        }
        if let Some(e) = failed {
            self.lose(&e);
            return false;
        }
        again
    }
}

/// Registers a duplicate of the connection's descriptor with the reactor: a TCP socket for
/// reading and writing, a shared-memory doorbell (an eventfd, always writable) for reading.
pub(super) fn register(conn: &Conn) -> std::io::Result<AsyncFd<OwnedFd>> {
    let interest = match conn.kind() {
        TransportKind::Tcp => Interest::READABLE | Interest::WRITABLE,
        TransportKind::Shm => Interest::READABLE,
    };
    super::register_fd(conn.as_fd().try_clone_to_owned()?, interest)
}
