//! The append-only file, in Redis 7.0's multi-part layout: in `dir`/`appenddirname`, a base
//! file (an RDB when `aof-use-rdb-preamble` is on, else commands), incremental files of
//! commands, and the manifest that lists them ([`manifest`]). redis-server 7.0 loads a
//! directory Ferry wrote, and Ferry one redis-server wrote ([`read`]).
//!
//! Every write reaches the current incremental file as the [`Feed`] propagates it to replicas
//! (`SELECT` on a database change, the deterministic rewrites of
//! [`replication`](crate::cmd::replication)): the AOF is the feed's second sink. Its bytes are
//! written by one thread ([`Aof`]'s writer), so the loops never wait on the disk, except as
//! `appendfsync` requires:
//!
//! - `always`: before a loop sends a reply, every write propagated so far is written and
//!   `fdatasync`ed ([`Aof::wait_durable`]): whichever loop comes first syncs for all, so the
//!   writes of a turn (and of the other loops meanwhile) share one sync. A crash of the process
//!   or of the machine loses no acknowledged write.
//! - `everysec` (the default): the writer thread writes what the feed holds as it comes and
//!   syncs at most once a second. A crash of the process loses what the writer had not yet
//!   written (microseconds of writes); a crash of the machine up to about a second.
//! - `no`: written as it comes, synced when the kernel chooses (up to 30 s on Linux).
//!
//! A rewrite (`BGREWRITEAOF`, turning the AOF on, or automatically when the files grew by
//! `auto-aof-rewrite-percentage` since the last one) takes a snapshot under the keyspace lock
//! (a reference count per value), opens a fresh incremental file at that same moment, and
//! writes the new base on its own thread; the manifest then names the new base and the files
//! opened since, and is swapped in by a rename. The files it replaced are deleted.
//!
//! Writes made while the first rewrite after `CONFIG SET appendonly yes` runs go to a
//! temporary file the manifest lists only when that rewrite ends, as in Redis: a crash
//! meanwhile loses them.
//!
//! Where this differs from Redis: there is no fork (the snapshot holds the values it shares
//! with the keyspace until it is written); the single-file AOF of Redis before 7.0 is not
//! read; a write error under `always` ends the process, as in Redis, and under the other
//! policies is retried on the next write, the bytes kept.

pub mod manifest;
pub mod read;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

pub use manifest::{Entry, Manifest, ManifestError};
pub use read::{AofError, Loaded, ReadError, load_dir, read_commands};

use crate::config::Config;
use crate::db::Value;
use crate::feed::Feed;
use crate::rdb::{self, Snapshot};
use crate::resp::client::encode_command;

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// Sync before replying.
    Always,
    /// Sync once a second, on the writer thread.
    Everysec,
    /// Leave syncing to the kernel.
    No,
}

impl Fsync {
    /// Its `CONFIG` name.
    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::Everysec => "everysec",
            Fsync::No => "no",
        }
    }

    /// The policy named `name` (any case).
    pub fn parse(name: &[u8]) -> Option<Fsync> {
        [Fsync::Always, Fsync::Everysec, Fsync::No]
            .into_iter()
            .find(|f| f.name().as_bytes().eq_ignore_ascii_case(name))
    }
}

/// The AOF settings `CONFIG SET` changes (`appendonly` is [`Aof::enabled`]).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `appendfsync`.
    pub fsync: Fsync,
    /// `appenddirname`: the directory in `dir` (fixed at start, as in Redis).
    pub dirname: String,
    /// `appendfilename`: the files' base name (fixed at start, as in Redis).
    pub filename: String,
    /// `aof-use-rdb-preamble`: the base is an RDB file (else commands).
    pub rdb_preamble: bool,
    /// `aof-load-truncated`: a torn last command is cut off with a warning (else the load fails).
    pub load_truncated: bool,
    /// `auto-aof-rewrite-percentage` (0: no automatic rewrite).
    pub auto_rewrite_percentage: u64,
    /// `auto-aof-rewrite-min-size`: no automatic rewrite below this many bytes.
    pub auto_rewrite_min_size: u64,
}

impl Settings {
    /// `config`'s settings.
    pub fn new(config: &Config) -> Settings {
        Settings {
            fsync: config.appendfsync,
            dirname: config.appenddirname.clone(),
            filename: config.appendfilename.clone(),
            rdb_preamble: config.aof_use_rdb_preamble,
            load_truncated: config.aof_load_truncated,
            auto_rewrite_percentage: 100,
            auto_rewrite_min_size: 64 << 20,
        }
    }
}

/// The AOF every loop shares (in [`ServerInfo`](crate::cmd::ServerInfo)): on or off, its
/// files, and the writer thread.
#[derive(Debug, Clone)]
pub struct Aof {
    inner: Arc<Inner>,
}

struct Inner {
    feed: Arc<Feed>,
    state: Mutex<State>,
    /// Whether the feed holds bytes the writer has not taken; the writer waits on `work`.
    pending: AtomicBool,
    work: Mutex<()>,
    work_cond: Condvar,
    enabled: AtomicBool,
    /// On, with `appendfsync always`.
    always: AtomicBool,
    /// The feed offset ([`Feed::aof_end`]) written and synced.
    synced: AtomicU64,
    rewriting: AtomicBool,
    last_rewrite_ok: AtomicBool,
    last_write_ok: AtomicBool,
    rewrites: AtomicU64,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aof")
            .field("enabled", &self.enabled.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

struct State {
    settings: Settings,
    /// The AOF directory (`dir`/`appenddirname`), fixed when the AOF is turned on.
    dir: PathBuf,
    manifest: Manifest,
    /// The incremental file being appended to.
    file: Option<File>,
    /// Appending to `temp-<filename>.incr`: the AOF was just turned on and its first rewrite
    /// runs (Redis's `AOF_WAIT_REWRITE`); the file joins the manifest when the rewrite ends.
    temp_incr: bool,
    /// Bytes taken from the feed whose write failed: written first next time.
    unwritten: Vec<u8>,
    /// The feed offset written to `file`.
    written: u64,
    /// Written since the last sync.
    dirty: bool,
    last_sync: Instant,
    /// Bumped when the AOF is turned off: a rewrite started before is dropped.
    generation: u64,
    /// Bytes in the base and incremental files, and in the base after the last rewrite.
    current_size: u64,
    base_size: u64,
    writer: bool,
    /// When the running rewrite started.
    rewrite_started: Option<Instant>,
    last_rewrite_secs: i64,
}

/// A rewrite's result, for the thread that installs it.
struct Rewrite {
    generation: u64,
    /// The first incremental file opened for it (`None`: the AOF is off, or it was just
    /// turned on and writes go to the temporary file).
    first_incr: Option<u64>,
}

impl Aof {
    /// The AOF of a server starting with `config` (off; [`open_at_start`](Self::open_at_start)
    /// turns it on), fed by `feed`.
    pub fn new(config: &Config, feed: Arc<Feed>) -> Aof {
        let inner = Arc::new(Inner {
            feed,
            state: Mutex::new(State {
                settings: Settings::new(config),
                dir: PathBuf::new(),
                manifest: Manifest::default(),
                file: None,
                temp_incr: false,
                unwritten: Vec::new(),
                written: 0,
                dirty: false,
                last_sync: Instant::now(),
                generation: 0,
                current_size: 0,
                base_size: 0,
                writer: false,
                rewrite_started: None,
                last_rewrite_secs: -1,
            }),
            pending: AtomicBool::new(false),
            work: Mutex::new(()),
            work_cond: Condvar::new(),
            enabled: AtomicBool::new(false),
            always: AtomicBool::new(false),
            synced: AtomicU64::new(0),
            rewriting: AtomicBool::new(false),
            last_rewrite_ok: AtomicBool::new(true),
            last_write_ok: AtomicBool::new(true),
            rewrites: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&inner);
        inner.feed.set_aof_notify(move || {
            if let Some(inner) = weak.upgrade() {
                inner.signal();
            }
        });
        Aof { inner }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.lock()
    }

    /// The settings now.
    pub fn settings(&self) -> Settings {
        self.lock().settings.clone()
    }

    /// Changes the settings (`CONFIG SET`).
    pub fn update(&self, f: impl FnOnce(&mut Settings)) {
        let mut st = self.lock();
        f(&mut st.settings);
        let always = self.enabled() && st.settings.fsync == Fsync::Always;
        self.inner.always.store(always, Ordering::SeqCst);
    }

    /// Whether the AOF is on (`appendonly`, `INFO`'s `aof_enabled`).
    pub fn enabled(&self) -> bool {
        self.inner.enabled.load(Ordering::SeqCst)
    }

    /// Whether a rewrite runs (`aof_rewrite_in_progress`).
    pub fn rewriting(&self) -> bool {
        self.inner.rewriting.load(Ordering::SeqCst)
    }

    /// Whether the last rewrite succeeded (`aof_last_bgrewrite_status`).
    pub fn last_rewrite_ok(&self) -> bool {
        self.inner.last_rewrite_ok.load(Ordering::SeqCst)
    }

    /// Whether the last write succeeded (`aof_last_write_status`).
    pub fn last_write_ok(&self) -> bool {
        self.inner.last_write_ok.load(Ordering::SeqCst)
    }

    /// `INFO persistence`'s AOF fields, in Redis's order.
    pub fn info_fields(&self) -> Vec<(&'static str, String)> {
        let st = self.lock();
        let ok = |b: bool| if b { "ok" } else { "err" }.to_string();
        let running = st.rewrite_started.map_or(-1, |t| t.elapsed().as_secs() as i64);
        let mut fields = vec![
            ("aof_enabled", u8::from(self.enabled()).to_string()),
            ("aof_rewrite_in_progress", u8::from(self.rewriting()).to_string()),
            ("aof_rewrite_scheduled", "0".into()),
            ("aof_last_rewrite_time_sec", st.last_rewrite_secs.to_string()),
            ("aof_current_rewrite_time_sec", running.to_string()),
            ("aof_last_bgrewrite_status", ok(self.last_rewrite_ok())),
            (
                "aof_rewrites",
                self.inner.rewrites.load(Ordering::SeqCst).to_string(),
            ),
            ("aof_last_write_status", ok(self.last_write_ok())),
            ("aof_last_cow_size", "0".into()),
        ];
        if self.enabled() {
            fields.extend([
                ("aof_current_size", st.current_size.to_string()),
                ("aof_base_size", st.base_size.to_string()),
                ("aof_pending_rewrite", "0".into()),
                ("aof_buffer_length", "0".into()),
                ("aof_pending_bio_fsync", "0".into()),
                ("aof_delayed_fsync", "0".into()),
            ]);
        }
        fields
    }

    /// The AOF directory for `dir` now.
    fn dir_in(&self, dir: &Path) -> PathBuf {
        dir.join(&self.lock().settings.dirname)
    }

    /// Loads the AOF directory in `dir` into `dbs` (new, empty) at start, when `appendonly` is
    /// on: whether a manifest was found.
    pub fn load_at_start(
        &self,
        dir: &Path,
        dbs: &mut [crate::db::Db],
        server: &crate::cmd::ServerInfo,
        now_ms: u64,
    ) -> Result<bool, AofError> {
        let settings = self.settings();
        let aof_dir = self.dir_in(dir);
        let (manifest, loaded) = load_dir(
            &aof_dir,
            &settings.filename,
            dbs,
            server,
            settings.load_truncated,
            now_ms,
        )?;
        let mut st = self.lock();
        st.manifest = manifest.unwrap_or_default();
        st.dir = aof_dir;
        Ok(loaded.found)
    }

    /// Turns the AOF on at start, after [`load_at_start`](Self::load_at_start): with no file
    /// yet, a base of `snapshot` is written first (as Redis does); then the last incremental
    /// file (a new one if none) is opened for appending and the manifest written.
    pub fn open_at_start(&self, dir: &Path, snapshot: &Snapshot, now_ms: u64) -> Result<(), AofError> {
        let aof_dir = self.dir_in(dir);
        std::fs::create_dir_all(&aof_dir).map_err(io_at(&aof_dir))?;
        let mut st = self.lock();
        st.dir = aof_dir;
        if st.manifest.base.is_none() && st.manifest.incr.is_empty() {
            let (name, bytes) = base_file(&st, snapshot, now_ms);
            let path = st.dir.join(&name);
            write_synced(&path, &bytes)?;
            st.manifest.base = Some(Entry { name, seq: 1 });
        }
        if st.manifest.incr.is_empty() {
            let seq = 1;
            let name = incr_name(&st.settings.filename, seq);
            st.manifest.incr.push(Entry { name, seq });
        }
        let last = st.manifest.incr.last().expect("pushed above").name.clone();
        let path = st.dir.join(&last);
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_at(&path))?;
        st.file = Some(file);
        persist_manifest(&st)?;
        st.current_size = files_size(&st);
        st.base_size = st.current_size;
        self.attach(&mut st);
        Ok(())
    }

    /// Starts feeding the file and the writer thread.
    fn attach(&self, st: &mut State) {
        st.written = self.inner.feed.attach_aof();
        self.inner.synced.store(st.written, Ordering::SeqCst);
        self.inner.enabled.store(true, Ordering::SeqCst);
        self.inner
            .always
            .store(st.settings.fsync == Fsync::Always, Ordering::SeqCst);
        if !st.writer {
            let weak = Arc::downgrade(&self.inner);
            let spawned = std::thread::Builder::new()
                .name("ferry-redis-aof".into())
                .spawn(move || writer(&weak));
            match spawned {
                Ok(_) => st.writer = true,
                // The loops then write on their own turns (`wait_durable`, `flush`).
                Err(e) => eprintln!("ferry-redis: AOF writer thread: {e}; the loops write instead"),
            }
        }
    }

    /// `CONFIG SET appendonly yes` at run time: the AOF goes on, writes going to a temporary
    /// incremental file, and a rewrite of `snapshot` (taken under the same keyspace lock)
    /// starts; when it ends, its base and that file make the new manifest.
    pub fn turn_on(&self, dir: &Path, snapshot: Snapshot, now_ms: u64) -> Result<(), String> {
        if self.enabled() {
            return Ok(());
        }
        if self.rewriting() {
            return Err("a rewrite of the append only file is in progress".into());
        }
        let aof_dir = self.dir_in(dir);
        std::fs::create_dir_all(&aof_dir).map_err(|e| format!("{}: {e}", aof_dir.display()))?;
        let mut st = self.lock();
        st.dir = aof_dir;
        // The manifest on disk, if any: its files are replaced by the rewrite.
        let manifest_path = st.dir.join(manifest_name(&st.settings.filename));
        st.manifest = match std::fs::read(&manifest_path) {
            Ok(text) => Manifest::parse(&text).unwrap_or_default(),
            Err(_) => Manifest::default(),
        };
        let temp = st.dir.join(temp_incr_name(&st.settings.filename));
        let file = File::create(&temp).map_err(|e| format!("{}: {e}", temp.display()))?;
        st.file = Some(file);
        st.temp_incr = true;
        st.current_size = 0;
        self.attach(&mut st);
        let job = Rewrite {
            generation: st.generation,
            first_incr: None,
        };
        self.spawn_rewrite(&mut st, job, snapshot, now_ms)
    }

    /// `CONFIG SET appendonly no`: what the feed holds is written and synced, the file closed,
    /// a running rewrite's result dropped.
    pub fn turn_off(&self) {
        if !self.enabled() {
            return;
        }
        let mut st = self.lock();
        self.inner.flush(&mut st, true);
        let rest = self.inner.feed.detach_aof();
        debug_assert!(rest.is_empty(), "flushed above, under the keyspace lock");
        st.file = None;
        st.generation += 1;
        if std::mem::take(&mut st.temp_incr) {
            let _ = std::fs::remove_file(st.dir.join(temp_incr_name(&st.settings.filename)));
        }
        if self.rewriting() {
            self.inner.rewriting.store(false, Ordering::SeqCst);
            st.rewrite_started = None;
        }
        self.inner.enabled.store(false, Ordering::SeqCst);
        self.inner.always.store(false, Ordering::SeqCst);
    }

    /// `BGREWRITEAOF`: rewrites `snapshot` (taken under the keyspace lock, which the caller
    /// still holds) as the new base on a thread. With the AOF on, a fresh incremental file
    /// starts now and the manifest on disk lists it; with it off, the new base replaces the
    /// directory's files.
    pub fn rewrite(&self, dir: &Path, snapshot: Snapshot, now_ms: u64) -> Result<(), String> {
        if self.rewriting() {
            return Err("Background append only file rewriting already in progress".into());
        }
        let mut st = self.lock();
        let mut first_incr = None;
        if self.enabled() {
            if !st.temp_incr {
                // Everything before the snapshot goes to the files it replaces.
                let always = st.settings.fsync == Fsync::Always;
                self.inner.flush(&mut st, always);
                let seq = st.manifest.incr.last().map_or(1, |e| e.seq + 1);
                let name = incr_name(&st.settings.filename, seq);
                let path = st.dir.join(&name);
                let file = OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                st.manifest.incr.push(Entry { name, seq });
                if let Err(e) = persist_manifest(&st) {
                    st.manifest.incr.pop();
                    let _ = std::fs::remove_file(&path);
                    return Err(e.to_string());
                }
                st.file = Some(file);
                self.inner.feed.reselect();
                first_incr = Some(seq);
            }
        } else {
            let aof_dir = dir.join(&st.settings.dirname);
            std::fs::create_dir_all(&aof_dir).map_err(|e| format!("{}: {e}", aof_dir.display()))?;
            let manifest_path = aof_dir.join(manifest_name(&st.settings.filename));
            st.manifest = match std::fs::read(&manifest_path) {
                Ok(text) => Manifest::parse(&text).unwrap_or_default(),
                Err(_) => Manifest::default(),
            };
            st.dir = aof_dir;
        }
        let job = Rewrite {
            generation: st.generation,
            first_incr,
        };
        self.spawn_rewrite(&mut st, job, snapshot, now_ms)
    }

    fn spawn_rewrite(
        &self,
        st: &mut State,
        job: Rewrite,
        snapshot: Snapshot,
        now_ms: u64,
    ) -> Result<(), String> {
        self.inner.rewriting.store(true, Ordering::SeqCst);
        st.rewrite_started = Some(Instant::now());
        let this = self.clone();
        let (name, dir) = (st.settings.filename.clone(), st.dir.clone());
        let preamble = st.settings.rdb_preamble;
        static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let spawned = std::thread::Builder::new()
            .name("ferry-redis-aofrw".into())
            .spawn(move || {
                let bytes = encode_base(&snapshot, preamble, now_ms);
                drop(snapshot);
                // Named apart: a rewrite dropped by turning the AOF off may still be writing.
                let temp = dir.join(format!("temp-rewriteaof-bg-{}-{n}.aof", std::process::id()));
                let result = write_synced(&temp, &bytes).and_then(|()| this.install(job, &temp, preamble));
                if let Err(e) = &result {
                    eprintln!("ferry-redis: background AOF rewrite of {name} failed: {e}");
                    let _ = std::fs::remove_file(&temp);
                }
            });
        if let Err(e) = spawned {
            self.inner.rewriting.store(false, Ordering::SeqCst);
            st.rewrite_started = None;
            return Err(format!("no thread for the rewrite: {e}"));
        }
        Ok(())
    }

    /// Puts a rewrite's base (written at `temp`) in place: the new manifest lists it and the
    /// incremental files opened since the rewrite started; the files it replaces are deleted.
    fn install(&self, job: Rewrite, temp: &Path, preamble: bool) -> Result<(), AofError> {
        let mut st = self.lock();
        let finish = |st: &mut State, ok: bool| {
            if let Some(t) = st.rewrite_started.take() {
                st.last_rewrite_secs = t.elapsed().as_secs() as i64;
            }
            self.inner.last_rewrite_ok.store(ok, Ordering::SeqCst);
            self.inner.rewriting.store(false, Ordering::SeqCst);
        };
        if job.generation != st.generation {
            // The AOF was turned off meanwhile (Redis kills the rewrite), which ended this
            // rewrite's state: another may run now.
            let _ = std::fs::remove_file(temp);
            return Ok(());
        }
        let base_seq = st.manifest.base.as_ref().map_or(0, |b| b.seq) + 1;
        let suffix = if preamble { "rdb" } else { "aof" };
        let base = Entry {
            name: format!("{}.{base_seq}.base.{suffix}", st.settings.filename),
            seq: base_seq,
        };
        let mut next = Manifest {
            base: Some(base.clone()),
            history: Vec::new(),
            incr: Vec::new(),
        };
        let mut renamed_temp_incr = None;
        if st.temp_incr {
            let seq = st.manifest.incr.last().map_or(1, |e| e.seq + 1);
            let name = incr_name(&st.settings.filename, seq);
            renamed_temp_incr = Some((
                st.dir.join(temp_incr_name(&st.settings.filename)),
                st.dir.join(&name),
            ));
            next.incr.push(Entry { name, seq });
        } else if let Some(first) = job.first_incr {
            next.incr = st
                .manifest
                .incr
                .iter()
                .filter(|e| e.seq >= first)
                .cloned()
                .collect();
        }
        let result = (|| {
            let path = st.dir.join(&base.name);
            std::fs::rename(temp, &path).map_err(io_at(&path))?;
            if let Some((from, to)) = &renamed_temp_incr {
                std::fs::rename(from, to).map_err(io_at(to))?;
            }
            let old = std::mem::replace(&mut st.manifest, next.clone());
            if let Err(e) = persist_manifest(&st) {
                st.manifest = old;
                return Err(e);
            }
            let keep: Vec<&str> = next.files().map(|e| e.name.as_str()).collect();
            for e in old.files().chain(&old.history) {
                if !keep.contains(&e.name.as_str()) {
                    let _ = std::fs::remove_file(st.dir.join(&e.name));
                }
            }
            Ok(())
        })();
        match &result {
            Ok(()) => {
                st.temp_incr = false;
                st.current_size = files_size(&st);
                st.base_size = st.current_size;
                self.inner.rewrites.fetch_add(1, Ordering::SeqCst);
            }
            Err(_) => {
                let _ = std::fs::remove_file(temp);
            }
        }
        finish(&mut st, result.is_ok());
        result
    }

    /// Whether an automatic rewrite is due: the files grew by `auto-aof-rewrite-percentage`
    /// since the last rewrite, and are at least `auto-aof-rewrite-min-size`.
    pub fn rewrite_due(&self) -> bool {
        if !self.enabled() || self.rewriting() {
            return false;
        }
        let st = self.lock();
        let s = &st.settings;
        let base = st.base_size.max(1);
        s.auto_rewrite_percentage > 0
            && st.current_size >= s.auto_rewrite_min_size
            && (st.current_size - base.min(st.current_size)) * 100 / base >= s.auto_rewrite_percentage
    }

    /// Whether replies wait for a sync (on, with `appendfsync always`).
    pub fn syncs_always(&self) -> bool {
        self.inner.always.load(Ordering::SeqCst)
    }

    /// Blocks until every write the feed has propagated is written and synced, when the AOF
    /// is on with `appendfsync always` (else returns at once): a loop calls it before sending
    /// replies.
    pub fn wait_durable(&self) {
        if !self.inner.always.load(Ordering::SeqCst) {
            return;
        }
        if self.inner.synced.load(Ordering::SeqCst) >= self.inner.feed.aof_end() {
            return;
        }
        let mut st = self.lock();
        self.inner.flush(&mut st, true);
    }

    /// Writes and syncs what the feed holds (`DEBUG LOADAOF`, shutting down).
    pub fn flush(&self) {
        if self.enabled() {
            let mut st = self.lock();
            self.inner.flush(&mut st, true);
        }
    }

    /// The AOF directory and base name, to load from (`DEBUG LOADAOF`).
    pub fn location(&self, dir: &Path) -> (PathBuf, String, bool) {
        let aof_dir = if self.enabled() {
            self.lock().dir.clone()
        } else {
            self.dir_in(dir)
        };
        let s = self.settings();
        (aof_dir, s.filename, s.load_truncated)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The feed has bytes: wakes the writer (once until it takes them).
    fn signal(&self) {
        if !self.pending.swap(true, Ordering::SeqCst) {
            let _guard = self.work.lock().unwrap_or_else(PoisonError::into_inner);
            self.work_cond.notify_one();
        }
    }

    /// Writes what the feed holds to the current file, and syncs if `sync` or the policy says
    /// so. A failed write keeps its bytes for the next try; under `always` it ends the
    /// process, as in Redis (a reply must not go out for a write that is not on disk).
    fn flush(&self, st: &mut State, sync: bool) {
        let Some(file) = st.file.as_mut() else {
            return;
        };
        let (bytes, end) = self.feed.take_aof();
        st.unwritten.extend_from_slice(&bytes);
        let always = st.settings.fsync == Fsync::Always;
        if !st.unwritten.is_empty() {
            match file.write_all(&st.unwritten) {
                Ok(()) => {
                    st.current_size += st.unwritten.len() as u64;
                    st.unwritten.clear();
                    st.written = end;
                    st.dirty = true;
                    self.last_write_ok.store(true, Ordering::SeqCst);
                }
                Err(e) => {
                    eprintln!("ferry-redis: writing the AOF: {e}");
                    self.last_write_ok.store(false, Ordering::SeqCst);
                    if always {
                        eprintln!(
                            "ferry-redis: can't recover from an AOF write error when the AOF fsync policy is \
                             'always'. Exiting..."
                        );
                        std::process::exit(1);
                    }
                    return;
                }
            }
        }
        let due = match st.settings.fsync {
            Fsync::Always => true,
            Fsync::Everysec => st.last_sync.elapsed() >= Duration::from_secs(1),
            Fsync::No => false,
        };
        if st.dirty && (sync || due) {
            let file = st.file.as_mut().expect("checked above");
            if let Err(e) = file.sync_data() {
                eprintln!("ferry-redis: syncing the AOF: {e}");
                self.last_write_ok.store(false, Ordering::SeqCst);
                if always {
                    std::process::exit(1);
                }
                return;
            }
            st.dirty = false;
            st.last_sync = Instant::now();
        }
        if !st.dirty {
            self.synced.store(st.written, Ordering::SeqCst);
        }
    }
}

/// The writer thread: takes the feed's bytes when signalled, and syncs once a second under
/// `everysec`. It ends when the AOF it serves is dropped.
fn writer(weak: &Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let wait = {
            let st = inner.lock();
            match st.settings.fsync {
                Fsync::Everysec if st.dirty => Duration::from_secs(1).saturating_sub(st.last_sync.elapsed()),
                _ => Duration::from_secs(1),
            }
        };
        {
            let guard = inner.work.lock().unwrap_or_else(PoisonError::into_inner);
            if !inner.pending.load(Ordering::SeqCst) {
                let _ = inner
                    .work_cond
                    .wait_timeout(guard, wait)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        inner.pending.store(false, Ordering::SeqCst);
        let mut st = inner.lock();
        inner.flush(&mut st, false);
    }
}

/// A new base file's name and bytes: `snapshot` as an RDB or as commands.
fn base_file(st: &State, snapshot: &Snapshot, now_ms: u64) -> (String, Vec<u8>) {
    let seq = st.manifest.base.as_ref().map_or(0, |b| b.seq) + 1;
    let preamble = st.settings.rdb_preamble;
    let suffix = if preamble { "rdb" } else { "aof" };
    (
        format!("{}.{seq}.base.{suffix}", st.settings.filename),
        encode_base(snapshot, preamble, now_ms),
    )
}

/// Commands per rewritten command, as Redis (`AOF_REWRITE_ITEMS_PER_CMD`).
const ITEMS_PER_CMD: usize = 64;

/// `snapshot` as a base file: an RDB, or the commands that rebuild it (Redis's
/// `rewriteAppendOnlyFileRio`: `SELECT`, then per key `SET`, `RPUSH`, `SADD`, `ZADD` or
/// `HMSET` of at most 64 elements each, and `PEXPIREAT` for a deadline).
pub fn encode_base(snapshot: &Snapshot, rdb_preamble: bool, now_ms: u64) -> Vec<u8> {
    let mut out = Vec::new();
    if rdb_preamble {
        rdb::encode(snapshot, now_ms, &mut out);
        return out;
    }
    for (i, records) in snapshot.dbs.iter().enumerate() {
        if records.is_empty() {
            continue;
        }
        encode_command(&mut out, &[b"SELECT".as_slice(), i.to_string().as_bytes()]);
        for r in records {
            let key: &[u8] = &r.key;
            let mut batched = |verb: &[u8], items: Vec<Vec<u8>>, per: usize| {
                for chunk in items.chunks(ITEMS_PER_CMD * per) {
                    let mut args: Vec<&[u8]> = vec![verb, key];
                    args.extend(chunk.iter().map(Vec::as_slice));
                    encode_command(&mut out, &args);
                }
            };
            match &r.value {
                Value::Str(v) => encode_command(&mut out, &[b"SET".as_slice(), key, v]),
                Value::List(l) => batched(b"RPUSH", l.iter().map(|v| v.to_vec()).collect(), 1),
                Value::Set(t) => batched(b"SADD", t.iter().map(|(m, ())| m.to_vec()).collect(), 1),
                Value::Hash(t) => batched(
                    b"HMSET",
                    t.iter().flat_map(|(f, v)| [f.to_vec(), v.to_vec()]).collect(),
                    2,
                ),
                Value::ZSet(z) => batched(
                    b"ZADD",
                    z.iter()
                        .flat_map(|(m, s)| [crate::resp::reply::double_text(s), m.to_vec()])
                        .collect(),
                    2,
                ),
            }
            if let Some(d) = r.deadline {
                encode_command(
                    &mut out,
                    &[b"PEXPIREAT".as_slice(), key, d.to_string().as_bytes()],
                );
            }
        }
    }
    out
}

fn manifest_name(filename: &str) -> String {
    format!("{filename}.manifest")
}

fn incr_name(filename: &str, seq: u64) -> String {
    format!("{filename}.{seq}.incr.aof")
}

fn temp_incr_name(filename: &str) -> String {
    format!("temp-{filename}.incr")
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> AofError + '_ {
    move |source| AofError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes `bytes` as the file `path`, synced.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), AofError> {
    File::create(path)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .map_err(io_at(path))
}

/// Writes the manifest: a temporary file, synced, renamed over the manifest, the directory
/// synced (a crash leaves the old manifest or the new one, whole).
fn persist_manifest(st: &State) -> Result<(), AofError> {
    let name = manifest_name(&st.settings.filename);
    let temp = st.dir.join(format!("temp-{name}"));
    write_synced(&temp, &st.manifest.format())?;
    let path = st.dir.join(name);
    std::fs::rename(&temp, &path).map_err(io_at(&path))?;
    File::open(&st.dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(&st.dir))
}

/// The bytes of the files the manifest lists.
fn files_size(st: &State) -> u64 {
    st.manifest
        .files()
        .filter_map(|e| std::fs::metadata(st.dir.join(&e.name)).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ferry_testkit::Scratch;

    use crate::cmd::harness::{Harness, OK, bulk, bulks, int};

    fn harness(dir: &Scratch) -> Harness {
        let mut h = Harness::new();
        h.server.config.enable_debug_command = true;
        assert_eq!(h.cmd(&format!("CONFIG SET dir {}", dir.0.display())), OK);
        h
    }

    fn wait_rewrite(h: &Harness) {
        let aof = h.server.aof.clone();
        ferry_testkit::wait_until("the AOF rewrite", Duration::from_secs(60), || !aof.rewriting());
        assert!(h.server.aof.last_rewrite_ok());
    }

    fn manifest(dir: &Scratch) -> String {
        std::fs::read_to_string(dir.0.join("appendonlydir/appendonly.aof.manifest")).unwrap()
    }

    fn check(h: &mut Harness) {
        assert_eq!(h.cmd("GET a"), bulk("1"));
        assert_eq!(h.cmd("PTTL b"), int(100_000));
        assert_eq!(h.cmd("LRANGE l 0 -1"), bulks(&["x", "y"]));
        assert_eq!(h.cmd("ZRANGE z 0 -1 WITHSCORES"), bulks(&["m", "0.5"]));
        assert_eq!(h.cmd("SELECT 3"), OK);
        assert_eq!(h.cmd("GET c"), bulk("3"));
        assert_eq!(h.cmd("SELECT 0"), OK);
        assert_eq!(h.cmd("DBSIZE"), int(4));
    }

    #[test]
    fn turned_on_rewritten_and_loaded_back() {
        let dir = Scratch::new("aof-harness");
        let mut h = harness(&dir);
        h.cmd("SET a 1");
        assert_eq!(h.cmd("CONFIG SET appendonly yes"), OK);
        assert_eq!(h.cmd("CONFIG GET appendonly"), bulks(&["appendonly", "yes"]));
        wait_rewrite(&h);
        assert_eq!(
            manifest(&dir),
            "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
        );
        h.cmd("SET b 2 PX 100000");
        h.cmd("RPUSH l x y");
        h.cmd("ZADD z 0.5 m");
        h.cmd("SELECT 3");
        h.cmd("SET c 3");
        h.cmd("SELECT 0");
        assert_eq!(h.cmd("DEBUG LOADAOF"), OK);
        check(&mut h);

        assert_eq!(h.cmd("CONFIG SET aof-use-rdb-preamble no"), OK);
        assert_eq!(
            h.cmd("BGREWRITEAOF"),
            "+Background append only file rewriting started\r\n"
        );
        wait_rewrite(&h);
        assert_eq!(
            manifest(&dir),
            "file appendonly.aof.2.base.aof seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
        );
        let files = std::fs::read_dir(dir.0.join("appendonlydir")).unwrap().count();
        assert_eq!(files, 3, "the replaced base and incremental file are deleted");
        let base = std::fs::read(dir.0.join("appendonlydir/appendonly.aof.2.base.aof")).unwrap();
        assert!(base.starts_with(b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"));
        assert_eq!(h.cmd("DEBUG LOADAOF"), OK);
        check(&mut h);

        assert_eq!(h.cmd("CONFIG SET appendonly no"), OK);
        assert!(h.cmd("INFO persistence").contains("aof_enabled:0\r\n"));
        assert_eq!(h.cmd("DEBUG LOADAOF"), OK);
        check(&mut h);
        // Off, a rewrite makes a base alone (a regression: it deadlocked on its own lock).
        h.cmd("SET after off");
        assert_eq!(
            h.cmd("BGREWRITEAOF"),
            "+Background append only file rewriting started\r\n"
        );
        wait_rewrite(&h);
        assert_eq!(manifest(&dir), "file appendonly.aof.3.base.aof seq 3 type b\n");
        h.cmd("DEL after");
        assert_eq!(h.cmd("DEBUG LOADAOF"), OK);
        assert_eq!(h.cmd("GET after"), bulk("off"));
    }

    #[test]
    fn an_automatic_rewrite_is_due_when_the_files_doubled() {
        let dir = Scratch::new("aof-auto");
        let mut h = harness(&dir);
        assert_eq!(h.cmd("CONFIG SET appendonly yes"), OK);
        wait_rewrite(&h);
        assert_eq!(h.cmd("CONFIG SET auto-aof-rewrite-min-size 1"), OK);
        let aof = h.server.aof.clone();
        assert!(!aof.rewrite_due(), "no growth yet");
        let base: u64 = info_field(&mut h, "aof_base_size");
        let mut n = 0;
        while info_field(&mut h, "aof_current_size") < 2 * base {
            n += 1;
            h.cmd(&format!("SET key:{n} {}", "v".repeat(64)));
            aof.flush();
        }
        assert!(aof.rewrite_due());
        assert_eq!(h.cmd("CONFIG SET auto-aof-rewrite-percentage 0"), OK);
        assert!(!aof.rewrite_due(), "off");
    }

    #[test]
    fn writes_reach_the_incremental_file_as_propagated() {
        let dir = Scratch::new("aof-incr");
        let mut h = harness(&dir);
        assert_eq!(h.cmd("CONFIG SET appendonly yes"), OK);
        wait_rewrite(&h);
        let now = h.now_ms;
        h.cmd("SET k v PX 10");
        h.cmd("GET nothing");
        h.now_ms += 11;
        h.cmd("GET k");
        h.server.aof.flush();
        let incr = std::fs::read(dir.0.join("appendonlydir/appendonly.aof.1.incr.aof")).unwrap();
        assert_eq!(
            String::from_utf8(incr).unwrap().replace("\r\n", " "),
            format!(
                "*2 $6 SELECT $1 0 *5 $3 SET $1 k $1 v $4 PXAT $13 {} *2 $3 DEL $1 k ",
                now + 10
            ),
            "the expiry absolute, the expired key deleted, the read left out"
        );
    }

    fn info_field(h: &mut Harness, name: &str) -> u64 {
        let info = h.cmd("INFO persistence");
        let line = info
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap();
        line.parse().unwrap()
    }

    #[test]
    fn the_base_as_commands() {
        let pool = ferry_testkit::pool();
        let mut db = crate::db::Db::new(pool.clone(), 4096);
        let v = |s: &str| crate::db::Value::Str(pool.copy_from(s.as_bytes()).unwrap());
        db.set(
            b"k",
            v("v"),
            crate::db::Ttl::At(5000),
            crate::db::SetIf::Always,
            0,
        );
        let snap = crate::rdb::Snapshot::take([&db], 0);
        let text = String::from_utf8(super::encode_base(&snap, false, 0)).unwrap();
        assert_eq!(
            text.replace("\r\n", " "),
            "*2 $6 SELECT $1 0 *3 $3 SET $1 k $1 v *3 $9 PEXPIREAT $1 k $4 5000 "
        );
    }
}
