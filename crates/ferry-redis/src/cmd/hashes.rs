//! Hash commands: `HSET`, `HMSET`, `HSETNX`, `HGET`, `HMGET`, `HGETALL`, `HKEYS`, `HVALS`,
//! `HDEL`, `HLEN`, `HSTRLEN`, `HEXISTS`, `HINCRBY`, `HINCRBYFLOAT`, `HSCAN`, `HRANDFIELD`,
//! with Redis 7.0's semantics and error replies.
//!
//! Field names and values are pool buffers ([`FieldTable`]): they come from [`Args::value`]
//! (kept in the read buffer when large) and go out with [`ReplyBuf::bulk_buf`] (by reference
//! when large), as strings do. A hash emptied by a command is deleted (the keyspace's
//! [`CollMut`] does it when dropped).
//!
//! Differences from Redis, by design: whole-hash replies (`HGETALL`, `HKEYS`, `HVALS`) come in
//! the table's order, where Redis lists a small hash in insertion order (its listpack); `HSCAN`
//! returns the whole hash in one call with cursor 0, as Redis does for a listpack-encoded
//! hash. `HINCRBYFLOAT` computes in `f64` where Redis uses x87 `long double`: the results agree
//! when the operands and the sum are exact in `f64` (integers, halves, quarters, ...), and may
//! differ in the last digits otherwise, and operands beyond `f64`'s range (`1e400`) read as infinite.

use ferry_buf::SharedBuf;

use super::keys::{INVALID_CURSOR, ScanOptions, parse_cursor};
use super::random::RandomPick;
use super::strings::{OVERFLOW, parse_i64};
use super::{Args, Ctx, NOT_INTEGER, OOM, WRONGTYPE, read_typed, wrong_arity};
use crate::db::{CollMut, Kind, Value};
use crate::fields::FieldTable;
use crate::resp::ReplyBuf;

/// `HINCRBY`'s reply when the field's value is not an integer.
pub const HASH_NOT_INTEGER: &str = "ERR hash value is not an integer";
/// `HINCRBYFLOAT`'s reply when the field's value is not a number.
pub const HASH_NOT_FLOAT: &str = "ERR hash value is not a float";
/// The reply to an increment that is not a number.
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// `HINCRBYFLOAT`'s reply to an infinite increment.
pub const NAN_OR_INFINITY: &str = "ERR value is NaN or Infinity";
/// `HINCRBYFLOAT`'s reply when the sum is infinite.
pub const PRODUCES_NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";

/// The hash at `key` to change, created if missing; `None` after replying `WRONGTYPE`.
fn write_hash<'d>(ctx: &'d mut Ctx<'_>, key: &[u8], out: &mut ReplyBuf) -> Option<CollMut<'d>> {
    match ctx.db.collection_or_insert(key, ctx.now_ms, Kind::Hash) {
        Ok(h) => Some(h),
        Err(_) => {
            out.error(WRONGTYPE);
            None
        }
    }
}

/// Arguments `from..` as stored values, in pairs; `None` if the pool is full.
fn values(args: &Args<'_>, from: usize, h: &CollMut<'_>) -> Option<Vec<SharedBuf>> {
    let (pool, keep) = (h.pool(), h.keep_in_place_min());
    (from..args.len())
        .map(|i| args.value(i, pool, keep).ok())
        .collect()
}

/// `HSET key field value [field value ...]`: the number of new fields.
pub fn hset(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(created) = set_pairs(ctx, args, out, "hset") {
        out.integer(created as i64);
    }
}

/// `HMSET key field value [field value ...]`: `OK`.
pub fn hmset(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if set_pairs(ctx, args, out, "hmset").is_some() {
        out.ok();
    }
}

/// Sets every pair or none; the number of new fields, or `None` after an error reply.
fn set_pairs(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, name: &str) -> Option<usize> {
    if args.len() % 2 == 1 {
        out.error(wrong_arity(name));
        return None;
    }
    let mut h = write_hash(ctx, args.get(1), out)?;
    let Some(items) = values(args, 2, &h) else {
        out.error(OOM);
        return None;
    };
    let mut items = items.into_iter();
    let mut created = 0;
    while let (Some(field), Some(value)) = (items.next(), items.next()) {
        created += usize::from(h.hash().insert(field, value));
    }
    h.changed();
    Some(created)
}

/// `HSETNX key field value`: 1 if set, 0 if the field existed.
pub fn hsetnx(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(mut h) = write_hash(ctx, args.get(1), out) else {
        return;
    };
    if h.hash().contains(args.get(2)) {
        return out.integer(0);
    }
    let Some(mut items) = values(args, 2, &h) else {
        return out.error(OOM);
    };
    let value = items.pop().expect("arity 4: a field and a value");
    let field = items.pop().expect("arity 4: a field and a value");
    h.hash().insert(field, value);
    out.integer(1);
}

/// `HGET key field`: the value, null if missing.
pub fn hget(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, ReplyBuf::null, Value::as_hash) {
        match h.get(args.get(2)) {
            Some((_, v)) => out.bulk_buf(v),
            None => out.null(),
        }
    }
}

/// `HMGET key field [field ...]`: a value or null per field.
pub fn hmget(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let fields = args.len() - 2;
    let empty = FieldTable::default();
    let h = match ctx.db.get(args.get(1), ctx.now_ms) {
        Some(Value::Hash(h)) => h,
        Some(_) => return out.error(WRONGTYPE),
        None => &empty,
    };
    out.array(fields);
    for f in args.iter_from(2) {
        match h.get(f) {
            Some((_, v)) => out.bulk_buf(v),
            None => out.null(),
        }
    }
}

/// `HGETALL key`: a map of fields to values (a flat array in RESP2).
pub fn hgetall(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, |out| out.map(0), Value::as_hash) {
        out.map(h.len());
        for (f, v) in h.iter() {
            out.bulk_buf(f);
            out.bulk_buf(v);
        }
    }
}

/// `HKEYS key`: the field names.
pub fn hkeys(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, |out| out.array(0), Value::as_hash) {
        out.array(h.len());
        for (f, _) in h.iter() {
            out.bulk_buf(f);
        }
    }
}

/// `HVALS key`: the values.
pub fn hvals(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, |out| out.array(0), Value::as_hash) {
        out.array(h.len());
        for (_, v) in h.iter() {
            out.bulk_buf(v);
        }
    }
}

/// `HDEL key field [field ...]`: the number of fields removed; the key goes with the last.
pub fn hdel(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.collection(args.get(1), ctx.now_ms, Kind::Hash) {
        Err(_) => out.error(WRONGTYPE),
        Ok(None) => out.integer(0),
        Ok(Some(mut h)) => {
            let removed = args.iter_from(2).filter(|f| h.hash().remove(f).is_some()).count();
            out.integer(removed as i64);
        }
    }
}

/// `HLEN key`: the number of fields, 0 if missing.
pub fn hlen(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_hash) {
        out.integer(h.len() as i64);
    }
}

/// `HSTRLEN key field`: the value's length, 0 if missing.
pub fn hstrlen(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_hash) {
        out.integer(h.get(args.get(2)).map_or(0, |(_, v)| v.len()) as i64);
    }
}

/// `HEXISTS key field`: 1 or 0.
pub fn hexists(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if let Some(h) = read_typed(ctx, args.get(1), out, |out| out.integer(0), Value::as_hash) {
        out.integer(i64::from(h.contains(args.get(2))));
    }
}

/// Stores `text` as field `args[2]`'s new value (the field keeps its name buffer if it
/// exists); `false` if the pool is full.
fn store(h: &mut CollMut<'_>, args: &Args<'_>, text: &[u8]) -> bool {
    let (pool, keep) = (h.pool(), h.keep_in_place_min());
    let (Ok(field), Ok(value)) = (args.value(2, pool, keep), pool.copy_from(text)) else {
        return false;
    };
    h.hash().insert(field, value);
    h.changed();
    true
}

/// `HINCRBY key field increment`: the new value.
pub fn hincrby(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(incr) = parse_i64(args.get(3)) else {
        return out.error(NOT_INTEGER);
    };
    let Some(mut h) = write_hash(ctx, args.get(1), out) else {
        return;
    };
    let old = match h.hash().get(args.get(2)) {
        None => 0,
        Some((_, v)) => match parse_i64(v) {
            Some(n) => n,
            None => return out.error(HASH_NOT_INTEGER),
        },
    };
    let Some(new) = old.checked_add(incr) else {
        return out.error(OVERFLOW);
    };
    let mut digits = [0; 20];
    if !store(&mut h, args, super::strings::format_i64(new, &mut digits)) {
        return out.error(OOM);
    }
    out.integer(new);
}

/// Parses a number as Redis's `string2ld` (C's `strtold`) accepts it, in `f64` (see the
/// module docs): decimal or hexadecimal (`0x1.8p3`), no leading space, nothing after it, not
/// NaN; infinities are accepted.
pub fn parse_float(bytes: &[u8]) -> Option<f64> {
    if bytes.first().is_none_or(u8::is_ascii_whitespace) {
        return None;
    }
    let (negative, rest) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, bytes),
    };
    let v = match rest {
        [b'0', b'x' | b'X', hex @ ..] => parse_hex_float(hex)?,
        _ => std::str::from_utf8(rest).ok()?.parse().ok()?,
    };
    let v = if negative { -v } else { v };
    (!v.is_nan() && !rest.starts_with(b"+") && !rest.starts_with(b"-")).then_some(v)
}

/// The digits of a hexadecimal float after `0x`: `h[.h][p[+-]d]`, at least one hex digit
/// (at most 24 significant ones: beyond that `None`).
pub(super) fn parse_hex_float(hex: &[u8]) -> Option<f64> {
    let (mut mantissa, mut digits, mut shift, mut seen_point) = (0u128, 0usize, 0i64, false);
    let mut i = 0;
    while let Some(&c) = hex.get(i) {
        match c {
            b'.' if !seen_point => seen_point = true,
            _ => match (c as char).to_digit(16) {
                Some(d) => {
                    mantissa = mantissa * 16 + u128::from(d);
                    digits += 1;
                    if seen_point {
                        shift -= 4;
                    }
                    if mantissa.leading_zeros() < 32 {
                        return None;
                    }
                }
                None => break,
            },
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if let Some(&(b'p' | b'P')) = hex.get(i) {
        let (negative, exp) = match &hex[i + 1..] {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            rest => (false, rest),
        };
        if exp.is_empty() || !exp.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let e = exp.iter().fold(0i64, |e, &d| {
            e.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
        shift = shift.saturating_add(if negative { -e } else { e });
    } else if i != hex.len() {
        return None;
    }
    let scale = i32::try_from(shift.clamp(-100_000, 100_000)).expect("clamped");
    Some(mantissa as f64 * 2f64.powi(scale))
}

/// `v` as Redis's `ld2string(..., LD_STR_HUMAN)` writes it: `%.17f` without trailing zeros
/// (nor a trailing `.`), and `-0` as `0`.
pub fn format_float_human(v: f64) -> String {
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s == "-0" { "0".to_string() } else { s }
}

/// `HINCRBYFLOAT key field increment`: the new value, as a bulk string.
pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(incr) = parse_float(args.get(3)) else {
        return out.error(NOT_FLOAT);
    };
    if incr.is_infinite() {
        return out.error(NAN_OR_INFINITY);
    }
    let Some(mut h) = write_hash(ctx, args.get(1), out) else {
        return;
    };
    let old = match h.hash().get(args.get(2)) {
        None => 0.0,
        Some((_, v)) => match parse_float(v) {
            Some(x) => x,
            None => return out.error(HASH_NOT_FLOAT),
        },
    };
    let new = old + incr;
    if !new.is_finite() {
        return out.error(PRODUCES_NAN_OR_INFINITY);
    }
    let text = format_float_human(new);
    if !store(&mut h, args, text.as_bytes()) {
        return out.error(OOM);
    }
    out.bulk(text.as_bytes());
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: `[0, [field, value, ...]]`, the whole
/// hash at once (see the module docs).
pub fn hscan(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    scan_collection(ctx, args, out, Kind::Hash);
}

/// `HSCAN`, `SSCAN` or `ZSCAN` (`kind`): the whole collection in one reply, cursor 0, as Redis answers
/// for a small (listpack or intset) one; `MATCH` filters names. As in Redis, the options are
/// read only once the key is known to hold the right type.
pub fn scan_collection(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, kind: Kind) {
    if parse_cursor(args.get(2)).is_none() {
        return out.error(INVALID_CURSOR);
    }
    let value = match ctx.db.get(args.get(1), ctx.now_ms) {
        None => return empty_scan(out),
        Some(v @ Value::Hash(_)) if kind == Kind::Hash => v,
        Some(v @ Value::Set(_)) if kind == Kind::Set => v,
        Some(v @ Value::ZSet(_)) if kind == Kind::ZSet => v,
        Some(_) => return out.error(WRONGTYPE),
    };
    let opts = match ScanOptions::parse(args, 3, false) {
        Ok(opts) => opts,
        Err(e) => return out.error(e),
    };
    out.array(2);
    out.bulk(b"0");
    match value {
        Value::Hash(t) => {
            let found: Vec<_> = t.iter().filter(|(f, _)| opts.matches(f)).collect();
            out.array(found.len() * 2);
            for (f, v) in found {
                out.bulk_buf(f);
                out.bulk_buf(v);
            }
        }
        Value::Set(t) => {
            let found: Vec<_> = t.iter().filter(|(m, _)| opts.matches(m)).collect();
            out.array(found.len());
            for (m, _) in found {
                out.bulk_buf(m);
            }
        }
        Value::ZSet(z) => {
            let found: Vec<_> = z.iter().filter(|(m, _)| opts.matches(m)).collect();
            out.array(found.len() * 2);
            for (m, s) in found {
                out.bulk_buf(m);
                out.double_bulk(s);
            }
        }
        Value::Str(_) | Value::List(_) => unreachable!("checked above"),
    }
}

/// The reply of `HSCAN`/`SSCAN` on a missing key: `[0, []]`.
pub fn empty_scan(out: &mut ReplyBuf) {
    out.array(2);
    out.bulk(b"0");
    out.array(0);
}

/// `HRANDFIELD key [count [WITHVALUES]]` (see [`random`](super::random)).
pub fn hrandfield(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    RandomPick {
        with_word: Some(b"withvalues"),
        table: Value::as_hash,
        write_value: ReplyBuf::bulk_buf,
    }
    .run(ctx, args, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::SYNTAX;
    use crate::cmd::harness::*;
    use crate::cmd::random::{COUNT_RANGE, OUT_OF_RANGE};
    use crate::resp::Proto;

    #[test]
    fn set_get_and_delete_fields() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("HSET h a 1 b 2"), int(2));
        assert_eq!(h.cmd("HSET h a 3 c 4"), int(1));
        assert_eq!(h.cmd("HSET h a"), err(&wrong_arity("hset")));
        assert_eq!(h.cmd("HMSET h d 5 e"), err(&wrong_arity("hmset")));
        assert_eq!(h.cmd("HMSET h d 5"), OK);
        assert_eq!(h.cmd("HSETNX h d 6"), int(0));
        assert_eq!(h.cmd("HSETNX h f 6"), int(1));
        assert_eq!(h.cmd("HGET h a"), bulk("3"));
        assert_eq!(h.cmd("HGET h zz"), NULL);
        assert_eq!(h.cmd("HGET nokey a"), NULL);
        assert_eq!(h.cmd("HMGET h a zz b"), "*3\r\n$1\r\n3\r\n$-1\r\n$1\r\n2\r\n");
        assert_eq!(h.cmd("HMGET nokey a"), "*1\r\n$-1\r\n");
        assert_eq!(h.cmd("HLEN h"), int(5));
        assert_eq!(h.cmd("HSTRLEN h a"), int(1));
        assert_eq!(h.cmd("HSTRLEN h zz"), int(0));
        assert_eq!(h.cmd("HEXISTS h f"), int(1));
        assert_eq!(h.cmd("HEXISTS h zz"), int(0));
        assert_eq!(h.cmd("HDEL h a b zz a"), int(2));
        assert_eq!(h.cmd("HDEL nokey a"), int(0));
        assert_eq!(h.cmd("HDEL h c d f"), int(3));
        assert_eq!(h.cmd("EXISTS h"), int(0), "an emptied hash is deleted");
        assert_eq!(h.db.used_memory(), 0);
        h.cmd("SET s v");
        for c in [
            "HSET s a 1",
            "HGET s a",
            "HMGET s a",
            "HDEL s a",
            "HLEN s",
            "HGETALL s",
            "HINCRBY s a 1",
        ] {
            assert_eq!(h.cmd(c), err(WRONGTYPE), "{c}");
        }
        assert_eq!(
            h.cmd("HINCRBY s a x"),
            err(NOT_INTEGER),
            "the increment is read first"
        );
        assert_eq!(h.cmd("HSET x a 1"), int(1));
        assert_eq!(h.cmd("TYPE x"), "+hash\r\n");
    }

    #[test]
    fn whole_hash_replies_and_scan() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("HGETALL nokey"), "*0\r\n");
        assert_eq!(h.cmd("HSCAN nokey 0 COUNT 0"), "*2\r\n$1\r\n0\r\n*0\r\n");
        assert_eq!(h.cmd("HSCAN nokey x"), err(INVALID_CURSOR));
        h.cmd("HSET h f v");
        assert_eq!(h.cmd("HGETALL h"), bulks(&["f", "v"]));
        assert_eq!(h.cmd("HKEYS h"), bulks(&["f"]));
        assert_eq!(h.cmd("HVALS h"), bulks(&["v"]));
        assert_eq!(
            h.cmd("HSCAN h 7 MATCH f*"),
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
        );
        assert_eq!(h.cmd("HSCAN h 0 MATCH g*"), "*2\r\n$1\r\n0\r\n*0\r\n");
        assert_eq!(h.cmd("HSCAN h 0 TYPE hash"), err(SYNTAX));
        assert_eq!(h.cmd("HSCAN h 0 COUNT 0"), err(SYNTAX));
        h.client.proto = Proto::Resp3;
        assert_eq!(h.cmd("HGETALL h"), "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
        assert_eq!(h.cmd("HGETALL nokey"), "%0\r\n");
    }

    #[test]
    fn increments() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("HINCRBY h n 5"), int(5));
        assert_eq!(h.cmd("HINCRBY h n -7"), int(-2));
        assert_eq!(h.cmd("HINCRBY h n 9223372036854775807"), int(9223372036854775805));
        assert_eq!(h.cmd("HINCRBY h n 3"), err(OVERFLOW));
        h.cmd("HSET h s 1.5");
        assert_eq!(h.cmd("HINCRBY h s 1"), err(HASH_NOT_INTEGER));
        assert_eq!(h.cmd("HINCRBYFLOAT h s 1"), bulk("2.5"));
        assert_eq!(h.cmd("HINCRBYFLOAT h s -2.5"), bulk("0"));
        assert_eq!(h.cmd("HINCRBYFLOAT h s 1e3"), bulk("1000"));
        assert_eq!(h.cmd("HINCRBYFLOAT h s abc"), err(NOT_FLOAT));
        assert_eq!(h.cmd("HINCRBYFLOAT h s nan"), err(NOT_FLOAT));
        assert_eq!(h.cmd("HINCRBYFLOAT h s inf"), err(NAN_OR_INFINITY));
        assert_eq!(
            h.cmd("HINCRBYFLOAT h s 1.7e308"),
            bulk(&format_float_human(1.7e308 + 1000.0))
        );
        assert_eq!(h.cmd("HINCRBYFLOAT h s 1.7e308"), err(PRODUCES_NAN_OR_INFINITY));
        h.cmd("HSET h w word");
        assert_eq!(h.cmd("HINCRBYFLOAT h w 1"), err(HASH_NOT_FLOAT));
        assert_eq!(h.cmd("HINCRBYFLOAT nokey f 0.25"), bulk("0.25"));
        assert_eq!(format_float_human(-0.0), "0");
        assert_eq!(format_float_human(0.1), "0.10000000000000001");
        assert_eq!(parse_float(b" 1"), None);
        assert_eq!(parse_float(b""), None);
        assert_eq!(parse_float(b"0x1f"), Some(31.0));
        assert_eq!(parse_float(b"-0x1.8p3"), Some(-12.0));
        assert_eq!(parse_float(b"0X.8P-1"), Some(0.25));
        assert_eq!(parse_float(b"0x"), None);
        assert_eq!(parse_float(b"0x1p"), None);
        assert_eq!(parse_float(b"0x1p+"), None);
        assert_eq!(parse_float(b"0x1p99999999999999999999"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"0x1g"), None);
        assert_eq!(parse_float(b"+-1"), None);
        assert_eq!(parse_float(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float(b"1e"), None);
    }

    #[test]
    fn random_fields_with_counts_keep_their_properties() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("HRANDFIELD nokey"), NULL);
        assert_eq!(h.cmd("HRANDFIELD nokey 3"), "*0\r\n");
        assert_eq!(h.cmd("HRANDFIELD nokey x"), err(NOT_INTEGER));
        assert_eq!(h.cmd("HRANDFIELD nokey -9223372036854775808"), err(COUNT_RANGE));
        assert_eq!(h.cmd("HRANDFIELD nokey 1 FOO"), err(SYNTAX));
        assert_eq!(
            h.cmd("HRANDFIELD nokey 4611686018427387904 WITHVALUES"),
            err(OUT_OF_RANGE)
        );
        h.cmd("HSET h a 1 b 2 c 3 d 4 e 5");
        let fields = |reply: &str| -> Vec<String> {
            reply
                .split("\r\n")
                .skip(1)
                .filter(|l| !l.starts_with('$') && !l.is_empty())
                .map(String::from)
                .collect()
        };
        assert_eq!(h.cmd("HRANDFIELD h 0"), "*0\r\n");
        for _ in 0..20 {
            let one = h.cmd("HRANDFIELD h");
            assert!(["a", "b", "c", "d", "e"].iter().any(|f| one == bulk(f)), "{one}");
            let mut distinct = fields(&h.cmd("HRANDFIELD h 3"));
            assert_eq!(distinct.len(), 3);
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), 3, "a positive count picks distinct fields");
            let mut all = fields(&h.cmd("HRANDFIELD h 10"));
            all.sort();
            assert_eq!(
                all,
                ["a", "b", "c", "d", "e"],
                "a count past the size gives the whole hash"
            );
            let repeats = fields(&h.cmd("HRANDFIELD h -12"));
            assert_eq!(
                repeats.len(),
                12,
                "a negative count gives that many, repeats allowed"
            );
            let pairs = fields(&h.cmd("HRANDFIELD h -4 WITHVALUES"));
            assert_eq!(pairs.len(), 8);
            for p in pairs.chunks(2) {
                assert_eq!(p[1].as_bytes()[0] - b'0', p[0].as_bytes()[0] - b'a' + 1, "{p:?}");
            }
        }
        h.client.proto = Proto::Resp3;
        assert!(
            h.cmd("HRANDFIELD h 2 WITHVALUES")
                .starts_with("*2\r\n*2\r\n$1\r\n")
        );
    }

    /// A huge negative count asks for that many picks: the reply stops once it is over the
    /// output buffer limit (the server then drops the client, as Redis does), and nothing is
    /// allocated by the count.
    #[test]
    fn regression_huge_repeating_counts_stop_at_the_output_limit() {
        let mut h = Harness::new();
        h.server.config.output_buffer_limit = 1000;
        h.cmd("HSET h a 1");
        h.cmd("SADD s a");
        for c in [
            "HRANDFIELD h -9223372036854775807",
            "HRANDFIELD h -4611686018427387903 WITHVALUES",
            "SRANDMEMBER s -9223372036854775807",
        ] {
            let reply = h.cmd(c);
            assert!(reply.len() > 1000 && reply.len() < 1100, "{c}: {}", reply.len());
        }
    }

    #[test]
    fn large_fields_and_values_go_by_reference() {
        let mut h = Harness::new();
        let (field, value) = ("F".repeat(40), "V".repeat(64));
        h.cmd(&format!("HSET h {field} {value}"));
        let reply = h.cmd("HGETALL h");
        assert_eq!(reply, bulks(&[&field, &value]));
        let mut out = ReplyBuf::new(ZERO_COPY);
        let Some(Value::Hash(t)) = h.db.get(b"h", h.now_ms) else {
            panic!("a hash")
        };
        for (f, v) in t.iter() {
            out.bulk_buf(f);
            out.bulk_buf(v);
        }
        assert_eq!(out.referenced_value_bytes(), 104);
        assert_eq!(out.copied_value_bytes(), 0);
        assert_eq!(
            h.db.used_memory(),
            1 + crate::db::KEY_OVERHEAD + 104 + crate::fields::ENTRY_OVERHEAD
        );
        assert_eq!(h.cmd("HDEL h nothing"), int(0));
        assert_eq!(h.cmd(&format!("HDEL h {field}")), int(1));
        assert_eq!(h.db.used_memory(), 0);
    }
}
