//! The server side of `ferry bench kv`: one `ferry-rpc` server loop, pinned, serving one store
//! with every serialization at once: Ferry's generated `Kv` service ([`ferry_kv::KvService`])
//! and the peers' raw methods ([`super::peers::PeerKvService`]), plus a control method that
//! reads the loop thread's CPU time at the start and the end of a measured window.
//!
//! Both transports send from the store's pool ([`Store::serving_config`]), so a value at or
//! above the threshold goes out by reference on either. The zero-copy threshold is a session
//! setting: Ferry copy-only and zero-copy-only are the same service on a server started with
//! the threshold at infinity or at 0.

use std::sync::Arc;
use std::time::Duration;

use ferry_kv::proto::ferry::kv::KvServer;
use ferry_kv::{KvService, Store};
use ferry_rpc::{Addr, ConnConfig, LoopConfig, Server, Services, Thresholds};
use ferry_transport::method_id;

use super::peers::PeerKvService;
use crate::BoxError;
use crate::harness::window::{Control, Counted, Readings};

/// The control method (`harness::window`): `mark` and `end` read the loop thread's CPU and
/// busy time and requests served.
const CONTROL_PATH: &str = "/ferry_bench.kv.Control/Read";
/// Its id.
pub(super) const CONTROL: u16 = method_id(CONTROL_PATH);

/// A running server and where it listens.
pub(super) struct KvBenchServer {
    server: Server,
    /// TCP, then shared memory (indexed by [`super::Transport`]).
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
                path: CONTROL_PATH,
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
