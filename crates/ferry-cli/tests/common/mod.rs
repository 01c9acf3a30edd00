//! Helpers shared by the CLI's integration tests: the `ferry` binary as a child process,
//! scratch files, and the results files `ferry bench` writes.
//!
//! Every test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Runs `ferry <args>` with `stdin` as standard input. It reads no thresholds file of the
/// user's (`FERRY_THRESHOLDS` names none that exists): the measured defaults apply.
pub fn ferry(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args(args)
        .env("FERRY_THRESHOLDS", "/nonexistent/ferry-thresholds")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ferry");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    // Written from a thread so that a large output cannot block the child while we write.
    let writer = std::thread::spawn(move || {
        // The child may exit before reading everything (an error); that is not the test's failure.
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait for ferry");
    writer.join().expect("writer thread");
    out
}

/// What the command wrote to stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stdout of a command that must have succeeded; fails the test, with `what`, its stderr
/// and its stdout, if it did not.
pub fn success(o: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{what} failed: {}\n{stdout}", stderr(o));
    stdout
}

/// A path for `name` in the scratch folder `dir` (created if missing) of the test target dir.
pub fn scratch(dir: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// What a `ferry bench` sweep left: its stdout, its results (header checked, see [`results`]),
/// and the paths of its results file and its plot.
pub struct Sweep {
    pub stdout: String,
    pub doc: Value,
    pub json: PathBuf,
    pub svg: PathBuf,
}

/// Runs `ferry bench <benchmark> <args>` with its results file and plot in the scratch folder
/// `dir` (earlier ones removed first); fails the test unless it succeeded.
pub fn sweep(dir: &str, benchmark: &str, args: &[&str]) -> Sweep {
    let json = scratch(dir, &format!("{benchmark}.json"));
    let svg = scratch(dir, &format!("{benchmark}.svg"));
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&svg);
    let mut all = vec!["bench", benchmark];
    all.extend_from_slice(args);
    all.extend(["--json", json.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    let stdout = success(&ferry(&all, &[]), &format!("ferry bench {benchmark}"));
    let doc = results(&json, benchmark);
    Sweep {
        stdout,
        doc,
        json,
        svg,
    }
}

/// Fails unless `records` hold exactly one record for each configuration in `expect`, the
/// configuration of a record being what `key` reads from it.
pub fn assert_one_record_each<K: Ord + Debug>(
    records: &[Value],
    expect: &BTreeSet<K>,
    key: impl Fn(&Value) -> K,
) {
    let got: BTreeSet<K> = records.iter().map(key).collect();
    assert_eq!(records.len(), expect.len(), "one record per configuration");
    assert_eq!(&got, expect);
}

/// The number `key` of the results record `r`; fails the test, naming the record, if missing.
pub fn number(r: &Value, key: &str) -> f64 {
    r[key].as_f64().unwrap_or_else(|| panic!("{key} missing in {r}"))
}

/// The results file `ferry bench <benchmark>` wrote at `path`, once the header every results
/// file has is checked: the benchmark's name, the command that ran it, a UTC date, the machine.
pub fn results(path: &Path, benchmark: &str) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(doc["benchmark"], benchmark);
    assert!(
        doc["command"]
            .as_str()
            .unwrap()
            .contains(&format!("bench {benchmark}"))
    );
    assert!(doc["date"].as_str().unwrap().ends_with('Z'));
    assert!(doc["machine"]["kernel"].is_string());
    doc
}

/// Fails unless `path` holds an SVG chart with an axis labelled `axis`.
pub fn assert_chart(path: &Path, axis: &str) {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(svg.contains("<svg") && svg.contains(axis), "plot is an SVG chart");
}

/// `GET /metrics` from `addr` over plain TCP: the series and their samples.
pub fn scrape(addr: &str) -> std::collections::BTreeMap<String, f64> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).expect("connect to /metrics");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.ends_with("# EOF\n"), "{answer}");
    answer
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(series, v)| Some((series.to_string(), v.parse().ok()?)))
        .collect()
}

/// Writes a certificate and its key as PEM files in `dir`; the options that name them.
pub fn cert_args(dir: &str, name: &str, cert: &ferry_net::tls::test_certs::TestCert) -> Vec<String> {
    let (pem, key) = (
        scratch(dir, &format!("{name}.pem")),
        scratch(dir, &format!("{name}.key")),
    );
    std::fs::write(&pem, &cert.cert).unwrap();
    std::fs::write(&key, &cert.key).unwrap();
    vec![
        "--tls-cert".into(),
        pem.display().to_string(),
        "--tls-key".into(),
        key.display().to_string(),
    ]
}
