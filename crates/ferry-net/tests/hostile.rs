//! Malformed, oversize, truncated and garbage byte streams from a raw `TcpStream` peer: every
//! one ends in the right typed `TransportError` at the right stream offset, never a panic, and the
//! pool returns to its baseline while the connection is still open.

mod common;

use ferry_wire::Message as _;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::thread;

use common::{Rng, outstanding, pool, raw_pair, wait_queued, within};
use ferry_buf::Pool;
use ferry_net::frame::{FrameHeader, HEADER_LEN};
use ferry_net::{Config, Connection, FrameError, Meta, TransportError};
use ferry_wire::sample::Record;
use ferry_wire::{Context, Outgoing};

/// Header bytes for a frame of `len` payload bytes.
fn header(kind: u16, len: u32) -> [u8; HEADER_LEN] {
    FrameHeader {
        meta: Meta::new(kind, u64::from(kind) * 1000 + 7),
        len,
    }
    .to_bytes()
}

/// A whole frame whose payload is `len` bytes derived from `kind`.
fn frame(kind: u16, len: usize) -> Vec<u8> {
    let mut out = header(kind, len as u32).to_vec();
    out.extend((0..len).map(|i| (i * 31 + kind as usize) as u8));
    out
}

fn write(peer: &mut TcpStream, bytes: &[u8]) {
    peer.write_all(bytes).expect("raw peer write");
}

/// Receives the frame `kind` of `len` bytes and checks it.
fn expect_frame(conn: &mut Connection, kind: u16, len: usize) {
    let f = conn.recv().unwrap_or_else(|e| panic!("frame {kind}: {e}"));
    assert_eq!(f.meta(), Meta::new(kind, u64::from(kind) * 1000 + 7));
    assert!(
        f.payload()[..] == frame(kind, len)[HEADER_LEN..],
        "payload of {kind}"
    );
}

/// After a final error: later calls say `Poisoned`, and every buffer is back in the pool.
fn expect_poisoned_and_clean(conn: &mut Connection, pool: &Pool) {
    assert!(
        matches!(conn.recv(), Err(TransportError::Poisoned)),
        "a failed connection stays failed"
    );
    assert_eq!(
        outstanding(pool),
        0,
        "buffers released after the error, connection still open"
    );
}

fn small_limit() -> Config {
    Config {
        max_frame_len: 1000,
        read_buf: 4096,
        ..Config::default()
    }
}

/// A version byte other than 1, first thing on the stream and after frames (one of which
/// straddles receive buffers): `Frame { offset, Version }` with that frame's stream offset.
#[test]
fn bad_version_byte() {
    within("bad_version_byte", || {
        let pool = pool();
        let (mut peer, mut conn) = raw_pair(&pool, &small_limit());
        let mut bad = header(1, 4);
        bad[0] = 2;
        write(&mut peer, &bad);
        match conn.recv() {
            Err(TransportError::Frame {
                offset: 0,
                error: FrameError::Version { found: 2 },
            }) => {}
            other => panic!("expected a version error at offset 0, got {other:?}"),
        }
        expect_poisoned_and_clean(&mut conn, &pool);

        let config = Config {
            read_buf: 4096,
            ..Config::default()
        };
        let (mut peer, mut conn) = raw_pair(&pool, &config);
        let mut stream = frame(1, 10);
        stream.extend(frame(2, 0));
        stream.extend(frame(3, 10_000)); // larger than a receive buffer
        stream.extend(frame(4, 3000));
        let offset = stream.len() as u64;
        let mut bad = header(5, 0);
        bad[0] = 0;
        stream.extend(bad);
        write(&mut peer, &stream);
        for (kind, len) in [(1, 10), (2, 0), (3, 10_000), (4, 3000)] {
            expect_frame(&mut conn, kind, len);
        }
        match conn.recv() {
            Err(TransportError::Frame {
                offset: o,
                error: FrameError::Version { found: 0 },
            }) if o == offset => {}
            other => panic!("expected a version error at offset {offset}, got {other:?}"),
        }
        expect_poisoned_and_clean(&mut conn, &pool);
    });
}

/// A length above `Config::max_frame_len` is refused from the header alone (nothing is
/// allocated for it, even for 4 GiB); exactly the limit is accepted.
#[test]
fn length_above_the_limit() {
    within("length_above_the_limit", || {
        let pool = pool();
        for (len, after) in [(1001u32, 0usize), (u32::MAX, 1), (1 << 30, 2)] {
            let (mut peer, mut conn) = raw_pair(&pool, &small_limit());
            let mut stream = Vec::new();
            for k in 0..after {
                stream.extend(frame(k as u16, 1000)); // exactly the limit
            }
            let offset = stream.len() as u64;
            stream.extend(header(9, len));
            stream.extend([0u8; 64]);
            write(&mut peer, &stream);
            for k in 0..after {
                expect_frame(&mut conn, k as u16, 1000);
            }
            match conn.recv() {
                Err(TransportError::Frame {
                    offset: o,
                    error: FrameError::TooLong { len: l, max: 1000 },
                }) if o == offset && l == len as usize => {}
                other => panic!("len {len}: expected TooLong at {offset}, got {other:?}"),
            }
            expect_poisoned_and_clean(&mut conn, &pool);
        }
    });
}

/// A valid frame followed by garbage, arriving in one read: the frame is handed up, then the
/// garbage is a `Frame` error at the offset right after it, and the read buffer the frame
/// shared is released once the frame is dropped.
#[test]
fn valid_frame_then_garbage_in_one_read() {
    within("valid_frame_then_garbage_in_one_read", || {
        let pool = pool();
        let (mut peer, mut conn) = raw_pair(&pool, &Config::default());
        let mut stream = frame(1, 10);
        stream.extend(b"GARBAGE GARBAGE GARBAGE");
        write(&mut peer, &stream);
        wait_queued(&conn, stream.len());
        let first = conn.recv().expect("the valid frame");
        assert_eq!(first.payload().len(), 10);
        match conn.recv() {
            Err(TransportError::Frame {
                offset: 26,
                error: FrameError::Version { found: b'G' },
            }) => {}
            other => panic!("expected a version error at offset 26, got {other:?}"),
        }
        assert!(matches!(conn.recv(), Err(TransportError::Poisoned)));
        assert_eq!(outstanding(&pool), 1, "only the frame the application holds");
        drop(first);
        assert_eq!(outstanding(&pool), 0);
        drop(peer);
    });
}

/// A header split across writes (and reads), alone and after a frame in the same read (the
/// few header bytes are carried to the next buffer): frames arrive intact and later stream
/// offsets stay exact.
#[test]
fn header_split_across_writes() {
    within("header_split_across_writes", || {
        let pool = pool();
        let (mut peer, mut conn) = raw_pair(&pool, &Config::default());
        let f1 = frame(1, 100);
        write(&mut peer, &f1[..5]);
        wait_queued(&conn, 5);
        assert!(matches!(conn.try_recv(), Ok(None)));
        assert_eq!(conn.stats().recv.bytes, 5, "the 5 header bytes were read");
        write(&mut peer, &f1[5..12]);
        wait_queued(&conn, 7);
        assert!(matches!(conn.try_recv(), Ok(None)));
        write(&mut peer, &f1[12..]);
        wait_queued(&conn, f1.len() - 12);
        expect_frame(&mut conn, 1, 100);

        drop(peer);
        assert!(matches!(conn.recv(), Err(TransportError::Closed)));
        expect_poisoned_and_clean(&mut conn, &pool);
    });
}

/// Regression: when a read ends a few bytes into a header, after a whole frame in the same
/// buffer, those bytes are carried to the next buffer. They must not be counted twice in the
/// stream offset that later errors report.
#[test]
fn split_header_carry_does_not_shift_stream_offsets() {
    within("split_header_carry_does_not_shift_stream_offsets", || {
        let pool = pool();
        let (mut peer, mut conn) = raw_pair(&pool, &Config::default());
        // A frame and 5 bytes of the next header in one read.
        let f1 = frame(1, 40);
        let f2 = frame(2, 8);
        let mut chunk = f1.clone();
        chunk.extend(&f2[..5]);
        write(&mut peer, &chunk);
        wait_queued(&conn, chunk.len());
        expect_frame(&mut conn, 1, 40);
        assert!(matches!(conn.try_recv(), Ok(None)));
        let mut rest = f2[5..].to_vec();
        let offset = (f1.len() + f2.len()) as u64;
        rest.extend([7u8; HEADER_LEN]); // version 7
        write(&mut peer, &rest);
        wait_queued(&conn, rest.len());
        expect_frame(&mut conn, 2, 8);
        match conn.recv() {
            Err(TransportError::Frame {
                offset: o,
                error: FrameError::Version { found: 7 },
            }) if o == offset => {}
            other => panic!("expected a version error at stream offset {offset}, got {other:?}"),
        }
        expect_poisoned_and_clean(&mut conn, &pool);
    });
}

/// End of stream inside a header, inside a payload, inside a payload that straddles receive
/// buffers, and between frames.
#[test]
fn end_of_stream_inside_and_between_frames() {
    within("end_of_stream_inside_and_between_frames", || {
        let pool = pool();
        let config = Config {
            read_buf: 4096,
            ..Config::default()
        };
        let big = frame(9, 100_000);
        /// Bytes after one whole frame, and the `Truncated` they end in (`None`: `Closed`).
        type Case = (Vec<u8>, Option<(usize, usize)>);
        let cases: Vec<Case> = vec![
            (frame(9, 50)[..7].to_vec(), Some((7, 16))),
            (frame(9, 50)[..HEADER_LEN].to_vec(), Some((16, 66))),
            (frame(9, 50)[..46].to_vec(), Some((46, 66))),
            (big[..50_016].to_vec(), Some((50_016, 100_016))),
            (Vec::new(), None),
        ];
        for (tail, expected) in cases {
            let (mut peer, mut conn) = raw_pair(&pool, &config);
            let mut stream = frame(1, 3000);
            stream.extend(&tail);
            let writer = thread::spawn(move || {
                write(&mut peer, &stream);
                peer.shutdown(Shutdown::Write).unwrap();
                peer
            });
            expect_frame(&mut conn, 1, 3000);
            let got = conn.recv();
            match (expected, &got) {
                (Some((r, e)), Err(TransportError::Truncated { received, expected }))
                    if *received == r && *expected == e => {}
                (None, Err(TransportError::Closed)) => {}
                _ => panic!("tail of {} bytes: expected {expected:?}, got {got:?}", tail.len()),
            }
            expect_poisoned_and_clean(&mut conn, &pool);
            drop(writer.join().unwrap());
        }
    });
}

/// A payload that is a valid frame but not a valid Ferry message: the transport hands it up,
/// the decoder rejects it with a `DecodeError`.
#[test]
fn valid_frame_with_an_invalid_message() {
    within("valid_frame_with_an_invalid_message", || {
        let pool = pool();
        let (mut peer, mut conn) = raw_pair(&pool, &Config::default());
        let ctx = Context::new(pool.clone());
        let mut rec = Record::new(&ctx);
        rec.set_key(&b"key"[..]);
        rec.append_field(&[5u8; 700][..]);
        let good = rec.to_vec().unwrap();
        let mut payloads = vec![good[..good.len() / 2].to_vec(), vec![1, 2, 3]];
        let mut bad_header = good.clone();
        bad_header[0] ^= 0xff;
        payloads.push(bad_header);
        payloads.push(vec![0xff; 64]);
        let mut stream = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            stream.extend(header(i as u16, p.len() as u32));
            stream.extend(p);
        }
        stream.extend(header(99, good.len() as u32));
        stream.extend(&good);
        write(&mut peer, &stream);
        for (i, p) in payloads.iter().enumerate() {
            let f = conn.recv().expect("the transport accepts any payload");
            assert!(f.payload()[..] == p[..]);
            match Record::decode_shared(f.payload()) {
                Err(e) => eprintln!("payload {i}: {e}"),
                Ok(v) => panic!("payload {i} decoded: {v:?}"),
            }
        }
        let f = conn.recv().unwrap();
        let v = Record::decode_shared(f.payload()).expect("the valid one decodes");
        assert_eq!(v.key(), b"key");
        drop(f);
        drop(peer);
        assert!(matches!(conn.recv(), Err(TransportError::Closed)));
        assert_eq!(outstanding(&pool), 0);
    });
}

/// What a correct receiver makes of `stream` followed by end of stream: the frames (kind and
/// payload), then the final error.
fn model(stream: &[u8], max: usize) -> (Vec<(u16, Vec<u8>)>, String) {
    let mut frames = Vec::new();
    let mut at = 0;
    loop {
        let rest = &stream[at..];
        if rest.is_empty() {
            return (frames, "Closed".into());
        }
        if rest.len() < HEADER_LEN {
            return (frames, format!("Truncated {} of {HEADER_LEN}", rest.len()));
        }
        if rest[0] != 1 {
            return (frames, format!("Version {} at {at}", rest[0]));
        }
        let len = u32::from_le_bytes(rest[4..8].try_into().unwrap()) as usize;
        if len > max {
            return (frames, format!("TooLong {len} at {at}"));
        }
        if rest.len() < HEADER_LEN + len {
            return (
                frames,
                format!("Truncated {} of {}", rest.len(), HEADER_LEN + len),
            );
        }
        let kind = u16::from_le_bytes([rest[2], rest[3]]);
        frames.push((kind, rest[HEADER_LEN..HEADER_LEN + len].to_vec()));
        at += HEADER_LEN + len;
    }
}

fn describe(e: &TransportError) -> String {
    match e {
        TransportError::Closed => "Closed".into(),
        TransportError::Truncated { received, expected } => format!("Truncated {received} of {expected}"),
        TransportError::Frame {
            offset,
            error: FrameError::Version { found },
        } => format!("Version {found} at {offset}"),
        TransportError::Frame {
            offset,
            error: FrameError::TooLong { len, .. },
        } => format!("TooLong {len} at {offset}"),
        other => format!("unexpected {other:?}"),
    }
}

/// Random byte streams (valid frames, bad versions, oversize lengths, garbage, truncation),
/// written in random pieces that the receiver reads one by one (so reads end anywhere: inside
/// headers, inside payloads, between frames), with random receive-buffer sizes and limits: the
/// connection agrees with a reference parser on every frame and on the final error (kind,
/// offset, lengths), and leaves nothing allocated.
#[test]
fn random_streams_match_a_reference_parser() {
    let seed = common::seed(0x06a7_ba6e);
    within("random_streams_match_a_reference_parser", move || {
        let pool = pool();
        let mut rng = Rng::new(seed);
        for case in 0..300 {
            let max = rng.range(1, 6000);
            let config = Config {
                max_frame_len: max,
                read_buf: rng.range(16, 9000),
                ..Config::default()
            };
            let mut stream = Vec::new();
            for _ in 0..rng.range(0, 12) {
                match rng.range(0, 12) {
                    0 => stream.extend(rng.bytes_in(1, 40)),
                    1 => {
                        let mut h = header(rng.u64() as u16, rng.range(0, 100) as u32);
                        h[0] = rng.range(2, 256) as u8;
                        stream.extend(h);
                    }
                    2 => stream.extend(header(1, (max + rng.range(1, 1 << 20)) as u32)),
                    _ => {
                        let len = rng.range(0, max + 1);
                        stream.extend(header(rng.u64() as u16, len as u32));
                        stream.extend(rng.bytes(len));
                    }
                }
            }
            if rng.chance(1, 3) && !stream.is_empty() {
                let cut = rng.range(0, stream.len());
                stream.truncate(cut);
            }
            let (want_frames, want_end) = model(&stream, max);
            let (mut peer, mut conn) = raw_pair(&pool, &config);
            let mut got = Vec::new();
            let mut end = None;
            let mut at = 0;
            // Piece by piece: each piece is in the socket before the receiver reads it all.
            while at < stream.len() && end.is_none() {
                let n = rng.range(1, 300).min(stream.len() - at);
                write(&mut peer, &stream[at..at + n]);
                wait_queued(&conn, n);
                at += n;
                loop {
                    match conn.try_recv() {
                        Ok(Some(f)) => got.push((f.meta().kind, f.payload()[..].to_vec())),
                        Ok(None) => break,
                        Err(e) => {
                            end = Some(describe(&e));
                            break;
                        }
                    }
                }
            }
            let end = end.unwrap_or_else(|| {
                peer.shutdown(Shutdown::Write).unwrap();
                loop {
                    match conn.recv() {
                        Ok(f) => got.push((f.meta().kind, f.payload()[..].to_vec())),
                        Err(e) => break describe(&e),
                    }
                }
            });
            assert_eq!(got.len(), want_frames.len(), "case {case}: frame count");
            for (i, (g, w)) in got.iter().zip(&want_frames).enumerate() {
                assert!(g == w, "case {case}: frame {i} differs");
            }
            assert_eq!(end, want_end, "case {case}: final error");
            drop(got);
            expect_poisoned_and_clean(&mut conn, &pool);
        }
    });
}

/// An outgoing message over `max_frame_len` is refused with `TooLong` before anything is
/// queued; the connection goes on working and the peer sees only the frames that fit.
#[test]
fn oversize_outgoing_frame_is_refused() {
    within("oversize_outgoing_frame_is_refused", || {
        let pool = pool();
        let config = Config {
            max_frame_len: 1000,
            ..Config::default()
        };
        let (mut client, mut server) = common::pair(&pool, &config, &pool, &config);
        let ctx = Context::new(pool.clone());
        let big = pool.copy_from(&[1u8; 2000]).unwrap();
        let mut rec = Record::new(&ctx);
        rec.append_field(&big[..]);
        let len = rec.layout().total_len();
        match client.send(Meta::new(1, 1), &rec) {
            Err(TransportError::TooLong { len: l, max: 1000 }) if l == len => {}
            other => panic!("expected TooLong, got {other:?}"),
        }
        assert_eq!(big.ref_count(), 1, "nothing of the refused frame is held");
        assert!(!client.sender().has_pending());
        match client.send_payload(Meta::new(2, 2), ferry_net::Payload::Bytes(&[0; 1001])) {
            Err(TransportError::TooLong { len: 1001, max: 1000 }) => {}
            other => panic!("expected TooLong, got {other:?}"),
        }
        client
            .send_payload(Meta::new(3, 3), ferry_net::Payload::Bytes(&[3; 1000]))
            .expect("a frame at the limit is sent");
        client.flush().unwrap();
        let f = server.recv().unwrap();
        assert_eq!(f.meta(), Meta::new(3, 3));
        assert_eq!(f.payload().len(), 1000);
        drop((f, rec, client));
        drop(big);
        assert!(matches!(server.recv(), Err(TransportError::Closed)));
        drop(server);
        assert_eq!(outstanding(&pool), 0);
    });
}
