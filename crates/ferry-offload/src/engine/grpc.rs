//! The gRPC side of the engine: one catch-all tower service behind tonic's HTTP/2 server. It
//! finds the route of a call's path, reads its `grpc-timeout`, metadata and `grpc-encoding`,
//! and hands the call to the host sessions ([`super::sessions`]). A unary call's one request
//! message is read first ([`crate::framing`]: deframed, inflated with a bound) and its answer
//! (compressed as the client accepts) or status written back whole; a stream's request body
//! and response body go to the host side as they are ([`super::streams`]: read and fed as fast
//! as each side takes them), and its answer starts when the host's first answer (headers, a
//! message or the end) comes. Every answer advertises the encodings the engine reads in
//! `grpc-accept-encoding`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use ferry::rpc::{Metadata, Shape, Status};
use http::HeaderValue;
use http_body_util::BodyExt as _;
use tokio::sync::{mpsc, oneshot};
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{MetadataKey, MetadataValue};

use super::sessions::{Answer, Call, Exchange};
use super::streams::{self, Answered, Requests};
use crate::framing::{self, ACCEPT_ENCODING, Encoding, FramingError, OneMessage};
use crate::table::Table;
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
    /// Largest request message accepted, as sent and once inflated (larger:
    /// `RESOURCE_EXHAUSTED`).
    pub(super) max_message: usize,
    /// The encoding answers use when the client accepts it and its request was not compressed.
    pub(super) compress: Option<Encoding>,
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
        Box::pin(async move {
            let mut response = this
                .handle(req.map(Body::new))
                .await
                .unwrap_or_else(tonic::Status::into_http);
            response
                .headers_mut()
                .insert("grpc-accept-encoding", HeaderValue::from_static(ACCEPT_ENCODING));
            Ok(response)
        })
    }
}

impl Gateway {
    async fn handle(self, req: http::Request<Body>) -> Result<http::Response<Body>, tonic::Status> {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path();
        let Some(route) = self.table.route(path).cloned() else {
            return Err(tonic::Status::unimplemented(format!("no method {path}")));
        };
        let received = tokio::time::Instant::now();
        let header = |name: &str| parts.headers.get(name).map(HeaderValue::as_bytes);
        let deadline = match header("grpc-timeout") {
            None => None,
            Some(v) => match parse_timeout(v) {
                // A budget too far to represent is no deadline.
                Some(t) => received.checked_add(t.saturating_sub(DEADLINE_MARGIN)),
                None => {
                    let v = String::from_utf8_lossy(v);
                    return Err(tonic::Status::invalid_argument(format!(
                        "malformed grpc-timeout {v:?}"
                    )));
                }
            },
        };
        let encoding = Encoding::of_request(header("grpc-encoding")).map_err(refused)?;
        let answer_encoding = Encoding::for_response(encoding, header("grpc-accept-encoding"), self.compress);
        let metadata = request_metadata(&parts.headers).map_err(tonic::Status::invalid_argument)?;
        let call = async {
            let (exchange, answer) = match route.shape {
                Shape::Unary => {
                    let body = read_message(body, encoding, self.max_message).await?;
                    let (reply, answer) = oneshot::channel();
                    (Exchange::Unary { body, reply }, Awaited::Unary(answer))
                }
                _ => {
                    let requests = Requests::new(body, encoding, self.max_message);
                    let (answers, answered) = streams::answer(answer_encoding);
                    (Exchange::Stream { requests, answers }, Awaited::Stream(answered))
                }
            };
            let call = Call {
                route,
                deadline,
                metadata,
                exchange,
            };
            self.calls
                .send(call)
                .await
                .map_err(|_| tonic::Status::unavailable("the engine is shutting down"))?;
            match answer {
                Awaited::Unary(answer) => {
                    let answer = answer
                        .await
                        .map_err(|_| tonic::Status::unavailable("the engine dropped the call"))?
                        .map_err(failed)?;
                    let message = framing::frame(&answer.body, answer_encoding);
                    let body = http_body_util::Full::new(message)
                        .with_trailers(std::future::ready(Some(Ok(trailers(Ok(answer.trailers))))));
                    Ok(response(&answer.headers, answer_encoding, Body::new(body)))
                }
                Awaited::Stream(answered) => {
                    let (headers, body) = answered.head().await.map_err(failed)?;
                    Ok(response(&headers, answer_encoding, Body::new(body)))
                }
            }
        };
        // The deadline covers reading a unary request too, and a stream until its first
        // answer (the host side ends it with the deadline after that); it ends before tonic's
        // own timeout (the margin), so its answer is what the client gets.
        match deadline {
            None => call.await,
            Some(at) => tokio::time::timeout_at(at, call)
                .await
                .map_err(|_| tonic::Status::deadline_exceeded("deadline exceeded (engine)"))?,
        }
    }
}

/// What the gRPC side waits for: a unary call's answer, or a stream's head and body.
enum Awaited {
    Unary(oneshot::Receiver<Result<Answer, Status>>),
    Stream(Answered),
}

/// The request's one message, inflated (at most `limit` bytes, as sent and as inflated).
async fn read_message(mut body: Body, encoding: Encoding, limit: usize) -> Result<Bytes, tonic::Status> {
    let mut deframer = OneMessage::new(limit);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            deframer.push(data).map_err(refused)?;
        }
    }
    deframer
        .finish()
        .and_then(|frame| frame.decompress(encoding, limit))
        .map_err(refused)
}

/// A gRPC answer: the host's `headers`, then `body` (its messages compressed with `encoding`,
/// and its trailers).
fn response(headers: &Metadata, encoding: Encoding, body: Body) -> http::Response<Body> {
    let mut response = http::Response::new(body);
    let map = response.headers_mut();
    *map = grpc_metadata(headers).into_headers();
    map.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    if encoding != Encoding::Identity {
        map.insert("grpc-encoding", HeaderValue::from_static(encoding.name()));
    }
    response
}

/// The trailers that end an answer: the host's trailers and an OK status, or a failure's
/// status, message and metadata.
pub(super) fn trailers(end: Result<Metadata, Status>) -> http::HeaderMap {
    match end {
        Ok(metadata) => {
            let mut trailers = grpc_metadata(&metadata).into_headers();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            trailers
        }
        Err(status) => {
            let status = failed(status);
            let mut trailers = http::HeaderMap::new();
            if status.add_header(&mut trailers).is_err() {
                // A message that is not a header value even percent-encoded: the code alone.
                trailers.clear();
                trailers.insert("grpc-status", HeaderValue::from(status.code() as i32));
            }
            trailers
        }
    }
}

/// The status of a request whose message cannot be read.
fn refused(e: FramingError) -> tonic::Status {
    failed(e.into())
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

/// The gRPC status of a failed call, with the metadata the host sent with it (trailers).
fn failed(status: Status) -> tonic::Status {
    let code = tonic::Code::from_i32(i32::from(status.code as u8));
    tonic::Status::with_metadata(code, status.message, grpc_metadata(&status.metadata))
}

/// The host's metadata as gRPC metadata (`-bin` values base64-encoded again). Entries that
/// are not valid HTTP/2 header values, and HTTP/2's and gRPC's own headers (those a request
/// does not pass to the host: `grpc-encoding`, `content-type`, ...), are left out.
fn grpc_metadata(metadata: &Metadata) -> tonic::metadata::MetadataMap {
    let mut md = tonic::metadata::MetadataMap::new();
    for (key, value) in metadata.iter() {
        if !forwarded(key) {
            continue;
        }
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

/// A tonic codec of raw bytes: gRPC messages as they are on the wire, for a client (or a
/// benchmark's tonic server) that sends and reads exactly the bytes it means to (the tests'
/// malformed bodies). The engine itself reads messages with [`crate::framing`].
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
