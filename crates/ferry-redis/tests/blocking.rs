//! Blocking commands over real sockets, on a 2-loop server: waiters served first come first
//! served by a pusher on any loop, an `LMOVE` chain through two waiters, a timeout answered
//! with the requests pipelined behind it run after it, `CLIENT UNBLOCK`, and a waiter that
//! disconnects. Every wait is on `INFO clients`' `blocked_clients`, with a hang guard; no
//! sleep orders anything.

mod common;

use std::time::Duration;

use common::{Conn, cmd, config, connect, encode, read, send, start};
use ferry_redis::resp::client::Reply;
use ferry_redis::{Config, ServerHandle};
use ferry_testkit::wait_until;

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

fn server() -> ServerHandle {
    start(Config {
        threads: 2,
        ..config()
    })
}

fn blocked_clients(admin: &mut Conn) -> usize {
    let Reply::Bulk(info) = cmd(admin, &[b"INFO", b"clients"]) else {
        panic!("INFO clients")
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no blocked_clients in {info}"))
}

/// Waits until `n` clients wait.
fn until_blocked(admin: &mut Conn, n: usize) {
    wait_until(&format!("{n} blocked clients"), Duration::from_secs(20), || {
        blocked_clients(admin) == n
    });
}

/// Eight waiters (spread over both loops) each get one element of one push, in the order
/// they started waiting.
#[test]
fn one_push_serves_waiters_first_come_first_served_across_loops() {
    let server = server();
    let mut admin = connect(server.addr());
    let mut waiters: Vec<Conn> = Vec::new();
    for i in 0..8 {
        let mut w = connect(server.addr());
        send(&mut w, &[b"BLPOP", b"other", b"queue", b"0"]);
        until_blocked(&mut admin, i + 1);
        waiters.push(w);
    }
    let items: Vec<Vec<u8>> = (0..8).map(|i| format!("item-{i}").into_bytes()).collect();
    let mut push: Vec<&[u8]> = vec![b"RPUSH", b"queue"];
    push.extend(items.iter().map(Vec::as_slice));
    assert_eq!(cmd(&mut admin, &push), Reply::Int(8));
    for (w, item) in waiters.iter_mut().zip(&items) {
        assert_eq!(read(w), Reply::Array(vec![bulk(b"queue"), bulk(item)]));
    }
    assert_eq!(blocked_clients(&mut admin), 0);
    assert_eq!(cmd(&mut admin, &[b"EXISTS", b"queue"]), Reply::Int(0));
}

/// A push into `src` serves a `BLMOVE src dst` waiter, whose move serves a `BLPOP dst`
/// waiter; the pushes of a transaction serve waiters once it ran.
#[test]
fn an_lmove_chain_and_a_transaction_serve_waiters() {
    let server = server();
    let mut admin = connect(server.addr());
    let mut last = connect(server.addr());
    send(&mut last, &[b"BLPOP", b"dst", b"0"]);
    until_blocked(&mut admin, 1);
    let mut mover = connect(server.addr());
    send(&mut mover, &[b"BLMOVE", b"src", b"dst", b"LEFT", b"RIGHT", b"0"]);
    until_blocked(&mut admin, 2);
    assert_eq!(cmd(&mut admin, &[b"RPUSH", b"src", b"x"]), Reply::Int(1));
    assert_eq!(read(&mut mover), bulk(b"x"));
    assert_eq!(read(&mut last), Reply::Array(vec![bulk(b"dst"), bulk(b"x")]));

    let mut z = connect(server.addr());
    send(&mut z, &[b"BZPOPMIN", b"zs", b"0"]);
    until_blocked(&mut admin, 1);
    let mut tx = connect(server.addr());
    cmd(&mut tx, &[b"MULTI"]);
    cmd(&mut tx, &[b"ZADD", b"zs", b"2", b"b", b"1", b"a"]);
    assert_eq!(blocked_clients(&mut admin), 1, "queued, not run");
    cmd(&mut tx, &[b"EXEC"]);
    assert_eq!(
        read(&mut z),
        Reply::Array(vec![bulk(b"zs"), bulk(b"a"), bulk(b"1")])
    );
}

/// A timeout answers a null array (a null bulk for `BRPOPLPUSH`), and the requests sent
/// behind the blocking one run after it, in order; inside `MULTI` nothing waits.
#[test]
fn a_timeout_answers_null_then_the_pipeline_goes_on() {
    let server = server();
    let mut c = connect(server.addr());
    let pipeline = [
        encode(&[b"BLPOP", b"nothing", b"0.05"]),
        encode(&[b"BRPOPLPUSH", b"nothing", b"d", b"0.05"]),
        encode(&[b"PING"]),
    ]
    .concat();
    use std::io::Write;
    c.get_mut().write_all(&pipeline).unwrap();
    assert_eq!(read(&mut c), Reply::NullArray);
    assert_eq!(read(&mut c), Reply::NullBulk);
    assert_eq!(read(&mut c), Reply::simple("PONG"));
    cmd(&mut c, &[b"MULTI"]);
    cmd(&mut c, &[b"BLPOP", b"nothing", b"0"]);
    assert_eq!(cmd(&mut c, &[b"EXEC"]), Reply::Array(vec![Reply::NullArray]));
}

/// `CLIENT UNBLOCK` answers a waiter (the timeout reply, or an error), and a waiter that
/// disconnects takes nothing: the element pushed after it left stays.
#[test]
fn client_unblock_and_a_waiter_that_leaves() {
    let server = server();
    let mut admin = connect(server.addr());
    let mut w = connect(server.addr());
    let Reply::Int(id) = cmd(&mut w, &[b"CLIENT", b"ID"]) else {
        panic!("CLIENT ID")
    };
    let id = id.to_string();
    send(&mut w, &[b"BLPOP", b"k", b"0"]);
    until_blocked(&mut admin, 1);
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"UNBLOCK", id.as_bytes(), b"ERROR"]),
        Reply::Int(1)
    );
    assert_eq!(
        read(&mut w),
        Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    );
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"UNBLOCK", id.as_bytes()]),
        Reply::Int(0),
        "not waiting any more"
    );
    send(&mut w, &[b"BLPOP", b"k", b"0"]);
    until_blocked(&mut admin, 1);
    drop(w);
    until_blocked(&mut admin, 0);
    assert_eq!(cmd(&mut admin, &[b"RPUSH", b"k", b"v"]), Reply::Int(1));
    assert_eq!(cmd(&mut admin, &[b"LLEN", b"k"]), Reply::Int(1));
}
