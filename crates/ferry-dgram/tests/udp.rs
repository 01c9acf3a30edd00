//! The UDP driver over real loopback sockets: an echo server on its own thread, a client on
//! the test's, messages of 0 B to 256 KiB each answered exactly once and intact, with GSO and
//! GRO each on and forced off; batching counted; a stranger's garbage dropped and counted.
//! A kernel without GSO or GRO skips those cases with the reason (and fails under
//! `FERRY_REQUIRE_KERNEL_FEATURES`).

use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_dgram::{Config, Event, SendError, SessionError, SessionId, UdpConfig, UdpEndpoint, UdpStats};
use ferry_testkit::tools::skip;
use ferry_testkit::{DEADLINE, Guarded, Rng, pool, wait_until};
use ferry_transport::Meta;

/// Message sizes around the segment boundaries (1399 bytes per packet at the default MTU)
/// up to 256 KiB (188 packets).
const SIZES: [usize; 11] = [0, 1, 64, 1398, 1399, 1400, 2798, 4096, 65_536, 100_000, 256 << 10];

/// How long a blocking `drive` waits at most: a loop's tick, not a timing assumption (every
/// wait ends early on a datagram).
const TICK: Duration = Duration::from_millis(20);

fn localhost() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 0).into()
}

fn udp_config(gso: bool, gro: bool) -> UdpConfig {
    UdpConfig {
        endpoint: Config {
            max_message_len: 1 << 20,
            ..Config::default()
        },
        gso,
        gro,
        ..UdpConfig::default()
    }
}

/// Binds an endpoint on 127.0.0.1; `None` (after a printed skip) if the kernel lacks an
/// offload asked for.
fn bind(test: &str, gso: bool, gro: bool) -> Option<UdpEndpoint> {
    bind_at(test, localhost(), gso, gro)
}

fn bind_at(test: &str, addr: SocketAddr, gso: bool, gro: bool) -> Option<UdpEndpoint> {
    let ep = UdpEndpoint::bind(addr, udp_config(gso, gro), pool()).expect("bind");
    let s = ep.stats();
    if gso && !s.gso {
        skip(test, "the kernel refused a UDP_SEGMENT send (no UDP GSO)");
        return None;
    }
    if gro && !s.gro {
        skip(test, "the kernel refused the UDP_GRO socket option (no UDP GRO)");
        return None;
    }
    assert_eq!((s.gso, s.gro), (gso, gro), "a forced fallback is used");
    Some(ep)
}

/// An echo server at `addr` and a client with a session to it; `None` (after a printed skip)
/// if the kernel lacks an offload asked for.
fn pair(test: &str, addr: SocketAddr, gso: bool, gro: bool) -> Option<(Server, UdpEndpoint, SessionId)> {
    let server = Server::start(bind_at(test, addr, gso, gro)?);
    let mut client = bind_at(test, addr, gso, gro)?;
    let session = client.connect(server.addr).expect("connect");
    Some((server, client, session))
}

/// An echo server on its own thread: every message is sent back on its session, the received
/// pool buffer itself (no copy). Publishes its counters after every step; stops when told.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<UdpStats>>,
    thread: Guarded<UdpStats>,
}

impl Server {
    fn start(mut ep: UdpEndpoint) -> Server {
        let addr = ep.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(ep.stats()));
        let (stop2, stats2) = (stop.clone(), stats.clone());
        let thread = ferry_testkit::spawn("echo server", move || {
            let mut replies = VecDeque::new();
            while !stop2.load(Ordering::Relaxed) {
                while let Some(e) = ep.poll_event() {
                    match e {
                        Event::Message { session, meta, data } => replies.push_back((session, meta, data)),
                        Event::Connected { .. } => {}
                        other => panic!("server: unexpected {other:?}"),
                    }
                }
                // Replies beyond the session's window wait for acknowledgements.
                while let Some((session, meta, data)) = replies.pop_front() {
                    match ep.send(session, meta, data.clone()) {
                        Ok(()) => {}
                        Err(SendError::WindowFull { .. }) => {
                            replies.push_front((session, meta, data));
                            break;
                        }
                        Err(e) => panic!("server: reply: {e}"),
                    }
                }
                ep.drive(TICK).expect("server drive");
                *stats2.lock().unwrap() = ep.stats();
            }
            ep.stats()
        });
        Server {
            addr,
            stop,
            stats,
            thread,
        }
    }

    fn stats(&self) -> UdpStats {
        *self.stats.lock().unwrap()
    }

    fn stop(self) -> UdpStats {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join()
    }
}

/// Sends one message of each size on `session` (at most the window in flight) and checks
/// every answer arrives exactly once, with the bytes sent.
fn echo(client: &mut UdpEndpoint, session: SessionId, sizes: &[usize], rng: &mut Rng) {
    let window = Config::default().window;
    let messages: Vec<Vec<u8>> = sizes.iter().map(|&n| rng.bytes(n)).collect();
    let mut answered = vec![false; messages.len()];
    let (mut next, mut in_flight, mut done) = (0, 0, 0);
    let deadline = Instant::now() + DEADLINE;
    while done < messages.len() {
        assert!(
            Instant::now() < deadline,
            "{done} of {} answered within {DEADLINE:?}; stats {:?}",
            messages.len(),
            client.stats()
        );
        while next < messages.len() && in_flight < window {
            let data = pool().copy_from(&messages[next]).expect("pool");
            client
                .send(session, Meta::new(7, next as u64), data)
                .expect("send within the window");
            (next, in_flight) = (next + 1, in_flight + 1);
        }
        client.drive(TICK).expect("client drive");
        while let Some(e) = client.poll_event() {
            match e {
                Event::Message {
                    session: s,
                    meta,
                    data,
                } => {
                    assert_eq!(s, session);
                    let i = meta.request_id as usize;
                    assert!(
                        i < messages.len() && !answered[i],
                        "answer {i} unexpected or twice"
                    );
                    assert_eq!(meta.kind, 7);
                    assert!(
                        data[..] == messages[i][..],
                        "answer {i} ({} B) differs",
                        messages[i].len()
                    );
                    answered[i] = true;
                    (in_flight, done) = (in_flight - 1, done + 1);
                }
                Event::Connected { .. } => {}
                other => panic!("client: unexpected {other:?}; {:?}", client.stats()),
            }
        }
    }
}

/// The whole echo with GSO and GRO as given: every size answered once and intact; the
/// offload counters show which path ran.
fn echo_with(test: &str, gso: bool, gro: bool) {
    let Some((server, mut client, session)) = pair(test, localhost(), gso, gro) else {
        return;
    };
    let mut rng = Rng::new(ferry_testkit::seed("FERRY_UDP_SEED", 33));
    echo(&mut client, session, &SIZES, &mut rng);
    let s = server.stop();
    let c = client.stats();
    eprintln!("{test}: client {c:?}\nserver {s:?}");
    assert_eq!(c.endpoint.messages_received, SIZES.len() as u64);
    assert_eq!(s.endpoint.messages_received, SIZES.len() as u64);
    for st in [c, s] {
        // Loopback neither corrupts nor truncates: a malformed packet is the driver's bug
        // (a datagram cut or joined wrongly), which retransmission would otherwise hide.
        assert_eq!((st.endpoint.drops.malformed, st.truncated), (0, 0), "{st:?}");
        assert_eq!(st.gso_entries > 0, gso, "GSO entries sent iff GSO is on: {st:?}");
        if !gro {
            assert_eq!(st.gro_buffers, 0, "no coalesced buffers without GRO");
        }
    }
    if gso && gro {
        // On loopback a GSO send reaches a GRO socket whole: the receiver splits it.
        assert!(
            c.gro_buffers > 0 && s.gro_buffers > 0,
            "GRO buffers split: {c:?} {s:?}"
        );
    }
}

#[test]
fn echo_gso_on_gro_on() {
    echo_with("echo_gso_on_gro_on", true, true);
}

#[test]
fn echo_gso_on_gro_off() {
    echo_with("echo_gso_on_gro_off", true, false);
}

#[test]
fn echo_gso_off_gro_on() {
    echo_with("echo_gso_off_gro_on", false, true);
}

#[test]
fn echo_gso_off_gro_off() {
    echo_with("echo_gso_off_gro_off", false, false);
}

/// The same over IPv6 loopback (the other socket address layout the syscalls convert).
#[test]
fn echo_over_ipv6() {
    let test = "echo_over_ipv6";
    let addr: SocketAddr = (Ipv6Addr::LOCALHOST, 0).into();
    if UdpSocket::bind(addr).is_err() {
        skip(test, "no IPv6 loopback address");
        return;
    }
    let Some((server, mut client, session)) = pair(test, addr, true, true) else {
        return;
    };
    echo(&mut client, session, &SIZES, &mut Rng::new(6));
    let s = server.stop();
    assert_eq!(s.endpoint.messages_received, SIZES.len() as u64);
    let c = client.stats();
    assert_eq!(
        c.endpoint.drops.malformed + s.endpoint.drops.malformed,
        0,
        "{c:?} {s:?}"
    );
}

/// Without GSO, one `sendmmsg` carries many datagrams: a 256 KiB message's first 32 packets
/// (the credits) leave in one call.
#[test]
fn sendmmsg_batches_several_datagrams_per_call() {
    let test = "sendmmsg_batches_several_datagrams_per_call";
    let Some((server, mut client, session)) = pair(test, localhost(), false, false) else {
        return;
    };
    echo(&mut client, session, &[256 << 10], &mut Rng::new(1));
    let s = server.stop();
    let c = client.stats();
    eprintln!(
        "datagrams per sendmmsg: client {:.1}, server {:.1}; per recvmmsg: client {:.1}, server {:.1}",
        c.datagrams_per_send(),
        s.datagrams_per_send(),
        c.datagrams_per_recv(),
        s.datagrams_per_recv()
    );
    assert_eq!(c.gso_entries + s.gso_entries, 0);
    // 186 data packets each way, and the handshake and acknowledgements besides.
    assert!(c.datagrams_sent >= 187 && s.datagrams_sent >= 186);
    assert!(c.send_calls < c.datagrams_sent, "client batches: {c:?}");
    assert!(s.send_calls < s.datagrams_sent, "server batches: {s:?}");
}

/// Datagrams from a third socket that are not packets are dropped and counted; the session
/// goes on.
#[test]
fn garbage_from_a_stranger_is_dropped_and_counted() {
    let test = "garbage_from_a_stranger_is_dropped_and_counted";
    let Some((server, mut client, session)) = pair(test, localhost(), false, false) else {
        return;
    };
    let mut rng = Rng::new(2);
    echo(&mut client, session, &SIZES[..6], &mut rng);

    let stranger = UdpSocket::bind(localhost()).expect("stranger");
    stranger
        .send_to(b"not a ferry packet", server.addr)
        .expect("garbage");
    stranger.send_to(&[], server.addr).expect("empty datagram");
    // Longer than the MTU: truncated by the receive buffer (no GRO here), dropped and counted.
    stranger
        .send_to(&[0; 2000], server.addr)
        .expect("oversized datagram");
    wait_until("the server to count the garbage", DEADLINE, || {
        let s = server.stats();
        s.endpoint.drops.malformed == 2 && s.truncated == 1
    });

    echo(&mut client, session, &SIZES[6..], &mut rng);
    let s = server.stop();
    assert_eq!((s.endpoint.drops.malformed, s.truncated), (2, 1), "{s:?}");
    assert_eq!(s.endpoint.messages_received, SIZES.len() as u64);
    assert_eq!(client.stats().endpoint.messages_received, SIZES.len() as u64);
}

/// The configuration's batch is checked.
#[test]
fn batch_out_of_range_is_refused() {
    for batch in [0, 65] {
        let config = UdpConfig {
            batch,
            ..UdpConfig::default()
        };
        let err = UdpEndpoint::bind(localhost(), config, pool())
            .err()
            .expect("refused");
        assert!(err.to_string().contains("batch"), "{err}");
    }
}

/// `drive(Duration::ZERO)` never waits: on an endpoint with nothing to do it looks at the
/// socket once and returns.
#[test]
fn drive_with_zero_timeout_never_waits() {
    ferry_testkit::within("drive(ZERO) on an idle endpoint", || {
        let mut ep = UdpEndpoint::bind(localhost(), udp_config(false, false), pool()).expect("bind");
        for _ in 0..3 {
            ep.drive(Duration::ZERO).expect("drive");
        }
        let s = ep.stats();
        assert_eq!((s.poll_calls, s.recv_calls, s.send_calls), (0, 3, 0), "{s:?}");
        assert!(ep.poll_event().is_none());
    });
}

/// A blocking `drive` wakes for the core's timers: a Connect to a socket that never answers
/// is sent again on each retransmission timeout and the session given up after
/// `max_timeouts`, though every `drive` was allowed an hour.
#[test]
fn a_blocking_drive_wakes_for_the_retransmission_timer() {
    ferry_testkit::within("drive against a silent peer", || {
        let silent = UdpSocket::bind(localhost()).expect("silent peer");
        let mut config = udp_config(false, false);
        config.endpoint.max_timeouts = 2;
        config.endpoint.rto_initial = Duration::from_millis(10);
        let mut ep = UdpEndpoint::bind(localhost(), config, pool()).expect("bind");
        let session = ep.connect(silent.local_addr().expect("addr")).expect("connect");
        let event = loop {
            ep.drive(Duration::from_secs(3600)).expect("drive");
            if let Some(e) = ep.poll_event() {
                break e;
            }
        };
        assert!(
            matches!(event, Event::SessionClosed { session: s, error: SessionError::Unresponsive, .. } if s == session),
            "{event:?}"
        );
        assert_eq!(ep.stats().endpoint.timeouts, 3);
        // The first Connect and one per timeout but the last, all already on the socket.
        silent.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0; 2048];
        let connects = std::iter::from_fn(|| silent.recv_from(&mut buf).ok()).count();
        assert_eq!(connects, 3);
    });
}

/// Real loss: the server's receive buffer holds only a few datagrams, so the kernel drops
/// most of every burst; retransmission recovers and every message is still answered once,
/// intact, with and without the offloads.
#[test]
fn kernel_drops_at_a_small_receive_buffer_are_recovered() {
    let test = "kernel_drops_at_a_small_receive_buffer_are_recovered";
    for (gso, gro) in [(false, false), (true, true)] {
        let mut config = udp_config(gso, gro);
        // The kernel's floor (about 4.6 KB here): two or three datagrams.
        config.socket_buffer = 1;
        let server = UdpEndpoint::bind(localhost(), config, pool()).expect("bind");
        if (server.stats().gso, server.stats().gro) != (gso, gro) {
            skip(test, "the kernel lacks UDP GSO or GRO");
            continue;
        }
        let Some(mut client) = bind(test, gso, gro) else {
            return;
        };
        let server = Server::start(server);
        let session = client.connect(server.addr).expect("connect");
        echo(
            &mut client,
            session,
            &[100_000, 256 << 10, 64, 100_000],
            &mut Rng::new(4),
        );
        let s = server.stop();
        let c = client.stats();
        eprintln!("gso {gso} gro {gro}: client {c:?}\nserver {s:?}");
        if !gso {
            // 32 datagrams in one call against room for two or three. (With GSO a burst is
            // one buffer, which the kernel takes whole when the queue is empty: drops then
            // depend on the receiver's speed.)
            assert!(c.endpoint.retransmits > 0, "the client's bursts met drops: {c:?}");
        }
        assert_eq!(s.endpoint.messages_received, 4);
    }
}

/// A GSO send the kernel refuses at run time falls back for good: in a network namespace
/// whose loopback has a 1280-byte MTU, datagrams of 1472 bytes pass the bind-time probe
/// (one-byte segments) but not a real `UDP_SEGMENT` send (the segment exceeds the route's
/// MTU: `EMSGSIZE` on Linux 6.18). The driver gives GSO up and sends them one by one (the kernel fragments
/// them); every message is answered once, and nothing was dropped on the way.
#[test]
fn gso_refused_at_run_time_falls_back_to_one_datagram_per_entry() {
    let test = "gso_refused_at_run_time_falls_back_to_one_datagram_per_entry";
    let ns = match ferry_testkit::netns::Netns::create("dgram-mtu") {
        Ok(ns) => ns,
        Err(e) => return skip(test, &format!("no network namespace: {e}")),
    };
    if let Err(e) = ns.exec("ip", &["link", "set", "lo", "mtu", "1280", "up"]) {
        return skip(test, &format!("cannot set up the namespace's loopback: {e}"));
    }
    ferry_testkit::within(test, move || {
        ns.enter().expect("enter the namespace");
        let Some((server, mut client, session)) = pair(test, localhost(), true, false) else {
            return;
        };
        echo(&mut client, session, &[5000, 64, 100_000], &mut Rng::new(5));
        let s = server.stop();
        let c = client.stats();
        eprintln!("client {c:?}\nserver {s:?}");
        assert!(!c.gso && !s.gso, "GSO given up on both sides");
        assert_eq!((c.gso_entries, s.gso_entries), (0, 0));
        assert_eq!((c.send_errors, s.send_errors), (0, 0));
        assert_eq!(s.endpoint.messages_received, 3);
        drop(ns);
    });
}
