//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, with Redis 7.0's semantics.
//!
//! The state is the connection's ([`Client::multi`](super::Client), [`Client::watched`]),
//! kept between requests as protocol state: [`execute`](super::execute) queues a command
//! while a transaction is open (replying `+QUEUED`), marks the transaction aborted when a
//! command is refused before it would be queued (unknown, wrong arity, `NOAUTH`, `OOM`: `EXEC`
//! then replies `EXECABORT`), and runs `EXEC` itself, since the queued commands may `SELECT`
//! another database between them. `MULTI`, `EXEC`, `DISCARD`, `WATCH` and `QUIT` run at once
//! even inside a transaction.
//!
//! `WATCH` registers each key with its database ([`Db::watch`]), which from then on counts
//! the key's changes; `EXEC` replies a null array and runs nothing when any of them changed:
//! a write, a deletion, an expiry (lazy or not), `FLUSHDB`/`FLUSHALL`, `SWAPDB` or `MOVE`.
//! Every path ends the watch and unregisters the keys (`EXEC`, `DISCARD`, `UNWATCH`, and
//! [`forget_watched`] when the client leaves). As in Redis, a write that changes nothing
//! (`SET k v NX` on an existing key) is not a change; unlike Redis, a hash, set or sorted set
//! counts as changed when a command opened it to write even if nothing was removed or added.

use super::{Args, Client, CommandSpec, Ctx, OwnedArgs};
use crate::db::{Db, WatchMark};
use crate::resp::ReplyBuf;

/// `EXEC` after a command was refused while queueing.
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// An open transaction.
#[derive(Debug, Default, Clone)]
pub struct Multi {
    /// The queued commands, in order.
    queued: Vec<Queued>,
    /// A command was refused while queueing: `EXEC` aborts.
    aborted: bool,
}

impl Multi {
    /// Commands queued so far (`CLIENT LIST`'s `multi=`).
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// Whether nothing is queued yet.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// Marks the transaction aborted (a command was refused while queueing).
    pub fn abort(&mut self) {
        self.aborted = true;
    }

    /// Queues a copy of `args` (the read buffer is reused before `EXEC`).
    pub fn queue(&mut self, spec: &'static CommandSpec, args: &Args<'_>) {
        self.queued.push(Queued {
            spec,
            args: OwnedArgs::from(args),
        });
    }
}

/// One queued command, its arguments copied.
#[derive(Debug, Clone)]
struct Queued {
    spec: &'static CommandSpec,
    args: OwnedArgs,
}

/// A watched key and what it was when `WATCH` ran.
#[derive(Debug, Clone)]
pub struct Watched {
    db: usize,
    key: Box<[u8]>,
    mark: WatchMark,
}

/// Ends `client`'s watch: its keys are unregistered from their databases (`EXEC`,
/// `DISCARD`, `UNWATCH`, and the server when the client leaves).
pub fn forget_watched(dbs: &mut [Db], client: &mut Client) {
    for w in client.watched.drain(..) {
        if let Some(db) = dbs.get_mut(w.db) {
            db.unwatch(&w.key);
        }
    }
}

/// [`forget_watched`] from a handler.
pub(super) fn unwatch_all(ctx: &mut Ctx<'_>) {
    for w in std::mem::take(&mut ctx.client.watched) {
        if let Some(db) = ctx.db_at(w.db) {
            db.unwatch(&w.key);
        }
    }
}

/// Whether `spec` runs at once inside a transaction rather than being queued.
pub fn runs_at_once(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// `EXEC` inside a transaction: runs the queued commands (an array of their replies), or
/// replies `EXECABORT` or, when a watched key changed, a null array. The transaction and the
/// watch end either way. `run` executes one queued command as [`execute`](super::execute)
/// would after its checks.
pub fn exec(
    dbs: &mut [Db],
    client: &mut Client,
    now_ms: u64,
    out: &mut ReplyBuf,
    mut run: impl FnMut(&mut [Db], &mut Client, &'static CommandSpec, &Args<'_>, &mut ReplyBuf),
) {
    let multi = client.multi.take().unwrap_or_default();
    let changed = client.watched.iter().any(|w| {
        dbs.get(w.db)
            .is_none_or(|db| db.watch_changed(&w.key, w.mark, now_ms))
    });
    forget_watched(dbs, client);
    if multi.aborted {
        return out.error(EXECABORT);
    }
    if changed {
        return out.null_array();
    }
    out.array(multi.queued.len());
    for q in &multi.queued {
        run(dbs, client, q.spec, &q.args.args(), out);
    }
}

/// `EXEC` outside a transaction.
pub fn exec_without_multi(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.error("ERR EXEC without MULTI");
}

/// `MULTI`: opens a transaction.
pub fn multi(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    if ctx.client.multi.is_some() {
        return out.error("ERR MULTI calls can not be nested");
    }
    ctx.client.multi = Some(Multi::default());
    out.ok();
}

/// `DISCARD`: drops the transaction and the watch.
pub fn discard(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    if ctx.client.multi.take().is_none() {
        return out.error("ERR DISCARD without MULTI");
    }
    unwatch_all(ctx);
    out.ok();
}

/// `WATCH key [key ...]`: remembers the keys' versions in the selected database.
pub fn watch(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if ctx.client.multi.is_some() {
        return out.error("ERR WATCH inside MULTI is not allowed");
    }
    let db = ctx.client.db;
    for key in args.iter_from(1) {
        if ctx.client.watched.iter().any(|w| w.db == db && *w.key == *key) {
            continue;
        }
        let mark = ctx.db.watch(key, ctx.now_ms);
        ctx.client.watched.push(Watched {
            db,
            key: key.into(),
            mark,
        });
    }
    out.ok();
}

/// `UNWATCH`: forgets the watched keys.
pub fn unwatch(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    unwatch_all(ctx);
    out.ok();
}

#[cfg(test)]
mod tests {
    use crate::cmd::harness::*;

    const QUEUED: &str = "+QUEUED\r\n";

    #[test]
    fn queued_commands_run_at_exec_in_order() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("MULTI"), OK);
        assert_eq!(h.cmd("SET k 1"), QUEUED);
        assert_eq!(h.cmd("INCR k"), QUEUED);
        assert_eq!(
            h.cmd("LPUSH k x"),
            QUEUED,
            "a type error shows at EXEC, not before"
        );
        assert_eq!(h.cmd("GET k"), QUEUED);
        assert_eq!(h.cmd("GET k"), QUEUED);
        assert_eq!(h.cmd("EXISTS k"), QUEUED);
        assert_eq!(
            h.cmd("EXEC"),
            format!(
                "*6\r\n{OK}:2\r\n{}{}{}:1\r\n",
                err(crate::cmd::WRONGTYPE),
                bulk("2"),
                bulk("2")
            )
        );
        assert_eq!(h.cmd("EXEC"), err("ERR EXEC without MULTI"));
        assert_eq!(h.cmd("DISCARD"), err("ERR DISCARD without MULTI"));
    }

    #[test]
    fn a_refused_command_aborts_the_transaction() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("MULTI"), OK);
        assert_eq!(h.cmd("SET k 1"), QUEUED);
        assert_eq!(
            h.cmd("NOSUCH x"),
            err("ERR unknown command 'NOSUCH', with args beginning with: 'x' ")
        );
        assert_eq!(h.cmd("GET"), err(&crate::cmd::wrong_arity("get")));
        assert_eq!(h.cmd("MULTI"), err("ERR MULTI calls can not be nested"));
        assert_eq!(h.cmd("WATCH k"), err("ERR WATCH inside MULTI is not allowed"));
        assert_eq!(h.cmd("EXEC"), err(super::EXECABORT));
        assert_eq!(h.cmd("EXISTS k"), int(0), "nothing ran");
        h.cmd("MULTI");
        h.cmd("SET k 1");
        assert_eq!(
            h.cmd("EXEC now"),
            err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command")
        );
        assert_eq!(h.cmd("EXEC"), err("ERR EXEC without MULTI"));
        assert_eq!(h.cmd("MULTI"), OK, "the transaction is closed");
        assert_eq!(h.cmd("DISCARD"), OK);
        assert_eq!(h.cmd("GET k"), NULL);
    }

    #[test]
    fn a_select_inside_exec_changes_the_database_of_what_follows() {
        let mut h = Harness::new();
        h.cmd("MULTI");
        h.cmd("SELECT 2");
        h.cmd("SET k two");
        assert_eq!(h.cmd("EXEC"), format!("*2\r\n{OK}{OK}"));
        assert_eq!(h.client.db, 2);
        assert_eq!(h.cmd("GET k"), bulk("two"));
        h.cmd("SELECT 0");
        assert_eq!(h.cmd("GET k"), NULL);
    }

    #[test]
    fn watch_fails_exec_on_any_change_of_a_watched_key() {
        let mut h = Harness::new();
        let fails = |h: &mut Harness, setup: &str, change: &str| {
            h.cmd("FLUSHALL");
            if !setup.is_empty() {
                h.cmd(setup);
            }
            assert_eq!(h.cmd("WATCH k"), OK);
            h.cmd(change);
            h.cmd("MULTI");
            h.cmd("SET done 1");
            let reply = h.cmd("EXEC");
            assert_eq!(reply, NULL_ARRAY, "{setup} / {change}");
            assert_eq!(h.cmd("EXISTS done"), int(0));
        };
        fails(&mut h, "SET k v", "SET k w");
        fails(&mut h, "SET k v", "SET k v");
        fails(&mut h, "SET k v", "DEL k");
        fails(&mut h, "SET k v", "EXPIRE k 100");
        fails(&mut h, "SET k 1", "INCR k");
        fails(&mut h, "", "SET k v");
        fails(&mut h, "RPUSH k a", "LPOP k");
        fails(&mut h, "RPUSH k a", "RPUSH k b");
        fails(&mut h, "SADD k a", "SADD k b");
        fails(&mut h, "HSET k f 1", "HSET k f 2");
        fails(&mut h, "ZADD k 1 m", "ZADD k 2 m");
        fails(&mut h, "SET k v", "FLUSHDB");
        fails(&mut h, "SET k v", "FLUSHALL");
        fails(&mut h, "SET k v", "SWAPDB 0 1");
        fails(&mut h, "SET k v", "MOVE k 1");
        fails(&mut h, "SET k v", "RENAME k other");
        fails(&mut h, "SET other v", "RENAME other k");
    }

    #[test]
    fn watch_lets_exec_run_when_nothing_changed() {
        let mut h = Harness::new();
        let runs = |h: &mut Harness, setup: &str, between: &str| {
            h.cmd("FLUSHALL");
            if !setup.is_empty() {
                h.cmd(setup);
            }
            assert_eq!(h.cmd("WATCH k"), OK);
            if !between.is_empty() {
                h.cmd(between);
            }
            h.cmd("MULTI");
            h.cmd("SET done 1");
            assert_eq!(h.cmd("EXEC"), format!("*1\r\n{OK}"), "{setup} / {between}");
        };
        runs(&mut h, "SET k v", "");
        runs(&mut h, "SET k v", "GET k");
        runs(&mut h, "SET k v", "SET other v");
        runs(&mut h, "SET k v", "SET k w NX");
        runs(&mut h, "", "DEL k");
        runs(&mut h, "", "FLUSHDB");
        runs(&mut h, "SET k v", "SWAPDB 2 3");
        runs(&mut h, "SADD k a", "SREM k b");
        runs(&mut h, "RPUSH k a", "LREM k 0 b");
        runs(&mut h, "RPUSH k a", "LPUSH other b");
    }

    #[test]
    fn expiry_of_a_watched_key_fails_exec_but_a_stale_key_does_not() {
        let mut h = Harness::new();
        h.cmd("SET k v PX 10");
        h.cmd("WATCH k");
        h.now_ms += 11;
        h.cmd("MULTI");
        h.cmd("PING");
        assert_eq!(h.cmd("EXEC"), NULL_ARRAY, "expired after WATCH: changed");
        // Already past its deadline when watched: absent then, absent now.
        h.cmd("SET s v PX 10");
        h.now_ms += 11;
        h.cmd("WATCH s");
        h.cmd("DEL s");
        h.cmd("MULTI");
        h.cmd("PING");
        assert_eq!(h.cmd("EXEC"), "*1\r\n+PONG\r\n");
    }

    #[test]
    fn exec_discard_and_unwatch_end_the_watch() {
        let mut h = Harness::new();
        for end in ["EXEC", "DISCARD", "UNWATCH"] {
            h.cmd("WATCH k");
            if end == "UNWATCH" {
                assert_eq!(h.cmd("UNWATCH"), OK);
            } else {
                h.cmd("MULTI");
                h.cmd(end);
            }
            h.cmd("SET k changed");
            h.cmd("MULTI");
            h.cmd("PING");
            assert_eq!(h.cmd("EXEC"), "*1\r\n+PONG\r\n", "after {end}");
        }
        assert_eq!(h.cmd("UNWATCH"), OK, "with nothing watched");
    }

    #[test]
    fn null_array_in_resp3() {
        let mut h = Harness::new();
        h.cmd("HELLO 3");
        h.cmd("WATCH k");
        h.cmd("SET k v");
        h.cmd("MULTI");
        assert_eq!(h.cmd("EXEC"), "_\r\n");
    }
}
