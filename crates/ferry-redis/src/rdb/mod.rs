//! Redis's RDB snapshot format, without I/O: [`encode`] writes a [`Snapshot`] of every
//! database as bytes redis-server 7.0.15 loads, and [`decode`] reads those bytes, or
//! redis-server's own, back into a [`Snapshot`] whose values live in the pool.
//!
//! ```text
//!  "REDIS0010"  AUX*  ( SELECTDB n  RESIZEDB keys expires  ( [EXPIRETIME_MS t] type key value )* )*  EOF crc64
//! ```
//!
//! What Ferry writes (version 10): strings as plain strings (no LZF, no integer encoding),
//! lists, sets and hashes as Redis's plain types (`RDB_TYPE_LIST`, `_SET`, `_HASH`), sorted
//! sets as `RDB_TYPE_ZSET_2` (binary scores), deadlines as `EXPIRETIME_MS`, and a CRC-64 as
//! Redis computes it ([`crc64`]). What it reads, besides that: versions 1 to 10, LZF and
//! integer-encoded strings ([`lzf`]), and the packed encodings Redis writes for small
//! collections ([`packed`]: listpacks, quicklists of listpacks or ziplists, ziplists,
//! intsets), old text scores (`RDB_TYPE_ZSET`), and the `IDLE`/`FREQ` opcodes (skipped). What it
//! refuses with a typed error: streams, modules, functions and zipmaps, which Ferry cannot hold.
//!
//! The bytes of a file are untrusted: [`decode`] checks every length against what is left
//! and against [`Limits`], never allocates from a count it has not bounded, and reports
//! where (the file's byte, and the key) and what ([`RdbError`]).
//!
//! A [`Snapshot`] holds clones of the values, which are counted pool buffers: taking one
//! costs a reference count per string, not a copy of the data, so `BGSAVE` takes it under the
//! keyspace lock and encodes it on another thread.

use ferry_buf::PoolError;

use crate::db::{Db, SetIf, Ttl, Value};

pub mod crc64;
mod decode;
mod encode;
pub mod lzf;
pub mod packed;

pub use decode::{decode, restore};
pub use encode::{dump, encode};

/// The RDB version Ferry writes (Redis 7.0's).
pub const VERSION: u32 = 10;

/// Opcodes and value types (Redis's `rdb.h`).
pub(crate) mod op {
    pub const FUNCTION2: u8 = 245;
    pub const FUNCTION_PRE_GA: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;

    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
}

/// One key of a [`Snapshot`].
#[derive(Debug, Clone)]
pub struct Record {
    /// The key.
    pub key: Box<[u8]>,
    /// Its value (never an empty collection).
    pub value: Value,
    /// Its deadline in unix milliseconds, if it has one.
    pub deadline: Option<u64>,
}

/// Every database's keys at one moment, by database index.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// `dbs[i]`: database `i`'s keys.
    pub dbs: Vec<Vec<Record>>,
}

impl Snapshot {
    /// The live keys of `dbs` at `now_ms`. Keys past their deadline are left out: Redis
    /// writes them and drops them when it loads, which comes to the same dataset.
    pub fn take<'d>(dbs: impl IntoIterator<Item = &'d Db>, now_ms: u64) -> Snapshot {
        let dbs = dbs
            .into_iter()
            .map(|db| {
                db.entries(now_ms)
                    .map(|(key, value, deadline)| Record {
                        key: key.into(),
                        value: value.clone(),
                        deadline,
                    })
                    .collect()
            })
            .collect();
        Snapshot { dbs }
    }

    /// Keys in all databases.
    pub fn len(&self) -> usize {
        self.dbs.iter().map(Vec::len).sum()
    }

    /// Whether no database holds a key.
    pub fn is_empty(&self) -> bool {
        self.dbs.iter().all(Vec::is_empty)
    }

    /// Stores every key into `dbs`, in index order (which the caller flushed, or which are
    /// new), leaving out keys whose deadline passed by `now_ms` (as a Redis master does when
    /// it loads). A snapshot [`decode`] made with `Limits::databases` equal to the number of
    /// databases has none beyond them.
    pub fn restore<'d>(self, dbs: impl IntoIterator<Item = &'d mut Db>, now_ms: u64) {
        for (records, db) in self.dbs.into_iter().zip(dbs) {
            for r in records {
                if r.deadline.is_some_and(|d| now_ms > d) {
                    continue;
                }
                let ttl = r.deadline.map_or(Ttl::Clear, Ttl::At);
                db.set(&r.key, r.value, ttl, SetIf::Always, now_ms);
            }
        }
    }
}

/// What [`decode`] accepts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Databases: a `SELECTDB` at or past this is an error (Redis's `databases`).
    pub databases: usize,
    /// The longest string (key, value, member, packed blob), after decompression: the pool's
    /// largest buffer.
    pub max_string_len: usize,
    /// Most elements in one collection.
    pub max_elements: usize,
}

/// Why bytes are not an RDB file Ferry can load: what, and at which byte of the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RdbError {
    /// The file does not start with `REDIS` and four version digits.
    #[error("not an RDB file: it does not start with REDIS and a 4-digit version")]
    Magic,
    /// A version Ferry cannot read.
    #[error("RDB version {0} is not supported (1 to {VERSION})")]
    Version(u32),
    /// The file ends inside an item.
    #[error("the file ends at byte {offset} inside {what}")]
    Truncated {
        /// Where the file ended.
        offset: usize,
        /// What was being read.
        what: &'static str,
    },
    /// A malformed item.
    #[error("at byte {offset}{key}: {what}")]
    Corrupt {
        /// Where the item starts.
        offset: usize,
        /// ` (key "..")` when a key's value was being read.
        key: KeyNote,
        /// What is wrong.
        what: String,
    },
    /// An item larger than [`Limits`] allow.
    #[error("at byte {offset}{key}: {what} of {found} is over the limit of {limit}")]
    Limit {
        /// Where the item starts.
        offset: usize,
        /// The key being read, if any.
        key: KeyNote,
        /// What was counted.
        what: &'static str,
        /// Its size in the file.
        found: u64,
        /// The limit.
        limit: usize,
    },
    /// Something Ferry has no way to hold (a stream, a module value, a function).
    #[error("at byte {offset}{key}: {what} is not supported by Ferry")]
    Unsupported {
        /// Where the item starts.
        offset: usize,
        /// The key being read, if any.
        key: KeyNote,
        /// What it is.
        what: String,
    },
    /// The CRC-64 after `EOF` is not the content's.
    #[error("checksum mismatch: the file says {stored:016x}, its content makes {computed:016x}")]
    Checksum {
        /// The checksum in the file.
        stored: u64,
        /// The checksum of the bytes before it.
        computed: u64,
    },
    /// The pool had no room for a value.
    #[error("at byte {offset}: no pool memory for a value: {source}")]
    Pool {
        /// Where the value starts.
        offset: usize,
        /// The pool's error.
        source: PoolError,
    },
}

/// The key an [`RdbError`] happened in, shown as ` (key "..")` (escaped, cut to 64 bytes), or
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyNote(Option<String>);

impl KeyNote {
    pub(crate) fn of(key: &[u8]) -> KeyNote {
        let shown = &key[..key.len().min(64)];
        KeyNote(Some(shown.escape_ascii().to_string()))
    }
}

impl std::fmt::Display for KeyNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(k) => write!(f, " (key \"{k}\")"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
