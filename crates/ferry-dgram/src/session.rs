//! One session: its sending side (segmentation, credits, window, acknowledgements, loss
//! recovery, congestion window) and its receiving side (duplicate suppression, in-place
//! reassembly, in-order delivery, acknowledgements). No I/O: it is fed packets and `now`
//! by the [`Endpoint`](crate::Endpoint) and returns what to send.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferry_buf::{BufMut, Pool, SharedBuf};
use ferry_transport::Meta;

use crate::Config;
use crate::congestion::Congestion;
use crate::event::{Event, Transmit};
use crate::packet::{Body, DataHeader, Header, SessionId};
use crate::rtt::Rtt;
use crate::stats::{Dropped, SessionStats, Stats};

/// Packets acknowledged above an unacknowledged one before it is taken as lost.
const DUP_THRESHOLD: usize = 3;

/// A message queued or in flight.
struct OutMsg {
    seq: u64,
    meta: Meta,
    data: SharedBuf,
    /// Its first packet number and packet count, assigned once the segment size is agreed.
    first_pkt: u64,
    count: u16,
}

/// A sent packet not yet below the cumulative acknowledgement.
struct Sent {
    at: Instant,
    acked: bool,
    /// Taken as lost and waiting to be sent again.
    lost: bool,
    /// Sent more than once (no RTT sample from it: Karn's rule).
    retransmitted: bool,
}

/// A message being reassembled.
struct InMsg {
    first_pkt: u64,
    count: u16,
    len: usize,
    meta: Option<Meta>,
    buf: BufMut,
    received: u16,
}

pub(crate) struct Session {
    pub(crate) id: SessionId,
    pub(crate) peer: SocketAddr,
    /// The peer's id for this session ([`SessionId::NONE`] until the Accept arrives).
    pub(crate) peer_session: SessionId,
    pub(crate) peer_epoch: u64,
    pub(crate) connected: bool,
    /// A Connect (client, not connected) or Accept (server) is to be sent.
    handshake_due: bool,
    /// When the last Connect left.
    connect_sent: Option<Instant>,
    /// The message bytes per data packet (this side's until the handshake agrees on one).
    seg: usize,
    credits: u32,
    window: usize,

    // Sending.
    out: VecDeque<OutMsg>,
    next_seq: u64,
    /// The packet number the next message to be numbered starts at.
    next_pkt: u64,
    /// The lowest packet not acknowledged.
    snd_una: u64,
    /// The next packet sent for the first time.
    snd_nxt: u64,
    /// One entry per packet in `snd_una..snd_nxt`.
    sent: VecDeque<Sent>,
    congestion: Congestion,
    rtt: Rtt,
    timer: Option<Instant>,
    timeouts: u32,
    stalled: bool,
    /// A packet may be marked lost and not yet sent again: only then is `sent` searched for one.
    lost_waiting: bool,

    // Receiving.
    /// Every packet below it has arrived.
    rcv_cum: u64,
    /// Bit `i`: packet `rcv_cum + i` has arrived (bit 0 is always clear).
    rcv_bits: u64,
    /// The next message to deliver; slot `i` of `incoming` is message `next_deliver + i`.
    next_deliver: u64,
    incoming: VecDeque<Option<InMsg>>,
    ack_due: bool,
}

impl Session {
    /// A session this side opens (`peer_session` unknown) or accepts.
    pub(crate) fn new(id: SessionId, peer: SocketAddr, config: &Config) -> Session {
        Session {
            id,
            peer,
            peer_session: SessionId::NONE,
            peer_epoch: 0,
            connected: false,
            handshake_due: true,
            connect_sent: None,
            seg: config.segment_size(),
            credits: config.credits,
            window: config.window,
            out: VecDeque::new(),
            next_seq: 0,
            next_pkt: 0,
            snd_una: 0,
            snd_nxt: 0,
            sent: VecDeque::new(),
            congestion: Congestion::new(config.credits, config.timely),
            rtt: Rtt::new(config),
            timer: None,
            timeouts: 0,
            stalled: false,
            lost_waiting: false,
            rcv_cum: 0,
            rcv_bits: 0,
            next_deliver: 0,
            incoming: VecDeque::new(),
            ack_due: false,
        }
    }

    /// The handshake is done: the peer's id and epoch, and the segment size both use.
    pub(crate) fn establish(&mut self, peer_session: SessionId, peer_epoch: u64, seg: usize) {
        self.peer_session = peer_session;
        self.peer_epoch = peer_epoch;
        self.seg = seg;
        self.connected = true;
        self.timer = None;
        self.timeouts = 0;
        self.rtt.reset_backoff();
        for i in 0..self.out.len() {
            self.number(i);
        }
    }

    /// The client's side of [`establish`](Self::establish): the Accept arrived. A Connect
    /// sent once gives the first RTT sample (Karn: none if it was sent again).
    pub(crate) fn on_accept(
        &mut self,
        now: Instant,
        peer_session: SessionId,
        peer_epoch: u64,
        seg: usize,
        stats: &mut Stats,
    ) {
        if let (Some(at), 0) = (self.connect_sent, self.timeouts) {
            self.rtt.sample(now.saturating_duration_since(at));
            stats.rtt = self.rtt.srtt();
        }
        self.establish(peer_session, peer_epoch, seg);
    }

    /// Assigns message `i`'s packet numbers (messages queued before the handshake wait for
    /// the agreed segment size).
    fn number(&mut self, i: usize) {
        let seg = self.seg;
        let m = &mut self.out[i];
        let count = m.data.len().div_ceil(seg).max(1);
        m.count = u16::try_from(count).expect("Config::min_segment bounds the packet count");
        m.first_pkt = self.next_pkt;
        self.next_pkt += u64::from(m.count);
    }

    pub(crate) fn window_full(&self) -> bool {
        self.out.len() >= self.window
    }

    pub(crate) fn queue(&mut self, meta: Meta, data: SharedBuf) {
        self.out.push_back(OutMsg {
            seq: self.next_seq,
            meta,
            data,
            first_pkt: 0,
            count: 0,
        });
        self.next_seq += 1;
        if self.connected {
            self.number(self.out.len() - 1);
        }
    }

    /// The metas of the messages not wholly acknowledged: what fails when the session ends.
    pub(crate) fn pending(&self) -> Vec<Meta> {
        self.out.iter().map(|m| m.meta).collect()
    }

    pub(crate) fn timer(&self) -> Option<Instant> {
        self.timer
    }

    pub(crate) fn stats(&self) -> SessionStats {
        let unacked = (self.snd_nxt - self.snd_una) as u32;
        SessionStats {
            connected: self.connected,
            unacked,
            credits: self.credits - unacked,
            cwnd: self.congestion.window(),
            messages_in_flight: self.out.len(),
            bytes_in_flight: self.out.iter().map(|m| m.data.len()).sum(),
            srtt: self.rtt.srtt(),
            rto: self.rtt.rto(),
        }
    }

    /// A duplicate Connect (our Accept was lost): send the Accept again.
    pub(crate) fn resend_handshake(&mut self) {
        self.handshake_due = true;
    }

    /// The next packet this session wants to send, if any: the handshake, a lost packet
    /// again, a new packet within credits and the congestion window, each data packet
    /// carrying this side's acknowledgement; and only when no data leaves, an acknowledgement
    /// due in an Ack of its own.
    pub(crate) fn poll_transmit(&mut self, now: Instant, epoch: u64, stats: &mut Stats) -> Option<Transmit> {
        let src = self.id;
        let header = |dst, body| Header {
            dst,
            src,
            epoch,
            body,
        };
        if self.handshake_due {
            self.handshake_due = false;
            let seg = u16::try_from(self.seg).expect("Config::validate bounds the segment size");
            let h = if self.connected {
                header(self.peer_session, Body::Accept { seg })
            } else {
                self.timer.get_or_insert(now + self.rtt.rto());
                self.connect_sent = Some(now);
                header(SessionId::NONE, Body::Connect { seg })
            };
            return Some(Transmit::new(self.peer, &h, None));
        }
        if !self.connected {
            return None;
        }
        if let Some(t) = self.poll_data(now, epoch, stats) {
            self.ack_due = false;
            return Some(t);
        }
        if self.ack_due {
            self.ack_due = false;
            stats.lone_acks += 1;
            let body = Body::Ack {
                cum: self.rcv_cum,
                sack: self.rcv_bits >> 1,
            };
            return Some(Transmit::new(self.peer, &header(self.peer_session, body), None));
        }
        None
    }

    /// The next data packet, if credits and the congestion window allow one: a lost packet
    /// again, else a new one.
    fn poll_data(&mut self, now: Instant, epoch: u64, stats: &mut Stats) -> Option<Transmit> {
        // The congestion window bounds the packets in flight; the credits bound new packets.
        // Fewer packets unacknowledged than the window: open without counting them.
        let window = self.congestion.window() as usize;
        let cwnd_open =
            self.sent.len() < window || self.sent.iter().filter(|s| !s.acked && !s.lost).count() < window;
        let lost = if self.lost_waiting {
            let lost = self.sent.iter().position(|s| s.lost && !s.acked);
            self.lost_waiting = lost.is_some();
            lost
        } else {
            None
        };
        let pkt = if let Some(i) = lost {
            if !cwnd_open {
                return None;
            }
            let s = &mut self.sent[i];
            (s.lost, s.retransmitted, s.at) = (false, true, now);
            stats.retransmits += 1;
            self.snd_una + i as u64
        } else if self.snd_nxt < self.next_pkt {
            if self.snd_nxt - self.snd_una >= u64::from(self.credits) {
                if !self.stalled {
                    self.stalled = true;
                    stats.credits_stalled += 1;
                }
                return None;
            }
            if !cwnd_open {
                return None;
            }
            self.stalled = false;
            self.sent.push_back(Sent {
                at: now,
                acked: false,
                lost: false,
                retransmitted: false,
            });
            self.snd_nxt += 1;
            self.snd_nxt - 1
        } else {
            return None;
        };
        self.timer.get_or_insert(now + self.rtt.rto());
        // Connected, every queued message is numbered, in order: the first ending above `pkt`.
        let at = self
            .out
            .partition_point(|m| m.first_pkt + u64::from(m.count) <= pkt);
        let m = self
            .out
            .get(at)
            .filter(|m| m.first_pkt <= pkt)
            .expect("every packet below next_pkt belongs to a queued message");
        let index = (pkt - m.first_pkt) as usize;
        let offset = index * self.seg;
        let payload_len = self.seg.min(m.data.len() - offset);
        let d = DataHeader {
            seq: m.seq,
            pkt,
            index: index as u16,
            count: m.count,
            msg_len: m.data.len() as u32,
            payload_len: payload_len as u16,
            cum: self.rcv_cum,
            sack: self.rcv_bits >> 1,
            meta: (index == 0).then_some(m.meta),
        };
        let payload = (payload_len > 0).then(|| m.data.slice(offset..offset + payload_len));
        let header = Header {
            dst: self.peer_session,
            src: self.id,
            epoch,
            body: Body::Data(d),
        };
        Some(Transmit::new(self.peer, &header, payload))
    }

    /// A data packet for this session (from its peer, checked by the endpoint).
    pub(crate) fn on_data(
        &mut self,
        d: &DataHeader,
        payload: &[u8],
        pool: &Pool,
        events: &mut VecDeque<Event>,
        stats: &mut Stats,
    ) -> Result<(), Dropped> {
        if d.pkt < self.rcv_cum {
            self.ack_due = true;
            return Err(Dropped::Duplicate);
        }
        let bit = d.pkt - self.rcv_cum;
        if bit >= u64::from(self.credits) {
            return Err(Dropped::OutOfWindow);
        }
        if self.rcv_bits & (1 << bit) != 0 {
            self.ack_due = true;
            return Err(Dropped::Duplicate);
        }
        if d.seq < self.next_deliver {
            return Err(Dropped::Inconsistent);
        }
        let slot = d.seq - self.next_deliver;
        if slot >= self.window as u64 {
            return Err(Dropped::OutOfWindow);
        }
        // The segment size fixes every packet's offset and length: check this one's.
        let len = d.msg_len as usize;
        let offset = usize::from(d.index) * self.seg;
        if usize::from(d.count) != len.div_ceil(self.seg).max(1)
            || usize::from(d.payload_len) != self.seg.min(len - offset.min(len))
        {
            return Err(Dropped::Inconsistent);
        }
        let first_pkt = d.pkt - u64::from(d.index);
        let slot = slot as usize;
        if self.incoming.len() <= slot {
            self.incoming.resize_with(slot + 1, || None);
        }
        let m = match &mut self.incoming[slot] {
            Some(m) => {
                if (m.first_pkt, m.count, m.len) != (first_pkt, d.count, len) {
                    return Err(Dropped::Inconsistent);
                }
                m
            }
            empty => {
                let buf = pool.alloc(len).map_err(|_| Dropped::PoolExhausted)?;
                empty.insert(InMsg {
                    first_pkt,
                    count: d.count,
                    len,
                    meta: None,
                    buf,
                    received: 0,
                })
            }
        };
        m.buf.capacity_mut()[offset..offset + payload.len()].copy_from_slice(payload);
        if d.meta.is_some() {
            m.meta = d.meta;
        }
        m.received += 1;
        self.rcv_bits |= 1 << bit;
        while self.rcv_bits & 1 == 1 {
            self.rcv_bits >>= 1;
            self.rcv_cum += 1;
        }
        self.ack_due = true;
        while let Some(Some(front)) = self.incoming.front()
            && front.received == front.count
        {
            let Some(Some(mut m)) = self.incoming.pop_front() else {
                break;
            };
            self.next_deliver += 1;
            m.buf.set_len(m.len);
            stats.messages_received += 1;
            events.push_back(Event::Message {
                session: self.id,
                meta: m.meta.unwrap_or_default(),
                data: m.buf.freeze(),
            });
        }
        Ok(())
    }

    /// An acknowledgement from the peer: an Ack, or the one every data packet carries.
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        cum: u64,
        sack: u64,
        stats: &mut Stats,
    ) -> Result<(), Dropped> {
        // Nothing at or above snd_nxt may be acknowledged (a peer's numbers: no overflow).
        if cum > self.snd_nxt {
            return Err(Dropped::OutOfWindow);
        }
        if sack != 0 && u64::from(64 - sack.leading_zeros()) >= self.snd_nxt - cum {
            return Err(Dropped::OutOfWindow);
        }
        // Everything below snd_una is acknowledged already: nothing new (the common case of
        // the acknowledgement in a data packet).
        if sack == 0 && cum <= self.snd_una {
            return Err(Dropped::Duplicate);
        }
        let mut newly = 0;
        let mut sample: Option<Duration> = None;
        for (i, s) in self.sent.iter_mut().enumerate() {
            let pkt = self.snd_una + i as u64;
            let acked = pkt < cum || (pkt > cum && pkt - cum - 1 < 64 && sack & (1 << (pkt - cum - 1)) != 0);
            if acked && !s.acked {
                s.acked = true;
                newly += 1;
                if !s.retransmitted {
                    sample = Some(now.saturating_duration_since(s.at));
                }
            }
        }
        if newly == 0 {
            return Err(Dropped::Duplicate);
        }
        if let Some(r) = sample {
            self.rtt.sample(r);
            stats.rtt = self.rtt.srtt();
        }
        self.rtt.reset_backoff();
        self.timeouts = 0;
        self.congestion.on_acked(now, newly, sample);
        while self.sent.front().is_some_and(|s| s.acked) {
            self.sent.pop_front();
            self.snd_una += 1;
        }
        while self
            .out
            .front()
            .is_some_and(|m| m.count > 0 && m.first_pkt + u64::from(m.count) <= self.snd_una)
        {
            self.out.pop_front();
        }
        // Selective repeat: a packet with DUP_THRESHOLD acknowledged above it is lost.
        let mut above = 0;
        let mut lost = None;
        for (i, s) in self.sent.iter_mut().enumerate().rev() {
            if s.acked {
                above += 1;
            } else if above >= DUP_THRESHOLD && !s.lost && !s.retransmitted {
                s.lost = true;
                lost = Some(self.snd_una + i as u64);
            }
        }
        if let Some(pkt) = lost {
            self.lost_waiting = true;
            self.congestion.on_loss(pkt, self.snd_nxt);
        }
        self.timer = (!self.sent.is_empty()).then(|| now + self.rtt.rto());
        Ok(())
    }

    /// The retransmission timer fired. `false`: the peer is given up.
    pub(crate) fn on_timeout(&mut self, now: Instant, config: &Config, stats: &mut Stats) -> bool {
        self.timer = None;
        if self.connected && self.sent.iter().all(|s| s.acked) {
            return true;
        }
        stats.timeouts += 1;
        self.timeouts += 1;
        if self.timeouts > config.max_timeouts {
            return false;
        }
        self.rtt.back_off();
        if self.connected {
            for s in self.sent.iter_mut().filter(|s| !s.acked) {
                s.lost = true;
            }
            self.lost_waiting = true;
            self.congestion.on_loss(self.snd_una, self.snd_nxt);
        } else {
            self.handshake_due = true;
        }
        self.timer = Some(now + self.rtt.rto());
        true
    }
}
