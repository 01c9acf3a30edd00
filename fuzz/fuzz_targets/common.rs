//! What several fuzz targets share: one pool for the whole run.

use ferry::{Pool, PoolConfig};
use std::sync::OnceLock;

/// A private pool (1 MiB regions, at most 64 MiB), made once.
pub fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        Pool::new(PoolConfig {
            region_size: 1 << 20,
            max_bytes: 64 << 20,
            ..PoolConfig::default()
        })
        .expect("pool")
    })
}
