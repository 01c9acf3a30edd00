//! Diagnostics of the one-in-flight shm round trip: where its time goes ([`breakdown`]), once
//! as it runs and once with each phase waiting for its stores to reach their cache lines, and
//! what a dependent cross-core cache miss costs on this machine (the raw ping-pong with
//! chained lines).

use std::hint::black_box;
use std::sync::atomic::{Ordering, fence};
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
use crate::harness::{Budget, joined, median};
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
    /// The same round trips with a sequentially consistent fence before each clock reading:
    /// a phase then ends only once its stores own their cache lines, so its excess over
    /// `by_payload` is what its stores wait for lines the peer holds (absent in results
    /// files written before it was measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    fenced: Vec<Column>,
    /// One clock reading (`Instant::now`), ns: the median of back-to-back pairs on the
    /// client's thread, the part of each phase that is the reading itself (0 in results files
    /// written before it was measured).
    #[serde(default, skip_serializing_if = "unmeasured")]
    clock_ns: f64,
}

/// Whether a figure is the 0 that a results file written before it was measured reads as (kept
/// out of such a file when it is written back, so that it reads back the same).
fn unmeasured(ns: &f64) -> bool {
    *ns == 0.0
}

/// Each phase's median in ns, at one payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Column {
    payload: usize,
    ns: Vec<f64>,
    /// [`core_probe`] on the client's and the server's thread of that connection, before its
    /// round trips: whether a side's slow phases come with a slow core (empty in results files
    /// written before it was measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    probe_ns: Vec<f64>,
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
/// phase's median in ns, the first tenth of the rounds left out as warm-up, and both threads'
/// [`core_probe`]. With `fenced`, a
/// sequentially consistent fence precedes each reading: a phase's stores have then reached
/// their cache lines before it ends (on x86-64 the fence waits for the store buffer to drain,
/// so a store to a line the peer holds costs the phase that line's transfer).
fn breakdown(spec: &Spec, pools: &Pools, seq: u64, rounds: usize, fenced: bool) -> Result<Column, BoxError> {
    let link = shm_link(pools, seq, shm_config(Notify::Spin))?;
    let payload = spec.point.payload;
    let (cv, sv) = (
        value(&pools.shm.0, payload, REQUEST_FILL)?,
        value(&pools.shm.1, payload, RESPONSE_FILL)?,
    );
    let base = Instant::now();
    let ns = |t: Instant| (t - base).as_nanos() as i64;
    let now = || {
        if fenced {
            fence(Ordering::SeqCst);
        }
        Instant::now()
    };
    let (c, s) = on_two_cores(
        spec,
        link,
        |conn| -> Result<(f64, Vec<[i64; 4]>), BoxError> {
            let ctx = Context::new(pools.shm.1.clone());
            let probe = core_probe();
            let mut times = Vec::with_capacity(rounds);
            loop {
                let frame = conn.recv()?;
                let s0 = now();
                let meta = frame.meta();
                if meta.kind == END {
                    drop(frame);
                    conn.send_payload(meta, Payload::Bytes(&[]))?;
                    conn.flush()?;
                    return Ok((probe, times));
                }
                black_box(touch(&frame, payload, REQUEST_FILL)?);
                drop(frame);
                let s1 = now();
                send_record(conn, &ctx, meta.request_id, &sv)?;
                let s2 = now();
                conn.flush()?;
                times.push([ns(s0), ns(s1), ns(s2), ns(now())]);
            }
        },
        |conn| -> Result<(f64, Vec<[i64; 5]>), BoxError> {
            let ctx = Context::new(pools.shm.0.clone());
            let probe = core_probe();
            let mut times = Vec::with_capacity(rounds);
            for id in 0..rounds as u64 {
                let t0 = now();
                send_record(conn, &ctx, id, &cv)?;
                let t1 = now();
                conn.flush()?;
                let t2 = now();
                let frame = conn.recv()?;
                let t3 = now();
                check_response(&frame, id)?;
                black_box(touch(&frame, payload, RESPONSE_FILL)?);
                drop(frame);
                times.push([ns(t0), ns(t1), ns(t2), ns(t3), ns(now())]);
            }
            exchange(conn, false, END, &mut (rounds as u64))?;
            Ok((probe, times))
        },
    )?;
    let ((client_probe, c), (server_probe, s)) = (c, s);
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
    let ns = vec![
        phase(|c, _| c[1] - c[0]),
        phase(|c, _| c[2] - c[1]),
        phase(|c, s| s[0] - c[2]),
        phase(|_, s| s[1] - s[0]),
        phase(|_, s| s[2] - s[1]),
        phase(|_, s| s[3] - s[2]),
        phase(|c, s| c[3] - s[3]),
        phase(|c, _| c[4] - c[3]),
        phase(|c, _| c[4] - c[0]),
    ];
    Ok(Column {
        payload,
        ns,
        probe_ns: vec![client_probe, server_probe],
    })
}

/// The time of a chain of dependent multiply-adds on this thread, ns (the median of 100
/// tries; the compiler folds the 10,000 steps eight to one, leaving 1,250 multiplications and
/// additions in a row, about 5,000 cycles): how fast its core's clock runs, with no memory the
/// other side touches.
fn core_probe() -> f64 {
    let tries: Vec<f64> = (0..100)
        .map(|_| {
            let start = Instant::now();
            let mut x = black_box(1u64);
            for _ in 0..black_box(10_000) {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
            }
            black_box(x);
            start.elapsed().as_nanos() as f64
        })
        .collect();
    median(&tries).unwrap_or(0.0)
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
    let (mut by_payload, mut fenced) = (Vec::new(), Vec::new());
    for &payload in payloads {
        let point = Point {
            transport: TransportKind::Shm,
            notify: Notify::Spin,
            payload,
            in_flight: 1,
        };
        for (with_fence, out) in [(false, &mut by_payload), (true, &mut fenced)] {
            *seq += 1;
            out.push(breakdown(
                &Spec { point, budget, cpus },
                pools,
                *seq,
                rounds,
                with_fence,
            )?);
        }
    }
    let clock_ns = clock_reading(cpus.0)?;
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
            fenced,
            clock_ns,
        },
        raw_chain: RawChain {
            what: "raw ping-pong whose every direction also reads `depth` cache lines written by the peer, one after another, each address computed from the line read before; p50 round trip in ns".to_owned(),
            p50_ns,
        },
    })
}

/// The median of `n` back-to-back clock readings' differences on a thread pinned to `cpu`, in
/// ns: what one reading adds to each phase of the breakdown.
fn clock_reading(cpu: usize) -> Result<f64, BoxError> {
    let reading = std::thread::spawn(move || -> Result<f64, BoxError> {
        crate::harness::pin_current_thread(cpu)?;
        let n = 100_000;
        let v: Vec<f64> = (0..n)
            .map(|_| {
                let a = Instant::now();
                (Instant::now() - a).as_nanos() as f64
            })
            .collect();
        Ok(median(&v[n / 10..]).unwrap_or(0.0))
    });
    joined("clock reading", reading.join())
}

/// Prints one breakdown table: a row per phase, a column per payload.
fn print_phases(phases: &[String], columns: &[Column]) {
    let mut t = Table::new(
        std::iter::once("phase".to_owned()).chain(columns.iter().map(|c| bytes_label(c.payload as f64))),
    );
    for (i, name) in phases.iter().enumerate() {
        t.row(
            std::iter::once(name.clone()).chain(
                columns
                    .iter()
                    .map(|c| c.ns.get(i).map_or("-".to_owned(), |v| format!("{v:.0}"))),
            ),
        );
    }
    if columns.iter().any(|c| c.probe_ns.len() == 2) {
        t.row(
            std::iter::once("core probe (dependent multiply-adds), client / server thread".to_owned()).chain(
                columns.iter().map(|c| match c.probe_ns[..] {
                    [client, server] => format!("{client:.0} / {server:.0}"),
                    _ => "-".to_owned(),
                }),
            ),
        );
    }
    t.print();
}

/// Prints the diagnostics.
pub fn print(d: &Diagnostics) {
    let b = &d.breakdown;
    println!(
        "Where a one-in-flight shm round trip goes (shm spin, {} round trips, medians in ns; each phase includes one clock reading, {:.0} ns):",
        b.rounds, b.clock_ns
    );
    print_phases(&b.phases, &b.by_payload);
    if !b.fenced.is_empty() {
        println!(
            "The same with a fence before each clock reading (a phase ends once its stores own their cache lines: its excess over the table above is what they wait for lines the peer holds):"
        );
        print_phases(&b.phases, &b.fenced);
    }
    println!(
        "Raw ping-pong with chained lines: each direction also reads `depth` lines one after another, each address taken from the line before (p50 round trip, ns):"
    );
    let mut t = Table::new(["depth", "p50 ns"]);
    for d in &d.raw_chain.p50_ns {
        t.row([d.depth.to_string(), d.p50_ns.to_string()]);
    }
    t.print();
}
