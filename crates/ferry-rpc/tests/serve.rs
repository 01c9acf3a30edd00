//! The event-loop server and the blocking client over real sockets, TCP and shared memory:
//! every call shape, status codes, deadlines, zero copy, shutdown, metrics.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use ferry_rpc::{Channel, ChannelConfig, Code, LoopConfig, Server, Services, Status};
use ferry_testkit::{DEADLINE, wait_until};
use ferry_transport::Payload;
use ferry_wire::sample::Record;

fn start(service: TestService, scratch: &Scratch, loops: usize) -> Server {
    serve(service, scratch, loops, LoopConfig::default())
}

fn each_transport(test: impl Fn(&Server, &str)) {
    let scratch = Scratch::new("serve");
    let server = start(TestService::default(), &scratch, 1);
    for addr in server.addrs() {
        let addr = addr.to_string();
        eprintln!("over {addr}");
        test(&server, &addr);
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn every_call_shape_over_both_transports() {
    each_transport(|_, addr| {
        let ch = Channel::connect(addr).expect("connect");
        for (method, sizes) in [
            (ECHO, &[][..]),
            (ECHO, &[10, 100][..]),
            (ECHO, &[2048, 2048][..]),
            (ECHO_BG, &[8192, 3][..]),
            (ECHO_BG, &[][..]),
        ] {
            let req = record(ch.context(), b"k", sizes);
            let resp = ch.call::<Record<'static>>(method, &req).expect("call");
            check_record(&resp.view().expect("view"), b"k", sizes);
        }
        let raw = ch.call_payload(RAW, Payload::Bytes(b"hello raw")).expect("raw");
        assert_eq!(
            ferry_transport::Received::bytes(raw.frame()),
            Some(&b"hello raw"[..])
        );
    });
}

#[test]
fn failures_have_their_codes() {
    each_transport(|_, addr| {
        let ch = Channel::connect(addr).expect("connect");
        let err = ch
            .call_payload(MISSING, Payload::Bytes(b""))
            .expect_err("not found");
        assert_eq!(err.code, Code::NotFound, "{err}");
        let err = ch
            .call_payload(0xbeef, Payload::Bytes(b""))
            .expect_err("unknown method");
        assert_eq!(err.code, Code::Unimplemented, "{err}");
        let err = ch.call_payload(PANIC, Payload::Bytes(b"")).expect_err("panic");
        assert_eq!(err.code, Code::Internal, "{err}");
        assert!(err.message.contains("panicked"), "{err}");
        // A request that does not decode names the problem and where.
        let err = ch
            .call_payload(ECHO, Payload::Bytes(&[0xff; 24]))
            .expect_err("garbage");
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        assert!(err.message.contains("byte 0"), "{err}");
        // The session survives all of it.
        let req = record(ch.context(), b"after", &[700]);
        let resp = ch.call::<Record<'static>>(ECHO, &req).expect("still serving");
        check_record(&resp.view().unwrap(), b"after", &[700]);
    });
}

/// Regression: a request longer than the transport's frame limit killed the blocking
/// channel (`UNAVAILABLE`, the connection dropped) although the transport refuses such a frame
/// whole and stays usable. It now fails that call alone, with or without a deadline.
#[test]
fn a_request_over_the_frame_limit_fails_alone() {
    each_transport(|_, addr| {
        let too_long = vec![7u8; 9 << 20];
        for timeout in [None, Some(Duration::from_secs(10))] {
            let ch = Channel::connect(addr).expect("connect");
            ch.set_timeout(timeout);
            let err = ch
                .call_payload(RAW, Payload::Bytes(&too_long))
                .expect_err("over the limit");
            assert_eq!(err.code, Code::InvalidArgument, "{timeout:?}: {err}");
            assert!(err.message.contains("cannot be sent"), "{err}");
            let raw = ch
                .call_payload(RAW, Payload::Bytes(b"after"))
                .expect("the channel still serves");
            assert_eq!(ferry_transport::Received::bytes(raw.frame()), Some(&b"after"[..]));
        }
    });
}

/// Slow calls the server has recorded an outcome for (an expired call may be recorded twice:
/// when it expires and when its handler returns).
const SLOW_CALLS: &str = r#"ferry_rpc_request_duration_seconds_count{method="/ferry.test.Rpc/Slow"}"#;

#[test]
fn client_deadline_expires_and_the_server_stops_the_handler() {
    let scratch = Scratch::new("deadline");
    let service = TestService::default();
    let seen = service.seen.clone();
    let server = start(service, &scratch, 1);
    for addr in server.addrs() {
        let finished = seen.slow_finished.load(Ordering::SeqCst);
        let handled = metric(&server, SLOW_CALLS);
        let ch = Channel::connect_with(
            &addr.to_string(),
            ChannelConfig {
                timeout: Some(Duration::from_millis(30)),
                ..ChannelConfig::default()
            },
        )
        .expect("connect");
        let req = record(ch.context(), b"2000", &[]);
        let err = ch.call::<Record<'static>>(SLOW, &req).expect_err("expires");
        assert_eq!(err.code, Code::DeadlineExceeded, "{err}");
        // The server's own deadline (or the cancel frame) stops the 2-second handler early,
        // or keeps it from starting if a worker had not picked it up yet: either way the call
        // ends on the server without the handler finishing its sleep.
        // (The count first: once it has moved, the call was dispatched, so no call in flight
        // afterwards means its handler, if one started, has returned.)
        wait_until("the server to end the expired call", DEADLINE, || {
            metric(&server, SLOW_CALLS) > handled && metric(&server, "ferry_rpc_in_flight") == 0
        });
        assert_eq!(seen.slow_running.load(Ordering::SeqCst), 0);
        assert_eq!(seen.slow_finished.load(Ordering::SeqCst), finished);
        // A fast call on the same channel still works, and the late answer was dropped.
        ch.set_timeout(Some(DEADLINE));
        let req = record(ch.context(), b"0", &[]);
        ch.call::<Record<'static>>(SLOW, &req).expect("fast call");
    }
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn foreground_handlers_read_in_place_and_echo_by_reference_over_tcp() {
    let scratch = Scratch::new("zc");
    let service = TestService::default();
    let seen = service.seen.clone();
    let server = start(service, &scratch, 1);
    let tcp = server.addrs()[0].to_string();
    let ch = Channel::connect(&tcp).expect("connect");
    let req = record(ch.context(), b"zc", &[16 << 10]);
    let resp = ch.call::<Record<'static>>(ECHO, &req).expect("echo");
    check_record(&resp.view().unwrap(), b"zc", &[16 << 10]);
    // The handler viewed the 16 KiB field inside the received frame, and the response's
    // field referenced that same memory (sent by gather entry, not copied).
    assert_eq!(seen.zero_copy.lock().unwrap().as_slice(), &[(true, true)]);
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn shutdown_drains_calls_in_progress_and_refuses_new_ones() {
    let scratch = Scratch::new("shutdown");
    let service = TestService::default();
    let seen = service.seen.clone();
    let server = start(service, &scratch, 2);
    let tcp = server.addrs()[0].to_string();
    let slow = std::thread::spawn({
        let tcp = tcp.clone();
        move || {
            let ch = Channel::connect(&tcp).expect("connect");
            let req = record(ch.context(), b"300", &[]);
            ch.call::<Record<'static>>(SLOW, &req).map(|_| ())
        }
    });
    wait_until("the slow call in its handler", DEADLINE, || {
        seen.slow_running.load(Ordering::SeqCst) == 1
    });
    let reports = server.shutdown(Duration::from_secs(5));
    assert_eq!(slow.join().unwrap(), Ok(()), "the call in progress finished");
    assert!(reports.iter().all(|r| r.abandoned == 0), "{reports:?}");
    let refused: Result<Channel, Status> = Channel::connect(&tcp);
    assert!(refused.is_err(), "the listener is closed");
}

#[test]
fn metrics_are_served_over_http() {
    let scratch = Scratch::new("metrics");
    let server = start(TestService::default(), &scratch, 1);
    let ch = Channel::connect(&server.addrs()[0].to_string()).expect("connect");
    for _ in 0..3 {
        ch.call_payload(RAW, Payload::Bytes(b"x")).expect("raw");
    }
    let _ = ch
        .call_payload(MISSING, Payload::Bytes(b""))
        .expect_err("missing");
    let addr = server.metrics_addr().expect("metrics endpoint");
    // A loop records its turn's calls at the turn's end, after their answers went out (as
    // grpc-go's stats end after the status is written): a scrape may briefly trail them.
    let counted = |text: &str| {
        text.contains(r#"ferry_rpc_requests_total{method="/ferry.test.Rpc/Raw",code="OK"} 3"#)
            && text.contains(r#"method="/ferry.test.Rpc/Missing",code="NOT_FOUND"} 1"#)
    };
    wait_until("the metrics to count the four calls", DEADLINE, || {
        counted(&http_get(addr))
    });
    let text = http_get(addr);
    assert!(counted(&text), "{text}");
    assert!(
        text.contains(r#"ferry_rpc_sessions{transport="tcp"} 1"#),
        "{text}"
    );
    server.shutdown(Duration::from_secs(1));
}

fn http_get(addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to metrics");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Regression: a server dropped while a background handler ran waited for the handler's
/// whole run (the loops ended without telling their handlers the calls were gone).
#[test]
fn dropping_the_server_cancels_its_background_handlers() {
    let scratch = Scratch::new("drop-bg");
    let service = TestService::default();
    let seen = service.seen.clone();
    let server = start(service, &scratch, 1);
    let tcp = server.addrs()[0].to_string();
    let caller = std::thread::spawn(move || {
        let ch = Channel::connect(&tcp).expect("connect");
        let req = record(ch.context(), b"5000", &[]);
        ch.call::<Record<'static>>(SLOW, &req).map(|_| ())
    });
    wait_until("the slow handler to start", DEADLINE, || {
        seen.slow_running.load(Ordering::SeqCst) == 1
    });
    // Without telling the handler, the drop would wait out its 5 s and it would finish.
    drop(server);
    assert_eq!(seen.slow_finished.load(Ordering::SeqCst), 0);
    assert_eq!(seen.slow_cancelled.load(Ordering::SeqCst), 1);
    let err = caller.join().unwrap().expect_err("the server went away");
    assert_eq!(err.code, Code::Unavailable, "{err}");
}

#[test]
fn a_blocking_channel_reconnects_after_the_server_comes_back() {
    let scratch = Scratch::new("reconnect");
    let server = start(TestService::default(), &scratch, 1);
    // The same addresses again after the restart: the port the kernel picked, the same path.
    let addrs: Vec<String> = server.addrs().iter().map(ToString::to_string).collect();
    let mut channels: Vec<Channel> = addrs
        .iter()
        .map(|a| Channel::connect(a).expect("connect"))
        .collect();
    for ch in &channels {
        ch.call_payload(RAW, Payload::Bytes(b"1")).expect("first call");
    }
    server.shutdown(Duration::from_secs(1));
    for ch in &channels {
        let err = ch
            .call_payload(RAW, Payload::Bytes(b"2"))
            .expect_err("server gone");
        assert_eq!(err.code, Code::Unavailable, "{err}");
        assert!(ch.is_closed());
    }
    let services = Services::builder()
        .service(TestService::default())
        .unwrap()
        .build()
        .unwrap();
    let server = Server::builder(services)
        .listen(&addrs[0])
        .listen(&addrs[1])
        .loops(1)
        .start()
        .expect("restart");
    for ch in &mut channels {
        ch.reconnect().expect("reconnect");
        let req = record(ch.context(), b"back", &[900]);
        check_record(
            &ch.call::<Record<'static>>(ECHO, &req)
                .expect("call")
                .view()
                .unwrap(),
            b"back",
            &[900],
        );
    }
    server.shutdown(Duration::from_secs(1));
}

/// Regression: a loop that could not be pinned (`ServerBuilder::pin` to a CPU the process may
/// not use) started anyway, unpinned, and said nothing.
#[test]
fn a_loop_that_cannot_be_pinned_fails_the_start() {
    let services = Services::builder()
        .service(TestService::default())
        .unwrap()
        .build()
        .unwrap();
    // No machine this runs on has 4,000 CPUs.
    let started = Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .loops(1)
        .pin(vec![4000])
        .start();
    let Err(err) = started else {
        panic!("a server pinned to a CPU that does not exist started");
    };
    let text = err.to_string();
    assert!(text.contains("pinning") && text.contains("CPU 4000"), "{text}");
}
