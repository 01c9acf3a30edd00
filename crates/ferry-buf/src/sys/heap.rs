//! Portable backend: the reservation is one zero-initialized-on-demand heap allocation.
//!
//! Used under Miri (which cannot run `mmap`) and on targets other than Linux. Pages are
//! ordinary heap pages ([`PageKind::Heap`]) and are never locked.

use std::alloc::{Layout, alloc, dealloc};
use std::ptr::NonNull;

use super::{Cursor, MapOptions, Mapped};
use crate::{PageKind, PoolError};

/// `len` bytes aligned to `region_size`, from `std::alloc`.
#[derive(Debug)]
pub(crate) struct Reservation {
    base: NonNull<u8>,
    layout: Layout,
    region_size: usize,
    cursor: Cursor,
}

// SAFETY: `base` is the address of an allocation this value owns; the reservation itself
// never reads or writes through it except in `map_next` on a freshly claimed region, which no
// other thread can reach yet. Who accesses mapped regions is governed by the pool.
unsafe impl Send for Reservation {}
// SAFETY: as for `Send`; `&self` methods only touch the atomic cursor and unclaimed regions.
unsafe impl Sync for Reservation {}

impl Reservation {
    /// Reserves `len` bytes aligned to `region_size` (both validated by `PoolConfig`).
    pub(crate) fn new(len: usize, region_size: usize, shared: bool, _huge: bool) -> Result<Self, PoolError> {
        if shared {
            return Err(PoolError::Config(
                "shared pools need Linux memfds (not available here)",
            ));
        }
        let layout = Layout::from_size_align(len, region_size)
            .map_err(|e| PoolError::Map(format!("reservation layout: {e}")))?;
        // SAFETY: `layout` has a non-zero size (validated: len >= region_size > 0).
        let raw = unsafe { alloc(layout) };
        let base = NonNull::new(raw)
            .ok_or_else(|| PoolError::Map(format!("heap reservation of {len} bytes failed")))?;
        Ok(Reservation {
            base,
            layout,
            region_size,
            cursor: Cursor::new(len / region_size),
        })
    }

    /// Never a memfd: shared pools are refused above.
    pub(crate) fn memfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }

    /// Address of the first byte.
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Maps the next unused region, or returns `None` if every region is in use.
    pub(crate) fn map_next(&self, _options: MapOptions) -> Result<Option<Mapped>, PoolError> {
        let Some(index) = self.cursor.claim() else {
            return Ok(None);
        };
        let offset = index * self.region_size;
        // SAFETY: `index < len / region_size`, so `offset + region_size <= len`: the range is
        // inside the allocation. The cursor hands `index` out once, so no one else touches
        // these bytes yet; zeroing makes them initialized, as pool memory must always be.
        let ptr = unsafe {
            let ptr = self.base.add(offset);
            ptr.write_bytes(0, self.region_size);
            ptr
        };
        Ok(Some(Mapped {
            index,
            ptr,
            len: self.region_size,
            pages: PageKind::Heap,
            locked: false,
            mlock_error: None,
        }))
    }
}

impl Reservation {
    /// Nothing to fault in: heap regions are written whole (zeroed) when handed out.
    pub(crate) fn prefault(&self, _index: usize) {}
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: `base` came from `alloc(self.layout)` and is freed only here.
        unsafe { dealloc(self.base.as_ptr(), self.layout) }
    }
}

/// Scheduling priority is not lowered here (the grower thread is not used under Miri).
#[cfg(not(miri))]
pub(crate) fn lower_priority() {}
