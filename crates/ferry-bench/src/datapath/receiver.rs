//! The receiving side of a run: validates every frame in place and touches each field, and
//! keeps the measured window's books with the harness's [`Readings`] at `MARK` and `END`.

use std::hint::black_box;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use ferry::Message as _;
use ferry::sample::Record;
use ferry_buf::{Pool, SharedBuf};
use ferry_net::{Config, Connection, RecvCounters};

use super::stream::{RunSpec, fill_byte, set_congestion};
use super::{DATA, END, MARK};
use crate::BoxError;
use crate::harness;
use crate::harness::window::{self, Reading, Readings, Span, count_request};

/// What the receiver measured over its window.
pub(super) struct ReceiverSide {
    /// CPU time and data messages, mark to end.
    pub span: Span,
    pub elapsed: Duration,
    /// Receive counters, end less mark.
    pub counters: RecvCounters,
}

/// Validates a frame in place and reads every field's length and first byte.
fn touch(payload: &SharedBuf, fields: usize) -> Result<u64, BoxError> {
    let view = Record::decode_shared(payload)?;
    let list = view.fields();
    if list.len() != fields {
        return Err(format!("received {} fields, sent {fields}", list.len()).into());
    }
    let mut acc = 0u64;
    for (i, f) in list.iter().enumerate() {
        match f.first() {
            Some(&b) if b == fill_byte(i) => acc += f.len() as u64 + u64::from(b),
            _ => return Err(format!("field {i} arrived with wrong contents").into()),
        }
    }
    Ok(acc)
}

/// `b - a`, counter by counter.
fn since(a: RecvCounters, b: RecvCounters) -> RecvCounters {
    RecvCounters {
        frames: b.frames - a.frames,
        bytes: b.bytes - a.bytes,
        reads: b.reads - a.reads,
        empty_reads: b.empty_reads - a.empty_reads,
        straddled: b.straddled - a.straddled,
        split_headers: b.split_headers - a.split_headers,
        copied: b.copied - a.copied,
        predicted: b.predicted - a.predicted,
        mispredicted: b.mispredicted - a.mispredicted,
    }
}

/// Accepts the sender's connection and reads until `END`.
pub(super) fn receive(
    spec: &RunSpec<'_>,
    pool: &Pool,
    listener: TcpListener,
) -> Result<ReceiverSide, BoxError> {
    spec.cpus.1.map(harness::pin_current_thread).transpose()?;
    let stream = harness::accept(&listener)?;
    let conn = Connection::new(stream, pool, &Config::default())?;
    // An error here is reported by the sender side, which sets the same option.
    let _ = set_congestion(&conn, spec.congestion);
    let (_tx, mut rx) = conn.split();
    let (fields, readings) = (spec.values.len(), Readings::default());
    let (mut acc, mut mark) = (0u64, None);
    loop {
        let frame = rx.recv()?;
        match frame.meta().kind {
            DATA => {
                acc += touch(frame.payload(), fields)?;
                count_request();
            }
            MARK if mark.is_none() => {
                readings.record(window::MARK, Reading::here());
                mark = Some((Instant::now(), rx.stats()));
            }
            END => break,
            k => return Err(format!("unexpected frame kind {k}").into()),
        }
    }
    readings.record(window::END, Reading::here());
    let (t1, c1) = (Instant::now(), rx.stats());
    black_box(acc);
    let (t0, c0) = mark.ok_or("END before MARK")?;
    Ok(ReceiverSide {
        span: readings.take().ok_or("no measured window")?,
        elapsed: t1 - t0,
        counters: since(c0, c1),
    })
}
