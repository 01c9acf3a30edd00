//! The run-to-completion event loop (the DPU paper's API, eRPC's `Rpc`): one per thread,
//! sharing nothing, polling many sessions of either transport by readiness. It serves
//! [`Services`] (foreground handlers inline, background ones on the worker pool) and calls
//! other servers with continuations; [`turn`](EventLoop::turn) is called continuously.
//!
//! # One turn
//!
//! 1. A wait on the loop's `epoll` set ([`ferry_transport::Readiness`]: the listeners, the
//!    sessions' descriptors, shared-memory setups and the waker, each registered once, so a
//!    wait costs the descriptors ready and idle sessions cost nothing): timeout zero while
//!    busy-polling; while sleeping, every shared-memory session is armed first (a `try_recv`
//!    that finds nothing makes the peer ring its doorbell), and the wait lasts until the next
//!    deadline.
//! 2. Accept what waits; drain each readable session (and every shared-memory session, by
//!    memory reads alone, while busy), at most `frames_per_turn` frames each.
//! 3. Answers from background workers; deadlines due; backlogs retried; sessions flushed.
//! 4. Dead sessions removed: their client calls fail with `UNAVAILABLE`.
//!
//! Steps 2 to 4 look at the *hot* sessions only: those the wait reported, those something was
//! done to this turn (a call started, a background answer, an accept), and those not yet
//! [quiet](session::Session::quiet) (shared memory, which is read by memory reads, always
//! is). A quiet TCP session leaves the list at the end of the turn and comes back when its
//! descriptor is ready: 2,000 idle connections cost a turn nothing. Idle timeouts are looked
//! for over every session, at most every 100 ms.
//!
//! The loop busy-polls for [`LoopConfig::spin`] after the last piece of work, then sleeps.
//!
//! Here: the loop's public types, its sessions' slots and [`turn`](EventLoop::turn). Beside
//! it: `poll.rs` (readiness, accepting, reading frames), `server_side.rs` (served calls),
//! `client_side.rs` (calls with continuations), `ending.rs` (deadlines and dead sessions),
//! `session.rs` (one session and its backlog), `pools.rs` (shared-memory session pools made
//! and dropped off the loop's thread).

mod client_side;
mod ending;
mod poll;
mod pools;
mod server_side;
mod session;
mod streams;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_transport::TransportError;
use ferry_wire::{Context, Limits};

use crate::conn::{Accepted, Conn, ConnConfig, Listener, TransportKind};
use crate::metrics::Admitted;
use crate::service::Incoming;
use crate::services::Services;
use crate::session::{ClientConfig, ServerConfig};
use crate::status::Status;
use crate::sys::Waker;
use crate::workers::Done;
use crate::{Addr, ConnLimits};
use ferry_transport::{Interest, Readiness};

pub use streams::{StreamHandler, StreamOut, Unsent};

use poll::{Ready, Token};
use session::{Role, Session};

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
    /// How long to busy-poll after the last piece of work before sleeping in `epoll_wait`
    /// (default 100 µs; `Duration::ZERO` sleeps at once, `Duration::MAX` never sleeps).
    pub spin: Duration,
    /// Frames read from one session per turn at most (fairness between sessions).
    pub frames_per_turn: usize,
    /// A `tracing` span per request (off by default: it costs on the hot path).
    pub tracing: bool,
    /// Limits on the connections served: how many, how long idle (see [`ConnLimits`] for
    /// every limit and where the others are set).
    pub connections: ConnLimits,
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
            connections: ConnLimits::default(),
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

/// A shared-memory peer accepted whose setup message has not come: polled for readability
/// and stepped, dropped past its deadline. It holds its place under the connection limit.
struct Setup {
    accepted: Accepted,
    admitted: Admitted,
    /// A handle on its pool, given to the reaper if the setup fails (else the pool's memory
    /// would be unmapped on the loop's thread as the setup drops).
    pool: Option<Pool>,
}

/// Counters of one loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Turns taken.
    pub turns: u64,
    /// Turns that did work.
    pub work_turns: u64,
    /// Sessions the turns that did work looked at in steps 2 to 4 (the hot list's length at
    /// the end of each such turn, summed): with idle sessions off the list, about the busy
    /// sessions per turn, however many sit idle.
    pub visited: u64,
    /// Turns that slept in `epoll_wait` with a timeout.
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
    /// Shared-memory stream messages copied out of the client's memory while they waited for
    /// a paused handler (see [`StreamHandler`]): held in place, they would hold back the
    /// acknowledgement of every later block of the client's, and so its other streams.
    pub held_copies: u64,
    /// Sessions closed for breaking the protocol.
    pub protocol_errors: u64,
    /// Shared-memory session pools made on the loop's own thread (only when the maker thread
    /// has stopped, having failed to make one; see `pools.rs`): zero while the maker runs,
    /// however fast peers connect.
    pub shm_pools_made: u64,
    /// Time spent in turns that did work, from the end of the readiness poll to the end of
    /// the turn: reading, handling, sending; not sleeping. Over a window, divided by the
    /// requests served, it is the loop's work per request, even when it busy-polls. A turn
    /// right after one that did work starts at that turn's end (one clock reading per turn),
    /// so the caller's code between the two counts too.
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
    /// Open TCP and UDP sessions (their readiness needs a look at the set on every turn).
    tcp_sessions: usize,
    /// Shared-memory setups in progress: stepped when their sockets poll readable (looked at
    /// with the listeners) or their deadline passes.
    setups: Vec<Setup>,
    /// The earliest deadline of `setups`: until it passes, a turn whose wait found no setup
    /// ready does not look at them (a peer that stalls costs no turn).
    setup_due: Option<Instant>,
    /// What the loop waits on: the waker, listeners, setups and sessions, each registered
    /// with its [`Token`](poll::Token).
    readiness: Readiness,
    /// Shared-memory session pools made and dropped on threads of their own (started with the
    /// first shared-memory listener, unless every session shares `ConnConfig::shared_pool`).
    shm_pools: Option<pools::ShmPools>,
    /// Shared-memory listeners (by index) out of the readiness set until a made pool waits:
    /// their peers wait in the backlog meanwhile, not the loop for a pool.
    shm_waiting: Vec<usize>,
    /// The slots of the sessions each turn looks at (see the module docs), each once.
    hot: Vec<u32>,
    /// What this turn's wait found ready (cleared at the turn's start, its lists reused: no
    /// allocation per turn).
    ready: Ready,
    /// When every session is next looked at for its idle time.
    idle_scan: Instant,
    /// The earliest handshake deadline of a session off the hot list (a TLS peer that stalls
    /// waits there, costing no turn): when it passes, those sessions are looked at again.
    handshake_scan: Option<Instant>,
    /// The end of the last turn, if it did work: the next turn's start, which then reads no
    /// clock of its own.
    clock: Option<Instant>,
    /// When [`expire`](Self::expire) next has anything to do (see [`Due`]): turns before it
    /// skip its pass over the hot sessions.
    due: Due,
    last_work: Instant,
    /// When the loop stops busy-polling if no work comes: `last_work` + [`LoopConfig::spin`]
    /// (`None`: never, a spin too long to represent), so that a turn compares two instants
    /// instead of subtracting them.
    sleep_at: Option<Instant>,
    /// A session was removed since the last [`cool`](Self::cool): its slot may be on the hot
    /// list.
    reaped: bool,
    /// The foreground calls this turn handled, their latency to record at its end: (the
    /// method's metrics, the code). Their latency is the turn's, from its start (after the
    /// poll) to its end, so that a turn reads the clock once after its work.
    served: Vec<(usize, crate::status::Code)>,
    stats: LoopStats,
    /// [`LoopStats::work_turns`] and [`LoopStats::visited`], published to the metrics.
    counters: Arc<crate::metrics::LoopCounters>,
    /// The served datagram sessions' counters, published to the metrics every
    /// [`SHM_CHECK`](crate::conn::SHM_CHECK) (at `datagrams_due`): the closed sessions'
    /// (summed here when they close) plus the open ones'.
    datagrams: Arc<crate::metrics::DatagramCounters>,
    datagrams_closed: [crate::metrics::DatagramSum; TransportKind::ALL.len()],
    datagrams_due: Instant,
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
        // The loop's thread must not fault its pool's pages in its hot path: the grower keeps
        // a region ready ahead and faults in any mapped on demand (issue 28's never-read row).
        pool.keep_warm();
        static LOOPS: AtomicUsize = AtomicUsize::new(0);
        let name = format!("loop-{}", LOOPS.fetch_add(1, Ordering::Relaxed));
        services.metrics().add_pool(&name, pool.clone());
        let counters = services.metrics().add_loop();
        let datagrams = services.metrics().add_datagram_loop();
        let (done_tx, done_rx) = mpsc::channel();
        let waker = Waker::new().map_err(|e| TransportError::io("eventfd", e))?;
        let readiness = Readiness::new(1024).map_err(|e| TransportError::io("epoll_create", e))?;
        readiness
            .add(&waker, Token::Waker.into(), Interest::READ)
            .map_err(|e| TransportError::io("epoll_ctl", e))?;
        let sleep_at = Instant::now().checked_add(config.spin);
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
            setups: Vec::new(),
            setup_due: None,
            readiness,
            shm_pools: None,
            shm_waiting: Vec::new(),
            hot: Vec::new(),
            ready: Ready::default(),
            idle_scan: Instant::now(),
            handshake_scan: None,
            clock: None,
            due: Due::Now,
            last_work: Instant::now(),
            sleep_at,
            reaped: false,
            served: Vec::new(),
            stats: LoopStats::default(),
            counters,
            datagrams,
            datagrams_closed: Default::default(),
            datagrams_due: Instant::now(),
        })
    }

    /// Listens on `addr`; returns the address bound (the port the kernel picked).
    pub fn listen(&mut self, addr: &Addr) -> Result<Addr, TransportError> {
        let listener = Listener::bind(addr, &self.config.conn)?;
        let local = listener.local_addr()?;
        self.add_listener(Arc::new(listener))?;
        Ok(local)
    }

    /// Accepts on a listener several loops share: whichever loop polls it first when a
    /// connection waits takes it (an idle loop sooner than a busy one).
    pub fn add_listener(&mut self, listener: Arc<Listener>) -> Result<(), TransportError> {
        let c = &self.config.conn;
        if matches!(*listener, Listener::Shm(_)) && c.shared_pool.is_none() && self.shm_pools.is_none() {
            self.shm_pools = Some(pools::ShmPools::start(
                c.shm_pool.clone(),
                c.shm.block_size,
                Arc::clone(&self.waker),
            )?);
        }
        let token = Token::Listener(self.listeners.len()).into();
        self.readiness
            .add(&*listener, token, Interest::READ)
            .map_err(|e| TransportError::io("epoll_ctl", e))?;
        self.listeners.push(listener);
        Ok(())
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

    /// The context to build a session's requests or values with: values in its pool travel by
    /// reference (shared memory: the session's own pool, which the server maps).
    pub fn context(&self, id: SessionId) -> Option<Context> {
        self.get(id).map(|s| s.ctx.clone())
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
        self.shm_waiting.clear();
        for l in self.listeners.drain(..) {
            let _ = self.readiness.remove(&*l);
        }
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
        let mut now = self.clock.take().unwrap_or_else(Instant::now);
        let sleep = self.sleep_at.is_some_and(|at| now >= at);
        let mut work = false;
        if sleep {
            work |= self.arm(now);
        }
        let timeout = if work || !sleep {
            Some(Duration::ZERO)
        } else {
            Some(self.sleep_time(now))
        };
        // While busy-polling shared memory alone, the system call that looks at the listeners,
        // the setups' sockets and the waker is made only every 64th turn: shared-memory
        // sessions are read from memory, background answers from their queue.
        self.ready.clear();
        if sleep || self.tcp_sessions > 0 || self.stats.turns % 64 == 0 {
            self.poll(timeout, sleep && !work);
        }
        // One clock reading for a turn whose poll did not wait (busy-polling, or arming found
        // work): its deadlines, idle times and latencies are measured from its start.
        if sleep && !work {
            now = Instant::now();
        }
        work |= self.accept();
        work |= self.step_setups(now);
        work |= self.read(now);
        work |= self.completions();
        if self.due.passed(now) {
            work |= self.expire(now);
        }
        let mut dead = false;
        for &i in &self.hot {
            if let Some(s) = &mut self.slots[i as usize].session {
                if !s.blocked {
                    if !s.backlog.is_empty() {
                        s.drain_backlog();
                    }
                    s.flush();
                    // A backlog the transport still refuses once its queue was written: the
                    // socket is full (a peer that does not read).
                    if !s.backlog.is_empty() {
                        s.block();
                    }
                }
                dead |= s.dead.is_some();
            }
        }
        // Only a dead session has anything to reap (and every session that can die this turn
        // is on the hot list).
        if dead {
            work |= self.reap();
        }
        if now >= self.datagrams_due {
            self.publish_datagrams();
            self.datagrams_due = now + crate::conn::SHM_CHECK;
        }
        if work {
            self.stats.work_turns += 1;
            self.stats.visited += self.hot.len() as u64;
            self.counters.add(self.hot.len());
        }
        self.cool();
        if work {
            let end = Instant::now();
            let busy = end.saturating_duration_since(now);
            self.stats.busy += busy;
            THREAD_BUSY.set(THREAD_BUSY.get() + busy);
            self.last_work = end;
            self.sleep_at = end.checked_add(self.config.spin);
            self.clock = Some(end);
            if !self.served.is_empty() {
                let metrics = self.services.metrics();
                for (method, code) in self.served.drain(..) {
                    metrics.method_at(method).record(code, busy);
                }
            }
        }
        work
    }

    fn insert(&mut self, conn: Conn, role: Role) -> SessionId {
        self.insert_admitted(conn, role, None)
    }

    /// Inserts a session holding `admitted`, its place under the connection limit (a served
    /// one's), until it is removed.
    fn insert_admitted(&mut self, mut conn: Conn, role: Role, admitted: Option<Admitted>) -> SessionId {
        conn.set_nonblocking(true);
        let ctx = self.config.conn.context(&conn, &self.pool);
        if matches!(role, Role::Server(_)) {
            self.services.metrics().sessions(conn.kind()).inc();
        }
        if conn.kind() != TransportKind::Shm {
            self.tcp_sessions += 1;
        }
        // Its handshake deadline and idle time are looked at on the next turn.
        self.due = Due::Now;
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
        let token = Token::Session(index as usize).into();
        let dead = self
            .readiness
            .add(&conn, token, Interest::READ)
            .err()
            .map(|e| TransportError::io("epoll_ctl", e));
        let session = Session {
            conn,
            ctx,
            role,
            backlog: Default::default(),
            more: false,
            dirty: false,
            blocked: false,
            watching: Interest::READ,
            hot: false,
            dead,
            readable: false,
            last_frame: Instant::now(),
            _admitted: admitted,
        };
        let slot = &mut self.slots[index as usize];
        slot.session = Some(session);
        let generation = slot.generation;
        self.heat(index as usize);
        SessionId { index, generation }
    }

    /// Puts session `i` (if any) on the hot list: something is to be done with it this turn.
    /// A session off the list had nothing due but its idle time (a quiet one: no call, no
    /// handshake), which [`due`](Self::due) now counts.
    #[inline]
    fn heat(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i).and_then(|slot| slot.session.as_mut()) {
            if !s.hot {
                s.hot = true;
                self.hot.push(i as u32);
                if let (Some(at), Role::Server(_)) =
                    (self.config.connections.idle_deadline(s.last_frame), &s.role)
                {
                    self.due.by(at);
                }
            }
        }
    }

    /// At the end of a turn: the hot list keeps the sessions that are not quiet (once each;
    /// a slot reused this turn may be on it twice).
    fn cool(&mut self) {
        // Only a TCP or UDP session can be quiet, and only a removed session leaves its slot
        // on the list: loops of shared-memory sessions that lost none keep the list as it is.
        let reaped = std::mem::take(&mut self.reaped);
        if self.tcp_sessions == 0 && !reaped {
            return;
        }
        let slots = &mut self.slots;
        if reaped {
            // The removed sessions' entries go, and a reused slot's second entry: each flag
            // is cleared, then set again by the first entry of its session.
            for &i in &self.hot {
                if let Some(s) = &mut slots[i as usize].session {
                    s.hot = false;
                }
            }
            self.hot.retain(|&i| match &mut slots[i as usize].session {
                Some(s) if !s.hot => {
                    s.hot = true;
                    true
                }
                _ => false,
            });
        }
        // Each session on the list once, flagged hot: one pass. A quiet session still in its
        // TLS handshake leaves too; its deadline is kept for `expire`.
        let mut handshake = None::<Instant>;
        self.hot.retain(|&i| {
            let Some(s) = &mut slots[i as usize].session else {
                return false;
            };
            s.hot = !s.quiet();
            if !s.hot {
                if let Some(d) = s.conn.handshake_deadline() {
                    handshake = Some(handshake.map_or(d, |h| h.min(d)));
                }
            }
            s.hot
        });
        if let Some(d) = handshake {
            self.handshake_scan = Some(self.handshake_scan.map_or(d, |h| h.min(d)));
            self.due.by(d);
        }
    }

    fn get(&self, id: SessionId) -> Option<&Session> {
        let slot = self.slots.get(id.index as usize)?;
        (slot.generation == id.generation).then_some(slot.session.as_ref()?)
    }

    /// The session `id` names, put on the hot list (whoever asks is about to act on it).
    fn get_mut(&mut self, id: SessionId) -> Option<&mut Session> {
        if self.slots.get(id.index as usize)?.generation != id.generation {
            return None;
        }
        self.heat(id.index as usize);
        self.slots[id.index as usize].session.as_mut()
    }
}

/// When a loop's [`expire`](EventLoop::expire) next has anything to do: the earliest call
/// deadline, handshake deadline and idle expiry of its hot sessions, and its next idle scan,
/// as of the last pass, lowered as calls with deadlines start and sessions join the hot list.
/// It may be early (a call ended, a frame came since), never late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    /// On the next turn (a session came whose handshake and idle time were not looked at).
    Now,
    At(Instant),
    /// Nothing is due.
    Never,
}

impl Due {
    fn passed(self, now: Instant) -> bool {
        match self {
            Due::Now => true,
            Due::At(at) => now >= at,
            Due::Never => false,
        }
    }

    /// Something is due at `at`.
    fn by(&mut self, at: Instant) {
        *self = match *self {
            Due::Now => Due::Now,
            Due::At(d) => Due::At(d.min(at)),
            Due::Never => Due::At(at),
        };
    }

    /// Whether `deadline` has passed at `now`; one still to come is noted as due.
    fn reached(&mut self, deadline: Option<Instant>, now: Instant) -> bool {
        match deadline {
            None => false,
            Some(d) if d > now => {
                self.by(d);
                false
            }
            Some(_) => true,
        }
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
