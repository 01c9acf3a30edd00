//! A node's own series on its server's `/metrics` (`ferry kv serve --metrics ADDR`): its Raft
//! state and the bytes it copied for replicated writes, read at each scrape.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `ferry_kv_term` | gauge | |
//! | `ferry_kv_leader` | gauge: the leader's id (0: none known) | |
//! | `ferry_kv_commit_index` | gauge: the last committed entry (as of the last change of the node's Raft state; never below the applied index) | |
//! | `ferry_kv_applied_index` | gauge | |
//! | `ferry_kv_commands_applied_total` | counter: normal entries applied | |
//! | `ferry_kv_copied_bytes_total` | counter: bytes copied in user space for them | `stage` (`received`, `logged`, `applied`) |
//! | `ferry_kv_reads_total` | counter: linearizable reads this node served | `by` (`quorum`: confirmed by a heartbeat round; `lease`: under `--read-lease`) |
//!
//! The server's own families (`ferry_rpc_*`: calls, connections and why they were closed,
//! pools) come first on the same endpoint.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use openraft::{BasicNode, RaftMetrics};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tokio::sync::watch;

use super::{Copies, NodeId, Raft};

/// Reads the node's state at each scrape (from the endpoint's thread).
#[derive(Debug)]
struct NodeCollector {
    raft: watch::Receiver<RaftMetrics<NodeId, BasicNode>>,
    /// openraft's metrics do not carry the commit index: [`watch_commits`] keeps it here.
    committed: Arc<AtomicU64>,
    copies: Arc<Copies>,
    reads: Arc<Reads>,
}

/// The reads a node served, by how it knew it still led.
#[derive(Debug, Default)]
pub(crate) struct Reads {
    /// After a heartbeat round a quorum answered (read-index).
    pub(crate) quorum: AtomicU64,
    /// Under the lease an earlier round gave (`--read-lease`).
    pub(crate) lease: AtomicU64,
}

impl Collector for NodeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let (term, leader, applied) = {
            let m = self.raft.borrow();
            (
                m.current_term,
                m.current_leader.unwrap_or(0),
                m.last_applied.map_or(0, |l| l.index),
            )
        };
        let gauges = [
            ("ferry_kv_term", "The node's Raft term", term),
            ("ferry_kv_leader", "The leader's id (0: none known)", leader),
            (
                "ferry_kv_commit_index",
                "The index of the last committed entry",
                // What is applied was committed, whether or not the watcher has read it yet.
                self.committed.load(Relaxed).max(applied),
            ),
            (
                "ferry_kv_applied_index",
                "The index of the last applied entry",
                applied,
            ),
        ];
        for (name, help, value) in gauges {
            encoder
                .encode_descriptor(name, help, None, MetricType::Gauge)?
                .encode_gauge(&value)?;
        }
        encoder
            .encode_descriptor(
                "ferry_kv_commands_applied",
                "Normal log entries (writes) applied",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&self.copies.commands.load(Relaxed), None)?;
        let mut copied = encoder.encode_descriptor(
            "ferry_kv_copied",
            "Bytes copied in user space for replicated writes, by stage",
            Some(&Unit::Bytes),
            MetricType::Counter,
        )?;
        let stages = [
            ("received", &self.copies.received),
            ("logged", &self.copies.logged),
            ("applied", &self.copies.applied),
        ];
        for (stage, bytes) in stages {
            copied
                .encode_family(&[("stage", stage)])?
                .encode_counter::<NoLabelSet, _, u64>(&bytes.load(Relaxed), None)?;
        }
        let mut reads = encoder.encode_descriptor(
            "ferry_kv_reads",
            "Linearizable reads served, by how the leader knew it still led",
            None,
            MetricType::Counter,
        )?;
        for (by, n) in [("quorum", &self.reads.quorum), ("lease", &self.reads.lease)] {
            reads
                .encode_family(&[("by", by)])?
                .encode_counter::<NoLabelSet, _, u64>(&n.load(Relaxed), None)?;
        }
        Ok(())
    }
}

/// The node's families, for [`Metrics::extend`](ferry::rpc::Metrics::extend). Spawns (on the
/// current `LocalSet`) the task that follows the commit index.
pub(crate) fn registry(raft: &Raft, copies: Arc<Copies>, reads: Arc<Reads>) -> Registry {
    let committed = Arc::new(AtomicU64::new(0));
    tokio::task::spawn_local(watch_commits(raft.clone(), committed.clone()));
    let mut registry = Registry::default();
    registry.register_collector(Box::new(NodeCollector {
        raft: raft.metrics(),
        committed,
        copies,
        reads,
    }));
    registry
}

/// Reads the commit index after each change of the node's Raft metrics (an entry is applied
/// after it is committed, so a commit is followed by a change), until the node stops.
async fn watch_commits(raft: Raft, committed: Arc<AtomicU64>) {
    let mut changes = raft.metrics();
    loop {
        match raft
            .with_raft_state(|st| st.committed.map_or(0, |c| c.index))
            .await
        {
            Ok(index) => committed.store(index, Relaxed),
            Err(_) => return,
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}
