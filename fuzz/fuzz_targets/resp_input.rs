//! Fuzz target `resp_input`: a client's request bytes through ferry-redis's `Input` (the
//! buffers a connection reads into, and the commands parsed out of them), cut into reads of
//! any size, as `ferry redis`'s loop feeds it.
//!
//! The first byte chooses the read buffer's size and the size of the reads; the rest is the
//! stream. Nothing may panic; the commands, and the protocol error that ends them if one does,
//! must be the same as when the stream arrives in one read (a malformed line is refused once
//! it has arrived, however the request was cut); and a buffer must never be larger than the pool's class for twice the bytes that
//! arrived (at least a read buffer): a length the peer announces buys no memory before its
//! bytes come.
#![no_main]

use std::sync::OnceLock;

use ferry_buf::{Pool, PoolConfig};
use ferry_net::FrameBudget;
use ferry_redis::input::{Input, InputError, Next};
use ferry_redis::resp::ParseLimits;
use libfuzzer_sys::fuzz_target;

const LIMITS: ParseLimits = ParseLimits {
    max_bulk_len: 8 << 20,
    max_args: 1024,
    max_inline_len: 64 << 10,
};

/// What a stream came to: its commands, and the error that ended them (a protocol error's
/// reply text, or `LIMIT` for any other).
type Outcome = (Vec<Vec<Vec<u8>>>, Option<String>);

/// The end of a stream stopped by a limit (query buffer, budget, pool). Its moment depends on
/// the buffers (a command announced past the query buffer limit is refused at the next read
/// or when its bytes move to a new buffer, which reads of other sizes reach at other bytes),
/// so such an end is not compared.
const LIMIT: &str = "a limit";

/// The commands of `stream` read in reads of at most `cut` bytes, until the first error.
fn commands(pool: &Pool, read_buf: usize, cut: usize, stream: &[u8]) -> Outcome {
    let mut input = Input::new(pool, LIMITS, read_buf, 1 << 20).with_budget(FrameBudget::new(64 << 20));
    let mut seen = Vec::new();
    let mut rest = stream;
    let mut end = None;
    while !rest.is_empty() {
        let arrived = input.pending();
        let target = match input.read_target() {
            Ok(target) => target,
            Err(e) => {
                end = Some(ended(&e));
                break;
            }
        };
        let n = target.len().min(cut).min(rest.len());
        target[..n].copy_from_slice(&rest[..n]);
        let bound = read_buf.max(2 * arrived).next_power_of_two();
        assert!(
            input.capacity() <= bound,
            "a buffer of {} bytes for {arrived} bytes arrived",
            input.capacity()
        );
        input.filled(n);
        rest = &rest[n..];
        let ran = input.commands(true, |args, _| {
            seen.push(args.iter_from(0).map(<[u8]>::to_vec).collect());
            Next::Go(true)
        });
        if let Err(e) = ran {
            end = Some(ended(&e));
            break;
        }
    }
    (seen, end)
}

fn ended(e: &InputError) -> String {
    match e {
        InputError::Protocol(e) => e.to_string(),
        _ => LIMIT.to_owned(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&config, stream)) = data.split_first() else {
        return;
    };
    static POOL: OnceLock<Pool> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        Pool::new(PoolConfig {
            region_size: 1 << 20,
            max_bytes: 64 << 20,
            huge_pages: false,
            mlock: false,
            ..PoolConfig::default()
        })
        .expect("a pool")
    });
    let read_buf = [64, 256, 1024, 16 << 10][usize::from(config & 3)];
    let cut = [1, 3, 17, 100, 4096, usize::MAX][usize::from(config >> 2) % 6];
    let whole = commands(pool, 1 << 20, usize::MAX, stream);
    let cut_up = commands(pool, read_buf, cut, stream);
    let limited = |end: &Option<String>| end.as_deref() == Some(LIMIT);
    if limited(&whole.1) || limited(&cut_up.1) {
        assert_eq!(cut_up.0, whole.0, "read_buf {read_buf}, reads of {cut}");
    } else {
        assert_eq!(cut_up, whole, "read_buf {read_buf}, reads of {cut}");
    }
});
