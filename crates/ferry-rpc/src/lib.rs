//! Ferry's request/response layer: services from `.proto` files, served and called over TCP
//! (plain or TLS) and shared memory, with the DPU paper's API (an event loop called continuously, server
//! handlers registered per method, client continuations, foreground and background handlers)
//! and eRPC's sessions (a request window per session, a bound on calls in progress, zero-copy
//! request handling in foreground handlers).
//!
//! - [`session`]: the sans-IO core (call ids, the request window, deadlines, cancellation,
//!   status codes), and [`wire`]: what its frames mean. No I/O, no clock, no thread.
//! - [`EventLoop`]: the run-to-completion driver, one per thread; [`Server`]: N of them with
//!   shared listeners, a worker pool and a Prometheus endpoint; [`Channel`]: the blocking
//!   client; [`tokio`]: `async fn` handlers and an `async` client.
//! - [`Service`]: what `ferry-build` generates for every `service` (a trait to implement, a
//!   server wrapper and a client stub), or what a raw-payload service implements by hand.
//!
//! ```text
//!  client                                   server loop (one thread)
//!  stub.say(&req) ─ serialize-and-send ──►  poll ─► frame (TCP: pool buffer; shm: peer memory)
//!                                           validate in place ─► handler(view)  [foreground]
//!                                           or move/copy to a worker            [background]
//!  view(response) ◄── read in place ─────── response: header copied, large values referenced
//! ```
//!
//! Frames ride on any Ferry transport: a call's request and response are Ferry messages, and
//! the few control frames (deadline, metadata, cancel, status) are small raw payloads. Calls
//! complete in any order.
//!
//! Calls carry [`Metadata`] as gRPC does (for a gateway to pass through): a client sends its
//! request metadata with [`CallOptions`] (`call_with`, which also overrides the channel's
//! timeout for the call), a handler reads it with [`Call::metadata`] and answers with
//! response headers ([`Call::set_headers`], sent before the answer) and trailers
//! ([`Call::set_trailers`], sent with the answer, on success and on failure alike), and the
//! client reads them with [`Response::headers`] and [`Response::trailers`] (or
//! [`Status::metadata`], the trailers, when the call fails). The event loop's own client
//! calls (continuations) send none and drop what comes back.
//!
//! Streams (client-, server- and bidirectional streaming) are in the sans-IO core
//! ([`session`], [`wire`]): opens, messages both ways, half-close, per-stream windows, one
//! deadline for the whole stream. On the event loop a service's [`Service::open`] returns a
//! [`StreamHandler`] the loop drives, run to completion: `on_message` (read in place, as a
//! foreground request is), `on_half_close`, `on_window` (room again after a send was refused
//! with [`Unsent::Full`]; no message is delivered meanwhile, so the server holds at most a
//! window) and `on_cancel`; it answers through [`StreamOut`] (`send` straight into the
//! transport, headers, trailers, `finish`, or a returned [`Status`]). Streams run on the loop
//! whatever the method's [`Mode`]. The blocking client opens them with [`Channel::open`]: a
//! [`BlockingStream`] whose `send` waits for the window while reading, and whose `recv` (or
//! iteration) reads the server's messages in place, then its trailers; dropped early, it
//! cancels. The [`tokio`] driver has them as tonic does (`Stream` in, `Stream` out):
//! `AsyncChannel::open` gives a `RequestSink` and a `ResponseStream`, and
//! `AsyncService::stream` gets a `RequestStream` and a `ResponseSink`. A call of the wrong
//! kind for its method's [`Shape`] is refused with `UNIMPLEMENTED`, naming the method and its
//! shape.
//!
//! Addresses pick the transport ([`Addr`]): `tcp://`, `tls://` (rustls in `ferry-net`, with
//! [`ConnConfig::tls_server`] and [`ConnConfig::tls_client`]; handlers read the client's
//! certificate identity with [`Call::peer`]) or `shm://`.
//!
//! What it is not: a TLS implementation (that is `ferry-net`'s), a load balancer or name
//! resolver.

#![forbid(unsafe_code)]

mod addr;
mod blocking_stream;
mod channel;
pub mod compat;
mod conn;
mod dispatch;
mod event_loop;
#[doc(hidden)]
pub mod http;
mod id;
mod limits;
mod metadata;
mod metrics;
mod metrics_http;
mod server;
mod service;
mod services;
pub mod session;
mod status;
mod sys;
mod thresholds;
pub mod tokio;
pub mod wire;
mod workers;

pub use addr::{Addr, AddrError};
pub use blocking_stream::BlockingStream;
pub use channel::{CallOptions, Channel, ChannelConfig, Raw, Response, ResponseType};
pub use conn::{Accepted, Conn, ConnConfig, Frame, Listener, TransportKind};
pub use event_loop::{
    Continuation, EventLoop, LoopConfig, LoopSession, LoopStats, SessionId, StreamHandler, StreamOut, Unsent,
    thread_busy_time,
};
pub use ferry_net::{ClientAuth, PeerIdentity, TlsClient, TlsError, TlsServer};
pub use id::CallId;
pub use limits::ConnLimits;
pub use metadata::{MAX_METADATA_BYTES, MAX_METADATA_ENTRIES, Metadata, MetadataError};
pub use metrics::{Admitted, Closed, LoopCounters, MethodMetrics, Metrics};
pub use metrics_http::MetricsEndpoint;
pub use server::{LoopReport, Server, ServerBuilder, ServerError};
pub use service::{Call, Encoded, Incoming, MethodInfo, Mode, Reply, Request, Service, Shape};
pub use services::{Services, ServicesBuilder, ServicesError};
pub use status::{Code, Status};
pub use thresholds::{Thresholds, ThresholdsError};
pub use wire::RpcError;
