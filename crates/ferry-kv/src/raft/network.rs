//! openraft's `RaftNetwork` over `ferry-rpc`: the `Raft` service of `proto/ferry/raft.proto`,
//! one tokio channel per peer (TCP or shared memory, by the peer's address), opened on first
//! use and again after a failure.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use ferry::rpc::tokio::AsyncChannel;
use ferry::rpc::{ChannelConfig, Code, Status};
use openraft::error::{
    Fatal, InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, ReplicationClosed,
    StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, EntryPayload, OptionalSend, Snapshot, Vote};

use super::codec::{self, CodecError, SnapshotHeader};
use super::{NodeId, TypeConfig};
use crate::proto::ferry::raft::{RaftClient, RaftFrame};

/// Bytes of snapshot data in one frame of the `InstallSnapshot` stream.
const SNAPSHOT_CHUNK: usize = 1 << 20;

/// Why a call to a peer failed.
#[derive(Debug, thiserror::Error)]
enum PeerError {
    #[error("node {target} at {addr}: {status}")]
    Status {
        target: NodeId,
        addr: String,
        status: Status,
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
    /// What peers are dialled with (the TLS roots and client certificate for `tls://` peers).
    pub(crate) channel: ChannelConfig,
    /// The most command bytes one AppendEntries carries ([`append_budget`]).
    pub(crate) append_budget: usize,
}

/// Room left in a frame for an AppendEntries' body (votes, log ids, each entry's header) and
/// the framing of its commands: openraft sends at most 300 entries, each under 100 bytes of it.
const APPEND_SLACK: usize = 64 << 10;

/// The most command bytes one AppendEntries to a peer dialled with `channel` carries: a frame
/// of the peer's transport less [`APPEND_SLACK`]. A longer run of entries goes out in several
/// (openraft resends fewer on [`PayloadTooLarge`]), and a node refuses a command longer than
/// this, so that every entry fits one AppendEntries alone.
pub(crate) fn append_budget(channel: &ChannelConfig) -> usize {
    channel.conn.tcp.max_frame_len.saturating_sub(APPEND_SLACK)
}

impl RaftNetworkFactory<TypeConfig> for Peers {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            addr: node.addr.clone(),
            cluster: self.cluster.clone(),
            channel: self.channel.clone(),
            append_budget: self.append_budget,
            conn: Conn::Closed,
        }
    }
}

/// A peer's connection.
enum Conn {
    Closed,
    /// Being opened by a task of its own: openraft drops a call that outlives its timeout (a
    /// heartbeat interval), and a first connect (which sets up the channel's pool) may take
    /// longer, so the connect must outlive the call that started it.
    Opening(tokio::task::JoinHandle<Result<AsyncChannel, Status>>),
    Open(RaftClient<AsyncChannel>),
}

/// The connection to one peer.
pub(crate) struct Peer {
    target: NodeId,
    addr: String,
    cluster: Rc<Cell<u64>>,
    channel: ChannelConfig,
    append_budget: usize,
    conn: Conn,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

type SnapshotResult = Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>>;

impl Peer {
    fn status_error(&self, status: Status) -> Unreachable {
        Unreachable::new(&PeerError::Status {
            target: self.target,
            addr: self.addr.clone(),
            status,
        })
    }

    fn unreachable<E: std::error::Error>(
        &self,
        status: Status,
    ) -> RPCError<NodeId, BasicNode, RaftError<NodeId, E>> {
        RPCError::Unreachable(self.status_error(status))
    }

    /// Opens the connection if it is not open.
    async fn connect(&mut self) -> Result<(), Status> {
        loop {
            match &mut self.conn {
                Conn::Open(_) => return Ok(()),
                Conn::Closed => {
                    let addr = self.addr.clone();
                    let channel = self.channel.clone();
                    self.conn = Conn::Opening(tokio::task::spawn_local(async move {
                        AsyncChannel::connect_with(&addr, channel).await
                    }));
                }
                Conn::Opening(task) => {
                    let opened = task.await;
                    self.conn = Conn::Closed;
                    match opened {
                        Ok(Ok(ch)) => self.conn = Conn::Open(RaftClient::new(ch)),
                        Ok(Err(status)) => return Err(status),
                        Err(e) => return Err(Status::new(Code::Internal, e.to_string())),
                    }
                }
            }
        }
    }

    /// The open connection, opening it first if need be.
    async fn client<E: std::error::Error>(
        &mut self,
    ) -> Result<&RaftClient<AsyncChannel>, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        if let Err(status) = self.connect().await {
            return Err(self.unreachable(status));
        }
        match &self.conn {
            Conn::Open(c) => Ok(c),
            _ => unreachable!("opened above"),
        }
    }

    /// A call failed with `status`: a broken connection is opened again next time.
    fn failed(&mut self, status: &Status) {
        if matches!(status.code, Code::Unavailable | Code::Internal | Code::Unknown) {
            self.conn = Conn::Closed;
        }
    }

    /// One call of `method`: the answer's body, or the error openraft should act on
    /// (unreachable: back off; a bad answer: retry). openraft bounds it by its own timeout.
    async fn call<E: std::error::Error>(
        &mut self,
        body: Vec<u8>,
        commands: Vec<ferry_buf::SharedBuf>,
        method: u16,
    ) -> Result<Vec<u8>, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        let cluster = self.cluster.get();
        let client = self.client().await?;
        let ctx = client.inner().context().clone();
        let mut frame = RaftFrame::new(&ctx);
        frame.set_cluster(cluster);
        frame.set_body(body);
        frame.init_commands(commands.len());
        for c in commands {
            frame.append_commands(c);
        }
        let reply = match client.inner().call::<RaftFrame<'static>>(method, &frame).await {
            Ok(r) => r,
            Err(status) => {
                self.failed(&status);
                return Err(self.unreachable(status));
            }
        };
        let view = reply.view().map_err(|status| self.unreachable(status))?;
        Ok(view.body().to_vec())
    }

    /// [`RaftNetwork::full_snapshot`]'s transfer.
    async fn stream_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        ttl: Duration,
    ) -> SnapshotResult {
        let unreachable = |peer: &Self, status| StreamingError::Unreachable(peer.status_error(status));
        if let Err(status) = self.connect().await {
            return Err(unreachable(self, status));
        }
        let Conn::Open(client) = &self.conn else {
            unreachable!("opened above")
        };
        let ctx = client.inner().context().clone();
        let data = snapshot.snapshot.into_inner();
        let header = codec::encode_snapshot_header(&SnapshotHeader {
            vote,
            meta: snapshot.meta,
            len: data.len() as u64,
        });
        let sent = async {
            let (mut frames, mut answers) = client.install_snapshot()?;
            let mut frame = RaftFrame::new(&ctx);
            frame.set_cluster(self.cluster.get());
            frame.set_body(header);
            within(ttl, "header", frames.send(&frame)).await?;
            for chunk in data.chunks(SNAPSHOT_CHUNK) {
                let mut frame = RaftFrame::new(&ctx);
                frame.set_body(chunk);
                within(ttl, "frame", frames.send(&frame)).await?;
            }
            within(ttl, "end", frames.end()).await?;
            let answer = within(ttl, "answer (the follower installing it)", answers.message())
                .await?
                .ok_or_else(|| {
                    Status::new(Code::Internal, "the follower ended the stream without an answer")
                })?;
            let view = answer.view()?;
            Ok::<_, Status>(codec::decode_snapshot_response(view.body()))
        };
        match sent.await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(StreamingError::Network(self.codec_error(e))),
            Err(status) => {
                self.failed(&status);
                Err(unreachable(self, status))
            }
        }
    }

    fn codec_error(&self, source: CodecError) -> NetworkError {
        NetworkError::new(&PeerError::Codec {
            target: self.target,
            addr: self.addr.clone(),
            source,
        })
    }

    fn bad_answer<E: std::error::Error>(
        &self,
        source: CodecError,
    ) -> RPCError<NodeId, BasicNode, RaftError<NodeId, E>> {
        RPCError::Network(self.codec_error(source))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        if let Some(fit) = entries_that_fit(&rpc, self.append_budget) {
            return Err(RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint(fit)));
        }
        let (body, commands) = codec::encode_append(&rpc);
        let method = crate::proto::ferry::raft::raft_service::APPEND_ENTRIES;
        let reply = self.call(body, commands, method).await?;
        codec::decode_append_response(&reply).map_err(|e| self.bad_answer(e))
    }

    /// Never called: [`full_snapshot`](Self::full_snapshot) streams the whole snapshot, and
    /// openraft's chunked transfer, which calls this, is not used.
    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        Err(RPCError::Network(NetworkError::new(&std::io::Error::other(
            "snapshots are streamed whole (full_snapshot), not sent in chunks",
        ))))
    }

    /// Streams the snapshot to the follower (`InstallSnapshot`): its header, then its data
    /// [`SNAPSHOT_CHUNK`] bytes a frame, then the follower's answer once it installed it. Each
    /// frame, and the answer, must come within `option`'s hard TTL
    /// (`install_snapshot_timeout`); `cancel` ends the transfer when replication to this peer
    /// stops.
    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> SnapshotResult {
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            sent = self.stream_snapshot(vote, snapshot, option.hard_ttl()) => sent,
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        let body = codec::encode_vote_request(&rpc);
        let method = crate::proto::ferry::raft::raft_service::VOTE;
        let reply = self.call(body, Vec::new(), method).await?;
        codec::decode_vote_response(&reply).map_err(|e| self.bad_answer(e))
    }
}

/// `step` of a snapshot's transfer, given up with `DEADLINE_EXCEEDED` after `ttl`.
async fn within<T>(
    ttl: Duration,
    step: &str,
    f: impl Future<Output = Result<T, Status>>,
) -> Result<T, Status> {
    tokio::time::timeout(ttl, f).await.unwrap_or_else(|_| {
        Err(Status::new(
            Code::DeadlineExceeded,
            format!("a snapshot's {step} took longer than {ttl:?}"),
        ))
    })
}

/// How many of `rpc`'s first entries fit `budget` command bytes (at least one), when not all of
/// them do: openraft then resends that many (64 KiB puts, 300 to an AppendEntries, made frames of
/// 19 MB that the transport refused for ever, and the entries never committed).
fn entries_that_fit(rpc: &AppendEntriesRequest<TypeConfig>, budget: usize) -> Option<u64> {
    let mut total = 0usize;
    for (i, e) in rpc.entries.iter().enumerate() {
        if let EntryPayload::Normal(c) = &e.payload {
            total += c.msg.len();
        }
        if total > budget {
            // One entry alone is sent as it is (a node refuses a command past the budget).
            return (rpc.entries.len() > 1).then_some(i.max(1) as u64);
        }
    }
    None
}
