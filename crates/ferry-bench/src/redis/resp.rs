//! A minimal RESP2 client for preloading and checking the servers: commands encoded as
//! arrays of bulk strings, replies parsed from a buffer with no I/O ([`parse`]), and a
//! blocking connection around both ([`Conn`]).
//!
//! It is independent of `ferry-redis` on purpose: the harness checks the server under test
//! with its own reading of the protocol.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Largest bulk string accepted from a server (Redis's own `proto-max-bulk-len`).
pub const MAX_BULK: usize = 512 << 20;
/// Most elements accepted in one array.
pub const MAX_ARRAY: usize = 1 << 20;
/// Deepest nesting of arrays accepted.
pub const MAX_DEPTH: usize = 8;

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Simple(String),
    /// `-ERR ...`.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nabc`, or `$-1` (`None`).
    Bulk(Option<Vec<u8>>),
    /// `*2 ...`, or `*-1` (`None`).
    Array(Option<Vec<Reply>>),
}

/// Why a reply could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RespError {
    /// A type byte that RESP2 does not have.
    #[error("offset {offset}: unknown reply type {byte:#04x}")]
    Type {
        /// Where.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// A length or integer line that is not a number.
    #[error("offset {offset}: {line:?} is not an integer")]
    Integer {
        /// Where the line starts.
        offset: usize,
        /// The line.
        line: String,
    },
    /// A length past [`MAX_BULK`] or [`MAX_ARRAY`], or arrays nested past [`MAX_DEPTH`].
    #[error("offset {offset}: {what} {found} exceeds the limit {limit}")]
    Limit {
        /// Where.
        offset: usize,
        /// "bulk length", "array length" or "nesting".
        what: &'static str,
        /// The value found.
        found: i64,
        /// The limit.
        limit: usize,
    },
    /// A bulk string not followed by CRLF.
    #[error("offset {offset}: bulk string not terminated by CRLF")]
    Terminator {
        /// Where the CRLF should be.
        offset: usize,
    },
}

/// Appends one command, as an array of bulk strings, to `out`.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "*{}\r\n", args.len());
    for a in args {
        let _ = write!(out, "${}\r\n", a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Parses one reply from the start of `buf`: `Ok(None)` if `buf` holds only part of it,
/// else the reply and the bytes it took.
pub fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, RespError> {
    parse_at(buf, 0, 0)
}

/// The line starting at `at` (without its CRLF) and the offset after it.
fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let end = buf.get(at..)?.windows(2).position(|w| w == b"\r\n")? + at;
    Some((&buf[at..end], end + 2))
}

fn integer(text: &[u8], offset: usize) -> Result<i64, RespError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| RespError::Integer {
            offset,
            line: String::from_utf8_lossy(text).into_owned(),
        })
}

/// Parses the reply starting at `at`: the reply and the offset after it.
fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Reply, usize)>, RespError> {
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let Some((text, next)) = line(buf, at + 1) else {
        return Ok(None);
    };
    let text_at = at + 1;
    let limit = |what, found: i64, limit: usize| RespError::Limit {
        offset: at,
        what,
        found,
        limit,
    };
    let reply = match kind {
        b'+' => (Reply::Simple(String::from_utf8_lossy(text).into_owned()), next),
        b'-' => (Reply::Error(String::from_utf8_lossy(text).into_owned()), next),
        b':' => (Reply::Integer(integer(text, text_at)?), next),
        b'$' => {
            let len = integer(text, text_at)?;
            if len < 0 {
                (Reply::Bulk(None), next)
            } else {
                let n = usize::try_from(len)
                    .ok()
                    .filter(|&n| n <= MAX_BULK)
                    .ok_or_else(|| limit("bulk length", len, MAX_BULK))?;
                if buf.len() < next + n + 2 {
                    return Ok(None);
                }
                if &buf[next + n..next + n + 2] != b"\r\n" {
                    return Err(RespError::Terminator { offset: next + n });
                }
                (Reply::Bulk(Some(buf[next..next + n].to_vec())), next + n + 2)
            }
        }
        b'*' => {
            let len = integer(text, text_at)?;
            if len < 0 {
                (Reply::Array(None), next)
            } else {
                let n = usize::try_from(len)
                    .ok()
                    .filter(|&n| n <= MAX_ARRAY)
                    .ok_or_else(|| limit("array length", len, MAX_ARRAY))?;
                if depth >= MAX_DEPTH {
                    return Err(limit("nesting", depth as i64 + 1, MAX_DEPTH));
                }
                // Not allocated from `n` up front: the elements must be present first.
                let mut items = Vec::new();
                let mut pos = next;
                for _ in 0..n {
                    match parse_at(buf, pos, depth + 1)? {
                        Some((item, after)) => {
                            items.push(item);
                            pos = after;
                        }
                        None => return Ok(None),
                    }
                }
                (Reply::Array(Some(items)), pos)
            }
        }
        byte => return Err(RespError::Type { offset: at, byte }),
    };
    Ok(Some(reply))
}

/// A blocking connection: send encoded commands, read replies one at a time.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Where the unread bytes of `buf` start.
    start: usize,
}

impl Conn {
    /// Connects to `127.0.0.1:port`, every read and write bounded by `timeout`.
    pub fn connect(port: u16, timeout: Duration) -> std::io::Result<Conn> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(64 << 10),
            start: 0,
        })
    }

    /// Writes already encoded commands.
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads the next reply.
    pub fn read(&mut self) -> Result<Reply, crate::BoxError> {
        loop {
            if let Some((reply, used)) = parse(&self.buf[self.start..])? {
                self.start += used;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                return Ok(reply);
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let len = self.buf.len();
            self.buf.resize(len + (64 << 10), 0);
            let n = self.stream.read(&mut self.buf[len..]);
            self.buf.truncate(len + n.as_ref().map_or(0, |&n| n));
            match n {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(_) => {}
                Err(e) => return Err(format!("reading a reply: {e}").into()),
            }
        }
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply, crate::BoxError> {
        let mut out = Vec::new();
        encode(&mut out, args);
        self.send(&out)?;
        self.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_commands() {
        let mut out = Vec::new();
        encode(&mut out, &[b"SET", b"key:000000000001", b""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000001\r\n$0\r\n\r\n");
    }

    #[test]
    fn parses_replies() {
        let all: &[(&[u8], Reply)] = &[
            (b"+OK\r\n", Reply::Simple("OK".into())),
            (
                b"-ERR unknown command\r\n",
                Reply::Error("ERR unknown command".into()),
            ),
            (b":-2\r\n", Reply::Integer(-2)),
            (b"$-1\r\n", Reply::Bulk(None)),
            (b"$0\r\n\r\n", Reply::Bulk(Some(vec![]))),
            (b"$5\r\nab\r\nc\r\n", Reply::Bulk(Some(b"ab\r\nc".to_vec()))),
            (b"*-1\r\n", Reply::Array(None)),
            (
                b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
                Reply::Array(Some(vec![
                    Reply::Bulk(Some(b"a".to_vec())),
                    Reply::Array(Some(vec![Reply::Integer(1)])),
                ])),
            ),
        ];
        for (bytes, reply) in all {
            let mut more = bytes.to_vec();
            more.extend_from_slice(b"+NEXT\r\n");
            assert_eq!(parse(&more), Ok(Some((reply.clone(), bytes.len()))), "{bytes:?}");
            // Every proper prefix is incomplete, never an error.
            for cut in 0..bytes.len() {
                assert_eq!(parse(&bytes[..cut]), Ok(None), "{:?}", &bytes[..cut]);
            }
        }
    }

    #[test]
    fn refuses_bad_replies() {
        assert!(matches!(
            parse(b"?x\r\n"),
            Err(RespError::Type { byte: b'?', .. })
        ));
        assert!(matches!(
            parse(b":1x\r\n"),
            Err(RespError::Integer { offset: 1, .. })
        ));
        assert!(matches!(
            parse(b"$3\r\nabcde"),
            Err(RespError::Terminator { offset: 7 })
        ));
        assert!(matches!(
            parse(b"$999999999999\r\n"),
            Err(RespError::Limit {
                what: "bulk length",
                ..
            })
        ));
        assert!(matches!(
            parse(b"*99999999\r\n"),
            Err(RespError::Limit {
                what: "array length",
                ..
            })
        ));
        let deep = "*1\r\n".repeat(MAX_DEPTH + 1);
        assert!(matches!(
            parse(deep.as_bytes()),
            Err(RespError::Limit { what: "nesting", .. })
        ));
    }
}
