//! Shared-memory session pools made and dropped off the loop's thread. A new session's pool
//! is a memory file whose first region is mapped at the session's first buffer (about 1.5 ms
//! in a debug build), and a leaving session's pool is unmapped when its last handle drops
//! (about 0.4 ms): done on the loop, a storm of connects stalled every session it serves for
//! as long. Here a maker thread keeps [`READY`] pools made, their first region mapped and the
//! pages of the buffers a session takes first (its control area, then its first block)
//! faulted in, and rings the loop's waker for each; a reaper thread drops the pools of sessions
//! that left and of setups that failed. The loop accepts a shared-memory peer only when a
//! made pool waits (its listener leaves the loop's readiness set meanwhile, see
//! `poll.rs`): a storm faster than the maker waits in the listener's backlog, never on the
//! loop. Only if the maker has stopped (it could not make a pool) does the loop make its own,
//! and see the error.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};

use ferry_buf::{Pool, PoolConfig};
use ferry_shm::layout::CONTROL_LEN;
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

/// A session's pool: made, with the buffers a shared-memory setup takes first (its control
/// area, then its first block of `block` bytes) taken, their pages faulted in by writing
/// them, and given back so that the session takes those same slots (a class's free list hands
/// out the slot freed last first). Else the loop faulted them, page by page (each a memory
/// file page allocated and zeroed), as it cleared the control area and wrote the first block:
/// 4 faults per setup of the garbage case's peers (issue 28).
fn make(config: &PoolConfig, block: usize) -> Result<Pool, ferry_buf::PoolError> {
    let pool = Pool::new(config.clone())?;
    let mut first = [CONTROL_LEN, block].map(|len| pool.alloc(len).ok());
    for buf in first.iter_mut().flatten() {
        buf.capacity_mut().fill(0);
    }
    // The block back first, the control area last: the next take of their class is the
    // control area's slot.
    first.reverse();
    drop(first);
    Ok(pool)
}

impl ShmPools {
    /// Starts the threads that make pools of `config` (see [`make`]; a session's blocks are
    /// `block` bytes), waking the loop through `waker` for each, and drop the ones given back.
    pub(super) fn start(
        config: PoolConfig,
        block: usize,
        waker: Arc<Waker>,
    ) -> Result<ShmPools, TransportError> {
        let (made, ready): (SyncSender<Pool>, _) = sync_channel(READY);
        std::thread::Builder::new()
            .name("ferry-rpc-shm-pools".into())
            .spawn(move || {
                // Ends when the loop is gone (the send fails) or a pool cannot be made (the
                // loop then makes its own, and sees the error itself).
                while let Ok(pool) = make(&config, block) {
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::ConnConfig;

    /// Pages of `bytes` not mapped in this process's page tables (the present bits of
    /// `/proc/self/pagemap`): each would be a page fault for the thread that touches it first.
    fn unmapped_pages(bytes: &[u8]) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        const PAGE: usize = 4096;
        let first = bytes.as_ptr().addr() / PAGE;
        let last = (bytes.as_ptr().addr() + bytes.len() - 1) / PAGE;
        let mut pagemap = std::fs::File::open("/proc/self/pagemap").expect("/proc/self/pagemap");
        pagemap.seek(SeekFrom::Start((first * 8) as u64)).expect("seek");
        let mut entries = vec![0; (last - first + 1) * 8];
        pagemap.read_exact(&mut entries).expect("pagemap entries");
        entries
            .chunks_exact(8)
            .filter(|e| u64::from_ne_bytes((*e).try_into().expect("8 bytes")) >> 63 == 0)
            .count()
    }

    /// The regression of the garbage and storm rows over shared memory (issue 28): the loop
    /// faulted the pages of a made pool's control area (16 KiB, 4 memory-file pages) as it
    /// cleared it at every setup, and those of the session's first block as it wrote it.
    #[test]
    fn a_made_pools_control_area_and_first_block_fault_nothing_on_the_loop() {
        let config = ConnConfig::default();
        let block = config.shm.block_size;
        let mut pools = ShmPools::start(config.shm_pool, block, Arc::new(Waker::new().expect("waker")))
            .expect("maker started");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pools.has_ready() {
            assert!(Instant::now() < deadline, "no pool made in 30 s");
            std::thread::yield_now();
        }
        let mut made_here = 0;
        let pool = pools
            .take(&mut made_here, || unreachable!("a made pool waits"))
            .expect("a pool");
        // What the loop does with it: the setup clears its control area, then the session
        // writes its first block. Every page of both is mapped already (by the maker's
        // writes), so neither write faults on the loop. (Counting the thread's faults instead
        // also counted a page of its own stack now and then.)
        let mut control = pool.alloc(CONTROL_LEN).expect("control");
        let mut first = pool.alloc(block).expect("block");
        assert_eq!(
            unmapped_pages(control.capacity_mut()),
            0,
            "control area pages the loop would fault"
        );
        assert_eq!(
            unmapped_pages(first.capacity_mut()),
            0,
            "first block pages the loop would fault"
        );
        drop((control, first));
        pools.bury(pool, None);
    }
}
