//! The streams figure (`--figures streams`, issue 26): gRPC streams under ghz's load, served
//! in one run by Figure 8's setups **engine** (the engine `ferry gateway` runs, in front of
//! gRPC's interop host, `ferry_offload::interop_host` on the tokio driver, over shared memory)
//! and **tonic** (a tonic `TestService` host doing the same work: [`super::hosts::TonicInterop`]).
//!
//! The schema is gRPC's interop one, vendored unchanged in `ferry-offload`: its Ferry host
//! exists (grpc-go's interop client passes through the gateway with it), and the tonic one is
//! two methods on the generated trait. Streaming methods in the demo schema would have needed a
//! new Ferry host and golden files, and the demo's tonic-style trait serves unary methods only.
//!
//! - **server-streaming**: `StreamingOutputCall`, each call asking for `messages` responses of
//!   `size` bytes. (ghz's `--stream-call-count` cancels a server stream after that many
//!   messages, which ends it `CANCELLED`: the request asks for exactly that many instead.)
//! - **bidi**: `FullDuplexCall` with `--stream-call-count messages`: that many requests of
//!   `size` bytes, each asking for one response of `size` bytes, then the half-close.
//!
//! A streamed message is a response (in bidi, with the request it answers). The host's CPU
//! time (its threads: [`FERRY_HOST`] or [`TONIC_HOST`]) and the engine's are read before ghz
//! starts and after it exits, and divided by the messages streamed. The host is pinned to
//! `host_cpu`; ghz (spawned from a thread pinned there, so GOMAXPROCS is 1) and the engine share
//! `client_cpu`. A run with a call that did not end `OK` has no CPU per message, and the table
//! says why it does not count.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::client::cpu_now;
use super::hosts::{FERRY_HOST, Servers, TONIC_HOST, TonicInterop};
use super::serve::{Setup, setup_bars};
use crate::BoxError;
use crate::generated::interop_prost::test_service_server::TestServiceServer;
use crate::harness::lifecycle::Target;
use crate::harness::progress::Progress;
use crate::harness::table::Table;
use crate::harness::{Named, median, pin_current_thread, round, unique};
use crate::plot::{BarPanel, bars_svg};

/// Who serves the streams: the engine in front of the Ferry interop host, or a tonic host.
const SETUPS: [Setup; 2] = [Setup::Engine, Setup::Tonic];

/// The method's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// `StreamingOutputCall`.
    ServerStreaming,
    /// `FullDuplexCall`.
    Bidi,
}

impl Shape {
    const ALL: [Shape; 2] = [Shape::ServerStreaming, Shape::Bidi];
}

/// `size` zero bytes in base64 (protobuf JSON's `bytes`).
fn zeros_base64(size: u32) -> String {
    let tail = ["", "AA==", "AAA="][size as usize % 3];
    format!("{}{tail}", "AAAA".repeat(size as usize / 3))
}

/// How to run the streams figure (its settings in the results).
#[derive(Debug, Clone, Serialize)]
pub struct StreamsOptions {
    /// Message sizes, bytes.
    pub sizes: Vec<u32>,
    /// Messages per call.
    pub messages: u32,
    /// Calls per run (ghz `-n`).
    pub calls: u32,
    /// Calls in flight (ghz `-c`).
    pub in_flight: u32,
    /// ghz's connections.
    pub connections: usize,
    /// Repetitions; every figure is the median over them.
    pub reps: usize,
    /// The host's CPU.
    pub host_cpu: usize,
    /// The engine's and ghz's CPU.
    pub client_cpu: usize,
    /// The ghz executable.
    pub ghz: PathBuf,
}

impl StreamsOptions {
    /// The runs [`streams`] makes (for the progress bar).
    pub fn runs(&self) -> u64 {
        (self.reps.max(1) * SETUPS.len() * Shape::ALL.len() * self.sizes.len()) as u64
    }
}

/// One ghz run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRun {
    /// Who served.
    pub setup: Setup,
    /// The method.
    pub shape: Shape,
    /// Each message's payload, bytes.
    pub size: u32,
    /// Messages per call.
    pub messages_per_call: u32,
    /// Calls ghz made.
    pub calls: u64,
    /// Calls by final status, as ghz counted them.
    pub statuses: BTreeMap<String, u64>,
    /// ghz's errors, by message.
    pub errors: BTreeMap<String, u64>,
    /// Messages streamed per second of ghz's run (its calls that ended `OK`).
    pub messages_per_s: f64,
    /// Call (whole stream) latency of the calls that ended `OK`, median, µs.
    pub call_p50_us: Option<f64>,
    /// 99th percentile.
    pub call_p99_us: Option<f64>,
    /// Host CPU per message streamed, µs (none when a call failed).
    pub host_cpu_us_per_message: Option<f64>,
    /// Engine CPU per message streamed, µs (0 for tonic, none when a call failed).
    pub engine_cpu_us_per_message: Option<f64>,
}

impl StreamRun {
    /// Whether every call ended `OK` with no error: the run counts.
    pub fn all_ok(&self) -> bool {
        self.statuses.get("OK") == Some(&self.calls) && self.statuses.len() == 1 && self.errors.is_empty()
    }
}

/// Every run of the streams figure, repetitions included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Streams {
    /// Every run.
    pub runs: Vec<StreamRun>,
}

/// Runs the streams figure: per repetition and setup, the servers, then ghz for each shape
/// and size.
pub fn streams(opts: &StreamsOptions, progress: &Progress) -> Result<Streams, BoxError> {
    let dir = tempfile::tempdir()?;
    let protoset = dir.path().join("interop.protoset");
    std::fs::write(&protoset, ferry_offload::INTEROP_DESCRIPTORS)?;
    let mut runs = Vec::new();
    for rep in 1..=opts.reps.max(1) {
        for setup in SETUPS {
            let (servers, addr) = if setup == Setup::Engine {
                Servers::interop(opts.host_cpu, opts.client_cpu)?
            } else {
                let routes = || tonic::service::Routes::new(TestServiceServer::new(TonicInterop));
                Servers::tonic(opts.host_cpu, routes)?
            };
            for shape in Shape::ALL {
                for &size in &opts.sizes {
                    progress.start(format!("{} {} {size} B (rep {rep})", setup.name(), shape.name()));
                    let mut ghz = Command::new(&opts.ghz);
                    ghz.args(["--insecure", "--protoset"]).arg(&protoset);
                    ghz.args(["-n", &opts.calls.to_string(), "-c", &opts.in_flight.to_string()]);
                    ghz.args(["--connections", &opts.connections.to_string()]);
                    ghz.args(["--timeout", "20s", "--connect-timeout", "20s"]);
                    let asks = json!({ "size": size });
                    let (method, data) = match shape {
                        Shape::ServerStreaming => (
                            "StreamingOutputCall",
                            json!({ "response_parameters": vec![asks; opts.messages as usize] }),
                        ),
                        Shape::Bidi => {
                            ghz.args(["--stream-call-count", &opts.messages.to_string()]);
                            let payload = json!({ "body": zeros_base64(size) });
                            (
                                "FullDuplexCall",
                                json!({ "response_parameters": [asks], "payload": payload }),
                            )
                        }
                    };
                    ghz.args(["--call", &format!("grpc.testing.TestService/{method}")]);
                    ghz.args(["--data", &data.to_string()]);
                    let run = measure(opts, setup, addr, ghz, dir.path())?;
                    runs.push(run.record(setup, shape, size, opts.messages));
                    progress.done();
                }
            }
            servers.stop();
        }
    }
    Ok(Streams { runs })
}

/// What one ghz run measured.
struct Measured {
    report: Report,
    /// The host's and the engine's CPU time over ghz's life.
    cpu: (Duration, Duration),
}

/// Runs `ghz` (with its report in `dir`) against `addr` from a thread pinned to the client's
/// CPU, for at most 10 minutes, and reads the host's and the engine's CPU time around it.
fn measure(
    opts: &StreamsOptions,
    setup: Setup,
    addr: SocketAddr,
    mut ghz: Command,
    dir: &Path,
) -> Result<Measured, BoxError> {
    let (report, log) = (dir.join("ghz.json"), dir.join("ghz.log"));
    let output = std::fs::File::create(&log)?;
    ghz.args(["--format", "json", "--output"])
        .arg(&report)
        .arg(addr.to_string());
    ghz.stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output);
    let what = ferry_launch::display(&ghz);
    let host = if setup == Setup::Engine {
        FERRY_HOST
    } else {
        TONIC_HOST
    };
    let before = cpu_now(host);
    let status = std::thread::scope(|s| {
        let waited = s.spawn(|| -> Result<_, BoxError> {
            pin_current_thread(opts.client_cpu)?;
            let mut child = ghz.spawn().map_err(|e| {
                format!("{what}: {e} (go install github.com/bojand/ghz/cmd/ghz@v0.120.0, or --ghz PATH)")
            })?;
            let deadline = Instant::now() + Duration::from_secs(600);
            while Instant::now() < deadline {
                if let Some(status) = child.try_wait()? {
                    return Ok(status);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("{what} did not end within 10 minutes").into())
        });
        waited
            .join()
            .map_err(|_| BoxError::from("the ghz thread panicked"))?
    })?;
    let after = cpu_now(host);
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    if !status.success() {
        return Err(format!("{what} exited with {status}:\n{}", said()).into());
    }
    let text =
        std::fs::read_to_string(&report).map_err(|e| format!("{what}: no report ({e}):\n{}", said()))?;
    let report = serde_json::from_str(&text).map_err(|e| format!("{what}: its report: {e}"))?;
    let cpu = |i: usize| after[i].saturating_sub(before[i]);
    Ok(Measured {
        report,
        cpu: (cpu(0), cpu(1)),
    })
}

/// The parts of ghz's JSON report read here.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    count: u64,
    /// The run's wall time, ns.
    total: u64,
    error_distribution: Option<BTreeMap<String, u64>>,
    status_code_distribution: Option<BTreeMap<String, u64>>,
    /// Of the calls that ended `OK`, ns.
    latency_distribution: Option<Vec<Percentile>>,
}

#[derive(Debug, Deserialize)]
struct Percentile {
    percentage: u32,
    latency: u64,
}

impl Measured {
    /// The run's record.
    fn record(self, setup: Setup, shape: Shape, size: u32, messages: u32) -> StreamRun {
        let Measured { report, cpu } = self;
        let latencies = report.latency_distribution.unwrap_or_default();
        let percentile = |p| {
            let at = latencies.iter().find(|l| l.percentage == p);
            at.map(|l| round(l.latency as f64 / 1000.0, 1))
        };
        let statuses = report.status_code_distribution.unwrap_or_default();
        let streamed = (statuses.get("OK").copied().unwrap_or(0) * u64::from(messages)) as f64;
        let mut run = StreamRun {
            setup,
            shape,
            size,
            messages_per_call: messages,
            calls: report.count,
            statuses,
            errors: report.error_distribution.unwrap_or_default(),
            messages_per_s: round(streamed / (report.total.max(1) as f64 / 1e9), 1),
            call_p50_us: percentile(50),
            call_p99_us: percentile(99),
            host_cpu_us_per_message: None,
            engine_cpu_us_per_message: None,
        };
        if run.all_ok() {
            let us = |d: Duration| Some(round(d.as_secs_f64() * 1e6 / streamed.max(1.0), 3));
            run.host_cpu_us_per_message = us(cpu.0);
            let engine = setup == Setup::Engine;
            run.engine_cpu_us_per_message = us(if engine { cpu.1 } else { Duration::ZERO });
        }
        run
    }
}

impl Streams {
    /// The median of `f` over the repetitions of (setup, shape, size) that count; NaN if none.
    fn median(
        &self,
        setup: Setup,
        (shape, size): (Shape, u32),
        f: impl Fn(&StreamRun) -> Option<f64>,
    ) -> f64 {
        let values: Vec<f64> = (self.runs.iter())
            .filter(|r| r.setup == setup && r.shape == shape && r.size == size && r.all_ok())
            .filter_map(f)
            .collect();
        median(&values).unwrap_or(f64::NAN)
    }

    /// (shape, size), in their first order.
    fn points(&self) -> Vec<(Shape, u32)> {
        unique(self.runs.iter().map(|r| (r.shape, r.size)))
    }

    /// The table: per shape, size and setup, the medians; the runs that do not count, and why.
    pub fn table(&self) {
        println!("Streams under ghz: medians over the repetitions; µs of CPU per streamed message\n");
        let mut t = Table::new([
            "shape",
            "size",
            "setup",
            "messages/s",
            "host µs/msg",
            "engine µs/msg",
            "call p50 ms",
            "call p99 ms",
        ]);
        for point in self.points() {
            for setup in SETUPS {
                let m = |f: &dyn Fn(&StreamRun) -> Option<f64>, digits, scale: f64| {
                    format!("{:.*}", digits, self.median(setup, point, f) / scale)
                };
                t.row([
                    point.0.name(),
                    format!("{} B", point.1),
                    setup.name(),
                    m(&|r| Some(r.messages_per_s), 0, 1.0),
                    m(&|r| r.host_cpu_us_per_message, 3, 1.0),
                    m(&|r| r.engine_cpu_us_per_message, 3, 1.0),
                    m(&|r| r.call_p50_us, 2, 1000.0),
                    m(&|r| r.call_p99_us, 2, 1000.0),
                ]);
            }
        }
        t.print();
        for r in self.runs.iter().filter(|r| !r.all_ok()) {
            let (setup, shape) = (r.setup.name(), r.shape.name());
            println!(
                "not counted: {setup} {shape} {} B: {} calls, statuses {:?}, errors {:?}",
                r.size, r.calls, r.statuses, r.errors
            );
        }
        println!();
    }

    /// Per shape and size: host CPU per streamed message, gateway / tonic, at most 0.5x:
    /// Figure 8's goal for unary calls, informational here (the issue sets none for streams).
    pub fn targets(&self) -> Vec<Target> {
        let host = |s, point| self.median(s, point, |r| r.host_cpu_us_per_message);
        (self.points().into_iter())
            .map(|point| {
                let (shape, size) = (point.0.name(), point.1);
                let what =
                    format!("{shape} {size} B: host CPU per streamed message, engine/tonic (informational)");
                let ratio = host(Setup::Engine, point) / host(Setup::Tonic, point);
                Target::ratio(what, Some(ratio), false, 0.5)
            })
            .collect()
    }

    /// Bars per (shape, size) and setup: host and engine CPU per message, messages per second.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let points = self.points();
        let panel = |title: &str, f: &dyn Fn(&StreamRun) -> Option<f64>| BarPanel {
            title: title.to_owned(),
            groups: (points.iter())
                .map(|(shape, size)| format!("{} {size} B", shape.name()))
                .collect(),
            bars: setup_bars(&SETUPS, &points, |s, &point| self.median(s, point, f)),
            ..Default::default()
        };
        bars_svg(
            path,
            "Streams under ghz: ferry gateway + Ferry host (shared memory) vs a tonic host",
            3,
            &[
                panel("host CPU per streamed message (µs)", &|r| {
                    r.host_cpu_us_per_message
                }),
                panel("engine CPU per streamed message (µs)", &|r| {
                    r.engine_cpu_us_per_message
                }),
                panel("messages streamed per second", &|r| Some(r.messages_per_s)),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_in_base64() {
        for size in [0u32, 1, 2, 3, 64, 4096] {
            let text = zeros_base64(size);
            assert_eq!(text.len(), (size as usize).div_ceil(3) * 4, "{size}");
            let pad = text.bytes().filter(|&b| b == b'=').count();
            assert_eq!(pad, (3 - size as usize % 3) % 3, "{size}");
        }
        assert_eq!(zeros_base64(4), "AAAAAA==");
    }

    /// A report as ghz 0.120.0 writes it (trimmed), one call failed.
    #[test]
    fn a_failed_call_keeps_the_run_out_of_the_figures() {
        let text = r#"{"count": 4, "total": 2000000000, "average": 1, "rps": 2,
            "errorDistribution": {"rpc error: code = Unavailable": 1},
            "statusCodeDistribution": {"OK": 3, "Unavailable": 1},
            "latencyDistribution": [{"percentage": 50, "latency": 1500000}, {"percentage": 99, "latency": 2500000}],
            "details": []}"#;
        let cpu = (Duration::from_millis(3), Duration::from_millis(6));
        let measured = |text| Measured {
            report: serde_json::from_str(text).unwrap(),
            cpu,
        };
        let run = measured(text).record(Setup::Engine, Shape::Bidi, 64, 100);
        assert_eq!(
            (run.calls, run.messages_per_s, run.call_p50_us, run.call_p99_us),
            (4, 150.0, Some(1500.0), Some(2500.0))
        );
        assert!(!run.all_ok() && run.host_cpu_us_per_message.is_none(), "{run:?}");
        let ok = r#"{"count": 3, "total": 1000000000, "errorDistribution": null,
            "statusCodeDistribution": {"OK": 3}, "latencyDistribution": null}"#;
        let run = measured(ok).record(Setup::Engine, Shape::Bidi, 64, 100);
        assert!(run.all_ok());
        assert_eq!(
            (run.host_cpu_us_per_message, run.engine_cpu_us_per_message),
            (Some(10.0), Some(20.0))
        );
        assert_eq!(run.call_p50_us, None);
    }
}
