//! Messages built with the zFlatBuffers builder are read by another language's FlatBuffers
//! runtime: PyPI's `flatbuffers` package (25.12.19) through `flatc --python` code.
//!
//! The test builds random messages (every block configuration and finish variant, checking
//! each against the stock builder's bytes on the way), writes them to a scratch directory with
//! a JSON file of every field's expected value, generates the Python code with flatc there,
//! and runs `tests/read_interop.py`, which reads each message and compares every field. Then
//! a negative control: the same script on a copy of the JSON with one value changed must fail
//! and name that field, so the check cannot pass by checking nothing.
//!
//! flatc, python3 and the Python package are external: when one is missing the test prints
//! `SKIPPED: ...` and returns, unless `FERRY_REQUIRE_TOOLS=1` (CI) makes it fail.

mod common;

use std::fs;
use std::process::Command;

use common::builders::{Blocks, Finish, assert_pool_back};
use common::random::ferry_objects;
use common::tools::{self, TOOL_LIMIT};
use common::{assert_same_bytes, random};
use ferry_flatbuffers_tests::interop::{self, ItemT, NoteT, PayloadT, RootT, Vec3T};
use ferry_flatbuffers_tests::{SCHEMA, stock_interop};
use ferry_testkit::{Rng, Scratch};
use serde_json::{Value, json};

/// Messages written for Python.
const MESSAGES: u64 = 40;

/// Strings and vectors up to this many bytes: the Python reader walks vectors element by
/// element, so they are smaller than the Rust tests' (a few still pass the 4 KiB `Split` block).
const LARGE: usize = 16 * 1024;

fn vec3_json(v: &Vec3T) -> Value {
    // A float32 is written as the double it converts to exactly.
    json!({"tag": v.tag, "z": v.z, "x": f64::from(v.x), "y": v.y, "color": v.color.0, "id": v.id})
}

fn item_json(i: &ItemT) -> Value {
    json!({"id": i.id, "label": i.label, "weight": i.weight, "tags": i.tags})
}

fn note_json(n: &NoteT) -> Value {
    json!({"text": n.text, "score": n.score})
}

/// Every field of `r`, absent ones as null; `nested_item` is the nested buffer read as an
/// `Item` by the stock verifier (it was built with the stock builder).
fn root_json(r: &RootT) -> Value {
    let payload = match &r.payload {
        PayloadT::Item(i) => item_json(i),
        PayloadT::Note(n) => note_json(n),
        _ => Value::Null,
    };
    let nested_item = r.nested.as_ref().map(|b| {
        let item = stock::root::<interop::Item>(b).expect("the nested Item verifies");
        item_json(&item.unpack())
    });
    json!({
        "u8": r.u8_, "i8": r.i8_, "u16": r.u16_, "i16": r.i16_,
        "u32": r.u32_, "i32": r.i32_, "u64": r.u64_, "i64": r.i64_,
        "f32": f64::from(r.f32_), "f64": r.f64_, "flag": r.flag,
        "color": r.color.0, "level": r.level.0, "maybe": r.maybe,
        "pos": r.pos.as_ref().map(vec3_json),
        "name": r.name, "note": r.note,
        "bytes": r.bytes, "ints": r.ints, "longs": r.longs, "doubles": r.doubles,
        "flags": r.flags,
        "colors": r.colors.as_ref().map(|c| c.iter().map(|c| c.0).collect::<Vec<_>>()),
        "points": r.points.as_ref().map(|p| p.iter().map(vec3_json).collect::<Vec<_>>()),
        "items": r.items.as_ref().map(|i| i.iter().map(item_json).collect::<Vec<_>>()),
        "names": r.names,
        "payload": {"type": r.payload.payload_type().0, "value": payload},
        "child": r.child.as_deref().map(item_json),
        "nested": r.nested,
        "nested_item": nested_item,
    })
}

/// Builds message `case` with both builders (asserting the same bytes), returns ours and how
/// it was finished, with the `RootT` it holds.
fn build(pool: &ferry_buf::Pool, seed: u64, case: u64) -> (Vec<u8>, Finish, RootT) {
    let blocks = Blocks::ALL[(case % 3) as usize];
    let mut rng = Rng::new(seed.wrapping_add(case));
    let finish = Finish::ALL[(case % 5) as usize];
    let force_defaults = rng.chance(1, 3);
    let ours = ferry_objects::root(&mut rng.clone(), LARGE);
    let theirs: stock_interop::RootT = random::stock_objects::root(&mut rng, LARGE);
    let mut fbb = blocks.builder(pool);
    let mut stock = stock::FlatBufferBuilder::new();
    fbb.force_defaults(force_defaults);
    stock.force_defaults(force_defaults);
    let root = ours.pack(&mut fbb);
    finish.apply(&mut fbb, root);
    let stock_root = theirs.pack(&mut stock);
    finish.apply(&mut stock, stock_root);
    let bytes = fbb.finished_message().to_vec();
    assert_same_bytes(&bytes, stock.finished_data(), &format!("case {case}"));
    (bytes, finish, ours)
}

/// Runs the reader on `expected`; its output.
fn read_with_python(python: &std::path::Path, dir: &Scratch, expected: &str) -> tools::Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/read_interop.py");
    let mut cmd = Command::new(python);
    cmd.arg(script).arg(&dir.0).arg(dir.0.join(expected));
    // The generated package is imported from the scratch directory only.
    cmd.env("PYTHONDONTWRITEBYTECODE", "1");
    tools::run("python3 read_interop.py", cmd, TOOL_LIMIT)
}

#[test]
fn python_reads_every_field() {
    let Some(flatc) = tools::require_flatc() else {
        return;
    };
    let Some(python) = tools::require_python_flatbuffers() else {
        return;
    };
    let dir = Scratch::new("fb-python");
    tools::flatc(&flatc, &["--python"], &dir.0, SCHEMA);

    let pool = ferry_testkit::pool();
    let baseline = pool.stats().buffers_outstanding();
    let seed = ferry_testkit::seed("FERRY_FB_SEED", 0x9e7_0000_0000);
    let mut messages = Vec::new();
    for case in 0..MESSAGES {
        let (bytes, finish, root) = build(&pool, seed, case);
        let file = format!("msg_{case:03}.bin");
        fs::write(dir.0.join(&file), &bytes).expect("write a message");
        messages.push(json!({
            "file": file,
            "size_prefixed": finish.size_prefixed(),
            "identified": finish.identified(),
            "root": root_json(&root),
        }));
    }
    assert_pool_back(&pool, baseline);
    let mut expected = json!({ "messages": messages });
    fs::write(dir.0.join("expected.json"), expected.to_string()).expect("write expected.json");

    let out = read_with_python(&python, &dir, "expected.json");
    assert!(out.status.success(), "read_interop.py: {}", out.describe());
    assert_eq!(out.out().trim(), format!("checked {MESSAGES} messages"));

    // Negative control: one changed value must be found.
    let name = &mut expected["messages"][3]["root"]["name"];
    *name = Value::String(format!("{}?", name.as_str().expect("a name")));
    fs::write(dir.0.join("tampered.json"), expected.to_string()).expect("write tampered.json");
    let out = read_with_python(&python, &dir, "tampered.json");
    assert!(
        !out.status.success(),
        "the reader missed a changed name: {}",
        out.describe()
    );
    assert!(
        out.err().contains("msg_003.bin.name: expected"),
        "the reader names the field: {}",
        out.describe()
    );
}
