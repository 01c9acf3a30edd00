//! The tokio driver against the blocking one, over TCP and shared memory: a blocking `Channel`
//! on a std thread calls an `AsyncServer`, and an `AsyncChannel` calls an event-loop `Server`.
//! Also: a TCP client that sends and never reads stalls its own session, it does not make the
//! server buffer without bound.

#[macro_use]
mod tokio_support;

use std::rc::Rc;
use std::time::{Duration, Instant};

use ferry_buf::{Pool, PoolConfig};
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{
    Call, Channel, ChannelConfig, Code, MethodInfo, Mode, Reply, Request, Server, Service, Services, Shape,
    Status,
};
use ferry_transport::{Meta, Payload, Received, TransportError, method_id};

use tokio_support::{ECHO, ServerThread, Transport, local_runtime, within};

/// The event loop's echo: a raw `Service` written by hand.
struct LoopEcho;

impl Service for LoopEcho {
    fn methods(&self) -> Vec<MethodInfo> {
        let path = "/ferry.test.AsyncEcho/Echo";
        vec![MethodInfo {
            path,
            id: method_id(path),
            request: None,
            mode: Mode::Foreground,
            shape: Shape::Unary,
        }]
    }

    fn call<'a>(&self, _call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        let bytes = request
            .incoming()
            .bytes()
            .ok_or_else(|| Status::new(Code::InvalidArgument, "not a raw payload"))?;
        reply.send_payload(Payload::Bytes(bytes))
    }
}

both!(
    blocking_channel_calls_async_server,
    async_channel_calls_event_loop_server
);

fn blocking_channel_calls_async_server(t: Transport) {
    within("Channel -> AsyncServer", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let chan = Channel::connect(&server.addr).expect("connect");
        for i in 0..100 {
            let payload = format!("blocking {i}").repeat(1 + i * 13).into_bytes();
            let r = chan.call_payload(ECHO, Payload::Bytes(&payload)).expect("echo");
            assert_eq!(r.frame().bytes().expect("raw"), payload);
        }
        let err = chan
            .call_payload(4242, Payload::Bytes(b"?"))
            .expect_err("no such method");
        assert_eq!(err.code, Code::Unimplemented, "{err}");
        drop(chan);
        server.stop();
    });
}

fn async_channel_calls_event_loop_server(t: Transport) {
    within("AsyncChannel -> Server", 30, move || {
        let services = Services::builder()
            .service(LoopEcho)
            .expect("add")
            .build()
            .expect("services");
        let (addr, _scratch) = t.bind_addr();
        let server = Server::builder(services)
            .listen(&addr)
            .loops(1)
            .start()
            .expect("start the event-loop server");
        let addr = server.addrs()[0].to_string();
        local_runtime(async move {
            let mut config = ChannelConfig::default();
            config.client.window = 32;
            let chan = Rc::new(AsyncChannel::connect_with(&addr, config).await.expect("connect"));
            let tasks: Vec<_> = (0..32)
                .map(|i| {
                    let chan = Rc::clone(&chan);
                    tokio::task::spawn_local(async move {
                        let payload = format!("async {i} ").repeat(1 + i * 53).into_bytes();
                        let r = chan
                            .call_payload(ECHO, Payload::Bytes(&payload))
                            .await
                            .expect("echo");
                        assert_eq!(r.frame().bytes().expect("raw"), payload);
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("call task");
            }
            let err = chan
                .call_payload(4242, Payload::Bytes(b"?"))
                .await
                .expect_err("no such method");
            assert_eq!(err.code, Code::Unimplemented, "{err}");
        });
        server.shutdown(Duration::ZERO);
    });
}

/// A raw TCP client sends 64 KiB echo requests as fast as the socket takes them and never
/// reads an answer. The session must stop reading once its answers back up (they wait in its
/// backlog, bounded by the calls in progress), so the client's sends stall after what the
/// socket buffers hold; a server that kept reading would let the client send without end
/// (here: up to the 512 MiB cap).
#[test]
fn tcp_client_that_never_reads_stalls_its_session() {
    within("a client that never reads", 60, || {
        let server = ServerThread::start(Transport::Tcp, Duration::ZERO);
        let addr = server.addr.strip_prefix("tcp://").expect("tcp").to_string();
        let pool = Pool::new(PoolConfig {
            max_bytes: 256 << 20,
            ..PoolConfig::default()
        })
        .expect("pool");
        let mut conn = ferry_net::Connection::connect(addr.as_str(), &pool, &ferry_net::Config::default())
            .expect("connect");
        conn.set_nonblocking(true);
        let payload = vec![7u8; 64 << 10];
        const CAP: usize = 512 << 20;
        let mut sent = 0usize;
        let mut id = 0u64;
        let mut progress = Instant::now();
        while sent < CAP && progress.elapsed() < Duration::from_secs(1) {
            match conn.send_payload(Meta::new(ECHO, id), Payload::Bytes(&payload)) {
                Ok(()) => {
                    sent += payload.len();
                    id += 1;
                    progress = Instant::now();
                }
                Err(TransportError::WouldBlock) => {
                    let _ = conn.flush();
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("sending: {e}"),
            }
        }
        assert!(
            sent < CAP,
            "the server read {sent} bytes of requests from a client that never reads its answers"
        );
        eprintln!("sends stalled after {} MiB ({id} requests)", sent >> 20);
        drop(conn);
        server.stop();
    });
}
