//! The receive budget: bytes that frames *in progress* (announced by their header, not all
//! arrived) may hold over every connection that shares it, a server's. A length prefix alone
//! makes the reader give the frame a pool buffer of that length (so that the payload is read
//! into it in place, uncopied); without a bound over connections, N peers that announce
//! [`Config::max_frame_len`](crate::Config::max_frame_len) and send nothing would hold N such
//! buffers. With it, the frame that would pass the budget fails its connection
//! ([`FrameError::OverBudget`]), and what the peers hold stays under the budget whatever
//! their number.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A receive budget shared by the connections of one server (clones share it). See the
/// module docs.
#[derive(Debug, Clone)]
pub struct FrameBudget(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    limit: usize,
    in_use: AtomicUsize,
}

impl FrameBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> FrameBudget {
        FrameBudget(Arc::new(Shared {
            limit,
            in_use: AtomicUsize::new(0),
        }))
    }

    /// Its size in bytes.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// Bytes held by frames in progress now.
    pub fn in_use(&self) -> usize {
        self.0.in_use.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes for as long as the [`Reservation`] lives, if they fit (`None`: nothing
    /// taken). For a receiver other than this crate's reader (a RESP request in progress).
    pub fn try_reserve(&self, n: usize) -> Option<Reservation> {
        self.take(n).then(|| Reservation {
            budget: self.clone(),
            n,
        })
    }

    /// Takes `n` bytes if they fit; `false` (nothing taken) if not.
    pub(crate) fn take(&self, n: usize) -> bool {
        self.0
            .in_use
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(n).filter(|&total| total <= self.0.limit)
            })
            .is_ok()
    }

    /// Gives back `n` bytes taken earlier.
    pub(crate) fn give(&self, n: usize) {
        self.0.in_use.fetch_sub(n, Ordering::Relaxed);
    }
}

/// Bytes of a [`FrameBudget`], given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: FrameBudget,
    n: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give(self.n);
    }
}

/// 256 MiB: a quarter of the default pool's 1 GiB, so that frames in progress never take the
/// pool from the connections that send whole frames.
impl Default for FrameBudget {
    fn default() -> FrameBudget {
        FrameBudget::new(256 << 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_what_fits_and_clones_share_it() {
        let a = FrameBudget::new(100);
        let b = a.clone();
        assert!(a.take(60));
        assert!(!b.take(41), "past the limit");
        assert_eq!(b.in_use(), 60, "a refusal takes nothing");
        assert!(b.take(40));
        a.give(60);
        assert_eq!((a.in_use(), b.limit()), (40, 100));
        let r = a.try_reserve(60).expect("fits");
        assert!(a.try_reserve(1).is_none());
        drop(r);
        assert_eq!(a.in_use(), 40, "a reservation gives back when dropped");
    }
}
