//! The gateway under hostile load (issue 28): an engine in front of the demo host (plaintext,
//! and one over TLS for the TLS cases), and for each case a good tonic client calling `Echo`
//! and checking every answer while the case runs. After each: every call answered, every
//! hostile connection closed (`Engine::connections().open` and this process's descriptors back
//! where they were), the resident set under [`RSS_BOUND`]. Then a control half: the good client
//! again, beside a burner taking the CPU the case's actor threads took, with no I/O to the
//! server (the storm's connections that the runtime's workers drive are not the actors' CPU).
//! The good client's p50/p99, quiet, loaded and control, and the actors' and burner's CPU, are
//! printed and recorded (not asserted) in the file `FERRY_HOSTILE_REPORT` names; see
//! `docs/reliability.md`. `FERRY_HOSTILE_CALLS` and `FERRY_TRICKLE_MS` as in ferry-rpc's
//! `tests/hostile.rs`.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{Host, TlsFiles, call_raw, channel, dir, engine_with, framed, pb};
use ferry_offload::engine::{ConnStats, Engine, GatewayLimits};
use ferry_testkit::load::{
    Actor, Burner, CaseReport, Latencies, REPORT_HEADER, actors_started_by, open_fds, raise_fd_limit,
    read_until_closed, rss_bytes,
};
use ferry_testkit::{DEADLINE, Rng, wait_until};
use prost::Message as _;

const ECHO: &str = "/ferry.offload.demo.Demo/Echo";
/// The process's resident set after any case stays under this: the host's and the engine's
/// pools, the test's clients and 2,000 idle connections' socket buffers on both ends.
const RSS_BOUND: u64 = 768 << 20;
const IDLE: usize = 2000;
const STALLED: usize = 100;
/// HTTP/2's connection preface.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(DEADLINE)).expect("timeout");
    s
}

/// `n` Echo calls on a new connection, each answer the request; their latencies.
async fn good_run(addr: SocketAddr, n: u64, seed: u64) -> Latencies {
    let ch = channel(addr).await;
    let mut rng = Rng::new(seed);
    let mut lat = Latencies::new();
    for i in 0..n {
        let req = pb::Kinds {
            f_int64: i as i64,
            f_bytes: rng.bytes(512),
            ..Default::default()
        };
        let start = Instant::now();
        let (body, _) = call_raw(&ch, ECHO, req.encode_to_vec(), &[], None)
            .await
            .unwrap_or_else(|s| panic!("good call {i}: {s:?}"));
        lat.record(start.elapsed());
        assert_eq!(
            pb::Kinds::decode(&body[..]).expect("decodes"),
            req,
            "good call {i}'s answer"
        );
    }
    lat
}

/// Runs one case against `engine`: the good client quiet, then during the case (`start`
/// returns what `end` tears down once the good client is done), then the checks, then the
/// control half (the good client again, beside a burner taking the CPU the case's actors
/// took), then the report.
async fn case<T>(engine: &Engine, name: &str, start: impl FnOnce(SocketAddr) -> T, end: impl FnOnce(T)) {
    let calls = env("FERRY_HOSTILE_CALLS", 2000);
    let addr = engine.local_addr();
    // Nothing open before: a client of an earlier step may still be closing.
    wait_until(&format!("{name}: nothing open before"), DEADLINE, || {
        engine.connections().open == 0
    });
    let fds = open_fds();
    let quiet = good_run(addr, calls, 1).await;
    let (hostile, actors) = actors_started_by(|| start(addr));
    let loaded = good_run(addr, calls, 2).await;
    let actors = actors.read();
    end(hostile);
    wait_back(engine, name, fds);
    let rss = rss_bytes();
    assert!(rss < RSS_BOUND, "{name}: resident set {} MiB", rss >> 20);
    assert_eq!(loaded.len() as u64, calls, "{name}: every good call answered");
    let burner = Burner::start(&actors.shares());
    let control = good_run(addr, calls, 3).await;
    let burner = burner.stop();
    wait_back(engine, &format!("{name} (control)"), fds);
    CaseReport {
        server: "gateway",
        case: name,
        quiet: &quiet,
        loaded: &loaded,
        control: &control,
        actors: &actors,
        burner: &burner,
        rss,
    }
    .report();
}

/// Waits for every connection to `engine` closed and this process's descriptors back to `fds`.
fn wait_back(engine: &Engine, name: &str, fds: usize) {
    wait_until(
        &format!("{name}: every connection closed ({:?} now)", engine.connections()),
        DEADLINE,
        || engine.connections().open == 0,
    );
    wait_until(&format!("{name}: descriptors back"), DEADLINE, || {
        open_fds() == fds
    });
}

/// A raw HTTP/2 frame: length, type, flags, stream id, payload.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// The gateway's TLS engine's connections, closed when each stalled or aborted peer is.
fn stats_delta(engine: &Engine, before: ConnStats, what: &str, f: impl Fn(ConnStats, ConnStats) -> bool) {
    wait_until(what, DEADLINE, || f(engine.connections(), before));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_holds_under_hostile_load() {
    let dir = dir();
    let host = Host::start(&dir);
    let plain = engine_with(&host, |c| {
        c.connections = GatewayLimits {
            max_connections: IDLE + 256,
            ..GatewayLimits::default()
        };
    });
    let files = TlsFiles::new(&dir, "hostile");
    let tls = engine_with(&host, |c| {
        let mut server = files.server(false);
        server.handshake_timeout = Duration::from_millis(500);
        c.tls = Some(server);
    });
    let tls_addr = tls.local_addr();
    limits_at_their_edges(&host).await;
    warm_up(&plain, tls_addr).await;
    settled(&tls);
    println!(
        "hostile [gateway] {}",
        REPORT_HEADER.replace('\n', "\nhostile [gateway] ")
    );

    // Stalled TLS handshakes: each costs a task until the timeout.
    let before = tls.connections();
    case(
        &plain,
        "100 stalled TLS handshakes (on the TLS engine)",
        |_| {
            (0..STALLED)
                .map(|_| {
                    let mut s = tcp(tls_addr);
                    s.write_all(&[0x16, 0x03, 0x01]).expect("write");
                    s
                })
                .collect::<Vec<_>>()
        },
        |stalled| stalled.into_iter().for_each(read_until_closed),
    )
    .await;
    stats_delta(&tls, before, "the handshake timeouts counted", |now, was| {
        now.handshake_timeouts == was.handshake_timeouts + STALLED as u64 && now.open == was.open
    });

    // 2,000 idle connections.
    let want = (2 * IDLE + 512) as u64;
    let limit = raise_fd_limit(want);
    if limit < want {
        println!("hostile: skipping 2,000 idle connections: RLIMIT_NOFILE is {limit}, below {want}");
    } else {
        case(
            &plain,
            "2,000 idle connections",
            |addr| {
                let idle: Vec<TcpStream> = (0..IDLE).map(|_| tcp(addr)).collect();
                wait_until("the idle connections accepted", DEADLINE, || {
                    plain.connections().open >= IDLE as u64
                });
                idle
            },
            drop,
        )
        .await;
    }

    // Slowloris: the preface and a HEADERS frame trickled a byte at a time.
    let every = Duration::from_millis(env("FERRY_TRICKLE_MS", 5));
    case(
        &plain,
        "slowloris (50 connections trickling HTTP/2 headers)",
        |addr| {
            Actor::spawn(1, move |stop, count| {
                let mut bytes = PREFACE.to_vec();
                bytes.extend(h2_frame(4, 0, 0, &[]));
                // HEADERS, END_HEADERS, stream 1: a literal `:method: POST` and more that
                // never ends (the trickle wraps before the block is whole).
                bytes.extend(h2_frame(1, 4, 1, &[0x83; 4096]));
                let mut conns: Vec<TcpStream> = (0..50).map(|_| tcp(addr)).collect();
                let mut at = 0;
                while !stop.load(Ordering::Relaxed) && at < bytes.len() {
                    for c in &mut conns {
                        // The server may close one that broke the protocol.
                        let _ = c.write_all(&bytes[at..at + 1]);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    at += 1;
                    // The load's pacing, not a wait for an event.
                    std::thread::sleep(every);
                }
            })
        },
        |actor| assert!(actor.stop() > 0, "bytes trickled"),
    )
    .await;

    // Clients that call and never read: an HTTP/2 window of one byte, a large answer.
    let rt = tokio::runtime::Handle::current();
    case(
        &plain,
        "20 clients that never read",
        |addr| {
            tokio::task::block_in_place(|| {
                rt.block_on(async {
                    let mut stuck = Vec::new();
                    for i in 0..20u8 {
                        let (mut send, response) = common::h2_call(addr, ECHO, &[], 1).await;
                        let req = pb::Kinds {
                            f_bytes: vec![i; 256 << 10],
                            ..Default::default()
                        };
                        send.send_data(framed(false, &req.encode_to_vec()).into(), true)
                            .expect("sends");
                        stuck.push((send, response));
                    }
                    stuck
                })
            })
        },
        drop,
    )
    .await;

    // Garbage, oversized prefixes (an HTTP/2 frame past the limit; a gRPC message declaring
    // 4 GiB) and a reconnect storm, one actor each.
    case(
        &plain,
        "random garbage",
        |addr| {
            Actor::spawn(1, move |stop, count| {
                let mut rng = Rng::new(28);
                while !stop.load(Ordering::Relaxed) {
                    let mut s = tcp(addr);
                    let mut junk = rng.bytes_in(1, 4096);
                    if rng.chance(1, 2) {
                        junk.splice(0..0, PREFACE.iter().copied());
                    }
                    let _ = s.write_all(&junk);
                    let _ = s.shutdown(std::net::Shutdown::Write);
                    read_until_closed(s);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        },
        |actor| assert!(actor.stop() > 0, "garbage sent"),
    )
    .await;
    case(
        &plain,
        "oversized length prefixes",
        |addr| {
            Actor::spawn(1, move |stop, count| {
                while !stop.load(Ordering::Relaxed) {
                    let mut s = tcp(addr);
                    let mut bytes = PREFACE.to_vec();
                    bytes.extend(h2_frame(4, 0, 0, &[]));
                    // A DATA frame header declaring 16 MiB − 1, past SETTINGS_MAX_FRAME_SIZE.
                    bytes.extend([0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1]);
                    let _ = s.write_all(&bytes);
                    read_until_closed(s);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        },
        |actor| assert!(actor.stop() > 0, "oversized frames sent"),
    )
    .await;
    let mut prefix = vec![0u8];
    prefix.extend(u32::MAX.to_be_bytes());
    let answer = common::call_h2_framed(plain.local_addr(), ECHO, prefix, &[]).await;
    assert_eq!(
        answer.code, 8,
        "a 4 GiB message prefix: RESOURCE_EXHAUSTED ({})",
        answer.message
    );

    let before = tls.connections();
    case(
        &plain,
        "TLS clients aborting mid-handshake (on the TLS engine)",
        |_| {
            Actor::spawn(2, move |stop, count| {
                while !stop.load(Ordering::Relaxed) {
                    let mut s = tcp(tls_addr);
                    let _ = s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);
                    drop(s);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        },
        |actor| {
            let n = actor.stop();
            assert!(n > 0);
            stats_delta(&tls, before, "every aborted handshake counted", |now, was| {
                now.handshake_failures + now.handshake_timeouts
                    == was.handshake_failures + was.handshake_timeouts + n
                    && now.open == was.open
            });
        },
    )
    .await;

    case(
        &plain,
        "reconnect storm (2 threads)",
        |addr| {
            Actor::spawn(2, move |stop, count| {
                rt.block_on(async {
                    while !stop.load(Ordering::Relaxed) {
                        let ch = channel(addr).await;
                        let req = pb::Kinds {
                            f_int32: 7,
                            ..Default::default()
                        };
                        let (body, _) = call_raw(&ch, ECHO, req.encode_to_vec(), &[], None)
                            .await
                            .expect("storm call");
                        assert_eq!(pb::Kinds::decode(&body[..]).expect("decodes"), req);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
        },
        |actor| assert!(actor.stop() > 0, "reconnections"),
    )
    .await;
    drop(tls);
    drop(plain);
}

/// Each gateway limit at its edge: the connection past `max_connections` is closed at once
/// and counted, and an idle one is closed past `idle_timeout` while a busy one lives. (Run
/// first by the hostile test: the two would disturb each other's descriptor counts.)
async fn limits_at_their_edges(host: &Host) {
    let engine = engine_with(host, |c| {
        c.connections = GatewayLimits {
            max_connections: 2,
            idle_timeout: Some(Duration::from_millis(300)),
            ..GatewayLimits::default()
        };
    });
    let addr = engine.local_addr();
    let busy = channel(addr).await;
    let call = |ch: tonic::transport::Channel| async move {
        let req = pb::Kinds {
            f_int32: 1,
            ..Default::default()
        };
        call_raw(&ch, ECHO, req.encode_to_vec(), &[], None)
            .await
            .expect("served");
    };
    call(busy.clone()).await;
    let idle = tcp(addr);
    wait_until("two open", DEADLINE, || engine.connections().open == 2);
    let over = tcp(addr);
    let over = tokio::task::spawn_blocking(move || read_until_closed(over));
    over.await.expect("the third closed");
    wait_until("the refusal counted", DEADLINE, || {
        engine.connections().refused == 1
    });

    // The busy client calls until the idle connection is closed: each call comes sooner
    // than a whole timeout of silence, which only the idle one sees.
    let idle = tokio::task::spawn_blocking(move || read_until_closed(idle));
    while !idle.is_finished() {
        call(busy.clone()).await;
    }
    idle.await.expect("closed");
    let stats = engine.connections();
    assert!(stats.idle_closed >= 1, "{stats:?}");
    call(busy.clone()).await;
    assert_eq!(engine.connections().open, 1, "the busy one lives");
}

/// What the process makes once, at the first of its kind (a descriptor of the runtime's or
/// the client library's), is made here, before any baseline.
async fn warm_up(plain: &Engine, tls: SocketAddr) {
    good_run(plain.local_addr(), 1, 0).await;
    let mut s = tcp(tls);
    s.write_all(&[0x16, 0x03, 0x01]).expect("write");
    tokio::task::spawn_blocking(move || read_until_closed(s))
        .await
        .expect("closed");
}

/// The TLS engine's counts settled after the warm-up's stalled peer.
fn settled(tls: &Engine) {
    wait_until("the warm-up counted", DEADLINE, || {
        let c = tls.connections();
        c.handshake_timeouts == 1 && c.open == 0
    });
}
