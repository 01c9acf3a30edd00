//! [`encode`]: a [`Snapshot`] as RDB version 10 bytes.

use super::crc64::crc64;
use super::{Snapshot, VERSION, op};
use crate::db::Value;

/// Appends `snapshot` to `out` as an RDB file: the header, `AUX` fields (`ctime` is
/// `now_ms`'s seconds), each non-empty database (`SELECTDB`, `RESIZEDB`, its keys), `EOF`
/// and the CRC-64 of everything before it.
pub fn encode(snapshot: &Snapshot, now_ms: u64, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(format!("REDIS{VERSION:04}").as_bytes());
    aux(out, b"ferry-ver", env!("CARGO_PKG_VERSION").as_bytes());
    aux(out, b"redis-bits", b"64");
    aux(out, b"ctime", (now_ms / 1000).to_string().as_bytes());
    aux(out, b"aof-base", b"0");
    for (i, records) in snapshot.dbs.iter().enumerate() {
        if records.is_empty() {
            continue;
        }
        out.push(op::SELECTDB);
        length(out, i as u64);
        out.push(op::RESIZEDB);
        length(out, records.len() as u64);
        length(
            out,
            records.iter().filter(|r| r.deadline.is_some()).count() as u64,
        );
        for r in records {
            if let Some(d) = r.deadline {
                out.push(op::EXPIRETIME_MS);
                out.extend_from_slice(&d.to_le_bytes());
            }
            value(out, &r.key, &r.value);
        }
    }
    out.push(op::EOF);
    let crc = crc64(0, &out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// `DUMP`'s payload for `value`: its type byte and encoding, then the RDB version (2 bytes)
/// and the CRC-64 of all that (8 bytes), little-endian, as Redis's `createDumpPayload`.
pub fn dump(value: &Value, out: &mut Vec<u8>) {
    let start = out.len();
    out.push(kind(value));
    body(out, value);
    out.extend_from_slice(&(VERSION as u16).to_le_bytes());
    let crc = crc64(0, &out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

fn kind(value: &Value) -> u8 {
    match value {
        Value::Str(_) => op::STRING,
        Value::List(_) => op::LIST,
        Value::Set(_) => op::SET,
        Value::Hash(_) => op::HASH,
        Value::ZSet(_) => op::ZSET_2,
    }
}

/// One key: its type byte, the key, the value.
fn value(out: &mut Vec<u8>, key: &[u8], value: &Value) {
    out.push(kind(value));
    string(out, key);
    body(out, value);
}

/// A value's encoding, after its type byte.
fn body(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Str(s) => string(out, s),
        Value::List(items) => {
            length(out, items.len() as u64);
            items.iter().for_each(|i| string(out, i));
        }
        Value::Set(set) => {
            length(out, set.len() as u64);
            set.iter().for_each(|(m, ())| string(out, m));
        }
        Value::Hash(hash) => {
            length(out, hash.len() as u64);
            for (f, v) in hash.iter() {
                string(out, f);
                string(out, v);
            }
        }
        Value::ZSet(z) => {
            length(out, z.len() as u64);
            // Redis writes a skiplist from its tail, so that loading inserts at the head.
            for (m, score) in z.iter().rev() {
                string(out, m);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
    }
}

fn aux(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.push(op::AUX);
    string(out, key);
    string(out, value);
}

/// A length-prefixed string, uncompressed.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    length(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Redis's length encoding: 6 bits, 14 bits, or a 32- or 64-bit big-endian number.
pub(super) fn length(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}
