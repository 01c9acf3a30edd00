//! Sorted set commands: `ZADD` (`NX XX GT LT CH INCR`), `ZINCRBY`, `ZSCORE`, `ZMSCORE`,
//! `ZCARD`, `ZCOUNT`, `ZLEXCOUNT`, `ZRANK`, `ZREVRANK`, `ZREM`, `ZRANGE` (`BYSCORE BYLEX REV
//! LIMIT WITHSCORES`) and its legacy forms (`ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`,
//! `ZRANGEBYLEX`, `ZREVRANGEBYLEX`, `ZREVRANGE`), `ZRANGESTORE`, `ZPOPMIN`, `ZPOPMAX`, `ZREMRANGEBYRANK`,
//! `ZREMRANGEBYSCORE`, `ZREMRANGEBYLEX`, `ZSCAN`, `ZRANDMEMBER`, with Redis 7.0's semantics
//! and error replies.
//!
//! Members are pool buffers in a [`ZSet`] (its module doc gives each operation's cost), sent
//! by reference when large. Scores are read as C's `strtod` reads them (Redis's `string2d`
//! for a score, a prefix for a range bound) and written as `%.17g` (doubles in RESP3). A
//! lexicographic range walks from the lowest member as Redis does for a small sorted set (a
//! listpack): with members of different scores, the answer is the listpack's. `ZSCAN` returns
//! the whole sorted set in one call with cursor 0.

use ferry_buf::SharedBuf;

use super::hashes::{parse_hex_float, scan_collection};
use super::lists::{MpopArgs, NOT_POSITIVE};
use super::random::RandomPick;
use super::strings::parse_i64;
use super::{Args, Ctx, NOT_INTEGER, OOM, SYNTAX, WRONGTYPE, read_typed};
use crate::db::{CollMut, Kind, SetIf, Ttl, Value};
use crate::resp::{Proto, ReplyBuf};
use crate::zset::ZSet;

/// The reply to a score that is not a number.
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// `ZADD NX XX`.
pub const NX_XX: &str = "ERR XX and NX options at the same time are not compatible";
/// `ZADD` with two of `GT LT NX`.
pub const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
/// `ZADD INCR` with several pairs.
pub const INCR_PAIRS: &str = "ERR INCR option supports a single increment-element pair";
/// An increment that makes a score NaN (`inf` + `-inf`).
pub const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
/// A score range bound that is not a number.
pub const BAD_SCORE_RANGE: &str = "ERR min or max is not a float";
/// A lexicographic range bound without `[`, `(`, or other than `-` and `+`.
pub const BAD_LEX_RANGE: &str = "ERR min or max not valid string range item";
/// `ZRANGE ... LIMIT` by rank.
pub const LIMIT_BY_RANK: &str =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
/// `ZRANGE ... BYLEX WITHSCORES`.
pub const LEX_WITHSCORES: &str = "ERR syntax error, WITHSCORES not supported in combination with BYLEX";

// ---- numbers ----------------------------------------------------------------------------

/// C's `isspace`.
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What C's `strtod` reads at the start of `bytes`: the value and the bytes consumed (0 when
/// nothing converts: then the value is 0). Leading spaces, a sign, decimal or hexadecimal
/// digits, `inf`, `infinity` and `nan` (any case).
pub fn strtod_prefix(bytes: &[u8]) -> (f64, usize) {
    let start = bytes.iter().take_while(|&&b| c_space(b)).count();
    let mut i = start;
    let negative = match bytes.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = &bytes[i..];
    let lower: Vec<u8> = rest.iter().take(8).map(u8::to_ascii_lowercase).collect();
    let (value, len) = if lower.starts_with(b"infinity") {
        (f64::INFINITY, 8)
    } else if lower.starts_with(b"inf") {
        (f64::INFINITY, 3)
    } else if lower.starts_with(b"nan") {
        (f64::NAN, 3)
    } else if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' && hex_prefix(&rest[2..]) > 0 {
        let n = hex_prefix(&rest[2..]);
        (parse_hex_float(&rest[2..2 + n]).unwrap_or(f64::INFINITY), 2 + n)
    } else {
        let n = decimal_prefix(rest);
        if n == 0 {
            return (0.0, 0);
        }
        let text = std::str::from_utf8(&rest[..n]).expect("ASCII digits");
        (text.parse().unwrap_or(0.0), n)
    };
    (if negative { -value } else { value }, i + len)
}

/// Length of the decimal float at the start of `s`: digits, a point, digits (one digit at
/// least), then an exponent if it has digits.
fn decimal_prefix(s: &[u8]) -> usize {
    let digits = |from: usize| s[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let int = digits(0);
    let mut n = int;
    let mut frac = 0;
    if s.get(n) == Some(&b'.') {
        frac = digits(n + 1);
        if int + frac > 0 {
            n += 1 + frac;
        }
    }
    if int + frac == 0 {
        return 0;
    }
    if matches!(s.get(n), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(s.get(n + 1), Some(b'+' | b'-')));
        let e = digits(n + 1 + sign);
        if e > 0 {
            n += 1 + sign + e;
        }
    }
    n
}

/// Length of the hexadecimal float digits after `0x` (0 if none): `h[.h][p[+-]d]`.
fn hex_prefix(s: &[u8]) -> usize {
    let hex = |from: usize| s[from..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let int = hex(0);
    let mut n = int;
    let mut frac = 0;
    if s.get(n) == Some(&b'.') {
        frac = hex(n + 1);
        if int + frac > 0 {
            n += 1 + frac;
        }
    }
    if int + frac == 0 {
        return 0;
    }
    if matches!(s.get(n), Some(b'p' | b'P')) {
        let sign = usize::from(matches!(s.get(n + 1), Some(b'+' | b'-')));
        let e = s[n + 1 + sign..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if e > 0 {
            n += 1 + sign + e;
        }
    }
    n
}

/// A score as Redis's `string2d` reads it: all of `bytes` is a number, no leading space, not
/// NaN, and not out of range (an overflow to infinity or an underflow to zero; `inf` written
/// out is a score).
pub fn parse_score(bytes: &[u8]) -> Option<f64> {
    if bytes.first().is_none_or(|&b| c_space(b)) {
        return None;
    }
    let (v, n) = strtod_prefix(bytes);
    if n != bytes.len() || v.is_nan() {
        return None;
    }
    let written_inf = bytes.iter().any(|b| b.eq_ignore_ascii_case(&b'i'));
    let mantissa = bytes
        .iter()
        .take_while(|b| !matches!(b, b'e' | b'E' | b'p' | b'P'))
        .skip_while(|&&b| b == b'0' || b == b'-' || b == b'+');
    let has_nonzero = mantissa
        .clone()
        .any(|b| b.is_ascii_hexdigit() && *b != b'0' && *b != b'x' && *b != b'X');
    let overflow = v.is_infinite() && !written_inf;
    let underflow = v == 0.0 && has_nonzero;
    (!overflow && !underflow).then_some(v)
}

// ---- ranges -----------------------------------------------------------------------------

/// A score range: `min`/`max`, each inclusive or exclusive (`(`).
#[derive(Debug, Clone, Copy)]
struct ScoreRange {
    min: f64,
    max: f64,
    min_ex: bool,
    max_ex: bool,
}

impl ScoreRange {
    /// Redis's `zslParseRange`: `(` makes a bound exclusive; the rest is read by `strtod` up
    /// to the end of the C string (the first NUL); NaN is refused.
    fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let bound = |b: &[u8]| {
            let (ex, text) = match b.strip_prefix(b"(") {
                Some(rest) => (true, rest),
                None => (false, b),
            };
            let text = super::c_str(text);
            let (v, n) = strtod_prefix(text);
            (n == text.len() && !v.is_nan()).then_some((v, ex))
        };
        let ((min, min_ex), (max, max_ex)) = (bound(min)?, bound(max)?);
        Some(ScoreRange {
            min,
            max,
            min_ex,
            max_ex,
        })
    }

    fn above_min(&self, s: f64) -> bool {
        if self.min_ex { s > self.min } else { s >= self.min }
    }

    fn below_max(&self, s: f64) -> bool {
        if self.max_ex { s < self.max } else { s <= self.max }
    }
}

/// A lexicographic bound: `-`, `+`, or a member, inclusive (`[`) or exclusive (`(`).
#[derive(Debug, Clone, Copy)]
enum Lex<'a> {
    Min,
    Max,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

/// A lexicographic range.
#[derive(Debug, Clone, Copy)]
struct LexRange<'a> {
    min: Lex<'a>,
    max: Lex<'a>,
}

impl<'a> LexRange<'a> {
    /// Redis's `zslParseLexRange`.
    fn parse(min: &'a [u8], max: &'a [u8]) -> Option<LexRange<'a>> {
        let item = |b: &'a [u8]| match b {
            [b'+'] => Some(Lex::Max),
            [b'-'] => Some(Lex::Min),
            [b'(', rest @ ..] => Some(Lex::Excl(rest)),
            [b'[', rest @ ..] => Some(Lex::Incl(rest)),
            _ => None,
        };
        Some(LexRange {
            min: item(min)?,
            max: item(max)?,
        })
    }

    fn above_min(&self, m: &[u8]) -> bool {
        match self.min {
            Lex::Min => true,
            Lex::Max => false,
            Lex::Incl(b) => m >= b,
            Lex::Excl(b) => m > b,
        }
    }

    fn below_max(&self, m: &[u8]) -> bool {
        match self.max {
            Lex::Min => false,
            Lex::Max => true,
            Lex::Incl(b) => m <= b,
            Lex::Excl(b) => m < b,
        }
    }

    /// Redis's emptiness test (`zslIsInLexRange`'s first step), `-` below and `+` above
    /// everything.
    fn is_empty(&self) -> bool {
        let key = |l: Lex<'a>| match l {
            Lex::Min => (0, &b""[..]),
            Lex::Max => (2, &b""[..]),
            Lex::Incl(b) | Lex::Excl(b) => (1, b),
        };
        let exclusive = |l: Lex<'a>| matches!(l, Lex::Min | Lex::Max | Lex::Excl(_));
        let (a, b) = (key(self.min), key(self.max));
        a > b || (a == b && (exclusive(self.min) || exclusive(self.max)))
    }
}

/// The members in a lexicographic range, as Redis walks a listpack: nothing if the range is
/// empty, the last member is below `min` or the first above `max`; else from the first member
/// at or above `min` (the last at or below `max`, reversed) while within the other bound.
fn lex_members<'z>(z: &'z ZSet, r: &LexRange<'_>, rev: bool) -> Vec<(&'z SharedBuf, f64)> {
    let (Some(first), Some(last)) = (z.iter().next(), z.iter().next_back()) else {
        return Vec::new();
    };
    if r.is_empty() || !r.above_min(&last.0[..]) || !r.below_max(&first.0[..]) {
        return Vec::new();
    }
    if rev {
        z.iter()
            .rev()
            .skip_while(|(m, _)| !r.below_max(m))
            .take_while(|(m, _)| r.above_min(m))
            .collect()
    } else {
        z.iter()
            .skip_while(|(m, _)| !r.above_min(m))
            .take_while(|(m, _)| r.below_max(m))
            .collect()
    }
}

/// The members in a score range, lowest first (highest first for `rev`).
fn score_members<'z>(z: &'z ZSet, r: &ScoreRange, rev: bool) -> Vec<(&'z SharedBuf, f64)> {
    let within = |s: f64| r.above_min(s) && r.below_max(s);
    if rev {
        z.iter()
            .rev()
            .skip_while(|(_, s)| !r.below_max(*s))
            .take_while(|(_, s)| within(*s))
            .collect()
    } else {
        z.iter()
            .skip_while(|(_, s)| !r.above_min(*s))
            .take_while(|(_, s)| within(*s))
            .collect()
    }
}

/// Ranks `[start, end]` (negative from the end) of `len` members as a range of positions,
/// Redis's way; empty when out of range.
fn rank_range(start: i64, end: i64, len: usize) -> std::ops::Range<usize> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return 0..0;
    }
    start as usize..(end.min(len - 1) + 1) as usize
}

// ---- reading and writing ---------------------------------------------------------------

/// Members with scores as `ZRANGE ... WITHSCORES`, `ZPOP*` and `ZRANDMEMBER` reply: flat in
/// RESP2, `[member, score]` pairs in RESP3 when `nested`.
pub(super) fn reply_with_scores<'a>(
    out: &mut ReplyBuf,
    items: impl ExactSizeIterator<Item = (&'a SharedBuf, f64)>,
    with_scores: bool,
    nested: bool,
) {
    let pairs = with_scores && nested && out.proto() == Proto::Resp3;
    let n = items.len();
    out.array(if with_scores && !pairs { n * 2 } else { n });
    for (m, s) in items {
        if pairs {
            out.array(2);
        }
        out.bulk_buf(m);
        if with_scores {
            out.double(s);
        }
    }
}

// ---- commands ---------------------------------------------------------------------------

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
pub fn zadd(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    add(ctx, args, out, false);
}

/// `ZINCRBY key increment member`: the new score.
pub fn zincrby(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    add(ctx, args, out, true);
}

/// Redis's `zaddGenericCommand`.
fn add(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, mut incr: bool) {
    let (mut nx, mut xx, mut gt, mut lt, mut ch) = (false, false, false, false, false);
    let mut at = 2;
    while at < args.len() {
        let opt = args.get(at);
        let flag = match opt.to_ascii_lowercase().as_slice() {
            b"nx" => &mut nx,
            b"xx" => &mut xx,
            b"ch" => &mut ch,
            b"incr" => &mut incr,
            b"gt" => &mut gt,
            b"lt" => &mut lt,
            _ => break,
        };
        *flag = true;
        at += 1;
    }
    let elements = args.len() - at;
    if elements % 2 == 1 || elements == 0 {
        return out.error(SYNTAX);
    }
    if nx && xx {
        return out.error(NX_XX);
    }
    if ((gt || lt) && nx) || (gt && lt) {
        return out.error(GT_LT_NX);
    }
    if incr && elements > 2 {
        return out.error(INCR_PAIRS);
    }
    let mut scores = Vec::with_capacity(elements / 2);
    for j in (at..args.len()).step_by(2) {
        match parse_score(args.get(j)) {
            Some(s) => scores.push(s),
            None => return out.error(NOT_FLOAT),
        }
    }
    let key = args.get(1);
    let exists = match ctx.db.collection(key, ctx.now_ms, Kind::ZSet) {
        Err(_) => return out.error(WRONGTYPE),
        Ok(z) => z.is_some(),
    };
    let (mut added, mut updated, mut processed, mut last) = (0, 0, 0, 0.0);
    if exists || !xx {
        let mut z = match ctx.db.collection_or_insert(key, ctx.now_ms, Kind::ZSet) {
            Ok(z) => z,
            Err(_) => unreachable!("checked above"),
        };
        for (k, &score) in scores.iter().enumerate() {
            let i = at + 1 + 2 * k;
            let current = z.zset().score(args.get(i));
            let new = match current {
                Some(_) if nx => continue,
                None if xx => continue,
                Some(cur) => {
                    let new = if incr { score + cur } else { score };
                    if new.is_nan() {
                        return out.error(NAN_SCORE);
                    }
                    if (lt && new >= cur) || (gt && new <= cur) {
                        continue;
                    }
                    if new != cur {
                        updated += 1;
                    }
                    new
                }
                None => {
                    added += 1;
                    score
                }
            };
            processed += 1;
            last = new;
            if current != Some(new) {
                let Some(member) = member_buf(&z, args, i) else {
                    return out.error(OOM);
                };
                z.zset().insert(member, new);
                z.changed();
            }
        }
    }
    if incr {
        if processed > 0 {
            out.double(last)
        } else {
            out.null()
        }
    } else {
        out.integer(if ch { added + updated } else { added });
    }
}

/// Argument `i` as a stored member.
fn member_buf(z: &CollMut<'_>, args: &Args<'_>, i: usize) -> Option<SharedBuf> {
    args.value(i, z.pool(), z.keep_in_place_min()).ok()
}

/// `ZREM key member [member ...]`: the number removed.
pub fn zrem(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.collection(args.get(1), ctx.now_ms, Kind::ZSet) {
        Err(_) => out.error(WRONGTYPE),
        Ok(None) => out.integer(0),
        Ok(Some(mut z)) => {
            let removed = args.iter_from(2).filter(|m| z.zset().remove(m).is_some()).count();
            out.integer(removed as i64);
        }
    }
}

/// `ZCARD key`.
pub fn zcard(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(z) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_zset) {
        out.integer(z.len() as i64);
    }
}

/// `ZSCORE key member`: the score (a double), null if missing.
pub fn zscore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(z) = read_typed(ctx, args.get(1), out, ReplyBuf::null, Value::as_zset) {
        match z.score(args.get(2)) {
            Some(s) => out.double(s),
            None => out.null(),
        }
    }
}

/// `ZMSCORE key member [member ...]`: a score or null per member.
pub fn zmscore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let empty = ZSet::default();
    let z = match ctx.db.get(args.get(1), ctx.now_ms) {
        Some(Value::ZSet(z)) => z,
        Some(_) => return out.error(WRONGTYPE),
        None => &empty,
    };
    out.array(args.len() - 2);
    for m in args.iter_from(2) {
        match z.score(m) {
            Some(s) => out.double(s),
            None => out.null(),
        }
    }
}

/// `ZRANK key member`.
pub fn zrank(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    rank(ctx, args, out, false);
}

/// `ZREVRANK key member`.
pub fn zrevrank(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    rank(ctx, args, out, true);
}

fn rank(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, rev: bool) {
    if let Some(z) = read_typed(ctx, args.get(1), out, ReplyBuf::null, Value::as_zset) {
        match z.rank(args.get(2)) {
            Some(r) if rev => out.integer((z.len() - 1 - r) as i64),
            Some(r) => out.integer(r as i64),
            None => out.null(),
        }
    }
}

/// `ZCOUNT key min max`.
pub fn zcount(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(r) = ScoreRange::parse(args.get(2), args.get(3)) else {
        return out.error(BAD_SCORE_RANGE);
    };
    if let Some(z) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_zset) {
        out.integer(score_members(z, &r, false).len() as i64);
    }
}

/// `ZLEXCOUNT key min max`.
pub fn zlexcount(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(r) = LexRange::parse(args.get(2), args.get(3)) else {
        return out.error(BAD_LEX_RANGE);
    };
    if let Some(z) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_zset) {
        out.integer(lex_members(z, &r, false).len() as i64);
    }
}

/// How `ZRANGE` selects.
#[derive(Debug, Clone, Copy)]
enum By<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange<'a>),
}

/// `ZRANGE`'s and `ZRANGESTORE`'s parsed arguments.
#[derive(Debug)]
struct RangeQuery<'a> {
    by: By<'a>,
    rev: bool,
    with_scores: bool,
    offset: i64,
    limit: i64,
}

/// What a range selects by.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Type {
    Rank,
    Score,
    Lex,
}

/// Redis's `zrangeGenericCommand` argument parsing, from the key at `key_at`. `fixed` is
/// the type and direction a legacy command (`ZRANGEBYSCORE`, ...) has by its name: then
/// `BYSCORE`, `BYLEX` and `REV` are syntax errors.
fn parse_range<'a>(
    args: &Args<'a>,
    key_at: usize,
    store: bool,
    fixed: Option<(Type, bool)>,
) -> Result<RangeQuery<'a>, &'static str> {
    let (mut kind, mut rev) = match fixed {
        Some((kind, rev)) => (Some(kind), rev),
        None => (None, false),
    };
    let (mut with_scores, mut offset, mut limit) = (false, 0, -1);
    let mut j = key_at + 3;
    while j < args.len() {
        let opt = args.get(j).to_ascii_lowercase();
        let left = args.len() - j - 1;
        if !store && opt == b"withscores" {
            with_scores = true;
        } else if opt == b"limit" && left >= 2 {
            match (parse_i64(args.get(j + 1)), parse_i64(args.get(j + 2))) {
                (Some(o), Some(l)) => (offset, limit) = (o, l),
                _ => return Err(NOT_INTEGER),
            }
            j += 2;
        } else if fixed.is_none() && !rev && opt == b"rev" {
            rev = true;
        } else if kind.is_none() && opt == b"bylex" {
            kind = Some(Type::Lex);
        } else if kind.is_none() && opt == b"byscore" {
            kind = Some(Type::Score);
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let kind = kind.unwrap_or(Type::Rank);
    if limit != -1 && kind == Type::Rank {
        return Err(LIMIT_BY_RANK);
    }
    if with_scores && kind == Type::Lex {
        return Err(LEX_WITHSCORES);
    }
    let (mut min, mut max) = (args.get(key_at + 1), args.get(key_at + 2));
    if rev && kind != Type::Rank {
        std::mem::swap(&mut min, &mut max);
    }
    let by = match kind {
        Type::Rank => match (parse_i64(min), parse_i64(max)) {
            (Some(a), Some(b)) => By::Rank(a, b),
            _ => return Err(NOT_INTEGER),
        },
        Type::Score => By::Score(ScoreRange::parse(min, max).ok_or(BAD_SCORE_RANGE)?),
        Type::Lex => By::Lex(LexRange::parse(min, max).ok_or(BAD_LEX_RANGE)?),
    };
    Ok(RangeQuery {
        by,
        rev,
        with_scores,
        offset,
        limit,
    })
}

impl RangeQuery<'_> {
    /// The members selected from `z`, in reply order.
    fn select<'z>(&self, z: &'z ZSet) -> Vec<(&'z SharedBuf, f64)> {
        let (found, limited) = match self.by {
            By::Rank(start, end) => {
                let r = rank_range(start, end, z.len());
                let found: Vec<_> = if self.rev {
                    z.iter().rev().skip(r.start).take(r.len()).collect()
                } else {
                    z.iter().skip(r.start).take(r.len()).collect()
                };
                (found, false)
            }
            By::Score(r) => (score_members(z, &r, self.rev), true),
            By::Lex(r) => (lex_members(z, &r, self.rev), true),
        };
        if !limited {
            return found;
        }
        // A negative offset skips everything (Redis's `while (offset--)`); a negative limit
        // takes the rest.
        if self.offset < 0 || (self.offset > 0 && self.offset as u64 >= z.len() as u64) {
            return Vec::new();
        }
        let take = usize::try_from(self.limit).unwrap_or(usize::MAX);
        found.into_iter().skip(self.offset as usize).take(take).collect()
    }
}

/// `ZRANGE key min max [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`.
pub fn zrange(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    range(ctx, args, out, None);
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`: `ZRANGE ... BYSCORE`.
pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    range(ctx, args, out, Some((Type::Score, false)));
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    range(ctx, args, out, Some((Type::Score, true)));
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`: `ZRANGE ... BYLEX`.
pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    range(ctx, args, out, Some((Type::Lex, false)));
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`.
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    range(ctx, args, out, Some((Type::Lex, true)));
}

/// `ZREVRANGE key start stop [WITHSCORES]`: `ZRANGE ... REV`.
pub fn zrevrange(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    range(ctx, args, out, Some((Type::Rank, true)));
}

/// `ZRANGE` and its legacy forms (`fixed`: see [`parse_range`]).
fn range(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, fixed: Option<(Type, bool)>) {
    let q = match parse_range(args, 1, false, fixed) {
        Ok(q) => q,
        Err(e) => return out.error(e),
    };
    if let Some(z) = read_typed(ctx, args.get(1), out, |out| out.array(0), Value::as_zset) {
        reply_with_scores(out, q.select(z).into_iter(), q.with_scores, true);
    }
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`: the number
/// stored; an empty result deletes `dst`.
pub fn zrangestore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let q = match parse_range(args, 2, true, None) {
        Ok(q) => q,
        Err(e) => return out.error(e),
    };
    let (dst, now) = (args.get(1), ctx.now_ms);
    let result = match ctx.db.get(args.get(2), now) {
        Some(Value::ZSet(z)) => {
            let mut result = ZSet::default();
            for (m, s) in q.select(z) {
                result.insert(m.clone(), s);
            }
            result
        }
        Some(_) => return out.error(WRONGTYPE),
        None => ZSet::default(),
    };
    if result.is_empty() {
        ctx.db.remove(dst, now);
        return out.integer(0);
    }
    let n = result.len();
    ctx.db
        .set(dst, Value::ZSet(result), Ttl::Clear, SetIf::Always, now);
    out.integer(n as i64);
}

/// `ZPOPMIN key [count]`.
pub fn zpopmin(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    pop(ctx, args, out, false);
}

/// `ZPOPMAX key [count]`.
pub fn zpopmax(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    pop(ctx, args, out, true);
}

/// Without a count: `[member, score]` (an empty array if missing). With one: up to `count`
/// of them, as `[member, score]` pairs in RESP3.
fn pop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, max: bool) {
    if args.len() > 3 {
        return out.error(SYNTAX);
    }
    let count = match args.len() {
        3 => match parse_i64(args.get(2)) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return out.error(NOT_POSITIVE),
        },
        _ => None,
    };
    let shape = PopShape {
        with_key: false,
        nested: out.proto() == Proto::Resp3 && count.is_some(),
        nil_when_empty: false,
    };
    pop_first(ctx, std::iter::once(args.get(1)), max, count, shape, out);
}

/// How a pop's reply looks (Redis's `genericZpopCommand` flags).
#[derive(Debug, Clone, Copy)]
pub(super) struct PopShape {
    /// The key first (`BZPOPMIN`, `ZMPOP`).
    pub with_key: bool,
    /// `[member, score]` pairs (and, with the key, `[key, [pairs]]`).
    pub nested: bool,
    /// A null array, not an empty one, when no key exists.
    pub nil_when_empty: bool,
}

/// Pops up to `count` (1 without one) of the lowest (or `max`: highest) members of the first
/// of `keys` that exists; `WRONGTYPE` if that one is not a sorted set.
pub(super) fn pop_first<'k>(
    ctx: &mut Ctx<'_>,
    keys: impl Iterator<Item = &'k [u8]>,
    max: bool,
    count: Option<usize>,
    shape: PopShape,
    out: &mut ReplyBuf,
) {
    let mut found = None;
    for key in keys {
        match ctx.db.collection(key, ctx.now_ms, Kind::ZSet) {
            Err(_) => return out.error(WRONGTYPE),
            Ok(None) => continue,
            Ok(Some(_)) => {
                found = Some(key);
                break;
            }
        }
    }
    let Some((key, Ok(Some(mut z)))) = found.map(|k| (k, ctx.db.collection(k, ctx.now_ms, Kind::ZSet)))
    else {
        return if shape.nil_when_empty {
            out.null_array()
        } else {
            out.array(0)
        };
    };
    if count == Some(0) {
        return out.array(0);
    }
    let n = count.unwrap_or(1).min(z.zset().len());
    let picked: Vec<(SharedBuf, f64)> = if max {
        z.zset()
            .iter()
            .rev()
            .take(n)
            .map(|(m, s)| (m.clone(), s))
            .collect()
    } else {
        z.zset().iter().take(n).map(|(m, s)| (m.clone(), s)).collect()
    };
    for (m, _) in &picked {
        z.zset().remove(m);
    }
    match (shape.with_key, shape.nested) {
        (false, nested) => {
            reply_with_scores(out, picked.iter().map(|(m, s)| (m, *s)), true, nested);
            return;
        }
        (true, false) => {
            out.array(picked.len() * 2 + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(picked.len());
        }
    }
    for (m, s) in &picked {
        if shape.nested {
            out.array(2);
        }
        out.bulk_buf(m);
        out.double(*s);
    }
}

/// `MIN` or `MAX` (`true`).
pub(super) fn parse_min_max(arg: &[u8]) -> Option<bool> {
    if arg.eq_ignore_ascii_case(b"min") {
        Some(false)
    } else if arg.eq_ignore_ascii_case(b"max") {
        Some(true)
    } else {
        None
    }
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: `[key, [[member, score], ...]]` from
/// the first sorted set that exists, or a null array.
pub fn zmpop(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    zmpop_from(ctx, args, 1, out)
}

/// `ZMPOP`'s work, its `numkeys` at argument `at` (`BZMPOP` has its timeout first).
pub(super) fn zmpop_from(ctx: &mut Ctx<'_>, args: &Args<'_>, at: usize, out: &mut ReplyBuf) {
    let m = match MpopArgs::parse(args, at, parse_min_max) {
        Ok(m) => m,
        Err(e) => return out.error(e),
    };
    let shape = PopShape {
        with_key: true,
        nested: true,
        nil_when_empty: true,
    };
    let keys = m.keys.map(|i| args.get(i));
    pop_first(ctx, keys, m.side, Some(m.count), shape, out);
}

/// `ZREMRANGEBYRANK key start stop`.
pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return out.error(NOT_INTEGER);
    };
    remove_range(ctx, args, out, |z| {
        let r = rank_range(start, end, z.len());
        z.iter()
            .skip(r.start)
            .take(r.len())
            .map(|(m, _)| m.clone())
            .collect()
    });
}

/// `ZREMRANGEBYSCORE key min max`.
pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(r) = ScoreRange::parse(args.get(2), args.get(3)) else {
        return out.error(BAD_SCORE_RANGE);
    };
    remove_range(ctx, args, out, |z| {
        score_members(z, &r, false)
            .into_iter()
            .map(|(m, _)| m.clone())
            .collect()
    });
}

/// `ZREMRANGEBYLEX key min max`.
pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(r) = LexRange::parse(args.get(2), args.get(3)) else {
        return out.error(BAD_LEX_RANGE);
    };
    remove_range(ctx, args, out, |z| {
        lex_members(z, &r, false)
            .into_iter()
            .map(|(m, _)| m.clone())
            .collect()
    });
}

/// Removes the members `select` picks; replies with their number.
fn remove_range(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
    select: impl Fn(&ZSet) -> Vec<SharedBuf>,
) {
    match ctx.db.collection(args.get(1), ctx.now_ms, Kind::ZSet) {
        Err(_) => out.error(WRONGTYPE),
        Ok(None) => out.integer(0),
        Ok(Some(mut z)) => {
            let doomed = select(z.zset());
            for m in &doomed {
                z.zset().remove(m);
            }
            out.integer(doomed.len() as i64);
        }
    }
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: `[0, [member, score, ...]]`.
pub fn zscan(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    scan_collection(ctx, args, out, Kind::ZSet);
}

/// `ZRANDMEMBER key [count [WITHSCORES]]` (see [`random`](super::random)).
pub fn zrandmember(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    RandomPick {
        with_word: Some(b"withscores"),
        table: |v| v.as_zset().map(ZSet::members),
        write_value: |out, s| out.double(*s),
    }
    .run(ctx, args, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::*;

    #[test]
    fn strtod_and_string2d() {
        assert_eq!(strtod_prefix(b" 1.5x"), (1.5, 4));
        assert_eq!(strtod_prefix(b""), (0.0, 0));
        assert_eq!(strtod_prefix(b"-inf"), (f64::NEG_INFINITY, 4));
        assert_eq!(strtod_prefix(b"0x10"), (16.0, 4));
        assert_eq!(strtod_prefix(b"0x"), (0.0, 1));
        assert_eq!(strtod_prefix(b"1e"), (1.0, 1));
        assert_eq!(strtod_prefix(b".e1"), (0.0, 0));
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0e-400"), Some(0.0));
        assert_eq!(parse_score(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b"1\0"), None);
    }

    #[test]
    fn add_score_rank_and_ranges() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("ZADD z 1 a 2 b 3 c"), int(3));
        assert_eq!(h.cmd("ZADD z XX CH 5 a 9 zz"), int(1));
        assert_eq!(h.cmd("ZADD z NX 0 a 4 d"), int(1));
        assert_eq!(h.cmd("ZADD z GT CH 1 a"), int(0));
        assert_eq!(h.cmd("ZADD z LT CH 1 a"), int(1));
        assert_eq!(h.cmd("ZADD z NX XX 1 a"), err(NX_XX));
        assert_eq!(h.cmd("ZADD z GT LT 1 a"), err(GT_LT_NX));
        assert_eq!(h.cmd("ZADD z INCR 1 a 2 b"), err(INCR_PAIRS));
        assert_eq!(h.cmd("ZADD z NX 1"), err(SYNTAX));
        assert_eq!(h.cmd("ZADD z x a"), err(NOT_FLOAT));
        assert_eq!(h.cmd("ZADD z INCR 2.5 a"), bulk("3.5"));
        assert_eq!(h.cmd("ZADD z XX INCR 1 nope"), NULL);
        assert_eq!(h.cmd("ZADD nokey XX 1 a"), int(0));
        assert_eq!(h.cmd("EXISTS nokey"), int(0));
        assert_eq!(h.cmd("ZINCRBY z inf a"), bulk("inf"));
        assert_eq!(h.cmd("ZINCRBY z -inf a"), err(NAN_SCORE));
        assert_eq!(h.cmd("ZSCORE z b"), bulk("2"));
        assert_eq!(h.cmd("ZMSCORE z b zz"), "*2\r\n$1\r\n2\r\n$-1\r\n");
        assert_eq!(h.cmd("ZCARD z"), int(4));
        assert_eq!(h.cmd("ZRANK z b"), int(0));
        assert_eq!(h.cmd("ZREVRANK z b"), int(3));
        assert_eq!(h.cmd("ZRANK z zz"), NULL);
        assert_eq!(h.cmd("ZRANGE z 0 -1"), bulks(&["b", "c", "d", "a"]));
        assert_eq!(
            h.cmd("ZRANGE z 0 1 REV WITHSCORES"),
            bulks(&["a", "inf", "d", "4"])
        );
        assert_eq!(h.cmd("ZRANGE z (2 4 BYSCORE"), bulks(&["c", "d"]));
        assert_eq!(h.cmd("ZRANGE z +inf 3 BYSCORE REV LIMIT 1 1"), bulks(&["d"]));
        assert_eq!(h.cmd("ZRANGE z 0 -1 LIMIT 0 1"), err(LIMIT_BY_RANK));
        assert_eq!(h.cmd("ZRANGE z - + BYLEX WITHSCORES"), err(LEX_WITHSCORES));
        assert_eq!(h.cmd("ZRANGE z x 1 BYSCORE"), err(BAD_SCORE_RANGE));
        assert_eq!(h.cmd("ZRANGE z x 1 BYLEX"), err(BAD_LEX_RANGE));
        assert_eq!(h.cmd("ZCOUNT z -inf (4"), int(2));
        assert_eq!(h.cmd("ZRANGESTORE dst z 0 1"), int(2));
        assert_eq!(h.cmd("ZRANGE dst 0 -1 WITHSCORES"), bulks(&["b", "2", "c", "3"]));
        assert_eq!(h.cmd("ZRANGESTORE dst nokey 0 1"), int(0));
        assert_eq!(h.cmd("EXISTS dst"), int(0));
        h.client.proto = Proto::Resp3;
        assert_eq!(h.cmd("ZSCORE z b"), ",2\r\n");
        assert_eq!(h.cmd("ZRANGE z 0 0 WITHSCORES"), "*1\r\n*2\r\n$1\r\nb\r\n,2\r\n");
    }

    #[test]
    fn legacy_range_forms() {
        let mut h = Harness::new();
        h.cmd("ZADD z 1 a 2 b 3 c");
        h.cmd("ZADD l 0 a 0 b 0 c");
        assert_eq!(
            h.cmd("ZRANGEBYSCORE z (1 +inf WITHSCORES"),
            bulks(&["b", "2", "c", "3"])
        );
        assert_eq!(h.cmd("ZREVRANGEBYSCORE z +inf -inf LIMIT 1 1"), bulks(&["b"]));
        assert_eq!(h.cmd("ZRANGEBYLEX l (a + LIMIT 0 1"), bulks(&["b"]));
        assert_eq!(h.cmd("ZREVRANGEBYLEX l + [b"), bulks(&["c", "b"]));
        assert_eq!(h.cmd("ZREVRANGE z 0 1 WITHSCORES"), bulks(&["c", "3", "b", "2"]));
        assert_eq!(h.cmd("ZRANGEBYSCORE z 0 1 REV"), err(SYNTAX));
        assert_eq!(h.cmd("ZRANGEBYSCORE z 0 1 BYLEX"), err(SYNTAX));
        assert_eq!(h.cmd("ZREVRANGE z 0 1 REV"), err(SYNTAX));
        assert_eq!(h.cmd("ZRANGEBYSCORE z 0 1 LIMIT 0"), err(SYNTAX));
        assert_eq!(h.cmd("ZRANGEBYLEX l - + WITHSCORES"), err(LEX_WITHSCORES));
        assert_eq!(h.cmd("ZREVRANGE z 0 1 LIMIT 0 1"), err(LIMIT_BY_RANK));
        assert_eq!(h.cmd("ZRANGEBYSCORE z a 1"), err(BAD_SCORE_RANGE));
        assert_eq!(h.cmd("ZREVRANGE z a 1"), err(NOT_INTEGER));
    }

    /// Replies as redis-server 7.0.15 gives them.
    #[test]
    fn zmpop_pops_from_the_first_existing_set() {
        let mut h = Harness::new();
        h.cmd("ZADD b 1 x 2 y 3 z");
        let pair = |m: &str, s: &str| format!("*2\r\n{}{}", bulk(m), bulk(s));
        assert_eq!(
            h.cmd("ZMPOP 2 a b MAX COUNT 2"),
            format!("*2\r\n{}*2\r\n{}{}", bulk("b"), pair("z", "3"), pair("y", "2"))
        );
        assert_eq!(
            h.cmd("ZMPOP 1 b MIN"),
            format!("*2\r\n{}*1\r\n{}", bulk("b"), pair("x", "1"))
        );
        assert_eq!(h.cmd("ZMPOP 1 b MIN"), NULL_ARRAY);
        assert_eq!(
            h.cmd("ZMPOP 0 b MIN"),
            err("ERR numkeys should be greater than 0")
        );
        assert_eq!(h.cmd("ZMPOP 1 b LEFT COUNT 0"), err(SYNTAX));
        assert_eq!(
            h.cmd("ZMPOP 1 b MIN COUNT 0"),
            err("ERR count should be greater than 0")
        );
        h.cmd("SET s v");
        assert_eq!(h.cmd("ZMPOP 2 s b MIN"), err(WRONGTYPE));
    }

    #[test]
    fn lex_pop_remove_and_scan() {
        let mut h = Harness::new();
        h.cmd("ZADD l 0 a 0 b 0 c 0 d");
        assert_eq!(h.cmd("ZRANGE l [b (d BYLEX"), bulks(&["b", "c"]));
        assert_eq!(h.cmd("ZRANGE l + - BYLEX REV LIMIT 0 2"), bulks(&["d", "c"]));
        assert_eq!(h.cmd("ZLEXCOUNT l - +"), int(4));
        assert_eq!(h.cmd("ZLEXCOUNT l [c [b"), int(0));
        assert_eq!(h.cmd("ZREMRANGEBYLEX l - [a"), int(1));
        assert_eq!(h.cmd("ZPOPMIN l"), bulks(&["b", "0"]));
        assert_eq!(h.cmd("ZPOPMAX l 5"), bulks(&["d", "0", "c", "0"]));
        assert_eq!(h.cmd("EXISTS l"), int(0));
        assert_eq!(h.cmd("ZPOPMIN l"), "*0\r\n");
        assert_eq!(h.cmd("ZPOPMIN l -1"), err(NOT_POSITIVE));
        h.cmd("ZADD r 1 a 2 b 3 c 4 d");
        assert_eq!(h.cmd("ZREMRANGEBYRANK r 0 1"), int(2));
        assert_eq!(h.cmd("ZREMRANGEBYSCORE r (3 +inf"), int(1));
        assert_eq!(
            h.cmd("ZSCAN r 0"),
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"
        );
        assert_eq!(h.cmd("ZREM r c x"), int(1));
        assert_eq!(h.db.used_memory(), 0);
        h.cmd("SET s v");
        for c in [
            "ZADD s 1 a",
            "ZSCORE s a",
            "ZRANGE s 0 1",
            "ZPOPMIN s",
            "ZREM s a",
            "ZCARD s",
        ] {
            assert_eq!(h.cmd(c), err(WRONGTYPE), "{c}");
        }
        assert_eq!(h.cmd("TYPE r"), "+none\r\n");
        h.cmd("ZADD z 1 m");
        assert_eq!(h.cmd("TYPE z"), "+zset\r\n");
        assert_eq!(h.cmd("ZRANDMEMBER z"), bulk("m"));
        assert_eq!(h.cmd("ZRANDMEMBER z -2 WITHSCORES"), bulks(&["m", "1", "m", "1"]));
    }
}
