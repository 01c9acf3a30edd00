//! Ferry's registered buffer pool and reference-counted buffers.
//!
//! # What it is
//!
//! A pool of memory meant to be handed to the kernel or a NIC without copying
//! (io_uring fixed buffers, an AF_XDP UMEM, MSG_ZEROCOPY sends), and the buffer handles that
//! serialization and transports pass around:
//!
//! - [`Pool`] reserves one virtual range of `max_bytes` up front and maps regions of
//!   `region_size` inside it as it grows, each (best effort) `mlock`ed. No allocating thread
//!   zeroes a region: a region it maps on demand is 4 KiB pages faulted as buffers touch them,
//!   so a new pool costs a few system calls and the pages its buffers use. Once a class needs
//!   a second region, a background grower thread (one per process, lowest priority) maps the
//!   pool's next region ahead of need, 2 MiB hugetlb pages if free, else transparent huge
//!   pages, else 4 KiB pages, prefaulted, and the next growth takes it ready. A pool kept
//!   warm ([`Pool::keep_warm`]: an event loop's, whose thread every session waits for) always
//!   has a region ahead, so a class's first region is a ready one too, and has the grower
//!   fault in each region it still maps on demand as soon as it is mapped (contents
//!   untouched, so buffers already in use keep theirs): its owner stops faulting pages.
//!   Transports learn about every region through [`Pool::on_region`] to register it.
//! - Each region serves one power-of-two size class ([`MIN_CLASS`] up to `region_size`).
//!   Allocation and free are O(1) and lock-free (a per-class Treiber stack); only adding a
//!   region takes a lock. [`PoolError::Exhausted`] when `max_bytes` is reached, never a heap
//!   fallback.
//! - [`BufMut`] is a unique, writable buffer; [`BufMut::freeze`] makes it a [`SharedBuf`]:
//!   immutable, three words, cloned and sliced with one atomic increment.
//! - [`Pool::recover`] maps any `&[u8]` that points into a live frozen buffer back to a
//!   `SharedBuf` in O(1) (address arithmetic, no map lookup), as Cornflakes' `recover_ptr`
//!   does: a serializer can then send a field by reference instead of copying it.
//! - [`PoolStats`] counts buffers and bytes outstanding per class, so tests can prove nothing
//!   leaks.
//!
//! # What it is NOT
//!
//! - Not a general-purpose allocator: capacities are rounded up to a power of two, and a
//!   region never changes class or returns memory to the OS before the pool is dropped.
//! - Not a registration layer: it never calls io_uring, AF_XDP or RDMA APIs; transports do,
//!   from their [`Pool::on_region`] hook.
//! - Not a shared-memory protocol: a pool made with [`PoolConfig::shared`](PoolConfig::shared) set lives in one memfd
//!   ([`Pool::memfd`], [`Pool::offset_of`]) that another process may map, and
//!   `ferry-shm` builds its transport on that; the pool itself only allocates in it. Default
//!   pools are private anonymous mappings.
//! - Not write protection for data in flight: a frozen buffer is immutable to safe Rust, but
//!   memory is reused as soon as the last handle drops, so a transport must hold a
//!   [`SharedBuf`] until the kernel or NIC reports completion.
//!
//! # Buffer ownership
//!
//! ```text
//!  Pool::alloc(n)        freeze()             clone() / slice() / recover()
//!  ───────────▶ BufMut ───────────▶ SharedBuf ─────────────────────────────▶ SharedBuf, ...
//!     count: WRITING      (unique,   count: 1   (immutable; each handle        count: n
//!                          writable)             holds one count)
//!        │                                           │ drop: count - 1
//!        │ drop                                      ▼
//!        └──────────────────────────▶ count reaches 0: slot back on its class's free list,
//!                                     and its hold on the pool released
//! ```
//!
//! Each live slot holds one strong count on the pool's shared state, so a buffer may outlive
//! every [`Pool`] handle; the regions are unmapped when the pool and all buffers are gone.
//!
//! # Threading model
//!
//! - [`Pool`] is `Send + Sync` and cheap to clone; any thread may allocate, recover and read
//!   statistics concurrently. Allocation and free are lock-free; growing the pool and
//!   [`Pool::on_region`] serialize on one mutex, and hooks run under it (on the thread that
//!   grows the pool, never the grower). Nothing under that mutex zeroes pages; it waits for
//!   the grower only when the pool's last region is the one being mapped ahead.
//! - [`BufMut`] is `Send + Sync`: it can be filled on one thread and moved to another;
//!   writing needs `&mut`.
//! - [`SharedBuf`] is `Send + Sync`. Counts are atomic (`Relaxed` increments; `Release`
//!   decrements with an `Acquire` fence on the last, as in `Arc`), so a slot is reused only
//!   after every thread's reads of it happened. Counts are `u32` and capped at 2^30:
//!   exceeding it aborts the process, like `Arc`.
//! - [`Pool::recover`] increments with a compare-exchange loop that refuses a count of zero:
//!   a slot freed concurrently is never resurrected, and a [`BufMut`]'s slot is never shared.
//! - The free list, the refcount and the hand-off of the region mapped ahead are
//!   model-checked with loom (every interleaving of a few
//!   threads; `--cfg loom`, see `.ci/run`), and the crate's tests run under Miri with strict
//!   provenance.
//!
//! # Example
//!
//! ```
//! use ferry_buf::{Pool, PoolConfig};
//!
//! let pool = Pool::new(PoolConfig { region_size: 64 << 10, max_bytes: 1 << 20, ..Default::default() })?;
//! pool.on_region(|region| println!("register {:?} + {} bytes", region.addr, region.len));
//!
//! let value = pool.copy_from(b"a value worth zero-copying")?;
//! let field = value.slice(2..7);
//! assert_eq!(&*field, b"value");
//! assert_eq!(value.ref_count(), 2);
//!
//! let bytes = field.into_bytes(); // hand to a `bytes`-based API, no copy
//! drop(value);
//! assert_eq!(&bytes[..], b"value");
//! drop(bytes);
//! assert_eq!(pool.stats().buffers_outstanding(), 0);
//! # Ok::<(), ferry_buf::PoolError>(())
//! ```
#![deny(unsafe_code)]

mod ahead;
mod buf_mut;
mod class;
mod config;
mod error;
mod free_list;
mod grower;
mod pool;
#[allow(unsafe_code)]
mod raw;
mod region_info;
mod shared_buf;
mod slot;
mod stats;
mod sync;
#[allow(unsafe_code)]
mod sys;

pub use buf_mut::BufMut;
pub use config::{
    MAX_POOL_BYTES, MAX_REGION_SIZE, MAX_REGIONS, MIN_CLASS, MIN_REGION_SIZE, PageKind, PoolConfig,
};
pub use error::{CapacityError, PoolError};
pub use pool::Pool;
pub use region_info::RegionInfo;
pub use shared_buf::SharedBuf;
pub use stats::{ClassStats, PoolStats};
