//! The log, the vote and the last snapshot in redb, and the state machine.
//!
//! One redb database per node: `DIR/raft.redb` (in memory with `--sync none`). Its tables:
//! `log` (index → entry, [`codec`]'s encoding, the command inline) and `meta` (the node id the
//! directory belongs to, the vote, the committed and purged log ids, the snapshot). redb gives
//! crash-safe transactions with one fsync per commit (`Durability::Immediate`) or none
//! (`Durability::None`, persisted by the next durable commit), which is exactly what `--sync`
//! chooses between; no segment format or recovery code of our own.
//!
//! The log since the last purge is also kept in memory, the entries as they were appended, so
//! the leader replicates a command from the buffer it was received in; redb is read once, when
//! the node starts.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Cursor;
use std::ops::RangeBounds;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use ferry::wire::Message;
use ferry_buf::SharedBuf;
use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftLogReader, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StorageIOError, StoredMembership, Vote,
};
use redb::{Database, Durability, ReadableTable, TableDefinition};

use super::codec::{self, CodecError};
use super::{Applied, Command, Copies, NodeId, Op, PutDecoder, Sync, TypeConfig};
use crate::proto::ferry::kv::{Append, Keys, Put};
use crate::{Store, Value};

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// Why a data directory cannot be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// redb failed.
    #[error("{path}: {source}")]
    Db {
        /// The database file.
        path: String,
        /// What redb said.
        source: redb::Error,
    },
    /// The directory holds another node's state.
    #[error(
        "{path} belongs to node {found}, not node {id}: start node {found} with it, or give node {id} a \
         directory of its own"
    )]
    OtherNode {
        /// The database file.
        path: String,
        /// The id given.
        id: NodeId,
        /// The id stored.
        found: NodeId,
    },
    /// Stored bytes do not decode.
    #[error("{path}: {source}")]
    Corrupt {
        /// The database file.
        path: String,
        /// Where.
        source: CodecError,
    },
}

/// The database and how commits are made durable.
#[derive(Debug)]
pub(crate) struct Db {
    db: Database,
    sync: Sync,
    path: String,
}

impl Db {
    /// Opens (or creates) `DIR/raft.redb`, or an in-memory database with [`Sync::None`], for
    /// node `id`: a directory written by another node is refused.
    pub(crate) fn open(dir: &Path, id: NodeId, sync: Sync) -> Result<Db, OpenError> {
        let file = dir.join("raft.redb");
        let path = file.display().to_string();
        let db_err = |e: redb::Error| OpenError::Db {
            path: path.clone(),
            source: e,
        };
        let db = if sync == Sync::None {
            Database::builder().create_with_backend(redb::backends::InMemoryBackend::new())
        } else {
            std::fs::create_dir_all(dir).map_err(|e| db_err(redb::StorageError::Io(e).into()))?;
            Database::create(&file)
        }
        .map_err(|e| db_err(e.into()))?;
        let db = Db {
            db,
            sync,
            path: path.clone(),
        };
        match db.meta("node_id").map_err(db_err)? {
            Some(b) => {
                let found = u64::from_le_bytes(b.as_slice().try_into().map_err(|_| OpenError::Corrupt {
                    path: db.path.clone(),
                    source: CodecError {
                        what: "node id",
                        offset: 0,
                        why: format!("{} bytes, expected 8", b.len()),
                    },
                })?);
                if found != id {
                    return Err(OpenError::OtherNode {
                        path: db.path.clone(),
                        id,
                        found,
                    });
                }
            }
            None => db
                .write(true, |tx| {
                    tx.open_table(LOG)?;
                    tx.open_table(META)?
                        .insert("node_id", id.to_le_bytes().as_slice())?;
                    Ok(())
                })
                .map_err(db_err)?,
        }
        Ok(db)
    }

    /// Commits what `f` writes: with one fsync if `durable` and the mode keeps a file.
    fn write(
        &self,
        durable: bool,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::Error>,
    ) -> Result<(), redb::Error> {
        let mut tx = self.db.begin_write()?;
        // In memory (`--sync none`) every commit is "durable": it costs no fsync there, and
        // redb frees a transaction's pages only at a durable commit, so a log that was purged
        // would otherwise keep every page it ever had.
        let durable = durable || self.sync == Sync::None;
        tx.set_durability(if durable {
            Durability::Immediate
        } else {
            Durability::None
        });
        f(&tx)?;
        tx.commit()?;
        Ok(())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, redb::Error> {
        let tx = self.db.begin_read()?;
        let table = match tx.open_table(META) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(table.get(key)?.map(|v| v.value().to_vec()))
    }

    fn set_meta(&self, durable: bool, pairs: &[(&str, &[u8])]) -> Result<(), redb::Error> {
        self.write(durable, |tx| {
            let mut t = tx.open_table(META)?;
            for (k, v) in pairs {
                t.insert(*k, *v)?;
            }
            Ok(())
        })
    }

    /// The cluster id this node joined (0: none yet).
    pub(crate) fn cluster(&self) -> Result<u64, redb::Error> {
        Ok(self
            .meta("cluster")?
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .unwrap_or(0))
    }

    /// Records the cluster this node joined.
    pub(crate) fn set_cluster(&self, cluster: u64) -> Result<(), redb::Error> {
        self.set_meta(true, &[("cluster", &cluster.to_le_bytes())])
    }
}

fn redb_read(e: impl Into<redb::Error>) -> StorageError<NodeId> {
    StorageIOError::read(&e.into()).into()
}

fn redb_write(e: impl Into<redb::Error>) -> StorageError<NodeId> {
    StorageIOError::write(&e.into()).into()
}

/// Appends waiting for the fsync of their window (`--sync batch`).
#[derive(Default)]
struct GroupCommit {
    pending: RefCell<Vec<LogFlushed<TypeConfig>>>,
    wake: tokio::sync::Notify,
}

/// The log store: redb, and the unpurged log in memory.
#[derive(Clone)]
pub(crate) struct LogStore {
    db: Rc<Db>,
    log: Rc<RefCell<BTreeMap<u64, Entry<TypeConfig>>>>,
    purged: Rc<RefCell<Option<LogId<NodeId>>>>,
    group: Option<Rc<GroupCommit>>,
    copies: Arc<Copies>,
}

impl LogStore {
    /// Reads the log from `db` (commands copied into `store`'s pool); spawns the group commit
    /// task with `--sync batch` (call inside a `LocalSet`).
    pub(crate) fn open(db: Rc<Db>, store: &Store, copies: Arc<Copies>) -> Result<LogStore, OpenError> {
        let corrupt = |source| OpenError::Corrupt {
            path: db.path.clone(),
            source,
        };
        let db_err = |e: redb::Error| OpenError::Db {
            path: db.path.clone(),
            source: e,
        };
        let purged = match db.meta("purged").map_err(db_err)? {
            Some(b) => codec::decode_log_id(&b).map_err(corrupt)?,
            None => None,
        };
        let mut log = BTreeMap::new();
        {
            let tx = db.db.begin_read().map_err(|e| db_err(e.into()))?;
            let table = tx.open_table(LOG).map_err(|e| db_err(e.into()))?;
            let copy_in = |b: &[u8]| store.pool().copy_from(b).map_err(|e| e.to_string());
            for row in table.iter().map_err(|e| db_err(e.into()))? {
                let (k, v) = row.map_err(|e| db_err(e.into()))?;
                let entry = codec::decode_entry(v.value(), &copy_in).map_err(corrupt)?;
                log.insert(k.value(), entry);
            }
        }
        let group = match db.sync {
            Sync::Batch(window) => {
                let group = Rc::new(GroupCommit::default());
                tokio::task::spawn_local(group_commit(db.clone(), group.clone(), window));
                Some(group)
            }
            _ => None,
        };
        Ok(LogStore {
            db,
            log: Rc::new(RefCell::new(log)),
            purged: Rc::new(RefCell::new(purged)),
            group,
            copies,
        })
    }
}

/// `--sync batch`: once appends wait, one durable commit after the window acknowledges them all.
async fn group_commit(db: Rc<Db>, group: Rc<GroupCommit>, window: std::time::Duration) {
    loop {
        group.wake.notified().await;
        tokio::time::sleep(window).await;
        let waiting = std::mem::take(&mut *group.pending.borrow_mut());
        let result = db.write(true, |_| Ok(()));
        for flushed in waiting {
            flushed.log_io_completed(
                result
                    .as_ref()
                    .map(|_| ())
                    .map_err(|e| std::io::Error::other(e.to_string())),
            );
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        Ok(self.log.borrow().range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let purged = *self.purged.borrow();
        let last = self
            .log
            .borrow()
            .last_key_value()
            .map(|(_, e)| e.log_id)
            .or(purged);
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        self.db
            .set_meta(true, &[("vote", &codec::encode_vote(vote))])
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        match self.db.meta("vote").map_err(|e| StorageIOError::read_vote(&e))? {
            None => Ok(None),
            Some(b) => codec::decode_vote(&b)
                .map(Some)
                .map_err(|e| StorageIOError::read_vote(&e).into()),
        }
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StorageResult<()> {
        // Durable with `--sync always`, before the entries are applied and acknowledged: the
        // state machine lives in memory, and a node restarted from a stale commit index would
        // answer reads from a state before writes it acknowledged. openraft restores a node
        // whose stored vote made it leader as leader at once, without an election or a new
        // entry, and its read index is then this commit index (issue 27: every node killed
        // -9 together, the first read after the restart missed the last two acknowledged
        // writes).
        self.db
            .set_meta(
                self.db.sync == Sync::Always,
                &[("committed", &codec::encode_log_id(&committed))],
            )
            .map_err(redb_write)
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<NodeId>>> {
        match self.db.meta("committed").map_err(redb_read)? {
            None => Ok(None),
            Some(b) => codec::decode_log_id(&b).map_err(|e| StorageIOError::read(&e).into()),
        }
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        let durable = self.db.sync == Sync::Always;
        self.db
            .write(durable, |tx| {
                let mut t = tx.open_table(LOG)?;
                for e in &entries {
                    if let EntryPayload::Normal(c) = &e.payload {
                        Copies::add(&self.copies.logged, c.msg.len());
                    }
                    t.insert(e.log_id.index, codec::encode_entry(e).as_slice())?;
                }
                Ok(())
            })
            .map_err(|e| StorageIOError::write_logs(&e))?;
        let mut log = self.log.borrow_mut();
        for e in entries {
            log.insert(e.log_id.index, e);
        }
        match &self.group {
            Some(group) => {
                group.pending.borrow_mut().push(callback);
                group.wake.notify_one();
            }
            None => callback.log_io_completed(Ok(())),
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        self.db
            .write(self.db.sync == Sync::Always, |tx| {
                tx.open_table(LOG)?.retain_in(log_id.index.., |_, _| false)?;
                Ok(())
            })
            .map_err(|e| StorageIOError::write_logs(&e))?;
        self.log.borrow_mut().split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        self.db
            .write(self.db.sync == Sync::Always, |tx| {
                tx.open_table(META)?
                    .insert("purged", codec::encode_log_id(&Some(log_id)).as_slice())?;
                tx.open_table(LOG)?.retain_in(..=log_id.index, |_, _| false)?;
                Ok(())
            })
            .map_err(|e| StorageIOError::write_logs(&e))?;
        let mut log = self.log.borrow_mut();
        *log = log.split_off(&(log_id.index + 1));
        *self.purged.borrow_mut() = Some(log_id);
        Ok(())
    }
}

/// Values at least this long are stored by reference into their log entry's command instead
/// of copied when applied (a receive buffer in a leader, the command's own copy in a follower);
/// a leader copies a request shorter than this out of its receive buffer before proposing it.
pub(crate) const REFERENCE_MIN: usize = 16 << 10;

/// What has been applied to the store.
#[derive(Debug, Default)]
struct AppliedState {
    last: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, BasicNode>,
    snapshots: u64,
}

/// The state machine: the store, and what was applied to it.
#[derive(Clone)]
pub(crate) struct StateMachine {
    store: Arc<Store>,
    db: Rc<Db>,
    state: Rc<RefCell<AppliedState>>,
    copies: Arc<Copies>,
    /// Decodes [`Op::Encoded`] puts (`--encoding`).
    encoding: Option<Arc<dyn PutDecoder>>,
}

impl StateMachine {
    /// The store as of the last snapshot in `db` (empty without one).
    pub(crate) fn open(
        db: Rc<Db>,
        store: Arc<Store>,
        copies: Arc<Copies>,
        encoding: Option<Arc<dyn PutDecoder>>,
    ) -> Result<StateMachine, OpenError> {
        let sm = StateMachine {
            store,
            db,
            state: Rc::default(),
            copies,
            encoding,
        };
        let db_err = |e: redb::Error| OpenError::Db {
            path: sm.db.path.clone(),
            source: e,
        };
        if let (Some(meta), Some(data)) = (
            sm.db.meta("snapshot_meta").map_err(db_err)?,
            sm.db.meta("snapshot_data").map_err(db_err)?,
        ) {
            let corrupt = |source| OpenError::Corrupt {
                path: sm.db.path.clone(),
                source,
            };
            let meta = codec::Reader::new(&meta, "snapshot meta")
                .snapshot_meta()
                .map_err(corrupt)?;
            sm.load(&meta, &data).map_err(corrupt)?;
        }
        Ok(sm)
    }

    /// Replaces the store's contents with a snapshot's.
    fn load(&self, meta: &SnapshotMeta<NodeId, BasicNode>, data: &[u8]) -> Result<(), CodecError> {
        self.store.clear();
        let pool = self.store.pool();
        codec::read_snapshot(data, |key, kind, parts| {
            let mut bufs = Vec::with_capacity(parts.len());
            for p in parts {
                bufs.push(pool.copy_from(p).map_err(|e| e.to_string())?);
            }
            let value = match (kind, bufs.len()) {
                (0, 1) => Value::Single(bufs.pop().expect("one buffer")),
                (1, _) => Value::Vector(bufs.into_boxed_slice()),
                (2, _) => Value::List(bufs.into_iter().collect()),
                (k, n) => return Err(format!("value kind {k} with {n} buffers")),
            };
            self.store.put_value(key, value).map_err(|e| e.to_string())
        })?;
        let mut st = self.state.borrow_mut();
        st.last = meta.last_log_id;
        st.membership = meta.last_membership.clone();
        Ok(())
    }

    /// Applies one command; a command that does not decode (only a faulty leader sends one:
    /// the leader checks every request before it proposes it) changes nothing.
    fn execute(&self, c: &Command) -> Applied {
        Copies::add(&self.copies.commands, 1);
        match self.try_execute(c) {
            Ok(applied) => Applied(applied),
            Err(e) => {
                tracing::error!("a {:?} command in the log does not decode: {e}", c.op);
                Applied(Ok(0))
            }
        }
    }

    fn try_execute(&self, c: &Command) -> Result<Result<u64, crate::StoreError>, Box<dyn std::error::Error>> {
        let copied = |n: usize| Copies::add(&self.copies.applied, n);
        Ok(match c.op {
            Op::Put => {
                let v = Put::decode_shared(&c.msg)?;
                let parts: Vec<&[u8]> = v.values().iter().collect();
                self.put(&c.msg, v.key()?.as_bytes(), &parts)
            }
            Op::Encoded => {
                let decoder = self
                    .encoding
                    .as_deref()
                    .ok_or("a put in a benchmark's encoding, and this node serves none (--encoding)")?;
                let mut applied = Ok(0);
                decoder.decode(&c.msg, &mut |key, value| {
                    applied = self.put(&c.msg, key, &[value])
                })?;
                applied
            }
            Op::Append => {
                let v = Append::decode_shared(&c.msg)?;
                let key = v.key()?;
                copied(v.value().len());
                self.store.append(key.as_bytes(), v.value()).map(|n| n as u64)
            }
            Op::Delete => {
                let v = Keys::decode_shared(&c.msg)?;
                let mut n = 0;
                for k in v.keys().iter() {
                    n += u64::from(self.store.delete(k));
                }
                Ok(n)
            }
        })
    }

    /// Stores `parts` under `key`. Large values stay where the command `msg` holds them:
    /// counted references into its buffer, no copy. Small ones (and values not read in place)
    /// are copied, so that a small value does not keep a whole receive buffer (a leader's may
    /// hold many small frames) alive.
    fn put(&self, msg: &SharedBuf, key: &[u8], parts: &[&[u8]]) -> Result<u64, crate::StoreError> {
        let n = parts.len() as u64;
        let referenced: Option<Vec<SharedBuf>> = match parts.iter().all(|p| p.len() >= REFERENCE_MIN) {
            true => parts.iter().map(|p| msg.slice_ref(p)).collect(),
            false => None,
        };
        match referenced {
            Some(mut bufs) => {
                let value = match bufs.len() {
                    1 => Value::Single(bufs.pop().expect("one buffer")),
                    _ => Value::Vector(bufs.into_boxed_slice()),
                };
                self.store.put_value(key, value).map(|()| n)
            }
            None => {
                parts
                    .iter()
                    .for_each(|p| Copies::add(&self.copies.applied, p.len()));
                self.store.put(key, parts).map(|()| n)
            }
        }
    }

    /// The store's contents, as a snapshot holds them.
    fn snapshot_data(&self) -> Vec<u8> {
        let mut w = codec::SnapshotWriter::default();
        let mut parts: Vec<SharedBuf> = Vec::new();
        self.store.for_each_entry(|key, value| {
            parts.clear();
            value.for_each(|b| parts.push(b.clone()));
            let kind = match value {
                Value::Single(_) => 0,
                Value::Vector(_) => 1,
                Value::List(_) => 2,
            };
            let slices: Vec<&[u8]> = parts.iter().map(|b| &b[..]).collect();
            w.add(key, kind, &slices);
        });
        w.finish()
    }

    fn save_snapshot(&self, meta: &SnapshotMeta<NodeId, BasicNode>, data: &[u8]) -> StorageResult<()> {
        let mut w = codec::Writer::new();
        w.snapshot_meta(meta);
        self.db
            .set_meta(true, &[("snapshot_meta", &w.finish()), ("snapshot_data", data)])
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e).into())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        // No await between reading what was applied and reading the store: on this one thread
        // nothing is applied in between, so the snapshot holds exactly what `last` says.
        let (last, membership, n) = {
            let mut st = self.state.borrow_mut();
            st.snapshots += 1;
            (st.last, st.membership.clone(), st.snapshots)
        };
        let data = self.snapshot_data();
        let snapshot_id = match last {
            Some(l) => format!("{}-{}-{n}", l.leader_id, l.index),
            None => format!("none-{n}"),
        };
        let meta = SnapshotMeta {
            last_log_id: last,
            last_membership: membership,
            snapshot_id,
        };
        self.save_snapshot(&meta, &data)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>)> {
        let st = self.state.borrow();
        Ok((st.last, st.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Applied>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut out = Vec::new();
        for e in entries {
            let applied = match &e.payload {
                EntryPayload::Blank => Applied(Ok(0)),
                EntryPayload::Normal(c) => self.execute(c),
                EntryPayload::Membership(m) => {
                    self.state.borrow_mut().membership = StoredMembership::new(Some(e.log_id), m.clone());
                    Applied(Ok(0))
                }
            };
            self.state.borrow_mut().last = Some(e.log_id);
            out.push(applied);
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> StateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StorageResult<()> {
        let data = snapshot.into_inner();
        self.load(meta, &data)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        self.save_snapshot(meta, &data)
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let meta = self.db.meta("snapshot_meta").map_err(redb_read)?;
        let data = self.db.meta("snapshot_data").map_err(redb_read)?;
        let (Some(meta), Some(data)) = (meta, data) else {
            return Ok(None);
        };
        let meta = codec::Reader::new(&meta, "snapshot meta")
            .snapshot_meta()
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use openraft::testing::{StoreBuilder, Suite};

    use super::*;

    /// A scratch data directory, removed when the suite drops it.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Fresh stores over a fresh redb file each (`--sync always`).
    struct Builder;

    impl StoreBuilder<TypeConfig, LogStore, StateMachine, Scratch> for Builder {
        async fn build(&self) -> Result<(Scratch, LogStore, StateMachine), StorageError<NodeId>> {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "ferry-kv-suite-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            let open = |e: OpenError| StorageError::from(StorageIOError::<NodeId>::read(&e));
            let db = Rc::new(Db::open(&dir, 1, Sync::Always).map_err(open)?);
            let store = Arc::new(Store::new(
                super::super::test_pool(),
                crate::StoreConfig::default(),
            ));
            let copies = Arc::new(Copies::default());
            let log = LogStore::open(db.clone(), &store, copies.clone()).map_err(open)?;
            let sm = StateMachine::open(db, store, copies, None).map_err(open)?;
            Ok((Scratch(dir), log, sm))
        }
    }

    /// Set by [`the_commit_index_survives_a_crash`] for the child process it starts: the data
    /// directory the child saves a commit index in before it exits as a kill -9 would leave it.
    const CRASH_CHILD: &str = "FERRY_KV_CRASH_CHILD_DIR";

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    fn log_store(dir: &Path) -> LogStore {
        let db = Rc::new(Db::open(dir, 1, Sync::Always).expect("open the data directory"));
        let store = Store::new(super::super::test_pool(), crate::StoreConfig::default());
        LogStore::open(db, &store, Arc::new(Copies::default())).expect("open the log")
    }

    /// With `--sync always` the commit index saved before entries are applied (and their
    /// writes acknowledged) is on disk when the process dies without a clean shutdown: a child
    /// process saves it and exits at once (no destructor runs, as with kill -9), and the
    /// parent reads it back.
    #[test]
    fn the_commit_index_survives_a_crash() {
        let committed = Some(LogId::new(openraft::CommittedLeaderId::new(3, 1), 42));
        if let Some(dir) = std::env::var_os(CRASH_CHILD) {
            let mut log = log_store(Path::new(&dir));
            block_on(log.save_committed(committed)).expect("save");
            // Still open: exit runs no destructor, so redb does not shut down cleanly.
            std::process::exit(0);
        }
        let dir = Scratch(std::env::temp_dir().join(format!("ferry-kv-crash-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&dir.0);
        let child = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "raft::storage::tests::the_commit_index_survives_a_crash",
            ])
            .env(CRASH_CHILD, &dir.0)
            .output()
            .expect("run the child");
        assert!(child.status.success(), "the child failed: {child:?}");
        let read = block_on(log_store(&dir.0).read_committed()).expect("read");
        assert_eq!(read, committed, "the commit index saved before the crash");
    }

    /// With `--sync none` the database lives in memory and no commit is made durable, and redb
    /// frees a transaction's pages only at a durable commit: a purged log's pages were never
    /// reused, the in-memory file grew by every entry ever appended, and its copies on growth
    /// stalled the node for seconds, long enough to lose its leadership (issue 27, `ferry bench
    /// raft` at 64 KiB). Entries appended and purged in a loop must leave the pages bounded by
    /// what the log still holds.
    #[test]
    fn a_purged_log_gives_its_pages_back_in_memory() {
        let db = Db::open(Path::new("/nonexistent"), 1, Sync::None).expect("in memory");
        let entry = vec![5u8; 32 << 10];
        let (rounds, per_round, kept) = (6u64, 32u64, 8u64);
        for i in 0..rounds * per_round {
            db.write(true, |tx| {
                tx.open_table(LOG)?.insert(i, entry.as_slice())?;
                Ok(())
            })
            .expect("append");
            if i % per_round == per_round - 1 {
                db.write(true, |tx| {
                    tx.open_table(LOG)?.retain_in(..=i - kept, |_, _| false)?;
                    Ok(())
                })
                .expect("purge");
            }
        }
        let tx = db.db.begin_write().expect("a transaction");
        let stats = tx.stats().expect("stats");
        let allocated = stats.allocated_pages() * stats.page_size() as u64;
        let appended = rounds * per_round * entry.len() as u64;
        // What the log holds is `kept` entries (a page per entry is twice its size); the rest
        // allows for the pages of the last round, which redb frees a commit or two later.
        let bound = 4 * (per_round + kept) * entry.len() as u64;
        assert!(
            allocated <= bound,
            "{allocated} bytes of pages allocated after {appended} bytes appended and all but \
             {kept} entries purged (at most {bound})"
        );
    }

    /// openraft's own conformance suite for log stores and state machines: votes, appends,
    /// truncation, purges, log state after each, snapshots and membership.
    #[test]
    fn passes_openraft_storage_suite() {
        Suite::test_all(Builder).expect("the suite passes");
    }
}
