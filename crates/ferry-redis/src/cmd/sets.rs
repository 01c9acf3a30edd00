//! Set commands: `SADD`, `SREM`, `SMEMBERS`, `SISMEMBER`, `SMISMEMBER`, `SCARD`, `SPOP`,
//! `SRANDMEMBER`, `SMOVE`, `SINTER`, `SINTERSTORE`, `SINTERCARD`, `SUNION`, `SUNIONSTORE`,
//! `SDIFF`, `SDIFFSTORE`, `SSCAN`, with Redis 7.0's semantics and error replies.
//!
//! Members are pool buffers in a [`FieldTable`]: they come from [`Args::value`] and go out
//! with [`ReplyBuf::bulk_buf`] (by reference when large). A set computed from others
//! (`SINTERSTORE`, ...) shares its members' buffers with them (counted references, no copy).
//! A set emptied by a command is deleted. Whole-set replies come in the table's order (Redis
//! lists a small set of integers in sorted order, its intset); `SSCAN` returns the whole set
//! in one call with cursor 0.

use ferry_buf::SharedBuf;

use super::hashes::scan_collection;
use super::lists::NOT_POSITIVE;
use super::random::RandomPick;
use super::strings::parse_i64;
use super::{Args, Ctx, OOM, SYNTAX, WRONGTYPE, read_typed};
use crate::db::{Access, Db, Kind, SetIf, Ttl, Value, WrongType};
use crate::fields::{FieldTable, Pick};
use crate::resp::ReplyBuf;

/// `SINTERCARD`'s reply to a key count that is not a positive integer.
pub const NUMKEYS: &str = "ERR numkeys should be greater than 0";
/// `SINTERCARD`'s reply to a key count beyond the arguments.
pub const TOO_MANY_KEYS: &str = "ERR Number of keys can't be greater than number of args";
/// `SINTERCARD`'s reply to a limit that is not a non-negative integer.
pub const NEGATIVE_LIMIT: &str = "ERR LIMIT can't be negative";

type Set = FieldTable<()>;

/// The sets at `keys` for a read (a missing key is `None`), or `WrongType` if one holds
/// another type. Every key is looked up (counted, expired) before any is read, as Redis does.
fn read_sets<'d>(db: &'d mut Db, keys: &[&[u8]], now_ms: u64) -> Result<Vec<Option<&'d Set>>, WrongType> {
    for &k in keys {
        if let Some(v) = db.get(k, now_ms) {
            if !matches!(v, Value::Set(_)) {
                return Err(WrongType);
            }
        }
    }
    let db: &Db = db;
    Ok(keys
        .iter()
        .map(|k| match db.peek(k, now_ms) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        })
        .collect())
}

/// A set of members, as `SMEMBERS` and the set operations reply (`~` in RESP3).
fn reply_members<'a>(out: &mut ReplyBuf, members: impl ExactSizeIterator<Item = &'a SharedBuf>) {
    out.set(members.len());
    for m in members {
        out.bulk_buf(m);
    }
}

/// `SADD key member [member ...]`: the number of new members.
pub fn sadd(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut set = match ctx.db.collection_or_insert(args.get(1), ctx.now_ms, Kind::Set) {
        Ok(set) => set,
        Err(_) => return out.error(WRONGTYPE),
    };
    let (pool, keep) = (set.pool(), set.keep_in_place_min());
    let members: Result<Vec<_>, _> = (2..args.len()).map(|i| args.value(i, pool, keep)).collect();
    let Ok(members) = members else {
        return out.error(OOM);
    };
    let added = members
        .into_iter()
        .filter(|m| set.set().insert(m.clone(), ()))
        .count();
    out.integer(added as i64);
}

/// `SREM key member [member ...]`: the number removed; the key goes with the last member.
pub fn srem(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.collection(args.get(1), ctx.now_ms, Kind::Set) {
        Err(_) => out.error(WRONGTYPE),
        Ok(None) => out.integer(0),
        Ok(Some(mut set)) => {
            let removed = args
                .iter_from(2)
                .filter(|m| set.set().remove(m).is_some())
                .count();
            out.integer(removed as i64);
        }
    }
}

/// `SISMEMBER key member`: 1 or 0.
pub fn sismember(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(s) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_set) {
        out.integer(i64::from(s.contains(args.get(2))));
    }
}

/// `SMISMEMBER key member [member ...]`: 1 or 0 per member.
pub fn smismember(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let empty = Set::default();
    let s = match ctx.db.get(args.get(1), ctx.now_ms) {
        Some(Value::Set(s)) => s,
        Some(_) => return out.error(WRONGTYPE),
        None => &empty,
    };
    out.array(args.len() - 2);
    for m in args.iter_from(2) {
        out.integer(i64::from(s.contains(m)));
    }
}

/// `SCARD key`: the number of members, 0 if missing.
pub fn scard(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(s) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_set) {
        out.integer(s.len() as i64);
    }
}

/// `SMEMBERS key`: every member (Redis runs it as a one-key `SINTER`).
pub fn smembers(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(s) = read_typed(ctx, args.get(1), out, |out| out.set(0), Value::as_set) {
        reply_members(out, s.iter().map(|(m, _)| m));
    }
}

/// `SPOP key [count]`: one random member removed (null if missing), or up to `count` of
/// them as a set.
pub fn spop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() > 3 {
        return out.error(SYNTAX);
    }
    let count = match args.len() {
        3 => match parse_i64(args.get(2)) {
            Some(n) if n >= 0 => Some(n),
            _ => return out.error(NOT_POSITIVE),
        },
        _ => None,
    };
    let mut rng = ctx.db.rng();
    let mut set = match ctx.db.collection(args.get(1), ctx.now_ms, Kind::Set) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(None) if count.is_some() => return out.set(0),
        Ok(None) => return out.null(),
        Ok(Some(set)) => set,
    };
    let pick = match count {
        None => Pick::Repeating(1),
        Some(n) => Pick::Distinct(usize::try_from(n).unwrap_or(usize::MAX)),
    };
    let mut picked: Vec<SharedBuf> = Vec::new();
    set.set().pick(pick, &mut rng, |(m, _)| {
        picked.push(m.clone());
        true
    });
    let emptied = set.set().len() <= picked.len();
    for m in &picked {
        set.set().remove(m);
    }
    drop(set);
    if ctx.server.feed.is_active() {
        // A replica must remove the same members: Redis propagates the whole set popped as
        // `DEL`, else `SREM` of the picks.
        let key = args.get(1).to_vec();
        ctx.propagate_as = Some(if emptied && count.is_some() {
            vec![b"DEL".to_vec(), key]
        } else {
            [
                vec![b"SREM".to_vec(), key],
                picked.iter().map(|m| m.to_vec()).collect(),
            ]
            .concat()
        });
    }
    match count {
        None => out.bulk_buf(&picked[0]),
        Some(_) => reply_members(out, picked.iter()),
    }
}

/// `SRANDMEMBER key [count]` (see [`random`](super::random)).
pub fn srandmember(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    RandomPick {
        with_word: None,
        table: Value::as_set,
        write_value: |_, ()| {},
    }
    .run(ctx, args, out);
}

/// `SMOVE source destination member`: 1 if moved (or already there, source and destination
/// being the same set), 0 if not a member of the source.
pub fn smove(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (src, dst, member, now) = (args.get(1), args.get(2), args.get(3), ctx.now_ms);
    let is_set = |db: &mut Db, key| {
        db.find(key, now, Access::Write)
            .map(|e| matches!(e.value(), Value::Set(_)))
    };
    let (src_set, dst_set) = (is_set(ctx.db, src), is_set(ctx.db, dst));
    match (src_set, dst_set) {
        (None, _) => return out.integer(0),
        (Some(false), _) | (_, Some(false)) => return out.error(WRONGTYPE),
        _ => {}
    }
    if src == dst {
        let s = ctx.db.peek(src, now);
        let member_of = matches!(s, Some(Value::Set(s)) if s.contains(member));
        return out.integer(i64::from(member_of));
    }
    let removed = match ctx.db.collection(src, now, Kind::Set) {
        Ok(Some(mut s)) => s.set().remove(member),
        _ => unreachable!("the source was found to be a set"),
    };
    let Some((member, ())) = removed else {
        return out.integer(0);
    };
    match ctx.db.collection_or_insert(dst, now, Kind::Set) {
        Ok(mut d) => {
            d.set().insert(member, ());
        }
        Err(_) => unreachable!("the destination was found to be a set or missing"),
    }
    out.integer(1);
}

/// The members of the intersection of `sets` (none if one is missing), up to `limit`.
fn intersection(mut sets: Vec<Option<&Set>>, limit: usize) -> Vec<SharedBuf> {
    if sets.iter().any(Option::is_none) || sets.is_empty() {
        return Vec::new();
    }
    let mut sets: Vec<&Set> = sets.drain(..).flatten().collect();
    sets.sort_by_key(|s| s.len());
    let (smallest, others) = sets.split_first().expect("checked non-empty");
    smallest
        .iter()
        .filter(|(m, _)| others.iter().all(|s| s.contains(m)))
        .take(limit)
        .map(|(m, _)| m.clone())
        .collect()
}

/// The members of the union of `sets`.
fn union(sets: Vec<Option<&Set>>) -> Vec<SharedBuf> {
    let mut all = Set::default();
    for s in sets.into_iter().flatten() {
        for (m, _) in s.iter() {
            all.insert(m.clone(), ());
        }
    }
    all.iter().map(|(m, _)| m.clone()).collect()
}

/// The members of the first of `sets` that are in none of the others.
fn difference(sets: Vec<Option<&Set>>) -> Vec<SharedBuf> {
    let Some((Some(first), others)) = sets.split_first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|(m, _)| others.iter().flatten().all(|s| !s.contains(m)))
        .map(|(m, _)| m.clone())
        .collect()
}

/// A set operation over keys `from..` of `args`: the members to reply with or store, or
/// `None` after replying `WRONGTYPE`.
fn operate(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    from: usize,
    out: &mut ReplyBuf,
    op: fn(Vec<Option<&Set>>) -> Vec<SharedBuf>,
) -> Option<Vec<SharedBuf>> {
    let keys: Vec<&[u8]> = args.iter_from(from).collect();
    match read_sets(ctx.db, &keys, ctx.now_ms) {
        Ok(sets) => Some(op(sets)),
        Err(WrongType) => {
            out.error(WRONGTYPE);
            None
        }
    }
}

/// Replies with the members as a set.
fn reply(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
    op: fn(Vec<Option<&Set>>) -> Vec<SharedBuf>,
) {
    if let Some(members) = operate(ctx, args, 1, out, op) {
        reply_members(out, members.iter());
    }
}

/// Stores the members at `args[1]` (replacing whatever was there, without a TTL; an empty
/// result deletes it) and replies with their number.
fn store(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
    op: fn(Vec<Option<&Set>>) -> Vec<SharedBuf>,
) {
    let Some(members) = operate(ctx, args, 2, out, op) else {
        return;
    };
    let (dst, now) = (args.get(1), ctx.now_ms);
    if members.is_empty() {
        ctx.db.remove(dst, now);
        return out.integer(0);
    }
    let mut set = Set::default();
    for m in members {
        set.insert(m, ());
    }
    let n = set.len();
    ctx.db.set(dst, Value::Set(set), Ttl::Clear, SetIf::Always, now);
    out.integer(n as i64);
}

/// `SINTER key [key ...]`.
pub fn sinter(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    reply(ctx, args, out, |sets| intersection(sets, usize::MAX));
}

/// `SINTERSTORE destination key [key ...]`.
pub fn sinterstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    store(ctx, args, out, |sets| intersection(sets, usize::MAX));
}

/// `SUNION key [key ...]`.
pub fn sunion(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    reply(ctx, args, out, union);
}

/// `SUNIONSTORE destination key [key ...]`.
pub fn sunionstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    store(ctx, args, out, union);
}

/// `SDIFF key [key ...]`.
pub fn sdiff(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    reply(ctx, args, out, difference);
}

/// `SDIFFSTORE destination key [key ...]`.
pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    store(ctx, args, out, difference);
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`: the size of the intersection, counted
/// up to `limit` (0: no limit).
pub fn sintercard(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let numkeys = match parse_i64(args.get(1)) {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return out.error(NUMKEYS),
    };
    if numkeys > args.len() - 2 {
        return out.error(TOO_MANY_KEYS);
    }
    let mut limit = 0;
    let mut j = 2 + numkeys;
    while j < args.len() {
        if args.get(j).eq_ignore_ascii_case(b"limit") && j + 1 < args.len() {
            j += 1;
            match parse_i64(args.get(j)) {
                Some(n) if n >= 0 => limit = usize::try_from(n).unwrap_or(usize::MAX),
                _ => return out.error(NEGATIVE_LIMIT),
            }
        } else {
            return out.error(SYNTAX);
        }
        j += 1;
    }
    let keys: Vec<&[u8]> = (2..2 + numkeys).map(|i| args.get(i)).collect();
    match read_sets(ctx.db, &keys, ctx.now_ms) {
        Err(WrongType) => out.error(WRONGTYPE),
        Ok(sets) => {
            let limit = if limit == 0 { usize::MAX } else { limit };
            out.integer(intersection(sets, limit).len() as i64);
        }
    }
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: `[0, [member, ...]]`, the whole set.
pub fn sscan(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    scan_collection(ctx, args, out, Kind::Set);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::NOT_INTEGER;
    use crate::cmd::harness::*;
    use crate::cmd::random::COUNT_RANGE;
    use crate::resp::Proto;

    /// The bulk strings of a reply, sorted.
    fn members(reply: &str) -> Vec<String> {
        let mut m: Vec<String> = reply
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.starts_with('$') && !l.is_empty())
            .map(String::from)
            .collect();
        m.sort();
        m
    }

    #[test]
    fn add_remove_and_membership() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("SADD s a b a c"), int(3));
        assert_eq!(h.cmd("SADD s c d"), int(1));
        assert_eq!(h.cmd("SCARD s"), int(4));
        assert_eq!(h.cmd("SCARD nokey"), int(0));
        assert_eq!(h.cmd("SISMEMBER s a"), int(1));
        assert_eq!(h.cmd("SISMEMBER s z"), int(0));
        assert_eq!(h.cmd("SMISMEMBER s a z"), "*2\r\n:1\r\n:0\r\n");
        assert_eq!(h.cmd("SMISMEMBER nokey a"), "*1\r\n:0\r\n");
        assert_eq!(members(&h.cmd("SMEMBERS s")), ["a", "b", "c", "d"]);
        assert_eq!(h.cmd("SMEMBERS nokey"), "*0\r\n");
        assert_eq!(h.cmd("SREM s a z a"), int(1));
        assert_eq!(h.cmd("SREM nokey a"), int(0));
        assert_eq!(h.cmd("SREM s b c d"), int(3));
        assert_eq!(h.cmd("EXISTS s"), int(0), "an emptied set is deleted");
        assert_eq!(h.db.used_memory(), 0);
        h.cmd("SET str v");
        for c in [
            "SADD str a",
            "SREM str a",
            "SCARD str",
            "SMEMBERS str",
            "SISMEMBER str a",
            "SPOP str",
        ] {
            assert_eq!(h.cmd(c), err(WRONGTYPE), "{c}");
        }
        h.cmd("SADD s2 x");
        assert_eq!(h.cmd("TYPE s2"), "+set\r\n");
        h.client.proto = Proto::Resp3;
        assert_eq!(h.cmd("SMEMBERS s2"), "~1\r\n$1\r\nx\r\n");
        assert_eq!(h.cmd("SMEMBERS nokey"), "~0\r\n");
    }

    #[test]
    fn set_operations_and_stores() {
        let mut h = Harness::new();
        h.cmd("SADD a 1 2 3 4");
        h.cmd("SADD b 3 4 5");
        h.cmd("SADD c 4 6");
        assert_eq!(members(&h.cmd("SINTER a b c")), ["4"]);
        assert_eq!(members(&h.cmd("SINTER a b")), ["3", "4"]);
        assert_eq!(h.cmd("SINTER a nokey"), "*0\r\n");
        assert_eq!(members(&h.cmd("SUNION a nokey c")), ["1", "2", "3", "4", "6"]);
        assert_eq!(members(&h.cmd("SDIFF a b nokey")), ["1", "2"]);
        assert_eq!(h.cmd("SDIFF nokey a"), "*0\r\n");
        assert_eq!(h.cmd("SINTERCARD 2 a b"), int(2));
        assert_eq!(h.cmd("SINTERCARD 2 a b LIMIT 1"), int(1));
        assert_eq!(h.cmd("SINTERCARD 2 a b LIMIT 0"), int(2));
        assert_eq!(h.cmd("SINTERCARD 0 a"), err(NUMKEYS));
        assert_eq!(h.cmd("SINTERCARD x a"), err(NUMKEYS));
        assert_eq!(h.cmd("SINTERCARD 3 a b"), err(TOO_MANY_KEYS));
        assert_eq!(h.cmd("SINTERCARD 1 a LIMIT -1"), err(NEGATIVE_LIMIT));
        assert_eq!(h.cmd("SINTERCARD 1 a LIMIT"), err(SYNTAX));
        assert_eq!(h.cmd("SINTERCARD 1 a FOO 1"), err(SYNTAX));
        h.cmd("SET str v");
        h.cmd("PEXPIRE str 100000");
        assert_eq!(
            h.cmd("SINTER nokey str"),
            err(WRONGTYPE),
            "every key is type-checked"
        );
        assert_eq!(
            h.cmd("SUNIONSTORE str a c"),
            int(5),
            "the destination may hold any type"
        );
        assert_eq!(h.cmd("TTL str"), int(-1), "a stored set has no TTL");
        assert_eq!(h.cmd("SINTERSTORE str a nokey"), int(0));
        assert_eq!(
            h.cmd("EXISTS str"),
            int(0),
            "an empty result deletes the destination"
        );
        assert_eq!(h.cmd("SDIFFSTORE a a b"), int(2));
        assert_eq!(members(&h.cmd("SMEMBERS a")), ["1", "2"]);
        assert_eq!(h.cmd("SINTERCARD 1 a"), int(2));
        assert_eq!(h.db.used_memory(), {
            let per = |members: usize, bytes: usize| {
                1 + crate::db::KEY_OVERHEAD + bytes + members * crate::fields::ENTRY_OVERHEAD
            };
            per(2, 2) + per(3, 3) + per(2, 2)
        });
    }

    #[test]
    fn smove_between_sets() {
        let mut h = Harness::new();
        h.cmd("SADD a x y");
        assert_eq!(h.cmd("SMOVE nokey a x"), int(0));
        assert_eq!(h.cmd("SMOVE a b z"), int(0));
        assert_eq!(h.cmd("SMOVE a a x"), int(1));
        assert_eq!(h.cmd("SMOVE a a z"), int(0));
        assert_eq!(h.cmd("SMOVE a b x"), int(1));
        assert_eq!(h.cmd("SMOVE a b y"), int(1));
        assert_eq!(h.cmd("EXISTS a"), int(0));
        assert_eq!(members(&h.cmd("SMEMBERS b")), ["x", "y"]);
        h.cmd("SET str v");
        assert_eq!(
            h.cmd("SMOVE nokey str x"),
            int(0),
            "a missing source is checked first"
        );
        assert_eq!(h.cmd("SMOVE b str x"), err(WRONGTYPE));
        assert_eq!(h.cmd("SMOVE str b x"), err(WRONGTYPE));
    }

    #[test]
    fn pop_and_random_members_keep_their_properties() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("SPOP nokey"), NULL);
        assert_eq!(h.cmd("SPOP nokey 2"), "*0\r\n");
        assert_eq!(h.cmd("SPOP nokey -1"), err(NOT_POSITIVE));
        assert_eq!(h.cmd("SPOP nokey 1 2"), err(SYNTAX));
        assert_eq!(h.cmd("SRANDMEMBER nokey"), NULL);
        assert_eq!(h.cmd("SRANDMEMBER nokey 3"), "*0\r\n");
        assert_eq!(h.cmd("SRANDMEMBER nokey x"), err(NOT_INTEGER));
        assert_eq!(h.cmd("SRANDMEMBER nokey -9223372036854775808"), err(COUNT_RANGE));
        assert_eq!(h.cmd("SRANDMEMBER nokey 1 2"), err(SYNTAX));
        let all = ["a", "b", "c", "d", "e"];
        for _ in 0..20 {
            h.cmd("SADD s a b c d e");
            let one = members(&h.cmd("SRANDMEMBER s"));
            assert!(one.len() == 1 && all.contains(&one[0].as_str()), "{one:?}");
            let mut three = members(&h.cmd("SRANDMEMBER s 3"));
            three.dedup();
            assert_eq!(three.len(), 3, "distinct members");
            assert_eq!(members(&h.cmd("SRANDMEMBER s 9")), all);
            assert_eq!(members(&h.cmd("SRANDMEMBER s -9")).len(), 9);
            assert_eq!(h.cmd("SRANDMEMBER s 0"), "*0\r\n");
            let mut popped = members(&h.cmd("SPOP s 2"));
            let popped_one = members(&h.cmd("SPOP s"));
            popped.extend(popped_one);
            let rest = members(&h.cmd("SMEMBERS s"));
            assert_eq!(rest.len(), 2);
            popped.extend(rest);
            popped.sort();
            assert_eq!(popped, all, "popped members leave the set, each once");
            assert_eq!(h.cmd("SPOP s 0"), "*0\r\n");
            assert_eq!(members(&h.cmd("SPOP s 5")).len(), 2);
            assert_eq!(h.cmd("EXISTS s"), int(0));
        }
        assert_eq!(h.db.used_memory(), 0);
    }

    #[test]
    fn large_members_go_by_reference_and_scan() {
        let mut h = Harness::new();
        let long = "M".repeat(64);
        h.cmd(&format!("SADD s {long} m"));
        h.cmd("SINTERSTORE t s");
        assert_eq!(members(&h.cmd("SMEMBERS t")), [long.clone(), "m".to_string()]);
        let Some(Value::Set(t)) = h.db.get(b"t", h.now_ms) else {
            panic!("a set")
        };
        let mut out = ReplyBuf::new(ZERO_COPY);
        reply_members(&mut out, t.iter().map(|(m, _)| m));
        assert_eq!(out.referenced_value_bytes(), 64);
        assert_eq!(out.copied_value_bytes(), 1);
        assert_eq!(
            h.cmd("SSCAN s 0 MATCH M*"),
            format!("*2\r\n$1\r\n0\r\n{}", bulks(&[&long]))
        );
        assert_eq!(h.cmd("SSCAN nokey 0"), "*2\r\n$1\r\n0\r\n*0\r\n");
        h.cmd("SET str v");
        assert_eq!(h.cmd("SSCAN str 0 COUNT 0"), err(WRONGTYPE));
    }
}
