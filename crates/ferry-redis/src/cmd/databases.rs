//! Database commands: `SELECT`, `SWAPDB`, `MOVE`, `DBSIZE`, `FLUSHDB`, `FLUSHALL`.
//!
//! Where this differs from Redis, and why:
//! - `databases` (16 by default) databases, shared by every event loop and locked together:
//!   a command may touch several (`MOVE`, `SWAPDB`, `COPY ... DB`, `FLUSHALL`).
//! - `FLUSHDB ASYNC` and `FLUSHALL ASYNC` flush synchronously (the keyspace frees its memory
//!   at once; values still referenced by replies in flight are freed when sent).

use super::strings::parse_i64;
use super::{Args, Ctx, NOT_INTEGER, SYNTAX};
use crate::db::{Access, Db, SetIf, Ttl};
use crate::resp::ReplyBuf;

/// `SELECT` of a database other than 0.
pub const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";

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
        super::persist::after_flushall(ctx);
    }
    out.ok();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{OK, bulk, err, server_harness};

    #[test]
    fn select_switches_between_sixteen_databases() {
        let mut h = server_harness(None);
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
        let mut h = server_harness(None);
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
    fn dbsize_and_flush() {
        let mut h = server_harness(None);
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
}
