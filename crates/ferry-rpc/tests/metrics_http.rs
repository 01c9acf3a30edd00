//! The metrics endpoint over real loopback sockets: a scrape as Prometheus sends it, the
//! answers to bad requests, slow clients, and stopping.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_rpc::{Code, Metrics, MetricsEndpoint};
use ferry_testkit::{DEADLINE, ESTABLISHED, LISTEN, tcp_sockets, wait_until};

const SAY: &str = "/ferry.test.Echo/Say";

fn endpoint() -> (Arc<Metrics>, MetricsEndpoint) {
    let metrics = Arc::new(Metrics::new(&[(SAY, ferry_transport::method_id(SAY))]));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let endpoint = MetricsEndpoint::start(listener, metrics.clone()).expect("start");
    (metrics, endpoint)
}

/// A response: status code, headers (lowercase names), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `request` on a new connection, reads the answer until the server closes.
fn exchange(addr: SocketAddr, request: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request).expect("send request");
    read_response(stream)
}

fn read_response(mut stream: TcpStream) -> Response {
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<_> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("a header");
            (name.to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    let response = Response {
        status,
        headers,
        body: body.to_owned(),
    };
    assert_eq!(response.header("connection"), Some("close"));
    assert_eq!(
        response.header("content-length"),
        Some(response.body.len().to_string().as_str()),
        "Content-Length matches the body"
    );
    response
}

#[test]
fn get_answers_with_the_metrics() {
    let (metrics, endpoint) = endpoint();
    let say = metrics.method(ferry_transport::method_id(SAY));
    say.record(Code::Ok, Duration::from_micros(3));
    say.record(Code::InvalidArgument, Duration::from_micros(30));

    let response = exchange(
        endpoint.local_addr(),
        b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Prometheus/3.0\r\n\
          Accept: application/openmetrics-text;version=1.0.0\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let body = &response.body;
    assert!(body.contains(&format!(
        r#"ferry_rpc_requests_total{{method="{SAY}",code="OK"}} 1"#
    )));
    assert!(body.contains(&format!(
        r#"ferry_rpc_requests_total{{method="{SAY}",code="INVALID_ARGUMENT"}} 1"#
    )));
    assert!(body.contains(&format!(
        r#"ferry_rpc_request_duration_seconds_bucket{{le="0.000004",method="{SAY}"}} 1"#
    )));
    assert!(body.contains(&format!(
        r#"ferry_rpc_request_duration_seconds_count{{method="{SAY}"}} 2"#
    )));
    assert!(body.ends_with("# EOF\n"));

    // Every scrape is fresh, on any path, in HTTP/1.0 too.
    say.record(Code::Ok, Duration::from_micros(3));
    let response = exchange(endpoint.local_addr(), b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(response.status, 200);
    assert!(response.body.contains(&format!(
        r#"ferry_rpc_requests_total{{method="{SAY}",code="OK"}} 2"#
    )));
    endpoint.stop();
}

#[test]
fn bad_requests_are_refused_and_the_endpoint_goes_on() {
    let (_metrics, endpoint) = endpoint();
    let addr = endpoint.local_addr();

    assert_eq!(exchange(addr, b"garbage\r\n\r\n").status, 400);
    assert_eq!(
        exchange(addr, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n").status,
        400
    );
    assert_eq!(exchange(addr, b"GET /metrics HTTP/2.0\r\n\r\n").status, 505);

    let post = exchange(
        addr,
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nkey=value",
    );
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET"));

    // A head cut short: the client closes its side before the blank line.
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(b"GET /metrics HT").expect("send");
    stream.shutdown(Shutdown::Write).expect("shutdown");
    assert_eq!(read_response(stream).status, 400);

    // A head past 8 KiB, and more after it.
    let mut long = b"GET /metrics HTTP/1.1\r\nX-Filler: ".to_vec();
    long.resize(20_000, b'a');
    assert_eq!(exchange(addr, &long).status, 431);

    // A client that connects and leaves gets nothing and changes nothing.
    drop(TcpStream::connect(addr).expect("connect"));

    assert_eq!(exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").status, 200);
    endpoint.stop();
}

#[test]
fn a_silent_client_times_out() {
    let (_metrics, endpoint) = endpoint();
    let mut stream = TcpStream::connect(endpoint.local_addr()).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    stream.write_all(b"GET /metrics HTTP/1.1\r\n").expect("send");
    let start = Instant::now();
    let response = read_response(stream);
    assert_eq!(response.status, 408);
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(1500),
        "answered after {waited:?}, before the 2 s limit"
    );
    endpoint.stop();
}

/// Whether the listener at `addr` has taken (`accept`ed) the connection from `client`: the
/// server's end of it is established and the listener's accept queue is empty.
fn accepted(addr: SocketAddr, client: SocketAddr) -> bool {
    let sockets = tcp_sockets();
    let established = sockets
        .iter()
        .any(|s| s.local == addr && s.remote == client && s.state == ESTABLISHED);
    let queue_empty = sockets
        .iter()
        .any(|s| s.local == addr && s.state == LISTEN && s.rx_queue == 0);
    established && queue_empty
}

/// Stops `endpoint` under a hang guard (stopping has no time to meet, but must return).
fn stop(endpoint: MetricsEndpoint) {
    ferry_testkit::within("stopping the endpoint", move || endpoint.stop());
}

#[test]
fn stop_returns_and_closes_the_listener() {
    let (_metrics, endpoint) = endpoint();
    let addr = endpoint.local_addr();
    assert_eq!(exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").status, 200);
    stop(endpoint);
    assert!(
        TcpStream::connect(addr).is_err(),
        "the listener is closed after stop"
    );
}

/// Stopping while a client has sent part of its head leaves that client without waiting for
/// the rest: it gets no answer (a 408 would mean the endpoint waited out the 2 s head limit).
#[test]
fn stop_does_not_wait_for_a_dawdling_client() {
    let (_metrics, endpoint) = endpoint();
    let addr = endpoint.local_addr();
    let mut dawdler = TcpStream::connect(addr).expect("connect");
    dawdler.write_all(b"GET /met").expect("send");
    dawdler.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let client = dawdler.local_addr().expect("the dawdler's address");
    wait_until("the endpoint to accept the dawdler", DEADLINE, || {
        accepted(addr, client)
    });
    stop(endpoint);
    let mut answer = Vec::new();
    match dawdler.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the dawdler's connection was not closed: {e}"),
    }
    assert!(
        answer.is_empty(),
        "the dawdler got an answer: {}",
        String::from_utf8_lossy(&answer)
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "the listener is closed after stop"
    );
}

#[test]
fn dropping_the_endpoint_stops_it() {
    let (_metrics, endpoint) = endpoint();
    let addr = endpoint.local_addr();
    ferry_testkit::within("dropping the endpoint", move || drop(endpoint));
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn a_listener_on_every_address_is_woken_through_loopback() {
    let metrics = Arc::new(Metrics::new(&[]));
    let listener = TcpListener::bind("0.0.0.0:0").expect("bind");
    let endpoint = MetricsEndpoint::start(listener, metrics).expect("start");
    let port = endpoint.local_addr().port();
    let response = exchange(
        SocketAddr::from(([127, 0, 0, 1], port)),
        b"GET /metrics HTTP/1.1\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    stop(endpoint);
    assert!(
        TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_err(),
        "the listener is closed after stop"
    );
}
