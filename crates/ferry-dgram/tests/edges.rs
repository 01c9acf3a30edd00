//! The handshake, restarts and resets, hostile and malformed packets, and the limits at their
//! edges, over the simulated network.

mod common;

use std::time::Duration;

use common::{Faults, Net, addr, messages};
use ferry_dgram::packet::{Body, DataHeader, Header, Limits, Packet};
use ferry_dgram::{
    Config, ConfigError, ConnectError, Dropped, Event, PacketError, SendError, SessionError, SessionId,
};
use ferry_transport::Meta;
use proptest::prelude::*;

fn config() -> Config {
    Config {
        max_message_len: 1 << 20,
        ..Config::default()
    }
}

/// Nodes 0 (client) and 1 (server), connected: (net, client's session, server's session).
fn pair(faults: Faults) -> (Net, SessionId, SessionId) {
    pair_with(config(), faults)
}

fn pair_with(config: Config, faults: Faults) -> (Net, SessionId, SessionId) {
    let mut net = Net::new(3, faults);
    net.add(config.clone(), 10);
    net.add(config, 20);
    let sa = net.nodes[0].ep.connect(addr(1)).unwrap();
    net.run_until("handshake", 10_000, |n| {
        n.nodes
            .iter()
            .all(|n| n.events.iter().any(|e| matches!(e, Event::Connected { .. })))
    });
    let sb = match net.nodes[1].events.pop() {
        Some(Event::Connected { session, peer }) => {
            assert_eq!(peer, addr(0));
            session
        }
        other => panic!("expected Connected, got {other:?}"),
    };
    net.nodes[0].events.clear();
    (net, sa, sb)
}

#[test]
fn handshake_then_messages_both_ways() {
    let (mut net, sa, sb) = pair(Faults::default());
    let (ea, eb) = (net.nodes[0].ep.epoch(), net.nodes[1].ep.epoch());
    assert_ne!(ea, eb, "epochs come from the seeds");
    net.nodes[0].ep.send_copy(sa, Meta::new(1, 2), b"ping").unwrap();
    net.nodes[1].ep.send_copy(sb, Meta::new(3, 4), b"").unwrap();
    net.run_until("delivery", 10_000, |n| {
        !messages(&n.nodes[0].events).is_empty() && !messages(&n.nodes[1].events).is_empty()
    });
    assert_eq!(
        messages(&net.nodes[1].events),
        [(Meta::new(1, 2), b"ping".to_vec())]
    );
    assert_eq!(messages(&net.nodes[0].events), [(Meta::new(3, 4), vec![])]);
}

/// A server that will not take a session answers the Connect with a Reset (a `UdpListener`
/// over its connection limit): the session ends with `PeerReset`, its queued message failed.
/// The same Reset from another address is forged.
#[test]
fn a_reset_answering_the_connect_refuses_the_session() {
    let mut client = ferry_dgram::Endpoint::new(config(), ferry_testkit::pool(), 1).unwrap();
    let session = client.connect(addr(1)).unwrap();
    client.send_copy(session, Meta::new(1, 2), b"early").unwrap();
    let reset = Header {
        dst: session,
        src: SessionId(9),
        epoch: 7,
        body: Body::Reset,
    };
    let mut bytes = vec![0; reset.encoded_len()];
    reset.encode(&mut bytes).unwrap();
    let now = std::time::Instant::now();
    assert_eq!(client.handle_packet(now, addr(2), &bytes), Err(Dropped::Forged));
    assert!(client.poll_event().is_none());
    assert_eq!(client.handle_packet(now, addr(1), &bytes), Ok(()));
    match client.poll_event() {
        Some(Event::SessionReset {
            session: s,
            error,
            failed,
        }) => {
            assert_eq!(
                (s, error, failed),
                (session, SessionError::PeerReset, vec![Meta::new(1, 2)])
            );
        }
        other => panic!("expected SessionReset, got {other:?}"),
    }
    assert!(client.session_stats(session).is_none());
}

#[test]
fn messages_sent_before_the_accept_leave_after_it() {
    let mut net = Net::new(4, Faults::default());
    net.add(config(), 1);
    net.add(config(), 2);
    let s = net.nodes[0].ep.connect(addr(1)).unwrap();
    assert_eq!(
        net.nodes[0].ep.session_stats(s).map(|st| st.connected),
        Some(false)
    );
    net.nodes[0].ep.send_copy(s, Meta::new(9, 9), &[7; 5000]).unwrap();
    net.run_until("delivery", 10_000, |n| !messages(&n.nodes[1].events).is_empty());
    assert_eq!(messages(&net.nodes[1].events), [(Meta::new(9, 9), vec![7; 5000])]);
}

#[test]
fn a_lost_connect_is_sent_again() {
    let mut net = Net::new(5, Faults::default());
    net.add(config(), 1);
    net.add(config(), 2);
    net.nodes[0].ep.connect(addr(1)).unwrap();
    let lost = net.nodes[0].ep.poll_transmit(net.now).expect("the Connect");
    assert!(net.nodes[0].ep.poll_transmit(net.now).is_none());
    drop(lost);
    net.run_until("handshake", 10_000, |n| {
        n.nodes[0]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    assert_eq!(net.nodes[0].ep.stats().timeouts, 1);
}

#[test]
fn an_absent_peer_is_given_up_and_pending_messages_fail() {
    let mut net = Net::new(6, Faults::default());
    net.add(
        Config {
            max_timeouts: 3,
            ..config()
        },
        1,
    );
    let s = net.nodes[0].ep.connect(addr(5)).unwrap();
    net.nodes[0].ep.send_copy(s, Meta::new(1, 41), b"a").unwrap();
    net.nodes[0].ep.send_copy(s, Meta::new(1, 42), b"b").unwrap();
    net.run_until("give up", 10_000, |n| !n.nodes[0].events.is_empty());
    match &net.nodes[0].events[..] {
        [
            Event::SessionClosed {
                session,
                error,
                failed,
            },
        ] => {
            assert_eq!((*session, *error), (s, SessionError::Unresponsive));
            assert_eq!(failed, &[Meta::new(1, 41), Meta::new(1, 42)]);
        }
        other => panic!("expected SessionClosed, got {other:?}"),
    }
    assert_eq!(net.nodes[0].ep.stats().timeouts, 4);
    assert_eq!(
        net.nodes[0].ep.send_copy(s, Meta::default(), b""),
        Err(SendError::UnknownSession(s))
    );
}

#[test]
fn a_restarted_client_resets_the_servers_session() {
    let (mut net, _, sb) = pair(Faults::default());
    // The server has a message in flight when the client restarts.
    net.nodes[1]
        .ep
        .send_copy(sb, Meta::new(5, 55), b"lost with the session")
        .unwrap();
    net.restart(0, config(), 11);
    let new = net.nodes[0].ep.connect(addr(1)).unwrap();
    net.run_until("reconnect", 10_000, |n| {
        n.nodes[0]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    let events = &net.nodes[1].events;
    assert!(
        matches!(&events[0], Event::SessionReset { session, error: SessionError::PeerRestarted, failed }
            if *session == sb && failed == &[Meta::new(5, 55)]),
        "{events:?}"
    );
    assert!(
        matches!(&events[1], Event::Connected { session, .. } if *session != sb),
        "{events:?}"
    );
    // The old incarnation's packets (the server's message) were answered by Resets.
    assert!(net.nodes[0].ep.stats().drops.unknown_session >= 1);
    net.nodes[0].ep.send_copy(new, Meta::new(1, 1), b"again").unwrap();
    net.run_until("delivery", 10_000, |n| !messages(&n.nodes[1].events).is_empty());
}

#[test]
fn a_restarted_server_is_seen_through_its_reset() {
    let (mut net, sa, _) = pair(Faults::default());
    net.restart(1, config(), 21);
    net.nodes[0]
        .ep
        .send_copy(sa, Meta::new(2, 22), b"to the old server")
        .unwrap();
    net.run_until("reset", 10_000, |n| !n.nodes[0].events.is_empty());
    match &net.nodes[0].events[..] {
        [
            Event::SessionReset {
                session,
                error,
                failed,
            },
        ] => {
            assert_eq!((*session, *error), (sa, SessionError::PeerRestarted));
            assert_eq!(failed, &[Meta::new(2, 22)]);
        }
        other => panic!("expected SessionReset, got {other:?}"),
    }
    assert_eq!(net.nodes[1].ep.stats().drops.unknown_session, 1);
}

/// A one-byte message's only packet, from session `from_session` to `to`.
fn data_packet(from_session: SessionId, to: SessionId, epoch: u64, pkt: u64) -> Vec<u8> {
    let h = Header {
        dst: to,
        src: from_session,
        epoch,
        body: Body::Data(DataHeader {
            seq: 0,
            pkt,
            index: 0,
            count: 1,
            msg_len: 1,
            payload_len: 1,
            cum: 0,
            sack: 0,
            meta: Some(Meta::default()),
        }),
    };
    let mut b = vec![0; h.encoded_len()];
    h.encode(&mut b).unwrap();
    b.push(b'x');
    b
}

#[test]
fn forged_unknown_and_garbage_packets_are_dropped_and_counted() {
    let (mut net, sa, sb) = pair(Faults::default());
    let now = net.now;
    let epoch = net.nodes[0].ep.epoch();
    let server = &mut net.nodes[1].ep;
    let before = server.stats().drops;
    let mut try_packet = |from, bytes: &[u8]| server.handle_packet(now, from, bytes);
    // Right session, wrong address; wrong sender session; wrong epoch.
    assert_eq!(
        try_packet(addr(7), &data_packet(sa, sb, epoch, 0)),
        Err(Dropped::Forged)
    );
    assert_eq!(
        try_packet(addr(0), &data_packet(SessionId(sa.0 ^ 1), sb, epoch, 0)),
        Err(Dropped::Forged)
    );
    assert_eq!(
        try_packet(addr(0), &data_packet(sa, sb, epoch ^ 1, 0)),
        Err(Dropped::Forged)
    );
    // Beyond the credits.
    assert_eq!(
        try_packet(addr(0), &data_packet(sa, sb, epoch, 32)),
        Err(Dropped::OutOfWindow)
    );
    // An unknown session.
    let unknown = SessionId(sb.0 ^ 1);
    assert_eq!(
        try_packet(addr(0), &data_packet(sa, unknown, epoch, 0)),
        Err(Dropped::UnknownSession)
    );
    // Garbage, and a datagram over the MTU.
    assert!(matches!(
        try_packet(addr(0), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        Err(Dropped::Malformed(PacketError::BadMagic { .. }))
    ));
    assert_eq!(
        try_packet(addr(0), &[0; 1473]),
        Err(Dropped::Malformed(PacketError::TooLong { len: 1473, max: 1472 }))
    );
    let d = server.stats().drops;
    assert_eq!(
        (
            d.forged - before.forged,
            d.out_of_window,
            d.unknown_session,
            d.malformed
        ),
        (3, 1, 1, 2)
    );
    // The session still works, and the unknown session's sender got a Reset.
    let reset = server.poll_transmit(now).expect("a Reset");
    let p = Packet::decode(
        reset.header(),
        &Limits {
            max_datagram: 1472,
            max_message_len: 0,
        },
    )
    .unwrap();
    assert_eq!(
        (p.header.dst, p.header.src, p.header.body),
        (sa, unknown, Body::Reset)
    );
    net.nodes[0]
        .ep
        .send_copy(sa, Meta::new(1, 1), b"still here")
        .unwrap();
    net.run_until("delivery", 10_000, |n| !messages(&n.nodes[1].events).is_empty());
}

#[test]
fn a_flood_for_unknown_sessions_gets_at_most_the_reset_limit_answered() {
    let mut net = Net::new(8, Faults::default());
    net.add(
        Config {
            max_pending_resets: 4,
            ..config()
        },
        1,
    );
    let now = net.now;
    for i in 0..100u32 {
        let p = data_packet(SessionId(i + 1), SessionId(1000 + i), 1, 0);
        assert_eq!(
            net.nodes[0].ep.handle_packet(now, addr(9), &p),
            Err(Dropped::UnknownSession)
        );
    }
    let mut resets = 0;
    while net.nodes[0].ep.poll_transmit(now).is_some() {
        resets += 1;
    }
    let stats = net.nodes[0].ep.stats();
    assert_eq!(
        (resets, stats.drops.resets_suppressed, stats.drops.unknown_session),
        (4, 96, 100)
    );
}

#[test]
fn limits_at_their_edges() {
    let (mut net, sa, _) = pair(Faults::default());
    let max = config().max_message_len as usize;
    let ep = &mut net.nodes[0].ep;
    assert_eq!(
        ep.send_copy(sa, Meta::default(), &vec![0; max + 1]),
        Err(SendError::TooLong {
            len: max + 1,
            max: max as u32
        })
    );
    ep.send_copy(sa, Meta::new(0, 0), &vec![1; max]).unwrap();
    for i in 1..8 {
        ep.send_copy(sa, Meta::new(0, i), &[i as u8; 3]).unwrap();
    }
    assert_eq!(
        ep.send_copy(sa, Meta::default(), b""),
        Err(SendError::WindowFull { window: 8 })
    );
    net.run_until("delivery", 100_000, |n| messages(&n.nodes[1].events).len() == 8);
    let got = messages(&net.nodes[1].events);
    assert_eq!(got[0].1.len(), max);
    assert!(got[0].1.iter().all(|&b| b == 1));
    // Window free again once acknowledged.
    net.run_until("acknowledged", 10_000, |n| {
        n.nodes[0].ep.session_stats(sa).unwrap().messages_in_flight == 0
    });
    net.nodes[0].ep.send_copy(sa, Meta::default(), b"").unwrap();
}

#[test]
fn session_limits() {
    let mut net = Net::new(9, Faults::default());
    let one = Config {
        max_sessions: 1,
        ..config()
    };
    net.add(one.clone(), 1);
    net.add(one, 2);
    net.add(config(), 3);
    let first = net.nodes[0].ep.connect(addr(1)).unwrap();
    assert_eq!(
        net.nodes[0].ep.connect(addr(1)),
        Err(ConnectError::SessionLimit(1))
    );
    net.nodes[2].ep.connect(addr(1)).unwrap();
    net.run_until("one accepted", 10_000, |n| {
        n.nodes[1].ep.stats().drops.session_limit >= 1
            && n.nodes[0]
                .events
                .iter()
                .any(|e| matches!(e, Event::Connected { session, .. } if *session == first))
    });
}

#[test]
fn config_is_validated() {
    let pool = ferry_testkit::pool();
    let bad = |c: Config| ferry_dgram::Endpoint::new(c, pool.clone(), 0).err();
    assert!(bad(config()).is_none());
    assert!(bad(Config { mtu: 57, ..config() }).is_some());
    assert!(
        bad(Config {
            credits: 65,
            ..config()
        })
        .is_some()
    );
    assert!(
        bad(Config {
            credits: 0,
            ..config()
        })
        .is_some()
    );
    assert!(
        bad(Config {
            window: 0,
            ..config()
        })
        .is_some()
    );
    assert!(
        bad(Config {
            rto_min: Duration::ZERO,
            ..config()
        })
        .is_some()
    );
    assert_eq!(
        bad(Config {
            max_message_len: 2 << 20,
            ..config()
        }),
        Some(ConfigError("max_message_len exceeds the pool's largest buffer"))
    );
    // 65535 packets of 1 byte cannot carry 1 MiB.
    assert!(bad(Config { mtu: 58, ..config() }).is_some());
}

#[test]
fn a_data_payload_is_a_slice_of_the_senders_buffer() {
    let (mut net, sa, _) = pair(Faults::default());
    let pool = ferry_testkit::pool();
    let buf = pool.copy_from(&[5; 3000]).unwrap();
    net.nodes[0].ep.send(sa, Meta::default(), buf.clone()).unwrap();
    let range = buf.as_ptr_range();
    let mut payloads = 0;
    while let Some(t) = net.nodes[0].ep.poll_transmit(net.now) {
        if !t.payload().is_empty() {
            assert!(
                range.contains(&t.payload().as_ptr()),
                "gathered from the message's buffer"
            );
            payloads += t.payload().len();
        }
    }
    assert_eq!(payloads, 3000);
}

proptest! {
    /// A connected peer that sends anything: mutated data and acknowledgements for the real
    /// session, and random bytes. Nothing panics and every packet is either used or counted.
    #[test]
    fn a_hostile_peer_cannot_panic_the_endpoint(
        inputs in proptest::collection::vec((any::<u8>(), any::<u64>(), any::<u32>(), proptest::collection::vec(any::<u8>(), 0..80)), 1..60),
    ) {
        let (mut net, sa, sb) = pair(Faults::default());
        net.nodes[1].ep.send_copy(sb, Meta::default(), &[1; 10_000]).unwrap();
        while net.nodes[1].ep.poll_transmit(net.now).is_some() {}
        let epoch = net.nodes[0].ep.epoch();
        let now = net.now;
        let server = &mut net.nodes[1].ep;
        let before = server.stats();
        let mut used = 0;
        for (kind, a, b, bytes) in &inputs {
            let body = match kind % 4 {
                0 => Body::Ack { cum: *a, sack: u64::from(*b) },
                1 => Body::Ack { cum: a % 16, sack: u64::from(*b) },
                2 => Body::Data(DataHeader {
                    seq: a % 10,
                    pkt: a % 40 + 1,
                    index: 1,
                    count: (b % 8) as u16 + 2,
                    msg_len: b % 20_000 + bytes.len() as u32,
                    payload_len: bytes.len() as u16,
                    cum: a % 16,
                    sack: u64::from(*b) >> (a % 32),
                    meta: None,
                }),
                _ => Body::Reset,
            };
            let h = Header { dst: sb, src: sa, epoch, body };
            let mut p = vec![0; h.encoded_len()];
            h.encode(&mut p).unwrap();
            p.extend_from_slice(if matches!(body, Body::Data(_)) { bytes } else { &[] });
            if kind & 0x80 != 0 {
                p = bytes.clone();
            }
            if server.handle_packet(now, addr(0), &p).is_ok() {
                used += 1;
            }
            server.handle_timeout(now + Duration::from_millis(u64::from(*kind)));
            while server.poll_transmit(now).is_some() {}
            while server.poll_event().is_some() {}
        }
        let after = server.stats();
        prop_assert_eq!(after.packets_received - before.packets_received, inputs.len() as u64);
        prop_assert_eq!(after.drops.total() - before.drops.total() + used, inputs.len() as u64);
    }
}

/// An Ack from the peer, as bytes.
fn ack(from: SessionId, to: SessionId, epoch: u64, cum: u64, sack: u64) -> Vec<u8> {
    let h = Header {
        dst: to,
        src: from,
        epoch,
        body: Body::Ack { cum, sack },
    };
    let mut b = vec![0; h.encoded_len()];
    h.encode(&mut b).unwrap();
    b
}

/// Regression (found by `heavy_loss_reorder_and_duplication`): a reordered, stale Ack whose
/// bitmap lies far below the packets in flight shifted a 32-bit mask by 32 or more.
#[test]
fn a_stale_ack_far_below_the_packets_in_flight() {
    let (mut net, sa, sb) = pair(Faults::default());
    net.nodes[0]
        .ep
        .send_copy(sa, Meta::new(0, 0), &[1; 40 * 1399])
        .unwrap();
    net.run_until("acknowledged", 10_000, |n| {
        n.nodes[0].ep.session_stats(sa).unwrap().messages_in_flight == 0
    });
    // Packets 40..72 in flight, none delivered.
    net.nodes[0]
        .ep
        .send_copy(sa, Meta::new(0, 1), &[2; 40 * 1399])
        .unwrap();
    while net.nodes[0].ep.poll_transmit(net.now).is_some() {}
    assert_eq!(net.nodes[0].ep.session_stats(sa).unwrap().unacked, 32);
    let epoch = net.nodes[1].ep.epoch();
    let stale = ack(sb, sa, epoch, 0, 1);
    assert_eq!(
        net.nodes[0].ep.handle_packet(net.now, addr(1), &stale),
        Err(Dropped::Duplicate)
    );
}

/// Regression: an Ack's cumulative number near `u64::MAX` overflowed the check of its bitmap.
#[test]
fn an_ack_beyond_every_packet_number() {
    let (mut net, sa, sb) = pair(Faults::default());
    let epoch = net.nodes[1].ep.epoch();
    for (cum, sack) in [(u64::MAX, u64::MAX), (u64::MAX - 3, 1), (1, 0), (0, 1)] {
        let bytes = ack(sb, sa, epoch, cum, sack);
        assert_eq!(
            net.nodes[0].ep.handle_packet(net.now, addr(1), &bytes),
            Err(Dropped::OutOfWindow),
            "cum {cum} sack {sack:#x}"
        );
    }
}

#[test]
fn many_sessions_share_a_server_each_in_order() {
    let mut net = Net::new(
        12,
        Faults {
            loss: 10,
            dup: 5,
            jitter: Duration::from_millis(1),
            ..Faults::default()
        },
    );
    net.add(config(), 100);
    for seed in 1..=3 {
        net.add(config(), seed);
    }
    // Node 1 opens two sessions: the same peer and epoch, so neither resets the other.
    let mut sessions = Vec::new();
    for node in [1, 1, 2, 3] {
        sessions.push((node, net.nodes[node].ep.connect(addr(0)).unwrap()));
    }
    let mut sent = vec![0u64; sessions.len()];
    let per_session = 20;
    for _ in 0..100_000 {
        for (k, &(node, s)) in sessions.iter().enumerate() {
            while sent[k] < per_session {
                let meta = Meta::new(k as u16, sent[k]);
                match net.nodes[node].ep.send_copy(s, meta, &[k as u8; 3000]) {
                    Ok(()) => sent[k] += 1,
                    Err(SendError::WindowFull { .. }) => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        if messages(&net.nodes[0].events).len() == sessions.len() * per_session as usize {
            break;
        }
        assert!(net.step(), "the network went quiet first");
    }
    let got = messages(&net.nodes[0].events);
    assert_eq!(got.len(), sessions.len() * per_session as usize);
    for k in 0..sessions.len() {
        let ids: Vec<u64> = got
            .iter()
            .filter(|(m, _)| m.kind == k as u16)
            .map(|(m, _)| m.request_id)
            .collect();
        assert_eq!(
            ids,
            (0..per_session).collect::<Vec<_>>(),
            "session {k} in order, each once"
        );
    }
    assert!(got.iter().all(|(m, d)| d == &vec![m.kind as u8; 3000]));
    let connected = net.nodes[0]
        .events
        .iter()
        .filter(|e| matches!(e, Event::Connected { .. }))
        .count();
    assert_eq!(connected, 4);
    assert!(
        !net.nodes[0]
            .events
            .iter()
            .any(|e| matches!(e, Event::SessionReset { .. }))
    );
}

/// AIMD: loss halves the congestion window; a clean network grows it back, one packet per
/// window of acknowledgements, up to the credits.
#[test]
fn the_congestion_window_halves_on_loss_and_grows_back() {
    let (mut net, sa, _) = pair(Faults {
        loss: 20,
        ..Faults::default()
    });
    net.nodes[0]
        .ep
        .send_copy(sa, Meta::new(0, 0), &[0; 200 * 1399])
        .unwrap();
    let mut lowest = u32::MAX;
    net.run_until("delivered under loss", 1_000_000, |n| {
        lowest = lowest.min(n.nodes[0].ep.session_stats(sa).unwrap().cwnd);
        n.nodes[0].ep.session_stats(sa).unwrap().messages_in_flight == 0
    });
    assert!(lowest <= 16, "a loss halves the window from 32: lowest {lowest}");
    net.faults = Faults::default();
    let mut i = 1;
    net.run_until("grown back", 1_000_000, |n| {
        let st = n.nodes[0].ep.session_stats(sa).unwrap();
        if st.messages_in_flight == 0 {
            n.nodes[0]
                .ep
                .send_copy(sa, Meta::new(0, i), &[0; 64 * 1399])
                .unwrap();
            i += 1;
        }
        st.cwnd == 32
    });
}

#[test]
fn a_closed_session_is_reset_at_the_peer() {
    let (mut net, sa, sb) = pair(Faults::default());
    net.nodes[0]
        .ep
        .send_copy(sa, Meta::new(1, 7), b"unacknowledged")
        .unwrap();
    assert_eq!(net.nodes[0].ep.close(sa), Ok(vec![Meta::new(1, 7)]));
    assert_eq!(net.nodes[0].ep.close(sa), Err(SendError::UnknownSession(sa)));
    net.run_until("reset", 10_000, |n| !n.nodes[1].events.is_empty());
    match &net.nodes[1].events[..] {
        [
            Event::SessionReset {
                session,
                error,
                failed,
            },
        ] => {
            assert_eq!((*session, *error, failed.len()), (sb, SessionError::PeerReset, 0));
        }
        other => panic!("expected SessionReset, got {other:?}"),
    }
    assert!(net.nodes[1].ep.session_stats(sb).is_none());
}

/// Issue 33, in the simulation: an acknowledgement rides on the data that leaves anyway. A
/// server answering 16 requests in flight as they come sends no Ack of its own; the client's
/// next requests carry its acknowledgements, so it sends Acks alone only for the last
/// answers, when no request is left to send.
#[test]
fn acknowledgements_ride_on_data_packets() {
    const CALLS: u64 = 400;
    const IN_FLIGHT: u64 = 16;
    let (mut net, sa, sb) = pair_with(
        Config {
            window: 16,
            ..config()
        },
        Faults::default(),
    );
    let (client_before, server_before) = (net.nodes[0].ep.stats(), net.nodes[1].ep.stats());
    let (mut sent, mut answered) = (0, 0);
    net.run_until("every call answered", 100_000, |n| {
        let server = &mut n.nodes[1];
        for e in server.events.drain(..) {
            if let Event::Message { meta, data, .. } = e {
                server.ep.send_copy(sb, meta, &data).unwrap();
            }
        }
        let client = &mut n.nodes[0];
        for e in client.events.drain(..) {
            if let Event::Message { meta, .. } = e {
                assert_eq!(meta, Meta::new(0, answered), "in order, once");
                answered += 1;
            }
        }
        while sent < CALLS && sent - answered < IN_FLIGHT {
            client.ep.send_copy(sa, Meta::new(0, sent), &[7; 64]).unwrap();
            sent += 1;
        }
        answered == CALLS
    });
    net.run_until("the last answers acknowledged", 10_000, |n| {
        n.nodes[1].ep.session_stats(sb).unwrap().unacked == 0
    });
    let (client, server) = (net.nodes[0].ep.stats(), net.nodes[1].ep.stats());
    assert_eq!(server.lone_acks - server_before.lone_acks, 0, "{server:?}");
    assert_eq!(
        server.packets_sent - server_before.packets_sent,
        CALLS,
        "one packet per answer"
    );
    let client_lone = client.lone_acks - client_before.lone_acks;
    assert!(
        (1..=IN_FLIGHT).contains(&client_lone),
        "client: {client_lone} lone Acks"
    );
    assert_eq!(
        client.packets_sent - client_before.packets_sent,
        CALLS + client_lone,
        "one packet per request, and the last Acks"
    );
}
