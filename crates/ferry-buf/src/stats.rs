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
    /// Regions mapped so far (regions are never unmapped before the pool is dropped).
    pub regions: usize,
    /// Bytes of all mapped regions.
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
