//! The straight-line encoder `ferry-build` generates (`Encode::size_into` / `write_into`)
//! against the generic visitor path that `DynamicMessage` uses: random messages of every type
//! of the schema, in copy-only, hybrid and all-zero-copy contexts, must give the same layout,
//! bytes, region-relative bytes, zero-copy listing and errors.

use ferry::wire::{DynamicMessage, EncodeError, VisitorPath};
use ferry::{Context, Message, MessageView, Outgoing, Pool};
use ferry_codegen_tests::generated::ferry::test::{self as t, all_kinds, other};
use ferry_codegen_tests::generated::google::protobuf as wkt;
use ferry_testkit::{Builder, Rng, assert_encoders_agree};

/// Random messages per type and context.
const CASES: u64 = 30;

/// Random contents of `M`'s descriptor, encoded, put in the pool, decoded as `M` and turned
/// into an `M` under `ctx`: values at least `ctx`'s threshold reference the pool copy.
/// Returns how many cases had zero-copy values.
fn agree<'a, M: Message<'a>>(pool: &Pool, ctx: &Context, mode: &str) -> usize {
    let mut referenced = 0;
    for seed in 1..=CASES {
        let mut b = Builder {
            rng: Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1),
            pool,
            ctx: Context::copy_only(),
        };
        let dynamic: DynamicMessage<'_> = b.message(M::desc(), 0);
        let bytes = dynamic.to_vec().unwrap();
        let shared = pool.copy_from(&bytes).unwrap();
        let view = M::decode_shared(&shared).unwrap();
        let typed = view.to_message(ctx).unwrap();
        let what = format!("{} {mode} seed {seed}", M::desc().name);
        assert_encoders_agree(&typed, &what);
        if typed.layout().zero_copy_count == 0 {
            // Nothing referenced: the same bytes as the dynamic encoding of these contents.
            assert!(typed.to_vec().unwrap() == bytes, "{what}: typed vs dynamic");
        } else {
            referenced += 1;
        }
    }
    referenced
}

fn every_type(pool: &Pool, ctx: &Context, mode: &str) -> usize {
    [
        agree::<t::AllKinds<'_>>(pool, ctx, mode),
        agree::<all_kinds::Inner<'_>>(pool, ctx, mode),
        agree::<t::Awkward<'_>>(pool, ctx, mode),
        agree::<t::Self_<'_>>(pool, ctx, mode),
        agree::<t::Type<'_>>(pool, ctx, mode),
        agree::<t::Node<'_>>(pool, ctx, mode),
        agree::<t::Ping<'_>>(pool, ctx, mode),
        agree::<t::Pong<'_>>(pool, ctx, mode),
        agree::<t::T<'_>>(pool, ctx, mode),
        agree::<t::SayRequest<'_>>(pool, ctx, mode),
        agree::<t::SayResponse<'_>>(pool, ctx, mode),
        agree::<other::Note<'_>>(pool, ctx, mode),
        agree::<other::Collide<'_>>(pool, ctx, mode),
        agree::<other::Collide2<'_>>(pool, ctx, mode),
        agree::<wkt::Duration<'_>>(pool, ctx, mode),
        agree::<wkt::Timestamp<'_>>(pool, ctx, mode),
    ]
    .iter()
    .sum()
}

#[test]
fn generated_and_generic_encoders_agree_copy_only() {
    let pool = ferry_testkit::pool();
    assert_eq!(every_type(&pool, Context::copy_only(), "copy-only"), 0);
}

#[test]
fn generated_and_generic_encoders_agree_hybrid() {
    let pool = ferry_testkit::pool();
    let ctx = Context::new(pool.clone()).with_threshold(100);
    assert!(
        every_type(&pool, &ctx, "hybrid") > 0,
        "no case referenced a value"
    );
}

#[test]
fn generated_and_generic_encoders_agree_all_zero_copy() {
    let pool = ferry_testkit::pool();
    let ctx = Context::new(pool.clone()).with_threshold(0);
    assert!(
        every_type(&pool, &ctx, "zero-copy") > 0,
        "no case referenced a value"
    );
}

#[test]
fn both_paths_name_the_same_missing_required_field() {
    let ctx = Context::copy_only();
    let note = other::Note::new(ctx);
    let want = Err(EncodeError::MissingRequired {
        field: "ferry.test.other.Note.level".into(),
    });
    assert_eq!(note.to_vec(), want);
    assert_eq!(VisitorPath(&note).to_vec(), want);
    assert_encoders_agree(&note, "empty Note");
    // Nested: the parent is fine, its child is not.
    let mut all = t::AllKinds::new(ctx);
    all.set_f_int32(7);
    all.note_mut().set_text("hi");
    assert_eq!(all.to_vec(), want);
    assert_encoders_agree(&all, "AllKinds with an empty note");
    all.note_mut().set_level(3);
    assert!(all.to_vec().is_ok());
    assert_encoders_agree(&all, "AllKinds with a note");
}

/// The hand-written sample `Record` (the benchmarks' type) overrides the same methods, by hand.
#[test]
fn sample_record_agrees_with_the_generic_path() {
    use ferry::sample::Record;
    let pool = ferry_testkit::pool();
    let hybrid = Context::new(pool.clone()).with_threshold(100);
    let zero_copy = Context::new(pool.clone()).with_threshold(0);
    let mut rng = Rng::new(0x5eed);
    const SIZES: [usize; 8] = [0, 1, 7, 24, 100, 512, 2048, 9000];
    let values: Vec<(ferry::SharedBuf, Vec<u8>)> = (0..64)
        .map(|_| {
            let len = SIZES[rng.below(SIZES.len() as u64) as usize];
            let d = rng.bytes(len);
            (pool.copy_from(&d).unwrap(), d)
        })
        .collect();
    for (mode, ctx) in [
        ("copy-only", Context::copy_only()),
        ("hybrid", &hybrid),
        ("zero-copy", &zero_copy),
    ] {
        for case in 0..200 {
            let mut r = Record::new(ctx);
            let pick = |rng: &mut Rng| {
                let (shared, heap) = &values[rng.below(values.len() as u64) as usize];
                // Pool memory (referenced when the context allows) or heap memory (copied).
                if rng.chance(1, 2) { &shared[..] } else { &heap[..] }
            };
            if rng.chance(2, 3) {
                r.set_key(pick(&mut rng));
            }
            for _ in 0..rng.below(12) {
                r.append_field(pick(&mut rng));
            }
            assert_encoders_agree(&r, &format!("Record {mode} case {case}"));
        }
    }
}

/// A message changed after its layout was taken, to another of the same length but another
/// root header: both paths refuse to write it, with the same error.
#[test]
fn both_paths_refuse_a_stale_layout_alike() {
    use ferry::sample::Record;
    let ctx = Context::copy_only();
    let mut r = Record::new(ctx);
    r.set_key(&[7u8; 24]);
    let layout = r.layout();
    r.set_key(&[1u8]);
    r.append_field(&[][..]);
    assert_eq!(r.layout().head_len, layout.head_len);
    let mut out = vec![0; layout.head_len];
    let fast = r.write_head(&layout, &mut out);
    assert!(matches!(fast, Err(EncodeError::OutputSize { .. })), "{fast:?}");
    assert_eq!(fast, VisitorPath(&r).write_head(&layout, &mut out));
}

/// The root's header is reserved with its layout's shape and the fields found present while
/// writing must fill it: a root changed after its layout to as many fields in more presence
/// chunks is refused by both paths alike (the generated one would otherwise drop a chunk).
#[test]
fn both_paths_refuse_a_stale_layout_with_more_chunks_alike() {
    let ctx = Context::copy_only();
    let mut m = t::AllKinds::new(ctx);
    m.set_f_int32(1);
    m.set_f_fixed64(2);
    let layout = m.layout();
    m.clear_f_fixed64();
    m.set_far(3);
    let mut out = vec![0; layout.head_len];
    let fast = m.write_head(&layout, &mut out);
    assert!(matches!(fast, Err(EncodeError::OutputSize { .. })), "{fast:?}");
    assert_eq!(fast, VisitorPath(&m).write_head(&layout, &mut out));
}
