//! The tonic-style host of `examples/tonic_style.rs` (the generated `TonicDemo` trait served
//! through `TonicStyle`) behind the engine: the same answers as the reference tonic server,
//! its statuses from tonic's constructors, its response metadata.

mod common;

// The example itself, so that what it shows is what is tested.
#[allow(dead_code)]
#[path = "../examples/tonic_style.rs"]
mod example;

use common::{Host, channel, demo_services, dir, engine, pb, reference};
use ferry::rpc::compat::TonicStyle;
use ferry_offload::demo::DemoServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tonic_style_host_answers_as_the_reference_server() {
    let dir = dir();
    let host = Host::start_with(&dir, || {
        demo_services(DemoServer::new(TonicStyle(example::MyDemo)))
    });
    let engine = engine(&host, 1);
    let mut client = pb::demo_client::DemoClient::new(channel(engine.local_addr()).await);
    let mut reference = pb::demo_client::DemoClient::new(channel(reference()).await);

    let small = pb::Small {
        id: 1,
        timestamp: 2,
        flag: true,
        score: -3.5,
        tag: "tag".into(),
    };
    assert_eq!(
        client
            .send_small(small.clone())
            .await
            .expect("small")
            .into_inner(),
        reference.send_small(small).await.expect("small").into_inner()
    );
    let ints = pb::Ints {
        values: vec![0, 1, 127, 128, 16_384, u32::MAX],
    };
    assert_eq!(
        client.send_ints(ints.clone()).await.expect("ints").into_inner(),
        reference.send_ints(ints).await.expect("ints").into_inner()
    );
    let chars = pb::Chars {
        text: "é".repeat(4000),
    };
    assert_eq!(
        client
            .send_chars(chars.clone())
            .await
            .expect("chars")
            .into_inner(),
        reference.send_chars(chars).await.expect("chars").into_inner()
    );

    let kinds = pb::Kinds {
        f_string: "hello".into(),
        r_int32: vec![-1, 2, -3],
        f_bytes: vec![7; 70_000],
        ..Default::default()
    };
    let mut request = tonic::Request::new(kinds.clone());
    request.metadata_mut().insert("x-tenant", "red".parse().unwrap());
    let response = client.echo(request).await.expect("echo");
    assert_eq!(response.metadata().get("x-tenant").unwrap(), "red");
    assert_eq!(response.into_inner(), kinds);

    let status = client
        .fail(pb::FailRequest {
            code: 0,
            message: String::new(),
        })
        .await
        .expect_err("code 0 is no failure code");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(status.message(), "no status code 0");
}
