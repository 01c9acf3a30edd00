//! A peer process killed mid-stream: a receiver gets a clean typed error (`Truncated`, then
//! `Poisoned`), a sender gets `EPIPE`/`ECONNRESET` from `send`/`flush`, nobody panics, and
//! every pool buffer comes back. The peer is this test binary, re-executed in a role and
//! killed with `SIGKILL`.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;

use common::{ChildProc, outstanding, pair, pool, self_command, within};
use ferry_buf::SharedBuf;
use ferry_net::frame::{FrameHeader, HEADER_LEN};
use ferry_net::{Config, Connection, Meta, Mode, TransportError};
use ferry_wire::Context;
use ferry_wire::sample::Record;

const ADDR_VAR: &str = "FERRY_NET_TEST_ADDR";

/// Child side: connect, write what the role says, report, then wait to be killed (or for the
/// parent to go away: stdin closes).
fn writer_peer(role: &str) {
    let addr = std::env::var(ADDR_VAR).expect("address");
    let mut s = TcpStream::connect(addr).expect("connect");
    let header = |len: u32| {
        FrameHeader {
            meta: Meta::new(7, 70),
            len,
        }
        .to_bytes()
    };
    let mut bytes = header(10).to_vec();
    bytes.extend([1u8; 10]);
    match role {
        "header" => bytes.extend(&header(50)[..7]),
        "payload" => {
            bytes.extend(header(1000));
            bytes.extend([2u8; 500]);
        }
        "straddling" => {
            bytes.extend(header(600 << 10));
            bytes.extend(vec![3u8; 300 << 10]);
        }
        other => panic!("unknown role {other}"),
    }
    s.write_all(&bytes).expect("write");
    println!("WROTE {}", bytes.len());
    let _ = std::io::stdin().read(&mut [0; 1]);
}

/// A peer that sends one whole frame and part of the next is killed: the receiver hands up the
/// whole frame, then `Truncated { received, expected }` (header included), then `Poisoned`,
/// with every buffer back in the pool while the connection is still open. Three places to
/// die: inside a header, inside a payload, inside a payload larger than a receive buffer.
#[test]
fn receiver_sees_a_peer_killed_mid_frame() {
    if let Some(role) = common::role() {
        return writer_peer(&role);
    }
    for (role, received, expected) in [
        ("header", 7, HEADER_LEN),
        ("payload", HEADER_LEN + 500, HEADER_LEN + 1000),
        ("straddling", HEADER_LEN + (300 << 10), HEADER_LEN + (600 << 10)),
    ] {
        within(&format!("peer killed inside a {role}"), move || {
            let pool = pool();
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut cmd = self_command("receiver_sees_a_peer_killed_mid_frame", role, None);
            cmd.env(ADDR_VAR, listener.local_addr().unwrap().to_string());
            let mut child = ChildProc::spawn(&format!("peer ({role})"), cmd);
            let (stream, _) = listener.accept().unwrap();
            let mut conn = Connection::new(stream, &pool, &Config::default()).unwrap();
            // Read concurrently, so that the peer's writes complete whatever the buffer sizes.
            let reader = thread::spawn(move || {
                let first = conn.recv().expect("the whole frame");
                assert_eq!(first.meta(), Meta::new(7, 70));
                assert_eq!(&first.payload()[..], &[1u8; 10]);
                drop(first);
                let end = conn.recv();
                (conn, end)
            });
            child.expect_line("WROTE", "the peer wrote its bytes");
            child.kill();
            let (mut conn, end) = reader.join().unwrap();
            match end {
                Err(TransportError::Truncated {
                    received: r,
                    expected: e,
                }) if r == received && e == expected => {}
                other => panic!("{role}: expected Truncated {{ {received}, {expected} }}, got {other:?}"),
            }
            assert!(matches!(conn.recv(), Err(TransportError::Poisoned)));
            assert!(matches!(conn.recv(), Err(TransportError::Poisoned)));
            assert_eq!(outstanding(&pool), 0, "{role}: buffers released, connection open");
            drop(conn);
            assert_eq!(outstanding(&pool), 0);
        });
    }
}

/// Child side: connect, read 100 KiB, report, wait to be killed. It dies with unread data in
/// its receive queue, so its kernel resets the connection.
fn reader_peer() {
    let addr = std::env::var(ADDR_VAR).expect("address");
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut buf = vec![0; 100 << 10];
    s.read_exact(&mut buf).expect("read");
    println!("READ");
    let _ = std::io::stdin().read(&mut [0; 1]);
}

fn is_peer_gone(e: &TransportError) -> bool {
    match e {
        TransportError::Io { source, .. } => {
            matches!(source.raw_os_error(), Some(libc::EPIPE) | Some(libc::ECONNRESET))
        }
        _ => false,
    }
}

/// A sender streams to a peer process that stops reading and is killed: `send` (or `flush`)
/// fails with `EPIPE` or `ECONNRESET`, later calls say `Poisoned`, and the sender has let go
/// of every buffer (the application's values are referenced once again), in every mode.
#[test]
fn sender_sees_a_peer_killed_mid_stream() {
    if common::role().is_some() {
        return reader_peer();
    }
    for mode in Mode::ALL {
        within(&format!("sender, peer killed ({mode})"), move || {
            let pool = pool();
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut cmd = self_command("sender_sees_a_peer_killed_mid_stream", "reader", None);
            cmd.env(ADDR_VAR, listener.local_addr().unwrap().to_string());
            let mut child = ChildProc::spawn(&format!("reader peer ({mode})"), cmd);
            let (stream, _) = listener.accept().unwrap();
            let mut conn = Connection::new(stream, &pool, &Config::with_mode(mode)).unwrap();
            let values: Vec<SharedBuf> = (0..4)
                .map(|i| pool.copy_from(&vec![i; 64 << 10]).unwrap())
                .collect();
            let sender_pool = pool.clone();
            let sender = thread::spawn(move || {
                let ctx = Context::new(sender_pool);
                // Bounded: the peer holds at most a few MiB before it dies.
                for i in 0..4096u64 {
                    let mut rec = Record::new(&ctx);
                    rec.append_field(&values[(i % 4) as usize][..]);
                    if let Err(e) = conn.send(Meta::new(1, i), &rec) {
                        return (conn, values, e, "send");
                    }
                }
                match conn.flush() {
                    Err(e) => (conn, values, e, "flush"),
                    Ok(()) => panic!("{mode}: 256 MiB sent to a dead peer without an error"),
                }
            });
            child.expect_line("READ", "the peer read 100 KiB");
            child.kill();
            let (mut conn, values, err, op) = sender.join().unwrap();
            assert!(is_peer_gone(&err), "{mode}: {op} failed with {err:?}");
            eprintln!("{mode}: {op} failed: {err}");
            let ctx = Context::new(pool.clone());
            let rec = Record::new(&ctx);
            assert!(matches!(
                conn.send(Meta::new(1, 0), &rec),
                Err(TransportError::Poisoned)
            ));
            assert!(matches!(conn.flush(), Err(TransportError::Poisoned)));
            assert!(matches!(conn.sender().wait_idle(), Err(TransportError::Poisoned)));
            assert_eq!(conn.sender().in_flight(), 0);
            for (i, v) in values.iter().enumerate() {
                assert_eq!(
                    v.ref_count(),
                    1,
                    "{mode}: value {i} released by the failed sender"
                );
            }
            assert_eq!(outstanding(&pool), values.len(), "{mode}: only the values remain");
            drop(conn);
            drop(values);
            assert_eq!(outstanding(&pool), 0);
        });
    }
}

/// The peer resets the connection while the kernel holds zero-copy buffers that it will now
/// never send: `wait_idle` returns (with an error or not) instead of waiting for ever, and the
/// buffers come back.
fn reset_while_held(mode: Mode) {
    within(&format!("peer reset while zero-copy held ({mode})"), move || {
        let (client_pool, server_pool) = (pool(), pool());
        let (mut client, server) = pair(
            &client_pool,
            &Config::with_mode(mode),
            &server_pool,
            &Config::default(),
        );
        if client.mode() != mode {
            common::skip(
                "peer_reset_while_zero_copy_is_held",
                &format!("{mode} unavailable"),
            );
            return;
        }
        client.set_send_buffer(200 << 10).unwrap();
        let ctx = Context::new(client_pool.clone());
        let value = client_pool.copy_from(&vec![5u8; 32 << 10]).unwrap();
        client.set_nonblocking(true);
        for i in 0..6 {
            let mut rec = Record::new(&ctx);
            rec.append_field(&value[..]);
            client.send(Meta::new(1, i), &rec).unwrap();
        }
        // 192 KiB: all of it fits the send buffer, little of it the peer's window.
        client.flush().expect("the batch fits the socket buffers");
        assert!(
            client.sender().in_flight() > 0,
            "{mode}: the kernel holds unsent data"
        );
        assert!(value.ref_count() > 1);
        // Closing with unread data resets the connection.
        drop(server);
        client.set_nonblocking(false);
        let result = client.sender().wait_idle();
        eprintln!("{mode}: wait_idle after the reset: {result:?}");
        if let Err(e) = &result {
            assert!(is_peer_gone(e), "{mode}: {e:?}");
        }
        assert_eq!(client.sender().in_flight(), 0);
        assert_eq!(value.ref_count(), 1, "{mode}: the value is released");
        drop(client);
        assert_eq!(outstanding(&client_pool), 1);
        assert_eq!(outstanding(&server_pool), 0);
    });
}

/// `MSG_ZEROCOPY` flavour of [`reset_while_held`].
#[test]
fn zerocopy_peer_reset_while_buffers_are_held() {
    reset_while_held(Mode::ZeroCopy);
}

/// io_uring flavour of [`reset_while_held`].
#[test]
fn uring_peer_reset_while_buffers_are_held() {
    reset_while_held(Mode::Uring);
}
