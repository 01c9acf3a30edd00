//! Table II and Figure 9: building the Record, timed and counted, on each [`Builder`].
//!
//! Time: messages built back to back on one pinned thread for the budget (after a tenth of
//! it as warm-up), the clock read once per batch of messages (a batch grows until it takes
//! 20 µs), so the figure is the mean wall time per message. A message is built from the same
//! [`Source`] (the application's ids and strings) each time, with the application's offsets
//! scratch reused; its result is passed to `black_box`. Beside them, the floor of any
//! serializer ([`Builder::Memcpy`]): the same source copied into one preallocated buffer.
//!
//! Counts, per message, deterministic, taken once per size:
//! - the stock builder, with [`CountingAllocator`] (the growth of its `DefaultAllocator`,
//!   counted): fresh, a new builder's whole growth; reused, a second message after `reset()`
//!   (nothing: the buffer has the size of the last message);
//! - ours, from `BuildStats` (`stats()`): the pool blocks the message took. Bytes copied are 0
//!   by construction (a block is never moved or grown; a new one is spliced in front); the
//!   run checks it: every finished slice lies inside a block the builder was given and wrote
//!   in, and together they are the message, so no byte of it was moved to another buffer.

use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry_buf::{BufMut, Pool, SharedBuf};
use ferry_flatbuffers::{Allocator, FlatBufferBuilder as ZBuilder, PoolAllocator};
use ferry_transport::Payload;
use serde::{Deserialize, Serialize};

use super::Builder;
use super::counting::CountingAllocator;
use super::record::{Offsets, Source, build_ours, build_stock};
use crate::BoxError;
use crate::harness::Budget;

type StockBuilder = ::flatbuffers::FlatBufferBuilder<'static>;

/// What building one message takes, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Counted {
    /// Serialized bytes.
    #[serde(rename = "serialized_len")]
    pub(super) len: usize,
    /// Buffers (stock) or pool blocks (ours) allocated.
    pub(super) allocations: usize,
    /// Their total size.
    pub(super) allocated_bytes: usize,
    /// Bytes moved from one buffer into another while building.
    pub(super) copied_bytes: usize,
}

/// The builders, kept across messages: one of each kind (a fresh one replaced per message),
/// the application's scratch, the Record built once (prebuilt), and the floor's buffers.
/// Serialization times them; every ping-pong client sends what one of them builds.
pub(super) struct Builders {
    pool: Pool,
    stock: StockBuilder,
    ours: ZBuilder<'static>,
    offsets: Offsets,
    prebuilt: Option<SharedBuf>,
    ids: Vec<i64>,
    bytes: Vec<u8>,
}

impl Builders {
    /// Builders whose blocks (ours) come from `pool`.
    pub(super) fn new(pool: &Pool) -> Builders {
        Builders {
            pool: pool.clone(),
            stock: StockBuilder::new(),
            ours: ZBuilder::with_pool(pool),
            offsets: Offsets::new(),
            prebuilt: None,
            ids: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// Builds `source`'s Record once, into a buffer of the pool: what [`Builder::Prebuilt`]
    /// sends.
    pub(super) fn prebuild(&mut self, source: &Source) -> Result<(), BoxError> {
        let mut fbb = StockBuilder::new();
        build_stock(&mut fbb, source, &mut self.offsets);
        self.prebuilt = Some(self.pool.copy_from(fbb.finished_data())?);
        Ok(())
    }

    /// Builds one message of `source` with `builder` and returns it as a call's payload (the
    /// stock builder's one slice; ours, its blocks). Never inlined, for every builder alike:
    /// one call per message, and a frame that callgrind can count on its own
    /// (`--toggle-collect='*Builders::build*'`).
    #[inline(never)]
    pub(super) fn build(&mut self, builder: Builder, source: &Source) -> Payload<'_> {
        match builder {
            // The floor is timed through `copy` and sends nothing.
            Builder::Memcpy => Payload::Bytes(&[]),
            Builder::Prebuilt => Payload::Gather {
                head: &[],
                parts: self.prebuilt.as_slice(),
            },
            Builder::FlatbuffersFresh | Builder::FlatbuffersReused => {
                if builder == Builder::FlatbuffersFresh {
                    self.stock = StockBuilder::new();
                } else {
                    self.stock.reset();
                }
                build_stock(&mut self.stock, source, &mut self.offsets);
                Payload::Bytes(self.stock.finished_data())
            }
            Builder::ZflatbuffersFresh | Builder::ZflatbuffersReused => {
                if builder == Builder::ZflatbuffersFresh {
                    self.ours = ZBuilder::with_pool(&self.pool);
                } else {
                    self.ours.reset();
                }
                build_ours(&mut self.ours, source, &mut self.offsets);
                Payload::Gather {
                    head: &[],
                    parts: self.ours.finished_slices(),
                }
            }
        }
    }

    /// The mean wall time of building one message of `source` with `builder`, in ns, over
    /// `budget` (after a tenth of it as warm-up).
    pub(super) fn time(&mut self, builder: Builder, source: &Source, budget: Budget) -> f64 {
        match builder {
            // Not through `build`, so that callgrind counts the builders alone.
            Builder::Memcpy => time_per_call(budget, || self.copy(source)),
            _ => time_per_call(budget, || {
                black_box(self.build(builder, source));
            }),
        }
    }

    /// The floor: the source's ids (one `memcpy`) and strings (one by one) copied into
    /// buffers allocated once, no framing at all. Never inlined, as [`Builders::build`].
    #[inline(never)]
    fn copy(&mut self, source: &Source) {
        self.ids.clear();
        self.ids.extend_from_slice(&source.ids);
        self.bytes.clear();
        for s in &source.strings {
            self.bytes.extend_from_slice(s.as_bytes());
        }
        black_box((&self.ids, &self.bytes));
    }
}

/// The mean wall time of `one()` in ns over `budget`, after a tenth of it as warm-up.
fn time_per_call(budget: Budget, mut one: impl FnMut()) -> f64 {
    run_for(budget.warmup(), &mut one);
    let (n, elapsed) = run_for(budget, &mut one);
    elapsed.as_nanos() as f64 / n.max(1) as f64
}

/// Calls `one` for `budget`; returns how many times and for how long.
fn run_for(budget: Budget, one: &mut impl FnMut()) -> (u64, Duration) {
    let start = Instant::now();
    match budget {
        Budget::Count(n) => {
            for _ in 0..n {
                one();
            }
            (n, start.elapsed())
        }
        Budget::Time(d) => {
            let (mut n, mut batch, mut last) = (0u64, 1u64, start);
            loop {
                for _ in 0..batch {
                    one();
                }
                n += batch;
                let now = Instant::now();
                if now - start >= d {
                    return (n, now - start);
                }
                if now - last < Duration::from_micros(20) {
                    batch *= 2;
                }
                last = now;
            }
        }
    }
}

/// What building one message of `source` with `builder` takes (see the module docs), and its
/// bytes.
pub(super) fn count(builder: Builder, source: &Source, pool: &Pool) -> Result<(Counted, Vec<u8>), BoxError> {
    let mut offsets = Offsets::new();
    Ok(match builder {
        Builder::FlatbuffersFresh | Builder::FlatbuffersReused => {
            let (alloc, counts) = CountingAllocator::new();
            let mut fbb = ::flatbuffers::FlatBufferBuilder::new_in(alloc);
            build_stock(&mut fbb, source, &mut offsets);
            if builder == Builder::FlatbuffersReused {
                fbb.reset();
                counts.take();
                build_stock(&mut fbb, source, &mut offsets);
            }
            let counted = Counted {
                len: fbb.finished_data().len(),
                ..counts.get()
            };
            (counted, fbb.finished_data().to_vec())
        }
        Builder::Memcpy | Builder::Prebuilt => return Err(format!("{builder:?} builds nothing").into()),
        Builder::ZflatbuffersFresh | Builder::ZflatbuffersReused => {
            let (alloc, blocks) = Recording::new(pool);
            let mut fbb = ZBuilder::new_in(alloc);
            build_ours(&mut fbb, source, &mut offsets);
            if builder == Builder::ZflatbuffersReused {
                // `reset` keeps the first message's blocks (nothing else holds them), so the
                // second takes none from the allocator; its slices must still lie in the
                // blocks recorded for the first.
                fbb.reset();
                build_ours(&mut fbb, source, &mut offsets);
            }
            let stats = fbb.stats();
            let message = fbb.finished_message();
            check_in_place(message.slices(), &blocks.borrow(), stats.len)?;
            let counted = Counted {
                len: stats.len,
                allocations: stats.allocations,
                allocated_bytes: stats.allocated_bytes,
                copied_bytes: 0,
            };
            (counted, message.to_vec())
        }
    })
}

/// Fails unless the slices are `len` bytes in all and each lies inside one of `blocks`
/// (`(address, capacity)` of the blocks the builder was given).
fn check_in_place(
    slices: &[ferry_buf::SharedBuf],
    blocks: &[(usize, usize)],
    len: usize,
) -> Result<(), BoxError> {
    let total: usize = slices.iter().map(|s| s.len()).sum();
    if total != len {
        return Err(format!("the slices hold {total} bytes, the message {len}").into());
    }
    for s in slices {
        let at = s.as_ptr() as usize;
        let inside = blocks
            .iter()
            .any(|&(start, cap)| start <= at && at + s.len() <= start + cap);
        if !inside {
            return Err(
                "a finished slice lies outside every block the builder was given: bytes were moved".into(),
            );
        }
    }
    Ok(())
}

/// `(address, capacity)` of each block an allocator gave.
type Blocks = Rc<RefCell<Vec<(usize, usize)>>>;

/// The pool allocator, recording where each block it gives is.
struct Recording {
    inner: PoolAllocator,
    blocks: Blocks,
}

impl Recording {
    fn new(pool: &Pool) -> (Recording, Blocks) {
        let blocks = Rc::default();
        let alloc = Recording {
            inner: PoolAllocator::new(pool),
            blocks: Rc::clone(&blocks),
        };
        (alloc, blocks)
    }
}

impl Allocator for Recording {
    fn block(&mut self, written: usize, min: usize) -> BufMut {
        let mut buf = self.inner.block(written, min);
        let cap = buf.capacity();
        let at = buf.capacity_mut().as_ptr() as usize;
        self.blocks.borrow_mut().push((at, cap));
        buf
    }

    fn max_block(&self) -> usize {
        self.inner.max_block()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_buf::PoolConfig;

    #[test]
    fn counts_per_builder() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let table = |b| {
            [1024, 16 << 10, 64 << 10]
                .map(|size| count(b, &Source::new(size), &pool).unwrap().0)
                .map(|c| (c.len, c.allocations, c.copied_bytes))
        };
        assert_eq!(
            table(Builder::FlatbuffersFresh),
            [(1152, 12, 2047), (17_952, 16, 32_767), (71_712, 18, 131_071)]
        );
        assert_eq!(
            table(Builder::FlatbuffersReused),
            [(1152, 0, 0), (17_952, 0, 0), (71_712, 0, 0)]
        );
        for b in [Builder::ZflatbuffersFresh, Builder::ZflatbuffersReused] {
            let t = table(b);
            // No more blocks than the paper's Table II (1 / 5 / 8), nothing copied.
            for ((len, allocations, copied), (paper_len, paper_allocations)) in
                t.into_iter().zip([(1152, 1), (17_952, 5), (71_712, 8)])
            {
                assert_eq!((len, copied), (paper_len, 0));
                assert!(allocations <= paper_allocations, "{b:?}: {t:?}");
                if b == Builder::ZflatbuffersReused {
                    // Its `reset` kept the first message's blocks.
                    assert_eq!(allocations, 0, "{t:?}");
                }
            }
        }
    }

    #[test]
    fn every_builder_is_timed() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let mut builders = Builders::new(&pool);
        let source = Source::new(1024);
        for b in Builder::ALL {
            let ns = builders.time(b, &source, Budget::Count(20));
            assert!(ns > 0.0 && ns.is_finite(), "{b:?}");
            let ns = builders.time(b, &source, Budget::Time(Duration::from_millis(2)));
            assert!(ns > 0.0 && ns.is_finite(), "{b:?}");
        }
        let ns = builders.time(Builder::Memcpy, &source, Budget::Count(20));
        assert!(ns > 0.0 && ns.is_finite());
    }

    #[test]
    fn a_moved_slice_is_caught() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let elsewhere = pool.copy_from(&[1u8; 100]).unwrap();
        let slices = [elsewhere.clone()];
        assert!(check_in_place(&slices, &[(0, 1)], 100).is_err());
        let at = elsewhere.as_ptr() as usize;
        assert!(check_in_place(&slices, &[(at, 100)], 100).is_ok());
        assert!(check_in_place(&slices, &[(at, 100)], 99).is_err());
    }
}
