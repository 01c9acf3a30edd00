//! Compressed gRPC messages through the engine (the gRPC compression spec): tonic's gzip and
//! deflate clients' requests reach the host intact and their answers come back compressed as
//! they accept; an engine told to compress answers does so for a client that lists the
//! encoding, and only then; an unsupported `grpc-encoding` is `UNIMPLEMENTED` naming what the
//! engine accepts; a compressed flag without an encoding is `INTERNAL`; and a zip bomb is
//! refused at the size limit without being inflated.

mod common;

use std::io::{Read as _, Write as _};

use common::{Host, call_h2_framed, channel, dir, engine, engine_with, framed, pb};
use ferry_offload::framing::{ACCEPT_ENCODING, Encoding};
use prost::Message as _;
use tonic::codec::CompressionEncoding;

const ECHO: &str = "/ferry.offload.demo.Demo/Echo";

/// A `Kinds` of about 200 KB that compresses well, and its protobuf.
fn compressible() -> (pb::Kinds, Vec<u8>) {
    let kinds = pb::Kinds {
        f_string: "compressible ".repeat(10_000),
        f_bytes: (0..100_000u32).map(|i| (i % 251) as u8).collect(),
        f_int32: -7,
        ..Default::default()
    };
    let bytes = kinds.encode_to_vec();
    (kinds, bytes)
}

/// A `grpc-message` percent-decoded.
fn decoded(message: &str) -> String {
    let mut out = Vec::new();
    let mut bytes = message.bytes();
    while let Some(b) = bytes.next() {
        let hex = |b: Option<u8>| char::from(b.unwrap_or(b'?')).to_digit(16);
        match b {
            b'%' => match (hex(bytes.next()), hex(bytes.next())) {
                (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                _ => panic!("{message:?} is not percent-encoded"),
            },
            b => out.push(b),
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("the answer is gzip");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_clients_send_and_accept_gzip_and_deflate() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let chan = channel(engine.local_addr()).await;
    let (large, _) = compressible();
    let small = pb::Kinds {
        f_int32: 1,
        ..Default::default()
    };
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Deflate] {
        let mut client = pb::demo_client::DemoClient::new(chan.clone())
            .send_compressed(encoding)
            .accept_compressed(encoding);
        for request in [&large, &small] {
            let answer = client
                .echo(request.clone())
                .await
                .unwrap_or_else(|s| panic!("{encoding:?}, {} bytes: {s:?}", request.encoded_len()));
            // Echo answers what the host read: the request reached it intact.
            assert!(
                answer.get_ref() == request,
                "{encoding:?}: the echo differs from the request"
            );
        }
    }
    // A client that only accepts compressed answers, from an engine that does not compress
    // them unasked, still gets its answer.
    let mut client = pb::demo_client::DemoClient::new(chan).accept_compressed(CompressionEncoding::Gzip);
    let answer = client.echo(large.clone()).await.expect("echo");
    assert!(answer.get_ref() == &large);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_compressed_as_the_request_and_the_engine_say_and_the_client_accepts() {
    let dir = dir();
    let host = Host::start(&dir);
    let plain = engine(&host, 1);
    let compressing = engine_with(&host, |c| c.compress = Some(Encoding::Gzip));
    let (_, message) = compressible();
    let gzipped = framed(true, &gzip(&message));
    let identity = framed(false, &message);
    // (what, engine, request body, request headers, whether the answer is gzipped)
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(&str, _, &Vec<u8>, Headers<'_>, bool); 6] = [
        (
            "plain engine, plain request",
            &plain,
            &identity,
            &[("grpc-accept-encoding", "gzip")],
            false,
        ),
        (
            "plain engine, gzip request",
            &plain,
            &gzipped,
            &[
                ("grpc-encoding", "gzip"),
                ("grpc-accept-encoding", "gzip,identity"),
            ],
            true,
        ),
        (
            "plain engine, gzip request, client accepts only deflate",
            &plain,
            &gzipped,
            &[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "deflate")],
            false,
        ),
        (
            "compressing engine, plain request",
            &compressing,
            &identity,
            &[("grpc-accept-encoding", "identity,deflate,gzip")],
            true,
        ),
        (
            "compressing engine, plain request, no grpc-accept-encoding",
            &compressing,
            &identity,
            &[],
            false,
        ),
        (
            "compressing engine, client accepts only deflate",
            &compressing,
            &identity,
            &[("grpc-accept-encoding", "deflate")],
            false,
        ),
    ];
    for (what, engine, body, headers, gzipped) in cases {
        let answer = call_h2_framed(engine.local_addr(), ECHO, body.to_vec(), headers).await;
        assert_eq!(answer.code, 0, "{what}: {answer:?}");
        assert_eq!(
            answer.headers.get("grpc-accept-encoding").map(|v| v.as_bytes()),
            Some(ACCEPT_ENCODING.as_bytes()),
            "{what}"
        );
        assert_eq!(answer.compressed, Some(gzipped), "{what}");
        if gzipped {
            assert_eq!(answer.headers.get("grpc-encoding").unwrap(), "gzip", "{what}");
            assert!(answer.body.len() < message.len() / 4, "{what}: not smaller");
            assert!(
                gunzip(&answer.body) == message,
                "{what}: the answer inflates wrong"
            );
        } else {
            assert!(answer.headers.get("grpc-encoding").is_none(), "{what}");
            assert!(answer.body == message, "{what}: the answer differs");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_encodings_and_flags_without_one_are_refused() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let (_, message) = compressible();
    let answer = call_h2_framed(
        engine.local_addr(),
        ECHO,
        framed(true, &message),
        &[("grpc-encoding", "snappy")],
    )
    .await;
    assert_eq!(answer.code, tonic::Code::Unimplemented as u32, "{answer:?}");
    assert!(
        decoded(&answer.message).contains(&format!(
            "\"snappy\" is not supported; the engine accepts {ACCEPT_ENCODING}"
        )),
        "{answer:?}"
    );
    assert_eq!(
        answer.headers.get("grpc-accept-encoding").unwrap(),
        ACCEPT_ENCODING
    );
    // The compressed flag on a request without grpc-encoding, and with identity.
    for headers in [&[][..], &[("grpc-encoding", "identity")]] {
        let answer = call_h2_framed(engine.local_addr(), ECHO, framed(true, &gzip(&message)), headers).await;
        assert_eq!(
            answer.code,
            tonic::Code::Internal as u32,
            "{headers:?}: {answer:?}"
        );
        assert!(decoded(&answer.message).contains("compressed flag"), "{answer:?}");
    }
    // Bytes that are not gzip.
    let answer = call_h2_framed(
        engine.local_addr(),
        ECHO,
        framed(true, &message),
        &[("grpc-encoding", "gzip")],
    )
    .await;
    assert_eq!(answer.code, tonic::Code::Internal as u32, "{answer:?}");
    assert!(decoded(&answer.message).contains("not valid gzip"), "{answer:?}");
}

/// The process's resident set now and at its peak since the last reset, in bytes
/// (`/proc/self/status`'s VmRSS and VmHWM).
fn resident() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_bomb_is_refused_at_the_limit_without_inflating_it() {
    const INFLATED: u64 = 100 << 20;
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let limit = 1 << 20; // the tests' engine limit (tests/common)
    // 100 MiB of zeros, gzipped a MiB at a time (the test never holds them inflated).
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..INFLATED >> 20 {
        e.write_all(&zeros).unwrap();
    }
    let bomb = e.finish().unwrap();
    drop(zeros);
    assert!(bomb.len() < limit / 4, "the bomb is {} bytes", bomb.len());
    // The peak resident set from here on (reset where the kernel lets a process do it; else
    // the peak so far, which only makes the check below looser).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (before, _) = resident();
    let answer = call_h2_framed(
        engine.local_addr(),
        ECHO,
        framed(true, &bomb),
        &[("grpc-encoding", "gzip")],
    )
    .await;
    let (_, peak) = resident();
    assert_eq!(answer.code, tonic::Code::ResourceExhausted as u32, "{answer:?}");
    assert!(
        decoded(&answer.message).contains(&format!("limit of {limit} bytes")),
        "{answer:?}"
    );
    // The engine runs in this process: had it inflated the bomb, the peak would be 100 MiB
    // higher. Inflating stops at the limit (1 MiB, in a buffer of at most twice that).
    let grew = peak.saturating_sub(before);
    assert!(
        grew < INFLATED / 4,
        "the resident set grew by {grew} bytes while the engine refused the bomb"
    );
    eprintln!(
        "a {} byte bomb of {INFLATED} bytes refused; the resident set grew by {grew} bytes",
        bomb.len()
    );
    // Still serving.
    let answer = call_h2_framed(
        engine.local_addr(),
        ECHO,
        framed(true, &gzip(&[0x08, 0x01])),
        &[("grpc-encoding", "gzip")],
    )
    .await;
    assert_eq!((answer.code, answer.body), (0, vec![0x08, 0x01]));
}
