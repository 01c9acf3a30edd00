//! The commands: a table of [`CommandSpec`]s (name, arity, flags, key positions, handler) and
//! [`execute`], which checks arity, authentication and memory before calling a handler, or
//! queues the command when the client has a transaction open ([`multi`]).
//!
//! Handlers take the parsed arguments and the [`Ctx`] (the selected database, the others,
//! client, server), and write exactly one reply into the [`ReplyBuf`]. They never see sockets
//! or clocks: `now_ms` is given. [`execute`] takes a [`Session`] (every database) and gives
//! each command the database its client selected at that moment, so a `SELECT` queued in a
//! transaction applies to the commands after it.
//!
//! Groups: [`strings`], [`keys`] (with [`sort`]), [`lists`], [`hashes`], [`sets`], [`zsets`]
//! and [`zalgebra`] (with [`random`]: the random picks of the three collections), [`geo`]
//! (sorted sets of geohashes), [`notify`] (keyspace notifications), [`multi`]
//! (transactions), [`pubsub`], [`blocking`] (`BLPOP` and the others), [`introspect`]
//! (`OBJECT`, `DEBUG`, `FUNCTION`, `MEMORY`), [`connection`], [`databases`], [`client`],
//! [`command`], [`config`] and [`info`].
//!
//! What a command leaves for other loops (a published message, a served waiter's reply) is
//! [`pubsub::Mail`] in the server-wide mailboxes, and the loops to wake are in
//! [`Client::wake`]: handlers never do I/O, the server delivers. Container commands share [`subcommand`].
//! The [`table`] names every handler; handlers that describe the table (`COMMAND`) read it
//! through [`Ctx::table`], so no handler module imports it.

use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use ferry_buf::{Pool, PoolError, SharedBuf};

use crate::config::Config;
use crate::db::Db;
use crate::resp::{Proto, ReplyBuf};

pub mod blocking;
pub mod client;
pub mod command;
pub mod config;
pub mod connection;
pub mod databases;
pub mod geo;
#[cfg(test)]
pub(crate) mod harness;
pub mod hashes;
pub mod info;
pub mod introspect;
pub mod keys;
pub mod lists;
pub mod multi;
pub mod notify;
pub mod persist;
pub mod pubsub;
pub mod random;
pub mod replication;
pub mod sets;
pub mod sort;
pub mod strings;
pub mod subcommand;
pub mod table;
pub mod zalgebra;
pub mod zsets;

/// A handler: reads `args` (the command name is `args.get(0)`), writes one reply to `out`.
pub type Handler = fn(&mut Ctx<'_>, &Args<'_>, &mut ReplyBuf);

/// One command, as `COMMAND` reports it.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis's arity: `n` means exactly `n` arguments (the name included), `-n` at least `n`.
    pub arity: i32,
    /// Redis's flags (`write`, `readonly`, `denyoom`, `fast`, `noauth`, ...).
    pub flags: &'static [&'static str],
    /// First key argument (0: none), last key (-1: the last argument), step.
    pub keys: (i32, i32, i32),
    /// Redis's command group (`string`, `generic`, `list`, `hash`, `set`, `sorted-set`,
    /// `server`, `connection`).
    pub group: &'static str,
    /// One-line summary (`COMMAND DOCS`).
    pub summary: &'static str,
    /// The handler.
    pub handler: Handler,
}

impl CommandSpec {
    /// Whether the spec has `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// Whether `argc` arguments (the name included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let n = self.arity.unsigned_abs() as usize;
        if self.arity >= 0 { argc == n } else { argc >= n }
    }
}

/// The arguments of one request, read in place: ranges of the read buffer they arrived in (or
/// of the parser's scratch, for inline commands with quotes).
#[derive(Debug, Clone, Copy)]
pub struct Args<'a> {
    base: &'a [u8],
    ranges: &'a [Range<usize>],
    shared: Option<&'a SharedBuf>,
    /// Bytes of pool memory `shared` holds (its slot), which a kept value keeps alive.
    held: usize,
}

impl<'a> Args<'a> {
    /// Arguments `ranges` of `base`; `shared` is `base` as a counted pool buffer when it is one
    /// (then large values can be kept in place).
    pub fn new(base: &'a [u8], ranges: &'a [Range<usize>], shared: Option<&'a SharedBuf>) -> Args<'a> {
        debug_assert!(shared.is_none_or(|s| std::ptr::eq(&s[..], base)));
        Args {
            base,
            ranges,
            shared,
            held: base.len(),
        }
    }

    /// The same arguments, saying that the read buffer holds `held` bytes of the pool (its
    /// capacity): a value is kept in it only when that wastes no more than the value's size.
    pub fn holding(self, held: usize) -> Args<'a> {
        Args { held, ..self }
    }

    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are none (never, for a parsed command).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` (0 is the command name).
    ///
    /// # Panics
    /// If `i >= len()`: handlers run only after their arity was checked.
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.base[self.ranges[i].clone()]
    }

    /// Arguments `from..`.
    pub fn iter_from(&self, from: usize) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let base = self.base;
        self.ranges[from.min(self.ranges.len())..]
            .iter()
            .map(move |r| &base[r.clone()])
    }

    /// Argument `i` as a stored value: a counted slice of the read buffer it arrived in (no
    /// copy) when it is at least `keep_min` bytes long and at least half of that buffer, else a
    /// copy in `pool`. The second rule bounds the memory a stored value keeps alive to twice
    /// its size: a 4 KiB value alone in a 16 KiB read buffer is copied, a large value that got
    /// a buffer sized for it is kept.
    pub fn value(&self, i: usize, pool: &Pool, keep_min: usize) -> Result<SharedBuf, PoolError> {
        let r = self.ranges[i].clone();
        if r.len() >= keep_min && r.len().saturating_mul(2) >= self.held {
            if let Some(shared) = self.shared {
                return Ok(shared.slice(r));
            }
        }
        pool.copy_from(&self.base[r])
    }
}

/// A copy of a command's arguments, kept past the read buffer they came in (a command queued
/// by `MULTI`, a blocked client's command).
#[derive(Debug, Clone, Default)]
pub struct OwnedArgs {
    bytes: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl OwnedArgs {
    /// Copies `args`.
    pub fn from(args: &Args<'_>) -> OwnedArgs {
        let mut bytes = Vec::new();
        let ranges = args
            .iter_from(0)
            .map(|a| {
                let start = bytes.len();
                bytes.extend_from_slice(a);
                start..bytes.len()
            })
            .collect();
        OwnedArgs { bytes, ranges }
    }

    /// The arguments, to run.
    pub fn args(&self) -> Args<'_> {
        Args::new(&self.bytes, &self.ranges, None)
    }
}

/// The command table as handlers see it: every command, lookup by name, and the subcommands of
/// the containers. [`table::TABLE`] is the one value; [`Ctx`] carries it, so that the handlers
/// that describe the table (`COMMAND`) need not import [`table`], which imports them.
#[derive(Debug)]
pub struct Table {
    /// Every command, sorted by name.
    pub commands: &'static [CommandSpec],
    /// The command named (in any case) by the argument.
    pub lookup: fn(&[u8]) -> Option<&'static CommandSpec>,
    /// The subcommands of a container command (lower-case name); empty for others.
    pub subcommands: fn(&str) -> &'static [subcommand::Sub],
}

/// What the server knows about one client.
#[derive(Debug, Clone)]
pub struct Client {
    /// `CLIENT ID`: unique, increasing from 1.
    pub id: u64,
    /// `CLIENT SETNAME`.
    pub name: Option<Vec<u8>>,
    /// RESP2 until `HELLO 3`.
    pub proto: Proto,
    /// Whether `AUTH` succeeded (true from the start when no password is set).
    pub authenticated: bool,
    /// `QUIT`: close once this reply is written.
    pub close_after_reply: bool,
    /// The client's address and ours.
    pub addr: SocketAddr,
    /// Our side of the connection.
    pub local_addr: SocketAddr,
    /// When it connected (unix milliseconds).
    pub created_ms: u64,
    /// The selected database (`SELECT`).
    pub db: usize,
    /// The open transaction (`MULTI`), if any.
    pub multi: Option<multi::Multi>,
    /// The keys `WATCH`ed for the next `EXEC`.
    pub watched: Vec<multi::Watched>,
    /// Where the server holds it (set by the event loop that accepted it).
    pub home: pubsub::Home,
    /// Its channels and patterns ([`pubsub`]).
    pub subs: pubsub::Subscriptions,
    /// `CLIENT REPLY`.
    pub reply: ReplyMode,
    /// The blocking command it waits in ([`blocking`]): its loop runs none of its later
    /// requests until it is served or times out.
    pub block: Option<blocking::Block>,
    /// Its commands run inside `EXEC`: a blocking command answers at once.
    pub deny_blocking: bool,
    /// Event loops its commands left work for (deliveries in their mailboxes): the server
    /// wakes each and clears the list.
    pub wake: Vec<usize>,
    /// A replica (`SYNC`): the connection carries the replication stream from now on.
    pub replica: bool,
    /// The last command it ran (`client|list` for a subcommand), for `CLIENT LIST`.
    pub last_cmd: &'static str,
    /// The master this server replicates (`REPLICAOF`): its writes pass `READONLY`.
    pub master: bool,
    /// While a command runs: the bytes read from its start on (`CLIENT LIST`'s `qbuf`).
    pub query_bytes: usize,
}

impl Client {
    /// A client that just connected from `addr` to `local_addr`, in RESP2, on database 0;
    /// `authenticated` when no password is required.
    pub fn new(
        id: u64,
        addr: SocketAddr,
        local_addr: SocketAddr,
        created_ms: u64,
        authenticated: bool,
    ) -> Client {
        Client {
            id,
            name: None,
            proto: Proto::Resp2,
            authenticated,
            close_after_reply: false,
            addr,
            local_addr,
            created_ms,
            db: 0,
            multi: None,
            watched: Vec::new(),
            reply: ReplyMode::On,
            block: None,
            deny_blocking: false,
            home: pubsub::Home::default(),
            subs: pubsub::Subscriptions::default(),
            wake: Vec::new(),
            replica: false,
            last_cmd: "NULL",
            master: false,
            query_bytes: 0,
        }
    }
}

/// Whether a client's commands are answered (`CLIENT REPLY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// They are.
    On,
    /// They are not (pub/sub messages and notifications still go out).
    Off,
    /// `CLIENT REPLY SKIP` ran: the command after it is not answered.
    SkipNext,
    /// This command is not answered.
    Skip,
}

/// Server-wide counters (`INFO stats`), shared by every loop.
#[derive(Debug, Default)]
pub struct Stats {
    /// Clients connected now.
    pub connected_clients: AtomicU64,
    /// Connections accepted since start.
    pub total_connections_received: AtomicU64,
    /// Connections refused (`maxclients`).
    pub rejected_connections: AtomicU64,
    /// Commands executed.
    pub total_commands_processed: AtomicU64,
    /// Request bytes read.
    pub total_net_input_bytes: AtomicU64,
    /// Reply bytes queued.
    pub total_net_output_bytes: AtomicU64,
    /// Value bytes copied into replies (below the threshold).
    pub reply_bytes_copied: AtomicU64,
    /// Value bytes sent by reference from the keyspace (at or above the threshold).
    pub reply_bytes_referenced: AtomicU64,
    /// Clients disconnected for a protocol error or a limit.
    pub clients_dropped: AtomicU64,
}

impl Stats {
    /// Adds `n` to `counter` (relaxed: these are statistics).
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads `counter`.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// One command's counters (`INFO commandstats`).
#[derive(Debug, Default)]
pub struct CommandStats {
    /// Times it ran (inside `EXEC` too).
    pub calls: AtomicU64,
    /// Microseconds it ran for, in total.
    pub usec: AtomicU64,
    /// Times it was refused before running (arity, authentication, memory, pub/sub mode).
    pub rejected_calls: AtomicU64,
    /// Times it ran and answered an error.
    pub failed_calls: AtomicU64,
}

impl ServerInfo {
    /// The counters of `spec` (an entry of [`table::COMMANDS`]).
    pub fn command_stats(&self, spec: &CommandSpec) -> &CommandStats {
        // The entry's index from its address: `spec` is in the table's array.
        let offset = (spec as *const CommandSpec as usize).wrapping_sub(table::COMMANDS.as_ptr() as usize);
        &self.command_stats[(offset / std::mem::size_of::<CommandSpec>()).min(self.command_stats.len() - 1)]
    }
}

/// What every handler may read about the server.
#[derive(Debug)]
pub struct ServerInfo {
    /// The configuration it runs with.
    pub config: Config,
    /// The port it listens on (the configured one, or the one the kernel chose for port 0).
    pub port: u16,
    /// When it started.
    pub started: Instant,
    /// `INFO server`'s `run_id`: 40 hex digits, random per start.
    pub run_id: String,
    /// Counters.
    pub stats: Stats,
    /// Whether active expiry runs (`DEBUG SET-ACTIVE-EXPIRE`; lazy expiry always does).
    pub active_expire: AtomicBool,
    /// `maxmemory` now (`CONFIG SET` changes it; 0: no limit, as in Redis).
    pub maxmemory: AtomicUsize,
    /// The values of the parameters `CONFIG SET` accepts without effect, in the order of
    /// [`config::INERT_PARAMS`].
    pub inert: Mutex<Vec<String>>,
    /// Every subscription, and the deliveries waiting for each loop.
    pub pubsub: Mutex<pubsub::Registry>,
    /// `INFO commandstats`: one per [`table::COMMANDS`] entry, in its order.
    pub command_stats: Vec<CommandStats>,
    /// The clients waiting in blocking commands.
    pub blocked: Mutex<blocking::Registry>,
    /// Every connected client as its loop last saw it (`CLIENT LIST`, `CLIENT KILL`).
    pub clients: Mutex<client::Directory>,
    /// RDB persistence: where to save, when, and how the last save went.
    pub persist: persist::Persistence,
    /// What writes propagate, to replicas ([`replication`]) and the AOF.
    pub feed: std::sync::Arc<crate::feed::Feed>,
    /// The append-only file.
    pub aof: crate::aof::Aof,
    /// The master this server follows, if any (`REPLICAOF`, [`crate::replica`]).
    pub follow: replication::Follow,
    /// `notify-keyspace-events` ([`notify`]).
    pub notify: notify::Notify,
}

impl ServerInfo {
    /// A server's information at start: `config`, listening on `port`, with `run_id`.
    pub fn new(config: Config, port: u16, run_id: String) -> ServerInfo {
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let feed = std::sync::Arc::new(crate::feed::Feed::default());
        ServerInfo {
            persist: persist::Persistence::new(&config, now_s),
            feed: feed.clone(),
            aof: crate::aof::Aof::new(&config, feed),
            follow: replication::Follow::default(),
            notify: notify::Notify::default(),
            maxmemory: AtomicUsize::new(config.maxmemory),
            pubsub: Mutex::new(pubsub::Registry::new(config.threads)),
            command_stats: table::COMMANDS.iter().map(|_| CommandStats::default()).collect(),
            blocked: Mutex::new(blocking::Registry::default()),
            clients: Mutex::new(client::Directory::default()),
            config,
            port,
            started: Instant::now(),
            run_id,
            stats: Stats::default(),
            active_expire: AtomicBool::new(true),
            inert: Mutex::new(
                config::INERT_PARAMS
                    .iter()
                    .map(|p| p.default.to_owned())
                    .collect(),
            ),
        }
    }
}

/// The databases other than the selected one, by index (`MOVE`, `SWAPDB`, `FLUSHALL`,
/// `INFO keyspace`): the selected one is [`Ctx::db`].
#[derive(Debug)]
pub struct OtherDbs<'a> {
    before: &'a mut [Db],
    after: &'a mut [Db],
}

impl<'a> OtherDbs<'a> {
    /// Splits `dbs` into database `selected` and the others.
    ///
    /// # Panics
    /// If `selected` is not an index of `dbs` (`SELECT` checks it).
    pub fn split(dbs: &'a mut [Db], selected: usize) -> (&'a mut Db, OtherDbs<'a>) {
        let (before, rest) = dbs.split_at_mut(selected);
        let (db, after) = rest.split_first_mut().expect("the selected database exists");
        (db, OtherDbs { before, after })
    }

    /// The number of databases, the selected one included.
    pub fn count(&self) -> usize {
        self.before.len() + 1 + self.after.len()
    }

    /// Database `i`; `None` if it is the selected one or out of range.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Db> {
        let b = self.before.len();
        if i < b {
            Some(&mut self.before[i])
        } else {
            self.after.get_mut(i.checked_sub(b + 1)?)
        }
    }

    /// The other databases with their indices.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Db)> {
        let b = self.before.len();
        let after = self.after.iter().enumerate().map(move |(i, db)| (b + 1 + i, db));
        self.before.iter().enumerate().chain(after)
    }

    /// The other databases, to change (`FLUSHALL`, active expiry).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Db> {
        self.before.iter_mut().chain(self.after.iter_mut())
    }
}

/// Everything a handler may touch.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The selected database.
    pub db: &'a mut Db,
    /// The other databases.
    pub others: OtherDbs<'a>,
    /// The client that sent the command.
    pub client: &'a mut Client,
    /// The server.
    pub server: &'a ServerInfo,
    /// Now, in unix milliseconds (expiry is computed against it).
    pub now_ms: u64,
    /// The command table (`COMMAND` describes it).
    pub table: &'static Table,
    /// What the command propagates instead of itself, when its effect is random (`SPOP` →
    /// `SREM` of the members it picked): set by the handler while
    /// [`ServerInfo::feed`] has a sink (see [`replication`]).
    pub propagate_as: Option<Vec<Vec<u8>>>,
}

impl Ctx<'_> {
    /// The memory estimate of every database together (what `maxmemory` bounds).
    pub fn used_memory(&self) -> usize {
        self.db.used_memory() + self.others.iter().map(|(_, db)| db.used_memory()).sum::<usize>()
    }

    /// Database `i`: the selected one or another; `None` out of range.
    pub fn db_at(&mut self, i: usize) -> Option<&mut Db> {
        if i == self.client.db {
            Some(self.db)
        } else {
            self.others.get_mut(i)
        }
    }
}

/// Redis's reply for a command that is not in the table:
/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' `, as Redis 7.0 builds it:
/// C strings (each argument ends at its first NUL), the name cut to 128 bytes, and arguments
/// quoted until the quoted part reaches 128 bytes (each cut to what is left).
pub fn unknown_command(args: &Args<'_>) -> Vec<u8> {
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(clip_bytes(c_str(args.get(0)), 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    let start = msg.len();
    for a in args.iter_from(1) {
        let quoted = msg.len() - start;
        if quoted >= 128 {
            break;
        }
        msg.push(b'\'');
        msg.extend_from_slice(clip_bytes(c_str(a), 128 - quoted));
        msg.extend_from_slice(b"' ");
    }
    msg
}

/// An error message quoting a client's argument as is (Redis's `'%s'`: not necessarily UTF-8).
pub fn quoted(before: &str, arg: &[u8], after: &str) -> Vec<u8> {
    // Redis formats the argument with `%s`: it ends at its first NUL.
    [before.as_bytes(), c_str(arg), after.as_bytes()].concat()
}

/// `bytes` up to its first NUL: what C's `%s` prints of it, as Redis's error messages do.
pub fn c_str(bytes: &[u8]) -> &[u8] {
    bytes.split(|&b| b == 0).next().unwrap_or_default()
}

/// At most `max` bytes of `bytes` (Redis's `%.128s`).
pub fn clip_bytes(bytes: &[u8], max: usize) -> &[u8] {
    &bytes[..bytes.len().min(max)]
}

/// Redis's reply for a wrong argument count: `ERR wrong number of arguments for 'get' command`.
pub fn wrong_arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// The OOM error reply.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// The wrong-type error reply.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// The not-an-integer error reply.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// The syntax error reply.
pub const SYNTAX: &str = "ERR syntax error";
/// The authentication-required error reply.
pub const NOAUTH: &str = "NOAUTH Authentication required.";

/// The value at `key` for a read, as the type `as_type` picks (`Value::as_hash`, ...);
/// `None` after replying: with `missing` if there is no such key, `WRONGTYPE` if it holds
/// another type.
pub fn read_typed<'d, T: ?Sized>(
    ctx: &'d mut Ctx<'_>,
    key: &[u8],
    out: &mut ReplyBuf,
    missing: impl FnOnce(&mut ReplyBuf),
    as_type: fn(&crate::db::Value) -> Option<&T>,
) -> Option<&'d T> {
    match ctx.db.get(key, ctx.now_ms) {
        Some(v) => {
            let found = as_type(v);
            if found.is_none() {
                out.error(WRONGTYPE);
            }
            found
        }
        None => {
            missing(out);
            None
        }
    }
}

/// What a connection's commands run against: every database, the client, the server.
#[derive(Debug)]
pub struct Session<'a> {
    /// The databases (the client's selected one is `dbs[client.db]`).
    pub dbs: &'a mut [Db],
    /// The client that sent the commands.
    pub client: &'a mut Client,
    /// The server.
    pub server: &'a ServerInfo,
    /// Now, in unix milliseconds.
    pub now_ms: u64,
}

/// Runs one command: looks it up (case-insensitively), checks arity, authentication and
/// memory, and calls its handler; inside a transaction, queues it instead (see [`multi`]).
/// Exactly one reply is written to `out`.
pub fn execute(s: &mut Session<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mark = out.mark();
    let spec = execute_answered(s, args, out);
    let name = spec.map(|spec| spec.name);
    // Waiters are served after each write (an uncontended lock: writers hold the keyspace's).
    if spec.is_some_and(|spec| spec.has("write") || spec.name == "exec") {
        blocking::serve(s.dbs, s.server, s.now_ms, &mut s.client.wake);
    }
    let client = &mut *s.client;
    // Redis's `call`: the skipped reply is this one; a `SKIP` just run skips the next.
    if matches!(client.reply, ReplyMode::Off | ReplyMode::Skip) && !name.is_some_and(pubsub::is_notifying) {
        out.truncate(mark);
    }
    if client.reply == ReplyMode::Skip {
        client.reply = ReplyMode::On;
    }
    if client.reply == ReplyMode::SkipNext {
        client.reply = ReplyMode::Skip;
    }
}

/// [`execute`] before `CLIENT REPLY` drops the reply; returns the command's name when it
/// ran.
fn execute_answered(
    s: &mut Session<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
) -> Option<&'static CommandSpec> {
    Stats::add(&s.server.stats.total_commands_processed, 1);
    let spec = match check(s, args) {
        Ok(spec) => spec,
        Err(e) => {
            if table::lookup(args.get(0)).is_some_and(|c| c.name == "exec") {
                // A refused EXEC ends the transaction and the watch, in one or not (Redis's
                // `execCommandAbort`).
                s.client.multi = None;
                multi::forget_watched(s.dbs, s.client);
                let reason = e.strip_prefix(b"ERR ").unwrap_or(&e);
                out.error([b"EXECABORT Transaction discarded because of: ", reason].concat());
                return None;
            }
            if let Some(spec) = table::lookup(args.get(0)) {
                Stats::add(&s.server.command_stats(spec).rejected_calls, 1);
            }
            if let Some(m) = &mut s.client.multi {
                m.abort();
            }
            out.error(e);
            return None;
        }
    };
    s.client.last_cmd = subcommand::full_name(spec, table::subcommands(spec.name), args);
    match &mut s.client.multi {
        Some(m) if !multi::runs_at_once(spec) => {
            m.queue(spec, args);
            out.simple("QUEUED");
        }
        Some(_) if spec.name == "exec" => {
            let server = s.server;
            // Counted here: EXEC runs its queue, not a handler through `run`.
            Stats::add(&server.command_stats(spec).calls, 1);
            s.client.deny_blocking = true;
            server.feed.begin_transaction();
            multi::exec(s.dbs, s.client, s.now_ms, out, |dbs, client, spec, args, out| {
                Stats::add(&server.stats.total_commands_processed, 1);
                run(dbs, client, server, s.now_ms, spec, args, out)
            });
            s.client.deny_blocking = false;
            server.feed.end_transaction();
        }
        _ => run(s.dbs, s.client, s.server, s.now_ms, spec, args, out),
    }
    Some(spec)
}

/// The command `args` names, or the error Redis 7.0 gives before running it, in Redis's
/// order: an unknown command or a wrong argument count before authentication is asked for.
fn check(s: &Session<'_>, args: &Args<'_>) -> Result<&'static CommandSpec, Vec<u8>> {
    let Some(spec) = table::lookup(args.get(0)) else {
        return Err(unknown_command(args));
    };
    if !spec.arity_ok(args.len()) {
        return Err(wrong_arity(spec.name).into_bytes());
    }
    if let Some(e) = subcommand::subcommand_error(spec, table::subcommands(spec.name), args) {
        return Err(e);
    }
    if !s.client.authenticated && !spec.has("no_auth") {
        return Err(NOAUTH.into());
    }
    if spec.has("denyoom") {
        let limit = s.server.maxmemory.load(Ordering::Relaxed);
        let used: usize = s.dbs.iter().map(Db::used_memory).sum();
        if limit != 0 && used > limit {
            return Err(OOM.into());
        }
    }
    if spec.has("write") && !s.client.master && s.server.follow.is_replica() {
        return Err(replication::READONLY.into());
    }
    if s.client.proto == Proto::Resp2
        && s.client.subs.is_subscribed()
        && !pubsub::allowed_when_subscribed(spec.name)
    {
        return Err(pubsub::not_allowed_when_subscribed(spec.name).into_bytes());
    }
    Ok(spec)
}

/// Calls `spec`'s handler on the client's selected database.
fn run(
    dbs: &mut [Db],
    client: &mut Client,
    server: &ServerInfo,
    now_ms: u64,
    spec: &CommandSpec,
    args: &Args<'_>,
    out: &mut ReplyBuf,
) {
    let feeding = server.feed.is_active();
    let selected = client.db;
    let before = if feeding { persist::changes(dbs.iter()) } else { 0 };
    let (db, others) = OtherDbs::split(dbs, selected);
    let mut ctx = Ctx {
        db,
        others,
        client,
        server,
        now_ms,
        table: &table::TABLE,
        propagate_as: None,
    };
    let (mark, started) = (out.mark(), Instant::now());
    (spec.handler)(&mut ctx, args, out);
    let propagate_as = ctx.propagate_as.take();
    let stats = server.command_stats(spec);
    Stats::add(&stats.calls, 1);
    Stats::add(&stats.usec, started.elapsed().as_micros() as u64);
    if out.is_error_since(mark) {
        Stats::add(&stats.failed_calls, 1);
    }
    let notifying = server.notify.is_on();
    if feeding || notifying {
        replication::expired(server, dbs, &mut client.wake);
    }
    if feeding {
        replication::after_command(server, dbs, selected, spec, args, propagate_as, before, now_ms);
    }
    if notifying {
        notify::after_command(server, dbs, selected, spec, args, now_ms, &mut client.wake);
    }
}
