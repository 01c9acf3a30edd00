//! What `ferry bench flatbuffers` records, prints and draws: a record per configuration with
//! every repetition's figures, the two tables (serialization beside the paper's Table II; the
//! ping-pong), the targets as ratios of figures from the same run, and the plot
//! (Figures 9-13).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client::Measured;
use super::serialize::Counted;
use super::{Builder, RpcPoint, Sweep, THREADS_SIZE, Transport};
use crate::BoxError;
use crate::harness::Named;
use crate::harness::lifecycle::Target;
use crate::harness::table::Table;
use crate::harness::{median, paired, round, sorted};
use crate::plot::{self, Panel, XAxis, bytes_label};

/// Sizes of the targets (§4): build time at 64 KiB, requests/s from 64 KiB up.
const LARGE: usize = 64 << 10;

/// A row of the paper's Table II.
type PaperRow = (&'static str, usize, usize, usize, usize, usize);

/// The paper's Table II: (library, source size, serialized size, allocations, total
/// allocation size, total copy size). Its FlatBuffers rows are the C++ builder's growth rule
/// (a 1 KiB first buffer growing by half).
const PAPER: [PaperRow; 6] = [
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

/// Everything a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Records {
    /// The serialization part's records, then the ping-pong's.
    pub records: Vec<Record>,
}

/// A configuration's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "lowercase")]
pub enum Record {
    /// A builder (or the memcpy floor) building the Record.
    Serialize(SerializeRun),
    /// A ping-pong configuration.
    Rpc(RpcRun),
}

/// A builder (or [`Builder::Memcpy`]) at a size: its counts and its times per message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SerializeRun {
    builder: Builder,
    size: usize,
    /// `None` for the floor.
    #[serde(flatten)]
    counted: Option<Counted>,
    reps: usize,
    #[serde(rename = "ns_per_message")]
    ns: f64,
    #[serde(rename = "ns_per_message_reps")]
    ns_reps: Vec<f64>,
    mb_per_sec: f64,
}

impl SerializeRun {
    /// `builder` at `size`, built as `counted` (`None`: the floor), timed per repetition.
    pub(super) fn new(builder: Builder, size: usize, counted: Option<Counted>, ns_reps: &[f64]) -> Self {
        let ns = median(ns_reps).unwrap_or(f64::NAN);
        let bytes = counted.map_or(size, |c| c.len);
        SerializeRun {
            builder,
            size,
            counted,
            reps: ns_reps.len(),
            ns: round(ns, 1),
            ns_reps: ns_reps.iter().map(|&v| round(v, 1)).collect(),
            mb_per_sec: round(bytes as f64 / ns * 1e3, 1),
        }
    }
}

/// A ping-pong configuration's figures over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcRun {
    #[serde(flatten)]
    point: RpcPoint,
    serialized_len: usize,
    reps: usize,
    calls: u64,
    #[serde(rename = "calls_per_sec")]
    rate: f64,
    #[serde(rename = "calls_per_sec_reps")]
    rates: Vec<f64>,
    mb_per_sec: f64,
    p50_ns: f64,
    p99_ns: f64,
    p50_ns_reps: Vec<f64>,
    p99_ns_reps: Vec<f64>,
}

impl RpcRun {
    /// `point`, whose Record is `len` bytes, as measured by each repetition.
    pub(super) fn new(point: RpcPoint, len: usize, runs: &[Measured]) -> RpcRun {
        let each = |f: &dyn Fn(&Measured) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
        let med = |f: &dyn Fn(&Measured) -> f64| median(&each(f)).unwrap_or(f64::NAN);
        let q = |q| move |m: &Measured| m.latency.value_at_quantile(q) as f64;
        let rate = med(&|m| m.calls_per_sec);
        RpcRun {
            point,
            serialized_len: len,
            reps: runs.len(),
            calls: med(&|m| m.calls as f64) as u64,
            rate: round(rate, 0),
            rates: each(&|m| round(m.calls_per_sec, 0)),
            mb_per_sec: round(rate * len as f64 / 1e6, 1),
            p50_ns: med(&q(0.5)),
            p99_ns: med(&q(0.99)),
            p50_ns_reps: each(&q(0.5)),
            p99_ns_reps: each(&q(0.99)),
        }
    }
}

/// The stock builder used the same way as `ours` (fresh or reused).
fn stock_peer(ours: Builder) -> Option<Builder> {
    match ours {
        Builder::ZflatbuffersFresh => Some(Builder::FlatbuffersFresh),
        Builder::ZflatbuffersReused => Some(Builder::FlatbuffersReused),
        _ => None,
    }
}

/// Ours and the stock builder, used the same way: reused first (as a user would), then fresh.
const PAIRS: [(Builder, &str); 2] = [
    (Builder::ZflatbuffersReused, "reused builders"),
    (Builder::ZflatbuffersFresh, "fresh builders"),
];

impl Records {
    fn serialize(&self) -> impl Iterator<Item = &SerializeRun> {
        self.records.iter().filter_map(|r| match r {
            Record::Serialize(s) => Some(s),
            Record::Rpc(_) => None,
        })
    }

    fn rpc(&self) -> impl Iterator<Item = &RpcRun> {
        self.records.iter().filter_map(|r| match r {
            Record::Rpc(r) => Some(r),
            Record::Serialize(_) => None,
        })
    }

    fn ser(&self, builder: Builder, size: usize) -> Option<&SerializeRun> {
        self.serialize().find(|s| s.builder == builder && s.size == size)
    }

    /// The size sweep's run of `builder` over `transport` at `size`, or the thread sweep's
    /// with `threads`.
    fn find_rpc(&self, builder: Builder, at: &RpcPoint) -> Option<&RpcRun> {
        self.rpc().find(|r| RpcPoint { builder, ..*at } == r.point)
    }

    /// Time of `a` over time of `b` at `size`, paired by repetition.
    fn time_ratio(&self, a: Builder, b: Builder, size: usize) -> Option<(f64, f64, f64)> {
        let (a, b) = (self.ser(a, size)?, self.ser(b, size)?);
        Some((a.ns, b.ns, paired(&a.ns_reps, &b.ns_reps)))
    }

    /// Per size of the size sweep over `transport`: requests/s of ours over the stock
    /// builder's, prebuilt's over the stock builder's, and p50 of the stock builder's over
    /// ours and over prebuilt's.
    fn rpc_ratios(&self, ours: Builder, transport: Transport) -> Vec<(usize, f64, f64, f64, f64)> {
        let stock = stock_peer(ours).unwrap_or(ours);
        self.rpc()
            .filter(|r| r.point.builder == ours && r.point.transport == transport)
            .filter(|r| r.point.sweep == Sweep::Size)
            .filter_map(|o| {
                let s = self.find_rpc(stock, &o.point)?;
                let p = self.find_rpc(Builder::Prebuilt, &o.point);
                let (c, cp) = p.map_or((f64::NAN, f64::NAN), |p| {
                    (paired(&p.rates, &s.rates), s.p50_ns / p.p50_ns)
                });
                Some((
                    o.point.size,
                    paired(&o.rates, &s.rates),
                    c,
                    s.p50_ns / o.p50_ns,
                    cp,
                ))
            })
            .collect()
    }

    /// Both tables and what they show.
    pub fn table(&self) {
        if self.serialize().next().is_some() {
            self.serialize_table();
        }
        if self.rpc().next().is_some() {
            self.rpc_table();
        }
    }

    fn serialize_table(&self) {
        println!(
            "Serialization (Table II, Figure 9): per message. memcpy: the source copied into one buffer (the floor). Ratios per repetition, median: /memcpy for every row, ours over the stock builder used the same way (/fb) and over the reused one (/reused)."
        );
        let mut t = Table::new([
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
            "/reused",
        ]);
        for size in sorted(self.serialize().map(|s| s.size)) {
            for s in self.serialize().filter(|s| s.size == size) {
                let ratio = |base: Option<Builder>| {
                    let base = self.ser(base?, size).filter(|_| s.builder != Builder::Memcpy)?;
                    Some(format!("{:.3}", paired(&s.ns_reps, &base.ns_reps)))
                };
                let reused = Some(Builder::FlatbuffersReused).filter(|_| stock_peer(s.builder).is_some());
                let count = |f: fn(&Counted) -> usize| {
                    s.counted.as_ref().map_or("-".to_owned(), |c| f(c).to_string())
                };
                t.row([
                    bytes_label(size as f64),
                    s.builder.label().to_owned(),
                    s.counted.map_or(size, |c| c.len).to_string(),
                    format!("{:.0}", s.ns),
                    format!("{:.0}", s.mb_per_sec),
                    count(|c| c.allocations),
                    count(|c| c.allocated_bytes),
                    count(|c| c.copied_bytes),
                    ratio(Some(Builder::Memcpy)).unwrap_or_default(),
                    ratio(stock_peer(s.builder)).unwrap_or_default(),
                    ratio(reused).unwrap_or_default(),
                ]);
            }
            for &(library, _, len, allocations, allocated, copied) in PAPER.iter().filter(|p| p.1 == size) {
                let counts = [len, allocations, allocated, copied].map(|v| v.to_string());
                t.row(
                    [String::new(), format!("({library}, paper)")]
                        .into_iter()
                        .chain([counts[0].clone(), "-".into(), "-".into()])
                        .chain(counts[1..].iter().cloned()),
                );
            }
        }
        t.print();
        if let Some((floor, fresh, x)) = self.time_ratio(Builder::Memcpy, Builder::FlatbuffersFresh, LARGE) {
            println!(
                "The floor: copying the 64 KiB source into one buffer takes {floor:.0} ns ({fresh:.0} ns for flatbuffers-fresh, {x:.3}x): no builder that copies the data can go under it.\n"
            );
        }
    }

    fn rpc_table(&self) {
        println!(
            "Ping-pong RPC (Figures 11-13): one call in flight per client thread, clients busy-polling. /fb: requests/s over the stock builder's used the same way (fresh or reused); /pre: over prebuilt's (the Record built once: no serialization per call). Per repetition, median."
        );
        let mut t = Table::new([
            "trans", "source", "threads", "sends", "bytes", "req/s", "MB/s", "p50 ns", "p99 ns", "/fb",
            "/pre",
        ]);
        for r in self.rpc() {
            let p = &r.point;
            let ratio = |base: Option<Builder>| {
                let base = self
                    .find_rpc(base?, p)
                    .filter(|_| p.builder != Builder::Prebuilt)?;
                Some(format!("{:.3}", paired(&r.rates, &base.rates)))
            };
            t.row([
                p.transport.name().to_owned(),
                bytes_label(p.size as f64),
                p.threads.to_string(),
                p.builder.label().to_owned(),
                r.serialized_len.to_string(),
                format!("{:.0}", r.rate),
                format!("{:.1}", r.mb_per_sec),
                format!("{:.0}", r.p50_ns),
                format!("{:.0}", r.p99_ns),
                ratio(stock_peer(p.builder)).unwrap_or_default(),
                ratio(Some(Builder::Prebuilt)).unwrap_or_default(),
            ]);
        }
        t.print();
        let per_size = |v: &[(usize, f64, f64, f64, f64)], f: fn(&(usize, f64, f64, f64, f64)) -> String| {
            v.iter()
                .map(|r| format!("{} {}", bytes_label(r.0 as f64), f(r)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for transport in Transport::DEFAULT {
            for (ours, what) in PAIRS {
                let ratios = self.rpc_ratios(ours, transport);
                if ratios.is_empty() {
                    continue;
                }
                let name = transport.name();
                println!(
                    "ping-pong {name} requests/s, zflatbuffers / flatbuffers, {what}: {}",
                    per_size(&ratios, |r| format!("{:.2}", r.1))
                );
                println!(
                    "  p50 round trip, flatbuffers / zflatbuffers (robust to the stalls that cut requests/s on a busy machine): {}",
                    per_size(&ratios, |r| format!("{:.2}", r.3))
                );
                if ours == Builder::ZflatbuffersReused {
                    println!(
                        "  the ceiling, prebuilt / flatbuffers, requests/s and p50 (flatbuffers' / prebuilt's): {}",
                        per_size(&ratios, |r| format!("{:.2} {:.2}", r.2, r.4))
                    );
                }
            }
        }
        println!();
        let threads: Vec<&RpcRun> = self.rpc().filter(|r| r.point.sweep == Sweep::Threads).collect();
        let counts = sorted(threads.iter().map(|r| r.point.threads));
        if threads.is_empty() {
            return;
        }
        println!(
            "{} KiB, requests/s against client threads (Figure 12(b): the server loop busy-polls one CPU, the client threads share another):",
            THREADS_SIZE >> 10
        );
        let mut t = Table::new(
            ["trans", "sends"]
                .map(String::from)
                .into_iter()
                .chain(counts.iter().map(|n| format!("{n} threads"))),
        );
        for transport in Transport::DEFAULT {
            for b in Builder::SENDS {
                let row: Vec<String> = counts
                    .iter()
                    .filter_map(|&n| {
                        threads.iter().find(|r| {
                            (r.point.transport, r.point.builder, r.point.threads) == (transport, b, n)
                        })
                    })
                    .map(|r| format!("{:.0}", r.rate))
                    .collect();
                if !row.is_empty() {
                    t.row(
                        [transport.name().to_owned(), b.label().to_owned()]
                            .into_iter()
                            .chain(row),
                    );
                }
            }
        }
        t.print();
    }

    /// The targets (§4).
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for (size, goal, (ours, what)) in [
            (
                LARGE,
                0.35,
                (
                    Builder::ZflatbuffersFresh,
                    "fresh builders, the paper's setting (issue 31's goal; paper 0.28x)",
                ),
            ),
            (LARGE, 0.25, (Builder::ZflatbuffersReused, "reused builders")),
            (1 << 10, 1.0, (Builder::ZflatbuffersFresh, "fresh")),
            (
                1 << 10,
                1.0,
                (Builder::ZflatbuffersReused, "reused (issue 31's goal)"),
            ),
        ] {
            let stock = stock_peer(ours).unwrap_or(ours);
            if let Some((o, s, x)) = self.time_ratio(ours, stock, size) {
                let what = format!(
                    "{} Record build time, ours / flatbuffers, {what}: {o:.0} / {s:.0} ns",
                    bytes_label(size as f64)
                );
                out.push(Target::ratio(what, Some(x), false, goal));
            }
        }
        let table_ii: Vec<(usize, usize)> = PAPER
            .iter()
            .filter(|p| p.0.starts_with('z'))
            .map(|p| (p.1, p.3))
            .collect();
        for b in [Builder::ZflatbuffersFresh, Builder::ZflatbuffersReused] {
            let rows: Vec<(usize, Counted, usize)> = table_ii
                .iter()
                .filter_map(|&(size, paper)| Some((size, self.ser(b, size)?.counted?, paper)))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let list =
                |f: &dyn Fn(&(usize, Counted, usize)) -> String| rows.iter().map(f).collect::<Vec<_>>();
            out.push(Target {
                what: format!(
                    "{} allocations / bytes copied at {}",
                    b.label(),
                    list(&|r| bytes_label(r.0 as f64)).join(" / ")
                ),
                goal: format!(
                    "0 copied, allocations <= the paper's {}",
                    list(&|r| r.2.to_string()).join(" / ")
                ),
                measured: list(&|(_, c, _)| format!("{} / {}", c.allocations, c.copied_bytes)).join(", "),
                met: Some(
                    rows.iter()
                        .all(|(_, c, paper)| c.allocations <= *paper && c.copied_bytes == 0),
                ),
            });
        }
        for transport in Transport::DEFAULT {
            for (ours, what) in PAIRS {
                let ratios = self.rpc_ratios(ours, transport);
                if ratios.is_empty() {
                    continue;
                }
                let least = |from: usize| {
                    let r = ratios.iter().filter(|r| r.0 >= from).map(|r| r.1);
                    r.reduce(f64::min)
                };
                let what = format!(
                    "ping-pong {} requests/s, zflatbuffers / flatbuffers, {what}",
                    transport.name()
                );
                out.push(Target::ratio(
                    format!("{what}, the least over sizes"),
                    least(0),
                    true,
                    1.0,
                ));
                out.push(Target::ratio(
                    format!("{what}, the least from 64 KiB (paper: +53.6 % on zRPC)"),
                    least(LARGE),
                    true,
                    1.5,
                ));
            }
        }
        out
    }

    /// The plot (Figures 9-13).
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let ser: Vec<&SerializeRun> = self.serialize().collect();
        let rpc: Vec<&RpcRun> = self.rpc().collect();
        let bytes = |title: &str, y_label: &str, series| Panel {
            title: title.to_owned(),
            x_label: "source size".to_owned(),
            x_axis: XAxis::Bytes,
            y_label: y_label.to_owned(),
            series,
        };
        let name = |s: &&SerializeRun| s.builder.label();
        let counted = |s: &&SerializeRun| s.counted.is_some();
        // Bytes allocated (`Counted` and the paper's column 4) or copied (column 5).
        let count = |what: &str, f: fn(&Counted) -> usize, paper: fn(&PaperRow) -> usize| {
            let mut s = plot::series(ser.iter().copied().filter(counted), name, |s| {
                (s.size as f64, s.counted.map_or(0, |c| f(&c)) as f64)
            });
            for lib in ["FlatBuffers C++", "zFlatBuffers C++"] {
                s.push(plot::Series {
                    name: format!("{lib} (paper, {what})"),
                    points: PAPER
                        .iter()
                        .filter(|p| p.0 == lib)
                        .map(|p| (p.1 as f64, paper(p) as f64))
                        .collect(),
                });
            }
            s
        };
        let allocated = count("allocated", |c| c.allocated_bytes, |p| p.4);
        let copied = count("copied", |c| c.copied_bytes, |p| p.5);
        let mut panels = vec![
            bytes(
                "Figure 9: building the Record",
                "ns per message",
                plot::series(ser.iter().copied(), name, |s| (s.size as f64, s.ns)),
            ),
            bytes(
                "Table II: bytes allocated per message (0 not drawn)",
                "bytes",
                allocated,
            ),
            bytes(
                "Table II: bytes copied per message (0 not drawn: ours, stock reused)",
                "bytes",
                copied,
            ),
        ];
        let sized = |r: &&RpcRun| r.point.sweep == Sweep::Size;
        let rpc_name = |r: &&RpcRun| format!("{} {}", r.point.builder.label(), r.point.transport.name());
        for transport in Transport::DEFAULT {
            panels.push(bytes(
                &format!(
                    "Figures 11(a)/12(a): ping-pong over {}, requests/s",
                    transport.name()
                ),
                "requests/s",
                plot::series(
                    rpc.iter()
                        .copied()
                        .filter(|r| sized(r) && r.point.transport == transport),
                    |r| r.point.builder.label(),
                    |r| (r.point.size as f64, r.rate),
                ),
            ));
        }
        panels.push(bytes(
            "Figure 11(b): ping-pong p50 round trip",
            "p50 ns",
            plot::series(rpc.iter().copied().filter(sized), rpc_name, |r| {
                (r.point.size as f64, r.p50_ns)
            }),
        ));
        let mut normalized = Vec::new();
        for transport in Transport::DEFAULT {
            for (ours, what, ratio) in [
                (Builder::ZflatbuffersReused, "z reused / fb reused", 1),
                (Builder::ZflatbuffersFresh, "z fresh / fb fresh", 1),
                (Builder::ZflatbuffersReused, "prebuilt / fb reused", 2),
            ] {
                let ratios = self.rpc_ratios(ours, transport);
                let points: Vec<(f64, f64)> = ratios
                    .iter()
                    .map(|r| (r.0 as f64, if ratio == 1 { r.1 } else { r.2 }))
                    .collect();
                if !points.is_empty() {
                    normalized.push(plot::Series {
                        name: format!("{} {what}", transport.name()),
                        points,
                    });
                }
            }
        }
        panels.push(bytes(
            "Figure 13: requests/s over FlatBuffers' (prebuilt: the ceiling)",
            "ratio",
            normalized,
        ));
        panels.push(Panel {
            title: format!(
                "Figure 12(b): {} KiB, requests/s against client threads",
                THREADS_SIZE >> 10
            ),
            x_label: "client threads (sharing one CPU)".to_owned(),
            x_axis: XAxis::Count,
            y_label: "requests/s".to_owned(),
            series: plot::series(
                rpc.iter().copied().filter(|r| r.point.sweep == Sweep::Threads),
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
}
