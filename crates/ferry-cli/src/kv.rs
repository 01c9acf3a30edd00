//! `ferry kv`: a replicated key-value store (`ferry-kv`'s `raft` module): `serve` runs a node,
//! the other commands are its clients.
//!
//! Exit status: 0 on success; 1 for `get` of a key that is not there (and for usage errors);
//! 2 when the node or the cluster failed the call (the message says which node and why).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ferry_kv::raft::{self, Client, ClientError, NodeConfig, Sync};
use ferry_rpc::{ChannelConfig, ClientAuth, ConnLimits, TlsClient, TlsServer};

use crate::schema::CliError;

/// `ferry kv` and its commands.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: KvCommand,
}

#[derive(clap::Subcommand, Debug)]
enum KvCommand {
    /// Run a node in the foreground until SIGINT or SIGTERM. Prints `serving on ADDR` once it
    /// serves.
    Serve(ServeArgs),
    /// Form a cluster of the members (send it to one of them, once).
    Init {
        #[command(flatten)]
        node: NodeAddr,
        /// `ID=ADDR,...` (default: the node's --peers).
        #[arg(long, default_value = "")]
        members: String,
    },
    /// Store VALUE (`-`: standard input) under KEY.
    Put {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
        value: String,
    },
    /// Print KEY's value, byte-exact, on standard output (exit 1 if there is none).
    Get {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
    },
    /// Delete KEY (exit 1 if it was not there).
    Delete {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
    },
    /// Append VALUE (`-`: standard input) to KEY's list; prints its new length.
    Append {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
        value: String,
    },
    /// What the node knows of the cluster: leader, term, commit index, members.
    Status {
        #[command(flatten)]
        node: NodeAddr,
        /// One JSON object instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Add a node (started with `serve` first): a learner until it caught up, then a voter.
    AddNode {
        #[command(flatten)]
        node: NodeAddr,
        /// The new node's id.
        #[arg(long)]
        id: u64,
        /// The new node's address (its --listen).
        #[arg(long)]
        node_addr: String,
    },
    /// Remove a voter.
    RemoveNode {
        #[command(flatten)]
        node: NodeAddr,
        /// The node's id.
        #[arg(long)]
        id: u64,
    },
}

/// The node a client command talks to (any member: a follower redirects to the leader).
#[derive(clap::Args, Debug)]
struct NodeAddr {
    /// `tcp://HOST:PORT`, `tls://HOST:PORT` or `shm://PATH`.
    #[arg(long)]
    addr: String,
    #[command(flatten)]
    tls: Tls,
}

/// Certificates, for `tls://` addresses (PEM files).
#[derive(clap::Args, Debug)]
struct Tls {
    /// The CA that nodes' certificates must chain to (the roots trusted). For `serve`, also
    /// the CA that peers' and clients' certificates must chain to: mTLS.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// This side's certificate chain (the leaf first): `serve`'s server certificate, also shown
    /// to peers; a client's certificate for nodes that require one. Needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

impl Tls {
    /// What `tls://` nodes are dialled with: `--tls-ca` as roots, `--tls-cert` as the client's
    /// certificate; `None` without `--tls-ca`.
    fn client(&self) -> Result<Option<TlsClient>, CliError> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let cert = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        TlsClient::from_pem_files(ca, cert)
            .map(Some)
            .map_err(|e| CliError::Usage(e.to_string()))
    }

    /// What a `tls://` listener serves with: `--tls-cert` and `--tls-key`, and client
    /// certificates from `--tls-ca` required if it is given.
    fn server(&self, handshake_timeout: Duration) -> Result<Option<TlsServer>, CliError> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let auth = match &self.tls_ca {
            Some(ca) => ClientAuth::Required(read(ca)?),
            None => ClientAuth::None,
        };
        let mut tls =
            TlsServer::from_pem_files(cert, key, auth).map_err(|e| CliError::Usage(e.to_string()))?;
        tls.handshake_timeout = handshake_timeout;
        Ok(Some(tls))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Usage(format!("reading {}: {e}", path.display())))
}

/// `addr` is `tls://` but there is nothing to check its certificate with.
fn needs(addr: &str, what: &str, given: bool) -> Result<(), CliError> {
    match addr.starts_with("tls://") && !given {
        true => Err(CliError::Usage(format!("{addr}: a tls:// address needs {what}"))),
        false => Ok(()),
    }
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// This node's id (from 1, unique in the cluster).
    #[arg(long)]
    id: u64,
    /// Where peers and clients reach it: `tcp://HOST:PORT` (port 0: any, printed),
    /// `tls://HOST:PORT` (needs --tls-cert and --tls-key) or `shm://PATH`.
    #[arg(long)]
    listen: String,
    /// The log, the vote and snapshots (one redb file). Unused with --sync none.
    #[arg(long)]
    data: PathBuf,
    /// The cluster's members, `ID=ADDR,...`, formed by `ferry kv init`. Without it the node is a
    /// cluster of one, formed at its first start.
    #[arg(long)]
    peers: Option<String>,
    /// always: fsync before a write is acknowledged; batch[:MICROS]: one fsync for the writes
    /// of a window (default 500 µs), each acknowledged after it; none: in memory only.
    #[arg(long, default_value = "always", value_parser = |s: &str| s.parse::<Sync>())]
    sync: Sync,
    /// A snapshot after this many log entries since the last one; the log before it is purged.
    #[arg(long, default_value_t = 5000)]
    snapshot_every: u64,
    /// Serve reads at the leader for 300 ms after a quorum confirmed it leads, without asking
    /// the quorum again for each read (a lease: half the shortest election timeout, so it holds
    /// while the nodes' clocks run at rates within a factor of two).
    #[arg(long)]
    read_lease: bool,
    /// Serve `/metrics` over HTTP on HOST:PORT (OpenMetrics text): the node's term, leader,
    /// commit and applied index, writes applied and bytes copied for them, and the server's
    /// connections.
    #[arg(long, value_name = "HOST:PORT")]
    metrics: Option<String>,
    #[command(flatten)]
    tls: Tls,
    /// How long a peer's or client's TLS handshake may take, in milliseconds, before its
    /// connection is closed.
    #[arg(long, default_value_t = ferry_net::tls::DEFAULT_HANDSHAKE_TIMEOUT.as_millis() as u64)]
    tls_handshake_timeout_ms: u64,
    /// Connections open at once, peers' and clients' together; one more is accepted and
    /// closed at once.
    #[arg(long, default_value_t = ConnLimits::default().max_connections)]
    max_connections: usize,
    /// Close a connection with no call in progress that has sent nothing for this many
    /// milliseconds (0: never). A peer whose connection closed dials again when it next
    /// needs it.
    #[arg(long, default_value_t = 0)]
    idle_timeout_ms: u64,
    /// A benchmark knob (`ferry bench raft`): also take puts serialized as raw, prost,
    /// flatbuffers or zflatbuffers on a raw method, replicated and applied as received. Every
    /// node of the cluster needs the same one.
    #[cfg(feature = "bench")]
    #[arg(long, value_parser = ferry_bench::raft::decoder)]
    encoding: Option<std::sync::Arc<dyn ferry_kv::raft::PutDecoder>>,
}

fn failed(e: ClientError) -> CliError {
    CliError::Input(e.to_string())
}

/// A value argument, or standard input for `-`.
fn value(arg: &str) -> Result<Vec<u8>, CliError> {
    if arg != "-" {
        return Ok(arg.as_bytes().to_vec());
    }
    let mut v = Vec::new();
    std::io::stdin()
        .read_to_end(&mut v)
        .map_err(|e| CliError::Input(format!("reading the value from stdin: {e}")))?;
    Ok(v)
}

fn client(node: &NodeAddr) -> Result<Client, CliError> {
    needs(&node.addr, "--tls-ca", node.tls.tls_ca.is_some())?;
    let mut config = ChannelConfig::default();
    config.conn.tls_client = node.tls.client()?;
    Client::connect_with(&node.addr, config).map_err(failed)
}

/// Runs `ferry kv`.
pub fn run(args: &Args) -> Result<(), CliError> {
    match &args.command {
        KvCommand::Serve(a) => {
            needs(&a.listen, "--tls-cert and --tls-key", a.tls.tls_cert.is_some())?;
            // With RUST_LOG set (e.g. `openraft=info,ferry_kv=debug`), the node's log to stderr.
            if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(filter)
                    .with_writer(std::io::stderr)
                    .try_init();
            }
            let config = NodeConfig {
                peers: a.peers.clone(),
                sync: a.sync,
                snapshot_every: a.snapshot_every,
                read_lease: a.read_lease,
                tls_server: a.tls.server(Duration::from_millis(a.tls_handshake_timeout_ms))?,
                tls_client: a.tls.client()?,
                metrics: a.metrics.clone(),
                connections: ConnLimits {
                    max_connections: a.max_connections,
                    idle_timeout: (a.idle_timeout_ms > 0).then(|| Duration::from_millis(a.idle_timeout_ms)),
                },
                #[cfg(feature = "bench")]
                encoding: a.encoding.clone(),
                ..NodeConfig::new(a.id, a.listen.clone(), a.data.clone())
            };
            raft::run(config, |addr| {
                println!("ferry kv: node {} serving on {addr}", a.id);
                let _ = std::io::stdout().flush();
            })
            .map_err(|e| CliError::Usage(format!("kv serve: {e}")))
        }
        KvCommand::Init { node, members } => client(node)?.init(members).map_err(failed),
        KvCommand::Put { node, key, value: v } => client(node)?.put(key, &value(v)?).map_err(failed),
        KvCommand::Append { node, key, value: v } => {
            let n = client(node)?.append(key, &value(v)?).map_err(failed)?;
            println!("{n}");
            Ok(())
        }
        KvCommand::Get { node, key } => match client(node)?.get(key).map_err(failed)? {
            Some(v) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&v)
                    .and_then(|()| out.flush())
                    .map_err(|e| CliError::Input(format!("writing the value: {e}")))
            }
            None => Err(CliError::Usage(format!("no key `{key}`"))),
        },
        KvCommand::Delete { node, key } => match client(node)?.delete(key).map_err(failed)? {
            true => Ok(()),
            false => Err(CliError::Usage(format!("no key `{key}`"))),
        },
        KvCommand::Status { node, json } => {
            let s = client(node)?.status().map_err(failed)?;
            if *json {
                println!("{}", s.to_json());
            } else {
                let leader = s
                    .leader
                    .map_or("none known".to_string(), |l| format!("{l} ({})", s.leader_addr));
                println!("node: {} ({})", s.id, s.state);
                println!("leader: {leader}");
                println!("term: {}", s.term);
                println!("commit index: {}", s.commit_index);
                println!("applied index: {}", s.applied_index);
                println!("members: {}", s.members);
                if !s.learners.is_empty() {
                    println!("learners: {}", s.learners);
                }
                println!("cluster: {:016x}", s.cluster);
            }
            Ok(())
        }
        KvCommand::AddNode { node, id, node_addr } => client(node)?.add_node(*id, node_addr).map_err(failed),
        KvCommand::RemoveNode { node, id } => client(node)?.remove_node(*id).map_err(failed),
    }
}
