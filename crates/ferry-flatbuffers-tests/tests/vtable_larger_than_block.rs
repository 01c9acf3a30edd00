//! Regression: a vtable longer than the builder's largest block.
//!
//! Found by `low_level.rs`'s random call sequences; the smallest one, with 64-byte blocks
//! (`PoolAllocator::with_first_block(&pool, 64).max_block_size(64)`):
//!
//! ```text
//! start_table(); push_slot::<u8>(64, 0, 1); end_table(..); finish(root, None)
//! ```
//!
//! Slot 30 (byte offset 64) makes a 66-byte vtable. The stock builder writes it; the
//! zFlatBuffers builder reserved every vtable as one contiguous item and panicked with "an item
//! of 66 bytes is larger than any block". Fixed in `builder.rs` (`write_vtable`): the vtable
//! is laid out in a scratch vector, looked up among the written ones there, and only a new one
//! is written, split across blocks when it is longer than one (the written vtables are compared
//! block-spanning).

mod common;

use common::assert_same_bytes;
use common::builders::{Blocks, Fbb, assert_pool_back};
use flatbuffers::{UnionWIPOffset, WIPOffset};

/// The sequence above, then `copies - 1` more tables of the same shape (deduplicated against
/// the split vtable) under a root table pointing at them; returns the vtable count.
fn build<'fbb>(fbb: &mut impl Fbb<'fbb>, slot_bytes: u16, copies: u8) -> usize {
    let mut tables = Vec::new();
    for i in 0..copies {
        let start = fbb.start_table();
        fbb.push_slot::<u8>(slot_bytes, i + 2, 1);
        tables.push(fbb.end_table(start).value());
    }
    let start = fbb.start_table();
    for (i, &t) in tables.iter().enumerate() {
        fbb.push_slot_always(4 + 2 * i as u16, WIPOffset::<UnionWIPOffset>::new(t));
    }
    let root = fbb.end_table(start);
    let vtables = fbb.num_written_vtables();
    fbb.finish(root, None);
    vtables
}

#[test]
fn the_smallest_sequence_matches_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let mut fbb = Blocks::Tiny.builder(&pool);
    let mut stock = stock::FlatBufferBuilder::new();
    let start = Fbb::start_table(&mut fbb);
    Fbb::push_slot::<u8>(&mut fbb, 64, 0, 1);
    let root = Fbb::end_table(&mut fbb, start);
    Fbb::finish(&mut fbb, root, None);
    let start = stock.start_table();
    stock.push_slot::<u8>(64, 0, 1);
    let root = stock.end_table(start);
    stock.finish(root, None);
    let bytes = fbb.finished_message().to_vec();
    assert_same_bytes(&bytes, stock.finished_data(), "66-byte vtable");
    drop(fbb);
    assert_pool_back(&pool, baseline);
}

/// Vtables of 66 to 206 bytes (slots 30 to 100), several alike: written split once, then found
/// again by deduplication; the same bytes and vtable counts as the stock builder.
#[test]
fn split_vtables_are_deduplicated_like_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    for blocks in Blocks::ALL {
        for slot in [30u16, 31, 47, 100] {
            let mut fbb = blocks.builder(&pool);
            let mut stock = stock::FlatBufferBuilder::new();
            let ours = build(&mut fbb, 4 + 2 * slot, 5);
            let theirs = build(&mut stock, 4 + 2 * slot, 5);
            assert_eq!(ours, theirs, "{blocks:?} slot {slot}: vtables written");
            // Five tables of one field, and the root: six vtables without deduplication. The
            // tables have one or two layouts (a vtable whose length is not a multiple of 4
            // shifts the next table's alignment padding), so at most three are written.
            assert!(
                ours <= 3,
                "{blocks:?} slot {slot}: {ours} vtables, not deduplicated"
            );
            assert_same_bytes(
                &fbb.finished_message().to_vec(),
                stock.finished_data(),
                &format!("{blocks:?} slot {slot}"),
            );
        }
    }
    assert_pool_back(&pool, baseline);
}
