//! Shared-memory session pools made and dropped off the loop's thread. A new session's pool
//! is a memory file whose first region is mapped and touched at the session's first block
//! (about 1.5 ms in a debug build), and a leaving session's pool is unmapped when its last
//! handle drops (about 0.4 ms): done on the loop, a storm of connects stalled every session it
//! serves for as long. Here a maker thread keeps [`READY`] pools made, their first region
//! mapped, and rings the loop's waker for each; a reaper thread drops the pools of sessions
//! that left and of setups that failed. The loop accepts a shared-memory peer only when a
//! made pool waits (its listener leaves the loop's readiness set meanwhile, see
//! `poll.rs`): a storm faster than the maker waits in the listener's backlog, never on the
//! loop. Only if the maker has stopped (it could not make a pool) does the loop make its own,
//! and see the error.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};

use ferry_buf::{Pool, PoolConfig};
use ferry_transport::TransportError;

use crate::metrics::Admitted;
use crate::sys::Waker;

/// Pools kept made ahead of the sessions that will take them.
const READY: usize = 2;

/// The loop's side of the maker and the reaper (their threads end when it drops).
pub(super) struct ShmPools {
    ready: Receiver<Pool>,
    /// A made pool taken off the channel by [`has_ready`](Self::has_ready), handed out next.
    next: Option<Pool>,
    graveyard: Sender<(Pool, Option<Admitted>)>,
}

impl ShmPools {
    /// Starts the threads that make pools of `config` (with the first region mapped by a
    /// buffer of `first` bytes), waking the loop through `waker` for each, and drop the ones
    /// given back.
    pub(super) fn start(
        config: PoolConfig,
        first: usize,
        waker: Arc<Waker>,
    ) -> Result<ShmPools, TransportError> {
        let (made, ready): (SyncSender<Pool>, _) = sync_channel(READY);
        std::thread::Builder::new()
            .name("ferry-rpc-shm-pools".into())
            .spawn(move || {
                // Ends when the loop is gone (the send fails) or a pool cannot be made (the
                // loop then makes its own, and sees the error itself).
                while let Ok(pool) = Pool::new(config.clone()) {
                    drop(pool.alloc(first));
                    if made.send(pool).is_err() {
                        return;
                    }
                    waker.wake();
                }
                // The loop may wait for a pool: it finds the channel closed.
                drop(made);
                waker.wake();
            })
            .map_err(|e| TransportError::io("spawning the shared-memory pool maker", e))?;
        let (graveyard, dead): (_, Receiver<(Pool, Option<Admitted>)>) = channel();
        std::thread::Builder::new()
            .name("ferry-rpc-shm-reaper".into())
            .spawn(move || dead.into_iter().for_each(drop))
            .map_err(|e| TransportError::io("spawning the shared-memory pool reaper", e))?;
        Ok(ShmPools {
            ready,
            next: None,
            graveyard,
        })
    }

    /// Whether [`take`](Self::take) would not make a pool on the caller's thread: a made pool
    /// waits, or the maker has stopped (then `take` makes one, to see the maker's error).
    pub(super) fn has_ready(&mut self) -> bool {
        if self.next.is_none() {
            match self.ready.try_recv() {
                Ok(pool) => self.next = Some(pool),
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => {}
            }
        }
        true
    }

    /// A made pool if one is ready, else `make`'s (counted in `made_here`).
    pub(super) fn take(
        &mut self,
        made_here: &mut u64,
        make: impl FnOnce() -> Result<Pool, TransportError>,
    ) -> Result<Pool, TransportError> {
        if let Some(pool) = self.next.take() {
            return Ok(pool);
        }
        match self.ready.try_recv() {
            Ok(pool) => Ok(pool),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                *made_here += 1;
                make()
            }
        }
    }

    /// Drops `pool` on the reaper's thread (call with the last handle the loop holds, after
    /// the session or setup that used it is gone), then `place`, the connection's place
    /// under the limit: a connection counted out has given its memory back.
    pub(super) fn bury(&self, pool: Pool, place: Option<Admitted>) {
        // The reaper ends only with the loop: a failed send drops them here.
        let _ = self.graveyard.send((pool, place));
    }
}
