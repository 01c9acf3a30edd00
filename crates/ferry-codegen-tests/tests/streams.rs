//! Generated streaming code, end to end: `service Streams` (all four shapes, `all.proto`)
//! implemented with the generated event-loop trait (`Streams`, handlers the loop drives) and
//! tokio trait (`AsyncStreams`), each served over TCP and shared memory, and called through
//! the generated client over the blocking `Channel` and the tokio `AsyncChannel`.

mod common;

use std::time::Duration;

use common::{payload, request, scratch, tokio_server};
use ferry::Context;
use ferry::rpc::tokio::{AsyncCall, AsyncChannel, AsyncRequest, AsyncServices, RequestStream, ResponseSink};
use ferry::rpc::{
    Addr, Call, Channel, Code, Encoded, Request, Server, Services, Status, StreamHandler, StreamOut, Unsent,
};
use ferry_codegen_tests::generated::ferry::test as t;

/// Large enough to travel by reference (the default threshold is 512 bytes).
const BIG: usize = 8 << 10;

fn invalid(e: ferry::DecodeError) -> Status {
    Status::new(Code::InvalidArgument, e.to_string())
}

fn response<'a>(ctx: &'a Context, payload: &'a [u8], tag: String, handler: &str) -> t::SayResponse<'a> {
    let mut r = t::SayResponse::new(ctx);
    r.set_payload(payload);
    r.set_tag(tag);
    r.set_handler(handler.to_string());
    r
}

/// The event-loop implementation.
struct LoopStreams;

/// `Repeat`: sends the request's payload `tag` times, pausing when the client's window is full.
#[derive(Default)]
struct Repeat {
    payload: Vec<u8>,
    left: usize,
}

impl Repeat {
    fn send(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        while self.left > 0 {
            let r = response(out.ctx(), &self.payload, self.left.to_string(), "loop");
            match out.send(&r) {
                Ok(()) => self.left -= 1,
                Err(Unsent::Full) => return Ok(()),
                Err(Unsent::Ended) => return Ok(()),
            }
        }
        out.finish();
        Ok(())
    }
}

impl StreamHandler for Repeat {
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let r = request.decode::<t::SayRequest<'static>>()?;
        self.payload = r.payload().to_vec();
        self.left = r
            .tag()
            .map_err(invalid)?
            .parse()
            .map_err(|_| Status::new(Code::InvalidArgument, "tag"))?;
        self.send(out)
    }

    fn on_half_close(&mut self, _: &mut StreamOut<'_>) -> Result<(), Status> {
        Ok(())
    }

    fn on_window(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        self.send(out)
    }
}

/// `Join`: collects the payloads, answers once at the client's end.
#[derive(Default)]
struct Join {
    joined: Vec<u8>,
    count: usize,
}

impl StreamHandler for Join {
    fn on_message(&mut self, request: Request<'_>, _: &mut StreamOut<'_>) -> Result<(), Status> {
        let r = request.decode::<t::SayRequest<'static>>()?;
        self.joined.extend_from_slice(r.payload());
        self.count += 1;
        Ok(())
    }

    fn on_half_close(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let r = response(out.ctx(), &self.joined, self.count.to_string(), "loop");
        out.send(&r)
            .map_err(|e| Status::new(Code::Internal, format!("{e:?}")))?;
        out.finish();
        Ok(())
    }
}

/// `Chat`: echoes each request (the client waits for each echo, so the window has room).
struct Chat;

impl StreamHandler for Chat {
    fn on_message(&mut self, request: Request<'_>, out: &mut StreamOut<'_>) -> Result<(), Status> {
        let r = request.decode::<t::SayRequest<'static>>()?;
        let echo = response(
            out.ctx(),
            r.payload(),
            r.tag().map_err(invalid)?.to_string(),
            "loop",
        );
        out.send(&echo)
            .map_err(|e| Status::new(Code::Internal, format!("{e:?}")))
    }

    fn on_half_close(&mut self, out: &mut StreamOut<'_>) -> Result<(), Status> {
        out.finish();
        Ok(())
    }
}

impl t::Streams for LoopStreams {
    fn repeat(&self, _: &Call<'_>) -> Result<Box<dyn StreamHandler>, Status> {
        Ok(Box::new(Repeat::default()))
    }

    fn join(&self, _: &Call<'_>) -> Result<Box<dyn StreamHandler>, Status> {
        Ok(Box::new(Join::default()))
    }

    fn chat(&self, _: &Call<'_>) -> Result<Box<dyn StreamHandler>, Status> {
        Ok(Box::new(Chat))
    }

    fn say<'a>(&self, call: &Call<'a>, request: t::SayRequestView<'a>) -> Result<t::SayResponse<'a>, Status> {
        Ok(response(
            call.ctx(),
            request.payload(),
            request.tag().map_err(invalid)?.to_string(),
            "loop",
        ))
    }
}

/// The tokio implementation.
struct TokioStreams;

impl t::AsyncStreams for TokioStreams {
    async fn repeat(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SayRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        let (payload, times) = {
            let r = request.view()?;
            let times: usize = r
                .tag()
                .map_err(invalid)?
                .parse()
                .map_err(|_| Status::new(Code::InvalidArgument, "tag"))?;
            (r.payload().to_vec(), times)
        };
        for i in (1..=times).rev() {
            responses
                .send(&response(call.ctx(), &payload, i.to_string(), "tokio"))
                .await?;
        }
        Ok(())
    }

    async fn join(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<t::SayRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        let (mut joined, mut count) = (Vec::new(), 0);
        while let Some(request) = requests.message().await? {
            joined.extend_from_slice(request.view()?.payload());
            count += 1;
        }
        responses
            .send(&response(call.ctx(), &joined, count.to_string(), "tokio"))
            .await
    }

    async fn chat(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<t::SayRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        while let Some(request) = requests.message().await? {
            let r = request.view()?;
            responses
                .send(&response(
                    call.ctx(),
                    r.payload(),
                    r.tag().map_err(invalid)?.to_string(),
                    "tokio",
                ))
                .await?;
        }
        Ok(())
    }

    async fn say(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SayRequest<'static>>,
    ) -> Result<Encoded, Status> {
        let r = request.view()?;
        Encoded::message(&response(
            call.ctx(),
            r.payload(),
            r.tag().map_err(invalid)?.to_string(),
            "tokio",
        ))
    }
}

/// Every method through the blocking client; `handler` names the server's implementation.
fn blocking_client(addr: &str, handler: &str) {
    let client = t::StreamsClient::new(Channel::connect(addr).expect("connect"));
    let ctx = client.inner().context();
    for n in [3, BIG] {
        let body = payload(n);
        // Server streaming: 40 answers, past one window of 32.
        let answers: Vec<_> = client
            .repeat(&request(ctx, &body, "40"))
            .expect("repeat")
            .map(|r| {
                let r = r.expect("an answer");
                let v = r.view().unwrap();
                assert!(v.payload() == body.as_slice());
                assert_eq!(v.handler().unwrap(), handler);
                v.tag().unwrap().to_string()
            })
            .collect();
        assert_eq!(answers, (1..=40).rev().map(|i| i.to_string()).collect::<Vec<_>>());
        // Client streaming.
        let mut join = client.join().expect("join");
        for i in 0..5 {
            join.send(&request(ctx, &body, &i.to_string())).expect("send");
        }
        join.end().expect("end");
        let joined = join.recv().expect("one answer").expect("ok");
        let v = joined.view().unwrap();
        assert_eq!(v.tag().unwrap(), "5");
        assert_eq!(v.payload(), body.repeat(5).as_slice());
        assert!(join.recv().is_none(), "one answer only");
        // Bidirectional.
        let mut chat = client.chat().expect("chat");
        for i in 0..10 {
            chat.send(&request(ctx, &body, &i.to_string())).expect("send");
            let echo = chat.recv().expect("an echo").expect("ok");
            assert_eq!(echo.view().unwrap().tag().unwrap(), i.to_string());
        }
        chat.end().expect("end");
        assert!(chat.recv().is_none());
        // Unary beside them.
        let r = client.say(&request(ctx, &body, "u")).expect("say");
        assert_eq!(r.view().unwrap().handler().unwrap(), handler);
    }
}

fn tokio_client(addr: &str, handler: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let client = t::StreamsClient::new(AsyncChannel::connect(addr).await.expect("connect"));
        let ctx = client.inner().context().clone();
        let body = payload(BIG);
        let mut repeat = client.repeat(&request(&ctx, &body, "40")).await.expect("repeat");
        let mut tags = Vec::new();
        while let Some(r) = repeat.message().await.expect("an answer") {
            let v = r.view().unwrap();
            assert!(v.payload() == body.as_slice());
            assert_eq!(v.handler().unwrap(), handler);
            tags.push(v.tag().unwrap().to_string());
        }
        assert_eq!(tags.len(), 40);

        let (mut sink, mut answers) = client.join().expect("join");
        for i in 0..5 {
            sink.send(&request(&ctx, &body, &i.to_string()))
                .await
                .expect("send");
        }
        sink.end().await.expect("end");
        let joined = answers.message().await.expect("ok").expect("one answer");
        assert_eq!(joined.view().unwrap().tag().unwrap(), "5");
        assert!(answers.message().await.expect("ok").is_none());

        let (mut sink, mut echoes) = client.chat().expect("chat");
        for i in 0..10 {
            sink.send(&request(&ctx, &body, &i.to_string()))
                .await
                .expect("send");
            let echo = echoes.message().await.expect("ok").expect("an echo");
            assert_eq!(echo.view().unwrap().tag().unwrap(), i.to_string());
        }
        sink.end().await.expect("end");
        assert!(echoes.message().await.expect("ok").is_none());
    });
}

fn all_clients(addrs: &[Addr], handler: &str) {
    for addr in addrs {
        let addr = addr.to_string();
        blocking_client(&addr, handler);
        tokio_client(&addr, handler);
    }
}

#[test]
fn event_loop_streams_over_both_transports() {
    let dir = scratch("streams-loop");
    let services = Services::builder()
        .service(t::StreamsServer::new(LoopStreams))
        .unwrap()
        .build()
        .unwrap();
    let server = Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}/s.sock", dir.display()))
        .loops(1)
        .start()
        .expect("server");
    all_clients(server.addrs(), "loop");
    server.shutdown(Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tokio_streams_over_both_transports() {
    let dir = scratch("streams-tokio");
    let (addrs, stop, thread) = tokio_server(
        vec![
            "tcp://127.0.0.1:0".into(),
            format!("shm://{}/s.sock", dir.display()),
        ],
        || {
            AsyncServices::new()
                .service(t::AsyncStreamsServer::new(TokioStreams))
                .unwrap()
        },
    );
    all_clients(&addrs, "tokio");
    stop.send(()).unwrap();
    thread.join().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
