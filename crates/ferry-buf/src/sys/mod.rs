//! Operating-system memory: one reserved virtual range, and regions mapped inside it.
//!
//! [`Reservation`] owns the range for the pool's life; [`Reservation::map_next`] hands out each
//! region at most once, mapped read-write and reading as zeroes (prefaulted if asked, else
//! each page faulted on first touch), as a [`Mapped`]. Two
//! backends with the same interface:
//! - `mmap.rs` (Linux): `mmap`, `madvise`, `mlock`;
//! - `heap.rs` (Miri and other targets): one `std::alloc` allocation, so the pool and
//!   refcount code runs under Miri.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::PageKind;

#[cfg(all(target_os = "linux", not(miri)))]
mod mmap;
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) use mmap::{Reservation, lower_priority};

#[cfg(any(miri, not(target_os = "linux")))]
mod heap;
#[cfg(any(miri, not(target_os = "linux")))]
pub(crate) use heap::Reservation;
#[cfg(all(not(miri), not(target_os = "linux")))]
pub(crate) use heap::lower_priority;

/// How to map a region (the heap fallback has no pages or locks to choose).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(any(miri, not(target_os = "linux")), allow(dead_code))]
pub(crate) struct MapOptions {
    /// Try 2 MiB pages (hugetlbfs, then THP).
    pub(crate) huge_pages: bool,
    /// Touch every page now; otherwise each page is faulted (and zeroed) on first touch.
    pub(crate) prefault: bool,
    /// `mlock` the region.
    pub(crate) mlock: bool,
}

/// A region just mapped: `len` bytes at `ptr`, read-write, initialized, inside the
/// reservation that produced it. Only the backends construct one.
#[derive(Debug)]
pub(crate) struct Mapped {
    index: usize,
    ptr: NonNull<u8>,
    len: usize,
    pages: PageKind,
    locked: bool,
    mlock_error: Option<String>,
}

// SAFETY: a `Mapped` describes a region its reservation handed out once, that nothing reads
// or writes yet; moving it to another thread (from the grower to the pool's allocating thread)
// moves that sole right to use the region. It is never shared (`Sync` is not implemented).
unsafe impl Send for Mapped {}

impl Mapped {
    /// Region index within the reservation.
    pub(crate) fn index(&self) -> usize {
        self.index
    }
    /// Start of the region; valid for reads and writes of `len()` bytes, and initialized,
    /// for as long as the reservation lives.
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
    /// Length in bytes (the region size).
    pub(crate) fn len(&self) -> usize {
        self.len
    }
    /// What backs the pages.
    pub(crate) fn pages(&self) -> PageKind {
        self.pages
    }
    /// Whether `mlock` succeeded.
    pub(crate) fn locked(&self) -> bool {
        self.locked
    }
    /// Why `mlock` failed, if it was asked for and did.
    pub(crate) fn mlock_error(&self) -> Option<&str> {
        self.mlock_error.as_deref()
    }
}

/// Hands out region indices `0..count`, each once.
#[derive(Debug)]
struct Cursor {
    next: AtomicUsize,
    count: usize,
}

impl Cursor {
    fn new(count: usize) -> Self {
        Cursor {
            next: AtomicUsize::new(0),
            count,
        }
    }

    /// The next unused index, or `None` when all are used. An index whose mapping then fails
    /// stays used: the pool is out of reliable address space anyway.
    fn claim(&self) -> Option<usize> {
        self.next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |i| {
                (i < self.count).then_some(i + 1)
            })
            .ok()
    }
}
