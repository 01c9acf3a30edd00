//! What the client and the server exchange: data frames carrying a [`Record`] of one field,
//! and the `MARK` and `END` control frames, each echoed.

use ferry::Context;
use ferry::sample::{RECORD, Record};
use ferry::wire::Limits;
use ferry_buf::SharedBuf;
use ferry_net::{Meta, Payload, Received, Transport, TransportError};

use super::endpoint::Endpoint;
use crate::BoxError;

/// Frame kinds of the benchmark.
pub const DATA: u16 = 1;
pub const MARK: u16 = 2;
pub const END: u16 = 3;

/// Fill bytes of request and response values.
pub const REQUEST_FILL: u8 = 0x5a;
pub const RESPONSE_FILL: u8 = 0xa5;

/// Validates a message in place and checks its one field: length, first and last byte.
pub fn touch(frame: &impl Received, payload: usize, fill: u8) -> Result<u64, BoxError> {
    let view = frame.view(&RECORD, &Limits::default())?;
    let fields = view.bytes_list(2);
    let field = match (fields.len(), fields.get(0)) {
        (1, Some(f)) => f,
        (n, _) => return Err(format!("expected one field, got {n}").into()),
    };
    match (field.len() == payload, field.first(), field.last()) {
        (true, Some(&a), Some(&b)) if a == fill && b == fill => Ok(u64::from(a) + field.len() as u64),
        _ => Err(format!(
            "field of {} B arrived wrong (expected {payload} B of {fill:#x})",
            field.len()
        )
        .into()),
    }
}

/// Queues a record whose one field is `value`.
pub fn send_record<T: Transport>(
    conn: &mut T,
    ctx: &Context,
    id: u64,
    value: &SharedBuf,
) -> Result<(), TransportError> {
    let mut rec = Record::new(ctx);
    rec.append_field(&value[..]);
    conn.send(Meta::new(DATA, id), &rec)
}

/// Sends an empty control frame and waits for its echo.
pub fn exchange<T: Endpoint>(conn: &mut T, spin: bool, kind: u16, next_id: &mut u64) -> Result<(), BoxError> {
    let id = *next_id;
    *next_id += 1;
    conn.send_payload(Meta::new(kind, id), Payload::Bytes(&[]))?;
    let frame = conn.next(spin)?;
    if frame.meta() != Meta::new(kind, id) {
        return Err(format!(
            "expected the echo of control frame {kind}, got {:?}",
            frame.meta()
        )
        .into());
    }
    Ok(())
}

/// Fails unless `frame` is the response to request `id`.
pub fn check_response(frame: &impl Received, id: u64) -> Result<(), BoxError> {
    match frame.meta() == Meta::new(DATA, id) {
        true => Ok(()),
        false => Err(format!("expected the response to request {id}, got {:?}", frame.meta()).into()),
    }
}
