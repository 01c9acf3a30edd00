//! A first measurement of the UDP driver: a 64-byte echo over loopback, 1 and 16 messages in
//! flight, one thread per side (each blocking in `poll` when it has nothing to do). Prints
//! calls per second and syscalls per call on each side. Not a benchmark harness (that is
//! `ferry bench`, later): one run, one machine, whatever else it is doing.
//!
//! ```text
//! cargo run --release -p ferry-dgram --example udp_echo [seconds per case, default 3]
//! ```

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_dgram::{Config, Event, SendError, UdpConfig, UdpEndpoint, UdpStats};
use ferry_transport::Meta;

const TICK: Duration = Duration::from_millis(50);
const SIZE: usize = 64;

fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })
    .expect("pool")
}

fn config() -> UdpConfig {
    UdpConfig {
        endpoint: Config {
            // 16 in flight on one session.
            window: 16,
            max_message_len: 1 << 20,
            ..Config::default()
        },
        ..UdpConfig::default()
    }
}

/// Echoes every message back (the received buffer itself) until `stop`; replies beyond the
/// session's window wait for acknowledgements.
fn serve(mut ep: UdpEndpoint, stop: Arc<AtomicBool>) -> UdpStats {
    let mut replies = VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        while let Some(e) = ep.poll_event() {
            if let Event::Message { session, meta, data } = e {
                replies.push_back((session, meta, data));
            }
        }
        while let Some((session, meta, data)) = replies.pop_front() {
            match ep.send(session, meta, data.clone()) {
                Ok(()) => {}
                Err(SendError::WindowFull { .. }) => {
                    replies.push_front((session, meta, data));
                    break;
                }
                Err(e) => panic!("reply: {e}"),
            }
        }
        ep.drive(TICK).expect("server drive");
    }
    ep.stats()
}

struct Run {
    calls: u64,
    elapsed: Duration,
    client: UdpStats,
    server: UdpStats,
}

fn run(in_flight: usize, duration: Duration) -> Run {
    let any: SocketAddr = (Ipv4Addr::LOCALHOST, 0).into();
    let server = UdpEndpoint::bind(any, config(), pool()).expect("bind server");
    let server_addr = server.local_addr().expect("server addr");
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let server = thread::spawn(move || serve(server, stop2));

    let client_pool = pool();
    let mut client = UdpEndpoint::bind(any, config(), client_pool.clone()).expect("bind client");
    let session = client.connect(server_addr).expect("connect");
    let payload = client_pool.copy_from(&[0x5a; SIZE]).expect("payload");
    // Warm up: the handshake and a first answer.
    client
        .send(session, Meta::new(1, 0), payload.clone())
        .expect("send");
    let mut outstanding = 1;
    while outstanding > 0 {
        client.drive(TICK).expect("client drive");
        while let Some(e) = client.poll_event() {
            if let Event::Message { .. } = e {
                outstanding -= 1;
            }
        }
    }
    let (client_before, start) = (client.stats(), Instant::now());
    let mut calls = 0u64;
    let mut id = 1;
    loop {
        let done = start.elapsed() >= duration;
        if done && outstanding == 0 {
            break;
        }
        while !done && outstanding < in_flight {
            client
                .send(session, Meta::new(1, id), payload.clone())
                .expect("send within the window");
            id += 1;
            outstanding += 1;
        }
        client.drive(TICK).expect("client drive");
        while let Some(e) = client.poll_event() {
            match e {
                Event::Message { data, .. } => {
                    assert_eq!(data.len(), SIZE);
                    outstanding -= 1;
                    calls += 1;
                }
                Event::Connected { .. } => {}
                other => panic!("client: {other:?}"),
            }
        }
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    let server = server.join().expect("server thread");
    let c = client.stats();
    Run {
        calls,
        elapsed,
        client: UdpStats {
            send_calls: c.send_calls - client_before.send_calls,
            recv_calls: c.recv_calls - client_before.recv_calls,
            poll_calls: c.poll_calls - client_before.poll_calls,
            datagrams_sent: c.datagrams_sent - client_before.datagrams_sent,
            datagrams_received: c.datagrams_received - client_before.datagrams_received,
            gso_entries: c.gso_entries - client_before.gso_entries,
            ..c
        },
        // The server's warm-up (one call) and its last wait are in its counts.
        server,
    }
}

fn per_call(n: u64, calls: u64) -> f64 {
    n as f64 / calls.max(1) as f64
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("seconds per case"))
        .unwrap_or(3);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "udp echo, {SIZE} B, loopback, {secs} s per case; load average at start: {}",
        load.trim()
    );
    for in_flight in [1, 16] {
        let r = run(in_flight, Duration::from_secs(secs));
        let (c, s) = (r.client, r.server);
        println!(
            "{in_flight:>2} in flight: {:>8.0} calls/s; syscalls per call: client {:.2} (sendmmsg {:.2}, recvmmsg {:.2}, poll {:.2}), \
             server {:.2} (sendmmsg {:.2}, recvmmsg {:.2}, poll {:.2}); datagrams per sendmmsg: client {:.2}, server {:.2}; \
             client: datagrams per recvmmsg {:.2}, GSO entries per sendmmsg {:.2}; gso {} gro {}",
            r.calls as f64 / r.elapsed.as_secs_f64(),
            per_call(c.syscalls(), r.calls),
            per_call(c.send_calls, r.calls),
            per_call(c.recv_calls, r.calls),
            per_call(c.poll_calls, r.calls),
            per_call(s.syscalls(), r.calls),
            per_call(s.send_calls, r.calls),
            per_call(s.recv_calls, r.calls),
            per_call(s.poll_calls, r.calls),
            c.datagrams_per_send(),
            s.datagrams_per_send(),
            c.datagrams_per_recv(),
            per_call(c.gso_entries, c.send_calls),
            c.gso,
            c.gro,
        );
    }
}
