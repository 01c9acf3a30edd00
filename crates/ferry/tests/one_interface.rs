//! One generic echo client and server, written against `ferry_transport::Transport`, run unchanged
//! over TCP (`ferry_net::Connection`) and shared memory (`ShmConnection`).

use std::net::TcpListener;
use std::thread;

use ferry::sample::{RECORD, Record};
use ferry_buf::Pool;
use ferry_net::{Config, Connection};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_testkit::shared_pool;
use ferry_transport::{Meta, Received, Transport};
use ferry_wire::{Context, Limits};

const ROUNDS: u64 = 200;

fn limits() -> Limits {
    Limits {
        max_message_len: 1 << 30,
        ..Limits::default()
    }
}

/// Answers each record with the same key and its number of fields.
fn serve<T: Transport>(conn: &mut T, pool: &Pool) {
    let ctx = Context::new(pool.clone());
    for _ in 0..ROUNDS {
        let frame = conn.recv().unwrap();
        let request = frame.view(&RECORD, &limits()).unwrap();
        let fields = [request.bytes_list(2).len() as u8];
        let mut reply = Record::new(&ctx);
        reply.set_key(&fields[..]);
        conn.send(frame.meta(), &reply).unwrap();
        drop(frame);
        conn.flush().unwrap();
    }
}

/// Sends records with a large pool-resident field and checks every answer.
fn call<T: Transport>(conn: &mut T, pool: &Pool) {
    let ctx = Context::new(pool.clone());
    let value = pool.copy_from(&[3u8; 8192]).unwrap();
    for i in 0..ROUNDS {
        let mut rec = Record::new(&ctx);
        rec.set_key(&b"key"[..]);
        for _ in 0..(i % 3) {
            rec.append_field(&value[..]);
        }
        conn.send(Meta::new(5, i), &rec).unwrap();
        conn.flush().unwrap();
        let frame = conn.recv().unwrap();
        assert_eq!(frame.meta(), Meta::new(5, i));
        let view = frame.view(&RECORD, &limits()).unwrap();
        assert_eq!(view.bytes(1), Some(&[(i % 3) as u8][..]));
    }
}

/// Frames must fit the pool's largest buffer (2 MiB here).
fn tcp_config() -> Config {
    Config {
        max_frame_len: (2 << 20) - ferry_net::frame::HEADER_LEN,
        ..Config::default()
    }
}

#[test]
fn the_same_code_runs_over_tcp() {
    let pool = shared_pool();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = Connection::new(listener.accept().unwrap().0, &pool, &tcp_config()).unwrap();
        serve(&mut conn, &pool);
    });
    let mut conn = Connection::connect(addr, &pool, &tcp_config()).unwrap();
    call(&mut conn, &pool);
    server.join().unwrap();
}

/// A frame is viewed with a descriptor loaded at run time (what a gateway does): the view
/// borrows the schema, and reads what the sender's generated type wrote.
#[test]
fn a_frame_is_viewed_with_a_run_time_schema() {
    let dir = std::env::temp_dir().join(format!("ferry-run-time-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proto = dir.join("record.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage ferry.sample;\nmessage Record { bytes key = 1; repeated bytes fields = 2; }\n",
    )
    .unwrap();
    let schema = ferry_reflect::Schema::load(&[&proto], &[&dir]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let pool = shared_pool();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = Connection::connect(listener.local_addr().unwrap(), &pool, &tcp_config()).unwrap();
    let mut server = Connection::new(listener.accept().unwrap().0, &pool, &tcp_config()).unwrap();
    let ctx = Context::new(pool.clone());
    let mut record = Record::new(&ctx);
    record.set_key(&b"run-time"[..]);
    record.append_field(&[7u8; 3000][..]);
    client.send(Meta::new(3, 0), &record).unwrap();
    client.flush().unwrap();
    let frame = server.recv().unwrap();
    let desc = schema.message("ferry.sample.Record").unwrap();
    let view = Received::view(&frame, desc, &limits()).unwrap();
    assert_eq!(view.bytes(1), Some(&b"run-time"[..]));
    assert_eq!(view.bytes_list(2).iter().collect::<Vec<_>>(), [&[7u8; 3000][..]]);
}

#[test]
fn the_same_code_runs_over_shared_memory() {
    let path = std::env::temp_dir().join(format!("ferry-shm-one-interface-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let server = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        serve(&mut conn, &pool);
    });
    let pool = shared_pool();
    let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    call(&mut conn, &pool);
    server.join().unwrap();
    assert_eq!(conn.stats().bytes_copied_in, 0);
    assert_eq!(
        conn.stats().bytes_referenced,
        8192 * (0..ROUNDS).map(|i| i % 3).sum::<u64>()
    );
}

/// How long a readiness wait may take before the test fails: a deadlock guard, not a
/// performance bound (the peer answers at once).
const GUARD_MS: i32 = 20_000;

/// `try_recv` answers `None` without waiting; after it, the descriptor becomes readable when
/// the peer sends, and `try_recv` then returns the frame. `peer_send` makes the peer send one
/// record of kind 9.
fn readiness<T: Transport>(conn: &mut T, peer_send: impl FnOnce()) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    assert!(conn.try_recv().unwrap().is_none(), "nothing was sent yet");
    peer_send();
    let guard = Timespec {
        tv_sec: i64::from(GUARD_MS / 1000),
        tv_nsec: 0,
    };
    let frame = loop {
        let mut fds = [PollFd::new(&*conn, PollFlags::IN)];
        let ready = poll(&mut fds, Some(&guard)).unwrap();
        assert_eq!(ready, 1, "the descriptor did not become readable");
        // A wake-up may precede the frame (a doorbell rung for an acknowledgement): drain.
        if let Some(frame) = conn.try_recv().unwrap() {
            break frame;
        }
    };
    assert_eq!(frame.meta(), Meta::new(9, 0));
    assert!(conn.try_recv().unwrap().is_none(), "one frame was sent");
}

#[test]
fn a_poll_loop_wakes_for_tcp() {
    let pool = shared_pool();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = Connection::connect(listener.local_addr().unwrap(), &pool, &tcp_config()).unwrap();
    let mut server = Connection::new(listener.accept().unwrap().0, &pool, &tcp_config()).unwrap();
    let ctx = Context::new(pool.clone());
    readiness(&mut server, || {
        client.send(Meta::new(9, 0), &Record::new(&ctx)).unwrap();
        client.flush().unwrap();
    });
}

#[test]
fn a_poll_loop_wakes_for_shared_memory() {
    let path = std::env::temp_dir().join(format!("ferry-shm-readiness-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let client = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
        wait.recv().unwrap();
        let ctx = Context::new(pool.clone());
        conn.send(Meta::new(9, 0), &Record::new(&ctx)).unwrap();
        conn.flush().unwrap();
        conn.wait_idle().unwrap();
    });
    let pool = shared_pool();
    let mut server = listener.accept(&pool, &ShmConfig::default()).unwrap();
    readiness(&mut server, || go.send(()).unwrap());
    // The frame is dropped: its acknowledgement lets the client's wait_idle return.
    server.flush().unwrap();
    client.join().unwrap();
}

/// Regression: a `try_recv` whose poll found only an acknowledgement (credits back, no frame)
/// returned `None` without announcing the wait, so the peer's next message rang no doorbell
/// and a poll loop slept through it.
#[test]
fn an_acknowledgement_alone_still_arms_the_doorbell() {
    let path = std::env::temp_dir().join(format!("ferry-shm-ack-arms-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let (acked, ack_seen) = std::sync::mpsc::channel::<()>();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let server = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        drop(conn.recv().unwrap());
        // An acknowledgement-only entry: this side has no message to carry it.
        conn.flush().unwrap();
        acked.send(()).unwrap();
        wait.recv().unwrap();
        let ctx = Context::new(pool.clone());
        conn.send(Meta::new(9, 0), &Record::new(&ctx)).unwrap();
        conn.flush().unwrap();
        assert!(matches!(
            conn.recv(),
            Err(ferry_transport::TransportError::Closed)
        ));
    });
    let pool = shared_pool();
    let mut client = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    let ctx = Context::new(pool.clone());
    client.send(Meta::new(1, 0), &Record::new(&ctx)).unwrap();
    client.flush().unwrap();
    ack_seen.recv().unwrap();
    // `readiness`'s first `try_recv` consumes the acknowledgement and must arm the doorbell.
    readiness(&mut client, || go.send(()).unwrap());
    drop(client);
    server.join().unwrap();
}

/// `in_flight` counts bytes on both transports: a shared-memory block and the value it
/// references are held until the peer acknowledges them.
#[test]
fn in_flight_counts_bytes_until_acknowledged() {
    let path = std::env::temp_dir().join(format!("ferry-shm-in-flight-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let server = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        drop(conn.recv().unwrap());
        conn.flush().unwrap();
        // Keep the connection until the client saw the acknowledgement.
        assert!(matches!(
            conn.recv(),
            Err(ferry_transport::TransportError::Closed)
        ));
    });
    let pool = shared_pool();
    let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    let ctx = Context::new(pool.clone());
    let value = pool.copy_from(&[1u8; 5000]).unwrap();
    let mut rec = Record::new(&ctx);
    rec.append_field(&value[..]);
    conn.send(Meta::new(1, 0), &rec).unwrap();
    assert_eq!(Transport::in_flight(&conn), 0, "queued, not yet published");
    conn.flush().unwrap();
    let held = Transport::in_flight(&conn);
    assert!(held > 5000, "the block and the 5000-byte value: {held}");
    conn.wait_idle().unwrap();
    assert_eq!(Transport::in_flight(&conn), 0);
    drop(conn);
    server.join().unwrap();
}

/// Regression: a shared-memory frame's view raised the caller's `max_message_len` to the size
/// of the whole shared region. The limit now bounds the message (its header and values), as
/// it does over TCP.
#[test]
fn shared_memory_views_honour_max_message_len() {
    let path = std::env::temp_dir().join(format!("ferry-shm-limits-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let client = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
        let ctx = Context::new(pool.clone());
        let value = pool.copy_from(&[2u8; 4096]).unwrap();
        let mut rec = Record::new(&ctx);
        rec.append_field(&value[..]);
        conn.send(Meta::new(1, 0), &rec).unwrap();
        conn.flush().unwrap();
        conn.wait_idle().unwrap();
    });
    let pool = shared_pool();
    let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
    let frame = conn.recv().unwrap();
    let within = Limits {
        max_message_len: 8 << 10,
        ..Limits::default()
    };
    assert!(
        frame.region().len() > 8 << 10,
        "the region is larger than the limit"
    );
    let view = frame
        .view(&RECORD, &within)
        .expect("a 4 KiB message within an 8 KiB limit");
    assert_eq!(view.bytes_list(2).get(0), Some(&[2u8; 4096][..]));
    let below = Limits {
        max_message_len: 1 << 10,
        ..Limits::default()
    };
    let err = frame
        .view(&RECORD, &below)
        .expect_err("a 4 KiB message over a 1 KiB limit");
    assert!(
        matches!(
            err.kind(),
            ferry_wire::DecodeErrorKind::MessageTooLarge { max: 1024, .. }
        ),
        "{err}"
    );
    drop(frame);
    conn.flush().unwrap();
    client.join().unwrap();
}

/// The example `multiplex` (one thread, one TCP and one shared-memory connection, by
/// readiness) runs to completion and checks its own echoes.
#[test]
fn the_multiplex_example_echoes_on_both_transports() {
    // Cargo builds examples before it runs tests: target/<profile>/examples/multiplex.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/multiplex");
    assert!(example.exists(), "{} not built", example.display());
    // `timeout`: a deadlock guard, so a hang fails the test instead of the CI run.
    let out = std::process::Command::new("timeout")
        .arg("120")
        .arg(&example)
        .arg("500")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("echoed 500 records over TCP and 500 over shared memory")
    );
}
