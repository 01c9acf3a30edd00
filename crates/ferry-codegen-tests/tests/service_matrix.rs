//! Every shape of a generated service, run: the event-loop server (`Echo`, foreground and
//! background) and the tokio server (`AsyncEcho`), each over TCP, shared memory and UDP,
//! called through the generated client over the blocking `Channel`, an `EventLoop` with
//! continuations, and the tokio `AsyncChannel`; and the event-loop server over UDP and AF_XDP
//! (`xdp://`) between two network namespaces, through a bridge dropping 5 % of packets, with
//! every client.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::{payload, request, scratch, tokio_server};
use ferry::Context;
use ferry::rpc::tokio::{AsyncCall, AsyncChannel, AsyncRequest, AsyncServices};
use ferry::rpc::{
    Addr, Call, Channel, Code, Encoded, EventLoop, LoopConfig, LoopSession, Mode, Server, Services, Status,
};
use ferry_codegen_tests::generated::ferry::test::{self as t, all_kinds, other};

const BIG: usize = 8 << 10;

fn unsupported() -> Status {
    Status::new(Code::Unimplemented, "not used here")
}

/// The event-loop implementation: the handler's name tells which path answered.
struct LoopEcho;

impl t::Echo for LoopEcho {
    const SAY_LATER_MODE: Mode = Mode::Background;

    fn say<'a>(&self, call: &Call<'a>, request: t::SayRequestView<'a>) -> Result<t::SayResponse<'a>, Status> {
        echo(call.ctx(), request, "foreground")
    }

    fn say_later<'a>(
        &self,
        call: &Call<'a>,
        request: t::SayRequestView<'a>,
    ) -> Result<t::SayResponse<'a>, Status> {
        echo(call.ctx(), request, "background")
    }

    fn annotate<'a>(&self, _: &Call<'a>, _: other::NoteView<'a>) -> Result<other::Note<'a>, Status> {
        Err(unsupported())
    }

    fn describe<'a>(&self, _: &Call<'a>, _: t::AllKindsView<'a>) -> Result<all_kinds::Inner<'a>, Status> {
        Err(unsupported())
    }
}

fn echo<'a>(
    ctx: &'a Context,
    request: t::SayRequestView<'a>,
    handler: &str,
) -> Result<t::SayResponse<'a>, Status> {
    let mut response = t::SayResponse::new(ctx);
    response.set_payload(request.payload());
    response.set_tag(
        request
            .tag()
            .map_err(|e| Status::new(Code::InvalidArgument, e.to_string()))?,
    );
    response.set_handler(handler.to_string());
    Ok(response)
}

/// The tokio implementation.
struct TokioEcho;

impl t::AsyncEcho for TokioEcho {
    async fn say(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SayRequest<'static>>,
    ) -> Result<Encoded, Status> {
        let view = request.view()?;
        Encoded::message(&echo(call.ctx(), view, "async")?)
    }

    async fn say_later(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SayRequest<'static>>,
    ) -> Result<Encoded, Status> {
        // An await in the middle: the call is a task, other calls go on meanwhile.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let view = request.view()?;
        Encoded::message(&echo(call.ctx(), view, "async later")?)
    }

    async fn annotate(&self, _: AsyncCall, _: AsyncRequest<other::Note<'static>>) -> Result<Encoded, Status> {
        Err(unsupported())
    }

    async fn describe(&self, _: AsyncCall, _: AsyncRequest<t::AllKinds<'static>>) -> Result<Encoded, Status> {
        Err(unsupported())
    }
}

/// What each client shape checks: `say` and `say_later`, large and small, answered by the
/// expected handlers (`names`: foreground, background).
fn blocking_client(addr: &str, names: [&str; 2]) {
    let client = t::EchoClient::new(Channel::connect(addr).expect("connect"));
    let ctx = client.inner().context();
    for n in [3, BIG] {
        let body = payload(n);
        let r = client.say(&request(ctx, &body, "b")).expect("say");
        let v = r.view().unwrap();
        assert!(v.payload() == body.as_slice());
        assert_eq!((v.tag().unwrap(), v.handler().unwrap()), ("b", names[0]));
        let r = client.say_later(&request(ctx, &body, "b2")).expect("say_later");
        assert_eq!(r.view().unwrap().handler().unwrap(), names[1]);
    }
}

fn loop_client(addr: &Addr, names: [&str; 2]) {
    let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
    let id = lp.connect(addr).expect("connect");
    let client = t::EchoClient::new(LoopSession {
        id,
        timeout: Some(Duration::from_secs(10)),
    });
    let ctx = lp.context(id).unwrap();
    let got: Rc<RefCell<Vec<(usize, String)>>> = Rc::default();
    let body = payload(BIG);
    for i in 0..8 {
        let out = got.clone();
        let want = body.clone();
        let req = request(&ctx, &body, "l");
        let k = move |_: &mut EventLoop, r: Result<t::SayResponseView<'_>, Status>| {
            let v = r.expect("call");
            assert!(v.payload() == want.as_slice());
            out.borrow_mut().push((i, v.handler().unwrap().to_string()));
        };
        if i % 2 == 0 {
            client.say(&mut lp, &req, k)
        } else {
            client.say_later(&mut lp, &req, k)
        }
        .expect("start");
    }
    let until = std::time::Instant::now() + Duration::from_secs(10);
    lp.run_until(|_| got.borrow().len() == 8 || std::time::Instant::now() > until);
    let got = got.borrow();
    assert_eq!(got.len(), 8, "every continuation ran");
    for (i, handler) in got.iter() {
        assert_eq!(handler, names[i % 2]);
    }
}

fn tokio_client(addr: &str, names: [&str; 2]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let client = t::EchoClient::new(AsyncChannel::connect(addr).await.expect("connect"));
        let ctx = client.inner().context().clone();
        let body = payload(BIG);
        // Eight calls in flight at once on one channel.
        let reqs: Vec<t::SayRequest<'_>> = (0..8).map(|_| request(&ctx, &body, "a")).collect();
        let calls = reqs.iter().enumerate().map(|(i, req)| {
            let client = &client;
            async move {
                let r = if i % 2 == 0 {
                    client.say(req).await
                } else {
                    client.say_later(req).await
                };
                (i, r)
            }
        });
        for (i, r) in futures_join(calls.collect()).await {
            let r = r.expect("call");
            let v = r.view().unwrap();
            assert!(v.payload() == body.as_slice());
            assert_eq!(v.handler().unwrap(), names[i % 2]);
        }
    });
}

/// Polls the futures together on this task until all are done (`join_all` without a
/// dependency for it).
async fn futures_join<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("done")).collect()
}

fn all_clients(addrs: &[Addr], names: [&str; 2]) {
    for addr in addrs {
        eprintln!("{addr}: blocking, event loop, tokio");
        blocking_client(&addr.to_string(), names);
        loop_client(addr, names);
        tokio_client(&addr.to_string(), names);
    }
}

#[test]
fn event_loop_server_with_every_client_over_tcp_shm_and_udp() {
    let dir = scratch("matrix-loop");
    let services = Services::builder()
        .service(t::EchoServer::new(LoopEcho))
        .unwrap()
        .build()
        .unwrap();
    let server = Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}/s.sock", dir.display()))
        .listen("udp://127.0.0.1:0")
        .loops(1)
        .start()
        .expect("server");
    all_clients(server.addrs(), ["foreground", "background"]);
    server.shutdown(Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tokio_server_with_every_client_over_tcp_shm_and_udp() {
    let dir = scratch("matrix-tokio");
    let (addrs, stop, thread) = tokio_server(
        vec![
            "tcp://127.0.0.1:0".into(),
            format!("shm://{}/s.sock", dir.display()),
            "udp://127.0.0.1:0".into(),
        ],
        || {
            AsyncServices::new()
                .service(t::AsyncEchoServer::new(TokioEcho))
                .unwrap()
        },
    );
    all_clients(&addrs, ["async", "async later"]);
    stop.send(()).unwrap();
    thread.join().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

/// The event-loop server over `udp://` and `xdp://` in namespace `b` (AF_XDP on its veth:
/// native XDP, copy mode), every client shape calling from namespace `a`, through a bridge
/// that drops 5 % of the packets (nftables): every call answered by the right handler, and
/// packets were lost on the way. Without root, namespaces, nftables or AF_XDP the test prints
/// SKIPPED (and fails with `FERRY_REQUIRE_KERNEL_FEATURES` set).
#[test]
fn event_loop_server_with_every_client_over_udp_and_xdp_under_loss() {
    const TEST: &str = "event_loop_server_with_every_client_over_udp_and_xdp_under_loss";
    let net = match ferry_testkit::netns::VethPair::new("cm", Some(5), 1500) {
        Ok(net) => net,
        Err(e) => return ferry_testkit::tools::skip(TEST, &format!("no network namespaces: {e}")),
    };
    let started = std::thread::scope(|s| {
        s.spawn(|| {
            net.b.enter()?;
            let services = Services::builder()
                .service(t::EchoServer::new(LoopEcho))
                .map_err(|e| e.to_string())?
                .build()
                .map_err(|e| e.to_string())?;
            // Its loop threads are spawned from here: they live in namespace `b` too.
            Server::builder(services)
                .listen(&format!(
                    "xdp://{}/0@{}:0",
                    net.b_if,
                    ferry_testkit::netns::VethPair::B_IP
                ))
                .loops(1)
                .start()
                .map_err(|e| e.to_string())
        })
        .join()
        .expect("the server thread")
    });
    let server = match started {
        Ok(server) => server,
        Err(e) => return ferry_testkit::tools::skip(TEST, &format!("AF_XDP unavailable: {e}")),
    };
    // The client reaches AF_XDP through its own interface.
    let clients: Vec<Addr> = (server.addrs().iter())
        .map(|a| match a {
            Addr::Xdp { addr, .. } => Addr::Xdp {
                ifname: net.a_if.clone(),
                queue: 0,
                addr: *addr,
            },
            other => other.clone(),
        })
        .collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            net.a.enter().expect("enter namespace a");
            all_clients(&clients, ["foreground", "background"]);
        })
        .join()
        .expect("the clients");
    });
    server.shutdown(Duration::from_secs(1));
    assert!(
        net.dropped().expect("the bridge's counter") > 0,
        "5 % loss and no packet dropped"
    );
}
