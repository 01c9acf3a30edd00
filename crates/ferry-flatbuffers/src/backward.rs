//! The paper's BackwardBufferBuilder: a message written from its end towards its start across
//! a chain of blocks, none of which is ever moved or copied.
//!
//! Positions are *reverse offsets*, as in every FlatBuffers builder: the distance from the end
//! of the message to the first byte of an item (what `WIPOffset` holds). Block `i` holds the
//! bytes whose reverse offsets lie in `(lo, lo + len]`, written downward from the end of its
//! capacity; a newer block holds lower reverse offsets' complement, i.e. it comes *before* the
//! older blocks in the finished message. When an item does not fit in the room left below the
//! current block's head, that room is abandoned (the block is truncated there) and a new block
//! is spliced in front.
//!
//! What never moves is addressed by `(block, position)` directly (O(1)); an arbitrary reverse
//! offset is found by a binary search over the blocks (O(log n)).

use std::cmp::Ordering;

use ferry_buf::{BufMut, SharedBuf};

use crate::blocks::Allocator;

/// Where an item's first byte is: block index and byte position in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loc {
    pub(crate) block: usize,
    pub(crate) pos: usize,
}

struct Block {
    buf: BufMut,
    /// `buf.capacity()`, kept at hand.
    cap: usize,
    /// Bytes of the message written before this block was spliced in.
    lo: usize,
    /// The lowest written position; `[head, capacity)` is this block's part of the message.
    head: usize,
}

/// The chain of blocks and the allocator that gives them.
pub(crate) struct Backward<A> {
    alloc: A,
    blocks: Vec<Block>,
    /// Blocks of the last message kept for the next, the first to reuse last.
    spare: Vec<BufMut>,
    used: usize,
    allocations: usize,
    allocated_bytes: usize,
}

impl<A: Allocator> Backward<A> {
    pub(crate) fn new(alloc: A) -> Self {
        Backward {
            alloc,
            blocks: Vec::new(),
            spare: Vec::new(),
            used: 0,
            allocations: 0,
            allocated_bytes: 0,
        }
    }

    pub(crate) fn allocator(&self) -> &A {
        &self.alloc
    }

    /// The allocator, the blocks dropped (back to their pool).
    pub(crate) fn into_allocator(self) -> A {
        self.alloc
    }

    /// Bytes written so far (the reverse offset of the lowest byte).
    #[inline]
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Blocks taken since the last [`clear`](Self::clear).
    pub(crate) fn allocations(&self) -> usize {
        self.allocations
    }

    /// Their total capacity.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.allocated_bytes
    }

    #[inline]
    pub(crate) fn max_block(&self) -> usize {
        self.alloc.max_block()
    }

    /// Room below the current block's head.
    #[inline]
    fn room(&self) -> usize {
        self.blocks.last().map_or(0, |b| b.head)
    }

    /// Reserves `n` contiguous bytes in front of everything written (a new block when the
    /// current one has less room) and returns where they start. Their content is whatever
    /// the block held: callers overwrite all of it, or [`zeroed`](Self::zeroed) it.
    ///
    /// # Panics
    /// If the message would pass the format's 2 GiB limit, as the stock builder does, or if
    /// `n` is above the allocator's largest block.
    #[inline]
    pub(crate) fn make_space(&mut self, n: usize) -> Loc {
        assert!(
            self.used + n <= stock::FLATBUFFERS_MAX_BUFFER_SIZE,
            "cannot grow buffer beyond 2 gigabytes"
        );
        let block = self.blocks.len().wrapping_sub(1);
        match self.blocks.last_mut() {
            Some(b) if n <= b.head => {
                b.head -= n;
                self.used += n;
                Loc { block, pos: b.head }
            }
            _ => self.make_space_in_new_block(n),
        }
    }

    /// [`make_space`](Self::make_space) when the current block (if any) has too little room:
    /// splices a new block in front.
    #[cold]
    #[inline(never)]
    fn make_space_in_new_block(&mut self, n: usize) -> Loc {
        assert!(
            n <= self.alloc.max_block(),
            "an item of {n} bytes is larger than any block"
        );
        if self.blocks.last().is_some_and(|b| b.head == b.cap) {
            // The block `clear` put back is empty and too small for this first item: it goes
            // back to the pool, so that no block of the chain is empty.
            self.blocks.pop();
        }
        let buf = match self.spare.pop() {
            // The last message's block in the same place, when nothing else holds it.
            Some(buf) if buf.capacity() >= n => buf,
            _ => {
                let mut buf = self.alloc.block(self.used, n);
                // The whole block is the buffer's content from now on (written downward).
                buf.set_len(buf.capacity());
                self.allocations += 1;
                self.allocated_bytes += buf.capacity();
                buf
            }
        };
        let cap = buf.capacity();
        self.blocks.push(Block {
            buf,
            cap,
            lo: self.used,
            head: cap - n,
        });
        self.used += n;
        Loc {
            block: self.blocks.len() - 1,
            pos: cap - n,
        }
    }

    /// `n` zero bytes in front (padding that [`make_space_padded`](Self::make_space_padded)
    /// cannot store in one go), across blocks when `n` is above the largest block.
    pub(crate) fn zeroed(&mut self, n: usize) {
        self.fill_front(n, |dst, _| dst.fill(0));
    }

    /// `pad` bytes of zero padding in front, then `n` bytes in front of those (returned): an
    /// item and the alignment padding between it and what was written before, reserved with
    /// one check. Padding is under 8 bytes before most items, so the usual case zeroes it with
    /// one 8-byte store ending at the head: the bytes below the padding are the item's, which
    /// the caller overwrites anyway, or free room.
    #[inline(always)]
    pub(crate) fn make_space_padded(&mut self, pad: usize, n: usize) -> Loc {
        let total = pad + n;
        let block = self.blocks.len().wrapping_sub(1);
        if let Some(b) = self.blocks.last_mut()
            && pad <= 8
            && total.max(8) <= b.head
            && self.used + total <= stock::FLATBUFFERS_MAX_BUFFER_SIZE
        {
            let head = b.head;
            b.buf[head - 8..head].copy_from_slice(&[0u8; 8]);
            b.head = head - total;
            self.used += total;
            return Loc { block, pos: b.head };
        }
        self.make_space_padded_slow(pad, n)
    }

    /// [`make_space_padded`](Self::make_space_padded) at a block's start (or a new block's):
    /// still one reservation when both fit a block, zeroed with one store when it can be.
    #[inline(never)]
    fn make_space_padded_slow(&mut self, pad: usize, n: usize) -> Loc {
        let total = pad + n;
        if total > self.alloc.max_block() {
            self.zeroed(pad);
            return self.make_space(n);
        }
        let at = self.make_space(total);
        let item_and_pad = self.slice_mut(at, total);
        if pad <= 8 && total >= 8 {
            // The 8 bytes ending the padding: the item's bytes below it are overwritten.
            item_and_pad[total - 8..].copy_from_slice(&[0u8; 8]);
        } else {
            item_and_pad[n..].fill(0);
        }
        at
    }

    /// Copies `data` in front of everything written: contiguous when it fits in one block,
    /// else (only data larger than the largest block) filling blocks from its end.
    pub(crate) fn push_bytes(&mut self, data: &[u8]) {
        self.fill_front(data.len(), |dst, at| {
            dst.copy_from_slice(&data[at..at + dst.len()])
        });
    }

    /// Reserves `n` bytes in front and has `fill(dst, at)` write each piece: `dst` is the
    /// piece, `at` where it starts in the `n` bytes. One piece when `n` fits a block, else
    /// (`n` above the largest block) the current block's room and new blocks, last piece
    /// first, so that any block size, down to one byte, holds any item.
    fn fill_front(&mut self, n: usize, mut fill: impl FnMut(&mut [u8], usize)) {
        if n <= self.alloc.max_block() {
            let at = self.make_space(n);
            fill(self.slice_mut(at, n), 0);
            return;
        }
        let mut left = n;
        while left > 0 {
            let room = self.room();
            let take = left.min(if room == 0 { self.alloc.max_block() } else { room });
            left -= take;
            let at = self.make_space(take);
            fill(self.slice_mut(at, take), left);
        }
    }

    #[inline]
    pub(crate) fn slice_mut(&mut self, loc: Loc, n: usize) -> &mut [u8] {
        &mut self.blocks[loc.block].buf[loc.pos..loc.pos + n]
    }

    /// Where the byte at reverse offset `rev` (`0 < rev <= used`) is: a binary search over
    /// the blocks.
    pub(crate) fn locate(&self, rev: usize) -> Loc {
        debug_assert!(rev > 0 && rev <= self.used);
        // The newest block whose first reverse offset is below `rev`.
        let block = self.blocks.partition_point(|b| b.lo < rev) - 1;
        let b = &self.blocks[block];
        Loc {
            block,
            pos: b.cap - (rev - b.lo),
        }
    }

    /// The `n` bytes from reverse offset `rev` on, block by block (they may span blocks),
    /// starting the walk at `start` (its location, when the caller kept it).
    pub(crate) fn chunks(&self, start: Loc, n: usize) -> impl Iterator<Item = &[u8]> {
        let mut loc = Some(start);
        let mut left = n;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let at = loc?;
            let b = &self.blocks[at.block];
            let take = left.min(b.cap - at.pos);
            left -= take;
            // The bytes after this block's end are the older block's first ones.
            loc = at.block.checked_sub(1).map(|block| Loc {
                block,
                pos: self.blocks[block].head,
            });
            Some(&b.buf[at.pos..at.pos + take])
        })
    }

    /// The bytes written so far when they lie in one block (or none): no copy.
    pub(crate) fn contiguous(&self) -> Option<&[u8]> {
        match self.blocks.as_slice() {
            [] => Some(&[]),
            [b] => Some(&b.buf[b.head..b.cap]),
            _ => None,
        }
    }

    /// The bytes written so far, copied into one `Vec`.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.used);
        for b in self.blocks.iter().rev() {
            out.extend_from_slice(&b.buf[b.head..b.cap]);
        }
        out
    }

    /// `N` bytes at reverse offset `rev`, wherever they lie.
    pub(crate) fn read<const N: usize>(&self, rev: usize) -> [u8; N] {
        let mut out = [0u8; N];
        let mut at = 0;
        for chunk in self.chunks(self.locate(rev), N) {
            out[at..at + chunk.len()].copy_from_slice(chunk);
            at += chunk.len();
        }
        out
    }

    /// Compares the `n` bytes at `start` with `other`, as slices compare.
    pub(crate) fn compare(&self, start: Loc, n: usize, other: &[u8]) -> Ordering {
        let mut rest = other;
        for chunk in self.chunks(start, n) {
            let k = chunk.len().min(rest.len());
            match chunk[..k].cmp(&rest[..k]) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
            if k < chunk.len() {
                return Ordering::Greater;
            }
            rest = &rest[k..];
        }
        if rest.is_empty() {
            Ordering::Equal
        } else {
            Ordering::Less
        }
    }

    /// The message, first byte first: each block's written part, newest block first.
    /// Empties the chain (the slices hold their blocks).
    pub(crate) fn freeze(&mut self, out: &mut Vec<SharedBuf>) {
        out.clear();
        // Popped newest first (cheaper than a `Drain`, which the profile showed).
        while let Some(b) = self.blocks.pop() {
            if b.head == b.cap {
                continue;
            }
            out.push(b.buf.freeze().slice(b.head..b.cap));
        }
        self.used = 0;
    }

    /// Starts again. The blocks of the message being built, and those of `finished` (the last
    /// message's slices, newest first) that no one else holds any more, are kept for the next
    /// message, in the order they were taken; the others stay with their holders and return
    /// to the pool when those let go.
    pub(crate) fn clear(&mut self, finished: &mut Vec<SharedBuf>) {
        self.spare.clear();
        while let Some(b) = self.blocks.pop() {
            self.spare.push(b.buf);
        }
        // Newest first, as the blocks above (popping from the end of the reversed list).
        finished.reverse();
        while let Some(slice) = finished.pop() {
            if let Ok(mut buf) = slice.try_into_mut() {
                buf.set_len(buf.capacity());
                self.spare.push(buf);
            }
        }
        self.used = 0;
        self.allocations = 0;
        self.allocated_bytes = 0;
        // The first block taken back in place, empty: the next message's first item takes the
        // usual path instead of splicing a block.
        if let Some(buf) = self.spare.pop() {
            let cap = buf.capacity();
            self.blocks.push(Block {
                buf,
                cap,
                lo: 0,
                head: cap,
            });
        }
    }
}
