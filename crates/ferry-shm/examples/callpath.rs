//! The one-in-flight call path of `ferry bench shm` (64 B, spin), one step per function, for
//! callgrind's per-step instruction counts (`docs/benchmarks/shm.md`):
//!
//! ```sh
//! CARGO_PROFILE_RELEASE_DEBUG=true cargo build --release -p ferry-shm --example callpath
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cp.out target/release/examples/callpath 64 20000 [BATCH [EMPTY]]
//! callgrind_annotate --inclusive=yes /tmp/cp.out | grep step_
//! ```
//!
//! `BATCH` (default 1) messages are queued and published together each way, as one block (at
//! most 16, the default `block_messages`): the pipelined case, publishing shared by the batch.
//! `EMPTY` (default 0) calls of `poll_recv` that find nothing follow each publication (the peer
//! is held at the barrier): what a busy-polling side pays while it waits (`step_poll_empty`).
//!
//! The two sides run on two threads, as in the benchmark, but in lock step: a side receives
//! only after the other has published (a barrier between them), so every `poll_recv` finds the
//! message and no step counts empty polls. Each `step_*` is its own function: its inclusive
//! count divided by the rounds (twice the rounds for the steps both sides take) is the step's
//! instructions per call.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use ferry_buf::{Pool, SharedBuf};
use ferry_shm::{ShmConfig, ShmConnection, ShmFrame, ShmListener};
use ferry_transport::Meta;
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Context, Limits};

fn config() -> ShmConfig {
    ShmConfig {
        spin: Duration::MAX,
        never_sleep: true,
        ..ShmConfig::default()
    }
}

fn pool() -> Pool {
    Pool::new(ferry_buf::PoolConfig {
        shared: true,
        max_bytes: 64 << 20,
        region_size: 2 << 20,
        mlock: false,
        ..ferry_buf::PoolConfig::default()
    })
    .expect("a shared pool")
}

/// Builds a record with `value` as its one field (the application's work).
#[inline(never)]
fn step_build<'a>(ctx: &'a Context, value: &'a SharedBuf) -> Record<'a> {
    let mut rec = Record::new(ctx);
    rec.append_field(&value[..]);
    rec
}

/// Queues it in the current block.
#[inline(never)]
fn step_queue(conn: &mut ShmConnection, id: u64, rec: &Record<'_>) {
    conn.send(Meta::new(1, id), rec).expect("send");
}

/// Publishes the block.
#[inline(never)]
fn step_publish(conn: &mut ShmConnection) {
    conn.flush().expect("flush");
}

/// Takes the message the peer has published.
#[inline(never)]
fn step_receive(conn: &mut ShmConnection) -> ShmFrame {
    conn.poll_recv()
        .expect("poll_recv")
        .expect("published before the barrier")
}

/// Polls and finds nothing (the peer has not published).
#[inline(never)]
fn step_poll_empty(conn: &mut ShmConnection) {
    assert!(conn.poll_recv().expect("poll_recv").is_none());
}

/// Validates it in place, checks its field, drops the frame.
#[inline(never)]
fn step_validate(frame: ShmFrame, id: u64, payload: usize) -> u64 {
    assert_eq!(frame.meta().request_id, id);
    let view = frame.view(&RECORD, &Limits::default()).expect("valid");
    let fields = view.bytes_list(2);
    let field = fields.get(0).expect("one field");
    assert_eq!(field.len(), payload);
    u64::from(field[0]) + u64::from(field[payload - 1])
}

/// The command line: payload bytes, round trips, messages per block, empty polls per wait.
#[derive(Clone, Copy)]
struct Shape {
    payload: usize,
    rounds: u64,
    batch: u64,
    empty: u64,
}

/// One side: `rounds` times, `batch` messages queued and published together (one block), then
/// the peer's `batch` answers taken.
fn side(mut conn: ShmConnection, pool: &Pool, shape: Shape, turn: &Barrier, client: bool) {
    let Shape {
        payload,
        rounds,
        batch,
        empty,
    } = shape;
    let ctx = Context::new(pool.clone());
    let value = pool.copy_from(&vec![0x5a; payload]).expect("value");
    let mut acc = 0;
    let take = |conn: &mut ShmConnection, round: u64, acc: &mut u64| {
        for id in round * batch..(round + 1) * batch {
            *acc += step_validate(step_receive(conn), id, payload);
        }
    };
    for round in 0..rounds {
        if !client {
            turn.wait();
            take(&mut conn, round, &mut acc);
        }
        for id in round * batch..(round + 1) * batch {
            let rec = step_build(&ctx, &value);
            step_queue(&mut conn, id, &rec);
        }
        step_publish(&mut conn);
        for _ in 0..empty {
            step_poll_empty(&mut conn);
        }
        turn.wait();
        if client {
            turn.wait();
            take(&mut conn, round, &mut acc);
        }
    }
    black_box(acc);
    conn.wait_idle().expect("wait_idle");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: u64| args.get(i).map_or(default, |a| a.parse().expect("a count"));
    let shape = Shape {
        payload: arg(1, 64) as usize,
        rounds: arg(2, 20_000),
        batch: arg(3, 1),
        empty: arg(4, 0),
    };
    let path = std::env::temp_dir().join(format!("ferry-shm-callpath-{}", std::process::id()));
    let listener = ShmListener::bind(&path).expect("bind");
    let turn = Arc::new(Barrier::new(2));
    let server = {
        let turn = Arc::clone(&turn);
        thread::spawn(move || {
            let pool = pool();
            let conn = listener.accept(&pool, &config()).expect("accept");
            side(conn, &pool, shape, &turn, false);
        })
    };
    let pool = pool();
    let conn = ShmConnection::connect(&path, &pool, &config()).expect("connect");
    side(conn, &pool, shape, &turn, true);
    server.join().expect("server");
    let _ = std::fs::remove_file(&path);
}
