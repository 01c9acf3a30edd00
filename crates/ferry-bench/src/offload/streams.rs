//! The streams figure (`--figures streams`, issue 26): gRPC streams under ghz's load
//! (`--stream-call-count`), served two ways side by side in one run:
//!
//! - **gateway**: ghz → the offload engine (`ferry gateway`'s, on the client's core) → gRPC's
//!   interop host (`ferry_offload::interop_host`, the tokio driver) over shared memory;
//! - **tonic**: ghz → a tonic `TestService` host doing the same work ([`super::hosts`]).
//!
//! The schema is gRPC's interop one (`grpc.testing.TestService`, vendored unchanged in
//! `ferry-offload`), because both hosts were there or nearly: the Ferry host is the one grpc-go's
//! interop client passes, and the tonic one is its streaming methods on the generated trait.
//! Streaming methods in the demo schema would have meant a new Ferry host, new golden files, and
//! giving up the demo's tonic-style trait (which serves unary methods only).
//!
//! - **server-streaming**: `StreamingOutputCall`, each call asking for `messages` responses of
//!   `size` bytes. (ghz's `--stream-call-count` would cancel a server stream after that many
//!   messages, ending it `CANCELLED`; so the request asks for exactly that many instead.)
//! - **bidi**: `FullDuplexCall` with `--stream-call-count messages`: each call sends that many
//!   requests of `size` bytes, each asking for one response of `size` bytes, then half-closes.
//!
//! A streamed message is one response (in bidi, with the request it answers). Per run: ghz's
//! own figures (calls, each call's status, its latency percentiles, its wall time), and the
//! host's CPU time over ghz's whole life divided by the messages streamed (the threads of the
//! host: [`super::hosts::FERRY_HOST`] or [`super::hosts::TONIC_HOST`]), the engine's apart. The
//! host is pinned to `host_cpu`; ghz (spawned from a thread pinned there: GOMAXPROCS 1) and the
//! engine share `client_cpu`. A run with a call that did not end `OK` has no CPU per message:
//! its row says why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client::cpu_now;
use super::hosts::{FERRY_HOST, Servers, TONIC_HOST, TonicInterop};
use crate::BoxError;
use crate::generated::interop_prost::test_service_server::TestServiceServer;
use crate::harness::lifecycle::Target;
use crate::harness::progress::Progress;
use crate::harness::table::Table;
use crate::harness::{median, pin_current_thread, round};
use crate::plot::{BarPanel, Bars, bars_svg};

/// Who serves the streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum System {
    /// The engine in front of the Ferry interop host, over shared memory.
    Gateway,
    /// A tonic host.
    Tonic,
}

/// The method shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// `StreamingOutputCall`.
    ServerStreaming,
    /// `FullDuplexCall`.
    Bidi,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Gateway => "gateway",
            System::Tonic => "tonic",
        }
    }
}

impl Shape {
    const ALL: [Shape; 2] = [Shape::ServerStreaming, Shape::Bidi];

    fn name(self) -> &'static str {
        match self {
            Shape::ServerStreaming => "server-streaming",
            Shape::Bidi => "bidi",
        }
    }

    /// ghz's arguments for a call of this shape: `messages` messages of `size` bytes.
    fn args(self, size: u32, messages: u32) -> Vec<String> {
        let asks = json!({ "size": size });
        let (method, data) = match self {
            Shape::ServerStreaming => (
                "StreamingOutputCall",
                json!({ "response_parameters": vec![asks; messages as usize] }),
            ),
            Shape::Bidi => (
                "FullDuplexCall",
                json!({ "response_parameters": [asks], "payload": { "body": zeros_base64(size) } }),
            ),
        };
        let mut args = vec![
            "--call".to_owned(),
            format!("grpc.testing.TestService/{method}"),
            "--data".to_owned(),
            data.to_string(),
        ];
        if self == Shape::Bidi {
            args.extend(["--stream-call-count".to_owned(), messages.to_string()]);
        }
        args
    }
}

/// `size` zero bytes in base64 (protobuf JSON's `bytes`).
fn zeros_base64(size: u32) -> String {
    let tail = ["", "AA==", "AAA="][size as usize % 3];
    format!("{}{tail}", "AAAA".repeat(size as usize / 3))
}

/// How to run the streams figure.
#[derive(Debug, Clone)]
pub struct StreamsOptions {
    /// Message sizes, bytes.
    pub sizes: Vec<u32>,
    /// Messages per call (each way for bidi).
    pub messages: u32,
    /// Calls per run (ghz `-n`).
    pub calls: u32,
    /// Calls in flight (ghz `-c`).
    pub in_flight: u32,
    /// ghz's connections.
    pub connections: usize,
    /// Repetitions (systems interleaved); every figure is the median over them.
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
        (self.reps.max(1) * 2 * Shape::ALL.len() * self.sizes.len()) as u64
    }

    /// The results' settings.
    pub fn settings(&self) -> Value {
        json!({
            "figure": "streams",
            "sizes": self.sizes,
            "messages_per_call": self.messages,
            "calls": self.calls,
            "in_flight": self.in_flight,
            "connections": self.connections,
            "reps": self.reps,
            "host_cpu": self.host_cpu,
            "client_cpu": self.client_cpu,
        })
    }
}

/// One ghz run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRun {
    /// Who served.
    pub system: System,
    /// The method.
    pub shape: Shape,
    /// Each message's payload, bytes.
    pub size: u32,
    /// Messages per call.
    pub messages_per_call: u32,
    /// Calls ghz made.
    pub calls: u64,
    /// Calls by final status, as ghz counted them (`{"OK": calls}` when all went well).
    pub statuses: BTreeMap<String, u64>,
    /// ghz's errors, by message.
    pub errors: BTreeMap<String, u64>,
    /// Messages streamed per second of ghz's run.
    pub messages_per_s: f64,
    /// Call latency (the whole stream), median, µs (of the calls that ended `OK`).
    pub call_p50_us: Option<f64>,
    /// 99th percentile.
    pub call_p99_us: Option<f64>,
    /// Host CPU per message streamed, µs (none when a call failed).
    pub host_cpu_us_per_message: Option<f64>,
    /// Engine CPU per message streamed, µs (0 without an engine, none when a call failed).
    pub engine_cpu_us_per_message: Option<f64>,
}

impl StreamRun {
    /// Whether every call ended `OK` with no error: the run counts.
    pub fn all_ok(&self) -> bool {
        self.statuses.get("OK") == Some(&self.calls) && self.statuses.len() == 1 && self.errors.is_empty()
    }
}

/// Every run of the streams figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Streams {
    /// Every run, repetitions included.
    pub runs: Vec<StreamRun>,
}

/// Runs the streams figure: per repetition and system, the servers once, then ghz for each
/// shape and size.
pub fn streams(opts: &StreamsOptions, progress: &Progress) -> Result<Streams, BoxError> {
    let dir = tempfile::tempdir()?;
    let protoset = dir.path().join("interop.protoset");
    std::fs::write(&protoset, ferry_offload::INTEROP_DESCRIPTORS)?;
    let mut runs = Vec::new();
    for rep in 1..=opts.reps.max(1) {
        for system in [System::Gateway, System::Tonic] {
            let (servers, addr) = match system {
                System::Gateway => Servers::interop(opts.host_cpu, opts.client_cpu)?,
                System::Tonic => Servers::tonic(opts.host_cpu, || {
                    tonic::service::Routes::new(TestServiceServer::new(TonicInterop))
                })?,
            };
            for shape in Shape::ALL {
                for &size in &opts.sizes {
                    progress.start(format!("{} {} {size} B (rep {rep})", system.name(), shape.name()));
                    let mut args = shape.args(size, opts.messages);
                    let (n, c, conns) = (opts.calls, opts.in_flight, opts.connections);
                    args.extend(
                        format!("--insecure -n {n} -c {c} --connections {conns} --timeout 20s --connect-timeout 20s")
                            .split(' ')
                            .map(str::to_owned),
                    );
                    args.extend([
                        "--protoset".to_owned(),
                        protoset.display().to_string(),
                        addr.to_string(),
                    ]);
                    let host = if system == System::Gateway {
                        FERRY_HOST
                    } else {
                        TONIC_HOST
                    };
                    let before = cpu_now(host);
                    let report = std::thread::scope(|s| {
                        let ghz = s.spawn(|| {
                            pin_current_thread(opts.client_cpu)?;
                            ghz(&opts.ghz, &args, dir.path())
                        });
                        ghz.join()
                            .map_err(|_| BoxError::from("the ghz thread panicked"))?
                    })?;
                    let after = cpu_now(host);
                    let cpu = |i: usize| after[i].saturating_sub(before[i]);
                    runs.push(report.run(system, shape, size, opts.messages, (cpu(0), cpu(1))));
                    progress.done();
                }
            }
            servers.stop();
        }
    }
    Ok(Streams { runs })
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

impl Report {
    /// The run's record, with the host's and the engine's CPU time over ghz's life.
    fn run(
        self,
        system: System,
        shape: Shape,
        size: u32,
        messages: u32,
        cpu: (Duration, Duration),
    ) -> StreamRun {
        let percentile = |p| {
            let at = self
                .latency_distribution
                .iter()
                .flatten()
                .find(|l| l.percentage == p);
            at.map(|l| round(l.latency as f64 / 1000.0, 1))
        };
        let mut run = StreamRun {
            system,
            shape,
            size,
            messages_per_call: messages,
            calls: self.count,
            call_p50_us: percentile(50),
            call_p99_us: percentile(99),
            statuses: self.status_code_distribution.unwrap_or_default(),
            errors: self.error_distribution.unwrap_or_default(),
            messages_per_s: 0.0,
            host_cpu_us_per_message: None,
            engine_cpu_us_per_message: None,
        };
        let streamed = (run.statuses.get("OK").copied().unwrap_or(0) * u64::from(messages)) as f64;
        run.messages_per_s = round(streamed / (self.total.max(1) as f64 / 1e9), 1);
        if run.all_ok() {
            let us = |d: Duration| Some(round(d.as_secs_f64() * 1e6 / streamed.max(1.0), 3));
            run.host_cpu_us_per_message = us(cpu.0);
            run.engine_cpu_us_per_message = us(if system == System::Gateway {
                cpu.1
            } else {
                Duration::ZERO
            });
        }
        run
    }
}

/// Runs ghz with `args` (its report in `dir`), at most 10 minutes; its JSON report.
fn ghz(program: &Path, args: &[String], dir: &Path) -> Result<Report, BoxError> {
    let (report, log) = (dir.join("ghz.json"), dir.join("ghz.log"));
    let output = std::fs::File::create(&log)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .args(["--format", "json", "--output"])
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output);
    let what = ferry_launch::display(&cmd);
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "starting {}: {e} (install it: go install github.com/bojand/ghz/cmd/ghz@v0.120.0; or pass --ghz PATH)",
            program.display()
        )
    })?;
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} did not end within 10 minutes").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = || std::fs::read_to_string(&log).unwrap_or_default();
    if !status.success() {
        return Err(format!("{what} exited with {status}:\n{}", output()).into());
    }
    let text =
        std::fs::read_to_string(&report).map_err(|e| format!("{what}: no report ({e}):\n{}", output()))?;
    serde_json::from_str(&text).map_err(|e| format!("{what}: its report: {e}").into())
}

impl Streams {
    /// The median of `f` over the repetitions of (system, shape, size) that count; NaN if none.
    fn median(&self, system: System, shape: Shape, size: u32, f: impl Fn(&StreamRun) -> Option<f64>) -> f64 {
        let values: Vec<f64> = (self.runs.iter())
            .filter(|r| r.system == system && r.shape == shape && r.size == size && r.all_ok())
            .filter_map(f)
            .collect();
        median(&values).unwrap_or(f64::NAN)
    }

    /// (shape, size) in their first order.
    fn points(&self) -> Vec<(Shape, u32)> {
        let mut out = Vec::new();
        for r in &self.runs {
            if !out.contains(&(r.shape, r.size)) {
                out.push((r.shape, r.size));
            }
        }
        out
    }

    /// Host CPU per message, gateway / tonic.
    fn ratio(&self, shape: Shape, size: u32) -> f64 {
        let host = |s| self.median(s, shape, size, |r| r.host_cpu_us_per_message);
        host(System::Gateway) / host(System::Tonic)
    }

    /// The table: per shape, size and system, the medians; every run that does not count, why.
    pub fn table(&self) {
        println!("Streams under ghz: medians over the repetitions; µs of CPU per streamed message\n");
        let mut t = Table::new([
            "shape",
            "size",
            "system",
            "messages/s",
            "host µs/msg",
            "engine µs/msg",
            "call p50 ms",
            "call p99 ms",
        ]);
        for (shape, size) in self.points() {
            for system in [System::Gateway, System::Tonic] {
                let m = |f: &dyn Fn(&StreamRun) -> Option<f64>, digits, scale: f64| {
                    format!("{:.*}", digits, self.median(system, shape, size, f) / scale)
                };
                t.row([
                    shape.name().to_owned(),
                    format!("{size} B"),
                    system.name().to_owned(),
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
            println!(
                "not counted: {} {} {} B: of {} calls, statuses {:?}, errors {:?}",
                r.system.name(),
                r.shape.name(),
                r.size,
                r.calls,
                r.statuses,
                r.errors
            );
        }
        for (shape, size) in self.points() {
            println!(
                "{} {size} B: host CPU per streamed message, gateway/tonic {:.2}x",
                shape.name(),
                self.ratio(shape, size)
            );
        }
        println!();
    }

    /// Per shape and size: host CPU per message, gateway / tonic, at most 0.5x: Figure 8's goal
    /// for unary calls, informational here (the issue sets none for streams).
    pub fn targets(&self) -> Vec<Target> {
        (self.points().into_iter())
            .map(|(shape, size)| {
                let what = format!(
                    "{} {size} B: host CPU per streamed message, gateway/tonic (informational)",
                    shape.name()
                );
                Target::ratio(what, Some(self.ratio(shape, size)), false, 0.5)
            })
            .collect()
    }

    /// Bars per (shape, size) and system: host and engine CPU per message, messages per second.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let points = self.points();
        let panel = |title: &str, f: &dyn Fn(&StreamRun) -> Option<f64>| BarPanel {
            title: title.to_owned(),
            groups: (points.iter())
                .map(|(shape, size)| format!("{} {size} B", shape.name()))
                .collect(),
            bars: [System::Gateway, System::Tonic]
                .iter()
                .map(|&s| Bars {
                    name: s.name().to_owned(),
                    values: (points.iter())
                        .map(|&(shape, size)| {
                            Some(self.median(s, shape, size, f))
                                .filter(|v| v.is_finite())
                                .unwrap_or(0.0)
                        })
                        .collect(),
                })
                .collect(),
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
        let report: Report = serde_json::from_str(text).unwrap();
        let cpu = (Duration::from_millis(3), Duration::from_millis(6));
        let run = report.run(System::Gateway, Shape::Bidi, 64, 100, cpu);
        assert_eq!(
            (run.calls, run.messages_per_s, run.call_p50_us, run.call_p99_us),
            (4, 150.0, Some(1500.0), Some(2500.0))
        );
        assert!(!run.all_ok() && run.host_cpu_us_per_message.is_none(), "{run:?}");
        let ok = r#"{"count": 3, "total": 1000000000, "errorDistribution": null,
            "statusCodeDistribution": {"OK": 3}, "latencyDistribution": null}"#;
        let run = serde_json::from_str::<Report>(ok)
            .unwrap()
            .run(System::Gateway, Shape::Bidi, 64, 100, cpu);
        assert!(run.all_ok());
        assert_eq!(
            (run.host_cpu_us_per_message, run.engine_cpu_us_per_message),
            (Some(10.0), Some(20.0))
        );
        assert_eq!(run.call_p50_us, None);
    }
}
