//! The CDN workload: image objects of a content delivery network (Tragen's "image" traffic
//! class), served whole or as fixed-size segments.

use super::dist::{Popularity, SizeBuckets, Stream, Within, rng};
use super::keyspace::{fill, make_key};
use super::{CdnMode, Object, Requests, Workload, WorkloadSpec};

/// Key length: "64-byte keys" (`workloads.md` line 49; Cornflakes §6.1.4).
pub const KEY_LEN: usize = 64;
/// Default largest object: 4 MiB, half our TCP frame limit of 8 MiB, so that one response
/// (which carries the whole object in both modes) always fits with its framing.
pub const DEFAULT_MAX_OBJECT: u32 = 4 * 1024 * 1024;
/// Default segment size: 8 KiB, the payload of one jumbo frame (MTU 9000, Cornflakes §6.1.1),
/// as Cornflakes' "jumbo-frame-sized segments" (§6.1.4).
pub const DEFAULT_SEGMENT: u32 = 8 * 1024;
/// Default Zipf exponent of object popularity (see [`build`] for where it comes from).
pub const DEFAULT_ALPHA: f64 = 0.8;
/// Default number of objects: Cornflakes drew "a trace of 1 million object sizes" (§6.1.4).
pub const DEFAULT_KEYS: u32 = 1_000_000;

/// Object sizes of Tragen's "image" class (traffic model `tc-1`), in bytes, as `(lo, hi,
/// weight %)`: a bucket by weight, then log-uniform in `[lo, hi)`.
///
/// Derived from the size marginal of the joint size-popularity model that Tragen ships for that
/// class (repository UMass-LIDS/Tragen, `FOOTPRINT_DESCRIPTORS/tc-1/popularity.txt`, commit
/// 4d2cc8f2, BSD-2-Clause): sizes there are whole KB (1000 B) from 1 to 394,402 KB, mean
/// 22.2 KB, median 10 KB; an integer `s` KB is read as `[1000 s, 1000 (s + 1))` bytes and
/// summed into these buckets. The last bucket ends at 116 MB, the largest size in Cornflakes'
/// 1-million-object draw (`workloads.md` line 49) and takes the model's 4e-7 above it. The
/// table's mean is 22.9 KB ("mean about 20 KB", line 49), its smallest size 1000 B ("from
/// about 1 KB").
pub const IMAGE_SIZE_TABLE: [(u32, u32, f64); 21] = [
    (1_000, 2_000, 0.655402),
    (2_000, 3_000, 10.448739),
    (3_000, 4_000, 6.513640),
    (4_000, 6_000, 13.697140),
    (6_000, 8_000, 10.571149),
    (8_000, 12_000, 12.995653),
    (12_000, 16_000, 8.434070),
    (16_000, 24_000, 11.251395),
    (24_000, 32_000, 6.681463),
    (32_000, 48_000, 7.642851),
    (48_000, 64_000, 4.274128),
    (64_000, 96_000, 3.920143),
    (96_000, 128_000, 1.463597),
    (128_000, 192_000, 0.872191),
    (192_000, 256_000, 0.232306),
    (256_000, 512_000, 0.229409),
    (512_000, 1_024_000, 0.081154),
    (1_024_000, 2_048_000, 0.025974),
    (2_048_000, 4_096_000, 0.006576),
    (4_096_000, 16_384_000, 0.002659),
    (16_384_000, 116_000_000, 0.000363),
];

/// The CDN image workload (`workloads.md` lines 48-51, "CDN image objects (Tragen "image"
/// class)"; Cornflakes §6.1.4, Table 2, Figure 11).
///
/// - Sizes: [`IMAGE_SIZE_TABLE`], Tragen's own image-class size distribution: 1000 B to 116 MB,
///   mean 22.9 KB, heavy-tailed (0.36 % of objects above 256 KB). Objects larger than
///   `max_object` (default 4 MiB) are clamped to it in both layouts, because a response carries
///   the whole object and our TCP frame limit is 8 MiB; at the default that touches about 3 in
///   100,000 objects, and the count is in [`Workload::notes`].
/// - Layouts: whole (one buffer, [`Op::Get`]: our transports have no MTU, line 50) or segments
///   of `segment` bytes, default 8 KiB, the last one shorter, like Cornflakes' jumbo-frame
///   sub-objects. An object of one segment is a single buffer read with `Get`; longer ones are
///   read in one [`Op::GetList`] (Cornflakes asked for the sub-objects one request each).
/// - Popularity: Zipf, default exponent 0.8, ranks scattered over keys. Cornflakes does not say
///   how its trace spread requests; fitting a Zipf to the per-object request counts of the same
///   Tragen model gives about 0.6 to 0.8 depending on the rank range, so 0.8 is the upper end of
///   that (sizes are drawn independently of popularity, unlike Tragen's joint model).
/// - Keys: 64 bytes.
///
/// Built from `spec`'s `keys` (default [`DEFAULT_KEYS`]), `cdn_mode` and `cdn_segment`,
/// `cdn_max_object`, `zipf` (default [`DEFAULT_ALPHA`]) and `memory_budget`, and `seed`.
pub fn build(spec: &WorkloadSpec, seed: u64) -> Result<Workload, String> {
    let max_object = spec.cdn_max_object;
    if max_object == 0 {
        return Err("cdn: max object must be at least 1 byte".into());
    }
    let segment = match spec.cdn_mode {
        CdnMode::Whole => None,
        CdnMode::Segments if spec.cdn_segment == 0 => {
            return Err("cdn: segment size must be at least 1 byte".into());
        }
        CdnMode::Segments => Some(spec.cdn_segment),
    };
    let sizes = object_sizes();
    let mut orng = rng(seed, Stream::Objects);
    let mut clamped = 0u32;
    let (objects, note) = fill(
        "cdn",
        spec.keys.unwrap_or(DEFAULT_KEYS),
        spec.memory_budget,
        |index| {
            let key = make_key("cdn:", index, KEY_LEN, &mut orng);
            let drawn = sizes.sample(&mut orng);
            clamped += u32::from(drawn > max_object);
            Object {
                key,
                parts: split(drawn.min(max_object), segment),
            }
        },
    )?;
    let mut notes: Vec<String> = note.into_iter().collect();
    if clamped > 0 {
        notes.push(format!(
            "cdn: {clamped} objects larger than {max_object} bytes clamped to it"
        ));
    }
    let popularity = Popularity::zipf(objects.len() as u32, spec.zipf.unwrap_or(DEFAULT_ALPHA), seed)?;
    Ok(Workload {
        name: segment.map_or("cdn".to_owned(), |s| format!("cdn-seg{s}")),
        objects,
        notes,
        requests: Requests::Reads(popularity),
        rng: rng(seed, Stream::Ops),
    })
}

/// The image-class size law.
pub fn object_sizes() -> SizeBuckets {
    // The table is a checked constant: valid bounds and positive weights.
    SizeBuckets::new(&IMAGE_SIZE_TABLE, Within::LogUniform).expect("IMAGE_SIZE_TABLE is valid")
}

/// The parts of an object of `size` bytes: whole, or in segments of `segment` bytes.
fn split(size: u32, segment: Option<u32>) -> Vec<u32> {
    match segment {
        None => vec![size],
        Some(segment) => {
            let mut parts = vec![segment; (size / segment) as usize];
            if size % segment != 0 {
                parts.push(size % segment);
            }
            parts
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Op};
    use super::*;

    #[test]
    fn sizes_have_the_image_class_mean_and_bounds() {
        let sizes = object_sizes();
        let table_mean = sizes.mean();
        assert!(
            (20_000.0..25_000.0).contains(&table_mean),
            "table mean {table_mean}"
        );
        let mut rng = rng(17, Stream::Objects);
        let n = 400_000u32;
        let (mut sum, mut lo, mut hi) = (0u64, u32::MAX, 0u32);
        for _ in 0..n {
            let s = sizes.sample(&mut rng);
            sum += u64::from(s);
            lo = lo.min(s);
            hi = hi.max(s);
        }
        let mean = sum as f64 / f64::from(n);
        assert!(
            (mean - table_mean).abs() < 0.05 * table_mean,
            "sample mean {mean}, table {table_mean}"
        );
        assert!(lo >= 1_000 && hi < 116_000_000, "range [{lo}, {hi}]");
        assert!(hi > 1_000_000, "the heavy tail shows up in {n} draws: max {hi}");
    }

    #[test]
    fn segments_split_and_whole_clamps() {
        assert_eq!(split(20_000, Some(8192)), [8192, 8192, 3616]);
        assert_eq!(split(16_384, Some(8192)), [8192, 8192]);
        assert_eq!(split(1_000, Some(8192)), [1000]);
        assert_eq!(split(1_000, None), [1000]);

        let base = WorkloadSpec {
            keys: Some(20_000),
            cdn_max_object: 200_000,
            ..WorkloadSpec::new(Kind::Cdn)
        };
        let whole = build(&base, 4).unwrap();
        let seg = build(
            &WorkloadSpec {
                cdn_mode: CdnMode::Segments,
                cdn_segment: 8192,
                ..base.clone()
            },
            4,
        )
        .unwrap();
        assert_eq!(whole.name(), "cdn");
        assert_eq!(seg.name(), "cdn-seg8192");
        assert!(whole.notes().iter().any(|n| n.contains("clamped to it")));
        for (w, s) in whole.objects().iter().zip(seg.objects()) {
            assert_eq!(w.key, s.key);
            assert_eq!(w.parts.len(), 1);
            assert!((1_000..=200_000).contains(&w.parts[0]));
            assert_eq!(w.value_len(), s.value_len(), "same sizes in both layouts");
            assert!(s.parts.iter().all(|&p| (1..=8192).contains(&p)));
        }
    }

    #[test]
    fn ops_read_whole_objects_in_range() {
        for cdn_mode in [CdnMode::Whole, CdnMode::Segments] {
            let mut w = build(
                &WorkloadSpec {
                    keys: Some(5_000),
                    cdn_mode,
                    ..WorkloadSpec::new(Kind::Cdn)
                },
                6,
            )
            .unwrap();
            for _ in 0..20_000 {
                match w.next_op() {
                    Op::Get(i) => assert_eq!(w.objects()[i as usize].parts.len(), 1),
                    Op::GetList(i) => assert!(w.objects()[i as usize].parts.len() > 1),
                    op => panic!("cdn issued {op:?}"),
                }
            }
        }
    }
}
