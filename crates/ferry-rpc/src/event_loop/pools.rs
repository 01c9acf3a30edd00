//! Shared-memory session pools made and dropped off the loop's thread. A new session's pool
//! is a memory file whose first region is mapped and touched at the session's first block
//! (about 1.5 ms in a debug build), and a leaving session's pool is unmapped when its last
//! handle drops (about 0.4 ms): done on the loop, a storm of connects stalled every session it
//! serves for as long. Here a maker thread keeps [`READY`] pools made, their first region
//! mapped, and a reaper thread drops the pools of sessions that left. The loop takes a made
//! pool when one is ready, else makes one itself (a storm faster than the maker costs what it
//! did before, never more).

use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};

use ferry_buf::{Pool, PoolConfig};
use ferry_transport::TransportError;

/// Pools kept made ahead of the sessions that will take them.
const READY: usize = 2;

/// The loop's side of the maker and the reaper (their threads end when it drops).
pub(super) struct ShmPools {
    ready: Receiver<Pool>,
    graveyard: Sender<Pool>,
}

impl ShmPools {
    /// Starts the threads that make pools of `config` (with the first region mapped by a
    /// buffer of `first` bytes) and drop the ones given back.
    pub(super) fn start(config: PoolConfig, first: usize) -> Result<ShmPools, TransportError> {
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
                }
            })
            .map_err(|e| TransportError::io("spawning the shared-memory pool maker", e))?;
        let (graveyard, dead): (_, Receiver<Pool>) = channel();
        std::thread::Builder::new()
            .name("ferry-rpc-shm-reaper".into())
            .spawn(move || dead.into_iter().for_each(drop))
            .map_err(|e| TransportError::io("spawning the shared-memory pool reaper", e))?;
        Ok(ShmPools { ready, graveyard })
    }

    /// A made pool if one is ready, else `make`'s.
    pub(super) fn take(
        &self,
        make: impl FnOnce() -> Result<Pool, TransportError>,
    ) -> Result<Pool, TransportError> {
        match self.ready.try_recv() {
            Ok(pool) => Ok(pool),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => make(),
        }
    }

    /// Drops `pool` on the reaper's thread (call with the last handle the loop holds, after
    /// the session that used it is gone).
    pub(super) fn bury(&self, pool: Pool) {
        // The reaper ends only with the loop: a failed send drops the pool here.
        let _ = self.graveyard.send(pool);
    }
}
