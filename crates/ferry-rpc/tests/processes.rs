//! Peers in other processes, killed mid-call (SIGKILL: no goodbye on either transport), and a
//! client that never reads its answers.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;
use ferry_rpc::{Channel, ChannelConfig, Code, Server};
use ferry_testkit::{ChildProc, self_command};
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
    let text = server.services().metrics().encode();
    let key = format!("ferry_rpc_sessions{{transport=\"{transport}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {text}"))
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

#[test]
fn child_server_killed_mid_call() {
    if role().is_some() {
        // Child: a server that prints its addresses and serves until killed.
        let scratch = Scratch::new("child-server");
        let server = start(TestService::default(), &scratch);
        for a in server.addrs() {
            println!("addr {a}");
        }
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_secs(30));
        unreachable!("the parent kills this process first");
    }
    let mut child = ChildProc::spawn(
        "server",
        self_command(&[], "child_server_killed_mid_call", ROLE, "server"),
    );
    let tcp = child.expect_line("addr ", "the child server's TCP address");
    let shm = child.expect_line("addr ", "the child server's shm address");
    let killer = child.killer();
    // The kill comes once both clients are connected (a loaded machine may take longer than
    // any fixed delay to connect), then a little later, while the calls are in flight.
    let connected = std::sync::Arc::new(std::sync::Barrier::new(3));
    let t = std::thread::spawn({
        let connected = connected.clone();
        move || {
            connected.wait();
            std::thread::sleep(Duration::from_millis(200));
            killer.kill();
        }
    });
    let calls: Vec<_> = [tcp, shm]
        .into_iter()
        .map(|addr| {
            let connected = connected.clone();
            std::thread::spawn(move || {
                let ch = Channel::connect(&addr);
                connected.wait();
                let ch = ch.expect("connect");
                let req = record(ch.context(), b"20000", &[]);
                let t = Instant::now();
                let err = ch
                    .call::<Record<'static>>(SLOW, &req)
                    .expect_err("the server dies");
                (addr, err, t.elapsed())
            })
        })
        .collect();
    let results: Vec<_> = calls.into_iter().map(|c| c.join()).collect();
    if results.iter().any(Result::is_err) {
        killer_done(t);
        panic!(
            "a client failed; the child server's stderr:\n{}",
            child.stderr_text()
        );
    }
    for r in results {
        let (addr, err, took) = r.expect("checked");
        assert_eq!(err.code, Code::Unavailable, "{addr}: {err}");
        assert!(took < Duration::from_secs(5), "{addr}: noticed after {took:?}");
    }
    killer_done(t);
}

/// Waits for the killer thread (it has killed the child once it returns).
fn killer_done(t: std::thread::JoinHandle<()>) {
    t.join().expect("the killer thread");
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
    let flood = std::thread::spawn(move || {
        let s = std::net::TcpStream::connect(&host).unwrap();
        socket_rcvbuf_small(&s);
        s.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut sent = 0u64;
        let mut blocked = false;
        let until = Instant::now() + Duration::from_millis(1500);
        let mut s = s;
        while Instant::now() < until {
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
        // Keep the connection open (unread) while the parent checks the server.
        std::thread::sleep(Duration::from_millis(1500));
        drop(s);
        (sent, blocked)
    });
    std::thread::sleep(Duration::from_millis(800));
    let outstanding = pool_bytes(&server);
    // Another client is served promptly meanwhile.
    let ch = Channel::connect_with(
        &tcp,
        ChannelConfig {
            timeout: Some(Duration::from_secs(2)),
            ..Default::default()
        },
    )
    .unwrap();
    ch.call_payload(RAW, Payload::Bytes(b"still here"))
        .expect("served while flooded");
    let (sent, blocked) = flood.join().unwrap();
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
