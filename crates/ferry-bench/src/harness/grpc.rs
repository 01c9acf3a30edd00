//! The plumbing every gRPC (tonic) peer of the benchmarks shares: a pinned current-thread
//! runtime, the accepted connections with `TCP_NODELAY`, and a channel to a server.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use tokio::runtime::Runtime;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};

use crate::BoxError;

/// How long a connection may take.
const CONNECT: Duration = Duration::from_secs(10);

/// A current-thread runtime (timers and I/O) for the calling thread, pinned to `cpu` first.
pub fn pinned_runtime(cpu: usize) -> Result<Runtime, BoxError> {
    super::pin_current_thread(cpu)?;
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The connections `listener` accepts, as a tonic server takes them (TCP_NODELAY: tonic sets
/// it only on listeners it binds).
pub fn incoming(listener: TcpListener) -> Result<TcpIncoming, BoxError> {
    listener.set_nonblocking(true)?;
    Ok(TcpIncoming::from(tokio::net::TcpListener::from_std(listener)?).with_nodelay(Some(true)))
}

/// A channel (one HTTP/2 connection) to the server at `addr`, TCP_NODELAY, connected within
/// 10 s.
pub async fn connect(addr: SocketAddr) -> Result<Channel, BoxError> {
    Ok(Endpoint::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect_timeout(CONNECT)
        .connect()
        .await?)
}
