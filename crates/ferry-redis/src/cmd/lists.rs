//! List commands: `LPUSH`, `RPUSH`, `LPOP`, `RPOP`, `LRANGE`, `LLEN`, `LINDEX`, `LSET`,
//! `LTRIM`, with Redis 7.0's semantics and error replies. A list emptied by a command is
//! deleted (the keyspace's [`ListMut`](crate::db::ListMut) does it when dropped).

use super::{Args, Ctx, NOT_INTEGER, OOM, WRONGTYPE, wrong_arity};
use crate::cmd::strings::parse_i64;
use crate::db::Value;
use crate::resp::ReplyBuf;

/// `LPOP`/`RPOP`'s reply to a count that is negative or not an integer.
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// `LSET`'s reply when the key does not exist.
pub const NO_SUCH_KEY: &str = "ERR no such key";
/// `LSET`'s reply to an index outside the list.
pub const OUT_OF_RANGE: &str = "ERR index out of range";

/// `LPUSH key element [element ...]`: the new length.
pub fn lpush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    push(ctx, args, out, true);
}

/// `RPUSH key element [element ...]`: the new length.
pub fn rpush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    push(ctx, args, out, false);
}

/// Pushes every element or none (a full pool refuses the whole command).
fn push(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, front: bool) {
    let mut list = match ctx.db.list_or_insert(args.get(1), ctx.now_ms) {
        Ok(list) => list,
        Err(_) => return out.error(WRONGTYPE),
    };
    let (pool, keep) = (list.pool(), list.keep_in_place_min());
    let items: Result<Vec<_>, _> = (2..args.len()).map(|i| args.value(i, pool, keep)).collect();
    let Ok(items) = items else {
        return out.error(OOM);
    };
    for item in items {
        if front {
            list.push_front(item)
        } else {
            list.push_back(item)
        }
    }
    out.integer(list.len() as i64);
}

/// `LPOP key [count]`.
pub fn lpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    pop(ctx, args, out, true);
}

/// `RPOP key [count]`.
pub fn rpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    pop(ctx, args, out, false);
}

/// Without a count: one element, or null. With one: an array of up to `count` elements, an
/// empty array for 0, a null array if there is no such key.
fn pop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, front: bool) {
    if args.len() > 3 {
        return out.error(wrong_arity(if front { "lpop" } else { "rpop" }));
    }
    let count = if args.len() == 3 {
        match parse_i64(args.get(2)) {
            Some(n) if n >= 0 => Some(n),
            _ => return out.error(NOT_POSITIVE),
        }
    } else {
        None
    };
    let mut list = match ctx.db.list(args.get(1), ctx.now_ms) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(None) if count.is_some() => return out.null_array(),
        Ok(None) => return out.null(),
        Ok(Some(list)) => list,
    };
    let len = list.len();
    let mut pop_one = move || if front { list.pop_front() } else { list.pop_back() };
    match count {
        None => match pop_one() {
            Some(item) => out.bulk_buf(&item),
            None => out.null(),
        },
        Some(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX).min(len);
            out.array(n);
            for _ in 0..n {
                match pop_one() {
                    Some(item) => out.bulk_buf(&item),
                    None => out.null(),
                }
            }
        }
    }
}

/// `[start, end]` (inclusive, negative from the end, as Redis) of a list of `len` elements
/// as a range of positions; empty when out of range.
fn resolve_range(start: i64, end: i64, len: usize) -> std::ops::Range<usize> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return 0..0;
    }
    start as usize..(end.min(len - 1) + 1) as usize
}

/// Index `index` (negative from the end) of a list of `len` elements, if inside.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// `LRANGE key start stop`.
pub fn lrange(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return out.error(NOT_INTEGER);
    };
    match ctx.db.get(args.get(1), ctx.now_ms) {
        None => out.array(0),
        Some(Value::List(items)) => {
            let range = resolve_range(start, end, items.len());
            out.array(range.len());
            for item in items.range(range) {
                out.bulk_buf(item);
            }
        }
        Some(_) => out.error(WRONGTYPE),
    }
}

/// `LLEN key`: 0 if missing.
pub fn llen(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.get(args.get(1), ctx.now_ms) {
        None => out.integer(0),
        Some(Value::List(items)) => out.integer(items.len() as i64),
        Some(_) => out.error(WRONGTYPE),
    }
}

/// `LINDEX key index`: the element, null if missing or out of range. The key is looked up
/// before the index is parsed, as in Redis.
pub fn lindex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.get(args.get(1), ctx.now_ms) {
        None => out.null(),
        Some(Value::List(items)) => match parse_i64(args.get(2)) {
            None => out.error(NOT_INTEGER),
            Some(index) => match resolve_index(index, items.len()) {
                Some(i) => out.bulk_buf(&items[i]),
                None => out.null(),
            },
        },
        Some(_) => out.error(WRONGTYPE),
    }
}

/// `LSET key index element`.
pub fn lset(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut list = match ctx.db.list(args.get(1), ctx.now_ms) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(None) => return out.error(NO_SUCH_KEY),
        Ok(Some(list)) => list,
    };
    let Some(index) = parse_i64(args.get(2)) else {
        return out.error(NOT_INTEGER);
    };
    let Some(i) = resolve_index(index, list.len()) else {
        return out.error(OUT_OF_RANGE);
    };
    let Ok(item) = args.value(3, list.pool(), list.keep_in_place_min()) else {
        return out.error(OOM);
    };
    // In range (checked above): the old element comes back and is dropped.
    let replaced = list.set(i, item);
    debug_assert!(replaced.is_ok());
    out.ok();
}

/// `LTRIM key start stop`: keeps `[start, stop]`; an empty range deletes the key.
pub fn ltrim(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return out.error(NOT_INTEGER);
    };
    match ctx.db.list(args.get(1), ctx.now_ms) {
        Err(_) => out.error(WRONGTYPE),
        Ok(None) => out.ok(),
        Ok(Some(mut list)) => {
            let range = resolve_range(start, end, list.len());
            list.retain_range(range);
            out.ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::*;

    #[test]
    fn ranges_follow_redis() {
        assert_eq!(resolve_range(0, -1, 3), 0..3);
        assert_eq!(resolve_range(-2, -1, 3), 1..3);
        assert_eq!(resolve_range(-100, 100, 3), 0..3);
        assert_eq!(resolve_range(2, 1, 3), 0..0);
        assert_eq!(resolve_range(3, 5, 3), 0..0);
        assert_eq!(resolve_range(0, -4, 3), 0..0);
        assert_eq!(resolve_range(i64::MIN, i64::MAX, 3), 0..3);
        assert_eq!(resolve_range(0, 0, 0), 0..0);
        assert_eq!(resolve_index(-1, 3), Some(2));
        assert_eq!(resolve_index(-4, 3), None);
        assert_eq!(resolve_index(3, 3), None);
        assert_eq!(resolve_index(i64::MIN, 3), None);
    }

    #[test]
    fn push_range_len_index() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("RPUSH l b c"), int(2));
        assert_eq!(h.cmd("LPUSH l a z"), int(4));
        assert_eq!(h.cmd("LRANGE l 0 -1"), bulks(&["z", "a", "b", "c"]));
        assert_eq!(h.cmd("LRANGE l 1 2"), bulks(&["a", "b"]));
        assert_eq!(h.cmd("LRANGE l -2 100"), bulks(&["b", "c"]));
        assert_eq!(h.cmd("LRANGE l 5 10"), bulks(&[]));
        assert_eq!(h.cmd("LRANGE nokey 0 -1"), bulks(&[]));
        assert_eq!(h.cmd("LRANGE l a 1"), err(NOT_INTEGER));
        assert_eq!(h.cmd("LLEN l"), int(4));
        assert_eq!(h.cmd("LLEN nokey"), int(0));
        assert_eq!(h.cmd("LINDEX l 0"), bulk("z"));
        assert_eq!(h.cmd("LINDEX l -1"), bulk("c"));
        assert_eq!(h.cmd("LINDEX l 4"), NULL);
        assert_eq!(h.cmd("LINDEX l abc"), err(NOT_INTEGER));
        assert_eq!(h.cmd("LINDEX nokey abc"), NULL);
        h.cmd("SET s v");
        for c in [
            "LPUSH s a",
            "RPUSH s a",
            "LRANGE s 0 1",
            "LLEN s",
            "LINDEX s abc",
            "LINDEX s 0",
        ] {
            assert_eq!(h.cmd(c), err(WRONGTYPE), "{c}");
        }
        assert_eq!(h.cmd("GET s"), bulk("v"));
        let long = "L".repeat(40);
        assert_eq!(h.cmd(&format!("RPUSH l {long}")), int(5));
        assert_eq!(h.cmd("LINDEX l -1"), bulk(&long));
    }

    #[test]
    fn pop_with_and_without_count() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("LPOP nokey"), NULL);
        assert_eq!(h.cmd("LPOP nokey 0"), NULL_ARRAY);
        assert_eq!(h.cmd("RPOP nokey 2"), NULL_ARRAY);
        assert_eq!(h.cmd("LPOP nokey -1"), err(NOT_POSITIVE));
        assert_eq!(h.cmd("LPOP nokey abc"), err(NOT_POSITIVE));
        assert_eq!(h.cmd("LPOP k 1 2"), err(&wrong_arity("lpop")));
        h.cmd("RPUSH l a b c d e");
        assert_eq!(h.cmd("LPOP l"), bulk("a"));
        assert_eq!(h.cmd("RPOP l"), bulk("e"));
        assert_eq!(h.cmd("LPOP l 0"), bulks(&[]));
        assert_eq!(h.cmd("RPOP l 2"), bulks(&["d", "c"]));
        assert_eq!(h.cmd("LPOP l 10"), bulks(&["b"]));
        assert_eq!(h.cmd("EXISTS l"), int(0), "emptied lists are deleted");
        assert_eq!(h.cmd("RPOP l 2"), NULL_ARRAY);
        h.cmd("SET s v");
        assert_eq!(h.cmd("LPOP s"), err(WRONGTYPE));
        assert_eq!(h.cmd("LPOP s 0"), err(WRONGTYPE));
        assert_eq!(h.cmd("LPOP s -1"), err(NOT_POSITIVE));
        h.cmd("RPUSH one x");
        assert_eq!(h.cmd("RPOP one"), bulk("x"));
        assert!(!h.db.contains(b"one", h.now_ms));
        assert_eq!(h.db.used_memory(), 1 + 1 + crate::db::KEY_OVERHEAD);
    }

    #[test]
    fn lset_and_ltrim() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("LSET nokey 0 x"), err(NO_SUCH_KEY));
        h.cmd("RPUSH l a b c");
        assert_eq!(h.cmd("LSET l 1 B"), OK);
        assert_eq!(h.cmd("LSET l -1 C"), OK);
        assert_eq!(h.cmd("LSET l 3 x"), err(OUT_OF_RANGE));
        assert_eq!(h.cmd("LSET l -4 x"), err(OUT_OF_RANGE));
        assert_eq!(h.cmd("LSET l abc x"), err(NOT_INTEGER));
        assert_eq!(h.cmd("LRANGE l 0 -1"), bulks(&["a", "B", "C"]));
        h.cmd("SET s v");
        assert_eq!(h.cmd("LSET s abc x"), err(WRONGTYPE));
        assert_eq!(h.cmd("LTRIM s 0 1"), err(WRONGTYPE));
        assert_eq!(h.cmd("LTRIM nokey a 1"), err(NOT_INTEGER));
        assert_eq!(h.cmd("LTRIM nokey 0 1"), OK);
        assert_eq!(h.cmd("LTRIM l 1 -1"), OK);
        assert_eq!(h.cmd("LRANGE l 0 -1"), bulks(&["B", "C"]));
        assert_eq!(h.cmd("LTRIM l 0 100"), OK);
        assert_eq!(h.cmd("LLEN l"), int(2));
        assert_eq!(h.cmd("LTRIM l 5 10"), OK);
        assert_eq!(h.cmd("EXISTS l"), int(0), "an empty range deletes the key");
        h.cmd("RPUSH l a b c");
        assert_eq!(h.cmd("LTRIM l -1 -2"), OK);
        assert_eq!(h.cmd("EXISTS l"), int(0));
        assert_eq!(h.db.used_memory(), 1 + 1 + crate::db::KEY_OVERHEAD);
    }

    #[test]
    fn list_values_outlive_pops_in_replies() {
        let mut h = Harness::new();
        let long = "P".repeat(64);
        h.cmd(&format!("RPUSH l {long} {long}"));
        assert_eq!(h.cmd("RPOP l 2"), bulks(&[&long, &long]));
        assert!(h.db.is_empty());
        assert_eq!(h.db.used_memory(), 0);
    }

    #[test]
    fn an_expired_list_is_gone_for_list_commands() {
        let mut h = Harness::new();
        h.cmd("RPUSH l a b");
        h.cmd("PEXPIRE l 10");
        h.now_ms += 11;
        assert_eq!(h.cmd("LLEN l"), int(0));
        h.cmd("RPUSH l2 a");
        h.cmd("PEXPIRE l2 10");
        h.now_ms += 11;
        assert_eq!(h.cmd("RPUSH l2 x"), int(1), "a new list, without the old TTL");
        assert_eq!(h.cmd("TTL l2"), int(-1));
        assert_eq!(h.cmd("LSET l 0 x"), err(NO_SUCH_KEY));
    }
}
