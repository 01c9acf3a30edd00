//! The command table: every command the server has, with Redis 7.0's arity, flags and key
//! positions (what `COMMAND` reports and `redis-cli` reads).

use std::sync::LazyLock;

use super::{CommandSpec, Handler, hashes, keys, lists, server, sets, strings};

const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    group: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group,
        summary,
        handler,
    }
}

const NONE: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const ALL_KEYS: (i32, i32, i32) = (1, -1, 1);
/// Keys counted by the argument before them (`SINTERCARD numkeys key ...`): none in the
/// legacy triple, as Redis reports.
const NUMKEYS: (i32, i32, i32) = (0, 0, 0);

const CONN: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];
const W_OOM: &[&str] = &["write", "denyoom"];
const W_OOM_FAST: &[&str] = &["write", "denyoom", "fast"];
const W_FAST: &[&str] = &["write", "fast"];
const W: &[&str] = &["write"];
const R_FAST: &[&str] = &["readonly", "fast"];
const R: &[&str] = &["readonly"];

/// Every command, sorted by name.
pub static COMMANDS: &[CommandSpec] = &[
    spec(
        "append",
        3,
        W_OOM,
        KEY1,
        "string",
        "Appends a string to the value of a key.",
        strings::append,
    ),
    spec(
        "auth",
        -2,
        CONN,
        NONE,
        "connection",
        "Authenticates the connection.",
        server::auth,
    ),
    spec(
        "client",
        -2,
        &["noscript", "loading", "stale"],
        NONE,
        "connection",
        "CLIENT ID, GETNAME, SETNAME.",
        server::client,
    ),
    spec(
        "command",
        -1,
        &["loading", "stale"],
        NONE,
        "server",
        "Returns detailed information about all commands.",
        server::command,
    ),
    spec(
        "config",
        -2,
        &["admin", "noscript", "loading", "stale"],
        NONE,
        "server",
        "CONFIG GET.",
        server::config,
    ),
    spec(
        "dbsize",
        1,
        R_FAST,
        NONE,
        "server",
        "Returns the number of keys in the database.",
        server::dbsize,
    ),
    spec(
        "decr",
        2,
        W_OOM_FAST,
        KEY1,
        "string",
        "Decrements the integer value of a key by one.",
        strings::decr,
    ),
    spec(
        "decrby",
        3,
        W_OOM_FAST,
        KEY1,
        "string",
        "Decrements a number from the integer value of a key.",
        strings::decrby,
    ),
    spec(
        "del",
        -2,
        W,
        ALL_KEYS,
        "generic",
        "Deletes one or more keys.",
        keys::del,
    ),
    spec(
        "echo",
        2,
        &["fast"],
        NONE,
        "connection",
        "Returns the given string.",
        server::echo,
    ),
    spec(
        "exists",
        -2,
        R_FAST,
        ALL_KEYS,
        "generic",
        "Determines whether one or more keys exist.",
        keys::exists,
    ),
    spec(
        "expire",
        -3,
        W_FAST,
        KEY1,
        "generic",
        "Sets the expiration time of a key in seconds.",
        keys::expire,
    ),
    spec(
        "flushall",
        -1,
        W,
        NONE,
        "server",
        "Removes all keys from all databases.",
        server::flushall,
    ),
    spec(
        "flushdb",
        -1,
        W,
        NONE,
        "server",
        "Remove all keys from the current database.",
        server::flushdb,
    ),
    spec(
        "get",
        2,
        R_FAST,
        KEY1,
        "string",
        "Returns the string value of a key.",
        strings::get,
    ),
    spec(
        "getdel",
        2,
        W_FAST,
        KEY1,
        "string",
        "Returns the string value of a key after deleting the key.",
        strings::getdel,
    ),
    spec(
        "getset",
        3,
        W_OOM_FAST,
        KEY1,
        "string",
        "Returns the previous string value of a key after setting it to a new value.",
        strings::getset,
    ),
    spec(
        "hdel",
        -3,
        W_FAST,
        KEY1,
        "hash",
        "Delete one or more hash fields.",
        hashes::hdel,
    ),
    spec(
        "hello",
        -1,
        CONN,
        NONE,
        "connection",
        "Handshakes with the Redis server.",
        server::hello,
    ),
    spec(
        "hexists",
        3,
        R_FAST,
        KEY1,
        "hash",
        "Determine if a hash field exists.",
        hashes::hexists,
    ),
    spec(
        "hget",
        3,
        R_FAST,
        KEY1,
        "hash",
        "Get the value of a hash field.",
        hashes::hget,
    ),
    spec(
        "hgetall",
        2,
        R,
        KEY1,
        "hash",
        "Get all the fields and values in a hash.",
        hashes::hgetall,
    ),
    spec(
        "hincrby",
        4,
        W_OOM_FAST,
        KEY1,
        "hash",
        "Increment the integer value of a hash field by the given number.",
        hashes::hincrby,
    ),
    spec(
        "hincrbyfloat",
        4,
        W_OOM_FAST,
        KEY1,
        "hash",
        "Increment the float value of a hash field by the given amount.",
        hashes::hincrbyfloat,
    ),
    spec(
        "hkeys",
        2,
        R,
        KEY1,
        "hash",
        "Get all the fields in a hash.",
        hashes::hkeys,
    ),
    spec(
        "hlen",
        2,
        R_FAST,
        KEY1,
        "hash",
        "Get the number of fields in a hash.",
        hashes::hlen,
    ),
    spec(
        "hmget",
        -3,
        R_FAST,
        KEY1,
        "hash",
        "Get the values of all the given hash fields.",
        hashes::hmget,
    ),
    spec(
        "hmset",
        -4,
        W_OOM_FAST,
        KEY1,
        "hash",
        "Set multiple hash fields to multiple values.",
        hashes::hmset,
    ),
    spec(
        "hrandfield",
        -2,
        R,
        KEY1,
        "hash",
        "Get one or multiple random fields from a hash.",
        hashes::hrandfield,
    ),
    spec(
        "hscan",
        -3,
        R,
        KEY1,
        "hash",
        "Incrementally iterate hash fields and associated values.",
        hashes::hscan,
    ),
    spec(
        "hset",
        -4,
        W_OOM_FAST,
        KEY1,
        "hash",
        "Set the string value of a hash field.",
        hashes::hset,
    ),
    spec(
        "hsetnx",
        4,
        W_OOM_FAST,
        KEY1,
        "hash",
        "Set the value of a hash field, only if the field does not exist.",
        hashes::hsetnx,
    ),
    spec(
        "hstrlen",
        3,
        R_FAST,
        KEY1,
        "hash",
        "Get the length of the value of a hash field.",
        hashes::hstrlen,
    ),
    spec(
        "hvals",
        2,
        R,
        KEY1,
        "hash",
        "Get all the values in a hash.",
        hashes::hvals,
    ),
    spec(
        "incr",
        2,
        W_OOM_FAST,
        KEY1,
        "string",
        "Increments the integer value of a key by one.",
        strings::incr,
    ),
    spec(
        "incrby",
        3,
        W_OOM_FAST,
        KEY1,
        "string",
        "Increments the integer value of a key by a number.",
        strings::incrby,
    ),
    spec(
        "info",
        -1,
        &["loading", "stale"],
        NONE,
        "server",
        "Returns information and statistics about the server.",
        server::info,
    ),
    spec(
        "keys",
        2,
        R,
        NONE,
        "generic",
        "Returns all key names that match a pattern.",
        keys::keys,
    ),
    spec(
        "lindex",
        3,
        R,
        KEY1,
        "list",
        "Returns an element from a list by its index.",
        lists::lindex,
    ),
    spec(
        "llen",
        2,
        R_FAST,
        KEY1,
        "list",
        "Returns the length of a list.",
        lists::llen,
    ),
    spec(
        "lpop",
        -2,
        W_FAST,
        KEY1,
        "list",
        "Returns the first elements in a list after removing it.",
        lists::lpop,
    ),
    spec(
        "lpush",
        -3,
        W_OOM_FAST,
        KEY1,
        "list",
        "Prepends one or more elements to a list.",
        lists::lpush,
    ),
    spec(
        "lrange",
        4,
        R,
        KEY1,
        "list",
        "Returns a range of elements from a list.",
        lists::lrange,
    ),
    spec(
        "lset",
        4,
        W_OOM,
        KEY1,
        "list",
        "Sets the value of an element in a list by its index.",
        lists::lset,
    ),
    spec(
        "ltrim",
        4,
        W,
        KEY1,
        "list",
        "Removes elements from both ends a list.",
        lists::ltrim,
    ),
    spec(
        "mget",
        -2,
        R_FAST,
        ALL_KEYS,
        "string",
        "Atomically returns the string values of one or more keys.",
        strings::mget,
    ),
    spec(
        "mset",
        -3,
        W_OOM,
        (1, -1, 2),
        "string",
        "Atomically creates or modifies the string values of one or more keys.",
        strings::mset,
    ),
    spec(
        "persist",
        2,
        W_FAST,
        KEY1,
        "generic",
        "Removes the expiration time of a key.",
        keys::persist,
    ),
    spec(
        "pexpire",
        -3,
        W_FAST,
        KEY1,
        "generic",
        "Sets the expiration time of a key in milliseconds.",
        keys::pexpire,
    ),
    spec(
        "ping",
        -1,
        &["fast"],
        NONE,
        "connection",
        "Returns the server's liveliness response.",
        server::ping,
    ),
    spec(
        "pttl",
        2,
        R_FAST,
        KEY1,
        "generic",
        "Returns the expiration time in milliseconds of a key.",
        keys::pttl,
    ),
    spec(
        "quit",
        -1,
        CONN,
        NONE,
        "connection",
        "Closes the connection.",
        server::quit,
    ),
    spec(
        "rpop",
        -2,
        W_FAST,
        KEY1,
        "list",
        "Returns and removes the last elements of a list.",
        lists::rpop,
    ),
    spec(
        "rpush",
        -3,
        W_OOM_FAST,
        KEY1,
        "list",
        "Appends one or more elements to a list.",
        lists::rpush,
    ),
    spec(
        "sadd",
        -3,
        W_OOM_FAST,
        KEY1,
        "set",
        "Add one or more members to a set.",
        sets::sadd,
    ),
    spec(
        "scan",
        -2,
        R,
        NONE,
        "generic",
        "Iterates over the key names in the database.",
        keys::scan,
    ),
    spec(
        "scard",
        2,
        R_FAST,
        KEY1,
        "set",
        "Get the number of members in a set.",
        sets::scard,
    ),
    spec(
        "sdiff",
        -2,
        R,
        ALL_KEYS,
        "set",
        "Subtract multiple sets.",
        sets::sdiff,
    ),
    spec(
        "sdiffstore",
        -3,
        W_OOM,
        ALL_KEYS,
        "set",
        "Subtract multiple sets and store the resulting set in a key.",
        sets::sdiffstore,
    ),
    spec(
        "select",
        2,
        &["loading", "stale", "fast"],
        NONE,
        "connection",
        "Changes the selected database (0 only).",
        server::select,
    ),
    spec(
        "set",
        -3,
        W_OOM,
        KEY1,
        "string",
        "Sets the string value of a key, ignoring its type.",
        strings::set,
    ),
    spec(
        "setnx",
        3,
        W_OOM_FAST,
        KEY1,
        "string",
        "Set the string value of a key only when the key doesn't exist.",
        strings::setnx,
    ),
    spec(
        "sinter",
        -2,
        R,
        ALL_KEYS,
        "set",
        "Intersect multiple sets.",
        sets::sinter,
    ),
    spec(
        "sintercard",
        -3,
        &["readonly", "movablekeys"],
        NUMKEYS,
        "set",
        "Intersect multiple sets and return the cardinality of the result.",
        sets::sintercard,
    ),
    spec(
        "sinterstore",
        -3,
        W_OOM,
        ALL_KEYS,
        "set",
        "Intersect multiple sets and store the resulting set in a key.",
        sets::sinterstore,
    ),
    spec(
        "sismember",
        3,
        R_FAST,
        KEY1,
        "set",
        "Determine if a given value is a member of a set.",
        sets::sismember,
    ),
    spec(
        "smembers",
        2,
        R,
        KEY1,
        "set",
        "Get all the members in a set.",
        sets::smembers,
    ),
    spec(
        "smismember",
        -3,
        R_FAST,
        KEY1,
        "set",
        "Returns the membership associated with the given elements for a set.",
        sets::smismember,
    ),
    spec(
        "smove",
        4,
        W_FAST,
        (1, 2, 1),
        "set",
        "Move a member from one set to another.",
        sets::smove,
    ),
    spec(
        "spop",
        -2,
        W_FAST,
        KEY1,
        "set",
        "Remove and return one or multiple random members from a set.",
        sets::spop,
    ),
    spec(
        "srandmember",
        -2,
        R,
        KEY1,
        "set",
        "Get one or multiple random members from a set.",
        sets::srandmember,
    ),
    spec(
        "srem",
        -3,
        W_FAST,
        KEY1,
        "set",
        "Remove one or more members from a set.",
        sets::srem,
    ),
    spec(
        "sscan",
        -3,
        R,
        KEY1,
        "set",
        "Incrementally iterate Set elements.",
        sets::sscan,
    ),
    spec(
        "strlen",
        2,
        R_FAST,
        KEY1,
        "string",
        "Returns the length of a string value.",
        strings::strlen,
    ),
    spec(
        "sunion",
        -2,
        R,
        ALL_KEYS,
        "set",
        "Add multiple sets.",
        sets::sunion,
    ),
    spec(
        "sunionstore",
        -3,
        W_OOM,
        ALL_KEYS,
        "set",
        "Add multiple sets and store the resulting set in a key.",
        sets::sunionstore,
    ),
    spec(
        "ttl",
        2,
        R_FAST,
        KEY1,
        "generic",
        "Returns the expiration time in seconds of a key.",
        keys::ttl,
    ),
    spec(
        "type",
        2,
        R_FAST,
        KEY1,
        "generic",
        "Determines the type of value stored at a key.",
        keys::type_,
    ),
    spec(
        "unlink",
        -2,
        W_FAST,
        ALL_KEYS,
        "generic",
        "Asynchronously deletes one or more keys.",
        keys::unlink,
    ),
];

/// A name of at most 16 bytes, lower-cased and packed big-endian into an integer: packed names
/// sort as the names do, and compare in one instruction (no `memcmp` per probe).
fn pack(name: &[u8]) -> Option<u128> {
    if name.len() > 16 {
        return None;
    }
    let mut bytes = [0u8; 16];
    bytes[..name.len()].copy_from_slice(name);
    bytes.make_ascii_lowercase();
    Some(u128::from_be_bytes(bytes))
}

/// [`COMMANDS`]' names, packed, in the same (sorted) order.
static PACKED: LazyLock<Vec<u128>> = LazyLock::new(|| {
    COMMANDS
        .iter()
        .map(|c| pack(c.name.as_bytes()).expect("names fit 16 bytes"))
        .collect()
});

/// The command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    // A NUL in a name would pack like the end of a shorter name.
    if name.contains(&0) {
        return None;
    }
    let key = pack(name)?;
    PACKED.binary_search(&key).ok().map(|i| &COMMANDS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_found_in_any_case() {
        assert!(
            COMMANDS.windows(2).all(|w| w[0].name < w[1].name),
            "COMMANDS must stay sorted"
        );
        for c in COMMANDS {
            assert_eq!(
                lookup(c.name.to_uppercase().as_bytes()).map(|s| s.name),
                Some(c.name)
            );
        }
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(b"get\0").is_none(), "a NUL does not end a name");
        assert!(lookup(b"getdelxxxxxxxxxxx").is_none(), "longer than any name");
        assert!(lookup(b"").is_none());
    }
}
