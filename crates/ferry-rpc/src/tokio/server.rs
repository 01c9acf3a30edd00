//! [`AsyncServer`]: [`AsyncServices`] served on the current thread's `LocalSet`, one task per
//! session, one task per call.
//!
//! # One session
//!
//! A session task owns its connection (non-blocking) and the [`AsyncFd`] of a duplicate of its
//! descriptor. Each time it runs it:
//!
//! 1. collects the answers of handler tasks that finished (a [`JoinSet`]: a panic is a
//!    `JoinError`, answered `INTERNAL`; an aborted task answers nothing);
//! 2. ends the calls whose deadline passed (`session::Server` answers `DEADLINE_EXCEEDED`; the
//!    handler task is aborted);
//! 3. hands the answers waiting in its backlog to the transport;
//! 4. if the backlog is empty, reads up to `frames_per_turn` frames (`try_recv`, which arms the
//!    shared-memory doorbell when it finds none): requests start handler tasks (or are refused:
//!    `UNAVAILABLE` while draining, `UNIMPLEMENTED` (unknown method, or a call of the wrong
//!    shape), `RESOURCE_EXHAUSTED` at the session's bound), cancel frames abort them (a
//!    stream's handles fail instead), a stream's frames go to its handles;
//! 5. flushes, then registers for what it waits on: readable, writable (TCP, while answers
//!    wait), a 1 ms retry (shared memory, while answers wait for credits), the next deadline.
//!
//! # Streams
//!
//! An open of a streaming method starts [`AsyncService::stream`](super::AsyncService::stream)'s
//! task with a [`RequestStream`] and a [`ResponseSink`]: handles on the session (it sits in an
//! `Rc<RefCell<_>>`, which they reach when their task runs, never while the session's task
//! holds it). The session buffers each stream's messages as they come (at most a window:
//! reading never stops for a slow handler; over shared memory the frames of a handler that
//! is not waiting for them are copied, see `Frame::detach`), and wakes the handler's waits on
//! messages, the client's end and its window grants. A send writes its message into the
//! transport from the handler's task (a Ferry message as it is, serialize-and-send) once the
//! window has room and the backlog is empty; the session flushes. When the call ends first
//! (cancel, deadline, a broken stream) the handles fail with its status: a handler waiting on
//! them sees it, one busy elsewhere is aborted (as a unary handler is); its answer is dropped.
//! Every stream ends through `dispatch` (`end_stream`, `end_call`).
//!
//! # Backpressure
//!
//! Answers are sent without blocking; one the transport will not take goes to the session's
//! backlog, and while the backlog is not empty the session reads no requests. A client that
//! never reads therefore stalls its own session (its requests wait in its socket, or for
//! shared-memory credits) and the server holds at most its calls in progress
//! ([`ServerConfig::max_in_flight`](crate::session::ServerConfig)) answers for it.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::task::{AbortHandle, Id, JoinError, JoinSet};
use ::tokio::time::Sleep;
use ferry_buf::Pool;
use ferry_net::PeerIdentity;
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Outgoing};

use super::client::register;
use super::{AsyncCall, AsyncRequest, AsyncServices, CallMetadata, Out};
use crate::conn::{Conn, Frame, Listener, SHM_CHECK, TransportKind, frame_alone};
use crate::dispatch::{end_call, end_stream, panicked, refusal, shape_refusal};
use crate::event_loop::LoopConfig;
use crate::limits::Admission;
use crate::metadata::Metadata;
use crate::metrics::Metrics;
use crate::service::{Encoded, MethodInfo, ResponseMetadata};
use crate::session::{Event, Server};
use crate::status::{Code, Status, unsent_response};
use crate::{Addr, CallId, ServerError};

/// How soon a shared-memory session whose answers wait for credits tries again (credits come
/// back in the peer's ring entries, which ring the doorbell only while this side reads).
const SHM_RETRY: Duration = Duration::from_millis(1);

/// How long closing sessions get to write what they hold before they are dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// A server of [`AsyncServices`] on the current thread's `LocalSet`.
///
/// Every session is a local task on the thread that runs [`run`](Self::run), and every call a
/// local task too (the handler's future), aborted when the client cancels or the call's
/// deadline passes. TCP sessions share one pool (`config.pool`); each shared-memory session
/// gets a shared pool of its own (`config.conn.shm_pool`). `config.server` bounds each
/// session's calls in progress, `config.limits` is what requests are read with,
/// `config.frames_per_turn` how many frames a session reads before it lets other tasks run,
/// and `config.tracing` puts a `tracing` span around each handler; `config.spin` and
/// `config.client` do not apply (the reactor waits, and this server calls no one).
///
/// `config.connections` ([`ConnLimits`](crate::ConnLimits)) applies as in the event loop:
/// past `max_connections` a peer is accepted and closed at once, a session with nothing in
/// progress that receives nothing for `idle_timeout` is closed; both, and the handshakes
/// that time out or fail, are counted in [`metrics`](Self::metrics).
pub struct AsyncServer {
    addrs: Vec<Addr>,
    listeners: Vec<Listener>,
    services: AsyncServices,
    config: LoopConfig,
    pool: Pool,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for AsyncServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncServer")
            .field("addrs", &self.addrs)
            .field("services", &self.services)
            .finish_non_exhaustive()
    }
}

impl AsyncServer {
    /// Binds every address (`tcp://127.0.0.1:0` picks a port: see [`addrs`](Self::addrs)).
    pub fn bind(
        services: AsyncServices,
        addrs: &[&str],
        config: LoopConfig,
    ) -> Result<AsyncServer, ServerError> {
        let mut listeners = Vec::with_capacity(addrs.len());
        let mut bound = Vec::with_capacity(addrs.len());
        for a in addrs {
            let listener = Listener::bind(&a.parse()?, &config.conn)?;
            bound.push(listener.local_addr()?);
            listeners.push(listener);
        }
        let pool = config.conn.loop_pool(&config.pool)?;
        let methods: Vec<(&str, u16)> = services.methods.values().map(|(_, i)| (i.path, i.id)).collect();
        let metrics = Arc::new(Metrics::new(&methods));
        metrics.add_pool("tokio", pool.clone());
        Ok(AsyncServer {
            addrs: bound,
            listeners,
            services,
            config,
            pool,
            metrics,
        })
    }

    /// The server's metrics: open connections, and the connections closed of its own accord
    /// by reason ([`Metrics::closed_count`]), the pool's bytes.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The addresses it listens on.
    pub fn addrs(&self) -> &[Addr] {
        &self.addrs
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets calls in progress finish
    /// for at most `drain`, and closes every session. Call inside a `LocalSet`.
    ///
    /// While draining, sessions stay open and answer new requests with `UNAVAILABLE`. Dropping
    /// the future instead closes every session at once (their clients' calls fail with
    /// `UNAVAILABLE`).
    pub async fn run(self, shutdown: impl Future<Output = ()>, drain: Duration) -> Result<(), ServerError> {
        let AsyncServer {
            addrs: _,
            listeners,
            services,
            config,
            pool,
            metrics,
        } = self;
        let mut accepting = Vec::with_capacity(listeners.len());
        for listener in listeners {
            let fd = listener
                .as_fd()
                .try_clone_to_owned()
                .and_then(|fd| super::register_fd(fd, Interest::READABLE))
                .map_err(|source| ServerError::Io {
                    what: "registering a listener with the tokio reactor",
                    source,
                })?;
            accepting.push(Accepting { fd, listener });
        }
        let shared = Rc::new(Shared {
            services,
            config,
            pool,
            draining: Cell::new(false),
            closing: Cell::new(false),
            busy: Cell::new(0),
            drained: RefCell::new(None),
            sessions: RefCell::new(HashMap::new()),
            next_session: Cell::new(0),
            metrics,
        });
        let mut sessions: JoinSet<()> = JoinSet::new();

        {
            let accept = poll_fn(|cx| {
                for a in &accepting {
                    a.poll_accept(cx, &shared, &mut sessions);
                }
                // Finished sessions leave the set.
                while let Poll::Ready(Some(_)) = sessions.poll_join_next(cx) {}
                Poll::<()>::Pending
            });
            ::tokio::select! {
                () = shutdown => {}
                () = accept => {}
            }
        }

        // Stop accepting: each listener's registration goes before the listener.
        drop(accepting);
        shared.draining.set(true);
        let _ = ::tokio::time::timeout(
            drain,
            poll_fn(|cx| {
                while let Poll::Ready(Some(_)) = sessions.poll_join_next(cx) {}
                if shared.busy.get() == 0 {
                    return Poll::Ready(());
                }
                *shared.drained.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }),
        )
        .await;

        // Close: each session writes what it holds (without waiting) and ends.
        shared.closing.set(true);
        let wakers: Vec<Waker> = shared.sessions.borrow_mut().drain().map(|(_, w)| w).collect();
        wakers.into_iter().for_each(Waker::wake);
        let _ = ::tokio::time::timeout(CLOSE_GRACE, async {
            while sessions.join_next().await.is_some() {}
        })
        .await;
        sessions.shutdown().await;
        Ok(())
    }
}

/// What a server's sessions share (all on one thread).
struct Shared {
    services: AsyncServices,
    config: LoopConfig,
    /// The TCP sessions' pool.
    pool: Pool,
    /// New requests are refused with `UNAVAILABLE`.
    draining: Cell<bool>,
    /// Sessions end.
    closing: Cell<bool>,
    /// Calls in progress and answers not yet written, over all sessions.
    busy: Cell<usize>,
    /// `run`, waiting for `busy` to reach zero.
    drained: RefCell<Option<Waker>>,
    /// Each session's task, to wake it when closing.
    sessions: RefCell<HashMap<u64, Waker>>,
    next_session: Cell<u64>,
    /// Where the connection limits count (see [`AsyncServer::metrics`]).
    metrics: Arc<Metrics>,
}

/// A listener and the registration of a duplicate of its descriptor (dropped first).
struct Accepting {
    fd: AsyncFd<OwnedFd>,
    listener: Listener,
}

impl Accepting {
    /// Accepts every connection waiting once the listener is readable; registers for the next.
    /// The server's future is polled on every wake of its thread's tasks, so nothing is tried
    /// before the reactor says a peer waits (an accept per wake was a quarter of a streaming
    /// host's time).
    fn poll_accept(&self, cx: &mut TaskContext<'_>, shared: &Rc<Shared>, sessions: &mut JoinSet<()>) {
        loop {
            let mut ready = match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(ready)) => ready,
                // The reactor cannot watch it: nothing more will be accepted here.
                Poll::Ready(Err(_)) | Poll::Pending => return,
            };
            loop {
                let c = &shared.config;
                match crate::limits::accept(
                    &self.listener,
                    &shared.pool,
                    &c.conn,
                    &c.connections,
                    &shared.metrics,
                    || c.conn.shm_pool(),
                ) {
                    Ok(Some(Admission::Refused)) => {}
                    Ok(Some(Admission::Admitted(accepted, admitted))) => {
                        let id = shared.next_session.get();
                        shared.next_session.set(id + 1);
                        let shared = Rc::clone(shared);
                        // A shared-memory setup is the task's first await: a peer that says
                        // nothing holds its own task only, until the setup's deadline. The
                        // task holds the connection's place under the limit.
                        sessions.spawn_local(async move {
                            let _admitted = admitted;
                            match super::setup(accepted).await {
                                Ok(conn) => serve(conn, shared, id).await,
                                Err(e) => {
                                    shared.metrics.closed(crate::limits::handshake_end(&e));
                                    eprintln!("ferry-rpc: a shared-memory peer failed its setup: {e}");
                                }
                            }
                        });
                    }
                    // Cleared once a `try_accept` found none: one arriving since sets it again.
                    Ok(None) => {
                        ready.clear_ready();
                        break;
                    }
                    // A peer that fails its handshake costs its own connection only; an error
                    // of the listener (out of descriptors) is retried when this task next runs
                    // (at once: it yields first).
                    Err(_) => {
                        cx.waker().wake_by_ref();
                        return;
                    }
                }
            }
        }
    }
}

/// One session's task.
async fn serve(mut conn: Conn, shared: Rc<Shared>, key: u64) {
    conn.set_nonblocking(true);
    let Ok(fd) = register(&conn) else { return };
    // A TLS handshake is this task's first await: a peer that stalls holds its own task only,
    // and at most until the handshake's deadline.
    if let Err(e) = super::handshake(&mut conn, &fd).await {
        shared.metrics.closed(crate::limits::handshake_end(&e));
        eprintln!("ferry-rpc: a TLS connection failed its handshake: {e}");
        return;
    }
    let peer = conn.peer_identity();
    let ctx = shared.config.conn.context(&conn, &shared.pool);
    let session = Rc::new(RefCell::new(Session {
        fd,
        kind: conn.kind(),
        conn,
        ctx,
        core: Server::new(shared.config.server.clone()),
        backlog: VecDeque::new(),
        handlers: JoinSet::new(),
        tasks: HashMap::new(),
        aborts: HashMap::new(),
        deadline: None,
        check: None,
        last_frame: Instant::now(),
        idle: None,
        dirty: false,
        busy: 0,
        shared,
        key,
        streams: HashMap::new(),
        senders: Vec::new(),
        waker: None,
        broken: false,
        me: Weak::new(),
        peer,
    }));
    session.borrow_mut().me = Rc::downgrade(&session);
    // Handler tasks reach the session through their stream handles, never while this borrow is
    // held: they are other tasks of the same thread.
    poll_fn(|cx| session.borrow_mut().poll(cx)).await;
}

/// One session: its connection, its side of the protocol, its handler tasks.
struct Session {
    /// Readiness of a duplicate of the connection's descriptor; declared (dropped) first.
    fd: AsyncFd<OwnedFd>,
    /// The client's certificate identity (TLS with client certificates).
    peer: Option<Arc<PeerIdentity>>,
    conn: Conn,
    kind: TransportKind,
    /// What handlers build responses with (shared memory: the session's own pool).
    ctx: Context,
    core: Server,
    /// Answers the transport would not take yet, oldest first; no requests are read while
    /// any wait.
    backlog: VecDeque<(Meta, Encoded)>,
    /// The handlers' tasks (dropping the set aborts them): a unary call's answer, or a
    /// stream's end (`None`: OK).
    handlers: JoinSet<Answer>,
    /// Each handler task's call, method path and metadata.
    tasks: HashMap<Id, (CallId, &'static str, Rc<CallMetadata>)>,
    aborts: HashMap<CallId, AbortHandle>,
    /// When the earliest call in progress expires, and its timer.
    deadline: Option<(Instant, Pin<Box<Sleep>>)>,
    /// Shared memory: the periodic look (a dead peer rings no doorbell), or the retry of a
    /// backlog waiting for credits.
    check: Option<Pin<Box<Sleep>>>,
    /// When the last frame came (or the session began): what its idle time counts from.
    last_frame: Instant,
    /// The idle timeout's timer while nothing is in progress
    /// ([`ConnLimits::idle_timeout`](crate::ConnLimits::idle_timeout)).
    idle: Option<Pin<Box<Sleep>>>,
    /// Something was queued since the last flush.
    dirty: bool,
    /// This session's part of `Shared::busy`.
    busy: usize,
    shared: Rc<Shared>,
    key: u64,
    /// Each stream in progress, as its handler's handles share it.
    streams: HashMap<CallId, ServerStream>,
    /// Handlers' sends waiting for the backlog to drain (or the transport to take more).
    senders: Vec<Waker>,
    /// The session task's waker: handles that queue frames wake it to flush them.
    waker: Option<Waker>,
    /// A handle's send found the connection broken: the session closes.
    broken: bool,
    /// This session, for the handles of the streams it starts.
    me: Weak<RefCell<Session>>,
}

/// What a handler task ends with: a unary call's answer, or a stream's end (`Ok(None)`: OK).
type Answer = Result<Option<Encoded>, Status>;

/// A stream in progress, as its session and its handler's [`RequestStream`] and
/// [`ResponseSink`] share it.
struct ServerStream {
    /// Messages received and not yet taken by the handler (at most a window of them), each
    /// with what it counts against the window.
    inbox: VecDeque<(Frame, usize)>,
    /// The handler waits for a message (it polled and found none, and has not taken one since).
    waiting: bool,
    /// The method's request type (to copy a held shared-memory frame:
    /// [`Frame::detach`](crate::Frame::detach)).
    desc: Option<&'static ferry_wire::MessageDesc<'static>>,
    /// The client sent its end (after what the inbox holds).
    half_closed: bool,
    /// Why the call ended before its handler did (cancelled, deadline, broken by the client):
    /// what the handles answer from then on.
    failed: Option<Status>,
    /// The handler's task waiting for a message.
    recv_waker: Option<Waker>,
    /// The handler's task waiting for the client's window.
    send_waker: Option<Waker>,
    /// Its headers go out before its first message.
    metadata: Rc<CallMetadata>,
}

/// Why a session ends.
struct Closed;

impl Session {
    fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        let result = self.turn(cx);
        self.account();
        match result {
            Ok(Poll::Pending) => {
                if !self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    self.waker = Some(cx.waker().clone());
                }
                let mut sessions = self.shared.sessions.borrow_mut();
                match sessions.get(&self.key) {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => {
                        sessions.insert(self.key, cx.waker().clone());
                    }
                }
                Poll::Pending
            }
            Ok(Poll::Ready(())) | Err(Closed) => Poll::Ready(()),
        }
    }

    /// One pass (see the module docs), repeated while a readiness was found set.
    fn turn(&mut self, cx: &mut TaskContext<'_>) -> Result<Poll<()>, Closed> {
        for _ in 0..super::ROUNDS {
            if self.shared.closing.get() {
                // Best effort: what the transport takes without waiting.
                self.drain_backlog()?;
                let _ = self.conn.flush();
                return Ok(Poll::Ready(()));
            }
            if self.broken {
                return Err(Closed);
            }
            while let Poll::Ready(Some(done)) = self.handlers.poll_join_next_with_id(cx) {
                self.completed(done)?;
            }
            let now = Instant::now();
            if self.core.next_deadline().is_some_and(|at| at <= now) {
                self.expire(now)?;
            }
            self.drain_backlog()?;
            let mut more = false;
            if self.backlog.is_empty() {
                more = self.read(now)?;
                self.detach_held();
                // Again after reading: a `JoinSet` polled while empty keeps no waker, so the
                // first handler started here would end unnoticed.
                while let Poll::Ready(Some(done)) = self.handlers.poll_join_next_with_id(cx) {
                    self.completed(done)?;
                }
            }
            if self.dirty || self.conn.has_unsent() {
                match self.conn.flush() {
                    Ok(()) => self.dirty = false,
                    Err(TransportError::WouldBlock) => {}
                    Err(_) => return Err(Closed),
                }
            }
            if self.backlog.is_empty() && !self.conn.has_unsent() {
                // Handlers' sends waiting for room try again.
                self.senders.drain(..).for_each(Waker::wake);
            }
            if more {
                // The read budget ran out: let other tasks run, then read on.
                cx.waker().wake_by_ref();
                return Ok(Poll::Pending);
            }
            if !self.register(cx)? {
                return Ok(Poll::Pending);
            }
        }
        // Readiness that stays set (a closed state is final in tokio) must not hold the thread.
        cx.waker().wake_by_ref();
        Ok(Poll::Pending)
    }

    /// Registers for what the session waits on; `true` if a readiness was found set (and
    /// cleared), so the caller goes round again.
    fn register(&mut self, cx: &mut TaskContext<'_>) -> Result<bool, Closed> {
        let mut again = false;
        let waiting = !self.backlog.is_empty() || self.conn.has_unsent() || !self.senders.is_empty();
        if self.backlog.is_empty() {
            match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(mut ready)) => {
                    ready.clear_ready();
                    again = true;
                }
                Poll::Ready(Err(_)) => return Err(Closed),
                Poll::Pending => {}
            }
        }
        match self.kind {
            TransportKind::Tcp if waiting => match self.fd.poll_write_ready(cx) {
                Poll::Ready(Ok(mut ready)) => {
                    ready.clear_ready();
                    if let Conn::Tcp(c) = &mut self.conn {
                        // Zero-copy modes: completions show as an error on the socket.
                        c.sender().poll_completions().map_err(|_| Closed)?;
                    }
                    again = true;
                }
                Poll::Ready(Err(_)) => return Err(Closed),
                Poll::Pending => {}
            },
            // UDP: its descriptor is readable for datagrams, due timers and room to send alike.
            TransportKind::Tcp | TransportKind::Udp | TransportKind::Xdp => {}
            TransportKind::Shm => {
                let every = if waiting { SHM_RETRY } else { SHM_CHECK };
                let at = ::tokio::time::Instant::now() + every;
                let check = self
                    .check
                    .get_or_insert_with(|| Box::pin(::tokio::time::sleep_until(at)));
                if check.deadline() > at {
                    check.as_mut().reset(at);
                }
                if check.as_mut().poll(cx).is_ready() {
                    check.as_mut().reset(at);
                    again = true;
                }
            }
        }
        let limits = &self.shared.config.connections;
        let quiet = self.core.in_flight() == 0 && self.backlog.is_empty() && self.streams.is_empty();
        match limits.idle_deadline(self.last_frame).filter(|_| quiet) {
            None => self.idle = None,
            Some(at) => {
                let timer = self
                    .idle
                    .get_or_insert_with(|| Box::pin(::tokio::time::sleep_until(at.into())));
                if timer.deadline() != at.into() {
                    timer.as_mut().reset(at.into());
                }
                if timer.as_mut().poll(cx).is_ready() {
                    self.shared.metrics.closed(crate::Closed::Idle);
                    return Err(Closed);
                }
            }
        }
        match self.core.next_deadline() {
            None => self.deadline = None,
            Some(at) => {
                if self.deadline.as_ref().is_none_or(|(armed, _)| *armed != at) {
                    self.deadline = Some((at, Box::pin(::tokio::time::sleep_until(at.into()))));
                }
                if let Some((_, timer)) = &mut self.deadline {
                    if timer.as_mut().poll(cx).is_ready() {
                        // Due by the timer's clock: expire it even if `Instant::now()` lags.
                        self.deadline = None;
                        self.expire(Instant::now().max(at))?;
                        again = true;
                    }
                }
            }
        }
        Ok(again)
    }

    /// Reads frames until none is left or the budget runs out (`Ok(true)`: more may wait).
    fn read(&mut self, now: Instant) -> Result<bool, Closed> {
        for _ in 0..self.shared.config.frames_per_turn.max(1) {
            if !self.backlog.is_empty() {
                return Ok(false);
            }
            match self.conn.try_recv() {
                Ok(Some(frame)) => self.on_frame(frame, now)?,
                Ok(None) => return Ok(false),
                Err(_) => return Err(Closed),
            }
        }
        Ok(true)
    }

    /// One frame from the client.
    fn on_frame(&mut self, frame: Frame, now: Instant) -> Result<(), Closed> {
        self.last_frame = now;
        let meta = frame.meta();
        let raw = if crate::wire::carries_message(meta.flags) {
            None
        } else {
            frame.bytes()
        };
        match self.core.on_frame(meta, raw, frame.window_len(), now) {
            Ok(None) => Ok(()),
            Ok(Some(Event::Refused { meta, payload, .. })) => self.transmit(meta, Encoded::from_vec(payload)),
            Ok(Some(Event::Cancelled { id })) => {
                self.stop(id, || {
                    Status::new(Code::Cancelled, "the client cancelled the call")
                });
                Ok(())
            }
            Ok(Some(Event::Request {
                id,
                method,
                deadline,
                metadata,
            })) => self.start(id, method, deadline, metadata, Some(frame)),
            Ok(Some(Event::Open {
                id,
                method,
                deadline,
                metadata,
            })) => self.start(id, method, deadline, metadata, None),
            Ok(Some(Event::Aborted { id, meta, payload })) => {
                self.stop(id, || {
                    Status::new(Code::Internal, "the client broke the stream's rules")
                });
                self.transmit(meta, Encoded::from_vec(payload))
            }
            Ok(Some(Event::Message { id })) => {
                if let Some(stream) = self.streams.get_mut(&id) {
                    let len = frame.window_len();
                    stream.inbox.push_back((frame, len));
                    wake(&mut stream.recv_waker);
                }
                Ok(())
            }
            Ok(Some(Event::HalfClosed { id })) => {
                if let Some(stream) = self.streams.get_mut(&id) {
                    stream.half_closed = true;
                    wake(&mut stream.recv_waker);
                }
                Ok(())
            }
            Ok(Some(Event::Window { id })) => {
                if let Some(stream) = self.streams.get_mut(&id) {
                    wake(&mut stream.send_waker);
                }
                Ok(())
            }
            // The peer broke the protocol: close.
            Err(_) => Err(Closed),
        }
    }

    /// Refuses a call (a unary `request`, or an open when it is `None`), or starts its
    /// handler's task.
    fn start(
        &mut self,
        id: CallId,
        method: u16,
        deadline: Option<Instant>,
        metadata: Metadata,
        request: Option<Frame>,
    ) -> Result<(), Closed> {
        let shared = Rc::clone(&self.shared);
        let found = shared.services.methods.get(&method);
        let refused = refusal(shared.draining.get(), found.is_some(), method)
            .or_else(|| found.and_then(|(_, info)| shape_refusal(info, request.is_none())));
        let Some((service, info)) = found.filter(|_| refused.is_none()) else {
            let status = refused.expect("refused when not found");
            return self.end(id, Err(status), ResponseMetadata::default());
        };
        let metadata = Rc::new(CallMetadata {
            request: metadata,
            response: RefCell::default(),
        });
        let call = AsyncCall {
            method,
            id,
            deadline,
            ctx: self.ctx.clone(),
            metadata: Rc::clone(&metadata),
            peer: self.peer.clone(),
        };
        let limits = shared.config.limits;
        match request {
            Some(frame) => {
                let request = AsyncRequest {
                    frame,
                    limits,
                    _message: PhantomData,
                };
                let future = service.call(call, request);
                let handle = self.spawn(id, info, metadata, async move { future.await.map(Some) });
                self.aborts.insert(id, handle);
            }
            None => {
                self.streams.insert(
                    id,
                    ServerStream {
                        inbox: VecDeque::new(),
                        waiting: false,
                        desc: info.request,
                        half_closed: false,
                        failed: None,
                        recv_waker: None,
                        send_waker: None,
                        metadata: Rc::clone(&metadata),
                    },
                );
                let requests = RequestStream {
                    session: self.me.clone(),
                    id,
                    limits,
                    over: false,
                    _message: PhantomData,
                };
                let responses = ResponseSink {
                    session: self.me.clone(),
                    id,
                };
                let future = service.stream(call, requests, responses);
                let handle = self.spawn(id, info, metadata, async move { future.await.map(|()| None) });
                self.aborts.insert(id, handle);
            }
        }
        Ok(())
    }

    /// Starts a handler's task.
    fn spawn(
        &mut self,
        id: CallId,
        info: &MethodInfo,
        metadata: Rc<CallMetadata>,
        future: impl Future<Output = Answer> + 'static,
    ) -> AbortHandle {
        let handle = if self.shared.config.tracing {
            use tracing::Instrument;
            let span = tracing::debug_span!("rpc", method = info.path, call = id.0);
            self.handlers.spawn_local(future.instrument(span))
        } else {
            self.handlers.spawn_local(future)
        };
        self.tasks.insert(handle.id(), (id, info.path, metadata));
        handle
    }

    /// A handler task ended: its answer, `INTERNAL` for a panic, nothing if it was aborted.
    fn completed(&mut self, done: Result<(Id, Answer), JoinError>) -> Result<(), Closed> {
        let (task, result) = match done {
            Ok((task, result)) => (task, Ok(result)),
            Err(e) => (e.id(), Err(e)),
        };
        let Some((id, path, metadata)) = self.tasks.remove(&task) else {
            return Ok(());
        };
        self.aborts.remove(&id);
        self.streams.remove(&id);
        let set = metadata.response.take();
        let result = match result {
            Ok(result) => result,
            // Cancelled, expired or the session is closing: the call already ended.
            Err(e) if e.is_cancelled() => return Ok(()),
            Err(e) => Err(panicked(path, &*e.into_panic())),
        };
        match result {
            Ok(Some(encoded)) => self.end(id, Ok(encoded), set),
            Ok(None) => {
                for (meta, encoded) in end_stream(&mut self.core, id, Ok(()), set) {
                    self.transmit(meta, encoded)?;
                }
                Ok(())
            }
            Err(status) => self.end(id, Err(status), set),
        }
    }

    /// Call `id` ended before its handler did: a stream's handles fail with `why` from now on,
    /// and a handler waiting on them sees it (and ends); any other handler's task (unary, or a
    /// stream's busy elsewhere) is aborted, so none outlives its call unnoticed.
    fn stop(&mut self, id: CallId, why: impl FnOnce() -> Status) {
        let waiting = self.streams.get_mut(&id).is_some_and(|stream| {
            stream.failed = Some(why());
            let waiting = stream.recv_waker.is_some() || stream.send_waker.is_some();
            wake(&mut stream.recv_waker);
            wake(&mut stream.send_waker);
            waiting
        });
        if let Some(handle) = self.aborts.remove(&id) {
            if !waiting {
                handle.abort();
            }
        }
    }

    /// Ends the calls whose deadline passed: their handlers stop, the client gets
    /// `DEADLINE_EXCEEDED`.
    fn expire(&mut self, now: Instant) -> Result<(), Closed> {
        for (id, meta, payload) in self.core.expire(now) {
            self.stop(id, || {
                Status::new(Code::DeadlineExceeded, "deadline exceeded (server)")
            });
            self.transmit(meta, Encoded::from_vec(payload))?;
        }
        Ok(())
    }

    /// Ends call `id` with `result` (see [`end_call`]): sends its frames, or nothing if the
    /// call is no longer in progress.
    fn end(
        &mut self,
        id: CallId,
        result: Result<Encoded, Status>,
        set: ResponseMetadata,
    ) -> Result<(), Closed> {
        for (meta, encoded) in end_call(&mut self.core, id, result, set) {
            self.transmit(meta, encoded)?;
        }
        Ok(())
    }

    /// Sends a frame, or keeps it in the backlog when the transport will not take it now.
    fn transmit(&mut self, meta: Meta, encoded: Encoded) -> Result<(), Closed> {
        if self.backlog.is_empty() {
            match self.conn.send_payload(meta, encoded.payload()) {
                Ok(()) => {
                    self.dirty = true;
                    return Ok(());
                }
                Err(TransportError::WouldBlock) => {}
                // About this frame alone (too long for the transport): the call fails instead.
                Err(e) if frame_alone(&e) => {
                    let (meta, payload) = status_frame(meta, &unsent_response(&e));
                    return self.transmit(meta, Encoded::from_vec(payload));
                }
                Err(_) => return Err(Closed),
            }
        }
        self.backlog.push_back((meta, encoded));
        Ok(())
    }

    /// Hands the backlog to the transport as far as it takes it.
    fn drain_backlog(&mut self) -> Result<(), Closed> {
        while let Some((meta, encoded)) = self.backlog.front() {
            match self.conn.send_payload(*meta, encoded.payload()) {
                Ok(()) => {
                    self.dirty = true;
                    self.backlog.pop_front();
                }
                Err(TransportError::WouldBlock) => return Ok(()),
                Err(_) => return Err(Closed),
            }
        }
        Ok(())
    }

    /// Updates this session's part of the server's busy count; wakes `run` when it drains.
    fn account(&mut self) {
        let busy = self.core.in_flight() + self.backlog.len() + usize::from(self.conn.has_unsent());
        self.set_busy(busy);
    }

    fn set_busy(&mut self, busy: usize) {
        if busy == self.busy {
            return;
        }
        let total = self.shared.busy.get() + busy - self.busy;
        self.shared.busy.set(total);
        self.busy = busy;
        if total == 0 {
            if let Some(w) = self.shared.drained.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

impl Drop for Session {
    /// Leaves the server's books; the handler tasks are aborted with the `JoinSet`, and the
    /// descriptor's registration goes before the connection.
    fn drop(&mut self) {
        self.set_busy(0);
        self.shared.sessions.borrow_mut().remove(&self.key);
        // Tasks waiting on a stream's handles (a handler's own are aborted) find it gone.
        self.senders.drain(..).for_each(Waker::wake);
        for stream in self.streams.values_mut() {
            wake(&mut stream.recv_waker);
            wake(&mut stream.send_waker);
        }
    }
}

/// The status frame for the call `meta` answers (a response that could not be sent).
fn status_frame(meta: Meta, status: &Status) -> (Meta, Vec<u8>) {
    let meta = Meta {
        flags: crate::wire::RESPONSE | crate::wire::STATUS,
        ..meta
    };
    (meta, crate::wire::status_payload(status))
}

/// A streaming handler's requests: the client's messages in order, each read in place where
/// it arrived, then `None` after the client's end. A [`futures_core::Stream`]; or call
/// [`message`](Self::message). If the call ends first (the client cancels, the deadline
/// passes, the session closes), it yields that status once, then `None`.
///
/// Taking a message grants the client its window back; messages not taken stay buffered (at
/// most a window of them).
pub struct RequestStream<M> {
    session: Weak<RefCell<Session>>,
    id: CallId,
    limits: Limits,
    /// It yielded its end or its failure.
    over: bool,
    _message: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for RequestStream<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStream")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Wakes the task a slot holds, if any.
fn wake(slot: &mut Option<Waker>) {
    if let Some(w) = slot.take() {
        w.wake();
    }
}

/// The status of a stream's handle whose session is gone.
fn session_closed() -> Status {
    Status::new(Code::Unavailable, "the session is closed")
}

/// The status of a stream's handle used after its handler ended.
fn stream_over() -> Status {
    Status::new(
        Code::FailedPrecondition,
        "the stream has ended: its handler returned",
    )
}

impl<M> RequestStream<M> {
    /// The same stream, its messages read as `N` (what generated code does with the method's
    /// request type).
    pub fn typed<N>(self) -> RequestStream<N> {
        RequestStream {
            session: self.session.clone(),
            id: self.id,
            limits: self.limits,
            over: self.over,
            _message: PhantomData,
        }
    }

    /// The next message, `None` after the client's end, or the status the call ended with.
    pub async fn message(&mut self) -> Result<Option<AsyncRequest<M>>, Status> {
        poll_fn(|cx| self.poll_message(cx)).await.transpose()
    }

    fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Result<AsyncRequest<M>, Status>>> {
        if self.over {
            return Poll::Ready(None);
        }
        let item = match self.session.upgrade() {
            None => Err(session_closed()),
            Some(session) => match session.borrow_mut().take(self.id, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => item,
            },
        };
        self.over = !matches!(item, Ok(Some(_)));
        Poll::Ready(item.transpose().map(|item| {
            item.map(|frame| AsyncRequest {
                frame,
                limits: self.limits,
                _message: PhantomData,
            })
        }))
    }
}

impl<M> futures_core::Stream for RequestStream<M> {
    type Item = Result<AsyncRequest<M>, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_message(cx)
    }
}

/// A streaming handler's way to answer: messages, each sent when the client's window has
/// room (the send waits until then). The headers set on the call go out before the first
/// message; the handler's result ends the stream.
///
/// Sends fail with the call's status once it ended early (the client cancelled, the deadline
/// passed, the session closed). A send dropped after it took its place in the window but
/// before the transport took its message (the connection was full) fails the call.
pub struct ResponseSink {
    session: Weak<RefCell<Session>>,
    id: CallId,
}

impl std::fmt::Debug for ResponseSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseSink")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ResponseSink {
    /// Sends `msg` (serialize-and-send: its header segment is written into the transport, its
    /// zero-copy values are referenced), once the window has room.
    pub async fn send(&mut self, msg: &impl Outgoing) -> Result<(), Status> {
        self.send_out(Out::Message(msg)).await
    }

    /// Sends a raw payload, once the window has room.
    pub async fn send_payload(&mut self, payload: Payload<'_>) -> Result<(), Status> {
        self.send_out(Out::Payload(payload)).await
    }

    async fn send_out(&mut self, out: Out<'_>) -> Result<(), Status> {
        let mut sending = Sending {
            session: &self.session,
            id: self.id,
            owed: None,
        };
        poll_fn(|cx| match sending.session.upgrade() {
            None => Poll::Ready(Err(session_closed())),
            Some(session) => session.borrow_mut().send(sending.id, &mut sending.owed, cx, out),
        })
        .await
    }
}

/// One send of a [`ResponseSink`] in progress: the `Meta` its message got from the window, if
/// it did and the transport has not taken the message yet.
struct Sending<'s> {
    session: &'s Weak<RefCell<Session>>,
    id: CallId,
    owed: Option<Meta>,
}

impl Drop for Sending<'_> {
    /// A message that took its place in the window and never went: the peer's window would
    /// be off by it from now on, so the call fails.
    fn drop(&mut self) {
        if self.owed.is_none() {
            return;
        }
        let Some(session) = self.session.upgrade() else {
            return;
        };
        let Ok(mut session) = session.try_borrow_mut() else {
            return;
        };
        let status = Status::new(
            Code::Internal,
            "the handler dropped a send before the transport took its message",
        );
        session.fail_stream(self.id, status);
    }
}

impl Session {
    /// Stream `id`'s handler takes its next message (`Ok(None)`: the client's end), or learns
    /// why the call ended; or waits.
    fn take(&mut self, id: CallId, cx: &mut TaskContext<'_>) -> Poll<Result<Option<Frame>, Status>> {
        let Some(stream) = self.streams.get_mut(&id) else {
            return Poll::Ready(Err(stream_over()));
        };
        if let Some(status) = &stream.failed {
            return Poll::Ready(Err(status.clone()));
        }
        let Some((frame, len)) = stream.inbox.pop_front() else {
            if stream.half_closed {
                return Poll::Ready(Ok(None));
            }
            stream.recv_waker = Some(cx.waker().clone());
            stream.waiting = true;
            return Poll::Pending;
        };
        stream.waiting = false;
        if let Some((meta, raw)) = self.core.consumed(id, len) {
            self.queue(meta, Encoded::bytes(&raw));
        }
        Poll::Ready(Ok(Some(frame)))
    }

    /// Stream `id`'s handler sends a message (`send`, counting `len` against the window):
    /// once the backlog is empty and the window has room; `owed` keeps the `Meta` the window
    /// gave while the transport cannot take the message.
    fn send(
        &mut self,
        id: CallId,
        owed: &mut Option<Meta>,
        cx: &mut TaskContext<'_>,
        out: Out<'_>,
    ) -> Poll<Result<(), Status>> {
        let Some(stream) = self.streams.get_mut(&id) else {
            *owed = None;
            return Poll::Ready(Err(stream_over()));
        };
        if let Some(status) = &stream.failed {
            *owed = None;
            return Poll::Ready(Err(status.clone()));
        }
        if !self.backlog.is_empty() {
            // Frames before it wait (maybe its own headers): it goes after them.
            self.senders.push(cx.waker().clone());
            self.wake();
            return Poll::Pending;
        }
        let meta = match *owed {
            Some(meta) => meta,
            None => {
                if !self.core.can_send(id) {
                    stream.send_waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                let headers = std::mem::take(&mut stream.metadata.response.borrow_mut().headers);
                if let Some((meta, raw)) = self.core.headers(id, &headers) {
                    self.queue(meta, Encoded::from_vec(raw));
                    if !self.backlog.is_empty() {
                        self.senders.push(cx.waker().clone());
                        return Poll::Pending;
                    }
                }
                let meta = match self.core.send(id, out.window_len(&self.conn)) {
                    Ok(meta) => meta,
                    Err(_) => unreachable!("the window has room for stream {id}"),
                };
                *owed = Some(meta);
                meta
            }
        };
        match out.send(&mut self.conn, meta) {
            Ok(()) => {
                *owed = None;
                self.dirty = true;
                self.wake();
                Poll::Ready(Ok(()))
            }
            Err(TransportError::WouldBlock) => {
                self.senders.push(cx.waker().clone());
                self.wake();
                Poll::Pending
            }
            Err(e) if frame_alone(&e) => {
                *owed = None;
                let status = unsent_response(&e);
                self.fail_stream(id, status.clone());
                Poll::Ready(Err(status))
            }
            Err(e) => {
                *owed = None;
                self.broken = true;
                self.wake();
                Poll::Ready(Err(Status::new(
                    Code::Unavailable,
                    format!("the connection failed: {e}"),
                )))
            }
        }
    }

    /// Ends stream `id` with `status` now (its handler's result will be dropped).
    fn fail_stream(&mut self, id: CallId, status: Status) {
        if let Some((meta, payload)) = self.core.fail(id, &status) {
            self.queue(meta, Encoded::from_vec(payload));
        }
        self.stop(id, || status);
    }

    /// A frame a handle queues: sent (or kept in the backlog), flushed by the session's task.
    fn queue(&mut self, meta: Meta, encoded: Encoded) {
        if self.transmit(meta, encoded).is_err() {
            self.broken = true;
        }
        self.wake();
    }

    /// Copies the shared-memory frames that handlers not waiting for them hold (see
    /// [`Frame::detach`](crate::Frame::detach)).
    fn detach_held(&mut self) {
        if self.kind != TransportKind::Shm {
            return;
        }
        let limits = self.shared.config.limits;
        for stream in self.streams.values_mut().filter(|s| !s.waiting) {
            for (frame, _) in &mut stream.inbox {
                frame.detach(stream.desc, &self.ctx, &limits);
            }
        }
    }

    /// Wakes the session's task (to flush what a handle queued, or to close).
    fn wake(&self) {
        if let Some(w) = &self.waker {
            w.wake_by_ref();
        }
    }
}
