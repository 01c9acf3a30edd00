//! The AF_XDP driver between two network namespaces this test creates, with native XDP on
//! both ends: messages of 0 B to 64 KiB echoed, each answered exactly once and intact, and
//! every datagram to an endpoint's port taken by its socket (none reaches the kernel's UDP
//! stack), while everything else (ARP, a datagram to another port) still reaches the kernel. Once over a bare veth pair (and again with the program in generic mode), once through a third namespace that bridges the two and
//! drops packets at random (nftables `numgen random` in the bridge's forward hook: XDP runs
//! before netfilter on the endpoints, and this kernel has no netem).
//!
//! One thread per endpoint, each moved into its namespace (`setns`); the namespaces (and so
//! the veths) are deleted afterwards, also when the test fails. Without root, `ip`, AF_XDP or
//! XDP the test prints SKIPPED (or fails, with `FERRY_REQUIRE_KERNEL_FEATURES` set).

use std::collections::VecDeque;
use std::net::{SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_dgram::frame::Mac;
use ferry_dgram::{Config, Event, SendError, SessionId, XdpConfig, XdpEndpoint, XdpStats};
use ferry_testkit::netns::{Netns, VethPair};
use ferry_testkit::tools::skip;
use ferry_testkit::{Rng, seed};
use ferry_transport::Meta;

// The client is host `a` of the pair, the server host `b`.
const CLIENT_IP: &str = "10.252.0.1";
const SERVER_IP: &str = "10.252.0.2";
const CLIENT: &str = "10.252.0.1:7600";
const SERVER: &str = "10.252.0.2:7601";
const CLIENT_MAC: Mac = VethPair::A_MAC;
const SERVER_MAC: Mac = VethPair::B_MAC;
/// Each run's bound: every loop below gives up (and fails) at it.
const LIMIT: Duration = Duration::from_secs(120);

/// The kernel's count of UDP datagrams to a port without a socket, in `ns`.
fn udp_no_ports(ns: &Netns) -> u64 {
    let snmp = ns.exec("cat", &["/proc/net/snmp"]).expect("/proc/net/snmp");
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next().expect("Udp names"), udp.next().expect("Udp values"));
    let at = names
        .split_whitespace()
        .position(|n| n == "NoPorts")
        .expect("NoPorts");
    values
        .split_whitespace()
        .nth(at)
        .expect("value")
        .parse()
        .expect("a number")
}

/// A datagram from the client's kernel to a kernel socket in the server's namespace, on
/// another port than the endpoints': it needs ARP both ways and the server's program to pass
/// it. Sent again every 200 ms (a lossy link may drop one) until it arrives, at most 50 times.
fn kernel_datagram_passes(net: &VethPair) {
    net.b.enter().expect("enter the server's namespace");
    let rx = UdpSocket::bind((SERVER_IP, 7699)).expect("a kernel socket");
    rx.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    net.a.enter().expect("enter the client's namespace");
    let tx = UdpSocket::bind((CLIENT_IP, 0)).expect("a kernel socket");
    let mut buf = [0; 16];
    for _ in 0..50 {
        tx.send_to(b"kernel", (SERVER_IP, 7699)).expect("send");
        if let Ok((n, _)) = rx.recv_from(&mut buf) {
            assert_eq!(&buf[..n], b"kernel");
            return;
        }
    }
    panic!("a datagram to another port never reached the server's kernel: the program does not pass it");
}

fn pool() -> Pool {
    // One 1 MiB region of 4 KiB frames is the UMEM (256 frames); the others hold messages.
    Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 64 << 20,
        huge_pages: false,
        ..PoolConfig::default()
    })
    .expect("a pool")
}

fn bind(ifname: &str, local: &str, mac: Mac, case: Case, pool: Pool) -> Result<XdpEndpoint, String> {
    let mut config = XdpConfig::new(ifname, 0, local.parse().expect("address"), mac);
    config.native = case.native;
    config.endpoint = Config {
        // The link's MTU less the IPv4 and UDP headers.
        mtu: case.mtu as usize - 28,
        max_message_len: 1 << 20,
        ..Config::default()
    };
    XdpEndpoint::bind(config, pool).map_err(|e| e.to_string())
}

/// Echoes every message (in order; those beyond the session's window wait) until `stop`;
/// sets `acked` once `expected` echoes are all acknowledged (so the client may go). Its
/// counters at the end.
fn serve(
    mut ep: XdpEndpoint,
    expected: usize,
    acked: &AtomicBool,
    stop: &AtomicBool,
    deadline: Instant,
) -> XdpStats {
    let mut session: Option<SessionId> = None;
    let mut waiting = VecDeque::new();
    let mut echoed = 0;
    while !stop.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "server: still running at the limit");
        ep.drive(Duration::from_millis(20)).expect("server drive");
        while let Some(event) = ep.poll_event() {
            if let Event::Message {
                session: s,
                meta,
                data,
            } = event
            {
                session = Some(s);
                waiting.push_back((meta, data));
            }
        }
        while let (Some(s), Some((meta, data))) = (session, waiting.pop_front()) {
            match ep.send(s, meta, data.clone()) {
                Ok(()) => echoed += 1,
                Err(SendError::WindowFull { .. }) => {
                    waiting.push_front((meta, data));
                    break;
                }
                Err(e) => panic!("echo: {e}"),
            }
        }
        let idle = session
            .and_then(|s| ep.endpoint().session_stats(s))
            .is_some_and(|s| s.unacked == 0 && s.messages_in_flight == 0);
        if echoed == expected && idle {
            acked.store(true, Ordering::Relaxed);
        }
    }
    ep.stats()
}

/// Sends every message (at most 8 waiting for their echo), checks every echo, and goes on
/// until the server has its echoes acknowledged. The endpoint, still open.
fn call(
    mut ep: XdpEndpoint,
    pool: &Pool,
    messages: &[Vec<u8>],
    acked: &AtomicBool,
    deadline: Instant,
) -> XdpEndpoint {
    let server: SocketAddrV4 = SERVER.parse().expect("address");
    let session = ep.connect(server, SERVER_MAC).expect("connect");
    let mut answers = vec![0u32; messages.len()];
    let (mut next, mut done) = (0, 0);
    while done < messages.len() || !acked.load(Ordering::Relaxed) {
        assert!(
            Instant::now() < deadline,
            "client: {done} of {} echoes by the limit; {:?}",
            messages.len(),
            ep.stats()
        );
        while next < messages.len() && next - done < 8 {
            let data = pool.copy_from(&messages[next]).expect("pool");
            match ep.send(session, Meta::new(1, next as u64), data) {
                Ok(()) => next += 1,
                Err(SendError::WindowFull { .. }) => break,
                Err(e) => panic!("send {next}: {e}"),
            }
        }
        ep.drive(Duration::from_millis(20)).expect("client drive");
        while let Some(event) = ep.poll_event() {
            match event {
                Event::Connected { .. } => {}
                Event::Message { meta, data, .. } => {
                    let i = meta.request_id as usize;
                    assert!(i < next, "an echo of message {i}, never sent");
                    answers[i] += 1;
                    assert_eq!(answers[i], 1, "message {i} answered twice");
                    assert!(
                        data[..] == messages[i][..],
                        "message {i} ({} bytes) changed",
                        messages[i].len()
                    );
                    done += 1;
                }
                other => panic!("client: {other:?}"),
            }
        }
    }
    ep
}

/// What a run varies.
#[derive(Debug, Clone, Copy)]
struct Case {
    /// The XDP program in native mode, else generic.
    native: bool,
    /// The links' MTU (the core's is 28 less); over 4096 - 14, packets span frames.
    mtu: u32,
}

const NATIVE: Case = Case {
    native: true,
    mtu: 1500,
};

/// One run: the echo, then the checks both sides share. The client's and the server's
/// counters, or why AF_XDP or XDP cannot run here.
fn echo(net: &VethPair, seed_value: u64, case: Case) -> Result<(XdpStats, XdpStats), String> {
    let mut rng = Rng::new(seed_value);
    let mut sizes = vec![0, 1, 1398, 1399, 1400, 2047, 4096, 10_000, 65_535, 65_536];
    sizes.extend((0..40).map(|_| rng.range(0, 65_537)));
    let messages: Vec<Vec<u8>> = sizes.iter().map(|&n| rng.bytes(n)).collect();
    let deadline = Instant::now() + LIMIT;
    let (acked, stop) = (AtomicBool::new(false), AtomicBool::new(false));
    let (ready_tx, ready) = mpsc::channel();
    let (client, server, no_ports) = thread::scope(|s| {
        let server = s.spawn(|| {
            let bound = net
                .b
                .enter()
                .and_then(|()| bind(&net.b_if, SERVER, SERVER_MAC, case, pool()));
            match bound {
                Ok(ep) => {
                    let _ = ready_tx.send(Ok(()));
                    Some(serve(ep, messages.len(), &acked, &stop, deadline))
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    None
                }
            }
        });
        let bound: Result<(), String> = ready
            .recv_timeout(LIMIT)
            .unwrap_or_else(|_| Err("the server thread did not report".into()));
        if let Err(reason) = bound {
            stop.store(true, Ordering::Relaxed);
            let _ = server.join();
            return Err(reason);
        }
        let client = s.spawn(|| {
            net.a.enter().expect("enter the client's namespace");
            let pool = pool();
            let ep = bind(&net.a_if, CLIENT, CLIENT_MAC, case, pool.clone())
                .expect("client bind (the server's worked)");
            call(ep, &pool, &messages, &acked, deadline)
        });
        let client = client.join();
        // Both sockets still open: no datagram to either port may have reached a kernel's UDP
        // stack (after one closes, the other's late acknowledgements would).
        let no_ports = [udp_no_ports(&net.a), udp_no_ports(&net.b)];
        // The programs pass everything else to the kernel: ARP, and UDP to another port.
        let passed = s.spawn(|| kernel_datagram_passes(net)).join();
        stop.store(true, Ordering::Relaxed);
        match (client, server.join()) {
            (Ok(c), Ok(Some(s))) => {
                passed.unwrap_or_else(|p| std::panic::resume_unwind(p));
                Ok((c.stats(), s, no_ports))
            }
            (Err(p), _) | (_, Err(p)) => std::panic::resume_unwind(p),
            (Ok(_), Ok(None)) => unreachable!("the server bound"),
        }
    })?;
    eprintln!("client: {client:?}\nserver: {server:?}");
    for (who, s, no_ports) in [("client", &client, no_ports[0]), ("server", &server, no_ports[1])] {
        eprintln!(
            "{who}: {} mode, XDP {}",
            if s.zero_copy { "zero-copy" } else { "copy" },
            if s.native { "native (DRV)" } else { "generic (SKB)" }
        );
        assert_eq!(
            s.native, case.native,
            "{who}: native XDP on veth, or generic if asked"
        );
        assert_eq!(s.endpoint.messages_received, messages.len() as u64, "{who}");
        assert_eq!(
            s.packets_refused, 0,
            "{who}: only our own frames are steered to the socket"
        );
        assert_eq!(
            no_ports, 0,
            "{who}: a datagram to our port reached the kernel's UDP stack"
        );
    }
    Ok((client, server))
}

#[test]
fn xdp_echo_between_namespaces() {
    const TEST: &str = "xdp_echo_between_namespaces";
    let net = match VethPair::new("xe", None, NATIVE.mtu) {
        Ok(net) => net,
        Err(reason) => return skip(TEST, &format!("no network namespaces: {reason}")),
    };
    if let Err(reason) = echo(&net, seed("FERRY_XDP_SEED", 0x0d9), NATIVE) {
        skip(TEST, &format!("AF_XDP or XDP unavailable: {reason}"));
    }
}

/// The fallback a driver without native XDP gets: the program in the generic (SKB) path.
#[test]
fn xdp_echo_in_generic_mode() {
    const TEST: &str = "xdp_echo_in_generic_mode";
    let net = match VethPair::new("xg", None, NATIVE.mtu) {
        Ok(net) => net,
        Err(reason) => return skip(TEST, &format!("no network namespaces: {reason}")),
    };
    let case = Case {
        native: false,
        ..NATIVE
    };
    if let Err(reason) = echo(&net, seed("FERRY_XDP_SEED", 0x6e7), case) {
        skip(TEST, &format!("AF_XDP or generic XDP unavailable: {reason}"));
    }
}

/// Jumbo frames (links of MTU 9000): every full packet spans three 4 KiB UMEM frames, sent
/// and received as multi-buffer packets (`XDP_USE_SG`, an `xdp.frags` program).
#[test]
fn xdp_echo_multi_buffer() {
    const TEST: &str = "xdp_echo_multi_buffer";
    let case = Case {
        native: true,
        mtu: 9000,
    };
    let net = match VethPair::new("xm", None, case.mtu) {
        Ok(net) => net,
        Err(reason) => return skip(TEST, &format!("no network namespaces: {reason}")),
    };
    match echo(&net, seed("FERRY_XDP_SEED", 0x9000), case) {
        Ok((client, server)) => {
            // 64 KiB in 8,899-byte packets (the core's 8,972 less its 73-byte header) is 8.
            assert!(
                client.packets_sent < 50 * 9,
                "jumbo packets, not 1,500-byte ones: {client:?}"
            );
            assert_eq!(server.packets_refused, 0);
        }
        Err(reason) => skip(TEST, &format!("AF_XDP multi-buffer unavailable: {reason}")),
    }
}

#[test]
fn xdp_echo_under_loss() {
    const TEST: &str = "xdp_echo_under_loss";
    let net = match VethPair::new("xl", Some(5), NATIVE.mtu) {
        Ok(net) => net,
        Err(reason) => return skip(TEST, &format!("no network namespaces or nftables: {reason}")),
    };
    match echo(&net, seed("FERRY_XDP_SEED", 0x1055), NATIVE) {
        Ok((client, server)) => assert!(
            client.endpoint.retransmits + server.endpoint.retransmits > 0,
            "5 % loss over about 2,000 packets and nothing sent again"
        ),
        Err(reason) => skip(TEST, &format!("AF_XDP or XDP unavailable: {reason}")),
    }
}
