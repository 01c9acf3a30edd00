//! Blocking commands: `BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`, `BZPOPMIN`,
//! `BZPOPMAX`, `BZMPOP`, and `CLIENT UNBLOCK`, as Redis 7.0's `blocked.c` serves them.
//!
//! A blocking command first runs as its non-blocking form (`LPOP`, `LMOVE`, `LMPOP`,
//! `ZPOPMIN`, `ZMPOP`: the same code). When none of its keys holds data it replies nothing
//! and the client waits: a [`Waiter`] (a copy of the command, its database, its keys) goes
//! into the server-wide [`Registry`], queued first come first served on each key, and
//! [`Client::block`] tells its loop to run none of its later requests and when to time out.
//! Inside `EXEC` there is no waiting: the command answers as at a timeout.
//!
//! After every write command while any client waits, [`serve`] (still under the keyspace
//! lock, in the writer's loop) looks at every key clients wait on and, for each key that now
//! holds data, runs the first waiter's command again for it; its reply goes to the waiter's
//! loop as [`Mail::Unblocked`](super::pubsub::Mail). A served `BLMOVE` may fill a key another
//! client waits on: serving goes on until nothing changes. So a push in a `MULTI`, or an
//! `LMOVE` chain, serves waiters as Redis does, and one push serves one waiter per element.
//! The cost is a look at each waited-on key per write while anyone waits.
//!
//! The waiter's loop owns the timeout ([`Block::deadline_ms`]); at it, whichever of the
//! timeout and a serve takes the waiter out of the registry first answers. A waiter that
//! disconnects is taken out.

use std::collections::{HashMap, VecDeque};
use std::sync::PoisonError;

use super::lists::{self, MpopArgs};
use super::pubsub::{Mail, Subscriber};
use super::zsets::{self, PopShape};
use super::{Args, Client, Ctx, OtherDbs, OwnedArgs, ServerInfo, WRONGTYPE, table};
use crate::db::{Access, Db, Value};
use crate::resp::ReplyBuf;

/// Timeouts that are not numbers (Redis's wording).
pub const BAD_TIMEOUT: &str = "ERR timeout is not a float or out of range";
/// Negative timeouts.
pub const NEGATIVE_TIMEOUT: &str = "ERR timeout is negative";
/// `CLIENT UNBLOCK ... ERROR`'s reply to the waiter.
pub const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// Which blocking command, for how it reads its keys and what it answers at a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `BLPOP` (`true`) or `BRPOP`.
    Pop(bool),
    /// `BLMOVE` and `BRPOPLPUSH`: a null bulk at a timeout.
    Move,
    /// `BLMPOP`.
    Mpop,
    /// `BZPOPMAX` (`true`) or `BZPOPMIN`.
    ZPop(bool),
    /// `BZMPOP`.
    ZMpop,
}

impl Op {
    /// The reply at a timeout, or for a blocking command inside `EXEC`.
    pub fn write_timeout(self, out: &mut ReplyBuf) {
        match self {
            Op::Move => out.null(),
            _ => out.null_array(),
        }
    }

    /// Whether `v` is the type this command pops from.
    fn holds(self, v: &Value) -> bool {
        match self {
            Op::ZPop(_) | Op::ZMpop => matches!(v, Value::ZSet(_)),
            _ => matches!(v, Value::List(_)),
        }
    }
}

/// What a client's loop knows of its wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// When it times out (unix ms); `None`: never (timeout 0).
    pub deadline_ms: Option<u64>,
    /// The command.
    pub op: Op,
}

/// A waiting client's command, kept to run when one of its keys is ready.
#[derive(Debug)]
pub struct Waiter {
    to: Subscriber,
    db: usize,
    keys: Vec<Vec<u8>>,
    op: Op,
    args: OwnedArgs,
    /// A copy of the client (its protocol, its database) for the handler that serves it.
    client: Client,
    /// The reply's zero-copy threshold.
    threshold: usize,
}

/// Every waiting client, and the queue of waiters on each (database, key).
#[derive(Debug, Default)]
pub struct Registry {
    waiters: HashMap<u64, Waiter>,
    queues: HashMap<(usize, Vec<u8>), VecDeque<u64>>,
}

impl Registry {
    /// Clients waiting now (`INFO clients`' `blocked_clients`).
    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Takes client `id` out (its timeout came, it disconnected, `CLIENT UNBLOCK`); `None` if
    /// it was not waiting (a serve came first).
    pub fn remove(&mut self, id: u64) -> Option<Op> {
        take_waiter(self, id).map(|w| w.op)
    }

    fn add(&mut self, w: Waiter) {
        for k in &w.keys {
            let q = self.queues.entry((w.db, k.clone())).or_default();
            if !q.contains(&w.to.id) {
                q.push_back(w.to.id);
            }
        }
        self.waiters.insert(w.to.id, w);
    }
}

/// Redis's `getTimeoutFromObjectOrReply` in seconds: milliseconds, 0 for none.
fn parse_timeout(arg: &[u8]) -> Result<u64, &'static str> {
    let t: f64 = std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|t: &f64| t.is_finite())
        .ok_or(BAD_TIMEOUT)?;
    if t < 0.0 {
        return Err(NEGATIVE_TIMEOUT);
    }
    Ok((t * 1000.0) as u64)
}

/// The command's keys and its timeout argument's index.
fn layout(op: Op, args: &Args<'_>) -> Result<(Vec<Vec<u8>>, usize), &'static str> {
    let n = args.len();
    let own = |r: std::ops::Range<usize>| r.map(|i| args.get(i).to_vec()).collect();
    Ok(match op {
        Op::Pop(_) | Op::ZPop(_) => (own(1..n - 1), n - 1),
        Op::Move => (own(1..2), n - 1),
        Op::Mpop => (own(MpopArgs::parse(args, 2, side_any)?.keys), 1),
        Op::ZMpop => (own(MpopArgs::parse(args, 2, zsets::parse_min_max)?.keys), 1),
    })
}

/// Any `LEFT|RIGHT` (the handler checks it again).
fn side_any(arg: &[u8]) -> Option<()> {
    (arg.eq_ignore_ascii_case(b"left") || arg.eq_ignore_ascii_case(b"right")).then_some(())
}

/// Whether one of `keys` holds data for `op`: `Err` for the first that exists with another
/// type (Redis answers `WRONGTYPE` then), as the non-blocking form reads them.
fn ready(db: &mut Db, keys: &[Vec<u8>], op: Op, now_ms: u64) -> Result<bool, ()> {
    for k in keys {
        if let Some(e) = db.find(k, now_ms, Access::Write) {
            return if op.holds(e.value()) { Ok(true) } else { Err(()) };
        }
    }
    Ok(false)
}

/// Runs the non-blocking form of `op` (data is there).
fn run_op(ctx: &mut Ctx<'_>, op: Op, args: &Args<'_>, out: &mut ReplyBuf) {
    let n = args.len();
    match op {
        Op::Pop(front) => {
            for key in (1..n - 1).map(|i| args.get(i)) {
                let Ok(Some(mut list)) = ctx.db.list(key, ctx.now_ms) else {
                    continue;
                };
                let item = if front { list.pop_front() } else { list.pop_back() };
                if let Some(item) = item {
                    out.array(2);
                    out.bulk(key);
                    out.bulk_buf(&item);
                    return;
                }
            }
            out.null_array();
        }
        Op::Move if args.get(0).eq_ignore_ascii_case(b"brpoplpush") => {
            lists::move_element(ctx, args.get(1), args.get(2), false, true, out)
        }
        Op::Move => match (lists::parse_side(args.get(3)), lists::parse_side(args.get(4))) {
            (Some(from), Some(to)) => lists::move_element(ctx, args.get(1), args.get(2), from, to, out),
            _ => out.error(super::SYNTAX),
        },
        Op::Mpop => lists::mpop_from(ctx, args, 2, out),
        Op::ZPop(max) => {
            let shape = PopShape {
                with_key: true,
                nested: false,
                nil_when_empty: true,
            };
            zsets::pop_first(ctx, (1..n - 1).map(|i| args.get(i)), max, None, shape, out)
        }
        Op::ZMpop => zsets::zmpop_from(ctx, args, 2, out),
    }
}

/// The blocking commands' handler: answers at once when a key holds data (or inside `EXEC`),
/// else leaves the client waiting.
fn block_or_run(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, op: Op) {
    // Redis's order: the other arguments, then the timeout, then the keys.
    if op == Op::Move
        && !args.get(0).eq_ignore_ascii_case(b"brpoplpush")
        && (lists::parse_side(args.get(3)).is_none() || lists::parse_side(args.get(4)).is_none())
    {
        return out.error(super::SYNTAX);
    }
    let (keys, at) = match layout(op, args) {
        Ok(l) => l,
        Err(e) => return out.error(e),
    };
    let timeout = match parse_timeout(args.get(at)) {
        Ok(t) => t,
        Err(e) => return out.error(e),
    };
    match ready(ctx.db, &keys, op, ctx.now_ms) {
        Err(()) => return out.error(WRONGTYPE),
        Ok(true) => return run_op(ctx, op, args, out),
        Ok(false) => {}
    }
    if ctx.client.deny_blocking {
        return op.write_timeout(out);
    }
    let mut client = ctx.client.clone();
    client.block = None;
    let waiter = Waiter {
        to: Subscriber {
            home: ctx.client.home,
            id: ctx.client.id,
        },
        db: ctx.client.db,
        keys,
        op,
        args: OwnedArgs::from(args),
        client,
        threshold: out.threshold(),
    };
    ctx.server
        .blocked
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .add(waiter);
    ctx.client.block = Some(Block {
        deadline_ms: (timeout > 0).then(|| ctx.now_ms.saturating_add(timeout)),
        op,
    });
}

/// `BLPOP key [key ...] timeout`.
pub fn blpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::Pop(true))
}

/// `BRPOP key [key ...] timeout`.
pub fn brpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::Pop(false))
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`.
pub fn blmove(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::Move)
}

/// `BRPOPLPUSH source destination timeout`.
pub fn brpoplpush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::Move)
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
pub fn blmpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::Mpop)
}

/// `BZPOPMIN key [key ...] timeout`.
pub fn bzpopmin(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::ZPop(false))
}

/// `BZPOPMAX key [key ...] timeout`.
pub fn bzpopmax(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::ZPop(true))
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`.
pub fn bzmpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    block_or_run(ctx, args, out, Op::ZMpop)
}

/// Serves the waiters whose keys hold data now, first come first served on each key, until
/// nothing changes (a served `BLMOVE` may fill another waiter's key). Their replies go to
/// their loops' mailboxes; the loops to wake are added to `wake`.
pub fn serve(dbs: &mut [Db], server: &ServerInfo, now_ms: u64, wake: &mut Vec<usize>) {
    let mut reg = server.blocked.lock().unwrap_or_else(PoisonError::into_inner);
    if reg.is_empty() {
        return;
    }
    loop {
        let mut served = false;
        let slots: Vec<(usize, Vec<u8>)> = reg.queues.keys().cloned().collect();
        for slot in slots {
            while let Some(&id) = reg.queues.get(&slot).and_then(VecDeque::front) {
                let Some(op) = reg.waiters.get(&id).map(|w| w.op) else {
                    break;
                };
                let Some(db) = dbs.get_mut(slot.0) else { break };
                if ready(db, std::slice::from_ref(&slot.1), op, now_ms) != Ok(true) {
                    break;
                }
                let mut w = take_waiter(&mut reg, id).expect("present: its op was just read");
                let mut out = ReplyBuf::new(w.threshold);
                out.set_proto(w.client.proto);
                let (db, others) = OtherDbs::split(dbs, w.db);
                let mut ctx = Ctx {
                    db,
                    others,
                    client: &mut w.client,
                    server,
                    now_ms,
                    table: &table::TABLE,
                    // Not propagated yet: the README lists it (a served pop should go to the
                    // replication stream as its non-blocking form).
                    propagate_as: None,
                };
                run_op(&mut ctx, op, &w.args.args(), &mut out);
                if server.notify.is_on() {
                    let args = w.args.args();
                    if let Some(spec) = table::lookup(args.get(0)) {
                        super::notify::after_command(server, dbs, w.db, spec, &args, now_ms, wake);
                    }
                }
                server
                    .pubsub
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .post(Mail::Unblocked { to: w.to, reply: out }, wake);
                served = true;
            }
        }
        if !served {
            return;
        }
    }
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: 1 if client `id` was waiting (it gets the timeout
/// reply, or the `UNBLOCKED` error), 0 otherwise.
pub fn unblock(server: &ServerInfo, id: u64, error: bool, wake: &mut Vec<usize>) -> bool {
    let mut reg = server.blocked.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(w) = take_waiter(&mut reg, id) else {
        return false;
    };
    let mut out = ReplyBuf::new(w.threshold);
    out.set_proto(w.client.proto);
    if error {
        out.error(UNBLOCKED);
    } else {
        w.op.write_timeout(&mut out);
    }
    server
        .pubsub
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .post(Mail::Unblocked { to: w.to, reply: out }, wake);
    true
}

/// Takes waiter `id` and its queue places out of `reg`.
fn take_waiter(reg: &mut Registry, id: u64) -> Option<Waiter> {
    let w = reg.waiters.get(&id)?;
    let keys = w.keys.clone();
    let db = w.db;
    for k in keys {
        let slot = (db, k);
        if let Some(q) = reg.queues.get_mut(&slot) {
            q.retain(|&x| x != id);
            if q.is_empty() {
                reg.queues.remove(&slot);
            }
        }
    }
    reg.waiters.remove(&id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{Harness, NULL, NULL_ARRAY, bulk, err, int};
    use crate::cmd::pubsub::Mail;

    /// The replies waiting for loop 0, as RESP bytes.
    fn replies(h: &Harness) -> Vec<(u64, String)> {
        let mut taken = Vec::new();
        h.server.pubsub.lock().unwrap().take_mail(0, &mut taken);
        taken
            .into_iter()
            .map(|m| match m {
                Mail::Unblocked { to, reply } => {
                    (to.id, String::from_utf8_lossy(reply.parts().0).into_owned())
                }
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn errors_come_before_waiting() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("BLPOP k x"), err(BAD_TIMEOUT));
        assert_eq!(h.cmd("BLPOP k -1"), err(NEGATIVE_TIMEOUT));
        assert_eq!(
            h.cmd("BLMPOP 0 0 k LEFT"),
            err("ERR numkeys should be greater than 0")
        );
        assert_eq!(h.cmd("BZMPOP 0 1 k LEFT"), err("ERR syntax error"));
        assert_eq!(h.cmd("BLMOVE a b UP LEFT x"), err("ERR syntax error"));
        assert_eq!(
            h.cmd("BLMPOP x 0 k LEFT"),
            err("ERR numkeys should be greater than 0")
        );
        h.cmd("SET s v");
        assert_eq!(h.cmd("BLPOP none s 0"), err(WRONGTYPE));
        assert_eq!(h.cmd("BZPOPMIN s 0"), err(WRONGTYPE));
        assert!(h.client.block.is_none());
        assert_eq!(h.server.blocked.lock().unwrap().len(), 0);
    }

    #[test]
    fn data_there_answers_at_once_as_redis() {
        let mut h = Harness::new();
        h.cmd("RPUSH l a b c");
        assert_eq!(
            h.cmd("BLPOP none l 0"),
            format!("*2\r\n{}{}", bulk("l"), bulk("a"))
        );
        assert_eq!(h.cmd("BRPOP l 0"), format!("*2\r\n{}{}", bulk("l"), bulk("c")));
        assert_eq!(
            h.cmd("BLMPOP 0 1 l LEFT COUNT 5"),
            format!("*2\r\n{}*1\r\n{}", bulk("l"), bulk("b"))
        );
        h.cmd("ZADD z 1 a 2 b");
        assert_eq!(
            h.cmd("BZPOPMAX z 0"),
            format!("*3\r\n{}{}{}", bulk("z"), bulk("b"), bulk("2"))
        );
        h.cmd("MULTI");
        h.cmd("BRPOPLPUSH none d 0");
        h.cmd("BZMPOP 0 1 none MIN");
        assert_eq!(h.cmd("EXEC"), format!("*2\r\n{NULL}{NULL_ARRAY}"));
    }

    #[test]
    fn a_waiter_is_served_by_a_later_push_and_unblocked_once() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("BRPOP a b 0"), "");
        assert!(h.client.block.is_some_and(|b| b.deadline_ms.is_none()));
        assert_eq!(h.server.blocked.lock().unwrap().len(), 1);
        let addr = h.client.addr;
        let waiter = std::mem::replace(&mut h.client, crate::cmd::Client::new(2, addr, addr, 0, true));
        assert_eq!(h.cmd("LPUSH b x y"), int(2));
        assert_eq!(h.client.wake, vec![0]);
        assert_eq!(
            replies(&h),
            vec![(waiter.id, format!("*2\r\n{}{}", bulk("b"), bulk("x")))]
        );
        assert_eq!(h.cmd("LRANGE b 0 -1"), format!("*1\r\n{}", bulk("y")));
        assert_eq!(h.server.blocked.lock().unwrap().len(), 0);
        assert_eq!(h.cmd(&format!("CLIENT UNBLOCK {}", waiter.id)), int(0));
    }
}
