//! A FlatBuffers service over `ferry-rpc`: one server on TCP and shared memory, and a client
//! calling it over both, in one process. The request and response are the interop schema's
//! `Root` (`schema/interop.fbs`), through the code `flatc --rust --gen-object-api` generated for
//! it, unchanged (`ferry_flatbuffers_tests::interop`).
//!
//! Run with `cargo run -p ferry-flatbuffers-tests --example rpc`.

use std::time::Duration;

use ferry_buf::{Pool, PoolConfig};
use ferry_flatbuffers_tests::interop::{Root, RootArgs, RootT};
use ferry_rpc::{Channel, Mode, Server, Services};
use ferry_transport::{Payload, method_id};
use flatbuffers::FlatBufferBuilder;
use flatbuffers::rpc::{self, FlatService};

const GREET: &str = "/demo.Greeter/Greet";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server: one method; the handler reads the verified request in place and builds the
    // response (generated `Root::create`) in a builder whose blocks come from the session's pool.
    let service = FlatService::new().method(GREET, Mode::Foreground, |_call, request, fbb| {
        let req = request.root::<Root>()?;
        let name = fbb.create_string(&format!("hello, {}", req.name()));
        let args = RootArgs {
            name: Some(name),
            u32_: req.u32_().wrapping_add(1),
            ..RootArgs::default()
        };
        Ok(Root::create(fbb, &args))
    });
    let dir = std::env::temp_dir().join(format!("ferry-flatbuffers-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let server = Server::builder(Services::builder().service(service)?.build()?)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}/greeter.sock", dir.display()))
        .loops(1)
        .start()?;

    // The client, over each transport: the request (generated object API, `RootT::pack`) is
    // built in pool blocks and sent as its slices; the response is verified as a `Root` when
    // read.
    let pool = Pool::new(PoolConfig {
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })?;
    let mut request = RootT::default();
    request.name = "ferry".into();
    request.u32_ = 41;
    for addr in server.addrs() {
        let channel = Channel::connect(&addr.to_string())?;
        let mut fbb = FlatBufferBuilder::with_pool(&pool);
        let root = request.pack(&mut fbb);
        fbb.finish(root, None);
        let response = rpc::call(&channel, method_id(GREET), &fbb.finished_message())?;
        let root = response.root::<Root>()?;
        println!("{addr}: {} ({})", root.name(), root.u32_());

        // Bytes that are not a `Root`: a status naming what failed, not a panic.
        let err = channel
            .call_payload(method_id(GREET), Payload::Bytes(&[1, 2, 3]))
            .map(|_| ())
            .unwrap_err();
        println!("{addr}: garbage request: {err}");
    }
    server.shutdown(Duration::from_secs(1));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
