//! The protobuf binary codec against prost (through `prost-reflect`, which encodes and decodes
//! with prost's wire primitives): random messages of every type of the codegen test schema
//! encode to the bytes prost writes and decode to the same values; hand-made inputs pin the
//! decoding rules (unknown fields, unpacked repeated, last-one-wins, merging, errors).

use ferry_reflect::Schema;
use ferry_reflect::protobuf::{self, ProtobufErrorKind, ProtobufLimits};
use ferry_testkit::{Builder, Rng, pool};
use ferry_wire::{Context, DynamicMessage, List, Value};
use prost::Message as _;

fn schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ferry-codegen-tests/proto");
    Schema::load(
        &[
            dir.join("ferry/test/all.proto"),
            dir.join("ferry/test/other.proto"),
        ],
        &[&dir],
    )
    .unwrap()
}

#[test]
fn random_messages_match_prost_byte_for_byte() {
    let schema = schema();
    let pool = pool();
    let ctx = Context::new(pool.clone());
    let names: Vec<String> = schema
        .pool()
        .all_messages()
        .filter(|m| m.package_name().starts_with("ferry.test") && !m.is_map_entry())
        .map(|m| m.full_name().to_string())
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let (mut checked, mut identical, mut maps) = (0, 0, 0);
    for name in &names {
        let md = schema.descriptor(name).unwrap();
        let desc = schema.message(name).unwrap();
        for seed in 1..=60u64 {
            let mut b = Builder {
                rng: Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ name.len() as u64 | 1),
                pool: &pool,
                ctx: &ctx,
            };
            let m = b.message(desc, 0);
            let ours = protobuf::encode(&md, &m);
            let theirs = prost_reflect::DynamicMessage::decode(md.clone(), &ours[..])
                .unwrap_or_else(|e| panic!("{name} seed {seed}: prost rejects our bytes: {e}"));
            let prost_bytes = theirs.encode_to_vec();
            // prost-reflect keeps maps in hash order; Ferry (and prost's generated code with
            // BTreeMaps) in key order. With at most one entry per map the bytes must be equal.
            if unordered_maps(&m) {
                maps += 1;
            } else {
                assert!(
                    ours == prost_bytes,
                    "{name} seed {seed}: bytes differ from prost's"
                );
                identical += 1;
            }
            let back = protobuf::decode(&md, desc, &prost_bytes, &ctx, &ProtobufLimits::default())
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            assert_eq!(back, m, "{name} seed {seed}: decoded values differ");
            assert!(
                protobuf::encode(&md, &back) == ours,
                "{name} seed {seed}: not deterministic"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, names.len() * 60);
    // Most cases compare bytes: only messages with a map of two entries or more do not.
    assert!(
        identical > 2 * maps,
        "{identical} byte-identical, {maps} with unordered maps"
    );
}

/// Whether `m` (or a message inside it) has a map with two entries or more.
fn unordered_maps(m: &DynamicMessage<'_>) -> bool {
    m.iter().any(|(n, v)| match v {
        Value::List(List::Messages(items)) => {
            let is_map = matches!(m.desc().field(n).map(|f| f.kind), Some(ferry_wire::Kind::Message(d)) if d.map_entry);
            (is_map && items.len() > 1) || items.iter().any(unordered_maps)
        }
        Value::Message(inner) => unordered_maps(inner),
        _ => false,
    })
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(number: u32, wt: u8, out: &mut Vec<u8>) {
    varint((u64::from(number) << 3) | u64::from(wt), out);
}

/// Field numbers of `ferry.test.AllKinds` used below (see all.proto).
fn all_kinds(schema: &Schema) -> (prost_reflect::MessageDescriptor, &ferry_wire::MessageDesc<'_>) {
    let md = schema.descriptor("ferry.test.AllKinds").unwrap();
    let desc = schema.message("ferry.test.AllKinds").unwrap();
    (md, desc)
}

fn field(md: &prost_reflect::MessageDescriptor, name: &str) -> u32 {
    md.get_field_by_name(name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .number()
}

#[test]
fn decoding_follows_protobufs_rules() {
    let schema = schema();
    let (md, desc) = all_kinds(&schema);
    let ctx = Context::copy_only();
    let f_int32 = field(&md, "f_int32");
    let r_int32 = field(&md, "r_int32");
    let f_string = field(&md, "f_string");
    let mut input = Vec::new();
    // Unknown fields of every wire type, a group included, are skipped.
    for (n, wt, body) in [
        (900u32, 0u8, vec![0x96, 0x01]),
        (901, 1, vec![0; 8]),
        (902, 5, vec![0; 4]),
    ] {
        tag(n, wt, &mut input);
        input.extend(body);
    }
    tag(903, 2, &mut input);
    input.extend([3, b'a', b'b', b'c']);
    tag(904, 3, &mut input);
    tag(1, 0, &mut input);
    input.push(1);
    tag(904, 4, &mut input);
    // The last value of a singular field wins.
    tag(f_int32, 0, &mut input);
    input.push(5);
    tag(f_int32, 0, &mut input);
    varint(-7i64 as u64, &mut input);
    // Repeated scalars packed, then unpacked: both accepted, appended in order.
    tag(r_int32, 2, &mut input);
    input.extend([2, 1, 2]);
    tag(r_int32, 0, &mut input);
    input.push(3);
    tag(f_string, 2, &mut input);
    input.extend([2, b'h', b'i']);
    let m = protobuf::decode(&md, desc, &input, ctx, &ProtobufLimits::default()).unwrap();
    assert_eq!(m.get(f_int32), Some(&Value::I32(-7)));
    assert_eq!(m.get(r_int32), Some(&Value::List(List::I32(vec![1, 2, 3]))));
    match m.get(f_string) {
        Some(Value::Bytes(b)) => assert_eq!(b.as_slice(), b"hi"),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.iter().count(), 3, "unknown fields are not kept");
}

#[test]
fn a_message_given_twice_is_merged() {
    let schema = schema();
    let (md, desc) = all_kinds(&schema);
    let ctx = Context::copy_only();
    let f_message = field(&md, "f_message");
    let PKindMessage(inner_md) = inner(&md, "f_message");
    let a = field(&inner_md, "label");
    let b = field(&inner_md, "children");
    let mut input = Vec::new();
    let mut first = Vec::new();
    tag(a, 2, &mut first);
    first.extend([1, b'x']);
    let mut second = Vec::new();
    tag(b, 2, &mut second);
    second.push(0);
    for part in [first, second] {
        tag(f_message, 2, &mut input);
        varint(part.len() as u64, &mut input);
        input.extend(part);
    }
    let m = protobuf::decode(&md, desc, &input, ctx, &ProtobufLimits::default()).unwrap();
    let Some(Value::Message(inner)) = m.get(f_message) else {
        panic!("{m:?}")
    };
    assert!(
        inner.get(a).is_some() && inner.get(b).is_some(),
        "both occurrences merged: {inner:?}"
    );
}

struct PKindMessage(prost_reflect::MessageDescriptor);

fn inner(md: &prost_reflect::MessageDescriptor, name: &str) -> PKindMessage {
    match md.get_field_by_name(name).unwrap().kind() {
        prost_reflect::Kind::Message(m) => PKindMessage(m),
        k => panic!("{name} is {k:?}"),
    }
}

#[test]
fn bad_input_is_a_typed_error_naming_field_and_offset() {
    let schema = schema();
    let (md, desc) = all_kinds(&schema);
    let ctx = Context::copy_only();
    let limits = ProtobufLimits::default();
    let f_string = field(&md, "f_string");
    let f_int32 = field(&md, "f_int32");
    let decode = |input: &[u8]| protobuf::decode(&md, desc, input, ctx, &limits).unwrap_err();

    // A length past the end.
    let mut input = Vec::new();
    tag(f_string, 2, &mut input);
    input.extend([10, b'a']);
    let e = decode(&input);
    assert_eq!(
        (e.field, e.offset, e.kind.clone()),
        (Some(f_string), 0, ProtobufErrorKind::Truncated)
    );
    assert!(e.to_string().contains("ferry.test.AllKinds"), "{e}");

    // Not UTF-8.
    let mut input = vec![];
    tag(f_int32, 0, &mut input);
    input.push(1);
    tag(f_string, 2, &mut input);
    input.extend([1, 0xff]);
    let e = decode(&input);
    assert_eq!(
        (e.field, e.offset, e.kind),
        (Some(f_string), 2, ProtobufErrorKind::InvalidUtf8)
    );

    // A wire type the field cannot have.
    let mut input = vec![];
    tag(f_string, 0, &mut input);
    input.push(1);
    assert!(matches!(
        decode(&input).kind,
        ProtobufErrorKind::WireType {
            found: 0,
            kind: "string"
        }
    ));

    // An eleven-byte varint; field number 0; an unmatched end group.
    assert_eq!(
        decode(&[
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
        ])
        .kind,
        ProtobufErrorKind::VarintTooLong
    );
    assert!(matches!(
        decode(&[0x00, 0x01]).kind,
        ProtobufErrorKind::InvalidTag(0)
    ));
    assert!(matches!(decode(&[0x0c]).kind, ProtobufErrorKind::InvalidTag(_)));

    // Too large.
    let small = ProtobufLimits { max_len: 4, ..limits };
    let e = protobuf::decode(&md, desc, &[0u8; 5], ctx, &small).unwrap_err();
    assert_eq!(e.kind, ProtobufErrorKind::TooLarge { len: 5, max: 4 });
}

#[test]
fn nesting_is_bounded() {
    let schema = schema();
    let (md, desc) = all_kinds(&schema);
    let ctx = Context::copy_only();
    let f_message = field(&md, "f_message");
    let PKindMessage(inner_md) = inner(&md, "f_message");
    let parent = field(&inner_md, "parent");
    // AllKinds { f_message: Inner { parent: AllKinds { ... } } }: 40 levels below the root.
    let mut input = Vec::new();
    for level in 0..40 {
        let number = if level % 2 == 0 { parent } else { f_message };
        let mut outer = Vec::new();
        tag(number, 2, &mut outer);
        varint(input.len() as u64, &mut outer);
        outer.extend(input);
        input = outer;
    }
    let shallow = ProtobufLimits {
        max_depth: 39,
        ..ProtobufLimits::default()
    };
    let e = protobuf::decode(&md, desc, &input, ctx, &shallow).unwrap_err();
    assert_eq!(e.kind, ProtobufErrorKind::TooDeep(39));
    let enough = ProtobufLimits {
        max_depth: 40,
        ..ProtobufLimits::default()
    };
    let m: DynamicMessage<'_> = protobuf::decode(&md, desc, &input, ctx, &enough).unwrap();
    assert_eq!(protobuf::encode(&md, &m), input, "re-encodes to the same bytes");
}

/// Found by the `protobuf_decode` fuzz target: an implicit-presence field sent with its
/// default value was kept as present, so decoding, encoding (which omits defaults) and
/// decoding again gave another message. A default now reads as absent, and a later default
/// replaces an earlier value.
#[test]
fn an_explicit_default_reads_as_absent() {
    let schema = schema();
    let (md, desc) = all_kinds(&schema);
    let ctx = Context::copy_only();
    let f_int64 = field(&md, "f_int64");
    let mut input = Vec::new();
    tag(f_int64, 0, &mut input);
    input.push(9);
    tag(f_int64, 0, &mut input);
    input.push(0);
    let m = protobuf::decode(&md, desc, &input, ctx, &ProtobufLimits::default()).unwrap();
    assert_eq!(m.get(f_int64), None);
    assert!(protobuf::encode(&md, &m).is_empty());
}

/// Regression (found by the offload engine's corruption test, where prost refused a request the
/// engine accepted): a ten-byte varint whose last byte carries more than bit 63 overflows 64
/// bits; it was accepted with the high bits dropped. prost refuses it, and so does the codec now.
#[test]
fn varint_over_64_bits() {
    let schema = schema();
    let (md, desc) = all_kinds(&schema);
    let ctx = Context::copy_only();
    let limits = ProtobufLimits::default();
    let nine = [0xff; 9];
    // f_int64 (field 2), tenth byte 0x01: bit 63, the largest valid varint.
    let ok = [&[0x10][..], &nine, &[0x01]].concat();
    assert!(protobuf::decode(&md, desc, &ok, ctx, &limits).is_ok());
    // Tenth byte 0x02: bit 64.
    let over = [&[0x10][..], &nine, &[0x02]].concat();
    let e = protobuf::decode(&md, desc, &over, ctx, &limits).unwrap_err();
    assert_eq!((e.field, e.kind), (Some(2), ProtobufErrorKind::VarintTooLong));
    assert!(prost_reflect::DynamicMessage::decode(md.clone(), &over[..]).is_err());
}
