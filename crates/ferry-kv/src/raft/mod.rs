//! Replication: the store served by a Raft group of `ferry kv serve` processes, on openraft 0.9.
//!
//! What each part does:
//! - [`codec`]: the one checked encoding of openraft's values (log, vote, snapshots, peer
//!   messages); peer and stored bytes enter only through its `Reader`.
//! - `storage`: the log, the vote and the last snapshot in redb (one file in the data
//!   directory, or in memory with [`Sync::None`]), and the state machine: a [`Store`](crate::Store)
//!   and what was applied to it.
//! - `network`: openraft's `RaftNetwork` over `ferry-rpc` (`proto/ferry/raft.proto`'s `Raft`
//!   service), one tokio [`AsyncChannel`](ferry::rpc::tokio::AsyncChannel) per peer, TCP or shared
//!   memory by the peer's address.
//! - `service`: the `Kv` service replicated (writes through the log, reads after a
//!   read-index check), the `Raft` service peers call and the `Cluster` service operators call.
//! - [`node`]: [`serve`] starts a node from a [`NodeConfig`]; [`client`]: a blocking client
//!   that follows a follower's `ferry-leader` trailer to the leader.
//! - `metrics`: the node's series on its server's `/metrics` (`--metrics`): term, leader,
//!   commit and applied index, writes applied and the bytes copied for them.
//!
//! The path of a PUT (who owns the value's bytes at each step):
//!
//! ```text
//! client ── Put (Ferry message) ──► leader: frame read into a pool buffer (TCP; shm: copied in)
//!   Command { op: Put, msg: SharedBuf of that frame }  (refcount, no copy; under 16 KiB
//!     copied into a buffer of its own size: the log must not hold a 256 KiB read buffer)
//!   ├─► log: encoded into redb (the one copy to disk), fsync per --sync
//!   ├─► followers: RaftFrame { body, commands: [msg] } the command by reference (gather)
//!   │      follower: command copied from its receive buffer into its pool, logged
//!   └─► apply (every node): the Put viewed in place, its values copied into the store
//! ```
//!
//! Every node runs on one thread (openraft's `singlethreaded` feature, a current-thread
//! runtime and a `LocalSet`), as `ferry-rpc`'s tokio driver is thread-per-core.

// redb's and openraft's error types are large (160 bytes and more); they are returned on cold
// paths only (a failed disk write, a refused membership change), as openraft's own examples do.
#![allow(clippy::result_large_err)]

pub mod client;
pub mod codec;
mod metrics;
mod network;
pub mod node;
mod service;
mod storage;

use std::fmt;
use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};

use ferry_buf::SharedBuf;
use openraft::BasicNode;

pub use client::{Client, ClientError};
pub use node::{NodeConfig, NodeError, READ_LEASE, run, serve};

/// A node's id in a cluster (`--id`).
pub type NodeId = u64;

/// The trailer a follower's refusal names the leader in: `ID=ADDR`.
pub const LEADER_TRAILER: &str = "ferry-leader";

/// The cluster id (16 hex digits): a trailer of a follower's refusal, and the metadata a
/// client sends once it knows it, so that a leader's address that now serves another cluster
/// refuses the call instead of answering for the wrong data.
pub const CLUSTER_HEADER: &str = "ferry-cluster";

/// What a normal log entry asks of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// A `ferry.kv.Put`.
    Put = 1,
    /// A `ferry.kv.Append`.
    Append = 2,
    /// A `ferry.kv.Keys` whose keys are deleted.
    Delete = 3,
    /// A put in a benchmark's encoding, decoded by the node's [`PutDecoder`] (`ferry bench raft`).
    Encoded = 4,
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        match v {
            1 => Some(Op::Put),
            2 => Some(Op::Append),
            3 => Some(Op::Delete),
            4 => Some(Op::Encoded),
            _ => None,
        }
    }
}

/// A normal log entry: the client's Ferry `kv` message as it was received, in a pool buffer.
#[derive(Clone)]
pub struct Command {
    /// Which message `msg` is.
    pub op: Op,
    /// The encoded message.
    pub msg: SharedBuf,
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}({} bytes)", self.op, self.msg.len())
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The raw method a node serving a [`PutDecoder`] takes its encoded puts on.
pub const ENCODED_PUT: &str = "/ferry.raft.Bench/Put";

/// Another serialization's put (`ferry bench raft`'s raw bytes, prost and FlatBuffers; a
/// benchmark knob, `ferry kv serve --encoding`): the one seam that lets the replicated path
/// carry it. A node given one (`NodeConfig::encoding`) takes such puts as raw payloads on
/// [`ENCODED_PUT`], checks them with it, logs and replicates them as received
/// ([`Op::Encoded`]), and decodes them with it again to apply, on every node.
pub trait PutDecoder: fmt::Debug + Send + std::marker::Sync {
    /// Decodes a put and hands its key and value to `put`, or says why it does not decode. A
    /// value read in place (a slice of `msg`) of 16 KiB or more is stored by reference, as
    /// Ferry's are; any other is copied into the store.
    fn decode(&self, msg: &SharedBuf, put: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), String>;
}

/// What applying a [`Command`] gave: the count the `Kv` method returns, or the store's refusal
/// (the same on every node: the store is deterministic).
#[derive(Debug, Clone)]
pub struct Applied(pub Result<u64, crate::StoreError>);

openraft::declare_raft_types!(
    /// The openraft types of `ferry kv`.
    pub TypeConfig:
        D = Command,
        R = Applied,
        NodeId = NodeId,
        Node = BasicNode,
        SnapshotData = Cursor<Vec<u8>>,
);

/// The Raft handle of a node.
pub type Raft = openraft::Raft<TypeConfig>;

/// How the log is made durable (`--sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// fsync before a write is acknowledged (the default).
    Always,
    /// Group commit: appends are acknowledged after the one fsync that covers every append of
    /// the window (at most this long after the first).
    Batch(std::time::Duration),
    /// In memory only: a node that stops loses its log (the paper's `--sync none`).
    None,
}

impl std::str::FromStr for Sync {
    type Err = String;

    fn from_str(s: &str) -> Result<Sync, String> {
        match s {
            "always" => Ok(Sync::Always),
            "none" => Ok(Sync::None),
            "batch" => Ok(Sync::Batch(std::time::Duration::from_micros(500))),
            _ => match s.strip_prefix("batch:").map(str::parse::<u64>) {
                Some(Ok(us)) => Ok(Sync::Batch(std::time::Duration::from_micros(us))),
                _ => Err(format!("`{s}`: expected always, batch, batch:MICROS or none")),
            },
        }
    }
}

/// Bytes a node copied in user space for replicated writes, by where (the `ClusterStatus`
/// reports them, and `bytes_copied` divided by `commands` is the count per write the docs state).
#[derive(Debug, Default)]
pub struct Copies {
    /// Normal entries applied.
    pub commands: AtomicU64,
    /// A command copied into the pool on receipt (a follower's AppendEntries; a leader's
    /// request over shared memory, or under 16 KiB over TCP).
    pub received: AtomicU64,
    /// A command copied into its log record.
    pub logged: AtomicU64,
    /// Values copied into the store on apply.
    pub applied: AtomicU64,
}

impl Copies {
    fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The sum of every copy counted.
    pub fn total(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
            + self.logged.load(Ordering::Relaxed)
            + self.applied.load(Ordering::Relaxed)
    }
}

/// `ID=ADDR` pairs joined by commas, as `--peers` and `--members` take them.
pub fn format_members<'a>(nodes: impl Iterator<Item = (&'a NodeId, &'a BasicNode)>) -> String {
    nodes
        .map(|(id, n)| format!("{id}={}", n.addr))
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `ID=ADDR` pairs joined by commas.
pub fn parse_members(s: &str) -> Result<std::collections::BTreeMap<NodeId, BasicNode>, String> {
    let mut out = std::collections::BTreeMap::new();
    for pair in s.split(',').filter(|p| !p.is_empty()) {
        let (id, addr) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}`: expected ID=ADDR"))?;
        let id: NodeId = id.trim().parse().map_err(|e| format!("`{pair}`: the id: {e}"))?;
        if id == 0 {
            return Err(format!("`{pair}`: node ids start at 1"));
        }
        if out
            .insert(
                id,
                BasicNode {
                    addr: addr.trim().to_string(),
                },
            )
            .is_some()
        {
            return Err(format!("node {id} named twice"));
        }
    }
    if out.is_empty() {
        return Err("no members".into());
    }
    Ok(out)
}

#[cfg(test)]
fn test_pool() -> ferry_buf::Pool {
    ferry_buf::Pool::new(ferry_buf::PoolConfig::default()).expect("pool")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_parse_and_print_back() {
        let m = parse_members("1=tcp://a:1, 2=shm:///tmp/x").unwrap();
        assert_eq!(format_members(m.iter()), "1=tcp://a:1,2=shm:///tmp/x");
        assert!(parse_members("1=a,1=b").unwrap_err().contains("twice"));
        assert!(parse_members("0=a").is_err());
        assert!(parse_members("x").is_err());
        assert!(parse_members("").is_err());
    }

    #[test]
    fn sync_modes_parse() {
        assert_eq!("always".parse::<Sync>(), Ok(Sync::Always));
        assert_eq!(
            "batch:200".parse::<Sync>(),
            Ok(Sync::Batch(std::time::Duration::from_micros(200)))
        );
        assert!("sometimes".parse::<Sync>().is_err());
    }
}
