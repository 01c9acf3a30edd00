//! The `ferry_transport::Transport` over UDP, on real loopback sockets: a client connection
//! and an accepted one echo messages of 0 B to 256 KiB (more than a window of them queued at
//! once); a raw peer (a plain socket and a protocol core driven by hand) shows what reaches
//! the listener and what reaches the accepted socket: a Connect sent twice before the accept
//! makes one session, garbage is dropped and counted on either socket, a packet for no
//! session is answered by a Reset, and a server restarted on the port reports itself by a
//! new epoch; a closed connection fails its peer with a typed reset; a silent server fails
//! the handshake with a typed timeout, and a refused Connect with a typed reset; a caller that
//! makes no call outlasts the core's default give-up.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use ferry_dgram::packet::{Body, Header, Limits, Packet, RESET_LEN};
use ferry_dgram::{
    Config, Endpoint, Event, HandshakeTimeout, SessionError, SessionId, UdpConnConfig, UdpConnection,
    UdpListener,
};
use ferry_testkit::{DEADLINE, pool, spawn, wait_until};
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use rustix::event::{PollFd, PollFlags, poll};

fn localhost() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 0).into()
}

/// Waits (bounded) until `fd` is readable.
fn wait_readable(fd: &impl AsFd) {
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let limit = rustix::time::Timespec {
        tv_sec: DEADLINE.as_secs() as i64,
        tv_nsec: 0,
    };
    let n = poll(&mut fds, Some(&limit)).expect("poll");
    assert_eq!(n, 1, "not readable within {DEADLINE:?}");
}

/// Accepts one connection, waiting for it.
fn accept(listener: &UdpListener) -> UdpConnection {
    let pool = pool();
    loop {
        if let Some(conn) = listener.try_accept(&pool).expect("accept") {
            return conn;
        }
        wait_readable(listener);
    }
}

/// The next frame, waiting on the descriptor as an event loop does.
fn next_frame(conn: &mut UdpConnection) -> ferry_dgram::DgramFrame {
    loop {
        if let Some(frame) = conn.try_recv().expect("try_recv") {
            return frame;
        }
        wait_readable(conn);
    }
}

fn message(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 31 + i * 7) as u8).collect()
}

#[test]
fn connections_echo_messages_up_to_256_kib_in_order() {
    let listener = UdpListener::bind(localhost(), UdpConnConfig::default()).expect("bind");
    let addr = listener.local_addr();
    const SIZES: [usize; 9] = [0, 1, 64, 1399, 1400, 4096, 65_536, 100_000, 256 << 10];
    let server = spawn("echo server", move || {
        let mut conn = accept(&listener);
        for _ in 0..SIZES.len() * 2 {
            let frame = next_frame(&mut conn);
            let bytes = frame.bytes().expect("bytes").to_vec();
            conn.send_payload(frame.meta(), Payload::Bytes(&bytes))
                .expect("send");
            conn.flush().expect("flush");
        }
        // Until the client has every answer acknowledged; the connection lives on (dropping
        // it would reset the client's session) until the client has checked its own end.
        wait_until("the answers acknowledged", DEADLINE, || {
            assert!(conn.try_recv().expect("try_recv").is_none(), "nothing more");
            conn.in_flight() == 0
        });
        (listener.stats(), conn)
    });

    let pool = pool();
    let mut client = UdpConnection::connect(addr, &pool, &UdpConnConfig::default()).expect("connect");
    // Twice the sizes at once: more than the window of 8, so some wait in the connection.
    for (i, &len) in SIZES.iter().chain(&SIZES).enumerate() {
        client
            .send_payload(Meta::new(7, i as u64), Payload::Bytes(&message(i, len)))
            .expect("send");
    }
    client.flush().expect("flush");
    let queued: usize = SIZES.iter().sum::<usize>() * 2;
    assert_eq!(client.in_flight(), queued, "every byte held until acknowledged");
    for (i, &len) in SIZES.iter().chain(&SIZES).enumerate() {
        let frame = next_frame(&mut client);
        assert_eq!(frame.meta(), Meta::new(7, i as u64), "in order, once");
        assert_eq!(
            frame.bytes().expect("bytes"),
            &message(i, len)[..],
            "message {i} intact"
        );
    }
    wait_until("the requests acknowledged", DEADLINE, || {
        assert!(client.try_recv().expect("try_recv").is_none(), "nothing more");
        client.in_flight() == 0
    });
    let (listener_stats, conn) = server.join();
    assert!(client.try_recv().expect("try_recv").is_none(), "nothing more");
    assert_eq!(listener_stats.accepted, 1);
    assert_eq!(conn.stats().endpoint.messages_received, SIZES.len() as u64 * 2);
    let stats = client.stats();
    assert_eq!(stats.endpoint.messages_received, SIZES.len() as u64 * 2);
    // The retransmission timer was armed for the requests: its syscalls are counted.
    assert!(stats.wake_calls > 0, "{stats:?}");
    assert_eq!(
        stats.syscalls(),
        stats.send_calls + stats.recv_calls + stats.poll_calls + stats.wake_calls
    );
}

/// A peer driven by hand: a plain socket and a protocol core.
struct RawPeer {
    socket: UdpSocket,
    core: Endpoint,
    session: SessionId,
}

impl RawPeer {
    fn new(seed: u64) -> RawPeer {
        let socket = UdpSocket::bind(localhost()).expect("bind");
        let config = Config {
            max_message_len: 1 << 20,
            ..Config::default()
        };
        let core = Endpoint::new(config, pool(), seed).expect("core");
        RawPeer {
            socket,
            core,
            session: SessionId::NONE,
        }
    }

    /// Sends what the core has to `to`.
    fn transmit(&mut self, to: SocketAddr) {
        while let Some(t) = self.core.poll_transmit(Instant::now()) {
            self.socket
                .send_to(&[t.header(), t.payload()].concat(), to)
                .expect("send_to");
        }
    }

    /// Reads one datagram (waited for) and drops it.
    fn discard(&mut self) {
        self.socket.set_read_timeout(Some(DEADLINE)).expect("timeout");
        self.socket.recv(&mut [0u8; 2048]).expect("a datagram");
    }

    /// Feeds one datagram (waited for) to the core and returns its events.
    fn receive(&mut self) -> Vec<Event> {
        let mut buf = [0u8; 2048];
        self.socket.set_read_timeout(Some(DEADLINE)).expect("timeout");
        let (n, from) = self.socket.recv_from(&mut buf).expect("a datagram");
        let _ = self.core.handle_packet(Instant::now(), from, &buf[..n]);
        std::iter::from_fn(|| self.core.poll_event()).collect()
    }
}

#[test]
fn the_listener_makes_one_session_per_peer_and_drops_what_it_cannot_use() {
    let listener = UdpListener::bind(localhost(), UdpConnConfig::default()).expect("bind");
    let addr = listener.local_addr();
    let mut raw = RawPeer::new(1);
    raw.session = raw.core.connect(addr).expect("connect");
    let connect = raw.core.poll_transmit(Instant::now()).expect("a Connect");
    // The same Connect twice before the server accepts: both reach the listener.
    raw.socket.send_to(connect.header(), addr).expect("send");
    raw.socket.send_to(connect.header(), addr).expect("send");
    wait_readable(&listener);
    let mut conn = listener
        .try_accept(&pool())
        .expect("accept")
        .expect("a connection");
    wait_until("the second Connect read", DEADLINE, || {
        assert!(
            listener.try_accept(&pool()).expect("accept").is_none(),
            "one session per peer"
        );
        listener.stats().from_accepted == 1
    });
    assert_eq!(listener.stats().accepted, 1);
    let events = raw.receive();
    assert!(
        matches!(events[..], [Event::Connected { session, .. }] if session == raw.session),
        "{events:?}"
    );

    // Garbage from the accepted peer's address reaches the accepted socket: dropped, counted.
    raw.socket.send_to(b"garbage", addr).expect("send");
    wait_until("the garbage dropped", DEADLINE, || {
        assert!(conn.try_recv().expect("try_recv").is_none());
        conn.stats().endpoint.drops.malformed == 1
    });
    // Garbage from anyone else reaches the listener: dropped, counted.
    let stranger = UdpSocket::bind(localhost()).expect("bind");
    stranger.send_to(b"garbage", addr).expect("send");
    // A packet for a session the server does not have: answered by a Reset.
    let ack = Header {
        dst: SessionId(5),
        src: SessionId(6),
        epoch: 9,
        body: Body::Ack { cum: 0, sack: 0 },
    };
    let mut bytes = [0u8; 64];
    let n = ack.encode(&mut bytes).expect("encode");
    stranger.send_to(&bytes[..n], addr).expect("send");
    wait_until("both read", DEADLINE, || {
        assert!(listener.try_accept(&pool()).expect("accept").is_none());
        listener.stats().datagrams == 4
    });
    let stats = listener.stats();
    assert_eq!((stats.malformed, stats.resets_sent), (1, 1), "{stats:?}");
    stranger.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let n = stranger.recv(&mut bytes).expect("the Reset");
    assert_eq!(n, RESET_LEN);
    let limits = Limits {
        max_datagram: 1472,
        max_message_len: 1 << 20,
    };
    let reset = Packet::decode(&bytes[..n], &limits).expect("decode").header;
    assert_eq!(
        (reset.dst, reset.src, reset.body),
        (SessionId(6), SessionId(5), Body::Reset)
    );

    // The session serves on.
    raw.core
        .send_copy(raw.session, Meta::new(1, 2), b"after")
        .expect("send");
    raw.transmit(addr);
    let frame = next_frame(&mut conn);
    assert_eq!(
        (frame.meta(), frame.bytes()),
        (Meta::new(1, 2), Some(&b"after"[..]))
    );

    // The server stops, and another starts on the same port: the raw peer's next packet
    // reaches the new listener, whose Reset carries a new epoch: the peer restarted.
    drop(conn);
    drop(listener);
    let events = raw.receive();
    assert!(
        matches!(
            events[..],
            [Event::SessionReset {
                error: SessionError::PeerReset,
                ..
            }]
        ),
        "a closed connection resets its session: {events:?}"
    );
    let mut raw = RawPeer::new(2);
    raw.session = raw.core.connect(addr).expect("connect");
    let listener = UdpListener::bind(addr, UdpConnConfig::default()).expect("bind");
    raw.transmit(addr);
    let conn = accept(&listener);
    assert!(matches!(raw.receive()[..], [Event::Connected { .. }]));
    drop(conn);
    drop(listener);
    // The closing Reset is lost, as if the server's process had died.
    raw.discard();
    let restarted = UdpListener::bind(addr, UdpConnConfig::default()).expect("bind again");
    raw.core
        .send_copy(raw.session, Meta::new(1, 3), b"anyone?")
        .expect("send");
    raw.transmit(addr);
    wait_until("the data answered", DEADLINE, || {
        assert!(restarted.try_accept(&pool()).expect("accept").is_none());
        restarted.stats().resets_sent == 1
    });
    let events = raw.receive();
    assert!(
        matches!(
            events[..],
            [Event::SessionReset {
                error: SessionError::PeerRestarted,
                ..
            }]
        ),
        "{events:?}"
    );
}

#[test]
fn a_closed_connection_fails_its_peer_with_a_typed_reset() {
    let listener = UdpListener::bind(localhost(), UdpConnConfig::default()).expect("bind");
    let addr = listener.local_addr();
    let server = spawn("server", move || accept(&listener));
    let mut client = UdpConnection::connect(addr, &pool(), &UdpConnConfig::default()).expect("connect");
    drop(server.join());
    let e = loop {
        match client.try_recv() {
            Ok(None) => wait_readable(&client),
            Ok(Some(frame)) => panic!("no frame was sent: {frame:?}"),
            Err(e) => break e,
        }
    };
    let TransportError::Io { source, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(source.kind(), ErrorKind::ConnectionReset, "{e}");
    let inner = source.get_ref().and_then(|e| e.downcast_ref::<SessionError>());
    assert_eq!(inner, Some(&SessionError::PeerReset), "{e}");
    assert!(matches!(
        client.send_payload(Meta::new(1, 1), Payload::Bytes(b"x")),
        Err(TransportError::Poisoned)
    ));
}

#[test]
fn a_silent_server_fails_the_handshake_with_a_typed_timeout() {
    // A socket that never answers (bound, so the kernel reports no unreachable port).
    let silent = UdpSocket::bind(localhost()).expect("bind");
    let config = UdpConnConfig {
        handshake_timeout: Duration::from_millis(200),
        ..UdpConnConfig::default()
    };
    let e =
        UdpConnection::connect(silent.local_addr().expect("addr"), &pool(), &config).expect_err("no Accept");
    let TransportError::Io { source, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(source.kind(), ErrorKind::TimedOut, "{e}");
    let timeout = source
        .get_ref()
        .and_then(|e| e.downcast_ref::<HandshakeTimeout>())
        .expect("a HandshakeTimeout");
    assert!(timeout.connects >= 1, "{timeout}");
}

#[test]
fn a_refused_connect_fails_the_handshake_with_a_typed_reset() {
    let listener = UdpListener::bind(localhost(), UdpConnConfig::default()).expect("bind");
    let addr = listener.local_addr();
    let server = spawn("refusing server", move || {
        while !listener.try_refuse().expect("refuse") {
            wait_readable(&listener);
        }
        listener.stats()
    });
    let e = UdpConnection::connect(addr, &pool(), &UdpConnConfig::default()).expect_err("refused");
    let TransportError::Io { source, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(source.kind(), ErrorKind::ConnectionReset, "{e}");
    let inner = source.get_ref().and_then(|e| e.downcast_ref::<SessionError>());
    assert_eq!(inner, Some(&SessionError::PeerReset), "{e}");
    assert_eq!(server.join().refused, 1);
}

#[test]
fn a_caller_may_leave_its_connection_alone_past_the_cores_default_give_up() {
    // The connections' give-up count, on fast timers (the defaults' 1 s cap would make this
    // test take seconds).
    let defaults = UdpConnConfig::default();
    let core_limit = u64::from(Config::default().max_timeouts);
    assert!(u64::from(defaults.udp.endpoint.max_timeouts) > core_limit + 1);
    let mut config = defaults.clone();
    config.udp.endpoint.rto_initial = Duration::from_millis(2);
    config.udp.endpoint.rto_min = Duration::from_millis(2);
    config.udp.endpoint.rto_max = Duration::from_millis(10);
    let listener = UdpListener::bind(localhost(), config.clone()).expect("bind");
    let addr = listener.local_addr();
    let server = spawn("server", move || accept(&listener));
    let mut client = UdpConnection::connect(addr, &pool(), &config).expect("connect");
    let mut conn = server.join();
    conn.send_payload(Meta::new(1, 1), Payload::Bytes(b"while you were out"))
        .expect("send");
    conn.flush().expect("flush");
    // The client makes no call: the server retransmits, past the core's default limit.
    wait_until("timeouts past the core's default limit", DEADLINE, || {
        assert!(conn.try_recv().expect("the session lives on").is_none());
        conn.stats().endpoint.timeouts > core_limit
    });
    let frame = next_frame(&mut client);
    assert_eq!(frame.bytes(), Some(&b"while you were out"[..]));
    wait_until("the message acknowledged", DEADLINE, || {
        assert!(conn.try_recv().expect("the session lives on").is_none());
        conn.in_flight() == 0
    });
}

#[test]
fn a_drain_receives_once_and_later_messages_still_wake_the_descriptor() {
    let listener = UdpListener::bind(localhost(), UdpConnConfig::default()).expect("bind");
    let addr = listener.local_addr();
    let client = spawn("connect", move || {
        UdpConnection::connect(addr, &pool(), &UdpConnConfig::default()).expect("connect")
    });
    let mut server = accept(&listener);
    let mut client = client.join();
    let send = |client: &mut UdpConnection, i: u64| {
        client
            .send_payload(Meta::new(1, i), Payload::Bytes(&[i as u8; 8]))
            .expect("send");
        client.flush().expect("flush");
    };
    for i in 0..3 {
        send(&mut client, i);
    }
    // Each drain (try_recv until None, once the descriptor is readable) makes one recvmmsg:
    // the call that finds no message left does not receive again.
    let mut got = Vec::new();
    while got.len() < 3 {
        wait_readable(&server);
        let before = server.stats().recv_calls;
        while let Some(frame) = server.try_recv().expect("try_recv") {
            got.push(frame.meta().request_id);
        }
        assert_eq!(server.stats().recv_calls - before, 1, "one recvmmsg per drain");
    }
    assert_eq!(got, [0, 1, 2]);
    // What comes after a drain still makes the descriptor readable.
    send(&mut client, 3);
    assert_eq!(next_frame(&mut server).meta().request_id, 3);
}

/// Issue 33: an acknowledgement rides on the data that leaves anyway (as eRPC returns
/// credits on its responses). A served connection answering 16 requests in flight sends no
/// Ack datagram of its own, but to repair a duplicate (a retransmission: none is expected
/// here, on a lossless loopback with the timeout at 1 s). A count, not a timing.
#[test]
fn acknowledgements_ride_on_the_answers_at_16_in_flight() {
    const CALLS: u64 = 2_000;
    const IN_FLIGHT: u64 = 16;
    let mut config = UdpConnConfig::default();
    let core = &mut config.udp.endpoint;
    (core.rto_initial, core.rto_min, core.rto_max) = (
        Duration::from_secs(1),
        Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let listener = UdpListener::bind(localhost(), config.clone()).expect("bind");
    let addr = listener.local_addr();
    let server = spawn("echo server", move || {
        let mut conn = accept(&listener);
        for _ in 0..CALLS {
            // As an event loop: each frame answered as it is taken; the answers leave with
            // the acknowledgements in the `try_recv` that finds no frame left.
            let frame = next_frame(&mut conn);
            let bytes = frame.bytes().expect("bytes").to_vec();
            conn.send_payload(frame.meta(), Payload::Bytes(&bytes))
                .expect("send");
        }
        wait_until("the answers acknowledged", DEADLINE, || {
            assert!(conn.try_recv().expect("try_recv").is_none(), "nothing more");
            conn.in_flight() == 0
        });
        conn
    });

    let pool = pool();
    let mut client = UdpConnection::connect(addr, &pool, &config).expect("connect");
    let (mut sent, mut answered) = (0, 0);
    while answered < CALLS {
        while sent < CALLS && sent - answered < IN_FLIGHT {
            client
                .send_payload(Meta::new(1, sent), Payload::Bytes(&message(sent as usize, 64)))
                .expect("send");
            sent += 1;
        }
        client.flush().expect("flush");
        let frame = next_frame(&mut client);
        assert_eq!(frame.meta(), Meta::new(1, answered), "in order, once");
        answered += 1;
    }
    wait_until("the requests acknowledged", DEADLINE, || {
        assert!(client.try_recv().expect("try_recv").is_none(), "nothing more");
        client.in_flight() == 0
    });
    let conn = server.join();
    let served = conn.stats().endpoint;
    assert_eq!(served.messages_received, CALLS);
    // Every answer carried the acknowledgements due; an Ack alone repairs a duplicate only.
    assert!(
        served.lone_acks <= served.drops.duplicate,
        "served connection: {} lone Acks for {CALLS} calls, {} duplicates received: {served:?}",
        served.lone_acks,
        served.drops.duplicate
    );
}
