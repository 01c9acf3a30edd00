//! `ferry bench rpc`: Ferry's RPC layer (`ferry-rpc`) end to end, the echo experiment of the
//! Cornflakes paper (Figure 2: two 2048-byte fields; Figure 9: one 1024-byte payload), over
//! TCP loopback and over shared memory, against a no-serialization echo, the peer libraries,
//! tonic, and the raw shared-memory ping-pong, side by side in one run.
//!
//! # What runs
//!
//! The server is one [`ferry_rpc::Server`] with one loop (`loops(1)`), pinned to the server
//! CPU and busy-polling (`LoopConfig { spin: Duration::MAX, .. }`), listening on TCP and on a
//! shared-memory socket. Its service (`service.rs`) has one method per echo variant:
//!
//! - **raw**: no serialization at all. A raw method (no request type) answers with the
//!   request's bytes, as cheaply as the transport allows: over TCP the received pool buffer
//!   is sent back as a gather entry (a reference, no copy); over shared memory the request is
//!   the peer's memory and is copied once into a block.
//! - **ferry-copy**: `Record` in and out with an infinite zero-copy threshold on both sides:
//!   every field is copied into the request and into the response.
//! - **ferry-hybrid**: the default threshold (512 B). The client builds its values in its
//!   session's pool ([`EventLoop::context`]) so they go out by reference; the handler answers
//!   `view.to_message(call.ctx())`, whose large fields reference the request where it lies if
//!   that memory is the session's pool (TCP: the loop's receive buffer) and are copied
//!   otherwise (shared memory: the client's pool, which the server may not hand back).
//! - **prost**, **flatbuf**, **capnp**: raw methods whose handler decodes the request with
//!   the library and builds the response with it ([`crate::systems::Codec`]); the client
//!   encodes each request and decodes each response with the same library.
//!
//! The client is a [`ferry_rpc::EventLoop`] on the other CPU, also busy-polling, with one
//! session per run and `in_flight` calls outstanding in a closed loop (`client.rs`). Every
//! response is checked (number of fields, each field's length, first and last byte).
//!
//! In the same run: **tonic** ([`crate::tonic_echo`], gRPC over HTTP/2 on TCP loopback, the
//! 2 x 2 KiB echo at 1 and 16 in flight), the **ping-pong** of [`crate::shm`] (two cache lines,
//! the floor of any round trip through memory), and a **64 B** call (ferry-hybrid, one 64 B
//! field, over shared memory), whose p50 is compared with the ping-pong's.
//!
//! # Measures
//!
//! Latency: from just before a call is built to just after its response is checked, in an
//! HDR histogram ([`crate::harness::Histogram`]); every call with one in flight (one clock
//! reading each), every 16th with more. calls/s: calls completed in the measured window over its length.
//! CPU per call: the server loop thread's CPU time (`getrusage(RUSAGE_THREAD)`, read by the
//! control method's handler on that thread at the window's `mark` and `end` calls), and the
//! client thread's over the window. Both sides busy-poll, so their CPU time is wall time:
//! per call it is about 1 / calls/s, not the work a call costs (the callgrind profile in
//! `docs/benchmarks/rpc.md` gives that). Every repetition runs every configuration, in an
//! order that puts what a target compares close together in time (see `plan`); every figure is
//! the median over the repetitions, and every target ratio the median over repetitions of the
//! ratio within one (the VMs this runs on change speed from one moment to the next).
//!
//! Every run is bounded: a phase in which no call completes for 10 s fails, as does a
//! control call that takes that long; tonic's runs have their own bounds.

mod client;
mod report;
mod service;

use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ferry_rpc::session::{ClientConfig, ServerConfig};
use ferry_rpc::{Addr, ConnConfig, EventLoop, LoopConfig, Server, Services};
use ferry_shm::ShmConfig;
use serde_json::json;

use crate::harness::cli::Common;
use crate::harness::progress::Progress;
use crate::harness::{self, Budget, report as results};
use crate::{BoxError, plot, shm, tonic_echo};

use client::Measured;
use report::Summary;
use service::{BenchService, Readings};

/// Defaults of the full run and of `--quick`.
const IN_FLIGHT: [usize; 3] = [1, 16, 128];
const FULL_MS: u64 = 300;
const QUICK_MS: u64 = 40;
const FULL_REPS: usize = 7;
const QUICK_REPS: usize = 1;

/// tonic runs at the in-flight counts up to this (the 1 and 16).
const TONIC_MAX_IN_FLIGHT: usize = 16;

/// Calls in flight at most (client window and server bound): the largest count of the sweep
/// must fit, with room for the control calls.
const MAX_IN_FLIGHT: usize = 256;

/// Options of `ferry bench rpc`. `--quick`: one repetition of 40 ms per configuration, every
/// configuration, well under 30 s. `--plot`: p99 latency against calls/s for every system
/// (Cornflakes Figure 2), per transport and payload; the 64 B call against the ping-pong;
/// p50 at one in flight against payload.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Systems to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    systems: Vec<System>,
    /// Transports of the event-loop systems, comma-separated (default: tcp,shm).
    #[arg(long, value_delimiter = ',')]
    transports: Vec<Transport>,
    /// Calls in flight, comma-separated (default 1,16,128; tonic runs those up to 16).
    #[arg(long, value_delimiter = ',')]
    in_flight: Vec<usize>,
    /// Repetitions, the configurations interleaved; every reported number is the median over
    /// them (default 7, or 1 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// CPU of the client thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU of the server loop (the client's when only one is available).
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
}

/// What answers the echo.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// A raw method that sends the request's bytes back: no serialization.
    Raw,
    /// Ferry with an infinite zero-copy threshold on both sides.
    FerryCopy,
    /// Ferry with the default threshold, values in the session's pool.
    FerryHybrid,
    /// prost (decode, re-encode).
    Prost,
    /// FlatBuffers (verify, rebuild).
    Flatbuf,
    /// Cap'n Proto (read, rebuild).
    Capnp,
    /// tonic: gRPC over HTTP/2 on TCP (2 x 2 KiB only).
    Tonic,
    /// The raw shared-memory ping-pong of `ferry bench shm`: the floor.
    PingPong,
}

impl System {
    const ALL: [System; 8] = [
        System::Raw,
        System::FerryCopy,
        System::FerryHybrid,
        System::Prost,
        System::Flatbuf,
        System::Capnp,
        System::Tonic,
        System::PingPong,
    ];

    /// The systems served by the Ferry server loop.
    const LOOP: [System; 6] = [
        System::Raw,
        System::FerryCopy,
        System::FerryHybrid,
        System::Prost,
        System::Flatbuf,
        System::Capnp,
    ];

    fn name(self) -> &'static str {
        match self {
            System::Raw => "raw",
            System::FerryCopy => "ferry-copy",
            System::FerryHybrid => "ferry-hybrid",
            System::Prost => "prost",
            System::Flatbuf => "flatbuf",
            System::Capnp => "capnp",
            System::Tonic => "tonic",
            System::PingPong => "ping-pong",
        }
    }

    /// The name of its codec in [`crate::systems::CODECS`].
    fn codec_name(self) -> Option<&'static str> {
        match self {
            System::Prost => Some("prost"),
            System::Flatbuf => Some("flatbuf"),
            System::Capnp => Some("capnp"),
            _ => None,
        }
    }

    fn on_loop(self) -> bool {
        System::LOOP.contains(&self)
    }
}

/// What carries the calls.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TCP loopback (`ferry-net`; tonic: HTTP/2).
    Tcp,
    /// Shared memory (`ferry-shm`; the ping-pong: two cache lines).
    Shm,
}

impl Transport {
    const ALL: [Transport; 2] = [Transport::Tcp, Transport::Shm];

    fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Shm => "shm",
        }
    }
}

/// The fields of every request: `count` values of `len` bytes, no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fields {
    count: usize,
    len: usize,
}

/// Cornflakes Figure 2: a list of two 2048-byte elements (`workloads.md`, "YCSB-C": 2 x 2048).
const ECHO: Fields = Fields { count: 2, len: 2048 };
/// Cornflakes Figure 9: 1024-byte requests.
const ONE_KIB: Fields = Fields { count: 1, len: 1024 };
/// The small call compared with the ping-pong.
const SMALL: Fields = Fields { count: 1, len: 64 };
/// What the ping-pong moves: its 8-byte sequence number.
const SEQ: Fields = Fields { count: 1, len: 8 };

impl Fields {
    fn bytes(self) -> usize {
        self.count * self.len
    }

    fn label(self) -> String {
        match self.count {
            1 => plot::bytes_label(self.len as f64),
            n => format!("{n} x {}", plot::bytes_label(self.len as f64)),
        }
    }
}

/// One configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Point {
    system: System,
    transport: Transport,
    fields: Fields,
    in_flight: usize,
}

impl Point {
    fn label(&self) -> String {
        format!(
            "{} {} {}, {} in flight",
            self.system.name(),
            self.transport.name(),
            self.fields.label(),
            self.in_flight
        )
    }
}

/// The configurations, in the order one repetition runs them, so that what a target compares
/// runs close together in time (this machine changes speed between runs: see the doc): tonic,
/// then (the Ferry server up) every event-loop system one after another at each payload,
/// transport and in-flight count, the 64 B call last at 1 in flight, then the ping-pong.
fn plan(args: &Args) -> Vec<Point> {
    let systems = or_all(&args.systems, &System::ALL);
    let transports = or_all(&args.transports, &Transport::ALL);
    let mut in_flight = or_all(&args.in_flight, &IN_FLIGHT);
    in_flight
        .iter_mut()
        .for_each(|n| *n = (*n).clamp(1, MAX_IN_FLIGHT / 2));
    in_flight.sort_unstable();
    in_flight.dedup();
    let has = |s| systems.contains(&s);
    let p = |system, transport, fields, in_flight| Point {
        system,
        transport,
        fields,
        in_flight,
    };
    let mut points = Vec::new();
    if has(System::Tonic) {
        points.extend(
            in_flight
                .iter()
                .filter(|&&n| n <= TONIC_MAX_IN_FLIGHT)
                .map(|&n| p(System::Tonic, Transport::Tcp, ECHO, n)),
        );
    }
    for fields in [ECHO, ONE_KIB] {
        for &t in &transports {
            for &n in &in_flight {
                points.extend(
                    System::LOOP
                        .into_iter()
                        .filter(|&s| has(s))
                        .map(|s| p(s, t, fields, n)),
                );
            }
        }
    }
    if has(System::FerryHybrid) && transports.contains(&Transport::Shm) {
        points.extend(
            in_flight
                .iter()
                .rev()
                .map(|&n| p(System::FerryHybrid, Transport::Shm, SMALL, n)),
        );
    }
    if has(System::PingPong) {
        points.push(p(System::PingPong, Transport::Shm, SEQ, 1));
    }
    points
}

/// Where a configuration goes in the table: by payload, transport, system, in-flight count;
/// the 64 B call, tonic and the ping-pong after the echo variants.
fn display_key(p: &Point) -> (usize, usize, usize, usize, usize) {
    let system = System::ALL.iter().position(|&s| s == p.system).unwrap_or(0);
    let transport = Transport::ALL.iter().position(|&t| t == p.transport).unwrap_or(0);
    let fields = [ECHO, ONE_KIB, SMALL, SEQ]
        .iter()
        .position(|&f| f == p.fields)
        .unwrap_or(4);
    let group = match p.system {
        System::Tonic => 2,
        System::PingPong => 3,
        _ if p.fields == SMALL => 1,
        _ => 0,
    };
    (group, fields, transport, system, p.in_flight)
}

/// `chosen`, or `all` if nothing was chosen.
fn or_all<T: Clone>(chosen: &[T], all: &[T]) -> Vec<T> {
    if chosen.is_empty() { all } else { chosen }.to_vec()
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

/// The CPUs of a run: (client, server).
type Cpus = (usize, usize);

/// Runs the event-loop configurations `points` of repetition `rep` against a fresh server;
/// returns their measurements in order.
fn run_loop_points(
    rep: usize,
    points: &[Point],
    budget: Budget,
    cpus: Cpus,
    progress: &Progress,
) -> Result<Vec<Measured>, BoxError> {
    let readings = Arc::new(Readings::default());
    let services = Services::builder()
        .service(BenchService::new(Arc::clone(&readings)))?
        .build()?;
    let socket = std::env::temp_dir().join(format!("ferry-bench-rpc-{}-{rep}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let server = Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}", socket.display()))
        .loops(1)
        .pin(vec![cpus.1])
        .config(loop_config())
        .start()?;
    let addr = |t: Transport| {
        server
            .addrs()
            .iter()
            .find(|a| {
                matches!(
                    (t, a),
                    (Transport::Tcp, Addr::Tcp(_)) | (Transport::Shm, Addr::Shm(_))
                )
            })
            .cloned()
            .ok_or_else(|| BoxError::from(format!("the server has no {} address", t.name())))
    };
    let addrs = (addr(Transport::Tcp)?, addr(Transport::Shm)?);
    let readings = &readings;
    let measured = thread::scope(|s| {
        let client = thread::Builder::new()
            .name("rpc-client".to_owned())
            .spawn_scoped(s, move || -> Result<Vec<Measured>, BoxError> {
                harness::pin_current_thread(cpus.0)?;
                let mut lp = EventLoop::new(loop_config())?;
                let mut out = Vec::with_capacity(points.len());
                for point in points {
                    let what = point.label();
                    progress.start(what.clone());
                    let addr = match point.transport {
                        Transport::Tcp => &addrs.0,
                        Transport::Shm => &addrs.1,
                    };
                    let m = client::run(&mut lp, addr, point, budget, readings)
                        .map_err(|e| format!("{what}: {e}"))?;
                    progress.done();
                    out.push(m);
                }
                Ok(out)
            })?;
        client
            .join()
            .unwrap_or_else(|_| Err("the client thread panicked".into()))
    });
    server.shutdown(Duration::from_secs(1));
    let _ = std::fs::remove_file(&socket);
    measured
}

/// One tonic run.
fn run_tonic(point: &Point, budget: Budget, cpus: Cpus) -> Result<Measured, BoxError> {
    let r = tonic_echo::run(&tonic_echo::TonicRun {
        server_cpu: cpus.1,
        client_cpu: cpus.0,
        in_flight: point.in_flight,
        fields: point.fields.count,
        field_len: point.fields.len,
        budget,
    })?;
    let per_call = |ns: f64| Duration::from_nanos((ns * r.calls as f64) as u64);
    Ok(Measured {
        calls: r.calls,
        elapsed: Duration::from_secs_f64(r.calls as f64 / r.calls_per_sec.max(1e-9)),
        latency: r.latency,
        client_cpu: per_call(r.client_cpu_per_call_ns),
        server_cpu: per_call(r.server_cpu_per_call_ns),
    })
}

/// One ping-pong run.
fn run_ping_pong(budget: Budget, cpus: Cpus) -> Result<Measured, BoxError> {
    let r = shm::ping_pong(budget, cpus.0, cpus.1)?;
    Ok(Measured {
        calls: r.round_trips,
        elapsed: r.elapsed,
        latency: r.latency,
        client_cpu: r.client_cpu,
        server_cpu: r.server_cpu,
    })
}

/// One configuration of [`profile`]: what `ferry-callgrind rpc` runs under callgrind.
#[derive(Debug, Clone, Copy)]
pub struct ProfileRun {
    /// The echo variant (an event-loop system).
    pub system: System,
    /// Its transport.
    pub transport: Transport,
    /// Values per request.
    pub fields: usize,
    /// Bytes per value.
    pub field_len: usize,
    /// Calls in flight.
    pub in_flight: usize,
    /// Measured calls (after a tenth of them as warm-up).
    pub calls: u64,
    /// How long the server loop busy-polls before sleeping in `poll(2)`. Under callgrind,
    /// `Duration::ZERO`: a loop that busy-polls runs empty turns for as long as valgrind lets
    /// it (its threads take turns), which would swamp the count of a call's own work.
    pub server_spin: Duration,
}

/// Runs `run.calls` echo calls (plus a tenth as warm-up and two control calls) of one
/// configuration against a server loop on its own thread, the client loop on the calling
/// thread, neither pinned: for instruction counts (`ferry-callgrind rpc`), not timing.
/// Returns the echo calls the server answered.
pub fn profile(run: &ProfileRun) -> Result<u64, BoxError> {
    if !run.system.on_loop() {
        return Err(format!("{} is not served by the Ferry server loop", run.system.name()).into());
    }
    let point = Point {
        system: run.system,
        transport: run.transport,
        fields: Fields {
            count: run.fields,
            len: run.field_len,
        },
        in_flight: run.in_flight.clamp(1, MAX_IN_FLIGHT / 2),
    };
    let readings = Arc::new(Readings::default());
    let services = Services::builder()
        .service(BenchService::new(Arc::clone(&readings)))?
        .build()?;
    let socket = std::env::temp_dir().join(format!("ferry-callgrind-rpc-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let server = Server::builder(services)
        .listen(&match run.transport {
            Transport::Tcp => "tcp://127.0.0.1:0".to_owned(),
            Transport::Shm => format!("shm://{}", socket.display()),
        })
        .loops(1)
        .config(LoopConfig {
            spin: run.server_spin,
            ..loop_config()
        })
        .start()?;
    let addr = server.addrs().first().cloned().ok_or("no address")?;
    let mut lp = EventLoop::new(LoopConfig {
        spin: Duration::ZERO,
        ..loop_config()
    })?;
    let budget = Budget::Count(run.calls.max(1));
    let measured = client::run(&mut lp, &addr, &point, budget, &readings);
    drop(lp);
    server.shutdown(Duration::from_secs(1));
    let _ = std::fs::remove_file(&socket);
    let warmup = match budget.warmup() {
        Budget::Count(n) => n,
        Budget::Time(_) => 0,
    };
    Ok(measured?.calls + warmup)
}

/// Runs the sweep, prints the table and the targets, writes the JSON (and the plot).
pub fn run(args: &Args) -> Result<(), BoxError> {
    if let Some(from) = &args.common.from {
        return redraw(args, from);
    }
    let json_path = args.common.json_path()?;
    let budget = args.common.budget(QUICK_MS, FULL_MS);
    let reps = args
        .reps
        .unwrap_or(if args.common.quick { QUICK_REPS } else { FULL_REPS })
        .max(1);
    let server_cpu = if harness::cpus() > 1 {
        args.server_cpu
    } else {
        eprintln!(
            "warning: one CPU: client and server share it, and busy-polling sides wait for the scheduler"
        );
        args.client_cpu
    };
    let cpus = (args.client_cpu, server_cpu);
    let points = plan(args);
    if points.is_empty() {
        return Err("nothing to run: no configuration matches --systems and --transports".into());
    }
    let clock_ns = harness::clock_cost_ns();
    println!(
        "ferry bench rpc: echo calls, client on CPU {}, server loop on CPU {server_cpu}, {reps} repetition(s) of {} per configuration (median shown); one clock reading costs {clock_ns:.0} ns and is inside every timed call.",
        cpus.0,
        budget.describe("calls"),
    );
    println!(
        "srv/cli ns/call: each thread's CPU time over the window per call (both busy-poll: wall time, not work; tonic's threads sleep when idle).\n"
    );

    let started = Instant::now();
    let mut runs: Vec<Vec<Measured>> = vec![Vec::new(); points.len()];
    let progress = Progress::new((reps * points.len()) as u64, "rpc");
    for rep in 0..reps {
        let mut i = 0;
        while i < points.len() {
            let point = points[i];
            if point.system.on_loop() {
                // Consecutive event-loop configurations share one server.
                let n = points[i..].iter().take_while(|p| p.system.on_loop()).count();
                let measured = run_loop_points(rep, &points[i..i + n], budget, cpus, &progress)?;
                for (run, m) in runs[i..i + n].iter_mut().zip(measured) {
                    run.push(m);
                }
                i += n;
                continue;
            }
            progress.start(point.label());
            let m = match point.system {
                System::Tonic => run_tonic(&point, budget, cpus),
                _ => run_ping_pong(budget, cpus),
            }
            .map_err(|e| format!("{}: {e}", point.label()))?;
            progress.done();
            runs[i].push(m);
            i += 1;
        }
    }
    progress.finish();
    let mut summaries: Vec<Summary> = points
        .iter()
        .zip(&runs)
        .map(|(&p, r)| report::summarize(p, r))
        .collect();
    summaries.sort_by_key(|s| display_key(&s.point));
    report::print(&summaries);

    let settings = json!({
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
            "tonic": "tonic 0.14 unary echo over HTTP/2 on TCP loopback, current-thread runtimes on the two CPUs (crate::tonic_echo)",
            "ping-pong": "the raw shared-memory ping-pong of ferry bench shm (two cache lines, 8-byte sequence number)",
        },
        "tcp": "ferry-net defaults (gather mode, 64 frames / 256 KiB batches, TCP_NODELAY); congestion control is the machine's default (see machine)",
        "shm": "ferry-shm defaults (16 KiB blocks, 256 credits), spin Duration::MAX; every session gets its own shared pool (2 MiB regions)",
        "wall_seconds": harness::round(started.elapsed().as_secs_f64(), 1),
    });
    let records: Vec<_> = summaries.iter().map(|s| s.record.clone()).collect();
    results::save(
        json_path,
        "rpc",
        settings,
        &records,
        serde_json::Value::Null,
        started.elapsed(),
    )?;
    if let Some(path) = &args.common.plot {
        report::draw(path, &summaries)?;
        println!("plot in {}", path.display());
    }
    Ok(())
}

/// `--from`: the table, targets and plot of an earlier run.
/// The RPC part of `ferry demo`: the Cornflakes echo (2 x 2 KiB) at 16 calls in flight over
/// both transports, with no serialization (raw), Ferry hybrid and prost through the same
/// server loop, one repetition of `budget` each, printed as the benchmark's table.
pub fn demo(budget: Budget) -> Result<(), BoxError> {
    let cpus = if harness::cpus() > 1 { (0, 1) } else { (0, 0) };
    let points: Vec<Point> = Transport::ALL
        .into_iter()
        .flat_map(|transport| {
            [System::Raw, System::FerryHybrid, System::Prost].map(|system| Point {
                system,
                transport,
                fields: ECHO,
                in_flight: 16,
            })
        })
        .collect();
    let progress = Progress::new(points.len() as u64, "rpc");
    let measured = run_loop_points(0, &points, budget, cpus, &progress)?;
    progress.finish();
    let summaries: Vec<Summary> = points
        .iter()
        .zip(measured)
        .map(|(&p, m)| report::summarize(p, std::slice::from_ref(&m)))
        .collect();
    report::print_table(&summaries);
    Ok(())
}

fn redraw(args: &Args, from: &Path) -> Result<(), BoxError> {
    let all = results::load(from, report::from_record)?;
    report::print(&all);
    if let Some(path) = &args.common.plot {
        report::draw(path, &all)?;
        println!("plot in {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let mut argv = vec!["rpc", "--json", "x.json"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).args
    }

    #[test]
    fn the_plan_covers_every_system_transport_payload_and_count() {
        let points = plan(&args(&[]));
        // 6 loop systems x 2 transports x 2 payloads x 3 counts, the 64 B call at 3 counts,
        // tonic at 1 and 16, the ping-pong.
        assert_eq!(points.len(), 72 + 3 + 2 + 1);
        // tonic first, the event-loop systems together, the ping-pong last, right after the
        // 64 B call at 1 in flight.
        let on_loop: Vec<bool> = points.iter().map(|p| p.system.on_loop()).collect();
        assert_eq!(on_loop.iter().filter(|&&b| b).count(), 75);
        let first = on_loop.iter().position(|&b| b).unwrap();
        assert!(on_loop[first..first + 75].iter().all(|&b| b));
        assert!(points[..first].iter().all(|p| p.system == System::Tonic));
        let last = &points[points.len() - 2..];
        assert_eq!((last[0].fields, last[0].in_flight), (SMALL, 1));
        assert_eq!(last[1].system, System::PingPong);
        let tonic: Vec<usize> = points
            .iter()
            .filter(|p| p.system == System::Tonic)
            .map(|p| p.in_flight)
            .collect();
        assert_eq!(tonic, [1, 16]);
        let only = plan(&args(&[
            "--systems",
            "raw,ping-pong",
            "--transports",
            "tcp",
            "--in-flight",
            "4",
        ]));
        assert_eq!(only.len(), 2 + 1);
    }
}
