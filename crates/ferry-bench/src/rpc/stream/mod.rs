//! The streaming section of `ferry bench rpc` (issue 26): a download of many large messages
//! (server streaming), an upload of the same (client streaming), and a ping-pong of small and
//! medium messages on one bidirectional stream, with Ferry over TCP and shared memory and
//! with tonic, in one run.
//!
//! ```text
//!  tonic.rs   the tonic peer: schema/stream.proto's `Streams` service, prost messages
//! ```
//!
//! A run is one stream on a fresh connection, client and server on their own pinned CPUs,
//! each a current-thread runtime: the bytes (or round trips) it carried, its wall time, each
//! side's thread CPU time over it (the server's read by a unary call before and after), and
//! for a ping-pong every round trip's latency.

pub(super) mod tonic;

use std::time::Duration;

use crate::harness::Histogram;

/// What one stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The server sends `count` messages of `size` bytes after one request.
    Download,
    /// The client sends `count` messages of `size` bytes, then one answer comes.
    Upload,
    /// `count` round trips of one `size`-byte message each way.
    PingPong,
}

/// One streaming experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        false => Err(format!("a message of {} B, expected {size} B as written", data.len())),
    }
}
