//! ferry-rpc over `xdp://` (`ferry-dgram`'s sessions on AF_XDP sockets) between two network
//! namespaces joined by veth (`ferry_testkit::netns::VethPair`), native XDP on both ends
//! (copy mode: veth has no zero-copy): the event-loop server on a thread inside namespace
//! `b`, the blocking and tokio clients on threads inside namespace `a`, with the service every
//! driver test serves.
//!
//! - Ferry messages and raw payloads of 0 B to 64 KiB, each answered once and intact; then 16
//!   calls in flight on one tokio channel, each with its own answer.
//! - The same through a bridge dropping 5 % of the packets (nftables, counted): every call
//!   handled exactly once (the handler counts), retransmissions seen.
//! - The tokio server (`AsyncServer`) over `xdp://` too: 16 calls in flight, every size.
//! - A bare `XdpConnection` (ferry-dgram's transport, no channel) makes a raw call with the
//!   blocking `recv` and reports its endpoint's counters: copy mode, native XDP, the UMEM.
//! - A client whose peer has no MAC (nobody at the address) or no server fails with a typed
//!   `TimedOut` (`NoNeighbour`, `HandshakeTimeout`).
//! - Garbage and a forged packet for no session sent to the server's port from a kernel
//!   socket: dropped and counted by the server's endpoint, the forged one answered by a Reset,
//!   and the service serves on.
//! - A `Server`'s /metrics shows its AF_XDP listener's endpoint: packets, syscalls, UMEM.
//!
//! Without root, namespaces, nftables or AF_XDP each test prints SKIPPED (and fails with
//! `FERRY_REQUIRE_KERNEL_FEATURES` set). Every wait is bounded: calls by the channel's deadline,
//! the rest by `DEADLINE`.

mod common;
mod tokio_support;

use std::net::UdpSocket;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use common::*;
use ferry_dgram::XdpStats;
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{Addr, ChannelConfig, EventLoop, Listener, LoopConfig, Services};
use ferry_testkit::DEADLINE;
use ferry_testkit::netns::VethPair;
use ferry_testkit::tools::skip;
use ferry_transport::{Payload, Received};
use ferry_wire::sample::Record;

/// Around the datagram segment (1399 bytes at MTU 1500) up to 64 KiB.
const SIZES: [usize; 8] = [0, 1, 64, 1399, 1400, 4096, 30_000, 65_536];
const PORT: u16 = 7700;

/// The two namespaces, or why they cannot be made (the test then skips).
fn pair(test: &str, tag: &str, loss: Option<u8>) -> Option<VethPair> {
    match VethPair::new(tag, loss, 1500) {
        Ok(net) => Some(net),
        Err(e) => {
            skip(test, &format!("no network namespaces or nftables: {e}"));
            None
        }
    }
}

/// The server's address through interface `ifname`: for the server its own (`b`'s), for the
/// client `a`'s, through which it reaches the server.
fn server_addr(ifname: &str) -> String {
    format!("xdp://{ifname}/0@{}:{PORT}", VethPair::B_IP)
}

/// What the client side saw of the server: its listener (to read its endpoint's counters).
type Serving = Arc<Listener>;

/// Runs `service` on two event loops inside namespace `b` at [`server_addr`] while `client`
/// runs on a thread inside namespace `a` (given the address to call); returns the server endpoint's counters at the end.
/// `None` if AF_XDP cannot be bound here (the test has skipped).
fn with_server(
    test: &str,
    net: &VethPair,
    service: &TestService,
    client: impl FnOnce(&str, &Serving) + Send,
) -> Option<XdpStats> {
    let (addr, client_addr) = (server_addr(&net.b_if), server_addr(&net.a_if));
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop, addr) = (&stop, &addr);
        let server = scope.spawn(move || {
            net.b.enter().expect("enter namespace b");
            let services = Services::builder()
                .service(service.clone())
                .expect("add")
                .workers(2)
                .build()
                .expect("services");
            let config = LoopConfig::default();
            let listener = match Listener::bind(&addr.parse::<Addr>().expect("address"), &config.conn) {
                Ok(l) => Arc::new(l),
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return None;
                }
            };
            // Two loops share the listener, as a `Server`'s do: a session's messages may be
            // filed by the other loop's thread.
            let deadline = Instant::now() + 4 * DEADLINE;
            let run = |config: LoopConfig, services: Services| {
                let mut lp = EventLoop::with_services(config, services).expect("loop");
                lp.add_listener(Arc::clone(&listener)).expect("listen");
                lp.run_until(|_| stop.load(Ordering::Relaxed) || Instant::now() > deadline);
            };
            ready_tx.send(Ok(Arc::clone(&listener))).expect("ready");
            std::thread::scope(|loops| {
                let second = (config.clone(), services.clone());
                loops.spawn(|| run(second.0, second.1));
                run(config, services);
            });
            match &*listener {
                Listener::Xdp(l) => Some(l.stats()),
                other => panic!("not an AF_XDP listener: {other:?}"),
            }
        });
        let listener = match ready_rx.recv_timeout(DEADLINE).expect("the server starts") {
            Ok(l) => l,
            Err(e) => {
                skip(test, &format!("no AF_XDP: {e}"));
                return server.join().expect("server");
            }
        };
        let client = scope.spawn(move || {
            net.a.enter().expect("enter namespace a");
            client(&client_addr, &listener);
        });
        let result = client.join();
        stop.store(true, Ordering::Relaxed);
        let stats = server.join().expect("the server");
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
        stats
    })
}

/// Runs `f` to its end on a current-thread runtime, tasks spawned locally.
fn on_tokio<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    tokio::task::LocalSet::new().block_on(&rt, f)
}

/// Every size as a Ferry message (echoed by reference) and as a raw payload, on a blocking
/// channel; then 16 raw calls in flight on a tokio channel, four rounds. Returns the raw
/// calls made.
fn calls(addr: &str) -> usize {
    let mut raw = 0;
    {
        let ch = channel(addr);
        for (i, &len) in SIZES.iter().enumerate() {
            let key = format!("k{i}");
            let req = record(ch.context(), key.as_bytes(), &[len, 3]);
            let resp = ch.call::<Record<'static>>(ECHO, &req).expect("echo");
            check_record(&resp.view().expect("view"), key.as_bytes(), &[len, 3]);
            let bytes = payload(i, len);
            let answer = ch.call_payload(RAW, Payload::Bytes(&bytes)).expect("raw");
            assert_eq!(answer.frame().bytes(), Some(&bytes[..]), "raw call {i}");
            raw += 1;
        }
    }
    // The blocking channel is gone, and its hub with it: the tokio channel binds a new one.
    let addr = addr.to_owned();
    raw + on_tokio(async move {
        let mut config = ChannelConfig {
            timeout: Some(DEADLINE),
            ..ChannelConfig::default()
        };
        config.client.window = 16;
        let chan = Rc::new(AsyncChannel::connect_with(&addr, config).await.expect("connect"));
        sixteen_in_flight(chan, RAW, 4, &SIZES).await
    })
}

#[test]
fn a_service_answers_0_to_64_kib_and_16_in_flight_over_xdp() {
    const TEST: &str = "a_service_answers_0_to_64_kib_and_16_in_flight_over_xdp";
    let Some(net) = pair(TEST, "xr", None) else { return };
    let service = TestService::default();
    let made = std::sync::atomic::AtomicUsize::new(0);
    let Some(stats) = with_server(TEST, &net, &service, |addr, _| {
        made.store(calls(addr), Ordering::SeqCst);
    }) else {
        return;
    };
    // Each raw request reached the handler once, as the pool buffer it was reassembled in.
    let made = made.load(Ordering::SeqCst);
    assert_eq!(made, SIZES.len() + 64);
    assert_eq!(service.seen.raw_shared.load(Ordering::SeqCst), made);
    assert_eq!(service.seen.raw_not_shared.load(Ordering::SeqCst), 0);
    assert!(stats.native, "native XDP on veth: {stats:?}");
    assert!(stats.packets_received > 0 && stats.packets_sent > 0, "{stats:?}");
    assert_eq!(stats.endpoint.drops.malformed, 0, "{stats:?}");
}

#[test]
fn every_call_is_answered_exactly_once_under_5_percent_loss() {
    const TEST: &str = "every_call_is_answered_exactly_once_under_5_percent_loss";
    let Some(net) = pair(TEST, "xl", Some(5)) else {
        return;
    };
    let service = TestService::default();
    let made = std::sync::atomic::AtomicUsize::new(0);
    let Some(stats) = with_server(TEST, &net, &service, |addr, _| {
        made.store(calls(addr), Ordering::SeqCst);
    }) else {
        return;
    };
    // Exactly once: the handler ran once per call, retransmissions and all.
    assert_eq!(
        service.seen.raw_shared.load(Ordering::SeqCst),
        made.load(Ordering::SeqCst)
    );
    // And the loss was real, and repaired.
    let dropped = net.dropped().expect("the bridge's counter");
    assert!(dropped > 0, "the bridge dropped nothing");
    assert!(stats.endpoint.retransmits > 0, "no retransmission: {stats:?}");
}

#[test]
fn the_tokio_server_answers_16_in_flight_over_xdp() {
    const TEST: &str = "the_tokio_server_answers_16_in_flight_over_xdp";
    let Some(net) = pair(TEST, "xt", None) else { return };
    let server = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                net.b.enter().expect("enter namespace b");
                let addr = server_addr(&net.b_if);
                // The server's thread, spawned here, lives in namespace b too.
                let config = ferry_rpc::ConnConfig::default();
                // A probe, dropped before the server binds (which retries the queue until
                // the kernel has released it).
                let probe = Listener::bind(&addr.parse::<Addr>().expect("address"), &config);
                if let Err(e) = probe {
                    skip(TEST, &format!("no AF_XDP: {e}"));
                    return None;
                }
                drop(probe);
                Some(tokio_support::ServerThread::start_at(
                    &addr,
                    std::time::Duration::ZERO,
                    None,
                ))
            })
            .join()
            .expect("the server starts")
    });
    let Some(server) = server else { return };
    let addr = server_addr(&net.a_if);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            net.a.enter().expect("enter namespace a");
            on_tokio(async move {
                let mut config = ChannelConfig {
                    timeout: Some(DEADLINE),
                    ..ChannelConfig::default()
                };
                config.client.window = 16;
                let chan = Rc::new(AsyncChannel::connect_with(&addr, config).await.expect("connect"));
                sixteen_in_flight(chan, tokio_support::ECHO, 2, &SIZES).await;
            });
        });
    });
    server.stop();
}

#[test]
fn a_bare_connection_calls_and_reports_its_endpoint() {
    const TEST: &str = "a_bare_connection_calls_and_reports_its_endpoint";
    let Some(net) = pair(TEST, "xc", None) else { return };
    let service = TestService::default();
    with_server(TEST, &net, &service, |_, _| {
        use ferry_transport::{Meta, Transport};
        let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig::default()).expect("pool");
        let server = std::net::SocketAddrV4::new(VethPair::B_IP, PORT);
        let mut conn = ferry_dgram::XdpConnection::connect(
            &net.a_if,
            0,
            server,
            &pool,
            &ferry_dgram::XdpConnConfig::default(),
        )
        .expect("connect");
        assert_eq!((conn.peer(), *conn.local_addr().ip()), (server, VethPair::A_IP));
        let bytes = payload(7, 3000);
        conn.send_payload(Meta::new(RAW, 7), Payload::Bytes(&bytes))
            .expect("send");
        conn.flush().expect("flush");
        let answer = conn.recv().expect("the answer");
        assert_eq!(answer.meta().request_id, 7);
        assert_eq!(answer.bytes(), Some(&bytes[..]));
        let stats = conn.stats();
        assert!(
            !stats.zero_copy && stats.native,
            "veth: copy mode, native XDP: {stats:?}"
        );
        // A 2 MiB region of 4 KiB frames; the fill ring's half is the kernel's at least.
        assert_eq!(stats.umem_frames, 512, "{stats:?}");
        assert!(stats.frames_in_use >= 256, "{stats:?}");
        assert!(stats.syscalls() > 0, "{stats:?}");
        assert!(stats.endpoint.messages_received >= 1, "{stats:?}");
    });
}

/// A raw call of `len` bytes (`i` picks the bytes) on a blocking channel, its answer checked.
fn raw_call(ch: &ferry_rpc::Channel, i: usize, len: usize) {
    let bytes = payload(i, len);
    let answer = ch.call_payload(RAW, Payload::Bytes(&bytes)).expect("raw call");
    assert_eq!(answer.frame().bytes(), Some(&bytes[..]), "raw call {i}");
}

/// Two blocking channels at once from one thread, through one interface queue: sessions on
/// one client hub (regression: the second connect failed with `EBUSY`, each binding an
/// AF_XDP socket of its own, so `ferry kv status --addr xdp://...` could not run). Calls
/// interleave, every answer its own; with one dropped the other calls on; a third then
/// connects.
#[test]
fn two_channels_from_one_thread_share_the_interface() {
    const TEST: &str = "two_channels_from_one_thread_share_the_interface";
    let Some(net) = pair(TEST, "xh", None) else { return };
    let service = TestService::default();
    let Some(stats) = with_server(TEST, &net, &service, |addr, _| {
        let first = channel(addr);
        let second = channel(addr);
        for (i, &len) in SIZES.iter().enumerate() {
            raw_call(&first, 2 * i, len);
            raw_call(&second, 2 * i + 1, SIZES[SIZES.len() - 1 - i]);
        }
        drop(first);
        for (i, &len) in SIZES.iter().enumerate() {
            raw_call(&second, 100 + i, len);
        }
        let third = channel(addr);
        for (i, &len) in SIZES.iter().enumerate() {
            raw_call(&third, 200 + 2 * i, len);
            raw_call(&second, 200 + 2 * i + 1, len);
        }
    }) else {
        return;
    };
    assert_eq!(service.seen.raw_shared.load(Ordering::SeqCst), 5 * SIZES.len());
    assert_eq!(stats.endpoint.drops.malformed, 0, "{stats:?}");
}

/// A tokio channel and a blocking channel at once on two threads of one namespace, one
/// interface queue: whichever thread drives the shared endpoint files the other's answers
/// (and a third channel's Accept, connecting meanwhile) and wakes it (its descriptor), and
/// every call finishes.
#[test]
fn a_tokio_and_a_blocking_channel_share_the_interface_from_two_threads() {
    const TEST: &str = "a_tokio_and_a_blocking_channel_share_the_interface_from_two_threads";
    const ROUNDS: usize = 4;
    let Some(net) = pair(TEST, "xm", None) else { return };
    let service = TestService::default();
    let Some(_) = with_server(TEST, &net, &service, |addr, _| {
        // Both connected before either calls, both alive until both are done; a thread that
        // panicked hangs up, and the other fails at once.
        let (to_tokio, from_blocking) = mpsc::channel();
        let (to_blocking, from_tokio) = mpsc::channel();
        let meet = |tx: &mpsc::Sender<()>, rx: &mpsc::Receiver<()>| {
            let _ = tx.send(());
            rx.recv_timeout(DEADLINE).expect("the other channel's thread");
        };
        let a = &net.a;
        std::thread::scope(|scope| {
            let blocking = scope.spawn(move || {
                a.enter().expect("enter namespace a");
                let ch = channel(addr);
                meet(&to_tokio, &from_tokio);
                // A handshake while the tokio thread's calls drive the endpoint too: whichever
                // files the Accept wakes this connect.
                let late = channel(addr);
                raw_call(&late, 999, 64);
                for round in 0..ROUNDS {
                    for (i, &len) in SIZES.iter().enumerate() {
                        raw_call(&ch, 1000 + round * SIZES.len() + i, len);
                    }
                }
                meet(&to_tokio, &from_tokio);
            });
            on_tokio(async move {
                let mut config = ChannelConfig {
                    timeout: Some(DEADLINE),
                    ..ChannelConfig::default()
                };
                config.client.window = 16;
                let chan = Rc::new(AsyncChannel::connect_with(addr, config).await.expect("connect"));
                meet(&to_blocking, &from_blocking);
                for _ in 0..ROUNDS {
                    sixteen_in_flight(Rc::clone(&chan), RAW, 2, &SIZES).await;
                }
                meet(&to_blocking, &from_blocking);
            });
            blocking.join().expect("the blocking channel");
        });
    }) else {
        return;
    };
    assert_eq!(
        service.seen.raw_shared.load(Ordering::SeqCst),
        ROUNDS * (SIZES.len() + 32) + 1
    );
}

/// 128 requests at once from a bare connection, four times the session's window of 32: the
/// server's answers beyond its window wait in its connection's backlog until the client's
/// acknowledgements free room. Those come in at the listener's endpoint, shared by every
/// session, not through the connection's own descriptor (which only a new message rings);
/// the backlog must move then, or the last answers are never sent (regression: `ferry bench
/// rpc --net veth` stalled at 128 in flight, no call completing).
#[test]
fn answers_beyond_the_window_leave_when_acknowledgements_free_room() {
    const TEST: &str = "answers_beyond_the_window_leave_when_acknowledgements_free_room";
    const CALLS: u64 = 128;
    let Some(net) = pair(TEST, "xw", None) else { return };
    let service = TestService::default();
    with_server(TEST, &net, &service, |_, _| {
        use ferry_transport::{Meta, Transport};
        let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig::default()).expect("pool");
        let server = std::net::SocketAddrV4::new(VethPair::B_IP, PORT);
        let config = ferry_dgram::XdpConnConfig::default();
        let mut conn =
            ferry_dgram::XdpConnection::connect(&net.a_if, 0, server, &pool, &config).expect("connect");
        for id in 0..CALLS {
            let bytes = payload(id as usize, 64);
            conn.send_payload(Meta::new(RAW, id), Payload::Bytes(&bytes))
                .expect("send");
        }
        conn.flush().expect("flush");
        let mut answered = std::collections::BTreeSet::new();
        ferry_testkit::wait_until("every answer", DEADLINE, || {
            while let Some(answer) = conn.try_recv().expect("receive") {
                let id = answer.meta().request_id;
                assert_eq!(answer.bytes(), Some(&payload(id as usize, 64)[..]));
                assert!(answered.insert(id), "answer {id} twice");
            }
            answered.len() == CALLS as usize
        });
    });
}

#[test]
fn a_client_without_a_neighbour_or_a_server_fails_typed() {
    const TEST: &str = "a_client_without_a_neighbour_or_a_server_fails_typed";
    let Some(net) = pair(TEST, "xn", None) else { return };
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                net.a.enter().expect("enter namespace a");
                let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig::default()).expect("pool");
                let config = ferry_dgram::XdpConnConfig {
                    handshake_timeout: std::time::Duration::from_millis(300),
                    ..ferry_dgram::XdpConnConfig::default()
                };
                let connect = |peer: &str| {
                    ferry_dgram::XdpConnection::connect(
                        &net.a_if,
                        0,
                        peer.parse().expect("peer"),
                        &pool,
                        &config,
                    )
                };
                let inner = |e: ferry_transport::TransportError| match e {
                    ferry_transport::TransportError::Io { source, .. } => {
                        assert_eq!(source.kind(), std::io::ErrorKind::TimedOut, "{source}");
                        source.into_inner().expect("an inner error")
                    }
                    other => panic!("not a timeout: {other}"),
                };
                // Nobody has this address: ARP never completes.
                let e = inner(connect("10.252.0.9:7700").expect_err("no neighbour"));
                assert!(e.downcast_ref::<ferry_dgram::NoNeighbour>().is_some(), "{e}");
                // Host b is there, but nothing serves the port.
                match connect(&format!("{}:{PORT}", VethPair::B_IP)) {
                    Err(ferry_transport::TransportError::Io {
                        op: "xdp socket",
                        source,
                    }) => {
                        skip(TEST, &format!("no AF_XDP: {source}"));
                    }
                    Err(e) => {
                        let e = inner(e);
                        assert!(e.downcast_ref::<ferry_dgram::HandshakeTimeout>().is_some(), "{e}");
                    }
                    Ok(_) => panic!("a handshake with no server"),
                }
            })
            .join()
            .expect("the client");
    });
}

#[test]
fn garbage_to_the_port_is_dropped_and_counted_and_the_service_serves_on() {
    const TEST: &str = "garbage_to_the_port_is_dropped_and_counted_and_the_service_serves_on";
    let Some(net) = pair(TEST, "xg", None) else { return };
    let service = TestService::default();
    with_server(TEST, &net, &service, |addr, listener| {
        let Listener::Xdp(l) = &**listener else {
            panic!("not an AF_XDP listener")
        };
        let ch = channel(addr);
        ch.call_payload(RAW, Payload::Bytes(b"before")).expect("call");
        let before = l.stats().endpoint.drops;
        // From the kernel's UDP stack of namespace a, to the server's port: the server's
        // program steers it to the AF_XDP socket like any datagram to the port.
        let stranger = UdpSocket::bind((VethPair::A_IP, 0)).expect("bind");
        // Checksum 0: else veth leaves the kernel's checksum to an offload that never runs,
        // and the server's driver refuses the frame before the protocol sees it.
        no_checksum::set(&stranger);
        let forged = forged_ack();
        let garbage: [&[u8]; 3] = [b"GET / HTTP/1.1\r\n\r\n", &forged[..5], &[0xff; 1472]];
        for bytes in garbage.iter().copied().chain([&forged[..]]) {
            stranger.send_to(bytes, (VethPair::B_IP, PORT)).expect("send");
        }
        // The forged packet names a session: the server answers it with a Reset.
        stranger.set_read_timeout(Some(DEADLINE)).expect("timeout");
        let mut reset = [0u8; 64];
        let n = stranger
            .recv(&mut reset)
            .expect("the Reset answering the forged packet");
        assert_eq!(n, ferry_dgram::packet::RESET_LEN);
        // The server's loop handled all four before it answered the last.
        let after = l.stats().endpoint.drops;
        assert_eq!(
            after.malformed - before.malformed,
            garbage.len() as u64,
            "{after:?}"
        );
        assert_eq!(after.unknown_session - before.unknown_session, 1, "{after:?}");
        for i in 0..10u8 {
            let resp = ch
                .call_payload(RAW, Payload::Bytes(&[i; 2000]))
                .expect("still serving");
            assert_eq!(resp.frame().bytes(), Some(&[i; 2000][..]));
        }
    });
}

/// A first measurement, not a benchmark (`ferry bench rpc` will be): 64 B raw echo over
/// `xdp://` and `udp://` between the two namespaces (bare veth), one server loop listening on
/// both, at 1 and 16 calls in flight, the two transports alternating in one run. Prints
/// calls/s, the XDP/UDP ratio and the server endpoint's syscalls per call; asserts nothing
/// about speed. `FERRY_XDP_MEASURE_SECS` sets each point's time (default 3).
/// A `Server` listening on `xdp://` puts its listener's endpoint on /metrics under
/// `transport="xdp"`: every request received and every answer sent, the driver's syscalls,
/// the UMEM frames in use (read at the scrape: all the listener's sessions together).
#[test]
fn the_metrics_show_the_xdp_listeners_endpoint() {
    const TEST: &str = "the_metrics_show_the_xdp_listeners_endpoint";
    const CALLS: usize = 20;
    let Some(net) = pair(TEST, "xs", None) else { return };
    std::thread::scope(|scope| {
        let started = scope.spawn(|| {
            net.b.enter().expect("enter namespace b");
            let services = Services::builder()
                .service(TestService::default())
                .expect("add")
                .build()
                .expect("services");
            // Its loop threads are spawned from here: they live in namespace b too.
            ferry_rpc::Server::builder(services)
                .listen(&server_addr(&net.b_if))
                .loops(1)
                .start()
        });
        let server = match started.join().expect("the server thread") {
            Ok(server) => server,
            Err(e) => return skip(TEST, &format!("AF_XDP unavailable: {e}")),
        };
        scope
            .spawn(|| {
                net.a.enter().expect("enter namespace a");
                let ch = channel(&server_addr(&net.a_if));
                for i in 0..CALLS {
                    let bytes = payload(i, 64);
                    let resp = ch.call_payload(RAW, Payload::Bytes(&bytes)).expect("call");
                    assert_eq!(resp.frame().bytes(), Some(&bytes[..]));
                }
            })
            .join()
            .expect("the client");
        let xdp = |name: &str| format!("{name}{{transport=\"xdp\"}}");
        for name in [
            "ferry_dgram_packets_received_total",
            "ferry_dgram_packets_sent_total",
        ] {
            let n = metric(&server, &xdp(name));
            assert!(n >= CALLS as u64, "{name} = {n} after {CALLS} calls");
        }
        assert!(metric(&server, &xdp("ferry_dgram_syscalls_total")) > 0);
        // Present (metric fails the test if not): the fill ring holds frames at all times.
        assert!(metric(&server, &xdp("ferry_dgram_umem_frames_in_use")) > 0);
        server.shutdown(std::time::Duration::from_secs(1));
    });
}

#[test]
#[ignore = "a measurement: cargo test --release -p ferry-rpc --test xdp -- --ignored --nocapture"]
fn measure_64_byte_echo_xdp_against_udp() {
    const TEST: &str = "measure_64_byte_echo_xdp_against_udp";
    let secs: f64 = std::env::var("FERRY_XDP_MEASURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let Some(net) = pair(TEST, "xb", None) else { return };
    let service = TestService::default();
    let udp_server = format!("udp://{}:7701", VethPair::B_IP);
    let (udp_server, net_ref) = (&udp_server, &net);
    let stats = with_server(TEST, &net, &service, |xdp, listener| {
        let Listener::Xdp(l) = &**listener else {
            panic!("not an AF_XDP listener")
        };
        // The UDP server: a second loop in namespace b (spawned there, so it lives there).
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let udp_loop = scope.spawn(move || {
                net_ref.b.enter().expect("enter namespace b");
                let services = Services::builder()
                    .service(TestService::default())
                    .expect("add")
                    .build()
                    .expect("services");
                let server = ferry_rpc::Server::builder(services)
                    .listen(udp_server)
                    .loops(1)
                    .start()
                    .expect("the UDP server");
                let _ = rx.recv();
                server.shutdown(std::time::Duration::from_secs(1));
            });
            for in_flight in [1, 16] {
                let (mut x, mut u, mut sys) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..2 {
                    let before = l.stats();
                    let rate = echo_rate(xdp, in_flight, secs);
                    let after = l.stats();
                    let calls = rate * secs;
                    sys.push((after.syscalls() - before.syscalls()) as f64 / calls);
                    x.push(rate);
                    u.push(echo_rate(udp_server, in_flight, secs));
                }
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                println!(
                    "64 B echo, {in_flight:>2} in flight: xdp {:>9.0} calls/s {x:.0?}, udp {:>9.0} calls/s {u:.0?}, xdp/udp {:.2}; xdp server syscalls/call {sys:.2?}",
                    mean(&x),
                    mean(&u),
                    mean(&x) / mean(&u),
                );
            }
            drop(tx);
            udp_loop.join().expect("the UDP server");
        });
    });
    if let Some(stats) = stats {
        println!(
            "xdp server endpoint: zero_copy {}, native {}, {stats:?}",
            stats.zero_copy, stats.native
        );
    }
}

/// `SO_NO_CHECK`, which no safe wrapper offers.
#[allow(unsafe_code)]
mod no_checksum {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Makes `socket` send UDP checksum 0 (IPv4 allows it).
    pub fn set(socket: &UdpSocket) {
        let one: libc::c_int = 1;
        // SAFETY: a live socket, and a pointer to an int that outlives the call, with its size.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_NO_CHECK,
                (&raw const one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "SO_NO_CHECK: {}", std::io::Error::last_os_error());
    }
}
