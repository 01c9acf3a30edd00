//! Peers in other processes, killed mid-call (SIGKILL: no goodbye on either transport), and a
//! client that never reads its answers.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;
use ferry_rpc::{Channel, ChannelConfig, Code, Server};
use ferry_testkit::{ChildProc, DEADLINE, self_command, wait_until};
use ferry_transport::{Meta, Payload};
use ferry_wire::Outgoing;
use ferry_wire::sample::Record;

const ROLE: &str = "FERRY_RPC_TEST_ROLE";

fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

fn start(service: TestService, scratch: &Scratch) -> Server {
    serve(service, scratch, 1, ferry_rpc::LoopConfig::default())
}

/// The gauge of open sessions of `transport`, read from the server's metrics.
fn sessions(server: &Server, transport: &str) -> u64 {
    metric(
        server,
        &format!("ferry_rpc_sessions{{transport=\"{transport}\"}}"),
    )
}

/// Child: connects to the address on its command line's environment, starts a slow call,
/// says so, and blocks until killed.
#[test]
fn child_client_killed_mid_call() {
    let Some(role) = role() else {
        // Parent: a server; a child client killed while its call runs.
        let scratch = Scratch::new("kill-client");
        let service = TestService::default();
        let seen = service.seen.clone();
        let server = start(service, &scratch);
        for (addr, transport) in server.addrs().iter().zip(["tcp", "shm"]) {
            let cancelled = seen.slow_cancelled.load(std::sync::atomic::Ordering::SeqCst);
            let mut child = ChildProc::spawn(
                "client",
                self_command(&[], "child_client_killed_mid_call", ROLE, &addr.to_string()),
            );
            child.expect_line("calling", "the child's slow call started");
            let until = Instant::now() + Duration::from_secs(5);
            while seen.slow_running.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                assert!(Instant::now() < until, "the slow handler never started");
                std::thread::sleep(Duration::from_millis(2));
            }
            assert_eq!(sessions(&server, transport), 1);
            child.kill();
            // The server notices, forgets the session and tells the handler.
            let until = Instant::now() + Duration::from_secs(5);
            while sessions(&server, transport) != 0
                || seen.slow_cancelled.load(std::sync::atomic::Ordering::SeqCst) == cancelled
            {
                assert!(
                    Instant::now() < until,
                    "the server did not notice the client's death"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            // It serves on.
            let ch = Channel::connect(&addr.to_string()).expect("connect");
            let req = record(ch.context(), b"k", &[1000]);
            check_record(
                &ch.call::<Record<'static>>(ECHO, &req)
                    .expect("echo")
                    .view()
                    .unwrap(),
                b"k",
                &[1000],
            );
        }
        server.shutdown(Duration::from_secs(1));
        return;
    };
    let ch = Channel::connect(&role).expect("child connects");
    println!("calling");
    std::io::stdout().flush().unwrap();
    let req = record(ch.context(), b"20000", &[]);
    let _ = ch.call::<Record<'static>>(SLOW, &req);
    unreachable!("the parent kills this process first");
}

/// A server killed (SIGKILL) while both transports' calls run in its handlers: each client
/// fails its call with UNAVAILABLE.
#[test]
fn child_server_killed_mid_call() {
    server_killed_mid_call("child_server_killed_mid_call", None);
}

/// Regression: a blocking call with a deadline waited on the shared-memory doorbell until that
/// deadline, which a dead peer never rings, so it noticed its server's death only then. With an
/// hour's deadline, the hang guard on the calls (not their deadline) would end the test.
#[test]
fn a_call_with_a_deadline_notices_its_server_died() {
    server_killed_mid_call(
        "a_call_with_a_deadline_notices_its_server_died",
        Some(Duration::from_secs(3600)),
    );
}

/// The test `test`, in both roles: a child server, and a parent whose calls (with `timeout`)
/// are in the child's handlers when it is killed.
fn server_killed_mid_call(test: &str, timeout: Option<Duration>) {
    if role().is_some() {
        // Child: a server that prints its addresses, says when both slow calls are in its
        // handlers, and serves until killed.
        let scratch = Scratch::new("child-server");
        let service = TestService::default();
        let seen = service.seen.clone();
        let server = start(service, &scratch);
        for a in server.addrs() {
            println!("addr {a}");
        }
        std::io::stdout().flush().unwrap();
        wait_until("both slow calls in the handlers", DEADLINE, || {
            seen.slow_running.load(std::sync::atomic::Ordering::SeqCst) == 2
        });
        println!("both calls running");
        std::io::stdout().flush().unwrap();
        loop {
            std::thread::park(); // until the parent kills this process
        }
    }
    let mut child = ChildProc::spawn("server", self_command(&[], test, ROLE, "server"));
    let tcp = child.expect_line("addr ", "the child server's TCP address");
    let shm = child.expect_line("addr ", "the child server's shm address");
    let calls: Vec<_> = [tcp, shm]
        .into_iter()
        .map(|addr| {
            ferry_testkit::spawn(&format!("a call to {addr}"), move || {
                let config = ChannelConfig {
                    timeout,
                    ..Default::default()
                };
                let ch = Channel::connect_with(&addr, config).expect("connect");
                let req = record(ch.context(), b"20000", &[]);
                let err = ch
                    .call::<Record<'static>>(SLOW, &req)
                    .expect_err("the server dies");
                (addr, err)
            })
        })
        .collect();
    // The kill comes while both calls are in flight.
    child.expect_line(
        "both calls running",
        "both clients' calls in the child's handlers",
    );
    child.kill();
    for c in calls {
        let (addr, err) = c.join();
        assert_eq!(err.code, Code::Unavailable, "{addr}: {err}");
    }
}

/// A client that sends requests and never reads the answers: the server stops reading its
/// requests once the answers back up, its memory stays bounded, and it serves other clients.
#[test]
fn a_client_that_never_reads_cannot_grow_the_servers_memory() {
    let scratch = Scratch::new("never-reads");
    let server = start(TestService::default(), &scratch);
    let tcp = server.addrs()[0].to_string();
    let host = tcp.strip_prefix("tcp://").unwrap().to_string();
    // One request frame: a 64 KiB field, echoed back by reference.
    let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig {
        max_bytes: 64 << 20,
        ..Default::default()
    })
    .unwrap();
    let ctx = ferry_wire::Context::new(pool);
    let body = record(&ctx, b"k", &[64 << 10]).to_vec().unwrap();
    // The flood writes until a write makes no progress for STALL (the server stopped reading:
    // while it reads, even slowly on a busy machine, writes go on), or until it has sent
    // more than any bounded buffering could take (the server kept reading: the test fails).
    const STALL: Duration = Duration::from_secs(2);
    const MOST: u64 = 4096; // 256 MiB of requests
    let (blocked_tx, blocked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let flood = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(&host).unwrap();
        socket_rcvbuf_small(&s);
        s.set_write_timeout(Some(STALL)).unwrap();
        let mut sent = 0u64;
        let mut blocked = false;
        while sent < MOST {
            let mut frame = vec![0u8; 16];
            ferry_net::FrameHeader {
                meta: Meta::new(ECHO, sent),
                len: body.len() as u32,
            }
            .write(&mut frame);
            frame.extend_from_slice(&body);
            match s.write_all(&frame) {
                Ok(()) => sent += 1,
                Err(_) => {
                    blocked = true; // the server stopped reading: our writes time out
                    break;
                }
            }
        }
        blocked_tx.send((sent, blocked)).unwrap();
        // Keep the connection open (unread) while the parent checks the server.
        let _ = release_rx.recv();
        drop(s);
    });
    let (sent, blocked) = blocked_rx.recv().expect("the flood thread reports");
    let outstanding = pool_bytes(&server);
    // Another client is served meanwhile (its deadline is only a hang guard).
    let ch = Channel::connect_with(
        &tcp,
        ChannelConfig {
            timeout: Some(DEADLINE),
            ..Default::default()
        },
    )
    .unwrap();
    ch.call_payload(RAW, Payload::Bytes(b"still here"))
        .expect("served while flooded");
    release_tx.send(()).unwrap();
    flood.join().unwrap();
    eprintln!("flood: {sent} requests sent, server pools hold {outstanding} bytes");
    assert!(
        blocked,
        "the server kept reading requests whose answers could not be sent"
    );
    // Read buffers and at most a turn's worth of answers: well below what the answers to the
    // requests it accepted would need (64 KiB each) had it queued them all.
    let unbounded = sent * (64 << 10);
    assert!(
        outstanding < unbounded / 4,
        "server pools hold {outstanding} bytes after {sent} requests"
    );
    server.shutdown(Duration::from_secs(1));
}

fn socket_rcvbuf_small(s: &std::net::TcpStream) {
    use std::os::fd::AsFd;
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(s.as_fd(), 4096);
}

/// Bytes the server's pools hold, from its metrics.
fn pool_bytes(server: &Server) -> u64 {
    let text = server.services().metrics().encode();
    text.lines()
        .filter(|l| l.starts_with("ferry_pool_bytes_outstanding{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}
