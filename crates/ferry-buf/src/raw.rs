//! The pointer core: regions and the raw buffer handles built on them.
//!
//! Invariants everything here relies on (and establishes):
//!
//! 1. A [`Region`] is only created by [`Region::add`], from a region mapped from its pool's own
//!    reservation (on demand or ahead), and stored in that pool's region table, where it stays, unmoved, until
//!    the pool (`PoolInner`) is dropped. `region.pool` points to that pool.
//! 2. Every slot whose count is not `FREE` owns one strong count of its pool's `Arc`, taken in
//!    [`RawMut::claim`] and given back in `free_slot` when the slot returns to the free list.
//!    So while a handle exists, its region, the region's memory and the pool are alive.
//! 3. A [`RawMut`] is the only handle to a slot in state `WRITING`; a [`RawShared`] holds one
//!    count of a slot in the shared state, and nobody writes a shared slot.
//! 4. A handle's `ptr .. ptr + len` lies inside its slot's `class` bytes, which lie inside the
//!    region's mapped, initialized memory.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::class::{MIN_SHIFT, SlotId};
use crate::pool::PoolInner;
use crate::slot::SlotMeta;
use crate::sys::Mapped;
use crate::{PageKind, RegionInfo};

/// Side metadata of one mapped region, serving one size class.
#[derive(Debug)]
pub(crate) struct Region {
    index: usize,
    data: NonNull<u8>,
    len: usize,
    class_index: usize,
    class_shift: u32,
    slots: Box<[SlotMeta]>,
    pool: *const PoolInner,
    pages: PageKind,
    locked: bool,
    mlock_error: Option<String>,
}

// SAFETY: `Region` holds addresses plus atomics. Its memory (`data`) is accessed only through
// handles, whose exclusivity is enforced by the slot state machine (invariant 3); `pool`
// points to a `Send + Sync` value.
unsafe impl Send for Region {}
// SAFETY: as for `Send`; `&Region` exposes only atomics and plain fields.
unsafe impl Sync for Region {}

impl Region {
    /// Makes `mapped`, a region of `pool`'s own reservation, serve class `class_index`:
    /// stores it in the pool's table and returns it.
    pub(crate) fn add(pool: &Arc<PoolInner>, class_index: usize, mapped: Mapped) -> &Region {
        let class_shift = MIN_SHIFT + class_index as u32;
        let slots = (0..mapped.len() >> class_shift)
            .map(|_| SlotMeta::new())
            .collect();
        let region = Region {
            index: mapped.index(),
            data: mapped.ptr(),
            len: mapped.len(),
            class_index,
            class_shift,
            slots,
            // `Arc::as_ptr` keeps the provenance `Arc::decrement_strong_count` needs.
            pool: Arc::as_ptr(pool),
            pages: mapped.pages(),
            locked: mapped.locked(),
            mlock_error: mapped.mlock_error().map(str::to_owned),
        };
        let cell = pool.region_cell(mapped.index());
        if cell.set(region).is_err() {
            unreachable!("the reservation hands out region {} once", mapped.index());
        }
        cell.get()
            .unwrap_or_else(|| unreachable!("region {} was just set", mapped.index()))
    }

    /// Index of the size class this region serves.
    pub(crate) fn class_index(&self) -> usize {
        self.class_index
    }

    /// Slot size in bytes.
    #[inline]
    pub(crate) fn class(&self) -> usize {
        1 << self.class_shift
    }

    /// log2 of the slot size.
    pub(crate) fn class_shift(&self) -> u32 {
        self.class_shift
    }

    /// Number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Metadata of slot `slot` (panics if out of range).
    pub(crate) fn slot(&self, slot: usize) -> &SlotMeta {
        &self.slots[slot]
    }

    /// Pool-wide id of slot `slot`.
    pub(crate) fn slot_id(&self, slot: usize) -> SlotId {
        debug_assert!(slot < self.slots.len());
        SlotId::from_offset(self.index * self.len + (slot << self.class_shift))
    }

    /// Why `mlock` failed for this region, if it did.
    pub(crate) fn mlock_error(&self) -> Option<&str> {
        self.mlock_error.as_deref()
    }

    /// The region as a registration hook sees it.
    pub(crate) fn info(&self) -> RegionInfo {
        RegionInfo {
            index: self.index,
            addr: self.data.as_ptr().cast_const(),
            len: self.len,
            class: self.class(),
            pages: self.pages,
            locked: self.locked,
        }
    }

    /// Pointer `offset` bytes into the region.
    fn ptr_at(&self, offset: usize) -> NonNull<u8> {
        assert!(
            offset < self.len,
            "offset {offset} outside region of {} bytes",
            self.len
        );
        // SAFETY: `offset < len` (checked), and `data .. data + len` is one mapping
        // (invariant 1).
        unsafe { self.data.add(offset) }
    }
}

/// Gives a slot whose count just became `FREE` back to its pool, then drops the slot's
/// strong count on the pool (invariant 2).
fn free_slot(region: NonNull<Region>, slot: u32) {
    let pool = {
        // SAFETY: the caller owned the slot until now, so its pool, and thus the region, is
        // alive (invariants 1, 2).
        let region = unsafe { region.as_ref() };
        // SAFETY: `region.pool` is the pool holding the region (invariant 1), alive as above.
        unsafe { &*region.pool }.recycle(region, slot as usize);
        region.pool
    };
    // SAFETY: this is the strong count `RawMut::claim` leaked for the slot, given back once:
    // the slot is `FREE` now and only `claim` takes it again, with a new count. The region and
    // pool references above are dead, so the pool may be dropped here.
    unsafe { Arc::decrement_strong_count(pool) }
}

/// Unique handle to a slot in state `WRITING`; `len` bytes of it are filled.
#[derive(Debug)]
pub(crate) struct RawMut {
    ptr: NonNull<u8>,
    region: NonNull<Region>,
    len: u32,
    slot: u32,
}

// SAFETY: `RawMut` uniquely owns its slot (invariant 3) and the pool is `Send + Sync`; moving
// the handle moves that ownership.
unsafe impl Send for RawMut {}
// SAFETY: `&RawMut` only reads the slot; writing needs `&mut RawMut`.
unsafe impl Sync for RawMut {}

impl RawMut {
    /// Takes free slot `id` of `pool`: `FREE -> WRITING`, plus the slot's strong count on the
    /// pool. `None` if `id` names no slot or the slot is not free.
    pub(crate) fn claim(pool: &Arc<PoolInner>, id: SlotId) -> Option<RawMut> {
        let (region, slot) = pool.locate(id)?;
        if !region.slot(slot).claim() {
            return None;
        }
        std::mem::forget(Arc::clone(pool)); // invariant 2
        Some(RawMut {
            ptr: region.ptr_at(slot << region.class_shift),
            region: NonNull::from(region),
            len: 0,
            slot: slot as u32,
        })
    }

    #[inline]
    fn region(&self) -> &Region {
        // SAFETY: our slot keeps the pool, and so the region, alive (invariants 1, 2).
        unsafe { self.region.as_ref() }
    }

    /// Slot size in bytes.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.region().class()
    }

    /// Filled bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Sets the filled length; panics if `len > capacity`.
    pub(crate) fn set_len(&mut self, len: usize) {
        let capacity = self.capacity();
        assert!(len <= capacity, "set_len({len}) exceeds capacity {capacity}");
        self.len = len as u32; // `capacity <= MAX_REGION_SIZE < 2^32`
    }

    /// The filled bytes.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `len <= capacity` (set_len), the slot is initialized memory (invariant 4)
        // and only we write it (invariant 3); `&self` excludes our own writes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    /// The filled bytes, writable.
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len();
        &mut self.capacity_mut()[..len]
    }

    /// The whole slot, writable.
    #[inline]
    pub(crate) fn capacity_mut(&mut self) -> &mut [u8] {
        let capacity = self.capacity();
        // SAFETY: the slot's `capacity` bytes are initialized memory (invariant 4), nobody
        // else reads or writes them (invariant 3), and `&mut self` makes this borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), capacity) }
    }

    /// `WRITING -> 1`: the filled bytes become a shared handle.
    pub(crate) fn freeze(self) -> RawShared {
        let this = ManuallyDrop::new(self);
        this.region().slot(this.slot as usize).freeze();
        RawShared {
            ptr: this.ptr,
            region: this.region,
            len: this.len,
            slot: this.slot,
        }
    }
}

impl Drop for RawMut {
    fn drop(&mut self) {
        self.region().slot(self.slot as usize).release_unique();
        free_slot(self.region, self.slot);
    }
}

/// One shared count of a slot; reads `len` bytes at `ptr`.
#[derive(Debug)]
pub(crate) struct RawShared {
    ptr: NonNull<u8>,
    region: NonNull<Region>,
    len: u32,
    slot: u32,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(size_of::<RawShared>() == 3 * size_of::<usize>());

// SAFETY: shared slots are immutable (invariant 3), counts are atomic, and the pool is
// `Send + Sync`, so handles may move to and be used from any thread.
unsafe impl Send for RawShared {}
// SAFETY: as for `Send`.
unsafe impl Sync for RawShared {}

impl RawShared {
    /// The region, offset within it and slot of `addr .. addr + len`, if that range is
    /// non-empty and lies inside one slot of a mapped region. O(1): a subtraction and a table load.
    fn locate(pool: &PoolInner, addr: usize, len: usize) -> Option<(&Region, usize, usize)> {
        if len == 0 {
            return None;
        }
        let offset = addr.checked_sub(pool.reservation().base().addr().get())?;
        let region = pool.region(offset >> pool.region_shift())?; // None past the table, or unused
        let within = offset - region.index * region.len;
        let slot = within >> region.class_shift;
        let slot_end = (slot + 1) << region.class_shift;
        if len > slot_end - within {
            return None; // runs past the slot (and maybe the region)
        }
        Some((region, within, slot))
    }

    /// Whether `addr .. addr + len` is non-empty and lies inside one shared (frozen, live) slot
    /// of `pool`: what [`RawShared::recover`] accepts, without taking a reference.
    pub(crate) fn is_shared(pool: &PoolInner, addr: usize, len: usize) -> bool {
        Self::locate(pool, addr, len).is_some_and(|(region, _, slot)| region.slot(slot).is_shared())
    }

    /// A handle for `addr .. addr + len` if that range is non-empty and lies inside one shared
    /// (frozen, live) slot of `pool`. O(1): a subtraction, a table load and a CAS loop.
    pub(crate) fn recover(pool: &PoolInner, addr: usize, len: usize) -> Option<RawShared> {
        let (region, within, slot) = Self::locate(pool, addr, len)?;
        if !region.slot(slot).try_retain() {
            return None; // free, or still being written
        }
        Some(RawShared {
            // Derived from the region's pointer, not `addr`: full provenance over the slot.
            ptr: region.ptr_at(within),
            region: NonNull::from(region),
            len: len as u32, // `len <= class <= MAX_REGION_SIZE < 2^32`
            slot: slot as u32,
        })
    }

    #[inline]
    fn region(&self) -> &Region {
        // SAFETY: our count keeps the pool, and so the region, alive (invariants 1, 2).
        unsafe { self.region.as_ref() }
    }

    /// Length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// The bytes.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr .. ptr + len` lies in our slot (invariant 4), which nobody writes while
        // shared (invariant 3) and which our count keeps allocated.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    /// Current count of the slot.
    pub(crate) fn ref_count(&self) -> u32 {
        self.region().slot(self.slot as usize).ref_count()
    }

    /// A new handle for `offset .. offset + len` of this one. Panics if out of range.
    pub(crate) fn slice(&self, offset: usize, len: usize) -> RawShared {
        assert!(
            offset <= self.len() && len <= self.len() - offset,
            "slice {offset}+{len} out of range for length {}",
            self.len()
        );
        self.region().slot(self.slot as usize).retain();
        RawShared {
            // SAFETY: `offset <= self.len`, so the result stays inside (or one past the end
            // of) our slot, within the region's mapping.
            ptr: unsafe { self.ptr.add(offset) },
            region: self.region,
            len: len as u32,
            slot: self.slot,
        }
    }
}

impl RawShared {
    /// The whole slot back as its unique writer, empty (`1 -> WRITING`), if this is the slot's
    /// only handle; else `self`, unchanged.
    pub(crate) fn try_unique(self) -> Result<RawMut, RawShared> {
        if !self.region().slot(self.slot as usize).try_unfreeze() {
            return Err(self);
        }
        // The slot's strong count on the pool (invariant 2) passes to the `RawMut`.
        let this = ManuallyDrop::new(self);
        let region = this.region();
        Ok(RawMut {
            ptr: region.ptr_at((this.slot as usize) << region.class_shift),
            region: this.region,
            len: 0,
            slot: this.slot,
        })
    }
}

impl Clone for RawShared {
    fn clone(&self) -> Self {
        self.slice(0, self.len())
    }
}

impl Drop for RawShared {
    fn drop(&mut self) {
        if self.region().slot(self.slot as usize).release() {
            free_slot(self.region, self.slot);
        }
    }
}
