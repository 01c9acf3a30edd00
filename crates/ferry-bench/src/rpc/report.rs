//! What `ferry bench rpc` writes, prints and draws: a configuration's medians over its
//! repetitions (its record), the table and the comparisons with raw, the targets as
//! ratios of figures from the same run, and the plot.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::plan::{ECHO, Fields, ONE_KIB, Point, SMALL, System, Transport};
use super::{Measured, stream};
#[cfg(test)]
use crate::harness::Histogram;
use crate::harness::lifecycle::Target;
use crate::harness::table::Table;
use crate::harness::{Link, Named};
use crate::harness::{median, paired, round, sorted};
use crate::{BoxError, plot};

/// The in-flight count of the comparison with tonic, and of the 64 B throughput target.
const VS_TONIC_IN_FLIGHT: usize = 16;
const SMALL_RATE_IN_FLIGHT: usize = 128;

/// Everything a run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Records {
    /// The echo: one per configuration, in table order.
    pub(super) records: Vec<Record>,
    /// The streaming section: one per configuration, in table order (none in results written
    /// before it existed).
    #[serde(default)]
    pub(super) streams: Vec<stream::Record>,
}

/// A configuration's medians over its repetitions (and each repetition's p50 and calls/s).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Record {
    #[serde(flatten)]
    pub(super) point: Point,
    payload: usize,
    reps: usize,
    calls: u64,
    /// Latencies recorded, over every repetition.
    samples: u64,
    p50_ns: f64,
    p99_ns: f64,
    p999_ns: f64,
    mean_ns: f64,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    p50_ns_reps: Vec<f64>,
    calls_per_sec: f64,
    calls_per_sec_reps: Vec<f64>,
    server_cpu_ns_per_call: f64,
    client_cpu_ns_per_call: f64,
    /// Syscalls per call on each side, where the run counted them (issue 33's datagram
    /// comparison; absent from records written before it and from runs without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_syscalls_per_call: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_syscalls_per_call: Option<f64>,
}

/// `point`'s record from its repetitions `runs`.
pub(super) fn summarize(point: Point, runs: &[Measured]) -> Record {
    let med = |f: &dyn Fn(&Measured) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    let q = |m: &Measured, q: f64| m.latency.quantile(q).unwrap_or(0) as f64;
    let rate = |m: &Measured| m.calls as f64 / m.elapsed.as_secs_f64().max(1e-9);
    let per_call = |cpu: Duration, m: &Measured| cpu.as_nanos() as f64 / m.calls.max(1) as f64;
    Record {
        point,
        payload: point.fields.bytes(),
        reps: runs.len(),
        calls: med(&|m| m.calls as f64) as u64,
        samples: runs.iter().map(|m| m.latency.count()).sum(),
        p50_ns: med(&|m| q(m, 0.5)),
        p99_ns: med(&|m| q(m, 0.99)),
        p999_ns: med(&|m| q(m, 0.999)),
        mean_ns: round(med(&|m| m.latency.mean().unwrap_or(0.0)), 1),
        min_ns: runs.iter().filter_map(|m| m.latency.min()).min(),
        max_ns: runs.iter().filter_map(|m| m.latency.max()).max(),
        p50_ns_reps: runs.iter().map(|m| q(m, 0.5)).collect(),
        calls_per_sec: round(med(&rate), 0),
        calls_per_sec_reps: runs.iter().map(|m| round(rate(m), 0)).collect(),
        server_cpu_ns_per_call: round(med(&|m| per_call(m.server_cpu, m)), 1),
        client_cpu_ns_per_call: round(med(&|m| per_call(m.client_cpu, m)), 1),
        server_syscalls_per_call: syscalls_per_call(runs, |m| m.server_syscalls),
        client_syscalls_per_call: syscalls_per_call(runs, |m| m.client_syscalls),
    }
}

/// The median over `runs` of one side's syscalls per call, if every run counted them.
fn syscalls_per_call(runs: &[Measured], side: impl Fn(&Measured) -> Option<u64>) -> Option<f64> {
    let per_call: Option<Vec<f64>> = runs
        .iter()
        .map(|m| side(m).map(|n| n as f64 / m.calls.max(1) as f64))
        .collect();
    median(&per_call?).map(|v| round(v, 3))
}

/// Both sides' syscalls per call, if counted.
fn syscalls_both(r: &Record) -> Option<f64> {
    Some(r.server_syscalls_per_call? + r.client_syscalls_per_call?)
}

/// Calls/s of `a` over `b`'s, [`paired`].
fn rate_ratio(a: &Record, b: &Record) -> f64 {
    paired(&a.calls_per_sec_reps, &b.calls_per_sec_reps)
}

fn find(all: &[Record], system: System, transport: Transport, fields: Fields, n: usize) -> Option<&Record> {
    let want = Point {
        system,
        transport,
        fields,
        in_flight: n,
        link: Link::Plain,
    };
    all.iter().find(|r| r.point == want)
}

/// The echo payloads, transports and in-flight counts the event-loop systems ran at.
fn loop_points(all: &[Record]) -> Vec<(Transport, Fields, usize)> {
    let counts = sorted(
        all.iter()
            .filter(|r| r.point.system.on_loop())
            .map(|r| r.point.in_flight),
    );
    // The default transports always (what was not run shows as such), others if they ran.
    let transports = sorted(
        Transport::DEFAULT
            .into_iter()
            .chain(all.iter().map(|r| r.point.transport)),
    );
    let mut out = Vec::new();
    for transport in transports {
        for fields in [ECHO, ONE_KIB] {
            out.extend(counts.iter().map(|&n| (transport, fields, n)));
        }
    }
    out
}

fn ns(v: f64) -> String {
    format!("{v:.0}")
}

/// The table (one row per configuration), then the comparisons with raw and what the targets
/// rest on.
pub(super) fn table(all: &[Record]) {
    print_table(all);
    println!(
        "Against the no-serialization echo: calls/s / raw's (same transport, payload and in flight), and raw p50 / ferry-hybrid p50; medians of per-repetition ratios:"
    );
    let peers: Vec<System> = System::on_loops().skip(1).collect();
    let mut header = ["trans", "payload", "inflight", "raw calls/s"]
        .map(str::to_owned)
        .to_vec();
    header.extend(peers.iter().map(|&s| s.name()));
    header.push("raw p50 / hybrid p50".to_owned());
    let mut t = Table::new(header);
    for (transport, fields, n) in loop_points(all) {
        let Some(raw) = find(all, System::Raw, transport, fields, n) else {
            continue;
        };
        let versus = |s| {
            find(all, s, transport, fields, n)
                .map_or("-".to_owned(), |r| format!("{:.2}", rate_ratio(r, raw)))
        };
        let p50 = find(all, System::FerryHybrid, transport, fields, n).map_or("-".to_owned(), |h| {
            format!("{:.2}", paired(&raw.p50_ns_reps, &h.p50_ns_reps))
        });
        let mut row = vec![
            transport.name(),
            fields.label(),
            n.to_string(),
            ns(raw.calls_per_sec),
        ];
        row.extend(peers.iter().map(|&s| versus(s)));
        row.push(p50);
        t.row(row);
    }
    t.print();
    let tonic = |n| {
        let h = find(all, System::FerryHybrid, Transport::Tcp, ECHO, n)?;
        Some((h, find(all, System::Tonic, Transport::Tcp, ECHO, n)?))
    };
    for n in [1, VS_TONIC_IN_FLIGHT] {
        if let Some((h, t)) = tonic(n) {
            println!(
                "ferry-hybrid tcp / tonic, {}, {n} in flight: {:.0} / {:.0} calls/s (medians), {:.2}x; p50 {:.0} / {:.0} ns",
                ECHO.label(),
                h.calls_per_sec,
                t.calls_per_sec,
                rate_ratio(h, t),
                h.p50_ns,
                t.p50_ns
            );
        }
    }
    tls_table(all);
    syscall_table(all);
    let small = find(all, System::FerryHybrid, Transport::Shm, SMALL, 1);
    let ping = all.iter().find(|r| r.point.system == System::PingPong);
    if let (Some(s), Some(p)) = (small, ping) {
        let join = |v: &[f64]| v.iter().map(|x| ns(*x)).collect::<Vec<_>>().join(", ");
        println!(
            "ferry-hybrid shm {} p50 at 1 in flight, per repetition, ns: {} against the ping-pong's {} (a ping-pong well above the fastest one ran with the two vCPUs placed far apart on the host)",
            SMALL.label(),
            join(&s.p50_ns_reps),
            join(&p.p50_ns_reps)
        );
    }
    println!();
}

/// `--tls`: each configuration run over TLS beside its plaintext run (calls/s and server CPU
/// per call, and their ratios, medians of per-repetition ratios).
fn tls_table(all: &[Record]) {
    let pairs: Vec<(&Record, &Record)> = all
        .iter()
        .filter(|r| r.point.link == Link::Tls)
        .filter_map(|tls| {
            let plain = Point {
                link: Link::Plain,
                ..tls.point
            };
            Some((all.iter().find(|r| r.point == plain)?, tls))
        })
        .collect();
    if pairs.is_empty() {
        return;
    }
    println!(
        "TLS against plaintext (tcp, same server loop; TLS's cost: calls/s TLS / plain, server CPU per call TLS / plain):"
    );
    let mut t = Table::new([
        "system",
        "payload",
        "inflight",
        "plain calls/s",
        "TLS calls/s",
        "TLS / plain",
        "srv ns/call plain",
        "srv ns/call TLS",
        "TLS / plain",
    ]);
    for (plain, tls) in pairs {
        t.row([
            tls.point.system.name(),
            tls.point.fields.label(),
            tls.point.in_flight.to_string(),
            ns(plain.calls_per_sec),
            ns(tls.calls_per_sec),
            format!("{:.2}", rate_ratio(tls, plain)),
            ns(plain.server_cpu_ns_per_call),
            ns(tls.server_cpu_ns_per_call),
            format!(
                "{:.2}",
                tls.server_cpu_ns_per_call / plain.server_cpu_ns_per_call.max(f64::MIN_POSITIVE)
            ),
        ]);
    }
    t.print();
}

/// Where syscalls were counted (a run with a datagram transport): each configuration's
/// syscalls per call on each side, beside its calls/s and CPU per call.
fn syscall_table(all: &[Record]) {
    let counted: Vec<&Record> = all.iter().filter(|r| syscalls_both(r).is_some()).collect();
    if counted.is_empty() {
        return;
    }
    println!("Syscalls per call (each thread's, counted by the kernel over the window; medians):");
    let mut t = Table::new([
        "system",
        "trans",
        "payload",
        "inflight",
        "calls/s",
        "srv ns/call",
        "cli ns/call",
        "srv syscalls",
        "cli syscalls",
    ]);
    for r in counted {
        let count = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        t.row([
            r.point.system.name(),
            r.point.transport.name(),
            r.point.fields.label(),
            r.point.in_flight.to_string(),
            ns(r.calls_per_sec),
            ns(r.server_cpu_ns_per_call),
            ns(r.client_cpu_ns_per_call),
            count(r.server_syscalls_per_call),
            count(r.client_syscalls_per_call),
        ]);
    }
    t.print();
}

/// The table alone: one row per configuration.
pub(super) fn print_table(all: &[Record]) {
    let mut t = Table::new([
        "system",
        "trans",
        "payload",
        "inflight",
        "p50 ns",
        "p99 ns",
        "p99.9 ns",
        "calls/s",
        "srv ns/call",
        "cli ns/call",
    ]);
    for r in all {
        t.row([
            r.point.system.name(),
            format!("{}{}", r.point.transport.name(), r.point.link.suffix()),
            r.point.fields.label(),
            r.point.in_flight.to_string(),
            ns(r.p50_ns),
            ns(r.p99_ns),
            ns(r.p999_ns),
            ns(r.calls_per_sec),
            ns(r.server_cpu_ns_per_call),
            ns(r.client_cpu_ns_per_call),
        ]);
    }
    t.print();
}

/// The targets (issue 10 §6), each ratio the median over repetitions of the ratio
/// within a repetition.
pub(super) fn targets(all: &[Record]) -> Vec<Target> {
    let hybrid = |t, f, n| find(all, System::FerryHybrid, t, f, n);
    let mut targets = vec![Target::ratio(
        format!(
            "ferry-hybrid tcp / tonic, calls/s, {}, {VS_TONIC_IN_FLIGHT} in flight",
            ECHO.label()
        ),
        hybrid(Transport::Tcp, ECHO, VS_TONIC_IN_FLIGHT)
            .zip(find(all, System::Tonic, Transport::Tcp, ECHO, VS_TONIC_IN_FLIGHT))
            .map(|(h, t)| rate_ratio(h, t)),
        true,
        5.0,
    )];
    let vs_raw = |(transport, fields, n): (Transport, Fields, usize)| {
        let (h, r) = (
            hybrid(transport, fields, n)?,
            find(all, System::Raw, transport, fields, n)?,
        );
        let what = format!("{} {}, {n} in flight", transport.name(), fields.label());
        Some((what, Some(rate_ratio(h, r))))
    };
    let mut pairs: Vec<_> = loop_points(all).into_iter().filter_map(vs_raw).collect();
    if pairs.is_empty() {
        pairs.push(("every configuration".to_owned(), None));
    }
    for (what, ratio) in pairs {
        let what = format!("ferry-hybrid / raw calls/s, {what}");
        targets.push(Target::ratio(what, ratio, true, 0.9));
    }
    // Issue 33: UDP against TCP for the 64 B echo at 128 in flight, when UDP ran.
    if let Some(udp) = hybrid(Transport::Udp, SMALL, SMALL_RATE_IN_FLIGHT) {
        let tcp = hybrid(Transport::Tcp, SMALL, SMALL_RATE_IN_FLIGHT);
        let what = |of: &str| {
            format!(
                "ferry-hybrid udp / tcp {of}, {}, {SMALL_RATE_IN_FLIGHT} in flight",
                SMALL.label()
            )
        };
        targets.push(Target::ratio(
            what("calls/s"),
            tcp.map(|t| rate_ratio(udp, t)),
            true,
            1.5,
        ));
        let cpu = |r: &Record| r.server_cpu_ns_per_call + r.client_cpu_ns_per_call;
        targets.push(Target::ratio(
            what("CPU per call (both sides)"),
            tcp.map(|t| cpu(udp) / cpu(t)),
            false,
            1.0,
        ));
    }
    // Issue 33: AF_XDP against UDP in syscalls per call (both sides), the 64 B echo at every
    // in-flight count AF_XDP ran.
    let xdp_counts = sorted(
        all.iter()
            .filter(|r| (r.point.transport, r.point.fields) == (Transport::Xdp, SMALL))
            .map(|r| r.point.in_flight),
    );
    for n in xdp_counts {
        let (Some(xdp), udp) = (hybrid(Transport::Xdp, SMALL, n), hybrid(Transport::Udp, SMALL, n)) else {
            continue;
        };
        targets.push(Target::ratio(
            format!(
                "ferry-hybrid xdp / udp syscalls per call (both sides), {}, {n} in flight",
                SMALL.label()
            ),
            udp.and_then(|u| Some(syscalls_both(xdp)? / syscalls_both(u)?.max(f64::MIN_POSITIVE))),
            false,
            0.5,
        ));
    }
    let ping = all.iter().find(|r| r.point.system == System::PingPong);
    targets.push(Target::ratio(
        format!(
            "ferry-hybrid shm {} p50, 1 in flight / raw ping-pong p50",
            SMALL.label()
        ),
        hybrid(Transport::Shm, SMALL, 1)
            .zip(ping)
            .map(|(s, p)| paired(&s.p50_ns_reps, &p.p50_ns_reps)),
        false,
        5.0,
    ));
    let rate = hybrid(Transport::Shm, SMALL, SMALL_RATE_IN_FLIGHT).map(|r| r.calls_per_sec);
    targets.push(Target {
        what: format!(
            "ferry-hybrid shm {}, {SMALL_RATE_IN_FLIGHT} in flight, calls/s",
            SMALL.label()
        ),
        goal: ">= 3 M".to_owned(),
        measured: rate.map_or("not measured".to_owned(), |r| format!("{:.2} M", r / 1e6)),
        met: rate.map(|r| r >= 3e6),
    });
    targets
}

/// The plot: p99 against calls/s per system (Cornflakes Figure 2), one panel per transport and
/// payload; the 64 B call beside the ping-pong; p50 at one in flight against payload; then
/// the streaming section's panels. A section with no records has no panels.
pub(super) fn plot(path: &Path, records: &Records) -> Result<(), BoxError> {
    let all = &records.records[..];
    let series = |keep: &dyn Fn(&Record) -> bool,
                  line: &dyn Fn(&Record) -> String,
                  xy: &dyn Fn(&Record) -> (f64, f64)| {
        plot::series(all.iter().filter(|r| keep(r)), |r| line(r), |r| xy(r))
    };
    let system = |r: &Record| format!("{}{}", r.point.system.name(), r.point.link.suffix());
    let fig2 = |transport: Transport, fields: Fields| plot::Panel {
        title: format!("{}, {}: p99 against calls/s", transport.name(), fields.label()),
        x_label: "calls/s (points: 1, 16, 128 in flight)".to_owned(),
        x_axis: plot::XAxis::Count,
        y_label: "p99 round trip, ns".to_owned(),
        series: series(
            &|r| r.point.transport == transport && r.point.fields == fields,
            &system,
            &|r| (r.calls_per_sec, r.p99_ns),
        ),
    };
    let mut panels = vec![
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
                &|r| r.point.fields == SMALL || r.point.system == System::PingPong,
                &system,
                &|r| (r.calls_per_sec, r.p50_ns),
            ),
        },
        plot::Panel {
            title: "p50 at 1 in flight against payload".to_owned(),
            x_label: "payload (ping-pong: its 8-byte sequence number)".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "p50 round trip, ns".to_owned(),
            series: series(
                &|r| r.point.in_flight == 1,
                &|r| {
                    let p = &r.point;
                    format!("{} {}{}", p.system.name(), p.transport.name(), p.link.suffix())
                },
                &|r| (r.payload as f64, r.p50_ns),
            ),
        },
    ];
    if all.is_empty() {
        panels.clear();
    }
    panels.extend(stream::panels(&records.streams));
    plot::log_log_svg(
        path,
        "ferry bench rpc: echo over ferry-rpc (one server loop) against raw, peers, tonic and the ping-pong; streams",
        2,
        &panels,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn committed() -> (Value, Records) {
        crate::harness::lifecycle::committed("rpc-results.json")
    }

    #[test]
    fn the_committed_results_read_back_with_the_same_fields_and_values() {
        let (doc, records) = committed();
        assert_eq!(records.records.len(), 78);
        assert_eq!(serde_json::to_value(&records).unwrap()["records"], doc["records"]);
    }

    #[test]
    fn the_committed_stream_results_read_back_with_the_same_fields_and_values() {
        let (doc, records): (Value, Records) = crate::harness::lifecycle::committed("rpc-streams.json");
        assert!(records.records.is_empty(), "a run of the streams alone");
        assert_eq!(records.streams.len(), 12);
        assert_eq!(serde_json::to_value(&records).unwrap()["streams"], doc["streams"]);
        let verdicts: Vec<&str> = stream::targets(&records.streams)
            .iter()
            .map(|t| t.verdict())
            .collect();
        // GB/s against tonic (TCP download, upload; shm download, upload), then the four
        // ping-pongs against the unary call.
        assert_eq!(
            verdicts,
            ["MISSED", "MISSED", "MISSED", "met", "met", "met", "met", "met"]
        );
    }

    #[test]
    fn results_from_before_the_streams_read_back_without_them() {
        let (doc, records) = committed();
        assert!(doc.get("streams").is_none());
        assert!(records.streams.is_empty());
    }

    #[test]
    fn targets_are_met_missed_or_not_measured() {
        let (_, Records { records, .. }) = committed();
        let verdicts = |all: &[Record]| -> Vec<(String, &'static str)> {
            targets(all)
                .iter()
                .map(|t| (t.what.clone(), t.verdict()))
                .collect()
        };
        let all = verdicts(&records);
        assert_eq!(all.len(), 1 + 12 + 2);
        assert_eq!(all[0].1, "met", "{all:?}");
        let vs_raw = |what: &str| all.iter().find(|(w, _)| w.ends_with(what)).unwrap().1;
        assert_eq!(vs_raw("raw calls/s, tcp 2 x 2 KiB, 16 in flight"), "met");
        assert_eq!(vs_raw("raw calls/s, tcp 1 KiB, 128 in flight"), "MISSED");
        assert_eq!(all[13].1, "MISSED", "{all:?}");
        assert_eq!(all[14].1, "MISSED", "{all:?}");
        let raw_only: Vec<Record> = records
            .into_iter()
            .filter(|r| r.point.system == System::Raw)
            .collect();
        let none = verdicts(&raw_only);
        assert_eq!(none.len(), 4, "{none:?}");
        assert!(none.iter().all(|(_, v)| *v == "not measured"), "{none:?}");
    }

    #[test]
    fn a_record_is_the_median_over_repetitions() {
        let run = |calls: u64, ms: u64, latency_ns: u64| {
            let mut latency = Histogram::default();
            (0..calls).for_each(|_| latency.record(latency_ns));
            Measured {
                calls,
                elapsed: Duration::from_millis(ms),
                latency,
                client_cpu: Duration::from_millis(ms),
                server_cpu: Duration::from_millis(ms / 2),
                client_syscalls: Some(calls * 2),
                server_syscalls: None,
            }
        };
        let point = Point {
            system: System::FerryHybrid,
            transport: Transport::Shm,
            fields: ECHO,
            in_flight: 1,
            link: Link::Plain,
        };
        let r = summarize(
            point,
            &[run(100, 10, 500), run(300, 10, 1000), run(200, 10, 1500)],
        );
        assert_eq!((r.payload, r.reps, r.calls, r.samples), (4096, 3, 200, 600));
        assert_eq!(r.calls_per_sec, 20_000.0);
        assert_eq!(r.calls_per_sec_reps, [10_000.0, 30_000.0, 20_000.0]);
        // Exact below 2048 ns (three significant digits).
        assert_eq!(r.p50_ns, 1000.0);
        assert_eq!(r.p50_ns_reps, [500.0, 1000.0, 1500.0]);
        assert_eq!((r.min_ns, r.max_ns), (Some(500), Some(1500)));
        // 10 ms over 100, 300 and 200 calls: 100,000, 33,333.3 and 50,000 ns a call.
        assert_eq!(r.client_cpu_ns_per_call, 50_000.0);
        assert_eq!(r.server_cpu_ns_per_call, 25_000.0);
        // Two syscalls a call on the client; none counted on the server.
        assert_eq!(
            (r.client_syscalls_per_call, r.server_syscalls_per_call),
            (Some(2.0), None)
        );
    }
}
