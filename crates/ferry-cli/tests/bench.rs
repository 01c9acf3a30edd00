//! `ferry bench datapath` and the demo's datapath section as real processes, on a tiny sweep
//! with a fixed message count. Behaviour only: which records exist and whether their counters
//! agree with what each mode does; no timing is asserted.

mod common;

use common::{assert_chart, assert_one_record_each, ferry, number, stderr, success, sweep};
use std::collections::BTreeSet;

const MODES: [&str; 5] = ["copy", "gather", "zerocopy", "uring", "auto"];

#[test]
fn datapath_writes_one_sane_record_per_configuration() {
    let run = sweep(
        "bench-test",
        "datapath",
        &[
            "--sizes",
            "256,4096",
            "--fields",
            "1,8",
            "--unbatched-sizes",
            "4096",
            "--count",
            "300",
            "--reps",
            "1",
        ],
    );
    let stdout = &run.stdout;
    assert!(stdout.contains("msgs/s"), "no table on stdout:\n{stdout}");

    let doc = &run.doc;
    assert_eq!(doc["settings"]["budget"]["messages"], 300);

    let records = doc["records"].as_array().unwrap();
    // 2 sizes x 2 field counts x 5 modes batched, plus 4 KiB x 8 fields unbatched in every mode.
    let mut expect = BTreeSet::new();
    for mode in MODES {
        for size in [256u64, 4096] {
            for fields in [1u64, 8] {
                expect.insert((mode.to_owned(), size, fields, true));
            }
        }
        expect.insert((mode.to_owned(), 4096, 8, false));
    }
    assert_one_record_each(records, &expect, |r| {
        (
            r["mode"].as_str().unwrap().to_owned(),
            r["size"].as_u64().unwrap(),
            r["fields"].as_u64().unwrap(),
            r["batched"].as_bool().unwrap(),
        )
    });

    for r in records {
        let what = format!("{r}");
        let num = |k: &str| number(r, k);
        let size = num("size");
        assert_eq!(r["messages"], 300, "{what}");
        assert_eq!(
            r["recv_frames"], 301,
            "the data messages and the end frame: {what}"
        );
        let rate = num("msgs_per_sec");
        assert!(rate > 0.0 && rate.is_finite(), "{what}");
        // One repetition: the median is that repetition's figure, and the payload rate is the
        // message rate times the size (both rounded: msgs/s to 1, MiB/s to 0.1).
        assert_eq!(r["reps"], 1, "{what}");
        assert_eq!(r["msgs_per_sec_reps"], serde_json::json!([rate]), "{what}");
        let mib = rate * size / f64::from(1 << 20);
        assert!(
            (num("payload_mib_per_sec") - mib).abs() <= 0.05 + size / f64::from(1 << 20),
            "{what}"
        );
        assert_eq!(num("field_size"), (size / num("fields")).floor(), "{what}");
        assert!(num("adjacent_fields") < num("fields"), "{what}");
        // getrusage counts CPU time in scheduler ticks on many kernels, so a 300-message run
        // may honestly read 0; what must hold is a real, non-negative number per message.
        for cpu in ["sender_cpu_us_per_msg", "receiver_cpu_us_per_msg"] {
            let us = num(cpu);
            assert!(us.is_finite() && us >= 0.0, "{cpu}: {what}");
        }
        assert!(
            num("staged_bytes_per_msg") > 0.0,
            "every frame stages its header: {what}"
        );
        let calls = num("send_calls_per_msg");
        if r["batched"] == true {
            assert!(calls > 0.0 && calls < 1.0, "batched sends share calls: {what}");
        } else {
            assert!(calls >= 1.0, "unbatched: a call per message: {what}");
        }
        // Every field is a zero-copy value (threshold 0): copy mode copies all of it in user
        // space, the gather-based modes none, auto one or the other per message shape.
        let copied = num("copied_bytes_per_msg");
        let referenced = num("referenced_bytes_per_msg");
        assert_eq!(copied + referenced, size, "{what}");
        match r["effective_mode"].as_str().unwrap() {
            "copy" => assert_eq!(copied, size, "{what}"),
            "gather" | "zerocopy" | "uring" => assert_eq!(copied, 0.0, "{what}"),
            "auto" => assert!(copied == 0.0 || copied == size, "{what}"),
            other => panic!("unknown mode {other}"),
        }
        match r["effective_mode"].as_str().unwrap() {
            "copy" | "gather" => assert!(r["kernel_copied_rate"].is_null(), "no zero-copy sends: {what}"),
            "zerocopy" | "uring" => {
                let rate = num("kernel_copied_rate");
                assert!((0.0..=1.0).contains(&rate), "{what}");
            }
            _ => {
                assert!(r["kernel_copied_rate"].is_null() || (0.0..=1.0).contains(&num("kernel_copied_rate")))
            }
        }
        // A frame that arrived whole in one read buffer is never copied by the receiver: copies
        // are at most the straddling frames (whole) plus a split frame header (< 16 B) each.
        let frame = size + 16.0 + 8.0 * num("fields") + 64.0;
        let bound = num("recv_straddled_frames") * frame + 15.0 * num("recv_frames");
        assert!(num("recv_copied_bytes") <= bound, "{what}");
    }

    assert_chart(&run.svg, "messages/s");
}

#[test]
fn datapath_rejects_an_unknown_mode() {
    let json = common::scratch("bench-test", "never.json");
    let out = ferry(
        &[
            "bench",
            "datapath",
            "--modes",
            "telepathy",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown mode"));
}

#[test]
fn demo_streams_every_mode_over_loopback() {
    let out = ferry(
        &[
            "demo",
            "--serialize",
            "--messages",
            "100",
            "--datapath-messages",
            "200",
            "--rpc-ms",
            "0",
        ],
        &[],
    );
    let stdout = success(&out, "demo");
    assert!(stdout.contains("Datapath:"), "{stdout}");
    for mode in MODES {
        assert!(
            stdout.lines().any(|l| l.starts_with(mode)),
            "no datapath row for {mode}:\n{stdout}"
        );
    }
    assert!(stdout.contains("the kernel copies on delivery"), "{stdout}");
}

#[test]
fn demo_serves_the_echo_over_both_transports() {
    let out = ferry(
        &[
            "demo",
            "--serialize",
            "--messages",
            "100",
            "--datapath-messages",
            "0",
            "--rpc-ms",
            "20",
        ],
        &[],
    );
    let stdout = success(&out, "demo");
    assert!(stdout.contains("RPC: a ferry-rpc server"), "{stdout}");
    for system in ["raw", "ferry-hybrid", "prost"] {
        for transport in ["tcp", "shm"] {
            let row = stdout
                .lines()
                .find(|l| l.split_whitespace().take(2).eq([system, transport]))
                .unwrap_or_else(|| panic!("no RPC row for {system} over {transport}:\n{stdout}"));
            let calls: f64 = row
                .split_whitespace()
                .nth(9)
                .and_then(|v| v.parse().ok())
                .expect(row);
            assert!(calls > 0.0, "{row}");
        }
    }
}
