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

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

mod common;

use ferry_redis::resp::client::{Reply, ReplyReader};
use ferry_testkit::Scratch;

/// Databases the dataset uses.
const DBS: [usize; 3] = [0, 1, 15];

/// A connection speaking RESP2.
struct Conn {
    stream: TcpStream,
    reader: ReplyReader<TcpStream>,
}

impl Conn {
    fn new(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let reader = ReplyReader::new(stream.try_clone().unwrap());
        Conn { stream, reader }
    }

    fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.stream.write_all(&common::encode(args)).expect("send");
        self.reader.reply().expect("reply")
    }

    /// A command that must not fail.
    fn ok(&mut self, args: &[&[u8]]) -> Reply {
        let r = self.call(args);
        assert!(!matches!(r, Reply::Error(_)), "{:?}: {r:?}", show(args));
        r
    }
}

fn show(args: &[&[u8]]) -> Vec<String> {
    args.iter()
        .map(|a| String::from_utf8_lossy(&a[..a.len().min(40)]).into_owned())
        .collect()
}

/// Bytes from a small deterministic generator (binary, NULs and CRLFs included).
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes the dataset through `c`.
fn fill(c: &mut Conn) {
    for db in DBS {
        c.ok(&[b"SELECT", db.to_string().as_bytes()]);
        let p = |k: &str| format!("{db}:{k}").into_bytes();
        // Strings: integers of each width, text, compressible and incompressible large ones.
        for (k, v) in [
            ("i8", "-7"),
            ("i16", "12345"),
            ("i32", "-2000000000"),
            ("i64", "3000000000000"),
        ] {
            c.ok(&[b"SET", &p(k), v.as_bytes()]);
        }
        c.ok(&[b"SET", &p("text"), b"hello world"]);
        c.ok(&[b"SET", &p("lzf"), "abcdefgh".repeat(5000).as_bytes()]);
        c.ok(&[b"SET", &p("random"), &bytes(1, 70_000)]);
        c.ok(&[b"SET", &bytes(2, 24), &bytes(3, 300)]);
        c.ok(&[b"SET", &p("empty"), b""]);
        // Lists: a small listpack of mixed entries, a quicklist of many nodes.
        c.ok(&[
            b"RPUSH",
            &p("small-list"),
            b"a",
            b"5",
            b"-2",
            b"1000",
            b"70000",
            b"",
            &bytes(4, 100),
        ]);
        let long: Vec<Vec<u8>> = (0..2000)
            .map(|i| format!("element-{i}-{}", "x".repeat(i % 90)).into_bytes())
            .collect();
        let mut args: Vec<&[u8]> = vec![b"RPUSH", b""];
        let key = p("long-list");
        args[1] = &key;
        args.extend(long.iter().map(Vec::as_slice));
        c.ok(&args);
        // Sets: an intset, a set too large for one, strings.
        c.ok(&[b"SADD", &p("intset"), b"3", b"-5", b"100000", b"-9000000000"]);
        let ints: Vec<Vec<u8>> = (0..600).map(|i| (i * 7 - 300).to_string().into_bytes()).collect();
        let key = p("big-intset");
        let mut args: Vec<&[u8]> = vec![b"SADD", &key];
        args.extend(ints.iter().map(Vec::as_slice));
        c.ok(&args);
        c.ok(&[b"SADD", &p("strset"), b"x", b"y", &bytes(5, 80)]);
        // Hashes: a listpack, a hash table (many fields), one with a long value.
        c.ok(&[
            b"HSET",
            &p("small-hash"),
            b"f1",
            b"v1",
            b"f2",
            b"222",
            b"",
            b"empty-field",
        ]);
        let fields: Vec<Vec<u8>> = (0..300).map(|i| format!("field{i}").into_bytes()).collect();
        let key = p("big-hash");
        let mut args: Vec<&[u8]> = vec![b"HSET", &key];
        for f in &fields {
            args.push(f);
            args.push(f);
        }
        c.ok(&args);
        c.ok(&[b"HSET", &p("long-value-hash"), b"f", &bytes(6, 200)]);
        // Sorted sets: a listpack with special scores, a skiplist.
        c.ok(&[
            b"ZADD",
            &p("small-zset"),
            b"1.5",
            b"a",
            b"-0.25",
            b"b",
            b"inf",
            b"c",
            b"-inf",
            b"d",
            b"1e-300",
            b"e",
            b"3",
            b"12345",
        ]);
        let members: Vec<(Vec<u8>, Vec<u8>)> = (0..300)
            .map(|i| {
                (
                    format!("{}", i as f64 / 3.0).into_bytes(),
                    format!("m{i}").into_bytes(),
                )
            })
            .collect();
        let key = p("big-zset");
        let mut args: Vec<&[u8]> = vec![b"ZADD", &key];
        for (s, m) in &members {
            args.push(s);
            args.push(m);
        }
        c.ok(&args);
        // Deadlines far ahead (absolute, so both servers must report the same ones).
        c.ok(&[b"PEXPIREAT", &p("text"), b"4102444800123"]);
        c.ok(&[b"PEXPIREAT", &p("long-list"), b"4102444800456"]);
        c.ok(&[b"PEXPIREAT", &p("small-zset"), b"4102444800789"]);
    }
}

/// One key as both servers must show it: type, value (unordered parts sorted), deadline.
type Dataset = BTreeMap<(usize, Vec<u8>), (String, Vec<Vec<u8>>, i64)>;

fn flat(r: Reply) -> Vec<Vec<u8>> {
    match r {
        Reply::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Reply::Bulk(b) => b,
                other => panic!("not a bulk string: {other:?}"),
            })
            .collect(),
        Reply::Bulk(b) => vec![b],
        other => panic!("not an array: {other:?}"),
    }
}

/// Reads every key of every database through `c`.
fn dump(c: &mut Conn) -> Dataset {
    let mut all = Dataset::new();
    for db in 0..16usize {
        c.ok(&[b"SELECT", db.to_string().as_bytes()]);
        for key in flat(c.ok(&[b"KEYS", b"*"])) {
            let Reply::Simple(kind) = c.ok(&[b"TYPE", &key]) else {
                panic!("TYPE")
            };
            let kind = String::from_utf8(kind).unwrap();
            let mut value = match kind.as_str() {
                "string" => flat(c.ok(&[b"GET", &key])),
                "list" => flat(c.ok(&[b"LRANGE", &key, b"0", b"-1"])),
                "set" => flat(c.ok(&[b"SMEMBERS", &key])),
                "hash" => flat(c.ok(&[b"HGETALL", &key]))
                    .chunks(2)
                    .map(|p| [p[0].as_slice(), b"=", p[1].as_slice()].concat())
                    .collect(),
                "zset" => flat(c.ok(&[b"ZRANGE", &key, b"0", b"-1", b"WITHSCORES"])),
                other => panic!("type {other}"),
            };
            if matches!(kind.as_str(), "set" | "hash") {
                value.sort();
            }
            let Reply::Int(deadline) = c.ok(&[b"PEXPIRETIME", &key]) else {
                panic!("PEXPIRETIME")
            };
            all.insert((db, key), (kind, value, deadline));
        }
    }
    all
}

/// Both datasets equal, key by key; the first difference named.
fn assert_same(expected: &Dataset, found: &Dataset, what: &str) {
    for (k, v) in expected {
        let key = String::from_utf8_lossy(&k.1);
        match found.get(k) {
            None => panic!("{what}: db {} key {key:?} is missing", k.0),
            Some(f) if f != v => panic!(
                "{what}: db {} key {key:?} differs: {} {} elements, deadline {} vs {} {} elements, deadline {}",
                k.0,
                v.0,
                v.1.len(),
                v.2,
                f.0,
                f.1.len(),
                f.2
            ),
            Some(_) => {}
        }
    }
    assert_eq!(found.len(), expected.len(), "{what}: extra keys");
}

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
