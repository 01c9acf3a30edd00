//! [`BufMut`]: a unique, writable pool buffer.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::raw::RawMut;
use crate::{CapacityError, SharedBuf};

/// Unique, writable pool buffer (like `BytesMut`, but with a fixed capacity). `Send + Sync`.
///
/// Its capacity is its size class. Fill it with [`extend_from_slice`](Self::extend_from_slice),
/// or write into [`capacity_mut`](Self::capacity_mut) and then [`set_len`](Self::set_len);
/// [`freeze`](Self::freeze) it to share it. Dropping it returns the slot to the pool.
///
/// While a `BufMut` exists, [`Pool::recover`](crate::Pool::recover) refuses its memory, so no
/// shared handle can observe the bytes changing.
pub struct BufMut {
    raw: RawMut,
}

impl BufMut {
    pub(crate) fn from_raw(raw: RawMut) -> Self {
        BufMut { raw }
    }

    /// Bytes filled so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether no byte is filled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total bytes the buffer can hold (its size class).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// Appends `data`.
    ///
    /// # Panics
    /// If `data` does not fit in the remaining capacity (callers size with
    /// [`Pool::alloc`](crate::Pool::alloc)). Use [`try_extend_from_slice`](Self::try_extend_from_slice)
    /// to get an error instead.
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        if self.try_extend_from_slice(data).is_err() {
            panic!(
                "extend_from_slice: {} + {} bytes exceed capacity {}",
                self.len(),
                data.len(),
                self.capacity()
            );
        }
    }

    /// Appends `data`, or returns [`CapacityError`] (changing nothing) if it does not fit.
    pub fn try_extend_from_slice(&mut self, data: &[u8]) -> Result<(), CapacityError> {
        let start = self.len();
        let end = start
            .checked_add(data.len())
            .filter(|&end| end <= self.capacity());
        let end = end.ok_or(CapacityError)?;
        self.raw.capacity_mut()[start..end].copy_from_slice(data);
        self.raw.set_len(end);
        Ok(())
    }

    /// The whole capacity as a writable slice. Pool memory is always initialized (zeroed by mmap,
    /// or holding an earlier buffer's bytes), so this is safe; writers fill it, then `set_len`.
    #[inline]
    pub fn capacity_mut(&mut self) -> &mut [u8] {
        self.raw.capacity_mut()
    }

    /// Sets the length. Bytes past the old length hold whatever [`capacity_mut`](Self::capacity_mut)
    /// left there (initialized, but possibly an earlier buffer's data).
    ///
    /// # Panics
    /// If `len > capacity`.
    pub fn set_len(&mut self, len: usize) {
        self.raw.set_len(len);
    }

    /// Turns the filled bytes into an immutable, shareable buffer (reference count 1). No copy.
    pub fn freeze(self) -> SharedBuf {
        SharedBuf::from_raw(self.raw.freeze())
    }
}

impl Deref for BufMut {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.raw.as_slice()
    }
}

impl DerefMut for BufMut {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.raw.as_mut_slice()
    }
}

impl AsRef<[u8]> for BufMut {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for BufMut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufMut")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}
