//! [`SharedBuf`]: an immutable, reference-counted view of pool memory.

use std::fmt;
use std::ops::{Bound, Deref, RangeBounds};

use crate::BufMut;
use crate::raw::RawShared;

/// Immutable, cloneable, sliceable shared buffer (like `Bytes`). `Send + Sync`.
///
/// Three words: a pointer, the length and slot index, and the slot's region. [`Clone`] and
/// [`slice`](Self::slice) cost one atomic increment on the slot's count, drop one atomic
/// decrement; the slot returns to the pool when the count reaches zero. All handles of one
/// slot share that count, whatever sub-range each views.
pub struct SharedBuf {
    raw: RawShared,
}

impl SharedBuf {
    pub(crate) fn from_raw(raw: RawShared) -> Self {
        SharedBuf { raw }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the buffer views no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A handle for `range` of this buffer, sharing the slot (one atomic increment).
    ///
    /// # Panics
    /// If the range is decreasing or ends past `len()`, as slice indexing does.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> SharedBuf {
        let len = self.len();
        let start = match range.start_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&n) => n.checked_add(1).expect("slice start overflows"),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&n) => n.checked_add(1).expect("slice end overflows"),
            Bound::Excluded(&n) => n,
            Bound::Unbounded => len,
        };
        assert!(start <= end, "slice start {start} is greater than end {end}");
        assert!(end <= len, "slice end {end} out of range for length {len}");
        SharedBuf {
            raw: self.raw.slice(start, end - start),
        }
    }

    /// Sub-buffer for `sub`, which must lie inside `self` (checked; None otherwise). No lookup.
    pub fn slice_ref(&self, sub: &[u8]) -> Option<SharedBuf> {
        let start = sub.as_ptr().addr().checked_sub(self.as_ptr().addr())?;
        let fits = start <= self.len() && sub.len() <= self.len() - start;
        fits.then(|| self.slice(start..start + sub.len()))
    }

    /// The whole pool buffer back for writing, empty, when this is its only handle (no clone,
    /// slice or recovered handle is alive): the buffer is reused without going through the
    /// pool's free list. Otherwise `self`, unchanged.
    ///
    /// ```
    /// # use ferry_buf::{Pool, PoolConfig};
    /// let pool = Pool::new(PoolConfig { region_size: 64 << 10, max_bytes: 1 << 20, ..Default::default() })?;
    /// let mut buf = pool.alloc(100)?;
    /// buf.extend_from_slice(b"hello");
    /// let shared = buf.freeze();
    /// let other = shared.slice(1..3);
    /// let shared = shared.try_into_mut().unwrap_err(); // `other` still reads it
    /// drop(other);
    /// let again = shared.try_into_mut().unwrap();
    /// assert!(again.is_empty());
    /// assert_eq!(pool.stats().buffers_outstanding(), 1);
    /// # Ok::<(), ferry_buf::PoolError>(())
    /// ```
    pub fn try_into_mut(self) -> Result<BufMut, SharedBuf> {
        match self.raw.try_unique() {
            Ok(raw) => Ok(BufMut::from_raw(raw)),
            Err(raw) => Err(SharedBuf { raw }),
        }
    }

    /// Current refcount of the underlying slot (for tests and stats). Racy under concurrency.
    pub fn ref_count(&self) -> u32 {
        self.raw.ref_count()
    }

    /// Converts into [`bytes::Bytes`] without copying: the `Bytes` owns this handle and drops
    /// it (releasing the slot) when its last clone goes.
    pub fn into_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from_owner(self)
    }
}

impl Clone for SharedBuf {
    fn clone(&self) -> Self {
        SharedBuf {
            raw: self.raw.clone(),
        }
    }
}

impl Deref for SharedBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.raw.as_slice()
    }
}

impl AsRef<[u8]> for SharedBuf {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for SharedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBuf")
            .field("addr", &self.as_ptr())
            .field("len", &self.len())
            .field("ref_count", &self.ref_count())
            .finish()
    }
}
