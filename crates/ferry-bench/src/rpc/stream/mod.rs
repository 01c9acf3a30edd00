//! The streaming section of `ferry bench rpc` (issue 26): a download of many large messages
//! (server streaming), an upload of the same (client streaming), and a ping-pong of small and
//! medium messages on one bidirectional stream, with Ferry over TCP and shared memory and
//! with tonic, in one run.
//!
//! ```text
//!  ferry.rs   the Ferry peer: an AsyncServer and an AsyncChannel, Record messages
//!  tonic.rs   the tonic peer: schema/stream.proto's `Streams` service, prost messages
//!  report.rs  records (medians over repetitions), table, targets, plot panels
//! ```
//!
//! A run is a warm-up stream ([`StreamPoint::warmup`]) then the measured one on a fresh
//! connection, client and server on their own pinned CPUs, each a current-thread runtime:
//! the measured stream's bytes (or round trips) it carried, its wall time, each
//! side's thread CPU time over it (the server's read by a unary call before and after), and
//! for a ping-pong every round trip's latency, then (Ferry) as many unary calls of the same
//! message on the same connection, each timed the same way: what the ping-pong target
//! compares with.

pub(super) mod ferry;
mod report;
pub(super) mod tonic;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Cpus;
use super::plan::{System, Transport};
use crate::BoxError;
use crate::harness::Histogram;
use crate::harness::Named;
use crate::plot::bytes_label;

pub(super) use report::{Record, panels, summarize, table, targets};

/// The download's and the upload's message size, and their total: full and `--quick`.
const CHUNK: usize = 64 << 10;
const FULL_BYTES: usize = 256 << 20;
const QUICK_BYTES: usize = 16 << 20;
/// The ping-pong's message sizes, and its round trips: full and `--quick`.
const PING_SIZES: [usize; 2] = [64, 4096];
const FULL_ROUND_TRIPS: usize = 20_000;
const QUICK_ROUND_TRIPS: usize = 2_000;

/// What one stream carries. Its name in the records is the kebab-case of the variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// The server sends `count` messages of `size` bytes after one request.
    Download,
    /// The client sends `count` messages of `size` bytes, then one answer comes.
    Upload,
    /// `count` round trips of one `size`-byte message each way.
    PingPong,
}

/// One streaming experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamPoint {
    /// What the stream carries.
    pub shape: Shape,
    /// Bytes per message.
    pub size: usize,
    /// Messages (one way), or round trips.
    pub count: usize,
}

/// What one run of a [`StreamPoint`] measured.
#[derive(Debug, Clone, Default)]
pub struct StreamMeasured {
    /// Payload bytes the stream carried (one way; both ways for a ping-pong).
    pub bytes: u64,
    /// From the open to the last message checked.
    pub elapsed: Duration,
    /// The client thread's CPU time over the stream.
    pub client_cpu: Duration,
    /// The server thread's CPU time over the stream.
    pub server_cpu: Duration,
    /// Round-trip latencies (ping-pong only).
    pub round_trips: Histogram,
    /// The same message's unary call on the same connection, as many, each timed the same
    /// way (Ferry's ping-pong only).
    pub unary: Histogram,
    /// Messages that reached the client's or the server's code copied rather than in place
    /// (Ferry over shared memory: the tokio driver copies a frame its reader is not waiting
    /// for, see `ferry_rpc::tokio`).
    pub client_copied: u64,
    pub server_copied: u64,
}

/// One configuration of the streaming section: who carries the stream, over what, and what
/// it carries. In the records: `system`, `transport`, `shape`, `size`, `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamConfig {
    /// `ferry-hybrid` (Ferry messages, large values by reference) or `tonic`.
    pub system: System,
    /// What carries it (tonic: TCP).
    pub transport: Transport,
    #[serde(flatten)]
    pub point: StreamPoint,
}

impl StreamConfig {
    pub(super) fn label(&self) -> String {
        format!(
            "{} {} {} {} x {}",
            self.system.name(),
            self.transport.name(),
            self.point.shape.name(),
            self.point.count,
            bytes_label(self.point.size as f64)
        )
    }

    /// Where it goes in the table: by experiment, then system and transport.
    pub(super) fn display_key(&self) -> (Shape, usize, System, Transport) {
        (self.point.shape, self.point.size, self.system, self.transport)
    }
}

/// The streaming configurations of one repetition, in the order they run: each experiment
/// with tonic, then Ferry over each of `transports`, so that what a target compares runs
/// close together in time. `systems` keeps those of `ferry-hybrid` and `tonic` it names;
/// `count` (`--count`) replaces the messages (or round trips) of every experiment.
pub(super) fn plan(
    systems: &[System],
    transports: &[Transport],
    quick: bool,
    count: Option<u64>,
) -> Vec<StreamConfig> {
    let (bytes, round_trips) = match quick {
        true => (QUICK_BYTES, QUICK_ROUND_TRIPS),
        false => (FULL_BYTES, FULL_ROUND_TRIPS),
    };
    let messages = |default: usize| count.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut points = vec![
        StreamPoint {
            shape: Shape::Download,
            size: CHUNK,
            count: messages(bytes / CHUNK),
        },
        StreamPoint {
            shape: Shape::Upload,
            size: CHUNK,
            count: messages(bytes / CHUNK),
        },
    ];
    points.extend(PING_SIZES.map(|size| StreamPoint {
        shape: Shape::PingPong,
        size,
        count: messages(round_trips),
    }));
    let mut carriers = Vec::new();
    if systems.contains(&System::Tonic) {
        carriers.push((System::Tonic, Transport::Tcp));
    }
    if systems.contains(&System::FerryHybrid) {
        carriers.extend(transports.iter().map(|&t| (System::FerryHybrid, t)));
    }
    points
        .into_iter()
        .flat_map(|point| {
            carriers.iter().map(move |&(system, transport)| StreamConfig {
                system,
                transport,
                point,
            })
        })
        .collect()
}

/// One run of `config`: the client on `cpus.0`, the server on `cpus.1`, each on a thread of
/// its own (the caller's thread stays unpinned).
pub(super) fn run(config: &StreamConfig, cpus: Cpus) -> Result<StreamMeasured, BoxError> {
    std::thread::scope(|s| {
        let client = std::thread::Builder::new()
            .name("streams-client".to_owned())
            .spawn_scoped(s, || match config.system {
                System::Tonic => tonic::run(&config.point, cpus),
                _ => ferry::run(&config.point, config.transport, cpus),
            })?;
        crate::harness::joined("the streams' client", client.join())
    })
}

impl StreamPoint {
    /// The warm-up before it on the same connection: a tenth of its messages (at least one),
    /// so that the measured stream finds the connection's buffers and pools grown, as the
    /// echo's warm-up does.
    pub(super) fn warmup(&self) -> StreamPoint {
        StreamPoint {
            count: (self.count / 10).max(1),
            ..*self
        }
    }
}

/// A stream (or a part of a run) at most takes this long.
const RUN_LIMIT: std::time::Duration = Duration::from_secs(60);

/// `fut`'s result, or an error naming `what` if it takes longer than [`RUN_LIMIT`].
pub(super) async fn in_time<T>(
    what: &str,
    fut: impl std::future::Future<Output = Result<T, BoxError>>,
) -> Result<T, BoxError> {
    tokio::time::timeout(RUN_LIMIT, fut)
        .await
        .map_err(|_| format!("{what} did not finish in {RUN_LIMIT:?}"))?
}

/// The byte at `i` of every message: what a receiver checks (first and last byte).
pub(super) fn fill(i: usize) -> u8 {
    (i % 251) as u8
}

/// A message of `size` bytes as [`fill`] writes it.
pub(super) fn payload(size: usize) -> Vec<u8> {
    (0..size).map(fill).collect()
}

/// Checks a received message of `size` bytes: its length and its first and last bytes.
pub(super) fn check(data: &[u8], size: usize) -> Result<(), String> {
    let ok = data.len() == size && (size == 0 || (data[0] == fill(0) && data[size - 1] == fill(size - 1)));
    match ok {
        true => Ok(()),
        false => Err(format!(
            "a message of {} B, expected {size} B as written",
            data.len()
        )),
    }
}
