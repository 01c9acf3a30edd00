//! grpcurl, a Go gRPC client that knows nothing of Ferry, drives the engine through server
//! reflection alone (no .proto given): `list` finds the demo and health services, `describe`
//! shows the demo service and its messages as the .proto declares them, every demo method
//! answers JSON requests correctly (Echo gives back every field kind, the paper's methods read
//! every value, Fail gives the status asked for, Sleep sees the Go client's deadline), Echo
//! answers as the reference tonic server does (that one called with the .proto), and health
//! says SERVING.
//!
//! Needs `grpcurl` (`go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4`), on
//! `PATH` or in GOPATH/bin; without it each test skips, saying so, unless
//! `FERRY_REQUIRE_TOOLS=1`.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Host, TlsFiles, dir, engine, engine_with, reference};
use ferry_offload::demo_host::{DIGEST_SEED, digest};
use ferry_testkit::Rng;
use ferry_testkit::tools::{Output, run};
use serde_json::{Value, json};

/// How long one grpcurl run may take before the hang guard kills it.
const LIMIT: Duration = Duration::from_secs(120);

fn require_grpcurl() -> Option<PathBuf> {
    common::require_go_tool(
        "grpcurl",
        "-version",
        "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4",
    )
}

/// Runs `grpcurl -plaintext FLAGS... ADDR VERB...` (`list`, `describe SYMBOL`, or a method)
/// with `stdin` (a request given as `-d @`), bounded by grpcurl's own `-max-time` (unless
/// `deadline` is false) and the hang guard.
fn grpcurl(
    tool: &Path,
    addr: SocketAddr,
    flags: &[&str],
    verb: &[&str],
    stdin: &[u8],
    deadline: bool,
) -> Output {
    grpcurl_over(tool, &["-plaintext"], addr, flags, verb, stdin, deadline)
}

/// [`grpcurl`] over TLS, trusting the CA certificates in `ca` (`-cacert`).
fn grpcurl_tls(
    tool: &Path,
    ca: &Path,
    addr: SocketAddr,
    flags: &[&str],
    verb: &[&str],
    stdin: &[u8],
) -> Output {
    let ca = ca.to_str().expect("a UTF-8 path");
    grpcurl_over(tool, &["-cacert", ca], addr, flags, verb, stdin, true)
}

/// [`grpcurl`] with `security`: `-plaintext`, or TLS flags.
fn grpcurl_over(
    tool: &Path,
    security: &[&str],
    addr: SocketAddr,
    flags: &[&str],
    verb: &[&str],
    stdin: &[u8],
    deadline: bool,
) -> Output {
    let mut cmd = Command::new(tool);
    cmd.args(security).args(["-connect-timeout", "20"]);
    if deadline {
        cmd.args(["-max-time", "60"]);
    }
    cmd.args(flags).arg(addr.to_string()).args(verb);
    let what = format!("grpcurl {} {}", flags.join(" "), verb.join(" "));
    run(&what, cmd, stdin, LIMIT)
}

/// Calls `method` with the JSON `request` (through stdin: large requests exceed an argument's
/// size limit) and parses the JSON answer; fails the test on any error.
fn call(tool: &Path, addr: SocketAddr, method: &str, request: &Value) -> Value {
    call_with(tool, addr, &[], method, request)
}

fn call_with(tool: &Path, addr: SocketAddr, args: &[&str], method: &str, request: &Value) -> Value {
    let args = [args, &["-d", "@"]].concat();
    let out = grpcurl(tool, addr, &args, &[method], request.to_string().as_bytes(), true);
    assert!(out.status.success(), "{method}: {}", out.describe());
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{method}: the answer is not JSON ({e}): {}", out.describe()))
}

/// `value` with every number as an `f64`: the sender and grpcurl may write the same number
/// differently (`3.0` and `3`). Integers that proto3 JSON writes as numbers are 32-bit, exact
/// in an `f64`; 64-bit ones are strings.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().expect("a finite number")),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(k, v)| (k.clone(), normalized(v))).collect())
        }
        other => other.clone(),
    }
}

/// `value` with each `null` as `{}`. prost (the reference server) leaves out a map entry's value
/// when it is the default, an empty message too, and grpcurl shows such an entry's value as
/// `null`; the engine writes the empty message, shown as `{}`. Both mean the same entry, and
/// only a map value can be `null` in grpcurl's output.
fn empty_for_null(value: &Value) -> Value {
    match value {
        Value::Null => json!({}),
        Value::Array(items) => Value::Array(items.iter().map(empty_for_null).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), empty_for_null(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Where `got` and `want` differ, as `path: got, want want` lines (values cut short): a 100 KiB
/// value would bury the difference.
fn differences(got: &Value, want: &Value, path: &str, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let (x, y) = (
                    a.get(key).unwrap_or(&Value::Null),
                    b.get(key).unwrap_or(&Value::Null),
                );
                differences(x, y, &format!("{path}.{key}"), out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ if got != want => {
            let short = |v: &Value| v.to_string().chars().take(120).collect::<String>();
            out.push(format!("{path}: {}, want {}", short(got), short(want)));
        }
        _ => {}
    }
}

/// Fails unless `got` equals `want`, naming the fields that differ.
fn assert_same_json(got: &Value, want: &Value, what: &str) {
    let mut diff = Vec::new();
    differences(got, want, "", &mut diff);
    assert!(diff.is_empty(), "{what}:\n{}", diff.join("\n"));
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// A `Kinds` in proto3 JSON with every field kind set, none to its default (proto3 JSON omits
/// those), except where presence keeps them (optional fields, map values, repeated elements):
/// extremes and negatives, special floats, unicode, a 100 KiB bytes value, recursion, maps of
/// every key kind, the oneof.
fn every_kind(rng: &mut Rng) -> Value {
    let big: Vec<u8> = (0..100 * 1024).map(|_| rng.u64() as u8).collect();
    let long: String = (0..20_000)
        .map(|i| ['a', 'é', '€', '🦀'][(i + rng.below(4) as usize) % 4])
        .collect();
    let singular = json!({
        "fInt32": -2147483648i64, "fInt64": "-9223372036854775808",
        "fUint32": 4294967295u32, "fUint64": "18446744073709551615",
        "fSint32": -1, "fSint64": "-9223372036854775807",
        "fFixed32": 4294967295u32, "fFixed64": rng.u64().to_string(),
        "fSfixed32": -2147483648i64, "fSfixed64": "-1",
        "fFloat": -0.25, "fDouble": 1.7976931348623157e308,
        "fBool": true, "fEnum": "LEVEL_NEGATIVE",
        "fString": "héllo, wörld 🦀 \u{0} nul", "fBytes": base64(&big),
        "fMessage": {
            "label": "outer",
            "parent": {"fInt32": 5, "fMessage": {"label": "deep"}, "rString": [long]},
            "children": [{"label": "c1"}, {}],
        },
    });
    let repeated = json!({
        "rInt32": [0, -1, 2147483647], "rInt64": ["0", "-5", "9223372036854775807"],
        "rUint32": [0, 1, 4294967295u32], "rUint64": ["0", rng.u64().to_string()],
        "rSint32": [-2147483648i64, 0, 2147483647], "rSint64": ["-9223372036854775808", "1"],
        "rFixed32": [7, 0], "rFixed64": ["18446744073709551615"],
        "rSfixed32": [-7], "rSfixed64": ["-9223372036854775808", "0"],
        "rFloat": [1.5, "Infinity", "-Infinity", 0, 3.4028235e38], "rDouble": ["NaN", -2.5e-308, 0.1],
        "rBool": [true, false, true], "rEnum": ["LEVEL_LOW", "LEVEL_UNSPECIFIED", "LEVEL_NEGATIVE"],
        "rString": ["", "ü", "🦀"], "rBytes": ["", base64(&[0, 255])],
        "rMessage": [{}, {"label": "x", "children": [{"label": "y"}]}],
    });
    let mut other = json!({
        "mInt32": {"-1": 0, "7": 7}, "mInt64": {"": "-1", "ключ": "9223372036854775807"},
        "mString": {"0": "zero", "18446744073709551615": "max"},
        "mBytes": {"true": base64(b"yes"), "false": ""},
        "mMessage": {"a": {}, "b": {"label": "b", "parent": {"fBool": true}}},
        "mEnum": {"-3": "LEVEL_NEGATIVE", "0": "LEVEL_UNSPECIFIED"},
        "cInner": {"label": "chosen"},
        "between": -7,
        "oInt32": 0, "oString": "", "oBytes": "",
        "far": "18446744073709551615", "veryFar": base64(b"\x00far away"),
    });
    // json! expands recursively: one literal this size would pass the recursion limit.
    let fields = other.as_object_mut().expect("an object");
    for part in [singular, repeated] {
        let Value::Object(part) = part else { unreachable!() };
        fields.extend(part);
    }
    other
}

#[test]
fn reflection_lists_and_describes_the_services() {
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let addr = engine.local_addr();

    let out = grpcurl(&tool, addr, &[], &["list"], b"", true);
    assert!(out.status.success(), "{}", out.describe());
    let services: Vec<String> = out.out().lines().map(str::to_owned).collect();
    for s in ["ferry.offload.demo.Demo", "grpc.health.v1.Health"] {
        assert!(
            services.iter().any(|l| l == s),
            "list does not show {s}: {services:?}"
        );
    }

    let out = grpcurl(&tool, addr, &[], &["list", "ferry.offload.demo.Demo"], b"", true);
    assert!(out.status.success(), "{}", out.describe());
    let mut methods: Vec<&str> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter(|l| !l.is_empty())
        .collect();
    methods.sort_unstable();
    let want = ["Echo", "Fail", "SendChars", "SendInts", "SendSmall", "Sleep"]
        .map(|m| format!("ferry.offload.demo.Demo.{m}"));
    assert_eq!(methods, want, "the demo's methods");

    let out = grpcurl(
        &tool,
        addr,
        &[],
        &["describe", "ferry.offload.demo.Demo"],
        b"",
        true,
    );
    assert!(out.status.success(), "{}", out.describe());
    let text = out.out();
    assert!(text.contains("ferry.offload.demo.Demo is a service:"), "{text}");
    for (method, request, response) in [
        ("Echo", "Kinds", "Kinds"),
        ("Fail", "FailRequest", "Empty"),
        ("Sleep", "SleepRequest", "SleepReply"),
        ("SendSmall", "Small", "Ack"),
        ("SendInts", "Ints", "Ack"),
        ("SendChars", "Chars", "Ack"),
    ] {
        let line = format!(
            "rpc {method} ( .ferry.offload.demo.{request} ) returns ( .ferry.offload.demo.{response} );"
        );
        assert!(text.contains(&line), "describe lacks `{line}`:\n{text}");
    }

    // The messages too, as the .proto declares them: maps, the oneof, explicit presence, enums,
    // far field numbers.
    let out = grpcurl(
        &tool,
        addr,
        &[],
        &["describe", "ferry.offload.demo.Kinds"],
        b"",
        true,
    );
    assert!(out.status.success(), "{}", out.describe());
    let text = out.out();
    for line in [
        "map<string, .ferry.offload.demo.Kinds.Inner> m_message = 45;",
        "map<sint32, .ferry.offload.demo.Level> m_enum = 46;",
        "oneof choice {",
        "optional bytes o_bytes = 72;",
        "repeated sfixed64 r_sfixed64 = 30;",
        "bytes very_far = 70000;",
    ] {
        assert!(text.contains(line), "describe Kinds lacks `{line}`:\n{text}");
    }
    let out = grpcurl(
        &tool,
        addr,
        &[],
        &["describe", "ferry.offload.demo.Level"],
        b"",
        true,
    );
    assert!(out.status.success(), "{}", out.describe());
    assert!(out.out().contains("LEVEL_NEGATIVE = -5;"), "{}", out.out());
}

#[test]
fn echo_gives_back_every_field_kind_in_json() {
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let addr = engine.local_addr();
    let reference = reference();
    // The reference server has no reflection: grpcurl reads the .proto for it.
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto");
    let proto_dir = proto_dir.to_str().expect("a UTF-8 path");
    let with_proto = ["-import-path", proto_dir, "-proto", "ferry/offload/demo.proto"];

    let mut rng = Rng::new(ferry_testkit::seed("FERRY_TEST_SEED", 15));
    let requests = [
        every_kind(&mut rng),
        // Defaults that presence keeps: a oneof member and optional fields at zero.
        json!({"cNumber": "0", "oInt32": 0, "oBytes": ""}),
        json!({"cText": "", "oString": "", "fMessage": {}}),
        json!({}),
    ];
    for (i, request) in requests.iter().enumerate() {
        let got = call(&tool, addr, "ferry.offload.demo.Demo/Echo", request);
        let what = format!("request {i}: Echo through the engine vs the request");
        assert_same_json(&normalized(&got), &normalized(request), &what);
        let want = call_with(
            &tool,
            reference,
            &with_proto,
            "ferry.offload.demo.Demo/Echo",
            request,
        );
        let what = format!("request {i}: the engine vs the reference server");
        assert_same_json(&got, &empty_for_null(&want), &what);
    }
}

#[test]
fn every_demo_method_answers() {
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let addr = engine.local_addr();
    let mut rng = Rng::new(ferry_testkit::seed("FERRY_TEST_SEED", 16));

    // SendInts: the sum and the count of what was sent.
    let values: Vec<u32> = (0..512).map(|_| (rng.u64() >> rng.below(33)) as u32).collect();
    let sum = values.iter().map(|&v| u64::from(v)).sum::<u64>();
    let ack = call(
        &tool,
        addr,
        "ferry.offload.demo.Demo/SendInts",
        &json!({ "values": values }),
    );
    assert_eq!(ack, json!({"digest": sum.to_string(), "count": 512}), "SendInts");

    // SendChars: the count is the text's UTF-8 length; the digest covers every byte.
    let text: String = (0..8000)
        .map(|_| ['x', 'é', '字', '🦀'][rng.below(4) as usize])
        .collect();
    let ack = call(
        &tool,
        addr,
        "ferry.offload.demo.Demo/SendChars",
        &json!({ "text": text }),
    );
    let want = json!({"digest": digest(DIGEST_SEED, text.as_bytes()).to_string(), "count": text.len()});
    assert_eq!(ack, want, "SendChars");

    // SendSmall: every field read (a negative int64 and a float among them).
    let (id, timestamp, score, tag) = (
        rng.u64() as u32 | 1,
        -(rng.below(1 << 40) as i64) - 1,
        0.75f32,
        "héllo",
    );
    let request =
        json!({"id": id, "timestamp": timestamp.to_string(), "flag": true, "score": score, "tag": tag});
    let ack = call(&tool, addr, "ferry.offload.demo.Demo/SendSmall", &request);
    let mut h = digest(DIGEST_SEED, &id.to_le_bytes());
    h = digest(h, &timestamp.to_le_bytes());
    h = digest(h, &[1]);
    h = digest(h, &score.to_bits().to_le_bytes());
    h = digest(h, tag.as_bytes());
    assert_eq!(ack, json!({"digest": h.to_string(), "count": 1}), "SendSmall");

    // Sleep: grpcurl's -max-time is the call's deadline, which reaches the host.
    let reply = call(
        &tool,
        addr,
        "ferry.offload.demo.Demo/Sleep",
        &json!({"millis": 5}),
    );
    let budget: u64 = reply["budgetMillis"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("Sleep answered {reply}"));
    assert!(
        (1..=60_000).contains(&budget),
        "the host saw a budget of {budget} ms for a 60 s deadline"
    );
    // Without -max-time there is no deadline: the budget is 0, which proto3 JSON omits.
    let out = grpcurl(
        &tool,
        addr,
        &["-d", r#"{"millis": 5}"#],
        &["ferry.offload.demo.Demo/Sleep"],
        b"",
        false,
    );
    assert!(out.status.success(), "{}", out.describe());
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON"),
        json!({}),
        "Sleep without a deadline"
    );

    // Fail: the status asked for, code and message, as grpcurl reports a failed call.
    for (code, name) in [
        (5, "NotFound"),
        (9, "FailedPrecondition"),
        (16, "Unauthenticated"),
    ] {
        let message = format!("asked for {name} ({})", rng.u64());
        let request = json!({"code": code, "message": message});
        let out = grpcurl(
            &tool,
            addr,
            &["-d", &request.to_string()],
            &["ferry.offload.demo.Demo/Fail"],
            b"",
            true,
        );
        assert!(
            !out.status.success(),
            "Fail({code}) succeeded: {}",
            out.describe()
        );
        let err = out.err();
        assert!(
            err.contains(&format!("Code: {name}")),
            "Fail({code}): {}",
            out.describe()
        );
        assert!(
            err.contains(&format!("Message: {message}")),
            "Fail({code}): {}",
            out.describe()
        );
    }
    // Code 0 is not a failure the host can give: INVALID_ARGUMENT, saying why.
    let out = grpcurl(
        &tool,
        addr,
        &["-d", r#"{"code": 0}"#],
        &["ferry.offload.demo.Demo/Fail"],
        b"",
        true,
    );
    assert!(out.err().contains("Code: InvalidArgument"), "{}", out.describe());
}

#[test]
fn health_says_serving() {
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let addr = engine.local_addr();
    for service in ["", "ferry.offload.demo.Demo"] {
        let answer = call(
            &tool,
            addr,
            "grpc.health.v1.Health/Check",
            &json!({ "service": service }),
        );
        assert_eq!(answer, json!({"status": "SERVING"}), "health of {service:?}");
    }
    let out = grpcurl(
        &tool,
        addr,
        &["-d", r#"{"service": "no.Such"}"#],
        &["grpc.health.v1.Health/Check"],
        b"",
        true,
    );
    assert!(out.err().contains("Code: NotFound"), "{}", out.describe());
}

/// Over TLS (certificates made at test time), grpcurl with `-cacert` calls a unary demo method
/// and a server-streaming interop method through the engine.
#[test]
fn unary_and_streaming_calls_over_tls() {
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let files = TlsFiles::new(&dir, "gateway");
    let host = Host::start(&dir);
    let engine = engine_with(&host, |c| c.tls = Some(files.server(false)));
    let out = grpcurl_tls(
        &tool,
        &files.ca,
        engine.local_addr(),
        &["-d", r#"{"values": [1, 2, 3]}"#],
        &["ferry.offload.demo.Demo/SendInts"],
        b"",
    );
    assert!(out.status.success(), "{}", out.describe());
    let ack: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(ack, json!({"digest": "6", "count": 3}), "SendInts over TLS");

    let interop = format!("shm://{}", dir.path().join("interop.sock").display());
    common::start_interop_host(interop.clone());
    let engine = common::engine_at(&interop, |c| c.tls = Some(files.server(false)));
    let out = grpcurl_tls(
        &tool,
        &files.ca,
        engine.local_addr(),
        &[
            "-d",
            r#"{"responseParameters": [{"size": 3}, {"size": 5}, {"size": 7}]}"#,
        ],
        &["grpc.testing.TestService/StreamingOutputCall"],
        b"",
    );
    assert!(out.status.success(), "{}", out.describe());
    let bodies: Vec<Value> = serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .map(|v| v.expect("JSON")["payload"]["body"].clone())
        .collect();
    let want: Vec<Value> = [3, 5, 7].map(|n| json!(base64(&vec![0; n]))).into();
    assert_eq!(bodies, want, "the stream's messages over TLS");
}

/// With `--tls-client-ca` (mTLS): a client without a certificate is refused, naming why; one
/// with a certificate from that CA is served; one whose certificate another CA issued is
/// refused too; and a client that trusts another CA refuses the server as signed by an unknown
/// authority.
#[test]
fn mtls_serves_certified_clients_and_names_why_others_fail() {
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let files = TlsFiles::new(&dir, "gateway");
    let other = TlsFiles::new(&dir, "other");
    let host = Host::start(&dir);
    let engine = engine_with(&host, |c| c.tls = Some(files.server(true)));
    let addr = engine.local_addr();
    let call = |ca: &Path, flags: &[&str]| {
        let flags = [flags, &["-d", r#"{"values": [4]}"#]].concat();
        grpcurl_tls(
            &tool,
            ca,
            addr,
            &flags,
            &["ferry.offload.demo.Demo/SendInts"],
            b"",
        )
    };
    let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
    let (cert, key) = (path(&files.client_cert), path(&files.client_key));
    let served = call(&files.ca, &["-cert", &cert, "-key", &key]);
    assert!(served.status.success(), "{}", served.describe());
    let ack: Value = serde_json::from_slice(&served.stdout).expect("JSON");
    assert_eq!(
        ack,
        json!({"digest": "4", "count": 1}),
        "a certified client's call"
    );

    let refused = |out: Output, why: &str| {
        assert!(!out.status.success(), "served: {}", out.describe());
        assert!(
            out.err().contains(why),
            "the error does not say {why:?}: {}",
            out.describe()
        );
    };
    refused(call(&files.ca, &[]), "certificate required");
    let (other_cert, other_key) = (path(&other.client_cert), path(&other.client_key));
    // Go's client sends no certificate that the server's list of accepted CAs does not name.
    refused(
        call(&files.ca, &["-cert", &other_cert, "-key", &other_key]),
        "certificate required",
    );
    refused(
        call(&other.ca, &["-cert", &cert, "-key", &key]),
        "unknown authority",
    );
}

/// Peers that connect and send nothing hold their own connections only: a TLS client is served
/// while they stall (still open, the handshake timeout far off), and a stalled peer's
/// connection is closed once the timeout passes.
#[test]
fn stalled_handshakes_do_not_stop_a_tls_client_and_end_at_the_timeout() {
    use std::io::Read as _;
    let Some(tool) = require_grpcurl() else { return };
    let dir = dir();
    let files = TlsFiles::new(&dir, "gateway");
    let host = Host::start(&dir);
    let engine = engine_with(&host, |c| {
        let mut tls = files.server(false);
        tls.handshake_timeout = Duration::from_secs(3600);
        c.tls = Some(tls);
    });
    let addr = engine.local_addr();
    let stalled: Vec<std::net::TcpStream> = (0..16)
        .map(|_| std::net::TcpStream::connect(addr).expect("connects"))
        .collect();
    let out = grpcurl_tls(
        &tool,
        &files.ca,
        addr,
        &["-d", r#"{"values": [7]}"#],
        &["ferry.offload.demo.Demo/SendInts"],
        b"",
    );
    assert!(out.status.success(), "{}", out.describe());
    for mut peer in stalled {
        peer.set_nonblocking(true).expect("nonblocking");
        let read = peer.read(&mut [0; 1]);
        assert!(
            read.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
            "a stalled peer's connection is still open and silent: {read:?}"
        );
    }

    let engine = engine_with(&host, |c| {
        let mut tls = files.server(false);
        tls.handshake_timeout = Duration::from_millis(100);
        c.tls = Some(tls);
    });
    let mut peer = std::net::TcpStream::connect(engine.local_addr()).expect("connects");
    // A guard only: the engine closes the connection at its timeout, long before.
    peer.set_read_timeout(Some(LIMIT)).expect("read timeout");
    let read = peer.read(&mut [0; 1]);
    assert!(
        matches!(read, Ok(0))
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the stalled handshake's connection is closed: {read:?}"
    );
}
