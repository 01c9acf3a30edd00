//! Every send mode moves random Ferry messages with zero-copy fields over loopback, and the
//! receiver sees identical bytes; the hybrid rule decides what is referenced and what copied,
//! and both sides' pools end with nothing outstanding.

mod common;

use ferry_wire::Message as _;
use std::sync::Arc;
use std::thread;

use common::records::{self, Placement, RecordSpec, Source, ValueSpec};
use common::{Rng, outstanding, pair, pool, within};
use ferry_buf::{Pool, SharedBuf};
use ferry_net::{Config, Connection, Meta, Mode, Payload, SendStats, TransportError};
use ferry_wire::sample::{ALL_KINDS, RECORD, Record};
use ferry_wire::{Context, DynamicMessage, HybridBytes, Limits, List, Outgoing, Value, View};

/// What the sending side reports after a round trip.
struct Sent {
    mode: Mode,
    stats: SendStats,
}

/// Runs one connection in `mode`: `send` on this thread, `recv` on another, then checks that
/// both pools are back to zero. `send` returns the expected placement and wire bytes; `recv`
/// returns the bytes it received.
fn round_trip(
    what: &str,
    mode: Mode,
    server_config: Config,
    send: impl FnOnce(&mut Connection, &Pool) -> (Placement, u64) + Send + 'static,
    recv: impl FnOnce(&mut Connection) -> u64 + Send + 'static,
) -> Sent {
    let what = format!("{what} in {mode} mode");
    within(&what.clone(), move || {
        let (client_pool, server_pool) = (pool(), pool());
        let (mut client, mut server) = pair(
            &client_pool,
            &Config::with_mode(mode),
            &server_pool,
            &server_config,
        );
        let receiver = thread::spawn(move || {
            let bytes = recv(&mut server);
            drop(server);
            assert_eq!(
                outstanding(&server_pool),
                0,
                "receiving pool after the connection is dropped"
            );
            bytes
        });
        if client.mode() != mode {
            eprintln!("NOTE: {mode} mode fell back to {} on this kernel", client.mode());
        }
        let (placement, wire) = send(&mut client, &client_pool);
        client.sender().wait_idle().expect("wait_idle");
        assert_eq!(client.sender().in_flight(), 0, "nothing in flight once idle");
        let stats = client.stats().send;
        let effective = client.mode();
        drop(client);
        let received = receiver.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        assert_eq!(
            outstanding(&client_pool),
            0,
            "sending pool after the connection is dropped"
        );
        assert_eq!(received, wire, "bytes received");
        assert_eq!(stats.queue.wire_bytes, wire, "bytes queued");
        assert_eq!(
            stats.queue.zero_copy_values_referenced, placement.referenced,
            "zero-copy bytes posted as gather entries"
        );
        assert_eq!(
            stats.queue.zero_copy_values_copied, placement.copied,
            "zero-copy bytes copied in user space"
        );
        if matches!(effective, Mode::ZeroCopy | Mode::Uring) {
            assert!(
                stats.completions.completed > 0,
                "zero-copy sends complete: {stats:?}"
            );
        }
        eprintln!("{what}, {mode} ({effective}): {stats:?}");
        Sent {
            mode: effective,
            stats,
        }
    })
}

fn records_round_trip(mode: Mode, specs: Vec<RecordSpec>, server_config: Config) -> Sent {
    let specs = Arc::new(specs);
    let rx_specs = Arc::clone(&specs);
    round_trip(
        "random records",
        mode,
        server_config,
        move |conn, pool| records::send_all(conn, pool, &specs).expect("send"),
        move |conn| records::receive_all(conn, &rx_specs),
    )
}

/// Random records (fields below, at and above the 512-byte threshold; heap values, borrowed
/// and owned pool buffers; random kinds, flags and request ids) in every mode, with receive
/// buffers small enough that many frames straddle them.
#[test]
fn random_records_every_mode() {
    let seed = common::seed(0x005e_edf3);
    for (round, read_buf) in [4096, 64 << 10, 256 << 10].into_iter().enumerate() {
        for (m, mode) in Mode::ALL.into_iter().enumerate() {
            let specs = records::records(seed ^ (round * 16 + m) as u64, 60);
            let server = Config {
                read_buf,
                ..Config::default()
            };
            records_round_trip(mode, specs, server);
        }
    }
}

/// One message with more zero-copy fields than `UIO_MAXIOV` (1024) gather entries: gather
/// modes split the batch over several calls, and it still arrives whole.
#[test]
fn more_gather_entries_than_uio_maxiov() {
    let mut rng = Rng::new(7);
    let spec = RecordSpec {
        meta: Meta::new(3, 99),
        key: ValueSpec {
            data: b"many".to_vec(),
            source: Source::Heap,
        },
        fields: (0..1500)
            .map(|_| ValueSpec {
                data: rng.bytes(600),
                source: Source::PoolOwned,
            })
            .collect(),
    };
    for mode in Mode::ALL {
        let sent = records_round_trip(mode, vec![spec.clone(); 3], Config::default());
        if matches!(sent.mode, Mode::Gather | Mode::ZeroCopy | Mode::Uring) {
            assert!(
                sent.stats.send_calls >= 2 * sent.stats.batches,
                "{}: 1501+ entries per message need two calls per batch: {:?}",
                sent.mode,
                sent.stats
            );
        }
    }
}

/// A random bytes value for a `DynamicMessage`: the one to send (pool-resident values as
/// counted `SharedBuf`s) and a plain copy to compare with.
fn dyn_bytes(
    rng: &mut Rng,
    pool: &Pool,
    ctx: &Context,
    utf8: bool,
) -> (HybridBytes<'static>, HybridBytes<'static>) {
    let mut v = records::random_value(rng, 200_000);
    if v.data.is_empty() {
        v.data.push(b'x');
    }
    if utf8 {
        for b in &mut v.data {
            *b = b'a' + *b % 26;
        }
    }
    let plain = HybridBytes::from_vec(v.data.clone());
    let sent = match v.source {
        Source::Heap => HybridBytes::from_vec(v.data),
        Source::PoolBorrowed | Source::PoolOwned => {
            HybridBytes::from_shared(pool.copy_from(&v.data).unwrap(), ctx)
        }
    };
    (sent, plain)
}

/// Sets `number` to the same value on both messages.
fn set2(
    pair: &mut (DynamicMessage<'static>, DynamicMessage<'static>),
    number: u32,
    sent: Value<'static>,
    plain: Value<'static>,
) {
    pair.0.set(number, sent).unwrap();
    pair.1.set(number, plain).unwrap();
}

/// A random `AllKinds` message (and its plain twin): scalars, strings and bytes of every size,
/// nested messages, a nested `Record`, lists, maps, a oneof and a far field number.
fn dyn_message(
    rng: &mut Rng,
    pool: &Pool,
    ctx: &Context,
    depth: u32,
) -> (DynamicMessage<'static>, DynamicMessage<'static>) {
    let mut m = (DynamicMessage::new(&ALL_KINDS), DynamicMessage::new(&ALL_KINDS));
    let v = rng.u64();
    if rng.chance(1, 2) {
        set2(&mut m, 1, Value::I32(v as i32), Value::I32(v as i32));
    }
    if rng.chance(1, 2) {
        set2(&mut m, 4, Value::U64(v), Value::U64(v));
    }
    if rng.chance(1, 2) {
        let d = f64::from_bits(rng.u64());
        set2(&mut m, 12, Value::F64(d), Value::F64(d));
    }
    if rng.chance(1, 2) {
        set2(&mut m, 13, Value::Bool(v & 1 == 1), Value::Bool(v & 1 == 1));
    }
    for (number, utf8) in [(15, true), (16, false), (70000, false)] {
        if rng.chance(1, 2) {
            let (s, p) = dyn_bytes(rng, pool, ctx, utf8);
            set2(&mut m, number, Value::Bytes(s), Value::Bytes(p));
        }
    }
    if depth < 2 && rng.chance(1, 3) {
        let (s, p) = dyn_message(rng, pool, ctx, depth + 1);
        set2(&mut m, 17, Value::Message(s), Value::Message(p));
    }
    if rng.chance(1, 2) {
        let mut rec = (DynamicMessage::new(&RECORD), DynamicMessage::new(&RECORD));
        let (s, p) = dyn_bytes(rng, pool, ctx, false);
        set2(&mut rec, 1, Value::Bytes(s), Value::Bytes(p));
        let (s, p): (Vec<_>, Vec<_>) = (0..rng.range(1, 6))
            .map(|_| dyn_bytes(rng, pool, ctx, false))
            .unzip();
        set2(
            &mut rec,
            2,
            Value::List(List::Bytes(s)),
            Value::List(List::Bytes(p)),
        );
        set2(&mut m, 18, Value::Message(rec.0), Value::Message(rec.1));
    }
    if rng.chance(1, 2) {
        let list: Vec<i64> = (0..rng.range(1, 40)).map(|_| rng.u64() as i64).collect();
        set2(
            &mut m,
            22,
            Value::List(List::I64(list.clone())),
            Value::List(List::I64(list)),
        );
    }
    for (number, utf8) in [(35, true), (36, false)] {
        if rng.chance(1, 2) {
            let (s, p): (Vec<_>, Vec<_>) = (0..rng.range(1, 8))
                .map(|_| dyn_bytes(rng, pool, ctx, utf8))
                .unzip();
            set2(
                &mut m,
                number,
                Value::List(List::Bytes(s)),
                Value::List(List::Bytes(p)),
            );
        }
    }
    if rng.chance(1, 2) {
        for _ in 0..rng.range(1, 5) {
            let key = format!("k{}", rng.range(0, 1000)).into_bytes();
            let val = rng.u64() as i64;
            for msg in [&mut m.0, &mut m.1] {
                msg.insert_map_entry(
                    40,
                    Value::Bytes(HybridBytes::from_vec(key.clone())),
                    Value::I64(val),
                )
                .unwrap();
            }
        }
    }
    if rng.chance(1, 2) {
        for key in [false, true] {
            let (s, p) = dyn_bytes(rng, pool, ctx, false);
            m.0.insert_map_entry(42, Value::Bool(key), Value::Bytes(s))
                .unwrap();
            m.1.insert_map_entry(42, Value::Bool(key), Value::Bytes(p))
                .unwrap();
        }
    }
    match rng.range(0, 3) {
        0 => set2(&mut m, 50, Value::U64(v), Value::U64(v)),
        1 => {
            let (s, p) = dyn_bytes(rng, pool, ctx, true);
            set2(&mut m, 51, Value::Bytes(s), Value::Bytes(p));
        }
        _ => {}
    }
    m
}

/// `DynamicMessage`s of the `AllKinds` descriptor (every field kind, nesting, maps) with
/// zero-copy values, in every mode: the receiver decodes exactly the message sent.
#[test]
fn dynamic_all_kinds_every_mode() {
    let seed = common::seed(0x0a11_c1de);
    for (m, mode) in Mode::ALL.into_iter().enumerate() {
        let seed = seed ^ m as u64;
        let (tx_plain, rx_plain) = std::sync::mpsc::channel::<Vec<(Meta, DynamicMessage<'static>)>>();
        round_trip(
            "AllKinds messages",
            mode,
            Config::default(),
            move |conn, pool| {
                let ctx = Context::new(pool.clone());
                let mut rng = Rng::new(seed);
                let mut placement = Placement::default();
                let mut wire = 0;
                let (msgs, plain): (Vec<_>, Vec<_>) = (0..40u64)
                    .map(|i| {
                        let (msg, twin) = dyn_message(&mut rng, pool, &ctx, 0);
                        let meta = Meta::new(i as u16, i);
                        ((meta, msg), (meta, twin))
                    })
                    .unzip();
                tx_plain.send(plain).unwrap();
                for (meta, msg) in msgs {
                    let layout = msg.layout();
                    placement.add(conn.mode(), &layout);
                    wire += (ferry_net::frame::HEADER_LEN + layout.total_len()) as u64;
                    conn.send(meta, &msg).expect("send");
                }
                (placement, wire)
            },
            move |conn| {
                let plain = rx_plain.recv().unwrap();
                for (i, (meta, want)) in plain.iter().enumerate() {
                    let frame = conn.recv().unwrap_or_else(|e| panic!("recv {i}: {e}"));
                    assert_eq!(frame.meta(), *meta);
                    let view = View::decode_shared(frame.payload(), &ALL_KINDS, &Limits::default())
                        .unwrap_or_else(|e| panic!("message {i} does not decode: {e}"));
                    let got = DynamicMessage::from_view(&view, Context::copy_only()).unwrap();
                    assert!(got == *want, "message {i} differs:\n got {got:?}\nwant {want:?}");
                }
                assert!(matches!(conn.recv(), Err(TransportError::Closed)));
                conn.stats().recv.bytes
            },
        );
    }
}

/// Payloads that are not Ferry messages: copied bytes, a copied head with referenced parts
/// (more parts than `UIO_MAXIOV`), and bytes written in place, in every mode.
#[test]
fn raw_payloads_every_mode() {
    let mut rng = Rng::new(11);
    /// A copied head and the parts referenced after it.
    type RawFrame = (Vec<u8>, Vec<Vec<u8>>);
    let frames: Arc<Vec<RawFrame>> = Arc::new(
        (0..30)
            .map(|i| {
                let head = rng.bytes_in(0, 3000);
                let parts = match i % 3 {
                    0 => Vec::new(),
                    1 => (0..rng.range(1, 20)).map(|_| rng.bytes_in(0, 50_000)).collect(),
                    _ => (0..1500).map(|_| rng.bytes_in(1, 100)).collect(),
                };
                (head, parts)
            })
            .collect(),
    );
    for mode in Mode::ALL {
        let (tx, rx) = (Arc::clone(&frames), Arc::clone(&frames));
        round_trip(
            "raw payloads",
            mode,
            Config::default(),
            move |conn, pool| {
                let mut wire = 0;
                for (i, (head, parts)) in tx.iter().enumerate() {
                    let meta = Meta::new(1, i as u64);
                    let len = head.len() + parts.iter().map(Vec::len).sum::<usize>();
                    wire += (ferry_net::frame::HEADER_LEN + len) as u64;
                    if parts.is_empty() && i % 2 == 0 {
                        conn.send_payload(meta, Payload::Bytes(head))
                            .expect("send_payload");
                    } else if parts.is_empty() {
                        conn.sender()
                            .send_with(meta, head.len(), |out| out.copy_from_slice(head))
                            .expect("send_with");
                    } else {
                        let bufs: Vec<SharedBuf> = parts.iter().map(|p| pool.copy_from(p).unwrap()).collect();
                        conn.send_payload(meta, Payload::Gather { head, parts: &bufs })
                            .expect("send_payload gather");
                    }
                }
                (Placement::default(), wire)
            },
            move |conn| {
                for (i, (head, parts)) in rx.iter().enumerate() {
                    let frame = conn.recv().unwrap_or_else(|e| panic!("recv {i}: {e}"));
                    assert_eq!(frame.meta(), Meta::new(1, i as u64));
                    let mut want = head.clone();
                    for p in parts {
                        want.extend_from_slice(p);
                    }
                    assert!(frame.payload()[..] == want[..], "payload {i} differs");
                }
                assert!(matches!(conn.recv(), Err(TransportError::Closed)));
                conn.stats().recv.bytes
            },
        );
    }
}

/// The pool-resident values a test still holds are not touched by sending: after an idle
/// connection in every mode, each is referenced only by the test again.
#[test]
fn caller_buffers_are_referenced_once_again_when_idle() {
    for mode in Mode::ALL {
        within(&format!("refcounts in {mode} mode"), move || {
            let (client_pool, server_pool) = (pool(), pool());
            let (mut client, mut server) = pair(
                &client_pool,
                &Config::with_mode(mode),
                &server_pool,
                &Config::default(),
            );
            let ctx = Context::new(client_pool.clone());
            let values: Vec<SharedBuf> = (0..8)
                .map(|i| client_pool.copy_from(&vec![i as u8; 4096 + i]).unwrap())
                .collect();
            let reader = thread::spawn(move || {
                for i in 0..100 {
                    let frame = server.recv().unwrap();
                    let view = Record::decode_shared(frame.payload()).unwrap();
                    assert_eq!(view.fields().len(), i % 8 + 1);
                }
            });
            for i in 0..100 {
                let mut rec = Record::new(&ctx);
                rec.set_key(&b"k"[..]);
                for v in &values[..i % 8 + 1] {
                    rec.append_field(&v[..]);
                }
                client.send(Meta::new(0, i as u64), &rec).unwrap();
            }
            client.sender().wait_idle().unwrap();
            reader.join().unwrap();
            for v in &values {
                assert_eq!(v.ref_count(), 1, "{mode}: only the test holds its value");
            }
            assert_eq!(outstanding(&client_pool), values.len(), "{mode}");
        });
    }
}
