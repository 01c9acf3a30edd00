//! The Google workload: lists of protobuf `bytes` fields whose sizes follow Google's fleet-wide
//! distribution, read back whole.

use rand::Rng as _;

use super::dist::{Popularity, SizeBuckets, Stream, Within, rng};
use super::keyspace::{fill, make_key};
use super::{Object, Requests, Workload, WorkloadSpec};

/// Objects Cornflakes drew (§6.1.4).
pub const DEFAULT_KEYS: u32 = 1_000_000;
/// Key length: "64-byte keys" (`workloads.md` line 23; Cornflakes §6.1.4).
pub const KEY_LEN: usize = 64;

/// Default largest field, the `max` of the last bucket: 64 KiB. Neither `workloads.md` nor the
/// paper bounds that bucket; 64 KiB keeps its mean (about 34 KiB) a plausible "large bytes field".
pub const DEFAULT_MAX_FIELD: u32 = 64 * 1024;

/// Default largest object (all fields of one key): 4 MiB, half our TCP frame limit of 8 MiB so
/// a response with its framing always fits. Cornflakes resampled against one jumbo frame
/// (9000 B, §6.1.1/§6.1.4); pass 9000 to reproduce that.
pub const DEFAULT_MAX_OBJECT: u64 = 4 * 1024 * 1024;

/// The fleet-wide `bytes` field-size table of `workloads.md` lines 11-21: `(lo, hi, weight %)`,
/// sizes uniform in `[lo, hi)`; the last row's `hi` is replaced by `max_field + 1`.
pub const FIELD_SIZE_TABLE: [(u32, u32, f64); 9] = [
    (1, 9, 33.8),
    (9, 17, 15.3),
    (17, 23, 7.6),
    (23, 33, 13.5),
    (33, 65, 10.6),
    (65, 129, 6.1),
    (129, 513, 8.0),
    (513, 4097, 3.7),
    (4097, u32::MAX, 1.36),
];

/// The Google protobuf `bytes` workload (`workloads.md` lines 6-24, "Google protobuf `bytes`
/// field sizes"; Cornflakes §6.1.4, Table 1, Figure 6).
///
/// - Objects: lists of `fields.min..=fields.max` fields (uniform), each field's size drawn from
///   [`FIELD_SIZE_TABLE`] (a bucket by weight, then uniform in `[lo, hi)`), the last bucket's
///   open end set to `max_field` (default 64 KiB: our choice, neither source gives one). A
///   field that would push the object past `max_object` is drawn again ("resampled if the whole
///   object would exceed the frame limit", line 23). Keys are 64 bytes.
/// - Requests: reads of one whole object. Objects of two or more fields are multi-part values
///   read with [`Op::GetList`]; an object of one field is a single buffer, read with
///   [`Op::Get`] (the [`Object`] contract: one part is a single buffer), so `--google-fields 1`
///   issues only `Get`s.
/// - Popularity: uniform over the keys. Cornflakes §6.1.4 gives none for this synthetic trace,
///   so this is our assumption.
///
/// Built from `spec`'s `keys` (default 1 million), `google_fields`, `google_max_field`,
/// `google_max_object` and `memory_budget`, and `seed`.
pub fn build(spec: &WorkloadSpec, seed: u64) -> Result<Workload, String> {
    let (fields, max_field, max_object) = (spec.google_fields, spec.google_max_field, spec.google_max_object);
    fields.check()?;
    if max_field < 4097 {
        return Err(format!(
            "google: max field {max_field} is below the last bucket's start, 4097"
        ));
    }
    let reserve = 8 * u64::from(fields.max);
    if max_object < reserve {
        return Err(format!(
            "google: max object {max_object} B cannot hold {} fields of up to 8 B",
            fields.max
        ));
    }
    let sizes = field_sizes(max_field)?;
    let mut orng = rng(seed, Stream::Objects);
    let (objects, note) = fill(
        "google",
        spec.keys.unwrap_or(DEFAULT_KEYS),
        spec.memory_budget,
        |index| {
            let key = make_key("google:", index, KEY_LEN, &mut orng);
            let n = orng.random_range(fields.min..=fields.max);
            let mut parts = Vec::with_capacity(n as usize);
            let mut room = max_object;
            for left in (0..n).rev() {
                // Each field leaves at least 8 B for every field still to draw, so the first
                // bucket ([1, 9)) always fits and the loop ends (expected < 3 draws).
                let limit = room - 8 * u64::from(left);
                let size = loop {
                    let s = sizes.sample(&mut orng);
                    if u64::from(s) <= limit {
                        break s;
                    }
                };
                room -= u64::from(size);
                parts.push(size);
            }
            Object { key, parts }
        },
    )?;
    Ok(Workload {
        name: format!("google-{fields}"),
        requests: Requests::Reads(Popularity::uniform(objects.len() as u32)?),
        objects,
        notes: note.into_iter().collect(),
        rng: rng(seed, Stream::Ops),
    })
}

/// [`FIELD_SIZE_TABLE`] with its last bucket ending at `max_field` (inclusive).
pub fn field_sizes(max_field: u32) -> Result<SizeBuckets, String> {
    let mut table = FIELD_SIZE_TABLE;
    table[8].1 = max_field.saturating_add(1);
    SizeBuckets::new(&table, Within::Uniform)
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, ListLen, Op};
    use super::*;

    #[test]
    fn bucket_weights_are_reproduced() {
        let sizes = field_sizes(DEFAULT_MAX_FIELD).unwrap();
        let mut rng = rng(21, Stream::Objects);
        let n = 100_000u32;
        let mut counts = [0u32; 9];
        let mut small = 0u32;
        for _ in 0..n {
            let (s, b) = sizes.sample_with_bucket(&mut rng);
            let (lo, hi) = sizes.bounds()[b];
            assert!((lo..hi).contains(&s));
            assert!((1..=DEFAULT_MAX_FIELD).contains(&s));
            counts[b] += 1;
            small += u32::from(s <= 512);
        }
        let total: f64 = FIELD_SIZE_TABLE.iter().map(|r| r.2).sum();
        for (b, &(lo, _, w)) in FIELD_SIZE_TABLE.iter().enumerate() {
            let p = w / total;
            let got = f64::from(counts[b]) / f64::from(n);
            // Four standard deviations of a binomial share.
            let tol = 4.0 * (p * (1.0 - p) / f64::from(n)).sqrt();
            assert!((got - p).abs() <= tol, "bucket from {lo}: share {got}, table {p}");
        }
        // "About 94.9% of fields are <= 512 B" (workloads.md line 24).
        let share = f64::from(small) / f64::from(n);
        assert!((share - 0.949).abs() < 0.005, "share <= 512 B: {share}");
    }

    fn small(fields: ListLen) -> WorkloadSpec {
        WorkloadSpec {
            keys: Some(2_000),
            google_fields: fields,
            ..WorkloadSpec::new(Kind::Google)
        }
    }

    #[test]
    fn lists_have_the_configured_lengths_and_keys() {
        for (min, max) in [(1, 1), (1, 4), (1, 8), (1, 16)] {
            let w = build(&small(ListLen { min, max }), 3).unwrap();
            assert_eq!(w.objects().len(), 2_000);
            let mut lens = vec![0u32; max as usize + 1];
            for o in w.objects() {
                assert_eq!(o.key.len(), KEY_LEN);
                assert!((min..=max).contains(&(o.parts.len() as u32)));
                assert!(o.parts.iter().all(|&p| (1..=DEFAULT_MAX_FIELD).contains(&p)));
                lens[o.parts.len()] += 1;
            }
            // Uniform list length: every length shows up.
            assert!(lens[min as usize..].iter().all(|&c| c > 0), "{lens:?}");
            assert_eq!(
                w.name(),
                if min == max {
                    format!("google-{max}")
                } else {
                    format!("google-1-{max}")
                }
            );
        }
    }

    #[test]
    fn max_object_resamples_fields() {
        let config = WorkloadSpec {
            google_max_object: 9000,
            ..small(ListLen { min: 1, max: 16 })
        };
        let w = build(&config, 5).unwrap();
        assert!(w.objects().iter().all(|o| o.value_len() <= 9000));
        assert!(
            w.objects().iter().any(|o| o.value_len() > 4097),
            "large fields still drawn"
        );
        let bad = WorkloadSpec {
            google_max_object: 100,
            ..small(ListLen { min: 1, max: 16 })
        };
        assert!(build(&bad, 5).is_err());
        let bad = WorkloadSpec {
            google_max_field: 4000,
            ..small(ListLen { min: 1, max: 4 })
        };
        assert!(build(&bad, 5).is_err());
    }

    #[test]
    fn ops_read_whole_objects() {
        let mut w = build(&small(ListLen { min: 1, max: 8 }), 8).unwrap();
        for _ in 0..10_000 {
            match w.next_op() {
                Op::GetList(i) => assert!(w.objects()[i as usize].parts.len() > 1),
                Op::Get(i) => assert_eq!(w.objects()[i as usize].parts.len(), 1),
                op => panic!("google issued {op:?}"),
            }
        }
    }
}
