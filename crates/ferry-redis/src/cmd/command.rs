//! `COMMAND` and its subcommands ([`COMMAND_SUBS`]): the command table as Redis 7.0 describes
//! it. The handlers read the table through [`Ctx::table`], so that this module does not import
//! [`table`](super::table), which imports it.
//!
//! Where this differs from Redis, and why:
//! - `COMMAND` reports the table's commands. ACL categories are derived from flags and group
//!   (`@read`/`@write`, `@string`/`@list`/`@keyspace`/`@connection`, `@fast`/`@slow`,
//!   `@admin`/`@dangerous`); key specs from the `(first, last, step)` positions (one range
//!   spec, flagged `RO access` or `RW`); tips are empty for top-level commands. `COMMAND DOCS`
//!   gives summary, since, group, complexity and an empty `arguments` array (argument trees
//!   are not modelled: `redis-cli` shows no hints, but its help and completion work).
//!   `COMMAND GETKEYSANDFLAGS` is not implemented.

use super::keys::glob_match;
use super::subcommand::{ACL_CONN, HELP_SUB, Sub, dispatch, help, sub};
use super::{Args, CommandSpec, Ctx, SYNTAX, Table};
use crate::resp::ReplyBuf;

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

/// `COMMAND [subcommand ...]`: with no subcommand, `COMMAND INFO` of every command.
pub fn command(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() == 1 {
        return all_command_info(ctx.table, out);
    }
    dispatch("command", COMMAND_SUBS, ctx, args, out);
}

/// `COMMAND COUNT`: top-level commands (subcommands are not counted, as in Redis).
fn command_count(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.integer(ctx.table.commands.len() as i64);
}

/// A command or subcommand, as `COMMAND INFO` and `COMMAND DOCS` name them.
#[derive(Clone, Copy)]
enum Found {
    Command(&'static CommandSpec),
    Sub(&'static Sub),
}

/// The command `name` (any case), or the subcommand `container|sub`.
fn find_command(table: &Table, name: &[u8]) -> Option<Found> {
    match name.iter().position(|&b| b == b'|') {
        None => (table.lookup)(name).map(Found::Command),
        Some(bar) => {
            let container = (table.lookup)(&name[..bar])?;
            let sub = &name[bar + 1..];
            (table.subcommands)(container.name)
                .iter()
                .find(|s| s.short_name().as_bytes().eq_ignore_ascii_case(sub))
                .map(Found::Sub)
        }
    }
}

/// `COMMAND INFO [name ...]`: each command's description (null for an unknown name); every
/// command's when no name is given.
fn command_info(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() == 2 {
        return all_command_info(ctx.table, out);
    }
    out.array(args.len() - 2);
    for name in args.iter_from(2) {
        match find_command(ctx.table, name) {
            Some(Found::Command(spec)) => command_info_entry(ctx.table, out, spec),
            Some(Found::Sub(sub)) => sub_info_entry(out, sub),
            None => out.null(),
        }
    }
}

fn all_command_info(table: &Table, out: &mut ReplyBuf) {
    out.array(table.commands.len());
    for spec in table.commands {
        command_info_entry(table, out, spec);
    }
}

/// Redis 7's command description: `[name, arity, flags, first, last, step, acl categories,
/// tips, key specs, subcommands]`; flags, categories, tips and key specs are sets in RESP3.
fn command_info_entry(table: &Table, out: &mut ReplyBuf, spec: &CommandSpec) {
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
    let subs = (table.subcommands)(spec.name);
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
        "pubsub" => cats.push("@pubsub"),
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
    if spec.has("blocking") {
        cats.push("@blocking");
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
    ("bgrewriteaof", "1.0.0", "O(1)"),
    ("bgsave", "1.0.0", "O(1)"),
    ("blmove", "6.2.0", "O(1)"),
    ("blmpop", "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned."),
    ("blpop", "2.0.0", "O(N) where N is the number of provided keys."),
    ("brpop", "2.0.0", "O(N) where N is the number of provided keys."),
    ("brpoplpush", "2.2.0", "O(1)"),
    ("bzmpop", "7.0.0", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped."),
    ("bzpopmax", "5.0.0", "O(log(N)) with N being the number of elements in the sorted set."),
    ("bzpopmin", "5.0.0", "O(log(N)) with N being the number of elements in the sorted set."),
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
    ("dump", "2.6.0", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1)."),
    ("echo", "1.0.0", "O(1)"),
    ("exec", "1.2.0", "Depends on commands in the transaction"),
    ("exists", "1.0.0", "O(N) where N is the number of keys to check."),
    ("expire", "1.0.0", "O(1)"),
    ("expireat", "2.2.0", "O(1)"),
    ("expiretime", "7.0.0", "O(1)"),
    ("flushall", "1.0.0", "O(N) where N is the total number of keys in all databases"),
    ("flushdb", "1.0.0", "O(N) where N is the number of keys in the selected database"),
    ("function", "7.0.0", "Depends on subcommand."),
    ("geoadd", "3.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set."),
    ("geodist", "3.2.0", "O(log(N))"),
    ("geohash", "3.2.0", "O(log(N)) for each member requested, where N is the number of elements in the sorted set."),
    ("geopos", "3.2.0", "O(N) where N is the number of members requested."),
    ("georadius", "3.2.0", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
    ("georadius_ro", "3.2.10", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
    ("georadiusbymember", "3.2.0", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
    ("georadiusbymember_ro", "3.2.10", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
    ("geosearch", "6.2.0", "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape"),
    ("geosearchstore", "6.2.0", "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape"),
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
    ("lastsave", "1.0.0", "O(1)"),
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
    ("memory", "4.0.0", "Depends on subcommand."),
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
    ("psubscribe", "2.0.0", "O(N) where N is the number of patterns the client is already subscribed to."),
    ("psync", "2.8.0", "O(1)"),
    ("pttl", "2.6.0", "O(1)"),
    ("publish", "2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client)."),
    ("pubsub", "2.8.0", "Depends on subcommand."),
    ("punsubscribe", "2.0.0", "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client)."),
    ("quit", "1.0.0", "O(1)"),
    ("randomkey", "1.0.0", "O(1)"),
    ("rename", "1.0.0", "O(1)"),
    ("renamenx", "1.0.0", "O(1)"),
    ("replicaof", "5.0.0", "O(1)"),
    ("reset", "6.2.0", "O(1)"),
    ("restore", "2.6.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N))."),
    ("rpop", "1.0.0", "O(N) where N is the number of elements returned"),
    ("rpoplpush", "1.2.0", "O(1)"),
    ("rpush", "1.0.0", "O(1) for each element added"),
    ("rpushx", "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("sadd", "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("save", "1.0.0", "O(N) where N is the total number of keys in all databases"),
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
    ("slaveof", "1.0.0", "O(1)"),
    ("smembers", "1.0.0", "O(N) where N is the set cardinality."),
    ("smismember", "6.2.0", "O(N) where N is the number of elements being checked for membership"),
    ("smove", "1.0.0", "O(1)"),
    ("sort", "1.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."),
    ("sort_ro", "7.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."),
    ("spop", "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count."),
    ("spublish", "7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel."),
    ("srandmember", "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count."),
    ("srem", "1.0.0", "O(N) where N is the number of members to be removed."),
    ("sscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.."),
    ("ssubscribe", "7.0.0", "O(N) where N is the number of shard channels to subscribe to."),
    ("strlen", "2.2.0", "O(1)"),
    ("subscribe", "2.0.0", "O(N) where N is the number of channels to subscribe to."),
    ("substr", "1.0.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings."),
    ("sunion", "1.0.0", "O(N) where N is the total number of elements in all given sets."),
    ("sunionstore", "1.0.0", "O(N) where N is the total number of elements in all given sets."),
    ("sunsubscribe", "7.0.0", "O(N) where N is the number of clients already subscribed to a shard channel."),
    ("swapdb", "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases."),
    ("sync", "1.0.0", "O(1)"),
    ("time", "2.6.0", "O(1)"),
    ("touch", "3.2.1", "O(N) where N is the number of keys that will be touched."),
    ("ttl", "1.0.0", "O(1)"),
    ("type", "1.0.0", "O(1)"),
    ("unlink", "4.0.0", "O(1) for each key removed regardless of its size"),
    ("unsubscribe", "2.0.0", "O(N) where N is the number of clients already subscribed to a channel."),
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
    ("zmpop", "7.0.0", "O(K) + O(N*log(M)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped."),
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
fn command_docs(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() == 2 {
        out.map(ctx.table.commands.len());
        for spec in ctx.table.commands {
            command_docs_entry(ctx.table, out, spec);
        }
        return;
    }
    let found: Vec<Found> = args
        .iter_from(2)
        .filter_map(|n| find_command(ctx.table, n))
        .collect();
    out.map(found.len());
    for f in found {
        match f {
            Found::Command(spec) => command_docs_entry(ctx.table, out, spec),
            Found::Sub(sub) => sub_docs_entry(out, sub),
        }
    }
}

/// `name` then its docs map: summary, since, group, complexity, arguments (empty), and the
/// subcommands' docs for a container.
fn command_docs_entry(table: &Table, out: &mut ReplyBuf, spec: &CommandSpec) {
    let (since, complexity) = docs_of(spec.name);
    let subs = (table.subcommands)(spec.name);
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
fn command_getkeys(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(spec) = (ctx.table.lookup)(args.get(2)) else {
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
fn command_list(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
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
    for spec in ctx.table.commands {
        let cats = acl_categories(spec);
        names.push((spec.name, cats));
        for sub in (ctx.table.subcommands)(spec.name) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::client::CLIENT_SUBS;
    use crate::cmd::config::CONFIG_SUBS;
    use crate::cmd::harness::{bulk, err, server_harness};
    use crate::cmd::introspect::{FUNCTION_SUBS, MEMORY_SUBS, OBJECT_SUBS};
    use crate::cmd::pubsub::PUBSUB_SUBS;
    use crate::cmd::{table, wrong_arity};

    /// The subcommand tables are sorted, complete for COMMAND DOCS, and their arities count the
    /// container and the subcommand.
    #[test]
    fn tables_are_consistent() {
        for subs in [
            CLIENT_SUBS,
            COMMAND_SUBS,
            CONFIG_SUBS,
            FUNCTION_SUBS,
            MEMORY_SUBS,
            OBJECT_SUBS,
            PUBSUB_SUBS,
        ] {
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
        let mut h = server_harness(None);
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
        let mut h = server_harness(None);
        let n = table::COMMANDS.len();
        assert_eq!(h.cmd("COMMAND COUNT"), format!(":{n}\r\n"));
        let all = h.cmd("COMMAND");
        assert!(all.starts_with(&format!("*{n}\r\n*10\r\n$6\r\nappend\r\n:3\r\n")));
        assert_eq!(h.cmd("COMMAND INFO"), all);
        let subs = [
            CLIENT_SUBS,
            COMMAND_SUBS,
            CONFIG_SUBS,
            FUNCTION_SUBS,
            MEMORY_SUBS,
            OBJECT_SUBS,
            PUBSUB_SUBS,
        ]
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
        let mut h = server_harness(None);
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
        let mut h = server_harness(None);
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
}
