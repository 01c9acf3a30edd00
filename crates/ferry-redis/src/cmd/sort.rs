//! `SORT` and `SORT_RO`: the elements of a list, set or sorted set, sorted by their numeric
//! value, as strings (`ALPHA`), or by the values of other keys (`BY weight_*`,
//! `BY hash_*->field`), with `LIMIT`, `GET` patterns, `ASC`/`DESC`, and `STORE` into a list.
//!
//! As Redis 7.0's `sortCommandGeneric`: numeric ties are broken by comparing the elements'
//! bytes, a `BY` pattern without `*` skips sorting (lists and sorted sets keep their order,
//! reversed by `DESC`; a set is sorted as strings when stored), and `STORE` of nothing deletes
//! the destination. `ALPHA` compares strings as Redis's `strcoll` does in the C locales (byte
//! order up to the first NUL) for a reply, and all their bytes for `STORE`; the sort is stable,
//! as glibc's `qsort` (a merge sort) is, so equal strings keep their order.
//!
//! As in Redis, a sorted set that is sorted is from then on held as Redis's skiplist would
//! be (see [`ZSet::convert_to_skiplist`](crate::zset::ZSet::convert_to_skiplist)).
//!
//! What differs: a set or sorted set is read in Ferry's table order, as Redis reads it in its
//! own, so the unsorted output of a set (`BY nosort` without `STORE`) and the order of
//! elements whose `ALPHA` weights are equal (a `BY` pattern) may differ; under another locale
//! Redis's `ALPHA` order follows it.

use std::cmp::Ordering;

use ferry_buf::SharedBuf;

use super::strings::parse_i64;
use super::{Args, Ctx, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::db::{Db, Kind, SetIf, Ttl, Value};
use crate::resp::ReplyBuf;

/// The reply when an element or weight is not a number (without `ALPHA`).
pub const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
/// [STORE destination]`.
pub fn sort(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    sort_generic(ctx, args, out, false);
}

/// `SORT_RO`: `SORT` without `STORE`.
pub fn sort_ro(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    sort_generic(ctx, args, out, true);
}

/// The options, as parsed.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    gets: Vec<&'a [u8]>,
}

fn parse<'a>(args: &Args<'a>, readonly: bool) -> Result<Options<'a>, &'static str> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: None,
        store: None,
        by: None,
        gets: Vec::new(),
    };
    let mut j = 2;
    while j < args.len() {
        let (opt, left) = (args.get(j), args.len() - j - 1);
        if opt.eq_ignore_ascii_case(b"asc") {
            o.desc = false;
        } else if opt.eq_ignore_ascii_case(b"desc") {
            o.desc = true;
        } else if opt.eq_ignore_ascii_case(b"alpha") {
            o.alpha = true;
        } else if opt.eq_ignore_ascii_case(b"limit") && left >= 2 {
            let (Some(start), Some(count)) = (parse_i64(args.get(j + 1)), parse_i64(args.get(j + 2))) else {
                return Err(NOT_INTEGER);
            };
            o.limit = Some((start, count));
            j += 2;
        } else if !readonly && opt.eq_ignore_ascii_case(b"store") && left >= 1 {
            o.store = Some(args.get(j + 1));
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"by") && left >= 1 {
            o.by = Some(args.get(j + 1));
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"get") && left >= 1 {
            o.gets.push(args.get(j + 1));
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// The value `pattern` names for `element` (Redis's `lookupKeyByPattern`): `#` is the element
/// itself; otherwise the first `*` is replaced by the element, and the key read is a string,
/// or with `->field` after the `*` a hash's field. `None` when there is no `*`, no such key or
/// field, or another type.
fn lookup(db: &mut Db, pattern: &[u8], element: &SharedBuf, now_ms: u64) -> Option<SharedBuf> {
    if pattern == b"#" {
        return Some(element.clone());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&i| i + 2 < pattern.len());
    let key_end = arrow.unwrap_or(pattern.len());
    let key = [&pattern[..star], &element[..], &pattern[star + 1..key_end]].concat();
    match (db.get(&key, now_ms)?, arrow) {
        (Value::Str(s), None) => Some(s.clone()),
        (Value::Hash(h), Some(a)) => h.get(&pattern[a + 2..]).map(|(_, v)| v.clone()),
        _ => None,
    }
}

/// A number as C's `strtod` reads a whole string: leading white space allowed, NaN and
/// out-of-range values refused.
fn parse_weight(bytes: &[u8]) -> Option<f64> {
    if bytes.is_empty() {
        return Some(0.0); // strtod reads nothing, and stops at the end
    }
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let text = std::str::from_utf8(&bytes[start..]).ok()?;
    let v = super::hashes::parse_float(text.as_bytes())?;
    let named_infinity = text
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase()
        .starts_with("inf");
    (v.is_finite() || named_infinity).then_some(v)
}

/// One element to sort and what it sorts by.
struct Item {
    element: SharedBuf,
    score: f64,
    /// The `BY` value for `ALPHA` (`None`: the key is missing, which sorts first).
    by: Option<SharedBuf>,
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, readonly: bool) {
    let o = match parse(args, readonly) {
        Ok(o) => o,
        Err(e) => return out.error(e),
    };
    let now = ctx.now_ms;
    let mut dontsort = o.by.is_some_and(|p| !p.contains(&b'*'));
    let (mut alpha, mut by) = (o.alpha, o.by);
    let (elements, native_order): (Vec<SharedBuf>, bool) = match ctx.db.get(args.get(1), now) {
        None => (Vec::new(), true),
        Some(Value::List(items)) => (items.iter().cloned().collect(), true),
        Some(Value::Set(set)) => (set.iter().map(|(m, ())| m.clone()).collect(), false),
        Some(Value::ZSet(z)) => (z.iter().map(|(m, _)| m.clone()).collect(), true),
        Some(_) => return out.error(WRONGTYPE),
    };
    if let Ok(Some(mut z)) = ctx.db.collection(args.get(1), now, Kind::ZSet) {
        // Redis converts a sorted set it sorts to a skiplist (which keeps a later -0).
        z.zset().convert_to_skiplist();
    }
    if dontsort && !native_order && o.store.is_some() {
        // A stored unsorted set is sorted as strings, so that it is the same everywhere.
        (dontsort, alpha, by) = (false, true, None);
    }
    let len = elements.len() as i64;
    let (mut start, mut end) = match o.limit {
        None => (0, len - 1),
        Some((s, c)) => {
            let start = s.max(0);
            (
                start,
                if c < 0 {
                    len - 1
                } else {
                    start.saturating_add(c) - 1
                },
            )
        }
    };
    if start >= len {
        (start, end) = (len - 1, len - 2);
    }
    end = end.min(len - 1);
    let mut items: Vec<Item> = if dontsort && native_order {
        // Native order (reversed by DESC), just the LIMIT range.
        let range = if end >= start {
            start as usize..end as usize + 1
        } else {
            0..0
        };
        let picked: Vec<SharedBuf> = if o.desc {
            elements.into_iter().rev().collect::<Vec<_>>()[range].to_vec()
        } else {
            elements[range].to_vec()
        };
        end -= start;
        start = 0;
        picked
            .into_iter()
            .map(|element| Item {
                element,
                score: 0.0,
                by: None,
            })
            .collect()
    } else {
        elements
            .into_iter()
            .map(|element| Item {
                element,
                score: 0.0,
                by: None,
            })
            .collect()
    };
    if !dontsort {
        for item in &mut items {
            let value = match by {
                Some(pattern) => match lookup(ctx.db, pattern, &item.element, now) {
                    Some(v) => v,
                    None => continue,
                },
                None => item.element.clone(),
            };
            if alpha {
                if by.is_some() {
                    item.by = Some(value);
                }
            } else {
                match parse_weight(&value) {
                    Some(score) => item.score = score,
                    None => return out.error(NOT_DOUBLE),
                }
            }
        }
        let by_pattern = by.is_some();
        // Strings as Redis compares them: `strcoll` (to the first NUL, byte order in the C
        // locales) for a reply, all the bytes for STORE.
        let stored = o.store.is_some();
        let strings = |x: &[u8], y: &[u8]| {
            if stored {
                x.cmp(y)
            } else {
                super::c_str(x).cmp(super::c_str(y))
            }
        };
        // Stable, as glibc's qsort (a merge sort) is: equal strings keep their order.
        items.sort_by(|a, b| {
            let cmp = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.element[..].cmp(&b.element[..]))
            } else if by_pattern {
                match (&a.by, &b.by) {
                    (Some(x), Some(y)) => strings(x, y),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                }
            } else {
                strings(&a.element, &b.element)
            };
            if o.desc { cmp.reverse() } else { cmp }
        });
    }
    let chosen: &[Item] = if end >= start {
        &items[start as usize..=end as usize]
    } else {
        &[]
    };
    let per_item = o.gets.len().max(1);
    match o.store {
        None => {
            out.array(chosen.len() * per_item);
            for item in chosen {
                if o.gets.is_empty() {
                    out.bulk_buf(&item.element);
                }
                for pattern in &o.gets {
                    match lookup(ctx.db, pattern, &item.element, now) {
                        Some(v) => out.bulk_buf(&v),
                        None => out.null(),
                    }
                }
            }
        }
        Some(dst) => {
            let mut list = std::collections::VecDeque::with_capacity(chosen.len() * per_item);
            for item in chosen {
                if o.gets.is_empty() {
                    list.push_back(item.element.clone());
                }
                for pattern in &o.gets {
                    let v = lookup(ctx.db, pattern, &item.element, now);
                    list.push_back(v.unwrap_or_else(|| item.element.slice(0..0)));
                }
            }
            let n = list.len();
            if n > 0 {
                ctx.db.set(dst, Value::List(list), Ttl::Clear, SetIf::Always, now);
            } else {
                ctx.db.remove(dst, now);
            }
            out.integer(n as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cmd::harness::*;

    #[test]
    fn numeric_alpha_desc_and_limit() {
        let mut h = Harness::new();
        h.cmd("RPUSH l 3 1 2 10");
        assert_eq!(h.cmd("SORT l"), bulks(&["1", "2", "3", "10"]));
        assert_eq!(h.cmd("SORT l DESC"), bulks(&["10", "3", "2", "1"]));
        assert_eq!(h.cmd("SORT l ALPHA"), bulks(&["1", "10", "2", "3"]));
        assert_eq!(h.cmd("SORT l LIMIT 1 2"), bulks(&["2", "3"]));
        assert_eq!(h.cmd("SORT l LIMIT 3 10"), bulks(&["10"]));
        assert_eq!(h.cmd("SORT l LIMIT 9 1"), "*0\r\n");
        assert_eq!(h.cmd("SORT l LIMIT -5 -1"), bulks(&["1", "2", "3", "10"]));
        assert_eq!(h.cmd("SORT l LIMIT x 1"), err(crate::cmd::NOT_INTEGER));
        assert_eq!(h.cmd("SORT l FOO"), err(crate::cmd::SYNTAX));
        assert_eq!(h.cmd("SORT nokey"), "*0\r\n");
        h.cmd("RPUSH bad 1 x");
        assert_eq!(h.cmd("SORT bad"), err(super::NOT_DOUBLE));
        h.cmd("SET s v");
        assert_eq!(h.cmd("SORT s"), err(crate::cmd::WRONGTYPE));
        h.cmd("RPUSH ties 1.0 1 01");
        assert_eq!(h.cmd("SORT ties"), bulks(&["01", "1", "1.0"]), "ties by bytes");
    }

    #[test]
    fn by_and_get_patterns() {
        let mut h = Harness::new();
        h.cmd("RPUSH l a b c");
        h.cmd("MSET w_a 3 w_b 1 w_c 2 v_a A v_c C");
        h.cmd("HSET h_a f 30");
        h.cmd("HSET h_b f 10");
        h.cmd("HSET h_c f 20");
        assert_eq!(h.cmd("SORT l BY w_*"), bulks(&["b", "c", "a"]));
        assert_eq!(h.cmd("SORT l BY h_*->f DESC"), bulks(&["a", "c", "b"]));
        assert_eq!(
            h.cmd("SORT l BY w_* GET # GET v_*"),
            "*6\r\n$1\r\nb\r\n$-1\r\n$1\r\nc\r\n$1\r\nC\r\n$1\r\na\r\n$1\r\nA\r\n"
        );
        assert_eq!(
            h.cmd("SORT l BY nosort DESC"),
            bulks(&["c", "b", "a"]),
            "no '*': native order"
        );
        assert_eq!(h.cmd("SORT l BY nosort LIMIT 1 1"), bulks(&["b"]));
        assert_eq!(h.cmd("SORT l BY missing_* ALPHA"), bulks(&["a", "b", "c"]));
        assert_eq!(h.cmd("SORT l GET h_*->f"), err(super::NOT_DOUBLE));
        assert_eq!(h.cmd("SORT l ALPHA GET h_*->f"), bulks(&["30", "10", "20"]));
    }

    #[test]
    fn store_writes_a_list_or_deletes() {
        let mut h = Harness::new();
        h.cmd("SADD s 3 1 2");
        assert_eq!(h.cmd("SORT s STORE dst"), int(3));
        assert_eq!(h.cmd("LRANGE dst 0 -1"), bulks(&["1", "2", "3"]));
        assert_eq!(
            h.cmd("SORT s BY nosort STORE dst"),
            int(3),
            "a stored set is sorted as strings"
        );
        assert_eq!(h.cmd("SORT s GET nokey_* STORE dst"), int(3));
        assert_eq!(h.cmd("LRANGE dst 0 -1"), bulks(&["", "", ""]));
        assert_eq!(h.cmd("SORT empty STORE dst"), int(0));
        assert_eq!(h.cmd("EXISTS dst"), int(0));
        assert_eq!(h.cmd("SORT_RO s STORE dst"), err(crate::cmd::SYNTAX));
        h.cmd("ZADD z 2 a 1 b");
        assert_eq!(h.cmd("SORT_RO z BY nosort"), bulks(&["b", "a"]));
    }
}
