//! `ferry bench raft --quick` as a real process (three `ferry kv serve` children per system and
//! sync mode): every row of Table III has its numbers, every target is judged, the plot is
//! drawn, and `--from` redraws the table from the JSON alone. No timing is asserted.

mod common;

use std::collections::BTreeSet;

use common::{assert_chart, assert_one_record_each, ferry, number, success, sweep};

const SYSTEMS: [&str; 5] = ["raw", "prost", "flatbuffers", "zflatbuffers", "ferry"];

#[test]
fn raft_quick_writes_table_iii_with_all_five_systems() {
    let run = sweep("bench-raft-test", "raft", &["--quick", "--inflight", "4"]);
    let records = run.doc["records"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for sync in ["none", "always"] {
        for system in SYSTEMS {
            for size in [1024u64, 64 << 10] {
                for inflight in [1u64, 4] {
                    expect.insert((sync.to_owned(), system.to_owned(), size, inflight));
                }
            }
        }
    }
    assert_one_record_each(records, &expect, |r| {
        (
            r["sync"].as_str().unwrap().to_owned(),
            r["system"].as_str().unwrap().to_owned(),
            r["value_bytes"].as_u64().unwrap(),
            r["inflight"].as_u64().unwrap(),
        )
    });
    for r in records {
        assert!(number(r, "puts") > 0.0, "{r}");
        assert_eq!(number(r, "errors"), 0.0, "{r}");
        let (p50, p99) = (number(r, "p50_us"), number(r, "p99_us"));
        assert!(0.0 < p50 && p50 <= p99, "{r}");
        assert!(number(r, "puts_per_s") > 0.0, "{r}");
    }
    for line in [
        "p50 / raw",
        "ferry / raw, p50, 1 KiB, --sync none",
        "ferry / prost, puts/s, 64 KiB x4, --sync always",
    ] {
        assert!(
            run.stdout.contains(line),
            "no {line:?} on stdout:\n{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains("not measured"), "{}", run.stdout);
    assert_chart(&run.svg, "puts/s");

    let out = ferry(&["bench", "raft", "--from", run.json.to_str().unwrap()], &[]);
    let redrawn = success(&out, "ferry bench raft --from");
    // The table's rows and the targets.
    let table = |s: &str| {
        let row = |l: &&str| ["none ", "always ", "ferry / "].iter().any(|p| l.starts_with(p));
        s.lines().filter(row).map(str::to_owned).collect::<Vec<_>>()
    };
    assert_eq!(table(&run.stdout).len(), 44, "{}", run.stdout);
    assert_eq!(
        table(&redrawn),
        table(&run.stdout),
        "--from printed another table"
    );
}
