//! Readiness for an event loop: how long a turn may sleep, arming the shared-memory sessions
//! before it does, `poll(2)` over the waker, the listeners and the sessions, accepting, and
//! draining readable sessions frame by frame into the client or server side.

use std::time::{Duration, Instant};

use ferry_transport::{Received, Transport, TransportError};
use rustix::event::{PollFd, PollFlags};

use super::session::{Role, ServerSide};
use super::{EventLoop, Setup};
use crate::conn::Accepted;
use crate::conn::{Frame, TransportKind};
use crate::session::{ClientEvent, Event};

impl EventLoop {
    /// How long a sleeping turn may wait: until the next deadline, at most 100 ms (a dead
    /// shared-memory peer is noticed by a later call, not by its doorbell).
    pub(super) fn sleep_time(&self, now: Instant) -> Duration {
        let mut t = crate::conn::SHM_CHECK;
        for s in self.slots.iter().filter_map(|s| s.session.as_ref()) {
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
        for setup in &self.setups {
            if let Some(at) = setup.accepted.deadline() {
                t = t.min(at.saturating_duration_since(now));
            }
        }
        t
    }

    /// Before sleeping: arms every shared-memory session (processing what arrives meanwhile).
    pub(super) fn arm(&mut self) -> bool {
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
    pub(super) fn poll(&mut self, timeout: Option<Duration>, sleeping: bool) -> Ready {
        let mut fds = Vec::with_capacity(1 + self.listeners.len() + self.slots.len());
        let mut who = Vec::with_capacity(fds.capacity());
        fds.push(PollFd::new(&*self.waker, PollFlags::IN));
        who.push(Who::Waker);
        for (i, l) in self.listeners.iter().enumerate() {
            fds.push(PollFd::new(&**l, PollFlags::IN));
            who.push(Who::Listener(i));
        }
        for (i, setup) in self.setups.iter().enumerate() {
            fds.push(PollFd::new(&setup.accepted, PollFlags::IN));
            who.push(Who::Setup(i));
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
                    Who::Setup(i) => ready.setups.push(i),
                    Who::Session(i) => ready.sessions.push(i),
                }
            }
        }
        if sleeping {
            self.waker.awake();
        }
        ready
    }

    /// Accepts what waits on the ready listeners, each under the connection limit: over it, a
    /// peer is accepted and closed at once (counted). A shared-memory peer becomes a setup,
    /// stepped when its socket polls readable ([`step_setups`](Self::step_setups)).
    pub(super) fn accept(&mut self, ready: &Ready) -> bool {
        let mut work = false;
        let max = self.config.connections.max_connections;
        for &i in &ready.listeners {
            let Some(listener) = self.listeners.get(i).cloned() else {
                continue;
            };
            loop {
                let Some(admitted) = self.services.metrics().admit(max) else {
                    match listener.try_refuse() {
                        Ok(true) => {
                            work = true;
                            self.services.metrics().closed(crate::Closed::Limit);
                            continue;
                        }
                        Ok(false) | Err(_) => break,
                    }
                };
                match listener.try_accept(&self.pool, &self.config.conn) {
                    Ok(Some(Accepted::Conn(conn))) => {
                        work = true;
                        self.stats.accepted += 1;
                        self.insert_admitted(
                            conn,
                            Role::Server(ServerSide::new(&self.config)),
                            Some(admitted),
                        );
                    }
                    Ok(Some(accepted)) => {
                        work = true;
                        self.stats.accepted += 1;
                        self.setups.push(Setup { accepted, admitted });
                    }
                    Ok(None) => break,
                    // A peer whose connection cannot be set up costs its own connection only;
                    // the reason is logged, since the peer sees only a closed socket.
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

    /// Steps the shared-memory setups whose sockets polled readable or whose deadline passed:
    /// done, a session; failed or late, closed and counted. A peer that says nothing costs its
    /// setup's place, never the loop's time.
    pub(super) fn step_setups(&mut self, ready: &Ready, now: Instant) -> bool {
        if self.setups.is_empty() {
            return false;
        }
        let mut work = false;
        let setups = std::mem::take(&mut self.setups);
        for (i, setup) in setups.into_iter().enumerate() {
            let due = setup.accepted.deadline().is_some_and(|d| d <= now);
            if !due && ready.setups.binary_search(&i).is_err() {
                self.setups.push(setup);
                continue;
            }
            work = true;
            let Setup { accepted, admitted } = setup;
            match accepted.step() {
                Ok(Ok(conn)) => {
                    self.insert_admitted(conn, Role::Server(ServerSide::new(&self.config)), Some(admitted));
                }
                Ok(Err(accepted)) => self.setups.push(Setup { accepted, admitted }),
                Err(e) => {
                    self.stats.closed += 1;
                    self.services.metrics().closed(crate::limits::handshake_end(&e));
                }
            }
        }
        work
    }

    /// Drains readable sessions (every shared-memory one while busy-polling).
    pub(super) fn read(&mut self, ready: &Ready, now: Instant) -> bool {
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

/// Descriptors ready after a poll.
#[derive(Default)]
pub(super) struct Ready {
    pub(super) listeners: Vec<usize>,
    /// Shared-memory setups, in increasing order.
    pub(super) setups: Vec<usize>,
    pub(super) sessions: Vec<usize>,
}

/// What a descriptor polled is.
enum Who {
    Waker,
    Listener(usize),
    Setup(usize),
    Session(usize),
}

/// What a frame meant to the session's side of the protocol.
enum Meaning {
    Outcome(ClientEvent),
    Event(Event),
}
