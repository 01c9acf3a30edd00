//! The codec's tests: redis-server's bytes read, Ferry's bytes read back, and corrupt or
//! truncated input refused with an error (never a panic).

use std::collections::VecDeque;

use ferry_buf::Pool;
use proptest::prelude::*;

use super::*;
use crate::fields::FieldTable;
use crate::zset::ZSet;

/// `SAVE` of redis-server 7.0.15 after: `SET int 12345`, `SET neg -7`, `SET big 3000000000`,
/// `SET lzf` (100 × `a`, LZF-compressed), `SET plain hello`, `RPUSH list a 5 -2 1000 "long
/// string element here" 70000`, `SADD iset 3 -5 100000`, `SADD sset x y z`, `HSET h f1 v1
/// f2 222`, `ZADD z 1.5 a -2 b 3 c`, `SET ttl v` + `PEXPIREAT ttl 4102444800000`, and in
/// database 3 `SET other db3`.
const REDIS_DUMP: &[u8] = include_bytes!("fixtures/redis-7.0.15.rdb");

fn limits() -> Limits {
    Limits {
        databases: 16,
        max_string_len: 1 << 20,
        max_elements: 1 << 20,
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A value in a comparable form: sorted members for sets and hashes.
fn show(v: &Value) -> String {
    match v {
        Value::Str(s) => format!("string {}", text(s)),
        Value::List(l) => format!("list {:?}", l.iter().map(|b| text(b)).collect::<Vec<_>>()),
        Value::Set(s) => {
            let mut m: Vec<_> = s.iter().map(|(m, ())| text(m)).collect();
            m.sort();
            format!("set {m:?}")
        }
        Value::Hash(h) => {
            let mut m: Vec<_> = h.iter().map(|(f, v)| (text(f), text(v))).collect();
            m.sort();
            format!("hash {m:?}")
        }
        Value::ZSet(z) => format!(
            "zset {:?}",
            z.iter().map(|(m, s)| (text(m), s)).collect::<Vec<_>>()
        ),
    }
}

fn find<'s>(s: &'s Snapshot, db: usize, key: &str) -> &'s Record {
    s.dbs[db]
        .iter()
        .find(|r| &*r.key == key.as_bytes())
        .unwrap_or_else(|| panic!("{key} in db {db}"))
}

#[test]
fn reads_what_redis_server_7_0_15_writes() {
    let s = decode(REDIS_DUMP, &ferry_testkit::pool(), &limits()).unwrap();
    assert_eq!((s.dbs[0].len(), s.dbs[3].len(), s.len()), (11, 1, 12));
    let v = |k| show(&find(&s, 0, k).value);
    assert_eq!(v("int"), "string 12345");
    assert_eq!(v("neg"), "string -7");
    assert_eq!(v("big"), "string 3000000000");
    assert_eq!(v("lzf"), format!("string {}", "a".repeat(100)));
    assert_eq!(v("plain"), "string hello");
    assert_eq!(
        v("list"),
        r#"list ["a", "5", "-2", "1000", "long string element here", "70000"]"#
    );
    assert_eq!(v("iset"), r#"set ["-5", "100000", "3"]"#);
    assert_eq!(v("sset"), r#"set ["x", "y", "z"]"#);
    assert_eq!(v("h"), r#"hash [("f1", "v1"), ("f2", "222")]"#);
    assert_eq!(v("z"), r#"zset [("b", -2.0), ("a", 1.5), ("c", 3.0)]"#);
    assert_eq!(find(&s, 0, "ttl").deadline, Some(4_102_444_800_000));
    assert_eq!(find(&s, 0, "int").deadline, None);
    assert_eq!(show(&find(&s, 3, "other").value), "string db3");
}

/// One key of each type, with and without deadlines, in two databases.
fn sample(pool: &Pool) -> Snapshot {
    let b = |s: &str| pool.copy_from(s.as_bytes()).unwrap();
    let mut set = FieldTable::default();
    let mut hash = FieldTable::default();
    for i in 0..300 {
        set.insert(b(&format!("m{i}")), ());
        hash.insert(b(&format!("f{i}")), b(&"v".repeat(i)));
    }
    let zset = ZSet::collect(vec![(b("a"), -0.5), (b("b"), f64::INFINITY), (b("c"), 1e300)]);
    let record = |k: &str, value, deadline| Record {
        key: k.as_bytes().into(),
        value,
        deadline,
    };
    let mut dbs = vec![Vec::new(); 16];
    dbs[0] = vec![
        record("s", Value::Str(b(&"x".repeat(70_000))), None),
        record(
            "l",
            Value::List(VecDeque::from([b(""), b("1"), b("two")])),
            Some(1 << 45),
        ),
        record("set", Value::Set(set), None),
        record("h", Value::Hash(hash), None),
    ];
    dbs[15] = vec![record("z", Value::ZSet(zset), Some(5))];
    Snapshot { dbs }
}

fn shown(s: &Snapshot) -> Vec<(usize, String, String, Option<u64>)> {
    let mut all: Vec<_> = s
        .dbs
        .iter()
        .enumerate()
        .flat_map(|(i, rs)| {
            rs.iter()
                .map(move |r| (i, text(&r.key), show(&r.value), r.deadline))
        })
        .collect();
    all.sort();
    all
}

#[test]
fn round_trip_is_identity() {
    let pool = ferry_testkit::pool();
    let s = sample(&pool);
    let mut bytes = Vec::new();
    encode(&s, 1_700_000_000_000, &mut bytes);
    assert!(bytes.starts_with(b"REDIS0010"));
    let back = decode(&bytes, &pool, &limits()).unwrap();
    assert_eq!(shown(&back), shown(&s));
}

#[test]
fn every_truncation_and_a_flipped_byte_are_errors() {
    let pool = ferry_testkit::pool();
    let mut bytes = Vec::new();
    encode(&sample(&pool), 0, &mut bytes);
    for cut in [0, 5, 9, 20, bytes.len() / 2, bytes.len() - 9, bytes.len() - 1] {
        assert!(decode(&bytes[..cut], &pool, &limits()).is_err(), "cut at {cut}");
    }
    let mut flipped = bytes.clone();
    let i = flipped.len() - 20;
    flipped[i] ^= 1;
    assert!(matches!(
        decode(&flipped, &pool, &limits()),
        Err(RdbError::Checksum { .. })
    ));
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(matches!(
        decode(&trailing, &pool, &limits()),
        Err(RdbError::Corrupt { .. })
    ));
}

#[test]
fn limits_and_unsupported_types_name_what_and_where() {
    let pool = ferry_testkit::pool();
    let mut bytes = Vec::new();
    encode(&sample(&pool), 0, &mut bytes);
    let tight = Limits {
        max_elements: 10,
        ..limits()
    };
    let e = decode(&bytes, &pool, &tight).unwrap_err();
    assert!(
        matches!(
            e,
            RdbError::Limit {
                found: 300,
                limit: 10,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("(key \"set\")") || e.to_string().contains("(key \"h\")"),
        "{e}"
    );
    let few = Limits {
        databases: 4,
        ..limits()
    };
    let e = decode(&bytes, &pool, &few).unwrap_err();
    assert!(e.to_string().contains("database 15 is out of range"), "{e}");

    // A stream key (type 15) after the header.
    let mut stream = b"REDIS0010".to_vec();
    stream.extend_from_slice(&[15, 1, b'k']);
    let e = decode(&stream, &pool, &limits()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at byte 9 (key \"k\"): a stream is not supported by Ferry"
    );
    assert!(matches!(
        decode(b"REDIS0011", &pool, &limits()),
        Err(RdbError::Version(11))
    ));
    assert!(matches!(
        decode(b"RDB", &pool, &limits()),
        Err(RdbError::Truncated { .. })
    ));
}

#[test]
fn a_huge_count_is_refused_before_allocating() {
    let pool = ferry_testkit::pool();
    // A list claiming 2^32-1 elements in a 20-byte file.
    let mut b = b"REDIS0010".to_vec();
    b.extend_from_slice(&[1, 1, b'k', 0x80, 0xff, 0xff, 0xff, 0xff]);
    let e = decode(
        &b,
        &pool,
        &Limits {
            max_elements: usize::MAX,
            ..limits()
        },
    )
    .unwrap_err();
    assert!(matches!(e, RdbError::Truncated { .. }), "{e}");
}

proptest! {
    /// Any bytes after a valid header: an error or a snapshot, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let pool = ferry_testkit::pool();
        let mut b = b"REDIS0010".to_vec();
        b.extend_from_slice(&body);
        let _ = decode(&b, &pool, &limits());
    }

    /// Random corruption of redis-server's file: an error or a snapshot, never a panic.
    #[test]
    fn corrupted_redis_dump_never_panics(at in 0..REDIS_DUMP.len(), byte in any::<u8>()) {
        let pool = ferry_testkit::pool();
        let mut b = REDIS_DUMP.to_vec();
        b[at] = byte;
        // Checksums off (0), so the corruption reaches the value parsers.
        let n = b.len();
        b[n - 8..].fill(0);
        let _ = decode(&b, &pool, &limits());
    }
}
