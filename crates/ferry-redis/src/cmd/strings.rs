//! String commands: `GET`, `SET`, `SETEX`, `PSETEX`, `GETEX`, `MGET`, `MSET`, `MSETNX`,
//! `SETNX`, `GETSET`, `GETDEL`, `APPEND`, `SETRANGE`, `GETRANGE`/`SUBSTR`, `STRLEN`, `INCR`,
//! `INCRBY`, `DECR`, `DECRBY`, `INCRBYFLOAT`, `LCS`, `SETBIT`, `GETBIT`, with Redis 7.0's
//! semantics and error replies.
//!
//! Stored values go out with [`ReplyBuf::bulk_buf`] (by reference when large); new values come
//! from [`Args::value`] (kept in the read buffer when large, else copied into the pool). A
//! stored buffer is never changed in place: `APPEND` and `INCR` build a new one, since replies
//! still being sent may reference the old.

use ferry_buf::{PoolError, SharedBuf};

use super::hashes::{NOT_FLOAT, PRODUCES_NAN_OR_INFINITY, format_float_human, parse_float};
use super::{Args, Ctx, NOT_INTEGER, OOM, SYNTAX, WRONGTYPE, wrong_arity};
use crate::db::{Access, SetIf, Ttl, Value};
use crate::resp::ReplyBuf;

/// `SET`'s reply to a non-positive or overflowing expire time.
pub const SET_EXPIRE: &str = "ERR invalid expire time in 'set' command";
/// `INCR`'s reply when the result would not fit an `i64`.
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
/// `DECRBY`'s reply to a decrement of `i64::MIN` (its negation overflows).
pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";
/// `APPEND`'s reply when the result would exceed `proto-max-bulk-len`.
pub const TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// Parses a whole argument as an `i64` the way Redis's `string2ll` does: an optional `-`, then
/// decimal digits without leading zeros (`0` alone is fine; `-0`, `+1`, ` 1`, `01` and the
/// empty string are not), in range.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    // Accumulated negatively: i64::MIN has no positive counterpart.
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if negative { Some(n) } else { n.checked_neg() }
}

/// `n` in decimal, written at the end of `buf`.
pub fn format_i64(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut start = buf.len();
    let mut rest = n.unsigned_abs();
    loop {
        start -= 1;
        buf[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        start -= 1;
        buf[start] = b'-';
    }
    &buf[start..]
}

/// `GET key`: the string, null if missing.
pub fn get(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.get(args.get(1), ctx.now_ms) {
        Some(Value::Str(b)) => out.bulk_buf(b),
        Some(_) => out.error(WRONGTYPE),
        None => out.null(),
    }
}

/// Which expire option `SET` got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExpireOpt {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// `SET`'s options, checked for conflicts as Redis's `parseExtendedStringArgumentsOrReply`.
#[derive(Debug)]
struct SetOptions<'a> {
    cond: SetIf,
    get: bool,
    keep_ttl: bool,
    expire: Option<(ExpireOpt, &'a [u8])>,
}

fn parse_set_options<'a>(args: &Args<'a>) -> Result<SetOptions<'a>, &'static str> {
    let mut o = SetOptions {
        cond: SetIf::Always,
        get: false,
        keep_ttl: false,
        expire: None,
    };
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        let has_next = j + 1 < args.len();
        let expire = if opt.eq_ignore_ascii_case(b"ex") {
            Some(ExpireOpt::Ex)
        } else if opt.eq_ignore_ascii_case(b"px") {
            Some(ExpireOpt::Px)
        } else if opt.eq_ignore_ascii_case(b"exat") {
            Some(ExpireOpt::ExAt)
        } else if opt.eq_ignore_ascii_case(b"pxat") {
            Some(ExpireOpt::PxAt)
        } else {
            None
        };
        if let Some(kind) = expire {
            // The same option twice is allowed (the last wins); two different ones are not.
            if o.keep_ttl || o.expire.is_some_and(|(k, _)| k != kind) || !has_next {
                return Err(SYNTAX);
            }
            o.expire = Some((kind, args.get(j + 1)));
            j += 2;
            continue;
        }
        if opt.eq_ignore_ascii_case(b"nx") && o.cond != SetIf::Present {
            o.cond = SetIf::Absent;
        } else if opt.eq_ignore_ascii_case(b"xx") && o.cond != SetIf::Absent {
            o.cond = SetIf::Present;
        } else if opt.eq_ignore_ascii_case(b"get") {
            o.get = true;
        } else if opt.eq_ignore_ascii_case(b"keepttl") && o.expire.is_none() {
            o.keep_ttl = true;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// The absolute deadline for an expire option of command `name` (`SET`, `SETEX`, `GETEX`:
/// Redis's `getExpireMillisecondsOrReply`).
fn set_deadline(kind: ExpireOpt, arg: &[u8], now_ms: u64, name: &str) -> Result<u64, String> {
    let n = parse_i64(arg).ok_or(NOT_INTEGER)?;
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let seconds = matches!(kind, ExpireOpt::Ex | ExpireOpt::ExAt);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid());
    }
    let mut ms = if seconds { n * 1000 } else { n };
    if matches!(kind, ExpireOpt::Ex | ExpireOpt::Px) {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        ms = ms.checked_add(now).ok_or_else(invalid)?;
    }
    Ok(ms as u64)
}

/// The value argument `i` as a pool buffer, or `None` (the pool is full: reply `OOM`).
fn value_arg(ctx: &Ctx<'_>, args: &Args<'_>, i: usize) -> Option<SharedBuf> {
    args.value(i, ctx.db.pool(), ctx.db.keep_in_place_min()).ok()
}

/// `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]`.
pub fn set(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let opts = match parse_set_options(args) {
        Ok(opts) => opts,
        Err(e) => return out.error(e),
    };
    let now = ctx.now_ms;
    let deadline = match opts.expire.map(|(kind, arg)| set_deadline(kind, arg, now, "set")) {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => return out.error(e),
    };
    // Before any reply is written: with GET, the old value is the reply.
    let Some(value) = value_arg(ctx, args, 2) else {
        return out.error(OOM);
    };
    let key = args.get(1);
    if opts.get {
        match ctx.db.get(key, now) {
            Some(Value::Str(old)) => out.bulk_buf(old),
            Some(_) => return out.error(WRONGTYPE),
            None => out.null(),
        }
    }
    let ttl = match deadline {
        Some(d) => Ttl::At(d),
        None if opts.keep_ttl => Ttl::Keep,
        None => Ttl::Clear,
    };
    let stored = ctx.db.set(key, Value::Str(value), ttl, opts.cond, now);
    if !opts.get {
        if stored { out.ok() } else { out.null() }
    }
}

/// `SETEX key seconds value`.
pub fn setex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    set_expiring(ctx, args, out, ExpireOpt::Ex, "setex");
}

/// `PSETEX key milliseconds value`.
pub fn psetex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    set_expiring(ctx, args, out, ExpireOpt::Px, "psetex");
}

/// `SETEX` and `PSETEX`: `SET key value EX|PX time`, the time checked first.
fn set_expiring(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, kind: ExpireOpt, name: &str) {
    let deadline = match set_deadline(kind, args.get(2), ctx.now_ms, name) {
        Ok(d) => d,
        Err(e) => return out.error(e),
    };
    let Some(value) = value_arg(ctx, args, 3) else {
        return out.error(OOM);
    };
    ctx.db.set(
        args.get(1),
        Value::Str(value),
        Ttl::At(deadline),
        SetIf::Always,
        ctx.now_ms,
    );
    out.ok();
}

/// What `GETEX` does to the key's deadline.
#[derive(Debug, Clone, Copy)]
enum GetexTtl<'a> {
    Keep,
    Persist,
    Expire(ExpireOpt, &'a [u8]),
}

/// `GETEX`'s options, checked for conflicts as Redis's `parseExtendedStringArgumentsOrReply`.
fn parse_getex_options<'a>(args: &Args<'a>) -> Result<GetexTtl<'a>, &'static str> {
    let mut ttl = GetexTtl::Keep;
    let mut j = 2;
    while j < args.len() {
        let opt = args.get(j);
        let kind = [
            (&b"ex"[..], ExpireOpt::Ex),
            (b"px", ExpireOpt::Px),
            (b"exat", ExpireOpt::ExAt),
            (b"pxat", ExpireOpt::PxAt),
        ]
        .into_iter()
        .find(|(name, _)| opt.eq_ignore_ascii_case(name))
        .map(|(_, k)| k);
        ttl = match (kind, ttl) {
            (None, GetexTtl::Keep | GetexTtl::Persist) if opt.eq_ignore_ascii_case(b"persist") => {
                GetexTtl::Persist
            }
            (Some(k), GetexTtl::Keep) if j + 1 < args.len() => GetexTtl::Expire(k, args.get(j + 1)),
            (Some(k), GetexTtl::Expire(had, _)) if had == k && j + 1 < args.len() => {
                GetexTtl::Expire(k, args.get(j + 1))
            }
            _ => return Err(SYNTAX),
        };
        j += if kind.is_some() { 2 } else { 1 };
    }
    Ok(ttl)
}

/// `GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST]`: the string, and its deadline
/// set or removed. An absolute deadline already past deletes the key.
pub fn getex(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let ttl = match parse_getex_options(args) {
        Ok(ttl) => ttl,
        Err(e) => return out.error(e),
    };
    let now = ctx.now_ms;
    let Some(mut e) = ctx.db.find(args.get(1), now, Access::Read) else {
        return out.null();
    };
    let Value::Str(value) = e.value() else {
        return out.error(WRONGTYPE);
    };
    let deadline = match ttl {
        GetexTtl::Expire(kind, arg) => match set_deadline(kind, arg, now, "getex") {
            Ok(d) => Some((kind, d)),
            Err(msg) => return out.error(msg),
        },
        _ => None,
    };
    out.bulk_buf(value);
    match (ttl, deadline) {
        (_, Some((ExpireOpt::ExAt | ExpireOpt::PxAt, d))) if d <= now => {
            e.remove();
        }
        (_, Some((_, d))) => e.set_deadline(Some(d)),
        // A key without a deadline is not changed (a watcher sees no write).
        (GetexTtl::Persist, None) if e.deadline().is_some() => e.set_deadline(None),
        _ => {}
    }
}

/// `SETNX key value`: 1 if it set, 0 if the key exists.
pub fn setnx(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(value) = value_arg(ctx, args, 2) else {
        return out.error(OOM);
    };
    let stored = ctx.db.set(
        args.get(1),
        Value::Str(value),
        Ttl::Clear,
        SetIf::Absent,
        ctx.now_ms,
    );
    out.integer(i64::from(stored));
}

/// `GETSET key value`: sets (dropping any TTL) and returns the old string.
pub fn getset(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(value) = value_arg(ctx, args, 2) else {
        return out.error(OOM);
    };
    let (key, now) = (args.get(1), ctx.now_ms);
    match ctx.db.get(key, now) {
        Some(Value::Str(old)) => out.bulk_buf(old),
        Some(_) => return out.error(WRONGTYPE),
        None => out.null(),
    }
    ctx.db.set(key, Value::Str(value), Ttl::Clear, SetIf::Always, now);
}

/// `GETDEL key`: returns the string and deletes the key.
pub fn getdel(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(e) = ctx.db.find(args.get(1), ctx.now_ms, Access::Read) else {
        return out.null();
    };
    match e.value() {
        Value::Str(old) => {
            out.bulk_buf(old);
            e.remove();
        }
        _ => out.error(WRONGTYPE),
    }
}

/// `MGET key [key ...]`: one string per key, null for a missing key or another type.
pub fn mget(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    out.array(args.len() - 1);
    for key in args.iter_from(1) {
        match ctx.db.get(key, ctx.now_ms) {
            Some(Value::Str(b)) => out.bulk_buf(b),
            _ => out.null(),
        }
    }
}

/// `MSET key value [key value ...]`: sets every pair (dropping TTLs), all or none.
pub fn mset(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() % 2 == 0 {
        return out.error(wrong_arity("mset"));
    }
    let mut values = Vec::with_capacity(args.len() / 2);
    for i in (2..args.len()).step_by(2) {
        match value_arg(ctx, args, i) {
            Some(v) => values.push(v),
            None => return out.error(OOM),
        }
    }
    for (i, value) in (1..args.len()).step_by(2).zip(values) {
        ctx.db.set(
            args.get(i),
            Value::Str(value),
            Ttl::Clear,
            SetIf::Always,
            ctx.now_ms,
        );
    }
    out.ok();
}

/// `MSETNX key value [key value ...]`: sets every pair (dropping TTLs) if none of the keys
/// exists; 1 if it set them.
pub fn msetnx(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if args.len() % 2 == 0 {
        return out.error(wrong_arity("msetnx"));
    }
    let now = ctx.now_ms;
    let any = (1..args.len())
        .step_by(2)
        .any(|i| ctx.db.find(args.get(i), now, Access::Write).is_some());
    if any {
        return out.integer(0);
    }
    mset(ctx, args, &mut ReplyBuf::new(usize::MAX));
    out.integer(1);
}

/// `APPEND key value`: the new length. The result is a new pool buffer (old bytes + new);
/// the key keeps its TTL.
pub fn append(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (key, tail, now) = (args.get(1), args.get(2), ctx.now_ms);
    let limit = ctx.server.config.proto_max_bulk_len;
    let Some(mut e) = ctx.db.find(key, now, Access::Write) else {
        let Some(value) = value_arg(ctx, args, 2) else {
            return out.error(OOM);
        };
        let len = value.len();
        ctx.db.set(key, Value::Str(value), Ttl::Clear, SetIf::Always, now);
        return out.integer(len as i64);
    };
    let Value::Str(old) = e.value() else {
        return out.error(WRONGTYPE);
    };
    let total = old.len() + tail.len();
    if total > limit {
        return out.error(TOO_LONG);
    }
    if !tail.is_empty() {
        let mut buf = match e.pool().alloc(total) {
            Ok(buf) => buf,
            Err(PoolError::TooLarge { .. }) => return out.error(TOO_LONG),
            Err(_) => return out.error(OOM),
        };
        buf.extend_from_slice(old);
        buf.extend_from_slice(tail);
        e.replace(Value::Str(buf.freeze()));
    }
    out.integer(total as i64);
}

/// `STRLEN key`: the string's length, 0 if missing.
pub fn strlen(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.get(args.get(1), ctx.now_ms) {
        Some(Value::Str(b)) => out.integer(b.len() as i64),
        Some(_) => out.error(WRONGTYPE),
        None => out.integer(0),
    }
}

/// Adds `incr` to the integer at `key` (0 if missing), keeping its TTL; replies the result.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], incr: i64, out: &mut ReplyBuf) {
    let now = ctx.now_ms;
    let mut digits = [0u8; 20];
    match ctx.db.find(key, now, Access::Write) {
        Some(mut e) => {
            let Value::Str(old) = e.value() else {
                return out.error(WRONGTYPE);
            };
            let Some(old) = parse_i64(old) else {
                return out.error(NOT_INTEGER);
            };
            let Some(new) = old.checked_add(incr) else {
                return out.error(OVERFLOW);
            };
            let Ok(buf) = e.pool().copy_from(format_i64(new, &mut digits)) else {
                return out.error(OOM);
            };
            e.replace(Value::Str(buf));
            out.integer(new);
        }
        None => {
            let Ok(buf) = ctx.db.pool().copy_from(format_i64(incr, &mut digits)) else {
                return out.error(OOM);
            };
            ctx.db.set(key, Value::Str(buf), Ttl::Clear, SetIf::Always, now);
            out.integer(incr);
        }
    }
}

/// `INCR key`.
pub fn incr(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    incr_by(ctx, args.get(1), 1, out);
}

/// `DECR key`.
pub fn decr(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    incr_by(ctx, args.get(1), -1, out);
}

/// `INCRBY key increment`.
pub fn incrby(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match parse_i64(args.get(2)) {
        Some(n) => incr_by(ctx, args.get(1), n, out),
        None => out.error(NOT_INTEGER),
    }
}

/// `DECRBY key decrement`.
pub fn decrby(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match parse_i64(args.get(2)) {
        Some(i64::MIN) => out.error(DECR_OVERFLOW),
        Some(n) => incr_by(ctx, args.get(1), -n, out),
        None => out.error(NOT_INTEGER),
    }
}

/// `SETRANGE`'s reply to a negative offset.
pub const OFFSET_OUT_OF_RANGE: &str = "ERR offset is out of range";

/// `SETRANGE key offset value`: overwrites from `offset`, zero-padding a shorter string; the
/// new length. The key keeps its TTL; an empty value changes nothing (and creates nothing).
pub fn setrange(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(offset) = parse_i64(args.get(2)) else {
        return out.error(NOT_INTEGER);
    };
    let Ok(offset) = usize::try_from(offset) else {
        return out.error(OFFSET_OUT_OF_RANGE);
    };
    let (key, patch, now) = (args.get(1), args.get(3), ctx.now_ms);
    let limit = ctx.server.config.proto_max_bulk_len;
    let entry = ctx.db.find(key, now, Access::Write);
    let old: &[u8] = match &entry {
        Some(e) => match e.value() {
            Value::Str(b) => b,
            _ => return out.error(WRONGTYPE),
        },
        None => &[],
    };
    if patch.is_empty() {
        return out.integer(old.len() as i64);
    }
    let total = match offset.checked_add(patch.len()) {
        Some(end) if end <= limit => end.max(old.len()),
        _ => return out.error(TOO_LONG),
    };
    if let Err(e) = rewrite(ctx, key, total, |b| {
        b[offset..offset + patch.len()].copy_from_slice(patch)
    }) {
        return out.error(e);
    }
    out.integer(total as i64);
}

/// Replaces the string at `key` (or creates it) with a new buffer of `total` bytes: the old
/// bytes, zeros after them, then changed by `edit`. The key keeps its TTL. `Err` is the error
/// reply when the pool cannot hold it.
fn rewrite(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    total: usize,
    edit: impl FnOnce(&mut [u8]),
) -> Result<(), &'static str> {
    let now = ctx.now_ms;
    let mut buf = match ctx.db.pool().alloc(total) {
        Ok(buf) => buf,
        Err(PoolError::TooLarge { .. }) => return Err(TOO_LONG),
        Err(_) => return Err(OOM),
    };
    let old: &[u8] = match ctx.db.peek(key, now) {
        Some(Value::Str(b)) => b,
        _ => &[],
    };
    buf.extend_from_slice(&old[..old.len().min(total)]);
    const ZEROS: [u8; 1024] = [0; 1024];
    while buf.len() < total {
        let n = (total - buf.len()).min(ZEROS.len());
        buf.extend_from_slice(&ZEROS[..n]);
    }
    edit(&mut buf);
    let value = Value::Str(buf.freeze());
    match ctx.db.find(key, now, Access::Write) {
        Some(mut e) => {
            e.replace(value);
        }
        None => {
            ctx.db.set(key, value, Ttl::Clear, SetIf::Always, now);
        }
    }
    Ok(())
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest common
/// subsequence of two strings (a missing key is empty), its length, or its matching ranges
/// (from the ends of the strings backwards, as Redis walks its table). The table takes
/// `4 * (len1 + 1) * (len2 + 1)` bytes, at most `proto-max-bulk-len`.
pub fn lcs(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let now = ctx.now_ms;
    let mut strings = [None, None];
    for (slot, key) in strings.iter_mut().zip([args.get(1), args.get(2)]) {
        match ctx.db.get(key, now) {
            None => {}
            Some(Value::Str(b)) => *slot = Some(b.clone()),
            Some(_) => return out.error("ERR The specified keys must contain string values"),
        }
    }
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0usize);
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        if opt.eq_ignore_ascii_case(b"idx") {
            getidx = true;
        } else if opt.eq_ignore_ascii_case(b"len") {
            getlen = true;
        } else if opt.eq_ignore_ascii_case(b"withmatchlen") {
            withmatchlen = true;
        } else if opt.eq_ignore_ascii_case(b"minmatchlen") && j + 1 < args.len() {
            let Some(n) = parse_i64(args.get(j + 1)) else {
                return out.error(NOT_INTEGER);
            };
            minmatchlen = usize::try_from(n).unwrap_or(0);
            j += 1;
        } else {
            return out.error(SYNTAX);
        }
        j += 1;
    }
    if getlen && getidx {
        return out.error("ERR If you want both the length and indexes, please just use IDX.");
    }
    let a: &[u8] = strings[0].as_deref().unwrap_or_default();
    let b: &[u8] = strings[1].as_deref().unwrap_or_default();
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen + 1).checked_mul(blen + 1);
    match cells.and_then(|c| c.checked_mul(4)) {
        Some(bytes) if bytes <= ctx.server.config.proto_max_bulk_len => {}
        _ => {
            return out.error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
        }
    }
    let w = blen + 1;
    let mut table = vec![0u32; (alen + 1) * w];
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let len = table[alen * w + blen] as usize;
    if getlen {
        return out.integer(len as i64);
    }
    // Backwards from the ends, as Redis's lcsCommand: the string, and the ranges of
    // contiguous matches ((a start, a end), (b start, b end)).
    let mut result = vec![0u8; len];
    let mut ranges: Vec<[usize; 4]> = Vec::new();
    let (mut i, mut j, mut idx) = (alen, blen, len);
    let mut range: Option<[usize; 4]> = None;
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            match &mut range {
                None => range = Some([i - 1, i - 1, j - 1, j - 1]),
                Some(r) if r[0] == i && r[2] == j => {
                    r[0] -= 1;
                    r[2] -= 1;
                }
                Some(_) => emit = true,
            }
            if range.is_some_and(|r| r[0] == 0 || r[2] == 0) {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = range.is_some();
        }
        if emit {
            if let Some(r) = range.take() {
                if minmatchlen == 0 || r[1] - r[0] + 1 >= minmatchlen {
                    ranges.push(r);
                }
            }
        }
    }
    if !getidx {
        return out.bulk(&result);
    }
    out.map(2);
    out.bulk(b"matches");
    out.array(ranges.len());
    for r in &ranges {
        out.array(2 + usize::from(withmatchlen));
        out.array(2);
        out.integer(r[0] as i64);
        out.integer(r[1] as i64);
        out.array(2);
        out.integer(r[2] as i64);
        out.integer(r[3] as i64);
        if withmatchlen {
            out.integer((r[1] - r[0] + 1) as i64);
        }
    }
    out.bulk(b"len");
    out.integer(len as i64);
}

/// `SETBIT`'s and `GETBIT`'s reply to a bad offset.
pub const BAD_BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
/// `SETBIT`'s reply to a value other than 0 or 1.
pub const BAD_BIT: &str = "ERR bit is not an integer or out of range";

/// A bit offset: a non-negative integer whose byte is below `proto-max-bulk-len`.
fn bit_offset(arg: &[u8], limit: usize) -> Option<usize> {
    let offset = usize::try_from(parse_i64(arg)?).ok()?;
    (offset >> 3 < limit).then_some(offset)
}

/// `SETBIT key offset 0|1`: sets the bit (bit 0 is the most significant of byte 0), growing
/// the string with zeros; the bit's old value.
pub fn setbit(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(offset) = bit_offset(args.get(2), ctx.server.config.proto_max_bulk_len) else {
        return out.error(BAD_BIT_OFFSET);
    };
    let on = match parse_i64(args.get(3)) {
        Some(0) => false,
        Some(1) => true,
        _ => return out.error(BAD_BIT),
    };
    let (key, now) = (args.get(1), ctx.now_ms);
    let (byte, mask) = (offset >> 3, 0x80u8 >> (offset & 7));
    let (was, old_len) = match ctx.db.find(key, now, Access::Write) {
        Some(e) => match e.value() {
            Value::Str(b) => (b.get(byte).is_some_and(|x| x & mask != 0), b.len()),
            _ => return out.error(WRONGTYPE),
        },
        None => (false, 0),
    };
    let total = old_len.max(byte + 1);
    if was != on || total > old_len {
        let edit = |b: &mut [u8]| {
            if on { b[byte] |= mask } else { b[byte] &= !mask }
        };
        if let Err(e) = rewrite(ctx, key, total, edit) {
            return out.error(e);
        }
    }
    out.integer(i64::from(was));
}

/// `GETBIT key offset`: the bit, 0 past the end or for a missing key.
pub fn getbit(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(offset) = bit_offset(args.get(2), ctx.server.config.proto_max_bulk_len) else {
        return out.error(BAD_BIT_OFFSET);
    };
    match ctx.db.get(args.get(1), ctx.now_ms) {
        None => out.integer(0),
        Some(Value::Str(b)) => {
            let bit = b
                .get(offset >> 3)
                .is_some_and(|&x| x & (0x80 >> (offset & 7)) != 0);
            out.integer(i64::from(bit));
        }
        Some(_) => out.error(WRONGTYPE),
    }
}

/// `GETRANGE key start end` (and `SUBSTR`): the bytes `[start, end]`, negative from the end;
/// an empty string when the key is missing or the range empty.
pub fn getrange(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return out.error(NOT_INTEGER);
    };
    let value = match ctx.db.get(args.get(1), ctx.now_ms) {
        None => return out.bulk(b""),
        Some(Value::Str(b)) => b,
        Some(_) => return out.error(WRONGTYPE),
    };
    let len = value.len() as i64;
    if start < 0 && end < 0 && start > end {
        return out.bulk(b"");
    }
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 {
        (len + end).max(0)
    } else {
        end.min(len - 1)
    };
    if start > end || len == 0 {
        return out.bulk(b"");
    }
    out.bulk_buf(&value.slice(start as usize..end as usize + 1));
}

/// `INCRBYFLOAT key increment`: adds a float (the result written as Redis writes a long
/// double, `%.17Lg` without trailing zeros); the key keeps its TTL.
pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (key, now) = (args.get(1), ctx.now_ms);
    let old = match ctx.db.find(key, now, Access::Write) {
        None => None,
        Some(e) => match e.value() {
            Value::Str(b) => Some(parse_float(b)),
            _ => return out.error(WRONGTYPE),
        },
    };
    let (Some(old), Some(incr)) = (old.unwrap_or(Some(0.0)), parse_float(args.get(2))) else {
        return out.error(NOT_FLOAT);
    };
    let new = old + incr;
    if !new.is_finite() {
        return out.error(PRODUCES_NAN_OR_INFINITY);
    }
    let text = format_float_human(new);
    let Ok(buf) = ctx.db.pool().copy_from(text.as_bytes()) else {
        return out.error(OOM);
    };
    match ctx.db.find(key, now, Access::Write) {
        Some(mut e) => {
            e.replace(Value::Str(buf));
        }
        None => {
            ctx.db.set(key, Value::Str(buf), Ttl::Clear, SetIf::Always, now);
        }
    }
    out.bulk(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::*;

    #[test]
    fn lcs_string_len_and_ranges() {
        let mut h = Harness::new();
        h.cmd("MSET a ohmytext b mynewtext");
        assert_eq!(h.cmd("LCS a b"), bulk("mytext"));
        assert_eq!(h.cmd("LCS a b LEN"), int(6));
        assert_eq!(
            h.cmd("LCS a b IDX"),
            "*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n\
             *2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n"
        );
        assert_eq!(
            h.cmd("LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN"),
            "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n"
        );
        assert_eq!(h.cmd("LCS a nokey"), bulk(""));
        assert_eq!(
            h.cmd("LCS a b LEN IDX"),
            err("ERR If you want both the length and indexes, please just use IDX.")
        );
        h.cmd("RPUSH l x");
        assert_eq!(
            h.cmd("LCS a l"),
            err("ERR The specified keys must contain string values")
        );
    }

    #[test]
    fn setbit_getbit() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("SETBIT k 1 1"), int(0));
        assert_eq!(h.cmd("GET k"), bulk("@"));
        assert_eq!(h.cmd("SETBIT k 1 1"), int(1));
        assert_eq!(h.cmd("SETBIT k 1 0"), int(1));
        assert_eq!(h.run(&[b"GET", b"k"]), b"$1\r\n\0\r\n");
        assert_eq!(h.cmd("SETBIT k 17 1"), int(0));
        assert_eq!(h.cmd("STRLEN k"), int(3));
        assert_eq!(h.cmd("GETBIT k 17"), int(1));
        assert_eq!(h.cmd("GETBIT k 16"), int(0));
        assert_eq!(h.cmd("GETBIT k 1000"), int(0));
        assert_eq!(h.cmd("GETBIT nokey 0"), int(0));
        assert_eq!(h.cmd("SETBIT k -1 1"), err(BAD_BIT_OFFSET));
        assert_eq!(h.cmd("SETBIT k 4294967296 1"), err(BAD_BIT_OFFSET));
        assert_eq!(h.cmd("SETBIT k 1 2"), err(BAD_BIT));
        assert_eq!(h.cmd("SETBIT k 1 x"), err(BAD_BIT));
        assert_eq!(h.cmd("GETBIT k x"), err(BAD_BIT_OFFSET));
        h.cmd("EXPIRE k 100");
        h.cmd("SETBIT k 40 1");
        assert_eq!(h.cmd("TTL k"), int(100), "SETBIT keeps the TTL");
        h.cmd("RPUSH l a");
        assert_eq!(h.cmd("SETBIT l 0 1"), err(WRONGTYPE));
        assert_eq!(h.cmd("GETBIT l 0"), err(WRONGTYPE));
    }
    use crate::cmd::wrong_arity;

    #[test]
    fn parse_i64_follows_string2ll() {
        for (s, v) in [
            ("0", Some(0)),
            ("1", Some(1)),
            ("-1", Some(-1)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("", None),
            ("-", None),
            ("-0", None),
            ("+1", None),
            ("01", None),
            (" 1", None),
            ("1 ", None),
            ("1a", None),
            ("00", None),
        ] {
            assert_eq!(parse_i64(s.as_bytes()), v, "{s:?}");
        }
    }

    #[test]
    fn format_i64_round_trips() {
        let mut buf = [0u8; 20];
        for n in [0, 1, -1, 10, -10, 12345, i64::MAX, i64::MIN] {
            assert_eq!(format_i64(n, &mut buf), n.to_string().as_bytes());
        }
    }

    #[test]
    fn get_set_basics() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("GET k"), NULL);
        assert_eq!(h.cmd("SET k v"), OK);
        assert_eq!(h.cmd("get k"), bulk("v"));
        let long = "x".repeat(100);
        assert_eq!(h.cmd(&format!("SET k {long}")), OK);
        assert_eq!(h.cmd("GET k"), bulk(&long));
        assert_eq!(h.run(&[b"SET", b"", b""]), OK.as_bytes());
        assert_eq!(h.run(&[b"GET", b""]), bulk("").as_bytes());
        assert_eq!(h.cmd("GET"), err(&wrong_arity("get")));
        assert_eq!(h.cmd("RPUSH l a"), int(1));
        assert_eq!(h.cmd("GET l"), err(WRONGTYPE));
        let s = h.db.stats();
        assert_eq!((s.keyspace_hits, s.keyspace_misses), (4, 1));
    }

    #[test]
    fn a_reply_outlives_an_overwrite_of_its_value() {
        let mut h = Harness::new();
        let long = "y".repeat(64);
        h.cmd(&format!("SET k {long}"));
        let mut out = ReplyBuf::new(ZERO_COPY);
        let ranges = [0..3, 3..4];
        let args = Args::new(b"GETk", &ranges, None);
        h.run_into(&args, &mut out);
        h.cmd("SET k other");
        h.cmd("DEL k");
        let (bytes, refs) = out.parts();
        let total: usize = bytes.len() + refs.iter().map(|(_, b)| b.len()).sum::<usize>();
        assert_eq!(total, bulk(&long).len());
        assert!(refs.iter().all(|(_, b)| b.iter().all(|&c| c == b'y')));
    }

    #[test]
    fn set_options() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("SET k v NX GET"), NULL);
        assert_eq!(h.cmd("SET k v2 NX GET"), bulk("v"));
        assert_eq!(h.cmd("GET k"), bulk("v"));
        assert_eq!(h.cmd("SET k v3 XX GET"), bulk("v"));
        assert_eq!(h.cmd("SET k2 v XX GET"), NULL);
        assert_eq!(h.cmd("SET k2 v XX"), NULL);
        assert_eq!(h.cmd("EXISTS k2"), int(0));
        assert_eq!(h.cmd("SET k v NX"), NULL);
        assert_eq!(h.cmd("SET k v get get"), bulk("v3"));
        for bad in [
            "SET k v NX XX",
            "SET k v XX NX",
            "SET k v EX 10 PX 10",
            "SET k v PXAT 10 EXAT 10",
            "SET k v KEEPTTL EX 5",
            "SET k v EX 5 KEEPTTL",
            "SET k v EX",
            "SET k v FOO",
            "SET k v EX abc NX XX",
            "SET k v NXX",
        ] {
            assert_eq!(h.cmd(bad), err(SYNTAX), "{bad}");
        }
        assert_eq!(h.cmd("SET k v ex 10 ex 20"), OK);
        assert_eq!(h.cmd("TTL k"), int(20));
        assert_eq!(h.cmd("SET k v ex abc"), err(NOT_INTEGER));
        for bad in [
            "SET k v EX 0",
            "SET k v PX -5",
            "SET k v EX 9223372036854775",
            "SET k v PX 9223372036854775807",
            "SET k v EXAT 9223372036854776",
        ] {
            assert_eq!(h.cmd(bad), err(SET_EXPIRE), "{bad}");
        }
        assert_eq!(h.cmd("SET k v EXAT 9223372036854775"), OK);
        assert_eq!(h.cmd("RPUSH l a"), int(1));
        assert_eq!(h.cmd("SET l v GET"), err(WRONGTYPE));
        assert_eq!(h.cmd("LLEN l"), int(1));
        assert_eq!(h.cmd("SET l v"), OK, "SET ignores the old type");
        assert_eq!(h.cmd("GET l"), bulk("v"));
    }

    #[test]
    fn set_expiry_options() {
        let mut h = Harness::new();
        let now = h.now_ms;
        assert_eq!(h.cmd("SET k v PX 1500"), OK);
        assert_eq!(h.cmd("PTTL k"), int(1500));
        assert_eq!(h.cmd("TTL k"), int(2), "(1500 + 500) / 1000");
        assert_eq!(h.cmd("SET k v KEEPTTL"), OK);
        assert_eq!(h.cmd("PTTL k"), int(1500));
        assert_eq!(h.cmd("SET k v"), OK);
        assert_eq!(h.cmd("PTTL k"), int(-1));
        assert_eq!(h.cmd(&format!("SET k v PXAT {}", now + 10)), OK);
        assert_eq!(h.cmd("PTTL k"), int(10));
        assert_eq!(h.cmd(&format!("SET k v EXAT {}", now / 1000 + 3)), OK);
        assert_eq!(h.cmd("PTTL k"), int(3000 - (now % 1000) as i64));
        h.now_ms += 1500;
        assert_eq!(h.cmd("SET e v EX 1"), OK);
        h.now_ms += 1000;
        assert_eq!(h.cmd("GET e"), bulk("v"), "alive at the deadline");
        h.now_ms += 1;
        assert_eq!(h.cmd("GET e"), NULL);
        // A deadline in the past is stored; the next access expires the key (Redis 7.0).
        assert_eq!(h.cmd("SET p v PXAT 1"), OK);
        let before = h.db.stats().expired_keys;
        assert_eq!(h.cmd("EXISTS p"), int(0));
        assert_eq!(h.db.stats().expired_keys, before + 1);
    }

    #[test]
    fn setnx_getset_getdel() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("SETNX k a"), int(1));
        assert_eq!(h.cmd("SETNX k b"), int(0));
        assert_eq!(h.cmd("GET k"), bulk("a"));
        assert_eq!(h.cmd("EXPIRE k 100"), int(1));
        assert_eq!(h.cmd("GETSET k b"), bulk("a"));
        assert_eq!(h.cmd("TTL k"), int(-1), "GETSET drops the TTL");
        assert_eq!(h.cmd("GETSET new c"), NULL);
        assert_eq!(h.cmd("GET new"), bulk("c"));
        assert_eq!(h.cmd("GETDEL k"), bulk("b"));
        assert_eq!(h.cmd("GETDEL k"), NULL);
        assert_eq!(h.cmd("EXISTS k"), int(0));
        assert_eq!(h.cmd("RPUSH l a"), int(1));
        assert_eq!(h.cmd("GETSET l x"), err(WRONGTYPE));
        assert_eq!(h.cmd("GETDEL l"), err(WRONGTYPE));
        assert_eq!(h.cmd("SETNX l x"), int(0));
        assert_eq!(h.cmd("LLEN l"), int(1));
    }

    #[test]
    fn mget_mset() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("MSET a 1 b 2"), OK);
        assert_eq!(h.cmd("RPUSH l x"), int(1));
        assert_eq!(
            h.cmd("MGET a l nokey b a"),
            "*5\r\n$1\r\n1\r\n$-1\r\n$-1\r\n$1\r\n2\r\n$1\r\n1\r\n"
        );
        assert_eq!(h.cmd("MSET a"), err(&wrong_arity("mset")));
        assert_eq!(h.cmd("MSET a 1 b"), err(&wrong_arity("mset")));
        assert_eq!(h.cmd("EXPIRE a 10"), int(1));
        assert_eq!(h.cmd("MSET a 3 l 4"), OK);
        assert_eq!(h.cmd("TTL a"), int(-1));
        assert_eq!(h.cmd("MGET a l"), bulks(&["3", "4"]));
    }

    #[test]
    fn append_and_strlen() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("STRLEN k"), int(0));
        assert_eq!(h.cmd("APPEND k hello"), int(5));
        assert_eq!(h.cmd("EXPIRE k 100"), int(1));
        let tail = "w".repeat(40);
        assert_eq!(h.cmd(&format!("APPEND k {tail}")), int(45));
        assert_eq!(h.run(&[b"APPEND", b"k", b""]), int(45).as_bytes());
        assert_eq!(h.cmd("GET k"), bulk(&format!("hello{tail}")));
        assert_eq!(h.cmd("STRLEN k"), int(45));
        assert_eq!(h.cmd("TTL k"), int(100), "APPEND keeps the TTL");
        assert_eq!(h.cmd("RPUSH l a"), int(1));
        assert_eq!(h.cmd("APPEND l x"), err(WRONGTYPE));
        assert_eq!(h.cmd("STRLEN l"), err(WRONGTYPE));
        h.server.config.proto_max_bulk_len = 46;
        assert_eq!(h.cmd("APPEND k xy"), err(TOO_LONG));
        assert_eq!(h.cmd("APPEND k x"), int(46));
        let stats = h.db.stats();
        assert_eq!(
            h.db.used_memory(),
            1 + 46 + 1 + 1 + 2 * crate::db::KEY_OVERHEAD + 16
        );
        assert_eq!(stats.expired_keys, 0);
    }

    #[test]
    fn append_leaves_a_referenced_value_intact() {
        let mut h = Harness::new();
        let long = "z".repeat(32);
        h.cmd(&format!("SET k {long}"));
        let old = match h.db.get(b"k", h.now_ms) {
            Some(Value::Str(b)) => b.clone(),
            _ => panic!(),
        };
        h.cmd("APPEND k more");
        assert_eq!(&old[..], long.as_bytes());
        assert_eq!(h.cmd("GET k"), bulk(&format!("{long}more")));
    }

    #[test]
    fn incr_decr() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("INCR n"), int(1));
        assert_eq!(h.cmd("INCRBY n 10"), int(11));
        assert_eq!(h.cmd("DECR n"), int(10));
        assert_eq!(h.cmd("DECRBY n 30"), int(-20));
        assert_eq!(h.cmd("GET n"), bulk("-20"));
        assert_eq!(h.cmd("DECRBY m -5"), int(5));
        assert_eq!(h.cmd("EXPIRE n 100"), int(1));
        assert_eq!(h.cmd("INCR n"), int(-19));
        assert_eq!(h.cmd("TTL n"), int(100), "INCR keeps the TTL");
        assert_eq!(h.cmd("SET n 9223372036854775807"), OK);
        assert_eq!(h.cmd("INCR n"), err(OVERFLOW));
        assert_eq!(h.cmd("SET n -9223372036854775808"), OK);
        assert_eq!(h.cmd("DECR n"), err(OVERFLOW));
        assert_eq!(h.cmd("INCRBY n 9223372036854775807"), int(-1));
        assert_eq!(h.cmd("DECRBY x -9223372036854775808"), err(DECR_OVERFLOW));
        for v in ["-0", "007", "+7", "1.5", "abc", "99999999999999999999"] {
            assert_eq!(h.cmd(&format!("SET s {v}")), OK);
            assert_eq!(h.cmd("INCR s"), err(NOT_INTEGER), "{v}");
        }
        assert_eq!(h.run(&[b"SET", b"s", b" 7"]), OK.as_bytes());
        assert_eq!(h.cmd("INCR s"), err(NOT_INTEGER));
        assert_eq!(h.cmd("INCRBY n abc"), err(NOT_INTEGER));
        assert_eq!(h.cmd("RPUSH l a"), int(1));
        assert_eq!(h.cmd("INCR l"), err(WRONGTYPE));
        assert_eq!(
            h.cmd("INCRBY l abc"),
            err(NOT_INTEGER),
            "the increment is parsed first"
        );
    }

    #[test]
    fn large_values_are_kept_in_place_and_referenced() {
        let mut h = Harness::new();
        let long = "q".repeat(KEEP_IN_PLACE * 4);
        h.cmd(&format!("SET k {long}"));
        h.cmd("SET short abc");
        let offset = |h: &mut Harness, key: &[u8]| {
            let now = h.now_ms;
            let Some(Value::Str(stored)) = h.db.get(key, now).cloned() else {
                panic!()
            };
            h.db.pool().offset_of(&stored).unwrap()
        };
        // A long value is a slice of the request buffer, after "SETk"; a short one, a copy at
        // the start of its own slot.
        assert_eq!(offset(&mut h, b"k") % ferry_buf::MIN_CLASS, 4);
        assert_eq!(offset(&mut h, b"short") % ferry_buf::MIN_CLASS, 0);
        assert_eq!(h.cmd("GET k"), bulk(&long));
    }
}
