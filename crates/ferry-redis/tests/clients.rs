//! Ferry's Redis server driven by unchanged Redis clients: `redis-cli` (commands, `-x`, `-3`,
//! `-a`, `--pipe`), `redis-benchmark`, and redis-py with and without hiredis
//! (`tests/redis_py.py`); then raw RESP over TCP for what no tool sends on purpose: a value
//! overwritten or deleted while a reply still references it, protocol errors, clients that
//! never read their replies or overfill their query buffer, and `maxmemory`.
//!
//! Every test starts its own server on an ephemeral port. A missing tool skips its test with a
//! printed reason, or fails it under `FERRY_REQUIRE_TOOLS=1` (CI). Every child process and
//! every socket has a hang guard: a server that stops answering fails the test, it does not
//! hang CI. The expected outputs were checked against a real redis-server 7.0.15.

mod common;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::{Output, config, encode, require_python_redis, require_tool, run, start};
use ferry_net::Mode;
use ferry_redis::resp::client::{Reply, ReplyReader};
use ferry_redis::{Config, ServerHandle};
use ferry_testkit::{DEADLINE, Rng};

/// Hang guard for one `redis-cli` run.
const CLI_LIMIT: Duration = Duration::from_secs(30);
/// Hang guard for a `redis-benchmark` run or the redis-py script (a debug build serves them).
const LONG_LIMIT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------------------------
// A RESP2 client over a plain socket (replies read by ferry_redis::resp::client).

/// Runs of equal bytes, e.g. `[65 x 65536]`, or `[65 x 100, 66 x 12, ...]`.
fn summary(b: &[u8]) -> String {
    let mut runs: Vec<(u8, usize)> = Vec::new();
    for &x in b {
        match runs.last_mut() {
            Some((y, n)) if *y == x => *n += 1,
            _ => runs.push((x, 1)),
        }
    }
    let shown: Vec<String> = runs.iter().take(6).map(|(x, n)| format!("{x} x {n}")).collect();
    let more = if runs.len() > 6 {
        format!(", ... {} runs", runs.len())
    } else {
        String::new()
    };
    format!("[{}{more}]", shown.join(", "))
}

fn ok() -> Reply {
    Reply::simple("OK")
}

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

fn bulks(items: &[&[u8]]) -> Reply {
    Reply::Array(items.iter().map(|b| bulk(b)).collect())
}

/// A blocking RESP2 connection; every read and write has the hang guard [`DEADLINE`].
struct Resp {
    r: ReplyReader<TcpStream>,
}

impl Resp {
    fn connect(addr: SocketAddr) -> Resp {
        let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        s.set_read_timeout(Some(DEADLINE)).expect("read timeout");
        s.set_write_timeout(Some(DEADLINE)).expect("write timeout");
        s.set_nodelay(true).expect("nodelay");
        Resp {
            r: ReplyReader::new(s),
        }
    }

    /// Writes `bytes` (one `write_all`: a pipeline arrives as one stream of requests).
    fn send(&mut self, bytes: &[u8]) {
        self.r.get_mut().write_all(bytes).expect("write requests");
    }

    fn try_send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.r.get_mut().write_all(bytes)
    }

    fn read(&mut self) -> Reply {
        self.r.reply().unwrap_or_else(|e| panic!("reading a reply: {e}"))
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        self.send(&encode(args));
        self.read()
    }

    /// Everything until the server closes the connection; an error if it does not within the
    /// hang guard (a reset counts as closed).
    fn read_until_closed(&mut self) -> io::Result<Vec<u8>> {
        let mut all = self.r.take_buffered();
        let mut chunk = vec![0; 64 << 10];
        loop {
            match self.r.get_mut().read(&mut chunk) {
                Ok(0) => return Ok(all),
                Ok(n) => all.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(all),
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether `e` says the peer closed the connection.
fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// The pool's buffers back at `baseline` once the server has processed the disconnects
/// (polled, with the hang guard as the only deadline).
fn assert_pool_back_to(server: &ServerHandle, baseline: usize, what: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let now = server.pool().stats();
        if now.buffers_outstanding() == baseline {
            return;
        }
        if Instant::now() > deadline {
            let held: Vec<String> = now
                .classes
                .iter()
                .filter(|c| c.buffers_outstanding > 0)
                .map(|c| format!("{} x {} B", c.buffers_outstanding, c.class))
                .collect();
            panic!(
                "{what}: {} pool buffers outstanding {DEADLINE:?} after every client left and FLUSHALL, \
                 {baseline} right after start (a leak, or a reply's reference never released): {}",
                now.buffers_outstanding(),
                held.join(", ")
            );
        }
        thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------------------------
// redis-cli

fn redis_cli(cli: &Path, addr: SocketAddr, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new(cli);
    cmd.args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()]);
    cmd.args(args);
    run(&format!("redis-cli {}", args.join(" ")), cmd, stdin, CLI_LIMIT)
}

/// `redis-cli --no-raw ARGS` must print exactly `want` (and, unless it is an error reply,
/// exit with success and print nothing on stderr).
fn cli_expect(cli: &Path, addr: SocketAddr, args: &[&str], want: &str) {
    let mut all = vec!["--no-raw"];
    all.extend_from_slice(args);
    let out = redis_cli(cli, addr, &all, b"");
    assert_eq!(
        out.out(),
        want,
        "redis-cli {}: {}",
        args.join(" "),
        out.describe()
    );
    if !want.starts_with("(error)") {
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "redis-cli {}: {}",
            args.join(" "),
            out.describe()
        );
    }
}

/// `redis-cli ARGS` prints `(integer) N` with `N` in `range`.
fn cli_integer_in(cli: &Path, addr: SocketAddr, args: &[&str], range: std::ops::RangeInclusive<i64>) {
    let mut all = vec!["--no-raw"];
    all.extend_from_slice(args);
    let out = redis_cli(cli, addr, &all, b"");
    let n: Option<i64> = out
        .out()
        .strip_prefix("(integer) ")
        .and_then(|s| s.trim_end().parse().ok());
    assert!(
        n.is_some_and(|n| range.contains(&n)),
        "redis-cli {}: want an integer in {range:?}: {}",
        args.join(" "),
        out.describe()
    );
}

/// How `redis-cli --no-raw` prints a bulk string (its `sdscatrepr`).
fn cli_repr(b: &[u8]) -> String {
    let mut s = String::from("\"");
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            7 => s.push_str("\\a"),
            8 => s.push_str("\\b"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push('"');
    s
}

fn check_redis_cli_commands(cli: &Path, addr: SocketAddr) {
    let wrongtype = "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n";
    let cases: &[(&[&str], &str)] = &[
        (&["flushall"], "OK\n"),
        (&["ping"], "PONG\n"),
        (&["ping", "hello there"], "\"hello there\"\n"),
        (&["echo", "h\u{e9}llo"], "\"h\\xc3\\xa9llo\"\n"),
        (&["set", "k", "v"], "OK\n"),
        (&["get", "k"], "\"v\"\n"),
        (&["get", "nokey"], "(nil)\n"),
        (&["set", "k", "v2", "nx"], "(nil)\n"),
        (&["set", "k", "v3", "xx", "get"], "\"v\"\n"),
        (&["getset", "k", "v"], "\"v3\"\n"),
        (&["append", "k", "w"], "(integer) 2\n"),
        (&["strlen", "k"], "(integer) 2\n"),
        (&["setnx", "k", "x"], "(integer) 0\n"),
        (&["getdel", "k"], "\"vw\"\n"),
        (&["exists", "k"], "(integer) 0\n"),
        (&["incr", "n"], "(integer) 1\n"),
        (&["incrby", "n", "41"], "(integer) 42\n"),
        (&["decr", "n"], "(integer) 41\n"),
        (&["decrby", "n", "50"], "(integer) -9\n"),
        (&["mset", "a", "1", "b", "2"], "OK\n"),
        (&["mget", "a", "nokey", "b"], "1) \"1\"\n2) (nil)\n3) \"2\"\n"),
        (&["rpush", "l", "a", "b", "c"], "(integer) 3\n"),
        (&["lpush", "l", "z"], "(integer) 4\n"),
        (
            &["lrange", "l", "0", "-1"],
            "1) \"z\"\n2) \"a\"\n3) \"b\"\n4) \"c\"\n",
        ),
        (&["lrange", "nolist", "0", "-1"], "(empty array)\n"),
        (&["lpop", "l"], "\"z\"\n"),
        (&["rpop", "l", "2"], "1) \"c\"\n2) \"b\"\n"),
        (&["rpush", "l", "d"], "(integer) 2\n"),
        (&["llen", "l"], "(integer) 2\n"),
        (&["lindex", "l", "-1"], "\"d\"\n"),
        (&["lindex", "l", "5"], "(nil)\n"),
        (&["lset", "l", "0", "A"], "OK\n"),
        (&["lset", "l", "9", "A"], "(error) ERR index out of range\n"),
        (&["ltrim", "l", "0", "0"], "OK\n"),
        (&["lrange", "l", "0", "-1"], "1) \"A\"\n"),
        (&["type", "l"], "list\n"),
        (&["type", "a"], "string\n"),
        (&["type", "nokey"], "none\n"),
        (&["lpush", "a", "x"], wrongtype),
        (&["get", "l"], wrongtype),
        (&["incr", "l"], wrongtype),
        (&["incr", "a"], "(integer) 2\n"),
        (&["set", "s", "abc"], "OK\n"),
        (
            &["incr", "s"],
            "(error) ERR value is not an integer or out of range\n",
        ),
        (&["set", "s", "9223372036854775807"], "OK\n"),
        (
            &["incr", "s"],
            "(error) ERR increment or decrement would overflow\n",
        ),
        (&["set", "k", "v", "nx", "xx"], "(error) ERR syntax error\n"),
        (
            &["set", "k", "v", "ex", "0"],
            "(error) ERR invalid expire time in 'set' command\n",
        ),
        (
            &["get"],
            "(error) ERR wrong number of arguments for 'get' command\n",
        ),
        (
            &["nosuchcmd", "a", "b"],
            "(error) ERR unknown command 'nosuchcmd', with args beginning with: 'a' 'b' \n",
        ),
        (&["ttl", "a"], "(integer) -1\n"),
        (&["ttl", "nokey"], "(integer) -2\n"),
        (&["pttl", "nokey"], "(integer) -2\n"),
        (&["expire", "a", "100"], "(integer) 1\n"),
        (&["expire", "nokey", "100"], "(integer) 0\n"),
        (&["pexpire", "b", "200000"], "(integer) 1\n"),
        (&["set", "e", "v", "ex", "300"], "OK\n"),
        (&["exists", "a", "b", "nokey", "a"], "(integer) 3\n"),
        (&["keys", "l*"], "1) \"l\"\n"),
        (&["keys", "nomatch*"], "(empty array)\n"),
        (&["dbsize"], "(integer) 6\n"),
        (&["select", "0"], "OK\n"),
        (&["client", "setname", "cli"], "OK\n"),
        (&["config", "get", "no-such-parameter"], "(empty array)\n"),
    ];
    for (args, want) in cases {
        cli_expect(cli, addr, args, want);
    }
    cli_integer_in(cli, addr, &["ttl", "a"], 1..=100);
    cli_integer_in(cli, addr, &["pttl", "b"], 1..=200_000);
    cli_integer_in(cli, addr, &["ttl", "e"], 1..=300);
    cli_integer_in(cli, addr, &["client", "id"], 1..=i64::MAX);
    for (args, want) in [
        (&["persist", "a"][..], "(integer) 1\n"),
        (&["ttl", "a"], "(integer) -1\n"),
        (&["del", "a", "b", "nokey"], "(integer) 2\n"),
        (&["unlink", "e", "s"], "(integer) 2\n"),
        (&["flushdb"], "OK\n"),
        (&["dbsize"], "(integer) 0\n"),
    ] {
        cli_expect(cli, addr, args, want);
    }

    // Binary-safe values through -x (the last argument read from stdin): all 256 byte values,
    // then 100 KiB of random bytes (a value the server keeps in place and sends by reference).
    let every: Vec<u8> = (0..=255).collect();
    let mut rng = Rng::new(11);
    let big = rng.bytes(100 << 10);
    for (key, value) in [("bin", &every), ("big", &big)] {
        let out = redis_cli(cli, addr, &["-x", "set", key], value);
        assert_eq!(out.out(), "OK\n", "redis-cli -x set {key}: {}", out.describe());
        // Raw output: the value's bytes then a newline.
        let out = redis_cli(cli, addr, &["--raw", "get", key], b"");
        let mut want = value.clone();
        want.push(b'\n');
        assert!(
            out.stdout == want,
            "redis-cli --raw get {key}: {} bytes, want {} ({})",
            out.stdout.len(),
            want.len(),
            summary(&out.stdout)
        );
        cli_expect(
            cli,
            addr,
            &["strlen", key],
            &format!("(integer) {}\n", value.len()),
        );
    }
    cli_expect(cli, addr, &["get", "bin"], &format!("{}\n", cli_repr(&every)));
    cli_expect(cli, addr, &["rpush", "binl", "a\tb\"c\\"], "(integer) 1\n");
    cli_expect(
        cli,
        addr,
        &["lrange", "binl", "0", "-1"],
        "1) \"a\\tb\\\"c\\\\\"\n",
    );

    // RESP3: redis-cli -3 sends HELLO 3 first; maps and RESP3 nulls print their own way.
    let out = redis_cli(cli, addr, &["-3", "--no-raw", "hello", "3"], b"");
    let text = out.out();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "redis-cli -3 hello 3: {}",
        out.describe()
    );
    assert_eq!(lines.len(), 7, "redis-cli -3 hello 3: {}", out.describe());
    assert!(
        lines[0].starts_with("1# \"server\" => \""),
        "HELLO server: {text}"
    );
    assert!(
        lines[1].starts_with("2# \"version\" => \""),
        "HELLO version: {text}"
    );
    assert_eq!(lines[2], "3# \"proto\" => (integer) 3", "HELLO proto: {text}");
    assert!(
        lines[3].starts_with("4# \"id\" => (integer) "),
        "HELLO id: {text}"
    );
    assert_eq!(
        lines[4..],
        [
            "5# \"mode\" => \"standalone\"",
            "6# \"role\" => \"master\"",
            "7# \"modules\" => (empty array)"
        ],
        "{text}"
    );
    cli_expect(cli, addr, &["-3", "get", "nokey"], "(nil)\n");
    cli_expect(cli, addr, &["-3", "mset", "x", "1", "y", "2"], "OK\n");
    cli_expect(
        cli,
        addr,
        &["-3", "mget", "x", "nokey", "y"],
        "1) \"1\"\n2) (nil)\n3) \"2\"\n",
    );
    cli_expect(cli, addr, &["-3", "lpop", "nolist", "2"], "(nil)\n");
    cli_expect(
        cli,
        addr,
        &["-3", "lrange", "binl", "0", "-1"],
        "1) \"a\\tb\\\"c\\\\\"\n",
    );
    cli_expect(cli, addr, &["-3", "incr", "x"], "(integer) 2\n");
    cli_expect(cli, addr, &["-3", "lpush", "x", "a"], wrongtype);
    cli_expect(
        cli,
        addr,
        &["-3", "hello", "4"],
        "(error) NOPROTO unsupported protocol version\n",
    );
}

/// `redis-cli` against a server started with the password `s3cret`.
fn check_redis_cli_auth(cli: &Path, addr: SocketAddr) {
    let noauth = "(error) NOAUTH Authentication required.\n";
    cli_expect(cli, addr, &["ping"], noauth);
    cli_expect(cli, addr, &["get", "k"], noauth);
    // Redis checks that the command exists, and its arity, before authentication.
    cli_expect(
        cli,
        addr,
        &["nosuchcmd", "a"],
        "(error) ERR unknown command 'nosuchcmd', with args beginning with: 'a' \n",
    );
    cli_expect(
        cli,
        addr,
        &["get"],
        "(error) ERR wrong number of arguments for 'get' command\n",
    );
    cli_expect(
        cli,
        addr,
        &["-a", "s3cret", "--no-auth-warning", "set", "k", "v"],
        "OK\n",
    );
    cli_expect(
        cli,
        addr,
        &["-a", "s3cret", "--no-auth-warning", "get", "k"],
        "\"v\"\n",
    );
    cli_expect(
        cli,
        addr,
        &[
            "--user",
            "default",
            "--pass",
            "s3cret",
            "--no-auth-warning",
            "ping",
        ],
        "PONG\n",
    );
    cli_expect(
        cli,
        addr,
        &["-3", "-a", "s3cret", "--no-auth-warning", "get", "k"],
        "\"v\"\n",
    );
    // A wrong password: redis-cli reports the failed AUTH on stderr and runs the command anyway.
    let out = redis_cli(
        cli,
        addr,
        &["--no-raw", "-a", "wrong", "--no-auth-warning", "ping"],
        b"",
    );
    assert_eq!(out.out(), noauth, "redis-cli -a wrong: {}", out.describe());
    assert_eq!(
        out.err(),
        "AUTH failed: WRONGPASS invalid username-password pair or user is disabled.\n",
        "redis-cli -a wrong: {}",
        out.describe()
    );
    // RESP3 without a password: HELLO 3 is refused before authentication.
    let out = redis_cli(cli, addr, &["--no-raw", "-3", "ping"], b"");
    assert_eq!(
        out.out(),
        noauth,
        "redis-cli -3 unauthenticated: {}",
        out.describe()
    );
    assert_eq!(
        out.err(),
        "HELLO 3 failed: NOAUTH HELLO must be called with the client already authenticated, otherwise the \
         HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol \
         version at the same time\n",
        "redis-cli -3 unauthenticated: {}",
        out.describe()
    );
}

/// `redis-cli` commands and their printed replies: strings, lists, TTLs, errors, binary values
/// through `-x`, RESP3 with `-3`, and `-a` against a server with a password.
#[test]
fn redis_cli_commands() {
    let Some(cli) = require_tool("redis-cli") else {
        return;
    };
    let server = start(config());
    check_redis_cli_commands(&cli, server.addr());
    let server = start(Config {
        password: Some("s3cret".into()),
        ..config()
    });
    check_redis_cli_auth(&cli, server.addr());
}

// ---------------------------------------------------------------------------------------------
// redis-cli --pipe

fn check_redis_cli_pipe(cli: &Path, addr: SocketAddr) {
    let mut rng = Rng::new(5);
    let mut input = Vec::new();
    let mut values = Vec::new();
    for i in 0..5000 {
        // Sizes on both sides of the zero-copy threshold and the read buffer.
        let len = rng.pick(&[1, 100, 511, 512, 513, 4096, 20000]);
        let v = rng.bytes(len);
        input.extend(encode(&[b"SET", format!("pipe:{i}").as_bytes(), &v]));
        values.push(v);
    }
    for i in 0..5000 {
        input.extend(encode(&[
            b"RPUSH",
            format!("plist:{}", i % 10).as_bytes(),
            format!("e{i}").as_bytes(),
        ]));
    }
    let out = redis_cli(cli, addr, &["--pipe"], &input);
    assert!(
        out.status.success() && out.out().ends_with("errors: 0, replies: 10000\n"),
        "redis-cli --pipe: {}",
        out.describe()
    );
    let mut c = Resp::connect(addr);
    assert_eq!(c.cmd(&[b"DBSIZE"]), Reply::Int(5010));
    for i in [0, 1, 2, 999, 2500, 4999] {
        assert_eq!(
            c.cmd(&[b"GET", format!("pipe:{i}").as_bytes()]),
            bulk(&values[i]),
            "pipe:{i}"
        );
    }
    assert_eq!(c.cmd(&[b"LLEN", b"plist:3"]), Reply::Int(500));
    assert_eq!(
        c.cmd(&[b"LRANGE", b"plist:3", b"0", b"2"]),
        bulks(&[b"e3", b"e13", b"e23"])
    );
    assert_eq!(c.cmd(&[b"LINDEX", b"plist:9", b"-1"]), bulk(b"e4999"));

    // Errors are counted (and the replies still all arrive).
    let mut input = encode(&[b"INCR", b"plist:0"]);
    input.extend(encode(&[b"INCR", b"counter"]));
    input.extend(encode(&[b"NOSUCHCMD"]));
    input.extend(encode(&[b"INCR", b"counter"]));
    let out = redis_cli(cli, addr, &["--pipe"], &input);
    assert!(
        out.out().ends_with("errors: 2, replies: 4\n"),
        "redis-cli --pipe with errors: {}",
        out.describe()
    );
    assert_eq!(c.cmd(&[b"GET", b"counter"]), bulk(b"2"));
}

/// `redis-cli --pipe`: 10,000 SETs and RPUSHes in one stream of RESP, then the keyspace is
/// checked with a plain RESP client.
#[test]
fn redis_cli_pipe() {
    let Some(cli) = require_tool("redis-cli") else {
        return;
    };
    let server = start(config());
    check_redis_cli_pipe(&cli, server.addr());
}

// ---------------------------------------------------------------------------------------------
// redis-benchmark

/// Runs `redis-benchmark -q ARGS`; returns each test's name and requests per second. Fails on
/// an error status, anything on stderr, or an error in the output.
fn benchmark(bench: &Path, addr: SocketAddr, args: &[&str]) -> Vec<(String, f64)> {
    let mut cmd = Command::new(bench);
    cmd.args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-q"]);
    cmd.args(args);
    let what = format!("redis-benchmark -q {}", args.join(" "));
    let out = run(&what, cmd, b"", LONG_LIMIT);
    let text = out.out();
    assert!(
        out.status.success() && out.stderr.is_empty() && !text.to_ascii_lowercase().contains("err"),
        "{what}: {}",
        out.describe()
    );
    // Progress lines end in '\r'; a test's result is "NAME: R requests per second, p50=...".
    let mut results = Vec::new();
    for seg in text.split(['\r', '\n']) {
        if let Some((name, rest)) = seg.trim().rsplit_once(": ") {
            if let Some(at) = rest.find(" requests per second") {
                let rate: f64 = rest[..at]
                    .parse()
                    .unwrap_or_else(|_| panic!("{what}: a rate in {seg:?}"));
                results.push((name.to_owned(), rate));
            }
        }
    }
    for (name, rate) in &results {
        assert!(
            rate.is_finite() && *rate > 0.0,
            "{what}: {name}: {rate} requests per second\n{text}"
        );
    }
    results
}

/// The tests `-t get,set,mset,lpush,rpush,lpop,rpop,lrange,incr,ping` runs.
const BENCH_TESTS: &str = "get,set,mset,lpush,rpush,lpop,rpop,lrange,incr,ping";
const BENCH_NAMES: [&str; 15] = [
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "MSET (10 keys)",
    "LPUSH (needed to benchmark LRANGE)",
    "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)",
    "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)",
];

fn names(results: &[(String, f64)]) -> Vec<&str> {
    let mut n: Vec<&str> = results.iter().map(|(n, _)| n.as_str()).collect();
    n.sort_unstable();
    n
}

fn check_redis_benchmark(bench: &Path, addr: SocketAddr) {
    let mut want = BENCH_NAMES.to_vec();
    want.sort_unstable();
    for args in [
        &["-t", BENCH_TESTS, "-n", "2000", "-P", "1"][..],
        &["-t", BENCH_TESTS, "-n", "2000", "-P", "16"],
        &["-t", BENCH_TESTS, "-n", "2000", "-P", "16", "-r", "1000"],
    ] {
        assert_eq!(
            names(&benchmark(bench, addr, args)),
            want,
            "redis-benchmark {}",
            args.join(" ")
        );
    }
    // 4 KiB values (sent by reference): every test but the LRANGEs at 2000 requests, the LRANGEs
    // (600 x 4 KiB per reply) at 200.
    let results = benchmark(
        bench,
        addr,
        &[
            "-t",
            "get,set,mset,lpush,rpush,lpop,rpop,incr,ping",
            "-n",
            "2000",
            "-P",
            "16",
            "-d",
            "4096",
            "-r",
            "1000",
        ],
    );
    assert_eq!(results.len(), 10, "{results:?}");
    for p in ["1", "16"] {
        let results = benchmark(bench, addr, &["-t", "lrange", "-n", "200", "-P", p, "-d", "4096"]);
        assert_eq!(
            results.len(),
            5,
            "LRANGE with 4 KiB elements, -P {p}: {results:?}"
        );
    }
    // MGET is no -t test of redis-benchmark 7.0: a command line with random keys instead.
    let results = benchmark(
        bench,
        addr,
        &[
            "-n",
            "2000",
            "-P",
            "16",
            "-r",
            "1000",
            "mget",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
        ],
    );
    assert_eq!(results.len(), 1, "{results:?}");

    // Still serving, and what the benchmarks stored is whole: `key:__rand_int__` (the runs
    // without -r) holds 3 bytes; every random key 4096 (the -d 4096 run's 22,000 writes over
    // 1000 keys rewrote them all, but for a chance of about e^-22).
    let mut c = Resp::connect(addr);
    assert_eq!(c.cmd(&[b"PING"]), Reply::simple("PONG"));
    let Reply::Array(keys) = c.cmd(&[b"KEYS", b"key:*"]) else {
        panic!("KEYS")
    };
    assert!(!keys.is_empty(), "the benchmarks stored keys");
    for k in &keys {
        let Reply::Bulk(k) = k else {
            panic!("KEYS returned {k:?}")
        };
        let want = if k == b"key:__rand_int__" { 3 } else { 4096 };
        match c.cmd(&[b"GET", k]) {
            Reply::Bulk(v) if v.len() == want => {}
            other => panic!("{}: {other:?}, want {want} bytes", String::from_utf8_lossy(k)),
        }
    }
    assert_eq!(c.cmd(&[b"SET", b"after", b"bench"]), ok());
    assert_eq!(c.cmd(&[b"GET", b"after"]), bulk(b"bench"));
}

/// `redis-benchmark` with and without pipelining, 3-byte and 4 KiB values, random keys, every
/// LRANGE test, against one loop and against two (`threads: 2`): every test reports a nonzero
/// rate, nothing reports an error, and the server serves on.
#[test]
fn redis_benchmark() {
    let Some(bench) = require_tool("redis-benchmark") else {
        return;
    };
    let server = start(config());
    check_redis_benchmark(&bench, server.addr());
    let server = start(Config {
        threads: 2,
        ..config()
    });
    check_redis_benchmark(&bench, server.addr());
}

// ---------------------------------------------------------------------------------------------
// redis-py

/// `tests/redis_py.py`: every command, RESP2 and RESP3, hiredis and the pure-Python parser,
/// pipelines, error texts, binary and large values, TTLs, SCAN, INFO, CLIENT, AUTH.
#[test]
fn redis_py_every_command() {
    let Some(python) = require_python_redis() else {
        return;
    };
    let server = start(config());
    let auth = start(Config {
        password: Some("s3cret".into()),
        ..config()
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redis_py.py");
    let mut cmd = Command::new(python);
    cmd.arg(&script).args([
        "--server",
        "ferry",
        "--port",
        &server.addr().port().to_string(),
        "--auth-port",
        &auth.addr().port().to_string(),
        "--password",
        "s3cret",
        "--ferry-commands",
        &ferry_redis::cmd::table::COMMANDS.len().to_string(),
    ]);
    let out = run("tests/redis_py.py", cmd, b"", LONG_LIMIT);
    assert!(out.status.success(), "tests/redis_py.py: {}", out.describe());
    eprint!("{}", out.out());
}

// ---------------------------------------------------------------------------------------------
// A value overwritten or deleted while a reply still references it

/// Requests in one buffer: sent with one write, so the server has them all before the
/// first reply can have left.
fn pipeline(cmds: &[&[&[u8]]]) -> Vec<u8> {
    cmds.iter().flat_map(|c| encode(c)).collect()
}

/// GETs queued behind `size`-byte replies: more reply bytes than the socket buffers hold, so
/// that the replies wait in the server while the value is replaced.
fn queued_gets(size: usize) -> usize {
    (8usize << 20).div_ceil(size).clamp(4, 2000)
}

fn check_overwrite_strings(c: &mut Resp, size: usize) {
    let [a, b, d, e] = [b'A', b'B', b'D', b'E'].map(|x| vec![x; size]);
    assert_eq!(c.cmd(&[b"SET", b"k", &a]), ok());
    // GET, then the value is overwritten and deleted behind it, in one write.
    c.send(&pipeline(&[
        &[b"GET", b"k"],
        &[b"SET", b"k", &b],
        &[b"DEL", b"k"],
        &[b"GET", b"k"],
    ]));
    assert_eq!(
        c.read(),
        bulk(&a),
        "GET before SET/DEL in the same write ({size} B)"
    );
    assert_eq!(
        [c.read(), c.read(), c.read()],
        [ok(), Reply::Int(1), Reply::NullBulk],
        "{size} B"
    );
    // Many replies waiting while the value is replaced every way there is; the freed buffers
    // are reused at once by the next values of the same size (D, E).
    assert_eq!(c.cmd(&[b"SET", b"k", &a]), ok());
    let n = queued_gets(size);
    let mut p = encode(&[b"GET", b"k"]).repeat(n);
    p.extend(pipeline(&[
        &[b"GETSET", b"k", &b],
        &[b"SET", b"k", &d, b"GET"],
        &[b"GETDEL", b"k"],
        &[b"GET", b"k"],
        &[b"SET", b"k", &e],
        &[b"APPEND", b"k", b"tail"],
        &[b"GET", b"k"],
        &[b"DEL", b"k"],
        &[b"SET", b"k", &a],
        &[b"GET", b"k"],
    ]));
    c.send(&p);
    for i in 0..n {
        assert_eq!(c.read(), bulk(&a), "queued GET {i} of {n} ({size} B)");
    }
    let mut e_tail = e.clone();
    e_tail.extend_from_slice(b"tail");
    let want = [
        bulk(&a),
        bulk(&b),
        bulk(&d),
        Reply::NullBulk,
        ok(),
        Reply::Int(size as i64 + 4),
        bulk(&e_tail),
        Reply::Int(1),
        ok(),
        bulk(&a),
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&c.read(), w, "reply {i} after the queued GETs ({size} B)");
    }
}

fn check_overwrite_lists(c: &mut Resp, size: usize) {
    let [a, b, d] = [b'a', b'b', b'd'].map(|x| vec![x; size]);
    assert_eq!(c.cmd(&[b"RPUSH", b"l", &a, &a]), Reply::Int(2));
    let n = queued_gets(2 * size);
    let mut p = encode(&[b"LRANGE", b"l", b"0", b"-1"]).repeat(n);
    p.extend(pipeline(&[
        &[b"LINDEX", b"l", b"1"],
        &[b"LSET", b"l", b"0", &b],
        &[b"RPOP", b"l"],
        &[b"RPUSH", b"l", &d],
        &[b"LRANGE", b"l", b"0", b"-1"],
        &[b"LPOP", b"l", b"2"],
        &[b"RPUSH", b"l", &a, &a, &a],
        &[b"LTRIM", b"l", b"1", b"1"],
        &[b"LRANGE", b"l", b"0", b"-1"],
        &[b"DEL", b"l"],
        &[b"LRANGE", b"l", b"0", b"-1"],
    ]));
    c.send(&p);
    for i in 0..n {
        assert_eq!(c.read(), bulks(&[&a, &a]), "queued LRANGE {i} of {n} ({size} B)");
    }
    let want = [
        bulk(&a),
        ok(),
        bulk(&a),
        Reply::Int(2),
        bulks(&[&b, &d]),
        bulks(&[&b, &d]),
        Reply::Int(3),
        ok(),
        bulks(&[&a]),
        Reply::Int(1),
        Reply::Array(vec![]),
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&c.read(), w, "list reply {i} after the queued LRANGEs ({size} B)");
    }
}

/// Sizes at and above the zero-copy threshold (512), across the read buffer (16 KiB) and
/// keep-in-place (4 KiB) boundaries, up to 1 MiB.
const OVERWRITE_SIZES: [usize; 6] = [512, 4095, 4096, 16385, 64 << 10, 1 << 20];

/// In every send mode: a GET (LRANGE) reply that references a stored value is queued, and in
/// the same pipeline the value is overwritten, deleted, popped, trimmed; the queued replies
/// still carry the old bytes intact. Afterwards the pool is back to where it started.
#[test]
fn overwrite_while_referenced() {
    for mode in Mode::ALL {
        let server = start(Config {
            zero_copy_threshold: 512,
            mode,
            ..config()
        });
        let baseline = server.pool().stats().buffers_outstanding();
        let addr = server.addr();
        ferry_testkit::within(&format!("overwrite_while_referenced {mode}"), move || {
            let mut c = Resp::connect(addr);
            for size in OVERWRITE_SIZES {
                check_overwrite_strings(&mut c, size);
                check_overwrite_lists(&mut c, size);
            }
        });
        let mut c = Resp::connect(addr);
        assert_eq!(c.cmd(&[b"FLUSHALL"]), ok());
        drop(c);
        assert_pool_back_to(&server, baseline, &format!("mode {mode}"));
    }
}

/// Many clients at once, each overwriting its own key under queued replies and all of them
/// racing on one shared key: every reply is whole (one value's bytes, never a mix), and the
/// pool returns to its baseline.
#[test]
fn overwrite_while_referenced_many_clients() {
    const CLIENTS: usize = 8;
    const ROUNDS: usize = 12;
    const SIZES: [usize; 4] = [512, 4097, 64 << 10, 200_000];
    for mode in Mode::ALL {
        let server = start(Config {
            zero_copy_threshold: 512,
            mode,
            ..config()
        });
        let baseline = server.pool().stats().buffers_outstanding();
        let addr = server.addr();
        let threads: Vec<_> = (0..CLIENTS)
            .map(|t| {
                ferry_testkit::spawn(&format!("client {t} ({mode})"), move || {
                    let mut rng = Rng::new(100 + t as u64);
                    let mut c = Resp::connect(addr);
                    let key = format!("own:{t}");
                    let key = key.as_bytes();
                    for round in 0..ROUNDS {
                        let size = rng.pick(&SIZES);
                        let fill = (t * ROUNDS + round) as u8;
                        let (a, b) = (vec![fill; size], vec![fill.wrapping_add(128); size]);
                        assert_eq!(c.cmd(&[b"SET", key, &a]), ok());
                        let mut p = encode(&[b"GET", key]).repeat(8);
                        p.extend(encode(&[b"GET", b"shared"]).repeat(4));
                        p.extend(pipeline(&[
                            &[b"SET", key, &b],
                            &[b"SET", b"shared", &a],
                            &[b"GET", key],
                            &[b"DEL", key],
                            &[b"GET", key],
                            &[b"GET", b"shared"],
                        ]));
                        c.send(&p);
                        for i in 0..8 {
                            assert_eq!(c.read(), bulk(&a), "client {t} round {round}: GET {i}");
                        }
                        let mut shared = Vec::new();
                        for _ in 0..4 {
                            shared.push(c.read());
                        }
                        assert_eq!(
                            [c.read(), c.read(), c.read(), c.read(), c.read()],
                            [ok(), ok(), bulk(&b), Reply::Int(1), Reply::NullBulk],
                            "client {t} round {round}"
                        );
                        shared.push(c.read());
                        for r in shared {
                            // Whatever client wrote it last: one value, whole.
                            match &r {
                                Reply::NullBulk => {}
                                Reply::Bulk(v)
                                    if SIZES.contains(&v.len()) && v.iter().all(|x| *x == v[0]) => {}
                                _ => {
                                    panic!("client {t} round {round}: GET shared returned a torn value {r:?}")
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join();
        }
        let mut c = Resp::connect(addr);
        assert_eq!(c.cmd(&[b"FLUSHALL"]), ok());
        drop(c);
        assert_pool_back_to(&server, baseline, &format!("mode {mode}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input and limits

/// Protocol errors from `input` sent on a fresh connection: the server's whole answer, and
/// the connection must then be closed by the server.
fn answer_then_close(addr: SocketAddr, input: &[u8]) -> Vec<u8> {
    let mut c = Resp::connect(addr);
    c.send(input);
    c.read_until_closed().unwrap_or_else(|e| {
        panic!(
            "after {:?} the server must close the connection: {e}",
            String::from_utf8_lossy(&input[..input.len().min(60)])
        )
    })
}

fn check_protocol_errors(addr: SocketAddr, max_bulk: usize) {
    let over = format!("*2\r\n$3\r\nGET\r\n${}\r\n", max_bulk + 1);
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*2\r\n$3\r\nGET\r\n$99999999999\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (over.as_bytes(), b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (
            b"PING\r\n*abc\r\nPING\r\n",
            b"+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"SET k \"abc\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"PING\r\nECHO 'x\r\n",
            b"+PONG\r\n-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"*1\r\nfoo\r\n",
            b"-ERR Protocol error: expected '$', got 'f'\r\n",
        ),
    ];
    for (input, want) in cases {
        let got = answer_then_close(addr, input);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "answer to {:?}",
            String::from_utf8_lossy(input)
        );
    }
    // The limit itself is allowed.
    let mut c = Resp::connect(addr);
    let v = vec![b'x'; max_bulk];
    assert_eq!(c.cmd(&[b"SET", b"max", &v]), ok());
    assert_eq!(c.cmd(&[b"STRLEN", b"max"]), Reply::Int(max_bulk as i64));
    assert_eq!(c.cmd(&[b"DEL", b"max"]), Reply::Int(1));
}

/// Malformed requests get Redis's protocol error, then the connection is closed; the limit
/// `proto_max_bulk_len` itself is accepted.
#[test]
fn protocol_errors() {
    let server = start(Config {
        proto_max_bulk_len: 1 << 20,
        ..config()
    });
    check_protocol_errors(server.addr(), 1 << 20);
}

/// How a client that misbehaved on purpose ended: `Ok` when the server disconnected it, else
/// why it is still connected.
type Fate = Result<(), String>;

/// Sends up to 100 MB of pipelined `GET big` (4 KiB replies) without reading a reply.
fn never_reads(addr: SocketAddr) -> Fate {
    let mut c = Resp::connect(addr);
    let chunk = encode(&[b"GET", b"big"]).repeat(3000);
    let mut sent = 0usize;
    while sent < 100_000_000 {
        match c.try_send(&chunk) {
            Ok(()) => sent += chunk.len(),
            Err(e) if closed(&e) => return Ok(()),
            Err(e) => return Err(format!("write after {sent} B: {e}")),
        }
    }
    // Every request written: the server took 100 MB of requests, and queued their replies
    // (4.6 million of 4 KiB), from a client that read none. (Closing our side now would prove
    // nothing: a server closes on EOF anyway.)
    Err(format!(
        "{sent} B of requests written, and the server never disconnected this client"
    ))
}

/// Starts a command whose arguments exceed the query buffer limit, and never finishes it.
/// Ferry's limit counts every byte of an incomplete command (`Config::query_buffer_limit`:
/// "unparsed request bytes"); Redis's counts only the argument being read, so a real Redis
/// keeps this client (the one expectation here that is Ferry's own).
fn overfills_query_buffer(addr: SocketAddr, limit: usize, max_bulk: usize) -> Fate {
    let mut c = Resp::connect(addr);
    let elements = limit / max_bulk + 2;
    // One more element announced than sent: the command stays incomplete.
    c.send(format!("*{}\r\n$5\r\nRPUSH\r\n$3\r\nhog\r\n", elements + 3).as_bytes());
    let element = [
        format!("${max_bulk}\r\n").into_bytes(),
        vec![b'h'; max_bulk],
        b"\r\n".to_vec(),
    ]
    .concat();
    for _ in 0..elements {
        if let Err(e) = c.try_send(&element) {
            return if closed(&e) {
                Ok(())
            } else {
                Err(format!("write: {e}"))
            };
        }
    }
    match c.read_until_closed() {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "{} B of an unfinished command sent, still connected {DEADLINE:?} later: {e}",
            elements * element.len()
        )),
    }
}

/// While hostile clients break the protocol, never read their replies (past
/// `output_buffer_limit`) or overfill their query buffer (past `query_buffer_limit`), each is
/// disconnected, and a well-behaved client gets every reply right all along.
#[test]
fn hostile_clients_are_cut_off_others_served() {
    const OUTPUT_LIMIT: usize = 1 << 20;
    const QUERY_LIMIT: usize = 4 << 20;
    const MAX_BULK: usize = 1 << 20;
    let server = start(Config {
        output_buffer_limit: OUTPUT_LIMIT,
        query_buffer_limit: QUERY_LIMIT,
        proto_max_bulk_len: MAX_BULK,
        ..config()
    });
    check_hostile_clients(server.addr(), Some(QUERY_LIMIT), MAX_BULK);
}

/// `query_limit`: also a client that overfills its query buffer (Ferry only; see
/// [`overfills_query_buffer`]).
fn check_hostile_clients(addr: SocketAddr, query_limit: Option<usize>, max_bulk: usize) {
    let big = vec![b'g'; 4096];
    let mut good = Resp::connect(addr);
    assert_eq!(good.cmd(&[b"SET", b"big", &big]), ok());
    assert_eq!(good.cmd(&[b"SET", b"small", b"v"]), ok());
    // Plain threads (their sockets carry the hang guard), so that the loop below can poll them.
    let reader = thread::spawn(move || never_reads(addr));
    let hog = thread::spawn(move || {
        query_limit.map_or(Ok(()), |limit| overfills_query_buffer(addr, limit, max_bulk))
    });
    let errors = thread::spawn(move || {
        for _ in 0..50 {
            let got = answer_then_close(addr, b"*abc\r\n");
            assert_eq!(got, b"-ERR Protocol error: invalid multibulk length\r\n");
            let got = answer_then_close(addr, b"*1\r\n$99999999999\r\n");
            assert_eq!(got, b"-ERR Protocol error: invalid bulk length\r\n");
        }
    });
    let deadline = Instant::now() + DEADLINE * 3;
    let mut rounds = 0;
    loop {
        let done = reader.is_finished() && hog.is_finished() && errors.is_finished();
        assert_eq!(good.cmd(&[b"PING"]), Reply::simple("PONG"), "round {rounds}");
        assert_eq!(good.cmd(&[b"GET", b"small"]), bulk(b"v"), "round {rounds}");
        assert_eq!(good.cmd(&[b"GET", b"big"]), bulk(&big), "round {rounds}");
        rounds += 1;
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hang guard: the hostile clients are still running"
        );
    }
    let join = |h: thread::JoinHandle<Fate>| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
    let fates = [
        ("never reads", join(reader)),
        ("overfills its query buffer", join(hog)),
    ];
    errors.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
    for (who, fate) in fates {
        assert_eq!(fate, Ok(()), "the client that {who} must be disconnected");
    }
    assert_eq!(
        good.cmd(&[b"EXISTS", b"hog"]),
        Reply::Int(0),
        "the incomplete RPUSH never ran"
    );
    assert_eq!(good.cmd(&[b"DBSIZE"]), Reply::Int(2));
}

/// With `maxmemory` 1 MiB: SETs succeed until the keyspace is full, then every command that
/// adds data gets Redis's OOM error; reads and deletes work, and deleting makes room again.
#[test]
fn maxmemory_refuses_writes_when_full() {
    const MAXMEMORY: usize = 1 << 20;
    const VALUE: usize = 10 << 10;
    let oom = Reply::error("OOM command not allowed when used memory > 'maxmemory'.");
    let server = start(Config {
        maxmemory: MAXMEMORY,
        ..config()
    });
    let mut c = Resp::connect(server.addr());
    let v = vec![b'm'; VALUE];
    let mut stored = 0;
    loop {
        let key = format!("m:{stored:03}");
        match c.cmd(&[b"SET", key.as_bytes(), &v]) {
            r if r == ok() => stored += 1,
            r => {
                assert_eq!(r, oom, "SET {key}");
                break;
            }
        }
        assert!(
            stored <= MAXMEMORY / VALUE + 1,
            "{stored} values of {VALUE} B stored under maxmemory {MAXMEMORY}"
        );
    }
    // Redis's estimate counts each key, its value and a fixed overhead: at least half the
    // memory must hold values.
    assert!(
        stored >= MAXMEMORY / VALUE / 2,
        "only {stored} values of {VALUE} B fit in {MAXMEMORY} B"
    );
    for args in [
        &[&b"SET"[..], b"m:000", b"x"][..],
        &[b"SETNX", b"new", b"x"],
        &[b"GETSET", b"m:000", b"x"],
        &[b"MSET", b"a", b"1", b"b", b"2"],
        &[b"APPEND", b"m:000", b"x"],
        &[b"INCR", b"counter"],
        &[b"DECRBY", b"counter", b"2"],
        &[b"LPUSH", b"list", b"x"],
        &[b"RPUSH", b"list", b"x"],
        &[b"LSET", b"list", b"0", b"x"],
    ] {
        assert_eq!(
            c.cmd(args),
            oom,
            "{:?} when full",
            String::from_utf8_lossy(args[0])
        );
    }
    assert_eq!(c.cmd(&[b"GET", b"m:000"]), bulk(&v), "reads work when full");
    assert_eq!(c.cmd(&[b"DBSIZE"]), Reply::Int(stored as i64));
    assert_eq!(
        c.cmd(&[b"EXPIRE", b"m:001", b"100"]),
        Reply::Int(1),
        "EXPIRE is not refused"
    );
    let half: Vec<String> = (0..stored / 2).map(|i| format!("m:{i:03}")).collect();
    let mut del: Vec<&[u8]> = vec![b"DEL"];
    del.extend(half.iter().map(|k| k.as_bytes()));
    assert_eq!(
        c.cmd(&del),
        Reply::Int(half.len() as i64),
        "deletes work when full"
    );
    assert_eq!(c.cmd(&[b"SET", b"again", &v]), ok(), "room again after DEL");
    assert_eq!(c.cmd(&[b"RPUSH", b"list", b"x"]), Reply::Int(1));
    assert_eq!(c.cmd(&[b"FLUSHALL"]), ok());
    assert_eq!(c.cmd(&[b"DBSIZE"]), Reply::Int(0));
}

/// Review finding: the replies to one read were built without limit (the output limit was only
/// checked while the socket was full), so one 16 KiB read of `LRANGE`s of a large list could
/// grow the reply without bound. Now the client is cut off once that read's replies pass
/// `output_buffer_limit`, having been sent nothing past it, and others are served.
#[test]
fn one_read_of_huge_replies_is_cut_off_at_the_output_limit() {
    const OUTPUT_LIMIT: usize = 256 << 10;
    let server = start(Config {
        output_buffer_limit: OUTPUT_LIMIT,
        ..config()
    });
    let mut setup = Resp::connect(server.addr());
    let element = vec![b'e'; 1024];
    let mut push: Vec<&[u8]> = vec![b"RPUSH", b"big"];
    push.extend(std::iter::repeat_n(&element[..], 200));
    setup.cmd(&push);
    // 200 KiB per reply; 80 of them in one write would be 16 MB.
    let lrange = encode(&[b"LRANGE", b"big", b"0", b"-1"]);
    let received = answer_then_close(server.addr(), &lrange.repeat(80));
    assert!(
        received.len() <= OUTPUT_LIMIT,
        "{} bytes of replies were sent past a {OUTPUT_LIMIT}-byte limit",
        received.len()
    );
    assert_eq!(setup.cmd(&[b"LLEN", b"big"]), Reply::Int(200));
}

/// Review finding: after `QUIT`, the rest of the read was still parsed, and a malformed
/// request after it still got an error reply.
#[test]
fn nothing_after_quit_runs_or_is_answered() {
    let server = start(config());
    let received = answer_then_close(server.addr(), b"QUIT\r\nSET k v\r\n*x\r\n");
    assert_eq!(received, b"+OK\r\n");
    let mut c = Resp::connect(server.addr());
    assert_eq!(c.cmd(&[b"EXISTS", b"k"]), Reply::Int(0));
}

/// `WATCH` sees writes from other connections, to its own database only, and one
/// transaction's `EXEC` runs between two other clients' commands, whole.
#[test]
fn watch_and_exec_across_connections() {
    let server = start(config());
    let (mut a, mut b) = (Resp::connect(server.addr()), Resp::connect(server.addr()));
    let queued = Reply::Simple(b"QUEUED".to_vec());
    assert_eq!(a.cmd(&[b"SET", b"k", b"1"]), ok());
    assert_eq!(a.cmd(&[b"WATCH", b"k"]), ok());
    assert_eq!(b.cmd(&[b"SET", b"k", b"2"]), ok());
    assert_eq!(a.cmd(&[b"MULTI"]), ok());
    assert_eq!(a.cmd(&[b"INCR", b"k"]), queued);
    assert_eq!(
        a.cmd(&[b"EXEC"]),
        Reply::NullArray,
        "another client wrote the watched key"
    );
    assert_eq!(a.cmd(&[b"GET", b"k"]), bulk(b"2"));

    // Unchanged (a read by the other client does not count), then changed in another
    // database only.
    assert_eq!(a.cmd(&[b"WATCH", b"k"]), ok());
    assert_eq!(b.cmd(&[b"GET", b"k"]), bulk(b"2"));
    assert_eq!(b.cmd(&[b"SELECT", b"1"]), ok());
    assert_eq!(b.cmd(&[b"SET", b"k", b"other"]), ok());
    assert_eq!(a.cmd(&[b"MULTI"]), ok());
    assert_eq!(a.cmd(&[b"INCR", b"k"]), queued);
    assert_eq!(a.cmd(&[b"EXEC"]), Reply::Array(vec![Reply::Int(3)]));

    // A client that leaves while watching: the others are unaffected.
    let mut c = Resp::connect(server.addr());
    assert_eq!(c.cmd(&[b"WATCH", b"k"]), ok());
    drop(c);
    assert_eq!(a.cmd(&[b"WATCH", b"k"]), ok());
    assert_eq!(a.cmd(&[b"MULTI"]), ok());
    assert_eq!(a.cmd(&[b"INCR", b"k"]), queued);
    assert_eq!(b.cmd(&[b"SELECT", b"0"]), ok());
    assert_eq!(
        b.cmd(&[b"INCR", b"k"]),
        Reply::Int(4),
        "runs while a's transaction is open"
    );
    assert_eq!(a.cmd(&[b"EXEC"]), Reply::NullArray);
    assert!(
        matches!(a.cmd(&[b"DEBUG", b"SLEEP", b"0"]), Reply::Error(e) if e.starts_with(b"ERR DEBUG command not allowed")),
        "DEBUG is off by default"
    );
}
