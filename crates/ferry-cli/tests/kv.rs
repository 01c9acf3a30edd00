//! `ferry bench kv`, `ferry calibrate` and the key-value `ferry demo` as real processes, on tiny
//! sweeps. Behaviour only: the records exist and hold what they say (every response was
//! checked by the load generator, or the command would have failed); no timing is asserted.

mod common;

use std::sync::{Mutex, MutexGuard, PoisonError};

use common::{assert_chart, ferry, number, scratch, success, sweep};

/// Each test runs a server and a client that busy-poll pinned to the same two CPUs: run
/// together, they would starve each other, so they take turns.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

#[test]
fn bench_kv_sweeps_every_system_over_both_transports() {
    let _turn = one_at_a_time();
    let run = sweep(
        "kv-test",
        "kv",
        &[
            "--workload",
            "ycsb",
            "--keys",
            "2000",
            "--ycsb-buffers",
            "2",
            "--ycsb-size",
            "2048",
            "--system",
            "all",
            "--start-rate",
            "500",
            "--max-points",
            "2",
            "--duration-ms",
            "100",
        ],
    );
    let records = run.doc["records"].as_array().unwrap();
    for system in ["ferry", "ferry-copy", "ferry-zc", "prost", "flatbuffers", "capnp"] {
        for transport in ["tcp", "shm"] {
            let mine: Vec<_> = records
                .iter()
                .filter(|r| r["system"] == system && r["transport"] == transport)
                .collect();
            assert!(!mine.is_empty(), "no record of {system} over {transport}");
            for r in mine {
                // Only the window's own requests are counted: achieved never exceeds offered
                // (on a busy machine a point may achieve nothing in its window; it then says
                // why it does not count).
                assert!(number(r, "achieved") <= number(r, "offered"), "{r}");
                assert_eq!(r["counts"] == true, r["why_not"].is_null(), "{r}");
                if r["counts"] == true {
                    assert!(number(r, "achieved") > 0.0, "{r}");
                }
                // A point that served requests in its window measured the server's work on
                // them (one that served none, on a busy machine, has nothing to divide).
                if number(r, "achieved") > 0.0 {
                    assert!(number(r, "server_ns_per_request") > 0.0, "{r}");
                }
                assert!(number(r, "p99_us") >= number(r, "p50_us"), "{r}");
            }
        }
    }
    // The copies each system makes by construction of its path (a figure the report derives,
    // not a measurement): the zero-copy-only system copies no value byte, copy-only all of
    // them (2 x 2 KiB), and the hybrid one none of these 2 KiB buffers (above the threshold).
    let copied = |system: &str| {
        records
            .iter()
            .find(|r| r["system"] == system && r["transport"] == "shm")
            .map(|r| number(r, "copied_bytes_per_response_by_construction"))
            .unwrap()
    };
    assert_eq!(copied("ferry-zc"), 0.0);
    assert_eq!(copied("ferry-copy"), 4096.0);
    assert_eq!(copied("ferry"), 0.0);
    assert_chart(&run.svg, "achieved requests/s");

    // --from redraws from the file without measuring.
    let again = success(
        &ferry(&["bench", "kv", "--from", run.json.to_str().unwrap()], &[]),
        "bench kv --from",
    );
    assert!(again.contains("ycsb-2x2048 over shm"), "{again}");
}

#[test]
fn calibrate_writes_a_threshold_per_transport() {
    let _turn = one_at_a_time();
    let config = scratch("kv-test", "thresholds");
    let json = scratch("kv-test", "calibrate.json");
    let svg = scratch("kv-test", "calibrate.svg");
    for p in [&config, &json, &svg] {
        let _ = std::fs::remove_file(p);
    }
    let out = ferry(
        &[
            "calibrate",
            "--quick",
            "--sizes",
            "64,8192",
            "--buffers",
            "1",
            "--keys",
            "500",
            // Low: the test is of the plumbing, and a loaded machine (tests of other crates,
            // busy-polling loops) must still sustain the first load (it did not at 500).
            "--start-rate",
            "100",
            "--config",
            config.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ],
        &[],
    );
    let stdout = success(&out, "calibrate");
    let written = std::fs::read_to_string(&config).unwrap();
    let t = ferry::rpc::Thresholds::parse(&written).expect("a thresholds file that parses");
    // Whatever was measured, it is one of the sizes tried, or infinite.
    for v in [t.tcp, t.shm] {
        assert!([64, 8192, usize::MAX].contains(&v), "{written}");
    }
    assert!(stdout.contains("thresholds written to"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        doc["records"].as_array().unwrap().len(),
        4,
        "2 sizes x 1 count x 2 transports"
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains("buffer size S"));
}

#[test]
fn the_demo_serves_the_store_over_both_transports() {
    let _turn = one_at_a_time();
    let plot = scratch("kv-test", "demo.svg");
    let _ = std::fs::remove_file(&plot);
    let out = ferry(&["demo", "--quick", "--plot", plot.to_str().unwrap()], &[]);
    let stdout = success(&out, "demo");
    for transport in ["tcp", "shm"] {
        assert!(stdout.contains(&format!("over {transport}")), "{stdout}");
        for system in ["ferry", "prost"] {
            // The row's figures depend on the machine (a point that fell behind shows `-`);
            // that the command succeeded means every response was checked and right.
            let row = stdout
                .lines()
                .skip_while(|l| !l.ends_with(&format!("over {transport}")))
                .find(|l| l.split_whitespace().next() == Some(system));
            assert!(row.is_some(), "no row for {system} over {transport}:\n{stdout}");
        }
    }
    assert!(std::fs::read_to_string(&plot).unwrap().contains("<svg"));
}
