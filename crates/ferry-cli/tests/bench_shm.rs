//! `ferry bench shm` as a real process, on a tiny sweep with a fixed request count. Behaviour
//! only: which records exist, and whether their counters agree with what each transport does
//! (the 4 KiB values are referenced, never copied); no timing is asserted.

mod common;

use common::{assert_chart, assert_one_record_each, ferry, number, stderr, success, sweep};
use std::collections::BTreeSet;

const REQUESTS: u64 = 300;

#[test]
fn shm_writes_one_sane_record_per_configuration() {
    let count = REQUESTS.to_string();
    let run = sweep(
        "bench-shm-test",
        "shm",
        &["--count", &count, "--reps", "1", "--in-flight", "4"],
    );
    let stdout = &run.stdout;
    assert!(stdout.contains("p50 ns"), "no table on stdout:\n{stdout}");
    assert!(
        stdout.contains("p50 / raw p50"),
        "no ratio to the floor:\n{stdout}"
    );

    let doc = &run.doc;
    assert_eq!(doc["settings"]["budget"]["requests"], REQUESTS);

    // The floor; every payload one in flight over shm (spin, default) and tcp (spin, poll);
    // 64 B with 4 in flight over both; 4 KiB with 4 in flight over shm spin.
    let mut expect = BTreeSet::new();
    expect.insert(("raw".to_owned(), "spin".to_owned(), 8, 1));
    for payload in [64u64, 4096] {
        for (t, n) in [
            ("shm", "spin"),
            ("shm", "default"),
            ("tcp", "spin"),
            ("tcp", "poll"),
        ] {
            expect.insert((t.to_owned(), n.to_owned(), payload, 1));
            if payload == 64 {
                expect.insert((t.to_owned(), n.to_owned(), payload, 4));
            }
        }
    }
    expect.insert(("shm".to_owned(), "spin".to_owned(), 4096, 4));
    let records = doc["records"].as_array().unwrap();
    assert_one_record_each(records, &expect, |r| {
        (
            r["transport"].as_str().unwrap().to_owned(),
            r["notify"].as_str().unwrap().to_owned(),
            r["payload"].as_u64().unwrap(),
            r["in_flight"].as_u64().unwrap(),
        )
    });

    for r in records {
        let what = format!("{r}");
        let num = |k: &str| number(r, k);
        assert_eq!(r["requests"], REQUESTS, "{what}");
        let samples = r["samples"].as_u64().unwrap();
        if r["in_flight"] == 1 {
            assert_eq!(samples, REQUESTS, "every round trip timed: {what}");
        } else {
            assert!(samples > 0 && samples < REQUESTS, "some requests timed: {what}");
        }
        let (p50, p99, p999) = (num("p50_ns"), num("p99_ns"), num("p999_ns"));
        assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{what}");
        assert!(num("min_ns") <= p50 && p999 <= num("max_ns"), "{what}");
        assert!(
            num("min_ns") <= num("mean_ns") && num("mean_ns") <= num("max_ns"),
            "{what}"
        );
        let rate = num("requests_per_sec");
        assert!(rate > 0.0 && rate.is_finite(), "{what}");
        // One repetition: the medians are that repetition's figures.
        assert_eq!(r["reps"], 1, "{what}");
        assert_eq!(r["requests_per_sec_reps"], serde_json::json!([rate]), "{what}");
        assert_eq!(r["p50_ns_reps"], serde_json::json!([p50]), "{what}");
        // getrusage counts CPU time in scheduler ticks on many kernels, so a short run may
        // honestly read 0; what must hold is a real, non-negative number per request.
        for cpu in ["client_cpu_us_per_req", "server_cpu_us_per_req"] {
            let us = num(cpu);
            assert!(us.is_finite() && us >= 0.0, "{cpu}: {what}");
        }
        // Nothing is ever copied into the transport's memory: the values live in the sending
        // side's pool. 4 KiB values (above the context's 512 B threshold) are referenced in
        // both directions; 64 B values are copied into the message's header segment.
        assert_eq!(r["bytes_copied_in"], 0, "{what}");
        let referenced = num("bytes_referenced_per_req");
        match (r["transport"].as_str().unwrap(), r["payload"].as_u64().unwrap()) {
            ("raw", _) => assert_eq!(referenced, 0.0, "{what}"),
            (_, 4096) => {
                assert_eq!(referenced, 8192.0, "{what}");
                assert!(num("bytes_referenced") >= 8192.0 * REQUESTS as f64, "{what}");
            }
            _ => assert_eq!(referenced, 0.0, "{what}"),
        }
        match r["transport"].as_str().unwrap() {
            "shm" => {
                let sleeps = num("sleeps_per_req");
                assert!(sleeps.is_finite() && sleeps >= 0.0, "{what}");
                assert!(num("publishes_per_req") > 0.0, "blocks are published: {what}");
                if r["notify"] == "spin" {
                    assert_eq!(num("sleeps_per_req"), 0.0, "a spinning side never sleeps: {what}");
                }
            }
            "tcp" => assert!(num("publishes_per_req") > 0.0, "send calls: {what}"),
            _ => assert!(r["publishes_per_req"].is_null(), "{what}"),
        }
    }

    let diag = &doc["diagnostics"];
    let phases = diag["breakdown"]["phases"].as_array().unwrap().len();
    let by_payload = diag["breakdown"]["by_payload"].as_array().unwrap();
    assert_eq!(by_payload.len(), 2, "{diag}");
    for column in by_payload {
        assert_eq!(column["ns"].as_array().unwrap().len(), phases, "{diag}");
    }
    assert_eq!(diag["raw_chain"]["p50_ns"].as_array().unwrap().len(), 4, "{diag}");

    assert_chart(&run.svg, "requests/s");

    // The table and targets come back from the results file alone.
    let out = ferry(&["bench", "shm", "--from", run.json.to_str().unwrap()], &[]);
    let stdout = success(&out, "ferry bench shm --from");
    assert!(stdout.contains("p50 / raw p50"), "{stdout}");
}

#[test]
fn shm_rejects_an_unknown_transport() {
    let json = common::scratch("bench-shm-test", "never.json");
    let out = ferry(
        &[
            "bench",
            "shm",
            "--transports",
            "pigeon",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!json.exists());
}
