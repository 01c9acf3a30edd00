//! `ferry bench flatbuffers`: the copy-free FlatBuffers builder (`ferry-flatbuffers`, the
//! zFlatBuffers paper's design) against the stock `flatbuffers` 25.12 builder, as in the
//! paper's section VI-A..C, side by side in one run (`docs/benchmarks/flatbuffers.md` says
//! what is measured and how).
//!
//! - **Serialization** (Table II, Figures 9-10; `serialize.rs`, `counting.rs`): the paper's
//!   Record (`record.rs`) of 1 KiB .. 1 MiB, built by the same call sequence with each
//!   [`Builder`], fresh or reused: time per message, and allocations, bytes allocated and
//!   bytes copied, counted exactly; and the memcpy floor.
//! - **Ping-pong RPC** (Figures 11-13; `service.rs`, `client.rs`): one pinned, busy-polling
//!   [`ferry_rpc::Server`] loop over TCP and shared memory verifies each Record and answers an
//!   8-byte ACK; client threads on the other CPU send one call at a time, by size, then by
//!   thread count at 128 KiB; **prebuilt** (the Record built once) is the ceiling.
//!
//! Every repetition runs every configuration, what a ratio compares back to back; figures are
//! medians over repetitions, target ratios medians of per-repetition ratios. A call not
//! answered within 10 s fails the run. The Record's reader is
//! [`crate::generated::zflat_record_generated`] (`flatc --rust`, see `regen.sh`).

mod client;
mod counting;
pub mod record;
mod report;
mod serialize;
mod service;

use std::path::Path;
use std::time::Duration;

use ferry_buf::{Pool, PoolConfig};
use ferry_rpc::{ConnConfig, LoopConfig, Server, Services};
use ferry_shm::ShmConfig;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::BoxError;
use crate::harness::Named;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::progress::Progress;
use crate::harness::{self, Budget};

use record::Source;
use report::{Record, Records, RpcRun, SerializeRun};
use serialize::Counted;

/// Source sizes of the serialization part: the paper's three, and 128 KiB and 1 MiB.
const SERIALIZE_SIZES: [usize; 5] = [1 << 10, 16 << 10, 64 << 10, 128 << 10, 1 << 20];
/// The size of the client-thread sweep (Figure 12(b)).
const THREADS_SIZE: usize = 128 << 10;
const MAX_THREADS: usize = 4;

/// Budgets and repetitions of the full run and of `--quick`.
const FULL_MS: u64 = 300;
const QUICK_MS: u64 = 30;
const FULL_REPS: usize = 3;
const QUICK_REPS: usize = 1;

/// Options of `ferry bench flatbuffers`. `--quick`: one repetition of 30 ms per configuration,
/// the ping-pong at 256 B, 1, 4, 16, 64 and 128 KiB, about 10 s. `--plot`: serialization time,
/// bytes allocated and copied against Record size (Figures 9-10); requests/s and p50 against
/// size per transport, zFlatBuffers' requests/s over FlatBuffers' (Figures 11-13); requests/s
/// against client threads at 128 KiB (Figure 12(b)).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Parts to run, comma-separated (default: serialize,rpc).
    #[arg(long, value_delimiter = ',')]
    parts: Vec<Part>,
    /// Transports of the ping-pong, comma-separated (default: tcp,shm).
    #[arg(long, value_delimiter = ',')]
    transports: Vec<Transport>,
    /// Builders, comma-separated (default: all four; the baselines, memcpy and prebuilt,
    /// always run).
    #[arg(long, value_delimiter = ',')]
    builders: Vec<Builder>,
    /// Source sizes of the serialization part in bytes, multiples of 128, comma-separated
    /// (default: 1 KiB, 16 KiB, 64 KiB, 128 KiB, 1 MiB).
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Client threads of the 128 KiB sweep go from 1 to this (0: no sweep).
    #[arg(long, default_value_t = MAX_THREADS)]
    max_threads: usize,
    /// Repetitions, the configurations interleaved; every reported number is the median over
    /// them (default 3, or 1 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// CPU of the serializing thread and of the client threads.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU of the server loop (the client's when only one is available).
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
}

/// A part of the benchmark.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Building the Record: time, allocations, bytes allocated and copied (Table II, Fig. 9).
    Serialize,
    /// The ping-pong RPC over TCP and shared memory (Figures 11-13).
    Rpc,
}

/// A FlatBuffers builder, and how it is used across messages; or a baseline.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builder {
    /// The floor of any serializer: the source copied into one buffer (serialization only).
    #[value(skip)]
    Memcpy,
    /// The Record built once before the run, its bytes sent every call: the ceiling of any
    /// builder (ping-pong only).
    #[value(skip)]
    Prebuilt,
    /// The `flatbuffers` crate's builder, a new one per message (grows from empty).
    FlatbuffersFresh,
    /// The `flatbuffers` crate's builder, `reset()` between messages.
    FlatbuffersReused,
    /// `ferry_flatbuffers::FlatBufferBuilder`, a new one per message.
    ZflatbuffersFresh,
    /// `ferry_flatbuffers::FlatBufferBuilder`, `reset()` between messages.
    ZflatbuffersReused,
}

impl Builder {
    const ALL: [Builder; 4] = [
        Builder::FlatbuffersFresh,
        Builder::FlatbuffersReused,
        Builder::ZflatbuffersFresh,
        Builder::ZflatbuffersReused,
    ];

    /// What a ping-pong client can send.
    const SENDS: [Builder; 5] = [
        Builder::Prebuilt,
        Builder::FlatbuffersFresh,
        Builder::FlatbuffersReused,
        Builder::ZflatbuffersFresh,
        Builder::ZflatbuffersReused,
    ];

    /// Its name in the tables and the plot.
    fn label(self) -> String {
        match self {
            Builder::Memcpy => "memcpy (floor)".to_owned(),
            b => b.name(),
        }
    }
}

pub use crate::harness::Transport;

/// A Record source size: a positive multiple of 128 bytes.
fn parse_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 && n % 128 == 0 => Ok(n),
        _ => Err(format!("{s:?} is not a positive multiple of 128 bytes")),
    }
}

/// Which sweep of the ping-pong a configuration is part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sweep {
    /// Record sizes, one client thread.
    Size,
    /// Client threads, at [`THREADS_SIZE`].
    Threads,
}

/// One ping-pong configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RpcPoint {
    transport: Transport,
    /// What the client sends: a builder's Record, or [`Builder::Prebuilt`].
    builder: Builder,
    size: usize,
    threads: usize,
    sweep: Sweep,
}

impl RpcPoint {
    fn label(&self) -> String {
        format!(
            "{} {} {} x{}",
            self.builder.label(),
            self.transport.name(),
            crate::plot::bytes_label(self.size as f64),
            self.threads
        )
    }
}

/// The builders `args` choose.
fn builders(args: &Args) -> Vec<Builder> {
    let all = Builder::ALL.into_iter();
    all.filter(|b| args.builders.is_empty() || args.builders.contains(b))
        .collect()
}

/// The ping-pong's configurations in the order one repetition runs them: per transport and
/// size, prebuilt and every builder back to back; then the thread sweep likewise.
fn rpc_plan(args: &Args) -> Vec<RpcPoint> {
    let sends: Vec<Builder> = std::iter::once(Builder::Prebuilt).chain(builders(args)).collect();
    let transports = harness::or_all(&args.transports, &Transport::DEFAULT);
    // 256 B .. 128 KiB in powers of 2 (`--quick`: of 4, and 128 KiB).
    let sizes: Vec<usize> = if args.common.quick {
        (8..=16).step_by(2).chain([17]).map(|i| 1 << i).collect()
    } else {
        (8..=17).map(|i| 1 << i).collect()
    };
    let sweeps = [
        (Sweep::Size, sizes, vec![1]),
        (
            Sweep::Threads,
            vec![THREADS_SIZE],
            (1..=args.max_threads).collect(),
        ),
    ];
    let mut points = Vec::new();
    for (sweep, sizes, threads) in sweeps {
        for &transport in &transports {
            for &size in &sizes {
                for &threads in &threads {
                    for &builder in &sends {
                        points.push(RpcPoint {
                            transport,
                            builder,
                            size,
                            threads,
                            sweep,
                        });
                    }
                }
            }
        }
    }
    points
}

/// The loops' settings: `spin` for the loop and its shared-memory connections; room for a
/// few calls in flight.
pub(crate) fn loop_config(spin: Duration) -> LoopConfig {
    LoopConfig {
        spin,
        conn: ConnConfig {
            shm: ShmConfig {
                spin,
                ..ShmConfig::default()
            },
            ..ConnConfig::default()
        },
        ..LoopConfig::default()
    }
}

/// `ferry bench flatbuffers`, as `args` ask.
struct Bench<'a> {
    args: &'a Args,
    budget: Budget,
    reps: usize,
    /// The client's and the server's CPU.
    cpus: (usize, usize),
    /// Serialization's sizes (none: the part is not run).
    sizes: Vec<usize>,
    builders: Vec<Builder>,
    rpc: Vec<RpcPoint>,
}

impl<'a> Bench<'a> {
    fn new(args: &'a Args) -> Bench<'a> {
        let wants = |part| args.parts.is_empty() || args.parts.contains(&part);
        let server_cpu = harness::server_cpu(args.client_cpu, args.server_cpu);
        let sizes = match (wants(Part::Serialize), args.sizes.is_empty()) {
            (false, _) => Vec::new(),
            (true, true) => SERIALIZE_SIZES.to_vec(),
            (true, false) => args.sizes.clone(),
        };
        let default_reps = if args.common.quick { QUICK_REPS } else { FULL_REPS };
        Bench {
            args,
            budget: args.common.budget(QUICK_MS, FULL_MS),
            reps: args.reps.unwrap_or(default_reps).max(1),
            cpus: (args.client_cpu, server_cpu),
            sizes,
            builders: builders(args),
            rpc: if wants(Part::Rpc) {
                rpc_plan(args)
            } else {
                Vec::new()
            },
        }
    }

    /// Serialization's columns: the floor, then the builders.
    fn columns(&self) -> Vec<Builder> {
        std::iter::once(Builder::Memcpy)
            .chain(self.builders.iter().copied())
            .collect()
    }

    /// One repetition of serialization, on the pinned client CPU: ns per message per size
    /// and column.
    fn time_serialize(&self, pool: &Pool, progress: &Progress) -> Result<Vec<Vec<f64>>, BoxError> {
        harness::on_cpu("fb-serialize", self.cpus.0, || {
            let mut timed = serialize::Builders::new(pool);
            let mut out = Vec::new();
            for &size in &self.sizes {
                let source = Source::new(size);
                let mut row = Vec::new();
                for b in self.columns() {
                    progress.start(format!(
                        "serialize {} {}",
                        b.label(),
                        crate::plot::bytes_label(size as f64)
                    ));
                    row.push(timed.time(b, &source, self.budget));
                    progress.done();
                }
                out.push(row);
            }
            Ok(out)
        })
    }

    /// Per size and builder, what building one message takes, each message's bytes compared
    /// across the builders (counts are deterministic: taken once).
    fn count(&self, pool: &Pool) -> Result<Vec<Vec<Counted>>, BoxError> {
        let mut counts = Vec::new();
        for &size in &self.sizes {
            let source = Source::new(size);
            let expected = source.serialized_len();
            let mut row = Vec::new();
            let mut first: Option<Vec<u8>> = None;
            for &b in &self.builders {
                let (c, bytes) = serialize::count(b, &source, pool)?;
                if bytes.len() != expected || first.as_ref().is_some_and(|f| *f != bytes) {
                    return Err(format!(
                        "{} builds other bytes than the stock builder at {size} B",
                        b.label()
                    )
                    .into());
                }
                first.get_or_insert(bytes);
                row.push(c);
            }
            counts.push(row);
        }
        Ok(counts)
    }

    fn settings(&self) -> Value {
        json!({
            "budget": self.budget.to_json("messages"),
            "warmup": "a tenth of the budget, before the measured window",
            "reps": self.reps,
            "statistic": "median over repetitions; target ratios: median over repetitions of the ratio within one",
            "client_cpu": self.cpus.0,
            "server_cpu": self.cpus.1,
            "record": "table Record { ids:[long]; strings:[string]; } (record.fbs); a source of S bytes: S/16 i64 ids and S/128 strings of 64 bytes; built with flatc's Record::create call sequence, strings first",
            "builders": {
                "flatbuffers-fresh": "flatbuffers 25.12 FlatBufferBuilder::new() per message (DefaultAllocator: doubling from empty, copying)",
                "flatbuffers-reused": "one flatbuffers 25.12 FlatBufferBuilder, reset() between messages (zeroes the bytes the last message used)",
                "zflatbuffers-fresh": "ferry_flatbuffers::FlatBufferBuilder::with_pool(&pool) per message",
                "zflatbuffers-reused": "one ferry_flatbuffers::FlatBufferBuilder, reset() between messages (it keeps the last message's blocks that nothing else holds)",
            },
            "serialize": "messages built back to back on the pinned client CPU, clock read per batch (batches grow to 20 us); the result passed to black_box; ours from a Pool::new(PoolConfig::default())",
            "counts": "per message, exact: stock with a counting flatbuffers::Allocator that grows as DefaultAllocator (max(1, 2*len), old bytes copied to the new upper half), fresh = one new builder, reused = the second message after reset(); ours from BuildStats; ours' copied bytes are 0 by construction, checked: every finished slice lies in a block the builder was given",
            "paper_table_ii": report::paper_json(),
            "rpc": "ferry_rpc::Server, loops(1), pinned to server_cpu, busy-polling, TCP 127.0.0.1 (ferry-net gather mode) and shm (ferry-shm defaults); raw method: flatbuffers::root::<Record> (the verifier), answer an 8-byte ACK (counts of ids and strings) checked by the client. Client: an EventLoop per thread on client_cpu, one session, one call in flight: build, call_payload (stock: Payload::Bytes(finished_data()); ours: Payload::Gather of finished_slices(), blocks from the session's pool), wait for the ACK",
            "rpc_size_sweep": "one client thread, busy-polling",
            "rpc_thread_sweep": format!("{} KiB, 1..{} client threads, each busy-polling its own loop, all pinned to client_cpu (they share it by time slices); throughput summed over threads", THREADS_SIZE >> 10, self.args.max_threads),
            "prebuilt": "the Record built once into a pool buffer before the run, sent every call as a one-part Payload::Gather: no serialization per call, the ceiling of any builder",
            "memcpy": "the floor of any serializer: the source's ids (one copy_from_slice) and strings (one per string) copied into buffers allocated once",
            "latency": "from the end of the previous call to the ACK checked: every call, HdrHistogram 3 significant digits",
        })
    }
}

impl Benchmark for Bench<'_> {
    const NAME: &'static str = "flatbuffers";
    type Records = Records;

    fn plan(&self) -> u64 {
        (self.reps * (self.sizes.len() * (1 + self.builders.len()) + self.rpc.len())) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Records), BoxError> {
        let pool = Pool::new(PoolConfig::default())?;
        let counts = self.count(&pool)?;
        let mut ser_ns = vec![vec![Vec::new(); 1 + self.builders.len()]; self.sizes.len()];
        let mut rpc_runs: Vec<Vec<client::Measured>> = vec![Vec::new(); self.rpc.len()];
        for rep in 0..self.reps {
            if !self.sizes.is_empty() {
                for (row, times) in ser_ns.iter_mut().zip(self.time_serialize(&pool, progress)?) {
                    for (column, ns) in row.iter_mut().zip(times) {
                        column.push(ns);
                    }
                }
            }
            if !self.rpc.is_empty() {
                let measured = run_rpc(rep, &self.rpc, self.budget, self.cpus, progress)?;
                for (runs, m) in rpc_runs.iter_mut().zip(measured) {
                    runs.push(m);
                }
            }
        }
        let mut records = Vec::new();
        for ((&size, ns), counts) in self.sizes.iter().zip(&ser_ns).zip(&counts) {
            for (i, b) in self.columns().into_iter().enumerate() {
                let counted = i.checked_sub(1).map(|j| counts[j]);
                records.push(Record::Serialize(SerializeRun::new(b, size, counted, &ns[i])));
            }
        }
        for (&p, runs) in self.rpc.iter().zip(&rpc_runs) {
            records.push(Record::Rpc(RpcRun::new(
                p,
                Source::new(p.size).serialized_len(),
                runs,
            )));
        }
        Ok((self.settings(), Records { records }))
    }

    fn table(records: &Records) {
        records.table();
    }

    fn targets(records: &Records) -> Vec<Target> {
        records.targets()
    }

    fn plot(records: &Records, path: &Path) -> Result<(), BoxError> {
        records.plot(path)
    }
}

/// Runs `ferry bench flatbuffers`.
pub fn run(args: &Args) -> Result<(), BoxError> {
    Transport::tcp_or_shm(&args.transports, "flatbuffers")?;
    lifecycle::main(&Bench::new(args), &args.common)?;
    Ok(())
}

/// Runs the ping-pong configurations of repetition `rep` against a fresh server.
fn run_rpc(
    rep: usize,
    points: &[RpcPoint],
    budget: Budget,
    cpus: (usize, usize),
    progress: &Progress,
) -> Result<Vec<client::Measured>, BoxError> {
    let services = Services::builder().service(service::AckService)?.build()?;
    let socket = std::env::temp_dir().join(format!(
        "ferry-bench-flatbuffers-{}-{rep}.sock",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&socket);
    let server = Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}", socket.display()))
        .loops(1)
        .pin(vec![cpus.1])
        .config(loop_config(Duration::MAX))
        .start()?;
    // TCP, then shared memory: indexed by `Transport`.
    let addrs = server.addrs().to_vec();
    let mut out = Vec::with_capacity(points.len());
    let mut failed = None;
    let mut source = Source::new(points.first().map_or(128, |p| p.size));
    for point in points {
        progress.start(point.label());
        if source.size != point.size {
            source = Source::new(point.size);
        }
        let spec = client::Spec {
            addr: &addrs[point.transport as usize],
            builder: point.builder,
            source: &source,
            budget,
            threads: point.threads,
            cpu: cpus.0,
            spin: Duration::MAX,
        };
        match client::run(&spec) {
            Ok(m) => out.push(m),
            Err(e) => {
                failed = Some(format!("{}: {e}", point.label()));
                break;
            }
        }
        progress.done();
    }
    server.shutdown(Duration::from_secs(1));
    let _ = std::fs::remove_file(&socket);
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        crate::harness::cli::parse("flatbuffers", extra)
    }

    #[test]
    fn the_plan_puts_the_builders_back_to_back() {
        let points = rpc_plan(&args(&[]));
        // 2 transports x 10 sizes x (prebuilt + 4 builders), then 2 transports x 4 thread
        // counts x 5.
        assert_eq!(points.len(), 100 + 40);
        for chunk in points.chunks(5) {
            let names: Vec<Builder> = chunk.iter().map(|p| p.builder).collect();
            assert_eq!(names, Builder::SENDS);
            let first = (chunk[0].transport, chunk[0].size, chunk[0].threads);
            assert!(chunk.iter().all(|p| (p.transport, p.size, p.threads) == first));
        }
        assert!(
            points[100..]
                .iter()
                .all(|p| p.sweep == Sweep::Threads && p.size == THREADS_SIZE)
        );
        let quick = rpc_plan(&args(&[
            "--quick",
            "--transports",
            "shm",
            "--max-threads",
            "2",
            "--builders",
            "zflatbuffers-reused,flatbuffers-reused",
        ]));
        assert_eq!(quick.len(), 6 * 3 + 2 * 3);
        assert!(quick.iter().all(|p| p.transport == Transport::Shm));
        // In the order of Builder::ALL, whatever the order asked.
        assert_eq!(quick[1].builder, Builder::FlatbuffersReused);
        assert_eq!(quick[2].builder, Builder::ZflatbuffersReused);
    }

    /// The committed results (`docs/benchmarks/flatbuffers.json`) read back: `--from` works
    /// on them, every record with its part.
    #[test]
    fn the_committed_results_read_back() {
        let (_, records): (serde_json::Value, Records) = lifecycle::committed("flatbuffers.json");
        let serialize = records
            .records
            .iter()
            .filter(|r| matches!(r, Record::Serialize(_)));
        assert_eq!(serialize.count(), 5 * 5);
        assert_eq!(records.records.len(), 165);
        let again: Records = serde_json::from_value(serde_json::to_value(&records).unwrap()).unwrap();
        assert_eq!(again, records);
    }

    #[test]
    fn sizes_are_multiples_of_128() {
        assert_eq!(args(&["--sizes", "1024,65536"]).sizes, [1024, 65536]);
        assert!(parse_size("1000").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn a_short_run_of_each_transport_answers_every_builder() {
        let points: Vec<RpcPoint> = Transport::DEFAULT
            .into_iter()
            .flat_map(|transport| {
                Builder::SENDS.map(move |builder| RpcPoint {
                    transport,
                    builder,
                    size: 64 << 10,
                    threads: 2,
                    sweep: Sweep::Threads,
                })
            })
            .collect();
        let progress = Progress::new(points.len() as u64, "test");
        let cpus = if harness::cpus() > 1 { (0, 1) } else { (0, 0) };
        let measured = run_rpc(0, &points, Budget::Count(20), cpus, &progress).unwrap();
        progress.finish();
        assert_eq!(measured.len(), points.len());
        for (p, m) in points.iter().zip(&measured) {
            assert_eq!(m.calls, 40, "{}", p.label());
            assert_eq!(m.latency.len(), 40, "{}", p.label());
        }
    }
}
