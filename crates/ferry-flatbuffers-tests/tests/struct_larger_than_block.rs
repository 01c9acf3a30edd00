//! Regression: a struct longer than the builder's largest block.
//!
//! Found in review after the vtable bug (`vtable_larger_than_block.rs`): with 64-byte blocks
//! (`Blocks::Tiny`), pushing a struct of more than 64 bytes, as a table field or as a vector
//! element, panicked with "an item of N bytes is larger than any block", where the stock
//! builder writes it. Fixed in `builder.rs` (`push_at_aligned`): such a struct is written aside
//! and spread over blocks like long data.

mod common;

use common::assert_same_bytes;
use common::builders::{Blocks, Fbb, assert_pool_back};
use flatbuffers::{Push, PushAlignment};

/// A 100-byte struct, aligned to 4 (as `flatc` would generate for `struct Big { a: [uint:25]; }`).
#[derive(Clone, Copy, PartialEq)]
struct Big([u8; 100]);

// `Push::push` is declared `unsafe fn` by the trait (as flatc's generated structs implement it);
// this body does nothing unsafe.
#[allow(unsafe_code)]
impl Push for Big {
    type Output = Big;

    unsafe fn push(&self, dst: &mut [u8], _written_len: usize) {
        dst[..100].copy_from_slice(&self.0);
    }

    fn size() -> usize {
        100
    }

    fn alignment() -> PushAlignment {
        PushAlignment::new(4)
    }
}

fn big(seed: u8) -> Big {
    let mut b = [0u8; 100];
    for (i, x) in b.iter_mut().enumerate() {
        *x = seed.wrapping_mul(31).wrapping_add(i as u8);
    }
    Big(b)
}

/// A table with a `Big` field and a vector of three `Big`s.
fn build<'fbb>(fbb: &mut impl Fbb<'fbb>) {
    let v = fbb.create_vector(&[big(1), big(2), big(3)]);
    let start = fbb.start_table();
    fbb.push_slot_always(4, big(9));
    fbb.push_slot_always(6, v);
    let root = fbb.end_table(start);
    fbb.finish(root, None);
}

#[test]
fn structs_longer_than_a_block_match_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    for blocks in Blocks::ALL {
        let mut fbb = blocks.builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        build(&mut fbb);
        build(&mut stock);
        let bytes = fbb.finished_message().to_vec();
        assert_same_bytes(
            &bytes,
            stock.finished_data(),
            &format!("{blocks:?}: 100-byte structs"),
        );
    }
    assert_pool_back(&pool, baseline);
}
