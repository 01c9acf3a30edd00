//! The pool: size classes, free lists, growth, registration hooks, recovery, statistics.

use std::fmt;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::ahead::Ahead;
use crate::class::{Classes, SlotId};
use crate::free_list::FreeList;
use crate::grower::{self, Job};
use crate::raw::{RawMut, RawShared, Region};
use crate::sync::AtomicU32;
use crate::sys::{MapOptions, Mapped, Reservation};
use crate::{BufMut, ClassStats, PoolConfig, PoolError, PoolStats, RegionInfo, SharedBuf};

type RegionHook = Box<dyn Fn(&RegionInfo) + Send + Sync>;

/// A pool of registered memory. Cheap to clone (a shared handle); `Send + Sync`.
///
/// Memory lives as long as the pool *or any buffer from it*: dropping every `Pool` handle
/// while buffers are alive is fine, the regions are unmapped when the last buffer goes.
///
/// ```
/// use ferry_buf::{Pool, PoolConfig};
///
/// let pool = Pool::new(PoolConfig { region_size: 64 << 10, max_bytes: 1 << 20, ..Default::default() })?;
/// let mut buf = pool.alloc(100)?;
/// assert_eq!(buf.capacity(), 128);
/// buf.extend_from_slice(b"hello, world");
/// let shared = buf.freeze();
///
/// // Any slice into a live frozen buffer leads back to it.
/// let field = &shared[7..12];
/// let recovered = pool.recover(field).expect("pool memory");
/// assert_eq!(&*recovered, b"world");
/// assert_eq!(shared.ref_count(), 2);
///
/// drop((shared, recovered));
/// assert_eq!(pool.stats().buffers_outstanding(), 0);
/// # Ok::<(), ferry_buf::PoolError>(())
/// ```
#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

/// The shared state behind [`Pool`] handles and live slots.
pub(crate) struct PoolInner {
    config: PoolConfig,
    classes: Classes,
    region_shift: u32,
    /// Indexed by `(addr - base) / region_size`; read without a lock.
    regions: Box<[OnceLock<Region>]>,
    class_states: Box<[ClassState]>,
    /// Held while adding a region or a hook (the rare path).
    growth: Mutex<Growth>,
    /// The region the grower maps ahead of need, once a class has needed a second region (a
    /// warm pool: always).
    ahead: Ahead<Mapped>,
    /// Set by [`Pool::keep_warm`]: regions mapped on demand are prefaulted by the grower.
    warm: AtomicBool,
    regions_added: AtomicUsize,
    regions_taken_ahead: AtomicUsize,
    mlock_failures: AtomicUsize,
    /// Declared last so it is dropped (unmapped) after everything that describes it.
    reservation: Reservation,
}

/// Hot per-class state. Aligned so that classes used by different threads do not share a
/// cache line (128: x86 prefetches lines in pairs).
#[repr(align(128))]
struct ClassState {
    free: FreeList,
    outstanding: AtomicUsize,
    regions: AtomicUsize,
}

struct Growth {
    hooks: Vec<RegionHook>,
    mlock_reported: bool,
}

impl Pool {
    /// Creates a pool: validates `config` and reserves `max_bytes` of address space. No region
    /// is mapped until the first allocation needs one.
    pub fn new(config: PoolConfig) -> Result<Pool, PoolError> {
        config.validate()?;
        let classes = Classes::new(config.region_size);
        let reservation = Reservation::new(
            config.max_bytes,
            config.region_size,
            config.shared,
            config.huge_pages,
        )?;
        let region_count = config.max_bytes / config.region_size;
        let inner = PoolInner {
            classes,
            region_shift: config.region_size.trailing_zeros(),
            reservation,
            regions: (0..region_count).map(|_| OnceLock::new()).collect(),
            class_states: (0..classes.count())
                .map(|_| ClassState {
                    free: FreeList::new(),
                    outstanding: AtomicUsize::new(0),
                    regions: AtomicUsize::new(0),
                })
                .collect(),
            growth: Mutex::new(Growth {
                hooks: Vec::new(),
                mlock_reported: false,
            }),
            ahead: Ahead::new(),
            warm: AtomicBool::new(false),
            regions_added: AtomicUsize::new(0),
            regions_taken_ahead: AtomicUsize::new(0),
            mlock_failures: AtomicUsize::new(0),
            config,
        };
        Ok(Pool {
            inner: Arc::new(inner),
        })
    }

    /// Allocates a buffer of capacity >= `capacity` (its size class, at least [`MIN_CLASS`](crate::MIN_CLASS)),
    /// length 0. Lock-free unless the class needs a new region.
    ///
    /// Errors: [`PoolError::TooLarge`] above the largest class, [`PoolError::Exhausted`] if the
    /// class has no free slot and `max_bytes` allows no new region, [`PoolError::Map`] if
    /// mapping a new region failed. Never falls back to the heap.
    pub fn alloc(&self, capacity: usize) -> Result<BufMut, PoolError> {
        let class = self
            .inner
            .classes
            .index_for(capacity)
            .ok_or(PoolError::TooLarge {
                requested: capacity,
                max: self.max_class(),
            })?;
        self.inner.alloc(class).map(BufMut::from_raw)
    }

    /// Allocates and copies `data` in.
    pub fn copy_from(&self, data: &[u8]) -> Result<SharedBuf, PoolError> {
        let mut buf = self.alloc(data.len())?;
        buf.extend_from_slice(data);
        Ok(buf.freeze())
    }

    /// O(1): if `data` lies wholly inside one live, frozen buffer of this pool, a shared buffer
    /// for exactly that range (one more reference to the slot); otherwise `None`.
    ///
    /// `None` also for an empty `data` (there are no bytes to keep alive) and for slices of
    /// a [`BufMut`] (a slot still being written is not shared). The whole slot capacity counts
    /// as "inside", not only the frozen length.
    pub fn recover(&self, data: &[u8]) -> Option<SharedBuf> {
        RawShared::recover(&self.inner, data.as_ptr().addr(), data.len()).map(SharedBuf::from_raw)
    }

    /// O(1), no atomic write: whether `data` lies wholly inside one live, frozen buffer of this
    /// pool, i.e. whether [`Pool::recover`] would accept it. The answer stays true for as long
    /// as `data` is borrowed: a live borrow of pool memory comes from a `SharedBuf` (or
    /// `BufMut`) that keeps its slot allocated.
    pub fn is_shared(&self, data: &[u8]) -> bool {
        RawShared::is_shared(&self.inner, data.as_ptr().addr(), data.len())
    }

    /// O(1): whether `data` lies in this pool's address range (no liveness check). An empty
    /// slice counts if its address does.
    pub fn contains(&self, data: &[u8]) -> bool {
        let base = self.inner.reservation.base().addr().get();
        data.as_ptr().addr().checked_sub(base).is_some_and(|offset| {
            offset < self.inner.config.max_bytes && data.len() <= self.inner.config.max_bytes - offset
        })
    }

    /// The memfd behind a [`shared`](PoolConfig::shared) pool: map it (all of
    /// [`max_bytes`](PoolConfig::max_bytes)) in another process to read this pool's buffers.
    /// `None` for a private pool.
    pub fn memfd(&self) -> Option<BorrowedFd<'_>> {
        self.inner.reservation.memfd()
    }

    /// O(1): the offset of `data` from the start of the pool's memory (the offset in
    /// [`memfd`](Self::memfd) for a shared pool), if it lies in the pool's address range.
    pub fn offset_of(&self, data: &[u8]) -> Option<usize> {
        self.contains(data)
            .then(|| data.as_ptr().addr() - self.inner.reservation.base().addr().get())
    }

    /// Calls `hook` for every region, now (in index order) and whenever one is added, before
    /// any buffer of the new region is handed out.
    ///
    /// The hook runs with the pool's growth lock held, on whichever thread grows the pool: it
    /// must not call back into this pool (that may deadlock), must not panic (the region being
    /// added would be lost), and should be quick. A hook that captures a clone of this `Pool`
    /// keeps the pool alive for ever (a reference cycle); capture what the transport needs.
    pub fn on_region(&self, hook: impl Fn(&RegionInfo) + Send + Sync + 'static) {
        let mut growth = self.inner.lock_growth();
        for region in self.inner.regions.iter().filter_map(OnceLock::get) {
            hook(&region.info());
        }
        growth.hooks.push(Box::new(hook));
    }

    /// Marks the pool as serving one owner for long, on a thread whose stalls others wait for
    /// (an event loop's pool). From now on the grower keeps one region mapped ahead for it
    /// (huge pages, prefaulted), so that whichever class next needs a region, its first
    /// included, takes it ready; and each region the pool maps on demand (when none was ready,
    /// and those it mapped before) has its pages faulted in by the grower right after, without
    /// changing its contents. The owner then faults no page of the pool once the grower is
    /// done (a page it touches first, it still faults itself). Costs a region's memory ahead
    /// and each region's whole memory and zeroing at once, at the grower's low priority; a
    /// short-lived pool (a client connection's, a shared-memory session's) is left cold and
    /// pays only for the pages its buffers touch. Needs Linux 5.14 (`MADV_POPULATE_WRITE`)
    /// for regions mapped on demand; without it their pages are faulted as they are touched,
    /// reported once on stderr.
    pub fn keep_warm(&self) {
        // Under the growth lock: a region is either mapped before (prefaulted here) or after
        // (by `grow`, which then sees the flag).
        let _growth = self.inner.lock_growth();
        if self.inner.warm.swap(true, Ordering::Relaxed) {
            return;
        }
        // Those already prefaulted (mapped ahead) cost the grower a walk of present pages.
        for region in self.inner.regions.iter().filter_map(OnceLock::get) {
            grower::request(Arc::downgrade(&self.inner), Job::Prefault(region.info().index));
        }
        if self.inner.ahead.ask() {
            grower::request(Arc::downgrade(&self.inner), Job::Ahead);
        }
    }

    /// A snapshot of the pool's counters.
    pub fn stats(&self) -> PoolStats {
        let inner = &self.inner;
        let classes = inner
            .class_states
            .iter()
            .enumerate()
            .map(|(index, state)| {
                let class = inner.classes.size(index);
                let buffers = state.outstanding.load(Ordering::Relaxed);
                ClassStats {
                    class,
                    buffers_outstanding: buffers,
                    bytes_outstanding: buffers * class,
                    regions: state.regions.load(Ordering::Relaxed),
                }
            })
            .collect();
        let regions = inner.regions_added.load(Ordering::Relaxed);
        PoolStats {
            classes,
            regions,
            regions_taken_ahead: inner.regions_taken_ahead.load(Ordering::Relaxed),
            regions_ready_ahead: usize::from(inner.ahead.is_ready()),
            mapped_bytes: regions * inner.config.region_size,
            mlock_failures: inner.mlock_failures.load(Ordering::Relaxed),
        }
    }

    /// The configuration the pool was created with.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// The largest size class (the region size): the most one buffer can hold.
    pub fn max_class(&self) -> usize {
        self.inner.classes.max()
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("config", &self.inner.config)
            .field("base", &self.inner.reservation.base())
            .field("regions", &self.inner.regions_added.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl PoolInner {
    /// A buffer of class `class`: from the free list, else from a new region.
    fn alloc(self: &Arc<Self>, class: usize) -> Result<RawMut, PoolError> {
        match self.pop(class) {
            Some(raw) => Ok(raw),
            None => self.grow(class),
        }
    }

    /// Takes a free slot of class `class`, if there is one.
    fn pop(self: &Arc<Self>, class: usize) -> Option<RawMut> {
        let state = &self.class_states[class];
        let id = state.free.pop(|id| self.link(id))?;
        let raw = RawMut::claim(self, id)
            .unwrap_or_else(|| unreachable!("free list of class {class} held live slot {id:?}"));
        state.outstanding.fetch_add(1, Ordering::Relaxed);
        Some(raw)
    }

    /// Adds a region for class `class`, announces it to the hooks, keeps its first slot for
    /// the caller and pushes the others onto the free list.
    ///
    /// The region is the one mapped ahead if it is ready, else one mapped here on demand:
    /// base pages faulted as buffers touch them, so that neither this thread nor another one
    /// waiting for the growth lock waits for a region's zeroing (and a pool that stays small
    /// costs the pages it uses). A [warm](Pool::keep_warm) pool has the grower fault in the
    /// rest of such a region right away, off this thread. Once a class needs a second region
    /// (a warm pool: at every growth), the grower maps and prefaults the next one ahead.
    #[cold]
    fn grow(self: &Arc<Self>, class: usize) -> Result<RawMut, PoolError> {
        let mut growth = self.lock_growth();
        // Another thread may have grown this class, or freed a slot, while we waited.
        if let Some(raw) = self.pop(class) {
            return Ok(raw);
        }
        let exhausted = || PoolError::Exhausted {
            class: self.classes.size(class),
            max_bytes: self.config.max_bytes,
        };
        let (mapped, on_demand) = match self.ahead.take() {
            Some(mapped) => {
                self.regions_taken_ahead.fetch_add(1, Ordering::Relaxed);
                (mapped, false)
            }
            None => {
                let on_demand = MapOptions {
                    huge_pages: false,
                    prefault: false,
                    mlock: self.config.mlock,
                };
                match self.reservation.map_next(on_demand)? {
                    Some(mapped) => (mapped, true),
                    // The last region may be the one being mapped ahead.
                    None => (self.ahead.wait_take().ok_or_else(exhausted)?, false),
                }
            }
        };
        let state = &self.class_states[class];
        let warm = self.warm.load(Ordering::Relaxed);
        if on_demand && warm {
            grower::request(Arc::downgrade(self), Job::Prefault(mapped.index()));
        }
        // A warm pool keeps a region ahead from its first growth on, so that the next class
        // to need one takes it ready (huge pages) rather than mapped on demand.
        if (warm || state.regions.load(Ordering::Relaxed) > 0) && self.ahead.ask() {
            grower::request(Arc::downgrade(self), Job::Ahead);
        }
        let region = Region::add(self, class, mapped);
        self.regions_added.fetch_add(1, Ordering::Relaxed);
        state.regions.fetch_add(1, Ordering::Relaxed);
        if let Some(error) = region.mlock_error() {
            self.mlock_failures.fetch_add(1, Ordering::Relaxed);
            if !std::mem::replace(&mut growth.mlock_reported, true) {
                eprintln!(
                    "ferry-buf: mlock of a {} byte region failed ({error}); pool memory may be \
                     swapped out (see PoolStats::mlock_failures, RLIMIT_MEMLOCK)",
                    self.config.region_size
                );
            }
        }
        let info = region.info();
        for hook in &growth.hooks {
            hook(&info);
        }
        let slots = region.slot_count();
        if slots > 1 {
            for slot in 1..slots - 1 {
                region
                    .slot(slot)
                    .next()
                    .store(region.slot_id(slot + 1).0, Ordering::Relaxed);
            }
            let (first, last) = (region.slot_id(1), region.slot_id(slots - 1));
            state.free.push_chain(first, last, |id| self.link(id));
        }
        drop(growth);
        let raw = RawMut::claim(self, region.slot_id(0))
            .unwrap_or_else(|| unreachable!("slot 0 of a new region is free"));
        state.outstanding.fetch_add(1, Ordering::Relaxed);
        Ok(raw)
    }

    fn lock_growth(&self) -> MutexGuard<'_, Growth> {
        // A panicking hook leaves the state consistent: every field is updated before hooks run.
        self.growth.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts a slot that just became free back on its class's free list.
    pub(crate) fn recycle(&self, region: &Region, slot: usize) {
        let state = &self.class_states[region.class_index()];
        state.outstanding.fetch_sub(1, Ordering::Relaxed);
        state.free.push(region.slot_id(slot), |id| self.link(id));
    }

    /// Region `index`, if it exists.
    pub(crate) fn region(&self, index: usize) -> Option<&Region> {
        self.regions.get(index)?.get()
    }

    /// The table cell of region `index` (panics if out of range).
    pub(crate) fn region_cell(&self, index: usize) -> &OnceLock<Region> {
        &self.regions[index]
    }

    /// The region holding slot `id`, and the slot's index in it; `None` if `id` is not the
    /// start of a slot in a mapped region.
    pub(crate) fn locate(&self, id: SlotId) -> Option<(&Region, usize)> {
        let offset = id.offset();
        let region = self.region(offset >> self.region_shift)?;
        let within = offset & (self.config.region_size - 1);
        if within & (region.class() - 1) != 0 {
            return None;
        }
        Some((region, within >> region.class_shift()))
    }

    /// The free-list link of slot `id`, which is on (or being pushed to) a free list.
    fn link(&self, id: SlotId) -> &AtomicU32 {
        let (region, slot) = self
            .locate(id)
            .unwrap_or_else(|| unreachable!("free lists hold mapped slots only"));
        region.slot(slot).next()
    }

    pub(crate) fn reservation(&self) -> &Reservation {
        &self.reservation
    }

    pub(crate) fn region_shift(&self) -> u32 {
        self.region_shift
    }

    /// The grower's work.
    ///
    /// [`Job::Ahead`]: maps the next region, huge pages if configured, prefaulted, and offers
    /// it for the pool's next growth (nothing if the reservation is used up or mapping failed:
    /// growth on demand then sees it).
    ///
    /// [`Job::Prefault`]: faults in the pages of a region mapped on demand that buffers are
    /// already using, leaving its bytes as they are (see [`Reservation::prefault`]).
    pub(crate) fn work(&self, job: Job) {
        match job {
            Job::Ahead => {
                let ahead = MapOptions {
                    huge_pages: self.config.huge_pages,
                    prefault: true,
                    mlock: self.config.mlock,
                };
                self.ahead.offer(self.reservation.map_next(ahead).ok().flatten());
            }
            Job::Prefault(index) => self.reservation.prefault(index),
        }
    }

    /// Answers a request for a region ahead that no grower will serve.
    #[cfg_attr(miri, allow(dead_code))]
    pub(crate) fn refuse_ahead(&self) {
        self.ahead.offer(None);
    }
}

impl fmt::Debug for PoolInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolInner")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    //! Recovery from raw addresses: cases safe code cannot build a `&[u8]` for.

    use super::*;

    const REGION: usize = 64 << 10;

    fn pool() -> Pool {
        Pool::new(PoolConfig {
            region_size: REGION,
            max_bytes: 4 * REGION,
            ..Default::default()
        })
        .unwrap()
    }

    fn recover_at(pool: &Pool, addr: usize, len: usize) -> Option<SharedBuf> {
        RawShared::recover(&pool.inner, addr, len).map(SharedBuf::from_raw)
    }

    fn base(pool: &Pool) -> usize {
        pool.inner.reservation.base().addr().get()
    }

    #[test]
    fn freed_slot_is_not_resurrected() {
        let pool = pool();
        let buf = pool.copy_from(b"gone soon").unwrap();
        let addr = buf.as_ptr().addr();
        assert!(recover_at(&pool, addr, 4).is_some());
        drop(buf);
        assert!(recover_at(&pool, addr, 4).is_none());
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }

    #[test]
    fn whole_capacity_counts_not_only_the_frozen_length() {
        let pool = pool();
        let buf = pool.copy_from(b"short").unwrap(); // class 64
        let addr = buf.as_ptr().addr();
        let tail = recover_at(&pool, addr + 10, 54).expect("inside the slot's capacity");
        assert_eq!(tail.len(), 54);
        assert_eq!(buf.ref_count(), 2);
    }

    #[test]
    fn range_straddling_the_slot_end_is_refused() {
        let pool = pool();
        let a = pool.copy_from(&[1; 64]).unwrap();
        let b = pool.copy_from(&[2; 64]).unwrap();
        let lo = a.as_ptr().addr().min(b.as_ptr().addr());
        assert!(recover_at(&pool, lo + 60, 4).is_some());
        assert!(
            recover_at(&pool, lo + 60, 5).is_none(),
            "runs into the next (live) slot"
        );
        assert!(recover_at(&pool, lo, 65).is_none());
        assert_eq!((a.ref_count(), b.ref_count()), (1, 1));
    }

    #[test]
    fn unused_region_and_outside_ranges_are_refused() {
        let pool = pool();
        let buf = pool.copy_from(&[5; 64 << 10]).unwrap(); // fills region 0
        let base = base(&pool);
        assert_eq!(buf.as_ptr().addr(), base);
        assert!(
            recover_at(&pool, base + REGION, 1).is_none(),
            "region 1 is not mapped yet"
        );
        assert!(
            recover_at(&pool, base + 3 * REGION + 5, 1).is_none(),
            "last region, unused"
        );
        assert!(
            recover_at(&pool, base + 4 * REGION, 1).is_none(),
            "past the reservation"
        );
        assert!(
            recover_at(&pool, base - 1, 2).is_none(),
            "starts before the reservation"
        );
        assert!(
            recover_at(&pool, base + REGION - 1, 2).is_none(),
            "runs into region 1"
        );
        assert!(
            recover_at(&pool, base + REGION - 1, usize::MAX).is_none(),
            "huge length"
        );
        assert!(recover_at(&pool, usize::MAX, 1).is_none());
        assert!(recover_at(&pool, base + 5, 0).is_none(), "empty");
        assert_eq!(buf.ref_count(), 1);
    }
}
