//! Differential test: Ferry against the real `redis-server` (7.0), command by command.
//!
//! Seeded random command sequences over a small key space (8 keys, so that collisions and
//! type clashes are frequent) go to both servers; each reply is read with the independent RESP
//! reader `ferry_redis::resp::client` (not the server's parser or encoder: the test does not trust the code under test) and the
//! two are compared exactly, errors by their full text. The first mismatch fails the test with
//! the seed, the command's index, the command and both replies, and the line that replays it.
//!
//! What may legitimately differ is normalized, and nothing else:
//! - `KEYS`, `HKEYS`, `HVALS`, `SMEMBERS`, `SINTER`, `SUNION`, `SDIFF`, `SPOP`: the order
//!   (both arrays or sets are sorted); `HGETALL`: the order of the pairs.
//! - `SCAN`, `HSCAN`, `SSCAN`, `ZSCAN`: the cursors (a full iteration runs on each server; the sorted unions are
//!   compared).
//! - `HRANDFIELD`, `SRANDMEMBER`, `ZRANDMEMBER`: which fields or members are picked (the replies' shapes are compared: errors, nulls,
//!   lengths); the picks' properties are unit tests in `cmd::hashes`.
//! - `TTL`/`PTTL`: -2 and -1 exactly; a positive TTL only as "positive and within a few seconds
//!   of the other" (a millisecond may pass between the two servers). Every TTL the generator
//!   sets is a distinct multiple of 1000 s, so no comparison (`EXPIRE GT/LT`) depends on timing.
//! - `HELLO`: the `id` field.
//!
//! Never sent: `INFO`, `COMMAND`, `CONFIG`, `SELECT`, `CLIENT ID` (documented differences).
//!
//! The generator ([`Gen`]) sends every data command: `GET SET` (with random `EX PX EXAT PXAT
//! KEEPTTL NX XX GET`, invalid combinations and values included) `MGET MSET SETNX GETSET GETDEL
//! RESTORE` (payloads of every type from Ferry's `DUMP` encoding, some corrupt) `
//! APPEND STRLEN INCR INCRBY DECR DECRBY` (values numeric, near the ends of i64, or not
//! numbers) `DEL UNLINK EXISTS TYPE EXPIRE PEXPIRE` (large TTLs, zero and negative ones that
//! delete, out-of-range ones, `NX XX GT LT` and unknown options) `TTL PTTL PERSIST KEYS SCAN`
//! (`MATCH COUNT TYPE`, bad cursors) `LPUSH RPUSH LPOP RPOP` (with counts, 0 and negative
//! included) `LRANGE LLEN LINDEX LSET LTRIM`, `HSET HMSET HSETNX HGET HMGET HDEL HLEN HSTRLEN
//! HEXISTS HINCRBY HINCRBYFLOAT HGETALL HKEYS HVALS HSCAN HRANDFIELD` (fields from a few
//! names or any value; `HINCRBYFLOAT` with increments exact in binary, see `cmd::hashes`),
//! `SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SRANDMEMBER SMOVE SINTER SINTERSTORE
//! SINTERCARD SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN`, `SPOP` (the forms whose outcome is
//! not random), `ZADD (NX XX GT LT CH INCR) ZINCRBY ZSCORE ZMSCORE ZCARD ZCOUNT ZLEXCOUNT ZRANK
//! ZREVRANK ZREM ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES) ZRANGEBYSCORE ZREVRANGEBYSCORE
//! ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE ZRANGESTORE ZPOPMIN ZPOPMAX ZREMRANGEBYRANK
//! ZREMRANGEBYSCORE ZREMRANGEBYLEX ZSCAN ZRANDMEMBER ZUNION ZINTER ZDIFF ZUNIONSTORE
//! ZINTERSTORE ZDIFFSTORE ZINTERCARD` (the algebra's inputs sorted sets, plain sets or other
//! types, with bad key counts, weights and aggregates) (scores small, halves,
//! infinite, hexadecimal or not numbers; lexicographic ranges on a key `lex` whose members all
//! have score 0, where Redis's answer does not depend on its encoding), `DBSIZE FLUSHDB`, a few connection commands (`PING
//! ECHO HELLO CLIENT GETNAME/SETNAME AUTH`), wrong arities, unknown commands and, with 8 keys,
//! many wrong-type calls. Values are random bytes of 0, a few, ~512, ~4096, ~16384 and ~70 KiB
//! bytes, or number-like strings. Each sequence starts with `FLUSHDB` (and `HELLO 3` for one
//! in four: RESP3) and ends with a `PING` and a dump of every key (type, value, TTL). The
//! pipelined mode writes 50 commands at a time, half the time cut into writes of random
//! sizes, and compares the whole key space after each batch.
//!
//! The reference is `redis-server` from `PATH` (or `$FERRY_REDIS_SERVER`), started as a child
//! process on a free port. Without it the tests print why and return, unless
//! `FERRY_REQUIRE_TOOLS=1` is set: then they fail (`common::missing`).
//! `redis_agrees_with_redis` runs the same generator against two reference servers, which
//! must agree on every reply: it shows that the generator and the normalizations leave
//! nothing to timing or chance.
//!
//! Knobs (environment): `FERRY_DIFF_SEED=<n>` runs that one seed (sequential and pipelined),
//! `FERRY_DIFF_SEQS=<n>` runs n sequences instead of 20, `FERRY_DIFF_EXCLUDE=set,lpop` leaves
//! those generators out, `FERRY_DIFF_KEEP_GOING=1` runs every sequence and reports all the
//! mismatches (one per sequence: after a mismatch the states may differ) before failing,
//! `FERRY_DIFF_HISTORY=<n>` shows n commands before a mismatch instead of 12.

use std::collections::{BTreeSet, HashSet};
use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod common;

use ferry_launch::Server;
use ferry_redis::resp::client::{Reply, ReplyReader, show_bytes};

/// Seeds that once found a mismatch against Ferry, with the mode they found it in; each runs
/// before the others of its mode. A seed names a sequence of this generator: a change to the
/// generator turns these into ordinary random seeds, which is why every bug they found also
/// has its own fixed `regression_*` test below.
const REGRESSION_SEEDS: &[(Mode, u64)] = &[
    // An unknown command's arguments quoted past Redis's 128-byte budget.
    (Mode::Sequential, 0x5eed_0017),
    (Mode::Pipelined, 0x919e_0009),
    // An unknown command's argument quoted past a NUL byte (the key "bin\0\r\n 7").
    (Mode::Sequential, 0x5eed_0014),
    (Mode::Pipelined, 0x919e_0017),
    // CLIENT <bytes>: the unknown subcommand quoted with U+FFFD for bytes that are not UTF-8.
    (Mode::Sequential, 0x5eed_0016),
    (Mode::Pipelined, 0x919e_0008),
    // HELLO 2 <bytes>: the same, in "Syntax error in HELLO option".
    (Mode::Sequential, 0x5eed_00e8),
    (Mode::Pipelined, 0x919e_0015),
];

/// Sequences per run in the sequential mode (each `COMMANDS_PER_SEQUENCE` commands long).
const SEQUENCES: u64 = 20;
const COMMANDS_PER_SEQUENCE: usize = 500;
/// Sequences in the pipelined mode, each `BATCHES` writes of `BATCH` commands.
const PIPELINED_SEQUENCES: u64 = 6;
const BATCHES: usize = 10;
const BATCH: usize = 50;
/// Seeds are these plus the sequence number.
const SEQUENTIAL_BASE: u64 = 0x5eed_0000;
const PIPELINED_BASE: u64 = 0x919e_0000;
/// How long a reply may take before the test gives up on that server.
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn ferry_agrees_with_redis() {
    let Some(redis) = reference_or_skip("ferry_agrees_with_redis") else {
        return;
    };
    let ferry = start_ferry();
    run_all(redis.addr, ferry.addr(), "redis", "ferry", Mode::Sequential);
}

#[test]
fn ferry_agrees_with_redis_pipelined() {
    let Some(redis) = reference_or_skip("ferry_agrees_with_redis_pipelined") else {
        return;
    };
    let ferry = start_ferry();
    run_all(redis.addr, ferry.addr(), "redis", "ferry", Mode::Pipelined);
}

/// The test's own check: two reference servers agree on every normalized reply.
#[test]
fn redis_agrees_with_redis() {
    let Some(a) = reference_or_skip("redis_agrees_with_redis") else {
        return;
    };
    let b = RedisServer::start(&a.path);
    run_all(a.addr, b.addr, "redis A", "redis B", Mode::Sequential);
    run_all(a.addr, b.addr, "redis A", "redis B", Mode::Pipelined);
}

/// Requests as a hand-typed or broken client sends them: inline commands (quotes, escapes,
/// bare LF, blank lines) and malformed multibulk (Redis answers with a protocol error and
/// closes). Each goes on a fresh connection to each server, followed by a `PING`; everything
/// each server sends back until that `PONG` or the end of the stream must agree.
#[test]
fn inline_and_malformed_requests_agree() {
    let Some(redis) = reference_or_skip("inline_and_malformed_requests_agree") else {
        return;
    };
    let ferry = start_ferry();
    let inputs: &[&[u8]] = &[
        b"PING\r\n",
        b"ECHO \"a b\"\r\n",
        b"ECHO \"\\x41\\n\\t\\\\\"\r\n",
        b"ECHO 'single \\' quoted'\r\n",
        b"ECHO \"unbalanced\r\n",
        b"ECHO \"a\"b\r\n",
        b"SET k v\nGET k\n",
        b"\r\n\r\n   \r\nGET k\r\n",
        b"  get   k  \r\n",
        b"*0\r\n",
        b"*-1\r\n",
        b"*1\r\n$4\r\nPING\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
        b"*abc\r\n",
        b"*\r\n",
        b"*2\r\n$3\r\nGET\r\n+k\r\n",
        b"*1\r\n*1\r\n",
        b"*1\r\n$-5\r\n",
        b"*1\r\n$abc\r\n",
        b"*1\r\n$\r\n",
        b"$3\r\nabc\r\n",
    ];
    for input in inputs {
        let a = exchange(redis.addr, input);
        let b = exchange(ferry.addr(), input);
        assert_eq!(
            a,
            b,
            "after {} (then PING): redis (left) and ferry (right) differ",
            show_bytes(input, 200)
        );
    }
}

/// Sends `input` and a `PING` on a fresh connection; what comes back until the `PONG`, the end
/// of the stream (`<closed>`) or a reply that is not RESP.
fn exchange(addr: SocketAddr, input: &[u8]) -> Vec<String> {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reader = ReplyReader::new(stream.try_clone().unwrap());
    let mut bytes = input.to_vec();
    bytes.extend_from_slice(&common::encode(&[b"PING"]));
    let mut got = Vec::new();
    if let Err(e) = (&stream).write_all(&bytes) {
        got.push(format!("<write failed: {:?}>", e.kind()));
    }
    for _ in 0..10 {
        match reader.reply() {
            Ok(Reply::Simple(s)) if s == b"PONG" => {
                got.push("+PONG".into());
                break;
            }
            Ok(reply) => got.push(reply.to_string()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                got.push("<closed>".into());
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                got.push("<closed>".into());
                break;
            }
            Err(e) => {
                got.push(format!("<{e}>"));
                break;
            }
        }
    }
    got
}

// Regressions: one fixed test per mismatch the random sequences found, named for it.

/// Redis quotes the arguments of an unknown command into its error up to a budget of 128
/// bytes in all: each argument is cut to what is left of it, and none follows once it is
/// spent. (Found by seeds 0x5eed0017 and 0x919e0009: Ferry cut each argument to 128 and
/// quoted them all.)
#[test]
fn regression_unknown_command_quotes_128_bytes_of_arguments_in_all() {
    let y155 = [b'y'; 155];
    let y144 = [b'y'; 144];
    replay(
        "regression_unknown_command_quotes_128_bytes_of_arguments_in_all",
        &[
            &[b"gett", &y155, b"k6", b"k4"],
            &[b"SETT", b"k5", &y144],
            &[b"SETT", b"k5", &y144[..123]],
            &[b"SETT", b"k5", &y144[..124], b"k6"],
            &[b"ferry", &y144[..120], b"abcdefgh", b"k4"],
        ],
    );
}

/// Redis copies the bytes of an unknown command's name and arguments into its error as they
/// are (only CR and LF become spaces); it does not replace bytes that are not UTF-8. (Found by
/// the random sequences: Ferry wrote U+FFFD for each invalid byte.)
#[test]
fn regression_unknown_command_error_keeps_non_utf8_bytes() {
    replay(
        "regression_unknown_command_error_keeps_non_utf8_bytes",
        &[
            &[b"FOO", b"EO\xde\xe8"],
            &[b"nosuchcommand", b"\xa9\x91\xa1%\xee(E", b"k2"],
            &[b"x\xffy", b"k1"],
            &[b"get\r\nx", b"a\rb\nc"],
        ],
    );
}

/// Every error that quotes a client's bytes (an unknown option, subcommand or `HELLO` option)
/// quotes them unchanged. (Found by seeds 0x5eed0016 and 0x919e0008 for `CLIENT`,
/// 0x5eed00e8 and 0x919e0015 for `HELLO`: Ferry wrote U+FFFD for each byte that is not UTF-8.)
#[test]
fn regression_errors_quote_option_bytes_unchanged() {
    replay(
        "regression_errors_quote_option_bytes_unchanged",
        &[
            &[b"SET", b"k", b"v"],
            &[b"EXPIRE", b"k", b"1000000", b"\xd9"],
            &[b"PEXPIRE", b"k", b"1000000000", b"\xa1\xaf>\xedAV\xb7L", b"XX"],
            &[b"CLIENT", b"6\x84\xf4\xb3\xa1!\xa7"],
            &[b"HELLO", b"3", b"\xfe\xff"],
        ],
    );
}

/// Redis formats the client's bytes into an error with C's `%s`: they stop at the first NUL
/// byte (an unknown command's name and arguments, an unknown subcommand, an unknown option).
/// (Found by seeds 0x5eed0014 and 0x919e0017 with the key "bin\0\r\n 7": Ferry quoted the
/// NUL and what follows it.)
#[test]
fn regression_error_quotes_stop_at_nul() {
    replay(
        "regression_error_quotes_stop_at_nul",
        &[
            &[b"FOO", b"a\x00b", b"c"],
            &[b"FO\x00O", b"x"],
            &[b"CLIENT", b"km9\x00"],
            &[b"SET", b"k", b"v"],
            &[b"PEXPIRE", b"k", b"1000000000", b"Y\x00"],
        ],
    );
}

/// Redis trims CR and LF from the end of an error message and turns the others into spaces.
/// (Found by the random sequences: Ferry turned a trailing CR into a space.)
#[test]
fn regression_error_trims_trailing_cr_lf() {
    replay(
        "regression_error_trims_trailing_cr_lf",
        &[
            &[b"SET", b"k", b"v"],
            &[b"EXPIRE", b"k", b"1000000", b"GT", b"j\r"],
            &[b"EXPIRE", b"k", b"1000000", b"a\r\nb\n"],
            &[b"PEXPIRE", b"k", b"1000000000", b"\r\n"],
        ],
    );
}

/// Runs `cmds` against the reference and Ferry on fresh connections, after a `FLUSHDB`,
/// comparing every reply (with the command's normalization); fails at the first difference.
/// The fixed regression tests are written with it.
fn replay(test: &str, cmds: &[&[&[u8]]]) {
    let Some(redis) = reference_or_skip(test) else {
        return;
    };
    let ferry = start_ferry();
    let mut pair = Pair::connect(redis.addr, ferry.addr(), "redis", "ferry");
    let mut all = vec![Cmd::exact(vec![b"FLUSHDB".to_vec()])];
    all.extend(cmds.iter().map(|args| {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        let check = Check::for_command(&args[0]);
        Cmd { args, check }
    }));
    for (index, cmd) in all.iter().enumerate() {
        if let Err(detail) = pair.one(cmd) {
            panic!("{test}: command #{index}: {}\n{detail}", show_args(&cmd.args));
        }
    }
}

fn start_ferry() -> ferry_redis::ServerHandle {
    common::start(common::config())
}

// ---------------------------------------------------------------------------------------------
// Runs

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// One command, one reply from each server, compare.
    Sequential,
    /// `BATCH` commands in one write to each server, then `BATCH` replies from each.
    Pipelined,
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

/// Runs every sequence of `mode` against `a` (the reference) and `b`; fails on a mismatch.
fn run_all(a: SocketAddr, b: SocketAddr, a_name: &str, b_name: &str, mode: Mode) {
    let (count, base) = match mode {
        Mode::Sequential => (env_u64("FERRY_DIFF_SEQS").unwrap_or(SEQUENCES), SEQUENTIAL_BASE),
        Mode::Pipelined => {
            let n = env_u64("FERRY_DIFF_SEQS").map_or(PIPELINED_SEQUENCES, |n| n.div_ceil(3));
            (n, PIPELINED_BASE)
        }
    };
    let seeds: Vec<u64> = match env_u64("FERRY_DIFF_SEED") {
        Some(seed) => vec![seed],
        None => REGRESSION_SEEDS
            .iter()
            .filter(|(m, _)| *m == mode)
            .map(|&(_, seed)| seed)
            .chain((0..count).map(|i| base + i))
            .collect(),
    };
    let exclude: HashSet<String> = std::env::var("FERRY_DIFF_EXCLUDE")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    let keep_going = env_flag("FERRY_DIFF_KEEP_GOING");
    let started = Instant::now();
    let mut commands = 0;
    let mut mismatches = Vec::new();
    for &seed in &seeds {
        let mut pair = Pair::connect(a, b, a_name, b_name);
        let result = match mode {
            Mode::Sequential => run_sequential(&mut pair, seed, &exclude),
            Mode::Pipelined => run_pipelined(&mut pair, seed, &exclude),
        };
        commands += pair.sent;
        if let Err(m) = result {
            if !keep_going {
                panic!("{m}");
            }
            eprintln!("{m}\n");
            mismatches.push(m.to_string());
        }
    }
    eprintln!(
        "{a_name} vs {b_name}, {mode:?}: {} sequences, {commands} commands to each server, {:.2?}",
        seeds.len(),
        started.elapsed()
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} sequences found a mismatch:\n\n{}",
        mismatches.len(),
        seeds.len(),
        mismatches.join("\n\n")
    );
}

/// Whether the sequence with this seed speaks RESP3 (after `HELLO 3`): one in four.
fn resp3(seed: u64) -> bool {
    seed % 4 == 3
}

/// The commands every sequence starts with: database 0, every database empty, and the
/// protocol.
fn prologue(seed: u64) -> Vec<Cmd> {
    let mut cmds = vec![
        Cmd::exact(vec![b"SELECT".to_vec(), b"0".to_vec()]),
        Cmd::exact(vec![b"FLUSHALL".to_vec()]),
    ];
    if resp3(seed) {
        cmds.push(Cmd {
            args: vec![b"HELLO".to_vec(), b"3".to_vec()],
            check: Check::Hello,
        });
    }
    cmds
}

fn run_sequential(pair: &mut Pair, seed: u64, exclude: &HashSet<String>) -> Result<(), Mismatch> {
    let mut generator = Gen::new(seed, exclude, false);
    let mut cmds = Vec::new();
    one_by_one(pair, seed, Mode::Sequential, &mut cmds, prologue(seed))?;
    let mut body: Vec<Cmd> = (0..COMMANDS_PER_SEQUENCE).map(|_| generator.command()).collect();
    body.extend(generator.pending());
    one_by_one(pair, seed, Mode::Sequential, &mut cmds, body)?;
    one_by_one(pair, seed, Mode::Sequential, &mut cmds, epilogue())
}

fn run_pipelined(pair: &mut Pair, seed: u64, exclude: &HashSet<String>) -> Result<(), Mismatch> {
    let mut generator = Gen::new(seed, exclude, true);
    let mut cmds = Vec::new();
    one_by_one(pair, seed, Mode::Pipelined, &mut cmds, prologue(seed))?;
    for _ in 0..BATCHES {
        let first = cmds.len();
        cmds.extend((0..BATCH).map(|_| generator.command()));
        // A transaction ends within its batch: the key-space check below is not queued.
        cmds.extend(generator.pending());
        let writes = generator.writes();
        if let Err((i, detail)) = pair.batch(&cmds[first..], &writes) {
            let index = first + i;
            return Err(Mismatch::new(pair, seed, Mode::Pipelined, index, &cmds, detail));
        }
        // After each batch, the whole key space must agree.
        let scan = Cmd {
            args: vec![b"SCAN".to_vec(), b"0".to_vec()],
            check: Check::Scan,
        };
        one_by_one(pair, seed, Mode::Pipelined, &mut cmds, vec![scan])?;
    }
    one_by_one(pair, seed, Mode::Pipelined, &mut cmds, epilogue())
}

/// Appends `new` to the sequence `cmds` and runs them one at a time.
fn one_by_one(
    pair: &mut Pair,
    seed: u64,
    mode: Mode,
    cmds: &mut Vec<Cmd>,
    new: Vec<Cmd>,
) -> Result<(), Mismatch> {
    let first = cmds.len();
    cmds.extend(new);
    for index in first..cmds.len() {
        let cmd = &cmds[index];
        let outcome = if cmd.check == Check::Scan {
            pair.scan(cmd)
        } else {
            pair.one(cmd)
        };
        if let Err(detail) = outcome {
            return Err(Mismatch::new(pair, seed, mode, index, cmds, detail));
        }
    }
    Ok(())
}

/// The databases the generator selects (`SELECT`, `MOVE`, `COPY`, `SWAPDB`).
const DATABASES: u64 = 4;

/// The commands every sequence ends with: a `PING` (a server that sent one reply too many
/// answers it with something else), then the whole state of each database the generator
/// uses: the key count, the keys, and each key's type, value and TTL.
fn epilogue() -> Vec<Cmd> {
    let cmd = |args: &[&[u8]]| Cmd {
        args: args.iter().map(|a| a.to_vec()).collect(),
        check: Check::for_command(args[0]),
    };
    let mut cmds = vec![cmd(&[b"PING"])];
    for db in 0..DATABASES {
        cmds.push(cmd(&[b"SELECT", db.to_string().as_bytes()]));
        cmds.extend(database_state());
    }
    cmds
}

/// The selected database's key count, keys, and each key's type, value and TTL.
fn database_state() -> Vec<Cmd> {
    let cmd = |args: &[&[u8]]| Cmd {
        args: args.iter().map(|a| a.to_vec()).collect(),
        check: Check::for_command(args[0]),
    };
    let mut cmds = vec![
        cmd(&[b"DBSIZE"]),
        Cmd {
            args: vec![b"SCAN".to_vec(), b"0".to_vec()],
            check: Check::Scan,
        },
    ];
    for key in KEYS {
        cmds.push(cmd(&[b"TYPE", key]));
        cmds.push(cmd(&[b"GET", key]));
        cmds.push(cmd(&[b"LRANGE", key, b"0", b"-1"]));
        cmds.push(cmd(&[b"HGETALL", key]));
        cmds.push(cmd(&[b"SMEMBERS", key]));
        cmds.push(cmd(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]));
        cmds.push(cmd(&[b"PTTL", key]));
    }
    cmds
}

/// The first difference in one sequence, with what is needed to replay it.
struct Mismatch {
    text: String,
}

impl Mismatch {
    fn new(pair: &Pair, seed: u64, mode: Mode, index: usize, cmds: &[Cmd], detail: String) -> Mismatch {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "MISMATCH {} vs {}: seed {seed:#x} ({mode:?}, {}), command #{index}:",
            pair.a.name,
            pair.b.name,
            if resp3(seed) { "RESP3" } else { "RESP2" }
        );
        let _ = writeln!(text, "  command: {}", show_args(&cmds[index].args));
        text.push_str(&detail);
        let _ = writeln!(text, "  the commands before it (most recent last):");
        if index == 0 {
            let _ = writeln!(text, "    (none)");
        }
        let shown = env_u64("FERRY_DIFF_HISTORY").unwrap_or(12) as usize;
        for (i, cmd) in cmds
            .iter()
            .enumerate()
            .take(index)
            .skip(index.saturating_sub(shown))
        {
            let _ = writeln!(text, "    #{i}: {}", show_args(&cmd.args));
        }
        let _ = write!(
            text,
            "  replay: FERRY_DIFF_SEED={seed:#x} cargo test -p ferry-redis --test differential"
        );
        Mismatch { text }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

// ---------------------------------------------------------------------------------------------
// Two connections, one per server

struct Conn {
    name: String,
    writer: TcpStream,
    reader: ReplyReader<TcpStream>,
}

impl Conn {
    fn connect(addr: SocketAddr, name: &str) -> Conn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to {name} at {addr}: {e}"));
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(REPLY_TIMEOUT)).unwrap();
        Conn {
            name: name.to_string(),
            writer: stream.try_clone().unwrap(),
            reader: ReplyReader::new(stream),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.writer.write_all(bytes)
    }

    fn reply(&mut self) -> io::Result<Reply> {
        self.reader.reply()
    }

    /// A full `SCAN` (or `HSCAN`, `SSCAN`) iteration with `cmd`'s options: the sorted union of
    /// the keys (or members; fields and values as `field value` pairs), or the first error
    /// reply. Cursors are followed, not compared.
    fn scan_all(&mut self, cmd: &Cmd) -> io::Result<Result<Vec<Vec<u8>>, Reply>> {
        let name = cmd.args[0].to_ascii_lowercase();
        let at = if name == b"scan" { 1 } else { 2 };
        let pairs = name == b"hscan" || name == b"zscan";
        let mut keys = BTreeSet::new();
        let mut cursor = cmd.args[at].clone();
        for _ in 0..10_000 {
            let mut args = cmd.args.clone();
            args[at] = cursor;
            self.send(&encode(&args))?;
            let reply = self.reply()?;
            let (next, batch) = match &reply {
                Reply::Array(items) if items.len() == 2 => match (&items[0], &items[1]) {
                    (Reply::Bulk(next), Reply::Array(batch)) => (next.clone(), batch),
                    _ => return Ok(Err(reply)),
                },
                _ => return Ok(Err(reply)),
            };
            if pairs && batch.len() % 2 == 1 {
                return Ok(Err(reply));
            }
            for item in batch.chunks(if pairs { 2 } else { 1 }) {
                let mut key = Vec::new();
                for part in item {
                    let Reply::Bulk(part) = part else {
                        return Ok(Err(reply));
                    };
                    if !key.is_empty() {
                        key.push(b' ');
                    }
                    key.extend_from_slice(part);
                }
                keys.insert(key);
            }
            if next == b"0" {
                return Ok(Ok(keys.into_iter().collect()));
            }
            cursor = next;
        }
        Err(io::Error::other("SCAN did not finish in 10000 calls"))
    }
}

struct Pair {
    a: Conn,
    b: Conn,
    /// Commands sent to each server so far.
    sent: usize,
}

impl Pair {
    fn connect(a: SocketAddr, b: SocketAddr, a_name: &str, b_name: &str) -> Pair {
        Pair {
            a: Conn::connect(a, a_name),
            b: Conn::connect(b, b_name),
            sent: 0,
        }
    }

    fn describe(&self, a: &io::Result<Reply>, b: &io::Result<Reply>) -> String {
        let show = |r: &io::Result<Reply>| match r {
            Ok(reply) => reply.to_string(),
            Err(e) => format!("<no reply: {e}>"),
        };
        format!("  {}: {}\n  {}: {}\n", self.a.name, show(a), self.b.name, show(b))
    }

    /// Sends `cmd` to both, reads one reply from each, compares.
    fn one(&mut self, cmd: &Cmd) -> Result<(), String> {
        let bytes = encode(&cmd.args);
        self.sent += 1;
        let sa = self.a.send(&bytes);
        let sb = self.b.send(&bytes);
        let ra = sa.and_then(|()| self.a.reply());
        let rb = sb.and_then(|()| self.b.reply());
        match (&ra, &rb) {
            (Ok(x), Ok(y)) if cmd.check.agree(x, y) => Ok(()),
            _ => Err(self.describe(&ra, &rb)),
        }
    }

    /// Sends `cmds` to each server in writes of the sizes `writes` (the rest in one more; all
    /// in one when it is empty), from a thread, so that a server that stops reading while its
    /// replies are unread cannot deadlock the test; then reads and compares the replies in
    /// order. On a mismatch: its index in `cmds` and the details.
    fn batch(&mut self, cmds: &[Cmd], writes: &[usize]) -> Result<(), (usize, String)> {
        let bytes: Vec<u8> = cmds.iter().flat_map(|c| encode(&c.args)).collect();
        self.sent += cmds.len();
        let read_all = |reader: &mut ReplyReader<TcpStream>| -> Vec<io::Result<Reply>> {
            let mut replies = Vec::with_capacity(cmds.len());
            for _ in cmds {
                let r = reader.reply();
                let failed = r.is_err();
                replies.push(r);
                if failed {
                    break;
                }
            }
            replies
        };
        let (ra, rb) = std::thread::scope(|s| {
            let (wa, wb) = (&mut self.a.writer, &mut self.b.writer);
            let (bytes_a, bytes_b) = (&bytes, &bytes);
            let ta = s.spawn(move || write_in_pieces(wa, bytes_a, writes));
            let tb = s.spawn(move || write_in_pieces(wb, bytes_b, writes));
            let ra = read_all(&mut self.a.reader);
            let rb = read_all(&mut self.b.reader);
            let (wa, wb) = (ta.join().unwrap(), tb.join().unwrap());
            // A failed write explains the failed read after it.
            let fold = |mut r: Vec<io::Result<Reply>>, w: io::Result<()>| {
                if let Err(e) = w {
                    let text = format!("writing the batch failed: {e}");
                    match r.last_mut() {
                        Some(Err(last)) => *last = io::Error::new(last.kind(), format!("{last}; {text}")),
                        _ => r.push(Err(io::Error::other(text))),
                    }
                }
                r
            };
            (fold(ra, wa), fold(rb, wb))
        });
        for (i, cmd) in cmds.iter().enumerate() {
            let missing = || Err(io::Error::other("not read (an earlier reply failed)"));
            let x = ra.get(i).map_or_else(missing, clone_result);
            let y = rb.get(i).map_or_else(missing, clone_result);
            match (&x, &y) {
                (Ok(p), Ok(q)) if cmd.check.agree(p, q) => {}
                _ => return Err((i, self.describe(&x, &y))),
            }
        }
        Ok(())
    }

    /// A full `SCAN` iteration on each server; the sorted key sets must be equal.
    fn scan(&mut self, cmd: &Cmd) -> Result<(), String> {
        self.sent += 1;
        let ka = self.a.scan_all(cmd);
        let kb = self.b.scan_all(cmd);
        let show = |r: &io::Result<Result<Vec<Vec<u8>>, Reply>>| match r {
            Ok(Ok(keys)) => {
                let keys: Vec<String> = keys.iter().map(|k| show_bytes(k, 40)).collect();
                format!("keys over a full iteration: [{}]", keys.join(", "))
            }
            Ok(Err(reply)) => format!("{reply}"),
            Err(e) => format!("<no reply: {e}>"),
        };
        match (&ka, &kb) {
            (Ok(x), Ok(y)) if x == y => Ok(()),
            _ => Err(format!(
                "  {}: {}\n  {}: {}\n",
                self.a.name,
                show(&ka),
                self.b.name,
                show(&kb)
            )),
        }
    }
}

/// Writes `bytes` in writes of the sizes `writes`, then the rest, if any, in one.
fn write_in_pieces(w: &mut TcpStream, mut bytes: &[u8], writes: &[usize]) -> io::Result<()> {
    for &n in writes {
        let (piece, rest) = bytes.split_at(n.min(bytes.len()));
        w.write_all(piece)?;
        bytes = rest;
    }
    w.write_all(bytes)
}

fn clone_result(r: &io::Result<Reply>) -> io::Result<Reply> {
    match r {
        Ok(reply) => Ok(reply.clone()),
        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
    }
}

/// A request as every client sends it (`common::encode` of owned arguments).
fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    common::encode(&args.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

// ---------------------------------------------------------------------------------------------
// The reference server

/// `redis-server` as a child process on a free loopback port ([`ferry_launch`]), killed on
/// drop.
struct RedisServer {
    _server: Server,
    addr: SocketAddr,
    path: PathBuf,
}

/// The reference server, or `None` (after printing why, see `common::missing`) when there is
/// no `redis-server`.
fn reference_or_skip(test: &str) -> Option<RedisServer> {
    common::redis_server_7_0(test).map(|path| RedisServer::start(&path))
}

impl RedisServer {
    /// Starts `path` on a free port and waits (at most 10 s) until it answers `PING`.
    fn start(path: &Path) -> RedisServer {
        let server = common::start_redis_server(path, &std::env::temp_dir(), &[], Duration::from_secs(10));
        RedisServer {
            addr: server.addr(),
            _server: server,
            path: path.to_path_buf(),
        }
    }
}

fn show_args(args: &[Vec<u8>]) -> String {
    let shown: Vec<String> = args.iter().take(12).map(|a| show_bytes(a, 48)).collect();
    let mut s = shown.join(" ");
    if args.len() > 12 {
        let _ = write!(s, " ...({} arguments)", args.len());
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Commands and how their replies are compared

#[derive(Debug, Clone, Copy, PartialEq)]
enum Check {
    /// Equal as parsed.
    Exact,
    /// An array whose order is unspecified (`KEYS`): equal once sorted.
    Sorted,
    /// A map or a flat array of pairs whose order is unspecified (`HGETALL`): equal once the
    /// pairs are sorted.
    SortedPairs,
    /// A random pick (`HRANDFIELD`): errors and nulls equal; arrays of the same length and
    /// element shapes (the properties of the picks are tested in the crate).
    Random,
    /// `TTL` (seconds) or `PTTL` (milliseconds): -2 and -1 exactly, positive values within a
    /// tolerance (the servers run the same commands a little apart in time).
    Ttl { ms: bool },
    /// `HELLO`: equal without the `id` field.
    Hello,
    /// A `SCAN` run to completion on each server, the key sets compared (not one reply).
    Scan,
}

impl Check {
    /// How replies to the command named `name` are compared.
    fn for_command(name: &[u8]) -> Check {
        match name.to_ascii_lowercase().as_slice() {
            b"keys" | b"hkeys" | b"hvals" | b"smembers" | b"sinter" | b"sunion" | b"sdiff" | b"spop" => {
                Check::Sorted
            }
            b"hgetall" => Check::SortedPairs,
            b"ttl" | b"expiretime" => Check::Ttl { ms: false },
            b"pttl" | b"pexpiretime" => Check::Ttl { ms: true },
            b"hello" => Check::Hello,
            _ => Check::Exact,
        }
    }

    fn agree(self, a: &Reply, b: &Reply) -> bool {
        match self {
            Check::Exact | Check::Scan => a == b,
            Check::Sorted => match (a, b) {
                (Reply::Array(x), Reply::Array(y)) | (Reply::Set(x), Reply::Set(y)) => sorted(x) == sorted(y),
                _ => a == b,
            },
            Check::SortedPairs => pairs(a) == pairs(b),
            Check::Random => shape(a) == shape(b),
            Check::Ttl { ms } => match (a, b) {
                (&Reply::Int(x), &Reply::Int(y)) if x > 0 && y > 0 => {
                    let tolerance = if ms { 5_000 } else { 5 };
                    x.abs_diff(y) <= tolerance
                }
                _ => a == b,
            },
            Check::Hello => without_id(a) == without_id(b),
        }
    }
}

fn sorted(items: &[Reply]) -> Vec<String> {
    let mut keys: Vec<String> = items.iter().map(|r| format!("{r:?}")).collect();
    keys.sort();
    keys
}

/// A map, or an array of pairs, as its sorted pairs.
fn pairs(reply: &Reply) -> Vec<String> {
    let mut pairs: Vec<String> = match reply {
        Reply::Map(pairs) => pairs.iter().map(|(k, v)| format!("{k:?} {v:?}")).collect(),
        Reply::Array(items) if items.len() % 2 == 0 => items
            .chunks(2)
            .map(|p| format!("{:?} {:?}", p[0], p[1]))
            .collect(),
        _ => return vec![format!("{reply:?}")],
    };
    pairs.sort();
    pairs
}

/// A reply with every bulk string and double emptied: what random picks share.
fn shape(reply: &Reply) -> Reply {
    match reply {
        Reply::Bulk(_) => Reply::Bulk(Vec::new()),
        Reply::Double(_) => Reply::Double(Vec::new()),
        Reply::Array(items) => Reply::Array(items.iter().map(shape).collect()),
        other => other.clone(),
    }
}

/// `HELLO`'s reply (a map in RESP3, a flat array of pairs in RESP2) without the `id` pair.
fn without_id(reply: &Reply) -> Reply {
    let is_id = |k: &Reply| matches!(k, Reply::Bulk(k) | Reply::Simple(k) if k == b"id");
    match reply {
        Reply::Map(pairs) => Reply::Map(pairs.iter().filter(|(k, _)| !is_id(k)).cloned().collect()),
        Reply::Array(items) if items.len() % 2 == 0 => Reply::Array(
            items
                .chunks(2)
                .filter(|pair| !is_id(&pair[0]))
                .flat_map(|pair| pair.iter().cloned())
                .collect(),
        ),
        other => other.clone(),
    }
}

#[derive(Debug, Clone)]
struct Cmd {
    args: Vec<Vec<u8>>,
    check: Check,
}

impl Cmd {
    fn exact(args: Vec<Vec<u8>>) -> Cmd {
        Cmd {
            args,
            check: Check::Exact,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The generator

/// SplitMix64: small, seedable, good enough to pick commands.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the bias is irrelevant here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `num/den`.
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.index(items.len())]
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
}

/// The key space: 8 keys, one of them with bytes that need binary-safe handling.
const KEYS: [&[u8]; 8] = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5", b"k6", b"bin\x00\r\n 7"];

/// Integers as clients write them, and things that look like integers but are not (Redis
/// accepts exactly an optional `-` and digits without a leading zero, within i64).
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "7",
    "42",
    "-42",
    "100",
    "9223372036854775807",
    "9223372036854775806",
    "-9223372036854775808",
    "-9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "4611686018427387904",
    "1.5",
    "1e3",
    " 1",
    "1 ",
    "+1",
    "01",
    "-0",
    "00",
    "0x1f",
    "abc",
    "",
    "-",
    "1\u{0}",
    "\u{663}",
];

/// `KEYS` and `SCAN MATCH` patterns: globs with classes, ranges, negation, escapes, and a few
/// malformed ones.
const PATTERNS: &[&[u8]] = &[
    b"*",
    b"k*",
    b"k?",
    b"k[0-3]",
    b"k[^0-3]",
    b"k[3-0]",
    b"*[13579]",
    b"\\k*",
    b"k\\?",
    b"k[\\]]",
    b"",
    b"k[",
    b"k[1-",
    b"*\x00*",
    b"bin*",
    b"?",
    b"??",
    b"[a-z]?",
    b"K*",
    b"*7",
    b"**k**",
    b"k[!0]",
];

/// Redis 7.0's arity of each command the generator sends (n: exactly n arguments with the
/// name, -n: at least n), written out here rather than read from the crate.
const ARITIES: &[(&str, i32)] = &[
    ("get", 2),
    ("set", -3),
    ("mget", -2),
    ("mset", -3),
    ("setnx", 3),
    ("getset", 3),
    ("getdel", 2),
    ("restore", -4),
    ("append", 3),
    ("strlen", 2),
    ("incr", 2),
    ("incrby", 3),
    ("decr", 2),
    ("decrby", 3),
    ("del", -2),
    ("unlink", -2),
    ("exists", -2),
    ("type", 2),
    ("expire", -3),
    ("pexpire", -3),
    ("ttl", 2),
    ("pttl", 2),
    ("persist", 2),
    ("keys", 2),
    ("scan", -2),
    ("lpush", -3),
    ("rpush", -3),
    ("lpop", -2),
    ("rpop", -2),
    ("lrange", 4),
    ("llen", 2),
    ("lindex", 3),
    ("lset", 4),
    ("ltrim", 4),
    ("hset", -4),
    ("hsetnx", 4),
    ("hget", 3),
    ("hmget", -3),
    ("hdel", -3),
    ("hlen", 2),
    ("hstrlen", 3),
    ("hexists", 3),
    ("hincrby", 4),
    ("hincrbyfloat", 4),
    ("hgetall", 2),
    ("hkeys", 2),
    ("hvals", 2),
    ("hscan", -3),
    ("hrandfield", -2),
    ("hmset", -4),
    ("sadd", -3),
    ("srem", -3),
    ("smembers", 2),
    ("sismember", 3),
    ("smismember", -3),
    ("scard", 2),
    ("spop", -2),
    ("srandmember", -2),
    ("smove", 4),
    ("sinter", -2),
    ("sinterstore", -3),
    ("sintercard", -3),
    ("sunion", -2),
    ("sunionstore", -3),
    ("sdiff", -2),
    ("sdiffstore", -3),
    ("sscan", -3),
    ("zadd", -4),
    ("zincrby", 4),
    ("zscore", 3),
    ("zmscore", -3),
    ("zcard", 2),
    ("zcount", 4),
    ("zlexcount", 4),
    ("zrank", 3),
    ("zrevrank", 3),
    ("zrem", -3),
    ("zrange", -4),
    ("zrangestore", -5),
    ("zrangebyscore", -4),
    ("zrevrangebyscore", -4),
    ("zrangebylex", -4),
    ("zrevrangebylex", -4),
    ("zrevrange", -4),
    ("zunion", -3),
    ("zinter", -3),
    ("zdiff", -3),
    ("zunionstore", -4),
    ("zinterstore", -4),
    ("zdiffstore", -4),
    ("zintercard", -3),
    ("zpopmin", -2),
    ("zpopmax", -2),
    ("zremrangebyrank", 4),
    ("zremrangebyscore", 4),
    ("zremrangebylex", 4),
    ("zscan", -3),
    ("zrandmember", -2),
    ("msetnx", -3),
    ("lcs", -3),
    ("setbit", 4),
    ("getbit", 3),
    ("sort", -2),
    ("sort_ro", -2),
    ("setex", 4),
    ("psetex", 4),
    ("getex", -2),
    ("setrange", 4),
    ("getrange", 4),
    ("substr", 4),
    ("incrbyfloat", 3),
    ("lpos", -3),
    ("linsert", 5),
    ("lrem", 4),
    ("lmove", 5),
    ("rpoplpush", 3),
    ("lmpop", -4),
    ("lpushx", -3),
    ("rpushx", -3),
    ("rename", 3),
    ("renamenx", 3),
    ("touch", -2),
    ("expireat", -3),
    ("pexpireat", -3),
    ("expiretime", 2),
    ("pexpiretime", 2),
    ("dbsize", 1),
    ("multi", 1),
    ("exec", 1),
    ("discard", 1),
    ("watch", -2),
    ("unwatch", 1),
    ("select", 2),
    ("move", 3),
    ("copy", -3),
    ("swapdb", 3),
    ("echo", 2),
    ("getname", 0),
];

type Generator = fn(&mut Gen) -> Cmd;

/// Every generator, its name (for `FERRY_DIFF_EXCLUDE`) and its weight.
const GENERATORS: &[(&str, u32, Generator)] = &[
    ("set", 60, Gen::set),
    ("get", 40, Gen::get),
    ("mget", 15, Gen::mget),
    ("mset", 15, Gen::mset),
    ("setnx", 10, Gen::setnx),
    ("getset", 10, Gen::getset),
    ("getdel", 10, Gen::getdel),
    ("restore", 8, Gen::restore),
    ("append", 15, Gen::append),
    ("strlen", 10, Gen::strlen),
    ("incr", 15, Gen::incr),
    ("incrby", 10, Gen::incrby),
    ("decr", 10, Gen::decr),
    ("decrby", 10, Gen::decrby),
    ("del", 15, Gen::del),
    ("unlink", 10, Gen::unlink),
    ("exists", 15, Gen::exists),
    ("type", 15, Gen::type_),
    ("expire", 20, Gen::expire),
    ("pexpire", 15, Gen::pexpire),
    ("ttl", 15, Gen::ttl),
    ("pttl", 15, Gen::pttl),
    ("persist", 10, Gen::persist),
    ("keys", 10, Gen::keys),
    ("scan", 10, Gen::scan),
    ("lpush", 25, Gen::lpush),
    ("rpush", 25, Gen::rpush),
    ("lpop", 15, Gen::lpop),
    ("rpop", 15, Gen::rpop),
    ("lrange", 20, Gen::lrange),
    ("llen", 10, Gen::llen),
    ("lindex", 10, Gen::lindex),
    ("lset", 10, Gen::lset),
    ("ltrim", 10, Gen::ltrim),
    ("hset", 25, Gen::hset),
    ("hmset", 5, Gen::hmset),
    ("hsetnx", 8, Gen::hsetnx),
    ("hget", 15, Gen::hget),
    ("hmget", 10, Gen::hmget),
    ("hdel", 12, Gen::hdel),
    ("hlen", 6, Gen::hlen),
    ("hstrlen", 6, Gen::hstrlen),
    ("hexists", 6, Gen::hexists),
    ("hincrby", 10, Gen::hincrby),
    ("hincrbyfloat", 8, Gen::hincrbyfloat),
    ("hgetall", 10, Gen::hgetall),
    ("hkeys", 5, Gen::hkeys),
    ("hvals", 5, Gen::hvals),
    ("hscan", 8, Gen::hscan),
    ("hrandfield", 8, Gen::hrandfield),
    ("sadd", 25, Gen::sadd),
    ("srem", 10, Gen::srem),
    ("smembers", 10, Gen::smembers),
    ("sismember", 8, Gen::sismember),
    ("smismember", 6, Gen::smismember),
    ("scard", 6, Gen::scard),
    ("spop", 5, Gen::spop),
    ("srandmember", 8, Gen::srandmember),
    ("smove", 8, Gen::smove),
    ("sinter", 8, Gen::sinter),
    ("sinterstore", 5, Gen::sinterstore),
    ("sintercard", 6, Gen::sintercard),
    ("sunion", 6, Gen::sunion),
    ("sunionstore", 5, Gen::sunionstore),
    ("sdiff", 6, Gen::sdiff),
    ("sdiffstore", 5, Gen::sdiffstore),
    ("sscan", 6, Gen::sscan),
    ("zadd", 30, Gen::zadd),
    ("zincrby", 8, Gen::zincrby),
    ("zscore", 8, Gen::zscore),
    ("zmscore", 5, Gen::zmscore),
    ("zcard", 5, Gen::zcard),
    ("zcount", 6, Gen::zcount),
    ("zlexcount", 5, Gen::zlexcount),
    ("zrank", 6, Gen::zrank),
    ("zrem", 8, Gen::zrem),
    ("zrange", 20, Gen::zrange),
    ("zrangestore", 5, Gen::zrangestore),
    ("zrangelegacy", 10, Gen::zrange_legacy),
    ("zsetop", 14, Gen::zset_op),
    ("zintercard", 4, Gen::zintercard),
    ("zpop", 8, Gen::zpop),
    ("zremrange", 6, Gen::zremrange),
    ("zscan", 5, Gen::zscan),
    ("zrandmember", 5, Gen::zrandmember),
    ("setex", 8, Gen::setex),
    ("getex", 10, Gen::getex),
    ("setrange", 10, Gen::setrange),
    ("getrange", 10, Gen::getrange),
    ("incrbyfloat", 8, Gen::incrbyfloat),
    ("bits", 8, Gen::bits),
    ("lcs", 5, Gen::lcs),
    ("lpos", 10, Gen::lpos),
    ("linsert", 8, Gen::linsert),
    ("lrem", 8, Gen::lrem),
    ("lmove", 10, Gen::lmove),
    ("lmpop", 8, Gen::lmpop),
    ("pushx", 6, Gen::pushx),
    ("rename", 8, Gen::rename),
    ("touch", 5, Gen::touch),
    ("expireat", 8, Gen::expireat),
    ("expiretime", 6, Gen::expiretime),
    ("dbsize", 5, Gen::dbsize),
    ("sort", 10, Gen::sort),
    ("transaction", 12, Gen::transaction),
    ("watch", 6, Gen::watch),
    ("select", 8, Gen::select),
    ("move", 5, Gen::move_),
    ("copy", 6, Gen::copy),
    ("swapdb", 3, Gen::swapdb),
    ("flushdb", 2, Gen::flushdb),
    ("arity", 10, Gen::wrong_arity),
    ("unknown", 5, Gen::unknown),
    ("connection", 5, Gen::connection),
];

struct Gen {
    rng: Rng,
    /// The enabled generators, with their cumulative weights.
    table: Vec<(u32, Generator)>,
    /// Multiples of 1000 s already used as a TTL: each is used once, so that two TTLs are
    /// always at least 1000 s apart and `GT`/`LT` never depend on when a command ran.
    ttls: HashSet<u64>,
    now_s: u64,
    /// No full-iteration `SCAN`s (they are not one reply).
    pipelined: bool,
    /// A command that must come next (see [`Gen::set`]).
    /// Commands that must come next, the first last (see [`Gen::set`], [`Gen::transaction`]).
    next: Vec<Cmd>,
}

impl Gen {
    fn new(seed: u64, exclude: &HashSet<String>, pipelined: bool) -> Gen {
        let mut total = 0;
        let mut table = Vec::new();
        for &(name, weight, generator) in GENERATORS {
            if !exclude.contains(name) {
                total += weight;
                table.push((total, generator));
            }
        }
        assert!(!table.is_empty(), "FERRY_DIFF_EXCLUDE left no generator");
        Gen {
            rng: Rng(seed),
            table,
            ttls: HashSet::new(),
            now_s: SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs(),
            pipelined,
            next: Vec::new(),
        }
    }

    /// The commands that must still come (the rest of a transaction), in order.
    fn pending(&mut self) -> Vec<Cmd> {
        let mut rest = std::mem::take(&mut self.next);
        rest.reverse();
        rest
    }

    fn command(&mut self) -> Cmd {
        if let Some(cmd) = self.next.pop() {
            return cmd;
        }
        let total = self.table.last().unwrap().0;
        let x = self.rng.below(u64::from(total)) as u32;
        let generator = self.table.iter().find(|(upto, _)| x < *upto).unwrap().1;
        generator(self)
    }

    // --- arguments

    /// How a pipelined batch is cut into writes: half the time one write, else pieces of
    /// random sizes from 1 byte to 20 KB, so that the server reads commands cut anywhere
    /// (within a length line, a value, a CRLF) as well as many at once.
    fn writes(&mut self) -> Vec<usize> {
        if self.rng.chance(1, 2) {
            return Vec::new();
        }
        (0..64)
            .map(|_| match self.rng.below(3) {
                0 => 1 + self.rng.index(16),
                1 => 17 + self.rng.index(1500),
                _ => 1501 + self.rng.index(20_000),
            })
            .collect()
    }

    /// `name` in upper, lower or mixed case (commands and options are case-insensitive).
    fn word(&mut self, name: &str) -> Vec<u8> {
        match self.rng.below(8) {
            0 => name.to_ascii_lowercase().into_bytes(),
            1 => name
                .bytes()
                .map(|c| {
                    if self.rng.chance(1, 2) {
                        c.to_ascii_lowercase()
                    } else {
                        c.to_ascii_uppercase()
                    }
                })
                .collect(),
            _ => name.to_ascii_uppercase().into_bytes(),
        }
    }

    fn key(&mut self) -> Vec<u8> {
        self.rng.pick(&KEYS).to_vec()
    }

    /// A key for a string command: mostly one of the first half of the key space, so that
    /// lists live long enough to grow in the other half, but any key one time in eight (type
    /// clashes; more would keep the list half holding strings).
    fn string_key(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 8) {
            self.key()
        } else {
            KEYS[self.rng.index(4)].to_vec()
        }
    }

    /// A key for a list command: mostly one of the second half.
    fn list_key(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 4) {
            self.key()
        } else {
            KEYS[4 + self.rng.index(4)].to_vec()
        }
    }

    fn keys_arg(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = 1 + self.rng.index(max);
        (0..n).map(|_| self.key()).collect()
    }

    fn random_bytes(&mut self, n: usize) -> Vec<u8> {
        let printable = self.rng.chance(1, 3);
        (0..n)
            .map(|_| {
                let b = self.rng.next() as u8;
                if printable { b'a' + b % 26 } else { b }
            })
            .collect()
    }

    /// A value: a number-like string, or random bytes of a size around the server's
    /// thresholds (empty, small, ~512 B, ~4 KiB, ~16 KiB, ~70 KiB).
    fn value(&mut self) -> Vec<u8> {
        let len = match self.rng.below(100) {
            0..=29 => return self.number(),
            30..=37 => 0,
            38..=69 => 1 + self.rng.index(40),
            70..=83 => 500 + self.rng.index(30),
            84..=94 => 4080 + self.rng.index(32),
            95..=97 => 16_370 + self.rng.index(30),
            _ => 70 * 1024 + self.rng.index(64),
        };
        self.random_bytes(len)
    }

    fn number(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 2) {
            self.rng.range(-20, 20).to_string().into_bytes()
        } else {
            self.rng.pick(NUMBERS).as_bytes().to_vec()
        }
    }

    /// An index, count or increment: mostly small, sometimes extreme or not a number.
    fn int_arg(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=6 => self.rng.range(-12, 12).to_string().into_bytes(),
            7 => self.rng.range(-200, 200).to_string().into_bytes(),
            _ => self.rng.pick(NUMBERS).as_bytes().to_vec(),
        }
    }

    /// An index into a short list (`LINDEX`, `LSET`): mostly within a few elements of either
    /// end, so that some land.
    fn index_arg(&mut self) -> Vec<u8> {
        if self.rng.chance(2, 3) {
            self.rng.range(-4, 4).to_string().into_bytes()
        } else {
            self.int_arg()
        }
    }

    /// An `INCRBY`/`DECRBY` amount: small, near the ends of i64 (overflow), or not a number.
    fn amount_arg(&mut self) -> Vec<u8> {
        match self.rng.below(4) {
            0 | 1 => self.rng.range(-100, 100).to_string().into_bytes(),
            2 => {
                let near = *self.rng.pick(&[i64::MAX, i64::MIN, i64::MAX / 2, i64::MIN / 2]);
                near.saturating_add(self.rng.range(-3, 3))
                    .to_string()
                    .into_bytes()
            }
            _ => self.rng.pick(NUMBERS).as_bytes().to_vec(),
        }
    }

    /// A fresh multiple of 1000 s, up to about 31 years.
    fn fresh_ttl_s(&mut self) -> u64 {
        loop {
            let k = 1 + self.rng.below(1_000_000);
            if self.ttls.insert(k) {
                return k * 1000;
            }
        }
    }

    /// The argument of `EXPIRE` (seconds) or `PEXPIRE` (`ms`): large, zero or negative (the
    /// key is deleted at once), or out of range or not a number.
    fn ttl_arg(&mut self, ms: bool) -> Vec<u8> {
        let scale = if ms { 1000 } else { 1 };
        match self.rng.below(20) {
            0..=13 => (self.fresh_ttl_s() * scale).to_string().into_bytes(),
            14 => b"0".to_vec(),
            15 => self.rng.range(-100, -1).to_string().into_bytes(),
            16 => b"-9223372036854775808".to_vec(),
            _ => self
                .rng
                .pick(&[
                    "9223372036854775807",
                    "9223372036854775",
                    "9223372036854776",
                    "-9223372036854776",
                    "9223372036854775808",
                    "1.5",
                    "abc",
                    "",
                    "+100000",
                ])
                .as_bytes()
                .to_vec(),
        }
    }

    fn cmd(&mut self, name: &str, rest: Vec<Vec<u8>>) -> Cmd {
        let mut args = vec![self.word(name)];
        args.extend(rest);
        Cmd::exact(args)
    }

    // --- strings

    fn set(&mut self) -> Cmd {
        let mut args = vec![self.string_key(), self.value()];
        let options = if self.rng.chance(1, 2) {
            0
        } else {
            1 + self.rng.below(3)
        };
        for _ in 0..options {
            match self.rng.below(12) {
                0 | 1 => args.push(self.word("NX")),
                2 | 3 => args.push(self.word("XX")),
                4 | 5 => args.push(self.word("GET")),
                6 => {
                    args.push(self.word("EX"));
                    args.push(self.fresh_ttl_s().to_string().into_bytes());
                }
                7 => {
                    args.push(self.word("PX"));
                    args.push((self.fresh_ttl_s() * 1000).to_string().into_bytes());
                }
                8 => {
                    args.push(self.word("EXAT"));
                    let at = if self.rng.chance(1, 4) {
                        // In the past. Redis 7.0 then stores the key with its expiry passed,
                        // and it is counted by DBSIZE (and matched by SCAN TYPE none) until an
                        // access or the active expiry cycle removes it: when is timing. An
                        // EXISTS at once removes it, and checks that it reads as gone.
                        self.next
                            .push(Cmd::exact(vec![b"EXISTS".to_vec(), args[0].clone()]));
                        self.rng.range(1, 1_000_000) as u64
                    } else {
                        self.now_s + self.fresh_ttl_s()
                    };
                    args.push(at.to_string().into_bytes());
                }
                9 => {
                    args.push(self.word("PXAT"));
                    args.push(
                        ((self.now_s + self.fresh_ttl_s()) * 1000)
                            .to_string()
                            .into_bytes(),
                    );
                }
                10 => args.push(self.word("KEEPTTL")),
                _ => {
                    let bad: &[&[&str]] = &[
                        &["EX"],
                        &["EX", "0"],
                        &["PX", "-5"],
                        &["EX", "abc"],
                        &["EXAT", "0"],
                        &["FOO"],
                        &["EX", "9223372036854775807"],
                        &["PX", "9223372036854775807"],
                        &["PXAT", "9223372036854775807"],
                        &["EX", "1.5"],
                    ];
                    let words = *self.rng.pick(bad);
                    args.extend(words.iter().map(|w| w.as_bytes().to_vec()));
                }
            }
        }
        self.cmd("SET", args)
    }

    fn get(&mut self) -> Cmd {
        let k = self.string_key();
        self.cmd("GET", vec![k])
    }

    fn mget(&mut self) -> Cmd {
        let keys = if self.rng.chance(1, 20) {
            self.keys_arg(100)
        } else {
            self.keys_arg(5)
        };
        self.cmd("MGET", keys)
    }

    fn mset(&mut self) -> Cmd {
        let pairs = 1 + self.rng.index(4);
        let mut args = Vec::new();
        for _ in 0..pairs {
            args.push(self.string_key());
            args.push(self.value());
        }
        if self.rng.chance(1, 10) {
            args.pop(); // an odd count: a wrong-arity error
        }
        let name = if self.rng.chance(1, 4) { "MSETNX" } else { "MSET" };
        self.cmd(name, args)
    }

    fn setnx(&mut self) -> Cmd {
        let args = vec![self.string_key(), self.value()];
        self.cmd("SETNX", args)
    }

    fn getset(&mut self) -> Cmd {
        let args = vec![self.string_key(), self.value()];
        self.cmd("GETSET", args)
    }

    fn getdel(&mut self) -> Cmd {
        let k = self.string_key();
        self.cmd("GETDEL", vec![k])
    }

    /// `RESTORE key ttl payload [REPLACE] [ABSTTL]` of a value of any type that Ferry's
    /// `DUMP` encoding made (both servers load it), sometimes corrupted or cut short (both
    /// refuse it with the same error), with no TTL, a fresh one, an absolute one, one already
    /// past, or a bad one.
    fn restore(&mut self) -> Cmd {
        use ferry_redis::db::Value;
        static POOL: std::sync::OnceLock<ferry_buf::Pool> = std::sync::OnceLock::new();
        let pool = POOL.get_or_init(ferry_testkit::pool);
        let buf = |b: Vec<u8>| pool.copy_from(&b).expect("pool");
        let n = 1 + self.rng.index(5);
        let value = match self.rng.below(5) {
            0 => Value::Str(buf(self.value())),
            1 => Value::List((0..n).map(|_| buf(self.value())).collect()),
            2 => {
                let mut set = ferry_redis::fields::FieldTable::default();
                for _ in 0..n {
                    set.insert(buf(self.value()), ());
                }
                Value::Set(set)
            }
            3 => {
                let mut hash = ferry_redis::fields::FieldTable::default();
                for _ in 0..n {
                    let (f, v) = (self.value(), self.value());
                    hash.insert(buf(f), buf(v));
                }
                Value::Hash(hash)
            }
            _ => {
                let members = (0..n)
                    .map(|i| {
                        (
                            buf(format!("m{i}").into_bytes()),
                            self.rng.range(-5, 5) as f64 / 2.0,
                        )
                    })
                    .collect();
                Value::ZSet(ferry_redis::zset::ZSet::collect(members))
            }
        };
        let mut payload = Vec::new();
        ferry_redis::rdb::dump(&value, &mut payload);
        match self.rng.below(16) {
            0 => {
                let i = self.rng.index(payload.len());
                payload[i] ^= 1 << self.rng.below(8);
            }
            1 => payload.truncate(self.rng.index(payload.len())),
            _ => {}
        }
        let mut absttl = false;
        let ttl = match self.rng.below(10) {
            0..=3 => b"0".to_vec(),
            4..=6 => self.fresh_ttl_s().to_string().into_bytes(),
            7 => {
                absttl = true;
                (self.now_s * 1000 + self.fresh_ttl_s()).to_string().into_bytes()
            }
            8 => {
                absttl = true;
                b"1000".to_vec() // long past: the key is deleted
            }
            _ => self.rng.pick(&["-1", "abc", ""]).as_bytes().to_vec(),
        };
        let mut args = vec![self.key(), ttl, payload];
        if self.rng.chance(1, 2) {
            args.push(self.word("REPLACE"));
        }
        if absttl {
            args.push(self.word("ABSTTL"));
        }
        self.cmd("RESTORE", args)
    }

    fn append(&mut self) -> Cmd {
        let args = vec![self.string_key(), self.value()];
        self.cmd("APPEND", args)
    }

    fn strlen(&mut self) -> Cmd {
        let k = self.string_key();
        self.cmd("STRLEN", vec![k])
    }

    fn incr(&mut self) -> Cmd {
        let k = self.string_key();
        self.cmd("INCR", vec![k])
    }

    fn decr(&mut self) -> Cmd {
        let k = self.string_key();
        self.cmd("DECR", vec![k])
    }

    fn incrby(&mut self) -> Cmd {
        let args = vec![self.string_key(), self.amount_arg()];
        self.cmd("INCRBY", args)
    }

    fn decrby(&mut self) -> Cmd {
        let args = vec![self.string_key(), self.amount_arg()];
        self.cmd("DECRBY", args)
    }

    fn setex(&mut self) -> Cmd {
        let ms = self.rng.chance(1, 2);
        let args = vec![self.string_key(), self.ttl_arg(ms), self.value()];
        self.cmd(if ms { "PSETEX" } else { "SETEX" }, args)
    }

    /// `GETEX` with no option, one, or a conflicting or malformed pair.
    fn getex(&mut self) -> Cmd {
        let mut args = vec![self.string_key()];
        for _ in 0..self.rng.below(3) {
            match self.rng.below(8) {
                0 | 1 => args.push(self.word("PERSIST")),
                2 => {
                    args.push(self.word("EX"));
                    args.push(self.ttl_arg(false));
                }
                3 => {
                    args.push(self.word("PX"));
                    args.push(self.ttl_arg(true));
                }
                4 => {
                    args.push(self.word("EXAT"));
                    let at = if self.rng.chance(1, 4) {
                        self.rng.range(1, 1_000_000) as u64
                    } else {
                        self.now_s + self.fresh_ttl_s()
                    };
                    args.push(at.to_string().into_bytes());
                }
                5 => {
                    args.push(self.word("PXAT"));
                    let at = (self.now_s + self.fresh_ttl_s()) * 1000;
                    args.push(at.to_string().into_bytes());
                }
                6 => args.push(self.word("EX")),
                _ => {
                    let opt = *self.rng.pick(&["NX", "KEEPTTL", "GET", "FOO"]);
                    args.push(self.word(opt));
                }
            }
        }
        self.cmd("GETEX", args)
    }

    /// An offset: mostly small, sometimes past the end, negative or not a number, or large
    /// enough to exceed `proto-max-bulk-len` (both servers refuse it the same way).
    fn offset_arg(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=6 => self.rng.range(0, 40).to_string().into_bytes(),
            7 => b"536870912".to_vec(),
            _ => self.int_arg(),
        }
    }

    fn setrange(&mut self) -> Cmd {
        let value = if self.rng.chance(1, 6) {
            Vec::new()
        } else {
            let n = 1 + self.rng.index(12);
            self.random_bytes(n)
        };
        let args = vec![self.string_key(), self.offset_arg(), value];
        self.cmd("SETRANGE", args)
    }

    fn getrange(&mut self) -> Cmd {
        let args = vec![self.string_key(), self.int_arg(), self.int_arg()];
        let name = if self.rng.chance(1, 4) {
            "SUBSTR"
        } else {
            "GETRANGE"
        };
        self.cmd(name, args)
    }

    /// `MSET` of two short strings on keys of their own (the table of a long pair would pass
    /// Ferry's smaller `proto-max-bulk-len` and not Redis's), then `LCS` of them with options.
    fn lcs(&mut self) -> Cmd {
        let mut strings = Vec::new();
        for _ in 0..2 {
            let n = self.rng.index(24);
            let s: Vec<u8> = (0..n).map(|_| b"abcd"[self.rng.index(4)]).collect();
            strings.push(s);
        }
        let mut args = vec![b"LCS".to_vec(), b"lcs1".to_vec(), b"lcs2".to_vec()];
        for _ in 0..self.rng.below(3) {
            let opt = *self
                .rng
                .pick(&["LEN", "IDX", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "FOO"]);
            args.push(self.word(opt));
            if opt == "MINMATCHLEN" && self.rng.chance(9, 10) {
                args.push(self.rng.range(-1, 4).to_string().into_bytes());
            }
        }
        self.next.push(Cmd::exact(args));
        let [a, b] = [strings.remove(0), strings.remove(0)];
        self.cmd("MSET", vec![b"lcs1".to_vec(), a, b"lcs2".to_vec(), b])
    }

    /// `SETBIT` or `GETBIT` near the start of a string, sometimes past its end or out of range.
    fn bits(&mut self) -> Cmd {
        let offset = if self.rng.chance(4, 5) {
            self.rng.below(120).to_string().into_bytes()
        } else {
            self.int_arg()
        };
        let key = self.string_key();
        if self.rng.chance(1, 2) {
            return self.cmd("GETBIT", vec![key, offset]);
        }
        let bit = self
            .rng
            .pick(&["0", "1", "1", "0", "2", "-1", "x"])
            .as_bytes()
            .to_vec();
        self.cmd("SETBIT", vec![key, offset, bit])
    }

    /// `INCRBYFLOAT` on a key of its own, by amounts exact in binary: Ferry adds in `f64`
    /// where Redis uses `long double` (documented), so other amounts may differ in the last
    /// digits.
    fn incrbyfloat(&mut self) -> Cmd {
        let incr = self
            .rng
            .pick(&[
                "1.5", "-0.25", "3", "0.5", "-2", "10.75", "1e3", "-1e2", "+4", "0", "abc", "", " 1", "inf",
                "-inf", "nan", "1.5x", "0x10", "--1",
            ])
            .as_bytes()
            .to_vec();
        self.cmd("INCRBYFLOAT", vec![b"fl".to_vec(), incr])
    }

    // --- keys

    fn rename(&mut self) -> Cmd {
        let args = vec![self.key(), self.key()];
        let name = if self.rng.chance(1, 2) {
            "RENAMENX"
        } else {
            "RENAME"
        };
        self.cmd(name, args)
    }

    fn touch(&mut self) -> Cmd {
        let keys = self.keys_arg(4);
        self.cmd("TOUCH", keys)
    }

    /// `EXPIREAT` or `PEXPIREAT`: a future time, one in the past (the key is deleted), or a
    /// malformed one, with `EXPIRE`'s options.
    fn expireat(&mut self) -> Cmd {
        let ms = self.rng.chance(1, 2);
        let scale = if ms { 1000 } else { 1 };
        let at = match self.rng.below(6) {
            0..=3 => ((self.now_s + self.fresh_ttl_s()) * scale)
                .to_string()
                .into_bytes(),
            4 => self.rng.range(1, 1_000_000).to_string().into_bytes(),
            _ => self.ttl_arg(ms),
        };
        let mut args = vec![self.key(), at];
        self.expire_options(&mut args);
        self.cmd(if ms { "PEXPIREAT" } else { "EXPIREAT" }, args)
    }

    fn expiretime(&mut self) -> Cmd {
        let k = self.key();
        let name = if self.rng.chance(1, 2) {
            "PEXPIRETIME"
        } else {
            "EXPIRETIME"
        };
        let mut cmd = self.cmd(name, vec![k]);
        cmd.check = Check::for_command(name.as_bytes());
        cmd
    }

    /// Keys to delete: mostly one (deleting several at a time would leave lists no time to
    /// grow), sometimes up to four, repeats included.
    fn doomed_keys(&mut self) -> Vec<Vec<u8>> {
        if self.rng.chance(1, 4) {
            self.keys_arg(4)
        } else {
            vec![self.key()]
        }
    }

    fn del(&mut self) -> Cmd {
        let keys = self.doomed_keys();
        self.cmd("DEL", keys)
    }

    fn unlink(&mut self) -> Cmd {
        let keys = self.doomed_keys();
        self.cmd("UNLINK", keys)
    }

    fn exists(&mut self) -> Cmd {
        let keys = self.keys_arg(4);
        self.cmd("EXISTS", keys)
    }

    fn type_(&mut self) -> Cmd {
        let k = self.key();
        self.cmd("TYPE", vec![k])
    }

    fn expire_options(&mut self, args: &mut Vec<Vec<u8>>) {
        if self.rng.chance(1, 3) {
            for _ in 0..1 + self.rng.below(2) {
                if self.rng.chance(1, 10) {
                    // Bytes: Redis quotes an unknown option in its error.
                    let n = 1 + self.rng.index(8);
                    args.push(self.random_bytes(n));
                } else {
                    let option = *self.rng.pick(&["NX", "XX", "GT", "LT", "FOO"]);
                    args.push(self.word(option));
                }
            }
        }
    }

    fn expire(&mut self) -> Cmd {
        let mut args = vec![self.key(), self.ttl_arg(false)];
        self.expire_options(&mut args);
        self.cmd("EXPIRE", args)
    }

    fn pexpire(&mut self) -> Cmd {
        let mut args = vec![self.key(), self.ttl_arg(true)];
        self.expire_options(&mut args);
        self.cmd("PEXPIRE", args)
    }

    fn ttl(&mut self) -> Cmd {
        let k = self.key();
        let mut cmd = self.cmd("TTL", vec![k]);
        cmd.check = Check::Ttl { ms: false };
        cmd
    }

    fn pttl(&mut self) -> Cmd {
        let k = self.key();
        let mut cmd = self.cmd("PTTL", vec![k]);
        cmd.check = Check::Ttl { ms: true };
        cmd
    }

    fn persist(&mut self) -> Cmd {
        let k = self.key();
        self.cmd("PERSIST", vec![k])
    }

    fn pattern(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 6) {
            self.key()
        } else {
            self.rng.pick(PATTERNS).to_vec()
        }
    }

    fn keys(&mut self) -> Cmd {
        let p = self.pattern();
        let mut cmd = self.cmd("KEYS", vec![p]);
        cmd.check = Check::Sorted;
        cmd
    }

    /// A valid `SCAN` (run to completion on each server, unless pipelined) or an invalid one
    /// (one reply, an error, compared exactly).
    fn scan(&mut self) -> Cmd {
        if self.pipelined || self.rng.chance(1, 4) {
            let bad: &[&[&str]] = &[
                &["abc"],
                &["0", "COUNT", "0"],
                &["0", "COUNT", "-3"],
                &["0", "COUNT", "x"],
                &["0", "COUNT"],
                &["0", "MATCH"],
                &["0", "FOO", "1"],
                &["18446744073709551616"],
                &["0", "TYPE"],
            ];
            let words = *self.rng.pick(bad);
            let rest = words.iter().map(|w| w.as_bytes().to_vec()).collect();
            return self.cmd("SCAN", rest);
        }
        let mut args = vec![b"0".to_vec()];
        if self.rng.chance(1, 2) {
            args.push(self.word("MATCH"));
            args.push(self.pattern());
        }
        if self.rng.chance(1, 2) {
            args.push(self.word("COUNT"));
            args.push(self.rng.pick(&["1", "2", "3", "10", "1000"]).as_bytes().to_vec());
        }
        if self.rng.chance(1, 4) {
            args.push(self.word("TYPE"));
            args.push(
                self.rng
                    .pick(&["string", "list", "STRING", "hash", "set", "zset", "none"])
                    .as_bytes()
                    .to_vec(),
            );
        }
        let mut cmd = self.cmd("SCAN", args);
        cmd.check = Check::Scan;
        cmd
    }

    // --- lists

    /// One to six values, or now and then a few hundred short ones (a request with many
    /// arguments).
    fn push(&mut self, name: &str) -> Cmd {
        let mut args = vec![self.list_key()];
        if self.rng.chance(1, 50) {
            for _ in 0..100 + self.rng.below(200) {
                args.push(self.number());
            }
        } else {
            for _ in 0..1 + self.rng.below(6) {
                args.push(self.value());
            }
        }
        self.cmd(name, args)
    }

    fn lpush(&mut self) -> Cmd {
        self.push("LPUSH")
    }

    fn rpush(&mut self) -> Cmd {
        self.push("RPUSH")
    }

    fn pop(&mut self, name: &str) -> Cmd {
        let mut args = vec![self.list_key()];
        if self.rng.chance(1, 2) {
            let count = match self.rng.below(10) {
                0 => b"0".to_vec(),
                1..=6 => (1 + self.rng.below(4)).to_string().into_bytes(),
                7 => b"100".to_vec(),
                _ => self.int_arg(),
            };
            args.push(count);
            if self.rng.chance(1, 30) {
                args.push(b"1".to_vec()); // one argument too many: a syntax error
            }
        }
        self.cmd(name, args)
    }

    fn lpop(&mut self) -> Cmd {
        self.pop("LPOP")
    }

    fn rpop(&mut self) -> Cmd {
        self.pop("RPOP")
    }

    fn lrange(&mut self) -> Cmd {
        let args = vec![self.list_key(), self.int_arg(), self.int_arg()];
        self.cmd("LRANGE", args)
    }

    fn llen(&mut self) -> Cmd {
        let k = self.list_key();
        self.cmd("LLEN", vec![k])
    }

    fn lindex(&mut self) -> Cmd {
        let args = vec![self.list_key(), self.index_arg()];
        self.cmd("LINDEX", args)
    }

    fn lset(&mut self) -> Cmd {
        let args = vec![self.list_key(), self.index_arg(), self.value()];
        self.cmd("LSET", args)
    }

    /// Mostly a trim that keeps something (`0..2` to `-1..-3`), else random bounds (which
    /// often empty the list, deleting the key).
    fn ltrim(&mut self) -> Cmd {
        let (start, stop) = if self.rng.chance(2, 3) {
            let start = self.rng.range(0, 2).to_string().into_bytes();
            let stop = self.rng.range(-3, -1).to_string().into_bytes();
            (start, stop)
        } else {
            (self.int_arg(), self.int_arg())
        };
        let args = vec![self.list_key(), start, stop];
        self.cmd("LTRIM", args)
    }

    fn side(&mut self) -> Vec<u8> {
        let side = *self.rng.pick(&["LEFT", "RIGHT", "LEFT", "RIGHT", "MIDDLE"]);
        self.word(side)
    }

    /// An element to look for: one that is often in the lists (short numbers).
    fn element(&mut self) -> Vec<u8> {
        if self.rng.chance(3, 4) {
            self.rng.range(-20, 20).to_string().into_bytes()
        } else {
            self.value()
        }
    }

    fn lpos(&mut self) -> Cmd {
        let mut args = vec![self.list_key(), self.element()];
        for _ in 0..self.rng.below(4) {
            let opt = *self.rng.pick(&["RANK", "COUNT", "MAXLEN", "FOO"]);
            args.push(self.word(opt));
            if self.rng.chance(9, 10) {
                args.push(self.index_arg());
            }
        }
        self.cmd("LPOS", args)
    }

    fn linsert(&mut self) -> Cmd {
        let side = *self.rng.pick(&["BEFORE", "AFTER", "BEFORE", "AFTER", "NEAR"]);
        let args = vec![self.list_key(), self.word(side), self.element(), self.value()];
        self.cmd("LINSERT", args)
    }

    fn lrem(&mut self) -> Cmd {
        let args = vec![self.list_key(), self.index_arg(), self.element()];
        self.cmd("LREM", args)
    }

    fn lmove(&mut self) -> Cmd {
        if self.rng.chance(1, 3) {
            let args = vec![self.list_key(), self.list_key()];
            return self.cmd("RPOPLPUSH", args);
        }
        let args = vec![self.list_key(), self.list_key(), self.side(), self.side()];
        self.cmd("LMOVE", args)
    }

    fn lmpop(&mut self) -> Cmd {
        let n = 1 + self.rng.index(3);
        let numkeys = if self.rng.chance(1, 10) {
            self.int_arg()
        } else {
            n.to_string().into_bytes()
        };
        let mut args = vec![numkeys];
        for _ in 0..n {
            args.push(self.list_key());
        }
        args.push(self.side());
        if self.rng.chance(1, 2) {
            args.push(self.word("COUNT"));
            if self.rng.chance(9, 10) {
                args.push(self.index_arg());
            }
        }
        self.cmd("LMPOP", args)
    }

    fn pushx(&mut self) -> Cmd {
        let name = if self.rng.chance(1, 2) { "LPUSHX" } else { "RPUSHX" };
        self.push(name)
    }

    // --- hashes

    /// A key for a hash command: mostly keys 2 to 5 (shared with strings and lists: type
    /// clashes), any key one time in four.
    fn hash_key(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 4) {
            self.key()
        } else {
            KEYS[2 + self.rng.index(4)].to_vec()
        }
    }

    /// A field name: mostly one of a few (so that fields are overwritten and deleted), else
    /// any value (empty, binary, large).
    fn field(&mut self) -> Vec<u8> {
        if self.rng.chance(4, 5) {
            format!("f{}", self.rng.below(6)).into_bytes()
        } else {
            self.value()
        }
    }

    fn field_values(&mut self, args: &mut Vec<Vec<u8>>) {
        for _ in 0..1 + self.rng.below(4) {
            args.push(self.field());
            args.push(self.value());
        }
        if self.rng.chance(1, 10) {
            args.pop(); // a field without a value: a wrong-arity error
        }
    }

    fn hset(&mut self) -> Cmd {
        let mut args = vec![self.hash_key()];
        self.field_values(&mut args);
        self.cmd("HSET", args)
    }

    fn hmset(&mut self) -> Cmd {
        let mut args = vec![self.hash_key()];
        self.field_values(&mut args);
        self.cmd("HMSET", args)
    }

    fn hsetnx(&mut self) -> Cmd {
        let args = vec![self.hash_key(), self.field(), self.value()];
        self.cmd("HSETNX", args)
    }

    fn hget(&mut self) -> Cmd {
        let args = vec![self.hash_key(), self.field()];
        self.cmd("HGET", args)
    }

    fn hmget(&mut self) -> Cmd {
        let mut args = vec![self.hash_key()];
        for _ in 0..1 + self.rng.below(5) {
            args.push(self.field());
        }
        self.cmd("HMGET", args)
    }

    fn hdel(&mut self) -> Cmd {
        let mut args = vec![self.hash_key()];
        for _ in 0..1 + self.rng.below(3) {
            args.push(self.field());
        }
        self.cmd("HDEL", args)
    }

    fn hlen(&mut self) -> Cmd {
        let k = self.hash_key();
        self.cmd("HLEN", vec![k])
    }

    fn hstrlen(&mut self) -> Cmd {
        let args = vec![self.hash_key(), self.field()];
        self.cmd("HSTRLEN", args)
    }

    fn hexists(&mut self) -> Cmd {
        let args = vec![self.hash_key(), self.field()];
        self.cmd("HEXISTS", args)
    }

    fn hincrby(&mut self) -> Cmd {
        let args = vec![self.hash_key(), self.field(), self.amount_arg()];
        self.cmd("HINCRBY", args)
    }

    /// On its own field `fl` (which no other command writes), with increments exact in
    /// binary: Redis sums in x87 long double, Ferry in f64 (see `cmd::hashes`), and the two
    /// agree on such sums. Sometimes on another field, with an increment that is not a
    /// number (another field may hold an integer beyond f64's precision).
    fn hincrbyfloat(&mut self) -> Cmd {
        if self.rng.chance(1, 5) {
            let incr = self
                .rng
                .pick(&["abc", "", " 1", "nan", "inf", "1.5x"])
                .as_bytes()
                .to_vec();
            let args = vec![self.hash_key(), self.field(), incr];
            return self.cmd("HINCRBYFLOAT", args);
        }
        let field = b"fl".to_vec();
        let incr = self
            .rng
            .pick(&[
                "1.5", "-0.25", "3", "0.5", "-2", "10.75", "1e3", "-1e2", "+4", "0", "abc", "", " 1", "inf",
                "-inf", "nan", "1.5x", "--1", "0x10", "0x1p-2", "-0x1.8p1", "0x1p", "0x", "+-1",
            ])
            .as_bytes()
            .to_vec();
        let args = vec![self.hash_key(), field, incr];
        self.cmd("HINCRBYFLOAT", args)
    }

    fn hgetall(&mut self) -> Cmd {
        let k = self.hash_key();
        let mut cmd = self.cmd("HGETALL", vec![k]);
        cmd.check = Check::SortedPairs;
        cmd
    }

    fn hkeys(&mut self) -> Cmd {
        let k = self.hash_key();
        let mut cmd = self.cmd("HKEYS", vec![k]);
        cmd.check = Check::Sorted;
        cmd
    }

    fn hvals(&mut self) -> Cmd {
        let k = self.hash_key();
        let mut cmd = self.cmd("HVALS", vec![k]);
        cmd.check = Check::Sorted;
        cmd
    }

    /// `HSCAN`/`SSCAN`: a valid one (run to completion, unless pipelined) or an invalid one
    /// (an error, or nothing on a missing key, compared exactly).
    fn collection_scan(&mut self, name: &str, key: Vec<u8>) -> Cmd {
        if self.pipelined || self.rng.chance(1, 4) {
            let bad: &[&[&str]] = &[
                &["abc"],
                &["0", "COUNT", "0"],
                &["0", "COUNT", "x"],
                &["0", "COUNT"],
                &["0", "MATCH"],
                &["0", "TYPE", "hash"],
                &["18446744073709551616"],
                &[" 1"],
            ];
            let words = *self.rng.pick(bad);
            let mut rest = vec![key];
            rest.extend(words.iter().map(|w| w.as_bytes().to_vec()));
            return self.cmd(name, rest);
        }
        let mut args = vec![key, b"0".to_vec()];
        if self.rng.chance(1, 2) {
            args.push(self.word("MATCH"));
            let p = self
                .rng
                .pick(&[&b"f*"[..], b"*1", b"?", b"f[0-2]", b"*", b"m*", b"m[^3]"])
                .to_vec();
            args.push(p);
        }
        if self.rng.chance(1, 2) {
            args.push(self.word("COUNT"));
            args.push(self.rng.pick(&["1", "2", "10", "1000"]).as_bytes().to_vec());
        }
        let mut cmd = self.cmd(name, args);
        cmd.check = Check::Scan;
        cmd
    }

    fn hscan(&mut self) -> Cmd {
        let key = self.hash_key();
        self.collection_scan("HSCAN", key)
    }

    /// `HRANDFIELD`, as [`Gen::random_pick`] makes them.
    fn hrandfield(&mut self) -> Cmd {
        let key = self.hash_key();
        self.random_pick("HRANDFIELD", key, Some("WITHVALUES"))
    }

    /// A random pick of `name` on `key`: without a count, with counts (negative, zero, past
    /// the size), with `with_word` (`WITHVALUES`, `WITHSCORES`), or with bad arguments.
    fn random_pick(&mut self, name: &str, key: Vec<u8>, with_word: Option<&str>) -> Cmd {
        let mut args = vec![key];
        if self.rng.chance(4, 5) {
            let counts = [
                "1",
                "2",
                "3",
                "-1",
                "-5",
                "0",
                "20",
                "-20",
                "x",
                "-9223372036854775808",
                "4611686018427387904",
            ];
            args.push(self.rng.pick(&counts).as_bytes().to_vec());
            match with_word {
                Some(word) if self.rng.chance(1, 2) => args.push(self.word(word)),
                _ if self.rng.chance(1, 10) => args.push(b"FOO".to_vec()),
                _ => {}
            }
        }
        let mut cmd = self.cmd(name, args);
        cmd.check = Check::Random;
        cmd
    }

    // --- sets

    /// A key for a set command: mostly keys 6, 7, 0 and 1 (shared with lists and strings),
    /// any key one time in four.
    fn set_key(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 4) {
            self.key()
        } else {
            KEYS[(6 + self.rng.index(4)) % 8].to_vec()
        }
    }

    /// Set keys for the set operations: one to four, repeats included.
    fn set_keys(&mut self) -> Vec<Vec<u8>> {
        (0..1 + self.rng.below(4)).map(|_| self.set_key()).collect()
    }

    /// A member: mostly one of a few short names (so that sets overlap), else any value.
    fn member(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=6 => format!("m{}", self.rng.below(8)).into_bytes(),
            7 => self.rng.range(-3, 3).to_string().into_bytes(),
            _ => self.value(),
        }
    }

    fn members(&mut self, max: u64) -> Vec<Vec<u8>> {
        (0..1 + self.rng.below(max)).map(|_| self.member()).collect()
    }

    fn sadd(&mut self) -> Cmd {
        let mut args = vec![self.set_key()];
        args.extend(self.members(6));
        self.cmd("SADD", args)
    }

    fn srem(&mut self) -> Cmd {
        let mut args = vec![self.set_key()];
        args.extend(self.members(3));
        self.cmd("SREM", args)
    }

    fn smembers(&mut self) -> Cmd {
        let k = self.set_key();
        let mut cmd = self.cmd("SMEMBERS", vec![k]);
        cmd.check = Check::Sorted;
        cmd
    }

    fn sismember(&mut self) -> Cmd {
        let args = vec![self.set_key(), self.member()];
        self.cmd("SISMEMBER", args)
    }

    fn smismember(&mut self) -> Cmd {
        let mut args = vec![self.set_key()];
        args.extend(self.members(4));
        self.cmd("SMISMEMBER", args)
    }

    fn scard(&mut self) -> Cmd {
        let k = self.set_key();
        self.cmd("SCARD", vec![k])
    }

    /// Only the `SPOP`s whose outcome is not random: counts that pop everything, zero, bad
    /// counts and a count with an extra argument. The random pops' properties are unit tests
    /// in `cmd::sets`.
    fn spop(&mut self) -> Cmd {
        let mut args = vec![self.set_key()];
        let count = *self
            .rng
            .pick(&["1000", "0", "-1", "x", "9223372036854775807", ""]);
        args.push(count.as_bytes().to_vec());
        if self.rng.chance(1, 10) {
            args.push(b"1".to_vec());
        }
        let mut cmd = self.cmd("SPOP", args);
        cmd.check = Check::Sorted;
        cmd
    }

    fn srandmember(&mut self) -> Cmd {
        let key = self.set_key();
        self.random_pick("SRANDMEMBER", key, None)
    }

    fn smove(&mut self) -> Cmd {
        let args = vec![self.set_key(), self.set_key(), self.member()];
        self.cmd("SMOVE", args)
    }

    fn set_op(&mut self, name: &str, store: bool) -> Cmd {
        let mut args = Vec::new();
        if store {
            args.push(self.set_key());
        }
        args.extend(self.set_keys());
        let mut cmd = self.cmd(name, args);
        if !store {
            cmd.check = Check::Sorted;
        }
        cmd
    }

    fn sinter(&mut self) -> Cmd {
        self.set_op("SINTER", false)
    }

    fn sinterstore(&mut self) -> Cmd {
        self.set_op("SINTERSTORE", true)
    }

    fn sunion(&mut self) -> Cmd {
        self.set_op("SUNION", false)
    }

    fn sunionstore(&mut self) -> Cmd {
        self.set_op("SUNIONSTORE", true)
    }

    fn sdiff(&mut self) -> Cmd {
        self.set_op("SDIFF", false)
    }

    fn sdiffstore(&mut self) -> Cmd {
        self.set_op("SDIFFSTORE", true)
    }

    /// `SINTERCARD numkeys key ... [LIMIT n]`, with a wrong key count or a bad limit now and
    /// then.
    fn sintercard(&mut self) -> Cmd {
        let keys = self.set_keys();
        let numkeys = match self.rng.below(10) {
            0 => self.rng.pick(&["0", "-1", "x", "100"]).to_string(),
            _ => keys.len().to_string(),
        };
        let mut args = vec![numkeys.into_bytes()];
        args.extend(keys);
        match self.rng.below(6) {
            0 | 1 => {
                args.push(self.word("LIMIT"));
                args.push(self.rng.pick(&["0", "1", "2", "-1", "x"]).as_bytes().to_vec());
            }
            2 => args.push(self.word("LIMIT")),
            3 => args.push(b"FOO".to_vec()),
            _ => {}
        }
        self.cmd("SINTERCARD", args)
    }

    fn sscan(&mut self) -> Cmd {
        let key = self.set_key();
        self.collection_scan("SSCAN", key)
    }

    // --- sorted sets

    /// A key for a sorted set command: mostly keys 1 to 4, any key one time in four, and the
    /// key `lex` (members all of score 0, for the lexicographic ranges) one time in six.
    fn zset_key(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 6) {
            b"lex".to_vec()
        } else if self.rng.chance(1, 4) {
            self.key()
        } else {
            KEYS[1 + self.rng.index(4)].to_vec()
        }
    }

    /// A score: small integers and halves, extremes, and things that are not numbers.
    fn score(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=5 => self.rng.range(-5, 5).to_string().into_bytes(),
            6 => format!("{}.5", self.rng.range(-3, 3)).into_bytes(),
            _ => self
                .rng
                .pick(&[
                    "inf", "-inf", "+inf", "1e3", "0x10", "1.5e-3", "nan", "x", "", " 1", "1e400", "-0", "(1",
                ])
                .as_bytes()
                .to_vec(),
        }
    }

    /// A score range bound: a score, exclusive (`(`) or not, or an infinity.
    fn score_bound(&mut self) -> Vec<u8> {
        let mut b = if self.rng.chance(1, 5) {
            self.rng
                .pick(&["-inf", "+inf", "inf", "x", "", " 2", "nan"])
                .as_bytes()
                .to_vec()
        } else {
            self.rng.range(-5, 5).to_string().into_bytes()
        };
        if self.rng.chance(1, 3) {
            b.insert(0, b'(');
        }
        b
    }

    /// A lexicographic bound.
    fn lex_bound(&mut self) -> Vec<u8> {
        match self.rng.below(8) {
            0 => b"-".to_vec(),
            1 => b"+".to_vec(),
            2 => self.rng.pick(&["a", "", "-x", "+"]).as_bytes().to_vec(),
            _ => {
                let mut m = self.member();
                m.insert(0, if self.rng.chance(1, 2) { b'[' } else { b'(' });
                m
            }
        }
    }

    fn zadd(&mut self) -> Cmd {
        let key = self.zset_key();
        let lex = key == b"lex";
        let mut args = vec![key];
        if !lex && self.rng.chance(1, 3) {
            for _ in 0..1 + self.rng.below(2) {
                let option = *self.rng.pick(&["NX", "XX", "GT", "LT", "CH", "INCR"]);
                args.push(self.word(option));
            }
        }
        for _ in 0..1 + self.rng.below(4) {
            args.push(if lex { b"0".to_vec() } else { self.score() });
            args.push(self.member());
        }
        if self.rng.chance(1, 15) {
            args.pop(); // a score without a member
        }
        self.cmd("ZADD", args)
    }

    /// A sorted set key other than `lex` (whose members must keep score 0).
    fn scored_key(&mut self) -> Vec<u8> {
        loop {
            let k = self.zset_key();
            if k != b"lex" {
                return k;
            }
        }
    }

    fn zincrby(&mut self) -> Cmd {
        let args = vec![self.scored_key(), self.score(), self.member()];
        self.cmd("ZINCRBY", args)
    }

    fn zscore(&mut self) -> Cmd {
        let args = vec![self.zset_key(), self.member()];
        self.cmd("ZSCORE", args)
    }

    fn zmscore(&mut self) -> Cmd {
        let mut args = vec![self.zset_key()];
        args.extend(self.members(4));
        self.cmd("ZMSCORE", args)
    }

    fn zcard(&mut self) -> Cmd {
        let k = self.zset_key();
        self.cmd("ZCARD", vec![k])
    }

    fn zcount(&mut self) -> Cmd {
        let args = vec![self.zset_key(), self.score_bound(), self.score_bound()];
        self.cmd("ZCOUNT", args)
    }

    fn zlexcount(&mut self) -> Cmd {
        let args = vec![b"lex".to_vec(), self.lex_bound(), self.lex_bound()];
        self.cmd("ZLEXCOUNT", args)
    }

    fn zrank(&mut self) -> Cmd {
        let name = *self.rng.pick(&["ZRANK", "ZREVRANK"]);
        let args = vec![self.zset_key(), self.member()];
        self.cmd(name, args)
    }

    fn zrem(&mut self) -> Cmd {
        let mut args = vec![self.zset_key()];
        args.extend(self.members(3));
        self.cmd("ZREM", args)
    }

    /// The key, bounds and options of a `ZRANGE` or `ZRANGESTORE`.
    fn zrange_args(&mut self, store: bool) -> Vec<Vec<u8>> {
        let mode = self.rng.below(3);
        let key = if mode == 2 {
            b"lex".to_vec()
        } else {
            self.zset_key()
        };
        let (min, max) = match mode {
            0 => (self.index_arg(), self.index_arg()),
            1 => (self.score_bound(), self.score_bound()),
            _ => (self.lex_bound(), self.lex_bound()),
        };
        let mut args = vec![key, min, max];
        match mode {
            1 => args.push(self.word("BYSCORE")),
            2 => args.push(self.word("BYLEX")),
            _ => {}
        }
        if self.rng.chance(1, 3) {
            args.push(self.word("REV"));
        }
        if self.rng.chance(1, 4) {
            args.push(self.word("LIMIT"));
            args.push(self.limit_offset());
            args.push(self.limit_count());
        }
        if !store && self.rng.chance(1, 3) {
            args.push(self.word("WITHSCORES"));
        }
        if self.rng.chance(1, 20) {
            let bad = *self.rng.pick(&["FOO", "REV", "BYSCORE", "WITHSCORES", "LIMIT"]);
            args.push(bad.as_bytes().to_vec());
        }
        args
    }

    /// `ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE`, with `LIMIT` and
    /// `WITHSCORES` in either order, and now and then a word only `ZRANGE` takes.
    fn zrange_legacy(&mut self) -> Cmd {
        let name = *self.rng.pick(&[
            "ZRANGEBYSCORE",
            "ZREVRANGEBYSCORE",
            "ZRANGEBYLEX",
            "ZREVRANGEBYLEX",
            "ZREVRANGE",
        ]);
        let mut args = if name.ends_with("LEX") {
            vec![b"lex".to_vec(), self.lex_bound(), self.lex_bound()]
        } else if name.ends_with("SCORE") {
            vec![self.zset_key(), self.score_bound(), self.score_bound()]
        } else {
            vec![self.zset_key(), self.index_arg(), self.index_arg()]
        };
        let mut options = Vec::new();
        if self.rng.chance(1, 3) {
            options.push(vec![self.word("LIMIT"), self.limit_offset(), self.limit_count()]);
        }
        if self.rng.chance(1, 3) {
            options.push(vec![self.word("WITHSCORES")]);
        }
        if self.rng.chance(1, 2) {
            options.reverse();
        }
        args.extend(options.into_iter().flatten());
        if self.rng.chance(1, 15) {
            let bad = *self.rng.pick(&["REV", "BYSCORE", "BYLEX", "LIMIT", "FOO"]);
            args.push(bad.as_bytes().to_vec());
        }
        self.cmd(name, args)
    }

    fn limit_offset(&mut self) -> Vec<u8> {
        self.rng
            .pick(&["0", "1", "2", "-1", "100", "x"])
            .as_bytes()
            .to_vec()
    }

    fn limit_count(&mut self) -> Vec<u8> {
        self.rng.pick(&["1", "2", "-1", "0", "100"]).as_bytes().to_vec()
    }

    /// Inputs of the sorted-set algebra: one to four sorted sets (`lex` included), a plain
    /// set or any key (wrong types) now and then, repeats included.
    fn zset_op_keys(&mut self) -> Vec<Vec<u8>> {
        (0..1 + self.rng.below(4))
            .map(|_| {
                if self.rng.chance(1, 4) {
                    self.set_key()
                } else {
                    self.zset_key()
                }
            })
            .collect()
    }

    /// A key count for `keys`: mostly right, else zero, negative, too many or not a number.
    fn numkeys(&mut self, keys: &[Vec<u8>]) -> Vec<u8> {
        match self.rng.below(10) {
            0 => self
                .rng
                .pick(&["0", "-1", "x", "100", "9223372036854775808"])
                .as_bytes()
                .to_vec(),
            _ => keys.len().to_string().into_bytes(),
        }
    }

    /// A `WEIGHTS` value: mostly small, with zero, infinities (`inf + -inf` is NaN, which
    /// Redis makes 0, so the order of the additions shows) and things not numbers.
    fn weight(&mut self) -> Vec<u8> {
        let w = if self.rng.chance(2, 3) {
            *self.rng.pick(&["1", "2", "-1", "0", "0.5", "-0.5", "3"])
        } else if self.rng.chance(1, 2) {
            *self.rng.pick(&["inf", "-inf"])
        } else {
            *self
                .rng
                .pick(&["inf", "-inf", "x", "nan", "1e400", " 1", "0x2", "", "-0"])
        };
        w.as_bytes().to_vec()
    }

    /// `ZUNION ZINTER ZDIFF` and their `STORE` forms, with `WEIGHTS` (the right number of
    /// them or not), `AGGREGATE`, `WITHSCORES`, and options a form does not take.
    fn zset_op(&mut self) -> Cmd {
        let name = *self.rng.pick(&[
            "ZUNION",
            "ZINTER",
            "ZDIFF",
            "ZUNIONSTORE",
            "ZINTERSTORE",
            "ZDIFFSTORE",
        ]);
        let (store, diff) = (name.ends_with("STORE"), name.starts_with("ZDIFF"));
        let keys = self.zset_op_keys();
        let mut args = Vec::new();
        if store {
            args.push(self.scored_key());
        }
        args.push(self.numkeys(&keys));
        let n = keys.len();
        args.extend(keys);
        if !diff || self.rng.chance(1, 10) {
            if self.rng.chance(1, 2) {
                args.push(self.word("WEIGHTS"));
                let count = match self.rng.below(10) {
                    0 => n - 1,
                    1 => n + 1,
                    _ => n,
                };
                for _ in 0..count {
                    let w = self.weight();
                    args.push(w);
                }
            }
            if self.rng.chance(1, 3) {
                args.push(self.word("AGGREGATE"));
                let how = *self.rng.pick(&["SUM", "MIN", "MAX", "max", "AVG"]);
                args.push(how.as_bytes().to_vec());
            }
        }
        if (!store && self.rng.chance(1, 2)) || self.rng.chance(1, 20) {
            args.push(self.word("WITHSCORES"));
        }
        if self.rng.chance(1, 20) {
            let bad = *self.rng.pick(&["AGGREGATE", "WEIGHTS", "LIMIT", "FOO"]);
            args.push(bad.as_bytes().to_vec());
        }
        self.cmd(name, args)
    }

    /// `ZINTERCARD numkeys key ... [LIMIT n]`, with a wrong key count or a bad limit now and
    /// then.
    fn zintercard(&mut self) -> Cmd {
        let keys = self.zset_op_keys();
        let mut args = vec![self.numkeys(&keys)];
        args.extend(keys);
        match self.rng.below(6) {
            0 | 1 => {
                args.push(self.word("LIMIT"));
                args.push(self.rng.pick(&["0", "1", "2", "-1", "x"]).as_bytes().to_vec());
            }
            2 => args.push(self.word("LIMIT")),
            3 => args.push(self.word("WITHSCORES")),
            _ => {}
        }
        self.cmd("ZINTERCARD", args)
    }

    fn zrange(&mut self) -> Cmd {
        let args = self.zrange_args(false);
        self.cmd("ZRANGE", args)
    }

    fn zrangestore(&mut self) -> Cmd {
        let mut args = vec![self.scored_key()];
        args.extend(self.zrange_args(true));
        self.cmd("ZRANGESTORE", args)
    }

    fn zpop(&mut self) -> Cmd {
        let name = *self.rng.pick(&["ZPOPMIN", "ZPOPMAX"]);
        let mut args = vec![self.zset_key()];
        if self.rng.chance(1, 2) {
            args.push(
                self.rng
                    .pick(&["0", "1", "2", "100", "-1", "x"])
                    .as_bytes()
                    .to_vec(),
            );
            if self.rng.chance(1, 20) {
                args.push(b"1".to_vec());
            }
        }
        self.cmd(name, args)
    }

    fn zremrange(&mut self) -> Cmd {
        match self.rng.below(3) {
            0 => {
                let args = vec![self.zset_key(), self.index_arg(), self.index_arg()];
                self.cmd("ZREMRANGEBYRANK", args)
            }
            1 => {
                let args = vec![self.zset_key(), self.score_bound(), self.score_bound()];
                self.cmd("ZREMRANGEBYSCORE", args)
            }
            _ => {
                let args = vec![b"lex".to_vec(), self.lex_bound(), self.lex_bound()];
                self.cmd("ZREMRANGEBYLEX", args)
            }
        }
    }

    fn zscan(&mut self) -> Cmd {
        let key = self.zset_key();
        self.collection_scan("ZSCAN", key)
    }

    fn zrandmember(&mut self) -> Cmd {
        let key = self.zset_key();
        self.random_pick("ZRANDMEMBER", key, Some("WITHSCORES"))
    }

    // --- server, connection, errors

    fn dbsize(&mut self) -> Cmd {
        self.cmd("DBSIZE", vec![])
    }

    /// `MULTI`, a few commands whose replies are deterministic (an `EXEC` array is compared
    /// whole), then `EXEC` or sometimes `DISCARD`; now and then a command refused while
    /// queueing (`EXECABORT`), a nested `MULTI` or a `WATCH` inside.
    fn transaction(&mut self) -> Cmd {
        const INNER: &[Generator] = &[
            Gen::set,
            Gen::get,
            Gen::incr,
            Gen::append,
            Gen::mset,
            Gen::getex,
            Gen::setrange,
            Gen::del,
            Gen::exists,
            Gen::expire,
            Gen::lpush,
            Gen::rpop,
            Gen::lrange,
            Gen::lmove,
            Gen::lpos,
            Gen::hset,
            Gen::sadd,
            Gen::zadd,
            Gen::rename,
            Gen::copy,
            Gen::select,
            Gen::move_,
            Gen::dbsize,
            Gen::wrong_arity,
            Gen::unknown,
        ];
        let mut body = Vec::new();
        for _ in 0..1 + self.rng.below(5) {
            let inner = if self.rng.chance(1, 20) {
                let name = *self.rng.pick(&["MULTI", "WATCH"]);
                let mut args = vec![self.word(name)];
                if name == "WATCH" {
                    args.push(self.key());
                }
                Cmd::exact(args)
            } else {
                let generator = *self.rng.pick(INNER);
                generator(self)
            };
            body.push(inner);
        }
        let end = if self.rng.chance(1, 6) { "DISCARD" } else { "EXEC" };
        let end = Cmd::exact(vec![self.word(end)]);
        // Popped from the end: the last command first.
        self.next.push(end);
        self.next.extend(body.into_iter().rev());
        self.cmd("MULTI", vec![])
    }

    /// `SORT` or `SORT_RO` with random options, only in forms whose output order does not
    /// depend on the order a set or sorted set is read in (its table's): no `BY` without `*`
    /// unless stored, no `ALPHA` with a `BY` pattern (equal weights keep that order).
    fn sort(&mut self) -> Cmd {
        let ro = self.rng.chance(1, 4);
        let mut args = vec![self.key()];
        let store = !ro && self.rng.chance(1, 3);
        let by = match self.rng.below(4) {
            0 => Some(*self.rng.pick(&["k*", "k*->f1", "*", "w_*"])),
            1 if store => Some("nosort"),
            _ => None,
        };
        if let Some(pattern) = by {
            args.push(self.word("BY"));
            args.push(pattern.as_bytes().to_vec());
        }
        for _ in 0..self.rng.below(3) {
            args.push(self.word("GET"));
            let pattern = *self.rng.pick(&["#", "k*", "k*->f0", "nostar"]);
            args.push(pattern.as_bytes().to_vec());
        }
        if self.rng.chance(1, 3) {
            args.push(self.word("LIMIT"));
            args.push(self.index_arg());
            args.push(self.index_arg());
        }
        if self.rng.chance(1, 3) {
            let dir = *self.rng.pick(&["ASC", "DESC"]);
            args.push(self.word(dir));
        }
        if by.is_none() && self.rng.chance(1, 3) {
            args.push(self.word("ALPHA"));
        }
        if store {
            args.push(self.word("STORE"));
            args.push(self.key());
        }
        if self.rng.chance(1, 20) {
            args.push(self.word("FOO"));
        }
        self.cmd(if ro { "SORT_RO" } else { "SORT" }, args)
    }

    /// `WATCH` of one to three keys, or `UNWATCH`.
    fn watch(&mut self) -> Cmd {
        if self.rng.chance(1, 4) {
            return self.cmd("UNWATCH", vec![]);
        }
        let keys = self.keys_arg(3);
        self.cmd("WATCH", keys)
    }

    /// A database index: mostly one of the first [`DATABASES`], sometimes out of range or
    /// not a number.
    fn db_arg(&mut self) -> Vec<u8> {
        if self.rng.chance(9, 10) {
            self.rng.below(DATABASES).to_string().into_bytes()
        } else {
            self.rng
                .pick(&["16", "-1", "abc", "99999999999", "01", ""])
                .as_bytes()
                .to_vec()
        }
    }

    /// `SELECT`, now and then `FLUSHALL` instead.
    fn select(&mut self) -> Cmd {
        if self.rng.chance(1, 10) {
            return self.cmd("FLUSHALL", vec![]);
        }
        let db = self.db_arg();
        self.cmd("SELECT", vec![db])
    }

    fn move_(&mut self) -> Cmd {
        let args = vec![self.key(), self.db_arg()];
        self.cmd("MOVE", args)
    }

    fn copy(&mut self) -> Cmd {
        let mut args = vec![self.key(), self.key()];
        for _ in 0..self.rng.below(3) {
            match self.rng.below(5) {
                0 | 1 => {
                    args.push(self.word("DB"));
                    args.push(self.db_arg());
                }
                2 | 3 => args.push(self.word("REPLACE")),
                _ => args.push(self.word("DB")),
            }
        }
        self.cmd("COPY", args)
    }

    fn swapdb(&mut self) -> Cmd {
        let args = vec![self.db_arg(), self.db_arg()];
        self.cmd("SWAPDB", args)
    }

    fn flushdb(&mut self) -> Cmd {
        let rest = match self.rng.below(6) {
            0 => vec![self.word("ASYNC")],
            1 => vec![self.word("SYNC")],
            2 => vec![b"FOO".to_vec()],
            _ => vec![],
        };
        self.cmd("FLUSHDB", rest)
    }

    /// A known command with a number of arguments its arity forbids.
    fn wrong_arity(&mut self) -> Cmd {
        let (name, arity) = *self.rng.pick(ARITIES);
        if arity == 0 {
            // CLIENT GETNAME takes no argument.
            let rest = vec![self.word("GETNAME"), self.key()];
            return self.cmd("CLIENT", rest);
        }
        let n = arity.unsigned_abs() as usize;
        let argc = if arity > 0 && (n == 1 || self.rng.chance(1, 2)) {
            n + 1 + self.rng.index(2)
        } else if n > 1 {
            1 + self.rng.index(n - 1)
        } else {
            n + 1
        };
        let rest = (1..argc).map(|_| self.key()).collect();
        self.cmd(name, rest)
    }

    /// A command neither server has, with arguments that the error message quotes (up to 128
    /// bytes of them).
    fn unknown(&mut self) -> Cmd {
        let long = "x".repeat(200);
        let names = [
            "FOO",
            "gett",
            "nosuchcommand",
            "",
            "SETT",
            "ferry",
            long.as_str(),
            "get\r\nx",
        ];
        let name = self.rng.pick(&names).as_bytes().to_vec();
        let mut args = vec![name];
        for _ in 0..self.rng.below(4) {
            let arg = match self.rng.below(4) {
                0 => self.key(),
                1 => (0..1 + self.rng.index(20))
                    .map(|_| b'a' + self.rng.below(26) as u8)
                    .collect(),
                2 => vec![b'y'; 60 + self.rng.index(100)],
                _ => {
                    let n = 1 + self.rng.index(8);
                    self.random_bytes(n)
                }
            };
            args.push(arg);
        }
        Cmd::exact(args)
    }

    /// `PING`, `ECHO`, `HELLO`, `CLIENT GETNAME/SETNAME` (and a subcommand neither has),
    /// `AUTH` without a password set.
    fn connection(&mut self) -> Cmd {
        match self.rng.below(10) {
            9 => {
                let sub = if self.rng.chance(1, 2) {
                    b"nosuch".to_vec()
                } else {
                    let n = 1 + self.rng.index(8);
                    self.random_bytes(n)
                };
                self.cmd("CLIENT", vec![sub])
            }
            0 => self.cmd("PING", vec![]),
            1 => {
                let v = self.value();
                self.cmd("PING", vec![v])
            }
            2 => {
                let v = self.value();
                self.cmd("ECHO", vec![v])
            }
            3 | 4 => {
                let versions: [&[&str]; 7] = [
                    &[],
                    &["2"],
                    &["3"],
                    &["4"],
                    &["x"],
                    &["3", "SETNAME", "diff"],
                    &["2", "FOO"],
                ];
                let version = *self.rng.pick(&versions);
                let mut rest: Vec<Vec<u8>> = version.iter().map(|w| w.as_bytes().to_vec()).collect();
                if rest.len() == 2 && rest[1] == b"FOO" && self.rng.chance(1, 2) {
                    // Redis quotes an unknown option in its error.
                    let n = 1 + self.rng.index(8);
                    rest[1] = self.random_bytes(n);
                }
                let mut cmd = self.cmd("HELLO", rest);
                cmd.check = Check::Hello;
                cmd
            }
            5 => {
                let rest = vec![self.word("GETNAME")];
                self.cmd("CLIENT", rest)
            }
            6 | 7 => {
                let name = self
                    .rng
                    .pick(&["conn-1", "", "has space", "new\nline", "ok_name"])
                    .as_bytes()
                    .to_vec();
                let rest = vec![self.word("SETNAME"), name];
                self.cmd("CLIENT", rest)
            }
            _ => {
                let forms: [&[&str]; 3] = [&["secret"], &["default", "secret"], &["a", "b", "c"]];
                let rest = *self.rng.pick(&forms);
                self.cmd("AUTH", rest.iter().map(|w| w.as_bytes().to_vec()).collect())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pub/sub and blocking commands: several connections, one script

/// One step of a script over several connections to one server.
enum Step {
    /// Send a request on connection `.0` and read its reply.
    Cmd(usize, &'static str),
    /// Send a request and read nothing (a blocking command, or one with several replies).
    Send(usize, &'static str),
    /// Read one reply (a message, a notification, a served waiter's reply).
    Read(usize),
    /// Read one reply and leave it out of the comparison (`HELLO`'s map holds the client id).
    Skip(usize),
    /// Wait until `INFO clients` reports this many blocked clients (on connection 0).
    Blocked(usize),
}

/// The replies a script got from the server at `addr`, by step.
fn transcript(addr: SocketAddr, conns: usize, script: &[Step]) -> Vec<(usize, Reply)> {
    let mut c: Vec<common::Conn> = (0..conns).map(|_| common::connect(addr)).collect();
    let words = |line: &'static str| line.split(' ').map(str::as_bytes).collect::<Vec<_>>();
    let mut got = Vec::new();
    for (i, step) in script.iter().enumerate() {
        match *step {
            Step::Cmd(n, line) => got.push((i, common::cmd(&mut c[n], &words(line)))),
            Step::Send(n, line) => common::send(&mut c[n], &words(line)),
            Step::Read(n) => got.push((i, common::read(&mut c[n]))),
            Step::Skip(n) => drop(common::read(&mut c[n])),
            Step::Blocked(want) => {
                ferry_testkit::wait_until(&format!("{want} blocked clients"), REPLY_TIMEOUT, || {
                    let Reply::Bulk(info) = common::cmd(&mut c[0], &[b"INFO", b"clients"]) else {
                        return false;
                    };
                    String::from_utf8_lossy(&info).contains(&format!("blocked_clients:{want}\r\n"))
                })
            }
        }
    }
    got
}

/// Pub/sub in RESP2 and RESP3 (subscribed mode, notifications, messages, introspection) and
/// blocking commands (first come first served, a transaction serving waiters, a timeout,
/// `EXEC` answering at once): ferry's replies, in order, are redis-server's.
#[test]
fn pubsub_and_blocking_agree_with_redis() {
    use Step::*;
    let Some(redis) = reference_or_skip("pubsub_and_blocking_agree_with_redis") else {
        return;
    };
    let ferry = start_ferry();
    // 0: admin and publisher; 1: RESP2 subscriber; 2: RESP3 subscriber; 3, 4: waiters.
    let script = [
        Send(2, "HELLO 3"),
        Skip(2),
        Send(1, "SUBSCRIBE a b"),
        Read(1),
        Read(1),
        Cmd(1, "PSUBSCRIBE a*"),
        Cmd(2, "SUBSCRIBE a"),
        Cmd(1, "GET x"),
        Cmd(1, "PING"),
        Cmd(1, "PING hi"),
        Cmd(0, "PUBLISH a hello"),
        Read(1),
        Read(1),
        Read(2),
        Cmd(0, "PUBLISH nobody x"),
        Cmd(0, "PUBSUB NUMSUB a b c"),
        Cmd(0, "PUBSUB NUMPAT"),
        Cmd(0, "PUBSUB CHANNELS b"),
        Cmd(0, "PUBSUB CHANNELS zz*"),
        Cmd(2, "GET x"),
        Cmd(2, "PING"),
        Cmd(1, "UNSUBSCRIBE b"),
        Cmd(1, "UNSUBSCRIBE"),
        Cmd(1, "PUNSUBSCRIBE"),
        Cmd(1, "UNSUBSCRIBE"),
        Cmd(1, "PUNSUBSCRIBE"),
        Cmd(1, "PING"),
        Cmd(0, "PUBLISH a again"),
        Read(2),
        Cmd(2, "UNSUBSCRIBE a"),
        Cmd(1, "SUBSCRIBE z"),
        Cmd(1, "RESET"),
        Cmd(0, "PUBSUB NUMSUB z"),
        Cmd(2, "RESET"),
        Cmd(2, "GET x"),
        Send(3, "BLPOP l 0"),
        Blocked(1),
        Send(4, "BRPOP other l 0"),
        Blocked(2),
        Cmd(0, "RPUSH l x y z"),
        Read(3),
        Read(4),
        Cmd(0, "LRANGE l 0 -1"),
        Send(3, "BLMOVE s d LEFT RIGHT 0"),
        Blocked(1),
        Send(4, "BZPOPMIN z 0"),
        Blocked(2),
        Cmd(0, "MULTI"),
        Cmd(0, "RPUSH s v"),
        Cmd(0, "ZADD z 2 b 1 a"),
        Cmd(0, "EXEC"),
        Read(3),
        Read(4),
        Cmd(0, "LRANGE d 0 -1"),
        Cmd(0, "ZMPOP 1 z MAX COUNT 5"),
        Cmd(3, "BLPOP none 0.01"),
        Cmd(3, "BZMPOP 0.01 1 none MIN"),
        Cmd(0, "MULTI"),
        Cmd(0, "BLPOP none 0"),
        Cmd(0, "BLMOVE none d LEFT LEFT 0"),
        Cmd(0, "EXEC"),
        Cmd(0, "BLPOP l x"),
        Cmd(0, "BLMPOP 0 0 l LEFT"),
        Cmd(0, "SET str v"),
        Cmd(0, "BLPOP str 0"),
    ];
    let want = transcript(redis.addr, 5, &script);
    let got = transcript(ferry.addr(), 5, &script);
    for ((i, w), (_, g)) in want.iter().zip(&got) {
        let line = match &script[*i] {
            Cmd(n, l) => format!("connection {n}: {l}"),
            Read(n) => format!("connection {n}: read"),
            _ => String::new(),
        };
        assert_eq!(g, w, "step {i} ({line}): ferry (left) and redis-server differ");
    }
    assert_eq!(got.len(), want.len());
}
