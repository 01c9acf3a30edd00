//! Ferry's request/response layer, its sans-IO core: what the DPU paper's RPC API (section
//! III-D) and eRPC's sessions need below the drivers. [`Client`] and [`Server`] hold one
//! session's state each (call ids, the client's request window, the server's bound on calls in
//! progress, deadlines, cancellation, status codes); they take frames and `now` and return the
//! frames to send and how calls end, and never touch a socket, a clock or a thread.
//!
//! Frames ride on any Ferry transport ([`ferry_transport::Transport`]): a call's request and
//! response are Ferry messages (zero copy: the handler reads the request where it arrived), and
//! the few control frames (deadline, cancel, status) are small raw payloads; [`wire`] gives the
//! layout and validates every frame from the peer. Calls complete in any order.
//!
//! What it is not (yet): the drivers (the event loop with foreground and background handlers,
//! the tokio driver), the services generated from `.proto` files, streaming, metrics.

#![forbid(unsafe_code)]

mod calls;
mod client;
mod id;
mod metrics;
mod metrics_http;
mod server;
mod status;
pub mod wire;

pub use client::{Client, ClientConfig, Outcome, Start};
pub use id::CallId;
pub use metrics::{MethodMetrics, Metrics, TransportKind};
pub use metrics_http::MetricsEndpoint;
pub use server::{Event, Server, ServerConfig};
pub use status::{Code, Status};
pub use wire::RpcError;
