//! The client's side of RESP: commands encoded as arrays of bulk strings ([`encode_command`]),
//! replies (RESP2 and RESP3) parsed from bytes with no I/O ([`parse_reply`]), and a blocking
//! reader of replies over any [`Read`] ([`ReplyReader`]). The server never uses it: tests and
//! the benchmark read Ferry's replies with it, and redis-server's, so it is written from the
//! protocol's description, not from the server's encoder ([`super::reply`]).
//!
//! Replies are untrusted bytes: every length is checked against a limit before anything is
//! allocated for it, nesting is bounded, and a malformed reply is a [`ReplyError`] saying what
//! and at which offset, never a panic.

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Longest line (a simple string, an error, a number) accepted.
pub const MAX_LINE: usize = 64 << 10;
/// Largest bulk string accepted (Redis's own `proto-max-bulk-len`).
pub const MAX_BULK: usize = 512 << 20;
/// Most elements accepted in one aggregate (array, map, set, push).
pub const MAX_ELEMENTS: usize = 1 << 22;
/// Deepest nesting of aggregates accepted.
pub const MAX_DEPTH: usize = 32;

/// One reply as it was on the wire. RESP2's two nulls (`$-1`, `*-1`) and RESP3's `_` stay
/// distinct: a client can tell them apart.
#[derive(Clone, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Simple(Vec<u8>),
    /// `-ERR ...`.
    Error(Vec<u8>),
    /// `:42`.
    Int(i64),
    /// `$3\r\nabc`.
    Bulk(Vec<u8>),
    /// `$-1`.
    NullBulk,
    /// `*2 ...`.
    Array(Vec<Reply>),
    /// `*-1`.
    NullArray,
    /// `_` (RESP3).
    Null,
    /// `#t`, `#f`.
    Bool(bool),
    /// The text as sent (`,1.5`, `,inf`).
    Double(Vec<u8>),
    /// `(12345678901234567890`.
    BigNumber(Vec<u8>),
    /// `!<len>`: an error as a blob.
    BlobError(Vec<u8>),
    /// `=<len>`, with its `txt:` prefix.
    Verbatim(Vec<u8>),
    /// `%<n>`: key-value pairs.
    Map(Vec<(Reply, Reply)>),
    /// `~<n>`.
    Set(Vec<Reply>),
    /// `><n>`: an out-of-band message.
    Push(Vec<Reply>),
}

impl Reply {
    /// `+<text>`.
    pub fn simple(text: &str) -> Reply {
        Reply::Simple(text.as_bytes().to_vec())
    }

    /// `-<text>`.
    pub fn error(text: &str) -> Reply {
        Reply::Error(text.as_bytes().to_vec())
    }
}

/// Why bytes are not a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// A type byte that RESP does not have.
    #[error("offset {offset}: not a reply type: {byte:#04x}")]
    Type {
        /// Where.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// A line not ended by CRLF (a bare LF), or a blob not followed by CRLF.
    #[error("offset {offset}: CRLF expected")]
    Terminator {
        /// Where the CRLF should be.
        offset: usize,
    },
    /// A line longer than [`MAX_LINE`].
    #[error("offset {offset}: a line longer than {MAX_LINE} bytes")]
    LineTooLong {
        /// Where the line starts.
        offset: usize,
    },
    /// A number, length or boolean that is not one (`:1x`, `$+3`, `#x`).
    #[error("offset {offset}: not a {what}: {text}")]
    Number {
        /// Where the text starts.
        offset: usize,
        /// "integer", "length" or "boolean".
        what: &'static str,
        /// The text, escaped.
        text: String,
    },
    /// A length past its limit, or nesting past [`MAX_DEPTH`].
    #[error("offset {offset}: {what} {found} exceeds the limit {limit}")]
    Limit {
        /// Where.
        offset: usize,
        /// "bulk length", "element count" or "nesting".
        what: &'static str,
        /// The value found.
        found: i64,
        /// The limit.
        limit: usize,
    },
    /// A verbatim string without its three-letter format and `:`.
    #[error("offset {offset}: a verbatim string without a format")]
    Verbatim {
        /// Where.
        offset: usize,
    },
}

/// Appends one command, as an array of bulk strings, to `out` (a client's request, or a
/// command of the replication stream: [`crate::feed`]).
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Parses one reply from the start of `buf`: `Ok(None)` if `buf` holds only part of it, else
/// the reply and the bytes it took.
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, ReplyError> {
    Parser::new(buf).value(0, 0)
}

struct Parser<'a> {
    buf: &'a [u8],
    /// After an incomplete parse: how many bytes, at least, the reply takes.
    need: Cell<usize>,
}

impl<'a> Parser<'a> {
    fn new(buf: &'a [u8]) -> Parser<'a> {
        Parser {
            buf,
            need: Cell::new(0),
        }
    }

    /// Incomplete: the reply takes at least `need` bytes.
    fn short<T>(&self, need: usize) -> Result<Option<T>, ReplyError> {
        self.need.set(need);
        Ok(None)
    }

    /// The line starting at `at` (without its CRLF) and the offset after it.
    fn line(&self, at: usize) -> Result<Option<(&[u8], usize)>, ReplyError> {
        let rest = self.buf.get(at..).unwrap_or_default();
        match rest.iter().take(MAX_LINE + 2).position(|&b| b == b'\n') {
            Some(lf) if lf > 0 && rest[lf - 1] == b'\r' => Ok(Some((&rest[..lf - 1], at + lf + 1))),
            Some(lf) => Err(ReplyError::Terminator { offset: at + lf }),
            None if rest.len() > MAX_LINE + 1 => Err(ReplyError::LineTooLong { offset: at }),
            None => self.short(self.buf.len() + 1),
        }
    }

    /// The blob of `len` bytes at `at` and its CRLF: the blob and the offset after it.
    fn blob(&self, at: usize, len: usize) -> Result<Option<(Vec<u8>, usize)>, ReplyError> {
        let end = at + len;
        match self.buf.get(end..end + 2) {
            None => self.short(end + 2),
            Some(b"\r\n") => Ok(Some((self.buf[at..end].to_vec(), end + 2))),
            Some(_) => Err(ReplyError::Terminator { offset: end }),
        }
    }

    /// `n` replies from `at`, and the offset after them.
    fn values(&self, at: usize, n: usize, depth: usize) -> Result<Option<(Vec<Reply>, usize)>, ReplyError> {
        // Not allocated from `n` up front: the elements must arrive first.
        let (mut items, mut pos) = (Vec::new(), at);
        for _ in 0..n {
            let Some((item, next)) = self.value(pos, depth + 1)? else {
                return Ok(None);
            };
            items.push(item);
            pos = next;
        }
        Ok(Some((items, pos)))
    }

    fn value(&self, at: usize, depth: usize) -> Result<Option<(Reply, usize)>, ReplyError> {
        let Some(&kind) = self.buf.get(at) else {
            return self.short(at + 1);
        };
        let Some((text, next)) = self.line(at + 1)? else {
            return Ok(None);
        };
        let offset = at + 1;
        let limit = |what, found: i64, limit: usize| ReplyError::Limit {
            offset,
            what,
            found,
            limit,
        };
        // A length: -1 (`None`) or 0..=max.
        let length = |max: usize, what: &'static str| -> Result<Option<usize>, ReplyError> {
            match integer(text, offset, "length")? {
                -1 => Ok(None),
                n => Ok(Some(
                    usize::try_from(n)
                        .ok()
                        .filter(|&n| n <= max)
                        .ok_or_else(|| limit(what, n, max))?,
                )),
            }
        };
        // Only strings and arrays have a null of length -1.
        let not_null = |n: Option<usize>| {
            n.ok_or_else(|| ReplyError::Number {
                offset,
                what: "length",
                text: show_bytes(text, 40),
            })
        };
        let count = || not_null(length(MAX_ELEMENTS, "element count")?);
        let aggregate = |n: usize| -> Result<Option<(Vec<Reply>, usize)>, ReplyError> {
            if depth >= MAX_DEPTH {
                return Err(limit("nesting", depth as i64 + 1, MAX_DEPTH));
            }
            self.values(next, n, depth)
        };
        let sized = |wrap: fn(Vec<u8>) -> Reply| -> Result<Option<(Reply, usize)>, ReplyError> {
            let n = not_null(length(MAX_BULK, "bulk length")?)?;
            Ok(self.blob(next, n)?.map(|(b, after)| (wrap(b), after)))
        };
        let done = |reply: Reply| Ok(Some((reply, next)));
        match kind {
            b'+' => done(Reply::Simple(text.to_vec())),
            b'-' => done(Reply::Error(text.to_vec())),
            b':' => done(Reply::Int(integer(text, offset, "integer")?)),
            b'$' => match length(MAX_BULK, "bulk length")? {
                None => done(Reply::NullBulk),
                Some(n) => Ok(self.blob(next, n)?.map(|(b, after)| (Reply::Bulk(b), after))),
            },
            b'*' => match length(MAX_ELEMENTS, "element count")? {
                None => done(Reply::NullArray),
                Some(n) => Ok(aggregate(n)?.map(|(items, after)| (Reply::Array(items), after))),
            },
            b'_' if text.is_empty() => done(Reply::Null),
            b'#' => match text {
                b"t" => done(Reply::Bool(true)),
                b"f" => done(Reply::Bool(false)),
                _ => Err(ReplyError::Number {
                    offset,
                    what: "boolean",
                    text: show_bytes(text, 40),
                }),
            },
            b',' => done(Reply::Double(text.to_vec())),
            b'(' => done(Reply::BigNumber(text.to_vec())),
            b'!' => sized(Reply::BlobError),
            b'=' => match sized(Reply::Verbatim)? {
                Some((Reply::Verbatim(b), _)) if b.len() < 4 || b[3] != b':' => {
                    Err(ReplyError::Verbatim { offset })
                }
                other => Ok(other),
            },
            b'%' => {
                let Some((flat, after)) = aggregate(count()? * 2)? else {
                    return Ok(None);
                };
                let mut flat = flat.into_iter();
                let pairs = std::iter::from_fn(|| Some((flat.next()?, flat.next()?))).collect();
                Ok(Some((Reply::Map(pairs), after)))
            }
            b'~' => Ok(aggregate(count()?)?.map(|(items, after)| (Reply::Set(items), after))),
            b'>' => Ok(aggregate(count()?)?.map(|(items, after)| (Reply::Push(items), after))),
            byte => Err(ReplyError::Type { offset: at, byte }),
        }
    }
}

/// A RESP integer: an optional `-` and decimal digits, nothing else.
fn integer(text: &[u8], offset: usize, what: &'static str) -> Result<i64, ReplyError> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let number = (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
        .then(|| std::str::from_utf8(text).ok()?.parse().ok())
        .flatten();
    number.ok_or_else(|| ReplyError::Number {
        offset,
        what,
        text: show_bytes(text, 40),
    })
}

/// Reads replies from `R`, buffering what arrives past the reply it returns. An incomplete
/// reply is parsed again only once the bytes it was short of have arrived, so a large one
/// costs one parse, not one per read.
#[derive(Debug)]
pub struct ReplyReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Unread bytes needed before parsing again.
    need: usize,
}

impl<R: Read> ReplyReader<R> {
    /// A reader of the replies `inner` carries.
    pub fn new(inner: R) -> ReplyReader<R> {
        ReplyReader {
            inner,
            buf: vec![0; 64 << 10],
            start: 0,
            end: 0,
            need: 1,
        }
    }

    /// The next reply. A malformed one is an `InvalidData` error carrying the
    /// [`ReplyError`]; the end of the stream before a whole reply is `UnexpectedEof`.
    pub fn reply(&mut self) -> io::Result<Reply> {
        loop {
            if self.end - self.start >= self.need {
                let parser = Parser::new(&self.buf[self.start..self.end]);
                let parsed = parser.value(0, 0);
                match parsed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))? {
                    Some((reply, used)) => {
                        self.start += used;
                        self.need = 1;
                        return Ok(reply);
                    }
                    None => self.need = parser.need.get(),
                }
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            // Room for a read, doubling as bytes arrive: a length the peer announced buys no
            // memory before its bytes come.
            if self.buf.len() < self.end + 4096 {
                let len = self.buf.len() * 2;
                self.buf.resize(len, 0);
            }
            match self.inner.read(&mut self.buf[self.end..])? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection closed before a whole reply",
                    ));
                }
                n => self.end += n,
            }
        }
    }

    /// The bytes read but not yet returned as replies, taken out of the buffer.
    pub fn take_buffered(&mut self) -> Vec<u8> {
        let rest = self.buf[self.start..self.end].to_vec();
        (self.start, self.end, self.need) = (0, 0, 1);
        rest
    }

    /// The underlying reader.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

/// Connects to `addr`, sends `PING` and checks that the reply is `+PONG`, every step bounded
/// by `timeout`: whether a server is up and speaking RESP.
pub fn ping(addr: SocketAddr, timeout: Duration) -> io::Result<()> {
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    io::Write::write_all(&mut &stream, b"*1\r\n$4\r\nPING\r\n")?;
    match ReplyReader::new(&stream).reply()? {
        Reply::Simple(s) if s == b"PONG" => Ok(()),
        other => Err(io::Error::other(format!("PING answered {other}"))),
    }
}

/// `bytes` quoted, non-printable ones escaped, cut after `max` bytes with the total length.
pub fn show_bytes(bytes: &[u8], max: usize) -> String {
    let mut s = String::from("\"");
    for &c in bytes.iter().take(max) {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(c as char),
            _ => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s.push('"');
    if bytes.len() > max {
        let _ = write!(s, "...({} bytes)", bytes.len());
    }
    s
}

/// Short and readable: long strings cut, long aggregates cut after 24 elements.
impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(f: &mut fmt::Formatter<'_>, open: &str, items: &[Reply], close: &str) -> fmt::Result {
            f.write_str(open)?;
            for (i, item) in items.iter().take(24).enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{item}")?;
            }
            if items.len() > 24 {
                write!(f, ", ...({} elements)", items.len())?;
            }
            f.write_str(close)
        }
        match self {
            Reply::Simple(s) => write!(f, "+{}", show_bytes(s, 200)),
            Reply::Error(s) => write!(f, "-{}", show_bytes(s, 400)),
            Reply::Int(n) => write!(f, ":{n}"),
            Reply::Bulk(b) => write!(f, "{}", show_bytes(b, 64)),
            Reply::NullBulk => f.write_str("$-1 (null bulk)"),
            Reply::Array(items) => list(f, "*[", items, "]"),
            Reply::NullArray => f.write_str("*-1 (null array)"),
            Reply::Null => f.write_str("_ (RESP3 null)"),
            Reply::Bool(b) => write!(f, "#{}", if *b { 't' } else { 'f' }),
            Reply::Double(d) => write!(f, ",{}", show_bytes(d, 64)),
            Reply::BigNumber(d) => write!(f, "({}", show_bytes(d, 64)),
            Reply::BlobError(b) => write!(f, "!{}", show_bytes(b, 400)),
            Reply::Verbatim(b) => write!(f, "={}", show_bytes(b, 64)),
            Reply::Map(pairs) => {
                f.write_str("%{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
            Reply::Set(items) => list(f, "~{", items, "}"),
            Reply::Push(items) => list(f, ">[", items, "]"),
        }
    }
}

/// As [`fmt::Display`]: a 64 KiB value in a failed assertion stays readable.
impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(b: &[u8]) -> Reply {
        Reply::Bulk(b.to_vec())
    }

    #[test]
    fn encodes_commands() {
        let mut out = Vec::new();
        encode_command(&mut out, &[b"SET".as_slice(), b"key:000000000001", b""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000001\r\n$0\r\n\r\n");
    }

    #[test]
    fn parses_every_type_and_waits_for_the_rest() {
        let all: &[(&[u8], Reply)] = &[
            (b"+OK\r\n", Reply::simple("OK")),
            (b"-ERR unknown command\r\n", Reply::error("ERR unknown command")),
            (b":-2\r\n", Reply::Int(-2)),
            (b"$-1\r\n", Reply::NullBulk),
            (b"$0\r\n\r\n", bulk(b"")),
            (b"$5\r\nab\r\nc\r\n", bulk(b"ab\r\nc")),
            (b"*-1\r\n", Reply::NullArray),
            (
                b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
                Reply::Array(vec![bulk(b"a"), Reply::Array(vec![Reply::Int(1)])]),
            ),
            (b"_\r\n", Reply::Null),
            (b"#t\r\n", Reply::Bool(true)),
            (b",1.5\r\n", Reply::Double(b"1.5".to_vec())),
            (
                b"(123456789012345678901\r\n",
                Reply::BigNumber(b"123456789012345678901".to_vec()),
            ),
            (b"!3\r\nERR\r\n", Reply::BlobError(b"ERR".to_vec())),
            (b"=8\r\ntxt:abcd\r\n", Reply::Verbatim(b"txt:abcd".to_vec())),
            (
                b"%1\r\n+a\r\n:1\r\n",
                Reply::Map(vec![(Reply::simple("a"), Reply::Int(1))]),
            ),
            (b"~1\r\n#f\r\n", Reply::Set(vec![Reply::Bool(false)])),
            (b">1\r\n+m\r\n", Reply::Push(vec![Reply::simple("m")])),
        ];
        for (bytes, reply) in all {
            let mut more = bytes.to_vec();
            more.extend_from_slice(b"+NEXT\r\n");
            assert_eq!(
                parse_reply(&more),
                Ok(Some((reply.clone(), bytes.len()))),
                "{bytes:?}"
            );
            // Every proper prefix is incomplete, never an error.
            for cut in 0..bytes.len() {
                assert_eq!(parse_reply(&bytes[..cut]), Ok(None), "{:?}", &bytes[..cut]);
            }
        }
    }

    #[test]
    fn refuses_malformed_replies() {
        let err = |b: &[u8]| parse_reply(b).unwrap_err();
        assert_eq!(
            err(b"?x\r\n"),
            ReplyError::Type {
                offset: 0,
                byte: b'?'
            }
        );
        assert!(matches!(err(b":1x\r\n"), ReplyError::Number { offset: 1, .. }));
        assert!(matches!(err(b":+1\r\n"), ReplyError::Number { .. }));
        assert!(matches!(
            err(b":99999999999999999999\r\n"),
            ReplyError::Number { .. }
        ));
        assert_eq!(err(b"+OK\n"), ReplyError::Terminator { offset: 3 });
        assert_eq!(err(b"$3\r\nabcde"), ReplyError::Terminator { offset: 7 });
        assert!(matches!(
            err(b"#x\r\n"),
            ReplyError::Number { what: "boolean", .. }
        ));
        assert_eq!(err(b"=2\r\nab\r\n"), ReplyError::Verbatim { offset: 1 });
        assert!(matches!(
            err(b"%-1\r\n"),
            ReplyError::Number { what: "length", .. }
        ));
        assert!(matches!(
            err(b"!-1\r\n"),
            ReplyError::Number { what: "length", .. }
        ));
        assert!(matches!(
            err(b"$999999999999\r\n"),
            ReplyError::Limit {
                what: "bulk length",
                ..
            }
        ));
        assert!(matches!(
            err(b"$-2\r\n"),
            ReplyError::Limit {
                what: "bulk length",
                ..
            }
        ));
        assert!(matches!(
            err(b"*99999999\r\n"),
            ReplyError::Limit {
                what: "element count",
                ..
            }
        ));
        let deep = "*1\r\n".repeat(MAX_DEPTH + 1);
        assert!(matches!(
            err(deep.as_bytes()),
            ReplyError::Limit { what: "nesting", .. }
        ));
        let long = vec![b'+'; MAX_LINE + 8];
        assert_eq!(err(&long), ReplyError::LineTooLong { offset: 1 });
    }

    #[test]
    fn reader_reads_replies_split_anywhere() {
        let bytes = b"+OK\r\n$3\r\nabc\r\n*2\r\n:1\r\n:2\r\n+extra";
        // A reader that hands out one byte at a time.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let Some((&b, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                out[0] = b;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut r = ReplyReader::new(Trickle(bytes));
        assert_eq!(r.reply().unwrap(), Reply::simple("OK"));
        assert_eq!(r.reply().unwrap(), bulk(b"abc"));
        assert_eq!(
            r.reply().unwrap(),
            Reply::Array(vec![Reply::Int(1), Reply::Int(2)])
        );
        assert_eq!(r.reply().unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(r.take_buffered(), b"+extra");
        // A bulk larger than the first buffer, then a reply after it.
        let big = [
            format!("${}\r\n", 200_000).into_bytes(),
            vec![b'x'; 200_000],
            b"\r\n:7\r\n".to_vec(),
        ]
        .concat();
        let mut r = ReplyReader::new(&big[..]);
        assert_eq!(r.reply().unwrap(), Reply::Bulk(vec![b'x'; 200_000]));
        assert_eq!(r.reply().unwrap(), Reply::Int(7));
        let mut bad = ReplyReader::new(&b"?\r\n"[..]);
        assert_eq!(bad.reply().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    /// Regression: a bulk's announced length sized the buffer (zeroed) before its bytes came,
    /// so a peer announcing 512 MiB and sending 10 bytes cost the reader 512 MiB.
    #[test]
    fn an_announced_length_buys_no_memory_before_its_bytes() {
        let bytes = [format!("${MAX_BULK}\r\n").into_bytes(), vec![b'x'; 10]].concat();
        let mut r = ReplyReader::new(&bytes[..]);
        assert_eq!(r.reply().unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(r.buf.len(), 64 << 10);
    }

    #[test]
    fn shows_replies_short() {
        assert_eq!(
            Reply::Bulk(vec![b'a'; 100]).to_string(),
            format!("\"{}\"...(100 bytes)", "a".repeat(64))
        );
        assert_eq!(
            format!("{:?}", Reply::Array(vec![Reply::Int(1), Reply::error("E\r")])),
            "*[:1, -\"E\\r\"]"
        );
    }
}
