//! `ferry bench raft`: the zFlatBuffers paper's Table III. PUTs of a 256 B key and a value
//! (1 KiB, and 64 KiB where copies dominate) replicated by three `ferry kv serve` processes
//! (openraft, real TCP loopback between them), the request and the log entry carried as raw
//! bytes, prost, FlatBuffers, zFlatBuffers or Ferry ([`systems`]); `--sync none` as in the
//! paper, and `--sync always`.
//!
//! Per system and sync mode a fresh cluster: node 1 (the leader: it is sent `ferry kv init`,
//! and the run checks that it leads) is started from a thread pinned to `--leader-cpu`, its
//! two followers and the client from threads pinned to `--client-cpu` (a child inherits its
//! starter's mask). The client (one current-thread tokio runtime) runs closed loops against
//! the leader: one put in flight (latency: p50, p99), then `--inflight` (throughput), each
//! after a tenth of its budget as warm-up, over 64 keys so that the store and the snapshots
//! (every 1000 entries) stay small.

use std::cell::RefCell;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_launch::Server;
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{Code, Status};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::BoxError;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::progress::Progress;
use crate::harness::table::Table;
use crate::harness::{Budget, Histogram, Named, cpus, on_cpu, or_all, round};
use crate::plot::{BarPanel, Bars, bars_svg};

pub mod systems;

pub use systems::{Encoder, System, decoder};

/// The key's length (the paper's 256 B).
const KEY_BYTES: usize = 256;
/// Distinct keys the puts cycle over.
const KEYS: usize = 64;
/// How long a cluster may take to start and elect node 1.
const SETTLE: Duration = Duration::from_secs(30);
/// How long one put may wait for its answer before its loop stops with an error: a lost
/// answer must end the run, not hang it (one did, on 29 Nov 2026; not explained yet).
const PUT_DEADLINE: Duration = Duration::from_secs(10);

/// `--sync`, as the nodes are started with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// In memory only (the paper's setting).
    None,
    /// fsync before a write is acknowledged (`ferry kv`'s default).
    Always,
}

/// Options of `ferry bench raft`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Systems, comma-separated (default: all five).
    #[arg(long, value_delimiter = ',')]
    systems: Vec<System>,
    /// Sync modes, comma-separated (default: none,always).
    #[arg(long, value_delimiter = ',')]
    sync: Vec<SyncMode>,
    /// Value sizes in bytes, comma-separated (default: 1024,65536).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Puts in flight in the throughput run (at most 8: a ferry-rpc channel's window refuses
    /// more).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=8))]
    inflight: u64,
    /// CPU of the leader (node 1).
    #[arg(long, default_value_t = 0)]
    leader_cpu: usize,
    /// CPU of the followers and the client (the leader's when only one is available).
    #[arg(long, default_value_t = 1)]
    client_cpu: usize,
}

/// One measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The system.
    pub system: System,
    /// The nodes' `--sync`.
    pub sync: SyncMode,
    /// The value's length.
    pub value_bytes: usize,
    /// Puts in flight.
    pub inflight: usize,
    /// Puts answered in the measured window.
    pub puts: u64,
    /// Loops that stopped on a failed put (each failure named on stderr).
    pub errors: u64,
    /// Latency percentiles, in µs.
    pub p50_us: f64,
    /// 99th.
    pub p99_us: f64,
    /// Puts answered per second.
    pub puts_per_s: f64,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Records {
    /// Every run.
    pub records: Vec<Record>,
}

/// The benchmark, as [`lifecycle::main`] runs it.
struct Raft<'a> {
    args: &'a Args,
    exe: PathBuf,
}

/// Runs `ferry bench raft`; `exe` is the `ferry` binary the nodes run.
pub fn run(args: &Args, exe: PathBuf) -> Result<(), BoxError> {
    lifecycle::main(&Raft { args, exe }, &args.common).map(drop)
}

impl Raft<'_> {
    fn systems(&self) -> Vec<System> {
        or_all(&self.args.systems, &System::ALL)
    }

    fn syncs(&self) -> Vec<SyncMode> {
        or_all(&self.args.sync, &[SyncMode::None, SyncMode::Always])
    }

    fn sizes(&self) -> Vec<usize> {
        or_all(&self.args.sizes, &[1024, 64 << 10])
    }

    fn budget(&self) -> Budget {
        self.args.common.budget(300, 3000)
    }

    fn client_cpu(&self) -> usize {
        if cpus() > 1 {
            self.args.client_cpu
        } else {
            self.args.leader_cpu
        }
    }
}

impl Benchmark for Raft<'_> {
    const NAME: &'static str = "raft";
    type Records = Records;

    fn plan(&self) -> u64 {
        (self.systems().len() * self.syncs().len() * self.sizes().len() * 2) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Records), BoxError> {
        let mut records = Vec::new();
        for sync in self.syncs() {
            for system in self.systems() {
                let cluster = Cluster::start(self, system, sync)?;
                for &value_bytes in &self.sizes() {
                    for inflight in [1, self.args.inflight as usize] {
                        progress.start(format!(
                            "{} {} {value_bytes} B x{inflight}",
                            sync.name(),
                            system.name()
                        ));
                        let r = on_cpu("client", self.client_cpu(), || {
                            measure(&cluster.leader, system, value_bytes, inflight, self.budget())
                        })?;
                        records.push(Record {
                            system,
                            sync,
                            value_bytes,
                            inflight,
                            ..r
                        });
                        progress.done();
                    }
                }
            }
        }
        let settings = json!({
            "nodes": 3,
            "key_bytes": KEY_BYTES,
            "keys": KEYS,
            "inflight": self.args.inflight,
            "leader_cpu": self.args.leader_cpu,
            "client_cpu": self.client_cpu(),
            "budget": self.budget().to_json("puts"),
        });
        Ok((settings, Records { records }))
    }

    fn table(records: &Records) {
        let raw = |r: &Record| find(records, System::Raw, r.sync, r.value_bytes, r.inflight);
        let mut t = Table::new([
            "sync",
            "value",
            "in flight",
            "system",
            "p50 µs",
            "p99 µs",
            "puts/s",
            "p50 / raw",
            "errors",
        ]);
        for r in &records.records {
            let vs_raw = raw(r).map_or("-".into(), |b| format!("{:.2}x", r.p50_us / b.p50_us));
            t.row([
                r.sync.name(),
                crate::plot::bytes_label(r.value_bytes as f64),
                r.inflight.to_string(),
                r.system.name().into(),
                format!("{:.1}", r.p50_us),
                format!("{:.1}", r.p99_us),
                format!("{:.0}", r.puts_per_s),
                vs_raw,
                r.errors.to_string(),
            ]);
        }
        println!(
            "Replicated PUTs, 3 nodes, {KEY_BYTES} B keys (the paper's Table III: p50 15.47 µs raw, 21.19 µs FlatBuffers, 19.49 µs zFlatBuffers at 1 KiB):"
        );
        t.print();
    }

    fn targets(records: &Records) -> Vec<Target> {
        let mut out = Vec::new();
        for sync in [SyncMode::None, SyncMode::Always] {
            let at = |s, size, inflight| find(records, s, sync, size, inflight);
            let latency = at(System::Ferry, 1024, 1)
                .zip(at(System::Raw, 1024, 1))
                .map(|(f, r)| f.p50_us / r.p50_us);
            let n = records.records.iter().map(|r| r.inflight).max().unwrap_or(1);
            let rate = at(System::Ferry, 64 << 10, n)
                .zip(at(System::Prost, 64 << 10, n))
                .map(|(f, p)| f.puts_per_s / p.puts_per_s);
            let s = sync.name();
            out.push(Target::ratio(
                format!("ferry / raw, p50, 1 KiB, --sync {s}"),
                latency,
                false,
                1.10,
            ));
            out.push(Target::ratio(
                format!("ferry / prost, puts/s, 64 KiB x{n}, --sync {s}"),
                rate,
                true,
                1.5,
            ));
        }
        out
    }

    fn plot(records: &Records, path: &Path) -> Result<(), BoxError> {
        let sizes = crate::harness::sorted(records.records.iter().map(|r| r.value_bytes));
        let systems = crate::harness::unique(records.records.iter().map(|r| r.system));
        let mut panels = Vec::new();
        for sync in crate::harness::unique(records.records.iter().map(|r| r.sync)) {
            for latency in [true, false] {
                let bars = systems
                    .iter()
                    .map(|&s| Bars {
                        name: s.name().into(),
                        values: sizes
                            .iter()
                            .map(|&b| {
                                let r = records
                                    .records
                                    .iter()
                                    .filter(|r| r.system == s && r.sync == sync && r.value_bytes == b);
                                match latency {
                                    true => r.filter(|r| r.inflight == 1).map(|r| r.p50_us).next(),
                                    false => r.filter(|r| r.inflight > 1).map(|r| r.puts_per_s).next(),
                                }
                                .unwrap_or(f64::NAN)
                            })
                            .collect(),
                    })
                    .collect();
                panels.push(BarPanel {
                    title: format!(
                        "--sync {}: {}",
                        sync.name(),
                        if latency { "p50, 1 in flight" } else { "throughput" }
                    ),
                    y_label: (if latency { "µs" } else { "puts/s" }).into(),
                    groups: sizes
                        .iter()
                        .map(|&b| crate::plot::bytes_label(b as f64))
                        .collect(),
                    bars,
                    notes: Vec::new(),
                });
            }
        }
        bars_svg(
            path,
            "ferry bench raft: replicated PUTs, 3 nodes (Table III)",
            2,
            &panels,
        )
    }
}

/// The record of `system` at this point, if it ran.
fn find(
    records: &Records,
    system: System,
    sync: SyncMode,
    value_bytes: usize,
    inflight: usize,
) -> Option<&Record> {
    records
        .records
        .iter()
        .find(|r| (r.system, r.sync, r.value_bytes, r.inflight) == (system, sync, value_bytes, inflight))
}

/// Three `ferry kv serve` processes, formed into a cluster led by node 1; killed when dropped.
struct Cluster {
    /// `tcp://` address of node 1.
    leader: String,
    _nodes: Vec<Server>,
    _data: tempfile::TempDir,
}

impl Cluster {
    fn start(bench: &Raft<'_>, system: System, sync: SyncMode) -> Result<Cluster, BoxError> {
        let data = tempfile::tempdir()?;
        let mut ports = Vec::new();
        while ports.len() < 3 {
            let port = ferry_launch::free_port()?;
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
        let addr = |i: usize| format!("tcp://127.0.0.1:{}", ports[i]);
        let peers = (0..3)
            .map(|i| format!("{}={}", i + 1, addr(i)))
            .collect::<Vec<_>>()
            .join(",");
        let mut nodes = Vec::new();
        for (i, &port) in ports.iter().enumerate() {
            let mut cmd = Command::new(&bench.exe);
            cmd.args(["kv", "serve", "--id", &(i + 1).to_string(), "--listen", &addr(i)])
                .args([
                    "--peers",
                    &peers,
                    "--sync",
                    sync.name().as_str(),
                    "--snapshot-every",
                    "1000",
                ])
                .arg("--data")
                .arg(data.path().join(format!("node{}", i + 1)));
            if let Some(encoding) = system.encoding() {
                cmd.args(["--encoding", encoding]);
            }
            // The node binds the port picked above (its peers were told it): `Server`'s own
            // port is unused, and readiness is a connect to ours.
            let start = move || {
                let ready = |_| TcpStream::connect(("127.0.0.1", port)).map(drop);
                Ok(Server::start(
                    &format!("kv-node{}", i + 1),
                    |_| clone(&cmd),
                    ready,
                    SETTLE,
                )?)
            };
            let cpu = if i == 0 {
                bench.args.leader_cpu
            } else {
                bench.client_cpu()
            };
            nodes.push(on_cpu(&format!("node{}", i + 1), cpu, start)?);
        }
        let leader = addr(0);
        let mut client = ferry_kv::raft::Client::connect(&leader)?;
        client.init("")?;
        let deadline = Instant::now() + SETTLE;
        loop {
            match client.status()?.leader {
                Some(1) => break,
                Some(other) => {
                    return Err(format!("node {other} was elected, not node 1 (the pinned one)").into());
                }
                None if Instant::now() > deadline => return Err("no leader elected".into()),
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        Ok(Cluster {
            leader,
            _nodes: nodes,
            _data: data,
        })
    }
}

/// A copy of `cmd` (its program and arguments: all a node's command sets).
fn clone(cmd: &Command) -> Command {
    let mut c = Command::new(cmd.get_program());
    c.args(cmd.get_args());
    c
}

/// Closed loops of puts against `leader`: `inflight` of them, over a warm-up and then the
/// measured budget.
fn measure(
    leader: &str,
    system: System,
    value_bytes: usize,
    inflight: usize,
    budget: Budget,
) -> Result<Record, BoxError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pool = Pool::new(PoolConfig::default())?;
    let value = pool.copy_from(&(0..value_bytes).map(|i| i as u8).collect::<Vec<_>>())?;
    let keys: Rc<Vec<String>> = Rc::new((0..KEYS).map(|i| format!("{i:0>KEY_BYTES$}")).collect());
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let leader = Rc::new(AsyncChannel::connect(leader).await?);
        let mut out = Record {
            system,
            sync: SyncMode::None,
            value_bytes,
            inflight,
            puts: 0,
            errors: 0,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            puts_per_s: 0.0,
        };
        for (warmup, budget) in [(true, budget.warmup()), (false, budget)] {
            let hist = Rc::new(RefCell::new(Histogram::default()));
            let errors = Rc::new(RefCell::new(0u64));
            let per_task = match budget {
                Budget::Count(n) => Some(n.div_ceil(inflight as u64)),
                Budget::Time(_) => None,
            };
            let until = match budget {
                Budget::Time(d) => Instant::now() + d,
                Budget::Count(_) => Instant::now() + SETTLE,
            };
            let started = Instant::now();
            let tasks: Vec<_> = (0..inflight)
                .map(|t| {
                    let (leader, hist, errors, value, keys) = (
                        leader.clone(),
                        hist.clone(),
                        errors.clone(),
                        value.clone(),
                        keys.clone(),
                    );
                    let mut encoder = Encoder::new(system, &pool);
                    tokio::task::spawn_local(async move {
                        let mut n = 0u64;
                        while Instant::now() < until && per_task.is_none_or(|p| n < p) {
                            let key = &keys[(t + n as usize * inflight) % KEYS];
                            let sent = Instant::now();
                            let answer =
                                tokio::time::timeout(PUT_DEADLINE, encoder.put(&leader, key, &value))
                                    .await
                                    .unwrap_or_else(|_| {
                                        Err(Status::new(
                                            Code::DeadlineExceeded,
                                            format!("no answer within {PUT_DEADLINE:?}"),
                                        ))
                                    });
                            match answer {
                                Ok(()) => hist.borrow_mut().record_duration(sent.elapsed()),
                                // Not retried: the loop stops (a leader change ends a run).
                                Err(e) => {
                                    eprintln!("raft bench: {} put failed: {e}", system.name());
                                    *errors.borrow_mut() += 1;
                                    break;
                                }
                            }
                            n += 1;
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await?;
            }
            let elapsed = started.elapsed().as_secs_f64();
            let hist = hist.borrow();
            if !warmup {
                let us = |q| hist.quantile(q).map_or(f64::NAN, |ns| round(ns as f64 / 1e3, 2));
                out.puts = hist.count();
                out.errors = *errors.borrow();
                out.p50_us = us(0.5);
                out.p99_us = us(0.99);
                out.puts_per_s = round(hist.count() as f64 / elapsed, 1);
            }
        }
        Ok(out)
    })
}
