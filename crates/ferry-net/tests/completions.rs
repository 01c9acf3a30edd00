//! Zero-copy buffers (zerocopy and uring modes) stay referenced until the kernel's completion
//! says it no longer reads them, and are released, to the pool's baseline, once it does.

mod common;

use ferry_wire::Message as _;
use std::thread;

use common::{outstanding, pair, pool, within};
use ferry_buf::SharedBuf;
use ferry_net::{Config, Connection, Meta, Mode, TransportError};
use ferry_wire::Context;
use ferry_wire::sample::Record;

const VALUE: usize = 32 << 10;
const MESSAGES: usize = 8;

/// A pair for `mode`, or `None` (with a loud SKIPPED) if the kernel lacks the feature.
fn zc_pair(
    mode: Mode,
    test: &str,
    config: Config,
) -> Option<(ferry_buf::Pool, ferry_buf::Pool, Connection, Connection)> {
    let (client_pool, server_pool) = (pool(), pool());
    let (client, server) = pair(&client_pool, &config, &server_pool, &Config::default());
    if client.mode() != mode {
        common::skip(
            test,
            &format!("{mode} mode unavailable here (fell back to {})", client.mode()),
        );
        return None;
    }
    Some((client_pool, server_pool, client, server))
}

fn held_until_completion(mode: Mode) {
    let test = "zero_copy_buffers_are_held_until_their_completion";
    within(&format!("{test} ({mode})"), move || {
        let config = Config {
            batch_bytes: 64 << 10,
            ..Config::with_mode(mode)
        };
        let Some((client_pool, server_pool, mut client, mut server)) = zc_pair(mode, test, config) else {
            return;
        };
        // Room in the send queue for what the peer's window does not take.
        client.set_send_buffer(200 << 10).unwrap();
        let ctx = Context::new(client_pool.clone());
        let values: Vec<SharedBuf> = (0..MESSAGES)
            .map(|i| client_pool.copy_from(&vec![i as u8 + 1; VALUE]).unwrap())
            .collect();
        let baseline = outstanding(&client_pool);
        assert_eq!(baseline, MESSAGES);
        client.set_nonblocking(true);
        for (i, v) in values.iter().enumerate() {
            let mut rec = Record::new(&ctx);
            rec.set_key(&b"held"[..]);
            rec.append_field(&v[..]);
            match client.send(Meta::new(1, i as u64), &rec) {
                Ok(()) => {}
                // The peer reads nothing yet: the frame was not queued.
                Err(TransportError::WouldBlock) => panic!(
                    "message {i}: two batches of {} bytes should fit the socket buffers",
                    64 << 10
                ),
                Err(e) => panic!("send {i}: {e}"),
            }
        }
        match client.flush() {
            Ok(()) | Err(TransportError::WouldBlock) => {}
            Err(e) => panic!("flush: {e}"),
        }
        // The peer has read nothing: what does not fit its window sits in our send queue, in
        // the values' own pages, and no completion can cover it.
        client.sender().poll_completions().unwrap();
        let in_flight = client.sender().in_flight();
        assert!(in_flight > 0, "{mode}: written batches are held for the kernel");
        let held = values.iter().filter(|v| v.ref_count() > 1).count();
        assert!(
            held > 0,
            "{mode}: the values the kernel has not sent are still referenced"
        );
        for (i, v) in values.iter().enumerate().rev().take(4) {
            assert!(
                v.ref_count() > 1,
                "{mode}: value {i} (at the unsent tail) is referenced by the sender"
            );
        }
        eprintln!("{mode}: {in_flight} bytes held, {held} of {MESSAGES} values referenced");

        // Now the peer drains, and the sender waits for its completions.
        let reader = thread::spawn(move || {
            for i in 0..MESSAGES {
                let frame = server.recv().unwrap();
                let view = Record::decode_shared(frame.payload()).unwrap();
                let field = view.fields().get(0).unwrap();
                assert!(field.iter().all(|&b| b == i as u8 + 1), "value {i} intact");
            }
            drop(server);
            assert_eq!(outstanding(&server_pool), 0);
        });
        client.set_nonblocking(false);
        client.sender().wait_idle().expect("wait_idle");
        reader.join().unwrap();
        assert_eq!(client.sender().in_flight(), 0);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(v.ref_count(), 1, "{mode}: value {i} released by the sender");
        }
        assert_eq!(
            outstanding(&client_pool),
            baseline,
            "{mode}: pool back to baseline"
        );
        let stats = client.stats().send;
        eprintln!("{mode}: {stats:?}");
        assert!(stats.completions.completed > 0);
        // On loopback the kernel copies on delivery: every completion says so.
        assert_eq!(
            stats.completions.copied, stats.completions.completed,
            "{mode}: loopback completions are all flagged copied: {stats:?}"
        );
        drop(client);
        assert_eq!(outstanding(&client_pool), baseline);
    });
}

/// `MSG_ZEROCOPY`: buffers held until the error-queue completion.
#[test]
fn zerocopy_buffers_are_held_until_their_completion() {
    held_until_completion(Mode::ZeroCopy);
}

/// io_uring `SENDMSG_ZC`: buffers held until the notification CQE.
#[test]
fn uring_buffers_are_held_until_their_completion() {
    held_until_completion(Mode::Uring);
}

/// Many one-frame batches, each completing quickly: a completion that the sender sees before
/// it has put the written batch on its hold list (io_uring posts the notification next to the
/// send's result) must still release that batch. Otherwise `wait_idle` waits for ever.
fn completed_before_held(mode: Mode) {
    let test = "a_batch_completed_before_it_is_held_is_released";
    within(&format!("{test} ({mode})"), move || {
        let config = Config {
            batch_frames: 1,
            ..Config::with_mode(mode)
        };
        let Some((client_pool, server_pool, mut client, mut server)) = zc_pair(mode, test, config) else {
            return;
        };
        const N: u64 = 300;
        let reader = thread::spawn(move || {
            for i in 0..N {
                let frame = server.recv().unwrap();
                assert_eq!(frame.meta().request_id, i);
            }
            drop(server);
            assert_eq!(outstanding(&server_pool), 0);
        });
        let ctx = Context::new(client_pool.clone());
        let value = client_pool.copy_from(&[9u8; 2048]).unwrap();
        for i in 0..N {
            let mut rec = Record::new(&ctx);
            rec.append_field(&value[..]);
            client.send(Meta::new(2, i), &rec).unwrap();
            // Must return once the peer has the data, however the completion arrived.
            client.sender().wait_idle().unwrap();
        }
        client.sender().wait_idle().unwrap();
        reader.join().unwrap();
        assert_eq!(value.ref_count(), 1);
        eprintln!("{mode}: {:?}", client.stats().send);
    });
}

/// `MSG_ZEROCOPY` flavour of [`completed_before_held`].
#[test]
fn zerocopy_batch_completed_before_it_is_held_is_released() {
    completed_before_held(Mode::ZeroCopy);
}

/// io_uring flavour of [`completed_before_held`]: the notification CQE often arrives in the
/// same `io_uring_enter` as the send's result.
#[test]
fn uring_batch_completed_before_it_is_held_is_released() {
    completed_before_held(Mode::Uring);
}

/// Dropping a connection while the kernel still holds zero-copy buffers must not hand their
/// memory back to the pool: the kernel sends the queued data after `close`, from those pages.
/// Reusing and overwriting the slots must not change what the peer receives.
fn drop_in_flight(mode: Mode) {
    let test = "dropping_a_connection_with_zero_copy_in_flight_keeps_its_bytes";
    within(&format!("{test} ({mode})"), move || {
        let config = Config {
            batch_bytes: 64 << 10,
            ..Config::with_mode(mode)
        };
        let Some((client_pool, server_pool, mut client, mut server)) = zc_pair(mode, test, config) else {
            return;
        };
        client.set_send_buffer(200 << 10).unwrap();
        let ctx = Context::new(client_pool.clone());
        client.set_nonblocking(true);
        for i in 0..MESSAGES {
            // The message owns the value: once the sender lets go, the slot is free.
            let value = client_pool.copy_from(&vec![i as u8 + 1; VALUE]).unwrap();
            let mut rec = Record::new(&ctx);
            rec.append_field(value);
            client.send(Meta::new(3, i as u64), &rec).unwrap();
        }
        let _ = client.flush();
        assert!(client.sender().in_flight() > 0, "the kernel holds unsent data");
        drop(client);
        // Take the freed slots back and scribble on them.
        let scribbles: Vec<_> = (0..4 * MESSAGES)
            .map(|_| {
                let mut b = client_pool.alloc(VALUE).unwrap();
                b.extend_from_slice(&[0xee; VALUE]);
                b
            })
            .collect();
        let mut received = 0;
        loop {
            match server.recv() {
                Ok(frame) => {
                    let i = frame.meta().request_id as usize;
                    assert_eq!(i, received);
                    let view = Record::decode_shared(frame.payload()).unwrap();
                    let field = view.fields().get(0).unwrap();
                    let wrong = field.iter().filter(|&&b| b != i as u8 + 1).count();
                    assert_eq!(
                        wrong, 0,
                        "{mode}: frame {i} arrived with {wrong} of {VALUE} bytes overwritten \
                         after the connection was dropped: the pool reused buffers the kernel \
                         was still sending from"
                    );
                    received += 1;
                }
                Err(TransportError::Closed | TransportError::Truncated { .. }) => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        eprintln!("{mode}: {received} frames arrived intact after the drop");
        assert!(received > 0);
        drop(scribbles);
        drop(server);
        assert_eq!(outstanding(&server_pool), 0);
    });
}

/// `MSG_ZEROCOPY` flavour of [`drop_in_flight`].
#[test]
fn zerocopy_drop_with_data_in_flight_keeps_its_bytes() {
    drop_in_flight(Mode::ZeroCopy);
}

/// io_uring flavour of [`drop_in_flight`].
#[test]
fn uring_drop_with_data_in_flight_keeps_its_bytes() {
    drop_in_flight(Mode::Uring);
}
