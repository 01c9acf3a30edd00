//! [`FieldTable`]: the collection inside a hash (fields to values) and a set (members), whose
//! names and values are pool buffers, with its memory estimate kept as it changes.
//!
//! A hashbrown [`HashTable`] of `(name, value)` pairs found by the name's bytes (foldhash,
//! seeded per collection: names come from clients). Lookup, insertion and removal cost O(1);
//! a random pick (`HRANDFIELD`, `SPOP`, `SRANDMEMBER`) walks to a random position, O(n).
//! Iteration order is the table's, not insertion order: replies listing a whole hash or set
//! are in an unspecified order, as Redis's are once a collection is a hash table.
//!
//! What it is not: ordered, or shared between threads.

use std::hash::BuildHasher;

use ferry_buf::SharedBuf;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::db::Rng;

/// What each entry of a hash or set costs in [`Db::used_memory`](crate::db::Db::used_memory)
/// besides its bytes (Redis's dictEntry and sds headers come to about this).
pub const ENTRY_OVERHEAD: usize = 24;

/// A value stored beside a name: a hash field's value, or nothing (a set member).
pub trait Payload: Clone {
    /// Its bytes, counted in the memory estimate.
    fn bytes(&self) -> usize;
}

impl Payload for SharedBuf {
    fn bytes(&self) -> usize {
        self.len()
    }
}

impl Payload for () {
    fn bytes(&self) -> usize {
        0
    }
}

/// Names (pool buffers) with a [`Payload`] each: a hash (`FieldTable<SharedBuf>`) or a set
/// (`FieldTable<()>`).
#[derive(Clone)]
pub struct FieldTable<V> {
    table: HashTable<(SharedBuf, V)>,
    hasher: foldhash::fast::RandomState,
    /// Names' and payloads' bytes plus [`ENTRY_OVERHEAD`] per entry.
    memory: usize,
}

impl<V> std::fmt::Debug for FieldTable<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldTable")
            .field("len", &self.table.len())
            .field("memory", &self.memory)
            .finish()
    }
}

impl<V: Payload> Default for FieldTable<V> {
    fn default() -> Self {
        FieldTable {
            table: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            memory: 0,
        }
    }
}

impl<V: Payload> FieldTable<V> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The memory estimate: bytes plus [`ENTRY_OVERHEAD`] per entry. O(1).
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// The entry named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&(SharedBuf, V)> {
        self.table.find(self.hasher.hash_one(name), |(n, _)| **n == *name)
    }

    /// Whether `name` is present.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }

    /// Sets `name` to `value`; whether the name is new (an existing name keeps its buffer).
    pub fn insert(&mut self, name: SharedBuf, value: V) -> bool {
        let hash = self.hasher.hash_one(&name[..]);
        let hasher = &self.hasher;
        match self
            .table
            .entry(hash, |(n, _)| **n == *name, |(n, _)| hasher.hash_one(&n[..]))
        {
            Entry::Occupied(mut e) => {
                let old = std::mem::replace(&mut e.get_mut().1, value);
                self.memory = self.memory - old.bytes() + e.get().1.bytes();
                false
            }
            Entry::Vacant(e) => {
                self.memory += name.len() + value.bytes() + ENTRY_OVERHEAD;
                e.insert((name, value));
                true
            }
        }
    }

    /// Removes `name`; its entry if it was there.
    pub fn remove(&mut self, name: &[u8]) -> Option<(SharedBuf, V)> {
        let hash = self.hasher.hash_one(name);
        let (entry, _) = self.table.find_entry(hash, |(n, _)| **n == *name).ok()?.remove();
        self.memory -= entry.0.len() + entry.1.bytes() + ENTRY_OVERHEAD;
        Some(entry)
    }

    /// Every entry, in the table's order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &(SharedBuf, V)> + '_ {
        self.table.iter()
    }

    /// Visits random entries (`HRANDFIELD`, `SRANDMEMBER`, `SPOP`), in reply order, until
    /// [`Pick::count`] are visited or `visit` returns `false`: a caller bounds a huge repeating
    /// pick by the reply it builds (as Redis stops once the client is over its output limit),
    /// and nothing here allocates by the count. O(len + picks).
    pub fn pick(&self, pick: Pick, rng: &mut Rng, mut visit: impl FnMut(&(SharedBuf, V)) -> bool) {
        let entries: Vec<&(SharedBuf, V)> = self.table.iter().collect();
        let len = entries.len();
        match pick {
            _ if len == 0 => {}
            Pick::Repeating(n) => {
                for _ in 0..n {
                    if !visit(entries[rng.below(len)]) {
                        return;
                    }
                }
            }
            Pick::Distinct(n) => {
                // A partial Fisher-Yates shuffle: the first n of a random permutation.
                let mut order: Vec<usize> = (0..len).collect();
                for i in 0..n.min(len) {
                    let j = i + rng.below(len - i);
                    order.swap(i, j);
                    if !visit(entries[order[i]]) {
                        return;
                    }
                }
            }
        }
    }
}

/// How many entries a random pick with a count returns: `count` of them, repeats allowed
/// (a negative count, or 1), or up to `count` distinct ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// `n` picks, each of the whole table.
    Repeating(usize),
    /// `min(n, len)` distinct entries.
    Distinct(usize),
}

impl Pick {
    /// The pick a count asks for (`count` is not `i64::MIN`: callers reject it).
    pub fn of(count: i64) -> Pick {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        if count < 0 || count == 1 {
            Pick::Repeating(n)
        } else {
            Pick::Distinct(n)
        }
    }

    /// How many entries the pick visits in a table of `len` entries.
    pub fn count(self, len: usize) -> usize {
        match self {
            _ if len == 0 => 0,
            Pick::Repeating(n) => n,
            Pick::Distinct(n) => n.min(len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_follows_inserts_overwrites_and_removals() {
        let pool = ferry_testkit::pool();
        let b = |s: &[u8]| pool.copy_from(s).unwrap();
        let mut t = FieldTable::<SharedBuf>::default();
        assert!(t.insert(b(b"f"), b(b"one")));
        assert!(!t.insert(b(b"f"), b(b"three")));
        assert!(t.insert(b(b"g"), b(b"")));
        assert_eq!(t.len(), 2);
        assert_eq!(t.memory(), 1 + 5 + 1 + 2 * ENTRY_OVERHEAD);
        assert_eq!(&t.get(b"f").unwrap().1[..], b"three");
        assert_eq!(&t.remove(b"f").unwrap().1[..], b"three");
        assert!(t.remove(b"f").is_none());
        assert_eq!(t.memory(), 1 + ENTRY_OVERHEAD);
        let mut rng = crate::db::Rng::seeded(7);
        let mut seen = 0;
        t.pick(Pick::Repeating(5), &mut rng, |(f, _)| {
            assert_eq!(&f[..], b"g");
            seen += 1;
            seen < 3
        });
        assert_eq!(seen, 3, "a visitor stops the pick");
        assert_eq!(Pick::Distinct(9).count(t.len()), 1);
        assert_eq!(Pick::Repeating(9).count(0), 0);
        let mut s = FieldTable::<()>::default();
        assert!(s.insert(b(b"m"), ()));
        assert!(!s.insert(b(b"m"), ()));
        assert_eq!(s.memory(), 1 + ENTRY_OVERHEAD);
    }
}
