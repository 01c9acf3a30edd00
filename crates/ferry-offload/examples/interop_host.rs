//! gRPC's interop test service, `grpc.testing.TestService` (`ferry_offload::interop_host`),
//! served by the tokio driver on shared memory, with the `ferry.offload.Host` service that
//! hands the engine its description table; grpc-go's interop client calls it through
//! `ferry gateway`:
//!
//! ```text
//! cargo run --release -p ferry-offload --example interop_host -- --listen shm:///tmp/ferry-interop.sock &
//! cargo run --release -p ferry-cli -- gateway --host shm:///tmp/ferry-interop.sock --listen 127.0.0.1:50052 &
//! go install google.golang.org/grpc/interop/client@v1.85.0
//! client --server_port=50052 --test_case=ping_pong
//! ```

use std::time::Duration;

use ferry::rpc::LoopConfig;
use ferry::rpc::tokio::{AsyncServer, AsyncServices};
use ferry_offload::grpc_testing::grpc::testing::AsyncTestServiceServer;
use ferry_offload::interop_host::{InteropHost, describe};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = match (args.next().as_deref(), args.next()) {
        (None, _) => "shm:///tmp/ferry-interop.sock".to_owned(),
        (Some("--listen"), Some(addr)) => addr,
        _ => return Err("usage: interop_host [--listen shm:///PATH]".into()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tokio::task::LocalSet::new().block_on(&runtime, async {
        let services = AsyncServices::new()
            .service(AsyncTestServiceServer::new(InteropHost))?
            .service(describe()?)?;
        let server = AsyncServer::bind(services, &[addr.as_str()], LoopConfig::default())?;
        println!("interop host: serving grpc.testing.TestService on {addr}");
        // Serves until the process is killed.
        server.run(std::future::pending(), Duration::from_secs(1)).await?;
        Ok(())
    })
}
