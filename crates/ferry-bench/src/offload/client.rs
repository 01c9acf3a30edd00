//! Figure 8's gRPC client, on one pinned thread (`offload-load`) with a current-thread tokio
//! runtime: the open-loop runs ([`open_loop`], over [`super::load`]) and the closed-loop
//! unary latency ([`unary`]). Every answer's digest is checked.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ferry_offload::engine::RawCodec;
use prost::Message as _;
use tonic::transport::Channel;

use super::hosts::{ENGINE, FERRY_HOST, Requests, TONIC_HOST};
use super::load::{self, DRAIN};
use super::serve::{Figure8Options, Latency, PaperMessage, Run, Setup, Unary};
use crate::BoxError;
use crate::generated::demo_prost as pb;
use crate::harness::cpu::threads_cpu_time;
use crate::harness::grpc::{connect, pinned_runtime};
use crate::harness::loadgen::Arrivals;
use crate::harness::{Histogram, round};

/// The client thread's name.
const LOAD: &str = "offload-load";

/// Runs `f` on the client thread, pinned to `cpu`, with `connections` channels to `addr`.
fn on_client_thread<R: Send + 'static>(
    cpu: usize,
    addr: SocketAddr,
    connections: usize,
    f: impl AsyncFnOnce(Vec<Channel>) -> Result<R, BoxError> + Send + 'static,
) -> Result<R, BoxError> {
    std::thread::Builder::new()
        .name(LOAD.into())
        .spawn(move || {
            let rt = pinned_runtime(cpu)?;
            tokio::task::LocalSet::new().block_on(&rt, async move {
                let mut channels = Vec::with_capacity(connections);
                for _ in 0..connections.max(1) {
                    channels.push(connect(addr).await?);
                }
                f(channels).await
            })
        })?
        .join()
        .map_err(|_| "the client thread panicked")?
}

/// CPU times of the host, the engine and the client, now.
pub(super) fn cpu_now(host: &str) -> [Duration; 3] {
    [host, ENGINE, LOAD].map(threads_cpu_time)
}

/// One open-loop run of `setup` at `rate` against the servers at `addr`.
pub(super) fn open_loop(
    opts: &Figure8Options,
    setup: Setup,
    message: PaperMessage,
    rate: u64,
    addr: SocketAddr,
    requests: &Requests,
) -> Result<Run, BoxError> {
    let host = if setup == Setup::Engine {
        FERRY_HOST
    } else {
        TONIC_HOST
    };
    let arrivals = Arrivals::uniform(rate as f64)?;
    let times = (opts.duration / 10, opts.duration);
    let (max_in_flight, requests) = (opts.max_in_flight, requests.clone());
    let outcome = on_client_thread(opts.client_cpu, addr, opts.connections, async move |channels| {
        let send = |i: u64| {
            let k = (i % requests.bodies.len() as u64) as usize;
            let channel = channels[(i % channels.len() as u64) as usize].clone();
            let (body, want, path) = (requests.bodies[k].clone(), requests.digests[k], requests.path);
            // Only the null host reads the variant: elsewhere it would be one more header.
            let variant = (setup == Setup::Null).then_some(k);
            async move { call(channel, path, body, variant).await == Some(want) }
        };
        load::drive(arrivals, times, max_in_flight, send, || cpu_now(host)).await
    })?;
    let o = &outcome;
    let ((before, after), n) = (o.marks, o.completed().max(1) as f64);
    let us = |i: usize| round(after[i].saturating_sub(before[i]).as_secs_f64() * 1e6 / n, 3);
    Ok(Run {
        setup,
        message,
        rate,
        achieved: round(o.window.achieved_within(DRAIN), 1),
        host_cpu_us: us(0),
        engine_cpu_us: if setup == Setup::Engine { us(1) } else { 0.0 },
        client_cpu_us: us(2),
        latency_us: Latency::of(&o.from_send),
        scheduled_latency_us: Some(Latency::of(&o.window.latency)),
        errors: o.errors(),
        dropped: o.dropped,
    })
}

/// The closed-loop latency of `setup`: `opts.unary_calls` calls one after the other over one
/// connection (after a tenth as many to warm up).
pub(super) fn unary(
    opts: &Figure8Options,
    setup: Setup,
    message: PaperMessage,
    addr: SocketAddr,
    requests: &Requests,
) -> Result<Unary, BoxError> {
    let (calls, requests) = (opts.unary_calls.max(1), requests.clone());
    let latency = on_client_thread(opts.client_cpu, addr, 1, async move |channels| {
        let mut h = Histogram::default();
        for i in 0..calls + calls / 10 {
            let k = (i % requests.bodies.len() as u64) as usize;
            let sent = Instant::now();
            let variant = (setup == Setup::Null).then_some(k);
            let answer = call(
                channels[0].clone(),
                requests.path,
                requests.bodies[k].clone(),
                variant,
            )
            .await;
            let took = sent.elapsed();
            if answer != Some(requests.digests[k]) {
                return Err(format!("unary call {i}: a wrong or failed answer").into());
            }
            if i >= calls / 10 {
                h.record_duration(took);
            }
        }
        Ok(h)
    })?;
    Ok(Unary {
        setup,
        message,
        calls: latency.count(),
        latency_us: Latency::of(&latency),
    })
}

/// One call; the answer's digest, or `None` if it failed.
async fn call(channel: Channel, path: &'static str, body: Bytes, variant: Option<usize>) -> Option<u64> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.ok()?;
    let mut request = tonic::Request::new(body);
    if let Some(v) = variant {
        request
            .metadata_mut()
            .insert("x-variant", v.to_string().parse().ok()?);
    }
    let response = grpc
        .unary(request, http::uri::PathAndQuery::from_static(path), RawCodec)
        .await
        .ok()?;
    pb::Ack::decode(response.into_inner()).ok().map(|a| a.digest)
}
