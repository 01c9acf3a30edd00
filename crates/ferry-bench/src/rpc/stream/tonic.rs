//! The tonic peer of the streaming section: `schema/stream.proto`'s `Streams` service over
//! one HTTP/2 connection on TCP loopback, prost messages (`bytes` fields as [`Bytes`]), both
//! sides on pinned current-thread runtimes with tonic's defaults, as an application would use
//! it (see [`crate::rpc::tonic`] for the unary peer's choices).

use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::thread;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Server;
use tonic::{Request, Response, Status, Streaming};

use super::{Shape, StreamMeasured, StreamPoint, check, in_time, payload};
use crate::BoxError;
use crate::generated::record_prost::stream::streams_client::StreamsClient;
use crate::generated::record_prost::stream::streams_server::{Streams, StreamsServer};
use crate::generated::record_prost::stream::{Chunk, Cpu, Down, Nothing, Total};
use crate::harness::grpc::{connect, incoming, pinned_runtime};
use crate::harness::thread_cpu_time;
use crate::rpc::Cpus;

/// Runs `point` once: the client on `cpus.0`, the server on `cpus.1`.
pub(crate) fn run(point: &StreamPoint, cpus: Cpus) -> Result<StreamMeasured, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    thread::scope(|s| {
        let server = thread::Builder::new()
            .name("tonic-streams".to_owned())
            .spawn_scoped(s, move || serve(cpus.1, listener, stopped))?;
        let measured = drive(point, cpus.0, addr);
        let _ = stop.send(true);
        let served = server
            .join()
            .unwrap_or_else(|_| Err("the server thread panicked".into()));
        let measured = measured?;
        served?;
        Ok(measured)
    })
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, Status>> + Send>>;

/// The service: every handler runs on the server's one thread.
struct Service;

#[tonic::async_trait]
impl Streams for Service {
    type DownloadStream = ChunkStream;
    type PingPongStream = ChunkStream;

    async fn download(&self, request: Request<Down>) -> Result<Response<ChunkStream>, Status> {
        let down = request.into_inner();
        let data = Bytes::from(payload(down.size as usize));
        let chunks = tokio_stream::iter((0..down.count).map(move |_| Ok(Chunk { data: data.clone() })));
        Ok(Response::new(Box::pin(chunks)))
    }

    async fn upload(&self, request: Request<Streaming<Chunk>>) -> Result<Response<Total>, Status> {
        let mut chunks = request.into_inner();
        let mut total = Total::default();
        while let Some(chunk) = chunks.next().await {
            total.messages += 1;
            total.bytes += chunk?.data.len() as u64;
        }
        Ok(Response::new(total))
    }

    async fn ping_pong(&self, request: Request<Streaming<Chunk>>) -> Result<Response<ChunkStream>, Status> {
        let mut chunks = request.into_inner();
        // One message in flight at a time: a channel of one carries each echo.
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(async move {
            while let Some(chunk) = chunks.next().await {
                if tx.send(chunk).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn server_cpu(&self, _: Request<Nothing>) -> Result<Response<Cpu>, Status> {
        let ns = u64::try_from(thread_cpu_time().as_nanos()).unwrap_or(u64::MAX);
        Ok(Response::new(Cpu { ns }))
    }
}

/// Serves on `listener`, pinned to `cpu`, until `stopped` says so.
fn serve(cpu: usize, listener: TcpListener, stopped: watch::Receiver<bool>) -> Result<(), BoxError> {
    pinned_runtime(cpu)?.block_on(async {
        let incoming = incoming(listener)?;
        let mut stopped = stopped;
        Server::builder()
            .add_service(StreamsServer::new(Service))
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stopped.wait_for(|&stop| stop).await;
            })
            .await?;
        Ok(())
    })
}

/// The client's side of one run.
fn drive(point: &StreamPoint, cpu: usize, addr: SocketAddr) -> Result<StreamMeasured, BoxError> {
    pinned_runtime(cpu)?.block_on(async {
        let mut client = StreamsClient::new(connect(addr).await?);
        in_time(
            "the warm-up stream",
            one_stream(&mut client, &point.warmup(), &mut StreamMeasured::default()),
        )
        .await?;
        let server0 = client.server_cpu(Nothing {}).await?.into_inner().ns;
        let (t0, cpu0) = (Instant::now(), thread_cpu_time());
        let mut measured = StreamMeasured::default();
        in_time("a stream", one_stream(&mut client, point, &mut measured)).await?;
        measured.elapsed = t0.elapsed();
        measured.client_cpu = thread_cpu_time().saturating_sub(cpu0);
        let server1 = client.server_cpu(Nothing {}).await?.into_inner().ns;
        measured.server_cpu = std::time::Duration::from_nanos(server1.saturating_sub(server0));
        Ok(measured)
    })
}

async fn one_stream(
    client: &mut StreamsClient<tonic::transport::Channel>,
    point: &StreamPoint,
    measured: &mut StreamMeasured,
) -> Result<(), BoxError> {
    let (size, count) = (point.size, point.count);
    match point.shape {
        Shape::Download => {
            let down = Down {
                count: u32::try_from(count)?,
                size: u32::try_from(size)?,
            };
            let mut chunks = client.download(down).await?.into_inner();
            let mut got = 0;
            while let Some(chunk) = chunks.message().await? {
                check(&chunk.data, size)?;
                measured.bytes += chunk.data.len() as u64;
                got += 1;
            }
            if got != count {
                return Err(format!("downloaded {got} messages of {count}").into());
            }
        }
        Shape::Upload => {
            let data = Bytes::from(payload(size));
            let chunks = tokio_stream::iter((0..count).map(move |_| Chunk { data: data.clone() }));
            let total = client.upload(chunks).await?.into_inner();
            if total.messages != count as u64 || total.bytes != (count * size) as u64 {
                return Err(format!("the server received {total:?}").into());
            }
            measured.bytes = total.bytes;
        }
        Shape::PingPong => {
            let (tx, rx) = mpsc::channel(1);
            let mut echoes = client
                .ping_pong(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await?
                .into_inner();
            let data = Bytes::from(payload(size));
            for _ in 0..count {
                let at = Instant::now();
                tx.send(Chunk { data: data.clone() }).await?;
                let echo = echoes.message().await?.ok_or("the ping-pong ended early")?;
                check(&echo.data, size)?;
                measured.round_trips.record_duration(at.elapsed());
                measured.bytes += 2 * size as u64;
            }
            drop(tx);
            if echoes.message().await?.is_some() {
                return Err("an echo nobody asked for".into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus() -> Cpus {
        (0, 1)
    }

    #[test]
    fn every_shape_carries_what_it_says() {
        for (shape, size, count) in [
            (Shape::Download, 65_536, 16),
            (Shape::Upload, 65_536, 16),
            (Shape::PingPong, 64, 50),
        ] {
            let m = run(&StreamPoint { shape, size, count }, cpus()).expect("a run");
            let expected = match shape {
                Shape::PingPong => 2 * size * count,
                _ => size * count,
            };
            assert_eq!(m.bytes, expected as u64, "{shape:?}");
            assert_eq!(
                m.round_trips.count(),
                if shape == Shape::PingPong { count as u64 } else { 0 }
            );
            assert!(
                m.server_cpu > std::time::Duration::ZERO,
                "{shape:?}: the server's CPU was read"
            );
        }
    }
}
