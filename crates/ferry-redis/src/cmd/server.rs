//! Connection and server commands: `PING`, `ECHO`, `HELLO`, `AUTH`, `SELECT`, `QUIT`, `TIME`,
//! `CLIENT`, `COMMAND`, `CONFIG`, `INFO`, `DBSIZE`, `FLUSHDB`, `FLUSHALL`, `SWAPDB`, `MOVE`.
//!
//! Replies and error messages are Redis 7.0.15's, checked against the real server in both
//! protocols, so that `redis-cli` (which reads `COMMAND DOCS` at start), `redis-benchmark`
//! (`CONFIG GET save`, `appendonly`) and client libraries (`HELLO 3`, `CLIENT SETNAME`,
//! `COMMAND`, `INFO`) work unchanged.
//!
//! Container commands (`CLIENT`, `COMMAND`, `CONFIG`) dispatch on a table of [`Sub`]commands
//! here, with Redis's arities (`ERR wrong number of arguments for 'client|setname' command`),
//! flags and ACL categories (what `COMMAND INFO` and `COMMAND DOCS` report for them).
//!
//! Where this server differs from Redis, and why:
//! - `databases` (16 by default) databases, shared by every event loop and locked together:
//!   a command may touch several (`MOVE`, `SWAPDB`, `COPY ... DB`, `FLUSHALL`).
//! - One user, `default`, whose password is `requirepass`
//!   ([`Config::password`](crate::Config::password)): `AUTH user pass` and `HELLO .. AUTH`
//!   accept no other name. With no password set, `AUTH pass` is refused as Redis refuses it,
//!   while `AUTH default <anything>` succeeds (Redis's `nopass` default user).
//! - `CLIENT` has `ID`, `GETNAME`, `SETNAME`, `INFO`, `LIST`, `HELP`; the rest (`KILL`,
//!   `PAUSE`, `TRACKING`, `NO-EVICT`, ...) are unknown subcommands. A handler sees only its
//!   own client, so `CLIENT LIST` lists the caller alone. Its line has the fields Ferry knows
//!   (`id addr laddr name age idle flags db sub psub ssub multi cmd user redir resp`), not the
//!   buffer and memory fields (`fd qbuf omem tot-mem ...`) it would have to invent.
//! - `COMMAND` reports the table's commands. ACL categories are derived from flags and group
//!   (`@read`/`@write`, `@string`/`@list`/`@keyspace`/`@connection`, `@fast`/`@slow`,
//!   `@admin`/`@dangerous`); key specs from the `(first, last, step)` positions (one range
//!   spec, flagged `RO access` or `RW`); tips are empty for top-level commands. `COMMAND DOCS`
//!   gives summary, since, group, complexity and an empty `arguments` array (argument trees
//!   are not modelled: `redis-cli` shows no hints, but its help and completion work).
//!   `COMMAND GETKEYSANDFLAGS` is not implemented.
//! - `CONFIG` changes little: the configuration is fixed when the server starts, except
//!   `maxmemory`. `CONFIG GET` knows the parameters clients ask for ([`CONFIG_PARAMS`]) and
//!   the [`INERT_PARAMS`]: Redis's encoding thresholds and replication and scripting knobs,
//!   which `CONFIG SET` accepts (with Redis's checks and errors) and reports back, but which
//!   change nothing in Ferry (it has one representation per type). `CONFIG SET` of another
//!   parameter accepts the value it already has (`CONFIG SET save ""` and `appendonly no`,
//!   which test harnesses send, succeed) and refuses a change with Redis's
//!   `ERR CONFIG SET failed (possibly related to argument '..') - ...` error. `CONFIG
//!   RESETSTAT` zeroes the server-wide counters of `INFO stats` (not the keyspace's hit, miss
//!   and expiry counters, which the keyspace owns). `CONFIG REWRITE` answers as Redis does
//!   when started without a config file.
//! - `INFO` has the sections `server`, `clients`, `memory`, `persistence`, `stats`,
//!   `replication`, `cluster` and `keyspace` (`default`, `all` and `everything` are all of
//!   them), with the fields Ferry can fill truthfully, plus Ferry's own (`ferry_*`, and the
//!   reply byte counters). `cpu`, `modules`, `errorstats`, `commandstats` and `latencystats`
//!   are empty, as any unknown section is. `avg_ttl` is always 0 (not tracked).
//! - `FLUSHDB ASYNC` and `FLUSHALL ASYNC` flush synchronously (the keyspace frees its memory
//!   at once; values still referenced by replies in flight are freed when sent).

use std::fmt::Write as _;
use std::sync::PoisonError;

use super::strings::parse_i64;
use super::{
    Args, CommandSpec, Ctx, Handler, NOT_INTEGER, SYNTAX, Stats, keys::glob_match, table, wrong_arity,
};
use crate::db::{Access, Db, DbStats, SetIf, Ttl};
use crate::resp::{Proto, ReplyBuf};

/// The Redis version this server answers as (`HELLO`, `INFO server`).
pub const REDIS_VERSION: &str = "7.0.15";

/// The reply to a wrong user name or password.
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
/// `AUTH <password>` when no password is set.
pub const AUTH_NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured \
     for the default user. Are you sure your configuration is correct?";
/// `HELLO` without `AUTH` from a client that has not authenticated.
pub const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already \
     authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate \
     the client and select the RESP protocol version at the same time";
/// `HELLO` with a protocol version other than 2 or 3.
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
/// `SELECT` of a database other than 0.
pub const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";
/// A client name with a byte outside `!`..=`~`.
pub const BAD_CLIENT_NAME: &str = "ERR Client names cannot contain spaces, newlines or special characters.";

/// `PING [message]`: `+PONG`, or the message as a bulk string.
pub fn ping(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match args.len() {
        1 => out.simple("PONG"),
        2 => out.bulk(args.get(1)),
        _ => out.error(wrong_arity("ping")),
    }
}

/// `ECHO message`: the message as a bulk string.
pub fn echo(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    out.bulk(args.get(1));
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`: authenticates, names the client and
/// switches its protocol, then describes the server in a map written in the new protocol.
///
/// Checks run in Redis's order, and nothing changes unless every earlier step passed: the
/// version (`ERR Protocol version is not an integer or out of range`, `NOPROTO`), the options
/// (`ERR Syntax error in HELLO option '..'`), the credentials (`WRONGPASS`; success
/// authenticates even if a later step fails), authentication ([`HELLO_NOAUTH`]), the name.
pub fn hello(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut proto = None;
    if args.len() >= 2 {
        proto = match parse_i64(args.get(1)) {
            None => return out.error("ERR Protocol version is not an integer or out of range"),
            Some(2) => Some(Proto::Resp2),
            Some(3) => Some(Proto::Resp3),
            Some(_) => return out.error(NOPROTO),
        };
    }
    let mut credentials = None;
    let mut name = None;
    let mut j = 2;
    while j < args.len() {
        let opt = args.get(j);
        let more = args.len() - 1 - j;
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            credentials = Some((args.get(j + 1), args.get(j + 2)));
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            name = Some(args.get(j + 1));
            j += 2;
        } else {
            return out.error(quoted("ERR Syntax error in HELLO option '", opt, "'"));
        }
    }
    if let Some((user, pass)) = credentials {
        if !credentials_ok(ctx.server.config.password.as_deref(), Some(user), pass) {
            return out.error(WRONGPASS);
        }
        ctx.client.authenticated = true;
    }
    if !ctx.client.authenticated {
        return out.error(HELLO_NOAUTH);
    }
    if let Some(name) = name {
        if let Err(e) = set_client_name(ctx, name) {
            return out.error(e);
        }
    }
    if let Some(proto) = proto {
        ctx.client.proto = proto;
        out.set_proto(proto);
    }
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.integer(match ctx.client.proto {
        Proto::Resp2 => 2,
        Proto::Resp3 => 3,
    });
    out.bulk(b"id");
    out.integer(client_id(ctx));
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

/// An error message quoting a client's argument as is (Redis's `'%s'`: not necessarily UTF-8).
fn quoted(before: &str, arg: &[u8], after: &str) -> Vec<u8> {
    // Redis formats the argument with `%s`: it ends at its first NUL.
    [before.as_bytes(), super::c_str(arg), after.as_bytes()].concat()
}

/// `AUTH [username] password`: authenticates the client as `default`.
pub fn auth(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let password = ctx.server.config.password.as_deref();
    let (user, pass) = match args.len() {
        2 if password.is_none() => return out.error(AUTH_NO_PASSWORD),
        2 => (None, args.get(1)),
        3 => (Some(args.get(1)), args.get(2)),
        _ => return out.error(SYNTAX),
    };
    if credentials_ok(password, user, pass) {
        ctx.client.authenticated = true;
        out.ok();
    } else {
        // As in Redis, a failed attempt leaves an authenticated client authenticated.
        out.error(WRONGPASS);
    }
}

/// Whether `user` (`default` when absent) and `pass` are the default user's credentials; any
/// password is when none is set (Redis's `nopass`). The comparison takes the same time
/// wherever the first difference is.
fn credentials_ok(password: Option<&str>, user: Option<&[u8]>, pass: &[u8]) -> bool {
    if user.is_some_and(|u| u != b"default") {
        return false;
    }
    let Some(password) = password else {
        return true;
    };
    let want = password.as_bytes();
    let mut diff = u8::from(want.len() != pass.len());
    for i in 0..want.len().max(pass.len()) {
        diff |= want.get(i).copied().unwrap_or(0) ^ pass.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// A database index argument as Redis's `getIntFromObjectOrReply` reads it: an `i32`, or
/// `msg` (Redis's own words when `None`).
pub fn parse_db_index(arg: &[u8], msg: Option<&'static str>) -> Result<i64, &'static str> {
    match parse_i64(arg) {
        None => Err(msg.unwrap_or(NOT_INTEGER)),
        Some(i) if i32::try_from(i).is_err() => {
            Err(msg.unwrap_or("ERR value is out of range, value must between -2147483648 and 2147483647"))
        }
        Some(i) => Ok(i),
    }
}

/// Index `i` if it names one of the `count` databases.
fn db_in_range(i: i64, count: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|&i| i < count)
}

/// `SELECT index`: the client's database from now on.
pub fn select(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match parse_db_index(args.get(1), None) {
        Err(e) => out.error(e),
        Ok(i) => match db_in_range(i, ctx.others.count()) {
            Some(i) => {
                ctx.client.db = i;
                out.ok();
            }
            None => out.error(DB_OUT_OF_RANGE),
        },
    }
}

/// `SWAPDB index1 index2`: exchanges the contents of two databases (clients keep their
/// selected index, so they see the other data).
pub fn swapdb(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let a = match parse_db_index(args.get(1), Some("ERR invalid first DB index")) {
        Ok(i) => i,
        Err(e) => return out.error(e),
    };
    let b = match parse_db_index(args.get(2), Some("ERR invalid second DB index")) {
        Ok(i) => i,
        Err(e) => return out.error(e),
    };
    let count = ctx.others.count();
    let (Some(a), Some(b)) = (db_in_range(a, count), db_in_range(b, count)) else {
        return out.error(DB_OUT_OF_RANGE);
    };
    let selected = ctx.client.db;
    if a != b {
        if a == selected || b == selected {
            let other = if a == selected { b } else { a };
            let other = ctx.others.get_mut(other).expect("in range, not the selected one");
            other.swap_contents(ctx.db);
        } else {
            // Two databases of the same slice: through a third.
            let mut middle = Db::new(ctx.db.pool().clone(), ctx.db.keep_in_place_min());
            middle.swap_contents(ctx.others.get_mut(a).expect("in range"));
            middle.swap_contents(ctx.others.get_mut(b).expect("in range"));
            middle.swap_contents(ctx.others.get_mut(a).expect("in range"));
        }
    }
    out.ok();
}

/// `MOVE key db`: moves the key (value and deadline) to database `db` unless it exists
/// there; 1 if it moved.
pub fn move_(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let i = match parse_db_index(args.get(2), None) {
        Ok(i) => i,
        Err(e) => return out.error(e),
    };
    let Some(i) = db_in_range(i, ctx.others.count()) else {
        return out.error(DB_OUT_OF_RANGE);
    };
    if i == ctx.client.db {
        return out.error(SAME_OBJECT);
    }
    let (key, now) = (args.get(1), ctx.now_ms);
    if ctx.db.find(key, now, Access::Write).is_none() {
        return out.integer(0);
    }
    let dst = ctx.others.get_mut(i).expect("in range, not the selected one");
    if dst.find(key, now, Access::Write).is_some() {
        return out.integer(0);
    }
    let Some(e) = ctx.db.find(key, now, Access::Write) else {
        return out.integer(0);
    };
    let ttl = e.deadline().map_or(Ttl::Clear, Ttl::At);
    let value = e.remove();
    let dst = ctx.others.get_mut(i).expect("in range, not the selected one");
    dst.set(key, value, ttl, SetIf::Always, now);
    out.integer(1);
}

/// `MOVE`'s and `COPY`'s reply when source and destination are the same.
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";

/// `TIME`: the server's clock, `[unix seconds, microseconds]` (to the millisecond: the
/// handlers' clock).
pub fn time(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.array(2);
    out.bulk((ctx.now_ms / 1000).to_string().as_bytes());
    out.bulk(((ctx.now_ms % 1000) * 1000).to_string().as_bytes());
}

/// `QUIT`: `+OK`, then the connection closes once the reply is written. Arguments are
/// ignored, as in Redis.
pub fn quit(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    ctx.client.close_after_reply = true;
    out.ok();
}

/// `DBSIZE`: the number of keys (expired ones not reclaimed yet included, as in Redis).
pub fn dbsize(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.integer(i64::try_from(ctx.db.len()).unwrap_or(i64::MAX));
}

/// `FLUSHDB [ASYNC|SYNC]`: deletes every key of the selected database.
pub fn flushdb(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    flush(ctx, args, out, false);
}

/// `FLUSHALL [ASYNC|SYNC]`: deletes every key of every database.
pub fn flushall(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    flush(ctx, args, out, true);
}

/// `FLUSHDB` and `FLUSHALL` (`all`): one optional `ASYNC` or `SYNC` (both flush at once).
fn flush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, all: bool) {
    let mode_ok = match args.len() {
        1 => true,
        2 => {
            let mode = args.get(1);
            mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC")
        }
        _ => false,
    };
    if !mode_ok {
        return out.error(SYNTAX);
    }
    ctx.db.flush();
    if all {
        ctx.others.iter_mut().for_each(Db::flush);
    }
    out.ok();
}

/// One subcommand of a container command (`CLIENT`, `COMMAND`, `CONFIG`).
#[derive(Debug, Clone, Copy)]
pub struct Sub {
    /// Full lower-case name, `container|sub`.
    pub name: &'static str,
    /// Redis's arity, counting the container's name and the subcommand's.
    pub arity: i32,
    /// Redis's flags.
    pub flags: &'static [&'static str],
    /// ACL categories, with their `@`.
    pub acl: &'static [&'static str],
    /// Command tips (`nondeterministic_output`, ...).
    pub tips: &'static [&'static str],
    /// `COMMAND DOCS` group.
    pub group: &'static str,
    /// `COMMAND DOCS` summary.
    pub summary: &'static str,
    /// The Redis version that added it.
    pub since: &'static str,
    /// `COMMAND DOCS` complexity.
    pub complexity: &'static str,
    /// The handler (it sees the container's arguments: the subcommand is `args.get(1)`).
    pub handler: Handler,
}

impl Sub {
    /// The subcommand's own name, after the `|`.
    pub fn short_name(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, s)| s)
    }

    /// Whether `argc` arguments (container and subcommand included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let n = self.arity.unsigned_abs() as usize;
        if self.arity >= 0 { argc == n } else { argc >= n }
    }
}

const CONN_SUB: &[&str] = &["noscript", "loading", "stale"];
const ADMIN_SUB: &[&str] = &["admin", "noscript", "loading", "stale"];
const HELP_SUB: &[&str] = &["loading", "stale"];
const ACL_CONN: &[&str] = &["@slow", "@connection"];
const ACL_ADMIN: &[&str] = &["@admin", "@slow", "@dangerous"];
const ACL_ADMIN_CONN: &[&str] = &["@admin", "@slow", "@dangerous", "@connection"];

#[allow(clippy::too_many_arguments)]
pub(crate) const fn sub(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    acl: &'static [&'static str],
    tips: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
    complexity: &'static str,
    handler: Handler,
) -> Sub {
    Sub {
        name,
        arity,
        flags,
        acl,
        tips,
        group,
        summary,
        since,
        complexity,
        handler,
    }
}

/// `CLIENT`'s subcommands.
#[rustfmt::skip]
pub static CLIENT_SUBS: &[Sub] = &[
    sub("client|getname", 2, CONN_SUB, ACL_CONN, &[], "connection", "Get the current connection name", "2.6.9", "O(1)", client_getname),
    sub("client|help", 2, HELP_SUB, ACL_CONN, &[], "connection", "Show helpful text about the different subcommands", "5.0.0", "O(1)", client_help),
    sub("client|id", 2, CONN_SUB, ACL_CONN, &[], "connection", "Returns the client ID for the current connection", "5.0.0", "O(1)", client_id_cmd),
    sub("client|info", 2, CONN_SUB, ACL_CONN, &["nondeterministic_output"], "connection", "Returns information about the current client connection.", "6.2.0", "O(1)", client_info),
    sub("client|list", -2, ADMIN_SUB, ACL_ADMIN_CONN, &["nondeterministic_output"], "connection", "Get the list of client connections", "2.4.0", "O(N) where N is the number of client connections", client_list),
    sub("client|setname", 3, CONN_SUB, ACL_CONN, &[], "connection", "Set the current connection name", "2.6.9", "O(1)", client_setname),
];

/// `COMMAND`'s subcommands.
#[rustfmt::skip]
pub static COMMAND_SUBS: &[Sub] = &[
    sub("command|count", 2, HELP_SUB, ACL_CONN, &[], "server", "Get total number of Redis commands", "2.8.13", "O(1)", command_count),
    sub("command|docs", -2, HELP_SUB, ACL_CONN, &["nondeterministic_output_order"], "server", "Get array of specific Redis command documentation", "7.0.0", "O(N) where N is the number of commands to look up", command_docs),
    sub("command|getkeys", -4, HELP_SUB, ACL_CONN, &[], "server", "Extract keys given a full Redis command", "2.8.13", "O(N) where N is the number of arguments to the command", command_getkeys),
    sub("command|help", 2, HELP_SUB, ACL_CONN, &[], "server", "Show helpful text about the different subcommands", "5.0.0", "O(1)", command_help),
    sub("command|info", -2, HELP_SUB, ACL_CONN, &["nondeterministic_output_order"], "server", "Get array of specific Redis command details, or all when no argument is given.", "2.8.13", "O(N) where N is the number of commands to look up", command_info),
    sub("command|list", -2, HELP_SUB, ACL_CONN, &["nondeterministic_output_order"], "server", "Get an array of Redis command names", "7.0.0", "O(N) where N is the total number of Redis commands", command_list),
];

/// `CONFIG`'s subcommands.
#[rustfmt::skip]
pub static CONFIG_SUBS: &[Sub] = &[
    sub("config|get", -3, ADMIN_SUB, ACL_ADMIN, &[], "server", "Get the values of configuration parameters", "2.0.0", "O(N) when N is the number of configuration parameters provided", config_get),
    sub("config|help", 2, HELP_SUB, &["@slow"], &[], "server", "Show helpful text about the different subcommands", "5.0.0", "O(1)", config_help),
    sub("config|resetstat", 2, ADMIN_SUB, ACL_ADMIN, &[], "server", "Reset the stats returned by INFO", "2.0.0", "O(1)", config_resetstat),
    sub("config|rewrite", 2, ADMIN_SUB, ACL_ADMIN, &[], "server", "Rewrite the configuration file with the in memory configuration", "2.8.0", "O(1)", config_rewrite),
    sub("config|set", -4, ADMIN_SUB, ACL_ADMIN, &["request_policy:all_nodes", "response_policy:all_succeeded"], "server", "Set configuration parameters to the given values", "2.0.0", "O(N) when N is the number of configuration parameters provided", config_set),
];

/// The subcommands of the container command `name` (lower case); empty for other commands.
pub fn subcommands(name: &str) -> &'static [Sub] {
    match name {
        "client" => CLIENT_SUBS,
        "command" => COMMAND_SUBS,
        "config" => CONFIG_SUBS,
        "function" => super::introspect::FUNCTION_SUBS,
        "object" => super::introspect::OBJECT_SUBS,
        _ => &[],
    }
}

/// The subcommand `args.get(1)` of the container command `container` (lower case), or the
/// error Redis gives for it: `ERR unknown subcommand 'x'. Try CLIENT HELP.` or the
/// subcommand's arity error. `None` when `container` has no subcommands or none is given.
fn resolve(container: &str, args: &Args<'_>) -> Option<Result<&'static Sub, Vec<u8>>> {
    let subs = subcommands(container);
    if subs.is_empty() || args.len() < 2 {
        return None;
    }
    let name = args.get(1);
    Some(
        match subs
            .iter()
            .find(|s| s.short_name().as_bytes().eq_ignore_ascii_case(name))
        {
            None => Err(quoted(
                "ERR unknown subcommand '",
                super::clip_bytes(super::c_str(name), 128),
                &format!("'. Try {} HELP.", container.to_ascii_uppercase()),
            )),
            Some(s) if !s.arity_ok(args.len()) => Err(wrong_arity(s.name).into_bytes()),
            Some(s) => Ok(s),
        },
    )
}

/// For a container command (`CLIENT`, `COMMAND`, `CONFIG`): the error for an unknown
/// subcommand or a subcommand's wrong argument count, if any. Redis 7.0 gives these before
/// it checks authentication (so may [`execute`](super::execute)); the handlers check again.
pub fn subcommand_error(spec: &CommandSpec, args: &Args<'_>) -> Option<Vec<u8>> {
    resolve(spec.name, args)?.err()
}

/// Runs the subcommand `args.get(1)` of `container` (lower case).
pub(crate) fn dispatch(container: &str, ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match resolve(container, args) {
        Some(Ok(sub)) => (sub.handler)(ctx, args, out),
        Some(Err(e)) => out.error(&e),
        // Unreachable: containers have subcommands, and their arity requires one.
        None => out.error(wrong_arity(container)),
    }
}

/// A `HELP` reply: Redis's header line, the lines, and the `HELP` entry, as status replies.
pub(crate) fn help(out: &mut ReplyBuf, container: &str, lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for line in lines {
        out.simple(line);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}

/// The client's id as a RESP integer.
fn client_id(ctx: &Ctx<'_>) -> i64 {
    i64::try_from(ctx.client.id).unwrap_or(i64::MAX)
}

/// Sets (or, for an empty name, clears) the client's name; Redis's rule: bytes `!` to `~`.
fn set_client_name(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() {
        ctx.client.name = None;
        return Ok(());
    }
    if !name.iter().all(|b| (b'!'..=b'~').contains(b)) {
        return Err(BAD_CLIENT_NAME);
    }
    ctx.client.name = Some(name.to_vec());
    Ok(())
}

/// `CLIENT subcommand ...`: see [`CLIENT_SUBS`].
pub fn client(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("client", ctx, args, out);
}

/// `CLIENT ID`.
fn client_id_cmd(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.integer(client_id(ctx));
}

/// `CLIENT GETNAME`: the name, or null.
fn client_getname(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    match &ctx.client.name {
        Some(name) => out.bulk(name),
        None => out.null(),
    }
}

/// `CLIENT SETNAME name`.
fn client_setname(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match set_client_name(ctx, args.get(2)) {
        Ok(()) => out.ok(),
        Err(e) => out.error(e),
    }
}

/// `CLIENT INFO`: the caller's `CLIENT LIST` line.
fn client_info(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    let mut line = String::new();
    client_line(ctx, "client|info", &mut line);
    out.verbatim("txt", line.as_bytes());
}

/// `CLIENT LIST [TYPE type | ID id ...]`: the caller's line, when it passes the filter.
fn client_list(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let listed = if args.len() == 2 {
        true
    } else if args.len() == 4 && args.get(2).eq_ignore_ascii_case(b"TYPE") {
        let kind = args.get(3).to_ascii_lowercase();
        match kind.as_slice() {
            b"normal" => true,
            b"master" | b"replica" | b"slave" | b"pubsub" => false,
            _ => {
                return out.error(quoted("ERR Unknown client type '", args.get(3), "'"));
            }
        }
    } else if args.len() > 3 && args.get(2).eq_ignore_ascii_case(b"ID") {
        let mut found = false;
        for id in args.iter_from(3) {
            match parse_i64(id) {
                None => return out.error("ERR Invalid client ID"),
                Some(id) => found |= id == client_id(ctx),
            }
        }
        found
    } else {
        return out.error(SYNTAX);
    };
    let mut text = String::new();
    if listed {
        client_line(ctx, "client|list", &mut text);
    }
    out.verbatim("txt", text.as_bytes());
}

/// One `CLIENT LIST` line for the caller (ending in `\n`), `cmd` being the command running.
fn client_line(ctx: &Ctx<'_>, cmd: &str, s: &mut String) {
    let c = &*ctx.client;
    let name = c.name.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let age = ctx.now_ms.saturating_sub(c.created_ms) / 1000;
    let resp = match c.proto {
        Proto::Resp2 => 2,
        Proto::Resp3 => 3,
    };
    let db = c.db;
    let (flags, multi) = match &c.multi {
        Some(m) => ("x", m.len() as i64),
        None => ("N", -1),
    };
    let _ = writeln!(
        s,
        "id={} addr={} laddr={} name={name} age={age} idle=0 flags={flags} db={db} sub=0 psub=0 ssub=0 \
         multi={multi} cmd={cmd} user=default redir=-1 resp={resp}",
        c.id, c.addr, c.local_addr
    );
}

/// `CLIENT HELP`.
fn client_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "CLIENT",
        &[
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "    * ID <id> [<id> ...]",
            "      Return clients with the given ids.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
        ],
    );
}

/// `COMMAND [subcommand ...]`: with no subcommand, `COMMAND INFO` of every command.
pub fn command(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() == 1 {
        return all_command_info(out);
    }
    dispatch("command", ctx, args, out);
}

/// `COMMAND COUNT`: top-level commands (subcommands are not counted, as in Redis).
fn command_count(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.integer(table::COMMANDS.len() as i64);
}

/// A command or subcommand, as `COMMAND INFO` and `COMMAND DOCS` name them.
#[derive(Clone, Copy)]
enum Found {
    Command(&'static CommandSpec),
    Sub(&'static Sub),
}

/// The command `name` (any case), or the subcommand `container|sub`.
fn find_command(name: &[u8]) -> Option<Found> {
    match name.iter().position(|&b| b == b'|') {
        None => table::lookup(name).map(Found::Command),
        Some(bar) => {
            let container = table::lookup(&name[..bar])?;
            let sub = &name[bar + 1..];
            subcommands(container.name)
                .iter()
                .find(|s| s.short_name().as_bytes().eq_ignore_ascii_case(sub))
                .map(Found::Sub)
        }
    }
}

/// `COMMAND INFO [name ...]`: each command's description (null for an unknown name); every
/// command's when no name is given.
fn command_info(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() == 2 {
        return all_command_info(out);
    }
    out.array(args.len() - 2);
    for name in args.iter_from(2) {
        match find_command(name) {
            Some(Found::Command(spec)) => command_info_entry(out, spec),
            Some(Found::Sub(sub)) => sub_info_entry(out, sub),
            None => out.null(),
        }
    }
}

fn all_command_info(out: &mut ReplyBuf) {
    out.array(table::COMMANDS.len());
    for spec in table::COMMANDS {
        command_info_entry(out, spec);
    }
}

/// Redis 7's command description: `[name, arity, flags, first, last, step, acl categories,
/// tips, key specs, subcommands]`; flags, categories, tips and key specs are sets in RESP3.
fn command_info_entry(out: &mut ReplyBuf, spec: &CommandSpec) {
    out.array(10);
    out.bulk(spec.name.as_bytes());
    out.integer(i64::from(spec.arity));
    out.set(spec.flags.len());
    for flag in spec.flags {
        out.simple(flag);
    }
    let (first, last, step) = spec.keys;
    out.integer(i64::from(first));
    out.integer(i64::from(last));
    out.integer(i64::from(step));
    let acl = acl_categories(spec);
    out.set(acl.len());
    for cat in &acl {
        out.simple(cat);
    }
    out.set(0);
    if first > 0 {
        out.set(1);
        key_spec(out, spec);
    } else {
        out.set(0);
    }
    let subs = subcommands(spec.name);
    if subs.is_empty() {
        out.set(0);
    } else {
        out.array(subs.len());
        for sub in subs {
            sub_info_entry(out, sub);
        }
    }
}

/// A subcommand's description (no keys, no subcommands of its own).
fn sub_info_entry(out: &mut ReplyBuf, sub: &Sub) {
    out.array(10);
    out.bulk(sub.name.as_bytes());
    out.integer(i64::from(sub.arity));
    out.set(sub.flags.len());
    for flag in sub.flags {
        out.simple(flag);
    }
    out.integer(0);
    out.integer(0);
    out.integer(0);
    out.set(sub.acl.len());
    for cat in sub.acl {
        out.simple(cat);
    }
    out.set(sub.tips.len());
    for tip in sub.tips {
        out.bulk(tip.as_bytes());
    }
    out.set(0);
    out.set(0);
}

/// One range key spec from the legacy `(first, last, step)` positions: `begin_search` at
/// `first`, `find_keys` up to `last` (relative to `first`; negative counts from the end).
fn key_spec(out: &mut ReplyBuf, spec: &CommandSpec) {
    let (first, last, step) = spec.keys;
    let lastkey = if last < 0 { last } else { last - first };
    out.map(3);
    out.bulk(b"flags");
    if spec.has("write") {
        out.set(1);
        out.simple("RW");
    } else {
        out.set(2);
        out.simple("RO");
        out.simple("access");
    }
    out.bulk(b"begin_search");
    out.map(2);
    out.bulk(b"type");
    out.bulk(b"index");
    out.bulk(b"spec");
    out.map(1);
    out.bulk(b"index");
    out.integer(i64::from(first));
    out.bulk(b"find_keys");
    out.map(2);
    out.bulk(b"type");
    out.bulk(b"range");
    out.bulk(b"spec");
    out.map(3);
    out.bulk(b"lastkey");
    out.integer(i64::from(lastkey));
    out.bulk(b"keystep");
    out.integer(i64::from(step));
    out.bulk(b"limit");
    out.integer(0);
}

/// ACL categories of a top-level command, from its flags and group (see the module doc).
fn acl_categories(spec: &CommandSpec) -> Vec<&'static str> {
    let mut cats = Vec::with_capacity(6);
    if spec.has("write") {
        cats.push("@write");
    } else if spec.has("readonly") {
        cats.push("@read");
    }
    match spec.group {
        "string" => cats.push("@string"),
        "list" => cats.push("@list"),
        "hash" => cats.push("@hash"),
        "set" => cats.push("@set"),
        "sorted-set" => cats.push("@sortedset"),
        "bitmap" => cats.push("@bitmap"),
        "generic" => cats.push("@keyspace"),
        "server" if spec.has("write") || spec.has("readonly") => cats.push("@keyspace"),
        _ => {}
    }
    if spec.has("admin") {
        cats.push("@admin");
    }
    cats.push(if spec.has("fast") { "@fast" } else { "@slow" });
    if spec.has("admin") || matches!(spec.name, "flushall" | "flushdb" | "keys" | "info") {
        cats.push("@dangerous");
    }
    match spec.group {
        "connection" => cats.push("@connection"),
        "transactions" => cats.push("@transaction"),
        _ => {}
    }
    cats
}

/// `COMMAND DOCS` fields the table does not hold: (name, since, complexity), by name.
#[rustfmt::skip]
static DOCS: &[(&str, &str, &str)] = &[
    ("append", "2.0.0", "O(1)"),
    ("auth", "1.0.0", "O(1)"),
    ("client", "2.4.0", "Depends on subcommand."),
    ("command", "2.8.13", "O(N) where N is the total number of Redis commands"),
    ("config", "2.0.0", "Depends on subcommand."),
    ("copy", "6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values."),
    ("dbsize", "1.0.0", "O(1)"),
    ("debug", "1.0.0", "Depends on subcommand."),
    ("decr", "1.0.0", "O(1)"),
    ("decrby", "1.0.0", "O(1)"),
    ("del", "1.0.0", "O(N) where N is the number of keys that will be removed"),
    ("discard", "2.0.0", "O(N), when N is the number of queued commands"),
    ("echo", "1.0.0", "O(1)"),
    ("exec", "1.2.0", "Depends on commands in the transaction"),
    ("exists", "1.0.0", "O(N) where N is the number of keys to check."),
    ("expire", "1.0.0", "O(1)"),
    ("expireat", "2.2.0", "O(1)"),
    ("expiretime", "7.0.0", "O(1)"),
    ("flushall", "1.0.0", "O(N) where N is the total number of keys in all databases"),
    ("flushdb", "1.0.0", "O(N) where N is the number of keys in the selected database"),
    ("function", "7.0.0", "Depends on subcommand."),
    ("get", "1.0.0", "O(1)"),
    ("getbit", "2.2.0", "O(1)"),
    ("getdel", "6.2.0", "O(1)"),
    ("getex", "6.2.0", "O(1)"),
    ("getrange", "2.4.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings."),
    ("getset", "1.0.0", "O(1)"),
    ("hdel", "2.0.0", "O(N) where N is the number of fields to be removed."),
    ("hello", "6.0.0", "O(1)"),
    ("hexists", "2.0.0", "O(1)"),
    ("hget", "2.0.0", "O(1)"),
    ("hgetall", "2.0.0", "O(N) where N is the size of the hash."),
    ("hincrby", "2.0.0", "O(1)"),
    ("hincrbyfloat", "2.6.0", "O(1)"),
    ("hkeys", "2.0.0", "O(N) where N is the size of the hash."),
    ("hlen", "2.0.0", "O(1)"),
    ("hmget", "2.0.0", "O(N) where N is the number of fields being requested."),
    ("hmset", "2.0.0", "O(N) where N is the number of fields being set."),
    ("hrandfield", "6.2.0", "O(N) where N is the number of fields returned"),
    ("hscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.."),
    ("hset", "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs."),
    ("hsetnx", "2.0.0", "O(1)"),
    ("hstrlen", "3.2.0", "O(1)"),
    ("hvals", "2.0.0", "O(N) where N is the size of the hash."),
    ("incr", "1.0.0", "O(1)"),
    ("incrby", "1.0.0", "O(1)"),
    ("incrbyfloat", "2.6.0", "O(1)"),
    ("info", "1.0.0", "O(1)"),
    ("keys", "1.0.0", "O(N) with N being the number of keys in the database"),
    ("lcs", "7.0.0", "O(N*M) where N and M are the lengths of s1 and s2, respectively"),
    ("lindex", "1.0.0", "O(N) where N is the number of elements to traverse to get to the element at index"),
    ("linsert", "2.2.0", "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N)."),
    ("llen", "1.0.0", "O(1)"),
    ("lmove", "6.2.0", "O(1)"),
    ("lmpop", "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned."),
    ("lpop", "1.0.0", "O(N) where N is the number of elements returned"),
    ("lpos", "6.0.6", "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time."),
    ("lpush", "1.0.0", "O(1) for each element added"),
    ("lpushx", "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("lrange", "1.0.0", "O(S+N) where S is the distance of start offset from HEAD and N is the number of elements in the specified range"),
    ("lrem", "1.0.0", "O(N+M) where N is the length of the list and M is the number of elements removed."),
    ("lset", "1.0.0", "O(N) where N is the length of the list"),
    ("ltrim", "1.0.0", "O(N) where N is the number of elements to be removed by the operation"),
    ("mget", "1.0.0", "O(N) where N is the number of keys to retrieve."),
    ("move", "1.0.0", "O(1)"),
    ("mset", "1.0.1", "O(N) where N is the number of keys to set."),
    ("msetnx", "1.0.1", "O(N) where N is the number of keys to set."),
    ("multi", "1.2.0", "O(1)"),
    ("object", "2.2.3", "Depends on subcommand."),
    ("persist", "2.2.0", "O(1)"),
    ("pexpire", "2.6.0", "O(1)"),
    ("pexpireat", "2.6.0", "O(1)"),
    ("pexpiretime", "7.0.0", "O(1)"),
    ("ping", "1.0.0", "O(1)"),
    ("psetex", "2.6.0", "O(1)"),
    ("pttl", "2.6.0", "O(1)"),
    ("quit", "1.0.0", "O(1)"),
    ("randomkey", "1.0.0", "O(1)"),
    ("rename", "1.0.0", "O(1)"),
    ("renamenx", "1.0.0", "O(1)"),
    ("rpop", "1.0.0", "O(N) where N is the number of elements returned"),
    ("rpoplpush", "1.2.0", "O(1)"),
    ("rpush", "1.0.0", "O(1) for each element added"),
    ("rpushx", "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("sadd", "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("scan", "2.8.0", "O(1) for every call. O(N) for a complete iteration"),
    ("scard", "1.0.0", "O(1)"),
    ("sdiff", "1.0.0", "O(N) where N is the total number of elements in all given sets."),
    ("sdiffstore", "1.0.0", "O(N) where N is the total number of elements in all given sets."),
    ("select", "1.0.0", "O(1)"),
    ("set", "1.0.0", "O(1)"),
    ("setbit", "2.2.0", "O(1)"),
    ("setex", "2.0.0", "O(1)"),
    ("setnx", "1.0.0", "O(1)"),
    ("setrange", "2.2.0", "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument."),
    ("sinter", "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."),
    ("sintercard", "7.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."),
    ("sinterstore", "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."),
    ("sismember", "1.0.0", "O(1)"),
    ("smembers", "1.0.0", "O(N) where N is the set cardinality."),
    ("smismember", "6.2.0", "O(N) where N is the number of elements being checked for membership"),
    ("smove", "1.0.0", "O(1)"),
    ("sort", "1.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."),
    ("sort_ro", "7.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."),
    ("spop", "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count."),
    ("srandmember", "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count."),
    ("srem", "1.0.0", "O(N) where N is the number of members to be removed."),
    ("sscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.."),
    ("strlen", "2.2.0", "O(1)"),
    ("substr", "1.0.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings."),
    ("sunion", "1.0.0", "O(N) where N is the total number of elements in all given sets."),
    ("sunionstore", "1.0.0", "O(N) where N is the total number of elements in all given sets."),
    ("swapdb", "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases."),
    ("time", "2.6.0", "O(1)"),
    ("touch", "3.2.1", "O(N) where N is the number of keys that will be touched."),
    ("ttl", "1.0.0", "O(1)"),
    ("type", "1.0.0", "O(1)"),
    ("unlink", "4.0.0", "O(1) for each key removed regardless of its size"),
    ("unwatch", "2.2.0", "O(1)"),
    ("watch", "2.2.0", "O(1) for every key."),
    ("zadd", "1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set."),
    ("zcard", "1.2.0", "O(1)"),
    ("zcount", "2.0.0", "O(log(N)) with N being the number of elements in the sorted set."),
    ("zdiff", "6.2.0", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set."),
    ("zdiffstore", "6.2.0", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set."),
    ("zincrby", "1.2.0", "O(log(N)) where N is the number of elements in the sorted set."),
    ("zinter", "6.2.0", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set."),
    ("zintercard", "7.0.0", "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets."),
    ("zinterstore", "2.0.0", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set."),
    ("zlexcount", "2.8.9", "O(log(N)) with N being the number of elements in the sorted set."),
    ("zmscore", "6.2.0", "O(N) where N is the number of members being requested."),
    ("zpopmax", "5.0.0", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped."),
    ("zpopmin", "5.0.0", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped."),
    ("zrandmember", "6.2.0", "O(N) where N is the number of elements returned"),
    ("zrange", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned."),
    ("zrangebylex", "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N))."),
    ("zrangebyscore", "1.0.5", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N))."),
    ("zrangestore", "6.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key."),
    ("zrank", "2.0.0", "O(log(N))"),
    ("zrem", "1.2.0", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed."),
    ("zremrangebylex", "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation."),
    ("zremrangebyrank", "2.0.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation."),
    ("zremrangebyscore", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation."),
    ("zrevrange", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned."),
    ("zrevrangebylex", "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N))."),
    ("zrevrangebyscore", "2.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N))."),
    ("zrevrank", "2.0.0", "O(log(N))"),
    ("zscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.."),
    ("zscore", "1.2.0", "O(1)"),
    ("zunion", "6.2.0", "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set."),
    ("zunionstore", "2.0.0", "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set."),
];

/// `(since, complexity)` of the top-level command `name`.
fn docs_of(name: &str) -> (&'static str, &'static str) {
    DOCS.binary_search_by(|d| d.0.cmp(name))
        .map_or(("1.0.0", ""), |i| (DOCS[i].1, DOCS[i].2))
}

/// `COMMAND DOCS [name ...]`: a map from each known name to its documentation (unknown names
/// are left out); every command's when no name is given.
fn command_docs(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() == 2 {
        out.map(table::COMMANDS.len());
        for spec in table::COMMANDS {
            command_docs_entry(out, spec);
        }
        return;
    }
    let found: Vec<Found> = args.iter_from(2).filter_map(find_command).collect();
    out.map(found.len());
    for f in found {
        match f {
            Found::Command(spec) => command_docs_entry(out, spec),
            Found::Sub(sub) => sub_docs_entry(out, sub),
        }
    }
}

/// `name` then its docs map: summary, since, group, complexity, arguments (empty), and the
/// subcommands' docs for a container.
fn command_docs_entry(out: &mut ReplyBuf, spec: &CommandSpec) {
    let (since, complexity) = docs_of(spec.name);
    let subs = subcommands(spec.name);
    out.bulk(spec.name.as_bytes());
    out.map(if subs.is_empty() { 5 } else { 6 });
    docs_fields(out, spec.summary, since, spec.group, complexity);
    if !subs.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for sub in subs {
            sub_docs_entry(out, sub);
        }
    }
}

fn sub_docs_entry(out: &mut ReplyBuf, sub: &Sub) {
    out.bulk(sub.name.as_bytes());
    out.map(5);
    docs_fields(out, sub.summary, sub.since, sub.group, sub.complexity);
}

fn docs_fields(out: &mut ReplyBuf, summary: &str, since: &str, group: &str, complexity: &str) {
    for (key, value) in [
        ("summary", summary),
        ("since", since),
        ("group", group),
        ("complexity", complexity),
    ] {
        out.bulk(key.as_bytes());
        out.bulk(value.as_bytes());
    }
    out.bulk(b"arguments");
    out.array(0);
}

/// `COMMAND GETKEYS command arg ...`: the keys of a command, from its key positions.
fn command_getkeys(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(spec) = table::lookup(args.get(2)) else {
        return out.error("ERR Invalid command specified");
    };
    let (first, last, step) = spec.keys;
    if first <= 0 {
        return out.error("ERR The command has no key arguments");
    }
    let argc = args.len() - 2;
    if !spec.arity_ok(argc) {
        return out.error("ERR Invalid number of arguments specified for command");
    }
    // Positions within the command (0 is its name); `last` < 0 counts from the end.
    let (first, step) = (first as usize, step.max(1) as usize);
    let last = if last < 0 {
        argc.saturating_sub(last.unsigned_abs() as usize)
    } else {
        (last as usize).min(argc - 1)
    };
    let positions: Vec<usize> = (first..=last).step_by(step).collect();
    out.array(positions.len());
    for p in positions {
        out.bulk(args.get(p + 2));
    }
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`: names of the
/// commands and subcommands (`client|id`).
fn command_list(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    enum Filter {
        All,
        None,
        Category(Vec<u8>),
        Pattern(Vec<u8>),
    }
    let filter = match args.len() {
        2 => Filter::All,
        5 if args.get(2).eq_ignore_ascii_case(b"FILTERBY") => {
            let kind = args.get(3);
            let mut arg = args.get(4).to_ascii_lowercase();
            if kind.eq_ignore_ascii_case(b"MODULE") {
                Filter::None
            } else if kind.eq_ignore_ascii_case(b"ACLCAT") {
                arg.insert(0, b'@');
                Filter::Category(arg)
            } else if kind.eq_ignore_ascii_case(b"PATTERN") {
                Filter::Pattern(arg)
            } else {
                return out.error(SYNTAX);
            }
        }
        _ => return out.error(SYNTAX),
    };
    let mut names = Vec::new();
    for spec in table::COMMANDS {
        let cats = acl_categories(spec);
        names.push((spec.name, cats));
        for sub in subcommands(spec.name) {
            names.push((sub.name, sub.acl.to_vec()));
        }
    }
    names.retain(|(name, cats)| match &filter {
        Filter::All => true,
        Filter::None => false,
        Filter::Category(cat) => cats.iter().any(|c| c.as_bytes() == cat.as_slice()),
        Filter::Pattern(p) => glob_match(p, name.as_bytes()),
    });
    out.array(names.len());
    for (name, _) in names {
        out.bulk(name.as_bytes());
    }
}

/// `COMMAND HELP`.
fn command_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
        ],
    );
}

/// The parameters `CONFIG GET` knows, in the order `CONFIG GET *` lists them.
pub const CONFIG_PARAMS: &[&str] = &[
    "appendonly",
    "bind",
    "client-query-buffer-limit",
    "databases",
    "hz",
    "maxclients",
    "maxmemory",
    "maxmemory-policy",
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
        "appendonly" => "no".into(),
        "bind" => config.bind.ip().to_string(),
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
        "port" => ctx.server.port.to_string(),
        "proto-max-bulk-len" => config.proto_max_bulk_len.to_string(),
        "requirepass" => config.password.clone().unwrap_or_default(),
        "save" => String::new(),
        "timeout" => "0".into(),
        "tls-port" => config.tls.as_ref().map_or(0, |t| t.port).to_string(),
        _ => String::new(),
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
    dispatch("config", ctx, args, out);
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
    let mut values = ctx.server.inert.lock().unwrap_or_else(PoisonError::into_inner);
    for (param, _, value) in pairs {
        match param {
            Param::Inert(i) => values[i] = String::from_utf8_lossy(value).to_ascii_lowercase(),
            Param::Fixed("maxmemory") => {
                let bytes = parse_memory(value).expect("checked above");
                ctx.server
                    .maxmemory
                    .store(bytes, std::sync::atomic::Ordering::Relaxed);
            }
            Param::Fixed(_) => {}
        }
    }
    out.ok();
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

/// `CONFIG RESETSTAT`: zeroes the server-wide counters of `INFO stats`.
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

/// `INFO` sections, in the order Redis writes them.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cluster",
    "keyspace",
];

/// `INFO [section ...]`: the chosen sections (all of them for none, `default`, `all` or
/// `everything`; nothing for an unknown one) as text, `\r\n` line ends, a blank line between
/// sections; a verbatim `txt` string in RESP3.
pub fn info(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut wanted = [args.len() == 1; SECTIONS.len()];
    for arg in args.iter_from(1) {
        let arg = arg.to_ascii_lowercase();
        if matches!(arg.as_slice(), b"default" | b"all" | b"everything") {
            wanted = [true; SECTIONS.len()];
        } else if let Some(i) = SECTIONS.iter().position(|s| s.as_bytes() == arg.as_slice()) {
            wanted[i] = true;
        }
    }
    let mut text = String::new();
    for (section, _) in SECTIONS.iter().zip(wanted).filter(|(_, w)| *w) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        info_section(ctx, section, &mut text);
    }
    out.verbatim("txt", text.as_bytes());
}

/// Appends `key:value\r\n`.
macro_rules! field {
    ($s:expr, $key:expr, $value:expr) => {{
        let _ = write!($s, "{}:{}\r\n", $key, $value);
    }};
}

/// Appends one `INFO` section, header included.
fn info_section(ctx: &Ctx<'_>, section: &str, s: &mut String) {
    let server = ctx.server;
    let config = &server.config;
    let stat = Stats::get;
    match section {
        "server" => {
            s.push_str("# Server\r\n");
            let uptime = server.started.elapsed().as_secs();
            field!(s, "redis_version", REDIS_VERSION);
            field!(s, "redis_git_sha1", "00000000");
            field!(s, "redis_git_dirty", 0);
            field!(s, "redis_build_id", 0);
            field!(s, "redis_mode", "standalone");
            field!(s, "os", os_name());
            field!(s, "arch_bits", usize::BITS);
            field!(s, "multiplexing_api", "epoll");
            field!(s, "process_id", std::process::id());
            field!(s, "process_supervised", "no");
            field!(s, "run_id", server.run_id);
            field!(s, "tcp_port", server.port);
            field!(s, "server_time_usec", ctx.now_ms.saturating_mul(1000));
            field!(s, "uptime_in_seconds", uptime);
            field!(s, "uptime_in_days", uptime / 86_400);
            field!(s, "hz", config.hz);
            field!(s, "configured_hz", config.hz);
            field!(s, "config_file", "");
            field!(s, "io_threads_active", 0);
            field!(s, "ferry_version", env!("CARGO_PKG_VERSION"));
            field!(s, "ferry_send_mode", config.mode);
            field!(s, "ferry_threads", config.threads);
            field!(s, "ferry_zero_copy_threshold", config.zero_copy_threshold);
            field!(s, "ferry_keep_in_place_min", config.keep_in_place_min);
        }
        "clients" => {
            s.push_str("# Clients\r\n");
            field!(s, "connected_clients", stat(&server.stats.connected_clients));
            field!(s, "cluster_connections", 0);
            field!(s, "maxclients", config.max_clients);
            field!(s, "blocked_clients", 0);
            field!(s, "tracking_clients", 0);
        }
        "memory" => {
            s.push_str("# Memory\r\n");
            let used = ctx.used_memory() as u64;
            let maxmemory = server.maxmemory.load(std::sync::atomic::Ordering::Relaxed) as u64;
            field!(s, "used_memory", used);
            field!(s, "used_memory_human", human_bytes(used));
            field!(s, "maxmemory", maxmemory);
            field!(s, "maxmemory_human", human_bytes(maxmemory));
            field!(s, "maxmemory_policy", "noeviction");
            let pool = ctx.db.pool().stats();
            field!(s, "ferry_pool_mapped_bytes", pool.mapped_bytes);
            field!(s, "ferry_pool_regions", pool.regions);
            field!(s, "ferry_pool_buffers_outstanding", pool.buffers_outstanding());
            field!(s, "ferry_pool_bytes_outstanding", pool.bytes_outstanding());
            field!(s, "ferry_pool_mlock_failures", pool.mlock_failures);
        }
        "persistence" => {
            s.push_str("# Persistence\r\n");
            field!(s, "loading", 0);
            field!(s, "async_loading", 0);
            field!(s, "rdb_bgsave_in_progress", 0);
            field!(s, "rdb_last_bgsave_status", "ok");
            field!(s, "aof_enabled", 0);
            field!(s, "aof_rewrite_in_progress", 0);
            field!(s, "aof_last_bgrewrite_status", "ok");
            field!(s, "aof_last_write_status", "ok");
        }
        "stats" => {
            s.push_str("# Stats\r\n");
            let st = &server.stats;
            let db = std::iter::once(ctx.db.stats())
                .chain(ctx.others.iter().map(|(_, d)| d.stats()))
                .fold(DbStats::default(), |a, b| DbStats {
                    keyspace_hits: a.keyspace_hits + b.keyspace_hits,
                    keyspace_misses: a.keyspace_misses + b.keyspace_misses,
                    expired_keys: a.expired_keys + b.expired_keys,
                });
            field!(
                s,
                "total_connections_received",
                stat(&st.total_connections_received)
            );
            field!(s, "total_commands_processed", stat(&st.total_commands_processed));
            field!(s, "total_net_input_bytes", stat(&st.total_net_input_bytes));
            field!(s, "total_net_output_bytes", stat(&st.total_net_output_bytes));
            field!(s, "rejected_connections", stat(&st.rejected_connections));
            field!(s, "expired_keys", db.expired_keys);
            field!(s, "evicted_keys", 0);
            field!(s, "keyspace_hits", db.keyspace_hits);
            field!(s, "keyspace_misses", db.keyspace_misses);
            field!(s, "reply_bytes_copied", stat(&st.reply_bytes_copied));
            field!(s, "reply_bytes_referenced", stat(&st.reply_bytes_referenced));
            field!(s, "clients_dropped", stat(&st.clients_dropped));
        }
        "replication" => {
            s.push_str("# Replication\r\n");
            field!(s, "role", "master");
            field!(s, "connected_slaves", 0);
            field!(s, "master_failover_state", "no-failover");
            field!(s, "master_repl_offset", 0);
            field!(s, "repl_backlog_active", 0);
        }
        "cluster" => {
            s.push_str("# Cluster\r\n");
            field!(s, "cluster_enabled", 0);
        }
        "keyspace" => {
            s.push_str("# Keyspace\r\n");
            let mut dbs: Vec<(usize, &Db)> = ctx.others.iter().collect();
            dbs.push((ctx.client.db, &*ctx.db));
            dbs.sort_by_key(|&(i, _)| i);
            for (i, db) in dbs.into_iter().filter(|(_, db)| !db.is_empty()) {
                let (keys, expires) = (db.len(), db.expires());
                let _ = write!(s, "db{i}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
        _ => {}
    }
}

/// `os:` as Redis writes it, without the kernel release: `Linux x86_64`.
fn os_name() -> String {
    let os = std::env::consts::OS;
    let mut name = String::with_capacity(os.len() + 1 + std::env::consts::ARCH.len());
    let mut chars = os.chars();
    if let Some(c) = chars.next() {
        name.extend(c.to_uppercase());
    }
    name.push_str(chars.as_str());
    name.push(' ');
    name.push_str(std::env::consts::ARCH);
    name
}

/// Redis's `bytesToHuman`: `999B`, `1.50K`, `64.00M`, `1.00G`, ...
fn human_bytes(n: u64) -> String {
    const UNITS: [(char, u32); 5] = [('K', 1), ('M', 2), ('G', 3), ('T', 4), ('P', 5)];
    for (unit, power) in UNITS {
        let next = 1u64 << (10 * (power + 1));
        if n < next {
            let d = n as f64 / (1u64 << (10 * power)) as f64;
            return if n < 1024 {
                format!("{n}B")
            } else {
                format!("{d:.2}{unit}")
            };
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::cmd::harness::{Harness, OK, bulk, err};
    use crate::cmd::introspect::{FUNCTION_SUBS, OBJECT_SUBS};
    use crate::cmd::{Client, ServerInfo};
    use crate::config::Config;
    use crate::db::Db;

    fn harness() -> Harness {
        with_password(None)
    }

    /// A keyspace, client 7 and a server (with `password`), replies all copied.
    fn with_password(password: Option<&str>) -> Harness {
        let config = Config {
            password: password.map(str::to_owned),
            ..Config::default()
        };
        Harness {
            db: Db::new(ferry_testkit::pool(), 4096),
            client: Client::new(
                7,
                "127.0.0.1:50000".parse::<SocketAddr>().unwrap(),
                "127.0.0.1:6379".parse::<SocketAddr>().unwrap(),
                1_700_000_000_000,
                password.is_none(),
            ),
            others: (1..16).map(|_| Db::new(ferry_testkit::pool(), 4096)).collect(),
            server: ServerInfo::new(config, 6379, "ab".repeat(20)),
            now_ms: 1_700_000_005_000,
            zero_copy: usize::MAX,
        }
    }

    /// The HELLO map, as Redis 7.0.15 writes it for client 7.
    fn hello_reply(proto: u8) -> String {
        let head = if proto == 3 { "%7" } else { "*14" };
        format!(
            "{head}\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n\
             $5\r\nproto\r\n:{proto}\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n\
             $4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
        )
    }

    #[test]
    fn ping_and_echo() {
        let mut h = harness();
        assert_eq!(h.cmd("PING"), "+PONG\r\n");
        assert_eq!(h.cmd("ping hi"), bulk("hi"));
        assert_eq!(
            h.cmd("PING a b"),
            err("ERR wrong number of arguments for 'ping' command")
        );
        assert_eq!(h.cmd("ECHO hello"), bulk("hello"));
        assert_eq!(h.run(&[b"ECHO", b""]), b"$0\r\n\r\n");
        assert_eq!(
            h.cmd("ECHO"),
            err("ERR wrong number of arguments for 'echo' command")
        );
    }

    #[test]
    fn hello_switches_protocol_and_replies_in_the_new_one() {
        let mut h = harness();
        assert_eq!(h.cmd("HELLO"), hello_reply(2));
        assert_eq!(h.cmd("HELLO 3"), hello_reply(3));
        assert_eq!(h.client.proto, Proto::Resp3);
        // Later replies are RESP3 too (the null of GETNAME).
        assert_eq!(h.cmd("CLIENT GETNAME"), "_\r\n");
        assert_eq!(h.cmd("HELLO"), hello_reply(3));
        assert_eq!(h.cmd("hello 2"), hello_reply(2));
        assert_eq!(h.client.proto, Proto::Resp2);
        assert_eq!(h.cmd("CLIENT GETNAME"), "$-1\r\n");
    }

    #[test]
    fn hello_errors_change_nothing() {
        let mut h = harness();
        let not_int = err("ERR Protocol version is not an integer or out of range");
        for v in ["x", "03", "+3", "3.0", "99999999999999999999"] {
            assert_eq!(h.cmd(&format!("HELLO {v}")), not_int, "HELLO {v}");
        }
        for v in ["1", "4", "-1", "0"] {
            assert_eq!(h.cmd(&format!("HELLO {v}")), err(NOPROTO), "HELLO {v}");
        }
        // The version is checked before the options.
        assert_eq!(h.cmd("HELLO 4 FOO"), err(NOPROTO));
        assert_eq!(
            h.cmd("HELLO 3 FOO"),
            err("ERR Syntax error in HELLO option 'FOO'")
        );
        assert_eq!(
            h.cmd("HELLO 3 AUTH default"),
            err("ERR Syntax error in HELLO option 'AUTH'")
        );
        assert_eq!(
            h.cmd("HELLO 3 SETNAME"),
            err("ERR Syntax error in HELLO option 'SETNAME'")
        );
        assert_eq!(h.cmd("HELLO 3 AUTH bob x"), err(WRONGPASS));
        // A bad name fails before the protocol switches.
        assert_eq!(
            h.run(&[b"HELLO", b"3", b"SETNAME", b"a b"]),
            err(BAD_CLIENT_NAME).as_bytes()
        );
        assert_eq!(h.client.proto, Proto::Resp2);
        assert_eq!(h.client.name, None);
    }

    #[test]
    fn errors_quote_arguments_as_sent() {
        let mut h = harness();
        assert_eq!(
            h.run(&[b"HELLO", b"3", b"\xff"]),
            b"-ERR Syntax error in HELLO option '\xff'\r\n"
        );
        assert_eq!(
            h.run(&[b"CONFIG", b"SET", b"\xfe", b"1"]),
            b"-ERR Unknown option or number of arguments for CONFIG SET - '\xfe'\r\n"
        );
        assert_eq!(
            h.run(&[b"CLIENT", b"LIST", b"TYPE", b"\xfd"]),
            b"-ERR Unknown client type '\xfd'\r\n"
        );
    }

    #[test]
    fn hello_setname_and_nopass_auth() {
        let mut h = harness();
        assert_eq!(h.cmd("HELLO 2 setname x SETNAME y"), hello_reply(2));
        assert_eq!(h.cmd("CLIENT GETNAME"), bulk("y"));
        // No password set: the default user takes any password, as Redis's `nopass`.
        assert_eq!(h.cmd("HELLO 3 AUTH default whatever"), hello_reply(3));
    }

    #[test]
    fn hello_with_a_password() {
        let mut h = with_password(Some("secret"));
        assert_eq!(h.cmd("PING"), err(crate::cmd::NOAUTH));
        assert_eq!(h.cmd("HELLO"), err(HELLO_NOAUTH));
        assert_eq!(h.cmd("HELLO 3"), err(HELLO_NOAUTH));
        assert_eq!(
            h.cmd("HELLO x"),
            err("ERR Protocol version is not an integer or out of range")
        );
        assert_eq!(h.cmd("HELLO 3 AUTH default wrong"), err(WRONGPASS));
        assert_eq!(h.cmd("HELLO 3 AUTH bob secret"), err(WRONGPASS));
        assert!(!h.client.authenticated);
        // Authenticated, even though the name then fails.
        assert_eq!(
            h.run(&[b"HELLO", b"3", b"AUTH", b"default", b"secret", b"SETNAME", b"a b"]),
            err(BAD_CLIENT_NAME).as_bytes()
        );
        assert!(h.client.authenticated);
        assert_eq!(h.client.proto, Proto::Resp2);
        assert_eq!(h.cmd("PING"), "+PONG\r\n");

        let mut h = with_password(Some("secret"));
        assert_eq!(h.cmd("HELLO 3 AUTH default secret SETNAME app"), hello_reply(3));
        assert!(h.client.authenticated);
        assert_eq!(h.client.name.as_deref(), Some(&b"app"[..]));
    }

    #[test]
    fn auth_without_a_password() {
        let mut h = harness();
        assert_eq!(h.cmd("AUTH x"), err(AUTH_NO_PASSWORD));
        assert_eq!(h.cmd("AUTH default x"), OK);
        assert_eq!(h.cmd("AUTH bob x"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH a b c"), err(SYNTAX));
        assert_eq!(
            h.cmd("AUTH"),
            err("ERR wrong number of arguments for 'auth' command")
        );
    }

    #[test]
    fn auth_with_a_password() {
        let mut h = with_password(Some("secret"));
        assert_eq!(h.cmd("AUTH wrong"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH secre"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH secrets"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH default wrong"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH Default secret"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH a b c"), err(SYNTAX));
        assert!(!h.client.authenticated);
        assert_eq!(h.cmd("CLIENT ID"), err(crate::cmd::NOAUTH));
        assert_eq!(h.cmd("AUTH secret"), OK);
        assert!(h.client.authenticated);
        assert_eq!(h.cmd("CLIENT ID"), ":7\r\n");
        // A failed attempt does not log an authenticated client out.
        assert_eq!(h.cmd("AUTH nope"), err(WRONGPASS));
        assert!(h.client.authenticated);
        let mut h = with_password(Some("secret"));
        assert_eq!(h.cmd("AUTH default secret"), OK);
        assert!(h.client.authenticated);
    }

    #[test]
    fn select_switches_between_sixteen_databases() {
        let mut h = harness();
        assert_eq!(h.cmd("SELECT 0"), OK);
        assert_eq!(h.cmd("SET k zero"), OK);
        assert_eq!(h.cmd("SELECT 15"), OK);
        assert_eq!(h.cmd("GET k"), "$-1\r\n");
        assert_eq!(h.cmd("SET k fifteen"), OK);
        assert_eq!(h.cmd("DBSIZE"), ":1\r\n");
        assert_eq!(h.cmd("SELECT 16"), err(DB_OUT_OF_RANGE));
        assert_eq!(h.cmd("SELECT -1"), err(DB_OUT_OF_RANGE));
        assert_eq!(h.client.db, 15, "a refused SELECT keeps the database");
        for bad in ["x", "01", "+1", "-0", "1.0", ""] {
            assert_eq!(
                h.cmd(&format!("SELECT {bad}")),
                err(NOT_INTEGER),
                "SELECT {bad:?}"
            );
        }
        assert_eq!(
            h.cmd("SELECT 99999999999"),
            err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        let info = h.cmd("INFO keyspace");
        assert!(
            info.contains("db0:keys=1,expires=0,avg_ttl=0\r\ndb15:keys=1,"),
            "{info}"
        );
        assert_eq!(h.cmd("FLUSHDB"), OK);
        assert_eq!(h.cmd("SELECT 0"), OK);
        assert_eq!(h.cmd("GET k"), bulk("zero"), "FLUSHDB flushes one database");
        assert_eq!(h.cmd("SELECT 3"), OK);
        assert_eq!(h.cmd("SET k three"), OK);
        assert_eq!(h.cmd("FLUSHALL"), OK);
        assert_eq!(h.cmd("DBSIZE"), ":0\r\n");
        assert_eq!(h.cmd("SELECT 0"), OK);
        assert_eq!(h.cmd("DBSIZE"), ":0\r\n", "FLUSHALL flushes them all");
    }

    #[test]
    fn move_copy_and_swapdb() {
        let mut h = harness();
        h.cmd("SET a 1");
        h.cmd("EXPIRE a 100");
        assert_eq!(h.cmd("MOVE a 0"), err(SAME_OBJECT));
        assert_eq!(h.cmd("MOVE a 16"), err(DB_OUT_OF_RANGE));
        assert_eq!(h.cmd("MOVE a x"), err(NOT_INTEGER));
        assert_eq!(h.cmd("MOVE nokey 1"), ":0\r\n");
        assert_eq!(h.cmd("MOVE a 1"), ":1\r\n");
        assert_eq!(h.cmd("EXISTS a"), ":0\r\n");
        assert_eq!(h.cmd("SET a 2"), OK);
        assert_eq!(h.cmd("MOVE a 1"), ":0\r\n", "it exists there");
        assert_eq!(h.cmd("COPY a b DB 1"), ":1\r\n");
        assert_eq!(h.cmd("COPY a b DB 1"), ":0\r\n");
        assert_eq!(h.cmd("COPY a a"), err(SAME_OBJECT));
        assert_eq!(h.cmd("COPY a a DB 2"), ":1\r\n");
        assert_eq!(h.cmd("COPY a b DB 99"), err(DB_OUT_OF_RANGE));
        assert_eq!(h.cmd("COPY a b FOO"), err(SYNTAX));
        assert_eq!(h.cmd("SELECT 1"), OK);
        assert_eq!(h.cmd("GET a"), bulk("1"));
        assert_eq!(h.cmd("TTL a"), ":100\r\n", "MOVE keeps the deadline");
        assert_eq!(h.cmd("GET b"), bulk("2"));
        assert_eq!(h.cmd("SWAPDB 1 2"), OK);
        assert_eq!(h.cmd("DBSIZE"), ":1\r\n", "database 1 now holds 2's keys");
        assert_eq!(h.cmd("SWAPDB 2 3"), OK);
        assert_eq!(h.cmd("SELECT 3"), OK);
        assert_eq!(h.cmd("GET b"), bulk("2"), "swapped between two other databases");
        assert_eq!(h.cmd("SWAPDB 0 16"), err(DB_OUT_OF_RANGE));
        assert_eq!(h.cmd("SWAPDB x 1"), err("ERR invalid first DB index"));
        assert_eq!(h.cmd("SWAPDB 1 99999999999"), err("ERR invalid second DB index"));
        assert_eq!(h.cmd("SWAPDB 4 4"), OK);
    }

    #[test]
    fn quit_closes_after_the_reply() {
        let mut h = harness();
        assert_eq!(h.cmd("QUIT x"), OK);
        assert!(h.client.close_after_reply);
    }

    #[test]
    fn client_subcommands() {
        let mut h = harness();
        assert_eq!(h.cmd("CLIENT ID"), ":7\r\n");
        assert_eq!(h.cmd("CLIENT GETNAME"), "$-1\r\n");
        assert_eq!(h.cmd("client setname conn-1"), OK);
        assert_eq!(h.cmd("CLIENT GETNAME"), bulk("conn-1"));
        for bad in [&b"a b"[..], b"a\nb", "é".as_bytes(), b"\x7f"] {
            assert_eq!(
                h.run(&[b"CLIENT", b"SETNAME", bad]),
                err(BAD_CLIENT_NAME).as_bytes()
            );
        }
        assert_eq!(h.cmd("CLIENT GETNAME"), bulk("conn-1"));
        assert_eq!(h.run(&[b"CLIENT", b"SETNAME", b""]), OK.as_bytes());
        assert_eq!(h.cmd("CLIENT GETNAME"), "$-1\r\n");

        assert_eq!(
            h.cmd("CLIENT"),
            err("ERR wrong number of arguments for 'client' command")
        );
        for (line, full) in [
            ("CLIENT ID x", "client|id"),
            ("CLIENT GETNAME x", "client|getname"),
            ("CLIENT SETNAME", "client|setname"),
            ("CLIENT SETNAME a b", "client|setname"),
            ("client help x", "client|help"),
            ("CLIENT INFO x", "client|info"),
        ] {
            assert_eq!(h.cmd(line), err(&wrong_arity(full)), "{line}");
        }
        assert_eq!(
            h.cmd("CLIENT FOO"),
            err("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
        );
        // Redis 7.2's SETINFO is not in 7.0.
        assert_eq!(
            h.cmd("CLIENT SETINFO lib-name x"),
            err("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
        );
    }

    #[test]
    fn client_info_and_list() {
        let mut h = harness();
        h.cmd("CLIENT SETNAME app");
        let line = |cmd: &str, resp: u8| {
            format!(
                "id=7 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 name=app age=5 idle=0 flags=N \
                 db=0 sub=0 psub=0 ssub=0 multi=-1 cmd={cmd} user=default redir=-1 resp={resp}\n"
            )
        };
        assert_eq!(h.cmd("CLIENT INFO"), bulk(&line("client|info", 2)));
        assert_eq!(h.cmd("CLIENT LIST"), bulk(&line("client|list", 2)));
        assert_eq!(h.cmd("CLIENT LIST TYPE normal"), bulk(&line("client|list", 2)));
        assert_eq!(h.cmd("CLIENT LIST TYPE pubsub"), bulk(""));
        assert_eq!(h.cmd("CLIENT LIST ID 1 7"), bulk(&line("client|list", 2)));
        assert_eq!(h.cmd("CLIENT LIST ID 1 2"), bulk(""));
        assert_eq!(h.cmd("CLIENT LIST ID x"), err("ERR Invalid client ID"));
        assert_eq!(h.cmd("CLIENT LIST TYPE x"), err("ERR Unknown client type 'x'"));
        assert_eq!(h.cmd("CLIENT LIST ID"), err(SYNTAX));
        assert_eq!(h.cmd("CLIENT LIST x"), err(SYNTAX));
        h.cmd("HELLO 3");
        let text = line("client|info", 3);
        assert_eq!(
            h.cmd("CLIENT INFO"),
            format!("={}\r\ntxt:{text}\r\n", text.len() + 4)
        );
    }

    #[test]
    fn client_help_is_status_lines() {
        let mut h = harness();
        let reply = h.cmd("CLIENT HELP");
        assert!(
            reply.starts_with("*17\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
        );
        assert!(reply.ends_with("+HELP\r\n+    Prints this help.\r\n"));
        assert_eq!(reply.matches("\r\n+").count(), 17);
    }

    #[test]
    fn dbsize_and_flush() {
        let mut h = harness();
        assert_eq!(h.cmd("DBSIZE"), ":0\r\n");
        h.cmd("SET a 1");
        h.cmd("SET b 2");
        assert_eq!(h.cmd("DBSIZE"), ":2\r\n");
        assert_eq!(h.cmd("FLUSHDB"), OK);
        assert_eq!(h.cmd("DBSIZE"), ":0\r\n");
        for line in [
            "FLUSHDB ASYNC",
            "flushdb sync",
            "FLUSHALL",
            "FLUSHALL async",
            "FLUSHALL SYNC",
        ] {
            h.cmd("SET a 1");
            assert_eq!(h.cmd(line), OK, "{line}");
            assert_eq!(h.cmd("DBSIZE"), ":0\r\n", "{line}");
        }
        h.cmd("SET a 1");
        for line in ["FLUSHDB x", "FLUSHDB async sync", "FLUSHALL x"] {
            assert_eq!(h.cmd(line), err(SYNTAX), "{line}");
        }
        assert_eq!(h.cmd("DBSIZE"), ":1\r\n");
        assert_eq!(
            h.cmd("DBSIZE x"),
            err("ERR wrong number of arguments for 'dbsize' command")
        );
    }

    /// The subcommand tables are sorted, complete for COMMAND DOCS, and their arities count the
    /// container and the subcommand.
    #[test]
    fn tables_are_consistent() {
        for subs in [CLIENT_SUBS, COMMAND_SUBS, CONFIG_SUBS, FUNCTION_SUBS, OBJECT_SUBS] {
            assert!(subs.windows(2).all(|w| w[0].name < w[1].name));
            for s in subs {
                assert!(s.arity.unsigned_abs() >= 2, "{}", s.name);
                assert!(s.name.contains('|'));
            }
        }
        assert!(DOCS.windows(2).all(|w| w[0].0 < w[1].0), "DOCS must stay sorted");
        for spec in table::COMMANDS {
            assert!(
                DOCS.binary_search_by(|d| d.0.cmp(spec.name)).is_ok(),
                "no docs for {}",
                spec.name
            );
        }
        assert_eq!(DOCS.len(), table::COMMANDS.len());
    }

    #[test]
    fn command_info_shapes() {
        let mut h = harness();
        // GET, as Redis 7.0.15 describes it (its key spec flags are also RO access).
        let get = "*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n\
                   *3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n\
                   *2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n\
                   $5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n\
                   *4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n\
                   $7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
        assert_eq!(h.cmd("COMMAND INFO GET nosuch"), format!("*2\r\n{get}$-1\r\n"));
        // ECHO in RESP3: sets, and `_` for the unknown name.
        h.cmd("HELLO 3");
        assert_eq!(
            h.cmd("COMMAND INFO echo nosuch"),
            "*2\r\n*10\r\n$4\r\necho\r\n:2\r\n~1\r\n+fast\r\n:0\r\n:0\r\n:0\r\n\
             ~2\r\n+@fast\r\n+@connection\r\n~0\r\n~0\r\n~0\r\n_\r\n"
        );
        // MSET's keys: every other argument to the end.
        let mset = h.cmd("COMMAND INFO mset");
        assert!(
            mset.contains("$7\r\nlastkey\r\n:-1\r\n$7\r\nkeystep\r\n:2\r\n"),
            "{mset}"
        );
        // A subcommand by its full name; a container lists its subcommands.
        h.cmd("HELLO 2");
        assert_eq!(
            h.cmd("COMMAND INFO client|id"),
            "*1\r\n*10\r\n$9\r\nclient|id\r\n:2\r\n*3\r\n+noscript\r\n+loading\r\n+stale\r\n\
             :0\r\n:0\r\n:0\r\n*2\r\n+@slow\r\n+@connection\r\n*0\r\n*0\r\n*0\r\n"
        );
        let client = h.cmd("COMMAND INFO client");
        assert!(client.contains(&format!("*0\r\n*0\r\n*{}\r\n*10\r\n", CLIENT_SUBS.len())));
        assert_eq!(client.matches("*10\r\n").count(), 1 + CLIENT_SUBS.len());
    }

    #[test]
    fn command_all_count_list() {
        let mut h = harness();
        let n = table::COMMANDS.len();
        assert_eq!(h.cmd("COMMAND COUNT"), format!(":{n}\r\n"));
        let all = h.cmd("COMMAND");
        assert!(all.starts_with(&format!("*{n}\r\n*10\r\n$6\r\nappend\r\n:3\r\n")));
        assert_eq!(h.cmd("COMMAND INFO"), all);
        let subs = [CLIENT_SUBS, COMMAND_SUBS, CONFIG_SUBS, FUNCTION_SUBS, OBJECT_SUBS]
            .iter()
            .map(|s| s.len())
            .sum::<usize>();
        let list = h.cmd("COMMAND LIST");
        assert!(list.starts_with(&format!("*{}\r\n$6\r\nappend\r\n", n + subs)));
        assert!(list.contains("$9\r\nclient|id\r\n"));
        assert_eq!(
            h.cmd("COMMAND LIST FILTERBY PATTERN CL*"),
            format!(
                "*{}\r\n$6\r\nclient\r\n{}",
                1 + CLIENT_SUBS.len(),
                CLIENT_SUBS.iter().map(|s| bulk(s.name)).collect::<String>()
            )
        );
        assert_eq!(h.cmd("COMMAND LIST FILTERBY MODULE x"), "*0\r\n");
        let conn = h.cmd("COMMAND LIST FILTERBY ACLCAT connection");
        assert!(conn.contains(&bulk("hello")) && conn.contains(&bulk("client|id")));
        assert!(!conn.contains(&bulk("get")));
        assert_eq!(h.cmd("COMMAND LIST FILTERBY foo x"), err(SYNTAX));
        assert_eq!(h.cmd("COMMAND LIST x"), err(SYNTAX));
        assert_eq!(
            h.cmd("COMMAND FOO"),
            err("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")
        );
        assert_eq!(h.cmd("COMMAND COUNT x"), err(&wrong_arity("command|count")));
        assert!(h.cmd("COMMAND HELP").starts_with("*19\r\n+COMMAND <subcommand>"));
    }

    #[test]
    fn command_docs_shapes() {
        let mut h = harness();
        let echo_docs = |head: &str| {
            format!(
                "$4\r\necho\r\n{head}\r\n$7\r\nsummary\r\n$25\r\nReturns the given string.\r\n\
                 $5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n\
                 $10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*0\r\n"
            )
        };
        assert_eq!(
            h.cmd("COMMAND DOCS echo nosuch"),
            format!("*2\r\n{}", echo_docs("*10"))
        );
        h.cmd("HELLO 3");
        assert_eq!(h.cmd("COMMAND DOCS ECHO"), format!("%1\r\n{}", echo_docs("%5")));
        h.cmd("HELLO 2");
        // Everything: a flat map of every command, containers with their subcommands.
        let all = h.cmd("COMMAND DOCS");
        assert!(all.starts_with(&format!(
            "*{}\r\n$6\r\nappend\r\n*10\r\n",
            2 * table::COMMANDS.len()
        )));
        let client = h.cmd("COMMAND DOCS client");
        assert!(client.contains(&format!(
            "$11\r\nsubcommands\r\n*{}\r\n$14\r\nclient|getname\r\n*10\r\n",
            2 * CLIENT_SUBS.len()
        )));
        assert!(
            h.cmd("COMMAND DOCS client|id")
                .starts_with("*2\r\n$9\r\nclient|id\r\n*10\r\n")
        );
    }

    #[test]
    fn command_getkeys() {
        let mut h = harness();
        assert_eq!(h.cmd("COMMAND GETKEYS GET a"), "*1\r\n$1\r\na\r\n");
        assert_eq!(
            h.cmd("COMMAND GETKEYS mset a 1 b 2"),
            "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
        );
        assert_eq!(
            h.cmd("COMMAND GETKEYS del a b c"),
            "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
        );
        assert_eq!(
            h.cmd("COMMAND GETKEYS nosuch a"),
            err("ERR Invalid command specified")
        );
        assert_eq!(
            h.cmd("COMMAND GETKEYS ping x"),
            err("ERR The command has no key arguments")
        );
        assert_eq!(
            h.cmd("COMMAND GETKEYS get a b"),
            err("ERR Invalid number of arguments specified for command")
        );
        assert_eq!(h.cmd("COMMAND GETKEYS get"), err(&wrong_arity("command|getkeys")));
    }

    #[test]
    fn config_get() {
        let mut h = harness();
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

        let mut h = with_password(Some("pw"));
        h.cmd("AUTH pw");
        assert_eq!(
            h.cmd("CONFIG GET requirepass"),
            "*2\r\n$11\r\nrequirepass\r\n$2\r\npw\r\n"
        );
    }

    #[test]
    fn config_is_read_only() {
        let mut h = harness();
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
        assert_eq!(h.cmd("CONFIG RESETSTAT"), OK);
        assert_eq!(Stats::get(&h.server.stats.total_net_input_bytes), 0);
        assert_eq!(h.cmd("CONFIG RESETSTAT x"), err(&wrong_arity("config|resetstat")));
    }

    /// The INFO text of a reply (RESP2 bulk).
    fn info_text(reply: &str) -> &str {
        let (len, rest) = reply[1..].split_once("\r\n").unwrap();
        let len: usize = len.parse().unwrap();
        assert_eq!(rest.len(), len + 2, "bulk length");
        &rest[..len]
    }

    #[test]
    fn info_sections() {
        let mut h = harness();
        assert_eq!(h.cmd("INFO keyspace"), bulk("# Keyspace\r\n"));
        h.cmd("SET a 1");
        h.cmd("SET b 2 EX 100");
        assert_eq!(
            h.cmd("INFO KEYSPACE"),
            bulk("# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n")
        );
        assert_eq!(h.cmd("INFO nosuch"), bulk(""));
        assert_eq!(h.cmd("INFO nosuch keyspace"), h.cmd("INFO keyspace"));

        // Sections come in Redis's order whatever the request's, with a blank line between.
        let reply = h.cmd("INFO keyspace server");
        let text = info_text(&reply);
        assert!(text.starts_with("# Server\r\nredis_version:7.0.15\r\n"), "{text}");
        assert!(text.contains("\r\nredis_mode:standalone\r\n"));
        assert!(text.contains("\r\ntcp_port:6379\r\n"));
        assert!(text.contains(&format!("\r\nrun_id:{}\r\n", "ab".repeat(20))));
        assert!(text.contains(&format!("\r\nferry_version:{}\r\n", env!("CARGO_PKG_VERSION"))));
        assert!(text.contains("\r\narch_bits:64\r\n"));
        assert!(text.ends_with("\r\n\r\n# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n"));
        assert!(
            text.split("\r\n")
                .all(|l| l.is_empty() || l.starts_with('#') || l.contains(':'))
        );

        // All sections, for each way of asking (the command counter moves in between).
        let fields = |reply: &str| -> Vec<String> {
            let text = info_text(reply);
            text.lines()
                .filter(|l| !l.starts_with("total_commands_processed:") && !l.starts_with("uptime_in"))
                .map(str::to_owned)
                .collect()
        };
        let all = h.cmd("INFO");
        for line in [
            "INFO default",
            "INFO all",
            "INFO EVERYTHING",
            "INFO server default",
        ] {
            assert_eq!(fields(&h.cmd(line)), fields(&all), "{line}");
        }
        let text = info_text(&all);
        let headers: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            headers,
            [
                "# Server",
                "# Clients",
                "# Memory",
                "# Persistence",
                "# Stats",
                "# Replication",
                "# Cluster",
                "# Keyspace"
            ]
        );
        for field in [
            "connected_clients:0",
            "maxclients:10000",
            "used_memory:",
            "used_memory_human:",
            "maxmemory:1073741824",
            "maxmemory_human:1.00G",
            "maxmemory_policy:noeviction",
            "loading:0",
            "total_commands_processed:",
            "keyspace_hits:0",
            "keyspace_misses:0",
            "expired_keys:0",
            "reply_bytes_copied:0",
            "reply_bytes_referenced:0",
            "role:master",
            "cluster_enabled:0",
        ] {
            assert!(text.contains(&format!("\r\n{field}")), "{field} in {text}");
        }
        // Hits and misses come from the keyspace.
        h.cmd("GET a");
        h.cmd("GET nosuch");
        let stats = h.cmd("INFO stats");
        assert!(
            stats.contains("\r\nkeyspace_hits:1\r\nkeyspace_misses:1\r\n"),
            "{stats}"
        );

        h.cmd("HELLO 3");
        assert_eq!(
            h.cmd("INFO keyspace"),
            "=48\r\ntxt:# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n\r\n"
        );
        assert_eq!(h.cmd("INFO nosuch"), "=4\r\ntxt:\r\n");
    }

    /// The long messages, byte for byte as redis-server 7.0.15 sends them.
    #[test]
    fn messages_match_redis() {
        assert_eq!(
            AUTH_NO_PASSWORD,
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?"
        );
        assert_eq!(
            HELLO_NOAUTH,
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
             the RESP protocol version at the same time"
        );
        assert_eq!(
            AUTH_NO_PASSWORD.len() + HELLO_NOAUTH.len(),
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".len()
                + "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".len()
        );
    }

    #[test]
    fn subcommand_errors_for_execute() {
        fn check(name: &[u8], words: &[&[u8]]) -> Option<Vec<u8>> {
            let mut base = Vec::new();
            let mut ranges = Vec::new();
            for w in words {
                ranges.push(base.len()..base.len() + w.len());
                base.extend_from_slice(w);
            }
            subcommand_error(table::lookup(name).unwrap(), &Args::new(&base, &ranges, None))
        }
        assert_eq!(check(b"client", &[b"CLIENT", b"ID"]), None);
        assert_eq!(
            check(b"client", &[b"CLIENT", b"nope"]),
            Some(b"ERR unknown subcommand 'nope'. Try CLIENT HELP.".to_vec())
        );
        assert_eq!(
            check(b"config", &[b"config", b"get"]),
            Some(wrong_arity("config|get").into_bytes())
        );
        assert_eq!(check(b"command", &[b"COMMAND"]), None);
        assert_eq!(check(b"get", &[b"GET", b"a"]), None);
    }

    #[test]
    fn human_bytes_like_redis() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1023), "1023B");
        assert_eq!(human_bytes(1024), "1.00K");
        assert_eq!(human_bytes(1536), "1.50K");
        assert_eq!(human_bytes(64 << 20), "64.00M");
        assert_eq!(human_bytes(1 << 30), "1.00G");
        assert_eq!(human_bytes(3 << 40), "3.00T");
        assert_eq!(human_bytes(1 << 50), "1.00P");
        assert_eq!(human_bytes(u64::MAX), format!("{}B", u64::MAX));
    }

    #[test]
    fn credentials_compare() {
        assert!(credentials_ok(None, None, b"anything"));
        assert!(credentials_ok(None, Some(b"default"), b""));
        assert!(!credentials_ok(None, Some(b"bob"), b""));
        assert!(credentials_ok(Some("pw"), None, b"pw"));
        assert!(!credentials_ok(Some("pw"), None, b"p"));
        assert!(!credentials_ok(Some("pw"), None, b"pw\0"));
        assert!(!credentials_ok(Some(""), None, b"\0"));
        assert!(credentials_ok(Some(""), None, b""));
    }
}
