//! A client and a server session stepped by hand over two in-order queues (what a transport
//! gives): random interleavings of calls, deliveries, answers in any order, cancellations,
//! time passing and the connection's loss. Every call must end exactly once on the client,
//! the window and the server's bound must hold, and late answers must be dropped.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use ferry_rpc::session::{Client, ClientConfig, ClientEvent, Event, Outcome, Server, ServerConfig};
use ferry_rpc::{CallId, Code, Metadata, MetadataError, RpcError, Status, wire};
use ferry_transport::Meta;
use proptest::prelude::*;

/// A frame in flight: metadata, and the payload if raw (`None`: a Ferry message).
type Frame = (Meta, Option<Vec<u8>>);

struct Pair {
    client: Client,
    server: Server,
    window: usize,
    max_in_flight: usize,
    c2s: VecDeque<Frame>,
    s2c: VecDeque<Frame>,
    now: Instant,
    started: HashMap<CallId, u16>,
    ended: HashSet<CallId>,
    handling: Vec<CallId>,
}

impl Pair {
    fn new(window: usize, max_in_flight: usize) -> Pair {
        Pair {
            client: Client::new(ClientConfig { window }),
            server: Server::new(ServerConfig { max_in_flight }),
            window,
            max_in_flight,
            c2s: VecDeque::new(),
            s2c: VecDeque::new(),
            now: Instant::now(),
            started: HashMap::new(),
            ended: HashSet::new(),
            handling: Vec::new(),
        }
    }

    fn end(&mut self, outcome: &Outcome) {
        let id = match outcome {
            Outcome::Response { id, method, .. }
            | Outcome::Failed { id, method, .. }
            | Outcome::Finished { id, method, .. } => {
                assert_eq!(
                    self.started.get(id),
                    Some(method),
                    "call {id} was started to {method}"
                );
                *id
            }
        };
        assert!(self.ended.insert(id), "call {id} ended twice");
    }

    fn start(&mut self, method: u16, timeout: Option<Duration>) {
        match self.client.start(method, timeout, self.now, ()) {
            Ok(start) => {
                if let Some((meta, budget)) = start.deadline {
                    self.c2s.push_back((meta, Some(budget.to_vec())));
                }
                self.c2s.push_back((start.request, None));
                assert!(self.started.insert(start.id, method).is_none(), "ids are unique");
            }
            Err(status) => {
                assert_eq!(status.code, Code::ResourceExhausted);
                assert_eq!(self.client.in_flight(), self.window);
            }
        }
    }

    fn deliver_to_server(&mut self) {
        let Some((meta, raw)) = self.c2s.pop_front() else {
            return;
        };
        match self
            .server
            .on_frame(meta, raw.as_deref(), 0, self.now)
            .expect("a valid frame")
        {
            Some(Event::Request { id, method, .. }) => {
                assert_eq!(self.started.get(&id), Some(&method));
                self.handling.push(id);
            }
            Some(Event::Refused { meta, payload, .. }) => self.s2c.push_back((meta, Some(payload))),
            Some(Event::Cancelled { id }) => self.handling.retain(|&h| h != id),
            None => {}
            Some(other) => panic!("unary calls only: {other:?}"),
        }
    }

    fn answer(&mut self, index: usize, ok: bool) {
        if self.handling.is_empty() {
            return;
        }
        let id = self.handling.swap_remove(index % self.handling.len());
        if ok {
            let meta = self.server.respond(id).expect("in progress");
            self.s2c.push_back((meta, None));
        } else {
            let status = Status::new(Code::NotFound, "no such key");
            let (meta, payload) = self.server.fail(id, &status).expect("in progress");
            self.s2c.push_back((meta, Some(payload)));
        }
    }

    fn deliver_to_client(&mut self) {
        let Some((meta, raw)) = self.s2c.pop_front() else {
            return;
        };
        match self
            .client
            .on_frame(meta, raw.as_deref(), 0)
            .expect("a valid frame")
        {
            Some(ClientEvent::Ended(outcome)) => {
                if let Outcome::Failed { status, .. } = &outcome {
                    assert!(
                        matches!(
                            status.code,
                            Code::NotFound | Code::ResourceExhausted | Code::DeadlineExceeded
                        ),
                        "{status}"
                    );
                }
                self.end(&outcome);
            }
            None => assert!(
                self.ended.contains(&CallId(meta.request_id)),
                "only an ended call's answer is dropped"
            ),
            Some(other) => panic!("unary calls only: {other:?}"),
        }
    }

    fn cancel(&mut self, index: usize) {
        let mut open: Vec<CallId> = self
            .started
            .keys()
            .filter(|id| !self.ended.contains(id))
            .copied()
            .collect();
        if open.is_empty() {
            return;
        }
        open.sort_unstable();
        let id = open[index % open.len()];
        let (meta, ()) = self.client.cancel(id).expect("in flight");
        assert!(self.ended.insert(id));
        self.c2s.push_back((meta, Some(Vec::new())));
        assert!(self.client.cancel(id).is_none(), "cancelled once");
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        for (outcome, cancel) in self.client.expire(self.now) {
            self.end(&outcome);
            self.c2s.push_back((cancel, Some(Vec::new())));
        }
        for (id, meta, payload) in self.server.expire(self.now) {
            self.handling.retain(|&h| h != id);
            self.s2c.push_back((meta, Some(payload)));
        }
    }

    fn lose(&mut self) {
        for outcome in self.client.lost() {
            assert!(matches!(&outcome, Outcome::Failed { status, .. } if status.code == Code::Unavailable));
            self.end(&outcome);
        }
        self.server.lost();
        self.c2s.clear();
        self.s2c.clear();
        self.handling.clear();
    }

    fn check(&self) {
        assert_eq!(self.client.in_flight(), self.started.len() - self.ended.len());
        assert!(self.client.in_flight() <= self.window);
        assert!(self.server.in_flight() <= self.max_in_flight);
        assert!(self.handling.len() <= self.server.in_flight());
    }

    /// Answers and delivers everything, then lets every deadline pass: no call is left.
    fn drain(&mut self) {
        for _ in 0..10_000 {
            if self.c2s.is_empty() && self.s2c.is_empty() && self.handling.is_empty() {
                break;
            }
            self.deliver_to_server();
            self.answer(0, true);
            self.deliver_to_client();
        }
        self.advance(Duration::from_secs(3600));
        while !self.s2c.is_empty() || !self.c2s.is_empty() {
            self.deliver_to_server();
            self.deliver_to_client();
        }
        self.check();
        // Calls without a deadline whose request was refused or answered have ended; any
        // other call was answered above.
        assert_eq!(self.client.in_flight(), 0, "every call ended");
        assert_eq!(self.ended.len(), self.started.len());
    }
}

#[derive(Debug, Clone)]
enum Op {
    Start { method: u16, timeout_ms: Option<u64> },
    ToServer,
    Answer { index: usize, ok: bool },
    ToClient,
    Cancel { index: usize },
    Advance { ms: u64 },
    Lose,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..4u16, proptest::option::weighted(0.4, 1..50u64))
            .prop_map(|(method, timeout_ms)| Op::Start { method, timeout_ms }),
        4 => Just(Op::ToServer),
        3 => (any::<usize>(), prop::bool::weighted(0.8)).prop_map(|(index, ok)| Op::Answer { index, ok }),
        4 => Just(Op::ToClient),
        1 => any::<usize>().prop_map(|index| Op::Cancel { index }),
        2 => (1..30u64).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Lose),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_call_ends_exactly_once(
        window in 1usize..10,
        max_in_flight in 1usize..6,
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        let mut pair = Pair::new(window, max_in_flight);
        for op in ops {
            match op {
                Op::Start { method, timeout_ms } => pair.start(method, timeout_ms.map(Duration::from_millis)),
                Op::ToServer => pair.deliver_to_server(),
                Op::Answer { index, ok } => pair.answer(index, ok),
                Op::ToClient => pair.deliver_to_client(),
                Op::Cancel { index } => pair.cancel(index),
                Op::Advance { ms } => pair.advance(Duration::from_millis(ms)),
                Op::Lose => pair.lose(),
            }
            pair.check();
        }
        pair.drain();
    }
}

#[test]
fn a_server_at_its_limit_refuses_with_resource_exhausted() {
    let mut pair = Pair::new(8, 2);
    for _ in 0..3 {
        pair.start(1, None);
        pair.deliver_to_server();
    }
    assert_eq!(pair.server.in_flight(), 2);
    pair.deliver_to_client();
    assert_eq!(
        pair.ended,
        HashSet::from([CallId(2)]),
        "the third call was refused at once"
    );
    pair.drain();
}

#[test]
fn the_server_enforces_the_client_budget_on_its_own_clock() {
    let mut pair = Pair::new(8, 8);
    pair.start(3, Some(Duration::from_millis(10)));
    pair.deliver_to_server(); // the deadline frame: a budget of 10 ms
    pair.now += Duration::from_millis(4);
    pair.deliver_to_server(); // the request: its deadline is 10 ms from its arrival
    let expired = pair.server.expire(pair.now + Duration::from_millis(9));
    assert!(expired.is_empty(), "10 ms from the request's arrival");
    let expired = pair.server.expire(pair.now + Duration::from_millis(10));
    assert_eq!(expired.len(), 1);
    assert!(
        pair.server.respond(CallId(0)).is_none(),
        "an expired call's answer is not sent"
    );
}

#[test]
fn a_late_answer_to_a_cancelled_call_is_dropped_on_both_sides() {
    let mut pair = Pair::new(8, 8);
    pair.start(1, None);
    pair.deliver_to_server();
    pair.cancel(0);
    // The server answers before the cancel arrives; the client drops the answer.
    pair.answer(0, true);
    pair.deliver_to_client();
    pair.deliver_to_server();
    assert_eq!(pair.server.in_flight(), 0);
    assert_eq!(pair.client.in_flight(), 0);
}

#[test]
fn bad_frames_are_typed_errors() {
    let now = Instant::now();
    let mut server = Server::new(ServerConfig::default());
    let mut client = Client::new(ClientConfig::default());
    let m = |flags| Meta {
        kind: 1,
        flags,
        request_id: 7,
    };
    let cases: Vec<(Meta, Option<&[u8]>)> = vec![
        (m(0x10), None),
        (m(wire::DEADLINE), Some(&[1, 2, 3][..])),
        (m(wire::DEADLINE), None),
        (m(wire::CANCEL), Some(&[0][..])),
        (m(wire::RESPONSE), None),
        (m(wire::STATUS), Some(&[3][..])),
    ];
    for (meta, raw) in cases {
        assert!(
            server.on_frame(meta, raw, 0, now).is_err(),
            "server accepted {meta:?} {raw:?}"
        );
    }
    client.start(1, None, now, ()).unwrap();
    let status = |b: &'static [u8]| (m(wire::RESPONSE | wire::STATUS), Some(b));
    for (meta, raw) in [
        status(&[]),
        status(&[17, b'x']),
        status(&[3, 0xff, 0xfe]),
        (m(0), None),
        (m(wire::CANCEL), Some(&[][..])),
    ] {
        assert!(
            client.on_frame(meta, raw, 0).is_err(),
            "client accepted {meta:?} {raw:?}"
        );
    }
    let long = "é".repeat(wire::MAX_STATUS_MESSAGE);
    let payload = wire::status_payload(&Status::new(Code::Internal, long));
    assert!(payload.len() <= 1 + wire::MAX_STATUS_MESSAGE);
    let answer = Meta {
        request_id: 0,
        ..m(wire::RESPONSE | wire::STATUS)
    };
    let got = client.on_frame(answer, Some(&payload), 0).unwrap();
    assert!(
        matches!(got, Some(ClientEvent::Ended(Outcome::Failed { status, .. })) if status.code == Code::Internal)
    );
}

fn metadata(entries: &[(&str, &[u8])]) -> Metadata {
    let mut md = Metadata::new();
    for (k, v) in entries {
        md.append(k, *v).expect("valid");
    }
    md
}

/// The frames the client sends to start a call with `md`, in order.
fn start_frames(client: &mut Client, method: u16, timeout: Option<Duration>, md: &Metadata) -> Vec<Frame> {
    let start = client.start(method, timeout, Instant::now(), ()).expect("room");
    let mut out: Vec<Frame> = Vec::new();
    if let Some((meta, budget)) = start.deadline {
        out.push((meta, Some(budget.to_vec())));
    }
    if let Some((meta, payload)) = start.metadata_frame(md) {
        out.push((meta, Some(payload)));
    }
    out.push((start.request, None));
    out
}

#[test]
fn request_metadata_reaches_the_request_event() {
    let now = Instant::now();
    let mut client = Client::new(ClientConfig::default());
    let mut server = Server::new(ServerConfig::default());
    let md = metadata(&[("x-user", b"ann"), ("trace-bin", &[0, 255])]);
    let frames = start_frames(&mut client, 9, Some(Duration::from_secs(5)), &md);
    assert_eq!(
        frames.iter().map(|(m, _)| m.flags).collect::<Vec<_>>(),
        [wire::DEADLINE, wire::METADATA, 0],
        "deadline, metadata, request"
    );
    let mut events = Vec::new();
    for (meta, raw) in &frames {
        events.push(server.on_frame(*meta, raw.as_deref(), 0, now).expect("valid"));
    }
    assert_eq!(events[..2], [None, None]);
    match events.pop().flatten() {
        Some(Event::Request {
            id,
            method: 9,
            deadline: Some(_),
            metadata,
        }) => {
            assert_eq!(id, CallId(0));
            assert_eq!(metadata, md);
        }
        other => panic!("{other:?}"),
    }
    // A call without metadata sends no metadata frame, and its request has none.
    let frames = start_frames(&mut client, 9, None, &Metadata::new());
    assert_eq!(frames.len(), 1);
    match server.on_frame(frames[0].0, None, 0, now).expect("valid") {
        Some(Event::Request { metadata, .. }) => assert!(metadata.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn headers_and_trailers_come_with_the_outcome() {
    let now = Instant::now();
    let mut client = Client::new(ClientConfig::default());
    let mut server = Server::new(ServerConfig::default());
    for (meta, raw) in start_frames(&mut client, 4, None, &Metadata::new())
        .into_iter()
        .chain(start_frames(&mut client, 4, None, &Metadata::new()))
    {
        server.on_frame(meta, raw.as_deref(), 0, now).expect("valid");
    }
    let headers = metadata(&[("x-cost", b"3")]);
    let trailers = metadata(&[("x-spent", b"9")]);
    // Call 0 answers with a response, call 1 with a status; both after headers and trailers.
    let (h0, ph0) = server.headers(CallId(0), &headers).expect("in progress");
    assert_eq!(h0.flags, wire::RESPONSE | wire::METADATA);
    assert_eq!(server.headers(CallId(0), &headers), None, "one per call");
    assert_eq!(server.headers(CallId(1), &Metadata::new()), None, "none if empty");
    let (t0, pt0) = server.trailers(CallId(0), &trailers).expect("in progress");
    assert_eq!(t0.flags, wire::RESPONSE | wire::STATUS | wire::METADATA);
    assert_eq!(server.trailers(CallId(0), &trailers), None, "one per call");
    let r0 = server.respond(CallId(0)).expect("in progress");
    let (t1, pt1) = server.trailers(CallId(1), &trailers).expect("in progress");
    assert_eq!(
        server.headers(CallId(1), &headers),
        None,
        "no headers after trailers"
    );
    let (r1, s1) = server
        .fail(CallId(1), &Status::new(Code::NotFound, "gone"))
        .expect("in progress");
    assert_eq!(server.trailers(CallId(1), &trailers), None, "ended");

    assert_eq!(client.on_frame(h0, Some(&ph0), 0), Ok(None));
    assert_eq!(client.on_frame(t0, Some(&pt0), 0), Ok(None));
    assert_eq!(
        client.on_frame(r0, None, 0),
        Ok(Some(ClientEvent::Ended(Outcome::Response {
            id: CallId(0),
            method: 4,
            metadata: headers.clone(),
            trailers: trailers.clone(),
            value: (),
        })))
    );
    assert_eq!(client.on_frame(t1, Some(&pt1), 0), Ok(None));
    match client.on_frame(r1, Some(&s1), 0) {
        Ok(Some(ClientEvent::Ended(Outcome::Failed { status, headers, .. }))) => {
            assert_eq!(status.code, Code::NotFound);
            assert_eq!(status.metadata, trailers);
            assert!(headers.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // Metadata for a call that ended here is dropped, as its answer would be.
    assert_eq!(client.on_frame(h0, Some(&ph0), 0), Ok(None));
    // A second headers frame, or headers after trailers, breaks the protocol.
    let id = client.start(4, None, now, ()).unwrap().id;
    let h = Meta {
        request_id: id.0,
        ..h0
    };
    assert_eq!(client.on_frame(h, Some(&ph0), 0), Ok(None));
    assert!(matches!(
        client.on_frame(h, Some(&ph0), 0),
        Err(RpcError::DuplicateMetadata { id: 2, .. })
    ));
    let id = client.start(4, None, now, ()).unwrap().id;
    let t = Meta {
        request_id: id.0,
        ..t0
    };
    assert_eq!(client.on_frame(t, Some(&pt0), 0), Ok(None));
    assert!(matches!(
        client.on_frame(
            Meta {
                request_id: id.0,
                ..h0
            },
            Some(&ph0),
            0
        ),
        Err(RpcError::DuplicateMetadata { id: 3, .. })
    ));
}

#[test]
fn duplicate_request_metadata_is_a_protocol_error() {
    let now = Instant::now();
    let md = metadata(&[("k", b"v")]);
    let (meta, payload) = wire::metadata_frame(1, 5, wire::METADATA, &md);
    // Twice before the request.
    let mut server = Server::new(ServerConfig::default());
    assert_eq!(server.on_frame(meta, Some(&payload), 0, now), Ok(None));
    assert_eq!(
        server.on_frame(meta, Some(&payload), 0, now),
        Err(RpcError::DuplicateMetadata {
            id: 5,
            frame: "metadata",
            after: "metadata"
        })
    );
    // After the request.
    let mut server = Server::new(ServerConfig::default());
    let request = Meta::new(1, 5);
    assert!(matches!(
        server.on_frame(request, None, 0, now),
        Ok(Some(Event::Request { .. }))
    ));
    assert_eq!(
        server.on_frame(meta, Some(&payload), 0, now),
        Err(RpcError::DuplicateMetadata {
            id: 5,
            frame: "metadata",
            after: "request"
        })
    );
    // A cancel forgets metadata whose request never came: the id may carry metadata again.
    let mut server = Server::new(ServerConfig::default());
    let cancel = Meta {
        flags: wire::CANCEL,
        ..request
    };
    server.on_frame(meta, Some(&payload), 0, now).unwrap();
    assert_eq!(server.on_frame(cancel, Some(&[]), 0, now), Ok(None));
    assert_eq!(server.on_frame(meta, Some(&payload), 0, now), Ok(None));
    // The client never receives request metadata, nor the server response metadata.
    let mut client = Client::new(ClientConfig::default());
    client.start(1, None, now, ()).unwrap();
    let (to_client, _) = wire::metadata_frame(1, 0, wire::METADATA, &md);
    assert!(matches!(
        client.on_frame(to_client, Some(&payload), 0),
        Err(RpcError::Direction {
            frame: "metadata",
            ..
        })
    ));
    let (to_server, _) = wire::metadata_frame(1, 9, wire::RESPONSE | wire::METADATA, &md);
    assert!(matches!(
        server.on_frame(to_server, Some(&payload), 0, now),
        Err(RpcError::Direction { frame: "headers", .. })
    ));
}

#[test]
fn metadata_for_calls_that_never_come_is_bounded() {
    let now = Instant::now();
    let mut server = Server::new(ServerConfig { max_in_flight: 4 });
    let md = metadata(&[("k", b"v")]);
    for id in 0..4 {
        let (meta, payload) = wire::metadata_frame(1, id, wire::METADATA, &md);
        assert_eq!(
            server.on_frame(meta, Some(&payload), 0, now),
            Ok(None),
            "call {id}"
        );
    }
    let (meta, payload) = wire::metadata_frame(1, 4, wire::METADATA, &md);
    assert_eq!(
        server.on_frame(meta, Some(&payload), 0, now),
        Err(RpcError::TooManyMetadata { id: 4, max: 4 })
    );
    // A request takes its metadata out of the pending ones: room for one more.
    let mut server = Server::new(ServerConfig { max_in_flight: 1 });
    let (meta, payload) = wire::metadata_frame(1, 0, wire::METADATA, &md);
    server.on_frame(meta, Some(&payload), 0, now).unwrap();
    assert!(matches!(
        server.on_frame(Meta::new(1, 0), None, 0, now),
        Ok(Some(Event::Request { .. }))
    ));
    server.respond(CallId(0)).unwrap();
    let (meta, payload) = wire::metadata_frame(1, 1, wire::METADATA, &md);
    assert_eq!(server.on_frame(meta, Some(&payload), 0, now), Ok(None));
    // A malformed payload names the call and what is wrong.
    assert!(matches!(
        server.on_frame(meta, Some(&[1, 0, 1, 0, b'K', 0, 0, 0, 0]), 0, now),
        Err(RpcError::Metadata {
            id: 1,
            error: MetadataError::KeyByte { byte: b'K', .. },
            ..
        })
    ));
}
