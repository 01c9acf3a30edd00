//! Random messages of `schema/interop.fbs` through the generated object API: the same random
//! `RootT` is packed (`RootT::pack`, i.e. `flatc`'s `create_string`, `create_vector`,
//! `push_slot` with defaults, `required`, unions, structs, nested buffers) with the zFlatBuffers
//! builder and with the stock one, and finished every way (`finish` with and without the file
//! identifier, `finish_size_prefixed` with and without, `finish_minimal`), with and without
//! `force_defaults`. Each message must be the stock builder's bytes exactly, written with the
//! same number of distinct vtables; the stock verifier must accept it and `unpack` must give
//! back the `RootT` that was packed. Three block configurations (see `Blocks`), fresh
//! builders and one reused builder; then block sizes down to one byte (proptest); pool buffers
//! back to the baseline at the end of each test.
//!
//! Seeds are fixed. A failure names its case's seed; `FERRY_FB_SEED=<that seed>` makes it the
//! first case.

mod common;

use common::assert_same_bytes;
use common::builders::{Blocks, Finish, assert_pool_back, verified_root};
use common::random::{LARGE, ferry_objects, stock_objects};
use ferry_flatbuffers_tests::{interop, stock_interop};
use ferry_testkit::Rng;
use flatbuffers::{FlatBufferBuilder, Message};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// Messages per block configuration.
const MESSAGES: u64 = 100;

/// What one case built, for the test's own checks.
struct Built {
    message: Message,
    root: interop::RootT,
}

/// Case `seed`: a random `RootT`, finish variant and `force_defaults`, packed into both
/// (reset or fresh) builders and checked (bytes, vtable count, verifier, read-back).
fn check_case(fbb: &mut FlatBufferBuilder, stock: &mut stock::FlatBufferBuilder, seed: u64) -> Built {
    check_sized_case(fbb, stock, seed, LARGE)
}

/// [`check_case`] with strings and vectors of up to about `large` bytes.
fn check_sized_case(
    fbb: &mut FlatBufferBuilder,
    stock: &mut stock::FlatBufferBuilder,
    seed: u64,
    large: usize,
) -> Built {
    let what = format!("case seed {seed}");
    let mut rng = Rng::new(seed);
    let finish = Finish::random(&mut rng);
    let force_defaults = rng.chance(1, 3);
    let ours = ferry_objects::root(&mut rng.clone(), large);
    let theirs: stock_interop::RootT = stock_objects::root(&mut rng, large);

    fbb.force_defaults(force_defaults);
    stock.force_defaults(force_defaults);
    let root = ours.pack(fbb);
    let stock_root = theirs.pack(stock);
    assert_eq!(root.value(), stock_root.value(), "{what}: root offset");
    // Before finishing: `finish` forgets the written vtables, in both builders.
    assert_eq!(
        fbb.num_written_vtables(),
        stock.num_written_vtables(),
        "{what}: distinct vtables written"
    );
    finish.apply(fbb, root);
    finish.apply(stock, stock_root);

    let message = fbb.finished_message();
    let bytes = message.to_vec();
    assert_eq!(message.len(), bytes.len(), "{what}: Message::len");
    assert_same_bytes(
        &bytes,
        stock.finished_data(),
        &format!("{what} ({finish:?}, force_defaults {force_defaults})"),
    );

    if force_defaults && matches!(ours.payload, interop::PayloadT::NONE) {
        // `force_defaults` makes generated code write an absent union's NONE type (its
        // `add_payload_type` is a `push_slot` with default NONE), and the stock verifier
        // rejects a union type without a value: a property of the stock builder and verifier
        // (the bytes above are the stock builder's), so these cases are checked for that.
        let verified = if finish.size_prefixed() {
            stock::size_prefixed_root::<interop::Root>(&bytes)
        } else {
            stock::root::<interop::Root>(&bytes)
        };
        let err = verified.expect_err("a NONE union type without a value");
        assert!(
            matches!(err, stock::InvalidFlatbuffer::InconsistentUnion { .. }),
            "{what}: {err}"
        );
        return Built { message, root: ours };
    }
    let read = verified_root(&bytes, finish);
    assert!(
        read.unpack() == ours,
        "{what}: unpack() differs from the packed RootT"
    );
    if let Some(nested) = read.nested() {
        let item = stock::root::<interop::Item>(nested.bytes())
            .unwrap_or_else(|e| panic!("{what}: nested Item rejected: {e}"));
        let via_accessor = read.nested_nested_flatbuffer().expect("nested is set");
        assert!(item.unpack() == via_accessor.unpack(), "{what}: nested Item");
    }
    Built { message, root: ours }
}

/// The longest string or vector in `root`, in bytes (what the `Split` blocks must cut).
fn largest_item(root: &interop::RootT) -> usize {
    let len = |n: Option<usize>, size: usize| n.unwrap_or(0) * size;
    [
        root.name.len(),
        len(root.note.as_ref().map(String::len), 1),
        len(root.bytes.as_ref().map(Vec::len), 1),
        len(root.ints.as_ref().map(Vec::len), 4),
        len(root.longs.as_ref().map(Vec::len), 8),
        len(root.doubles.as_ref().map(Vec::len), 8),
        len(root.flags.as_ref().map(Vec::len), 1),
        len(root.colors.as_ref().map(Vec::len), 1),
        len(root.points.as_ref().map(Vec::len), 32),
        len(root.items.as_ref().map(Vec::len), 4),
        len(root.names.as_ref().map(Vec::len), 4),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

/// [`MESSAGES`] cases with fresh builders of `blocks`, each also given to `check`; then the
/// pool must be back to its baseline (every builder and message dropped).
fn fresh_builders(blocks: Blocks, seed_base: u64, mut check: impl FnMut(&Built)) {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let seed = ferry_testkit::seed("FERRY_FB_SEED", seed_base);
    let (mut total, mut largest, mut slices) = (0, 0, 0);
    for case in 0..MESSAGES {
        let mut fbb = blocks.builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        let built = check_case(&mut fbb, &mut stock, seed.wrapping_add(case));
        check(&built);
        total += built.message.len();
        largest = largest.max(built.message.len());
        slices += built.message.slices().len();
    }
    eprintln!("{blocks:?}: {MESSAGES} messages, {total} bytes in {slices} slices, largest {largest}");
    assert_pool_back(&pool, baseline);
}

#[test]
fn random_messages_default_blocks_match_stock() {
    fresh_builders(Blocks::Default, 0x5eed_0100_0000, |_| {});
}

#[test]
fn random_messages_tiny_blocks_match_stock() {
    fresh_builders(Blocks::Tiny, 0x5eed_0200_0000, |built| {
        let m = &built.message;
        // Every slice is a 64-byte block's written part, so a message spans at least
        // len / 64 of them: the builder really spliced blocks.
        assert!(m.slices().iter().all(|s| s.len() <= 64), "a slice over 64 bytes");
        assert!(m.slices().len() >= m.len().div_ceil(64), "too few slices");
    });
}

#[test]
fn random_messages_split_blocks_match_stock() {
    let mut larger_than_a_block = 0;
    fresh_builders(Blocks::Split, 0x5eed_0300_0000, |built| {
        assert!(built.message.slices().iter().all(|s| s.len() <= 4096));
        if largest_item(&built.root) > 4096 {
            larger_than_a_block += 1;
        }
    });
    // The seeds give several strings or vectors larger than any block: the split path ran.
    assert!(
        larger_than_a_block >= 3,
        "only {larger_than_a_block} messages had an item larger than a 4 KiB block"
    );
}

/// Any block size works, down to one byte: random messages (proptest, fixed seed) with blocks
/// capped at a tiny size, where alignment padding, scalars, offsets and vtables are split
/// across blocks, give the stock builder's bytes, and `finished_data` (a copy, the message
/// spanning many blocks) is those bytes too.
#[test]
fn random_messages_any_block_size_match_stock() {
    const SIZES: [usize; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24];
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let seed = ferry_testkit::seed("FERRY_FB_SEED", 0x5eed_0500_0000);
    let mut runner = TestRunner::new(Config {
        cases: 96,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (prop::sample::select(SIZES.to_vec()), any::<u64>());
    let result = runner.run(&strategy, |(size, case_seed)| {
        let mut fbb = Blocks::Max(size).builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        let built = check_sized_case(&mut fbb, &mut stock, case_seed, 2048);
        prop_assert_eq!(fbb.finished_data(), stock.finished_data(), "block size {}", size);
        if built.message.len() > 64 {
            prop_assert!(fbb.stats().contiguous_copies == 1, "{:?}", fbb.stats());
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    assert_pool_back(&pool, baseline);
}

/// One builder of each kind for all the messages, `reset` between them; each message must
/// stay intact while the builder goes on to the next (it holds its blocks).
#[test]
fn one_builder_reused_with_reset() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let seed = ferry_testkit::seed("FERRY_FB_SEED", 0x5eed_0400_0000);
    for (i, blocks) in Blocks::ALL.into_iter().enumerate() {
        let mut fbb = blocks.builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        let mut previous: Option<(Message, Vec<u8>)> = None;
        for case in 0..MESSAGES / 2 {
            fbb.reset();
            stock.reset();
            let built = check_case(&mut fbb, &mut stock, seed.wrapping_add(1000 * i as u64 + case));
            if let Some((message, bytes)) = previous.take() {
                assert!(
                    message.to_vec() == bytes,
                    "{blocks:?} case {case}: the previous message changed"
                );
            }
            assert!(
                pool.stats().buffers_outstanding() > baseline,
                "a held message holds pool blocks"
            );
            let bytes = built.message.to_vec();
            previous = Some((built.message, bytes));
        }
    }
    assert_pool_back(&pool, baseline);
}

/// Tables of one shape share one vtable: 50 identical-shaped items and the root make two
/// vtables in both builders (and the items' tables point at the first one written).
#[test]
fn vtables_deduplicated_like_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    for blocks in Blocks::ALL {
        // Field by field: the object types are `#[non_exhaustive]`.
        macro_rules! dedup_root {
            ($api:ident) => {{
                let item = |i: u32| {
                    let mut item = $api::ItemT::default();
                    item.id = i + 1;
                    item.label = Some(format!("item {i}"));
                    item
                };
                let mut root = $api::RootT::default();
                root.name = "dedup".into();
                root.items = Some((0..50).map(item).collect());
                root.child = Some(Box::new(item(99)));
                root
            }};
        }
        let ours = dedup_root!(interop);
        let theirs = dedup_root!(stock_interop);
        let mut fbb = blocks.builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        let root = ours.pack(&mut fbb);
        let stock_root = theirs.pack(&mut stock);
        assert_eq!(stock.num_written_vtables(), 2, "the stock builder's count");
        assert_eq!(
            fbb.num_written_vtables(),
            2,
            "{blocks:?}: one Item vtable, one Root vtable"
        );
        fbb.finish(root, Some(interop::ROOT_IDENTIFIER));
        stock.finish(stock_root, Some(interop::ROOT_IDENTIFIER));
        let bytes = fbb.finished_message().to_vec();
        assert_same_bytes(&bytes, stock.finished_data(), &format!("dedup, {blocks:?}"));
        assert!(verified_root(&bytes, Finish::Identified).unpack() == ours);
    }
    assert_pool_back(&pool, baseline);
}

/// `(required)`: `Root::create` without `name` panics in both builders, from `required`
/// reading the table's vtable (across blocks, with tiny ones).
#[test]
fn missing_required_field_panics_like_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let panic_text = |p: Box<dyn std::any::Any + Send>| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    };
    let stock = std::panic::catch_unwind(|| {
        let mut fbb = stock::FlatBufferBuilder::new();
        let note = fbb.create_string("no name");
        stock_interop::Root::create(
            &mut fbb,
            &stock_interop::RootArgs {
                note: Some(note),
                ..Default::default()
            },
        );
    })
    .expect_err("the stock builder panics");
    for blocks in Blocks::ALL {
        let pool = pool.clone();
        let ours = std::panic::catch_unwind(move || {
            let mut fbb = blocks.builder(&pool);
            let note = fbb.create_string("no name");
            interop::Root::create(
                &mut fbb,
                &interop::RootArgs {
                    note: Some(note),
                    ..Default::default()
                },
            );
        })
        .expect_err("the zFlatBuffers builder panics");
        assert_eq!(panic_text(ours), "missing required field name", "{blocks:?}");
    }
    assert_eq!(panic_text(stock), "missing required field name");
    assert_pool_back(&pool, baseline);
}

/// The same `RootT` with a required field set is accepted by `required` in every block
/// configuration even when the vtable and the table lie in different blocks (a counterpart
/// of the test above, so that it cannot pass by `required` always panicking).
#[test]
fn required_field_present_is_accepted() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    for blocks in Blocks::ALL {
        let mut fbb = blocks.builder(&pool);
        let name = fbb.create_string("named");
        let root = interop::Root::create(
            &mut fbb,
            &interop::RootArgs {
                name: Some(name),
                ..Default::default()
            },
        );
        fbb.finish_minimal(root);
        let bytes = fbb.finished_message().to_vec();
        assert_eq!(verified_root(&bytes, Finish::Minimal).name(), "named");
    }
    assert_pool_back(&pool, baseline);
}

/// Writes the `flatbuffers` fuzz target's seeds (`fuzz/seeds/flatbuffers`): random messages,
/// plain and size-prefixed, of a few sizes. Run by hand:
/// `cargo test -p ferry-flatbuffers-tests --test object_api write_fuzz_seeds -- --ignored`.
#[test]
#[ignore = "writes fuzz seeds into the repository"]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/flatbuffers");
    std::fs::create_dir_all(&dir).unwrap();
    let pool = ferry_testkit::pool();
    for seed in 0..6u64 {
        let mut rng = Rng::new(seed);
        // Small messages: libFuzzer mutates short inputs best.
        let object = ferry_objects::root(&mut rng, 64);
        let mut fbb = FlatBufferBuilder::with_pool(&pool);
        let root = object.pack(&mut fbb);
        if seed % 2 == 0 {
            fbb.finish(root, None);
        } else {
            fbb.finish_size_prefixed(root, None);
        }
        std::fs::write(
            dir.join(format!("root-{seed}.bin")),
            fbb.finished_message().to_vec(),
        )
        .unwrap();
    }
}
