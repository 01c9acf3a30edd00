//! `ferry bench flatbuffers --quick` as a real process: the results file holds one record per
//! configuration with the deterministic figures of the paper's Table II (serialized sizes, the
//! stock builder's copies, none for ours), the plot is drawn, and `--from` reprints the
//! targets. No timing is asserted.

mod common;

use common::{assert_chart, assert_one_record_each, ferry, number, stderr, success, sweep};
use std::collections::BTreeSet;

const BUILDERS: [&str; 4] = [
    "flatbuffers-fresh",
    "flatbuffers-reused",
    "zflatbuffers-fresh",
    "zflatbuffers-reused",
];

#[test]
fn flatbuffers_quick_writes_table_ii_and_the_ping_pong() {
    let run = sweep("bench-flatbuffers-test", "flatbuffers", &["--quick"]);
    let stdout = &run.stdout;
    for line in [
        "ns/msg",
        "64 KiB Record build time, ours / flatbuffers, fresh builders",
        "1 KiB Record build time",
        "ping-pong tcp requests/s",
        "ping-pong shm requests/s",
        "requests/s against client threads",
    ] {
        assert!(stdout.contains(line), "no {line:?} on stdout:\n{stdout}");
    }
    let doc = &run.doc;
    assert_eq!(doc["settings"]["reps"], 1);
    assert_eq!(doc["settings"]["paper_table_ii"].as_array().unwrap().len(), 6);
    let records = doc["records"].as_array().unwrap();
    let part = |p: &str| -> Vec<&serde_json::Value> { records.iter().filter(|r| r["part"] == p).collect() };

    // Serialization: the memcpy floor and every builder at 1, 16, 64, 128 KiB and 1 MiB.
    let serialize: Vec<serde_json::Value> = part("serialize").into_iter().cloned().collect();
    let mut expect = BTreeSet::new();
    for size in [1u64 << 10, 16 << 10, 64 << 10, 128 << 10, 1 << 20] {
        for b in BUILDERS.into_iter().chain(["memcpy"]) {
            expect.insert((b.to_owned(), size));
        }
    }
    assert_one_record_each(&serialize, &expect, |r| {
        (
            r["builder"].as_str().unwrap().to_owned(),
            r["size"].as_u64().unwrap(),
        )
    });
    let at = |b: &str, size: u64| {
        serialize
            .iter()
            .find(|r| r["builder"] == b && r["size"] == size)
            .unwrap()
    };
    // Table II's serialized sizes, and the stock builder's growth (platform.md).
    for (size, len, copied, allocations) in [
        (1u64 << 10, 1152.0, 2047.0, 12.0),
        (16 << 10, 17_952.0, 32_767.0, 16.0),
        (64 << 10, 71_712.0, 131_071.0, 18.0),
    ] {
        for b in BUILDERS {
            assert_eq!(number(at(b, size), "serialized_len"), len, "{b} {size}");
        }
        let fresh = at("flatbuffers-fresh", size);
        assert_eq!(number(fresh, "copied_bytes"), copied, "{fresh}");
        assert_eq!(number(fresh, "allocations"), allocations, "{fresh}");
        assert_eq!(number(at("flatbuffers-reused", size), "copied_bytes"), 0.0);
        // Ours copies nothing; fresh, it takes its blocks from the pool; reused, `reset` kept
        // the last message's blocks, so it takes none.
        let fresh = at("zflatbuffers-fresh", size);
        assert_eq!(number(fresh, "copied_bytes"), 0.0, "{fresh}");
        assert!(number(fresh, "allocations") >= 1.0, "{fresh}");
        let reused = at("zflatbuffers-reused", size);
        assert_eq!(number(reused, "copied_bytes"), 0.0, "{reused}");
        assert_eq!(number(reused, "allocations"), 0.0, "{reused}");
    }
    for r in &serialize {
        let ns = number(r, "ns_per_message");
        assert!(ns > 0.0 && ns.is_finite(), "{r}");
        assert_eq!(r["ns_per_message_reps"].as_array().unwrap().len(), 1, "{r}");
    }

    // The ping-pong: both transports, prebuilt and every builder, the quick sizes with one
    // client, then 1..4 client threads at 128 KiB.
    let rpc: Vec<serde_json::Value> = part("rpc").into_iter().cloned().collect();
    let mut expect = BTreeSet::new();
    for t in ["tcp", "shm"] {
        for b in BUILDERS.into_iter().chain(["prebuilt"]) {
            for size in [256u64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 128 << 10] {
                expect.insert((t.to_owned(), b.to_owned(), "size".to_owned(), size, 1));
            }
            for threads in 1..=4u64 {
                expect.insert((
                    t.to_owned(),
                    b.to_owned(),
                    "threads".to_owned(),
                    128 << 10,
                    threads,
                ));
            }
        }
    }
    assert_one_record_each(&rpc, &expect, |r| {
        (
            r["transport"].as_str().unwrap().to_owned(),
            r["builder"].as_str().unwrap().to_owned(),
            r["sweep"].as_str().unwrap().to_owned(),
            r["size"].as_u64().unwrap(),
            r["threads"].as_u64().unwrap(),
        )
    });
    for r in &rpc {
        assert!(number(r, "calls") > 0.0, "{r}");
        let rate = number(r, "calls_per_sec");
        assert!(rate > 0.0 && rate.is_finite(), "{r}");
        let (p50, p99) = (number(r, "p50_ns"), number(r, "p99_ns"));
        assert!(0.0 < p50 && p50 <= p99, "{r}");
        if r["size"] == 64 << 10 {
            assert_eq!(number(r, "serialized_len"), 71_712.0, "{r}");
        }
    }

    assert_chart(&run.svg, "requests/s");

    // The tables and targets come back from the results file alone.
    let out = ferry(
        &["bench", "flatbuffers", "--from", run.json.to_str().unwrap()],
        &[],
    );
    let stdout = success(&out, "ferry bench flatbuffers --from");
    assert!(stdout.contains("64 KiB Record build time"), "{stdout}");
    assert!(stdout.contains("ping-pong shm requests/s"), "{stdout}");
}

#[test]
fn flatbuffers_rejects_an_unknown_part() {
    let json = common::scratch("bench-flatbuffers-test", "never.json");
    let out = ferry(
        &[
            "bench",
            "flatbuffers",
            "--parts",
            "deserialize",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!json.exists());
}
