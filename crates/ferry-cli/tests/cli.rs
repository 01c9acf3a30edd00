//! `ferry encode`, `decode` and `inspect` as real processes, on `tests/data/everything.proto`.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use base64::Engine as _;
use common::{ferry, stderr};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// `ferry <command> --proto everything.proto --message ferry.test.<message>`.
fn run(command: &str, message: &str, stdin: &[u8]) -> Output {
    let proto = data_dir().join("everything.proto");
    let message = format!("ferry.test.{message}");
    ferry(
        &[command, "--proto", proto.to_str().unwrap(), "--message", &message],
        stdin,
    )
}

fn encode(message: &str, json: &str) -> Vec<u8> {
    let out = run("encode", message, json.as_bytes());
    assert!(out.status.success(), "encode failed on {json}: {}", stderr(&out));
    out.stdout
}

// ---------------------------------------------------------------------------------------------
// A seeded generator of canonical protobuf-JSON for `ferry.test.Everything`, written from the
// schema by hand (not through the code under test): fields in number order, implicit-presence
// fields only when not default, 64-bit integers as strings, shortest floats without ".0".

/// The shared generator, with the value shapes this test needs.
struct Rng(ferry_testkit::Rng);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.0.chance(percent, 100)
    }
    /// A small or an extreme integer, so both ends of every range are exercised.
    fn int(&mut self) -> u64 {
        match self.below(4) {
            0 => self.below(3),
            1 => self.below(1000),
            2 => u64::MAX - self.below(3),
            _ => self.next(),
        }
    }
}

fn float_text(nan: bool, inf: bool, neg: bool, shortest: String) -> String {
    if nan {
        "\"NaN\"".into()
    } else if inf {
        if neg {
            "\"-Infinity\"".into()
        } else {
            "\"Infinity\"".into()
        }
    } else {
        shortest.strip_suffix(".0").unwrap_or(&shortest).to_owned()
    }
}

fn f64_text(r: &mut Rng, nonzero: bool) -> String {
    let x = match r.below(6) {
        0 => f64::NAN,
        1 => [f64::INFINITY, f64::NEG_INFINITY, -0.0, 1.0, 0.1, 1e300][r.below(6) as usize],
        2 => r.below(1000) as f64 - 500.0,
        _ => f64::from_bits(r.next()),
    };
    if nonzero && x.to_bits() == 0 {
        return "1".into();
    }
    float_text(
        x.is_nan(),
        x.is_infinite(),
        x < 0.0,
        serde_json::to_string(&x).unwrap(),
    )
}

fn f32_text(r: &mut Rng, nonzero: bool) -> String {
    let x = match r.below(6) {
        0 => f32::NAN,
        1 => [
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-45,
        ][r.below(6) as usize],
        2 => r.below(1000) as f32 / 4.0,
        _ => f32::from_bits(r.next() as u32),
    };
    if nonzero && x.to_bits() == 0 {
        return "2.5".into();
    }
    float_text(
        x.is_nan(),
        x.is_infinite(),
        x < 0.0,
        serde_json::to_string(&x).unwrap(),
    )
}

fn text(r: &mut Rng, nonempty: bool) -> String {
    const CHARS: &[char] = &[
        'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\u{1}', '\u{7f}', 'é', '€', '😀',
    ];
    let n = r.below(8) + u64::from(nonempty);
    (0..n)
        .map(|_| CHARS[r.below(CHARS.len() as u64) as usize])
        .collect()
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn bytes_text(r: &mut Rng, nonempty: bool) -> String {
    let n = r.below(12) + u64::from(nonempty);
    let b: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
    json_str(&base64::engine::general_purpose::STANDARD.encode(b))
}

const COLORS: &[&str] = &["\"COLOR_UNSPECIFIED\"", "\"RED\"", "\"BLUE\"", "\"NEGATIVE\""];

fn color(r: &mut Rng, nonzero: bool) -> String {
    match r.below(5) {
        // A number the enum does not name stays a number.
        0 => "7".into(),
        i => {
            let i = if nonzero { 1 + (i - 1) % 3 } else { i - 1 };
            COLORS[i as usize].into()
        }
    }
}

/// A scalar of the given proto kind as canonical JSON; `nonzero` for implicit-presence fields.
fn scalar(r: &mut Rng, kind: &str, nonzero: bool) -> String {
    let v = r.int();
    let v = if nonzero && v == 0 { 1 } else { v };
    match kind {
        "int32" | "sint32" | "sfixed32" => (v as i32 as i64).max(i64::from(i32::MIN)).to_string(),
        "uint32" | "fixed32" => (v as u32).max(u32::from(nonzero)).to_string(),
        "int64" | "sint64" | "sfixed64" => format!("\"{}\"", v as i64),
        "uint64" | "fixed64" => format!("\"{v}\""),
        "float" => f32_text(r, nonzero),
        "double" => f64_text(r, nonzero),
        "bool" => if nonzero || r.chance(50) { "true" } else { "false" }.into(),
        "string" => json_str(&text(r, nonzero)),
        "bytes" => bytes_text(r, nonzero),
        "Color" => color(r, nonzero),
        other => panic!("no generator for {other}"),
    }
}

/// The 32-bit generators above can produce 0 from a nonzero u64 (e.g. 2^32): retry for those.
fn nonzero_scalar(r: &mut Rng, kind: &str) -> String {
    loop {
        let s = scalar(r, kind, true);
        if s != "0" {
            return s;
        }
    }
}

const SCALARS: &[(&str, &str)] = &[
    ("i32", "int32"),
    ("i64", "int64"),
    ("u32", "uint32"),
    ("u64", "uint64"),
    ("s32", "sint32"),
    ("s64", "sint64"),
    ("fx32", "fixed32"),
    ("fx64", "fixed64"),
    ("sfx32", "sfixed32"),
    ("sfx64", "sfixed64"),
    ("f32", "float"),
    ("f64", "double"),
    ("flag", "bool"),
    ("text", "string"),
    ("raw", "bytes"),
    ("color", "Color"),
];

fn everything(r: &mut Rng, depth: u32) -> String {
    let p = if depth == 0 { 45 } else { 20 };
    let mut fields: Vec<String> = Vec::new();
    let mut field = |name: &str, value: String| fields.push(format!("\"{name}\":{value}"));
    // 1 ..= 16: singular scalars, implicit presence.
    for (name, kind) in SCALARS {
        if r.chance(p) {
            field(name, nonzero_scalar(r, kind));
        }
    }
    if depth < 2 && r.chance(p) {
        field("child", everything(r, depth + 1));
    }
    if r.chance(p) {
        let mut ts = Vec::new();
        if r.chance(70) {
            ts.push(format!("\"seconds\":{}", nonzero_scalar(r, "int64")));
        }
        if r.chance(70) {
            ts.push(format!("\"nanos\":{}", nonzero_scalar(r, "int32")));
        }
        field("when", format!("{{{}}}", ts.join(",")));
    }
    // 21 ..= 37: repeated, never empty (an empty list is absent).
    for (name, kind) in SCALARS {
        if r.chance(p / 2) {
            let n = 1 + r.below(4);
            let items: Vec<String> = (0..n).map(|_| scalar(r, kind, false)).collect();
            field(&format!("{name}s"), format!("[{}]", items.join(",")));
        }
    }
    if depth < 2 && r.chance(p / 2) {
        let n = 1 + r.below(3);
        let items: Vec<String> = (0..n).map(|_| everything(r, depth + 1)).collect();
        field("children", format!("[{}]", items.join(",")));
    }
    // 41 ..= 46: maps, keys in the order Ferry keeps them (numeric, false < true, bytewise).
    let mut map = |r: &mut Rng,
                   name: &str,
                   key: &mut dyn FnMut(&mut Rng) -> (Key, String),
                   value: &mut dyn FnMut(&mut Rng) -> String| {
        if !r.chance(p / 2) {
            return;
        }
        let mut entries = BTreeMap::new();
        for _ in 0..1 + r.below(4) {
            let (k, text) = key(r);
            let v = value(r);
            entries.insert(k, format!("{}:{v}", json_str(&text)));
        }
        let items: Vec<String> = entries.into_values().collect();
        field(name, format!("{{{}}}", items.join(",")));
    };
    map(
        r,
        "intMap",
        &mut |r| {
            let k = r.int() as i32;
            (Key::Int(i128::from(k)), k.to_string())
        },
        &mut |r| scalar(r, "string", false),
    );
    map(
        r,
        "strMap",
        &mut |r| {
            let k = text(r, false);
            (Key::Str(k.clone()), k)
        },
        &mut |r| {
            if depth < 2 {
                everything(r, depth + 1)
            } else {
                "{}".into()
            }
        },
    );
    map(
        r,
        "boolMap",
        &mut |r| {
            let k = r.chance(50);
            (Key::Int(i128::from(k)), k.to_string())
        },
        &mut |r| bytes_text(r, false),
    );
    map(
        r,
        "u64Map",
        &mut |r| {
            let k = r.int();
            (Key::Int(i128::from(k)), k.to_string())
        },
        &mut |r| f64_text(r, false),
    );
    map(
        r,
        "s64Map",
        &mut |r| {
            let k = r.int() as i64;
            (Key::Int(i128::from(k)), k.to_string())
        },
        &mut |r| color(r, false),
    );
    map(
        r,
        "fx32Map",
        &mut |r| {
            let k = r.int() as u32;
            (Key::Int(i128::from(k)), k.to_string())
        },
        &mut |r| f32_text(r, false),
    );
    // 50 ..= 52: oneof choice; members have explicit presence (defaults are written).
    match r.below(5) {
        0 => field("name", scalar(r, "string", false)),
        1 => field("id", scalar(r, "uint64", false)),
        2 if depth < 2 => {
            let mut nested = Vec::new();
            if r.chance(60) {
                let n = 1 + r.below(2);
                let items: Vec<String> = (0..n).map(|_| everything(r, depth + 1)).collect();
                nested.push(format!("\"items\":[{}]", items.join(",")));
            }
            if r.chance(50) {
                nested.push(format!("\"tag\":{}", bytes_text(r, true)));
            }
            field("nested", format!("{{{}}}", nested.join(",")));
        }
        _ => {}
    }
    // 60, 61: proto3 `optional`: present even when default.
    if r.chance(p) {
        field("optI32", scalar(r, "int32", false));
    }
    if r.chance(p) {
        field("optText", scalar(r, "string", false));
    }
    // 100, 100000: past the first chunks.
    if r.chance(p) {
        field("far", nonzero_scalar(r, "fixed64"));
    }
    if r.chance(p) {
        field("veryFar", nonzero_scalar(r, "int32"));
    }
    format!("{{{}}}", fields.join(","))
}

/// A map key, ordered as Ferry orders map entries.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Int(i128),
    Str(String),
}

#[test]
fn encode_then_decode_is_the_identity_on_random_json() {
    let mut r = Rng(ferry_testkit::Rng::new(0x5eed_f377));
    for i in 0..300 {
        let json = everything(&mut r, 0);
        let bytes = encode("Everything", &json);
        let out = run("decode", "Everything", &bytes);
        assert!(
            out.status.success(),
            "document {i}: decode failed: {}\n{json}",
            stderr(&out)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8 output");
        assert_eq!(text, format!("{json}\n"), "document {i}");
    }
}

/// `decode` accepts the lenient forms and prints the canonical one.
#[test]
fn decode_prints_canonical_json() {
    let bytes = encode(
        "Everything",
        r#"{"i32":0,"opt_i32":0,"u64":12,"f64":"1e3","color":"RED","texts":["a"],"veryFar":null}"#,
    );
    let out = run("decode", "Everything", &bytes);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"u64\":\"12\",\"f64\":1000,\"color\":\"RED\",\"texts\":[\"a\"],\"optI32\":0}\n"
    );
}

/// Example 4 of docs/wire-format.md, byte for byte (the dynamic path follows the format).
const OUTER: &str = r#"{"inner":{"x":7,"tag":"hi"},"nums":[1,-1,3],"far":"72623859790382856"}"#;

#[test]
fn encode_matches_the_wire_format_example() {
    let bytes = encode("Outer", OUTER);
    assert_eq!(bytes.len(), 128);
    assert_eq!(
        &bytes[0x28..0x30],
        &[0x40, 0, 0, 0, 0x28, 0, 0, 0],
        "entry of inner"
    );
    assert_eq!(&bytes[0x38..0x40], &0x0102_0304_0506_0708u64.to_le_bytes(), "far");
    assert_eq!(&bytes[0x68..0x6a], b"hi");
}

#[test]
fn corrupt_bytes_exit_2_naming_the_field_and_offset() {
    let mut bytes = encode("Outer", OUTER);
    // The nested entry of `tag` (at 0x60) now points past the end (doc example 4, rejected inputs).
    bytes[0x60] = 0x7f;
    for command in ["decode", "inspect"] {
        let out = run(command, "Outer", &bytes);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("ferry.test.Outer.inner > ferry.test.Inner.tag"),
            "{err}"
        );
        assert!(err.contains("at byte 96"), "{err}");
        assert!(out.stdout.is_empty());
    }

    let mut bytes = encode("Outer", OUTER);
    bytes[0x30 + 4] = 11; // `nums` length 11: not a multiple of 4
    let out = run("decode", "Outer", &bytes);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`ferry.test.Outer.nums` at byte 48"),
        "{}",
        stderr(&out)
    );

    let out = run("decode", "Outer", &[1, 2, 3]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("at byte 0"), "{}", stderr(&out));
}

/// A string that is not UTF-8 in a nested message (found while reading, after validation) was
/// reported as `ferry.test.Inner.tag`, without the path from the root that validation errors
/// give.
#[test]
fn read_time_errors_name_the_whole_path() {
    let mut bytes = encode("Outer", OUTER);
    let at = bytes.windows(2).position(|w| w == b"hi").unwrap();
    bytes[at] = 0xff;
    for command in ["decode", "inspect"] {
        let out = run(command, "Outer", &bytes);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(
                "decode error in field `ferry.test.Outer.inner > ferry.test.Inner.tag` at byte \
                 96: string is not UTF-8 (valid up to byte 0)"
            ),
            "{command}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// Flipped bytes give a message or a clean exit 2, never a crash.
#[test]
fn mutated_messages_never_crash_decode() {
    let mut r = Rng(ferry_testkit::Rng::new(42));
    for _ in 0..40 {
        let mut bytes = encode("Everything", &everything(&mut r, 0));
        for _ in 0..1 + r.below(3) {
            let i = r.below(bytes.len() as u64) as usize;
            bytes[i] ^= 1 << r.below(8);
        }
        let out = run("decode", "Everything", &bytes);
        assert!(
            matches!(out.status.code(), Some(0 | 2)),
            "{:?}: {}",
            out.status,
            stderr(&out)
        );
    }
}

#[test]
fn inspect_prints_the_layout() {
    let bytes = encode("Outer", OUTER);
    let out = run("inspect", "Outer", &bytes);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "ferry.test.Outer: 128 bytes",
        "0x0000 header ferry.test.Outer: 2 chunks, 3 entries, 64 bytes",
        "  0x0018 chunk 1: group 1, rank base 2, bits 0x0000000000000040 (fields 70)",
        "  0x0028 field 1 inner: ferry.test.Inner = header (offset 0x0040, length 40)",
        "    0x0040 header ferry.test.Inner: 1 chunks, 2 entries, 40 bytes",
        "      0x0058 field 1 x: int32 = 7",
        "      0x0060 field 2 tag: string = (offset 0x0068, length 2) copied \"hi\"",
        "  0x0030 field 2 nums: repeated int32 = packed (offset 0x0070, length 12), 3 elements [1, -1, 3]",
        "  0x0038 field 70 far: fixed64 = 72623859790382856",
        "  header segment (root header and copied region): 0x0000..0x0080, 128 bytes",
        "  zero-copy region: none",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing line {line:?} in\n{text}"
        );
    }
}

/// Example 3 of docs/wire-format.md: `key` was sent by reference, after the header segment.
#[test]
fn inspect_infers_the_zero_copy_region() {
    let mut bytes = vec![
        0x01, 0, 0, 0, 0x02, 0, 0, 0, // preamble: 1 chunk, 2 entries
        0, 0, 0, 0, 0, 0, 0, 0, // chunk 0: group 0, rank base 0
        0x06, 0, 0, 0, 0, 0, 0, 0, // bits: fields 1, 2
        0x30, 0, 0, 0, 0x10, 0, 0, 0, // key: offset 0x30, length 16
        0x28, 0, 0, 0, 0x05, 0, 0, 0, // name: offset 0x28, length 5
        b'f', b'e', b'r', b'r', b'y', 0, 0, 0,
    ];
    bytes.extend_from_slice(b"zero-copy value!");
    let out = run("inspect", "Item", &bytes);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "  0x0018 field 1 key: bytes = (offset 0x0030, length 16) zero-copy [7a 65 72 6f 2d 63 6f 70 79 20 76 61 ...]",
        "  0x0020 field 2 name: string = (offset 0x0028, length 5) copied \"ferry\"",
        "  header segment (root header and copied region): 0x0000..0x0030, 48 bytes",
        "  zero-copy region: 0x0030..0x0040, 16 bytes in 1 values",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing line {line:?} in\n{text}"
        );
    }
    assert!(!text.contains("note:"), "{text}");
}

#[test]
fn unknown_message_exits_1() {
    let out = run("decode", "Nope", &[0; 8]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("unknown message `ferry.test.Nope`"), "{err}");

    // A short name gets a suggestion.
    let proto = data_dir().join("everything.proto");
    let out = ferry(
        &["encode", "--proto", proto.to_str().unwrap(), "--message", "Outer"],
        b"{}",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("did you mean `ferry.test.Outer`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_and_schema_errors_exit_1() {
    let proto = data_dir().join("everything.proto");
    let proto = proto.to_str().unwrap();
    // Missing --message.
    let out = ferry(&["decode", "--proto", proto], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--message"), "{}", stderr(&out));
    // A .proto that does not exist.
    let out = ferry(
        &["decode", "--proto", "/nonexistent/x.proto", "--message", "a.B"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // A .proto that does not parse.
    let dir = std::env::temp_dir().join(format!("ferry-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.proto");
    std::fs::write(&bad, "syntax = \"proto3\"; message M { int32 x = ; }").unwrap();
    let out = ferry(
        &["decode", "--proto", bad.to_str().unwrap(), "--message", "M"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.proto:1:"), "{}", stderr(&out));
    // Editions are refused with a clear message.
    let editions = dir.join("editions.proto");
    std::fs::write(&editions, "edition = \"2023\";\nmessage M { int32 x = 1; }\n").unwrap();
    let out = ferry(
        &["decode", "--proto", editions.to_str().unwrap(), "--message", "M"],
        &[],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("editions are not supported"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn invalid_json_exits_2() {
    for (json, needle) in [
        ("{", "invalid JSON"),
        (r#"{"nope":1}"#, "has no field `nope`"),
        (r#"{"children":[{"u32s":[-1]}]}"#, "at `children[0].u32s[0]`"),
        (r#"{"name":"a","id":"1"}"#, "oneof `choice`"),
        (r#"{"raw":"not base64!"}"#, "invalid base64"),
    ] {
        let out = run("encode", "Everything", json.as_bytes());
        assert_eq!(out.status.code(), Some(2), "{json}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{json}: {}", stderr(&out));
    }
}

/// The dynamic path and a typed message (`ferry::sample::Record`, written in the shape the
/// schema compiler generates) produce the same bytes for the same message.
#[test]
fn dynamic_and_typed_messages_encode_identically() {
    use ferry::Outgoing;
    use ferry::sample::Record;

    let proto = data_dir().join("record.proto");
    let args = [
        "encode",
        "--proto",
        proto.to_str().unwrap(),
        "--message",
        "ferry.sample.Record",
    ];
    let mut r = Rng(ferry_testkit::Rng::new(7));
    for _ in 0..20 {
        let key: Vec<u8> = (0..r.below(20)).map(|_| r.next() as u8).collect();
        let fields: Vec<Vec<u8>> = (0..r.below(4))
            .map(|_| (0..r.below(40)).map(|_| r.next() as u8).collect())
            .collect();
        let b64 = |b: &[u8]| json_str(&base64::engine::general_purpose::STANDARD.encode(b));
        let mut json = Vec::new();
        if !key.is_empty() {
            json.push(format!("\"key\":{}", b64(&key)));
        }
        if !fields.is_empty() {
            let items: Vec<String> = fields.iter().map(|f| b64(f)).collect();
            json.push(format!("\"fields\":[{}]", items.join(",")));
        }
        let json = format!("{{{}}}", json.join(","));
        let out = ferry(&args, json.as_bytes());
        assert!(out.status.success(), "{}", stderr(&out));

        let mut rec = Record::new(ferry::Context::copy_only());
        rec.set_key(&key[..]);
        for f in &fields {
            rec.append_field(&f[..]);
        }
        assert_eq!(out.stdout, rec.to_vec().unwrap(), "{json}");
    }
}

#[test]
fn gen_writes_the_build_rs_output() {
    let out = std::env::temp_dir().join(format!("ferry-gen-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let proto = data_dir().join("everything.proto");
    let o = ferry(
        &[
            "gen",
            "--proto",
            proto.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let generated = std::fs::read_to_string(out.join("ferry_protos.rs")).unwrap();
    assert!(generated.starts_with("// @generated by ferry-build"));
    // The same generator as build.rs: compare with ferry-build's own output for the file.
    let pool = ferry_build::load(&[&proto], &[data_dir()]).unwrap();
    let files = ferry_build::Config::new().generate(&pool).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].contents, generated);
    let _ = std::fs::remove_dir_all(&out);

    let bad = ferry(&["gen", "--proto", "/nonexistent.proto", "--out", "/tmp"], b"");
    assert_eq!(bad.status.code(), Some(1));
}

/// `inspect` accepted a string that is not UTF-8 (exit 0) where `decode` exits 2.
#[test]
fn inspect_rejects_what_decode_rejects() {
    let mut bytes = encode("Item", r#"{"name":"abc"}"#);
    let at = bytes.windows(3).position(|w| w == b"abc").unwrap();
    bytes[at] = 0xff;
    for command in ["decode", "inspect"] {
        let o = run(command, "Item", &bytes);
        assert_eq!(o.status.code(), Some(2), "{command}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("ferry.test.Item.name"),
            "{command}: {}",
            stderr(&o)
        );
    }
}

/// `encode` wrote messages nested deeper than `decode` accepts.
#[test]
fn encode_refuses_what_decode_would_refuse() {
    // Nested.items[0].nested... : two levels per step, 80 levels in all (the limit is 64).
    let steps = 40;
    let json = format!(
        "{}{{}}{}",
        r#"{"items":[{"nested":"#.repeat(steps),
        "}]}".repeat(steps)
    );
    let o = run("encode", "Nested", json.as_bytes());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "wrote {} bytes", o.stdout.len());
    // Names the field and the limit (docs/wire-format.md, section 7).
    for needle in ["ferry.test.Nested.items", "nesting deeper than 64"] {
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
    }
    // One level less is written, and `decode` takes it back with its default limits.
    let json = format!("{}{{}}{}", r#"{"items":[{"nested":"#.repeat(32), "}]}".repeat(32));
    let bytes = encode("Nested", &json);
    let o = run("decode", "Nested", &bytes);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Standard input was read whole, however large, before the size limit was applied.
#[test]
fn oversized_input_is_refused_without_reading_it_all() {
    let big = vec![0u8; (64 << 20) + 1];
    let o = run("decode", "Item", &big);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("message limit"), "{}", stderr(&o));
}

/// `ferry <command> --proto everything.proto --message ferry.test.<message> <options>`.
fn run_with(command: &str, message: &str, options: &[&str], stdin: &[u8]) -> Output {
    let proto = data_dir().join("everything.proto");
    let message = format!("ferry.test.{message}");
    let mut args = vec![command, "--proto", proto.to_str().unwrap(), "--message", &message];
    args.extend_from_slice(options);
    ferry(&args, stdin)
}

#[test]
fn decode_and_inspect_apply_the_limit_options() {
    // Everything > child > child: depth 2, three fields.
    let bytes = encode("Everything", r#"{"child":{"child":{"i32":1}}}"#);
    let len = bytes.len().to_string();
    let short = (bytes.len() - 1).to_string();
    for command in ["decode", "inspect"] {
        for options in [
            &[][..],
            &["--max-depth", "2"],
            &["--max-elements", "3"],
            &["--max-len", &len],
        ] {
            let o = run_with(command, "Everything", options, &bytes);
            assert!(o.status.success(), "{command} {options:?}: {}", stderr(&o));
        }
        for (options, needles) in [
            (
                ["--max-depth", "1"],
                &[
                    "ferry.test.Everything.child",
                    "nesting deeper than 1 (--max-depth)",
                ],
            ),
            (
                ["--max-elements", "2"],
                &[
                    "ferry.test.Everything.child",
                    "more than 2 fields and elements (--max-elements)",
                ],
            ),
            (
                ["--max-len", &short],
                &["exceeds the", "-byte message limit (--max-len)"],
            ),
        ] {
            let o = run_with(command, "Everything", &options, &bytes);
            assert_eq!(o.status.code(), Some(2), "{command} {options:?}: {}", stderr(&o));
            for needle in needles {
                assert!(
                    stderr(&o).contains(needle),
                    "{command} {options:?}: {}",
                    stderr(&o)
                );
            }
        }
        // Past what the format and the decoder allow: a usage error.
        for options in [
            ["--max-depth", "257"],
            ["--max-len", "4294967296"],
            ["--max-depth", "-1"],
        ] {
            let o = run_with(command, "Everything", &options, &bytes);
            assert_eq!(o.status.code(), Some(1), "{command} {options:?}: {}", stderr(&o));
        }
    }
}

#[test]
fn limit_options_show_their_defaults_in_help() {
    for command in ["decode", "inspect"] {
        let o = ferry(&[command, "--help"], b"");
        let help = common::success(&o, &format!("{command} --help"));
        for needle in [
            "--max-depth <N>",
            "[default: 64]",
            "--max-elements <N>",
            "[default: 4194304]",
            "--max-len <BYTES>",
            "[default: 67108864]",
        ] {
            assert!(help.contains(needle), "{command}: {needle} missing in\n{help}");
        }
    }
}

/// `encode` took a JSON object with the same field twice and kept the last value; protobuf's
/// JSON mapping rejects it.
#[test]
fn json_field_given_twice_is_rejected_not_last_wins() {
    for (json, needle) in [
        (r#"{"i32":1,"i32":2}"#, "`i32` given twice"),
        (r#"{"child":{"text":"a","text":"b"}}"#, "`child.text` given twice"),
        (
            r#"{"children":[{},{"raw":"","raw":""}]}"#,
            "`children[1].raw` given twice",
        ),
        (r#"{"intMap":{"1":"a","1":"b"}}"#, "`intMap.1` given twice"),
        (
            r#"{"intMap":{"1":"a","01":"b"}}"#,
            "the same map key as another entry",
        ),
        (
            r#"{"optI32":1,"opt_i32":2}"#,
            "given twice, as `optI32` and `opt_i32`",
        ),
    ] {
        let o = run("encode", "Everything", json.as_bytes());
        assert_eq!(o.status.code(), Some(2), "{json}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{json}: wrote {} bytes", o.stdout.len());
        assert!(stderr(&o).contains(needle), "{json}: {}", stderr(&o));
    }
}
