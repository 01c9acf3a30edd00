//! `ferry gateway`: the offload engine (`ferry-offload`) in the foreground, until killed: a
//! gRPC server for unchanged clients in front of a Ferry host service on shared memory.

use std::net::SocketAddr;
use std::time::Duration;

use ferry_offload::engine::{Engine, EngineConfig};
use ferry_offload::framing::Encoding;

/// Options of `ferry gateway`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The host service's Ferry address (`shm:///path/to/socket`, or `tcp://host:port`).
    #[arg(long)]
    host: String,
    /// Where gRPC clients connect (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:50051")]
    listen: SocketAddr,
    /// Shared-memory sessions to the host, shared by every gRPC connection.
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Calls in flight per session (more wait in the engine).
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Largest request message, in bytes, as sent and once inflated (larger: RESOURCE_EXHAUSTED).
    #[arg(long, default_value_t = 4 << 20)]
    max_message: usize,
    /// Compress answers to uncompressed requests with this encoding when the client accepts it
    /// (a compressed request is answered in its own encoding either way).
    #[arg(long, value_parser = ["gzip", "deflate"])]
    compress: Option<String>,
    /// Pin the engine's thread to this CPU.
    #[arg(long)]
    pin: Option<usize>,
}

/// Runs the engine until the process is killed.
pub fn run(args: &Args) -> Result<(), String> {
    let mut config = EngineConfig::new(args.host.clone());
    config.listen = args.listen;
    config.sessions = args.sessions.max(1);
    config.channel.client.window = args.window.max(1);
    config.max_message = args.max_message;
    config.compress = args
        .compress
        .as_deref()
        .and_then(|name| Encoding::from_name(name.as_bytes()));
    config.core = args.pin;
    let engine = Engine::start(config).map_err(|e| e.to_string())?;
    eprintln!("ferry gateway: waiting for the host at {}", args.host);
    loop {
        match engine.wait_ready(Duration::from_secs(3600)) {
            Ok(()) => break,
            Err(ferry_offload::engine::EngineError::NotReady(_)) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    // The line scripts and tests wait for.
    println!("ferry gateway: serving gRPC on {}", engine.local_addr());
    engine.wait().map_err(|e| e.to_string())
}
