//! openraft's `RaftNetwork` over `ferry-rpc`: the `Raft` service of `proto/ferry/raft.proto`,
//! one tokio channel per peer (TCP or shared memory, by the peer's address), opened on first
//! use and again after a failure.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use ferry::rpc::tokio::AsyncChannel;
use ferry::rpc::{Code, Status};
use openraft::BasicNode;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};

use super::codec::{self, CodecError};
use super::{NodeId, TypeConfig};
use crate::proto::ferry::raft::{RaftClient, RaftFrame};

/// Why a call to a peer failed.
#[derive(Debug, thiserror::Error)]
enum PeerError {
    #[error("node {target} at {addr}: {status}")]
    Status {
        target: NodeId,
        addr: String,
        status: Status,
    },
    #[error("node {target} at {addr}: no answer within {after:?}")]
    Timeout {
        target: NodeId,
        addr: String,
        after: Duration,
    },
    #[error("node {target} at {addr}: its answer does not decode: {source}")]
    Codec {
        target: NodeId,
        addr: String,
        source: CodecError,
    },
}

/// Makes a [`Peer`] per target.
pub(crate) struct Peers {
    /// The cluster this node belongs to (0: none yet), sent with every message.
    pub(crate) cluster: Rc<Cell<u64>>,
}

impl RaftNetworkFactory<TypeConfig> for Peers {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            addr: node.addr.clone(),
            cluster: self.cluster.clone(),
            client: None,
        }
    }
}

/// The connection to one peer.
pub(crate) struct Peer {
    target: NodeId,
    addr: String,
    cluster: Rc<Cell<u64>>,
    client: Option<RaftClient<AsyncChannel>>,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl Peer {
    /// One call: `method` picks the stub's method; the answer's body, or the error openraft
    /// should act on (unreachable: back off; a bad answer: retry).
    async fn call<E: std::error::Error>(
        &mut self,
        option: &RPCOption,
        body: Vec<u8>,
        commands: Vec<ferry_buf::SharedBuf>,
        method: u16,
    ) -> Result<Vec<u8>, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        let after = option.hard_ttl();
        let unreachable = |target, addr: &str, status| {
            RPCError::Unreachable(Unreachable::new(&PeerError::Status {
                target,
                addr: addr.to_string(),
                status,
            }))
        };
        if self.client.is_none() {
            let connect = tokio::time::timeout(after, AsyncChannel::connect(&self.addr)).await;
            match connect {
                Ok(Ok(ch)) => self.client = Some(RaftClient::new(ch)),
                Ok(Err(status)) => return Err(unreachable(self.target, &self.addr, status)),
                Err(_) => {
                    return Err(RPCError::Unreachable(Unreachable::new(&PeerError::Timeout {
                        target: self.target,
                        addr: self.addr.clone(),
                        after,
                    })));
                }
            }
        }
        let client = self.client.as_ref().expect("connected above");
        let ctx = client.inner().context().clone();
        let mut frame = RaftFrame::new(&ctx);
        frame.set_cluster(self.cluster.get());
        frame.set_body(body);
        frame.init_commands(commands.len());
        for c in commands {
            frame.append_commands(c);
        }
        let reply =
            tokio::time::timeout(after, client.inner().call::<RaftFrame<'static>>(method, &frame)).await;
        let reply = match reply {
            Ok(Ok(r)) => r,
            Ok(Err(status)) => {
                // A broken connection is opened again next time.
                if matches!(status.code, Code::Unavailable | Code::Internal | Code::Unknown) {
                    self.client = None;
                }
                return Err(unreachable(self.target, &self.addr, status));
            }
            Err(_) => {
                self.client = None;
                return Err(RPCError::Unreachable(Unreachable::new(&PeerError::Timeout {
                    target: self.target,
                    addr: self.addr.clone(),
                    after,
                })));
            }
        };
        let view = reply
            .view()
            .map_err(|status| unreachable(self.target, &self.addr, status))?;
        Ok(view.body().to_vec())
    }

    fn bad_answer<E: std::error::Error>(
        &self,
        source: CodecError,
    ) -> RPCError<NodeId, BasicNode, RaftError<NodeId, E>> {
        RPCError::Network(NetworkError::new(&PeerError::Codec {
            target: self.target,
            addr: self.addr.clone(),
            source,
        }))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let (body, commands) = codec::encode_append(&rpc);
        let method = crate::proto::ferry::raft::raft_service::APPEND_ENTRIES;
        let reply = self.call(&option, body, commands, method).await?;
        codec::decode_append_response(&reply).map_err(|e| self.bad_answer(e))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        let body = codec::encode_snapshot_chunk(&rpc);
        let method = crate::proto::ferry::raft::raft_service::INSTALL_SNAPSHOT;
        let reply = self.call(&option, body, Vec::new(), method).await?;
        match codec::decode_snapshot_response(&reply) {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(mismatch)) => Err(RPCError::RemoteError(
                openraft::error::RemoteError::new_with_node(
                    self.target,
                    BasicNode {
                        addr: self.addr.clone(),
                    },
                    RaftError::APIError(InstallSnapshotError::SnapshotMismatch(mismatch)),
                ),
            )),
            Err(e) => Err(self.bad_answer(e)),
        }
    }

    async fn vote(&mut self, rpc: VoteRequest<NodeId>, option: RPCOption) -> RpcResult<VoteResponse<NodeId>> {
        let body = codec::encode_vote_request(&rpc);
        let method = crate::proto::ferry::raft::raft_service::VOTE;
        let reply = self.call(&option, body, Vec::new(), method).await?;
        codec::decode_vote_response(&reply).map_err(|e| self.bad_answer(e))
    }
}
