//! Generic key commands: `DEL`, `UNLINK`, `EXISTS`, `TOUCH`, `TYPE`, `EXPIRE`, `PEXPIRE`,
//! `EXPIREAT`, `PEXPIREAT`, `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`, `PERSIST`, `RENAME`,
//! `RENAMENX`, `RANDOMKEY`, `KEYS`, `SCAN`, with Redis 7.0's semantics and error replies.
//!
//! `UNLINK` is `DEL`: values are freed when their last reference drops, and a large value's
//! bytes go back to the pool without a walk, so there is nothing to defer to another thread.

use super::databases::{DB_OUT_OF_RANGE, SAME_OBJECT, parse_db_index};
use super::{Args, Ctx, NOT_INTEGER, SYNTAX};
use crate::cmd::strings::parse_i64;
use crate::db::{Access, SetIf, Ttl, Value};
use crate::resp::ReplyBuf;

/// `SCAN`'s reply to a cursor that is not an unsigned 64-bit decimal.
pub const INVALID_CURSOR: &str = "ERR invalid cursor";

/// `DEL key [key ...]`: the number of keys deleted.
pub fn del(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let now = ctx.now_ms;
    let deleted = args.iter_from(1).filter(|k| ctx.db.remove(k, now)).count();
    out.integer(deleted as i64);
}

/// `UNLINK key [key ...]`: as `DEL` (see the module docs).
pub fn unlink(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    del(ctx, args, out);
}

/// `EXISTS key [key ...]`: how many of the keys exist, a key named twice counting twice.
pub fn exists(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let now = ctx.now_ms;
    let n = args.iter_from(1).filter(|k| ctx.db.contains(k, now)).count();
    out.integer(n as i64);
}

/// `TYPE key`: `string`, `list`, `hash`, `set` or `none`.
pub fn type_(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let name = ctx
        .db
        .get(args.get(1), ctx.now_ms)
        .map_or("none", Value::type_name);
    out.simple(name);
}

/// `EXPIRE key seconds [NX | XX | GT | LT]`.
pub fn expire(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    expire_generic(ctx, args, out, 1000, true, "expire");
}

/// `PEXPIRE key milliseconds [NX | XX | GT | LT]`.
pub fn pexpire(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    expire_generic(ctx, args, out, 1, true, "pexpire");
}

/// `EXPIREAT key unix-seconds [NX | XX | GT | LT]`.
pub fn expireat(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    expire_generic(ctx, args, out, 1000, false, "expireat");
}

/// `PEXPIREAT key unix-milliseconds [NX | XX | GT | LT]`.
pub fn pexpireat(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    expire_generic(ctx, args, out, 1, false, "pexpireat");
}

/// Redis's `expireGenericCommand`, the time relative to now (`relative`) or absolute:
/// options, then the number, then the key. A deadline not after now deletes the key (and
/// replies 1).
fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
    unit_ms: i64,
    relative: bool,
    name: &str,
) {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in args.iter_from(3) {
        if opt.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if opt.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if opt.eq_ignore_ascii_case(b"gt") {
            gt = true;
        } else if opt.eq_ignore_ascii_case(b"lt") {
            lt = true;
        } else {
            return out.error(unsupported_option(opt));
        }
    }
    if nx && (xx || gt || lt) {
        return out.error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return out.error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = parse_i64(args.get(2)) else {
        return out.error(NOT_INTEGER);
    };
    let now = i64::try_from(ctx.now_ms).unwrap_or(i64::MAX);
    let base = if relative { now } else { 0 };
    let Some(when) = n.checked_mul(unit_ms).and_then(|ms| ms.checked_add(base)) else {
        return out.error(format!("ERR invalid expire time in '{name}' command"));
    };
    let Some(mut e) = ctx.db.find(args.get(1), ctx.now_ms, Access::Write) else {
        return out.integer(0);
    };
    // Deadlines are at most i64::MAX (they came through this check or SET's).
    let current = e.deadline().map(|d| d as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return out.integer(0);
    }
    if when <= now {
        e.remove();
    } else {
        e.set_deadline(Some(when as u64));
    }
    out.integer(1);
}

/// `ERR Unsupported option <opt>` as Redis formats it: `%s` stops at a NUL, and the message's
/// trailing `\r`/`\n` are trimmed (the reply encoder turns inner ones into spaces).
fn unsupported_option(opt: &[u8]) -> Vec<u8> {
    let opt = opt.split(|&b| b == 0).next().unwrap_or_default();
    let mut msg = b"ERR Unsupported option ".to_vec();
    msg.extend_from_slice(opt);
    while msg.last().is_some_and(|&b| b == b'\r' || b == b'\n') {
        msg.pop();
    }
    msg
}

/// `TTL key`: seconds left (rounded as Redis: `(ms + 500) / 1000`), -1 without a TTL, -2 if
/// there is no such key.
pub fn ttl(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    ttl_generic(ctx, args, out, false, false);
}

/// `PTTL key`: milliseconds left, -1 without a TTL, -2 if there is no such key.
pub fn pttl(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    ttl_generic(ctx, args, out, true, false);
}

/// `EXPIRETIME key`: the deadline in unix seconds, -1 without one, -2 if there is no such key.
pub fn expiretime(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    ttl_generic(ctx, args, out, false, true);
}

/// `PEXPIRETIME key`: the deadline in unix milliseconds, -1 without one, -2 if there is no
/// such key.
pub fn pexpiretime(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    ttl_generic(ctx, args, out, true, true);
}

/// The time left (or the deadline, `absolute`), in milliseconds or rounded seconds.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, ms: bool, absolute: bool) {
    let now = ctx.now_ms;
    let Some(e) = ctx.db.find(args.get(1), now, Access::Read) else {
        return out.integer(-2);
    };
    match e.deadline() {
        None => out.integer(-1),
        Some(d) => {
            // Deadlines are at most i64::MAX: neither form overflows.
            let left = if absolute { d } else { d.saturating_sub(now) }.min(i64::MAX as u64);
            out.integer(if ms { left } else { (left + 500) / 1000 } as i64);
        }
    }
}

/// `TOUCH key [key ...]`: how many of the keys exist; each one found counts as accessed.
pub fn touch(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let now = ctx.now_ms;
    let n = args.iter_from(1).filter(|k| ctx.db.get(k, now).is_some()).count();
    out.integer(n as i64);
}

/// `RENAME key newkey`.
pub fn rename(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match rename_generic(ctx, args, false) {
        Ok(_) => out.ok(),
        Err(e) => out.error(e),
    }
}

/// `RENAMENX key newkey`: 1 if renamed, 0 if `newkey` exists.
pub fn renamenx(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match rename_generic(ctx, args, true) {
        Ok(done) => out.integer(i64::from(done)),
        Err(e) => out.error(e),
    }
}

/// Moves the value and deadline of `args[1]` to `args[2]` (replacing it unless `nx`);
/// whether it moved. Renaming a key to itself succeeds without a change (`RENAMENX`: 0).
fn rename_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, nx: bool) -> Result<bool, &'static str> {
    let (src, dst, now) = (args.get(1), args.get(2), ctx.now_ms);
    if ctx.db.find(src, now, Access::Write).is_none() {
        return Err(NO_SUCH_KEY);
    }
    if src == dst {
        return Ok(!nx);
    }
    if nx && ctx.db.find(dst, now, Access::Write).is_some() {
        return Ok(false);
    }
    let Some(e) = ctx.db.find(src, now, Access::Write) else {
        return Err(NO_SUCH_KEY);
    };
    let ttl = e.deadline().map_or(Ttl::Clear, Ttl::At);
    let value = e.remove();
    ctx.db.set(dst, value, ttl, SetIf::Always, now);
    Ok(true)
}

/// `COPY source destination [DB index] [REPLACE]`: copies the value and deadline; 1 if
/// copied, 0 if there is no source or the destination exists (without `REPLACE`).
pub fn copy(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (mut target, mut replace) = (ctx.client.db, false);
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"db") && j + 1 < args.len() {
            let i = match parse_db_index(args.get(j + 1), None) {
                Ok(i) => i,
                Err(e) => return out.error(e),
            };
            match usize::try_from(i).ok().filter(|&i| i < ctx.others.count()) {
                Some(i) => target = i,
                None => return out.error(DB_OUT_OF_RANGE),
            }
            j += 1;
        } else {
            return out.error(SYNTAX);
        }
        j += 1;
    }
    let (src, dst, now) = (args.get(1), args.get(2), ctx.now_ms);
    if target == ctx.client.db && src == dst {
        return out.error(SAME_OBJECT);
    }
    let Some(e) = ctx.db.find(src, now, Access::Read) else {
        return out.integer(0);
    };
    let ttl = e.deadline().map_or(Ttl::Clear, Ttl::At);
    let value = e.value().clone();
    let db = ctx.db_at(target).expect("checked above");
    if let Some(existing) = db.find(dst, now, Access::Write) {
        if !replace {
            return out.integer(0);
        }
        existing.remove();
    }
    db.set(dst, value, ttl, SetIf::Always, now);
    out.integer(1);
}

/// `RENAME`'s reply when the source key does not exist.
pub const NO_SUCH_KEY: &str = "ERR no such key";

/// `RANDOMKEY`: a random live key, or null when there is none.
pub fn randomkey(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.random_key(ctx.now_ms) {
        Some(key) => out.bulk(&key),
        None => out.null(),
    }
}

/// `PERSIST key`: 1 if a TTL was removed, else 0.
pub fn persist(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.find(args.get(1), ctx.now_ms, Access::Write) {
        Some(mut e) if e.deadline().is_some() => {
            e.set_deadline(None);
            out.integer(1);
        }
        _ => out.integer(0),
    }
}

/// `KEYS pattern`: every live key matching the glob `pattern` (see [`glob_match`]).
pub fn keys(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let pattern = args.get(1);
    let all = pattern == b"*";
    let found: Vec<&[u8]> = ctx
        .db
        .iter(ctx.now_ms)
        .map(|(k, _)| k)
        .filter(|k| all || glob_match(pattern, k))
        .collect();
    out.array(found.len());
    for k in found {
        out.bulk(k);
    }
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`: `[next cursor, [keys]]`.
///
/// The cursor is a position in the keyspace's slab of records (see [`Db::scan`]): a key that
/// exists for the whole scan is returned exactly once, even if the table grows meanwhile.
/// `COUNT` (default 10) bounds the keys examined per call, before filtering.
///
/// [`Db::scan`]: crate::db::Db::scan
pub fn scan(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(cursor) = parse_cursor(args.get(1)) else {
        return out.error(INVALID_CURSOR);
    };
    let opts = match ScanOptions::parse(args, 2, true) {
        Ok(opts) => opts,
        Err(e) => return out.error(e),
    };
    let mut found: Vec<Box<[u8]>> = Vec::new();
    let next = ctx.db.scan(cursor, opts.count, ctx.now_ms, |k, v| {
        let matches = opts.matches(k)
            && opts
                .type_name
                .is_none_or(|t| t.eq_ignore_ascii_case(v.type_name().as_bytes()));
        if matches {
            found.push(k.into());
        }
    });
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(found.len());
    for k in &found {
        out.bulk(k);
    }
}

/// The options of `SCAN`, `HSCAN` and `SSCAN`: `MATCH pattern`, `COUNT n` (default 10) and,
/// for `SCAN` only, `TYPE type`.
#[derive(Debug)]
pub struct ScanOptions<'a> {
    /// Most keys to examine per call (a hint).
    pub count: usize,
    /// `MATCH`'s pattern (`None` for none, or `*`).
    pub pattern: Option<&'a [u8]>,
    /// `TYPE`'s name.
    pub type_name: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    /// Parses arguments `from..` as Redis's `scanGenericCommand` does: each option needs a
    /// value, a count must be an integer at least 1, and `TYPE` is an option of `SCAN` only
    /// (`with_type`); the error reply otherwise.
    pub fn parse(args: &Args<'a>, from: usize, with_type: bool) -> Result<ScanOptions<'a>, &'static str> {
        let mut opts = ScanOptions {
            count: 10,
            pattern: None,
            type_name: None,
        };
        let mut i = from;
        while i < args.len() {
            let opt = args.get(i);
            if i + 1 >= args.len() {
                return Err(SYNTAX);
            }
            let val = args.get(i + 1);
            if opt.eq_ignore_ascii_case(b"count") {
                match parse_i64(val) {
                    None => return Err(NOT_INTEGER),
                    Some(n) if n < 1 => return Err(SYNTAX),
                    Some(n) => opts.count = usize::try_from(n).unwrap_or(usize::MAX),
                }
            } else if opt.eq_ignore_ascii_case(b"match") {
                opts.pattern = (val != b"*").then_some(val);
            } else if with_type && opt.eq_ignore_ascii_case(b"type") {
                opts.type_name = Some(val);
            } else {
                return Err(SYNTAX);
            }
            i += 2;
        }
        Ok(opts)
    }

    /// Whether `name` matches the pattern (always, without one).
    pub fn matches(&self, name: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, name))
    }
}

/// A `SCAN` cursor as Redis's `strtoul` check reads it: decimal, an optional sign (`-n` wraps
/// as in C), no surrounding spaces, within `u64`; the empty string is 0.
pub fn parse_cursor(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return Some(0);
    }
    let (negative, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { n.wrapping_neg() } else { n })
}

/// Whether `s` matches the glob `pattern`, with Redis's `stringmatchlen` semantics
/// (case-sensitive): `*` any run, `?` one byte, `[abc]`, `[^a]`, `[a-z]` (ends in either
/// order) a class, `\x` the byte `x`; an unclosed `[` class runs to the end of the pattern.
/// As in Redis, an empty string matches only an empty pattern.
///
/// Iterative (the last `*` is the only backtracking point), so time is `O(|pattern| * |s|)`
/// and stack use constant, whatever the pattern.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    if s.is_empty() {
        return pattern.is_empty();
    }
    let (mut p, mut i) = (0, 0);
    // Where to resume after the last `*`: (pattern position after it, string position).
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if pattern.get(p) == Some(&b'*') {
            while pattern.get(p) == Some(&b'*') {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            star = Some((p, i));
            continue;
        }
        if p < pattern.len() {
            let (matched, next) = match_one(pattern, p, s[i]);
            if matched {
                p = next;
                i += 1;
                continue;
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while pattern.get(p) == Some(&b'*') {
        p += 1;
    }
    p == pattern.len()
}

/// Whether the single-byte token at `pattern[p]` (not `*`) matches `c`, and where the next
/// token starts.
fn match_one(pattern: &[u8], p: usize, c: u8) -> (bool, usize) {
    let at = |j: usize| pattern.get(j).copied().unwrap_or(0);
    match pattern[p] {
        b'?' => (true, p + 1),
        b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == c, p + 2),
        b'[' => {
            let mut j = p + 1;
            let negate = at(j) == b'^';
            if negate {
                j += 1;
            }
            let mut matched = false;
            loop {
                if j >= pattern.len() {
                    break;
                }
                let rest = pattern.len() - j;
                if pattern[j] == b'\\' && rest >= 2 {
                    j += 1;
                    matched |= pattern[j] == c;
                } else if pattern[j] == b']' {
                    j += 1;
                    break;
                } else if rest >= 3 && pattern[j + 1] == b'-' {
                    // C's `char` is signed: bytes >= 0x80 order below ASCII, as in Redis.
                    let (mut lo, mut hi) = (pattern[j] as i8, pattern[j + 2] as i8);
                    if lo > hi {
                        std::mem::swap(&mut lo, &mut hi);
                    }
                    matched |= (lo..=hi).contains(&(c as i8));
                    j += 2;
                } else {
                    matched |= pattern[j] == c;
                }
                j += 1;
            }
            (matched != negate, j)
        }
        lit => (lit == c, p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::WRONGTYPE;
    use crate::cmd::harness::*;

    #[test]
    fn glob_follows_stringmatchlen() {
        // Checked against redis-server 7.0.15 (`KEYS pattern` over a single key).
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"*", b"anything", true),
            (b"h?llo", b"hello", true),
            (b"h?llo", b"hllo", false),
            (b"h*llo", b"hllo", true),
            (b"h*llo", b"heeeello", true),
            (b"h*llo", b"hellox", false),
            (b"h[ae]llo", b"hallo", true),
            (b"h[ae]llo", b"hillo", false),
            (b"h[^e]llo", b"hallo", true),
            (b"h[^e]llo", b"hello", false),
            (b"h[a-b]llo", b"hbllo", true),
            (b"h[b-a]llo", b"hallo", true),
            (b"h[a-b]llo", b"hcllo", false),
            (b"h\\*llo", b"h*llo", true),
            (b"h\\*llo", b"hallo", false),
            (b"a\\", b"a\\", true),
            (b"[\\]]", b"]", true),
            (b"[\\-]", b"-", true),
            (b"[a-]", b"-", false),
            (b"[a-]", b"b", false),
            (b"[a-]", b"_", true),
            (b"[a-]", b"a", true),
            (b"[]", b"]", false),
            (b"a[", b"ab", false),
            (b"a[^", b"ab", true),
            (b"a[bc", b"ab", true),
            (b"a[bc", b"ad", false),
            (b"*a*b*c", b"xxaxxbxxc", true),
            (b"*a*b*c", b"xxaxxbxxcx", false),
            (b"a**", b"a", true),
            (b"*?", b"a", true),
            (b"[\x80-a]", b"Z", true),
            (b"[\x80-a]", b"b", false),
            (b"[a-\x80]", b"Z", true),
            (b"x[]]y", b"x]y", false),
            (b"x[]]y", b"x]]y", false),
            (b"[^]", b"a", true),
            (b"[^]]", b"a", false),
            (b"[^]]", b"]", false),
            (b"\\", b"\\", true),
            (b"ab\\", b"ab\\", true),
            (b"[a\\", b"\\", true),
            (b"[a\\", b"a", true),
            (b"[a-c-e]", b"d", false),
            (b"[a-c-e]", b"-", true),
            (b"**a", b"a", true),
            (b"a*?", b"a", false),
            (b"a*?", b"ab", true),
        ];
        for &(p, s, m) in cases {
            assert_eq!(
                glob_match(p, s),
                m,
                "{:?} ~ {:?}",
                p.escape_ascii(),
                s.escape_ascii()
            );
        }
        // Only the empty pattern matches the empty key (`KEYS *` takes a shortcut).
        assert!(glob_match(b"", b""));
        assert!(!glob_match(b"*", b""));
        assert!(!glob_match(b"", b"a"));
        // A pathological pattern is quick (no exponential backtracking, no deep recursion).
        let p = "*a".repeat(10_000) + "b";
        assert!(!glob_match(p.as_bytes(), "a".repeat(20_000).as_bytes()));
    }

    #[test]
    fn cursor_parsing_follows_strtoul() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b"18446744073709551616"[..],
            b" 1",
            b"1 ",
            b"+",
            b"-",
            b"x",
            b"1x",
        ] {
            assert_eq!(parse_cursor(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn del_exists_type() {
        let mut h = Harness::new();
        h.cmd("MSET a 1 b 2");
        h.cmd("RPUSH l x");
        assert_eq!(h.cmd("EXISTS a a b nokey l"), int(4));
        assert_eq!(h.cmd("TYPE a"), "+string\r\n");
        assert_eq!(h.cmd("TYPE l"), "+list\r\n");
        assert_eq!(h.cmd("TYPE nokey"), "+none\r\n");
        assert_eq!(h.cmd("DEL a a nokey l"), int(2));
        assert_eq!(h.cmd("UNLINK b"), int(1));
        assert_eq!(h.cmd("EXISTS a b l"), int(0));
        assert!(h.db.is_empty());
        assert_eq!(h.db.used_memory(), 0);
        let s = h.db.stats();
        assert_eq!(
            (s.keyspace_hits, s.keyspace_misses),
            (6, 5),
            "as redis-server 7.0.15"
        );
    }

    #[test]
    fn expire_options_and_errors() {
        let mut h = Harness::new();
        h.cmd("SET s v");
        assert_eq!(
            h.cmd("EXPIRE s 10 nx xx"),
            err("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(
            h.cmd("EXPIRE s 10 GT lt"),
            err("ERR GT and LT options at the same time are not compatible")
        );
        assert_eq!(h.cmd("EXPIRE s 10 foo"), err("ERR Unsupported option foo"));
        assert_eq!(h.cmd("EXPIRE s abc foo"), err("ERR Unsupported option foo"));
        assert_eq!(
            h.run(&[b"EXPIRE", b"s", b"1", b"j\r\n"]),
            err("ERR Unsupported option j").as_bytes(),
            "trailing CR LF trimmed, as redis-server 7.0.15"
        );
        assert_eq!(
            h.run(&[b"EXPIRE", b"s", b"1", b"a\0b"]),
            err("ERR Unsupported option a").as_bytes(),
            "%s stops at NUL"
        );
        assert_eq!(
            h.run(&[b"EXPIRE", b"s", b"1", b"a\rb"]),
            err("ERR Unsupported option a b").as_bytes()
        );
        assert_eq!(h.cmd("EXPIRE s abc"), err(NOT_INTEGER));
        assert_eq!(
            h.cmd("EXPIRE s 9223372036854776"),
            err("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            h.cmd("EXPIRE s -9223372036854776"),
            err("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            h.cmd("PEXPIRE s 9223372036854775807"),
            err("ERR invalid expire time in 'pexpire' command")
        );
        assert_eq!(h.cmd("EXPIRE nokey 10"), int(0));
        assert_eq!(h.cmd("EXPIRE s 10 xx"), int(0), "XX: no TTL yet");
        assert_eq!(h.cmd("EXPIRE s 10 gt"), int(0), "GT: no TTL counts as infinite");
        assert_eq!(h.cmd("EXPIRE s 10 lt"), int(1), "LT: no TTL counts as infinite");
        assert_eq!(h.cmd("TTL s"), int(10));
        assert_eq!(h.cmd("EXPIRE s 20 nx"), int(0));
        assert_eq!(h.cmd("EXPIRE s 20 gt"), int(1));
        assert_eq!(h.cmd("EXPIRE s 5 gt"), int(0));
        assert_eq!(h.cmd("EXPIRE s 20 lt"), int(0));
        assert_eq!(h.cmd("PEXPIRE s 5500 lt xx"), int(1));
        assert_eq!(h.cmd("PTTL s"), int(5500));
        assert_eq!(h.cmd("TTL s"), int(6));
        assert_eq!(h.cmd("PERSIST s"), int(1));
        assert_eq!(h.cmd("PERSIST s"), int(0));
        assert_eq!(h.cmd("PERSIST nokey"), int(0));
        assert_eq!(h.cmd("TTL s"), int(-1));
        assert_eq!(h.cmd("PTTL nokey"), int(-2));
        assert_eq!(h.db.expires(), 0);
    }

    #[test]
    fn expire_in_the_past_deletes() {
        let mut h = Harness::new();
        h.cmd("SET s v");
        assert_eq!(h.cmd("EXPIRE s -1"), int(1));
        assert_eq!(h.cmd("EXISTS s"), int(0));
        h.cmd("SET s v");
        assert_eq!(h.cmd("PEXPIRE s 0"), int(1));
        assert!(h.db.is_empty());
        assert_eq!(h.db.stats().expired_keys, 0, "deleted, not expired");
    }

    #[test]
    fn ttl_rounding_and_lazy_expiry() {
        let mut h = Harness::new();
        h.cmd("SET k v");
        h.cmd("PEXPIRE k 1499");
        assert_eq!(h.cmd("TTL k"), int(1));
        h.cmd("PEXPIRE k 1500");
        assert_eq!(h.cmd("TTL k"), int(2));
        h.now_ms += 1500;
        assert_eq!(h.cmd("PTTL k"), int(0), "alive at its deadline");
        assert_eq!(h.cmd("TTL k"), int(0));
        h.now_ms += 1;
        assert_eq!(h.cmd("TTL k"), int(-2));
        assert_eq!(h.db.stats().expired_keys, 1);
        // Every command sees an expired key as missing.
        h.cmd("SET k v PX 10");
        h.cmd("RPUSH l a");
        h.cmd("PEXPIRE l 10");
        h.now_ms += 11;
        assert_eq!(h.cmd("EXPIRE k 100"), int(0));
        assert_eq!(h.cmd("PERSIST l"), int(0));
        assert!(h.db.is_empty());
    }

    #[test]
    fn keys_and_expired_keys() {
        let mut h = Harness::new();
        h.cmd("MSET user:1 a user:2 b other c");
        h.cmd("SET gone v PX 5");
        h.now_ms += 10;
        let mut all = h.cmd("KEYS *");
        assert!(all.starts_with("*3\r\n"), "{all}");
        all.clear();
        assert_eq!(h.cmd("KEYS user:?").matches("user:").count(), 2);
        assert_eq!(h.cmd("KEYS oth[a-f]r"), bulks(&["other"]));
        assert_eq!(h.cmd("KEYS nomatch*"), bulks(&[]));
        assert_eq!(h.cmd("KEYS gone"), bulks(&[]));
    }

    /// Runs a whole SCAN with the extra arguments `opts`; the keys, sorted.
    fn scan_all(h: &mut Harness, opts: &str) -> Vec<String> {
        let mut cursor = "0".to_string();
        let mut keys = Vec::new();
        loop {
            let reply = h.cmd(&format!("SCAN {cursor}{opts}"));
            let lines: Vec<&str> = reply.split("\r\n").collect();
            assert_eq!(lines[0], "*2");
            cursor = lines[2].to_string();
            let n: usize = lines[3][1..].parse().unwrap();
            for j in 0..n {
                keys.push(lines[5 + 2 * j].to_string());
            }
            if cursor == "0" {
                break;
            }
        }
        keys.sort();
        keys
    }

    #[test]
    fn scan_options() {
        let mut h = Harness::new();
        for k in 0..50 {
            h.cmd(&format!("SET k{k} v"));
        }
        h.cmd("RPUSH list a");
        h.cmd("SET gone v PX 5");
        h.now_ms += 10;
        let all = scan_all(&mut h, "");
        assert_eq!(all.len(), 51);
        assert!(!all.contains(&"gone".to_string()));
        assert_eq!(scan_all(&mut h, " COUNT 3").len(), 51);
        assert_eq!(scan_all(&mut h, " MATCH k1* COUNT 1000"), {
            let mut v: Vec<String> = ["k1".into()]
                .into_iter()
                .chain((10..20).map(|k| format!("k{k}")))
                .collect();
            v.sort();
            v
        });
        assert_eq!(scan_all(&mut h, " TYPE LIST"), vec!["list".to_string()]);
        assert_eq!(scan_all(&mut h, " type string MATCH *").len(), 50);
        assert_eq!(scan_all(&mut h, " TYPE hash"), Vec::<String>::new());
        assert_eq!(h.cmd("SCAN x"), err(INVALID_CURSOR));
        assert_eq!(h.cmd("SCAN 0 COUNT 0"), err(SYNTAX));
        assert_eq!(h.cmd("SCAN 0 COUNT abc"), err(NOT_INTEGER));
        assert_eq!(h.cmd("SCAN 0 TYPE"), err(SYNTAX));
        assert_eq!(h.cmd("SCAN 0 MATCH"), err(SYNTAX));
        assert_eq!(h.cmd("SCAN 0 FOO bar"), err(SYNTAX));
        assert_eq!(h.cmd("SCAN 18446744073709551615"), "*2\r\n$1\r\n0\r\n*0\r\n");
        assert_eq!(h.db.len(), 51, "SCAN deleted the expired key");
    }

    #[test]
    fn scan_survives_growth_and_deletes_between_calls() {
        let mut h = Harness::new();
        for k in 0..200 {
            h.cmd(&format!("SET stable{k} v"));
        }
        let mut cursor = "0".to_string();
        let mut seen = Vec::new();
        let mut round = 0;
        loop {
            let reply = h.cmd(&format!("SCAN {cursor} COUNT 5"));
            let lines: Vec<&str> = reply.split("\r\n").collect();
            cursor = lines[2].to_string();
            let n: usize = lines[3][1..].parse().unwrap();
            seen.extend((0..n).map(|j| lines[5 + 2 * j].to_string()));
            // Early on a burst that grows the table, later deleted; all along, keys that live
            // for one round. The keyspace stays bounded, so the scan ends.
            if round == 1 {
                for j in 0..1000 {
                    h.cmd(&format!("SET burst{j} v"));
                }
            }
            if round == 20 {
                for j in 0..1000 {
                    h.cmd(&format!("DEL burst{j}"));
                }
            }
            for j in 0..10 {
                h.cmd(&format!("SET new{round}_{j} v"));
                if round > 0 {
                    h.cmd(&format!("DEL new{}_{j}", round - 1));
                }
            }
            round += 1;
            assert!(round < 100_000, "the scan must end");
            if cursor == "0" {
                break;
            }
        }
        for k in 0..200 {
            let key = format!("stable{k}");
            assert_eq!(seen.iter().filter(|s| **s == key).count(), 1, "{key}");
        }
    }

    #[test]
    fn hits_and_misses_count_reads_only_as_redis() {
        let mut h = Harness::new();
        for c in [
            "SET k v",
            "TTL k",
            "PTTL nokey",
            "STRLEN k",
            "GETDEL k",
            "LRANGE nokey 0 1",
            "LINDEX nokey 0",
            "LLEN nokey",
            "INCR n",
            "APPEND k x",
            "SET k v GET",
            "EXPIRE k 10",
            "PERSIST k",
            "LPOP k",
            "MGET a b k",
        ] {
            h.cmd(c);
        }
        let s = h.db.stats();
        // The same sequence on redis-server 7.0.15 after CONFIG RESETSTAT.
        assert_eq!((s.keyspace_hits, s.keyspace_misses), (5, 6));
    }

    #[test]
    fn wrong_type_is_not_an_error_for_generic_commands() {
        let mut h = Harness::new();
        h.cmd("RPUSH l a");
        assert_eq!(h.cmd("EXPIRE l 10"), int(1));
        assert_eq!(h.cmd("TTL l"), int(10));
        assert_ne!(h.cmd("DEL l"), err(WRONGTYPE));
    }
}
