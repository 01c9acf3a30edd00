//! A random `Root` of over 96 KiB built across hundreds of 64-byte pool blocks, sent as one
//! frame of one gather entry per slice, arrives byte for byte, verifies, and `unpack`s to the
//! `RootT` that was packed: over TCP in every send mode the kernel offers (more slices than one
//! `sendmsg` takes, so the frame needs several calls), and over shared memory (copied into the
//! block). Frames that are not a `Root` are typed errors naming the frame; a message longer
//! than the frame limit is refused whole. Every pool is back to its baseline afterwards.

mod common;

use std::net::TcpListener;
use std::thread;

use common::builders::Blocks;
use common::net::{IOV_MAX, big_root, frame_pool, many_slices, outstanding, packed, root, skip};
use ferry_buf::Pool;
use ferry_flatbuffers_tests::interop::Root;
use ferry_net::frame::HEADER_LEN;
use ferry_net::{Config, Connection, Meta, Mode};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_testkit::{Scratch, shared_pool, spawn, within};
use ferry_transport::{Payload, TransportError};
use flatbuffers::{ReadError, VerifierOptions, read_frame};

/// The frame kind the tests send with.
const KIND: u16 = 0xf1a7;

/// A loopback pair: (client in `config`, server in the default configuration).
fn tcp_pair(client_pool: &Pool, server_pool: &Pool, config: &Config) -> (Connection, Connection) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let client =
        Connection::connect(listener.local_addr().unwrap(), client_pool, config).expect("client connection");
    let server = Connection::new(
        listener.accept().expect("accept").0,
        server_pool,
        &Config::default(),
    )
    .expect("server connection");
    (client, server)
}

/// A message over TCP in `mode`: one frame whose slices are gather entries (only the frame
/// header is written into staging), in as many `sendmsg` calls as the entries need; it arrives
/// identical, verifies and reads back as the `RootT` packed, and every buffer goes back to its
/// pool (zero-copy modes: once the kernel's completions have come).
fn many_slices_over_tcp(mode: Mode) {
    let test = format!("many_slices_over_tcp_{mode}");
    within(&test.clone(), move || {
        let (client_pool, server_pool, build_pool) =
            (frame_pool(false), frame_pool(false), frame_pool(false));
        let (mut client, mut server) = tcp_pair(&client_pool, &server_pool, &Config::with_mode(mode));
        if client.mode() != mode {
            let why = format!("{mode} mode unavailable here (fell back to {})", client.mode());
            skip(&test, &why);
            return;
        }
        let root = big_root(7);
        let message = many_slices(&build_pool, &root);
        let expect = message.to_vec();
        let slices = message.slices().len();

        let reader = thread::spawn(move || {
            let frame = server.recv().expect("recv");
            assert_eq!(frame.meta(), Meta::new(KIND, 42));
            let read = read_frame::<Root>(&frame, &VerifierOptions::default())
                .expect("verifies")
                .unpack();
            let bytes = frame.payload().to_vec();
            drop(frame);
            drop(server);
            assert_eq!(outstanding(&server_pool), 0, "server pool back to baseline");
            (read, bytes)
        });
        client
            .send_payload(Meta::new(KIND, 42), message.payload())
            .expect("send");
        client.flush().expect("flush");
        let (read, bytes) = reader.join().expect("reader");
        assert!(bytes == expect, "{mode}: the frame is the message, byte for byte");
        assert!(read == root, "{mode}: unpack() gives back the RootT packed");

        let stats = client.stats().send;
        eprintln!("{mode}: {slices} slices; {stats:?}");
        assert_eq!(
            stats.queue.staged_bytes, HEADER_LEN as u64,
            "{mode}: only the frame header is copied; each slice is its own gather entry: {stats:?}"
        );
        assert_eq!(stats.queue.wire_bytes, (HEADER_LEN + expect.len()) as u64);
        let entries = slices + 1;
        assert!(
            stats.send_calls >= entries.div_ceil(IOV_MAX) as u64,
            "{mode}: {entries} entries take at least {} calls of {IOV_MAX}: {stats:?}",
            entries.div_ceil(IOV_MAX)
        );

        // Zero-copy sends hold the blocks until the kernel's completion.
        client.sender().wait_idle().expect("wait_idle");
        assert_eq!(client.in_flight(), 0);
        if matches!(mode, Mode::ZeroCopy | Mode::Uring) {
            let completions = client.stats().send.completions;
            assert!(
                completions.completed > 0,
                "{mode}: the blocks were held until the kernel's completion: {completions:?}"
            );
        }
        drop(client);
        drop(message);
        assert_eq!(
            outstanding(&client_pool),
            0,
            "{mode}: client pool back to baseline"
        );
        assert_eq!(
            outstanding(&build_pool),
            0,
            "{mode}: every block back in the pool"
        );
    });
}

#[test]
fn many_slices_over_tcp_copy() {
    many_slices_over_tcp(Mode::Copy);
}

#[test]
fn many_slices_over_tcp_gather() {
    many_slices_over_tcp(Mode::Gather);
}

#[test]
fn many_slices_over_tcp_zerocopy() {
    many_slices_over_tcp(Mode::ZeroCopy);
}

#[test]
fn many_slices_over_tcp_uring() {
    many_slices_over_tcp(Mode::Uring);
}

#[test]
fn many_slices_over_tcp_auto() {
    many_slices_over_tcp(Mode::Auto);
}

/// The message over shared memory: copied into the block, read contiguously in the peer's
/// memory, identical, verified and read back as the `RootT` packed; every buffer back in its
/// pool once the block is acknowledged.
#[test]
fn many_slices_over_shared_memory() {
    let scratch = Scratch::new("flatbuffers-shm");
    let listener = ShmListener::bind(scratch.0.join("many.sock")).expect("bind");
    let path = listener.path().to_path_buf();
    let root = big_root(11);
    let want = root.clone();

    let receiver = spawn("receiver", move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).expect("accept");
        let frame = conn.recv().expect("recv");
        assert_eq!(frame.meta(), Meta::new(KIND, 0));
        let read = read_frame::<Root>(&frame, &VerifierOptions::default()).expect("verifies");
        assert!(read.unpack() == want, "unpack() gives back the RootT packed");
        let bytes = frame.bytes().expect("a payload is contiguous").to_vec();
        drop(frame);
        // Acknowledges the block, then waits for the sender to close.
        conn.wait_idle().expect("wait_idle");
        assert!(
            conn.recv().is_err(),
            "the sender closes after its block is acknowledged"
        );
        drop(conn);
        assert_eq!(outstanding(&pool), 0, "receiver pool back to baseline");
        bytes
    });
    let sender = spawn("sender", move || {
        let (pool, build_pool) = (shared_pool(), frame_pool(false));
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).expect("connect");
        let message = many_slices(&build_pool, &root);
        let expect = message.to_vec();
        conn.send_payload(Meta::new(KIND, 0), message.payload())
            .expect("send");
        conn.flush().expect("flush");
        conn.wait_idle().expect("the receiver acknowledges the block");
        assert_eq!(conn.in_flight(), 0);
        drop(conn);
        drop(message);
        assert_eq!(outstanding(&pool), 0, "sender pool back to baseline");
        assert_eq!(outstanding(&build_pool), 0, "every block back in the pool");
        expect
    });
    let expect = sender.join();
    let bytes = receiver.join();
    assert!(bytes == expect, "the frame is the message, byte for byte");
}

/// What is not a FlatBuffer of the type asked for is a typed error naming the frame, never a
/// panic: a cut message, bytes of garbage, and (over shared memory) a Ferry message, which has
/// no contiguous bytes.
#[test]
fn read_frame_errors_name_the_frame() {
    within("read_frame_errors_name_the_frame", || {
        let (client_pool, server_pool, build_pool) =
            (frame_pool(false), frame_pool(false), frame_pool(false));
        let (mut client, mut server) = tcp_pair(&client_pool, &server_pool, &Config::with_mode(Mode::Gather));
        let whole = many_slices(&build_pool, &big_root(3)).to_vec();
        client
            .send_payload(Meta::new(KIND, 1), Payload::Bytes(&whole[..whole.len() - 100]))
            .unwrap();
        client
            .send_payload(Meta::new(KIND, 2), Payload::Bytes(&[0xff; 40]))
            .unwrap();
        client.flush().unwrap();
        let opts = VerifierOptions::default();
        for (id, len) in [(1, whole.len() - 100), (2, 40)] {
            let frame = server.recv().unwrap();
            let err = read_frame::<Root>(&frame, &opts).unwrap_err();
            match &err {
                ReadError::Invalid {
                    root,
                    kind,
                    request_id,
                    len: got,
                    ..
                } => {
                    assert!(root.contains("Root"), "{err}");
                    assert_eq!((*kind, *request_id, *got), (KIND, id, len), "{err}");
                }
                other => panic!("frame {id}: {other}"),
            }
            let text = err.to_string();
            assert!(!text.contains('\n'), "one line: {text:?}");
            assert!(text.contains(&format!("request id {id}")), "{text}");
        }
        drop((client, server));
        assert_eq!(outstanding(&client_pool) + outstanding(&server_pool), 0);
    });

    let scratch = Scratch::new("flatbuffers-shm-errors");
    let listener = ShmListener::bind(scratch.0.join("errors.sock")).expect("bind");
    let path = listener.path().to_path_buf();
    let receiver = spawn("receiver", move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).expect("accept");
        let frame = conn.recv().expect("recv");
        let err = read_frame::<Root>(&frame, &VerifierOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::NotPayload {
                    kind: KIND,
                    request_id: 0
                }
            ),
            "{err}"
        );
        drop(frame);
        conn.wait_idle().expect("wait_idle");
        assert!(conn.recv().is_err());
        drop(conn);
        assert_eq!(outstanding(&pool), 0);
    });
    let sender = spawn("sender", move || {
        let pool = shared_pool();
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).expect("connect");
        let ctx = ferry_wire::Context::new(pool.clone());
        let mut record = ferry_wire::sample::Record::new(&ctx);
        record.set_key(&b"not a flatbuffer"[..]);
        conn.send(Meta::new(KIND, 0), &record).expect("send");
        conn.flush().expect("flush");
        conn.wait_idle().expect("wait_idle");
        drop(conn);
        assert_eq!(outstanding(&pool), 0);
    });
    sender.join();
    receiver.join();
}

/// A send of a frame longer than the connection's limit is refused whole, with nothing queued:
/// the caller learns the limit, the connection stays usable.
#[test]
fn a_message_longer_than_the_frame_limit_is_refused_whole() {
    within("a_message_longer_than_the_frame_limit_is_refused_whole", || {
        let (client_pool, server_pool, build_pool) =
            (frame_pool(false), frame_pool(false), frame_pool(false));
        let config = Config {
            max_frame_len: 64 << 10,
            ..Config::default()
        };
        let (mut client, mut server) = tcp_pair(&client_pool, &server_pool, &config);
        let message = many_slices(&build_pool, &big_root(5));
        match client.send_payload(Meta::new(KIND, 1), message.payload()) {
            Err(TransportError::TooLong { len, max }) => {
                assert_eq!((len, max), (message.len(), 64 << 10));
            }
            other => panic!("expected TooLong, got {other:?}"),
        }
        // Still usable: a small message goes through.
        let small = root(5, 64);
        let small_message = packed(&build_pool, &small, Blocks::Default);
        assert!(small_message.len() < 64 << 10, "{} bytes", small_message.len());
        client
            .send_payload(Meta::new(KIND, 2), small_message.payload())
            .unwrap();
        client.flush().unwrap();
        let frame = server.recv().unwrap();
        assert_eq!(frame.meta().request_id, 2);
        let read = read_frame::<Root>(&frame, &VerifierOptions::default()).unwrap();
        assert!(read.unpack() == small, "unpack() gives back the RootT packed");
        drop((frame, client, server, message, small_message));
        for pool in [&client_pool, &server_pool, &build_pool] {
            assert_eq!(outstanding(pool), 0);
        }
    });
}
