//! The host side of the engine: a few shared-memory sessions to the host (the paper's "many to
//! one to one": every gRPC connection's calls go through them), each an [`AsyncChannel`] on
//! the engine's thread, and the tasks that keep them connected.
//!
//! Calls arrive as [`Call`]s from the gRPC side. Each runs as a local task: it waits for room in
//! a session's request window, decodes the protobuf body into a Ferry message under the
//! session's context (large bytes and strings are referenced, then written once into the
//! session's shared pool when the message is sent), calls the host with the method's id, the
//! deadline and the metadata, and encodes the host's response into protobuf. A gRPC client
//! that goes away cancels the host call.
//!
//! A stream (any other shape) holds its room in the window for its whole life: it opens a
//! host stream ([`AsyncChannel::open`]) and passes messages each way, each as the other side
//! takes it: a request message is read from the gRPC body ([`Requests`]) only once the one
//! before went into the host stream's window, and an answer is taken from the host stream
//! (granting its window back) only once the gRPC side has room for it ([`Answers::room`]). The
//! host's headers go before the first answer, its trailers and status at the end; a failure
//! on either side ends both, and a client that resets the stream cancels the host's.
//!
//! A session that loses its host (a failed call, or a heartbeat that gets no answer) is
//! reconnected every [`EngineConfig::retry`](super::EngineConfig::retry); meanwhile calls go
//! to the other sessions, and with none left they fail with `UNAVAILABLE`. A host that comes
//! back must describe the same table.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferry::rpc::tokio::AsyncChannel;
use ferry::rpc::{CallOptions, Code, Metadata, Status};
use ferry_reflect::protobuf::ProtobufLimits;
use tokio::sync::{Notify, Semaphore, SemaphorePermit, mpsc, oneshot};
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use super::EngineConfig;
use super::streams::{Answers, Requests};
use crate::generated::ferry::offload as proto;
use crate::host::PROTOCOL_VERSION;
use crate::table::{Route, Table};
use crate::translate::{decode_request, encode_response};

/// One gRPC call, as the gRPC side hands it to the host sessions.
pub(crate) struct Call {
    pub(crate) route: Arc<Route>,
    /// When the engine gives up on the call.
    pub(crate) deadline: Option<tokio::time::Instant>,
    pub(crate) metadata: Metadata,
    pub(crate) exchange: Exchange,
}

/// A call's messages, by the method's shape.
pub(crate) enum Exchange {
    /// A unary call: its request message and where its answer goes.
    Unary {
        /// The request message, protobuf, as the client sent it.
        body: Bytes,
        reply: oneshot::Sender<Result<Answer, Status>>,
    },
    /// A stream (any other shape): its request messages as the client sends them, and its
    /// answers as the client reads them.
    Stream { requests: Requests, answers: Answers },
}

/// The host's answer, encoded.
pub(crate) struct Answer {
    /// The response message, protobuf.
    pub(crate) body: Vec<u8>,
    /// The host's response headers.
    pub(crate) headers: Metadata,
    /// The host's trailers.
    pub(crate) trailers: Metadata,
}

/// One session to the host.
struct Session {
    chan: RefCell<Option<Rc<AsyncChannel>>>,
    /// Room in the session's request window.
    window: Rc<Semaphore>,
    /// Rung by a call that found the connection lost.
    lost: Notify,
}

/// The sessions and the table they serve.
pub(crate) struct Hosts {
    sessions: Vec<Rc<Session>>,
    next: Cell<usize>,
    table: Arc<Table>,
    config: EngineConfig,
    health: HealthReporter,
    up: Cell<usize>,
}

/// Connects the first session and reads the host's table: the engine serves nothing before.
/// Retries every `config.retry` until the host is there.
pub(crate) async fn first_table(config: &EngineConfig) -> (Rc<AsyncChannel>, Table) {
    let mut said = None;
    loop {
        match connect(config).await {
            Ok(pair) => return pair,
            Err(e) => {
                let why = e.to_string();
                if said.as_ref() != Some(&why) {
                    eprintln!("ferry gateway: waiting for the host at {}: {why}", config.host);
                    said = Some(why);
                }
                tokio::time::sleep(config.retry).await;
            }
        }
    }
}

/// Opens one session and asks for the table.
async fn connect(config: &EngineConfig) -> Result<(Rc<AsyncChannel>, Table), Status> {
    let chan = AsyncChannel::connect_with(&config.host, config.channel.clone()).await?;
    let mut request = proto::DescribeRequest::new(chan.context());
    request.set_version(PROTOCOL_VERSION);
    let response = chan
        .call_with::<proto::Description<'static>>(
            proto::host_service::DESCRIBE,
            &request,
            &CallOptions {
                timeout: Some(config.retry.max(Duration::from_secs(5))),
                ..CallOptions::default()
            },
        )
        .await?;
    let table = Table::from_description(&response.view()?).map_err(|e| {
        Status::new(
            Code::FailedPrecondition,
            format!("the host's description table: {e}"),
        )
    })?;
    Ok((Rc::new(chan), table))
}

impl Hosts {
    /// The sessions, the first already connected; the others connect in the background.
    pub(crate) fn new(
        config: EngineConfig,
        first: Rc<AsyncChannel>,
        table: Arc<Table>,
        health: HealthReporter,
    ) -> Rc<Hosts> {
        let window = config.channel.client.window;
        let sessions = (0..config.sessions.max(1))
            .map(|_| {
                Rc::new(Session {
                    chan: RefCell::new(None),
                    window: Rc::new(Semaphore::new(window)),
                    lost: Notify::new(),
                })
            })
            .collect::<Vec<_>>();
        *sessions[0].chan.borrow_mut() = Some(first);
        let hosts = Rc::new(Hosts {
            sessions,
            next: Cell::new(0),
            table,
            config,
            health,
            up: Cell::new(1),
        });
        for (i, _) in hosts.sessions.iter().enumerate() {
            tokio::task::spawn_local(hosts.clone().keep(i));
        }
        hosts
    }

    /// Forwards calls, each in a task of its own, until the gRPC side is gone.
    pub(crate) async fn serve(self: Rc<Hosts>, mut calls: mpsc::Receiver<Call>) {
        self.report().await;
        while let Some(call) = calls.recv().await {
            tokio::task::spawn_local(self.clone().forward(call));
        }
    }

    /// Keeps session `i` connected: heartbeats while it is up, reconnects when it is lost.
    async fn keep(self: Rc<Hosts>, i: usize) {
        let session = self.sessions[i].clone();
        let mut sequence = 0u64;
        loop {
            let chan = session.chan.borrow().clone();
            match chan {
                Some(chan) => {
                    let told = tokio::select! {
                        () = tokio::time::sleep(self.config.heartbeat) => false,
                        () = session.lost.notified() => true,
                    };
                    // The heartbeat takes a place in the window like any call. A session whose
                    // window is full is busy: its calls will tell whether the host answers.
                    let permit = session.window.try_acquire();
                    if permit.is_err() && !told {
                        continue;
                    }
                    sequence += 1;
                    let lost = match ping(&chan, sequence, self.config.heartbeat).await {
                        Ok(()) => false,
                        // No connection, or no answer in time. Anything else (a full window
                        // when told of a loss that was not one) is an answer.
                        Err(s) => matches!(s.code, Code::Unavailable | Code::DeadlineExceeded),
                    };
                    drop(permit);
                    if lost {
                        *session.chan.borrow_mut() = None;
                        self.up.set(self.up.get() - 1);
                        eprintln!("ferry gateway: session {i} lost the host");
                        self.report().await;
                    }
                }
                None => {
                    tokio::time::sleep(self.config.retry).await;
                    match connect(&self.config).await {
                        Ok((chan, table)) if table == *self.table => {
                            *session.chan.borrow_mut() = Some(chan);
                            self.up.set(self.up.get() + 1);
                            eprintln!("ferry gateway: session {i} connected to the host");
                            self.report().await;
                        }
                        Ok(_) => eprintln!(
                            "ferry gateway: session {i}: the host describes another table than the one served; restart the engine to serve it"
                        ),
                        Err(_) => {}
                    }
                }
            }
        }
    }

    /// Tells the health service whether any session is up.
    async fn report(&self) {
        let status = if self.up.get() > 0 {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        self.health.set_service_status("", status).await;
        for s in self.table.services() {
            self.health.set_service_status(s, status).await;
        }
    }

    /// A connected session, round robin (`UNAVAILABLE` if none is).
    fn pick(&self) -> Result<(Rc<Session>, Rc<AsyncChannel>), Status> {
        let n = self.sessions.len();
        for k in 0..n {
            let i = (self.next.get() + k) % n;
            let s = &self.sessions[i];
            let chan = s.chan.borrow().clone();
            if let Some(chan) = chan {
                self.next.set((i + 1) % n);
                return Ok((s.clone(), chan));
            }
        }
        Err(Status::new(
            Code::Unavailable,
            "no host is connected to the engine",
        ))
    }

    /// The limits requests are decoded with.
    fn protobuf_limits(&self) -> ProtobufLimits {
        ProtobufLimits {
            max_depth: self.config.limits.max_depth,
            max_len: self.config.max_message,
        }
    }

    /// Forwards one call and sends its answer back (unless the client has gone, which cancels
    /// the host call).
    async fn forward(self: Rc<Hosts>, call: Call) {
        let Call {
            route,
            deadline,
            metadata,
            exchange,
        } = call;
        let (body, mut reply) = match exchange {
            Exchange::Unary { body, reply } => (body, reply),
            Exchange::Stream { requests, answers } => {
                return self.stream(&route, deadline, metadata, requests, answers).await;
            }
        };
        // The client's budget covers the wait for room in a window too.
        let outcome = tokio::select! {
            outcome = self.call_host(&route, &body, deadline, metadata) => outcome,
            () = reply.closed() => return,
        };
        let _ = reply.send(outcome);
    }

    async fn call_host(
        &self,
        route: &Route,
        body: &[u8],
        deadline: Option<tokio::time::Instant>,
        metadata: Metadata,
    ) -> Result<Answer, Status> {
        let (session, chan) = self.pick()?;
        let _permit = session.room(deadline).await?;
        let request = decode_request(&self.table, route, body, chan.context(), &self.protobuf_limits())?;
        let options = CallOptions {
            timeout: remaining(deadline),
            metadata,
        };
        let response = chan
            .call_with::<()>(route.id, &request, &options)
            .await
            .map_err(|status| session.failed(status))?;
        let body = encode_response(&self.table, route, response.frame(), &self.config.limits)?;
        Ok(Answer {
            body,
            headers: response.headers().clone(),
            trailers: response.trailers().clone(),
        })
    }
}

impl Hosts {
    /// Forwards one stream (any shape but unary): opens a host stream on a session, with the
    /// call's metadata and what is left of its deadline, and passes messages on each way as
    /// the other side takes them. The host's end (its trailers and status), or the first
    /// failure on either side, ends the gRPC stream; a client that goes away (`RST_STREAM`)
    /// drops the host stream, which cancels it.
    async fn stream(
        &self,
        route: &Route,
        deadline: Option<tokio::time::Instant>,
        metadata: Metadata,
        mut requests: Requests,
        mut answers: Answers,
    ) {
        let gone = answers.gone();
        let forwarded = self.forward_stream(route, deadline, metadata, &mut requests, &mut answers);
        let within = async {
            match deadline {
                None => forwarded.await,
                Some(at) => tokio::time::timeout_at(at, forwarded).await.unwrap_or_else(|_| {
                    Err(Status::new(Code::DeadlineExceeded, "deadline exceeded (engine)"))
                }),
            }
        };
        let end = tokio::select! {
            end = within => end,
            () = gone => return,
        };
        answers.end(end);
    }

    async fn forward_stream(
        &self,
        route: &Route,
        deadline: Option<tokio::time::Instant>,
        metadata: Metadata,
        requests: &mut Requests,
        answers: &mut Answers,
    ) -> Result<Metadata, Status> {
        let (session, chan) = self.pick()?;
        let _permit = session.room(deadline).await?;
        let options = CallOptions {
            timeout: remaining(deadline),
            metadata,
        };
        let (mut sink, mut responses) = chan
            .open(route.id, &options)
            .map_err(|status| session.failed(status))?;
        let limits = self.protobuf_limits();
        // A request message is read from the body only once the one before is in the host's
        // window. A request that cannot be forwarded (malformed, or the client reset the
        // stream) ends the stream; once the host stream is over, its end comes with the answers.
        let send = async {
            while let Some(body) = requests.next().await? {
                let request = decode_request(&self.table, route, &body, chan.context(), &limits)?;
                if sink.send(&request).await.is_err() {
                    return std::future::pending().await;
                }
            }
            let _ = sink.end().await;
            std::future::pending().await
        };
        // An answer is taken from the host stream (which grants the host its window back) only
        // once the gRPC client has room for it.
        let receive = async {
            let mut headers_sent = false;
            loop {
                let Some(room) = answers.room().await else {
                    return Err(Status::new(Code::Cancelled, "the client went away"));
                };
                let Some(response) = responses.message().await? else {
                    break;
                };
                if !std::mem::replace(&mut headers_sent, true) {
                    answers.headers(responses.headers().await.clone());
                }
                let body = encode_response(&self.table, route, response.frame(), &self.config.limits)?;
                answers.send(room, body);
            }
            answers.headers(responses.headers().await.clone());
            Ok(responses.trailers().cloned().unwrap_or_default())
        };
        let end = tokio::select! {
            end = receive => end,
            end = send => end,
        };
        end.map_err(|status| session.failed(status))
    }
}

impl Session {
    /// A place in the session's request window (the client's budget covers the wait).
    async fn room(&self, deadline: Option<tokio::time::Instant>) -> Result<SemaphorePermit<'_>, Status> {
        let permit = self.window.acquire();
        let permit = match deadline {
            None => permit.await,
            Some(at) => tokio::time::timeout_at(at, permit).await.map_err(|_| {
                Status::new(
                    Code::DeadlineExceeded,
                    "deadline exceeded waiting for room in a session's window",
                )
            })?,
        };
        permit.map_err(|_| Status::new(Code::Unavailable, "the session is closed"))
    }

    /// `status`, a call's failure; one that says the connection is lost tells the session's
    /// keeper.
    fn failed(&self, status: Status) -> Status {
        if status.code == Code::Unavailable {
            self.lost.notify_one();
        }
        status
    }
}

/// What is left of the budget of a call ending at `deadline` (at least a microsecond: zero
/// would mean no deadline).
fn remaining(deadline: Option<tokio::time::Instant>) -> Option<Duration> {
    deadline.map(|at| {
        at.saturating_duration_since(tokio::time::Instant::now())
            .max(Duration::from_micros(1))
    })
}

/// One heartbeat: the host must echo `sequence` within `timeout`.
async fn ping(chan: &AsyncChannel, sequence: u64, timeout: Duration) -> Result<(), Status> {
    let mut beat = proto::Heartbeat::new(chan.context());
    beat.set_sequence(sequence);
    let options = CallOptions {
        timeout: Some(timeout),
        ..CallOptions::default()
    };
    let response = chan
        .call_with::<proto::Heartbeat<'static>>(proto::host_service::PING, &beat, &options)
        .await?;
    if response.view()?.sequence() != sequence {
        return Err(Status::new(Code::Internal, "the host answered another heartbeat"));
    }
    Ok(())
}
