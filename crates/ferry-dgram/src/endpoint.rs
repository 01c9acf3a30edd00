//! The endpoint: every session of one socket, the handshake, resets, and the driver's
//! interface (`handle_packet`, `poll_transmit`, `poll_timeout`, `handle_timeout`, `poll_event`).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::ops::Bound;
use std::time::Instant;

use ferry_buf::{Pool, SharedBuf};
use ferry_transport::Meta;

use crate::event::{ConnectError, Event, SendError, SessionError, Transmit};
use crate::packet::{Body, Header, Limits, Packet, SessionId};
use crate::session::Session;
use crate::stats::{Dropped, SessionStats, Stats};
use crate::{Config, ConfigError};

/// One socket's sessions. Sans-IO: a driver feeds it datagrams and the time, and sends what
/// [`poll_transmit`](Self::poll_transmit) returns; the application reads
/// [`poll_event`](Self::poll_event).
pub struct Endpoint {
    config: Config,
    limits: Limits,
    pool: Pool,
    epoch: u64,
    /// SplitMix64 state: session ids.
    rng: u64,
    sessions: BTreeMap<SessionId, Session>,
    /// Reset packets to send (answers to packets for unknown sessions).
    resets: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
    /// The session that sent last: the next transmit is sought after it (round robin).
    cursor: SessionId,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Endpoint {
    /// An endpoint receiving into `pool`. `seed` must be random per start (the driver takes it
    /// from the OS): it gives the epoch, by which peers see this endpoint restart, and the
    /// session ids, which a forger then has to guess.
    pub fn new(config: Config, pool: Pool, seed: u64) -> Result<Endpoint, ConfigError> {
        config.validate()?;
        if config.max_message_len as usize > pool.max_class() {
            return Err(ConfigError("max_message_len exceeds the pool's largest buffer"));
        }
        let mut rng = seed;
        let epoch = splitmix(&mut rng);
        Ok(Endpoint {
            limits: Limits {
                max_datagram: config.mtu,
                max_message_len: config.max_message_len,
            },
            config,
            pool,
            epoch,
            rng,
            sessions: BTreeMap::new(),
            resets: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            cursor: SessionId::NONE,
        })
    }

    /// This start's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// One session's state, if it exists.
    pub fn session_stats(&self, session: SessionId) -> Option<SessionStats> {
        self.sessions.get(&session).map(Session::stats)
    }

    /// Opens a session to `peer`: a Connect goes out with the next transmits, and
    /// [`Event::Connected`] follows the Accept. Messages may be sent at once; they leave after
    /// the handshake.
    pub fn connect(&mut self, peer: SocketAddr) -> Result<SessionId, ConnectError> {
        if self.sessions.len() >= self.config.max_sessions {
            return Err(ConnectError::SessionLimit(self.config.max_sessions));
        }
        let id = self.new_id();
        self.sessions.insert(id, Session::new(id, peer, &self.config));
        Ok(id)
    }

    fn new_id(&mut self) -> SessionId {
        loop {
            let id = SessionId(splitmix(&mut self.rng) as u32);
            if id != SessionId::NONE && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    /// Queues `data` as one message on `session`. The buffer is referenced, not copied: each
    /// packet's payload is a slice of it until acknowledged.
    pub fn send(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), SendError> {
        self.check_send(session, data.len())?;
        if let Some(s) = self.sessions.get_mut(&session) {
            s.queue(meta, data);
        }
        Ok(())
    }

    /// [`send`](Self::send) for bytes outside the pool: copied into a pool buffer first.
    pub fn send_copy(&mut self, session: SessionId, meta: Meta, data: &[u8]) -> Result<(), SendError> {
        self.check_send(session, data.len())?;
        let buf = self.pool.copy_from(data)?;
        self.send(session, meta, buf)
    }

    fn check_send(&self, session: SessionId, len: usize) -> Result<(), SendError> {
        let max = self.config.max_message_len;
        if len > max as usize {
            return Err(SendError::TooLong { len, max });
        }
        let s = self
            .sessions
            .get(&session)
            .ok_or(SendError::UnknownSession(session))?;
        if s.window_full() {
            return Err(SendError::WindowFull {
                window: self.config.window,
            });
        }
        Ok(())
    }

    /// Closes `session` at once: it is removed, a Reset tells the peer (which then sees
    /// [`Event::SessionReset`] with [`SessionError::PeerReset`]), and the metas of its messages
    /// not wholly acknowledged are returned (they may or may not have been delivered).
    pub fn close(&mut self, session: SessionId) -> Result<Vec<Meta>, SendError> {
        let s = self
            .sessions
            .remove(&session)
            .ok_or(SendError::UnknownSession(session))?;
        if s.connected {
            let reset = Header {
                dst: s.peer_session,
                src: session,
                epoch: self.epoch,
                body: Body::Reset,
            };
            self.resets.push_back(Transmit::new(s.peer, &reset, None));
        }
        Ok(s.pending())
    }

    /// A datagram from `from`. Whatever it is, nothing panics: a packet that cannot be used is
    /// dropped, counted in [`Stats::drops`], and returned as the reason.
    pub fn handle_packet(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<(), Dropped> {
        self.stats.packets_received += 1;
        let r = self.dispatch(now, from, bytes);
        if let Err(d) = &r {
            self.stats.drops.count(d);
        }
        r
    }

    fn dispatch(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<(), Dropped> {
        let Packet { header: h, payload } = Packet::decode(bytes, &self.limits)?;
        if h.dst != SessionId::NONE && !self.sessions.contains_key(&h.dst) {
            if h.body != Body::Reset {
                self.answer_reset(from, &h);
            }
            return Err(Dropped::UnknownSession);
        }
        match h.body {
            Body::Connect { seg } => self.on_connect(from, &h, seg),
            Body::Accept { seg } => {
                let s = lookup(&mut self.sessions, from, &h)?;
                if s.connected {
                    return Err(if h.epoch == s.peer_epoch {
                        Dropped::Duplicate
                    } else {
                        Dropped::Forged
                    });
                }
                let seg = usize::from(seg);
                if seg > self.config.segment_size() || seg < self.config.min_segment() {
                    return Err(Dropped::Handshake);
                }
                s.on_accept(now, h.src, h.epoch, seg, &mut self.stats);
                self.events.push_back(Event::Connected {
                    session: h.dst,
                    peer: from,
                });
                Ok(())
            }
            Body::Reset => {
                let s = lookup(&mut self.sessions, from, &h)?;
                // Before the Accept, a Reset from the server's address naming this session
                // (an id only the Connect carried) is the server refusing it.
                let error = if !s.connected || h.epoch == s.peer_epoch {
                    SessionError::PeerReset
                } else {
                    SessionError::PeerRestarted
                };
                self.end(h.dst, error);
                Ok(())
            }
            Body::Data(d) => {
                let s = lookup_connected(&mut self.sessions, from, &h)?;
                // The acknowledgement it carries first: a data packet acknowledging nothing
                // new is the rule, not a duplicate; one acknowledging packets never sent is
                // dropped whole.
                match s.on_ack(now, d.cum, d.sack, &mut self.stats) {
                    Ok(()) | Err(Dropped::Duplicate) => {}
                    Err(e) => return Err(e),
                }
                s.on_data(&d, payload, &self.pool, &mut self.events, &mut self.stats)
            }
            Body::Ack { cum, sack } => {
                let s = lookup_connected(&mut self.sessions, from, &h)?;
                s.on_ack(now, cum, sack, &mut self.stats)
            }
        }
    }

    fn on_connect(&mut self, from: SocketAddr, h: &Header, seg: u16) -> Result<(), Dropped> {
        let known = |s: &Session| s.connected && s.peer == from && s.peer_session == h.src;
        if let Some(s) = self
            .sessions
            .values_mut()
            .find(|s| known(s) && s.peer_epoch == h.epoch)
        {
            // Our Accept was lost.
            s.resend_handshake();
            return Err(Dropped::Duplicate);
        }
        // The peer at this address started again: its sessions of the old epoch are gone.
        let restarted: Vec<SessionId> = self
            .sessions
            .values()
            .filter(|s| s.connected && s.peer == from && s.peer_epoch != h.epoch)
            .map(|s| s.id)
            .collect();
        for id in restarted {
            self.end(id, SessionError::PeerRestarted);
        }
        let seg = usize::from(seg).min(self.config.segment_size());
        if seg < self.config.min_segment() {
            return Err(Dropped::Handshake);
        }
        if self.sessions.len() >= self.config.max_sessions {
            return Err(Dropped::SessionLimit);
        }
        let id = self.new_id();
        let mut s = Session::new(id, from, &self.config);
        s.establish(h.src, h.epoch, seg);
        s.resend_handshake();
        self.sessions.insert(id, s);
        self.events.push_back(Event::Connected {
            session: id,
            peer: from,
        });
        Ok(())
    }

    /// Tells the sender of a packet for an unknown session that it has none here, within
    /// [`Config::max_pending_resets`].
    fn answer_reset(&mut self, from: SocketAddr, h: &Header) {
        if self.resets.len() >= self.config.max_pending_resets {
            self.stats.drops.resets_suppressed += 1;
            return;
        }
        let reset = Header {
            dst: h.src,
            src: h.dst,
            epoch: self.epoch,
            body: Body::Reset,
        };
        self.resets.push_back(Transmit::new(from, &reset, None));
    }

    /// Removes a session; its unacknowledged messages fail.
    fn end(&mut self, id: SessionId, error: SessionError) {
        let Some(s) = self.sessions.remove(&id) else {
            return;
        };
        let failed = s.pending();
        self.events.push_back(match error {
            SessionError::Unresponsive => Event::SessionClosed {
                session: id,
                error,
                failed,
            },
            _ => Event::SessionReset {
                session: id,
                error,
                failed,
            },
        });
    }

    /// The next datagram to send, if any. Call until `None` after every input (packets,
    /// sends, timeouts). Sessions take turns.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let t = match self.resets.pop_front() {
            Some(t) => t,
            None => {
                let (epoch, stats, cursor) = (self.epoch, &mut self.stats, self.cursor);
                let mut poll = |(id, s): (&SessionId, &mut Session)| {
                    s.poll_transmit(now, epoch, stats).map(|t| (*id, t))
                };
                let after = (Bound::Excluded(cursor), Bound::Unbounded);
                let found = self.sessions.range_mut(after).find_map(&mut poll);
                let (id, t) = found.or_else(|| self.sessions.range_mut(..=cursor).find_map(&mut poll))?;
                self.cursor = id;
                t
            }
        };
        self.stats.packets_sent += 1;
        Some(t)
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due, if any timer is armed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sessions.values().filter_map(Session::timer).min()
    }

    /// Runs the timers due at `now`: retransmissions, and giving up unresponsive peers.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<SessionId> = self
            .sessions
            .values()
            .filter(|s| s.timer().is_some_and(|t| t <= now))
            .map(|s| s.id)
            .collect();
        for id in due {
            let Some(s) = self.sessions.get_mut(&id) else {
                continue;
            };
            if !s.on_timeout(now, &self.config, &mut self.stats) {
                self.end(id, SessionError::Unresponsive);
            }
        }
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// The session a packet names, if it comes from that session's peer (address, and session
/// id once known).
fn lookup<'a>(
    sessions: &'a mut BTreeMap<SessionId, Session>,
    from: SocketAddr,
    h: &Header,
) -> Result<&'a mut Session, Dropped> {
    let s = sessions.get_mut(&h.dst).ok_or(Dropped::UnknownSession)?;
    if s.peer != from || (s.connected && s.peer_session != h.src) {
        return Err(Dropped::Forged);
    }
    Ok(s)
}

/// [`lookup`], for data and acknowledgements: the session must be connected and the packet
/// of the peer's current epoch.
fn lookup_connected<'a>(
    sessions: &'a mut BTreeMap<SessionId, Session>,
    from: SocketAddr,
    h: &Header,
) -> Result<&'a mut Session, Dropped> {
    let s = lookup(sessions, from, h)?;
    if !s.connected {
        return Err(Dropped::NotConnected);
    }
    if h.epoch != s.peer_epoch {
        return Err(Dropped::Forged);
    }
    Ok(s)
}
