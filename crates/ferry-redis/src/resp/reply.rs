//! The reply encoder: [`ReplyBuf`] writes Redis's RESP2 or RESP3 replies for a batch of
//! pipelined requests, copying framing and small values and referencing large ones.
//!
//! ```text
//!  bytes: +OK\r\n$5\r\nhello\r\n$4096\r\n\r\n:1\r\n     refs: [(23, SharedBuf of 4096 bytes)]
//!                                        ▲ offset 23: the 4096-byte value goes on the wire here
//! ```
//!
//! The wire bytes are `bytes`, with each referenced buffer inserted at its offset (offsets
//! are non-decreasing). [`ReplyBuf::parts`] hands both to the sender, which posts them as one
//! gather list; each reference holds its own count on the value, so the keyspace may change
//! or drop it meanwhile.
//!
//! Encodings are Redis 7.0's (`networking.c`): `\r` and `\n` inside a status or an error
//! become spaces, doubles are `%.17g`, maps and sets are flat arrays in RESP2, nulls are
//! `_` in RESP3.

use std::fmt;

use ferry_buf::SharedBuf;

/// The protocol version a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Proto {
    /// RESP2 (the default).
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// A position in a [`ReplyBuf`] ([`ReplyBuf::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyMark {
    bytes: usize,
    refs: usize,
}

/// Replies being built for one batch: framing and small values as bytes, large values as
/// `(offset, buffer)` references to be posted as gather entries at that offset of the bytes.
///
/// A value given to [`bulk_buf`](Self::bulk_buf) at least `threshold` bytes long is
/// referenced, not copied. [`copied_value_bytes`](Self::copied_value_bytes) and
/// [`referenced_value_bytes`](Self::referenced_value_bytes) count the value bytes of
/// `bulk_buf` each way (not framing, and not [`bulk`](Self::bulk), which always copies); they
/// run across [`clear`](Self::clear)s.
///
/// ```
/// use ferry_redis::resp::{Proto, ReplyBuf};
///
/// let mut out = ReplyBuf::new(512);
/// out.array(2);
/// out.integer(-7);
/// out.bulk(b"hi");
/// out.set_proto(Proto::Resp3);
/// out.null();
/// assert_eq!(out.parts().0, b"*2\r\n:-7\r\n$2\r\nhi\r\n_\r\n");
/// assert_eq!(out.len(), 20);
/// ```
#[derive(Debug, Default)]
pub struct ReplyBuf {
    bytes: Vec<u8>,
    refs: Vec<(usize, SharedBuf)>,
    /// Sum of the lengths of `refs`.
    ref_len: usize,
    threshold: usize,
    proto: Proto,
    copied: u64,
    referenced: u64,
}

impl ReplyBuf {
    /// An empty buffer speaking RESP2 that references values of `threshold` bytes or more.
    pub fn new(threshold: usize) -> ReplyBuf {
        ReplyBuf {
            threshold,
            ..ReplyBuf::default()
        }
    }

    /// Switches the protocol for the replies written from now on (`HELLO`).
    pub fn set_proto(&mut self, proto: Proto) {
        self.proto = proto
    }

    /// The protocol replies are written in.
    pub fn proto(&self) -> Proto {
        self.proto
    }

    /// The length from which [`bulk_buf`](Self::bulk_buf) references values.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.bytes.extend_from_slice(b"+OK\r\n");
    }

    /// A status reply, `+<s>` (`\r` and `\n` in `s` become spaces).
    pub fn simple(&mut self, s: &str) {
        self.line(b'+', s.as_bytes());
    }

    /// An error reply, `-<msg>`: `msg` starts with its code (`ERR syntax error`,
    /// `WRONGTYPE Operation ...`); a leading `-` is not doubled. `\r` and `\n` become spaces.
    /// Bytes, not text: Redis echoes a client's arguments in errors as they were sent.
    pub fn error(&mut self, msg: impl AsRef<[u8]>) {
        let msg = msg.as_ref();
        self.line(b'-', msg.strip_prefix(b"-").unwrap_or(msg));
    }

    /// `:<n>`.
    pub fn integer(&mut self, n: i64) {
        let mut digits = Digits::new();
        self.header(b':', digits.signed(n));
    }

    /// Bytes as they are, outside any reply: a replication stream's RDB payload and the
    /// commands after it (see [`crate::feed`]).
    pub fn raw(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
    }

    /// A bulk string, copied: `$<len>\r\n<b>\r\n`. Not counted in the value counters.
    pub fn bulk(&mut self, b: &[u8]) {
        self.bulk_header(b.len());
        self.bytes.extend_from_slice(b);
        self.bytes.extend_from_slice(b"\r\n");
    }

    /// A stored value as a bulk string: referenced when at least `threshold` bytes long,
    /// copied otherwise.
    pub fn bulk_buf(&mut self, b: &SharedBuf) {
        let len = b.len();
        self.bulk_header(len);
        if len >= self.threshold {
            self.refs.push((self.bytes.len(), b.clone()));
            self.ref_len += len;
            self.referenced += len as u64;
        } else {
            self.bytes.extend_from_slice(b);
            self.copied += len as u64;
        }
        self.bytes.extend_from_slice(b"\r\n");
    }

    /// The null reply: RESP2 `$-1`, RESP3 `_`.
    pub fn null(&mut self) {
        self.bytes.extend_from_slice(match self.proto {
            Proto::Resp2 => b"$-1\r\n",
            Proto::Resp3 => b"_\r\n",
        });
    }

    /// The null array: RESP2 `*-1`, RESP3 `_`.
    pub fn null_array(&mut self) {
        self.bytes.extend_from_slice(match self.proto {
            Proto::Resp2 => b"*-1\r\n",
            Proto::Resp3 => b"_\r\n",
        });
    }

    /// The header of an array of `n` replies, `*<n>`.
    pub fn array(&mut self, n: usize) {
        let mut digits = Digits::new();
        self.header(b'*', digits.unsigned(n as u64));
    }

    /// The header of an out-of-band message of `n` replies (pub/sub): RESP3 `><n>`, RESP2
    /// `*<n>`.
    pub fn push(&mut self, n: usize) {
        let prefix = match self.proto {
            Proto::Resp2 => b'*',
            Proto::Resp3 => b'>',
        };
        let mut digits = Digits::new();
        self.header(prefix, digits.unsigned(n as u64));
    }

    /// The header of a map of `n` pairs: RESP3 `%<n>`, RESP2 an array of `2n` replies.
    pub fn map(&mut self, n: usize) {
        let mut digits = Digits::new();
        match self.proto {
            Proto::Resp2 => self.header(b'*', digits.unsigned((n as u64).saturating_mul(2))),
            Proto::Resp3 => self.header(b'%', digits.unsigned(n as u64)),
        }
    }

    /// The header of a set of `n` replies: RESP3 `~<n>`, RESP2 `*<n>`.
    pub fn set(&mut self, n: usize) {
        let prefix = match self.proto {
            Proto::Resp2 => b'*',
            Proto::Resp3 => b'~',
        };
        let mut digits = Digits::new();
        self.header(prefix, digits.unsigned(n as u64));
    }

    /// A double: RESP3 `,<d>`, RESP2 a bulk string; written as C's `%.17g` (`1.5`,
    /// `0.10000000000000001`, `1e+20`), infinities as `inf`/`-inf`, NaN as `nan` (`-nan` when
    /// its sign is set, as glibc writes it).
    pub fn double(&mut self, d: f64) {
        let mut text = DoubleText::new();
        let text = text.format(d);
        match self.proto {
            Proto::Resp2 => self.bulk(text),
            Proto::Resp3 => {
                self.bytes.push(b',');
                self.bytes.extend_from_slice(text);
                self.bytes.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A double as a bulk string in either protocol (`%.17g`, as [`double`](Self::double)
    /// writes it): `ZSCAN`'s scores.
    pub fn double_bulk(&mut self, d: f64) {
        let mut text = DoubleText::new();
        let text = text.format(d);
        self.bulk(text);
    }

    /// A boolean: RESP3 `#t`/`#f`, RESP2 `:1`/`:0`.
    pub fn boolean(&mut self, b: bool) {
        self.bytes.extend_from_slice(match (self.proto, b) {
            (Proto::Resp2, true) => b":1\r\n",
            (Proto::Resp2, false) => b":0\r\n",
            (Proto::Resp3, true) => b"#t\r\n",
            (Proto::Resp3, false) => b"#f\r\n",
        });
    }

    /// A number too large for an integer reply: RESP3 `(<digits>`, RESP2 a bulk string.
    pub fn big_number(&mut self, digits: &str) {
        match self.proto {
            Proto::Resp2 => self.bulk(digits.as_bytes()),
            Proto::Resp3 => self.line(b'(', digits.as_bytes()),
        }
    }

    /// The header of `n` attribute pairs before a reply (RESP3 `|<n>`); nothing in RESP2,
    /// which has no attributes (the pairs must not be written either).
    pub fn attribute(&mut self, n: usize) {
        if self.proto == Proto::Resp3 {
            let mut digits = Digits::new();
            self.header(b'|', digits.unsigned(n as u64));
        }
    }

    /// A verbatim string: RESP3 `=<len+4>\r\n<fmt>:<text>`, where `<fmt>` is the first three
    /// bytes of `format` padded with spaces (`txt`, `mkd`); RESP2 a bulk string of `text`.
    pub fn verbatim(&mut self, format: &str, text: &[u8]) {
        match self.proto {
            Proto::Resp2 => self.bulk(text),
            Proto::Resp3 => {
                let mut digits = Digits::new();
                self.header(b'=', digits.unsigned((text.len() as u64).saturating_add(4)));
                let mut ext = [b' '; 3];
                for (e, &f) in ext.iter_mut().zip(format.as_bytes()) {
                    *e = f;
                }
                self.bytes.extend_from_slice(&ext);
                self.bytes.push(b':');
                self.bytes.extend_from_slice(text);
                self.bytes.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Whether no reply has been written since the last [`clear`](Self::clear).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.refs.is_empty()
    }

    /// Wire length of the replies: the bytes plus every referenced buffer.
    pub fn len(&self) -> usize {
        self.bytes.len() + self.ref_len
    }

    /// The copied bytes, and the referenced buffers with the offsets in the bytes where each
    /// goes on the wire (non-decreasing).
    pub fn parts(&self) -> (&[u8], &[(usize, SharedBuf)]) {
        (&self.bytes, &self.refs)
    }

    /// The bytes and the references, the references moved out (to be posted without another
    /// count each); call [`clear`](Self::clear) after.
    pub fn drain_parts(&mut self) -> (&[u8], std::vec::Drain<'_, (usize, SharedBuf)>) {
        self.ref_len = 0;
        (&self.bytes, self.refs.drain(..))
    }

    /// Moves `other`'s replies after these (a reply built in another loop).
    pub fn append(&mut self, other: &mut ReplyBuf) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        for (at, b) in other.refs.drain(..) {
            self.ref_len += b.len();
            self.refs.push((base + at, b));
        }
        other.clear();
    }

    /// Where the replies end now, to go back to with [`truncate`](Self::truncate).
    pub fn mark(&self) -> ReplyMark {
        ReplyMark {
            bytes: self.bytes.len(),
            refs: self.refs.len(),
        }
    }

    /// Whether the reply written at `mark` is an error.
    pub fn is_error_since(&self, mark: ReplyMark) -> bool {
        self.bytes.get(mark.bytes) == Some(&b'-')
    }

    /// Forgets the replies written since `mark` (`CLIENT REPLY OFF`): the value counters keep
    /// them.
    pub fn truncate(&mut self, mark: ReplyMark) {
        self.bytes.truncate(mark.bytes);
        for (_, b) in self.refs.drain(mark.refs.min(self.refs.len())..) {
            self.ref_len -= b.len();
        }
    }

    /// Forgets the replies (dropping the references); keeps the protocol, the threshold, the
    /// counters and the allocations.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.refs.clear();
        self.ref_len = 0;
    }

    /// Value bytes [`bulk_buf`](Self::bulk_buf) copied (values below the threshold).
    pub fn copied_value_bytes(&self) -> u64 {
        self.copied
    }

    /// Value bytes [`bulk_buf`](Self::bulk_buf) referenced (values at or above the threshold).
    pub fn referenced_value_bytes(&self) -> u64 {
        self.referenced
    }

    /// `$<len>\r\n`.
    fn bulk_header(&mut self, len: usize) {
        let mut digits = Digits::new();
        self.header(b'$', digits.unsigned(len as u64));
    }

    /// `<prefix><digits>\r\n`.
    fn header(&mut self, prefix: u8, digits: &[u8]) {
        self.bytes.push(prefix);
        self.bytes.extend_from_slice(digits);
        self.bytes.extend_from_slice(b"\r\n");
    }

    /// `<prefix><text>\r\n`, with `\r` and `\n` in `text` turned into spaces.
    fn line(&mut self, prefix: u8, text: &[u8]) {
        self.bytes.push(prefix);
        let from = self.bytes.len();
        self.bytes.extend_from_slice(text);
        for b in &mut self.bytes[from..] {
            if matches!(*b, b'\r' | b'\n') {
                *b = b' ';
            }
        }
        self.bytes.extend_from_slice(b"\r\n");
    }
}

/// Decimal digits of an integer, written back to front into a stack buffer.
struct Digits {
    buf: [u8; 20],
}

/// "00" to "99": two digits per division.
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

impl Digits {
    fn new() -> Digits {
        Digits { buf: [0; 20] }
    }

    /// `n` in decimal (u64::MAX has 20 digits).
    fn unsigned(&mut self, mut n: u64) -> &[u8] {
        let mut at = self.buf.len();
        while n >= 100 {
            let pair = (n % 100) as usize * 2;
            n /= 100;
            at -= 2;
            self.buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        if n >= 10 {
            let pair = n as usize * 2;
            at -= 2;
            self.buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        } else {
            at -= 1;
            self.buf[at] = b'0' + n as u8;
        }
        &self.buf[at..]
    }

    /// `n` in decimal with a `-` when negative (i64::MIN has 19 digits, so the sign fits).
    fn signed(&mut self, n: i64) -> &[u8] {
        let len = self.unsigned(n.unsigned_abs()).len();
        let mut at = self.buf.len() - len;
        if n < 0 {
            at -= 1;
            self.buf[at] = b'-';
        }
        &self.buf[at..]
    }
}

/// `d` as C's `%.17g` writes it (as [`ReplyBuf::double`] sends it): the AOF's scores.
pub fn double_text(d: f64) -> Vec<u8> {
    DoubleText::new().format(d).to_vec()
}

/// C's `%.17g` of a double, built from Rust's exact `{:.16e}` (the same 17 significant
/// digits, correctly rounded) in a stack buffer.
struct DoubleText {
    /// `{:.16e}`: at most `-d.dddddddddddddddde-308`, 24 bytes.
    sci: StackText<32>,
    /// The `%g` form: at most `-0.0001dddddddddddddddd`, 23 bytes.
    out: StackText<32>,
}

impl DoubleText {
    fn new() -> DoubleText {
        DoubleText {
            sci: StackText::new(),
            out: StackText::new(),
        }
    }

    fn format(&mut self, d: f64) -> &[u8] {
        if d.is_infinite() {
            return if d > 0.0 { b"inf" } else { b"-inf" };
        }
        if d.is_nan() {
            return if d.is_sign_negative() { b"-nan" } else { b"nan" };
        }
        // Cannot fail: 32 bytes hold any f64 in this form.
        let _ = fmt::Write::write_fmt(&mut self.sci, format_args!("{d:.16e}"));
        let sci = self.sci.as_bytes();
        let (negative, sci) = match sci {
            [b'-', rest @ ..] => (true, rest),
            _ => (false, sci),
        };
        let Some(e) = sci.iter().position(|&b| b == b'e') else {
            return b"nan";
        };
        // Digits without the point: d.dddddddddddddddd -> 17 digits.
        let mut digits = [b'0'; 17];
        let mut n = 0;
        for &b in sci[..e].iter().filter(|b| b.is_ascii_digit()) {
            if n < digits.len() {
                digits[n] = b;
                n += 1;
            }
        }
        let exp = parse_exponent(&sci[e + 1..]);
        // Trailing zeros go (no `#` flag), and the point with them.
        let significant = digits.iter().rposition(|&b| b != b'0').map_or(1, |i| i + 1);
        let digits = &digits[..significant];

        let out = &mut self.out;
        if negative {
            out.push(b'-');
        }
        if (-4..17).contains(&exp) {
            if exp >= 0 {
                // exp < 17 <= digits.len() + ..: the integer part is digits[..=exp], padded.
                let int_len = exp as usize + 1;
                for i in 0..int_len {
                    out.push(digits.get(i).copied().unwrap_or(b'0'));
                }
                if digits.len() > int_len {
                    out.push(b'.');
                    out.extend(&digits[int_len..]);
                }
            } else {
                out.extend(b"0.");
                for _ in 0..(-exp - 1) {
                    out.push(b'0');
                }
                out.extend(digits);
            }
        } else {
            out.push(digits[0]);
            if digits.len() > 1 {
                out.push(b'.');
                out.extend(&digits[1..]);
            }
            out.push(b'e');
            out.push(if exp < 0 { b'-' } else { b'+' });
            let mut exp_digits = Digits::new();
            let exp_digits = exp_digits.unsigned(u64::from(exp.unsigned_abs()));
            if exp_digits.len() < 2 {
                out.push(b'0');
            }
            out.extend(exp_digits);
        }
        self.out.as_bytes()
    }
}

/// Rust's exponent after `e`: an optional `-` and decimal digits.
fn parse_exponent(s: &[u8]) -> i32 {
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let value = digits.iter().filter(|d| d.is_ascii_digit()).fold(0i32, |v, &d| {
        v.saturating_mul(10).saturating_add(i32::from(d - b'0'))
    });
    if negative { -value } else { value }
}

/// A few bytes of text on the stack; what does not fit is dropped (never the case here).
struct StackText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText { buf: [0; N], len: 0 }
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.buf.len() - self.len < s.len() {
            return Err(fmt::Error);
        }
        self.extend(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_buf::{Pool, PoolConfig};
    use proptest::prelude::*;

    fn pool() -> Pool {
        Pool::new(PoolConfig {
            region_size: 1 << 20,
            max_bytes: 4 << 20,
            huge_pages: false,
            mlock: false,
            ..PoolConfig::default()
        })
        .expect("pool")
    }

    /// The bytes on the wire: `bytes` with every reference inserted at its offset.
    fn wire(out: &ReplyBuf) -> Vec<u8> {
        let (bytes, refs) = out.parts();
        let mut wire = Vec::new();
        let mut at = 0;
        for (offset, buf) in refs {
            assert!(
                *offset >= at && *offset <= bytes.len(),
                "offsets in order and in bounds"
            );
            wire.extend_from_slice(&bytes[at..*offset]);
            wire.extend_from_slice(buf);
            at = *offset;
        }
        wire.extend_from_slice(&bytes[at..]);
        assert_eq!(wire.len(), out.len(), "len() is the wire length");
        wire
    }

    /// What `write` produces in RESP2 and in RESP3.
    fn both(write: impl Fn(&mut ReplyBuf)) -> (Vec<u8>, Vec<u8>) {
        let mut out = [Proto::Resp2, Proto::Resp3].map(|proto| {
            let mut out = ReplyBuf::new(usize::MAX);
            out.set_proto(proto);
            write(&mut out);
            wire(&out)
        });
        (std::mem::take(&mut out[0]), std::mem::take(&mut out[1]))
    }

    fn same(write: impl Fn(&mut ReplyBuf), expected: &[u8]) {
        let (resp2, resp3) = both(write);
        assert_eq!(resp2, expected, "RESP2: {:?}", String::from_utf8_lossy(&resp2));
        assert_eq!(resp3, expected, "RESP3: {:?}", String::from_utf8_lossy(&resp3));
    }

    fn differ(write: impl Fn(&mut ReplyBuf), resp2: &[u8], resp3: &[u8]) {
        let got = both(write);
        assert_eq!(got.0, resp2, "RESP2: {:?}", String::from_utf8_lossy(&got.0));
        assert_eq!(got.1, resp3, "RESP3: {:?}", String::from_utf8_lossy(&got.1));
    }

    #[test]
    fn new_buffer() {
        let out = ReplyBuf::new(512);
        assert_eq!((out.proto(), out.threshold()), (Proto::Resp2, 512));
        assert!(out.is_empty());
        assert_eq!(out.len(), 0);
    }

    #[test]
    fn status_and_error() {
        same(|o| o.ok(), b"+OK\r\n");
        same(|o| o.simple("PONG"), b"+PONG\r\n");
        same(|o| o.simple(""), b"+\r\n");
        same(|o| o.simple("a\r\nb\nc\r"), b"+a  b c \r\n");
        same(|o| o.error("ERR syntax error"), b"-ERR syntax error\r\n");
        same(|o| o.error("-WRONGTYPE Operation"), b"-WRONGTYPE Operation\r\n");
        same(|o| o.error("ERR bad\r\nline"), b"-ERR bad  line\r\n");
        same(
            |o| o.error("ERR Protocol error: expected '$', got '\r'"),
            b"-ERR Protocol error: expected '$', got ' '\r\n",
        );
    }

    #[test]
    fn integers() {
        for (n, text) in [
            (0, &b":0\r\n"[..]),
            (7, b":7\r\n"),
            (-7, b":-7\r\n"),
            (10, b":10\r\n"),
            (99, b":99\r\n"),
            (100, b":100\r\n"),
            (-1000, b":-1000\r\n"),
            (1234567, b":1234567\r\n"),
            (i64::MAX, b":9223372036854775807\r\n"),
            (i64::MIN, b":-9223372036854775808\r\n"),
        ] {
            same(|o| o.integer(n), text);
        }
    }

    #[test]
    fn bulk_strings() {
        same(|o| o.bulk(b""), b"$0\r\n\r\n");
        same(|o| o.bulk(b"hello"), b"$5\r\nhello\r\n");
        same(|o| o.bulk(b"a\r\nb\0"), b"$5\r\na\r\nb\0\r\n");
        let long = vec![b'x'; 1234];
        let mut expected = b"$1234\r\n".to_vec();
        expected.extend_from_slice(&long);
        expected.extend_from_slice(b"\r\n");
        same(|o| o.bulk(&long), &expected);
    }

    #[test]
    fn nulls() {
        differ(|o| o.null(), b"$-1\r\n", b"_\r\n");
        differ(|o| o.null_array(), b"*-1\r\n", b"_\r\n");
    }

    #[test]
    fn aggregates() {
        same(|o| o.array(0), b"*0\r\n");
        same(|o| o.array(3), b"*3\r\n");
        same(|o| o.array(usize::MAX), format!("*{}\r\n", usize::MAX).as_bytes());
        differ(|o| o.map(0), b"*0\r\n", b"%0\r\n");
        differ(|o| o.map(2), b"*4\r\n", b"%2\r\n");
        differ(|o| o.set(5), b"*5\r\n", b"~5\r\n");
        differ(
            |o| {
                o.map(1);
                o.bulk(b"k");
                o.set(2);
                o.integer(1);
                o.boolean(false);
            },
            b"*2\r\n$1\r\nk\r\n*2\r\n:1\r\n:0\r\n",
            b"%1\r\n$1\r\nk\r\n~2\r\n:1\r\n#f\r\n",
        );
    }

    #[test]
    fn booleans() {
        differ(|o| o.boolean(true), b":1\r\n", b"#t\r\n");
        differ(|o| o.boolean(false), b":0\r\n", b"#f\r\n");
    }

    #[test]
    fn verbatim_strings() {
        differ(
            |o| o.verbatim("txt", b"hello"),
            b"$5\r\nhello\r\n",
            b"=9\r\ntxt:hello\r\n",
        );
        differ(|o| o.verbatim("txt", b""), b"$0\r\n\r\n", b"=4\r\ntxt:\r\n");
        // Three bytes of the format, padded with spaces, as Redis does.
        differ(
            |o| o.verbatim("md", b"# x"),
            b"$3\r\n# x\r\n",
            b"=7\r\nmd :# x\r\n",
        );
        differ(
            |o| o.verbatim("markdown", b"a"),
            b"$1\r\na\r\n",
            b"=5\r\nmar:a\r\n",
        );
    }

    #[test]
    fn doubles_like_redis() {
        // Expected texts from C's printf("%.17g") (glibc).
        let table: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "-0"),
            (0x3ff0000000000000, "1"),
            (0xbff0000000000000, "-1"),
            (0x3ff8000000000000, "1.5"),
            (0x3fb999999999999a, "0.10000000000000001"),
            (0x3ff199999999999a, "1.1000000000000001"),
            (0x4059000000000000, "100"),
            (0x4341c37937e08000, "10000000000000000"),
            (0x4376345785d8a000, "1e+17"),
            (0x3ee4f8b588e368f1, "1.0000000000000001e-05"),
            (0x3f1a36e2eb1c432d, "0.0001"),
            (0x3f202e4b6ce5dc68, "0.00012344999999999999"),
            (0x400921fb54442d18, "3.1415926535897931"),
            (0x7e37e43c8800759c, "1.0000000000000001e+300"),
            (0x81bac9a7b3b7302f, "-2.5e-300"),
            (0x0000000000000001, "4.9406564584124654e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0x4345ee2a2eb5a5c4, "12345678901234568"),
            (0x3fe0000000000000, "0.5"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0000000000000, "9.5367431640625e-07"),
            (0xc05edd2f1a9fbe77, "-123.456"),
            (0x4376345785d89fff, "99999999999999984"),
            (0x430c6bf526340002, "1000000000000000.2"),
            (0x6513270e269e0d37, "7.761117632285041e+178"),
            (0xc233e8f4e70a7dcf, "-85512742666.49144"),
            (0x0ed904759531985d, "3.841898887432159e-237"),
            (0xbf0dea832c27a9f3, "-5.7060363832867662e-05"),
            (0x3d9c172411e20b8f, "6.3870161585135632e-12"),
            (0xc01e18892c86875e, "-7.5239607770070887"),
            (0x3ebbd9613b004122, "1.6599380892081465e-06"),
            (0x2217beaddbc496cb, "1.9015657400796622e-144"),
            (0x8a6a63ec24ede6a4, "-1.7163996725272777e-258"),
            (0xc262958c349b0400, "-638547240152.125"),
            (0xbf4474a7bb69cf4b, "-0.00062425794642571289"),
        ];
        for &(bits, text) in table {
            let d = f64::from_bits(bits);
            differ(
                |o| o.double(d),
                format!("${}\r\n{text}\r\n", text.len()).as_bytes(),
                format!(",{text}\r\n").as_bytes(),
            );
        }
        differ(|o| o.double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
        differ(|o| o.double(f64::NEG_INFINITY), b"$4\r\n-inf\r\n", b",-inf\r\n");
        differ(|o| o.double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n");
        differ(|o| o.double(-f64::NAN), b"$4\r\n-nan\r\n", b",-nan\r\n");
    }

    #[test]
    fn bulk_buf_references_at_and_above_the_threshold() {
        let pool = pool();
        let small = pool.copy_from(b"abc").unwrap();
        let exact = pool.copy_from(b"abcd").unwrap();
        let large = pool.copy_from(b"abcdefgh").unwrap();
        let mut out = ReplyBuf::new(4);
        out.array(3);
        out.bulk_buf(&small);
        out.bulk_buf(&exact);
        out.bulk_buf(&large);
        out.bulk(b"abcdefgh");
        let (bytes, refs) = out.parts();
        assert_eq!(
            bytes,
            b"*3\r\n$3\r\nabc\r\n$4\r\n\r\n$8\r\n\r\n$8\r\nabcdefgh\r\n"
        );
        let refs: Vec<(usize, &[u8])> = refs.iter().map(|(at, b)| (*at, &b[..])).collect();
        assert_eq!(refs, vec![(17, &b"abcd"[..]), (23, &b"abcdefgh"[..])]);
        assert_eq!(
            wire(&out),
            b"*3\r\n$3\r\nabc\r\n$4\r\nabcd\r\n$8\r\nabcdefgh\r\n$8\r\nabcdefgh\r\n"
        );
        assert_eq!(out.len(), bytes.len() + 12);
        // Only bulk_buf's value bytes are counted.
        assert_eq!((out.copied_value_bytes(), out.referenced_value_bytes()), (3, 12));
        // The references hold their own counts.
        assert_eq!(exact.ref_count(), 2);
        drop(large);
        assert_eq!(&out.parts().1[1].1[..], b"abcdefgh");
    }

    #[test]
    fn bulk_buf_threshold_zero_references_everything() {
        let pool = pool();
        let empty = pool.copy_from(b"").unwrap();
        let mut out = ReplyBuf::new(0);
        out.bulk_buf(&empty);
        assert_eq!(out.parts().0, b"$0\r\n\r\n");
        assert_eq!(out.parts().1.len(), 1);
        assert_eq!(out.parts().1[0].0, 4);
        assert_eq!(wire(&out), b"$0\r\n\r\n");
    }

    #[test]
    fn clear_keeps_counters_proto_and_threshold() {
        let pool = pool();
        let value = pool.copy_from(&[7; 100]).unwrap();
        let mut out = ReplyBuf::new(50);
        out.set_proto(Proto::Resp3);
        out.bulk_buf(&value);
        out.null();
        assert!(!out.is_empty());
        out.clear();
        assert!(out.is_empty());
        assert_eq!(out.len(), 0);
        assert_eq!(out.parts().1.len(), 0);
        assert_eq!(value.ref_count(), 1, "clear drops the references");
        assert_eq!(
            (out.proto(), out.threshold(), out.referenced_value_bytes()),
            (Proto::Resp3, 50, 100)
        );
        out.null();
        assert_eq!(wire(&out), b"_\r\n");
    }

    /// One call on a ReplyBuf, for the property tests.
    #[derive(Debug, Clone)]
    enum Op {
        Ok,
        Simple(String),
        Error(String),
        Integer(i64),
        Bulk(Vec<u8>),
        BulkBuf(Vec<u8>),
        Null,
        NullArray,
        Array(usize),
        Map(usize),
        Set(usize),
        Double(f64),
        Boolean(bool),
        Verbatim(String, Vec<u8>),
        Proto(bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        let bytes = || prop::collection::vec(any::<u8>(), 0..64);
        prop_oneof![
            Just(Op::Ok),
            "[ -~\r\n]{0,12}".prop_map(Op::Simple),
            "[ -~\r\n]{0,12}".prop_map(Op::Error),
            any::<i64>().prop_map(Op::Integer),
            bytes().prop_map(Op::Bulk),
            bytes().prop_map(Op::BulkBuf),
            Just(Op::Null),
            Just(Op::NullArray),
            any::<usize>().prop_map(Op::Array),
            (0..usize::MAX / 2).prop_map(Op::Map),
            any::<usize>().prop_map(Op::Set),
            any::<f64>().prop_map(Op::Double),
            any::<bool>().prop_map(Op::Boolean),
            ("[a-z]{0,4}", bytes()).prop_map(|(f, t)| Op::Verbatim(f, t)),
            any::<bool>().prop_map(Op::Proto),
        ]
    }

    fn apply(out: &mut ReplyBuf, op: &Op, pool: &Pool) {
        match op {
            Op::Ok => out.ok(),
            Op::Simple(s) => out.simple(s),
            Op::Error(s) => out.error(s),
            Op::Integer(n) => out.integer(*n),
            Op::Bulk(b) => out.bulk(b),
            Op::BulkBuf(b) => out.bulk_buf(&pool.copy_from(b).unwrap()),
            Op::Null => out.null(),
            Op::NullArray => out.null_array(),
            Op::Array(n) => out.array(*n),
            Op::Map(n) => out.map(*n),
            Op::Set(n) => out.set(*n),
            Op::Double(d) => out.double(*d),
            Op::Boolean(b) => out.boolean(*b),
            Op::Verbatim(f, t) => out.verbatim(f, t),
            Op::Proto(resp3) => out.set_proto(if *resp3 { Proto::Resp3 } else { Proto::Resp2 }),
        }
    }

    proptest! {
        /// Whatever the threshold, the wire bytes are the same as when everything is copied;
        /// `len()` is their length and the counters split bulk_buf's value bytes.
        #[test]
        fn references_do_not_change_the_wire(ops in prop::collection::vec(op(), 0..24), threshold in 0usize..80) {
            let pool = pool();
            let mut copied = ReplyBuf::new(usize::MAX);
            let mut mixed = ReplyBuf::new(threshold);
            for op in &ops {
                apply(&mut copied, op, &pool);
                apply(&mut mixed, op, &pool);
            }
            prop_assert!(copied.parts().1.is_empty());
            prop_assert_eq!(wire(&mixed), wire(&copied));
            let value_bytes: usize = ops.iter().map(|op| match op { Op::BulkBuf(b) => b.len(), _ => 0 }).sum();
            let referenced: usize = ops.iter().map(|op| match op {
                Op::BulkBuf(b) if b.len() >= threshold => b.len(),
                _ => 0,
            }).sum();
            prop_assert_eq!(mixed.copied_value_bytes() + mixed.referenced_value_bytes(), value_bytes as u64);
            prop_assert_eq!(mixed.referenced_value_bytes(), referenced as u64);
            prop_assert_eq!(mixed.parts().0.len() + referenced, mixed.len());
        }

        #[test]
        fn integers_and_lengths_are_decimal(n in any::<i64>(), u in any::<usize>()) {
            let mut out = ReplyBuf::new(0);
            out.integer(n);
            out.array(u);
            out.bulk(&[]);
            let expected = format!(":{n}\r\n*{u}\r\n$0\r\n\r\n");
            prop_assert_eq!(out.parts().0, expected.as_bytes());
        }

        /// `%.17g` keeps 17 significant digits: the text reads back as the same double.
        #[test]
        fn doubles_read_back(d in any::<f64>()) {
            let mut text = DoubleText::new();
            let text = std::str::from_utf8(text.format(d)).unwrap().to_owned();
            if d.is_nan() {
                prop_assert!(text == "nan" || text == "-nan");
            } else {
                let back: f64 = text.replace("inf", "infinity").parse().unwrap();
                prop_assert_eq!(back.to_bits(), d.to_bits(), "{}", text);
                let mantissa = text.split('e').next().unwrap();
                prop_assert!(!mantissa.contains('.') || !mantissa.ends_with('0'), "{}", text);
            }
        }
    }
}
