//! The samplers every workload draws from: the seeded RNG streams, key popularity (uniform or
//! Zipf, with ranks scattered over the key space), value sizes (weighted bucket tables and a
//! clamped lognormal fitted to published figures); and the seeded stream of the load generator's
//! Poisson arrival gaps ([`Stream::Arrivals`], drawn by [`crate::harness::loadgen::Poisson`]).
//!
//! What it is NOT: a workload. Nothing here knows about keys, objects or operations; the
//! generators beside this file combine these samplers with the figures of `workloads.md`.

use rand::Rng;
use rand::distr::weighted::WeightedIndex;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_distr::{Distribution, LogNormal, Zipf};

/// The RNG of every workload: ChaCha8, whose output for a given seed and stream is fixed across
/// platforms and `rand_chacha` versions (unlike `rand::rngs::SmallRng`), so a seed names a run.
pub type WorkloadRng = ChaCha8Rng;

/// Independent streams of one seed, so that (for example) the objects of a key space do not
/// change when the generator draws a different number of operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Keys and value sizes of the key space.
    Objects,
    /// The request sequence (`Workload::next_op`).
    Ops,
    /// The permutation that scatters popularity ranks over the key space.
    Ranks,
    /// Poisson inter-arrival gaps.
    Arrivals,
}

/// The RNG for `stream` of `seed`.
pub fn rng(seed: u64, stream: Stream) -> WorkloadRng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(match stream {
        Stream::Objects => 0,
        Stream::Ops => 1,
        Stream::Ranks => 2,
        Stream::Arrivals => 3,
    });
    rng
}

/// Which key a request names: a popularity law over ranks 1..=n, and a seeded permutation from
/// rank to key index so that the most popular keys are not simply the first ones preloaded (as
/// YCSB's `ScrambledZipfianGenerator` does, and as real traces are: a key's popularity has
/// nothing to do with the order keys were first seen in).
#[derive(Debug, Clone)]
pub struct Popularity {
    law: Law,
    /// rank - 1 -> key index; `None` for the uniform law, where order does not matter.
    index_of_rank: Option<Vec<u32>>,
}

#[derive(Debug, Clone)]
enum Law {
    Uniform { n: u32 },
    Zipf { n: u32, alpha: f64, zipf: Zipf<f64> },
}

impl Popularity {
    /// Every one of `n` keys equally likely. `n` must be at least 1.
    pub fn uniform(n: u32) -> Result<Self, String> {
        if n == 0 {
            return Err("popularity over 0 keys".into());
        }
        Ok(Self {
            law: Law::Uniform { n },
            index_of_rank: None,
        })
    }

    /// Zipf popularity: rank `r` in 1..=n has probability proportional to `r^-alpha`. Sampling
    /// uses `rand_distr::Zipf` (rejection sampling, a bounded expected number of tries per
    /// sample, independent of `n`). Ranks are assigned to keys by a permutation drawn from
    /// `seed`'s `Ranks` stream.
    pub fn zipf(n: u32, alpha: f64, seed: u64) -> Result<Self, String> {
        if n == 0 {
            return Err("popularity over 0 keys".into());
        }
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(format!("Zipf exponent must be finite and >= 0, found {alpha}"));
        }
        let zipf = Zipf::new(f64::from(n), alpha).map_err(|e| format!("Zipf({n}, {alpha}): {e}"))?;
        let mut index_of_rank: Vec<u32> = (0..n).collect();
        index_of_rank.shuffle(&mut rng(seed, Stream::Ranks));
        Ok(Self {
            law: Law::Zipf { n, alpha, zipf },
            index_of_rank: Some(index_of_rank),
        })
    }

    /// How many keys the law ranges over.
    pub fn len(&self) -> u32 {
        match self.law {
            Law::Uniform { n } | Law::Zipf { n, .. } => n,
        }
    }

    /// Always false: a popularity law covers at least one key.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The Zipf exponent, or `None` for the uniform law.
    pub fn alpha(&self) -> Option<f64> {
        match self.law {
            Law::Uniform { .. } => None,
            Law::Zipf { alpha, .. } => Some(alpha),
        }
    }

    /// A popularity rank in 1..=n (1 is the most popular), before the permutation to keys.
    pub fn sample_rank<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        match &self.law {
            Law::Uniform { n } => rng.random_range(1..=*n),
            // The sampler returns an integral float in [1, n]; the clamp guards the cast.
            Law::Zipf { n, zipf, .. } => (zipf.sample(rng) as u32).clamp(1, *n),
        }
    }

    /// The key index that holds popularity rank `rank` (1-based).
    pub fn index_of_rank(&self, rank: u32) -> u32 {
        match &self.index_of_rank {
            Some(map) => map[(rank - 1) as usize],
            None => rank - 1,
        }
    }

    /// A key index in 0..n, drawn by popularity.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        self.index_of_rank(self.sample_rank(rng))
    }
}

/// How a size is drawn inside a bucket of a [`SizeBuckets`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Within {
    /// Uniform over the integers of `[lo, hi)` (the reading of the Google table in
    /// `workloads.md`: "then a size uniformly in [lo, hi)").
    Uniform,
    /// Log-uniform over `[lo, hi)`: density proportional to `1/x`, for wide buckets of a
    /// decreasing density (the CDN table, whose buckets span a factor of 2 to 7).
    LogUniform,
}

/// A size distribution given as a table of buckets `[lo, hi)` with weights: pick a bucket by
/// weight, then a size inside it.
#[derive(Debug, Clone)]
pub struct SizeBuckets {
    bounds: Vec<(u32, u32)>,
    shares: Vec<f64>,
    pick: WeightedIndex<f64>,
    within: Within,
}

impl SizeBuckets {
    /// A table of `(lo, hi, weight)` rows; weights need not sum to 1 (they are normalized).
    /// Each row needs `1 <= lo < hi` and a finite weight >= 0, and at least one weight > 0.
    pub fn new(table: &[(u32, u32, f64)], within: Within) -> Result<Self, String> {
        for &(lo, hi, w) in table {
            if lo == 0 || lo >= hi || !(w.is_finite() && w >= 0.0) {
                return Err(format!("bad size bucket [{lo}, {hi}) with weight {w}"));
            }
        }
        let pick = WeightedIndex::new(table.iter().map(|r| r.2)).map_err(|e| format!("size buckets: {e}"))?;
        let total: f64 = table.iter().map(|r| r.2).sum();
        Ok(Self {
            bounds: table.iter().map(|r| (r.0, r.1)).collect(),
            shares: table.iter().map(|r| r.2 / total).collect(),
            pick,
            within,
        })
    }

    /// The buckets' `[lo, hi)` bounds, in table order.
    pub fn bounds(&self) -> &[(u32, u32)] {
        &self.bounds
    }

    /// Each bucket's probability (the normalized weights), in table order.
    pub fn shares(&self) -> &[f64] {
        &self.shares
    }

    /// The distribution's mean, from the table (exact for [`Within::Uniform`]; for
    /// [`Within::LogUniform`] the continuous mean `(hi - lo) / ln(hi / lo)`, which the sampler's
    /// rounding down lowers by less than one byte).
    pub fn mean(&self) -> f64 {
        self.bounds
            .iter()
            .zip(&self.shares)
            .map(|(&(lo, hi), p)| {
                let (lo, hi) = (f64::from(lo), f64::from(hi));
                p * match self.within {
                    Within::Uniform => (lo + hi - 1.0) / 2.0,
                    Within::LogUniform if hi - lo <= 1.0 => lo,
                    Within::LogUniform => (hi - lo) / (hi / lo).ln(),
                }
            })
            .sum()
    }

    /// A size and the index of the bucket it came from.
    pub fn sample_with_bucket<R: Rng + ?Sized>(&self, rng: &mut R) -> (u32, usize) {
        let b = self.pick.sample(rng);
        let (lo, hi) = self.bounds[b];
        let size = match self.within {
            Within::Uniform => rng.random_range(lo..hi),
            Within::LogUniform => {
                let (l, h) = (f64::from(lo).ln(), f64::from(hi).ln());
                let x = (l + rng.random::<f64>() * (h - l)).exp().floor();
                // `as` saturates; the clamp keeps float rounding inside the bucket.
                (x as u32).clamp(lo, hi - 1)
            }
        };
        (size, b)
    }

    /// A size.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        self.sample_with_bucket(rng).0
    }
}

/// A lognormal size rounded to whole bytes and clamped to `[min, max]`.
#[derive(Debug, Clone)]
pub struct ClampedLogNormal {
    mu: f64,
    sigma: f64,
    min: u32,
    max: u32,
    dist: LogNormal<f64>,
}

impl ClampedLogNormal {
    /// `exp(N(mu, sigma^2))`, rounded, clamped to `[min, max]`. Needs `sigma > 0`, `1 <= min <= max`.
    pub fn new(mu: f64, sigma: f64, min: u32, max: u32) -> Result<Self, String> {
        if !(mu.is_finite() && sigma.is_finite() && sigma > 0.0) {
            return Err(format!(
                "lognormal needs finite mu and sigma > 0, found mu {mu} sigma {sigma}"
            ));
        }
        if min == 0 || min > max {
            return Err(format!(
                "lognormal clamp needs 1 <= min <= max, found [{min}, {max}]"
            ));
        }
        let dist = LogNormal::new(mu, sigma).map_err(|e| format!("lognormal: {e}"))?;
        Ok(Self {
            mu,
            sigma,
            min,
            max,
            dist,
        })
    }

    /// The lognormal whose clamped mean is `mean` and whose share of sizes `>= threshold` is
    /// `tail_share`: two published figures fix the two parameters. The tail share fixes
    /// `mu = ln(threshold) - sigma * z` with `z = Phi^-1(1 - tail_share)`; the clamped mean then
    /// grows with `sigma`, which bisection finds.
    pub fn fit_mean_and_tail(
        mean: f64,
        threshold: f64,
        tail_share: f64,
        min: u32,
        max: u32,
    ) -> Result<Self, String> {
        // Written so that NaN fails too.
        let valid =
            tail_share > 0.0 && tail_share < 1.0 && threshold > f64::from(min) && threshold < f64::from(max);
        if !valid {
            return Err(format!(
                "cannot fit a share {tail_share} of sizes >= {threshold} inside [{min}, {max}]"
            ));
        }
        let z = normal_quantile(1.0 - tail_share);
        let mu_of = |sigma: f64| threshold.ln() - sigma * z;
        let mean_of = |sigma: f64| clamped_lognormal_mean(mu_of(sigma), sigma, min, max);
        let (mut lo, mut hi) = (1e-3, 30.0);
        if !(mean_of(lo) < mean && mean < mean_of(hi)) {
            return Err(format!(
                "no lognormal in [{min}, {max}] has mean {mean} and a share {tail_share} of sizes >= {threshold}"
            ));
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mean_of(mid) < mean {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let sigma = 0.5 * (lo + hi);
        Self::new(mu_of(sigma), sigma, min, max)
    }

    /// The underlying normal's mean (the log of the median size).
    pub fn mu(&self) -> f64 {
        self.mu
    }

    /// The underlying normal's standard deviation.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The mean after clamping (before rounding, which moves it by well under a byte).
    pub fn mean(&self) -> f64 {
        clamped_lognormal_mean(self.mu, self.sigma, self.min, self.max)
    }

    /// A size.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let x = self.dist.sample(rng).round();
        // `as` saturates (infinity -> u32::MAX), then the clamp applies the bounds.
        (x as u32).clamp(self.min, self.max)
    }
}

/// `E[clamp(X, a, b)]` for `X = exp(N(mu, sigma^2))`.
fn clamped_lognormal_mean(mu: f64, sigma: f64, a: u32, b: u32) -> f64 {
    let (a, b) = (f64::from(a), f64::from(b));
    let (la, lb) = (a.ln(), b.ln());
    let s2 = sigma * sigma;
    let middle =
        (mu + s2 / 2.0).exp() * (normal_cdf((lb - mu - s2) / sigma) - normal_cdf((la - mu - s2) / sigma));
    a * normal_cdf((la - mu) / sigma) + middle + b * (1.0 - normal_cdf((lb - mu) / sigma))
}

/// The standard normal CDF, from the complementary error function (Numerical Recipes' `erfcc`,
/// fractional error below 1.2e-7 everywhere): plenty for fitting size distributions.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// The standard normal quantile `Phi^-1(p)` for `p` in (0, 1), by bisection on [`normal_cdf`]
/// (only used when a workload is built, never per sample).
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generalized harmonic number `H(n, alpha)`.
    fn harmonic(n: u32, alpha: f64) -> f64 {
        (1..=n).map(|r| f64::from(r).powf(-alpha)).sum()
    }

    #[test]
    fn zipf_top_ranks_match_theory() {
        for (n, alpha) in [
            (1_000u32, 0.99),
            (100_000, 0.99),
            (1_000_000, 0.99),
            (10_000, 1.1004),
        ] {
            let pop = Popularity::zipf(n, alpha, 7).unwrap();
            let mut rng = rng(1, Stream::Ops);
            let samples = 200_000u32;
            let mut counts = [0u32; 3];
            for _ in 0..samples {
                let r = pop.sample_rank(&mut rng);
                assert!((1..=n).contains(&r));
                if r <= 3 {
                    counts[(r - 1) as usize] += 1;
                }
            }
            let h = harmonic(n, alpha);
            for (i, &c) in counts.iter().enumerate() {
                let expected = (i as f64 + 1.0).powf(-alpha) / h;
                let got = f64::from(c) / f64::from(samples);
                assert!(
                    (got - expected).abs() <= 0.10 * expected,
                    "n {n} alpha {alpha} rank {}: share {got}, theory {expected}",
                    i + 1
                );
            }
        }
    }

    #[test]
    fn zipf_ranks_are_scattered_over_keys() {
        let pop = Popularity::zipf(1_000, 0.99, 3).unwrap();
        let mut seen = vec![false; 1_000];
        for r in 1..=1_000 {
            let i = pop.index_of_rank(r) as usize;
            assert!(!seen[i], "rank -> index is a permutation");
            seen[i] = true;
        }
        let top: Vec<u32> = (1..=10).map(|r| pop.index_of_rank(r)).collect();
        assert_ne!(
            top,
            (0..10).collect::<Vec<_>>(),
            "popular keys are not the first indices"
        );
        // Same seed, same permutation.
        let again = Popularity::zipf(1_000, 0.99, 3).unwrap();
        assert!((1..=1_000).all(|r| again.index_of_rank(r) == pop.index_of_rank(r)));
    }

    #[test]
    fn uniform_popularity_covers_all_keys() {
        let pop = Popularity::uniform(10).unwrap();
        let mut rng = rng(5, Stream::Ops);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[pop.sample(&mut rng) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
        assert!(Popularity::uniform(0).is_err());
        assert!(Popularity::zipf(0, 1.0, 0).is_err());
        assert!(Popularity::zipf(10, f64::NAN, 0).is_err());
    }

    #[test]
    fn normal_cdf_and_quantile() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841_344_746).abs() < 1e-6);
        assert!((normal_cdf(-1.959_963_985) - 0.025).abs() < 1e-6);
        assert!((normal_quantile(0.68) - 0.467_698_799).abs() < 1e-5);
        assert!((normal_quantile(normal_cdf(2.5)) - 2.5).abs() < 1e-5);
    }

    #[test]
    fn fitted_lognormal_hits_both_figures() {
        let d = ClampedLogNormal::fit_mean_and_tail(2439.0, 512.0, 0.32, 1, 1 << 20).unwrap();
        assert!((d.mean() - 2439.0).abs() < 0.5, "analytic mean {}", d.mean());
        assert!((1.0 - normal_cdf((512f64.ln() - d.mu) / d.sigma) - 0.32).abs() < 1e-6);
        let mut rng = rng(11, Stream::Objects);
        let n = 300_000u32;
        let (mut sum, mut tail) = (0u64, 0u32);
        for _ in 0..n {
            let s = d.sample(&mut rng);
            assert!((1..=1 << 20).contains(&s));
            sum += u64::from(s);
            tail += u32::from(s >= 512);
        }
        let mean = sum as f64 / f64::from(n);
        let share = f64::from(tail) / f64::from(n);
        assert!((mean - 2439.0).abs() < 0.05 * 2439.0, "sample mean {mean}");
        assert!((share - 0.32).abs() < 0.01, "share >= 512 B: {share}");
        assert!(ClampedLogNormal::fit_mean_and_tail(1e9, 512.0, 0.32, 1, 1 << 20).is_err());
    }

    #[test]
    fn log_uniform_buckets_stay_inside() {
        let t = SizeBuckets::new(
            &[(1000, 2000, 1.0), (2000, 2001, 1.0), (5, 6, 0.0)],
            Within::LogUniform,
        )
        .unwrap();
        let mut rng = rng(2, Stream::Objects);
        for _ in 0..10_000 {
            let (s, b) = t.sample_with_bucket(&mut rng);
            let (lo, hi) = t.bounds()[b];
            assert!((lo..hi).contains(&s));
            assert_ne!(b, 2, "zero-weight bucket drawn");
        }
        assert!(SizeBuckets::new(&[(0, 5, 1.0)], Within::Uniform).is_err());
        assert!(SizeBuckets::new(&[(5, 5, 1.0)], Within::Uniform).is_err());
        assert!(SizeBuckets::new(&[(1, 5, 0.0)], Within::Uniform).is_err());
    }
}
