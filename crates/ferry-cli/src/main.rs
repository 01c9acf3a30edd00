//! The `ferry` command.
//!
//! `ferry demo` builds messages whose large values live in Ferry's pool, serializes them in
//! copy-only and hybrid modes, and prints what was copied and what was sent by reference.
//! Later issues add transports, `encode`/`decode`/`inspect` and benchmarks.
#![deny(unsafe_code)]

mod demo;

use clap::{Parser, Subcommand};

/// Ferry: zero-copy structured data movement.
#[derive(Parser)]
#[command(name = "ferry", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serialize sample workloads in copy-only and hybrid modes; show copies and references.
    Demo(demo::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferry: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
