//! Starting a node: its data directory, its Raft, its services on one address.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ferry::rpc::tokio::{AsyncServer, AsyncServices};
use ferry::rpc::{
    ChannelConfig, ConnLimits, LoopConfig, MetricsEndpoint, ServerError, ServicesError, TlsClient, TlsServer,
};
use ferry_buf::{Pool, PoolConfig, PoolError};
use openraft::{BasicNode, SnapshotPolicy};

use super::network::Peers;
use super::service::{ClusterAdmin, EncodedPuts, RaftPeer, ReplicatedKv, Shared};
use super::storage::{Db, LogStore, OpenError, StateMachine};
use super::{Copies, NodeId, PutDecoder, Raft, Sync, parse_members};
use crate::proto::ferry::kv::AsyncKvServer;
use crate::proto::ferry::raft::{AsyncClusterServer, AsyncRaftServer};
use crate::{Store, StoreConfig};

/// A follower starts an election after this long without hearing from a leader (at least;
/// openraft draws each timeout between it and twice it).
const ELECTION_TIMEOUT_MIN: Duration = Duration::from_millis(600);

/// How long a leader serves reads after a quorum confirmed it leads, with `--read-lease`: half
/// the shortest election timeout, a margin for clocks that run at different rates.
pub const READ_LEASE: Duration = Duration::from_millis(300);

/// How a node is started (`ferry kv serve`).
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// `--id`: from 1, unique in the cluster.
    pub id: NodeId,
    /// `--listen`: `tcp://HOST:PORT`, `tls://HOST:PORT` or `shm://PATH`; peers and clients
    /// reach the node here.
    pub listen: String,
    /// `--data`: the log, the vote and snapshots (unused with [`Sync::None`]).
    pub data: PathBuf,
    /// `--peers`: `ID=ADDR,...`, the members `ferry kv init` forms the cluster of when it names
    /// none. Without it the node is a cluster of one, formed at its first start.
    pub peers: Option<String>,
    /// `--sync`.
    pub sync: Sync,
    /// `--snapshot-every`: a snapshot after this many entries since the last one (the log
    /// before it is then purged).
    pub snapshot_every: u64,
    /// `--read-lease`: a leader whose leadership a quorum confirmed serves reads for
    /// [`READ_LEASE`] after it without confirming again (the default, `false`, confirms for
    /// every read).
    pub read_lease: bool,
    /// The store's limits.
    pub store: StoreConfig,
    /// What a `tls://` `--listen` serves with (`--tls-cert`, `--tls-key`; with `--tls-ca`,
    /// peers and clients must show a certificate from that CA).
    pub tls_server: Option<TlsServer>,
    /// What the node dials `tls://` peers with: `--tls-ca` as roots, its own certificate as
    /// the client's.
    pub tls_client: Option<TlsClient>,
    /// `--metrics`: `HOST:PORT` of an HTTP `/metrics` endpoint (OpenMetrics text): the
    /// server's series and the node's (see the `metrics` module).
    pub metrics: Option<String>,
    /// `--max-connections` and `--idle-timeout-ms`: the server's connection limits (peers'
    /// and clients' connections alike).
    pub connections: ConnLimits,
    /// `--encoding` (a benchmark knob, `ferry bench raft`): puts in another serialization are
    /// taken on [`ENCODED_PUT`](super::ENCODED_PUT) and decoded with it. Every node of a
    /// cluster must be given the same one.
    pub encoding: Option<Arc<dyn PutDecoder>>,
}

impl NodeConfig {
    /// A node with the defaults: `--sync always`, a snapshot every 5000 entries.
    pub fn new(id: NodeId, listen: impl Into<String>, data: impl Into<PathBuf>) -> NodeConfig {
        NodeConfig {
            id,
            listen: listen.into(),
            data: data.into(),
            peers: None,
            sync: Sync::Always,
            snapshot_every: 5000,
            read_lease: false,
            store: StoreConfig::default(),
            tls_server: None,
            tls_client: None,
            metrics: None,
            connections: ConnLimits::default(),
            encoding: None,
        }
    }
}

/// Why a node did not start, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// A setting is wrong.
    #[error("{0}")]
    Config(String),
    /// The data directory cannot be used.
    #[error("the data directory: {0}")]
    Data(#[from] OpenError),
    /// The store's pool.
    #[error("the store's memory pool: {0}")]
    Pool(#[from] PoolError),
    /// The server.
    #[error("serving {listen}: {source}")]
    Serve {
        /// The address.
        listen: String,
        /// What failed.
        source: ServerError,
    },
    /// Registering the services.
    #[error("registering the services: {0}")]
    Services(#[from] ServicesError),
    /// The `/metrics` endpoint cannot be served.
    #[error("the metrics endpoint at {addr}: {source}")]
    Metrics {
        /// `--metrics`.
        addr: String,
        /// What failed.
        source: std::io::Error,
    },
    /// openraft refused to start or to form the cluster of one.
    #[error("raft: {0}")]
    Raft(String),
}

/// Runs a node until `shutdown` resolves (call inside a `LocalSet` on a current-thread
/// runtime). `ready` is called with the address it serves on once it does (with port 0 in
/// `--listen`, the port picked).
pub async fn serve(
    config: NodeConfig,
    ready: impl FnOnce(&str),
    shutdown: impl Future<Output = ()>,
) -> Result<(), NodeError> {
    if config.id == 0 {
        return Err(NodeError::Config("--id: node ids start at 1".into()));
    }
    let peers = config
        .peers
        .as_deref()
        .map(parse_members)
        .transpose()
        .map_err(|e| NodeError::Config(format!("--peers: {e}")))?;
    if let Some(p) = &peers
        && !p.contains_key(&config.id)
    {
        return Err(NodeError::Config(format!(
            "--peers does not name this node ({})",
            config.id
        )));
    }
    let tls_peer = |p: &BTreeMap<NodeId, BasicNode>| p.values().any(|n| n.addr.starts_with("tls://"));
    if config.tls_client.is_none() && peers.as_ref().is_some_and(tls_peer) {
        return Err(NodeError::Config(
            "--peers at tls:// addresses need --tls-ca (the CA the peers' certificates chain to)".into(),
        ));
    }
    let db = Rc::new(Db::open(&config.data, config.id, config.sync)?);
    let shm = config.listen.starts_with("shm://");
    let pool = Pool::new(PoolConfig {
        shared: shm,
        ..PoolConfig::default()
    })?;
    let store = Arc::new(Store::new(pool, config.store.clone()));
    let copies = Arc::new(Copies::default());
    let log = LogStore::open(db.clone(), &store, copies.clone())?;
    let sm = StateMachine::open(db.clone(), store.clone(), copies.clone(), config.encoding.clone())?;
    let cluster = Rc::new(Cell::new(db.cluster().map_err(|e| OpenError::Db {
        path: config.data.display().to_string(),
        source: e,
    })?));
    let raft_config = openraft::Config {
        cluster_name: "ferry-kv".into(),
        // openraft times each AppendEntries out after a heartbeat interval: 150 ms leaves room
        // for a follower's fsync on a busy machine.
        heartbeat_interval: 150,
        election_timeout_min: ELECTION_TIMEOUT_MIN.as_millis() as u64,
        election_timeout_max: 1200,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(config.snapshot_every.max(1)),
        max_in_snapshot_log_to_keep: config.snapshot_every / 2,
        // A snapshot streams to a follower (`network::Peer::full_snapshot`): each frame, and the
        // follower's answer after it installed the whole (decode, apply, write, fsync), must
        // come within this. openraft's 200 ms is short for a large snapshot on a busy machine.
        install_snapshot_timeout: 5_000,
        ..Default::default()
    }
    .validate()
    .map_err(|e| NodeError::Config(e.to_string()))?;
    let mut channel = ChannelConfig::default();
    channel.conn.tls_client = config.tls_client.clone();
    let append_budget = super::network::append_budget(&channel);
    let network = Peers {
        cluster: cluster.clone(),
        channel,
        append_budget,
    };
    let raft = Raft::new(config.id, Arc::new(raft_config), network, log, sm)
        .await
        .map_err(|e| NodeError::Raft(e.to_string()))?;
    let shared = Rc::new(Shared {
        id: config.id,
        raft: raft.clone(),
        store: store.clone(),
        db,
        cluster,
        copies,
        peers: peers.clone(),
        max_command: append_budget,
        read_lease: config.read_lease.then_some(READ_LEASE),
        lease: Cell::new(None),
        reads: Arc::default(),
    });
    let mut services = AsyncServices::new()
        .service(AsyncKvServer::new(ReplicatedKv(shared.clone())))?
        .service(AsyncRaftServer::new(RaftPeer(shared.clone())))?
        .service(AsyncClusterServer::new(ClusterAdmin(shared.clone())))?;
    if let Some(decoder) = &config.encoding {
        services = services.service(EncodedPuts(shared.clone(), decoder.clone()))?;
    }
    let serve_err = |source| NodeError::Serve {
        listen: config.listen.clone(),
        source,
    };
    let mut conn = store.serving_config(LoopConfig::default().conn);
    conn.tls_server = config.tls_server.clone();
    let loop_config = LoopConfig {
        conn,
        connections: config.connections,
        ..LoopConfig::default()
    };
    let server = AsyncServer::bind(services, &[&config.listen], loop_config).map_err(serve_err)?;
    let addr = server.addrs()[0].to_string();
    let _endpoint = match &config.metrics {
        Some(at) => {
            let failed = |source| NodeError::Metrics {
                addr: at.clone(),
                source,
            };
            let listener = std::net::TcpListener::bind(at).map_err(failed)?;
            server.metrics().extend(super::metrics::registry(
                &raft,
                shared.copies.clone(),
                shared.reads.clone(),
            ));
            Some(MetricsEndpoint::start(listener, server.metrics().clone()).map_err(failed)?)
        }
        None => None,
    };
    // A node without --peers is a cluster of itself, formed the first time it starts.
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|e| NodeError::Raft(e.to_string()))?;
    if peers.is_none() && !initialized {
        shared
            .join_new_cluster()
            .map_err(|e| NodeError::Raft(e.message))?;
        let me = BTreeMap::from([(config.id, BasicNode { addr: addr.clone() })]);
        raft.initialize(me)
            .await
            .map_err(|e| NodeError::Raft(e.to_string()))?;
    }
    ready(&addr);
    let result = server
        .run(shutdown, Duration::from_secs(1))
        .await
        .map_err(serve_err);
    let _ = raft.shutdown().await;
    result
}

/// Runs a node on this thread (a current-thread runtime) until SIGINT or SIGTERM: what
/// `ferry kv serve` does. `ready` is called as in [`serve`]. openraft and the node log through
/// `tracing`: the program installs the subscriber (`ferry kv serve` does with `RUST_LOG`).
pub fn run(config: NodeConfig, ready: impl FnOnce(&str)) -> Result<(), NodeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NodeError::Config(format!("starting the runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| NodeError::Config(format!("handling SIGTERM: {e}")))?;
        let stop = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        serve(config, ready, stop).await
    })
}
