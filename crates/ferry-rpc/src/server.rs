//! A server: N event loops, one thread each (by default one per core), sharing the
//! listeners, the services, the worker pool and the metrics; and its shutdown.
//!
//! # How connections are spread over the loops
//!
//! Every loop polls every listener. When a connection waits, the loops that see it race to
//! accept it and one wins (the others find nothing): a loop that is sleeping or lightly loaded
//! polls sooner, so connections go where there is room. A session then stays on the loop that
//! accepted it for its whole life (shared nothing: its state, its pool and, over shared
//! memory, its `!Send` frames never leave that thread).

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferry_transport::TransportError;

use crate::Addr;
use crate::conn::{Listener, TransportKind};
use crate::event_loop::{EventLoop, LoopConfig, LoopStats};
use crate::metrics_http::MetricsEndpoint;
use crate::services::Services;
use crate::sys::Waker;

/// A server that could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// An address that does not parse.
    #[error(transparent)]
    Addr(#[from] crate::AddrError),
    /// Binding, or setting up a loop, failed.
    #[error("{0}")]
    Transport(#[from] TransportError),
    /// A thread or the metrics endpoint could not start.
    #[error("{what}: {source}")]
    Io {
        /// What was being started.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    services: Services,
    addrs: Vec<String>,
    loops: usize,
    pin: Option<Vec<usize>>,
    config: LoopConfig,
    metrics: Option<String>,
}

/// A running server; [`shutdown`](Self::shutdown) stops it (so does dropping it, with no
/// time to drain).
#[derive(Debug)]
pub struct Server {
    addrs: Vec<Addr>,
    services: Services,
    stop: Arc<AtomicBool>,
    drain_nanos: Arc<AtomicU64>,
    wakers: Vec<Arc<Waker>>,
    threads: Vec<JoinHandle<LoopReport>>,
    metrics: Option<MetricsEndpoint>,
}

/// What each loop did, reported at shutdown.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopReport {
    /// Its counters.
    pub stats: LoopStats,
    /// Calls still in progress when the drain time ran out (their clients see the
    /// connection close: `UNAVAILABLE`).
    pub abandoned: usize,
}

impl Server {
    /// A server of `services`; add addresses with [`ServerBuilder::listen`].
    pub fn builder(services: Services) -> ServerBuilder {
        ServerBuilder {
            services,
            addrs: Vec::new(),
            loops: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pin: None,
            config: LoopConfig::default(),
            metrics: None,
        }
    }

    /// The addresses it listens on (with the ports the kernel chose).
    pub fn addrs(&self) -> &[Addr] {
        &self.addrs
    }

    /// Where the Prometheus endpoint listens, if one was asked for.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics.as_ref().map(MetricsEndpoint::local_addr)
    }

    /// The services (and their metrics).
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Stops accepting, refuses new requests with `UNAVAILABLE`, lets calls in progress
    /// finish for at most `drain`, then closes every session and joins the loops.
    pub fn shutdown(mut self, drain: Duration) -> Vec<LoopReport> {
        self.stop_all(drain)
    }

    fn stop_all(&mut self, drain: Duration) -> Vec<LoopReport> {
        self.drain_nanos
            .store(drain.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
        self.stop.store(true, Ordering::SeqCst);
        for w in &self.wakers {
            w.ring();
        }
        let reports = self
            .threads
            .drain(..)
            .map(|t| t.join().unwrap_or_default())
            .collect();
        self.services.stop_workers();
        if let Some(m) = self.metrics.take() {
            m.stop();
        }
        reports
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop_all(Duration::ZERO);
        }
    }
}

impl ServerBuilder {
    /// Listens on `addr` too (`tcp://127.0.0.1:0` picks a port: see [`Server::addrs`]).
    pub fn listen(mut self, addr: &str) -> ServerBuilder {
        self.addrs.push(addr.to_string());
        self
    }

    /// Event loops, one thread each (default: one per core).
    pub fn loops(mut self, n: usize) -> ServerBuilder {
        self.loops = n.max(1);
        self
    }

    /// Pins loop `i` to `cpus[i % cpus.len()]`.
    pub fn pin(mut self, cpus: Vec<usize>) -> ServerBuilder {
        self.pin = Some(cpus);
        self
    }

    /// The loops' settings.
    pub fn config(mut self, config: LoopConfig) -> ServerBuilder {
        self.config = config;
        self
    }

    /// Serves the Prometheus text format on `addr` (`127.0.0.1:0` picks a port).
    pub fn metrics(mut self, addr: &str) -> ServerBuilder {
        self.metrics = Some(addr.to_string());
        self
    }

    /// Binds every address and starts the loops.
    pub fn start(self) -> Result<Server, ServerError> {
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        for a in &self.addrs {
            let listener = Arc::new(Listener::bind(&a.parse()?, &self.config.conn)?);
            addrs.push(listener.local_addr()?);
            // An AF_XDP listener's sessions share its endpoint: /metrics reads it here.
            if matches!(*listener, Listener::Xdp(_)) {
                let l = Arc::clone(&listener);
                let stats = move || l.shared_endpoint_stats().unwrap_or_default();
                self.services
                    .metrics()
                    .add_datagram_endpoint(TransportKind::Xdp, Box::new(stats));
            }
            listeners.push(listener);
        }
        let metrics = match &self.metrics {
            Some(a) => {
                let l = TcpListener::bind(a.as_str()).map_err(|source| ServerError::Io {
                    what: "binding the metrics endpoint",
                    source,
                })?;
                Some(
                    MetricsEndpoint::start(l, Arc::clone(self.services.metrics())).map_err(|source| {
                        ServerError::Io {
                            what: "starting the metrics endpoint",
                            source,
                        }
                    })?,
                )
            }
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let drain_nanos = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        let mut wakers = Vec::new();
        for i in 0..self.loops {
            let (tx, rx) = mpsc::channel();
            let (services, config, listeners) =
                (self.services.clone(), self.config.clone(), listeners.clone());
            let (stop, drain_nanos) = (Arc::clone(&stop), Arc::clone(&drain_nanos));
            let cpu = self
                .pin
                .as_ref()
                .filter(|c| !c.is_empty())
                .map(|c| c[i % c.len()]);
            let thread = std::thread::Builder::new()
                .name(format!("ferry-rpc-loop-{i}"))
                .spawn(move || {
                    if let Some((cpu, Err(e))) = cpu.map(|c| (c, ferry_transport::pin_current_thread(c))) {
                        let _ = tx.send(Err(ServerError::Io {
                            what: "pinning an event loop (ServerBuilder::pin)",
                            source: std::io::Error::new(e.kind(), format!("CPU {cpu}: {e}")),
                        }));
                        return LoopReport::default();
                    }
                    let mut lp = match EventLoop::with_services(config, services) {
                        Ok(lp) => lp,
                        Err(e) => {
                            let _ = tx.send(Err(e.into()));
                            return LoopReport::default();
                        }
                    };
                    if let Err(e) = listeners.into_iter().try_for_each(|l| lp.add_listener(l)) {
                        let _ = tx.send(Err(e.into()));
                        return LoopReport::default();
                    }
                    let _ = tx.send(Ok(Arc::clone(lp.waker())));
                    run_loop(&mut lp, &stop, &drain_nanos)
                })
                .map_err(|source| ServerError::Io {
                    what: "spawning an event loop",
                    source,
                })?;
            match rx.recv() {
                Ok(Ok(waker)) => wakers.push(waker),
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(ServerError::Io {
                        what: "starting an event loop",
                        source: std::io::Error::other("the loop thread exited"),
                    });
                }
            }
            threads.push(thread);
        }
        Ok(Server {
            addrs,
            services: self.services,
            stop,
            drain_nanos,
            wakers,
            threads,
            metrics,
        })
    }
}

/// Turns until told to stop, then drains.
fn run_loop(lp: &mut EventLoop, stop: &AtomicBool, drain_nanos: &AtomicU64) -> LoopReport {
    while !stop.load(Ordering::Relaxed) {
        lp.turn();
    }
    lp.drain();
    let until = Instant::now() + Duration::from_nanos(drain_nanos.load(Ordering::Relaxed));
    while lp.in_progress() > 0 && Instant::now() < until {
        lp.turn();
    }
    LoopReport {
        stats: lp.stats(),
        abandoned: lp.in_progress(),
    }
}
