//! The server side of `ferry bench kv`: one `ferry-rpc` server loop, pinned, serving one store
//! with every serialization at once: Ferry's generated `Kv` service ([`ferry_kv::KvService`])
//! and the peers' raw methods ([`super::peers::PeerKvService`]), plus a control method that
//! reads the loop thread's CPU time at the start and the end of a measured window.
//!
//! Both transports send from the store's pool ([`Store::serving_config`]), so a value at or
//! above the threshold goes out by reference on either. The zero-copy threshold is a session
//! setting: Ferry copy-only and zero-copy-only are the same service on a server started with
//! the threshold at infinity or at 0.

use std::cell::Cell;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_kv::proto::ferry::kv::KvServer;
use ferry_kv::{KvService, Store};
use ferry_rpc::{
    Addr, Call, Code, ConnConfig, LoopConfig, MethodInfo, Mode, Reply, Request, Server, Service, Services,
    Status, Thresholds,
};
use ferry_transport::{Payload, method_id};

use super::peers::PeerKvService;
use crate::BoxError;
use crate::harness::thread_cpu_time;

/// The control method: `mark` and `end` read the loop thread's CPU and busy time and request
/// count.
pub(super) const CONTROL: u16 = method_id("/ferry_bench.kv.Control/Read");
/// Payloads of the control calls.
pub(super) const MARK: &[u8] = b"mark";
pub(super) const END: &[u8] = b"end";

/// At a control call: the loop thread's CPU time, the time its loop spent working
/// ([`ferry_rpc::thread_busy_time`]), and the requests it served.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading {
    pub(super) cpu: Duration,
    pub(super) busy: Duration,
    pub(super) served: u64,
}

thread_local! {
    /// Requests served on this (a server loop's) thread, counted by the control service's
    /// neighbours through [`count_request`].
    static SERVED: Cell<u64> = const { Cell::new(0) };
}

/// The readings the control calls took, for the benchmark's thread.
#[derive(Debug, Default)]
pub(super) struct Readings {
    mark: Mutex<Option<Reading>>,
    end: Mutex<Option<Reading>>,
}

impl Readings {
    /// The last window's readings, taken.
    pub(super) fn take(&self) -> (Option<Reading>, Option<Reading>) {
        let take = |m: &Mutex<Option<Reading>>| m.lock().unwrap_or_else(PoisonError::into_inner).take();
        (take(&self.mark), take(&self.end))
    }
}

/// Reads the loop thread's CPU time on `mark` and `end`.
#[derive(Debug, Clone)]
struct Control {
    readings: Arc<Readings>,
}

impl Service for Control {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![MethodInfo {
            path: "/ferry_bench.kv.Control/Read",
            id: CONTROL,
            request: None,
            mode: Mode::Foreground,
        }]
    }

    fn call<'a>(&self, _: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let bytes = request.incoming().bytes().unwrap_or_default();
        let slot = match bytes {
            MARK => &self.readings.mark,
            END => &self.readings.end,
            _ => return Err(Status::new(Code::InvalidArgument, "unknown control call")),
        };
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Reading {
            cpu: thread_cpu_time(),
            busy: ferry_rpc::thread_busy_time(),
            served: SERVED.get(),
        });
        reply.send_payload(Payload::Bytes(bytes))
    }
}

/// Counts every request but the control calls: wraps a service.
#[derive(Debug, Clone)]
struct Counted<S>(S);

impl<S: Service> Service for Counted<S> {
    fn methods(&self) -> Vec<MethodInfo> {
        self.0.methods()
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        SERVED.set(SERVED.get() + 1);
        self.0.call(call, request, reply)
    }
}

/// A running server and where it listens.
pub(super) struct KvBenchServer {
    server: Server,
    /// TCP, then shared memory.
    pub(super) addrs: Vec<Addr>,
    pub(super) readings: Arc<Readings>,
}

impl KvBenchServer {
    /// Serves `store` on one loop pinned to `cpu`, with zero-copy `threshold` (`None`: the
    /// measured per-transport thresholds), on TCP loopback and a shared-memory socket in
    /// `dir`. `spin`: how long the loop busy-polls before sleeping (its CPU time is then work,
    /// not waiting, when it is shorter than the gaps between requests).
    pub(super) fn start(
        store: &Arc<Store>,
        cpu: usize,
        threshold: Option<usize>,
        spin: Duration,
        dir: &std::path::Path,
    ) -> Result<KvBenchServer, BoxError> {
        let readings = Arc::new(Readings::default());
        let services = Services::builder()
            .service(Counted(KvServer::new(KvService::new(store.clone()))))?
            .service(Counted(PeerKvService::new(store.clone())))?
            .service(Control {
                readings: readings.clone(),
            })?
            .build()?;
        let thresholds = match threshold {
            Some(t) => Thresholds { tcp: t, shm: t },
            None => Thresholds::load(),
        };
        let conn = store.serving_config(ConnConfig {
            thresholds,
            ..ConnConfig::default()
        });
        let shm = dir.join(format!("kv-{}.sock", std::process::id()));
        let server = Server::builder(services)
            .listen("tcp://127.0.0.1:0")
            .listen(&format!("shm://{}", shm.display()))
            .loops(1)
            .pin(vec![cpu])
            .config(LoopConfig {
                conn,
                spin,
                ..LoopConfig::default()
            })
            .start()?;
        let addrs = server.addrs().to_vec();
        Ok(KvBenchServer {
            server,
            addrs,
            readings,
        })
    }

    /// Stops serving (sessions still open are dropped after a short drain).
    pub(super) fn stop(self) {
        self.server.shutdown(Duration::from_millis(200));
    }
}
