//! The tokio driver: `async fn` handlers ([`AsyncService`], served by [`AsyncServer`]) and an
//! `async` client ([`AsyncChannel`]) over the same sans-IO core as the event loop.
//!
//! Thread-per-core, like the event loop: everything here is `!Send` and runs on one thread,
//! inside a [`tokio::task::LocalSet`] (or a current-thread runtime with `spawn_local`). A
//! shared-memory frame is `!Send` (its release updates the connection's single-threaded
//! acknowledgement state), and a session never leaves the thread that accepted it.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry_transport::{Payload, Received};
use ferry_wire::{Context, Limits, Message, Outgoing};

use crate::channel::{ChannelConfig, Response};
use crate::event_loop::LoopConfig;
use crate::service::{Encoded, MethodInfo, invalid_request};
use crate::status::{Code, Status};
use crate::{Addr, CallId, Frame, ServerError, ServicesError};

/// A boxed, `!Send` future: what [`AsyncService::call`] returns.
pub type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// A service served by [`AsyncServer`]: the code `ferry-build` generates for each `service`
/// implements it (`AsyncEchoServer::new(my_impl)`, wrapping the user's `AsyncEcho`).
pub trait AsyncService: 'static {
    /// The methods (their `mode` is ignored: every handler is a task on the server's thread).
    fn methods(&self) -> Vec<MethodInfo>;

    /// Handles one call: the future answers with a serialized response or fails with a status.
    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>>;
}

/// What an async handler knows about its call.
#[derive(Debug, Clone)]
pub struct AsyncCall {
    pub(crate) method: u16,
    pub(crate) id: CallId,
    pub(crate) deadline: Option<Instant>,
    pub(crate) ctx: Context,
}

impl AsyncCall {
    /// The method id.
    pub fn method(&self) -> u16 {
        self.method
    }

    /// The call's id within its session.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// When the client stops waiting, on this side's clock (the handler's task is dropped
    /// then, as it is when the client cancels).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The context to build the response with (values in its pool go by reference).
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }
}

/// A request as an async handler owns it: the frame where it arrived, read in place.
pub struct AsyncRequest<M> {
    pub(crate) frame: Frame,
    pub(crate) limits: Limits,
    pub(crate) _message: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for AsyncRequest<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncRequest")
            .field("meta", &self.frame.meta())
            .finish_non_exhaustive()
    }
}

impl<M> AsyncRequest<M> {
    /// The same request, read as an `N` (what generated code does with the method's type).
    pub fn typed<N>(self) -> AsyncRequest<N> {
        AsyncRequest {
            frame: self.frame,
            limits: self.limits,
            _message: PhantomData,
        }
    }

    /// The frame as received.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// The payload as contiguous bytes, where the transport has it so (raw payloads; every
    /// frame over TCP).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.frame.bytes()
    }
}

impl<M: Message<'static>> AsyncRequest<M> {
    /// Validates the request and reads it in place (`INVALID_ARGUMENT`, naming the field and
    /// offset, if it does not decode).
    pub fn view(&self) -> Result<M::View<'_>, Status> {
        let view = self
            .frame
            .view(M::desc(), &self.limits)
            .map_err(|e| invalid_request(&e))?;
        Ok(M::view_of(view).expect("validated against M::desc()"))
    }
}

/// The async services of a server, by method id.
#[derive(Clone, Default)]
pub struct AsyncServices {
    pub(crate) methods: HashMap<u16, (Rc<dyn AsyncService>, MethodInfo)>,
}

impl std::fmt::Debug for AsyncServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut paths: Vec<&str> = self.methods.values().map(|(_, i)| i.path).collect();
        paths.sort_unstable();
        f.debug_struct("AsyncServices").field("methods", &paths).finish()
    }
}

impl AsyncServices {
    /// No services yet.
    pub fn new() -> AsyncServices {
        AsyncServices::default()
    }

    /// Adds a service; fails if one of its methods has the id of a method already added.
    #[allow(clippy::should_implement_trait)] // renamed with the tokio driver
    pub fn add(mut self, service: impl AsyncService) -> Result<AsyncServices, ServicesError> {
        let service: Rc<dyn AsyncService> = Rc::new(service);
        for info in service.methods() {
            if let Some((_, other)) = self.methods.get(&info.id) {
                return Err(ServicesError::DuplicateMethod {
                    path: info.path,
                    other: other.path,
                    id: info.id,
                });
            }
            self.methods.insert(info.id, (Rc::clone(&service), info));
        }
        Ok(self)
    }
}

/// An async client: many calls in flight on one connection, each an `async fn` call. `!Send`.
pub struct AsyncChannel {
    _todo: (),
}

impl std::fmt::Debug for AsyncChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncChannel").finish_non_exhaustive()
    }
}

impl AsyncChannel {
    /// Connects to `tcp://host:port` or `shm:///path` with the default settings.
    pub async fn connect(addr: &str) -> Result<AsyncChannel, Status> {
        AsyncChannel::connect_with(addr, ChannelConfig::default()).await
    }

    /// Connects with `config`.
    pub async fn connect_with(addr: &str, config: ChannelConfig) -> Result<AsyncChannel, Status> {
        let _ = (addr, config);
        unimplemented!("the tokio driver is being written")
    }

    /// The context to build requests with (values in its pool travel by reference).
    pub fn context(&self) -> &Context {
        unimplemented!("the tokio driver is being written")
    }

    /// Sets each call's deadline, from its start.
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        let _ = timeout;
        unimplemented!("the tokio driver is being written")
    }

    /// Calls `method` with a Ferry message; resolves with the response. Dropping the future
    /// cancels the call (the server is told).
    pub async fn call<M: Message<'static>>(
        &self,
        method: u16,
        request: &(impl Outgoing + ?Sized),
    ) -> Result<Response<M>, Status> {
        let _ = (method, request.layout());
        unimplemented!("the tokio driver is being written")
    }

    /// Calls a raw method with `payload`.
    pub async fn call_payload(&self, method: u16, payload: Payload<'_>) -> Result<Response<()>, Status> {
        let _ = (method, payload);
        unimplemented!("the tokio driver is being written")
    }
}

/// A server of [`AsyncServices`] on the current thread's `LocalSet`.
#[derive(Debug)]
pub struct AsyncServer {
    addrs: Vec<Addr>,
}

impl AsyncServer {
    /// Binds every address (`tcp://127.0.0.1:0` picks a port: see [`addrs`](Self::addrs)).
    pub fn bind(
        services: AsyncServices,
        addrs: &[&str],
        config: LoopConfig,
    ) -> Result<AsyncServer, ServerError> {
        let _ = (services, addrs, config, Code::Ok);
        unimplemented!("the tokio driver is being written")
    }

    /// The addresses it listens on.
    pub fn addrs(&self) -> &[Addr] {
        &self.addrs
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets calls in progress finish
    /// for at most `drain`, and closes every session. Call inside a `LocalSet`.
    pub async fn run(self, shutdown: impl Future<Output = ()>, drain: Duration) -> Result<(), ServerError> {
        let _ = (shutdown, drain);
        unimplemented!("the tokio driver is being written")
    }
}
