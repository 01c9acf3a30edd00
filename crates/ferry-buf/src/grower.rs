//! The grower: one thread per process, at the lowest scheduling priority, that maps and
//! prefaults the region a pool asked to have ready ahead of need ([`Ahead`](crate::ahead)),
//! and prefaults in place the regions a [warm](crate::Pool::keep_warm) pool mapped on
//! demand.
//!
//! Zeroing a region (8 MiB by default) takes a core for milliseconds. Done by the thread that
//! needed a buffer, it stalled that thread (an event loop, and every session it serves) and,
//! under the pool's growth lock, every other thread growing the pool. The grower does it
//! instead, when nothing more urgent wants the core; a pool that outruns it maps its next
//! region on demand, faulted page by page as buffers touch it (unless the pool is long-lived
//! and the grower gets there first). Under Miri (which rejects threads left running at exit)
//! the request is served on the asking thread.
//!
//! A prefault hands nothing over: the region is already the pool's and in use, and the grower
//! only has the kernel fault its pages in (`MADV_POPULATE_WRITE`, which reads and writes no
//! byte of it) while it holds the pool alive. The one hand-off is the region mapped ahead,
//! which `ahead.rs`'s loom model covers.

use std::sync::Weak;

use crate::pool::PoolInner;

/// What a pool asks of the grower.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Job {
    /// Map the pool's next region ahead of need (the pool has just
    /// [asked](crate::ahead::Ahead::ask)).
    Ahead,
    /// Fault in the pages of region `index`, mapped on demand and already in use, without
    /// changing its contents.
    Prefault(usize),
}

/// A job for the grower and the pool it is for (skipped if the pool is gone by then).
#[cfg(not(miri))]
type Request = (Weak<PoolInner>, Job);

/// Has `job` done for `pool`.
pub(crate) fn request(pool: Weak<PoolInner>, job: Job) {
    #[cfg(not(miri))]
    {
        use std::sync::OnceLock;
        use std::sync::mpsc::{Sender, channel};

        static GROWER: OnceLock<Option<Sender<Request>>> = OnceLock::new();
        let grower = GROWER.get_or_init(|| {
            let (sender, requests) = channel::<Request>();
            std::thread::Builder::new()
                .name("ferry-buf-grower".into())
                .spawn(move || {
                    crate::sys::lower_priority();
                    for (pool, job) in requests {
                        if let Some(pool) = pool.upgrade() {
                            pool.work(job);
                        }
                    }
                })
                .ok()
                .map(|_| sender)
        });
        match grower {
            Some(grower) => {
                if let Err(unsent) = grower.send((pool, job)) {
                    refuse(unsent.0.0, job);
                }
            }
            // No thread for it: the pool keeps growing on demand, its pages faulted as touched.
            None => refuse(pool, job),
        }
    }
    #[cfg(miri)]
    if let Some(pool) = pool.upgrade() {
        pool.work(job);
    }
}

/// Answers a request nobody will serve, so that the pool does not wait for it (a region left
/// unprefaulted needs no answer: its pages are faulted as buffers touch them).
#[cfg(not(miri))]
fn refuse(pool: Weak<PoolInner>, job: Job) {
    if let (Job::Ahead, Some(pool)) = (job, pool.upgrade()) {
        pool.refuse_ahead();
    }
}
