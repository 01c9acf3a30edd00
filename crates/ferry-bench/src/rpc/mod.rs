//! `ferry bench rpc`: Ferry's RPC layer (`ferry-rpc`) end to end, the echo experiment of the
//! Cornflakes paper (Figure 2: two 2048-byte fields; Figure 9: one 1024-byte payload), over
//! TCP loopback and over shared memory, against a no-serialization echo, the peer libraries,
//! tonic, and the raw shared-memory ping-pong, side by side in one run.
//!
//! ```text
//!  plan.rs     options, systems, transports, payloads; the configurations in run order
//!  service.rs  the server: one busy-polling ferry-rpc loop, a method per echo variant
//!  client.rs   a client EventLoop keeping `in_flight` calls outstanding, every response checked
//!  tonic.rs    the same echo with tonic (gRPC over HTTP/2), on the same two CPUs
//!  report.rs   records (medians over repetitions), table, targets, plot
//!  stream/     the streaming section: download, upload and ping-pong streams, Ferry's tokio
//!              driver over TCP and shared memory against tonic (issue 26)
//! ```
//!
//! The server is one [`ferry_rpc::Server`] loop pinned to the server CPU; the client an
//! [`ferry_rpc::EventLoop`] pinned to the other, both busy-polling; the ping-pong is
//! [`crate::shm::run_raw`]. Every run measures the window of [`crate::harness::window`].
//! Latency is from just before a call is built to just after its response is checked, in an
//! HDR histogram: every call with one in flight (one clock reading each), every 16th with
//! more. calls/s: calls completed in the window over its length. CPU per call: each side's
//! thread CPU time over the window; both Ferry sides busy-poll, so it is wall time per call,
//! not work (the callgrind profile in `docs/benchmarks/rpc.md` gives that).
//!
//! Every repetition runs every configuration, in an order that puts what a target compares
//! close together in time ([`plan::plan`]); every figure is the median over the repetitions,
//! and every target ratio the median over repetitions of the ratio within one (the VMs this
//! runs on change speed from one moment to the next). A phase in which no call completes for
//! 10 s fails, as does a control call that takes 30 s. The streaming section ([`stream`])
//! runs after the echo in every repetition, its configurations interleaved the same way.

mod client;
mod hosts;
mod plan;
mod report;
mod service;
mod stream;
mod tonic;

use std::path::Path;
use std::time::{Duration, Instant};

use ferry_net::tls::test_certs::TestCa;
use ferry_rpc::session::{ClientConfig, ServerConfig};
use ferry_rpc::{ClientAuth, ConnConfig, EventLoop, LoopConfig, TlsClient, TlsServer};
use ferry_shm::ShmConfig;
use serde_json::{Value, json};

use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::progress::Progress;
use crate::harness::window::Span;
use crate::harness::{self, Budget, Histogram, Link};
use crate::{BoxError, shm};

pub use plan::{Args, Fields, Net, Point, Section, System, Transport};

use hosts::Hosts;

use plan::{ECHO, MAX_IN_FLIGHT};
use report::Records;
use stream::StreamConfig;

/// Measured time per repetition, full and `--quick`; repetitions, full and `--quick`.
const FULL_MS: u64 = 300;
const QUICK_MS: u64 = 40;
const FULL_REPS: usize = 7;
const QUICK_REPS: usize = 1;

/// The CPUs of a run: (client, server).
pub(crate) type Cpus = (usize, usize);

/// What one run measured over its window.
#[derive(Debug, Clone)]
struct Measured {
    /// Calls completed in the window.
    calls: u64,
    /// Length of the window.
    elapsed: Duration,
    /// Round trips in ns: every call with one in flight, every 16th with more.
    latency: Histogram,
    /// The client thread's CPU time over the window.
    client_cpu: Duration,
    /// The server (loop) thread's CPU time over the window.
    server_cpu: Duration,
}

impl Measured {
    /// The window's figures from the client's `phase` over `elapsed`, its thread's CPU time
    /// `client_cpu` and the server's `span`: an error unless the server served exactly the
    /// calls the client completed.
    fn new(
        phase: harness::closed::Phase,
        elapsed: Duration,
        client_cpu: Duration,
        span: Span,
    ) -> Result<Measured, BoxError> {
        if span.served != phase.completed {
            return Err(format!(
                "the server served {} calls in the window, the client completed {}",
                span.served, phase.completed
            )
            .into());
        }
        Ok(Measured {
            calls: phase.completed,
            elapsed,
            latency: phase.latency,
            client_cpu,
            server_cpu: span.cpu,
        })
    }
}

/// The loops' settings, server and client alike: busy-polling, room for every call in flight.
fn loop_config() -> LoopConfig {
    LoopConfig {
        spin: Duration::MAX,
        server: ServerConfig {
            max_in_flight: MAX_IN_FLIGHT,
        },
        client: ClientConfig {
            window: MAX_IN_FLIGHT,
        },
        conn: ConnConfig {
            shm: ShmConfig {
                spin: Duration::MAX,
                ..ShmConfig::default()
            },
            ..ConnConfig::default()
        },
        ..LoopConfig::default()
    }
}

/// [`loop_config`] with TLS for `--tls`: a CA and a certificate for 127.0.0.1 made for the
/// run; the server listens on `tls://` too, and the client trusts the CA.
fn tls_config() -> Result<LoopConfig, BoxError> {
    let ca = TestCa::new("ferry bench rpc CA");
    let leaf = ca.leaf("ferry bench rpc", &["127.0.0.1"]);
    let mut config = loop_config();
    config.conn.tls_server = Some(TlsServer::from_pem(
        leaf.cert.as_bytes(),
        leaf.key.as_bytes(),
        ClientAuth::None,
    )?);
    config.conn.tls_client = Some(TlsClient::from_pem(ca.pem().as_bytes(), None)?);
    Ok(config)
}

/// Runs the event-loop configurations `points` against a fresh server on `hosts`; returns
/// their measurements in order.
fn run_loop_points(
    points: &[Point],
    budget: Budget,
    cpus: Cpus,
    hosts: &Hosts,
    progress: &Progress,
) -> Result<Vec<Measured>, BoxError> {
    let config = match points.iter().any(|p| p.link == Link::Tls) {
        true => tls_config()?,
        false => loop_config(),
    };
    let server = hosts.in_server(|| {
        service::start(
            &harness::sorted(points.iter().map(|p| p.transport)),
            hosts.server_ip(),
            Some(cpus.1),
            config.clone(),
        )
    })?;
    harness::on_cpu("rpc-client", cpus.0, || {
        hosts.enter_client()?;
        let mut lp = EventLoop::new(config)?;
        let mut out = Vec::with_capacity(points.len());
        for point in points {
            progress.start(point.label());
            let addr = server.addr(point.transport, point.link)?;
            let m = client::run(&mut lp, addr, point, budget, &server.readings)
                .map_err(|e| format!("{}: {e}", point.label()))?;
            progress.done();
            out.push(m);
        }
        Ok(out)
    })
}

/// One ping-pong run.
fn run_ping_pong(budget: Budget, cpus: Cpus) -> Result<Measured, BoxError> {
    let r = shm::run_raw(budget, cpus, 0)?;
    Ok(Measured {
        calls: r.requests,
        elapsed: r.elapsed,
        latency: r.hist,
        client_cpu: r.client_cpu,
        server_cpu: r.server_cpu,
    })
}

/// A measuring run of `ferry bench rpc`.
struct Rpc {
    points: Vec<Point>,
    streams: Vec<StreamConfig>,
    budget: Budget,
    reps: usize,
    cpus: Cpus,
    /// `--net` and `--loss`, for the settings.
    net: (Net, Option<u8>),
}

impl Benchmark for Rpc {
    const NAME: &'static str = "rpc";
    type Records = Records;

    fn plan(&self) -> u64 {
        (self.reps * (self.points.len() + self.streams.len())) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Records), BoxError> {
        let (points, budget, cpus) = (&self.points, self.budget, self.cpus);
        if points.is_empty() && self.streams.is_empty() {
            return Err(
                "nothing to run: no configuration matches --sections, --systems and --transports".into(),
            );
        }
        let started = Instant::now();
        let clock_ns = harness::clock_cost_ns();
        let hosts = Hosts::new(self.net.0, self.net.1)?;
        progress.suspend(|| {
            if points.is_empty() {
                return;
            }
            println!(
                "ferry bench rpc: echo calls, client on CPU {}, server loop on CPU {}, {} repetition(s) of {} per configuration (median shown); one clock reading costs {clock_ns:.0} ns and is inside every timed call.",
                cpus.0,
                cpus.1,
                self.reps,
                budget.describe("calls"),
            );
            println!(
                "srv/cli ns/call: each thread's CPU time over the window per call (both busy-poll: wall time, not work; tonic's threads sleep when idle).\n"
            );
        });
        let mut runs: Vec<Vec<Measured>> = vec![Vec::new(); points.len()];
        let mut stream_runs: Vec<Vec<stream::StreamMeasured>> = vec![Vec::new(); self.streams.len()];
        for _ in 0..self.reps {
            let mut measured = Vec::with_capacity(points.len());
            // Consecutive event-loop configurations share one server.
            for group in points.chunk_by(|a, b| a.system.on_loop() && b.system.on_loop()) {
                match group[0].system {
                    System::Tonic | System::PingPong => {
                        let point = &group[0];
                        progress.start(point.label());
                        let m = match point.system {
                            System::Tonic => tonic::run(point, budget, cpus),
                            _ => run_ping_pong(budget, cpus),
                        };
                        measured.push(m.map_err(|e| format!("{}: {e}", point.label()))?);
                        progress.done();
                    }
                    _ => measured.extend(run_loop_points(group, budget, cpus, &hosts, progress)?),
                }
            }
            for (run, m) in runs.iter_mut().zip(measured) {
                run.push(m);
            }
            for (config, run) in self.streams.iter().zip(&mut stream_runs) {
                progress.start(config.label());
                let m = stream::run(config, cpus).map_err(|e| format!("{}: {e}", config.label()))?;
                run.push(m);
                progress.done();
            }
        }
        let mut records: Vec<_> = points
            .iter()
            .zip(&runs)
            .map(|(&p, r)| report::summarize(p, r))
            .collect();
        records.sort_by_key(|r| r.point.display_key());
        let mut streams: Vec<_> = self
            .streams
            .iter()
            .zip(&stream_runs)
            .map(|(&c, r)| stream::summarize(c, r))
            .collect();
        streams.sort_by_key(|r| r.config.display_key());
        let mut settings = settings(budget, self.reps, clock_ns, cpus, started.elapsed());
        settings["net"] = json!({
            "hosts": self.net.0,
            "loss_percent": self.net.1.unwrap_or(0),
            "packets_dropped": hosts.dropped()?,
            "path": match self.net.0 {
                Net::Loopback => "client and server on one host, 127.0.0.1",
                Net::Veth => "the client in one network namespace (10.252.0.1), the server in another (10.252.0.2), joined by a veth pair of MTU 1500, or with --loss by a veth each to a bridge in a third namespace dropping that percentage of what it forwards (nftables numgen random); both namespaces made for the run and deleted after",
            },
        });
        Ok((settings, Records { records, streams }))
    }

    /// Each section's table, if it has records.
    fn table(records: &Records) {
        if !records.records.is_empty() {
            report::table(&records.records);
        }
        if !records.streams.is_empty() {
            stream::table(&records.streams);
        }
    }

    fn targets(records: &Records) -> Vec<Target> {
        let mut targets = Vec::new();
        if !records.records.is_empty() {
            targets = report::targets(&records.records);
        }
        if !records.streams.is_empty() {
            targets.extend(stream::targets(&records.streams));
        }
        targets
    }

    fn plot(records: &Records, path: &Path) -> Result<(), BoxError> {
        report::plot(path, records)
    }
}

/// The results' settings: the run's parameters and how each figure and system is measured.
fn settings(budget: Budget, reps: usize, clock_ns: f64, cpus: Cpus, took: Duration) -> Value {
    json!({
        "budget": budget.to_json("calls"),
        "warmup": "a tenth of the budget, before the measured window",
        "reps": reps,
        "statistic": "median over repetitions of each run's percentile, rate and CPU figures",
        "latency": "from just before a call is built to just after its response is checked; HdrHistogram, three significant digits; one in flight: every call, one clock reading each; more: every 16th call",
        "clock_cost_ns": clock_ns,
        "client_cpu": cpus.0,
        "server_cpu": cpus.1,
        "cpu_per_call": "thread CPU time (getrusage RUSAGE_THREAD) over the measured window divided by its calls: the server loop thread's read by the control method's handler on that thread at the window's mark and end calls; the client thread's around the window. Both busy-poll, so this is wall time per call",
        "server": "ferry_rpc::Server, loops(1), pinned to server_cpu, LoopConfig { spin: Duration::MAX, server.max_in_flight: 256 }, listening on TCP 127.0.0.1 and a shared-memory socket; every handler in the foreground",
        "client": "ferry_rpc::EventLoop on client_cpu, LoopConfig { spin: Duration::MAX, client.window: 256 }, one session per run, closed loop: each call's continuation checks its response and starts the next call",
        "request": "no key; `fields` values of `field_len` bytes, field i filled with 0x5a + i; every response checked: number of fields, each field's length, first and last byte",
        "systems": {
            "raw": "raw method; the handler answers with the request's bytes: TCP the received pool buffer as a gather entry (no copy), shm copied once into a block. Client: the fields' pool buffers as a raw gather payload (TCP referenced, shm copied)",
            "ferry-copy": "Record; client Record built with the session's context at threshold usize::MAX, handler view.to_message(Context::copy_only()): every field copied on both sides",
            "ferry-hybrid": "Record; client values in the session's pool (EventLoop::context), threshold 512 B; handler view.to_message(call.ctx()): TCP references the request's receive buffer, shm copies (the request is the peer's memory)",
            "prost": "raw method: the handler decodes with prost (TCP: from the receive buffer as Bytes, fields sliced; shm: fields copied) and re-encodes into a reused Vec, copied into the transport; the client encodes from Bytes fields and decodes the response",
            "flatbuf": "raw method: the handler verifies (root_as_record) and rebuilds with a reused FlatBufferBuilder, copied into the transport; the client builds and verifies likewise",
            "capnp": "raw method: the handler reads in place (copied into words first if not 8-byte aligned) and rebuilds in reused scratch space, framed into a reused Vec, copied into the transport",
            "tonic": "tonic 0.14 unary echo over HTTP/2 on TCP loopback, current-thread runtimes on the two CPUs (crate::rpc::tonic)",
            "ping-pong": "the raw shared-memory ping-pong of ferry bench shm (two cache lines, 8-byte sequence number)",
        },
        "tcp": "ferry-net defaults (gather mode, 64 frames / 256 KiB batches, TCP_NODELAY); congestion control is the machine's default (see machine)",
        "shm": "ferry-shm defaults (16 KiB blocks, 256 credits), spin Duration::MAX; every session gets its own shared pool (2 MiB regions)",
        "tls": "--tls only (records with link \"tls\"): the same server loop listens on tls://127.0.0.1 too, rustls 0.23 (ring) on both sides, TLS 1.3, a CA and a certificate for 127.0.0.1 made for the run, no client certificate; each configuration runs right after its plaintext one. Loopback has no kTLS here: encryption is in user space, the gather list encrypted straight into records",
        "streams": {
            "run": "a fresh server and connection per run: a warm-up stream of a tenth of the messages, then the measured stream; client and server each a current-thread tokio runtime on its pinned CPU (client_cpu, server_cpu); every message checked (length, first and last byte)",
            "shapes": "download: one request, then `count` messages of `size` bytes from the server; upload: `count` messages from the client, then one answer; ping-pong: `count` round trips of one `size`-byte message each way on one bidirectional stream",
            "gb_per_sec": "payload bytes (one way; both ways for a ping-pong) / wall time from the open to the last message checked, GB = 1e9 B",
            "cpu_ms_per_gb": "each side's thread CPU time (getrusage RUSAGE_THREAD) over the stream per GB: the client's around it, the server's read by a unary call on its thread before and after",
            "p50_ns": "ping-pong: per round trip, from just before the send to just after the echo is checked",
            "unary_p50_ns": "ping-pong over Ferry: as many unary calls of the same message on the same connection after the stream (AsyncChannel::call), timed the same way",
            "copied": "messages a Ferry reader over shared memory got copied, not in place: the tokio driver copies a shared-memory frame its reader is not waiting for (ferry_rpc::tokio, detach)",
            "ferry-hybrid": "ferry_rpc::tokio::AsyncServer (one hand-written AsyncService, LoopConfig default) and AsyncChannel (ChannelConfig default); Record messages of one field whose value is in the sender's pool (by reference: TCP gather, shared memory in place); echoes view.to_message(call.ctx())",
            "tonic": "tonic 0.14 over HTTP/2 on TCP loopback, defaults, TCP_NODELAY; prost messages with `bytes` fields as Bytes (schema/stream.proto)",
        },
        "wall_seconds": harness::round(took.as_secs_f64(), 1),
    })
}

/// `ferry bench rpc`: measures (or reads `--from`), prints the table and the targets, writes
/// the JSON (and the plot).
pub fn run(args: &Args) -> Result<(), BoxError> {
    plan::check(args)?;
    let server_cpu = harness::server_cpu(args.client_cpu, args.server_cpu);
    let quick = args.common.quick;
    let bench = Rpc {
        points: plan::plan(args),
        streams: plan::stream_plan(args),
        budget: args.common.budget(QUICK_MS, FULL_MS),
        reps: args
            .reps
            .unwrap_or(if quick { QUICK_REPS } else { FULL_REPS })
            .max(1),
        cpus: (args.client_cpu, server_cpu),
        net: (args.net, args.loss),
    };
    lifecycle::main(&bench, &args.common).map(drop)
}

/// The RPC part of `ferry demo`: the Cornflakes echo (2 x 2 KiB) at 16 calls in flight over
/// both transports, with no serialization (raw), Ferry hybrid and prost through the same
/// server loop, one repetition of `budget` each, printed as the benchmark's table.
pub fn demo(budget: Budget) -> Result<(), BoxError> {
    let cpus = if harness::cpus() > 1 { (0, 1) } else { (0, 0) };
    let points: Vec<Point> = Transport::DEFAULT
        .into_iter()
        .flat_map(|transport| {
            [System::Raw, System::FerryHybrid, System::Prost].map(|system| Point {
                system,
                transport,
                fields: ECHO,
                in_flight: 16,
                link: Link::Plain,
            })
        })
        .collect();
    let progress = Progress::new(points.len() as u64, "rpc");
    let measured = run_loop_points(&points, budget, cpus, &Hosts::Loopback, &progress)?;
    progress.finish();
    let records: Vec<_> = points
        .iter()
        .zip(measured)
        .map(|(&p, m)| report::summarize(p, std::slice::from_ref(&m)))
        .collect();
    report::print_table(&records);
    Ok(())
}

/// Runs `calls` echo calls of `point` (plus a tenth as warm-up and two control calls)
/// against a server loop on its own thread, the client loop on the calling thread, neither
/// pinned: for instruction counts (`ferry-callgrind rpc`), not timing. Returns the echo calls
/// the server answered. The server loop sleeps in `poll(2)` when idle: under callgrind a loop
/// that busy-polls runs empty turns for as long as valgrind lets it (its threads take turns),
/// which would swamp the count of a call's own work.
pub fn profile(point: &Point, calls: u64) -> Result<u64, BoxError> {
    let idle = LoopConfig {
        spin: Duration::ZERO,
        ..match point.link {
            Link::Tls => tls_config()?,
            Link::Plain => loop_config(),
        }
    };
    let server = service::start(
        &[point.transport],
        Hosts::Loopback.server_ip(),
        None,
        idle.clone(),
    )?;
    let mut lp = EventLoop::new(idle)?;
    let point = Point {
        in_flight: point.in_flight.clamp(1, MAX_IN_FLIGHT / 2),
        ..*point
    };
    let budget = Budget::Count(calls.max(1));
    let measured = client::run(
        &mut lp,
        server.addr(point.transport, point.link)?,
        &point,
        budget,
        &server.readings,
    );
    drop(lp);
    drop(server);
    let warmup = match budget.warmup() {
        Budget::Count(n) => n,
        Budget::Time(_) => 0,
    };
    Ok(measured?.calls + warmup)
}
