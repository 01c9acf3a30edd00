//! Keyspace notifications over real sockets: the same commands against redis-server 7.0 and
//! `ferry redis` send the same `__keyspace@0__`/`__keyevent@0__` messages in the same order
//! (a differential run), to subscribers on both of ferry's loops; a blocked pop served by a
//! push sends its pop event; expired keys send `expired`; the flags read back as Redis prints
//! them. A subscriber reads until a marker message published last, so no wait is timed.

mod common;

use std::net::SocketAddr;

use common::{Conn, cmd, config, connect, read, send, start};
use ferry_redis::Config;
use ferry_redis::resp::client::Reply;
use ferry_testkit::{DEADLINE, wait_until};

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

fn ok(c: &mut Conn, args: &[&[u8]]) {
    assert_eq!(cmd(c, args), Reply::simple("OK"), "{args:?}");
}

/// A connection subscribed to every channel.
fn subscriber(addr: SocketAddr) -> Conn {
    let mut s = connect(addr);
    let reply = cmd(&mut s, &[b"PSUBSCRIBE", b"*"]);
    assert_eq!(
        reply,
        Reply::Array(vec![bulk(b"psubscribe"), bulk(b"*"), Reply::Int(1)])
    );
    s
}

/// The (channel, payload) pairs `s` receives until the message on `end`.
fn until_end(s: &mut Conn) -> Vec<(String, String)> {
    let mut got = Vec::new();
    loop {
        let Reply::Array(v) = read(s) else {
            panic!("not a message")
        };
        let text = |r: &Reply| match r {
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("not a bulk string: {other:?}"),
        };
        let (channel, payload) = (text(&v[2]), text(&v[3]));
        if channel == "end" {
            return got;
        }
        got.push((channel, payload));
    }
}

/// Commands whose events Ferry names as Redis does (single events, one with a second key, a
/// container left empty, a write that changed nothing).
const SCRIPT: &[&[&str]] = &[
    &["SET", "foo", "bar"],
    &["APPEND", "foo", "x"],
    &["INCR", "n"],
    &["DECRBY", "n", "3"],
    &["INCRBYFLOAT", "n", "1.5"],
    &["HSET", "h", "a", "1"],
    &["HMSET", "h", "b", "2"],
    &["HINCRBY", "h", "a", "1"],
    &["HDEL", "h", "a", "b"],
    &["LPUSH", "l", "a", "b"],
    &["RPUSH", "l", "c"],
    &["LPOP", "l"],
    &["RPOPLPUSH", "l", "l2"],
    &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
    &["SADD", "s", "a", "b"],
    &["SREM", "s", "a"],
    &["SREM", "s", "zz"],
    &["SMOVE", "s", "s2", "b"],
    &["ZADD", "z", "1", "a", "2", "b"],
    &["ZINCRBY", "z", "1", "a"],
    &["ZREM", "z", "a"],
    &["ZPOPMIN", "z"],
    &["EXPIRE", "foo", "100"],
    &["PERSIST", "foo"],
    &["RENAME", "foo", "bar2"],
    &["DEL", "bar2", "n", "nosuch"],
    &["SET", "e", "v"],
    &["PEXPIRE", "e", "1"],
];

/// Runs [`SCRIPT`] on `addr` with `notify-keyspace-events KEA`, waits for `e` to expire, and
/// returns what each of `subscribers` subscribers received.
fn run_script(addr: SocketAddr, subscribers: usize) -> Vec<Vec<(String, String)>> {
    let mut c = connect(addr);
    ok(&mut c, &[b"CONFIG", b"SET", b"notify-keyspace-events", b"KEA"]);
    let mut subs: Vec<Conn> = (0..subscribers).map(|_| subscriber(addr)).collect();
    for line in SCRIPT {
        let args: Vec<&[u8]> = line.iter().map(|a| a.as_bytes()).collect();
        if let Reply::Error(e) = cmd(&mut c, &args) {
            panic!("{line:?}: {}", String::from_utf8_lossy(&e));
        }
    }
    wait_until("e expired", DEADLINE, || {
        cmd(&mut c, &[b"EXISTS", b"e"]) == Reply::Int(0)
    });
    send(&mut c, &[b"PUBLISH", b"end", b"."]);
    read(&mut c);
    ok(&mut c, &[b"CONFIG", b"SET", b"notify-keyspace-events", b""]);
    subs.iter_mut().map(until_end).collect()
}

#[test]
fn events_match_redis_server() {
    let Some(path) = common::redis_server_7_0("events_match_redis_server") else {
        return;
    };
    let redis = common::start_redis_server(&path, &std::env::temp_dir(), &[], DEADLINE);
    let want = run_script(redis.addr(), 1).remove(0);
    assert!(want.len() > 2 * SCRIPT.len(), "redis-server sent {want:?}");
    // 8 subscribers over 2 loops: the kernel spreads them (all on one: 2 chances in 256).
    let ferry = start(Config {
        threads: 2,
        ..config()
    });
    for (i, got) in run_script(ferry.addr(), 8).into_iter().enumerate() {
        for (n, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "subscriber {i}, message {n}");
        }
        assert_eq!(got.len(), want.len(), "subscriber {i}: {got:?}");
    }
}

/// A `BLPOP` served by another client's `LPUSH`: `lpush` then the waiter's `lpop` and `del`.
#[test]
fn a_served_blocked_pop_sends_its_event() {
    let server = start(config());
    let mut c = connect(server.addr());
    ok(&mut c, &[b"CONFIG", b"SET", b"notify-keyspace-events", b"El"]);
    let mut sub = subscriber(server.addr());
    let mut waiter = connect(server.addr());
    send(&mut waiter, &[b"BLPOP", b"q", b"0"]);
    wait_until("BLPOP waits", DEADLINE, || {
        let Reply::Bulk(info) = cmd(&mut c, &[b"INFO", b"clients"]) else {
            return false;
        };
        String::from_utf8_lossy(&info).contains("blocked_clients:1")
    });
    assert_eq!(cmd(&mut c, &[b"LPUSH", b"q", b"x"]), Reply::Int(1));
    assert_eq!(read(&mut waiter), Reply::Array(vec![bulk(b"q"), bulk(b"x")]));
    cmd(&mut c, &[b"PUBLISH", b"end", b"."]);
    let events: Vec<String> = until_end(&mut sub)
        .into_iter()
        .map(|(ch, key)| format!("{ch} {key}"))
        .collect();
    // `del` is generic (`g`), not enabled here.
    assert_eq!(events, ["__keyevent@0__:lpush q", "__keyevent@0__:lpop q"]);
}

#[test]
fn flags_read_back_as_redis_prints_them() {
    let server = start(config());
    let mut c = connect(server.addr());
    for (set, get) in [
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("KA", "AK"),
        ("EA", "AE"),
        ("", ""),
    ] {
        ok(
            &mut c,
            &[b"CONFIG", b"SET", b"notify-keyspace-events", set.as_bytes()],
        );
        assert_eq!(
            cmd(&mut c, &[b"CONFIG", b"GET", b"notify-keyspace-events"]),
            Reply::Array(vec![bulk(b"notify-keyspace-events"), bulk(get.as_bytes())])
        );
    }
    assert_eq!(
        cmd(&mut c, &[b"CONFIG", b"SET", b"notify-keyspace-events", b"KEw"]),
        Reply::error(
            "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event \
             class character. Use 'Ag$lshzxeKEtmdn'."
        )
    );
}
