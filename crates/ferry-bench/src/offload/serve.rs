//! Figure 8 of the DPU offload paper, and Zerializer's null-serializer bound: the paper's three
//! messages served to gRPC clients at one offered rate by
//!
//! - **tonic**: a tonic server whose handlers get prost messages (decoding on the host: what a
//!   team runs today);
//! - **engine**: the offload engine (`ferry-offload`) on its own core, decoding protobuf into
//!   Ferry messages in shared memory, and a Ferry host (`ferry_offload::demo_host::DemoHost`,
//!   the generated trait) on the host's core reading validated views;
//! - **null**: Zerializer's null serializer: the tonic server with no decoding anywhere: its
//!   handlers get pre-built objects (the request's bytes are received and dropped), so the
//!   host pays the RPC stack and the handler only. What offload can at most save on the host is
//!   tonic's CPU per request minus this.
//!
//! The same handler runs in all three (`hosts.rs`); it reads every value and answers a
//! digest, which the client checks for every response (`client.rs`). The load is
//! open-loop ([`super::load`]) over several gRPC connections.
//!
//! **Host CPU per request** is the CPU time of the host's threads (the tonic runtime's thread;
//! the Ferry host's event loop and workers) over the measured window, divided by the requests
//! completed in it; the engine's thread is reported separately, and so is the load generator's
//! ([`crate::harness::cpu::threads_cpu_time`]). All of them are threads of this process,
//! pinned: the host on `--host-cpu`, the engine and the load generator on `--client-cpu` (a
//! machine with two cores has no third one for the engine). The Ferry host's loop sleeps as
//! soon as it is idle (`LoopConfig::spin` zero), as tokio's does, so that neither host is
//! charged for polling.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client;
use super::hosts::{Requests, Servers};
use crate::BoxError;
use crate::harness::lifecycle::Target;
use crate::harness::progress::Progress;
use crate::harness::table::Table;
use crate::harness::{Histogram, Named, median, round, unique};
use crate::plot::{BarPanel, Bars, bars_svg};

/// The DPU paper's three messages (Figure 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum PaperMessage {
    /// About 15 bytes of mixed fields.
    #[serde(rename = "small")]
    #[value(name = "small")]
    Small,
    /// 512 uint32 values, small ones likelier.
    #[serde(rename = "x512-ints")]
    #[value(name = "x512-ints")]
    Ints,
    /// An 8,000-character string.
    #[serde(rename = "x8000-chars")]
    #[value(name = "x8000-chars")]
    Chars,
}

impl PaperMessage {
    /// All three, in the paper's order.
    pub const ALL: [PaperMessage; 3] = [PaperMessage::Small, PaperMessage::Ints, PaperMessage::Chars];

    /// The gRPC method that takes it.
    pub(super) fn path(self) -> &'static str {
        match self {
            PaperMessage::Small => "/ferry.offload.demo.Demo/SendSmall",
            PaperMessage::Ints => "/ferry.offload.demo.Demo/SendInts",
            PaperMessage::Chars => "/ferry.offload.demo.Demo/SendChars",
        }
    }
}

/// Who serves the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Setup {
    /// tonic, decoding with prost on the host.
    Tonic,
    /// The offload engine and a Ferry host.
    Engine,
    /// tonic with no decoding anywhere (pre-built objects): the bound.
    Null,
}

impl Setup {
    /// All three.
    pub const ALL: [Setup; 3] = [Setup::Tonic, Setup::Engine, Setup::Null];
}

/// How to run Figure 8.
#[derive(Debug, Clone)]
pub struct Figure8Options {
    /// The messages.
    pub messages: Vec<PaperMessage>,
    /// The offered rates, requests per second (every setup and message at each).
    pub rates: Vec<u64>,
    /// The rate host CPU is compared at (one of `rates`, below every setup's saturation: the
    /// same offered load for all).
    pub cpu_rate: u64,
    /// Measured time per run (a tenth more of warm-up first).
    pub duration: Duration,
    /// gRPC connections of the load generator.
    pub connections: usize,
    /// Requests in flight at most; past it a scheduled request is counted as dropped.
    pub max_in_flight: usize,
    /// Repetitions (setups interleaved); every figure is the median over them.
    pub reps: usize,
    /// The host's CPU.
    pub host_cpu: usize,
    /// The engine's and the load generator's CPU.
    pub client_cpu: usize,
    /// Seed of the request contents.
    pub seed: u64,
    /// Calls of the closed-loop latency measurement per setup and message.
    pub unary_calls: u64,
    /// How long the Ferry host's loop busy-polls before it sleeps (`LoopConfig::spin`).
    pub host_spin: Duration,
}

impl Figure8Options {
    /// The runs [`figure8`] makes (for the progress bar).
    pub fn runs(&self) -> u64 {
        (self.reps.max(1) * self.messages.len() * (self.rates.len() + 1) * Setup::ALL.len()) as u64
    }

    /// The results' settings.
    pub fn settings(&self) -> Value {
        json!({
            "figure": 8,
            "messages": self.messages.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "offered_rps": self.rates,
            "cpu_compared_at_rps": self.cpu_rate,
            "duration_ms": self.duration.as_millis() as u64,
            "connections": self.connections,
            "max_in_flight": self.max_in_flight,
            "reps": self.reps,
            "host_cpu": self.host_cpu,
            "client_cpu": self.client_cpu,
            "seed": self.seed,
            "unary_calls": self.unary_calls,
            "host_spin_us": self.host_spin.as_micros() as u64,
        })
    }
}

/// Latency percentiles in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl Latency {
    /// The percentiles of `h` (ns), in µs.
    pub fn of(h: &Histogram) -> Latency {
        let q = |q| round(h.quantile(q).unwrap_or(0) as f64 / 1000.0, 1);
        Latency {
            p50: q(0.5),
            p99: q(0.99),
            p999: q(0.999),
        }
    }
}

/// One open-loop run's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Who served.
    pub setup: Setup,
    /// What was sent.
    pub message: PaperMessage,
    /// The offered rate.
    #[serde(rename = "offered_rps")]
    pub rate: u64,
    /// Completed requests per second in the measured window.
    #[serde(rename = "achieved_rps")]
    pub achieved: f64,
    /// Host CPU per completed request, µs.
    #[serde(rename = "host_cpu_us_per_request")]
    pub host_cpu_us: f64,
    /// Engine CPU per completed request, µs (0 without an engine).
    #[serde(rename = "engine_cpu_us_per_request")]
    pub engine_cpu_us: f64,
    /// Load generator CPU per completed request, µs.
    #[serde(rename = "client_cpu_us_per_request")]
    pub client_cpu_us: f64,
    /// Latency from the send (Figure 8's: see `load.rs` for why).
    pub latency_us: Latency,
    /// Latency from the scheduled time (absent from records made before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_latency_us: Option<Latency>,
    /// Requests that failed (any status, or a wrong digest).
    pub errors: u64,
    /// Requests not sent because `max_in_flight` were outstanding.
    pub dropped: u64,
}

/// Unary latency: calls one after another on one connection, each sent when the previous one
/// is answered: the time a lone call takes, with no queueing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unary {
    /// Who served.
    pub setup: Setup,
    /// What was sent.
    pub message: PaperMessage,
    /// Calls measured.
    #[serde(rename = "unary_calls")]
    pub calls: u64,
    /// Their latency.
    #[serde(rename = "unary_latency_us")]
    pub latency_us: Latency,
}

/// Every run of Figure 8, repetitions included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure8 {
    /// The rate host CPU is compared at.
    pub cpu_rate: u64,
    /// Every open-loop run.
    pub runs: Vec<Run>,
    /// Every closed-loop latency measurement.
    pub unary: Vec<Unary>,
}

/// Runs Figure 8: every (repetition, message, setup), the unary latency then each rate.
pub fn figure8(opts: &Figure8Options, progress: &Progress) -> Result<Figure8, BoxError> {
    let mut out = Figure8 {
        cpu_rate: opts.cpu_rate,
        runs: Vec::new(),
        unary: Vec::new(),
    };
    for rep in 1..=opts.reps.max(1) {
        for &message in &opts.messages {
            let requests = Requests::new(message, opts.seed);
            for setup in Setup::ALL {
                let what = |run: &str| format!("{} {} {run} (rep {rep})", message.name(), setup.name());
                let (servers, addr) = Servers::start(setup, opts, &requests)?;
                progress.start(what("unary"));
                out.unary
                    .push(client::unary(opts, setup, message, addr, &requests)?);
                progress.done();
                for &rate in &opts.rates {
                    progress.start(what(&format!("{rate} req/s")));
                    out.runs
                        .push(client::open_loop(opts, setup, message, rate, addr, &requests)?);
                    progress.done();
                }
                servers.stop();
            }
        }
    }
    Ok(out)
}

/// A bar per setup over `groups`, each bar's value `value(setup, group)` (0 where unknown).
pub(super) fn setup_bars<G>(setups: &[Setup], groups: &[G], value: impl Fn(Setup, &G) -> f64) -> Vec<Bars> {
    let known = |v: f64| if v.is_finite() { v } else { 0.0 };
    let bars = |&s: &Setup| Bars {
        name: s.name(),
        values: groups.iter().map(|g| known(value(s, g))).collect(),
    };
    setups.iter().map(bars).collect()
}

impl Figure8 {
    fn messages(&self) -> Vec<PaperMessage> {
        unique(self.runs.iter().map(|r| r.message))
    }

    /// The median of `f` over the repetitions of (setup, message, rate).
    fn median(&self, setup: Setup, message: PaperMessage, rate: u64, f: impl Fn(&Run) -> f64) -> f64 {
        let runs = self.runs.iter();
        let values: Vec<f64> = runs
            .filter(|r| r.setup == setup && r.message == message && r.rate == rate)
            .map(f)
            .collect();
        median(&values).unwrap_or(f64::NAN)
    }

    /// The median unary latency of (setup, message).
    fn unary(&self, setup: Setup, message: PaperMessage, f: impl Fn(&Latency) -> f64) -> f64 {
        let unary = self.unary.iter();
        let values: Vec<f64> = unary
            .filter(|u| u.setup == setup && u.message == message)
            .map(|u| f(&u.latency_us))
            .collect();
        median(&values).unwrap_or(f64::NAN)
    }

    /// Host CPU per request of `setup` at the compared rate.
    fn host_cpu(&self, setup: Setup, message: PaperMessage) -> f64 {
        self.median(setup, message, self.cpu_rate, |r| r.host_cpu_us)
    }

    /// The tables: per message and rate, each setup's medians; the unary latency; the bound.
    pub fn table(&self) {
        println!("Figure 8: medians over the repetitions; µs of CPU per request\n");
        let mut t = Table::new([
            "message",
            "rate",
            "setup",
            "achieved",
            "host µs",
            "engine µs",
            "client µs",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "errors",
        ]);
        for message in self.messages() {
            for rate in unique(self.runs.iter().map(|r| r.rate)) {
                for setup in Setup::ALL {
                    let m = |f: &dyn Fn(&Run) -> f64, digits| {
                        format!("{:.*}", digits, self.median(setup, message, rate, f))
                    };
                    t.row([
                        message.name(),
                        rate.to_string(),
                        setup.name(),
                        m(&|r| r.achieved, 0),
                        m(&|r| r.host_cpu_us, 2),
                        m(&|r| r.engine_cpu_us, 2),
                        m(&|r| r.client_cpu_us, 2),
                        m(&|r| r.latency_us.p50, 1),
                        m(&|r| r.latency_us.p99, 1),
                        m(&|r| r.latency_us.p999, 1),
                        m(&|r| (r.errors + r.dropped) as f64, 0),
                    ]);
                }
            }
        }
        t.print();
        println!("Unary latency, closed loop (one call at a time, one connection):");
        let mut t = Table::new(["message", "setup", "p50 µs", "p99 µs", "p99.9 µs"]);
        for message in self.messages() {
            for setup in Setup::ALL {
                let p = |f: fn(&Latency) -> f64| format!("{:.1}", self.unary(setup, message, f));
                t.row([
                    message.name(),
                    setup.name(),
                    p(|l| l.p50),
                    p(|l| l.p99),
                    p(|l| l.p999),
                ]);
            }
        }
        t.print();
        for message in self.messages() {
            println!(
                "{}: host CPU per request at {} req/s, null/tonic {:.2}x (the bound: what decoding costs a tonic host)",
                message.name(),
                self.cpu_rate,
                self.host_cpu(Setup::Null, message) / self.host_cpu(Setup::Tonic, message),
            );
        }
        println!();
    }

    /// Per message: host CPU per request, engine / tonic, at most 0.5x; the engine adds at
    /// most 30 µs to a unary call's p50.
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for message in self.messages() {
            let ratio = self.host_cpu(Setup::Engine, message) / self.host_cpu(Setup::Tonic, message);
            out.push(Target::ratio(
                format!(
                    "{}: host CPU per request at {} req/s, engine/tonic",
                    message.name(),
                    self.cpu_rate
                ),
                Some(ratio),
                false,
                0.5,
            ));
            let p50 = |s| self.unary(s, message, |l| l.p50);
            let added = p50(Setup::Engine) - p50(Setup::Tonic);
            out.push(Target {
                what: format!(
                    "{}: unary p50, tonic {:.1} µs, engine {:.1} µs: added",
                    message.name(),
                    p50(Setup::Tonic),
                    p50(Setup::Engine)
                ),
                goal: "<= 30 µs".to_owned(),
                measured: format!("{added:.1} µs"),
                met: added.is_finite().then_some(added <= 30.0),
            });
        }
        out
    }

    /// Bars per message and setup: host and engine CPU per request at the compared rate,
    /// requests per second at the highest.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let (at, top) = (self.cpu_rate, self.runs.iter().map(|r| r.rate).max().unwrap_or(0));
        let messages = self.messages();
        let groups: Vec<String> = messages.iter().map(|m| m.name()).collect();
        let panel = |title: String, rate, f: &dyn Fn(&Run) -> f64| BarPanel {
            title,
            groups: groups.clone(),
            bars: setup_bars(&Setup::ALL, &messages, |s, &m| self.median(s, m, rate, f)),
            ..Default::default()
        };
        bars_svg(
            path,
            "DPU paper Figure 8 on one machine: tonic host vs offload engine + Ferry host",
            3,
            &[
                panel(format!("host CPU per request at {at} req/s (µs)"), at, &|r| {
                    r.host_cpu_us
                }),
                panel(format!("engine CPU per request at {at} req/s (µs)"), at, &|r| {
                    r.engine_cpu_us
                }),
                panel(
                    format!("requests per second achieved (offered {top})"),
                    top,
                    &|r| r.achieved,
                ),
            ],
        )
    }
}
