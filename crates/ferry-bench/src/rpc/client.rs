//! The client side of `ferry bench rpc`: one session of a client [`EventLoop`] kept busy in a
//! closed loop. `in_flight` calls are started; each call's continuation checks the response,
//! records the latency, and starts the next call, so exactly `in_flight` are outstanding
//! until the budget is spent. If the transport's send queue refuses a call
//! (`RESOURCE_EXHAUSTED`), the driver starts it again after the next turn.
//!
//! A run: connect, warm up (a tenth of the budget), the measured window between the `mark` and
//! `end` control calls ([`crate::harness::window`]), close. Every phase ends when its calls
//! have all completed; a phase in which no call completes for [`STALL`] fails the run.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry::sample::Record;
use ferry_buf::SharedBuf;
use ferry_rpc::{Addr, CallId, Code, Continuation, EventLoop, Incoming, SessionId, Status};
use ferry_transport::{Payload, method_id};

use super::Measured;
use super::plan::{Fields, Point, System};
use super::service::{self, CONTROL};
use crate::harness::closed::Phase;
use crate::harness::syscalls::thread_syscalls;
use crate::harness::window::{self, END, MARK, Readings};
use crate::harness::{Budget, thread_cpu_time};
use crate::systems::{CODECS, Codec, Input};
use crate::{BoxError, Shape};

/// A phase in which no call completes for this long fails (both clients).
pub(super) const STALL: Duration = Duration::from_secs(10);

/// Fill byte of field `i` of every request (the echo carries it back).
pub(super) fn fill(i: usize) -> u8 {
    0x5a_u8.wrapping_add(i as u8)
}

/// Checks field `i` of a response: `fields.len` bytes that begin and end with [`fill`]`(i)`.
pub(super) fn check_field(i: usize, b: &[u8], fields: Fields) -> Result<(), String> {
    let filled = |b: Option<&u8>| b.is_none_or(|&b| b == fill(i));
    if b.len() != fields.len || !filled(b.first()) || !filled(b.last()) {
        return Err(format!(
            "field {i} of the response arrived wrong: {} B (expected {} B of {:#x})",
            b.len(),
            fields.len,
            fill(i)
        ));
    }
    Ok(())
}

/// What a call sends, built anew for every call as an application would.
enum Requests {
    /// The fields' pool buffers as a raw gather payload (TCP: referenced; shared memory:
    /// copied into a block).
    Raw(Vec<SharedBuf>),
    /// A `Record` of the fields' pool buffers, built with the context: the session's
    /// (hybrid: values of 512 B or more are referenced) or the same with an infinite
    /// threshold (copy-only).
    Ferry(Context, Vec<SharedBuf>),
    /// The library's encoding of the shape, copied into the transport.
    Peer(Box<dyn Codec>, Shape),
}

impl Requests {
    fn new(lp: &EventLoop, session: SessionId, point: &Point) -> Result<Requests, BoxError> {
        let ctx = lp.context(session).ok_or("the session is gone")?;
        let pool = ctx.pool().ok_or("the session's context has no pool")?.clone();
        let Fields { count, len } = point.fields;
        let values = (0..count)
            .map(|i| pool.copy_from(&vec![fill(i); len]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match point.system {
            System::Raw => Requests::Raw(values),
            System::FerryCopy => Requests::Ferry(ctx.with_threshold(usize::MAX), values),
            System::FerryHybrid => Requests::Ferry(ctx, values),
            system => {
                let codec = service::codec(system).ok_or("no codec")?;
                let fields = (0..count).map(|i| bytes::Bytes::from(vec![fill(i); len]));
                let shape = Shape::from_parts(
                    format!("rpc-{count}x{len}"),
                    bytes::Bytes::new(),
                    fields.collect(),
                );
                Requests::Peer((CODECS[codec].new)(), shape)
            }
        })
    }

    /// Builds and starts one call to `method`.
    fn send(
        &mut self,
        lp: &mut EventLoop,
        session: SessionId,
        method: u16,
        then: Continuation,
    ) -> Result<CallId, Status> {
        match self {
            Requests::Raw(parts) => {
                lp.call_payload(session, method, Payload::Gather { head: &[], parts }, then)
            }
            Requests::Ferry(ctx, values) => {
                let mut record = Record::new(ctx);
                record.init_fields(values.len());
                for v in values.iter() {
                    record.append_field(&v[..]);
                }
                lp.call(session, method, &record, then)
            }
            Requests::Peer(codec, shape) => {
                let bytes = codec
                    .encode(shape)
                    .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
                lp.call_payload(session, method, Payload::Bytes(bytes), then)
            }
        }
    }

    /// Checks a response: no key, and `fields.count` fields of `fields.len` bytes, field `i`
    /// beginning and ending with [`fill`]`(i)`.
    fn check(&mut self, response: Incoming<'_>, fields: Fields) -> Result<(), String> {
        let (mut seen, mut key, mut bad) = (0usize, 0usize, Ok(()));
        let mut field = |b: &[u8]| {
            if bad.is_ok() {
                bad = check_field(seen, b, fields);
            }
            seen += 1;
        };
        let decoding = |e: &dyn std::fmt::Display| format!("the response does not decode: {e}");
        match self {
            Requests::Raw(_) => {
                let bytes = response.bytes().ok_or("a raw response without bytes")?;
                if bytes.len() != fields.bytes() {
                    return Err(format!(
                        "a raw response of {} B (expected {})",
                        bytes.len(),
                        fields.bytes()
                    ));
                }
                bytes.chunks(fields.len.max(1)).for_each(field);
            }
            Requests::Ferry(..) => {
                let view = response.decode::<Record<'static>>().map_err(|e| decoding(&e))?;
                key = view.key().len();
                view.fields().iter().for_each(&mut field);
            }
            Requests::Peer(codec, _) => {
                let bytes = response.bytes().ok_or("a raw response without bytes")?;
                let input = Input {
                    bytes,
                    shared: response.shared(),
                };
                // The key comes first.
                let mut first = true;
                codec
                    .read(input, &mut |b| match std::mem::take(&mut first) {
                        true => key = b.len(),
                        false => field(b),
                    })
                    .map_err(|e| decoding(&e))?;
            }
        }
        if key > 0 {
            return Err(format!("a response with a key of {key} B"));
        }
        bad?;
        if seen != fields.count {
            return Err(format!("a response of {seen} fields (expected {})", fields.count));
        }
        Ok(())
    }
}

/// What the continuations share (they all run on the client's thread).
struct Driver {
    requests: Requests,
    session: SessionId,
    method: u16,
    fields: Fields,
    in_flight: usize,
    phase: Phase,
    failed: Option<String>,
}

type Shared = Rc<RefCell<Driver>>;

/// Starts one call unless the budget is spent or `in_flight` are outstanding; returns whether
/// it did.
fn issue(lp: &mut EventLoop, d: &Shared) -> bool {
    let mut guard = d.borrow_mut();
    let drv = &mut *guard;
    if drv.failed.is_some() || drv.phase.outstanding >= drv.in_flight {
        return false;
    }
    let Some(at) = drv.phase.next_call() else {
        return false;
    };
    let next = Rc::clone(d);
    let then: Continuation = Box::new(move |lp, result| complete(lp, &next, at, result));
    match drv.requests.send(lp, drv.session, drv.method, then) {
        Ok(_) => {
            drv.phase.started();
            true
        }
        // The transport's send queue is full: started again after the next turn.
        Err(s) if s.code == Code::ResourceExhausted => false,
        Err(s) => {
            drv.failed = Some(format!("a call could not start: {s}"));
            false
        }
    }
}

/// A call's continuation: check, time, start the next.
fn complete(lp: &mut EventLoop, d: &Shared, at: Option<Instant>, result: Result<Incoming<'_>, Status>) {
    {
        let mut guard = d.borrow_mut();
        let drv = &mut *guard;
        let checked = result
            .map_err(|s| format!("a call failed: {s}"))
            .and_then(|r| drv.requests.check(r, drv.fields));
        if let Err(e) = checked {
            drv.failed.get_or_insert(e);
        }
        drv.phase.completed(at);
    }
    issue(lp, d);
}

/// Runs one phase of `budget` to its end (all its calls completed); returns its state.
fn phase(lp: &mut EventLoop, d: &Shared, budget: Budget) -> Result<Phase, BoxError> {
    let in_flight = d.borrow().in_flight;
    d.borrow_mut().phase = Phase::new(budget, in_flight);
    let (mut seen, mut since, mut turns) = (0u64, Instant::now(), 0u32);
    loop {
        while issue(lp, d) {}
        {
            let drv = d.borrow();
            if let Some(e) = &drv.failed {
                return Err(e.clone().into());
            }
            if drv.phase.done() {
                break;
            }
        }
        lp.turn();
        turns = turns.wrapping_add(1);
        if turns % 1024 == 0 {
            let completed = d.borrow().phase.completed;
            if completed != seen {
                (seen, since) = (completed, Instant::now());
            } else if since.elapsed() > STALL {
                return Err(format!("no call completed for {STALL:?}").into());
            }
        }
    }
    Ok(std::mem::replace(
        &mut d.borrow_mut().phase,
        Phase::new(Budget::Count(0), 1),
    ))
}

/// One run of `point` on a fresh session to `addr` (see the module docs). The session is
/// closed whatever happens.
pub(super) fn run(
    lp: &mut EventLoop,
    addr: &Addr,
    point: &Point,
    budget: Budget,
    readings: &Readings,
) -> Result<Measured, BoxError> {
    let session = lp.connect(addr)?;
    let result = measure(lp, session, point, budget, readings);
    lp.close(session);
    result
}

fn measure(
    lp: &mut EventLoop,
    session: SessionId,
    point: &Point,
    budget: Budget,
    readings: &Readings,
) -> Result<Measured, BoxError> {
    readings.take();
    let method = service::method(point.system)?;
    let d: Shared = Rc::new(RefCell::new(Driver {
        requests: Requests::new(lp, session, point)?,
        session,
        method,
        fields: point.fields,
        in_flight: point.in_flight.max(1),
        phase: Phase::new(Budget::Count(0), 1),
        failed: None,
    }));
    let control = method_id(CONTROL);
    phase(lp, &d, budget.warmup())?;
    window::call_and_wait(lp, session, control, MARK)?;
    let (t0, cpu0, sys0) = (Instant::now(), thread_cpu_time(), thread_syscalls());
    let measured = phase(lp, &d, budget)?;
    let (t1, cpu1, sys1) = (Instant::now(), thread_cpu_time(), thread_syscalls());
    window::call_and_wait(lp, session, control, END)?;
    let server = readings
        .take()
        .ok_or("the server did not read its counters at the control calls")?;
    let syscalls = sys1.zip(sys0).map(|(b, a)| b.saturating_sub(a));
    Measured::new(measured, t1 - t0, (cpu1.saturating_sub(cpu0), syscalls), server)
}
