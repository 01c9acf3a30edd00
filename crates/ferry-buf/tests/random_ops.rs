//! Random sequences of alloc / write / freeze / clone / slice / recover / into_bytes / drop,
//! checking every live handle's bytes after each step and that statistics return to their
//! start. A deterministic run for Miri, a proptest natively.

mod common;

use bytes::Bytes;
use common::{REGION, assert_no_leaks, small_pool};
use ferry_buf::{BufMut, Pool, PoolError, SharedBuf};
use proptest::prelude::*;

/// Live handles with the bytes each must show.
#[derive(Default)]
struct Model {
    writing: Vec<(BufMut, Vec<u8>)>,
    shared: Vec<(SharedBuf, Vec<u8>)>,
    bytes: Vec<(Bytes, Vec<u8>)>,
}

impl Model {
    fn check(&self) {
        for (buf, want) in &self.writing {
            assert_eq!(&buf[..], &want[..]);
        }
        for (buf, want) in &self.shared {
            assert_eq!(&buf[..], &want[..]);
            assert!(buf.ref_count() >= 1);
        }
        for (buf, want) in &self.bytes {
            assert_eq!(&buf[..], &want[..]);
        }
    }
}

/// Picks a sub-range `start..end` of `0..len` from two random numbers.
fn range(len: usize, a: usize, b: usize) -> (usize, usize) {
    let start = a % (len + 1);
    (start, start + b % (len - start + 1))
}

/// Runs one sequence; each word encodes an operation and its arguments.
fn run(pool: &Pool, words: &[u64]) {
    let mut model = Model::default();
    for (step, &word) in words.iter().enumerate() {
        let op = word % 10;
        let a = (word >> 8) as u32 as usize;
        let b = (word >> 40) as usize;
        match op {
            0 | 1 => {
                // Mostly small sizes, sometimes up to the largest class.
                let size = if a % 8 == 0 { a % (REGION + 1) } else { a % 2000 };
                match pool.alloc(size) {
                    Ok(mut buf) => {
                        // A byte per step, and a different last byte, tell buffers apart.
                        let mut data = vec![(step * 7) as u8; b % (buf.capacity() + 1)];
                        if let Some(last) = data.last_mut() {
                            *last ^= 0x5A;
                        }
                        buf.extend_from_slice(&data);
                        model.writing.push((buf, data));
                    }
                    Err(PoolError::Exhausted { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            2 if !model.writing.is_empty() => {
                let (buf, data) = model.writing.swap_remove(a % model.writing.len());
                model.shared.push((buf.freeze(), data));
            }
            3 if !model.shared.is_empty() => {
                let (buf, data) = &model.shared[a % model.shared.len()];
                let (clone, data) = (buf.clone(), data.clone());
                model.shared.push((clone, data));
            }
            4 if !model.shared.is_empty() => {
                let (buf, data) = &model.shared[a % model.shared.len()];
                let (start, end) = range(buf.len(), a, b);
                let sub = (buf.slice(start..end), data[start..end].to_vec());
                model.shared.push(sub);
            }
            5 if !model.shared.is_empty() => {
                let (buf, data) = &model.shared[a % model.shared.len()];
                let (start, end) = range(buf.len(), a, b);
                let before = buf.ref_count();
                match pool.recover(&buf[start..end]) {
                    Some(got) => {
                        assert!(end > start);
                        assert_eq!(got.as_ptr(), buf[start..].as_ptr());
                        assert_eq!(buf.ref_count(), before + 1);
                        let data = data[start..end].to_vec();
                        model.shared.push((got, data));
                    }
                    None => assert_eq!(start, end, "only empty ranges are refused"),
                }
            }
            6 if !model.shared.is_empty() => {
                let (buf, data) = model.shared.swap_remove(a % model.shared.len());
                model.bytes.push((buf.into_bytes(), data));
            }
            7 if !model.shared.is_empty() => {
                model.shared.swap_remove(a % model.shared.len());
            }
            8 if !model.writing.is_empty() => {
                model.writing.swap_remove(a % model.writing.len());
            }
            9 if !model.bytes.is_empty() => {
                model.bytes.swap_remove(a % model.bytes.len());
            }
            _ => {}
        }
        model.check();
    }
    drop(model);
    assert_no_leaks(pool);
}

/// SplitMix64, so the Miri run needs no randomness source.
fn words(seed: u64, n: usize) -> Vec<u64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

#[test]
fn deterministic_sequences() {
    let (seeds, steps) = if cfg!(miri) { (2, 150) } else { (50, 2_000) };
    let pool = small_pool();
    for seed in 0..seeds {
        run(&pool, &words(seed, steps));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(miri, ignore = "proptest is slow under Miri; deterministic_sequences covers it")]
    fn random_sequences(words in proptest::collection::vec(any::<u64>(), 0..400)) {
        let pool = small_pool();
        run(&pool, &words);
        // The pool is reusable after a sequence: statistics are back to zero.
        run(&pool, &words);
    }
}
