//! The geo commands against redis-server 7.0, reply for reply: seeded random points (spread
//! over the globe, clustered around one place, and near the poles' limits and the
//! antimeridian), then random `GEORADIUS`, `GEORADIUSBYMEMBER`, `GEOSEARCH` and
//! `GEOSEARCHSTORE` requests with their options, `GEOPOS`, `GEODIST` and `GEOHASH`. Replies
//! must be equal as parsed: the same members in the same order (unsorted replies come in the
//! order of the geohash cells Redis scans), the same distances and coordinates to the digit,
//! and `ZRANGE ... WITHSCORES` of the stored sets shows the same 52-bit scores.

mod common;

use common::{Conn, cmd, config, connect, start};
use ferry_redis::resp::client::Reply;

/// xorshift64*: a reproducible sequence for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `lo..hi`.
    fn float(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A random point: anywhere, near Sicily, near a pole's limit, or near the antimeridian.
fn point(rng: &mut Rng) -> (f64, f64) {
    match rng.below(4) {
        0 => (rng.float(-180.0, 180.0), rng.float(-85.0, 85.0)),
        1 => (rng.float(12.0, 16.0), rng.float(36.0, 39.0)),
        2 => (rng.float(-180.0, 180.0), rng.float(84.0, 85.05)),
        _ => (
            rng.float(178.0, 180.0) * if rng.below(2) == 0 { 1.0 } else { -1.0 },
            rng.float(-10.0, 10.0),
        ),
    }
}

/// One random request.
fn request(rng: &mut Rng, members: usize) -> Vec<String> {
    let member = |rng: &mut Rng| format!("m{}", rng.below(members as u64 + 2));
    let mut words: Vec<String> = Vec::new();
    let kind = rng.below(7);
    let (x, y) = point(rng);
    let radius = format!("{:.3}", rng.float(0.0, 3000.0));
    let unit = rng.pick(&["m", "km", "mi", "ft"]).to_string();
    let radius = if unit == "km" || unit == "mi" {
        radius
    } else {
        format!("{:.1}", rng.float(0.0, 2_000_000.0))
    };
    match kind {
        0 => words.extend([
            "GEORADIUS".into(),
            "pts".into(),
            x.to_string(),
            y.to_string(),
            radius,
            unit,
        ]),
        1 => words.extend([
            "GEORADIUSBYMEMBER_RO".into(),
            "pts".into(),
            member(rng),
            radius,
            unit,
        ]),
        2 | 3 => {
            words.extend(["GEOSEARCH".into(), "pts".into()]);
            if kind == 3 {
                words.splice(0..1, ["GEOSEARCHSTORE".to_string(), "dst".into()]);
            }
            if rng.below(2) == 0 {
                words.extend(["FROMLONLAT".into(), x.to_string(), y.to_string()]);
            } else {
                words.extend(["FROMMEMBER".into(), member(rng)]);
            }
            if rng.below(2) == 0 {
                words.extend(["BYRADIUS".into(), radius, unit]);
            } else {
                let h = format!("{:.2}", rng.float(0.0, 4000.0));
                words.extend([
                    "BYBOX".into(),
                    format!("{:.2}", rng.float(0.0, 4000.0)),
                    h,
                    "km".into(),
                ]);
            }
        }
        4 => {
            words.extend(["GEOPOS".into(), "pts".into()]);
            words.extend((0..3).map(|_| member(rng)));
        }
        5 => words.extend(["GEODIST".into(), "pts".into(), member(rng), member(rng), unit]),
        _ => {
            words.extend(["GEOHASH".into(), "pts".into()]);
            words.extend((0..3).map(|_| member(rng)));
        }
    }
    if kind <= 3 {
        if kind == 3 {
            if rng.below(2) == 0 {
                words.push("STOREDIST".into());
            }
        } else {
            for opt in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
                if rng.below(2) == 0 {
                    words.push(opt.into());
                }
            }
        }
        if rng.below(2) == 0 {
            words.extend(["COUNT".into(), (1 + rng.below(5)).to_string()]);
            if rng.below(3) == 0 {
                words.push("ANY".into());
            }
        }
        match rng.below(3) {
            0 => words.push("ASC".into()),
            1 => words.push("DESC".into()),
            _ => {}
        }
    }
    words
}

fn send(c: &mut Conn, words: &[String]) -> Reply {
    let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    cmd(c, &args)
}

#[test]
fn geo_replies_match_redis_server() {
    let Some(path) = common::redis_server_7_0("geo_replies_match_redis_server") else {
        return;
    };
    let redis = common::start_redis_server(&path, &std::env::temp_dir(), &[], ferry_testkit::DEADLINE);
    let ferry = start(config());
    let (mut r, mut f) = (connect(redis.addr()), connect(ferry.addr()));
    // Searches that found something: the comparison is of results, not of empty replies.
    let mut found = 0;
    for seed in 1..=4u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        for c in [&mut r, &mut f] {
            cmd(c, &[b"DEL", b"pts", b"dst"]);
        }
        let members = 200;
        let mut add = vec!["GEOADD".to_string(), "pts".into()];
        for i in 0..members {
            let (x, y) = point(&mut rng);
            add.extend([x.to_string(), y.to_string(), format!("m{i}")]);
        }
        assert_eq!(send(&mut f, &add), send(&mut r, &add), "seed {seed}: GEOADD");
        let scores = [
            "ZRANGE".to_string(),
            "pts".into(),
            "0".into(),
            "-1".into(),
            "WITHSCORES".into(),
        ];
        assert_eq!(
            send(&mut f, &scores),
            send(&mut r, &scores),
            "seed {seed}: scores"
        );
        for i in 0..300 {
            let words = request(&mut rng, members);
            let (want, got) = (send(&mut r, &words), send(&mut f, &words));
            assert_eq!(got, want, "seed {seed}, request {i}: {}", words.join(" "));
            let hit = match &got {
                Reply::Array(v) => !v.is_empty(),
                Reply::Int(n) => *n > 0,
                _ => false,
            };
            if words[0].starts_with("GEORADIUS") || words[0].starts_with("GEOSEARCH") {
                found += usize::from(hit);
            }
            if words[0] == "GEOSEARCHSTORE" {
                let stored = [
                    "ZRANGE".to_string(),
                    "dst".into(),
                    "0".into(),
                    "-1".into(),
                    "WITHSCORES".into(),
                ];
                assert_eq!(
                    send(&mut f, &stored),
                    send(&mut r, &stored),
                    "seed {seed}, request {i}: stored"
                );
            }
        }
    }
    assert!(found > 200, "only {found} searches found members");
}

/// Errors, in Redis's words, for the checks `GEOADD` and the searches make.
#[test]
fn geo_errors_match_redis_server() {
    let Some(path) = common::redis_server_7_0("geo_errors_match_redis_server") else {
        return;
    };
    let redis = common::start_redis_server(&path, &std::env::temp_dir(), &[], ferry_testkit::DEADLINE);
    let ferry = start(config());
    let (mut r, mut f) = (connect(redis.addr()), connect(ferry.addr()));
    for line in [
        "GEOADD k 181 10 a",
        "GEOADD k 10 85.06 a",
        "GEOADD k x 10 a",
        "GEOADD k NX XX 10 10 a",
        "GEOADD k GT 10 10 a",
        "GEOADD k 10 10",
        "GEOADD k CH 10 10 a 11 11 b",
        "GEOADD k XX CH 10 10 a 12 12 c",
        "GEODIST k a b parsecs",
        "GEODIST k a b km extra",
        "GEORADIUS k 10 10 -1 km",
        "GEORADIUS k 10 10 x km",
        "GEORADIUS k 10 10 1 km COUNT 0",
        "GEORADIUS k 10 10 1 km COUNT x",
        "GEORADIUS k 10 10 1 km ANY",
        "GEORADIUS k 10 10 1 km STORE d WITHDIST",
        "GEORADIUS_RO k 10 10 1 km STORE d",
        "GEORADIUSBYMEMBER k nosuch 1 km",
        "GEOSEARCH k BYRADIUS 1 km",
        "GEOSEARCH k FROMLONLAT 10 10",
        "GEOSEARCH k FROMLONLAT 10 10 BYBOX -1 1 km",
        "GEOSEARCH k FROMLONLAT 10 10 BYRADIUS 1 km BYBOX 1 1 km",
        "GEOSEARCH k FROMMEMBER a FROMLONLAT 10 10 BYRADIUS 1 km",
        "GEOSEARCH k FROMLONLAT 10 10 BYRADIUS 1 km STOREDIST",
        "GEOSEARCHSTORE d k FROMLONLAT 10 10 BYRADIUS 1 km WITHDIST",
        "GEOSEARCHSTORE d k FROMLONLAT 10 10 BYRADIUS 1000 km STOREDIST",
        "ZRANGE d 0 -1 WITHSCORES",
        "GEOSEARCH nosuch FROMMEMBER a BYRADIUS 1 km",
        "GEOSEARCHSTORE d nosuch FROMMEMBER a BYRADIUS 1 km",
        "EXISTS d",
        "SET s x",
        "GEOADD s 10 10 a",
        "GEOPOS s a",
        "GEOSEARCH s FROMLONLAT 10 10 BYRADIUS 1 km",
    ] {
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        assert_eq!(send(&mut f, &words), send(&mut r, &words), "{line}");
    }
}
