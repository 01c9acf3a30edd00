//! The sending side of a run: builds a [`Record`] of pool-resident fields per message and
//! queues it as fast as it can, the measured ones between a `MARK` and an `END` frame.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry::sample::Record;
use ferry_buf::{Pool, SharedBuf};
use ferry_net::{Config, Connection, Meta, Mode, Payload, SendStats};

use super::stream::{RunSpec, SendWindow, set_congestion};
use super::{DATA, END, MARK};
use crate::BoxError;
use crate::harness::{self, Budget, cpu::thread_cpu_time};

/// What the sender measured.
pub(super) struct SenderSide {
    pub effective_mode: Mode,
    pub messages: u64,
    pub cpu: Duration,
    pub window: SendWindow,
    pub total: SendStats,
    pub congestion_error: Option<String>,
}

/// Sends data messages for `budget`; returns how many.
fn send_messages(
    conn: &mut Connection,
    ctx: &Context,
    values: &[SharedBuf],
    budget: Budget,
    first_id: u64,
) -> Result<u64, BoxError> {
    let mut sent = 0u64;
    let start = Instant::now();
    loop {
        match budget {
            Budget::Count(n) if sent >= n => break,
            Budget::Time(d) if sent % 16 == 0 && start.elapsed() >= d => break,
            _ => {}
        }
        let mut rec = Record::new(ctx);
        rec.init_fields(values.len());
        for v in values {
            rec.append_field(&v[..]);
        }
        conn.send(Meta::new(DATA, first_id + sent), &rec)?;
        sent += 1;
    }
    Ok(sent)
}

/// The warm-up, `MARK`, the measured messages, `END`, then the wait until the kernel has
/// released every zero-copy buffer; CPU and counters from the mark to the end of that wait.
pub(super) fn send(spec: &RunSpec<'_>, pool: &Pool, addr: SocketAddr) -> Result<SenderSide, BoxError> {
    spec.cpus.0.map(harness::pin_current_thread).transpose()?;
    let config = Config {
        mode: spec.mode,
        batch_frames: spec.batch_frames,
        ..Config::default()
    };
    let mut conn = Connection::connect(addr, pool, &config)?;
    let congestion_error = set_congestion(&conn, spec.congestion);
    let ctx = Context::new(pool.clone()).with_threshold(spec.threshold);
    let warm = send_messages(&mut conn, &ctx, spec.values, spec.budget.warmup(), 0)?;
    conn.send_payload(Meta::new(MARK, 0), Payload::Bytes(&[]))?;
    let (cpu0, stats0) = (thread_cpu_time(), conn.stats().send);
    let messages = send_messages(&mut conn, &ctx, spec.values, spec.budget, warm)?;
    conn.send_payload(Meta::new(END, 0), Payload::Bytes(&[]))?;
    conn.sender().wait_idle()?;
    let (cpu1, stats1) = (thread_cpu_time(), conn.stats().send);
    Ok(SenderSide {
        effective_mode: conn.mode(),
        messages,
        cpu: cpu1.saturating_sub(cpu0),
        window: SendWindow::between(&stats0, &stats1),
        total: stats1,
        congestion_error,
    })
}
