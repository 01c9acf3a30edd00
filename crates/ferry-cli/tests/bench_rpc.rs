//! `ferry bench rpc --quick` as a real process: every configuration of the echo and of the
//! streams has one sane record, the targets are printed as ratios, and `--from` reprints them.
//! No timing is asserted.

mod common;

use common::{assert_chart, assert_one_record_each, ferry, number, stderr, success, sweep};
use std::collections::BTreeSet;

const LOOP_SYSTEMS: [&str; 6] = ["raw", "ferry-copy", "ferry-hybrid", "prost", "flatbuf", "capnp"];

#[test]
fn rpc_quick_writes_one_sane_record_per_configuration() {
    let run = sweep("bench-rpc-test", "rpc", &["--quick"]);
    let stdout = &run.stdout;
    assert!(stdout.contains("p50 ns"), "no table on stdout:\n{stdout}");
    for target in [
        "ferry-hybrid tcp / tonic",
        "ferry-hybrid / raw calls/s, tcp",
        "ferry-hybrid / raw calls/s, shm",
        "/ raw ping-pong p50",
        "64 B, 128 in flight",
    ] {
        assert!(stdout.contains(target), "no {target:?} line:\n{stdout}");
    }

    let doc = &run.doc;
    assert_eq!(doc["settings"]["budget"]["duration_ms"], 40);
    assert_eq!(doc["settings"]["reps"], 1);

    // Every event-loop system over both transports, 2 x 2 KiB and 1 KiB, at 1, 16 and 128 in
    // flight; the 64 B hybrid call over shm; tonic at 1 and 16; the ping-pong.
    let mut expect = BTreeSet::new();
    for (count, len) in [(2u64, 2048u64), (1, 1024)] {
        for t in ["tcp", "shm"] {
            for s in LOOP_SYSTEMS {
                for n in [1u64, 16, 128] {
                    expect.insert((s.to_owned(), t.to_owned(), count, len, n));
                }
            }
        }
    }
    for n in [1u64, 16, 128] {
        expect.insert(("ferry-hybrid".to_owned(), "shm".to_owned(), 1, 64, n));
    }
    for n in [1u64, 16] {
        expect.insert(("tonic".to_owned(), "tcp".to_owned(), 2, 2048, n));
    }
    expect.insert(("ping-pong".to_owned(), "shm".to_owned(), 1, 8, 1));
    let records = doc["records"].as_array().unwrap();
    assert_one_record_each(records, &expect, |r| {
        (
            r["system"].as_str().unwrap().to_owned(),
            r["transport"].as_str().unwrap().to_owned(),
            r["fields"].as_u64().unwrap(),
            r["field_len"].as_u64().unwrap(),
            r["in_flight"].as_u64().unwrap(),
        )
    });

    for r in records {
        let what = format!("{r}");
        let num = |k: &str| number(r, k);
        let calls = num("calls");
        assert!(calls > 0.0, "calls were made: {what}");
        let samples = num("samples");
        if r["in_flight"] == 1 {
            assert_eq!(samples, calls, "every call timed: {what}");
        } else {
            assert!(0.0 < samples && samples <= calls, "some calls timed: {what}");
        }
        let (p50, p99, p999) = (num("p50_ns"), num("p99_ns"), num("p999_ns"));
        assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{what}");
        assert!(num("min_ns") <= p50 && p999 <= num("max_ns"), "{what}");
        let rate = num("calls_per_sec");
        assert!(rate > 0.0 && rate.is_finite(), "{what}");
        assert_eq!(r["calls_per_sec_reps"], serde_json::json!([rate]), "{what}");
        assert_eq!(num("payload"), num("fields") * num("field_len"), "{what}");
        // getrusage may count in scheduler ticks: a short run can honestly read 0.
        for cpu in ["server_cpu_ns_per_call", "client_cpu_ns_per_call"] {
            let ns = num(cpu);
            assert!(ns.is_finite() && ns >= 0.0, "{cpu}: {what}");
        }
    }

    // The streams: download, upload and ping-pong at 64 B and 4 KiB, each with tonic and with
    // Ferry over both transports.
    let streams = doc["streams"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for (shape, size) in [
        ("download", 65536),
        ("upload", 65536),
        ("ping-pong", 64),
        ("ping-pong", 4096),
    ] {
        for (system, transport) in [("tonic", "tcp"), ("ferry-hybrid", "tcp"), ("ferry-hybrid", "shm")] {
            expect.insert((system.to_owned(), transport.to_owned(), shape.to_owned(), size));
        }
    }
    assert_one_record_each(streams, &expect, |r| {
        (
            r["system"].as_str().unwrap().to_owned(),
            r["transport"].as_str().unwrap().to_owned(),
            r["shape"].as_str().unwrap().to_owned(),
            r["size"].as_u64().unwrap(),
        )
    });
    for r in streams {
        let what = format!("{r}");
        let (size, count) = (number(r, "size"), number(r, "count"));
        let carried = if r["shape"] == "ping-pong" {
            2.0 * size * count
        } else {
            size * count
        };
        assert_eq!(number(r, "bytes"), carried, "{what}");
        let rate = number(r, "gb_per_sec");
        assert!(rate > 0.0 && rate.is_finite(), "{what}");
        for cpu in ["server_cpu_ms_per_gb", "client_cpu_ms_per_gb"] {
            let ms = number(r, cpu);
            assert!(ms.is_finite() && ms >= 0.0, "{cpu}: {what}");
        }
        if r["shape"] == "ping-pong" {
            let (p50, p99) = (number(r, "p50_ns"), number(r, "p99_ns"));
            assert!(0.0 < p50 && p50 <= p99, "{what}");
            assert_eq!(
                r["unary_p50_ns"].is_number(),
                r["system"] == "ferry-hybrid",
                "{what}"
            );
        } else {
            assert!(r["p50_ns"].is_null() && r["unary_p50_ns"].is_null(), "{what}");
        }
    }
    for target in [
        "shm / tonic GB/s, upload of 64 KiB",
        "tcp stream ping-pong 4 KiB p50 / unary call p50",
    ] {
        assert!(stdout.contains(target), "no {target:?} line:\n{stdout}");
    }

    assert_chart(&run.svg, "calls/s");

    // The table and targets come back from the results file alone.
    let out = ferry(&["bench", "rpc", "--from", run.json.to_str().unwrap()], &[]);
    let stdout = success(&out, "ferry bench rpc --from");
    assert!(stdout.contains("ferry-hybrid tcp / tonic"), "{stdout}");
    assert!(stdout.contains("ferry-hybrid shm / tonic GB/s"), "{stdout}");
}

/// `--tls`: raw and ferry-hybrid over TLS beside their plaintext runs, with the TLS table,
/// in the records (`link`) and back from them with `--from`.
#[test]
fn rpc_tls_runs_each_configuration_beside_its_plaintext_one() {
    let run = sweep(
        "bench-rpc-tls-test",
        "rpc",
        &[
            "--quick",
            "--tls",
            "--sections",
            "echo",
            "--systems",
            "raw,ferry-hybrid",
            "--transports",
            "tcp",
            "--in-flight",
            "1,16",
        ],
    );
    assert!(run.stdout.contains("TLS against plaintext"), "{}", run.stdout);
    let records = run.doc["records"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for s in ["raw", "ferry-hybrid"] {
        for n in [1u64, 16] {
            expect.insert((s.to_owned(), 2048, n, "plain".to_owned()));
            expect.insert((s.to_owned(), 2048, n, "tls".to_owned()));
            expect.insert((s.to_owned(), 1024, n, "plain".to_owned()));
        }
    }
    assert_one_record_each(records, &expect, |r| {
        (
            r["system"].as_str().unwrap().to_owned(),
            r["field_len"].as_u64().unwrap(),
            r["in_flight"].as_u64().unwrap(),
            // Written for TLS only: a plaintext record has the fields it always had.
            r["link"].as_str().unwrap_or("plain").to_owned(),
        )
    });
    for r in records {
        assert!(number(r, "calls_per_sec") > 0.0, "{r}");
    }
    let out = ferry(&["bench", "rpc", "--from", run.json.to_str().unwrap()], &[]);
    let stdout = success(&out, "ferry bench rpc --from");
    assert!(stdout.contains("TLS against plaintext"), "{stdout}");
}

#[test]
fn rpc_rejects_an_unknown_system() {
    let json = common::scratch("bench-rpc-test", "never.json");
    let out = ferry(
        &[
            "bench",
            "rpc",
            "--systems",
            "grpc-go",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!json.exists());
}

/// `--net veth --loss 5`: the echo over TCP and UDP between two namespaces through a bridge
/// dropping 5 % of packets. Every configuration has a record with calls, the settings name
/// the path, and the bridge dropped packets (a run that lost none was not under loss).
#[test]
fn rpc_over_veth_with_loss_runs_tcp_and_udp_between_namespaces() {
    const TEST: &str = "rpc_over_veth_with_loss_runs_tcp_and_udp_between_namespaces";
    let json = common::scratch("bench-rpc-veth-test", "rpc.json");
    let _ = std::fs::remove_file(&json);
    let args = [
        "bench",
        "rpc",
        "--quick",
        "--net",
        "veth",
        "--loss",
        "5",
        "--sections",
        "echo",
        "--systems",
        "raw",
        "--in-flight",
        "16",
        "--json",
    ];
    let out = ferry(&[&args[..], &[json.to_str().unwrap()]].concat(), &[]);
    if !out.status.success() && stderr(&out).contains("making two namespaces") {
        return ferry_testkit::tools::skip(TEST, &stderr(&out));
    }
    success(&out, "ferry bench rpc --net veth");
    let doc = common::results(&json, "rpc");
    let net = &doc["settings"]["net"];
    assert_eq!(
        (net["hosts"].as_str(), net["loss_percent"].as_u64()),
        (Some("veth"), Some(5)),
        "{net}"
    );
    assert!(
        number(net, "packets_dropped") > 0.0,
        "5 % loss and nothing dropped: {net}"
    );
    let records = doc["records"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for t in ["tcp", "udp"] {
        for len in [2048u64, 1024, 64] {
            expect.insert((t.to_owned(), len));
        }
    }
    assert_one_record_each(records, &expect, |r| {
        (
            r["transport"].as_str().unwrap().to_owned(),
            r["field_len"].as_u64().unwrap(),
        )
    });
    for r in records {
        assert!(number(r, "calls_per_sec") > 0.0, "{r}");
    }
}
