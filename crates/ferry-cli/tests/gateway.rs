//! `ferry gateway` as a process: started before its host, it waits for it, then serves gRPC
//! calls through it; it prints the address it serves on.

use std::process::{Command, Stdio};

use ferry::rpc::Server;
use ferry_offload::demo::DemoServer;
use ferry_offload::demo_host::DemoHost;
use ferry_offload::engine::RawCodec;
use ferry_testkit::ChildProc;

fn host(addr: &str) -> Server {
    let services =
        ferry_offload::demo_host::services(DemoServer::new(DemoHost)).expect("the demo's services");
    Server::builder(services)
        .listen(addr)
        .loops(1)
        .start()
        .expect("host starts")
}

#[test]
fn the_gateway_waits_for_its_host_then_serves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let addr = format!("shm://{}", dir.path().join("host.sock").display());
    // Its stderr on the stdout pipe, where its "waiting" line can be waited for.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exec \"$0\" \"$@\" 2>&1", env!("CARGO_BIN_EXE_ferry")])
        .args(["gateway", "--host", &addr, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut gateway = ChildProc::spawn("ferry gateway", cmd);
    let _killer = gateway.killer();
    // The host comes after the engine, once the gateway says it waits for it.
    gateway.expect_line("waiting for the host at ", "the gateway started before its host");
    let _host = host(&addr);
    let listen = gateway.expect_line("serving gRPC on ", "the address it serves on");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let answer = rt.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{listen}"))
            .expect("endpoint")
            .connect()
            .await
            .expect("connects");
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.expect("ready");
        // Ints { values: [1, 2, 3] }, packed.
        let request = tonic::Request::new(bytes::Bytes::from_static(&[0x0a, 0x03, 1, 2, 3]));
        grpc.unary(
            request,
            http::uri::PathAndQuery::from_static("/ferry.offload.demo.Demo/SendInts"),
            RawCodec,
        )
        .await
        .expect("the call succeeds")
        .into_inner()
    });
    // Ack { digest: 6, count: 3 }.
    assert_eq!(&answer[..], &[0x08, 6, 0x10, 3]);
}

/// A TLS file that is not what it should be stops the gateway at start, the error naming the
/// files and what is wrong.
#[test]
fn a_bad_tls_file_is_a_startup_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, "not a PEM certificate\n").expect("writes");
    std::fs::write(&key, "not a PEM key\n").expect("writes");
    let host = format!("shm://{}", dir.path().join("host.sock").display());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferry"));
    cmd.args([
        "gateway",
        "--host",
        &host,
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
    ])
    .arg(&cert)
    .arg("--tls-key")
    .arg(&key);
    let out = ferry_testkit::tools::run("ferry gateway", cmd, b"", std::time::Duration::from_secs(60));
    assert!(!out.status.success(), "it started: {}", out.describe());
    let said = out.err();
    assert!(said.contains(&cert.display().to_string()), "{}", out.describe());
    assert!(said.contains("no CERTIFICATE in the PEM"), "{}", out.describe());
}
