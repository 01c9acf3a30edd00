//! The event loops: sockets, `epoll`, clocks and threads. Everything else is in [`crate::input`]
//! (bytes to commands), [`crate::cmd`] (commands to replies) and [`crate::resp`].
//!
//! Each loop owns a `SO_REUSEPORT` listener on the server's address (the kernel spreads new
//! connections over the loops) and its clients; the keyspace is shared, locked once per batch
//! of commands read from one client. Per client and readiness event:
//!
//! 1. one `read(2)` into the client's [`Input`] (a pool buffer);
//! 2. every whole command runs against the keyspace; replies accumulate in the client's
//!    [`ReplyBuf`] (framing copied, large values referenced);
//! 3. the framing is copied into a pool buffer, and the batch goes to `ferry-net`'s
//!    [`Sender`](ferry_net::Sender) as gather entries: one `sendmsg` for the replies to everything read.
//!
//! Pub/sub and blocking commands reach clients on other loops by mail ([`cmd::pubsub::Mail`]):
//! a command puts a message or a served waiter's reply in the mailbox of the client's loop
//! and the client's [`Client::wake`] names that loop; once the batch ran, this loop delivers
//! its own mail and writes the others' eventfds, before the publisher's replies leave (so a
//! message is ahead of any reply a client asks for after `PUBLISH` returned); a woken loop
//! reads its mail before its clients' requests. A client waiting in a blocking command runs
//! none of its later requests (they stay in its [`Input`]) until its reply arrives or its
//! deadline, kept in a heap that bounds `epoll_wait`, passes. A subscriber's replies are
//! bounded by the `pubsub` class of `client-output-buffer-limit` as messages arrive.
//!
//! A client whose socket is full keeps accumulating replies until `output_buffer_limit`, and
//! is then disconnected (logged on stderr), as is one that breaks the protocol (after Redis's
//! error reply) or exceeds `client-query-buffer-limit`. Loop 0 also runs the active expiry
//! cycle `hz` times a second.
//!
//! TLS ([`Config::tls`]): each loop also owns a listener on the TLS port, and a client accepted
//! there is a ferry-net [`Connection`] with a rustls session. Its handshake is a state of the
//! client: each readiness event moves it on without waiting, and its deadline (in accept order,
//! so a queue) bounds the loop's `epoll_wait`; a client not done by then is closed, as is one
//! whose handshake fails (the log names the cause, ferry-net's [`ferry_net::TlsError`]). After
//! it, reads return decrypted bytes and the same gather list of replies is encrypted into
//! records with one copy (`SendStats::tls_copied`). A plain client uses the same
//! [`Connection`], without a session.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_net::{Connection, Handshake, Mode, TransportError};
use ferry_transport::{Interest, Readiness, Ready};
use rustix::event::EventfdFlags;
use rustix::net::{AddressFamily, SocketType, sockopt};

use crate::cmd::pubsub::Mail;
use crate::cmd::{self, Args, Client, ServerInfo, Session, Stats};
use crate::config::Config;
use crate::db::Db;
use crate::input::{Input, InputError, Next};
use crate::resp::{ParseLimits, ReplyBuf};

const LISTENER: u64 = 0;
const TLS_LISTENER: u64 = 1;
const WAKER: u64 = 2;
const FIRST_CLIENT: u64 = 3;

/// State every loop shares.
#[derive(Debug)]
struct Shared {
    info: ServerInfo,
    /// The databases (`SELECT`), under one lock: a command may touch several.
    dbs: Mutex<Vec<Db>>,
    pool: Pool,
    next_client_id: AtomicU64,
    stop: AtomicBool,
}

/// One loop's listening sockets: plain, TLS, or both.
#[derive(Debug)]
struct Listeners {
    plain: Option<TcpListener>,
    tls: Option<TcpListener>,
}

/// A server bound to its address, not yet serving.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<Listeners>,
    addr: SocketAddr,
    tls_addr: Option<SocketAddr>,
}

/// A running server: its loops run on their own threads until [`stop`](Self::stop) (or drop).
#[derive(Debug)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tls_addr: Option<SocketAddr>,
    wakers: Arc<Vec<OwnedFd>>,
    threads: Vec<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Binds `config.bind` (one listener per loop) and makes the pool and keyspace.
    pub fn bind(config: Config) -> io::Result<Server> {
        if config.threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "threads must be at least 1",
            ));
        }
        let region_size = config.region_size;
        // Power-of-two size classes can double a value's footprint; room for read buffers and
        // reply framing on top.
        let max_bytes =
            (config.maxmemory.saturating_mul(2) + (256 << 20)).div_ceil(region_size) * region_size;
        let pool = Pool::new(PoolConfig {
            region_size,
            max_bytes,
            ..PoolConfig::default()
        })
        .map_err(|e| io::Error::other(format!("pool: {e}")))?;
        if config.proto_max_bulk_len + 1024 > pool.max_class() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "proto-max-bulk-len {} does not fit the pool's largest buffer ({} B): raise region_size",
                    config.proto_max_bulk_len,
                    pool.max_class()
                ),
            ));
        }
        // More clients than descriptors would make accept fail with EMFILE, and the listener
        // would stay readable: the loop would spin.
        let mut config = config;
        if let Some(fds) = rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
            let room = usize::try_from(fds).unwrap_or(usize::MAX).saturating_sub(64);
            if config.max_clients > room {
                eprintln!(
                    "ferry-redis: maxclients {} lowered to {room}: the open-file limit is {fds}",
                    config.max_clients
                );
                config.max_clients = room;
            }
        }
        if !config.plain && config.tls.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no listener: the plain port is off and there is no TLS port",
            ));
        }
        let plain = listen_each(config.plain.then_some(config.bind), config.threads)?;
        let tls_bind = config
            .tls
            .as_ref()
            .map(|t| SocketAddr::new(config.bind.ip(), t.port));
        let tls = listen_each(tls_bind, config.threads)?;
        let tls_addr = tls.first().map(TcpListener::local_addr).transpose()?;
        if let (Some(t), Some(addr)) = (&mut config.tls, tls_addr) {
            t.port = addr.port(); // the kernel's choice for port 0, for CONFIG GET
        }
        let plain_addr = plain.first().map(TcpListener::local_addr).transpose()?;
        let addr = plain_addr.or(tls_addr).expect("one listener at least");
        let mut plain = plain.into_iter();
        let mut tls = tls.into_iter();
        let listeners = (0..config.threads)
            .map(|_| Listeners {
                plain: plain.next(),
                tls: tls.next(),
            })
            .collect();
        let mut dbs: Vec<Db> = (0..config.databases.max(1))
            .map(|_| Db::new(pool.clone(), config.keep_in_place_min))
            .collect();
        let info = ServerInfo::new(config, plain_addr.map_or(0, |a| a.port()), run_id());
        load(&info, &pool, &mut dbs)?;
        info.persist.loaded(cmd::persist::changes(&dbs));
        Ok(Server {
            shared: Arc::new(Shared {
                info,
                dbs: Mutex::new(dbs),
                pool,
                next_client_id: AtomicU64::new(1),
                stop: AtomicBool::new(false),
            }),
            listeners,
            addr,
            tls_addr,
        })
    }

    /// The address it listens on (the kernel's choice for port 0): the plain listener's, or
    /// the TLS one's when there is no plain listener.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts the loops on their own threads.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        // Every loop's eventfd, known to all: a loop wakes another to deliver pub/sub messages.
        let wakers = Arc::new(
            (0..self.listeners.len())
                .map(|_| rustix::event::eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC))
                .collect::<Result<Vec<_>, _>>()?,
        );
        // A write for the replication stream wakes every loop; each hands the stream to the
        // replicas it owns (`EventLoop::feed_replicas`). Set before any loop accepts a replica.
        let notify = wakers.clone();
        self.shared.info.feed.set_notify(move || {
            for w in notify.iter() {
                let _ = rustix::io::write(w, &1u64.to_ne_bytes());
            }
        });
        let mut threads = Vec::new();
        // The replica's follower (`REPLICAOF`): idle until a master is set.
        let (shared, all_wakers) = (self.shared.clone(), wakers.clone());
        threads.push(
            std::thread::Builder::new()
                .name("ferry-redis-replica".into())
                .spawn(move || {
                    crate::replica::Replica {
                        info: &shared.info,
                        dbs: &shared.dbs,
                        pool: &shared.pool,
                        stop: &shared.stop,
                        wakers: &all_wakers,
                    }
                    .run();
                    Ok(())
                })?,
        );
        for (i, listeners) in self.listeners.into_iter().enumerate() {
            let all_wakers = wakers.clone();
            let shared = self.shared.clone();
            let thread = std::thread::Builder::new()
                .name(format!("ferry-redis-{i}"))
                .spawn(move || {
                    let cpu = (!shared.info.config.pin.is_empty())
                        .then(|| shared.info.config.pin[i % shared.info.config.pin.len()]);
                    if let Some(cpu) = cpu {
                        ferry_transport::pin_current_thread(cpu)?;
                    }
                    EventLoop::new(i, shared, listeners, all_wakers)?.run()
                })?;
            threads.push(thread);
        }
        Ok(ServerHandle {
            shared: self.shared,
            addr: self.addr,
            tls_addr: self.tls_addr,
            wakers,
            threads,
        })
    }
}

impl ServerHandle {
    /// The address the server listens on: the plain listener's, or the TLS one's when there
    /// is no plain listener.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The TLS listener's address, if there is one.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// The pool every value, read buffer and reply lives in (its statistics show leaks).
    pub fn pool(&self) -> &Pool {
        &self.shared.pool
    }

    /// The server's configuration and counters.
    pub fn info(&self) -> &ServerInfo {
        &self.shared.info
    }

    /// Runs until the loops stop (they stop on [`stop`](Self::stop) from another handle
    /// holder, or on an I/O error of the loop itself); returns the first loop error.
    pub fn join(mut self) -> io::Result<()> {
        let mut result = Ok(());
        for t in self.threads.drain(..) {
            let r = t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("an event loop panicked")));
            if result.is_ok() {
                result = r;
            }
        }
        result
    }

    /// Stops every loop, closing every client, and waits for them.
    pub fn stop(mut self) -> io::Result<()> {
        self.signal_stop();
        std::mem::take(&mut self.threads).into_iter().try_for_each(|t| {
            t.join()
                .unwrap_or_else(|_| Err(io::Error::other("an event loop panicked")))
        })
    }

    fn signal_stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // What the AOF holds is written and synced, as Redis does on shutdown.
        self.shared.info.aof.flush();
        self.shared.info.follow.wake();
        for w in self.wakers.iter() {
            let _ = rustix::io::write(w, &1u64.to_ne_bytes());
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.signal_stop();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Loads the dataset at start: the AOF when `appendonly` is on (then opened for appending),
/// else the RDB file, as Redis does.
fn load(info: &ServerInfo, pool: &Pool, dbs: &mut [Db]) -> io::Result<()> {
    let config = &info.config;
    let now = now_ms();
    let invalid = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    if config.appendonly {
        let dir = info.persist.settings().dir;
        info.aof
            .load_at_start(&dir, dbs, info, now)
            .map_err(|e| invalid(&e))?;
        let keys: usize = dbs.iter().map(Db::len).sum();
        if keys > 0 {
            eprintln!("ferry-redis: {keys} keys loaded from the append only file");
        }
        let snap = crate::rdb::Snapshot::take(dbs.iter(), now);
        info.aof
            .open_at_start(&dir, &snap, now)
            .map_err(|e| invalid(&e))?;
        // Keys expiry deletes go to the AOF as `DEL`s.
        dbs.iter_mut().for_each(|db| db.log_expired(true));
        return Ok(());
    }
    let loaded = cmd::persist::load_at_start(config, pool, dbs, now).map_err(|e| invalid(&e))?;
    if loaded > 0 {
        eprintln!(
            "ferry-redis: {loaded} keys loaded from {}",
            config.dir.join(&config.dbfilename).display()
        );
    }
    Ok(())
}

/// `threads` listeners on `addr` (the first one's, after a port 0), or none.
fn listen_each(addr: Option<SocketAddr>, threads: usize) -> io::Result<Vec<TcpListener>> {
    let Some(addr) = addr else {
        return Ok(Vec::new());
    };
    let first = listen(addr)?;
    let addr = first.local_addr()?;
    let mut all = vec![first];
    for _ in 1..threads {
        all.push(listen(addr)?);
    }
    Ok(all)
}

/// A listening socket with `SO_REUSEPORT`, so that every loop can have its own.
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket(family, SocketType::STREAM, None)?;
    sockopt::set_socket_reuseaddr(&fd, true)?;
    sockopt::set_socket_reuseport(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    rustix::net::listen(&fd, 511)?;
    let listener = TcpListener::from(fd);
    listener.set_nonblocking(true)?;
    Ok(listener)
}

fn run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut id = String::with_capacity(40);
    while id.len() < 40 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(id.len());
        id.push_str(&format!("{:016x}", h.finish()));
    }
    id.truncate(40);
    id
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One connected client.
#[derive(Debug)]
struct Conn {
    /// The socket, its sender, and its TLS session if it came in on the TLS port.
    net: Connection,
    /// The TLS handshake is not done: no request is read yet.
    handshaking: bool,
    /// Nothing read yet (a plain client's first byte tells a TLS handshake on the wrong port).
    fresh: bool,
    input: Input,
    client: Client,
    /// Replies not yet handed to the sender (it is busy with an earlier batch).
    out: ReplyBuf,
    /// The sender's bound on bytes held for zero-copy completions.
    max_in_flight: usize,
    /// Whether `EPOLLOUT` is armed.
    writing: bool,
    /// Whether `EPOLLIN` is armed (until the client is closing).
    reading: bool,
    /// Close once the replies are written (`QUIT`, or a protocol error).
    closing: bool,
    /// Since when (unix ms) its unsent replies are above the pub/sub soft limit.
    over_soft_limit: Option<u64>,
}

/// Why a client is dropped (logged, except for an orderly close).
enum Close {
    Eof,
    Reason(String),
}

struct EventLoop {
    index: usize,
    shared: Arc<Shared>,
    listeners: Listeners,
    /// Every loop's eventfd (this loop's is `wakers[index]`).
    wakers: Arc<Vec<OwnedFd>>,
    /// Mail taken from this loop's mailbox (kept for its allocation).
    mail: Vec<Mail>,
    /// Clients waiting in a blocking command with a timeout: (deadline in unix ms, slot,
    /// client id), earliest first (the slot may have been reused since).
    timeouts: BinaryHeap<Reverse<(u64, usize, u64)>>,
    /// Every client's ferry-net settings.
    net: ferry_net::Config,
    /// TLS clients still handshaking, by deadline (accept order: the timeout is one for all),
    /// with their slot and client id (the slot may have been reused since).
    handshakes: VecDeque<(Instant, usize, u64)>,
    epoll: Readiness,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    parts: Vec<SharedBuf>,
    framing: Vec<SharedBuf>,
    limits: ParseLimits,
    next_expire: Instant,
    /// The slots of this loop's clients that became replicas (`SYNC`).
    replicas: Vec<usize>,
    /// Under `appendfsync always`: the clients whose replies wait for the end of the turn,
    /// when one sync makes every write of the turn durable ([`EventLoop::write_deferred`]).
    deferred: Vec<usize>,
}

impl EventLoop {
    fn new(
        index: usize,
        shared: Arc<Shared>,
        listeners: Listeners,
        wakers: Arc<Vec<OwnedFd>>,
    ) -> io::Result<EventLoop> {
        let epoll = Readiness::new(256)?;
        if let Some(l) = &listeners.plain {
            epoll.add(l, LISTENER, Interest::READ)?;
        }
        if let Some(l) = &listeners.tls {
            epoll.add(l, TLS_LISTENER, Interest::READ)?;
        }
        epoll.add(&wakers[index], WAKER, Interest::READ)?;
        let c = &shared.info.config;
        let net = ferry_net::Config {
            mode: c.mode,
            // A batch is whatever replies one read produced; never flush on a cap midway.
            batch_frames: usize::MAX,
            batch_bytes: usize::MAX,
            // Unused (RESP is not framed), but checked against the pool.
            max_frame_len: shared.pool.max_class() - ferry_net::frame::HEADER_LEN,
            ..ferry_net::Config::default()
        };
        let limits = ParseLimits {
            max_bulk_len: c.proto_max_bulk_len,
            max_args: c.max_args,
            max_inline_len: 64 << 10,
        };
        Ok(EventLoop {
            index,
            listeners,
            wakers,
            mail: Vec::new(),
            timeouts: BinaryHeap::new(),
            net,
            handshakes: VecDeque::new(),
            epoll,
            conns: Vec::new(),
            free: Vec::new(),
            parts: Vec::new(),
            framing: Vec::new(),
            limits,
            next_expire: Instant::now(),
            replicas: Vec::new(),
            deferred: Vec::new(),
            shared,
        })
    }

    fn run(mut self) -> io::Result<()> {
        let mut events: Vec<Ready> = Vec::with_capacity(256);
        let hz = self.shared.info.config.hz.max(1);
        let tick = Duration::from_millis(1000 / u64::from(hz));
        while !self.shared.stop.load(Ordering::SeqCst) {
            let expire = (self.index == 0).then_some(self.next_expire);
            let handshake = self.handshakes.front().map(|h| h.0);
            let blocked = self
                .timeouts
                .peek()
                .map(|Reverse((at, ..))| Instant::now() + Duration::from_millis(at.saturating_sub(now_ms())));
            let timeout = [expire, handshake, blocked]
                .into_iter()
                .flatten()
                .min()
                .map(|at| at.saturating_duration_since(Instant::now()));
            events.clear();
            events.extend(self.epoll.wait(timeout)?);
            // Mail first: a message published before a subscriber's next request was read
            // reaches it before that request's reply.
            if events.iter().any(|ev| ev.token == WAKER) {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(&self.wakers[self.index], &mut b);
                self.deliver();
                self.feed_replicas();
            }
            for &ev in &events {
                match ev.token {
                    LISTENER => self.accept(false),
                    TLS_LISTENER => self.accept(true),
                    WAKER => {}
                    t => self.client_event((t - FIRST_CLIENT) as usize, ev),
                }
            }
            self.write_deferred();
            self.expire_handshakes();
            self.expire_blocked();
            if self.index == 0 && Instant::now() >= self.next_expire {
                self.next_expire = Instant::now() + tick;
                let now = now_ms();
                let mut dbs = self.lock_dbs();
                if self.shared.info.active_expire.load(Ordering::Relaxed) {
                    for db in dbs.iter_mut() {
                        db.active_expire(now);
                    }
                }
                let mut wake = Vec::new();
                if self.shared.info.feed.is_active() || self.shared.info.notify.is_on() {
                    cmd::replication::expired(&self.shared.info, &mut dbs, &mut wake);
                }
                cmd::persist::tick(&self.shared.info, &dbs, now);
                drop(dbs);
                self.wake_loops(wake);
            }
        }
        for i in 0..self.conns.len() {
            self.drop_conn(i, Close::Eof);
        }
        Ok(())
    }

    fn lock_dbs(&self) -> std::sync::MutexGuard<'_, Vec<Db>> {
        // A handler that panicked left the keyspace as it was between two commands' steps;
        // serving on is better than taking every client down with it.
        self.shared.dbs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes the clients whose handshake deadline has passed (the handshake step names the
    /// timeout as the cause).
    fn expire_handshakes(&mut self) {
        let now = Instant::now();
        while let Some(&(at, slot, id)) = self.handshakes.front() {
            if at > now {
                return;
            }
            self.handshakes.pop_front();
            let pending = self.conns[slot]
                .as_ref()
                .is_some_and(|c| c.handshaking && c.client.id == id);
            if pending {
                let token = FIRST_CLIENT + slot as u64;
                self.client_event(
                    slot,
                    Ready {
                        token,
                        readable: true,
                        writable: false,
                        error: false,
                    },
                );
            }
        }
    }

    fn accept(&mut self, tls: bool) {
        loop {
            let listener = if tls {
                &self.listeners.tls
            } else {
                &self.listeners.plain
            };
            let accepted = listener.as_ref().expect("registered only when present").accept();
            let (stream, addr) = match accepted {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                Err(e) => {
                    eprintln!("ferry-redis: accept: {e}");
                    return;
                }
            };
            let info = &self.shared.info;
            Stats::add(&info.stats.total_connections_received, 1);
            if Stats::get(&info.stats.connected_clients) >= info.config.max_clients as u64 {
                Stats::add(&info.stats.rejected_connections, 1);
                // Accepted sockets block; a short reply fits any fresh socket buffer.
                let _ = (&stream).write_all(b"-ERR max number of clients reached\r\n");
                continue;
            }
            if let Err(e) = self.add_conn(stream, addr, tls) {
                eprintln!("ferry-redis: client {addr}: {e}");
            }
        }
    }

    fn add_conn(&mut self, stream: TcpStream, addr: SocketAddr, tls: bool) -> io::Result<()> {
        let info = &self.shared.info;
        let local_addr = stream.local_addr()?;
        let pool = &self.shared.pool;
        let mut net = match info.config.tls.as_ref().filter(|_| tls) {
            Some(t) => Connection::tls_server(stream, pool, &self.net, &t.server),
            None => Connection::new(stream, pool, &self.net),
        }
        .map_err(io::Error::other)?;
        net.set_nonblocking(true);
        let client = Client::new(
            self.shared.next_client_id.fetch_add(1, Ordering::Relaxed),
            addr,
            local_addr,
            now_ms(),
            info.config.password.is_none(),
        );
        let mut conn = Conn {
            input: Input::new(
                &self.shared.pool,
                self.limits,
                info.config.read_buf,
                info.config.query_buffer_limit,
            )
            .with_budget(self.net.frame_budget.clone()),
            // Copy mode is the copy-only baseline: every value into the framing buffer.
            out: ReplyBuf::new(match info.config.mode {
                ferry_net::Mode::Copy => usize::MAX,
                _ => info.config.zero_copy_threshold,
            }),
            handshaking: net.is_tls(),
            fresh: true,
            net,
            client,
            max_in_flight: self.net.max_in_flight,
            writing: false,
            reading: true,
            closing: false,
            over_soft_limit: None,
        };
        let slot = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        conn.client.home = cmd::pubsub::Home {
            loop_index: self.index,
            slot,
        };
        if let Err(e) = self
            .epoll
            .add(&conn.net, FIRST_CLIENT + slot as u64, Interest::READ)
        {
            self.free.push(slot);
            return Err(e);
        }
        if let Some(at) = conn.net.handshake_deadline() {
            self.handshakes.push_back((at, slot, conn.client.id));
        }
        self.conns[slot] = Some(conn);
        Stats::add(&info.stats.connected_clients, 1);
        self.list_client(slot);
        Ok(())
    }

    /// Refreshes client `i`'s entry in the server's client list (`CLIENT LIST`, `CLIENT KILL`).
    fn list_client(&self, i: usize) {
        if let Some(conn) = self.conns.get(i).and_then(Option::as_ref) {
            let qbuf = conn.input.pending();
            let buffers = cmd::client::Buffers {
                fd: conn.net.as_fd().as_raw_fd(),
                qbuf,
                qbuf_free: conn.input.capacity().saturating_sub(qbuf),
            };
            cmd::client::list(&self.shared.info, &conn.client, buffers, now_ms());
        }
    }

    fn client_event(&mut self, i: usize, mut ev: Ready) {
        if self.conns.get(i).is_none_or(Option::is_none) {
            return;
        }
        if self.conns[i].as_ref().is_some_and(|c| c.handshaking) {
            match self.handshake(i) {
                // Requests may have come with the handshake's last flight.
                Ok(true) => ev.readable = true,
                Ok(false) => return,
                Err(why) => return self.drop_conn(i, why),
            }
        }
        if ev.error {
            // Zero-copy completions arrive on the error queue.
            let conn = self.conns[i].as_mut().expect("checked above");
            if let Err(e) = conn.net.sender().poll_completions() {
                return self.drop_conn(i, Close::Reason(format!("completions: {e}")));
            }
        }
        let mut reading = ev.readable;
        loop {
            let read = reading.then(|| self.read(i));
            // Messages published by what was read reach their subscribers' buffers (or their
            // loops are woken) before the publisher's replies leave: a client that saw the
            // reply and then asks a subscriber finds the message there first.
            self.wake_for(i);
            if self.conns[i].is_none() {
                return; // delivering to itself put it over its pub/sub limit
            }
            // Listed as its replies leave: a client that saw them finds it so in CLIENT LIST.
            self.list_client(i);
            let again = match read {
                None => false,
                Some(Ok(again)) => again,
                Some(Err(why)) => {
                    // Replies to what was read before the end still go out, best effort.
                    let _ = self.write(i);
                    return self.drop_conn(i, why);
                }
            };
            if self.shared.info.aof.syncs_always() {
                if !self.deferred.contains(&i) {
                    self.deferred.push(i);
                }
            } else if let Err(why) = self.write(i) {
                return self.drop_conn(i, why);
            }
            if !again {
                break;
            }
            reading = true;
        }
        let conn = self.conns[i].as_mut().expect("still open");
        if conn.client.replica && !self.replicas.contains(&i) {
            self.replicas.push(i);
        }
        if conn.closing && !conn.net.sender().has_pending() && !self.deferred.contains(&i) {
            self.drop_conn(i, Close::Eof);
        }
    }

    /// Sends the replies deferred this turn, after one sync of the AOF for all of them (as
    /// Redis syncs before it writes replies).
    fn write_deferred(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        self.shared.info.aof.wait_durable();
        for i in std::mem::take(&mut self.deferred) {
            if self.conns.get(i).is_none_or(Option::is_none) {
                continue;
            }
            if let Err(why) = self.write(i) {
                self.drop_conn(i, why);
                continue;
            }
            let conn = self.conns[i].as_mut().expect("still open");
            if conn.closing && !conn.net.sender().has_pending() {
                self.drop_conn(i, Close::Eof);
            }
        }
    }

    /// Wakes the loops whose mailboxes client `i`'s commands filled; this loop delivers its
    /// own mail at once.
    fn wake_for(&mut self, i: usize) {
        let Some(conn) = self.conns[i].as_mut() else {
            return;
        };
        if conn.client.wake.is_empty() {
            return;
        }
        let wake = std::mem::take(&mut conn.client.wake);
        self.wake_loops(wake);
    }

    /// Wakes loops `wake` (their mailboxes have mail); this loop delivers its own at once.
    fn wake_loops(&mut self, wake: Vec<usize>) {
        for &l in &wake {
            if l == self.index {
                self.deliver();
            } else if let Some(w) = self.wakers.get(l) {
                let _ = rustix::io::write(w, &1u64.to_ne_bytes());
            }
        }
    }

    /// Writes the pub/sub messages in this loop's mailbox into their subscribers' replies
    /// and sends them. A subscriber over the `pubsub` output limit is disconnected, as Redis
    /// does; one that left is skipped.
    fn deliver(&mut self) {
        let limit = {
            let mut reg = self
                .shared
                .info
                .pubsub
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            reg.take_mail(self.index, &mut self.mail);
            reg.limit
        };
        let now = now_ms();
        let mut touched: Vec<usize> = Vec::new();
        let mut resumed: Vec<usize> = Vec::new();
        let mut over: Vec<(usize, usize)> = Vec::new();
        let mut killed: Vec<usize> = Vec::new();
        for mail in self.mail.drain(..) {
            let to = mail.to();
            let slot = to.home.slot;
            let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            if conn.client.id != to.id || conn.closing {
                continue;
            }
            match mail {
                Mail::Message(d) => {
                    conn.out.set_proto(conn.client.proto);
                    d.write(&mut conn.out);
                }
                Mail::Unblocked { mut reply, .. } => {
                    conn.client.block = None;
                    conn.out.append(&mut reply);
                    resumed.push(slot);
                }
                Mail::Kill(_) => {
                    killed.push(slot);
                    continue;
                }
            }
            if !touched.contains(&slot) {
                touched.push(slot);
            }
            // As the general limit: the replies not yet handed to the sender.
            let pending = conn.out.len();
            if conn.client.subs.is_subscribed()
                && limit.exceeded(pending, now, &mut conn.over_soft_limit)
                && !over.iter().any(|o| o.0 == slot)
            {
                over.push((slot, pending));
            }
        }
        for &slot in &killed {
            touched.retain(|&t| t != slot);
            resumed.retain(|&t| t != slot);
            over.retain(|o| o.0 != slot);
            self.drop_conn(slot, Close::Eof);
        }
        for (slot, pending) in over {
            touched.retain(|&t| t != slot);
            if let Some(conn) = self.conns[slot].as_mut() {
                conn.out.clear(); // nothing more is sent to it, as Redis does
            }
            Stats::add(&self.shared.info.stats.clients_dropped, 1);
            self.drop_conn(
                slot,
                Close::Reason(format!(
                    "{pending} reply bytes unsent, over the pubsub output buffer limit ({limit:?})"
                )),
            );
        }
        for slot in resumed {
            self.resume(slot);
        }
        for slot in touched {
            if self.conns[slot].is_some() {
                if let Err(why) = self.write(slot) {
                    self.drop_conn(slot, why);
                }
            }
        }
    }

    /// Runs the requests a client buffered while it waited in a blocking command.
    fn resume(&mut self, i: usize) {
        if self.conns[i].as_ref().is_none_or(|c| c.client.block.is_some()) {
            return;
        }
        if let Err(why) = self.run_commands(i) {
            let _ = self.write(i);
            return self.drop_conn(i, why);
        }
        self.wake_for(i);
    }

    /// Answers the clients whose blocking command timed out (unless a serve took them out of
    /// the registry first: its reply is in the mail).
    fn expire_blocked(&mut self) {
        let now = now_ms();
        while let Some(&Reverse((at, slot, id))) = self.timeouts.peek() {
            if at > now {
                return;
            }
            self.timeouts.pop();
            let Some(conn) = self.conns[slot].as_mut().filter(|c| c.client.id == id) else {
                continue;
            };
            if conn.client.block.is_none_or(|b| b.deadline_ms != Some(at)) {
                continue; // served, or waiting again with another deadline
            }
            let op = self
                .shared
                .info
                .blocked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(id);
            if let Some(op) = op {
                conn.client.block = None;
                conn.out.set_proto(conn.client.proto);
                op.write_timeout(&mut conn.out);
                self.resume(slot);
                if self.conns[slot].is_some() {
                    if let Err(why) = self.write(slot) {
                        self.drop_conn(slot, why);
                    }
                }
            }
        }
    }

    /// Moves what the feed holds for this loop's replicas into their connections and writes;
    /// a replica that fell too far behind is dropped.
    fn feed_replicas(&mut self) {
        for k in (0..self.replicas.len()).rev() {
            let i = self.replicas[k];
            let Some(conn) = self.conns[i].as_mut() else {
                continue;
            };
            match self.shared.info.feed.take(conn.client.id) {
                Ok(bytes) if bytes.is_empty() => {}
                Ok(bytes) => {
                    conn.out.raw(&bytes);
                    if let Err(why) = self.write(i) {
                        self.drop_conn(i, why);
                    }
                }
                Err(e) => self.drop_conn(i, Close::Reason(e.to_string())),
            }
        }
    }

    /// Moves a TLS handshake on: `Ok(true)` once it is done.
    fn handshake(&mut self, i: usize) -> Result<bool, Close> {
        let conn = self.conns[i].as_mut().expect("caller checked");
        match conn.net.handshake_step() {
            Ok(Handshake::Done) => {
                conn.handshaking = false;
                Ok(true)
            }
            Ok(Handshake::Waiting { read, write }) => {
                arm(&self.epoll, conn, i, read || !write, write)?;
                Ok(false)
            }
            Err(e) => Err(Close::Reason(format!("TLS handshake: {e}"))),
        }
    }

    /// One read, then every whole command in it. `Ok(true)`: read again before waiting (TLS,
    /// the read filled its target: rustls may hold more decrypted bytes, which `epoll` does
    /// not see).
    fn read(&mut self, i: usize) -> Result<bool, Close> {
        let shared = &*self.shared;
        let conn = self.conns[i].as_mut().expect("caller checked");
        if conn.closing {
            return Ok(false);
        }
        let target = conn
            .input
            .read_target()
            .map_err(|e| Close::Reason(e.to_string()))?;
        let n = match conn.net.receiver().read_unframed(target) {
            Ok(0) => return Err(Close::Eof),
            Ok(n) => n,
            Err(TransportError::WouldBlock) => return Ok(false),
            Err(TransportError::Io { source, .. }) if source.kind() == io::ErrorKind::ConnectionReset => {
                return Err(Close::Eof);
            }
            Err(e) => return Err(Close::Reason(format!("read: {e}"))),
        };
        // A TLS record starts with 22 (handshake); no RESP request does.
        if std::mem::take(&mut conn.fresh) && !conn.net.is_tls() && target[0] == 0x16 {
            return Err(Close::Reason("a TLS handshake on the plain port".into()));
        }
        let again = conn.net.is_tls() && n == target.len();
        conn.input.filled(n);
        Stats::add(&shared.info.stats.total_net_input_bytes, n as u64);
        self.run_commands(i)?;
        Ok(again)
    }

    /// Runs every whole command client `i` has buffered (none while it waits in a blocking
    /// command: they run when it is served).
    fn run_commands(&mut self, i: usize) -> Result<(), Close> {
        let shared = &*self.shared;
        let conn = self.conns[i].as_mut().expect("caller checked");
        if conn.client.block.is_some() {
            return Ok(());
        }
        let mut dbs = shared.dbs.lock().unwrap_or_else(PoisonError::into_inner);
        let now = now_ms();
        let (out, client) = (&mut conn.out, &mut conn.client);
        let before = (out.copied_value_bytes(), out.referenced_value_bytes());
        let limit = shared.info.config.output_buffer_limit;
        let result = conn
            .input
            .commands(client.authenticated, |args: &Args<'_>, queued| {
                if out.len() > limit {
                    return Next::Stop; // the client is dropped below: run nothing more for it
                }
                client.query_bytes = queued;
                out.set_proto(client.proto);
                let mut session = Session {
                    dbs: &mut dbs,
                    client,
                    server: &shared.info,
                    now_ms: now,
                };
                cmd::execute(&mut session, args, out);
                if client.close_after_reply {
                    Next::Stop // after QUIT nothing more runs
                } else if client.block.is_some() {
                    Next::Pause
                } else {
                    Next::Go(client.authenticated)
                }
            });
        drop(dbs);
        if let Some(at) = client.block.and_then(|b| b.deadline_ms) {
            self.timeouts.push(Reverse((at, i, client.id)));
        }
        let stats = &shared.info.stats;
        Stats::add(&stats.reply_bytes_copied, out.copied_value_bytes() - before.0);
        Stats::add(
            &stats.reply_bytes_referenced,
            out.referenced_value_bytes() - before.1,
        );
        if client.close_after_reply {
            conn.closing = true;
        }
        if out.len() > limit {
            Stats::add(&stats.clients_dropped, 1);
            let len = out.len();
            out.clear(); // nothing of it is sent: the client is cut off, as Redis does
            return Err(Close::Reason(format!(
                "{len} reply bytes from one read, over the output buffer limit ({limit})"
            )));
        }
        match result {
            Ok(()) => Ok(()),
            Err(InputError::Protocol(e)) => {
                out.set_proto(client.proto);
                out.error(format!("ERR {e}"));
                conn.closing = true;
                Stats::add(&stats.clients_dropped, 1);
                eprintln!(
                    "ferry-redis: client {} ({}): protocol error: {e} at byte {}",
                    client.id, client.addr, e.offset
                );
                Ok(())
            }
            Err(e) => {
                Stats::add(&stats.clients_dropped, 1);
                Err(Close::Reason(e.to_string()))
            }
        }
    }

    /// Hands the pending replies to the sender when it is free, and writes.
    fn write(&mut self, i: usize) -> Result<(), Close> {
        let shared = &*self.shared;
        let conn = self.conns[i].as_mut().expect("caller checked");
        if !conn.out.is_empty() {
            // `appendfsync always`: no reply leaves before the writes it reports are on disk.
            shared.info.aof.wait_durable();
        }
        loop {
            if !conn.out.is_empty() && !conn.net.sender().has_pending() {
                Stats::add(&shared.info.stats.total_net_output_bytes, conn.out.len() as u64);
                let (bytes, refs) = conn.out.drain_parts();
                gather(&shared.pool, bytes, refs, &mut self.framing, &mut self.parts)
                    .map_err(|e| Close::Reason(format!("reply buffer: {e}")))?;
                conn.net
                    .sender()
                    .send_unframed(&self.parts)
                    .map_err(|e| Close::Reason(format!("send: {e}")))?;
                self.parts.clear();
                conn.out.clear();
            }
            match conn.net.flush() {
                Ok(()) if !conn.out.is_empty() => continue,
                Ok(()) => break,
                Err(TransportError::WouldBlock) => break,
                Err(e) => return Err(Close::Reason(format!("send: {e}"))),
            }
        }
        if conn.out.len() > shared.info.config.output_buffer_limit {
            Stats::add(&shared.info.stats.clients_dropped, 1);
            return Err(Close::Reason(format!(
                "{} reply bytes unread, over the output buffer limit ({})",
                conn.out.len(),
                shared.info.config.output_buffer_limit
            )));
        }
        // In the zero-copy modes a sender holding more than its in-flight bound waits for
        // completions, which arrive as EPOLLERR (always reported): armed, EPOLLOUT would fire on
        // every turn while the kernel still holds the bytes. (io_uring's completions come on
        // the ring, which the loop does not poll: there EPOLLOUT stays armed.)
        let waiting = matches!(conn.net.mode(), Mode::ZeroCopy | Mode::Auto)
            && conn.net.in_flight() > conn.max_in_flight;
        let want = conn.net.sender().has_pending() && !waiting;
        // A closing client is not read any more: left armed, level-triggered input it keeps
        // sending would wake the loop on every turn until its replies are written.
        let read = !conn.closing;
        arm(&self.epoll, conn, i, read, want)
    }

    fn drop_conn(&mut self, i: usize, why: Close) {
        let Some(conn) = self.conns.get_mut(i).and_then(Option::take) else {
            return;
        };
        if let Close::Reason(why) = why {
            eprintln!(
                "ferry-redis: client {} ({}) disconnected: {why}",
                conn.client.id, conn.client.addr
            );
        }
        let _ = self.epoll.remove(&conn.net);
        cmd::client::unlist(&self.shared.info, conn.client.id);
        let mut client = conn.client;
        if !client.watched.is_empty() {
            cmd::multi::forget_watched(&mut self.lock_dbs(), &mut client);
        }
        if client.subs.is_subscribed() {
            let mut reg = self
                .shared
                .info
                .pubsub
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            reg.forget(&mut client);
        }
        if client.block.is_some() {
            let mut reg = self
                .shared
                .info
                .blocked
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            reg.remove(client.id);
        }
        if client.replica {
            self.replicas.retain(|&r| r != i);
            // Under the keyspace lock, as `SYNC` attaches: a replica attaching meanwhile
            // keeps the expired keys logged.
            let mut dbs = self.lock_dbs();
            if !self.shared.info.feed.detach(client.id) {
                // The last replica left, and there is no AOF: only keyspace notifications
                // may need the expired keys.
                let keep = self.shared.info.notify.wants_expired();
                dbs.iter_mut().for_each(|db| db.log_expired(keep));
            }
        }
        self.shared
            .info
            .stats
            .connected_clients
            .fetch_sub(1, Ordering::Relaxed);
        self.free.push(i);
    }
}

/// Sets what `epoll` reports for client `i` (slot `i`): readable, writable; no call when it is
/// already so.
fn arm(epoll: &Readiness, conn: &mut Conn, i: usize, read: bool, write: bool) -> Result<(), Close> {
    if (read, write) == (conn.reading, conn.writing) {
        return Ok(());
    }
    epoll
        .modify(&conn.net, FIRST_CLIENT + i as u64, Interest { read, write })
        .map_err(|e| Close::Reason(format!("epoll_ctl: {e}")))?;
    conn.reading = read;
    conn.writing = write;
    Ok(())
}

/// The replies `bytes` + `refs` as gather parts: `bytes` copied into pool buffers (one, unless
/// longer than the pool's largest; `framing` is their scratch list), the referenced values
/// moved in between at their offsets.
fn gather(
    pool: &Pool,
    bytes: &[u8],
    refs: impl Iterator<Item = (usize, SharedBuf)>,
    framing: &mut Vec<SharedBuf>,
    parts: &mut Vec<SharedBuf>,
) -> Result<(), ferry_buf::PoolError> {
    parts.clear();
    framing.clear();
    let chunk = pool.max_class();
    for piece in bytes.chunks(chunk) {
        framing.push(pool.copy_from(piece)?);
    }
    // Slices of the copied framing for bytes[from..to].
    let push_range = |parts: &mut Vec<SharedBuf>, from: usize, to: usize| {
        let mut at = from;
        while at < to {
            let (c, off) = (at / chunk, at % chunk);
            let end = (to - at).min(chunk - off);
            parts.push(framing[c].slice(off..off + end));
            at += end;
        }
    };
    let mut prev = 0;
    for (at, value) in refs {
        push_range(parts, prev, at);
        parts.push(value);
        prev = at;
    }
    push_range(parts, prev, bytes.len());
    framing.clear();
    Ok(())
}
