//! The server side of an event loop: what a client's frame means for a served call, each
//! request dispatched by the shared policy (`dispatch.rs`: refused, run in the foreground, or
//! handed to a worker), and the answers that come back from the workers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::EventLoop;
use super::session::{Role, Session, SessionOutbox};
use super::streams::Step;
use crate::CallId;
use crate::conn::Frame;
use crate::dispatch::{refusal, run_handler, shape_refusal};
use crate::metadata::Metadata;
use crate::service::{Call, Encoded, Incoming, ResponseMetadata, Sink};
use crate::services::{Entry, Services};
use crate::session::Event;
use crate::status::{Code, Status};
use crate::workers::{Job, SendFrame};

impl EventLoop {
    /// What a frame from a server session's client means: a request to dispatch, a refusal
    /// (the session's bound), or a cancellation (a background handler is told).
    pub(super) fn on_event(&mut self, i: usize, event: Event, frame: Frame, now: Instant) {
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let Role::Server(server) = &mut s.role else { return };
        if let Event::Request {
            deadline: Some(at), ..
        }
        | Event::Open {
            deadline: Some(at), ..
        } = event
        {
            self.due.by(at);
        }
        match event {
            Event::Refused { meta, payload, .. } => {
                self.services
                    .metrics()
                    .method(meta.kind)
                    .record(Code::ResourceExhausted, Duration::ZERO);
                s.transmit(meta, Encoded::from_vec(payload));
            }
            Event::Cancelled { id } => {
                if let Some(flag) = server.background.remove(&id) {
                    flag.store(true, Ordering::Relaxed);
                }
                let why = Status::new(Code::Cancelled, "the client cancelled the stream");
                self.stream_cancelled(i, id, why);
            }
            Event::Request {
                id,
                method,
                deadline,
                metadata,
            } => self.request(i, frame, id, method, deadline, metadata, now),
            Event::Aborted { id, meta, payload } => {
                if let Some(flag) = server.background.remove(&id) {
                    flag.store(true, Ordering::Relaxed);
                }
                s.transmit(meta, Encoded::from_vec(payload));
                let why = Status::new(Code::Internal, "the client broke the stream's rules");
                self.stream_cancelled(i, id, why);
            }
            Event::Open {
                id,
                method,
                deadline,
                metadata,
            } => self.open_stream(i, id, method, deadline, metadata, now),
            Event::Message { id } => self.stream_step(i, id, Step::Message(frame)),
            Event::HalfClosed { id } => self.stream_step(i, id, Step::HalfClose),
            Event::Window { id } => self.stream_step(i, id, Step::Window),
        }
    }

    /// Dispatches a request: refused, foreground, or to a worker.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &mut self,
        i: usize,
        frame: Frame,
        id: CallId,
        method: u16,
        deadline: Option<Instant>,
        metadata: Metadata,
        now: Instant,
    ) {
        let services = &self.services;
        let metrics = services.metrics();
        let generation = self.slots[i].generation;
        let Some(s) = &mut self.slots[i].session else {
            return;
        };
        let entry = match admit(services, self.draining, method, false) {
            Ok(entry) => entry,
            Err(status) => {
                metrics.method(method).record(status.code, Duration::ZERO);
                s.end_call(id, Err(status), ResponseMetadata::default());
                return;
            }
        };
        let info = entry.info;
        let background = info.mode == crate::Mode::Background && services.0.workers.is_some();
        let _span = self
            .config
            .tracing
            .then(|| tracing::debug_span!("rpc", method = info.path, call = id.0, background).entered());
        if background {
            self.stats.background += 1;
            let shm = matches!(frame, Frame::Shm(_));
            let sendable = SendFrame::from_frame(frame, info.request, &s.ctx, &self.config.limits);
            let frame = match sendable {
                Ok(f) => f,
                Err(status) => {
                    metrics.method(method).record(status.code, Duration::ZERO);
                    s.end_call(id, Err(status), ResponseMetadata::default());
                    return;
                }
            };
            if shm {
                self.stats.background_copies += 1;
            }
            let Role::Server(server) = &mut s.role else { return };
            let cancelled = Arc::new(AtomicBool::new(false));
            server.background.insert(id, Arc::clone(&cancelled));
            let job = Job {
                service: Arc::clone(&entry.service),
                info,
                id,
                deadline,
                metadata,
                frame,
                ctx: s.ctx.clone(),
                limits: self.config.limits,
                cancelled,
                reply_to: self.done_tx.clone(),
                waker: Arc::clone(&self.waker),
                session: (i as u32, generation),
                started: now,
                peer: s.conn.peer_identity(),
            };
            metrics.in_flight().inc();
            self.outstanding += 1;
            if let Err(job) = services.0.workers.as_ref().expect("checked").submit(job) {
                // The pool stopped (shutdown): the call fails here.
                self.outstanding -= 1;
                metrics.in_flight().dec();
                let Some(s) = &mut self.slots[i].session else {
                    return;
                };
                let Role::Server(server) = &mut s.role else { return };
                server.background.remove(&job.id);
                let status = Status::new(Code::Unavailable, "the server is shutting down");
                s.end_call(id, Err(status), ResponseMetadata::default());
            }
            return;
        }
        self.stats.foreground += 1;
        metrics.in_flight().inc();
        let limits = &self.config.limits;
        let incoming = Incoming {
            frame: &frame,
            limits,
            shared: frame.shared(),
        };
        let Session {
            conn,
            ctx,
            role,
            backlog,
            dirty,
            dead,
            ..
        } = s;
        let Role::Server(server) = role else { return };
        let call = Call::new(method, id, deadline, ctx, None, metadata, conn.peer_identity());
        let mut outbox = SessionOutbox {
            conn,
            core: &mut server.core,
            backlog,
            dirty,
            dead,
            id,
            metadata: &call.response_metadata,
        };
        let outcome = run_handler(&*entry.service, &info, &call, incoming, Sink::Conn(&mut outbox));
        metrics.in_flight().dec();
        let code = match &outcome {
            Ok(()) => Code::Ok,
            Err(status) => status.code,
        };
        // Recorded at the end of the turn, with the turn's clock reading.
        self.served.push((entry.metrics, code));
        if let Err(status) = outcome {
            // What the handler set and was not sent with a response (it failed).
            let response_metadata = call.take_response_metadata();
            let Some(s) = &mut self.slots[i].session else {
                return;
            };
            s.end_call(id, Err(status), response_metadata);
        }
    }

    /// Answers from the worker pool (none to look for while no call is out with a worker).
    pub(super) fn completions(&mut self) -> bool {
        if self.outstanding == 0 {
            return false;
        }
        let mut work = false;
        while let Some(done) = self.early.take().or_else(|| self.done_rx.try_recv().ok()) {
            work = true;
            self.outstanding -= 1;
            let metrics = self.services.metrics();
            metrics.in_flight().dec();
            let code = match &done.result {
                Ok(_) => Code::Ok,
                Err(s) => s.code,
            };
            metrics.method(done.method).record(code, done.started.elapsed());
            let (index, generation) = done.session;
            if self
                .slots
                .get(index as usize)
                .is_none_or(|slot| slot.generation != generation)
            {
                continue;
            }
            self.heat(index as usize);
            let Some(s) = &mut self.slots[index as usize].session else {
                continue;
            };
            let Role::Server(server) = &mut s.role else {
                continue;
            };
            server.background.remove(&done.id);
            s.end_call(done.id, done.result, done.metadata);
        }
        work
    }
}

/// The method a call (a request, or an open when `opened`) is dispatched to, or the status it is
/// refused with: the server is draining, no service has the method, or the call's kind does not
/// fit the method's shape.
pub(super) fn admit(
    services: &Services,
    draining: bool,
    method: u16,
    opened: bool,
) -> Result<&Entry, Status> {
    let entry = services.method(method);
    // Admitted (a known method, called as its shape says) without building a refusal first.
    if let Some(entry) = entry.filter(|e| !draining && opened == e.info.shape.is_streaming()) {
        return Ok(entry);
    }
    if let Some(status) = refusal(draining, entry.is_some(), method) {
        return Err(status);
    }
    let entry = entry.expect("known");
    match shape_refusal(&entry.info, opened) {
        Some(status) => Err(status),
        None => Ok(entry),
    }
}
