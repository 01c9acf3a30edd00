//! Pool configuration and its validation.

use crate::error::PoolError;

/// Smallest size class, in bytes.
pub const MIN_CLASS: usize = 64;

/// Smallest allowed [`PoolConfig::region_size`].
pub const MIN_REGION_SIZE: usize = 64 << 10;

/// Largest allowed [`PoolConfig::region_size`]. Offsets and lengths inside a region then fit
/// in a `u32`, which keeps [`SharedBuf`](crate::SharedBuf) at three words.
pub const MAX_REGION_SIZE: usize = 1 << 30;

/// Largest allowed [`PoolConfig::max_bytes`]: every 64-byte granule of the reservation must
/// have a distinct 32-bit slot id, with `u32::MAX` left free as the free-list terminator.
pub const MAX_POOL_BYTES: usize = MIN_CLASS * (u32::MAX as usize);

/// How a region's pages are backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// hugetlbfs 2 MiB pages (`MAP_HUGETLB | MAP_HUGE_2MB`).
    Huge2M,
    /// Transparent huge pages requested with `madvise(MADV_HUGEPAGE)`. The kernel may still
    /// back parts of the region with 4 KiB pages.
    Transparent,
    /// Ordinary 4 KiB pages.
    Base,
    /// Heap memory from `std::alloc` (Miri builds and non-Linux targets only).
    Heap,
}

/// Pool configuration.
///
/// ```
/// let config = ferry_buf::PoolConfig { region_size: 2 << 20, max_bytes: 64 << 20, ..Default::default() };
/// let pool = ferry_buf::Pool::new(config).unwrap();
/// assert_eq!(pool.max_class(), 2 << 20);
/// ```
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Size of one region: a power of two in
    /// [`MIN_REGION_SIZE`]`..=`[`MAX_REGION_SIZE`]. The largest size class equals it.
    /// Default 8 MiB.
    pub region_size: usize,
    /// Upper bound on the bytes of all regions together: a multiple of `region_size`, at most
    /// [`MAX_POOL_BYTES`]. This much virtual address space is reserved up front (not
    /// committed). Default 1 GiB.
    pub max_bytes: usize,
    /// Back regions with 2 MiB pages when possible: hugetlbfs pages if the system has enough
    /// free ones, else transparent huge pages. Needs `region_size >= 2 MiB`, and applies to the
    /// regions the grower thread maps ahead (a region mapped on demand, by the allocating
    /// thread, is 4 KiB pages faulted on first touch, so that a pool that stays small stays
    /// cheap and no allocating thread zeroes a huge page). `false` gives ordinary 4 KiB pages.
    /// Default true.
    pub huge_pages: bool,
    /// `mlock` regions (best effort; a failure is reported once on stderr, in
    /// [`RegionInfo::locked`](crate::RegionInfo::locked) and in
    /// [`PoolStats::mlock_failures`](crate::PoolStats::mlock_failures)). Default true.
    pub mlock: bool,
    /// Back the pool with a memfd mapped `MAP_SHARED`, so that another process can map the
    /// same memory ([`Pool::memfd`](crate::Pool::memfd)) and read values in place at their
    /// offsets ([`Pool::offset_of`](crate::Pool::offset_of)): the shared-memory transport's
    /// send buffer. With `huge_pages`, a hugetlb memfd is used if the system can reserve all
    /// of `max_bytes` in 2 MiB pages, else an ordinary one. Linux only (not under Miri).
    /// Default false.
    pub shared: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            region_size: 8 << 20,
            max_bytes: 1 << 30,
            huge_pages: true,
            mlock: true,
            shared: false,
        }
    }
}

/// The most regions one pool may have (its lock-free region table is allocated up front).
pub const MAX_REGIONS: usize = 1 << 16;

impl PoolConfig {
    /// Checks the invariants the pool relies on.
    pub(crate) fn validate(&self) -> Result<(), PoolError> {
        if !self.region_size.is_power_of_two() {
            return Err(PoolError::Config("region_size must be a power of two"));
        }
        if !(MIN_REGION_SIZE..=MAX_REGION_SIZE).contains(&self.region_size) {
            return Err(PoolError::Config("region_size must be between 64 KiB and 1 GiB"));
        }
        if self.max_bytes < self.region_size || self.max_bytes % self.region_size != 0 {
            return Err(PoolError::Config(
                "max_bytes must be a non-zero multiple of region_size",
            ));
        }
        if self.max_bytes / self.region_size > MAX_REGIONS {
            // The region table is allocated up front, one cell per possible region.
            return Err(PoolError::Config(
                "max_bytes / region_size must not exceed MAX_REGIONS (65536)",
            ));
        }
        if self.max_bytes > MAX_POOL_BYTES {
            return Err(PoolError::Config(
                "max_bytes must not exceed MAX_POOL_BYTES (256 GiB)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(region_size: usize, max_bytes: usize) -> PoolConfig {
        PoolConfig {
            region_size,
            max_bytes,
            ..PoolConfig::default()
        }
    }

    #[test]
    fn default_is_valid() {
        assert_eq!(PoolConfig::default().validate(), Ok(()));
    }

    #[test]
    fn rejects_bad_sizes() {
        for (region, max) in [
            (96 << 10, 1 << 20),           // not a power of two
            (32 << 10, 1 << 20),           // region too small
            (2 << 30, 4 << 30),            // region too large
            (64 << 10, 0),                 // no room for a region
            (64 << 10, (1 << 20) + 4096),  // not a multiple
            (1 << 30, MAX_POOL_BYTES + 1), // too much address space
        ] {
            assert!(
                matches!(config(region, max).validate(), Err(PoolError::Config(_))),
                "region {region} max {max}"
            );
        }
    }
}
