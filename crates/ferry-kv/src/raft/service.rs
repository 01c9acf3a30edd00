//! The services a node serves: `Kv` replicated, `Raft` (peers) and `Cluster` (operators).

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::Cursor;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use ferry::rpc::tokio::{AsyncCall, AsyncRequest, RequestStream, ResponseSink};
use ferry::rpc::tokio::{AsyncService, LocalBoxFuture};
use ferry::rpc::{Code, Encoded, Metadata, Status};
use ferry::rpc::{MethodInfo, Mode, Shape};
use ferry::wire::{Context, Message};
use ferry_buf::SharedBuf;
use openraft::error::{ChangeMembershipError, ClientWriteError, ForwardToLeader, InitializeError, RaftError};
use openraft::raft::ClientWriteResponse;
use openraft::{BasicNode, ChangeMembers, ServerState, Snapshot};

use super::codec::{self, CodecError};
use super::metrics::Reads;
use super::storage::{Db, REFERENCE_MIN};
use super::{
    Applied, CLUSTER_HEADER, Command, Copies, ENCODED_PUT, LEADER_TRAILER, NodeId, Op, PutDecoder, Raft,
    TypeConfig, format_members, parse_members,
};
use crate::Store;
use crate::proto::ferry::kv::{Append, AsyncKv, Key, Keys, ListIndex, Put};
use crate::proto::ferry::raft::{AsyncCluster, AsyncRaft, ClusterStatus, Empty, Members, NodeRef, RaftFrame};
use crate::service as kv;

/// What every service of a node shares.
pub(crate) struct Shared {
    pub(crate) id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) store: Arc<Store>,
    pub(crate) db: Rc<Db>,
    pub(crate) cluster: Rc<Cell<u64>>,
    pub(crate) copies: Arc<Copies>,
    /// `--peers`: the members `init` forms the cluster of when it names none.
    pub(crate) peers: Option<BTreeMap<NodeId, BasicNode>>,
    /// The longest command a write may propose: one that fits an AppendEntries alone.
    pub(crate) max_command: usize,
    /// `--read-lease`: how long after a quorum confirmed this node leads it serves reads
    /// without asking again.
    pub(crate) read_lease: Option<Duration>,
    /// The lease the last confirmation gave: its term, and when it ends.
    pub(crate) lease: Cell<Option<(u64, Instant)>>,
    /// The reads served, by how (`/metrics`).
    pub(crate) reads: Arc<Reads>,
}

/// The refusal of a call that needs the leader: `FAILED_PRECONDITION` naming it, with the
/// `ferry-leader` trailer the client follows; `UNAVAILABLE` with the trailer empty while no
/// leader is known.
fn forward(f: &ForwardToLeader<NodeId, BasicNode>, cluster: u64) -> Status {
    match (f.leader_id, &f.leader_node) {
        (Some(id), Some(node)) => {
            let mut md = Metadata::new();
            md.insert(LEADER_TRAILER, format!("{id}={}", node.addr))
                .expect("a valid key and a short value");
            md.insert(CLUSTER_HEADER, format!("{cluster:016x}"))
                .expect("a valid key");
            Status::new(
                Code::FailedPrecondition,
                format!("not the leader: node {id} at {} is", node.addr),
            )
            .with_metadata(md)
        }
        _ => retry("no leader known: an election is under way, try again".into()),
    }
}

/// What a write or a membership change may fail with.
type WriteError = RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>;

/// Membership changes tried at most while others are in progress.
const MEMBERSHIP_TRIES: usize = 8;

/// `UNAVAILABLE` with the leader trailer empty: the call was refused before it was proposed or
/// read, so the client may send it again (to the node it started from).
fn retry(message: String) -> Status {
    let mut md = Metadata::new();
    md.insert(LEADER_TRAILER, "").expect("a valid key");
    Status::new(Code::Unavailable, message).with_metadata(md)
}

fn write_error(e: WriteError, cluster: u64) -> Status {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => forward(&f, cluster),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            Status::new(Code::FailedPrecondition, e.to_string())
        }
        RaftError::Fatal(f) => stopped(f),
    }
}

fn stopped(f: impl std::fmt::Display) -> Status {
    Status::new(Code::Unavailable, format!("this node's Raft stopped: {f}"))
}

fn undecodable(e: CodecError) -> Status {
    Status::new(
        Code::InvalidArgument,
        format!("a raft message that does not decode: {e}"),
    )
}

impl Shared {
    /// Proposes a command and waits for it to be applied.
    async fn propose<M: Message<'static>>(
        &self,
        op: Op,
        call: &AsyncCall,
        mut request: AsyncRequest<M>,
    ) -> Result<u64, Status> {
        let copied = request.frame().shared().is_none();
        if copied {
            // Shared memory: the request lives in the client's memory; copied (re-encoded)
            // into this session's pool, which is the store's.
            request.detach(call.ctx());
            let len = request.frame().shared().map_or(0, |b| b.len());
            Copies::add(&self.copies.received, len);
        }
        // TCP: the request's own pool buffer, referenced.
        let msg = request.frame().shared().cloned().ok_or_else(|| {
            Status::new(
                Code::Internal,
                "the request could not be copied out of shared memory",
            )
        })?;
        self.write(op, msg, copied).await
    }

    /// Proposes the command `msg` (`copied`: already a buffer of its own) and waits for it
    /// to be applied.
    async fn write(&self, op: Op, mut msg: SharedBuf, copied: bool) -> Result<u64, Status> {
        if msg.len() > self.max_command {
            return Err(Status::new(
                Code::ResourceExhausted,
                format!(
                    "a write of {} bytes is longer than the {} bytes the log replicates in one message",
                    msg.len(),
                    self.max_command
                ),
            ));
        }
        if !copied && msg.len() < REFERENCE_MIN {
            // A small request shares its receive buffer (256 KiB) with the frames read with it,
            // and the log holds its command until the next purge: thousands of small writes
            // held the whole pool, and the leader refused every new connection (issue 27). It
            // gets a buffer of its own size, as a small value does when applied; a large one
            // was read into a buffer of its own and stays referenced.
            Copies::add(&self.copies.received, msg.len());
            msg = self
                .store
                .pool()
                .copy_from(&msg)
                .map_err(|e| Status::new(Code::ResourceExhausted, format!("copying the request: {e}")))?;
        }
        let lease = self.lease_start();
        let resp = self
            .raft
            .client_write(Command { op, msg })
            .await
            .map_err(|e| write_error(e, self.cluster.get()))?;
        // Committed by a quorum that heard from this leader after the lease's start.
        self.renew_lease(lease);
        let Applied(result) = resp.data;
        result.map_err(|e| e.status())
    }

    /// A membership change; while another is still being committed (the joint configuration's
    /// second step, or an operator's concurrent change), waits until that one is applied and
    /// tries again.
    async fn change<F: Future<Output = Result<ClientWriteResponse<TypeConfig>, WriteError>>>(
        &self,
        change: impl Fn() -> F,
    ) -> Result<(), Status> {
        for _ in 0..MEMBERSHIP_TRIES {
            let in_progress = match change().await {
                Ok(_) => return Ok(()),
                Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(
                    ChangeMembershipError::InProgress(p),
                ))) => p.membership_log_id.map(|l| l.index),
                Err(e) => return Err(write_error(e, self.cluster.get())),
            };
            self.raft
                .wait(Some(Duration::from_secs(10)))
                .applied_index_at_least(in_progress, "the membership change in progress")
                .await
                .map_err(|e| Status::new(Code::Unavailable, format!("another membership change: {e}")))?;
        }
        Err(Status::new(
            Code::Unavailable,
            format!("the membership kept changing over {MEMBERSHIP_TRIES} tries; try again"),
        ))
    }

    /// Waits until this node may serve a linearizable read (read-index: the leader confirms
    /// it still leads, and its state machine has applied what was committed when the read came).
    ///
    /// With `--read-lease`, a confirmation (or a committed write) is good for the lease: a read
    /// within it, while this node still leads in the same term, waits only for what is
    /// committed to be applied. The lease starts before the confirmation's heartbeats (or the
    /// write's appends) are sent, so a pause of this process only shortens it, and it is half
    /// the shortest election timeout: a follower that answered them votes for no other node
    /// before its election timeout has passed.
    async fn read_index(&self) -> Result<(), Status> {
        // Only `--read-lease` sets a lease.
        if let Some((term, until)) = self.lease.get() {
            if Instant::now() < until {
                let (now_term, leading, committed) = self
                    .raft
                    .with_raft_state(|st| {
                        let leading = st.server_state == ServerState::Leader;
                        (
                            st.vote_ref().leader_id().term,
                            leading,
                            st.committed.map(|c| c.index),
                        )
                    })
                    .await
                    .map_err(stopped)?;
                if leading && now_term == term {
                    self.raft
                        .wait(Some(Duration::from_secs(10)))
                        .applied_index_at_least(committed, "a read under the lease")
                        .await
                        .map_err(|e| retry(e.to_string()))?;
                    self.reads.lease.fetch_add(1, Relaxed);
                    return Ok(());
                }
            }
        }
        let lease = self.lease_start();
        self.confirm_leadership().await?;
        self.reads.quorum.fetch_add(1, Relaxed);
        self.renew_lease(lease);
        Ok(())
    }

    /// With `--read-lease`, the term and the time before a heartbeat round or a write's appends
    /// that may renew the lease.
    fn lease_start(&self) -> Option<(u64, Instant)> {
        self.read_lease
            .map(|_| (self.raft.metrics().borrow().current_term, Instant::now()))
    }

    /// A quorum has answered this node's heartbeats or appends, sent after `start` in `term`
    /// (read before `start`): the lease runs from `start`. Kept only when the term did not
    /// change meanwhile, so that the term confirmed is `term`.
    fn renew_lease(&self, start: Option<(u64, Instant)>) {
        if let (Some((term, start)), Some(lease)) = (start, self.read_lease) {
            if self.raft.metrics().borrow().current_term == term {
                self.lease.set(Some((term, start + lease)));
            }
        }
    }

    /// openraft's read-index: a heartbeat round confirms this node leads, then its state
    /// machine applies what was committed when the read came.
    async fn confirm_leadership(&self) -> Result<(), Status> {
        self.raft
            .ensure_linearizable()
            .await
            .map(|_| ())
            .map_err(|e| match e {
                RaftError::APIError(openraft::error::CheckIsLeaderError::ForwardToLeader(f)) => {
                    forward(&f, self.cluster.get())
                }
                // No quorum confirmed the leader in time: nothing was read.
                RaftError::APIError(e) => retry(e.to_string()),
                RaftError::Fatal(f) => stopped(f),
            })
    }

    /// Refuses a client that expects another cluster (it followed a redirect to an address
    /// that now serves another cluster's node): `UNAVAILABLE` with an empty leader trailer, so
    /// the client asks its first node again.
    fn check_caller(&self, call: &AsyncCall) -> Result<(), Status> {
        let Some(theirs) = call.metadata().get(CLUSTER_HEADER) else {
            return Ok(());
        };
        let ours = format!("{:016x}", self.cluster.get());
        if theirs == ours.as_bytes() {
            return Ok(());
        }
        let theirs = String::from_utf8_lossy(theirs);
        Err(retry(format!(
            "node {} belongs to cluster {ours}, not to cluster {theirs}",
            self.id
        )))
    }

    /// Refuses a peer of another cluster; a node of none joins the sender's.
    fn check_cluster(&self, theirs: u64) -> Result<(), Status> {
        let ours = self.cluster.get();
        if theirs == 0 || theirs == ours {
            return Ok(());
        }
        if ours == 0 {
            self.db
                .set_cluster(theirs)
                .map_err(|e| Status::new(Code::Internal, format!("recording the cluster id: {e}")))?;
            self.cluster.set(theirs);
            return Ok(());
        }
        let msg = format!(
            "node {} belongs to cluster {ours:016x}, the sender to cluster {theirs:016x}: refused (a data \
             directory of another cluster?)",
            self.id
        );
        tracing::error!("{msg}");
        eprintln!("ferry kv: {msg}");
        Err(Status::new(Code::FailedPrecondition, msg))
    }

    /// A fresh cluster id for a cluster this node forms, unless it already belongs to one.
    pub(crate) fn join_new_cluster(&self) -> Result<(), Status> {
        if self.cluster.get() != 0 {
            return Ok(());
        }
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        h.write_u64(self.id);
        let id = h.finish().max(1);
        self.db
            .set_cluster(id)
            .map_err(|e| Status::new(Code::Internal, format!("recording the cluster id: {e}")))?;
        self.cluster.set(id);
        Ok(())
    }
}

fn reply(ctx: &Context, body: Vec<u8>) -> Result<Encoded, Status> {
    let mut f = RaftFrame::new(ctx);
    f.set_body(body);
    Encoded::message(&f)
}

fn count(ctx: &Context, n: u64) -> Result<Encoded, Status> {
    Encoded::message(&kv::count(ctx, n as usize))
}

/// The replicated `Kv` service.
pub(crate) struct ReplicatedKv(pub(crate) Rc<Shared>);

impl AsyncKv for ReplicatedKv {
    async fn get(&self, call: AsyncCall, request: AsyncRequest<Key<'static>>) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        self.0.read_index().await?;
        Encoded::message(&kv::get(&self.0.store, call.ctx(), request.view()?)?)
    }

    async fn put(&self, call: AsyncCall, request: AsyncRequest<Put<'static>>) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        let view = request.view()?;
        view.key().map_err(kv::bad)?;
        let n = self.0.propose(Op::Put, &call, request).await?;
        count(call.ctx(), n)
    }

    async fn get_m(&self, call: AsyncCall, request: AsyncRequest<Keys<'static>>) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        self.0.read_index().await?;
        Encoded::message(&kv::get_m(&self.0.store, call.ctx(), request.view()?)?)
    }

    async fn get_list(
        &self,
        call: AsyncCall,
        request: AsyncRequest<Key<'static>>,
    ) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        self.0.read_index().await?;
        Encoded::message(&kv::get_list(&self.0.store, call.ctx(), request.view()?)?)
    }

    async fn get_from_list(
        &self,
        call: AsyncCall,
        request: AsyncRequest<ListIndex<'static>>,
    ) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        self.0.read_index().await?;
        Encoded::message(&kv::get_from_list(&self.0.store, call.ctx(), request.view()?)?)
    }

    async fn append(
        &self,
        call: AsyncCall,
        request: AsyncRequest<Append<'static>>,
    ) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        request.view()?.key().map_err(kv::bad)?;
        let n = self.0.propose(Op::Append, &call, request).await?;
        count(call.ctx(), n)
    }

    async fn delete(&self, call: AsyncCall, request: AsyncRequest<Keys<'static>>) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        kv::check_keys(&self.0.store, request.view()?)?;
        let n = self.0.propose(Op::Delete, &call, request).await?;
        count(call.ctx(), n)
    }
}

/// Puts in a benchmark's encoding (`--encoding`): one raw method, [`ENCODED_PUT`]. The payload
/// is decoded once to check it, then proposed as received ([`Op::Encoded`]); the answer is a
/// `Count`, as `Put`'s.
pub(crate) struct EncodedPuts(pub(crate) Rc<Shared>, pub(crate) Arc<dyn PutDecoder>);

impl AsyncService for EncodedPuts {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![MethodInfo {
            path: ENCODED_PUT,
            id: ferry::transport::method_id(ENCODED_PUT),
            request: None,
            mode: Mode::Foreground,
            shape: Shape::Unary,
        }]
    }

    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        let (shared, decoder) = (self.0.clone(), self.1.clone());
        Box::pin(async move {
            shared.check_caller(&call)?;
            let msg =
                request.frame().shared().cloned().ok_or_else(|| {
                    Status::new(Code::Unimplemented, "encoded puts are taken over TCP only")
                })?;
            decoder
                .decode(&msg, &mut |_, _| {})
                .map_err(|e| Status::new(Code::InvalidArgument, format!("an encoded put: {e}")))?;
            let n = shared.write(Op::Encoded, msg, false).await?;
            count(call.ctx(), n)
        })
    }
}

/// The `Raft` service peers call.
pub(crate) struct RaftPeer(pub(crate) Rc<Shared>);

impl AsyncRaft for RaftPeer {
    async fn append_entries(
        &self,
        call: AsyncCall,
        request: AsyncRequest<RaftFrame<'static>>,
    ) -> Result<Encoded, Status> {
        let rpc = {
            let view = request.view()?;
            self.0.check_cluster(view.cluster())?;
            let copies = &self.0.copies;
            let pool = self.0.store.pool();
            let copy_in = |b: &[u8]| {
                Copies::add(&copies.received, b.len());
                pool.copy_from(b).map_err(|e| e.to_string())
            };
            codec::decode_append(view.body(), view.commands().iter(), &copy_in).map_err(undecodable)?
        };
        let resp = self.0.raft.append_entries(rpc).await.map_err(stopped)?;
        reply(call.ctx(), codec::encode_append_response(&resp))
    }

    async fn vote(
        &self,
        call: AsyncCall,
        request: AsyncRequest<RaftFrame<'static>>,
    ) -> Result<Encoded, Status> {
        let rpc = {
            let view = request.view()?;
            self.0.check_cluster(view.cluster())?;
            codec::decode_vote_request(view.body()).map_err(undecodable)?
        };
        let resp = self.0.raft.vote(rpc).await.map_err(stopped)?;
        reply(call.ctx(), codec::encode_vote_response(&resp))
    }

    /// A streamed snapshot (see the proto): the header checked (cluster, encoding, length at
    /// most [`MAX_SNAPSHOT`]), the data gathered up to exactly the length it declared, each
    /// frame within [`SNAPSHOT_FRAME_WAIT`] of the one before, then installed under the leader's
    /// vote.
    async fn install_snapshot(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<RaftFrame<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        let header = {
            let first = next_snapshot_frame(&mut requests)
                .await?
                .ok_or_else(|| Status::new(Code::InvalidArgument, "a snapshot stream without its header"))?;
            let view = first.view()?;
            self.0.check_cluster(view.cluster())?;
            codec::decode_snapshot_header(view.body()).map_err(undecodable)?
        };
        let len = header.len;
        if len > MAX_SNAPSHOT {
            return Err(Status::new(
                Code::ResourceExhausted,
                format!("a snapshot of {len} bytes is longer than the {MAX_SNAPSHOT} bytes a node keeps"),
            ));
        }
        let mut data = Vec::with_capacity(len.min(SNAPSHOT_RESERVE) as usize);
        while let Some(frame) = next_snapshot_frame(&mut requests).await? {
            let view = frame.view()?;
            let piece = view.body();
            if (data.len() + piece.len()) as u64 > len {
                return Err(Status::new(
                    Code::InvalidArgument,
                    format!(
                        "snapshot {}: more data than the {len} bytes its header declared",
                        header.meta.snapshot_id
                    ),
                ));
            }
            data.extend_from_slice(piece);
        }
        if data.len() as u64 != len {
            return Err(Status::new(
                Code::InvalidArgument,
                format!(
                    "snapshot {}: the stream ended after {} of the {len} bytes its header declared",
                    header.meta.snapshot_id,
                    data.len()
                ),
            ));
        }
        let snapshot = Snapshot {
            meta: header.meta,
            snapshot: Box::new(Cursor::new(data)),
        };
        let resp = self
            .0
            .raft
            .install_full_snapshot(header.vote, snapshot)
            .await
            .map_err(stopped)?;
        let mut answer = RaftFrame::new(call.ctx());
        answer.set_body(codec::encode_snapshot_response(&resp));
        responses.send(&answer).await
    }
}

/// The longest snapshot a node takes from a peer: what one redb value holds (a node keeps its
/// snapshot as one), 3 GiB.
const MAX_SNAPSHOT: u64 = 3 << 30;

/// The most a node sets aside for a snapshot before its data arrives: a header's length is
/// the peer's word, so memory beyond this is taken only as the data comes.
const SNAPSHOT_RESERVE: u64 = 64 << 20;

/// How long a node waits for a snapshot stream's next frame before giving the stream up (and
/// the memory it took): a leader that stopped, or a peer that stalls on purpose.
const SNAPSHOT_FRAME_WAIT: Duration = Duration::from_secs(10);

/// The next frame of a snapshot stream, `None` at its end.
async fn next_snapshot_frame(
    requests: &mut RequestStream<RaftFrame<'static>>,
) -> Result<Option<AsyncRequest<RaftFrame<'static>>>, Status> {
    tokio::time::timeout(SNAPSHOT_FRAME_WAIT, requests.message())
        .await
        .map_err(|_| {
            Status::new(
                Code::DeadlineExceeded,
                format!("no frame of the snapshot stream for {SNAPSHOT_FRAME_WAIT:?}"),
            )
        })?
}

/// The `Cluster` service operators call.
pub(crate) struct ClusterAdmin(pub(crate) Rc<Shared>);

impl AsyncCluster for ClusterAdmin {
    async fn init(
        &self,
        call: AsyncCall,
        request: AsyncRequest<Members<'static>>,
    ) -> Result<Encoded, Status> {
        let text = request.view()?.members().map_err(kv::bad)?.to_string();
        let members = match (text.is_empty(), &self.0.peers) {
            (true, Some(peers)) => peers.clone(),
            (true, None) => {
                return Err(Status::new(
                    Code::InvalidArgument,
                    "no members named, and the node has no --peers",
                ));
            }
            (false, _) => parse_members(&text).map_err(|e| Status::new(Code::InvalidArgument, e))?,
        };
        if !members.contains_key(&self.0.id) {
            return Err(Status::new(
                Code::InvalidArgument,
                format!(
                    "the members do not include node {} (the node asked to form the cluster)",
                    self.0.id
                ),
            ));
        }
        if self.0.raft.is_initialized().await.map_err(stopped)? {
            return Err(Status::new(
                Code::AlreadyExists,
                format!("node {} is already in a cluster", self.0.id),
            ));
        }
        self.0.join_new_cluster()?;
        self.0.raft.initialize(members).await.map_err(|e| match e {
            RaftError::APIError(InitializeError::NotAllowed(e)) => {
                Status::new(Code::AlreadyExists, e.to_string())
            }
            RaftError::APIError(e) => Status::new(Code::InvalidArgument, e.to_string()),
            RaftError::Fatal(f) => stopped(f),
        })?;
        Encoded::message(&Empty::new(call.ctx()))
    }

    async fn add_node(
        &self,
        call: AsyncCall,
        request: AsyncRequest<NodeRef<'static>>,
    ) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        let (id, addr) = {
            let v = request.view()?;
            (v.id(), v.addr().map_err(kv::bad)?.to_string())
        };
        if id == 0 || addr.is_empty() {
            return Err(Status::new(
                Code::InvalidArgument,
                "add-node needs an id (from 1) and an address",
            ));
        }
        // As a learner first: it catches up (from the log or a snapshot) before it votes.
        let node = BasicNode { addr };
        self.0
            .change(|| self.0.raft.add_learner(id, node.clone(), true))
            .await?;
        let voters = ChangeMembers::AddVoterIds(BTreeSet::from([id]));
        self.0
            .change(|| self.0.raft.change_membership(voters.clone(), false))
            .await?;
        Encoded::message(&Empty::new(call.ctx()))
    }

    async fn remove_node(
        &self,
        call: AsyncCall,
        request: AsyncRequest<NodeRef<'static>>,
    ) -> Result<Encoded, Status> {
        self.0.check_caller(&call)?;
        let id = request.view()?.id();
        let voters = ChangeMembers::RemoveVoters(BTreeSet::from([id]));
        self.0
            .change(|| self.0.raft.change_membership(voters.clone(), false))
            .await?;
        Encoded::message(&Empty::new(call.ctx()))
    }

    async fn status(&self, call: AsyncCall, _: AsyncRequest<Empty<'static>>) -> Result<Encoded, Status> {
        let committed = self
            .0
            .raft
            .with_raft_state(|st| st.committed.map(|c| c.index))
            .await
            .map_err(stopped)?;
        let m = self.0.raft.metrics().borrow().clone();
        let mut s = ClusterStatus::new(call.ctx());
        s.set_id(self.0.id);
        let membership = m.membership_config.membership();
        if let Some(leader) = m.current_leader {
            s.set_leader(leader);
            if let Some(node) = membership.get_node(&leader) {
                s.set_leader_addr(node.addr.clone());
            }
        }
        s.set_term(m.current_term);
        s.set_commit_index(committed.unwrap_or(0));
        s.set_applied_index(m.last_applied.map_or(0, |l| l.index));
        let voters: BTreeSet<_> = membership.voter_ids().collect();
        let nodes: Vec<_> = membership.nodes().collect();
        s.set_members(format_members(
            nodes.iter().copied().filter(|(id, _)| voters.contains(id)),
        ));
        s.set_learners(format_members(
            nodes.iter().copied().filter(|(id, _)| !voters.contains(id)),
        ));
        s.set_state(match m.state {
            ServerState::Leader => "leader",
            ServerState::Follower => "follower",
            ServerState::Candidate => "candidate",
            ServerState::Learner => "learner",
            ServerState::Shutdown => "shutdown",
        });
        s.set_cluster(self.0.cluster.get());
        s.set_commands(self.0.copies.commands.load(std::sync::atomic::Ordering::Relaxed));
        s.set_bytes_copied(self.0.copies.total());
        s.set_snapshot_index(m.snapshot.map_or(0, |l| l.index));
        Encoded::message(&s)
    }
}
