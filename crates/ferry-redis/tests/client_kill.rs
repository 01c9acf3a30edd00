//! `CLIENT LIST` and `CLIENT KILL` over real sockets on a 2-loop server: every client is
//! listed, whichever loop serves it; a kill by id, address, type or `SKIPME no` closes the
//! picked connections on their own loops (the victims read end of stream) and spares the
//! others; the caller that kills itself gets its reply first. Waits are on what the server
//! reports (`CLIENT LIST`, `INFO clients`), with a hang guard.

mod common;

use std::io::Read;

use common::{Conn, cmd, config, connect, start};
use ferry_redis::Config;
use ferry_redis::resp::client::Reply;
use ferry_testkit::{DEADLINE, wait_until};

fn text(r: Reply) -> String {
    match r {
        Reply::Bulk(b) => String::from_utf8(b).expect("UTF-8"),
        other => panic!("not a string: {other:?}"),
    }
}

fn id(c: &mut Conn) -> u64 {
    match cmd(c, &[b"CLIENT", b"ID"]) {
        Reply::Int(n) => n as u64,
        other => panic!("CLIENT ID: {other:?}"),
    }
}

/// The `field=` values of every `CLIENT LIST` line.
fn listed(c: &mut Conn, field: &str) -> Vec<String> {
    text(cmd(c, &[b"CLIENT", b"LIST"]))
        .lines()
        .map(|l| {
            l.split(' ')
                .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
                .unwrap_or_else(|| panic!("no {field} in {l}"))
                .to_string()
        })
        .collect()
}

/// Whether the server closed `c`: a read returns end of stream.
fn closed(c: &mut Conn) -> bool {
    let mut b = [0u8; 1];
    matches!(c.get_mut().read(&mut b), Ok(0) | Err(_))
}

#[test]
fn kill_reaches_clients_on_every_loop() {
    let server = start(Config {
        threads: 2,
        ..config()
    });
    let mut admin = connect(server.addr());
    // 8 clients: the kernel spreads them over both loops (all on one: 2 chances in 256).
    let mut others: Vec<Conn> = (0..8).map(|_| connect(server.addr())).collect();
    let ids: Vec<u64> = others.iter_mut().map(id).collect();
    let all = listed(&mut admin, "id");
    for id in &ids {
        assert!(all.contains(&id.to_string()), "{id} not in {all:?}");
    }
    assert_eq!(all.len(), 9);
    let line = text(cmd(&mut admin, &[b"CLIENT", b"INFO"]));
    assert!(
        // qbuf: the running command's 26 bytes, as Redis counts them.
        line.contains(" flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 ")
            && line.contains(" events=r cmd=client|info user=default redir=-1 resp=2"),
        "{line}"
    );

    // By id: one on each loop, whichever they are.
    let victim = ids[0].to_string();
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"KILL", b"ID", victim.as_bytes()]),
        Reply::Int(1)
    );
    assert!(closed(&mut others[0]));
    // By address, the old form.
    let addr = others[1].get_mut().local_addr().expect("address").to_string();
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"KILL", addr.as_bytes()]),
        Reply::simple("OK")
    );
    assert!(closed(&mut others[1]));
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"KILL", addr.as_bytes()]),
        Reply::error("ERR No such client")
    );
    // By type: the subscriber only.
    assert!(matches!(
        cmd(&mut others[2], &[b"SUBSCRIBE", b"ch"]),
        Reply::Array(_)
    ));
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"KILL", b"TYPE", b"pubsub"]),
        Reply::Int(1)
    );
    assert!(closed(&mut others[2]));
    for c in &mut others[3..] {
        assert_eq!(cmd(c, &[b"PING"]), Reply::simple("PONG"));
    }
    // Everyone, the caller included: it reads its count, then end of stream.
    wait_until("the killed are unlisted", DEADLINE, || {
        listed(&mut admin, "id").len() == 6
    });
    assert_eq!(
        cmd(&mut admin, &[b"CLIENT", b"KILL", b"SKIPME", b"no"]),
        Reply::Int(6)
    );
    assert!(closed(&mut admin));
    for c in &mut others[3..] {
        assert!(closed(c));
    }
    let mut fresh = connect(server.addr());
    wait_until("all gone", DEADLINE, || listed(&mut fresh, "id").len() == 1);
}

#[test]
fn kill_arguments_are_checked_as_redis_does() {
    let server = start(config());
    let mut c = connect(server.addr());
    for (args, want) in [
        (
            &[&b"CLIENT"[..], b"KILL"][..],
            "ERR wrong number of arguments for 'client|kill' command",
        ),
        (
            &[b"CLIENT", b"KILL", b"id", b"10", b"wrong_arg"],
            "ERR syntax error",
        ),
        (
            &[b"CLIENT", b"KILL", b"id", b"str"],
            "ERR client-id should be greater than 0",
        ),
        (
            &[b"CLIENT", b"KILL", b"id", b"-1"],
            "ERR client-id should be greater than 0",
        ),
        (
            &[b"CLIENT", b"KILL", b"id", b"0"],
            "ERR client-id should be greater than 0",
        ),
        (
            &[b"CLIENT", b"KILL", b"type", b"wrong_type"],
            "ERR Unknown client type 'wrong_type'",
        ),
        (
            &[b"CLIENT", b"KILL", b"user", b"wrong_user"],
            "ERR No such user 'wrong_user'",
        ),
        (&[b"CLIENT", b"KILL", b"skipme", b"yes_or_no"], "ERR syntax error"),
    ] {
        assert_eq!(cmd(&mut c, args), Reply::error(want), "{args:?}");
    }
    // Nobody else: nothing killed, the caller skipped.
    assert_eq!(
        cmd(&mut c, &[b"CLIENT", b"KILL", b"TYPE", b"normal"]),
        Reply::Int(0)
    );
    assert_eq!(cmd(&mut c, &[b"PING"]), Reply::simple("PONG"));
}
