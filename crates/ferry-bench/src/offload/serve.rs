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
//! The same handler runs in all three (it reads every value and answers a digest, checked by
//! the client for every response). The load generator is open-loop: requests are scheduled at
//! the offered rate (Poisson would hide nothing here; the schedule is uniform) over several
//! gRPC connections, and latency is measured from the scheduled send, so a server that falls
//! behind is charged for it.
//!
//! **Host CPU per request** is the CPU time of the host's threads (the tonic runtime's thread;
//! the Ferry host's event loop and workers) over the measured window, divided by the requests
//! completed in it; the engine's thread is reported separately, and so is the load generator's.
//! CPU time comes from `/proc/self/task/<tid>/schedstat` (nanoseconds on CPU per thread). All
//! of them are threads of this process, pinned: the host on `--host-cpu`, the engine and the
//! load generator on `--client-cpu` (a machine with two cores has no third one for the
//! engine). The Ferry host's loop sleeps as soon as it is idle (`LoopConfig::spin` zero), as
//! tokio's does, so that neither host is charged for polling.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use ferry_offload::demo_host::{DIGEST_SEED, DemoHost, digest};
use ferry_offload::engine::{Engine, EngineConfig, RawCodec};
use prost::Message as _;
use serde_json::{Value, json};

use crate::BoxError;
use crate::generated::demo_prost as pb;
use crate::harness::cpu::threads_cpu_time;
use crate::harness::progress::Progress;
use crate::harness::{Histogram, pin_current_thread, round};

/// The DPU paper's three messages (Figure 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaperMessage {
    /// About 15 bytes of mixed fields.
    Small,
    /// 512 uint32 values, small ones likelier.
    Ints,
    /// An 8,000-character string.
    Chars,
}

impl PaperMessage {
    /// All three, in the paper's order.
    pub const ALL: [PaperMessage; 3] = [PaperMessage::Small, PaperMessage::Ints, PaperMessage::Chars];

    /// The name in the records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PaperMessage::Small => "small",
            PaperMessage::Ints => "x512-ints",
            PaperMessage::Chars => "x8000-chars",
        }
    }

    /// The gRPC method that takes it.
    fn path(self) -> &'static str {
        match self {
            PaperMessage::Small => "/ferry.offload.demo.Demo/SendSmall",
            PaperMessage::Ints => "/ferry.offload.demo.Demo/SendInts",
            PaperMessage::Chars => "/ferry.offload.demo.Demo/SendChars",
        }
    }
}

impl clap::ValueEnum for PaperMessage {
    fn value_variants<'a>() -> &'a [Self] {
        &PaperMessage::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// Who serves the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// The name in the records.
    pub fn name(self) -> &'static str {
        match self {
            Setup::Tonic => "tonic",
            Setup::Engine => "engine",
            Setup::Null => "null",
        }
    }
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
    /// How long the Ferry host's loop busy-polls before it sleeps (`LoopConfig::spin`;
    /// default zero: it sleeps at once, as tokio's does, so that host CPU is not charged for
    /// polling).
    pub host_spin: Duration,
}

impl Default for Figure8Options {
    fn default() -> Self {
        Figure8Options {
            messages: PaperMessage::ALL.to_vec(),
            rates: vec![10_000, 40_000],
            cpu_rate: 10_000,
            duration: Duration::from_secs(4),
            connections: 4,
            max_in_flight: 4096,
            reps: 3,
            host_cpu: 1,
            client_cpu: 0,
            seed: 8,
            unary_calls: 5000,
            host_spin: Duration::ZERO,
        }
    }
}

/// One run's measurements.
#[derive(Debug, Clone)]
pub struct Run {
    /// Who served.
    pub setup: Setup,
    /// What was sent.
    pub message: PaperMessage,
    /// The offered rate.
    pub rate: u64,
    /// Completed requests per second in the measured window.
    pub achieved: f64,
    /// Host CPU per completed request, µs.
    pub host_cpu_us: f64,
    /// Engine CPU per completed request, µs (0 without an engine).
    pub engine_cpu_us: f64,
    /// Load generator CPU per completed request, µs.
    pub client_cpu_us: f64,
    /// Latency percentiles from the scheduled send, µs: p50, p99, p99.9.
    pub latency_us: [f64; 3],
    /// Requests that failed (any status, or a wrong digest).
    pub errors: u64,
    /// Requests not sent because `max_in_flight` were outstanding.
    pub dropped: u64,
}

impl Run {
    fn to_json(&self) -> Value {
        json!({
            "setup": self.setup.name(),
            "message": self.message.name(),
            "offered_rps": self.rate,
            "achieved_rps": round(self.achieved, 1),
            "host_cpu_us_per_request": round(self.host_cpu_us, 3),
            "engine_cpu_us_per_request": round(self.engine_cpu_us, 3),
            "client_cpu_us_per_request": round(self.client_cpu_us, 3),
            "latency_us": {"p50": round(self.latency_us[0], 1), "p99": round(self.latency_us[1], 1), "p999": round(self.latency_us[2], 1)},
            "errors": self.errors,
            "dropped": self.dropped,
        })
    }
}

/// Every run of Figure 8, repetitions included.
#[derive(Debug, Clone)]
pub struct Figure8Report {
    /// The options it ran with.
    pub options: Figure8Options,
    /// Every open-loop run.
    pub runs: Vec<Run>,
    /// Every closed-loop latency measurement.
    pub unary: Vec<Unary>,
}

/// Unary latency: calls one after another on one connection, each sent when the previous one
/// is answered: the time a lone call takes, with no queueing.
#[derive(Debug, Clone)]
pub struct Unary {
    /// Who served.
    pub setup: Setup,
    /// What was sent.
    pub message: PaperMessage,
    /// Calls measured.
    pub calls: u64,
    /// p50, p99, p99.9 in µs.
    pub latency_us: [f64; 3],
}

impl Unary {
    fn to_json(&self) -> Value {
        json!({
            "setup": self.setup.name(),
            "message": self.message.name(),
            "unary_calls": self.calls,
            "unary_latency_us": {"p50": round(self.latency_us[0], 1), "p99": round(self.latency_us[1], 1), "p999": round(self.latency_us[2], 1)},
        })
    }
}

impl Figure8Report {
    /// The median of `f` over the repetitions of (setup, message, rate).
    pub fn median(
        &self,
        setup: Setup,
        message: PaperMessage,
        rate: u64,
        f: impl Fn(&Run) -> f64,
    ) -> Option<f64> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.setup == setup && r.message == message && r.rate == rate)
            .map(f)
            .collect();
        crate::harness::median(&values)
    }

    /// The median unary p50 of (setup, message), µs.
    pub fn unary_p50(&self, setup: Setup, message: PaperMessage) -> Option<f64> {
        let values: Vec<f64> = self
            .unary
            .iter()
            .filter(|u| u.setup == setup && u.message == message)
            .map(|u| u.latency_us[0])
            .collect();
        crate::harness::median(&values)
    }

    /// The table: per message and rate, each setup's medians, then the ratios and targets.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<12} {:>7} {:<7} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>6}",
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
            "errors"
        );
        for &message in &self.options.messages {
            for &rate in &self.options.rates {
                for setup in Setup::ALL {
                    let m =
                        |f: &dyn Fn(&Run) -> f64| self.median(setup, message, rate, f).unwrap_or(f64::NAN);
                    let _ = writeln!(
                        out,
                        "{:<12} {:>7} {:<7} {:>10.0} {:>10.2} {:>10.2} {:>10.2} {:>9.1} {:>9.1} {:>9.1} {:>6.0}",
                        message.name(),
                        rate,
                        setup.name(),
                        m(&|r| r.achieved),
                        m(&|r| r.host_cpu_us),
                        m(&|r| r.engine_cpu_us),
                        m(&|r| r.client_cpu_us),
                        m(&|r| r.latency_us[0]),
                        m(&|r| r.latency_us[1]),
                        m(&|r| r.latency_us[2]),
                        m(&|r| (r.errors + r.dropped) as f64),
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "\nunary latency, closed loop (one call at a time, one connection):"
        );
        for &message in &self.options.messages {
            for setup in Setup::ALL {
                let m = |i: usize| {
                    crate::harness::median(
                        &self
                            .unary
                            .iter()
                            .filter(|u| u.setup == setup && u.message == message)
                            .map(|u| u.latency_us[i])
                            .collect::<Vec<_>>(),
                    )
                    .unwrap_or(f64::NAN)
                };
                let _ = writeln!(
                    out,
                    "{:<12} {:<7} p50 {:>8.1} µs   p99 {:>8.1} µs   p99.9 {:>8.1} µs",
                    message.name(),
                    setup.name(),
                    m(0),
                    m(1),
                    m(2)
                );
            }
        }
        out.push('\n');
        out.push_str(&self.findings());
        out
    }

    /// The targets, met or missed, from the medians.
    pub fn findings(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let top = self.options.cpu_rate;
        for &message in &self.options.messages {
            let host = |s| {
                self.median(s, message, top, |r| r.host_cpu_us)
                    .unwrap_or(f64::NAN)
            };
            let ratio = host(Setup::Engine) / host(Setup::Tonic);
            let bound = host(Setup::Null) / host(Setup::Tonic);
            let verdict = if ratio <= 0.5 { "met" } else { "MISSED" };
            let _ = writeln!(
                out,
                "{:<12} host CPU per request at {top} req/s: engine/tonic {ratio:.2}x (target <= 0.5x: {verdict}); null/tonic {bound:.2}x (the bound)",
                message.name()
            );
            let p50 = |s| self.unary_p50(s, message).unwrap_or(f64::NAN);
            let added = p50(Setup::Engine) - p50(Setup::Tonic);
            let verdict = if added <= 30.0 { "met" } else { "MISSED" };
            let _ = writeln!(
                out,
                "{:<12} unary p50: tonic {:.1} µs, engine {:.1} µs: the engine adds {added:.1} µs (target <= 30 µs: {verdict})",
                message.name(),
                p50(Setup::Tonic),
                p50(Setup::Engine),
            );
        }
        out
    }
}

/// Runs Figure 8: every (repetition, message, rate, setup), setups interleaved.
pub fn figure8(opts: &Figure8Options, progress: Option<&Progress>) -> Result<Figure8Report, BoxError> {
    let mut runs = Vec::new();
    let mut unary = Vec::new();
    for rep in 0..opts.reps.max(1) {
        for &message in &opts.messages {
            let requests = Requests::new(message, opts.seed);
            for setup in Setup::ALL {
                let step = |what: String| {
                    if let Some(p) = progress {
                        p.start(format!(
                            "{} {} {what} (rep {})",
                            message.name(),
                            setup.name(),
                            rep + 1
                        ));
                    }
                };
                let done = || {
                    if let Some(p) = progress {
                        p.done();
                    }
                };
                let (servers, addr) = Servers::start(setup, opts, &requests)?;
                step("unary".into());
                unary.push(unary_latency(opts, setup, message, addr, &requests)?);
                done();
                for &rate in &opts.rates {
                    step(format!("{rate} req/s"));
                    runs.push(run(opts, setup, message, rate, addr, &requests)?);
                    done();
                }
                servers.stop();
            }
        }
    }
    Ok(Figure8Report {
        options: opts.clone(),
        runs,
        unary,
    })
}

/// The number of runs [`figure8`] makes (for a progress bar).
pub fn figure8_runs(opts: &Figure8Options) -> u64 {
    (opts.reps.max(1) * opts.messages.len() * (opts.rates.len() + 1) * Setup::ALL.len()) as u64
}

/// Writes the records (`json`) and the plot (`svg`: host CPU per request and requests per
/// second, per message and setup, at the highest rate).
pub fn write_figure8(
    report: &Figure8Report,
    json: Option<&Path>,
    svg: Option<&Path>,
    took: Duration,
) -> Result<(), BoxError> {
    if let Some(path) = json {
        let o = &report.options;
        let settings = json!({
            "figure": 8,
            "messages": o.messages.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "offered_rps": o.rates,
            "cpu_compared_at_rps": o.cpu_rate,
            "duration_ms": o.duration.as_millis() as u64,
            "connections": o.connections,
            "max_in_flight": o.max_in_flight,
            "reps": o.reps,
            "host_cpu": o.host_cpu,
            "client_cpu": o.client_cpu,
            "seed": o.seed,
            "unary_calls": o.unary_calls,
            "host_spin_us": o.host_spin.as_micros() as u64,
        });
        let records: Vec<Value> = report
            .runs
            .iter()
            .map(Run::to_json)
            .chain(report.unary.iter().map(Unary::to_json))
            .collect();
        crate::harness::report::save(
            path,
            "offload-figure8",
            settings,
            &records,
            json!({"findings": report.findings()}),
            took,
        )?;
    }
    if let Some(path) = svg {
        let at = report.options.cpu_rate;
        let top = report.options.rates.iter().copied().max().unwrap_or(0);
        let groups: Vec<String> = report
            .options
            .messages
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        let bars = |rate: u64, f: &dyn Fn(&Run) -> f64| -> Vec<crate::plot::Bars> {
            Setup::ALL
                .iter()
                .map(|&s| crate::plot::Bars {
                    name: s.name().to_string(),
                    values: report
                        .options
                        .messages
                        .iter()
                        .map(|&m| report.median(s, m, rate, f).unwrap_or(0.0))
                        .collect(),
                })
                .collect()
        };
        let panels = [
            crate::plot::BarPanel {
                title: format!("host CPU per request at {at} req/s (µs)"),
                groups: groups.clone(),
                bars: bars(at, &|r| r.host_cpu_us),
                ..Default::default()
            },
            crate::plot::BarPanel {
                title: format!("engine CPU per request at {at} req/s (µs)"),
                groups: groups.clone(),
                bars: bars(at, &|r| r.engine_cpu_us),
                ..Default::default()
            },
            crate::plot::BarPanel {
                title: format!("requests per second achieved (offered {top})"),
                groups,
                bars: bars(top, &|r| r.achieved),
                ..Default::default()
            },
        ];
        crate::plot::bars_svg(
            path,
            "DPU paper Figure 8 on one machine: tonic host vs offload engine + Ferry host",
            panels.len(),
            &panels,
        )?;
    }
    Ok(())
}

/// The requests of one message: several distinct ones (seeded), encoded once, each with the
/// digest its answer must carry.
struct Requests {
    bodies: Vec<Bytes>,
    digests: Vec<u64>,
    /// The decoded requests: the null host's pre-built objects.
    prebuilt: Vec<Prebuilt>,
    path: &'static str,
}

#[derive(Clone)]
enum Prebuilt {
    Small(pb::Small),
    Ints(pb::Ints),
    Chars(pb::Chars),
}

impl Prebuilt {
    /// The handler's work: the digest (the same computation as `DemoHost`'s).
    fn answer(&self) -> pb::Ack {
        match self {
            Prebuilt::Small(r) => pb::Ack {
                digest: small_digest(r),
                count: 1,
            },
            Prebuilt::Ints(r) => pb::Ack {
                digest: r.values.iter().fold(0u64, |s, &v| s.wrapping_add(u64::from(v))),
                count: r.values.len() as u32,
            },
            Prebuilt::Chars(r) => pb::Ack {
                digest: digest(DIGEST_SEED, r.text.as_bytes()),
                count: r.text.len() as u32,
            },
        }
    }
}

fn small_digest(r: &pb::Small) -> u64 {
    ferry_offload::demo_host::small_digest(r.id, r.timestamp, r.flag, r.score, r.tag.as_bytes())
}

/// Distinct requests per message.
const VARIANTS: usize = 64;

impl Requests {
    fn new(message: PaperMessage, seed: u64) -> Requests {
        let mut prebuilt = Vec::with_capacity(VARIANTS);
        for v in 0..VARIANTS as u64 {
            let seed = seed.wrapping_mul(1_000_003).wrapping_add(v);
            prebuilt.push(match message {
                PaperMessage::Small => Prebuilt::Small(pb::Small {
                    id: 1000 + v as u32,
                    timestamp: 1_700_000 + v as i64,
                    flag: v % 2 == 0,
                    score: 0.5,
                    tag: "ab".into(),
                }),
                PaperMessage::Ints => Prebuilt::Ints(pb::Ints {
                    values: super::decode::int_values(512, seed),
                }),
                PaperMessage::Chars => Prebuilt::Chars(pb::Chars {
                    text: super::decode::char_text(8000, seed),
                }),
            });
        }
        let bodies = prebuilt
            .iter()
            .map(|p| {
                Bytes::from(match p {
                    Prebuilt::Small(m) => m.encode_to_vec(),
                    Prebuilt::Ints(m) => m.encode_to_vec(),
                    Prebuilt::Chars(m) => m.encode_to_vec(),
                })
            })
            .collect();
        let digests = prebuilt.iter().map(|p| p.answer().digest).collect();
        Requests {
            bodies,
            digests,
            prebuilt,
            path: message.path(),
        }
    }
}

/// Thread names (at most 15 bytes: what `comm` keeps).
const TONIC_HOST: &str = "offload-tonic";
const FERRY_HOST: &str = "ferry-rpc-";
const ENGINE: &str = "ferry-gateway";
const LOAD: &str = "offload-load";

/// The servers of one setup, running.
enum Servers {
    Tonic(std::thread::JoinHandle<()>, tokio::sync::oneshot::Sender<()>),
    Engine(Box<(Engine, ferry::rpc::Server, tempfile::TempDir)>),
}

impl Servers {
    fn start(
        setup: Setup,
        opts: &Figure8Options,
        requests: &Requests,
    ) -> Result<(Servers, SocketAddr), BoxError> {
        match setup {
            Setup::Tonic | Setup::Null => {
                let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
                let addr = listener.local_addr()?;
                listener.set_nonblocking(true)?;
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let cpu = opts.host_cpu;
                let prebuilt = requests.prebuilt.clone();
                let thread = std::thread::Builder::new()
                    .name(TONIC_HOST.into())
                    .spawn(move || {
                        let _ = pin_current_thread(cpu);
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .expect("tokio runtime");
                        rt.block_on(async move {
                            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                            let shutdown = async {
                                let _ = stopped.await;
                            };
                            let served = if setup == Setup::Tonic {
                                tonic::transport::Server::builder()
                                    .tcp_nodelay(true)
                                    .add_service(pb::demo_server::DemoServer::new(TonicHost))
                                    .serve_with_incoming_shutdown(nodelay(incoming), shutdown)
                                    .await
                            } else {
                                let router = axum::Router::new()
                                    .fallback_service(NullHost(std::sync::Arc::new(prebuilt)));
                                tonic::transport::Server::builder()
                                    .serve_with_incoming_shutdown(
                                        tonic::service::Routes::from(router),
                                        nodelay(incoming),
                                        shutdown,
                                    )
                                    .await
                            };
                            served.expect("the tonic host serves");
                        });
                    })?;
                Ok((Servers::Tonic(thread, stop), addr))
            }
            Setup::Engine => {
                let dir = tempfile::tempdir()?;
                let host_addr = format!("shm://{}", dir.path().join("host.sock").display());
                let services =
                    ferry_offload::demo_host::services(ferry_offload::demo::DemoServer::new(DemoHost))?;
                let config = ferry::rpc::LoopConfig {
                    spin: opts.host_spin,
                    ..ferry::rpc::LoopConfig::default()
                };
                let host = ferry::rpc::Server::builder(services)
                    .listen(&host_addr)
                    .loops(1)
                    .pin(vec![opts.host_cpu])
                    .config(config)
                    .start()?;
                let mut engine = EngineConfig::new(host_addr);
                engine.listen = SocketAddr::from(([127, 0, 0, 1], 0));
                engine.core = Some(opts.client_cpu);
                let engine = Engine::start(engine)?;
                engine.wait_ready(Duration::from_secs(20))?;
                let addr = engine.local_addr();
                Ok((Servers::Engine(Box::new((engine, host, dir))), addr))
            }
        }
    }

    fn stop(self) {
        match self {
            Servers::Tonic(thread, stop) => {
                let _ = stop.send(());
                let _ = thread.join();
            }
            Servers::Engine(parts) => {
                let (engine, host, _dir) = *parts;
                let _ = engine.shutdown();
                host.shutdown(Duration::from_millis(100));
            }
        }
    }
}

/// TCP_NODELAY on every accepted connection (tonic sets it only on listeners it binds).
fn nodelay(
    incoming: tokio_stream::wrappers::TcpListenerStream,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt as _;
    incoming.map(|s| s.and_then(|s| s.set_nodelay(true).map(|()| s)))
}

/// The tonic host: prost decodes every request before the handler runs.
#[derive(Debug, Clone, Copy)]
struct TonicHost;

#[tonic::async_trait]
impl pb::demo_server::Demo for TonicHost {
    async fn echo(&self, _: tonic::Request<pb::Kinds>) -> Result<tonic::Response<pb::Kinds>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in the benchmark"))
    }

    async fn fail(
        &self,
        _: tonic::Request<pb::FailRequest>,
    ) -> Result<tonic::Response<pb::Empty>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in the benchmark"))
    }

    async fn sleep(
        &self,
        _: tonic::Request<pb::SleepRequest>,
    ) -> Result<tonic::Response<pb::SleepReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("not in the benchmark"))
    }

    async fn send_small(
        &self,
        request: tonic::Request<pb::Small>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        Ok(tonic::Response::new(
            Prebuilt::Small(request.into_inner()).answer(),
        ))
    }

    async fn send_ints(
        &self,
        request: tonic::Request<pb::Ints>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        Ok(tonic::Response::new(
            Prebuilt::Ints(request.into_inner()).answer(),
        ))
    }

    async fn send_chars(
        &self,
        request: tonic::Request<pb::Chars>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        Ok(tonic::Response::new(
            Prebuilt::Chars(request.into_inner()).answer(),
        ))
    }
}

/// The null host: every request's body is received and dropped undecoded, and the handler runs
/// on the pre-built object the body would have decoded to (found by the body's position in the
/// request list: the client sends body `i % VARIANTS` and says which in the `x-variant` header).
#[derive(Clone)]
struct NullHost(std::sync::Arc<Vec<Prebuilt>>);

impl tower_service::Service<http::Request<axum::body::Body>> for NullHost {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<axum::body::Body>) -> Self::Future {
        let prebuilt = self.0.clone();
        Box::pin(async move {
            let variant = req
                .headers()
                .get("x-variant")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            let mut grpc = tonic::server::Grpc::new(RawCodec);
            Ok(grpc
                .unary(NullCall(prebuilt, variant), req.map(tonic::body::Body::new))
                .await)
        })
    }
}

struct NullCall(std::sync::Arc<Vec<Prebuilt>>, usize);

impl tonic::server::UnaryService<Bytes> for NullCall {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, tonic::Status>>;

    fn call(&mut self, _: tonic::Request<Bytes>) -> Self::Future {
        let answer = self.0[self.1 % self.0.len()].answer().encode_to_vec();
        std::future::ready(Ok(tonic::Response::new(Bytes::from(answer))))
    }
}

/// One run: servers up, warm-up, measured window, servers down.
/// One open-loop run at `rate` against the servers at `addr`.
fn run(
    opts: &Figure8Options,
    setup: Setup,
    message: PaperMessage,
    rate: u64,
    addr: SocketAddr,
    requests: &Requests,
) -> Result<Run, BoxError> {
    let host_prefix = if setup == Setup::Engine {
        FERRY_HOST
    } else {
        TONIC_HOST
    };
    let load = LoadOptions {
        addr,
        rate,
        warmup: opts.duration / 10,
        duration: opts.duration,
        connections: opts.connections.max(1),
        max_in_flight: opts.max_in_flight.max(1),
        cpu: opts.client_cpu,
        host_prefix,
        // Only the null host reads it: elsewhere it would be one more header to carry.
        tell_variant: setup == Setup::Null,
    };
    let bodies = requests.bodies.clone();
    let digests = requests.digests.clone();
    let path = requests.path;
    let outcome = std::thread::Builder::new()
        .name(LOAD.into())
        .spawn(move || generate(&load, path, &bodies, &digests))?
        .join()
        .map_err(|_| "the load generator panicked")??;
    let n = outcome.completed.max(1) as f64;
    let us = |d: Duration| d.as_secs_f64() * 1e6 / n;
    Ok(Run {
        setup,
        message,
        rate,
        achieved: outcome.completed as f64 / outcome.window.as_secs_f64(),
        host_cpu_us: us(outcome.host_cpu),
        engine_cpu_us: if setup == Setup::Engine {
            us(outcome.engine_cpu)
        } else {
            0.0
        },
        client_cpu_us: us(outcome.client_cpu),
        latency_us: [0.5, 0.99, 0.999].map(|q| outcome.latency.quantile(q).unwrap_or(0) as f64 / 1000.0),
        errors: outcome.errors,
        dropped: outcome.dropped,
    })
}

/// The closed-loop latency of `setup` for `message`: `opts.unary_calls` calls one after the
/// other over one connection (after a tenth as many to warm up), on the load generator's CPU.
fn unary_latency(
    opts: &Figure8Options,
    setup: Setup,
    message: PaperMessage,
    addr: SocketAddr,
    requests: &Requests,
) -> Result<Unary, BoxError> {
    let bodies = requests.bodies.clone();
    let digests = requests.digests.clone();
    let path = requests.path;
    let calls = opts.unary_calls.max(1);
    let cpu = opts.client_cpu;
    let variant = setup == Setup::Null;
    let latency = std::thread::Builder::new()
        .name(LOAD.into())
        .spawn(move || -> Result<Histogram, BoxError> {
            let _ = pin_current_thread(cpu);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
                    .tcp_nodelay(true)
                    .connect()
                    .await?;
                let mut h = Histogram::default();
                for i in 0..calls + calls / 10 {
                    let k = (i % bodies.len() as u64) as usize;
                    let sent = std::time::Instant::now();
                    let answer = call(channel.clone(), path, bodies[k].clone(), variant.then_some(k)).await;
                    let took = sent.elapsed();
                    if answer != Some(digests[k]) {
                        return Err(format!("unary call {i}: a wrong or failed answer").into());
                    }
                    if i >= calls / 10 {
                        h.record_duration(took);
                    }
                }
                Ok(h)
            })
        })?
        .join()
        .map_err(|_| "the latency client panicked")??;
    Ok(Unary {
        setup,
        message,
        calls: latency.count(),
        latency_us: [0.5, 0.99, 0.999].map(|q| latency.quantile(q).unwrap_or(0) as f64 / 1000.0),
    })
}

struct LoadOptions {
    addr: SocketAddr,
    rate: u64,
    warmup: Duration,
    duration: Duration,
    connections: usize,
    max_in_flight: usize,
    cpu: usize,
    host_prefix: &'static str,
    /// Send the `x-variant` header (for the null host).
    tell_variant: bool,
}

/// What the load generator measured over the window.
struct Outcome {
    completed: u64,
    errors: u64,
    dropped: u64,
    window: Duration,
    latency: Histogram,
    host_cpu: Duration,
    engine_cpu: Duration,
    client_cpu: Duration,
}

/// CPU times of the host, the engine and the load generator, now.
fn cpu_now(host_prefix: &str) -> [Duration; 3] {
    [
        threads_cpu_time(host_prefix),
        threads_cpu_time(ENGINE),
        threads_cpu_time(LOAD),
    ]
}

/// The open-loop load: requests scheduled every `1/rate` over the connections, each answer's
/// digest checked; latency and completions counted in the window after the warm-up.
fn generate(
    o: &LoadOptions,
    path: &'static str,
    bodies: &[Bytes],
    digests: &[u64],
) -> Result<Outcome, BoxError> {
    let _ = pin_current_thread(o.cpu);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let mut channels = Vec::with_capacity(o.connections);
        for _ in 0..o.connections {
            let endpoint =
                tonic::transport::Endpoint::from_shared(format!("http://{}", o.addr))?.tcp_nodelay(true);
            channels.push(endpoint.connect().await?);
        }
        #[derive(Default)]
        struct Tally {
            completed: u64,
            errors: u64,
            in_flight: usize,
            latency: Option<Histogram>,
        }
        let tally = Rc::new(RefCell::new(Tally {
            latency: Some(Histogram::default()),
            ..Tally::default()
        }));
        let interval = Duration::from_secs_f64(1.0 / o.rate.max(1) as f64);
        let start = tokio::time::Instant::now();
        let measure_from = start + o.warmup;
        let end = measure_from + o.duration;
        let mut dropped = 0u64;
        let mut at_window: Option<([Duration; 3], u64, u64)> = None;
        let mut i = 0u64;
        loop {
            let scheduled = start + interval.mul_f64(i as f64);
            if scheduled >= end {
                break;
            }
            if at_window.is_none() && scheduled >= measure_from {
                let t = tally.borrow();
                at_window = Some((cpu_now(o.host_prefix), t.completed, t.errors));
            }
            tokio::time::sleep_until(scheduled).await;
            if tally.borrow().in_flight >= o.max_in_flight {
                dropped += u64::from(scheduled >= measure_from);
                i += 1;
                continue;
            }
            tally.borrow_mut().in_flight += 1;
            let k = (i % bodies.len() as u64) as usize;
            let body = bodies[k].clone();
            let want = digests[k];
            let channel = channels[(i % channels.len() as u64) as usize].clone();
            let tally = tally.clone();
            let measured = scheduled >= measure_from;
            let variant = o.tell_variant.then_some(k);
            tokio::task::spawn_local(async move {
                // From the send, not from the schedule: tokio's timer has a 1 ms granularity,
                // so requests leave in bursts at each millisecond tick (an open-loop schedule
                // at that resolution), and their schedule would charge every call up to 1 ms.
                let sent = tokio::time::Instant::now();
                let ok = call(channel, path, body, variant).await == Some(want);
                let elapsed = sent.elapsed();
                let mut t = tally.borrow_mut();
                t.in_flight -= 1;
                if measured {
                    if ok {
                        t.completed += 1;
                        if let Some(h) = t.latency.as_mut() {
                            h.record_duration(elapsed);
                        }
                    } else {
                        t.errors += 1;
                    }
                }
            });
            i += 1;
        }
        // The window ends at the last scheduled send; answers still coming count if they come
        // within a second.
        let window_end = tokio::time::Instant::now();
        let cpu_end = cpu_now(o.host_prefix);
        let deadline = window_end + Duration::from_secs(1);
        while tally.borrow().in_flight > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let (cpu_start, _, _) = at_window.ok_or("the run had no measured window")?;
        let mut t = tally.borrow_mut();
        let errors = t.errors + t.in_flight as u64;
        Ok::<Outcome, BoxError>(Outcome {
            completed: t.completed,
            errors,
            dropped,
            window: window_end.duration_since(measure_from),
            latency: t.latency.take().expect("histogram"),
            host_cpu: cpu_end[0].saturating_sub(cpu_start[0]),
            engine_cpu: cpu_end[1].saturating_sub(cpu_start[1]),
            client_cpu: cpu_end[2].saturating_sub(cpu_start[2]),
        })
    })
}

/// One call; the answer's digest, or `None` if it failed.
async fn call(
    channel: tonic::transport::Channel,
    path: &'static str,
    body: Bytes,
    variant: Option<usize>,
) -> Option<u64> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.ok()?;
    let mut request = tonic::Request::new(body);
    if let Some(v) = variant {
        request
            .metadata_mut()
            .insert("x-variant", v.to_string().parse().ok()?);
    }
    let response = grpc
        .unary(request, http::uri::PathAndQuery::from_static(path), RawCodec)
        .await
        .ok()?;
    pb::Ack::decode(response.into_inner()).ok().map(|a| a.digest)
}
