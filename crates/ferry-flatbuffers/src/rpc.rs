//! FlatBuffers requests and responses for `ferry-rpc` methods (the default-on feature `rpc`).
//!
//! - **Server:** [`FlatService`] is a `ferry_rpc::Service` whose methods are registered by path
//!   with a handler. The handler gets the request as a [`FlatRequest`], verified and read in
//!   place as the handler's root type with [`FlatRequest::root`], and a [`FlatBufferBuilder`]
//!   taking blocks from the session's pool; it builds the response, returns its root, and the
//!   adapter finishes the message and sends its slices as the answer.
//! - **Client:** [`call`] (the blocking `Channel`) and [`call_async`] (the tokio `AsyncChannel`)
//!   send a built [`Message`] as the request and return a [`FlatResponse`], read with
//!   [`FlatResponse::root`].
//!
//! ```text
//!  client                                        server loop
//!  build Message (pool blocks)
//!  call(ch, id, &msg) ── slices: sendmsg entries ──► frame (TCP: pool buffer, read in place;
//!                        (shm: copied into block)          shm: copied out of peer memory first)
//!                                                    FlatRequest::root::<Req>()  (verifier)
//!                                                    handler builds in FlatBufferBuilder
//!  FlatResponse::root::<Resp>() ◄── slices ───────── finish; Reply::send_payload(slices)
//! ```
//!
//! Both transports work unchanged: requests and responses are raw payloads
//! ([`Message::payload`]), so over TCP every slice is a gather entry (no copy into one buffer),
//! and over shared memory the slices are copied into the block. The verifier is always on, for
//! requests and responses, with [`VerifierOptions`] (the stock defaults unless set:
//! [`FlatService::verifier_options`], [`FlatResponse::root_with_opts`]).
//!
//! # Peer memory
//!
//! A TCP frame is a pool buffer of this process and is verified and read where it arrived.
//! A shared-memory payload is the peer's memory, which the peer can still write after the
//! verifier has looked at it; the stock reader's accessors trust the verified offsets (no
//! bounds checks), so such a payload is first copied into a pool buffer of this side (the
//! session's pool on the server, the channel's on the client), and that copy is verified and
//! read. This is the one copy this module makes; a background handler's request is not
//! copied again (`ferry-rpc` has already copied a shared-memory frame into a pool buffer to
//! hand it to a worker).
//!
//! # Errors
//!
//! Every error this module makes is a [`Status`] whose message names the method and what
//! failed:
//!
//! | what | code |
//! |---|---|
//! | a request the verifier rejects as the handler's type | `INVALID_ARGUMENT` (the verifier's error and trace) |
//! | a Ferry message, not a payload, sent to a FlatBuffers method | `INVALID_ARGUMENT` (over shared memory to a background method `ferry-rpc` refuses it first, in its own words) |
//! | a method id the service does not have | `UNIMPLEMENTED` |
//! | no pool buffer for the copy out of shared memory | `RESOURCE_EXHAUSTED` |
//! | a response the verifier rejects as the caller's type | `INTERNAL` (the server is at fault; as for `ferry-rpc`'s undecodable responses) |
//!
//! A handler's own status goes to the client as it is; a handler that panics (the builder
//! panics when the pool has no block left) fails its call with `INTERNAL`, and the server
//! keeps serving.
//!
//! What it is not: a code generator (methods are registered by path and called by
//! `ferry_transport::method_id(path)`), a tokio server adapter (serve with `ferry-rpc`'s
//! `Server` or `EventLoop`; the tokio *client* is [`call_async`]), or an event-loop
//! continuation API (`EventLoop::call_payload` with [`Message::payload`] sends one; its
//! continuation reads the bytes with the stock `flatbuffers::root`, minding "Peer memory").

use std::any::type_name;
use std::fmt;

use ferry_buf::{Pool, SharedBuf};
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{Call, Channel, Code, MethodInfo, Mode, Reply, Request, Response, Service, Shape, Status};
use ferry_transport::{Payload, Received, method_id};
use stock::{Follow, Verifiable, VerifierOptions, WIPOffset};

use crate::transport::describe;
use crate::{FlatBufferBuilder, Message};

/// A handler as the service stores it: it builds the response and finishes the builder.
type Handler = dyn for<'a, 'r> Fn(&Call<'a>, FlatRequest<'r>, &mut FlatBufferBuilder<'static>) -> Result<(), Status>
    + Send
    + Sync;

struct Method {
    info: MethodInfo,
    handler: Box<Handler>,
}

/// A `ferry-rpc` service of FlatBuffers methods (see the module docs): add it to a server
/// with `Services::builder().service(flat_service)`.
///
/// ```
/// use ferry_flatbuffers::rpc::FlatService;
/// use ferry_rpc::Mode;
///
/// // Echoes a string-rooted FlatBuffer, upper-cased.
/// let service = FlatService::new().method("/demo.Text/Upper", Mode::Foreground, |_call, request, fbb| {
///     let text: &str = request.root::<&str>()?;
///     Ok(fbb.create_string(&text.to_uppercase()))
/// });
/// # let _ = service;
/// ```
pub struct FlatService {
    methods: Vec<Method>,
    verifier: VerifierOptions,
}

impl Default for FlatService {
    fn default() -> FlatService {
        FlatService::new()
    }
}

impl fmt::Debug for FlatService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<&str> = self.methods.iter().map(|m| m.info.path).collect();
        f.debug_struct("FlatService")
            .field("methods", &paths)
            .field("verifier", &self.verifier)
            .finish()
    }
}

impl FlatService {
    /// No methods yet; requests verified with the stock [`VerifierOptions`].
    pub fn new() -> FlatService {
        FlatService {
            methods: Vec::new(),
            verifier: VerifierOptions::default(),
        }
    }

    /// Adds the method `path` (`/package.Service/Method`; its id, the frame kind of its calls,
    /// is `ferry_transport::method_id(path)`), run in `mode`: `Mode::Foreground` inline on the
    /// event loop, `Mode::Background` on the server's workers (the service is shared by both,
    /// hence `Send + Sync`).
    ///
    /// `handler` reads the request with [`FlatRequest::root`], builds the response in the
    /// builder it is given (blocks from the session's pool) and returns the response's root
    /// offset; the adapter finishes the message (no file identifier, no size prefix: what
    /// `flatbuffers::root` reads) and sends its slices. A method registered twice, here or in
    /// another service of the same server, is refused by `ServicesBuilder::service`
    /// (`ServicesError::DuplicateMethod`).
    pub fn method<R, H>(mut self, path: &'static str, mode: Mode, handler: H) -> FlatService
    where
        R: 'static,
        H: for<'a, 'r> Fn(
                &Call<'a>,
                FlatRequest<'r>,
                &mut FlatBufferBuilder<'static>,
            ) -> Result<WIPOffset<R>, Status>
            + Send
            + Sync
            + 'static,
    {
        self.methods.push(Method {
            info: MethodInfo {
                path,
                id: method_id(path),
                // Raw payloads: the server does not decode them as Ferry messages.
                request: None,
                mode,
                shape: Shape::Unary,
            },
            handler: Box::new(move |call, request, fbb| {
                let root = handler(call, request, fbb)?;
                fbb.finish(root, None);
                Ok(())
            }),
        });
        self
    }

    /// The limits requests are verified with (depth, tables, apparent size; the stock
    /// defaults unless set).
    pub fn verifier_options(mut self, options: VerifierOptions) -> FlatService {
        self.verifier = options;
        self
    }
}

impl Service for FlatService {
    fn methods(&self) -> Vec<MethodInfo> {
        self.methods.iter().map(|m| m.info).collect()
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let id = call.method();
        let Some(method) = self.methods.iter().find(|m| m.info.id == id) else {
            return Err(Status::new(
                Code::Unimplemented,
                format!("no FlatBuffers method with id {id} in this service"),
            ));
        };
        let path = method.info.path;
        let pool = call.ctx().pool().ok_or_else(|| {
            Status::new(
                Code::Internal,
                format!("{path}: the session has no pool to build the response in"),
            )
        })?;
        let incoming = request.incoming();
        let copy;
        let bytes: &[u8] = match (incoming.shared(), incoming.bytes()) {
            // This process's own pool buffer (TCP; a background call's copy): read in place.
            (Some(buf), _) => buf,
            // The peer's shared memory: verify and read a private copy (see the module docs).
            (None, Some(peer)) => {
                copy = private_copy(pool, peer, || format!("the request to {path}"))?;
                &copy
            }
            (None, None) => {
                return Err(Status::new(
                    Code::InvalidArgument,
                    format!("the request to {path} is a Ferry message, not a FlatBuffers payload"),
                ));
            }
        };
        let request = FlatRequest {
            bytes,
            path,
            verifier: &self.verifier,
        };
        let mut fbb = FlatBufferBuilder::with_pool(pool);
        (method.handler)(call, request, &mut fbb)?;
        // Each slice a gather entry over TCP (referenced, not copied); copied into the block
        // over shared memory.
        reply.send_payload(Payload::Gather {
            head: &[],
            parts: fbb.finished_slices(),
        })
    }
}

/// A request as a [`FlatService`] handler gets it: contiguous bytes in this process's memory,
/// not yet verified. [`root`](Self::root) verifies them as the handler's root type.
#[derive(Clone, Copy)]
pub struct FlatRequest<'r> {
    bytes: &'r [u8],
    path: &'static str,
    verifier: &'r VerifierOptions,
}

impl fmt::Debug for FlatRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlatRequest")
            .field("method", &self.path)
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl<'r> FlatRequest<'r> {
    /// Verifies the request as a FlatBuffer whose root is a `T` (with the service's
    /// [`VerifierOptions`]) and returns the root, read in place. Fails with `INVALID_ARGUMENT`
    /// naming the method, the type and what the verifier found where.
    pub fn root<T>(&self) -> Result<T::Inner, Status>
    where
        T: Follow<'r> + Verifiable + 'r,
    {
        stock::root_with_opts::<T>(self.verifier, self.bytes).map_err(|e| {
            Status::new(
                Code::InvalidArgument,
                format!(
                    "the request to {} is not a valid `{}` FlatBuffer ({} bytes): {}",
                    self.path,
                    type_name::<T>(),
                    self.bytes.len(),
                    describe(&e)
                ),
            )
        })
    }

    /// The request's bytes, unverified.
    pub fn bytes(&self) -> &'r [u8] {
        self.bytes
    }

    /// The method called (`/package.Service/Method`).
    pub fn path(&self) -> &'static str {
        self.path
    }
}

/// Calls `method` (`ferry_transport::method_id(path)`) with `request`, sent as its slices,
/// on a blocking channel, and waits for the response; read it with [`FlatResponse::root`].
/// The call's own failures (a status from the server, a lost connection, the deadline) are
/// returned as `ferry-rpc` reports them.
pub fn call(channel: &Channel, method: u16, request: &Message) -> Result<FlatResponse, Status> {
    let response = channel.call_payload(method, request.payload())?;
    FlatResponse::new(method, &response, channel.context().pool())
}

/// [`call`] on the tokio client: resolves with the response. Dropping the future cancels the
/// call.
pub async fn call_async(
    channel: &AsyncChannel,
    method: u16,
    request: &Message,
) -> Result<FlatResponse, Status> {
    let response = channel.call_payload(method, request.payload()).await?;
    FlatResponse::new(method, &response, channel.context().pool())
}

/// A response received by [`call`] or [`call_async`]: contiguous bytes in this process's
/// memory (the frame's pool buffer over TCP; a copy out of the peer's memory over shared
/// memory), verified when read with [`root`](Self::root).
#[derive(Clone)]
pub struct FlatResponse {
    method: u16,
    buf: SharedBuf,
}

impl fmt::Debug for FlatResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlatResponse")
            .field("method", &self.method)
            .field("len", &self.buf.len())
            .finish()
    }
}

impl FlatResponse {
    fn new(method: u16, response: &Response<()>, pool: Option<&Pool>) -> Result<FlatResponse, Status> {
        let frame = response.frame();
        let buf = match (frame.shared(), Received::bytes(frame)) {
            (Some(buf), _) => buf.clone(),
            (None, Some(peer)) => {
                let pool = pool.ok_or_else(|| {
                    Status::new(
                        Code::Internal,
                        format!("the channel has no pool to copy the response to method {method} into"),
                    )
                })?;
                private_copy(pool, peer, || format!("the response to method {method}"))?
            }
            (None, None) => {
                return Err(Status::new(
                    Code::Internal,
                    format!("the response to method {method} is a Ferry message, not a FlatBuffers payload"),
                ));
            }
        };
        Ok(FlatResponse { method, buf })
    }

    /// Verifies the response as a FlatBuffer whose root is a `T` (the stock
    /// [`VerifierOptions`]) and returns the root, read in place. Fails with `INTERNAL` naming
    /// the method, the type and what the verifier found where.
    pub fn root<'a, T>(&'a self) -> Result<T::Inner, Status>
    where
        T: Follow<'a> + Verifiable + 'a,
    {
        self.root_with_opts::<T>(&VerifierOptions::default())
    }

    /// [`root`](Self::root) with `options`' limits.
    pub fn root_with_opts<'a, T>(&'a self, options: &VerifierOptions) -> Result<T::Inner, Status>
    where
        T: Follow<'a> + Verifiable + 'a,
    {
        stock::root_with_opts::<T>(options, &self.buf).map_err(|e| {
            Status::new(
                Code::Internal,
                format!(
                    "the response to method {} is not a valid `{}` FlatBuffer ({} bytes): {}",
                    self.method,
                    type_name::<T>(),
                    self.buf.len(),
                    describe(&e)
                ),
            )
        })
    }

    /// The response's bytes, unverified.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The response's bytes as the pool buffer holding them.
    pub fn into_shared(self) -> SharedBuf {
        self.buf
    }
}

/// `bytes` (in the peer's shared memory) copied into a buffer of `pool`; `what` names them.
fn private_copy(pool: &Pool, bytes: &[u8], what: impl FnOnce() -> String) -> Result<SharedBuf, Status> {
    pool.copy_from(bytes).map_err(|e| {
        Status::new(
            Code::ResourceExhausted,
            format!(
                "copying {} ({} bytes) out of shared memory: {e}",
                what(),
                bytes.len()
            ),
        )
    })
}
