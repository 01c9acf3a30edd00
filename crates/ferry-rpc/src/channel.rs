//! The blocking client: one connection, one call at a time, waiting on the thread that
//! calls. For many calls in flight use the [`EventLoop`](crate::EventLoop) (continuations) or
//! [`tokio`](crate::tokio) (`async fn`).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_transport::{Payload, Received, Transport, TransportError};
use ferry_wire::{Context, Limits, Message, Outgoing};

use crate::Addr;
use crate::conn::{Conn, ConnConfig, Frame, frame_alone};
use crate::metadata::Metadata;
use crate::session::{Client, ClientConfig, ClientEvent, Outcome};
use crate::status::{Code, Status, unsent_request};

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

struct Inner {
    conn: Option<Conn>,
    core: Client,
    timeout: Option<Duration>,
}

/// A blocking client: each call sends its request and waits for the answer. `!Send` (a
/// shared-memory connection's frames belong to its thread).
pub struct Channel {
    addr: Addr,
    config: ChannelConfig,
    pool: Pool,
    ctx: Context,
    inner: RefCell<Inner>,
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
        inner.conn = Some(conn);
        inner.core = Client::new(self.config.client.clone());
        Ok(())
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

    fn round_trip<M>(
        &self,
        method: u16,
        options: &CallOptions,
        send: impl FnOnce(&mut Conn, ferry_transport::Meta) -> Result<(), TransportError>,
    ) -> Result<Response<M>, Status> {
        let mut guard = self.inner.borrow_mut();
        let inner = &mut *guard;
        let Some(conn) = inner.conn.as_mut() else {
            return Err(Status::new(
                Code::Unavailable,
                "the connection is closed (reconnect)",
            ));
        };
        let timeout = options.timeout.or(inner.timeout);
        let start = inner.core.start(method, timeout, Instant::now())?;
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
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
            Ok(()) => {}
            // About this request alone (too long, unencodable, no pool buffer): the transport
            // queued nothing of it and stays usable; the call ends here, and the server, told
            // its deadline or metadata already, is told to forget it.
            Err(e) if frame_alone(&e) => {
                if let Some(cancel) = inner.core.cancel(start.id)
                    && control_queued
                {
                    let sent = conn
                        .send_payload(cancel, Payload::Bytes(&[]))
                        .and_then(|()| conn.flush());
                    if let Err(lost) = sent {
                        return Err(Self::lost(inner, &lost));
                    }
                }
                return Err(unsent_request(&e));
            }
            Err(e) => return Err(Self::lost(inner, &e)),
        }
        loop {
            let conn = inner.conn.as_mut().expect("open");
            // Without a deadline the transport's own wait serves (shared memory spins, then
            // sleeps on its doorbell); with one, the wait is bounded.
            let next = if deadline.is_none() {
                conn.recv().map(Some)
            } else {
                conn.try_recv()
            };
            let frame = match next {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    if left == Some(Duration::ZERO) {
                        for (_, cancel) in inner.core.expire(Instant::now()) {
                            let _ = conn.send_payload(cancel, Payload::Bytes(&[]));
                        }
                        let _ = conn.flush();
                        return Err(Status::new(Code::DeadlineExceeded, "deadline exceeded (client)"));
                    }
                    if let Err(e) = conn.wait_readable(left) {
                        return Err(Self::lost(inner, &e));
                    }
                    continue;
                }
                Err(e) => return Err(Self::lost(inner, &e)),
            };
            let meta = frame.meta();
            let raw = if crate::wire::carries_message(meta.flags) {
                None
            } else {
                frame.bytes()
            };
            match inner.core.on_frame(meta, raw, frame.window_len()) {
                Ok(Some(ClientEvent::Ended(Outcome::Response {
                    id,
                    metadata,
                    trailers,
                    ..
                }))) if id == start.id => {
                    return Ok(Response::new(frame, self.config.limits, metadata, trailers));
                }
                Ok(Some(ClientEvent::Ended(Outcome::Failed { id, status, .. }))) if id == start.id => {
                    return Err(status);
                }
                Ok(Some(ClientEvent::Aborted(Outcome::Failed { id, status, .. }, cancel)))
                    if id == start.id =>
                {
                    let _ = conn.send_payload(cancel, Payload::Bytes(&[]));
                    return Err(status);
                }
                // The late answer of an earlier call that expired here.
                Ok(_) => {}
                Err(e) => {
                    let e = TransportError::Config(format!("RPC protocol: {e}"));
                    return Err(Self::lost(inner, &e));
                }
            }
        }
    }

    /// The connection failed: it is dropped, and the call fails with `UNAVAILABLE`.
    fn lost(inner: &mut Inner, e: &TransportError) -> Status {
        inner.conn = None;
        inner.core.lost();
        Status::new(Code::Unavailable, format!("connection lost: {e}"))
    }
}

/// What `call` and `call_payload` use: the channel's timeout, no metadata.
pub(crate) static NO_OPTIONS: CallOptions = CallOptions {
    timeout: None,
    metadata: Metadata::new(),
};

pub(crate) fn unreachable_server(addr: &Addr, e: &TransportError) -> Status {
    Status::new(Code::Unavailable, format!("connecting to {addr}: {e}"))
}
