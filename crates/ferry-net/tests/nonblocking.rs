//! The non-blocking API: one thread drives a sender and a receiver with `poll(2)` readiness
//! and the `WouldBlock` contract (a `send` that returns `WouldBlock` did not queue its frame;
//! `flush` and `recv` keep their progress), in every mode, with a small zero-copy in-flight
//! bound; frames arrive in order and intact.

mod common;

use common::{outstanding, pair, poll, pollfd, pool, within};
use ferry_buf::SharedBuf;
use ferry_net::{Config, Mode, TransportError};
use ferry_wire::Context;
use ferry_wire::Message as _;
use ferry_wire::sample::Record;

const N: u64 = 300;

fn drive(mode: Mode) {
    within(&format!("non-blocking loop ({mode})"), move || {
        let (client_pool, server_pool) = (pool(), pool());
        let config = Config {
            batch_bytes: 64 << 10,
            // Small: the sender must wait for completions, without blocking, now and then.
            max_in_flight: 128 << 10,
            ..Config::with_mode(mode)
        };
        let (mut client, mut server) = pair(&client_pool, &config, &server_pool, &Config::default());
        client.set_nonblocking(true);
        server.set_nonblocking(true);
        let ctx = Context::new(client_pool.clone());
        let values: Vec<SharedBuf> = (0..4u8)
            .map(|i| client_pool.copy_from(&vec![i + 1; 20_000 + i as usize]).unwrap())
            .collect();
        let fields = |i: u64| &values[..(i % 4) as usize + 1];
        let (mut next, mut received) = (0u64, 0u64);
        let (mut send_blocked, mut recv_blocked) = (0u64, 0u64);
        while received < N {
            while next < N {
                let key = next.to_le_bytes();
                let mut rec = Record::new(&ctx);
                rec.set_key(&key[..]);
                for v in fields(next) {
                    rec.append_field(&v[..]);
                }
                match client.send(ferry_net::Meta::new(4, next), &rec) {
                    Ok(()) => next += 1,
                    Err(TransportError::WouldBlock) => {
                        send_blocked += 1;
                        break;
                    }
                    Err(e) => panic!("send {next}: {e}"),
                }
            }
            if next == N {
                match client.flush() {
                    Ok(()) => {}
                    Err(TransportError::WouldBlock) => send_blocked += 1,
                    Err(e) => panic!("flush: {e}"),
                }
            }
            loop {
                match server.try_recv() {
                    Ok(Some(frame)) => {
                        assert_eq!(frame.meta().request_id, received, "in order");
                        let view = Record::decode_shared(frame.payload()).unwrap();
                        assert_eq!(view.key(), &received.to_le_bytes()[..]);
                        let want = fields(received);
                        assert_eq!(view.fields().len(), want.len());
                        for (got, want) in view.fields().iter().zip(want) {
                            assert!(got == &want[..], "frame {received}: a field differs");
                        }
                        received += 1;
                    }
                    Ok(None) => {
                        recv_blocked += 1;
                        break;
                    }
                    Err(e) => panic!("recv {received}: {e}"),
                }
            }
            if received < N {
                let wants_out = next < N || client.sender().has_pending();
                let mut fds = [
                    pollfd(&client, if wants_out { libc::POLLOUT } else { 0 }),
                    pollfd(&server, libc::POLLIN),
                ];
                poll(&mut fds);
                if fds[0].revents & libc::POLLERR != 0 {
                    client.sender().poll_completions().unwrap();
                }
            }
        }
        // Every frame is in; collect the remaining completions without blocking where the
        // socket signals them (`POLLERR`). io_uring notifications have no descriptor to poll
        // here, so that mode finishes with a blocking `wait_idle`.
        if client.mode() == Mode::Uring {
            client.set_nonblocking(false);
            client.sender().wait_idle().unwrap();
        } else {
            loop {
                client.sender().poll_completions().unwrap();
                if client.sender().in_flight() == 0 {
                    break;
                }
                let mut fds = [pollfd(&client, 0)];
                poll(&mut fds);
            }
        }
        let stats = client.stats().send;
        eprintln!("{mode}: send WouldBlock {send_blocked}, recv WouldBlock {recv_blocked}: {stats:?}");
        assert!(send_blocked > 0, "{mode}: the sender met a full socket");
        assert!(recv_blocked > 0, "{mode}: the receiver met an empty socket");
        for v in &values {
            assert_eq!(v.ref_count(), 1, "{mode}");
        }
        drop((client, server));
        assert_eq!(outstanding(&client_pool), values.len());
        assert_eq!(outstanding(&server_pool), 0);
    });
}

#[test]
fn nonblocking_copy() {
    drive(Mode::Copy);
}

#[test]
fn nonblocking_gather() {
    drive(Mode::Gather);
}

#[test]
fn nonblocking_zerocopy() {
    drive(Mode::ZeroCopy);
}

/// Regression candidate: with io_uring, waiting for completions in non-blocking mode must
/// return `WouldBlock`, not spin inside `flush` until a notification arrives (which, with the
/// peer driven by the same thread, never happens).
#[test]
fn nonblocking_uring() {
    drive(Mode::Uring);
}

#[test]
fn nonblocking_auto() {
    drive(Mode::Auto);
}

/// Backpressure: while the peer reads nothing, a non-blocking sender accepts frames until its
/// batches are at their caps (`batch_frames`: one batch filling, one being written), then
/// says `WouldBlock`. Frames must not pile up past the caps while `send` keeps returning `Ok`.
/// Here the socket is first filled (a batch stuck half written), then a frame that copies
/// 30 KiB opens the next batch, so that its staging buffer has room for far more frame
/// headers than a batch holds, then gather frames (32 KiB values referenced, 100-byte heads).
#[test]
fn nonblocking_send_stops_at_the_batch_caps() {
    within("nonblocking_send_stops_at_the_batch_caps", || {
        let (client_pool, server_pool) = (pool(), pool());
        let config = Config {
            batch_frames: 8,
            ..Config::with_mode(Mode::Gather)
        };
        let (mut client, server) = pair(&client_pool, &config, &server_pool, &Config::default());
        client.set_nonblocking(true);
        let ctx = Context::new(client_pool.clone());
        let mut values = Vec::new();
        let mut id = 0u64;
        let mut send_value = |client: &mut ferry_net::Connection, values: &mut Vec<SharedBuf>| {
            let value = client_pool.copy_from(&vec![id as u8; 32 << 10]).unwrap();
            let mut rec = Record::new(&ctx);
            rec.append_field(&value[..]);
            let sent = client.send(ferry_net::Meta::new(1, id), &rec);
            drop(rec);
            values.push(value);
            id += 1;
            sent
        };
        // Fill the socket: one frame per batch until a flush cannot finish.
        let mut filled = false;
        for _ in 0..10_000 {
            send_value(&mut client, &mut values).unwrap();
            if let Err(TransportError::WouldBlock) = client.flush() {
                filled = true;
                break;
            }
        }
        assert!(filled, "the socket buffers never filled");
        let big_key = vec![7u8; 30 << 10];
        let mut first = Record::new(&ctx);
        first.set_key(&big_key[..]);
        client.send(ferry_net::Meta::new(0, 0), &first).unwrap();
        let mut accepted = 1;
        for _ in 0..1000 {
            match send_value(&mut client, &mut values) {
                Ok(()) => accepted += 1,
                Err(TransportError::WouldBlock) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        let queued = values.iter().filter(|v| v.ref_count() > 1).count();
        eprintln!("accepted {accepted} more frames once the socket was full; {queued} queued");
        // One filling and one writing batch of `batch_frames`, give or take the frame that
        // fills a batch.
        assert!(
            queued <= 2 * (config.batch_frames + 1),
            "{queued} frames of 32 KiB queued in user space while the peer reads nothing: more \
             than two batches of {}",
            config.batch_frames
        );
        drop((client, server));
        drop(values);
        assert_eq!(outstanding(&client_pool), 0);
        assert_eq!(outstanding(&server_pool), 0);
    });
}

/// A connection with nothing to read holds no read buffer: each `try_recv` that finds the
/// socket empty gives back the buffer it took (the regression: every connection kept a
/// 256 KiB read buffer from its first read, 512 MiB for 2,000 idle connections).
#[test]
fn an_idle_connection_holds_no_read_buffer() {
    within("idle connection", || {
        let (client_pool, server_pool) = (pool(), pool());
        let (mut client, mut server) =
            pair(&client_pool, &Config::default(), &server_pool, &Config::default());
        server.set_nonblocking(true);
        for _ in 0..3 {
            assert!(matches!(server.try_recv(), Ok(None)), "nothing was sent");
            assert_eq!(outstanding(&server_pool), 0, "an empty read kept its buffer");
        }
        let ctx = Context::new(client_pool.clone());
        let mut rec = Record::new(&ctx);
        rec.set_key(&b"k"[..]);
        client.send(ferry_net::Meta::new(1, 1), &rec).unwrap();
        client.flush().unwrap();
        let frame = recv_waiting(&mut server);
        assert_eq!(frame.meta(), ferry_net::Meta::new(1, 1));
        drop(frame);
        assert!(matches!(server.try_recv(), Ok(None)), "one frame was sent");
        assert_eq!(
            outstanding(&server_pool),
            0,
            "idle again, the connection holds no buffer"
        );
    });
}

/// A `readv` that fills less than its targets empties the socket, so the look for the next
/// frame that follows a frame answers "nothing yet" without another `readv` (the regression:
/// every frame cost one more `readv` that found `EAGAIN`, 0.6 per call and side in `ferry
/// bench rpc` at one call in flight). Counted, frame by frame: the server reads each frame,
/// asks once more and gets `None` with no empty read; a look while the socket is empty still
/// asks the kernel.
#[test]
fn the_look_after_a_short_read_makes_no_system_call() {
    within("short read", || {
        let (client_pool, server_pool) = (pool(), pool());
        let (mut client, mut server) =
            pair(&client_pool, &Config::default(), &server_pool, &Config::default());
        server.set_nonblocking(true);
        let ctx = Context::new(client_pool.clone());
        const FRAMES: u64 = 20;
        for n in 0..FRAMES {
            let mut rec = Record::new(&ctx);
            rec.set_key(&b"k"[..]);
            client.send(ferry_net::Meta::new(1, n), &rec).unwrap();
            client.flush().unwrap();
            let frame = recv_waiting(&mut server);
            assert_eq!(frame.meta(), ferry_net::Meta::new(1, n));
            assert!(matches!(server.try_recv(), Ok(None)), "one frame was sent");
        }
        let counters = server.stats().recv;
        assert_eq!(counters.frames, FRAMES);
        assert_eq!(
            counters.empty_reads, 0,
            "a look after a short read asked the kernel ({counters:?})"
        );
        assert!(matches!(server.try_recv(), Ok(None)));
        assert_eq!(
            server.stats().recv.empty_reads,
            1,
            "the look after a look that found nothing reads the socket"
        );
    });
}

/// The next frame of a non-blocking connection, waiting in `poll(2)` while none has come.
fn recv_waiting(server: &mut ferry_net::Connection) -> ferry_net::Frame {
    loop {
        match server.try_recv() {
            Ok(Some(frame)) => return frame,
            Ok(None) => {
                poll(&mut [pollfd(server, libc::POLLIN)]);
            }
            Err(e) => panic!("recv: {e}"),
        }
    }
}
