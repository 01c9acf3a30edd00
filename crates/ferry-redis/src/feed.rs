//! The propagation feed: every change to the dataset as the commands Redis 7.0 would
//! propagate, encoded once as RESP (`SELECT` when the database changes, transactions wrapped
//! in `MULTI`/`EXEC`), and handed to each attached sink. A replica's connection
//! (`SYNC`/`PSYNC`) is a sink today; an AOF writer is the same stream into a file.
//!
//! What goes in is decided by [`cmd::replication`](crate::cmd::replication) (which command, in
//! which rewritten form); this module only frames and fans out bytes, and never does I/O: a
//! sink's bytes wait in [`Feed::take`] for the loop that owns it, which the feed wakes through
//! the notifier the server installs ([`Feed::set_notify`]).
//!
//! ```text
//!  cmd::execute ─► propagate::after_command ─► Feed::command(db, args) ─► sink buffers ─► notify
//!                                                                          ▲ take(id) by the owning loop
//! ```
//!
//! A sink that holds more than its limit unread is cut off ([`Overflow`]), as Redis bounds a
//! replica's output buffer. The AOF's sink ([`attach_aof`](Feed::attach_aof)) has no limit:
//! its writer takes the bytes as they come, and counts them ([`Feed::aof_end`]) so that a
//! loop can wait until what it propagated is on disk.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::resp::client::encode_command;

/// A sink held more than its limit of unread bytes; it receives nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the replication stream holds over {limit} unread bytes")]
pub struct Overflow {
    /// The limit it passed.
    pub limit: usize,
}

/// Wakes the loops that own sinks.
type Notify = Box<dyn Fn() + Send + Sync>;

/// The feed every loop shares (in [`ServerInfo`](crate::cmd::ServerInfo)).
#[derive(Default)]
pub struct Feed {
    /// Whether any sink is attached: the one check the command path makes when none is.
    active: AtomicBool,
    /// While the AOF is being loaded (`DEBUG LOADAOF`): nothing propagates.
    loading: AtomicBool,
    inner: Mutex<Inner>,
    notify: OnceLock<Notify>,
    aof_notify: OnceLock<Notify>,
    /// [`Inner::aof_end`], readable without the lock.
    aof_end: AtomicU64,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed").field("active", &self.is_active()).finish()
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// The database the stream last selected (`None`: the next command selects).
    last_db: Option<usize>,
    sinks: Vec<Sink>,
    /// Commands of a transaction being executed, with their databases.
    tx: Option<Vec<(usize, Vec<u8>)>>,
    /// The AOF's unwritten bytes, while it is attached.
    aof: Option<Vec<u8>>,
    /// Bytes ever given to the AOF sink.
    aof_end: u64,
}

#[derive(Debug)]
struct Sink {
    id: u64,
    pending: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl Feed {
    /// Installs the function that wakes the sinks' owners (once; later calls are ignored).
    pub fn set_notify(&self, notify: impl Fn() + Send + Sync + 'static) {
        let _ = self.notify.set(Box::new(notify));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Installs the function that wakes the AOF's writer (once; later calls are ignored).
    pub fn set_aof_notify(&self, notify: impl Fn() + Send + Sync + 'static) {
        let _ = self.aof_notify.set(Box::new(notify));
    }

    /// Whether any sink is attached (and the AOF is not being loaded).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst) && !self.loading.load(Ordering::SeqCst)
    }

    /// Stops (`true`) or resumes propagation while the AOF is loaded into the keyspace.
    pub fn set_loading(&self, loading: bool) {
        self.loading.store(loading, Ordering::SeqCst);
    }

    fn set_active(&self, inner: &Inner) {
        let any = !inner.sinks.is_empty() || inner.aof.is_some();
        self.active.store(any, Ordering::SeqCst);
    }

    /// Attaches the AOF's sink; the next command starts with a `SELECT`. Returns
    /// [`aof_end`](Self::aof_end) now.
    pub fn attach_aof(&self) -> u64 {
        let mut inner = self.lock();
        inner.last_db = None;
        inner.aof = Some(Vec::new());
        self.set_active(&inner);
        inner.aof_end
    }

    /// Detaches the AOF's sink: the bytes it had not taken.
    pub fn detach_aof(&self) -> Vec<u8> {
        let mut inner = self.lock();
        let rest = inner.aof.take().unwrap_or_default();
        self.set_active(&inner);
        rest
    }

    /// The bytes waiting for the AOF, and [`aof_end`](Self::aof_end) after them.
    pub fn take_aof(&self) -> (Vec<u8>, u64) {
        let mut inner = self.lock();
        let end = inner.aof_end;
        (inner.aof.as_mut().map(std::mem::take).unwrap_or_default(), end)
    }

    /// How many bytes the AOF's sink has been given, ever.
    pub fn aof_end(&self) -> u64 {
        self.aof_end.load(Ordering::SeqCst)
    }

    /// The next command starts with a `SELECT` (a new AOF file starts).
    pub fn reselect(&self) {
        self.lock().last_db = None;
    }

    /// Attaches sink `id` (a client id), which may hold `limit` unread bytes; the next command
    /// starts with a `SELECT`, as Redis's stream to a new replica does.
    pub fn attach(&self, id: u64, limit: usize) {
        let mut inner = self.lock();
        inner.last_db = None;
        inner.sinks.push(Sink {
            id,
            pending: Vec::new(),
            limit,
            overflowed: false,
        });
        self.set_active(&inner);
    }

    /// Detaches sink `id` (its connection closed); whether any sink (a replica or the AOF) is
    /// left.
    pub fn detach(&self, id: u64) -> bool {
        let mut inner = self.lock();
        inner.sinks.retain(|s| s.id != id);
        self.set_active(&inner);
        !inner.sinks.is_empty() || inner.aof.is_some()
    }

    /// The bytes waiting for sink `id` (empty if none, or if there is no such sink).
    pub fn take(&self, id: u64) -> Result<Vec<u8>, Overflow> {
        let mut inner = self.lock();
        match inner.sinks.iter_mut().find(|s| s.id == id) {
            Some(s) if s.overflowed => Err(Overflow { limit: s.limit }),
            Some(s) => Ok(std::mem::take(&mut s.pending)),
            None => Ok(Vec::new()),
        }
    }

    /// Starts a transaction: commands wait until [`end_transaction`](Self::end_transaction).
    pub fn begin_transaction(&self) {
        self.lock().tx = Some(Vec::new());
    }

    /// Ends a transaction: its commands go out, wrapped in `MULTI`/`EXEC` when there are
    /// two or more (Redis 7.0 does not wrap a single command, which is atomic by itself).
    pub fn end_transaction(&self) {
        let mut inner = self.lock();
        let Some(tx) = inner.tx.take() else {
            return;
        };
        let wrap = tx.len() > 1;
        if wrap {
            let db = tx[0].0;
            inner.emit(db, b"*1\r\n$5\r\nMULTI\r\n");
        }
        for (db, bytes) in &tx {
            inner.emit(*db, bytes);
        }
        if wrap {
            let db = tx.last().map_or(0, |c| c.0);
            inner.emit(db, b"*1\r\n$4\r\nEXEC\r\n");
        }
        if !tx.is_empty() {
            self.wake(inner);
        }
    }

    /// Propagates one command run in database `db`.
    pub fn command<A: AsRef<[u8]>>(&self, db: usize, args: &[A]) {
        let mut bytes = Vec::new();
        encode_command(&mut bytes, args);
        let mut inner = self.lock();
        if let Some(tx) = &mut inner.tx {
            tx.push((db, bytes));
            return;
        }
        inner.emit(db, &bytes);
        self.wake(inner);
    }

    /// Publishes the AOF's end and wakes the sinks' owners, after the lock.
    fn wake(&self, inner: std::sync::MutexGuard<'_, Inner>) {
        let (replicas, aof) = (!inner.sinks.is_empty(), inner.aof.is_some());
        self.aof_end.store(inner.aof_end, Ordering::SeqCst);
        drop(inner);
        if replicas && let Some(notify) = self.notify.get() {
            notify();
        }
        if aof && let Some(notify) = self.aof_notify.get() {
            notify();
        }
    }
}

impl Inner {
    /// One encoded command to every sink, after a `SELECT` if the database changed.
    fn emit(&mut self, db: usize, bytes: &[u8]) {
        let mut select = Vec::new();
        if self.last_db != Some(db) {
            encode_command(&mut select, &[b"SELECT".as_slice(), db.to_string().as_bytes()]);
            self.last_db = Some(db);
        }
        if let Some(aof) = &mut self.aof {
            aof.extend_from_slice(&select);
            aof.extend_from_slice(bytes);
            self.aof_end += (select.len() + bytes.len()) as u64;
        }
        for s in self.sinks.iter_mut().filter(|s| !s.overflowed) {
            s.pending.extend_from_slice(&select);
            s.pending.extend_from_slice(bytes);
            if s.pending.len() > s.limit {
                s.overflowed = true;
                s.pending = Vec::new();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap().replace("\r\n", " ")
    }

    #[test]
    fn selects_on_database_change_and_wraps_transactions() {
        let feed = Feed::default();
        feed.command(0, &["SET", "a", "1"]);
        assert!(!feed.is_active());
        feed.attach(7, 1 << 20);
        feed.command(0, &["SET", "a", "1"]);
        feed.command(0, &["DEL", "a"]);
        feed.command(3, &["DEL", "b"]);
        assert_eq!(
            text(feed.take(7).unwrap()),
            "*2 $6 SELECT $1 0 *3 $3 SET $1 a $1 1 *2 $3 DEL $1 a *2 $6 SELECT $1 3 *2 $3 DEL $1 b "
        );
        feed.begin_transaction();
        feed.command(3, &["INCR", "x"]);
        assert_eq!(feed.take(7).unwrap(), b"", "held until the transaction ends");
        feed.end_transaction();
        assert_eq!(text(feed.take(7).unwrap()), "*2 $4 INCR $1 x ");
        feed.begin_transaction();
        feed.command(3, &["INCR", "x"]);
        feed.command(3, &["INCR", "y"]);
        feed.end_transaction();
        assert_eq!(
            text(feed.take(7).unwrap()),
            "*1 $5 MULTI *2 $4 INCR $1 x *2 $4 INCR $1 y *1 $4 EXEC "
        );
        assert!(!feed.detach(7));
        assert!(!feed.is_active());
    }

    #[test]
    fn a_sink_past_its_limit_is_cut_off() {
        let feed = Feed::default();
        feed.attach(1, 40);
        feed.attach(2, 1 << 20);
        feed.command(0, &["SET", "k", "a long enough value"]);
        assert_eq!(feed.take(1), Err(Overflow { limit: 40 }));
        assert!(!feed.take(2).unwrap().is_empty());
    }
}
