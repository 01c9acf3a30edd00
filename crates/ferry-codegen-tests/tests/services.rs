//! The service code `ferry-build` generates, end to end: the generated server traits
//! implemented here, served by a real `ferry_rpc::Server` over TCP loopback, and called
//! through the generated client stubs (blocking and continuation). `service_matrix.rs` runs
//! every server and client shape (blocking, event loop, tokio) over both transports.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Duration;

use ferry::rpc::tokio::{AsyncCall, AsyncChannel, AsyncRequest, AsyncService, AsyncServices};
use ferry::rpc::{
    Call, Channel, Code, Encoded, EventLoop, LoopConfig, LoopSession, Mode, Server, Service, Services, Status,
};
use ferry::{Context, MessageView as _};
use ferry_codegen_tests::generated::ferry::test::{self as t, all_kinds, other};

/// Large enough to travel by reference (the default threshold is 512 bytes).
const BIG: usize = 16 << 10;

fn invalid(e: ferry::DecodeError) -> Status {
    Status::new(Code::InvalidArgument, e.to_string())
}

/// The `Echo` implementation: `say` in the foreground, `say_later` on the worker pool.
#[derive(Debug, Default)]
struct EchoImpl {
    /// For every `say`: whether the response's payload referenced the request's bytes (the
    /// same memory, as a zero-copy value) rather than a copy.
    by_reference: Mutex<Vec<bool>>,
}

impl EchoImpl {
    fn echo<'a>(
        call: &Call<'a>,
        request: t::SayRequestView<'a>,
        handler: &str,
    ) -> Result<t::SayResponse<'a>, Status> {
        let mut response = t::SayResponse::new(call.ctx());
        // Borrows the request where it arrived: the zero-copy echo.
        response.set_payload(request.payload());
        response.set_tag(request.tag().map_err(invalid)?);
        response.set_handler(handler.to_string());
        Ok(response)
    }
}

impl t::Echo for EchoImpl {
    const SAY_LATER_MODE: Mode = Mode::Background;

    fn say<'a>(&self, call: &Call<'a>, request: t::SayRequestView<'a>) -> Result<t::SayResponse<'a>, Status> {
        let response = Self::echo(call, request, "foreground")?;
        let same = response.payload().as_ptr() == request.payload().as_ptr();
        let zero_copy = response.payload_hybrid().is_zero_copy();
        self.by_reference.lock().unwrap().push(same && zero_copy);
        Ok(response)
    }

    fn say_later<'a>(
        &self,
        call: &Call<'a>,
        request: t::SayRequestView<'a>,
    ) -> Result<t::SayResponse<'a>, Status> {
        Self::echo(call, request, "background")
    }

    fn annotate<'a>(&self, call: &Call<'a>, request: other::NoteView<'a>) -> Result<other::Note<'a>, Status> {
        let mut note = request.to_message(call.ctx()).map_err(invalid)?;
        note.set_level(request.level() + 1);
        Ok(note)
    }

    fn describe<'a>(
        &self,
        call: &Call<'a>,
        request: t::AllKindsView<'a>,
    ) -> Result<all_kinds::Inner<'a>, Status> {
        if request.f_int32() < 0 {
            return Err(Status::new(Code::OutOfRange, "negative"));
        }
        let mut inner = all_kinds::Inner::new(call.ctx());
        inner.set_label(request.f_string().map_err(invalid)?);
        Ok(inner)
    }
}

fn serve(service: impl Service) -> Server {
    let services = Services::builder()
        .service(service)
        .expect("add")
        .workers(1)
        .build()
        .expect("services");
    Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .loops(1)
        .start()
        .expect("server starts")
}

fn say_request<'a>(ctx: &'a Context, payload: &[u8], tag: &'a str) -> t::SayRequest<'a> {
    let mut req = t::SayRequest::new(ctx);
    match ctx.pool() {
        Some(pool) if payload.len() >= 512 => req.set_payload(pool.copy_from(payload).expect("pool")),
        _ => req.set_payload(payload.to_vec()),
    }
    req.set_tag(tag);
    req
}

#[test]
fn methods_report_paths_ids_request_types_and_modes() {
    let infos = t::EchoServer::new(EchoImpl::default()).methods();
    let got: Vec<(&str, u16, Mode)> = infos.iter().map(|i| (i.path, i.id, i.mode)).collect();
    assert_eq!(
        got,
        [
            ("/ferry.test.Echo/Say", t::echo_service::SAY, Mode::Foreground),
            (
                "/ferry.test.Echo/SayLater",
                t::echo_service::SAY_LATER,
                Mode::Background
            ),
            (
                "/ferry.test.Echo/Annotate",
                t::echo_service::ANNOTATE,
                Mode::Foreground
            ),
            (
                "/ferry.test.Echo/Describe",
                t::echo_service::DESCRIBE,
                Mode::Foreground
            ),
        ]
    );
    let requests: Vec<&str> = infos.iter().map(|i| i.request.expect("typed").name).collect();
    assert_eq!(
        requests,
        [
            "ferry.test.SayRequest",
            "ferry.test.SayRequest",
            "ferry.test.other.Note",
            "ferry.test.AllKinds"
        ]
    );
    assert!(std::ptr::eq(infos[0].request.unwrap(), &t::SAY_REQUEST_DESC));
    assert!(std::ptr::eq(infos[2].request.unwrap(), &other::NOTE_DESC));
}

#[test]
fn generated_server_and_client_over_tcp() {
    let echo = std::sync::Arc::new(EchoImpl::default());
    let server = serve(t::EchoServer::from_arc(echo.clone()));
    let addr = server.addrs()[0].to_string();
    let client = t::EchoClient::new(Channel::connect(&addr).expect("connect"));
    let ctx = client.inner().context();

    // Foreground, a large payload: echoed by reference from the request's own buffer.
    let big: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    let resp = client.say(&say_request(ctx, &big, "big")).expect("say");
    let view = resp.view().expect("response decodes");
    assert!(view.payload() == big.as_slice(), "payload echoed");
    assert_eq!(view.tag().unwrap(), "big");
    assert_eq!(view.handler().unwrap(), "foreground");
    assert_eq!(echo.by_reference.lock().unwrap().as_slice(), &[true]);

    // A small one (copied) too.
    let resp = client.say(&say_request(ctx, b"hi", "small")).expect("say small");
    assert_eq!(resp.view().unwrap().payload(), b"hi");

    // Background: on the worker pool, same answer.
    let resp = client
        .say_later(&say_request(ctx, &big, "later"))
        .expect("say_later");
    let view = resp.view().unwrap();
    assert!(view.payload() == big.as_slice());
    assert_eq!(view.handler().unwrap(), "background");

    // A type from another package, both ways.
    let mut note = other::Note::new(ctx);
    note.set_level(41);
    note.set_text("noted");
    let resp = client.annotate(&note).expect("annotate");
    let view = resp.view().unwrap();
    assert_eq!((view.level(), view.text().unwrap()), (42, "noted"));

    // A nested response type, and a handler's status reaching the caller.
    let mut all = t::AllKinds::new(ctx);
    all.set_f_string("described");
    let resp = client.describe(&all).expect("describe");
    assert_eq!(resp.view().unwrap().label().unwrap(), "described");
    all.set_f_int32(-1);
    let err = client.describe(&all).expect_err("negative");
    assert_eq!((err.code, err.message.as_str()), (Code::OutOfRange, "negative"));

    // A method id the server does not know.
    let unknown = 1u16;
    assert!(![t::echo_service::SAY, t::echo_service::SAY_LATER].contains(&unknown));
    let err = client
        .inner()
        .call::<t::SayResponse<'static>>(unknown, &say_request(ctx, b"?", "?"))
        .expect_err("unknown method");
    assert_eq!(err.code, Code::Unimplemented, "{err:?}");

    // The channel still works after the refusal.
    assert!(client.say(&say_request(ctx, b"again", "")).is_ok());
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn generated_continuation_client_on_an_event_loop() {
    let server = serve(t::EchoServer::new(EchoImpl::default()));
    let addr = server.addrs()[0].clone();
    let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
    let session = lp.connect(&addr).expect("connect");
    let client = t::EchoClient::new(LoopSession {
        id: session,
        timeout: Some(Duration::from_secs(10)),
    });
    let ctx = lp.context(session).expect("session context");
    let big = vec![7u8; BIG];
    type Echoed = Result<(Vec<u8>, String), Status>;
    let got: Rc<RefCell<Option<Echoed>>> = Rc::default();
    let slot = got.clone();
    client
        .say(&mut lp, &say_request(&ctx, &big, "loop"), move |_, result| {
            let r = result.map(|v| (v.payload().to_vec(), v.handler().unwrap().to_string()));
            *slot.borrow_mut() = Some(r);
        })
        .expect("call starts");
    lp.run_until(|_| got.borrow().is_some());
    let (payload, handler) = got.take().unwrap().expect("say");
    assert!(payload == big);
    assert_eq!(handler, "foreground");
    drop(lp);
    server.shutdown(Duration::from_secs(1));
}

/// Methods named like Rust keywords and like the generated code's own names, in a service
/// whose trait is renamed (`awkward` would be `Awkward`, the message): each answers with its
/// own offset, so a call that reached the wrong method shows.
struct AwkwardImpl;

fn bump<'a>(call: &Call<'a>, request: t::NodeView<'a>, by: i64) -> Result<t::Node<'a>, Status> {
    let mut node = t::Node::new(call.ctx());
    node.set_value(request.value() + by);
    Ok(node)
}

impl t::Awkward2 for AwkwardImpl {
    fn r#type<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 1)
    }
    fn r#match<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 2)
    }
    fn self_<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 3)
    }
    fn r#gen<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 4)
    }
    fn new_2<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 5)
    }
    fn inner_2<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 6)
    }
    fn name<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 7)
    }
    fn call<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 8)
    }
    fn clone<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 9)
    }
    fn get_foo<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 10)
    }
    fn get_foo_2<'a>(&self, call: &Call<'a>, request: t::NodeView<'a>) -> Result<t::Node<'a>, Status> {
        bump(call, request, 11)
    }
    fn tee<'a>(&self, call: &Call<'a>, request: t::TView<'a>) -> Result<t::T<'a>, Status> {
        let mut reply = t::T::new(call.ctx());
        reply.set_t(request.t() * 2);
        Ok(reply)
    }
}

#[test]
fn awkward_names_dispatch_to_the_right_method() {
    // The description module keeps NAME and METHODS; the methods' ids are numbered around them.
    assert_eq!(t::awkward_service::NAME, "ferry.test.awkward");
    assert_eq!(
        t::awkward_service::NAME_2,
        ferry::transport::method_id("/ferry.test.awkward/Name")
    );
    assert_eq!(
        t::awkward_service::NEW_2,
        ferry::transport::method_id("/ferry.test.awkward/New")
    );

    let server = serve(t::Awkward2Server::new(AwkwardImpl));
    let client = t::Awkward2Client::new(Channel::connect(&server.addrs()[0].to_string()).expect("connect"));
    let ctx = client.inner().context();
    let mut node = t::Node::new(ctx);
    node.set_value(100);
    type Client = t::Awkward2Client<Channel>;
    type Stub = fn(&Client, &t::Node<'_>) -> Result<ferry::rpc::Response<t::Node<'static>>, Status>;
    let calls: [(Stub, i64); 11] = [
        (Client::r#type, 1),
        (Client::r#match, 2),
        (Client::self_, 3),
        (Client::r#gen, 4),
        (Client::new_2, 5),
        (Client::inner_2, 6),
        (Client::name, 7),
        (Client::call, 8),
        (Client::clone, 9),
        (Client::get_foo, 10),
        (Client::get_foo_2, 11),
    ];
    for (i, (stub, by)) in calls.into_iter().enumerate() {
        let resp = stub(&client, &node).unwrap_or_else(|e| panic!("method {i}: {e}"));
        assert_eq!(resp.view().unwrap().value(), 100 + by, "method {i}");
    }
    let mut tee = t::T::new(ctx);
    tee.set_t(21);
    assert_eq!(client.tee(&tee).expect("tee").view().unwrap().t(), 42);
    server.shutdown(Duration::from_secs(1));
}

/// The async side: implemented with `async fn`, wrapped, registered (run in
/// `service_matrix.rs`).
struct AsyncEchoImpl;

impl t::AsyncEcho for AsyncEchoImpl {
    async fn say(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SayRequest<'static>>,
    ) -> Result<Encoded, Status> {
        let view = request.view()?;
        let mut response = t::SayResponse::new(call.ctx());
        response.set_payload(view.payload());
        Encoded::message(&response)
    }

    async fn say_later(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SayRequest<'static>>,
    ) -> Result<Encoded, Status> {
        <Self as t::AsyncEcho>::say(self, call, request).await
    }

    async fn annotate(
        &self,
        call: AsyncCall,
        request: AsyncRequest<other::Note<'static>>,
    ) -> Result<Encoded, Status> {
        let note = request.view()?.to_message(call.ctx()).map_err(invalid)?;
        Encoded::message(&note)
    }

    async fn describe(
        &self,
        _call: AsyncCall,
        _request: AsyncRequest<t::AllKinds<'static>>,
    ) -> Result<Encoded, Status> {
        Err(Status::new(Code::Unimplemented, "not here"))
    }
}

/// The async client's calls (a compile check of the generated async stub).
async fn call_async(client: &t::EchoClient<AsyncChannel>) -> Result<Vec<u8>, Status> {
    let ctx = client.inner().context();
    let resp = client.say(&say_request(ctx, b"async", "")).await?;
    Ok(resp.view()?.payload().to_vec())
}

#[test]
fn async_server_describes_its_methods() {
    let server = t::AsyncEchoServer::new(AsyncEchoImpl);
    let ids: Vec<u16> = server.methods().iter().map(|i| i.id).collect();
    assert_eq!(
        ids,
        [
            t::echo_service::SAY,
            t::echo_service::SAY_LATER,
            t::echo_service::ANNOTATE,
            t::echo_service::DESCRIBE
        ]
    );
    let services = AsyncServices::new().service(server.clone()).expect("add");
    assert!(AsyncServices::new().service(server).is_ok());
    // Registering a second copy of the same service fails: its methods' ids are taken.
    assert!(services.service(t::AsyncEchoServer::new(AsyncEchoImpl)).is_err());
    let _ = call_async;
}
