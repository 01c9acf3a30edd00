//! The demo service written as a team moving from tonic would write it: the generated
//! tonic-style trait (`TonicDemo`), whose handlers take a `Request` and return a `Response` or a
//! `Status` built with tonic's constructors, over the same zero-copy views as the synchronous
//! trait. Served through the engine exactly like `examples/host.rs`:
//!
//! ```text
//! cargo run --release -p ferry-offload --example tonic_style -- shm:///tmp/ferry-demo.sock &
//! cargo run --release -p ferry-cli -- gateway --host shm:///tmp/ferry-demo.sock &
//! grpcurl -plaintext -d '{"values": [1, 2, 3]}' 127.0.0.1:50051 ferry.offload.demo.Demo/SendInts
//! ```

use std::time::Duration;

use ferry::MessageView as _;
use ferry::rpc::compat::{Request, Response, TonicStyle};
use ferry::rpc::{Code, Mode, Server, Status};
use ferry_offload::demo::{self, DemoServer, TonicDemo};
use ferry_offload::demo_host::{DIGEST_SEED, digest, small_digest};

/// The demo service, tonic-style.
pub struct MyDemo;

fn invalid(e: ferry::DecodeError) -> Status {
    Status::invalid_argument(e.to_string())
}

fn ack<'a>(request_ctx: &'a ferry::Context, digest: u64, count: usize) -> Response<demo::Ack<'a>> {
    let mut ack = demo::Ack::new(request_ctx);
    ack.set_digest(digest);
    ack.set_count(count as u32);
    Response::new(ack)
}

impl TonicDemo for MyDemo {
    const SLEEP_MODE: Mode = Mode::Background;

    fn echo<'a>(
        &self,
        request: Request<'_, 'a, demo::KindsView<'a>>,
    ) -> Result<Response<demo::Kinds<'a>>, Status> {
        let echoed = request.get_ref().to_message(request.ctx()).map_err(invalid)?;
        let mut response = Response::new(echoed);
        if let Some(tenant) = request.metadata().get("x-tenant") {
            response
                .metadata_mut()
                .insert("x-tenant", tenant)
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        Ok(response)
    }

    fn fail<'a>(
        &self,
        request: Request<'_, 'a, demo::FailRequestView<'a>>,
    ) -> Result<Response<demo::Empty<'a>>, Status> {
        let r = request.into_inner();
        let code = u8::try_from(r.code())
            .ok()
            .and_then(Code::from_u8)
            .filter(|c| *c != Code::Ok);
        match code {
            Some(code) => Err(Status::new(code, r.message().map_err(invalid)?)),
            None => Err(Status::invalid_argument(format!("no status code {}", r.code()))),
        }
    }

    fn sleep<'a>(
        &self,
        request: Request<'_, 'a, demo::SleepRequestView<'a>>,
    ) -> Result<Response<demo::SleepReply<'a>>, Status> {
        let budget = request
            .deadline()
            .map(|d| d.saturating_duration_since(std::time::Instant::now()));
        std::thread::sleep(Duration::from_millis(u64::from(request.get_ref().millis())));
        let mut reply = demo::SleepReply::new(request.ctx());
        reply.set_budget_millis(budget.map_or(0, |b| (b.as_millis() as u64).max(1)));
        Ok(Response::new(reply))
    }

    fn send_small<'a>(
        &self,
        request: Request<'_, 'a, demo::SmallView<'a>>,
    ) -> Result<Response<demo::Ack<'a>>, Status> {
        let r = request.get_ref();
        let tag = r.tag().map_err(invalid)?;
        let h = small_digest(r.id(), r.timestamp(), r.flag(), r.score(), tag.as_bytes());
        Ok(ack(request.ctx(), h, 1))
    }

    fn send_ints<'a>(
        &self,
        request: Request<'_, 'a, demo::IntsView<'a>>,
    ) -> Result<Response<demo::Ack<'a>>, Status> {
        let values = request.get_ref().values();
        let sum = values.iter().map(u64::from).fold(0u64, u64::wrapping_add);
        Ok(ack(request.ctx(), sum, values.len()))
    }

    fn send_chars<'a>(
        &self,
        request: Request<'_, 'a, demo::CharsView<'a>>,
    ) -> Result<Response<demo::Ack<'a>>, Status> {
        let text = request.get_ref().text().map_err(invalid)?;
        Ok(ack(
            request.ctx(),
            digest(DIGEST_SEED, text.as_bytes()),
            text.len(),
        ))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "shm:///tmp/ferry-demo.sock".into());
    // The tonic-style implementation, and the description service (as in examples/host.rs).
    let services = ferry_offload::demo_host::services(DemoServer::new(TonicStyle(MyDemo)))?;
    let server = Server::builder(services).listen(&addr).loops(1).start()?;
    println!("host (tonic-style): serving ferry.offload.demo.Demo on {addr}");
    let _server = server;
    loop {
        std::thread::park();
    }
}
