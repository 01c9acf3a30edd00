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
//!    `UNAVAILABLE` while draining, `UNIMPLEMENTED`, `RESOURCE_EXHAUSTED` at the session's
//!    bound), cancel frames abort them;
//! 5. flushes, then registers for what it waits on: readable, writable (TCP, while answers
//!    wait), a 1 ms retry (shared memory, while answers wait for credits), the next deadline.
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
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::task::{AbortHandle, Id, JoinError, JoinSet};
use ::tokio::time::Sleep;
use ferry_buf::Pool;
use ferry_transport::{Meta, Received, Transport, TransportError};
use ferry_wire::Context;

use super::client::register;
use super::{AsyncCall, AsyncRequest, AsyncServices, CallMetadata};
use crate::conn::{Conn, Frame, Listener, SHM_CHECK, TransportKind, frame_alone};
use crate::dispatch::{end_call, panicked, refusal};
use crate::event_loop::LoopConfig;
use crate::metadata::Metadata;
use crate::service::{Encoded, ResponseMetadata};
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
/// Accepting a shared-memory connection runs `ferry-shm`'s setup exchange, which blocks the
/// thread until the client's setup message arrives (a client that connects and says nothing
/// holds it up to 10 s), as it does in the event loop.
pub struct AsyncServer {
    addrs: Vec<Addr>,
    listeners: Vec<Listener>,
    services: AsyncServices,
    config: LoopConfig,
    pool: Pool,
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
            let listener = Listener::bind(&a.parse()?)?;
            bound.push(listener.local_addr()?);
            listeners.push(listener);
        }
        let pool = config.conn.loop_pool(&config.pool)?;
        Ok(AsyncServer {
            addrs: bound,
            listeners,
            services,
            config,
            pool,
        })
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
}

/// A listener and the registration of a duplicate of its descriptor (dropped first).
struct Accepting {
    fd: AsyncFd<OwnedFd>,
    listener: Listener,
}

impl Accepting {
    /// Accepts every connection waiting; registers for the next.
    fn poll_accept(&self, cx: &mut TaskContext<'_>, shared: &Rc<Shared>, sessions: &mut JoinSet<()>) {
        loop {
            loop {
                match self.listener.try_accept(&shared.pool, &shared.config.conn) {
                    Ok(Some(conn)) => {
                        let id = shared.next_session.get();
                        shared.next_session.set(id + 1);
                        sessions.spawn_local(serve(conn, Rc::clone(shared), id));
                    }
                    Ok(None) => break,
                    // A peer that fails its handshake costs its own connection only; an error
                    // of the listener (out of descriptors) is retried when this task next runs
                    // (at once: it yields first).
                    Err(_) => {
                        cx.waker().wake_by_ref();
                        return;
                    }
                }
            }
            match self.fd.poll_read_ready(cx) {
                // Cleared after a `try_accept` found none: one arriving since sets it again.
                Poll::Ready(Ok(mut ready)) => ready.clear_ready(),
                // The reactor cannot watch it: nothing more will be accepted here.
                Poll::Ready(Err(_)) | Poll::Pending => return,
            }
        }
    }
}

/// One session's task.
async fn serve(mut conn: Conn, shared: Rc<Shared>, key: u64) {
    conn.set_nonblocking(true);
    let Ok(fd) = register(&conn) else { return };
    let ctx = shared.config.conn.context(&conn, &shared.pool);
    let mut session = Session {
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
        dirty: false,
        busy: 0,
        shared,
        key,
    };
    poll_fn(|cx| session.poll(cx)).await;
}

/// One session: its connection, its side of the protocol, its handler tasks.
struct Session {
    /// Readiness of a duplicate of the connection's descriptor; declared (dropped) first.
    fd: AsyncFd<OwnedFd>,
    conn: Conn,
    kind: TransportKind,
    /// What handlers build responses with (shared memory: the session's own pool).
    ctx: Context,
    core: Server,
    /// Answers the transport would not take yet, oldest first; no requests are read while
    /// any wait.
    backlog: VecDeque<(Meta, Encoded)>,
    /// The handlers' tasks (dropping the set aborts them).
    handlers: JoinSet<Result<Encoded, Status>>,
    /// Each handler task's call, method path and metadata.
    tasks: HashMap<Id, (CallId, &'static str, Rc<CallMetadata>)>,
    aborts: HashMap<CallId, AbortHandle>,
    /// When the earliest call in progress expires, and its timer.
    deadline: Option<(Instant, Pin<Box<Sleep>>)>,
    /// Shared memory: the periodic look (a dead peer rings no doorbell), or the retry of a
    /// backlog waiting for credits.
    check: Option<Pin<Box<Sleep>>>,
    /// Something was queued since the last flush.
    dirty: bool,
    /// This session's part of `Shared::busy`.
    busy: usize,
    shared: Rc<Shared>,
    key: u64,
}

/// Why a session ends.
struct Closed;

impl Session {
    fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        let result = self.turn(cx);
        self.account();
        match result {
            Ok(Poll::Pending) => {
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
        let waiting = !self.backlog.is_empty() || self.conn.has_unsent();
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
            TransportKind::Tcp => {}
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
                if let Some(handle) = self.aborts.remove(&id) {
                    handle.abort();
                }
                Ok(())
            }
            Ok(Some(Event::Request {
                id,
                method,
                deadline,
                metadata,
            })) => self.request(frame, id, method, deadline, metadata),
            Ok(Some(Event::Aborted { id, meta, payload })) => {
                if let Some(handle) = self.aborts.remove(&id) {
                    handle.abort();
                }
                self.transmit(meta, Encoded::from_vec(payload))
            }
            Ok(Some(Event::Open { id, .. })) => {
                let status = Status::new(
                    Code::Unimplemented,
                    "streaming calls are not served by this server yet",
                );
                self.end(id, Err(status), ResponseMetadata::default())
            }
            // No stream is ever open here, so no stream event can come.
            Ok(Some(Event::Message { .. } | Event::HalfClosed { .. } | Event::Window { .. })) => Ok(()),
            // The peer broke the protocol: close.
            Err(_) => Err(Closed),
        }
    }

    /// Refuses a request, or starts its handler's task.
    fn request(
        &mut self,
        frame: Frame,
        id: CallId,
        method: u16,
        deadline: Option<Instant>,
        metadata: Metadata,
    ) -> Result<(), Closed> {
        let shared = Rc::clone(&self.shared);
        let refused = refusal(
            shared.draining.get(),
            shared.services.methods.contains_key(&method),
            method,
        );
        if let Some(status) = refused {
            return self.end(id, Err(status), ResponseMetadata::default());
        }
        let (service, info) = &shared.services.methods[&method];
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
        };
        let request = AsyncRequest {
            frame,
            limits: shared.config.limits,
            _message: PhantomData,
        };
        let future = service.call(call, request);
        let handle = if shared.config.tracing {
            use tracing::Instrument;
            let span = tracing::debug_span!("rpc", method = info.path, call = id.0);
            self.handlers.spawn_local(future.instrument(span))
        } else {
            self.handlers.spawn_local(future)
        };
        self.tasks.insert(handle.id(), (id, info.path, metadata));
        self.aborts.insert(id, handle);
        Ok(())
    }

    /// A handler task ended: its answer, `INTERNAL` for a panic, nothing if it was aborted.
    fn completed(&mut self, done: Result<(Id, Result<Encoded, Status>), JoinError>) -> Result<(), Closed> {
        let (task, result) = match done {
            Ok((task, result)) => (task, Ok(result)),
            Err(e) => (e.id(), Err(e)),
        };
        let Some((id, path, metadata)) = self.tasks.remove(&task) else {
            return Ok(());
        };
        self.aborts.remove(&id);
        let set = metadata.response.take();
        let result = match result {
            Ok(result) => result,
            // Cancelled, expired or the session is closing: the call already ended.
            Err(e) if e.is_cancelled() => return Ok(()),
            Err(e) => Err(panicked(path, &*e.into_panic())),
        };
        self.end(id, result, set)
    }

    /// Ends the calls whose deadline passed: their handlers stop, the client gets
    /// `DEADLINE_EXCEEDED`.
    fn expire(&mut self, now: Instant) -> Result<(), Closed> {
        for (id, meta, payload) in self.core.expire(now) {
            if let Some(handle) = self.aborts.remove(&id) {
                handle.abort();
            }
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
