//! Fuzz target `rdb`: untrusted bytes through ferry-redis's RDB decoder, as `ferry redis`
//! loads a `dump.rdb` at start or `DEBUG RELOAD` reads one back.
//!
//! Nothing may panic, and the limits hold: no string over `max_string_len`, no collection
//! over `max_elements`, no database past `databases`. What decodes must survive a round trip:
//! encoded by Ferry and decoded again, the same keys, values and deadlines. (The seeds carry
//! a zero checksum, which the format reads as "not computed", so mutations reach the value
//! parsers instead of stopping at the checksum.)
#![no_main]

mod common;

use ferry_redis::db::Value;
use ferry_redis::rdb::{Limits, Snapshot, decode, encode};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    databases: 4,
    max_string_len: 4096,
    max_elements: 64,
};

/// A snapshot in a comparable form: per database, sorted keys with their type, element
/// count, every element's bytes (unordered collections sorted) and deadline.
fn shape(s: &Snapshot) -> Vec<Vec<(Vec<u8>, Vec<Vec<u8>>, Option<u64>)>> {
    s.dbs
        .iter()
        .map(|records| {
            let mut keys: Vec<_> = records
                .iter()
                .map(|r| {
                    let mut parts: Vec<Vec<u8>> = match &r.value {
                        Value::Str(b) => vec![b.to_vec()],
                        Value::List(l) => l.iter().map(|b| b.to_vec()).collect(),
                        Value::Set(t) => t.iter().map(|(m, ())| m.to_vec()).collect(),
                        Value::Hash(t) => t.iter().map(|(f, v)| [&f[..], b"=", &v[..]].concat()).collect(),
                        Value::ZSet(z) => z.iter().map(|(m, s)| [&m[..], &s.to_le_bytes()[..]].concat()).collect(),
                    };
                    if matches!(r.value, Value::Set(_) | Value::Hash(_)) {
                        parts.sort();
                    }
                    (r.key.to_vec(), parts, r.deadline)
                })
                .collect();
            keys.sort();
            keys
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let pool = common::pool();
    let Ok(snapshot) = decode(data, pool, &LIMITS) else {
        return;
    };
    assert_eq!(snapshot.dbs.len(), LIMITS.databases);
    for r in snapshot.dbs.iter().flatten() {
        assert!(r.key.len() <= LIMITS.max_string_len);
        let n = match &r.value {
            Value::Str(b) => {
                assert!(b.len() <= LIMITS.max_string_len);
                1
            }
            Value::List(l) => l.len(),
            Value::Set(t) => t.len(),
            Value::Hash(t) => t.len(),
            Value::ZSet(z) => z.len(),
        };
        assert!(n >= 1 && n <= LIMITS.max_elements, "{n} elements");
    }
    let mut bytes = Vec::new();
    encode(&snapshot, 0, &mut bytes);
    let again = decode(&bytes, pool, &LIMITS).expect("Ferry's own encoding decodes");
    assert_eq!(shape(&again), shape(&snapshot), "the round trip changed the data");
});
