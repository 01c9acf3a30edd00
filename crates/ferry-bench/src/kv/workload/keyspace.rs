//! Building a key space: unique, reproducible key strings of a chosen length, and the memory
//! budget that caps how many objects a workload preloads.

use rand::Rng;

use super::Object;

/// Digits of the zero-padded decimal index inside every generated key (`u32::MAX` has 10).
const INDEX_DIGITS: usize = 10;

/// The 64 filler characters: ASCII letters, digits, `-` and `_` (valid in memcached, Redis and
/// URL keys; keys are strings in the store, so they must be UTF-8).
const FILLER: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The shortest key [`make_key`] can build with `prefix`.
pub(crate) fn min_key_len(prefix: &str) -> usize {
    prefix.len() + INDEX_DIGITS
}

/// Key number `index` of a key space: `prefix`, the index as 10 decimal digits, then filler
/// drawn from `rng` up to `len` bytes. The fixed-width index makes keys unique whatever the
/// filler; the filler makes them look like the trace's (random bytes, not a counter), and it
/// comes from the seed, so a seed always gives the same keys.
///
/// `len` must be at least [`min_key_len`]`(prefix)`; a shorter `len` is raised to it.
pub(crate) fn make_key<R: Rng + ?Sized>(prefix: &str, index: u32, len: usize, rng: &mut R) -> Vec<u8> {
    let len = len.max(min_key_len(prefix));
    let mut key = Vec::with_capacity(len);
    key.extend_from_slice(prefix.as_bytes());
    key.extend_from_slice(format!("{index:0width$}", width = INDEX_DIGITS).as_bytes());
    // One 64-bit draw gives ten 6-bit filler characters.
    while key.len() < len {
        let mut bits: u64 = rng.random();
        for _ in 0..10 {
            if key.len() == len {
                break;
            }
            key.push(FILLER[(bits & 63) as usize]);
            bits >>= 6;
        }
    }
    key
}

/// Generates objects `0..keys` with `make(index)`, stopping early at the first object that
/// would overflow `budget` bytes. Returns the objects and, when it stopped early, a note saying
/// so. Errors if not even one object fits.
pub(crate) fn fill<F: FnMut(u32) -> Object>(
    what: &str,
    keys: u32,
    budget: u64,
    mut make: F,
) -> Result<(Vec<Object>, Option<String>), String> {
    if keys == 0 {
        return Err(format!("{what}: the key space needs at least 1 key"));
    }
    let (mut objects, mut used) = (Vec::new(), 0u64);
    for index in 0..keys {
        let object = make(index);
        let bytes = object.key.len() as u64 + object.value_len();
        if used + bytes > budget {
            if objects.is_empty() {
                return Err(format!(
                    "{what}: the first object ({bytes} bytes) does not fit the memory budget of {budget} bytes"
                ));
            }
            let note = format!(
                "{what}: key count reduced from {keys} to {} to fit the memory budget of {budget} bytes \
                 (keys plus values; --memory-budget raises it)",
                objects.len()
            );
            return Ok((objects, Some(note)));
        }
        used += bytes;
        objects.push(object);
    }
    Ok((objects, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::workload::dist::{Stream, rng};

    #[test]
    fn keys_are_unique_sized_and_seeded() {
        let mut a = rng(4, Stream::Objects);
        let mut b = rng(4, Stream::Objects);
        let mut seen = std::collections::HashSet::new();
        for i in 0..1_000 {
            let k = make_key("g:", i, 64, &mut a);
            assert_eq!(k.len(), 64);
            assert!(k.is_ascii());
            assert_eq!(k, make_key("g:", i, 64, &mut b));
            assert!(seen.insert(k));
        }
        assert_eq!(make_key("user", 7, 3, &mut a).len(), min_key_len("user"));
        assert!(make_key("user", 7, 14, &mut a).starts_with(b"user0000000007"));
    }

    #[test]
    fn fill_stops_at_the_budget() {
        let obj = |i: u32| Object {
            key: vec![b'k'; 10],
            parts: vec![90 + i % 2],
        };
        let (all, note) = fill("t", 5, 10_000, obj).unwrap();
        assert_eq!((all.len(), note), (5, None));
        let (some, note) = fill("t", 5, 250, obj).unwrap();
        assert_eq!(some.len(), 2);
        assert!(note.unwrap().contains("reduced from 5 to 2"));
        assert!(fill("t", 5, 50, obj).is_err());
        assert!(fill("t", 0, 50, obj).is_err());
    }
}
