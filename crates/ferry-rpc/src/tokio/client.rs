//! [`AsyncChannel`]: many calls in flight on one connection, each an `async fn` call, over the
//! same [`session::Client`](crate::session::Client) as the blocking [`Channel`](crate::Channel).
//!
//! # Who drives the connection
//!
//! No task of its own: whichever call future (or stream handle, below) is polled drives the
//! connection for every call.
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
//!
//! # Streams
//!
//! [`AsyncChannel::open`] returns a [`RequestSink`] and a [`ResponseStream`], `'static` handles
//! on the same state (they can go to tasks of their own). Each is a waiter like a call future:
//! whichever is polled drives the connection, parks as the reader when it has nothing, and
//! hands the registration on when it stops waiting: when it resolves, not only when it is
//! dropped, since a stream's handle lives on between its waits. What arrives for a stream is
//! buffered in its slot (messages, headers, its end) whoever reads it, so a stream nobody reads
//! stops no other call: its server is held by the window (at most a window of messages wait
//! here). Over shared memory a held frame would hold the server's blocks (they are
//! acknowledged in order), so the frames of a response stream that is not waiting are copied
//! into this side's pool.
//!
//! A send takes its place in the window (or waits for a `Window` event), then goes to the
//! transport after whatever the backlog holds (open, end, window and cancel frames, in order),
//! and a `send` resolves once the transport has written it. A `feed` resolves once the
//! transport has taken it: fed messages are written together, as the server's session task
//! writes its handlers' sends, once per wake of the reader parked on the connection (woken by
//! the feed), or by the next wait of any call or stream, the transport's own batch caps
//! (which, with the window, bound what waits), the sink's next `send`, `flush`, `end` or
//! drop. Deadlines, of calls and streams alike, are one timer, the earliest's, polled by the
//! reader.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::time::Sleep;
use ferry_buf::Pool;
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Message, MessageDesc, Outgoing};

use super::Out;
use crate::channel::{CallOptions, ChannelConfig, NO_OPTIONS, Response, unreachable_server};
use crate::conn::{Conn, Frame, SHM_CHECK, TransportKind, frame_alone};
use crate::metadata::Metadata;
use crate::service::Encoded;
use crate::session::{Blocked, Client, ClientEvent, Outcome};
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
    /// Shared with the handles of its streams.
    inner: Rc<RefCell<Inner>>,
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
    /// The task to wake when the outcome arrives (a stream's: when a message, its headers or
    /// its end arrive).
    waker: Option<Waker>,
    /// The outcome of a unary call, once known (a response with its metadata).
    done: Option<Result<(Frame, Metadata, Metadata), Status>>,
    /// A stream's state.
    stream: Option<Box<StreamSlot>>,
}

/// A stream in flight: what arrived for its [`ResponseStream`], and its [`RequestSink`]'s
/// wakeup.
#[derive(Default)]
struct StreamSlot {
    /// The sink's task, waiting for the window (or the transport).
    send_waker: Option<Waker>,
    /// Messages received, not yet taken (at most a window of them), each with what it counts
    /// against the window.
    messages: VecDeque<(Frame, usize)>,
    /// The response stream waits for a message (its reader drives the connection or parked,
    /// and has not taken one since).
    waiting: bool,
    /// The response type, once the stream is typed (to copy a held shared-memory frame:
    /// [`Frame::detach`](crate::Frame::detach)).
    desc: Option<&'static MessageDesc<'static>>,
    /// The server's headers, once they arrived (empty if none came before a message or the
    /// end), until the response stream takes them.
    headers: Option<Metadata>,
    /// How the stream ended: the trailers of an OK end, or the status it failed with.
    end: Option<Result<Metadata, Status>>,
    /// Handles alive: the slot goes with the last.
    handles: u8,
}

impl Slot {
    /// Whether a waiter of it would end without waiting (something arrived for it).
    fn has_news(&self) -> bool {
        self.done.is_some()
            || self
                .stream
                .as_ref()
                .is_some_and(|s| !s.messages.is_empty() || s.end.is_some())
    }
}

/// Who waits on the connection: a call (a unary call's future, or a stream's responses) or a
/// stream's sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiter {
    id: CallId,
    sender: bool,
}

/// What a waiter's step found: its result, or why it waits (`blocked`: a frame waits for the
/// transport, so write readiness matters).
enum Step<T> {
    Done(T),
    Wait { blocked: bool },
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
    /// The waiter that registered with the reactor last (see the module docs).
    reader: Option<Waiter>,
    /// Control frames (cancel, a stream's open, end and window frames) and stream messages the
    /// transport has not taken yet, in order.
    backlog: VecDeque<(Meta, Encoded)>,
    /// Shared memory: the periodic look at a quiet connection (polled by the reader).
    check: Option<Pin<Box<Sleep>>>,
    /// The earliest deadline of a call in flight, and its timer (polled by the reader).
    deadline: Option<(Instant, Pin<Box<Sleep>>)>,
    /// Why the connection was lost.
    lost: Option<String>,
    /// Tasks to wake once the borrow is released.
    to_wake: Vec<Waker>,
    /// What held shared-memory frames are copied with (see
    /// [`Frame::detach`](crate::Frame::detach)).
    ctx: Context,
    limits: Limits,
    /// The pool TCP frames use (kept for the connection's life).
    _pool: Pool,
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
            Addr::Tls(a) => {
                let tls = config
                    .conn
                    .client_tls()
                    .map_err(|e| unreachable_server(&addr, &e))?;
                let stream = ::tokio::net::TcpStream::connect(a.as_str())
                    .await
                    .and_then(|s| s.into_std())
                    .map_err(|e| unreachable_server(&addr, &TransportError::io("connect", e)))?;
                let host = a.rsplit_once(':').map_or(a.as_str(), |(host, _)| host);
                ferry_net::Connection::tls_client(stream, host, &pool, &config.conn.tcp, tls)
                    .map(Conn::Tcp)
                    .map_err(|e| unreachable_server(&addr, &e))?
            }
            // A UDP or AF_XDP handshake blocks the thread, as a shared-memory setup does (bounded by
            // `UdpConnConfig::handshake_timeout`).
            Addr::Shm(_) | Addr::Udp(_) | Addr::Xdp { .. } => {
                Conn::connect(&addr, &pool, &config.conn).map_err(|e| unreachable_server(&addr, &e))?
            }
        };
        conn.set_nonblocking(true);
        let fd =
            register(&conn).map_err(|e| unreachable_server(&addr, &TransportError::io("epoll_ctl", e)))?;
        super::handshake(&mut conn, &fd)
            .await
            .map_err(|e| unreachable_server(&addr, &e))?;
        let ctx = config.conn.context(&conn, &pool);
        Ok(AsyncChannel {
            inner: Rc::new(RefCell::new(Inner {
                fd: Some(fd),
                kind: conn.kind(),
                conn: Some(conn),
                core: Client::new(config.client.clone()),
                timeout: config.timeout,
                pending: HashMap::new(),
                reader: None,
                backlog: VecDeque::new(),
                check: None,
                deadline: None,
                lost: None,
                to_wake: Vec::new(),
                ctx: ctx.clone(),
                limits: config.limits,
                _pool: pool,
            })),
            addr,
            ctx,
            limits: config.limits,
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
        let start = {
            let mut inner = self.inner.borrow_mut();
            if inner.conn.is_none() {
                let why = inner.lost.as_deref().unwrap_or("closed");
                return Err(Status::new(
                    Code::Unavailable,
                    format!("the connection is lost ({why})"),
                ));
            }
            let timeout = options.timeout.or(inner.timeout);
            let start = inner.core.start(method, timeout, Instant::now(), ())?;
            inner.pending.insert(start.id, Slot::default());
            start
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
            ended: false,
        };
        poll_fn(|cx| call.poll(cx, &mut send)).await
    }

    /// Opens a streaming call to `method` with `options` (its timeout covers the whole
    /// stream): the sink its requests go to and the stream its responses come from (`M`, the
    /// response type [`Response::view`] reads: `()` to read frames some other way; see
    /// [`ResponseStream::typed`]). Fails at once with `RESOURCE_EXHAUSTED` when the request
    /// window is full, `UNAVAILABLE` when the connection is lost. The open goes out with the
    /// first poll of either handle (or now, if the transport takes it).
    ///
    /// Dropping the [`ResponseStream`] before its end cancels the call (the server is told);
    /// dropping the [`RequestSink`] half-closes it, as [`RequestSink::end`] does.
    pub fn open(
        &self,
        method: u16,
        options: &CallOptions,
    ) -> Result<(RequestSink, ResponseStream<()>), Status> {
        let mut guard = self.inner.borrow_mut();
        let inner = &mut *guard;
        if inner.conn.is_none() {
            return Err(inner.lost_status());
        }
        let timeout = options.timeout.or(inner.timeout);
        let start = inner.core.open(method, timeout, Instant::now(), ())?;
        let stream = StreamSlot {
            handles: 2,
            ..StreamSlot::default()
        };
        inner.pending.insert(
            start.id,
            Slot {
                stream: Some(Box::new(stream)),
                ..Slot::default()
            },
        );
        if let Some((meta, budget)) = start.deadline {
            inner.backlog.push_back((meta, Encoded::bytes(&budget)));
        }
        if let Some((meta, payload)) = start.metadata_frame(&options.metadata) {
            inner.backlog.push_back((meta, Encoded::from_vec(payload)));
        }
        inner.push_control(start.request, Encoded::default());
        let to_wake = std::mem::take(&mut inner.to_wake);
        drop(guard);
        to_wake.into_iter().for_each(Waker::wake);
        let sink = RequestSink {
            inner: Rc::clone(&self.inner),
            id: start.id,
            ended: false,
        };
        let responses = ResponseStream {
            r: Responses {
                inner: Rc::clone(&self.inner),
                id: start.id,
                limits: self.limits,
                headers: None,
                trailers: None,
                over: false,
            },
            _message: PhantomData,
        };
        Ok((sink, responses))
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
    /// The future resolved (and handed the registration on).
    ended: bool,
}

impl CallState<'_> {
    fn poll(
        &mut self,
        cx: &mut TaskContext<'_>,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Poll<Result<(Frame, Metadata, Metadata), Status>> {
        let me = Waiter {
            id: self.id,
            sender: false,
        };
        let mut guard = self.chan.inner.borrow_mut();
        let result = guard.wait(me, cx, |inner| {
            if let Some(result) = inner.take_done(self.id) {
                return Step::Done(result);
            }
            if inner.conn.is_none() {
                // Lost: the outcome was handed out above; a call the core no longer knows
                // fails the same way.
                return Step::Done(Err(inner.lost_status()));
            }
            match self.advance(inner, send) {
                Ok(blocked) => Step::Wait { blocked },
                Err(status) => Step::Done(Err(status)),
            }
        });
        self.ended = result.is_ready();
        let to_wake = std::mem::take(&mut guard.to_wake);
        drop(guard);
        to_wake.into_iter().for_each(Waker::wake);
        result
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
                        inner.flush();
                        return Ok(false);
                    }
                }
                Err(TransportError::WouldBlock) => return Ok(true),
                // About this frame alone: the connection stays usable with nothing queued.
                Err(e) if frame_alone(&e) => {
                    if let Some((cancel, ())) = inner.core.cancel(self.id) {
                        if self.sent_any {
                            inner.backlog.push_back((cancel, Encoded::default()));
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
        if let Some((cancel, ())) = inner.core.cancel(self.id) {
            if self.sent_any && inner.conn.is_some() {
                inner.push_control(cancel, Encoded::default());
            }
        }
        inner.pending.remove(&self.id);
        if !self.ended {
            inner.hand_on(Waiter {
                id: self.id,
                sender: false,
            });
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

    /// Hands a unary call its outcome and queues its task's wakeup (a stream's end goes through
    /// [`end`](Self::end)).
    fn deliver(&mut self, id: CallId, result: Result<(Frame, Metadata, Metadata), Status>) {
        let Some(slot) = self.pending.get_mut(&id) else {
            return;
        };
        slot.done = Some(result);
        if let Some(w) = slot.waker.take() {
            self.to_wake.push(w);
        }
    }

    /// Call `id` ended: a stream with `end` (the server's headers, if none came before, are
    /// `headers`), a unary call with its failure.
    fn end(&mut self, id: CallId, end: Result<Metadata, Status>, headers: Metadata) {
        let Some(slot) = self.pending.get_mut(&id) else {
            return;
        };
        let Some(stream) = slot.stream.as_mut() else {
            if let Err(status) = end {
                self.deliver(id, Err(status));
            }
            return;
        };
        stream.headers.get_or_insert(headers);
        stream.end = Some(end);
        self.to_wake.extend(stream.send_waker.take());
        self.to_wake.extend(slot.waker.take());
    }

    /// The status a call fails with once the connection is lost.
    fn lost_status(&self) -> Status {
        let why = self.lost.as_deref().unwrap_or("closed");
        Status::new(Code::Unavailable, format!("connection lost: {why}"))
    }

    /// Ends the calls whose deadline has passed (`DEADLINE_EXCEEDED`) and tells the server.
    fn expire(&mut self, now: Instant) {
        for (outcome, cancel) in self.core.expire(now) {
            if let Outcome::Failed {
                id, status, headers, ..
            } = outcome
            {
                self.end(id, Err(status), headers);
            }
            self.backlog.push_back((cancel, Encoded::default()));
        }
        self.send_backlog();
    }

    /// Sends what the backlog holds, as far as the transport takes it now.
    fn send_backlog(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            self.backlog.clear();
            return;
        };
        while let Some((meta, encoded)) = self.backlog.front() {
            match conn.send_payload(*meta, encoded.payload()) {
                Ok(()) => {
                    self.backlog.pop_front();
                }
                Err(TransportError::WouldBlock) => return,
                Err(e) => return self.lose(&e),
            }
        }
    }

    /// Flushes what the transport holds, as far as it goes now.
    fn flush(&mut self) {
        if let Some(conn) = self.conn.as_mut() {
            match conn.flush() {
                Ok(()) | Err(TransportError::WouldBlock) => {}
                Err(e) => self.lose(&e),
            }
        }
    }

    /// Whether everything queued went to the transport, and the transport wrote it (after
    /// trying once more).
    fn flushed(&mut self) -> bool {
        self.send_backlog();
        self.flush();
        self.backlog.is_empty() && self.conn.as_mut().is_none_or(|c| !c.has_unsent())
    }

    /// Queues a frame no future waits on (a cancel, a stream's open, end or window frame) and
    /// sends what the transport takes; if some stays, the reader is woken to wait for write
    /// readiness.
    fn push_control(&mut self, meta: Meta, encoded: Encoded) {
        self.backlog.push_back((meta, encoded));
        if !self.flushed() {
            if let Some(w) = self.reader.and_then(|r| self.waker_of(r)).and_then(Option::take) {
                self.to_wake.push(w);
            }
        }
    }

    /// A send left its message in the transport: the reader parked on the connection, if
    /// another waiter is, is woken to write it, with whatever else is sent before it runs (one
    /// flush per wake). With none, the next wait, send, `end` or `flush` writes it.
    fn flush_soon(&mut self, me: Waiter) {
        if !self.conn.as_mut().is_some_and(|c| c.has_unsent()) {
            return;
        }
        let reader = self.reader.filter(|r| *r != me);
        if let Some(w) = reader.and_then(|r| self.waker_of(r)).and_then(Option::take) {
            self.to_wake.push(w);
        }
    }

    /// Notes whether a response stream waits (see [`StreamSlot::waiting`]).
    fn set_waiting(&mut self, w: Waiter, waiting: bool) {
        if w.sender {
            return;
        }
        if let Some((_, stream)) = stream_of(&mut self.pending, w.id) {
            stream.waiting = waiting;
        }
    }

    /// Copies the shared-memory frames that response streams not waiting for them hold (see
    /// [`Frame::detach`](crate::Frame::detach)).
    fn detach_held(&mut self) {
        if self.kind != TransportKind::Shm {
            return;
        }
        let streams = self.pending.values_mut().filter_map(|s| s.stream.as_deref_mut());
        for stream in streams.filter(|s| !s.waiting) {
            for (frame, _) in &mut stream.messages {
                frame.detach(stream.desc, &self.ctx, &self.limits);
            }
        }
    }

    /// Where waiter `w` keeps its waker.
    fn waker_of(&mut self, w: Waiter) -> Option<&mut Option<Waker>> {
        let slot = self.pending.get_mut(&w.id)?;
        match w.sender {
            false => Some(&mut slot.waker),
            true => slot.stream.as_mut().map(|s| &mut s.send_waker),
        }
    }

    /// Drives the connection for waiter `me` until `step` is done (see the module docs):
    /// `step` again after each drive, the waiter parked as the reader when nothing is ready.
    fn wait<T>(
        &mut self,
        me: Waiter,
        cx: &mut TaskContext<'_>,
        mut step: impl FnMut(&mut Inner) -> Step<T>,
    ) -> Poll<T> {
        // A reader driving the connection takes what arrives for it next: its frames are not
        // copied out of shared memory meanwhile (`rest` clears the mark when it is done).
        self.set_waiting(me, true);
        for _ in 0..super::ROUNDS {
            let blocked = match step(self) {
                Step::Done(v) => return Poll::Ready(self.rest(me, v)),
                Step::Wait { blocked } => blocked,
            };
            let again = self.drive(cx, blocked);
            // Whoever polled the descriptor last holds its one waker, whatever comes next.
            self.reader = Some(me);
            if let Step::Done(v) = step(self) {
                return Poll::Ready(self.rest(me, v));
            }
            if !again && self.conn.is_some() {
                self.park(me, cx);
                return Poll::Pending;
            }
        }
        // Readiness that stays set (a closed state is final in tokio) must not hold the thread:
        // yield, and drive again when polled.
        self.park(me, cx);
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Waits: `me` holds the reactor registration now, and its task is woken with its news.
    fn park(&mut self, me: Waiter, cx: &mut TaskContext<'_>) {
        self.reader = Some(me);
        self.set_waiting(me, true);
        if let Some(waker) = self.waker_of(me) {
            match waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
    }

    /// `me` stops waiting, with `v`: it hands the registration on.
    fn rest<T>(&mut self, me: Waiter, v: T) -> T {
        if let Some(waker) = self.waker_of(me) {
            *waker = None;
        }
        self.set_waiting(me, false);
        self.hand_on(me);
        v
    }

    /// Hands the registration on: if `me` held it, or if it was handed to `me`, which stopped
    /// without driving, wake another waiting task: preferably one with nothing arrived for it,
    /// which drives when polled.
    fn hand_on(&mut self, me: Waiter) {
        if self.reader.is_some_and(|r| r != me) {
            return;
        }
        self.reader = None;
        let next = self
            .pending
            .values_mut()
            .flat_map(|slot| {
                let news = slot.has_news();
                let sender = slot.stream.as_mut().map(|s| (false, &mut s.send_waker));
                [Some((news, &mut slot.waker)), sender].into_iter().flatten()
            })
            .filter(|(_, w)| w.is_some())
            .min_by_key(|(news, _)| *news)
            .and_then(|(_, w)| w.take());
        self.to_wake.extend(next);
    }

    /// The connection is gone: descriptor first, then the connection; every call fails with
    /// `UNAVAILABLE`.
    fn lose(&mut self, why: &dyn std::fmt::Display) {
        if self.conn.is_none() {
            return;
        }
        self.fd = None;
        self.conn = None;
        self.backlog.clear();
        self.check = None;
        self.lost = Some(why.to_string());
        for outcome in self.core.lost() {
            if let Outcome::Failed { id, headers, .. } = outcome {
                self.end(id, Err(self.lost_status()), headers);
            }
        }
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
            Ok(Some(ClientEvent::Ended(Outcome::Finished { id, trailers, .. }))) => {
                self.end(id, Ok(trailers), Metadata::new());
            }
            Ok(Some(ClientEvent::Ended(Outcome::Failed {
                id, status, headers, ..
            }))) => self.end(id, Err(status), headers),
            Ok(Some(ClientEvent::Aborted(outcome, cancel))) => {
                self.backlog.push_back((cancel, Encoded::default()));
                if let Outcome::Failed {
                    id, status, headers, ..
                } = outcome
                {
                    self.end(id, Err(status), headers);
                }
            }
            Ok(Some(ClientEvent::Headers { id, metadata })) => {
                if let Some((slot, stream)) = stream_of(&mut self.pending, id) {
                    stream.headers = Some(metadata);
                    self.to_wake.extend(slot.take());
                }
            }
            Ok(Some(ClientEvent::Message { id })) => {
                if let Some((slot, stream)) = stream_of(&mut self.pending, id) {
                    stream.headers.get_or_insert_default();
                    let len = frame.window_len();
                    stream.messages.push_back((frame, len));
                    self.to_wake.extend(slot.take());
                }
            }
            Ok(Some(ClientEvent::Window { id })) => {
                if let Some((_, stream)) = stream_of(&mut self.pending, id) {
                    self.to_wake.extend(stream.send_waker.take());
                }
            }
            // The late answer of a call that ended here.
            Ok(None) => {}
            Err(e) => self.lose(&format_args!("RPC protocol: {e}")),
        }
    }

    /// Sends the backlog, flushes, drains `try_recv` until `None` (handing out what arrived),
    /// then registers with the reactor: read interest always, write interest over TCP while
    /// frames wait (`blocked`: a waiter's frame was refused), the earliest deadline. Returns
    /// whether a readiness was found set (and cleared): the caller goes round again.
    fn drive(&mut self, cx: &mut TaskContext<'_>, blocked: bool) -> bool {
        let now = Instant::now();
        if self.core.next_deadline().is_some_and(|at| at <= now) {
            self.expire(now);
        }
        if !self.backlog.is_empty() {
            self.send_backlog();
        }
        if self.conn.as_mut().is_some_and(|c| c.has_unsent()) {
            self.flush();
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
        if !self.backlog.is_empty() {
            // Cancels of calls the server broke.
            self.send_backlog();
        }
        self.detach_held();
        // Copying held frames dropped them: the acknowledgements they owe go out now (the peer
        // may be waiting for those credits, and nothing else would publish them).
        if self.conn.as_mut().is_some_and(|c| c.has_unsent()) {
            self.flush();
        }
        let mut again = self.poll_deadline(cx);
        let (Some(fd), Some(conn)) = (self.fd.as_ref(), self.conn.as_mut()) else {
            return false;
        };
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
                if blocked || conn.has_unsent() || !self.backlog.is_empty() {
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
            // Its descriptor is readable for datagrams, due timers and room to send alike.
            TransportKind::Udp | TransportKind::Xdp => {}
        }
        if let Some(e) = failed {
            self.lose(&e);
            return false;
        }
        again
    }

    /// Registers the timer of the earliest deadline; `true` if it fired (its calls expired).
    fn poll_deadline(&mut self, cx: &mut TaskContext<'_>) -> bool {
        let Some(at) = self.core.next_deadline() else {
            self.deadline = None;
            return false;
        };
        if self.deadline.as_ref().is_none_or(|(armed, _)| *armed != at) {
            self.deadline = Some((at, Box::pin(::tokio::time::sleep_until(at.into()))));
        }
        let Some((_, timer)) = &mut self.deadline else {
            return false;
        };
        if timer.as_mut().poll(cx).is_pending() {
            return false;
        }
        // Due by the timer's clock: expire it even if `Instant::now()` lags.
        self.deadline = None;
        self.expire(Instant::now().max(at));
        true
    }
}

/// Stream `id`'s slot in `pending`: its waker and its stream state.
fn stream_of(
    pending: &mut HashMap<CallId, Slot>,
    id: CallId,
) -> Option<(&mut Option<Waker>, &mut StreamSlot)> {
    let slot = pending.get_mut(&id)?;
    Some((&mut slot.waker, slot.stream.as_deref_mut()?))
}

/// Registers a duplicate of the connection's descriptor with the reactor: a TCP socket for
/// reading and writing, a shared-memory doorbell (an eventfd, always writable) or a UDP
/// connection's epoll set for reading.
pub(super) fn register(conn: &Conn) -> std::io::Result<AsyncFd<OwnedFd>> {
    let interest = match conn.kind() {
        TransportKind::Tcp => Interest::READABLE | Interest::WRITABLE,
        TransportKind::Shm | TransportKind::Udp | TransportKind::Xdp => Interest::READABLE,
    };
    super::register_fd(conn.as_fd().try_clone_to_owned()?, interest)
}

/// The requests of a stream opened with [`AsyncChannel::open`]: each [`send`](Self::send)
/// waits for the server's window, then for the transport to write the message;
/// [`end`](Self::end) half-closes. Dropping it half-closes too.
///
/// To write many messages together (one system call for a batch, as the server's session
/// task writes its handlers' sends), [`feed`](Self::feed) them: a feed resolves once the
/// transport has *taken* its message, which is written when the reader parked on the
/// connection (a response stream or another call waiting, woken by the feed) runs, or with
/// the next wait on the channel, the next feed that fills the transport's batch, or the next
/// [`send`](Self::send), [`flush`](Self::flush) or [`end`](Self::end). A task that feeds and
/// then waits for something other than this channel calls `flush` first (as with
/// `futures`' `SinkExt::feed`).
///
/// Once the call is over, sends fail: with the status the call failed with,
/// `FAILED_PRECONDITION` if the server ended it with OK or after [`end`](Self::end),
/// `CANCELLED` if the [`ResponseStream`] was dropped. A send dropped after its message took its
/// place in the window but before the transport took it (the connection was full) cancels the
/// call.
pub struct RequestSink {
    inner: Rc<RefCell<Inner>>,
    id: CallId,
    /// `end` was called.
    ended: bool,
}

impl std::fmt::Debug for RequestSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestSink")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl RequestSink {
    /// Sends `msg` (serialize-and-send: its header segment is written into the transport, its
    /// zero-copy values are referenced) once the window has room, and resolves once it is
    /// written: [`feed`](Self::feed), then [`flush`](Self::flush).
    pub async fn send(&mut self, msg: &impl Outgoing) -> Result<(), Status> {
        self.feed(msg).await?;
        self.flush().await
    }

    /// Hands `msg` to the transport once the window has room, to be written with the messages
    /// fed after it (see the type's docs for when).
    pub async fn feed(&mut self, msg: &impl Outgoing) -> Result<(), Status> {
        self.send_out(Out::Message(msg)).await
    }

    /// Sends a raw payload once the window has room, and resolves once it is written.
    pub async fn send_payload(&mut self, payload: Payload<'_>) -> Result<(), Status> {
        self.feed_payload(payload).await?;
        self.flush().await
    }

    /// Hands a raw payload to the transport once the window has room (see
    /// [`feed`](Self::feed)).
    pub async fn feed_payload(&mut self, payload: Payload<'_>) -> Result<(), Status> {
        self.send_out(Out::Payload(payload)).await
    }

    /// Writes the messages fed so far, resolving once the transport has written them.
    pub async fn flush(&mut self) -> Result<(), Status> {
        let me = Waiter {
            id: self.id,
            sender: true,
        };
        wait_for(&self.inner, me, |inner| {
            if inner.conn.is_none() {
                return Step::Done(Err(inner.lost_status()));
            }
            match inner.flushed() {
                true => Step::Done(Ok(())),
                false => Step::Wait { blocked: true },
            }
        })
        .await
    }

    /// Half-closes: the server's request stream ends after the messages sent. Resolves once
    /// the transport wrote it; `Ok` as well if the call is already over.
    pub async fn end(&mut self) -> Result<(), Status> {
        if std::mem::replace(&mut self.ended, true) {
            return Ok(());
        }
        {
            let mut inner = self.inner.borrow_mut();
            if inner.conn.is_none() {
                return Err(inner.lost_status());
            }
            match inner.core.end(self.id) {
                Some(meta) => inner.backlog.push_back((meta, Encoded::default())),
                None => return Ok(()),
            }
        }
        self.flush().await
    }

    async fn send_out(&mut self, out: Out<'_>) -> Result<(), Status> {
        if self.ended {
            return Err(Status::new(
                Code::FailedPrecondition,
                "the stream is half-closed: no message goes after its end",
            ));
        }
        let mut sending = Sending {
            waiting: Waiting {
                inner: &self.inner,
                me: Waiter {
                    id: self.id,
                    sender: true,
                },
                done: false,
            },
            owed: None,
        };
        poll_fn(|cx| sending.poll(cx, out)).await
    }
}

impl Drop for RequestSink {
    /// Half-closes if [`end`](Self::end) was not called, and lets go of the stream's slot.
    fn drop(&mut self) {
        let Ok(mut guard) = self.inner.try_borrow_mut() else {
            return;
        };
        let inner = &mut *guard;
        if !self.ended && inner.conn.is_some() {
            if let Some(meta) = inner.core.end(self.id) {
                inner.push_control(meta, Encoded::default());
            }
        }
        inner.drop_handle(Waiter {
            id: self.id,
            sender: true,
        });
        wake_after(guard);
    }
}

/// One send of a [`RequestSink`] in progress.
struct Sending<'s> {
    waiting: Waiting<'s>,
    /// The `Meta` the window gave the message, while the transport has not taken it.
    owed: Option<Meta>,
}

impl Sending<'_> {
    fn poll(&mut self, cx: &mut TaskContext<'_>, out: Out<'_>) -> Poll<Result<(), Status>> {
        let mut guard = self.waiting.inner.borrow_mut();
        let (me, owed) = (self.waiting.me, &mut self.owed);
        let result = guard.wait(me, cx, |inner| {
            if inner.conn.is_none() {
                *owed = None;
                return Step::Done(Err(inner.lost_status()));
            }
            if owed.is_none() {
                inner.send_backlog();
                if !inner.backlog.is_empty() {
                    // What is queued before it goes first.
                    return Step::Wait { blocked: true };
                }
                let Some(conn) = inner.conn.as_ref() else {
                    return Step::Done(Err(inner.lost_status()));
                };
                match inner.core.send(me.id, out.window_len(conn)) {
                    Ok(meta) => *owed = Some(meta),
                    Err(Blocked::Window) => return Step::Wait { blocked: false },
                    Err(Blocked::Ended) => return Step::Done(Err(inner.over(me.id))),
                }
            }
            let (Some(meta), Some(conn)) = (*owed, inner.conn.as_mut()) else {
                return Step::Done(Err(inner.lost_status()));
            };
            match out.send(conn, meta) {
                Ok(()) => {
                    *owed = None;
                    inner.flush_soon(me);
                    Step::Done(Ok(()))
                }
                Err(TransportError::WouldBlock) => Step::Wait { blocked: true },
                // About this frame alone: the connection stays usable, the call fails.
                Err(e) if frame_alone(&e) => {
                    *owed = None;
                    let status = unsent_request(&e);
                    inner.cancel(me.id, status.clone());
                    Step::Done(Err(status))
                }
                Err(e) => {
                    *owed = None;
                    inner.lose(&e);
                    Step::Done(Err(inner.lost_status()))
                }
            }
        });
        self.waiting.done = result.is_ready();
        wake_after(guard);
        result
    }
}

impl Drop for Sending<'_> {
    /// A message that took its place in the window and never went leaves the server's
    /// window off by it: the call is cancelled. (Its `Waiting` then stops waiting.)
    fn drop(&mut self) {
        if self.owed.is_none() {
            return;
        }
        let Ok(mut guard) = self.waiting.inner.try_borrow_mut() else {
            return;
        };
        let status = Status::new(
            Code::Cancelled,
            "a send was dropped before the transport took its message",
        );
        guard.cancel(self.waiting.me.id, status);
        wake_after(guard);
    }
}

/// A wait of `me` in progress (a future's): dropped before it is `done`, it stops waiting and
/// hands the registration on, so that no other waiter is left with no one registered.
struct Waiting<'s> {
    inner: &'s RefCell<Inner>,
    me: Waiter,
    done: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Ok(mut guard) = self.inner.try_borrow_mut() {
            guard.rest(self.me, ());
            wake_after(guard);
        }
    }
}

/// Waits as `me` until `step` is done (see [`Inner::wait`]); dropped before, it stops waiting.
async fn wait_for<T>(inner: &RefCell<Inner>, me: Waiter, mut step: impl FnMut(&mut Inner) -> Step<T>) -> T {
    let mut waiting = Waiting {
        inner,
        me,
        done: false,
    };
    poll_fn(|cx| {
        let mut guard = waiting.inner.borrow_mut();
        let result = guard.wait(me, cx, &mut step);
        waiting.done = result.is_ready();
        wake_after(guard);
        result
    })
    .await
}

/// The responses of a stream opened with [`AsyncChannel::open`], in order, each read in place
/// where it arrived ([`Response::view`]; a message's own headers and trailers are empty: the
/// stream's are [`headers`](Self::headers) and [`trailers`](Self::trailers)). A
/// [`futures_core::Stream`]; or call [`message`](Self::message). It ends with `None` after the
/// server's OK, or yields the status the call failed with (its trailers in
/// [`Status::metadata`]), then `None`.
///
/// Taking a message grants the server its window back; messages not taken stay buffered (at
/// most a window of them), and the other calls of the channel go on. Dropping it before its
/// end cancels the call.
///
/// Like a call future, a wait left pending and never polled again may hold the registration
/// the channel's other calls wait on: [`message`](Self::message) hands it on when its future
/// is dropped (use it in a `select!`); a `poll_next` that returned `Pending` holds it until the
/// stream is polled again or dropped.
pub struct ResponseStream<M> {
    r: Responses,
    _message: PhantomData<fn() -> M>,
}

/// A [`ResponseStream`]'s state, whatever its message type.
struct Responses {
    inner: Rc<RefCell<Inner>>,
    id: CallId,
    limits: Limits,
    /// The server's headers, once taken from the slot.
    headers: Option<Metadata>,
    /// The trailers of an OK end.
    trailers: Option<Metadata>,
    /// It yielded its end or its failure.
    over: bool,
}

impl<M> std::fmt::Debug for ResponseStream<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream")
            .field("id", &self.r.id)
            .finish_non_exhaustive()
    }
}

/// What a response stream's wait found.
enum Arrived {
    Message(Frame),
    Finished(Metadata),
    Failed(Status),
}

impl<M> ResponseStream<M> {
    /// The same stream, its messages read as `N` (what generated code does with the method's
    /// response type).
    pub fn typed<N: Message<'static>>(self) -> ResponseStream<N> {
        if let Ok(mut inner) = self.r.inner.try_borrow_mut() {
            if let Some((_, stream)) = stream_of(&mut inner.pending, self.r.id) {
                stream.desc = Some(N::desc());
            }
        }
        ResponseStream {
            r: self.r,
            _message: PhantomData,
        }
    }

    /// The next message, `None` after the server's OK, or the status the call failed with.
    pub async fn message(&mut self) -> Result<Option<Response<M>>, Status> {
        let inner = Rc::clone(&self.r.inner);
        let me = Waiter {
            id: self.r.id,
            sender: false,
        };
        let mut waiting = Waiting {
            inner: &inner,
            me,
            done: false,
        };
        poll_fn(|cx| {
            let item = self.poll_message(cx);
            waiting.done = item.is_ready();
            item
        })
        .await
        .transpose()
    }

    /// The server's headers (gRPC's initial metadata), once they arrived: they come before the
    /// first message or the end (empty if the server sent none).
    pub async fn headers(&mut self) -> &Metadata {
        self.r.headers().await
    }

    /// The trailers the server ended the stream with, once it ended with OK (a failure's are
    /// in its [`Status::metadata`]).
    pub fn trailers(&self) -> Option<&Metadata> {
        self.r.trailers.as_ref()
    }

    fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Result<Response<M>, Status>>> {
        let limits = self.r.limits;
        self.r.poll_next(cx).map(|item| {
            item.map(|item| item.map(|frame| Response::new(frame, limits, Metadata::new(), Metadata::new())))
        })
    }
}

impl Responses {
    /// The server's headers (gRPC's initial metadata), once they arrived: they come before the
    /// first message or the end (empty if the server sent none).
    async fn headers(&mut self) -> &Metadata {
        if self.headers.is_none() {
            let me = Waiter {
                id: self.id,
                sender: false,
            };
            let headers = wait_for(&self.inner, me, |inner| {
                let lost = inner.conn.is_none();
                match stream_of(&mut inner.pending, me.id).map(|(_, s)| s.headers.take()) {
                    Some(Some(headers)) => Step::Done(headers),
                    _ if lost => Step::Done(Metadata::new()),
                    _ => Step::Wait { blocked: false },
                }
            })
            .await;
            self.headers = Some(headers);
        }
        self.headers.get_or_insert_default()
    }

    fn poll_next(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Result<Frame, Status>>> {
        if self.over {
            return Poll::Ready(None);
        }
        let me = Waiter {
            id: self.id,
            sender: false,
        };
        let inner = Rc::clone(&self.inner);
        let mut guard = inner.borrow_mut();
        let headers = &mut self.headers;
        let result = guard.wait(me, cx, |inner| {
            let Some((_, stream)) = stream_of(&mut inner.pending, me.id) else {
                return Step::Done(Arrived::Failed(inner.lost_status()));
            };
            if headers.is_none() {
                *headers = stream.headers.take();
            }
            if let Some((frame, len)) = stream.messages.pop_front() {
                if let Some((meta, raw)) = inner.core.consumed(me.id, len) {
                    inner.push_control(meta, Encoded::bytes(&raw));
                }
                return Step::Done(Arrived::Message(frame));
            }
            match &stream.end {
                Some(Ok(trailers)) => Step::Done(Arrived::Finished(trailers.clone())),
                Some(Err(status)) => Step::Done(Arrived::Failed(status.clone())),
                None if inner.conn.is_none() => Step::Done(Arrived::Failed(inner.lost_status())),
                None => Step::Wait { blocked: false },
            }
        });
        wake_after(guard);
        let Poll::Ready(arrived) = result else {
            return Poll::Pending;
        };
        Poll::Ready(match arrived {
            Arrived::Message(frame) => Some(Ok(frame)),
            Arrived::Finished(trailers) => {
                self.over = true;
                self.trailers = Some(trailers);
                None
            }
            Arrived::Failed(status) => {
                self.over = true;
                Some(Err(status))
            }
        })
    }
}

impl<M> futures_core::Stream for ResponseStream<M> {
    type Item = Result<Response<M>, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_message(cx)
    }
}

impl Drop for Responses {
    /// Cancels the call if it is not over, and lets go of the stream's slot.
    fn drop(&mut self) {
        let Ok(mut guard) = self.inner.try_borrow_mut() else {
            return;
        };
        let status = Status::new(
            Code::Cancelled,
            "the response stream was dropped: the call is cancelled",
        );
        guard.cancel(self.id, status);
        guard.drop_handle(Waiter {
            id: self.id,
            sender: false,
        });
        wake_after(guard);
    }
}

impl Inner {
    /// Ends stream `id` here, if it is in flight, with `status` (its handles see it), and tells
    /// the server.
    fn cancel(&mut self, id: CallId, status: Status) {
        if let Some((cancel, ())) = self.core.cancel(id) {
            self.end(id, Err(status), Metadata::new());
            if self.conn.is_some() {
                self.push_control(cancel, Encoded::default());
            }
        }
    }

    /// Why stream `id`'s sink can send no more: the call is over.
    fn over(&self, id: CallId) -> Status {
        let end = self
            .pending
            .get(&id)
            .and_then(|s| s.stream.as_ref()?.end.as_ref());
        match end {
            Some(Err(status)) => status.clone(),
            Some(Ok(_)) => Status::new(Code::FailedPrecondition, "the server has ended the stream"),
            None => Status::new(Code::Cancelled, "the call is over"),
        }
    }

    /// A stream's handle is dropped: it stops waiting, and the slot goes with the last handle.
    fn drop_handle(&mut self, me: Waiter) {
        self.rest(me, ());
        if let Some(slot) = self.pending.get_mut(&me.id) {
            if let Some(stream) = slot.stream.as_mut() {
                stream.handles -= 1;
                if stream.handles == 0 {
                    self.pending.remove(&me.id);
                }
            }
        }
    }
}

/// Releases the borrow, then wakes the tasks queued meanwhile.
fn wake_after(mut guard: std::cell::RefMut<'_, Inner>) {
    let to_wake = std::mem::take(&mut guard.to_wake);
    drop(guard);
    to_wake.into_iter().for_each(Waker::wake);
}
