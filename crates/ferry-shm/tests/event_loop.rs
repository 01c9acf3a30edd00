//! What a one-thread event loop that drives many connections relies on: any frame can be
//! viewed as a Ferry message, as over TCP (a message sent contiguously with `send_payload`
//! too); a busy-polling receive (`poll_recv`) that never makes the peer ring a doorbell;
//! non-blocking sends that are refused, not queued without bound, while blocks wait for
//! credits, with the doorbell (rung by acknowledgements) to wait on. Each side's pool must
//! have every buffer back once its connection is dropped (checked by `run_pair`).
mod common;

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::{DEADLINE, limits, outstanding, pattern, run_pair};
use ferry_shm::{ShmConfig, ShmConnection, ShmFrame};
use ferry_transport::{Meta, Payload, Received, TransportError};
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Context, Message as _, Outgoing};

/// Queues a record whose key is `i` and whose one field is `value`, with the implicit id.
fn send_keyed(conn: &mut ShmConnection, i: u64, value: &[u8]) -> Result<(), TransportError> {
    let ctx = Context::new(conn.pool().clone());
    let key = i.to_le_bytes();
    let mut r = Record::new(&ctx);
    r.set_key(&key[..]);
    r.append_field(value);
    let id = conn.next_request_id();
    conn.send(Meta::new(7, id), &r)
}

/// The key of a received record, after checking that its one field is `value` and that its
/// request id is the key.
fn key_checked(frame: &ShmFrame, value: &[u8]) -> u64 {
    let view = Record::decode_at(frame.region(), frame.offset(), &limits()).expect("valid record");
    assert_eq!(view.fields().len(), 1);
    assert!(view.fields().get(0) == Some(value), "field bytes differ");
    let key = u64::from_le_bytes(view.key().try_into().expect("8-byte key"));
    assert_eq!(frame.meta().request_id, key);
    key
}

fn step(rx: &Receiver<&'static str>, expected: &str) {
    let got = rx
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|e| panic!("waiting for the other side to say {expected:?}: {e}"));
    assert_eq!(got, expected, "the sides are out of step");
}

/// A Ferry message sent as raw bytes (its header segment and zero-copy values gathered, or
/// `to_vec`'s contiguous copy) is viewed by the receiver, through `ShmFrame::view` and the
/// transport interface's `Received::view`, with its fields intact; raw bytes that are not a
/// message are a decode error.
#[test]
fn a_ferry_message_sent_as_a_payload_is_viewed() {
    let big = pattern(4096, 3);
    let expected = big.clone();
    run_pair(
        "view-payload",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let value = conn.pool().copy_from(&big).unwrap();
            let ctx = Context::new(conn.pool().clone());
            let mut r = Record::new(&ctx);
            r.set_key(&b"gathered"[..]);
            r.append_field(&value[..]);
            r.append_field(&b"small"[..]);
            let layout = r.layout();
            assert_eq!(layout.zero_copy_count, 1, "the large field is a zero-copy value");
            let mut head = vec![0u8; layout.head_len];
            r.write_head(&layout, &mut head).unwrap();
            let mut parts = Vec::new();
            r.zero_copy_bufs(&mut parts).unwrap();
            conn.send_payload(
                Meta::new(1, 0),
                Payload::Gather {
                    head: &head,
                    parts: &parts,
                },
            )
            .unwrap();
            r.set_key(&b"contiguous"[..]);
            conn.send_payload(Meta::new(2, 1), Payload::Bytes(&r.to_vec().unwrap()))
                .unwrap();
            conn.send_payload(Meta::new(3, 2), Payload::Bytes(&[0xff; 13]))
                .unwrap();
            drop(parts);
            conn.wait_idle().unwrap();
        },
        move |mut conn: ShmConnection| {
            for key in [&b"gathered"[..], b"contiguous"] {
                let f = conn.recv().unwrap();
                assert!(!f.is_message(), "sent with send_payload");
                for view in [
                    f.view(&RECORD, &limits()).unwrap(),
                    Received::view(&f, &RECORD, &limits()).unwrap(),
                ] {
                    assert_eq!(view.bytes(1), Some(key));
                    let fields = view.bytes_list(2);
                    assert_eq!(fields.len(), 2);
                    assert!(fields.get(0) == Some(&expected[..]), "the large field differs");
                    assert_eq!(fields.get(1), Some(&b"small"[..]));
                }
            }
            let f = conn.recv().unwrap();
            assert!(
                f.view(&RECORD, &limits()).is_err(),
                "13 bytes of 0xff are no record"
            );
            drop(f);
            // Acknowledge everything, then see the sender close once it is idle.
            conn.flush().unwrap();
            assert!(matches!(conn.recv(), Err(TransportError::Closed)));
        },
    );
}

/// A receiver that only busy-polls (`poll_recv`) gets every message, in order, and never
/// announces sleep, so the sender rings no doorbell (its `wakeups` stay 0), though an earlier
/// `try_recv` had armed it (the first `poll_recv` withdraws that). Few credits make the sender
/// wait for acknowledgements, which `poll_recv` publishes. Once the sender has dropped its
/// connection, `poll_recv` reports `Closed` within 64 calls (the calls that find nothing read
/// the peer's closed word once per 64).
#[test]
fn a_busy_polling_receiver_is_never_woken() {
    const N: u64 = 2000;
    let config = ShmConfig {
        credits: 4,
        block_size: 4096,
        ..ShmConfig::default()
    };
    let (to_a, from_b) = channel();
    let (to_b, from_a) = channel();
    let (a, b) = run_pair(
        "busy-poll",
        config.clone(),
        config,
        move |mut conn: ShmConnection| {
            step(&from_b, "polling");
            let value = conn.pool().copy_from(&pattern(3000, 8)).unwrap();
            for i in 0..N {
                send_keyed(&mut conn, i, &value[..]).unwrap();
                if i % 7 == 0 {
                    conn.flush().unwrap();
                }
            }
            conn.wait_idle().unwrap();
            let stats = conn.stats();
            drop(conn);
            // The receiver may have seen the close already and gone.
            let _ = to_b.send("dropped");
            stats
        },
        move |mut conn: ShmConnection| {
            assert!(conn.try_recv().unwrap().is_none(), "nothing sent yet");
            assert!(conn.poll_recv().unwrap().is_none());
            to_a.send("polling").unwrap();
            let value = pattern(3000, 8);
            let mut next = 0;
            while next < N {
                if let Some(f) = conn.poll_recv().unwrap() {
                    assert_eq!(key_checked(&f, &value), next);
                    next += 1;
                }
            }
            // Keep polling (publishing acknowledgements) until the sender is idle and gone: one of
            // the first 64 calls after it has dropped its connection fails.
            let mut since_drop = None;
            loop {
                if from_a.try_recv().is_ok() {
                    since_drop = Some(0);
                }
                match conn.poll_recv() {
                    Ok(None) => {
                        if let Some(calls) = since_drop.as_mut() {
                            *calls += 1;
                            assert!(*calls < 64, "a dropped peer not reported in 64 calls");
                        }
                    }
                    Err(TransportError::Closed) => break,
                    other => panic!("after the last message: {other:?}"),
                }
            }
            assert!(matches!(conn.poll_recv(), Err(TransportError::Poisoned)));
            conn.stats()
        },
    );
    assert_eq!(a.messages_sent, N);
    assert_eq!(b.messages_received, N);
    assert!(a.credit_waits > 0, "the sender waited for credits: {a:?}");
    assert_eq!(a.wakeups, 0, "the sender rang a receiver that only polls: {a:?}");
    assert_eq!(b.sleeps, 0, "{b:?}");
}

/// Waits (for at most `DEADLINE`) until `conn`'s doorbell rings, reading a duplicate of its
/// eventfd (non-blocking) as a poll loop would after polling it.
fn wait_doorbell(conn: &ShmConnection) {
    let bell = File::from(conn.as_fd().try_clone_to_owned().unwrap());
    let deadline = Instant::now() + DEADLINE;
    let mut count = [0u8; 8];
    loop {
        match (&bell).read(&mut count) {
            Ok(8) => return,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the doorbell never rang");
                std::thread::sleep(Duration::from_millis(1));
            }
            other => panic!("reading the doorbell: {other:?}"),
        }
    }
}

/// What a poll loop does after `WouldBlock`: publishes what returned credits allow and arms
/// the doorbell (`try_recv` returning `None`), then waits on the doorbell only if something
/// still waits for credits.
fn wait_for_credits(conn: &mut ShmConnection) {
    assert!(conn.try_recv().unwrap().is_none(), "the receiver sends nothing");
    if conn.has_unsent() {
        wait_doorbell(conn);
    }
}

/// One block per message: 1000 bytes of payload fill a 1024-byte block.
fn numbered_payload(i: u64) -> Vec<u8> {
    pattern(1000, i)
}

/// A non-blocking sender facing a receiver that does not read: once its credits are spent
/// and a block waits, `send_payload` returns `WouldBlock` with nothing taken (no request id
/// used, no buffer allocated), and so does `flush`; its pool usage stays at the blocks in
/// flight plus the one waiting. Once the receiver reads, its acknowledgement (an entry of its
/// own) rings the doorbell armed by `try_recv`, the waiting block goes out, and every message
/// taken, then the rest, arrives in order.
#[test]
fn a_nonblocking_sender_is_refused_while_blocks_wait_for_credits() {
    const CREDITS: u32 = 2;
    const N: u64 = 40;
    let config = ShmConfig {
        credits: CREDITS,
        block_size: 1024,
        ..ShmConfig::default()
    };
    let (to_b, from_a) = channel();
    let (a, b) = run_pair(
        "nonblocking",
        config.clone(),
        config,
        move |mut conn: ShmConnection| {
            conn.set_nonblocking(true);
            let pool = conn.pool().clone();
            let base = outstanding(&pool);
            let send = |conn: &mut ShmConnection, i: u64| {
                conn.send_payload(Meta::new(1, i), Payload::Bytes(&numbered_payload(i)))
            };
            let mut taken = 0;
            let e = loop {
                match send(&mut conn, taken) {
                    Ok(()) => taken += 1,
                    Err(e) => break e,
                }
                assert!(
                    taken <= u64::from(CREDITS) + 1,
                    "{taken} blocks taken with {CREDITS} credits"
                );
            };
            assert!(matches!(e, TransportError::WouldBlock), "{e:?}");
            assert_eq!(
                taken,
                u64::from(CREDITS) + 1,
                "the credits' blocks, then one waiting"
            );
            assert_eq!(conn.blocks_in_flight(), CREDITS as usize);
            assert!(conn.has_unsent());
            let used = outstanding(&pool) - base;
            assert!(
                used <= CREDITS as usize + 2,
                "{used} buffers for {taken} one-block messages"
            );
            let value = pool.copy_from(&pattern(3000, 9)).unwrap();
            for _ in 0..10 {
                assert!(matches!(send(&mut conn, taken), Err(TransportError::WouldBlock)));
                let refused = send_keyed(&mut conn, taken, &value[..]);
                assert!(matches!(refused, Err(TransportError::WouldBlock)), "{refused:?}");
                assert_eq!(value.ref_count(), 1, "a refused message holds none of its values");
                assert!(matches!(conn.flush(), Err(TransportError::WouldBlock)));
                assert!(conn.poll_recv().unwrap().is_none());
            }
            assert_eq!(
                conn.next_request_id(),
                taken,
                "refused messages use no request id"
            );
            drop(value);
            assert_eq!(outstanding(&pool) - base, used, "refused messages take no memory");
            assert_eq!(conn.stats().messages_sent, taken);
            // Arm the doorbell, then let the receiver read: its acknowledgement rings it.
            assert!(conn.try_recv().unwrap().is_none());
            to_b.send("read").unwrap();
            wait_doorbell(&conn);
            let mut i = taken;
            while i < N {
                match send(&mut conn, i) {
                    Ok(()) => i += 1,
                    Err(TransportError::WouldBlock) => wait_for_credits(&mut conn),
                    Err(e) => panic!("send {i}: {e:?}"),
                }
                assert!(outstanding(&pool) - base <= CREDITS as usize + 2);
            }
            loop {
                match conn.flush() {
                    Ok(()) => break,
                    Err(TransportError::WouldBlock) => wait_for_credits(&mut conn),
                    Err(e) => panic!("flush: {e:?}"),
                }
            }
            assert!(!conn.has_unsent());
            conn.wait_idle().unwrap();
            assert_eq!(conn.stats().credit_waits, 0, "a non-blocking sender never waits");
            conn.stats()
        },
        move |mut conn: ShmConnection| {
            step(&from_a, "read");
            for i in 0..N {
                let f = conn.recv().unwrap();
                assert_eq!(f.meta().request_id, i);
                assert!(f.bytes() == Some(&numbered_payload(i)[..]), "message {i} differs");
            }
            conn.flush().unwrap();
            assert!(matches!(conn.recv(), Err(TransportError::Closed)));
            conn.stats()
        },
    );
    assert_eq!((a.messages_sent, b.messages_received), (N, N));
    assert!(b.ack_entries_sent >= 1, "{b:?}");
    assert!(
        b.wakeups >= 1,
        "the receiver's acknowledgements woke the sender: {b:?}"
    );
}
