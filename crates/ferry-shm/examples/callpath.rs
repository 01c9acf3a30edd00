//! The one-in-flight call path of `ferry bench shm` (64 B, spin), one step per function, for
//! callgrind's per-step instruction counts (`docs/benchmarks/shm.md`):
//!
//! ```sh
//! CARGO_PROFILE_RELEASE_DEBUG=true cargo build --release -p ferry-shm --example callpath
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cp.out target/release/examples/callpath 64 20000 [BATCH]
//! callgrind_annotate --inclusive=yes /tmp/cp.out | grep step_
//! ```
//!
//! `BATCH` (default 1) messages are queued and published together each way, as one block (at
//! most 16, the default `block_messages`): the pipelined case, publishing shared by the batch.
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

/// One side: `rounds` times, `batch` messages queued and published together (one block), then
/// the peer's `batch` answers taken.
fn side(
    mut conn: ShmConnection,
    pool: &Pool,
    payload: usize,
    rounds: u64,
    batch: u64,
    turn: &Barrier,
    client: bool,
) {
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
    let (payload, rounds, batch) = match &args[1..] {
        [p, r] => (p.parse().expect("payload"), r.parse().expect("rounds"), 1),
        [p, r, b] => (
            p.parse().expect("payload"),
            r.parse().expect("rounds"),
            b.parse().expect("batch"),
        ),
        _ => (64, 20_000, 1),
    };
    let path = std::env::temp_dir().join(format!("ferry-shm-callpath-{}", std::process::id()));
    let listener = ShmListener::bind(&path).expect("bind");
    let turn = Arc::new(Barrier::new(2));
    let server = {
        let turn = Arc::clone(&turn);
        thread::spawn(move || {
            let pool = pool();
            let conn = listener.accept(&pool, &config()).expect("accept");
            side(conn, &pool, payload, rounds, batch, &turn, false);
        })
    };
    let pool = pool();
    let conn = ShmConnection::connect(&path, &pool, &config()).expect("connect");
    side(conn, &pool, payload, rounds, batch, &turn, true);
    server.join().expect("server");
    let _ = std::fs::remove_file(&path);
}
