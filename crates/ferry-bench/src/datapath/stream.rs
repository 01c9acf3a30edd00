//! One run ([`measure`]): a fresh loopback connection, its sender and its receiver thread.

use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_net::{Connection, Mode, RecvCounters, SendStats};

use super::{receiver, sender};
use crate::BoxError;
use crate::harness::{self, Budget};

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

/// The byte field `field` is filled with.
pub(super) fn fill_byte(field: usize) -> u8 {
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
    pub(super) fn between(a: &SendStats, b: &SendStats) -> SendWindow {
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
    /// Receiver counters over the window: frames, reads, bytes copied (straddling frames,
    /// split headers), frames that straddled a read buffer, frame headers split by a read.
    pub recv: RecvCounters,
    /// The congestion control error, if it could not be set.
    pub congestion_error: Option<String>,
}

impl RunResult {
    /// Messages per second.
    pub fn msgs_per_sec(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// `v` per message.
    pub fn per_msg(&self, v: u64) -> f64 {
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

/// Sets congestion control `name` on `conn`; the error, if it could not.
pub(super) fn set_congestion(conn: &Connection, name: Option<&str>) -> Option<String> {
    name.and_then(|n| conn.set_congestion(n).err().map(|e| e.to_string()))
}

/// One run: a fresh loopback connection, a sender and a receiver thread (see the module docs).
pub fn measure(spec: &RunSpec<'_>, pools: &Pools) -> Result<RunResult, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let (tx, rx) = thread::scope(|s| {
        let rx = s.spawn(|| receiver::receive(spec, &pools.recv, listener));
        let tx = s.spawn(|| sender::send(spec, &pools.send, addr));
        (tx.join(), rx.join())
    });
    // The sender's error is the cause when both fail (the receiver then sees a closed stream).
    let (tx, rx) = (harness::joined("sender", tx)?, harness::joined("receiver", rx)?);
    if tx.messages != rx.span.served {
        return Err(format!("sent {} messages, received {}", tx.messages, rx.span.served).into());
    }
    Ok(RunResult {
        effective_mode: tx.effective_mode,
        messages: rx.span.served,
        elapsed: rx.elapsed,
        sender_cpu: tx.cpu,
        receiver_cpu: rx.span.cpu,
        send: tx.window,
        send_total: tx.total,
        recv: rx.counters,
        congestion_error: tx.congestion_error,
    })
}
