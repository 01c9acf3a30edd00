//! `ferry bench`: thin dispatch to the end-to-end benchmarks of `ferry-bench`, which write JSON
//! results (and optionally an SVG plot).
//!
//! - `ferry bench datapath` ([`ferry_bench::datapath`]): one-way streams of Ferry messages over
//!   TCP loopback, swept over message size, number of fields and send mode.
//! - `ferry bench shm` ([`ferry_bench::shm`]): request/response round trips over the
//!   shared-memory transport, against a raw shared-memory ping-pong (the floor) and TCP loopback,
//!   in one run.
//! - `ferry bench rpc` ([`ferry_bench::rpc`]): echo calls through `ferry-rpc` (one server loop,
//!   a client event loop) over TCP and shared memory, against a no-serialization echo, prost,
//!   FlatBuffers, Cap'n Proto, tonic and the raw shared-memory ping-pong, in one run.
//!
//! - `ferry bench kv` ([`ferry_bench::kv`]): the Cornflakes evaluation: a key-value store served
//!   with Ferry and with prost, FlatBuffers and Cap'n Proto over one server loop, under open-loop
//!   load from a workload (Google, Twitter, CDN, YCSB).
//! - `ferry bench redis` ([`ferry_bench::redis`]): this binary's Redis-protocol server (`ferry
//!   redis`) against `redis-server`, one at a time on the same core, both driven by
//!   `redis-benchmark` on the other core with the same flags.
//! - `ferry bench flatbuffers` ([`ferry_bench::flatbuffers`]): the zFlatBuffers paper's
//!   evaluation: the stock `flatbuffers` builder against `ferry-flatbuffers`, building the
//!   paper's Record (time, allocations, bytes copied) and in a ping-pong RPC over TCP and
//!   shared memory.
//! - `ferry bench offload` ([`ferry_bench::offload`]): the DPU offload paper's Figures 7 and 8
//!   and Zerializer's null-serializer bound: the offload engine (`ferry gateway`) against a
//!   tonic host.
//!
//! The harness (pinning, CPU time, histograms, JSON records, plots) lives in `ferry-bench`;
//! this module only parses the command line and calls it.

use ferry_bench::{BoxError, datapath, flatbuffers, kv, offload, raft, redis, rpc, shm};

/// Options of `ferry bench`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(clap::Subcommand)]
enum BenchCommand {
    /// One-way message streams over TCP loopback in every send mode (copy, gather, zerocopy,
    /// uring, auto), swept over message size and field count.
    ///
    /// `--quick`: sizes 64 B, 1 KiB, 4 KiB, 64 KiB x 1 and 8 fields, unbatched only at 4 KiB x 8
    /// fields, 80 ms per repetition, well under 30 s. `--plot`: messages/s and sender CPU per
    /// message against message size, per mode, at `--unbatched-fields` fields, batched and unbatched.
    Datapath(datapath::Args),
    /// Request/response round trips and pipelined throughput over the shared-memory transport,
    /// against a raw shared-memory ping-pong and TCP loopback.
    ///
    /// `--quick`: 100 ms per repetition, 3 repetitions, under 30 s. `--plot`: requests/s and
    /// latency against requests in flight, and latency against payload.
    Shm(shm::Args),
    /// Echo calls through ferry-rpc (one busy-polling server loop, a client event loop on the
    /// other core) over TCP and shared memory: raw, Ferry copy-only and hybrid, prost,
    /// FlatBuffers, Cap'n Proto; tonic and the raw shared-memory ping-pong in the same run.
    /// Then the streams (`--sections`): download, upload and ping-pong over Ferry's tokio
    /// driver (TCP and shared memory) and tonic, with the unary call beside the ping-pong.
    ///
    /// `--quick`: one repetition of 40 ms per echo configuration, 16 MiB streams, well under
    /// 30 s. `--plot`: p99 latency against calls/s per system, per transport and payload
    /// (Cornflakes Figure 2); the 64 B call against the ping-pong; p50 at one in flight
    /// against payload; the streams' GB/s, and their ping-pong's p50 against the unary call's.
    Rpc(rpc::Args),
    /// The key-value store under open-loop load (Cornflakes section 6): Ferry hybrid,
    /// copy-only and zero-copy-only, prost, FlatBuffers and Cap'n Proto over one server loop,
    /// per transport, sweeping the offered load up to where the server falls behind.
    ///
    /// `--quick`: at most 4 points of 0.3 s per sweep. `--plot`: p99 latency against achieved
    /// load, per transport.
    Kv(kv::Args),
    /// Ferry's Redis-protocol server (`ferry redis`) against redis-server: GET 4 KiB, MGET of
    /// 2 x 2 KiB, LRANGE 0 1 of 2 x 2 KiB, HGETALL of 8 x 1 KiB, SMEMBERS of 16 x 512 B, ZRANGE
    /// of 10 x 1 KiB, SET 4 KiB (also with the AOF on, `appendfsync everysec`), GET/SET 64 B at
    /// pipeline 1 and 16 over 100,000 keys, driven by redis-benchmark (Debian: redis-server,
    /// redis-tools on PATH).
    ///
    /// Each server runs alone, pinned to --server-cpu, redis-benchmark on --client-cpu; per
    /// test: requests/s, p50/p99 and the server's CPU time per request (/proc), Ferry's
    /// ratios and the targets. `--tls`: every test over TLS too (both servers on a TLS
    /// port beside the plain one), with a TLS-over-plain table. 5 s per test and server, about
    /// 2.2 min per round (`--repeat 5` for results: single rounds vary by up to 25-40 % on this
    /// VM, see docs/benchmarks/redis.md); `--quick`: 1 s, about 40 s. `--plot`: requests/s and
    /// server CPU per request per test, per pipeline depth.
    Redis(redis::Args),
    /// The zFlatBuffers paper (section VI-A..C): the stock `flatbuffers` builder, fresh and
    /// reused, against ferry-flatbuffers' copy-free builder. Building the paper's Record
    /// (1 KiB .. 1 MiB): time, allocations, bytes allocated and copied, beside Table II; and a
    /// ping-pong RPC (Record request verified by the server, ACK answer) over TCP and shared
    /// memory, 256 B .. 128 KiB, then 1..4 client threads at 128 KiB.
    ///
    /// About 3 min; `--quick`: one repetition of 30 ms per configuration, about 10 s. `--plot`:
    /// Figures 9-13 (serialization time, bytes allocated and copied, requests/s and p50 per
    /// size and transport, the requests/s ratio, requests/s against client threads).
    Flatbuffers(flatbuffers::Args),
    /// The DPU offload paper: Figure 7 (decoding one message against its element count: the
    /// offload engine's decoder, prost, and the host's validation) and Figure 8 (its three
    /// messages served by a tonic host, through the offload engine to a Ferry host, and by the
    /// null serializer: requests per second and host CPU per request).
    Offload(offload::Args),
    /// The zFlatBuffers paper's Table III: PUTs (256 B key; 1 KiB and 64 KiB values) replicated
    /// by three `ferry kv serve` processes, carried as raw bytes, prost, FlatBuffers,
    /// zFlatBuffers and Ferry; p50, p99 and puts/s at 1 and `--inflight` in flight, with
    /// `--sync none` and `always`.
    ///
    /// About 2 min; `--quick`: 0.3 s per run, about 30 s. `--plot`: p50 and puts/s per system.
    Raft(raft::Args),
}

/// Runs the chosen benchmark.
pub fn run(args: &Args) -> Result<(), BoxError> {
    match &args.command {
        BenchCommand::Datapath(args) => datapath::run(args),
        BenchCommand::Shm(args) => shm::run(args),
        BenchCommand::Rpc(args) => rpc::run(args),
        BenchCommand::Kv(args) => kv::run(args),
        BenchCommand::Flatbuffers(args) => flatbuffers::run(args),
        BenchCommand::Offload(args) => offload::run(args),
        BenchCommand::Raft(args) => {
            let exe = std::env::current_exe().map_err(|e| format!("locating the ferry binary: {e}"))?;
            raft::run(args, exe)
        }
        BenchCommand::Redis(args) => {
            let exe = std::env::current_exe().map_err(|e| format!("locating the ferry binary: {e}"))?;
            redis::run(args, redis::ServerCmd::ferry(exe)).map(drop)
        }
    }
}
