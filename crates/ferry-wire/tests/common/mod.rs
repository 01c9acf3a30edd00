//! What ferry-wire's integration tests share. (They cannot use `ferry-testkit`, which depends
//! on this crate: the dev-dependency would be a cycle.)

use ferry_buf::{Pool, PoolConfig};

/// A private pool: 1 MiB regions, at most 64 MiB.
pub fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })
    .expect("a test pool")
}
