//! Measurement helpers shared by the benchmarks: thread pinning, per-thread CPU time, run
//! budgets, medians, a latency histogram ([`hdrhistogram`]), JSON records ([`report`]),
//! progress bars ([`progress`]), the command-line options every benchmark takes ([`cli`]) and
//! the gRPC peers' runtime and connections ([`grpc`]).

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::BoxError;

pub mod cli;
pub mod closed;
pub mod cpu;
pub mod grpc;
pub mod lifecycle;
pub mod load;
pub mod loadgen;
pub mod progress;
pub mod report;
#[allow(unsafe_code)]
mod sys;
pub mod syscalls;
pub mod table;
pub mod window;

pub use cpu::thread_cpu_time;

/// What carries a benchmark's requests (`tcp`, `shm` or `udp`, on the command line and in the
/// results).
#[derive(
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// TCP loopback (`ferry-net`).
    Tcp,
    /// Shared memory (`ferry-shm`).
    Shm,
    /// UDP (`ferry-dgram`: sessions, credits and retransmission over datagrams). `ferry bench
    /// rpc` only, and only when `--transports` names it (or `--net veth`).
    Udp,
    /// The same datagram sessions over AF_XDP sockets (`ferry-dgram`'s XDP driver): `ferry
    /// bench rpc --net veth` only, where each host has an interface of its own.
    Xdp,
}

impl Transport {
    /// What runs unless `--transports` says otherwise: TCP, then shared memory.
    pub const DEFAULT: [Transport; 2] = [Transport::Tcp, Transport::Shm];

    /// `chosen`, or [`DEFAULT`](Self::DEFAULT) if none: for the benchmarks that run over TCP
    /// and shared memory only (`ferry bench kv`, `calibrate`, `flatbuffers`), which refuse UDP
    /// and AF_XDP.
    pub fn tcp_or_shm(chosen: &[Transport], bench: &str) -> Result<Vec<Transport>, String> {
        if let Some(t) = chosen
            .iter()
            .find(|t| matches!(t, Transport::Udp | Transport::Xdp))
        {
            return Err(format!(
                "`ferry bench {bench}` runs over tcp and shm; {} runs in `ferry bench rpc --transports ...,{}`",
                t.name(),
                t.name()
            ));
        }
        Ok(crate::harness::or_all(chosen, &Transport::DEFAULT))
    }
}

/// How a client reaches a server over TCP: plaintext, or TLS (`ferry bench redis --tls`,
/// `ferry bench rpc --tls`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Link {
    /// Plain TCP.
    #[default]
    #[serde(rename = "plain")]
    Plain,
    /// TLS 1.3, the server authenticated by a CA made for the run.
    #[serde(rename = "tls")]
    Tls,
}

impl Link {
    /// Whether it is [`Link::Plain`].
    pub fn is_plain(&self) -> bool {
        *self == Link::Plain
    }

    /// What follows a case's name in tables: nothing, or " TLS".
    pub fn suffix(self) -> &'static str {
        match self {
            Link::Plain => "",
            Link::Tls => " TLS",
        }
    }
}

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

    /// For the table's header: "250 ms" or "300 messages", with `unit` naming what is counted.
    pub fn describe(self, unit: &str) -> String {
        match self {
            Budget::Time(d) => format!("{} ms", d.as_millis()),
            Budget::Count(n) => format!("{n} {unit}"),
        }
    }

    /// For the results' settings: `{"duration_ms": ..}` or `{unit: n}`.
    pub fn to_json(self, unit: &str) -> Value {
        match self {
            Budget::Time(d) => json!({"duration_ms": d.as_millis() as u64}),
            Budget::Count(n) => json!({ unit: n }),
        }
    }
}

/// An enum's name in tables and results: its serde name (`ferry-copy`, `tcp`), which clap's
/// value names match wherever the enum is also a command-line value.
pub trait Named: serde::Serialize {
    /// The name.
    fn name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

impl<T: serde::Serialize> Named for T {}

/// Rounds `v` to `digits` decimal digits, for the JSON records.
pub fn round(v: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (v * p).round() / p
}

/// Accepts one connection on `listener`, giving up after 10 s, so that a peer that failed
/// before connecting cannot hang the benchmark.
pub fn accept(listener: &TcpListener) -> Result<TcpStream, BoxError> {
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(e) => return Err(format!("accept: {e}").into()),
        }
    }
}

/// Pins the calling thread to CPU `cpu` ([`ferry_transport::pin_current_thread`]), with an
/// error that names the CPU.
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    ferry_transport::pin_current_thread(cpu).map_err(|e| format!("pinning to CPU {cpu}: {e}"))
}

/// Runs `f` on a thread `who` of its own, pinned to `cpu` (the caller's affinity, which
/// [`cpus`] and the results' machine record read, stays as it was); its panic is named after
/// `who`.
pub fn on_cpu<T: Send>(
    who: &str,
    cpu: usize,
    f: impl FnOnce() -> Result<T, BoxError> + Send,
) -> Result<T, BoxError> {
    std::thread::scope(|s| {
        let thread = std::thread::Builder::new()
            .name(who.to_owned())
            .spawn_scoped(s, || {
                pin_current_thread(cpu)?;
                f()
            })
            .map_err(|e| format!("{who}: spawning the thread: {e}"))?;
        thread
            .join()
            .unwrap_or_else(|_| Err(format!("{who}: the thread panicked").into()))
    })
}

/// What a benchmark's thread `who` (`"client"`) returned, its error or panic named after it.
pub fn joined<T>(who: &str, r: std::thread::Result<Result<T, BoxError>>) -> Result<T, BoxError> {
    match r {
        Ok(r) => r.map_err(|e| format!("{who}: {e}").into()),
        Err(_) => Err(format!("{who}: the thread panicked").into()),
    }
}

/// The values `chosen` on the command line, or `all` if none were.
pub fn or_all<T: Clone>(chosen: &[T], all: &[T]) -> Vec<T> {
    if chosen.is_empty() { all } else { chosen }.to_vec()
}

/// `items` sorted, each once.
pub fn sorted<T: Ord>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = items.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `items` each once, in the order they first appear.
pub fn unique<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for item in items {
        if !v.contains(&item) {
            v.push(item);
        }
    }
    v
}

/// `server`, or `client` on a machine with one CPU, where the two sides share it (said on
/// stderr: busy-polling sides then wait for the scheduler).
pub fn server_cpu(client: usize, server: usize) -> usize {
    if cpus() > 1 {
        return server;
    }
    eprintln!("warning: one CPU: client and server share it, and busy-polling sides wait for the scheduler");
    client
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

/// The median over repetitions of `a[i] / b[i]`: a repetition runs what a target compares
/// close together in time, so both sides of each ratio see the machine in the same state.
/// The ratio of the medians if the two differ in repetitions.
pub fn paired(a: &[f64], b: &[f64]) -> f64 {
    if a.len() == b.len() && !a.is_empty() {
        let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        return median(&ratios).unwrap_or(f64::NAN);
    }
    median(a).unwrap_or(f64::NAN) / median(b).unwrap_or(f64::NAN)
}

/// Splits `total` into `count` near-equal positive parts (the first ones one larger), for
/// fields of equal size that add up to a message size.
pub fn split_evenly(total: usize, count: usize) -> Vec<usize> {
    let count = count.max(1);
    (0..count)
        .map(|i| total / count + usize::from(i < total % count))
        .collect()
}

/// A latency histogram of nanosecond values: [`hdrhistogram`] with three significant digits
/// (exact below 2048, then within 0.1 %) over the whole `u64` range, allocated once (about
/// 450 KiB) so that recording never allocates: a few instructions, so every round trip of a
/// long run can be recorded.
#[derive(Debug, Clone)]
pub struct Histogram(hdrhistogram::Histogram<u64>);

impl Default for Histogram {
    fn default() -> Histogram {
        // Bounds 1..=u64::MAX and three significant digits are within what hdrhistogram
        // accepts (high >= 2 * low, precision 0..=5), so this cannot fail.
        let h = hdrhistogram::Histogram::new_with_bounds(1, u64::MAX, 3)
            .expect("1..=u64::MAX at 3 significant digits is a valid histogram");
        Histogram(h)
    }
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.0.saturating_record(v);
    }

    /// Records a duration in nanoseconds.
    #[inline]
    pub fn record_duration(&mut self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The mean; `None` if empty.
    pub fn mean(&self) -> Option<f64> {
        (!self.0.is_empty()).then(|| self.0.mean())
    }

    /// The smallest value recorded; `None` if empty.
    pub fn min(&self) -> Option<u64> {
        (!self.0.is_empty()).then(|| self.0.min())
    }

    /// The largest value recorded; `None` if empty.
    pub fn max(&self) -> Option<u64> {
        (!self.0.is_empty()).then(|| self.0.max())
    }

    /// The value at quantile `q` (0..=1), within 0.1 %; `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        (!self.0.is_empty()).then(|| self.0.value_at_quantile(q.clamp(0.0, 1.0)))
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
        h.record(u64::MAX);
        assert_eq!(h.count(), 1002);
        assert!(h.quantile(1.0).unwrap() >= u64::MAX / 1024 * 1023);
        assert!(h.max().unwrap() >= u64::MAX / 1024 * 1023);
        let top = h.quantile(1001.0 / 1002.0).unwrap();
        assert!((10_000_000..10_010_000).contains(&top), "{top}");
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
}
