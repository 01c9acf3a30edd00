//! The server of a run: answers every request with a record of the same shape from its own
//! pool and echoes the control frames, keeping the measured window's books with the harness's
//! [`Readings`] at `MARK` and `END`.

use std::hint::black_box;

use ferry::Context;
use ferry_buf::{Pool, SharedBuf};
use ferry_net::{Payload, Received as _};

use super::Spec;
use super::endpoint::{Counters, Endpoint};
use super::wire::{DATA, END, MARK, REQUEST_FILL, send_record, touch};
use crate::BoxError;
use crate::harness::window::{self, Reading, Readings, Span, count_request};

/// The server's side of a run.
pub struct ServerSide {
    /// CPU time and requests served, mark to end.
    pub span: Span,
    pub window: Counters,
    pub total: Counters,
}

/// Serves until `END`.
pub fn serve<T: Endpoint>(
    conn: &mut T,
    pool: &Pool,
    value: &SharedBuf,
    spec: &Spec,
) -> Result<ServerSide, BoxError> {
    let ctx = Context::new(pool.clone());
    let (readings, mut acc, mut mark) = (Readings::default(), 0u64, None);
    loop {
        let frame = conn.next(spec.tcp_spins())?;
        let meta = frame.meta();
        match meta.kind {
            DATA => {
                acc += touch(&frame, spec.point.payload, REQUEST_FILL)?;
                // Release the request first, so that its acknowledgement rides on the reply.
                drop(frame);
                send_record(conn, &ctx, meta.request_id, value)?;
                count_request();
            }
            MARK => {
                drop(frame);
                readings.record(window::MARK, Reading::here());
                mark = Some(conn.counters());
                conn.send_payload(meta, Payload::Bytes(&[]))?;
            }
            END => {
                drop(frame);
                readings.record(window::END, Reading::here());
                let c1 = conn.counters();
                conn.send_payload(meta, Payload::Bytes(&[]))?;
                conn.flush()?;
                black_box(acc);
                return Ok(ServerSide {
                    span: readings.take().ok_or("END before MARK")?,
                    window: c1.since(mark.ok_or("END before MARK")?),
                    total: c1,
                });
            }
            k => return Err(format!("unexpected frame kind {k}").into()),
        }
    }
}
