//! The block protocol's paths between two real connections on two threads: credit exhaustion
//! and recovery, out-of-order release of received blocks, acknowledgements owed while waiting
//! for credits, request ids after a failed send, and a clean close. Each side's pool must
//! have every buffer back once its connection is dropped (checked by `run_pair`).
mod common;

use ferry_wire::Message as _;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{DEADLINE, limits, pattern, run_pair};
use ferry_buf::{PoolConfig, PoolError};
use ferry_shm::{ShmConfig, ShmConnection, ShmFrame, ShmListener};
use ferry_transport::{Meta, TransportError};
use ferry_wire::sample::Record;
use ferry_wire::{Context, HybridBytes};

/// Queues a record whose key is `i` and whose one field is `value` (zero-copy when `value`
/// is a large slice of the connection's pool).
fn send_keyed(conn: &mut ShmConnection, i: u64, value: &[u8]) {
    let ctx = Context::new(conn.pool().clone());
    let key = i.to_le_bytes();
    let mut r = Record::new(&ctx);
    r.set_key(&key[..]);
    r.append_field(value);
    let id = conn.next_request_id();
    conn.send(Meta::new(7, id), &r).expect("send");
}

/// The key of a received record, after checking that its one field is `value`.
fn key_checked(frame: &ShmFrame, value: &[u8]) -> u64 {
    let view = Record::decode_at(frame.region(), frame.offset(), &limits()).expect("valid record");
    assert_eq!(view.fields().len(), 1);
    assert!(view.fields().get(0) == Some(value), "field bytes differ");
    u64::from_le_bytes(view.key().try_into().expect("8-byte key"))
}

fn step(rx: &Receiver<&'static str>, expected: &str) {
    let got = rx
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|e| panic!("waiting for the other side to say {expected:?}: {e}"));
    assert_eq!(got, expected, "the sides are out of step");
}

/// One side's ends of the lockstep channels: it tells the other side, and hears from it.
type Ends = (Sender<&'static str>, Receiver<&'static str>);

/// Channels for two sides that take turns: (A's ends, B's ends).
fn lockstep() -> (Ends, Ends) {
    let (to_b, from_a) = channel();
    let (to_a, from_b) = channel();
    ((to_b, from_b), (to_a, from_a))
}

/// Credits 2: the sender reaches two blocks in flight and waits while the receiver holds both;
/// once the receiver drops them and polls, acknowledgements flow and the stream of one block
/// per message completes, never more than two blocks in flight.
#[test]
fn credit_exhaustion_and_recovery() {
    const N: u64 = 40;
    let config = ShmConfig {
        credits: 2,
        block_size: 1024,
        ..ShmConfig::default()
    };
    let ((to_b, from_b), (to_a, from_a)) = lockstep();
    let released = Arc::new(AtomicBool::new(false));
    let released_b = Arc::clone(&released);
    let (a, b) = run_pair(
        "credits",
        config.clone(),
        config,
        move |mut conn: ShmConnection| {
            let big = conn.pool().copy_from(&pattern(4096, 1)).unwrap();
            for i in 0..2 {
                send_keyed(&mut conn, i, &big[..]);
                conn.flush().unwrap();
            }
            assert_eq!(conn.blocks_in_flight(), 2, "two blocks, one credit each");
            assert_eq!(conn.stats().credit_waits, 0);
            assert_eq!(big.ref_count(), 3, "each in-flight block holds the value");
            to_b.send("sent 2").unwrap();
            step(&from_b, "holding 2");
            assert!(conn.try_recv().unwrap().is_none());
            assert_eq!(
                conn.blocks_in_flight(),
                2,
                "acknowledged while the receiver holds the frames"
            );
            to_b.send("flushing the third").unwrap();
            send_keyed(&mut conn, 2, &big[..]);
            conn.flush().unwrap();
            assert!(
                released.load(Ordering::SeqCst),
                "a third block was published with no credit left"
            );
            assert!(conn.stats().credit_waits >= 1, "{:?}", conn.stats());
            for i in 3..N {
                send_keyed(&mut conn, i, &big[..]);
                conn.flush().unwrap();
                assert!(
                    conn.blocks_in_flight() <= 2,
                    "{} blocks in flight",
                    conn.blocks_in_flight()
                );
            }
            conn.wait_idle().unwrap();
            assert_eq!(conn.blocks_in_flight(), 0);
            assert_eq!(big.ref_count(), 1, "every acknowledged block released the value");
            to_b.send("idle").unwrap();
            conn.stats()
        },
        move |mut conn: ShmConnection| {
            let big = pattern(4096, 1);
            step(&from_a, "sent 2");
            let f0 = conn.recv().unwrap();
            let f1 = conn.recv().unwrap();
            assert_eq!((key_checked(&f0, &big), key_checked(&f1, &big)), (0, 1));
            assert!(conn.try_recv().unwrap().is_none());
            assert_eq!(conn.stats().ack_entries_sent, 0);
            to_a.send("holding 2").unwrap();
            step(&from_a, "flushing the third");
            // The sender may be anywhere in its flush, but it has no credit: nothing arrives.
            assert!(
                conn.try_recv().unwrap().is_none(),
                "a block beyond the credits arrived"
            );
            released_b.store(true, Ordering::SeqCst);
            drop((f0, f1));
            // Hold the newest frame while waiting for the next: one block stays unacknowledged.
            let mut held = None;
            for i in 2..N {
                let f = conn.recv().unwrap();
                assert_eq!(key_checked(&f, &big), i);
                held = Some(f);
            }
            drop(held);
            conn.flush().unwrap();
            step(&from_a, "idle");
            conn.stats()
        },
    );
    assert_eq!((a.blocks_sent, b.blocks_received), (N, N));
    assert_eq!((a.messages_sent, b.messages_received), (N, N));
    assert_eq!(a.bytes_referenced, 4096 * N);
}

/// Block 1 (two messages) and block 2 arrive; the receiver drops block 2's frame first. No
/// acknowledgement may go out (block 1 is still read) until the last frame of block 1 (a
/// clone counts) is gone; then one acknowledgement covers both, and the sender's values are
/// released.
#[test]
fn out_of_order_release() {
    let ((to_b, from_b), (to_a, from_a)) = lockstep();
    run_pair(
        "out-of-order",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let v1 = conn.pool().copy_from(&pattern(2048, 1)).unwrap();
            let v2 = conn.pool().copy_from(&pattern(2048, 2)).unwrap();
            send_keyed(&mut conn, 0, &v1[..]);
            send_keyed(&mut conn, 1, &v1[..]);
            conn.flush().unwrap();
            send_keyed(&mut conn, 2, &v2[..]);
            conn.flush().unwrap();
            assert_eq!(conn.stats().blocks_sent, 2);
            let check = |conn: &mut ShmConnection, in_flight: usize, rc1: u32, rc2: u32, when: &str| {
                assert!(conn.try_recv().unwrap().is_none());
                assert_eq!(conn.blocks_in_flight(), in_flight, "blocks in flight {when}");
                assert_eq!(
                    (v1.ref_count(), v2.ref_count()),
                    (rc1, rc2),
                    "value references {when}"
                );
            };
            check(&mut conn, 2, 3, 2, "after sending");
            to_b.send("sent").unwrap();
            step(&from_b, "dropped block 2");
            check(&mut conn, 2, 3, 2, "after block 2 was released before block 1");
            to_b.send("checked").unwrap();
            step(&from_b, "dropped one frame of block 1");
            check(&mut conn, 2, 3, 2, "while block 1 still has a frame");
            to_b.send("checked").unwrap();
            step(&from_b, "dropped the original, a clone lives");
            check(&mut conn, 2, 3, 2, "while a clone of block 1's frame lives");
            to_b.send("checked").unwrap();
            step(&from_b, "released all");
            check(&mut conn, 0, 1, 1, "after both blocks were released");
            to_b.send("done").unwrap();
        },
        move |mut conn: ShmConnection| {
            step(&from_a, "sent");
            let f0 = conn.recv().unwrap();
            let f1 = conn.recv().unwrap();
            let f2 = conn.recv().unwrap();
            assert_eq!(key_checked(&f0, &pattern(2048, 1)), 0);
            assert_eq!(key_checked(&f1, &pattern(2048, 1)), 1);
            assert_eq!(key_checked(&f2, &pattern(2048, 2)), 2);
            assert_eq!(conn.stats().blocks_received, 2);
            let polled = |conn: &mut ShmConnection, acks: u64| {
                assert!(conn.try_recv().unwrap().is_none());
                assert_eq!(conn.stats().ack_entries_sent, acks);
            };
            drop(f2);
            polled(&mut conn, 0);
            to_a.send("dropped block 2").unwrap();
            step(&from_a, "checked");
            drop(f0);
            polled(&mut conn, 0);
            to_a.send("dropped one frame of block 1").unwrap();
            step(&from_a, "checked");
            let clone = f1.clone();
            drop(f1);
            assert_eq!(key_checked(&clone, &pattern(2048, 1)), 1);
            polled(&mut conn, 0);
            to_a.send("dropped the original, a clone lives").unwrap();
            step(&from_a, "checked");
            drop(clone);
            polled(&mut conn, 1);
            to_a.send("released all").unwrap();
            step(&from_a, "done");
        },
    );
}

/// Both sides use up their credits, then receive and drop everything the other sent, then
/// send once more. Each owes the other acknowledgements, which cost no credit (an
/// acknowledgement-only ring entry): a side waiting for credits must publish them, or both
/// wait for ever.
#[test]
fn credit_wait_publishes_owed_acks() {
    let config = ShmConfig {
        credits: 2,
        block_size: 1024,
        ..ShmConfig::default()
    };
    let barrier = Arc::new(Barrier::new(2));
    let side = |barrier: Arc<Barrier>| {
        move |mut conn: ShmConnection| {
            let small = [5u8; 16];
            for i in 0..2 {
                send_keyed(&mut conn, i, &small);
                conn.flush().unwrap();
            }
            assert_eq!(conn.blocks_in_flight(), 2);
            // Both sides' blocks are published: each first recv takes both at once.
            barrier.wait();
            for i in 0..2 {
                let f = conn.recv().unwrap();
                assert_eq!(key_checked(&f, &small), i);
            }
            barrier.wait();
            send_keyed(&mut conn, 2, &small);
            conn.flush().unwrap();
            let f = conn.recv().unwrap();
            assert_eq!(key_checked(&f, &small), 2);
            drop(f);
            conn.flush().unwrap();
            barrier.wait();
        }
    };
    run_pair(
        "owed-acks",
        config.clone(),
        config,
        side(Arc::clone(&barrier)),
        side(barrier),
    );
}

/// A send that fails (a value outside the pool that is too large to copy in) must not
/// consume a request id: the next message, sent with `next_request_id()`, arrives with that
/// id.
#[test]
fn failed_send_keeps_request_ids_in_step() {
    let (to_b, from_a) = channel::<u64>();
    run_pair(
        "failed-send-id",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let (big, other) = too_large_elsewhere(&conn);
            let octx = Context::new(other.clone());
            let mut r = Record::new(&octx);
            r.append_field(&big[..]);
            assert!(r.fields()[0].is_zero_copy());
            let id = conn.next_request_id();
            let e = conn.send(Meta::new(1, id), &r).unwrap_err();
            assert!(
                matches!(e, TransportError::Pool(PoolError::TooLarge { .. })),
                "{e:?}"
            );
            let id = conn.next_request_id();
            send_ok(&mut conn, Meta::new(2, id));
            conn.flush().unwrap();
            to_b.send(id).unwrap();
        },
        move |mut conn: ShmConnection| {
            let f = conn.recv().unwrap();
            let sent = from_a.recv_timeout(DEADLINE).unwrap();
            assert_eq!(f.meta().kind, 2, "only the good message arrives");
            assert_eq!(
                f.meta().request_id,
                sent,
                "the receiver's implicit request id differs from the sender's"
            );
        },
    );
}

/// A send that fails part-way (its first value referenced, its second too large to copy in)
/// must not keep a reference to the first value: nothing of the failed message is sent.
#[test]
fn failed_send_releases_its_values() {
    run_pair(
        "failed-send-refs",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let (big, other) = too_large_elsewhere(&conn);
            let octx = Context::new(other.clone());
            let ctx = Context::new(conn.pool().clone());
            let v = conn.pool().copy_from(&pattern(4096, 3)).unwrap();
            let mut r = Record::new(&ctx);
            r.append_field(&v[..]);
            r.fields_mut().push(HybridBytes::new(&big[..], &octx));
            assert!(r.fields().iter().all(HybridBytes::is_zero_copy));
            assert!(conn.send(Meta::new(1, 0), &r).is_err());
            drop(r);
            assert_eq!(
                v.ref_count(),
                1,
                "the failed send still holds a reference to its first value"
            );
            conn.flush().unwrap();
        },
        move |mut conn: ShmConnection| {
            let e = conn.recv().expect_err("nothing of the failed message arrives");
            assert!(matches!(e, TransportError::Closed), "{e:?}");
        },
    );
}

/// A 2 MiB value in a private pool with 4 MiB regions: larger than the connection pool's
/// largest buffer (2 MiB regions hold at most 2 MiB, and the transport copies whole values).
fn too_large_elsewhere(conn: &ShmConnection) -> (ferry_buf::SharedBuf, ferry_buf::Pool) {
    let other = ferry_buf::Pool::new(PoolConfig {
        region_size: 4 << 20,
        max_bytes: 8 << 20,
        huge_pages: false,
        mlock: false,
        shared: false,
    })
    .unwrap();
    let len = conn.pool().max_class() + 1;
    let big = other.copy_from(&vec![9u8; len]).unwrap();
    (big, other)
}

fn send_ok(conn: &mut ShmConnection, meta: Meta) {
    let ctx = Context::new(conn.pool().clone());
    let mut r = Record::new(&ctx);
    r.set_key(&b"ok"[..]);
    conn.send(meta, &r).unwrap();
}

/// The sender flushes three messages, queues two more and drops its connection: the receiver
/// gets the three flushed ones (readable after the sender is gone), then `Closed`, then
/// `Poisoned`; the unflushed two are discarded (as a TCP connection's queued frames are), and
/// the closed connection holds no reference to the sender's value.
#[test]
fn close_after_flush_delivers_then_closed() {
    const FLUSHED: u64 = 3;
    let (to_b, from_a) = channel::<()>();
    run_pair(
        "close",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let v = conn.pool().copy_from(&pattern(1500, 4)).unwrap();
            for i in 0..FLUSHED {
                send_keyed(&mut conn, i, &v[..]);
            }
            conn.flush().unwrap();
            send_keyed(&mut conn, FLUSHED, &v[..]);
            send_keyed(&mut conn, FLUSHED + 1, &v[..]);
            drop(conn);
            assert_eq!(v.ref_count(), 1, "the closed connection released the value");
            to_b.send(()).unwrap();
        },
        move |mut conn: ShmConnection| {
            from_a.recv_timeout(DEADLINE).unwrap();
            let mut frames = VecDeque::new();
            for i in 0..FLUSHED {
                let f = conn.recv().unwrap();
                assert_eq!(key_checked(&f, &pattern(1500, 4)), i);
                frames.push_back(f);
            }
            let e = conn.recv().unwrap_err();
            assert!(matches!(e, TransportError::Closed), "{e:?}");
            assert!(matches!(conn.recv().unwrap_err(), TransportError::Poisoned));
            for (i, f) in frames.iter().enumerate() {
                assert_eq!(key_checked(f, &pattern(1500, 4)), i as u64);
            }
        },
    );
}

/// Frames outlive their connection: the receiver drops its connection first and still reads
/// the frame (the peer's memory stays mapped until the last frame goes).
#[test]
fn frames_outlive_the_connection() {
    let (to_b, from_a) = channel::<()>();
    let (to_a, from_b) = channel::<()>();
    run_pair(
        "outlive",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let v = conn.pool().copy_from(&pattern(3000, 5)).unwrap();
            send_keyed(&mut conn, 0, &v[..]);
            conn.flush().unwrap();
            to_b.send(()).unwrap();
            from_b.recv_timeout(DEADLINE).unwrap();
        },
        move |mut conn: ShmConnection| {
            from_a.recv_timeout(DEADLINE).unwrap();
            let f = conn.recv().unwrap();
            drop(conn);
            assert_eq!(key_checked(&f, &pattern(3000, 5)), 0);
            drop(f);
            to_a.send(()).unwrap();
        },
    );
}

/// Replies in another order than the requests (what an RPC server with background handlers
/// sends): the ids the server gives its replies arrive as given, whether they match the
/// implicit count (and are not written) or not (and are written out). Requests are sent with
/// the implicit id, replies in a seeded random order, some in batches.
#[test]
fn request_ids_survive_out_of_order_replies() {
    const N: u64 = 300;
    let path = common::socket_path("reorder");
    let listener = ShmListener::bind(&path).unwrap();
    let seed = common::seed(7);
    let server = common::spawn("server", move || {
        let pool = common::shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        let ctx = Context::new(pool.clone());
        let mut pending: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut rng = seed;
        let mut received = 0;
        while received < N || !pending.is_empty() {
            if received < N {
                let f = conn.recv().unwrap();
                let view = Record::decode_at(f.region(), f.offset(), &common::limits()).unwrap();
                pending.push((f.meta().request_id, view.key().to_vec()));
                received += 1;
            }
            // Answer a random pending request now and then, more as the requests run out.
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if !pending.is_empty() && (received == N || rng >> 62 == 0) {
                let (id, key) = pending.swap_remove((rng >> 33) as usize % pending.len());
                let mut reply = Record::new(&ctx);
                reply.set_key(&key[..]);
                conn.send(Meta::new(2, id), &reply).unwrap();
                conn.flush().unwrap();
            }
        }
        conn.wait_idle().unwrap();
        conn.stats()
    });
    let pool = common::shared_pool();
    let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    let ctx = Context::new(pool.clone());
    for i in 0..N {
        let mut rec = Record::new(&ctx);
        rec.set_key(i.to_le_bytes().to_vec());
        assert_eq!(conn.next_request_id(), i);
        conn.send(Meta::new(1, i), &rec).unwrap();
    }
    conn.flush().unwrap();
    let mut seen = vec![false; N as usize];
    let mut in_order = 0;
    for k in 0..N {
        let f = conn.recv().unwrap();
        let id = f.meta().request_id;
        let view = Record::decode_at(f.region(), f.offset(), &common::limits()).unwrap();
        assert_eq!(
            view.key(),
            &id.to_le_bytes()[..],
            "reply {k} carries the id of its request"
        );
        assert!(!std::mem::replace(&mut seen[id as usize], true), "id {id} twice");
        in_order += u64::from(id == k);
    }
    // Acknowledge the last replies: the server waits for them before it returns.
    conn.flush().unwrap();
    let stats = server.join();
    assert!(in_order < N, "the replies were reordered (seed {seed})");
    assert_eq!(stats.messages_sent, N);
}

/// `never_sleep` is a promise about one side: the side that declared it busy-polls (it never
/// sleeps) and is published to without the fence, while its
/// peer, which sleeps at once (`spin: ZERO`), must still be woken by every publication: the
/// declaring side keeps the sleep handshake towards it. Had it skipped the fence towards a
/// sleeper, the sleeper would have waited out its poll timeouts with no wake-up rung.
#[test]
fn never_sleep_is_one_sided() {
    const N: u64 = 200;
    let busy = ShmConfig {
        never_sleep: true,
        ..ShmConfig::default()
    };
    let sleepy = ShmConfig {
        spin: Duration::ZERO,
        ..ShmConfig::default()
    };
    let value = pattern(16, 3);
    let value_b = value.clone();
    let (a, b) = run_pair(
        "never-sleep",
        busy,
        sleepy,
        move |mut conn: ShmConnection| {
            for i in 0..N {
                send_keyed(&mut conn, i, &value);
                conn.flush().unwrap();
                let f = conn.recv().unwrap();
                assert_eq!(key_checked(&f, &value), i);
            }
            conn.wait_idle().unwrap();
            conn.stats()
        },
        move |mut conn: ShmConnection| {
            for i in 0..N {
                let f = conn.recv().unwrap();
                assert_eq!(key_checked(&f, &value_b), i);
                drop(f);
                send_keyed(&mut conn, i, &value_b);
                conn.flush().unwrap();
            }
            conn.wait_idle().unwrap();
            conn.stats()
        },
    );
    assert_eq!(a.sleeps, 0, "the side that never sleeps slept: {a:?}");
    assert!(
        b.sleeps > 0 && a.wakeups > 0,
        "the sleeper was never woken: {a:?} {b:?}"
    );
    assert_eq!(b.wakeups, 0, "a peer that never sleeps was rung: {b:?}");
}
