//! RDB interop with the real `redis-server` 7.0, both ways, as separate processes:
//! redis-server started on a `dump.rdb` that Ferry's `SAVE` wrote holds the same dataset,
//! and Ferry started on a `dump.rdb` that redis-server's `SAVE` wrote holds the same dataset.
//!
//! The dataset covers every type Ferry has, in the sizes that make redis-server pick each of
//! its encodings (integer and LZF-compressed strings, listpacks, intsets, quicklists of
//! several nodes, hash tables, skiplists), binary keys and values, special scores, deadlines,
//! and several databases. The comparison reads both servers with commands, key by key:
//! `TYPE`, the whole value (`GET`, `LRANGE`, `SMEMBERS`, `HGETALL`, `ZRANGE ... WITHSCORES`;
//! unordered replies sorted) and the absolute deadline (`PEXPIRETIME`, which the file holds
//! exactly).
//!
//! The reference is `redis-server` from `PATH` (or `$FERRY_REDIS_SERVER`), version 7.0; without
//! it the tests print why and return, unless `FERRY_REQUIRE_TOOLS=1` (then they fail).

use std::path::Path;
use std::time::Duration;

mod common;

use common::dataset::{Conn, assert_same, dump, fill, flat};
use ferry_redis::resp::client::Reply;
use ferry_testkit::Scratch;

/// redis-server on a free port, with `dir` as its directory (it loads `dump.rdb` from there).
fn start_redis(path: &Path, dir: &Path) -> ferry_launch::Server {
    common::start_redis_server(path, dir, &["--dbfilename", "dump.rdb"], Duration::from_secs(30))
}

fn start_ferry(dir: &Path) -> ferry_redis::ServerHandle {
    common::start(ferry_redis::Config {
        dir: dir.to_owned(),
        ..common::config()
    })
}

#[test]
fn redis_server_loads_what_ferry_saves() {
    let Some(redis) = common::redis_server_7_0("redis_server_loads_what_ferry_saves") else {
        return;
    };
    let dir = Scratch::new("rdb-ferry-to-redis");
    let ferry = start_ferry(&dir.0);
    let mut f = Conn::new(ferry.addr());
    fill(&mut f);
    assert_eq!(f.call(&[b"SAVE"]), Reply::simple("OK"));
    let expected = dump(&mut f);
    assert!(expected.len() > 40, "the dataset is written");
    drop(f);
    drop(ferry);

    let server = start_redis(&redis, &dir.0);
    let found = dump(&mut Conn::new(server.addr()));
    assert_same(&expected, &found, "redis-server on Ferry's dump.rdb");
}

#[test]
fn ferry_loads_what_redis_server_saves() {
    let Some(redis) = common::redis_server_7_0("ferry_loads_what_redis_server_saves") else {
        return;
    };
    let dir = Scratch::new("rdb-redis-to-ferry");
    let server = start_redis(&redis, &dir.0);
    let mut r = Conn::new(server.addr());
    fill(&mut r);
    // The encodings this test means to cover, as redis-server chose them.
    for (key, encoding) in [
        ("0:i16", "int"),
        ("0:lzf", "raw"),
        // Redis 7.0 keeps every list as a quicklist (of listpack nodes).
        ("0:small-list", "quicklist"),
        ("0:long-list", "quicklist"),
        ("0:intset", "intset"),
        ("0:big-intset", "hashtable"),
        ("0:small-hash", "listpack"),
        ("0:long-value-hash", "hashtable"),
        ("0:small-zset", "listpack"),
        ("0:big-zset", "skiplist"),
    ] {
        r.ok(&[b"SELECT", b"0"]);
        let found = r.ok(&[b"OBJECT", b"ENCODING", key.as_bytes()]);
        assert_eq!(found, Reply::Bulk(encoding.as_bytes().to_vec()), "{key}");
    }
    assert_eq!(r.call(&[b"SAVE"]), Reply::simple("OK"));
    let expected = dump(&mut r);
    drop(r);
    drop(server);

    let ferry = start_ferry(&dir.0);
    let found = dump(&mut Conn::new(ferry.addr()));
    assert_same(&expected, &found, "Ferry on redis-server's dump.rdb");
}

/// Moves every key of `from` to `to` with `DUMP` and `RESTORE ... ABSTTL` (the deadline from
/// `PEXPIRETIME`).
fn dump_restore(from: &mut Conn, to: &mut Conn) -> usize {
    let mut moved = 0;
    for db in 0..16usize {
        let n = db.to_string();
        from.ok(&[b"SELECT", n.as_bytes()]);
        to.ok(&[b"SELECT", n.as_bytes()]);
        for key in flat(from.ok(&[b"KEYS", b"*"])) {
            let Reply::Bulk(payload) = from.ok(&[b"DUMP", &key]) else {
                panic!("DUMP")
            };
            let Reply::Int(deadline) = from.ok(&[b"PEXPIRETIME", &key]) else {
                panic!("PEXPIRETIME")
            };
            let ttl = deadline.max(0).to_string();
            to.ok(&[b"RESTORE", &key, ttl.as_bytes(), &payload, b"ABSTTL"]);
            moved += 1;
        }
    }
    moved
}

#[test]
fn dump_payloads_restore_across_servers() {
    let Some(redis) = common::redis_server_7_0("dump_payloads_restore_across_servers") else {
        return;
    };
    let dir = Scratch::new("rdb-dump-restore");
    let server = start_redis(&redis, &dir.0);
    let ferry = start_ferry(&dir.0);
    let (mut r, mut f) = (Conn::new(server.addr()), Conn::new(ferry.addr()));
    fill(&mut r);
    let expected = dump(&mut r);
    assert_eq!(dump_restore(&mut r, &mut f), expected.len());
    assert_same(
        &expected,
        &dump(&mut f),
        "Ferry after RESTORE of redis-server's DUMPs",
    );
    r.ok(&[b"FLUSHALL"]);
    assert_eq!(dump_restore(&mut f, &mut r), expected.len());
    assert_same(
        &expected,
        &dump(&mut r),
        "redis-server after RESTORE of Ferry's DUMPs",
    );
}
