//! The request parser: RESP multibulk (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline commands
//! (`GET k\r\n`), parsed in place. STUB: replaced by the real parser.

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

/// A malformed request. The message is Redis's, after `-ERR Protocol error: `; the client is
/// disconnected after the reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {offset}")]
pub struct ProtocolError {
    /// Redis's text, e.g. `invalid bulk length`.
    pub what: &'static str,
    /// Offset in the input where it was found.
    pub offset: usize,
}

/// Parses the command at the start of `input`.
pub fn parse_command(
    input: &[u8],
    limits: &ParseLimits,
    args: &mut Vec<Range<usize>>,
    scratch: &mut Vec<u8>,
) -> Result<Parsed, ProtocolError> {
    let _ = (input, limits, args, scratch);
    todo!("resp parser")
}
