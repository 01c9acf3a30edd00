//! A tonic-style face on the synchronous server trait, for teams moving from tonic: handlers
//! take a [`Request`] and return a [`Response`], and [`Status`] has tonic's constructors
//! (`Status::not_found(..)`). `ferry-build` generates the trait per service when asked
//! (`RpcGenerator::tonic_style`): `TonicEcho`, served as `EchoServer::new(TonicStyle(my_impl))`.
//!
//! ```text
//! tonic:                                            Ferry, tonic-style:
//! async fn say(&self, request: Request<SayRequest>)  fn say<'a>(&self, request: Request<'_, 'a, SayRequestView<'a>>)
//!     -> Result<Response<SayResponse>, Status>           -> Result<Response<SayResponse<'a>>, Status>
//! let name = &request.get_ref().name;                let name = request.get_ref().name()?;
//! request.metadata().get("x-tenant")                 request.metadata().get("x-tenant")
//! Ok(Response::new(SayResponse { .. }))             let mut r = SayResponse::new(request.ctx()); ..; Ok(Response::new(r))
//! ```
//!
//! What changes: the request is a view read in place (no owned message), the response is built
//! with the call's context (so its large values can be sent by reference), and handlers are
//! synchronous (they run on the event loop, or on the worker pool with the method's
//! `..._MODE = Mode::Background`). The views are the same as the synchronous trait's: nothing
//! is decoded twice.

use std::time::Instant;

use ferry_wire::Context;

use crate::Metadata;
use crate::service::Call;
use crate::status::{Code, Status};

/// Serves an implementation of a generated tonic-style trait through the synchronous trait:
/// `EchoServer::new(TonicStyle(my_impl))`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TonicStyle<T>(pub T);

/// A request as a tonic-style handler sees it: the message (a view) and the call's metadata,
/// deadline and context.
#[derive(Debug)]
pub struct Request<'c, 'a, V> {
    call: &'c Call<'a>,
    message: V,
}

impl<'c, 'a, V> Request<'c, 'a, V> {
    /// The request `message` of `call` (what the generated adapter builds).
    pub fn new(call: &'c Call<'a>, message: V) -> Self {
        Request { call, message }
    }

    /// The message.
    pub fn get_ref(&self) -> &V {
        &self.message
    }

    /// The message, by value (a view is `Copy`: this costs nothing).
    pub fn into_inner(self) -> V {
        self.message
    }

    /// The metadata the client sent (gRPC's headers).
    pub fn metadata(&self) -> &Metadata {
        self.call.metadata()
    }

    /// When the client stops waiting.
    pub fn deadline(&self) -> Option<Instant> {
        self.call.deadline()
    }

    /// The context to build the response with.
    pub fn ctx(&self) -> &'a Context {
        self.call.ctx()
    }

    /// The call itself (method id, call id, cancellation).
    pub fn call(&self) -> &'c Call<'a> {
        self.call
    }
}

/// A tonic-style handler's answer: the response message and the metadata to send with it.
#[derive(Debug)]
pub struct Response<M> {
    message: M,
    metadata: Metadata,
}

impl<M> Response<M> {
    /// A response with no metadata.
    pub fn new(message: M) -> Self {
        Response {
            message,
            metadata: Metadata::new(),
        }
    }

    /// The message.
    pub fn get_ref(&self) -> &M {
        &self.message
    }

    /// The message, to change it.
    pub fn get_mut(&mut self) -> &mut M {
        &mut self.message
    }

    /// The response metadata (tonic's: the headers).
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The response metadata, to add to it.
    pub fn metadata_mut(&mut self) -> &mut Metadata {
        &mut self.metadata
    }

    /// The message, dropping the metadata.
    pub fn into_inner(self) -> M {
        self.message
    }
}

/// What the generated adapter returns to the synchronous trait: the message, with the
/// response's metadata set on the call.
pub fn respond<M>(call: &Call<'_>, response: Result<Response<M>, Status>) -> Result<M, Status> {
    let response = response?;
    if !response.metadata.is_empty() {
        call.set_headers(response.metadata);
    }
    Ok(response.message)
}

macro_rules! constructors {
    ($($name:ident => $code:ident),* $(,)?) => {
        impl Status {
            $(
                #[doc = concat!("A `", stringify!($code), "` status saying `message` (tonic's constructor).")]
                pub fn $name(message: impl Into<String>) -> Status {
                    Status::new(Code::$code, message)
                }
            )*
        }
    };
}

constructors! {
    cancelled => Cancelled,
    unknown => Unknown,
    invalid_argument => InvalidArgument,
    deadline_exceeded => DeadlineExceeded,
    not_found => NotFound,
    already_exists => AlreadyExists,
    permission_denied => PermissionDenied,
    resource_exhausted => ResourceExhausted,
    failed_precondition => FailedPrecondition,
    aborted => Aborted,
    out_of_range => OutOfRange,
    unimplemented => Unimplemented,
    internal => Internal,
    unavailable => Unavailable,
    data_loss => DataLoss,
    unauthenticated => Unauthenticated,
}
