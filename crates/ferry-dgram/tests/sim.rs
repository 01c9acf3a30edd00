//! Two endpoints over a simulated lossy network: every message arrives exactly once, intact
//! and in order, within credits and window, and credits come back when idle.

mod common;

use std::time::Duration;

use common::{Faults, Net, messages};
use ferry_dgram::{Config, Event, MAX_CREDITS, SendError, SessionId, Timely};
use ferry_testkit::Rng;
use ferry_transport::Meta;
use proptest::prelude::*;

/// Lossy runs need patience: a session is given up only after many timeouts in a row. The
/// test pool's largest buffer is 1 MiB.
fn config() -> Config {
    Config {
        max_timeouts: 60,
        max_message_len: 1 << 20,
        ..Config::default()
    }
}

fn body(dir: u64, i: usize, len: usize) -> Vec<u8> {
    Rng::new(dir << 32 | i as u64).bytes(len)
}

/// Sends `sizes[0]`, `sizes[1]`, ... from node 0 to 1 and the reverse list from 1 to 0 over
/// `faults`, sending whenever the window allows, and checks every invariant at every step.
fn exchange(
    seed: u64,
    faults: Faults,
    credits: u32,
    timely: Option<Timely>,
    sizes: &[usize],
    back: &[usize],
) -> Net {
    let mut net = Net::new(seed, faults);
    let config = Config {
        credits,
        timely,
        ..config()
    };
    net.audit = Some((credits, config.window));
    let (a, b) = (
        net.add(config.clone(), seed ^ 1),
        net.add(config.clone(), seed ^ 2),
    );
    let b_addr = net.nodes[b].addr;
    let sa = net.nodes[a].ep.connect(b_addr).unwrap();
    net.run_until("handshake", 100_000, |n| {
        n.nodes[b]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    let Some(Event::Connected { session: sb, peer }) = net.nodes[b].events.pop() else {
        panic!("expected Connected, got {:?}", net.nodes[b].events)
    };
    assert_eq!(peer, net.nodes[a].addr);
    let plan = [(a, sa, sizes, b), (b, sb, back, a)];
    let mut next = [0usize; 2];
    let done = |n: &Net, next: &[usize; 2]| {
        let idle = |i: usize, s: SessionId| {
            let st = n.nodes[i].ep.session_stats(s).expect("session alive");
            st.unacked == 0 && st.messages_in_flight == 0
        };
        next[0] == sizes.len()
            && next[1] == back.len()
            && idle(a, sa)
            && idle(b, sb)
            && messages(&n.nodes[b].events).len() == sizes.len()
            && messages(&n.nodes[a].events).len() == back.len()
    };
    for _ in 0..2_000_000 {
        if done(&net, &next) {
            break;
        }
        for (dir, &(from, s, list, _)) in plan.iter().enumerate() {
            while next[dir] < list.len() {
                let i = next[dir];
                let meta = Meta::new(dir as u16, i as u64);
                match net.nodes[from]
                    .ep
                    .send_copy(s, meta, &body(dir as u64, i, list[i]))
                {
                    Ok(()) => next[dir] += 1,
                    Err(SendError::WindowFull { window }) => {
                        // Refused only when the window is really full.
                        let acked = net.nodes[from].audit.messages_acked();
                        assert_eq!((window, next[dir] - acked), (config.window, config.window));
                        break;
                    }
                    Err(e) => panic!("send: {e}"),
                }
            }
            let st = net.nodes[from].ep.session_stats(s).expect("session alive");
            assert!(st.unacked <= config.credits, "{st:?}");
            assert!((1..=config.credits).contains(&st.cwnd), "{st:?}");
        }
        assert!(net.step() || done(&net, &next), "the network went quiet first");
    }
    assert!(done(&net, &next), "not done after the step bound");
    for &(from, s, list, to) in &plan {
        let got = messages(&net.nodes[to].events);
        for (i, (meta, data)) in got.iter().enumerate() {
            let dir = u64::from(meta.kind);
            assert_eq!(meta.request_id, i as u64, "in send order, each once");
            assert_eq!(data, &body(dir, i, list[i]), "message {i} intact");
        }
        let st = net.nodes[from].ep.session_stats(s).unwrap();
        assert_eq!(st.credits, config.credits, "credits back to full when idle");
        let audit = &net.nodes[from].audit;
        assert_eq!(audit.acked, audit.sent_end, "every packet sent was acknowledged");
        assert_eq!(audit.messages_acked(), list.len());
    }
    for n in &net.nodes {
        let stats = n.ep.stats();
        // Duplicates, and data that overtook the Accept (the server sends as soon as it accepts).
        let d = stats.drops;
        assert_eq!(d.total(), d.duplicate + d.not_connected, "{stats:?}");
        assert!(
            n.events
                .iter()
                .all(|e| matches!(e, Event::Message { .. } | Event::Connected { .. }))
        );
    }
    for n in &mut net.nodes {
        // Delivered messages are the node's pool buffers; once the application drops them
        // and everything is acknowledged, no buffer is left outstanding.
        for e in &n.events {
            if let Event::Message { data, .. } = e {
                assert!(n.pool.contains(data), "reassembled in the endpoint's pool");
            }
        }
        n.events.clear();
        assert_eq!(n.pool.stats().buffers_outstanding(), 0, "no buffer leaked");
    }
    net
}

fn size() -> impl Strategy<Value = usize> {
    let seg = Config::default().segment_size();
    prop_oneof![
        4 => 0..64usize,
        4 => 0..4 * seg,
        1 => 0..=256usize << 10,
    ]
}

proptest! {
    #[test]
    fn every_message_once_intact_in_order(
        seed in any::<u64>(),
        loss in 0u64..=30,
        dup in 0u64..=10,
        jitter_us in 0u64..2_000,
        sizes in proptest::collection::vec(size(), 0..14),
        back in proptest::collection::vec(size(), 0..6),
        timely in any::<bool>(),
        wide in any::<bool>(),
    ) {
        let faults = Faults { loss, dup, jitter: Duration::from_micros(jitter_us), ..Faults::default() };
        let credits = if wide { MAX_CREDITS } else { config().credits };
        exchange(seed, faults, credits, timely.then(Timely::default), &sizes, &back);
    }
}

#[test]
fn clean_network_needs_no_retransmission() {
    let seg = config().segment_size();
    let sizes = [0, 1, seg, seg + 1, 100_000, 256 << 10, 3, 7, 9, 11];
    let net = exchange(1, Faults::default(), config().credits, None, &sizes, &sizes);
    for n in &net.nodes {
        let stats = n.ep.stats();
        assert_eq!(
            (stats.retransmits, stats.timeouts, stats.drops.total()),
            (0, 0, 0),
            "{stats:?}"
        );
        // 256 KiB is 188 packets: the sender waits for credits.
        assert!(stats.credits_stalled > 0, "{stats:?}");
        // One way takes 100 µs on the simulated wire.
        assert_eq!(stats.rtt, Some(Duration::from_micros(200)));
    }
}

#[test]
fn heavy_loss_reorder_and_duplication() {
    let faults = Faults {
        loss: 30,
        dup: 10,
        jitter: Duration::from_millis(3),
        ..Faults::default()
    };
    // 64 credits: the 64-bit selective bitmap under loss.
    let net = exchange(
        7,
        faults,
        MAX_CREDITS,
        None,
        &[256 << 10, 0, 5000, 256 << 10, 1],
        &[70_000, 2],
    );
    let stats = net.nodes[0].ep.stats();
    assert!(
        stats.retransmits > 0 && stats.timeouts > 0 && stats.drops.duplicate > 0,
        "{stats:?}"
    );
}

/// Through a bottleneck with an unbounded queue, AIMD never sees a loss and keeps the window
/// at the credits, so the queue (and the RTT) stays long; Timely-style control shrinks the
/// window when the RTT rises. Both deliver everything.
#[test]
fn timely_keeps_the_bottleneck_queue_shorter_than_aimd() {
    let run = |timely: Option<Timely>| {
        let faults = Faults {
            per_packet: Duration::from_micros(20),
            ..Faults::default()
        };
        let mut net = Net::new(5, faults);
        let c = Config { timely, ..config() };
        net.add(c.clone(), 1);
        net.add(c, 2);
        let s = net.nodes[0].ep.connect(common::addr(1)).unwrap();
        let mut sent = 0;
        let mut rtts = Vec::new();
        net.run_until("all delivered", 1_000_000, |n| {
            while sent < 60
                && n.nodes[0]
                    .ep
                    .send_copy(s, Meta::new(0, sent), &[1; 20_000])
                    .is_ok()
            {
                sent += 1;
            }
            if let Some(st) = n.nodes[0].ep.session_stats(s) {
                rtts.extend(st.srtt);
            }
            messages(&n.nodes[1].events).len() == 60
        });
        let st = net.nodes[0].ep.session_stats(s).unwrap();
        // The RTT over the second half of the run, once each control has settled.
        let tail = &rtts[rtts.len() / 2..];
        (tail.iter().max().copied().unwrap(), st.cwnd)
    };
    let (aimd_rtt, aimd_cwnd) = run(None);
    let timely = Timely {
        t_low: Duration::from_micros(220),
        t_high: Duration::from_micros(300),
        beta: 0.8,
    };
    let (timely_rtt, timely_cwnd) = run(Some(timely));
    assert_eq!(aimd_cwnd, config().credits, "no loss: AIMD stays at the credits");
    // A full window queues at the bottleneck: up to 32 packets at 20 µs each.
    assert!(aimd_rtt >= Duration::from_micros(600), "AIMD: {aimd_rtt:?}");
    // Timely shrinks the window until the RTT is back under t_high.
    assert!(timely_cwnd < config().credits, "Timely: window {timely_cwnd}");
    assert!(
        timely_rtt <= timely.t_high,
        "Timely: {timely_rtt:?}, AIMD: {aimd_rtt:?}"
    );
}
