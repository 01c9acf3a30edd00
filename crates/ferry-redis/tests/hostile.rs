//! `ferry redis` under hostile load (issue 28): one server, and for each case a good RESP
//! client that sets and gets random values and checks every reply while the case runs. After
//! each case: every hostile connection closed (`connected_clients` and this process's
//! descriptors back to where they were), the pool's bytes back to their baseline, the
//! resident set under [`RSS_BOUND`]. Then a control half: the good client again, beside a
//! burner taking the CPU the case's actor threads took, with no I/O to the server. The good
//! client's p50/p99, quiet, loaded and control, and the actors' and burner's CPU, are printed
//! and recorded (not asserted) in the file `FERRY_HOSTILE_REPORT` names; see
//! `docs/reliability.md` for the command.
//!
//! Cases: 1,000 idle connections; slowloris (50 connections trickling a command a byte per
//! interval); bulk lengths announced at `proto-max-bulk-len` with 100 bytes after; random
//! garbage; clients that pipeline reads of a large value and never read the replies (the
//! output buffer limit closes them). `FERRY_HOSTILE_CALLS` sets the good client's calls per
//! case (default 1000), `FERRY_TRICKLE_MS` the slowloris interval (default 5 ms).

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{config, encode, start};
use ferry_redis::resp::client::{Reply, ReplyReader};
use ferry_redis::{Config, ServerHandle};
use ferry_testkit::load::{
    Actor, Burner, CaseReport, Latencies, REPORT_HEADER, actors_started_by, open_fds, raise_fd_limit,
    read_until_closed, rss_bytes,
};
use ferry_testkit::{DEADLINE, Rng, wait_until};

/// The process's resident set after any case stays under this: the server's pool as used,
/// 1,000 idle connections' socket buffers on both ends, the hostile clients' buffers.
const RSS_BOUND: u64 = 768 << 20;
/// Idle connections in their case.
const IDLE: usize = 1000;
/// Peers that announce a bulk of `proto-max-bulk-len` and send 100 bytes of it: together
/// they would hold 400 MiB if each got a buffer of the announced length.
const ANNOUNCERS: usize = 50;
/// Reply bytes a client may leave unread (the server's `output_buffer_limit` here).
const OUTPUT_LIMIT: usize = 4 << 20;
/// The good client's values.
const VALUE: usize = 512;

fn env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn server() -> ServerHandle {
    start(Config {
        output_buffer_limit: OUTPUT_LIMIT,
        max_clients: IDLE + 512,
        ..config()
    })
}

fn connected(s: &ServerHandle) -> u64 {
    s.info().stats.connected_clients.load(Ordering::Relaxed)
}

fn dropped(s: &ServerHandle) -> u64 {
    s.info().stats.clients_dropped.load(Ordering::Relaxed)
}

fn pool_bytes(s: &ServerHandle) -> usize {
    s.pool().stats().bytes_outstanding()
}

fn tcp(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(DEADLINE)).expect("timeout");
    s.set_write_timeout(Some(DEADLINE)).expect("timeout");
    s
}

/// The good client: `SET` a random value, `GET` it back, each reply checked; a call is the
/// pair.
struct Good {
    r: ReplyReader<TcpStream>,
    rng: Rng,
}

impl Good {
    fn connect(addr: SocketAddr) -> Good {
        let s = tcp(addr);
        s.set_nodelay(true).expect("nodelay");
        Good {
            r: ReplyReader::new(s),
            rng: Rng::new(28),
        }
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        self.r.get_mut().write_all(&encode(args)).expect("good write");
        self.r.reply().unwrap_or_else(|e| panic!("good reply: {e}"))
    }

    fn run(&mut self, n: u64) -> Latencies {
        let mut lat = Latencies::new();
        for i in 0..n {
            let key = format!("good:{}", i % 64).into_bytes();
            let value = self.rng.bytes(VALUE);
            let start = Instant::now();
            assert_eq!(
                self.cmd(&[b"SET", &key, &value]),
                Reply::simple("OK"),
                "good SET {i}"
            );
            assert_eq!(self.cmd(&[b"GET", &key]), Reply::Bulk(value), "good GET {i}");
            lat.record(start.elapsed());
        }
        lat
    }
}

/// Runs one case: the good client runs quiet, then while the case runs (`start` returns what
/// `end` tears down once the good client is done and gone), then the checks against the
/// state before the good client came, then the control half (the good client again, beside a
/// burner taking the CPU the case's actors took), then the report.
fn case<T>(
    s: &ServerHandle,
    name: &str,
    start: impl FnOnce(&ServerHandle) -> T,
    end: impl FnOnce(&ServerHandle, T),
) {
    let calls = env("FERRY_HOSTILE_CALLS", 1000);
    let before = Baseline::now(s);
    let mut good = Good::connect(s.addr());
    let quiet = good.run(calls);
    let (hostile, actors) = actors_started_by(|| start(s));
    let loaded = good.run(calls);
    let actors = actors.read();
    drop(good);
    end(s, hostile);
    before.wait_back(s, name);
    let rss = rss_bytes();
    assert!(rss < RSS_BOUND, "{name}: resident set {} MiB", rss >> 20);
    assert_eq!(loaded.len() as u64, calls, "{name}: every good call answered");
    let burner = Burner::start(&actors.shares());
    let control = Good::connect(s.addr()).run(calls);
    let burner = burner.stop();
    before.wait_back(s, &format!("{name} (control)"));
    CaseReport {
        server: "redis",
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

/// The server's clients, this process's descriptors and the pool's bytes with no client.
struct Baseline {
    clients: u64,
    fds: usize,
    pool: usize,
}

impl Baseline {
    fn now(s: &ServerHandle) -> Baseline {
        Baseline {
            clients: connected(s),
            fds: open_fds(),
            pool: pool_bytes(s),
        }
    }

    /// Waits for every connection closed, the descriptors and the pool back.
    fn wait_back(&self, s: &ServerHandle, name: &str) {
        let Baseline { clients, fds, pool } = *self;
        wait_until(
            &format!(
                "{name}: every connection closed ({clients} before, {} now)",
                connected(s)
            ),
            DEADLINE,
            || connected(s) == clients,
        );
        wait_until(&format!("{name}: descriptors back"), DEADLINE, || {
            open_fds() == fds
        });
        // The good client's values stay stored (64 keys, overwritten in place).
        let stored = 64 * VALUE.next_power_of_two() * 2;
        wait_until(
            &format!(
                "{name}: the pool back ({pool} bytes before, {} now)",
                pool_bytes(s)
            ),
            DEADLINE,
            || pool_bytes(s) <= pool + stored,
        );
    }
}

/// 1,000 connections that open and idle (the descriptor limit raised for both ends).
fn idle_connections(s: &ServerHandle) {
    let want = (2 * IDLE + 512) as u64;
    let limit = raise_fd_limit(want);
    if limit < want {
        println!("hostile: skipping 1,000 idle connections: RLIMIT_NOFILE is {limit}, below {want}");
        return;
    }
    case(
        s,
        "1,000 idle connections",
        |s| {
            let before = connected(s);
            let idle: Vec<TcpStream> = (0..IDLE).map(|_| tcp(s.addr())).collect();
            wait_until("the idle connections accepted", DEADLINE, || {
                connected(s) == before + IDLE as u64
            });
            idle
        },
        |_, idle| drop(idle),
    );
}

/// Slowloris: 50 connections trickle a `SET` a byte per interval each (partial commands),
/// closed by the client when the good client is done.
fn slowloris(s: &ServerHandle) {
    let every = Duration::from_millis(env("FERRY_TRICKLE_MS", 5));
    case(
        s,
        "slowloris (50 connections, a byte each per interval)",
        |s| {
            let addr = s.addr();
            Actor::spawn(1, move |stop, count| {
                let command = encode(&[b"SET", b"slow", &[7u8; 4096]]);
                let mut conns: Vec<TcpStream> = (0..50).map(|_| tcp(addr)).collect();
                let mut at = 0;
                while !stop.load(Ordering::Relaxed) {
                    for c in &mut conns {
                        c.write_all(&command[at % command.len()..][..1]).expect("trickle");
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    at += 1;
                    // The pacing of the load (a byte per connection per interval), not a wait
                    // for an event.
                    std::thread::sleep(every);
                }
            })
        },
        |_, actor| assert!(actor.stop() > 0, "bytes trickled"),
    );
}

/// Bulk lengths announced at `proto-max-bulk-len`, then 100 bytes of the bulk in a later read,
/// by [`ANNOUNCERS`] peers. The regressions: each got a buffer of the announced length (400 MiB
/// of the pool in all); then, those buffers reserved from the loop's budget for requests in
/// progress, the peers held the budget (256 MiB, mapped and zeroed on the loop's thread). A
/// buffer grows with the bytes that arrive now: every peer stays, holding one read buffer. One
/// past the limit is refused at once.
fn huge_bulk_lengths(s: &ServerHandle) {
    case(
        s,
        "huge bulk lengths (50 announcing proto-max-bulk-len)",
        |s| {
            let max = config().proto_max_bulk_len;
            let (before, pool) = (connected(s), pool_bytes(s));
            let input = || s.info().stats.total_net_input_bytes.load(Ordering::Relaxed);
            let announced = format!("*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n${max}\r\n").into_bytes();
            let at = input();
            let mut announcers: Vec<TcpStream> = (0..ANNOUNCERS)
                .map(|_| {
                    let mut c = tcp(s.addr());
                    c.write_all(&announced).expect("announce");
                    c
                })
                .collect();
            // Each chunk in a read of its own: the announcement, then a part of the bulk.
            let announced_all = at + (ANNOUNCERS * announced.len()) as u64;
            wait_until("the announcements read", DEADLINE, || input() >= announced_all);
            announcers
                .iter_mut()
                .for_each(|c| c.write_all(&[1; 100]).expect("a part"));
            wait_until("the parts read", DEADLINE, || {
                input() >= announced_all + 100 * ANNOUNCERS as u64
            });
            assert_eq!(connected(s), before + ANNOUNCERS as u64, "every announcer stays");
            let mut past = tcp(s.addr());
            past.write_all(format!("*2\r\n$3\r\nGET\r\n${}\r\n", max + 1).as_bytes())
                .expect("announce past the limit");
            read_until_closed(past);
            // The peer past the limit sees its socket closed before the loop has dropped the
            // rest of its connection, its read buffer with it: wait for that, not for a leak.
            let read_buf = config().read_buf;
            let bound = ANNOUNCERS * read_buf;
            let what = format!(
                "{ANNOUNCERS} peers announcing {max}-byte bulks holding at most {bound} pool bytes \
                 (a read buffer each)"
            );
            wait_until(&what, DEADLINE, || pool_bytes(s).saturating_sub(pool) <= bound);
            announcers
        },
        |_, announcers| drop(announcers),
    );
}

/// Connections that send random bytes: the server answers a protocol error and closes each.
fn garbage(s: &ServerHandle) {
    case(
        s,
        "random garbage",
        |s| {
            let addr = s.addr();
            Actor::spawn(1, move |stop, count| {
                let mut rng = Rng::new(32);
                while !stop.load(Ordering::Relaxed) {
                    // A leading '*' or '$' makes a header the parser reads on; the rest is
                    // noise. Either way the server errs and closes, or the junk is a run of
                    // inline commands answered with errors until the client leaves.
                    let mut junk = rng.bytes_in(1, 4096);
                    junk[0] = [b'*', b'$', b'\x00', b'\xff'][(count.load(Ordering::Relaxed) % 4) as usize];
                    let mut c = tcp(addr);
                    let _ = c.write_all(&junk);
                    let _ = c.shutdown(std::net::Shutdown::Write);
                    read_until_closed(c);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        },
        |_, actor| assert!(actor.stop() > 0, "garbage sent"),
    );
}

/// Clients that pipeline `GET`s of a 256 KiB value and never read: each is disconnected once
/// its unread replies pass the output buffer limit, and counted.
fn never_read(s: &ServerHandle) {
    let before = dropped(s);
    case(
        s,
        "20 clients that never read (output buffer limit)",
        |s| {
            let mut setter = Good::connect(s.addr());
            let value = vec![5u8; 256 << 10];
            assert_eq!(setter.cmd(&[b"SET", b"big", &value]), Reply::simple("OK"));
            let gets: Vec<u8> = (0..64).flat_map(|_| encode(&[b"GET", b"big"])).collect();
            (0..20)
                .map(|_| {
                    let mut c = tcp(s.addr());
                    // Until the server cuts it off: its unread replies passed the limit.
                    let mut sent = 0usize;
                    while c.write_all(&gets).is_ok() {
                        sent += 64;
                        assert!(sent < 1 << 20, "never cut off");
                    }
                    c
                })
                .collect::<Vec<_>>()
        },
        |s, clients| {
            clients.into_iter().for_each(read_until_closed);
            wait_until("every reader that never read counted", DEADLINE, || {
                dropped(s) >= before + 20
            });
            assert_eq!(Good::connect(s.addr()).cmd(&[b"DEL", b"big"]), Reply::Int(1));
        },
    );
}

/// A good client's session before any baseline: what the process makes once, at the first
/// connection (descriptors the sender probes with), is not counted against the cases.
fn warm_up(s: &ServerHandle) {
    let mut good = Good::connect(s.addr());
    good.run(1);
    drop(good);
    wait_until("the warm-up's client counted out", DEADLINE, || connected(s) == 0);
}

#[test]
fn ferry_redis_holds_under_hostile_load() {
    let s = server();
    warm_up(&s);
    println!(
        "hostile [redis] {}",
        REPORT_HEADER.replace('\n', "\nhostile [redis] ")
    );
    idle_connections(&s);
    slowloris(&s);
    huge_bulk_lengths(&s);
    garbage(&s);
    never_read(&s);
}
