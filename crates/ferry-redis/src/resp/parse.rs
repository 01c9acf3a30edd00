//! The request parser: RESP multibulk (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline commands
//! (`GET k\r\n`), parsed in place.
//!
//! [`parse_command`] looks at the start of a buffer of request bytes (untrusted: whatever a
//! client sent) and reports one of: a whole command, with one range per argument pushed to
//! `args`; bytes that carry no command ([`Parsed::Skip`]); not enough bytes yet
//! ([`Parsed::Incomplete`], with a lower bound on the command's length, to size the next
//! read); or a [`ProtocolError`], after which Redis replies `-ERR <the error>` and closes the
//! connection. It keeps no state between calls: the caller calls it again once more bytes
//! have arrived, from the start of the command, or, with [`resume_command`], from where an
//! incomplete multibulk request stopped (the [`Resume`] it left), so that a request trickled
//! in many reads is parsed once in all (not once a read) and its first malformed line is
//! found as soon as that line has arrived.
//!
//! It accepts and rejects what Redis 7.0 does (`processMultibulkBuffer`,
//! `processInlineBuffer` and `sdssplitargs` in Redis's sources), with the same error texts:
//!
//! - The first byte chooses: `*` is a multibulk request, anything else an inline one.
//! - Numbers (`*<n>`, `$<len>`) are read like Redis's `string2ll`: an optional `-`, then
//!   digits without leading zeros (`0` alone is zero); no `+`, no spaces, at most 20 bytes.
//! - A `*`/`$` line ends at the first `\r`; the byte after it is skipped without being
//!   checked, and so are the two bytes after a bulk payload (Redis does not check they are
//!   `\r\n` either). They are never read past the input's end: a command is complete only
//!   when they have arrived.
//! - `*<n>` with `n <= 0` is skipped. An inline line with no arguments is skipped.
//!
//! Where it differs from Redis: Redis looks for line ends with `strchr`, which stops at a NUL
//! byte, so a NUL before the end of a `*`/`$`/inline line makes Redis wait for more bytes
//! (until the line is too long); here a NUL is an ordinary byte (the number then fails to
//! parse; in an inline line it ends the arguments, as it does in `sdssplitargs`). The number
//! of arguments is capped by [`ParseLimits::max_args`] (Redis: `INT_MAX` for multibulk, no
//! limit for inline), with "invalid multibulk length" for a multibulk request and "too big
//! inline request" for an inline one.
//!
//! The parser never panics and never allocates from a number the peer sent: `args` grows one
//! range per argument that has arrived (its first reservation is capped at 1024), and the
//! unquoted inline arguments go to `scratch`, at most the line's length. Each call is linear
//! in the bytes it looks at.

use std::fmt;
use std::ops::Range;

/// Limits on what one request may announce.
#[derive(Debug, Clone, Copy)]
pub struct ParseLimits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: usize,
    /// Most arguments per request.
    pub max_args: usize,
    /// Longest inline command, and longest `*`/`$` count line (Redis: 64 KiB).
    pub max_inline_len: usize,
}

/// What [`parse_command`] found at the start of the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command: its arguments' ranges were pushed to `args` (ranges of the input, or of
    /// `scratch` when `inline_scratch` is true); `consumed` bytes of input belong to it.
    Command {
        /// Input bytes the command took.
        consumed: usize,
        /// Whether `args` index `scratch` (an inline command, unquoted into it) instead of the input.
        inline_scratch: bool,
    },
    /// Input bytes that carry no command (an empty inline line, `*0`, `*-1`): skip them.
    Skip {
        /// Input bytes to skip.
        consumed: usize,
    },
    /// The command is not complete yet; it will be at least `need` bytes long in total.
    Incomplete {
        /// A lower bound on the whole command's length (for sizing the next read buffer).
        need: usize,
    },
}

/// Where the parse of an incomplete request stopped, for [`resume_command`] to go on from
/// once more of the same request's bytes have arrived. [`Resume::default`] is the request's
/// start. The ranges already found are kept in `args` meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resume {
    /// Offset of the multibulk element to parse next (0: the request's start).
    at: usize,
    /// Elements still to come from `at` on.
    left: usize,
    /// Input length below which parsing again tells nothing new.
    until: usize,
}

impl Resume {
    /// How many bytes the request's input must hold before parsing it again can tell anything
    /// new: one more than it held when the stopped line had not ended, or all of an element
    /// whose payload was arriving. Unlike [`Parsed::Incomplete`]'s `need` (a bound on the
    /// whole request, for sizing buffers), nothing that could be malformed lies before it.
    pub fn until(&self) -> usize {
        self.until
    }
}

/// A malformed request. The client is sent `-ERR ` followed by the error's [`Display`]
/// (Redis's exact text, e.g. `Protocol error: invalid bulk length`), then disconnected.
///
/// [`Display`]: fmt::Display
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ProtocolError {
    /// Redis's text after `Protocol error: `, e.g. `invalid bulk length` (one of the
    /// associated constants).
    pub what: &'static str,
    /// Offset in the input where it was found: the start of the bad number, of the line that
    /// is too long, the byte that is not `$`, the quote left open or the byte after a closing
    /// quote, or the inline argument beyond `max_args`.
    pub offset: usize,
    /// The byte found where another was expected ([`EXPECTED_DOLLAR`](Self::EXPECTED_DOLLAR)).
    pub found: Option<u8>,
}

impl ProtocolError {
    /// `*<n>` is not a number, or `n` is above [`ParseLimits::max_args`].
    pub const INVALID_MULTIBULK_LENGTH: &'static str = "invalid multibulk length";
    /// No `\r` within [`ParseLimits::max_inline_len`] bytes of a `*` line's start.
    pub const TOO_BIG_MBULK_COUNT: &'static str = "too big mbulk count string";
    /// An element of a multibulk request does not start with `$` (`found` holds what does).
    pub const EXPECTED_DOLLAR: &'static str = "expected '$'";
    /// `$<len>` is not a number, negative, or above [`ParseLimits::max_bulk_len`].
    pub const INVALID_BULK_LENGTH: &'static str = "invalid bulk length";
    /// No `\r` within [`ParseLimits::max_inline_len`] bytes of a `$` line's start.
    pub const TOO_BIG_BULK_COUNT: &'static str = "too big bulk count string";
    /// No `\n` within [`ParseLimits::max_inline_len`] bytes of an inline command's start,
    /// or (not in Redis) more than [`ParseLimits::max_args`] arguments in it.
    pub const TOO_BIG_INLINE: &'static str = "too big inline request";
    /// An inline command has a quote that is not closed, or a closing quote followed by
    /// something other than a space.
    pub const UNBALANCED_QUOTES: &'static str = "unbalanced quotes in request";
    /// Before authentication, a `*` count above 10 ([`parse_command_unauthenticated`]).
    pub const UNAUTHENTICATED_MULTIBULK_LENGTH: &'static str = "unauthenticated multibulk length";
    /// Before authentication, a `$` length above 16384 ([`parse_command_unauthenticated`]).
    pub const UNAUTHENTICATED_BULK_LENGTH: &'static str = "unauthenticated bulk length";

    fn new(what: &'static str, offset: usize) -> ProtocolError {
        ProtocolError {
            what,
            offset,
            found: None,
        }
    }

    /// For logs: Redis's text and where it was found, e.g.
    /// `Protocol error: invalid bulk length (at byte 21)`.
    pub fn describe(&self) -> impl fmt::Display + '_ {
        struct Describe<'a>(&'a ProtocolError);
        impl fmt::Display for Describe<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} (at byte {})", self.0, self.0.offset)
            }
        }
        Describe(self)
    }
}

/// Redis's reply text, without the `-ERR ` prefix: `Protocol error: <what>`, and for a
/// missing `$` Redis's `, got '<byte>'`. The byte is written as Redis's `%c` writes it, with
/// `\r` and `\n` turned into spaces (as `addReplyErrorFormat` does); a byte above 0x7f, which
/// Redis writes raw, is written `?` so that the text stays UTF-8.
impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol error: {}", self.what)?;
        if let Some(found) = self.found {
            let c = match found {
                b'\r' | b'\n' => ' ',
                0..=0x7f => char::from(found),
                _ => '?',
            };
            write!(f, ", got '{c}'")?;
        }
        Ok(())
    }
}

/// Redis's limits on a client that has yet to authenticate (`authRequired`).
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
const UNAUTHENTICATED_MAX_BULK_LEN: usize = 16384;

/// The fewest bytes a multibulk element takes: `$0\r\n`, no payload, and the 2 bytes after it.
const MIN_ELEMENT_LEN: usize = 6;

/// Most ranges reserved up front for a multibulk request's announced count.
const MAX_ARGS_RESERVE: usize = 1024;

/// Parses the command at the start of `input`.
///
/// `args` is cleared, then holds one range per argument when the result is
/// [`Parsed::Command`] (ranges of `input`, or of `scratch` when `inline_scratch` is true), and
/// nothing otherwise. `scratch` is cleared and refilled only for inline commands with quotes.
///
/// ```
/// use ferry_redis::resp::{ParseLimits, Parsed, parse_command};
///
/// let limits = ParseLimits { max_bulk_len: 1 << 20, max_args: 1024, max_inline_len: 64 << 10 };
/// let (mut args, mut scratch) = (Vec::new(), Vec::new());
/// let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI";
/// let parsed = parse_command(input, &limits, &mut args, &mut scratch)?;
/// assert_eq!(parsed, Parsed::Command { consumed: 20, inline_scratch: false });
/// assert_eq!(&input[args[0].clone()], b"GET");
/// assert_eq!(&input[args[1].clone()], b"k");
/// // The next command has arrived up to `PI`: its `$4` says it is 14 bytes long.
/// let parsed = parse_command(&input[20..], &limits, &mut args, &mut scratch)?;
/// assert_eq!(parsed, Parsed::Incomplete { need: 14 });
/// # Ok::<(), ferry_redis::resp::ProtocolError>(())
/// ```
pub fn parse_command(
    input: &[u8],
    limits: &ParseLimits,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
) -> Result<Parsed, ProtocolError> {
    from_the_start(input, limits, false, args, scratch)
}

/// [`parse_command`] for a client that must authenticate first: as Redis does then, a
/// multibulk request may announce at most 10 arguments
/// ([`UNAUTHENTICATED_MULTIBULK_LENGTH`](ProtocolError::UNAUTHENTICATED_MULTIBULK_LENGTH)
/// beyond) and bulks of at most 16384 bytes
/// ([`UNAUTHENTICATED_BULK_LENGTH`](ProtocolError::UNAUTHENTICATED_BULK_LENGTH) beyond), so
/// that a stranger cannot make the server buffer much. Inline commands are unchanged.
pub fn parse_command_unauthenticated(
    input: &[u8],
    limits: &ParseLimits,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
) -> Result<Parsed, ProtocolError> {
    from_the_start(input, limits, true, args, scratch)
}

/// One parse with nothing to go on from: `args` holds nothing unless it is a command.
fn from_the_start(
    input: &[u8],
    limits: &ParseLimits,
    unauthenticated: bool,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
) -> Result<Parsed, ProtocolError> {
    let parsed = parse(
        input,
        limits,
        unauthenticated,
        args,
        scratch,
        &mut Resume::default(),
    );
    if matches!(parsed, Ok(Parsed::Incomplete { .. })) {
        args.clear();
    }
    parsed
}

/// [`parse_command`] (or, not `authenticated`, [`parse_command_unauthenticated`]) of a
/// request arriving in reads: `resume` is where the last call on the same request's bytes
/// stopped ([`Resume::default`] for a new request), and `args` must hold what that call left
/// in it. On [`Parsed::Incomplete`] it is set to where this call stopped, with the elements
/// found so far in `args`; on any other result it is reset. The result is the one
/// [`parse_command`] gives for the same bytes (a property test checks it), at the cost of the
/// new bytes only. A `Resume` of other bytes gives a wrong result, never a panic.
pub fn resume_command(
    input: &[u8],
    limits: &ParseLimits,
    authenticated: bool,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
    resume: &mut Resume,
) -> Result<Parsed, ProtocolError> {
    parse(input, limits, !authenticated, args, scratch, resume)
}

fn parse(
    input: &[u8],
    limits: &ParseLimits,
    unauthenticated: bool,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
    resume: &mut Resume,
) -> Result<Parsed, ProtocolError> {
    let from = std::mem::take(resume);
    let parsed = if from.at > 0 && from.at <= input.len() {
        elements(input, limits, unauthenticated, args, from.at, from.left, resume)
    } else {
        args.clear();
        match input.first() {
            None => {
                resume.until = 1;
                return Ok(Parsed::Incomplete { need: 1 });
            }
            Some(b'*') => multibulk(input, limits, unauthenticated, args, resume),
            Some(_) => inline(input, limits, args, scratch, resume),
        }
    };
    match parsed {
        Ok(Parsed::Command { .. }) => {}
        // Kept for the next call to go on from.
        Ok(Parsed::Incomplete { .. }) if resume.at > 0 => {}
        _ => {
            args.clear();
            if !matches!(parsed, Ok(Parsed::Incomplete { .. })) {
                *resume = Resume::default();
            }
        }
    }
    parsed
}

/// `*<n>\r\n` then `n` times `$<len>\r\n<len bytes>\r\n`.
fn multibulk(
    input: &[u8],
    limits: &ParseLimits,
    unauthenticated: bool,
    args: &mut Vec<Range<usize>>,
    resume: &mut Resume,
) -> Result<Parsed, ProtocolError> {
    let Some(cr) = line_end(
        input,
        0,
        limits.max_inline_len,
        ProtocolError::TOO_BIG_MBULK_COUNT,
    )?
    else {
        resume.until = input.len().saturating_add(1);
        return Ok(Parsed::Incomplete {
            need: input.len().saturating_add(1),
        });
    };
    let invalid = || ProtocolError::new(ProtocolError::INVALID_MULTIBULK_LENGTH, 1);
    let count = parse_i64(&input[1..cr]).ok_or_else(invalid)?;
    if u64::try_from(count).is_ok_and(|n| n > limits.max_args as u64) {
        return Err(invalid());
    }
    if unauthenticated && count > UNAUTHENTICATED_MAX_ARGS {
        return Err(ProtocolError::new(
            ProtocolError::UNAUTHENTICATED_MULTIBULK_LENGTH,
            1,
        ));
    }
    let after_count = cr + 2;
    // Zero or negative: nothing to run. A count that does not fit usize is above max_args.
    let Ok(count @ 1..) = usize::try_from(count) else {
        return Ok(Parsed::Skip {
            consumed: after_count,
        });
    };

    args.reserve(count.min(MAX_ARGS_RESERVE));
    elements(input, limits, unauthenticated, args, after_count, count, resume)
}

/// The `left` elements of a multibulk request from offset `at` on (the ranges of those before
/// it already in `args`).
fn elements(
    input: &[u8],
    limits: &ParseLimits,
    unauthenticated: bool,
    args: &mut Vec<Range<usize>>,
    mut at: usize,
    left: usize,
    resume: &mut Resume,
) -> Result<Parsed, ProtocolError> {
    for left in (1..=left).rev() {
        // Every element still to come takes at least MIN_ELEMENT_LEN bytes.
        let Some(cr) = line_end(
            input,
            at,
            limits.max_inline_len,
            ProtocolError::TOO_BIG_BULK_COUNT,
        )?
        else {
            let need = at.saturating_add(MIN_ELEMENT_LEN.saturating_mul(left));
            *resume = Resume {
                at,
                left,
                until: input.len().saturating_add(1),
            };
            return Ok(Parsed::Incomplete {
                need: need.max(input.len().saturating_add(1)),
            });
        };
        // line_end found a `\r` at or after `at`, so input[at] exists.
        if input[at] != b'$' {
            return Err(ProtocolError {
                what: ProtocolError::EXPECTED_DOLLAR,
                offset: at,
                found: Some(input[at]),
            });
        }
        let len = parse_i64(&input[at + 1..cr])
            .and_then(|len| usize::try_from(len).ok())
            .filter(|&len| len <= limits.max_bulk_len)
            .ok_or_else(|| ProtocolError::new(ProtocolError::INVALID_BULK_LENGTH, at + 1))?;
        if unauthenticated && len > UNAUTHENTICATED_MAX_BULK_LEN {
            return Err(ProtocolError::new(
                ProtocolError::UNAUTHENTICATED_BULK_LENGTH,
                at + 1,
            ));
        }
        // line_end guarantees the byte after the `\r`: start <= input.len().
        let start = cr + 2;
        let available = input.len() - start;
        if available < 2 || available - 2 < len {
            let element_end = start.saturating_add(len).saturating_add(2);
            // The `$` line is parsed again on resuming (at most 22 bytes, already valid).
            *resume = Resume {
                at,
                left,
                until: element_end,
            };
            let need = element_end.saturating_add(MIN_ELEMENT_LEN.saturating_mul(left - 1));
            return Ok(Parsed::Incomplete { need });
        }
        args.push(start..start + len);
        // The two bytes after the payload are skipped unchecked, as Redis does.
        at = start + len + 2;
    }
    Ok(Parsed::Command {
        consumed: at,
        inline_scratch: false,
    })
}

/// Where the `*`/`$` line starting at `start` ends, as Redis finds it: its first `\r`, once
/// the byte after that has arrived too (`Ok(None)` until then). With no `\r` at all and more
/// than `max` bytes from `start`, the line is too long: `too_big`.
fn line_end(
    input: &[u8],
    start: usize,
    max: usize,
    too_big: &'static str,
) -> Result<Option<usize>, ProtocolError> {
    let rest = input.get(start..).unwrap_or_default();
    match rest.iter().position(|&b| b == b'\r') {
        Some(cr) if cr + 2 <= rest.len() => Ok(Some(start + cr)),
        Some(_) => Ok(None),
        None if rest.len() > max => Err(ProtocolError::new(too_big, start)),
        None => Ok(None),
    }
}

/// Redis's `string2ll`: the whole of `s` is an `i64` written without a sign or with `-`,
/// without leading zeros (`0` alone is zero; `-0` is not a number), in at most 20 bytes.
fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let (&first, rest) = digits.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut value = u64::from(first - b'0');
    for &d in rest {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        0i64.checked_sub_unsigned(value)
    } else {
        i64::try_from(value).ok()
    }
}

/// A line up to `\n` (a `\r` before it is dropped), split into arguments.
fn inline(
    input: &[u8],
    limits: &ParseLimits,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
    resume: &mut Resume,
) -> Result<Parsed, ProtocolError> {
    let Some(newline) = input.iter().position(|&b| b == b'\n') else {
        if input.len() > limits.max_inline_len {
            return Err(ProtocolError::new(ProtocolError::TOO_BIG_INLINE, 0));
        }
        resume.until = input.len().saturating_add(1);
        return Ok(Parsed::Incomplete {
            need: input.len().saturating_add(1),
        });
    };
    let consumed = newline + 1;
    let mut line = &input[..newline];
    if let [head @ .., b'\r'] = line {
        line = head;
    }
    // sdssplitargs reads the line as a C string: it ends at the first NUL.
    if let Some(nul) = line.iter().position(|&b| b == 0) {
        line = &line[..nul];
    }
    let quoted = line.iter().any(|&b| b == b'"' || b == b'\'');
    if quoted {
        split_quoted(line, limits.max_args, args, scratch)?;
    } else {
        split_plain(line, limits.max_args, args)?;
    }
    if args.is_empty() {
        Ok(Parsed::Skip { consumed })
    } else {
        Ok(Parsed::Command {
            consumed,
            inline_scratch: quoted,
        })
    }
}

/// C's `isspace` in the C locale, which `sdssplitargs` uses between arguments.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What ends an unquoted argument in `sdssplitargs` (not `\v` or `\f`, which `isspace` skips
/// between arguments but which an argument may contain).
fn ends_argument(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// More than `max_args` arguments in an inline command (Redis has no such limit).
fn too_many_inline_args(offset: usize) -> ProtocolError {
    ProtocolError::new(ProtocolError::TOO_BIG_INLINE, offset)
}

/// `sdssplitargs` of a line without quotes: ranges of the line itself.
fn split_plain(line: &[u8], max_args: usize, args: &mut Vec<Range<usize>>) -> Result<(), ProtocolError> {
    let mut at = 0;
    loop {
        while at < line.len() && is_c_space(line[at]) {
            at += 1;
        }
        if at == line.len() {
            return Ok(());
        }
        if args.len() == max_args {
            return Err(too_many_inline_args(at));
        }
        let start = at;
        while at < line.len() && !ends_argument(line[at]) {
            at += 1;
        }
        args.push(start..at);
    }
}

/// `sdssplitargs` of a line with quotes: every argument unquoted into `scratch`.
///
/// Within double quotes: `\xHH` (two hex digits) is that byte, `\n \r \t \b \a` those
/// characters, a backslash before any other byte that byte. Within single quotes only `\'`
/// is an escape. A quote opens anywhere in an argument (`a"b c"` is `ab c`); a closing quote
/// must be followed by whitespace or the end of the line.
fn split_quoted(
    line: &[u8],
    max_args: usize,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
) -> Result<(), ProtocolError> {
    // The line as sdssplitargs sees it: a C string, 0 past its end (`line` has no NUL).
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let unbalanced = |i: usize| ProtocolError::new(ProtocolError::UNBALANCED_QUOTES, i);
    scratch.clear();
    let mut i = 0;
    loop {
        while is_c_space(at(i)) {
            i += 1;
        }
        if at(i) == 0 {
            return Ok(());
        }
        if args.len() == max_args {
            return Err(too_many_inline_args(i));
        }
        let start = scratch.len();
        let (mut in_double, mut in_single) = (false, false);
        // Where the open quote is (an unterminated quote is reported there).
        let mut opened = 0;
        loop {
            let c = at(i);
            let mut done = false;
            if in_double {
                if c == b'\\'
                    && at(i + 1) == b'x'
                    && at(i + 2).is_ascii_hexdigit()
                    && at(i + 3).is_ascii_hexdigit()
                {
                    scratch.push((hex_value(at(i + 2)) << 4) | hex_value(at(i + 3)));
                    i += 3;
                } else if c == b'\\' && at(i + 1) != 0 {
                    i += 1;
                    scratch.push(match at(i) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(i + 1) != 0 && !is_c_space(at(i + 1)) {
                        return Err(unbalanced(i + 1));
                    }
                    done = true;
                } else if c == 0 {
                    return Err(unbalanced(opened));
                } else {
                    scratch.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(i + 1) == b'\'' {
                    i += 1;
                    scratch.push(b'\'');
                } else if c == b'\'' {
                    if at(i + 1) != 0 && !is_c_space(at(i + 1)) {
                        return Err(unbalanced(i + 1));
                    }
                    done = true;
                } else if c == 0 {
                    return Err(unbalanced(opened));
                } else {
                    scratch.push(c);
                }
            } else {
                match c {
                    0 => done = true,
                    c if ends_argument(c) => done = true,
                    b'"' => (in_double, opened) = (true, i),
                    b'\'' => (in_single, opened) = (true, i),
                    c => scratch.push(c),
                }
            }
            if at(i) != 0 {
                i += 1;
            }
            if done {
                break;
            }
        }
        args.push(start..scratch.len());
    }
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        b'A'..=b'F' => digit - b'A' + 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LIMITS: ParseLimits = ParseLimits {
        max_bulk_len: 1 << 20,
        max_args: 1024,
        max_inline_len: 64 << 10,
    };

    /// Limits small enough to reach at the boundary.
    const SMALL: ParseLimits = ParseLimits {
        max_bulk_len: 100,
        max_args: 4,
        max_inline_len: 8,
    };

    type Args = Vec<Vec<u8>>;

    /// One call, with the arguments copied out.
    fn parse_with(input: &[u8], limits: &ParseLimits) -> Result<(Parsed, Args), ProtocolError> {
        let (mut args, mut scratch) = (vec![0..1, 2..3], b"stale".to_vec());
        let parsed = parse_command(input, limits, &mut args, &mut scratch)?;
        let base: &[u8] = match parsed {
            Parsed::Command {
                inline_scratch: true, ..
            } => &scratch,
            _ => input,
        };
        if !matches!(parsed, Parsed::Command { .. }) {
            assert!(args.is_empty(), "args cleared for {parsed:?}");
        }
        Ok((parsed, args.iter().map(|r| base[r.clone()].to_vec()).collect()))
    }

    fn ok(input: &[u8]) -> (Parsed, Args) {
        parse_with(input, &LIMITS).unwrap_or_else(|e| panic!("{input:?}: {}", e.describe()))
    }

    fn err(input: &[u8], limits: &ParseLimits) -> ProtocolError {
        match parse_with(input, limits) {
            Err(e) => e,
            Ok(parsed) => panic!("{input:?} parsed as {parsed:?}"),
        }
    }

    fn args(list: &[&[u8]]) -> Args {
        list.iter().map(|a| a.to_vec()).collect()
    }

    fn command(input: &[u8], consumed: usize, scratch: bool, expected: &[&[u8]]) {
        let (parsed, got) = ok(input);
        assert_eq!(
            parsed,
            Parsed::Command {
                consumed,
                inline_scratch: scratch
            },
            "{input:?}"
        );
        assert_eq!(got, args(expected), "{input:?}");
    }

    fn incomplete(input: &[u8], limits: &ParseLimits) -> usize {
        match parse_with(input, limits) {
            Ok((Parsed::Incomplete { need }, _)) => {
                assert!(need > input.len(), "{input:?}: need {need}");
                need
            }
            other => panic!("{input:?}: {other:?}"),
        }
    }

    // ---- numbers -------------------------------------------------------------------------

    #[test]
    fn numbers_are_read_like_string2ll() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"0", Some(0)),
            (b"1", Some(1)),
            (b"-1", Some(-1)),
            (b"1234", Some(1234)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"-9223372036854775809", None),
            (b"18446744073709551616", None),
            (b"99999999999999999999", None),
            (b"-0", None),
            (b"00", None),
            (b"01", None),
            (b"+1", None),
            (b" 1", None),
            (b"1 ", None),
            (b"1\0", None),
            (b"", None),
            (b"-", None),
            (b"1a", None),
            (b"0x10", None),
            // 21 bytes: too long for string2ll whatever they are.
            (b"-00000000000000000001", None),
        ];
        for &(text, value) in cases {
            assert_eq!(parse_i64(text), value, "{:?}", String::from_utf8_lossy(text));
        }
    }

    // ---- multibulk -----------------------------------------------------------------------

    #[test]
    fn multibulk_command() {
        command(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 20, false, &[b"GET", b"k"]);
        command(b"*1\r\n$4\r\nPING\r\n", 14, false, &[b"PING"]);
    }

    #[test]
    fn multibulk_ranges_index_the_input() {
        let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let (mut args, mut scratch) = (Vec::new(), Vec::new());
        parse_command(input, &LIMITS, &mut args, &mut scratch).unwrap();
        assert_eq!(args, vec![8..11, 17..18]);
        assert!(scratch.is_empty());
    }

    #[test]
    fn multibulk_payload_is_binary() {
        command(b"*1\r\n$6\r\na\r\nb\0\xff\r\n", 16, false, &[b"a\r\nb\0\xff"]);
        command(b"*2\r\n$0\r\n\r\n$1\r\n*\r\n", 17, false, &[b"", b"*"]);
    }

    #[test]
    fn multibulk_in_a_pipeline_takes_only_its_bytes() {
        let input = b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nGET k\r\n";
        command(input, 14, false, &[b"PING"]);
        command(&input[14..], 22, false, &[b"ECHO", b"hi"]);
        command(&input[36..], 7, false, &[b"GET", b"k"]);
    }

    #[test]
    fn multibulk_count_zero_or_negative_is_skipped() {
        assert_eq!(ok(b"*0\r\n").0, Parsed::Skip { consumed: 4 });
        assert_eq!(ok(b"*-1\r\n*1\r\n").0, Parsed::Skip { consumed: 5 });
        assert_eq!(ok(b"*-100\r\n").0, Parsed::Skip { consumed: 7 });
        assert_eq!(ok(b"*-9223372036854775808\r\n").0, Parsed::Skip { consumed: 23 });
    }

    #[test]
    fn multibulk_skips_the_byte_after_cr_unchecked_like_redis() {
        // Redis reads a `*`/`$` line up to its `\r` and steps over 2 bytes; after a payload it
        // steps over 2 bytes without looking at them.
        command(b"*1\rX$4\rYPINGxy", 14, false, &[b"PING"]);
        command(b"*2\r\n$1\r\na\n\n$1\r\nbZZ", 18, false, &[b"a", b"b"]);
    }

    #[test]
    fn multibulk_bad_count() {
        for input in [
            &b"*x\r\n"[..],
            b"*\r\n",
            b"*+1\r\n",
            b"* 1\r\n",
            b"*1 \r\n",
            b"*01\r\n",
            b"*-0\r\n",
            b"*1\0\r\n",
            b"*9223372036854775808\r\n",
            b"*99999999999999999999\r\n",
        ] {
            let e = err(input, &LIMITS);
            assert_eq!(
                e,
                ProtocolError::new(ProtocolError::INVALID_MULTIBULK_LENGTH, 1),
                "{input:?}"
            );
            assert_eq!(e.to_string(), "Protocol error: invalid multibulk length");
        }
    }

    #[test]
    fn multibulk_count_above_max_args() {
        assert_eq!(
            err(b"*5\r\n", &SMALL).what,
            ProtocolError::INVALID_MULTIBULK_LENGTH
        );
        assert_eq!(incomplete(b"*4\r\n", &SMALL), 4 + 4 * MIN_ELEMENT_LEN);
        assert_eq!(
            err(b"*1025\r\n", &LIMITS).what,
            ProtocolError::INVALID_MULTIBULK_LENGTH
        );
        assert_eq!(incomplete(b"*1024\r\n", &LIMITS), 7 + 1024 * MIN_ELEMENT_LEN);
    }

    #[test]
    fn multibulk_count_line_too_long() {
        // No `\r` in more than max_inline_len (8) bytes.
        assert_eq!(incomplete(b"*1234567", &SMALL), 9);
        let e = err(b"*12345678", &SMALL);
        assert_eq!(e, ProtocolError::new(ProtocolError::TOO_BIG_MBULK_COUNT, 0));
        assert_eq!(e.to_string(), "Protocol error: too big mbulk count string");
        // A `\r` anywhere ends the line, as Redis's strchr does; then it is not a number.
        assert_eq!(
            err(b"*123456789\r\n", &SMALL).what,
            ProtocolError::INVALID_MULTIBULK_LENGTH
        );
        // A `\r` with nothing after it yet: wait for the byte after it.
        assert_eq!(incomplete(b"*123456789\r", &SMALL), 12);
    }

    #[test]
    fn multibulk_element_without_dollar() {
        let e = err(b"*1\r\nx3\r\nfoo\r\n", &LIMITS);
        assert_eq!(
            e,
            ProtocolError {
                what: ProtocolError::EXPECTED_DOLLAR,
                offset: 4,
                found: Some(b'x')
            }
        );
        assert_eq!(e.to_string(), "Protocol error: expected '$', got 'x'");
        assert_eq!(
            e.describe().to_string(),
            "Protocol error: expected '$', got 'x' (at byte 4)"
        );
        // Redis looks at the first byte only once the line is whole.
        assert_eq!(incomplete(b"*1\r\nx3", &LIMITS), 10);
        // `\r` and `\n` are written as spaces; bytes beyond ASCII as `?`.
        assert_eq!(
            err(b"*1\r\n\r\n", &LIMITS).to_string(),
            "Protocol error: expected '$', got ' '"
        );
        assert_eq!(
            err(b"*1\r\n\n\r\n", &LIMITS).to_string(),
            "Protocol error: expected '$', got ' '"
        );
        assert_eq!(
            err(b"*1\r\n\xff\r\n", &LIMITS).to_string(),
            "Protocol error: expected '$', got '?'"
        );
        let e = err(b"*2\r\n$1\r\na\r\n:1\r\n", &LIMITS);
        assert_eq!((e.offset, e.found), (11, Some(b':')));
    }

    #[test]
    fn multibulk_bad_bulk_length() {
        for input in [
            &b"*1\r\n$-1\r\n"[..],
            b"*1\r\n$\r\n",
            b"*1\r\n$x\r\n",
            b"*1\r\n$+3\r\n",
            b"*1\r\n$03\r\n",
            b"*1\r\n$-0\r\n",
            b"*1\r\n$3 \r\n",
            b"*1\r\n$9223372036854775808\r\n",
            b"*1\r\n$101\r\n",
        ] {
            let e = err(input, &SMALL);
            assert_eq!(
                e,
                ProtocolError::new(ProtocolError::INVALID_BULK_LENGTH, 5),
                "{input:?}"
            );
            assert_eq!(e.to_string(), "Protocol error: invalid bulk length");
        }
        // max_bulk_len itself is allowed.
        assert_eq!(incomplete(b"*1\r\n$100\r\n", &SMALL), 10 + 100 + 2);
    }

    #[test]
    fn multibulk_bulk_count_line_too_long() {
        assert_eq!(incomplete(b"*1\r\n$1234567", &SMALL), 12 + 1);
        let e = err(b"*1\r\n$12345678", &SMALL);
        assert_eq!(e, ProtocolError::new(ProtocolError::TOO_BIG_BULK_COUNT, 4));
        assert_eq!(e.to_string(), "Protocol error: too big bulk count string");
    }

    #[test]
    fn multibulk_incomplete_needs_a_lower_bound() {
        assert_eq!(incomplete(b"", &LIMITS), 1);
        assert_eq!(incomplete(b"*", &LIMITS), 2);
        assert_eq!(incomplete(b"*1\r", &LIMITS), 4);
        // Header known, payload missing: payload offset + len + 2, plus 6 for each element
        // still to come (the shortest is `$0\r\n\r\n`).
        assert_eq!(incomplete(b"*1\r\n$5\r\nhel", &LIMITS), 8 + 5 + 2);
        assert_eq!(incomplete(b"*2\r\n$5\r\nhel", &LIMITS), 8 + 5 + 2 + 6);
        assert_eq!(incomplete(b"*1\r\n$5\r\nhello", &LIMITS), 15);
        assert_eq!(incomplete(b"*1\r\n$5\r\nhello\r", &LIMITS), 15);
        assert_eq!(incomplete(b"*3\r\n$3\r\nSET\r\n$", &LIMITS), 13 + 2 * 6);
        assert_eq!(incomplete(b"*3\r\n$3\r\nSET\r\n", &LIMITS), 13 + 2 * 6);
        // A large value: the next read can be sized to take it whole.
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\nxx";
        assert_eq!(incomplete(input, &LIMITS), 30 + (1 << 20) + 2);
    }

    #[test]
    fn multibulk_huge_lengths_do_not_overflow() {
        let unlimited = ParseLimits {
            max_bulk_len: usize::MAX,
            max_args: usize::MAX,
            max_inline_len: 64,
        };
        let need = incomplete(b"*1\r\n$9223372036854775807\r\n", &unlimited);
        assert!(need >= 9_223_372_036_854_775_807);
        let need = incomplete(b"*9223372036854775807\r\n", &unlimited);
        assert_eq!(need, usize::MAX);
    }

    #[test]
    fn multibulk_does_not_reserve_from_the_count() {
        let (mut args, mut scratch) = (Vec::new(), Vec::new());
        let limits = ParseLimits {
            max_args: 1 << 30,
            ..LIMITS
        };
        parse_command(b"*1000000000\r\n", &limits, &mut args, &mut scratch).unwrap();
        assert!(args.capacity() <= MAX_ARGS_RESERVE);
    }

    #[test]
    fn unauthenticated_limits() {
        let parse = |input: &[u8]| {
            let (mut args, mut scratch) = (Vec::new(), Vec::new());
            parse_command_unauthenticated(input, &LIMITS, &mut args, &mut scratch)
        };
        let e = parse(b"*11\r\n").unwrap_err();
        assert_eq!(
            e,
            ProtocolError::new(ProtocolError::UNAUTHENTICATED_MULTIBULK_LENGTH, 1)
        );
        assert_eq!(e.to_string(), "Protocol error: unauthenticated multibulk length");
        assert!(matches!(parse(b"*10\r\n"), Ok(Parsed::Incomplete { .. })));
        let e = parse(b"*1\r\n$16385\r\n").unwrap_err();
        assert_eq!(
            e,
            ProtocolError::new(ProtocolError::UNAUTHENTICATED_BULK_LENGTH, 5)
        );
        assert_eq!(e.to_string(), "Protocol error: unauthenticated bulk length");
        assert!(matches!(
            parse(b"*1\r\n$16384\r\n"),
            Ok(Parsed::Incomplete { .. })
        ));
        assert!(matches!(
            parse(b"*1\r\n$4\r\nAUTH\r\n"),
            Ok(Parsed::Command { consumed: 14, .. })
        ));
        // Invalid beats unauthenticated, as in Redis.
        assert_eq!(
            parse(b"*1x\r\n").unwrap_err().what,
            ProtocolError::INVALID_MULTIBULK_LENGTH
        );
        assert_eq!(parse(b"*-5\r\n"), Ok(Parsed::Skip { consumed: 5 }));
    }

    // ---- inline --------------------------------------------------------------------------

    #[test]
    fn inline_command() {
        command(b"PING\r\n", 6, false, &[b"PING"]);
        command(b"PING\n", 5, false, &[b"PING"]);
        command(b"GET  k \t v\r\nPING\r\n", 12, false, &[b"GET", b"k", b"v"]);
        command(b"  SET k v  \r\n", 13, false, &[b"SET", b"k", b"v"]);
        // A `\r` inside the line separates like a space.
        command(b"a\rb\r\n", 5, false, &[b"a", b"b"]);
        // `\v` and `\f` are skipped between arguments but do not end one.
        command(b"\x0b a\x0bb\x0c c\n", 9, false, &[b"a\x0bb\x0c", b"c"]);
        // Bytes beyond ASCII are ordinary.
        command(b"SET \xff\xfe v\n", 9, false, &[b"SET", b"\xff\xfe", b"v"]);
    }

    #[test]
    fn inline_ranges_index_the_input() {
        let input = b"GET  k\r\n";
        let (mut args, mut scratch) = (Vec::new(), Vec::new());
        let parsed = parse_command(input, &LIMITS, &mut args, &mut scratch).unwrap();
        assert_eq!(
            parsed,
            Parsed::Command {
                consumed: 8,
                inline_scratch: false
            }
        );
        assert_eq!(args, vec![0..3, 5..6]);
    }

    #[test]
    fn inline_empty_line_is_skipped() {
        assert_eq!(ok(b"\r\n").0, Parsed::Skip { consumed: 2 });
        assert_eq!(ok(b"\n").0, Parsed::Skip { consumed: 1 });
        assert_eq!(ok(b" \t \x0b\x0c\r\nPING\r\n").0, Parsed::Skip { consumed: 7 });
        assert_eq!(ok(b"\0junk\r\n").0, Parsed::Skip { consumed: 7 });
    }

    #[test]
    fn inline_stops_at_nul_like_sdssplitargs() {
        command(b"GET k\0junk\r\n", 12, false, &[b"GET", b"k"]);
        command(b"GET \"k\"\0junk\r\n", 14, true, &[b"GET", b"k"]);
        assert_eq!(
            err(b"GET \"k\0\"\r\n", &LIMITS),
            ProtocolError::new(ProtocolError::UNBALANCED_QUOTES, 4)
        );
    }

    #[test]
    fn inline_incomplete() {
        assert_eq!(incomplete(b"PING", &LIMITS), 5);
        assert_eq!(incomplete(b"PING\r", &LIMITS), 6);
        assert_eq!(incomplete(b"\"unclosed quote, no newline yet", &LIMITS), 32);
    }

    #[test]
    fn inline_too_long() {
        assert_eq!(incomplete(b"12345678", &SMALL), 9);
        let e = err(b"123456789", &SMALL);
        assert_eq!(e, ProtocolError::new(ProtocolError::TOO_BIG_INLINE, 0));
        assert_eq!(e.to_string(), "Protocol error: too big inline request");
        // With its newline already there, a longer line is accepted, as Redis does.
        let (parsed, got) = parse_with(b"SET key value-longer-than-8\r\n", &SMALL).unwrap();
        assert_eq!(
            parsed,
            Parsed::Command {
                consumed: 29,
                inline_scratch: false
            }
        );
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn inline_more_args_than_max_args() {
        // SMALL allows 4 arguments; Redis has no limit for inline commands.
        command(b"a b c d\n", 8, false, &[b"a", b"b", b"c", b"d"]);
        let (parsed, _) = parse_with(b"a b c d\n", &SMALL).unwrap();
        assert_eq!(
            parsed,
            Parsed::Command {
                consumed: 8,
                inline_scratch: false
            }
        );
        assert_eq!(
            err(b"a b c d e\n", &SMALL),
            ProtocolError::new(ProtocolError::TOO_BIG_INLINE, 8)
        );
        assert_eq!(
            err(b"a b c 'd' e\n", &SMALL),
            ProtocolError::new(ProtocolError::TOO_BIG_INLINE, 10)
        );
    }

    #[test]
    fn inline_double_quotes() {
        command(
            b"SET k \"hello world\"\r\n",
            21,
            true,
            &[b"SET", b"k", b"hello world"],
        );
        command(
            b"ECHO \"\\x41\\x4a\\xfF\\x00\\n\\r\\t\\b\\a\\\\\\\"\\z\"\n",
            40,
            true,
            &[b"ECHO", b"AJ\xff\0\n\r\t\x08\x07\\\"z"],
        );
        // `\x` without two hex digits is an `x`.
        command(b"\"\\x4g\" \"\\x\"\n", 12, true, &[b"x4g", b"x"]);
        // Empty arguments.
        command(b"SET k \"\"\n", 9, true, &[b"SET", b"k", b""]);
        command(b"'' x\n", 5, true, &[b"", b"x"]);
        // A quote opens anywhere in an argument.
        command(b"a\"b c\" d\n", 9, true, &[b"ab c", b"d"]);
        // Single quotes inside double ones and back.
        command(b"\"it's\" 'say \"hi\"'\n", 18, true, &[b"it's", b"say \"hi\""]);
        // A closing quote may be followed by any C whitespace.
        command(b"\"a\"\x0bb\r\n", 7, true, &[b"a", b"b"]);
    }

    #[test]
    fn inline_single_quotes() {
        command(b"'it\\'s' 'a\\nb'\n", 15, true, &[b"it's", b"a\\nb"]);
        command(b"'\\x41' 'a\\b'\n", 13, true, &[b"\\x41", b"a\\b"]);
        // `\'` is always an escape: a single-quoted argument cannot end with a backslash.
        assert_eq!(err(b"'\\\\'\n", &LIMITS).what, ProtocolError::UNBALANCED_QUOTES);
    }

    #[test]
    fn inline_unbalanced_quotes() {
        let cases: &[(&[u8], usize)] = &[
            (b"\"foo\r\n", 0),
            (b"SET k \"foo\n", 6),
            (b"\"foo\"bar\n", 5),
            (b"'foo'bar\n", 5),
            (b"'foo\n", 0),
            (b"\"foo\\\"\n", 0),
            (b"'foo\\'\n", 0),
            (b"\"a\"\"b\"\n", 3),
            (b"\"\\\n", 0),
        ];
        for &(input, offset) in cases {
            let e = err(input, &LIMITS);
            assert_eq!(
                e,
                ProtocolError::new(ProtocolError::UNBALANCED_QUOTES, offset),
                "{input:?}"
            );
            assert_eq!(e.to_string(), "Protocol error: unbalanced quotes in request");
        }
    }

    #[test]
    fn inline_scratch_is_replaced() {
        let (mut args, mut scratch) = (Vec::new(), b"old".to_vec());
        parse_command(b"\"a\" b\n", &LIMITS, &mut args, &mut scratch).unwrap();
        assert_eq!(scratch, b"ab");
        assert_eq!(args, vec![0..1, 1..2]);
    }

    // ---- properties ----------------------------------------------------------------------

    /// One request of a generated pipeline.
    #[derive(Debug, Clone)]
    enum Request {
        Multibulk(Args),
        /// Unquoted words, the first not starting with `*`.
        Inline(Args),
        /// Every argument double-quoted.
        Quoted(Args),
        /// Bytes that carry no command.
        Nothing(&'static [u8]),
    }

    impl Request {
        fn args(&self) -> Option<&Args> {
            match self {
                Request::Multibulk(a) | Request::Inline(a) | Request::Quoted(a) => Some(a),
                Request::Nothing(_) => None,
            }
        }

        fn encode(&self, out: &mut Vec<u8>) {
            match self {
                Request::Multibulk(args) => {
                    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
                    for a in args {
                        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                        out.extend_from_slice(a);
                        out.extend_from_slice(b"\r\n");
                    }
                }
                Request::Inline(args) => {
                    out.extend_from_slice(&args.join(&b' '));
                    out.extend_from_slice(b"\r\n");
                }
                Request::Quoted(args) => {
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            out.push(b' ');
                        }
                        quote(a, out);
                    }
                    out.push(b'\n');
                }
                Request::Nothing(bytes) => out.extend_from_slice(bytes),
            }
        }
    }

    /// Redis's `sdscatrepr`: the form `sdssplitargs` reads back.
    fn quote(arg: &[u8], out: &mut Vec<u8>) {
        out.push(b'"');
        for &b in arg {
            match b {
                b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x07 => out.extend_from_slice(b"\\a"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x20..=0x7e => out.push(b),
                _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            }
        }
        out.push(b'"');
    }

    /// Requests without a command.
    const NOTHING: &[&[u8]] = &[b"\r\n", b"\n", b" \t\r\n", b"*0\r\n", b"*-1\r\n"];

    /// Fragments that make near-valid requests when strung together.
    const PIECES: &[&[u8]] = &[
        b"*", b"$", b"\r\n", b"\r", b"\n", b"0", b"1", b"2", b"3", b"12", b"-", b"-1", b"a", b"GET", b" ",
        b"\t", b"\"", b"'", b"\\", b"x", b"4f", b"\0", b"\xff",
    ];

    fn request() -> impl Strategy<Value = Request> {
        let word = "[a-zA-Z0-9_:.-]{1,8}".prop_map(String::into_bytes);
        let first = "[a-zA-Z]{1,8}".prop_map(String::into_bytes);
        prop_oneof![
            4 => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6)
                .prop_map(Request::Multibulk),
            2 => (first, prop::collection::vec(word, 0..4)).prop_map(|(f, mut rest)| {
                rest.insert(0, f);
                Request::Inline(rest)
            }),
            2 => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 1..4)
                .prop_map(Request::Quoted),
            1 => prop::sample::select(NOTHING).prop_map(Request::Nothing),
        ]
    }

    /// Parses requests off the front of `input` until one is incomplete (or fails): the
    /// commands found, and where the parser stopped with what.
    fn drain(input: &[u8], limits: &ParseLimits) -> (Vec<Args>, usize, Result<Parsed, ProtocolError>) {
        let (mut args, mut scratch) = (Vec::new(), Vec::new());
        let mut commands = Vec::new();
        let mut at = 0;
        loop {
            let rest = &input[at..];
            let parsed = parse_command(rest, limits, &mut args, &mut scratch);
            match parsed {
                Ok(Parsed::Command {
                    consumed,
                    inline_scratch,
                }) => {
                    assert!(consumed > 0 && consumed <= rest.len());
                    let base: &[u8] = if inline_scratch { &scratch } else { rest };
                    commands.push(args.iter().map(|r| base[r.clone()].to_vec()).collect());
                    at += consumed;
                }
                Ok(Parsed::Skip { consumed }) => {
                    assert!(consumed > 0 && consumed <= rest.len());
                    at += consumed;
                }
                Ok(Parsed::Incomplete { need }) => {
                    assert!(need > rest.len());
                    return (commands, at, parsed);
                }
                Err(_) => return (commands, at, parsed),
            }
        }
    }

    proptest! {
        /// A pipeline parses back into its commands; every prefix of it parses into the
        /// commands it holds whole, then an incomplete one whose `need` is a true lower bound.
        #[test]
        fn pipeline_and_every_prefix(requests in prop::collection::vec(request(), 1..6)) {
            let mut wire = Vec::new();
            let mut ends = Vec::new();
            for r in &requests {
                r.encode(&mut wire);
                ends.push(wire.len());
            }
            let expected: Vec<Args> = requests.iter().filter_map(|r| r.args().cloned()).collect();
            let (commands, at, last) = drain(&wire, &LIMITS);
            prop_assert_eq!(&commands, &expected);
            prop_assert_eq!(at, wire.len());
            prop_assert_eq!(last, Ok(Parsed::Incomplete { need: 1 }));

            for cut in 0..wire.len() {
                let (commands, at, last) = drain(&wire[..cut], &LIMITS);
                // It stopped at the start of a request, the first one not wholly in the prefix.
                let whole = ends.iter().take_while(|&&end| end <= cut).count();
                let start = if whole == 0 { 0 } else { ends[whole - 1] };
                prop_assert_eq!(at, start);
                let held = requests[..whole].iter().filter_map(|r| r.args().cloned()).collect::<Vec<_>>();
                prop_assert_eq!(&commands, &held);
                let Ok(Parsed::Incomplete { need }) = last else {
                    return Err(TestCaseError::fail(format!("cut {cut}: {last:?}")));
                };
                prop_assert!(at + need > cut);
                let end = ends.get(whole).copied().unwrap_or(usize::MAX);
                prop_assert!(at + need <= end, "need {} beyond the request's end {}", at + need, end - at);
            }
        }

        /// Any argument survives quoting (Redis's `sdscatrepr`) and the inline parser.
        #[test]
        fn quoted_inline_round_trip(args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..30), 1..6)) {
            let mut wire = Vec::new();
            Request::Quoted(args.clone()).encode(&mut wire);
            let (parsed, got) = parse_with(&wire, &LIMITS).unwrap();
            prop_assert_eq!(parsed, Parsed::Command { consumed: wire.len(), inline_scratch: true });
            prop_assert_eq!(got, args);
        }

        /// Whatever the bytes: no panic; results are in bounds; a command (or skip) is decided
        /// by its own bytes alone, whatever follows; and `need` never overshoots the length of
        /// the command that the bytes turn out to hold.
        #[test]
        fn any_bytes(
            pieces in prop::collection::vec(prop::sample::select(PIECES), 0..40),
            cut in any::<prop::sample::Index>(),
            small in any::<bool>(),
        ) {
            let input = pieces.concat();
            let limits = if small { SMALL } else { LIMITS };
            let cut = cut.index(input.len() + 1);
            let (mut args, mut scratch) = (Vec::new(), Vec::new());
            let whole = parse_command(&input, &limits, &mut args, &mut scratch);
            if let Ok(Parsed::Command { consumed, inline_scratch }) = whole {
                prop_assert!(consumed > 0 && consumed <= input.len());
                let base = if inline_scratch { scratch.len() } else { consumed };
                prop_assert!(args.iter().all(|r| r.start <= r.end && r.end <= base));
                prop_assert!(args.len() <= limits.max_args);
                if input[0] == b'*' {
                    prop_assert!(args.iter().all(|r| r.len() <= limits.max_bulk_len));
                }
            }
            let whole_args = args.clone();
            let whole_scratch = scratch.clone();
            let prefix = parse_command(&input[..cut], &limits, &mut args, &mut scratch);
            match (&prefix, &whole) {
                (Ok(Parsed::Command { .. } | Parsed::Skip { .. }), _) => {
                    prop_assert_eq!(&prefix, &whole);
                    prop_assert_eq!(&args, &whole_args);
                    if matches!(prefix, Ok(Parsed::Command { inline_scratch: true, .. })) {
                        prop_assert_eq!(&scratch, &whole_scratch);
                    }
                }
                (Ok(Parsed::Incomplete { need }), Ok(Parsed::Command { consumed, .. } | Parsed::Skip { consumed })) => {
                    prop_assert!(*need > cut);
                    prop_assert!(need <= consumed, "need {} > {}", need, consumed);
                }
                (Ok(Parsed::Incomplete { need }), _) => prop_assert!(*need > cut),
                (Err(_), _) => {}
            }
        }

        /// Parsing a request as its bytes arrive, going on from where each call stopped, gives
        /// at every step what parsing the bytes so far from the start gives (the same error as
        /// soon as the malformed line is there), and bytes short of `until` are still incomplete.
        #[test]
        fn resuming_is_parsing_from_the_start(
            pieces in prop::collection::vec(prop::sample::select(PIECES), 0..40),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..8),
            small in any::<bool>(),
            authenticated in any::<bool>(),
        ) {
            let input = pieces.concat();
            let limits = if small { SMALL } else { LIMITS };
            let mut ends: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            ends.push(input.len());
            ends.sort_unstable();
            let (mut args, mut scratch, mut resume) = (Vec::new(), Vec::new(), Resume::default());
            for end in ends {
                let prefix = &input[..end];
                let before = resume;
                let skippable = end < before.until();
                let resumed = resume_command(prefix, &limits, authenticated, &mut args, &mut scratch, &mut resume);
                let (mut fresh_args, mut fresh_scratch) = (Vec::new(), Vec::new());
                let fresh = resume_command(
                    prefix,
                    &limits,
                    authenticated,
                    &mut fresh_args,
                    &mut fresh_scratch,
                    &mut Resume::default(),
                );
                prop_assert_eq!(&resumed, &fresh, "{:?} after {:?}", prefix, before);
                // What `Input` relies on to skip a parse.
                if skippable {
                    prop_assert!(matches!(fresh, Ok(Parsed::Incomplete { .. })), "{:?} before {}", prefix, before.until());
                }
                if matches!(resumed, Ok(Parsed::Command { inline_scratch: true, .. })) {
                    prop_assert_eq!(&scratch, &fresh_scratch);
                } else {
                    prop_assert_eq!(&args, &fresh_args);
                }
                match resumed {
                    Ok(Parsed::Incomplete { need }) => {
                        prop_assert!(resume.until() > end && resume.until() <= need);
                    }
                    // A new request would start here: this test follows one.
                    _ => {
                        prop_assert_eq!(resume, Resume::default());
                        break;
                    }
                }
            }
        }
    }
}
