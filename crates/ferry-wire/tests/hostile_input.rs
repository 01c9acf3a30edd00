//! Hostile input: random and mutated bytes must never make the decoder panic or allocate.
//!
//! The main loop feeds `View::decode` at least 100,000 inputs: valid encodings of random
//! `AllKinds` and `Record` messages after bit flips, byte and word overwrites, truncation,
//! extension and splicing, plus pure random buffers. Every accepted input is then read in full
//! (`DynamicMessage::from_view`, every raw accessor) and must re-encode to bytes that decode to
//! the same message. A counting global allocator checks that validation allocates nothing when
//! it accepts and only the error's field path when it rejects.
//!
//! The seed is printed; rerun one with `FERRY_HOSTILE_SEED=<seed>` (and `FERRY_HOSTILE_ITERS`
//! to run longer).

use std::time::Instant;

use ferry_wire::sample::{ALL_KINDS, RECORD};
use ferry_wire::{Context, DecodeError, HybridBytes, Limits, Outgoing, View};
use ferry_wire::{DecodeErrorKind, DynamicMessage, Kind, Label, List, MessageDesc, Value, layout};

/// Counts the bytes one thread allocates while armed (libtest runs tests on several threads).
#[allow(unsafe_code)]
mod counting_alloc {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<bool> = const { Cell::new(false) };
        static BYTES: Cell<usize> = const { Cell::new(0) };
    }

    fn note(bytes: usize) {
        // `try_with`: the allocator may run while this thread's locals are being torn down.
        let _ = ARMED.try_with(|armed| {
            if armed.get() {
                let _ = BYTES.try_with(|b| b.set(b.get() + bytes));
            }
        });
    }

    /// The system allocator, plus a per-thread byte count.
    pub struct Counting;

    // SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
    // `GlobalAlloc` contract; the bookkeeping only touches const-initialised `Cell` thread-locals,
    // which never allocate and so cannot re-enter the allocator.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            // SAFETY: our caller upholds `GlobalAlloc::alloc`'s contract for `layout`.
            unsafe { System.alloc(layout) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            // SAFETY: as for `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            note(new_size.saturating_sub(layout.size()));
            // SAFETY: our caller guarantees `ptr` came from this allocator (that is, from
            // `System`) with `layout`, and that `new_size` is valid for it.
            unsafe { System.realloc(ptr, layout, new_size) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: our caller guarantees `ptr` came from `System` with `layout`.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Runs `f` and returns its result with the bytes this thread allocated meanwhile
    /// (growth by `realloc` counts as the difference).
    pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
        BYTES.with(|b| b.set(0));
        ARMED.with(|a| a.set(true));
        let r = f();
        ARMED.with(|a| a.set(false));
        (r, BYTES.with(|b| b.get()))
    }
}

use counting_alloc::measure;

// ---------------------------------------------------------------------------------------------
// A tiny deterministic PRNG (xorshift64*), so a failure names a seed that reproduces it.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform-ish in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

// ---------------------------------------------------------------------------------------------
// Random valid messages.

/// Scalars that find edge cases: zero, extremes, sign bits, all ones.
fn interesting_u64(rng: &mut Rng) -> u64 {
    match rng.below(8) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => i64::MIN as u64,
        4 => u64::from(u32::MAX),
        5 => 0x8000_0000,
        _ => rng.next(),
    }
}

fn random_scalar(rng: &mut Rng, kind: Kind) -> Value<'static> {
    let x = interesting_u64(rng);
    match kind {
        Kind::Bool => Value::Bool(x & 1 == 1),
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => Value::I32(x as i32),
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => Value::I64(x as i64),
        Kind::UInt32 | Kind::Fixed32 => Value::U32(x as u32),
        Kind::UInt64 | Kind::Fixed64 => Value::U64(x),
        Kind::Float => Value::F32(f32::from_bits(x as u32)),
        Kind::Double => Value::F64(f64::from_bits(x)),
        Kind::String | Kind::Bytes | Kind::Message(_) => unreachable!("not a scalar"),
    }
}

fn random_scalar_list(rng: &mut Rng, kind: Kind) -> List<'static> {
    let n = rng.range(1, 9);
    let mut vals = (0..n).map(|_| random_scalar(rng, kind));
    macro_rules! collect {
        ($variant:ident) => {
            List::$variant(
                vals.by_ref()
                    .map(|v| {
                        if let Value::$variant(x) = v {
                            x
                        } else {
                            unreachable!()
                        }
                    })
                    .collect(),
            )
        };
    }
    match kind {
        Kind::Bool => collect!(Bool),
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => collect!(I32),
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => collect!(I64),
        Kind::UInt32 | Kind::Fixed32 => collect!(U32),
        Kind::UInt64 | Kind::Fixed64 => collect!(U64),
        Kind::Float => collect!(F32),
        Kind::Double => collect!(F64),
        Kind::String | Kind::Bytes | Kind::Message(_) => unreachable!("not a scalar"),
    }
}

fn random_text(rng: &mut Rng) -> HybridBytes<'static> {
    const CHARS: [char; 8] = ['a', 'z', '0', ' ', 'é', 'ß', '€', '😀'];
    let n = rng.below(12);
    let s: String = (0..n).map(|_| rng.pick(&CHARS)).collect();
    HybridBytes::from_vec(s.into_bytes())
}

fn random_blob(rng: &mut Rng) -> HybridBytes<'static> {
    let n = rng.pick(&[0usize, 1, 3, 8, 17, 40]);
    HybridBytes::from_vec(rng.bytes(n))
}

fn random_record(rng: &mut Rng) -> DynamicMessage<'static> {
    let mut m = DynamicMessage::new(&RECORD);
    if rng.chance(80) {
        m.set(1, Value::Bytes(random_blob(rng))).unwrap();
    }
    if rng.chance(80) {
        let n = rng.range(1, 6);
        m.set(
            2,
            Value::List(List::Bytes((0..n).map(|_| random_blob(rng)).collect())),
        )
        .unwrap();
    }
    m
}

fn random_value(rng: &mut Rng, kind: Kind<'static>, depth: u32, nodes: &mut u32) -> Value<'static> {
    match kind {
        Kind::String => Value::Bytes(random_text(rng)),
        Kind::Bytes => Value::Bytes(random_blob(rng)),
        Kind::Message(d) => Value::Message(random_message(rng, d, depth + 1, nodes)),
        k => random_scalar(rng, k),
    }
}

/// A random message of `desc` (`ALL_KINDS`, `RECORD` or one of the map entries); `nodes` caps
/// the number of nested messages so encodings stay around 16..2048 bytes.
fn random_message(
    rng: &mut Rng,
    desc: &'static MessageDesc<'static>,
    depth: u32,
    nodes: &mut u32,
) -> DynamicMessage<'static> {
    if core::ptr::eq(desc, &RECORD) {
        return random_record(rng);
    }
    let mut m = DynamicMessage::new(desc);
    let density = rng.pick(&[5u64, 15, 30]);
    for f in desc.fields() {
        let always = desc.map_entry;
        if !always && !rng.chance(density) {
            continue;
        }
        let nested = matches!(f.kind, Kind::Message(_));
        if nested && (depth >= 4 || *nodes == 0) {
            continue;
        }
        if nested {
            *nodes -= 1;
        }
        let value = match (f.label, f.kind) {
            (Label::Repeated, Kind::String) => Value::List(List::Bytes(
                (0..rng.range(1, 5)).map(|_| random_text(rng)).collect(),
            )),
            (Label::Repeated, Kind::Bytes) => Value::List(List::Bytes(
                (0..rng.range(1, 5)).map(|_| random_blob(rng)).collect(),
            )),
            (Label::Repeated, Kind::Message(d)) if d.map_entry => {
                for _ in 0..rng.range(1, 4) {
                    let key = random_value(rng, d.fields()[0].kind, depth, nodes);
                    let value = random_value(rng, d.fields()[1].kind, depth, nodes);
                    m.insert_map_entry(f.number, key, value).unwrap();
                }
                continue;
            }
            (Label::Repeated, Kind::Message(d)) => {
                let n = rng.range(1, 4);
                Value::List(List::Messages(
                    (0..n).map(|_| random_message(rng, d, depth + 1, nodes)).collect(),
                ))
            }
            (Label::Repeated, k) => Value::List(random_scalar_list(rng, k)),
            (_, k) => random_value(rng, k, depth, nodes),
        };
        m.set(f.number, value).unwrap();
    }
    m
}

/// Valid encodings to mutate: random `AllKinds` and `Record` messages of 16..=2048 bytes.
fn valid_corpus(rng: &mut Rng, count: usize) -> Vec<(&'static MessageDesc<'static>, Vec<u8>)> {
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let desc: &'static MessageDesc<'static> = if rng.chance(25) { &RECORD } else { &ALL_KINDS };
        let mut nodes = rng.range(0, 6) as u32;
        let m = random_message(rng, desc, 0, &mut nodes);
        let bytes = m.to_vec().unwrap();
        if !(16..=2048).contains(&bytes.len()) {
            continue;
        }
        // The corpus itself must round-trip, or the mutation results mean nothing.
        let view = View::decode(&bytes, desc, &Limits::default()).unwrap();
        let ctx = Context::copy_only();
        let back = DynamicMessage::from_view(&view, ctx).unwrap();
        assert!(back == m, "valid message did not round-trip: {}", hex(&bytes));
        out.push((desc, bytes));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Mutations.

/// 32-bit values worth writing over a word of a `len`-byte message: offsets and lengths at and
/// around the end, zero, all ones, the sign bit.
fn interesting_u32(rng: &mut Rng, len: usize) -> u32 {
    let len = len as u32;
    match rng.below(12) {
        0 => 0,
        1 => 1,
        2 => u32::MAX,
        3 => 0x8000_0000,
        4 => len,
        5 => len.wrapping_sub(1),
        6 => len.wrapping_add(1),
        7 => len.wrapping_sub(8),
        8 => 8,
        9 => 24,
        10 => rng.below(len as usize + 1) as u32,
        _ => rng.next() as u32,
    }
}

/// An 8-byte entry worth writing: a range reaching exactly to, or just past, the end; an
/// empty range at the end; a range that wraps in 32 bits.
fn interesting_entry(rng: &mut Rng, len: usize) -> u64 {
    let l = len as u32;
    let k = rng.below(len + 1) as u32;
    let (off, n) = match rng.below(8) {
        0 => (l - k, k),
        1 => (l - k, k + 1),
        2 => (0, l),
        3 => (l, 0),
        4 => (l + 1, 0),
        5 => (u32::MAX, 2),
        6 => (k & !7, 32),
        _ => (interesting_u32(rng, len), interesting_u32(rng, len)),
    };
    layout::range_entry(off, n)
}

fn mutate(rng: &mut Rng, buf: &mut Vec<u8>, corpus: &[(&'static MessageDesc<'static>, Vec<u8>)]) {
    for _ in 0..rng.range(1, 4) {
        let len = buf.len();
        if len == 0 {
            buf.extend(rng.bytes(8));
            continue;
        }
        match rng.below(10) {
            0 => {
                let i = rng.below(len);
                buf[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(len);
                buf[i] = rng.pick(&[0u8, 0xff, 0x7f, 0x80, 1, 8, 0x40]);
            }
            2 | 3 => {
                // A u32 word: the preamble, chunk groups and ranks, halves of entries.
                let i = rng.below(len.div_ceil(4)) * 4;
                let v = interesting_u32(rng, len).to_le_bytes();
                for (j, b) in v.iter().enumerate() {
                    if let Some(x) = buf.get_mut(i + j) {
                        *x = *b;
                    }
                }
            }
            4 => {
                let i = rng.below(len.div_ceil(8)) * 8;
                let v = interesting_entry(rng, len).to_le_bytes();
                for (j, b) in v.iter().enumerate() {
                    if let Some(x) = buf.get_mut(i + j) {
                        *x = *b;
                    }
                }
            }
            5 => buf.truncate(rng.below(len)),
            6 => {
                let extra = rng.range(1, 64);
                let fill = rng.pick(&[None, Some(0u8), Some(0xff)]);
                match fill {
                    Some(b) => buf.extend(std::iter::repeat_n(b, extra)),
                    None => buf.extend(rng.bytes(extra)),
                }
            }
            7 => {
                // Splice a u32 from elsewhere in this message (e.g. one field's range onto another).
                let from = rng.below(len.div_ceil(4)) * 4;
                let to = rng.below(len.div_ceil(4)) * 4;
                let word: Vec<u8> = buf[from..(from + 4).min(len)].to_vec();
                for (j, b) in word.iter().enumerate() {
                    if let Some(x) = buf.get_mut(to + j) {
                        *x = *b;
                    }
                }
            }
            8 => {
                // Splice a u32 field from another valid message at the same offset.
                let other = &corpus[rng.below(corpus.len())].1;
                let at = rng.below(len.min(other.len()).div_ceil(4)) * 4;
                let end = (at + 4).min(len).min(other.len());
                buf[at..end].copy_from_slice(&other[at..end]);
            }
            _ => {
                // Remove or duplicate an 8-byte aligned block (shifts everything after it).
                let at = rng.below(len.div_ceil(8)) * 8;
                let end = (at + 8).min(len);
                if rng.chance(50) {
                    buf.drain(at..end);
                } else {
                    let block: Vec<u8> = buf[at..end].to_vec();
                    buf.splice(at..at, block);
                }
            }
        }
    }
}

/// Random bytes, half of them under a plausible preamble so the chunk and entry checks run.
fn random_input(rng: &mut Rng) -> Vec<u8> {
    let len = rng.range(16, 2049);
    let mut buf = rng.bytes(len);
    if rng.chance(50) {
        let chunks = rng.range(0, 4) as u16;
        let entries = rng.range(0, 12) as u32;
        buf[0..2].copy_from_slice(&chunks.to_le_bytes());
        buf[2..4].copy_from_slice(&[0, 0]);
        buf[4..8].copy_from_slice(&entries.to_le_bytes());
    }
    buf
}

// ---------------------------------------------------------------------------------------------
// Checks on one input.

/// Bytes a rejection may allocate: the error's field path, one `(message, field)` pair per
/// level, at most `max_depth + 1` levels, with `Vec`'s doubling growth, and the pair's names
/// (owned, since a run-time schema's may not outlive the error; the sample schema's are
/// shorter than `MAX_NAME`).
fn error_alloc_bound(limits: &Limits) -> usize {
    const MAX_NAME: usize = 48;
    let levels = limits.max_depth as usize + 1;
    let pairs = levels.max(4) * 2;
    pairs * size_of::<(Box<str>, Box<str>)>() + levels * 2 * MAX_NAME
}

#[derive(Default, Debug)]
struct Tally {
    inputs: u64,
    accepted: u64,
    read_in_full: u64,
    bad_utf8: u64,
    rejected: u64,
}

/// Calls the typed accessor of every field and walks nested views; none may panic, and what
/// they return must agree with the validation that accepted the message.
fn read_with_accessors(view: &View<'_>, depth: u32, work: &mut u32) {
    if *work == 0 || depth > 8 {
        return;
    }
    *work -= 1;
    let present: Vec<u32> = view.present_fields().collect();
    assert!(
        present.windows(2).all(|w| w[0] < w[1]),
        "present_fields not ascending: {present:?}"
    );
    for &n in &present {
        assert!(
            view.has(n) && view.entry(n).is_some(),
            "field {n} listed but not readable"
        );
    }
    let desc = view.desc();
    for f in desc.fields() {
        let n = f.number;
        assert_eq!(view.has(n), present.contains(&n));
        match (f.label, f.kind) {
            (Label::Repeated, Kind::Message(_)) => {
                let list = view.messages(n);
                assert_eq!(list.iter().len(), list.len());
                for child in list.iter() {
                    read_with_accessors(&child, depth + 1, work);
                }
                assert!(list.get(list.len()).is_none());
            }
            (Label::Repeated, Kind::String | Kind::Bytes) => {
                let list = view.bytes_list(n);
                let total: usize = list.iter().map(<[u8]>::len).sum();
                assert!(total <= list.len() * view.root().len());
                let _ = list.strs().filter(Result::is_ok).count();
                assert!(list.get(list.len()).is_none());
            }
            (Label::Repeated, _) => {
                let _ = view.scalars::<u64>(n).iter().fold(0u64, u64::wrapping_add);
                let _ = view.scalars::<u32>(n).iter().count();
                let _ = view.scalars::<bool>(n).iter().filter(|b| *b).count();
                let _ = view.scalars::<f64>(n).get(0);
            }
            (_, Kind::Message(_)) => {
                if let Some(child) = view.message(n) {
                    read_with_accessors(&child, depth + 1, work);
                } else {
                    assert!(!view.has(n), "present message field {n} has no view");
                }
            }
            (_, Kind::String) => {
                let _ = view.str(n);
                assert_eq!(view.bytes(n).is_some(), view.has(n));
            }
            (_, Kind::Bytes) => {
                assert_eq!(view.bytes(n).is_some(), view.has(n));
                let _ = view.hybrid(n, Context::copy_only());
            }
            (_, _) => {
                let _ = (
                    view.scalar::<u64>(n),
                    view.scalar::<i32>(n),
                    view.scalar::<f32>(n),
                );
                let _ = view.scalar::<bool>(n);
            }
        }
    }
}

/// Calls every accessor on every field number, whatever the field's kind: wrong-kind calls
/// must return nothing or nonsense, never panic.
fn misuse_accessors(view: &View<'_>, depth: u32, work: &mut u32) {
    if *work == 0 || depth > 1 {
        return;
    }
    *work -= 1;
    let mut numbers: Vec<u32> = view.desc().fields().iter().map(|f| f.number).collect();
    numbers.extend([0, 19, 63, 64, 70_001, layout::MAX_FIELD_NUMBER, u32::MAX]);
    for n in numbers {
        let _ = (view.entry(n), view.scalar::<f64>(n), view.bytes(n), view.str(n));
        let _ = view.hybrid(n, Context::copy_only());
        let _ = view.scalars::<u64>(n).iter().count();
        let _ = view.scalars::<bool>(n).get(3);
        let _ = view.bytes_list(n).iter().map(<[u8]>::len).sum::<usize>();
        if let Some(child) = view.message(n) {
            let _ = child.present_fields().count();
            misuse_accessors(&child, depth + 1, work);
        }
        for child in view.messages(n).iter().take(4) {
            let _ = child.present_fields().count();
            misuse_accessors(&child, depth + 1, work);
        }
    }
}

/// Decodes one input and checks everything the decoder promises.
fn check_input(buf: &[u8], desc: &'static MessageDesc<'static>, limits: &Limits, tally: &mut Tally) {
    tally.inputs += 1;
    let (result, allocated) = measure(|| View::decode(buf, desc, limits));
    let view = match result {
        Ok(view) => view,
        Err(err) => {
            tally.rejected += 1;
            let bound = error_alloc_bound(limits);
            assert!(
                allocated <= bound,
                "rejecting allocated {allocated} B (bound {bound}): {err}\ninput: {}",
                hex(buf)
            );
            let text = err.to_string();
            assert!(text.contains(&format!("at byte {}", err.offset())), "{text}");
            assert!(err.offset() <= buf.len() as u64, "offset past the input: {text}");
            return;
        }
    };
    tally.accepted += 1;
    assert_eq!(
        allocated,
        0,
        "accepting allocated {allocated} B; input: {}",
        hex(buf)
    );
    read_with_accessors(&view, 0, &mut 256);
    if tally.accepted % 32 == 0 {
        misuse_accessors(&view, 0, &mut 8);
    }

    let ctx = Context::copy_only();
    let message = match DynamicMessage::from_view(&view, ctx) {
        Ok(m) => m,
        Err(err) => {
            assert!(
                matches!(err.kind(), DecodeErrorKind::InvalidUtf8 { .. }),
                "from_view: {err}"
            );
            assert!(
                err.path().next().is_some(),
                "a UTF-8 error names its field: {err}"
            );
            tally.bad_utf8 += 1;
            return;
        }
    };
    tally.read_in_full += 1;
    let again = message.to_vec().expect("re-encoding a decoded message");
    let view2 = View::decode(&again, desc, limits)
        .unwrap_or_else(|e| panic!("re-encoding does not decode: {e}\ninput: {}", hex(buf)));
    let back = DynamicMessage::from_view(&view2, ctx).expect("re-encoded strings are UTF-8");
    assert!(
        back == message,
        "round trip changed the message\ninput: {}",
        hex(buf)
    );
}

fn hex(buf: &[u8]) -> String {
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn random_and_mutated_inputs_never_panic_or_allocate() {
    let seed = env_u64("FERRY_HOSTILE_SEED").unwrap_or(0x00f3_7272_5eed);
    let iters = env_u64("FERRY_HOSTILE_ITERS").unwrap_or(100_000);
    println!("hostile_input: seed {seed:#x}, {iters} inputs (rerun with FERRY_HOSTILE_SEED={seed:#x})");
    let mut rng = Rng::new(seed);
    let corpus = valid_corpus(&mut rng, 256);
    let default = Limits::default();
    let tight = Limits {
        max_message_len: 1024,
        max_depth: 3,
        max_elements: 64,
    };
    let mut tally = Tally::default();
    let start = Instant::now();
    for (desc, buf) in &corpus {
        check_input(buf, desc, &default, &mut tally);
    }
    for i in 0..iters {
        let (mut desc, buf) = if i % 8 == 0 {
            (
                if rng.chance(50) { &RECORD } else { &ALL_KINDS },
                random_input(&mut rng),
            )
        } else {
            let (desc, valid) = &corpus[rng.below(corpus.len())];
            let mut buf = valid.clone();
            mutate(&mut rng, &mut buf, &corpus);
            (*desc, buf)
        };
        if rng.chance(5) {
            // The right bytes for the wrong type.
            desc = if core::ptr::eq(desc, &RECORD) {
                &ALL_KINDS
            } else {
                &RECORD
            };
        }
        let limits = if rng.chance(10) { &tight } else { &default };
        check_input(&buf, desc, limits, &mut tally);
    }
    println!("hostile_input: {tally:?} in {:.2?}", start.elapsed());
    // Mutations that always break the message would test only the first checks.
    assert!(
        tally.accepted > iters / 20,
        "too few mutated inputs were accepted: {tally:?}"
    );
    assert!(
        tally.rejected > iters / 5,
        "too few inputs were rejected: {tally:?}"
    );
}

/// A chain of `levels` nested `AllKinds.child` messages below the root.
fn child_chain(levels: usize) -> Vec<u8> {
    let mut m = DynamicMessage::new(&ALL_KINDS);
    m.set(1, Value::I32(-1)).unwrap();
    for _ in 0..levels {
        let mut parent = DynamicMessage::new(&ALL_KINDS);
        parent.set(17, Value::Message(m)).unwrap();
        m = parent;
    }
    m.to_vec().unwrap()
}

/// Checks that `err` reads `decode error in field `<path>` at byte <offset>: ...`.
fn assert_names_path_and_offset(err: &DecodeError, path: &[&str], offset: u64) {
    let text = err.to_string();
    assert_eq!(err.path().collect::<Vec<_>>(), path, "{text}");
    assert_eq!(err.offset(), offset, "{text}");
    if path.is_empty() {
        assert!(
            text.starts_with(&format!("decode error at byte {offset}: ")),
            "{text}"
        );
    } else {
        let expected = format!("decode error in field `{}` at byte {offset}: ", path.join(" > "));
        assert!(
            text.starts_with(&expected),
            "{text}\nexpected it to start with {expected}"
        );
    }
}

#[test]
fn nesting_deeper_than_max_depth_is_too_deep() {
    let limits = Limits::default();
    let max = limits.max_depth as usize;
    let ok = child_chain(max);
    View::decode(&ok, &ALL_KINDS, &limits).expect("exactly max_depth levels are allowed");

    let deep = child_chain(max + 1);
    let (result, allocated) = measure(|| View::decode(&deep, &ALL_KINDS, &limits));
    let err = result.expect_err("one level too deep");
    assert_eq!(
        err.kind(),
        &DecodeErrorKind::TooDeep {
            max: limits.max_depth
        }
    );
    assert!(
        allocated <= error_alloc_bound(&limits),
        "{allocated} B for a {max}-level path"
    );

    // The error is at the `child` entry of the message at depth `max`: find that header.
    let roomy = Limits {
        max_depth: limits.max_depth + 1,
        ..limits
    };
    let mut view = View::decode(&deep, &ALL_KINDS, &roomy).unwrap();
    let mut header_at = 0u64;
    for _ in 0..max {
        header_at = layout::split_range(view.entry(17).unwrap()).0.into();
        view = view.message(17).unwrap();
    }
    // One chunk, and `child` is the only (so the first) entry.
    let entry_at = header_at + layout::header_len(1, 0) as u64;
    let path = vec!["ferry.sample.AllKinds.child"; max + 1];
    assert_names_path_and_offset(&err, &path, entry_at);
    assert!(err.to_string().ends_with("nesting deeper than 64"), "{err}");
}

#[test]
fn a_message_that_contains_itself_is_rejected() {
    // A 32-byte root whose `child` entry points back at the root header: without the
    // structure-order check (S1) only max_depth would stop it.
    let mut buf = preamble(1, 1);
    buf.extend(chunk(0, 0, layout::bit_of(17)));
    buf.extend(layout::range_entry(0, 32).to_le_bytes());
    let err = View::decode(&buf, &ALL_KINDS, &Limits::default()).unwrap_err();
    assert_eq!(
        err.kind(),
        &DecodeErrorKind::StructureOverlap {
            start: 0,
            previous_end: 32
        }
    );
    assert_names_path_and_offset(&err, &["ferry.sample.AllKinds.child"], 24);
}

#[test]
fn too_many_list_elements_is_too_many_elements() {
    let ctx = Context::copy_only();
    let mut m = DynamicMessage::new(&RECORD);
    m.set(1, Value::Bytes(HybridBytes::new(b"key", ctx))).unwrap();
    let fields = vec![HybridBytes::EMPTY; 1000];
    m.set(2, Value::List(List::Bytes(fields))).unwrap();
    let buf = m.to_vec().unwrap();

    // The budget counts the root's two entries and the list's 1000 elements.
    let exact = Limits {
        max_elements: 1002,
        ..Limits::default()
    };
    View::decode(&buf, &RECORD, &exact).expect("exactly max_elements");
    let limits = Limits {
        max_elements: 1001,
        ..Limits::default()
    };
    let err = View::decode(&buf, &RECORD, &limits).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::TooManyElements { max: 1001 });
    // The list's entry: after the preamble, one chunk and the key's entry.
    assert_names_path_and_offset(
        &err,
        &["ferry.sample.Record.fields"],
        layout::header_len(1, 1) as u64,
    );
    assert!(
        err.to_string().ends_with("more than 1001 fields and elements"),
        "{err}"
    );
}

#[test]
fn a_message_longer_than_max_message_len_is_too_large() {
    let ctx = Context::copy_only();
    let mut m = DynamicMessage::new(&RECORD);
    m.set(1, Value::Bytes(HybridBytes::new(&[7; 100], ctx))).unwrap();
    let buf = m.to_vec().unwrap();
    let len = buf.len() as u64;

    View::decode(
        &buf,
        &RECORD,
        &Limits {
            max_message_len: len,
            ..Limits::default()
        },
    )
    .expect("at the limit");
    let limits = Limits {
        max_message_len: len - 1,
        ..Limits::default()
    };
    let (result, allocated) = measure(|| View::decode(&buf, &RECORD, &limits));
    let err = result.unwrap_err();
    assert_eq!(
        err.kind(),
        &DecodeErrorKind::MessageTooLarge { len, max: len - 1 }
    );
    assert_eq!(allocated, 0, "a rejection with no field path allocates nothing");
    assert_names_path_and_offset(&err, &[], 0);
    assert!(err.to_string().ends_with(&format!(
        "message of {len} bytes exceeds the limit of {}",
        len - 1
    )));
}

fn preamble(chunks: u16, entries: u32) -> Vec<u8> {
    let mut b = chunks.to_le_bytes().to_vec();
    b.extend([0, 0]);
    b.extend(entries.to_le_bytes());
    b
}

fn chunk(group: u32, rank: u32, bits: u64) -> Vec<u8> {
    let mut b = group.to_le_bytes().to_vec();
    b.extend(rank.to_le_bytes());
    b.extend(bits.to_le_bytes());
    b
}

/// `levels` `AllKinds` messages, each a header followed by an `r_child` list of `width`
/// pointers that all point at the next level's one header, then an empty leaf; laid out in walk
/// order, so only the sharing is wrong. A few KiB that stand for `width^levels` messages.
fn dag(levels: usize, width: usize) -> Vec<u8> {
    let header = layout::header_len(1, 1);
    let list = width * layout::ENTRY_LEN;
    let leaf_at = (header + list) * levels;
    let mut buf = Vec::new();
    for k in 0..levels {
        let list_at = buf.len() + header;
        buf.extend(preamble(1, 1));
        buf.extend(chunk(0, 0, layout::bit_of(37)));
        buf.extend(layout::range_entry(list_at as u32, list as u32).to_le_bytes());
        let next = if k + 1 == levels {
            layout::range_entry(leaf_at as u32, layout::header_len(0, 0) as u32)
        } else {
            layout::range_entry((list_at + list) as u32, header as u32)
        };
        for _ in 0..width {
            buf.extend(next.to_le_bytes());
        }
    }
    assert_eq!(buf.len(), leaf_at);
    buf.extend(preamble(0, 0));
    buf
}

#[test]
fn shared_subtrees_are_rejected_at_once() {
    // 64^10 = 2^60 messages if read as a tree, from a 5 KiB input. Before the structure-order
    // check (S1) only the element budget stopped this, after max_elements steps (~0.4 s in
    // release at the default 4 Mi); now the second pointer to a header already visited fails.
    let buf = dag(10, 64);
    assert!(buf.len() < 6 << 10);
    let limits = Limits::default();
    let (result, allocated) = measure(|| View::decode(&buf, &ALL_KINDS, &limits));
    let err = result.expect_err("a header referenced twice");
    let leaf_at = buf.len() as u64 - 8;
    assert_eq!(
        err.kind(),
        &DecodeErrorKind::StructureOverlap {
            start: leaf_at,
            previous_end: leaf_at + 8
        }
    );
    // The second pointer of the deepest list, reached through the first pointer of each above.
    let path = vec!["ferry.sample.AllKinds.r_child"; 10];
    assert_names_path_and_offset(&err, &path, leaf_at - 64 * 8 + 8);
    assert!(allocated <= error_alloc_bound(&limits));
    // "At once" is the offset above: the error is raised at the second pointer to the first
    // shared header, not after max_elements steps (no wall-clock bound: it would flake).

    // Even the smallest sharing is rejected: two pointers to one leaf.
    let err = View::decode(&dag(1, 2), &ALL_KINDS, &limits).unwrap_err();
    assert!(
        matches!(err.kind(), DecodeErrorKind::StructureOverlap { .. }),
        "{err}"
    );
    // One pointer per level is a plain chain, and valid.
    View::decode(&dag(10, 1), &ALL_KINDS, &limits).expect("a chain in walk order");
}

/// The committed seed inputs of the `decode` fuzz target.
fn fuzz_seeds_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/decode")
}

/// The seeds: valid `AllKinds` and `Record` encodings of every shape the fuzzer should start
/// from, including a nesting chain and a small DAG.
fn fuzz_seeds() -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng::new(0x5eed);
    let mut seeds = vec![
        (
            "all_kinds_empty".to_string(),
            DynamicMessage::new(&ALL_KINDS).to_vec().unwrap(),
        ),
        ("all_kinds_chain".to_string(), child_chain(4)),
        ("all_kinds_dag_chain".to_string(), dag(3, 1)),
    ];
    let mut records = 0;
    for (desc, bytes) in valid_corpus(&mut rng, 24) {
        let name = if core::ptr::eq(desc, &RECORD) {
            records += 1;
            format!("record_{records:02}")
        } else {
            format!("all_kinds_{:02}", seeds.len() - 3 - records)
        };
        seeds.push((name, bytes));
    }
    seeds
}

#[test]
fn fuzz_seeds_are_valid_and_pass_every_check() {
    let dir = fuzz_seeds_dir();
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let buf = std::fs::read(&path).unwrap();
        let desc: &'static MessageDesc<'static> = if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("record"))
        {
            &RECORD
        } else {
            &ALL_KINDS
        };
        View::decode(&buf, desc, &Limits::default())
            .unwrap_or_else(|e| panic!("{} does not decode: {e}", path.display()));
        check_input(&buf, desc, &Limits::default(), &mut Tally::default());
        count += 1;
    }
    assert!(count >= 10, "only {count} seeds in {}", dir.display());
}

#[test]
#[ignore = "writes fuzz/seeds: run by hand to regenerate the seed corpus"]
fn write_fuzz_seeds() {
    let dir = fuzz_seeds_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in fuzz_seeds() {
        std::fs::write(dir.join(format!("{name}.bin")), bytes).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Regression tests, one per bug found (mark a new one `#[ignore = "bug: ..."]` while it is open).

/// A `Record` whose 32-byte `key` is a pointer list: one entry pointing at a fake header (inside
/// the key) whose chunk group is `u32::MAX`.
fn record_with_a_fake_header_in_its_key() -> Vec<u8> {
    let ctx = Context::copy_only();
    // The root header is 32 bytes (one chunk, one entry), so the key's bytes start at 32.
    let mut key = layout::range_entry(40, 0).to_le_bytes().to_vec();
    key.extend(preamble(1, 0));
    key.extend(chunk(u32::MAX, 0, 1));
    let mut m = DynamicMessage::new(&RECORD);
    m.set(1, Value::Bytes(HybridBytes::new(&key, ctx))).unwrap();
    let buf = m.to_vec().unwrap();
    assert_eq!(&buf[32..64], &key[..]);
    buf
}

/// Bug: `View::messages` on a field that is not a repeated message read the field's bytes as
/// pointers to child headers, and `present_fields` on such a child computed `group * 64 + bit`
/// in `u32`: an overflow panic in debug builds, bogus field numbers in release.
#[test]
fn regression_messages_of_a_bytes_field_yields_no_views() {
    let buf = record_with_a_fake_header_in_its_key();
    let view = View::decode(&buf, &RECORD, &Limits::default()).unwrap();
    let list = view.messages(1);
    for child in list.iter() {
        for n in child.present_fields() {
            assert!(n <= layout::MAX_FIELD_NUMBER, "bogus field number {n}");
        }
    }
    assert!(list.is_empty(), "`key` is bytes, not a repeated message");
}

/// Bug: `ScalarList`/`BytesList`/`MessageList::get` computed `start + width` unchecked, so a
/// huge index panicked (overflow) in debug builds instead of returning `None`.
#[test]
fn regression_list_get_with_a_huge_index_is_none() {
    let ctx = Context::copy_only();
    let mut m = DynamicMessage::new(&ALL_KINDS);
    m.set(22, Value::List(List::I64(vec![1]))).unwrap();
    m.set(36, Value::List(List::Bytes(vec![HybridBytes::new(b"x", ctx)])))
        .unwrap();
    m.set(
        37,
        Value::List(List::Messages(vec![DynamicMessage::new(&ALL_KINDS)])),
    )
    .unwrap();
    let buf = m.to_vec().unwrap();
    let view = View::decode(&buf, &ALL_KINDS, &Limits::default()).unwrap();
    let huge = usize::MAX / 8;
    assert_eq!(view.scalars::<i64>(22).get(huge), None);
    assert_eq!(view.bytes_list(36).get(huge), None);
    assert!(view.messages(37).get(huge).is_none());
}

/// Bug: `DynamicMessage::from_view` kept a present but empty repeated field as an empty list,
/// which the encoder omits, so `decode(encode(m)) != m` for such input.
#[test]
fn regression_empty_list_round_trips() {
    // `r_int32` present with an empty range: valid (0 is a multiple of 4).
    let mut buf = preamble(1, 1);
    buf.extend(chunk(0, 0, layout::bit_of(21)));
    buf.extend(layout::range_entry(32, 0).to_le_bytes());
    let ctx = Context::copy_only();
    let view = View::decode(&buf, &ALL_KINDS, &Limits::default()).unwrap();
    let m = DynamicMessage::from_view(&view, ctx).unwrap();
    let again = m.to_vec().unwrap();
    let view2 = View::decode(&again, &ALL_KINDS, &Limits::default()).unwrap();
    let back = DynamicMessage::from_view(&view2, ctx).unwrap();
    assert!(
        back == m,
        "field 21 was {:?}, is now {:?}",
        m.get(21),
        back.get(21)
    );
}

/// A `fmt::Write` that fails once `left` bytes are used up, which stops a derived `Debug`.
struct Capped {
    left: usize,
}

impl std::fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.left = self.left.checked_sub(s.len()).ok_or(std::fmt::Error)?;
        Ok(())
    }
}

/// Bug: the derived `Debug` of `MessageDesc` followed `Kind::Message(&desc)` into itself, so
/// `{:?}` of a recursive descriptor, or of any `DynamicMessage` of it, recursed until the stack
/// overflowed, and a failing `assert_eq!` on such messages aborted the test binary.
#[test]
fn regression_debug_of_a_recursive_message_ends() {
    use std::fmt::Write;
    let m = DynamicMessage::new(&ALL_KINDS);
    // Capped, so the bug shows as a failed assertion instead of a stack overflow.
    let mut out = Capped { left: 16 << 10 };
    assert!(
        write!(out, "{m:?}").is_ok(),
        "Debug of an empty AllKinds is over 16 KiB"
    );
}
