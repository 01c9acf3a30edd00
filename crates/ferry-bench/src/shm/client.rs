//! The client of a run: keeps `in_flight` requests outstanding and times round trips, the
//! measured ones between the `MARK` and `END` exchanges.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry_buf::{Pool, SharedBuf};

use super::Spec;
use super::endpoint::{Counters, Endpoint};
use super::wire::{END, MARK, RESPONSE_FILL, check_response, exchange, send_record, touch};
use crate::BoxError;
use crate::harness::{Budget, Histogram, cpu::thread_cpu_time};

/// Requests timed in a pipelined run: one in this many.
const TIMED_EVERY: u64 = 16;

/// The client's side of a run.
pub struct ClientSide {
    pub requests: u64,
    pub elapsed: Duration,
    pub cpu: Duration,
    pub hist: Histogram,
    pub window: Counters,
    pub total: Counters,
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
            let at = match () {
                _ if in_flight == 1 => Some(last),
                _ if id % TIMED_EVERY == 0 => Some(Instant::now()),
                _ => None,
            };
            send_record(conn, ctx, id, value)?;
            outstanding.push_back((id, at));
            sent += 1;
        }
        let Some(&(id, at)) = outstanding.front() else {
            break;
        };
        let frame = conn.next(spec.tcp_spins())?;
        check_response(&frame, id)?;
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

/// The warm-up, `MARK`, the measured requests, `END`.
pub fn client<T: Endpoint>(
    conn: &mut T,
    pool: &Pool,
    value: &SharedBuf,
    spec: &Spec,
) -> Result<ClientSide, BoxError> {
    let ctx = Context::new(pool.clone());
    let mut next_id = 0u64;
    let warmup = spec.budget.warmup();
    pipeline(
        conn,
        &ctx,
        value,
        spec,
        warmup,
        &mut next_id,
        &mut Histogram::default(),
    )?;
    exchange(conn, spec.tcp_spins(), MARK, &mut next_id)?;
    let (t0, cpu0, c0) = (Instant::now(), thread_cpu_time(), conn.counters());
    let mut hist = Histogram::default();
    let requests = pipeline(conn, &ctx, value, spec, spec.budget, &mut next_id, &mut hist)?;
    let (t1, cpu1, c1) = (Instant::now(), thread_cpu_time(), conn.counters());
    exchange(conn, spec.tcp_spins(), END, &mut next_id)?;
    Ok(ClientSide {
        requests,
        elapsed: t1 - t0,
        cpu: cpu1.saturating_sub(cpu0),
        hist,
        window: c1.since(c0),
        total: conn.counters(),
    })
}
