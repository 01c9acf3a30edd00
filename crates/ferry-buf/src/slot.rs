//! Per-slot metadata: the reference count state machine and the free-list link.
//!
//! ```text
//!            claim                freeze              retain / try_retain
//!   FREE ─────────────▶ WRITING ──────────▶ 1 ─────────────────────────────▶ n
//!    ▲  ◀─────────────     │  ◀──────────   │ ◀───────────────────────────── │
//!    │  release_unique     │  try_unfreeze  │           release
//!    └─────────────────────┘                ▼ release (last)
//!                                          FREE
//! ```
//!
//! `FREE` slots sit on their class's free list. `WRITING` marks a slot owned by one
//! [`BufMut`](crate::BufMut): nobody else may read it, so [`SlotMeta::try_retain`] (pointer
//! recovery) refuses it, as it refuses `FREE` slots, so a freed slot is never resurrected.
//! Counts are capped at [`MAX_REFS`]; going past it is a leak-sized bug and aborts the
//! process, like `Arc`.

use crate::sync::{AtomicU32, Ordering, fence};

/// Count of a slot on the free list.
const FREE: u32 = 0;
/// Count of a slot owned by a `BufMut`.
const WRITING: u32 = 1 << 31;
/// Highest shared count that may be incremented. The gap up to `WRITING` absorbs increments
/// racing between another thread's overflow and its abort.
pub(crate) const MAX_REFS: u32 = 1 << 30;

/// Metadata of one slot, kept beside the region (never inside pool memory).
#[derive(Debug)]
pub(crate) struct SlotMeta {
    refs: AtomicU32,
    next: AtomicU32,
}

impl SlotMeta {
    /// A free slot.
    pub(crate) fn new() -> Self {
        SlotMeta {
            refs: AtomicU32::new(FREE),
            next: AtomicU32::new(u32::MAX),
        }
    }

    /// The free-list link (meaningful only while the slot is free).
    pub(crate) fn next(&self) -> &AtomicU32 {
        &self.next
    }

    /// `FREE -> WRITING`. Fails if the slot is not free.
    pub(crate) fn claim(&self) -> bool {
        self.refs
            .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// `WRITING -> 1`: the unique writer becomes the first shared owner.
    pub(crate) fn freeze(&self) {
        debug_assert_eq!(self.refs.load(Ordering::Relaxed), WRITING);
        // Release: the writer's bytes happen-before any recover() that sees the count.
        self.refs.store(1, Ordering::Release);
    }

    /// `WRITING -> FREE`: the unique writer gives the slot up.
    pub(crate) fn release_unique(&self) {
        debug_assert_eq!(self.refs.load(Ordering::Relaxed), WRITING);
        self.refs.store(FREE, Ordering::Relaxed);
    }

    /// `1 -> WRITING`: the only shared owner becomes the unique writer again (to reuse the
    /// slot without freeing it). Fails, changing nothing, while any other owner exists.
    pub(crate) fn try_unfreeze(&self) -> bool {
        // Acquire, as `Arc::get_mut`: pairs with the Release decrements of the owners that
        // dropped their handles, so their reads of the slot happen-before our writes. A
        // recovery racing us either counted first (we fail) or sees WRITING (it fails).
        self.refs
            .compare_exchange(1, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// One more shared owner; the caller already is one.
    pub(crate) fn retain(&self) {
        // Relaxed, as in `Arc::clone`: the caller's own reference keeps the slot alive.
        let old = self.refs.fetch_add(1, Ordering::Relaxed);
        debug_assert!(old != FREE && old != WRITING);
        if old >= MAX_REFS {
            std::process::abort();
        }
    }

    /// One more shared owner, for a caller that is not one yet (pointer recovery). Refuses
    /// free slots (no resurrection) and slots still being written.
    pub(crate) fn try_retain(&self) -> bool {
        let mut current = self.refs.load(Ordering::Relaxed);
        loop {
            if current == FREE || current == WRITING {
                return false;
            }
            if current >= MAX_REFS {
                std::process::abort();
            }
            match self
                .refs
                .compare_exchange_weak(current, current + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// Whether the slot is shared (frozen and live) right now.
    pub(crate) fn is_shared(&self) -> bool {
        let current = self.refs.load(Ordering::Relaxed);
        current != FREE && current != WRITING
    }

    /// One shared owner fewer. Returns true if it was the last: the slot is then `FREE` and the
    /// caller must hand it back to the free list.
    pub(crate) fn release(&self) -> bool {
        let old = self.refs.fetch_sub(1, Ordering::Release);
        debug_assert!(old != FREE && old != WRITING);
        if old != 1 {
            return false;
        }
        // Pairs with the other owners' Release decrements: their reads of the slot
        // happen-before it is reused.
        fence(Ordering::Acquire);
        true
    }

    /// Current shared count (`0` if free; meaningless while being written).
    pub(crate) fn ref_count(&self) -> u32 {
        self.refs.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    fn with_refs(refs: u32) -> Self {
        SlotMeta {
            refs: AtomicU32::new(refs),
            next: AtomicU32::new(u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_machine() {
        let slot = SlotMeta::new();
        assert!(!slot.try_retain(), "free slots are not resurrected");
        assert!(slot.claim());
        assert!(!slot.claim(), "a slot is claimed once");
        assert!(!slot.try_retain(), "a slot being written is not shared");
        slot.freeze();
        assert_eq!(slot.ref_count(), 1);
        slot.retain();
        assert!(slot.try_retain());
        assert_eq!(slot.ref_count(), 3);
        assert!(!slot.release());
        assert!(!slot.release());
        assert!(slot.release());
        assert_eq!(slot.ref_count(), 0);
        assert!(slot.claim());
        slot.release_unique();
        assert!(slot.claim());
    }

    #[test]
    fn only_the_last_owner_unfreezes() {
        let slot = SlotMeta::new();
        assert!(slot.claim());
        slot.freeze();
        slot.retain();
        assert!(!slot.try_unfreeze(), "two owners");
        assert_eq!(slot.ref_count(), 2, "a failed unfreeze changes nothing");
        assert!(!slot.release());
        assert!(slot.try_unfreeze());
        assert!(!slot.try_retain(), "a slot being written again is not shared");
        slot.freeze();
        assert!(slot.release());
    }

    #[test]
    fn counts_up_to_the_cap() {
        let slot = SlotMeta::with_refs(MAX_REFS - 1);
        slot.retain();
        assert_eq!(slot.ref_count(), MAX_REFS);
    }

    /// Env var that turns the overflow tests into the child that is expected to abort.
    const CHILD: &str = "FERRY_BUF_OVERFLOW_CHILD";

    /// Runs test `name` of this binary in a child process and checks that it aborted.
    #[cfg(unix)]
    fn expect_abort(name: &str) {
        use std::os::unix::process::ExitStatusExt;
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--test-threads=1"])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGABRT), "{name}: {status}");
    }

    #[test]
    #[cfg(unix)]
    #[cfg_attr(miri, ignore = "spawns a process")]
    fn retain_past_cap_aborts() {
        if std::env::var_os(CHILD).is_some() {
            SlotMeta::with_refs(MAX_REFS).retain();
            return; // not reached
        }
        expect_abort("slot::tests::retain_past_cap_aborts");
    }

    #[test]
    #[cfg(unix)]
    #[cfg_attr(miri, ignore = "spawns a process")]
    fn try_retain_past_cap_aborts() {
        if std::env::var_os(CHILD).is_some() {
            SlotMeta::with_refs(MAX_REFS).try_retain();
            return; // not reached
        }
        expect_abort("slot::tests::try_retain_past_cap_aborts");
    }
}

/// Model checks under loom (`RUSTFLAGS="--cfg loom" cargo test -p ferry-buf --lib --release -- loom_`).
/// The slot's memory is a loom cell: a reader that is not ordered before the slot's reuse, or a
/// writer not ordered after `freeze`'s readers, is reported as a data race.
#[cfg(all(test, loom))]
#[allow(unsafe_code)]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;
    use loom::thread;

    struct Slot {
        meta: SlotMeta,
        data: UnsafeCell<u32>,
        freed: AtomicUsize,
    }

    impl Slot {
        /// A claimed slot whose contents were written, then frozen (count 1).
        fn shared() -> Arc<Slot> {
            let slot = Arc::new(Slot {
                meta: SlotMeta::new(),
                data: UnsafeCell::new(0),
                freed: AtomicUsize::new(0),
            });
            assert!(slot.meta.claim());
            slot.write(7);
            slot.meta.freeze();
            slot
        }

        fn read(&self) -> u32 {
            // SAFETY: loom checks the access against every write of the model.
            self.data.with(|p| unsafe { *p })
        }

        fn write(&self, value: u32) {
            // SAFETY: loom checks the access against every other access of the model.
            self.data.with_mut(|p| unsafe { *p = value });
        }

        /// Drops one shared reference; the last one frees the slot and reuses its memory.
        fn release(&self) {
            if self.meta.release() {
                self.freed.fetch_add(1, Ordering::Relaxed);
                assert!(self.meta.claim(), "a freed slot can be claimed");
                self.write(0);
            }
        }
    }

    #[test]
    fn loom_last_release_frees_once_after_every_read() {
        loom::model(|| {
            let slot = Slot::shared();
            slot.meta.retain();
            let other = {
                let slot = slot.clone();
                thread::spawn(move || {
                    assert_eq!(slot.read(), 7);
                    slot.release();
                })
            };
            assert_eq!(slot.read(), 7);
            slot.release();
            other.join().unwrap();
            assert_eq!(slot.freed.load(Ordering::Relaxed), 1);
        });
    }

    /// Pointer recovery racing the last release: it either takes a reference before the
    /// count reaches zero (and then frees the slot itself) or is refused; it never revives a
    /// freed slot.
    #[test]
    fn loom_try_retain_never_resurrects() {
        loom::model(|| {
            let slot = Slot::shared();
            let recoverer = {
                let slot = slot.clone();
                thread::spawn(move || {
                    if slot.meta.try_retain() {
                        assert_eq!(slot.read(), 7);
                        slot.release();
                    }
                })
            };
            slot.release();
            recoverer.join().unwrap();
            assert_eq!(slot.freed.load(Ordering::Relaxed), 1);
        });
    }

    /// Unfreezing racing another owner's last read and release: the unfreeze succeeds only
    /// once the other owner is gone, and its write then happens after that owner's read.
    #[test]
    fn loom_unfreeze_waits_for_every_other_owner() {
        loom::model(|| {
            let slot = Slot::shared();
            slot.meta.retain();
            let other = {
                let slot = slot.clone();
                thread::spawn(move || {
                    assert_eq!(slot.read(), 7);
                    slot.release();
                })
            };
            loop {
                if slot.meta.try_unfreeze() {
                    break;
                }
                thread::yield_now();
            }
            slot.write(8);
            other.join().unwrap();
            slot.meta.freeze();
            slot.release();
            assert_eq!(slot.freed.load(Ordering::Relaxed), 1);
        });
    }

    /// Pointer recovery racing an unfreeze: exactly one of them wins the last owner's slot.
    #[test]
    fn loom_unfreeze_and_recover_exclude_each_other() {
        loom::model(|| {
            let slot = Slot::shared();
            let recoverer = {
                let slot = slot.clone();
                thread::spawn(move || {
                    let got = slot.meta.try_retain();
                    if got {
                        // Before the unfreeze, or after the writer froze it again.
                        let seen = slot.read();
                        assert!(seen == 7 || seen == 8, "{seen}");
                        slot.release();
                    }
                    got
                })
            };
            let unfrozen = slot.meta.try_unfreeze();
            if unfrozen {
                slot.write(8);
                slot.meta.freeze();
            }
            let recovered = recoverer.join().unwrap();
            assert!(unfrozen || recovered, "one of them had the slot to itself");
            slot.release();
            assert_eq!(slot.freed.load(Ordering::Relaxed), 1);
        });
    }

    /// `freeze` publishes the writer's bytes to a reader that recovers the buffer.
    #[test]
    fn loom_freeze_publishes_contents_to_recover() {
        loom::model(|| {
            let slot = Arc::new(Slot {
                meta: SlotMeta::new(),
                data: UnsafeCell::new(0),
                freed: AtomicUsize::new(0),
            });
            assert!(slot.meta.claim());
            let writer = {
                let slot = slot.clone();
                thread::spawn(move || {
                    slot.write(7);
                    slot.meta.freeze();
                })
            };
            let recovered = slot.meta.try_retain();
            if recovered {
                assert_eq!(slot.read(), 7);
            }
            writer.join().unwrap();
            if recovered {
                slot.release();
            }
            slot.release();
            assert_eq!(slot.freed.load(Ordering::Relaxed), 1);
        });
    }
}
