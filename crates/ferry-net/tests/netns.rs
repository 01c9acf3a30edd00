//! Every mode across a veth pair between two network namespaces this test creates (real
//! segmentation at MTU 1500 instead of loopback's 64 KiB): random records with zero-copy
//! fields arrive byte for byte. The peers are this test binary, re-executed inside the
//! namespaces with `ip netns exec`; the namespaces (and so the veth pair) are deleted
//! afterwards. Without root or `ip` the test prints SKIPPED (or fails, with
//! `FERRY_REQUIRE_KERNEL_FEATURES` set).

mod common;

use std::net::TcpListener;

use common::records;
use common::{ChildProc, Netns, outstanding, pool, self_command, skip, within};
use ferry_net::{Config, Connection, Mode};

const TEST: &str = "veth_round_trip_between_namespaces";
const CLIENT_IP: &str = "10.251.0.1";
const SERVER_IP: &str = "10.251.0.2";
const PORT: u16 = 7411;
const RECORDS: usize = 40;

fn specs(seed: u64, mode: usize) -> Vec<records::RecordSpec> {
    records::records(seed ^ ((mode as u64 + 1) * 0x1000), RECORDS)
}

/// Inside namespace b: accept one connection per mode and check every record.
fn server_role() {
    let seed = common::seed(0);
    let listener = TcpListener::bind((SERVER_IP, PORT)).expect("bind inside the namespace");
    println!("FERRY-PEER READY");
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let pool = pool();
        let (stream, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip().to_string(), CLIENT_IP, "the client is across the veth");
        let mut conn = Connection::new(stream, &pool, &Config::default()).unwrap();
        let bytes = records::receive_all(&mut conn, &specs(seed, i));
        drop(conn);
        assert_eq!(outstanding(&pool), 0);
        println!("FERRY-PEER OK {mode} {bytes}");
    }
}

/// Inside namespace a: one connection per mode, every record sent, then idle.
fn client_role() {
    let seed = common::seed(0);
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let pool = pool();
        let mut conn = Connection::connect((SERVER_IP, PORT), &pool, &Config::with_mode(mode)).unwrap();
        let (placement, wire) = records::send_all(&mut conn, &pool, &specs(seed, i)).unwrap();
        conn.sender().wait_idle().unwrap();
        let stats = conn.stats().send;
        assert_eq!(stats.queue.wire_bytes, wire);
        assert_eq!(stats.queue.zero_copy_values_referenced, placement.referenced);
        assert_eq!(stats.queue.zero_copy_values_copied, placement.copied);
        eprintln!("{mode} ({}) over veth: {stats:?}", conn.mode());
        drop(conn);
        assert_eq!(outstanding(&pool), 0);
        println!("FERRY-PEER SENT {mode} {wire}");
    }
}

/// Two namespaces joined by a veth pair, addressed and up.
fn setup() -> Result<(Netns, Netns, String), String> {
    let a = Netns::create("a")?;
    let b = Netns::create("b")?;
    let pid = std::process::id();
    let (va, vb) = (format!("fva{pid}"), format!("fvb{pid}"));
    common::ip(&[
        "link", "add", &va, "netns", &a.name, "type", "veth", "peer", "name", &vb, "netns", &b.name,
    ])?;
    for (ns, dev, addr) in [(&a, &va, CLIENT_IP), (&b, &vb, SERVER_IP)] {
        ns.exec("ip", &["addr", "add", &format!("{addr}/24"), "dev", dev])?;
        ns.exec("ip", &["link", "set", dev, "up"])?;
        ns.exec("ip", &["link", "set", "lo", "up"])?;
    }
    Ok((a, b, va))
}

/// See the file's docs.
#[test]
fn veth_round_trip_between_namespaces() {
    match common::role().as_deref() {
        Some("server") => return server_role(),
        Some("client") => return client_role(),
        Some(other) => panic!("unknown role {other}"),
        None => {}
    }
    within(TEST, || {
        let (a, b, va) = match setup() {
            Ok(x) => x,
            Err(reason) => return skip(TEST, &format!("no network namespaces: {reason}")),
        };
        let seed = common::seed(0x7e7);
        let mut server_cmd = self_command(TEST, "server", Some(&b.name));
        server_cmd.env("FERRY_NET_SEED", seed.to_string());
        let mut server = ChildProc::spawn("server in namespace b", server_cmd);
        server.expect_line("FERRY-PEER READY", "the server listens");
        let mut client_cmd = self_command(TEST, "client", Some(&a.name));
        client_cmd.env("FERRY_NET_SEED", seed.to_string());
        let mut client = ChildProc::spawn("client in namespace a", client_cmd);
        client.wait_success();
        server.wait_success();
        let ok: Vec<String> = server
            .remaining_lines()
            .into_iter()
            .filter_map(|l| l.find("FERRY-PEER OK ").map(|at| l[at + 14..].to_owned()))
            .collect();
        assert_eq!(
            ok.len(),
            Mode::ALL.len(),
            "one verified connection per mode: {ok:?}"
        );
        let received: u64 = ok
            .iter()
            .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        let tx: u64 = a
            .exec("cat", &[&format!("/sys/class/net/{va}/statistics/tx_bytes")])
            .expect("veth counters")
            .trim()
            .parse()
            .unwrap();
        eprintln!("{received} bytes of frames received; {tx} bytes left the veth in namespace a");
        assert!(tx >= received, "the frames crossed the veth");
        drop((a, b));
    });
}
