//! The replica's side of replication (`REPLICAOF host port`): a thread that connects to the
//! master, asks for its dataset with `SYNC`, loads the RDB it sends into the databases, and
//! then runs the command stream that follows as the master's client. A master it cannot reach
//! or that drops the link is tried again every second, as Redis's replication cron does, until
//! `REPLICAOF NO ONE` or another master. The state it follows is
//! [`cmd::replication::Follow`]; clients get `READONLY` for writes meanwhile.
//!
//! What it is not: a partial resynchronization. It sends `SYNC`, not `PSYNC`, so every link is
//! a full copy and it sends no `REPLCONF ACK` (a master does not time out a `SYNC` replica for
//! that). It does not authenticate to the master (`masterauth`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferry_buf::Pool;

use crate::cmd::replication::Follow;
use crate::cmd::{self, Args, Client, ServerInfo, Session};
use crate::db::Db;
use crate::rdb;
use crate::resp::ReplyBuf;
use crate::resp::client::{Reply, ReplyReader};

/// How long a replica waits before trying its master again (Redis's replication cron: 1 s).
const RETRY: Duration = Duration::from_secs(1);
/// Connecting to a master gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a link to the master ended.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The socket failed (connect, read, write), or the master closed it.
    #[error("master {master}: {source}")]
    Io {
        /// `host:port`.
        master: String,
        /// The error.
        source: io::Error,
    },
    /// The master answered the handshake with something else than expected.
    #[error("master {master}: {what}")]
    Protocol {
        /// `host:port`.
        master: String,
        /// What it sent.
        what: String,
    },
    /// The master's RDB could not be loaded.
    #[error("master {master}: its RDB: {source}")]
    Rdb {
        /// `host:port`.
        master: String,
        /// Why.
        source: rdb::RdbError,
    },
}

/// What the follower thread needs of the server.
pub struct Replica<'a> {
    /// The server's information (its [`Follow`] state, configuration, counters).
    pub info: &'a ServerInfo,
    /// The databases.
    pub dbs: &'a Mutex<Vec<Db>>,
    /// The pool values are loaded into.
    pub pool: &'a Pool,
    /// Set when the server stops.
    pub stop: &'a AtomicBool,
    /// Every loop's eventfd: a command from the master may serve a blocked client or publish.
    pub wakers: &'a [OwnedFd],
}

impl Replica<'_> {
    /// Follows whichever master [`Follow`] names until the server stops.
    pub fn run(&self) {
        let follow: &Follow = &self.info.follow;
        let mut generation = 0;
        while let Some((master, g)) = follow.next_master(generation, self.stop) {
            generation = g;
            if let Err(e) = self.link(&master, g) {
                if follow.is_current(g) && !self.stop.load(Ordering::SeqCst) {
                    eprintln!("ferry-redis: replication: {e}; retrying");
                }
            }
            follow.set_link_up(g, false);
            // Try again after a while, unless another master (or none) was set meanwhile.
            if follow.is_current(g) && !follow.wait_change(g, RETRY, self.stop) {
                generation = g - 1; // the same master, once more
            }
        }
    }

    /// One link to `master` (`host:port`): the handshake, the RDB, then the stream until it
    /// ends (the master closed it, or [`Follow`] shut it down for another master).
    fn link(&self, master: &str, generation: u64) -> Result<(), LinkError> {
        let io_err = |source| LinkError::Io {
            master: master.to_string(),
            source,
        };
        let addr = master
            .to_socket_addrs()
            .map_err(io_err)?
            .next()
            .ok_or_else(|| io_err(io::Error::new(io::ErrorKind::NotFound, "no address")))?;
        let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(io_err)?;
        stream.set_nodelay(true).map_err(io_err)?;
        if !self.info.follow.attach(generation, &stream) {
            return Ok(()); // another master was set meanwhile
        }
        let mut out = stream.try_clone().map_err(io_err)?;
        let mut input = BufReader::new(stream);
        let protocol = |what: String| LinkError::Protocol {
            master: master.to_string(),
            what,
        };
        let port = self.info.port.to_string();
        for request in [
            &[&b"PING"[..]][..],
            &[b"REPLCONF", b"listening-port", port.as_bytes()],
        ] {
            send(&mut out, request).map_err(io_err)?;
            let line = read_line(&mut input).map_err(io_err)?;
            // A master with a password answers -NOAUTH; one without REPLCONF an error too,
            // which Redis's replica ignores for REPLCONF.
            if line.starts_with('-') && request[0] == b"PING" {
                return Err(protocol(format!("PING answered {line}")));
            }
        }
        send(&mut out, &[b"SYNC"]).map_err(io_err)?;
        // The master may send newlines while it prepares the RDB.
        let header = loop {
            let line = read_line(&mut input).map_err(io_err)?;
            if !line.is_empty() {
                break line;
            }
        };
        let len: usize = header
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| protocol(format!("SYNC answered {header}")))?;
        // Read as it arrives: the announced length buys no memory before its bytes come.
        let mut bytes = Vec::new();
        (&mut input)
            .take(len as u64)
            .read_to_end(&mut bytes)
            .map_err(io_err)?;
        if bytes.len() < len {
            return Err(protocol(format!(
                "the RDB payload ended after {} of {len} bytes",
                bytes.len()
            )));
        }
        self.load(&bytes).map_err(|source| LinkError::Rdb {
            master: master.to_string(),
            source,
        })?;
        self.info.follow.set_link_up(generation, true);
        let mut client = Client::new(0, addr, addr, now_ms(), true);
        client.master = true;
        let mut replies = ReplyReader::new(input);
        loop {
            let request = match replies.reply() {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(io_err(e)),
            };
            if !self.info.follow.is_current(generation) {
                return Ok(());
            }
            if let Reply::Array(words) = request {
                self.apply(&mut client, &words);
            }
        }
    }

    /// Replaces every database's keys with the RDB's.
    fn load(&self, bytes: &[u8]) -> Result<(), rdb::RdbError> {
        let mut dbs = self.dbs.lock().unwrap_or_else(PoisonError::into_inner);
        let snapshot = rdb::decode(bytes, self.pool, &cmd::persist::limits(dbs.len(), self.pool))?;
        dbs.iter_mut().for_each(Db::flush);
        snapshot.restore(dbs.iter_mut(), now_ms());
        Ok(())
    }

    /// Runs one command of the master's stream (its reply is dropped, as Redis's replica
    /// does), then wakes the loops it left work for.
    fn apply(&self, client: &mut Client, words: &[Reply]) {
        let mut bytes = Vec::new();
        let mut ranges = Vec::with_capacity(words.len());
        for w in words {
            let Reply::Bulk(b) = w else { return };
            let start = bytes.len();
            bytes.extend_from_slice(b);
            ranges.push(start..bytes.len());
        }
        if ranges.is_empty() {
            return;
        }
        let mut out = ReplyBuf::new(usize::MAX);
        {
            let mut dbs = self.dbs.lock().unwrap_or_else(PoisonError::into_inner);
            let mut session = Session {
                dbs: &mut dbs,
                client,
                server: self.info,
                now_ms: now_ms(),
            };
            cmd::execute(&mut session, &Args::new(&bytes, &ranges, None), &mut out);
        }
        for l in std::mem::take(&mut client.wake) {
            if let Some(w) = self.wakers.get(l) {
                let _ = rustix::io::write(w, &1u64.to_ne_bytes());
            }
        }
    }
}

/// Sends one request.
fn send(out: &mut TcpStream, request: &[&[u8]]) -> io::Result<()> {
    let mut bytes = Vec::new();
    crate::resp::client::encode_command(&mut bytes, request);
    out.write_all(&bytes)
}

/// One `\r\n`-ended line (without it).
fn read_line(input: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the master closed the link",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
