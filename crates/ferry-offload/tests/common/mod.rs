//! What the engine's tests share: a Ferry host serving the demo service on shared memory (in
//! this process, on its own threads), an engine in front of it, the reference tonic server
//! (prost decoding on the host: what a team runs today), and clients.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use ferry::rpc::tokio::{AsyncServer, AsyncServices};
use ferry::rpc::{LoopConfig, Server, Services};
use ferry_offload::demo::DemoServer;
use ferry_offload::demo_host::{DIGEST_SEED, DemoHost, digest, small_digest};
use ferry_offload::engine::{Engine, EngineConfig, RawCodec};
use ferry_offload::grpc_testing::grpc::testing::AsyncTestServiceServer;
use ferry_offload::interop_host::{InteropHost, describe};

/// The demo service's prost types and tonic code.
#[allow(clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/tonic/ferry.offload.demo.rs"));
}

/// A host serving the demo service at `shm://<dir>/host.sock`.
pub struct Host {
    pub addr: String,
    server: Option<Server>,
    services: fn() -> Services,
}

impl Host {
    /// Starts a host of [`DemoHost`] at a fresh address.
    pub fn start(dir: &tempfile::TempDir) -> Host {
        Host::start_with(dir, || demo_services(DemoServer::new(DemoHost)))
    }

    /// Starts a host of the services `services` makes.
    pub fn start_with(dir: &tempfile::TempDir, services: fn() -> Services) -> Host {
        let addr = format!("shm://{}", dir.path().join("host.sock").display());
        let mut host = Host {
            addr,
            server: None,
            services,
        };
        host.restart();
        host
    }

    /// Starts the server again at the same address (after [`stop`](Self::stop)).
    pub fn restart(&mut self) {
        let server = Server::builder((self.services)())
            .listen(&self.addr)
            .loops(1)
            .start()
            .expect("host starts");
        self.server = Some(server);
    }

    /// Calls the host is handling now (its `ferry_rpc_in_flight` gauge).
    pub fn in_flight(&self) -> u64 {
        let server = self.server.as_ref().expect("the host runs");
        let text = server.services().metrics().encode();
        text.lines()
            .find_map(|l| l.strip_prefix("ferry_rpc_in_flight "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no ferry_rpc_in_flight in {text}"))
    }

    /// Bytes outstanding in the host's pools.
    pub fn pool_bytes(&self) -> u64 {
        let server = self.server.as_ref().expect("the host runs");
        server.services().metrics().pool_bytes()
    }

    /// Stops the server (its sessions close).
    pub fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown(Duration::from_millis(100));
        }
    }
}

/// `demo` and the host service describing it (`ferry_offload::demo_host::services`).
pub fn demo_services(demo: impl ferry::rpc::Service) -> Services {
    ferry_offload::demo_host::services(demo).expect("the demo's services")
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An engine in front of `host`, listening on a free loopback port, ready.
pub fn engine(host: &Host, sessions: usize) -> Engine {
    engine_with(host, |c| c.sessions = sessions)
}

/// An engine in front of `host` with the tests' settings, then `tune`'s.
pub fn engine_with(host: &Host, tune: impl FnOnce(&mut EngineConfig)) -> Engine {
    engine_at(&host.addr, tune)
}

/// An engine in front of the host at `addr` with the tests' settings, then `tune`'s.
pub fn engine_at(addr: &str, tune: impl FnOnce(&mut EngineConfig)) -> Engine {
    let mut config = EngineConfig::new(addr);
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.max_message = 1 << 20;
    config.heartbeat = Duration::from_millis(200);
    config.retry = Duration::from_millis(50);
    tune(&mut config);
    let engine = Engine::start(config).expect("engine starts");
    engine
        .wait_ready(Duration::from_secs(20))
        .expect("engine gets the table");
    engine
}

/// A scratch directory for socket paths.
pub fn dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The interop host (`grpc.testing.TestService`, the tokio driver on `addr`) on a thread of its own, serving until the test process ends.
pub fn start_interop_host(addr: String) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        tokio::task::LocalSet::new().block_on(&rt, async move {
            let services = AsyncServices::new()
                .service(AsyncTestServiceServer::new(InteropHost))
                .and_then(|s| s.service(describe().expect("the interop table")))
                .expect("services");
            let server = AsyncServer::bind(services, &[addr.as_str()], LoopConfig::default()).expect("bind");
            ready_tx.send(()).expect("the test waits");
            server
                .run(std::future::pending(), Duration::from_secs(1))
                .await
                .expect("serve");
        });
    });
    ready_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the host binds");
}

/// The reference server: the demo service in tonic with prost, decoding on the host.
#[derive(Debug, Default, Clone, Copy)]
pub struct Reference;

#[tonic::async_trait]
impl pb::demo_server::Demo for Reference {
    async fn echo(
        &self,
        request: tonic::Request<pb::Kinds>,
    ) -> Result<tonic::Response<pb::Kinds>, tonic::Status> {
        Ok(tonic::Response::new(request.into_inner()))
    }

    async fn fail(
        &self,
        request: tonic::Request<pb::FailRequest>,
    ) -> Result<tonic::Response<pb::Empty>, tonic::Status> {
        let r = request.into_inner();
        Err(tonic::Status::new(
            tonic::Code::from_i32(r.code as i32),
            r.message,
        ))
    }

    async fn sleep(
        &self,
        request: tonic::Request<pb::SleepRequest>,
    ) -> Result<tonic::Response<pb::SleepReply>, tonic::Status> {
        tokio::time::sleep(Duration::from_millis(u64::from(request.into_inner().millis))).await;
        Ok(tonic::Response::new(pb::SleepReply { budget_millis: 0 }))
    }

    async fn send_small(
        &self,
        request: tonic::Request<pb::Small>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        let r = request.into_inner();
        let h = small_digest(r.id, r.timestamp, r.flag, r.score, r.tag.as_bytes());
        Ok(tonic::Response::new(pb::Ack { digest: h, count: 1 }))
    }

    async fn send_ints(
        &self,
        request: tonic::Request<pb::Ints>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        let r = request.into_inner();
        let sum = r.values.iter().fold(0u64, |s, &v| s.wrapping_add(u64::from(v)));
        Ok(tonic::Response::new(pb::Ack {
            digest: sum,
            count: r.values.len() as u32,
        }))
    }

    async fn send_chars(
        &self,
        request: tonic::Request<pb::Chars>,
    ) -> Result<tonic::Response<pb::Ack>, tonic::Status> {
        let r = request.into_inner();
        Ok(tonic::Response::new(pb::Ack {
            digest: digest(DIGEST_SEED, r.text.as_bytes()),
            count: r.text.len() as u32,
        }))
    }
}

/// Starts the reference server on a free loopback port, on its own runtime thread; it serves
/// until the process ends.
pub fn reference() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            tonic::transport::Server::builder()
                .add_service(pb::demo_server::DemoServer::new(Reference))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await
                .expect("reference server");
        });
    });
    addr
}

/// A gRPC channel to `addr`.
pub async fn channel(addr: SocketAddr) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connects")
}

/// Calls `path` with raw protobuf `body`: the bytes exactly as given, the answer exactly as
/// received.
pub async fn call_raw(
    channel: &tonic::transport::Channel,
    path: &'static str,
    body: Vec<u8>,
    metadata: &[(&'static str, &'static str)],
    timeout: Option<Duration>,
) -> Result<(Vec<u8>, tonic::metadata::MetadataMap), tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut request = tonic::Request::new(Bytes::from(body));
    for (k, v) in metadata {
        request.metadata_mut().insert(*k, v.parse().expect("ascii"));
    }
    if let Some(t) = timeout {
        request.set_timeout(t);
    }
    let response = grpc
        .unary(request, http::uri::PathAndQuery::from_static(path), RawCodec)
        .await?;
    let metadata = response.metadata().clone();
    Ok((response.into_inner().to_vec(), metadata))
}

/// Where the tests' external scripts live.
pub fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The Go tool `name` (grpcurl, ghz): on `PATH`, or where `go install` puts it
/// (`$GOBIN`, `$(go env GOPATH)/bin`, `~/go/bin`), and that runs (`version_flag` answers);
/// `None` after printing why (the test skips) otherwise, or a failure under
/// `FERRY_REQUIRE_TOOLS=1`.
pub fn require_go_tool(name: &str, version_flag: &str, install: &str) -> Option<PathBuf> {
    use ferry_testkit::tools::{find_tool, missing, run};
    let mut dirs: Vec<PathBuf> = std::env::var_os("GOBIN").map(PathBuf::from).into_iter().collect();
    if let Some(go) = find_tool("go") {
        let mut cmd = std::process::Command::new(go);
        cmd.args(["env", "GOPATH"]);
        let out = run("go env GOPATH", cmd, b"", Duration::from_secs(60));
        if out.status.success() {
            dirs.extend(std::env::split_paths(out.out().trim()).map(|p| p.join("bin")));
        }
    }
    dirs.extend(std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go/bin")));
    let Some(tool) = find_tool(name).or_else(|| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
    else {
        return missing(&format!("{name} is not on PATH nor in GOPATH/bin ({install})"));
    };
    let mut cmd = std::process::Command::new(&tool);
    cmd.arg(version_flag);
    let out = run(
        &format!("{name} {version_flag}"),
        cmd,
        b"",
        Duration::from_secs(60),
    );
    if !out.status.success() {
        return missing(&format!(
            "{} {version_flag} failed: {}",
            tool.display(),
            out.describe()
        ));
    }
    eprintln!(
        "{}: {}",
        tool.display(),
        format!("{}{}", out.out(), out.err()).trim()
    );
    Some(tool)
}

/// What a gRPC call answered, as the bytes on the wire say it.
#[derive(Debug)]
pub struct RawAnswer {
    /// `grpc-status` (from the trailers, or from the headers of a trailers-only answer).
    pub code: u32,
    /// `grpc-message`, percent-decoding left undone.
    pub message: String,
    /// The response message (without its 5-byte gRPC frame header), if any.
    pub body: Vec<u8>,
    /// The response body's compressed flag, if it has a message.
    pub compressed: Option<bool>,
    /// The response headers.
    pub headers: http::HeaderMap,
    /// The response trailers (empty for a trailers-only answer).
    pub trailers: http::HeaderMap,
}

/// One unary call made with `h2` directly: the request's headers are exactly `headers` (a
/// `grpc-timeout` among them is only a header: no timer runs here), and the answer is read as
/// it comes, so a test sees what the engine itself answered and when.
pub async fn call_h2(addr: SocketAddr, path: &str, body: &[u8], headers: &[(&str, &str)]) -> RawAnswer {
    call_h2_framed(addr, path, framed(false, body), headers).await
}

/// `message` with its gRPC prefix: the compressed flag and the length.
pub fn framed(compressed: bool, message: &[u8]) -> Vec<u8> {
    let mut framed = vec![u8::from(compressed)];
    framed.extend((message.len() as u32).to_be_bytes());
    framed.extend(message);
    framed
}

/// A gRPC call opened with `h2` directly, on a connection of its own whose stream window is
/// `window` bytes: the request's headers are exactly `headers`, and the body is the caller's
/// to send (the request's sending half) and to read (the response).
pub async fn h2_call(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    window: u32,
) -> (h2::SendStream<Bytes>, h2::client::ResponseFuture) {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connects");
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .handshake(tcp)
        .await
        .expect("HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.expect("ready");
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let (response, send) = client
        .send_request(request.body(()).unwrap(), false)
        .expect("sends");
    (send, response)
}

/// [`call_h2`] with the request body exactly as given (prefix included).
pub async fn call_h2_framed(
    addr: SocketAddr,
    path: &str,
    framed: Vec<u8>,
    headers: &[(&str, &str)],
) -> RawAnswer {
    // h2's default window (RFC 9113's initial 65,535 bytes).
    let (mut send, response) = h2_call(addr, path, headers, 65_535).await;
    // A server may answer before it reads the body (a refused `grpc-encoding`) and close the
    // stream: sending then fails, and the answer is what counts.
    let _ = send.send_data(Bytes::from(framed), true);
    let response = response.await.expect("an answer");
    let (parts, mut stream) = response.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = stream.data().await {
        let chunk = chunk.expect("data");
        let _ = stream.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = stream.trailers().await.expect("trailers").unwrap_or_default();
    let field = |name: &str| {
        trailers
            .get(name)
            .or_else(|| parts.headers.get(name))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    RawAnswer {
        code: field("grpc-status")
            .and_then(|c| c.parse().ok())
            .expect("a grpc-status"),
        message: field("grpc-message").unwrap_or_default(),
        body: data.get(5..).map(<[u8]>::to_vec).unwrap_or_default(),
        compressed: data.first().map(|&flag| flag == 1),
        headers: parts.headers,
        trailers,
    }
}

/// A test CA and the PEM files a TLS engine and its clients use, made at test time (rcgen,
/// `ferry_net::tls::test_certs`) in `dir`: `ca.pem`, the server's `server.pem` and
/// `server.key` for `localhost` and `127.0.0.1`, and a client's `client.pem` and `client.key`.
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl TlsFiles {
    /// Writes a fresh CA named `name` and the certificates it signs into `dir`.
    pub fn new(dir: &tempfile::TempDir, name: &str) -> TlsFiles {
        let ca = ferry_net::tls::test_certs::TestCa::new(name);
        let server = ca.leaf("localhost", &["localhost", "127.0.0.1"]);
        let client = ca.leaf("ferry test client", &["client.test"]);
        let write = |file: &str, text: &str| {
            let path = dir.path().join(format!("{name}-{file}"));
            std::fs::write(&path, text).expect("writes a PEM file");
            path
        };
        TlsFiles {
            ca: write("ca.pem", &ca.pem()),
            cert: write("server.pem", &server.cert),
            key: write("server.key", &server.key),
            client_cert: write("client.pem", &client.cert),
            client_key: write("client.key", &client.key),
        }
    }

    /// The engine's TLS settings: this server certificate, and with `mtls` client
    /// certificates from this CA required.
    pub fn server(&self, mtls: bool) -> ferry_offload::engine::TlsServer {
        let ca = mtls.then_some(self.ca.as_path());
        ferry_offload::engine::tls_from_files(&self.cert, &self.key, ca).expect("the test certificates load")
    }
}
