//! `ferry bench shm`: request/response round trips of Ferry messages between two threads pinned
//! to different cores, side by side in one run (`docs/benchmarks/shm.md` has the method and
//! the results):
//!
//! - **raw** (`raw.rs`): two cache lines, the client writes a sequence number into one and
//!   spins until the server echoes it into the other; the floor.
//! - **shm**: [`ShmConnection`]; the client sends a [`Record`] with one pool-resident field of
//!   the payload size, the server validates it in place, checks the field and answers with a
//!   record of the same shape from its own pool. `spin` busy-polls and never sleeps; `default`
//!   is `ShmConfig::default()` (spin 50 µs, then sleep on an eventfd).
//! - **tcp**: the same client and server code over a [`Connection`] on loopback (gather mode);
//!   `poll` sleeps in `poll(2)`, `spin` busy-polls a non-blocking receive.
//!
//! One run is one connection, with `in_flight` requests kept outstanding; a warm-up, then the
//! window between a `MARK` and an `END` exchange:
//!
//! ```text
//!  client (CPU a)  warm-up │ MARK ⇄ │ t0, cpu0 ── requests, in_flight outstanding ── t1, cpu1 │ END ⇄
//!  server (CPU b)  warm-up │ MARK: cpu0 ── validate, touch, reply per request ─────── END: cpu1 │
//! ```
//!
//! Latency is from just before a request is built to just after its response is checked (every
//! round trip with one in flight, every 16th with more); CPU per request is each thread's
//! over its window.

use std::path::Path;

use ferry::wire::DEFAULT_THRESHOLD;
use ferry_shm::ShmConfig;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::BoxError;
use crate::harness::Named;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::progress::Progress;
use crate::harness::{self, Budget};

mod client;
mod diagnostics;
mod endpoint;
mod link;
mod raw;
mod record;
mod report;
mod server;
mod wire;

pub use raw::run_raw;
pub use record::RunResult;

/// Defaults of the full run and of `--quick`.
const PAYLOADS: [usize; 2] = [64, 4096];
const IN_FLIGHT: [usize; 2] = [32, 128];
const FULL_MS: u64 = 500;
const QUICK_MS: u64 = 100;
const FULL_REPS: usize = 5;
const QUICK_REPS: usize = 3;

/// Bytes the raw ping-pong moves each way: the sequence number.
const RAW_PAYLOAD: usize = 8;

/// Options of `ferry bench shm`. `--quick` runs 100 ms per repetition, 3 repetitions: under
/// 30 s. `--plot` draws requests/s and latency against requests in flight, and latency
/// against payload.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Transports to run, comma-separated (default: raw,shm,tcp).
    #[arg(long, value_delimiter = ',')]
    transports: Vec<TransportKind>,
    /// Payload sizes of the one-request-in-flight round trips, comma-separated (default
    /// 64,4096). The pipelined runs use the smallest, and shm also the largest.
    #[arg(long, value_delimiter = ',')]
    payloads: Vec<usize>,
    /// Requests in flight of the throughput runs, comma-separated (default 32,128).
    #[arg(long, value_delimiter = ',')]
    in_flight: Vec<usize>,
    /// Repetitions per configuration, the configurations interleaved; every reported number is
    /// the median over them (default 5, or 3 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// CPU for the client thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU for the server thread (the client's when only one is available).
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
    /// TCP congestion control set on both ends of the TCP runs.
    #[arg(long, default_value = "cubic")]
    congestion: String,
}

/// What carries the round trips.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// Two threads spinning on two shared cache lines: the floor.
    Raw,
    /// `ferry-shm`.
    Shm,
    /// `ferry-net` over TCP loopback.
    Tcp,
}

/// How a side waits for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Notify {
    /// Busy-poll, never sleep (raw; shm with `spin: Duration::MAX, never_sleep: true`; tcp
    /// with a non-blocking receive polled in a loop).
    Spin,
    /// `ShmConfig::default()`: busy-poll 50 µs, then sleep on the eventfd doorbell.
    Default,
    /// The blocking TCP connection: sleep in `poll(2)` until the socket is readable.
    Poll,
}

/// One configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    transport: TransportKind,
    notify: Notify,
    payload: usize,
    in_flight: usize,
}

/// A run's settings.
#[derive(Debug, Clone, Copy)]
struct Spec {
    point: Point,
    budget: Budget,
    /// (client, server)
    cpus: (usize, usize),
}

impl Spec {
    /// Whether this is a TCP run that busy-polls (shm spins in its own `recv`).
    fn tcp_spins(&self) -> bool {
        self.point.transport == TransportKind::Tcp && self.point.notify == Notify::Spin
    }
}

/// Everything a sweep measured.
#[derive(Debug, Serialize, Deserialize)]
struct Records {
    /// One per configuration.
    records: Vec<record::Record>,
    /// Absent when no shm configuration ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    diagnostics: Option<diagnostics::Diagnostics>,
}

/// The sweep: every configuration, the repetitions interleaved, then the diagnostics.
struct Shm<'a> {
    args: &'a Args,
    budget: Budget,
    reps: usize,
    cpus: (usize, usize),
    payloads: Vec<usize>,
    points: Vec<Point>,
}

impl<'a> Shm<'a> {
    fn new(args: &'a Args) -> Shm<'a> {
        let server_cpu = harness::server_cpu(args.client_cpu, args.server_cpu);
        let payloads = harness::sorted(harness::or_all(&args.payloads, &PAYLOADS));
        Shm {
            args,
            budget: args.common.budget(QUICK_MS, FULL_MS),
            reps: args
                .reps
                .unwrap_or(if args.common.quick { QUICK_REPS } else { FULL_REPS })
                .max(1),
            cpus: (args.client_cpu, server_cpu),
            points: plan(args, &payloads),
            payloads,
        }
    }

    fn settings(&self, clock_ns: f64) -> Value {
        let (shm, tcp) = (ShmConfig::default(), link::tcp_config());
        json!({
            "budget": self.budget.to_json("requests"),
            "warmup": "a tenth of the budget, before the measured window",
            "reps": self.reps,
            "statistic": "median over repetitions of each run's percentile, rate and CPU figures; byte counts summed over repetitions",
            "latency": "from just before a request is built to just after its response is validated and touched; HdrHistogram, three significant digits (within 0.1 %); one in flight: every round trip, one clock reading each; pipelined: every 16th request",
            "clock_cost_ns": clock_ns,
            "client_cpu": self.cpus.0,
            "server_cpu": self.cpus.1,
            "request": "ferry::sample::Record with one field of `payload` bytes, a pool-resident SharedBuf of the sender's pool",
            "response": "the same shape from the server's own pool; the server validates the request in place and checks the field's length, first and last byte (the client likewise)",
            "context_threshold": DEFAULT_THRESHOLD,
            "raw": "two AtomicU64 on separate 128-byte lines; client stores a sequence number and spins until the server echoes it; payload 8 = the sequence number",
            "shm": {
                "pool": "shared (memfd), 2 MiB regions, 64 MiB, huge pages and mlock best effort; one per side",
                "block_size": shm.block_size,
                "credits": shm.credits,
                "spin_default_us": shm.spin.as_micros() as u64,
                "spin": "Duration::MAX",
            },
            "tcp": {
                "mode": tcp.mode.name(),
                "batch_frames": tcp.batch_frames,
                "batch_bytes": tcp.batch_bytes,
                "congestion": self.args.congestion,
                "spin": "receive half non-blocking, recv retried in a busy loop",
                "poll": "blocking recv (poll(2))",
            },
        })
    }
}

/// The runs, in the order they are interleaved within a repetition: the floor; every payload
/// one in flight over shm and tcp (both notifications each); the smallest payload at every
/// in-flight count; the largest over shm spin at the most in flight.
fn plan(args: &Args, payloads: &[usize]) -> Vec<Point> {
    let has = |t| args.transports.is_empty() || args.transports.contains(&t);
    let in_flight = harness::or_all(&args.in_flight, &IN_FLIGHT);
    let p = |transport, notify, payload, in_flight| Point {
        transport,
        notify,
        payload,
        in_flight,
    };
    let (small, large) = (payloads[0], payloads[payloads.len() - 1]);
    let mut points = Vec::new();
    if has(TransportKind::Raw) {
        points.push(p(TransportKind::Raw, Notify::Spin, RAW_PAYLOAD, 1));
    }
    let variants = |t| match t {
        TransportKind::Shm => [Notify::Spin, Notify::Default],
        _ => [Notify::Spin, Notify::Poll],
    };
    let each = |payload: usize, n: usize| {
        [TransportKind::Shm, TransportKind::Tcp]
            .into_iter()
            .filter(|&t| has(t))
            .flat_map(move |t| variants(t).map(|v| p(t, v, payload, n)))
    };
    for &payload in payloads {
        points.extend(each(payload, 1));
    }
    for &n in &in_flight {
        points.extend(each(small, n.max(1)));
    }
    if has(TransportKind::Shm) && large != small {
        if let Some(&n) = in_flight.iter().max() {
            points.push(p(TransportKind::Shm, Notify::Spin, large, n.max(1)));
        }
    }
    points
}

impl Benchmark for Shm<'_> {
    const NAME: &'static str = "shm";
    type Records = Records;

    fn plan(&self) -> u64 {
        (self.reps * self.points.len()) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Records), BoxError> {
        let pools = link::Pools::new()?;
        let clock_ns = harness::clock_cost_ns();
        progress.suspend(|| {
            println!(
                "ferry bench shm: request/response round trips, client on CPU {}, server on CPU {}, {} repetition(s) of {} per configuration (median shown); one clock reading costs {clock_ns:.0} ns and is inside every timed round trip.",
                self.cpus.0,
                self.cpus.1,
                self.reps,
                self.budget.describe("requests"),
            )
        });
        let mut runs = vec![Vec::new(); self.points.len()];
        let mut seq = 0u64;
        // Repetitions interleave the configurations, so that a noisy moment hits them alike.
        for _ in 0..self.reps {
            for (i, &point) in self.points.iter().enumerate() {
                let spec = Spec {
                    point,
                    budget: self.budget,
                    cpus: self.cpus,
                };
                seq += 1;
                let what = format!(
                    "{} {}, {} B, {} in flight",
                    point.transport.name(),
                    point.notify.name(),
                    point.payload,
                    point.in_flight
                );
                progress.start(what.clone());
                let r = match point.transport {
                    TransportKind::Raw => raw::run_raw(spec.budget, spec.cpus, 0),
                    TransportKind::Shm => link::run_shm(&spec, &pools, seq),
                    TransportKind::Tcp => link::run_tcp(&spec, &pools, &self.args.congestion),
                }
                .map_err(|e| format!("{what}: {e}"))?;
                progress.done();
                runs[i].push(r);
            }
        }
        let records = self
            .points
            .iter()
            .zip(&runs)
            .map(|(&p, r)| record::Record::new(p, r));
        let rounds = match self.budget {
            Budget::Count(n) => n as usize,
            Budget::Time(_) if self.args.common.quick => 50_000,
            Budget::Time(_) => 200_000,
        };
        let diagnostics = match self.points.iter().any(|p| p.transport == TransportKind::Shm) {
            true => Some(diagnostics::measure(
                &self.payloads,
                rounds.max(1),
                self.budget,
                self.cpus,
                &pools,
                &mut seq,
            )?),
            false => None,
        };
        let records = Records {
            records: records.collect(),
            diagnostics,
        };
        Ok((self.settings(clock_ns), records))
    }

    fn table(records: &Records) {
        report::table(&records.records);
        if let Some(d) = &records.diagnostics {
            diagnostics::print(d);
        }
    }

    fn targets(records: &Records) -> Vec<Target> {
        report::targets(&records.records)
    }

    fn plot(records: &Records, path: &Path) -> Result<(), BoxError> {
        report::plot(&records.records, path)
    }
}

/// Runs the sweep (or reads `--from`), prints the table and the targets, writes the JSON
/// (and the plot).
pub fn run(args: &Args) -> Result<(), BoxError> {
    lifecycle::main(&Shm::new(args), &args.common).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_results_read_back_to_the_same_json() {
        let (doc, records): (Value, Records) = lifecycle::committed("shm-results.json");
        let again = serde_json::to_value(records).unwrap();
        assert_eq!(again["records"], doc["records"]);
        assert_eq!(again["diagnostics"], doc["diagnostics"]);
    }
}
