//! [`CountingAllocator`]: the stock builder's `DefaultAllocator` growth, counted.
//!
//! The `flatbuffers` crate's `DefaultAllocator` starts empty and, each time the builder is
//! short of room, doubles its `Vec` (`max(1, 2 * len)`), moves the old contents to the new
//! upper half and zeroes the lower half. This allocator does the same with a new `Vec` per
//! growth (one allocation of the new length, the old bytes copied once), and counts what that
//! takes: allocations, bytes allocated, bytes copied. For the paper's 1 / 16 / 64 KiB Records
//! that is 12 / 16 / 18 growths copying 2,047 / 32,767 / 131,071 bytes (`platform.md`).
//!
//! The counts are in a shared cell, so they can be read while the builder owns the allocator.
//! Only the counts are taken with it: the timings use the crate's own `DefaultAllocator`.
//!
//! The one unsafe item of the benchmark: `flatbuffers::Allocator` is an unsafe trait.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::convert::Infallible;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

use super::serialize::Counted;

/// A `flatbuffers::Allocator` that grows as `DefaultAllocator` does and counts.
#[derive(Debug, Default)]
pub(super) struct CountingAllocator {
    buf: Vec<u8>,
    counts: Rc<Cell<Counted>>,
}

impl CountingAllocator {
    /// An empty allocator and the cell its counts go to (`len` stays 0).
    pub(super) fn new() -> (CountingAllocator, Rc<Cell<Counted>>) {
        let alloc = CountingAllocator::default();
        let counts = Rc::clone(&alloc.counts);
        (alloc, counts)
    }
}

impl Deref for CountingAllocator {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf
    }
}

impl DerefMut for CountingAllocator {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

// SAFETY: the trait asks that `grow_downwards` grow the buffer with the old contents moved to
// its end, and that `len` be the buffer's size. The new buffer is `max(1, 2 * old)` zeroed
// bytes with the old ones copied to its last `old` bytes (the builder writes from the end and
// relies on the rest being zero), and `len` is the `Vec`'s length, which `deref` exposes.
unsafe impl ::flatbuffers::Allocator for CountingAllocator {
    type Error = Infallible;

    fn grow_downwards(&mut self) -> Result<(), Infallible> {
        let old = self.buf.len();
        let new_len = (old * 2).max(1);
        let mut grown = vec![0u8; new_len];
        grown[new_len - old..].copy_from_slice(&self.buf);
        self.buf = grown;
        let mut c = self.counts.get();
        c.allocations += 1;
        c.allocated_bytes += new_len;
        c.copied_bytes += old;
        self.counts.set(c);
        Ok(())
    }

    fn len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::{Offsets, Source, build_stock};
    use super::*;

    fn counts(size: usize) -> (Counted, Vec<u8>) {
        let (alloc, counts) = CountingAllocator::new();
        let mut fbb = ::flatbuffers::FlatBufferBuilder::new_in(alloc);
        build_stock(&mut fbb, &Source::new(size), &mut Offsets::new());
        (counts.get(), fbb.finished_data().to_vec())
    }

    #[test]
    fn it_reproduces_the_default_allocators_growth() {
        // platform.md: 2,047 / 32,767 / 131,071 bytes copied over 12 / 16 / 18 growths.
        for (size, allocations, copied) in [(1024, 12, 2047), (16 << 10, 16, 32_767), (64 << 10, 18, 131_071)]
        {
            let (c, _) = counts(size);
            assert_eq!(c.allocations, allocations, "{size}");
            assert_eq!(c.copied_bytes, copied, "{size}");
            // 1 + 2 + ... + the final buffer.
            assert_eq!(c.allocated_bytes, 2 * (copied + 1) - 1, "{size}");
        }
    }

    #[test]
    fn it_builds_what_the_default_allocator_builds() {
        let source = Source::new(16 << 10);
        let mut fbb = ::flatbuffers::FlatBufferBuilder::new();
        build_stock(&mut fbb, &source, &mut Offsets::new());
        assert_eq!(counts(16 << 10).1, fbb.finished_data());
    }

    #[test]
    fn a_reused_builder_allocates_nothing_more() {
        let (alloc, counts) = CountingAllocator::new();
        let mut fbb = ::flatbuffers::FlatBufferBuilder::new_in(alloc);
        let source = Source::new(64 << 10);
        let mut offsets = Offsets::new();
        build_stock(&mut fbb, &source, &mut offsets);
        let first = counts.get();
        fbb.reset();
        build_stock(&mut fbb, &source, &mut offsets);
        assert_eq!(counts.get(), first);
    }
}
