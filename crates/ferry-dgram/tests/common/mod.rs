//! A simulated network between endpoints: every datagram is encoded bytes, delivered after a
//! delay (so packets reorder), lost or duplicated at random; time is a fake `now` that jumps
//! to the next delivery or timer. No sockets, no sleeps.

// Each test file uses part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferry_buf::Pool;
use ferry_dgram::packet::{Body, DataHeader, Limits, Packet};
use ferry_dgram::{Config, Endpoint, Event};
use ferry_testkit::Rng;
use ferry_transport::Meta;

/// What the network does to packets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Percent of packets lost.
    pub loss: u64,
    /// Percent of packets delivered twice.
    pub dup: u64,
    /// Extra random delay up to this, over a 100 µs base: packets reorder.
    pub jitter: Duration,
    /// A bottleneck: each receiver's link takes this long per packet, and packets queue for it
    /// (without limit, so the queue shows as delay, not loss). Zero: no bottleneck.
    pub per_packet: Duration,
}

pub struct Node {
    pub addr: SocketAddr,
    pub ep: Endpoint,
    /// The pool the endpoint receives (and `send_copy` copies) into.
    pub pool: Pool,
    pub events: Vec<Event>,
    pub audit: Audit,
}

/// What a node's one session did, seen from the wire (independent of the endpoint's own
/// bookkeeping): the credits and the window checked against the acknowledgements it was given.
#[derive(Debug, Default)]
pub struct Audit {
    /// The highest cumulative acknowledgement delivered to the node.
    pub acked: u64,
    /// Data packets put on the wire: one past the highest packet number.
    pub sent_end: u64,
    /// For each message sequence number, one past its last packet number.
    pub message_ends: Vec<u64>,
}

impl Audit {
    /// Messages wholly acknowledged (a prefix: acknowledgements are cumulative).
    pub fn messages_acked(&self) -> usize {
        self.message_ends
            .iter()
            .take_while(|&&end| end <= self.acked)
            .count()
    }
}

pub struct Net {
    pub now: Instant,
    pub nodes: Vec<Node>,
    pub faults: Faults,
    rng: Rng,
    /// (delivery time, sequence) -> (from, to, bytes).
    wire: BTreeMap<(Instant, u64), (SocketAddr, SocketAddr, Vec<u8>)>,
    next: u64,
    /// When each receiver's link is free again.
    link_free: BTreeMap<SocketAddr, Instant>,
    /// Check every data packet against the credits and window (nets with one session per node).
    pub audit: Option<(u32, usize)>,
}

const LIMITS: Limits = Limits {
    max_datagram: 1 << 16,
    max_message_len: u32::MAX,
};

/// The messages among `events`, in order.
pub fn messages(events: &[Event]) -> Vec<(Meta, Vec<u8>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message { meta, data, .. } => Some((*meta, data.to_vec())),
            _ => None,
        })
        .collect()
}

pub fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i as u8 + 1], 7000))
}

impl Net {
    pub fn new(seed: u64, faults: Faults) -> Net {
        Net {
            now: Instant::now(),
            nodes: Vec::new(),
            faults,
            rng: Rng::new(seed),
            wire: BTreeMap::new(),
            next: 0,
            link_free: BTreeMap::new(),
            audit: None,
        }
    }

    /// Adds an endpoint with `config`, started with `seed`; returns its index.
    pub fn add(&mut self, config: Config, seed: u64) -> usize {
        let pool = ferry_testkit::pool();
        let ep = Endpoint::new(config, pool.clone(), seed).expect("endpoint");
        self.nodes.push(Node {
            addr: addr(self.nodes.len()),
            ep,
            pool,
            events: Vec::new(),
            audit: Audit::default(),
        });
        self.nodes.len() - 1
    }

    /// Replaces node `i` by a fresh endpoint at the same address (a restart).
    pub fn restart(&mut self, i: usize, config: Config, seed: u64) {
        let pool = ferry_testkit::pool();
        self.nodes[i].ep = Endpoint::new(config, pool.clone(), seed).expect("endpoint");
        self.nodes[i].pool = pool;
        self.nodes[i].events.clear();
    }

    /// Puts a datagram on the wire from `from` to `to`, through the faults.
    pub fn inject(&mut self, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        if self.rng.chance(self.faults.loss, 100) {
            return;
        }
        let copies = if self.rng.chance(self.faults.dup, 100) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let jitter = self.rng.below(self.faults.jitter.as_nanos() as u64 + 1);
            let free = self.link_free.entry(to).or_insert(self.now);
            *free = (*free).max(self.now) + self.faults.per_packet;
            let at = *free + Duration::from_micros(100) + Duration::from_nanos(jitter);
            self.wire.insert((at, self.next), (from, to, bytes.clone()));
            self.next += 1;
        }
    }

    /// Moves every node's transmits onto the wire.
    pub fn flush(&mut self) {
        for i in 0..self.nodes.len() {
            while let Some(t) = self.nodes[i].ep.poll_transmit(self.now) {
                let bytes = [t.header(), t.payload()].concat();
                assert_eq!(bytes.len(), t.len());
                if let Some((credits, window)) = self.audit {
                    audit_sent(&mut self.nodes[i].audit, &bytes, credits, window);
                }
                let from = self.nodes[i].addr;
                self.inject(from, t.destination, bytes);
            }
        }
    }

    /// One step: transmits out, time to the next delivery or timer, deliveries and timers
    /// run, events collected. `false` when nothing is left to happen.
    pub fn step(&mut self) -> bool {
        self.flush();
        let timer = self.nodes.iter().filter_map(|n| n.ep.poll_timeout()).min();
        let delivery = self.wire.keys().next().map(|k| k.0);
        let Some(next) = [timer, delivery].into_iter().flatten().min() else {
            return false;
        };
        self.now = self.now.max(next);
        while let Some(entry) = self.wire.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let (from, to, bytes) = entry.remove();
            if let Some(n) = self.nodes.iter_mut().find(|n| n.addr == to) {
                // Acknowledgements come alone and in data packets.
                if let Ok(Packet { header: h, .. }) = Packet::decode(&bytes, &LIMITS)
                    && let Body::Ack { cum, .. } | Body::Data(DataHeader { cum, .. }) = h.body
                {
                    n.audit.acked = n.audit.acked.max(cum);
                }
                // Drops are counted by the endpoint; the tests read the counters.
                let _ = n.ep.handle_packet(self.now, from, &bytes);
            }
        }
        for n in &mut self.nodes {
            n.ep.handle_timeout(self.now);
            while let Some(e) = n.ep.poll_event() {
                n.events.push(e);
            }
        }
        true
    }

    /// Steps until `done` holds; fails after `max_steps` (a liveness bound, not a timing one).
    pub fn run_until(&mut self, what: &str, max_steps: usize, mut done: impl FnMut(&mut Net) -> bool) {
        for _ in 0..max_steps {
            if done(self) {
                return;
            }
            if !self.step() && !done(self) {
                panic!("{what}: the network went quiet first");
            }
        }
        panic!("{what}: not after {max_steps} steps");
    }
}

/// A data packet leaves a node: within `credits` of the acknowledgements it had, and of a
/// message within `window` of those wholly acknowledged.
fn audit_sent(a: &mut Audit, bytes: &[u8], credits: u32, window: usize) {
    let Ok(Packet { header: h, .. }) = Packet::decode(bytes, &LIMITS) else {
        panic!("the endpoint sent a packet that does not decode")
    };
    let Body::Data(d) = h.body else { return };
    assert!(
        d.pkt < a.acked + u64::from(credits),
        "packet {} sent with only {} acknowledged: over {credits} credits",
        d.pkt,
        a.acked
    );
    let end = d.pkt - u64::from(d.index) + u64::from(d.count);
    let seq = d.seq as usize;
    if seq == a.message_ends.len() {
        a.message_ends.push(end);
    }
    assert_eq!(
        a.message_ends.get(seq),
        Some(&end),
        "messages are numbered in order"
    );
    assert!(
        seq < a.messages_acked() + window,
        "message {seq} sent with {} acknowledged: over the window of {window}",
        a.messages_acked()
    );
    a.sent_end = a.sent_end.max(d.pkt + 1);
}
