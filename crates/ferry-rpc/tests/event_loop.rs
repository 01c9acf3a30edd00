//! The event loop as a client: continuations, many calls in flight, out-of-order completion,
//! cancellation, the request window, the server's bound on calls in progress, a server-side
//! deadline, connection loss, and 1,000 sessions against one server loop.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use ferry_rpc::session::ServerConfig;
use ferry_rpc::{Addr, Code, EventLoop, LoopConfig, LoopSession, Server, Status};
use ferry_testkit::DEADLINE;
use ferry_wire::sample::Record;

fn server_with(scratch: &Scratch, config: LoopConfig) -> Server {
    serve(TestService::default(), scratch, 1, config)
}

/// Turns until `done` or the hang guard ([`DEADLINE`]).
fn run_until(lp: &mut EventLoop, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < until, "the loop did not finish in time");
        lp.turn();
    }
}

type Results = Rc<RefCell<Vec<(u64, Result<usize, Status>)>>>;

/// Starts an echo call whose continuation records (tag, number of fields or status).
fn echo(
    lp: &mut EventLoop,
    s: LoopSession,
    method: u16,
    key: &[u8],
    sizes: &[usize],
    tag: u64,
    out: &Results,
) -> Result<ferry_rpc::CallId, Status> {
    let ctx = lp.context(s.id).expect("session");
    let req = record(&ctx, key, sizes);
    let out = Rc::clone(out);
    let want = sizes.to_vec();
    lp.call_then::<Record<'static>>(s, method, &req, move |_, r| {
        let r = r.map(|v| {
            let got: Vec<usize> = v.fields().iter().map(<[u8]>::len).collect();
            assert_eq!(got, want);
            got.len()
        });
        out.borrow_mut().push((tag, r));
    })
}

#[test]
fn pipelined_calls_and_out_of_order_completion() {
    let scratch = Scratch::new("loop");
    let server = server_with(&scratch, LoopConfig::default());
    for addr in server.addrs() {
        let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
        let id = lp.connect(addr).expect("connect");
        let s = LoopSession { id, timeout: None };
        let out: Results = Default::default();
        // A slow background call first, then fast ones: the fast ones complete first.
        echo(&mut lp, s, SLOW, b"150", &[], 0, &out).expect("slow");
        for tag in 1..8 {
            let method = if tag % 2 == 0 { ECHO } else { ECHO_BG };
            echo(&mut lp, s, method, b"k", &[tag as usize * 300], tag, &out).expect("fast");
        }
        run_until(&mut lp, || out.borrow().len() == 8);
        let order: Vec<u64> = out.borrow().iter().map(|(t, _)| *t).collect();
        assert_eq!(order.last(), Some(&0), "the slow call completed last: {order:?}");
        assert!(out.borrow().iter().all(|(_, r)| r.is_ok()), "{:?}", out.borrow());
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn raw_calls_from_the_event_loop_are_echoed_by_reference_over_tcp() {
    let scratch = Scratch::new("raw");
    let service = TestService::default();
    let seen = std::sync::Arc::clone(&service.seen);
    let services = ferry_rpc::Services::builder()
        .service(service)
        .expect("add")
        .build()
        .expect("services");
    let [tcp, shm] = addrs(&scratch);
    let server = ferry_rpc::Server::builder(services)
        .listen(&tcp)
        .listen(&shm)
        .loops(1)
        .start()
        .expect("server");
    for addr in server.addrs() {
        let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
        let id = lp.connect(addr).expect("connect");
        let pool = lp.context(id).and_then(|c| c.pool().cloned()).expect("pool");
        let got: Rc<RefCell<Vec<Vec<u8>>>> = Default::default();
        let sent: Vec<Vec<u8>> = [1usize, 700, 9000]
            .iter()
            .map(|&n| (0..n).map(|i| (i % 251) as u8).collect())
            .collect();
        for (i, bytes) in sent.iter().enumerate() {
            let out = Rc::clone(&got);
            let then: ferry_rpc::Continuation = Box::new(move |_, r| {
                out.borrow_mut()
                    .push(r.expect("answered").bytes().expect("raw bytes").to_vec());
            });
            // Plain bytes, and a pool buffer as a gather entry.
            let result = if i % 2 == 0 {
                lp.call_payload(id, RAW, ferry_transport::Payload::Bytes(bytes), then)
            } else {
                let part = pool.copy_from(bytes).expect("pool");
                let parts = [part];
                lp.call_payload(
                    id,
                    RAW,
                    ferry_transport::Payload::Gather {
                        head: &[],
                        parts: &parts,
                    },
                    then,
                )
            };
            result.expect("started");
        }
        run_until(&mut lp, || got.borrow().len() == sent.len());
        assert_eq!(*got.borrow(), sent, "{addr}");
        let shared = seen.raw_shared.swap(0, Ordering::Relaxed);
        let not_shared = seen.raw_not_shared.swap(0, Ordering::Relaxed);
        let tcp = matches!(addr, ferry_rpc::Addr::Tcp(_));
        let n = sent.len();
        assert_eq!(
            (shared, not_shared),
            if tcp { (n, 0) } else { (0, n) },
            "{addr}: the request as a pool buffer over TCP only"
        );
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn the_window_cancellation_and_the_servers_bound() {
    let scratch = Scratch::new("window");
    let config = LoopConfig {
        server: ServerConfig { max_in_flight: 2 },
        ..LoopConfig::default()
    };
    let server = server_with(&scratch, config);
    for addr in server.addrs() {
        let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
        let id = lp.connect(addr).expect("connect");
        let s = LoopSession { id, timeout: None };
        let out: Results = Default::default();
        // The client's window is 8: the ninth call is refused before anything is sent.
        let mut calls = Vec::new();
        for tag in 0..8 {
            calls.push(echo(&mut lp, s, SLOW, b"300", &[], tag, &out).expect("in the window"));
        }
        let err = echo(&mut lp, s, SLOW, b"0", &[], 99, &out).expect_err("window full");
        assert_eq!(err.code, Code::ResourceExhausted, "{err}");
        // The server admits 2 calls at a time: the other 6 are refused at once.
        run_until(&mut lp, || out.borrow().len() >= 6);
        let refused = out
            .borrow()
            .iter()
            .filter(|(_, r)| matches!(r, Err(s) if s.code == Code::ResourceExhausted))
            .count();
        assert_eq!(refused, 6, "{:?}", out.borrow());
        // Cancel one of the two admitted: its continuation runs at once with CANCELLED.
        let admitted: Vec<u64> = (0..8)
            .filter(|t| !out.borrow().iter().any(|(x, _)| x == t))
            .collect();
        assert_eq!(admitted.len(), 2);
        lp.cancel(id, calls[admitted[0] as usize]);
        {
            let out = out.borrow();
            let last = out.last().expect("cancelled");
            assert_eq!(last.0, admitted[0]);
            assert!(matches!(&last.1, Err(s) if s.code == Code::Cancelled), "{last:?}");
        }
        run_until(&mut lp, || out.borrow().len() == 8);
        assert!(out.borrow().iter().any(|(t, r)| *t == admitted[1] && r.is_ok()));
        // Every call ended exactly once.
        let mut tags: Vec<u64> = out.borrow().iter().map(|(t, _)| *t).collect();
        tags.sort_unstable();
        assert_eq!(tags, (0..8).collect::<Vec<_>>());
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn a_lost_connection_fails_every_pending_call_and_the_client_reconnects() {
    let scratch = Scratch::new("lost");
    for transport in 0..2 {
        let server = server_with(&scratch, LoopConfig::default());
        let addr = server.addrs()[transport].clone();
        let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
        let baseline = lp.pool().stats().buffers_outstanding();
        let id = lp.connect(&addr).expect("connect");
        let s = LoopSession { id, timeout: None };
        let out: Results = Default::default();
        for tag in 0..4 {
            echo(&mut lp, s, SLOW, b"5000", &[600], tag, &out).expect("call");
        }
        // The four calls reach the server (two in its workers, two queued for them).
        run_until(&mut lp, || metric(&server, "ferry_rpc_in_flight") == 4);
        drop(server); // no drain: sessions close
        run_until(&mut lp, || out.borrow().len() == 4);
        for (_, r) in out.borrow().iter() {
            assert!(matches!(r, Err(s) if s.code == Code::Unavailable), "{r:?}");
        }
        assert_eq!(lp.sessions(), 0);
        assert_eq!(
            lp.pool().stats().buffers_outstanding(),
            baseline,
            "no pool buffer leaked"
        );
        // A new server on a new address: the client connects again.
        let server = server_with(&scratch, LoopConfig::default());
        let id = lp.connect(&server.addrs()[transport]).expect("reconnect");
        let out: Results = Default::default();
        echo(
            &mut lp,
            LoopSession { id, timeout: None },
            ECHO,
            b"k",
            &[10],
            0,
            &out,
        )
        .expect("call");
        run_until(&mut lp, || out.borrow().len() == 1);
        assert!(out.borrow()[0].1.is_ok());
        server.shutdown(Duration::from_secs(1));
    }
}

/// A raw connection to `addr` (no RPC client, no clock of its own) and the context its
/// messages are built in: the shared-memory pool, or a pool of this process's.
fn raw_conn(addr: &Addr) -> (ferry_rpc::Conn, ferry_wire::Context) {
    use ferry_rpc::{Conn, ConnConfig};
    let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig {
        max_bytes: 64 << 20,
        ..Default::default()
    })
    .unwrap();
    let conn = Conn::connect(addr, &pool, &ConnConfig::default()).expect("connect");
    let ctx = match &conn {
        Conn::Shm(c) => ferry_wire::Context::new(c.pool().clone()),
        Conn::Tcp(_) | Conn::Udp(_) | Conn::Xdp(_) => ferry_wire::Context::new(pool),
    };
    (conn, ctx)
}

#[test]
fn the_server_enforces_the_deadline_it_was_given() {
    use ferry_rpc::wire;
    use ferry_transport::{Meta, Payload, Received, Transport};
    let scratch = Scratch::new("sdeadline");
    let server = server_with(&scratch, LoopConfig::default());
    for addr in server.addrs() {
        // A client with no clock of its own: a raw connection sends a 20 ms budget and a slow
        // request, and waits for whatever the server says.
        let (mut conn, ctx) = raw_conn(addr);
        let budget = wire::deadline_payload(Duration::from_millis(20));
        conn.send_payload(
            Meta {
                kind: SLOW,
                flags: wire::DEADLINE,
                request_id: 0,
            },
            Payload::Bytes(&budget),
        )
        .unwrap();
        conn.send(Meta::new(SLOW, 0), &record(&ctx, b"3000", &[]))
            .unwrap();
        conn.flush().unwrap();
        // The handler would answer OK after 3 s: a DEADLINE_EXCEEDED is the server's own.
        let frame = conn.recv().expect("an answer");
        let parsed = wire::parse(frame.meta(), frame.bytes()).expect("valid frame");
        match parsed {
            wire::Frame::Status { status, .. } => assert_eq!(status.code, Code::DeadlineExceeded, "{status}"),
            other => panic!("expected a status, got {other:?}"),
        }
    }
    server.shutdown(Duration::from_secs(1));
}

/// The loop skips its deadline pass until the earliest deadline it knows of: a call started
/// with a shorter deadline than one already waiting must still end at its own (the peer never
/// answers, so only the client's expiry can end it; a missed one would wait for the first
/// call's hour and trip the hang guard).
#[test]
fn a_later_call_with_a_nearer_deadline_expires_first_on_the_client() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr: Addr = format!("tcp://{}", listener.local_addr().unwrap())
        .parse()
        .expect("addr");
    let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
    let id = lp.connect(&addr).expect("connect");
    let (_peer, _) = listener.accept().expect("accept");
    let out: Results = Default::default();
    let far = LoopSession {
        id,
        timeout: Some(Duration::from_secs(3600)),
    };
    echo(&mut lp, far, ECHO, b"", &[8], 0, &out).expect("far call");
    // Turns with the far call alone: the loop knows its deadline as the next one due.
    let turns = lp.stats().turns + 8;
    while lp.stats().turns < turns {
        lp.turn();
    }
    let near = LoopSession {
        id,
        timeout: Some(Duration::from_millis(20)),
    };
    echo(&mut lp, near, ECHO, b"", &[8], 1, &out).expect("near call");
    run_until(&mut lp, || !out.borrow().is_empty());
    let out = out.borrow();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0, 1, "the near call ended first: {out:?}");
    assert!(
        matches!(&out[0].1, Err(s) if s.code == Code::DeadlineExceeded),
        "{out:?}"
    );
}

/// The server side of the same: a request with a nearer deadline than one in progress is
/// answered `DEADLINE_EXCEEDED` at its own deadline, not after the first one's handler (3 s).
#[test]
fn a_later_request_with_a_nearer_deadline_expires_first_on_the_server() {
    use ferry_rpc::wire;
    use ferry_transport::{Meta, Payload, Received, Transport};
    let scratch = Scratch::new("sdue");
    let server = server_with(&scratch, LoopConfig::default());
    for addr in server.addrs() {
        let (mut conn, ctx) = raw_conn(addr);
        for (request_id, budget) in [(0, Duration::from_secs(3600)), (1, Duration::from_millis(20))] {
            let budget = wire::deadline_payload(budget);
            let flags = wire::DEADLINE;
            conn.send_payload(
                Meta {
                    kind: SLOW,
                    flags,
                    request_id,
                },
                Payload::Bytes(&budget),
            )
            .unwrap();
            conn.send(Meta::new(SLOW, request_id), &record(&ctx, b"3000", &[]))
                .unwrap();
            conn.flush().unwrap();
        }
        let frame = conn.recv().expect("an answer");
        assert_eq!(frame.meta().request_id, 1, "the near call is answered first");
        let parsed = wire::parse(frame.meta(), frame.bytes()).expect("valid frame");
        match parsed {
            wire::Frame::Status { status, .. } => assert_eq!(status.code, Code::DeadlineExceeded, "{status}"),
            other => panic!("expected a status, got {other:?}"),
        }
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn a_thousand_sessions_against_one_loop() {
    let scratch = Scratch::new("thousand");
    let server = server_with(&scratch, LoopConfig::default());
    let addr: Addr = server.addrs()[0].clone();
    let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
    let out: Results = Default::default();
    let mut sessions = Vec::new();
    for _ in 0..1000 {
        sessions.push(lp.connect(&addr).expect("connect"));
    }
    for (tag, &id) in sessions.iter().enumerate() {
        echo(
            &mut lp,
            LoopSession { id, timeout: None },
            ECHO,
            b"k",
            &[64],
            tag as u64,
            &out,
        )
        .expect("call");
    }
    run_until(&mut lp, || out.borrow().len() == 1000);
    assert!(out.borrow().iter().all(|(_, r)| r.is_ok()));
    assert_eq!(lp.sessions(), 1000);
    let stats = server.shutdown(Duration::from_secs(1));
    assert_eq!(stats[0].stats.accepted, 1000);
}
