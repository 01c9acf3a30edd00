//! A blocking client of a replicated store that follows the leader: a call refused by a
//! follower with the `ferry-leader` trailer is sent again to the node it names, and a call
//! refused while no leader is known is retried until one is (within the client's patience).

use std::time::{Duration, Instant};

use ferry::rpc::{CallOptions, Channel, ChannelConfig, Code, Status};

use super::{CLUSTER_HEADER, LEADER_TRAILER};
use crate::proto::ferry::kv::{Append, Count, Key, Keys, Put, kv_service};
use crate::proto::ferry::raft::{ClusterStatus, Empty, Members, NodeRef, cluster_service};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The node (or the leader it named) refused or failed the call.
    #[error("{addr}: {status}")]
    Status {
        /// The node that answered.
        addr: String,
        /// Its answer.
        status: Status,
    },
    /// Leaders kept naming other leaders.
    #[error("no leader after {hops} redirects (last: {addr})")]
    Redirects {
        /// Redirects followed.
        hops: usize,
        /// The last node asked.
        addr: String,
    },
}

impl ClientError {
    /// The status, if a node answered with one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            ClientError::Status { status, .. } => Some(status),
            ClientError::Redirects { .. } => None,
        }
    }
}

/// What a node knows of its cluster (`ferry kv status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    /// The node's id.
    pub id: u64,
    /// The leader's id, if one is known.
    pub leader: Option<u64>,
    /// The leader's address.
    pub leader_addr: String,
    /// The node's term.
    pub term: u64,
    /// The index of the last committed entry (0: none).
    pub commit_index: u64,
    /// The index of the last applied entry.
    pub applied_index: u64,
    /// Voters, `ID=ADDR,...`.
    pub members: String,
    /// Learners, `ID=ADDR,...`.
    pub learners: String,
    /// leader, follower, candidate, learner or shutdown.
    pub state: String,
    /// The cluster's id (0: none yet).
    pub cluster: u64,
    /// Normal entries applied.
    pub commands: u64,
    /// Bytes copied in user space for them (receipt, log record, apply).
    pub bytes_copied: u64,
    /// The index of the last entry in the node's snapshot (0: none).
    pub snapshot_index: u64,
}

impl NodeStatus {
    /// One JSON object (the `--json` of `ferry kv status`).
    pub fn to_json(&self) -> String {
        let s = |v: &str| format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
        format!(
            "{{\"id\":{},\"leader\":{},\"leader_addr\":{},\"term\":{},\"commit_index\":{},\"applied_index\":{},\
             \"members\":{},\"learners\":{},\"state\":{},\"cluster\":\"{:016x}\",\"commands\":{},\
             \"bytes_copied\":{},\"snapshot_index\":{}}}",
            self.id,
            self.leader.map_or("null".to_string(), |l| l.to_string()),
            s(&self.leader_addr),
            self.term,
            self.commit_index,
            self.applied_index,
            s(&self.members),
            s(&self.learners),
            s(&self.state),
            self.cluster,
            self.commands,
            self.bytes_copied,
            self.snapshot_index,
        )
    }
}

/// Redirects followed in a row at most (a loop of nodes naming each other).
const MAX_HOPS: usize = 8;

/// A client of one node, which moves to the leader when told.
#[derive(Debug)]
pub struct Client {
    /// The node given to [`connect`](Self::connect): asked again when a leader is lost.
    home: String,
    addr: String,
    channel: Option<Channel>,
    /// What every connection is opened with (TLS roots and client certificate for `tls://`).
    config: ChannelConfig,
    /// How long a call keeps trying while no leader is known.
    patience: Duration,
    /// What every call sends: the cluster id, once a redirect named it.
    options: CallOptions,
}

fn open(addr: &str, config: &ChannelConfig) -> Result<Channel, Status> {
    let channel = Channel::connect_with(addr, config.clone())?;
    channel.set_timeout(Some(Duration::from_secs(10)));
    Ok(channel)
}

impl Client {
    /// Connects to the node at `addr` with the default settings (no TLS).
    pub fn connect(addr: &str) -> Result<Client, ClientError> {
        Client::connect_with(addr, ChannelConfig::default())
    }

    /// Connects to the node at `addr`, and to the leaders it names, with `config` (its
    /// `conn.tls_client` for `tls://` nodes).
    pub fn connect_with(addr: &str, config: ChannelConfig) -> Result<Client, ClientError> {
        let channel = open(addr, &config).map_err(|status| ClientError::Status {
            addr: addr.to_string(),
            status,
        })?;
        Ok(Client {
            home: addr.to_string(),
            addr: addr.to_string(),
            channel: Some(channel),
            config,
            patience: Duration::from_secs(10),
            options: CallOptions::default(),
        })
    }

    /// The node this client talks to now (the leader, after a redirect).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// How long a call keeps trying while no leader is known or the one named does not answer
    /// (default 10 s).
    pub fn set_patience(&mut self, patience: Duration) {
        self.patience = patience;
    }

    /// Runs `call` on the current node, following redirects; while no leader is known, or the
    /// leader named cannot be reached (it may have just died), asks the first node again,
    /// backing off, until a leader answers or the patience runs out.
    fn follow<T>(
        &mut self,
        read: bool,
        call: impl Fn(&Channel, &CallOptions) -> Result<T, Status>,
    ) -> Result<T, ClientError> {
        let start = Instant::now();
        let mut hops = 0;
        let mut backoff = Duration::from_millis(20);
        loop {
            let (status, sent) = match &self.channel {
                Some(ch) => match call(ch, &self.options) {
                    Ok(v) => return Ok(v),
                    Err(status) => (status, true),
                },
                None => match open(&self.addr, &self.config) {
                    Ok(ch) => {
                        let r = call(&ch, &self.options);
                        self.channel = Some(ch);
                        match r {
                            Ok(v) => return Ok(v),
                            Err(status) => (status, true),
                        }
                    }
                    Err(status) => (status, false),
                },
            };
            let leader = status
                .metadata
                .get(LEADER_TRAILER)
                .and_then(|v| std::str::from_utf8(v).ok());
            // Refused before it was proposed (a trailer names the leader, or no leader, ""), or
            // never sent (the connect failed): sending it again cannot apply it twice. A write
            // that failed once sent (a connection broken mid-call) is not sent again: it may
            // have been applied. A read may always be sent again.
            let unsent = leader.is_some() || !sent || read;
            match (status.code, leader.and_then(|v| v.split_once('='))) {
                (Code::FailedPrecondition, Some((_, addr))) => {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return Err(ClientError::Redirects {
                            hops,
                            addr: addr.to_string(),
                        });
                    }
                    if let Some(cluster) = status.metadata.get(CLUSTER_HEADER) {
                        let _ = self.options.metadata.remove(CLUSTER_HEADER);
                        self.options
                            .metadata
                            .insert(CLUSTER_HEADER, cluster.to_vec())
                            .expect("a valid key");
                    }
                    self.channel = None;
                    self.addr = addr.to_string();
                }
                // No leader known, or the node named is gone: a new leader is being elected.
                (Code::Unavailable, None) if unsent && start.elapsed() < self.patience => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                    hops = 0;
                    self.channel = None;
                    self.addr = self.home.clone();
                }
                _ => {
                    return Err(ClientError::Status {
                        addr: self.addr.clone(),
                        status,
                    });
                }
            }
        }
    }

    /// Stores `value` under `key`.
    pub fn put(&mut self, key: &str, value: &[u8]) -> Result<(), ClientError> {
        self.follow(false, |ch, opts| {
            let mut req = Put::new(ch.context());
            req.set_key(key);
            req.append_values(value);
            ch.call_with::<Count<'static>>(kv_service::PUT, &req, opts)
                .map(|_| ())
        })
    }

    /// Appends `value` to `key`'s list; its new length.
    pub fn append(&mut self, key: &str, value: &[u8]) -> Result<u64, ClientError> {
        self.follow(false, |ch, opts| {
            let mut req = Append::new(ch.context());
            req.set_key(key);
            req.set_value(value);
            let r = ch.call_with::<Count<'static>>(kv_service::APPEND, &req, opts)?;
            Ok(r.view()?.count())
        })
    }

    /// Deletes `key`; whether it was there.
    pub fn delete(&mut self, key: &str) -> Result<bool, ClientError> {
        self.follow(false, |ch, opts| {
            let mut req = Keys::new(ch.context());
            req.append_keys(key);
            let r = ch.call_with::<Count<'static>>(kv_service::DELETE, &req, opts)?;
            Ok(r.view()?.count() == 1)
        })
    }

    /// The value of `key` (every buffer of a list or vector, joined), `None` if absent; read
    /// linearizably from the leader.
    pub fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, ClientError> {
        let r = self.follow(true, |ch, opts| {
            let mut req = Key::new(ch.context());
            req.set_key(key);
            let r =
                ch.call_with::<crate::proto::ferry::kv::Values<'static>>(kv_service::GET_LIST, &req, opts)?;
            let mut out = Vec::new();
            r.view()?.values().iter().for_each(|v| out.extend_from_slice(v));
            Ok(out)
        });
        match r {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Status { status, .. }) if status.code == Code::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Forms a cluster of `members` (`ID=ADDR,...`; empty: the node's `--peers`).
    pub fn init(&mut self, members: &str) -> Result<(), ClientError> {
        self.follow(false, |ch, opts| {
            let mut req = Members::new(ch.context());
            req.set_members(members);
            ch.call_with::<Empty<'static>>(cluster_service::INIT, &req, opts)
                .map(|_| ())
        })
    }

    /// Adds node `id` at `addr` (a learner until it caught up, then a voter).
    pub fn add_node(&mut self, id: u64, addr: &str) -> Result<(), ClientError> {
        self.follow(false, |ch, opts| {
            let mut req = NodeRef::new(ch.context());
            req.set_id(id);
            req.set_addr(addr);
            ch.call_with::<Empty<'static>>(cluster_service::ADD_NODE, &req, opts)
                .map(|_| ())
        })
    }

    /// Removes node `id`.
    pub fn remove_node(&mut self, id: u64) -> Result<(), ClientError> {
        self.follow(false, |ch, opts| {
            let mut req = NodeRef::new(ch.context());
            req.set_id(id);
            ch.call_with::<Empty<'static>>(cluster_service::REMOVE_NODE, &req, opts)
                .map(|_| ())
        })
    }

    /// What the node this client talks to (not the leader) knows of the cluster.
    pub fn status(&mut self) -> Result<NodeStatus, ClientError> {
        let r = open(&self.addr, &self.config)
            .and_then(|ch| {
                ch.call::<ClusterStatus<'static>>(cluster_service::STATUS, &Empty::new(ch.context()))
            })
            .and_then(|r| {
                let v = r.view()?;
                let text = |r: Result<&str, ferry::wire::DecodeError>| {
                    r.map(str::to_string).map_err(|e| {
                        Status::new(Code::Internal, format!("a status that does not decode: {e}"))
                    })
                };
                Ok(NodeStatus {
                    id: v.id(),
                    leader: Some(v.leader()).filter(|l| *l != 0),
                    leader_addr: text(v.leader_addr())?,
                    term: v.term(),
                    commit_index: v.commit_index(),
                    applied_index: v.applied_index(),
                    members: text(v.members())?,
                    learners: text(v.learners())?,
                    state: text(v.state())?,
                    cluster: v.cluster(),
                    commands: v.commands(),
                    bytes_copied: v.bytes_copied(),
                    snapshot_index: v.snapshot_index(),
                })
            });
        r.map_err(|status| ClientError::Status {
            addr: self.addr.clone(),
            status,
        })
    }
}
