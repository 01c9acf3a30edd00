//! Keyspace notifications (`notify-keyspace-events`), as Redis 7.0's `notify.c` sends them:
//! for a change of `key` in database `db` named `event`, a message `event` on
//! `__keyspace@<db>__:<key>` (flag `K`) and a message `key` on `__keyevent@<db>__:<event>`
//! (flag `E`), when the event's class is enabled (`g $ l s h z x e t d`, `A` for all of them).
//! They go through the pub/sub [`Registry`](super::pubsub::Registry) like any `PUBLISH`.
//!
//! One hook, not one per command: while notifications are on, every database logs the keys
//! commands change ([`Db::log_touched`]), and [`after_command`] names each key's event from the
//! command that ran ([`event`]). Expired keys come from the expiry log that replication reads
//! too ([`replication::expired`](super::replication::expired)).
//!
//! Where this differs from Redis, and why:
//! - One event per changed key and command, named after the command (Redis's names: `HMSET`
//!   sends `hset`, `INCR` `incrby`, `RENAME` `rename_from` and `rename_to`, ...), plus a `del`
//!   when the command left the key empty and deleted. Redis sends a few commands' second events
//!   too (`SET key v EX 10` sends `set` and `expire`); Ferry sends the first only.
//! - `new` (`n`), `evicted` (`e`), key-miss (`m`), stream (`t`) and module (`d`) events are
//!   accepted in the flags and reported back, but never sent: Ferry has no eviction, streams or
//!   modules, and does not track key creation.

use std::sync::PoisonError;
use std::sync::atomic::{AtomicU32, Ordering};

use super::pubsub::Published;
use super::{Args, CommandSpec, ServerInfo};
use crate::db::Db;

/// `K`: keyspace channel messages.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: keyevent channel messages.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (`DEL`, `EXPIRE`, `RENAME`, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: keys expired.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: keys evicted (never sent: Ferry does not evict).
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands (never sent: Ferry has no streams).
pub const STREAM: u32 = 1 << 10;
/// `m`: key misses (never sent).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events (never sent: Ferry has no modules).
pub const MODULE: u32 = 1 << 13;
/// `n`: new keys (never sent).
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`, as in Redis.
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The flag letters of the classes `A` stands for, in the order Redis prints them.
const CLASSES: &[(u8, u32)] = &[
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
];

/// The flags written after the classes.
const OTHERS: &[(u8, u32)] = &[(b'K', KEYSPACE), (b'E', KEYEVENT), (b'm', KEY_MISS), (b'n', NEW)];

/// The server's `notify-keyspace-events` (0, Redis's default: off).
#[derive(Debug, Default)]
pub struct Notify {
    flags: AtomicU32,
}

impl Notify {
    /// The flags now.
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Sets the flags. The caller switches the databases' logs to match ([`Notify::logs`]),
    /// under the keyspace lock.
    pub fn set(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// Whether any notification can be sent: a channel kind and a class are both on.
    pub fn is_on(&self) -> bool {
        let f = self.flags();
        f & (KEYSPACE | KEYEVENT) != 0 && f & !(KEYSPACE | KEYEVENT) != 0
    }

    /// Whether expired keys are notified (the databases must log them).
    pub fn wants_expired(&self) -> bool {
        self.is_on() && self.flags() & EXPIRED != 0
    }

    /// Switches `db`'s logs of changed and expired keys to what the flags need;
    /// `feeding`: a replication stream needs the expired keys too.
    pub fn logs(&self, db: &mut Db, feeding: bool) {
        db.log_touched(self.is_on());
        db.log_expired(feeding || self.wants_expired());
    }
}

/// Parses a `notify-keyspace-events` value (Redis's `keyspaceEventsStringToFlags`); `None`
/// for a character that is not a flag.
pub fn parse_flags(value: &[u8]) -> Option<u32> {
    value.iter().try_fold(0, |flags, &c| {
        let bit = match c {
            b'A' => ALL,
            _ => CLASSES.iter().chain(OTHERS).find(|(l, _)| *l == c)?.1,
        };
        Some(flags | bit)
    })
}

/// The flags as Redis prints them (`keyspaceEventsFlagsToString`): `A` or the classes, then
/// `K`, `E`, `m`, `n`.
pub fn format_flags(flags: u32) -> String {
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        s.extend(
            CLASSES
                .iter()
                .filter(|(_, b)| flags & b != 0)
                .map(|(l, _)| char::from(*l)),
        );
    }
    s.extend(
        OTHERS
            .iter()
            .filter(|(_, b)| flags & b != 0)
            .map(|(l, _)| char::from(*l)),
    );
    s
}

/// The `CONFIG SET` error for a value [`parse_flags`] refuses.
pub const BAD_FLAGS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// Sends `event` about `key` in database `db`, if `class` is on: to the keyspace and
/// keyevent channels the flags enable. Loops with subscribers are added to `wake`. A message
/// the pool has no room for is not sent.
pub fn send(
    server: &ServerInfo,
    db: &Db,
    index: usize,
    class: u32,
    event: &str,
    key: &[u8],
    wake: &mut Vec<usize>,
) {
    let flags = server.notify.flags();
    if flags & class == 0 {
        return;
    }
    let pool = db.pool();
    let mut messages = Vec::with_capacity(2);
    if flags & KEYSPACE != 0 {
        let channel = [format!("__keyspace@{index}__:").as_bytes(), key].concat();
        messages.push((channel, event.as_bytes()));
    }
    if flags & KEYEVENT != 0 {
        messages.push((format!("__keyevent@{index}__:{event}").into_bytes(), key));
    }
    let mut registry = server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    for (channel, payload) in messages {
        if let (Ok(channel), Ok(payload)) = (pool.copy_from(&channel), pool.copy_from(payload)) {
            registry.publish(
                Published {
                    shard: false,
                    channel,
                    payload,
                },
                wake,
            );
        }
    }
}

/// Sends the events of the command `spec` `args` (run with database `selected` selected):
/// one for each key it changed, in every database ([`Db::take_touched`]), and `del` for a key
/// it left deleted.
pub fn after_command(
    server: &ServerInfo,
    dbs: &mut [Db],
    selected: usize,
    spec: &CommandSpec,
    args: &Args<'_>,
    now_ms: u64,
    wake: &mut Vec<usize>,
) {
    for (index, db) in dbs.iter_mut().enumerate() {
        let mut touched = db.take_touched();
        if touched.is_empty() {
            continue;
        }
        dedup_in_order(&mut touched);
        if matches!(spec.name, "rpoplpush" | "brpoplpush" | "lmove" | "blmove") {
            // Redis names the push to the destination first, then the pop.
            touched.reverse();
        }
        for key in touched {
            let arg = args.iter_from(1).position(|a| a == &key[..]).map_or(0, |p| p + 1);
            let Some((class, name)) = event(spec, args, arg, index == selected) else {
                continue;
            };
            send(server, db, index, class, name, &key, wake);
            if class != GENERIC && db.peek(&key, now_ms).is_none() {
                send(server, db, index, GENERIC, "del", &key, wake);
            }
        }
    }
}

/// Drops the repeats of each key, keeping the first.
fn dedup_in_order(keys: &mut Vec<Box<[u8]>>) {
    let mut i = 0;
    while i < keys.len() {
        if keys[..i].contains(&keys[i]) {
            keys.remove(i);
        } else {
            i += 1;
        }
    }
}

/// The class and name of the event the command `spec` `args` sends for the key at argument
/// `arg` (0: not an argument), in the selected database (`selected`) or another (`MOVE`'s
/// target); `None`: the command sends none (`FLUSHDB`, `SWAPDB`).
pub fn event(spec: &CommandSpec, args: &Args<'_>, arg: usize, selected: bool) -> Option<(u32, &'static str)> {
    let word = |i: usize| (i < args.len()).then(|| args.get(i).to_ascii_lowercase());
    let pop = |dir: Option<Vec<u8>>, left: &'static str, right: &'static str| {
        if dir.as_deref() == Some(b"left") || dir.as_deref() == Some(b"min") {
            left
        } else {
            right
        }
    };
    // `LMPOP numkeys key... LEFT|RIGHT`, `BLMPOP timeout numkeys ...`: the word after the keys.
    let after_keys = |numkeys_at: usize| {
        let n = super::strings::parse_i64(args.get(numkeys_at)).unwrap_or(0);
        word(numkeys_at + 1 + usize::try_from(n).unwrap_or(0))
    };
    let generic = |name| Some((GENERIC, name));
    let name: &'static str = match spec.name {
        "flushdb" | "flushall" | "swapdb" => return None,
        "del" | "unlink" | "getdel" => return generic("del"),
        "expire" | "pexpire" | "expireat" | "pexpireat" | "getex" => return generic("expire"),
        "persist" => return generic("persist"),
        "restore" => return generic("restore"),
        "copy" => return generic("copy_to"),
        "rename" | "renamenx" => return generic(if arg == 1 { "rename_from" } else { "rename_to" }),
        "move" => return generic(if selected { "move_from" } else { "move_to" }),
        "sort" => return Some((LIST, "sortstore")),
        "hmset" | "hsetnx" => "hset",
        "setnx" | "setex" | "psetex" | "getset" | "mset" | "msetnx" => "set",
        "incr" | "decr" | "incrby" | "decrby" => "incrby",
        "blpop" => "lpop",
        "brpop" => "rpop",
        "rpoplpush" | "brpoplpush" => pop(None, "", if arg == 1 { "rpop" } else { "lpush" }),
        "lmove" | "blmove" if arg == 1 => pop(word(3), "lpop", "rpop"),
        "lmove" | "blmove" => pop(word(4), "lpush", "rpush"),
        "lmpop" => pop(after_keys(1), "lpop", "rpop"),
        "blmpop" => pop(after_keys(2), "lpop", "rpop"),
        "smove" => pop(None, "", if arg == 1 { "srem" } else { "sadd" }),
        "zincrby" => "zincr",
        "geoadd" => "zadd",
        "georadius" | "georadiusbymember" => "georadiusstore",
        "bzpopmin" => "zpopmin",
        "bzpopmax" => "zpopmax",
        "zmpop" => pop(after_keys(1), "zpopmin", "zpopmax"),
        "bzmpop" => pop(after_keys(2), "zpopmin", "zpopmax"),
        name => name,
    };
    let class = match spec.group {
        "string" => STRING,
        "list" => LIST,
        "set" => SET,
        "hash" => HASH,
        "sorted-set" | "geo" => ZSET,
        _ => GENERIC,
    };
    Some((class, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_and_print_as_redis() {
        for (given, printed) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("Ex", "xE"),
            ("", ""),
            ("AKEmn", "AKEmn"),
            ("g$lshzxetdKE", "AKE"),
        ] {
            assert_eq!(
                format_flags(parse_flags(given.as_bytes()).unwrap()),
                printed,
                "{given}"
            );
        }
        assert_eq!(parse_flags(b"KEw"), None);
        assert_eq!(parse_flags(b"a"), None);
    }

    #[test]
    fn on_needs_a_channel_kind_and_a_class() {
        let n = Notify::default();
        for (flags, on, expired) in [
            ("", false, false),
            ("K", false, false),
            ("A", false, false),
            ("Kg", true, false),
            ("Ex", true, true),
            ("KA", true, true),
        ] {
            n.set(parse_flags(flags.as_bytes()).unwrap());
            assert_eq!((n.is_on(), n.wants_expired()), (on, expired), "{flags}");
        }
    }
}
