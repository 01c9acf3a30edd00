//! The keyspace. STUB signatures: the real keyspace replaces the bodies.

use ferry_buf::{Pool, SharedBuf};
use std::collections::VecDeque;

/// A stored value.
#[derive(Debug, Clone)]
pub enum Value {
    /// A string.
    Str(SharedBuf),
    /// A list.
    List(VecDeque<SharedBuf>),
}

/// Counters `INFO stats` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbStats {
    /// Reads that found their key.
    pub keyspace_hits: u64,
    /// Reads that did not.
    pub keyspace_misses: u64,
    /// Keys removed because their TTL passed.
    pub expired_keys: u64,
}

/// The keyspace.
#[derive(Debug)]
pub struct Db {
    pool: Pool,
    keep_in_place_min: usize,
}

#[allow(missing_docs, unused_variables)]
impl Db {
    pub fn new(pool: Pool, keep_in_place_min: usize) -> Db { Db { pool, keep_in_place_min } }
    pub fn pool(&self) -> &Pool { &self.pool }
    pub fn keep_in_place_min(&self) -> usize { self.keep_in_place_min }
    pub fn len(&self) -> usize { todo!() }
    pub fn is_empty(&self) -> bool { todo!() }
    pub fn expires(&self) -> usize { todo!() }
    pub fn used_memory(&self) -> usize { todo!() }
    pub fn flush(&mut self) { todo!() }
    pub fn stats(&self) -> DbStats { todo!() }
    pub fn active_expire(&mut self, now_ms: u64) -> usize { todo!() }
}
