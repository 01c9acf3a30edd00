//! Property tests: random messages of every field kind, mixing copied and referenced values,
//! at thresholds 0, 512 and "always copy", round-trip through the wire format.

use ferry::Message as _;
use ferry::sample::{ALL_KINDS, RECORD, SCALAR_KINDS};
use ferry::wire::{DynamicMessage, Kind, List, Value};
use ferry::{Context, HybridBytes, Limits, Outgoing, Pool, PoolConfig, View};
use ferry_testkit::{Builder, Rng};
use proptest::prelude::*;

fn test_pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 256 << 20,
        ..PoolConfig::default()
    })
    .unwrap()
}

fn count_zero_copy(m: &DynamicMessage<'_>) -> usize {
    fn value(v: &Value<'_>) -> usize {
        match v {
            Value::Bytes(b) => b.is_zero_copy() as usize,
            Value::Message(m) => count_zero_copy(m),
            Value::List(List::Bytes(l)) => l.iter().filter(|b| b.is_zero_copy()).count(),
            Value::List(List::Messages(l)) => l.iter().map(count_zero_copy).sum(),
            _ => 0,
        }
    }
    m.iter().map(|(_, v)| value(v)).sum()
}

fn check(seed: u64, threshold: usize) {
    let pool = test_pool();
    let start = pool.stats();
    {
        let ctx = Context::new(pool.clone()).with_threshold(threshold);
        let mut b = Builder {
            rng: Rng::new(seed | 1),
            pool: &pool,
            ctx: &ctx,
        };
        let msg = b.message(&ALL_KINDS, 0);

        // Encoded length equals bytes written; the gather list is header + zero-copy buffers.
        let layout = msg.layout();
        let bytes = msg.to_vec().unwrap();
        assert_eq!(bytes.len(), layout.total_len());
        let mut head = vec![0u8; layout.head_len];
        msg.write_head(&layout, &mut head).unwrap();
        assert_eq!(&bytes[..layout.head_len], &head[..]);
        let mut zc = Vec::new();
        msg.zero_copy_bufs(&mut zc).unwrap();
        assert_eq!(zc.len(), layout.zero_copy_count);
        assert_eq!(zc.len(), count_zero_copy(&msg));
        assert_eq!(zc.iter().map(|b| b.len()).sum::<usize>(), layout.zero_copy_len);
        if threshold == usize::MAX {
            assert_eq!(layout.zero_copy_count, 0);
        }

        // Round trip is the identity, from a borrowed slice ...
        let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
        let back = DynamicMessage::from_view(&view, &ctx).unwrap();
        assert_eq!(back, msg);

        // ... and from a received pool buffer, re-encoding deterministically (the echo path).
        let received = pool.copy_from(&bytes).unwrap();
        let view = View::decode_shared(&received, &ALL_KINDS, &Limits::default()).unwrap();
        let echo = DynamicMessage::from_view(&view, &ctx).unwrap();
        assert_eq!(echo, msg);
        let echoed = echo.to_vec().unwrap();
        let again = View::decode(&echoed, &ALL_KINDS, &Limits::default()).unwrap();
        assert_eq!(DynamicMessage::from_view(&again, &ctx).unwrap(), msg);
        // Encoding is deterministic. Copy-or-reference decisions move data between the copied
        // and zero-copy regions, so only copy-only re-encodings are byte-identical.
        assert!(
            msg.to_vec().unwrap() == bytes,
            "same message, different bytes (seed {seed})"
        );
        if threshold == usize::MAX {
            assert!(echoed == bytes, "copy-only re-encoding differs (seed {seed})");
        }
    }
    assert_eq!(
        pool.stats().buffers_outstanding(),
        start.buffers_outstanding(),
        "leak at seed {seed}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip_threshold_0(seed in any::<u64>()) {
        check(seed, 0);
    }

    #[test]
    fn round_trip_threshold_512(seed in any::<u64>()) {
        check(seed, 512);
    }

    #[test]
    fn round_trip_always_copy(seed in any::<u64>()) {
        check(seed, usize::MAX);
    }
}

#[test]
fn every_scalar_kind_round_trips_at_its_extremes() {
    let ctx = Context::copy_only();
    for (i, kind) in SCALAR_KINDS.iter().enumerate() {
        let number = i as u32 + 1;
        assert!(
            matches!(ALL_KINDS.field(number).map(|f| f.kind), Some(k) if core::mem::discriminant(&k) == core::mem::discriminant(kind))
        );
        let extremes = match kind {
            Kind::Bool => vec![Value::Bool(false), Value::Bool(true)],
            Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => {
                vec![
                    Value::I32(i32::MIN),
                    Value::I32(-1),
                    Value::I32(0),
                    Value::I32(i32::MAX),
                ]
            }
            Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => {
                vec![Value::I64(i64::MIN), Value::I64(-1), Value::I64(i64::MAX)]
            }
            Kind::UInt32 | Kind::Fixed32 => vec![Value::U32(0), Value::U32(u32::MAX)],
            Kind::UInt64 | Kind::Fixed64 => vec![Value::U64(0), Value::U64(u64::MAX)],
            Kind::Float => vec![Value::F32(f32::MIN), Value::F32(-0.0), Value::F32(f32::INFINITY)],
            Kind::Double => vec![
                Value::F64(f64::MAX),
                Value::F64(f64::MIN_POSITIVE),
                Value::F64(f64::NEG_INFINITY),
            ],
            _ => unreachable!(),
        };
        for v in extremes {
            let mut m = DynamicMessage::new(&ALL_KINDS);
            m.set(number, v.clone()).unwrap();
            let bytes = m.to_vec().unwrap();
            let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
            let back = DynamicMessage::from_view(&view, ctx).unwrap();
            assert_eq!(back.get(number), Some(&v), "{kind:?}");
        }
    }
    let _ = &RECORD;
}

/// A message written into a shared region with `write_head_in` (its zero-copy values left
/// where they are, some before and some after the header segment) decodes in place with
/// `View::decode_at`, values read at the offsets they were placed at.
fn check_in_region(seed: u64) {
    let pool = test_pool();
    let ctx = Context::new(pool.clone()).with_threshold(0);
    let mut b = Builder {
        rng: Rng::new(seed | 1),
        pool: &pool,
        ctx: &ctx,
    };
    let msg = b.message(&ALL_KINDS, 0);
    let layout = msg.layout();
    let mut values = Vec::new();
    msg.for_each_zero_copy(&mut |v| values.push(v.to_vec()));
    // Region: [64 B][values in reverse walk order, half of them][head][the other half][64 B].
    let base = 64 + values.iter().step_by(2).map(Vec::len).sum::<usize>();
    let mut region = vec![0xeeu8; base + layout.head_len + layout.zero_copy_len + 64];
    let mut offsets = Vec::new();
    let (mut low, mut high) = (64, base + layout.head_len);
    for (i, v) in values.iter().enumerate() {
        let at = if i % 2 == 0 { &mut low } else { &mut high };
        region[*at..*at + v.len()].copy_from_slice(v);
        offsets.push(*at as u64);
        *at += v.len();
    }
    let mut next = offsets.iter();
    let mut head = vec![0u8; layout.head_len];
    msg.write_head_in(&layout, &mut head, base as u64, &mut |v| {
        let at = *next.next()?;
        (region[at as usize..at as usize + v.len()] == *v).then_some(at)
    })
    .unwrap();
    region[base..base + layout.head_len].copy_from_slice(&head);
    let view = View::decode_at(&region, base, &ALL_KINDS, &Limits::default()).unwrap();
    assert_eq!(
        DynamicMessage::from_view(&view, &ctx).unwrap(),
        msg,
        "seed {seed}"
    );
    // A `locate` that cannot place a value is an error, not a bad offset.
    if layout.zero_copy_count > 0 {
        let err = msg
            .write_head_in(&layout, &mut head, base as u64, &mut |_| None)
            .unwrap_err();
        assert_eq!(err, ferry::EncodeError::NotShared);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip_in_a_shared_region(seed in any::<u64>()) {
        check_in_region(seed);
    }
}

#[test]
fn region_offsets_point_at_the_values_in_place() {
    use ferry::sample::Record;
    let pool = test_pool();
    let ctx = Context::new(pool.clone());
    let mut region = vec![0u8; 16384];
    region[100..4196].fill(9);
    let value = pool.copy_from(&region[100..4196]).unwrap();
    let mut rec = Record::new(&ctx);
    rec.set_key(&b"k"[..]);
    rec.append_field(&value[..]);
    let layout = rec.layout();
    let mut head = vec![0u8; layout.head_len];
    rec.write_head_in(&layout, &mut head, 8192, &mut |_| Some(100))
        .unwrap();
    region[8192..8192 + head.len()].copy_from_slice(&head);
    let view = Record::decode_at(&region, 8192, &Limits::default()).unwrap();
    assert_eq!(view.key(), b"k");
    let field = view.fields().get(0).unwrap();
    assert!(
        std::ptr::eq(field.as_ptr(), region[100..].as_ptr()),
        "read in place"
    );
    assert_eq!(field.len(), 4096);
    // The root header must lie inside the region.
    assert!(View::decode_at(&region, region.len() + 1, &RECORD, &Limits::default()).is_err());
    assert!(View::decode_at(&region, region.len() - 4, &RECORD, &Limits::default()).is_err());
}

/// `Outgoing` is dyn-compatible: messages of different types go through one `&dyn Outgoing`
/// path (what a queue of heterogeneous responses holds) and encode exactly as through the
/// generic one.
#[test]
fn outgoing_is_usable_as_a_trait_object() {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let ctx = Context::new(pool.clone());
    let value = pool.copy_from(&[5u8; 4096]).unwrap();
    let mut rec = ferry::sample::Record::new(&ctx);
    rec.set_key(&b"k"[..]);
    rec.append_field(&value[..]);
    let mut dynamic = DynamicMessage::new(&RECORD);
    dynamic
        .set(1, Value::Bytes(HybridBytes::new(b"other", &ctx)))
        .unwrap();
    let generic = [rec.to_vec().unwrap(), dynamic.to_vec().unwrap()];
    let queue: [&dyn Outgoing; 2] = [&rec, &dynamic];
    for (msg, want) in queue.iter().zip(&generic) {
        let layout = msg.layout();
        let mut head = vec![0u8; layout.head_len];
        msg.write_head(&layout, &mut head).unwrap();
        let mut zero_copy = 0;
        msg.for_each_zero_copy(&mut |b| {
            head.extend_from_slice(b);
            zero_copy += 1;
        });
        assert_eq!(zero_copy, layout.zero_copy_count);
        assert_eq!(&head, want);
        assert_eq!(&msg.to_vec().unwrap(), want);
    }
    assert_eq!(
        queue[0].layout().zero_copy_count,
        1,
        "the pool value is referenced"
    );
}
