//! The append-only file with real servers: interop with redis-server 7.0 both ways (a
//! directory one wrote, the other loads, compared key by key with the RDB interop test's
//! dataset), `redis-check-aof` on Ferry's files, a crash (`kill -9` under write load with
//! `appendfsync always`: every acknowledged write is there after the restart), a torn last
//! command, and `BGREWRITEAOF` under concurrent writes.
//!
//! The crash test's server is this test binary run again as a child process
//! ([`crash_child`]), so that it can be killed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod common;

use common::dataset::{Conn, assert_same, dump, fill};
use ferry_redis::aof::Fsync;
use ferry_redis::resp::client::{Reply, ping};
use ferry_testkit::{Scratch, wait_until};

fn ferry_config(dir: &Path, fsync: Fsync) -> ferry_redis::Config {
    ferry_redis::Config {
        dir: dir.to_owned(),
        appendonly: true,
        appendfsync: fsync,
        enable_debug_command: true,
        ..common::config()
    }
}

/// Waits until `c`'s server has no AOF rewrite running, and checks the last one succeeded.
fn wait_rewrite(c: &mut Conn) {
    wait_until("the AOF rewrite", Duration::from_secs(60), || {
        let Reply::Bulk(info) = c.ok(&[b"INFO", b"persistence"]) else {
            panic!("INFO")
        };
        let info = String::from_utf8(info).unwrap();
        info.contains("aof_rewrite_in_progress:0\r\n")
    });
    let Reply::Bulk(info) = c.ok(&[b"INFO", b"persistence"]) else {
        panic!("INFO")
    };
    assert!(
        String::from_utf8(info)
            .unwrap()
            .contains("aof_last_bgrewrite_status:ok\r\n")
    );
}

/// Writes after a rewrite, so that the incremental file has commands of every kind the
/// feed rewrites: relative expiries, a deletion, a transaction, another database.
fn more_writes(c: &mut Conn) {
    c.ok(&[b"SELECT", b"1"]);
    c.ok(&[b"SET", b"after:ex", b"v", b"EX", b"1000"]);
    c.ok(&[b"SETEX", b"after:setex", b"2000", b"v"]);
    c.ok(&[b"RPUSH", b"after:list", b"a", b"b", b"c"]);
    c.ok(&[b"LPOP", b"after:list"]);
    c.ok(&[b"MULTI"]);
    c.ok(&[b"INCRBYFLOAT", b"after:float", b"1.5"]);
    c.ok(&[b"HSET", b"after:hash", b"f", b"v"]);
    c.ok(&[b"EXEC"]);
    c.ok(&[b"SELECT", b"0"]);
    c.ok(&[b"DEL", b"0:small-list"]);
    c.ok(&[b"SADD", b"0:intset", b"77"]);
}

/// redis-server on a free port with the AOF on in `dir` (its later options override the
/// launcher's `--appendonly no`).
fn start_redis(path: &Path, dir: &Path) -> ferry_launch::Server {
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    common::start_redis_server(path, dir, &aof, Duration::from_secs(30))
}

/// `redis-check-aof` (beside redis-server) accepts the manifest in `dir`.
fn check_aof(redis: &Path, dir: &Path) {
    let check = redis.with_file_name("redis-check-aof");
    let Some(check) = Some(check)
        .filter(|p| p.is_file())
        .or_else(|| common::find_tool("redis-check-aof"))
    else {
        common::missing::<()>("redis-check-aof is not beside redis-server nor on PATH");
        return;
    };
    let manifest = dir.join("appendonlydir/appendonly.aof.manifest");
    let out = Command::new(&check)
        .arg(&manifest)
        .output()
        .expect("run redis-check-aof");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("is valid"),
        "redis-check-aof {}: {}{}",
        manifest.display(),
        text,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn redis_server_loads_what_ferry_appends() {
    let Some(redis) = common::redis_server_7_0("redis_server_loads_what_ferry_appends") else {
        return;
    };
    let dir = Scratch::new("aof-ferry-to-redis");
    let ferry = common::start(ferry_config(&dir.0, Fsync::Always));
    let mut f = Conn::new(ferry.addr());
    fill(&mut f);
    assert_eq!(
        f.call(&[b"BGREWRITEAOF"]),
        Reply::simple("Background append only file rewriting started")
    );
    wait_rewrite(&mut f);
    more_writes(&mut f);
    let expected = dump(&mut f);
    assert!(expected.len() > 40, "the dataset is written");
    drop(f);
    ferry.stop().unwrap();
    check_aof(&redis, &dir.0);

    let server = start_redis(&redis, &dir.0);
    let found = dump(&mut Conn::new(server.addr()));
    assert_same(&expected, &found, "redis-server on Ferry's AOF");
}

#[test]
fn ferry_loads_what_redis_server_appends() {
    let Some(redis) = common::redis_server_7_0("ferry_loads_what_redis_server_appends") else {
        return;
    };
    let dir = Scratch::new("aof-redis-to-ferry");
    let server = start_redis(&redis, &dir.0);
    let mut r = Conn::new(server.addr());
    fill(&mut r);
    r.ok(&[b"BGREWRITEAOF"]);
    wait_rewrite(&mut r);
    more_writes(&mut r);
    let expected = dump(&mut r);
    drop(r);
    drop(server);

    let ferry = common::start(ferry_config(&dir.0, Fsync::Everysec));
    let found = dump(&mut Conn::new(ferry.addr()));
    assert_same(&expected, &found, "Ferry on redis-server's AOF");
}

/// Where the crash test's child server keeps its AOF; the child runs only when it is set.
const CHILD_DIR: &str = "FERRY_AOF_CRASH_DIR";
const CHILD_PORT: &str = "FERRY_AOF_CRASH_PORT";

/// The crash test's server, in a child process: does nothing in a normal run.
#[test]
fn crash_child() {
    let (Some(dir), Some(port)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_PORT).ok()) else {
        return;
    };
    let config = ferry_redis::Config {
        bind: SocketAddr::from(([127, 0, 0, 1], port.parse().expect("a port"))),
        threads: 2,
        ..ferry_config(&PathBuf::from(dir), Fsync::Always)
    };
    let server = common::start(config);
    server.join().expect("serve until killed");
}

fn start_child(dir: &Path) -> ferry_launch::Server {
    let exe = std::env::current_exe().expect("the test binary");
    let command = |port: u16| {
        let mut c = Command::new(&exe);
        c.args(["crash_child", "--exact", "--nocapture", "--test-threads", "1"])
            .env(CHILD_DIR, dir)
            .env(CHILD_PORT, port.to_string());
        c
    };
    let ready = |addr| ping(addr, Duration::from_secs(2));
    ferry_launch::Server::start("ferry-aof-child", command, ready, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("the child server did not start: {e}"))
}

/// Clients writing when the server is killed: each pushes 0, 1, 2, ... to its own list and
/// sets `<client>:<n>`, one command at a time, and records the last one acknowledged.
#[test]
fn every_acknowledged_write_survives_kill_9() {
    const CLIENTS: usize = 4;
    let dir = Scratch::new("aof-crash");
    let server = start_child(&dir.0);
    let addr = server.addr();
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..CLIENTS).map(|_| AtomicU64::new(0)).collect());
    let writers: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let acked = acked.clone();
            std::thread::spawn(move || {
                let mut c = Conn::new(addr);
                let list = format!("list:{i}");
                for n in 1u64.. {
                    let (k, v) = (format!("{i}:{n}"), n.to_string());
                    // The connection dies with the server: what was not acknowledged may be lost.
                    let Ok(Reply::Int(len)) = c.try_call(&[b"RPUSH", list.as_bytes(), v.as_bytes()]) else {
                        return;
                    };
                    assert_eq!(len as u64, n, "{list}");
                    if !matches!(c.try_call(&[b"SET", k.as_bytes(), v.as_bytes()]), Ok(r) if r == Reply::simple("OK")) {
                        return;
                    }
                    acked[i].store(n, Ordering::SeqCst);
                }
            })
        })
        .collect();
    wait_until(
        "writes acknowledged by every client",
        Duration::from_secs(120),
        || acked.iter().all(|a| a.load(Ordering::SeqCst) >= 300),
    );
    // SIGKILL while the clients write (`Drop` kills and reaps).
    drop(server);
    for w in writers {
        w.join().expect("a writer");
    }
    let acked: Vec<u64> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();

    let server = start_child(&dir.0);
    let mut c = Conn::new(server.addr());
    for (i, &n) in acked.iter().enumerate() {
        let list = format!("list:{i}");
        let Reply::Array(items) = c.ok(&[b"LRANGE", list.as_bytes(), b"0", b"-1"]) else {
            panic!("LRANGE")
        };
        assert!(
            items.len() as u64 >= n,
            "{list}: {} items, {n} acknowledged",
            items.len()
        );
        for (j, item) in items.iter().enumerate() {
            assert_eq!(
                item,
                &Reply::Bulk((j + 1).to_string().into_bytes()),
                "{list}[{j}]"
            );
        }
        for m in 1..=n {
            let k = format!("{i}:{m}");
            assert_eq!(
                c.ok(&[b"GET", k.as_bytes()]),
                Reply::Bulk(m.to_string().into_bytes()),
                "{k}"
            );
        }
    }
}

/// The last incremental file in `dir`.
fn last_incr(dir: &Path) -> PathBuf {
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap();
    let line = manifest.lines().rfind(|l| l.ends_with(" type i")).unwrap();
    dir.join("appendonlydir").join(line.split(' ').nth(1).unwrap())
}

#[test]
fn a_torn_last_command_is_cut_when_allowed() {
    let dir = Scratch::new("aof-torn");
    let ferry = common::start(ferry_config(&dir.0, Fsync::Always));
    let mut c = Conn::new(ferry.addr());
    c.ok(&[b"SET", b"whole", b"1"]);
    drop(c);
    ferry.stop().unwrap();
    let incr = last_incr(&dir.0);
    let whole = std::fs::metadata(&incr).unwrap().len();
    // A MULTI whose EXEC never came, then a command cut in its value.
    let mut f = std::fs::OpenOptions::new().append(true).open(&incr).unwrap();
    std::io::Write::write_all(
        &mut f,
        b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$1\r\n2\r\n*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$5\r\nab",
    )
    .unwrap();
    drop(f);

    let refused = ferry_redis::Server::bind(ferry_redis::Config {
        aof_load_truncated: false,
        ..ferry_config(&dir.0, Fsync::Always)
    });
    let err = refused
        .map(drop)
        .expect_err("a torn file is refused with aof-load-truncated no")
        .to_string();
    assert!(
        err.contains("unexpected end of file") && err.contains(&format!("byte {whole}")),
        "{err}"
    );

    let ferry = common::start(ferry_config(&dir.0, Fsync::Always));
    let mut c = Conn::new(ferry.addr());
    assert_eq!(c.ok(&[b"GET", b"whole"]), Reply::Bulk(b"1".to_vec()));
    assert_eq!(c.ok(&[b"EXISTS", b"torn", b"x"]), Reply::Int(0));
    assert_eq!(std::fs::metadata(&incr).unwrap().len(), whole, "cut at the MULTI");
}

#[test]
fn bgrewriteaof_under_concurrent_writes_loses_nothing() {
    const CLIENTS: usize = 3;
    let dir = Scratch::new("aof-rewrite-load");
    let ferry = common::start(ferry_redis::Config {
        threads: 2,
        ..ferry_config(&dir.0, Fsync::Everysec)
    });
    let addr = ferry.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (stop, progress) = (stop.clone(), progress.clone());
            std::thread::spawn(move || {
                let mut c = Conn::new(addr);
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    progress.fetch_add(1, Ordering::SeqCst);
                    let db = (n % 3).to_string();
                    c.ok(&[b"SELECT", db.as_bytes()]);
                    c.ok(&[b"INCR", format!("counter:{i}").as_bytes()]);
                    c.ok(&[
                        b"HSET",
                        format!("hash:{i}").as_bytes(),
                        n.to_string().as_bytes(),
                        b"v",
                    ]);
                    if n % 5 == 0 {
                        c.ok(&[
                            b"HDEL",
                            format!("hash:{i}").as_bytes(),
                            (n - 1).to_string().as_bytes(),
                        ]);
                    }
                }
                n
            })
        })
        .collect();
    let mut c = Conn::new(addr);
    for _ in 0..5 {
        let before = progress.load(Ordering::SeqCst);
        assert_eq!(
            c.call(&[b"BGREWRITEAOF"]),
            Reply::simple("Background append only file rewriting started")
        );
        wait_rewrite(&mut c);
        // Writes ran during the rewrite and after it, before the next one.
        wait_until("writes across the rewrite", Duration::from_secs(60), || {
            progress.load(Ordering::SeqCst) >= before + 200
        });
    }
    stop.store(true, Ordering::SeqCst);
    let written: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(written > 0);
    let expected = dump(&mut c);
    assert_eq!(c.call(&[b"DEBUG", b"LOADAOF"]), Reply::simple("OK"));
    assert_same(&expected, &dump(&mut c), "after DEBUG LOADAOF");
    drop(c);
    ferry.stop().unwrap();
    let ferry = common::start(ferry_config(&dir.0, Fsync::Everysec));
    assert_same(&expected, &dump(&mut Conn::new(ferry.addr())), "after a restart");
}
