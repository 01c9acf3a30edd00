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

    /// Entry number `i` of [`iter`](Self::iter) (`i < len()`): a random pick when `i` is.
    pub fn nth(&self, i: usize) -> Option<&(SharedBuf, V)> {
        self.table.iter().nth(i)
    }

    /// Random entries (`HRANDFIELD`, `SRANDMEMBER`, `SPOP` with a count), in reply order; none
    /// from an empty table. O(len + picks).
    pub fn pick(&self, pick: Pick, rng: &mut Rng) -> Vec<&(SharedBuf, V)> {
        if self.is_empty() {
            return Vec::new();
        }
        let entries: Vec<&(SharedBuf, V)> = self.table.iter().collect();
        pick.positions(entries.len(), rng)
            .into_iter()
            .map(|p| entries[p])
            .collect()
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

    /// The positions picked in a table of `len` entries (`len > 0`), in reply order.
    fn positions(self, len: usize, rng: &mut Rng) -> Vec<usize> {
        match self {
            Pick::Repeating(n) => (0..n).map(|_| rng.below(len)).collect(),
            Pick::Distinct(n) if n >= len => (0..len).collect(),
            Pick::Distinct(n) => {
                // A partial Fisher-Yates shuffle: the first n of a random permutation.
                let mut all: Vec<usize> = (0..len).collect();
                for i in 0..n {
                    let j = i + rng.below(len - i);
                    all.swap(i, j);
                }
                all.truncate(n);
                all
            }
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
        assert!(t.nth(0).is_some() && t.nth(1).is_none());
        let mut s = FieldTable::<()>::default();
        assert!(s.insert(b(b"m"), ()));
        assert!(!s.insert(b(b"m"), ()));
        assert_eq!(s.memory(), 1 + ENTRY_OVERHEAD);
    }
}
