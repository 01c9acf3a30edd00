//! `ferry kv` over AF_XDP as separate processes (issue 33): a node (`ferry kv serve --listen
//! xdp://...`) in one network namespace, `ferry kv put` and `get` processes in another, the two
//! joined through a bridge that drops 5 % of the packets (nftables; this kernel has no netem).
//! Native XDP on both veths, copy mode. Every put is acknowledged, every get reads its value,
//! `status` (two connections at once from one process) answers,
//! the node applied each put exactly once (a retransmitted request applied again would show
//! in `ferry_kv_commands_applied_total`), and packets were lost on the way. Without root,
//! namespaces, nftables or AF_XDP the test prints SKIPPED (and fails with
//! `FERRY_REQUIRE_KERNEL_FEATURES` set).

mod common;

use std::process::{Command, Stdio};

use ferry_testkit::DEADLINE;
use ferry_testkit::netns::{Netns, VethPair};
use ferry_testkit::tools::skip;
use ferry_testkit::{ChildProc, Output, run};

/// Each `put` and `get` is a process of its own (an XDP program loaded and attached, a UMEM
/// locked, a neighbour lookup and a handshake each).
const PUTS: usize = 8;
/// Twelve packets at MTU 1500: with the handshakes, some 400 packets through the lossy bridge
/// over the test (the chance that 5 % loss drops none is about 1e-9).
const VALUE_LEN: usize = 16_000;
/// The node's metrics endpoint, inside its own namespace (nothing else listens there).
const METRICS: &str = "127.0.0.1:9464";

/// `ferry ARGS` inside `ns`, with `stdin`.
fn ferry_in(ns: &Netns, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.name])
        .arg(env!("CARGO_BIN_EXE_ferry"))
        .args(args);
    run(&format!("ferry {}", args.join(" ")), cmd, stdin, DEADLINE)
}

fn value(i: usize) -> Vec<u8> {
    (0..VALUE_LEN).map(|k| (k * 7 + i) as u8).collect()
}

#[test]
fn ferry_kv_serves_over_xdp_to_other_processes_under_loss() {
    const TEST: &str = "ferry_kv_serves_over_xdp_to_other_processes_under_loss";
    let net = match VethPair::new("kx", Some(5), 1500) {
        Ok(net) => net,
        Err(e) => return skip(TEST, &format!("no network namespaces or nftables: {e}")),
    };
    let data = common::scratch("kv-xdp-test", "node");
    let _ = std::fs::remove_dir_all(&data);
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &net.b.name])
        .arg(env!("CARGO_BIN_EXE_ferry"))
        .args(["kv", "serve", "--id", "1", "--sync", "none", "--metrics", METRICS])
        .args(["--listen", &format!("xdp://{}/0@{}:0", net.b_if, VethPair::B_IP)])
        .arg("--data")
        .arg(&data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut node = ChildProc::spawn("ferry kv serve", cmd);
    let served = node.expect_line("serving on", "the node serves over xdp://");
    let port = served
        .rsplit_once(':')
        .map(|(_, p)| p.to_owned())
        .unwrap_or_else(|| panic!("no port in {served:?}"));
    // The client reaches the node through its own interface.
    let addr = format!("xdp://{}/0@{}:{port}", net.a_if, VethPair::B_IP);
    for i in 0..PUTS {
        let key = format!("k{i}");
        let out = ferry_in(&net.a, &["kv", "put", "--addr", &addr, &key, "-"], &value(i));
        assert!(out.status.success(), "put {key}: {}", out.describe());
    }
    for i in 0..PUTS {
        let key = format!("k{i}");
        let out = ferry_in(&net.a, &["kv", "get", "--addr", &addr, &key], &[]);
        assert!(out.status.success(), "get {key}: {}", out.describe());
        assert!(
            out.stdout == value(i),
            "get {key}: {} bytes, not its value",
            out.stdout.len()
        );
    }
    // `status` holds two connections at once through the client's interface: one shared
    // AF_XDP endpoint (it failed with EBUSY while each connection bound its own).
    let out = ferry_in(&net.a, &["kv", "status", "--addr", &addr], &[]);
    assert!(out.status.success(), "status: {}", out.describe());
    // Read inside the node's namespace, from a thread that entered it.
    let applied = std::thread::scope(|s| {
        s.spawn(|| {
            net.b.enter().expect("enter the node's namespace");
            common::scrape(METRICS)
                .get("ferry_kv_commands_applied_total")
                .copied()
        })
        .join()
        .expect("the scrape")
    });
    assert_eq!(
        applied,
        Some(PUTS as f64),
        "each acknowledged put applied exactly once"
    );
    assert!(
        net.dropped().expect("the bridge's counter") > 0,
        "5 % loss and nothing dropped"
    );
    node.kill();
    let _ = node.wait();
    let _ = std::fs::remove_dir_all(&data);
}
