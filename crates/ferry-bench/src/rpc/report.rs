//! What `ferry bench rpc` prints, writes and draws: a configuration's medians over its
//! repetitions, the table, the targets as ratios of figures from the same run, and
//! the plot.

use std::path::Path;

use serde_json::{Value, json};

use super::client::Measured;
use super::{ECHO, Fields, ONE_KIB, Point, SMALL, System, Transport};
use crate::harness::{self, median};
use crate::{BoxError, plot};

/// The targets (issue 10 §6).
const TARGET_VS_TONIC: f64 = 5.0;
const TARGET_VS_RAW: f64 = 0.9;
const TARGET_SMALL_VS_PING_PONG: f64 = 5.0;
const TARGET_SMALL_RATE: f64 = 3e6;
/// The in-flight count of the comparison with tonic, and of the 64 B throughput target.
const VS_TONIC_IN_FLIGHT: usize = 16;
const SMALL_RATE_IN_FLIGHT: usize = 128;

/// A configuration's medians over its repetitions.
#[derive(Debug, Clone)]
pub(super) struct Summary {
    pub(super) point: Point,
    p50: f64,
    p99: f64,
    p999: f64,
    rate: f64,
    server_ns: f64,
    client_ns: f64,
    /// Each repetition's calls/s and p50, in repetition order.
    rates: Vec<f64>,
    p50s: Vec<f64>,
    pub(super) record: Value,
}

/// The median over repetitions of `a[i] / b[i]`: a repetition runs what a target compares
/// close together in time, so both sides of each ratio see the machine in the same state.
/// The ratio of the medians if the two differ in repetitions.
fn paired(a: &[f64], b: &[f64]) -> f64 {
    if a.len() == b.len() && !a.is_empty() {
        let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        return median(&ratios).unwrap_or(f64::NAN);
    }
    median(a).unwrap_or(f64::NAN) / median(b).unwrap_or(f64::NAN)
}

pub(super) fn summarize(point: Point, runs: &[Measured]) -> Summary {
    let med = |f: &dyn Fn(&Measured) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    let q = |m: &Measured, q: f64| m.latency.quantile(q).unwrap_or(0) as f64;
    let rate_of = |m: &Measured| m.calls as f64 / m.elapsed.as_secs_f64().max(1e-9);
    let per_call = |cpu: std::time::Duration, m: &Measured| cpu.as_nanos() as f64 / m.calls.max(1) as f64;
    let p50 = med(&|m| q(m, 0.5));
    let p99 = med(&|m| q(m, 0.99));
    let p999 = med(&|m| q(m, 0.999));
    let rate = med(&rate_of);
    let server_ns = med(&|m| per_call(m.server_cpu, m));
    let client_ns = med(&|m| per_call(m.client_cpu, m));
    let round = harness::round;
    let record = json!({
        "system": point.system.name(),
        "transport": point.transport.name(),
        "fields": point.fields.count,
        "field_len": point.fields.len,
        "payload": point.fields.bytes(),
        "in_flight": point.in_flight,
        "reps": runs.len(),
        "calls": med(&|m| m.calls as f64) as u64,
        "samples": runs.iter().map(|m| m.latency.count()).sum::<u64>(),
        "p50_ns": p50,
        "p99_ns": p99,
        "p999_ns": p999,
        "mean_ns": round(med(&|m| m.latency.mean().unwrap_or(0.0)), 1),
        "min_ns": runs.iter().filter_map(|m| m.latency.min()).min(),
        "max_ns": runs.iter().filter_map(|m| m.latency.max()).max(),
        "p50_ns_reps": runs.iter().map(|m| q(m, 0.5)).collect::<Vec<_>>(),
        "calls_per_sec": round(rate, 0),
        "calls_per_sec_reps": runs.iter().map(|m| round(rate_of(m), 0)).collect::<Vec<_>>(),
        "server_cpu_ns_per_call": round(server_ns, 1),
        "client_cpu_ns_per_call": round(client_ns, 1),
    });
    Summary {
        point,
        p50,
        p99,
        p999,
        rate,
        server_ns,
        client_ns,
        rates: runs.iter().map(rate_of).collect(),
        p50s: runs.iter().map(|m| q(m, 0.5)).collect(),
        record,
    }
}

pub(super) fn from_record(r: &Value) -> Option<Summary> {
    let f = |k: &str| r[k].as_f64();
    let name = r["system"].as_str()?;
    let transport = r["transport"].as_str()?;
    Some(Summary {
        point: Point {
            system: harness::by_name(&System::ALL, System::name, name)?,
            transport: harness::by_name(&Transport::ALL, Transport::name, transport)?,
            fields: Fields {
                count: r["fields"].as_u64()? as usize,
                len: r["field_len"].as_u64()? as usize,
            },
            in_flight: r["in_flight"].as_u64()? as usize,
        },
        p50: f("p50_ns")?,
        p99: f("p99_ns")?,
        p999: f("p999_ns")?,
        rate: f("calls_per_sec")?,
        server_ns: f("server_cpu_ns_per_call")?,
        client_ns: f("client_cpu_ns_per_call")?,
        rates: numbers(&r["calls_per_sec_reps"])?,
        p50s: numbers(&r["p50_ns_reps"])?,
        record: r.clone(),
    })
}

fn numbers(v: &Value) -> Option<Vec<f64>> {
    v.as_array()?.iter().map(Value::as_f64).collect()
}

/// The table, then the targets and the comparisons.
pub(super) fn print(all: &[Summary]) {
    print_table(all);
    print_targets(all);
}

/// The table alone: one row per configuration.
pub(super) fn print_table(all: &[Summary]) {
    println!(
        "{:<12} {:<5} {:>10} {:>8} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11}",
        "system",
        "trans",
        "payload",
        "inflight",
        "p50 ns",
        "p99 ns",
        "p99.9 ns",
        "calls/s",
        "srv ns/call",
        "cli ns/call"
    );
    for s in all {
        println!(
            "{:<12} {:<5} {:>10} {:>8} {:>9.0} {:>9.0} {:>9.0} {:>11.0} {:>11.0} {:>11.0}",
            s.point.system.name(),
            s.point.transport.name(),
            s.point.fields.label(),
            s.point.in_flight,
            s.p50,
            s.p99,
            s.p999,
            s.rate,
            s.server_ns,
            s.client_ns
        );
    }
    println!();
}

fn join(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
}

fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "MISSED" }
}

fn find(
    all: &[Summary],
    system: System,
    transport: Transport,
    fields: Fields,
    in_flight: usize,
) -> Option<&Summary> {
    all.iter().find(|s| {
        s.point.system == system
            && s.point.transport == transport
            && s.point.fields == fields
            && s.point.in_flight == in_flight
    })
}

/// The in-flight counts of the loop systems, ascending.
fn counts(all: &[Summary]) -> Vec<usize> {
    let mut n: Vec<usize> = all
        .iter()
        .filter(|s| s.point.system.on_loop())
        .map(|s| s.point.in_flight)
        .collect();
    n.sort_unstable();
    n.dedup();
    n
}

/// The targets and the comparisons, from this run's summaries.
fn print_targets(all: &[Summary]) {
    println!(
        "Targets (issue 10 §6): each ratio is the median over repetitions of the ratio within a repetition."
    );
    let hybrid = |t, f, n| find(all, System::FerryHybrid, t, f, n);
    if let (Some(h), Some(t)) = (
        hybrid(Transport::Tcp, ECHO, VS_TONIC_IN_FLIGHT),
        find(all, System::Tonic, Transport::Tcp, ECHO, VS_TONIC_IN_FLIGHT),
    ) {
        let x = paired(&h.rates, &t.rates);
        println!(
            "  ferry-hybrid tcp / tonic, {}, {VS_TONIC_IN_FLIGHT} in flight: {:.0} / {:.0} calls/s (medians), ratio {x:.2}x (target >= {TARGET_VS_TONIC}x: {})",
            ECHO.label(),
            h.rate,
            t.rate,
            verdict(x >= TARGET_VS_TONIC)
        );
    }
    if let (Some(h), Some(t)) = (
        hybrid(Transport::Tcp, ECHO, 1),
        find(all, System::Tonic, Transport::Tcp, ECHO, 1),
    ) {
        println!(
            "  (1 in flight: {:.0} / {:.0} calls/s, ratio {:.2}x; p50 {:.0} / {:.0} ns)",
            h.rate,
            t.rate,
            paired(&h.rates, &t.rates),
            h.p50,
            t.p50
        );
    }
    for transport in Transport::ALL {
        let mut ratios = Vec::new();
        for fields in [ECHO, ONE_KIB] {
            for n in counts(all) {
                if let (Some(h), Some(r)) = (
                    hybrid(transport, fields, n),
                    find(all, System::Raw, transport, fields, n),
                ) {
                    ratios.push((fields, n, paired(&h.rates, &r.rates), paired(&r.p50s, &h.p50s)));
                }
            }
        }
        if ratios.is_empty() {
            continue;
        }
        let met = ratios.iter().filter(|r| r.2 >= TARGET_VS_RAW).count();
        println!(
            "  ferry-hybrid / raw calls/s, {}: {} (target >= {TARGET_VS_RAW} everywhere: {}, {met} of {})",
            transport.name(),
            ratios
                .iter()
                .map(|(f, n, x, _)| format!("{} @{n} {x:.3}", f.label()))
                .collect::<Vec<_>>()
                .join(", "),
            verdict(met == ratios.len()),
            ratios.len()
        );
        let at_one: Vec<String> = ratios
            .iter()
            .filter(|r| r.1 == 1)
            .map(|(f, _, _, p)| format!("{} {p:.2}", f.label()))
            .collect();
        if !at_one.is_empty() {
            println!("    (1 in flight, raw p50 / hybrid p50: {})", at_one.join(", "));
        }
    }
    let ping = all.iter().find(|s| s.point.system == System::PingPong);
    if let (Some(s), Some(p)) = (hybrid(Transport::Shm, SMALL, 1), ping) {
        let x = paired(&s.p50s, &p.p50s);
        println!(
            "  ferry-hybrid shm {} p50, 1 in flight / raw ping-pong p50: {:.0} / {:.0} ns (medians), ratio {x:.2}x (target <= {TARGET_SMALL_VS_PING_PONG}x: {})",
            SMALL.label(),
            s.p50,
            p.p50,
            verdict(x <= TARGET_SMALL_VS_PING_PONG)
        );
        println!(
            "    (per repetition, ns: {} against the ping-pong's {}; a ping-pong well above the fastest one ran with the two vCPUs placed far apart on the host)",
            join(&s.p50s),
            join(&p.p50s)
        );
    }
    if let Some(s) = hybrid(Transport::Shm, SMALL, SMALL_RATE_IN_FLIGHT) {
        println!(
            "  ferry-hybrid shm {}, {SMALL_RATE_IN_FLIGHT} in flight: {:.0} calls/s (target >= {:.0} M: {})",
            SMALL.label(),
            s.rate,
            TARGET_SMALL_RATE / 1e6,
            verdict(s.rate >= TARGET_SMALL_RATE)
        );
    }
    println!(
        "Against the no-serialization echo (calls/s / raw's, same transport, payload and in flight, per repetition, median):"
    );
    for transport in Transport::ALL {
        for fields in [ECHO, ONE_KIB] {
            for n in counts(all) {
                let Some(raw) = find(all, System::Raw, transport, fields, n) else {
                    continue;
                };
                let row: Vec<String> = System::LOOP[1..]
                    .iter()
                    .filter_map(|&sys| find(all, sys, transport, fields, n))
                    .map(|s| format!("{} {:.2}", s.point.system.name(), paired(&s.rates, &raw.rates)))
                    .collect();
                println!(
                    "  {} {:>10} @{n:<3}: raw {:.0}/s; {}",
                    transport.name(),
                    fields.label(),
                    raw.rate,
                    row.join(", ")
                );
            }
        }
    }
}

/// The plot: p99 against calls/s per system (Cornflakes Figure 2), one panel per transport and
/// payload; the 64 B call beside the ping-pong; p50 at one in flight against payload.
pub(super) fn draw(path: &Path, all: &[Summary]) -> Result<(), BoxError> {
    let series = |keep: &dyn Fn(&Summary) -> bool,
                  name: &dyn Fn(&Summary) -> String,
                  x: &dyn Fn(&Summary) -> f64,
                  y: &dyn Fn(&Summary) -> f64| {
        let mut out: Vec<plot::Series> = Vec::new();
        for s in all.iter().filter(|s| keep(s)) {
            let n = name(s);
            let i = match out.iter().position(|o| o.name == n) {
                Some(i) => i,
                None => {
                    out.push(plot::Series {
                        name: n,
                        points: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[i].points.push((x(s), y(s)));
        }
        for s in &mut out {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out
    };
    let system_name = |s: &Summary| s.point.system.name().to_owned();
    let fig2 = |transport: Transport, fields: Fields| plot::Panel {
        title: format!("{}, {}: p99 against calls/s", transport.name(), fields.label()),
        x_label: "calls/s (points: 1, 16, 128 in flight)".to_owned(),
        x_axis: plot::XAxis::Count,
        y_label: "p99 round trip, ns".to_owned(),
        series: series(
            &|s| s.point.transport == transport && s.point.fields == fields,
            &system_name,
            &|s| s.rate,
            &|s| s.p99,
        ),
    };
    let panels = vec![
        fig2(Transport::Tcp, ECHO),
        fig2(Transport::Shm, ECHO),
        fig2(Transport::Tcp, ONE_KIB),
        fig2(Transport::Shm, ONE_KIB),
        plot::Panel {
            title: format!(
                "shm {} ferry-hybrid and the ping-pong: p50 against calls/s",
                SMALL.label()
            ),
            x_label: "calls/s".to_owned(),
            x_axis: plot::XAxis::Count,
            y_label: "p50 round trip, ns".to_owned(),
            series: series(
                &|s| s.point.fields == SMALL || s.point.system == System::PingPong,
                &system_name,
                &|s| s.rate,
                &|s| s.p50,
            ),
        },
        plot::Panel {
            title: "p50 at 1 in flight against payload".to_owned(),
            x_label: "payload (ping-pong: its 8-byte sequence number)".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "p50 round trip, ns".to_owned(),
            series: series(
                &|s| s.point.in_flight == 1,
                &|s| format!("{} {}", s.point.system.name(), s.point.transport.name()),
                &|s| s.point.fields.bytes() as f64,
                &|s| s.p50,
            ),
        },
    ];
    plot::log_log_svg(
        path,
        "ferry bench rpc: echo over ferry-rpc (one server loop) against raw, peers, tonic and the ping-pong",
        2,
        &panels,
    )
}
