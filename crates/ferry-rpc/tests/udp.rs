//! ferry-rpc over `udp://` (`ferry-dgram`'s sessions on real UDP sockets): the event-loop server
//! and the blocking and tokio clients, with the service every driver test serves.
//!
//! - Ferry messages and raw payloads of 0 B to 256 KiB, each answered once and intact, from
//!   several clients at once, and 16 calls in flight on one tokio channel.
//! - The tokio server (`AsyncServer`) over `udp://` too: 16 calls in flight, every size.
//! - A server-streaming call: ten windows of messages, in order (the session is ordered).
//! - Loss, for real: the server and the client in two network namespaces joined through a
//!   bridge (`ferry_testkit::netns::Lan`), nftables dropping 10 % of the packets each one
//!   receives (`numgen random`, counted: the test checks that packets were dropped; this
//!   kernel has no netem, so no delay or reordering: the
//!   protocol's tests in `ferry-dgram` cover those with a simulated network). Every call is
//!   answered, and handled exactly once (the handler counts). Skipped, with the reason, where
//!   namespaces or `nft` are not available.
//! - A server restarted on the same port: the client's next call fails with `UNAVAILABLE`
//!   naming the UDP session's reset, and a new connection works.
//! - Garbage and a forged packet for no session sent to the server's port: the service serves
//!   on. (The counts of what was dropped, and garbage reaching an accepted session's own
//!   socket, are checked in `ferry-dgram`'s `tests/transport.rs`, where the sockets are the
//!   test's.)

mod common;
mod tokio_support;

use std::net::UdpSocket;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::wire::STREAM_WINDOW_MESSAGES;
use ferry_rpc::{
    Call, CallOptions, Channel, ChannelConfig, Code, MethodInfo, Mode, Raw, Reply, Request, Server, Service,
    Services, Shape, Status, StreamHandler, StreamOut, Unsent,
};
use ferry_testkit::netns::Lan;
use ferry_testkit::tools::skip;
use ferry_testkit::{DEADLINE, spawn};
use ferry_transport::{Payload, Received, method_id};
use ferry_wire::sample::Record;

/// Payload sizes around the datagram segment (1399 bytes at the default MTU) up to 256 KiB.
const SIZES: [usize; 9] = [0, 1, 64, 1399, 1400, 4096, 65_536, 100_000, 256 << 10];

/// Server-streaming, raw: the request is a u32 LE count; answers that many messages, each its
/// index (u32 LE).
const COUNT: u16 = method_id("/ferry.test.UdpStreams/Count");

#[derive(Debug, Clone, Default)]
struct Streams;

impl Service for Streams {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![MethodInfo {
            path: "/ferry.test.UdpStreams/Count",
            id: COUNT,
            request: None,
            mode: Mode::Foreground,
            shape: Shape::ServerStreaming,
        }]
    }

    fn call<'a>(&self, _: &Call<'a>, _: Request<'a>, _: &mut Reply<'_>) -> Result<(), Status> {
        Err(Status::new(Code::Unimplemented, "streams only"))
    }

    fn open(&self, _: &Call<'_>) -> Result<Box<dyn StreamHandler>, Status> {
        Ok(Box::new(Count { next: 0, total: None }))
    }
}

struct Count {
    next: u32,
    total: Option<u32>,
}

impl Count {
    /// Sends until the count is reached (then finishes) or the window is spent.
    fn pump(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let Some(total) = self.total else { return Ok(()) };
        while self.next < total {
            match out.send_payload(Payload::Bytes(&self.next.to_le_bytes())) {
                Ok(()) => self.next += 1,
                Err(Unsent::Full) => return Ok(()),
                Err(Unsent::Ended) => return Err(Status::new(Code::Internal, "ended under the handler")),
            }
        }
        out.finish();
        Ok(())
    }
}

impl StreamHandler for Count {
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let bytes = request.incoming().bytes().unwrap_or_default();
        let n = <[u8; 4]>::try_from(bytes).map_err(|_| Status::new(Code::InvalidArgument, "not a u32"))?;
        self.total = Some(u32::from_le_bytes(n));
        self.pump(out)
    }

    fn on_half_close(&mut self, _: &mut StreamOut<'_>) -> Result<(), Status> {
        Ok(())
    }

    fn on_window(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        self.pump(out)
    }
}

/// A server of the test service and the streams on `addr` (`udp://host:port`), two loops.
fn serve_udp(service: TestService, addr: &str) -> Server {
    let services = Services::builder()
        .service(service)
        .expect("add")
        .service(Streams)
        .expect("add")
        .workers(2)
        .build()
        .expect("services");
    Server::builder(services)
        .listen(addr)
        .loops(2)
        .start()
        .expect("server starts")
}

/// Every size as a Ferry message (echoed by reference on the server) and as a raw payload.
fn echo_every_size(ch: &Channel, client: usize) {
    for (i, &len) in SIZES.iter().enumerate() {
        let key = format!("c{client}-{i}");
        let req = record(ch.context(), key.as_bytes(), &[len, 3]);
        let resp = ch.call::<Record<'static>>(ECHO, &req).expect("echo");
        check_record(&resp.view().expect("view"), key.as_bytes(), &[len, 3]);
        let bytes = payload(client + i, len);
        let raw = ch.call_payload(RAW, Payload::Bytes(&bytes)).expect("raw");
        assert_eq!(
            raw.frame().bytes(),
            Some(&bytes[..]),
            "raw call {i} of client {client}"
        );
    }
}

#[test]
fn a_service_answers_0_to_256_kib_from_several_clients_and_16_in_flight() {
    let service = TestService::default();
    let server = serve_udp(service.clone(), "udp://127.0.0.1:0");
    let addr = server.addrs()[0].to_string();
    assert!(addr.starts_with("udp://127.0.0.1:"), "{addr}");
    let clients: Vec<_> = (0..3)
        .map(|c| {
            let addr = addr.clone();
            spawn(&format!("client {c}"), move || {
                echo_every_size(&channel(&addr), c)
            })
        })
        .collect();
    for c in clients {
        c.join();
    }
    // Each raw request reached the handler once, as the pool buffer it was reassembled in.
    assert_eq!(service.seen.raw_shared.load(Ordering::SeqCst), 3 * SIZES.len());
    assert_eq!(service.seen.raw_not_shared.load(Ordering::SeqCst), 0);

    // 16 calls in flight on one tokio channel, each with its own answer.
    let tokio_addr = addr.clone();
    spawn("16 in flight", move || {
        let local = tokio::task::LocalSet::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        local.block_on(&rt, async move {
            let mut config = ChannelConfig::default();
            config.client.window = 16;
            let chan = Rc::new(
                AsyncChannel::connect_with(&tokio_addr, config)
                    .await
                    .expect("connect"),
            );
            sixteen_in_flight(chan, RAW, 4, &SIZES).await;
        });
    })
    .join();
    assert_eq!(
        service.seen.raw_shared.load(Ordering::SeqCst),
        3 * SIZES.len() + 64
    );
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn the_tokio_server_answers_16_in_flight_over_udp() {
    let server = tokio_support::ServerThread::start_at("udp://127.0.0.1:0", Duration::ZERO, None);
    let addr = server.addr.clone();
    assert!(addr.starts_with("udp://"), "{addr}");
    spawn("16 in flight to the tokio server", move || {
        tokio_support::local_runtime(async move {
            let mut config = ChannelConfig::default();
            config.client.window = 16;
            let chan = Rc::new(AsyncChannel::connect_with(&addr, config).await.expect("connect"));
            sixteen_in_flight(chan, tokio_support::ECHO, 2, &SIZES).await;
        });
    })
    .join();
    server.stop();
}

#[test]
fn a_server_stream_arrives_whole_and_in_order() {
    let server = serve_udp(TestService::default(), "udp://127.0.0.1:0");
    let ch = channel(&server.addrs()[0].to_string());
    let mut s = ch.open::<Raw>(COUNT, &CallOptions::default()).expect("open");
    let n = 10 * STREAM_WINDOW_MESSAGES;
    s.send_payload(Payload::Bytes(&n.to_le_bytes())).expect("send");
    s.end().expect("end");
    let got: Vec<u32> = s
        .by_ref()
        .map(|r| {
            let r = r.expect("message");
            u32::from_le_bytes(r.frame().bytes().expect("raw").try_into().expect("u32"))
        })
        .collect();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn every_call_is_answered_exactly_once_under_packet_loss() {
    const TEST: &str = "every_call_is_answered_exactly_once_under_packet_loss";
    let lan = match Lan::new("udprpc", 2) {
        Ok(lan) => lan,
        Err(e) => return skip(TEST, &format!("no network namespaces: {e}")),
    };
    for i in 0..2 {
        // `Lan::set_loss`'s rule, with a counter: the test checks that the loss happened.
        let rules = "add table inet udp_loss; \
             add chain inet udp_loss input { type filter hook input priority 0; policy accept; }; \
             add rule inet udp_loss input iifname \"veth0\" numgen random mod 100 < 10 counter drop";
        if let Err(e) = lan.node(i).exec("nft", &[rules]) {
            return skip(TEST, &format!("no nftables: {e}"));
        }
    }
    let service = TestService::default();
    const CLIENTS: usize = 2;
    const CALLS: usize = 40;
    // Scoped threads borrow the namespaces, so that they are deleted whatever fails: a panic
    // drops `stop`, which ends the server, before the scope joins.
    std::thread::scope(|scope| {
        let (addr_tx, addr_rx) = mpsc::channel();
        let (stop, stopped) = mpsc::channel::<()>();
        // The server lives on a thread inside node 0 (its loops, spawned there, too).
        let (lan, service) = (&lan, &service);
        let server = scope.spawn(move || {
            lan.node(0).enter().expect("enter node 0");
            let server = serve_udp(service.clone(), &format!("udp://{}:0", Lan::addr(0)));
            addr_tx
                .send(server.addrs()[0].to_string())
                .expect("send the address");
            let _ = stopped.recv();
            server.shutdown(Duration::from_secs(1));
        });
        let addr = addr_rx.recv_timeout(DEADLINE).expect("the server's address");
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let addr = addr.clone();
                scope.spawn(move || {
                    lan.node(1).enter().expect("enter node 1");
                    let ch = channel(&addr);
                    for i in 0..CALLS {
                        // Single packets and messages of up to 47 packets (a lost one among
                        // them is the usual case at 10 %).
                        let bytes = payload(c * CALLS + i, [64, 3000, 65_536][i % 3]);
                        let raw = ch
                            .call_payload(RAW, Payload::Bytes(&bytes))
                            .expect("raw under loss");
                        assert_eq!(raw.frame().bytes(), Some(&bytes[..]), "call {i} of client {c}");
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().expect("a client");
        }
        drop(stop);
        server.join().expect("the server");
    });
    // Exactly once: the handler ran once per call, retransmissions and all.
    assert_eq!(service.seen.raw_shared.load(Ordering::SeqCst), CLIENTS * CALLS);
    // And the loss was real: each node's rule dropped packets.
    for i in 0..2 {
        let table = lan
            .node(i)
            .exec("nft", &["list", "table", "inet", "udp_loss"])
            .expect("nft");
        assert!(dropped(&table) > 0, "node {i} dropped no packet: {table}");
    }
}

/// The packets an nftables listing's `counter` counted.
fn dropped(table: &str) -> u64 {
    let after = table.split("counter packets ").nth(1).expect("a counter");
    after
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count")
}

#[test]
fn a_restarted_server_fails_the_next_call_with_a_reset_and_a_new_connection_works() {
    let server = serve_udp(TestService::default(), "udp://127.0.0.1:0");
    let addr = server.addrs()[0].to_string();
    let mut ch = channel(&addr);
    ch.call_payload(RAW, Payload::Bytes(b"1")).expect("first call");
    server.shutdown(Duration::from_secs(1));
    let server = serve_udp(TestService::default(), &addr);
    let err = ch
        .call_payload(RAW, Payload::Bytes(b"2"))
        .expect_err("the session is gone");
    assert_eq!(err.code, Code::Unavailable, "{err}");
    assert!(
        err.message.contains("udp session")
            && (err.message.contains("reset") || err.message.contains("restarted")),
        "{err}"
    );
    assert!(ch.is_closed());
    ch.reconnect().expect("reconnect");
    let resp = ch.call_payload(RAW, Payload::Bytes(b"3")).expect("a new session");
    assert_eq!(resp.frame().bytes(), Some(&b"3"[..]));
    let fresh = channel(&addr);
    fresh
        .call_payload(RAW, Payload::Bytes(b"4"))
        .expect("a new connection");
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn garbage_and_forged_packets_leave_the_service_serving() {
    let server = serve_udp(TestService::default(), "udp://127.0.0.1:0");
    let addr = server.addrs()[0].to_string();
    let ch = channel(&addr);
    ch.call_payload(RAW, Payload::Bytes(b"before")).expect("call");
    let port: std::net::SocketAddr = addr.trim_start_matches("udp://").parse().expect("address");
    let stranger = UdpSocket::bind("127.0.0.1:0").expect("bind");
    // Not a packet; a header for a session the server does not have (answered by a Reset);
    // a Connect cut short.
    let forged = forged_ack();
    for bytes in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        &forged,
        &forged[..5],
        &[0xff; 1472],
    ] {
        stranger.send_to(bytes, port).expect("send");
    }
    stranger.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let mut reset = [0u8; 64];
    let n = stranger
        .recv(&mut reset)
        .expect("the Reset answering the forged packet");
    assert_eq!(n, ferry_dgram::packet::RESET_LEN);
    for i in 0..10u8 {
        let resp = ch
            .call_payload(RAW, Payload::Bytes(&[i; 2000]))
            .expect("still serving");
        assert_eq!(resp.frame().bytes(), Some(&[i; 2000][..]));
    }
    channel(&addr)
        .call_payload(RAW, Payload::Bytes(b"new"))
        .expect("a new connection after the garbage");
    server.shutdown(Duration::from_secs(1));
}

/// The server's metrics, scraped over HTTP.
fn scrape(addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to /metrics");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: ferry\r\n\r\n")
        .expect("request");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("answer");
    text
}

/// The value of the series `key` (name and labels, as exposed) in `text`.
fn series(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
}

/// A server of the test service alone on `addrs`, one loop, with its metrics endpoint.
fn serve_with_metrics(addrs: &[&str]) -> Server {
    let services = Services::builder()
        .service(TestService::default())
        .expect("add")
        .build()
        .expect("services");
    let builder = addrs
        .iter()
        .fold(Server::builder(services), |b, addr| b.listen(addr));
    builder
        .metrics("127.0.0.1:0")
        .loops(1)
        .start()
        .expect("server starts")
}

#[test]
fn the_metrics_show_the_udp_sessions_packets_syscalls_and_rtt() {
    let server = serve_with_metrics(&["udp://127.0.0.1:0"]);
    let metrics = server.metrics_addr().expect("metrics endpoint");
    let ch = channel(&server.addrs()[0].to_string());
    const CALLS: usize = 20;
    for i in 0..CALLS {
        let bytes = payload(i, 64);
        let resp = ch.call_payload(RAW, Payload::Bytes(&bytes)).expect("call");
        assert_eq!(resp.frame().bytes(), Some(&bytes[..]));
    }
    // The loop publishes its sessions' counters every 100 ms: wait for this session's.
    let udp = |name: &str| format!("{name}{{transport=\"udp\"}}");
    let mut text = String::new();
    ferry_testkit::wait_until("the UDP session's packets on /metrics", DEADLINE, || {
        text = scrape(metrics);
        series(&text, &udp("ferry_dgram_packets_received_total")).is_some_and(|n| n >= CALLS as f64)
    });
    // Every request came in a packet and every answer left in one, each with its syscalls.
    for name in ["ferry_dgram_packets_sent_total", "ferry_dgram_syscalls_total"] {
        let n = series(&text, &udp(name)).unwrap_or_else(|| panic!("{name} in\n{text}"));
        assert!(n >= CALLS as f64, "{name} = {n}");
    }
    let rtt = series(&text, &udp("ferry_dgram_rtt_seconds")).expect("the open session's RTT");
    assert!(rtt > 0.0, "rtt {rtt}");
    for name in [
        "ferry_dgram_retransmits_total",
        "ferry_dgram_timeouts_total",
        "ferry_dgram_credits_stalled_total",
    ] {
        assert!(series(&text, &udp(name)).is_some(), "{name} in\n{text}");
    }
    for reason in ["malformed", "duplicate", "out_of_window", "pool_exhausted"] {
        let key = format!("ferry_dgram_drops_total{{transport=\"udp\",reason=\"{reason}\"}}");
        assert!(series(&text, &key).is_some(), "{key} in\n{text}");
    }
    // No UMEM on UDP, and no datagram series for a transport that served nothing.
    assert!(!text.contains("ferry_dgram_umem_frames_in_use"), "{text}");
    assert!(
        !text.contains("ferry_dgram_packets_sent_total{transport=\"tcp\"}"),
        "{text}"
    );
    drop(ch);
    server.shutdown(Duration::from_secs(1));
}

/// The process's CPU time so far (user + system, from `/proc/self/stat`, in clock ticks of
/// 10 ms): the server's and the client's together, since both run here.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name (which may hold spaces) start at its closing ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// A first measurement, not a benchmark (`ferry bench rpc` will be): 64 B raw echo over
/// `udp://` and `tcp://` on loopback, one server loop, at 1, 16 and 128 calls in flight, the
/// two transports alternating in one run. Prints calls/s, CPU per call (both sides: the
/// process's CPU time over the calls) and the UDP/TCP ratios; asserts nothing about speed.
/// `FERRY_UDP_MEASURE_SECS` sets each point's time (default 3).
#[test]
#[ignore = "a measurement: cargo test --release -p ferry-rpc --test udp -- --ignored --nocapture"]
fn measure_64_byte_echo_udp_against_tcp() {
    let secs: f64 = std::env::var("FERRY_UDP_MEASURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let server = serve_with_metrics(&["tcp://127.0.0.1:0", "udp://127.0.0.1:0"]);
    let [tcp, udp] = [0, 1].map(|i| server.addrs()[i].to_string());
    let metrics = server.metrics_addr().expect("metrics endpoint");
    // The server's UDP counters: syscalls, packets sent, packets received (published every
    // 100 ms, and the sessions closed by then: read after a pause that lets them settle).
    let counters = || {
        std::thread::sleep(Duration::from_millis(300));
        let text = scrape(metrics);
        [
            "syscalls",
            "packets_sent",
            "packets_received",
            "retransmits",
            "timeouts",
        ]
        .map(|n| series(&text, &format!("ferry_dgram_{n}_total{{transport=\"udp\"}}")).unwrap_or(0.0))
    };
    // Calls/s and CPU µs per call of one point.
    let point = |addr: &str, in_flight: usize| {
        let before = (addr == udp).then(counters);
        let cpu = process_cpu();
        let rate = echo_rate(addr, in_flight, secs);
        let calls = rate * secs;
        let per_call = (process_cpu() - cpu).as_secs_f64() * 1e6 / calls;
        if let Some(before) = before {
            let after = counters();
            let [sys, sent, received, rx, to] = [0, 1, 2, 3, 4].map(|i| (after[i] - before[i]) / calls);
            println!(
                "  udp server, {in_flight:>3} in flight: {sys:.2} syscalls, {sent:.2} packets sent, \
                 {received:.2} received per call; retx {rx:.3} timeouts {to:.3}"
            );
        }
        (rate, per_call)
    };
    for in_flight in [1, 16, 128] {
        let (mut t, mut u) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            t.push(point(&tcp, in_flight));
            u.push(point(&udp, in_flight));
        }
        let mean =
            |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
        let (tr, ur) = (mean(&t, |p| p.0), mean(&u, |p| p.0));
        let (tc, uc) = (mean(&t, |p| p.1), mean(&u, |p| p.1));
        println!(
            "64 B echo, {in_flight:>3} in flight: tcp {tr:>9.0} calls/s {tc:>5.1} µs CPU/call, \
             udp {ur:>9.0} calls/s {uc:>5.1} µs CPU/call; udp/tcp {:.2} calls/s, {:.2} CPU/call",
            ur / tr,
            uc / tc
        );
    }
    server.shutdown(Duration::from_secs(1));
}
