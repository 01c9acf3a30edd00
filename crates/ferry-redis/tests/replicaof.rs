//! `REPLICAOF`: `ferry redis` as a replica of redis-server 7.0 and of another `ferry redis`.
//! It loads the master's dataset (the RDB `SYNC` sends), then applies the master's writes as
//! they happen, in every database; its clients get `READONLY` for writes until `REPLICAOF NO
//! ONE`, which keeps the data. A master nobody listens on leaves the replica retrying, link
//! down. Every wait is on what the servers report (`INFO replication`, a marker key), with a
//! hang guard.

mod common;

use std::net::{SocketAddr, TcpListener};

use common::{Conn, cmd, config, connect, start};
use ferry_redis::resp::client::Reply;
use ferry_testkit::{DEADLINE, wait_until};

fn run(c: &mut Conn, line: &str) -> Reply {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    cmd(c, &words)
}

fn info_replication(c: &mut Conn) -> String {
    match run(c, "INFO replication") {
        Reply::Bulk(b) => String::from_utf8(b).expect("UTF-8"),
        other => panic!("INFO: {other:?}"),
    }
}

/// What a client reads of the dataset, for comparing two servers.
fn dataset(c: &mut Conn) -> Vec<Reply> {
    let mut all = Vec::new();
    for db in ["0", "1"] {
        run(c, &format!("SELECT {db}"));
        for line in [
            "DBSIZE",
            "GET s",
            "HMGET h f1 f2 f3",
            "LRANGE l 0 -1",
            "ZRANGE z 0 -1 WITHSCORES",
            "SCARD set",
            "SMISMEMBER set a b c d",
            "GET gone",
            "GET marker",
        ] {
            all.push(run(c, line));
        }
    }
    run(c, "SELECT 0");
    all
}

/// Writes on `master`, in two databases; the last sets `marker` to `round`.
fn writes(master: &mut Conn, round: u32) {
    for line in [
        format!("SET s v{round}"),
        format!("HSET h f{round} {round}"),
        format!("RPUSH l {round}"),
        format!("ZADD z {round} m{round}"),
        "SADD set a b c".into(),
        "SET gone x".into(),
        "DEL gone".into(),
        "SELECT 1".into(),
        format!("SET s one{round}"),
        format!("INCRBY n {round}"),
        "SELECT 0".into(),
        format!("SET marker {round}"),
    ] {
        assert!(!matches!(run(master, &line), Reply::Error(_)), "{line}");
    }
}

fn marker_is(c: &mut Conn, round: u32) -> bool {
    run(c, "GET marker") == Reply::Bulk(round.to_string().into_bytes())
}

/// Makes `replica` follow `master` and checks the whole life of the link.
fn follow_and_leave(master_addr: SocketAddr, mut master: Conn) {
    writes(&mut master, 1);
    let replica = start(config());
    let mut r = connect(replica.addr());
    let port = master_addr.port().to_string();
    assert_eq!(
        run(&mut r, &format!("REPLICAOF 127.0.0.1 {port}")),
        Reply::simple("OK")
    );
    assert_eq!(
        run(&mut r, &format!("REPLICAOF 127.0.0.1 {port}")),
        Reply::simple("OK Already connected to specified master")
    );
    wait_until("the RDB is loaded", DEADLINE, || marker_is(&mut r, 1));
    assert!(info_replication(&mut r).contains("role:slave\r\nmaster_host:127.0.0.1\r\n"));
    assert!(info_replication(&mut r).contains("master_link_status:up"));
    assert_eq!(dataset(&mut r), dataset(&mut master));
    // The stream: writes after the RDB.
    writes(&mut master, 2);
    wait_until("the writes arrive", DEADLINE, || marker_is(&mut r, 2));
    assert_eq!(dataset(&mut r), dataset(&mut master));
    assert_eq!(
        run(&mut r, "SET x 1"),
        Reply::error("READONLY You can't write against a read only replica.")
    );
    assert_eq!(run(&mut r, "MULTI"), Reply::simple("OK"));
    assert!(matches!(run(&mut r, "SET x 1"), Reply::Error(_)));
    assert!(matches!(run(&mut r, "EXEC"), Reply::Error(e) if e.starts_with(b"EXECABORT")));
    // Promoted: the data stays, writes are its own again, the master's no longer arrive.
    assert_eq!(run(&mut r, "REPLICAOF NO ONE"), Reply::simple("OK"));
    assert!(info_replication(&mut r).contains("role:master"));
    assert_eq!(run(&mut r, "SET x 1"), Reply::simple("OK"));
    writes(&mut master, 3);
    assert_eq!(run(&mut master, "GET marker"), Reply::Bulk(b"3".to_vec()));
    assert_eq!(run(&mut r, "GET marker"), Reply::Bulk(b"2".to_vec()));
}

#[test]
fn follows_redis_server() {
    let Some(path) = common::redis_server_7_0("follows_redis_server") else {
        return;
    };
    // Its own directory: a SYNC makes redis-server save dump.rdb there, which another
    // redis-server started in the same directory would load.
    let dir = ferry_testkit::Scratch::new("replicaof-redis-master");
    let redis = common::start_redis_server(&path, &dir.0, &[], DEADLINE);
    follow_and_leave(redis.addr(), connect(redis.addr()));
}

#[test]
fn follows_ferry() {
    let master = start(config());
    follow_and_leave(master.addr(), connect(master.addr()));
}

#[test]
fn an_unreachable_master_leaves_it_retrying() {
    // A port nobody listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = start(config());
    let mut c = connect(server.addr());
    assert_eq!(
        run(&mut c, &format!("SLAVEOF 127.0.0.1 {port}")),
        Reply::simple("OK")
    );
    let info = info_replication(&mut c);
    assert!(
        info.contains("role:slave") && info.contains("master_link_status:down"),
        "{info}"
    );
    assert_eq!(
        run(&mut c, "SET x 1"),
        Reply::error("READONLY You can't write against a read only replica.")
    );
    assert_eq!(run(&mut c, "GET x"), Reply::NullBulk);
    assert_eq!(
        run(&mut c, "REPLICAOF 127.0.0.1 x"),
        Reply::error("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&mut c, "REPLICAOF NO ONE"), Reply::simple("OK"));
    assert_eq!(run(&mut c, "SET x 1"), Reply::simple("OK"));
    // The server stops while its follower waits: the handle's drop joins it.
    assert_eq!(
        run(&mut c, &format!("REPLICAOF 127.0.0.1 {port}")),
        Reply::simple("OK")
    );
    server.stop().expect("a clean stop");
}
