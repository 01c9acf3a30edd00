//! The dataset the interop tests write to both servers (every type Ferry has, in the sizes
//! that make redis-server pick each of its encodings, binary keys and values, special scores,
//! deadlines, several databases), and the key-by-key comparison of two servers' contents.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ferry_redis::resp::client::{Reply, ReplyReader};

/// Databases the dataset uses.
pub const DBS: [usize; 3] = [0, 1, 15];

/// A connection speaking RESP2.
pub struct Conn {
    stream: TcpStream,
    reader: ReplyReader<TcpStream>,
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let reader = ReplyReader::new(stream.try_clone().unwrap());
        Conn { stream, reader }
    }

    /// A request whose connection may fail (a server being killed).
    pub fn try_call(&mut self, args: &[&[u8]]) -> std::io::Result<Reply> {
        self.stream.write_all(&super::encode(args))?;
        self.reader.reply()
    }

    pub fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.stream.write_all(&super::encode(args)).expect("send");
        self.reader.reply().expect("reply")
    }

    /// A command that must not fail.
    pub fn ok(&mut self, args: &[&[u8]]) -> Reply {
        let r = self.call(args);
        assert!(!matches!(r, Reply::Error(_)), "{:?}: {r:?}", show(args));
        r
    }
}

pub fn show(args: &[&[u8]]) -> Vec<String> {
    args.iter()
        .map(|a| String::from_utf8_lossy(&a[..a.len().min(40)]).into_owned())
        .collect()
}

/// Bytes from a small deterministic generator (binary, NULs and CRLFs included).
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
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
pub fn fill(c: &mut Conn) {
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
pub type Dataset = BTreeMap<(usize, Vec<u8>), (String, Vec<Vec<u8>>, i64)>;

pub fn flat(r: Reply) -> Vec<Vec<u8>> {
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
pub fn dump(c: &mut Conn) -> Dataset {
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
pub fn assert_same(expected: &Dataset, found: &Dataset, what: &str) {
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
