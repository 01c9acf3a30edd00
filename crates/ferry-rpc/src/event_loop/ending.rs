//! How calls end without an answer in an event loop: deadlines due, on both sides (a served
//! call is answered `DEADLINE_EXCEEDED` and its worker told; a client call's continuation runs
//! with the status and the server is told to stop), and dead sessions removed (their client
//! calls fail with `UNAVAILABLE`, their background handlers are told).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ferry_transport::Meta;

use super::session::Role;
use super::streams::Served;
use super::{Continuation, Due, EventLoop};
use crate::Closed;
use crate::conn::{Conn, TransportKind};
use crate::service::Encoded;
use crate::session::Outcome;
use crate::status::{Code, Status};

impl EventLoop {
    /// Deadlines due, on both sides; what is due next kept in [`due`](EventLoop::due) (turns
    /// before it do not call this).
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        let mut due: Vec<(Continuation, Status)> = Vec::new();
        let mut out: Vec<(Meta, Encoded)> = Vec::new();
        let mut streams: Vec<Served> = Vec::new();
        let limits = self.config.connections;
        let mut next = Due::Never;
        if limits.idle_timeout.is_some() {
            if now >= self.idle_scan {
                // Idle sessions are quiet, off the hot list: every session is looked at here.
                self.idle_scan = now + crate::conn::SHM_CHECK;
                for i in 0..self.slots.len() {
                    self.heat(i);
                }
            }
            next.by(self.idle_scan);
        }
        // Handshakes waiting off the hot list: once the earliest deadline passes, every
        // session still in its handshake is looked at below (and those not yet due go back).
        if let Some(at) = self.handshake_scan {
            if at <= now {
                self.handshake_scan = None;
                for i in 0..self.slots.len() {
                    let handshaking = self.slots[i]
                        .session
                        .as_ref()
                        .is_some_and(|s| s.conn.handshake_deadline().is_some());
                    if handshaking {
                        self.heat(i);
                    }
                }
            } else {
                next.by(at);
            }
        }
        for k in 0..self.hot.len() {
            let Some(s) = &mut self.slots[self.hot[k] as usize].session else {
                continue;
            };
            // A TLS handshake past its deadline: the step names the timeout, and the session
            // is removed with the dead ones (counted there). The peer cost its slot, never the
            // loop's time.
            match s.conn.handshake_deadline() {
                Some(d) if d <= now => {
                    if let Err(e) = s.conn.handshake_step() {
                        s.fail(e);
                    }
                    next = Due::Now;
                    continue;
                }
                Some(d) => next.by(d),
                None => {}
            }
            if let (Some(at), Role::Server(_)) = (limits.idle_deadline(s.last_frame), &s.role) {
                if s.dead.is_none() && s.busy() == 0 && at <= now {
                    self.services.metrics().closed(Closed::Idle);
                    s.fail(limits.idle_error());
                    continue;
                }
                // A busy session past it is looked at again on every turn until it is not.
                next.by(at);
            }
            match &mut s.role {
                Role::Server(server) => {
                    if !next.reached(server.core.next_deadline(), now) {
                        continue;
                    }
                    for (id, meta, payload) in server.core.expire(now) {
                        if let Some(flag) = server.background.remove(&id) {
                            flag.store(true, Ordering::Relaxed);
                        }
                        match server.streams.remove(&id) {
                            Some(served) => streams.push(served),
                            None => self
                                .services
                                .metrics()
                                .method(meta.kind)
                                .record(Code::DeadlineExceeded, Duration::ZERO),
                        }
                        out.push((meta, Encoded::from_vec(payload)));
                    }
                    if let Some(d) = server.core.next_deadline() {
                        next.by(d);
                    }
                }
                Role::Client(client) => {
                    if !next.reached(client.core.next_deadline(), now) {
                        continue;
                    }
                    for (outcome, cancel) in client.core.expire(now) {
                        if let Outcome::Failed { status, value, .. } = outcome {
                            due.push((value, status));
                        }
                        out.push((cancel, Encoded::default()));
                    }
                    if let Some(d) = client.core.next_deadline() {
                        next.by(d);
                    }
                }
            }
            for (meta, encoded) in out.drain(..) {
                s.transmit(meta, encoded);
            }
        }
        // Before the continuations: the calls they start lower it.
        self.due = next;
        if due.is_empty() && streams.is_empty() {
            return false;
        }
        let why = Status::new(Code::DeadlineExceeded, "deadline exceeded (server)");
        for served in streams {
            self.cancel_served(served, &why);
        }
        for (then, status) in due {
            then(self, Err(status));
        }
        true
    }

    /// Publishes the served datagram sessions' counters to the metrics: the closed ones' and
    /// the open ones'.
    pub(super) fn publish_datagrams(&self) {
        let mut sums = self.datagrams_closed;
        let served = self.slots.iter().filter_map(|slot| slot.session.as_ref());
        for s in served.filter(|s| matches!(s.role, Role::Server(_))) {
            if let Some(stats) = s.conn.datagram_stats() {
                sums[s.conn.kind() as usize].add(&stats, true);
            }
        }
        self.datagrams.publish(sums);
    }

    /// Removes dead sessions; fails their client calls with `UNAVAILABLE`.
    pub(super) fn reap(&mut self) -> bool {
        let mut lost: Vec<(Continuation, Status)> = Vec::new();
        let mut streams: Vec<(Served, Status)> = Vec::new();
        let mut work = false;
        for k in 0..self.hot.len() {
            let index = self.hot[k] as usize;
            let slot = &mut self.slots[index];
            if slot.session.as_ref().is_none_or(|s| s.dead.is_none()) {
                continue;
            }
            let mut s = slot.session.take().expect("checked");
            slot.generation = slot.generation.wrapping_add(1);
            self.reaped = true;
            self.free.push(index as u32);
            self.stats.closed += 1;
            work = true;
            let why = s.dead.take().expect("checked");
            // A served shared-memory session's pool is unmapped on the reaper's thread: the
            // loop keeps a handle until the session is dropped below, then gives it away.
            let pool = match (&s.conn, &self.shm_pools, &s.role) {
                (Conn::Shm(c), Some(_), Role::Server(_)) => Some(c.pool().clone()),
                _ => None,
            };
            // Out of the set before its descriptor closes (a descriptor the transport shares
            // would otherwise stay registered).
            let _ = self.readiness.remove(&s.conn);
            if s.conn.kind() != TransportKind::Shm {
                self.tcp_sessions -= 1;
            }
            match &mut s.role {
                Role::Server(server) => {
                    // The peer sees an alert at most: the cause is logged here, as the tokio
                    // server logs a failed handshake.
                    if ferry_net::TlsError::of(&why).is_some() {
                        eprintln!("ferry-rpc: a TLS session failed: {why}");
                    }
                    if s.conn.handshake_deadline().is_some() {
                        self.services.metrics().closed(crate::limits::handshake_end(&why));
                    }
                    self.services.metrics().sessions(s.conn.kind()).dec();
                    if let Some(stats) = s.conn.datagram_stats() {
                        self.datagrams_closed[s.conn.kind() as usize].add(&stats, false);
                    }
                    server.core.lost();
                    for flag in server.background.values() {
                        flag.store(true, Ordering::Relaxed);
                    }
                    for (_, served) in server.streams.drain() {
                        let status = Status::new(Code::Unavailable, format!("connection lost: {why}"));
                        streams.push((served, status));
                    }
                }
                Role::Client(client) => {
                    for outcome in client.core.lost() {
                        if let Outcome::Failed { value, .. } = outcome {
                            let status = Status::new(Code::Unavailable, format!("connection lost: {why}"));
                            lost.push((value, status));
                        }
                    }
                }
            }
            drop(s);
            if let (Some(pool), Some(pools)) = (pool, &self.shm_pools) {
                pools.bury(pool, None);
            }
        }
        for (served, status) in streams {
            self.cancel_served(served, &status);
        }
        for (then, status) in lost {
            then(self, Err(status));
        }
        work
    }
}
