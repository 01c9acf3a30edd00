//! Power-of-two size classes, and the slot ids the free lists link.

use crate::config::MIN_CLASS;

/// log2 of [`MIN_CLASS`].
pub(crate) const MIN_SHIFT: u32 = MIN_CLASS.trailing_zeros();

/// The size classes of one pool: `MIN_CLASS << 0` up to the region size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Classes {
    region_shift: u32,
}

impl Classes {
    /// Classes for regions of `region_size` bytes (a validated power of two).
    pub(crate) fn new(region_size: usize) -> Self {
        debug_assert!(region_size.is_power_of_two() && region_size >= MIN_CLASS);
        Classes {
            region_shift: region_size.trailing_zeros(),
        }
    }

    /// Number of classes.
    pub(crate) fn count(self) -> usize {
        (self.region_shift - MIN_SHIFT + 1) as usize
    }

    /// The largest class, equal to the region size.
    pub(crate) fn max(self) -> usize {
        1 << self.region_shift
    }

    /// Index of the smallest class holding `capacity` bytes, or `None` if none does.
    pub(crate) fn index_for(self, capacity: usize) -> Option<usize> {
        if capacity > self.max() {
            return None;
        }
        let size = capacity.max(MIN_CLASS).next_power_of_two();
        Some((size.trailing_zeros() - MIN_SHIFT) as usize)
    }

    /// Size in bytes of class `index`.
    pub(crate) fn size(self, index: usize) -> usize {
        MIN_CLASS << index
    }
}

/// Identifies one slot of the pool: its offset from the reservation base in units of
/// [`MIN_CLASS`]. Unique across regions, and fits 32 bits because `max_bytes` is limited to
/// [`MAX_POOL_BYTES`](crate::MAX_POOL_BYTES).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotId(pub(crate) u32);

impl SlotId {
    /// Marks the end of a free list; never a real slot.
    pub(crate) const NIL: SlotId = SlotId(u32::MAX);

    /// The slot starting `offset` bytes from the reservation base.
    pub(crate) fn from_offset(offset: usize) -> Self {
        debug_assert_eq!(offset % MIN_CLASS, 0);
        let id = u32::try_from(offset >> MIN_SHIFT).expect("offset checked against MAX_POOL_BYTES");
        debug_assert_ne!(id, u32::MAX);
        SlotId(id)
    }

    /// Byte offset of the slot from the reservation base.
    pub(crate) fn offset(self) -> usize {
        (self.0 as usize) << MIN_SHIFT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_boundaries() {
        let classes = Classes::new(64 << 10);
        assert_eq!(classes.count(), 11);
        assert_eq!(classes.max(), 64 << 10);
        assert_eq!(classes.index_for(0), Some(0));
        assert_eq!(classes.index_for(1), Some(0));
        assert_eq!(classes.index_for(64), Some(0));
        assert_eq!(classes.index_for(65), Some(1));
        assert_eq!(classes.index_for(4096), Some(6));
        assert_eq!(classes.index_for(64 << 10), Some(10));
        assert_eq!(classes.index_for((64 << 10) + 1), None);
        assert_eq!(classes.index_for(usize::MAX), None);
        for index in 0..classes.count() {
            assert_eq!(classes.index_for(classes.size(index)), Some(index));
        }
    }

    #[test]
    fn slot_id_round_trip() {
        let id = SlotId::from_offset(3 * 64);
        assert_eq!(id, SlotId(3));
        assert_eq!(id.offset(), 192);
    }
}
