//! The raw ping-pong: two threads spinning on two shared cache lines, no protocol at all.
//! What two cores can do; nothing is faster.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::endpoint::Counters;
use super::record::RunResult;
use crate::BoxError;
use crate::harness::{self, Budget, Histogram, cpu::thread_cpu_time, joined};

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

    /// Tells the peer this side gave up.
    fn stop(&self) {
        self.0[0].0.store(STOP, Ordering::Release);
    }
}

/// The server: echoes every sequence number until told to stop; its CPU time and echoes.
fn echo(ping: &Lane, pong: &Lane, cpu: usize) -> Result<(Duration, u64), BoxError> {
    harness::pin_current_thread(cpu)?;
    let cpu0 = thread_cpu_time();
    let (mut last, mut echoes) = (0u64, 0u64);
    loop {
        let v = spin_until_changed(&ping.0[0], last);
        if v == STOP {
            return Ok((thread_cpu_time().saturating_sub(cpu0), echoes));
        }
        ping.follow(v)?;
        pong.post(v);
        last = v;
        echoes += 1;
    }
}

/// The client: a warm-up, then the measured round trips, each timed with one clock reading.
fn ping(
    ping: &Lane,
    pong: &Lane,
    budget: Budget,
    cpu: usize,
) -> Result<(u64, Duration, Duration, Histogram), BoxError> {
    let mut seq = 0u64;
    let mut phase = |budget: Budget, hist: &mut Histogram| -> Result<u64, BoxError> {
        let start = Instant::now();
        let (mut last, mut n) = (start, 0u64);
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
    harness::pin_current_thread(cpu)?;
    phase(budget.warmup(), &mut Histogram::default())?;
    let mut hist = Histogram::default();
    let (t0, cpu0) = (Instant::now(), thread_cpu_time());
    let n = phase(budget, &mut hist)?;
    Ok((n, t0.elapsed(), thread_cpu_time().saturating_sub(cpu0), hist))
}

/// The raw ping-pong between `cpus` (client, server), a warm-up of a tenth of `budget` first:
/// the floor of any round trip through memory, which other benchmarks measure in their own
/// runs too (`ferry bench rpc`). With `depth` > 0 each direction also carries that many
/// chained lines (a diagnostic: the cost of a dependent cross-core cache miss). The server's
/// CPU is over its whole life (warm-up included), scaled to the measured requests: it spins
/// all the time either way.
pub fn run_raw(budget: Budget, cpus: (usize, usize), depth: usize) -> Result<RunResult, BoxError> {
    let (ping_lane, pong_lane) = (Lane::new(depth), Lane::new(depth));
    let (client, server) = thread::scope(|s| {
        let server = s.spawn(|| {
            let result = echo(&ping_lane, &pong_lane, cpus.1);
            if result.is_err() {
                pong_lane.stop();
            }
            result
        });
        let client = s.spawn(|| {
            let result = ping(&ping_lane, &pong_lane, budget, cpus.0);
            ping_lane.stop();
            result
        });
        (client.join(), server.join())
    });
    let (requests, elapsed, client_cpu, hist) = joined("client", client)?;
    let (server_cpu, echoes) = joined("server", server)?;
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
