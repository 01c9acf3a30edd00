//! The blocking client: one connection, waiting on the thread that calls: one unary call at a
//! time, and streams ([`BlockingStream`]) beside it. For many calls in flight use the [`EventLoop`](crate::EventLoop) (continuations) or
//! [`tokio`](crate::tokio) (`async fn`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_transport::{Meta, Payload, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Message, MessageDesc, Outgoing};

use crate::blocking_stream::BlockingStream;
use crate::conn::{Conn, ConnConfig, Frame, frame_alone};
use crate::id::IdMap;
use crate::metadata::Metadata;
use crate::session::{Client, ClientConfig, ClientEvent, Outcome};
use crate::status::{Code, Status, unsent_request};
use crate::{Addr, CallId};

/// Client settings (blocking and tokio channels).
#[derive(Debug, Clone)]
pub struct ChannelConfig {
    /// How the connection is set up.
    pub conn: ConnConfig,
    /// The pool of TCP connections (send staging, receive buffers, values sent by reference).
    pub pool: PoolConfig,
    /// The request window.
    pub client: ClientConfig,
    /// Limits responses are validated with.
    pub limits: Limits,
    /// Each call's deadline, from its start (`None`: none).
    pub timeout: Option<Duration>,
}

impl Default for ChannelConfig {
    fn default() -> ChannelConfig {
        ChannelConfig {
            conn: ConnConfig::default(),
            pool: PoolConfig {
                max_bytes: 256 << 20,
                ..PoolConfig::default()
            },
            client: ClientConfig::default(),
            limits: Limits::default(),
            timeout: None,
        }
    }
}

/// What one call sends besides its request (blocking and tokio channels: `call_with`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// The call's deadline, from its start; `None`: the channel's (`set_timeout`, or
    /// [`ChannelConfig::timeout`]).
    pub timeout: Option<Duration>,
    /// Metadata sent before the request (gRPC's headers), in one frame; none if empty. The
    /// handler reads it with `Call::metadata`.
    pub metadata: Metadata,
}

/// A response: the frame as received, read in place by [`view`](Self::view), with the
/// headers the server sent before it and the trailers it sent with it.
pub struct Response<M> {
    frame: Frame,
    limits: Limits,
    headers: Metadata,
    trailers: Metadata,
    _message: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for Response<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("meta", &self.frame.meta())
            .finish_non_exhaustive()
    }
}

impl<M> Response<M> {
    pub(crate) fn new(frame: Frame, limits: Limits, headers: Metadata, trailers: Metadata) -> Response<M> {
        Response {
            frame,
            limits,
            headers,
            trailers,
            _message: PhantomData,
        }
    }

    /// The frame as received (its raw bytes, for raw methods; or read it against a run-time
    /// descriptor with `frame().view(desc, limits)`).
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// The headers the server sent before the response (gRPC's initial metadata; empty if
    /// none).
    pub fn headers(&self) -> &Metadata {
        &self.headers
    }

    /// The trailers the server sent with the response (empty if none).
    pub fn trailers(&self) -> &Metadata {
        &self.trailers
    }

    /// The limits the channel reads responses with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// What a stream's responses are read as: the `M` of [`Channel::open`]. Every Ferry message
/// type is one (generated code opens streams with the method's response type); [`Raw`] is the
/// one of a raw method. The channel copies a message it keeps for a stream whose reader does
/// not take it out of the server's shared memory (see [`BlockingStream`]), re-encoding a Ferry
/// message with this descriptor.
pub trait ResponseType {
    /// The response's descriptor; `None` for raw frames.
    fn desc() -> Option<&'static MessageDesc<'static>>;
}

impl<M: Message<'static>> ResponseType for M {
    fn desc() -> Option<&'static MessageDesc<'static>> {
        Some(<M as Message<'static>>::desc())
    }
}

/// The response type of a raw method's stream (`Channel::open::<Raw>`): its messages are read
/// as the bytes of their frames ([`Response::frame`]). A Ferry message that comes on such a
/// stream has no descriptor to be copied with, and stays in the server's memory until taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raw {}

impl ResponseType for Raw {
    fn desc() -> Option<&'static MessageDesc<'static>> {
        None
    }
}

impl<M: Message<'static>> Response<M> {
    /// Validates the response and reads it in place (`INTERNAL` if it does not decode).
    pub fn view(&self) -> Result<M::View<'_>, Status> {
        let view = self
            .frame
            .view(M::desc(), &self.limits)
            .map_err(|e| crate::status::bad_response(&e))?;
        Ok(M::view_of(view).expect("validated against M::desc()"))
    }
}

pub(crate) struct Inner {
    pub(crate) conn: Option<Conn>,
    pub(crate) core: Client,
    timeout: Option<Duration>,
    /// What arrived for the open streams, by call id.
    pub(crate) streams: IdMap<CallId, Inbox>,
    /// The unary call being waited for, and its answer once it came.
    waiting: Option<(CallId, Option<Answer>)>,
    /// What a stream's shared-memory messages are copied with while their reader does not
    /// take them (the channel's context and limits).
    ctx: Context,
    limits: Limits,
    /// Such messages copied so far ([`Channel::held_copies`]).
    held_copies: u64,
}

/// A unary call's answer: the response frame with its headers and trailers, or the status.
type Answer = Result<(Frame, Metadata, Metadata), Status>;

/// What arrived for one open stream and has not been taken yet: at most a window of messages
/// (over shared memory, copies of those that came while the stream's reader was not waiting
/// for them: see [`BlockingStream`]).
#[derive(Default)]
pub(crate) struct Inbox {
    /// The server's headers, once they came (or a message or the end came first: empty).
    pub(crate) headers: Option<Metadata>,
    pub(crate) messages: VecDeque<Frame>,
    /// The response type (to copy a shared-memory message: [`Frame::detach`]).
    pub(crate) desc: Option<&'static MessageDesc<'static>>,
    /// How the stream ended: its trailers (OK) or the status.
    pub(crate) end: Option<Result<Metadata, Status>>,
}

impl Inner {
    /// Starts a call (an open when `streaming`): the deadline frame, the metadata frame, then
    /// the request `send` sends, flushed. A request the transport refuses alone fails the call
    /// here (and the server, told its deadline or metadata already, is told to forget it).
    pub(crate) fn start(
        &mut self,
        method: u16,
        options: &CallOptions,
        streaming: bool,
        send: impl FnOnce(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Result<CallId, Status> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(closed());
        };
        let timeout = options.timeout.or(self.timeout);
        let start = match streaming {
            true => self.core.open(method, timeout, Instant::now(), ())?,
            false => self.core.start(method, timeout, Instant::now(), ())?,
        };
        let mut control_queued = false;
        let sent = (|| {
            if let Some((meta, budget)) = start.deadline {
                conn.send_payload(meta, Payload::Bytes(&budget))?;
                control_queued = true;
            }
            if let Some((meta, payload)) = start.metadata_frame(&options.metadata) {
                conn.send_payload(meta, Payload::Bytes(&payload))?;
                control_queued = true;
            }
            send(conn, start.request)?;
            conn.flush()
        })();
        match sent {
            Ok(()) => {
                if streaming {
                    self.streams.insert(start.id, Inbox::default());
                }
                Ok(start.id)
            }
            Err(e) if frame_alone(&e) => {
                if let Some((cancel, ())) = self.core.cancel(start.id)
                    && control_queued
                {
                    let sent = conn
                        .send_payload(cancel, Payload::Bytes(&[]))
                        .and_then(|()| conn.flush());
                    if let Err(lost) = sent {
                        return Err(self.lost(&lost));
                    }
                }
                Err(unsent_request(&e))
            }
            Err(e) => Err(self.lost(&e)),
        }
    }

    /// Reads frames, handing each to the call it belongs to, until `until` holds: what came is
    /// kept per call (a stream's messages in its inbox, bounded by its window; over shared
    /// memory copied out unless `reader` is the stream's, waiting to take it), and calls whose
    /// deadline passes end. `Err` once the connection is lost (every call then ended with the
    /// status).
    pub(crate) fn wait(
        &mut self,
        reader: Option<CallId>,
        until: impl Fn(&Inner) -> bool,
    ) -> Result<(), Status> {
        loop {
            if until(self) {
                return Ok(());
            }
            if self.conn.is_none() {
                return Err(closed());
            }
            let now = Instant::now();
            let next = self.core.next_deadline();
            if next.is_some_and(|d| d <= now) {
                for (outcome, cancel) in self.core.expire(now) {
                    if let Some(conn) = self.conn.as_mut() {
                        let _ = conn.send_payload(cancel, Payload::Bytes(&[]));
                    }
                    self.ended(outcome, None);
                }
                continue;
            }
            let conn = self.conn.as_mut().expect("checked");
            // Without a deadline the transport's own wait serves (shared memory spins, then
            // sleeps on its doorbell); with one, the wait is bounded.
            let got = match next {
                None => conn.flush().and_then(|()| conn.recv()).map(Some),
                Some(_) => conn.flush().and_then(|()| conn.try_recv()),
            };
            match got {
                Ok(Some(frame)) => self.route(frame, reader)?,
                Ok(None) => {
                    let left = next.map(|d| d.saturating_duration_since(now));
                    if let Err(e) = conn.wait_readable(left) {
                        return Err(self.lost(&e));
                    }
                }
                Err(e) => return Err(self.lost(&e)),
            }
        }
    }

    /// One frame from the server, handed to its call: a stream's message is copied out of the
    /// server's shared memory unless the stream is `reader`'s (its `recv` waits for it).
    fn route(&mut self, mut frame: Frame, reader: Option<CallId>) -> Result<(), Status> {
        let meta = frame.meta();
        let raw = if crate::wire::carries_message(meta.flags) {
            None
        } else {
            frame.bytes()
        };
        match self.core.on_frame(meta, raw, frame.window_len()) {
            Ok(None) | Ok(Some(ClientEvent::Window { .. })) => {}
            Ok(Some(ClientEvent::Ended(outcome))) => self.ended(outcome, Some(frame)),
            Ok(Some(ClientEvent::Aborted(outcome, cancel))) => {
                if let Some(conn) = self.conn.as_mut() {
                    let _ = conn.send_payload(cancel, Payload::Bytes(&[]));
                }
                self.ended(outcome, None);
            }
            Ok(Some(ClientEvent::Headers { id, metadata })) => {
                if let Some(inbox) = self.streams.get_mut(&id) {
                    inbox.headers = Some(metadata);
                }
            }
            Ok(Some(ClientEvent::Message { id })) => {
                if let Some(inbox) = self.streams.get_mut(&id) {
                    inbox.headers.get_or_insert_default();
                    if reader != Some(id) && frame.detach(inbox.desc, &self.ctx, &self.limits) {
                        self.held_copies += 1;
                    }
                    inbox.messages.push_back(frame);
                }
            }
            Err(e) => {
                let e = TransportError::Config(format!("RPC protocol: {e}"));
                return Err(self.lost(&e));
            }
        }
        Ok(())
    }

    /// A call ended: a stream's end goes to its inbox, a unary call's answer (`frame`, for a
    /// response) to the caller waiting for it.
    fn ended(&mut self, outcome: Outcome, frame: Option<Frame>) {
        let id = outcome.id();
        if let Some(inbox) = self.streams.get_mut(&id) {
            inbox.headers.get_or_insert_default();
            inbox.end = Some(match outcome {
                Outcome::Finished { trailers, .. } => Ok(trailers),
                Outcome::Failed { status, .. } => Err(status),
                Outcome::Response { .. } => Err(Status::new(Code::Internal, "a unary answer on a stream")),
            });
            return;
        }
        let Some((waiting, answer)) = &mut self.waiting else {
            return;
        };
        if *waiting != id {
            return;
        }
        *answer = Some(match (outcome, frame) {
            (
                Outcome::Response {
                    metadata, trailers, ..
                },
                Some(frame),
            ) => Ok((frame, metadata, trailers)),
            (Outcome::Failed { status, .. }, _) => Err(status),
            _ => Err(Status::new(Code::Internal, "a stream's end on a unary call")),
        });
    }

    /// The connection failed: it is dropped, and every call ends with `UNAVAILABLE`.
    pub(crate) fn lost(&mut self, e: &TransportError) -> Status {
        let status = Status::new(Code::Unavailable, format!("connection lost: {e}"));
        self.conn = None;
        for outcome in self.core.lost() {
            let outcome = match outcome {
                Outcome::Failed {
                    id, method, headers, ..
                } => Outcome::Failed {
                    id,
                    method,
                    status: status.clone(),
                    headers,
                    value: (),
                },
                other => other,
            };
            self.ended(outcome, None);
        }
        status
    }
}

/// A blocking client: each call sends its request and waits for the answer; a stream
/// ([`open`](Self::open)) sends and receives on the caller's thread. Calls and streams may be
/// mixed: whatever a wait reads for another stream is kept for it. `!Send` (a shared-memory
/// connection's frames belong to its thread).
pub struct Channel {
    addr: Addr,
    config: ChannelConfig,
    pool: Pool,
    ctx: Context,
    pub(crate) inner: RefCell<Inner>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// Connects to `tcp://host:port` or `shm:///path` with the default settings.
    pub fn connect(addr: &str) -> Result<Channel, Status> {
        Channel::connect_with(addr, ChannelConfig::default())
    }

    /// Connects with `config`. Fails with `INVALID_ARGUMENT` for an address that does not
    /// parse and `UNAVAILABLE` if the server cannot be reached.
    pub fn connect_with(addr: &str, config: ChannelConfig) -> Result<Channel, Status> {
        let addr: Addr = addr
            .parse()
            .map_err(|e| Status::new(Code::InvalidArgument, format!("{e}")))?;
        let pool = config
            .conn
            .loop_pool(&config.pool)
            .map_err(|e| Status::new(Code::ResourceExhausted, format!("{e}")))?;
        let conn = Conn::connect(&addr, &pool, &config.conn).map_err(|e| unreachable_server(&addr, &e))?;
        let ctx = config.conn.context(&conn, &pool);
        Ok(Channel {
            inner: RefCell::new(Inner {
                conn: Some(conn),
                core: Client::new(config.client.clone()),
                timeout: config.timeout,
                streams: IdMap::default(),
                waiting: None,
                ctx: ctx.clone(),
                limits: config.limits,
                held_copies: 0,
            }),
            addr,
            config,
            pool,
            ctx,
        })
    }

    /// The context to build requests with: values in its pool travel by reference (over
    /// shared memory, the connection's own pool, which the server maps).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The limits responses are validated with.
    pub(crate) fn limits(&self) -> Limits {
        self.config.limits
    }

    /// Sets each call's deadline, from its start (the default of
    /// [`CallOptions::timeout`]).
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        self.inner.borrow_mut().timeout = timeout;
    }

    /// Whether the connection has failed (calls then fail with `UNAVAILABLE` until
    /// [`reconnect`](Self::reconnect)).
    pub fn is_closed(&self) -> bool {
        self.inner.borrow().conn.is_none()
    }

    /// Dials the server again. Over shared memory the new connection has a new pool: build
    /// requests with the new [`context`](Self::context).
    pub fn reconnect(&mut self) -> Result<(), Status> {
        let conn = Conn::connect(&self.addr, &self.pool, &self.config.conn)
            .map_err(|e| unreachable_server(&self.addr, &e))?;
        self.ctx = self.config.conn.context(&conn, &self.pool);
        let inner = self.inner.get_mut();
        inner.ctx = self.ctx.clone();
        inner.conn = Some(conn);
        inner.core = Client::new(self.config.client.clone());
        inner.streams.clear();
        Ok(())
    }

    /// Stream messages copied out of the server's shared memory so far: those that came while
    /// their stream's reader was not waiting for them (see [`BlockingStream`]). Zero over TCP.
    pub fn held_copies(&self) -> u64 {
        self.inner.borrow().held_copies
    }

    /// Calls `method` with a Ferry message and waits for the response: `M` is the response
    /// type [`Response::view`] reads (`()` to read the frame some other way).
    pub fn call<M>(&self, method: u16, request: &(impl Outgoing + ?Sized)) -> Result<Response<M>, Status> {
        self.round_trip(method, &NO_OPTIONS, |conn, meta| conn.send(meta, request))
    }

    /// [`call`](Self::call) with `options`: the call's own timeout and metadata.
    pub fn call_with<M>(
        &self,
        method: u16,
        request: &(impl Outgoing + ?Sized),
        options: &CallOptions,
    ) -> Result<Response<M>, Status> {
        self.round_trip(method, options, |conn, meta| conn.send(meta, request))
    }

    /// Calls a raw method with `payload` and waits for the response frame.
    pub fn call_payload(&self, method: u16, payload: Payload<'_>) -> Result<Response<()>, Status> {
        self.round_trip(method, &NO_OPTIONS, |conn, meta| conn.send_payload(meta, payload))
    }

    /// [`call_payload`](Self::call_payload) with `options`.
    pub fn call_payload_with(
        &self,
        method: u16,
        payload: Payload<'_>,
        options: &CallOptions,
    ) -> Result<Response<()>, Status> {
        self.round_trip(method, options, |conn, meta| conn.send_payload(meta, payload))
    }

    /// Opens a stream to `method` (client-, server- or bidirectional streaming) with `options`
    /// (its timeout covers the whole stream): send with [`BlockingStream::send`], half-close
    /// with [`end`](BlockingStream::end), receive with [`recv`](BlockingStream::recv) (or
    /// iterate); `M` is the response type (a Ferry message type, or [`Raw`]). Dropping it
    /// before its end cancels it. Streams count against the request window
    /// (`RESOURCE_EXHAUSTED` past it).
    pub fn open<M: ResponseType>(
        &self,
        method: u16,
        options: &CallOptions,
    ) -> Result<BlockingStream<'_, M>, Status> {
        let mut inner = self.inner.borrow_mut();
        let id = inner.start(method, options, true, |conn, meta| {
            conn.send_payload(meta, Payload::Bytes(&[]))
        })?;
        if let Some(inbox) = inner.streams.get_mut(&id) {
            inbox.desc = M::desc();
        }
        drop(inner);
        Ok(BlockingStream::new(self, id))
    }

    fn round_trip<M>(
        &self,
        method: u16,
        options: &CallOptions,
        send: impl FnOnce(&mut Conn, Meta) -> Result<(), TransportError>,
    ) -> Result<Response<M>, Status> {
        let mut inner = self.inner.borrow_mut();
        let id = inner.start(method, options, false, send)?;
        inner.waiting = Some((id, None));
        let waited = inner.wait(None, |i| i.waiting.as_ref().is_some_and(|(_, a)| a.is_some()));
        let answer = inner.waiting.take().and_then(|(_, a)| a);
        match answer {
            Some(Ok((frame, headers, trailers))) => {
                Ok(Response::new(frame, self.config.limits, headers, trailers))
            }
            Some(Err(status)) => Err(status),
            None => Err(waited.err().unwrap_or_else(closed)),
        }
    }
}

fn closed() -> Status {
    Status::new(Code::Unavailable, "the connection is closed (reconnect)")
}

/// What `call` and `call_payload` use: the channel's timeout, no metadata.
pub(crate) static NO_OPTIONS: CallOptions = CallOptions {
    timeout: None,
    metadata: Metadata::new(),
};

pub(crate) fn unreachable_server(addr: &Addr, e: &TransportError) -> Status {
    Status::new(Code::Unavailable, format!("connecting to {addr}: {e}"))
}
