//! The results of `ferry bench redis`: every run, the medians per server and test, Ferry's
//! ratios to redis-server and the targets; the tables and the plot.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::client::{ClientRun, Invocation};
use super::{Side, Test};
use crate::BoxError;
use crate::harness::Link;
use crate::harness::Named;
use crate::harness::lifecycle::Target;
use crate::harness::table::Table;
use crate::harness::{median, round, sorted, unique};
use crate::plot::{BarPanel, Bars, bars_svg};

/// A client that used at least this share of its core was the bottleneck.
pub const CLIENT_BOUND: f64 = 0.95;

/// A run whose server or client core spent more than this share of the window on other work
/// (other processes, kernel threads, the hypervisor) is flagged as disturbed.
pub const DISTURBED: f64 = 0.05;

/// One measured redis-benchmark run (latencies in µs, times in s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The round (0-based).
    pub round: usize,
    /// Which server.
    #[serde(rename = "server")]
    pub side: Side,
    /// Which test.
    pub test: Test,
    /// `-P`.
    pub pipeline: u32,
    /// Plain TCP or TLS (records written before `--tls` existed are plain).
    #[serde(default)]
    pub link: Link,
    /// `-n`.
    pub requests: u64,
    /// Requests per second (redis-benchmark's).
    pub rps: f64,
    /// Mean latency.
    pub avg_us: f64,
    /// Smallest latency.
    pub min_us: f64,
    /// Median latency.
    pub p50_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest latency.
    pub max_us: f64,
    /// redis-benchmark's life, from spawn to exit.
    pub wall_s: f64,
    /// The server's CPU time over that window.
    pub server_cpu_s: f64,
    /// redis-benchmark's CPU time.
    pub client_cpu_s: f64,
    /// How long the server's core was busy with anything over the window (`/proc/stat`).
    pub server_core_busy_s: f64,
    /// How long the client's core was busy with anything over the window.
    pub client_core_busy_s: f64,
    /// Where the server's CPU time came from: `schedstat` or `stat-ticks`.
    pub cpu_source: String,
    /// Where the client's CPU time came from.
    pub client_cpu_source: String,
    /// The warm-up run's requests per second.
    pub warmup_rps: f64,
    /// The exact redis-benchmark command line.
    pub redis_benchmark_command: String,
    /// The server's command line.
    pub server_command: String,
    /// The server's CPUs, as the kernel reported them.
    pub server_cpus_allowed: Option<String>,
    /// redis-benchmark's CPUs, as the kernel reported them.
    pub client_cpus_allowed: Option<String>,
}

impl Run {
    /// A run from what the client measured (rounded as the results file keeps it).
    pub(super) fn from_client(
        (round_, side, test, pipeline, link): (usize, Side, Test, u32, Link),
        requests: u64,
        inv: &Invocation,
        server: &ferry_launch::Server,
        m: ClientRun,
        warmup_rps: f64,
    ) -> Run {
        let us = |ms: f64| round(ms * 1000.0, 1);
        Run {
            round: round_,
            side,
            test,
            pipeline,
            link,
            requests,
            rps: round(m.row.rps, 2),
            avg_us: us(m.row.avg_ms),
            min_us: us(m.row.min_ms),
            p50_us: us(m.row.p50_ms),
            p95_us: us(m.row.p95_ms),
            p99_us: us(m.row.p99_ms),
            max_us: us(m.row.max_ms),
            wall_s: round(m.wall.as_secs_f64(), 4),
            server_cpu_s: round(m.server_cpu_ns as f64 / 1e9, 6),
            client_cpu_s: round(m.client_cpu_ns as f64 / 1e9, 6),
            server_core_busy_s: round(m.server_core_busy_s, 2),
            client_core_busy_s: round(m.client_core_busy_s, 2),
            cpu_source: m.server_source.name().to_owned(),
            client_cpu_source: m.client_source.name().to_owned(),
            warmup_rps: round(warmup_rps, 2),
            redis_benchmark_command: inv.display(),
            server_command: server.command().to_owned(),
            server_cpus_allowed: crate::harness::cpu::cpus_allowed(server.pid()),
            client_cpus_allowed: m.client_cpus_allowed,
        }
    }

    /// Its test, pipeline depth and link.
    pub fn case(&self) -> Case {
        Case {
            test: self.test,
            pipeline: self.pipeline,
            link: self.link,
        }
    }

    /// The server's CPU time per request, µs.
    pub fn server_us_per_request(&self) -> f64 {
        self.server_cpu_s * 1e6 / self.requests.max(1) as f64
    }

    /// The share of one core the server used over the run.
    pub fn server_util(&self) -> f64 {
        self.server_cpu_s / self.wall_s.max(1e-9)
    }

    /// The share of one core redis-benchmark used over the run.
    pub fn client_util(&self) -> f64 {
        self.client_cpu_s / self.wall_s.max(1e-9)
    }

    /// The share of the window the server's core spent on anything but the server.
    pub fn server_core_other(&self) -> f64 {
        ((self.server_core_busy_s - self.server_cpu_s) / self.wall_s.max(1e-9)).max(0.0)
    }

    /// The share of the window the client's core spent on anything but redis-benchmark.
    pub fn client_core_other(&self) -> f64 {
        ((self.client_core_busy_s - self.client_cpu_s) / self.wall_s.max(1e-9)).max(0.0)
    }
}

/// One test at one pipeline depth over one link: what medians, ratios and goals are per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Case {
    /// The test.
    pub test: Test,
    /// `-P`.
    pub pipeline: u32,
    /// Plain or TLS.
    pub link: Link,
}

impl Case {
    /// The test's name in tables, with " TLS" over TLS.
    pub fn label(self) -> String {
        format!("{}{}", self.test.label(), self.link.suffix())
    }
}

/// The medians of one server's runs of one case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Median {
    /// Requests per second.
    pub rps: f64,
    /// The lowest requests per second of the rounds.
    pub rps_min: f64,
    /// The highest.
    pub rps_max: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Server CPU per request, µs.
    pub server_us: f64,
    /// Server CPU, share of a core.
    pub server_util: f64,
    /// Client CPU, share of a core.
    pub client_util: f64,
}

impl Median {
    fn of(runs: &[&Run]) -> Option<Median> {
        let m = |f: fn(&Run) -> f64| median(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
        Some(Median {
            rps: m(|r| r.rps)?,
            rps_min: runs.iter().map(|r| r.rps).fold(f64::INFINITY, f64::min),
            rps_max: runs.iter().map(|r| r.rps).fold(0.0, f64::max),
            p50_us: m(|r| r.p50_us)?,
            p99_us: m(|r| r.p99_us)?,
            server_us: m(Run::server_us_per_request)?,
            server_util: m(Run::server_util)?,
            client_util: m(Run::client_util)?,
        })
    }
}

/// The goal of the issues for one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// The large-value reads (GET 4 KiB, MGET-2, LRANGE-2, HGETALL-8, SMEMBERS-16, ZRANGE-10)
    /// at pipeline 16: at least 1.3x redis-server's requests/s,
    /// or at most 0.77x its CPU per request when redis-benchmark is the bottleneck.
    Large,
    /// The 64-byte tests: at least 0.95x the requests/s, or at most 1/0.95x the CPU per
    /// request when redis-benchmark is the bottleneck.
    Small,
    /// GET 4 KiB at pipeline 16 over TLS (issue 28): at least 1.2x redis-server's requests/s
    /// over TLS, or at most 1/1.2x its CPU per request when redis-benchmark is the bottleneck.
    Tls,
    /// SET 4 KiB with `appendfsync everysec` at pipeline 16 (issue 29): at least 1.0x
    /// redis-server's requests/s with the same setting, or at most 1.0x its CPU per request
    /// when redis-benchmark is the bottleneck.
    Aof,
}

impl Goal {
    /// The goal of `case`, if it has one.
    pub fn of(case: Case) -> Option<Goal> {
        match (case.test, case.pipeline, case.link) {
            (
                Test::Get4k
                | Test::Mget2
                | Test::Lrange2
                | Test::Hgetall8
                | Test::Smembers16
                | Test::Zrange10,
                16,
                Link::Plain,
            ) => Some(Goal::Large),
            (Test::Get64 | Test::Set64, _, Link::Plain) => Some(Goal::Small),
            (Test::Get4k, 16, Link::Tls) => Some(Goal::Tls),
            (Test::Set4kAof, 16, Link::Plain) => Some(Goal::Aof),
            _ => None,
        }
    }

    /// (least requests/s ratio, most CPU per request ratio when client-bound).
    fn bounds(self) -> (f64, f64) {
        match self {
            Goal::Large => (1.3, 0.77),
            Goal::Small => (0.95, 1.0 / 0.95),
            Goal::Tls => (1.2, 1.0 / 1.2),
            Goal::Aof => (1.0, 1.0),
        }
    }

    /// Whether ratios `rps` and `cpu` (Ferry over redis-server) meet it; `client_bound`:
    /// redis-benchmark used at least 95 % of its core in Ferry's run.
    pub fn met(self, rps: f64, cpu: f64, client_bound: bool) -> bool {
        let (min_rps, max_cpu) = self.bounds();
        rps >= min_rps || (client_bound && cpu <= max_cpu)
    }

    /// The rule, in words.
    pub fn describe(self) -> String {
        let (min_rps, max_cpu) = self.bounds();
        format!(">= {min_rps}x req/s, or <= {max_cpu:.2}x CPU/req if client-bound")
    }
}

/// Ferry against redis-server on one case.
#[derive(Debug, Clone, Copy)]
pub struct Comparison {
    /// The case.
    pub case: Case,
    /// redis-server's medians.
    pub redis: Median,
    /// Ferry's medians.
    pub ferry: Median,
    /// Requests/s, Ferry over redis-server.
    pub rps_ratio: f64,
    /// Server CPU per request, Ferry over redis-server.
    pub cpu_ratio: f64,
    /// Whether redis-benchmark used at least 95 % of its core in Ferry's runs (median).
    pub client_bound: bool,
}

/// Every measured run: the results file's `records`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    /// In the order they ran.
    pub records: Vec<Run>,
}

impl Runs {
    /// The cases measured, in run order.
    fn cases(&self) -> Vec<Case> {
        unique(self.records.iter().map(Run::case))
    }

    /// The medians of `side` on `case`.
    pub fn median(&self, side: Side, case: Case) -> Option<Median> {
        let runs: Vec<&Run> = self
            .records
            .iter()
            .filter(|r| r.side == side && r.case() == case)
            .collect();
        Median::of(&runs)
    }

    /// Ferry against redis-server, per case that both ran.
    pub fn comparisons(&self) -> Vec<Comparison> {
        let compare = |case| {
            let redis = self.median(Side::Redis, case)?;
            let ferry = self.median(Side::Ferry, case)?;
            Some(Comparison {
                case,
                redis,
                ferry,
                rps_ratio: ferry.rps / redis.rps,
                cpu_ratio: ferry.server_us / redis.server_us,
                client_bound: ferry.client_util >= CLIENT_BOUND,
            })
        };
        self.cases().into_iter().filter_map(compare).collect()
    }

    /// Prints the medians per test and server, the ratios, and the runs other work disturbed.
    pub fn print(&self) {
        let rounds = self.records.iter().map(|r| r.round + 1).max().unwrap_or(0);
        match rounds {
            0 | 1 => println!("one round"),
            n => println!("medians of {n} rounds"),
        }
        let mut t = Table::new([
            "test",
            "P",
            "server",
            "req/s",
            "rounds k/s",
            "p50 µs",
            "p99 µs",
            "srv µs/req",
            "srv CPU",
            "cli CPU",
            "-n",
        ]);
        for case in self.cases() {
            let n = self.records.iter().find(|r| r.case() == case);
            for side in [Side::Redis, Side::Ferry] {
                let Some(m) = self.median(side, case) else {
                    continue;
                };
                let first = side == Side::Redis;
                t.row([
                    if first { case.label() } else { String::new() },
                    if first {
                        case.pipeline.to_string()
                    } else {
                        String::new()
                    },
                    side.name().to_owned(),
                    thousands(m.rps),
                    format!("{:.0}-{:.0}", m.rps_min / 1e3, m.rps_max / 1e3),
                    format!("{:.0}", m.p50_us),
                    format!("{:.0}", m.p99_us),
                    format!("{:.3}", m.server_us),
                    format!("{:.0}%", m.server_util * 100.0),
                    format!("{:.0}%", m.client_util * 100.0),
                    n.filter(|_| first)
                        .map_or(String::new(), |r| thousands(r.requests as f64)),
                ]);
            }
        }
        t.print();
        let mut t = Table::new(["ferry/redis", "P", "req/s", "CPU/req", "client"]);
        for c in self.comparisons() {
            t.row([
                c.case.label(),
                c.case.pipeline.to_string(),
                format!("{:.2}x", c.rps_ratio),
                format!("{:.2}x", c.cpu_ratio),
                if c.client_bound { "bound" } else { "-" }.to_owned(),
            ]);
        }
        t.print();
        self.print_tls_cost();
        let other = |r: &&Run| r.server_core_other() > DISTURBED || r.client_core_other() > DISTURBED;
        let disturbed: Vec<&Run> = self.records.iter().filter(other).collect();
        if !disturbed.is_empty() {
            println!(
                "{} of {} runs were disturbed: other work (processes, kernel threads, steal) took more than {:.0}% of a core:",
                disturbed.len(),
                self.records.len(),
                DISTURBED * 100.0
            );
            for r in disturbed.iter().take(8) {
                println!(
                    "  round {} {} {} P={}: {:.0}% of the server's core, {:.0}% of the client's",
                    r.round + 1,
                    r.side.name(),
                    r.case().label(),
                    r.pipeline,
                    r.server_core_other() * 100.0,
                    r.client_core_other() * 100.0
                );
            }
            println!();
        }
        println!(
            "req/s, p50, p99: redis-benchmark's (rounds k/s: the lowest and highest round). srv µs/req: the server's CPU time over the client's\n\
             life (/proc schedstat, all threads) per request; srv/cli CPU: share of one core over that\n\
             window. client \"bound\": redis-benchmark used >= {:.0}% of its core in Ferry's run, so\n\
             requests/s cannot show the server's limit and CPU per request decides the target.\n",
            CLIENT_BOUND * 100.0
        );
    }

    /// What TLS costs each server: its requests/s and CPU per request over TLS against plain
    /// TCP in the same run, per test and depth measured both ways.
    pub fn tls_costs(&self) -> Vec<(Case, Side, f64, f64)> {
        let mut costs = Vec::new();
        for tls in self.cases().into_iter().filter(|c| c.link == Link::Tls) {
            let plain = Case {
                link: Link::Plain,
                ..tls
            };
            for side in [Side::Redis, Side::Ferry] {
                if let (Some(t), Some(p)) = (self.median(side, tls), self.median(side, plain)) {
                    costs.push((plain, side, t.rps / p.rps, t.server_us / p.server_us));
                }
            }
        }
        costs
    }

    /// The TLS-over-plain table, when the run measured both.
    fn print_tls_cost(&self) {
        let costs = self.tls_costs();
        if costs.is_empty() {
            return;
        }
        let mut t = Table::new(["TLS/plain", "P", "server", "req/s", "CPU/req"]);
        for (case, side, rps, cpu) in costs {
            t.row([
                case.test.label().to_owned(),
                case.pipeline.to_string(),
                side.name(),
                format!("{rps:.2}x"),
                format!("{cpu:.2}x"),
            ]);
        }
        t.print();
    }

    /// The issues' goals, met or missed, for the cases that have one.
    pub fn targets(&self) -> Vec<Target> {
        let target = |c: Comparison| {
            let goal = Goal::of(c.case)?;
            Some(Target {
                what: format!("ferry/redis {} P={}", c.case.label(), c.case.pipeline),
                goal: goal.describe(),
                measured: format!(
                    "{:.2}x req/s, {:.2}x CPU/req{}",
                    c.rps_ratio,
                    c.cpu_ratio,
                    if c.client_bound { ", client-bound" } else { "" }
                ),
                met: Some(goal.met(c.rps_ratio, c.cpu_ratio, c.client_bound)),
            })
        };
        self.comparisons().into_iter().filter_map(target).collect()
    }

    /// Requests/s and server CPU per request per test, one panel per pipeline depth, a bar
    /// per server, Ferry's ratio over its bar.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let comparisons = self.comparisons();
        let pipelines = sorted(comparisons.iter().map(|c| c.case.pipeline));
        let panel = |p: u32, cpu: bool| {
            let cs: Vec<&Comparison> = comparisons.iter().filter(|c| c.case.pipeline == p).collect();
            let value = |m: &Median| if cpu { m.server_us } else { m.rps };
            let bars = |side: Side, m: fn(&Comparison) -> &Median| Bars {
                name: side.name().to_owned(),
                values: cs.iter().map(|c| value(m(c))).collect(),
            };
            BarPanel {
                title: if cpu {
                    format!("server CPU per request, pipeline {p} (lower is better)")
                } else {
                    format!("requests/s, pipeline {p}")
                },
                y_label: if cpu { "µs per request" } else { "requests/s" }.to_owned(),
                groups: cs.iter().map(|c| c.case.label()).collect(),
                bars: vec![bars(Side::Redis, |c| &c.redis), bars(Side::Ferry, |c| &c.ferry)],
                notes: cs
                    .iter()
                    .map(|c| format!("{:.2}x", if cpu { c.cpu_ratio } else { c.rps_ratio }))
                    .collect(),
            }
        };
        let panels: Vec<BarPanel> = [false, true]
            .into_iter()
            .flat_map(|cpu| pipelines.iter().map(move |&p| panel(p, cpu)))
            .collect();
        bars_svg(
            path,
            "ferry bench redis: Ferry's server against redis-server (same redis-benchmark, same core)",
            pipelines.len(),
            &panels,
        )
    }
}

/// `1234567.8` as `1,234,568`.
pub fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(side: Side, test: Test, p: u32, rps: f64, server_cpu_s: f64, client_cpu_s: f64) -> Run {
        Run {
            round: 0,
            side,
            test,
            pipeline: p,
            link: Link::Plain,
            requests: 1_000_000,
            rps,
            avg_us: 300.0,
            min_us: 100.0,
            p50_us: 290.0,
            p95_us: 400.0,
            p99_us: 700.0,
            max_us: 4000.0,
            wall_s: 1e6 / rps,
            server_cpu_s,
            client_cpu_s,
            server_core_busy_s: server_cpu_s,
            client_core_busy_s: client_cpu_s + 0.5,
            cpu_source: "schedstat".into(),
            client_cpu_source: "schedstat".into(),
            warmup_rps: rps,
            redis_benchmark_command: "redis-benchmark ...".into(),
            server_command: "redis-server ...".into(),
            server_cpus_allowed: Some("1".into()),
            client_cpus_allowed: Some("0".into()),
        }
    }

    #[test]
    fn goals() {
        let case = |test, pipeline, link| Case { test, pipeline, link };
        assert_eq!(Goal::of(case(Test::Get4k, 16, Link::Plain)), Some(Goal::Large));
        assert_eq!(Goal::of(case(Test::Get4k, 1, Link::Plain)), None);
        assert_eq!(Goal::of(case(Test::Set4k, 16, Link::Plain)), None);
        assert_eq!(Goal::of(case(Test::Set64, 1, Link::Plain)), Some(Goal::Small));
        assert_eq!(Goal::of(case(Test::Get4k, 16, Link::Tls)), Some(Goal::Tls));
        assert_eq!(Goal::of(case(Test::Get64, 1, Link::Tls)), None);
        assert_eq!(Goal::of(case(Test::Set4kAof, 16, Link::Plain)), Some(Goal::Aof));
        assert_eq!(Goal::of(case(Test::Set4kAof, 1, Link::Plain)), None);
        assert!(Goal::Aof.met(1.0, 2.0, false) && !Goal::Aof.met(0.99, 1.01, true));
        assert!(Goal::Tls.met(1.2, 1.0, false) && !Goal::Tls.met(1.19, 0.5, false));
        assert!(Goal::Large.met(1.3, 1.0, false));
        assert!(!Goal::Large.met(1.29, 0.5, false));
        assert!(Goal::Large.met(1.0, 0.77, true));
        assert!(!Goal::Large.met(1.0, 0.78, true));
        assert!(Goal::Small.met(0.95, 2.0, false));
        assert!(Goal::Small.met(0.9, 1.05, true));
    }

    #[test]
    fn comparisons_targets_and_records_round_trip() {
        // Ferry as fast (the client is saturated in its run) at 0.7x the CPU: met by CPU.
        let s = Runs {
            records: vec![
                run(Side::Redis, Test::Mget2, 16, 200_000.0, 4.0, 4.5),
                run(Side::Ferry, Test::Mget2, 16, 210_000.0, 2.8, 4.6),
                run(Side::Redis, Test::Get64, 1, 100_000.0, 8.0, 6.0),
                run(Side::Ferry, Test::Get64, 1, 90_000.0, 9.0, 6.0),
                run(Side::Redis, Test::Set4k, 1, 90_000.0, 9.0, 6.0),
            ],
        };
        let c = s.comparisons();
        assert_eq!(c.len(), 2, "set-4k ran on one server only");
        assert!((c[0].rps_ratio - 1.05).abs() < 1e-9);
        assert!((c[0].cpu_ratio - 0.7).abs() < 1e-9);
        assert!(c[0].client_bound, "{:?}", c[0].ferry);
        assert!(!c[1].client_bound);
        assert!((c[0].ferry.server_us - 2.8).abs() < 1e-9);
        let verdicts: Vec<_> = s.targets().iter().map(|t| (t.what.clone(), t.met)).collect();
        assert_eq!(
            verdicts,
            [
                ("ferry/redis MGET 2x2 KiB P=16".to_owned(), Some(true)),
                ("ferry/redis GET 64 B P=1".to_owned(), Some(false))
            ]
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["records"][1]["server"], "ferry");
        assert_eq!(json["records"][1]["test"], "mget-2");
        assert_eq!(serde_json::from_value::<Runs>(json).unwrap(), s);
        assert_eq!(s.records[0].server_core_other(), 0.0);
        let mut old = serde_json::to_value(&s.records[0]).unwrap();
        old.as_object_mut().unwrap().remove("link");
        let old: Run = serde_json::from_value(old).unwrap();
        assert_eq!(old.link, Link::Plain, "records from before --tls read as plain");
        assert!((s.records[0].client_core_other() - 0.5 / 5.0).abs() < 1e-9);
    }

    #[test]
    fn tls_cases_compare_with_their_own_link_and_cost_against_plain() {
        let tls = |mut r: Run| {
            r.link = Link::Tls;
            r
        };
        let s = Runs {
            records: vec![
                run(Side::Redis, Test::Get4k, 16, 400_000.0, 2.0, 3.0),
                run(Side::Ferry, Test::Get4k, 16, 600_000.0, 1.0, 3.0),
                tls(run(Side::Redis, Test::Get4k, 16, 200_000.0, 4.0, 3.0)),
                tls(run(Side::Ferry, Test::Get4k, 16, 230_000.0, 2.0, 3.0)),
            ],
        };
        let verdicts: Vec<_> = s.targets().iter().map(|t| (t.what.clone(), t.met)).collect();
        assert_eq!(
            verdicts,
            [
                ("ferry/redis GET 4 KiB P=16".to_owned(), Some(true)),
                ("ferry/redis GET 4 KiB TLS P=16".to_owned(), Some(false))
            ]
        );
        let costs = s.tls_costs();
        assert_eq!(costs.len(), 2);
        let (case, side, rps, cpu) = costs[1];
        assert_eq!((case.link, side), (Link::Plain, Side::Ferry));
        assert!((rps - 230.0 / 600.0).abs() < 1e-9 && (cpu - 2.0).abs() < 1e-9);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["records"][2]["link"], "tls");
        assert_eq!(serde_json::from_value::<Runs>(json).unwrap(), s);
    }

    #[test]
    fn separators() {
        assert_eq!(thousands(1_234_567.8), "1,234,568");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(0.2), "0");
        assert_eq!(thousands(-4321.0), "-4,321");
    }
}
