//! A command runner for the handler tests: a fresh keyspace, client and server, and the
//! reply bytes out.

use std::net::SocketAddr;

use crate::cmd::{Args, Client, ServerInfo, Session, execute};
use crate::config::Config;
use crate::db::Db;
use crate::resp::ReplyBuf;

/// A harness as the connection and server commands' tests use it: client 7, a server with
/// `password` (authenticated from the start when there is none), replies all copied.
pub fn server_harness(password: Option<&str>) -> Harness {
    let config = Config {
        password: password.map(str::to_owned),
        ..Config::default()
    };
    Harness {
        db: Db::new(ferry_testkit::pool(), 4096),
        client: Client::new(
            7,
            "127.0.0.1:50000".parse::<SocketAddr>().unwrap(),
            "127.0.0.1:6379".parse::<SocketAddr>().unwrap(),
            1_700_000_000_000,
            password.is_none(),
        ),
        others: (1..16).map(|_| Db::new(ferry_testkit::pool(), 4096)).collect(),
        server: ServerInfo::new(config, 6379, "ab".repeat(20)),
        now_ms: 1_700_000_005_000,
        zero_copy: usize::MAX,
    }
}

/// Values at least this long are referenced by replies (small, so tests cover both paths).
pub const ZERO_COPY: usize = 8;
/// Values at least this long stay in the request buffer.
pub const KEEP_IN_PLACE: usize = 16;

pub struct Harness {
    /// Database 0.
    pub db: Db,
    /// Databases 1 to 15.
    pub others: Vec<Db>,
    pub client: Client,
    pub server: ServerInfo,
    pub now_ms: u64,
    /// The replies' zero-copy threshold.
    pub zero_copy: usize,
}

impl Harness {
    pub fn new() -> Harness {
        let addr: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        Harness {
            db: Db::new(ferry_testkit::pool(), KEEP_IN_PLACE),
            client: Client::new(1, addr, addr, 0, true),
            others: (1..16)
                .map(|_| Db::new(ferry_testkit::pool(), KEEP_IN_PLACE))
                .collect(),
            server: ServerInfo::new(Config::default(), 6379, "0".repeat(40)),
            now_ms: 1_700_000_000_000,
            zero_copy: ZERO_COPY,
        }
    }

    /// Runs one command (the arguments as one pool buffer, as a read buffer would hold
    /// them) as the server loop does, the reply in the client's protocol, and returns the
    /// reply bytes, referenced values spliced in.
    pub fn run(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let mut base = Vec::new();
        let mut ranges = Vec::new();
        for a in args {
            ranges.push(base.len()..base.len() + a.len());
            base.extend_from_slice(a);
        }
        let shared = self.db.pool().copy_from(&base).unwrap();
        let args = Args::new(&shared, &ranges, Some(&shared));
        let mut out = ReplyBuf::new(self.zero_copy);
        self.run_into(&args, &mut out);
        let (bytes, refs) = out.parts();
        let mut reply = Vec::new();
        let mut at = 0;
        for (offset, buf) in refs {
            reply.extend_from_slice(&bytes[at..*offset]);
            reply.extend_from_slice(buf);
            at = *offset;
        }
        reply.extend_from_slice(&bytes[at..]);
        reply
    }

    /// Runs one command as the server loop does, its reply (in the client's protocol) left
    /// in `out`.
    pub fn run_into(&mut self, args: &Args<'_>, out: &mut ReplyBuf) {
        out.set_proto(self.client.proto);
        // The databases in one slice for the command, database 0 back in `db` after it.
        let placeholder = Db::new(self.db.pool().clone(), KEEP_IN_PLACE);
        let mut all: Vec<Db> = std::iter::once(std::mem::replace(&mut self.db, placeholder))
            .chain(self.others.drain(..))
            .collect();
        let mut session = Session {
            dbs: &mut all,
            client: &mut self.client,
            server: &self.server,
            now_ms: self.now_ms,
        };
        execute(&mut session, args, out);
        self.db = all.remove(0);
        self.others = all;
    }

    /// Runs a command given as space-separated words; the reply as (lossy) text.
    pub fn cmd(&mut self, line: &str) -> String {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        String::from_utf8_lossy(&self.run(&words)).into_owned()
    }
}

/// A RESP2 bulk string.
pub fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// A RESP2 error reply.
pub fn err(msg: &str) -> String {
    format!("-{msg}\r\n")
}

/// A RESP2 integer reply.
pub fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

/// A RESP2 array of bulk strings.
pub fn bulks(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s.push_str(&bulk(i));
    }
    s
}

pub const OK: &str = "+OK\r\n";
pub const NULL: &str = "$-1\r\n";
pub const NULL_ARRAY: &str = "*-1\r\n";
