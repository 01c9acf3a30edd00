//! The geo commands, as Redis 7.0's `geo.c` answers them: a geo set is a sorted set whose
//! scores are 52-bit geohashes ([`crate::geohash`]), so `GEOADD` is `ZADD` with computed scores
//! (and `ZRANGE ... WITHSCORES`, `ZREM` and RDB files see the same set as Redis's).
//!
//! `GEOSEARCH`, `GEOSEARCHSTORE` and the `GEORADIUS` family scan the nine geohash cells around
//! the centre in Redis's order ([`geohash::search_boxes`]) and keep the members inside the
//! circle or box, so an unsorted reply, and `ANY`'s early stop, come in Redis's order.

use super::hashes::{NOT_FLOAT, format_float_human, parse_float};
use super::strings::parse_i64;
use super::{Args, Ctx, NOT_INTEGER, SYNTAX, WRONGTYPE, zsets};
use crate::db::{SetIf, Ttl, Value};
use crate::geohash::{self, Shape};
use crate::resp::{Proto, ReplyBuf};
use crate::zset::ZSet;

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`: `ZADD` with each point's score.
pub fn geoadd(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut at = 2;
    let (mut nx, mut xx) = (false, false);
    while at < args.len() {
        match args.get(at).to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"ch" => {}
            _ => break,
        }
        at += 1;
    }
    if (args.len() - at) % 3 != 0 || (nx && xx) {
        return out.error(SYNTAX);
    }
    // The ZADD this stands for: its name, key and options, then score and member for each point.
    let mut words: Vec<Vec<u8>> = vec![b"zadd".to_vec()];
    words.extend(args.iter_from(1).take(at - 1).map(<[u8]>::to_vec));
    for i in (at..args.len()).step_by(3) {
        let (long, lat) = match point(args, i) {
            Ok(p) => p,
            Err(e) => return out.error(e),
        };
        let score = geohash::score(long, lat).expect("a valid point encodes");
        words.push((score as u64).to_string().into_bytes());
        words.push(args.get(i + 2).to_vec());
    }
    let mut bytes = Vec::new();
    let ranges: Vec<_> = words
        .iter()
        .map(|w| {
            let start = bytes.len();
            bytes.extend_from_slice(w);
            start..bytes.len()
        })
        .collect();
    zsets::zadd(ctx, &Args::new(&bytes, &ranges, None), out);
}

/// Arguments `i` and `i + 1` as a longitude and a latitude `GEOADD` accepts, or Redis's error.
fn point(args: &Args<'_>, i: usize) -> Result<(f64, f64), Vec<u8>> {
    let (Some(long), Some(lat)) = (parse_float(args.get(i)), parse_float(args.get(i + 1))) else {
        return Err(NOT_FLOAT.into());
    };
    if !geohash::valid(long, lat) {
        return Err(format!("ERR invalid longitude,latitude pair {long:.6},{lat:.6}").into_bytes());
    }
    Ok((long, lat))
}

/// The geo set at `key` (`Ok(None)`: no such key), or `WRONGTYPE`.
fn geo_set<'d>(ctx: &'d mut Ctx<'_>, key: &[u8]) -> Result<Option<&'d ZSet>, &'static str> {
    match ctx.db.get(key, ctx.now_ms) {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(z)),
        Some(_) => Err(WRONGTYPE),
    }
}

/// A coordinate as Redis writes one (`addReplyHumanLongDouble`): 17 decimals without trailing
/// zeros; a bulk string in RESP2, a double in RESP3.
fn coordinate(out: &mut ReplyBuf, v: f64) {
    let text = format_float_human(v);
    match out.proto() {
        Proto::Resp2 => out.bulk(text.as_bytes()),
        Proto::Resp3 => out.raw(format!(",{text}\r\n").as_bytes()),
    }
}

/// A distance as Redis writes one: 4 decimals, rounded half to even (`fixedpoint_d2string`).
fn distance_text(d: f64) -> String {
    let v = (d * 10000.0).round_ties_even() as i64;
    let sign = if v < 0 { "-" } else { "" };
    let v = v.unsigned_abs();
    format!("{sign}{}.{:04}", v / 10000, v % 10000)
}

/// `GEOPOS key member [...]`: each member's position, or a null array.
pub fn geopos(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let z = match geo_set(ctx, args.get(1)) {
        Ok(z) => z,
        Err(e) => return out.error(e),
    };
    out.array(args.len() - 2);
    for m in args.iter_from(2) {
        match z.and_then(|z| z.score(m)) {
            None => out.null_array(),
            Some(s) => {
                let (long, lat) = geohash::position(s);
                out.array(2);
                coordinate(out, long);
                coordinate(out, lat);
            }
        }
    }
}

/// `GEOHASH key member [...]`: each member's 11-character geohash, or null.
pub fn geohash_cmd(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let z = match geo_set(ctx, args.get(1)) {
        Ok(z) => z,
        Err(e) => return out.error(e),
    };
    out.array(args.len() - 2);
    for m in args.iter_from(2) {
        match z.and_then(|z| z.score(m)) {
            None => out.null(),
            Some(s) => out.bulk(&geohash::geohash_string(s)),
        }
    }
}

/// Metres per `unit` (`m`, `km`, `ft`, `mi`).
fn unit(u: &[u8]) -> Result<f64, &'static str> {
    match u.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err("ERR unsupported unit provided. please use M, KM, FT, MI"),
    }
}

/// `GEODIST key member1 member2 [unit]`: the distance, or null if either is missing.
pub fn geodist(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let to_metres = match args.len() {
        4 => 1.0,
        5 => match unit(args.get(4)) {
            Ok(u) => u,
            Err(e) => return out.error(e),
        },
        _ => return out.error(SYNTAX),
    };
    let z = match geo_set(ctx, args.get(1)) {
        Ok(Some(z)) => z,
        Ok(None) => return out.null(),
        Err(e) => return out.error(e),
    };
    let (Some(a), Some(b)) = (z.score(args.get(2)), z.score(args.get(3))) else {
        return out.null();
    };
    let ((x1, y1), (x2, y2)) = (geohash::position(a), geohash::position(b));
    out.bulk(distance_text(geohash::distance(x1, y1, x2, y2) / to_metres).as_bytes());
}

/// Which command of the search family runs (Redis's `georadiusGeneric` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `GEORADIUS key long lat radius unit ...` (`ro`: the `_RO` form, without `STORE`).
    Radius { ro: bool },
    /// `GEORADIUSBYMEMBER key member radius unit ...`.
    ByMember { ro: bool },
    /// `GEOSEARCH key ...`.
    Search,
    /// `GEOSEARCHSTORE dst key ...`.
    SearchStore,
}

/// A parsed search.
#[derive(Debug, Default)]
struct Search {
    /// The centre, once known.
    centre: Option<(f64, f64)>,
    /// The shape in the request's unit, and metres per unit.
    shape: Option<(Shape, f64)>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    /// `Some(true)`: ascending distance, `Some(false)`: descending.
    sort: Option<bool>,
    any: bool,
    count: usize,
    /// Where to store, and whether the distances are the scores (`STOREDIST`).
    store: Option<(Vec<u8>, bool)>,
}

/// `(radius, unit)` at `args[i..i + 2]` as a shape and metres per unit.
fn radius(args: &Args<'_>, i: usize) -> Result<(Shape, f64), Vec<u8>> {
    let r = parse_float(args.get(i)).ok_or(b"ERR need numeric radius".to_vec())?;
    if r < 0.0 {
        return Err(b"ERR radius cannot be negative".to_vec());
    }
    Ok((Shape::Radius(r), unit(args.get(i + 1))?))
}

/// Parses the request, in Redis's order of checks (the centre member is looked up while
/// parsing, as Redis does).
fn parse_search(z: Option<&ZSet>, form: Form, args: &Args<'_>) -> Result<Search, Vec<u8>> {
    let mut s = Search::default();
    let member_centre = |m: &[u8]| -> Result<Option<(f64, f64)>, Vec<u8>> {
        match z {
            None => Ok(None),
            Some(z) => z
                .score(m)
                .map(|sc| Some(geohash::position(sc)))
                .ok_or(b"ERR could not decode requested zset member".to_vec()),
        }
    };
    let base = match form {
        Form::Radius { .. } => {
            s.centre = Some(point(args, 2)?);
            s.shape = Some(radius(args, 4)?);
            6
        }
        Form::ByMember { .. } => {
            if z.is_some() {
                s.centre = member_centre(args.get(2))?;
                s.shape = Some(radius(args, 3)?);
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => {
            s.store = Some((args.get(1).to_vec(), false));
            3
        }
    };
    let search = matches!(form, Form::Search | Form::SearchStore);
    let can_store = matches!(form, Form::Radius { ro: false } | Form::ByMember { ro: false });
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) = (false, false, false, false);
    let n = args.len();
    let mut i = base;
    while i < n {
        let left = n - i - 1;
        match args.get(i).to_ascii_lowercase().as_slice() {
            b"withdist" => s.with_dist = true,
            b"withhash" => s.with_hash = true,
            b"withcoord" => s.with_coord = true,
            b"any" => s.any = true,
            b"asc" => s.sort = Some(true),
            b"desc" => s.sort = Some(false),
            b"count" if left >= 1 => {
                let c = parse_i64(args.get(i + 1)).ok_or(NOT_INTEGER.as_bytes().to_vec())?;
                if c <= 0 {
                    return Err(b"ERR COUNT must be > 0".to_vec());
                }
                s.count = usize::try_from(c).unwrap_or(usize::MAX);
                i += 1;
            }
            w @ (b"store" | b"storedist") if left >= 1 && can_store => {
                s.store = Some((args.get(i + 1).to_vec(), w == b"storedist"));
                i += 1;
            }
            b"storedist" if form == Form::SearchStore => {
                if let Some(st) = &mut s.store {
                    st.1 = true;
                }
            }
            b"frommember" if left >= 1 && search && !from_lonlat => {
                s.centre = member_centre(args.get(i + 1))?;
                from_member = true;
                i += 1;
            }
            b"fromlonlat" if left >= 2 && search && !from_member => {
                s.centre = Some(point(args, i + 1)?);
                from_lonlat = true;
                i += 2;
            }
            b"byradius" if left >= 2 && search && !by_box => {
                s.shape = Some(radius(args, i + 1)?);
                by_radius = true;
                i += 2;
            }
            b"bybox" if left >= 3 && search && !by_radius => {
                let w = parse_float(args.get(i + 1)).ok_or(b"ERR need numeric width".to_vec())?;
                let h = parse_float(args.get(i + 2)).ok_or(b"ERR need numeric height".to_vec())?;
                if w < 0.0 || h < 0.0 {
                    return Err(b"ERR height or width cannot be negative".to_vec());
                }
                s.shape = Some((Shape::Box(w, h), unit(args.get(i + 3))?));
                by_box = true;
                i += 3;
            }
            _ => return Err(SYNTAX.as_bytes().to_vec()),
        }
        i += 1;
    }
    let name = String::from_utf8_lossy(args.get(0)).into_owned();
    if s.store.is_some() && (s.with_dist || s.with_hash || s.with_coord) {
        let what = if form == Form::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(
            format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
                .into_bytes(),
        );
    }
    if search && !(from_member || from_lonlat) {
        return Err(
            format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}").into_bytes(),
        );
    }
    if search && !(by_radius || by_box) {
        return Err(
            format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}").into_bytes(),
        );
    }
    if s.any && s.count == 0 {
        return Err(b"ERR the ANY argument requires COUNT argument".to_vec());
    }
    Ok(s)
}

/// One member found: its name, distance (metres), score and position.
struct Found {
    member: ferry_buf::SharedBuf,
    dist: f64,
    score: f64,
    at: (f64, f64),
}

/// The members of `z` in the shape around `centre`, in Redis's scan order; at most `limit`
/// (0: all) when `ANY` stops the scan early.
fn scan(z: &ZSet, centre: (f64, f64), shape: Shape, limit: usize) -> Vec<Found> {
    let mut found = Vec::new();
    for (min, max) in geohash::search_boxes(shape, centre.0, centre.1)
        .into_iter()
        .flatten()
    {
        if limit != 0 && found.len() >= limit {
            break;
        }
        for (m, score) in z.score_range(min, max) {
            let at = geohash::position(score);
            if let Some(dist) = geohash::within(shape, centre.0, centre.1, at.0, at.1) {
                found.push(Found {
                    member: m.clone(),
                    dist,
                    score,
                    at,
                });
            }
            if limit != 0 && found.len() >= limit {
                break;
            }
        }
    }
    found
}

fn search(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, form: Form) {
    let key = args.get(if form == Form::SearchStore { 2 } else { 1 });
    let z = match geo_set(ctx, key) {
        Ok(z) => z,
        Err(e) => return out.error(e),
    };
    let mut s = match parse_search(z, form, args) {
        Ok(s) => s,
        Err(e) => return out.error(e),
    };
    let found = match (z, s.centre, s.shape) {
        (Some(z), Some(centre), Some((shape, per_unit))) => {
            let metres = match shape {
                Shape::Radius(r) => Shape::Radius(r * per_unit),
                Shape::Box(w, h) => Shape::Box(w * per_unit, h * per_unit),
            };
            scan(z, centre, metres, if s.any { s.count } else { 0 })
        }
        _ => Vec::new(),
    };
    let per_unit = s.shape.map_or(1.0, |(_, u)| u);
    if s.count != 0 && s.sort.is_none() && !s.any {
        s.sort = Some(true);
    }
    let mut found = found;
    if let Some(asc) = s.sort {
        // A stable sort: equal distances keep the scan order (Redis's qsort gives no order).
        found.sort_by(|a, b| {
            let o = a.dist.partial_cmp(&b.dist).unwrap_or(std::cmp::Ordering::Equal);
            if asc { o } else { o.reverse() }
        });
    }
    if s.count != 0 {
        found.truncate(s.count);
    }
    match s.store.take() {
        None => reply_found(out, &s, &found, per_unit),
        Some((dst, by_dist)) => {
            let now = ctx.now_ms;
            if found.is_empty() {
                ctx.db.remove(&dst, now);
                return out.integer(0);
            }
            let members = found
                .iter()
                .map(|f| {
                    (
                        f.member.clone(),
                        if by_dist { f.dist / per_unit } else { f.score },
                    )
                })
                .collect();
            let n = found.len();
            ctx.db.set(
                &dst,
                Value::ZSet(ZSet::collect(members)),
                Ttl::Clear,
                SetIf::Always,
                now,
            );
            out.integer(n as i64);
        }
    }
}

fn reply_found(out: &mut ReplyBuf, s: &Search, found: &[Found], per_unit: f64) {
    let extra = usize::from(s.with_dist) + usize::from(s.with_hash) + usize::from(s.with_coord);
    out.array(found.len());
    for f in found {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk_buf(&f.member);
        if s.with_dist {
            out.bulk(distance_text(f.dist / per_unit).as_bytes());
        }
        if s.with_hash {
            out.integer(f.score as i64);
        }
        if s.with_coord {
            out.array(2);
            coordinate(out, f.at.0);
            coordinate(out, f.at.1);
        }
    }
}

/// `GEORADIUS key longitude latitude radius unit [options]`.
pub fn georadius(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    search(ctx, args, out, Form::Radius { ro: false });
}

/// `GEORADIUS_RO`: `GEORADIUS` without `STORE`.
pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    search(ctx, args, out, Form::Radius { ro: true });
}

/// `GEORADIUSBYMEMBER key member radius unit [options]`.
pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    search(ctx, args, out, Form::ByMember { ro: false });
}

/// `GEORADIUSBYMEMBER_RO`: without `STORE`.
pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    search(ctx, args, out, Form::ByMember { ro: true });
}

/// `GEOSEARCH key FROMMEMBER m|FROMLONLAT x y BYRADIUS r unit|BYBOX w h unit [options]`.
pub fn geosearch(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    search(ctx, args, out, Form::Search);
}

/// `GEOSEARCHSTORE dst key ... [STOREDIST]`.
pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    search(ctx, args, out, Form::SearchStore);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_have_four_decimals() {
        assert_eq!(distance_text(166274.15156960033), "166274.1516");
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(0.00005), "0.0000");
        assert_eq!(distance_text(12.5), "12.5000");
    }
}
