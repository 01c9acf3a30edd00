//! A tonic client calls the demo service through the engine, unchanged (only the address
//! differs from the reference tonic server's): every field kind round-trips to the same bytes
//! the reference server answers; statuses, deadlines and metadata pass through; malformed and
//! oversized requests get the right status and the engine goes on serving; many gRPC
//! connections share few shared-memory sessions; a lost host gives `UNAVAILABLE` and health
//! `NOT_SERVING`, and its return restores both.

mod common;

use std::time::{Duration, Instant};

use common::{Host, call_raw, channel, dir, engine, pb, reference};
use ferry_reflect::Schema;
use ferry_reflect::protobuf;
use ferry_testkit::{DEADLINE, Rng};

const ECHO: &str = "/ferry.offload.demo.Demo/Echo";
const SLEEP: &str = "/ferry.offload.demo.Demo/Sleep";

/// `SleepRequest { millis }` in protobuf.
fn sleep_body(millis: u32) -> Vec<u8> {
    use prost::Message as _;
    pb::SleepRequest { millis }.encode_to_vec()
}

fn schema() -> Schema {
    let pool = prost_reflect::DescriptorPool::decode(ferry_offload::DEMO_DESCRIPTORS).expect("descriptors");
    Schema::new(pool).expect("schema")
}

/// Random `Kinds` requests in protobuf, every field kind among them (seeded).
fn random_requests(n: usize, seed: u64) -> Vec<Vec<u8>> {
    random_messages("Kinds", n, seed)
}

/// Random messages of the demo's `message` in protobuf (seeded).
fn random_messages(message: &str, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let schema = schema();
    let name = format!("ferry.offload.demo.{message}");
    let md = schema.descriptor(&name).expect("a demo message");
    let desc = schema.message(&name).expect("a demo message");
    let pool = ferry_testkit::pool();
    let ctx = ferry::Context::copy_only();
    let mut builder = ferry_testkit::Builder {
        rng: Rng::new(seed),
        pool: &pool,
        ctx,
    };
    (0..n)
        .map(|_| protobuf::encode(&md, &builder.message(desc, 0)))
        .collect()
}

/// The engine's answer and the reference server's are the same message. (Not the same bytes:
/// prost keeps maps in a `HashMap`, so the reference writes map entries in any order.)
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    use prost::Message as _;
    let got =
        pb::Kinds::decode(got).unwrap_or_else(|e| panic!("{what}: the engine's answer does not decode: {e}"));
    let want = pb::Kinds::decode(want).expect("the reference's answer decodes");
    assert!(
        got == want,
        "{what}: the engine's answer differs from the reference server's:\n{got:?}\n{want:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_kind_round_trips_as_the_reference_server_answers() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let through_engine = channel(engine.local_addr()).await;
    let direct = channel(reference()).await;
    let requests = random_requests(300, ferry_testkit::seed("FERRY_TEST_SEED", 15));
    let mut big = 0;
    for (i, body) in requests.into_iter().enumerate() {
        big += usize::from(body.len() > 4096);
        let want = call_raw(&direct, ECHO, body.clone(), &[], None)
            .await
            .expect("reference answers");
        let got = call_raw(&through_engine, ECHO, body.clone(), &[], None)
            .await
            .unwrap_or_else(|s| panic!("request {i} ({} bytes): {s:?}", body.len()));
        assert_same(&got.0, &want.0, &format!("request {i}"));
    }
    // The generator makes large values too: they travel by reference in the shared pool.
    assert!(big > 0, "no request was large");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_tonic_client_works_unchanged() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let mut client = pb::demo_client::DemoClient::new(channel(engine.local_addr()).await);
    let mut reference = pb::demo_client::DemoClient::new(channel(reference()).await);
    let small = pb::Small {
        id: 7,
        timestamp: -1_700_000_000,
        flag: true,
        score: 0.5,
        tag: "héllo".into(),
    };
    let ints = pb::Ints {
        values: (0..512).map(|i| i * 7919 % 100_003).collect(),
    };
    let chars = pb::Chars {
        text: "x".repeat(8000),
    };
    assert_eq!(
        client
            .send_small(small.clone())
            .await
            .expect("small")
            .into_inner(),
        reference.send_small(small).await.expect("small").into_inner()
    );
    assert_eq!(
        client.send_ints(ints.clone()).await.expect("ints").into_inner(),
        reference.send_ints(ints).await.expect("ints").into_inner()
    );
    let ack = client
        .send_chars(chars.clone())
        .await
        .expect("chars")
        .into_inner();
    assert_eq!(ack.count, 8000);
    assert_eq!(
        ack,
        reference.send_chars(chars).await.expect("chars").into_inner()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_deadlines_and_metadata_pass_through() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let mut client = pb::demo_client::DemoClient::new(channel(engine.local_addr()).await);

    // A handler's status, code, message and metadata (Fail echoes x- metadata as trailers).
    let mut request = tonic::Request::new(pb::FailRequest {
        code: 5,
        message: "no such thing".into(),
    });
    request
        .metadata_mut()
        .insert("x-tenant", "green".parse().unwrap());
    let status = client.fail(request).await.expect_err("fails");
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), "no such thing");
    assert_eq!(status.metadata().get("x-tenant").unwrap(), "green");

    // grpc-timeout reaches the host: the handler sees a budget, at most what the client gave
    // (how much of it is left depends on how busy the machine is).
    let mut request = tonic::Request::new(pb::SleepRequest { millis: 1 });
    request.set_timeout(Duration::from_secs(10));
    let budget = client
        .sleep(request)
        .await
        .expect("within the deadline")
        .into_inner()
        .budget_millis;
    assert!(
        (1..=10_000).contains(&budget),
        "the host saw a budget of {budget} ms"
    );
    let none = client
        .sleep(pb::SleepRequest { millis: 1 })
        .await
        .expect("no deadline");
    assert_eq!(none.into_inner().budget_millis, 0);
    // A call past its deadline gets the engine's DEADLINE_EXCEEDED (the header is sent as
    // metadata, so that tonic runs no timer of its own: the answer is the engine's).
    let answer = common::call_h2(
        engine.local_addr(),
        SLEEP,
        &sleep_body(3000),
        &[("grpc-timeout", "100m")],
    )
    .await;
    assert_eq!(answer.code, tonic::Code::DeadlineExceeded as u32, "{answer:?}");

    // Metadata both ways: Echo copies the request's x- metadata into its response.
    let mut request = tonic::Request::new(pb::Kinds::default());
    request.metadata_mut().insert("x-tenant", "blue".parse().unwrap());
    request.metadata_mut().insert_bin(
        "x-trace-bin",
        tonic::metadata::MetadataValue::from_bytes(&[0, 1, 2, 255]),
    );
    request
        .metadata_mut()
        .insert("other", "not echoed".parse().unwrap());
    let response = client.echo(request).await.expect("echo");
    assert_eq!(response.metadata().get("x-tenant").unwrap(), "blue");
    assert_eq!(
        response
            .metadata()
            .get_bin("x-trace-bin")
            .unwrap()
            .to_bytes()
            .unwrap()
            .as_ref(),
        &[0, 1, 2, 255]
    );
    assert!(response.metadata().get("other").is_none());

    // On the wire, the host's headers are HTTP/2 headers and its trailers HTTP/2 trailers
    // (tonic's unary client merges the two into `metadata()`).
    let answer = common::call_h2(
        engine.local_addr(),
        "/ferry.offload.demo.Demo/Echo",
        &[],
        &[("x-tenant", "blue"), ("x-tenant-trailing", "gold")],
    )
    .await;
    assert_eq!(answer.code, 0, "{answer:?}");
    assert_eq!(answer.headers.get("x-tenant").unwrap(), "blue");
    assert!(answer.headers.get("x-tenant-trailing").is_none(), "{answer:?}");
    assert_eq!(answer.trailers.get("x-tenant-trailing").unwrap(), "gold");
    assert!(answer.trailers.get("x-tenant").is_none(), "{answer:?}");

    // An unknown method.
    let unknown = call_raw(
        &channel(engine.local_addr()).await,
        "/ferry.offload.demo.Demo/Nope",
        Vec::new(),
        &[],
        None,
    )
    .await
    .expect_err("unknown method");
    assert_eq!(unknown.code(), tonic::Code::Unimplemented);
}

/// Malformed bodies: what each must name.
fn malformed() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        ("a truncated varint", vec![0x08, 0x80], "field 1 (f_int32)"),
        (
            "a length past the end",
            vec![0x7a, 0x05, b'a'],
            "field 15 (f_string)",
        ),
        (
            "a string that is not UTF-8",
            vec![0x7a, 0x02, 0xc3, 0x28],
            "field 15 (f_string)",
        ),
        (
            "a varint longer than 10 bytes",
            [vec![0x10], vec![0xff; 11]].concat(),
            "field 2 (f_int64)",
        ),
        ("field number 0", vec![0x00, 0x01], "byte 0"),
        ("wire type 7", vec![0x0f], "invalid tag"),
        ("a fixed64 as a varint", vec![0x40, 0x01], "field 8 (f_fixed64)"),
        (
            "a nested string that is not UTF-8",
            vec![0x8a, 0x01, 0x03, 0x0a, 0x01, 0xff],
            "field 1 (label)",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_are_refused_and_the_engine_goes_on() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let chan = channel(engine.local_addr()).await;
    for (what, body, names) in malformed() {
        let status = call_raw(&chan, ECHO, body, &[], None).await.expect_err(what);
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{what}: {status:?}");
        assert!(
            status.message().contains(names),
            "{what}: {:?} does not name {names}",
            status.message()
        );
    }
    // Seeded corruptions of valid requests of every method the paper's messages and Echo
    // take: the engine refuses one (INVALID_ARGUMENT) exactly when the reference server (prost)
    // cannot decode it either, and otherwise answers exactly as the reference does.
    let direct = channel(reference()).await;
    let mut rng = Rng::new(ferry_testkit::seed("FERRY_TEST_SEED", 200));
    let mut refused = 0;
    for (method, message) in [
        (ECHO, "Kinds"),
        ("/ferry.offload.demo.Demo/SendSmall", "Small"),
        ("/ferry.offload.demo.Demo/SendInts", "Ints"),
        ("/ferry.offload.demo.Demo/SendChars", "Chars"),
    ] {
        for (i, mut body) in random_messages(message, 200, rng.u64()).into_iter().enumerate() {
            if body.is_empty() {
                body.push(0xff);
            }
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(body.len() as u64) as usize;
                body[at] = rng.u64() as u8;
            }
            let what = format!("{method} corruption {i}");
            let want = call_raw(&direct, method, body.clone(), &[], None).await;
            match (call_raw(&chan, method, body, &[], None).await, want) {
                (Ok((got, _)), Ok((want, _))) if message == "Kinds" => assert_same(&got, &want, &what),
                (Ok((got, _)), Ok((want, _))) => assert_eq!(got, want, "{what}"),
                (Err(status), Err(_)) => {
                    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{what}: {status:?}");
                    refused += 1;
                }
                (got, want) => panic!("{what}: the engine answered {got:?}, the reference {want:?}"),
            }
        }
    }
    assert!(refused > 0, "no corruption was refused");
    // Oversized: over the engine's 1 MiB limit.
    let status = call_raw(&chan, ECHO, vec![0u8; (1 << 20) + 1], &[], None)
        .await
        .expect_err("oversized");
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    // Still serving, on the same connection.
    let (answer, _) = call_raw(&chan, ECHO, vec![0x08, 0x01], &[], None)
        .await
        .expect("serves");
    assert_eq!(answer, vec![0x08, 0x01]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_grpc_connections_share_two_sessions() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 2);
    let mut tasks = Vec::new();
    for c in 0..16u32 {
        let chan = channel(engine.local_addr()).await;
        tasks.push(tokio::spawn(async move {
            let mut client = pb::demo_client::DemoClient::new(chan);
            for i in 0..50u32 {
                let values: Vec<u32> = (0..c + i).collect();
                let sum = values.iter().map(|&v| u64::from(v)).sum::<u64>();
                let ack = client
                    .send_ints(pb::Ints { values })
                    .await
                    .expect("ints")
                    .into_inner();
                assert_eq!((ack.digest, ack.count), (sum, c + i));
            }
        }));
    }
    for t in tasks {
        t.await.expect("client task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_host_gives_unavailable_and_its_return_restores_service() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    let dir = dir();
    let mut host = Host::start(&dir);
    let engine = engine(&host, 1);
    let chan = channel(engine.local_addr()).await;
    let mut client = pb::demo_client::DemoClient::new(chan.clone());
    let mut health = HealthClient::new(chan);
    let check = HealthCheckRequest {
        service: "ferry.offload.demo.Demo".into(),
    };
    assert_eq!(
        health
            .check(check.clone())
            .await
            .expect("health")
            .into_inner()
            .status,
        ServingStatus::Serving as i32
    );
    client.send_ints(pb::Ints { values: vec![1] }).await.expect("up");

    host.stop();
    let status = client
        .send_ints(pb::Ints { values: vec![1] })
        .await
        .expect_err("host gone");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while health
        .check(check.clone())
        .await
        .expect("health")
        .into_inner()
        .status
        != ServingStatus::NotServing as i32
    {
        assert!(Instant::now() < deadline, "health never said NOT_SERVING");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    host.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.send_ints(pb::Ints { values: vec![2, 3] }).await {
            Ok(ack) => {
                assert_eq!(ack.into_inner().digest, 5);
                break;
            }
            Err(s) => {
                assert_eq!(s.code(), tonic::Code::Unavailable, "{s:?}");
                assert!(Instant::now() < deadline, "the engine never reconnected");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    assert_eq!(
        health.check(check).await.expect("health").into_inner().status,
        ServingStatus::Serving as i32
    );
}

/// The client's budget covers the time a call waits for room in a session's window: with a
/// window of one call, taken by a long call, a call whose deadline passes while it waits gets
/// DEADLINE_EXCEEDED from the engine, before it reaches the host. Regression: the heartbeat,
/// which found that full window, took the busy session for a lost one (its ping was refused
/// with RESOURCE_EXHAUSTED) and dropped it, failing every call with UNAVAILABLE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_covers_the_wait_for_a_window() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = common::engine_with(&host, |c| c.channel.client.window = 1);
    let chan = channel(engine.local_addr()).await;
    let long = {
        let chan = chan.clone();
        tokio::spawn(async move { call_raw(&chan, SLEEP, sleep_body(3000), &[], None).await })
    };
    // The long call takes the window first: the second call starts once it is in the host.
    let until = Instant::now() + DEADLINE;
    while host.in_flight() == 0 {
        assert!(Instant::now() < until, "the long call never reached the host");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let answer = common::call_h2(
        engine.local_addr(),
        SLEEP,
        &sleep_body(1),
        &[("grpc-timeout", "50m")],
    )
    .await;
    assert_eq!(answer.code, tonic::Code::DeadlineExceeded as u32, "{answer:?}");
    assert!(answer.message.contains("waiting"), "{answer:?}");
    long.await.expect("task").expect("the long call succeeds");
}
