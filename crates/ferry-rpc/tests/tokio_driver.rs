//! The tokio driver over real sockets, TCP, TLS and shared memory: an `AsyncServer` on a thread of
//! its own (a current-thread runtime and a `LocalSet`, as a thread-per-core server runs it),
//! called by `AsyncChannel`s on the test's thread. Every test runs under a time bound.
//!
//! The server runs on another thread than the client because `ferry-shm`'s setup exchange
//! blocks the thread that connects until the server accepts.

#[macro_use]
mod tokio_support;

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Duration;

use std::net::TcpStream;
use std::sync::Arc;

use ferry_rpc::tokio::{AsyncChannel, AsyncServices};
use ferry_rpc::{ChannelConfig, Closed, Code, ConnLimits, LoopConfig};
use ferry_transport::{Payload, Received};

use tokio_support::{
    DELAY, ECHO, Echo, PANIC, SLOW, ServerThread, Transport, eventually, local_runtime, thread_sleeps,
    wait_until, within,
};

/// A channel with room for `window` calls in flight.
async fn channel(addr: &str, window: usize) -> AsyncChannel {
    let mut config = ChannelConfig::default();
    config.client.window = window;
    config.conn = tokio_support::tls::with_tls(config.conn);
    AsyncChannel::connect_with(addr, config).await.expect("connect")
}

async fn echo(chan: &AsyncChannel, payload: &[u8]) -> Vec<u8> {
    let response = chan
        .call_payload(ECHO, Payload::Bytes(payload))
        .await
        .expect("echo");
    response.frame().bytes().expect("a raw payload").to_vec()
}

every_transport!(
    concurrent_calls_complete_with_their_answers,
    client_deadline_aborts_the_handler,
    dropping_a_call_cancels_it_on_the_server,
    server_gone_fails_pending_and_later_calls,
    unknown_method_is_unimplemented,
    panicking_handler_is_internal_and_the_server_goes_on,
    shutdown_drains_calls_in_progress_and_refuses_new_ones,
    handoff_when_a_call_ends_in_the_poll_that_registered,
);

/// 64 calls on one channel, each a task of its own, complete with their own answers.
fn concurrent_calls_complete_with_their_answers(t: Transport) {
    within("64 concurrent calls", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let addr = server.addr.clone();
        local_runtime(async move {
            let chan = Rc::new(channel(&addr, 64).await);
            let tasks: Vec<_> = (0..64)
                .map(|i| {
                    let chan = Rc::clone(&chan);
                    tokio::task::spawn_local(async move {
                        // Sizes from a few bytes to over a shared-memory block.
                        let payload = format!("call {i} ").repeat(1 + i * 37).into_bytes();
                        let answer = echo(&chan, &payload).await;
                        assert_eq!(answer, payload, "call {i} got another call's answer");
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("call task");
            }
            // The channel is still good for one more, after all 64 ended.
            assert_eq!(echo(&chan, b"after").await, b"after");
        });
        server.stop();
    });
}

/// A slow handler and a client timeout: `DEADLINE_EXCEEDED`, and the handler is aborted.
fn client_deadline_aborts_the_handler(t: Transport) {
    within("deadline", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let (addr, flags) = (server.addr.clone(), server.flags.clone());
        local_runtime(async move {
            let chan = channel(&addr, 8).await;
            chan.set_timeout(Some(Duration::from_millis(200)));
            let err = chan
                .call_payload(SLOW, Payload::Bytes(b"slow"))
                .await
                .expect_err("too slow");
            assert_eq!(err.code, Code::DeadlineExceeded, "{err}");
            eventually("the slow handler is aborted", || {
                flags.dropped.load(Ordering::SeqCst) == 1
            })
            .await;
            assert_eq!(flags.started.load(Ordering::SeqCst), 1);
            assert_eq!(
                flags.finished.load(Ordering::SeqCst),
                0,
                "the handler ran to its end"
            );
            chan.set_timeout(None);
            assert_eq!(echo(&chan, b"next").await, b"next");
        });
        server.stop();
    });
}

/// A call future dropped while the handler runs: the server aborts the handler.
fn dropping_a_call_cancels_it_on_the_server(t: Transport) {
    within("drop cancels", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let (addr, flags) = (server.addr.clone(), server.flags.clone());
        local_runtime(async move {
            let chan = channel(&addr, 8).await;
            {
                let call = chan.call_payload(SLOW, Payload::Bytes(b"slow"));
                tokio::select! {
                    r = call => panic!("the slow call ended: {r:?}"),
                    () = wait_until(|| flags.started.load(Ordering::SeqCst) == 1) => {}
                }
                // The call future is dropped here.
            }
            eventually("the cancelled handler is aborted", || {
                flags.dropped.load(Ordering::SeqCst) == 1
            })
            .await;
            assert_eq!(flags.finished.load(Ordering::SeqCst), 0);
            // Its late answer (there is none) would be dropped; the channel goes on.
            assert_eq!(echo(&chan, b"next").await, b"next");
        });
        server.stop();
    });
}

/// The server goes away with calls in progress: each fails with `UNAVAILABLE`, and so do
/// later calls.
fn server_gone_fails_pending_and_later_calls(t: Transport) {
    within("server gone", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let (addr, flags) = (server.addr.clone(), server.flags.clone());
        local_runtime(async move {
            let chan = Rc::new(channel(&addr, 8).await);
            let calls: Vec<_> = (0..4)
                .map(|_| {
                    let chan = Rc::clone(&chan);
                    tokio::task::spawn_local(async move {
                        chan.call_payload(SLOW, Payload::Bytes(b"slow")).await.map(|_| ())
                    })
                })
                .collect();
            wait_until(|| flags.started.load(Ordering::SeqCst) == 4).await;
            server.kill();
            for call in calls {
                let err = call.await.expect("call task").expect_err("the server is gone");
                assert_eq!(err.code, Code::Unavailable, "{err}");
            }
            let err = chan
                .call_payload(ECHO, Payload::Bytes(b"later"))
                .await
                .expect_err("gone");
            assert_eq!(err.code, Code::Unavailable, "{err}");
        });
    });
}

fn unknown_method_is_unimplemented(t: Transport) {
    within("unknown method", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let addr = server.addr.clone();
        local_runtime(async move {
            let chan = channel(&addr, 8).await;
            let err = chan
                .call_payload(4242, Payload::Bytes(b"?"))
                .await
                .expect_err("no such method");
            assert_eq!(err.code, Code::Unimplemented, "{err}");
            assert_eq!(echo(&chan, b"next").await, b"next");
        });
        server.stop();
    });
}

fn panicking_handler_is_internal_and_the_server_goes_on(t: Transport) {
    within("panicking handler", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let addr = server.addr.clone();
        local_runtime(async move {
            let chan = channel(&addr, 8).await;
            let err = chan
                .call_payload(PANIC, Payload::Bytes(b"!"))
                .await
                .expect_err("it panics");
            assert_eq!(err.code, Code::Internal, "{err}");
            assert!(err.message.contains("the handler panicked: boom"), "{err}");
            assert_eq!(echo(&chan, b"next").await, b"next");
        });
        server.stop();
    });
}

/// Shutdown with a call in progress: the call finishes within the drain time; a call made
/// while draining is refused with `UNAVAILABLE`.
fn shutdown_drains_calls_in_progress_and_refuses_new_ones(t: Transport) {
    within("drain", 30, move || {
        let server = ServerThread::start(t, Duration::from_secs(10));
        let (addr, flags) = (server.addr.clone(), server.flags.clone());
        let stopping = server.stopper();
        local_runtime(async move {
            let chan = Rc::new(channel(&addr, 8).await);
            let in_progress = {
                let chan = Rc::clone(&chan);
                tokio::task::spawn_local(async move {
                    let r = chan
                        .call_payload(DELAY, Payload::Bytes(b"1500"))
                        .await
                        .expect("drained call");
                    r.frame().bytes().expect("raw").to_vec()
                })
            };
            wait_until(|| flags.started.load(Ordering::SeqCst) == 1).await;
            stopping.store(true, Ordering::SeqCst);
            // Until the server's shutdown future notices (it looks every 5 ms), calls succeed.
            let err = loop {
                match chan.call_payload(ECHO, Payload::Bytes(b"late")).await {
                    Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                    Err(err) => break err,
                }
            };
            assert_eq!(err.code, Code::Unavailable, "{err}");
            assert!(
                err.message.contains("shutting down"),
                "refused by the draining server: {err}"
            );
            assert!(!in_progress.is_finished(), "the refusal came after the drain");
            assert_eq!(in_progress.await.expect("task"), b"1500");
        });
        server.join();
    });
}

/// Regression: a call that polled the descriptor (taking its one waker from the call that had
/// registered before) and then found its own outcome ended without handing the registration
/// on, because it was not the one recorded as registered; the other call then waited for ever.
///
/// Call X is polled once; call S (another task) polls after it and registers; the thread then
/// blocks while X's answer arrives, so the reactor has not seen it when X is polled again: X
/// drives, finds its answer, registers in passing and ends. S must still get its answer.
fn handoff_when_a_call_ends_in_the_poll_that_registered(t: Transport) {
    within("registration handed on", 30, move || {
        let server = ServerThread::start(t, Duration::ZERO);
        let (addr, flags, server_tid) = (server.addr.clone(), server.flags.clone(), server.tid);
        local_runtime(async move {
            let chan = Rc::new(channel(&addr, 8).await);
            let mut x = Box::pin(chan.call_payload(DELAY, Payload::Bytes(b"200")));
            poll_fn(|cx| {
                assert!(x.as_mut().poll(cx).is_pending(), "X cannot be answered yet");
                Poll::Ready(())
            })
            .await;
            let s = {
                let chan = Rc::clone(&chan);
                tokio::task::spawn_local(async move {
                    let r = chan
                        .call_payload(DELAY, Payload::Bytes(b"1000"))
                        .await
                        .expect("S");
                    r.frame().bytes().expect("raw").to_vec()
                })
            };
            wait_until(|| flags.started.load(Ordering::SeqCst) == 2).await;
            // Block the thread (not the task) until X's answer has arrived: its handler ended
            // and the server's thread, whose runtime also runs the session that sends the
            // answer, sleeps with nothing left to do; over TCP the bytes are in our socket.
            let server_addr: Option<SocketAddr> =
                addr.strip_prefix("tcp://").map(|a| a.parse().expect("addr"));
            ferry_testkit::wait_until("X's answer to arrive", ferry_testkit::DEADLINE, || {
                flags.finished.load(Ordering::SeqCst) == 1
                    && thread_sleeps(server_tid)
                    && server_addr.is_none_or(|server| {
                        ferry_testkit::tcp_sockets()
                            .iter()
                            .any(|s| s.remote == server && s.rx_queue > 0)
                    })
            });
            poll_fn(|cx| match x.as_mut().poll(cx) {
                Poll::Ready(r) => {
                    assert_eq!(r.expect("X").frame().bytes().expect("raw"), b"200");
                    Poll::Ready(())
                }
                Poll::Pending => panic!("X's answer was in the socket"),
            })
            .await;
            drop(x);
            let answer = tokio::time::timeout(Duration::from_secs(5), s)
                .await
                .expect("S was left parked with no one registered")
                .expect("task");
            assert_eq!(answer, b"1000");
        });
        server.stop();
    });
}

/// A server whose sessions are held to `limits`, over TCP.
fn limited(limits: ConnLimits) -> ServerThread {
    let config = LoopConfig {
        connections: limits,
        ..LoopConfig::default()
    };
    ServerThread::serve("tcp://127.0.0.1:0", Duration::ZERO, None, config, |flags| {
        AsyncServices::new().service(Echo { flags }).expect("services")
    })
}

/// Reads `s` until the server closes it (fails the test past 10 s).
fn read_until_closed(s: TcpStream) {
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    ferry_testkit::load::read_until_closed(s);
}

/// `ConnLimits::max_connections` on the tokio driver, the event loop's policy: two sessions
/// are served, the third peer is closed at once and counted, and once one leaves a new one is
/// served.
#[test]
fn the_connection_past_max_connections_is_closed_and_counted_tokio() {
    within("max_connections", 30, || {
        let server = limited(ConnLimits {
            max_connections: 2,
            idle_timeout: None,
        });
        let (addr, metrics) = (server.addr.clone(), Arc::clone(&server.metrics));
        local_runtime(async move {
            let held = [channel(&addr, 1).await, channel(&addr, 1).await];
            for chan in &held {
                assert_eq!(echo(chan, b"held").await, b"held");
            }
            assert_eq!(metrics.connections(), 2);
            let over = TcpStream::connect(addr.trim_start_matches("tcp://")).expect("connect");
            tokio::task::spawn_blocking(move || read_until_closed(over))
                .await
                .expect("closed");
            eventually("the refusal counted", || metrics.closed_count(Closed::Limit) == 1).await;
            assert_eq!(echo(&held[0], b"still").await, b"still");
            drop(held);
            eventually("the held sessions counted out", || metrics.connections() == 0).await;
            let again = channel(&addr, 1).await;
            assert_eq!(echo(&again, b"again").await, b"again");
            assert_eq!(metrics.closed_count(Closed::Limit), 1, "within the limit again");
        });
        server.stop();
    });
}

/// `ConnLimits::idle_timeout` on the tokio driver: a session that says nothing past it is
/// closed and counted; one that calls more often than that stays open.
#[test]
fn a_session_idle_past_the_idle_timeout_is_closed_and_counted_tokio() {
    within("idle_timeout", 30, || {
        let server = limited(ConnLimits {
            idle_timeout: Some(Duration::from_millis(300)),
            ..ConnLimits::default()
        });
        let (addr, metrics) = (server.addr.clone(), Arc::clone(&server.metrics));
        local_runtime(async move {
            let idle = TcpStream::connect(addr.trim_start_matches("tcp://")).expect("connect");
            let busy = channel(&addr, 1).await;
            // The busy session calls until the idle one is closed: each call is sooner after
            // the last than the timeout is long, however slow the machine, since the idle one
            // is closed only after a whole timeout of silence.
            let watcher = tokio::task::spawn_blocking(move || read_until_closed(idle));
            while !watcher.is_finished() {
                assert_eq!(echo(&busy, b"busy").await, b"busy");
            }
            watcher.await.expect("closed");
            assert_eq!(metrics.closed_count(Closed::Idle), 1);
            assert_eq!(echo(&busy, b"after").await, b"after");
            eventually("the idle session counted out", || metrics.connections() == 1).await;
        });
        server.stop();
    });
}
