//! The shared test vectors of `tests/vectors/` (its README says what they are), checked here for
//! Rust; the Python and C bindings check the same files.
//!
//! - Every valid vector: its JSON encodes to exactly its bytes (unless it is decode-only), and
//!   its bytes decode and read back to exactly its JSON text.
//! - Every invalid vector: decoding (or, for `"stage": "read"`, reading) fails with its error
//!   kind, byte offset and field path.
//! - The vectors taken from `docs/wire-format.md` hold the bytes of the document's dumps.
//!
//! `FERRY_BLESS=1 cargo test -p ferry-reflect --test vectors` rewrites `valid.json` and
//! `invalid.json` from the document's examples and seeded random messages, then checks them.

use std::path::{Path, PathBuf};

use ferry_reflect::{Schema, json};
use ferry_testkit::{Builder, Rng, pool};
use ferry_wire::{Context, DecodeError, DynamicMessage, Limits, Outgoing, View};
use serde_json::{Value as Json, json};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

/// Every `.proto` file of `tests/vectors/schemas`, loaded as one schema (as the bindings do).
fn schema() -> Schema {
    let schemas = dir().join("schemas");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&schemas)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    Schema::load(&files, &[&schemas]).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    assert!(text.len() % 2 == 0, "odd hex length");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The error as the vectors write it: the kind's name, the offset and the path.
fn error_json(e: &DecodeError) -> Json {
    let debug = format!("{:?}", e.kind());
    let kind: String = debug.chars().take_while(char::is_ascii_alphanumeric).collect();
    json!({
        "kind": kind,
        "offset": e.offset(),
        "path": e.path().collect::<Vec<_>>(),
        "detail": e.to_string(),
    })
}

fn limits_of(v: &Json) -> Limits {
    let mut l = Limits::default();
    if let Some(o) = v.get("limits") {
        let get = |k: &str| o.get(k).and_then(Json::as_u64);
        l.max_message_len = get("max_message_len").unwrap_or(l.max_message_len);
        l.max_depth = get("max_depth").map_or(l.max_depth, |d| d as u32);
        l.max_elements = get("max_elements").unwrap_or(l.max_elements);
    }
    l
}

/// Encodes protobuf-JSON text as `message`, every value copied.
fn encode_json(schema: &Schema, message: &str, text: &str) -> Vec<u8> {
    let md = schema.descriptor(message).unwrap();
    let desc = schema.message(message).unwrap();
    let doc = json::parse(text).unwrap_or_else(|e| panic!("{message}: {e}"));
    let m = json::from_json(&md, desc, &doc).unwrap_or_else(|e| panic!("{message} {text}: {e}"));
    m.to_vec().unwrap()
}

/// Decodes `bytes` as `message` and reads every field back to JSON text.
fn decode_to_json(
    schema: &Schema,
    message: &str,
    bytes: &[u8],
    limits: &Limits,
) -> Result<String, DecodeError> {
    let md = schema.descriptor(message).unwrap();
    let desc = schema.message(message).unwrap();
    let view = View::decode(bytes, desc, limits)?;
    let m = DynamicMessage::from_view(&view, Context::copy_only())?;
    let mut out = String::new();
    json::to_json(&md, &m, &mut out);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The document's examples.
// ---------------------------------------------------------------------------------------------

/// The bytes of the dump that follows `### Example N` in `docs/wire-format.md`.
fn doc_dump(example: u32) -> Vec<u8> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/wire-format.md"))
            .unwrap();
    let heading = format!("### Example {example}:");
    let start = doc.find(&heading).unwrap_or_else(|| panic!("no `{heading}`"));
    let block = &doc[start..];
    let block = &block[block.find("```text").unwrap() + 7..];
    let block = &block[..block.find("```").unwrap()];
    let mut out = Vec::new();
    for line in block.lines() {
        let data = line.split("//").next().unwrap_or_default().trim();
        let mut tokens = data.split_whitespace();
        let Some(offset) = tokens.next() else { continue };
        assert_eq!(usize::from_str_radix(offset, 16).unwrap(), out.len(), "{line}");
        out.extend(tokens.map(|t| u8::from_str_radix(t, 16).unwrap()));
    }
    out
}

/// (name, message, JSON written by hand from the document's values, example, encodes): a
/// decode-only example holds a zero-copy value, whose bytes a copying encoder places elsewhere.
const EXAMPLES: [(&str, &str, &str, u32, bool); 7] = [
    ("example-0-empty", "fixtures.Scalars", "{}", 0, true),
    (
        "example-1-scalars",
        "fixtures.Scalars",
        r#"{"temp": -2, "id": 3735928559, "ok": true, "ratio": 1.5}"#,
        1,
        true,
    ),
    (
        "example-2-item",
        "fixtures.Item",
        r#"{"key": "AQID", "name": "ferry"}"#,
        2,
        true,
    ),
    (
        "example-3-item-zero-copy",
        "fixtures.Item",
        r#"{"key": "emVyby1jb3B5IHZhbHVlIQ==", "name": "ferry"}"#,
        3,
        false,
    ),
    (
        "example-4-outer",
        "fixtures.Outer",
        r#"{"inner": {"x": 7, "tag": "hi"}, "nums": [1, -1, 3], "far": "72623859790382856"}"#,
        4,
        true,
    ),
    (
        "example-5-tagged",
        "fixtures.Tagged",
        r#"{"counts": {"b": "-2", "a": "1"}, "id": "9"}"#,
        5,
        true,
    ),
    (
        "example-6-record",
        "fixtures.Record",
        r#"{"key": "a2V5", "fields": ["dmFsdWUgb25lLCBsYXJnZQ==", "dHdv", "dGhyZWU="]}"#,
        6,
        false,
    ),
];

fn patch(bytes: &[u8], at: usize, new: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + new.len()].copy_from_slice(new);
    b
}

/// The document's rejected inputs (section 9): (name, reader, bytes, limits, stage).
fn doc_rejects(schema: &Schema) -> Vec<(String, &'static str, Vec<u8>, Json, &'static str)> {
    let ex1 = doc_dump(1);
    let ex2 = doc_dump(2);
    let ex4 = doc_dump(4);
    let ex6 = doc_dump(6);
    let none = Json::Null;
    let mut out = vec![
        (
            "example-1-first-5-bytes",
            "fixtures.Scalars",
            ex1[..5].to_vec(),
            none.clone(),
        ),
        (
            "example-1-first-0x28-bytes",
            "fixtures.Scalars",
            ex1[..0x28].to_vec(),
            none.clone(),
        ),
        (
            "example-1-flags-1",
            "fixtures.Scalars",
            patch(&ex1, 2, &[1, 0]),
            none.clone(),
        ),
        (
            "example-1-field-0",
            "fixtures.Scalars",
            patch(&ex1, 0x10, &[0x2f]),
            none.clone(),
        ),
        (
            "example-1-entry-count-3",
            "fixtures.Scalars",
            patch(&ex1, 4, &[3]),
            none.clone(),
        ),
        (
            "example-1-missing-required",
            "fixtures.ScalarsRequired",
            ex1.clone(),
            none.clone(),
        ),
        (
            "example-2-name-offset-0x34",
            "fixtures.Item",
            patch(&ex2, 0x20, &[0x34]),
            none.clone(),
        ),
        (
            "example-4-chunk-1-bits-0",
            "fixtures.Outer",
            patch(&ex4, 0x20, &[0]),
            none.clone(),
        ),
        (
            "example-4-chunk-1-group-2^23",
            "fixtures.Outer",
            patch(&ex4, 0x18, &(1u32 << 23).to_le_bytes()),
            none.clone(),
        ),
        (
            "example-4-chunk-1-group-0",
            "fixtures.Outer",
            patch(&ex4, 0x18, &[0]),
            none.clone(),
        ),
        (
            "example-4-chunk-1-rank-base-1",
            "fixtures.Outer",
            patch(&ex4, 0x1c, &[1]),
            none.clone(),
        ),
        (
            "example-4-inner-offset-0x70",
            "fixtures.Outer",
            patch(&ex4, 0x28, &[0x70]),
            none.clone(),
        ),
        (
            "example-4-inner-length-0x30",
            "fixtures.Outer",
            patch(&ex4, 0x2c, &[0x30]),
            none.clone(),
        ),
        (
            "example-4-tag-offset-0x7f",
            "fixtures.Outer",
            patch(&ex4, 0x60, &[0x7f]),
            none.clone(),
        ),
        (
            "example-4-nums-length-11",
            "fixtures.Outer",
            patch(&ex4, 0x34, &[11]),
            none.clone(),
        ),
        (
            "example-4-max-message-len",
            "fixtures.Outer",
            ex4.clone(),
            json!({"max_message_len": 0x7f}),
        ),
        (
            "example-4-max-depth-0",
            "fixtures.Outer",
            ex4.clone(),
            json!({"max_depth": 0}),
        ),
        (
            "example-4-max-elements-7",
            "fixtures.Outer",
            ex4.clone(),
            json!({"max_elements": 7}),
        ),
        (
            "example-6-fields-1-length-0x40",
            "fixtures.Record",
            patch(&ex6, 0x3c, &[0x40]),
            none.clone(),
        ),
        (
            "tagged-two-oneof-members",
            "fixtures.Tagged",
            encode_json(schema, "fixtures.TaggedNoOneof", r#"{"id": "9", "label": "x"}"#),
            none.clone(),
        ),
    ]
    .into_iter()
    .map(|(n, m, b, l)| (n.to_string(), m, b, l, "validate"))
    .collect::<Vec<_>>();
    // Accepted by the validator, refused when the string is read as text.
    let bad_text = patch(&ex2, 0x30, &[0x66, 0xff]);
    out.push((
        "example-2-name-not-utf8".into(),
        "fixtures.Item",
        bad_text,
        none,
        "read",
    ));
    out
}

// ---------------------------------------------------------------------------------------------
// Random messages.
// ---------------------------------------------------------------------------------------------

/// Random messages of every type of `kinds.proto`, as protobuf-JSON text, with at most
/// `MAX_RANDOM_LEN` encoded bytes each (so that the files stay readable).
const RANDOM_PER_TYPE: usize = 24;
const MAX_RANDOM_LEN: usize = 6000;
const RANDOM_TYPES: [&str; 3] = ["vectors.Everything", "vectors.Nested", "vectors.Small"];

fn random_json(schema: &Schema, message: &str, seed: u64) -> String {
    let pool = pool();
    let md = schema.descriptor(message).unwrap();
    let desc = schema.message(message).unwrap();
    let mut b = Builder {
        rng: Rng::new(seed),
        pool: &pool,
        ctx: Context::copy_only(),
    };
    let m = b.message(desc, 0);
    let mut out = String::new();
    json::to_json(&md, &m, &mut out);
    out
}

fn bless(schema: &Schema) {
    let mut valid = Vec::new();
    for (name, message, input, example, encodes) in EXAMPLES {
        let bytes = if encodes {
            let bytes = encode_json(schema, message, input);
            assert_eq!(
                bytes,
                doc_dump(example),
                "{name}: the encoder disagrees with the document"
            );
            bytes
        } else {
            doc_dump(example)
        };
        let text = decode_to_json(schema, message, &bytes, &Limits::default()).unwrap();
        valid.push(json!({
            "name": name, "message": message, "json": text, "hex": hex(&bytes),
            "encodes": encodes, "doc": format!("Example {example}"),
        }));
    }
    let mut randoms = Vec::new();
    for message in RANDOM_TYPES {
        let mut kept = 0;
        let mut seed = 1u64;
        while kept < RANDOM_PER_TYPE {
            let text = random_json(schema, message, seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            seed += 1;
            let bytes = encode_json(schema, message, &text);
            if bytes.len() > MAX_RANDOM_LEN {
                continue;
            }
            kept += 1;
            let name = format!(
                "random-{}-{kept}",
                message.rsplit('.').next().unwrap().to_lowercase()
            );
            randoms.push((name.clone(), message, bytes.clone()));
            valid.push(json!({
                "name": name, "message": message, "json": text, "hex": hex(&bytes), "encodes": true,
            }));
        }
    }

    let mut invalid = Vec::new();
    let mut push =
        |name: String, message: &str, bytes: &[u8], limits: Json, stage: &str, err: &DecodeError| {
            let mut v = json!({
                "name": name, "message": message, "hex": hex(bytes), "stage": stage, "error": error_json(err),
            });
            if !limits.is_null() {
                v["limits"] = limits;
            }
            invalid.push(v);
        };
    for (name, message, bytes, limits, stage) in doc_rejects(schema) {
        let v = json!({ "limits": limits });
        let err = decode_to_json(schema, message, &bytes, &limits_of(&v)).expect_err(&name);
        let desc = schema.message(message).unwrap();
        let validated = View::decode(&bytes, desc, &limits_of(&v)).is_ok();
        assert_eq!(validated, stage == "read", "{name}: stage");
        push(name, message, &bytes, limits, stage, &err);
    }
    // Mutations of random vectors: a truncation and one changed byte in the headers each, kept
    // when the decoder refuses them (a changed scalar or data byte is still a valid message).
    let mut rng = Rng::new(0x5eed_f00d);
    for (name, message, bytes) in &randoms {
        let cut = rng.range(0, bytes.len());
        let mut flipped = bytes.clone();
        let at = rng.range(0, bytes.len().min(64));
        flipped[at] ^= 1 << rng.below(8);
        for (what, mutated) in [("truncated", bytes[..cut].to_vec()), ("flipped", flipped)] {
            let desc = schema.message(message).unwrap();
            let stage = if View::decode(&mutated, desc, &Limits::default()).is_ok() {
                "read"
            } else {
                "validate"
            };
            if let Err(err) = decode_to_json(schema, message, &mutated, &Limits::default()) {
                push(
                    format!("{name}-{what}"),
                    message,
                    &mutated,
                    Json::Null,
                    stage,
                    &err,
                );
            }
        }
    }
    for (file, vectors) in [("valid.json", valid), ("invalid.json", invalid)] {
        let text = serde_json::to_string_pretty(&Json::Array(vectors)).unwrap() + "\n";
        std::fs::write(dir().join(file), text).unwrap();
    }
}

fn read(file: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Json::Array(v) => v,
        _ => panic!("{file}: not an array"),
    }
}

fn field<'v>(v: &'v Json, key: &str) -> &'v str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("no string `{key}` in {v}"))
}

#[test]
fn every_vector_holds() {
    let schema = schema();
    if std::env::var_os("FERRY_BLESS").is_some() {
        bless(&schema);
    }

    let valid = read("valid.json");
    let (mut encoded, mut from_doc) = (0, 0);
    for v in &valid {
        let (name, message) = (field(v, "name"), field(v, "message"));
        let bytes = unhex(field(v, "hex"));
        if v["encodes"].as_bool().unwrap() {
            let ours = encode_json(&schema, message, field(v, "json"));
            assert!(ours == bytes, "{name}: encodes to {}", hex(&ours));
            encoded += 1;
        }
        let text = decode_to_json(&schema, message, &bytes, &Limits::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(text, field(v, "json"), "{name}: reads back differently");
        if let Some(doc) = v["doc"].as_str() {
            let example = doc.strip_prefix("Example ").unwrap().parse().unwrap();
            assert!(
                bytes == doc_dump(example),
                "{name}: not the bytes of the document's {doc}"
            );
            from_doc += 1;
        }
    }
    assert_eq!(from_doc, EXAMPLES.len());
    assert_eq!(valid.len(), EXAMPLES.len() + RANDOM_TYPES.len() * RANDOM_PER_TYPE);
    assert_eq!(encoded, valid.len() - 2, "only examples 3 and 6 are decode-only");

    let invalid = read("invalid.json");
    let (mut at_read, mut mutated) = (0, 0);
    for v in &invalid {
        let (name, message) = (field(v, "name"), field(v, "message"));
        let bytes = unhex(field(v, "hex"));
        let limits = limits_of(v);
        let desc = schema.message(message).unwrap();
        let validated = View::decode(&bytes, desc, &limits).is_ok();
        assert_eq!(
            validated,
            field(v, "stage") == "read",
            "{name}: fails at the wrong stage"
        );
        at_read += usize::from(validated);
        mutated += usize::from(name.starts_with("random-"));
        let err =
            decode_to_json(&schema, message, &bytes, &limits).expect_err(&format!("{name}: must be refused"));
        let mut got = error_json(&err);
        let mut want = v["error"].clone();
        // The display text is for people; kind, offset and path are the contract.
        got["detail"] = Json::Null;
        want["detail"] = Json::Null;
        assert_eq!(got, want, "{name}: {err}");
    }
    assert!(
        invalid.len() >= 21 + RANDOM_TYPES.len() * RANDOM_PER_TYPE,
        "{}",
        invalid.len()
    );
    assert!(
        at_read >= 1 && mutated > 0,
        "{at_read} read-time, {mutated} mutated"
    );
}
