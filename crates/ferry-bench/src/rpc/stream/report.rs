//! What the streaming section writes, prints and draws: a configuration's medians over its
//! repetitions (its record), the table, the targets as ratios of figures from the
//! same run, and the plot's panels.

use serde::{Deserialize, Serialize};

use super::{CHUNK, PING_SIZES, Shape, StreamConfig, StreamMeasured};
use crate::harness::Named;
use crate::harness::lifecycle::Target;
use crate::harness::table::Table;
use crate::harness::{median, paired, round};
use crate::plot::{self, bytes_label};
use crate::rpc::plan::{System, Transport};

/// Bytes in a GB (GB/s and CPU per GB are decimal).
const GB: f64 = 1e9;

/// A streaming configuration's medians over its repetitions (and each repetition's GB/s and
/// p50s, which the targets pair).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::rpc) struct Record {
    #[serde(flatten)]
    pub(in crate::rpc) config: StreamConfig,
    reps: usize,
    /// Payload bytes one run carried (one way; both ways for a ping-pong).
    bytes: u64,
    gb_per_sec: f64,
    gb_per_sec_reps: Vec<f64>,
    /// Each side's thread CPU time over the stream, per GB carried.
    client_cpu_ms_per_gb: f64,
    server_cpu_ms_per_gb: f64,
    /// Ping-pong: per round trip (one message each way).
    p50_ns: Option<f64>,
    p99_ns: Option<f64>,
    p50_ns_reps: Vec<f64>,
    /// Ping-pong over Ferry: the unary call of the same message, same connection.
    unary_p50_ns: Option<f64>,
    unary_p50_ns_reps: Vec<f64>,
    /// Messages that reached the client's (server's) code copied rather than in place, per
    /// run (median): Ferry over shared memory only.
    client_copied: u64,
    server_copied: u64,
}

/// `config`'s record from its repetitions `runs`.
pub(in crate::rpc) fn summarize(config: StreamConfig, runs: &[StreamMeasured]) -> Record {
    let med = |f: &dyn Fn(&StreamMeasured) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let rate = |m: &StreamMeasured| m.bytes as f64 / GB / m.elapsed.as_secs_f64().max(1e-9);
    let per_gb = |cpu: std::time::Duration, m: &StreamMeasured| {
        cpu.as_secs_f64() * 1e3 / (m.bytes as f64 / GB).max(1e-12)
    };
    let p50 = |h: &crate::harness::Histogram| h.quantile(0.5).map(|v| v as f64);
    let reps = |f: &dyn Fn(&StreamMeasured) -> Option<f64>| runs.iter().filter_map(f).collect::<Vec<_>>();
    let p50_ns_reps = reps(&|m| p50(&m.round_trips));
    let unary_p50_ns_reps = reps(&|m| p50(&m.unary));
    Record {
        config,
        reps: runs.len(),
        bytes: med(&|m| m.bytes as f64).unwrap_or(0.0) as u64,
        gb_per_sec: round(med(&rate).unwrap_or(0.0), 6),
        gb_per_sec_reps: runs.iter().map(|m| round(rate(m), 6)).collect(),
        client_cpu_ms_per_gb: round(med(&|m| per_gb(m.client_cpu, m)).unwrap_or(0.0), 1),
        server_cpu_ms_per_gb: round(med(&|m| per_gb(m.server_cpu, m)).unwrap_or(0.0), 1),
        p50_ns: median(&p50_ns_reps),
        p99_ns: median(&reps(&|m| m.round_trips.quantile(0.99).map(|v| v as f64))),
        p50_ns_reps,
        unary_p50_ns: median(&unary_p50_ns_reps),
        unary_p50_ns_reps,
        client_copied: med(&|m| m.client_copied as f64).unwrap_or(0.0) as u64,
        server_copied: med(&|m| m.server_copied as f64).unwrap_or(0.0) as u64,
    }
}

fn ns(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.0}"))
}

/// The table: one row per configuration.
pub(in crate::rpc) fn table(all: &[Record]) {
    println!(
        "Streams: a warm-up stream (a tenth), then the measured one, on a fresh connection per run; medians over repetitions; CPU per GB is each side's thread CPU time over the stream; p50/p99 per round trip (one message each way), unary p50: the same message as a unary call on the same connection; copied: messages a Ferry shared-memory reader got copied, not in place (client/server, per run)."
    );
    let mut t = Table::new([
        "system",
        "trans",
        "shape",
        "msgs",
        "size",
        "GB/s",
        "cli ms/GB",
        "srv ms/GB",
        "p50 ns",
        "p99 ns",
        "unary p50 ns",
        "copied cli/srv",
    ]);
    for r in all {
        let c = &r.config;
        t.row([
            c.system.name(),
            c.transport.name(),
            c.point.shape.name(),
            c.point.count.to_string(),
            bytes_label(c.point.size as f64),
            format!("{:.2}", r.gb_per_sec),
            format!("{:.0}", r.client_cpu_ms_per_gb),
            format!("{:.0}", r.server_cpu_ms_per_gb),
            ns(r.p50_ns),
            ns(r.p99_ns),
            ns(r.unary_p50_ns),
            match (c.system, c.transport) {
                (System::FerryHybrid, Transport::Shm) => format!("{}/{}", r.client_copied, r.server_copied),
                _ => "-".to_owned(),
            },
        ]);
    }
    t.print();
    println!();
}

fn find(all: &[Record], system: System, transport: Transport, shape: Shape, size: usize) -> Option<&Record> {
    all.iter().find(|r| {
        let c = &r.config;
        (c.system, c.transport, c.point.shape, c.point.size) == (system, transport, shape, size)
    })
}

/// The targets (issue 26 §6), each ratio the median over repetitions of the ratio
/// within a repetition: Ferry's GB/s over tonic's at 64 KiB (TCP >= 3x, shared memory >=
/// 10x, download and upload each), and the ping-pong's p50 per round trip over the unary
/// call's on the same transport (<= 1.1x).
pub(in crate::rpc) fn targets(all: &[Record]) -> Vec<Target> {
    let mut out = Vec::new();
    for (transport, goal) in [(Transport::Tcp, 3.0), (Transport::Shm, 10.0)] {
        for shape in [Shape::Download, Shape::Upload] {
            let ferry = find(all, System::FerryHybrid, transport, shape, CHUNK);
            let tonic = find(all, System::Tonic, Transport::Tcp, shape, CHUNK);
            let ratio = ferry
                .zip(tonic)
                .map(|(f, t)| paired(&f.gb_per_sec_reps, &t.gb_per_sec_reps));
            let what = format!(
                "ferry-hybrid {} / tonic GB/s, {} of {}",
                transport.name(),
                shape.name(),
                bytes_label(CHUNK as f64)
            );
            out.push(Target::ratio(what, ratio, true, goal));
        }
    }
    // The default transports always (what was not run shows as such), others if they ran.
    let transports = crate::harness::sorted(
        Transport::DEFAULT
            .into_iter()
            .chain(all.iter().map(|r| r.config.transport)),
    );
    for transport in transports {
        for size in PING_SIZES {
            let ratio = find(all, System::FerryHybrid, transport, Shape::PingPong, size)
                .filter(|r| !r.unary_p50_ns_reps.is_empty())
                .map(|r| paired(&r.p50_ns_reps, &r.unary_p50_ns_reps));
            let what = format!(
                "ferry-hybrid {} stream ping-pong {} p50 / unary call p50",
                transport.name(),
                bytes_label(size as f64)
            );
            out.push(Target::ratio(what, ratio, false, 1.1));
        }
    }
    out
}

/// The plot's panels: GB/s against message size per system, transport and shape; the
/// ping-pong's p50 per round trip against the unary call's.
pub(in crate::rpc) fn panels(all: &[Record]) -> Vec<plot::Panel> {
    if all.is_empty() {
        return Vec::new();
    }
    let who = |r: &Record| format!("{} {}", r.config.system.name(), r.config.transport.name());
    let size = |r: &Record| r.config.point.size as f64;
    let rates = plot::series(
        all,
        |r| format!("{} {}", who(r), r.config.point.shape.name()),
        |r| (size(r), r.gb_per_sec),
    );
    // The stream's p50 and the unary call's, of the records that have them.
    let p50s = all.iter().flat_map(|r| {
        [("stream", r.p50_ns), ("unary", r.unary_p50_ns)].map(|(what, p50)| p50.map(|p| (r, what, p)))
    });
    let latency = plot::series(
        p50s.flatten(),
        |(r, what, _)| format!("{} {what}", who(r)),
        |&(r, _, p)| (size(r), p),
    );
    vec![
        plot::Panel {
            title: "streams: GB/s against message size".to_owned(),
            x_label: "message size".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "GB/s".to_owned(),
            series: rates,
        },
        plot::Panel {
            title: "streams: ping-pong p50 against the unary call's".to_owned(),
            x_label: "message size".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "p50 round trip, ns".to_owned(),
            series: latency,
        },
    ]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rpc::stream::StreamPoint;

    fn config(system: System, transport: Transport, shape: Shape, size: usize) -> StreamConfig {
        StreamConfig {
            system,
            transport,
            point: StreamPoint {
                shape,
                size,
                count: 4,
            },
        }
    }

    /// A run that carried `mb` MB in `ms` ms, its round trips and unary calls all taking
    /// `rt_ns` and `unary_ns` (if given).
    fn run(mb: u64, ms: u64, rt_ns: Option<(u64, u64)>) -> StreamMeasured {
        let mut m = StreamMeasured {
            bytes: mb * 1_000_000,
            elapsed: Duration::from_millis(ms),
            client_cpu: Duration::from_millis(ms),
            server_cpu: Duration::from_millis(ms / 2),
            ..StreamMeasured::default()
        };
        if let Some((rt, unary)) = rt_ns {
            (0..4).for_each(|_| m.round_trips.record(rt));
            (0..4).for_each(|_| m.unary.record(unary));
        }
        m
    }

    #[test]
    fn a_record_is_the_median_over_repetitions() {
        let c = config(System::FerryHybrid, Transport::Tcp, Shape::PingPong, 64);
        let r = summarize(
            c,
            &[
                run(100, 100, Some((1000, 900))),
                run(100, 50, Some((2000, 1000))),
                run(100, 200, Some((1500, 1500))),
            ],
        );
        assert_eq!(r.gb_per_sec_reps, [1.0, 2.0, 0.5]);
        assert_eq!(r.gb_per_sec, 1.0);
        // 100 MB in 100 ms of CPU: 1000 ms per GB; the server half of it.
        assert_eq!((r.client_cpu_ms_per_gb, r.server_cpu_ms_per_gb), (1000.0, 500.0));
        assert_eq!(r.p50_ns_reps, [1000.0, 2000.0, 1500.0]);
        assert_eq!((r.p50_ns, r.unary_p50_ns), (Some(1500.0), Some(1000.0)));
        let download = summarize(
            config(System::Tonic, Transport::Tcp, Shape::Download, CHUNK),
            &[run(10, 10, None)],
        );
        assert_eq!((download.p50_ns, download.unary_p50_ns), (None, None));
    }

    #[test]
    fn targets_pair_ferry_with_tonic_and_the_stream_with_the_unary_call() {
        let mut all = Vec::new();
        for shape in [Shape::Download, Shape::Upload] {
            // tonic 1 GB/s; Ferry TCP 4 GB/s, shared memory 5 GB/s.
            all.push(summarize(
                config(System::Tonic, Transport::Tcp, shape, CHUNK),
                &[run(100, 100, None)],
            ));
            all.push(summarize(
                config(System::FerryHybrid, Transport::Tcp, shape, CHUNK),
                &[run(100, 25, None)],
            ));
            all.push(summarize(
                config(System::FerryHybrid, Transport::Shm, shape, CHUNK),
                &[run(100, 20, None)],
            ));
        }
        all.push(summarize(
            config(System::FerryHybrid, Transport::Tcp, Shape::PingPong, 64),
            &[run(1, 10, Some((1000, 1000)))],
        ));
        all.push(summarize(
            config(System::FerryHybrid, Transport::Shm, Shape::PingPong, 64),
            &[run(1, 10, Some((2000, 1000)))],
        ));
        let verdicts: Vec<(String, &str)> = targets(&all)
            .iter()
            .map(|t| (format!("{} {}", t.what, t.measured), t.verdict()))
            .collect();
        let expect = [
            ("ferry-hybrid tcp / tonic GB/s, download of 64 KiB 4.00x", "met"),
            ("ferry-hybrid tcp / tonic GB/s, upload of 64 KiB 4.00x", "met"),
            (
                "ferry-hybrid shm / tonic GB/s, download of 64 KiB 5.00x",
                "MISSED",
            ),
            ("ferry-hybrid shm / tonic GB/s, upload of 64 KiB 5.00x", "MISSED"),
            (
                "ferry-hybrid tcp stream ping-pong 64 B p50 / unary call p50 1.00x",
                "met",
            ),
            (
                "ferry-hybrid tcp stream ping-pong 4 KiB p50 / unary call p50 not measured",
                "not measured",
            ),
            (
                "ferry-hybrid shm stream ping-pong 64 B p50 / unary call p50 2.00x",
                "MISSED",
            ),
            (
                "ferry-hybrid shm stream ping-pong 4 KiB p50 / unary call p50 not measured",
                "not measured",
            ),
        ];
        let expect: Vec<(String, &str)> = expect.iter().map(|&(w, v)| (w.to_owned(), v)).collect();
        assert_eq!(verdicts, expect);
    }
}
