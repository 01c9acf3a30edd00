//! The background worker pool: threads that run background handlers off the event loops and
//! post the serialized answer back to the loop that owns the session.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use ferry_buf::SharedBuf;
use ferry_transport::{Meta, Received};
use ferry_wire::{Context, DecodeError, Limits, MessageDesc, View};

use crate::dispatch::run_handler;
use crate::metadata::Metadata;
use crate::service::{Call, Encoded, Incoming, MethodInfo, ResponseMetadata, Service, Sink};
use crate::status::{Code, Status, invalid_request};
use crate::sys::Waker;
use crate::{CallId, Frame};

/// A request frame that can cross to a worker thread: a TCP frame as it arrived (a refcounted
/// pool buffer: no copy), or the contiguous copy of a shared-memory frame (its memory is the
/// peer's and its release is single-threaded).
#[derive(Debug)]
pub(crate) enum SendFrame {
    Tcp(ferry_net::Frame),
    Copied { meta: Meta, buf: SharedBuf },
}

impl Received for SendFrame {
    fn meta(&self) -> Meta {
        match self {
            SendFrame::Tcp(f) => f.meta(),
            SendFrame::Copied { meta, .. } => *meta,
        }
    }

    fn bytes(&self) -> Option<&[u8]> {
        match self {
            SendFrame::Tcp(f) => Some(f.payload()),
            SendFrame::Copied { buf, .. } => Some(buf),
        }
    }

    fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &Limits) -> Result<View<'a>, DecodeError> {
        match self {
            SendFrame::Tcp(f) => f.view(desc, limits),
            SendFrame::Copied { buf, .. } => View::decode_shared(buf, desc, limits),
        }
    }
}

impl SendFrame {
    /// The frame as it is (TCP) or copied into `ctx`'s pool (shared memory; `desc` re-encodes
    /// a Ferry message contiguously). Fails with the status the call gets.
    pub(crate) fn from_frame(
        frame: Frame,
        desc: Option<&'static MessageDesc<'static>>,
        ctx: &Context,
        limits: &Limits,
    ) -> Result<SendFrame, Status> {
        match frame {
            Frame::Tcp(f) => Ok(SendFrame::Tcp(f)),
            // A pool buffer already: taken as it is, not copied.
            Frame::Dgram(f) => Ok(SendFrame::Copied {
                meta: f.meta(),
                buf: f.payload().clone(),
            }),
            Frame::Shm(f) => {
                let meta = f.meta();
                let copy = |bytes: &[u8]| -> Result<SharedBuf, Status> {
                    let pool = ctx.pool().ok_or_else(|| Status::new(Code::Internal, "no pool"))?;
                    pool.copy_from(bytes).map_err(|e| {
                        Status::new(Code::ResourceExhausted, format!("copying the request: {e}"))
                    })
                };
                let buf = match (f.bytes(), desc) {
                    (Some(bytes), _) => copy(bytes)?,
                    (None, Some(desc)) => {
                        let view = f.view(desc, limits).map_err(|e| invalid_request(&e))?;
                        let msg = ferry_wire::DynamicMessage::from_view(&view, Context::copy_only())
                            .map_err(|e| invalid_request(&e))?;
                        let bytes = ferry_wire::Outgoing::to_vec(&msg)
                            .map_err(|e| Status::new(Code::Internal, format!("copying the request: {e}")))?;
                        copy(&bytes)?
                    }
                    (None, None) => {
                        return Err(Status::new(
                            Code::InvalidArgument,
                            "a raw method got a Ferry message",
                        ));
                    }
                };
                Ok(SendFrame::Copied { meta, buf })
            }
        }
    }
}

/// One background call, handed to a worker.
pub(crate) struct Job {
    pub(crate) service: Arc<dyn Service>,
    pub(crate) info: MethodInfo,
    pub(crate) id: CallId,
    pub(crate) deadline: Option<Instant>,
    /// The request metadata.
    pub(crate) metadata: Metadata,
    pub(crate) frame: SendFrame,
    pub(crate) ctx: Context,
    pub(crate) limits: Limits,
    pub(crate) cancelled: Arc<AtomicBool>,
    /// Where the answer goes: the owning loop's queue, its waker, and the session.
    pub(crate) reply_to: mpsc::Sender<Done>,
    pub(crate) waker: Arc<Waker>,
    pub(crate) session: (u32, u32),
    pub(crate) started: Instant,
    /// The client's certificate identity (TLS with client certificates).
    pub(crate) peer: Option<Arc<ferry_net::PeerIdentity>>,
}

/// A background call's outcome, for its loop to send.
pub(crate) struct Done {
    pub(crate) session: (u32, u32),
    pub(crate) id: CallId,
    pub(crate) method: u16,
    pub(crate) started: Instant,
    pub(crate) result: Result<Encoded, Status>,
    /// The response metadata the handler set.
    pub(crate) metadata: ResponseMetadata,
}

/// The pool of worker threads, shared by a server's loops.
#[derive(Debug)]
pub(crate) struct Workers {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    pub(crate) fn new(n: usize) -> std::io::Result<Workers> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let rx = Arc::clone(&rx);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("ferry-rpc-worker-{i}"))
                    .spawn(move || {
                        loop {
                            // One worker at a time waits on the queue; the lock is released
                            // before the job runs.
                            let job = match rx.lock() {
                                Ok(rx) => rx.recv(),
                                Err(_) => return,
                            };
                            match job {
                                Ok(job) => run(job),
                                Err(_) => return,
                            }
                        }
                    })?,
            );
        }
        Ok(Workers {
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
        })
    }

    /// Queues a job; `Err` gives it back if the pool has stopped.
    pub(crate) fn submit(&self, job: Job) -> Result<(), Box<Job>> {
        match self.tx.lock().ok().and_then(|g| g.clone()) {
            Some(tx) => tx.send(job).map_err(|e| Box::new(e.0)),
            None => Err(Box::new(job)),
        }
    }

    /// Stops taking jobs and joins the threads once they finish what is queued.
    pub(crate) fn stop(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let threads = self
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Runs one job on this worker and posts its outcome.
fn run(job: Job) {
    let Job {
        service,
        info,
        id,
        deadline,
        metadata,
        frame,
        ctx,
        limits,
        cancelled,
        reply_to,
        waker,
        session,
        started,
        peer,
    } = job;
    let call = Call::new(info.id, id, deadline, &ctx, Some(&cancelled), metadata, peer);
    let result = if cancelled.load(std::sync::atomic::Ordering::Relaxed) {
        Err(Status::new(Code::Cancelled, "cancelled before it ran"))
    } else {
        handle(&*service, &info, &call, &frame, &limits)
    };
    let metadata = call.take_response_metadata();
    drop(call);
    drop(frame);
    let done = Done {
        session,
        id,
        method: info.id,
        started,
        result,
        metadata,
    };
    if reply_to.send(done).is_ok() {
        waker.wake();
    }
}

/// Runs the handler (see [`run_handler`]) and serializes its answer (the response metadata
/// the handler set stays in `call`).
pub(crate) fn handle(
    service: &dyn Service,
    info: &MethodInfo,
    call: &Call<'_>,
    frame: &SendFrame,
    limits: &Limits,
) -> Result<Encoded, Status> {
    let shared = match frame {
        SendFrame::Tcp(f) => Some(f.payload()),
        SendFrame::Copied { buf, .. } => Some(buf),
    };
    let incoming = Incoming {
        frame,
        limits,
        shared,
    };
    let mut out = None;
    run_handler(service, info, call, incoming, Sink::Encode(&mut out))?;
    out.ok_or_else(|| Status::new(Code::Internal, "the handler answered nothing"))
}
