//! The run-to-completion event loop (the DPU paper's API, eRPC's `Rpc`): one per thread,
//! sharing nothing, polling many sessions of either transport by readiness. It serves
//! [`Services`] (foreground handlers inline, background ones on the worker pool) and calls
//! other servers with continuations; [`turn`](EventLoop::turn) is called continuously.
//!
//! # One turn
//!
//! 1. `poll(2)` over the listeners, the TCP sessions and the waker: timeout zero while
//!    busy-polling; while sleeping, every shared-memory session is armed first (a
//!    `try_recv` that finds nothing makes the peer ring its doorbell) and the doorbells join
//!    the poll, which waits until the next deadline.
//! 2. Accept what waits; drain each readable session (and every shared-memory session, by
//!    memory reads alone, while busy), at most `frames_per_turn` frames each.
//! 3. Answers from background workers; deadlines due; backlogs retried; sessions flushed.
//! 4. Dead sessions removed: their client calls fail with `UNAVAILABLE`.
//!
//! The loop busy-polls for [`LoopConfig::spin`] after the last piece of work, then sleeps.

mod session;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_transport::{Meta, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Message, Outgoing};
use rustix::event::{PollFd, PollFlags};

use crate::conn::{Conn, ConnConfig, Frame, Listener, TransportKind};
use crate::dispatch::{refusal, run_handler};
use crate::metadata::Metadata;
use crate::service::{Call, Encoded, Incoming, Sink};
use crate::services::Services;
use crate::session::{ClientConfig, Event, Outcome, ServerConfig};
use crate::status::{Code, Status, bad_response};
use crate::sys::Waker;
use crate::workers::{Done, Job, SendFrame};
use crate::{Addr, CallId};

use session::{ClientSide, Role, ServerSide, Session, SessionOutbox};

/// What a client call's continuation gets: the response (read in place) or the status.
pub type Continuation = Box<dyn for<'f> FnOnce(&mut EventLoop, Result<Incoming<'f>, Status>)>;

/// Event-loop settings.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// How connections are set up (TCP, shared memory, and the shared-memory session pools).
    pub conn: ConnConfig,
    /// The loop's pool: TCP send staging and receive buffers, and what TCP responses are
    /// built with.
    pub pool: PoolConfig,
    /// Per server session: calls in progress at most (beyond: `RESOURCE_EXHAUSTED`).
    pub server: ServerConfig,
    /// Per client session: the request window.
    pub client: ClientConfig,
    /// Limits every request and response is validated with.
    pub limits: Limits,
    /// How long to busy-poll after the last piece of work before sleeping in `poll(2)`
    /// (default 100 µs; `Duration::ZERO` sleeps at once, `Duration::MAX` never sleeps).
    pub spin: Duration,
    /// Frames read from one session per turn at most (fairness between sessions).
    pub frames_per_turn: usize,
    /// A `tracing` span per request (off by default: it costs on the hot path).
    pub tracing: bool,
}

impl Default for LoopConfig {
    fn default() -> LoopConfig {
        LoopConfig {
            conn: ConnConfig::default(),
            pool: PoolConfig::default(),
            server: ServerConfig::default(),
            client: ClientConfig::default(),
            limits: Limits::default(),
            spin: Duration::from_micros(100),
            frames_per_turn: 32,
            tracing: false,
        }
    }
}

/// A session of a loop: an index and a generation, so a stale id never names a new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId {
    index: u32,
    generation: u32,
}

/// A client session in a loop with its default timeout: what generated client stubs wrap for
/// calls with continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopSession {
    /// The session.
    pub id: SessionId,
    /// The deadline of each call, from its start.
    pub timeout: Option<Duration>,
}

struct Slot {
    generation: u32,
    session: Option<Session>,
}

/// Counters of one loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Turns taken.
    pub turns: u64,
    /// Turns that slept in `poll(2)` with a timeout.
    pub sleeps: u64,
    /// Sessions accepted.
    pub accepted: u64,
    /// Sessions closed (by the peer, an error, or [`EventLoop::close`]).
    pub closed: u64,
    /// Requests handled in the foreground.
    pub foreground: u64,
    /// Requests handed to the worker pool.
    pub background: u64,
    /// Shared-memory requests copied to go to a worker (their frames cannot leave the loop).
    pub background_copies: u64,
    /// Sessions closed for breaking the protocol.
    pub protocol_errors: u64,
    /// Time spent in turns that did work, from the end of the readiness poll to the end of
    /// the turn: reading, handling, sending; not polling or sleeping. Over a window, divided
    /// by the requests served, it is the loop's work per request, even when it busy-polls.
    pub busy: Duration,
}

thread_local! {
    /// [`LoopStats::busy`] of every loop that ran on this thread, summed.
    static THREAD_BUSY: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// The time event loops on the calling thread have spent working ([`LoopStats::busy`], summed
/// over the loops of the thread): what a handler reads to report its loop's load.
pub fn thread_busy_time() -> Duration {
    THREAD_BUSY.get()
}

/// One event loop. `!Send`: it owns shared-memory connections, whose frames are
/// single-threaded; a server runs one per thread ([`Server`](crate::Server)).
pub struct EventLoop {
    config: LoopConfig,
    pool: Pool,
    services: Services,
    listeners: Vec<Arc<Listener>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    waker: Arc<Waker>,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
    /// An answer taken off the queue by the check before sleeping.
    early: Option<Done>,
    /// Background calls handed out and not yet back.
    outstanding: usize,
    draining: bool,
    /// Open TCP sessions (their readiness needs `poll(2)` on every turn).
    tcp_sessions: usize,
    last_work: Instant,
    stats: LoopStats,
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop")
            .field("sessions", &self.sessions())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl EventLoop {
    /// A loop that serves nothing (a client).
    pub fn new(config: LoopConfig) -> Result<EventLoop, TransportError> {
        EventLoop::with_services(config, Services::none())
    }

    /// A loop that serves `services` on the listeners it is given.
    pub fn with_services(config: LoopConfig, services: Services) -> Result<EventLoop, TransportError> {
        let pool = config.conn.loop_pool(&config.pool)?;
        static LOOPS: AtomicUsize = AtomicUsize::new(0);
        let name = format!("loop-{}", LOOPS.fetch_add(1, Ordering::Relaxed));
        services.metrics().add_pool(&name, pool.clone());
        let (done_tx, done_rx) = mpsc::channel();
        let waker = Waker::new().map_err(|e| TransportError::io("eventfd", e))?;
        Ok(EventLoop {
            config,
            pool,
            services,
            listeners: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            waker: Arc::new(waker),
            done_tx,
            done_rx,
            early: None,
            outstanding: 0,
            draining: false,
            tcp_sessions: 0,
            last_work: Instant::now(),
            stats: LoopStats::default(),
        })
    }

    /// Listens on `addr`; returns the address bound (the port the kernel picked).
    pub fn listen(&mut self, addr: &Addr) -> Result<Addr, TransportError> {
        let listener = Listener::bind(addr)?;
        let local = listener.local_addr()?;
        self.add_listener(Arc::new(listener));
        Ok(local)
    }

    /// Accepts on a listener several loops share: whichever loop polls it first when a
    /// connection waits takes it (an idle loop sooner than a busy one).
    pub fn add_listener(&mut self, listener: Arc<Listener>) {
        self.listeners.push(listener);
    }

    /// The loop's pool (TCP buffers; values built here are sent by reference over TCP).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Counters so far.
    pub fn stats(&self) -> LoopStats {
        self.stats
    }

    /// Open sessions.
    pub fn sessions(&self) -> usize {
        self.slots.iter().filter(|s| s.session.is_some()).count()
    }

    /// Server calls in progress (handlers running or answers waiting for the transport).
    pub fn in_progress(&self) -> usize {
        self.slots
            .iter()
            .filter_map(|s| s.session.as_ref())
            .map(Session::busy)
            .sum::<usize>()
            + self.outstanding
    }

    pub(crate) fn waker(&self) -> &Arc<Waker> {
        &self.waker
    }

    /// Connects to a server; the session's calls go out with [`call`](Self::call).
    pub fn connect(&mut self, addr: &Addr) -> Result<SessionId, TransportError> {
        let conn = Conn::connect(addr, &self.pool, &self.config.conn)?;
        Ok(self.insert(
            conn,
            Role::Client(ClientSide {
                core: crate::session::Client::new(self.config.client.clone()),
                pending: Default::default(),
                timeout: None,
            }),
        ))
    }

    /// The context to build a session's requests or values with: values in its pool travel by
    /// reference (shared memory: the session's own pool, which the server maps).
    pub fn context(&self, id: SessionId) -> Option<Context> {
        self.get(id).map(|s| s.ctx.clone())
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
        let now = Instant::now();
        let session = self.get_mut(id).ok_or_else(gone)?;
        let Role::Client(client) = &mut session.role else {
            return Err(Status::new(Code::FailedPrecondition, "not a client session"));
        };
        let start = client.core.start(method, client.timeout, now)?;
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
            if let Some(meta) = client.core.cancel(start.id) {
                let _ = session
                    .conn
                    .send_payload(meta, ferry_transport::Payload::Bytes(&[]));
            }
            return Err(send_failed(&e));
        }
        session.dirty = true;
        client.pending.insert(start.id, then);
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
        let Some(meta) = client.core.cancel(call) else {
            return;
        };
        let then = client.pending.remove(&call);
        session.transmit(meta, Encoded::default());
        if let Some(then) = then {
            then(self, Err(Status::new(Code::Cancelled, "cancelled by the client")));
        }
    }

    /// Closes a session: its calls fail with `UNAVAILABLE`.
    pub fn close(&mut self, id: SessionId) {
        if let Some(s) = self.get_mut(id) {
            s.fail(TransportError::Poisoned);
        }
        self.reap();
    }

    /// Stops accepting and refuses new requests with `UNAVAILABLE`; calls in progress go on.
    /// Drain with [`turn`](Self::turn) until [`in_progress`](Self::in_progress) is zero.
    pub fn drain(&mut self) {
        self.draining = true;
        self.listeners.clear();
    }

    /// Runs turns until `done` says so.
    pub fn run_until(&mut self, mut done: impl FnMut(&mut EventLoop) -> bool) {
        while !done(self) {
            self.turn();
        }
    }

    /// One turn (see the module docs); returns whether it did any work. Busy-polls (returns at
    /// once) until [`LoopConfig::spin`] has passed since the last work, then sleeps until a
    /// frame, a connection, a background answer or the next deadline.
    pub fn turn(&mut self) -> bool {
        self.stats.turns += 1;
        let now = Instant::now();
        let sleep = now.duration_since(self.last_work) >= self.config.spin;
        let mut work = false;
        if sleep {
            work |= self.arm();
        }
        let timeout = if work || !sleep {
            Some(Duration::ZERO)
        } else {
            Some(self.sleep_time(now))
        };
        // While busy-polling shared memory alone, the system call that looks at the listeners
        // and the waker is made only every 64th turn: shared-memory sessions are read from
        // memory, background answers from their queue.
        let ready = if sleep || self.tcp_sessions > 0 || self.stats.turns % 64 == 0 {
            self.poll(timeout, sleep && !work)
        } else {
            Ready::default()
        };
        let now = Instant::now();
        work |= self.accept(&ready);
        work |= self.read(&ready, now);
        work |= self.completions(now);
        work |= self.expire(now);
        for slot in &mut self.slots {
            if let Some(s) = &mut slot.session {
                if !s.backlog.is_empty() {
                    s.drain_backlog();
                }
                s.flush();
            }
        }
        work |= self.reap();
        if work {
            let end = Instant::now();
            let busy = end.saturating_duration_since(now);
            self.stats.busy += busy;
            THREAD_BUSY.set(THREAD_BUSY.get() + busy);
            self.last_work = end;
        }
        work
    }

    /// How long a sleeping turn may wait: until the next deadline, at most 100 ms (a dead
    /// shared-memory peer is noticed by a later call, not by its doorbell).
    fn sleep_time(&self, now: Instant) -> Duration {
        let mut t = crate::conn::SHM_CHECK;
        for s in self.slots.iter().filter_map(|s| s.session.as_ref()) {
            let next = match &s.role {
                Role::Server(srv) => srv.core.next_deadline(),
                Role::Client(c) => c.core.next_deadline(),
            };
            if let Some(at) = next {
                t = t.min(at.saturating_duration_since(now));
            }
            if !s.backlog.is_empty() && s.conn.kind() == TransportKind::Shm {
                // Credits come back as acknowledgements; look again soon.
                t = t.min(Duration::from_millis(1));
            }
        }
        t
    }

    /// Before sleeping: arms every shared-memory session (processing what arrives meanwhile).
    fn arm(&mut self) -> bool {
        let now = Instant::now();
        let mut work = false;
        for i in 0..self.slots.len() {
            let Some(s) = &mut self.slots[i].session else {
                continue;
            };
            if s.conn.kind() != TransportKind::Shm || s.dead.is_some() {
                continue;
            }
            match s.conn.try_recv() {
                Ok(Some(frame)) => {
                    work = true;
                    self.on_frame(i, frame, now);
                    // Read on in this turn; armed again next time.
                    if let Some(s) = &mut self.slots[i].session {
                        s.more = true;
                    }
                }
                Ok(None) => {}
                Err(e) => s.fail(e),
            }
        }
        work
    }

    /// Polls the descriptors; returns which are ready: listeners first, then sessions by slot.
    fn poll(&mut self, timeout: Option<Duration>, sleeping: bool) -> Ready {
        let mut fds = Vec::with_capacity(1 + self.listeners.len() + self.slots.len());
        let mut who = Vec::with_capacity(fds.capacity());
        fds.push(PollFd::new(&*self.waker, PollFlags::IN));
        who.push(Who::Waker);
        for (i, l) in self.listeners.iter().enumerate() {
            fds.push(PollFd::new(&**l, PollFlags::IN));
            who.push(Who::Listener(i));
        }
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(s) = &mut slot.session else { continue };
            let shm = s.conn.kind() == TransportKind::Shm;
            if shm && !sleeping {
                continue; // polled by memory reads
            }
            let mut flags = PollFlags::IN;
            if !shm && (s.dirty || !s.backlog.is_empty() || s.conn.has_unsent()) {
                flags |= PollFlags::OUT;
            }
            fds.push(PollFd::new(&s.conn, flags));
            who.push(Who::Session(i));
        }
        if sleeping {
            self.waker.sleep();
            self.stats.sleeps += 1;
        }
        // A background answer that came in after the last look keeps the loop awake.
        let mut timeout = timeout;
        if sleeping && self.outstanding > 0 && self.early.is_none() {
            if let Ok(done) = self.done_rx.try_recv() {
                self.early = Some(done);
                timeout = Some(Duration::ZERO);
            }
        }
        let mut ready = Ready::default();
        if crate::sys::poll(&mut fds, timeout).is_ok() {
            for (fd, w) in fds.iter().zip(&who) {
                let r = fd.revents();
                if r.is_empty() {
                    continue;
                }
                match *w {
                    Who::Waker => {}
                    Who::Listener(i) => ready.listeners.push(i),
                    Who::Session(i) => ready.sessions.push(i),
                }
            }
        }
        if sleeping {
            self.waker.awake();
        }
        ready
    }

    fn accept(&mut self, ready: &Ready) -> bool {
        let mut work = false;
        for &i in &ready.listeners {
            let Some(listener) = self.listeners.get(i).cloned() else {
                continue;
            };
            loop {
                match listener.try_accept(&self.pool, &self.config.conn) {
                    Ok(Some(conn)) => {
                        work = true;
                        self.stats.accepted += 1;
                        self.insert(
                            conn,
                            Role::Server(ServerSide {
                                core: crate::session::Server::new(self.config.server.clone()),
                                background: Default::default(),
                            }),
                        );
                    }
                    Ok(None) => break,
                    // A peer that fails its handshake costs its own connection only; the
                    // reason is logged, since the peer sees only a closed socket.
                    Err(e) => {
                        let at = listener
                            .local_addr()
                            .map_or_else(|_| "a listener".to_owned(), |a| a.to_string());
                        eprintln!("ferry-rpc: a connection on {at} failed its setup: {e}");
                        break;
                    }
                }
            }
        }
        work
    }

    fn insert(&mut self, mut conn: Conn, role: Role) -> SessionId {
        conn.set_nonblocking(true);
        let ctx = self.config.conn.context(&conn, &self.pool);
        if matches!(role, Role::Server(_)) {
            self.services.metrics().sessions(conn.kind()).inc();
        }
        if conn.kind() == TransportKind::Tcp {
            self.tcp_sessions += 1;
        }
        let session = Session {
            conn,
            ctx,
            role,
            backlog: Default::default(),
            more: false,
            dirty: false,
            dead: None,
            readable: false,
        };
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    session: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.session = Some(session);
        SessionId {
            index,
            generation: slot.generation,
        }
    }

    fn get(&self, id: SessionId) -> Option<&Session> {
        let slot = self.slots.get(id.index as usize)?;
        (slot.generation == id.generation).then_some(slot.session.as_ref()?)
    }

    fn get_mut(&mut self, id: SessionId) -> Option<&mut Session> {
        let slot = self.slots.get_mut(id.index as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.session.as_mut()
    }

    /// Drains readable sessions (every shared-memory one while busy-polling).
    fn read(&mut self, ready: &Ready, now: Instant) -> bool {
        let mut work = false;
        for &i in &ready.sessions {
            if let Some(s) = &mut self.slots[i].session {
                s.readable = true;
            }
        }
        for i in 0..self.slots.len() {
            let Some(s) = &mut self.slots[i].session else {
                continue;
            };
            if s.dead.is_some() {
                continue;
            }
            let shm = s.conn.kind() == TransportKind::Shm;
            let readable = std::mem::take(&mut s.readable);
            if !(readable || s.more || shm) {
                continue;
            }
            // A session whose answers wait for the transport reads no more requests.
            if !s.backlog.is_empty() {
                s.drain_backlog();
                if !s.backlog.is_empty() {
                    continue;
                }
            }
            s.more = false;
            for n in 0..self.config.frames_per_turn {
                let Some(s) = &mut self.slots[i].session else {
                    break;
                };
                if !s.backlog.is_empty() || s.dead.is_some() {
                    break;
                }
                let got = if shm {
                    s.conn.poll_recv()
                } else {
                    s.conn.try_recv()
                };
                match got {
                    Ok(Some(frame)) => {
                        work = true;
                        self.on_frame(i, frame, now);
                        if n + 1 == self.config.frames_per_turn {
                            if let Some(s) = &mut self.slots[i].session {
                                s.more = true;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        s.fail(e);
                        break;
                    }
                }
            }
        }
        work
    }

    /// One frame of session `i`.
    fn on_frame(&mut self, i: usize, frame: Frame, now: Instant) {
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let meta = frame.meta();
        let raw = if meta.flags == 0 || meta.flags == crate::wire::RESPONSE {
            None
        } else {
            frame.bytes()
        };
        if let Role::Client(client) = &mut s.role {
            let (then, status) = match client.core.on_frame(meta, raw) {
                Ok(None) => return,
                Ok(Some(Outcome::Response { id, .. })) => (client.pending.remove(&id), None),
                Ok(Some(Outcome::Failed { id, status, .. })) => (client.pending.remove(&id), Some(status)),
                Err(e) => {
                    self.stats.protocol_errors += 1;
                    s.fail(TransportError::Config(format!("RPC protocol: {e}")));
                    return;
                }
            };
            let Some(then) = then else { return };
            let limits = self.config.limits;
            match status {
                None => then(
                    self,
                    Ok(Incoming {
                        frame: &frame,
                        limits: &limits,
                        shared: frame.shared(),
                    }),
                ),
                Some(status) => then(self, Err(status)),
            }
            return;
        }
        match &mut s.role {
            Role::Client(_) => {}
            Role::Server(server) => match server.core.on_frame(meta, raw, now) {
                Ok(None) => {}
                Ok(Some(Event::Refused { meta, payload, .. })) => {
                    self.services
                        .metrics()
                        .method(meta.kind)
                        .record(Code::ResourceExhausted, Duration::ZERO);
                    s.transmit(meta, Encoded::from_vec(payload));
                }
                Ok(Some(Event::Cancelled { id })) => {
                    if let Some(flag) = server.background.remove(&id) {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
                Ok(Some(Event::Request {
                    id,
                    method,
                    deadline,
                    metadata,
                })) => {
                    self.request(i, frame, id, method, deadline, metadata, now);
                }
                Err(e) => {
                    self.stats.protocol_errors += 1;
                    s.fail(TransportError::Config(format!("RPC protocol: {e}")));
                }
            },
        }
    }

    /// Dispatches a request: refused, foreground, or to a worker.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &mut self,
        i: usize,
        frame: Frame,
        id: CallId,
        method: u16,
        deadline: Option<Instant>,
        metadata: Metadata,
        now: Instant,
    ) {
        let services = &self.services;
        let metrics = services.metrics();
        let generation = self.slots[i].generation;
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let refused = refusal(self.draining, services.method(method).is_some(), method);
        if let Some(status) = refused {
            metrics.method(method).record(status.code, Duration::ZERO);
            s.end_call(id, Err(status), Metadata::new());
            return;
        }
        let entry = services.method(method).expect("checked");
        let info = entry.info;
        let background = info.mode == crate::Mode::Background && services.0.workers.is_some();
        let _span = self
            .config
            .tracing
            .then(|| tracing::debug_span!("rpc", method = info.path, call = id.0, background).entered());
        if background {
            self.stats.background += 1;
            let shm = matches!(frame, Frame::Shm(_));
            let sendable = SendFrame::from_frame(frame, info.request, &s.ctx, &self.config.limits);
            let frame = match sendable {
                Ok(f) => f,
                Err(status) => {
                    metrics.method(method).record(status.code, Duration::ZERO);
                    s.end_call(id, Err(status), Metadata::new());
                    return;
                }
            };
            if shm {
                self.stats.background_copies += 1;
            }
            let Role::Server(server) = &mut s.role else { return };
            let cancelled = Arc::new(AtomicBool::new(false));
            server.background.insert(id, Arc::clone(&cancelled));
            let job = Job {
                service: Arc::clone(&entry.service),
                info,
                id,
                deadline,
                metadata,
                frame,
                ctx: s.ctx.clone(),
                limits: self.config.limits,
                cancelled,
                reply_to: self.done_tx.clone(),
                waker: Arc::clone(&self.waker),
                session: (i as u32, generation),
                started: now,
            };
            metrics.in_flight().inc();
            self.outstanding += 1;
            if let Err(job) = services.0.workers.as_ref().expect("checked").submit(job) {
                // The pool stopped (shutdown): the call fails here.
                self.outstanding -= 1;
                metrics.in_flight().dec();
                let Some(s) = &mut self.slots[i].session else {
                    return;
                };
                let Role::Server(server) = &mut s.role else { return };
                server.background.remove(&job.id);
                let status = Status::new(Code::Unavailable, "the server is shutting down");
                s.end_call(id, Err(status), Metadata::new());
            }
            return;
        }
        self.stats.foreground += 1;
        metrics.in_flight().inc();
        let limits = &self.config.limits;
        let incoming = Incoming {
            frame: &frame,
            limits,
            shared: frame.shared(),
        };
        let Session {
            conn,
            ctx,
            role,
            backlog,
            dirty,
            dead,
            ..
        } = s;
        let Role::Server(server) = role else { return };
        let call = Call::new(method, id, deadline, ctx, None, metadata);
        let mut outbox = SessionOutbox {
            conn,
            core: &mut server.core,
            backlog,
            dirty,
            dead,
            id,
            metadata: &call.response_metadata,
        };
        let outcome = run_handler(&*entry.service, &info, &call, incoming, Sink::Conn(&mut outbox));
        // What the handler set and was not sent with a response (it failed).
        let response_metadata = call.take_response_metadata();
        metrics.in_flight().dec();
        let code = match &outcome {
            Ok(()) => Code::Ok,
            Err(status) => status.code,
        };
        metrics.method(method).record(code, now.elapsed());
        if let Err(status) = outcome {
            let Some(s) = &mut self.slots[i].session else {
                return;
            };
            s.end_call(id, Err(status), response_metadata);
        }
    }

    /// Answers from the worker pool.
    fn completions(&mut self, _now: Instant) -> bool {
        let mut work = false;
        while let Some(done) = self.early.take().or_else(|| self.done_rx.try_recv().ok()) {
            work = true;
            self.outstanding -= 1;
            let metrics = self.services.metrics();
            metrics.in_flight().dec();
            let code = match &done.result {
                Ok(_) => Code::Ok,
                Err(s) => s.code,
            };
            metrics.method(done.method).record(code, done.started.elapsed());
            let (index, generation) = done.session;
            let Some(slot) = self.slots.get_mut(index as usize) else {
                continue;
            };
            if slot.generation != generation {
                continue;
            }
            let Some(s) = &mut slot.session else { continue };
            let Role::Server(server) = &mut s.role else {
                continue;
            };
            server.background.remove(&done.id);
            s.end_call(done.id, done.result, done.metadata);
        }
        work
    }

    /// Deadlines due, on both sides.
    fn expire(&mut self, now: Instant) -> bool {
        let mut due: Vec<(Continuation, Status)> = Vec::new();
        let mut out: Vec<(Meta, Encoded)> = Vec::new();
        for slot in &mut self.slots {
            let Some(s) = &mut slot.session else { continue };
            match &mut s.role {
                Role::Server(server) => {
                    if server.core.next_deadline().is_none_or(|d| d > now) {
                        continue;
                    }
                    for (id, meta, payload) in server.core.expire(now) {
                        if let Some(flag) = server.background.remove(&id) {
                            flag.store(true, Ordering::Relaxed);
                        }
                        self.services
                            .metrics()
                            .method(meta.kind)
                            .record(Code::DeadlineExceeded, Duration::ZERO);
                        out.push((meta, Encoded::from_vec(payload)));
                    }
                }
                Role::Client(client) => {
                    if client.core.next_deadline().is_none_or(|d| d > now) {
                        continue;
                    }
                    for (outcome, cancel) in client.core.expire(now) {
                        let Outcome::Failed { id, status, .. } = outcome else {
                            continue;
                        };
                        if let Some(then) = client.pending.remove(&id) {
                            due.push((then, status));
                        }
                        out.push((cancel, Encoded::default()));
                    }
                }
            }
            for (meta, encoded) in out.drain(..) {
                s.transmit(meta, encoded);
            }
        }
        let work = !due.is_empty();
        for (then, status) in due {
            then(self, Err(status));
        }
        work
    }

    /// Removes dead sessions; fails their client calls with `UNAVAILABLE`.
    fn reap(&mut self) -> bool {
        let mut lost: Vec<(Continuation, Status)> = Vec::new();
        let mut work = false;
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.session.as_ref().is_none_or(|s| s.dead.is_none()) {
                continue;
            }
            let mut s = slot.session.take().expect("checked");
            slot.generation = slot.generation.wrapping_add(1);
            self.free.push(index as u32);
            self.stats.closed += 1;
            work = true;
            let why = s.dead.take().expect("checked");
            if s.conn.kind() == TransportKind::Tcp {
                self.tcp_sessions -= 1;
            }
            match &mut s.role {
                Role::Server(server) => {
                    self.services.metrics().sessions(s.conn.kind()).dec();
                    server.core.lost();
                    for flag in server.background.values() {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
                Role::Client(client) => {
                    for outcome in client.core.lost() {
                        let Outcome::Failed { id, .. } = outcome else {
                            continue;
                        };
                        if let Some(then) = client.pending.remove(&id) {
                            let status = Status::new(Code::Unavailable, format!("connection lost: {why}"));
                            lost.push((then, status));
                        }
                    }
                }
            }
        }
        for (then, status) in lost {
            then(self, Err(status));
        }
        work
    }
}

/// Dropping the loop closes its sessions: background handlers still running for them are
/// told their calls are cancelled (their answers have nowhere to go).
impl Drop for EventLoop {
    fn drop(&mut self) {
        for s in self.slots.iter().filter_map(|s| s.session.as_ref()) {
            if let Role::Server(server) = &s.role {
                for flag in server.background.values() {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Descriptors ready after a poll.
#[derive(Default)]
struct Ready {
    listeners: Vec<usize>,
    sessions: Vec<usize>,
}

enum Who {
    Waker,
    Listener(usize),
    Session(usize),
}

fn gone() -> Status {
    Status::new(Code::Unavailable, "no such session (closed)")
}

fn send_failed(e: &TransportError) -> Status {
    match e {
        TransportError::WouldBlock => {
            Status::new(Code::ResourceExhausted, "the connection's send queue is full")
        }
        TransportError::TooLong { .. } | TransportError::Encode(_) | TransportError::Pool(_) => {
            Status::new(Code::InvalidArgument, format!("the request cannot be sent: {e}"))
        }
        e => Status::new(Code::Unavailable, format!("sending the request: {e}")),
    }
}
