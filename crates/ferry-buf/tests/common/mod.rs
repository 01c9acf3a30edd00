//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use ferry_buf::{Pool, PoolConfig};

/// Small enough for Miri: 64 KiB regions (classes 64 B ..= 64 KiB), 16 regions at most.
pub const REGION: usize = 64 << 10;
pub const MAX_BYTES: usize = 1 << 20;

pub fn small_config() -> PoolConfig {
    PoolConfig {
        region_size: REGION,
        max_bytes: MAX_BYTES,
        ..PoolConfig::default()
    }
}

pub fn small_pool() -> Pool {
    Pool::new(small_config()).expect("small pool")
}

/// Asserts that no buffer of `pool` is outstanding, in every class.
#[track_caller]
pub fn assert_no_leaks(pool: &Pool) {
    let stats = pool.stats();
    for class in &stats.classes {
        assert_eq!(
            class.buffers_outstanding, 0,
            "class {} leaks: {stats:?}",
            class.class
        );
        assert_eq!(
            class.bytes_outstanding, 0,
            "class {} leaks: {stats:?}",
            class.class
        );
    }
    assert_eq!(stats.buffers_outstanding(), 0);
    assert_eq!(stats.bytes_outstanding(), 0);
}

/// Iteration count: `full` natively, `miri` under Miri.
pub fn scaled(full: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { full }
}

/// Whether every byte equals `value` (a `memcmp`, fast under Miri unlike a byte loop).
pub fn all_bytes(bytes: &[u8], value: u8) -> bool {
    bytes == vec![value; bytes.len()].as_slice()
}
