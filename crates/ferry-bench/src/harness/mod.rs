//! Measurement helpers shared by the benchmarks: thread pinning, per-thread CPU time, run
//! budgets, medians, and a latency histogram.

use std::time::{Duration, Instant};

pub mod report;
#[allow(unsafe_code)]
mod sys;

/// How long a run goes on.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// For this long.
    Time(Duration),
    /// This many messages (or requests).
    Count(u64),
}

impl Budget {
    /// A tenth of it (at least 1 ms or 1 message): the warm-up before the measured window.
    pub fn warmup(self) -> Budget {
        match self {
            Budget::Time(d) => Budget::Time((d / 10).max(Duration::from_millis(1))),
            Budget::Count(n) => Budget::Count((n / 10).max(1)),
        }
    }
}

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    sys::pin_current_thread(cpu).map_err(|e| format!("pinning to CPU {cpu}: {e}"))
}

/// CPU time used by the calling thread so far, user plus system (`getrusage(RUSAGE_THREAD)`).
///
/// Only the calling thread's own time: time the kernel spends on its behalf in interrupt
/// context, or in other threads, is not included.
pub fn thread_cpu_time() -> Duration {
    // getrusage(RUSAGE_THREAD) on the calling thread cannot fail on Linux; zero is a safe answer.
    sys::thread_cpu_time().unwrap_or_default()
}

/// CPUs this process may run on (for choosing where to pin).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The median of `values` (the mean of the middle two for an even count); `None` if empty.
/// NaNs sort last.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Splits `total` into `count` near-equal positive parts (the first ones one larger), for
/// fields of equal size that add up to a message size.
pub fn split_evenly(total: usize, count: usize) -> Vec<usize> {
    let count = count.max(1);
    (0..count)
        .map(|i| total / count + usize::from(i < total % count))
        .collect()
}

/// Sub-buckets per power of two in [`Histogram`]: values are kept to within 1/1024 (0.1 %).
const SUB_BITS: u32 = 10;
const SUB: usize = 1 << SUB_BITS;

/// A log-linear histogram of nanosecond values, like HdrHistogram with three significant
/// digits: exact below 2048, then 1024 buckets per power of two. Recording is a few
/// instructions and the memory is fixed (about 450 KiB), so every round trip of a long run can
/// be recorded.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: vec![0; (64 - SUB_BITS as usize + 1) * SUB],
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < 2 * SUB as u64 {
            v as usize
        } else {
            let shift = 63 - v.leading_zeros() - SUB_BITS;
            (shift as usize + 1) * SUB + ((v >> shift) as usize - SUB)
        }
    }

    /// The smallest value that falls in bucket `i`.
    fn lowest(i: usize) -> u64 {
        if i < 2 * SUB {
            i as u64
        } else {
            let shift = (i / SUB - 1) as u32;
            ((i % SUB + SUB) as u64) << shift
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Records a duration in nanoseconds.
    #[inline]
    pub fn record_duration(&mut self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The mean; `None` if empty.
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }

    /// The smallest value recorded; `None` if empty.
    pub fn min(&self) -> Option<u64> {
        (self.total > 0).then_some(self.min)
    }

    /// The largest value recorded; `None` if empty.
    pub fn max(&self) -> Option<u64> {
        (self.total > 0).then_some(self.max)
    }

    /// The value at quantile `q` (0..=1): the lowest value of the bucket holding the
    /// `ceil(q * count)`-th smallest value (within 0.1 % of it); `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Self::lowest(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// The cost of one `Instant::now()` (median of consecutive readings), in nanoseconds: what
/// every timed sample carries on top of what it measures.
pub fn clock_cost_ns() -> f64 {
    let mut deltas: Vec<f64> = (0..2001)
        .map(|_| {
            let a = Instant::now();
            let b = Instant::now();
            (b - a).as_nanos() as f64
        })
        .collect();
    deltas.sort_by(f64::total_cmp);
    deltas[deltas.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_contiguous_and_tight() {
        let mut prev = None;
        for v in (0..5000u64).chain([1 << 20, (1 << 20) + 1023, u64::MAX / 3, u64::MAX]) {
            let i = Histogram::index(v);
            assert!(Histogram::lowest(i) <= v, "{v}");
            assert!(v - Histogram::lowest(i) <= v / SUB as u64, "{v}");
            if let Some((pv, pi)) = prev {
                if v == pv + 1 {
                    assert!(i == pi || i == pi + 1, "{v}");
                }
            }
            prev = Some((v, i));
        }
        assert!(Histogram::index(u64::MAX) < Histogram::default().counts.len());
    }

    #[test]
    fn histogram_quantiles() {
        let mut h = Histogram::default();
        assert_eq!(h.quantile(0.5), None);
        for v in 1..=1000u64 {
            h.record(v);
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.quantile(0.5), Some(500));
        assert_eq!(h.quantile(0.99), Some(990));
        assert_eq!(h.quantile(0.999), Some(999));
        assert_eq!(h.quantile(1.0), Some(1000));
        assert_eq!(h.quantile(0.0), Some(1));
        assert_eq!(h.mean(), Some(500.5));
        h.record(10_000_000);
        let top = h.quantile(1.0).unwrap();
        assert!(top <= 10_000_000 && top > 9_990_000);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn equal_parts() {
        assert_eq!(split_evenly(16, 16), vec![1; 16]);
        assert_eq!(split_evenly(10, 4), vec![3, 3, 2, 2]);
        assert_eq!(split_evenly(10, 4).iter().sum::<usize>(), 10);
    }

    #[test]
    fn cpu_time_advances() {
        let before = thread_cpu_time();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(thread_cpu_time() > before);
    }
}
