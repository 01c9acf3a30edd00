//! Redis's geohash, without I/O: a point is 26 bits of latitude and 26 of longitude,
//! interleaved (latitude in the even bits) into a 52-bit integer that `GEOADD` stores as a
//! sorted-set score, so a geo set is byte-compatible with Redis's (`ZRANGE ... WITHSCORES`,
//! RDB). The same arithmetic as Redis 7.0's `geohash.c` and `geohash_helper.c`: the encoding,
//! the decoded centre of a cell, the haversine distance on Redis's earth radius, and the nine
//! cells a search scans ([`search_boxes`]), in Redis's order, so results come in the order
//! Redis returns them.

/// Latitudes Redis can encode (Web Mercator's limits).
pub const LAT_MIN: f64 = -85.05112878;
/// See [`LAT_MIN`].
pub const LAT_MAX: f64 = 85.05112878;
/// Longitudes.
pub const LONG_MIN: f64 = -180.0;
/// See [`LONG_MIN`].
pub const LONG_MAX: f64 = 180.0;
/// Bits per coordinate of a stored point.
pub const STEP_MAX: u8 = 26;
/// Redis's earth radius (the quadratic mean radius of WGS-84), in metres.
const EARTH_RADIUS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const DEG_TO_RAD: f64 = 0.017453292519943295769236907684886;

/// A cell: `step` bits per coordinate, interleaved in `bits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hash {
    /// Latitude in the even bits, longitude in the odd ones.
    pub bits: u64,
    /// Bits per coordinate (1 to 32).
    pub step: u8,
}

/// A coordinate range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Lowest.
    pub min: f64,
    /// Highest.
    pub max: f64,
}

/// The area of a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    /// Its longitudes.
    pub long: Range,
    /// Its latitudes.
    pub lat: Range,
}

/// The ranges `GEOADD` encodes within.
pub const WGS84: Area = Area {
    long: Range {
        min: LONG_MIN,
        max: LONG_MAX,
    },
    lat: Range {
        min: LAT_MIN,
        max: LAT_MAX,
    },
};

/// What a search covers: a circle of `radius` metres or a `width` by `height` metres box,
/// centred on (`long`, `lat`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// `BYRADIUS`, `GEORADIUS`.
    Radius(f64),
    /// `BYBOX` (width, height).
    Box(f64, f64),
}

/// Whether (`long`, `lat`) is a point `GEOADD` accepts.
pub fn valid(long: f64, lat: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&long) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The bits of `x` in the even positions, `y` in the odd ones.
fn interleave(x: u32, y: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = u64::from(v);
        v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(x) | (spread(y) << 1)
}

/// The inverse of [`interleave`]: (even bits, odd bits).
fn deinterleave(v: u64) -> (u32, u32) {
    fn squash(mut v: u64) -> u32 {
        v &= 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF;
        v as u32
    }
    (squash(v), squash(v >> 1))
}

/// The cell of `step` bits per coordinate holding (`long`, `lat`) within `area`; `None`
/// outside it (Redis's `geohashEncode`).
pub fn encode(area: &Area, long: f64, lat: f64, step: u8) -> Option<Hash> {
    if !valid(long, lat) || !(area.lat.min..=area.lat.max).contains(&lat) {
        return None;
    }
    if !(area.long.min..=area.long.max).contains(&long) {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - area.lat.min) / (area.lat.max - area.lat.min) * scale;
    let long_offset = (long - area.long.min) / (area.long.max - area.long.min) * scale;
    // C's conversion to `uint32_t` truncates, as `as` does.
    Some(Hash {
        bits: interleave(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// The score `GEOADD` stores for (`long`, `lat`), a valid point.
pub fn score(long: f64, lat: f64) -> Option<f64> {
    encode(&WGS84, long, lat, STEP_MAX).map(|h| align52(h) as f64)
}

/// The cell's bits moved to the top of 52 (a cell's lowest score).
fn align52(h: Hash) -> u64 {
    h.bits << (52 - u32::from(h.step) * 2)
}

/// The area of cell `h` within `area` (Redis's `geohashDecode`).
pub fn decode(area: &Area, h: Hash) -> Area {
    let (ilat, ilong) = deinterleave(h.bits);
    let scale = (1u64 << h.step) as f64;
    let lat_scale = area.lat.max - area.lat.min;
    let long_scale = area.long.max - area.long.min;
    Area {
        lat: Range {
            min: area.lat.min + (f64::from(ilat) / scale) * lat_scale,
            max: area.lat.min + ((f64::from(ilat) + 1.0) / scale) * lat_scale,
        },
        long: Range {
            min: area.long.min + (f64::from(ilong) / scale) * long_scale,
            max: area.long.min + ((f64::from(ilong) + 1.0) / scale) * long_scale,
        },
    }
}

/// The point a stored score stands for: the centre of its cell, as (longitude, latitude).
pub fn position(score: f64) -> (f64, f64) {
    // C converts the double to `uint64_t`; `as` saturates where C is undefined.
    let a = decode(
        &WGS84,
        Hash {
            bits: score as u64,
            step: STEP_MAX,
        },
    );
    let long = ((a.long.min + a.long.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (long, lat)
}

/// `GEOHASH`'s 11-character string for a stored score: the point re-encoded within the
/// standard ranges (latitudes ±90), in the geohash alphabet; the 11th character is always `0`,
/// as Redis writes it (52 bits give 10 characters).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (long, lat) = position(score);
    let standard = Area {
        long: Range {
            min: -180.0,
            max: 180.0,
        },
        lat: Range {
            min: -90.0,
            max: 90.0,
        },
    };
    let bits = encode(&standard, long, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut s = [ALPHABET[0]; 11];
    for (i, c) in s.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    s
}

fn rad(deg: f64) -> f64 {
    deg * DEG_TO_RAD
}

/// The distance in metres between two latitudes on a meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (rad(lat2) - rad(lat1)).abs()
}

/// The haversine distance in metres between two points, as Redis computes it.
pub fn distance(long1: f64, lat1: f64, long2: f64, lat2: f64) -> f64 {
    let v = ((rad(long2) - rad(long1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let u = ((rad(lat2) - rad(lat1)) / 2.0).sin();
    let a = u * u + rad(lat1).cos() * rad(lat2).cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// The distance from the centre (`long`, `lat`) to point (`x`, `y`) if the point is in the
/// shape (sizes in metres).
pub fn within(shape: Shape, long: f64, lat: f64, x: f64, y: f64) -> Option<f64> {
    match shape {
        Shape::Radius(r) => Some(distance(long, lat, x, y)).filter(|&d| d <= r),
        Shape::Box(width, height) => {
            if lat_distance(y, lat) > height / 2.0 || distance(x, y, long, y) > width / 2.0 {
                return None;
            }
            Some(distance(long, lat, x, y))
        }
    }
}

/// The step whose cells are about `range` metres wide at latitude `lat`.
fn steps_for(mut range: f64, lat: f64) -> u8 {
    if range == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// `h` moved one cell east (`d` > 0) or west (`d` < 0), wrapping around.
fn move_x(h: Hash, d: i8) -> Hash {
    if d == 0 {
        return h;
    }
    let shift = 64 - u32::from(h.step) * 2;
    let mut x = h.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = h.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x = (x | zz).wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    Hash { bits: x | y, ..h }
}

/// `h` moved one cell north (`d` > 0) or south (`d` < 0), wrapping around.
fn move_y(h: Hash, d: i8) -> Hash {
    if d == 0 {
        return h;
    }
    let shift = 64 - u32::from(h.step) * 2;
    let x = h.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = h.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y = (y | zz).wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    Hash { bits: x | y, ..h }
}

/// The cells a search around (`long`, `lat`) scans, in Redis's order (the centre, then north,
/// south, east, west, north-east, north-west, south-east, south-west), as score ranges
/// `min..max`: `None` for a cell Redis leaves out (wholly outside the search's bounding box),
/// or skips as equal to the last one scanned (Redis compares each with the last scanned,
/// from the second scanned on).
pub fn search_boxes(shape: Shape, long: f64, lat: f64) -> [Option<(f64, f64)>; 9] {
    let (half_h, half_w) = match shape {
        Shape::Radius(r) => (r, r),
        Shape::Box(w, h) => (h / 2.0, w / 2.0),
    };
    let lat_delta = (half_h / EARTH_RADIUS) / DEG_TO_RAD;
    let long_delta_top = (half_w / EARTH_RADIUS / rad(lat + lat_delta).cos()) / DEG_TO_RAD;
    let long_delta_bottom = (half_w / EARTH_RADIUS / rad(lat - lat_delta).cos()) / DEG_TO_RAD;
    let long_delta = if lat < 0.0 {
        long_delta_bottom
    } else {
        long_delta_top
    };
    let (min_long, max_long) = (long - long_delta, long + long_delta);
    let (min_lat, max_lat) = (lat - lat_delta, lat + lat_delta);
    let radius = match shape {
        Shape::Radius(r) => r,
        Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
    };
    let mut steps = steps_for(radius, lat);
    let cells = |steps: u8| {
        let hash = encode(&WGS84, long, lat, steps).unwrap_or(Hash { bits: 0, step: steps });
        // centre, N, S, E, W, NE, NW, SE, SW.
        let moves: [(i8, i8); 9] = [
            (0, 0),
            (0, 1),
            (0, -1),
            (1, 0),
            (-1, 0),
            (1, 1),
            (-1, 1),
            (1, -1),
            (-1, -1),
        ];
        moves.map(|(dx, dy)| move_y(move_x(hash, dx), dy))
    };
    let mut hashes = cells(steps);
    let area_of = |h: Hash| decode(&WGS84, h);
    let too_small = area_of(hashes[1]).lat.max < max_lat
        || area_of(hashes[2]).lat.min > min_lat
        || area_of(hashes[3]).long.max < max_long
        || area_of(hashes[4]).long.min > min_long;
    if steps > 1 && too_small {
        steps -= 1;
        hashes = cells(steps);
    }
    let mut keep = [true; 9];
    if steps >= 2 {
        let centre = area_of(hashes[0]);
        let mut drop = |which: [usize; 3]| which.iter().for_each(|&i| keep[i] = false);
        if centre.lat.min < min_lat {
            drop([2, 8, 7]);
        }
        if centre.lat.max > max_lat {
            drop([1, 5, 6]);
        }
        if centre.long.min < min_long {
            drop([4, 8, 6]);
        }
        if centre.long.max > max_long {
            drop([3, 7, 5]);
        }
    }
    let mut boxes = [None; 9];
    let mut last: Option<usize> = None;
    for i in 0..9 {
        if !keep[i] {
            continue;
        }
        if last.is_some_and(|l| l > 0 && hashes[l] == hashes[i]) {
            continue;
        }
        let h = hashes[i];
        let next = Hash {
            bits: h.bits + 1,
            ..h
        };
        boxes[i] = Some((align52(h) as f64, align52(next) as f64));
        last = Some(i);
    }
    boxes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_positions_and_strings_are_redis_s() {
        // From redis-server 7.0.15: GEOADD Sicily 13.361389 38.115556 Palermo, then ZSCORE,
        // GEOPOS and GEOHASH.
        let s = score(13.361389, 38.115556).unwrap();
        assert_eq!(s, 3479099956230698.0);
        let (x, y) = position(s);
        assert_eq!(crate::cmd::hashes::format_float_human(x), "13.36138933897018433");
        assert_eq!(crate::cmd::hashes::format_float_human(y), "38.11555639549629859");
        assert_eq!(&geohash_string(s), b"sqc8b49rny0");
        assert_eq!(score(181.0, 0.0), None);
        assert_eq!(score(0.0, 85.06), None);
    }

    #[test]
    fn interleaving_round_trips() {
        for (x, y) in [(0, 0), (1, 0), (0, 1), (0x3ff_ffff, 0x155_5555), (u32::MAX, 7)] {
            assert_eq!(deinterleave(interleave(x, y)), (x, y));
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    #[test]
    fn distance_palermo_catania() {
        // redis-server: GEODIST Sicily Palermo Catania → 166274.1516.
        let (x1, y1) = position(score(13.361389, 38.115556).unwrap());
        let (x2, y2) = position(score(15.087269, 37.502669).unwrap());
        assert_eq!(format!("{:.4}", distance(x1, y1, x2, y2)), "166274.1516");
        assert_eq!(distance(x1, y1, x1, y1), 0.0);
    }

    #[test]
    fn neighbours_wrap_around() {
        let h = Hash { bits: 0, step: 2 };
        // West of the westmost cell is the eastmost one.
        assert_eq!(move_x(h, -1).bits, 0b1010);
        assert_eq!(move_x(move_x(h, -1), 1), h);
        assert_eq!(move_y(move_y(h, 1), -1), h);
    }
}
