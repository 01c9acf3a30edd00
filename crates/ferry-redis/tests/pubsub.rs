//! Pub/sub over real sockets: messages that cross event loops (a publisher on one loop, its
//! subscribers spread over two), a large payload to several subscribers byte for byte, RESP3
//! pushes between replies, a subscriber that never reads cut off at the `pubsub` output
//! limit while the others keep theirs, and a disconnected subscriber forgotten. Every wait is
//! on a condition the server reports (`PUBSUB NUMSUB`, `INFO stats`), with a hang guard.

mod common;

use std::time::Duration;

use common::{Conn, cmd, config, connect, read, send, start};
use ferry_redis::Config;
use ferry_redis::resp::client::Reply;
use ferry_testkit::wait_until;

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

fn message(channel: &[u8], payload: &[u8]) -> Reply {
    Reply::Array(vec![bulk(b"message"), bulk(channel), bulk(payload)])
}

fn numsub(c: &mut Conn, channel: &[u8]) -> i64 {
    match cmd(c, &[b"PUBSUB", b"NUMSUB", channel]) {
        Reply::Array(v) if v.len() == 2 => match v[1] {
            Reply::Int(n) => n,
            _ => panic!("NUMSUB count: {:?}", v[1]),
        },
        other => panic!("NUMSUB: {other:?}"),
    }
}

/// 16 subscribers on a 2-loop server: the kernel spreads connections over both loops' listeners
/// (all on one would take 2 chances in 65536), so a publisher on either reaches subscribers on
/// the other through its mailbox and eventfd. Each gets every message, in publish order.
#[test]
fn messages_reach_subscribers_on_every_loop_in_order() {
    let server = start(Config {
        threads: 2,
        ..config()
    });
    let mut subs: Vec<Conn> = (0..16).map(|_| connect(server.addr())).collect();
    for (i, s) in subs.iter_mut().enumerate() {
        let args: [&[u8]; 2] = if i % 2 == 0 {
            [b"SUBSCRIBE", b"news"]
        } else {
            [b"PSUBSCRIBE", b"n*s"]
        };
        let reply = cmd(s, &args);
        let Reply::Array(v) = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(v[2], Reply::Int(1));
    }
    let mut publishers: Vec<Conn> = (0..4).map(|_| connect(server.addr())).collect();
    for round in 0..10u32 {
        for (p, publisher) in publishers.iter_mut().enumerate() {
            let payload = format!("{round}-{p}");
            assert_eq!(
                cmd(publisher, &[b"PUBLISH", b"news", payload.as_bytes()]),
                Reply::Int(16)
            );
        }
    }
    for (i, s) in subs.iter_mut().enumerate() {
        for round in 0..10u32 {
            for p in 0..4 {
                let payload = format!("{round}-{p}");
                let want = if i % 2 == 0 {
                    message(b"news", payload.as_bytes())
                } else {
                    Reply::Array(vec![
                        bulk(b"pmessage"),
                        bulk(b"n*s"),
                        bulk(b"news"),
                        bulk(payload.as_bytes()),
                    ])
                };
                assert_eq!(read(s), want, "subscriber {i}");
            }
        }
    }
}

/// A 1 MiB payload (referenced from the publisher's read buffer, not copied per subscriber)
/// arrives whole at each of 4 subscribers, RESP2 and RESP3 alike; the RESP3 subscriber gets it
/// as a push between its own replies.
#[test]
fn a_large_payload_arrives_whole_at_every_subscriber() {
    let server = start(Config {
        threads: 2,
        ..config()
    });
    let payload: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
    let mut subs: Vec<Conn> = (0..4).map(|_| connect(server.addr())).collect();
    assert!(matches!(cmd(&mut subs[3], &[b"HELLO", b"3"]), Reply::Map(_)));
    for s in &mut subs {
        cmd(s, &[b"SUBSCRIBE", b"big"]);
    }
    let mut publisher = connect(server.addr());
    assert_eq!(
        cmd(&mut publisher, &[b"PUBLISH", b"big", &payload]),
        Reply::Int(4)
    );
    for s in &mut subs[..3] {
        assert!(read(s) == message(b"big", &payload), "the payload differs");
    }
    // The publisher had its reply: the message is ahead of any later reply.
    let resp3 = &mut subs[3];
    send(resp3, &[b"GET", b"nothing"]);
    assert!(
        read(resp3) == Reply::Push(vec![bulk(b"message"), bulk(b"big"), bulk(&payload)]),
        "the push first"
    );
    assert_eq!(read(resp3), Reply::Null, "then GET's reply");
}

/// A subscriber that never reads is disconnected once its unsent messages pass the `pubsub`
/// hard limit (set with CONFIG SET); the one beside it that reads keeps its subscription.
#[test]
fn a_subscriber_that_never_reads_is_cut_off_at_the_pubsub_limit() {
    let server = start(config());
    let mut admin = connect(server.addr());
    assert_eq!(
        cmd(
            &mut admin,
            &[
                b"CONFIG",
                b"SET",
                b"client-output-buffer-limit",
                b"pubsub 1mb 0 0"
            ]
        ),
        Reply::Simple(b"OK".to_vec())
    );
    let mut stalled = connect(server.addr());
    cmd(&mut stalled, &[b"SUBSCRIBE", b"firehose"]);
    let mut reader = connect(server.addr());
    cmd(&mut reader, &[b"SUBSCRIBE", b"firehose"]);
    let payload = vec![b'z'; 64 << 10];
    // The socket buffers hold some megabytes; past them the stalled client's replies pile
    // up. 1 GiB published without a cut-off is a failure, not a hang.
    let mut published = 0usize;
    while numsub(&mut admin, b"firehose") == 2 {
        assert!(published < 1 << 30, "never cut off");
        let n = cmd(&mut admin, &[b"PUBLISH", b"firehose", &payload]);
        assert!(matches!(n, Reply::Int(1 | 2)), "{n:?}");
        published += payload.len();
        assert!(read(&mut reader) == message(b"firehose", &payload));
    }
    assert_eq!(numsub(&mut admin, b"firehose"), 1);
    let info = cmd(&mut admin, &[b"INFO", b"stats"]);
    let Reply::Bulk(info) = info else {
        panic!("{info:?}")
    };
    assert!(
        String::from_utf8_lossy(&info).contains("\r\nclients_dropped:1\r\n"),
        "INFO stats counts the dropped subscriber"
    );
}

/// A subscriber that disconnects is taken out of every channel and pattern.
#[test]
fn a_disconnected_subscriber_is_forgotten() {
    let server = start(Config {
        threads: 2,
        ..config()
    });
    let mut admin = connect(server.addr());
    let mut gone = connect(server.addr());
    cmd(&mut gone, &[b"SUBSCRIBE", b"a"]);
    cmd(&mut gone, &[b"PSUBSCRIBE", b"a*"]);
    assert_eq!(numsub(&mut admin, b"a"), 1);
    drop(gone);
    wait_until("the subscriber to be forgotten", Duration::from_secs(20), || {
        numsub(&mut admin, b"a") == 0
    });
    assert_eq!(cmd(&mut admin, &[b"PUBSUB", b"NUMPAT"]), Reply::Int(0));
    assert_eq!(cmd(&mut admin, &[b"PUBLISH", b"a", b"x"]), Reply::Int(0));
}
