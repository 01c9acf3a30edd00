//! Pool statistics: snapshots of the pool's atomic counters.

/// Statistics of one size class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassStats {
    /// Slot size in bytes.
    pub class: usize,
    /// Slots handed out and not yet returned (a slot counts once, however many handles
    /// share it).
    pub buffers_outstanding: usize,
    /// `buffers_outstanding * class`: capacity bytes handed out.
    pub bytes_outstanding: usize,
    /// Regions serving this class.
    pub regions: usize,
}

/// Pool statistics. Each counter is read atomically, the snapshot as a whole is not: under
/// concurrent use the numbers may come from slightly different moments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// One entry per size class, smallest first.
    pub classes: Vec<ClassStats>,
    /// Regions serving a size class so far (regions are never unmapped before the pool is
    /// dropped).
    pub regions: usize,
    /// Of `regions`, those the grower thread had mapped and prefaulted ahead of need (the
    /// others were mapped by the allocating thread, their pages faulted as buffers touch them).
    pub regions_taken_ahead: usize,
    /// Regions mapped and prefaulted ahead, waiting for the pool to grow (0 or 1).
    pub regions_ready_ahead: usize,
    /// Bytes of the regions serving a size class (`regions * region_size`; a region ready
    /// ahead maps `region_size` more).
    pub mapped_bytes: usize,
    /// Regions whose `mlock` failed (the first failure is also printed on stderr).
    pub mlock_failures: usize,
}

impl PoolStats {
    /// Buffers outstanding over all classes.
    pub fn buffers_outstanding(&self) -> usize {
        self.classes.iter().map(|c| c.buffers_outstanding).sum()
    }

    /// Bytes outstanding over all classes.
    pub fn bytes_outstanding(&self) -> usize {
        self.classes.iter().map(|c| c.bytes_outstanding).sum()
    }
}
