//! The client side of the ping-pong (Figures 11-13): `threads` threads, each with its own
//! [`EventLoop`] and session, pinned to the client CPU, each in a closed loop of one call at a
//! time: build the Record, send it ([`EventLoop::call_payload`]), wait for the ACK and check
//! it, build the next one.
//!
//! How each builder's message is sent:
//! - the stock builder: `Payload::Bytes(fbb.finished_data())`, one contiguous slice (over TCP
//!   copied into the connection's staging buffer, over shared memory into a block);
//! - ours: `Payload::Gather` of `finished_slices()`, the builder's blocks taken from the
//!   session's pool (over TCP posted by reference as `sendmsg` entries, the kernel copying
//!   them once; over shared memory copied once into a block, which the server reads in place);
//! - prebuilt (the baseline, no serialization per call): the Record built once into a pool
//!   buffer, sent every call as a one-part `Payload::Gather` (the fewest copies either
//!   transport allows: TCP the kernel's, shared memory the one into the block).
//!
//! Latency: from the end of the previous call (just before the next Record is built) to the
//! ACK checked, every call, in an HDR histogram. Throughput: calls over the measured window,
//! summed over the threads. Threads connect and warm up (a tenth of the budget), then start
//! their windows together. A call not answered within [`STALL`] fails the run.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::Pool;
use ferry_rpc::{Addr, Continuation, EventLoop, SessionId};
use hdrhistogram::Histogram;

use super::record::Source;
use super::serialize::Builders;
use super::{Builder, loop_config, service};
use crate::BoxError;
use crate::harness::{self, Budget};

/// A call not answered for this long fails the run.
pub(super) const STALL: Duration = Duration::from_secs(10);

/// One run of the ping-pong.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec<'a> {
    pub(super) addr: &'a Addr,
    /// What is sent: a builder's Record built per call, or [`Builder::Prebuilt`].
    pub(super) builder: Builder,
    pub(super) source: &'a Source,
    pub(super) budget: Budget,
    pub(super) threads: usize,
    /// The CPU every client thread is pinned to.
    pub(super) cpu: usize,
    /// How long the client loops busy-poll before sleeping in `poll(2)`.
    pub(super) spin: Duration,
}

/// What a run measured over its window.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    /// Calls completed, all threads.
    pub(super) calls: u64,
    /// Sum over the threads of each one's calls over its window.
    pub(super) calls_per_sec: f64,
    /// Round trips in ns, all threads.
    pub(super) latency: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    // 1..=u64::MAX at three significant digits is within what hdrhistogram accepts.
    Histogram::new_with_bounds(1, u64::MAX, 3).expect("a valid histogram")
}

/// Runs `spec`'s threads to the end of their windows.
pub(super) fn run(spec: &Spec<'_>) -> Result<Measured, BoxError> {
    let threads = spec.threads.max(1);
    let barrier = Barrier::new(threads);
    let results: Vec<Result<ThreadRun, BoxError>> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let barrier = &barrier;
                thread::Builder::new()
                    .name(format!("fb-client-{i}"))
                    .spawn_scoped(s, move || one_thread(spec, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err("a client thread panicked".into())),
                Err(e) => Err(format!("spawning a client thread: {e}").into()),
            })
            .collect()
    });
    let mut out = Measured {
        calls: 0,
        calls_per_sec: 0.0,
        latency: histogram(),
    };
    for r in results {
        let (calls, elapsed, latency) = r?;
        out.calls += calls;
        out.calls_per_sec += calls as f64 / elapsed.as_secs_f64().max(1e-9);
        out.latency
            .add(&latency)
            .map_err(|e| format!("merging histograms: {e}"))?;
    }
    Ok(out)
}

type Setup = (EventLoop, SessionId, Sender);

/// One thread's calls, window and latencies.
type ThreadRun = (u64, Duration, Histogram<u64>);

fn one_thread(spec: &Spec<'_>, barrier: &Barrier) -> Result<ThreadRun, BoxError> {
    let setup = (|| -> Result<Setup, BoxError> {
        harness::pin_current_thread(spec.cpu)?;
        let mut lp = EventLoop::new(loop_config(spec.spin))?;
        let session = lp.connect(spec.addr)?;
        let pool = lp
            .context(session)
            .and_then(|c| c.pool().cloned())
            .ok_or("the session has no pool")?;
        let mut sender = Sender::new(spec.builder, &pool, spec.source)?;
        phase(
            &mut lp,
            session,
            &mut sender,
            spec.source,
            spec.budget.warmup(),
            None,
        )?;
        Ok((lp, session, sender))
    })();
    // Every thread reaches the barrier, even one whose setup failed, so none waits forever.
    barrier.wait();
    let (mut lp, session, mut sender) = setup?;
    let mut latency = histogram();
    let r = phase(
        &mut lp,
        session,
        &mut sender,
        spec.source,
        spec.budget,
        Some(&mut latency),
    );
    lp.close(session);
    let (calls, elapsed) = r?;
    Ok((calls, elapsed, latency))
}

/// Calls one at a time for `budget`; returns the calls and the window's length.
fn phase(
    lp: &mut EventLoop,
    session: SessionId,
    sender: &mut Sender,
    source: &Source,
    budget: Budget,
    mut latency: Option<&mut Histogram<u64>>,
) -> Result<(u64, Duration), BoxError> {
    let start = Instant::now();
    let (mut last, mut calls) = (start, 0u64);
    loop {
        let done = match budget {
            Budget::Count(n) => calls >= n,
            Budget::Time(d) => last - start >= d,
        };
        if done {
            return Ok((calls, last - start));
        }
        sender.call(lp, session, source)?;
        let now = Instant::now();
        if let Some(h) = latency.as_deref_mut() {
            h.saturating_record(u64::try_from((now - last).as_nanos()).unwrap_or(u64::MAX));
        }
        last = now;
        calls += 1;
    }
}

/// What a thread sends: the Record `builder` builds, with builders kept across calls.
struct Sender {
    builders: Builders,
    builder: Builder,
}

impl Sender {
    fn new(builder: Builder, pool: &Pool, source: &Source) -> Result<Sender, BoxError> {
        let mut builders = Builders::new(pool);
        match builder {
            Builder::Memcpy => return Err("the memcpy floor sends nothing".into()),
            Builder::Prebuilt => builders.prebuild(source)?,
            _ => {}
        }
        Ok(Sender { builders, builder })
    }

    /// Builds the Record, calls, and waits for the ACK.
    fn call(&mut self, lp: &mut EventLoop, session: SessionId, source: &Source) -> Result<(), BoxError> {
        let done: Rc<Cell<Option<Result<(), String>>>> = Rc::default();
        let answer = Rc::clone(&done);
        let expect = source.ack();
        let then: Continuation = Box::new(move |_, r| {
            answer.set(Some(match r {
                Ok(ack) if ack.bytes() == Some(&expect[..]) => Ok(()),
                Ok(ack) => Err(format!("the ACK is {:?}, expected {expect:?}", ack.bytes())),
                Err(s) => Err(format!("the call failed: {s}")),
            }));
        });
        let payload = self.builders.build(self.builder, source);
        lp.call_payload(session, service::RECORD, payload, then)?;
        let since = Instant::now();
        let mut turns = 0u32;
        loop {
            if let Some(r) = done.take() {
                return Ok(r?);
            }
            lp.turn();
            turns = turns.wrapping_add(1);
            if turns % 16 == 0 && since.elapsed() > STALL {
                return Err(format!("no ACK for {STALL:?}").into());
            }
        }
    }
}
