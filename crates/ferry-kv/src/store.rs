//! The map: keys to values in the pool, sharded behind read-write locks, with a memory limit.

use std::collections::LinkedList;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use ferry::rpc::{Code, ConnConfig, Status};
use ferry_buf::{Pool, PoolError, SharedBuf};

/// Limits of a store. Every one is checked before any memory is taken. An overwrite needs room
/// for the new value before the old one is released (a response in flight may still hold the
/// old one), so a store at its limit cannot rewrite a value in place.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Bytes of pool memory the values may hold together (each buffer counts its pool size
    /// class, the memory it really takes). Past it, writes fail with
    /// [`StoreError::Full`] (`RESOURCE_EXHAUSTED`); nothing is evicted. Default 768 MiB.
    pub max_bytes: usize,
    /// Longest key, in bytes. Default 4 KiB.
    pub max_key_len: usize,
    /// Longest single buffer, in bytes: at most the pool's largest size class. Default 8 MiB
    /// minus 64 KiB, so that a response holding it fits a TCP frame.
    pub max_value_len: usize,
    /// Most buffers in one value (vector or list). Default 4096.
    pub max_parts: usize,
    /// Most keys in one request (`GetM`, `Delete`). Default 1024.
    pub max_keys: usize,
    /// Lock shards: a power of two. Default 64.
    pub shards: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_bytes: 768 << 20,
            max_key_len: 4 << 10,
            max_value_len: (8 << 20) - (64 << 10),
            max_parts: 4096,
            max_keys: 1024,
            shards: 64,
        }
    }
}

/// Why a store operation failed; [`StoreError::status`] says what a client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key is not in the store.
    #[error("no key `{0}`")]
    NotFound(String),
    /// A single buffer was asked of a value that has several.
    #[error("key `{key}` holds {parts} buffers, not one (read it with GetList or GetFromList)")]
    NotSingle {
        /// The key.
        key: String,
        /// How many buffers it holds.
        parts: usize,
    },
    /// An index past the end of a value.
    #[error("key `{key}` holds {parts} buffers; index {index} is past the end")]
    Index {
        /// The key.
        key: String,
        /// The index asked for.
        index: usize,
        /// How many buffers it holds.
        parts: usize,
    },
    /// A request past a [`StoreConfig`] limit.
    #[error("{what} is {len}, over the limit of {limit}")]
    TooLarge {
        /// What: "key length", "value length", "buffers in a value", "keys in a request".
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The values a request asks for add up to more than one response may carry.
    #[error("the response would carry {len} bytes of values, over the limit of {limit}")]
    ResponseTooLarge {
        /// Bytes of the values asked for.
        len: usize,
        /// The limit ([`StoreConfig::max_value_len`]: a response must fit a frame).
        limit: usize,
    },
    /// The memory limit (or the pool) is full.
    #[error("out of memory: {used} of {limit} bytes in use, {wanted} more needed")]
    Full {
        /// Bytes held by values.
        used: usize,
        /// The limit.
        limit: usize,
        /// Bytes the write needed.
        wanted: usize,
    },
}

impl StoreError {
    /// The RPC status for this error: `NOT_FOUND`, `FAILED_PRECONDITION`, `INVALID_ARGUMENT`
    /// or `RESOURCE_EXHAUSTED`, with the error's text.
    pub fn status(&self) -> Status {
        let code = match self {
            StoreError::NotFound(_) => Code::NotFound,
            StoreError::NotSingle { .. } | StoreError::Index { .. } => Code::FailedPrecondition,
            StoreError::TooLarge { .. } => Code::InvalidArgument,
            StoreError::Full { .. } | StoreError::ResponseTooLarge { .. } => Code::ResourceExhausted,
        };
        Status::new(code, self.to_string())
    }
}

impl From<StoreError> for Status {
    fn from(e: StoreError) -> Status {
        e.status()
    }
}

/// A stored value: buffers of the store's pool, each counted (cloning one is a refcount
/// increment, never a copy).
#[derive(Debug, Clone)]
pub enum Value {
    /// One buffer (`Put` with one value).
    Single(SharedBuf),
    /// A vector of buffers, written at once (`Put` with several values): indexed in O(1).
    Vector(Box<[SharedBuf]>),
    /// A linked list of buffers, grown one at a time (`Append`), each allocated on its own as
    /// in Cornflakes' store: an index walks the list.
    List(LinkedList<SharedBuf>),
}

impl Value {
    /// How many buffers.
    pub fn len(&self) -> usize {
        match self {
            Value::Single(_) => 1,
            Value::Vector(v) => v.len(),
            Value::List(l) => l.len(),
        }
    }

    /// Whether it holds no buffer (never true of a stored value).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with each buffer, in order (no allocation, unlike [`parts`](Self::parts)).
    pub fn for_each(&self, mut f: impl FnMut(&SharedBuf)) {
        match self {
            Value::Single(b) => f(b),
            Value::Vector(v) => v.iter().for_each(f),
            Value::List(l) => l.iter().for_each(f),
        }
    }

    /// Buffer `index`.
    pub fn part(&self, index: usize) -> Option<&SharedBuf> {
        match self {
            Value::Single(b) => (index == 0).then_some(b),
            Value::Vector(v) => v.get(index),
            Value::List(l) => l.iter().nth(index),
        }
    }

    /// The pool memory it takes: the size class of every buffer.
    fn footprint(&self) -> usize {
        let mut n = 0;
        self.for_each(|b| n += footprint_of(b.len()));
        n
    }
}

/// The pool memory a buffer of `len` bytes takes: its size class (the pool's smallest class is
/// 64 B, the others powers of two).
pub fn footprint_of(len: usize) -> usize {
    len.max(ferry_buf::MIN_CLASS).next_power_of_two()
}

/// One shard: keys and their values, found by the hash [`Store::hash`] computed once per
/// request for both the shard and the slot.
type Map = hashbrown::HashTable<(Box<[u8]>, Value)>;

/// The store: a sharded map from keys to [`Value`]s in a pool. `Send + Sync`.
///
/// Reads take a shard's read lock for the lookup and clone the buffers they return (refcount
/// increments); writes copy the new value into the pool before taking the shard's write lock,
/// then swap it in and drop the old one outside the lock. A value replaced while a response
/// still references its buffers stays intact: the response holds its own counts.
#[derive(Debug)]
pub struct Store {
    pool: Pool,
    config: StoreConfig,
    shards: Box<[RwLock<Map>]>,
    /// Hashes keys (foldhash, seeded per process: keys come from peers).
    hasher: hashbrown::DefaultHashBuilder,
    /// Pool bytes held by stored values (their size classes).
    used: AtomicUsize,
}

impl Store {
    /// A store whose values live in `pool`. Serve it with a [`ConnConfig`] from
    /// [`serving_config`](Self::serving_config) so both transports send from this pool.
    pub fn new(pool: Pool, config: StoreConfig) -> Store {
        let shards = config.shards.max(1).next_power_of_two();
        Store {
            pool,
            shards: (0..shards).map(|_| RwLock::new(Map::new())).collect(),
            hasher: hashbrown::DefaultHashBuilder::default(),
            config,
            used: AtomicUsize::new(0),
        }
    }

    /// The pool values live in.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The limits.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// How the server's sessions should be set up to send values by reference: every session,
    /// TCP and shared memory, sends from the store's pool (which must then be
    /// [`shared`](ferry_buf::PoolConfig::shared) for shared-memory sessions; every such peer
    /// maps it read-only, which suits a store every client may read). TCP sessions then take
    /// their send and receive buffers from it too, so its largest size class (its
    /// `region_size`) must hold a whole TCP frame (`ferry_net::Config::max_frame_len`, 8 MiB
    /// by default), and its `max_bytes` must leave room beyond
    /// [`StoreConfig::max_bytes`] for those buffers.
    pub fn serving_config(&self, base: ConnConfig) -> ConnConfig {
        ConnConfig {
            shared_pool: Some(self.pool.clone()),
            ..base
        }
    }

    /// Keys stored.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| read(s).len()).sum()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pool bytes the values hold (their size classes).
    pub fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The key's hash: it picks the shard (bits 32 and up, which a shard's table does not
    /// use for its slots or tags) and the slot in it.
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    fn shard(&self, hash: u64) -> &RwLock<Map> {
        &self.shards[((hash >> 32) as usize) & (self.shards.len() - 1)]
    }

    /// Calls `f` with the value of `key` (or `None`) under the shard's read lock: clone what
    /// must outlive the call. Keep `f` short: writers of the shard wait for it.
    pub fn with<R>(&self, key: &[u8], f: impl FnOnce(Option<&Value>) -> R) -> R {
        let hash = self.hash(key);
        let shard = read(self.shard(hash));
        f(shard.find(hash, |(k, _)| **k == *key).map(|(_, v)| v))
    }

    /// The single buffer of `key`.
    pub fn get(&self, key: &str) -> Result<SharedBuf, StoreError> {
        self.with(key.as_bytes(), |v| match v {
            None => Err(StoreError::NotFound(key.to_owned())),
            Some(Value::Single(b)) => Ok(b.clone()),
            Some(other) => Err(StoreError::NotSingle {
                key: key.to_owned(),
                parts: other.len(),
            }),
        })
    }

    /// Buffer `index` of `key`'s value.
    pub fn get_from_list(&self, key: &str, index: usize) -> Result<SharedBuf, StoreError> {
        self.with(key.as_bytes(), |v| {
            let v = v.ok_or_else(|| StoreError::NotFound(key.to_owned()))?;
            v.part(index).cloned().ok_or_else(|| StoreError::Index {
                key: key.to_owned(),
                index,
                parts: v.len(),
            })
        })
    }

    /// Calls `f` with every buffer of `key`'s value, in order.
    pub fn get_list(&self, key: &str, f: impl FnMut(&SharedBuf)) -> Result<(), StoreError> {
        self.with(key.as_bytes(), |v| match v {
            None => Err(StoreError::NotFound(key.to_owned())),
            Some(v) => {
                v.for_each(f);
                Ok(())
            }
        })
    }

    /// Stores `parts` under `key` (one part: a single buffer; more: a vector), replacing what
    /// it held. Each part is copied once into the pool.
    pub fn put(&self, key: &[u8], parts: &[&[u8]]) -> Result<(), StoreError> {
        self.check_key(key)?;
        self.check_parts(parts.len())?;
        let mut bufs = Vec::with_capacity(parts.len());
        let mut footprint = 0;
        for p in parts {
            self.check_value(p.len())?;
            footprint += footprint_of(p.len());
        }
        self.reserve(footprint)?;
        for p in parts {
            match self.pool.copy_from(p) {
                Ok(b) => bufs.push(b),
                Err(e) => {
                    self.release(footprint);
                    return Err(self.pool_full(e, footprint));
                }
            }
        }
        let value = match <[SharedBuf; 1]>::try_from(bufs) {
            Ok([one]) => Value::Single(one),
            Err(bufs) => Value::Vector(bufs.into_boxed_slice()),
        };
        self.insert(key, value);
        Ok(())
    }

    /// Stores a value already in the pool (a loader's, or one the caller built with
    /// [`pool`](Self::pool)), replacing what `key` held.
    pub fn put_value(&self, key: &[u8], value: Value) -> Result<(), StoreError> {
        self.check_key(key)?;
        self.check_parts(value.len())?;
        let mut too_long = None;
        value.for_each(|b| {
            if b.len() > self.config.max_value_len {
                too_long = Some(b.len());
            }
        });
        if let Some(len) = too_long {
            self.check_value(len)?;
        }
        self.reserve(value.footprint())?;
        self.insert(key, value);
        Ok(())
    }

    fn insert(&self, key: &[u8], value: Value) {
        let hash = self.hash(key);
        let old = {
            let mut shard = write(self.shard(hash));
            match shard.entry(hash, |(k, _)| **k == *key, |(k, _)| self.hash(k)) {
                hashbrown::hash_table::Entry::Occupied(mut e) => {
                    Some(std::mem::replace(&mut e.get_mut().1, value))
                }
                hashbrown::hash_table::Entry::Vacant(e) => {
                    e.insert((key.into(), value));
                    None
                }
            }
        };
        // Dropped outside the lock: the last reference frees the pool slots.
        if let Some(old) = old {
            self.release(old.footprint());
        }
    }

    /// Appends one buffer (copied once into the pool) to `key`'s list, creating it; a single
    /// buffer or a vector becomes a list first. Returns the new length.
    pub fn append(&self, key: &[u8], value: &[u8]) -> Result<usize, StoreError> {
        self.check_key(key)?;
        self.check_value(value.len())?;
        // Checked again under the write lock; this look first spares a full list's allocation.
        if let Some(len) = self.with(key, |v| v.map(Value::len))
            && len >= self.config.max_parts
        {
            return Err(self.too_large("buffers in a value", len + 1, self.config.max_parts));
        }
        let footprint = footprint_of(value.len());
        self.reserve(footprint)?;
        let buf = self.pool.copy_from(value).map_err(|e| {
            self.release(footprint);
            self.pool_full(e, footprint)
        })?;
        let hash = self.hash(key);
        let mut shard = write(self.shard(hash));
        let (_, entry) = shard
            .entry(hash, |(k, _)| **k == *key, |(k, _)| self.hash(k))
            .or_insert_with(|| (key.into(), Value::List(LinkedList::new())))
            .into_mut();
        if entry.len() >= self.config.max_parts {
            let len = entry.len();
            drop(shard);
            self.release(footprint);
            return Err(self.too_large("buffers in a value", len + 1, self.config.max_parts));
        }
        let mut list = match std::mem::replace(entry, Value::List(LinkedList::new())) {
            Value::Single(b) => LinkedList::from([b]),
            Value::Vector(v) => v.into_vec().into_iter().collect(),
            Value::List(l) => l,
        };
        list.push_back(buf);
        let len = list.len();
        *entry = Value::List(list);
        Ok(len)
    }

    /// Deletes `key`; whether it was there.
    pub fn delete(&self, key: &[u8]) -> bool {
        let hash = self.hash(key);
        let old = match write(self.shard(hash)).find_entry(hash, |(k, _)| **k == *key) {
            Ok(e) => Some(e.remove().0.1),
            Err(_) => None,
        };
        match old {
            Some(old) => {
                self.release(old.footprint());
                true
            }
            None => false,
        }
    }

    /// Calls `f` with every key and its value, shard by shard under each shard's read lock
    /// (what a replica's snapshot is built from: writes of other shards go on meanwhile, so
    /// call it where no write is applied concurrently).
    pub fn for_each_entry(&self, mut f: impl FnMut(&[u8], &Value)) {
        for shard in self.shards.iter() {
            read(shard).iter().for_each(|(k, v)| f(k, v));
        }
    }

    /// Deletes every key (a replica about to install a snapshot).
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let old = std::mem::take(&mut *write(shard));
            old.iter().for_each(|(_, v)| self.release(v.footprint()));
        }
    }

    /// Checks that values of `len` bytes in all fit one response.
    pub fn check_response(&self, len: usize) -> Result<(), StoreError> {
        if len > self.config.max_value_len {
            return Err(StoreError::ResponseTooLarge {
                len,
                limit: self.config.max_value_len,
            });
        }
        Ok(())
    }

    /// Checks the number of keys of one request.
    pub fn check_keys(&self, n: usize) -> Result<(), StoreError> {
        if n > self.config.max_keys {
            return Err(self.too_large("keys in a request", n, self.config.max_keys));
        }
        Ok(())
    }

    pub(crate) fn check_key(&self, key: &[u8]) -> Result<(), StoreError> {
        if key.len() > self.config.max_key_len {
            return Err(self.too_large("key length", key.len(), self.config.max_key_len));
        }
        Ok(())
    }

    pub(crate) fn check_value(&self, len: usize) -> Result<(), StoreError> {
        if len > self.config.max_value_len {
            return Err(self.too_large("value length", len, self.config.max_value_len));
        }
        Ok(())
    }

    pub(crate) fn check_parts(&self, n: usize) -> Result<(), StoreError> {
        if n == 0 || n > self.config.max_parts {
            return Err(self.too_large("buffers in a value", n, self.config.max_parts));
        }
        Ok(())
    }

    fn too_large(&self, what: &'static str, len: usize, limit: usize) -> StoreError {
        StoreError::TooLarge { what, len, limit }
    }

    /// Takes `bytes` of the memory limit, or fails with [`StoreError::Full`].
    fn reserve(&self, bytes: usize) -> Result<(), StoreError> {
        let limit = self.config.max_bytes;
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&n| n <= limit)
            })
            .map(|_| ())
            .map_err(|used| StoreError::Full {
                used,
                limit,
                wanted: bytes,
            })
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// The pool refused an allocation the limit allowed: the pool is smaller than the limit
    /// plus what the transports hold.
    pub(crate) fn pool_full(&self, e: PoolError, wanted: usize) -> StoreError {
        match e {
            PoolError::TooLarge { .. } => self.too_large("value length", wanted, self.pool.max_class()),
            _ => StoreError::Full {
                used: self.used_bytes(),
                limit: self.config.max_bytes,
                wanted,
            },
        }
    }
}

fn read(lock: &RwLock<Map>) -> std::sync::RwLockReadGuard<'_, Map> {
    // A panic while holding a shard leaves the map itself consistent (inserts and removals are
    // single calls), so a poisoned lock is still usable.
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(lock: &RwLock<Map>) -> std::sync::RwLockWriteGuard<'_, Map> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
