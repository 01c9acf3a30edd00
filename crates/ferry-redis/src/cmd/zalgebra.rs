//! Sorted-set algebra: `ZUNION`, `ZINTER`, `ZDIFF` (`WITHSCORES`), `ZUNIONSTORE`,
//! `ZINTERSTORE`, `ZDIFFSTORE` (`WEIGHTS`, `AGGREGATE SUM|MIN|MAX`) and `ZINTERCARD`
//! (`LIMIT`), as Redis 7.0's `zunionInterDiffGenericCommand` computes them.
//!
//! Inputs are sorted sets or plain sets (each member with score 1). The order of the steps
//! is Redis's: the key count is checked, every key is looked up (`WRONGTYPE` before any
//! option error), then the options are read. Union and intersection take the inputs from the
//! smallest to the largest (a stable sort, as glibc's `qsort` is here), and the order of
//! the additions shows in the result: `inf + -inf` is NaN, which Redis makes 0. A weighted
//! score that is NaN (`inf * 0`) is 0 too, except an intersection's later inputs, where Redis
//! lets `MIN` and `MAX` keep the score they have. A result that is replied is exact (`-0`
//! stays `-0`); one that is stored goes through [`ZSet::insert`], as Redis converts it.

use std::cmp::Ordering;
use std::collections::HashMap;

use ferry_buf::SharedBuf;

use super::sets::NEGATIVE_LIMIT;
use super::strings::parse_i64;
use super::zsets::{parse_score, reply_with_scores};
use super::{Args, Ctx, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::db::{Db, SetIf, Ttl, Value};
use crate::fields::FieldTable;
use crate::resp::ReplyBuf;
use crate::zset::ZSet;

/// A `WEIGHTS` value that is not a number.
pub const BAD_WEIGHT: &str = "ERR weight value is not a float";

/// The reply to a key count below 1, worded with the command's name.
pub fn no_keys(command: &str) -> String {
    format!("ERR at least 1 input key is needed for '{command}' command")
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// How scores of the same member combine.
#[derive(Debug, Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's `zunionInterAggregate`: a NaN sum is 0; `MIN` and `MAX` keep `acc` unless `v`
    /// is strictly beyond it.
    fn fold(self, acc: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *acc += v;
                if acc.is_nan() {
                    *acc = 0.0;
                }
            }
            Aggregate::Min if v < *acc => *acc = v,
            Aggregate::Max if v > *acc => *acc = v,
            Aggregate::Min | Aggregate::Max => {}
        }
    }
}

/// `weight * score`, 0 where that is NaN.
fn weighted(weight: f64, score: f64) -> f64 {
    let v = weight * score;
    if v.is_nan() { 0.0 } else { v }
}

/// One input: a sorted set, a plain set (scores 1), or a missing key (empty).
#[derive(Clone, Copy)]
enum Source<'d> {
    Sorted(&'d ZSet),
    Plain(&'d FieldTable<()>),
    Missing,
}

impl<'d> Source<'d> {
    fn len(&self) -> usize {
        match self {
            Source::Sorted(z) => z.len(),
            Source::Plain(s) => s.len(),
            Source::Missing => 0,
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (&'d SharedBuf, f64)> + 'd> {
        match *self {
            Source::Sorted(z) => Box::new(z.iter()),
            Source::Plain(s) => Box::new(s.iter().map(|(m, _)| (m, 1.0))),
            Source::Missing => Box::new(std::iter::empty()),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Sorted(z) => z.score(member),
            Source::Plain(s) => s.contains(member).then_some(1.0),
            Source::Missing => None,
        }
    }
}

/// The inputs at `keys`, or `WRONGTYPE`'s reply if one is neither kind of set. Every key is
/// looked up (counted, expired) before any is read, as Redis does.
fn read_sources<'d>(db: &'d mut Db, keys: &[&[u8]], now_ms: u64) -> Option<Vec<Source<'d>>> {
    for &k in keys {
        if let Some(v) = db.get(k, now_ms) {
            if !matches!(v, Value::ZSet(_) | Value::Set(_)) {
                return None;
            }
        }
    }
    let db: &Db = db;
    Some(
        keys.iter()
            .map(|k| match db.peek(k, now_ms) {
                Some(Value::ZSet(z)) => Source::Sorted(z),
                Some(Value::Set(s)) => Source::Plain(s),
                _ => Source::Missing,
            })
            .collect(),
    )
}

/// What the command is and where its key count is.
#[derive(Clone, Copy)]
struct Form {
    name: &'static str,
    op: Op,
    /// The argument holding the key count (the keys follow it).
    numkeys_at: usize,
    /// `*STORE`: the destination is argument 1.
    store: bool,
    /// `ZINTERCARD`.
    card: bool,
}

/// The options after the keys.
struct Options {
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
    /// 0: no limit.
    limit: usize,
}

impl Form {
    /// The key count, or the error reply.
    fn numkeys(&self, args: &Args<'_>) -> Result<usize, String> {
        let n = parse_i64(args.get(self.numkeys_at)).ok_or_else(|| NOT_INTEGER.to_string())?;
        if n < 1 {
            return Err(no_keys(self.name));
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n > args.len() - (self.numkeys_at + 1) {
            return Err(SYNTAX.to_string());
        }
        Ok(n)
    }

    /// The options from argument `j` on, for `n` keys.
    fn options(&self, args: &Args<'_>, mut j: usize, n: usize) -> Result<Options, &'static str> {
        let mut o = Options {
            weights: vec![1.0; n],
            aggregate: Aggregate::Sum,
            with_scores: false,
            limit: 0,
        };
        let algebra = self.op != Op::Diff && !self.card;
        while j < args.len() {
            let remaining = args.len() - j;
            let opt = args.get(j);
            if algebra && remaining > n && opt.eq_ignore_ascii_case(b"weights") {
                for (i, w) in o.weights.iter_mut().enumerate() {
                    *w = parse_score(args.get(j + 1 + i)).ok_or(BAD_WEIGHT)?;
                }
                j += 1 + n;
            } else if algebra && remaining >= 2 && opt.eq_ignore_ascii_case(b"aggregate") {
                o.aggregate = match args.get(j + 1).to_ascii_lowercase().as_slice() {
                    b"sum" => Aggregate::Sum,
                    b"min" => Aggregate::Min,
                    b"max" => Aggregate::Max,
                    _ => return Err(SYNTAX),
                };
                j += 2;
            } else if !self.store && !self.card && opt.eq_ignore_ascii_case(b"withscores") {
                o.with_scores = true;
                j += 1;
            } else if self.card && remaining >= 2 && opt.eq_ignore_ascii_case(b"limit") {
                o.limit = match parse_i64(args.get(j + 1)) {
                    Some(l) if l >= 0 => usize::try_from(l).unwrap_or(usize::MAX),
                    _ => return Err(NEGATIVE_LIMIT),
                };
                j += 2;
            } else {
                return Err(SYNTAX);
            }
        }
        Ok(o)
    }
}

/// The members of the result with their scores, in no order, up to `limit` for an
/// intersection (0: all).
fn compute<'d>(op: Op, sources: &[Source<'d>], o: &Options) -> Vec<(&'d SharedBuf, f64)> {
    if op == Op::Diff {
        let (first, others) = sources.split_first().expect("at least one key");
        return first
            .iter()
            .filter(|(m, _)| others.iter().all(|s| s.score(m).is_none()))
            .collect();
    }
    let mut order: Vec<(Source<'d>, f64)> = sources.iter().copied().zip(o.weights.iter().copied()).collect();
    order.sort_by_key(|(s, _)| s.len());
    if op == Op::Inter {
        let ((first, w0), others) = order.split_first().expect("at least one key");
        let limit = if o.limit == 0 { usize::MAX } else { o.limit };
        return first
            .iter()
            .filter_map(|(m, s)| {
                let mut score = weighted(*w0, s);
                for (src, w) in others {
                    o.aggregate.fold(&mut score, w * src.score(m)?);
                }
                Some((m, score))
            })
            .take(limit)
            .collect();
    }
    let mut acc: HashMap<&'d [u8], (&'d SharedBuf, f64)> = HashMap::new();
    for (src, w) in &order {
        for (m, s) in src.iter() {
            let v = weighted(*w, s);
            acc.entry(&m[..])
                .and_modify(|(_, score)| o.aggregate.fold(score, v))
                .or_insert((m, v));
        }
    }
    acc.into_values().collect()
}

/// Reads the inputs and computes the result (owned, so the keyspace can change after), or
/// replies with the error.
fn run(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
    form: Form,
) -> Option<(Vec<(SharedBuf, f64)>, Options)> {
    let n = match form.numkeys(args) {
        Ok(n) => n,
        Err(e) => {
            out.error(e);
            return None;
        }
    };
    let first = form.numkeys_at + 1;
    let keys: Vec<&[u8]> = (first..first + n).map(|i| args.get(i)).collect();
    let Some(sources) = read_sources(ctx.db, &keys, ctx.now_ms) else {
        out.error(WRONGTYPE);
        return None;
    };
    let o = match form.options(args, first + n, n) {
        Ok(o) => o,
        Err(e) => {
            out.error(e);
            return None;
        }
    };
    let result = compute(form.op, &sources, &o)
        .into_iter()
        .map(|(m, s)| (m.clone(), s))
        .collect();
    Some((result, o))
}

/// `ZUNION`, `ZINTER`, `ZDIFF`: the members, lowest score first.
fn reply(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, name: &'static str, op: Op) {
    let form = Form {
        name,
        op,
        numkeys_at: 1,
        store: false,
        card: false,
    };
    if let Some((mut result, o)) = run(ctx, args, out, form) {
        // As a skiplist orders: by score (`-0` equal to `0`; no score is NaN), then bytes.
        result.sort_by(|(a, x), (b, y)| {
            x.partial_cmp(y)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a[..].cmp(&b[..]))
        });
        reply_with_scores(out, result.iter().map(|(m, s)| (m, *s)), o.with_scores, true);
    }
}

/// The `*STORE` forms: the result at `args[1]` (replacing it, without a TTL; an empty result
/// deletes it), replying with its size.
fn store(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, name: &'static str, op: Op) {
    let form = Form {
        name,
        op,
        numkeys_at: 2,
        store: true,
        card: false,
    };
    let Some((result, _)) = run(ctx, args, out, form) else {
        return;
    };
    let (dst, now) = (args.get(1), ctx.now_ms);
    if result.is_empty() {
        ctx.db.remove(dst, now);
        return out.integer(0);
    }
    let z = ZSet::collect(result);
    let n = z.len();
    ctx.db.set(dst, Value::ZSet(z), Ttl::Clear, SetIf::Always, now);
    out.integer(n as i64);
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`.
pub fn zunion(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    reply(ctx, args, out, "zunion", Op::Union);
}

/// `ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`.
pub fn zinter(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    reply(ctx, args, out, "zinter", Op::Inter);
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`: the first set's members in none of the others.
pub fn zdiff(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    reply(ctx, args, out, "zdiff", Op::Diff);
}

/// `ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE ...]`.
pub fn zunionstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    store(ctx, args, out, "zunionstore", Op::Union);
}

/// `ZINTERSTORE destination numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE ...]`.
pub fn zinterstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    store(ctx, args, out, "zinterstore", Op::Inter);
}

/// `ZDIFFSTORE destination numkeys key [key ...]`.
pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    store(ctx, args, out, "zdiffstore", Op::Diff);
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`: the size of the intersection, counted
/// up to `limit` (0: no limit).
pub fn zintercard(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let form = Form {
        name: "zintercard",
        op: Op::Inter,
        numkeys_at: 1,
        store: false,
        card: true,
    };
    if let Some((result, _)) = run(ctx, args, out, form) {
        out.integer(result.len() as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::*;
    use crate::resp::Proto;

    #[test]
    fn union_inter_diff_with_weights_and_plain_sets() {
        let mut h = Harness::new();
        h.cmd("ZADD a 1 x 2 y 3 z");
        h.cmd("ZADD b 10 y 20 z 30 w");
        h.cmd("SADD s x w");
        assert_eq!(h.cmd("ZUNION 2 a b"), bulks(&["x", "y", "z", "w"]));
        assert_eq!(
            h.cmd("ZUNION 3 a b s WITHSCORES"),
            bulks(&["x", "2", "y", "12", "z", "23", "w", "31"])
        );
        assert_eq!(
            h.cmd("ZINTER 2 a b WEIGHTS 2 0.5 AGGREGATE MAX WITHSCORES"),
            bulks(&["y", "5", "z", "10"])
        );
        assert_eq!(
            h.cmd("ZINTER 2 a b aggregate min withscores"),
            bulks(&["y", "2", "z", "3"])
        );
        assert_eq!(h.cmd("ZDIFF 2 a b WITHSCORES"), bulks(&["x", "1"]));
        assert_eq!(h.cmd("ZDIFF 2 nokey a"), "*0\r\n");
        assert_eq!(h.cmd("ZINTERCARD 2 a b"), int(2));
        assert_eq!(h.cmd("ZINTERCARD 2 a b LIMIT 1"), int(1));
        assert_eq!(h.cmd("ZINTERCARD 2 a nokey"), int(0));
        assert_eq!(h.cmd("ZUNIONSTORE d 2 a s WEIGHTS 1 -1"), int(4));
        assert_eq!(
            h.cmd("ZRANGE d 0 -1 WITHSCORES"),
            bulks(&["w", "-1", "x", "0", "y", "2", "z", "3"])
        );
        h.cmd("EXPIRE d 100");
        assert_eq!(h.cmd("ZINTERSTORE d 2 a b"), int(2));
        assert_eq!(h.cmd("TTL d"), int(-1), "a stored result has no TTL");
        assert_eq!(h.cmd("ZDIFFSTORE d 2 a a"), int(0));
        assert_eq!(
            h.cmd("EXISTS d"),
            int(0),
            "an empty result deletes the destination"
        );
        h.client.proto = Proto::Resp3;
        assert_eq!(h.cmd("ZDIFF 2 a b WITHSCORES"), "*1\r\n*2\r\n$1\r\nx\r\n,1\r\n");
    }

    #[test]
    fn nan_and_signed_zero_as_redis() {
        let mut h = Harness::new();
        h.cmd("ZADD p 1 m");
        h.cmd("ZADD q inf m");
        h.cmd("ZADD r -inf m");
        h.cmd("ZADD s2 5 m 6 n");
        // Smallest first, stably: inf + -inf is NaN, made 0, before or after the 5.
        assert_eq!(h.cmd("ZUNION 3 q r p WITHSCORES"), bulks(&["m", "1"]));
        assert_eq!(h.cmd("ZUNION 3 q p r WITHSCORES"), bulks(&["m", "0"]));
        assert_eq!(h.cmd("ZUNION 3 s2 q r WITHSCORES"), bulks(&["m", "5", "n", "6"]));
        // A weighted NaN is 0, but an intersection's later inputs keep MIN's score.
        assert_eq!(h.cmd("ZUNION 1 q WEIGHTS 0 WITHSCORES"), bulks(&["m", "0"]));
        assert_eq!(
            h.cmd("ZINTER 2 p q WEIGHTS 1 0 AGGREGATE MIN WITHSCORES"),
            bulks(&["m", "1"])
        );
        h.cmd("ZADD zero 0 m");
        assert_eq!(h.cmd("ZUNION 1 zero WEIGHTS -1 WITHSCORES"), bulks(&["m", "-0"]));
        assert_eq!(
            h.cmd("ZINTER 2 zero zero WEIGHTS 1 -1 AGGREGATE MIN WITHSCORES"),
            bulks(&["m", "0"])
        );
        assert_eq!(h.cmd("ZUNIONSTORE d 1 zero WEIGHTS -1"), int(1));
        assert_eq!(h.cmd("ZSCORE d m"), bulk("0"), "a small stored set reads -0 as 0");
        let long = "x".repeat(65);
        h.cmd(&format!("ZADD big 1 {long}"));
        assert_eq!(h.cmd("ZUNIONSTORE d 2 zero big WEIGHTS -1 1"), int(2));
        assert_eq!(
            h.cmd("ZSCORE d m"),
            bulk("-0"),
            "a long member makes it a skiplist as a whole"
        );
    }

    #[test]
    fn errors_in_redis_order() {
        let mut h = Harness::new();
        h.cmd("ZADD z 1 a");
        h.cmd("SET str v");
        assert_eq!(h.cmd("ZUNION 0 z"), err(&no_keys("zunion")));
        assert_eq!(h.cmd("ZINTERSTORE d -1 z"), err(&no_keys("zinterstore")));
        assert_eq!(h.cmd("ZINTERCARD 0 z"), err(&no_keys("zintercard")));
        assert_eq!(h.cmd("ZDIFF x z"), err(NOT_INTEGER));
        assert_eq!(h.cmd("ZUNION 2 z"), err(SYNTAX));
        assert_eq!(
            h.cmd("ZUNION 1 str WEIGHTS x"),
            err(WRONGTYPE),
            "keys before options"
        );
        assert_eq!(h.cmd("ZUNION 1 z WEIGHTS x"), err(BAD_WEIGHT));
        assert_eq!(h.cmd("ZUNION 1 z WEIGHTS nan"), err(BAD_WEIGHT));
        assert_eq!(h.cmd("ZUNION 1 z WEIGHTS 1 2"), err(SYNTAX));
        assert_eq!(h.cmd("ZUNION 1 z AGGREGATE avg"), err(SYNTAX));
        assert_eq!(h.cmd("ZDIFF 1 z WEIGHTS 1"), err(SYNTAX));
        assert_eq!(h.cmd("ZUNIONSTORE d 1 z WITHSCORES"), err(SYNTAX));
        assert_eq!(h.cmd("ZINTERCARD 1 z WITHSCORES"), err(SYNTAX));
        assert_eq!(h.cmd("ZINTERCARD 1 z LIMIT -1"), err(NEGATIVE_LIMIT));
        assert_eq!(h.cmd("ZINTERCARD 1 z LIMIT"), err(SYNTAX));
        assert_eq!(h.cmd("ZUNION 1 z WITHSCORES WITHSCORES"), bulks(&["a", "1"]));
    }
}
