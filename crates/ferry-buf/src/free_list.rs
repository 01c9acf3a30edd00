//! Lock-free free list of slots: a Treiber stack with a tagged head.
//!
//! The head is one `AtomicU64`: the high 32 bits are a tag bumped by every successful update,
//! the low 32 bits the [`SlotId`] on top. The tag defeats ABA: a pop that read `next` of a
//! slot that was meanwhile popped, reused and pushed back fails its compare-exchange because
//! the tag moved on (a false success needs exactly 2^32 updates between one pop's load and
//! its compare-exchange).
//!
//! The `next` links live in the per-region slot metadata, which outlives every list operation
//! (regions are never unmapped while the pool lives), so reading a stale link is harmless.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

use crate::class::SlotId;

/// A lock-free stack of slot ids. Links are found through the `link` closure each operation
/// takes, which returns the `next` field of a slot.
#[derive(Debug)]
pub(crate) struct FreeList {
    head: AtomicU64,
}

fn pack(tag: u32, id: SlotId) -> u64 {
    (u64::from(tag) << 32) | u64::from(id.0)
}

fn unpack(head: u64) -> (u32, SlotId) {
    ((head >> 32) as u32, SlotId(head as u32))
}

impl FreeList {
    /// An empty list.
    pub(crate) fn new() -> Self {
        FreeList {
            head: AtomicU64::new(pack(0, SlotId::NIL)),
        }
    }

    /// Takes the top slot, or `None` if the list is empty.
    pub(crate) fn pop<'a>(&self, link: impl Fn(SlotId) -> &'a AtomicU32) -> Option<SlotId> {
        // Acquire: see the pusher's link store and everything the slot's last owner did.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let (tag, top) = unpack(head);
            if top == SlotId::NIL {
                return None;
            }
            // May be stale if `top` was popped meanwhile; then the tag differs and the
            // compare-exchange below fails.
            let next = SlotId(link(top).load(Ordering::Relaxed));
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), next),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(top),
                Err(current) => head = current,
            }
        }
    }

    /// Pushes the chain `first ..= last`, already linked through `link`, in one step.
    pub(crate) fn push_chain<'a>(&self, first: SlotId, last: SlotId, link: impl Fn(SlotId) -> &'a AtomicU32) {
        let last_link = link(last);
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            let (tag, top) = unpack(head);
            last_link.store(top.0, Ordering::Relaxed);
            // Release: publishes the link and the slot's contents to the next popper.
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), first),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Pushes one slot.
    pub(crate) fn push<'a>(&self, id: SlotId, link: impl Fn(SlotId) -> &'a AtomicU32) {
        self.push_chain(id, id, link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn links(n: usize) -> Vec<AtomicU32> {
        (0..n).map(|_| AtomicU32::new(SlotId::NIL.0)).collect()
    }

    #[test]
    fn lifo_and_chains() {
        let links = links(8);
        let link = |id: SlotId| &links[id.0 as usize];
        let list = FreeList::new();
        assert_eq!(list.pop(link), None);
        list.push(SlotId(3), link);
        // Chain 5 -> 6 -> 7 pushed in one step.
        links[5].store(6, Ordering::Relaxed);
        links[6].store(7, Ordering::Relaxed);
        list.push_chain(SlotId(5), SlotId(7), link);
        let popped: Vec<u32> = std::iter::from_fn(|| list.pop(link)).map(|id| id.0).collect();
        assert_eq!(popped, [5, 6, 7, 3]);
    }

    #[test]
    fn tag_changes_on_every_update() {
        let links = links(2);
        let link = |id: SlotId| &links[id.0 as usize];
        let list = FreeList::new();
        list.push(SlotId(1), link);
        let before = list.head.load(Ordering::Relaxed);
        let popped = list.pop(link);
        list.push(SlotId(1), link);
        let after = list.head.load(Ordering::Relaxed);
        // Same top slot, different word: a pop that loaded `before` cannot succeed now.
        assert_eq!(popped, Some(SlotId(1)));
        assert_eq!(unpack(before).1, unpack(after).1);
        assert_ne!(before, after);
    }

    #[test]
    fn concurrent_pop_push_keeps_every_slot_once() {
        const SLOTS: u32 = 16;
        let rounds = if cfg!(miri) { 30 } else { 20_000 };
        let links: Arc<Vec<AtomicU32>> = Arc::new(links(SLOTS as usize));
        let list = Arc::new(FreeList::new());
        for id in 0..SLOTS {
            list.push(SlotId(id), |id| &links[id.0 as usize]);
        }
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (links, list) = (links.clone(), list.clone());
                std::thread::spawn(move || {
                    let link = |id: SlotId| &links[id.0 as usize];
                    for _ in 0..rounds {
                        let a = list.pop(link).expect("16 slots, at most 4 taken");
                        let b = list.pop(link).expect("16 slots, at most 4 taken");
                        assert_ne!(a, b);
                        list.push(a, link);
                        list.push(b, link);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let link = |id: SlotId| &links[id.0 as usize];
        let mut all: Vec<u32> = std::iter::from_fn(|| list.pop(link)).map(|id| id.0).collect();
        all.sort_unstable();
        assert_eq!(all, (0..SLOTS).collect::<Vec<_>>());
    }
}

/// Model checks under loom (`RUSTFLAGS="--cfg loom" cargo test -p ferry-buf --lib --release -- loom_`).
/// Slot contents are loom cells: two owners of one slot at once, or an owner that does not
/// happen-after the previous one, is reported as a data race.
#[cfg(all(test, loom))]
#[allow(unsafe_code)]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;

    struct Slots {
        links: Vec<AtomicU32>,
        data: Vec<UnsafeCell<u32>>,
        list: FreeList,
    }

    impl Slots {
        /// `n` slots, all on the list (0 on top).
        fn new(n: u32) -> Arc<Slots> {
            let slots = Slots {
                links: (0..n).map(|_| AtomicU32::new(SlotId::NIL.0)).collect(),
                data: (0..n).map(|_| UnsafeCell::new(0)).collect(),
                list: FreeList::new(),
            };
            for id in (0..n).rev() {
                slots.list.push(SlotId(id), |id| &slots.links[id.0 as usize]);
            }
            Arc::new(slots)
        }

        fn pop(&self) -> Option<SlotId> {
            let id = self.list.pop(|id| &self.links[id.0 as usize])?;
            // The popper owns the slot: it writes its contents.
            // SAFETY: loom checks this access: a concurrent owner of the same slot, or one
            // not ordered after the previous owner, fails the model.
            self.data[id.0 as usize].with_mut(|p| unsafe { *p += 1 });
            Some(id)
        }

        fn push(&self, id: SlotId) {
            self.list.push(id, |id| &self.links[id.0 as usize]);
        }

        fn drain(&self) -> Vec<u32> {
            std::iter::from_fn(|| self.list.pop(|id| &self.links[id.0 as usize]))
                .map(|id| id.0)
                .collect()
        }
    }

    #[test]
    fn loom_push_publishes_contents_to_the_popper() {
        loom::model(|| {
            let slots = Slots::new(1);
            let id = slots.pop().unwrap();
            let pusher = {
                let slots = slots.clone();
                thread::spawn(move || slots.push(id))
            };
            // Either the list is still empty or the popper owns the slot after the pusher.
            let popped = slots.pop();
            pusher.join().unwrap();
            if popped.is_none() {
                assert_eq!(slots.pop(), Some(id));
            }
        });
    }

    /// The ABA case the tag defends against: one pop reads `top = 0, next = 1` and is
    /// preempted; another thread pops 0, pops 1 and pushes 0 back. Without the tag the first
    /// pop's compare-exchange would succeed and make 1 (still owned) the list's top.
    #[test]
    fn loom_aba_pop_is_refused() {
        loom::model(|| {
            let slots = Slots::new(2);
            let other = {
                let slots = slots.clone();
                thread::spawn(move || {
                    let a = slots.pop();
                    let b = slots.pop();
                    if let Some(a) = a {
                        slots.push(a);
                    }
                    b
                })
            };
            let mine = slots.pop();
            let theirs = other.join().unwrap();
            let mut all: Vec<u32> = mine.into_iter().chain(theirs).map(|id| id.0).collect();
            all.extend(slots.drain());
            all.sort_unstable();
            assert_eq!(all, [0, 1], "every slot exactly once: owned or on the list");
        });
    }
}
