//! The block protocol between two endpoints in one process, stepped by hand: no threads, no
//! sockets, no eventfds, so every interleaving is reproducible. The property test drives random
//! interleavings of send, publish, poll, receive and release on both sides, with small blocks,
//! few credits and a short ring, and checks that every message arrives once, in order, intact,
//! with its request id (implicit or explicit, so replies may come in any order), that credits
//! are conserved, and that everything drains.

use std::collections::VecDeque;

use ferry_buf::Pool;
use ferry_testkit::shared_pool;
use ferry_transport::{Meta, Payload, TransportError};
use ferry_wire::sample::Record;
use ferry_wire::{Context, Limits, Message as _};
use proptest::prelude::*;

use super::{Endpoint, Incoming, Setup};
use crate::conn::Memory;
use crate::layout::BLOCK_ALIGN;

/// What a side expects to receive next, in order.
#[derive(Debug)]
struct Expected {
    meta: Meta,
    ferry: bool,
    bytes: Vec<u8>,
}

struct Side {
    pool: Pool,
    mem: Memory,
    ep: Endpoint,
    held: Vec<Incoming>,
    expect: VecDeque<Expected>,
}

struct Pair {
    sides: [Side; 2],
    credits: u32,
}

impl Pair {
    fn new(credits: u32, ring: usize) -> Pair {
        Pair::with_sleepers(credits, ring, false)
    }

    /// Like [`Pair::new`]; `never_sleeps`: each side was told at setup that its peer never
    /// sleeps.
    fn with_sleepers(credits: u32, ring: usize, never_sleeps: bool) -> Pair {
        let pools = [shared_pool(), shared_pool()];
        let (mem0, control0) = Memory::in_process(&pools[0], &pools[1], ring);
        let (mem1, control1) = Memory::in_process(&pools[1], &pools[0], ring);
        let setup = |peer_control| Setup {
            block_size: BLOCK_ALIGN,
            block_messages: 4,
            credits,
            ring,
            peer_control,
            peer_never_sleeps: never_sleeps,
        };
        let [p0, p1] = pools;
        let ep0 = Endpoint::new(&p0, setup(control1), &mem0).unwrap();
        let ep1 = Endpoint::new(&p1, setup(control0), &mem1).unwrap();
        let side = |pool, mem, ep| Side {
            pool,
            mem,
            ep,
            held: Vec::new(),
            expect: VecDeque::new(),
        };
        Pair {
            sides: [side(p0, mem0, ep0), side(p1, mem1, ep1)],
            credits,
        }
    }

    /// Side `from` queues a message of `len` bytes: raw bytes, or a Record whose key is copied
    /// and whose field is a value in the pool, referenced (so its buffer is held in flight).
    fn send(&mut self, from: usize, kind: u16, len: usize, explicit: Option<u64>, ferry: bool) {
        let bytes: Vec<u8> = (0..len).map(|i| (i as u8) ^ (kind as u8)).collect();
        let side = &mut self.sides[from];
        let request_id = explicit.unwrap_or_else(|| side.ep.next_request_id());
        let meta = Meta::new(kind, request_id);
        if ferry {
            let value = side.pool.copy_from(&bytes).unwrap();
            let ctx = Context::new(side.pool.clone());
            let mut r = Record::new(&ctx);
            r.set_key(&bytes[..bytes.len().min(16)]);
            r.append_field(&value[..]);
            side.ep.send(meta, &r).unwrap();
        } else {
            side.ep.send_payload(meta, Payload::Bytes(&bytes)).unwrap();
        }
        self.sides[1 - from]
            .expect
            .push_back(Expected { meta, ferry, bytes });
    }

    /// Side `at` publishes what it can, never waiting.
    fn tick(&mut self, at: usize) {
        let Side { mem, ep, .. } = &mut self.sides[at];
        if ep.credits() > 0 {
            ep.close_block();
        }
        ep.publish(mem).unwrap();
        ep.publish_acks(mem).unwrap();
        ep.take_wake();
    }

    /// Side `at` consumes what has arrived and checks every message; `keep` holds them.
    fn receive(&mut self, at: usize, keep: bool) {
        let Side {
            mem,
            ep,
            held,
            expect,
            ..
        } = &mut self.sides[at];
        ep.poll(mem).unwrap();
        while let Some(m) = ep.next(mem).unwrap() {
            let want = expect.pop_front().expect("a message that was sent");
            assert_eq!(m.meta, want.meta);
            assert_eq!(m.ferry, want.ferry);
            if m.ferry {
                let r = Record::decode_at(mem.region(), m.offset, &Limits::default()).unwrap();
                assert_eq!(r.key(), &want.bytes[..want.bytes.len().min(16)]);
                assert_eq!(r.fields().len(), 1);
                assert_eq!(r.fields().get(0).unwrap(), &want.bytes[..]);
            } else {
                assert_eq!(&mem.region()[m.offset..m.offset + m.len], &want.bytes[..]);
            }
            if keep {
                held.push(m);
            }
        }
    }

    fn check_credits(&self) {
        for s in &self.sides {
            assert_eq!(
                s.ep.credits() as usize + s.ep.blocks_in_flight(),
                self.credits as usize
            );
        }
    }

    /// Releases everything and steps both sides until nothing is in flight.
    fn drain(&mut self) {
        for s in &mut self.sides {
            s.held.clear();
        }
        for _ in 0..1000 {
            for at in 0..2 {
                self.tick(at);
                self.receive(at, false);
            }
            let idle = self.sides.iter().all(|s| {
                s.expect.is_empty() && s.ep.blocks_in_flight() == 0 && !s.ep.has_ready() && !s.ep.owes_acks()
            });
            if idle {
                self.check_credits();
                return;
            }
        }
        panic!("the pair did not drain");
    }
}

#[derive(Debug, Clone)]
enum Op {
    Send {
        from: usize,
        kind: u16,
        len: usize,
        explicit: Option<u64>,
        ferry: bool,
    },
    Tick(usize),
    Receive(usize),
    Release {
        at: usize,
        index: usize,
    },
    ReleaseAll(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, any::<u16>(), prop_oneof![0..64usize, 64..3000usize], proptest::option::weighted(0.3, any::<u64>()), any::<bool>())
            .prop_map(|(from, kind, len, explicit, ferry)| Op::Send { from, kind, len, explicit, ferry }),
        2 => (0..2usize).prop_map(Op::Tick),
        2 => (0..2usize).prop_map(Op::Receive),
        2 => (0..2usize, any::<usize>()).prop_map(|(at, index)| Op::Release { at, index }),
        1 => (0..2usize).prop_map(Op::ReleaseAll),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_interleavings_deliver_everything_once_in_order(
        credits in 1u32..4,
        ring_extra in 0usize..3,
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let mut pair = Pair::new(credits, 2 * credits as usize + ring_extra);
        for op in ops {
            match op {
                Op::Send { from, kind, len, explicit, ferry } => {
                    // A side whose blocks wait for credits stops sending, as its driver would
                    // wait in `send`; the peer's steps return the credits.
                    if !pair.sides[from].ep.has_ready() {
                        pair.send(from, kind, len, explicit, ferry);
                    }
                }
                Op::Tick(at) => pair.tick(at),
                Op::Receive(at) => pair.receive(at, true),
                Op::Release { at, index } => {
                    let held = &mut pair.sides[at].held;
                    if !held.is_empty() {
                        held.swap_remove(index % held.len());
                    }
                }
                Op::ReleaseAll(at) => pair.sides[at].held.clear(),
            }
            pair.check_credits();
        }
        pair.drain();
        for s in &pair.sides {
            // Left: the control area and a block being filled, at most.
            prop_assert!(s.pool.stats().buffers_outstanding() <= 2);
        }
    }
}

#[test]
fn blocks_wait_for_credits_and_acknowledgements_return_them() {
    let mut pair = Pair::new(1, 2);
    for _ in 0..3 {
        pair.send(0, 1, 2000, None, false);
    }
    // Three blocks of one message each: one is published, two wait for the credit.
    pair.tick(0);
    assert_eq!(pair.sides[0].ep.blocks_in_flight(), 1);
    assert!(pair.sides[0].ep.has_ready());
    pair.receive(1, true);
    pair.tick(1);
    pair.tick(0);
    // The frame is still held: no acknowledgement, no credit.
    assert!(pair.sides[0].ep.has_ready());
    pair.sides[1].held.clear();
    pair.tick(1);
    pair.receive(0, false);
    pair.tick(0);
    assert_eq!(pair.sides[0].ep.stats().blocks_sent, 2);
    pair.drain();
}

/// Small messages that would all fit in one block go out as blocks of `block_messages` (4
/// here), so a pipelined peer gets work before the whole batch is queued.
#[test]
fn blocks_are_cut_at_block_messages() {
    let mut pair = Pair::new(3, 6);
    for i in 0..9 {
        pair.send(0, 1, 8, None, false);
        assert_eq!(pair.sides[0].ep.has_ready(), i >= 3, "after message {i}");
    }
    pair.tick(0);
    assert_eq!(pair.sides[0].ep.stats().blocks_sent, 3);
    pair.receive(1, false);
    assert_eq!(pair.sides[1].ep.stats().blocks_received, 3);
    assert_eq!(pair.sides[1].ep.stats().messages_received, 9);
    pair.drain();
}

/// The received blocks' hold table has a fixed 1024 slots, at least one per block the peer
/// may have unacknowledged: a setup with more credits than `MAX_CREDITS` is refused, whatever
/// the ring (half of a longer ring was accepted before: past 1024 credits, it would overrun
/// the table).
#[test]
fn credits_above_the_hold_table_are_refused() {
    let (own, peer) = (shared_pool(), shared_pool());
    let ring = 4 * super::MAX_CREDITS as usize;
    let (mem, control) = Memory::in_process(&own, &peer, ring);
    let setup = |credits| Setup {
        block_size: BLOCK_ALIGN,
        block_messages: 4,
        credits,
        ring,
        peer_control: control,
        peer_never_sleeps: false,
    };
    assert!(Endpoint::new(&own, setup(super::MAX_CREDITS), &mem).is_ok());
    match Endpoint::new(&own, setup(super::MAX_CREDITS + 1), &mem) {
        Err(TransportError::Config(what)) => assert!(what.contains("at most 512"), "{what}"),
        other => panic!("{} credits accepted: {other:?}", super::MAX_CREDITS + 1),
    }
}

#[test]
fn a_closed_peer_is_seen_after_what_it_published() {
    let mut pair = Pair::new(2, 4);
    pair.send(0, 7, 10, None, false);
    pair.tick(0);
    let Side { mem, ep, .. } = &mut pair.sides[0];
    ep.close(mem);
    pair.receive(1, false);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(matches!(ep.poll(mem), Err(TransportError::Closed)));
    assert!(matches!(ep.poll(mem), Err(TransportError::Poisoned)));
}

/// A spinning poll that does not look reads the next slot only: a close (no entry) is seen
/// at the next poll that looks; entries are taken either way.
#[test]
fn a_spinning_poll_sees_a_close_when_it_looks() {
    let mut pair = Pair::new(2, 4);
    pair.send(0, 7, 10, None, false);
    pair.tick(0);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(
        ep.poll_spinning(mem, false).unwrap(),
        "an entry is taken without looking"
    );
    assert!(ep.next(mem).unwrap().is_some());
    let Side { mem, ep, .. } = &mut pair.sides[0];
    ep.close(mem);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(!ep.poll_spinning(mem, false).unwrap());
    assert!(matches!(ep.poll_spinning(mem, true), Err(TransportError::Closed)));
}

#[test]
fn a_sleeping_peer_is_woken_by_the_next_entry() {
    let mut pair = Pair::new(2, 4);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(!ep.announce_sleep(mem), "nothing published yet");
    pair.send(0, 1, 10, None, false);
    pair.tick_keep_wake(0, true);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    ep.withdraw(mem);
    pair.send(0, 1, 10, None, false);
    pair.tick_keep_wake(0, false);
}

/// A peer that declared it never sleeps is published to without the handshake: no fence, no
/// read of its `sleeping` word, so even a raised flag (the peer broke its word) reports no
/// wake-up. The handshake towards a peer that may sleep is the test above.
#[test]
fn a_peer_that_never_sleeps_is_not_woken() {
    let mut pair = Pair::with_sleepers(2, 4, true);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(!ep.announce_sleep(mem));
    pair.send(0, 1, 10, None, false);
    pair.tick_keep_wake(0, false);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    ep.withdraw(mem);
    pair.drain();
}

/// Credits come back only as acknowledgements, so a side that waits for credits (announced
/// sleep) must be woken by an entry that carries nothing else: an acknowledgement-only entry
/// reports the wake-up as a block does, and one published after the withdrawal does not.
#[test]
fn a_sleeping_peer_is_woken_by_an_acknowledgement_alone() {
    let mut pair = Pair::new(1, 2);
    pair.send(0, 1, 2000, None, false);
    pair.send(0, 1, 2000, None, false);
    pair.tick(0);
    assert_eq!(pair.sides[0].ep.credits(), 0);
    assert!(
        pair.sides[0].ep.has_unsent(),
        "the second block waits for the credit"
    );
    pair.receive(1, false);
    assert!(pair.sides[1].ep.owes_acks() && pair.sides[1].ep.has_unsent());
    let Side { mem, ep, .. } = &mut pair.sides[0];
    assert!(!ep.announce_sleep(mem), "nothing published since");
    assert!(ep.announced());
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(ep.publish_acks(mem).unwrap());
    assert!(ep.take_wake(), "an acknowledgement alone wakes a sleeping peer");
    assert_eq!(ep.stats().ack_entries_sent, 1);
    assert!(!ep.has_unsent());
    let Side { mem, ep, .. } = &mut pair.sides[0];
    ep.withdraw(mem);
    assert!(!ep.announced());
    ep.poll(mem).unwrap();
    assert_eq!(ep.credits(), 1, "the acknowledgement returned the credit");
    pair.tick(0);
    pair.receive(1, false);
    let Side { mem, ep, .. } = &mut pair.sides[1];
    assert!(ep.publish_acks(mem).unwrap());
    assert!(!ep.take_wake(), "the peer withdrew: no wake-up");
    pair.drain();
}

impl Pair {
    /// Publishes side `at`'s block and checks whether the peer had to be woken.
    fn tick_keep_wake(&mut self, at: usize, wake: bool) {
        let Side { mem, ep, .. } = &mut self.sides[at];
        ep.close_block();
        assert!(ep.publish(mem).unwrap());
        assert_eq!(ep.take_wake(), wake);
    }
}
