//! The AF_XDP driver across a veth pair between two network namespaces this test creates,
//! with native XDP on both ends: messages of 0 B to 64 KiB echoed, each answered exactly once
//! and intact. One thread per endpoint, each moved into its namespace (`setns`); the
//! namespaces (and so the veth pair) are deleted afterwards, also when the test fails. Without
//! root, `ip`, AF_XDP or XDP the test prints SKIPPED (or fails, with
//! `FERRY_REQUIRE_KERNEL_FEATURES` set).

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_dgram::frame::Mac;
use ferry_dgram::{Config, Event, SendError, XdpConfig, XdpEndpoint, XdpStats};
use ferry_testkit::netns::{Netns, ip};
use ferry_testkit::tools::skip;
use ferry_testkit::{Rng, seed};
use ferry_transport::Meta;

const TEST: &str = "xdp_echo_between_namespaces";
const CLIENT: &str = "10.252.0.1:7600";
const SERVER: &str = "10.252.0.2:7601";
const CLIENT_MAC: Mac = [0x02, 0xfe, 0, 0, 0, 1];
const SERVER_MAC: Mac = [0x02, 0xfe, 0, 0, 0, 2];
/// The whole test's bound: every loop below gives up (and fails) at it.
const LIMIT: Duration = Duration::from_secs(120);

/// Two namespaces joined by a veth pair (MACs set, addressed, up): the namespaces and the
/// interface names.
fn setup() -> Result<(Netns, Netns, String, String), String> {
    let a = Netns::create("xdpa")?;
    let b = Netns::create("xdpb")?;
    let pid = std::process::id();
    let (va, vb) = (format!("fxa{pid}"), format!("fxb{pid}"));
    ip(&[
        "link", "add", &va, "netns", &a.name, "type", "veth", "peer", "name", &vb, "netns", &b.name,
    ])?;
    for (ns, dev, addr, mac) in [(&a, &va, CLIENT, CLIENT_MAC), (&b, &vb, SERVER, SERVER_MAC)] {
        let mac = mac.map(|b| format!("{b:02x}")).join(":");
        let ip_only = addr.split(':').next().expect("ip:port");
        ns.exec("ip", &["link", "set", dev, "address", &mac])?;
        ns.exec("ip", &["addr", "add", &format!("{ip_only}/24"), "dev", dev])?;
        ns.exec("ip", &["link", "set", dev, "up"])?;
    }
    Ok((a, b, va, vb))
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

fn bind(ifname: &str, local: &str, mac: Mac, pool: Pool) -> Result<XdpEndpoint, String> {
    let mut config = XdpConfig::new(ifname, 0, local.parse().expect("address"), mac);
    config.endpoint = Config {
        max_message_len: 1 << 20,
        ..Config::default()
    };
    XdpEndpoint::bind(config, pool).map_err(|e| e.to_string())
}

/// Echoes every message until `stop`; its counters at the end.
fn serve(mut ep: XdpEndpoint, stop: &AtomicBool, deadline: Instant) -> XdpStats {
    while !stop.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "server: still running at the limit");
        ep.drive(Duration::from_millis(20)).expect("server drive");
        while let Some(event) = ep.poll_event() {
            if let Event::Message { session, meta, data } = event {
                ep.send(session, meta, data).expect("echo");
            }
        }
    }
    ep.stats()
}

/// Sends every message (at most 8 waiting for their echo), checks every echo; its counters.
fn call(mut ep: XdpEndpoint, pool: &Pool, messages: &[Vec<u8>], deadline: Instant) -> XdpStats {
    let server: SocketAddrV4 = SERVER.parse().expect("address");
    let session = ep.connect(server, SERVER_MAC).expect("connect");
    let mut answers = vec![0u32; messages.len()];
    let (mut next, mut done) = (0, 0);
    while done < messages.len() {
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
    ep.stats()
}

/// See the file's docs.
#[test]
fn xdp_echo_between_namespaces() {
    let (a, b, va, vb) = match setup() {
        Ok(x) => x,
        Err(reason) => return skip(TEST, &format!("no network namespaces: {reason}")),
    };
    let mut rng = Rng::new(seed("FERRY_XDP_SEED", 0x0d9));
    let mut sizes = vec![0, 1, 1414, 1415, 1416, 2047, 4096, 10_000, 65_535, 65_536];
    sizes.extend((0..40).map(|_| rng.range(0, 65_537)));
    let messages: Vec<Vec<u8>> = sizes.iter().map(|&n| rng.bytes(n)).collect();
    let deadline = Instant::now() + LIMIT;
    let stop = AtomicBool::new(false);
    let (ready_tx, ready) = mpsc::channel();
    let outcome = thread::scope(|s| {
        let server = s.spawn(|| {
            // Stop the client's wait whatever happens here.
            let bound = b.enter().and_then(|()| bind(&vb, SERVER, SERVER_MAC, pool()));
            match bound {
                Ok(ep) => {
                    let _ = ready_tx.send(Ok(()));
                    Some(serve(ep, &stop, deadline))
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
            a.enter().expect("enter namespace a");
            let pool = pool();
            let ep = bind(&va, CLIENT, CLIENT_MAC, pool.clone()).expect("client bind (the server's worked)");
            call(ep, &pool, &messages, deadline)
        });
        let client = client.join();
        stop.store(true, Ordering::Relaxed);
        let server = server.join();
        match (client, server) {
            (Ok(c), Ok(Some(s))) => Ok((c, s)),
            (Err(p), _) | (_, Err(p)) => std::panic::resume_unwind(p),
            (Ok(_), Ok(None)) => unreachable!("the server bound"),
        }
    });
    let (client, server) = match outcome {
        Ok(stats) => stats,
        Err(reason) => return skip(TEST, &format!("AF_XDP or XDP unavailable: {reason}")),
    };
    eprintln!("client: {client:?}\nserver: {server:?}");
    for (who, s) in [("client", &client), ("server", &server)] {
        eprintln!(
            "{who}: {} mode, XDP {}",
            if s.zero_copy { "zero-copy" } else { "copy" },
            if s.native { "native (DRV)" } else { "generic (SKB)" }
        );
        assert!(s.native, "{who}: native XDP on veth");
        assert!(
            s.frames_sent > 0 && s.frames_received > 0,
            "{who}: frames both ways"
        );
        assert_eq!(
            s.frames_refused, 0,
            "{who}: only our own frames are steered to the socket"
        );
    }
    assert_eq!(server.endpoint.messages_received, messages.len() as u64);
    assert_eq!(client.endpoint.messages_received, messages.len() as u64);
    drop((a, b));
}
