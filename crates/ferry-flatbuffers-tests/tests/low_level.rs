//! The builder's own calls, made on the zFlatBuffers builder and on the stock one through
//! one interface (`common::builders::Fbb`), must give the same offsets, the same vtable
//! counts and the same bytes:
//!
//! - `root_built_by_hand_matches_stock`: messages of `schema/interop.fbs` built without the
//!   generated builders: every vector made one of four ways (`create_vector`,
//!   `create_vector_from_iter`, `start_vector`/`push`/`end_vector`, and `create_byte_string`
//!   for bytes), strings made with `create_string` or interned with `create_shared_string`,
//!   scalars pushed with `push_slot` (default skipped unless `force_defaults`) or
//!   `push_slot_always`, and a table's fields pushed in random order. The stock verifier
//!   accepts each and `unpack` gives back the random `RootT` it was built from.
//! - `random_call_sequences_match_stock`: schema-less random call sequences (proptest, fixed
//!   seed, shrunk to the smallest failing sequence): tables of random slots (vtables past the
//!   64-byte tiny block included), scalars of every width with and without their defaults,
//!   structs, offsets to earlier objects, vectors of every alignment, strings and byte
//!   strings, shared strings, `force_defaults` toggled mid-message, every finish variant.
//! - `shared_strings_interned_like_stock`: repeats, prefixes, and strings longer than a block.
//!
//! In all three block configurations (the random sequences also with blocks of 1 to 9 bytes);
//! pool buffers back to baseline after each test.

mod common;

use common::assert_same_bytes;
use common::builders::{Blocks, Fbb, Finish, assert_pool_back, verified_root};
use common::random::{LARGE, ferry_objects};
use ferry_flatbuffers_tests::interop::{self, Color, Item, Level, Payload, PayloadT, Root, Vec3};
use ferry_testkit::Rng;
use flatbuffers::{Push, UnionWIPOffset, VOffsetT, WIPOffset};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// Cases per block configuration in `root_built_by_hand_matches_stock`.
const ROOTS: u64 = 30;

// ---------------------------------------------------------------------------------------------
// A `Root` built by hand.

/// A vector of `items`, made one of three ways (the same way on both builders, as the `rng`
/// clones are equal).
fn vector<'fbb, T: Push + Copy + 'fbb>(
    fbb: &mut impl Fbb<'fbb>,
    rng: &mut Rng,
    items: &[T],
) -> WIPOffset<UnionWIPOffset>
where
    T::Output: 'fbb,
{
    let off = match rng.below(3) {
        0 => fbb.create_vector(items).value(),
        1 => fbb.create_vector_from_iter(items.iter().copied()).value(),
        _ => {
            fbb.start_vector::<T>(items.len());
            for item in items.iter().rev() {
                fbb.push(*item);
            }
            fbb.end_vector::<T>(items.len()).value()
        }
    };
    WIPOffset::new(off)
}

/// A string, plain or interned.
fn string<'fbb>(fbb: &mut impl Fbb<'fbb>, rng: &mut Rng, s: &str) -> WIPOffset<UnionWIPOffset> {
    let off = if rng.chance(1, 2) {
        fbb.create_shared_string(s).value()
    } else {
        fbb.create_string(s).value()
    };
    WIPOffset::new(off)
}

/// A vector of strings, each plain or interned.
fn strings<'fbb>(fbb: &mut impl Fbb<'fbb>, rng: &mut Rng, items: &[String]) -> WIPOffset<UnionWIPOffset> {
    let offs: Vec<_> = items.iter().map(|s| string(fbb, rng, s)).collect();
    vector(fbb, rng, &offs)
}

/// One field of the table being built: pushed later, in a random order.
enum Slot {
    U8(VOffsetT, u8, u8),
    I8(VOffsetT, i8, i8),
    U16(VOffsetT, u16, u16),
    I16(VOffsetT, i16, i16),
    U32(VOffsetT, u32, u32),
    I32(VOffsetT, i32, i32),
    U64(VOffsetT, u64, u64),
    I64(VOffsetT, i64, i64),
    F32(VOffsetT, f32, f32),
    F64(VOffsetT, f64, f64),
    Bool(VOffsetT, bool, bool),
    Color(VOffsetT, Color, Color),
    Level(VOffsetT, Level, Level),
    Payload(VOffsetT, Payload, Payload),
    /// Always pushed (an optional scalar that is set).
    I32Always(VOffsetT, i32),
    Struct(VOffsetT, Vec3),
    Offset(VOffsetT, WIPOffset<UnionWIPOffset>),
}

/// Pushes `slots` in a random order, each scalar with `push_slot` (skipped when it equals its
/// default, unless `force_defaults`) or, now and then, `push_slot_always`.
fn table<'fbb>(
    fbb: &mut impl Fbb<'fbb>,
    rng: &mut Rng,
    mut slots: Vec<Slot>,
) -> WIPOffset<flatbuffers::TableFinishedWIPOffset> {
    for i in (1..slots.len()).rev() {
        slots.swap(i, rng.range(0, i + 1));
    }
    let start = fbb.start_table();
    for slot in slots {
        let always = rng.chance(1, 8);
        macro_rules! scalar {
            ($at:expr, $x:expr, $default:expr) => {
                if always && $x != $default {
                    fbb.push_slot_always($at, $x)
                } else {
                    fbb.push_slot($at, $x, $default)
                }
            };
        }
        match slot {
            Slot::U8(at, x, d) => scalar!(at, x, d),
            Slot::I8(at, x, d) => scalar!(at, x, d),
            Slot::U16(at, x, d) => scalar!(at, x, d),
            Slot::I16(at, x, d) => scalar!(at, x, d),
            Slot::U32(at, x, d) => scalar!(at, x, d),
            Slot::I32(at, x, d) => scalar!(at, x, d),
            Slot::U64(at, x, d) => scalar!(at, x, d),
            Slot::I64(at, x, d) => scalar!(at, x, d),
            Slot::F32(at, x, d) => scalar!(at, x, d),
            Slot::F64(at, x, d) => scalar!(at, x, d),
            Slot::Bool(at, x, d) => scalar!(at, x, d),
            Slot::Color(at, x, d) => scalar!(at, x, d),
            Slot::Level(at, x, d) => scalar!(at, x, d),
            Slot::Payload(at, x, d) => scalar!(at, x, d),
            Slot::I32Always(at, x) => fbb.push_slot_always(at, x),
            Slot::Struct(at, x) => fbb.push_slot_always(at, x),
            Slot::Offset(at, x) => fbb.push_slot_always(at, x),
        }
    }
    fbb.end_table(start)
}

/// An `Item` by hand.
fn item<'fbb>(fbb: &mut impl Fbb<'fbb>, rng: &mut Rng, item: &interop::ItemT) -> WIPOffset<UnionWIPOffset> {
    let label = item.label.as_ref().map(|s| string(fbb, rng, s));
    let tags = item.tags.as_ref().map(|t| strings(fbb, rng, t));
    let mut slots = vec![
        Slot::U32(Item::VT_ID, item.id, 0),
        Slot::F64(Item::VT_WEIGHT, item.weight, 1.5),
    ];
    slots.extend(label.map(|o| Slot::Offset(Item::VT_LABEL, o)));
    slots.extend(tags.map(|o| Slot::Offset(Item::VT_TAGS, o)));
    WIPOffset::new(table(fbb, rng, slots).value())
}

/// `root` by hand, finished `finish`; returns every offset the builder handed out.
fn root_by_hand<'fbb>(
    fbb: &mut impl Fbb<'fbb>,
    mut rng: Rng,
    root: &interop::RootT,
    finish: Finish,
) -> (Vec<u32>, usize) {
    let rng = &mut rng;
    let mut offsets = Vec::new();
    let mut track = |o: WIPOffset<UnionWIPOffset>| {
        offsets.push(o.value());
        o
    };
    let name = track(string(fbb, rng, &root.name));
    let note = root.note.as_ref().map(|s| track(string(fbb, rng, s)));
    let bytes = root.bytes.as_ref().map(|b| {
        track(if rng.chance(1, 4) {
            // A byte string is a [ubyte] with a NUL after it: the same vector to a reader.
            WIPOffset::new(fbb.create_byte_string(b).value())
        } else {
            vector(fbb, rng, b)
        })
    });
    let ints = root.ints.as_ref().map(|v| track(vector(fbb, rng, v)));
    let longs = root.longs.as_ref().map(|v| track(vector(fbb, rng, v)));
    let doubles = root.doubles.as_ref().map(|v| track(vector(fbb, rng, v)));
    let flags = root.flags.as_ref().map(|v| track(vector(fbb, rng, v)));
    let colors = root.colors.as_ref().map(|v| track(vector(fbb, rng, v)));
    let points = root.points.as_ref().map(|v| {
        let packed: Vec<Vec3> = v.iter().map(|p| p.pack()).collect();
        track(vector(fbb, rng, &packed))
    });
    let items = root.items.as_ref().map(|v| {
        let offs: Vec<_> = v.iter().map(|i| item(fbb, rng, i)).collect();
        track(vector(fbb, rng, &offs))
    });
    let names = root.names.as_ref().map(|v| track(strings(fbb, rng, v)));
    let payload = match &root.payload {
        PayloadT::NONE => None,
        PayloadT::Item(i) => Some(track(item(fbb, rng, i))),
        PayloadT::Note(n) => {
            let text = n.text.as_ref().map(|s| string(fbb, rng, s));
            let mut slots = vec![Slot::I16(interop::Note::VT_SCORE, n.score, -7)];
            slots.extend(text.map(|o| Slot::Offset(interop::Note::VT_TEXT, o)));
            Some(track(WIPOffset::new(table(fbb, rng, slots).value())))
        }
        other => panic!("the schema's union has no member {other:?}"),
    };
    let child = root.child.as_ref().map(|i| track(item(fbb, rng, i)));
    let nested = root.nested.as_ref().map(|v| track(vector(fbb, rng, v)));

    let mut slots = vec![
        Slot::U8(Root::VT_U8_, root.u8_, 200),
        Slot::I8(Root::VT_I8_, root.i8_, -100),
        Slot::U16(Root::VT_U16_, root.u16_, 60000),
        Slot::I16(Root::VT_I16_, root.i16_, -30000),
        Slot::U32(Root::VT_U32_, root.u32_, 4_000_000_000),
        Slot::I32(Root::VT_I32_, root.i32_, -2_000_000_000),
        Slot::U64(Root::VT_U64_, root.u64_, 18_000_000_000_000_000_000),
        Slot::I64(Root::VT_I64_, root.i64_, -9_000_000_000_000_000_000),
        Slot::F32(Root::VT_F32_, root.f32_, 3.5),
        Slot::F64(Root::VT_F64_, root.f64_, -2.25),
        Slot::Bool(Root::VT_FLAG, root.flag, true),
        Slot::Color(Root::VT_COLOR, root.color, Color::Green),
        Slot::Level(Root::VT_LEVEL, root.level, Level::Mid),
        Slot::Offset(Root::VT_NAME, name),
    ];
    // A union's type goes with its value: `force_defaults` must not write a NONE type without
    // one (the verifier rejects that, see object_api.rs).
    if payload.is_some() {
        let ty = root.payload.payload_type();
        slots.push(Slot::Payload(Root::VT_PAYLOAD_TYPE, ty, Payload::NONE));
    }
    slots.extend(root.maybe.map(|x| Slot::I32Always(Root::VT_MAYBE, x)));
    slots.extend(root.pos.as_ref().map(|p| Slot::Struct(Root::VT_POS, p.pack())));
    for (at, off) in [
        (Root::VT_NOTE, note),
        (Root::VT_BYTES, bytes),
        (Root::VT_INTS, ints),
        (Root::VT_LONGS, longs),
        (Root::VT_DOUBLES, doubles),
        (Root::VT_FLAGS, flags),
        (Root::VT_COLORS, colors),
        (Root::VT_POINTS, points),
        (Root::VT_ITEMS, items),
        (Root::VT_NAMES, names),
        (Root::VT_PAYLOAD, payload),
        (Root::VT_CHILD, child),
        (Root::VT_NESTED, nested),
    ] {
        slots.extend(off.map(|o| Slot::Offset(at, o)));
    }
    let table = table(fbb, rng, slots);
    fbb.required(table, Root::VT_NAME, "name");
    offsets.push(table.value());
    let vtables = fbb.num_written_vtables();
    finish.apply(fbb, table);
    (offsets, vtables)
}

#[test]
fn root_built_by_hand_matches_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let seed = ferry_testkit::seed("FERRY_FB_SEED", 0x1011_0100_0000);
    for blocks in Blocks::ALL {
        for case in 0..ROOTS {
            let case_seed = seed.wrapping_add(case);
            let what = format!("{blocks:?}, case seed {case_seed}");
            let mut rng = Rng::new(case_seed);
            let root = ferry_objects::root(&mut rng, LARGE);
            let finish = Finish::random(&mut rng);
            let force_defaults = rng.chance(1, 3);

            let mut fbb = blocks.builder(&pool);
            let mut stock = stock::FlatBufferBuilder::new();
            fbb.force_defaults(force_defaults);
            stock.force_defaults(force_defaults);
            let ours = root_by_hand(&mut fbb, rng.clone(), &root, finish);
            let theirs = root_by_hand(&mut stock, rng, &root, finish);
            assert_eq!(ours, theirs, "{what}: offsets and vtable counts");
            let bytes = fbb.finished_bytes();
            assert_same_bytes(&bytes, stock.finished_data(), &what);
            let read = verified_root(&bytes, finish);
            assert!(read.unpack() == root, "{what}: unpack() differs from the RootT");
        }
    }
    assert_pool_back(&pool, baseline);
}

// ---------------------------------------------------------------------------------------------
// Random call sequences.

/// How a vector is made.
#[derive(Debug, Clone, Copy)]
enum How {
    Slice,
    Iter,
    Manual,
}

/// One field of a random table: slot index, a value of one of the kinds below (its bits), a
/// default equal to it or not, pushed with `push_slot` or `push_slot_always`.
#[derive(Debug, Clone)]
struct Field {
    slot: u16,
    kind: u8,
    bits: u64,
    default_equal: bool,
    always: bool,
}

/// One builder call (or a few, for a table or a manual vector).
#[derive(Debug, Clone)]
enum Op {
    String {
        s: String,
        shared: bool,
    },
    ByteString(Vec<u8>),
    Vector {
        elem: u8,
        bits: Vec<u64>,
        how: How,
    },
    /// A vector of offsets to earlier objects (indices into the objects made so far).
    Offsets {
        refs: Vec<usize>,
        how: How,
    },
    Table(Vec<Field>),
    ForceDefaults(bool),
}

fn how() -> impl Strategy<Value = How> {
    prop_oneof![Just(How::Slice), Just(How::Iter), Just(How::Manual)]
}

fn op() -> impl Strategy<Value = Op> {
    let field = (
        0u16..40,
        0u8..13,
        any::<u64>(),
        prop::bool::weighted(0.3),
        any::<bool>(),
    )
        .prop_map(|(slot, kind, bits, default_equal, always)| Field {
            slot,
            kind,
            bits,
            default_equal,
            always,
        });
    prop_oneof![
        (".{0,40}", any::<bool>()).prop_map(|(s, shared)| Op::String { s, shared }),
        // Some strings larger than a Split block (4 KiB), few enough to stay fast.
        (prop::collection::vec(any::<u8>(), 4000..9000), any::<bool>()).prop_map(|(b, shared)| Op::String {
            s: b.iter().map(|&c| char::from(b'a' + c % 26)).collect(),
            shared
        }),
        prop::collection::vec(any::<u8>(), 0..100).prop_map(Op::ByteString),
        (0u8..7, prop::collection::vec(any::<u64>(), 0..80), how())
            .prop_map(|(elem, bits, how)| Op::Vector { elem, bits, how }),
        (0u8..7, prop::collection::vec(any::<u64>(), 600..1200), how())
            .prop_map(|(elem, bits, how)| Op::Vector { elem, bits, how }),
        (prop::collection::vec(any::<usize>(), 0..20), how())
            .prop_map(|(refs, how)| Op::Offsets { refs, how }),
        prop::collection::vec(field, 0..24).prop_map(Op::Table),
        prop::collection::vec(field_table_of_one_shape(), 1..2).prop_map(|mut t| Op::Table(t.remove(0))),
        any::<bool>().prop_map(Op::ForceDefaults),
    ]
}

/// A table shape tables repeat (so that vtables are deduplicated): slots 0, 1 and 3.
fn field_table_of_one_shape() -> impl Strategy<Value = Vec<Field>> {
    (any::<u32>(), any::<u64>(), any::<u8>()).prop_map(|(a, b, c)| {
        vec![
            Field {
                slot: 0,
                kind: 4,
                bits: a.into(),
                default_equal: false,
                always: true,
            },
            Field {
                slot: 1,
                kind: 6,
                bits: b,
                default_equal: false,
                always: true,
            },
            Field {
                slot: 3,
                kind: 0,
                bits: c.into(),
                default_equal: false,
                always: true,
            },
        ]
    })
}

/// A vector of `bits` as elements of kind `elem`.
fn typed_vector<'fbb>(fbb: &mut impl Fbb<'fbb>, elem: u8, bits: &[u64], how: How) -> u32 {
    fn make<'fbb, T: Push + Copy + 'fbb>(fbb: &mut impl Fbb<'fbb>, items: &[T], how: How) -> u32
    where
        T::Output: 'fbb,
    {
        match how {
            How::Slice => fbb.create_vector(items).value(),
            How::Iter => fbb.create_vector_from_iter(items.iter().copied()).value(),
            How::Manual => {
                fbb.start_vector::<T>(items.len());
                for item in items.iter().rev() {
                    fbb.push(*item);
                }
                fbb.end_vector::<T>(items.len()).value()
            }
        }
    }
    let as_vec3 = |b: u64| Vec3::new(b as i8, (b >> 8) as i16, 1.25, b as f64, Color::Blue, b);
    match elem {
        0 => make(fbb, &bits.iter().map(|&b| b as u8).collect::<Vec<_>>(), how),
        1 => make(fbb, &bits.iter().map(|&b| b as i16).collect::<Vec<_>>(), how),
        2 => make(fbb, &bits.iter().map(|&b| b as u32).collect::<Vec<_>>(), how),
        3 => make(fbb, &bits.iter().map(|&b| b as i64).collect::<Vec<_>>(), how),
        4 => make(
            fbb,
            &bits.iter().map(|&b| (b as u32) as f32).collect::<Vec<_>>(),
            how,
        ),
        5 => make(fbb, &bits.iter().map(|&b| b & 1 == 1).collect::<Vec<_>>(), how),
        _ => make(fbb, &bits.iter().map(|&b| as_vec3(b)).collect::<Vec<_>>(), how),
    }
}

/// Runs `ops` on `fbb`, then finishes `finish` at the last table (an empty one if none);
/// returns every offset and vtable count along the way.
fn run_ops<'fbb>(fbb: &mut impl Fbb<'fbb>, ops: &[Op], finish: Finish) -> Vec<u32> {
    let mut objects: Vec<u32> = Vec::new();
    let mut trace = Vec::new();
    let mut last_table = None;
    for op in ops {
        let off = match op {
            Op::String { s, shared: true } => fbb.create_shared_string(s).value(),
            Op::String { s, shared: false } => fbb.create_string(s).value(),
            Op::ByteString(b) => fbb.create_byte_string(b).value(),
            Op::Vector { elem, bits, how } => typed_vector(fbb, *elem, bits, *how),
            Op::Offsets { refs, how } => {
                if objects.is_empty() {
                    continue;
                }
                let offs: Vec<WIPOffset<UnionWIPOffset>> = refs
                    .iter()
                    .map(|r| WIPOffset::new(objects[r % objects.len()]))
                    .collect();
                make_offsets(fbb, &offs, *how)
            }
            Op::Table(fields) => {
                let start = fbb.start_table();
                for f in fields {
                    push_field(fbb, f, &objects);
                }
                let t = fbb.end_table(start).value();
                trace.push(fbb.num_written_vtables() as u32);
                last_table = Some(t);
                t
            }
            Op::ForceDefaults(on) => {
                fbb.force_defaults(*on);
                continue;
            }
        };
        objects.push(off);
        trace.push(off);
    }
    let root = match last_table {
        Some(t) => t,
        None => {
            let start = fbb.start_table();
            fbb.end_table(start).value()
        }
    };
    finish.apply(fbb, WIPOffset::<UnionWIPOffset>::new(root));
    trace
}

fn make_offsets<'fbb>(fbb: &mut impl Fbb<'fbb>, offs: &[WIPOffset<UnionWIPOffset>], how: How) -> u32 {
    match how {
        How::Slice => fbb.create_vector(offs).value(),
        How::Iter => fbb.create_vector_from_iter(offs.iter().copied()).value(),
        How::Manual => {
            fbb.start_vector::<WIPOffset<UnionWIPOffset>>(offs.len());
            for o in offs.iter().rev() {
                fbb.push(*o);
            }
            fbb.end_vector::<WIPOffset<UnionWIPOffset>>(offs.len()).value()
        }
    }
}

/// Pushes one field: a scalar of kind 0..=10 (every width, float, bool, enum), a struct
/// (11) or an offset to an earlier object (12).
fn push_field<'fbb>(fbb: &mut impl Fbb<'fbb>, f: &Field, objects: &[u32]) {
    let at: VOffsetT = 4 + 2 * f.slot;
    macro_rules! scalar {
        ($ty:ty, $x:expr) => {{
            let x: $ty = $x;
            let default: $ty = if f.default_equal { x } else { $x ^ 1 as $ty };
            if f.always {
                fbb.push_slot_always(at, x)
            } else {
                fbb.push_slot(at, x, default)
            }
        }};
    }
    let b = f.bits;
    match f.kind {
        0 => scalar!(u8, b as u8),
        1 => scalar!(i8, b as i8),
        2 => scalar!(u16, b as u16),
        3 => scalar!(i16, b as i16),
        4 => scalar!(u32, b as u32),
        5 => scalar!(i32, b as i32),
        6 => scalar!(u64, b),
        7 => scalar!(i64, b as i64),
        8 => {
            let x = (b as u32) as f32;
            fbb.push_slot(at, x, if f.default_equal { x } else { x + 1.0 })
        }
        9 => {
            let x = (b >> 11) as f64;
            fbb.push_slot(at, x, if f.default_equal { x } else { -x - 1.0 })
        }
        10 => fbb.push_slot(at, b & 1 == 1, f.default_equal == (b & 1 == 1)),
        11 => fbb.push_slot_always(at, Vec3::new(b as i8, 2, 3.0, 4.0, Color::Red, b.rotate_left(7))),
        _ => {
            if let Some(&o) = objects.get(b as usize % objects.len().max(1)) {
                fbb.push_slot_always(at, WIPOffset::<UnionWIPOffset>::new(o));
            }
        }
    }
}

#[test]
fn random_call_sequences_match_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let seed = ferry_testkit::seed("FERRY_FB_SEED", 0x1011_0200_0000);
    let mut runner = TestRunner::new(Config {
        cases: 96,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        prop_oneof![
            prop::sample::select(Blocks::ALL.to_vec()),
            (1..=9usize).prop_map(Blocks::Max)
        ],
        prop::collection::vec(op(), 0..40),
        prop::sample::select(Finish::ALL.to_vec()),
    );
    let result = runner.run(&strategy, |(blocks, ops, finish)| {
        let mut fbb = blocks.builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        let ours = run_ops(&mut fbb, &ops, finish);
        let theirs = run_ops(&mut stock, &ops, finish);
        prop_assert_eq!(ours, theirs, "offsets and vtable counts");
        let bytes = fbb.finished_bytes();
        prop_assert!(
            bytes == stock.finished_data(),
            "bytes differ: {} vs {} bytes, first difference at {:?}",
            bytes.len(),
            stock.finished_data().len(),
            bytes.iter().zip(stock.finished_data()).position(|(a, b)| a != b)
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    assert_pool_back(&pool, baseline);
}

/// `create_shared_string` interns like the stock builder: a repeated string returns the first
/// offset, also when it is longer than a block and was written across blocks (the lookup then
/// compares block by block), and strings that are prefixes of one another stay distinct.
#[test]
fn shared_strings_interned_like_stock() {
    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let long: String = (0..9000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let longer = format!("{long}z");
    let words = [
        "", "a", "ab", "abc", "ab", "", &long, "a", &longer, &long, "abc", &longer, "b",
    ];
    fn build<'fbb>(fbb: &mut impl Fbb<'fbb>, words: &[&str]) -> Vec<u32> {
        let offs: Vec<u32> = words
            .iter()
            .map(|w| fbb.create_shared_string(w).value())
            .collect();
        let vec: Vec<WIPOffset<UnionWIPOffset>> = offs.iter().map(|&o| WIPOffset::new(o)).collect();
        let names = fbb.create_vector(&vec);
        let start = fbb.start_table();
        fbb.push_slot_always(4, names);
        let root = fbb.end_table(start);
        fbb.finish_minimal(root);
        offs
    }
    for blocks in Blocks::ALL {
        let mut fbb = blocks.builder(&pool);
        let mut stock = stock::FlatBufferBuilder::new();
        let ours = build(&mut fbb, &words);
        let theirs = build(&mut stock, &words);
        assert_eq!(ours, theirs, "{blocks:?}: offsets");
        // Each repeat is the first occurrence's offset; distinct words are distinct.
        for (i, w) in words.iter().enumerate() {
            let first = words.iter().position(|x| x == w).expect("present");
            assert_eq!(ours[i], ours[first], "{blocks:?}: {w:.8?} #{i}");
            for (j, x) in words.iter().enumerate() {
                if x != w {
                    assert_ne!(ours[i], ours[j], "{blocks:?}: {w:.8?} vs {x:.8?}");
                }
            }
        }
        assert_same_bytes(
            &fbb.finished_message().to_vec(),
            stock.finished_data(),
            &format!("shared strings, {blocks:?}"),
        );
    }
    assert_pool_back(&pool, baseline);
}
