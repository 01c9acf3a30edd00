//! Streams between a client and a server session stepped by hand over two in-order queues:
//! random interleavings of opens, messages both ways, half-closes, reads, finishes, failures,
//! cancellations, deadlines and the connection's loss. Every stream must end exactly once on
//! each side, its messages must arrive in order and whole, a receiver must never hold more than
//! its window, a well-behaved peer must never be refused, and nothing may stay behind.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use ferry_rpc::session::{Blocked, Client, ClientConfig, ClientEvent, Event, Outcome, Server, ServerConfig};
use ferry_rpc::{CallId, Code, Metadata, Status, wire};
use ferry_transport::Meta;
use proptest::prelude::*;

/// A frame in flight: its metadata, its raw payload (control frames), and, for a message, the
/// stream's sequence number and the message's length.
type Frame = (Meta, Option<Vec<u8>>, Option<(u32, usize)>);

const METHOD: u16 = 9;

/// One side's view of a stream.
#[derive(Default)]
struct Side {
    /// Messages sent so far (the next one's sequence number).
    sent: u32,
    /// Messages received so far (the next one expected).
    received: u32,
    /// Received and not yet read: their lengths.
    unread: VecDeque<usize>,
    /// Bytes of `unread`.
    unread_bytes: usize,
}

struct Pair {
    client: Client,
    server: Server,
    c2s: VecDeque<Frame>,
    s2c: VecDeque<Frame>,
    now: Instant,
    clients: BTreeMap<CallId, Side>,
    servers: BTreeMap<CallId, Side>,
    client_ended: HashSet<CallId>,
    server_ended: HashSet<CallId>,
    max_len: usize,
}

impl Pair {
    fn new(max_len: usize) -> Pair {
        Pair {
            client: Client::new(ClientConfig { window: 3 }),
            server: Server::new(ServerConfig { max_in_flight: 2 }),
            c2s: VecDeque::new(),
            s2c: VecDeque::new(),
            now: Instant::now(),
            clients: BTreeMap::new(),
            servers: BTreeMap::new(),
            client_ended: HashSet::new(),
            server_ended: HashSet::new(),
            max_len,
        }
    }

    fn pick(map: &BTreeMap<CallId, Side>, index: usize) -> Option<CallId> {
        (!map.is_empty()).then(|| *map.keys().nth(index % map.len()).expect("in range"))
    }

    fn open(&mut self, timeout: Option<Duration>) {
        let Ok(start) = self.client.open(METHOD, timeout, self.now, ()) else {
            assert_eq!(self.client.in_flight(), 3, "refused only when the window is full");
            return;
        };
        if let Some((meta, budget)) = start.deadline {
            self.c2s.push_back((meta, Some(budget.to_vec()), None));
        }
        assert_eq!(start.request.flags, wire::OPEN);
        self.c2s.push_back((start.request, Some(Vec::new()), None));
        assert!(self.clients.insert(start.id, Side::default()).is_none());
    }

    fn client_send(&mut self, index: usize, len: usize) {
        let Some(id) = Self::pick(&self.clients, index) else {
            return;
        };
        match self.client.send(id, len) {
            Ok(meta) => {
                let side = self.clients.get_mut(&id).expect("open");
                self.c2s.push_back((meta, None, Some((side.sent, len))));
                side.sent += 1;
            }
            Err(Blocked::Window) => assert!(!self.client.can_send(id)),
            Err(Blocked::Ended) => {}
        }
    }

    fn client_end(&mut self, index: usize) {
        let Some(id) = Self::pick(&self.clients, index) else {
            return;
        };
        if let Some(meta) = self.client.end(id) {
            self.c2s.push_back((meta, Some(Vec::new()), None));
            assert_eq!(
                self.client.send(id, 1),
                Err(Blocked::Ended),
                "no message after the end"
            );
        }
    }

    fn client_read(&mut self, index: usize) {
        let Some(id) = Self::pick(&self.clients, index) else {
            return;
        };
        let side = self.clients.get_mut(&id).expect("open");
        let Some(len) = side.unread.pop_front() else {
            return;
        };
        side.unread_bytes -= len;
        if let Some((meta, grant)) = self.client.consumed(id, len) {
            self.c2s.push_back((meta, Some(grant.to_vec()), None));
        }
    }

    fn client_cancel(&mut self, index: usize) {
        let Some(id) = Self::pick(&self.clients, index) else {
            return;
        };
        let (meta, ()) = self.client.cancel(id).expect("in flight");
        self.c2s.push_back((meta, Some(Vec::new()), None));
        self.client_end_call(id);
    }

    fn client_end_call(&mut self, id: CallId) {
        assert!(self.clients.remove(&id).is_some(), "{id} was open here");
        assert!(self.client_ended.insert(id), "{id} ended twice on the client");
    }

    fn server_send(&mut self, index: usize, len: usize) {
        let Some(id) = Self::pick(&self.servers, index) else {
            return;
        };
        match self.server.send(id, len) {
            Ok(meta) => {
                let side = self.servers.get_mut(&id).expect("open");
                self.s2c.push_back((meta, None, Some((side.sent, len))));
                side.sent += 1;
            }
            Err(Blocked::Window) => assert!(!self.server.can_send(id)),
            Err(Blocked::Ended) => panic!("{id} is open on the server"),
        }
    }

    fn server_read(&mut self, index: usize) {
        let Some(id) = Self::pick(&self.servers, index) else {
            return;
        };
        let side = self.servers.get_mut(&id).expect("open");
        let Some(len) = side.unread.pop_front() else {
            return;
        };
        side.unread_bytes -= len;
        if let Some((meta, grant)) = self.server.consumed(id, len) {
            self.s2c.push_back((meta, Some(grant.to_vec()), None));
        }
    }

    fn server_end(&mut self, index: usize, ok: bool) {
        let Some(id) = Self::pick(&self.servers, index) else {
            return;
        };
        let mut trailers = Metadata::new();
        trailers.append("x-sent", "1").expect("a valid key");
        if let Some((meta, payload)) = self.server.trailers(id, &trailers) {
            self.s2c.push_back((meta, Some(payload), None));
        }
        let (meta, payload) = match ok {
            true => self.server.finish(id),
            false => self.server.fail(id, &Status::new(Code::Aborted, "stop")),
        }
        .expect("open on the server");
        self.s2c.push_back((meta, Some(payload), None));
        self.server_end_call(id);
    }

    fn server_end_call(&mut self, id: CallId) {
        assert!(self.servers.remove(&id).is_some(), "{id} was open on the server");
        assert!(self.server_ended.insert(id), "{id} ended twice on the server");
    }

    /// A message arrived on `side`: in order, and within the window the receiver granted.
    fn received(side: &mut Side, seq: u32, len: usize, max_len: usize) {
        assert_eq!(
            seq, side.received,
            "messages arrive in order, none lost or repeated"
        );
        side.received += 1;
        side.unread.push_back(len);
        side.unread_bytes += len;
        assert!(
            side.unread.len() <= wire::STREAM_WINDOW_MESSAGES as usize,
            "held past the window"
        );
        assert!(
            side.unread_bytes <= wire::STREAM_WINDOW_BYTES as usize + max_len,
            "held {} bytes",
            side.unread_bytes
        );
    }

    fn deliver_to_server(&mut self) {
        let Some((meta, raw, message)) = self.c2s.pop_front() else {
            return;
        };
        let len = message.map_or(0, |(_, len)| len);
        let event = self
            .server
            .on_frame(meta, raw.as_deref(), len, self.now)
            .expect("a valid frame");
        let id = CallId(meta.request_id);
        match event {
            Some(Event::Open { id, method, .. }) => {
                assert_eq!(method, METHOD);
                assert!(self.servers.insert(id, Side::default()).is_none());
            }
            Some(Event::Refused { meta, payload, .. }) => self.s2c.push_back((meta, Some(payload), None)),
            Some(Event::Message { id }) => {
                let (seq, len) = message.expect("a message frame");
                Self::received(self.servers.get_mut(&id).expect("open"), seq, len, self.max_len);
            }
            Some(Event::HalfClosed { .. } | Event::Window { .. }) => {}
            Some(Event::Cancelled { id }) => self.server_end_call(id),
            Some(Event::Request { .. }) => panic!("no unary call was made"),
            Some(Event::Aborted { .. }) => panic!("a well-behaved client was refused: {meta:?}"),
            // A frame of a stream that already ended on the server.
            None => assert!(
                !self.servers.contains_key(&id) || meta.flags == wire::DEADLINE,
                "{meta:?} ignored for an open stream"
            ),
        }
    }

    fn deliver_to_client(&mut self) {
        let Some((meta, raw, message)) = self.s2c.pop_front() else {
            return;
        };
        let len = message.map_or(0, |(_, len)| len);
        let event = self
            .client
            .on_frame(meta, raw.as_deref(), len)
            .expect("a valid frame");
        match event {
            Some(ClientEvent::Message { id }) => {
                let (seq, len) = message.expect("a message frame");
                Self::received(self.clients.get_mut(&id).expect("open"), seq, len, self.max_len);
            }
            Some(ClientEvent::Ended(outcome)) => {
                let id = outcome.id();
                match &outcome {
                    Outcome::Finished { trailers, .. } => assert_eq!(trailers.get("x-sent"), Some(&b"1"[..])),
                    Outcome::Failed { status, .. } => assert!(
                        matches!(
                            status.code,
                            Code::Aborted | Code::ResourceExhausted | Code::DeadlineExceeded
                        ),
                        "{status}"
                    ),
                    Outcome::Response { .. } => panic!("a stream ended with a unary response"),
                }
                self.client_end_call(id);
            }
            Some(ClientEvent::Window { .. } | ClientEvent::Headers { .. }) => {}
            Some(ClientEvent::Aborted(..)) => panic!("a well-behaved server was refused: {meta:?}"),
            None => assert!(
                !self.clients.contains_key(&CallId(meta.request_id)) || meta.flags & wire::METADATA != 0,
                "{meta:?} ignored for an open stream"
            ),
        }
    }

    fn tick(&mut self, by: Duration) {
        self.now += by;
        for (outcome, cancel) in self.client.expire(self.now) {
            self.c2s.push_back((cancel, Some(Vec::new()), None));
            self.client_end_call(outcome.id());
        }
        for (id, meta, payload) in self.server.expire(self.now) {
            self.s2c.push_back((meta, Some(payload), None));
            self.server_end_call(id);
        }
    }

    /// Both sides read everything, deliver everything, and the server finishes every stream.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            let idle = self.c2s.is_empty() && self.s2c.is_empty();
            if idle && self.servers.is_empty() {
                // Nothing in flight: a stream open on the client alone was lost on the way.
                assert!(
                    self.clients.is_empty(),
                    "open on the client only: {:?}",
                    self.clients.keys()
                );
                break;
            }
            for i in 0..self.clients.len() {
                self.client_read(i);
            }
            for i in 0..self.servers.len() {
                self.server_read(i);
            }
            self.deliver_to_server();
            self.deliver_to_client();
            if idle {
                self.server_end(0, true);
            }
        }
        assert!(
            self.clients.is_empty() && self.servers.is_empty(),
            "streams left open"
        );
        assert_eq!(self.client.in_flight(), 0);
        assert_eq!(self.server.in_flight(), 0);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Open(bool),
    ClientSend(usize, usize),
    ClientEnd(usize),
    ClientRead(usize),
    ClientCancel(usize),
    ServerSend(usize, usize),
    ServerRead(usize),
    ServerEnd(usize, bool),
    ToServer,
    ToClient,
    Tick(u64),
}

/// Message lengths: small ones fill the message window, large ones the byte window.
fn any_len() -> BoxedStrategy<usize> {
    prop_oneof![16 => 0usize..64, 4 => 60_000usize..70_000, 1 => Just(3 << 20)].boxed()
}

fn op(len: BoxedStrategy<usize>) -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => any::<bool>().prop_map(Op::Open),
        10 => (any::<usize>(), len.clone()).prop_map(|(i, l)| Op::ClientSend(i, l)),
        1 => any::<usize>().prop_map(Op::ClientEnd),
        3 => any::<usize>().prop_map(Op::ClientRead),
        1 => any::<usize>().prop_map(Op::ClientCancel),
        10 => (any::<usize>(), len).prop_map(|(i, l)| Op::ServerSend(i, l)),
        3 => any::<usize>().prop_map(Op::ServerRead),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, ok)| Op::ServerEnd(i, ok)),
        8 => Just(Op::ToServer),
        8 => Just(Op::ToClient),
        1 => (0u64..60).prop_map(Op::Tick),
    ]
}

/// Streams that live long: opens, small messages both ways, reads and deliveries only (they end
/// when the run settles), so both message windows run dry and are granted again many times.
fn steady_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Open(false)),
        10 => (any::<usize>(), 0usize..64).prop_map(|(i, l)| Op::ClientSend(i, l)),
        4 => any::<usize>().prop_map(Op::ClientRead),
        10 => (any::<usize>(), 0usize..64).prop_map(|(i, l)| Op::ServerSend(i, l)),
        4 => any::<usize>().prop_map(Op::ServerRead),
        8 => Just(Op::ToServer),
        8 => Just(Op::ToClient),
    ]
}

fn run(pair: &mut Pair, ops: Vec<Op>) {
    for op in ops {
        match op {
            Op::Open(deadline) => pair.open(deadline.then_some(Duration::from_millis(300))),
            Op::ClientSend(i, len) => pair.client_send(i, len),
            Op::ClientEnd(i) => pair.client_end(i),
            Op::ClientRead(i) => pair.client_read(i),
            Op::ClientCancel(i) => pair.client_cancel(i),
            Op::ServerSend(i, len) => pair.server_send(i, len),
            Op::ServerRead(i) => pair.server_read(i),
            Op::ServerEnd(i, ok) => pair.server_end(i, ok),
            Op::ToServer => pair.deliver_to_server(),
            Op::ToClient => pair.deliver_to_client(),
            Op::Tick(ms) => pair.tick(Duration::from_millis(ms)),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streams_end_once_in_order_within_their_windows(ops in proptest::collection::vec(op(any_len()), 1..1500)) {
        let mut pair = Pair::new(3 << 20);
        run(&mut pair, ops);
        pair.settle();
    }

    #[test]
    fn long_streams_of_small_messages_fill_their_windows(ops in proptest::collection::vec(steady_op(), 1..1500)) {
        let mut pair = Pair::new(64);
        run(&mut pair, ops);
        pair.settle();
    }

    #[test]
    fn losing_the_connection_ends_every_stream_once(ops in proptest::collection::vec(op(any_len()), 1..200)) {
        let mut pair = Pair::new(3 << 20);
        for op in ops {
            match op {
                Op::Open(_) => pair.open(None),
                Op::ClientSend(i, len) => pair.client_send(i, len),
                Op::ServerSend(i, len) => pair.server_send(i, len),
                Op::ToServer => pair.deliver_to_server(),
                Op::ToClient => pair.deliver_to_client(),
                _ => {}
            }
        }
        for outcome in pair.client.lost() {
            let lost = matches!(&outcome, Outcome::Failed { status, .. } if status.code == Code::Unavailable);
            prop_assert!(lost, "{:?}", outcome);
            pair.client_end_call(outcome.id());
        }
        for id in pair.server.lost() {
            pair.server_end_call(id);
        }
        prop_assert!(pair.clients.is_empty() && pair.servers.is_empty());
    }
}

/// A client that ignores its window: the message past it ends that stream with `INTERNAL`,
/// and the session and its other streams go on.
#[test]
fn a_message_past_the_window_aborts_its_stream_only() {
    let now = Instant::now();
    let mut client = Client::new(ClientConfig::default());
    let mut server = Server::new(ServerConfig::default());
    let a = client.open(METHOD, None, now, ()).unwrap();
    let b = client.open(METHOD, None, now, ()).unwrap();
    for start in [&a, &b] {
        assert!(matches!(
            server.on_frame(start.request, Some(&[]), 0, now),
            Ok(Some(Event::Open { .. }))
        ));
    }
    let message = Meta {
        kind: METHOD,
        flags: wire::MESSAGE,
        request_id: a.id.0,
    };
    for _ in 0..wire::STREAM_WINDOW_MESSAGES {
        assert_eq!(
            server.on_frame(message, None, 10, now),
            Ok(Some(Event::Message { id: a.id }))
        );
    }
    match server.on_frame(message, None, 10, now) {
        Ok(Some(Event::Aborted { id, meta, payload })) => {
            assert_eq!(id, a.id);
            assert_eq!(meta.flags, wire::RESPONSE | wire::STATUS);
            assert_eq!(payload[0], Code::Internal as u8);
            assert!(String::from_utf8_lossy(&payload[1..]).contains("window"));
        }
        other => panic!("{other:?}"),
    }
    // Stream b goes on; a's later frames are dropped.
    assert_eq!(server.on_frame(message, None, 10, now), Ok(None));
    let on_b = Meta {
        request_id: b.id.0,
        ..message
    };
    assert_eq!(
        server.on_frame(on_b, None, 10, now),
        Ok(Some(Event::Message { id: b.id }))
    );
    assert_eq!(server.in_flight(), 1);
}

/// Stream frames on a unary call, and a unary answer on a stream, end that call only.
#[test]
fn stream_frames_on_the_wrong_kind_of_call_abort_it() {
    let now = Instant::now();
    let mut client = Client::new(ClientConfig::default());
    let mut server = Server::new(ServerConfig::default());
    let unary = client.start(METHOD, None, now, ()).unwrap();
    assert!(matches!(
        server.on_frame(unary.request, None, 0, now),
        Ok(Some(Event::Request { .. }))
    ));
    let end = Meta {
        kind: METHOD,
        flags: wire::END,
        request_id: unary.id.0,
    };
    assert!(matches!(
        server.on_frame(end, Some(&[]), 0, now),
        Ok(Some(Event::Aborted { .. }))
    ));
    let stream = client.open(METHOD, None, now, ()).unwrap();
    let response = Meta {
        kind: METHOD,
        flags: wire::RESPONSE,
        request_id: stream.id.0,
    };
    match client.on_frame(response, None, 0) {
        Ok(Some(ClientEvent::Aborted(Outcome::Failed { status, .. }, cancel))) => {
            assert_eq!(status.code, Code::Internal);
            assert_eq!(cancel.flags, wire::CANCEL);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(client.in_flight(), 1, "the unary call goes on");
}
