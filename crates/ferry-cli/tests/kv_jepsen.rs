//! `ferry kv` under faults, Jepsen-style: three `ferry kv serve` processes, each in a network
//! namespace of its own on a bridged segment ([`Lan`]), and client threads doing random
//! put/get/append/delete over a few keys with unique values while a nemesis injects faults,
//! each bounded in time and undone: kill -9 of the leader (then restarted), kill -9 of a
//! follower (restarted), SIGSTOP/SIGCONT of a node, a partition that leaves the leader alone
//! (then healed) and 20 % packet loss into one node (nftables). This kernel has no netem qdisc,
//! so there is no delay or reordering fault (see docs/kv-jepsen.md).
//!
//! Every invocation and completion is recorded with one monotonic clock into a JSONL history:
//! `ok` (acknowledged), `fail` (refused before it was proposed: the answer names a leader, or
//! none) or `unknown` (a timeout or a connection lost once sent: it may have taken effect). At
//! the end every fault is undone, all nodes are killed -9 at once and restarted (`--sync
//! always`), every key is read into the history, and `ferry-linearizability` (porcupine) checks
//! it. The history, and the checker's HTML visualization when it fails, stay in the directory
//! the test prints; on a failure so do the nodes' data and their logs (`nodeN.log`: openraft's
//! log and the test's own notes of each start, kill and signal), whose last lines are printed.
//!
//! The clients live in two namespaces of their own on the segment, half in each, not in the
//! nodes' own: killing a node then leaves them running. A partition puts one half on the old
//! leader's (minority) side and the other on the majority's, as clients of a real cluster
//! would be: the first can reach only the old leader, which must not answer them from its old
//! state (a read under a lease past its term, say) while the others write through the new one.
//!
//! `FERRY_JEPSEN_SECONDS` sets how long the workload runs (default 45);
//! `cargo test -p ferry-cli --test kv_jepsen -- --ignored` runs it for ten minutes.
//! `FERRY_JEPSEN_SEED` reproduces a run's choices. Without network namespaces (root) the test
//! skips with the reason (fails under FERRY_REQUIRE_KERNEL_FEATURES); without
//! `ferry-linearizability` on PATH it skips (fails under FERRY_REQUIRE_TOOLS).

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use ferry_kv::raft::client::NodeStatus;
use ferry_kv::raft::{Client, ClientError, LEADER_TRAILER};
use ferry_testkit::netns::{Lan, Netns, run};
use ferry_testkit::tools::{require_tool, skip};
use ferry_testkit::{ChildProc, Rng};
use serde_json::json;

/// A cluster under test: servers are Lan nodes `0..nodes`; the clients run in Lan nodes
/// `nodes` (half of them, and the test's own calls) and `nodes + 1` (the other half).
#[derive(Clone, Copy)]
struct Setup {
    nodes: usize,
    /// What every `ferry kv serve` is given beside its id, address, peers and data.
    args: &'static [&'static str],
}

/// Three nodes, reads confirmed by a quorum each (read-index).
const THREE: Setup = Setup {
    nodes: 3,
    args: &["--sync", "always"],
};

/// Five nodes, reads served under the leader's lease.
const FIVE_LEASED: Setup = Setup {
    nodes: 5,
    args: &["--sync", "always", "--read-lease"],
};

const CLIENTS: usize = 4;
/// Few keys, so that operations collide.
const KEYS: [&str; 3] = ["x", "y", "z"];
/// Every this many seconds the clients move to fresh keys (`x0`, `x1`, ...), as Jepsen's
/// independent keys: each key's history, which the checker searches on its own, stays short, and
/// an operation of unknown outcome (open to the end of the history) weighs on one key's only.
const KEY_SECONDS: u64 = 10;
const PORT: u16 = 7400;
/// Each node's `/metrics`, on its own address.
const METRICS_PORT: u16 = 7401;
/// How long a cluster may take to elect a leader after a fault is undone, at most.
const SETTLE: Duration = Duration::from_secs(40);
/// What each node logs into its `nodeN.log` (`RUST_LOG` of `ferry kv serve`).
const NODE_LOG: &str = "openraft=info,ferry_kv=debug";
/// Lines of each node's log printed when the test fails (the files are kept).
const LOG_TAIL: usize = 60;

/// One operation of the history (see tools/linearizability/main.go for the format).
struct Record {
    client: usize,
    op: &'static str,
    key: String,
    value: Option<String>,
    call: u64,
    /// `None`: the outcome is unknown.
    ret: Option<u64>,
    /// ok or fail (when `ret` is set).
    ok: bool,
    found: Option<bool>,
}

impl Record {
    fn outcome(&self) -> &'static str {
        match (self.ret, self.ok) {
            (None, _) => "unknown",
            (Some(_), true) => "ok",
            (Some(_), false) => "fail",
        }
    }

    fn json(&self) -> String {
        let mut v = json!({
            "client": self.client, "op": self.op, "key": self.key,
            "call": self.call, "outcome": self.outcome(),
        });
        if let Some(value) = &self.value {
            v["value"] = json!(value);
        }
        if let Some(ret) = self.ret {
            v["return"] = json!(ret);
        }
        if let Some(found) = self.found {
            v["found"] = json!(found);
        }
        v.to_string()
    }
}

/// One `ferry kv serve` process in its namespace, restartable on the same address and data.
struct Node {
    id: u64,
    ns: String,
    addr: String,
    data: PathBuf,
    /// Its stderr (openraft's log and its own), across restarts, with the test's notes.
    log: PathBuf,
    peers: String,
    /// `HOST:PORT` of its `/metrics`.
    metrics: String,
    /// The reads it served before its restarts, confirmed by a quorum and under a lease.
    reads: [f64; 2],
    args: &'static [&'static str],
    proc: Option<ChildProc>,
    paused: bool,
}

impl Node {
    /// Starts the node and waits until it serves.
    fn start(&mut self) {
        self.note("started");
        let mut cmd = Command::new("ip");
        // The shell execs the node (same pid, for the signals) with its stderr into the log.
        cmd.args([
            "netns",
            "exec",
            &self.ns,
            "sh",
            "-c",
            "exec \"$0\" \"$@\" 2>>\"$FERRY_NODE_LOG\"",
        ])
        .arg(env!("CARGO_BIN_EXE_ferry"))
        .env("FERRY_NODE_LOG", &self.log)
        .env("RUST_LOG", NODE_LOG)
        .args([
            "kv",
            "serve",
            "--id",
            &self.id.to_string(),
            "--listen",
            &self.addr,
        ])
        .args(["--peers", &self.peers])
        .args(["--metrics", &self.metrics])
        .args(self.args)
        .arg("--data")
        .arg(&self.data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut p = ChildProc::spawn(&format!("node {}", self.id), cmd);
        p.expect_line("serving on", "the node serves");
        self.proc = Some(p);
    }

    fn kill9(&mut self) {
        if let Some(mut p) = self.proc.take() {
            if !self.paused {
                self.count_reads();
            }
            p.kill();
            self.note("killed -9");
        }
        self.paused = false;
    }

    fn signal(&mut self, sig: &str) {
        let pid = self.proc.as_ref().expect("running").id().to_string();
        run("kill", &[sig, &pid]).expect("signal the node");
        self.note(&format!("kill {sig}"));
        self.paused = sig == "-STOP";
    }

    /// Adds the reads it served since its start (`/metrics`) to [`Node::reads`]: done before
    /// each kill, whose restart sets its counters back to zero.
    fn count_reads(&mut self) {
        let m = common::scrape(&self.metrics);
        for (n, by) in self.reads.iter_mut().zip(["quorum", "lease"]) {
            *n += m[&format!("ferry_kv_reads_total{{by=\"{by}\"}}")];
        }
    }

    /// A line of the test's own in the node's log, to read it against the faults.
    fn note(&self, what: &str) {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the node's log");
        writeln!(
            f,
            "---- test: node {} {what} (unix time {:?})",
            self.id,
            unix_now()
        )
        .expect("write the log");
    }

    /// Running and not paused: it answers.
    fn up(&self) -> bool {
        self.proc.is_some() && !self.paused
    }

    /// What the node says of the cluster, or why it said nothing.
    fn status(&self) -> Result<NodeStatus, ClientError> {
        Client::connect(&self.addr).and_then(|mut c| c.status())
    }
}

fn unix_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// Prints the end of each node's log when the test fails (dropped while panicking).
struct LogsOnFailure(Vec<PathBuf>);

impl Drop for LogsOnFailure {
    fn drop(&mut self) {
        if !thread::panicking() {
            return;
        }
        for log in &self.0 {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL)..];
            eprintln!(
                "==== {} (last {} lines):\n{}",
                log.display(),
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

/// The leader every node that answers agrees on, once they do; after SETTLE the test fails
/// with what each node said and the faults so far (`done`).
fn wait_for_leader(nodes: &[Node], done: &[String]) -> usize {
    let deadline = Instant::now() + SETTLE;
    loop {
        let statuses: Vec<(u64, Result<NodeStatus, ClientError>)> = nodes
            .iter()
            .filter(|n| n.up())
            .map(|n| (n.id, n.status()))
            .collect();
        let leader = statuses[0].1.as_ref().ok().and_then(|s| s.leader).unwrap_or(0) as usize;
        let agreed = statuses
            .iter()
            .all(|(_, s)| s.as_ref().ok().and_then(|s| s.leader) == Some(leader as u64));
        if leader != 0 && agreed && nodes[leader - 1].up() {
            return leader - 1;
        }
        if Instant::now() >= deadline {
            let said: Vec<String> = statuses
                .iter()
                .map(|(id, s)| match s {
                    Ok(s) => format!(
                        "node {id}: {} term {} leader {:?} commit {} applied {}",
                        s.state, s.term, s.leader, s.commit_index, s.applied_index
                    ),
                    Err(e) => format!("node {id}: no answer: {e}"),
                })
                .collect();
            panic!(
                "the running nodes did not agree on a leader within {SETTLE:?}:\n  {}\nafter the faults:\n  {}",
                said.join("\n  "),
                done.join("\n  ")
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Refused before it was proposed or read: the answer names the leader (or none, empty), or
/// redirects never reached one. Anything else (a timeout, a lost connection) may have applied.
fn refused(e: &ClientError) -> bool {
    match e {
        ClientError::Redirects { .. } => true,
        ClientError::Status { status, .. } => status.metadata.get(LEADER_TRAILER).is_some(),
        _ => false,
    }
}

fn nanos(clock: Instant) -> u64 {
    clock.elapsed().as_nanos() as u64
}

/// Calls `op` on `key`, recording it; drops the client after an error (it reconnects).
fn invoke(
    conn: &mut Option<Client>,
    client: usize,
    clock: Instant,
    op: &'static str,
    key: String,
    value: Option<String>,
) -> Record {
    let c = conn.as_mut().expect("connected");
    let k = key.as_str();
    let call = nanos(clock);
    let v = value.clone().unwrap_or_default();
    let result = match op {
        "put" => c.put(k, v.as_bytes()).map(|()| None),
        "append" => c.append(k, v.as_bytes()).map(|_| None),
        "delete" => c.delete(k).map(|existed| Some((existed, None))),
        _ => c
            .get(k)
            .map(|got| Some((got.is_some(), got.map(|b| String::from_utf8(b).expect("utf-8"))))),
    };
    let ret = nanos(clock);
    let mut rec = Record {
        client,
        op,
        key,
        value,
        call,
        ret: Some(ret),
        ok: true,
        found: None,
    };
    match result {
        Ok(Some((found, got))) => {
            rec.found = Some(found);
            if op == "get" {
                rec.value = got;
            }
        }
        Ok(None) => {}
        Err(e) => {
            rec.ok = false;
            if !refused(&e) {
                rec.ret = None;
            }
            *conn = None;
        }
    }
    rec
}

/// A client's loop until `until`: random operations on random keys through a random node.
fn client(ns: &Netns, nodes: usize, id: usize, seed: u64, clock: Instant, until: Instant) -> Vec<Record> {
    ns.enter().expect("enter the clients' namespace");
    let mut rng = Rng::new(seed ^ (id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut conn: Option<Client> = None;
    let mut history = Vec::new();
    let mut n = 0;
    while Instant::now() < until {
        if conn.is_none() {
            let addr = node_addr(rng.below(nodes as u64) as usize);
            // A node that is down refuses the connect (nothing was invoked); try another.
            conn = Client::connect(&addr).ok();
            continue;
        }
        let key = format!("{}{}", rng.pick(&KEYS), clock.elapsed().as_secs() / KEY_SECONDS);
        n += 1;
        // Unique, and a separator so that appended values stay readable in the checker's report.
        let value = Some(format!("{id}.{n};"));
        let rec = match rng.below(8) {
            0..=1 => invoke(&mut conn, id, clock, "put", key, value),
            2..=3 => invoke(&mut conn, id, clock, "append", key, value),
            4 => invoke(&mut conn, id, clock, "delete", key, None),
            _ => invoke(&mut conn, id, clock, "get", key, None),
        };
        history.push(rec);
    }
    history
}

fn node_addr(i: usize) -> String {
    format!("tcp://{}:{PORT}", Lan::addr(i))
}

/// Injects one fault after another until `until`, each held `hold` and undone, then waits for
/// a leader before the next; what it did goes into `faults`.
fn nemesis(lan: &Lan, nodes: &mut [Node], rng: &mut Rng, until: Instant, faults: &mut Vec<String>) {
    let mut k = rng.below(5);
    let n = nodes.len();
    while Instant::now() < until {
        // Faults last 2 to 6 s (a schedule, not an ordering: nothing waits on them).
        let hold = Duration::from_millis(2000 + rng.below(4000));
        let leader = wait_for_leader(nodes, faults);
        let follower = (leader + 1 + rng.below(n as u64 - 1) as usize) % n;
        let what = match k % 5 {
            0 => {
                nodes[leader].kill9();
                thread::sleep(hold);
                nodes[leader].start();
                format!("kill -9 leader {}", leader + 1)
            }
            1 => {
                nodes[follower].kill9();
                thread::sleep(hold);
                nodes[follower].start();
                format!("kill -9 follower {}", follower + 1)
            }
            2 => {
                let i = rng.below(n as u64) as usize;
                nodes[i].signal("-STOP");
                thread::sleep(hold);
                nodes[i].signal("-CONT");
                format!("SIGSTOP/SIGCONT node {}", i + 1)
            }
            3 => {
                // The leader on the minority's side (alone of three, with one follower of five)
                // with half the clients: they can reach only the old leader while the others
                // write through the new one.
                let servers: Vec<usize> = (0..(n - 1) / 2).map(|j| (leader + j) % n).collect();
                let minority: Vec<usize> = servers.iter().copied().chain([n]).collect();
                let others: Vec<usize> = (0..=n + 1).filter(|i| !minority.contains(i)).collect();
                lan.partition(&[&minority, &others]).expect("partition");
                thread::sleep(hold);
                lan.heal().expect("heal");
                let ids: Vec<usize> = servers.iter().map(|i| i + 1).collect();
                format!("partition nodes {ids:?} (the leader first) and half the clients")
            }
            _ => {
                lan.set_loss(follower, 20).expect("set loss");
                thread::sleep(hold);
                lan.set_loss(follower, 0).expect("clear loss");
                format!("20 % loss into node {}", follower + 1)
            }
        };
        faults.push(format!("{what} for {hold:?}"));
        k += 1;
    }
}

/// Runs the workload for `seconds` and checks the history.
fn jepsen(test: &str, tag: &str, seconds: u64, setup: Setup) {
    // One run at a time: each is a cluster under faults whose timeouts must hold.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(checker) = require_tool("ferry-linearizability") else {
        return;
    };
    let lan = match Lan::new(tag, setup.nodes + 2) {
        Ok(lan) => lan,
        Err(reason) => return skip(test, &format!("no network namespaces: {reason}")),
    };
    // A connect to a cut node gives up after ~7 s (2 SYN retries), not the default ~2 min.
    for i in 0..setup.nodes + 2 {
        lan.node(i)
            .exec("sh", &["-c", "echo 2 > /proc/sys/net/ipv4/tcp_syn_retries"])
            .expect("set tcp_syn_retries");
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kv-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    eprintln!("{test}: history and node data in {}", dir.display());
    let seed = ferry_testkit::seed("FERRY_JEPSEN_SEED", 27);
    thread::scope(|s| {
        s.spawn(|| {
            lan.node(setup.nodes)
                .enter()
                .expect("enter the clients' namespace");
            workload(&lan, &dir, seed, seconds, &checker, setup);
        })
        .join()
        .expect("the workload failed");
    });
}

fn workload(lan: &Lan, dir: &Path, seed: u64, seconds: u64, checker: &Path, setup: Setup) {
    let peers = (0..setup.nodes)
        .map(|i| format!("{}={}", i + 1, node_addr(i)))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes: Vec<Node> = (0..setup.nodes)
        .map(|i| Node {
            id: i as u64 + 1,
            ns: lan.node(i).name.clone(),
            addr: node_addr(i),
            data: dir.join(format!("node{}", i + 1)),
            log: dir.join(format!("node{}.log", i + 1)),
            peers: peers.clone(),
            metrics: format!("{}:{METRICS_PORT}", Lan::addr(i)),
            reads: [0.0; 2],
            args: setup.args,
            proc: None,
            paused: false,
        })
        .collect();
    let _logs = LogsOnFailure(nodes.iter().map(|n| n.log.clone()).collect());
    for n in &mut nodes {
        n.start();
    }
    Client::connect(&nodes[0].addr)
        .and_then(|mut c| c.init(""))
        .expect("ferry kv init");
    wait_for_leader(&nodes, &[]);

    let clock = Instant::now();
    let until = clock + Duration::from_secs(seconds);
    let mut faults = Vec::new();
    let mut history: Vec<Record> = thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let ns = lan.node(setup.nodes + c % 2);
                s.spawn(move || client(ns, setup.nodes, c, seed, clock, until))
            })
            .collect();
        nemesis(lan, &mut nodes, &mut Rng::new(seed), until, &mut faults);
        clients
            .into_iter()
            .flat_map(|h| h.join().expect("a client panicked"))
            .collect()
    });

    // Every fault undone; then every node killed at once and restarted: what was acknowledged
    // must still be read (a kill first counts the reads the node served).
    lan.heal().expect("heal");
    for (i, n) in nodes.iter_mut().enumerate() {
        lan.set_loss(i, 0).expect("clear loss");
        n.kill9();
    }
    let served = |k: usize| nodes.iter().map(|n| n.reads[k]).sum::<f64>();
    let (quorum, leased) = (served(0), served(1));
    for n in &mut nodes {
        n.start();
    }
    wait_for_leader(
        &nodes,
        &["every node killed -9 at once and restarted".to_string()],
    );
    let mut reader = Some(Client::connect(&nodes[0].addr).expect("connect for the final reads"));
    let keys = (0..=seconds / KEY_SECONDS).flat_map(|g| KEYS.map(|k| format!("{k}{g}")));
    for key in keys {
        let rec = invoke(&mut reader, CLIENTS, clock, "get", key.clone(), None);
        assert!(rec.ok, "the final read of {key} failed");
        history.push(rec);
    }

    let path = dir.join("history.jsonl");
    let html = dir.join("history.html");
    let started = Instant::now();
    let out = check(checker, &history, &path, &html);
    let count = |o: &str| history.iter().filter(|r| r.outcome() == o).count();
    let report = format!(
        "{} operations ({} ok, {} fail, {} unknown), {} faults:\n  {}\nchecker ({:.1?}, {}): {}{}",
        history.len(),
        count("ok"),
        count("fail"),
        count("unknown"),
        faults.len(),
        faults.join("\n  "),
        started.elapsed(),
        out.status,
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out.stderr).trim(),
    );
    eprintln!("{report}\nreads served: {quorum} confirmed by a quorum, {leased} under a lease");
    // A run with leases served reads under them; one without, none.
    let leases = setup.args.contains(&"--read-lease");
    assert_eq!(
        leased > 0.0,
        leases,
        "{leased} reads under a lease (--read-lease: {leases})\n{report}"
    );
    // The nemesis goes round the five kinds: five faults are one of each.
    assert!(
        faults.len() >= 5,
        "only {} faults in {seconds} s: not every kind was injected (raise FERRY_JEPSEN_SECONDS)\n{report}",
        faults.len()
    );
    match out.status.code() {
        Some(0) => {}
        Some(1) => panic!(
            "not linearizable; see {} and {}\n{report}",
            path.display(),
            html.display()
        ),
        Some(3) => panic!(
            "the checker reached no verdict in time on {}\n{report}",
            path.display()
        ),
        _ => panic!("the checker could not read {}\n{report}", path.display()),
    }
    // The check has teeth: the same history with one final read changed to a value no client
    // ever wrote is refused. (Changing it to "absent" is not always wrong: a delete that ran
    // concurrently with the last write can explain it, and a run found such a history.)
    let last = history
        .iter()
        .rposition(|r| r.client == CLIENTS && r.found == Some(true))
        .expect("a final read that found its key");
    history[last].value = Some("never-written;".to_string());
    let forged = check(
        checker,
        &history,
        &dir.join("forged.jsonl"),
        &dir.join("forged.html"),
    );
    assert_eq!(
        forged.status.code(),
        Some(1),
        "a history with a read of a value never written passed the checker: {}",
        String::from_utf8_lossy(&forged.stdout)
    );
    // Data and logs of a passing run are not kept; the history is.
    for n in &nodes {
        let _ = std::fs::remove_dir_all(&n.data);
        let _ = std::fs::remove_file(&n.log);
    }
    let _ = std::fs::remove_file(dir.join("forged.jsonl"));
    let _ = std::fs::remove_file(dir.join("forged.html"));
}

/// Writes `history` to `path` and runs the checker on it (its visualization to `html`).
fn check(checker: &Path, history: &[Record], path: &Path, html: &Path) -> std::process::Output {
    let mut text = String::new();
    for r in history {
        writeln!(text, "{}", r.json()).unwrap();
    }
    std::fs::write(path, text).unwrap();
    Command::new(checker)
        .args(["--timeout", "120s", "--html"])
        .arg(html)
        .arg(path)
        .output()
        .expect("run ferry-linearizability")
}

/// The workload's length: `FERRY_JEPSEN_SECONDS`, or `default`.
fn seconds(default: u64) -> u64 {
    std::env::var("FERRY_JEPSEN_SECONDS")
        .map(|s| s.parse().expect("FERRY_JEPSEN_SECONDS is a number of seconds"))
        .unwrap_or(default)
}

#[test]
fn ferry_kv_stays_linearizable_under_faults() {
    let test = "ferry_kv_stays_linearizable_under_faults";
    jepsen(test, "jepsen", seconds(45), THREE);
}

/// Five nodes, reads under the leader's lease (`--read-lease`): a leader paused (SIGSTOP) or
/// cut off past its lease must not answer a read from a stale state.
#[test]
fn five_nodes_with_leased_reads_stay_linearizable_under_faults() {
    let test = "five_nodes_with_leased_reads_stay_linearizable_under_faults";
    jepsen(test, "jepsen5", seconds(45), FIVE_LEASED);
}

#[test]
#[ignore = "ten minutes: cargo test -p ferry-cli --test kv_jepsen -- --ignored"]
fn ferry_kv_stays_linearizable_under_faults_for_ten_minutes() {
    let test = "ferry_kv_stays_linearizable_under_faults_for_ten_minutes";
    jepsen(test, "jepsen10", 600, THREE);
}
