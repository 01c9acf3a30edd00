//! Shared by the tests that send built messages over Ferry's transports (`transport.rs`:
//! `ferry-net` and `ferry-shm` connections; `rpc.rs`: a `ferry-rpc` server): random `RootT`s
//! from the interop generator ([`random`](super::random)), packed into a [`Message`] (in
//! 64-byte blocks: more slices than one `sendmsg` takes), pools that hold TCP frames of the
//! default maximum length, and the rule for a kernel feature this machine lacks.

use ferry_buf::{Pool, PoolConfig};
use ferry_flatbuffers_tests::interop::RootT;
use ferry_testkit::Rng;
use flatbuffers::Message;

use super::builders::Blocks;
use super::random::ferry_objects;

/// Gather entries one `sendmsg` takes on Linux (`UIO_MAXIOV`).
pub const IOV_MAX: usize = 1024;

/// A random `Root` determined by `seed`, its strings and vectors up to about `large` bytes.
pub fn root(seed: u64, large: usize) -> RootT {
    ferry_objects::root(&mut Rng::new(seed), large)
}

/// A random `Root` of over 96 KiB determined by `seed`: the generator's (strings and vectors
/// up to 8 KiB, often longer than a 64-byte block) with `bytes` set to 96 KiB, so that built in
/// 64-byte blocks it is well over [`IOV_MAX`] slices.
pub fn big_root(seed: u64) -> RootT {
    let mut rng = Rng::new(seed);
    let mut root = ferry_objects::root(&mut rng, 8 << 10);
    root.bytes = Some(rng.bytes(96 << 10));
    root
}

/// `root` packed in `blocks` of `pool` and finished (no identifier, no size prefix: what
/// `read_frame` and `FlatRequest::root` read).
pub fn packed(pool: &Pool, root: &RootT, blocks: Blocks) -> Message {
    let mut fbb = blocks.builder(pool);
    let offset = root.pack(&mut fbb);
    fbb.finish(offset, None);
    fbb.finished_message()
}

/// `root` packed in 64-byte blocks of `pool`; asserts that the message is more gather entries
/// than one `sendmsg` takes.
pub fn many_slices(pool: &Pool, root: &RootT) -> Message {
    let message = packed(pool, root, Blocks::Tiny);
    let slices = message.slices();
    assert!(
        slices.len() > IOV_MAX,
        "{} slices: the message must need more than one sendmsg",
        slices.len()
    );
    assert!(slices.iter().all(|s| s.len() <= 64));
    message
}

/// A pool that holds TCP frames of the default maximum length (8 MiB regions); `shared` (a
/// memfd a peer maps) for sessions that also send over shared memory from it.
pub fn frame_pool(shared: bool) -> Pool {
    Pool::new(PoolConfig {
        shared,
        region_size: 8 << 20,
        max_bytes: 256 << 20,
        mlock: false,
        ..PoolConfig::default()
    })
    .expect("pool")
}

/// The pool's buffers not yet returned.
pub fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

/// A skip with its reason, or a failure under `FERRY_REQUIRE_KERNEL_FEATURES` (CI).
#[allow(unused_imports)] // each test binary uses its own subset
pub use ferry_testkit::tools::skip;
