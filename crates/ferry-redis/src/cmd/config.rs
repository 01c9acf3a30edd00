//! `CONFIG` and its subcommands ([`CONFIG_SUBS`]).
//!
//! Where this differs from Redis, and why:
//! - `CONFIG` changes little: the configuration is fixed when the server starts, except
//!   `maxmemory`, `notify-keyspace-events` ([`notify`]), the `pubsub` class of
//!   `client-output-buffer-limit`, the persistence settings `dir`, `dbfilename` and `save`
//!   ([`persist`](super::persist)), and the AOF's `appendonly`, `appendfsync`,
//!   `aof-use-rdb-preamble`, `aof-load-truncated` and `auto-aof-rewrite-*` ([`crate::aof`];
//!   `appenddirname` and `appendfilename` are fixed at start, as in Redis). `CONFIG GET` knows
//!   the parameters clients ask for ([`CONFIG_PARAMS`]) and the [`INERT_PARAMS`]: Redis's encoding thresholds and replication and scripting knobs,
//!   which `CONFIG SET` accepts (with Redis's checks and errors) and reports back, but which
//!   change nothing in Ferry (it has one representation per type). `CONFIG SET` of another
//!   parameter accepts the value it already has and refuses a change with Redis's
//!   `ERR CONFIG SET failed (possibly related to argument '..') - ...` error. `CONFIG
//!   RESETSTAT` zeroes the server-wide counters of `INFO stats` and `INFO commandstats` (not
//!   the keyspace's hit, miss and expiry counters, which the keyspace owns). `CONFIG REWRITE` answers as Redis does
//!   when started without a config file.

use std::sync::PoisonError;

use super::keys::glob_match;
use super::notify;
use super::pubsub::OutputLimit;
use super::strings::parse_i64;
use super::subcommand::{ACL_ADMIN, ADMIN_SUB, HELP_SUB, Sub, dispatch, help, sub};
use super::{Args, Ctx, SYNTAX, quoted};
use crate::resp::ReplyBuf;

/// `CONFIG`'s subcommands.
#[rustfmt::skip]
pub static CONFIG_SUBS: &[Sub] = &[
    sub("config|get", -3, ADMIN_SUB, ACL_ADMIN, &[], "server", "Get the values of configuration parameters", "2.0.0", "O(N) when N is the number of configuration parameters provided", config_get),
    sub("config|help", 2, HELP_SUB, &["@slow"], &[], "server", "Show helpful text about the different subcommands", "5.0.0", "O(1)", config_help),
    sub("config|resetstat", 2, ADMIN_SUB, ACL_ADMIN, &[], "server", "Reset the stats returned by INFO", "2.0.0", "O(1)", config_resetstat),
    sub("config|rewrite", 2, ADMIN_SUB, ACL_ADMIN, &[], "server", "Rewrite the configuration file with the in memory configuration", "2.8.0", "O(1)", config_rewrite),
    sub("config|set", -4, ADMIN_SUB, ACL_ADMIN, &["request_policy:all_nodes", "response_policy:all_succeeded"], "server", "Set configuration parameters to the given values", "2.0.0", "O(N) when N is the number of configuration parameters provided", config_set),
];

/// The parameters `CONFIG GET` knows, in the order `CONFIG GET *` lists them.
pub const CONFIG_PARAMS: &[&str] = &[
    "aof-load-truncated",
    "aof-use-rdb-preamble",
    "appenddirname",
    "appendfilename",
    "appendfsync",
    "appendonly",
    "auto-aof-rewrite-min-size",
    "auto-aof-rewrite-percentage",
    "bind",
    "client-output-buffer-limit",
    "client-query-buffer-limit",
    "databases",
    "dbfilename",
    "dir",
    "hz",
    "maxclients",
    "maxmemory",
    "maxmemory-policy",
    "notify-keyspace-events",
    "port",
    "proto-max-bulk-len",
    "requirepass",
    "save",
    "timeout",
    "tls-port",
];

/// How `CONFIG SET` checks the value of an [`InertParam`].
#[derive(Debug, Clone, Copy)]
pub enum ParamKind {
    /// An integer (`i64`).
    Int,
    /// `yes` or `no`.
    Bool,
    /// One of these words.
    Enum(&'static [&'static str]),
}

/// A parameter `CONFIG SET` accepts and `CONFIG GET` reports, whose value has no effect on
/// Ferry: Redis's encoding thresholds (Ferry has one representation per type), replication and
/// scripting knobs. Redis's test suite sets them as setup.
#[derive(Debug, Clone, Copy)]
pub struct InertParam {
    /// Redis 7.0's name.
    pub name: &'static str,
    /// Its older name, which Redis still accepts (`list-max-ziplist-size`).
    pub alias: Option<&'static str>,
    /// Redis 7.0's default.
    pub default: &'static str,
    /// What a value must look like.
    pub kind: ParamKind,
}

const fn inert(
    name: &'static str,
    alias: Option<&'static str>,
    default: &'static str,
    kind: ParamKind,
) -> InertParam {
    InertParam {
        name,
        alias,
        default,
        kind,
    }
}

/// The parameters accepted without effect.
#[rustfmt::skip]
pub static INERT_PARAMS: &[InertParam] = &[
    inert("active-expire-effort", None, "1", ParamKind::Int),
    inert("busy-reply-threshold", Some("lua-time-limit"), "5000", ParamKind::Int),
    inert("hash-max-listpack-entries", Some("hash-max-ziplist-entries"), "128", ParamKind::Int),
    inert("hash-max-listpack-value", Some("hash-max-ziplist-value"), "64", ParamKind::Int),
    inert("latency-monitor-threshold", None, "0", ParamKind::Int),
    inert("latency-tracking", None, "yes", ParamKind::Bool),
    inert("lazyfree-lazy-user-del", None, "no", ParamKind::Bool),
    inert("lazyfree-lazy-user-flush", None, "no", ParamKind::Bool),
    inert("list-compress-depth", None, "0", ParamKind::Int),
    inert("list-max-listpack-size", Some("list-max-ziplist-size"), "-2", ParamKind::Int),
    inert("min-replicas-to-write", Some("min-slaves-to-write"), "0", ParamKind::Int),
    inert("repl-ping-replica-period", Some("repl-ping-slave-period"), "10", ParamKind::Int),
    inert("replica-read-only", Some("slave-read-only"), "yes", ParamKind::Bool),
    inert("replica-serve-stale-data", Some("slave-serve-stale-data"), "yes", ParamKind::Bool),
    inert("sanitize-dump-payload", None, "no", ParamKind::Enum(&["no", "yes", "clients"])),
    inert("set-max-intset-entries", None, "512", ParamKind::Int),
    inert("slowlog-log-slower-than", None, "10000", ParamKind::Int),
    inert("slowlog-max-len", None, "128", ParamKind::Int),
    inert("zset-max-listpack-entries", Some("zset-max-ziplist-entries"), "128", ParamKind::Int),
    inert("zset-max-listpack-value", Some("zset-max-ziplist-value"), "64", ParamKind::Int),
];

/// A parameter `CONFIG` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Param {
    /// One of [`CONFIG_PARAMS`]: fixed when the server starts.
    Fixed(&'static str),
    /// [`INERT_PARAMS`]`[i]`.
    Inert(usize),
}

/// Every parameter name `CONFIG GET *` lists (aliases included, as Redis 7.0 lists them).
fn param_names() -> impl Iterator<Item = (&'static str, Param)> {
    let fixed = CONFIG_PARAMS.iter().map(|&p| (p, Param::Fixed(p)));
    let inert = INERT_PARAMS.iter().enumerate().flat_map(|(i, p)| {
        std::iter::once(p.name)
            .chain(p.alias)
            .map(move |n| (n, Param::Inert(i)))
    });
    fixed.chain(inert)
}

/// The current value of `param`.
fn config_value(ctx: &Ctx<'_>, param: Param) -> String {
    let config = &ctx.server.config;
    let name = match param {
        Param::Fixed(name) => name,
        Param::Inert(i) => {
            let values = ctx.server.inert.lock().unwrap_or_else(PoisonError::into_inner);
            return values[i].clone();
        }
    };
    match name {
        "appendonly" => yes_no(ctx.server.aof.enabled()),
        "appendfsync" => ctx.server.aof.settings().fsync.name().into(),
        "appenddirname" => ctx.server.aof.settings().dirname,
        "appendfilename" => ctx.server.aof.settings().filename,
        "aof-use-rdb-preamble" => yes_no(ctx.server.aof.settings().rdb_preamble),
        "aof-load-truncated" => yes_no(ctx.server.aof.settings().load_truncated),
        "auto-aof-rewrite-percentage" => ctx.server.aof.settings().auto_rewrite_percentage.to_string(),
        "auto-aof-rewrite-min-size" => ctx.server.aof.settings().auto_rewrite_min_size.to_string(),
        "bind" => config.bind.ip().to_string(),
        "client-output-buffer-limit" => {
            let p = ctx
                .server
                .pubsub
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .limit;
            format!(
                "{} {} {} {}",
                fixed_output_limits(config),
                p.hard,
                p.soft,
                p.soft_seconds
            )
        }
        "client-query-buffer-limit" => config.query_buffer_limit.to_string(),
        "databases" => config.databases.to_string(),
        "hz" => config.hz.to_string(),
        "maxclients" => config.max_clients.to_string(),
        "maxmemory" => ctx
            .server
            .maxmemory
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string(),
        "maxmemory-policy" => "noeviction".into(),
        "notify-keyspace-events" => notify::format_flags(ctx.server.notify.flags()),
        "port" => ctx.server.port.to_string(),
        "proto-max-bulk-len" => config.proto_max_bulk_len.to_string(),
        "requirepass" => config.password.clone().unwrap_or_default(),
        "save" => super::persist::show_save(&ctx.server.persist.settings().save),
        "dir" => ctx.server.persist.settings().dir.display().to_string(),
        "dbfilename" => ctx.server.persist.settings().dbfilename,
        "timeout" => "0".into(),
        "tls-port" => config.tls.as_ref().map_or(0, |t| t.port).to_string(),
        _ => String::new(),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// `yes` or `no` (any case).
fn parse_yes_no(value: &[u8]) -> Option<bool> {
    if value.eq_ignore_ascii_case(b"yes") {
        Some(true)
    } else if value.eq_ignore_ascii_case(b"no") {
        Some(false)
    } else {
        None
    }
}

/// The known parameter named `name` (any case).
fn config_param(name: &[u8]) -> Option<Param> {
    param_names()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|(_, p)| p)
}

/// `CONFIG subcommand ...`: see [`CONFIG_SUBS`].
pub fn config(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("config", CONFIG_SUBS, ctx, args, out);
}

/// `CONFIG GET pattern [pattern ...]`: a map of the matching parameters. A pattern without
/// glob characters is a name (any case), echoed as given; a glob matches without regard to
/// case. Each parameter appears once.
fn config_get(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    // (parameter, the name to reply with).
    let mut matches: Vec<(Param, &[u8])> = Vec::new();
    for pattern in args.iter_from(2) {
        if pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            let pattern = pattern.to_ascii_lowercase();
            for (name, param) in param_names() {
                if glob_match(&pattern, name.as_bytes())
                    && !matches.iter().any(|m| m.1.eq_ignore_ascii_case(name.as_bytes()))
                {
                    matches.push((param, name.as_bytes()));
                }
            }
        } else if let Some(param) = config_param(pattern) {
            if !matches.iter().any(|m| m.1.eq_ignore_ascii_case(pattern)) {
                matches.push((param, pattern));
            }
        }
    }
    out.map(matches.len());
    for (param, key) in matches {
        out.bulk(key);
        out.bulk(config_value(ctx, param).as_bytes());
    }
}

/// Why `value` is not a valid value of `kind` (Redis's words), if it is not.
fn check_value(kind: ParamKind, value: &[u8]) -> Option<String> {
    match kind {
        ParamKind::Int if parse_i64(value).is_none() => {
            Some("argument couldn't be parsed into an integer".into())
        }
        ParamKind::Bool if !value.eq_ignore_ascii_case(b"yes") && !value.eq_ignore_ascii_case(b"no") => {
            Some("argument must be 'yes' or 'no'".into())
        }
        ParamKind::Enum(words) if !words.iter().any(|w| w.as_bytes().eq_ignore_ascii_case(value)) => Some(
            format!("argument(s) must be one of the following: {}", words.join(", ")),
        ),
        _ => None,
    }
}

/// `CONFIG SET parameter value [parameter value ...]`: all or nothing. An inert parameter
/// ([`INERT_PARAMS`]) takes any valid value, `maxmemory` any memory value (0: no limit);
/// another parameter, fixed at start, only the value it already has.
fn config_set(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() % 2 != 0 {
        return out.error(SYNTAX);
    }
    let mut pairs = Vec::with_capacity((args.len() - 2) / 2);
    for i in (2..args.len()).step_by(2) {
        match config_param(args.get(i)) {
            Some(param) => pairs.push((param, args.get(i), args.get(i + 1))),
            None => {
                return out.error(quoted(
                    "ERR Unknown option or number of arguments for CONFIG SET - '",
                    args.get(i),
                    "'",
                ));
            }
        }
    }
    for &(param, name, value) in &pairs {
        let why = match param {
            Param::Inert(i) => check_value(INERT_PARAMS[i].kind, value),
            Param::Fixed("maxmemory") => parse_memory(value)
                .is_none()
                .then(|| "argument must be a memory value".to_string()),
            Param::Fixed("client-output-buffer-limit") => parse_output_limits(&ctx.server.config, value)
                .err()
                .map(str::to_string),
            Param::Fixed("save") => super::persist::parse_save(value)
                .is_none()
                .then(|| "Invalid save parameters".to_string()),
            Param::Fixed("dir") => super::persist::check_dir(value).err(),
            Param::Fixed("dbfilename") => super::persist::check_dbfilename(value).err(),
            Param::Fixed("appendonly" | "aof-use-rdb-preamble" | "aof-load-truncated") => parse_yes_no(value)
                .is_none()
                .then(|| "argument must be 'yes' or 'no'".to_string()),
            Param::Fixed("appendfsync") => crate::aof::Fsync::parse(value)
                .is_none()
                .then(|| "argument(s) must be one of the following: always, everysec, no".to_string()),
            Param::Fixed("auto-aof-rewrite-percentage") => parse_i64(value)
                .is_none_or(|n| n < 0)
                .then(|| "argument must be a non-negative integer".to_string()),
            Param::Fixed("auto-aof-rewrite-min-size") => parse_memory(value)
                .is_none()
                .then(|| "argument must be a memory value".to_string()),
            Param::Fixed("notify-keyspace-events") => notify::parse_flags(value)
                .is_none()
                .then(|| notify::BAD_FLAGS.to_string()),
            Param::Fixed(_) if value.eq_ignore_ascii_case(config_value(ctx, param).as_bytes()) => None,
            Param::Fixed(_) => {
                Some("this server's configuration is read-only: set it when starting the server".into())
            }
        };
        if let Some(why) = why {
            let mut msg = quoted(
                "ERR CONFIG SET failed (possibly related to argument '",
                name,
                "') - ",
            );
            msg.extend_from_slice(why.as_bytes());
            return out.error(msg);
        }
    }
    let server = ctx.server;
    let mut appendonly = None;
    let mut values = server.inert.lock().unwrap_or_else(PoisonError::into_inner);
    for (param, _, value) in pairs {
        match param {
            Param::Inert(i) => values[i] = String::from_utf8_lossy(value).to_ascii_lowercase(),
            Param::Fixed("client-output-buffer-limit") => {
                if let Some(limit) = parse_output_limits(&ctx.server.config, value).expect("checked above") {
                    ctx.server
                        .pubsub
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .limit = limit;
                }
            }
            Param::Fixed("maxmemory") => {
                let bytes = parse_memory(value).expect("checked above");
                ctx.server
                    .maxmemory
                    .store(bytes, std::sync::atomic::Ordering::Relaxed);
            }
            // Checked above: these cannot fail now.
            Param::Fixed("save") => drop(ctx.server.persist.set_save(value)),
            Param::Fixed("dir") => drop(ctx.server.persist.set_dir(value)),
            Param::Fixed("dbfilename") => drop(ctx.server.persist.set_dbfilename(value)),
            Param::Fixed("appendonly") => appendonly = parse_yes_no(value),
            Param::Fixed("appendfsync") => {
                let fsync = crate::aof::Fsync::parse(value).expect("checked above");
                server.aof.update(|s| s.fsync = fsync);
            }
            Param::Fixed("aof-use-rdb-preamble") => {
                let on = parse_yes_no(value).expect("checked above");
                server.aof.update(|s| s.rdb_preamble = on);
            }
            Param::Fixed("aof-load-truncated") => {
                let on = parse_yes_no(value).expect("checked above");
                server.aof.update(|s| s.load_truncated = on);
            }
            Param::Fixed("auto-aof-rewrite-percentage") => {
                let n = parse_i64(value).expect("checked above") as u64;
                server.aof.update(|s| s.auto_rewrite_percentage = n);
            }
            Param::Fixed("auto-aof-rewrite-min-size") => {
                let n = parse_memory(value).expect("checked above") as u64;
                server.aof.update(|s| s.auto_rewrite_min_size = n);
            }
            Param::Fixed("notify-keyspace-events") => {
                let notify = &ctx.server.notify;
                notify.set(notify::parse_flags(value).expect("checked above"));
                let feeding = ctx.server.feed.is_active();
                notify.logs(ctx.db, feeding);
                ctx.others.iter_mut().for_each(|db| notify.logs(db, feeding));
            }
            Param::Fixed(_) => {}
        }
    }
    drop(values);
    if let Some(on) = appendonly
        && let Err(e) = super::persist::set_appendonly(ctx, on)
    {
        return out.error(format!(
            "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {e}"
        ));
    }
    out.ok();
}

/// The `normal` and `slave` classes of `client-output-buffer-limit`, as `CONFIG GET` lists
/// them before `pubsub`: fixed at start (a normal client's hard limit is the server's output
/// buffer limit; there are no replicas), so `CONFIG SET` takes them only unchanged.
fn fixed_output_limits(config: &crate::config::Config) -> String {
    format!(
        "normal {} 0 0 slave 268435456 67108864 60 pubsub",
        config.output_buffer_limit
    )
}

/// A `client-output-buffer-limit` value: `class hard soft seconds` groups (memory values for
/// the sizes), Redis's checks and messages. `Ok(Some(limit))`: the new `pubsub` class;
/// `Ok(None)`: no `pubsub` group.
fn parse_output_limits(
    config: &crate::config::Config,
    value: &[u8],
) -> Result<Option<OutputLimit>, &'static str> {
    let words: Vec<&[u8]> = value.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    if words.len() % 4 != 0 {
        return Err("Wrong number of arguments in buffer limit configuration.");
    }
    let fixed = fixed_output_limits(config);
    let fixed: Vec<&str> = fixed.split(' ').collect();
    let mut pubsub = None;
    for group in words.chunks(4) {
        let class = group[0].to_ascii_lowercase();
        let (hard, soft, secs) = match (
            parse_memory(group[1]),
            parse_memory(group[2]),
            parse_i64(group[3]),
        ) {
            (Some(h), Some(s), Some(t)) if t >= 0 => (h, s, t as u64),
            _ => return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration."),
        };
        let at = match class.as_slice() {
            b"normal" => 0,
            b"slave" | b"replica" => 4,
            b"pubsub" => {
                pubsub = Some(OutputLimit {
                    hard,
                    soft,
                    soft_seconds: secs,
                });
                continue;
            }
            _ => return Err("Invalid client class specified in buffer limit configuration."),
        };
        let now = [hard.to_string(), soft.to_string(), secs.to_string()];
        if now.iter().zip(&fixed[at + 1..at + 4]).any(|(a, b)| a != b) {
            return Err("only the pubsub class can change: the others are fixed when the server starts");
        }
    }
    Ok(pubsub)
}

/// A memory size as redis.conf writes it (Redis's `memtoull`): digits and an optional unit,
/// `b`, `k`, `kb`, `m`, `mb`, `g`, `gb` in any case (`k` is 1000, `kb` 1024).
pub fn parse_memory(value: &[u8]) -> Option<usize> {
    let split = value
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(value.len());
    let (digits, unit) = value.split_at(split);
    let n: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let mult: usize = match unit.to_ascii_lowercase().as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `CONFIG RESETSTAT`: zeroes the server-wide counters of `INFO stats` and `INFO commandstats`.
fn config_resetstat(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    let s = &ctx.server.stats;
    for counter in [
        &s.total_connections_received,
        &s.rejected_connections,
        &s.total_commands_processed,
        &s.total_net_input_bytes,
        &s.total_net_output_bytes,
        &s.reply_bytes_copied,
        &s.reply_bytes_referenced,
        &s.clients_dropped,
    ] {
        counter.store(0, std::sync::atomic::Ordering::Relaxed);
    }
    for c in &ctx.server.command_stats {
        for counter in [&c.calls, &c.usec, &c.rejected_calls, &c.failed_calls] {
            counter.store(0, std::sync::atomic::Ordering::Relaxed);
        }
    }
    out.ok();
}

/// `CONFIG REWRITE`: there is no configuration file.
fn config_rewrite(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.error("ERR The server is running without a config file");
}

/// `CONFIG HELP`.
fn config_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{OK, bulk, err, server_harness};
    use crate::cmd::{Stats, wrong_arity};

    #[test]
    fn config_get() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("CONFIG GET save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
        assert_eq!(
            h.cmd("CONFIG GET appendonly"),
            "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"
        );
        // An exact name is echoed as given; a glob matches any case; each parameter once.
        assert_eq!(
            h.cmd("CONFIG GET Port p*rt"),
            "*2\r\n$4\r\nPort\r\n$4\r\n6379\r\n"
        );
        assert_eq!(
            h.cmd("CONFIG GET MAXMEMORY*"),
            format!(
                "*4\r\n$9\r\nmaxmemory\r\n{}$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n",
                bulk(&(1u64 << 30).to_string())
            )
        );
        assert_eq!(h.cmd("CONFIG GET nosuch"), "*0\r\n");
        assert_eq!(
            h.cmd("CONFIG GET databases requirepass bind"),
            "*6\r\n$9\r\ndatabases\r\n$2\r\n16\r\n$11\r\nrequirepass\r\n$0\r\n\r\n\
             $4\r\nbind\r\n$9\r\n127.0.0.1\r\n"
        );
        let all = h.cmd("CONFIG GET *");
        let names = CONFIG_PARAMS.len()
            + INERT_PARAMS
                .iter()
                .map(|p| 1 + usize::from(p.alias.is_some()))
                .sum::<usize>();
        assert!(all.starts_with(&format!("*{}\r\n", 2 * names)));
        h.cmd("HELLO 3");
        assert_eq!(h.cmd("CONFIG GET timeout"), "%1\r\n$7\r\ntimeout\r\n$1\r\n0\r\n");
        assert_eq!(h.cmd("CONFIG GET"), err(&wrong_arity("config|get")));
        assert_eq!(
            h.cmd("CONFIG"),
            err("ERR wrong number of arguments for 'config' command")
        );
        assert_eq!(
            h.cmd("CONFIG FOO"),
            err("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
        );

        let mut h = server_harness(Some("pw"));
        h.cmd("AUTH pw");
        assert_eq!(
            h.cmd("CONFIG GET requirepass"),
            "*2\r\n$11\r\nrequirepass\r\n$2\r\npw\r\n"
        );
    }

    #[test]
    fn config_is_read_only() {
        let mut h = server_harness(None);
        assert_eq!(
            h.run(&[b"CONFIG", b"SET", b"save", b"", b"appendonly", b"NO"]),
            OK.as_bytes()
        );
        assert_eq!(h.cmd("CONFIG SET port 6379"), OK);
        assert_eq!(
            h.cmd("CONFIG SET hz 11"),
            err(
                "ERR CONFIG SET failed (possibly related to argument 'hz') - this \
                 server's configuration is read-only: set it when starting the server"
            )
        );
        assert_eq!(h.cmd("SET a v"), OK);
        assert_eq!(h.cmd("CONFIG SET maxmemory 1"), OK);
        assert_eq!(h.cmd("SET k v"), err(crate::cmd::OOM), "over the new limit");
        assert_eq!(h.cmd("CONFIG SET maxmemory 2kb"), OK);
        assert_eq!(
            h.cmd("CONFIG GET maxmemory"),
            "*2\r\n$9\r\nmaxmemory\r\n$4\r\n2048\r\n"
        );
        assert_eq!(
            h.cmd("CONFIG SET maxmemory 2x"),
            err(
                "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
            )
        );
        assert_eq!(h.cmd("CONFIG SET maxmemory 0"), OK);
        assert_eq!(h.cmd("SET k v"), OK, "0: no limit");
        assert_eq!(
            h.cmd("CONFIG SET save \"\" nosuch 2"),
            err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
        );
        assert_eq!(h.cmd("CONFIG SET a b c"), err(SYNTAX));
        assert_eq!(h.cmd("CONFIG SET a"), err(&wrong_arity("config|set")));
        assert_eq!(
            h.cmd("CONFIG REWRITE"),
            err("ERR The server is running without a config file")
        );
        assert!(h.cmd("CONFIG HELP").starts_with("*11\r\n+CONFIG <subcommand>"));
        Stats::add(&h.server.stats.total_net_input_bytes, 100);
        h.cmd("MULTI");
        h.cmd("PING");
        h.cmd("EXEC");
        let calls = |h: &mut crate::cmd::harness::Harness| {
            let info = h.cmd("INFO commandstats");
            ["multi", "ping", "exec"].map(|c| info.contains(&format!("cmdstat_{c}:calls=1,")))
        };
        assert_eq!(calls(&mut h), [true; 3]);
        assert_eq!(h.cmd("CONFIG RESETSTAT"), OK);
        assert_eq!(Stats::get(&h.server.stats.total_net_input_bytes), 0);
        assert_eq!(calls(&mut h), [false; 3]);
        assert_eq!(h.cmd("CONFIG RESETSTAT x"), err(&wrong_arity("config|resetstat")));
    }
}
