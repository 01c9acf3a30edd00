//! Where the builder's blocks come from: [`Allocator`], and [`PoolAllocator`], which takes them
//! from a Ferry pool (registered memory, so the finished slices can be posted to the kernel or
//! the peer as they are).

use ferry_buf::{BufMut, Pool};

/// A source of blocks for [`FlatBufferBuilder`](crate::FlatBufferBuilder).
///
/// The builder never asks a block to grow and never copies out of one: when the current block
/// is too small for the next item it asks for another and splices it logically in front of
/// the bytes already written (the paper's Block). An implementation panics when it cannot
/// give one, as the stock builder does when its `Vec` cannot grow.
pub trait Allocator {
    /// A fresh block of at least `min` bytes (`min` is never above
    /// [`max_block`](Self::max_block)); `written` is how many bytes the message already has,
    /// for a growth rule.
    fn block(&mut self, written: usize, min: usize) -> BufMut;

    /// The largest block this allocator gives. Data longer than this is written across
    /// several blocks.
    fn max_block(&self) -> usize;
}

/// The builder's default block source: a [`Pool`].
///
/// Growth rule: the first block is `first_block` bytes (2 KiB unless set; a 1 KiB Record fits
/// in it); each later block is as large as the message written so far, so that the number of
/// blocks grows with the logarithm of the size, as the stock builder's doublings do, but no
/// byte is moved. Blocks are capped at the pool's largest size class; an item larger than the
/// next block gets a block of its own size.
#[derive(Debug, Clone)]
pub struct PoolAllocator {
    pool: Pool,
    first_block: usize,
    max_block: usize,
}

impl PoolAllocator {
    /// The default first block: 2 KiB.
    pub const FIRST_BLOCK: usize = 2048;

    /// Blocks from `pool`, the first [`FIRST_BLOCK`](Self::FIRST_BLOCK) bytes.
    pub fn new(pool: &Pool) -> PoolAllocator {
        PoolAllocator::with_first_block(pool, Self::FIRST_BLOCK)
    }

    /// Blocks from `pool`, the first `first_block` bytes (at least 64, the pool's smallest
    /// class; tests use tiny blocks to force many).
    pub fn with_first_block(pool: &Pool, first_block: usize) -> PoolAllocator {
        PoolAllocator {
            pool: pool.clone(),
            first_block: first_block.max(1),
            max_block: pool.max_class(),
        }
    }

    /// Caps the size asked of the pool at `max_block` bytes (at most its largest class; a
    /// block is the whole size class it gets), so that even a large message spans many
    /// blocks: for tests of the splicing.
    pub fn max_block_size(mut self, max_block: usize) -> PoolAllocator {
        self.max_block = max_block.clamp(1, self.pool.max_class());
        self
    }

    /// The pool blocks come from.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl Allocator for PoolAllocator {
    fn block(&mut self, written: usize, min: usize) -> BufMut {
        let want = self.first_block.max(written).min(self.max_block).max(min);
        match self.pool.alloc(want) {
            Ok(buf) => buf,
            Err(e) => panic!("FlatBuffers builder: no {want}-byte block in the pool: {e}"),
        }
    }

    fn max_block(&self) -> usize {
        self.max_block
    }
}
