//! The engine: one thread (pinned to its own core when asked) running a current-thread tokio
//! runtime, with tonic's HTTP/2 server on one side and the shared-memory sessions to the host
//! on the other. `ferry gateway` runs it as a process.
//!
//! ```text
//!  accept ─► h2 connection task ─► Gateway (grpc.rs): route, grpc-timeout, metadata,
//!                                  deframe and inflate (framing.rs), compress the answer
//!                                     │ Call (channel on the same thread)
//!                                     ▼
//!            Hosts (sessions.rs): window permit ─► protobuf → Ferry message (session context)
//!                                 ─► AsyncChannel::call_with over shm ─► host
//!                                 ◄─ response validated in place ─► protobuf ─► gRPC answer
//!
//!  a stream: the request body as messages, and the response body fed from a small channel
//!  (streams.rs), go to a task that opens a host stream (AsyncChannel::open) and passes each
//!  message on as the other side takes it: flow control end to end
//! ```
//!
//! Start-up: the engine connects to the host first and reads its description table; only then
//! does it serve gRPC (accepted connections wait in the listen queue until then), with the
//! table's services, server reflection and the health service. The sessions to the host are
//! `!Send`, tonic's connection tasks are `Send`: the two meet through a channel on the one
//! thread (`sessions::Call`), and the calls run as local tasks.
//!
//! TLS ([`EngineConfig::tls`], `tls.rs`): each accepted connection's handshake is a local task
//! bounded by the handshake timeout, and tonic serves the connections whose handshake finished.
//!
//! Limits ([`EngineConfig::connections`], `limits.rs`): every accepted connection is counted
//! against [`GatewayLimits::max_connections`] (over it, closed at once) and closed once idle
//! past [`GatewayLimits::idle_timeout`]; HTTP/2's streams, header block and windows are set
//! explicitly. [`Engine::connections`] counts what was closed at each.

mod grpc;
mod limits;
mod sessions;
mod streams;
mod tls;

pub use ferry::net::tls::{DEFAULT_HANDSHAKE_TIMEOUT, TlsServer};
pub use grpc::RawCodec;
pub use limits::{ConnStats, GatewayLimits};
pub use tls::server_from_files as tls_from_files;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ferry::Limits;
use ferry::rpc::ChannelConfig;
use prost::Message as _;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::StreamExt as _;

use crate::framing::Encoding;

/// How to run an engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where gRPC clients connect.
    pub listen: SocketAddr,
    /// The host service's Ferry address (`shm:///path`, or `tcp://host:port`).
    pub host: String,
    /// Shared-memory sessions to the host that every gRPC connection's calls share.
    pub sessions: usize,
    /// Each session's settings (its `client.window` bounds the calls in flight on it; calls
    /// past it wait in the engine).
    pub channel: ChannelConfig,
    /// Largest request message accepted, in bytes (gRPC's default, 4 MiB), as sent and once
    /// inflated: larger ones get `RESOURCE_EXHAUSTED` (a compressed one stops inflating there).
    pub max_message: usize,
    /// How answers to uncompressed requests are compressed when the client's
    /// `grpc-accept-encoding` lists it (`None`, the default: not at all). A compressed request
    /// is answered in its own encoding whatever this says. See [`crate::framing`].
    pub compress: Option<Encoding>,
    /// Limits on the host's responses (and the nesting depth of requests: a request nested
    /// deeper than `limits.max_depth` is refused, as the host would refuse it).
    pub limits: Limits,
    /// The core to pin the engine's thread to.
    pub core: Option<usize>,
    /// How often a lost session tries to reconnect.
    pub retry: Duration,
    /// How long a session may stay idle before a heartbeat checks that the host is alive.
    pub heartbeat: Duration,
    /// Calls handed from the gRPC side and not yet started, at most (then the gRPC side waits).
    pub queue: usize,
    /// TLS for gRPC clients ([`tls_from_files`]; its `handshake_timeout` bounds each
    /// handshake, [`DEFAULT_HANDSHAKE_TIMEOUT`] unless set); `None`, the default: plaintext.
    pub tls: Option<TlsServer>,
    /// Limits on the gRPC connections: how many, how long idle, HTTP/2's streams, headers and
    /// windows (see [`GatewayLimits`] for every limit).
    pub connections: GatewayLimits,
}

impl EngineConfig {
    /// Defaults: listen on `127.0.0.1:50051`, 1 session with a window of 64 calls, 4 MiB
    /// messages, answers compressed only as requests are, default limits, no pinning, retry every 100 ms, heartbeat after 1 s idle.
    pub fn new(host: impl Into<String>) -> EngineConfig {
        let mut channel = ChannelConfig::default();
        channel.client.window = 64;
        EngineConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 50051)),
            host: host.into(),
            sessions: 1,
            channel,
            max_message: 4 << 20,
            compress: None,
            limits: Limits::default(),
            core: None,
            retry: Duration::from_millis(100),
            heartbeat: Duration::from_secs(1),
            queue: 4096,
            tls: None,
            connections: GatewayLimits::default(),
        }
    }
}

/// Why an engine could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The gRPC listener could not be bound.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The engine's thread or runtime could not start.
    #[error("starting the engine thread: {0}")]
    Thread(std::io::Error),
    /// Pinning the thread failed.
    #[error("pinning the engine to core {core}: {source}")]
    Pin {
        /// The core.
        core: usize,
        /// Why.
        source: std::io::Error,
    },
    /// The host's table cannot be served (reflection could not be built from it).
    #[error("serving the host's table: {0}")]
    Table(String),
    /// The TLS certificate, key or client CA files cannot be used.
    #[error("TLS files ({files}): {why}")]
    Tls {
        /// The files (the certificate and key, and the client CA if any).
        files: String,
        /// What is wrong, as ferry-net names it.
        why: String,
    },
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Serve(String),
    /// The engine did not get the host's table in time.
    #[error("no host description within {0:?}")]
    NotReady(Duration),
    /// The engine's thread panicked.
    #[error("the engine thread panicked")]
    Panicked,
}

/// A running engine.
#[derive(Debug)]
pub struct Engine {
    addr: SocketAddr,
    counters: Arc<limits::Counters>,
    ready: std::sync::mpsc::Receiver<()>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), EngineError>>>,
}

impl Engine {
    /// Binds the gRPC listener and starts the engine's thread, which connects to the host
    /// (retrying until it is there) and then serves.
    pub fn start(config: EngineConfig) -> Result<Engine, EngineError> {
        let listener = std::net::TcpListener::bind(config.listen).map_err(|source| EngineError::Bind {
            addr: config.listen,
            source,
        })?;
        let addr = listener.local_addr().map_err(EngineError::Thread)?;
        listener.set_nonblocking(true).map_err(EngineError::Thread)?;
        let (calls, calls_rx) = mpsc::channel(config.queue.max(1));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (stop, stop_rx) = oneshot::channel();
        let counters = Arc::new(limits::Counters::default());
        let shared = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("ferry-gateway".into())
            .spawn(move || {
                if let Some(core) = config.core {
                    ferry::transport::pin_current_thread(core)
                        .map_err(|source| EngineError::Pin { core, source })?;
                }
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(EngineError::Thread)?;
                let local = tokio::task::LocalSet::new();
                let channels = (calls, calls_rx, ready_tx, stop_rx);
                local.block_on(&rt, run(config, listener, shared, channels))
            })
            .map_err(EngineError::Thread)?;
        Ok(Engine {
            addr,
            counters,
            ready,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where gRPC clients connect.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its gRPC connections so far: open, and closed at a limit.
    pub fn connections(&self) -> ConnStats {
        self.counters.snapshot()
    }

    /// Waits until the engine has the host's table and serves gRPC (at most `timeout`).
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), EngineError> {
        match self.ready.recv_timeout(timeout) {
            Ok(()) => Ok(()),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(EngineError::NotReady(timeout)),
            // Sent once: a second wait finds the sender gone after success too.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                if self.thread.as_ref().is_some_and(|t| !t.is_finished()) {
                    Ok(())
                } else {
                    Err(EngineError::Serve("the engine stopped".into()))
                }
            }
        }
    }

    /// Runs until the engine stops by itself (its gRPC server failed): what a process that
    /// serves until killed calls.
    pub fn wait(mut self) -> Result<(), EngineError> {
        match self.thread.take().map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(EngineError::Panicked),
        }
    }

    /// Stops serving (open gRPC connections are closed gracefully) and joins the thread.
    pub fn shutdown(mut self) -> Result<(), EngineError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), EngineError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(EngineError::Panicked),
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

/// The engine thread's life: the host's table, then gRPC until stopped.
async fn run(
    config: EngineConfig,
    listener: std::net::TcpListener,
    counters: Arc<limits::Counters>,
    (calls, calls_rx, ready, mut stop): (
        mpsc::Sender<sessions::Call>,
        mpsc::Receiver<sessions::Call>,
        std::sync::mpsc::Sender<()>,
        oneshot::Receiver<()>,
    ),
) -> Result<(), EngineError> {
    let (first, table) = tokio::select! {
        pair = sessions::first_table(&config) => pair,
        _ = &mut stop => return Ok(()),
    };
    let table = Arc::new(table);
    let (health, health_service) = tonic_health::server::health_reporter();
    let hosts = sessions::Hosts::new(config.clone(), first, table.clone(), health);
    tokio::task::spawn_local(hosts.serve(calls_rx));

    let descriptors = prost_types::FileDescriptorSet::decode(table.descriptors())
        .map_err(|e| EngineError::Table(e.to_string()))?;
    let reflection = |b: tonic_reflection::server::Builder<'static>| {
        table
            .services()
            .iter()
            .fold(b, |b, s| b.with_service_name(s.clone()))
            .with_service_name("grpc.health.v1.Health")
            .register_file_descriptor_set(descriptors.clone())
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = reflection(tonic_reflection::server::Builder::configure())
        .build_v1()
        .map_err(|e| EngineError::Table(e.to_string()))?;
    let v1alpha = reflection(tonic_reflection::server::Builder::configure())
        .build_v1alpha()
        .map_err(|e| EngineError::Table(e.to_string()))?;
    let gateway = grpc::Gateway {
        table: table.clone(),
        calls,
        max_message: config.max_message,
        compress: config.compress,
    };
    let router = tonic::service::Routes::new(health_service)
        .add_service(v1)
        .add_service(v1alpha)
        .into_axum_router()
        .fallback_service(gateway);
    let listener = tokio::net::TcpListener::from_std(listener).map_err(EngineError::Thread)?;
    let routes = tonic::service::Routes::from(router);
    let stop = async {
        let _ = stop.await;
    };
    let _ = ready.send(());
    let limits = config.connections;
    match &config.tls {
        Some(tls) => {
            serve(
                routes,
                &limits,
                tls::incoming(listener, tls, counters, limits),
                stop,
            )
            .await
        }
        None => {
            // Nagle's algorithm would hold small answers back (tonic sets TCP_NODELAY only on
            // listeners it binds itself). A connection over the limit is dropped here.
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).filter_map(move |s| {
                match s.and_then(|s| s.set_nodelay(true).map(|()| s)) {
                    Ok(s) => counters.admit(s, &limits).map(Ok),
                    Err(e) => Some(Err(e)),
                }
            });
            serve(routes, &limits, incoming, stop).await
        }
    }
}

/// tonic's HTTP/2 server on `incoming` (plaintext or TLS streams) until `stop`.
async fn serve<IO>(
    routes: tonic::service::Routes,
    limits: &GatewayLimits,
    incoming: impl tokio_stream::Stream<Item = std::io::Result<IO>>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), EngineError>
where
    IO: tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + tonic::transport::server::Connected
        + Unpin
        + Send
        + 'static,
{
    tonic::transport::Server::builder()
        .max_concurrent_streams(limits.max_concurrent_streams)
        .http2_max_header_list_size(limits.max_header_list_size)
        .initial_stream_window_size(limits.stream_window)
        .initial_connection_window_size(limits.connection_window)
        .serve_with_incoming_shutdown(routes, incoming, stop)
        .await
        .map_err(|e| EngineError::Serve(e.to_string()))
}
