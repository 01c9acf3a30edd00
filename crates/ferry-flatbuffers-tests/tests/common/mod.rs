//! Shared by ferry-flatbuffers-tests' integration tests: one interface over both builders
//! ([`builders`]), random objects of the schema for both generated APIs ([`random`]),
//! external tools with the skip-or-fail rule ([`tools`]), and messages and pools for the tests
//! that send over Ferry's transports ([`net`]).
//!
//! What it is not: a test. Each test file states what it checks.

#![allow(dead_code)] // each test binary uses its own subset

pub mod builders;
pub mod net;
pub mod random;
pub mod tools;

/// Asserts that two messages are the same bytes, naming the first difference (a
/// `assert_eq!` of two 100 KiB vectors prints both in full).
pub fn assert_same_bytes(ours: &[u8], stock: &[u8], what: &str) {
    if ours == stock {
        return;
    }
    let first = ours
        .iter()
        .zip(stock)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(stock.len()));
    let window = |b: &[u8]| b[first.saturating_sub(8)..(first + 8).min(b.len())].to_vec();
    panic!(
        "{what}: zFlatBuffers and stock bytes differ: lengths {} vs {}, first difference at \
         byte {first}: ours {:?} vs stock {:?} (from byte {})",
        ours.len(),
        stock.len(),
        window(ours),
        window(stock),
        first.saturating_sub(8)
    );
}
