//! Probes of the float rules of docs/wire-format.md section 5 in protobuf-JSON: `-0.0` is not a
//! default and prints as the number `-0`; a NaN prints as the string `"NaN"` whatever its
//! payload, and parses back as the canonical quiet NaN.

use ferry_reflect::{Schema, json};
use ferry_wire::{DynamicMessage, Value};

const F32: u32 = 11;
const F64: u32 = 12;

#[test]
fn negative_zero_is_the_number_minus_zero_and_a_nan_loses_its_payload() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ferry-cli/tests/data");
    let schema = Schema::load(&[dir.join("everything.proto")], &[&dir]).unwrap();
    let md = schema.descriptor("ferry.test.Everything").unwrap();
    let desc = schema.message("ferry.test.Everything").unwrap();
    let mut m = DynamicMessage::new(desc);
    m.set(F64, Value::F64(-0.0)).unwrap();
    m.set(F32, Value::F32(f32::from_bits(0x7fc0_0001))).unwrap();
    let mut out = String::new();
    json::to_json(&md, &m, &mut out);
    assert!(out.contains(r#""f64":-0"#), "{out}");
    assert!(out.contains(r#""f32":"NaN""#), "{out}");

    let back = json::from_json(&md, desc, &serde_json::from_str(&out).unwrap()).unwrap();
    match back.get(F64) {
        Some(Value::F64(x)) => assert_eq!(x.to_bits(), (-0.0f64).to_bits(), "-0 stays -0.0"),
        other => panic!("f64 should be present: {other:?}"),
    }
    match back.get(F32) {
        Some(Value::F32(x)) => assert_eq!(x.to_bits(), f32::NAN.to_bits(), "the canonical NaN"),
        other => panic!("f32 should be present: {other:?}"),
    }
}
