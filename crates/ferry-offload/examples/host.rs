//! A Ferry host for the offload engine: the demo service (`ferry_offload::demo_host`, the
//! generated `Demo` trait implemented as any Ferry service is) served on shared memory, with
//! the `ferry.offload.Host` service that hands the engine its description table.
//!
//! ```text
//! cargo run --release -p ferry-offload --example host -- shm:///tmp/ferry-demo.sock &
//! cargo run --release -p ferry-cli -- gateway --host shm:///tmp/ferry-demo.sock --listen 127.0.0.1:50051 &
//! grpcurl -plaintext -d '{"text": "hello"}' 127.0.0.1:50051 ferry.offload.demo.Demo/SendChars
//! ```
//!
//! Ferry clients can call the same server directly at the same address: the engine is one
//! more client of it.

use ferry::rpc::{Server, Services};
use ferry_offload::demo::DemoServer;
use ferry_offload::demo_host::DemoHost;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "shm:///tmp/ferry-demo.sock".into());
    let services = Services::builder()
        .service(DemoServer::new(DemoHost))?
        .service(ferry_offload::host::describe(
            ferry_offload::DEMO_DESCRIPTORS,
            &["ferry.offload.demo.Demo"],
        )?)?
        .workers(1)
        .build()?;
    let server = Server::builder(services).listen(&addr).loops(1).start()?;
    println!("host: serving ferry.offload.demo.Demo on {addr}");
    // Serves until the process is killed.
    let _server = server;
    loop {
        std::thread::park();
    }
}
