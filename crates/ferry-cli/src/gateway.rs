//! `ferry gateway`: the offload engine (`ferry-offload`) in the foreground, until killed: a
//! gRPC server for unchanged clients in front of a Ferry host service on shared memory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ferry_offload::engine::{Engine, EngineConfig, tls_from_files};
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
    /// Serve gRPC over TLS with this certificate chain (PEM, the leaf first); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require client certificates issued by these CAs (PEM): mTLS.
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// How long a client's TLS handshake may take, in milliseconds, before its connection is
    /// closed (a peer that stalls holds its own connection only).
    #[arg(long, default_value_t = ferry_offload::engine::DEFAULT_HANDSHAKE_TIMEOUT.as_millis() as u64)]
    tls_handshake_timeout_ms: u64,
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
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let mut tls = tls_from_files(cert, key, args.tls_client_ca.as_deref()).map_err(|e| e.to_string())?;
        tls.handshake_timeout = Duration::from_millis(args.tls_handshake_timeout_ms);
        config.tls = Some(tls);
    }
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
    let over = if args.tls_cert.is_some() { " over TLS" } else { "" };
    println!("ferry gateway: serving gRPC{over} on {}", engine.local_addr());
    engine.wait().map_err(|e| e.to_string())
}
