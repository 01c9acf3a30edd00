//! What `ferry bench flatbuffers` prints, writes and draws: medians over repetitions, the two
//! tables (serialization beside the paper's Table II; the ping-pong), the targets as
//! ratios of figures from the same run, and the plot (Figures 9-13).

use std::path::Path;

use serde_json::{Value, json};

use super::client::Measured;
use super::serialize::Counted;
use super::{Builder, RpcPoint, Sends, THREADS_SIZE, Transport, sends_name};
use crate::BoxError;
use crate::harness::{self, median};
use crate::plot::{self, bytes_label};

/// The targets (§4).
const TARGET_TIME_64K: f64 = 0.25;
const PAPER_TIME_64K: f64 = 0.28;
const TARGET_RPC_ALL: f64 = 1.0;
const TARGET_RPC_LARGE: f64 = 1.5;
const LARGE: usize = 64 << 10;

/// The paper's Table II: (library, source size, serialized size, allocations, total
/// allocation size, total copy size). Its FlatBuffers rows are the C++ builder's growth rule
/// (a 1 KiB first buffer growing by half).
const PAPER: [(&str, usize, usize, usize, usize, usize); 6] = [
    ("FlatBuffers C++", 1024, 1152, 2, 2560, 1024),
    ("zFlatBuffers C++", 1024, 1152, 1, 1280, 0),
    ("FlatBuffers C++", 16_384, 17_952, 8, 52_800, 32_944),
    ("zFlatBuffers C++", 16_384, 17_952, 5, 24_320, 0),
    ("FlatBuffers C++", 65_536, 71_712, 12, 184_112, 116_064),
    ("zFlatBuffers C++", 65_536, 71_712, 8, 98_048, 0),
];

/// The paper's Table II as JSON, for the results' settings.
pub(super) fn paper_json() -> Value {
    PAPER
        .iter()
        .map(|&(library, size, len, allocations, allocated, copied)| {
            json!({
                "library": library,
                "size": size,
                "serialized_len": len,
                "allocations": allocations,
                "allocated_bytes": allocated,
                "copied_bytes": copied,
            })
        })
        .collect()
}

/// The median over repetitions of `a[i] / b[i]` (both measured moments apart in one
/// repetition); the ratio of the medians if they differ in repetitions.
fn paired(a: &[f64], b: &[f64]) -> f64 {
    if a.len() == b.len() && !a.is_empty() {
        let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        return median(&ratios).unwrap_or(f64::NAN);
    }
    median(a).unwrap_or(f64::NAN) / median(b).unwrap_or(f64::NAN)
}

/// A builder (`None`: the memcpy floor) at a size: its counts and its median time per message.
#[derive(Debug, Clone)]
pub(super) struct SerializeRun {
    builder: Option<Builder>,
    size: usize,
    /// `None` for the floor.
    counted: Option<Counted>,
    ns: f64,
    ns_reps: Vec<f64>,
    pub(super) record: Value,
}

impl SerializeRun {
    /// The memcpy floor at `size`.
    pub(super) fn floor(size: usize, ns_reps: Vec<f64>) -> SerializeRun {
        let ns = median(&ns_reps).unwrap_or(f64::NAN);
        let record = json!({
            "part": "serialize",
            "builder": "memcpy",
            "size": size,
            "reps": ns_reps.len(),
            "ns_per_message": harness::round(ns, 1),
            "ns_per_message_reps": ns_reps.iter().map(|&v| harness::round(v, 1)).collect::<Vec<_>>(),
            "mb_per_sec": harness::round(size as f64 / ns * 1e3, 1),
        });
        SerializeRun {
            builder: None,
            size,
            counted: None,
            ns,
            ns_reps,
            record,
        }
    }

    /// `builder` at `size`.
    pub(super) fn new(builder: Builder, size: usize, counted: Counted, ns_reps: Vec<f64>) -> SerializeRun {
        let ns = median(&ns_reps).unwrap_or(f64::NAN);
        let record = json!({
            "part": "serialize",
            "builder": builder.name(),
            "size": size,
            "serialized_len": counted.len,
            "reps": ns_reps.len(),
            "ns_per_message": harness::round(ns, 1),
            "ns_per_message_reps": ns_reps.iter().map(|&v| harness::round(v, 1)).collect::<Vec<_>>(),
            "mb_per_sec": harness::round(counted.len as f64 / ns * 1e3, 1),
            "allocations": counted.allocations,
            "allocated_bytes": counted.allocated_bytes,
            "copied_bytes": counted.copied_bytes,
        });
        SerializeRun {
            builder: Some(builder),
            size,
            counted: Some(counted),
            ns,
            ns_reps,
            record,
        }
    }
}

/// A ping-pong configuration's medians over its repetitions.
#[derive(Debug, Clone)]
pub(super) struct RpcRun {
    point: RpcPoint,
    len: usize,
    rate: f64,
    rates: Vec<f64>,
    p50: f64,
    p99: f64,
    pub(super) record: Value,
}

impl RpcRun {
    pub(super) fn new(point: RpcPoint, len: usize, runs: &[Measured]) -> RpcRun {
        let q = |m: &Measured, q: f64| m.latency.value_at_quantile(q) as f64;
        let med = |f: &dyn Fn(&Measured) -> f64| {
            median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
        };
        let rates: Vec<f64> = runs.iter().map(|m| m.calls_per_sec).collect();
        let rate = median(&rates).unwrap_or(f64::NAN);
        let (p50, p99) = (med(&|m| q(m, 0.5)), med(&|m| q(m, 0.99)));
        let round = harness::round;
        let record = json!({
            "part": "rpc",
            "sweep": if point.thread_sweep { "threads" } else { "size" },
            "transport": point.transport.name(),
            "builder": sends_name(point.builder),
            "size": point.size,
            "serialized_len": len,
            "threads": point.threads,
            "reps": runs.len(),
            "calls": med(&|m| m.calls as f64) as u64,
            "calls_per_sec": round(rate, 0),
            "calls_per_sec_reps": rates.iter().map(|&r| round(r, 0)).collect::<Vec<_>>(),
            "mb_per_sec": round(rate * len as f64 / 1e6, 1),
            "p50_ns": p50,
            "p99_ns": p99,
            "p50_ns_reps": runs.iter().map(|m| q(m, 0.5)).collect::<Vec<_>>(),
            "p99_ns_reps": runs.iter().map(|m| q(m, 0.99)).collect::<Vec<_>>(),
        });
        RpcRun {
            point,
            len,
            rate,
            rates,
            p50,
            p99,
            record,
        }
    }
}

/// A record read back from a results file.
pub(super) enum Loaded {
    Serialize(SerializeRun),
    Rpc(RpcRun),
}

fn numbers(v: &Value) -> Option<Vec<f64>> {
    v.as_array()?.iter().map(Value::as_f64).collect()
}

pub(super) fn from_record(r: &Value) -> Option<Loaded> {
    let name = r["builder"].as_str()?;
    let builder = match name {
        "memcpy" | "prebuilt" => None,
        _ => Some(harness::by_name(&Builder::ALL, Builder::name, name)?),
    };
    let size = r["size"].as_u64()? as usize;
    match r["part"].as_str()? {
        "serialize" => Some(Loaded::Serialize(SerializeRun {
            builder,
            size,
            counted: match builder {
                None => None,
                Some(_) => Some(Counted {
                    len: r["serialized_len"].as_u64()? as usize,
                    allocations: r["allocations"].as_u64()? as usize,
                    allocated_bytes: r["allocated_bytes"].as_u64()? as usize,
                    copied_bytes: r["copied_bytes"].as_u64()? as usize,
                }),
            },
            ns: r["ns_per_message"].as_f64()?,
            ns_reps: numbers(&r["ns_per_message_reps"])?,
            record: r.clone(),
        })),
        "rpc" => Some(Loaded::Rpc(RpcRun {
            point: RpcPoint {
                transport: harness::by_name(&Transport::ALL, Transport::name, r["transport"].as_str()?)?,
                builder,
                size,
                threads: r["threads"].as_u64()? as usize,
                thread_sweep: r["sweep"].as_str()? == "threads",
            },
            len: r["serialized_len"].as_u64()? as usize,
            rate: r["calls_per_sec"].as_f64()?,
            rates: numbers(&r["calls_per_sec_reps"])?,
            p50: r["p50_ns"].as_f64()?,
            p99: r["p99_ns"].as_f64()?,
            record: r.clone(),
        })),
        _ => None,
    }
}

/// The loaded records, by part.
pub(super) fn split(all: Vec<Loaded>) -> (Vec<SerializeRun>, Vec<RpcRun>) {
    let (mut s, mut r) = (Vec::new(), Vec::new());
    for l in all {
        match l {
            Loaded::Serialize(x) => s.push(x),
            Loaded::Rpc(x) => r.push(x),
        }
    }
    (s, r)
}

fn find_ser(all: &[SerializeRun], builder: Option<Builder>, size: usize) -> Option<&SerializeRun> {
    all.iter().find(|s| s.builder == builder && s.size == size)
}

fn find_rpc(
    all: &[RpcRun],
    builder: Sends,
    transport: Transport,
    size: usize,
    threads: usize,
    sweep: bool,
) -> Option<&RpcRun> {
    all.iter().find(|r| {
        let p = &r.point;
        p.builder == builder
            && p.transport == transport
            && p.size == size
            && p.threads == threads
            && p.thread_sweep == sweep
    })
}

fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "MISSED" }
}

fn sizes<T>(all: &[T], size: impl Fn(&T) -> usize) -> Vec<usize> {
    let mut v: Vec<usize> = all.iter().map(size).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Both tables and the targets.
pub(super) fn print(ser: &[SerializeRun], rpc: &[RpcRun]) {
    if !ser.is_empty() {
        print_serialize(ser);
    }
    if !rpc.is_empty() {
        print_rpc(rpc);
    }
    print_targets(ser, rpc);
}

fn print_serialize(ser: &[SerializeRun]) {
    println!(
        "Serialization (Table II, Figure 9): per message. memcpy: the source copied into one buffer (the floor). Ratios per repetition, median: /memcpy for every row, ours over the stock builder used the same way (/fb) and over the reused one (/reused)."
    );
    println!(
        "{:>8} {:<27} {:>8} {:>9} {:>7} {:>7} {:>10} {:>9} {:>8} {:>7} {:>8}",
        "source",
        "builder",
        "bytes",
        "ns/msg",
        "MB/s",
        "allocs",
        "allocated",
        "copied",
        "/memcpy",
        "/fb",
        "/reused"
    );
    for size in sizes(ser, |s| s.size) {
        let floor = find_ser(ser, None, size);
        let reused = find_ser(ser, Some(Builder::FlatbuffersReused), size);
        for s in ser.iter().filter(|s| s.size == size) {
            let ratio = |base: Option<&SerializeRun>| match base {
                Some(b) => format!("{:.3}", paired(&s.ns_reps, &b.ns_reps)),
                None => String::new(),
            };
            let same_use = match s.builder {
                Some(Builder::ZflatbuffersFresh) => find_ser(ser, Some(Builder::FlatbuffersFresh), size),
                Some(Builder::ZflatbuffersReused) => reused,
                _ => None,
            };
            let counts = match s.counted {
                Some(c) => (
                    c.len.to_string(),
                    c.allocations.to_string(),
                    c.allocated_bytes.to_string(),
                    c.copied_bytes.to_string(),
                ),
                None => (size.to_string(), "-".into(), "-".into(), "-".into()),
            };
            let bytes = s.counted.map_or(size, |c| c.len);
            println!(
                "{:>8} {:<27} {:>8} {:>9.0} {:>7.0} {:>7} {:>10} {:>9} {:>8} {:>7} {:>8}",
                bytes_label(size as f64),
                s.builder.map_or("memcpy (floor)", Builder::name),
                counts.0,
                s.ns,
                bytes as f64 / s.ns * 1e3,
                counts.1,
                counts.2,
                counts.3,
                if s.builder.is_some() {
                    ratio(floor)
                } else {
                    String::new()
                },
                ratio(same_use),
                if s.builder.is_some_and(Builder::is_ours) {
                    ratio(reused)
                } else {
                    String::new()
                },
            );
        }
        for &(library, _, len, allocations, allocated, copied) in PAPER.iter().filter(|p| p.1 == size) {
            println!(
                "{:>8} {:<27} {:>8} {:>9} {:>7} {:>7} {:>10} {:>9}",
                "",
                format!("({library}, paper)"),
                len,
                "-",
                "-",
                allocations,
                allocated,
                copied
            );
        }
    }
    println!();
}

fn print_rpc(rpc: &[RpcRun]) {
    println!(
        "Ping-pong RPC (Figures 11-13): one call in flight per client thread, clients busy-polling. /fb: requests/s over the stock builder's used the same way (fresh or reused); /pre: over prebuilt's (the Record built once: no serialization per call). Per repetition, median."
    );
    println!(
        "{:<5} {:>8} {:>7} {:<20} {:>7} {:>9} {:>8} {:>9} {:>9} {:>6} {:>6}",
        "trans", "source", "threads", "sends", "bytes", "req/s", "MB/s", "p50 ns", "p99 ns", "/fb", "/pre"
    );
    for r in rpc {
        let p = &r.point;
        let ratio = |base: Sends| {
            find_rpc(rpc, base, p.transport, p.size, p.threads, p.thread_sweep)
                .map_or(String::new(), |b| format!("{:.3}", paired(&r.rates, &b.rates)))
        };
        let same_use = match p.builder {
            Some(Builder::ZflatbuffersFresh) => ratio(Some(Builder::FlatbuffersFresh)),
            Some(Builder::ZflatbuffersReused) => ratio(Some(Builder::FlatbuffersReused)),
            _ => String::new(),
        };
        println!(
            "{:<5} {:>8} {:>7} {:<20} {:>7} {:>9.0} {:>8.1} {:>9.0} {:>9.0} {:>6} {:>6}",
            p.transport.name(),
            bytes_label(p.size as f64),
            p.threads,
            sends_name(p.builder),
            r.len,
            r.rate,
            r.rate * r.len as f64 / 1e6,
            r.p50,
            r.p99,
            same_use,
            if p.builder.is_some() {
                ratio(None)
            } else {
                String::new()
            },
        );
    }
    println!();
}

fn print_targets(ser: &[SerializeRun], rpc: &[RpcRun]) {
    println!("Targets (issue §4), from this run:");
    let time_ratio = |ours: Builder, stock: Option<Builder>, size: usize| {
        find_ser(ser, Some(ours), size)
            .zip(find_ser(ser, stock, size))
            .map(|(o, s)| (o.ns, s.ns, paired(&o.ns_reps, &s.ns_reps)))
    };
    for (ours, stock, what) in [
        (
            Builder::ZflatbuffersFresh,
            Builder::FlatbuffersFresh,
            "fresh builders, the paper's setting",
        ),
        (
            Builder::ZflatbuffersReused,
            Builder::FlatbuffersReused,
            "reused builders",
        ),
    ] {
        if let Some((o, s, x)) = time_ratio(ours, Some(stock), 64 << 10) {
            println!(
                "  64 KiB Record build time, ours / flatbuffers, {what}: {o:.0} / {s:.0} ns, {x:.3}x (target <= {TARGET_TIME_64K}x, paper {PAPER_TIME_64K}x): {}",
                verdict(x <= TARGET_TIME_64K)
            );
        }
    }
    if let (Some(f), Some(fresh)) = (
        find_ser(ser, None, 64 << 10),
        find_ser(ser, Some(Builder::FlatbuffersFresh), 64 << 10),
    ) {
        println!(
            "    (the floor: copying the 64 KiB source into one buffer takes {:.0} ns, {:.3}x flatbuffers-fresh: no builder that copies the data can go under it)",
            f.ns,
            paired(&f.ns_reps, &fresh.ns_reps)
        );
    }
    let table_ii: Vec<(usize, usize)> = PAPER
        .iter()
        .filter(|p| p.0.starts_with('z'))
        .map(|p| (p.1, p.3))
        .collect();
    for b in [Builder::ZflatbuffersFresh, Builder::ZflatbuffersReused] {
        let rows: Vec<(usize, Counted, usize)> = table_ii
            .iter()
            .filter_map(|&(size, paper)| Some((size, find_ser(ser, Some(b), size)?.counted?, paper)))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let met = rows
            .iter()
            .all(|(_, c, paper)| c.allocations <= *paper && c.copied_bytes == 0);
        println!(
            "  {} allocations / bytes copied at {}: {} (target: 0 copied, allocations <= the paper's {}): {}",
            b.name(),
            rows.iter()
                .map(|r| bytes_label(r.0 as f64))
                .collect::<Vec<_>>()
                .join(" / "),
            rows.iter()
                .map(|(_, c, _)| format!("{} / {}", c.allocations, c.copied_bytes))
                .collect::<Vec<_>>()
                .join(", "),
            rows.iter()
                .map(|r| r.2.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
            verdict(met)
        );
    }
    for (ours, stock, what) in [
        (Builder::ZflatbuffersFresh, Builder::FlatbuffersFresh, "fresh"),
        (Builder::ZflatbuffersReused, Builder::FlatbuffersReused, "reused"),
    ] {
        if let Some((o, s, x)) = time_ratio(ours, Some(stock), 1 << 10) {
            println!(
                "  1 KiB Record build time, ours / flatbuffers, {what}: {o:.0} / {s:.0} ns, {x:.3}x (target <= 1.0): {}",
                verdict(x <= 1.0)
            );
        }
    }
    for transport in Transport::ALL {
        for (ours, stock, what) in [
            (
                Builder::ZflatbuffersReused,
                Builder::FlatbuffersReused,
                "reused builders, as a user would",
            ),
            (
                Builder::ZflatbuffersFresh,
                Builder::FlatbuffersFresh,
                "fresh builders",
            ),
        ] {
            // (size, requests/s ratio, prebuilt's requests/s and p50 ratios, p50 ratio stock / ours)
            let ratios: Vec<(usize, f64, (f64, f64), f64)> = sizes(rpc, |r| r.point.size)
                .into_iter()
                .filter_map(|size| {
                    let o = find_rpc(rpc, Some(ours), transport, size, 1, false)?;
                    let s = find_rpc(rpc, Some(stock), transport, size, 1, false)?;
                    let ceiling = find_rpc(rpc, None, transport, size, 1, false)
                        .map_or((f64::NAN, f64::NAN), |p| {
                            (paired(&p.rates, &s.rates), s.p50 / p.p50)
                        });
                    Some((size, paired(&o.rates, &s.rates), ceiling, s.p50 / o.p50))
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let all = ratios.iter().all(|r| r.1 >= TARGET_RPC_ALL);
            let large: Vec<&(usize, f64, (f64, f64), f64)> = ratios.iter().filter(|r| r.0 >= LARGE).collect();
            let large_met = large.iter().all(|r| r.1 >= TARGET_RPC_LARGE);
            println!(
                "  ping-pong {} requests/s, zflatbuffers / flatbuffers, {what}: {}",
                transport.name(),
                ratios
                    .iter()
                    .map(|(s, x, _, _)| format!("{} {x:.2}", bytes_label(*s as f64)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            println!(
                "    target >= {TARGET_RPC_ALL} at every size: {}; >= {TARGET_RPC_LARGE} at 64 KiB and above (paper: +53.6 % on zRPC): {}",
                verdict(all),
                if large.is_empty() {
                    "not measured"
                } else {
                    verdict(large_met)
                }
            );
            println!(
                "    (p50 round trip, flatbuffers / zflatbuffers, robust to the stalls that cut requests/s on a busy machine: {})",
                ratios
                    .iter()
                    .map(|(s, _, _, p)| format!("{} {p:.2}", bytes_label(*s as f64)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if what.starts_with("reused") {
                println!(
                    "    (the ceiling, prebuilt / flatbuffers, requests/s and p50 (flatbuffers' / prebuilt's): {})",
                    ratios
                        .iter()
                        .map(|(s, _, (c, p), _)| format!("{} {c:.2} {p:.2}", bytes_label(*s as f64)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
    let threads: Vec<&RpcRun> = rpc.iter().filter(|r| r.point.thread_sweep).collect();
    if !threads.is_empty() {
        println!(
            "  {} KiB, requests/s against client threads (Figure 12(b); {} CPUs here: the server loop busy-polls one, the client threads share the other):",
            THREADS_SIZE >> 10,
            harness::cpus()
        );
        for transport in Transport::ALL {
            for b in std::iter::once(None).chain(Builder::ALL.map(Some)) {
                let row: Vec<String> = threads
                    .iter()
                    .filter(|r| r.point.transport == transport && r.point.builder == b)
                    .map(|r| format!("{}: {:.0}", r.point.threads, r.rate))
                    .collect();
                if !row.is_empty() {
                    println!(
                        "    {} {:<20} {}",
                        transport.name(),
                        sends_name(b),
                        row.join(", ")
                    );
                }
            }
        }
    }
}

/// Series of `runs` kept by `keep`, named by `name`, points `(x, y)`, sorted by x.
fn series<T>(
    runs: &[T],
    keep: impl Fn(&T) -> bool,
    name: impl Fn(&T) -> String,
    point: impl Fn(&T) -> (f64, f64),
) -> Vec<plot::Series> {
    let mut out: Vec<plot::Series> = Vec::new();
    for r in runs.iter().filter(|r| keep(r)) {
        let n = name(r);
        let i = out.iter().position(|s| s.name == n).unwrap_or_else(|| {
            out.push(plot::Series {
                name: n,
                points: Vec::new(),
            });
            out.len() - 1
        });
        out[i].points.push(point(r));
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// The plot (Figures 9-13).
pub(super) fn draw(path: &Path, ser: &[SerializeRun], rpc: &[RpcRun]) -> Result<(), BoxError> {
    let name = |s: &SerializeRun| s.builder.map_or("memcpy (floor)", Builder::name).to_owned();
    let counted = |s: &SerializeRun| s.counted.is_some();
    let mut allocated = series(ser, counted, name, |s| {
        (s.size as f64, s.counted.map_or(0, |c| c.allocated_bytes) as f64)
    });
    let mut copied = series(ser, counted, name, |s| {
        (s.size as f64, s.counted.map_or(0, |c| c.copied_bytes) as f64)
    });
    for (target, what, column) in [(&mut allocated, "allocated", 4usize), (&mut copied, "copied", 5)] {
        for lib in ["FlatBuffers C++", "zFlatBuffers C++"] {
            let points: Vec<(f64, f64)> = PAPER
                .iter()
                .filter(|p| p.0 == lib)
                .map(|p| (p.1 as f64, if column == 4 { p.4 } else { p.5 } as f64))
                .collect();
            target.push(plot::Series {
                name: format!("{lib} (paper, {what})"),
                points,
            });
        }
    }
    let mut panels = vec![
        plot::Panel {
            title: "Figure 9: building the Record".to_owned(),
            x_label: "source size".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "ns per message".to_owned(),
            series: series(ser, |_| true, name, |s| (s.size as f64, s.ns)),
        },
        plot::Panel {
            title: "Table II: bytes allocated per message (0 not drawn)".to_owned(),
            x_label: "source size".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "bytes".to_owned(),
            series: allocated,
        },
        plot::Panel {
            title: "Table II: bytes copied per message (0 not drawn: ours, stock reused)".to_owned(),
            x_label: "source size".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "bytes".to_owned(),
            series: copied,
        },
    ];
    let rpc_name = |r: &RpcRun| format!("{} {}", sends_name(r.point.builder), r.point.transport.name());
    for transport in Transport::ALL {
        panels.push(plot::Panel {
            title: format!(
                "Figures 11(a)/12(a): ping-pong over {}, requests/s",
                transport.name()
            ),
            x_label: "source size".to_owned(),
            x_axis: plot::XAxis::Bytes,
            y_label: "requests/s".to_owned(),
            series: series(
                rpc,
                |r| !r.point.thread_sweep && r.point.transport == transport,
                |r| sends_name(r.point.builder).to_owned(),
                |r| (r.point.size as f64, r.rate),
            ),
        });
    }
    panels.push(plot::Panel {
        title: "Figure 11(b): ping-pong p50 round trip".to_owned(),
        x_label: "source size".to_owned(),
        x_axis: plot::XAxis::Bytes,
        y_label: "p50 ns".to_owned(),
        series: series(
            rpc,
            |r| !r.point.thread_sweep,
            rpc_name,
            |r| (r.point.size as f64, r.p50),
        ),
    });
    let mut normalized = Vec::new();
    for transport in Transport::ALL {
        for (ours, stock, what) in [
            (
                Some(Builder::ZflatbuffersReused),
                Builder::FlatbuffersReused,
                "z reused / fb reused",
            ),
            (
                Some(Builder::ZflatbuffersFresh),
                Builder::FlatbuffersFresh,
                "z fresh / fb fresh",
            ),
            (None, Builder::FlatbuffersReused, "prebuilt / fb reused"),
        ] {
            let points: Vec<(f64, f64)> = rpc
                .iter()
                .filter(|r| {
                    !r.point.thread_sweep && r.point.transport == transport && r.point.builder == ours
                })
                .filter_map(|o| {
                    let s = find_rpc(rpc, Some(stock), transport, o.point.size, 1, false)?;
                    Some((o.point.size as f64, paired(&o.rates, &s.rates)))
                })
                .collect();
            if !points.is_empty() {
                normalized.push(plot::Series {
                    name: format!("{} {what}", transport.name()),
                    points,
                });
            }
        }
    }
    panels.push(plot::Panel {
        title: "Figure 13: requests/s over FlatBuffers' (prebuilt: the ceiling)".to_owned(),
        x_label: "source size".to_owned(),
        x_axis: plot::XAxis::Bytes,
        y_label: "ratio".to_owned(),
        series: normalized,
    });
    panels.push(plot::Panel {
        title: format!(
            "Figure 12(b): {} KiB, requests/s against client threads",
            THREADS_SIZE >> 10
        ),
        x_label: "client threads (sharing one CPU)".to_owned(),
        x_axis: plot::XAxis::Count,
        y_label: "requests/s".to_owned(),
        series: series(
            rpc,
            |r| r.point.thread_sweep,
            rpc_name,
            |r| (r.point.threads as f64, r.rate),
        ),
    });
    plot::log_log_svg(
        path,
        "ferry bench flatbuffers: the stock flatbuffers builder against ferry-flatbuffers (zFlatBuffers)",
        2,
        &panels,
    )
}
