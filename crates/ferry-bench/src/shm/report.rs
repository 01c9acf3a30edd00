//! What the records show: the table, shm against TCP, the targets and the plot.

use std::path::Path;

use super::record::Record;
use super::{Notify, TransportKind};
use crate::BoxError;
use crate::harness::lifecycle::Target;
use crate::harness::table::Table;
use crate::harness::{Named, sorted, unique};
use crate::plot::{self, bytes_label};

/// Issue 11's targets: the 64 B round trip against the raw ping-pong, the largest payload's
/// against the smallest's, and pipelined small requests in absolute terms and against TCP's
/// best rate in the same run.
const TARGET_VS_RAW: f64 = 3.0;
const TARGET_4K_VS_64: f64 = 1.10;
const TARGET_RPS: f64 = 5e6;
const TARGET_VS_TCP: f64 = 2.0;

/// The pairs of shm and TCP notifications compared side by side.
const PAIRS: [(Notify, Notify); 2] = [(Notify::Spin, Notify::Spin), (Notify::Default, Notify::Poll)];

fn find(
    all: &[Record],
    t: TransportKind,
    n: Notify,
    payload: Option<usize>,
    in_flight: usize,
) -> Option<&Record> {
    all.iter().find(|r| {
        (r.transport, r.notify, r.in_flight) == (t, n, in_flight) && payload.is_none_or(|p| r.payload == p)
    })
}

/// The payloads of the transports other than raw, sorted.
fn payloads(all: &[Record]) -> Vec<usize> {
    sorted(
        all.iter()
            .filter(|r| r.transport != TransportKind::Raw)
            .map(|r| r.payload),
    )
}

/// The best pipelined rate of `transport` (any notification with `notify` `None`) at `payload`.
fn best(all: &[Record], transport: TransportKind, notify: Option<Notify>, payload: usize) -> Option<&Record> {
    all.iter()
        .filter(|r| r.transport == transport && notify.is_none_or(|n| r.notify == n))
        .filter(|r| r.payload == payload && r.in_flight > 1)
        .max_by(|a, b| a.requests_per_sec.total_cmp(&b.requests_per_sec))
}

/// The table, then shm against TCP.
pub fn table(all: &[Record]) {
    println!(
        "notify: spin = busy-poll; default = ShmConfig::default() (spin 50 us, then eventfd); poll = blocking TCP. copied B: value bytes copied into the transport's memory, whole run; refd B/r: value bytes referenced in place per round trip (both directions).\n"
    );
    let mut t = Table::new([
        "trans", "notify", "payload", "inflight", "p50 ns", "p99 ns", "p99.9 ns", "req/s", "cli us/r",
        "srv us/r", "copied B", "refd B/r", "sleeps/r",
    ]);
    for r in all {
        t.row([
            r.transport.name().to_owned(),
            r.notify.name().to_owned(),
            bytes_label(r.payload as f64),
            r.in_flight.to_string(),
            format!("{:.0}", r.p50_ns),
            format!("{:.0}", r.p99_ns),
            format!("{:.0}", r.p999_ns),
            format!("{:.0}", r.requests_per_sec),
            format!("{:.3}", r.client_cpu_us_per_req),
            format!("{:.3}", r.server_cpu_us_per_req),
            r.bytes_copied_in.to_string(),
            format!("{:.1}", r.bytes_referenced_per_req),
            r.sleeps_per_req.map_or("-".to_owned(), |v| format!("{v:.4}")),
        ]);
    }
    t.print();

    let payloads = payloads(all);
    let Some(&small) = payloads.first() else {
        return;
    };
    let in_flights = sorted(all.iter().filter(|r| r.in_flight > 1).map(|r| r.in_flight));
    let runs = payloads
        .iter()
        .map(|&p| (p, 1))
        .chain(in_flights.iter().map(|&n| (small, n)));
    println!("Shared memory against TCP loopback (same client and server code):");
    let mut t = Table::new([
        "payload",
        "in flight",
        "shm",
        "tcp",
        "p50 shm ns",
        "p50 tcp ns",
        "tcp/shm",
        "req/s shm",
        "req/s tcp",
        "shm/tcp",
    ]);
    for ((payload, n), (shm_n, tcp_n)) in runs.flat_map(|run| PAIRS.map(|pair| (run, pair))) {
        let (Some(s), Some(c)) = (
            find(all, TransportKind::Shm, shm_n, Some(payload), n),
            find(all, TransportKind::Tcp, tcp_n, Some(payload), n),
        ) else {
            continue;
        };
        t.row([
            bytes_label(payload as f64),
            n.to_string(),
            shm_n.name().to_owned(),
            tcp_n.name().to_owned(),
            format!("{:.0}", s.p50_ns),
            format!("{:.0}", c.p50_ns),
            format!("{:.1}x", c.p50_ns / s.p50_ns),
            format!("{:.0}", s.requests_per_sec),
            format!("{:.0}", c.requests_per_sec),
            format!("{:.1}x", s.requests_per_sec / c.requests_per_sec),
        ]);
    }
    t.print();
}

/// Issue 11's targets, for shm spin (the latency configuration) and default.
pub fn targets(all: &[Record]) -> Vec<Target> {
    let payloads = payloads(all);
    let (Some(&small), Some(&large)) = (payloads.first(), payloads.last()) else {
        return Vec::new();
    };
    let (small_label, large_label) = (bytes_label(small as f64), bytes_label(large as f64));
    let raw = find(all, TransportKind::Raw, Notify::Spin, None, 1);
    let mut targets = Vec::new();
    for notify in [Notify::Spin, Notify::Default] {
        let n = notify.name();
        let s = find(all, TransportKind::Shm, notify, Some(small), 1);
        let l = find(all, TransportKind::Shm, notify, Some(large), 1);
        // `a`'s p50 over `b`'s, at most `goal`.
        let mut p50s = |a: &Record, b: &Record, a_name: &str, b_name: &str, goal: f64| {
            let what = format!(
                "shm {n} {a_name} / {b_name} ({:.0} / {:.0} ns)",
                a.p50_ns, b.p50_ns
            );
            targets.push(Target::ratio(what, Some(a.p50_ns / b.p50_ns), false, goal));
        };
        if let (Some(s), Some(raw)) = (s, raw) {
            p50s(s, raw, &format!("{small_label} p50"), "raw p50", TARGET_VS_RAW);
        }
        if let (Some(s), Some(l), true) = (s, l, large != small) {
            p50s(
                l,
                s,
                &format!("{large_label} p50"),
                &format!("{small_label} p50"),
                TARGET_4K_VS_64,
            );
        }
        let Some(b) = best(all, TransportKind::Shm, Some(notify), small) else {
            continue;
        };
        targets.push(Target {
            what: format!(
                "shm {n} {small_label} requests/s, best at {} in flight",
                b.in_flight
            ),
            goal: format!(">= {:.0} M", TARGET_RPS / 1e6),
            measured: format!("{:.2} M", b.requests_per_sec / 1e6),
            met: Some(b.requests_per_sec >= TARGET_RPS),
        });
        if let Some(t) = best(all, TransportKind::Tcp, None, small) {
            let what = format!(
                "shm {n} {small_label} best requests/s / tcp's best ({} {} in flight, {:.0})",
                t.notify.name(),
                t.in_flight,
                t.requests_per_sec
            );
            let x = b.requests_per_sec / t.requests_per_sec;
            targets.push(Target::ratio(what, Some(x), true, TARGET_VS_TCP));
        }
    }
    targets
}

/// Requests/s and p50 against requests in flight at the smallest payload; p50 and p99.9
/// against payload at one in flight.
pub fn plot(all: &[Record], path: &Path) -> Result<(), BoxError> {
    let labels = unique(all.iter().map(|r| (r.transport, r.notify)));
    let small = payloads(all).first().copied().unwrap_or(64);
    let panel = |title: String, by_in_flight: bool, y_label: &str, y: fn(&Record) -> f64| {
        let keep = |r: &Record| match by_in_flight {
            true => r.payload == small || r.transport == TransportKind::Raw,
            false => r.in_flight == 1,
        };
        let x = |r: &Record| if by_in_flight { r.in_flight } else { r.payload } as f64;
        let series = labels
            .iter()
            .map(|&(t, n)| {
                let mut points: Vec<(f64, f64)> = all
                    .iter()
                    .filter(|r| r.transport == t && r.notify == n && keep(r))
                    .map(|r| (x(r), y(r)))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                plot::Series {
                    name: format!("{} {}", t.name(), n.name()),
                    points,
                }
            })
            .collect();
        let (x_label, x_axis) = match by_in_flight {
            true => ("requests in flight", plot::XAxis::Count),
            false => ("payload (raw: its 8-byte sequence number)", plot::XAxis::Bytes),
        };
        plot::Panel {
            title,
            x_label: x_label.to_owned(),
            x_axis,
            y_label: y_label.to_owned(),
            series,
        }
    };
    let small = bytes_label(small as f64);
    let panels = [
        panel(format!("requests/s, {small}"), true, "requests/s", |r| {
            r.requests_per_sec
        }),
        panel(format!("round trip p50, {small}"), true, "ns", |r| r.p50_ns),
        panel("round trip p50, 1 in flight".to_owned(), false, "ns", |r| {
            r.p50_ns
        }),
        panel("round trip p99.9, 1 in flight".to_owned(), false, "ns", |r| {
            r.p999_ns
        }),
    ];
    plot::log_log_svg(
        path,
        "Ferry request/response: raw shared memory, ferry-shm, ferry-net TCP loopback",
        2,
        &panels,
    )
}
