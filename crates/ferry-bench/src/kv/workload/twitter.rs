//! The Twitter workload, synthetic: a trace with the published statistics of Twemcache
//! cluster 4 (gets and sets of single values, Zipf popularity).

use rand::Rng as _;

use super::dist::{ClampedLogNormal, Popularity, Stream, rng};
use super::keyspace::{fill, make_key};
use super::{Object, Requests, Workload, WorkloadSpec};

/// Mean key size, bytes (`workloads.md` line 32).
pub const MEAN_KEY: u32 = 67;
/// Mean value size, bytes (`workloads.md` line 33).
pub const MEAN_VALUE: f64 = 2439.0;
/// Share of gets; the rest are sets (`workloads.md` line 34).
pub const GET_SHARE: f64 = 0.93;
/// Zipf exponent of key popularity (`workloads.md` line 35).
pub const ZIPF_ALPHA: f64 = 1.1004;
/// Share of requests for objects of at least [`LARGE_VALUE`] bytes (`workloads.md` line 37,
/// Cornflakes §6.1.4: "About 32% of the requests query objects larger than 512").
pub const LARGE_SHARE: f64 = 0.32;
/// The size that share is counted from.
pub const LARGE_VALUE: f64 = 512.0;
/// Default largest value: 1 MiB, memcached's (and Twemcache's) default item size limit, which
/// bounded the traced values too.
pub const DEFAULT_MAX_VALUE: u32 = 1024 * 1024;
/// Keys Cornflakes preloaded: "the first 4 million unique keys queried in the trace" (§6.1.4).
pub const DEFAULT_KEYS: u32 = 4_000_000;

/// A synthetic trace with the statistics of Twitter's cluster 4 (`workloads.md` lines 26-37,
/// "Twitter production cache traces ... cluster 4"; Cornflakes §6.1.4, Figures 7 and 12). The
/// raw trace is not available offline, so this is a synthetic stand-in (`workloads.md` line 28);
/// [`super::TwitterCsv`] replays the real trace for those who have it.
///
/// - Keys: uniform in 34..=100 bytes, mean 67 B (line 32). The table gives only the mean;
///   memcached keys are short and bounded (250 B), so a narrow spread around it is our
///   assumption.
/// - Values: one buffer each, lognormal rounded to whole bytes and clamped to
///   `[1, max_value]` (default 1 MiB, the memcached item limit). The two parameters are fitted
///   to two published figures: the clamped mean is 2439 B (line 33) and 32 % of sizes are at
///   least 512 B (line 37); that gives sigma about 2.32 and a median about 173 B. A lognormal
///   because it is the usual fit of cache value sizes with a long right tail and has finite
///   variance; a generalized Pareto fitted to the same two figures needs a shape of about 0.9,
///   an infinite-variance tail whose mean the clamp would decide.
/// - Requests: [`Op::Get`] with probability 0.93, else [`Op::Put`] (line 34) of the same
///   object with its own size. Cornflakes saw "about 8%" puts in its slice of the trace; we use
///   the table's 7 %.
/// - Popularity: Zipf 1.1004 over the keys (line 35), ranks scattered over key indices by a
///   seeded permutation; gets and sets share it.
///
/// Not modelled: the 29.33 % one-hit wonders (line 36; every key here is preloaded and can
/// recur), time-varying popularity, and Cornflakes' split of values larger than an MTU into
/// separate keys (our transports have no MTU). Sizes are independent of popularity, so the
/// *request*-weighted share of values >= 512 B is 32 % only on average over seeds: with Zipf
/// 1.1 the top key alone draws about a tenth of the requests.
///
/// Built from `spec`'s `keys` (default [`DEFAULT_KEYS`]), `zipf` (default [`ZIPF_ALPHA`]),
/// `twitter_max_value` and `memory_budget`, and `seed`.
pub fn build(spec: &WorkloadSpec, seed: u64) -> Result<Workload, String> {
    let values = value_sizes(spec.twitter_max_value).map_err(|e| format!("twitter: {e}"))?;
    let mut orng = rng(seed, Stream::Objects);
    let (objects, note) = fill(
        "twitter",
        spec.keys.unwrap_or(DEFAULT_KEYS),
        spec.memory_budget,
        |index| {
            // 34..=100: symmetric around the mean of 67.
            let key_len = orng.random_range(MEAN_KEY - MEAN_KEY / 2..=MEAN_KEY + MEAN_KEY / 2);
            let key = make_key("tw4:", index, key_len as usize, &mut orng);
            Object {
                key,
                parts: vec![values.sample(&mut orng)],
            }
        },
    )?;
    let popularity = Popularity::zipf(objects.len() as u32, spec.zipf.unwrap_or(ZIPF_ALPHA), seed)?;
    Ok(Workload {
        name: "twitter-c4".into(),
        objects,
        notes: note.into_iter().collect(),
        requests: Requests::GetsOrPuts(popularity, GET_SHARE),
        rng: rng(seed, Stream::Ops),
    })
}

/// The value-size law of the synthetic trace for `max_value`.
pub fn value_sizes(max_value: u32) -> Result<ClampedLogNormal, String> {
    ClampedLogNormal::fit_mean_and_tail(MEAN_VALUE, LARGE_VALUE, LARGE_SHARE, 1, max_value)
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Op};
    use super::*;

    fn small() -> WorkloadSpec {
        WorkloadSpec {
            keys: Some(100_000),
            ..WorkloadSpec::new(Kind::Twitter)
        }
    }

    #[test]
    fn sizes_match_cluster_4() {
        let w = build(&small(), 1).unwrap();
        let n = w.objects().len() as f64;
        assert_eq!(w.objects().len(), 100_000);
        let key_mean = w.objects().iter().map(|o| o.key.len() as f64).sum::<f64>() / n;
        assert!((key_mean - 67.0).abs() < 0.5, "mean key {key_mean}");
        assert!(w.objects().iter().all(|o| (34..=100).contains(&o.key.len())));
        let value_mean = w.objects().iter().map(|o| o.value_len() as f64).sum::<f64>() / n;
        assert!(
            (value_mean - MEAN_VALUE).abs() < 0.08 * MEAN_VALUE,
            "mean value {value_mean}"
        );
        let large = w.objects().iter().filter(|o| o.value_len() >= 512).count() as f64 / n;
        assert!((large - LARGE_SHARE).abs() < 0.01, "share >= 512 B {large}");
        assert!(
            w.objects()
                .iter()
                .all(|o| o.parts.len() == 1 && (1..=DEFAULT_MAX_VALUE).contains(&o.parts[0]))
        );
    }

    #[test]
    fn get_set_mix_and_popularity() {
        let mut w = build(
            &WorkloadSpec {
                keys: Some(10_000),
                ..small()
            },
            2,
        )
        .unwrap();
        let n = 200_000u32;
        let (mut gets, mut top) = (0u32, 0u32);
        let Requests::GetsOrPuts(popularity, _) = &w.requests else {
            panic!("twitter draws gets and puts")
        };
        let top_index = popularity.index_of_rank(1);
        for _ in 0..n {
            let i = match w.next_op() {
                Op::Get(i) => {
                    gets += 1;
                    i
                }
                Op::Put(i) => i,
                op => panic!("twitter issued {op:?}"),
            };
            assert!((i as usize) < w.objects().len());
            top += u32::from(i == top_index);
        }
        let get_share = f64::from(gets) / f64::from(n);
        assert!((get_share - GET_SHARE).abs() < 0.005, "get share {get_share}");
        let h: f64 = (1..=10_000).map(|r| f64::from(r).powf(-ZIPF_ALPHA)).sum();
        let top_share = f64::from(top) / f64::from(n);
        assert!(
            (top_share - 1.0 / h).abs() < 0.1 / h,
            "rank-1 share {top_share}, theory {}",
            1.0 / h
        );
    }
}
