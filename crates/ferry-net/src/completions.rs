//! Zero-copy completions, without I/O: which buffers the kernel may still read.
//!
//! Every zero-copy send call gets a 32-bit id, in order: the kernel numbers `MSG_ZEROCOPY`
//! sends per socket from 0 (and reports completed ids as inclusive ranges), and the io_uring
//! driver numbers its requests the same way. A written batch is held until every id up to
//! and including its last call's has completed; completions may arrive out of order.

use std::collections::VecDeque;

use crate::queue::Written;

/// Counters of zero-copy completions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompletionCounters {
    /// Send calls whose completion arrived.
    pub completed: u64,
    /// Of those, calls the kernel reported it had copied after all
    /// (`SO_EE_CODE_ZEROCOPY_COPIED`, `IORING_NOTIF_USAGE_ZC_COPIED`). On loopback and veth,
    /// all of them: the kernel copies on delivery, so no copy was saved.
    pub copied: u64,
}

#[derive(Debug)]
struct Held {
    last_id: u32,
    written: Written,
}

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Completions {
    /// Id of the next send call.
    next_id: u32,
    /// Every id before this one has completed.
    low: u32,
    /// Completed ranges above `low`, not yet contiguous with it.
    ahead: Vec<(u32, u32)>,
    held: VecDeque<Held>,
    held_bytes: usize,
    counters: CompletionCounters,
}

/// `a < b` in the 2^32 id space (ids in use span far less than 2^31).
fn before(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) > 0
}

impl Completions {
    /// Starts numbering at `first` (to test wrap-around; real ids start at 0).
    #[cfg(test)]
    fn starting_at(first: u32) -> Completions {
        Completions {
            next_id: first,
            low: first,
            ..Completions::default()
        }
    }

    /// Allocates the id of a send call that the kernel accepted (sent at least one byte).
    pub(crate) fn next_call(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        id
    }

    /// Holds a written batch until every call up to its last one (`last_id`) completes, or
    /// hands it straight to `release` if they already have (io_uring can post a notification
    /// before the batch's last send returns).
    pub(crate) fn hold(&mut self, last_id: u32, written: Written, release: impl FnOnce(Written)) {
        if before(last_id, self.low) {
            release(written);
            return;
        }
        self.held_bytes += written.bytes;
        self.held.push_back(Held { last_id, written });
    }

    /// Batches held for the kernel.
    pub(crate) fn held_batches(&self) -> usize {
        self.held.len()
    }

    /// Bytes held for the kernel.
    pub(crate) fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Whether any batch is waiting for its completion.
    pub(crate) fn is_idle(&self) -> bool {
        self.held.is_empty()
    }

    pub(crate) fn counters(&self) -> CompletionCounters {
        self.counters
    }

    /// Ids `lo ..= hi` completed; `copied` if the kernel copied them anyway. Returns the batches
    /// now released, for the caller to drop (or recycle).
    pub(crate) fn complete(&mut self, lo: u32, hi: u32, copied: bool, mut release: impl FnMut(Written)) {
        let calls = u64::from(hi.wrapping_sub(lo)) + 1;
        self.counters.completed += calls;
        if copied {
            self.counters.copied += calls;
        }
        if before(lo, self.low) && before(hi, self.low) {
            return; // A duplicate; nothing new.
        }
        self.ahead.push((lo, hi));
        // Absorb every range that now touches `low`.
        loop {
            let low = self.low;
            let Some(i) = self
                .ahead
                .iter()
                .position(|&(l, h)| !before(low, l) && !before(h, low))
            else {
                break;
            };
            let (_, h) = self.ahead.swap_remove(i);
            self.low = h.wrapping_add(1);
        }
        let low = self.low;
        self.ahead.retain(|&(_, h)| !before(h, low));
        while let Some(front) = self.held.front() {
            if !before(front.last_id, self.low) {
                break;
            }
            let held = self.held.pop_front().expect("checked above");
            self.held_bytes -= held.written.bytes;
            release(held.written);
        }
    }

    /// Forgets every held batch without releasing its buffers: the kernel may still read
    /// them, and leaking is the only safe end.
    pub(crate) fn leak(&mut self) {
        for held in self.held.drain(..) {
            std::mem::forget(held.written);
        }
        self.held_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use ferry_buf::Pool;
    use ferry_testkit::pool;

    use super::*;

    fn written(pool: &Pool, bytes: usize) -> Written {
        Written {
            head: Some(pool.copy_from(&vec![1; bytes]).unwrap()),
            segs: Vec::new(),
            bytes,
        }
    }

    #[test]
    fn releases_in_order_whatever_the_completion_order() {
        let pool = pool();
        let mut c = Completions::default();
        let (a, b, d) = (c.next_call(), c.next_call(), c.next_call());
        assert_eq!((a, b, d), (0, 1, 2));
        c.hold(a, written(&pool, 10), drop);
        c.hold(d, written(&pool, 20), drop);
        assert_eq!(c.held_bytes(), 30);
        let mut released = Vec::new();
        // Out of order: 2 first. Batch (last id 2) must wait for 0 and 1.
        c.complete(2, 2, true, |w| released.push(w.bytes));
        assert!(released.is_empty());
        c.complete(0, 0, true, |w| released.push(w.bytes));
        assert_eq!(released, [10]);
        assert_eq!(pool.stats().buffers_outstanding(), 1);
        c.complete(1, 1, false, |w| released.push(w.bytes));
        assert_eq!(released, [10, 20]);
        assert!(c.is_idle());
        assert_eq!(c.held_bytes(), 0);
        assert_eq!(
            c.counters(),
            CompletionCounters {
                completed: 3,
                copied: 2
            }
        );
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }

    #[test]
    fn ranges_and_wrap_around() {
        let pool = pool();
        let mut c = Completions::starting_at(u32::MAX - 1);
        let ids: Vec<u32> = (0..4).map(|_| c.next_call()).collect();
        assert_eq!(ids, [u32::MAX - 1, u32::MAX, 0, 1]);
        c.hold(ids[1], written(&pool, 1), drop);
        c.hold(ids[3], written(&pool, 2), drop);
        let mut released = Vec::new();
        c.complete(u32::MAX - 1, 0, true, |w| released.push(w.bytes));
        assert_eq!(released, [1]);
        c.complete(u32::MAX - 1, 0, true, |w| released.push(w.bytes)); // duplicate
        c.complete(1, 1, true, |w| released.push(w.bytes));
        assert_eq!(released, [1, 2]);
        assert_eq!(c.counters().completed, 7);
    }

    /// Regression: io_uring reaps a request's notification while waiting for its result, so
    /// the completion can arrive before the batch is held. The batch must be released at once,
    /// not held for ever (`wait_idle` hung).
    #[test]
    fn a_batch_completed_before_it_is_held_is_released_at_once() {
        let pool = pool();
        let mut c = Completions::default();
        let id = c.next_call();
        c.complete(id, id, true, drop);
        let mut released = Vec::new();
        c.hold(id, written(&pool, 5), |w| released.push(w.bytes));
        assert_eq!(released, [5]);
        assert!(c.is_idle());
        assert_eq!(c.held_bytes(), 0);
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }
}
