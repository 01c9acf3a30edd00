//! A client's request bytes, without I/O: pool read buffers in, parsed commands out.
//!
//! The driver asks for [`Input::read_target`], reads into it, and reports the count with
//! [`Input::filled`]; then [`Input::commands`] hands every whole command to a callback as
//! [`Args`] that point into the read buffer. Nothing is copied on the way, except the few bytes
//! of a command cut by the end of a read, which move to the front of the next buffer.
//!
//! A read buffer that holds at least one whole command is frozen into a counted
//! [`SharedBuf`], so that a handler may keep a large value as a slice of it (a `SET` value that
//! arrived whole is stored where it was read). A command that cannot complete in the current
//! buffer gets a buffer sized for it (from the parser's lower bound of its length), so a large
//! value is copied at most once, whatever the read boundaries.

use std::ops::Range;

use ferry_buf::{BufMut, Pool, PoolError};

use crate::cmd::Args;
use crate::resp::{ParseLimits, Parsed, ProtocolError, parse_command};

/// Why a client's input cannot be taken any further (the client is disconnected).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A malformed request: Redis's `-ERR Protocol error: ...` reply is sent, then the
    /// connection closes.
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    /// One command would need more buffered bytes than `client-query-buffer-limit`.
    #[error("query buffer of {need} bytes exceeds client-query-buffer-limit ({limit})")]
    QueryBufferLimit {
        /// Bytes the pending command needs.
        need: usize,
        /// The limit.
        limit: usize,
    },
    /// The pool has no buffer for the request.
    #[error("no read buffer: {0}")]
    Pool(#[from] PoolError),
}

/// Counters of one client's input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputCounters {
    /// Bytes read.
    pub bytes: u64,
    /// Commands parsed.
    pub commands: u64,
    /// Bytes copied from one read buffer to the next (commands cut by a read boundary).
    pub copied: u64,
}

/// See the module docs.
#[derive(Debug)]
pub struct Input {
    pool: Pool,
    limits: ParseLimits,
    read_buf: usize,
    query_limit: usize,
    /// The buffer reads fill; bytes before `start` were handed out already (only while it is
    /// not frozen: a frozen buffer's rest moves to a new one).
    buf: Option<BufMut>,
    /// A lower bound on the length of the incomplete command at the front of `buf`.
    need: usize,
    args: Vec<Range<usize>>,
    scratch: Vec<u8>,
    counters: InputCounters,
}

impl Input {
    /// Input reading into buffers of `read_buf` bytes from `pool` (larger for larger commands,
    /// up to `query_limit` and the pool's largest buffer: one command must fit one buffer).
    pub fn new(pool: &Pool, limits: ParseLimits, read_buf: usize, query_limit: usize) -> Input {
        Input {
            pool: pool.clone(),
            limits,
            read_buf: read_buf.clamp(64, pool.max_class()),
            // A command is parsed in place, so it must fit one buffer.
            query_limit: query_limit.min(pool.max_class()),
            buf: None,
            need: 0,
            args: Vec::new(),
            scratch: Vec::new(),
            counters: InputCounters::default(),
        }
    }

    /// What was read and parsed so far.
    pub fn counters(&self) -> InputCounters {
        self.counters
    }

    /// Bytes buffered and not yet parsed into a command.
    pub fn pending(&self) -> usize {
        self.buf.as_ref().map_or(0, BufMut::len)
    }

    /// Where the next read goes: never empty. Grows the buffer (moving its bytes once) when
    /// the command at its front needs more room than is left.
    pub fn read_target(&mut self) -> Result<&mut [u8], InputError> {
        let len = self.pending();
        let cap = self.buf.as_ref().map_or(0, BufMut::capacity);
        if cap == len || self.need > cap {
            // Full, or the command at the front needs more than this buffer: a larger one,
            // moving the bytes read so far once.
            let want = self.need.max(len.saturating_mul(2)).max(self.read_buf);
            if want > self.query_limit {
                return Err(InputError::QueryBufferLimit {
                    need: want,
                    limit: self.query_limit,
                });
            }
            let mut next = self.pool.alloc(want)?;
            if let Some(old) = self.buf.take() {
                next.extend_from_slice(&old);
                self.counters.copied += old.len() as u64;
            }
            self.buf = Some(next);
        }
        let buf = self.buf.as_mut().expect("allocated above");
        let start = buf.len();
        Ok(&mut buf.capacity_mut()[start..])
    }

    /// Records that a read put `n` bytes into the target.
    ///
    /// # Panics
    /// If `n` is more than the target's length (a driver bug).
    pub fn filled(&mut self, n: usize) {
        let buf = self.buf.as_mut().expect("read_target came first");
        buf.set_len(buf.len() + n);
        self.counters.bytes += n as u64;
    }

    /// Hands every whole command buffered to `run`, in order. Stops at the first malformed
    /// request, after running the commands before it (as Redis does).
    pub fn commands(&mut self, mut run: impl FnMut(&Args<'_>)) -> Result<(), InputError> {
        let Some(buf) = &self.buf else { return Ok(()) };
        // Nothing whole yet: keep reading into the same buffer, unfrozen.
        let first = parse_command(buf, &self.limits, &mut self.args, &mut self.scratch)?;
        if let Parsed::Incomplete { need } = first {
            self.need = need;
            return Ok(());
        }
        let shared = self.buf.take().expect("checked above").freeze();
        let mut pos = 0;
        let mut parsed = Some(first);
        let outcome = loop {
            let step = match parsed.take() {
                Some(p) => Ok(p),
                None if pos == shared.len() => break Ok(()),
                None => parse_command(&shared[pos..], &self.limits, &mut self.args, &mut self.scratch),
            };
            match step {
                Err(e) => break Err(ProtocolError { offset: e.offset + pos, ..e }),
                Ok(Parsed::Incomplete { need }) => {
                    self.need = need;
                    break Ok(());
                }
                Ok(Parsed::Skip { consumed }) => pos += consumed,
                Ok(Parsed::Command { consumed, inline_scratch }) => {
                    self.counters.commands += 1;
                    if inline_scratch {
                        run(&Args::new(&self.scratch, &self.args, None));
                    } else {
                        for r in &mut self.args {
                            *r = r.start + pos..r.end + pos;
                        }
                        run(&Args::new(&shared, &self.args, Some(&shared)));
                    }
                    pos += consumed;
                    self.need = 0;
                }
            }
        };
        outcome?;
        if pos < shared.len() {
            // The start of a command cut by the read: to the front of a new buffer, sized
            // for the whole command when the parser knows it is larger.
            let rest = &shared[pos..];
            let size = self.need.max(rest.len() + 1).max(self.read_buf);
            if size > self.query_limit {
                return Err(InputError::QueryBufferLimit {
                    need: size,
                    limit: self.query_limit,
                });
            }
            let mut next = self.pool.alloc(size)?;
            next.extend_from_slice(rest);
            self.counters.copied += rest.len() as u64;
            self.buf = Some(next);
        }
        Ok(())
    }

    /// Drops every buffer (the client is gone).
    pub fn clear(&mut self) {
        self.buf = None;
        self.args = Vec::new();
        self.scratch = Vec::new();
    }
}

