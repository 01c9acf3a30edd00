//! The stock builder's API on the zFlatBuffers builder where the two differ underneath: the
//! default pool behind `new()`, and the one-slice views (`finished_data`, `unfinished_data`,
//! `mut_finished_buffer`, `collapse`) of a message that spans several blocks, which are
//! copies made once and counted in `stats()`. (FlatBuffers' own test suite, vendored, checks
//! the rest against the same API with messages in one block.)

mod common;

use common::builders::{Blocks, Fbb};
use flatbuffers::FlatBufferBuilder;
use flatbuffers::default_pool::{DefaultPoolError, set_default_pool};

/// A table with a string, built with the same calls on either builder; `unfinished` is called
/// on the builder after each step, with the bytes so far.
fn build<'fbb, B: Fbb<'fbb>>(fbb: &mut B, text: &str, mut unfinished: impl FnMut(&B)) {
    let s = fbb.create_string(text);
    unfinished(fbb);
    let start = fbb.start_table();
    fbb.push_slot_always(4, s);
    unfinished(fbb);
    fbb.push_slot::<u64>(6, 7, 0);
    unfinished(fbb);
    let root = fbb.end_table(start);
    unfinished(fbb);
    fbb.finish(root, None);
}

#[test]
fn new_uses_the_default_pool_and_matches_stock() {
    let mut stock = stock::FlatBufferBuilder::new();
    build(&mut stock, "ferry", |_| {});
    for mut fbb in [
        FlatBufferBuilder::new(),
        FlatBufferBuilder::default(),
        FlatBufferBuilder::with_capacity(12),
        FlatBufferBuilder::from_vec(vec![0; 100]),
    ] {
        build(&mut fbb, "ferry", |_| {});
        assert_eq!(fbb.finished_data(), stock.finished_data());
        // One block: the slice is the block itself, no copy.
        assert_eq!(fbb.stats().contiguous_copies, 0);
        assert_eq!(fbb.finished_data().as_ptr(), fbb.finished_slices()[0].as_ptr());
    }
    // The default pool is in use: it can no longer be replaced.
    let other = ferry_testkit::pool();
    assert!(matches!(
        set_default_pool(other),
        Err(DefaultPoolError::AlreadySet)
    ));
}

#[test]
#[should_panic(expected = "cannot initialize buffer bigger than 2 gigabytes")]
fn with_capacity_past_the_format_limit_panics_like_stock() {
    FlatBufferBuilder::with_capacity(flatbuffers::FLATBUFFERS_MAX_BUFFER_SIZE + 1);
}

#[test]
fn views_of_a_message_over_many_blocks_are_copies_made_once() {
    let pool = ferry_testkit::pool();
    let text = "z".repeat(300);
    let mut stock = stock::FlatBufferBuilder::new();
    let mut stock_steps = Vec::new();
    build(&mut stock, &text, |b| {
        stock_steps.push(b.unfinished_data().to_vec())
    });

    let mut fbb = Blocks::Max(16).builder(&pool);
    let mut steps = Vec::new();
    build(&mut fbb, &text, |b| steps.push(b.unfinished_data().to_vec()));
    assert_eq!(steps, stock_steps);
    let copies_while_building = fbb.stats().contiguous_copies;
    assert_eq!(copies_while_building, steps.len());

    assert!(fbb.finished_slices().len() > 1);
    let first = fbb.finished_data();
    assert_eq!(first, stock.finished_data());
    assert_eq!(fbb.unfinished_data(), stock.unfinished_data());
    // Made once: the same copy every time, counted once.
    assert_eq!(fbb.finished_data().as_ptr(), first.as_ptr());
    let stats = fbb.stats();
    assert_eq!(stats.contiguous_copies, copies_while_building + 1);
    assert!(stats.copied_bytes >= stats.len);

    // Writes to the mutable view show in `finished_data`, not in the message sent.
    let sent = fbb.finished_message();
    let (buf, head) = fbb.mut_finished_buffer();
    assert_eq!(head, 0);
    buf[0] ^= 0xff;
    assert_eq!(fbb.finished_data()[0], stock.finished_data()[0] ^ 0xff);
    assert_eq!(sent.to_vec(), stock.finished_data());

    fbb.reset();
    assert_eq!(fbb.stats().contiguous_copies, 0);
    build(&mut fbb, &text, |_| {});
    let (bytes, head) = fbb.collapse();
    let (stock_bytes, stock_head) = stock.collapse();
    assert_eq!(bytes[head..], stock_bytes[stock_head..]);
}
