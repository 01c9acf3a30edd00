//! List commands: `LPUSH`, `RPUSH`, `LPOP`, `RPOP`, `LRANGE`, `LLEN`, `LINDEX`, `LSET`,
//! `LTRIM`, `LPOS`, `LINSERT`, `LREM`, `LMOVE`, `RPOPLPUSH`, `LMPOP`, with Redis 7.0's semantics and error replies. A list emptied by a command is
//! deleted (the keyspace's [`ListMut`](crate::db::ListMut) does it when dropped).

use super::sets::NUMKEYS;
use super::{Args, Ctx, NOT_INTEGER, OOM, SYNTAX, WRONGTYPE, wrong_arity};
use crate::cmd::strings::parse_i64;
use crate::db::{Access, Value};
use crate::resp::ReplyBuf;

/// `LPOP`/`RPOP`'s reply to a count that is negative or not an integer.
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// `LSET`'s reply when the key does not exist.
pub const NO_SUCH_KEY: &str = "ERR no such key";
/// `LSET`'s reply to an index outside the list.
pub const OUT_OF_RANGE: &str = "ERR index out of range";

/// `LPUSH key element [element ...]`: the new length.
pub fn lpush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    push(ctx, args, out, true, false);
}

/// `RPUSH key element [element ...]`: the new length.
pub fn rpush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    push(ctx, args, out, false, false);
}

/// `LPUSHX key element [element ...]`: `LPUSH` to an existing list; 0 if there is none.
pub fn lpushx(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    push(ctx, args, out, true, true);
}

/// `RPUSHX key element [element ...]`: `RPUSH` to an existing list; 0 if there is none.
pub fn rpushx(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    push(ctx, args, out, false, true);
}

/// Pushes every element or none (a full pool refuses the whole command); only to an
/// existing list if `existing`.
fn push(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, front: bool, existing: bool) {
    let list = if existing {
        ctx.db.list(args.get(1), ctx.now_ms).transpose()
    } else {
        Some(ctx.db.list_or_insert(args.get(1), ctx.now_ms))
    };
    let mut list = match list {
        None => return out.integer(0),
        Some(Ok(list)) => list,
        Some(Err(_)) => return out.error(WRONGTYPE),
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

/// Parses `LEFT` or `RIGHT`: whether it is the head.
pub(super) fn parse_side(arg: &[u8]) -> Option<bool> {
    if arg.eq_ignore_ascii_case(b"left") {
        Some(true)
    } else if arg.eq_ignore_ascii_case(b"right") {
        Some(false)
    } else {
        None
    }
}

/// A count option that must be a non-negative integer, with `msg` for anything else (Redis's
/// `getPositiveLongFromObjectOrReply`).
fn parse_non_negative(arg: &[u8], msg: &'static str) -> Result<i64, &'static str> {
    parse_i64(arg).filter(|&n| n >= 0).ok_or(msg)
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]`: the position of the `rank`-th
/// match (from the tail for a negative rank), or with `COUNT` an array of up to `num`
/// positions (0: all), looking at no more than `len` elements (0: all).
pub fn lpos(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0i64);
    let mut j = 3;
    while j < args.len() {
        let (opt, more) = (args.get(j), j + 1 < args.len());
        let parsed = if opt.eq_ignore_ascii_case(b"rank") && more {
            parse_i64(args.get(j + 1)).ok_or(NOT_INTEGER).and_then(|r| {
                rank = r;
                if r == 0 { Err(RANK_ZERO) } else { Ok(()) }
            })
        } else if opt.eq_ignore_ascii_case(b"count") && more {
            parse_non_negative(args.get(j + 1), COUNT_NEGATIVE).map(|n| count = Some(n))
        } else if opt.eq_ignore_ascii_case(b"maxlen") && more {
            parse_non_negative(args.get(j + 1), MAXLEN_NEGATIVE).map(|n| maxlen = n)
        } else {
            Err(SYNTAX)
        };
        if let Err(e) = parsed {
            return out.error(e);
        }
        j += 2;
    }
    let from_tail = rank < 0;
    // i64::MIN stays negative, as Redis's `rank = -rank` leaves it: any match then qualifies.
    let rank = if from_tail { rank.wrapping_neg() } else { rank };
    let items = match ctx.db.get(args.get(1), ctx.now_ms) {
        None if count.is_some() => return out.array(0),
        None => return out.null(),
        Some(Value::List(items)) => items,
        Some(_) => return out.error(WRONGTYPE),
    };
    let len = items.len();
    let limit = if maxlen == 0 {
        len
    } else {
        len.min(maxlen as usize)
    };
    let element = args.get(2);
    let order = (0..limit).map(|k| if from_tail { len - 1 - k } else { k });
    let mut matches = order
        .filter(|&i| items[i][..] == *element)
        .enumerate()
        .filter(|&(m, _)| m as i64 + 1 >= rank)
        .map(|(_, i)| i as i64);
    match count {
        None => match matches.next() {
            Some(i) => out.integer(i),
            None => out.null(),
        },
        Some(n) => {
            let found: Vec<i64> = if n == 0 {
                matches.collect()
            } else {
                matches.take(n as usize).collect()
            };
            out.array(found.len());
            for i in found {
                out.integer(i);
            }
        }
    }
}

/// `LPOS`'s reply to `RANK 0`.
pub const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
     second ... or use negative to start from the end of the list";
/// `LPOS`'s reply to a negative `COUNT`.
pub const COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
/// `LPOS`'s reply to a negative `MAXLEN`.
pub const MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 if the pivot is not found,
/// 0 if there is no such key.
pub fn linsert(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let side = args.get(2);
    let after = if side.eq_ignore_ascii_case(b"after") {
        true
    } else if side.eq_ignore_ascii_case(b"before") {
        false
    } else {
        return out.error(SYNTAX);
    };
    let mut list = match ctx.db.list(args.get(1), ctx.now_ms) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(None) => return out.integer(0),
        Ok(Some(list)) => list,
    };
    let pivot = args.get(3);
    let Some(at) = list.items().iter().position(|b| b[..] == *pivot) else {
        return out.integer(-1);
    };
    let Ok(item) = args.value(4, list.pool(), list.keep_in_place_min()) else {
        return out.error(OOM);
    };
    list.insert(at + usize::from(after), item);
    out.integer(list.len() as i64);
}

/// `LREM key count element`: removes the first `count` matches (from the tail for a
/// negative count, all of them for 0); the number removed.
pub fn lrem(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(count) = parse_i64(args.get(2)) else {
        return out.error(NOT_INTEGER);
    };
    let mut list = match ctx.db.list(args.get(1), ctx.now_ms) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(None) => return out.integer(0),
        Ok(Some(list)) => list,
    };
    let element = args.get(3);
    let items = list.items();
    let len = items.len();
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let order = (0..len).map(|k| if count < 0 { len - 1 - k } else { k });
    let mut positions: Vec<usize> = order.filter(|&i| items[i][..] == *element).take(limit).collect();
    positions.sort_unstable();
    list.remove_sorted(&positions);
    out.integer(positions.len() as i64);
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: pops from one side of `source`, pushes
/// to a side of `destination`, and returns the element (null if `source` is missing).
pub fn lmove(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (Some(from), Some(to)) = (parse_side(args.get(3)), parse_side(args.get(4))) else {
        return out.error(SYNTAX);
    };
    move_element(ctx, args.get(1), args.get(2), from, to, out);
}

/// `RPOPLPUSH source destination`: `LMOVE source destination RIGHT LEFT`.
pub fn rpoplpush(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    move_element(ctx, args.get(1), args.get(2), false, true, out);
}

/// `LMOVE`: the source is checked, then the destination's type, then the element moves (the
/// same key rotates).
pub(super) fn move_element(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_head: bool,
    to_head: bool,
    out: &mut ReplyBuf,
) {
    let now = ctx.now_ms;
    match ctx.db.list(src, now) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(None) => return out.null(),
        Ok(Some(_)) => {}
    }
    if let Some(e) = ctx.db.find(dst, now, Access::Write) {
        if !matches!(e.value(), Value::List(_)) {
            return out.error(WRONGTYPE);
        }
    }
    let item = match ctx.db.list(src, now) {
        Ok(Some(mut list)) if from_head => list.pop_front(),
        Ok(Some(mut list)) => list.pop_back(),
        _ => None,
    };
    let Some(item) = item else {
        return out.null();
    };
    out.bulk_buf(&item);
    if let Ok(mut list) = ctx.db.list_or_insert(dst, now) {
        if to_head {
            list.push_front(item);
        } else {
            list.push_back(item);
        }
    }
}

/// The arguments of `LMPOP`, `ZMPOP` and their blocking forms from `numkeys` at `at` on:
/// `numkeys key [key ...] WHERE [COUNT count]`, in Redis's order of checks.
#[derive(Debug, Clone)]
pub struct MpopArgs<W> {
    /// Where the keys are among the arguments.
    pub keys: std::ops::Range<usize>,
    /// The argument after the keys (`LEFT|RIGHT`, `MIN|MAX`), as `side` read it.
    pub side: W,
    /// `COUNT`, 1 without it.
    pub count: usize,
}

impl<W> MpopArgs<W> {
    /// Parses from `at` (the `numkeys` argument), the argument after the keys with `side`;
    /// `Err` is the error reply.
    pub fn parse(
        args: &Args<'_>,
        at: usize,
        side: fn(&[u8]) -> Option<W>,
    ) -> Result<MpopArgs<W>, &'static str> {
        let numkeys = match parse_i64(args.get(at)) {
            Some(n) if n >= 1 => n as u64,
            _ => return Err(NUMKEYS),
        };
        let where_at = match usize::try_from(numkeys).ok().and_then(|n| n.checked_add(at + 1)) {
            Some(i) if i < args.len() => i,
            _ => return Err(SYNTAX),
        };
        let side = side(args.get(where_at)).ok_or(SYNTAX)?;
        let mut count = None;
        let mut j = where_at + 1;
        while j < args.len() {
            if count.is_none() && args.get(j).eq_ignore_ascii_case(b"count") && j + 1 < args.len() {
                match parse_i64(args.get(j + 1)) {
                    Some(n) if n >= 1 => count = Some(n),
                    _ => return Err(COUNT_NOT_POSITIVE),
                }
                j += 2;
            } else {
                return Err(SYNTAX);
            }
        }
        Ok(MpopArgs {
            keys: at + 1..where_at,
            side,
            count: usize::try_from(count.unwrap_or(1)).unwrap_or(usize::MAX),
        })
    }
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: pops up to `count` elements (1
/// by default) from the first non-empty list: `[key, [element, ...]]`, or a null array.
pub fn lmpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    mpop_from(ctx, args, 1, out)
}

/// `LMPOP`'s work, its `numkeys` at argument `at` (`BLMPOP` has its timeout first).
pub(super) fn mpop_from(ctx: &mut Ctx<'_>, args: &Args<'_>, at: usize, out: &mut ReplyBuf) {
    let m = match MpopArgs::parse(args, at, parse_side) {
        Ok(m) => m,
        Err(e) => return out.error(e),
    };
    let from_head = m.side;
    for key in m.keys.map(|i| args.get(i)) {
        let mut list = match ctx.db.list(key, ctx.now_ms) {
            Err(_) => return out.error(WRONGTYPE),
            Ok(None) => continue,
            Ok(Some(list)) => list,
        };
        let n = m.count.min(list.len());
        out.array(2);
        out.bulk(key);
        out.array(n);
        for _ in 0..n {
            let item = if from_head {
                list.pop_front()
            } else {
                list.pop_back()
            };
            match item {
                Some(item) => out.bulk_buf(&item),
                None => out.null(),
            }
        }
        return;
    }
    out.null_array();
}

/// `LMPOP`'s reply to a count that is not a positive integer.
pub const COUNT_NOT_POSITIVE: &str = "ERR count should be greater than 0";

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
