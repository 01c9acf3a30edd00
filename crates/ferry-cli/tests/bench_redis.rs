//! `ferry bench redis`: the committed results read back with `--from` (no server needed), and a
//! small real run against redis-server and `ferry redis` (skipped with a printed reason when
//! redis-server or redis-benchmark is missing, unless `FERRY_REQUIRE_TOOLS=1`).

mod common;

use common::{assert_chart, ferry, number, scratch, success, sweep};

/// The results files docs/benchmarks/redis.md links, read back: the tables, the targets with a
/// verdict each, and the plot, without measuring.
#[test]
fn committed_results_read_back() {
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/benchmarks");
    for (file, rounds) in [("redis.json", 5), ("redis-aa.json", 3)] {
        let svg = scratch("bench-redis", &format!("{file}.svg"));
        let from = format!("{docs}/{file}");
        let out = ferry(
            &["bench", "redis", "--from", &from, "--plot", svg.to_str().unwrap()],
            &[],
        );
        let stdout = success(&out, &format!("bench redis --from {file}"));
        assert!(
            stdout.contains(&format!("medians of {rounds} rounds")),
            "{stdout}"
        );
        assert!(stdout.contains("LRANGE 2x2 KiB"), "{stdout}");
        let verdicts = stdout
            .lines()
            .filter(|l| l.starts_with("ferry/redis ") && (l.ends_with("met") || l.ends_with("MISSED")))
            .count();
        // GET 4 KiB, MGET-2, LRANGE-2 at pipeline 16, and GET/SET 64 B at both depths.
        assert_eq!(verdicts, 7, "{stdout}");
        assert_chart(&svg, "requests/s, pipeline 16");
    }
}

/// One test at one depth against both servers, a few thousand requests: every record has
/// its figures, and the results read back.
#[test]
fn a_small_run_measures_both_servers() {
    for tool in ["redis-server", "redis-benchmark"] {
        if ferry_testkit::tools::require_tool(tool).is_none() {
            return;
        }
    }
    let run = sweep(
        "bench-redis",
        "redis",
        &[
            "--test",
            "get-64",
            "--pipeline",
            "4",
            "--keys",
            "1000",
            "--count",
            "4000",
        ],
    );
    let records = run.doc["records"].as_array().unwrap();
    let servers: Vec<&str> = records.iter().map(|r| r["server"].as_str().unwrap()).collect();
    assert_eq!(servers, ["redis-server", "ferry"]);
    for r in records {
        assert_eq!(r["test"], "get-64");
        assert_eq!(number(r, "requests"), 4000.0);
        assert!(number(r, "rps") > 0.0 && number(r, "server_cpu_s") > 0.0, "{r}");
    }
    assert!(run.stdout.contains("ferry/redis GET 64 B P=4"), "{}", run.stdout);
    let again = success(
        &ferry(&["bench", "redis", "--from", run.json.to_str().unwrap()], &[]),
        "bench redis --from",
    );
    assert!(again.contains("GET 64 B"), "{again}");
}

/// SET 4 KiB with the AOF on (issue 29): both servers started with `--appendonly yes
/// --appendfsync everysec` in a fresh directory that is gone after the run, and the target row
/// at pipeline 16.
#[test]
fn an_aof_run_appends_on_both_servers_in_a_directory_removed_after() {
    for tool in ["redis-server", "redis-benchmark"] {
        if ferry_testkit::tools::require_tool(tool).is_none() {
            return;
        }
    }
    let args = [
        "--test",
        "set-4k-aof",
        "--pipeline",
        "16",
        "--keys",
        "1000",
        "--count",
        "4000",
    ];
    let run = sweep("bench-redis-aof", "redis", &args);
    let records = run.doc["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for r in records {
        assert_eq!(r["test"], "set-4k-aof");
        assert!(number(r, "rps") > 0.0, "{r}");
        let command = r["server_command"].as_str().unwrap();
        assert!(
            command.contains("--appendonly yes --appendfsync everysec --dir "),
            "{command}"
        );
        let dir = command
            .rsplit("--dir ")
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(dir.contains("ferry-bench-redis-aof"), "{command}");
        assert!(!std::path::Path::new(dir).exists(), "{dir} left behind");
    }
    let target = run
        .stdout
        .lines()
        .find(|l| l.starts_with("ferry/redis SET 4 KiB, AOF everysec P=16"))
        .unwrap_or_else(|| panic!("no target row:\n{}", run.stdout));
    assert!(target.ends_with("met") || target.ends_with("MISSED"), "{target}");
}
