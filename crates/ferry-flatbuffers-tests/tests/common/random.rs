//! Random objects of the schema: one seeded stream gives the same values as
//! `interop::RootT` (built with the zFlatBuffers builder) and as `stock_interop::RootT` (built
//! with the stock one). The two are distinct types with the same fields, so the generator is
//! written once, as [`random_objects!`], and expanded in a module for each; the same seed makes
//! the same object in both.
//!
//! Every optional field is present or absent at random; scalars are often their schema default
//! (so that `force_defaults` changes the bytes); strings and vectors are often empty, sometimes
//! hundreds of elements, and rarely up to about `large` bytes; strings repeat from a small
//! vocabulary (the low-level test interns them); unions are any of their members or none.

use ferry_testkit::Rng;

/// The largest strings and vectors the tests make, in bytes (about).
pub const LARGE: usize = 100 * 1024;

/// How many elements a string or vector of `elem`-byte elements gets: none or one a quarter of
/// the time, usually a few, sometimes hundreds, and one time in 24 up to `large` bytes' worth.
pub fn count(rng: &mut Rng, elem: usize, large: usize) -> usize {
    match rng.below(24) {
        0..=4 => 0,
        5 => 1,
        6..=16 => rng.range(2, 24),
        17..=22 => rng.range(24, 600 / elem.max(1) + 25),
        _ => rng.range(1, large / elem.max(1) + 1),
    }
}

/// UTF-8 text of about `count(.., 1, large)` bytes: ASCII, accents, CJK, an emoji, and NUL
/// (FlatBuffers strings may hold it).
pub fn text(rng: &mut Rng, large: usize) -> String {
    const PARTS: [&str; 7] = ["a", "Zürich", "日本", "🦀", "0123456789abcdef", "\0", " "];
    let target = count(rng, 1, large);
    let mut s = String::new();
    while s.len() < target {
        s.push_str(rng.pick(&PARTS));
    }
    s
}

/// A short word from `vocab` half the time (so that strings repeat), else fresh text.
pub fn word(rng: &mut Rng, vocab: &[String], large: usize) -> String {
    if rng.chance(1, 2) {
        vocab[rng.range(0, vocab.len())].clone()
    } else {
        text(rng, large)
    }
}

/// `Some(f(rng))` or, a third of the time, `None`.
pub fn maybe<T>(rng: &mut Rng, f: impl FnOnce(&mut Rng) -> T) -> Option<T> {
    if rng.chance(1, 3) { None } else { Some(f(rng)) }
}

/// `default` a third of the time, else `f(rng)` (which may happen to equal it).
pub fn or_default<T>(rng: &mut Rng, default: T, f: impl FnOnce(&mut Rng) -> T) -> T {
    if rng.chance(1, 3) { default } else { f(rng) }
}

/// A vector of `count(.., elem, large)` elements from `f`.
pub fn vec_of<T>(rng: &mut Rng, elem: usize, large: usize, mut f: impl FnMut(&mut Rng) -> T) -> Vec<T> {
    let n = count(rng, elem, large);
    (0..n).map(|_| f(rng)).collect()
}

/// A finite `f32` (NaN would make the read-back comparison meaningless): special values
/// sometimes, else random bits.
pub fn f32(rng: &mut Rng) -> f32 {
    const SPECIAL: [f32; 6] = [0.0, -0.0, 1.0, f32::MIN_POSITIVE, f32::MAX, -1.5e-42];
    if rng.chance(1, 4) {
        return rng.pick(&SPECIAL);
    }
    loop {
        let x = f32::from_bits(rng.u64() as u32);
        if x.is_finite() {
            return x;
        }
    }
}

/// A finite `f64`, as [`f32`].
pub fn f64(rng: &mut Rng) -> f64 {
    const SPECIAL: [f64; 6] = [0.0, -0.0, 1.5, f64::MIN_POSITIVE, f64::MAX, -5e-324];
    if rng.chance(1, 4) {
        return rng.pick(&SPECIAL);
    }
    loop {
        let x = f64::from_bits(rng.u64());
        if x.is_finite() {
            return x;
        }
    }
}

/// A finished `Item` FlatBuffer, built with the stock builder through the stock copy of the
/// generated code: the content of `Root.nested` (`nested_flatbuffer: "Item"`), the same bytes
/// for both sides.
pub fn nested_item(rng: &mut Rng, vocab: &[String], large: usize) -> Vec<u8> {
    let item = stock_objects::item(rng, vocab, large);
    let mut fbb = stock::FlatBufferBuilder::new();
    let root = item.pack(&mut fbb);
    // `nested_nested_flatbuffer` reads the root offset at 0: never size-prefixed.
    if rng.chance(1, 2) {
        fbb.finish(root, Some("ITEM"));
    } else {
        fbb.finish_minimal(root);
    }
    fbb.finished_data().to_vec()
}

/// The generator body, expanded where `RootT`, `ItemT`, ... name one copy of the generated
/// object API.
macro_rules! random_objects {
    () => {
        use ferry_testkit::Rng;

        use crate::common::random::{f32, f64, maybe, nested_item, or_default, text, vec_of, word};

        /// A random `Vec3`.
        pub fn vec3(rng: &mut Rng) -> Vec3T {
            Vec3T {
                tag: rng.u64() as i8,
                z: rng.u64() as i16,
                x: f32(rng),
                y: f64(rng),
                color: Color(rng.below(3) as i8),
                id: rng.u64(),
            }
        }

        /// A random `Item` (strings from `vocab` or fresh). The object types are
        /// `#[non_exhaustive]`: filled field by field, in a fixed order.
        pub fn item(rng: &mut Rng, vocab: &[String], large: usize) -> ItemT {
            let mut x = ItemT::default();
            x.id = or_default(rng, 0, |r| r.u64() as u32);
            x.label = maybe(rng, |r| word(r, vocab, large));
            x.weight = or_default(rng, 1.5, f64);
            x.tags = maybe(rng, |r| {
                let n = r.range(0, 4);
                (0..n).map(|_| word(r, vocab, 64)).collect()
            });
            x
        }

        /// A random `Note`.
        pub fn note(rng: &mut Rng, vocab: &[String], large: usize) -> NoteT {
            let mut x = NoteT::default();
            x.text = maybe(rng, |r| word(r, vocab, large));
            x.score = or_default(rng, -7, |r| r.u64() as i16);
            x
        }

        /// A random `Root`, its strings and vectors up to about `large` bytes.
        pub fn root(rng: &mut Rng, large: usize) -> RootT {
            let vocab: Vec<String> = (0..4).map(|_| text(rng, 24)).collect();
            let vocab = &vocab[..];
            let mut x = RootT::default();
            x.u8_ = or_default(rng, 200, |r| r.u64() as u8);
            x.i8_ = or_default(rng, -100, |r| r.u64() as i8);
            x.u16_ = or_default(rng, 60000, |r| r.u64() as u16);
            x.i16_ = or_default(rng, -30000, |r| r.u64() as i16);
            x.u32_ = or_default(rng, 4_000_000_000, |r| r.u64() as u32);
            x.i32_ = or_default(rng, -2_000_000_000, |r| r.u64() as i32);
            x.u64_ = or_default(rng, 18_000_000_000_000_000_000, |r| r.u64());
            x.i64_ = or_default(rng, -9_000_000_000_000_000_000, |r| r.u64() as i64);
            x.f32_ = or_default(rng, 3.5, f32);
            x.f64_ = or_default(rng, -2.25, f64);
            x.flag = or_default(rng, true, |r| r.chance(1, 2));
            x.color = or_default(rng, Color::Green, |r| Color(r.below(3) as i8));
            x.level = or_default(rng, Level::Mid, |r| {
                r.pick(&[Level::Low, Level::Mid, Level::High])
            });
            x.maybe = maybe(rng, |r| if r.chance(1, 4) { 0 } else { r.u64() as i32 });
            x.pos = maybe(rng, vec3);
            x.name = word(rng, vocab, large);
            x.note = maybe(rng, |r| word(r, vocab, large));
            x.bytes = maybe(rng, |r| vec_of(r, 1, large, |r| r.u64() as u8));
            x.ints = maybe(rng, |r| vec_of(r, 4, large, |r| r.u64() as i32));
            x.longs = maybe(rng, |r| vec_of(r, 8, large, |r| r.u64() as i64));
            x.doubles = maybe(rng, |r| vec_of(r, 8, large, f64));
            x.flags = maybe(rng, |r| vec_of(r, 1, large, |r| r.chance(1, 2)));
            x.colors = maybe(rng, |r| vec_of(r, 1, large, |r| Color(r.below(3) as i8)));
            x.points = maybe(rng, |r| vec_of(r, 32, large, vec3));
            // An item is some 40 to 100 bytes; its strings stay short.
            x.items = maybe(rng, |r| vec_of(r, 64, large, |r| item(r, vocab, 64)));
            x.names = maybe(rng, |r| vec_of(r, 16, large, |r| word(r, vocab, 64)));
            x.payload = match rng.below(3) {
                0 => PayloadT::NONE,
                1 => PayloadT::Item(Box::new(item(rng, vocab, large))),
                _ => PayloadT::Note(Box::new(note(rng, vocab, large))),
            };
            x.child = maybe(rng, |r| Box::new(item(r, vocab, large)));
            x.nested = maybe(rng, |r| nested_item(r, vocab, 2048));
            x
        }
    };
}

/// The generator over the generated API that builds with the zFlatBuffers builder.
#[allow(dead_code)] // each test binary uses its own subset
pub mod ferry_objects {
    use ferry_flatbuffers_tests::interop::*;
    random_objects!();
}

/// The generator over the generated API that builds with the stock builder.
#[allow(dead_code)]
pub mod stock_objects {
    use ferry_flatbuffers_tests::stock_interop::*;
    random_objects!();
}
