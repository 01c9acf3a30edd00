//! Ferry's Redis server over TLS (`Config::tls`, `ferry redis --tls-port ...`), driven by
//! unchanged clients: Debian's `redis-cli --tls` and `redis-benchmark --tls`, redis-py with
//! `ssl=True`, and a rustls client speaking RESP for what no tool does on purpose: large GET
//! replies (the gather path) checked byte for byte, the wrong protocol on either port, and
//! peers that stall mid-handshake.
//!
//! Certificates are made at test time (rcgen, ferry-net's `test-certs`) and written to a
//! scratch directory for the tools. A missing tool skips its test with a printed reason, or
//! fails it under `FERRY_REQUIRE_TOOLS=1` (CI). Every child process and socket has a hang guard.

mod common;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Output, config, encode, require_python_redis, require_tool, run, start};
use ferry_net::tls::test_certs::TestCa;
use ferry_net::{ClientAuth, TlsClient, TlsServer};
use ferry_redis::cmd::Stats;
use ferry_redis::resp::client::{Reply, ReplyReader};
use ferry_redis::{Config, ServerHandle, Tls};
use ferry_testkit::Scratch;
use ferry_testkit::{DEADLINE, wait_until};

/// Hang guard for one tool run (a debug build serves it).
const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// The test PKI: a CA, a server certificate for 127.0.0.1 and localhost, a client
/// certificate, and a client certificate from another CA; PEM in memory and in files.
struct Pki {
    dir: Scratch,
    ca: String,
    server: (String, String),
    client: (String, String),
    stranger: (String, String),
}

impl Pki {
    fn new() -> Pki {
        let ca = TestCa::new("ferry-redis test CA");
        let other = TestCa::new("another CA");
        let server = ca.leaf("ferry-redis-test", &["127.0.0.1", "localhost"]);
        let client = ca.leaf("redis-client", &["client.test"]);
        let stranger = other.leaf("stranger", &["stranger.test"]);
        let pki = Pki {
            dir: Scratch::new("redis-tls"),
            ca: ca.pem(),
            server: (server.cert, server.key),
            client: (client.cert, client.key),
            stranger: (stranger.cert, stranger.key),
        };
        for (name, pem) in [
            ("ca.pem", &pki.ca),
            ("client.pem", &pki.client.0),
            ("client.key", &pki.client.1),
            ("stranger.pem", &pki.stranger.0),
            ("stranger.key", &pki.stranger.1),
        ] {
            std::fs::write(pki.file(name), pem).expect("write a PEM file");
        }
        pki
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.0.join(name)
    }

    /// A server with the plain port and a TLS port: client certificates as `auth` says
    /// (`tls-auth-clients`), handshakes bounded by `timeout`.
    fn server(&self, auth: &str, timeout: Duration) -> ServerHandle {
        let roots = self.ca.clone().into_bytes();
        let auth = match auth {
            "yes" => ClientAuth::Required(roots),
            "optional" => ClientAuth::Optional(roots),
            _ => ClientAuth::None,
        };
        let server = TlsServer::from_pem(self.server.0.as_bytes(), self.server.1.as_bytes(), auth)
            .expect("server TLS settings");
        start(Config {
            tls: Some(Tls {
                port: 0,
                server: TlsServer {
                    handshake_timeout: timeout,
                    ..server
                },
            }),
            ..config()
        })
    }

    /// A client's settings: the CA, and a certificate (`client`, `stranger`) or none.
    fn client(&self, cert: Option<&(String, String)>) -> TlsClient {
        TlsClient::from_pem(
            self.ca.as_bytes(),
            cert.map(|(c, k)| (c.as_bytes(), k.as_bytes())),
        )
        .expect("client TLS settings")
    }
}

fn tls_addr(server: &ServerHandle) -> SocketAddr {
    server.tls_addr().expect("a TLS listener")
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A blocking RESP2 connection over TLS; every read and write has the hang guard.
struct TlsResp {
    r: ReplyReader<TlsStream>,
}

impl TlsResp {
    /// Connects and completes the handshake (a failure names the cause).
    fn connect(addr: SocketAddr, tls: &TlsClient) -> io::Result<TlsResp> {
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(DEADLINE))?;
        tcp.set_write_timeout(Some(DEADLINE))?;
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("a name");
        let conn = rustls::ClientConnection::new(Arc::clone(&tls.config), name).map_err(io::Error::other)?;
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(TlsResp {
            r: ReplyReader::new(stream),
        })
    }

    fn cmd(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        self.r.get_mut().write_all(&encode(args))?;
        self.r.get_mut().flush()?;
        self.r.reply()
    }

    fn ping(&mut self) {
        let reply = self.cmd(&[b"PING"]).expect("PING over TLS");
        assert_eq!(reply, Reply::simple("PONG"));
    }
}

/// `redis-cli --tls --cacert CA ARGS...` against `addr`, with `extra` (e.g. a certificate).
fn redis_cli(cli: &Path, pki: &Pki, addr: SocketAddr, extra: &[&Path], args: &[&str]) -> Output {
    let mut cmd = Command::new(cli);
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &addr.port().to_string(),
        "--tls",
        "--cacert",
    ])
    .arg(pki.file("ca.pem"));
    if let [cert, key] = extra {
        cmd.arg("--cert").arg(cert).arg("--key").arg(key);
    }
    cmd.args(args);
    run(
        &format!("redis-cli --tls {}", args.join(" ")),
        cmd,
        b"",
        TOOL_LIMIT,
    )
}

#[test]
fn redis_cli_over_tls_with_each_client_auth() {
    let Some(cli) = require_tool("redis-cli") else {
        return;
    };
    let pki = Pki::new();
    let (cert, key) = (pki.file("client.pem"), pki.file("client.key"));
    let with_cert = [cert.as_path(), key.as_path()];
    let stranger = [pki.file("stranger.pem"), pki.file("stranger.key")];
    let stranger = [stranger[0].as_path(), stranger[1].as_path()];
    for auth in ["yes", "optional", "no"] {
        let server = pki.server(auth, Duration::from_secs(10));
        let addr = tls_addr(&server);
        let out = redis_cli(
            &cli,
            &pki,
            addr,
            &with_cert,
            &["SET", "greeting", "hello over TLS"],
        );
        assert_eq!(
            out.out(),
            "OK\n",
            "tls-auth-clients {auth}: SET: {}",
            out.describe()
        );
        let out = redis_cli(&cli, &pki, addr, &with_cert, &["GET", "greeting"]);
        assert_eq!(
            out.out(),
            "hello over TLS\n",
            "tls-auth-clients {auth}: GET: {}",
            out.describe()
        );
        // Without a certificate: refused under yes, served otherwise.
        let out = redis_cli(&cli, &pki, addr, &[], &["PING"]);
        if auth == "yes" {
            assert_ne!(
                out.out(),
                "PONG\n",
                "tls-auth-clients yes served a client without a certificate"
            );
        } else {
            assert_eq!(
                out.out(),
                "PONG\n",
                "tls-auth-clients {auth}, no certificate: {}",
                out.describe()
            );
        }
        // A certificate from another CA is refused whenever certificates are asked for.
        let out = redis_cli(&cli, &pki, addr, &stranger, &["PING"]);
        if auth == "no" {
            assert_eq!(out.out(), "PONG\n", "tls-auth-clients no: {}", out.describe());
        } else {
            assert_ne!(
                out.out(),
                "PONG\n",
                "tls-auth-clients {auth} served an unknown CA's client"
            );
        }
        // The plain port beside it still serves.
        let mut plain = Command::new(&cli);
        plain.args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.addr().port().to_string(),
            "GET",
            "greeting",
        ]);
        let out = run("redis-cli GET (plain port)", plain, b"", TOOL_LIMIT);
        assert_eq!(
            out.out(),
            "hello over TLS\n",
            "plain port beside TLS: {}",
            out.describe()
        );
    }
}

#[test]
fn redis_cli_refused_without_certificate_while_another_client_is_served() {
    let pki = Pki::new();
    let server = pki.server("yes", Duration::from_secs(10));
    let addr = tls_addr(&server);
    let mut good = TlsResp::connect(addr, &pki.client(Some(&pki.client))).expect("mTLS client");
    good.ping();
    // rustls' client finishes its side before the server checks; the refusal arrives as the
    // server's alert on the first read.
    let refused = TlsResp::connect(addr, &pki.client(None)).and_then(|mut c| c.cmd(&[b"PING"]));
    let err = refused.expect_err("a client without a certificate under tls-auth-clients yes");
    assert!(
        err.to_string().contains("CertificateRequired") || err.to_string().contains("alert"),
        "the refusal names its cause: {err}"
    );
    good.ping();
}

#[test]
fn redis_benchmark_over_tls_answers_every_request() {
    let Some(bench) = require_tool("redis-benchmark") else {
        return;
    };
    let pki = Pki::new();
    let server = pki.server("yes", Duration::from_secs(10));
    let addr = tls_addr(&server);
    let mut cmd = Command::new(bench);
    cmd.args(["-h", "127.0.0.1", "-p", &addr.port().to_string(), "-q"])
        .args(["--tls", "--cacert"])
        .arg(pki.file("ca.pem"))
        .arg("--cert")
        .arg(pki.file("client.pem"))
        .arg("--key")
        .arg(pki.file("client.key"))
        .args([
            "-t",
            "set,get,ping",
            "-n",
            "2000",
            "-P",
            "16",
            "-d",
            "4096",
            "-c",
            "4",
        ]);
    let out = run("redis-benchmark --tls", cmd, b"", TOOL_LIMIT);
    let text = out.out();
    assert!(
        out.status.success() && !text.to_ascii_lowercase().contains("err"),
        "redis-benchmark --tls: {}",
        out.describe()
    );
    // redis-benchmark prints a test's rate only once all its requests were answered.
    let done: Vec<&str> = text
        .split(['\r', '\n'])
        .filter(|l| l.contains(" requests per second"))
        .filter_map(|l| l.trim().split_once(": ").map(|(name, _)| name))
        .collect();
    assert_eq!(
        done,
        ["PING_INLINE", "PING_MBULK", "SET", "GET"],
        "redis-benchmark --tls: {}",
        out.describe()
    );
    // Every GET found its 4 KiB value: the SETs all landed.
    let mut c = TlsResp::connect(addr, &pki.client(Some(&pki.client))).expect("mTLS client");
    match c.cmd(&[b"GET", b"key:__rand_int__"]).expect("GET") {
        Reply::Bulk(v) => assert_eq!(v.len(), 4096),
        other => panic!("GET after redis-benchmark: {other:?}"),
    }
}

#[test]
fn redis_py_over_tls_with_and_without_client_certificate() {
    let Some(python) = require_python_redis() else {
        return;
    };
    let pki = Pki::new();
    for (auth, cert) in [("yes", true), ("optional", false)] {
        let server = pki.server(auth, Duration::from_secs(10));
        let addr = tls_addr(&server);
        let certs = if cert {
            format!(
                ", ssl_certfile={:?}, ssl_keyfile={:?}",
                pki.file("client.pem"),
                pki.file("client.key")
            )
        } else {
            String::new()
        };
        let script = format!(
            "import redis\n\
             r = redis.Redis(host='127.0.0.1', port={port}, ssl=True, ssl_ca_certs={ca:?}{certs})\n\
             big = bytes(range(256)) * 4099\n\
             assert r.set('big', big)\n\
             assert r.get('big') == big, 'GET big differs'\n\
             p = r.pipeline(transaction=False)\n\
             for i in range(64): p.set(f'k{{i}}', big[i:i + 1000 + i])\n\
             for i in range(64): p.get(f'k{{i}}')\n\
             out = p.execute()\n\
             assert out[64:] == [big[i:i + 1000 + i] for i in range(64)], 'pipelined GETs differ'\n\
             print('redis-py over TLS: ok')\n",
            port = addr.port(),
            ca = pki.file("ca.pem"),
        );
        let mut cmd = Command::new(&python);
        cmd.args(["-c", &script]);
        let out = run("python3 redis-py ssl=True", cmd, b"", TOOL_LIMIT);
        assert!(
            out.status.success(),
            "redis-py, tls-auth-clients {auth}: {}",
            out.describe()
        );
    }
}

#[test]
fn large_get_replies_over_tls_byte_for_byte() {
    let pki = Pki::new();
    let server = pki.server("optional", Duration::from_secs(10));
    let mut c = TlsResp::connect(tls_addr(&server), &pki.client(None)).expect("TLS client");
    let sizes = [
        100,
        511,
        512,
        4096,
        16 << 10,
        (16 << 10) + 1,
        300_001,
        1 << 20,
        3 << 20,
    ];
    let values: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|j| (j * 31 + i * 7 + j / 251) as u8).collect())
        .collect();
    for (i, v) in values.iter().enumerate() {
        let key = format!("v{i}");
        assert_eq!(
            c.cmd(&[b"SET", key.as_bytes(), v]).expect("SET"),
            Reply::simple("OK")
        );
    }
    // All GETs pipelined in one write: one batch of replies, most values referenced.
    let mut pipeline = Vec::new();
    for round in 0..3 {
        for i in 0..values.len() {
            pipeline.extend(encode(&[
                b"GET",
                format!("v{}", (i + round) % values.len()).as_bytes(),
            ]));
        }
    }
    c.r.get_mut().write_all(&pipeline).expect("pipelined GETs");
    for round in 0..3 {
        for i in 0..values.len() {
            let want = &values[(i + round) % values.len()];
            match c.r.reply().expect("a GET reply") {
                Reply::Bulk(got) => assert!(
                    got == *want,
                    "GET of {} bytes over TLS: {} bytes back, first difference at {:?}",
                    want.len(),
                    got.len(),
                    got.iter().zip(want).position(|(a, b)| a != b)
                ),
                other => panic!("GET of {} bytes: {other:?}", want.len()),
            }
        }
    }
    let info = server.info();
    assert!(
        Stats::get(&info.stats.reply_bytes_referenced) > 0,
        "large values went out as gather entries"
    );
}

/// Reads until the server closes the connection (`true`), or the hang guard passes (`false`).
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(DEADLINE)).expect("read timeout");
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn wrong_protocol_on_either_port_fails_cleanly_while_another_client_is_served() {
    let pki = Pki::new();
    let server = pki.server("optional", Duration::from_secs(10));
    let anonymous = pki.client(None);
    let mut good = TlsResp::connect(tls_addr(&server), &anonymous).expect("TLS client");
    good.ping();

    // Plain RESP on the TLS port: closed (rustls: not TLS).
    let mut plain = TcpStream::connect(tls_addr(&server)).expect("connect");
    plain.write_all(&encode(&[b"PING"])).expect("write");
    assert!(
        closed_by_server(&mut plain),
        "plain RESP on the TLS port was not closed"
    );
    good.ping();

    // A TLS handshake on the plain port: closed, the handshake fails.
    let err = TlsResp::connect(server.addr(), &anonymous)
        .and_then(|mut c| c.cmd(&[b"PING"]))
        .expect_err("a TLS client on the plain port");
    eprintln!("TLS client on the plain port: {err}");
    good.ping();

    // Tools: redis-cli without --tls on the TLS port, with --tls on the plain port.
    if let Some(cli) = require_tool("redis-cli") {
        let mut cmd = Command::new(&cli);
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &tls_addr(&server).port().to_string(),
            "PING",
        ]);
        let out = run("redis-cli PING (TLS port, no --tls)", cmd, b"", TOOL_LIMIT);
        assert_ne!(
            out.out(),
            "PONG\n",
            "plain redis-cli on the TLS port: {}",
            out.describe()
        );
        let out = redis_cli(&cli, &pki, server.addr(), &[], &["PING"]);
        assert_ne!(
            out.out(),
            "PONG\n",
            "redis-cli --tls on the plain port: {}",
            out.describe()
        );
    }
    good.ping();
    assert_eq!(good.cmd(&[b"SET", b"k", b"v"]).expect("SET"), Reply::simple("OK"));
}

#[test]
fn peers_stalled_mid_handshake_are_dropped_at_the_timeout_while_a_good_client_is_served() {
    let pki = Pki::new();
    let timeout = Duration::from_millis(500);
    let server = pki.server("optional", timeout);
    let addr = tls_addr(&server);
    let mut good = TlsResp::connect(addr, &pki.client(None)).expect("TLS client");
    good.ping();
    let baseline = Stats::get(&server.info().stats.connected_clients);

    // 100 peers: half say nothing, half send a TLS record header and stop inside it.
    let opened = Instant::now();
    let mut stalled: Vec<TcpStream> = (0..100)
        .map(|i| {
            let mut s = TcpStream::connect(addr).expect("connect");
            if i % 2 == 1 {
                s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
                    .expect("a partial ClientHello");
            }
            s
        })
        .collect();
    // The good client is served while they stall.
    for _ in 0..50 {
        good.ping();
    }
    for (i, s) in stalled.iter_mut().enumerate() {
        assert!(closed_by_server(s), "stalled peer {i} was not closed");
    }
    // Never before the timeout (a lower bound the server guarantees, not a timing threshold).
    assert!(
        opened.elapsed() >= timeout,
        "stalled peers were closed {:?} after connecting, before the {timeout:?} timeout",
        opened.elapsed()
    );
    good.ping();
    wait_until("the stalled peers' client slots freed", DEADLINE, || {
        Stats::get(&server.info().stats.connected_clients) == baseline
    });
}

#[test]
fn tls_only_server_with_the_plain_port_off() {
    let pki = Pki::new();
    let tls = TlsServer::from_pem(pki.server.0.as_bytes(), pki.server.1.as_bytes(), ClientAuth::None)
        .expect("server TLS settings");
    let server = start(Config {
        plain: false,
        tls: Some(Tls { port: 0, server: tls }),
        ..config()
    });
    assert_eq!(server.addr(), tls_addr(&server));
    let mut c = TlsResp::connect(tls_addr(&server), &pki.client(None)).expect("TLS client");
    c.ping();
    let port = tls_addr(&server).port().to_string();
    let got = c.cmd(&[b"CONFIG", b"GET", b"*port"]).expect("CONFIG GET");
    let want = [b"port" as &[u8], b"0", b"tls-port", port.as_bytes()];
    assert_eq!(
        got,
        Reply::Array(want.iter().map(|b| Reply::Bulk(b.to_vec())).collect())
    );
    let refused = ferry_redis::Server::bind(Config {
        plain: false,
        ..config()
    });
    assert!(refused.is_err(), "a server with no listener at all");
}
