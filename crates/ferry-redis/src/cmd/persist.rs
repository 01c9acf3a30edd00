//! RDB persistence: `SAVE`, `BGSAVE`, `LASTSAVE`, `DEBUG RELOAD`'s save-flush-load, the save
//! after `FLUSHALL` when save points are set, the save points themselves ([`Persistence::due`],
//! checked by the server's clock), and loading the file at start ([`load_at_start`]).
//!
//! The file is [`crate::rdb`]'s encoding of a [`Snapshot`]. A snapshot costs a reference
//! count per stored buffer and is taken under the keyspace lock; `BGSAVE` encodes and writes
//! it on its own thread, so the loops keep serving. Every save writes `temp-<pid>-<n>.rdb` in
//! `dir`, syncs it, and renames it over `dbfilename`: a crash never leaves half a file. A
//! background save renames only if no save finished after it started (the file lock's
//! generation): a `FLUSHALL` that saves the empty dataset is not undone by an older snapshot
//! landing later, as Redis kills its child there.
//!
//! Where this differs from Redis: there is no fork, so a background save holds the values of
//! its snapshot (shared with the keyspace until they change) until it is written.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ferry_buf::Pool;

use super::strings::parse_i64;
use super::{Args, Ctx, NOT_INTEGER, SYNTAX};
use crate::config::Config;
use crate::db::{Access, Db, SetIf, Ttl};
use crate::rdb::{self, RdbError, Snapshot};
use crate::resp::ReplyBuf;

/// Most elements [`load_at_start`] and `DEBUG RELOAD` accept in one collection (a count is
/// also bounded by the bytes left in the file).
pub const MAX_ELEMENTS: usize = 1 << 32;

/// Redis waits this long after a failed background save before a save point tries again
/// (`CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_DELAY_S: u64 = 5;

/// Where and when to save: `dir`, `dbfilename` and `save`, which `CONFIG SET` changes.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `dir`, absolute.
    pub dir: PathBuf,
    /// `dbfilename`.
    pub dbfilename: String,
    /// `save`: `(seconds, changes)` pairs.
    pub save: Vec<(u64, u64)>,
}

/// The persistence state every loop shares (in [`ServerInfo`](super::ServerInfo)).
#[derive(Debug, Clone)]
pub struct Persistence {
    state: Arc<State>,
}

#[derive(Debug)]
struct State {
    settings: Mutex<Settings>,
    /// The generation of the file on disk, held while a save renames its file into place.
    file: Mutex<u64>,
    /// Names each temporary file apart.
    temp_counter: AtomicU64,
    /// Unix seconds of the last successful save (or of the start).
    lastsave_s: AtomicU64,
    /// The keyspace's [`Db::changes`] sum that the last save wrote.
    changes_at_save: AtomicU64,
    bgsave_running: AtomicBool,
    /// `BGSAVE SCHEDULE` while one ran: start one when it ends.
    bgsave_scheduled: AtomicBool,
    last_bgsave_ok: AtomicBool,
    /// Unix seconds when the last background save started.
    last_bgsave_try_s: AtomicU64,
}

/// Why a save failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// Writing, syncing or renaming the file failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A newer save finished first (a background save's result is then dropped).
    #[error("a newer save replaced this one")]
    Superseded,
}

/// Why the file did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading the file failed.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The file is not an RDB file Ferry can load.
    #[error("loading {path}: {source}")]
    Rdb {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        source: RdbError,
    },
}

impl Persistence {
    /// The state at start: `config`'s settings, the last save "now" (`now_s`), as Redis.
    pub fn new(config: &Config, now_s: u64) -> Persistence {
        let dir = std::path::absolute(&config.dir).unwrap_or_else(|_| config.dir.clone());
        Persistence {
            state: Arc::new(State {
                settings: Mutex::new(Settings {
                    dir,
                    dbfilename: config.dbfilename.clone(),
                    save: config.save.clone(),
                }),
                file: Mutex::new(0),
                temp_counter: AtomicU64::new(0),
                lastsave_s: AtomicU64::new(now_s),
                changes_at_save: AtomicU64::new(0),
                bgsave_running: AtomicBool::new(false),
                bgsave_scheduled: AtomicBool::new(false),
                last_bgsave_ok: AtomicBool::new(true),
                last_bgsave_try_s: AtomicU64::new(0),
            }),
        }
    }

    /// The settings now.
    pub fn settings(&self) -> Settings {
        self.state
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn update(&self, f: impl FnOnce(&mut Settings)) {
        f(&mut self.state.settings.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// `CONFIG SET dir`: an existing directory ([`check_dir`]).
    pub fn set_dir(&self, dir: &[u8]) -> Result<(), String> {
        let dir = check_dir(dir)?;
        self.update(|s| s.dir = dir);
        Ok(())
    }

    /// `CONFIG SET dbfilename`: a file name, not a path ([`check_dbfilename`]).
    pub fn set_dbfilename(&self, name: &[u8]) -> Result<(), String> {
        let name = check_dbfilename(name)?;
        self.update(|s| s.dbfilename = name);
        Ok(())
    }

    /// `CONFIG SET save`: `""`, or `seconds changes` pairs.
    pub fn set_save(&self, spec: &[u8]) -> Result<(), String> {
        let save = parse_save(spec).ok_or_else(|| "Invalid save parameters".to_string())?;
        self.update(|s| s.save = save);
        Ok(())
    }

    /// `LASTSAVE`: unix seconds of the last successful save.
    pub fn lastsave(&self) -> u64 {
        self.state.lastsave_s.load(Ordering::SeqCst)
    }

    /// Whether a background save runs (`INFO persistence`'s `rdb_bgsave_in_progress`).
    pub fn bgsave_in_progress(&self) -> bool {
        self.state.bgsave_running.load(Ordering::SeqCst)
    }

    /// Whether the last background save succeeded (`rdb_last_bgsave_status`).
    pub fn last_bgsave_ok(&self) -> bool {
        self.state.last_bgsave_ok.load(Ordering::SeqCst)
    }

    /// Writes since the last save, given the keyspace's [`Db::changes`] sum now
    /// (`rdb_changes_since_last_save`).
    pub fn changes_since_save(&self, changes_now: u64) -> u64 {
        changes_now.saturating_sub(self.state.changes_at_save.load(Ordering::SeqCst))
    }

    /// Records that the keyspace as of `changes` is on disk, at `now_ms`.
    fn saved(&self, changes: u64, now_ms: u64) {
        self.state.changes_at_save.store(changes, Ordering::SeqCst);
        self.state.lastsave_s.store(now_ms / 1000, Ordering::SeqCst);
    }

    /// Records that the keyspace as of `changes` came from the file (at start or `DEBUG
    /// RELOAD`): nothing to save yet.
    pub fn loaded(&self, changes: u64) {
        self.state.changes_at_save.store(changes, Ordering::SeqCst);
    }

    /// The file's path now.
    pub fn path(&self) -> PathBuf {
        let s = self.settings();
        s.dir.join(&s.dbfilename)
    }

    /// Saves `snapshot` on this thread (`SAVE`): written, synced, renamed into place.
    pub fn save(&self, snapshot: &Snapshot, changes: u64, now_ms: u64) -> Result<(), SaveError> {
        let mut bytes = Vec::new();
        rdb::encode(snapshot, now_ms, &mut bytes);
        self.state.write(&bytes, None)?;
        self.saved(changes, now_ms);
        Ok(())
    }

    /// Starts a background save of `snapshot` (`BGSAVE`, a save point); `false` if one runs
    /// already or its thread could not start (logged).
    pub fn bgsave(&self, snapshot: Snapshot, changes: u64, now_ms: u64) -> bool {
        if self.state.bgsave_running.swap(true, Ordering::SeqCst) {
            return false;
        }
        self.state.bgsave_scheduled.store(false, Ordering::SeqCst);
        self.state
            .last_bgsave_try_s
            .store(now_ms / 1000, Ordering::SeqCst);
        let generation = *self.state.file.lock().unwrap_or_else(PoisonError::into_inner);
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ferry-redis-bgsave".into())
            .spawn(move || {
                let mut bytes = Vec::new();
                rdb::encode(&snapshot, now_ms, &mut bytes);
                drop(snapshot);
                let result = this.state.write(&bytes, Some(generation));
                match &result {
                    Ok(()) => this.saved(changes, now_ms),
                    Err(e) => eprintln!("ferry-redis: background save failed: {e}"),
                }
                let ok = !matches!(result, Err(SaveError::Io { .. }));
                this.state.last_bgsave_ok.store(ok, Ordering::SeqCst);
                this.state.bgsave_running.store(false, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            eprintln!("ferry-redis: background save: no thread: {e}");
            self.state.last_bgsave_ok.store(false, Ordering::SeqCst);
            self.state.bgsave_running.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Whether a background save should start now: one was scheduled, or a save point is
    /// reached (`changes` writes since the last save and its seconds passed), and none runs; after
    /// a failed one, not before 5 s (Redis's `CONFIG_BGSAVE_RETRY_DELAY`).
    pub fn due(&self, changes_now: u64, now_ms: u64) -> bool {
        let st = &self.state;
        if st.bgsave_running.load(Ordering::SeqCst) {
            return false;
        }
        if st.bgsave_scheduled.load(Ordering::SeqCst) {
            return true;
        }
        let now_s = now_ms / 1000;
        let changes = self.changes_since_save(changes_now);
        let since_save = now_s.saturating_sub(st.lastsave_s.load(Ordering::SeqCst));
        let retry_ok = st.last_bgsave_ok.load(Ordering::SeqCst)
            || now_s.saturating_sub(st.last_bgsave_try_s.load(Ordering::SeqCst)) >= RETRY_DELAY_S;
        retry_ok
            && self
                .settings()
                .save
                .iter()
                .any(|&(secs, min)| changes >= min && since_save >= secs)
    }
}

impl State {
    /// Writes `bytes` as the file: a temporary file in `dir`, synced, renamed over
    /// `dbfilename`. With `generation`, only if no other save finished since it was read.
    fn write(&self, bytes: &[u8], generation: Option<u64>) -> Result<(), SaveError> {
        let s = self
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        let temp = s.dir.join(format!("temp-{}-{n}.rdb", std::process::id()));
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| SaveError::Io { path, source }
        };
        let written = std::fs::File::create(&temp).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(io_err(&temp)(e));
        }
        let path = s.dir.join(&s.dbfilename);
        let mut current = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if generation.is_some_and(|g| g != *current) {
            let _ = std::fs::remove_file(&temp);
            return Err(SaveError::Superseded);
        }
        std::fs::rename(&temp, &path).map_err(io_err(&path))?;
        *current += 1;
        Ok(())
    }
}

/// The limits a load applies: the server's databases, the pool's largest buffer.
pub(crate) fn limits(databases: usize, pool: &Pool) -> rdb::Limits {
    rdb::Limits {
        databases: databases.max(1),
        max_string_len: pool.max_class(),
        max_elements: MAX_ELEMENTS,
    }
}

/// Reads and decodes the file at `path`; `Ok(None)` when there is none.
fn read(path: &Path, databases: usize, pool: &Pool) -> Result<Option<Snapshot>, LoadError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LoadError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    rdb::decode(&bytes, pool, &limits(databases, pool))
        .map(Some)
        .map_err(|source| LoadError::Rdb {
            path: path.to_owned(),
            source,
        })
}

/// Loads `config`'s file, if there is one, into `dbs` (new, empty): the number of keys
/// loaded (expired ones are left out).
pub fn load_at_start(config: &Config, pool: &Pool, dbs: &mut [Db], now_ms: u64) -> Result<usize, LoadError> {
    let path = config.dir.join(&config.dbfilename);
    let Some(snapshot) = read(&path, dbs.len(), pool)? else {
        return Ok(0);
    };
    snapshot.restore(dbs.iter_mut(), now_ms);
    Ok(dbs.iter().map(Db::len).sum())
}

/// Every database, in index order.
pub(super) fn all_dbs<'c>(ctx: &'c Ctx<'_>) -> Vec<&'c Db> {
    let mut dbs: Vec<&Db> = ctx.others.iter().map(|(_, db)| db).collect();
    dbs.insert(ctx.client.db, &*ctx.db);
    dbs
}

/// Every database, in index order, to change.
pub(super) fn all_dbs_mut<'c>(ctx: &'c mut Ctx<'_>) -> Vec<&'c mut Db> {
    let mut dbs: Vec<&mut Db> = ctx.others.iter_mut().collect();
    dbs.insert(ctx.client.db, &mut *ctx.db);
    dbs
}

/// The keyspace's [`Db::changes`] sum.
pub fn changes<'d>(dbs: impl IntoIterator<Item = &'d Db>) -> u64 {
    dbs.into_iter().map(Db::changes).sum()
}

/// A snapshot of `dbs` and the changes sum it holds.
pub fn snapshot(dbs: &[&Db], now_ms: u64) -> (Snapshot, u64) {
    (
        Snapshot::take(dbs.iter().copied(), now_ms),
        changes(dbs.iter().copied()),
    )
}

const BGSAVE_RUNNING: &str = "ERR Background save already in progress";

/// `SAVE`: writes the file now, blocking every client meanwhile (as Redis).
pub fn save(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    let persist = &ctx.server.persist;
    if persist.bgsave_in_progress() {
        return out.error(BGSAVE_RUNNING);
    }
    let (snap, changes) = snapshot(&all_dbs(ctx), ctx.now_ms);
    match persist.save(&snap, changes, ctx.now_ms) {
        Ok(()) => out.ok(),
        Err(e) => out.error(format!("ERR {e}")),
    }
}

/// `BGSAVE [SCHEDULE]`: starts a background save; with `SCHEDULE` while one runs, starts
/// another when it ends.
pub fn bgsave(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let schedule = match args.len() {
        1 => false,
        2 if args.get(1).eq_ignore_ascii_case(b"SCHEDULE") => true,
        _ => return out.error(SYNTAX),
    };
    let persist = &ctx.server.persist;
    if persist.bgsave_in_progress() {
        if schedule {
            persist.state.bgsave_scheduled.store(true, Ordering::SeqCst);
            return out.simple("Background saving scheduled");
        }
        return out.error(BGSAVE_RUNNING);
    }
    let (snap, changes) = snapshot(&all_dbs(ctx), ctx.now_ms);
    if persist.bgsave(snap, changes, ctx.now_ms) {
        out.simple("Background saving started");
    } else {
        out.error("ERR Background save failed to start");
    }
}

/// `LASTSAVE`.
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.integer(ctx.server.persist.lastsave() as i64);
}

/// `DUMP key`: the value serialized as Redis does (its RDB encoding, the RDB version and a
/// CRC-64), or a null reply.
pub fn dump(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match ctx.db.get(args.get(1), ctx.now_ms) {
        Some(value) => {
            let mut payload = Vec::new();
            rdb::dump(value, &mut payload);
            out.bulk(&payload);
        }
        None => out.null(),
    }
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]`: stores the value a
/// `DUMP` made; `ttl` in milliseconds from now (0: none), or a unix time in milliseconds with
/// `ABSTTL`. `IDLETIME` and `FREQ` are checked and ignored (Ferry keeps no LRU or LFU data
/// beyond the access time). A deadline already past deletes the key instead, as in Redis.
pub fn restore(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let (mut replace, mut absttl) = (false, false);
    // IDLETIME and FREQ exclude each other (Redis: a syntax error).
    let (mut idletime, mut freq) = (false, false);
    let mut i = 4;
    while i < args.len() {
        let opt = args.get(i);
        let has_value = i + 1 < args.len();
        if opt.eq_ignore_ascii_case(b"REPLACE") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"ABSTTL") {
            absttl = true;
        } else if opt.eq_ignore_ascii_case(b"IDLETIME") && has_value && !freq {
            idletime = true;
            i += 1;
            match parse_i64(args.get(i)) {
                None => return out.error(NOT_INTEGER),
                Some(n) if n < 0 => return out.error("ERR Invalid IDLETIME value, must be >= 0"),
                Some(_) => {}
            }
        } else if opt.eq_ignore_ascii_case(b"FREQ") && has_value && !idletime {
            freq = true;
            i += 1;
            match parse_i64(args.get(i)) {
                None => return out.error(NOT_INTEGER),
                Some(n) if !(0..=255).contains(&n) => {
                    return out.error("ERR Invalid FREQ value, must be >= 0 and <= 255");
                }
                Some(_) => {}
            }
        } else {
            return out.error(SYNTAX);
        }
        i += 1;
    }
    // Redis's order: the key, then the TTL, then the payload.
    let key = args.get(1);
    let now = ctx.now_ms;
    if !replace && ctx.db.find(key, now, Access::Write).is_some() {
        return out.error("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = parse_i64(args.get(2)) else {
        return out.error(NOT_INTEGER);
    };
    if ttl < 0 {
        return out.error("ERR Invalid TTL value, must be >= 0");
    }
    let pool = ctx.db.pool().clone();
    let payload = args.get(3);
    let value = match rdb::restore(payload, &pool, &limits(1, &pool)) {
        Ok(v) => v,
        Err(RdbError::Checksum { .. } | RdbError::Version(_)) => return out.error(BAD_PAYLOAD),
        // Shorter than the footer: Redis's `verifyDumpPayload` refuses it with these words too.
        Err(_) if payload.len() < 10 => return out.error(BAD_PAYLOAD),
        Err(_) => return out.error("ERR Bad data format"),
    };
    let deadline = match (ttl as u64, absttl) {
        (0, _) => None,
        (at, true) => Some(at),
        (rel, false) => Some(now.saturating_add(rel)),
    };
    if deadline.is_some_and(|d| d <= now) {
        // Already expired: the key is deleted (REPLACE) or never made.
        ctx.db.remove(key, now);
        return out.ok();
    }
    ctx.db.set(
        key,
        value,
        deadline.map_or(Ttl::Clear, Ttl::At),
        SetIf::Always,
        now,
    );
    out.ok();
}

/// `RESTORE`'s reply to a payload whose footer is wrong or missing.
const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";

/// `DEBUG RELOAD`: saves, empties every database and loads the file back, as Redis does.
pub fn debug_reload(ctx: &mut Ctx<'_>, out: &mut ReplyBuf) {
    let persist = ctx.server.persist.clone();
    let now = ctx.now_ms;
    let (snap, changes_before) = snapshot(&all_dbs(ctx), now);
    if let Err(e) = persist.save(&snap, changes_before, now) {
        return out.error(format!("ERR Error trying to save the DB: {e}"));
    }
    drop(snap);
    let count = ctx.others.count();
    let pool = ctx.db.pool().clone();
    let loaded = match read(&persist.path(), count, &pool) {
        Ok(Some(s)) => s,
        Ok(None) => return out.error("ERR Error trying to load the RDB dump: the file is gone"),
        Err(e) => return out.error(format!("ERR Error trying to load the RDB dump: {e}")),
    };
    let mut dbs = all_dbs_mut(ctx);
    dbs.iter_mut().for_each(|db| db.flush());
    loaded.restore(dbs, now);
    persist.loaded(changes(all_dbs(ctx)));
    out.ok();
}

/// `BGREWRITEAOF`: rewrites the AOF from a snapshot of the keyspace, on a thread
/// ([`Aof::rewrite`](crate::aof::Aof::rewrite)).
pub fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    let (snap, _) = snapshot(&all_dbs(ctx), ctx.now_ms);
    let dir = ctx.server.persist.settings().dir;
    match ctx.server.aof.rewrite(&dir, snap, ctx.now_ms) {
        Ok(()) => out.simple("Background append only file rewriting started"),
        Err(e) => out.error(format!("ERR {e}")),
    }
}

/// `CONFIG SET appendonly yes|no`: on, a rewrite of the keyspace as it is now starts the
/// files; off, the file is synced and closed.
pub fn set_appendonly(ctx: &mut Ctx<'_>, on: bool) -> Result<(), String> {
    let server = ctx.server;
    let aof = &server.aof;
    if !on {
        aof.turn_off();
        if !server.feed.is_active() {
            // Nobody needs the keys expiry deletes any more (a replica may still).
            all_dbs_mut(ctx).into_iter().for_each(|db| db.log_expired(false));
        }
        return Ok(());
    }
    if aof.enabled() {
        return Ok(());
    }
    let (snap, _) = snapshot(&all_dbs(ctx), ctx.now_ms);
    let dir = server.persist.settings().dir;
    aof.turn_on(&dir, snap, ctx.now_ms)?;
    // Keys expiry deletes go to the AOF as `DEL`s, as to a replica.
    all_dbs_mut(ctx).into_iter().for_each(|db| db.log_expired(true));
    Ok(())
}

/// `DEBUG LOADAOF`: syncs the AOF, empties every database and loads the AOF directory back,
/// as Redis does (nothing propagates meanwhile).
pub fn debug_loadaof(ctx: &mut Ctx<'_>, out: &mut ReplyBuf) {
    let server = ctx.server;
    server.aof.flush();
    let (dir, filename, truncated_ok) = server.aof.location(&server.persist.settings().dir);
    let pool = ctx.db.pool().clone();
    let mut fresh: Vec<Db> = (0..ctx.others.count())
        .map(|_| Db::new(pool.clone(), server.config.keep_in_place_min))
        .collect();
    let now = ctx.now_ms;
    server.feed.set_loading(true);
    let loaded = crate::aof::load_dir(&dir, &filename, &mut fresh, server, truncated_ok, now);
    server.feed.set_loading(false);
    match loaded {
        Err(e) => return out.error(format!("ERR Error loading the AOF: {e}")),
        // Redis exits here; the dataset is kept instead.
        Ok((None, _)) => return out.error(format!("ERR no AOF to load: {} has no manifest", dir.display())),
        Ok((Some(_), _)) => {}
    }
    let all: Vec<&Db> = fresh.iter().collect();
    let (snap, _) = snapshot(&all, now);
    let mut dbs = all_dbs_mut(ctx);
    dbs.iter_mut().for_each(|db| db.flush());
    snap.restore(dbs, now);
    out.ok();
}

/// After `FLUSHALL`: with save points set, the empty dataset is saved at once (Redis's
/// `flushAllDataAndResetRDB`), replacing any background save still running.
pub fn after_flushall(ctx: &mut Ctx<'_>) {
    let persist = &ctx.server.persist;
    if persist.settings().save.is_empty() {
        return;
    }
    let (snap, changes) = snapshot(&all_dbs(ctx), ctx.now_ms);
    if let Err(e) = persist.save(&snap, changes, ctx.now_ms) {
        eprintln!("ferry-redis: the save after FLUSHALL failed: {e}");
    }
}

/// Starts a background save of `dbs` if one is due ([`Persistence::due`]), and an AOF
/// rewrite if the files grew enough ([`Aof::rewrite_due`](crate::aof::Aof::rewrite_due));
/// the server's clock calls it.
pub fn tick(server: &super::ServerInfo, dbs: &[Db], now_ms: u64) {
    let persist = &server.persist;
    let all: Vec<&Db> = dbs.iter().collect();
    if persist.due(changes(dbs), now_ms) {
        let (snap, changes) = snapshot(&all, now_ms);
        persist.bgsave(snap, changes, now_ms);
    }
    if server.aof.rewrite_due() {
        let (snap, _) = snapshot(&all, now_ms);
        if let Err(e) = server.aof.rewrite(&persist.settings().dir, snap, now_ms) {
            eprintln!("ferry-redis: automatic AOF rewrite: {e}");
        }
    }
}

/// `save` as redis.conf writes it: `""`, or `seconds changes` pairs.
pub fn parse_save(spec: &[u8]) -> Option<Vec<(u64, u64)>> {
    let text = std::str::from_utf8(spec).ok()?;
    let nums: Vec<u64> = text
        .split_ascii_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if nums.len() % 2 != 0 {
        return None;
    }
    Some(nums.chunks(2).map(|p| (p[0], p[1])).collect())
}

/// `save` as `CONFIG GET` shows it.
pub fn show_save(save: &[(u64, u64)]) -> String {
    save.iter()
        .map(|(s, c)| format!("{s} {c}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `dir` as `CONFIG SET` takes it: an existing directory, made absolute; Redis's words for
/// why not.
pub fn check_dir(dir: &[u8]) -> Result<PathBuf, String> {
    let dir = Path::new(std::str::from_utf8(dir).map_err(|_| "the path is not UTF-8".to_string())?);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => std::fs::canonicalize(dir).map_err(|e| os_words(&e)),
        Ok(_) => Err("Not a directory".into()),
        Err(e) => Err(os_words(&e)),
    }
}

/// `dbfilename` as `CONFIG SET` takes it: a file name, not a path (Redis's rule).
pub fn check_dbfilename(name: &[u8]) -> Result<String, String> {
    let name = std::str::from_utf8(name).map_err(|_| "the name is not UTF-8".to_string())?;
    if name.contains('/') || name.is_empty() {
        return Err("dbfilename can't be a path, just a filename".into());
    }
    Ok(name.to_owned())
}

/// The words Redis's errors use for a system error (`strerror`), without Rust's suffix.
fn os_words(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use ferry_testkit::Scratch;

    use crate::cmd::harness::{Harness, OK, bulk, bulks, err, int};

    /// A harness saving into a fresh directory, with `DEBUG` on.
    fn harness(dir: &Scratch) -> Harness {
        let mut h = Harness::new();
        h.server.config.enable_debug_command = true;
        assert_eq!(h.cmd(&format!("CONFIG SET dir {}", dir.0.display())), OK);
        h
    }

    #[test]
    fn debug_reload_keeps_every_type_ttl_and_database() {
        let dir = Scratch::new("redis-reload");
        let mut h = harness(&dir);
        h.cmd("RPUSH l a b c");
        h.cmd("HSET h f v");
        h.cmd("SADD s x y");
        h.cmd("ZADD z 1 a 2 b");
        h.cmd("SET t v PX 5000");
        h.cmd("SELECT 5");
        h.cmd("SET five 5");
        h.cmd("SELECT 0");
        assert_eq!(h.cmd("DEBUG RELOAD"), OK);
        assert!(dir.0.join("dump.rdb").exists());
        assert_eq!(h.cmd("LRANGE l 0 -1"), bulks(&["a", "b", "c"]));
        assert_eq!(h.cmd("HGET h f"), bulk("v"));
        assert_eq!(h.cmd("SCARD s"), int(2));
        assert_eq!(h.cmd("ZRANGE z 0 -1"), bulks(&["a", "b"]));
        assert_eq!(h.cmd("PTTL t"), int(5000));
        assert_eq!(h.cmd("DBSIZE"), int(5));
        h.cmd("SELECT 5");
        assert_eq!(h.cmd("GET five"), bulk("5"));
        assert!(
            h.cmd("INFO persistence")
                .contains("rdb_changes_since_last_save:0\r\n")
        );
    }

    #[test]
    fn save_lastsave_and_config() {
        let dir = Scratch::new("redis-save");
        let mut h = harness(&dir);
        assert_eq!(h.cmd("CONFIG SET dbfilename other.rdb"), OK);
        assert_eq!(
            h.cmd("CONFIG GET dbfilename"),
            bulks(&["dbfilename", "other.rdb"])
        );
        let canonical = std::fs::canonicalize(&dir.0).unwrap();
        assert_eq!(
            h.cmd("CONFIG GET dir"),
            bulks(&["dir", &canonical.display().to_string()])
        );
        h.cmd("SET k v");
        assert!(
            h.cmd("INFO persistence")
                .contains("rdb_changes_since_last_save:1\r\n")
        );
        assert_eq!(h.cmd("SAVE"), OK);
        assert!(dir.0.join("other.rdb").exists());
        assert!(
            h.cmd("INFO persistence")
                .contains("rdb_changes_since_last_save:0\r\n")
        );
        let lastsave: u64 = h.cmd("LASTSAVE")[1..].trim().parse().unwrap();
        assert_eq!(lastsave, h.now_ms / 1000);
        assert_eq!(
            h.cmd("CONFIG SET dir /nonexistent/ferry"),
            err("ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory")
        );
        assert_eq!(
            h.cmd("CONFIG SET dbfilename a/b"),
            err(
                "ERR CONFIG SET failed (possibly related to argument 'dbfilename') - dbfilename can't be a \
                 path, just a filename"
            )
        );
        assert!(h.cmd("CONFIG SET save 1").starts_with("-ERR CONFIG SET failed"));
        assert_eq!(
            h.run(&[b"CONFIG", b"SET", b"save", b"900 1 300 10"]),
            OK.as_bytes()
        );
        assert_eq!(h.cmd("CONFIG GET save"), bulks(&["save", "900 1 300 10"]));
    }

    #[test]
    fn bgsave_writes_the_snapshot_and_flushall_saves_when_save_points_are_set() {
        let dir = Scratch::new("redis-bgsave");
        let mut h = harness(&dir);
        h.cmd("SET k v");
        assert_eq!(h.cmd("BGSAVE"), "+Background saving started\r\n");
        let persist = h.server.persist.clone();
        ferry_testkit::wait_until("the background save", std::time::Duration::from_secs(60), || {
            !persist.bgsave_in_progress()
        });
        assert!(h.server.persist.last_bgsave_ok());
        let pool = h.db.pool().clone();
        let file = std::fs::read(dir.0.join("dump.rdb")).unwrap();
        let limits = super::limits(16, &pool);
        assert_eq!(crate::rdb::decode(&file, &pool, &limits).unwrap().len(), 1);

        assert_eq!(h.run(&[b"CONFIG", b"SET", b"save", b"3600 1"]), OK.as_bytes());
        assert_eq!(h.cmd("FLUSHALL"), OK);
        let file = std::fs::read(dir.0.join("dump.rdb")).unwrap();
        assert!(crate::rdb::decode(&file, &pool, &limits).unwrap().is_empty());
    }

    #[test]
    fn dump_and_restore() {
        let mut h = Harness::new();
        h.cmd("RPUSH l a b");
        let payload = h.run(&[b"DUMP", b"l"]);
        // `$<len>\r\n<payload>\r\n`: the payload alone.
        let start = payload.iter().position(|&b| b == b'\n').unwrap() + 1;
        let payload = payload[start..payload.len() - 2].to_vec();
        assert_eq!(
            h.run(&[b"RESTORE", b"l", b"0", &payload]),
            err("BUSYKEY Target key name already exists.").as_bytes()
        );
        assert_eq!(h.run(&[b"RESTORE", b"m", b"5000", &payload]), OK.as_bytes());
        assert_eq!(h.cmd("LRANGE m 0 -1"), bulks(&["a", "b"]));
        assert_eq!(h.cmd("PTTL m"), int(5000));
        assert_eq!(
            h.run(&[b"RESTORE", b"l", b"0", &payload, b"REPLACE", b"IDLETIME", b"10"]),
            OK.as_bytes()
        );
        let mut bad = payload.clone();
        bad[1] ^= 1;
        assert_eq!(
            h.run(&[b"RESTORE", b"n", b"0", &bad]),
            err("ERR DUMP payload version or checksum are wrong").as_bytes()
        );
        assert_eq!(
            h.run(&[b"RESTORE", b"n", b"-1", &payload]),
            err("ERR Invalid TTL value, must be >= 0").as_bytes()
        );
        assert_eq!(h.cmd("DUMP nokey"), "$-1\r\n");
        // An absolute deadline already past: OK, and no key.
        assert_eq!(
            h.run(&[b"RESTORE", b"n", b"1", &payload, b"ABSTTL"]),
            OK.as_bytes()
        );
        assert_eq!(h.cmd("EXISTS n"), int(0));
    }

    #[test]
    fn save_points_fire_on_changes_and_time() {
        let dir = Scratch::new("redis-points");
        let h = harness(&dir);
        let p = &h.server.persist;
        p.set_save(b"10 2").unwrap();
        let start = p.lastsave() * 1000;
        assert!(!p.due(1, start + 60_000), "one change of two");
        assert!(!p.due(2, start + 5_000), "five seconds of ten");
        assert!(p.due(2, start + 10_000));
        p.set_save(b"").unwrap();
        assert!(!p.due(100, start + 100_000));
    }
}
