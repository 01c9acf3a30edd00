//! `ferry bench shm`: request/response round trips of Ferry messages between two threads pinned
//! to different cores, over the shared-memory transport (`ferry-shm`), side by side in one run
//! with the physical floor and with the kernel's TCP datapath:
//!
//! - **raw**: a shared-memory ping-pong with no protocol at all. Two cache lines (two
//!   `AtomicU64`s 128 bytes apart); the client writes a sequence number into one and spins until
//!   the server echoes it into the other. What two cores can do; nothing is faster.
//! - **shm**: [`ShmConnection`] between two threads. The client sends a [`Record`] whose one
//!   field is a pool-resident value of the payload size, the server validates it in place,
//!   checks the field (length, first and last byte), and answers with a record of the same shape
//!   from its own pool. At 4 KiB the value is above the context's zero-copy threshold and is
//!   referenced in shared memory (`ShmStats::bytes_referenced`), never copied
//!   (`bytes_copied_in` stays 0); at 64 B it is copied into the message's header segment, as the
//!   hybrid rule says. `spin` is `ShmConfig { spin: Duration::MAX, never_sleep: true, .. }`
//!   (busy-poll, never sleep, and say so: the peer publishes without the sleep handshake's
//!   fence); `default` is `ShmConfig::default()` (spin 50 µs, then sleep on an eventfd).
//! - **tcp**: the same client and server code (both are written against
//!   [`ferry_net::Transport`]) over a [`Connection`] on loopback in gather mode. `poll` is the
//!   blocking connection (it sleeps in `poll(2)`); `spin` busy-polls a non-blocking receive.
//!
//! One *run* is one connection. The client keeps `in_flight` requests outstanding: it sends that
//! many, then sends a new one for every response it gets (the transport's `recv` publishes what
//! is queued, so requests leave in batches). A warm-up (a tenth of the budget) precedes a `MARK`
//! exchange; the measured window runs from the mark's answer to the last response, then an
//! `END` exchange closes the run:
//!
//! ```text
//!  client (CPU a)  warm-up │ MARK ⇄ │ t0, cpu0 ── requests, in_flight outstanding ── t1, cpu1 │ END ⇄
//!  server (CPU b)  warm-up │ MARK: cpu0 ── validate, touch, reply per request ─────── END: cpu1 │
//! ```
//!
//! Round-trip latency is from just before a request is built to just after its response is
//! validated and touched, into a log-linear histogram (0.1 % buckets). With one request in
//! flight every round trip is timed with one clock reading (the end of one is the start of the
//! next); with more, every 16th request. requests/s = responses in the window / (t1 - t0). CPU
//! per request is each thread's `getrusage(RUSAGE_THREAD)` over its window.

use std::collections::VecDeque;
use std::hint::{black_box, spin_loop};
use std::net::TcpListener;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry::sample::{RECORD, Record};
use ferry::wire::{DEFAULT_THRESHOLD, Limits, Outgoing};
use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_net::{Config, Connection, Frame, Meta, Mode, Payload, Received, Transport, TransportError};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use serde_json::{Value, json};

use crate::harness::cli::Common;
use crate::harness::progress::Progress;
use crate::harness::{self, Budget, Histogram, median, report, thread_cpu_time};
use crate::{BoxError, plot};

/// Frame kinds of the benchmark.
const DATA: u16 = 1;
const MARK: u16 = 2;
const END: u16 = 3;

/// Fill bytes of request and response values.
const REQUEST_FILL: u8 = 0x5a;
const RESPONSE_FILL: u8 = 0xa5;

/// Defaults of the full run and of `--quick`.
const PAYLOADS: [usize; 2] = [64, 4096];
const IN_FLIGHT: [usize; 2] = [32, 128];
const FULL_MS: u64 = 500;
const QUICK_MS: u64 = 100;
const FULL_REPS: usize = 5;
const QUICK_REPS: usize = 3;

/// Bytes the raw ping-pong moves each way: the sequence number.
const RAW_PAYLOAD: usize = 8;

/// Requests timed in a pipelined run: one in this many.
const TIMED_EVERY: u64 = 16;

/// Issue 11's targets: the 64 B round trip against the raw ping-pong, the largest payload's
/// against the smallest's, and pipelined small requests in absolute terms and against TCP's
/// best rate in the same run.
const TARGET_VS_RAW: f64 = 3.0;
const TARGET_4K_VS_64: f64 = 1.10;
const TARGET_RPS: f64 = 5e6;
const TARGET_VS_TCP: f64 = 2.0;

/// Options of `ferry bench shm`. `--quick` runs 100 ms per repetition, 3 repetitions: under
/// 30 s. `--plot` draws requests/s and latency against requests in flight, and latency
/// against payload.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Transports to run, comma-separated (default: raw,shm,tcp).
    #[arg(long, value_delimiter = ',')]
    transports: Vec<TransportKind>,
    /// Payload sizes of the one-request-in-flight round trips, comma-separated (default
    /// 64,4096). The pipelined runs use the smallest, and shm also the largest.
    #[arg(long, value_delimiter = ',')]
    payloads: Vec<usize>,
    /// Requests in flight of the throughput runs, comma-separated (default 32,128).
    #[arg(long, value_delimiter = ',')]
    in_flight: Vec<usize>,
    /// Repetitions per configuration, the configurations interleaved; every reported number is
    /// the median over them (default 5, or 3 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// CPU for the client thread.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU for the server thread (the client's when only one is available).
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
    /// TCP congestion control set on both ends of the TCP runs.
    #[arg(long, default_value = "cubic")]
    congestion: String,
}

/// What carries the round trips.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// Two threads spinning on two shared cache lines: the floor.
    Raw,
    /// `ferry-shm`.
    Shm,
    /// `ferry-net` over TCP loopback.
    Tcp,
}

impl TransportKind {
    fn name(self) -> &'static str {
        match self {
            TransportKind::Raw => "raw",
            TransportKind::Shm => "shm",
            TransportKind::Tcp => "tcp",
        }
    }

    const ALL: [TransportKind; 3] = [TransportKind::Raw, TransportKind::Shm, TransportKind::Tcp];
}

/// How a side waits for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Notify {
    /// Busy-poll, never sleep (raw; shm with `spin: Duration::MAX, never_sleep: true`; tcp with a non-blocking
    /// receive polled in a loop).
    Spin,
    /// `ShmConfig::default()`: busy-poll 50 µs, then sleep on the eventfd doorbell.
    Default,
    /// The blocking TCP connection: sleep in `poll(2)` until the socket is readable.
    Poll,
}

impl Notify {
    fn name(self) -> &'static str {
        match self {
            Notify::Spin => "spin",
            Notify::Default => "default",
            Notify::Poll => "poll",
        }
    }

    const ALL: [Notify; 3] = [Notify::Spin, Notify::Default, Notify::Poll];
}

/// One configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    transport: TransportKind,
    notify: Notify,
    payload: usize,
    in_flight: usize,
}

impl Point {
    fn label(&self) -> String {
        format!("{} {}", self.transport.name(), self.notify.name())
    }
}

/// A run's settings.
#[derive(Debug, Clone, Copy)]
struct Spec {
    point: Point,
    budget: Budget,
    cpus: (usize, usize),
}

/// Counters of one side of a connection, as differences or totals. Fields a transport does
/// not have stay 0.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    /// Messages sent.
    sent: u64,
    /// shm: blocks published; tcp: `sendmsg` calls.
    publishes: u64,
    /// shm: acknowledgement-only ring entries.
    ack_entries: u64,
    /// Value bytes the CPU copied into the transport's memory (shm: `bytes_copied_in`; tcp:
    /// `zero_copy_values_copied`).
    copied_in: u64,
    /// Value bytes referenced in place (shm: `bytes_referenced`; tcp: posted as gather entries).
    referenced: u64,
    /// Bytes the CPU wrote per message into blocks or staging (tcp: `staged_bytes`; shm: not
    /// counted by the transport).
    staged: u64,
    /// shm: times this side slept on its doorbell.
    sleeps: u64,
    /// shm: times this side rang the peer's doorbell.
    wakeups: u64,
    /// shm: times a send waited for credits.
    credit_waits: u64,
    /// tcp: `readv` calls; shm: blocks received.
    receives: u64,
}

impl Counters {
    fn since(self, before: Counters) -> Counters {
        Counters {
            sent: self.sent - before.sent,
            publishes: self.publishes - before.publishes,
            ack_entries: self.ack_entries - before.ack_entries,
            copied_in: self.copied_in - before.copied_in,
            referenced: self.referenced - before.referenced,
            staged: self.staged - before.staged,
            sleeps: self.sleeps - before.sleeps,
            wakeups: self.wakeups - before.wakeups,
            credit_waits: self.credit_waits - before.credit_waits,
            receives: self.receives - before.receives,
        }
    }

    fn plus(self, o: Counters) -> Counters {
        Counters {
            sent: self.sent + o.sent,
            publishes: self.publishes + o.publishes,
            ack_entries: self.ack_entries + o.ack_entries,
            copied_in: self.copied_in + o.copied_in,
            referenced: self.referenced + o.referenced,
            staged: self.staged + o.staged,
            sleeps: self.sleeps + o.sleeps,
            wakeups: self.wakeups + o.wakeups,
            credit_waits: self.credit_waits + o.credit_waits,
            receives: self.receives + o.receives,
        }
    }
}

/// A transport the benchmark can drive and read counters from.
trait Endpoint: Transport {
    fn counters(&self) -> Counters;
}

impl Endpoint for ShmConnection {
    fn counters(&self) -> Counters {
        let s = self.stats();
        Counters {
            sent: s.messages_sent,
            publishes: s.blocks_sent,
            ack_entries: s.ack_entries_sent,
            copied_in: s.bytes_copied_in,
            referenced: s.bytes_referenced,
            staged: 0,
            sleeps: s.sleeps,
            wakeups: s.wakeups,
            credit_waits: s.credit_waits,
            receives: s.blocks_received,
        }
    }
}

/// A TCP connection whose `recv` either blocks (`poll(2)`) or busy-polls a non-blocking
/// receive.
struct Tcp {
    conn: Connection,
    spin: bool,
}

impl Tcp {
    fn new(conn: Connection, spin: bool) -> Tcp {
        Tcp { conn, spin }
    }
}

impl AsFd for Tcp {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.conn.as_fd()
    }
}

impl Transport for Tcp {
    type Frame = Frame;

    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        self.conn.send(meta, msg)
    }

    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        self.conn.send_payload(meta, payload)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.conn.flush()
    }

    fn recv(&mut self) -> Result<Frame, TransportError> {
        if !self.spin {
            return self.conn.recv();
        }
        loop {
            if let Some(frame) = self.conn.try_recv()? {
                return Ok(frame);
            }
            spin_loop();
        }
    }

    fn try_recv(&mut self) -> Result<Option<Frame>, TransportError> {
        self.conn.try_recv()
    }

    fn in_flight(&self) -> usize {
        self.conn.in_flight()
    }
}

impl Endpoint for Tcp {
    fn counters(&self) -> Counters {
        let s = self.conn.stats();
        Counters {
            sent: s.send.queue.frames,
            publishes: s.send.send_calls,
            copied_in: s.send.queue.zero_copy_values_copied,
            referenced: s.send.queue.zero_copy_values_referenced,
            staged: s.send.queue.staged_bytes,
            receives: s.recv.reads,
            ..Counters::default()
        }
    }
}

fn limits() -> Limits {
    Limits::default()
}

/// Validates a message in place and checks its one field: length, first and last byte.
fn touch(frame: &impl Received, payload: usize, fill: u8) -> Result<u64, BoxError> {
    let view = frame.view(&RECORD, &limits())?;
    let fields = view.bytes_list(2);
    let field = match (fields.len(), fields.get(0)) {
        (1, Some(f)) => f,
        (n, _) => return Err(format!("expected one field, got {n}").into()),
    };
    match (field.len() == payload, field.first(), field.last()) {
        (true, Some(&a), Some(&b)) if a == fill && b == fill => Ok(u64::from(a) + field.len() as u64),
        _ => Err(format!(
            "field of {} B arrived wrong (expected {payload} B of {fill:#x})",
            field.len()
        )
        .into()),
    }
}

/// Queues a record whose one field is `value`.
fn send_record<T: Transport>(
    conn: &mut T,
    ctx: &Context,
    id: u64,
    value: &SharedBuf,
) -> Result<(), TransportError> {
    let mut rec = Record::new(ctx);
    rec.append_field(&value[..]);
    conn.send(Meta::new(DATA, id), &rec)
}

/// Sends an empty control frame and waits for its echo.
fn exchange<T: Transport>(conn: &mut T, kind: u16, next_id: &mut u64) -> Result<(), BoxError> {
    let id = *next_id;
    *next_id += 1;
    conn.send_payload(Meta::new(kind, id), Payload::Bytes(&[]))?;
    let frame = conn.recv()?;
    if frame.meta() != Meta::new(kind, id) {
        return Err(format!(
            "expected the echo of control frame {kind}, got {:?}",
            frame.meta()
        )
        .into());
    }
    Ok(())
}

/// The client's side of a run.
struct ClientSide {
    requests: u64,
    elapsed: Duration,
    cpu: Duration,
    hist: Histogram,
    window: Counters,
    total: Counters,
}

/// Keeps `in_flight` requests outstanding until `budget` is spent, then collects the rest.
/// Returns the responses received.
fn pipeline<T: Endpoint>(
    conn: &mut T,
    ctx: &Context,
    value: &SharedBuf,
    spec: &Spec,
    budget: Budget,
    next_id: &mut u64,
    hist: &mut Histogram,
) -> Result<u64, BoxError> {
    let (payload, in_flight) = (spec.point.payload, spec.point.in_flight.max(1));
    let mut outstanding: VecDeque<(u64, Option<Instant>)> = VecDeque::with_capacity(in_flight);
    let start = Instant::now();
    let mut last = start;
    let (mut sent, mut done, mut acc) = (0u64, 0u64, 0u64);
    let mut stopping = false;
    loop {
        while !stopping && outstanding.len() < in_flight {
            stopping = match budget {
                Budget::Count(n) => sent >= n,
                // One in flight: `last` is the clock reading that ended the previous round trip.
                Budget::Time(d) if in_flight == 1 => last - start >= d,
                Budget::Time(d) => sent % TIMED_EVERY == 0 && start.elapsed() >= d,
            };
            if stopping {
                break;
            }
            let id = *next_id;
            *next_id += 1;
            let at = if in_flight == 1 {
                Some(last)
            } else if id % TIMED_EVERY == 0 {
                Some(Instant::now())
            } else {
                None
            };
            send_record(conn, ctx, id, value)?;
            outstanding.push_back((id, at));
            sent += 1;
        }
        let Some(&(id, at)) = outstanding.front() else {
            break;
        };
        let frame = conn.recv()?;
        if frame.meta() != Meta::new(DATA, id) {
            return Err(format!("expected the response to request {id}, got {:?}", frame.meta()).into());
        }
        acc += touch(&frame, payload, RESPONSE_FILL)?;
        drop(frame);
        outstanding.pop_front();
        done += 1;
        if let Some(at) = at {
            last = Instant::now();
            hist.record_duration(last - at);
        }
    }
    black_box(acc);
    Ok(done)
}

fn client<T: Endpoint>(
    conn: &mut T,
    pool: &Pool,
    value: &SharedBuf,
    spec: &Spec,
) -> Result<ClientSide, BoxError> {
    let ctx = Context::new(pool.clone());
    let mut next_id = 0u64;
    let mut warm = Histogram::default();
    pipeline(
        conn,
        &ctx,
        value,
        spec,
        spec.budget.warmup(),
        &mut next_id,
        &mut warm,
    )?;
    exchange(conn, MARK, &mut next_id)?;
    let (t0, cpu0, c0) = (Instant::now(), thread_cpu_time(), conn.counters());
    let mut hist = Histogram::default();
    let requests = pipeline(conn, &ctx, value, spec, spec.budget, &mut next_id, &mut hist)?;
    let (t1, cpu1, c1) = (Instant::now(), thread_cpu_time(), conn.counters());
    exchange(conn, END, &mut next_id)?;
    Ok(ClientSide {
        requests,
        elapsed: t1 - t0,
        cpu: cpu1.saturating_sub(cpu0),
        hist,
        window: c1.since(c0),
        total: conn.counters(),
    })
}

/// The server's side of a run.
struct ServerSide {
    requests: u64,
    cpu: Duration,
    window: Counters,
    total: Counters,
}

/// Answers every request with a record of the same shape from its own pool, and echoes the
/// control frames; returns at `END`.
fn serve<T: Endpoint>(
    conn: &mut T,
    pool: &Pool,
    value: &SharedBuf,
    payload: usize,
) -> Result<ServerSide, BoxError> {
    let ctx = Context::new(pool.clone());
    let (mut served, mut acc) = (0u64, 0u64);
    let mut mark = None;
    loop {
        let frame = conn.recv()?;
        let meta = frame.meta();
        match meta.kind {
            DATA => {
                acc += touch(&frame, payload, REQUEST_FILL)?;
                // Release the request first, so that its acknowledgement rides on the reply.
                drop(frame);
                send_record(conn, &ctx, meta.request_id, value)?;
                served += 1;
            }
            MARK => {
                drop(frame);
                mark = Some((thread_cpu_time(), conn.counters(), served));
                conn.send_payload(meta, Payload::Bytes(&[]))?;
            }
            END => {
                drop(frame);
                let (cpu1, c1) = (thread_cpu_time(), conn.counters());
                conn.send_payload(meta, Payload::Bytes(&[]))?;
                conn.flush()?;
                black_box(acc);
                let (cpu0, c0, served0) = mark.ok_or("END before MARK")?;
                return Ok(ServerSide {
                    requests: served - served0,
                    cpu: cpu1.saturating_sub(cpu0),
                    window: c1.since(c0),
                    total: c1,
                });
            }
            k => return Err(format!("unexpected frame kind {k}").into()),
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
struct RunResult {
    requests: u64,
    elapsed: Duration,
    hist: Histogram,
    client_cpu: Duration,
    server_cpu: Duration,
    server_requests: u64,
    /// Both sides over the measured window.
    window: Counters,
    /// Both sides over the whole connection (warm-up included).
    total: Counters,
    /// Bytes of one request's header segment (what the CPU writes per request besides
    /// framing; inline values included).
    head_bytes: usize,
}

impl RunResult {
    fn requests_per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn per_req(&self, v: u64) -> f64 {
        v as f64 / self.requests.max(1) as f64
    }
}

fn pin(cpu: usize) -> Result<(), BoxError> {
    Ok(harness::pin_current_thread(cpu)?)
}

fn joined<T>(r: thread::Result<Result<T, BoxError>>) -> Result<T, BoxError> {
    r.unwrap_or_else(|_| Err("thread panicked".into()))
}

fn combine(
    client: Result<ClientSide, BoxError>,
    server: Result<ServerSide, BoxError>,
    head_bytes: usize,
) -> Result<RunResult, BoxError> {
    let (c, s) = match (client, server) {
        (Ok(c), Ok(s)) => (c, s),
        (Err(e), _) => return Err(format!("client: {e}").into()),
        (_, Err(e)) => return Err(format!("server: {e}").into()),
    };
    Ok(RunResult {
        requests: c.requests,
        elapsed: c.elapsed,
        hist: c.hist,
        client_cpu: c.cpu,
        server_cpu: s.cpu,
        server_requests: s.requests,
        window: c.window.plus(s.window),
        total: c.total.plus(s.total),
        head_bytes,
    })
}

/// Bytes of the header segment of a request carrying `value`.
fn head_bytes(pool: &Pool, value: &SharedBuf) -> usize {
    let ctx = Context::new(pool.clone());
    let mut rec = Record::new(&ctx);
    rec.append_field(&value[..]);
    rec.layout().head_len
}

/// The pools of the benchmark: shared (memfd) pools for the shm runs, ordinary ones for TCP;
/// a client's and a server's of each, as two processes would have.
struct Pools {
    shm: (Pool, Pool),
    tcp: (Pool, Pool),
}

impl Pools {
    fn new() -> Result<Pools, BoxError> {
        let shared = || {
            Pool::new(PoolConfig {
                shared: true,
                region_size: 2 << 20,
                max_bytes: 64 << 20,
                ..PoolConfig::default()
            })
        };
        Ok(Pools {
            shm: (shared()?, shared()?),
            tcp: (
                Pool::new(PoolConfig::default())?,
                Pool::new(PoolConfig::default())?,
            ),
        })
    }
}

fn value(pool: &Pool, payload: usize, fill: u8) -> Result<SharedBuf, BoxError> {
    Ok(pool.copy_from(&vec![fill; payload])?)
}

/// One step of setting up a connection (run once per run, so boxed).
type Step<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

/// How the two sides of a run get their ends of a fresh connection; the rest of a run is the
/// same for every transport.
struct Link<'a, T> {
    /// The server's end. It owns the listener: a server that fails before accepting drops it,
    /// which fails the client's connect instead of leaving it waiting.
    accept: Step<'a, Result<T, BoxError>>,
    /// The client's end.
    connect: Step<'a, Result<T, BoxError>>,
    /// Called when the client fails before it is connected: frees a server still waiting in
    /// `accept`.
    give_up: Step<'a, ()>,
}

/// Runs `server` and `client` on two threads pinned to `spec.cpus` (client, server), each on
/// its end of the connection `link` makes; returns (client's result, server's result).
fn on_two_cores<T: Endpoint, C: Send, S: Send>(
    spec: &Spec,
    link: Link<'_, T>,
    server: impl FnOnce(&mut T) -> Result<S, BoxError> + Send,
    client: impl FnOnce(&mut T) -> Result<C, BoxError> + Send,
) -> (Result<C, BoxError>, Result<S, BoxError>) {
    let Link {
        accept,
        connect,
        give_up,
    } = link;
    thread::scope(|s| {
        let server = s.spawn(move || {
            pin(spec.cpus.1)?;
            server(&mut accept()?)
        });
        let client = s.spawn(move || {
            let mut conn = match pin(spec.cpus.0).and_then(|()| connect()) {
                Ok(conn) => conn,
                Err(e) => {
                    give_up();
                    return Err(e);
                }
            };
            client(&mut conn)
        });
        (joined(client.join()), joined(server.join()))
    })
}

/// An shm link over a fresh socket path, with `config` on both sides.
fn shm_link(pools: &Pools, seq: u64, config: ShmConfig) -> Result<Link<'_, ShmConnection>, BoxError> {
    let path = std::env::temp_dir().join(format!("ferry-bench-shm-{}-{seq}", std::process::id()));
    let listener = ShmListener::bind(&path)?;
    let server_config = config.clone();
    let client_path = path.clone();
    Ok(Link {
        accept: Box::new(move || Ok(listener.accept(&pools.shm.1, &server_config)?)),
        connect: Box::new(move || Ok(ShmConnection::connect(&client_path, &pools.shm.0, &config)?)),
        // Unblock the server's accept (its handshake then fails).
        give_up: Box::new(move || {
            let _ = UnixStream::connect(&path);
        }),
    })
}

/// The TCP connections' settings: gather mode, the default batching.
fn tcp_config() -> Config {
    Config::with_mode(Mode::Gather)
}

/// A TCP link over a fresh loopback listener, with `congestion` control on both sides.
fn tcp_link<'a>(pools: &'a Pools, spin: bool, congestion: &'a str) -> Result<Link<'a, Tcp>, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    Ok(Link {
        accept: Box::new(move || {
            let stream = harness::accept(&listener)?;
            let conn = Connection::new(stream, &pools.tcp.1, &tcp_config())?;
            // An error here is reported by the client, which sets the same option.
            let _ = conn.set_congestion(congestion);
            Ok(Tcp::new(conn, spin))
        }),
        connect: Box::new(move || {
            let conn = Connection::connect(addr, &pools.tcp.0, &tcp_config())?;
            conn.set_congestion(congestion)
                .map_err(|e| format!("setting {congestion} congestion control: {e}"))?;
            Ok(Tcp::new(conn, spin))
        }),
        // Nothing to do: `harness::accept` gives up by itself.
        give_up: Box::new(|| {}),
    })
}

/// One run over the fresh connection `link` makes; `pools` are the client's and the server's.
fn run_over<T: Endpoint>(
    spec: &Spec,
    pools: &(Pool, Pool),
    link: Link<'_, T>,
) -> Result<RunResult, BoxError> {
    let (cv, sv) = (
        value(&pools.0, spec.point.payload, REQUEST_FILL)?,
        value(&pools.1, spec.point.payload, RESPONSE_FILL)?,
    );
    let (client_side, server_side) = on_two_cores(
        spec,
        link,
        |conn| serve(conn, &pools.1, &sv, spec.point.payload),
        |conn| client(conn, &pools.0, &cv, spec),
    );
    combine(client_side, server_side, head_bytes(&pools.0, &cv))
}

/// One shm run: a fresh connection over a fresh socket path.
fn run_shm(spec: &Spec, pools: &Pools, seq: u64) -> Result<RunResult, BoxError> {
    let config = match spec.point.notify {
        Notify::Spin => ShmConfig {
            spin: Duration::MAX,
            never_sleep: true,
            ..ShmConfig::default()
        },
        _ => ShmConfig::default(),
    };
    run_over(spec, &pools.shm, shm_link(pools, seq, config)?)
}

/// One TCP run: a fresh loopback connection.
fn run_tcp(spec: &Spec, pools: &Pools, congestion: &str) -> Result<RunResult, BoxError> {
    let spin = spec.point.notify == Notify::Spin;
    run_over(spec, &pools.tcp, tcp_link(pools, spin, congestion)?)
}

/// An `AtomicU64` alone on its cache line (and the adjacent-line prefetcher's pair).
#[derive(Default)]
#[repr(align(128))]
struct Line(AtomicU64);

/// Written to a flag line when a side gives up.
const STOP: u64 = u64::MAX;

/// Waits until `line` holds something other than `old`.
fn spin_until_changed(line: &Line, old: u64) -> u64 {
    loop {
        let v = line.0.load(Ordering::Acquire);
        if v != old {
            return v;
        }
        spin_loop();
    }
}

/// One direction of the raw ping-pong: a flag line and `depth` chained lines.
struct Lane(Vec<Line>);

impl Lane {
    fn new(depth: usize) -> Lane {
        Lane((0..=depth).map(|_| Line::default()).collect())
    }

    /// Writes the chained lines, then the flag (release).
    fn post(&self, seq: u64) {
        for line in &self.0[1..] {
            line.0.store(seq, Ordering::Relaxed);
        }
        self.0[0].0.store(seq, Ordering::Release);
    }

    /// After the flag showed `seq`: reads the chained lines one after another, each address
    /// computed from the value read before it (as a ring entry names a block and a block's
    /// header names its fields), so the misses cannot overlap.
    fn follow(&self, seq: u64) -> Result<(), BoxError> {
        let mut at = 1usize;
        for _ in 1..self.0.len() {
            let v = self
                .0
                .get(at)
                .ok_or("chain out of step")?
                .0
                .load(Ordering::Acquire);
            at += 1 + v.wrapping_sub(seq) as usize;
        }
        Ok(())
    }
}

/// The raw ping-pong (see the module docs); with `depth` > 0 each direction also carries that
/// many chained lines (a diagnostic: the cost of a dependent cross-core cache miss). The
/// server's CPU is over its whole life (warm-up included), scaled to the measured requests: it
/// spins all the time either way.
fn run_raw(spec: &Spec, depth: usize) -> Result<RunResult, BoxError> {
    let (ping, pong) = (Lane::new(depth), Lane::new(depth));
    let stop = |lane: &Lane| lane.0[0].0.store(STOP, Ordering::Release);
    let (client, server) = thread::scope(|s| {
        let server = s.spawn(|| -> Result<(Duration, u64), BoxError> {
            let result = (|| {
                pin(spec.cpus.1)?;
                let cpu0 = thread_cpu_time();
                let (mut last, mut echoes) = (0u64, 0u64);
                loop {
                    let v = spin_until_changed(&ping.0[0], last);
                    if v == STOP {
                        break;
                    }
                    ping.follow(v)?;
                    pong.post(v);
                    last = v;
                    echoes += 1;
                }
                Ok((thread_cpu_time().saturating_sub(cpu0), echoes))
            })();
            if result.is_err() {
                stop(&pong);
            }
            result
        });
        let client = s.spawn(|| -> Result<(u64, Duration, Duration, Histogram), BoxError> {
            let mut seq = 0u64;
            let mut phase = |budget: Budget, hist: &mut Histogram| -> Result<u64, BoxError> {
                let start = Instant::now();
                let mut last = start;
                let mut n = 0u64;
                while !match budget {
                    Budget::Count(c) => n >= c,
                    Budget::Time(d) => last - start >= d,
                } {
                    seq += 1;
                    ping.post(seq);
                    if spin_until_changed(&pong.0[0], seq - 1) != seq {
                        return Err("the server stopped".into());
                    }
                    pong.follow(seq)?;
                    let now = Instant::now();
                    hist.record_duration(now - last);
                    last = now;
                    n += 1;
                }
                Ok(n)
            };
            let result = (|| {
                pin(spec.cpus.0)?;
                phase(spec.budget.warmup(), &mut Histogram::default())?;
                let mut hist = Histogram::default();
                let (t0, cpu0) = (Instant::now(), thread_cpu_time());
                let n = phase(spec.budget, &mut hist)?;
                Ok((n, t0.elapsed(), thread_cpu_time().saturating_sub(cpu0), hist))
            })();
            stop(&ping);
            result
        });
        (joined(client.join()), joined(server.join()))
    });
    let (requests, elapsed, client_cpu, hist) = client.map_err(|e| format!("client: {e}"))?;
    let (server_cpu, echoes) = server.map_err(|e| format!("server: {e}"))?;
    Ok(RunResult {
        requests,
        elapsed,
        hist,
        client_cpu,
        server_cpu: server_cpu.mul_f64(requests as f64 / echoes.max(1) as f64),
        server_requests: requests,
        window: Counters::default(),
        total: Counters::default(),
        head_bytes: 0,
    })
}

/// What [`ping_pong`] measured.
#[derive(Debug, Clone)]
pub struct PingPong {
    /// Round trips in the measured window.
    pub round_trips: u64,
    /// Length of the window.
    pub elapsed: Duration,
    /// Every round trip of the window, in nanoseconds (one clock reading each).
    pub latency: Histogram,
    /// The client thread's CPU time over the window.
    pub client_cpu: Duration,
    /// The server thread's CPU time over its whole life, scaled to the measured round trips
    /// (it spins all the time either way).
    pub server_cpu: Duration,
}

/// The raw shared-memory ping-pong of this benchmark (see the module docs) on its own: the
/// floor of any round trip through memory between `client_cpu` and `server_cpu`, for other
/// benchmarks to measure in their own runs (`ferry bench rpc`). A warm-up of a tenth of
/// `budget` comes first.
pub fn ping_pong(budget: Budget, client_cpu: usize, server_cpu: usize) -> Result<PingPong, BoxError> {
    let spec = Spec {
        point: Point {
            transport: TransportKind::Raw,
            notify: Notify::Spin,
            payload: RAW_PAYLOAD,
            in_flight: 1,
        },
        budget,
        cpus: (client_cpu, server_cpu),
    };
    let r = run_raw(&spec, 0)?;
    Ok(PingPong {
        round_trips: r.requests,
        elapsed: r.elapsed,
        latency: r.hist,
        client_cpu: r.client_cpu,
        server_cpu: r.server_cpu,
    })
}

/// The phases of a one-in-flight shm round trip that [`breakdown`] times. Each includes one
/// clock reading.
const PHASES: [&str; 9] = [
    "client: build the request, queue it (send)",
    "client: publish the block (flush)",
    "request: published -> server's recv returns",
    "server: validate in place, check the field, drop the frame",
    "server: build the response, queue it (send)",
    "server: publish the block (flush)",
    "response: published -> client's recv returns",
    "client: validate in place, check the field, drop the frame",
    "round trip",
];

/// Times the phases of `rounds` one-in-flight shm round trips (busy-poll) with timestamps on
/// both threads (one monotonic clock, so the crossings can be subtracted too); returns each
/// phase's median in ns, the first tenth of the rounds left out as warm-up.
fn breakdown(spec: &Spec, pools: &Pools, seq: u64, rounds: usize) -> Result<Vec<f64>, BoxError> {
    let config = ShmConfig {
        spin: Duration::MAX,
        never_sleep: true,
        ..ShmConfig::default()
    };
    let link = shm_link(pools, seq, config)?;
    let payload = spec.point.payload;
    let (cv, sv) = (
        value(&pools.shm.0, payload, REQUEST_FILL)?,
        value(&pools.shm.1, payload, RESPONSE_FILL)?,
    );
    let base = Instant::now();
    let ns = |t: Instant| (t - base).as_nanos() as i64;
    let (client, server) = on_two_cores(
        spec,
        link,
        |conn| -> Result<Vec<[i64; 4]>, BoxError> {
            let ctx = Context::new(pools.shm.1.clone());
            let mut times = Vec::with_capacity(rounds);
            loop {
                let frame = conn.recv()?;
                let s0 = Instant::now();
                let meta = frame.meta();
                if meta.kind != DATA {
                    drop(frame);
                    conn.send_payload(meta, Payload::Bytes(&[]))?;
                    conn.flush()?;
                    return Ok(times);
                }
                black_box(touch(&frame, payload, REQUEST_FILL)?);
                drop(frame);
                let s1 = Instant::now();
                send_record(conn, &ctx, meta.request_id, &sv)?;
                let s2 = Instant::now();
                conn.flush()?;
                times.push([ns(s0), ns(s1), ns(s2), ns(Instant::now())]);
            }
        },
        |conn| -> Result<Vec<[i64; 5]>, BoxError> {
            let ctx = Context::new(pools.shm.0.clone());
            let mut times = Vec::with_capacity(rounds);
            for id in 0..rounds as u64 {
                let t0 = Instant::now();
                send_record(conn, &ctx, id, &cv)?;
                let t1 = Instant::now();
                conn.flush()?;
                let t2 = Instant::now();
                let frame = conn.recv()?;
                let t3 = Instant::now();
                if frame.meta() != Meta::new(DATA, id) {
                    return Err(
                        format!("expected the response to request {id}, got {:?}", frame.meta()).into(),
                    );
                }
                black_box(touch(&frame, payload, RESPONSE_FILL)?);
                drop(frame);
                times.push([ns(t0), ns(t1), ns(t2), ns(t3), ns(Instant::now())]);
            }
            exchange(conn, END, &mut (rounds as u64))?;
            Ok(times)
        },
    );
    let c = client.map_err(|e| format!("client: {e}"))?;
    let s = server.map_err(|e| format!("server: {e}"))?;
    if c.len() != s.len() {
        return Err(format!("{} requests, {} served", c.len(), s.len()).into());
    }
    let phase = |f: &dyn Fn(&[i64; 5], &[i64; 4]) -> i64| {
        let v: Vec<f64> = c
            .iter()
            .zip(&s)
            .skip(c.len() / 10)
            .map(|(c, s)| f(c, s) as f64)
            .collect();
        median(&v).unwrap_or(0.0)
    };
    Ok(vec![
        phase(&|c, _| c[1] - c[0]),
        phase(&|c, _| c[2] - c[1]),
        phase(&|c, s| s[0] - c[2]),
        phase(&|_, s| s[1] - s[0]),
        phase(&|_, s| s[2] - s[1]),
        phase(&|_, s| s[3] - s[2]),
        phase(&|c, s| c[3] - s[3]),
        phase(&|c, _| c[4] - c[3]),
        phase(&|c, _| c[4] - c[0]),
    ])
}

/// Diagnostics of the one-in-flight shm round trip: where its time goes, and what a dependent
/// cross-core cache miss costs on this machine. Printed, and returned for the JSON.
fn diagnostics(
    args: &Args,
    budget: Budget,
    cpus: (usize, usize),
    pools: &Pools,
    seq: &mut u64,
) -> Result<Value, BoxError> {
    let rounds = match budget {
        Budget::Count(n) => n as usize,
        Budget::Time(_) if args.common.quick => 50_000,
        Budget::Time(_) => 200_000,
    }
    .max(1);
    let mut payloads = if args.payloads.is_empty() {
        PAYLOADS.to_vec()
    } else {
        args.payloads.clone()
    };
    payloads.sort_unstable();
    payloads.dedup();
    let mut columns = Vec::new();
    for &payload in &payloads {
        *seq += 1;
        let spec = Spec {
            point: Point {
                transport: TransportKind::Shm,
                notify: Notify::Spin,
                payload,
                in_flight: 1,
            },
            budget,
            cpus,
        };
        columns.push((payload, breakdown(&spec, pools, *seq, rounds)?));
    }
    println!("
Where a one-in-flight shm round trip goes (shm spin, {rounds} round trips, medians in ns; each phase includes one clock reading):");
    print!("  {:<62}", "phase");
    for (payload, _) in &columns {
        print!(" {:>8}", plot::bytes_label(*payload as f64));
    }
    println!();
    for (i, name) in PHASES.iter().enumerate() {
        print!("  {name:<62}");
        for (_, v) in &columns {
            print!(" {:>8.0}", v[i]);
        }
        println!();
    }
    let mut chain = Vec::new();
    for depth in 0..=3usize {
        let spec = Spec {
            point: Point {
                transport: TransportKind::Raw,
                notify: Notify::Spin,
                payload: RAW_PAYLOAD * (depth + 1),
                in_flight: 1,
            },
            budget: match budget {
                Budget::Count(n) => Budget::Count(n),
                Budget::Time(d) => Budget::Time(d / 2),
            },
            cpus,
        };
        let r = run_raw(&spec, depth)?;
        chain.push((depth, r.hist.quantile(0.5).unwrap_or(0)));
    }
    println!(
        "Raw ping-pong with chained lines: each direction also reads `depth` lines one after another, each address taken from the line before (p50 round trip, ns):"
    );
    for &(depth, p50) in &chain {
        println!("  depth {depth}: {p50}");
    }
    Ok(json!({
        "breakdown": {
            "what": "one-in-flight shm round trips (spin), timestamps on both threads; medians per phase in ns, each including one clock reading",
            "rounds": rounds,
            "phases": PHASES,
            "by_payload": columns.iter().map(|(p, v)| json!({"payload": p, "ns": v})).collect::<Vec<_>>(),
        },
        "raw_chain": {
            "what": "raw ping-pong whose every direction also reads `depth` cache lines written by the peer, one after another, each address computed from the line read before; p50 round trip in ns",
            "p50_ns": chain.iter().map(|&(d, p)| json!({"depth": d, "p50_ns": p})).collect::<Vec<_>>(),
        },
    }))
}

/// A configuration's medians over its repetitions.
#[derive(Debug, Clone)]
struct Summary {
    point: Point,
    p50: f64,
    p99: f64,
    p999: f64,
    rps: f64,
    client_us: f64,
    server_us: f64,
    copied_in: u64,
    referenced_per_req: f64,
    sleeps_per_req: Option<f64>,
    record: Value,
}

fn summarize(point: Point, runs: &[RunResult]) -> Summary {
    let med = |f: &dyn Fn(&RunResult) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    let q = |r: &RunResult, q: f64| r.hist.quantile(q).unwrap_or(0) as f64;
    let p50 = med(&|r| q(r, 0.5));
    let p99 = med(&|r| q(r, 0.99));
    let p999 = med(&|r| q(r, 0.999));
    let rps = med(&|r| r.requests_per_sec());
    let client_us = med(&|r| r.client_cpu.as_secs_f64() * 1e6 / r.requests.max(1) as f64);
    let server_us = med(&|r| r.server_cpu.as_secs_f64() * 1e6 / r.server_requests.max(1) as f64);
    let sum = |f: &dyn Fn(&RunResult) -> u64| runs.iter().map(f).sum::<u64>();
    let copied_in = sum(&|r| r.total.copied_in);
    let referenced = sum(&|r| r.total.referenced);
    let referenced_per_req = med(&|r| r.per_req(r.window.referenced));
    let shm = point.transport == TransportKind::Shm;
    let tcp = point.transport == TransportKind::Tcp;
    let per_req_if = |on: bool, f: &dyn Fn(&Counters) -> u64| on.then(|| med(&|r| r.per_req(f(&r.window))));
    let sleeps_per_req = per_req_if(shm, &|c| c.sleeps);
    let round = harness::round;
    let opt = |v: Option<f64>, digits: i32| v.map(|v| round(v, digits));
    let record = json!({
        "transport": point.transport.name(),
        "notify": point.notify.name(),
        "payload": point.payload,
        "in_flight": point.in_flight,
        "reps": runs.len(),
        "requests": med(&|r| r.requests as f64) as u64,
        "samples": sum(&|r| r.hist.count()),
        "p50_ns": p50,
        "p99_ns": p99,
        "p999_ns": p999,
        "mean_ns": round(med(&|r| r.hist.mean().unwrap_or(0.0)), 1),
        "min_ns": runs.iter().filter_map(|r| r.hist.min()).min(),
        "max_ns": runs.iter().filter_map(|r| r.hist.max()).max(),
        "p50_ns_reps": runs.iter().map(|r| q(r, 0.5)).collect::<Vec<_>>(),
        "requests_per_sec": round(rps, 0),
        "requests_per_sec_reps": runs.iter().map(|r| round(r.requests_per_sec(), 0)).collect::<Vec<_>>(),
        "client_cpu_us_per_req": round(client_us, 4),
        "server_cpu_us_per_req": round(server_us, 4),
        "request_head_bytes": runs.first().map_or(0, |r| r.head_bytes),
        "bytes_copied_in": copied_in,
        "bytes_referenced": referenced,
        "bytes_referenced_per_req": round(referenced_per_req, 1),
        "bytes_copied_in_per_req": round(med(&|r| r.per_req(r.window.copied_in)), 1),
        "staged_bytes_per_req": opt(per_req_if(tcp, &|c| c.staged), 1),
        "publishes_per_req": opt(per_req_if(shm || tcp, &|c| c.publishes), 4),
        "receives_per_req": opt(per_req_if(shm || tcp, &|c| c.receives), 4),
        "ack_entries_per_req": opt(per_req_if(shm, &|c| c.ack_entries), 4),
        "sleeps_per_req": opt(sleeps_per_req, 4),
        "wakeups_per_req": opt(per_req_if(shm, &|c| c.wakeups), 4),
        "credit_waits": shm.then(|| sum(&|r| r.window.credit_waits)),
    });
    Summary {
        point,
        p50,
        p99,
        p999,
        rps,
        client_us,
        server_us,
        copied_in,
        referenced_per_req,
        sleeps_per_req,
        record,
    }
}

fn from_record(r: &Value) -> Option<Summary> {
    let f = |k: &str| r[k].as_f64();
    Some(Summary {
        point: Point {
            transport: harness::by_name(&TransportKind::ALL, TransportKind::name, r["transport"].as_str()?)?,
            notify: harness::by_name(&Notify::ALL, Notify::name, r["notify"].as_str()?)?,
            payload: r["payload"].as_u64()? as usize,
            in_flight: r["in_flight"].as_u64()? as usize,
        },
        p50: f("p50_ns")?,
        p99: f("p99_ns")?,
        p999: f("p999_ns")?,
        rps: f("requests_per_sec")?,
        client_us: f("client_cpu_us_per_req")?,
        server_us: f("server_cpu_us_per_req")?,
        copied_in: r["bytes_copied_in"].as_u64()?,
        referenced_per_req: f("bytes_referenced_per_req")?,
        sleeps_per_req: f("sleeps_per_req"),
        record: r.clone(),
    })
}

fn table_header() {
    println!(
        "{:<5} {:<7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>11} {:>8} {:>8} {:>8} {:>10} {:>9}",
        "trans",
        "notify",
        "payload",
        "inflight",
        "p50 ns",
        "p99 ns",
        "p99.9 ns",
        "req/s",
        "cli us/r",
        "srv us/r",
        "copied B",
        "refd B/r",
        "sleeps/r"
    );
}

fn table_row(s: &Summary) {
    println!(
        "{:<5} {:<7} {:>7} {:>8} {:>9.0} {:>9.0} {:>9.0} {:>11.0} {:>8.3} {:>8.3} {:>8} {:>10.1} {:>9}",
        s.point.transport.name(),
        s.point.notify.name(),
        plot::bytes_label(s.point.payload as f64),
        s.point.in_flight,
        s.p50,
        s.p99,
        s.p999,
        s.rps,
        s.client_us,
        s.server_us,
        s.copied_in,
        s.referenced_per_req,
        s.sleeps_per_req.map_or("-".to_owned(), |v| format!("{v:.4}")),
    );
}

/// The runs, in the order they are interleaved within a repetition.
fn plan(args: &Args) -> Vec<Point> {
    let transports = if args.transports.is_empty() {
        vec![TransportKind::Raw, TransportKind::Shm, TransportKind::Tcp]
    } else {
        args.transports.clone()
    };
    let mut payloads = if args.payloads.is_empty() {
        PAYLOADS.to_vec()
    } else {
        args.payloads.clone()
    };
    payloads.sort_unstable();
    payloads.dedup();
    let in_flight = if args.in_flight.is_empty() {
        IN_FLIGHT.to_vec()
    } else {
        args.in_flight.clone()
    };
    let has = |t| transports.contains(&t);
    let p = |transport, notify, payload, in_flight| Point {
        transport,
        notify,
        payload,
        in_flight,
    };
    let (small, large) = (payloads[0], payloads[payloads.len() - 1]);
    let mut points = Vec::new();
    if has(TransportKind::Raw) {
        points.push(p(TransportKind::Raw, Notify::Spin, RAW_PAYLOAD, 1));
    }
    let variants = |t| match t {
        TransportKind::Shm => [Notify::Spin, Notify::Default],
        _ => [Notify::Spin, Notify::Poll],
    };
    for &payload in &payloads {
        for t in [TransportKind::Shm, TransportKind::Tcp] {
            if has(t) {
                points.extend(variants(t).map(|n| p(t, n, payload, 1)));
            }
        }
    }
    for &n in &in_flight {
        for t in [TransportKind::Shm, TransportKind::Tcp] {
            if has(t) {
                points.extend(variants(t).map(|v| p(t, v, small, n.max(1))));
            }
        }
    }
    if has(TransportKind::Shm) && large != small {
        if let Some(&n) = in_flight.iter().max() {
            points.push(p(TransportKind::Shm, Notify::Spin, large, n.max(1)));
        }
    }
    points
}

/// Runs the sweep, prints the table and the targets, writes the JSON (and the plot).
pub fn run(args: &Args) -> Result<(), BoxError> {
    if let Some(from) = &args.common.from {
        return redraw(args, from);
    }
    let json_path = args.common.json_path()?;
    let budget = args.common.budget(QUICK_MS, FULL_MS);
    let reps = args
        .reps
        .unwrap_or(if args.common.quick { QUICK_REPS } else { FULL_REPS })
        .max(1);
    let server_cpu = if harness::cpus() > 1 {
        args.server_cpu
    } else {
        eprintln!("warning: one CPU: client and server share it, and spinning sides wait for the scheduler");
        args.client_cpu
    };
    let points = plan(args);
    let pools = Pools::new()?;
    let clock_ns = harness::clock_cost_ns();

    println!(
        "ferry bench shm: request/response round trips, client on CPU {}, server on CPU {server_cpu}, {reps} repetition(s) of {} per configuration (median shown); one clock reading costs {clock_ns:.0} ns and is inside every timed round trip.",
        args.client_cpu,
        budget.describe("requests"),
    );
    println!(
        "notify: spin = busy-poll; default = ShmConfig::default() (spin 50 us, then eventfd); poll = blocking TCP. copied B: value bytes copied into the transport's memory, whole run; refd B/r: value bytes referenced in place per round trip (both directions).\n"
    );

    let started = Instant::now();
    let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); points.len()];
    let mut seq = 0u64;
    let progress = Progress::new((reps * points.len()) as u64, "shm");
    // Repetitions interleave the configurations, so that a noisy moment hits them alike.
    for _ in 0..reps {
        for (i, &point) in points.iter().enumerate() {
            let spec = Spec {
                point,
                budget,
                cpus: (args.client_cpu, server_cpu),
            };
            seq += 1;
            let what = format!(
                "{}, {} B, {} in flight",
                point.label(),
                point.payload,
                point.in_flight
            );
            progress.start(what.clone());
            let r = match point.transport {
                TransportKind::Raw => run_raw(&spec, 0),
                TransportKind::Shm => run_shm(&spec, &pools, seq),
                TransportKind::Tcp => run_tcp(&spec, &pools, &args.congestion),
            }
            .map_err(|e| format!("{what}: {e}"))?;
            progress.done();
            runs[i].push(r);
        }
    }
    progress.finish();
    let summaries: Vec<Summary> = points.iter().zip(&runs).map(|(&p, r)| summarize(p, r)).collect();
    table_header();
    for s in &summaries {
        table_row(s);
    }
    println!();
    print_targets(&summaries);
    let diagnostics = if points.iter().any(|p| p.transport == TransportKind::Shm) {
        diagnostics(args, budget, (args.client_cpu, server_cpu), &pools, &mut seq)?
    } else {
        Value::Null
    };

    let shm_default = ShmConfig::default();
    let tcp = tcp_config();
    let settings = json!({
        "budget": budget.to_json("requests"),
        "warmup": "a tenth of the budget, before the measured window",
        "reps": reps,
        "statistic": "median over repetitions of each run's percentile, rate and CPU figures; byte counts summed over repetitions",
        "latency": "from just before a request is built to just after its response is validated and touched; HdrHistogram, three significant digits (within 0.1 %); one in flight: every round trip, one clock reading each; pipelined: every 16th request",
        "clock_cost_ns": clock_ns,
        "client_cpu": args.client_cpu,
        "server_cpu": server_cpu,
        "request": "ferry::sample::Record with one field of `payload` bytes, a pool-resident SharedBuf of the sender's pool",
        "response": "the same shape from the server's own pool; the server validates the request in place and checks the field's length, first and last byte (the client likewise)",
        "context_threshold": DEFAULT_THRESHOLD,
        "raw": "two AtomicU64 on separate 128-byte lines; client stores a sequence number and spins until the server echoes it; payload 8 = the sequence number",
        "shm": {
            "pool": "shared (memfd), 2 MiB regions, 64 MiB, huge pages and mlock best effort; one per side",
            "block_size": shm_default.block_size,
            "credits": shm_default.credits,
            "spin_default_us": shm_default.spin.as_micros() as u64,
            "spin": "Duration::MAX",
        },
        "tcp": {
            "mode": tcp.mode.name(),
            "batch_frames": tcp.batch_frames,
            "batch_bytes": tcp.batch_bytes,
            "congestion": args.congestion,
            "spin": "receive half non-blocking, recv retried in a busy loop",
            "poll": "blocking recv (poll(2))",
        },
        "wall_seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    });
    let records: Vec<Value> = summaries.iter().map(|s| s.record.clone()).collect();
    report::save(
        json_path,
        "shm",
        settings,
        &records,
        diagnostics,
        started.elapsed(),
    )?;
    if let Some(path) = &args.common.plot {
        draw(path, &summaries)?;
        println!("plot in {}", path.display());
    }
    Ok(())
}

/// `--from`: the table, targets and plot of an earlier run.
fn redraw(args: &Args, from: &Path) -> Result<(), BoxError> {
    let all = report::load(from, from_record)?;
    table_header();
    for s in &all {
        table_row(s);
    }
    println!();
    print_targets(&all);
    if let Some(path) = &args.common.plot {
        draw(path, &all)?;
        println!("plot in {}", path.display());
    }
    Ok(())
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "missed" }
}

/// The issue's targets and the comparisons, from this run's summaries.
fn print_targets(all: &[Summary]) {
    let find = |transport, notify, payload: Option<usize>, in_flight| {
        all.iter().find(|s| {
            s.point.transport == transport
                && s.point.notify == notify
                && s.point.in_flight == in_flight
                && payload.is_none_or(|p| s.point.payload == p)
        })
    };
    let mut payloads: Vec<usize> = all
        .iter()
        .filter(|s| s.point.transport != TransportKind::Raw)
        .map(|s| s.point.payload)
        .collect();
    payloads.sort_unstable();
    payloads.dedup();
    let (Some(&small), Some(&large)) = (payloads.first(), payloads.last()) else {
        return;
    };
    let raw = find(TransportKind::Raw, Notify::Spin, None, 1);
    println!("Targets (shm spin is the latency configuration; default shown for comparison):");
    for notify in [Notify::Spin, Notify::Default] {
        let (s, l) = (
            find(TransportKind::Shm, notify, Some(small), 1),
            find(TransportKind::Shm, notify, Some(large), 1),
        );
        if let (Some(s), Some(raw)) = (s, raw) {
            let x = s.p50 / raw.p50;
            println!(
                "  shm {:<7} {} p50 / raw p50: {:.0} / {:.0} ns = {x:.2}x (target <= {TARGET_VS_RAW}x: {})",
                notify.name(),
                plot::bytes_label(small as f64),
                s.p50,
                raw.p50,
                verdict(x <= TARGET_VS_RAW)
            );
        }
        if let (Some(s), Some(l)) = (s, l) {
            if large != small {
                let x = l.p50 / s.p50;
                println!(
                    "  shm {:<7} {} p50 / {} p50: {:.0} / {:.0} ns = {x:.3} (target <= {TARGET_4K_VS_64}: {}); {} B copied into shared memory, {:.0} B referenced per round trip",
                    notify.name(),
                    plot::bytes_label(large as f64),
                    plot::bytes_label(small as f64),
                    l.p50,
                    s.p50,
                    verdict(x <= TARGET_4K_VS_64),
                    l.copied_in,
                    l.referenced_per_req
                );
            }
        }
    }
    for notify in [Notify::Spin, Notify::Default] {
        let best = all
            .iter()
            .filter(|s| {
                s.point.transport == TransportKind::Shm
                    && s.point.notify == notify
                    && s.point.payload == small
                    && s.point.in_flight > 1
            })
            .max_by(|a, b| a.rps.total_cmp(&b.rps));
        if let Some(b) = best {
            println!(
                "  shm {:<7} {} requests/s, best at {} in flight: {:.0} (target >= {:.0} M/s: {})",
                notify.name(),
                plot::bytes_label(small as f64),
                b.point.in_flight,
                b.rps,
                TARGET_RPS / 1e6,
                verdict(b.rps >= TARGET_RPS)
            );
            let tcp_best = all
                .iter()
                .filter(|s| {
                    s.point.transport == TransportKind::Tcp
                        && s.point.payload == small
                        && s.point.in_flight > 1
                })
                .max_by(|a, b| a.rps.total_cmp(&b.rps));
            if let Some(t) = tcp_best {
                let x = b.rps / t.rps;
                println!(
                    "  shm {:<7} {} best requests/s / tcp's best ({} {} in flight, {:.0}): {x:.2}x (target >= {TARGET_VS_TCP}x: {})",
                    notify.name(),
                    plot::bytes_label(small as f64),
                    t.point.notify.name(),
                    t.point.in_flight,
                    t.rps,
                    verdict(x >= TARGET_VS_TCP)
                );
            }
        }
    }
    println!("Shared memory against TCP loopback (same client and server code):");
    for &payload in &payloads {
        for (shm_n, tcp_n) in [(Notify::Spin, Notify::Spin), (Notify::Default, Notify::Poll)] {
            if let (Some(s), Some(t)) = (
                find(TransportKind::Shm, shm_n, Some(payload), 1),
                find(TransportKind::Tcp, tcp_n, Some(payload), 1),
            ) {
                println!(
                    "  {:>6}, 1 in flight: p50 shm {} {:.0} ns, tcp {} {:.0} ns: tcp/shm = {:.1}x",
                    plot::bytes_label(payload as f64),
                    shm_n.name(),
                    s.p50,
                    tcp_n.name(),
                    t.p50,
                    t.p50 / s.p50
                );
            }
        }
    }
    let mut in_flights: Vec<usize> = all
        .iter()
        .filter(|s| s.point.in_flight > 1)
        .map(|s| s.point.in_flight)
        .collect();
    in_flights.sort_unstable();
    in_flights.dedup();
    for &n in &in_flights {
        for (shm_n, tcp_n) in [(Notify::Spin, Notify::Spin), (Notify::Default, Notify::Poll)] {
            if let (Some(s), Some(t)) = (
                find(TransportKind::Shm, shm_n, Some(small), n),
                find(TransportKind::Tcp, tcp_n, Some(small), n),
            ) {
                println!(
                    "  {:>6}, {n:>3} in flight: requests/s shm {} {:.0}, tcp {} {:.0}: shm/tcp = {:.1}x",
                    plot::bytes_label(small as f64),
                    shm_n.name(),
                    s.rps,
                    tcp_n.name(),
                    t.rps,
                    s.rps / t.rps
                );
            }
        }
    }
}

fn draw(path: &Path, all: &[Summary]) -> Result<(), BoxError> {
    let mut labels: Vec<(TransportKind, Notify)> = Vec::new();
    for s in all {
        if !labels.contains(&(s.point.transport, s.point.notify)) {
            labels.push((s.point.transport, s.point.notify));
        }
    }
    let small = all
        .iter()
        .filter(|s| s.point.transport != TransportKind::Raw)
        .map(|s| s.point.payload)
        .min()
        .unwrap_or(64);
    let series =
        |keep: &dyn Fn(&Summary) -> bool, x: &dyn Fn(&Summary) -> f64, y: &dyn Fn(&Summary) -> f64| {
            labels
                .iter()
                .map(|&(t, n)| {
                    let mut points: Vec<(f64, f64)> = all
                        .iter()
                        .filter(|s| s.point.transport == t && s.point.notify == n && keep(s))
                        .map(|s| (x(s), y(s)))
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    plot::Series {
                        name: format!("{} {}", t.name(), n.name()),
                        points,
                    }
                })
                .collect::<Vec<_>>()
        };
    let by_in_flight = |s: &Summary| s.point.payload == small || s.point.transport == TransportKind::Raw;
    let one = |s: &Summary| s.point.in_flight == 1;
    let panels = vec![
        plot::Panel {
            title: format!("requests/s, {}", plot::bytes_label(small as f64)),
            x_label: "requests in flight".to_owned(),
            x_axis: plot::XAxis::Count,
            y_label: "requests/s".to_owned(),
            series: series(&by_in_flight, &|s| s.point.in_flight as f64, &|s| s.rps),
        },
        plot::Panel {
            title: format!("round trip p50, {}", plot::bytes_label(small as f64)),
            x_label: "requests in flight".to_owned(),
            x_axis: plot::XAxis::Count,
            y_label: "ns".to_owned(),
            series: series(&by_in_flight, &|s| s.point.in_flight as f64, &|s| s.p50),
        },
        plot::Panel {
            title: "round trip p50, 1 in flight".to_owned(),
            x_label: "payload (raw: its 8-byte sequence number)".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "ns".to_owned(),
            series: series(&one, &|s| s.point.payload as f64, &|s| s.p50),
        },
        plot::Panel {
            title: "round trip p99.9, 1 in flight".to_owned(),
            x_label: "payload (raw: its 8-byte sequence number)".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "ns".to_owned(),
            series: series(&one, &|s| s.point.payload as f64, &|s| s.p999),
        },
    ];
    plot::log_log_svg(
        path,
        "Ferry request/response: raw shared memory, ferry-shm, ferry-net TCP loopback",
        2,
        &panels,
    )
}
