//! The bytes values are filled with, so that a client can check every response without
//! holding the data set: part `p` of the value of `key`, `len` bytes long, is the little-endian
//! words `seed + i · STEP` (`i` = 0, 1, …; the last word cut short), where `seed` hashes the
//! key and the part. Any byte out of place (a torn read, a wrong key, a stale part) shows.

/// The word step: odd, so consecutive words differ in every byte position.
const STEP: u64 = 0x9e37_79b9_7f4a_7c15;

/// The seed of part `part` of `key`'s value.
fn seed(key: &[u8], part: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    // One SplitMix64 round mixes the part in.
    let mut z = h ^ u64::from(part).wrapping_mul(STEP);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `out` with part `part` of `key`'s value.
pub fn fill(key: &[u8], part: u32, out: &mut [u8]) {
    let seed = seed(key, part);
    let mut word = seed;
    let mut chunks = out.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&word.to_le_bytes());
        word = word.wrapping_add(STEP);
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&word.to_le_bytes()[..n]);
}

/// Part `part` of `key`'s value, `len` bytes long.
pub fn value(key: &[u8], part: u32, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    fill(key, part, &mut v);
    v
}

/// The first byte at which `data` differs from part `part` of `key`'s value of `data.len()`
/// bytes, or `None` if it is that value.
pub fn mismatch(key: &[u8], part: u32, data: &[u8]) -> Option<usize> {
    let seed = seed(key, part);
    let mut chunks = data.chunks_exact(8);
    // Words first (the compiler vectorizes this loop), then the byte within the first bad one.
    let bad_word = chunks
        .by_ref()
        .zip(0u64..)
        .position(|(c, i)| c != seed.wrapping_add(i.wrapping_mul(STEP)).to_le_bytes());
    let (at, expected) = match bad_word {
        Some(w) => (
            w * 8,
            seed.wrapping_add((w as u64).wrapping_mul(STEP)).to_le_bytes(),
        ),
        None => {
            let words = data.len() / 8;
            (
                words * 8,
                seed.wrapping_add((words as u64).wrapping_mul(STEP)).to_le_bytes(),
            )
        }
    };
    data[at..]
        .iter()
        .zip(expected)
        .position(|(a, b)| *a != b)
        .map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_value_checks_and_any_changed_byte_is_found() {
        for len in [0, 1, 7, 8, 9, 100, 4096, 4099] {
            let mut v = value(b"user:42", 3, len);
            assert_eq!(mismatch(b"user:42", 3, &v), None, "len {len}");
            for at in [0, len / 2, len.saturating_sub(1)] {
                if at < len {
                    v[at] ^= 0x10;
                    assert_eq!(mismatch(b"user:42", 3, &v), Some(at), "len {len} at {at}");
                    v[at] ^= 0x10;
                }
            }
        }
    }

    #[test]
    fn other_keys_parts_and_lengths_do_not_check() {
        let v = value(b"a", 0, 64);
        assert!(mismatch(b"b", 0, &v).is_some());
        assert!(mismatch(b"a", 1, &v).is_some());
        // A prefix of a value is the value of that length: lengths are checked separately.
        assert_eq!(mismatch(b"a", 0, &v[..10]), None);
    }
}
