//! The `ferry` command.
//!
//! - `ferry demo` serves a key-value workload (the synthetic Twitter trace) from a store over TCP
//!   and shared memory, with Ferry and with prost, under open-loop load; `ferry demo
//!   --serialize` serializes sample messages copy-only and hybrid and prints what was copied and
//!   what was sent by reference.
//! - `ferry calibrate` measures the zero-copy threshold of each transport and writes it where
//!   every `ferry-rpc` driver reads it.
//! - `ferry redis [--port P] [--pin CPUS] [--mode M] ...` serves the Redis protocol to unchanged
//!   Redis clients from `ferry-redis`, in the foreground.
//! - `ferry encode|decode|inspect --proto FILE [-I DIR]... --message NAME` work on any message
//!   of a `.proto` schema with no compile step: protobuf-JSON to wire bytes, wire bytes to
//!   protobuf-JSON, and a dump of the header layout. `decode` and `inspect` validate with the
//!   default `Limits` unless given `--max-depth`, `--max-elements`, `--max-len`; `encode` refuses
//!   to write what `decode` would refuse with the defaults, and JSON with a key given twice.
//! - `ferry gen --proto FILE [-I DIR]... --out DIR` writes the same Rust types as `ferry-build`.
//! - `ferry bench datapath [--quick] --json PATH [--plot PATH]` measures `ferry-net`'s send
//!   modes over TCP loopback and writes the results as JSON (and an SVG plot).
//! - `ferry bench shm [--quick] --json PATH [--plot PATH]` measures request/response round trips
//!   over `ferry-shm` against a raw shared-memory ping-pong and TCP loopback, likewise.
//! - `ferry bench datapath|shm --from RESULTS_JSON [--plot PATH]` prints the table and draws the
//!   plot of an earlier run without measuring.
//!
//! The benchmarks themselves live in `ferry-bench`; this crate only parses their options.
//! `demo`, `calibrate` and `bench` are behind the default-on `bench` feature: built without it
//! (`--no-default-features`), the command has the schema tools and the servers, and does not
//! link `ferry-bench` or the peer libraries it measures against.
//!
//! - `ferry kv serve|init|put|get|delete|append|status|add-node|remove-node`: a replicated
//!   key-value store (`ferry-kv`'s `raft`); `get` exits 1 when the key is not there.
//!
//! Exit status: 0 on success, 1 for usage and schema errors (bad options, a `.proto` that does
//! not parse, an unknown message), 2 for invalid input on standard input (wire bytes that do not
//! validate, JSON that does not parse or does not fit the message).
#![deny(unsafe_code)]

#[cfg(feature = "bench")]
mod bench;
mod decode;
#[cfg(feature = "bench")]
mod demo;
mod encode;
mod gateway;
mod generate;
mod inspect;
mod kv;
mod redis;
mod schema;

use clap::{Parser, Subcommand};

/// Ferry: zero-copy structured data movement.
#[derive(Parser)]
#[command(name = "ferry", version, about)]
#[cfg_attr(
    not(feature = "bench"),
    command(after_help = "Built without the `bench` feature: no `demo`, `calibrate` or `bench`.")
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve a key-value workload from a store (Ferry against prost, over TCP and shared
    /// memory) and measure it; `--serialize`: sample messages copy-only and hybrid instead.
    #[cfg(feature = "bench")]
    Demo(demo::Args),
    /// Read protobuf-JSON on stdin, write Ferry wire bytes on stdout (every value copied).
    ///
    /// Well-known types (Timestamp, Duration, ...) are read as ordinary messages, not in
    /// their special JSON forms. A field or map key given twice is refused (exit 2), and so is
    /// a message `ferry decode` would refuse with its default limits (nesting deeper than 64).
    Encode(encode::Args),
    /// Read Ferry wire bytes on stdin, write protobuf-JSON on stdout (one line).
    ///
    /// Invalid bytes exit with status 2 and a message naming the field and byte offset; so does
    /// a message past a limit (--max-depth, --max-elements, --max-len), naming the limit.
    Decode(decode::Args),
    /// Read Ferry wire bytes on stdin, print the header layout: chunks, entries, nested
    /// headers, and the copied and zero-copy regions.
    Inspect(inspect::Args),
    /// Generate Rust types from .proto files: what `ferry_build::compile_protos` writes from
    /// a build.rs.
    Gen(generate::Args),
    /// Benchmarks that write JSON results: `datapath` (the TCP send modes over loopback).
    #[cfg(feature = "bench")]
    Bench(bench::Args),
    /// Measure the zero-copy threshold of each transport (copy-only against zero-copy-only
    /// over values of N buffers of S bytes) and write it where `ferry-rpc` reads it.
    #[cfg(feature = "bench")]
    Calibrate(ferry_bench::kv::calibrate::Args),
    /// Serve the Redis protocol (RESP2/RESP3) to unchanged Redis clients, large values sent by
    /// scatter-gather from the keyspace's memory; in the foreground, no persistence.
    Redis(redis::Args),
    /// Serve unchanged gRPC clients in front of a Ferry host service on shared memory: decode
    /// their protobuf into Ferry messages the host reads in place, encode its answers (the
    /// offload engine; `cargo run -p ferry-offload --example host` is a host).
    Gateway(gateway::Args),
    /// A replicated key-value store (Raft, openraft): `serve` a node, `init` a cluster,
    /// `put`/`get`/`delete`/`append` through any node, `status`, `add-node`, `remove-node`.
    Kv(kv::Args),
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors exit 1 (not clap's 2,
            // which this command keeps for invalid input).
            let _ = e.print();
            return std::process::ExitCode::from(if e.use_stderr() { 1 } else { 0 });
        }
    };
    let result = match cli.command {
        #[cfg(feature = "bench")]
        Command::Demo(args) => demo::run(&args).map_err(|e| schema::CliError::Usage(e.to_string())),
        Command::Encode(args) => encode::run(&args),
        Command::Decode(args) => decode::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Gen(args) => generate::run(&args),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::run(&args).map_err(|e| schema::CliError::Usage(e.to_string())),
        Command::Redis(args) => redis::run(&args).map_err(schema::CliError::Usage),
        Command::Gateway(args) => gateway::run(&args).map_err(schema::CliError::Usage),
        Command::Kv(args) => kv::run(&args),
        #[cfg(feature = "bench")]
        Command::Calibrate(args) => {
            ferry_bench::kv::calibrate::run(&args).map_err(|e| schema::CliError::Usage(e.to_string()))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferry: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
    }
}
