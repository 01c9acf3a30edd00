//! Readiness for an event loop: how long a turn may sleep, arming the shared-memory sessions
//! before it does, the wait on the loop's `epoll` set (the waker, the listeners, the setups
//! and the sessions, each registered once: a wait costs what is ready, not what is open),
//! accepting, and draining readable sessions frame by frame into the client or server side.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use ferry_transport::{Interest, Received, Transport, TransportError};

use ferry_buf::Pool;

use super::session::{Role, ServerSide};
use super::{EventLoop, Setup};
use crate::conn::{Accepted, Frame, Listener, TransportKind};
use crate::limits::Admission;
use crate::metrics::Admitted;
use crate::session::{ClientEvent, Event};

impl EventLoop {
    /// How long a sleeping turn may wait: until the next deadline, at most 100 ms (a dead
    /// shared-memory peer is noticed by a later call, not by its doorbell).
    pub(super) fn sleep_time(&self, now: Instant) -> Duration {
        let mut t = crate::conn::SHM_CHECK;
        // Every session with a deadline is hot, but for handshakes waiting off the list (the
        // earliest kept in `handshake_scan`) and setups (`setup_due`).
        for at in self.handshake_scan.into_iter().chain(self.setup_due) {
            t = t.min(at.saturating_duration_since(now));
        }
        let hot = self
            .hot
            .iter()
            .filter_map(|&i| self.slots[i as usize].session.as_ref());
        for s in hot {
            let next = match &s.role {
                Role::Server(srv) => srv.core.next_deadline(),
                Role::Client(c) => c.core.next_deadline(),
            };
            if let Some(at) = next.into_iter().chain(s.conn.handshake_deadline()).min() {
                t = t.min(at.saturating_duration_since(now));
            }
            if !s.backlog.is_empty() && s.conn.kind() == TransportKind::Shm {
                // Credits come back as acknowledgements; look again soon.
                t = t.min(Duration::from_millis(1));
            }
        }
        t
    }

    /// Before sleeping: arms every shared-memory session (processing what arrives meanwhile,
    /// at the turn's `now`).
    pub(super) fn arm(&mut self, now: Instant) -> bool {
        let mut work = false;
        // Every shared-memory session is hot.
        for k in 0..self.hot.len() {
            let i = self.hot[k] as usize;
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

    /// Waits on the loop's readiness set (at most `timeout`); adds what is ready to the turn's
    /// [`Ready`] lists: listeners, setups and sessions. Before waiting, each TCP session's interest is brought
    /// up to date: writability while it has something to write, readability unless answers
    /// wait in its backlog (a client that does not read its answers would otherwise keep its
    /// unread requests reported ready on every wait, and the loop from ever sleeping).
    pub(super) fn poll(&mut self, timeout: Option<Duration>, sleeping: bool) {
        for &i in &self.hot {
            let i = i as usize;
            let Some(s) = &mut self.slots[i].session else {
                continue;
            };
            if s.conn.kind() == TransportKind::Tcp && s.dead.is_none() {
                let interest = Interest {
                    read: s.backlog.is_empty(),
                    write: s.dirty || !s.backlog.is_empty() || s.conn.has_unsent(),
                };
                if interest != s.watching {
                    match self.readiness.modify(&s.conn, Token::Session(i).into(), interest) {
                        Ok(()) => s.watching = interest,
                        Err(e) => s.fail(TransportError::io("epoll_ctl", e)),
                    }
                }
            }
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
        // So does a pool the maker made after the last look, for a listener waiting for one.
        if sleeping && !self.shm_waiting.is_empty() && self.shm_pools.as_mut().is_some_and(|p| p.has_ready())
        {
            timeout = Some(Duration::ZERO);
        }
        if let Ok(events) = self.readiness.wait(timeout) {
            for event in events {
                match Token::from(event.token) {
                    Token::Waker => self.waker.drain(),
                    Token::Listener(i) => self.ready.listeners.push(i),
                    Token::Setup(fd) => self.ready.setups.push(fd),
                    Token::Session(i) => self.ready.sessions.push(i),
                }
            }
        }
        for k in 0..self.ready.sessions.len() {
            let i = self.ready.sessions[k];
            if let Some(s) = &mut self.slots[i].session {
                // Reported ready: a socket that refused a write may take it now.
                s.blocked = false;
            }
            self.heat(i);
        }
        self.ready.setups.sort_unstable();
        if sleeping {
            self.waker.awake();
        }
    }

    /// Accepts what waits on the ready listeners, each under the connection limit: over it, a
    /// peer is accepted and closed at once (counted). A shared-memory peer becomes a setup,
    /// stepped when its socket polls readable ([`step_setups`](Self::step_setups)), and is
    /// accepted only when a made pool waits for it (`pools.rs`): until then its listener is out
    /// of the readiness set, and back (and accepted from) once the maker has made one.
    pub(super) fn accept(&mut self) -> bool {
        let pool_ready =
            !self.shm_waiting.is_empty() && self.shm_pools.as_mut().is_some_and(|p| p.has_ready());
        if self.ready.listeners.is_empty() && !pool_ready {
            return false;
        }
        let mut work = false;
        // Taken while their peers are accepted (and put back: the list is reused).
        let ready = std::mem::take(&mut self.ready.listeners);
        let resumed = if pool_ready {
            std::mem::take(&mut self.shm_waiting)
        } else {
            Vec::new()
        };
        for &i in &resumed {
            if let Err(e) = self
                .readiness
                .add(&*self.listeners[i], Token::Listener(i).into(), Interest::READ)
            {
                eprintln!("ferry-rpc: a shared-memory listener could not be watched again (epoll_ctl): {e}");
            }
        }
        for &i in ready.iter().chain(&resumed) {
            let Some(listener) = self.listeners.get(i).cloned() else {
                continue;
            };
            loop {
                if let (Listener::Shm(_), Some(pools)) = (&*listener, &mut self.shm_pools) {
                    if !pools.has_ready() {
                        // Out of the set (level-triggered, it would report the waiting peer
                        // on every turn) until the maker rings.
                        let _ = self.readiness.remove(&*listener);
                        self.shm_waiting.push(i);
                        break;
                    }
                }
                let c = &self.config;
                let mut made = None;
                let shm_pool = || {
                    let pool = match &mut self.shm_pools {
                        Some(pools) => pools.take(&mut self.stats.shm_pools_made, || c.conn.shm_pool()),
                        None => c.conn.shm_pool(),
                    }?;
                    made = Some(pool.clone());
                    Ok(pool)
                };
                let accepted = crate::limits::accept(
                    &listener,
                    &self.pool,
                    &c.conn,
                    &c.connections,
                    self.services.metrics(),
                    shm_pool,
                );
                match accepted {
                    Ok(Some(Admission::Refused)) => work = true,
                    Ok(Some(Admission::Admitted(Accepted::Conn(conn), admitted))) => {
                        work = true;
                        self.stats.accepted += 1;
                        self.insert_admitted(
                            conn,
                            Role::Server(ServerSide::new(&self.config)),
                            Some(admitted),
                        );
                    }
                    Ok(Some(Admission::Admitted(accepted, admitted))) => {
                        work = true;
                        self.stats.accepted += 1;
                        self.add_setup(Setup {
                            accepted,
                            admitted,
                            pool: made,
                        });
                    }
                    Ok(None) => break,
                    // A peer whose connection cannot be set up costs its own connection only;
                    // the reason is logged, since the peer sees only a closed socket.
                    Err(e) => {
                        self.bury(made, None);
                        let at = listener
                            .local_addr()
                            .map_or_else(|_| "a listener".to_owned(), |a| a.to_string());
                        eprintln!("ferry-rpc: a connection on {at} failed its setup: {e}");
                        break;
                    }
                }
            }
        }
        self.ready.listeners = ready;
        work
    }

    /// Gives a failed setup's pool handle (the last, once the setup is dropped) to the
    /// reaper, and its place under the connection limit, given back once the pool is gone.
    fn bury(&self, pool: Option<Pool>, place: Option<Admitted>) {
        if let (Some(pool), Some(pools)) = (pool, &self.shm_pools) {
            pools.bury(pool, place);
        }
    }

    /// Steps the shared-memory setups whose sockets polled readable or whose deadline passed:
    /// done, a session; failed or late, closed and counted. A peer that says nothing costs its
    /// setup's place, never the loop's time.
    pub(super) fn step_setups(&mut self, now: Instant) -> bool {
        if self.ready.setups.is_empty() && self.setup_due.is_none_or(|d| d > now) {
            return false;
        }
        let mut work = false;
        let setups = std::mem::take(&mut self.setups);
        self.setup_due = None;
        for setup in setups {
            let deadline = setup.accepted.deadline();
            let due = deadline.is_some_and(|d| d <= now);
            let fd = setup.accepted.as_fd().as_raw_fd();
            if !due && self.ready.setups.binary_search(&fd).is_err() {
                self.note_setup_deadline(deadline);
                self.setups.push(setup);
                continue;
            }
            work = true;
            // Out of the set while it steps: done, its connection is registered as a session.
            let _ = self.readiness.remove(&setup.accepted);
            let Setup {
                accepted,
                admitted,
                pool,
            } = setup;
            match accepted.step() {
                Ok(Ok(conn)) => {
                    self.insert_admitted(conn, Role::Server(ServerSide::new(&self.config)), Some(admitted));
                }
                Ok(Err(accepted)) => self.add_setup(Setup {
                    accepted,
                    admitted,
                    pool,
                }),
                Err(e) => {
                    self.stats.closed += 1;
                    self.services.metrics().closed(crate::limits::handshake_end(&e));
                    self.bury(pool, Some(admitted));
                }
            }
        }
        work
    }

    /// Registers a shared-memory setup's socket and keeps it (a setup that cannot be
    /// registered is dropped: its peer sees the socket close; counted as failed).
    fn add_setup(&mut self, setup: Setup) {
        let fd = setup.accepted.as_fd().as_raw_fd();
        match self
            .readiness
            .add(&setup.accepted, Token::Setup(fd).into(), Interest::READ)
        {
            Ok(()) => {
                self.note_setup_deadline(setup.accepted.deadline());
                self.setups.push(setup);
            }
            Err(e) => {
                eprintln!("ferry-rpc: a shared-memory setup could not be watched (epoll_ctl): {e}");
                self.stats.closed += 1;
                self.services.metrics().closed(crate::Closed::HandshakeFailed);
                let Setup {
                    accepted,
                    admitted,
                    pool,
                } = setup;
                drop(accepted);
                self.bury(pool, Some(admitted));
            }
        }
    }

    /// Keeps `deadline` (a setup's) if it is the earliest.
    fn note_setup_deadline(&mut self, deadline: Option<Instant>) {
        if let Some(d) = deadline {
            self.setup_due = Some(self.setup_due.map_or(d, |e| e.min(d)));
        }
    }

    /// Drains readable sessions (every shared-memory one while busy-polling).
    pub(super) fn read(&mut self, now: Instant) -> bool {
        let mut work = false;
        for &i in &self.ready.sessions {
            if let Some(s) = &mut self.slots[i].session {
                s.readable = true;
            }
        }
        // The hot sessions (the ready ones among them); the list grows if a continuation acts
        // on another session.
        for k in 0..self.hot.len() {
            let i = self.hot[k] as usize;
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

    /// One frame of session `i`, read by the side of the protocol the session is.
    fn on_frame(&mut self, i: usize, frame: Frame, now: Instant) {
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        s.last_frame = now;
        let meta = frame.meta();
        let raw = if crate::wire::carries_message(meta.flags) {
            None
        } else {
            frame.bytes()
        };
        let len = frame.window_len();
        let meaning = match &mut s.role {
            Role::Client(client) => client
                .core
                .on_frame(meta, raw, len)
                .map(|o| o.map(Meaning::Outcome)),
            Role::Server(server) => server
                .core
                .on_frame(meta, raw, len, now)
                .map(|e| e.map(Meaning::Event)),
        };
        match meaning {
            Ok(None) => {}
            Ok(Some(Meaning::Outcome(outcome))) => self.on_outcome(i, outcome, &frame),
            Ok(Some(Meaning::Event(event))) => self.on_event(i, event, frame, now),
            Err(e) => {
                self.stats.protocol_errors += 1;
                s.fail(TransportError::Config(format!("RPC protocol: {e}")));
            }
        }
    }
}

/// Descriptors ready after a wait.
#[derive(Default)]
pub(super) struct Ready {
    pub(super) listeners: Vec<usize>,
    /// Shared-memory setups by descriptor, in increasing order.
    pub(super) setups: Vec<RawFd>,
    pub(super) sessions: Vec<usize>,
}

impl Ready {
    /// Empties the lists, keeping their memory.
    pub(super) fn clear(&mut self) {
        self.listeners.clear();
        self.setups.clear();
        self.sessions.clear();
    }
}

/// What a descriptor in the loop's readiness set is: its token's top 32 bits say which kind,
/// the low 32 which one (a listener's index, a setup's descriptor, a session's slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Waker,
    Listener(usize),
    Setup(RawFd),
    Session(usize),
}

impl From<Token> for u64 {
    fn from(t: Token) -> u64 {
        let (kind, n) = match t {
            Token::Waker => (0, 0),
            Token::Listener(i) => (1, i as u64),
            Token::Setup(fd) => (2, u64::from(fd as u32)),
            Token::Session(i) => (3, i as u64),
        };
        kind << 32 | (n & 0xffff_ffff)
    }
}

impl From<u64> for Token {
    fn from(t: u64) -> Token {
        let n = t & 0xffff_ffff;
        match t >> 32 {
            1 => Token::Listener(n as usize),
            2 => Token::Setup(n as u32 as RawFd),
            3 => Token::Session(n as usize),
            _ => Token::Waker,
        }
    }
}

/// What a frame meant to the session's side of the protocol.
enum Meaning {
    Outcome(ClientEvent<super::Continuation>),
    Event(Event),
}
