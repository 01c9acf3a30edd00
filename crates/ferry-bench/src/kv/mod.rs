//! `ferry bench kv`: the Cornflakes evaluation (sections 6.1 and 6.2.1). One store
//! ([`ferry_kv::Store`]), served by one pinned `ferry-rpc` server loop, with Ferry's hybrid
//! serialization, Ferry copy-only and zero-copy-only (the threshold at infinity and at 0),
//! and the peers' serializations over the same loop, transport and store ([`peers`]: prost,
//! FlatBuffers, Cap'n Proto, each with its best API, section 6.1.3), driven by the open-loop
//! load generator (`loadgen.rs`) with a workload ([`workload`]: Google, Twitter, CDN, YCSB).
//!
//! For every transport and system it first measures the unloaded latency (a point at
//! [`BASELINE_RATE`]), then sweeps the offered load upward (Poisson arrivals) until a point
//! does not count (see [`rule`]), bisects between the last point that counted and the first
//! that did not, and reports the throughput-versus-p99 curve, the highest achieved load, and
//! the server's CPU per request (its loop thread's CPU time over the window divided by the
//! requests it served: on a two-core machine the client saturates first, and CPU per request
//! is the figure that stays meaningful). A row with no point that counted says why: the
//! figures of the last point tried.
//!
//! What this machine cannot show: the paper's NICs. TCP over loopback copies on delivery and
//! costs a system call per batch on each side; shared memory is the only path here where a
//! referenced value is never copied. See `docs/benchmarks/kv.md`.

pub mod calibrate;
mod loadgen;
pub mod peers;
mod report;
mod server;
pub mod workload;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ferry_buf::{Pool, PoolConfig};
use ferry_kv::{Store, StoreConfig};
use ferry_rpc::LoopConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BoxError;
use crate::harness::Named;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark};
use crate::harness::loadgen::Rule;
use crate::harness::progress::Progress;
use crate::harness::{self, round};

pub use report::Summary;

use loadgen::{Point, RunSpec};
use server::KvBenchServer;
use workload::{Workload, WorkloadSpec};

/// Options of `ferry bench kv`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    workload: WorkloadSpec,
    /// Systems, comma-separated: ferry (hybrid), ferry-copy, ferry-zc (threshold 0), prost,
    /// flatbuffers, capnp, or all (default: all).
    #[arg(long, value_delimiter = ',', value_parser = system_or_all)]
    system: Vec<Option<System>>,
    /// Transports, comma-separated (default: tcp,shm).
    #[arg(long, value_delimiter = ',')]
    transport: Vec<Transport>,
    /// First offered load of each sweep's grid, requests/s (after a point at 1,000, the
    /// unloaded latency).
    #[arg(long, default_value_t = 20_000.0)]
    start_rate: f64,
    /// Each step of a sweep offers this many times the last.
    #[arg(long, default_value_t = 1.4)]
    step: f64,
    /// Most points per sweep on the grid (a sweep also ends at its first point that does not
    /// count; a point at 1,000 requests/s, the unloaded latency, comes first).
    #[arg(long, default_value_t = 14)]
    max_points: usize,
    /// Bisections of the knee after the grid, each one more point (one with --quick).
    #[arg(long, default_value_t = 2)]
    refine: usize,
    /// Client sessions (connections) per run.
    #[arg(long, default_value_t = 8)]
    sessions: usize,
    /// How long the server loop busy-polls before it sleeps, in µs (default: always, as
    /// Cornflakes' servers do; its work per request is measured apart from its polling either
    /// way; with 0 it sleeps whenever idle and its CPU time includes every wake-up).
    #[arg(long)]
    server_spin_us: Option<u64>,
    /// CPU of the client thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU of the server loop.
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
    /// Seed of the workload and the arrivals.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// A serialization served by the store.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum System {
    /// Ferry, the measured threshold.
    Ferry,
    /// Ferry with the threshold at infinity: every value copied.
    FerryCopy,
    /// Ferry with the threshold at 0: every value referenced.
    FerryZc,
    /// prost.
    Prost,
    /// FlatBuffers.
    Flatbuffers,
    /// Cap'n Proto.
    Capnp,
}

impl System {
    /// Every system, Ferry's first.
    pub const ALL: [System; 6] = [
        System::Ferry,
        System::FerryCopy,
        System::FerryZc,
        System::Prost,
        System::Flatbuffers,
        System::Capnp,
    ];

    /// The peer codec's name ([`peers::codec`]), for the peers.
    fn codec_name(self) -> Option<&'static str> {
        match self {
            System::Prost => Some("prost"),
            System::Flatbuffers => Some("flatbuf"),
            System::Capnp => Some("capnp"),
            _ => None,
        }
    }

    /// The zero-copy threshold its server runs with (`None`: the measured ones).
    fn threshold(self) -> Option<usize> {
        match self {
            System::FerryCopy => Some(usize::MAX),
            System::FerryZc => Some(0),
            _ => None,
        }
    }
}

pub use crate::harness::Transport;

/// How to sweep and where to run, shared by `ferry bench kv`, `ferry calibrate` and the demo.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// First offered load of the grid, requests/s (after the baseline).
    pub start_rate: f64,
    /// Factor between offered loads.
    pub step: f64,
    /// Most points of the grid.
    pub max_points: usize,
    /// Bisections of the knee after the grid (each one more point).
    pub refine: usize,
    /// Client sessions.
    pub sessions: usize,
    /// Warm-up and measured window of each point.
    pub warmup: Duration,
    /// The measured window of each point.
    pub window: Duration,
    /// Server loop busy-polling before sleeping.
    pub server_spin: Duration,
    /// CPU of the client thread.
    pub client_cpu: usize,
    /// CPU of the server loop.
    pub server_cpu: usize,
    /// Seed of the arrivals.
    pub seed: u64,
}

/// Achieved load within this share of the offered (Cornflakes section 6.1.1).
const MIN_SHARE: f64 = 0.95;

/// How far the median latency may rise above the unloaded median of the same sweep (its
/// [`BASELINE_RATE`] point). An unloaded round trip takes tens of microseconds over shared
/// memory and about a hundred over TCP loopback on a quiet machine; a median a millisecond
/// above it is a queue growing through the window, which the 95 % rule alone would accept at
/// high rates (at half a million requests a second, 5 % short over a one-second window is a
/// queue of 25,000 requests, tens of milliseconds of waiting). Measured from the unloaded
/// median rather than from zero: on a machine doing other work, scheduling alone puts the
/// median of every load, the lowest too, past a millisecond (2 ms at 2,000 req/s here with
/// cargo builds running), and that wait is not a queue the server builds.
pub(super) const MAX_QUEUEING: Duration = Duration::from_millis(1);

/// The offered load of the first point of every sweep, requests/s (or `--start-rate` if
/// lower): a few per cent of what one server loop serves, so no queue forms and its median is
/// the unloaded latency the other points are held to ([`MAX_QUEUEING`]).
pub const BASELINE_RATE: f64 = 1_000.0;

/// Points at [`BASELINE_RATE`] a sweep runs at most, while the unloaded median it finds is
/// past [`MAX_QUEUEING`] or the point does not count.
const BASELINE_TRIES: usize = 3;

/// The rule a sweep's points are held to, once its unloaded median `baseline_p50` is known.
pub fn rule(baseline_p50: Duration) -> Rule {
    Rule {
        min_share: MIN_SHARE,
        max_p50: MAX_QUEUEING + baseline_p50,
    }
}

/// One measured point of a sweep (in the results file with its figures rounded).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measured {
    /// Over which transport.
    pub transport: Transport,
    /// Which system.
    pub system: System,
    /// The rate the arrivals were drawn at, requests/s (points of the same rate of different
    /// systems had the same schedule; NaN when read from a file from before it was recorded).
    #[serde(default = "nan")]
    pub rate: f64,
    /// Offered requests/s: requests scheduled in the window, per second.
    pub offered: f64,
    /// Achieved requests/s: requests of the window answered in it (or within the median limit
    /// after it), per second.
    pub achieved: f64,
    /// Latency percentiles from the scheduled send, µs: p50, p99, p99.9.
    pub p50_us: f64,
    /// p99, µs.
    pub p99_us: f64,
    /// p99.9, µs.
    pub p999_us: f64,
    /// Server loop work per request, ns: its busy time (reading, handling, sending; not
    /// polling or sleeping) over the requests it served.
    #[serde(rename = "server_ns_per_request")]
    pub server_ns: f64,
    /// Server loop thread CPU time per request, ns (equal to wall time per request when the
    /// loop busy-polls).
    #[serde(rename = "server_cpu_ns_per_request")]
    pub server_cpu_ns: f64,
    /// Client thread CPU per request, ns.
    #[serde(rename = "client_ns_per_request")]
    pub client_ns: f64,
    /// Requests of the window never answered.
    #[serde(default)]
    pub unanswered: u64,
    /// The median latency this point was allowed, µs ([`rule`]).
    #[serde(default = "nan")]
    pub p50_limit_us: f64,
    /// Whether it counts: achieved within 95 % of offered, nothing unanswered, the median
    /// within the limit.
    pub counts: bool,
    /// If it does not count, why: its figures against the rule.
    #[serde(default)]
    pub why_not: Option<String>,
}

fn nan() -> f64 {
    f64::NAN
}

impl Measured {
    fn from_point(system: System, transport: Transport, rate: f64, p: &Point, rule: &Rule) -> Measured {
        let o = &p.outcome;
        let q = |q: f64| round(o.latency.quantile(q).unwrap_or(0) as f64 / 1000.0, 2);
        let figures = o.figures(rule);
        let verdict = rule.judge(&figures);
        let per_request = |d: Duration| round(d.as_nanos() as f64 / p.server_requests.max(1) as f64, 1);
        Measured {
            system,
            transport,
            rate: round(rate, 0),
            offered: round(figures.offered, 0),
            achieved: round(figures.achieved, 0),
            p50_us: q(0.5),
            p99_us: q(0.99),
            p999_us: q(0.999),
            server_ns: per_request(p.server_busy),
            server_cpu_ns: per_request(p.server_cpu),
            client_ns: per_request(p.client_cpu),
            unanswered: o.unanswered,
            p50_limit_us: round(rule.max_p50.as_secs_f64() * 1e6, 2),
            counts: verdict.is_ok(),
            why_not: verdict.err().map(|s| s.to_string()),
        }
    }
}

/// A store with `workload`'s key space loaded, in a shared pool sized for it.
pub fn load_store(workload: &Workload) -> Result<Arc<Store>, BoxError> {
    let objects = workload.objects();
    let footprint: usize = objects
        .iter()
        .flat_map(|o| o.parts.iter())
        .map(|&len| ferry_kv::footprint_of(len as usize))
        .sum();
    let region = 8usize << 20;
    // Room for the values, growth by puts, and the transports' buffers.
    let max_bytes = (footprint + footprint / 4 + (512 << 20)).div_ceil(region) * region;
    let pool = Pool::new(PoolConfig {
        shared: true,
        region_size: region,
        max_bytes,
        ..PoolConfig::default()
    })?;
    let store = Arc::new(Store::new(
        pool,
        StoreConfig {
            max_bytes: footprint + footprint / 4 + (64 << 20),
            ..StoreConfig::default()
        },
    ));
    ferry_kv::load::load(
        &store,
        objects.iter().map(|o| (o.key.as_slice(), o.parts.as_slice())),
    )?;
    Ok(store)
}

/// Sweeps the offered load for each transport and system against `store`; `make` builds a
/// fresh workload (same seed, same key space) for every run. Calls `each` after every point.
pub fn sweep(
    store: &Arc<Store>,
    make: &(dyn Fn() -> Result<Workload, BoxError> + Sync),
    systems: &[System],
    transports: &[Transport],
    sweep: &Sweep,
    mut each: impl FnMut(&Measured) + Send,
) -> Result<Vec<Measured>, BoxError> {
    let dir = std::env::temp_dir();
    let mut out = Vec::new();
    for &transport in transports {
        for &system in systems {
            let server = KvBenchServer::start(
                store,
                sweep.server_cpu,
                system.threshold(),
                sweep.server_spin,
                &dir,
            )?;
            let result = harness::on_cpu("kv-client", sweep.client_cpu, || {
                sweep_one(make, system, transport, &server, sweep, &mut each, &mut out)
            });
            server.stop();
            result?;
        }
    }
    Ok(out)
}

fn sweep_one(
    make: &(dyn Fn() -> Result<Workload, BoxError> + Sync),
    system: System,
    transport: Transport,
    server: &KvBenchServer,
    sweep: &Sweep,
    each: &mut (impl FnMut(&Measured) + Send),
    out: &mut Vec<Measured>,
) -> Result<(), BoxError> {
    let run = |i: usize, rate: f64| -> Result<Point, BoxError> {
        let spec = RunSpec {
            rate,
            sessions: sweep.sessions,
            warmup: sweep.warmup,
            window: sweep.window,
            seed: sweep.seed.wrapping_add(i as u64),
        };
        loadgen::run(
            make()?,
            system,
            &server.addrs[transport as usize],
            &server.readings,
            &spec,
        )
        .map_err(|e| {
            format!(
                "{} over {} at {rate:.0} req/s: {e}",
                system.name(),
                transport.name()
            )
            .into()
        })
    };
    // A baseline point is held to its own median (at its load no queue forms) until the
    // sweep's baseline is known.
    let own_rule = |p: &Point| self::rule(Duration::from_nanos(p.outcome.latency.quantile(0.5).unwrap_or(0)));
    let mut record = |m: Measured| {
        each(&m);
        let counts = m.counts;
        out.push(m);
        counts
    };
    // The unloaded latency first, measured again (up to BASELINE_TRIES times in all) while it
    // does not count or its median is past MAX_QUEUEING (another program held a CPU): the
    // lowest median of a point that counted by its own is the baseline, and every try is then
    // judged by it. If none counted, the row stays empty and its last point says why.
    let base_rate = BASELINE_RATE.min(sweep.start_rate);
    let mut tries: Vec<Point> = Vec::new();
    let mut baseline: Option<f64> = None;
    for i in 0..BASELINE_TRIES {
        let p = run(sweep.max_points + sweep.refine + i, base_rate)?;
        let m = Measured::from_point(system, transport, base_rate, &p, &own_rule(&p));
        if m.counts {
            baseline = Some(baseline.map_or(m.p50_us, |b| b.min(m.p50_us)));
        }
        tries.push(p);
        if baseline.is_some_and(|b| b <= MAX_QUEUEING.as_secs_f64() * 1e6) {
            break;
        }
    }
    let rule = baseline.map(|b| self::rule(Duration::from_secs_f64(b / 1e6)));
    for p in tries {
        let r = rule.unwrap_or_else(|| own_rule(&p));
        record(Measured::from_point(system, transport, base_rate, &p, &r));
    }
    let Some(rule) = rule else {
        return Ok(());
    };
    // The grid: the same offered loads for every system (so that work per request can be
    // compared at equal load), up to the first that does not count.
    let mut good = base_rate;
    let mut failed = None;
    let mut rate = sweep.start_rate;
    for i in 0..sweep.max_points {
        if rate <= good {
            rate *= sweep.step;
            continue;
        }
        if record(Measured::from_point(
            system,
            transport,
            rate,
            &run(i, rate)?,
            &rule,
        )) {
            good = rate;
            rate *= sweep.step;
        } else {
            failed = Some(rate);
            break;
        }
    }
    // Then the knee, between the last load that counted (the baseline, if the grid's first
    // point did not) and the first that did not: bisections (geometric), each halving the gap.
    if let Some(mut bad) = failed {
        for i in 0..sweep.refine {
            let mid = (good * bad).sqrt();
            let p = run(sweep.max_points + i, mid)?;
            if record(Measured::from_point(system, transport, mid, &p, &rule)) {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    Ok(())
}

/// A `--system` value: a system, or `all` (`None`).
fn system_or_all(s: &str) -> Result<Option<System>, String> {
    match s {
        "all" => Ok(None),
        _ => clap::ValueEnum::from_str(s, false).map(Some),
    }
}

/// The systems `--system` names.
fn systems_of(args: &[Option<System>]) -> Vec<System> {
    if args.is_empty() || args.contains(&None) {
        return System::ALL.to_vec();
    }
    harness::unique(args.iter().flatten().copied())
}

/// `ferry bench kv` (and the demo), as the lifecycle runs it.
struct Kv {
    systems: Vec<System>,
    transports: Vec<Transport>,
    spec: WorkloadSpec,
    seed: u64,
    sweep: Sweep,
}

impl Benchmark for Kv {
    const NAME: &'static str = "kv";
    type Records = Summary;

    fn plan(&self) -> u64 {
        let per_sweep = 1 + self.sweep.max_points + self.sweep.refine;
        (self.systems.len() * self.transports.len() * per_sweep) as u64
    }

    /// Sweeps, one step of `progress` a point, and gathers the points into a [`Summary`].
    fn run(&self, progress: &Progress) -> Result<(Value, Summary), BoxError> {
        let make = || workload::build(&self.spec, self.seed).map_err(BoxError::from);
        let first = make()?;
        eprintln!("loading {} keys of {}", first.objects().len(), first.name());
        let store = load_store(&first)?;
        let points = sweep(&store, &make, &self.systems, &self.transports, &self.sweep, |m| {
            progress.start(format!(
                "{} {} {:.0}/s",
                m.transport.name(),
                m.system.name(),
                m.offered
            ));
            progress.done();
        })?;
        let summary = Summary {
            workload: first.name(),
            copies: report::copies(make()?, &self.systems),
            points,
        };
        Ok((summary.settings_json(&self.sweep, store.len()), summary))
    }

    fn table(summary: &Summary) {
        summary.print();
    }

    fn plot(summary: &Summary, path: &Path) -> Result<(), BoxError> {
        summary.plot(path)
    }
}

/// `ferry bench kv`.
pub fn run(args: &Args) -> Result<(), BoxError> {
    let quick = args.common.quick;
    let (warmup, window) = if quick {
        (Duration::from_millis(100), Duration::from_millis(300))
    } else {
        let ms = args.common.duration_ms.unwrap_or(1000);
        (Duration::from_millis(ms / 5), Duration::from_millis(ms))
    };
    let bench = Kv {
        systems: systems_of(&args.system),
        transports: Transport::tcp_or_shm(&args.transport, "kv")?,
        spec: args.workload.clone(),
        seed: args.seed,
        sweep: Sweep {
            start_rate: args.start_rate,
            step: args.step,
            max_points: if quick {
                args.max_points.min(4)
            } else {
                args.max_points
            },
            refine: if quick { args.refine.min(1) } else { args.refine },
            sessions: args.sessions,
            warmup,
            window,
            server_spin: args.server_spin_us.map_or(Duration::MAX, Duration::from_micros),
            client_cpu: args.client_cpu,
            server_cpu: args.server_cpu.min(harness::cpus().saturating_sub(1)),
            seed: args.seed,
        },
    };
    lifecycle::main(&bench, &args.common)?;
    Ok(())
}

/// `ferry demo`: the store on a built-in data set (the synthetic Twitter cluster-4 trace,
/// `workloads.md`), served over TCP and shared memory, driven by the open-loop load generator
/// for Ferry and for prost (what most users would move from; the three peers are within a few
/// per cent of each other on this workload) for about half a minute; prints
/// the table and writes the plot to `plot`.
///
/// The server loop busy-polls for the loop's default 100 µs after its last work, then sleeps
/// until a request arrives: at loads it cannot keep up with it never sleeps, and on a machine
/// doing other work a loop that sleeps when idle is woken promptly, where one that always
/// polls waits out other programs' time slices.
///
/// `quick`: two points of 0.2 s per sweep from 1,000 requests/s, on a smaller store (for
/// tests).
pub fn demo(plot: &Path, quick: bool) -> Result<(), BoxError> {
    let spec = WorkloadSpec {
        keys: Some(if quick { DEMO_KEYS / 10 } else { DEMO_KEYS }),
        ..WorkloadSpec::new(workload::Kind::Twitter)
    };
    let sweep = Sweep {
        start_rate: if quick { 1_000.0 } else { 50_000.0 },
        step: 1.5,
        max_points: if quick { 2 } else { 8 },
        refine: if quick { 0 } else { 2 },
        sessions: 8,
        warmup: Duration::from_millis(if quick { 50 } else { 150 }),
        window: Duration::from_millis(if quick { 200 } else { 600 }),
        server_spin: LoopConfig::default().spin,
        client_cpu: 0,
        server_cpu: 1.min(harness::cpus().saturating_sub(1)),
        seed: SEED,
    };
    let first = workload::build(&spec, SEED)?;
    println!(
        "Ferry demo: a key-value store of {} keys ({}), served by one ferry-rpc loop on CPU 1;\n\
         an open-loop client on CPU 0 offers Poisson load, checks every response, and raises the\n\
         rate from {:.0} req/s until the server falls behind (after a point at {:.0} req/s, the\n\
         unloaded latency). Ferry (hybrid zero-copy) against prost, over TCP loopback and shared\n\
         memory.\n",
        first.objects().len(),
        first.name(),
        sweep.start_rate,
        BASELINE_RATE.min(sweep.start_rate),
    );
    let demo = Kv {
        systems: vec![System::Ferry, System::Prost],
        transports: Transport::DEFAULT.to_vec(),
        spec,
        seed: SEED,
        sweep,
    };
    let common = Common {
        quick,
        json: None,
        from: None,
        plot: Some(plot.to_owned()),
        duration_ms: None,
        count: None,
    };
    lifecycle::main(&demo, &common)?;
    Ok(())
}

/// The demo's seed.
const SEED: u64 = 7;

/// Keys of the demo's store.
const DEMO_KEYS: u32 = 50_000;
