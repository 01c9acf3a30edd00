//! Each of the server's connection limits at its edge (`ConnLimits`, the TLS and
//! shared-memory handshake timeouts): the connection past it is closed cleanly and counted by
//! reason, and the server goes on serving the ones within it.

mod common;
#[path = "tls_support/mod.rs"]
mod tls_support;

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::{RAW, Scratch, TestService};
use ferry_rpc::{Channel, ChannelConfig, Closed, ConnConfig, ConnLimits, LoopConfig, Server, Services};
use ferry_testkit::load::read_until_closed;
use ferry_testkit::{DEADLINE, wait_until};
use ferry_transport::{Payload, Received};

fn server(scratch: &Scratch, limits: ConnLimits, handshake: Duration) -> Server {
    let mut conn = tls_support::with_tls(ConnConfig::default());
    conn.tls_server.as_mut().expect("set").handshake_timeout = handshake;
    conn.shm.handshake_timeout = handshake;
    let services = Services::builder()
        .service(TestService::default())
        .expect("add")
        .workers(1)
        .build()
        .expect("services");
    Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen("tls://127.0.0.1:0")
        .listen(&scratch.shm("limits"))
        .loops(2)
        .config(LoopConfig {
            conn,
            connections: limits,
            ..LoopConfig::default()
        })
        .start()
        .expect("server starts")
}

fn addr(server: &Server, i: usize) -> String {
    server.addrs()[i].to_string()
}

fn channel(addr: &str) -> Channel {
    let config = ChannelConfig {
        conn: tls_support::with_tls(ConnConfig::default()),
        ..ChannelConfig::default()
    };
    Channel::connect_with(addr, config).expect("connect")
}

fn echo(ch: &Channel) {
    let r = ch.call_payload(RAW, Payload::Bytes(b"limit")).expect("served");
    assert_eq!(r.frame().bytes(), Some(&b"limit"[..]));
}

fn closed(server: &Server, why: Closed) -> u64 {
    server.services().metrics().closed_count(why)
}

/// `max_connections` = 3 over two loops: three sessions (TCP, TLS, shared memory) are served;
/// the fourth of each transport is closed at once and counted; once one leaves, a new one is
/// served.
#[test]
fn the_connection_past_max_connections_is_closed_and_counted() {
    let scratch = Scratch::new("limits-max");
    let limits = ConnLimits {
        max_connections: 3,
        ..ConnLimits::default()
    };
    let s = server(&scratch, limits, Duration::from_secs(10));
    let metrics = s.services().metrics();
    let held: Vec<Channel> = (0..3).map(|i| channel(&addr(&s, i))).collect();
    held.iter().for_each(echo);
    assert_eq!(metrics.connections(), 3);

    let tcp = TcpStream::connect(addr(&s, 0).trim_start_matches("tcp://")).expect("connect");
    tcp.set_read_timeout(Some(DEADLINE)).expect("timeout");
    read_until_closed(tcp);
    wait_until("refusal 1 counted", DEADLINE, || closed(&s, Closed::Limit) == 1);
    let shm = UnixStream::connect(addr(&s, 2).trim_start_matches("shm://")).expect("connect");
    shm.set_read_timeout(Some(DEADLINE)).expect("timeout");
    read_until_closed(shm);
    wait_until("refusal 2 counted", DEADLINE, || closed(&s, Closed::Limit) == 2);
    // A Ferry client over the limit fails to connect (shared memory: the setup is closed) or
    // its first call fails (TCP), UNAVAILABLE either way, never a hang.
    assert!(Channel::connect(&addr(&s, 2)).is_err(), "shm over the limit");
    wait_until("refusal 3 counted", DEADLINE, || closed(&s, Closed::Limit) == 3);
    held.iter().for_each(echo);

    drop(held);
    wait_until("the held sessions counted out", DEADLINE, || {
        metrics.connections() == 0
    });
    let again = channel(&addr(&s, 0));
    echo(&again);
    assert_eq!(closed(&s, Closed::Limit), 3, "within the limit again");
    drop(again);
    s.shutdown(Duration::from_secs(1));
}

/// `idle_timeout`: a session that says nothing past it is closed and counted; one that calls
/// more often than it stays open.
#[test]
fn a_session_idle_past_the_idle_timeout_is_closed_and_counted() {
    const IDLE: Duration = Duration::from_millis(300);
    let scratch = Scratch::new("limits-idle");
    let limits = ConnLimits {
        idle_timeout: Some(IDLE),
        ..ConnLimits::default()
    };
    let s = server(&scratch, limits, Duration::from_secs(10));
    let metrics = s.services().metrics();
    let mut idle = TcpStream::connect(addr(&s, 0).trim_start_matches("tcp://")).expect("connect");
    idle.set_read_timeout(Some(DEADLINE)).expect("timeout");
    // The busy session calls until the idle one is closed. A session is closed only after a
    // whole timeout of silence, so a call answered as closed must come at least a timeout
    // after the client last sent (or connected): on a busy machine this thread can be kept off
    // a core that long, and then it reconnects. A session closed while it called (a timer
    // its calls did not reset) fails the assertion.
    let connect = || (Instant::now(), channel(&addr(&s, 0)));
    let mut busy = connect();
    let call = |busy: &mut (Instant, Channel)| {
        let sent = Instant::now();
        match busy.1.call_payload(RAW, Payload::Bytes(b"limit")) {
            Ok(r) => {
                assert_eq!(r.frame().bytes(), Some(&b"limit"[..]));
                busy.0 = sent;
            }
            Err(status) => {
                let silent = busy.0.elapsed();
                assert!(
                    silent >= IDLE,
                    "the busy session closed {silent:?} after it last sent: {status:?}"
                );
                eprintln!("the busy client was off a core for {silent:?}: reconnecting");
                *busy = connect();
            }
        }
    };
    let watcher = std::thread::spawn(move || read_until_closed(&mut idle));
    while !watcher.is_finished() {
        call(&mut busy);
    }
    watcher.join().expect("closed");
    assert!(closed(&s, Closed::Idle) >= 1);
    call(&mut busy);
    wait_until("the idle session counted out", DEADLINE, || {
        metrics.connections() == 1
    });
    drop(busy);
    s.shutdown(Duration::from_secs(1));
}

/// The handshake timeouts: a TLS peer that sends half a record and a shared-memory peer that
/// says nothing are closed at the timeout and counted; a peer that sends a bad setup message
/// is closed at once as a failed handshake.
#[test]
fn handshakes_past_their_timeout_are_closed_and_counted() {
    let scratch = Scratch::new("limits-handshake");
    let s = server(&scratch, ConnLimits::default(), Duration::from_millis(200));
    let metrics = s.services().metrics();
    let mut tls = TcpStream::connect(addr(&s, 1).trim_start_matches("tls://")).expect("connect");
    tls.write_all(&[0x16, 0x03]).expect("write");
    tls.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let shm = UnixStream::connect(addr(&s, 2).trim_start_matches("shm://")).expect("connect");
    shm.set_read_timeout(Some(DEADLINE)).expect("timeout");
    read_until_closed(tls);
    read_until_closed(shm);
    wait_until("both timeouts counted", DEADLINE, || {
        closed(&s, Closed::HandshakeTimeout) == 2
    });

    let mut bad = UnixStream::connect(addr(&s, 2).trim_start_matches("shm://")).expect("connect");
    bad.set_read_timeout(Some(DEADLINE)).expect("timeout");
    bad.write_all(&[0u8; 32]).expect("write");
    read_until_closed(bad);
    wait_until("the bad setup counted", DEADLINE, || {
        closed(&s, Closed::HandshakeFailed) == 1
    });
    assert_eq!(closed(&s, Closed::HandshakeTimeout), 2);
    wait_until("all counted out", DEADLINE, || metrics.connections() == 0);
    s.shutdown(Duration::from_secs(1));
}
