//! A configuration's record: the medians of its repetitions (counts summed), as the results
//! file holds them.

use ferry_net::Mode;
use serde::{Deserialize, Serialize};

use super::stream::RunResult;
use crate::harness::{median, round};

/// One configuration of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub mode: Mode,
    pub size: usize,
    pub fields: usize,
    pub batched: bool,
}

/// A configuration's figures: medians over its repetitions; `zc_*` and `recv_*` counts summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub mode: String,
    /// The mode the connections used (a fallback if the kernel lacks a feature).
    pub effective_mode: String,
    pub size: usize,
    pub fields: usize,
    pub field_size: usize,
    pub batched: bool,
    pub batch_frames: usize,
    pub reps: usize,
    /// See [`super::stream::adjacent_fields`].
    pub adjacent_fields: usize,
    pub messages: u64,
    pub msgs_per_sec: f64,
    pub msgs_per_sec_reps: Vec<f64>,
    pub payload_mib_per_sec: f64,
    pub sender_cpu_us_per_msg: f64,
    pub receiver_cpu_us_per_msg: f64,
    pub copied_bytes_per_msg: f64,
    pub referenced_bytes_per_msg: f64,
    pub staged_bytes_per_msg: f64,
    pub send_calls_per_msg: f64,
    pub batches_per_msg: f64,
    /// Share of zero-copy sends the kernel reported as copied; `None` without any.
    pub kernel_copied_rate: Option<f64>,
    pub zc_calls_completed: u64,
    pub zc_calls_copied: u64,
    pub enobufs: u64,
    pub recv_frames: u64,
    pub recv_reads_per_msg: f64,
    pub recv_straddled_frames: u64,
    /// Absent from results written before it was counted.
    #[serde(default)]
    pub recv_split_headers: u64,
    pub recv_copied_bytes: u64,
}

impl Record {
    /// The record of `point`'s `runs`, with `batch_frames` per batch and `adjacent` fields
    /// back to back in memory.
    pub fn new(point: Point, batch_frames: usize, adjacent: usize, runs: &[RunResult]) -> Record {
        let med =
            |f: &dyn Fn(&RunResult) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
        let per_msg = |f: fn(&RunResult) -> u64| med(&|r| r.per_msg(f(r)));
        let sum = |f: fn(&RunResult) -> u64| runs.iter().map(f).sum::<u64>();
        let msgs_per_sec = med(&|r| r.msgs_per_sec());
        let (completed, copied) = (
            sum(|r| r.send_total.completions.completed),
            sum(|r| r.send_total.completions.copied),
        );
        let effective_mode = runs.first().map_or(point.mode, |r| r.effective_mode);
        Record {
            mode: point.mode.name().to_owned(),
            effective_mode: effective_mode.name().to_owned(),
            size: point.size,
            fields: point.fields,
            field_size: point.size / point.fields.max(1),
            batched: point.batched,
            batch_frames,
            reps: runs.len(),
            adjacent_fields: adjacent,
            messages: med(&|r| r.messages as f64) as u64,
            msgs_per_sec: round(msgs_per_sec, 0),
            msgs_per_sec_reps: runs.iter().map(|r| round(r.msgs_per_sec(), 0)).collect(),
            payload_mib_per_sec: round(msgs_per_sec * point.size as f64 / f64::from(1 << 20), 1),
            sender_cpu_us_per_msg: round(med(&|r| r.sender_us_per_msg()), 4),
            receiver_cpu_us_per_msg: round(med(&|r| r.receiver_us_per_msg()), 4),
            copied_bytes_per_msg: round(per_msg(|r| r.send.values_copied), 2),
            referenced_bytes_per_msg: round(per_msg(|r| r.send.values_referenced), 2),
            staged_bytes_per_msg: round(per_msg(|r| r.send.staged_bytes), 2),
            send_calls_per_msg: round(per_msg(|r| r.send.send_calls), 5),
            batches_per_msg: round(per_msg(|r| r.send.batches), 5),
            kernel_copied_rate: (completed > 0).then(|| round(copied as f64 / completed as f64, 4)),
            zc_calls_completed: completed,
            zc_calls_copied: copied,
            enobufs: sum(|r| r.send_total.enobufs),
            recv_frames: sum(|r| r.recv.frames),
            recv_reads_per_msg: round(per_msg(|r| r.recv.reads), 5),
            recv_straddled_frames: sum(|r| r.recv.straddled),
            recv_split_headers: sum(|r| r.recv.split_headers),
            recv_copied_bytes: sum(|r| r.recv.copied),
        }
    }

    /// Whether `self` is `other`'s configuration in mode `mode`.
    pub fn same_point(&self, other: &Record, mode: Mode) -> bool {
        self.mode == mode.name()
            && (self.size, self.fields, self.batched) == (other.size, other.fields, other.batched)
    }
}
