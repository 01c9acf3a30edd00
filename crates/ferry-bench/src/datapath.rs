//! `ferry bench datapath`: one-way streams of Ferry messages over TCP loopback, in every send
//! mode of `ferry-net`, swept over message size and number of fields.
//!
//! One *run* ([`measure`]) is one connection: a sender thread and a receiver thread, pinned to
//! different CPUs, congestion control fixed on both ends. The sender builds a
//! [`Record`] per message whose fields are pool-resident values (borrowed slices of
//! [`SharedBuf`]s, so the transport may reference them), queues it with
//! [`Connection::send`] as fast as it can (the connection batches), then flushes and waits
//! until the kernel has released every zero-copy buffer. The receiver validates each frame in
//! place ([`Record::decode_shared`]) and touches every field (its length and first byte), with
//! no copy. A warm-up precedes a `MARK` frame; the measured window runs from the mark to an
//! `END` frame, on both sides:
//!
//! ```text
//!  sender (CPU a)   warm-up msgs │ MARK │ measured msgs ............. │ END │ flush, wait_idle
//!  receiver (CPU b) warm-up msgs │ MARK ── t0, cpu0 ──── decode+touch ── END ── t1, cpu1
//! ```
//!
//! Throughput is measured messages / (t1 - t0) at the receiver. Sender CPU is the sender
//! thread's user+sys time (`getrusage(RUSAGE_THREAD)`) from queuing the mark to the end of
//! `wait_idle`; receiver CPU the receiver thread's over its window. Counters are the
//! connection's own ([`SendStats`], [`RecvCounters`]), as differences over the window.
//!
//! The messages' [`Context`] uses a zero-copy threshold of 0 by default, so *every* field is a
//! zero-copy value and the send mode alone decides whether it is copied in user space (copy,
//! and auto below its gather rule) or posted as a gather entry (gather, zerocopy, uring): the
//! sweep then shows the cost of a gather entry against the cost of a copy at every field size,
//! which is what the auto rule needs. (With the default 512 B threshold the message itself
//! copies small fields into its header segment, and every mode would look alike below it.)

use ferry::Message as _;
use std::hint::black_box;
use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry::sample::Record;
use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_net::{Config, Connection, Meta, Mode, Payload, RecvCounters, SendStats};
use serde_json::{Value, json};

use crate::harness::cli::Common;
use crate::harness::progress::Progress;
use crate::harness::{self, median, report, thread_cpu_time};
use crate::plot;

pub use crate::BoxError;
pub use crate::harness::Budget;

/// Frame kinds of the benchmark stream.
const DATA: u16 = 1;
const MARK: u16 = 2;
const END: u16 = 3;

/// Message sizes and field counts of the full sweep and of `--quick`.
const SIZES: [usize; 7] = [16, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10];
const FIELDS: [usize; 5] = [1, 2, 4, 8, 16];
const QUICK_SIZES: [usize; 4] = [64, 1 << 10, 4 << 10, 64 << 10];
const QUICK_FIELDS: [usize; 2] = [1, 8];
/// The configuration the issue's batching target names.
const TARGET_SIZE: usize = 4 << 10;
const TARGET_FIELDS: usize = 8;

/// Options of `ferry bench datapath`. `--quick` sweeps sizes 64 B, 1 KiB, 4 KiB, 64 KiB x 1
/// and 8 fields, unbatched only at 4 KiB x 8 fields, 80 ms per repetition: well under 30 s.
/// `--plot` draws messages/s and sender CPU per message against message size, per mode, at
/// `--plot-fields` fields, batched and unbatched.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Field count the plot shows.
    #[arg(long, default_value_t = TARGET_FIELDS)]
    plot_fields: usize,
    /// Total message sizes in bytes, comma-separated (default: 16 B .. 64 KiB, or the quick set).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Field counts, comma-separated (default: 1,2,4,8,16, or 1,8 with --quick).
    #[arg(long, value_delimiter = ',')]
    fields: Vec<usize>,
    /// Send modes, comma-separated (default: copy,gather,zerocopy,uring,auto).
    #[arg(long, value_delimiter = ',')]
    modes: Vec<Mode>,
    /// Sizes also run unbatched (`batch_frames = 1`), at `--unbatched-fields` fields
    /// (default: every size, or 4096 with --quick).
    #[arg(long, value_delimiter = ',')]
    unbatched_sizes: Vec<usize>,
    /// Field count of the unbatched runs.
    #[arg(long, default_value_t = TARGET_FIELDS)]
    unbatched_fields: usize,
    /// Repetitions per configuration; every reported number is the median over them.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Zero-copy threshold of the messages' context, in bytes. 0 makes every pool-resident
    /// field a zero-copy value, so that the send mode decides its fate.
    #[arg(long, default_value_t = 0)]
    threshold: usize,
    /// CPU for the sender thread.
    #[arg(long, default_value_t = 0)]
    sender_cpu: usize,
    /// CPU for the receiver thread (the same as the sender's when only one is available).
    #[arg(long, default_value_t = 1)]
    receiver_cpu: usize,
    /// TCP congestion control set on both ends.
    #[arg(long, default_value = "cubic")]
    congestion: String,
}

/// The two pools of a benchmark: the sender's (its values and staging buffers) and the
/// receiver's (read buffers), as two processes would have.
#[derive(Debug, Clone)]
pub struct Pools {
    /// Sender side.
    pub send: Pool,
    /// Receiver side.
    pub recv: Pool,
}

impl Pools {
    /// Two default pools (8 MiB regions, huge pages and `mlock` best effort).
    pub fn new() -> Result<Pools, BoxError> {
        Ok(Pools {
            send: Pool::new(PoolConfig::default())?,
            recv: Pool::new(PoolConfig::default())?,
        })
    }

    /// `count` sender-pool values adding up to `size` bytes; field `i` is filled with `i + 1`.
    pub fn values(&self, size: usize, count: usize) -> Result<Vec<SharedBuf>, BoxError> {
        harness::split_evenly(size, count)
            .into_iter()
            .enumerate()
            .map(|(i, len)| Ok(self.send.copy_from(&vec![fill_byte(i); len])?))
            .collect()
    }
}

/// How many consecutive fields lie back to back in memory (field `i + 1` starting where field
/// `i` ends), out of `values.len() - 1`. The kernel merges such neighbours into one page
/// fragment when it references them (zerocopy, uring), so this changes their cost; the pool's
/// free lists decide it, from what earlier configurations allocated and freed.
pub fn adjacent_fields(pool: &Pool, values: &[SharedBuf]) -> usize {
    values
        .windows(2)
        .filter(|w| match (pool.offset_of(&w[0]), pool.offset_of(&w[1])) {
            (Some(a), Some(b)) => a + w[0].len() == b,
            _ => false,
        })
        .count()
}

fn fill_byte(field: usize) -> u8 {
    (field % 255) as u8 + 1
}

/// One run's settings.
#[derive(Debug, Clone)]
pub struct RunSpec<'a> {
    /// The send mode asked for.
    pub mode: Mode,
    /// Frames per batch (1: every message is its own send call).
    pub batch_frames: usize,
    /// The message's fields, in the sender's pool.
    pub values: &'a [SharedBuf],
    /// Zero-copy threshold of the messages' context.
    pub threshold: usize,
    /// Measured part.
    pub budget: Budget,
    /// CPUs to pin the sender and the receiver to (`None`: not pinned).
    pub cpus: (Option<usize>, Option<usize>),
    /// Congestion control for both ends (`None`: the system default).
    pub congestion: Option<&'a str>,
}

/// Sender counters over the measured window.
#[derive(Debug, Clone, Copy, Default)]
pub struct SendWindow {
    /// Bytes written into staging buffers by the CPU.
    pub staged_bytes: u64,
    /// Bytes of zero-copy values copied in user space.
    pub values_copied: u64,
    /// Bytes of zero-copy values posted as gather entries.
    pub values_referenced: u64,
    /// Send calls (sendmsg or io_uring submissions).
    pub send_calls: u64,
    /// Batches written.
    pub batches: u64,
}

impl SendWindow {
    fn between(a: &SendStats, b: &SendStats) -> SendWindow {
        SendWindow {
            staged_bytes: b.queue.staged_bytes - a.queue.staged_bytes,
            values_copied: b.queue.zero_copy_values_copied - a.queue.zero_copy_values_copied,
            values_referenced: b.queue.zero_copy_values_referenced - a.queue.zero_copy_values_referenced,
            send_calls: b.send_calls - a.send_calls,
            batches: b.batches - a.batches,
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The mode the connection used (a fallback if the kernel lacks a feature).
    pub effective_mode: Mode,
    /// Data messages in the measured window.
    pub messages: u64,
    /// The receiver's window, mark to end.
    pub elapsed: Duration,
    /// Sender thread CPU over its window.
    pub sender_cpu: Duration,
    /// Receiver thread CPU over its window.
    pub receiver_cpu: Duration,
    /// Sender counters over the window.
    pub send: SendWindow,
    /// Sender counters over the whole connection (warm-up included): zero-copy completions.
    pub send_total: SendStats,
    /// Receiver counters over the window.
    pub recv_frames: u64,
    /// Reads over the window.
    pub recv_reads: u64,
    /// Bytes the receiver copied over the window (straddling frames, split headers).
    pub recv_copied: u64,
    /// Frames that straddled a read buffer over the window (their already-read payload copied).
    pub recv_straddled: u64,
    /// Frame headers split by the end of a read over the window (their first bytes carried).
    pub recv_split_headers: u64,
    /// The congestion control error, if it could not be set.
    pub congestion_error: Option<String>,
}

impl RunResult {
    /// Messages per second.
    pub fn msgs_per_sec(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn per_msg(&self, v: u64) -> f64 {
        v as f64 / self.messages.max(1) as f64
    }

    /// Sender CPU per message, µs.
    pub fn sender_us_per_msg(&self) -> f64 {
        self.sender_cpu.as_secs_f64() * 1e6 / self.messages.max(1) as f64
    }

    /// Receiver CPU per message, µs.
    pub fn receiver_us_per_msg(&self) -> f64 {
        self.receiver_cpu.as_secs_f64() * 1e6 / self.messages.max(1) as f64
    }

    /// Fraction of zero-copy send calls the kernel reported as copied; `None` without any.
    pub fn kernel_copied_rate(&self) -> Option<f64> {
        let c = self.send_total.completions;
        (c.completed > 0).then(|| c.copied as f64 / c.completed as f64)
    }
}

fn set_congestion(conn: &Connection, name: Option<&str>) -> Option<String> {
    name.and_then(|n| conn.set_congestion(n).err().map(|e| e.to_string()))
}

fn pin(cpu: Option<usize>) -> Result<(), BoxError> {
    match cpu {
        Some(cpu) => Ok(harness::pin_current_thread(cpu)?),
        None => Ok(()),
    }
}

/// Sends data messages for `budget`; returns how many.
fn send_messages(
    conn: &mut Connection,
    ctx: &Context,
    values: &[SharedBuf],
    budget: Budget,
    first_id: u64,
) -> Result<u64, BoxError> {
    let mut sent = 0u64;
    let start = Instant::now();
    loop {
        match budget {
            Budget::Count(n) if sent >= n => break,
            Budget::Time(d) if sent % 16 == 0 && start.elapsed() >= d => break,
            _ => {}
        }
        let mut rec = Record::new(ctx);
        rec.init_fields(values.len());
        for v in values {
            rec.append_field(&v[..]);
        }
        conn.send(Meta::new(DATA, first_id + sent), &rec)?;
        sent += 1;
    }
    Ok(sent)
}

struct SenderSide {
    effective_mode: Mode,
    messages: u64,
    cpu: Duration,
    window: SendWindow,
    total: SendStats,
    congestion_error: Option<String>,
}

fn sender(spec: &RunSpec<'_>, pool: &Pool, addr: SocketAddr) -> Result<SenderSide, BoxError> {
    pin(spec.cpus.0)?;
    let config = Config {
        mode: spec.mode,
        batch_frames: spec.batch_frames,
        ..Config::default()
    };
    let mut conn = Connection::connect(addr, pool, &config)?;
    let congestion_error = set_congestion(&conn, spec.congestion);
    let ctx = Context::new(pool.clone()).with_threshold(spec.threshold);
    let warm = send_messages(&mut conn, &ctx, spec.values, spec.budget.warmup(), 0)?;
    conn.send_payload(Meta::new(MARK, 0), Payload::Bytes(&[]))?;
    let (cpu0, stats0) = (thread_cpu_time(), conn.stats().send);
    let messages = send_messages(&mut conn, &ctx, spec.values, spec.budget, warm)?;
    conn.send_payload(Meta::new(END, 0), Payload::Bytes(&[]))?;
    conn.sender().wait_idle()?;
    let cpu1 = thread_cpu_time();
    let stats1 = conn.stats().send;
    Ok(SenderSide {
        effective_mode: conn.mode(),
        messages,
        cpu: cpu1.saturating_sub(cpu0),
        window: SendWindow::between(&stats0, &stats1),
        total: stats1,
        congestion_error,
    })
}

/// Validates a frame in place and reads every field's length and first byte.
fn touch(payload: &SharedBuf, fields: usize) -> Result<u64, BoxError> {
    let view = Record::decode_shared(payload)?;
    let list = view.fields();
    if list.len() != fields {
        return Err(format!("received {} fields, sent {fields}", list.len()).into());
    }
    let mut acc = 0u64;
    for (i, f) in list.iter().enumerate() {
        match f.first() {
            Some(&b) if b == fill_byte(i) => acc += f.len() as u64 + u64::from(b),
            _ => return Err(format!("field {i} arrived with wrong contents").into()),
        }
    }
    Ok(acc)
}

struct ReceiverSide {
    messages: u64,
    elapsed: Duration,
    cpu: Duration,
    counters: (RecvCounters, RecvCounters),
}

fn receiver(spec: &RunSpec<'_>, pool: &Pool, listener: TcpListener) -> Result<ReceiverSide, BoxError> {
    pin(spec.cpus.1)?;
    let stream = harness::accept(&listener)?;
    let conn = Connection::new(stream, pool, &Config::default())?;
    // An error here is reported by the sender side, which sets the same option.
    let _ = set_congestion(&conn, spec.congestion);
    let (_tx, mut rx) = conn.split();
    let fields = spec.values.len();
    let mut acc = 0u64;
    loop {
        let frame = rx.recv()?;
        match frame.meta().kind {
            DATA => acc += touch(frame.payload(), fields)?,
            MARK => break,
            k => return Err(format!("unexpected frame kind {k} before the mark").into()),
        }
    }
    let (t0, cpu0, c0) = (Instant::now(), thread_cpu_time(), rx.stats());
    let mut messages = 0u64;
    loop {
        let frame = rx.recv()?;
        match frame.meta().kind {
            DATA => {
                acc += touch(frame.payload(), fields)?;
                messages += 1;
            }
            END => break,
            k => return Err(format!("unexpected frame kind {k} after the mark").into()),
        }
    }
    let (t1, cpu1, c1) = (Instant::now(), thread_cpu_time(), rx.stats());
    black_box(acc);
    Ok(ReceiverSide {
        messages,
        elapsed: t1 - t0,
        cpu: cpu1.saturating_sub(cpu0),
        counters: (c0, c1),
    })
}

fn joined<T>(r: thread::Result<Result<T, BoxError>>) -> Result<T, BoxError> {
    r.unwrap_or_else(|_| Err("thread panicked".into()))
}

/// One run: a fresh loopback connection, a sender and a receiver thread (see the module docs).
pub fn measure(spec: &RunSpec<'_>, pools: &Pools) -> Result<RunResult, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let (tx, rx) = thread::scope(|s| {
        let rx = s.spawn(|| receiver(spec, &pools.recv, listener));
        let tx = s.spawn(|| sender(spec, &pools.send, addr));
        (joined(tx.join()), joined(rx.join()))
    });
    // The sender's error is the cause when both fail (the receiver then sees a closed stream).
    let (tx, rx) = match (tx, rx) {
        (Ok(tx), Ok(rx)) => (tx, rx),
        (Err(e), _) => return Err(format!("sender: {e}").into()),
        (_, Err(e)) => return Err(format!("receiver: {e}").into()),
    };
    if tx.messages != rx.messages {
        return Err(format!("sent {} messages, received {}", tx.messages, rx.messages).into());
    }
    let (c0, c1) = rx.counters;
    Ok(RunResult {
        effective_mode: tx.effective_mode,
        messages: rx.messages,
        elapsed: rx.elapsed,
        sender_cpu: tx.cpu,
        receiver_cpu: rx.cpu,
        send: tx.window,
        send_total: tx.total,
        recv_frames: c1.frames - c0.frames,
        recv_reads: c1.reads - c0.reads,
        recv_copied: c1.copied - c0.copied,
        recv_straddled: c1.straddled - c0.straddled,
        recv_split_headers: c1.split_headers - c0.split_headers,
        congestion_error: tx.congestion_error,
    })
}

/// One configuration of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    mode: Mode,
    size: usize,
    fields: usize,
    batched: bool,
}

/// A configuration's medians over its repetitions.
#[derive(Debug, Clone)]
struct Summary {
    point: Point,
    effective_mode: Mode,
    msgs_per_sec: f64,
    sender_us: f64,
    receiver_us: f64,
    copied_per_msg: f64,
    staged_per_msg: f64,
    calls_per_msg: f64,
    kernel_copied_rate: Option<f64>,
    record: Value,
}

fn summarize(point: Point, batch_frames: usize, runs: &[RunResult]) -> Summary {
    let med = |f: &dyn Fn(&RunResult) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    let msgs_per_sec = med(&|r| r.msgs_per_sec());
    let sender_us = med(&|r| r.sender_us_per_msg());
    let receiver_us = med(&|r| r.receiver_us_per_msg());
    let copied_per_msg = med(&|r| r.per_msg(r.send.values_copied));
    let staged_per_msg = med(&|r| r.per_msg(r.send.staged_bytes));
    let referenced_per_msg = med(&|r| r.per_msg(r.send.values_referenced));
    let calls_per_msg = med(&|r| r.per_msg(r.send.send_calls));
    let batches_per_msg = med(&|r| r.per_msg(r.send.batches));
    let reads_per_msg = med(&|r| r.per_msg(r.recv_reads));
    let sum = |f: &dyn Fn(&RunResult) -> u64| runs.iter().map(f).sum::<u64>();
    let (completed, copied) = (
        sum(&|r| r.send_total.completions.completed),
        sum(&|r| r.send_total.completions.copied),
    );
    let kernel_copied_rate = (completed > 0).then(|| copied as f64 / completed as f64);
    let effective_mode = runs.first().map_or(point.mode, |r| r.effective_mode);
    let round = harness::round;
    let record = json!({
        "mode": point.mode.name(),
        "effective_mode": effective_mode.name(),
        "size": point.size,
        "fields": point.fields,
        "field_size": point.size / point.fields.max(1),
        "batched": point.batched,
        "batch_frames": batch_frames,
        "reps": runs.len(),
        "messages": med(&|r| r.messages as f64) as u64,
        "msgs_per_sec": round(msgs_per_sec, 0),
        "msgs_per_sec_reps": runs.iter().map(|r| round(r.msgs_per_sec(), 0)).collect::<Vec<_>>(),
        "payload_mib_per_sec": round(msgs_per_sec * point.size as f64 / f64::from(1 << 20), 1),
        "sender_cpu_us_per_msg": round(sender_us, 4),
        "receiver_cpu_us_per_msg": round(receiver_us, 4),
        "copied_bytes_per_msg": round(copied_per_msg, 2),
        "referenced_bytes_per_msg": round(referenced_per_msg, 2),
        "staged_bytes_per_msg": round(staged_per_msg, 2),
        "send_calls_per_msg": round(calls_per_msg, 5),
        "batches_per_msg": round(batches_per_msg, 5),
        "kernel_copied_rate": kernel_copied_rate.map(|r| round(r, 4)),
        "zc_calls_completed": completed,
        "zc_calls_copied": copied,
        "enobufs": sum(&|r| r.send_total.enobufs),
        "recv_frames": sum(&|r| r.recv_frames),
        "recv_reads_per_msg": round(reads_per_msg, 5),
        "recv_straddled_frames": sum(&|r| r.recv_straddled),
        "recv_split_headers": sum(&|r| r.recv_split_headers),
        "recv_copied_bytes": sum(&|r| r.recv_copied),
    });
    Summary {
        point,
        effective_mode,
        msgs_per_sec,
        sender_us,
        receiver_us,
        copied_per_msg,
        staged_per_msg,
        calls_per_msg,
        kernel_copied_rate,
        record,
    }
}

fn table_header() {
    println!(
        "{:<9} {:>8} {:>6} {:>5} {:>11} {:>6} {:>9} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8}",
        "mode",
        "size",
        "fields",
        "batch",
        "msgs/s",
        "xcopy",
        "snd us/m",
        "xcopy",
        "rcv us/m",
        "copied B",
        "staged B",
        "calls/m",
        "kcopied"
    );
}

fn table_row(s: &Summary, copy: Option<&Summary>) {
    let ratio = |a: f64, b: Option<f64>| b.map_or("-".to_owned(), |b| format!("{:.2}", a / b));
    let mode = if s.effective_mode == s.point.mode {
        s.point.mode.name().to_owned()
    } else {
        format!("{}>{}", s.point.mode, s.effective_mode)
    };
    println!(
        "{:<9} {:>8} {:>6} {:>5} {:>11.0} {:>6} {:>9.3} {:>6} {:>9.3} {:>9.1} {:>9.1} {:>8.4} {:>8}",
        mode,
        plot::bytes_label(s.point.size as f64),
        s.point.fields,
        if s.point.batched { "yes" } else { "no" },
        s.msgs_per_sec,
        ratio(s.msgs_per_sec, copy.map(|c| c.msgs_per_sec)),
        s.sender_us,
        ratio(s.sender_us, copy.map(|c| c.sender_us)),
        s.receiver_us,
        s.copied_per_msg,
        s.staged_per_msg,
        s.calls_per_msg,
        s.kernel_copied_rate
            .map_or("null".to_owned(), |r| format!("{:.0}%", r * 100.0)),
    );
}

/// The sweep's groups: configurations sharing size, fields and batching, run side by side.
fn plan(args: &Args) -> (Vec<Mode>, Vec<(usize, usize, bool)>) {
    let or = |given: &[usize], quick: &[usize], full: &[usize]| {
        if !given.is_empty() {
            given.to_vec()
        } else if args.common.quick {
            quick.to_vec()
        } else {
            full.to_vec()
        }
    };
    let sizes = or(&args.sizes, &QUICK_SIZES, &SIZES);
    let fields = or(&args.fields, &QUICK_FIELDS, &FIELDS);
    let unbatched = or(&args.unbatched_sizes, &[TARGET_SIZE], &sizes);
    let modes = if args.modes.is_empty() {
        Mode::ALL.to_vec()
    } else {
        args.modes.clone()
    };
    let mut groups = Vec::new();
    for &size in &sizes {
        for &f in &fields {
            groups.push((size, f, true));
        }
    }
    for &size in &unbatched {
        groups.push((size, args.unbatched_fields, false));
    }
    (modes, groups)
}

/// Runs the sweep, prints the table, writes the JSON (and the plot).
pub fn run(args: &Args) -> Result<(), BoxError> {
    if let Some(from) = &args.common.from {
        return redraw(args, from);
    }
    let json_path = args.common.json_path()?;
    let budget = args.common.budget(80, 250);
    let reps = args.reps.max(1);
    let cpus = harness::cpus();
    let receiver_cpu = if cpus > 1 {
        args.receiver_cpu
    } else {
        args.sender_cpu
    };
    let (modes, groups) = plan(args);
    let pools = Pools::new()?;
    let batch_frames_batched = Config::default().batch_frames;

    println!(
        "ferry bench datapath: one-way TCP loopback, sender on CPU {}, receiver on CPU {receiver_cpu}, {} congestion control, {reps} repetition(s) of {} per configuration (median shown), zero-copy threshold {} B.",
        args.sender_cpu,
        args.congestion,
        budget.describe("messages"),
        args.threshold,
    );
    println!(
        "xcopy: ratio to copy mode in the same group; copied B: bytes of field values copied in user space per message; staged B: all bytes the CPU wrote to staging per message; kcopied: share of zero-copy sends the kernel reported as copied.\n"
    );
    table_header();

    let started = Instant::now();
    let mut summaries: Vec<Summary> = Vec::new();
    let mut congestion_error = None;
    let progress = Progress::new((groups.len() * reps * modes.len()) as u64, "datapath");
    for &(size, fields, batched) in &groups {
        let fields = fields.clamp(1, size.max(1));
        let values = pools.values(size, fields)?;
        let adjacent = adjacent_fields(&pools.send, &values);
        let batch_frames = if batched { batch_frames_batched } else { 1 };
        let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); modes.len()];
        // Repetitions interleave the modes, so that a noisy moment hits every mode alike.
        for _ in 0..reps {
            for (i, &mode) in modes.iter().enumerate() {
                let spec = RunSpec {
                    mode,
                    batch_frames,
                    values: &values,
                    threshold: args.threshold,
                    budget,
                    cpus: (Some(args.sender_cpu), Some(receiver_cpu)),
                    congestion: Some(&args.congestion),
                };
                let what = format!("{mode}, {size} B x {fields} fields, batched {batched}");
                progress.start(what.clone());
                let r = measure(&spec, &pools).map_err(|e| format!("{what}: {e}"))?;
                progress.done();
                if let Some(e) = &r.congestion_error {
                    congestion_error.get_or_insert_with(|| e.clone());
                }
                runs[i].push(r);
            }
        }
        let group: Vec<Summary> = modes
            .iter()
            .zip(&runs)
            .map(|(&mode, runs)| {
                let point = Point {
                    mode,
                    size,
                    fields,
                    batched,
                };
                let mut s = summarize(point, batch_frames, runs);
                s.record["adjacent_fields"] = json!(adjacent);
                s
            })
            .collect();
        let copy = group.iter().find(|s| s.point.mode == Mode::Copy).cloned();
        progress.suspend(|| {
            for s in &group {
                table_row(s, copy.as_ref());
            }
        });
        summaries.extend(group);
    }
    progress.finish();
    let took = started.elapsed();
    if let Some(e) = &congestion_error {
        eprintln!(
            "warning: could not set {} congestion control: {e}",
            args.congestion
        );
    }

    println!();
    print_findings(&summaries);

    let settings = json!({
        "transport": "TCP over loopback (127.0.0.1), one connection per repetition, one-way",
        "budget": budget.to_json("messages"),
        "warmup": "a tenth of the budget, before the measured window",
        "reps": reps,
        "statistic": "median over repetitions, per metric; counts (zc_*, recv_*) summed",
        "threshold": args.threshold,
        "batch_frames_batched": batch_frames_batched,
        "batch_frames_unbatched": 1,
        "sender_cpu": args.sender_cpu,
        "receiver_cpu": receiver_cpu,
        "congestion": args.congestion,
        "congestion_error": congestion_error,
        "receiver": "Record::decode_shared on each frame, reads every field's length and first byte",
        "wall_seconds": (took.as_secs_f64() * 10.0).round() / 10.0,
    });
    let records: Vec<Value> = summaries.iter().map(|s| s.record.clone()).collect();
    report::save(json_path, "datapath", settings, &records, Value::Null, took)?;
    if let Some(path) = &args.common.plot {
        draw(path, &summaries, &modes, args.plot_fields)?;
        println!("plot in {}", path.display());
    }
    Ok(())
}

/// A configuration's summary back from its JSON record.
fn from_record(r: &Value) -> Option<Summary> {
    let f = |k: &str| r[k].as_f64();
    Some(Summary {
        point: Point {
            mode: r["mode"].as_str()?.parse().ok()?,
            size: r["size"].as_u64()? as usize,
            fields: r["fields"].as_u64()? as usize,
            batched: r["batched"].as_bool()?,
        },
        effective_mode: r["effective_mode"].as_str()?.parse().ok()?,
        msgs_per_sec: f("msgs_per_sec")?,
        sender_us: f("sender_cpu_us_per_msg")?,
        receiver_us: f("receiver_cpu_us_per_msg")?,
        copied_per_msg: f("copied_bytes_per_msg")?,
        staged_per_msg: f("staged_bytes_per_msg")?,
        calls_per_msg: f("send_calls_per_msg")?,
        kernel_copied_rate: f("kernel_copied_rate"),
        record: r.clone(),
    })
}

/// `--from`: the table, findings and plot of an earlier run.
fn redraw(args: &Args, from: &std::path::Path) -> Result<(), BoxError> {
    let all = report::load(from, from_record)?;
    table_header();
    for s in &all {
        let copy = all.iter().find(|c| {
            c.point
                == Point {
                    mode: Mode::Copy,
                    ..s.point
                }
        });
        table_row(s, copy);
    }
    println!();
    print_findings(&all);
    if let Some(path) = &args.common.plot {
        let mut modes: Vec<Mode> = Vec::new();
        for s in &all {
            if !modes.contains(&s.point.mode) {
                modes.push(s.point.mode);
            }
        }
        draw(path, &all, &modes, args.plot_fields)?;
        println!("plot in {}", path.display());
    }
    Ok(())
}

/// The issue's targets and the auto rule's evidence, from this run's summaries.
fn print_findings(all: &[Summary]) {
    let find = |mode: Mode, size: usize, fields: usize, batched: bool| {
        all.iter().find(|s| {
            s.point
                == Point {
                    mode,
                    size,
                    fields,
                    batched,
                }
        })
    };
    println!(
        "Batching (target: batched >= 2x unbatched, {} x {TARGET_FIELDS} fields):",
        plot::bytes_label(TARGET_SIZE as f64)
    );
    for mode in Mode::ALL {
        if let (Some(b), Some(u)) = (
            find(mode, TARGET_SIZE, TARGET_FIELDS, true),
            find(mode, TARGET_SIZE, TARGET_FIELDS, false),
        ) {
            let x = b.msgs_per_sec / u.msgs_per_sec;
            println!(
                "  {:<9} batched {:>9.0} msgs/s, unbatched {:>9.0} msgs/s: {x:.2}x ({})",
                mode.name(),
                b.msgs_per_sec,
                u.msgs_per_sec,
                if x >= 2.0 { "met" } else { "missed" }
            );
        }
    }
    println!("Gather vs copy from 4 KiB up, batched (target: >= 1.0x, no user-space copy of values):");
    let mut worst: Option<(f64, Point)> = None;
    for g in all
        .iter()
        .filter(|s| s.point.mode == Mode::Gather && s.point.batched && s.point.size >= 4096)
    {
        if let Some(c) = find(Mode::Copy, g.point.size, g.point.fields, true) {
            let x = g.msgs_per_sec / c.msgs_per_sec;
            println!(
                "  {:>7} x {:>2} fields: {x:.2}x msgs/s, sender CPU {:.2}x, gather copied {} B/msg",
                plot::bytes_label(g.point.size as f64),
                g.point.fields,
                g.sender_us / c.sender_us,
                g.copied_per_msg
            );
            if worst.is_none_or(|(w, _)| x < w) {
                worst = Some((x, g.point));
            }
        }
    }
    if let Some((x, p)) = worst {
        println!(
            "  lowest: {x:.2}x at {} x {} fields ({})",
            plot::bytes_label(p.size as f64),
            p.fields,
            if x >= 1.0 {
                "met everywhere"
            } else {
                "missed somewhere"
            }
        );
    }
    let straddled: u64 = all
        .iter()
        .map(|s| s.record["recv_straddled_frames"].as_u64().unwrap_or(0))
        .sum();
    let copied: u64 = all
        .iter()
        .map(|s| s.record["recv_copied_bytes"].as_u64().unwrap_or(0))
        .sum();
    let frames: u64 = all
        .iter()
        .map(|s| s.record["recv_frames"].as_u64().unwrap_or(0))
        .sum();
    let copied_without_straddle: u64 = all
        .iter()
        .filter(|s| s.record["recv_straddled_frames"].as_u64() == Some(0))
        .map(|s| s.record["recv_copied_bytes"].as_u64().unwrap_or(0))
        .sum();
    println!(
        "Receive side: {frames} frames, {straddled} straddled a read buffer, {copied} B copied in user space ({copied_without_straddle} B in configurations where no frame straddled)."
    );
    println!(
        "Gather / copy by field size, batched (median over sizes and field counts; > 1 favours gather):"
    );
    let mut by_field: Vec<(usize, Vec<f64>, Vec<f64>)> = Vec::new();
    for g in all
        .iter()
        .filter(|s| s.point.mode == Mode::Gather && s.point.batched)
    {
        if let Some(c) = find(Mode::Copy, g.point.size, g.point.fields, true) {
            let fs = g.point.size / g.point.fields;
            let at = match by_field.iter().position(|(f, _, _)| *f == fs) {
                Some(i) => i,
                None => {
                    by_field.push((fs, Vec::new(), Vec::new()));
                    by_field.len() - 1
                }
            };
            by_field[at].1.push(g.msgs_per_sec / c.msgs_per_sec);
            by_field[at].2.push(c.sender_us / g.sender_us);
        }
    }
    by_field.sort_by_key(|(f, _, _)| *f);
    for (fs, thr, cpu) in &by_field {
        println!(
            "  field {:>7}: throughput {:.2}x, sender CPU saving {:.2}x ({} configuration(s))",
            plot::bytes_label(*fs as f64),
            median(thr).unwrap_or(0.0),
            median(cpu).unwrap_or(0.0),
            thr.len()
        );
    }
}

fn draw(path: &std::path::Path, all: &[Summary], modes: &[Mode], fields: usize) -> Result<(), BoxError> {
    let series = |batched: bool, y: &dyn Fn(&Summary) -> f64| -> Vec<plot::Series> {
        modes
            .iter()
            .map(|&mode| plot::Series {
                name: mode.name().to_owned(),
                points: all
                    .iter()
                    .filter(|s| {
                        s.point.mode == mode && s.point.fields == fields && s.point.batched == batched
                    })
                    .map(|s| (s.point.size as f64, y(s)))
                    .collect(),
            })
            .collect()
    };
    let panel = |title: String, y_label: &str, batched: bool, y: &dyn Fn(&Summary) -> f64| plot::Panel {
        title,
        x_label: "message size".to_owned(),
        x_axis: plot::XAxis::Bytes,
        y_label: y_label.to_owned(),
        series: series(batched, y),
    };
    let panels = [
        panel(
            format!("messages/s, batched, {fields} fields"),
            "messages/s",
            true,
            &|s| s.msgs_per_sec,
        ),
        panel(
            format!("sender CPU per message, batched, {fields} fields"),
            "us/msg",
            true,
            &|s| s.sender_us,
        ),
        panel(
            format!("messages/s, unbatched, {fields} fields"),
            "messages/s",
            false,
            &|s| s.msgs_per_sec,
        ),
        panel(
            format!("sender CPU per message, unbatched, {fields} fields"),
            "us/msg",
            false,
            &|s| s.sender_us,
        ),
    ];
    let panels: Vec<plot::Panel> = panels
        .into_iter()
        .filter(|p| p.series.iter().any(|s| !s.points.is_empty()))
        .collect();
    plot::log_log_svg(
        path,
        "ferry-net over TCP loopback: one-way stream, per send mode",
        2,
        &panels,
    )
}
