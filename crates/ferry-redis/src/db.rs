//! One database: a map from keys to [`Value`]s (strings, lists, hashes, sets) whose
//! bytes live in the pool, with per-key deadlines, lazy and active expiry, `SCAN` cursors and a
//! memory estimate. Hashes and sets are changed through a [`CollMut`] handle, which keeps the
//! estimate in step and deletes a collection left empty.
//!
//! Layout: the keys' records live in a slab (`slots`, a `Vec` with a free list) and a
//! hashbrown [`HashTable`] of slab indices finds them (foldhash, seeded per process: keys come
//! from clients). A record never moves while its key exists, so a slab index is a stable
//! `SCAN` cursor, and the index of keys with a deadline (`ttl`, for active expiry's random
//! sampling) points at records directly.
//!
//! ```text
//!   table: HashTable<usize> ──► slots[i]: Slot { key, value, deadline, hash, ttl_pos }
//!                                   ▲                                          │
//!   ttl: Vec<usize> ────────────────┘ (keys with a deadline) ◄─────────────────┘
//! ```
//!
//! What it is not: thread-safe by itself (one loop owns it, or the server wraps it in a lock),
//! evicting (writes past `maxmemory` are refused by [`execute`](crate::cmd::execute)), or
//! persistent by itself ([`crate::rdb`] snapshots it; [`Db::entries`] is what a snapshot reads,
//! [`Db::changes`] counts writes as Redis's `dirty`, [`Db::log_expired`] keeps the keys
//! expiry deletes for the replication stream, and [`Db::log_touched`] the keys commands change
//! for keyspace notifications).
//!
//! `WATCH`: a database counts the changes of the keys clients watch in it ([`Db::watch`]):
//! every path that writes or deletes a record (set, replace, deadline, list and collection
//! handles, expiry, flush, swap) counts one for its key, at the cost of one check of an empty
//! map when nothing is watched.
//!
//! Expiry follows Redis: a key is expired when `now_ms > deadline`. Every lookup deletes a key
//! past its deadline first (lazy expiry; it counts in [`DbStats::expired_keys`]), and
//! [`Db::active_expire`] samples keys with a deadline to reclaim the ones nobody reads.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::hash::BuildHasher;

use ferry_buf::{Pool, SharedBuf};
use hashbrown::HashTable;

use crate::fields::FieldTable;
use crate::zset::ZSet;
use hashbrown::hash_table::Entry;

/// A stored value.
#[derive(Debug, Clone)]
pub enum Value {
    /// A string.
    Str(SharedBuf),
    /// A list.
    List(VecDeque<SharedBuf>),
    /// A hash: field names to values.
    Hash(FieldTable<SharedBuf>),
    /// A set of members.
    Set(FieldTable<()>),
    /// A sorted set.
    ZSet(ZSet),
}

/// The collection types a [`CollMut`] handle changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`Value::Hash`].
    Hash,
    /// [`Value::Set`].
    Set,
    /// [`Value::ZSet`].
    ZSet,
}

impl Kind {
    fn empty(self) -> Value {
        match self {
            Kind::Hash => Value::Hash(FieldTable::default()),
            Kind::Set => Value::Set(FieldTable::default()),
            Kind::ZSet => Value::ZSet(ZSet::default()),
        }
    }

    fn of(value: &Value) -> Option<Kind> {
        match value {
            Value::Hash(_) => Some(Kind::Hash),
            Value::Set(_) => Some(Kind::Set),
            Value::ZSet(_) => Some(Kind::ZSet),
            Value::Str(_) | Value::List(_) => None,
        }
    }
}

impl Value {
    /// Redis's name for the value's type (`TYPE`, `SCAN ... TYPE`): `string`, `list`,
    /// `hash` or `set`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// The value's share of [`Db::used_memory`]: its bytes, plus
    /// [`LIST_ITEM_OVERHEAD`] per list element and
    /// [`ENTRY_OVERHEAD`](crate::fields::ENTRY_OVERHEAD) per hash field or set member
    /// (O(1) for those: their tables keep the sum).
    pub fn memory(&self) -> usize {
        match self {
            Value::Str(b) => b.len(),
            Value::List(items) => items.iter().map(|b| b.len() + LIST_ITEM_OVERHEAD).sum(),
            Value::Hash(t) => t.memory(),
            Value::Set(t) => t.memory(),
            Value::ZSet(z) => z.memory(),
        }
    }

    /// The hash, if it is one.
    pub fn as_hash(&self) -> Option<&FieldTable<SharedBuf>> {
        match self {
            Value::Hash(h) => Some(h),
            _ => None,
        }
    }

    /// The set, if it is one.
    pub fn as_set(&self) -> Option<&FieldTable<()>> {
        match self {
            Value::Set(s) => Some(s),
            _ => None,
        }
    }

    /// The sorted set, if it is one.
    pub fn as_zset(&self) -> Option<&ZSet> {
        match self {
            Value::ZSet(z) => Some(z),
            _ => None,
        }
    }

    /// Whether it is a collection with nothing in it (never stored: Redis deletes the key).
    fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::List(items) => items.is_empty(),
            Value::Hash(t) => t.is_empty(),
            Value::Set(t) => t.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }
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

/// What each key costs in [`Db::used_memory`] besides its bytes and its value's (Redis's
/// dictEntry, robj and sds headers come to about this).
pub const KEY_OVERHEAD: usize = 64;

/// What each list element costs in [`Db::used_memory`] besides its bytes.
pub const LIST_ITEM_OVERHEAD: usize = 16;

/// Keys sampled per round of [`Db::active_expire`] (Redis's
/// `ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
pub const EXPIRE_SAMPLE: usize = 20;

/// Most keys [`Db::active_expire`] samples in one call: it bounds the work of one cycle.
pub const EXPIRE_MAX_SAMPLES: usize = 200;

/// How a lookup counts in [`DbStats`]: Redis's `lookupKeyRead` counts a hit or a miss,
/// `lookupKeyWrite` does not. Both delete a key past its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A read (`GET`, `EXISTS`, `TTL`, `LRANGE`, ...): counts a hit or a miss.
    Read,
    /// A lookup before a write (`SET NX`, `INCR`, `EXPIRE`, `LPOP`, ...): not counted.
    Write,
    /// A look at the key itself (`OBJECT`, `DEBUG OBJECT`): counts a hit or a miss, but does
    /// not count as an access for the idle time (Redis's `LOOKUP_NOTOUCH`).
    Inspect,
}

/// What [`Db::set`] does with the key's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// The key has no deadline afterwards (plain `SET`, `MSET`, `GETSET`).
    Clear,
    /// An existing key keeps its deadline (`SET ... KEEPTTL`); a new key has none.
    Keep,
    /// The key expires after this unix-millisecond deadline.
    At(u64),
}

/// When [`Db::set`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetIf {
    /// Always.
    Always,
    /// Only if the key does not exist (`NX`).
    Absent,
    /// Only if the key exists (`XX`).
    Present,
}

/// The key holds a value of another type than the operation needs (Redis's `WRONGTYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// `deadline` of a key without one: past any real deadline (those fit in an `i64`), so the
/// expiry test `now > deadline` needs no separate "has a deadline" branch.
const NO_DEADLINE: u64 = u64::MAX;

/// One key's record.
#[derive(Debug)]
struct Slot {
    key: Box<[u8]>,
    value: Value,
    /// Unix milliseconds after which the key is expired; [`NO_DEADLINE`] if none.
    deadline: u64,
    /// The key's hash (to find its table entry, and to rehash without rereading keys).
    hash: u64,
    /// Position in `Db::ttl` when the key has a deadline.
    ttl_pos: usize,
    /// When a command last looked the key up or wrote it (unix milliseconds; `OBJECT
    /// IDLETIME`).
    accessed_ms: u64,
}

/// A key some clients `WATCH`: how many, and how many times it changed since it was first
/// watched.
#[derive(Debug, Clone, Copy, Default)]
struct Watch {
    watchers: u32,
    changes: u64,
}

/// What a key was when a client watched it ([`Db::watch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchMark {
    changes: u64,
    /// Stored and live.
    live: bool,
    /// Stored but past its deadline (Redis's "stale" watched key).
    stale: bool,
}

/// The keyspace.
#[derive(Debug)]
pub struct Db {
    pool: Pool,
    keep_in_place_min: usize,
    hasher: foldhash::fast::RandomState,
    /// Slab indices of the live records, found by key hash.
    table: HashTable<usize>,
    /// The records; `None` for a free index (listed in `free`).
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Slab indices of the keys with a deadline (each record knows its position here).
    ttl: Vec<usize>,
    used_memory: usize,
    stats: DbStats,
    /// Active expiry's sampling, and the seed of [`Db::rng`].
    rng: Rng,
    /// The keys clients `WATCH` in this database (it stays with the index on `SWAPDB`).
    watched: HashMap<Box<[u8]>, Watch>,
    /// Writes so far (Redis's `dirty`): every change of a key by a command, not expiry.
    changes: u64,
    /// Keys deleted because their deadline passed, while someone listens ([`Db::log_expired`]).
    expired_log: Option<Vec<Box<[u8]>>>,
    /// Keys commands changed, while keyspace notifications listen ([`Db::log_touched`]).
    touched_log: Option<Vec<Box<[u8]>>>,
}

impl Db {
    /// An empty keyspace whose values live in `pool`; a `SET` value at least
    /// `keep_in_place_min` bytes long that arrived whole is kept in its read buffer.
    pub fn new(pool: Pool, keep_in_place_min: usize) -> Db {
        let hasher = foldhash::fast::RandomState::default();
        let rng = Rng(hasher.hash_one(0x5eed_u64) | 1);
        Db {
            pool,
            keep_in_place_min,
            hasher,
            table: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
            ttl: Vec::new(),
            used_memory: 0,
            stats: DbStats::default(),
            rng,
            watched: HashMap::new(),
            changes: 0,
            expired_log: None,
            touched_log: None,
        }
    }

    /// The pool values live in.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The length from which a `SET` value is kept in the read buffer it arrived in.
    pub fn keep_in_place_min(&self) -> usize {
        self.keep_in_place_min
    }

    /// Keys stored (`DBSIZE`), including expired ones not reclaimed yet, as in Redis.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Keys with a deadline (`INFO keyspace`'s `expires`).
    pub fn expires(&self) -> usize {
        self.ttl.len()
    }

    /// Redis-like memory estimate: over all keys, key bytes + value bytes + [`KEY_OVERHEAD`]
    /// + [`LIST_ITEM_OVERHEAD`] per list element. Kept up to date by every change.
    pub fn used_memory(&self) -> usize {
        self.used_memory
    }

    /// Deletes every key (`FLUSHDB`, `FLUSHALL`) and releases the keyspace's memory. The
    /// statistics stay, as in Redis.
    pub fn flush(&mut self) {
        self.changes += self.table.len() as u64;
        self.touch_stored(None);
        self.table = HashTable::new();
        self.slots = Vec::new();
        self.free = Vec::new();
        self.ttl = Vec::new();
        self.used_memory = 0;
    }

    /// Exchanges the keys (values, deadlines, memory estimate) with `other` (`SWAPDB`). The
    /// statistics and the watched keys stay: they belong to the database index. A watched key
    /// stored in either database counts as changed.
    pub fn swap_contents(&mut self, other: &mut Db) {
        self.changes += 1;
        other.changes += 1;
        self.touch_stored(Some(other));
        other.touch_stored(Some(self));
        std::mem::swap(&mut self.table, &mut other.table);
        std::mem::swap(&mut self.slots, &mut other.slots);
        std::mem::swap(&mut self.free, &mut other.free);
        std::mem::swap(&mut self.ttl, &mut other.ttl);
        std::mem::swap(&mut self.used_memory, &mut other.used_memory);
        std::mem::swap(&mut self.hasher, &mut other.hasher);
    }

    /// Hit, miss and expiry counters.
    pub fn stats(&self) -> DbStats {
        self.stats
    }

    /// Writes so far (Redis's `dirty`): grows with every change a command makes to a key
    /// (a flush counts its keys), not with expiry. A command changed the database if this
    /// moved while it ran.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Starts (`true`) or stops keeping the keys expiry deletes, for
    /// [`take_expired`](Self::take_expired): a replication stream propagates each as a `DEL`.
    pub fn log_expired(&mut self, on: bool) {
        if on != self.expired_log.is_some() {
            self.expired_log = on.then(Vec::new);
        }
    }

    /// The keys expiry deleted since the last call (none unless
    /// [`log_expired`](Self::log_expired) is on).
    pub fn take_expired(&mut self) -> Vec<Box<[u8]>> {
        self.expired_log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Starts (`true`) or stops keeping the keys commands change, for
    /// [`take_touched`](Self::take_touched): keyspace notifications name each.
    pub fn log_touched(&mut self, on: bool) {
        if on != self.touched_log.is_some() {
            self.touched_log = on.then(Vec::new);
        }
    }

    /// The keys commands changed since the last call, in order, a key once per change (none
    /// unless [`log_touched`](Self::log_touched) is on).
    pub fn take_touched(&mut self) -> Vec<Box<[u8]>> {
        self.touched_log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// One active expiry cycle (Redis's `activeExpireCycle`, simplified): samples
    /// [`EXPIRE_SAMPLE`] random keys among those with a deadline, deletes the expired ones,
    /// and repeats while more than a quarter of a sample was expired, up to
    /// [`EXPIRE_MAX_SAMPLES`] samples in all. Returns the keys deleted.
    pub fn active_expire(&mut self, now_ms: u64) -> usize {
        let mut deleted = 0;
        let mut sampled = 0;
        while !self.ttl.is_empty() && sampled < EXPIRE_MAX_SAMPLES {
            let round = EXPIRE_SAMPLE.min(self.ttl.len());
            let mut expired = 0;
            for _ in 0..round {
                if self.ttl.is_empty() {
                    break;
                }
                let pos = self.random_below(self.ttl.len());
                let i = self.ttl[pos];
                if now_ms > self.slot(i).deadline {
                    self.expire_at(i);
                    expired += 1;
                }
            }
            sampled += round;
            deleted += expired;
            if expired * 4 <= round {
                break;
            }
        }
        deleted
    }

    /// The value of `key` for a read command (`GET`, `MGET`, `LRANGE`, ...): counts a hit or
    /// a miss; a key past its deadline is deleted and missed. One hash, no allocation.
    #[inline]
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Value> {
        let i = self.lookup(key, now_ms, Access::Read)?;
        Some(&self.slot(i).value)
    }

    /// The value of `key` if it is live, without counting the read or expiring it: for a
    /// command that reads several keys at once after looking each up with [`get`](Self::get).
    pub fn peek(&self, key: &[u8], now_ms: u64) -> Option<&Value> {
        let slot = self.slot(self.find_index(key)?);
        (now_ms <= slot.deadline).then_some(&slot.value)
    }

    /// The deadline of `key` if it is live: `Some(None)` without one, `None` if there is no
    /// such key (nothing is counted or expired).
    pub fn deadline_of(&self, key: &[u8], now_ms: u64) -> Option<Option<u64>> {
        let slot = self.slot(self.find_index(key)?);
        (now_ms <= slot.deadline).then_some((slot.deadline != NO_DEADLINE).then_some(slot.deadline))
    }

    /// Registers a watcher of `key` (`WATCH`) and returns what the key is now, to compare
    /// with [`watch_changed`](Self::watch_changed) at `EXEC`. Nothing is counted or expired.
    pub fn watch(&mut self, key: &[u8], now_ms: u64) -> WatchMark {
        let w = self.watched.entry(key.into()).or_default();
        w.watchers += 1;
        let changes = w.changes;
        let deadline = self.find_index(key).map(|i| self.slot(i).deadline);
        WatchMark {
            changes,
            live: deadline.is_some_and(|d| now_ms <= d),
            stale: deadline.is_some_and(|d| now_ms > d),
        }
    }

    /// Unregisters a watcher of `key` (`UNWATCH`, `EXEC`, `DISCARD`, a client leaving).
    pub fn unwatch(&mut self, key: &[u8]) {
        if let Some(w) = self.watched.get_mut(key) {
            w.watchers -= 1;
            if w.watchers == 0 {
                self.watched.remove(key);
            }
        }
    }

    /// Whether `key` changed since `mark` was taken, as Redis's `EXEC` sees it: any write,
    /// deletion, flush or swap of it, or its deadline passing; a key already past its deadline
    /// when watched changed only if it is live again.
    pub fn watch_changed(&self, key: &[u8], mark: WatchMark, now_ms: u64) -> bool {
        let live = self
            .find_index(key)
            .is_some_and(|i| now_ms <= self.slot(i).deadline);
        if mark.stale {
            return live;
        }
        let changes = self.watched.get(key).map_or(0, |w| w.changes);
        changes != mark.changes || (mark.live && !live)
    }

    /// Counts a change of `key` for its watchers, and in [`changes`](Self::changes).
    fn touch(&mut self, key: &[u8]) {
        self.changes += 1;
        if let Some(log) = &mut self.touched_log {
            log.push(key.into());
        }
        if !self.watched.is_empty() {
            if let Some(w) = self.watched.get_mut(key) {
                w.changes += 1;
            }
        }
    }

    /// Counts a change of record `i`'s key for its watchers, and in [`changes`](Self::changes).
    fn touch_at(&mut self, i: usize) {
        self.changes += 1;
        if let Some(log) = &mut self.touched_log {
            log.push(self.slots[i].as_ref().expect("a live slot").key.clone());
        }
        if !self.watched.is_empty() {
            let key = &self.slots[i].as_ref().expect("a live slot").key;
            if let Some(w) = self.watched.get_mut(key) {
                w.changes += 1;
            }
        }
    }

    /// Counts a change of every watched key stored here (`FLUSHDB`) or in `other` (`SWAPDB`).
    fn touch_stored(&mut self, other: Option<&Db>) {
        let stored = |db: &Db, key: &[u8]| db.find_index(key).is_some();
        let touched: Vec<Box<[u8]>> = self
            .watched
            .keys()
            .filter(|k| stored(self, k) || other.is_some_and(|o| stored(o, k)))
            .cloned()
            .collect();
        for key in touched {
            self.touch(&key);
        }
    }

    /// The slab index of `key` if it is stored (live or not).
    fn find_index(&self, key: &[u8]) -> Option<usize> {
        let slots = &self.slots;
        self.table
            .find(
                self.hasher.hash_one(key),
                |&i| matches!(&slots[i], Some(s) if *s.key == *key),
            )
            .copied()
    }

    /// The live key `key`, as a handle to read or change it (value, deadline, removal).
    pub fn find(&mut self, key: &[u8], now_ms: u64, access: Access) -> Option<EntryMut<'_>> {
        let i = self.lookup(key, now_ms, access)?;
        Some(EntryMut { db: self, i })
    }

    /// Whether `key` exists (`EXISTS`: counts a hit or a miss, but is not an access).
    pub fn contains(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.lookup(key, now_ms, Access::Inspect).is_some()
    }

    /// A random live key (`RANDOMKEY`); expired keys met on the way are deleted.
    pub fn random_key(&mut self, now_ms: u64) -> Option<Box<[u8]>> {
        while !self.table.is_empty() {
            // Random slab positions first; a sparse slab falls back to the next live record.
            let start = self.random_below(self.slots.len());
            let i = (start..self.slots.len())
                .chain(0..start)
                .find(|&i| self.slots[i].is_some())?;
            if now_ms > self.slot(i).deadline {
                self.expire_at(i);
                continue;
            }
            return Some(self.slot(i).key.clone());
        }
        None
    }

    /// `SET`: stores `value` at `key` whatever was there (any type), with the deadline `ttl`
    /// says, if `cond` holds. Returns whether it stored. One hash.
    ///
    /// A key past its deadline counts as absent (it is expired first, as Redis's
    /// `lookupKeyWrite` would), so `Ttl::Keep` does not revive its deadline.
    pub fn set(&mut self, key: &[u8], value: Value, ttl: Ttl, cond: SetIf, now_ms: u64) -> bool {
        let hash = self.hasher.hash_one(key);
        let slots = &self.slots;
        let entry = self.table.entry(
            hash,
            |&i| matches!(&slots[i], Some(s) if *s.key == *key),
            |&i| slots[i].as_ref().map_or(0, |s| s.hash),
        );
        match entry {
            Entry::Occupied(e) => {
                let i = *e.get();
                let expired = now_ms > self.slot(i).deadline;
                let present = !expired;
                if (cond == SetIf::Absent && present) || (cond == SetIf::Present && !present) {
                    if expired {
                        self.expire_at(i);
                    }
                    return false;
                }
                if expired {
                    self.stats.expired_keys += 1;
                    let key = self.slot(i).key.clone();
                    if let Some(log) = &mut self.expired_log {
                        log.push(key);
                    }
                }
                let add = value.memory();
                let slot = self.slot_mut(i);
                slot.accessed_ms = now_ms;
                let old = std::mem::replace(&mut slot.value, value);
                self.touch_at(i);
                self.used_memory = self.used_memory - old.memory() + add;
                let deadline = match ttl {
                    Ttl::Clear => NO_DEADLINE,
                    Ttl::Keep if expired => NO_DEADLINE,
                    Ttl::Keep => self.slot(i).deadline,
                    Ttl::At(d) => d,
                };
                self.set_deadline_at(i, deadline);
                drop(old);
                true
            }
            Entry::Vacant(e) => {
                if cond == SetIf::Present {
                    return false;
                }
                let i = self.free.pop().unwrap_or(self.slots.len());
                e.insert(i);
                self.fill(i, key, hash, value, now_ms);
                if let Ttl::At(d) = ttl {
                    self.set_deadline_at(i, d);
                }
                true
            }
        }
    }

    /// Deletes `key` (`DEL`); whether it was there (a key past its deadline was not: it is
    /// expired and counted as such).
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> bool {
        match self.lookup(key, now_ms, Access::Write) {
            Some(i) => {
                self.remove_at(i);
                true
            }
            None => false,
        }
    }

    /// The list at `key`, to change (`LPOP`, `LSET`, `LTRIM`; not counted in the statistics):
    /// `Ok(None)` if there is no such key, `Err(WrongType)` if it holds a string.
    pub fn list(&mut self, key: &[u8], now_ms: u64) -> Result<Option<ListMut<'_>>, WrongType> {
        match self.find(key, now_ms, Access::Write) {
            None => Ok(None),
            Some(e) => e.into_list().map(Some),
        }
    }

    /// The list at `key`, created empty if there is no such key (`LPUSH`, `RPUSH`); an empty
    /// list left when the handle drops is deleted. `Err(WrongType)` if it holds a string.
    pub fn list_or_insert(&mut self, key: &[u8], now_ms: u64) -> Result<ListMut<'_>, WrongType> {
        let i = self.find_or_insert(key, now_ms, || Value::List(VecDeque::new()));
        EntryMut { db: self, i }.into_list()
    }

    /// The hash or set (`kind`) at `key`, to change (not counted in the statistics):
    /// `Ok(None)` if there is no such key, `Err(WrongType)` if it holds another type.
    pub fn collection(
        &mut self,
        key: &[u8],
        now_ms: u64,
        kind: Kind,
    ) -> Result<Option<CollMut<'_>>, WrongType> {
        match self.lookup(key, now_ms, Access::Write) {
            None => Ok(None),
            Some(i) => CollMut::new(self, i, kind).map(Some),
        }
    }

    /// The hash or set (`kind`) at `key`, created empty if there is no such key (`HSET`,
    /// `SADD`); a collection left empty when the handle drops is deleted.
    pub fn collection_or_insert(
        &mut self,
        key: &[u8],
        now_ms: u64,
        kind: Kind,
    ) -> Result<CollMut<'_>, WrongType> {
        let i = self.find_or_insert(key, now_ms, || kind.empty());
        CollMut::new(self, i, kind)
    }

    /// The slab index of live `key` (a write lookup), or of a new record holding `empty()`.
    fn find_or_insert(&mut self, key: &[u8], now_ms: u64, empty: impl FnOnce() -> Value) -> usize {
        let hash = self.hasher.hash_one(key);
        match self.lookup_hashed(key, hash, now_ms, Access::Write) {
            Some(i) => i,
            None => {
                let i = self.free.pop().unwrap_or(self.slots.len());
                let slots = &self.slots;
                self.table
                    .insert_unique(hash, i, |&j| slots[j].as_ref().map_or(0, |s| s.hash));
                self.fill(i, key, hash, empty(), now_ms);
                i
            }
        }
    }

    /// Every live key and its value, in slab order (`KEYS`). Keys past their deadline are
    /// skipped, not deleted (as Redis's `KEYS` does).
    pub fn iter(&self, now_ms: u64) -> impl Iterator<Item = (&[u8], &Value)> + '_ {
        self.slots
            .iter()
            .flatten()
            .filter(move |s| now_ms <= s.deadline)
            .map(|s| (&*s.key, &s.value))
    }

    /// Every live key with its value and deadline (unix milliseconds), in slab order: what a
    /// snapshot ([`crate::rdb::Snapshot::take`]) or a rewrite copies.
    pub fn entries(&self, now_ms: u64) -> impl Iterator<Item = (&[u8], &Value, Option<u64>)> + '_ {
        self.slots
            .iter()
            .flatten()
            .filter(move |s| now_ms <= s.deadline)
            .map(|s| {
                (
                    &*s.key,
                    &s.value,
                    (s.deadline != NO_DEADLINE).then_some(s.deadline),
                )
            })
    }

    /// One `SCAN` step from `cursor`: calls `visit` with each live key it examines, up to
    /// `count` keys (and at most `10 * count` slab positions), deletes the expired keys it
    /// meets, and returns the next cursor (0 when the scan is complete).
    ///
    /// The cursor is a slab index, and a key's record never moves while the key exists: a key
    /// present for the whole scan is visited exactly once, whatever the table does in between
    /// (growth, rehashing). Keys added during a scan may or may not be visited. A cursor past
    /// the end (or from another server) ends the scan. As in Redis, a scan is sure to end only
    /// if the keyspace stays bounded: deleted keys' slots are reused before the slab grows.
    pub fn scan(
        &mut self,
        cursor: u64,
        count: usize,
        now_ms: u64,
        mut visit: impl FnMut(&[u8], &Value),
    ) -> u64 {
        let Ok(mut i) = usize::try_from(cursor) else {
            return 0;
        };
        let count = count.max(1);
        let max_steps = count.saturating_mul(10);
        let (mut examined, mut steps) = (0, 0);
        while i < self.slots.len() && examined < count && steps < max_steps {
            steps += 1;
            let expired = match &self.slots[i] {
                None => false,
                Some(s) => {
                    examined += 1;
                    let expired = now_ms > s.deadline;
                    if !expired {
                        visit(&s.key, &s.value);
                    }
                    expired
                }
            };
            if expired {
                self.expire_at(i);
            }
            i += 1;
        }
        if i >= self.slots.len() { 0 } else { i as u64 }
    }

    // ---- internals ----

    /// Finds `key`, expiring it if its deadline passed, and counts the read.
    #[inline]
    fn lookup(&mut self, key: &[u8], now_ms: u64, access: Access) -> Option<usize> {
        let hash = self.hasher.hash_one(key);
        self.lookup_hashed(key, hash, now_ms, access)
    }

    #[inline]
    fn lookup_hashed(&mut self, key: &[u8], hash: u64, now_ms: u64, access: Access) -> Option<usize> {
        let slots = &self.slots;
        let found = self
            .table
            .find(hash, |&i| matches!(&slots[i], Some(s) if *s.key == *key))
            .copied();
        let live = match found {
            Some(i) if now_ms > self.slot(i).deadline => {
                self.expire_at(i);
                None
            }
            other => other,
        };
        if let Some(i) = live {
            if access != Access::Inspect {
                self.slot_mut(i).accessed_ms = now_ms;
            }
        }
        if access != Access::Write {
            match live {
                Some(_) => self.stats.keyspace_hits += 1,
                None => self.stats.keyspace_misses += 1,
            }
        }
        live
    }

    fn slot(&self, i: usize) -> &Slot {
        self.slots[i]
            .as_ref()
            .expect("the table and ttl index hold live slots only")
    }

    /// Record `i`, to change its value: the change is counted for its watchers (a handle
    /// that only reads does not call this).
    fn changing(&mut self, i: usize) -> &mut Slot {
        self.touch_at(i);
        self.slot_mut(i)
    }

    fn slot_mut(&mut self, i: usize) -> &mut Slot {
        self.slots[i]
            .as_mut()
            .expect("the table and ttl index hold live slots only")
    }

    /// Writes a new record at slab index `i` (already in the table, taken from `free` or the
    /// end of the slab), without a deadline.
    fn fill(&mut self, i: usize, key: &[u8], hash: u64, value: Value, now_ms: u64) {
        self.used_memory += key.len() + KEY_OVERHEAD + value.memory();
        let slot = Some(Slot {
            key: key.into(),
            value,
            deadline: NO_DEADLINE,
            hash,
            ttl_pos: 0,
            accessed_ms: now_ms,
        });
        if i == self.slots.len() {
            self.slots.push(slot);
        } else {
            debug_assert!(self.slots[i].is_none());
            self.slots[i] = slot;
        }
        self.touch(key);
    }

    /// Deletes record `i` because its deadline passed: counted in the statistics and logged
    /// for a replication stream, but not as a write in [`changes`](Self::changes) (as Redis
    /// does not count expiry in `dirty`).
    fn expire_at(&mut self, i: usize) {
        let changes = self.changes;
        let touched = self.touched_log.as_ref().map(Vec::len);
        let key = self.expired_log.is_some().then(|| self.slot(i).key.clone());
        self.remove_at(i);
        self.changes = changes;
        // Expiry is not a command's change.
        if let (Some(log), Some(n)) = (&mut self.touched_log, touched) {
            log.truncate(n);
        }
        self.stats.expired_keys += 1;
        if let (Some(log), Some(key)) = (&mut self.expired_log, key) {
            log.push(key);
        }
    }

    /// Deletes the record at `i` from the table, the ttl index and the slab.
    fn remove_at(&mut self, i: usize) -> Value {
        let slot = self.slots[i].take().expect("removing a live slot");
        match self.table.find_entry(slot.hash, |&j| j == i) {
            Ok(e) => {
                e.remove();
            }
            Err(_) => debug_assert!(false, "slot {i} missing from the table"),
        }
        if slot.deadline != NO_DEADLINE {
            self.ttl_unlink(slot.ttl_pos);
        }
        self.free.push(i);
        self.used_memory -= slot.key.len() + KEY_OVERHEAD + slot.value.memory();
        self.touch(&slot.key);
        slot.value
    }

    /// Sets the deadline of record `i` ([`NO_DEADLINE`]: none), keeping the ttl index in step.
    fn set_deadline_at(&mut self, i: usize, deadline: u64) {
        let (had, pos) = {
            let s = self.slot(i);
            (s.deadline != NO_DEADLINE, s.ttl_pos)
        };
        match (had, deadline != NO_DEADLINE) {
            (false, true) => {
                let pos = self.ttl.len();
                self.ttl.push(i);
                self.slot_mut(i).ttl_pos = pos;
            }
            (true, false) => self.ttl_unlink(pos),
            _ => {}
        }
        self.slot_mut(i).deadline = deadline;
        self.touch_at(i);
    }

    /// Removes position `pos` of the ttl index (swap-remove; the moved record learns its new
    /// position).
    fn ttl_unlink(&mut self, pos: usize) {
        self.ttl.swap_remove(pos);
        if let Some(&moved) = self.ttl.get(pos) {
            self.slot_mut(moved).ttl_pos = pos;
        }
    }

    /// A random number below `n` (`n > 0`).
    fn random_below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    /// A random number generator of its own, seeded from the keyspace's (for commands that
    /// pick at random while they read a value: `HRANDFIELD`, `SRANDMEMBER`, `SPOP`).
    pub fn rng(&mut self) -> Rng {
        Rng(self.rng.next() | 1)
    }
}

/// xorshift64* (state never 0): random picks, not cryptography.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (tests; [`Db::rng`] gives the server's).
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A random number below `n` (`n > 0`), scaled by a widening multiply.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// A live key, found by [`Db::find`]: read or change its value and deadline, or delete it.
#[derive(Debug)]
pub struct EntryMut<'a> {
    db: &'a mut Db,
    i: usize,
}

impl<'a> EntryMut<'a> {
    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.db.slot(self.i).key
    }

    /// The value.
    pub fn value(&self) -> &Value {
        &self.db.slot(self.i).value
    }

    /// Milliseconds from the key's last access to `now_ms` (`OBJECT IDLETIME`).
    pub fn idle_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.db.slot(self.i).accessed_ms)
    }

    /// The value, for as long as the keyspace stays borrowed.
    pub fn into_value(self) -> &'a Value {
        &self.db.slot(self.i).value
    }

    /// The pool (to build a new value from the old one).
    pub fn pool(&self) -> &Pool {
        &self.db.pool
    }

    /// The key's deadline in unix milliseconds, if it has one.
    pub fn deadline(&self) -> Option<u64> {
        let d = self.db.slot(self.i).deadline;
        (d != NO_DEADLINE).then_some(d)
    }

    /// Sets (`Some`) or removes (`None`) the key's deadline (unix milliseconds, at most
    /// `i64::MAX` as in Redis; `u64::MAX` would read as "none"). A deadline already past is
    /// stored as given: the next access expires the key (callers that must delete at once,
    /// like `EXPIRE`, call [`remove`](Self::remove) instead).
    pub fn set_deadline(&mut self, deadline: Option<u64>) {
        self.db.set_deadline_at(self.i, deadline.unwrap_or(NO_DEADLINE));
    }

    /// Replaces the value, keeping the key's deadline (`APPEND`, `INCR`). Returns the old one.
    pub fn replace(&mut self, value: Value) -> Value {
        let add = value.memory();
        let old = std::mem::replace(&mut self.db.changing(self.i).value, value);
        self.db.used_memory = self.db.used_memory - old.memory() + add;
        old
    }

    /// Deletes the key; returns its value.
    pub fn remove(self) -> Value {
        self.db.remove_at(self.i)
    }

    /// The value as a list to change, or `Err(WrongType)` for a string.
    pub fn into_list(self) -> Result<ListMut<'a>, WrongType> {
        match self.db.slot(self.i).value {
            Value::List(_) => Ok(ListMut {
                db: self.db,
                i: self.i,
            }),
            _ => Err(WrongType),
        }
    }
}

/// A hash or set being changed, through [`hash`](Self::hash) or [`set`](Self::set). The
/// memory estimate is brought up to date when the handle drops (the tables keep their own
/// sums, so that is O(1)), and the key is deleted then if the collection is empty.
///
/// For `WATCH`, the key counts as changed when the handle drops if its size changed (a
/// member or field added or removed, a value of another length) or the caller said so with
/// [`changed`](Self::changed) (a value or score replaced in place).
#[derive(Debug)]
pub struct CollMut<'a> {
    db: &'a mut Db,
    i: usize,
    /// The value's memory when the handle was made.
    before: usize,
    /// Whether [`changed`](Self::changed) was called.
    changed: bool,
}

impl<'a> CollMut<'a> {
    fn new(db: &'a mut Db, i: usize, kind: Kind) -> Result<CollMut<'a>, WrongType> {
        let value = &db.slot(i).value;
        if Kind::of(value) != Some(kind) {
            return Err(WrongType);
        }
        let before = value.memory();
        Ok(CollMut {
            db,
            i,
            before,
            changed: false,
        })
    }

    /// The pool (to copy new names and values into).
    pub fn pool(&self) -> &Pool {
        &self.db.pool
    }

    /// The length from which a name or value is kept in the read buffer it arrived in.
    pub fn keep_in_place_min(&self) -> usize {
        self.db.keep_in_place_min
    }

    /// Says that the collection changed (for `WATCH`) where its size may not show it.
    pub fn changed(&mut self) {
        self.changed = true;
    }

    /// The hash.
    ///
    /// # Panics
    /// If the handle was made for a set.
    pub fn hash(&mut self) -> &mut FieldTable<SharedBuf> {
        match &mut self.db.slot_mut(self.i).value {
            Value::Hash(t) => t,
            _ => panic!("CollMut::hash on a handle made for a set"),
        }
    }

    /// The set.
    ///
    /// # Panics
    /// If the handle was made for another type.
    pub fn set(&mut self) -> &mut FieldTable<()> {
        match &mut self.db.slot_mut(self.i).value {
            Value::Set(t) => t,
            _ => panic!("CollMut::set on a handle made for another type"),
        }
    }

    /// The sorted set.
    ///
    /// # Panics
    /// If the handle was made for another type.
    pub fn zset(&mut self) -> &mut ZSet {
        match &mut self.db.slot_mut(self.i).value {
            Value::ZSet(z) => z,
            _ => panic!("CollMut::zset on a handle made for another type"),
        }
    }
}

impl Drop for CollMut<'_> {
    fn drop(&mut self) {
        let value = &self.db.slot(self.i).value;
        let (after, empty) = (value.memory(), value.is_empty_collection());
        self.db.used_memory = self.db.used_memory - self.before + after;
        if self.changed || after != self.before {
            self.db.touch_at(self.i);
        }
        if empty {
            self.db.remove_at(self.i);
        }
    }
}

/// A list being changed. The memory estimate follows every change, and the key is deleted
/// when the handle drops with the list empty (Redis never keeps an empty list).
#[derive(Debug)]
pub struct ListMut<'a> {
    db: &'a mut Db,
    i: usize,
}

impl ListMut<'_> {
    /// The elements.
    pub fn items(&self) -> &VecDeque<SharedBuf> {
        match &self.db.slot(self.i).value {
            Value::List(items) => items,
            _ => unreachable!("ListMut is made for lists only"),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items().len()
    }

    /// Whether the list is empty (only while being filled or emptied).
    pub fn is_empty(&self) -> bool {
        self.items().is_empty()
    }

    /// The pool (to copy new elements into).
    pub fn pool(&self) -> &Pool {
        &self.db.pool
    }

    /// The length from which an element is kept in the read buffer it arrived in.
    pub fn keep_in_place_min(&self) -> usize {
        self.db.keep_in_place_min
    }

    fn items_mut(&mut self) -> &mut VecDeque<SharedBuf> {
        match &mut self.db.changing(self.i).value {
            Value::List(items) => items,
            _ => unreachable!("ListMut is made for lists only"),
        }
    }

    /// Adds `item` at the head (`LPUSH`).
    pub fn push_front(&mut self, item: SharedBuf) {
        self.db.used_memory += item.len() + LIST_ITEM_OVERHEAD;
        self.items_mut().push_front(item);
    }

    /// Adds `item` at the tail (`RPUSH`).
    pub fn push_back(&mut self, item: SharedBuf) {
        self.db.used_memory += item.len() + LIST_ITEM_OVERHEAD;
        self.items_mut().push_back(item);
    }

    /// Removes the head element (`LPOP`).
    pub fn pop_front(&mut self) -> Option<SharedBuf> {
        let item = self.items_mut().pop_front()?;
        self.db.used_memory -= item.len() + LIST_ITEM_OVERHEAD;
        Some(item)
    }

    /// Removes the tail element (`RPOP`).
    pub fn pop_back(&mut self) -> Option<SharedBuf> {
        let item = self.items_mut().pop_back()?;
        self.db.used_memory -= item.len() + LIST_ITEM_OVERHEAD;
        Some(item)
    }

    /// Replaces element `index` (`LSET`); returns the old one, or gives `item` back if
    /// `index` is out of range.
    pub fn set(&mut self, index: usize, item: SharedBuf) -> Result<SharedBuf, SharedBuf> {
        let add = item.len();
        let Some(slot) = self.items_mut().get_mut(index) else {
            return Err(item);
        };
        let old = std::mem::replace(slot, item);
        self.db.used_memory = self.db.used_memory - old.len() + add;
        Ok(old)
    }

    /// Inserts `item` at position `index` (`LINSERT`; `index <= len()`).
    ///
    /// # Panics
    /// If `index > len()`.
    pub fn insert(&mut self, index: usize, item: SharedBuf) {
        self.db.used_memory += item.len() + LIST_ITEM_OVERHEAD;
        self.items_mut().insert(index, item);
    }

    /// Removes the elements at the ascending `positions` (`LREM`).
    pub fn remove_sorted(&mut self, positions: &[usize]) {
        debug_assert!(positions.windows(2).all(|w| w[0] < w[1]));
        if positions.is_empty() {
            return;
        }
        let mut freed = 0;
        let mut next = positions.iter().peekable();
        let mut i = 0;
        self.items_mut().retain(|b| {
            let drop = next.next_if_eq(&&i).is_some();
            if drop {
                freed += b.len() + LIST_ITEM_OVERHEAD;
            }
            i += 1;
            !drop
        });
        self.db.used_memory -= freed;
    }

    /// Keeps only elements `keep` (`LTRIM`; an empty range empties the list).
    ///
    /// # Panics
    /// If the range is decreasing or ends past `len()`.
    pub fn retain_range(&mut self, keep: std::ops::Range<usize>) {
        let len = self.len();
        assert!(
            keep.start <= keep.end && keep.end <= len,
            "retain_range {keep:?} of {len}"
        );
        let items = self.items_mut();
        let tail: usize = items
            .drain(keep.end..)
            .map(|b| b.len() + LIST_ITEM_OVERHEAD)
            .sum();
        let head: usize = items
            .drain(..keep.start)
            .map(|b| b.len() + LIST_ITEM_OVERHEAD)
            .sum();
        self.db.used_memory -= head + tail;
    }
}

impl Drop for ListMut<'_> {
    fn drop(&mut self) {
        if self.is_empty() {
            self.db.remove_at(self.i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Db {
        Db::new(ferry_testkit::pool(), 4096)
    }

    fn s(db: &Db, bytes: &[u8]) -> Value {
        Value::Str(db.pool().copy_from(bytes).unwrap())
    }

    fn str_of(v: Option<&Value>) -> Option<Vec<u8>> {
        match v {
            Some(Value::Str(b)) => Some(b.to_vec()),
            Some(_) => panic!("not a string"),
            None => None,
        }
    }

    /// Recomputes the memory estimate from scratch.
    fn recount(db: &Db) -> usize {
        db.iter(0).map(|(k, v)| k.len() + KEY_OVERHEAD + v.memory()).sum()
    }

    #[test]
    fn set_get_overwrite_and_remove_keep_memory_in_step() {
        let mut db = db();
        let v = s(&db, b"hello");
        assert!(db.set(b"k", v, Ttl::Clear, SetIf::Always, 0));
        assert_eq!(db.used_memory(), 1 + 5 + KEY_OVERHEAD);
        assert_eq!(str_of(db.get(b"k", 0)).as_deref(), Some(&b"hello"[..]));
        let v = s(&db, b"hi");
        assert!(db.set(b"k", v, Ttl::Clear, SetIf::Always, 0));
        assert_eq!(db.used_memory(), 1 + 2 + KEY_OVERHEAD);
        assert_eq!(db.len(), 1);
        assert!(db.remove(b"k", 0));
        assert!(!db.remove(b"k", 0));
        assert_eq!(db.used_memory(), 0);
        assert!(db.is_empty());
        assert_eq!(db.get(b"k", 0).map(Value::type_name), None);
        assert_eq!(
            db.stats(),
            DbStats {
                keyspace_hits: 1,
                keyspace_misses: 1,
                expired_keys: 0
            }
        );
    }

    #[test]
    fn set_conditions() {
        let mut db = db();
        let v = s(&db, b"1");
        assert!(!db.set(b"k", v.clone(), Ttl::Clear, SetIf::Present, 0));
        assert!(db.set(b"k", v.clone(), Ttl::Clear, SetIf::Absent, 0));
        assert!(!db.set(b"k", v.clone(), Ttl::Clear, SetIf::Absent, 0));
        assert!(db.set(b"k", v, Ttl::Clear, SetIf::Present, 0));
        assert_eq!(db.len(), 1);
    }

    #[test]
    fn lazy_expiry_on_every_kind_of_access() {
        let mut db = db();
        let v = s(&db, b"v");
        db.set(b"a", v.clone(), Ttl::At(100), SetIf::Always, 0);
        db.set(b"b", v.clone(), Ttl::At(100), SetIf::Always, 0);
        db.set(b"c", v.clone(), Ttl::At(100), SetIf::Always, 0);
        assert_eq!(db.expires(), 3);
        // At the deadline the key still lives (Redis: expired when now > deadline).
        assert!(db.get(b"a", 100).is_some());
        assert!(db.get(b"a", 101).is_none());
        assert!(db.find(b"b", 101, Access::Write).is_none());
        assert!(!db.remove(b"c", 101));
        assert_eq!(db.stats().expired_keys, 3);
        assert_eq!(db.expires(), 0);
        assert!(db.is_empty());
        assert_eq!(db.used_memory(), 0);
    }

    #[test]
    fn keep_ttl_does_not_revive_an_expired_deadline() {
        let mut db = db();
        let v = s(&db, b"v");
        db.set(b"k", v.clone(), Ttl::At(50), SetIf::Always, 0);
        db.set(b"k", v.clone(), Ttl::Keep, SetIf::Always, 10);
        assert_eq!(db.find(b"k", 10, Access::Write).unwrap().deadline(), Some(50));
        db.set(b"k", v.clone(), Ttl::Keep, SetIf::Always, 60);
        assert_eq!(db.find(b"k", 60, Access::Write).unwrap().deadline(), None);
        assert_eq!(db.stats().expired_keys, 1);
        // An expired key counts as absent for NX.
        db.set(b"n", v.clone(), Ttl::At(50), SetIf::Always, 0);
        assert!(db.set(b"n", v, Ttl::Clear, SetIf::Absent, 60));
    }

    #[test]
    fn deadlines_follow_the_ttl_index() {
        let mut db = db();
        let v = s(&db, b"v");
        for k in 0..10u8 {
            db.set(&[k], v.clone(), Ttl::At(1000 + u64::from(k)), SetIf::Always, 0);
        }
        db.find(&[3], 0, Access::Write).unwrap().set_deadline(None);
        db.find(&[0], 0, Access::Write).unwrap().remove();
        db.set(&[5], v.clone(), Ttl::Clear, SetIf::Always, 0);
        db.find(&[7], 0, Access::Write).unwrap().set_deadline(Some(5000));
        assert_eq!(db.expires(), 7);
        for (pos, &i) in db.ttl.iter().enumerate() {
            assert_eq!(db.slot(i).ttl_pos, pos);
            assert_ne!(db.slot(i).deadline, NO_DEADLINE);
        }
        assert_eq!(db.find(&[7], 0, Access::Write).unwrap().deadline(), Some(5000));
    }

    #[test]
    fn active_expire_reclaims_unread_keys_in_bounded_steps() {
        let mut db = db();
        let v = s(&db, b"v");
        for k in 0..1000u32 {
            db.set(&k.to_be_bytes(), v.clone(), Ttl::At(100), SetIf::Always, 0);
        }
        for k in 1000..1100u32 {
            db.set(&k.to_be_bytes(), v.clone(), Ttl::Clear, SetIf::Always, 0);
        }
        assert_eq!(db.active_expire(100), 0, "nothing expired yet");
        let first = db.active_expire(101);
        assert!(first > 0 && first <= EXPIRE_MAX_SAMPLES, "{first}");
        let mut total = first;
        while db.expires() > 0 {
            total += db.active_expire(101);
        }
        assert_eq!(total, 1000);
        assert_eq!(db.len(), 100);
        assert_eq!(db.stats().expired_keys, 1000);
        assert_eq!(db.used_memory(), recount(&db));
    }

    #[test]
    fn active_expire_stops_when_few_keys_expired() {
        let mut db = db();
        let v = s(&db, b"v");
        for k in 0..1000u32 {
            let ttl = if k < 10 { 100 } else { 10_000 };
            db.set(&k.to_be_bytes(), v.clone(), Ttl::At(ttl), SetIf::Always, 0);
        }
        // At most one round of 20 samples: few of them are expired.
        let n = db.active_expire(101);
        assert!(n <= 5, "{n}");
    }

    #[test]
    fn lists_track_memory_and_vanish_when_emptied() {
        let mut db = db();
        let a = db.pool().copy_from(b"aa").unwrap();
        let b = db.pool().copy_from(b"bbb").unwrap();
        {
            let mut l = db.list_or_insert(b"l", 0).unwrap();
            l.push_back(a.clone());
            l.push_front(b.clone());
            l.push_back(b.clone());
            assert_eq!(l.len(), 3);
            assert_eq!(l.set(1, b.clone()).unwrap().len(), 2);
            assert!(l.set(3, a.clone()).is_err());
        }
        assert_eq!(db.used_memory(), recount(&db));
        assert_eq!(db.used_memory(), 1 + KEY_OVERHEAD + 3 * (3 + LIST_ITEM_OVERHEAD));
        {
            let mut l = db.list(b"l", 0).unwrap().unwrap();
            l.retain_range(1..2);
            assert_eq!(l.len(), 1);
        }
        assert_eq!(db.used_memory(), recount(&db));
        {
            let mut l = db.list(b"l", 0).unwrap().unwrap();
            assert!(l.pop_back().is_some());
        }
        assert!(db.is_empty());
        assert_eq!(db.used_memory(), 0);
        // A list handle that adds nothing leaves no key behind.
        drop(db.list_or_insert(b"e", 0).unwrap());
        assert!(db.is_empty());
        let v = s(&db, b"v");
        db.set(b"s", v, Ttl::Clear, SetIf::Always, 0);
        assert_eq!(db.list(b"s", 0).err(), Some(WrongType));
        assert_eq!(db.list_or_insert(b"s", 0).err(), Some(WrongType));
        assert!(db.list(b"none", 0).unwrap().is_none());
    }

    #[test]
    fn scan_visits_every_stable_key_once_despite_growth_and_churn() {
        let mut db = db();
        let v = s(&db, b"v");
        for k in 0..500u32 {
            db.set(
                format!("stable{k}").as_bytes(),
                v.clone(),
                Ttl::Clear,
                SetIf::Always,
                0,
            );
        }
        let mut seen = std::collections::HashMap::<Vec<u8>, usize>::new();
        let mut cursor = 0;
        let mut step = 0u32;
        loop {
            cursor = db.scan(cursor, 7, 0, |k, _| *seen.entry(k.to_vec()).or_default() += 1);
            // Between steps: a burst of keys early on (the table grows several times), deleted
            // later; and all along, keys added and deleted a step later (tombstones, rehashing
            // in place, reused slab slots). The keyspace stays bounded, so the scan ends.
            if step == 2 {
                for j in 0..4000u32 {
                    db.set(
                        format!("burst{j}").as_bytes(),
                        v.clone(),
                        Ttl::Clear,
                        SetIf::Always,
                        0,
                    );
                }
            }
            if step == 10 {
                for j in 0..4000u32 {
                    assert!(db.remove(format!("burst{j}").as_bytes(), 0));
                }
            }
            for j in 0..30u32 {
                db.set(
                    format!("new{step}_{j}").as_bytes(),
                    v.clone(),
                    Ttl::Clear,
                    SetIf::Always,
                    0,
                );
                if step > 0 {
                    assert!(db.remove(format!("new{}_{j}", step - 1).as_bytes(), 0));
                }
            }
            step += 1;
            assert!(step < 100_000, "the scan must end");
            if cursor == 0 {
                break;
            }
        }
        for k in 0..500u32 {
            assert_eq!(seen.get(format!("stable{k}").as_bytes()), Some(&1), "stable{k}");
        }
    }

    #[test]
    fn scan_and_iter_skip_expired_keys() {
        let mut db = db();
        let v = s(&db, b"v");
        db.set(b"live", v.clone(), Ttl::Clear, SetIf::Always, 0);
        db.set(b"dead", v.clone(), Ttl::At(5), SetIf::Always, 0);
        assert_eq!(db.iter(10).count(), 1);
        assert_eq!(db.len(), 2, "iter does not delete");
        let mut keys = Vec::new();
        assert_eq!(db.scan(0, 100, 10, |k, _| keys.push(k.to_vec())), 0);
        assert_eq!(keys, vec![b"live".to_vec()]);
        assert_eq!(db.len(), 1, "scan deletes what it finds expired");
        assert_eq!(db.scan(u64::MAX, 10, 10, |_, _| panic!()), 0);
    }

    #[test]
    fn flush_empties_but_keeps_stats() {
        let mut db = db();
        let v = s(&db, b"v");
        db.set(b"k", v.clone(), Ttl::At(10), SetIf::Always, 0);
        db.get(b"k", 0);
        db.flush();
        assert!(db.is_empty());
        assert_eq!((db.expires(), db.used_memory()), (0, 0));
        assert_eq!(db.stats().keyspace_hits, 1);
        db.set(b"k", v, Ttl::Clear, SetIf::Always, 0);
        assert_eq!(db.len(), 1);
    }

    /// Checks every internal invariant: table, slab, free list and ttl index agree, and the
    /// memory estimate equals a recount.
    fn check_invariants(db: &Db) {
        let live = db.slots.iter().flatten().count();
        assert_eq!(db.table.len(), live);
        assert_eq!(db.free.len(), db.slots.len() - live);
        assert!(db.free.iter().all(|&i| db.slots[i].is_none()));
        for &i in db.table.iter() {
            let s = db.slot(i);
            assert_eq!(s.hash, db.hasher.hash_one(&*s.key));
        }
        let with_deadline = db
            .slots
            .iter()
            .flatten()
            .filter(|s| s.deadline != NO_DEADLINE)
            .count();
        assert_eq!(db.ttl.len(), with_deadline);
        for (pos, &i) in db.ttl.iter().enumerate() {
            assert_eq!(db.slot(i).ttl_pos, pos);
        }
        let mut empty = db
            .slots
            .iter()
            .flatten()
            .filter(|s| s.value.is_empty_collection());
        assert!(empty.next().is_none(), "no empty collection is stored");
        assert_eq!(db.used_memory(), recount(db));
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Model {
        Str(Vec<u8>),
        List(VecDeque<Vec<u8>>),
    }

    fn model_of(v: &Value) -> Model {
        match v {
            Value::Str(b) => Model::Str(b.to_vec()),
            Value::List(l) => Model::List(l.iter().map(|b| b.to_vec()).collect()),
            Value::Hash(_) | Value::Set(_) | Value::ZSet(_) => {
                unreachable!("the model has strings and lists")
            }
        }
    }

    #[test]
    fn random_operations_match_a_model() {
        let seed = ferry_testkit::seed("FERRY_REDIS_DB_SEED", 7);
        let mut rng = ferry_testkit::Rng::new(seed);
        let mut db = db();
        let mut model: std::collections::HashMap<Vec<u8>, (Model, u64)> = Default::default();
        let mut now = 1000u64;
        for step in 0..20_000 {
            if rng.chance(1, 10) {
                now += rng.below(20);
            }
            // The model expires lazily too: a key past its deadline is simply absent.
            model.retain(|_, (_, d)| now <= *d);
            let key = format!("k{}", rng.below(64)).into_bytes();
            let val = rng.bytes_in(0, 40);
            let deadline = if rng.chance(1, 3) {
                now + rng.below(50)
            } else {
                NO_DEADLINE
            };
            match rng.below(9) {
                0 | 1 => {
                    let cond = rng.pick(&[SetIf::Always, SetIf::Absent, SetIf::Present]);
                    let ttl = if deadline == NO_DEADLINE {
                        rng.pick(&[Ttl::Clear, Ttl::Keep])
                    } else {
                        Ttl::At(deadline)
                    };
                    let exists = model.contains_key(&key);
                    let want = match cond {
                        SetIf::Always => true,
                        SetIf::Absent => !exists,
                        SetIf::Present => exists,
                    };
                    let buf = db.pool().copy_from(&val).unwrap();
                    assert_eq!(db.set(&key, Value::Str(buf), ttl, cond, now), want, "step {step}");
                    if want {
                        let d = match ttl {
                            Ttl::Clear => NO_DEADLINE,
                            Ttl::Keep => model.get(&key).map_or(NO_DEADLINE, |(_, d)| *d),
                            Ttl::At(d) => d,
                        };
                        model.insert(key.clone(), (Model::Str(val.clone()), d));
                    }
                }
                2 => assert_eq!(db.remove(&key, now), model.remove(&key).is_some()),
                3 => {
                    let buf = db.pool().copy_from(&val).unwrap();
                    let front = rng.chance(1, 2);
                    let m = model.get_mut(&key);
                    match db.list_or_insert(&key, now) {
                        Err(WrongType) => assert!(matches!(m, Some((Model::Str(_), _)))),
                        Ok(mut l) => {
                            if front {
                                l.push_front(buf)
                            } else {
                                l.push_back(buf)
                            }
                            let (mv, _) = match m {
                                Some(m) => m,
                                None => model
                                    .entry(key.clone())
                                    .or_insert((Model::List(VecDeque::new()), NO_DEADLINE)),
                            };
                            let Model::List(ml) = mv else {
                                panic!("step {step}")
                            };
                            if front {
                                ml.push_front(val.clone())
                            } else {
                                ml.push_back(val.clone())
                            }
                            assert_eq!(l.len(), ml.len());
                        }
                    }
                }
                4 => {
                    let got = match db.list(&key, now) {
                        Err(WrongType) => None,
                        Ok(None) => None,
                        Ok(Some(mut l)) => {
                            let (start, end) = (rng.range(0, 4), rng.range(0, 6));
                            let len = l.len();
                            let keep = start.min(len)..end.clamp(start.min(len), len);
                            l.retain_range(keep.clone());
                            Some(keep)
                        }
                    };
                    if let Some(keep) = got {
                        let Some((Model::List(ml), _)) = model.get_mut(&key) else {
                            panic!()
                        };
                        *ml = ml.range(keep).cloned().collect();
                        if ml.is_empty() {
                            model.remove(&key);
                        }
                    }
                }
                5 => {
                    if let Ok(Some(mut l)) = db.list(&key, now) {
                        let popped = l.pop_back().map(|b| b.to_vec());
                        drop(l);
                        let Some((Model::List(ml), _)) = model.get_mut(&key) else {
                            panic!()
                        };
                        assert_eq!(popped, ml.pop_back());
                        if ml.is_empty() {
                            model.remove(&key);
                        }
                    }
                }
                6 => {
                    let d = (deadline != NO_DEADLINE).then_some(deadline);
                    match db.find(&key, now, Access::Write) {
                        Some(mut e) => {
                            e.set_deadline(d);
                            model.get_mut(&key).unwrap().1 = d.unwrap_or(NO_DEADLINE);
                        }
                        None => assert!(!model.contains_key(&key)),
                    }
                }
                7 => {
                    db.active_expire(now);
                }
                _ => {
                    let got = db.get(&key, now).map(model_of);
                    assert_eq!(got, model.get(&key).map(|(m, _)| m.clone()), "step {step}");
                }
            }
            if step % 500 == 0 {
                check_invariants(&db);
            }
        }
        check_invariants(&db);
        for (k, (m, d)) in &model {
            let e = db.find(k, now, Access::Write).expect("model key present");
            assert_eq!(&model_of(e.value()), m);
            assert_eq!(e.deadline().unwrap_or(NO_DEADLINE), *d);
        }
        let live = db.iter(now).count();
        assert_eq!(live, model.len());
    }

    #[test]
    fn empty_key_is_a_key() {
        let mut db = db();
        let v = s(&db, b"v");
        db.set(b"", v, Ttl::Clear, SetIf::Always, 0);
        assert!(db.contains(b"", 0));
        assert_eq!(db.used_memory(), 1 + KEY_OVERHEAD);
    }
}
