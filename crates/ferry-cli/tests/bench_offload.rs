//! `ferry bench offload --quick` as a real process: one results file with Figure 7's records
//! (every message, count and series) and Figure 8's (every message and setup at the offered
//! rate, and the unary latency), each run's answers all checked by the load generator (no
//! errors, nothing dropped), a plot per figure, the targets reported; `--from` prints them
//! again. No timing is asserted.

mod common;

use std::collections::BTreeSet;

use common::{assert_chart, assert_one_record_each, ferry, number, results, scratch, success};
use serde_json::Value;

#[test]
fn offload_quick_writes_figures_7_and_8() {
    let json = scratch("bench-offload-test", "offload.json");
    let svg = scratch("bench-offload-test", "offload.svg");
    let out = ferry(
        &[
            "bench",
            "offload",
            "--quick",
            "--counts",
            "1,64,8192",
            "--rates",
            "2000",
            "--duration-ms",
            "300",
            "--json",
            json.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ],
        &[],
    );
    let stdout = success(&out, "ferry bench offload");
    for line in [
        "int array",
        "char array",
        "host CPU per request at 2000 req/s, engine/tonic",
        "unary p50, tonic",
    ] {
        assert!(stdout.contains(line), "no {line:?} on stdout:\n{stdout}");
    }

    let doc = results(&json, "offload");
    let records = doc["figure7"]["points"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for message in ["ints", "chars"] {
        for count in [1u64, 64, 8192] {
            for series in ["prost", "prost+read", "engine", "host-validate"] {
                expect.insert((message.to_owned(), count, series.to_owned()));
            }
        }
    }
    assert_one_record_each(records, &expect, |r| {
        (
            r["message"].as_str().unwrap().to_owned(),
            r["elements"].as_u64().unwrap(),
            r["series"].as_str().unwrap().to_owned(),
        )
    });
    assert_chart(&svg.with_file_name("offload-figure7.svg"), "elements");

    let runs = doc["figure8"]["runs"].as_array().unwrap();
    let unary = doc["figure8"]["unary"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for message in ["small", "x512-ints", "x8000-chars"] {
        for setup in ["tonic", "engine", "null"] {
            expect.insert((message.to_owned(), setup.to_owned()));
        }
    }
    let key = |r: &Value| {
        (
            r["message"].as_str().unwrap().to_owned(),
            r["setup"].as_str().unwrap().to_owned(),
        )
    };
    assert_one_record_each(runs, &expect, key);
    assert_one_record_each(unary, &expect, key);
    for r in runs {
        // Every answer's digest was checked: none failed, none was left unsent.
        assert_eq!((number(r, "errors"), number(r, "dropped")), (0.0, 0.0), "{r}");
        assert!(
            number(r, "achieved_rps") > 0.0 && number(r, "host_cpu_us_per_request") > 0.0,
            "{r}"
        );
        let engine_cpu = number(r, "engine_cpu_us_per_request");
        assert_eq!(engine_cpu > 0.0, r["setup"] == "engine", "{r}");
    }
    for u in unary {
        assert!(number(u, "unary_calls") > 0.0, "{u}");
    }
    assert_chart(&svg.with_file_name("offload-figure8.svg"), "host CPU per request");

    // The tables and targets come back from the results file alone.
    let out = ferry(&["bench", "offload", "--from", json.to_str().unwrap()], &[]);
    let again = success(&out, "ferry bench offload --from");
    for line in [
        "int array",
        "host CPU per request at 2000 req/s, engine/tonic",
        "<= 0.5x",
    ] {
        assert!(again.contains(line), "no {line:?} from --from:\n{again}");
    }
}

/// `ferry bench offload --figures streams --quick`: ghz streams through the engine to the Ferry
/// interop host and straight to a tonic host, every (setup, shape, size) once, every call
/// ended `OK`, a number in every column, the plot; `--from` prints the ratios again. Needs ghz
/// (`go install github.com/bojand/ghz/cmd/ghz@v0.120.0`, on `PATH`): without it the test skips,
/// saying so, unless `FERRY_REQUIRE_TOOLS=1`.
#[test]
fn offload_quick_streams_under_ghz() {
    let Some(ghz) = ferry_testkit::tools::require_tool("ghz") else {
        return;
    };
    let run = common::sweep(
        "bench-offload-streams-test",
        "offload",
        &["--figures", "streams", "--quick", "--ghz", ghz.to_str().unwrap()],
    );
    let runs = run.doc["streams"]["runs"].as_array().unwrap();
    let mut expect = BTreeSet::new();
    for setup in ["engine", "tonic"] {
        for shape in ["server-streaming", "bidi"] {
            for size in [64u64, 4096] {
                expect.insert((setup.to_owned(), shape.to_owned(), size));
            }
        }
    }
    assert_one_record_each(runs, &expect, |r| {
        (
            r["setup"].as_str().unwrap().to_owned(),
            r["shape"].as_str().unwrap().to_owned(),
            r["size"].as_u64().unwrap(),
        )
    });
    for r in runs {
        let calls = number(r, "calls");
        assert!(calls > 0.0, "{r}");
        assert_eq!(r["statuses"], serde_json::json!({ "OK": calls as u64 }), "{r}");
        for key in [
            "messages_per_s",
            "host_cpu_us_per_message",
            "call_p50_us",
            "call_p99_us",
        ] {
            assert!(number(r, key) > 0.0, "{key}: {r}");
        }
        let engine_cpu = number(r, "engine_cpu_us_per_message");
        assert_eq!(engine_cpu > 0.0, r["setup"] == "engine", "{r}");
    }
    assert_chart(
        &run.svg.with_file_name("offload-streams.svg"),
        "host CPU per streamed message",
    );

    let out = ferry(&["bench", "offload", "--from", run.json.to_str().unwrap()], &[]);
    let again = success(&out, "ferry bench offload --from");
    for line in [
        "bidi 4096 B: host CPU per streamed message, engine/tonic",
        "server-streaming 64 B",
        "(informational)",
    ] {
        assert!(again.contains(line), "no {line:?} from --from:\n{again}");
    }
}
