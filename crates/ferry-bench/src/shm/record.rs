//! What a run measured, and a configuration's record: the medians of its repetitions (byte
//! counts summed), as the results file holds them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::endpoint::Counters;
use super::{Notify, Point, TransportKind};
use crate::harness::{Histogram, median, round};

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Round trips in the measured window.
    pub requests: u64,
    /// Length of the window.
    pub elapsed: Duration,
    /// The timed round trips, ns.
    pub hist: Histogram,
    /// The client thread's CPU time over the window.
    pub client_cpu: Duration,
    /// The server thread's CPU time over the window.
    pub server_cpu: Duration,
    /// Requests the server answered in the window.
    pub server_requests: u64,
    /// Both sides over the measured window.
    pub window: Counters,
    /// Both sides over the whole connection (warm-up included).
    pub total: Counters,
    /// Bytes of one request's header segment (what the CPU writes per request besides
    /// framing; inline values included).
    pub head_bytes: usize,
}

impl RunResult {
    fn requests_per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn per_req(&self, v: u64) -> f64 {
        v as f64 / self.requests.max(1) as f64
    }

    fn quantile(&self, q: f64) -> f64 {
        self.hist.quantile(q).unwrap_or(0) as f64
    }
}

/// A configuration's figures. Per-request counters a transport does not have are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub transport: TransportKind,
    pub notify: Notify,
    pub payload: usize,
    pub in_flight: usize,
    pub reps: usize,
    pub requests: u64,
    /// Round trips timed, all repetitions.
    pub samples: u64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub mean_ns: f64,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub p50_ns_reps: Vec<f64>,
    pub requests_per_sec: f64,
    pub requests_per_sec_reps: Vec<f64>,
    pub client_cpu_us_per_req: f64,
    pub server_cpu_us_per_req: f64,
    pub request_head_bytes: usize,
    /// Value bytes copied into the transport's memory, whole runs.
    pub bytes_copied_in: u64,
    pub bytes_referenced: u64,
    pub bytes_referenced_per_req: f64,
    pub bytes_copied_in_per_req: f64,
    pub staged_bytes_per_req: Option<f64>,
    pub publishes_per_req: Option<f64>,
    pub receives_per_req: Option<f64>,
    pub ack_entries_per_req: Option<f64>,
    pub sleeps_per_req: Option<f64>,
    pub wakeups_per_req: Option<f64>,
    pub credit_waits: Option<u64>,
}

impl Record {
    /// The record of `point`'s `runs`.
    pub fn new(point: Point, runs: &[RunResult]) -> Record {
        let med =
            |f: &dyn Fn(&RunResult) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
        let sum = |f: &dyn Fn(&RunResult) -> u64| runs.iter().map(f).sum::<u64>();
        let shm = point.transport == TransportKind::Shm;
        let tcp = point.transport == TransportKind::Tcp;
        let per_req_if = |on: bool, f: fn(&Counters) -> u64, digits: i32| {
            on.then(|| round(med(&|r| r.per_req(f(&r.window))), digits))
        };
        Record {
            transport: point.transport,
            notify: point.notify,
            payload: point.payload,
            in_flight: point.in_flight,
            reps: runs.len(),
            requests: med(&|r| r.requests as f64) as u64,
            samples: sum(&|r| r.hist.count()),
            p50_ns: med(&|r| r.quantile(0.5)),
            p99_ns: med(&|r| r.quantile(0.99)),
            p999_ns: med(&|r| r.quantile(0.999)),
            mean_ns: round(med(&|r| r.hist.mean().unwrap_or(0.0)), 1),
            min_ns: runs.iter().filter_map(|r| r.hist.min()).min(),
            max_ns: runs.iter().filter_map(|r| r.hist.max()).max(),
            p50_ns_reps: runs.iter().map(|r| r.quantile(0.5)).collect(),
            requests_per_sec: round(med(&|r| r.requests_per_sec()), 0),
            requests_per_sec_reps: runs.iter().map(|r| round(r.requests_per_sec(), 0)).collect(),
            client_cpu_us_per_req: round(
                med(&|r| r.client_cpu.as_secs_f64() * 1e6 / r.requests.max(1) as f64),
                4,
            ),
            server_cpu_us_per_req: round(
                med(&|r| r.server_cpu.as_secs_f64() * 1e6 / r.server_requests.max(1) as f64),
                4,
            ),
            request_head_bytes: runs.first().map_or(0, |r| r.head_bytes),
            bytes_copied_in: sum(&|r| r.total.copied_in),
            bytes_referenced: sum(&|r| r.total.referenced),
            bytes_referenced_per_req: round(med(&|r| r.per_req(r.window.referenced)), 1),
            bytes_copied_in_per_req: round(med(&|r| r.per_req(r.window.copied_in)), 1),
            staged_bytes_per_req: per_req_if(tcp, |c| c.staged, 1),
            publishes_per_req: per_req_if(shm || tcp, |c| c.publishes, 4),
            receives_per_req: per_req_if(shm || tcp, |c| c.receives, 4),
            ack_entries_per_req: per_req_if(shm, |c| c.ack_entries, 4),
            sleeps_per_req: per_req_if(shm, |c| c.sleeps, 4),
            wakeups_per_req: per_req_if(shm, |c| c.wakeups, 4),
            credit_waits: shm.then(|| sum(&|r| r.window.credit_waits)),
        }
    }
}
