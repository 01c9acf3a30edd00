//! `tls://` end to end, certificates made at test time: the client's certificate identity seen
//! by handlers in each server driver, large values byte for byte from each client driver, each
//! failure named to the caller while the server goes on, and peers that stall mid-handshake
//! costing a slot, never the loop, until the handshake timeout closes them. (Every other
//! behaviour runs over `tls://` too: `loop_streams`, `tokio_driver` and `tokio_streams` run
//! each case over it.)

#[macro_use]
mod tokio_support;
mod common;

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::{ECHO, ECHO_BG, TestService, WHOAMI, WHOAMI_BG, check_record, record};
use ferry_net::tls::test_certs::TestCa;
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{
    Addr, Channel, ChannelConfig, Code, ConnConfig, EventLoop, LoopConfig, LoopSession, Server, Services,
    Status, TlsClient,
};
use ferry_testkit::DEADLINE;
use ferry_transport::{Payload, Received};
use ferry_wire::sample::Record;
use tokio_support::tls::{CLIENT_IDENTITY, pki, with_tls};
use tokio_support::{ServerThread, Transport, local_runtime, within};

/// An event-loop server of the test service on `tls://` and `tcp://`, one loop.
fn loop_server(handshake_timeout: Option<Duration>) -> Server {
    let mut conn = with_tls(ConnConfig::default());
    if let Some(t) = handshake_timeout {
        conn.tls_server.as_mut().expect("set").handshake_timeout = t;
    }
    let services = Services::builder()
        .service(TestService::default())
        .expect("add")
        .workers(2)
        .build()
        .expect("services");
    Server::builder(services)
        .listen("tls://127.0.0.1:0")
        .listen("tcp://127.0.0.1:0")
        .loops(1)
        .config(LoopConfig {
            conn,
            ..LoopConfig::default()
        })
        .start()
        .expect("server starts")
}

fn client_config(tls: Option<&TlsClient>) -> ChannelConfig {
    ChannelConfig {
        conn: ConnConfig {
            tls_client: tls.cloned(),
            ..ConnConfig::default()
        },
        ..ChannelConfig::default()
    }
}

fn channel(addr: &Addr, tls: Option<&TlsClient>) -> Result<Channel, Status> {
    Channel::connect_with(&addr.to_string(), client_config(tls))
}

fn whoami(ch: &Channel, method: u16) -> String {
    let r = ch.call_payload(method, Payload::Bytes(b"")).expect("whoami");
    String::from_utf8(r.frame().bytes().expect("raw").to_vec()).expect("utf-8")
}

#[test]
fn handlers_see_the_clients_certificate_identity_in_each_server_driver() {
    let server = loop_server(None);
    let (tls, tcp) = (&server.addrs()[0], &server.addrs()[1]);
    let ch = channel(tls, Some(&pki().client)).expect("connect");
    assert_eq!(whoami(&ch, WHOAMI), CLIENT_IDENTITY, "foreground handler");
    assert_eq!(whoami(&ch, WHOAMI_BG), CLIENT_IDENTITY, "background handler");
    let anonymous = channel(tls, Some(&pki().anonymous)).expect("connect");
    assert_eq!(
        whoami(&anonymous, WHOAMI),
        "none",
        "TLS without a client certificate"
    );
    assert_eq!(
        whoami(&channel(tcp, None).expect("connect"), WHOAMI),
        "none",
        "plain TCP"
    );
    server.shutdown(Duration::from_secs(1));

    within("tokio WHOAMI over tls", 30, || {
        let server = ServerThread::start(Transport::Tls, Duration::ZERO);
        let addr = server.addr.clone();
        let who = local_runtime(async move {
            let chan = AsyncChannel::connect_with(&addr, client_config(Some(&pki().client)))
                .await
                .expect("connect");
            let r = chan
                .call_payload(tokio_support::WHOAMI, Payload::Bytes(b""))
                .await
                .expect("whoami");
            String::from_utf8(r.frame().bytes().expect("raw").to_vec()).expect("utf-8")
        });
        server.stop();
        assert_eq!(who, CLIENT_IDENTITY, "async handler");
    });
}

/// Field sizes that take the gather path (pool values referenced, several TLS records each).
const LARGE: [usize; 4] = [300 << 10, 5, 1 << 20, 70_000];

#[test]
fn large_values_cross_byte_for_byte_from_the_blocking_and_event_loop_clients() {
    let server = loop_server(None);
    let addr = server.addrs()[0].clone();
    let ch = channel(&addr, Some(&pki().client)).expect("connect");
    for method in [ECHO, ECHO_BG] {
        let req = record(ch.context(), b"big", &LARGE);
        let resp = ch.call::<Record<'static>>(method, &req).expect("echo");
        check_record(&resp.view().expect("view"), b"big", &LARGE);
    }

    let mut lp = EventLoop::new(LoopConfig {
        conn: with_tls(ConnConfig::default()),
        ..LoopConfig::default()
    })
    .expect("loop");
    let id = lp.connect(&addr).expect("connect");
    let s = LoopSession { id, timeout: None };
    let done = Rc::new(RefCell::new(0));
    for tag in 0..4u8 {
        let ctx = lp.context(id).expect("session");
        let key = [tag];
        let req = record(&ctx, &key, &LARGE);
        let done = Rc::clone(&done);
        lp.call_then::<Record<'static>>(s, ECHO, &req, move |_, r| {
            check_record(&r.expect("echo"), &[tag], &LARGE);
            *done.borrow_mut() += 1;
        })
        .expect("call");
    }
    let until = Instant::now() + DEADLINE;
    while *done.borrow() < 4 {
        assert!(Instant::now() < until, "the loop did not finish in time");
        lp.turn();
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn each_failure_is_named_to_the_caller_and_the_server_goes_on() {
    let server = loop_server(None);
    let (tls, tcp) = (&server.addrs()[0], &server.addrs()[1]);
    let other = TestCa::new("not the server's CA");
    let stranger = TlsClient::from_pem(other.pem().as_bytes(), None).expect("client TLS");
    let e = channel(tls, Some(&stranger)).expect_err("an unknown CA");
    assert_eq!(e.code, Code::Unavailable);
    assert!(e.message.contains("unknown CA"), "{e}");
    let e = channel(tls, None).expect_err("no client settings");
    assert!(e.message.contains("tls_client"), "{e}");
    // A plain client on the TLS port: the server names it and closes; the call fails.
    let tls_port = tls.to_string().replace("tls://", "tcp://");
    let plain = channel(&tls_port.parse().expect("addr"), None).expect("TCP connects");
    assert!(plain.call_payload(WHOAMI, Payload::Bytes(b"")).is_err());
    // The server goes on, on both listeners.
    let ch = channel(tls, Some(&pki().client)).expect("connect");
    assert_eq!(whoami(&ch, WHOAMI), CLIENT_IDENTITY);
    assert_eq!(whoami(&channel(tcp, None).expect("connect"), WHOAMI), "none");
    server.shutdown(Duration::from_secs(1));

    within("tokio: an unknown CA", 30, move || {
        let server = ServerThread::start(Transport::Tls, Duration::ZERO);
        let addr = server.addr.clone();
        let e = local_runtime(async move {
            AsyncChannel::connect_with(&addr, client_config(Some(&stranger)))
                .await
                .expect_err("an unknown CA")
        });
        server.stop();
        assert!(e.message.contains("unknown CA"), "{e}");
    });
}

/// Opens `n` connections to `addr` that send the first 3 bytes of a TLS record and stall.
fn stalled_peers(addr: &Addr, n: usize) -> Vec<TcpStream> {
    let at = addr.to_string().replace("tls://", "");
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(&at).expect("connect");
            s.write_all(&[0x16, 0x03, 0x01]).expect("write");
            s.set_read_timeout(Some(DEADLINE)).expect("timeout");
            s
        })
        .collect()
}

/// Waits for the server to close each stalled peer (its handshake timed out).
fn all_closed(peers: Vec<TcpStream>) {
    for mut p in peers {
        let mut buf = [0u8; 64];
        loop {
            match p.read(&mut buf) {
                Ok(0) => break,
                // The server's alert, if it sent one, then the close.
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("the stalled peer was not closed: {e}"),
            }
        }
    }
}

const STALLED: usize = 50;

#[test]
fn peers_stalled_mid_handshake_cost_a_slot_until_the_timeout_while_a_good_client_is_served() {
    let server = loop_server(Some(Duration::from_secs(1)));
    let addr = server.addrs()[0].clone();
    let stalled = stalled_peers(&addr, STALLED);
    let ch = channel(&addr, Some(&pki().client)).expect("connect beside the stalled peers");
    for i in 0..20u8 {
        let key = [i];
        let req = record(ch.context(), &key, &[4096]);
        let resp = ch.call::<Record<'static>>(ECHO, &req).expect("served");
        check_record(&resp.view().expect("view"), &key, &[4096]);
    }
    all_closed(stalled);
    assert_eq!(whoami(&ch, WHOAMI), CLIENT_IDENTITY, "the good session lives on");
    server.shutdown(Duration::from_secs(1));

    within("tokio: stalled handshakes", 60, || {
        let mut config = LoopConfig::default();
        let mut tls = pki().server.clone();
        tls.handshake_timeout = Duration::from_secs(1);
        config.conn.tls_server = Some(tls);
        let server = ServerThread::serve("tls://127.0.0.1:0", Duration::ZERO, None, config, |flags| {
            ferry_rpc::tokio::AsyncServices::new()
                .service(tokio_support::Echo { flags })
                .expect("services")
        });
        let addr: Addr = server.addr.parse().expect("addr");
        let stalled = stalled_peers(&addr, STALLED);
        let target = server.addr.clone();
        local_runtime(async move {
            let chan = AsyncChannel::connect_with(&target, client_config(Some(&pki().client)))
                .await
                .expect("connect beside the stalled peers");
            for i in 0..20u8 {
                let r = chan
                    .call_payload(tokio_support::ECHO, Payload::Bytes(&[i; 100]))
                    .await
                    .expect("served");
                assert_eq!(r.frame().bytes().expect("raw"), &[i; 100]);
            }
        });
        all_closed(stalled);
        server.stop();
    });
}
