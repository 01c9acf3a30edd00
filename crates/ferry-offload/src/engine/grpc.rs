//! The gRPC side of the engine: one catch-all tower service behind tonic's HTTP/2 server. It
//! finds the route of a call's path, reads its `grpc-timeout` and metadata, lets tonic's
//! unary machinery deframe the body (as raw bytes: [`RawCodec`]), hands the call to the host
//! sessions ([`super::sessions`]) and writes their answer or status back.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use ferry::rpc::{Metadata, Status};
use tokio::sync::{mpsc, oneshot};
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{MetadataKey, MetadataValue};

use super::sessions::{Answer, Call};
use crate::table::{Route, Table};
use crate::translate::{forwarded, parse_timeout};

/// How much earlier than the client's `grpc-timeout` the engine's own deadline ends. tonic's
/// server enforces the header too, and answers `CANCELLED` ("Timeout expired") when it passes;
/// ending first (tokio's timers tick every millisecond) gives the client gRPC's
/// `DEADLINE_EXCEEDED` instead, and the host its cancellation.
const DEADLINE_MARGIN: Duration = Duration::from_millis(2);

/// The catch-all gRPC service: every path that is not reflection or health.
#[derive(Clone)]
pub(super) struct Gateway {
    pub(super) table: Arc<Table>,
    pub(super) calls: mpsc::Sender<Call>,
    /// Largest request message accepted (larger: `RESOURCE_EXHAUSTED`).
    pub(super) max_message: usize,
}

impl tower_service::Service<http::Request<axum::body::Body>> for Gateway {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<axum::body::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req.map(Body::new)).await) })
    }
}

impl Gateway {
    async fn handle(self, req: http::Request<Body>) -> http::Response<Body> {
        let Some(route) = self.table.route(req.uri().path()).cloned() else {
            return failure(
                tonic::Code::Unimplemented,
                format!("no method {}", req.uri().path()),
            );
        };
        if route.streaming {
            return failure(
                tonic::Code::Unimplemented,
                format!("{} streams: the engine serves unary methods only", route.path),
            );
        }
        let received = tokio::time::Instant::now();
        let deadline = match req.headers().get("grpc-timeout") {
            None => None,
            Some(v) => match parse_timeout(v.as_bytes()) {
                // A budget too far to represent is no deadline.
                Some(t) => received.checked_add(t.saturating_sub(DEADLINE_MARGIN)),
                None => {
                    return failure(
                        tonic::Code::InvalidArgument,
                        format!("malformed grpc-timeout {v:?}"),
                    );
                }
            },
        };
        let metadata = match request_metadata(req.headers()) {
            Ok(m) => m,
            Err(why) => return failure(tonic::Code::InvalidArgument, why),
        };
        let called = Arc::new(AtomicBool::new(false));
        let unary = Unary {
            route,
            deadline,
            metadata: Some(metadata),
            calls: self.calls.clone(),
            called: called.clone(),
        };
        let mut grpc = tonic::server::Grpc::new(RawCodec).max_decoding_message_size(self.max_message);
        let mut response = grpc.unary(unary, req).await;
        // tonic answers a message over the size limit with OUT_OF_RANGE before the service
        // runs (its only OUT_OF_RANGE before the call); gRPC's rule is RESOURCE_EXHAUSTED.
        if !called.load(Ordering::Relaxed) {
            let status = response.headers().get("grpc-status");
            if status.is_some_and(|s| s.as_bytes() == b"11") {
                response
                    .headers_mut()
                    .insert("grpc-status", http::HeaderValue::from_static("8"));
            }
        }
        response
    }
}

/// A trailers-only gRPC answer with `code`.
fn failure(code: tonic::Code, message: String) -> http::Response<Body> {
    tonic::Status::new(code, message).into_http()
}

/// The request headers the host sees, as Ferry call metadata (`-bin` values decoded from
/// their base64 form: the host gets the bytes). Read in place: only a `-bin` value goes
/// through tonic's metadata types (for its base64 rules), one header at a time.
fn request_metadata(headers: &http::HeaderMap) -> Result<Metadata, String> {
    let mut m = Metadata::new();
    for (key, value) in headers {
        let name = key.as_str();
        // A `-bin` value is decoded (and refused if malformed) whether or not it is forwarded.
        let value = if name.ends_with("-bin") {
            let mut one = http::HeaderMap::with_capacity(1);
            one.insert(key.clone(), value.clone());
            let map = tonic::metadata::MetadataMap::from_headers(one);
            let Some(tonic::metadata::KeyAndValueRef::Binary(_, v)) = map.iter().next() else {
                continue;
            };
            v.to_bytes()
                .map_err(|e| format!("metadata {name}: {e}"))?
                .to_vec()
        } else if forwarded(name) {
            value.as_bytes().to_vec()
        } else {
            continue;
        };
        if !forwarded(name) {
            continue;
        }
        m.append(name, value)
            .map_err(|e| format!("metadata {name}: {e}"))?;
    }
    Ok(m)
}

/// One call's unary service, as tonic's [`Grpc::unary`](tonic::server::Grpc::unary) runs it.
struct Unary {
    route: Arc<Route>,
    /// When the engine gives up on the call (the client's `grpc-timeout`, less the margin).
    deadline: Option<tokio::time::Instant>,
    metadata: Option<Metadata>,
    calls: mpsc::Sender<Call>,
    called: Arc<AtomicBool>,
}

impl tonic::server::UnaryService<Bytes> for Unary {
    type Response = Bytes;
    type Future = Pin<Box<dyn Future<Output = Result<tonic::Response<Bytes>, tonic::Status>> + Send>>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        self.called.store(true, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let call = Call {
            route: self.route.clone(),
            body: request.into_inner(),
            deadline: self.deadline,
            metadata: self.metadata.take().unwrap_or_default(),
            reply,
        };
        let calls = self.calls.clone();
        let deadline = self.deadline;
        Box::pin(async move {
            calls
                .send(call)
                .await
                .map_err(|_| tonic::Status::unavailable("the engine is shutting down"))?;
            // The deadline is enforced here too, inside the future tonic's own timeout wraps
            // (and polls first): ending earlier, it is what the client gets.
            let answer = match deadline {
                None => answer.await,
                Some(at) => match tokio::time::timeout_at(at, answer).await {
                    Ok(answer) => answer,
                    Err(_) => return Err(tonic::Status::deadline_exceeded("deadline exceeded (engine)")),
                },
            };
            let answer = answer.map_err(|_| tonic::Status::unavailable("the engine dropped the call"))?;
            answer.map(response).map_err(failed)
        })
    }
}

/// The gRPC response of the host's answer: the message and the host's metadata.
fn response(answer: Answer) -> tonic::Response<Bytes> {
    let mut r = tonic::Response::new(Bytes::from(answer.body));
    *r.metadata_mut() = grpc_metadata(&answer.metadata);
    r
}

/// The gRPC status of a failed call, with the metadata the host sent with it (trailers).
fn failed(status: Status) -> tonic::Status {
    let code = tonic::Code::from_i32(i32::from(status.code as u8));
    tonic::Status::with_metadata(code, status.message, grpc_metadata(&status.metadata))
}

/// The host's metadata as gRPC metadata (`-bin` values base64-encoded again). Entries that
/// are not valid HTTP/2 header values are left out.
fn grpc_metadata(metadata: &Metadata) -> tonic::metadata::MetadataMap {
    let mut md = tonic::metadata::MetadataMap::new();
    for (key, value) in metadata.iter() {
        if key.ends_with("-bin") {
            if let Ok(k) = MetadataKey::from_bytes(key.as_bytes()) {
                md.append_bin(k, MetadataValue::from_bytes(value));
            }
        } else if let (Ok(k), Ok(v)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value),
        ) {
            md.append(k, v);
        }
    }
    md
}

/// A tonic codec of raw bytes: gRPC messages as they are on the wire. The engine decodes them
/// itself; a client sends exactly the bytes it means to (the tests' malformed bodies).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
