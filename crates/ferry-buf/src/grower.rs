//! The grower: one thread per process, at the lowest scheduling priority, that maps and
//! prefaults the region a pool asked to have ready ahead of need ([`Ahead`](crate::ahead)).
//!
//! Zeroing a region (8 MiB by default) takes a core for milliseconds. Done by the thread that
//! needed a buffer, it stalled that thread (an event loop, and every session it serves) and,
//! under the pool's growth lock, every other thread growing the pool. The grower does it
//! instead, when nothing more urgent wants the core; a pool that outruns it maps its next
//! region on demand, faulted page by page as buffers touch it. Under Miri (which rejects
//! threads left running at exit) the request is served on the asking thread.

use std::sync::Weak;

use crate::pool::PoolInner;

/// Has a region mapped ahead for `pool` (which has just [asked](crate::ahead::Ahead::ask)).
pub(crate) fn request(pool: Weak<PoolInner>) {
    #[cfg(not(miri))]
    {
        use std::sync::OnceLock;
        use std::sync::mpsc::{Sender, channel};

        static GROWER: OnceLock<Option<Sender<Weak<PoolInner>>>> = OnceLock::new();
        let grower = GROWER.get_or_init(|| {
            let (sender, requests) = channel::<Weak<PoolInner>>();
            std::thread::Builder::new()
                .name("ferry-buf-grower".into())
                .spawn(move || {
                    crate::sys::lower_priority();
                    for pool in requests {
                        if let Some(pool) = pool.upgrade() {
                            pool.map_ahead();
                        }
                    }
                })
                .ok()
                .map(|_| sender)
        });
        match grower {
            Some(grower) => {
                if let Err(unsent) = grower.send(pool) {
                    refuse(unsent.0);
                }
            }
            // No thread for it: the pool keeps growing on demand.
            None => refuse(pool),
        }
    }
    #[cfg(miri)]
    if let Some(pool) = pool.upgrade() {
        pool.map_ahead();
    }
}

/// Answers a request nobody will serve, so that the pool does not wait for it.
#[cfg(not(miri))]
fn refuse(pool: Weak<PoolInner>) {
    if let Some(pool) = pool.upgrade() {
        pool.refuse_ahead();
    }
}
