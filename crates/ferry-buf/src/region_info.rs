//! What a transport's registration hook learns about a region.

use crate::PageKind;

/// A region, as a transport's registration hook ([`Pool::on_region`](crate::Pool::on_region))
/// sees it: the range to register with the kernel or NIC (io_uring fixed buffers, an AF_XDP
/// UMEM, ...).
///
/// The range stays mapped, at the same address, until the last handle to the pool is dropped.
/// `Send + Sync`: it is a description; `addr` is never dereferenced by this crate.
#[derive(Debug, Clone, Copy)]
pub struct RegionInfo {
    /// Position in the pool's region table; regions are numbered from 0 as they are added.
    pub index: usize,
    /// First byte of the region, aligned to the region size.
    pub addr: *const u8,
    /// Length in bytes (the pool's `region_size`).
    pub len: usize,
    /// The size class the region serves: every slot in it is this many bytes.
    pub class: usize,
    /// What backs the pages.
    pub pages: PageKind,
    /// Whether the region is `mlock`ed. `false` if locking was not asked for, failed, or is
    /// not available (heap backend).
    pub locked: bool,
}

// SAFETY: `RegionInfo` only describes a range; `addr` is never dereferenced by this crate, and
// a user who dereferences it needs `unsafe` and the pool's liveness rules anyway. Hooks run on
// whichever thread grows the pool, and transports keep the info to register later.
#[allow(unsafe_code)]
unsafe impl Send for RegionInfo {}
// SAFETY: as for `Send`; `&RegionInfo` gives only copies of plain fields.
#[allow(unsafe_code)]
unsafe impl Sync for RegionInfo {}
