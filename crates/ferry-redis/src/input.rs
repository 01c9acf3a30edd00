//! A client's request bytes, without I/O: pool read buffers in, parsed commands out.
//!
//! The driver asks for [`Input::read_target`], reads into it, and reports the count with
//! [`Input::filled`]; then [`Input::commands`] hands every whole command to a callback as
//! [`Args`] that point into the read buffer. Nothing is copied on the way, except the few bytes
//! of a command cut by the end of a read, which move to the front of the next buffer.
//!
//! A read buffer that holds at least one whole command is frozen into a counted
//! [`SharedBuf`], so that a handler may keep a large value as a slice of it (a `SET` value that
//! arrived whole is stored where it was read). A command that outgrows its buffer moves to one
//! twice the bytes that arrived (at least a read buffer), and never larger than the parser's
//! lower bound of the command's length when that is more than a read buffer: a length the peer
//! announces buys no memory before its bytes come (a peer announcing a bulk of
//! `proto-max-bulk-len` and sending 10 bytes holds one read buffer), the last buffer is sized
//! for the command, and the bytes copied on the way are fewer than twice the command's. A
//! buffer larger than a read buffer is reserved from the loop's budget for requests in
//! progress ([`Input::with_budget`], `ferry-net`'s [`FrameBudget`]) until its command is
//! whole: a request that would pass it disconnects its client.

use std::ops::Range;

use ferry_buf::{BufMut, Pool, PoolError};
use ferry_net::{FrameBudget, Reservation};

use crate::cmd::Args;
use crate::resp::{ParseLimits, Parsed, ProtocolError, Resume, resume_command};

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
    /// A buffer for the command in progress would pass the budget that requests in progress
    /// share ([`Input::with_budget`]).
    #[error(
        "a request buffer of {need} bytes would pass the budget for requests in progress ({in_use} of {limit} bytes held)"
    )]
    Budget {
        /// Bytes the buffer needs.
        need: usize,
        /// Bytes the requests in progress held.
        in_use: usize,
        /// The budget.
        limit: usize,
    },
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
    /// Where its parse stopped (its elements so far in `args`).
    resume: Resume,
    /// What buffers larger than a read buffer are reserved from, and the current one's
    /// reservation (until its command is whole).
    budget: Option<FrameBudget>,
    reserved: Option<Reservation>,
    args: Vec<Range<usize>>,
    scratch: Vec<u8>,
    counters: InputCounters,
}

/// What [`Input::commands`] does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Runs the next one; whether the client is authenticated now.
    Go(bool),
    /// Runs nothing more until called again: the rest stays buffered (the client waits in a
    /// blocking command).
    Pause,
    /// Runs nothing more, and drops the rest (the client is closing: `QUIT`, or too many
    /// replies unread).
    Stop,
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
            resume: Resume::default(),
            budget: None,
            reserved: None,
            args: Vec::new(),
            scratch: Vec::new(),
            counters: InputCounters::default(),
        }
    }

    /// Reserves every buffer larger than a read buffer from `budget` while its command is in
    /// progress (a server's loop shares one among its clients).
    pub fn with_budget(mut self, budget: FrameBudget) -> Input {
        self.budget = Some(budget);
        self
    }

    /// A buffer of `size` bytes for the command in progress, reserved from the budget when it
    /// is larger than a read buffer (the reservation replaces the last one, whose buffer this
    /// one replaces).
    fn alloc(&mut self, size: usize) -> Result<BufMut, InputError> {
        self.reserved = None;
        if let Some(budget) = self.budget.as_ref().filter(|_| size > self.read_buf) {
            self.reserved = Some(budget.try_reserve(size).ok_or_else(|| InputError::Budget {
                need: size,
                in_use: budget.in_use(),
                limit: budget.limit(),
            })?);
        }
        Ok(self.pool.alloc(size)?)
    }

    /// What was read and parsed so far.
    pub fn counters(&self) -> InputCounters {
        self.counters
    }

    /// Bytes buffered and not yet parsed into a command.
    pub fn pending(&self) -> usize {
        self.buf.as_ref().map_or(0, BufMut::len)
    }

    /// The read buffer's size (0 between reads, when it was returned to the pool).
    pub fn capacity(&self) -> usize {
        self.buf.as_ref().map_or(0, BufMut::capacity)
    }

    /// The size of the buffer for an incomplete command of which `len` bytes arrived: twice
    /// those, at least a read buffer (room for what a pipelining client sends after it), never
    /// more than that or the command's length, and within the query buffer limit.
    fn grown(&self, len: usize) -> Result<usize, InputError> {
        let step = len.saturating_mul(2).max(self.read_buf);
        let want = if self.need > len {
            step.min(self.need.max(self.read_buf))
        } else {
            step
        };
        if want.min(self.query_limit) <= len || self.need > self.query_limit {
            return Err(InputError::QueryBufferLimit {
                need: want.max(self.need),
                limit: self.query_limit,
            });
        }
        Ok(want.min(self.query_limit))
    }

    /// Where the next read goes: never empty. Grows the buffer when it is full ([`grown`],
    /// moving its bytes).
    ///
    /// [`grown`]: Input::grown
    pub fn read_target(&mut self) -> Result<&mut [u8], InputError> {
        let len = self.pending();
        let cap = self.buf.as_ref().map_or(0, BufMut::capacity);
        // A command announced past the query buffer limit is refused at once.
        if cap == len || self.need > self.query_limit {
            let want = self.grown(len)?;
            let mut next = self.alloc(want)?;
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

    /// Hands every whole command buffered to `run`, in order, with the bytes buffered from
    /// its start on (itself and what follows it: Redis's query buffer while it runs). Stops at the first malformed
    /// request, after running the commands before it (as Redis does).
    ///
    /// `authenticated` says whether the client may send large requests yet (Redis's tighter
    /// limits before `AUTH`, [`parse_command_unauthenticated`]); `run` returns it again after
    /// each command, which may have been an `AUTH`, in [`Next`].
    pub fn commands(
        &mut self,
        mut authenticated: bool,
        mut run: impl FnMut(&Args<'_>, usize) -> Next,
    ) -> Result<(), InputError> {
        // The command at the front cannot be parsed any further with the bytes here (its line
        // has not ended, or an element's payload is arriving): nothing to do. Otherwise the
        // parse goes on from where it stopped, so a client that trickles a request's arguments
        // has each parsed once, and a malformed line is refused as soon as it has arrived.
        if self.pending() < self.resume.until() {
            return Ok(());
        }
        let limits = self.limits;
        let parse = |input: &[u8],
                     authenticated: bool,
                     args: &mut Vec<Range<usize>>,
                     scratch: &mut Vec<u8>,
                     resume: &mut Resume| {
            resume_command(input, &limits, authenticated, args, scratch, resume)
        };
        let Some(buf) = &self.buf else { return Ok(()) };
        // Nothing whole (or to skip) yet: keep reading into the same buffer, unfrozen.
        let first = parse(
            buf,
            authenticated,
            &mut self.args,
            &mut self.scratch,
            &mut self.resume,
        )?;
        if let Parsed::Incomplete { need } = first {
            self.need = need;
            return Ok(());
        }
        let buf = self.buf.take().expect("checked above");
        // It holds a whole command (or bytes to skip) now: no longer a request in progress,
        // and nothing known of the next one's length.
        self.reserved = None;
        self.need = 0;
        let held = buf.capacity();
        let shared = buf.freeze();
        let mut pos = 0;
        let mut parsed = Some(first);
        let outcome = loop {
            let step = match parsed.take() {
                Some(p) => Ok(p),
                None if pos == shared.len() => break Ok(()),
                None => parse(
                    &shared[pos..],
                    authenticated,
                    &mut self.args,
                    &mut self.scratch,
                    &mut self.resume,
                ),
            };
            match step {
                Err(e) => {
                    break Err(ProtocolError {
                        offset: e.offset + pos,
                        ..e
                    });
                }
                Ok(Parsed::Incomplete { need }) => {
                    self.need = need;
                    break Ok(());
                }
                Ok(Parsed::Skip { consumed }) => pos += consumed,
                Ok(Parsed::Command {
                    consumed,
                    inline_scratch,
                }) => {
                    self.counters.commands += 1;
                    let queued = shared.len() - pos;
                    let next = if inline_scratch {
                        run(&Args::new(&self.scratch, &self.args, None), queued)
                    } else {
                        for r in &mut self.args {
                            *r = r.start + pos..r.end + pos;
                        }
                        run(
                            &Args::new(&shared, &self.args, Some(&shared)).holding(held),
                            queued,
                        )
                    };
                    pos += consumed;
                    match next {
                        Next::Go(a) => authenticated = a,
                        Next::Pause => break Ok(()),
                        Next::Stop => return Ok(()),
                    }
                }
            }
        };
        outcome?;
        if pos < shared.len() {
            // The start of a command cut by the read: to the front of a new buffer.
            let rest = &shared[pos..];
            let size = self.grown(rest.len())?;
            let mut next = self.alloc(size)?;
            next.extend_from_slice(rest);
            self.counters.copied += rest.len() as u64;
            self.buf = Some(next);
        }
        Ok(())
    }

    /// Drops every buffer (the client is gone).
    pub fn clear(&mut self) {
        self.buf = None;
        self.reserved = None;
        self.need = 0;
        self.resume = Resume::default();
        self.args = Vec::new();
        self.scratch = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use ferry_testkit::pool;

    use super::*;

    const LIMITS: ParseLimits = ParseLimits {
        max_bulk_len: 512 << 10,
        max_args: 1024,
        max_inline_len: 64 << 10,
    };

    /// Feeds `chunks` as successive reads; returns every command's arguments, and whether each
    /// command's last argument was kept in place (`Args::value` with keep_min 1 recovers a
    /// slice of a read buffer rather than a copy).
    fn feed(input: &mut Input, chunks: &[&[u8]]) -> Vec<(Vec<Vec<u8>>, bool)> {
        let mut seen = Vec::new();
        for chunk in chunks {
            let mut rest = *chunk;
            while !rest.is_empty() {
                let target = input.read_target().unwrap();
                let n = target.len().min(rest.len());
                target[..n].copy_from_slice(&rest[..n]);
                input.filled(n);
                rest = &rest[n..];
                let pool = input.pool.clone();
                input
                    .commands(true, |args, _| {
                        let all = args.iter_from(0).map(<[u8]>::to_vec).collect();
                        let last = args.len() - 1;
                        let kept = args.value(last, &pool, 1).unwrap();
                        let in_place = std::ptr::eq(kept.as_ptr(), args.get(last).as_ptr());
                        seen.push((all, in_place));
                        Next::Go(true)
                    })
                    .unwrap();
            }
        }
        seen
    }

    fn set(key: &str, value: &[u8]) -> Vec<u8> {
        let mut v = format!(
            "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n",
            key.len(),
            value.len()
        )
        .into_bytes();
        v.extend_from_slice(value);
        v.extend_from_slice(b"\r\n");
        v
    }

    #[test]
    fn a_pipeline_cut_anywhere_gives_the_same_commands() {
        let mut stream = Vec::new();
        for i in 0..20 {
            stream.extend_from_slice(&set(&format!("k{i}"), &vec![b'a' + i as u8; i * 37]));
        }
        stream.extend_from_slice(b"PING\r\n\r\nGET k1\r\n");
        for cut in [1, 2, 7, 64, 100, 1000, stream.len()] {
            let pool = pool();
            let mut input = Input::new(&pool, LIMITS, 256, 1 << 20);
            let chunks: Vec<&[u8]> = stream.chunks(cut).collect();
            let seen = feed(&mut input, &chunks);
            assert_eq!(seen.len(), 22, "cut {cut}");
            for (i, (args, _)) in seen.iter().take(20).enumerate() {
                assert_eq!(args[1], format!("k{i}").into_bytes(), "cut {cut}");
                assert_eq!(args[2], vec![b'a' + i as u8; i * 37], "cut {cut}");
            }
            assert_eq!(seen[20].0, vec![b"PING".to_vec()]);
            assert_eq!(seen[21].0, vec![b"GET".to_vec(), b"k1".to_vec()]);
            assert_eq!(input.pending(), 0);
        }
    }

    #[test]
    fn a_large_value_cut_by_reads_arrives_in_one_buffer_sized_for_it() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 1024, 1 << 20);
        let value = vec![7u8; 100_000];
        let cmd = set("big", &value);
        // First read: the header and a little of the value; then the rest in 4 KiB reads.
        let mut chunks: Vec<&[u8]> = vec![&cmd[..600]];
        chunks.extend(cmd[600..].chunks(4096));
        let seen = feed(&mut input, &chunks);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0[2], value);
        assert!(seen[0].1, "the value is kept where it was read");
        // The buffer doubled with what arrived (1, 2, ... 64 KiB full), then took the
        // command's size: each step moved the bytes so far, fewer in all than twice the value.
        assert_eq!(input.counters().copied, (128 << 10) - 1024);
    }

    #[test]
    fn a_value_that_arrived_whole_is_kept_in_the_read_buffer() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 8 << 10, 1 << 20);
        let cmd = set("k", &[9u8; 5000]);
        let seen = feed(&mut input, &[&cmd]);
        assert!(seen[0].1);
        assert_eq!(input.counters().copied, 0);
    }

    /// Regression: `SET` of 4 KiB values, one per read, kept every 16 KiB read buffer alive
    /// for a 4 KiB value (4x the memory; the pool kept mapping regions, and `ferry bench
    /// redis` saw SET 4 KiB at P=1 run at half redis-server's rate with a p99 of 18 ms).
    #[test]
    fn a_value_small_for_its_read_buffer_is_copied_not_kept() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 16 << 10, 1 << 20);
        let cmd = set("k", &[9u8; 4096]);
        let seen = feed(&mut input, &[&cmd]);
        assert!(!seen[0].1, "a 4 KiB value would pin a 16 KiB buffer");
    }

    /// Regression: a malformed line of a multibulk request that arrived in pieces was refused
    /// only once the parser's lower bound of the request's length had arrived (here 6,000
    /// bytes: never, for a client waiting for its answer). Redis refuses it as soon as the
    /// line is there, and so does the parse that goes on from where it stopped.
    #[test]
    fn a_malformed_line_arriving_in_pieces_is_refused_as_it_arrives() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 256, 1 << 20);
        let mut read = |chunk: &[u8]| {
            let target = input.read_target().unwrap();
            target[..chunk.len()].copy_from_slice(chunk);
            input.filled(chunk.len());
            input.commands(true, |_, _| Next::Go(true))
        };
        // 1,000 elements announced: at least 6,000 bytes to come.
        read(b"*1000\r\n").unwrap();
        read(b"$3\r\nGET\r\n").unwrap();
        match read(b"?\r\n") {
            Err(InputError::Protocol(e)) => {
                assert_eq!(e.what, ProtocolError::EXPECTED_DOLLAR);
                assert_eq!(e.offset, 16);
            }
            other => panic!("a malformed element line not refused: {other:?}"),
        }
    }

    /// Regression (the `resp_input` fuzz target): a request that carries no command (here an
    /// inline line of spaces) whose last bytes ended a read left `need` at its length, so a
    /// shorter command after it waited for bytes that never came. Redis runs the `PING`.
    #[test]
    fn a_skipped_request_leaves_no_need_for_the_next_command() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 256, 1 << 20);
        let blank = [b' '; 20];
        let seen = feed(&mut input, &[&blank, b"\r\n", b"PING\r\n"]);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, vec![b"PING".to_vec()]);
        assert_eq!(input.pending(), 0);
    }

    /// Feeds `bytes` as reads as large as the targets, none completing a command.
    fn trickle(input: &mut Input, mut bytes: &[u8]) -> Result<(), InputError> {
        while !bytes.is_empty() {
            let target = input.read_target()?;
            let n = target.len().min(bytes.len());
            target[..n].copy_from_slice(&bytes[..n]);
            input.filled(n);
            bytes = &bytes[n..];
            input.commands(true, |_, _| panic!("incomplete"))?;
        }
        Ok(())
    }

    /// Regression (the release hostile run): a request of `$` and a large length got a buffer
    /// of that length at the next read, and the pool grew (mapping and zeroing regions, 44 %
    /// of the loop's samples under random garbage) for bytes that never came. Now a buffer
    /// grows with the bytes that arrive: a peer that announces a bulk of `proto-max-bulk-len`
    /// and sends 10 bytes of it holds one read buffer.
    #[test]
    fn an_announced_length_buys_no_memory_before_its_bytes() {
        let config = crate::Config::default();
        let pool = Pool::new(ferry_buf::PoolConfig {
            region_size: config.region_size,
            max_bytes: 4 * config.region_size,
            huge_pages: false,
            mlock: false,
            ..ferry_buf::PoolConfig::default()
        })
        .expect("a pool");
        let limits = ParseLimits {
            max_bulk_len: config.proto_max_bulk_len,
            ..LIMITS
        };
        let budget = FrameBudget::default();
        let mut input =
            Input::new(&pool, limits, config.read_buf, config.query_buffer_limit).with_budget(budget.clone());
        let announced = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", limits.max_bulk_len);
        for part in [announced.as_bytes(), &[1u8; 10]] {
            trickle(&mut input, part).unwrap();
        }
        // The next read's target, where the announced length used to be reserved.
        input.read_target().unwrap();
        assert_eq!(pool.stats().bytes_outstanding(), config.read_buf);
        assert_eq!(budget.in_use(), 0, "a read buffer is not reserved");
    }

    /// Regression (the hostile suite): 50 peers announcing `proto-max-bulk-len` held 400 MiB
    /// of the pool. Buffers larger than a read buffer are reserved from the budget: the one
    /// that would pass it fails, and a whole command gives its back.
    #[test]
    fn buffers_larger_than_a_read_buffer_are_reserved_from_the_budget() {
        let pool = pool();
        let budget = FrameBudget::new(150_000);
        let cmd = set("k", &[1u8; 100_000]);
        let mut first = Input::new(&pool, LIMITS, 1024, 1 << 20).with_budget(budget.clone());
        trickle(&mut first, &cmd[..70_000]).expect("within the budget");
        assert!(budget.in_use() >= 100_000, "the command's buffer is reserved");
        let mut second = Input::new(&pool, LIMITS, 1024, 1 << 20).with_budget(budget.clone());
        assert!(matches!(
            trickle(&mut second, &cmd[..70_000]),
            Err(InputError::Budget { .. })
        ));
        // The first command completes: its reservation goes back.
        let seen = feed(&mut first, &[&cmd[70_000..]]);
        assert_eq!(seen[0].0[2], vec![1u8; 100_000]);
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn a_command_beyond_the_query_limit_is_refused() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 1024, 50_000);
        let cmd = set("k", &[1u8; 100_000]);
        let target = input.read_target().unwrap();
        let n = target.len();
        target.copy_from_slice(&cmd[..n]);
        input.filled(n);
        input.commands(true, |_, _| panic!("incomplete")).unwrap();
        assert!(matches!(
            input.read_target(),
            Err(InputError::QueryBufferLimit { .. })
        ));
    }

    #[test]
    fn commands_before_a_protocol_error_run_and_the_error_names_its_offset() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 1024, 1 << 20);
        let bytes = b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n";
        let target = input.read_target().unwrap();
        target[..bytes.len()].copy_from_slice(bytes);
        input.filled(bytes.len());
        let mut ran = 0;
        let err = input
            .commands(true, |_, _| {
                ran += 1;
                Next::Go(true)
            })
            .unwrap_err();
        assert_eq!(ran, 2);
        let InputError::Protocol(e) = err else {
            panic!("{err}")
        };
        assert!(
            e.offset >= 20,
            "offset {} is in the stream, past the two commands",
            e.offset
        );
    }

    /// Review finding: after `QUIT` the rest of a read was still parsed, and a malformed
    /// request after it still got an error reply.
    #[test]
    fn stopping_drops_the_rest_of_the_input() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 1024, 1 << 20);
        let bytes = b"QUIT\r\n*x\r\nPING\r\n";
        let target = input.read_target().unwrap();
        target[..bytes.len()].copy_from_slice(bytes);
        input.filled(bytes.len());
        let mut ran = 0;
        input
            .commands(true, |_, _| {
                ran += 1;
                Next::Stop
            })
            .unwrap();
        assert_eq!(ran, 1);
        assert_eq!(input.pending(), 0);
    }

    #[test]
    fn pool_buffers_go_back_when_the_input_is_dropped() {
        let pool = pool();
        let mut input = Input::new(&pool, LIMITS, 1024, 1 << 20);
        let cmd = set("k", &[3u8; 3000]);
        feed(&mut input, &[&cmd[..1000]]);
        assert!(pool.stats().buffers_outstanding() > 0);
        input.clear();
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }
}
