//! The results of `ferry bench redis`: every run, the medians per server and test, Ferry's
//! ratios to redis-server and the targets; the table, the JSON records and the plot.

use std::path::Path;

use serde_json::{Value, json};

use super::chart::{self, BarPanel};
use super::client::{ClientRun, Invocation};
use super::server::Server;
use super::{Side, Test};
use crate::BoxError;
use crate::harness::{by_name, median, report as results, round};

/// A client that used at least this share of its core was the bottleneck.
pub const CLIENT_BOUND: f64 = 0.95;

/// A run whose server or client core spent more than this share of the window on other work
/// (other processes, kernel threads, the hypervisor) is flagged as disturbed.
pub const DISTURBED: f64 = 0.05;

/// Which run of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunId {
    /// The round (0-based).
    pub round: usize,
    /// Which server.
    pub side: Side,
    /// Which test.
    pub test: Test,
    /// `-P`.
    pub pipeline: u32,
}

/// One measured redis-benchmark run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Which run.
    pub id: RunId,
    /// `-n`.
    pub requests: u64,
    /// Requests per second (redis-benchmark's).
    pub rps: f64,
    /// Mean latency, µs.
    pub avg_us: f64,
    /// Smallest latency, µs.
    pub min_us: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 95th percentile, µs.
    pub p95_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Largest latency, µs.
    pub max_us: f64,
    /// redis-benchmark's life, from spawn to exit, s.
    pub wall_s: f64,
    /// The server's CPU time over that window, s.
    pub server_cpu_s: f64,
    /// redis-benchmark's CPU time, s.
    pub client_cpu_s: f64,
    /// How long the server's core was busy with anything over the window, s (`/proc/stat`).
    pub server_core_busy_s: f64,
    /// How long the client's core was busy with anything over the window, s.
    pub client_core_busy_s: f64,
    /// Where the server's CPU time came from: `schedstat` or `stat-ticks`.
    pub cpu_source: String,
    /// Where the client's CPU time came from.
    pub client_cpu_source: String,
    /// The warm-up run's requests per second.
    pub warmup_rps: f64,
    /// The exact redis-benchmark command line.
    pub command: String,
    /// The server's command line.
    pub server_command: String,
    /// The server's CPUs, as the kernel reported them.
    pub server_cpus: Option<String>,
    /// redis-benchmark's CPUs, as the kernel reported them.
    pub client_cpus: Option<String>,
}

impl Run {
    /// A run from what the client measured.
    pub(super) fn from_client(
        id: RunId,
        requests: u64,
        inv: &Invocation,
        server: &Server,
        m: &ClientRun,
        warmup_rps: f64,
    ) -> Run {
        let us = |ms: f64| ms * 1000.0;
        Run {
            id,
            requests,
            rps: m.row.rps,
            avg_us: us(m.row.avg_ms),
            min_us: us(m.row.min_ms),
            p50_us: us(m.row.p50_ms),
            p95_us: us(m.row.p95_ms),
            p99_us: us(m.row.p99_ms),
            max_us: us(m.row.max_ms),
            wall_s: m.wall.as_secs_f64(),
            server_cpu_s: m.server_cpu_ns as f64 / 1e9,
            client_cpu_s: m.client_cpu_ns as f64 / 1e9,
            server_core_busy_s: m.server_core_busy_s,
            client_core_busy_s: m.client_core_busy_s,
            cpu_source: m.server_source.name().to_owned(),
            client_cpu_source: m.client_source.name().to_owned(),
            warmup_rps,
            command: inv.display(),
            server_command: server.command.clone(),
            server_cpus: server.cpus_allowed.clone(),
            client_cpus: m.client_cpus_allowed.clone(),
        }
    }

    /// The server's CPU time per request, µs.
    pub fn server_us_per_request(&self) -> f64 {
        self.server_cpu_s * 1e6 / self.requests.max(1) as f64
    }

    /// redis-benchmark's CPU time per request, µs.
    pub fn client_us_per_request(&self) -> f64 {
        self.client_cpu_s * 1e6 / self.requests.max(1) as f64
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

    fn to_json(&self) -> Value {
        json!({
            "round": self.id.round,
            "server": self.id.side.name(),
            "test": self.id.test.name(),
            "label": self.id.test.label(),
            "pipeline": self.id.pipeline,
            "requests": self.requests,
            "rps": round(self.rps, 2),
            "avg_us": round(self.avg_us, 1),
            "min_us": round(self.min_us, 1),
            "p50_us": round(self.p50_us, 1),
            "p95_us": round(self.p95_us, 1),
            "p99_us": round(self.p99_us, 1),
            "max_us": round(self.max_us, 1),
            "wall_s": round(self.wall_s, 4),
            "server_cpu_s": round(self.server_cpu_s, 6),
            "server_cpu_us_per_request": round(self.server_us_per_request(), 4),
            "server_cpu_util": round(self.server_util(), 4),
            "client_cpu_s": round(self.client_cpu_s, 6),
            "client_cpu_us_per_request": round(self.client_us_per_request(), 4),
            "client_cpu_util": round(self.client_util(), 4),
            "server_core_busy_s": round(self.server_core_busy_s, 2),
            "client_core_busy_s": round(self.client_core_busy_s, 2),
            "server_core_other_util": round(self.server_core_other(), 3),
            "client_core_other_util": round(self.client_core_other(), 3),
            "cpu_source": self.cpu_source,
            "client_cpu_source": self.client_cpu_source,
            "warmup_rps": round(self.warmup_rps, 2),
            "redis_benchmark_command": self.command,
            "server_command": self.server_command,
            "server_cpus_allowed": self.server_cpus,
            "client_cpus_allowed": self.client_cpus,
        })
    }

    fn from_json(r: &Value) -> Option<Run> {
        let f = |k: &str| r[k].as_f64();
        let s = |k: &str| r[k].as_str().map(str::to_owned);
        let side = by_name(&[Side::Redis, Side::Ferry], Side::name, r["server"].as_str()?)?;
        Some(Run {
            id: RunId {
                round: r["round"].as_u64()? as usize,
                side,
                test: by_name(&Test::ALL, Test::name, r["test"].as_str()?)?,
                pipeline: u32::try_from(r["pipeline"].as_u64()?).ok()?,
            },
            requests: r["requests"].as_u64()?,
            rps: f("rps")?,
            avg_us: f("avg_us")?,
            min_us: f("min_us")?,
            p50_us: f("p50_us")?,
            p95_us: f("p95_us")?,
            p99_us: f("p99_us")?,
            max_us: f("max_us")?,
            wall_s: f("wall_s")?,
            server_cpu_s: f("server_cpu_s")?,
            client_cpu_s: f("client_cpu_s")?,
            server_core_busy_s: f("server_core_busy_s")?,
            client_core_busy_s: f("client_core_busy_s")?,
            cpu_source: s("cpu_source")?,
            client_cpu_source: s("client_cpu_source")?,
            warmup_rps: f("warmup_rps")?,
            command: s("redis_benchmark_command")?,
            server_command: s("server_command")?,
            server_cpus: s("server_cpus_allowed"),
            client_cpus: s("client_cpus_allowed"),
        })
    }
}

/// The medians of one server's runs of one test at one pipeline depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Median {
    /// Requests per second.
    pub rps: f64,
    /// The lowest requests per second of the rounds.
    pub rps_min: f64,
    /// The highest.
    pub rps_max: f64,
    /// p50 latency, µs.
    pub p50_us: f64,
    /// p99 latency, µs.
    pub p99_us: f64,
    /// Server CPU per request, µs.
    pub server_us: f64,
    /// Server CPU, share of a core.
    pub server_util: f64,
    /// Client CPU per request, µs.
    pub client_us: f64,
    /// Client CPU, share of a core.
    pub client_util: f64,
}

impl Median {
    fn of(runs: &[&Run]) -> Option<Median> {
        let m = |f: &dyn Fn(&Run) -> f64| median(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
        Some(Median {
            rps: m(&|r| r.rps)?,
            rps_min: runs.iter().map(|r| r.rps).fold(f64::INFINITY, f64::min),
            rps_max: runs.iter().map(|r| r.rps).fold(0.0, f64::max),
            p50_us: m(&|r| r.p50_us)?,
            p99_us: m(&|r| r.p99_us)?,
            server_us: m(&Run::server_us_per_request)?,
            server_util: m(&Run::server_util)?,
            client_us: m(&Run::client_us_per_request)?,
            client_util: m(&Run::client_util)?,
        })
    }

    fn to_json(self) -> Value {
        json!({
            "rps": round(self.rps, 0),
            "rps_min": round(self.rps_min, 0),
            "rps_max": round(self.rps_max, 0),
            "p50_us": round(self.p50_us, 1),
            "p99_us": round(self.p99_us, 1),
            "server_cpu_us_per_request": round(self.server_us, 4),
            "server_cpu_util": round(self.server_util, 3),
            "client_cpu_us_per_request": round(self.client_us, 4),
            "client_cpu_util": round(self.client_util, 3),
        })
    }
}

/// A target of the issue, for one test at one pipeline depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// GET 4 KiB, MGET-2, LRANGE-2 at pipeline 16: at least 1.3x redis-server's requests/s,
    /// or at most 0.77x its CPU per request when redis-benchmark is the bottleneck.
    Large,
    /// The 64-byte tests: at least 0.95x the requests/s, or at most 1/0.95x the CPU per
    /// request when redis-benchmark is the bottleneck.
    Small,
}

impl Target {
    /// The target of `test` at pipeline `p`, if it has one.
    pub fn of(test: Test, p: u32) -> Option<Target> {
        match test {
            Test::Get4k | Test::Mget2 | Test::Lrange2 if p == 16 => Some(Target::Large),
            Test::Get64 | Test::Set64 => Some(Target::Small),
            _ => None,
        }
    }

    /// (least requests/s ratio, most CPU per request ratio when client-bound).
    fn bounds(self) -> (f64, f64) {
        match self {
            Target::Large => (1.3, 0.77),
            Target::Small => (0.95, 1.0 / 0.95),
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

/// Ferry against redis-server on one test at one pipeline depth.
#[derive(Debug, Clone, Copy)]
pub struct Comparison {
    /// The test.
    pub test: Test,
    /// `-P`.
    pub pipeline: u32,
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
    /// The target, if the test has one.
    pub target: Option<Target>,
    /// Whether it was met.
    pub met: Option<bool>,
}

/// A run's results.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Every measured run.
    pub runs: Vec<Run>,
}

impl Summary {
    /// The (test, pipeline) pairs measured, in run order.
    fn cases(&self) -> Vec<(Test, u32)> {
        let mut out: Vec<(Test, u32)> = Vec::new();
        for r in &self.runs {
            if !out.contains(&(r.id.test, r.id.pipeline)) {
                out.push((r.id.test, r.id.pipeline));
            }
        }
        out
    }

    /// The medians of `side` on `test` at `p`.
    pub fn median(&self, side: Side, test: Test, p: u32) -> Option<Median> {
        let runs: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| r.id.side == side && r.id.test == test && r.id.pipeline == p)
            .collect();
        Median::of(&runs)
    }

    /// Ferry against redis-server, per test and pipeline depth that both ran.
    pub fn comparisons(&self) -> Vec<Comparison> {
        self.cases()
            .into_iter()
            .filter_map(|(test, p)| {
                let redis = self.median(Side::Redis, test, p)?;
                let ferry = self.median(Side::Ferry, test, p)?;
                let rps_ratio = ferry.rps / redis.rps;
                let cpu_ratio = ferry.server_us / redis.server_us;
                let client_bound = ferry.client_util >= CLIENT_BOUND;
                let target = Target::of(test, p);
                Some(Comparison {
                    test,
                    pipeline: p,
                    redis,
                    ferry,
                    rps_ratio,
                    cpu_ratio,
                    client_bound,
                    target,
                    met: target.map(|t| t.met(rps_ratio, cpu_ratio, client_bound)),
                })
            })
            .collect()
    }

    /// The comparisons for the results file.
    pub fn comparisons_json(&self) -> Vec<Value> {
        self.comparisons()
            .iter()
            .map(|c| {
                json!({
                    "test": c.test.name(),
                    "pipeline": c.pipeline,
                    "redis_server": c.redis.to_json(),
                    "ferry": c.ferry.to_json(),
                    "rps_ratio": round(c.rps_ratio, 3),
                    "cpu_per_request_ratio": round(c.cpu_ratio, 3),
                    "client_bound": c.client_bound,
                    "target": c.target.map(Target::describe),
                    "met": c.met,
                })
            })
            .collect()
    }

    /// One JSON record per run.
    pub fn records(&self) -> Vec<Value> {
        self.runs.iter().map(Run::to_json).collect()
    }

    /// Reads a results file written by [`records`](Self::records).
    pub fn load(from: &Path) -> Result<Summary, BoxError> {
        Ok(Summary {
            runs: results::load(from, Run::from_json)?,
        })
    }

    /// Prints the medians per test and server, then the comparisons and targets.
    pub fn print(&self) {
        let rounds = self.runs.iter().map(|r| r.id.round + 1).max().unwrap_or(0);
        println!(
            "\n{}",
            if rounds > 1 {
                format!("medians of {rounds} rounds")
            } else {
                "one round".to_owned()
            }
        );
        println!(
            "{:<15} {:>3}  {:<13} {:>10} {:>13} {:>8} {:>8} {:>11} {:>8} {:>8} {:>11}",
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
            "-n"
        );
        for (test, p) in self.cases() {
            for side in [Side::Redis, Side::Ferry] {
                let Some(m) = self.median(side, test, p) else {
                    continue;
                };
                let n = self
                    .runs
                    .iter()
                    .find(|r| r.id.test == test && r.id.pipeline == p)
                    .map_or(0, |r| r.requests);
                println!(
                    "{:<15} {:>3}  {:<13} {:>10} {:>13} {:>8.0} {:>8.0} {:>11.3} {:>7.0}% {:>7.0}% {:>11}",
                    if side == Side::Redis { test.label() } else { "" },
                    if side == Side::Redis {
                        p.to_string()
                    } else {
                        String::new()
                    },
                    side.name(),
                    thousands(m.rps),
                    format!("{:.0}-{:.0}", m.rps_min / 1e3, m.rps_max / 1e3),
                    m.p50_us,
                    m.p99_us,
                    m.server_us,
                    m.server_util * 100.0,
                    m.client_util * 100.0,
                    if side == Side::Redis {
                        thousands(n as f64)
                    } else {
                        String::new()
                    },
                );
            }
        }
        println!(
            "\n{:<15} {:>3} {:>8} {:>9} {:>7}  target",
            "ferry/redis", "P", "req/s", "CPU/req", "client"
        );
        for c in self.comparisons() {
            let target = match (c.target, c.met) {
                (Some(t), Some(met)) => format!("{}: {}", t.describe(), if met { "met" } else { "MISSED" }),
                _ => "-".to_owned(),
            };
            println!(
                "{:<15} {:>3} {:>7.2}x {:>8.2}x {:>7}  {target}",
                c.test.label(),
                c.pipeline,
                c.rps_ratio,
                c.cpu_ratio,
                if c.client_bound { "bound" } else { "-" },
            );
        }
        let disturbed: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| r.server_core_other() > DISTURBED || r.client_core_other() > DISTURBED)
            .collect();
        if !disturbed.is_empty() {
            println!(
                "\n{} of {} runs were disturbed: other work (processes, kernel threads, steal) took more than {:.0}% of a core:",
                disturbed.len(),
                self.runs.len(),
                DISTURBED * 100.0
            );
            for r in disturbed.iter().take(8) {
                println!(
                    "  round {} {} {} P={}: {:.0}% of the server's core, {:.0}% of the client's",
                    r.id.round + 1,
                    r.id.side.name(),
                    r.id.test.label(),
                    r.id.pipeline,
                    r.server_core_other() * 100.0,
                    r.client_core_other() * 100.0
                );
            }
        }
        println!(
            "\nreq/s, p50, p99: redis-benchmark's (rounds k/s: the lowest and highest round). srv µs/req: the server's CPU time over the client's\n\
             life (/proc schedstat, all threads) per request; srv/cli CPU: share of one core over that\n\
             window. client \"bound\": redis-benchmark used >= {:.0}% of its core in Ferry's run, so\n\
             requests/s cannot show the server's limit and CPU per request decides the target.",
            CLIENT_BOUND * 100.0
        );
    }

    /// Draws requests/s and server CPU per request per test, one panel per pipeline depth,
    /// a bar per server, Ferry's ratio over its bar.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let comparisons = self.comparisons();
        let mut pipelines: Vec<u32> = comparisons.iter().map(|c| c.pipeline).collect();
        pipelines.sort_unstable();
        pipelines.dedup();
        let panel = |p: u32, cpu: bool| {
            let cs: Vec<&Comparison> = comparisons.iter().filter(|c| c.pipeline == p).collect();
            let value = |m: &Median| if cpu { m.server_us } else { m.rps };
            BarPanel {
                title: if cpu {
                    format!("server CPU per request, pipeline {p} (lower is better)")
                } else {
                    format!("requests/s, pipeline {p}")
                },
                y_label: if cpu { "µs per request" } else { "requests/s" }.to_owned(),
                groups: cs.iter().map(|c| c.test.label().to_owned()).collect(),
                series: vec![
                    (
                        Side::Redis.name().to_owned(),
                        cs.iter().map(|c| value(&c.redis)).collect(),
                    ),
                    (
                        Side::Ferry.name().to_owned(),
                        cs.iter().map(|c| value(&c.ferry)).collect(),
                    ),
                ],
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
        chart::grouped_bars_svg(
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
            id: RunId {
                round: 0,
                side,
                test,
                pipeline: p,
            },
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
            command: "redis-benchmark ...".into(),
            server_command: "redis-server ...".into(),
            server_cpus: Some("1".into()),
            client_cpus: Some("0".into()),
        }
    }

    #[test]
    fn targets() {
        assert_eq!(Target::of(Test::Get4k, 16), Some(Target::Large));
        assert_eq!(Target::of(Test::Get4k, 1), None);
        assert_eq!(Target::of(Test::Set4k, 16), None);
        assert_eq!(Target::of(Test::Set64, 1), Some(Target::Small));
        assert!(Target::Large.met(1.3, 1.0, false));
        assert!(!Target::Large.met(1.29, 0.5, false));
        assert!(Target::Large.met(1.0, 0.77, true));
        assert!(!Target::Large.met(1.0, 0.78, true));
        assert!(Target::Small.met(0.95, 2.0, false));
        assert!(Target::Small.met(0.9, 1.05, true));
    }

    #[test]
    fn comparisons_and_records_round_trip() {
        // Ferry as fast (the client is saturated in its run) at 0.7x the CPU: met by CPU.
        let s = Summary {
            runs: vec![
                run(Side::Redis, Test::Mget2, 16, 200_000.0, 4.0, 4.5),
                run(Side::Ferry, Test::Mget2, 16, 210_000.0, 2.8, 4.6),
                run(Side::Redis, Test::Get64, 1, 100_000.0, 8.0, 6.0),
                run(Side::Ferry, Test::Get64, 1, 90_000.0, 9.0, 6.0),
            ],
        };
        let c = s.comparisons();
        assert_eq!(c.len(), 2);
        assert!((c[0].rps_ratio - 1.05).abs() < 1e-9);
        assert!((c[0].cpu_ratio - 0.7).abs() < 1e-9);
        assert!(c[0].client_bound, "{:?}", c[0].ferry);
        assert_eq!(c[0].met, Some(true));
        assert!(!c[1].client_bound);
        assert_eq!(c[1].met, Some(false));
        assert!((c[0].ferry.server_us - 2.8).abs() < 1e-9);
        let back: Vec<Run> = s.records().iter().map(|r| Run::from_json(r).unwrap()).collect();
        assert_eq!(back.len(), 4);
        assert_eq!(back[1].id, s.runs[1].id);
        assert_eq!(back[1].rps, 210_000.0);
        assert_eq!(s.comparisons_json()[0]["met"], json!(true));
        assert_eq!(s.runs[0].server_core_other(), 0.0);
        assert!((s.runs[0].client_core_other() - 0.5 / 5.0).abs() < 1e-9);
    }

    #[test]
    fn separators() {
        assert_eq!(thousands(1_234_567.8), "1,234,568");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(0.2), "0");
        assert_eq!(thousands(-4321.0), "-4,321");
    }
}
