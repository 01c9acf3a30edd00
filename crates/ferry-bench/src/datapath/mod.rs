//! `ferry bench datapath`: one-way streams of Ferry messages over TCP loopback, in every send
//! mode of `ferry-net`, swept over message size and number of fields
//! (`docs/benchmarks/datapath.md` has the method and the results).
//!
//! One run ([`measure`]) is one connection between a sender and a receiver thread pinned to
//! different CPUs. The sender queues a [`Record`](ferry::sample::Record) of pool-resident
//! fields per message as fast as it can, then flushes and waits until the kernel released every
//! zero-copy buffer; the receiver validates each frame in place and touches every field. The
//! window runs from a `MARK` frame to an `END` frame:
//!
//! ```text
//!  sender (CPU a)   warm-up msgs │ MARK │ measured msgs ............. │ END │ flush, wait_idle
//!  receiver (CPU b) warm-up msgs │ MARK: Reading ── decode+touch ──── END: Reading
//! ```
//!
//! The zero-copy threshold is 0 by default, so every field is a zero-copy value and the send
//! mode alone decides whether it is copied or posted as a gather entry: the sweep shows a gather
//! entry's cost against a copy's at every field size, which the auto rule needs.

use std::path::Path;

use ferry_net::{Config, Mode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::harness;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::progress::Progress;

mod receiver;
mod record;
mod report;
mod sender;
mod stream;

pub use crate::BoxError;
pub use crate::harness::Budget;
use record::Record;
pub use stream::{Pools, RunResult, RunSpec, SendWindow, adjacent_fields, measure};

/// Frame kinds of the benchmark stream.
const DATA: u16 = 1;
const MARK: u16 = 2;
const END: u16 = 3;

/// Message sizes and field counts of the full sweep and of `--quick`.
const SIZES: [usize; 7] = [16, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10];
const FIELDS: [usize; 5] = [1, 2, 4, 8, 16];
const QUICK_SIZES: [usize; 4] = [64, 1 << 10, 4 << 10, 64 << 10];
const QUICK_FIELDS: [usize; 2] = [1, 8];
/// The configuration the issue's batching target names.
const TARGET_SIZE: usize = 4 << 10;
const TARGET_FIELDS: usize = 8;

/// Options of `ferry bench datapath`. `--quick` sweeps sizes 64 B, 1 KiB, 4 KiB, 64 KiB x 1
/// and 8 fields, unbatched only at 4 KiB x 8 fields, 80 ms per repetition: well under 30 s.
/// `--plot` draws messages/s and sender CPU per message against message size, per mode, at
/// `--unbatched-fields` fields, batched and unbatched.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Total message sizes in bytes, comma-separated (default: 16 B .. 64 KiB, or the quick set).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Field counts, comma-separated (default: 1,2,4,8,16, or 1,8 with --quick).
    #[arg(long, value_delimiter = ',')]
    fields: Vec<usize>,
    /// Send modes, comma-separated (default: copy,gather,zerocopy,uring,auto).
    #[arg(long, value_delimiter = ',')]
    modes: Vec<Mode>,
    /// Sizes also run unbatched (`batch_frames = 1`), at `--unbatched-fields` fields
    /// (default: every size, or 4096 with --quick).
    #[arg(long, value_delimiter = ',')]
    unbatched_sizes: Vec<usize>,
    /// Field count of the unbatched runs (and of the plot).
    #[arg(long, default_value_t = TARGET_FIELDS)]
    unbatched_fields: usize,
    /// Repetitions per configuration; every reported number is the median over them.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Zero-copy threshold of the messages' context, in bytes. 0 makes every pool-resident
    /// field a zero-copy value, so that the send mode decides its fate.
    #[arg(long, default_value_t = 0)]
    threshold: usize,
    /// CPU for the sender thread.
    #[arg(long, default_value_t = 0)]
    sender_cpu: usize,
    /// CPU for the receiver thread (the same as the sender's when only one is available).
    #[arg(long, default_value_t = 1)]
    receiver_cpu: usize,
    /// TCP congestion control set on both ends.
    #[arg(long, default_value = "cubic")]
    congestion: String,
}

/// Every configuration's record, in the order they ran.
#[derive(Debug, Serialize, Deserialize)]
struct Records {
    records: Vec<Record>,
}

/// The sweep: groups of configurations sharing size, fields and batching, run side by side.
struct Datapath<'a> {
    args: &'a Args,
    budget: Budget,
    reps: usize,
    receiver_cpu: usize,
    modes: Vec<Mode>,
    /// (size, fields, batched)
    groups: Vec<(usize, usize, bool)>,
}

impl<'a> Datapath<'a> {
    fn new(args: &'a Args) -> Datapath<'a> {
        let or = |given: &[usize], quick: &[usize], full: &[usize]| match () {
            _ if !given.is_empty() => given.to_vec(),
            _ if args.common.quick => quick.to_vec(),
            _ => full.to_vec(),
        };
        let sizes = or(&args.sizes, &QUICK_SIZES, &SIZES);
        let fields = or(&args.fields, &QUICK_FIELDS, &FIELDS);
        let unbatched = or(&args.unbatched_sizes, &[TARGET_SIZE], &sizes);
        let mut groups: Vec<_> = sizes
            .iter()
            .flat_map(|&size| fields.iter().map(move |&f| (size, f, true)))
            .collect();
        groups.extend(unbatched.iter().map(|&size| (size, args.unbatched_fields, false)));
        Datapath {
            args,
            budget: args.common.budget(80, 250),
            reps: args.reps.max(1),
            receiver_cpu: harness::server_cpu(args.sender_cpu, args.receiver_cpu),
            modes: harness::or_all(&args.modes, &Mode::ALL),
            groups,
        }
    }

    fn settings(&self, congestion_error: Option<String>) -> Value {
        let args = self.args;
        json!({
            "transport": "TCP over loopback (127.0.0.1), one connection per repetition, one-way",
            "budget": self.budget.to_json("messages"),
            "warmup": "a tenth of the budget, before the measured window",
            "reps": self.reps,
            "statistic": "median over repetitions, per metric; counts (zc_*, recv_*) summed",
            "threshold": args.threshold,
            "batch_frames_batched": Config::default().batch_frames,
            "batch_frames_unbatched": 1,
            "sender_cpu": args.sender_cpu,
            "receiver_cpu": self.receiver_cpu,
            "congestion": args.congestion,
            "congestion_error": congestion_error,
            "receiver": "Record::decode_shared on each frame, reads every field's length and first byte",
        })
    }
}

impl Benchmark for Datapath<'_> {
    const NAME: &'static str = "datapath";
    type Records = Records;

    fn plan(&self) -> u64 {
        (self.groups.len() * self.reps * self.modes.len()) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Records), BoxError> {
        let args = self.args;
        progress.suspend(|| {
            println!(
                "ferry bench datapath: one-way TCP loopback, sender on CPU {}, receiver on CPU {}, {} congestion control, {} repetition(s) of {} per configuration (median shown), zero-copy threshold {} B.",
                args.sender_cpu,
                self.receiver_cpu,
                args.congestion,
                self.reps,
                self.budget.describe("messages"),
                args.threshold,
            )
        });
        let pools = Pools::new()?;
        let (mut records, mut congestion_error) = (Vec::new(), None);
        for &(size, fields, batched) in &self.groups {
            let fields = fields.clamp(1, size.max(1));
            let values = pools.values(size, fields)?;
            let adjacent = adjacent_fields(&pools.send, &values);
            let batch_frames = if batched {
                Config::default().batch_frames
            } else {
                1
            };
            let mut runs = vec![Vec::new(); self.modes.len()];
            // Repetitions interleave the modes, so that a noisy moment hits every mode alike.
            for _ in 0..self.reps {
                for (i, &mode) in self.modes.iter().enumerate() {
                    let spec = RunSpec {
                        mode,
                        batch_frames,
                        values: &values,
                        threshold: args.threshold,
                        budget: self.budget,
                        cpus: (Some(args.sender_cpu), Some(self.receiver_cpu)),
                        congestion: Some(&args.congestion),
                    };
                    let what = format!("{mode}, {size} B x {fields} fields, batched {batched}");
                    progress.start(what.clone());
                    let r = measure(&spec, &pools).map_err(|e| format!("{what}: {e}"))?;
                    progress.done();
                    congestion_error = congestion_error.or(r.congestion_error.clone());
                    runs[i].push(r);
                }
            }
            records.extend(self.modes.iter().zip(&runs).map(|(&mode, runs)| {
                let point = record::Point {
                    mode,
                    size,
                    fields,
                    batched,
                };
                Record::new(point, batch_frames, adjacent, runs)
            }));
        }
        if let Some(e) = &congestion_error {
            eprintln!(
                "warning: could not set {} congestion control: {e}",
                args.congestion
            );
        }
        Ok((self.settings(congestion_error), Records { records }))
    }

    fn table(records: &Records) {
        report::table(&records.records);
    }

    fn targets(records: &Records) -> Vec<Target> {
        report::targets(&records.records)
    }

    fn plot(records: &Records, path: &Path) -> Result<(), BoxError> {
        report::plot(&records.records, path)
    }
}

/// Runs the sweep (or reads `--from`), prints the table and the targets, writes the JSON
/// (and the plot).
pub fn run(args: &Args) -> Result<(), BoxError> {
    lifecycle::main(&Datapath::new(args), &args.common).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_results_read_back_to_the_same_json() {
        let (doc, records): (Value, Records) = lifecycle::committed("datapath-results.json");
        let again = serde_json::to_value(records).unwrap();
        let (before, after) = (
            doc["records"].as_array().unwrap(),
            again["records"].as_array().unwrap(),
        );
        assert_eq!(before.len(), after.len());
        for (b, a) in before.iter().zip(after) {
            let mut a = a.as_object().unwrap().clone();
            // Counted since these results were written: absent there, read as 0.
            assert_eq!(a.remove("recv_split_headers"), Some(json!(0)));
            assert_eq!(&Value::Object(a), b);
        }
    }
}
