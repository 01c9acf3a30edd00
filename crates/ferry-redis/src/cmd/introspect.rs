//! Introspection and test-harness commands: `OBJECT`, `DEBUG` (a subset) and `FUNCTION`
//! (empty: Ferry has no scripting).
//!
//! `OBJECT ENCODING` names, in Redis 7.0's words, what Ferry stores, which is one
//! representation per type whatever its size: a string is a pool buffer (`raw`), a list a
//! deque of buffers (`quicklist`, Redis 7.0's only list encoding), a hash or a set a hash table
//! (`hashtable`), a sorted set a skiplist with a member table (`skiplist`). Redis's compact
//! encodings (`int`, `embstr`, `listpack`, `intset`) do not exist here, and the parameters that
//! tune them are accepted by `CONFIG SET` without effect. `OBJECT REFCOUNT` is 1: a value
//! belongs to one key (replies that reference its bytes hold the pool buffer, not the value).
//! `OBJECT IDLETIME` is the time since a command last looked the key up or wrote it.
//!
//! `DEBUG` runs only when [`Config::enable_debug_command`](crate::Config) is set, as Redis
//! requires `enable-debug-command`. It has `SLEEP`, `SET-ACTIVE-EXPIRE`, `OBJECT`, `JMAP`
//! and `QUICKLIST-PACKED-THRESHOLD` (accepted, no effect), `RELOAD` (save, flush, load:
//! [`persist::debug_reload`](super::persist::debug_reload)) and `LOADAOF` (sync, flush, load
//! the AOF: [`persist::debug_loadaof`](super::persist::debug_loadaof)).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::strings::parse_i64;
use super::subcommand::{Sub, dispatch, help, sub};
use super::{Args, Ctx, NOT_INTEGER};
use crate::db::{Access, Value};
use crate::resp::{Proto, ReplyBuf};

/// `DEBUG` when `enable-debug-command` is off (Redis 7.0's words).
pub const DEBUG_DISABLED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set \
     to \"local\", you can run it from a local connection, otherwise you need to set this option in \
     the configuration file, and then restart the server.";
/// `OBJECT FREQ` under `noeviction` (Ferry's only policy).
pub const FREQ_NOT_TRACKED: &str = "ERR An LFU maxmemory policy is not selected, access frequency not \
     tracked. Please note that when switching between policies at runtime LRU and LFU data will take \
     some time to adjust.";

const SUB_FLAGS: &[&str] = &["readonly"];
const ACL_READ: &[&str] = &["@keyspace", "@read", "@slow"];

/// `OBJECT`'s subcommands.
#[rustfmt::skip]
pub static OBJECT_SUBS: &[Sub] = &[
    sub("object|encoding", 3, SUB_FLAGS, ACL_READ, &["nondeterministic_output"], "generic", "Inspect the internal encoding of a Redis object", "2.2.3", "O(1)", object_encoding),
    sub("object|freq", 3, SUB_FLAGS, ACL_READ, &["nondeterministic_output"], "generic", "Get the logarithmic access frequency counter of a Redis object", "4.0.0", "O(1)", object_freq),
    sub("object|help", 2, &["loading", "stale"], &["@keyspace", "@slow"], &[], "generic", "Show helpful text about the different subcommands", "6.2.0", "O(1)", object_help),
    sub("object|idletime", 3, SUB_FLAGS, ACL_READ, &["nondeterministic_output"], "generic", "Get the time since a Redis object was last accessed", "2.2.3", "O(1)", object_idletime),
    sub("object|refcount", 3, SUB_FLAGS, ACL_READ, &["nondeterministic_output"], "generic", "Get the number of references to the value of the key", "2.2.3", "O(1)", object_refcount),
];

/// `FUNCTION`'s subcommands (those a client of a server without functions needs).
#[rustfmt::skip]
pub static FUNCTION_SUBS: &[Sub] = &[
    sub("function|flush", -2, &["write", "noscript"], &["@write", "@slow", "@scripting"], &[], "scripting", "Deleting all functions", "7.0.0", "O(N) where N is the number of functions deleted", function_flush),
    sub("function|help", 2, &["loading", "stale"], &["@slow", "@scripting"], &[], "scripting", "Show helpful text about the different subcommands", "7.0.0", "O(1)", function_help),
    sub("function|list", -2, &["noscript"], &["@slow", "@scripting"], &["nondeterministic_output_order"], "scripting", "List information about all the functions", "7.0.0", "O(N) where N is the number of functions", function_list),
];

/// `OBJECT subcommand key`.
pub fn object(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("object", OBJECT_SUBS, ctx, args, out);
}

/// Redis 7.0's name for how Ferry stores `value`.
pub fn encoding(value: &Value) -> &'static str {
    match value {
        Value::Str(_) => "raw",
        Value::List(_) => "quicklist",
        Value::Hash(_) | Value::Set(_) => "hashtable",
        Value::ZSet(_) => "skiplist",
    }
}

/// Looks up `args.get(2)` without touching its access time and calls `f` with its value and
/// idle milliseconds; a missing key is a null reply.
fn inspect(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
    f: impl FnOnce(&Value, u64, &mut ReplyBuf),
) {
    let now = ctx.now_ms;
    match ctx.db.find(args.get(2), now, Access::Inspect) {
        Some(e) => f(e.value(), e.idle_ms(now), out),
        None => out.null(),
    }
}

fn object_encoding(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    inspect(ctx, args, out, |v, _, out| out.bulk(encoding(v).as_bytes()));
}

fn object_refcount(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    inspect(ctx, args, out, |_, _, out| out.integer(1));
}

fn object_idletime(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    inspect(ctx, args, out, |_, idle, out| {
        out.integer(i64::try_from(idle / 1000).unwrap_or(i64::MAX))
    });
}

fn object_freq(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    inspect(ctx, args, out, |_, _, out| out.error(FREQ_NOT_TRACKED));
}

fn object_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
}

/// `FUNCTION subcommand ...`.
pub fn function(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("function", FUNCTION_SUBS, ctx, args, out);
}

/// `FUNCTION FLUSH [ASYNC|SYNC]`: there are no functions to delete.
fn function_flush(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mode_ok = match args.len() {
        2 => true,
        3 => args.get(2).eq_ignore_ascii_case(b"async") || args.get(2).eq_ignore_ascii_case(b"sync"),
        _ => false,
    };
    if mode_ok {
        out.ok();
    } else {
        out.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`: no libraries. Each option once.
fn function_list(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (mut with_code, mut library_name) = (false, false);
    let mut j = 2;
    while j < args.len() {
        let opt = args.get(j);
        if !with_code && opt.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if !library_name && opt.eq_ignore_ascii_case(b"libraryname") {
            if j + 1 >= args.len() {
                return out.error("ERR library name argument was not given");
            }
            library_name = true;
            j += 1;
        } else {
            let mut msg = b"ERR Unknown argument ".to_vec();
            msg.extend_from_slice(super::c_str(opt));
            return out.error(msg);
        }
        j += 1;
    }
    out.array(0);
}

fn function_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "FUNCTION",
        &[
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "LIST [LIBRARYNAME <pattern>] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME",
            "    argument.",
        ],
    );
}

/// `DEBUG subcommand ...` (see the module docs for the subset).
pub fn debug(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if !ctx.server.config.enable_debug_command {
        return out.error(DEBUG_DISABLED);
    }
    let sub = args.get(1).to_ascii_lowercase();
    match (sub.as_slice(), args.len()) {
        (b"sleep", 3) => {
            let Some(secs) = std::str::from_utf8(args.get(2))
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
            else {
                return out.error(NOT_INTEGER);
            };
            // DEBUG SLEEP blocks the server, as in Redis: that is what tests use it for.
            if secs > 0.0 && secs.is_finite() {
                std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
            }
            out.ok();
        }
        (b"set-active-expire", 3) => match parse_i64(args.get(2)) {
            Some(n) => {
                ctx.server.active_expire.store(n != 0, Ordering::Relaxed);
                out.ok();
            }
            None => out.error(NOT_INTEGER),
        },
        (b"quicklist-packed-threshold", 3) => out.ok(),
        (b"jmap", 2) => out.ok(),
        (b"reload", 2) => super::persist::debug_reload(ctx, out),
        (b"loadaof", 2) => super::persist::debug_loadaof(ctx, out),
        (b"protocol", 3) => debug_protocol(args.get(2), out),
        (b"object", 3) => {
            let now = ctx.now_ms;
            let Some(e) = ctx.db.find(args.get(2), now, Access::Inspect) else {
                return out.error("ERR no such key");
            };
            let v = e.value();
            let idle = e.idle_ms(now) / 1000;
            let line = format!(
                "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:0 lru_seconds_idle:{idle}",
                encoding(v),
                v.memory()
            );
            out.simple(&line);
        }
        _ => {
            let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
            msg.extend_from_slice(super::clip_bytes(super::c_str(args.get(1)), 128));
            msg.extend_from_slice(b"'. Try DEBUG HELP.");
            out.error(msg);
        }
    }
}

/// `DEBUG PROTOCOL type`: one reply of each RESP type, Redis's sample values (for clients'
/// tests of their parsers).
fn debug_protocol(name: &[u8], out: &mut ReplyBuf) {
    match name.to_ascii_lowercase().as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.integer(12345),
        #[allow(clippy::approx_constant)] // Redis's sample value, not pi
        b"double" => out.double(3.141),
        b"bignum" => out.big_number("1234567999999999999999999999999999999"),
        b"null" => out.null(),
        b"array" | b"set" => {
            if name.eq_ignore_ascii_case(b"set") {
                out.set(3);
            } else {
                out.array(3);
            }
            (0..3).for_each(|j| out.integer(j));
        }
        b"map" => {
            out.map(3);
            for j in 0..3 {
                out.integer(j);
                out.boolean(j == 1);
            }
        }
        b"attrib" => {
            if out.proto() == Proto::Resp3 {
                out.attribute(1);
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.integer(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" if out.proto() == Proto::Resp2 => out.error("ERR RESP2 is not supported by this command"),
        b"push" => {
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.integer(42);
            out.bulk(b"Some real reply following the push reply");
        }
        b"true" => out.boolean(true),
        b"false" => out.boolean(false),
        b"verbatim" => out.verbatim("txt", b"This is a verbatim\nstring"),
        _ => out.error(
            "ERR Wrong protocol type name. Please use one of the following: \
             string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// `MEMORY`'s subcommands.
#[rustfmt::skip]
pub static MEMORY_SUBS: &[Sub] = &[
    sub("memory|help", 2, &["loading", "stale"], &["@slow"], &[], "server", "Show helpful text about the different subcommands", "4.0.0", "O(1)", memory_help),
    sub("memory|usage", -3, SUB_FLAGS, &["@read", "@slow"], &[], "server", "Estimate the memory usage of a key", "4.0.0", "O(N) where N is the number of samples.", memory_usage),
];

/// `MEMORY subcommand ...`: see [`MEMORY_SUBS`].
pub fn memory(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("memory", MEMORY_SUBS, ctx, args, out);
}

/// `MEMORY USAGE key [SAMPLES count]`: the key's share of `used_memory`, the estimate
/// `maxmemory` bounds (key bytes, value bytes, and Ferry's fixed overheads per key and per
/// element: [`crate::db::KEY_OVERHEAD`]); every element is counted, so `SAMPLES` changes
/// nothing. Null for a missing key.
fn memory_usage(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut j = 3;
    while j < args.len() {
        if args.get(j).eq_ignore_ascii_case(b"samples") && j + 1 < args.len() {
            match parse_i64(args.get(j + 1)) {
                None => return out.error(NOT_INTEGER),
                Some(n) if n < 0 => return out.error(super::SYNTAX),
                Some(_) => j += 2,
            }
        } else {
            return out.error(super::SYNTAX);
        }
    }
    let key = args.get(2);
    match ctx.db.find(key, ctx.now_ms, Access::Inspect) {
        Some(e) => out.integer((key.len() + e.value().memory() + crate::db::KEY_OVERHEAD) as i64),
        None => out.null(),
    }
}

fn memory_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "MEMORY",
        &[
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
}

#[cfg(test)]
mod tests {
    use crate::cmd::harness::*;

    #[test]
    fn memory_usage_is_the_maxmemory_estimate() {
        let mut h = Harness::new();
        h.cmd("RPUSH list ab cde");
        let want = 4 + (2 + 16) + (3 + 16) + crate::db::KEY_OVERHEAD;
        assert_eq!(h.cmd("MEMORY USAGE list"), int(want as i64));
        assert_eq!(h.cmd("MEMORY USAGE list SAMPLES 0"), int(want as i64));
        assert_eq!(h.cmd("MEMORY USAGE nokey"), NULL);
        assert_eq!(h.cmd("MEMORY USAGE list SAMPLES x"), err(crate::cmd::NOT_INTEGER));
        assert_eq!(h.cmd("MEMORY USAGE list FOO"), err(crate::cmd::SYNTAX));
    }

    /// Byte for byte as redis-server 7.0.15 answers, in RESP2 and RESP3.
    #[test]
    fn debug_protocol_as_redis() {
        let mut h = Harness::new();
        h.server = crate::cmd::ServerInfo::new(
            crate::Config {
                enable_debug_command: true,
                ..crate::Config::default()
            },
            6379,
            "0".repeat(40),
        );
        let resp2 = [
            ("bignum", "$37\r\n1234567999999999999999999999999999999\r\n"),
            ("map", "*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n"),
            ("attrib", "$39\r\nSome real reply following the attribute\r\n"),
            ("push", "-ERR RESP2 is not supported by this command\r\n"),
            ("double", "$5\r\n3.141\r\n"),
        ];
        for (t, want) in resp2 {
            assert_eq!(h.cmd(&format!("DEBUG PROTOCOL {t}")), want, "{t}");
        }
        h.cmd("HELLO 3");
        let resp3 = [
            ("bignum", "(1234567999999999999999999999999999999\r\n"),
            ("set", "~3\r\n:0\r\n:1\r\n:2\r\n"),
            ("map", "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"),
            (
                "attrib",
                "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
                 $39\r\nSome real reply following the attribute\r\n",
            ),
            (
                "push",
                ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n",
            ),
            ("verbatim", "=29\r\ntxt:This is a verbatim\nstring\r\n"),
            ("null", "_\r\n"),
            ("true", "#t\r\n"),
        ];
        for (t, want) in resp3 {
            assert_eq!(h.cmd(&format!("DEBUG PROTOCOL {t}")), want, "{t}");
        }
    }

    #[test]
    fn object_reports_what_ferry_stores() {
        let mut h = Harness::new();
        h.cmd("SET s 12");
        h.cmd("RPUSH l a");
        h.cmd("HSET h f v");
        h.cmd("SADD st m");
        h.cmd("ZADD z 1 m");
        for (key, enc) in [
            ("s", "raw"),
            ("l", "quicklist"),
            ("h", "hashtable"),
            ("st", "hashtable"),
            ("z", "skiplist"),
        ] {
            assert_eq!(h.cmd(&format!("OBJECT ENCODING {key}")), bulk(enc), "{key}");
            assert_eq!(h.cmd(&format!("object refcount {key}")), int(1));
        }
        assert_eq!(h.cmd("OBJECT ENCODING nokey"), NULL);
        assert_eq!(
            h.cmd("OBJECT ENCODING"),
            err("ERR wrong number of arguments for 'object|encoding' command")
        );
        assert_eq!(
            h.cmd("OBJECT ENCODING s x"),
            err("ERR wrong number of arguments for 'object|encoding' command")
        );
        assert_eq!(
            h.cmd("OBJECT FOO s"),
            err("ERR unknown subcommand 'FOO'. Try OBJECT HELP.")
        );
        assert_eq!(h.cmd("OBJECT FREQ s"), err(super::FREQ_NOT_TRACKED));
        assert_eq!(h.cmd("OBJECT FREQ nokey"), NULL);
    }

    #[test]
    fn idletime_counts_from_the_last_access_and_object_does_not_touch() {
        let mut h = Harness::new();
        h.cmd("SET k v");
        h.now_ms += 5_500;
        assert_eq!(h.cmd("OBJECT IDLETIME k"), int(5));
        assert_eq!(h.cmd("OBJECT IDLETIME k"), int(5), "OBJECT is not an access");
        h.cmd("GET k");
        assert_eq!(h.cmd("OBJECT IDLETIME k"), int(0));
        h.now_ms += 2_000;
        h.cmd("EXPIRE k 100");
        assert_eq!(h.cmd("OBJECT IDLETIME k"), int(0), "a write lookup is an access");
    }

    #[test]
    fn function_flush_and_list() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("FUNCTION FLUSH"), OK);
        assert_eq!(h.cmd("function flush async"), OK);
        assert_eq!(
            h.cmd("FUNCTION FLUSH lazy"),
            err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
        );
        assert_eq!(h.cmd("FUNCTION LIST"), "*0\r\n");
        assert_eq!(h.cmd("FUNCTION LIST WITHCODE LIBRARYNAME x"), "*0\r\n");
        assert_eq!(
            h.cmd("FUNCTION LOAD x"),
            err("ERR unknown subcommand 'LOAD'. Try FUNCTION HELP.")
        );
    }

    #[test]
    fn debug_needs_enabling_then_runs_its_subset() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("DEBUG SLEEP 0"), err(super::DEBUG_DISABLED));
        h.server.config.enable_debug_command = true;
        assert_eq!(h.cmd("DEBUG SLEEP 0"), OK);
        assert_eq!(h.cmd("DEBUG set-active-expire 0"), OK);
        assert!(!h.server.active_expire.load(std::sync::atomic::Ordering::Relaxed));
        assert_eq!(h.cmd("DEBUG set-active-expire 1"), OK);
        assert!(h.server.active_expire.load(std::sync::atomic::Ordering::Relaxed));
        assert!(h.cmd("DEBUG LOADAOF").starts_with("-ERR no AOF to load: "));
        assert_eq!(h.cmd("DEBUG OBJECT nokey"), err("ERR no such key"));
        h.cmd("SET k hello");
        assert_eq!(
            h.cmd("DEBUG OBJECT k"),
            "+Value at:0x0 refcount:1 encoding:raw serializedlength:5 lru:0 lru_seconds_idle:0\r\n"
        );
        assert_eq!(
            h.cmd("DEBUG nosuch"),
            err("ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.")
        );
    }

    #[test]
    fn config_set_takes_inert_parameters() {
        let mut h = Harness::new();
        assert_eq!(
            h.cmd("CONFIG GET list-max-ziplist-size"),
            bulks(&["list-max-ziplist-size", "-2"])
        );
        assert_eq!(h.cmd("CONFIG SET list-max-ziplist-size 4"), OK);
        assert_eq!(
            h.cmd("CONFIG GET list-max-listpack-size"),
            bulks(&["list-max-listpack-size", "4"])
        );
        assert_eq!(
            h.cmd("CONFIG SET list-compress-depth x"),
            err(
                "ERR CONFIG SET failed (possibly related to argument 'list-compress-depth') - argument couldn't be parsed into an integer"
            )
        );
        assert_eq!(
            h.cmd("CONFIG SET sanitize-dump-payload maybe"),
            err(
                "ERR CONFIG SET failed (possibly related to argument 'sanitize-dump-payload') - argument(s) must be one of the following: no, yes, clients"
            )
        );
        assert_eq!(h.cmd("CONFIG SET replica-read-only no lua-time-limit 10"), OK);
        assert_eq!(
            h.cmd("CONFIG GET busy-reply-threshold"),
            bulks(&["busy-reply-threshold", "10"])
        );
        assert_eq!(
            h.cmd("CONFIG SET set-max-intset-entries 1 databases 4"),
            err(
                "ERR CONFIG SET failed (possibly related to argument 'databases') - this server's configuration is read-only: set it when starting the server"
            )
        );
        assert_eq!(
            h.cmd("CONFIG GET set-max-intset-entries"),
            bulks(&["set-max-intset-entries", "512"]),
            "all or nothing"
        );
    }
}
