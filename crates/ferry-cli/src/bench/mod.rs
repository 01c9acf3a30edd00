//! `ferry bench`: end-to-end benchmarks that write JSON results (and optionally an SVG plot).
//!
//! - `ferry bench datapath` ([`datapath`]): one-way streams of Ferry messages over TCP loopback,
//!   swept over message size, number of fields and send mode.
//! - `ferry bench shm` ([`shm`]): request/response round trips over the shared-memory
//!   transport, against a raw shared-memory ping-pong (the floor) and TCP loopback, in one run.
//!
//! The pieces every benchmark here shares are in their own files, so that further benchmarks
//! (shared memory, RPC) reuse them: [`harness`] pins threads, reads per-thread CPU time and
//! takes medians; [`report`] writes the JSON header (machine, date, command) around the
//! records; [`plot`] draws line charts as SVG. Benchmarks are not tests: they measure and
//! write results, and assert nothing about speed.

pub mod datapath;
pub mod harness;
pub mod plot;
pub mod report;
pub mod shm;
#[allow(unsafe_code)]
mod sys;

use std::error::Error;

/// The benchmarks' error type: it crosses thread boundaries.
pub type BoxError = Box<dyn Error + Send + Sync>;

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
    Datapath(datapath::Args),
    /// Request/response round trips and pipelined throughput over the shared-memory transport,
    /// against a raw shared-memory ping-pong and TCP loopback.
    Shm(shm::Args),
}

/// Runs the chosen benchmark.
pub fn run(args: &Args) -> Result<(), BoxError> {
    match &args.command {
        BenchCommand::Datapath(args) => datapath::run(args),
        BenchCommand::Shm(args) => shm::run(args),
    }
}
