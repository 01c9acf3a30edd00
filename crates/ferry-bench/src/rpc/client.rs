//! The client side of `ferry bench rpc`: one session of a client [`EventLoop`] kept busy in a
//! closed loop. `in_flight` calls are started; each call's continuation checks the response,
//! records the latency, and starts the next call, so exactly `in_flight` are outstanding
//! until the budget is spent. If the transport's send queue refuses a call
//! (`RESOURCE_EXHAUSTED`), the driver starts it again after the next turn.
//!
//! A run: connect, warm up (a tenth of the budget), a `mark` control call (the server reads
//! its thread's CPU time), the measured window, an `end` control call, close. Every phase
//! ends when its calls have all completed; a phase in which no call completes for
//! [`STALL`] fails the run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry::Context;
use ferry::sample::Record;
use ferry_buf::SharedBuf;
use ferry_rpc::{Addr, CallId, Code, Continuation, EventLoop, Incoming, SessionId, Status};
use ferry_transport::Payload;

use super::service::{self, Readings};
use super::{Fields, Point, System};
use crate::harness::{Budget, Histogram, thread_cpu_time};
use crate::systems::{CODECS, Codec, Input};
use crate::{BoxError, Shape};

/// Calls timed when more than one is in flight: one in this many.
const TIMED_EVERY: u64 = 16;

/// A phase in which no call completes for this long fails.
pub(super) const STALL: Duration = Duration::from_secs(10);

/// Fill byte of field `i` of every request (the echo carries it back).
pub(super) fn fill(i: usize) -> u8 {
    0x5a_u8.wrapping_add(i as u8)
}

/// What one run measured over its window.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    /// Calls completed in the window.
    pub(super) calls: u64,
    /// Length of the window.
    pub(super) elapsed: Duration,
    /// Round trips in ns: every call with one in flight, every 16th with more.
    pub(super) latency: Histogram,
    /// The client thread's CPU time over the window.
    pub(super) client_cpu: Duration,
    /// The server loop thread's CPU time between the control calls.
    pub(super) server_cpu: Duration,
}

/// What a call sends, built anew for every call as an application would.
enum Requests {
    /// The fields' pool buffers as a raw gather payload (TCP: referenced; shared memory:
    /// copied into a block).
    Raw { parts: Vec<SharedBuf> },
    /// A `Record` of the fields' pool buffers, built with `ctx`: the session's context
    /// (hybrid: values of 512 B or more are referenced) or the same with an infinite
    /// threshold (copy-only).
    Ferry {
        method: u16,
        ctx: Context,
        values: Vec<SharedBuf>,
    },
    /// The library's encoding of `shape`, copied into the transport.
    Peer {
        method: u16,
        codec: Box<dyn Codec>,
        shape: Shape,
    },
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
            System::Raw => Requests::Raw { parts: values },
            System::FerryCopy => Requests::Ferry {
                method: service::COPY.1,
                ctx: ctx.with_threshold(usize::MAX),
                values,
            },
            System::FerryHybrid => Requests::Ferry {
                method: service::HYBRID.1,
                ctx,
                values,
            },
            System::Prost | System::Flatbuf | System::Capnp => {
                let name = point.system.codec_name().ok_or("no codec")?;
                let index = CODECS.iter().position(|e| e.name == name).ok_or("no codec")?;
                let shape = Shape::from_parts(
                    format!("rpc-{count}x{len}"),
                    bytes::Bytes::new(),
                    (0..count)
                        .map(|i| bytes::Bytes::from(vec![fill(i); len]))
                        .collect(),
                );
                Requests::Peer {
                    method: service::PEERS[index].1,
                    codec: (CODECS[index].new)(),
                    shape,
                }
            }
            System::Tonic | System::PingPong => return Err("not an event-loop system".into()),
        })
    }

    /// Builds and starts one call.
    fn send(&mut self, lp: &mut EventLoop, session: SessionId, then: Continuation) -> Result<CallId, Status> {
        match self {
            Requests::Raw { parts } => lp.call_payload(
                session,
                service::RAW.1,
                Payload::Gather { head: &[], parts },
                then,
            ),
            Requests::Ferry { method, ctx, values } => {
                let mut record = Record::new(ctx);
                record.init_fields(values.len());
                for v in values.iter() {
                    record.append_field(&v[..]);
                }
                lp.call(session, *method, &record, then)
            }
            Requests::Peer { method, codec, shape } => {
                let bytes = codec
                    .encode(shape)
                    .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
                lp.call_payload(session, *method, Payload::Bytes(bytes), then)
            }
        }
    }

    /// Checks a response: the number of fields, and each field's length, first and last byte.
    fn check(&mut self, response: Incoming<'_>, fields: Fields) -> Result<(), String> {
        let mut seen = 0usize;
        let mut bad = None;
        // Field `i` (`usize::MAX`: a key, which no response should have).
        let mut field = |i: usize, b: &[u8]| {
            if bad.is_some() {
                return;
            }
            if i == usize::MAX {
                bad = Some(format!("a response with a key of {} B", b.len()));
                return;
            }
            let ok = b.len() == fields.len && b.first() == Some(&fill(i)) && b.last() == Some(&fill(i));
            if !ok {
                bad = Some(format!(
                    "field {i} of the response arrived wrong: {} B (expected {} B of {:#x})",
                    b.len(),
                    fields.len,
                    fill(i)
                ));
            }
            seen += 1;
        };
        match self {
            Requests::Raw { .. } => {
                let bytes = response.bytes().ok_or("a raw response without bytes")?;
                if bytes.len() != fields.count * fields.len {
                    return Err(format!(
                        "a raw response of {} B (expected {})",
                        bytes.len(),
                        fields.count * fields.len
                    ));
                }
                for (i, b) in bytes.chunks(fields.len.max(1)).enumerate() {
                    field(i, b);
                }
            }
            Requests::Ferry { .. } => {
                let view = response
                    .decode::<Record<'static>>()
                    .map_err(|e| format!("the response does not decode: {e}"))?;
                if !view.key().is_empty() {
                    field(usize::MAX, view.key());
                }
                for (i, b) in view.fields().iter().enumerate() {
                    field(i, b);
                }
            }
            Requests::Peer { codec, .. } => {
                let input = Input {
                    bytes: response.bytes().ok_or("a raw response without bytes")?,
                    shared: response.shared(),
                };
                // The key comes first: empty, as sent.
                let mut at = 0usize;
                codec
                    .read(input, &mut |b| {
                        match at {
                            0 if b.is_empty() => {}
                            0 => field(usize::MAX, b),
                            i => field(i - 1, b),
                        }
                        at += 1;
                    })
                    .map_err(|e| format!("the response does not decode: {e}"))?;
            }
        }
        if let Some(bad) = bad {
            return Err(bad);
        }
        if seen != fields.count {
            return Err(format!("a response of {seen} fields (expected {})", fields.count));
        }
        Ok(())
    }
}

/// One phase's state.
struct Phase {
    budget: Budget,
    start: Instant,
    /// The clock reading that ended the last timed call (one in flight: the next call's start).
    last: Instant,
    issued: u64,
    completed: u64,
    outstanding: usize,
    /// The budget is spent: no more calls are started.
    stopping: bool,
    latency: Histogram,
}

impl Phase {
    fn new(budget: Budget, latency: Histogram) -> Phase {
        let now = Instant::now();
        Phase {
            budget,
            start: now,
            last: now,
            issued: 0,
            completed: 0,
            outstanding: 0,
            stopping: false,
            latency,
        }
    }
}

/// What the continuations share (they all run on the client's thread).
struct Driver {
    requests: Requests,
    session: SessionId,
    fields: Fields,
    in_flight: usize,
    phase: Phase,
    failed: Option<String>,
}

type Shared = Rc<RefCell<Driver>>;

/// Starts one call unless the budget is spent; returns whether it did.
fn issue(lp: &mut EventLoop, d: &Shared) -> bool {
    let mut guard = d.borrow_mut();
    let Driver {
        requests,
        session,
        in_flight,
        phase: p,
        failed,
        ..
    } = &mut *guard;
    if p.stopping || failed.is_some() {
        return false;
    }
    let one = *in_flight == 1;
    p.stopping = match p.budget {
        Budget::Count(n) => p.issued >= n,
        // One in flight: `last` is the clock reading that ended the previous call.
        Budget::Time(t) if one => p.last - p.start >= t,
        Budget::Time(t) => p.issued % TIMED_EVERY == 0 && p.start.elapsed() >= t,
    };
    if p.stopping {
        return false;
    }
    let at = if one {
        Some(p.last)
    } else {
        (p.issued % TIMED_EVERY == 0).then(Instant::now)
    };
    let next = Rc::clone(d);
    let then: Continuation = Box::new(move |lp, result| complete(lp, &next, at, result));
    match requests.send(lp, *session, then) {
        Ok(_) => {
            p.issued += 1;
            p.outstanding += 1;
            true
        }
        // The transport's send queue is full: started again after the next turn.
        Err(s) if s.code == Code::ResourceExhausted => false,
        Err(s) => {
            *failed = Some(format!("a call could not start: {s}"));
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
        let p = &mut drv.phase;
        p.outstanding -= 1;
        p.completed += 1;
        if let Some(at) = at {
            let now = Instant::now();
            p.last = now;
            p.latency.record_duration(now - at);
        }
    }
    issue(lp, d);
}

/// Starts calls until `in_flight` are outstanding (or the budget is spent).
fn top_up(lp: &mut EventLoop, d: &Shared) {
    loop {
        let (outstanding, in_flight) = {
            let drv = d.borrow();
            (drv.phase.outstanding, drv.in_flight)
        };
        if outstanding >= in_flight || !issue(lp, d) {
            return;
        }
    }
}

/// Runs one phase of `budget` to its end (all its calls completed); returns its state.
fn phase(lp: &mut EventLoop, d: &Shared, budget: Budget, latency: Histogram) -> Result<Phase, BoxError> {
    d.borrow_mut().phase = Phase::new(budget, latency);
    top_up(lp, d);
    let (mut seen, mut since, mut turns) = (0u64, Instant::now(), 0u32);
    loop {
        {
            let drv = d.borrow();
            if let Some(e) = &drv.failed {
                return Err(e.clone().into());
            }
            let p = &drv.phase;
            if p.stopping && p.outstanding == 0 {
                break;
            }
        }
        lp.turn();
        top_up(lp, d);
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
    let p = std::mem::replace(
        &mut d.borrow_mut().phase,
        Phase::new(Budget::Count(0), Histogram::default()),
    );
    Ok(p)
}

/// A control call (`mark` or `end`), waited for.
fn control(lp: &mut EventLoop, session: SessionId, what: &'static [u8]) -> Result<(), BoxError> {
    let done: Rc<Cell<Option<Result<(), String>>>> = Rc::default();
    let answer = Rc::clone(&done);
    lp.call_payload(
        session,
        service::CONTROL.1,
        Payload::Bytes(what),
        Box::new(move |_, r| {
            let r = match r {
                Ok(r) if r.bytes() == Some(what) => Ok(()),
                Ok(_) => Err("a control call's answer is not its echo".to_owned()),
                Err(s) => Err(format!("a control call failed: {s}")),
            };
            answer.set(Some(r));
        }),
    )?;
    let until = Instant::now() + STALL;
    loop {
        if let Some(r) = done.take() {
            return Ok(r?);
        }
        if Instant::now() > until {
            return Err(format!("a control call took more than {STALL:?}").into());
        }
        lp.turn();
    }
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
    let d: Shared = Rc::new(RefCell::new(Driver {
        requests: Requests::new(lp, session, point)?,
        session,
        fields: point.fields,
        in_flight: point.in_flight.max(1),
        phase: Phase::new(Budget::Count(0), Histogram::default()),
        failed: None,
    }));
    phase(lp, &d, budget.warmup(), Histogram::default())?;
    control(lp, session, service::MARK)?;
    let (t0, cpu0) = (Instant::now(), thread_cpu_time());
    let window = phase(lp, &d, budget, Histogram::default())?;
    let (t1, cpu1) = (Instant::now(), thread_cpu_time());
    control(lp, session, service::END)?;
    let (Some((s0, n0)), Some((s1, n1))) = readings.take() else {
        return Err("the server did not read its CPU time at the control calls".into());
    };
    if n1 - n0 != window.completed {
        return Err(format!(
            "the server echoed {} calls in the window, the client completed {}",
            n1 - n0,
            window.completed
        )
        .into());
    }
    Ok(Measured {
        calls: window.completed,
        elapsed: t1 - t0,
        latency: window.latency,
        client_cpu: cpu1.saturating_sub(cpu0),
        server_cpu: s1.saturating_sub(s0),
    })
}
