//! Measurement helpers shared by the benchmarks: thread pinning, per-thread CPU time, medians.

use std::time::Duration;

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    super::sys::pin_current_thread(cpu).map_err(|e| format!("pinning to CPU {cpu}: {e}"))
}

/// CPU time used by the calling thread so far, user plus system (`getrusage(RUSAGE_THREAD)`).
///
/// Only the calling thread's own time: time the kernel spends on its behalf in interrupt
/// context, or in other threads, is not included.
pub fn thread_cpu_time() -> Duration {
    // getrusage(RUSAGE_THREAD) on the calling thread cannot fail on Linux; zero is a safe answer.
    super::sys::thread_cpu_time().unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;

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
