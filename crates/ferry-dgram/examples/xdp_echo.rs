//! A first measurement of the AF_XDP driver beside the UDP driver, in one run: a 64-byte echo
//! between two network namespaces joined by a veth pair (created here, deleted at the end),
//! 1 and 16 messages in flight, one thread per side (each blocking in `poll` when it has
//! nothing to do). Prints calls per second and syscalls per call on each side, and the ratio
//! of AF_XDP's syscalls per call to UDP's. Not a benchmark harness (that is `ferry bench`):
//! one run, one machine, whatever else it is doing. Needs root.
//!
//! ```text
//! cargo run --release -p ferry-dgram --example xdp_echo [seconds per case, default 3]
//! ```

use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_dgram::frame::Mac;
use ferry_dgram::{Config, Event, SendError, SessionId, UdpConfig, UdpEndpoint, XdpConfig, XdpEndpoint};
use ferry_testkit::netns::{Netns, VethPair};
use ferry_transport::Meta;

const TICK: Duration = Duration::from_millis(50);
const SIZE: usize = 64;
// The client is host `a` of the pair, the server host `b`.
const CLIENT: &str = "10.252.0.1:7700";
const SERVER: &str = "10.252.0.2:7701";
const CLIENT_MAC: Mac = VethPair::A_MAC;
const SERVER_MAC: Mac = VethPair::B_MAC;

fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 64 << 20,
        huge_pages: false,
        ..PoolConfig::default()
    })
    .expect("pool")
}

fn core_config() -> Config {
    Config {
        // 16 in flight on one session.
        window: 16,
        max_message_len: 1 << 20,
        ..Config::default()
    }
}

/// What the echo needs of a driver.
trait Driver {
    fn drive(&mut self, timeout: Duration);
    fn poll_event(&mut self) -> Option<Event>;
    fn send(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), SendError>;
    /// Syscalls so far, and what they were.
    fn syscalls(&self) -> (u64, String);
}

impl Driver for UdpEndpoint {
    fn drive(&mut self, timeout: Duration) {
        UdpEndpoint::drive(self, timeout).expect("drive");
    }
    fn poll_event(&mut self) -> Option<Event> {
        UdpEndpoint::poll_event(self)
    }
    fn send(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), SendError> {
        UdpEndpoint::send(self, session, meta, data)
    }
    fn syscalls(&self) -> (u64, String) {
        let s = self.stats();
        (
            s.syscalls(),
            format!(
                "sendmmsg {} recvmmsg {} poll {}",
                s.send_calls, s.recv_calls, s.poll_calls
            ),
        )
    }
}

impl Driver for XdpEndpoint {
    fn drive(&mut self, timeout: Duration) {
        XdpEndpoint::drive(self, timeout).expect("drive");
    }
    fn poll_event(&mut self) -> Option<Event> {
        XdpEndpoint::poll_event(self)
    }
    fn send(&mut self, session: SessionId, meta: Meta, data: SharedBuf) -> Result<(), SendError> {
        XdpEndpoint::send(self, session, meta, data)
    }
    fn syscalls(&self) -> (u64, String) {
        let s = self.stats();
        let mode = match (s.zero_copy, s.native) {
            (true, true) => "zero-copy, native XDP",
            (false, true) => "copy mode, native XDP",
            (true, false) => "zero-copy, generic XDP",
            (false, false) => "copy mode, generic XDP",
        };
        (
            s.syscalls(),
            format!("sendto {} poll {}; {mode}", s.kicks, s.poll_calls),
        )
    }
}

/// Echoes every message back until `stop`; replies beyond the window wait. Its syscalls.
fn serve(ep: &mut dyn Driver, stop: &AtomicBool) -> (u64, String) {
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
        ep.drive(TICK);
    }
    ep.syscalls()
}

/// Calls with `in_flight` outstanding for `duration` (after one warm-up call): calls, time,
/// and the syscalls counted in that window.
fn call(
    ep: &mut dyn Driver,
    session: SessionId,
    payload: &SharedBuf,
    in_flight: usize,
    duration: Duration,
) -> (u64, Duration, u64) {
    let wait_for = |ep: &mut dyn Driver, outstanding: &mut usize, calls: &mut u64| {
        ep.drive(TICK);
        while let Some(e) = ep.poll_event() {
            match e {
                Event::Message { data, .. } => {
                    assert_eq!(data.len(), SIZE);
                    *outstanding -= 1;
                    *calls += 1;
                }
                Event::Connected { .. } => {}
                other => panic!("client: {other:?}"),
            }
        }
    };
    ep.send(session, Meta::new(1, 0), payload.clone()).expect("send");
    let (mut outstanding, mut calls) = (1, 0);
    while outstanding > 0 {
        wait_for(ep, &mut outstanding, &mut calls);
    }
    let (before, start) = (ep.syscalls().0, Instant::now());
    let (mut calls, mut id) = (0, 1);
    loop {
        let done = start.elapsed() >= duration;
        if done && outstanding == 0 {
            break;
        }
        while !done && outstanding < in_flight {
            ep.send(session, Meta::new(1, id), payload.clone())
                .expect("send within the window");
            id += 1;
            outstanding += 1;
        }
        wait_for(ep, &mut outstanding, &mut calls);
    }
    (calls, start.elapsed(), ep.syscalls().0 - before)
}

/// One case: the server in `b`, the client in `a`. Calls per second and syscalls per call on
/// each side, with the server's breakdown.
fn case(
    a: &Netns,
    b: &Netns,
    xdp: Option<(&str, &str)>,
    in_flight: usize,
    duration: Duration,
) -> (f64, f64, f64, String) {
    let stop = AtomicBool::new(false);
    let server_addr: SocketAddrV4 = SERVER.parse().expect("address");
    let (ready_tx, ready) = std::sync::mpsc::channel();
    thread::scope(|s| {
        let server = s.spawn(|| {
            b.enter().expect("enter b");
            let mut ep: Box<dyn Driver> = match xdp {
                Some((_, server_if)) => {
                    let mut config = XdpConfig::new(server_if, 0, server_addr, SERVER_MAC);
                    config.endpoint = core_config();
                    Box::new(XdpEndpoint::bind(config, pool()).expect("bind the AF_XDP server"))
                }
                None => {
                    let config = UdpConfig {
                        endpoint: core_config(),
                        ..UdpConfig::default()
                    };
                    Box::new(
                        UdpEndpoint::bind(server_addr.into(), config, pool()).expect("bind the UDP server"),
                    )
                }
            };
            ready_tx.send(()).expect("ready");
            serve(ep.as_mut(), &stop)
        });
        ready.recv().expect("the server is ready");
        let client = s.spawn(|| {
            a.enter().expect("enter a");
            let pool = pool();
            let payload = pool.copy_from(&[0x5a; SIZE]).expect("payload");
            let client_addr: SocketAddrV4 = CLIENT.parse().expect("address");
            match xdp {
                Some((client_if, _)) => {
                    let mut config = XdpConfig::new(client_if, 0, client_addr, CLIENT_MAC);
                    config.endpoint = core_config();
                    let mut ep = XdpEndpoint::bind(config, pool).expect("bind the AF_XDP client");
                    let session = ep.connect(server_addr, SERVER_MAC).expect("connect");
                    call(&mut ep, session, &payload, in_flight, duration)
                }
                None => {
                    let config = UdpConfig {
                        endpoint: core_config(),
                        ..UdpConfig::default()
                    };
                    let mut ep =
                        UdpEndpoint::bind(client_addr.into(), config, pool).expect("bind the UDP client");
                    let session = ep.connect(server_addr.into()).expect("connect");
                    call(&mut ep, session, &payload, in_flight, duration)
                }
            }
        });
        let (calls, elapsed, client_syscalls) = client.join().expect("client");
        stop.store(true, Ordering::Relaxed);
        // The server's warm-up call and its last wait are in its counts.
        let (server_syscalls, what) = server.join().expect("server");
        let per = |n: u64| n as f64 / calls.max(1) as f64;
        (
            calls as f64 / elapsed.as_secs_f64(),
            per(client_syscalls),
            per(server_syscalls),
            what,
        )
    })
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("seconds per case"))
        .unwrap_or(3);
    let net = VethPair::new("xdpecho", None, 1500).expect("two namespaces joined by veth (root needed)");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "echo, {SIZE} B, veth between two namespaces, {secs} s per case; load average at start: {}",
        load.trim()
    );
    let duration = Duration::from_secs(secs);
    for in_flight in [1, 16] {
        let udp = case(&net.a, &net.b, None, in_flight, duration);
        let xdp = case(&net.a, &net.b, Some((&net.a_if, &net.b_if)), in_flight, duration);
        for (name, (rate, client, server, what)) in [("udp", &udp), ("xdp", &xdp)] {
            println!(
                "{in_flight:>2} in flight, {name}: {rate:>8.0} calls/s; syscalls per call: client {client:.2}, server {server:.2} (server's: {what})"
            );
        }
        println!(
            "{in_flight:>2} in flight: AF_XDP / UDP syscalls per call: client {:.2}, server {:.2}; calls/s {:.2}",
            xdp.1 / udp.1,
            xdp.2 / udp.2,
            xdp.0 / udp.0
        );
    }
}
