//! One region mapped ahead of need: the hand-off between a pool's allocating threads, which ask
//! for it and take it, and the grower thread ([`grower`](crate::grower)), which maps and
//! prefaults it.
//!
//! At most one region is asked for or ready at a time, so a pool maps at most one region
//! beyond what its classes use. Nothing here blocks on the grower but [`Ahead::wait_take`],
//! which a pool calls only when its reservation is used up and the last region may be the one
//! being mapped ahead (then waiting is the only way not to report a false `Exhausted`).

use std::sync::PoisonError;

use crate::sync::{Condvar, Mutex, MutexGuard};

/// The slot of the region mapped ahead (`T` is the backend's mapped region; the loom tests
/// use plain values).
#[derive(Debug)]
pub(crate) struct Ahead<T> {
    state: Mutex<State<T>>,
    offered: Condvar,
}

#[derive(Debug)]
enum State<T> {
    /// Nothing asked for, nothing ready.
    Idle,
    /// The grower was asked and has not answered yet.
    Asked,
    /// Mapped, prefaulted, waiting for the pool to grow.
    Ready(T),
}

impl<T> Ahead<T> {
    pub(crate) fn new() -> Self {
        Ahead {
            state: Mutex::new(State::Idle),
            offered: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No code panics while holding the lock; a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the caller should ask the grower for a region: true if none is asked for or
    /// ready (and then one is, until [`offer`](Self::offer)).
    pub(crate) fn ask(&self) -> bool {
        let mut state = self.lock();
        let idle = matches!(*state, State::Idle);
        if idle {
            *state = State::Asked;
        }
        idle
    }

    /// The grower's answer to [`ask`](Self::ask): the region, or `None` if it could not map
    /// one (the reservation is used up, or mapping failed: the pool's next growth maps on
    /// demand and sees the error itself).
    pub(crate) fn offer(&self, value: Option<T>) {
        let mut state = self.lock();
        debug_assert!(matches!(*state, State::Asked), "an offer nobody asked for");
        *state = value.map_or(State::Idle, State::Ready);
        drop(state);
        self.offered.notify_all();
    }

    /// The region if one is ready, without waiting.
    pub(crate) fn take(&self) -> Option<T> {
        Self::take_ready(&mut self.lock())
    }

    /// The region once the grower has answered, if it was asked; else as [`take`](Self::take).
    /// (`tests/pool.rs`' `exhaustion_is_an_error_and_recovers_after_free` fills a pool to its
    /// last region at once, which the grower may be mapping meanwhile.)
    pub(crate) fn wait_take(&self) -> Option<T> {
        let mut state = self.lock();
        while matches!(*state, State::Asked) {
            state = self.offered.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        Self::take_ready(&mut state)
    }

    /// Whether a region is ready.
    pub(crate) fn is_ready(&self) -> bool {
        matches!(*self.lock(), State::Ready(_))
    }

    fn take_ready(state: &mut State<T>) -> Option<T> {
        match std::mem::replace(state, State::Idle) {
            State::Ready(value) => Some(value),
            other => {
                *state = other;
                None
            }
        }
    }
}

/// Model checks under loom (`RUSTFLAGS="--cfg loom" cargo test -p ferry-buf --lib --release
/// -- loom_`): every interleaving of an allocating thread and the grower.
#[cfg(all(test, loom))]
mod loom_tests {
    use loom::sync::Arc;
    use loom::thread;

    use super::Ahead;

    /// An asked-for region is taken exactly once, whether the taker comes before or after
    /// the offer, and a waiting taker is woken by it.
    #[test]
    fn loom_an_asked_region_is_taken_once() {
        loom::model(|| {
            let ahead = Arc::new(Ahead::new());
            assert!(ahead.ask());
            assert!(!ahead.ask(), "one region in flight at a time");
            let grower = {
                let ahead = ahead.clone();
                thread::spawn(move || ahead.offer(Some(7)))
            };
            let early = ahead.take();
            let late = ahead.wait_take();
            grower.join().unwrap();
            assert_eq!(
                [early, late],
                if early.is_some() {
                    [Some(7), None]
                } else {
                    [None, Some(7)]
                }
            );
            assert!(ahead.ask(), "the next region may be asked for");
        });
    }

    /// A failed mapping leaves the slot idle: nothing ready, a waiter not stuck, the next ask
    /// granted.
    #[test]
    fn loom_a_failed_offer_frees_the_slot() {
        loom::model(|| {
            let ahead = Arc::new(Ahead::<u32>::new());
            assert!(ahead.ask());
            let grower = {
                let ahead = ahead.clone();
                thread::spawn(move || ahead.offer(None))
            };
            assert_eq!(ahead.wait_take(), None);
            grower.join().unwrap();
            assert!(!ahead.is_ready());
            assert!(ahead.ask());
        });
    }
}
