//! Replication. As a replica: `REPLICAOF` sets the master [`Follow`] names for the follower
//! thread ([`crate::replica`]), and writes from clients get [`READONLY`] meanwhile. As a
//! master, as far as a replica's stream: `SYNC` and `PSYNC` answer with an RDB of the
//! dataset and turn the connection into a sink of the [`Feed`](crate::feed::Feed), and
//! [`after_command`] decides what each command propagates, in the forms Redis 7.0 rewrites
//! them to so that a replica (or an AOF) replays them to the same dataset whenever it runs:
//!
//! - relative or absolute expiries become absolute milliseconds: `SET ... EX/PX/EXAT/PXAT`
//!   → `SET ... PXAT <ms>`, `SETEX`/`PSETEX` → `SET key value PXAT <ms>`, `EXPIRE`,
//!   `PEXPIRE`, `EXPIREAT` → `PEXPIREAT key <ms>`, `GETEX` → `PEXPIREAT` or `PERSIST`;
//!   one that deletes the key (a time in the past) → `DEL key`;
//! - `GETDEL` → `DEL`; `INCRBYFLOAT` → `SET key <result> KEEPTTL` (no float drift);
//! - a key deleted because its deadline passed (on access, by `SCAN`, by active expiry) →
//!   `DEL key` in its database, before the command that met it;
//! - a command that changed nothing (Redis's `dirty` did not move: [`Db::changes`]) is not
//!   propagated, nor is any command without the `write` flag.
//!
//! - `SPOP` → `SREM key <the members it picked>`, or `DEL key` when it popped the whole set
//!   (the handler says so through [`Ctx::propagate_as`]: the picks are random).
//!
//! What it is not: a master a replica can follow for long. There is no backlog, so `PSYNC`
//! always answers `FULLRESYNC`; `REPLCONF` is not handled; `LMPOP`/`ZMPOP` go out as sent
//! (which replays to the same result), not as the `LPOP`/`ZPOPMIN` Redis rewrites them to.
//! The RDB is encoded under the keyspace lock, on the loop, and goes out as the `SYNC` reply:
//! a dataset whose RDB is larger than `output_buffer_limit` cannot be streamed (the replica
//! is disconnected, as any client over the limit).

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::persist::{all_dbs, all_dbs_mut, changes, snapshot};
use super::strings::parse_i64;
use super::{Args, CommandSpec, Ctx, NOT_INTEGER, ServerInfo};
use crate::db::Db;
use crate::rdb;
use crate::resp::ReplyBuf;

/// A client's write while this server is a replica.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

/// The master this server follows (`REPLICAOF`), for the follower thread
/// ([`crate::replica`]): each `REPLICAOF` starts a new generation, which ends the link of the
/// one before (its socket is shut down) and wakes the thread.
#[derive(Debug, Default)]
pub struct Follow {
    /// Whether a master is set: the one check a write makes.
    replica: AtomicBool,
    state: Mutex<FollowState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct FollowState {
    /// `host:port`.
    master: Option<String>,
    generation: u64,
    link_up: bool,
    /// The current link's socket.
    socket: Option<TcpStream>,
}

impl Follow {
    fn lock(&self) -> MutexGuard<'_, FollowState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether this server is a replica now.
    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::SeqCst)
    }

    /// The master (`host:port`) and whether the link to it is up.
    pub fn master(&self) -> Option<(String, bool)> {
        let s = self.lock();
        s.master.clone().map(|m| (m, s.link_up))
    }

    /// Follows `master` (`None`: none, `REPLICAOF NO ONE`); `false` if it follows that one
    /// already.
    pub fn set(&self, master: Option<String>) -> bool {
        let mut s = self.lock();
        if s.master == master && master.is_some() {
            return false;
        }
        self.replica.store(master.is_some(), Ordering::SeqCst);
        s.master = master;
        s.generation += 1;
        s.link_up = false;
        if let Some(socket) = s.socket.take() {
            let _ = socket.shutdown(Shutdown::Both);
        }
        self.changed.notify_all();
        true
    }

    /// Ends the current link and wakes the follower (the server stops).
    pub fn wake(&self) {
        let mut s = self.lock();
        if let Some(socket) = s.socket.take() {
            let _ = socket.shutdown(Shutdown::Both);
        }
        self.changed.notify_all();
    }

    /// Waits for a master of a generation after `seen`: `None` once `stop` is set.
    pub fn next_master(&self, seen: u64, stop: &AtomicBool) -> Option<(String, u64)> {
        let mut s = self.lock();
        loop {
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            if s.generation != seen {
                if let Some(m) = &s.master {
                    return Some((m.clone(), s.generation));
                }
            }
            s = self.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Whether `generation` is still the current one.
    pub fn is_current(&self, generation: u64) -> bool {
        self.lock().generation == generation
    }

    /// Waits up to `timeout` for a new generation (or `stop`); whether one came (or stop).
    pub fn wait_change(&self, generation: u64, timeout: Duration, stop: &AtomicBool) -> bool {
        let s = self.lock();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, timeout, |s| {
                s.generation == generation && !stop.load(Ordering::SeqCst)
            })
            .unwrap_or_else(PoisonError::into_inner);
        s.generation != generation || stop.load(Ordering::SeqCst)
    }

    /// Keeps `socket` as the link of `generation` (to shut it down when that ends); `false`
    /// if that generation ended already.
    pub fn attach(&self, generation: u64, socket: &TcpStream) -> bool {
        let mut s = self.lock();
        if s.generation != generation {
            return false;
        }
        s.socket = socket.try_clone().ok();
        true
    }

    /// Records whether the link of `generation` is up (ignored for an older one).
    pub fn set_link_up(&self, generation: u64, up: bool) {
        let mut s = self.lock();
        if s.generation == generation {
            s.link_up = up;
            if !up {
                s.socket = None;
            }
        }
    }
}

/// `REPLICAOF host port` (follow that master: the follower thread connects, loads its
/// dataset and applies its writes; clients get `READONLY` for theirs) or `REPLICAOF NO ONE`
/// (follow none; the dataset stays). `SLAVEOF` is the same command.
pub fn replicaof(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (host, port) = (args.get(1), args.get(2));
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        ctx.server.follow.set(None);
        return out.ok();
    }
    let Some(port) = parse_i64(port).and_then(|p| u16::try_from(p).ok()) else {
        return out.error(NOT_INTEGER);
    };
    let master = format!("{}:{port}", String::from_utf8_lossy(host));
    if ctx.server.follow.set(Some(master)) {
        out.ok();
    } else {
        out.simple("OK Already connected to specified master");
    }
}

/// `SYNC`: the RDB of every database as `$<len>\r\n<bytes>` (no CRLF after it, as Redis
/// sends it), then every write as it happens.
pub fn sync(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    start_stream(ctx, out);
}

/// `PSYNC replicationid offset`: always a full resynchronization (`+FULLRESYNC <run id> 0`,
/// then as `SYNC`).
pub fn psync(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    if ctx.client.replica {
        return out.error("ERR Replica already attached");
    }
    out.simple(&format!("FULLRESYNC {} 0", ctx.server.run_id));
    start_stream(ctx, out);
}

fn start_stream(ctx: &mut Ctx<'_>, out: &mut ReplyBuf) {
    if ctx.client.replica {
        return out.error("ERR Replica already attached");
    }
    let now = ctx.now_ms;
    let (snap, _) = snapshot(&all_dbs(ctx), now);
    let mut bytes = Vec::new();
    rdb::encode(&snap, now, &mut bytes);
    drop(snap);
    out.raw(format!("${}\r\n", bytes.len()).as_bytes());
    out.raw(&bytes);
    for db in all_dbs_mut(ctx) {
        db.log_expired(true);
        db.take_expired();
    }
    let limit = ctx.server.config.output_buffer_limit;
    ctx.server.feed.attach(ctx.client.id, limit);
    ctx.client.replica = true;
}

/// Propagates what the command `spec` `args`, run in database `db`, did, after the keys
/// expiry deleted meanwhile ([`expired`], which the caller runs first): the command if it is a
/// write that changed something (`changes_before`: the [`Db::changes`] sum before it ran): as
/// the handler said (`propagate_as`, for a random effect), rewritten ([`rewrite`]), or as sent.
/// Called only while the feed has a sink.
#[allow(clippy::too_many_arguments)] // the command's whole context, passed through once
pub fn after_command(
    server: &ServerInfo,
    dbs: &mut [Db],
    db: usize,
    spec: &CommandSpec,
    args: &Args<'_>,
    propagate_as: Option<Vec<Vec<u8>>>,
    changes_before: u64,
    now_ms: u64,
) {
    if !spec.has("write") || changes(dbs.iter()) == changes_before {
        return;
    }
    let rewritten = propagate_as.or_else(|| dbs.get(db).and_then(|d| rewrite(spec.name, args, d, now_ms)));
    match rewritten {
        Some(rewritten) => server.feed.command(db, &rewritten),
        None => server.feed.command(db, &args.iter_from(0).collect::<Vec<_>>()),
    }
}

/// Propagates the keys expiry deleted, as `DEL`s in their databases (while the feed has a
/// sink), and sends their `expired` keyspace notifications ([`notify`](super::notify); loops
/// with subscribers are added to `wake`).
pub fn expired(server: &ServerInfo, dbs: &mut [Db], wake: &mut Vec<usize>) {
    let feeding = server.feed.is_active();
    for (i, db) in dbs.iter_mut().enumerate() {
        for key in db.take_expired() {
            if feeding {
                server.feed.command(i, &[b"DEL".as_slice(), &key]);
            }
            super::notify::send(server, db, i, super::notify::EXPIRED, "expired", &key, wake);
        }
    }
}

/// The deterministic form of a command whose effect depends on when it runs, read from the
/// state it left (`db` after it ran); `None`: propagate it as sent.
fn rewrite(name: &str, args: &Args<'_>, db: &Db, now_ms: u64) -> Option<Vec<Vec<u8>>> {
    // Every rewrite is of a command with a key; `FLUSHALL` and the like go as sent.
    if args.len() < 2 {
        return None;
    }
    let key = args.get(1);
    let cmd = |words: &[&[u8]]| Some(words.iter().map(|w| w.to_vec()).collect());
    let deadline = db.deadline_of(key, now_ms);
    let ms = |d: u64| d.to_string().into_bytes();
    match (name, deadline) {
        ("getdel", _)
        | (
            "set" | "setex" | "psetex" | "getex" | "expire" | "pexpire" | "expireat" | "pexpireat"
            | "restore",
            None,
        ) => cmd(&[b"DEL", key]),
        ("set", Some(Some(d))) => {
            let mut words: Vec<Vec<u8>> = args.iter_from(0).map(<[u8]>::to_vec).collect();
            let at = (3..words.len()).find(|&i| {
                [b"EX".as_slice(), b"PX", b"EXAT", b"PXAT"]
                    .iter()
                    .any(|o| words[i].eq_ignore_ascii_case(o))
            })?;
            words[at] = b"PXAT".to_vec();
            *words.get_mut(at + 1)? = ms(d);
            Some(words)
        }
        ("setex" | "psetex", Some(Some(d))) => cmd(&[b"SET", key, args.get(3), b"PXAT", &ms(d)]),
        ("getex" | "expire" | "pexpire" | "expireat" | "pexpireat", Some(Some(d))) => {
            cmd(&[b"PEXPIREAT", key, &ms(d)])
        }
        ("getex", Some(None)) => cmd(&[b"PERSIST", key]),
        // A relative TTL made absolute, as Redis's `restoreCommand` propagates it.
        ("restore", Some(Some(d))) if !args.iter_from(4).any(|a| a.eq_ignore_ascii_case(b"ABSTTL")) => {
            let mut words: Vec<Vec<u8>> = args.iter_from(0).map(<[u8]>::to_vec).collect();
            words[2] = ms(d);
            words.push(b"ABSTTL".to_vec());
            Some(words)
        }
        ("incrbyfloat", Some(_)) => match db.peek(key, now_ms) {
            Some(crate::db::Value::Str(v)) => cmd(&[b"SET", key, v, b"KEEPTTL"]),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::cmd::harness::{Harness, NULL, OK};

    /// A harness whose client is a replica (`SYNC`), and the stream it has received since, as
    /// text: one command per line, arguments separated by spaces.
    fn replica() -> Harness {
        let mut h = Harness::new();
        let reply = h.cmd("SYNC");
        assert!(reply.starts_with('$') && reply.contains("REDIS0010"), "{reply}");
        h
    }

    fn stream(h: &Harness) -> Vec<String> {
        let bytes = h.server.feed.take(h.client.id).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let mut lines = Vec::new();
        let mut parts = text.split("\r\n");
        while let Some(head) = parts.next() {
            let Some(n) = head.strip_prefix('*') else { continue };
            let words: Vec<&str> = (0..n.parse().unwrap()).map(|_| parts.nth(1).unwrap()).collect();
            lines.push(words.join(" "));
        }
        lines
    }

    #[test]
    fn expiries_become_absolute_and_deletions_del() {
        let mut h = replica();
        let now = h.now_ms;
        h.cmd("SET a v EX 100");
        h.cmd("SETEX b 100 v");
        h.cmd("EXPIRE b 200");
        h.cmd("GETEX b PERSIST");
        h.cmd("EXPIRE a -1");
        h.cmd("GETDEL b");
        h.cmd("SET f 1.5");
        h.cmd("INCRBYFLOAT f 2");
        assert_eq!(
            stream(&h),
            [
                "SELECT 0".to_string(),
                format!("SET a v PXAT {}", now + 100_000),
                format!("SET b v PXAT {}", now + 100_000),
                format!("PEXPIREAT b {}", now + 200_000),
                "PERSIST b".into(),
                "DEL a".into(),
                "DEL b".into(),
                "SET f 1.5".into(),
                "SET f 3.5 KEEPTTL".into(),
            ]
        );
    }

    #[test]
    fn reads_and_no_ops_propagate_nothing_but_expired_keys() {
        let mut h = replica();
        h.cmd("SET k v PX 10");
        assert_eq!(stream(&h).len(), 2);
        assert_eq!(h.cmd("SET k w NX"), NULL);
        h.cmd("GET other");
        h.cmd("EXPIRE missing 10");
        assert!(stream(&h).is_empty());
        h.now_ms += 11;
        h.cmd("GET k");
        assert_eq!(stream(&h), ["DEL k"]);
    }

    /// Regression: a write with no key (`FLUSHALL`, `FLUSHDB`) while a replica was attached
    /// read its missing key and panicked the loop (Redis's zset unit, `ZRANGESTORE basic`).
    #[test]
    fn writes_without_a_key_propagate_as_sent() {
        let mut h = replica();
        h.cmd("SET k v");
        h.cmd("FLUSHALL");
        h.cmd("SET k v");
        h.cmd("FLUSHDB");
        assert_eq!(
            stream(&h),
            ["SELECT 0", "SET k v", "FLUSHALL", "SET k v", "FLUSHDB"]
        );
    }

    #[test]
    fn spop_propagates_the_members_it_picked() {
        let mut h = replica();
        h.cmd("SADD s a b c");
        let reply = h.cmd("SPOP s");
        let picked = reply.split("\r\n").nth(1).unwrap().to_string();
        assert_eq!(
            stream(&h),
            [
                "SELECT 0".to_string(),
                "SADD s a b c".into(),
                format!("SREM s {picked}")
            ]
        );
        h.cmd("SPOP s 10");
        assert_eq!(stream(&h), ["DEL s"]);
        h.cmd("SPOP s");
        assert!(stream(&h).is_empty(), "nothing popped, nothing propagated");
    }

    #[test]
    fn transactions_wrap_two_writes_or_more() {
        let mut h = replica();
        for line in [
            "MULTI", "INCR x", "GET x", "INCR x", "EXEC", "MULTI", "INCR y", "EXEC",
        ] {
            h.cmd(line);
        }
        assert_eq!(
            stream(&h),
            ["SELECT 0", "MULTI", "INCR x", "INCR x", "EXEC", "INCR y"]
        );
        assert_eq!(h.cmd("SELECT 2"), OK);
        h.cmd("SET z 1");
        assert_eq!(stream(&h), ["SELECT 2", "SET z 1"]);
    }
}
