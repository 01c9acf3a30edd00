//! `Lan`: nodes in namespaces reach each other, a partition cuts exactly the links between its
//! groups (and isolates a node in no group), packet loss (at 100 %, so the check is certain)
//! stops what a node receives and only that, and healing joins them again. Real namespaces,
//! bridges and TCP connects; skipped with the reason where namespaces cannot be made (fails
//! instead under FERRY_REQUIRE_KERNEL_FEATURES, as in CI).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use ferry_testkit::netns::{Lan, Netns};
use ferry_testkit::tools::skip;

const TEST: &str = "lan_partitions_and_heals";

/// Long enough for any connect that can succeed, on a busy machine.
const REACH: Duration = Duration::from_secs(10);
/// How long a connect across a cut is given: it can never succeed, so this only bounds the test.
const CUT: Duration = Duration::from_millis(500);

/// Runs `f` on a thread inside `ns`.
fn inside<T: Send>(ns: &Netns, f: impl FnOnce() -> T + Send) -> T {
    thread::scope(|s| {
        s.spawn(|| {
            ns.enter().expect("enter the namespace");
            f()
        })
        .join()
        .expect("the thread inside the namespace panicked")
    })
}

#[test]
fn lan_partitions_and_heals() {
    let lan = match Lan::new("lan", 3) {
        Ok(lan) => lan,
        Err(reason) => return skip(TEST, &format!("no network namespaces: {reason}")),
    };
    // A listener on each node; connects complete in its backlog, so nothing needs to accept.
    let listeners: Vec<TcpListener> = (0..lan.len())
        .map(|i| {
            inside(lan.node(i), || {
                TcpListener::bind((Lan::addr(i), 0)).expect("bind")
            })
        })
        .collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let connects = |from: usize, to: usize, within: Duration| {
        inside(lan.node(from), || {
            TcpStream::connect_timeout(&addrs[to], within).is_ok()
        })
    };
    for (from, to) in [(0, 1), (1, 2), (2, 0)] {
        assert!(connects(from, to, REACH), "{from} -> {to} before any partition");
    }

    lan.partition(&[&[0], &[1, 2]]).expect("partition");
    assert!(connects(1, 2, REACH), "1 -> 2 inside the majority");
    assert!(connects(2, 1, REACH), "2 -> 1 inside the majority");
    assert!(!connects(1, 0, CUT), "1 -> 0 across the cut");
    assert!(!connects(0, 2, CUT), "0 -> 2 across the cut");

    lan.partition(&[&[1, 2]]).expect("isolate node 0");
    assert!(!connects(0, 1, CUT), "0 is in no group");
    assert!(connects(2, 1, REACH), "1 and 2 still together");

    lan.heal().expect("heal");
    for (from, to) in [(1, 0), (0, 2), (2, 1)] {
        assert!(connects(from, to, REACH), "{from} -> {to} after healing");
    }

    match lan.set_loss(0, 100) {
        Ok(()) => {
            assert!(!connects(1, 0, CUT), "node 0 drops every packet it receives");
            assert!(connects(1, 2, REACH), "the others are not impaired");
            lan.set_loss(0, 0).expect("stop dropping");
            assert!(connects(2, 0, REACH), "node 0 receives again");
        }
        Err(reason) => skip(TEST, &format!("no packet loss: {reason}")),
    }
}
