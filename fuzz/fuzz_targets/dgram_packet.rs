//! Fuzz target `dgram_packet`: a peer's datagrams through `ferry-dgram`, the decoder alone and
//! an endpoint with a live session.
//!
//! The first byte picks the mode. Even: the rest is one datagram for the checked decoder;
//! whatever decodes re-encodes to the same bytes. Odd: the endpoint accepts a session from a
//! fixed peer (session 7, epoch 9), queues a message of its own to it, and is then fed the
//! rest as datagrams from that peer, each prefixed by a 2-byte big-endian length; bit 1 of
//! the mode byte writes the endpoint's real session id into each datagram's destination field,
//! so mutations reach the session's logic instead of stopping at "unknown session". Time
//! advances 1 ms per datagram and timers run. Nothing may panic.
#![no_main]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferry::transport::Meta;
use ferry_dgram::packet::{Body, Header, Limits, Packet};
use ferry_dgram::{Config, Endpoint, SessionId};
use libfuzzer_sys::fuzz_target;

const PEER_SESSION: SessionId = SessionId(7);
const PEER_EPOCH: u64 = 9;

fn config() -> Config {
    Config {
        max_message_len: 1 << 20,
        ..Config::default()
    }
}

fn canonical(bytes: &[u8], limits: &Limits) {
    let Ok(p) = Packet::decode(bytes, limits) else {
        return;
    };
    let mut again = vec![0; p.header.encoded_len()];
    p.header.encode(&mut again).expect("a decoded header encodes");
    again.extend_from_slice(p.payload);
    assert_eq!(again, bytes, "what decodes re-encodes identically");
}

fn endpoint(mode: u8, input: &[u8]) {
    let peer = SocketAddr::from(([10, 0, 0, 2], 7000));
    let Ok(mut ep) = Endpoint::new(config(), common::pool().clone(), 1) else {
        panic!("the fuzz config is valid")
    };
    let limits = Limits {
        max_datagram: config().mtu,
        max_message_len: config().max_message_len,
    };
    let mut now = Instant::now();
    let connect = Header {
        dst: SessionId::NONE,
        src: PEER_SESSION,
        epoch: PEER_EPOCH,
        body: Body::Connect { seg: 1415 },
    };
    let mut bytes = vec![0; connect.encoded_len()];
    connect.encode(&mut bytes).expect("fits");
    ep.handle_packet(now, peer, &bytes)
        .expect("the Connect is accepted");
    let accept = ep.poll_transmit(now).expect("an Accept");
    let ours = Packet::decode(accept.header(), &limits)
        .expect("our Accept decodes")
        .header
        .src;
    ep.send_copy(ours, Meta::new(1, 1), &[3; 5000])
        .expect("the window is empty");
    let mut rest = input;
    while let [hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (datagram, tail) = tail.split_at(len);
        rest = tail;
        let mut datagram = datagram.to_vec();
        if mode & 2 != 0 && datagram.len() >= 8 {
            datagram[4..8].copy_from_slice(&ours.0.to_be_bytes());
        }
        canonical(&datagram, &limits);
        let _ = ep.handle_packet(now, peer, &datagram);
        now += Duration::from_millis(1);
        ep.handle_timeout(now);
        while let Some(t) = ep.poll_transmit(now) {
            assert!(t.len() <= config().mtu, "a transmit over the MTU");
        }
        while ep.poll_event().is_some() {}
    }
    let stats = ep.stats();
    assert!(stats.drops.total() <= stats.packets_received);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        canonical(
            rest,
            &Limits {
                max_datagram: 1 << 16,
                max_message_len: u32::MAX,
            },
        );
    } else {
        endpoint(mode, rest);
    }
});
