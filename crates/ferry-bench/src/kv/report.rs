//! The results of `ferry bench kv` (and the demo): the table per transport, the comparison
//! with the best peer, the JSON records, and the plot (p99 against achieved load).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::workload::Workload;
use super::{Measured, Sweep, System, Transport};
use crate::BoxError;
use crate::harness::Named;
use crate::harness::round;
use crate::harness::table::Table;
use crate::plot::{self, Panel, Series, XAxis};

/// Requests sampled to work out the bytes each system copies per response.
const COPY_SAMPLE: usize = 20_000;

/// A run's results (in the results file: one record per point, [`Record`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "Records", from = "Records")]
pub struct Summary {
    /// The workload's name.
    pub workload: String,
    /// Every point of every sweep.
    pub points: Vec<Measured>,
    /// Value bytes each system copies in user space per response, by transport.
    pub copies: Vec<(System, Transport, f64)>,
}

/// The records of a results file.
#[derive(Serialize, Deserialize)]
struct Records {
    records: Vec<Record>,
}

/// One point, with its workload and what its system copies per response.
#[derive(Serialize, Deserialize)]
struct Record {
    workload: String,
    #[serde(flatten)]
    point: Measured,
    copied_bytes_per_response_by_construction: Option<f64>,
}

impl From<Summary> for Records {
    fn from(s: Summary) -> Records {
        let records = s
            .points
            .iter()
            .map(|m| Record {
                workload: s.workload.clone(),
                point: m.clone(),
                copied_bytes_per_response_by_construction: s.copies_of(m.system, m.transport),
            })
            .collect();
        Records { records }
    }
}

impl From<Records> for Summary {
    fn from(r: Records) -> Summary {
        let mut summary = Summary {
            workload: String::new(),
            points: Vec::new(),
            copies: Vec::new(),
        };
        for Record {
            workload,
            mut point,
            copied_bytes_per_response_by_construction: copied,
        } in r.records
        {
            // Files from before the rate was recorded: the offered load stands for it.
            if point.rate.is_nan() {
                point.rate = point.offered;
            }
            if let Some(c) = copied
                && summary.copies_of(point.system, point.transport).is_none()
            {
                summary.copies.push((point.system, point.transport, c));
            }
            summary.workload = workload;
            summary.points.push(point);
        }
        summary
    }
}

/// Value bytes a system copies in user space to answer with values of `sizes`, at the
/// thresholds of `transport`: what each serialization path does by construction (see
/// `peers/` and `ferry_kv::KvService`). Ferry copies a value below the threshold into the
/// header segment and references the rest; prost encodes each value once into the pool
/// buffer it sends; FlatBuffers copies each into its builder and the finished buffer once
/// more into the pool buffer; Cap'n Proto copies each into its segments and the segments
/// into the pool buffer. Over shared memory, the peers' serialized responses (raw payloads)
/// are copied once more into the transport's block; Ferry's messages are not.
fn copied(system: System, transport: Transport, sizes: &[u32]) -> u64 {
    let thresholds = ferry_rpc::Thresholds::load();
    let threshold = match transport {
        // ferry-rpc's UDP connections take TCP's threshold.
        Transport::Tcp | Transport::Udp | Transport::Xdp => thresholds.tcp,
        Transport::Shm => thresholds.shm,
    };
    let sum = |f: &dyn Fn(u32) -> bool| {
        sizes
            .iter()
            .filter(|&&s| f(s))
            .map(|&s| u64::from(s))
            .sum::<u64>()
    };
    match system {
        System::Ferry => sum(&|s| (s as usize) < threshold),
        System::FerryCopy => sum(&|_| true),
        System::FerryZc => 0,
        // Over shared memory a raw payload's gather parts are copied into the block once more.
        System::Prost | System::Flatbuffers | System::Capnp => {
            let library = if system == System::Prost { 1 } else { 2 };
            let transport = u64::from(transport == Transport::Shm);
            (library + transport) * sum(&|_| true)
        }
    }
}

/// The mean value bytes copied per response, per system and transport, over a sample of
/// `workload`'s requests.
pub(super) fn copies(mut workload: Workload, systems: &[System]) -> Vec<(System, Transport, f64)> {
    let mut sizes_of = Vec::with_capacity(COPY_SAMPLE);
    for _ in 0..COPY_SAMPLE {
        let op = workload.next_op();
        let expected = super::loadgen::expected(workload.objects(), &op);
        sizes_of.push(expected.into_iter().map(|(_, _, len)| len).collect::<Vec<u32>>());
    }
    let mut out = Vec::new();
    for &t in &Transport::DEFAULT {
        for &s in systems {
            let total: u64 = sizes_of.iter().map(|sz| copied(s, t, sz)).sum();
            out.push((s, t, round(total as f64 / COPY_SAMPLE as f64, 1)));
        }
    }
    out
}

impl Summary {
    /// The highest achieved load among the points that count ([`super::rule`]), and that
    /// point.
    pub fn best(&self, system: System, transport: Transport) -> Option<&Measured> {
        self.points
            .iter()
            .filter(|m| m.system == system && m.transport == transport && m.counts)
            .max_by(|a, b| a.achieved.total_cmp(&b.achieved))
    }

    /// The point of `system` at the highest rate that every one of `systems` ran and
    /// sustained, for a comparison of work per request at equal load (the grid's rates and the
    /// baseline's are the same for every system; the knee's bisections are not).
    pub(super) fn at_common_load(
        &self,
        system: System,
        transport: Transport,
        systems: &[System],
    ) -> Option<&Measured> {
        let sustained = |s: System, rate: f64| {
            self.points
                .iter()
                .any(|m| m.system == s && m.transport == transport && m.counts && (m.rate - rate).abs() < 0.5)
        };
        self.points
            .iter()
            .filter(|m| m.system == system && m.transport == transport && m.counts)
            .filter(|m| systems.iter().all(|&s| sustained(s, m.rate)))
            .max_by(|a, b| a.rate.total_cmp(&b.rate))
    }

    fn copies_of(&self, system: System, transport: Transport) -> Option<f64> {
        self.copies
            .iter()
            .find(|(s, t, _)| *s == system && *t == transport)
            .map(|c| c.2)
    }

    fn systems(&self) -> Vec<System> {
        System::ALL
            .into_iter()
            .filter(|s| self.points.iter().any(|m| m.system == *s))
            .collect()
    }

    fn transports(&self) -> Vec<Transport> {
        Transport::DEFAULT
            .into_iter()
            .filter(|t| self.points.iter().any(|m| m.transport == *t))
            .collect()
    }

    /// Prints the table per transport and the comparisons with the best peer.
    pub fn print(&self) {
        let systems = self.systems();
        let f = |v: Option<f64>, d: usize| v.map_or("-".to_owned(), |v| format!("{v:.d$}"));
        for t in self.transports() {
            println!("\n{} over {}", self.workload, t.name());
            let mut table = Table::new([
                "system",
                "max req/s",
                "p50 µs",
                "p99 µs",
                "srv ns/req",
                "@ req/s",
                "copied B/resp",
            ]);
            for &s in &systems {
                let best = self.best(s, t);
                let common = self.at_common_load(s, t, &systems);
                table.row([
                    s.name().to_owned(),
                    f(best.map(|m| m.achieved), 0),
                    f(best.map(|m| m.p50_us), 1),
                    f(best.map(|m| m.p99_us), 1),
                    f(common.map(|m| m.server_ns), 0),
                    f(common.map(|m| m.rate), 0),
                    f(self.copies_of(s, t), 0),
                ]);
            }
            print!("{}", table.render().trim_end_matches('\n'));
            println!();
            for &s in &systems {
                if let Some(why) = self.why_empty(s, t) {
                    println!("{}: no load counted; the last tried: {why}", s.name());
                }
                let queueing = super::MAX_QUEUEING.as_secs_f64() * 1e6;
                if let Some(m) = self.best(s, t).filter(|m| m.p50_limit_us > 2.0 * queueing) {
                    println!(
                        "{}: the unloaded median was {:.1} ms (other work held the CPUs), so its points were held to {:.1} ms",
                        s.name(),
                        (m.p50_limit_us - queueing) / 1e3,
                        m.p50_limit_us / 1e3
                    );
                }
            }
            if let Some((peer, ratio, cpu)) = self.versus_best_peer(t) {
                println!(
                    "ferry / best peer ({}): {ratio:.2}x the highest load, {cpu:.2}x the server CPU per request at equal load",
                    peer.name()
                );
            }
        }
        println!(
            "\nmax req/s: the highest achieved load within 95 % of offered, every request answered and\n\
             the median at most 1 ms above the unloaded median (the sweep's first point, at {:.0} req/s);\n\
             p50/p99 at that load, from each request's scheduled send time.\n\
             srv ns/req: the server loop's work per request (its time in turns that did work: reading,\n\
             handling, sending; not polling) at the highest load every system sustained (@ req/s).\n\
             copied B/resp: value bytes copied in user space per response by each system's path, by\n\
             construction (loopback TCP copies again in the kernel).",
            super::BASELINE_RATE
        );
    }

    /// Why the row of `system` over `transport` has no figure, if it has none: the last point
    /// tried, offered against achieved, its median and how many requests went unanswered.
    pub fn why_empty(&self, system: System, transport: Transport) -> Option<String> {
        if self.best(system, transport).is_some() {
            return None;
        }
        let last = self
            .points
            .iter()
            .rfind(|m| m.system == system && m.transport == transport)?;
        Some(last.why_not.clone().unwrap_or_else(|| {
            format!(
                "offered {:.0} req/s, achieved {:.0}, p50 {:.2} ms, {} unanswered",
                last.offered,
                last.achieved,
                last.p50_us / 1e3,
                last.unanswered
            )
        }))
    }

    /// The best peer on `transport` (highest load) and Ferry's ratios to it: highest load,
    /// and server CPU per request at equal load.
    pub fn versus_best_peer(&self, transport: Transport) -> Option<(System, f64, f64)> {
        let systems = self.systems();
        let ferry = self.best(System::Ferry, transport)?;
        let peer = systems
            .iter()
            .filter(|s| s.codec_name().is_some())
            .filter_map(|&s| self.best(s, transport).map(|m| (s, m.achieved)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?
            .0;
        let pair = [System::Ferry, peer];
        let cpu = match (
            self.at_common_load(System::Ferry, transport, &pair),
            self.at_common_load(peer, transport, &pair),
        ) {
            (Some(f), Some(p)) => f.server_ns / p.server_ns,
            _ => f64::NAN,
        };
        Some((peer, ferry.achieved / self.best(peer, transport)?.achieved, cpu))
    }

    /// The settings block of the results file.
    pub(super) fn settings_json(&self, sweep: &Sweep, keys: usize) -> Value {
        json!({
            "workload": self.workload,
            "keys": keys,
            "start_rate": sweep.start_rate,
            "step": sweep.step,
            "max_points": sweep.max_points,
            "refine": sweep.refine,
            "sessions": sweep.sessions,
            "warmup_ms": sweep.warmup.as_millis() as u64,
            "window_ms": sweep.window.as_millis() as u64,
            "server_spin_us": u64::try_from(sweep.server_spin.as_micros()).unwrap_or(u64::MAX),
            "client_cpu": sweep.client_cpu,
            "server_cpu": sweep.server_cpu,
            "thresholds": {
                "tcp": ferry_rpc::Thresholds::load().tcp,
                "shm": ferry_rpc::Thresholds::load().shm,
            },
        })
    }

    /// Draws p99 latency against achieved load, one panel per transport, one line per system.
    pub fn plot(&self, path: &Path) -> Result<(), BoxError> {
        let panels: Vec<Panel> = self
            .transports()
            .into_iter()
            .map(|t| Panel {
                title: format!("{} over {}", self.workload, t.name()),
                x_label: "achieved requests/s".to_owned(),
                x_axis: XAxis::Count,
                y_label: "p99 latency (µs)".to_owned(),
                series: self
                    .systems()
                    .into_iter()
                    .map(|s| Series {
                        name: s.name().to_owned(),
                        points: self
                            .points
                            .iter()
                            .filter(|m| m.system == s && m.transport == t)
                            .map(|m| (m.achieved, m.p99_us))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        plot::log_log_svg(
            path,
            &format!("ferry bench kv: p99 against throughput ({})", self.workload),
            2,
            &panels,
        )
    }
}
