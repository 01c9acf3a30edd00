//! What a sweep's records show: the table, the findings behind the auto rule, the targets and
//! the plot.

use std::collections::BTreeMap;
use std::path::Path;

use ferry_net::Mode;

use super::record::Record;
use super::{TARGET_FIELDS, TARGET_SIZE};
use crate::BoxError;
use crate::harness::lifecycle::Target;
use crate::harness::table::Table;
use crate::harness::{median, unique};
use crate::plot::{self, bytes_label};

/// The copy-mode record of `r`'s configuration.
fn copy_of<'a>(all: &'a [Record], r: &Record) -> Option<&'a Record> {
    all.iter().find(|c| c.same_point(r, Mode::Copy))
}

/// Gather records with their copy-mode twin, batched.
fn gather_and_copy(all: &[Record]) -> impl Iterator<Item = (&Record, &Record)> {
    all.iter()
        .filter(|g| g.mode == Mode::Gather.name() && g.batched)
        .filter_map(|g| Some((g, copy_of(all, g)?)))
}

/// The table and the findings.
pub fn table(all: &[Record]) {
    println!(
        "xcopy: ratio to copy mode in the same group; copied B: bytes of field values copied in user space per message; staged B: all bytes the CPU wrote to staging per message; kcopied: share of zero-copy sends the kernel reported as copied.\n"
    );
    let mut t = Table::new([
        "mode", "size", "fields", "batch", "msgs/s", "xcopy", "snd us/m", "xcopy", "rcv us/m", "copied B",
        "staged B", "calls/m", "kcopied",
    ]);
    for r in all {
        let copy = copy_of(all, r);
        let ratio = |f: fn(&Record) -> f64| copy.map_or("-".to_owned(), |c| format!("{:.2}", f(r) / f(c)));
        t.row([
            if r.effective_mode == r.mode {
                r.mode.clone()
            } else {
                format!("{}>{}", r.mode, r.effective_mode)
            },
            bytes_label(r.size as f64),
            r.fields.to_string(),
            (if r.batched { "yes" } else { "no" }).to_owned(),
            format!("{:.0}", r.msgs_per_sec),
            ratio(|r| r.msgs_per_sec),
            format!("{:.3}", r.sender_cpu_us_per_msg),
            ratio(|r| r.sender_cpu_us_per_msg),
            format!("{:.3}", r.receiver_cpu_us_per_msg),
            format!("{:.1}", r.copied_bytes_per_msg),
            format!("{:.1}", r.staged_bytes_per_msg),
            format!("{:.4}", r.send_calls_per_msg),
            r.kernel_copied_rate
                .map_or("-".to_owned(), |k| format!("{:.0}%", k * 100.0)),
        ]);
    }
    t.print();

    println!("Gather vs copy from 4 KiB up, batched (target: >= 1.0x, no user-space copy of values):");
    let mut t = Table::new(["size", "fields", "msgs/s", "sender CPU", "gather copied B/msg"]);
    for (g, c) in gather_and_copy(all).filter(|(g, _)| g.size >= 4096) {
        t.row([
            bytes_label(g.size as f64),
            g.fields.to_string(),
            format!("{:.2}x", g.msgs_per_sec / c.msgs_per_sec),
            format!("{:.2}x", g.sender_cpu_us_per_msg / c.sender_cpu_us_per_msg),
            format!("{}", g.copied_bytes_per_msg),
        ]);
    }
    t.print();

    let sum = |f: fn(&Record) -> u64| all.iter().map(f).sum::<u64>();
    let copied_without_straddle: u64 = all
        .iter()
        .filter(|r| r.recv_straddled_frames == 0)
        .map(|r| r.recv_copied_bytes)
        .sum();
    println!(
        "Receive side: {} frames, {} straddled a read buffer, {} B copied in user space ({copied_without_straddle} B in configurations where no frame straddled).\n",
        sum(|r| r.recv_frames),
        sum(|r| r.recv_straddled_frames),
        sum(|r| r.recv_copied_bytes),
    );

    println!(
        "Gather / copy by field size, batched (median over sizes and field counts; > 1 favours gather):"
    );
    let mut by_field: BTreeMap<usize, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (g, c) in gather_and_copy(all) {
        let (throughput, cpu) = by_field.entry(g.field_size).or_default();
        throughput.push(g.msgs_per_sec / c.msgs_per_sec);
        cpu.push(c.sender_cpu_us_per_msg / g.sender_cpu_us_per_msg);
    }
    let mut t = Table::new(["field", "throughput", "sender CPU saving", "configurations"]);
    for (field, (throughput, cpu)) in &by_field {
        t.row([
            bytes_label(*field as f64),
            format!("{:.2}x", median(throughput).unwrap_or(0.0)),
            format!("{:.2}x", median(cpu).unwrap_or(0.0)),
            throughput.len().to_string(),
        ]);
    }
    t.print();
}

/// Batched against unbatched per mode at the target configuration, and gather against copy
/// from 4 KiB up (its lowest ratio).
pub fn targets(all: &[Record]) -> Vec<Target> {
    let find = |mode: Mode, batched: bool| {
        all.iter().find(|r| {
            (r.mode.as_str(), r.size, r.fields, r.batched)
                == (mode.name(), TARGET_SIZE, TARGET_FIELDS, batched)
        })
    };
    let mut targets: Vec<Target> = Mode::ALL
        .iter()
        .filter_map(|&mode| {
            let (b, u) = (find(mode, true)?, find(mode, false)?);
            Some(Target::ratio(
                format!(
                    "{mode} batched / unbatched msgs/s, {} x {TARGET_FIELDS} fields",
                    bytes_label(TARGET_SIZE as f64)
                ),
                Some(b.msgs_per_sec / u.msgs_per_sec),
                true,
                2.0,
            ))
        })
        .collect();
    let lowest = gather_and_copy(all)
        .filter(|(g, _)| g.size >= 4096)
        .map(|(g, c)| (g.msgs_per_sec / c.msgs_per_sec, g))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((x, g)) = lowest {
        targets.push(Target::ratio(
            format!(
                "gather / copy msgs/s from 4 KiB up, lowest (at {} x {} fields)",
                bytes_label(g.size as f64),
                g.fields
            ),
            Some(x),
            true,
            1.0,
        ));
    }
    targets
}

/// Messages/s and sender CPU per message against message size, per mode, batched and
/// unbatched, at the unbatched runs' field count.
pub fn plot(all: &[Record], path: &Path) -> Result<(), BoxError> {
    let fields = all
        .iter()
        .find(|r| !r.batched)
        .map_or(TARGET_FIELDS, |r| r.fields);
    let modes = unique(all.iter().map(|r| r.mode.as_str()));
    let panel = |what: &str, y_label: &str, batched: bool, y: fn(&Record) -> f64| plot::Panel {
        title: format!(
            "{what}, {}, {fields} fields",
            if batched { "batched" } else { "unbatched" }
        ),
        x_label: "message size".to_owned(),
        x_axis: plot::XAxis::Bytes,
        y_label: y_label.to_owned(),
        series: modes
            .iter()
            .map(|&mode| plot::Series {
                name: mode.to_owned(),
                points: all
                    .iter()
                    .filter(|r| r.mode == mode && r.fields == fields && r.batched == batched)
                    .map(|r| (r.size as f64, y(r)))
                    .collect(),
            })
            .collect(),
    };
    let panels: Vec<plot::Panel> = [true, false]
        .into_iter()
        .flat_map(|batched| {
            [
                panel("messages/s", "messages/s", batched, |r| r.msgs_per_sec),
                panel("sender CPU per message", "us/msg", batched, |r| {
                    r.sender_cpu_us_per_msg
                }),
            ]
        })
        .filter(|p| p.series.iter().any(|s| !s.points.is_empty()))
        .collect();
    plot::log_log_svg(
        path,
        "ferry-net over TCP loopback: one-way stream, per send mode",
        2,
        &panels,
    )
}
