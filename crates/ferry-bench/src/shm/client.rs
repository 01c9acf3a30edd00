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
use crate::harness::closed::Phase;
use crate::harness::{Budget, Histogram, cpu::thread_cpu_time};

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
fn pipeline<T: Endpoint>(
    conn: &mut T,
    ctx: &Context,
    value: &SharedBuf,
    spec: &Spec,
    budget: Budget,
    next_id: &mut u64,
) -> Result<Phase, BoxError> {
    let (payload, in_flight) = (spec.point.payload, spec.point.in_flight.max(1));
    let mut phase = Phase::new(budget, in_flight);
    let mut outstanding = VecDeque::with_capacity(in_flight);
    let mut acc = 0u64;
    loop {
        while phase.outstanding < in_flight {
            let Some(at) = phase.next_call() else { break };
            send_record(conn, ctx, *next_id, value)?;
            outstanding.push_back((*next_id, at));
            *next_id += 1;
            phase.started();
        }
        let Some((id, at)) = outstanding.pop_front() else {
            break;
        };
        let frame = conn.next(spec.tcp_spins())?;
        check_response(&frame, id)?;
        acc += touch(&frame, payload, RESPONSE_FILL)?;
        drop(frame);
        phase.completed(at);
    }
    black_box(acc);
    Ok(phase)
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
    pipeline(conn, &ctx, value, spec, spec.budget.warmup(), &mut next_id)?;
    exchange(conn, spec.tcp_spins(), MARK, &mut next_id)?;
    let (t0, cpu0, c0) = (Instant::now(), thread_cpu_time(), conn.counters());
    let measured = pipeline(conn, &ctx, value, spec, spec.budget, &mut next_id)?;
    let (t1, cpu1, c1) = (Instant::now(), thread_cpu_time(), conn.counters());
    exchange(conn, spec.tcp_spins(), END, &mut next_id)?;
    Ok(ClientSide {
        requests: measured.completed,
        elapsed: t1 - t0,
        cpu: cpu1.saturating_sub(cpu0),
        hist: measured.latency,
        window: c1.since(c0),
        total: conn.counters(),
    })
}
