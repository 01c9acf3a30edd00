//! [`decode`]: RDB bytes (Ferry's or redis-server's) as a [`Snapshot`], checked.

use std::borrow::Cow;
use std::collections::VecDeque;

use ferry_buf::{Pool, SharedBuf};

use super::crc64::crc64;
use super::lzf;
use super::packed::{self, Elem, PackedError};
use super::{KeyNote, Limits, RdbError, Record, Snapshot, VERSION, op};
use crate::db::Value;
use crate::fields::FieldTable;
use crate::zset::ZSet;

/// Reads an RDB file whole: every database's keys, values copied into `pool`. The checksum is
/// verified when the file has one (version 5 on, and not 0, which means "not computed").
/// Keys past their deadline are kept in the snapshot: [`Snapshot::restore`] drops them.
pub fn decode(bytes: &[u8], pool: &Pool, limits: &Limits) -> Result<Snapshot, RdbError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        pool,
        limits,
        key: KeyNote::default(),
    };
    let magic = r.take(9, "the header")?;
    if &magic[..5] != b"REDIS" || !magic[5..].iter().all(u8::is_ascii_digit) {
        return Err(RdbError::Magic);
    }
    let version: u32 = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if !(1..=VERSION).contains(&version) {
        return Err(RdbError::Version(version));
    }
    let mut snapshot = Snapshot {
        dbs: vec![Vec::new(); limits.databases],
    };
    let mut db = 0usize;
    let mut deadline = None;
    loop {
        let at = r.pos;
        let kind = r.byte("an opcode")?;
        match kind {
            op::EOF => break,
            op::SELECTDB => {
                let n = r.length("a database number")?;
                db = usize::try_from(n)
                    .ok()
                    .filter(|&n| n < limits.databases)
                    .ok_or_else(|| {
                        r.corrupt(
                            at,
                            format!("database {n} is out of range (databases {})", limits.databases),
                        )
                    })?;
            }
            op::RESIZEDB => {
                r.length("a database size")?;
                r.length("a database's expires size")?;
            }
            op::AUX => {
                r.string("an AUX field's name")?;
                r.string("an AUX field's value")?;
            }
            op::EXPIRETIME_MS => deadline = Some(r.u64_le("a deadline")?),
            op::EXPIRETIME => deadline = Some(u64::from(r.u32_le("a deadline")?) * 1000),
            op::IDLE => {
                r.length("an idle time")?;
            }
            op::FREQ => {
                r.byte("a frequency")?;
            }
            op::MODULE_AUX => return Err(r.unsupported(at, "module data")),
            op::FUNCTION2 | op::FUNCTION_PRE_GA => return Err(r.unsupported(at, "a function library")),
            kind => {
                let key = r.string("a key")?.into_owned();
                r.key = KeyNote::of(&key);
                let value = r.value(kind, at)?;
                r.key = KeyNote::default();
                if let Some(value) = value {
                    snapshot.dbs[db].push(Record {
                        key: key.into(),
                        value,
                        deadline: deadline.take(),
                    });
                }
                deadline = None;
            }
        }
    }
    if version >= 5 {
        let content = r.pos;
        let stored = r.u64_le("the checksum")?;
        let computed = crc64(0, &bytes[..content]);
        if stored != 0 && stored != computed {
            return Err(RdbError::Checksum { stored, computed });
        }
    }
    if r.pos != bytes.len() {
        return Err(r.corrupt(r.pos, "bytes after the end of the file".into()));
    }
    Ok(snapshot)
}

/// A `DUMP` payload (`RESTORE`'s argument) as a value: the footer's version (at most
/// [`VERSION`]) and CRC-64 are checked first ([`RdbError::Checksum`], [`RdbError::Version`]),
/// then the value, which must take every byte before the footer; an empty collection is
/// [`RdbError::Corrupt`].
pub fn restore(payload: &[u8], pool: &Pool, limits: &Limits) -> Result<Value, RdbError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(RdbError::Truncated {
            offset: payload.len(),
            what: "a DUMP payload's footer",
        });
    };
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    if u32::from(version) > VERSION {
        return Err(RdbError::Version(version.into()));
    }
    let stored = u64::from_le_bytes(payload[body_len + 2..].try_into().expect("8 bytes"));
    let computed = crc64(0, &payload[..body_len + 2]);
    if stored != computed {
        return Err(RdbError::Checksum { stored, computed });
    }
    let mut r = Reader {
        bytes: &payload[..body_len],
        pos: 0,
        pool,
        limits,
        key: KeyNote::default(),
    };
    let kind = r.byte("a value type")?;
    let value = r.value(kind, 0)?;
    if r.pos != body_len {
        return Err(r.corrupt(r.pos, "bytes after the value".into()));
    }
    value.ok_or_else(|| r.corrupt(0, "an empty collection".into()))
}

/// A length, or one of the special string encodings (the low 6 bits of a `11xxxxxx` byte).
enum Len {
    Plain(u64),
    Encoded(u8),
}

/// The checked cursor over the file.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    pool: &'a Pool,
    limits: &'a Limits,
    /// The key whose value is being read (for errors).
    key: KeyNote,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], RdbError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(RdbError::Truncated {
                offset: self.bytes.len(),
                what,
            });
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, RdbError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32_le(&mut self, what: &'static str) -> Result<u32, RdbError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn u64_le(&mut self, what: &'static str) -> Result<u64, RdbError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn corrupt(&self, offset: usize, what: String) -> RdbError {
        RdbError::Corrupt {
            offset,
            key: self.key.clone(),
            what,
        }
    }

    fn unsupported(&self, offset: usize, what: &str) -> RdbError {
        RdbError::Unsupported {
            offset,
            key: self.key.clone(),
            what: what.into(),
        }
    }

    fn limit(&self, offset: usize, what: &'static str, found: u64, limit: usize) -> RdbError {
        RdbError::Limit {
            offset,
            key: self.key.clone(),
            what,
            found,
            limit,
        }
    }

    fn raw_length(&mut self, what: &'static str) -> Result<Len, RdbError> {
        let b = self.byte(what)?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte(what)?)),
            2 if b == 0x80 => {
                let b = self.take(4, what)?;
                Len::Plain(u64::from(u32::from_be_bytes(b.try_into().expect("4 bytes"))))
            }
            2 if b == 0x81 => {
                let b = self.take(8, what)?;
                Len::Plain(u64::from_be_bytes(b.try_into().expect("8 bytes")))
            }
            2 => return Err(self.corrupt(self.pos - 1, format!("unknown length prefix {b:#04x}"))),
            _ => Len::Encoded(b & 0x3f),
        })
    }

    fn length(&mut self, what: &'static str) -> Result<u64, RdbError> {
        let at = self.pos;
        match self.raw_length(what)? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(self.corrupt(at, format!("{what} is an encoded string, not a length"))),
        }
    }

    /// A collection's element count, checked against the limit and against what is left of
    /// the file (each element takes a byte at least): safe to size an allocation with.
    fn count(&mut self, what: &'static str) -> Result<usize, RdbError> {
        let at = self.pos;
        let n = self.length(what)?;
        let max = self.limits.max_elements;
        match usize::try_from(n) {
            Ok(n) if n <= max && n <= self.bytes.len() - self.pos => Ok(n),
            Ok(n) if n <= max => Err(RdbError::Truncated {
                offset: self.bytes.len(),
                what,
            }),
            _ => Err(self.limit(at, what, n, max)),
        }
    }

    /// A string: plain, an 8/16/32-bit integer, or LZF-compressed.
    fn string(&mut self, what: &'static str) -> Result<Cow<'a, [u8]>, RdbError> {
        let at = self.pos;
        let max = self.limits.max_string_len;
        match self.raw_length(what)? {
            Len::Plain(n) => {
                let n = usize::try_from(n)
                    .ok()
                    .filter(|&n| n <= max)
                    .ok_or_else(|| self.limit(at, what, n, max))?;
                Ok(Cow::Borrowed(self.take(n, what)?))
            }
            Len::Encoded(0) => Ok(Cow::Owned(
                i64::from(self.byte(what)? as i8).to_string().into_bytes(),
            )),
            Len::Encoded(1) => {
                let b = self.take(2, what)?;
                let n = i16::from_le_bytes(b.try_into().expect("2 bytes"));
                Ok(Cow::Owned(n.to_string().into_bytes()))
            }
            Len::Encoded(2) => Ok(Cow::Owned((self.u32_le(what)? as i32).to_string().into_bytes())),
            Len::Encoded(3) => {
                let clen = self.length(what)?;
                let len = self.length(what)?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&n| n <= max)
                    .ok_or_else(|| self.limit(at, what, len, max))?;
                let clen = usize::try_from(clen).unwrap_or(usize::MAX);
                let input = self.take(clen, what)?;
                let mut out = Vec::new();
                lzf::decompress(input, len, &mut out)
                    .map_err(|e| self.corrupt(at, format!("{what}: LZF: {e}")))?;
                Ok(Cow::Owned(out))
            }
            Len::Encoded(e) => Err(self.corrupt(at, format!("{what}: unknown string encoding {e}"))),
        }
    }

    /// A string into the pool.
    fn buf(&mut self, what: &'static str) -> Result<SharedBuf, RdbError> {
        let at = self.pos;
        let s = self.string(what)?;
        self.pooled(at, &s)
    }

    fn pooled(&self, offset: usize, s: &[u8]) -> Result<SharedBuf, RdbError> {
        self.pool
            .copy_from(s)
            .map_err(|source| RdbError::Pool { offset, source })
    }

    /// A sorted-set score as text (`RDB_TYPE_ZSET`): a length byte, or 253/254/255 for
    /// NaN/+inf/-inf.
    fn text_score(&mut self) -> Result<f64, RdbError> {
        let at = self.pos;
        let n = self.byte("a score")?;
        match n {
            253 => Err(self.corrupt(at, "a NaN score".into())),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let t = self.take(usize::from(n), "a score")?;
                self.parse_score(at, t)
            }
        }
    }

    fn parse_score(&self, at: usize, text: &[u8]) -> Result<f64, RdbError> {
        std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .filter(|s| !s.is_nan())
            .ok_or_else(|| {
                self.corrupt(
                    at,
                    format!("score {:?} is not a number", text.escape_ascii().to_string()),
                )
            })
    }

    /// The value of type `kind`; `None` for an empty collection (Redis skips those too).
    fn value(&mut self, kind: u8, at: usize) -> Result<Option<Value>, RdbError> {
        let value = match kind {
            op::STRING => Value::Str(self.buf("a string value")?),
            op::LIST => {
                let n = self.count("a list's length")?;
                let mut items = VecDeque::with_capacity(n);
                for _ in 0..n {
                    items.push_back(self.buf("a list element")?);
                }
                Value::List(items)
            }
            op::SET => {
                let n = self.count("a set's size")?;
                let mut set = FieldTable::default();
                for _ in 0..n {
                    set.insert(self.buf("a set member")?, ());
                }
                Value::Set(set)
            }
            op::HASH => {
                let n = self.count("a hash's size")?;
                let mut hash = FieldTable::default();
                for _ in 0..n {
                    let field = self.buf("a hash field")?;
                    hash.insert(field, self.buf("a hash value")?);
                }
                Value::Hash(hash)
            }
            op::ZSET | op::ZSET_2 => {
                let n = self.count("a sorted set's size")?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    let m = self.buf("a sorted set member")?;
                    let score = if kind == op::ZSET {
                        self.text_score()?
                    } else {
                        let s = f64::from_le_bytes(self.take(8, "a score")?.try_into().expect("8 bytes"));
                        if s.is_nan() {
                            return Err(self.corrupt(self.pos - 8, "a NaN score".into()));
                        }
                        s
                    };
                    members.push((m, score));
                }
                Value::ZSet(ZSet::collect(members))
            }
            op::SET_INTSET => {
                let blob = self.string("an intset")?;
                let mut set = FieldTable::default();
                self.walk(at, packed::intset, &blob, 0, &mut |m| {
                    set.insert(m, ());
                })?;
                Value::Set(set)
            }
            op::LIST_ZIPLIST | op::LIST_QUICKLIST | op::LIST_QUICKLIST_2 => {
                let mut items = VecDeque::new();
                let nodes = match kind {
                    op::LIST_ZIPLIST => 1,
                    _ => self.count("a quicklist's node count")?,
                };
                for _ in 0..nodes {
                    // Quicklist 2 says whether each node is plain (one element as is) or packed.
                    let container = match kind {
                        op::LIST_QUICKLIST_2 => self.length("a quicklist node's container")?,
                        _ => 2,
                    };
                    let node = self.pos;
                    let blob = self.string("a quicklist node")?;
                    let walk: packed::Walk = match (kind, container) {
                        (op::LIST_QUICKLIST_2, 1) => {
                            items.push_back(self.pooled(node, &blob)?);
                            continue;
                        }
                        (op::LIST_QUICKLIST_2, 2) => packed::listpack,
                        (_, 2) => packed::ziplist,
                        (_, c) => return Err(self.corrupt(node, format!("unknown quicklist container {c}"))),
                    };
                    let have = items.len();
                    self.walk(node, walk, &blob, have, &mut |e| items.push_back(e))?;
                }
                Value::List(items)
            }
            op::HASH_ZIPLIST | op::HASH_LISTPACK => {
                let walk: packed::Walk = match kind {
                    op::HASH_LISTPACK => packed::listpack,
                    _ => packed::ziplist,
                };
                let blob = self.string("a packed hash")?;
                let mut flat = Vec::new();
                self.walk(at, walk, &blob, 0, &mut |e| flat.push(e))?;
                if flat.len() % 2 != 0 {
                    return Err(self.corrupt(at, "a packed hash has an odd number of entries".into()));
                }
                let mut hash = FieldTable::default();
                let mut it = flat.into_iter();
                while let (Some(f), Some(v)) = (it.next(), it.next()) {
                    hash.insert(f, v);
                }
                Value::Hash(hash)
            }
            op::ZSET_ZIPLIST | op::ZSET_LISTPACK => {
                let walk: packed::Walk = match kind {
                    op::ZSET_LISTPACK => packed::listpack,
                    _ => packed::ziplist,
                };
                let blob = self.string("a packed sorted set")?;
                let mut flat = Vec::new();
                self.walk(at, walk, &blob, 0, &mut |e| flat.push(e))?;
                if flat.len() % 2 != 0 {
                    return Err(self.corrupt(at, "a packed sorted set has an odd number of entries".into()));
                }
                let mut members = Vec::with_capacity(flat.len() / 2);
                let mut it = flat.into_iter();
                while let (Some(m), Some(s)) = (it.next(), it.next()) {
                    members.push((m, self.parse_score(at, &s)?));
                }
                Value::ZSet(ZSet::collect(members))
            }
            op::HASH_ZIPMAP => return Err(self.unsupported(at, "a zipmap hash (RDB before Redis 2.6)")),
            15 | 19 => return Err(self.unsupported(at, "a stream")),
            6 | 7 => return Err(self.unsupported(at, "a module value")),
            k => return Err(self.corrupt(at, format!("unknown value type {k}"))),
        };
        Ok(match &value {
            Value::List(l) if l.is_empty() => None,
            Value::Set(s) if s.is_empty() => None,
            Value::Hash(h) if h.is_empty() => None,
            Value::ZSet(z) if z.is_empty() => None,
            _ => Some(value),
        })
    }

    /// Walks a packed blob that starts at file byte `at`: each element is copied into the
    /// pool and given to `push`; `have` is how many the collection held before (the element
    /// limit counts them all).
    fn walk(
        &self,
        at: usize,
        walk: packed::Walk,
        blob: &[u8],
        have: usize,
        push: &mut dyn FnMut(SharedBuf),
    ) -> Result<(), RdbError> {
        let mut n = have;
        let mut scratch = Vec::new();
        let mut failed = None;
        let result = walk(blob, &mut |e: Elem<'_>| {
            n += 1;
            let stored = if n > self.limits.max_elements {
                Err(self.limit(
                    at,
                    "a packed collection's size",
                    n as u64,
                    self.limits.max_elements,
                ))
            } else {
                self.pooled(at, e.to_bytes(&mut scratch))
            };
            match stored {
                Ok(b) => {
                    push(b);
                    Ok(())
                }
                Err(e) => {
                    failed = Some(e);
                    Err(STOPPED)
                }
            }
        });
        match (result, failed) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => Err(self.corrupt(at, e.to_string())),
            (Ok(()), None) => Ok(()),
        }
    }
}

/// What [`Reader::walk`]'s visitor returns to stop a walk after an error of its own.
const STOPPED: PackedError = PackedError {
    encoding: "",
    offset: 0,
    what: "stopped by the reader",
};
