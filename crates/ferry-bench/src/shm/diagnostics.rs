//! Diagnostics of the one-in-flight shm round trip: where its time goes ([`breakdown`]), and
//! what a dependent cross-core cache miss costs on this machine (the raw ping-pong with
//! chained lines).

use std::hint::black_box;
use std::time::Instant;

use ferry::Context;
use ferry_net::Payload;
use serde::{Deserialize, Serialize};

use super::link::{Pools, on_two_cores, shm_config, shm_link, value};
use super::raw::run_raw;
use super::wire::{END, REQUEST_FILL, RESPONSE_FILL, check_response, exchange, send_record, touch};
use super::{Notify, Point, Spec, TransportKind};
use crate::BoxError;
use crate::harness::table::Table;
use crate::harness::{Budget, median};
use crate::plot::bytes_label;

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

/// What the diagnostics measured, as the results file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    breakdown: Breakdown,
    raw_chain: RawChain,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Breakdown {
    what: String,
    rounds: usize,
    phases: Vec<String>,
    by_payload: Vec<Column>,
}

/// Each phase's median in ns, at one payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Column {
    payload: usize,
    ns: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RawChain {
    what: String,
    p50_ns: Vec<Depth>,
}

/// The raw ping-pong's p50 round trip with `depth` chained lines each way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Depth {
    depth: usize,
    p50_ns: u64,
}

/// Times the phases of `rounds` one-in-flight shm round trips (busy-poll) with timestamps on
/// both threads (one monotonic clock, so the crossings can be subtracted too); returns each
/// phase's median in ns, the first tenth of the rounds left out as warm-up.
fn breakdown(spec: &Spec, pools: &Pools, seq: u64, rounds: usize) -> Result<Vec<f64>, BoxError> {
    let link = shm_link(pools, seq, shm_config(Notify::Spin))?;
    let payload = spec.point.payload;
    let (cv, sv) = (
        value(&pools.shm.0, payload, REQUEST_FILL)?,
        value(&pools.shm.1, payload, RESPONSE_FILL)?,
    );
    let base = Instant::now();
    let ns = |t: Instant| (t - base).as_nanos() as i64;
    let (c, s) = on_two_cores(
        spec,
        link,
        |conn| -> Result<Vec<[i64; 4]>, BoxError> {
            let ctx = Context::new(pools.shm.1.clone());
            let mut times = Vec::with_capacity(rounds);
            loop {
                let frame = conn.recv()?;
                let s0 = Instant::now();
                let meta = frame.meta();
                if meta.kind == END {
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
                check_response(&frame, id)?;
                black_box(touch(&frame, payload, RESPONSE_FILL)?);
                drop(frame);
                times.push([ns(t0), ns(t1), ns(t2), ns(t3), ns(Instant::now())]);
            }
            exchange(conn, false, END, &mut (rounds as u64))?;
            Ok(times)
        },
    )?;
    if c.len() != s.len() {
        return Err(format!("{} requests, {} served", c.len(), s.len()).into());
    }
    let phase = |f: fn(&[i64; 5], &[i64; 4]) -> i64| {
        let v: Vec<f64> = c
            .iter()
            .zip(&s)
            .skip(c.len() / 10)
            .map(|(c, s)| f(c, s) as f64)
            .collect();
        median(&v).unwrap_or(0.0)
    };
    Ok(vec![
        phase(|c, _| c[1] - c[0]),
        phase(|c, _| c[2] - c[1]),
        phase(|c, s| s[0] - c[2]),
        phase(|_, s| s[1] - s[0]),
        phase(|_, s| s[2] - s[1]),
        phase(|_, s| s[3] - s[2]),
        phase(|c, s| c[3] - s[3]),
        phase(|c, _| c[4] - c[3]),
        phase(|c, _| c[4] - c[0]),
    ])
}

/// Measures the diagnostics: the breakdown at each of `payloads` over `rounds` round trips,
/// then the raw ping-pong with 0 to 3 chained lines for half of `budget`. `seq` numbers the
/// shm socket paths.
pub fn measure(
    payloads: &[usize],
    rounds: usize,
    budget: Budget,
    cpus: (usize, usize),
    pools: &Pools,
    seq: &mut u64,
) -> Result<Diagnostics, BoxError> {
    let budget = match budget {
        Budget::Time(d) => Budget::Time(d / 2),
        count => count,
    };
    let mut by_payload = Vec::new();
    for &payload in payloads {
        *seq += 1;
        let point = Point {
            transport: TransportKind::Shm,
            notify: Notify::Spin,
            payload,
            in_flight: 1,
        };
        let ns = breakdown(&Spec { point, budget, cpus }, pools, *seq, rounds)?;
        by_payload.push(Column { payload, ns });
    }
    let mut p50_ns = Vec::new();
    for depth in 0..=3usize {
        let r = run_raw(budget, cpus, depth)?;
        p50_ns.push(Depth {
            depth,
            p50_ns: r.hist.quantile(0.5).unwrap_or(0),
        });
    }
    Ok(Diagnostics {
        breakdown: Breakdown {
            what: "one-in-flight shm round trips (spin), timestamps on both threads; medians per phase in ns, each including one clock reading".to_owned(),
            rounds,
            phases: PHASES.map(str::to_owned).to_vec(),
            by_payload,
        },
        raw_chain: RawChain {
            what: "raw ping-pong whose every direction also reads `depth` cache lines written by the peer, one after another, each address computed from the line read before; p50 round trip in ns".to_owned(),
            p50_ns,
        },
    })
}

/// Prints the diagnostics.
pub fn print(d: &Diagnostics) {
    println!(
        "Where a one-in-flight shm round trip goes (shm spin, {} round trips, medians in ns; each phase includes one clock reading):",
        d.breakdown.rounds
    );
    let columns = &d.breakdown.by_payload;
    let mut t = Table::new(
        std::iter::once("phase".to_owned()).chain(columns.iter().map(|c| bytes_label(c.payload as f64))),
    );
    for (i, name) in d.breakdown.phases.iter().enumerate() {
        t.row(
            std::iter::once(name.clone()).chain(
                columns
                    .iter()
                    .map(|c| c.ns.get(i).map_or("-".to_owned(), |v| format!("{v:.0}"))),
            ),
        );
    }
    t.print();
    println!(
        "Raw ping-pong with chained lines: each direction also reads `depth` lines one after another, each address taken from the line before (p50 round trip, ns):"
    );
    let mut t = Table::new(["depth", "p50 ns"]);
    for d in &d.raw_chain.p50_ns {
        t.row([d.depth.to_string(), d.p50_ns.to_string()]);
    }
    t.print();
}
