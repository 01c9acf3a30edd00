//! Model checks of the words both sides read (`RUSTFLAGS="--cfg loom" cargo test -p ferry-shm
//! --lib --release -- loom_`): the ring entries (polled by their tags) against their head and tail, and the sleeping
//! and closed flags against the doorbell, over loom's atomics and fences instead of the
//! mappings. Each side's region is its control area alone (blocks are single-writer memory
//! published by the head, which the first check covers).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use loom::thread;

use super::Shared;
use super::ring::Rings;
use crate::layout::{control_len, split_entry};

const RING: usize = 2;

/// One side's control area.
struct Control(Vec<AtomicU64>);

impl Control {
    fn new() -> Arc<Control> {
        Arc::new(Control(
            (0..control_len(RING) / 8).map(|_| AtomicU64::new(0)).collect(),
        ))
    }
}

/// One side's view: its own control area (written) and the peer's (read).
struct Memory {
    own: Arc<Control>,
    peer: Arc<Control>,
}

impl Shared for Memory {
    fn load(&self, offset: usize) -> Option<u64> {
        (offset % 8 == 0).then_some(())?;
        Some(self.peer.0.get(offset / 8)?.load(Ordering::Acquire))
    }

    fn copy_out(&self, _offset: usize, _out: &mut [u8]) -> Option<()> {
        None
    }

    fn peer_len(&self) -> usize {
        self.peer.0.len() * 8
    }

    fn store(&mut self, offset: usize, value: u64) {
        self.own.0[offset / 8].store(value, Ordering::Release);
    }

    fn fence(&self) {
        fence(Ordering::SeqCst);
    }
}

fn pair() -> (Memory, Memory) {
    let (a, b) = (Control::new(), Control::new());
    (
        Memory {
            own: Arc::clone(&a),
            peer: Arc::clone(&b),
        },
        Memory { own: b, peer: a },
    )
}

/// More entries than the ring holds: the consumer sees each once, in order, and the producer
/// never overwrites an entry the consumer has not read.
#[test]
fn loom_entries_arrive_in_order_and_are_never_overwritten_unread() {
    loom::model(|| {
        let (mut producer, mut consumer) = pair();
        let sender = thread::spawn(move || {
            let mut rings = Rings::new(RING, 0);
            for e in 10..13u64 {
                while !rings.has_space(&producer).unwrap() {
                    thread::yield_now();
                }
                rings.push(&mut producer, e, false);
            }
        });
        let mut rings = Rings::new(RING, 0);
        let mut got = Vec::new();
        while got.len() < 3 {
            let mut n = 0;
            while let Some((e, _)) = rings.next_entry(&consumer) {
                got.push(split_entry(e).0);
                n += 1;
            }
            if n == 0 {
                // Nothing by the tags: the head must agree (an entry it counts is tagged).
                rings.idle(&consumer).unwrap();
                thread::yield_now();
                continue;
            }
            rings.consumed(&mut consumer);
        }
        sender.join().unwrap();
        assert_eq!(got, [10, 11, 12]);
    });
}

/// A side that decides to sleep (it announced the wait and still saw nothing) is always woken:
/// the peer's next entry, or its close, finds the flag set. `close` picks the close.
fn no_lost_wakeup(close: bool) {
    loom::model(move || {
        let (mut producer, mut consumer) = pair();
        let doorbell = Arc::new(AtomicBool::new(false));
        let bell = Arc::clone(&doorbell);
        let sender = thread::spawn(move || {
            let mut rings = Rings::new(RING, 0);
            let wake = if close {
                rings.close(&mut producer)
            } else {
                rings.push(&mut producer, 1, false)
            };
            if wake {
                bell.store(true, Ordering::Release);
            }
        });
        let mut rings = Rings::new(RING, 0);
        let nothing = rings.next_entry(&consumer).is_none() && rings.idle(&consumer).is_ok();
        let sleeps = nothing && !rings.announce_sleep(&mut consumer);
        sender.join().unwrap();
        if sleeps {
            assert!(doorbell.load(Ordering::Acquire), "slept through a publication");
        }
    });
}

#[test]
fn loom_an_announced_sleep_is_always_woken_by_an_entry() {
    no_lost_wakeup(false);
}

#[test]
fn loom_an_announced_sleep_is_always_woken_by_a_close() {
    no_lost_wakeup(true);
}
