//! Generated types: build through the generated API, encode, decode with the generated view,
//! check every field of every kind; echo with zero-copy fields from a pool; and agreement with
//! `DynamicMessage` on the bytes.

use ferry::wire::{DynamicMessage, Limits, Value, View};
use ferry::{Context, Outgoing, Pool, PoolConfig};
use ferry::{Message as _, MessageView as _};
use ferry_codegen_tests::generated::ferry::test::{self as t, all_kinds, other};
use ferry_codegen_tests::generated::google::protobuf as wkt;

const BIG: usize = 4096;

/// An `AllKinds` with every field set (strings and bytes from `big` when given).
fn full<'a>(ctx: &'a Context, big: &'a [u8]) -> t::AllKinds<'a> {
    let mut m = t::AllKinds::new(ctx);
    m.set_f_int32(-1);
    m.set_f_int64(-2);
    m.set_f_uint32(u32::MAX);
    m.set_f_uint64(u64::MAX);
    m.set_f_sint32(i32::MIN);
    m.set_f_sint64(i64::MIN);
    m.set_f_fixed32(7);
    m.set_f_fixed64(8);
    m.set_f_sfixed32(-9);
    m.set_f_sfixed64(-10);
    m.set_f_float(1.5);
    m.set_f_double(-2.25);
    m.set_f_bool(true);
    m.set_f_enum(t::Level::Negative);
    m.set_f_string("héllo");
    m.set_f_bytes(big);
    m.f_message_mut().set_label("inner");
    m.f_message_mut().parent_mut().set_f_int32(42); // recursion through a nested type
    m.f_message_mut().children_mut().push(all_kinds::Inner::new(ctx));

    m.init_r_int32(2);
    m.append_r_int32(1);
    m.append_r_int32(-1);
    m.append_r_int64(i64::MAX);
    m.append_r_uint32(3);
    m.append_r_uint64(4);
    m.append_r_sint32(-5);
    m.append_r_sint64(-6);
    m.append_r_fixed32(7);
    m.append_r_fixed64(8);
    m.append_r_sfixed32(-9);
    m.append_r_sfixed64(-10);
    m.append_r_float(0.5);
    m.append_r_double(f64::MAX);
    m.append_r_bool(true);
    m.append_r_bool(false);
    m.append_r_enum(t::Level::Low);
    m.append_r_enum(99); // unknown enum values survive
    m.append_r_string("a");
    m.append_r_string("");
    m.append_r_bytes(&b"x"[..]);
    m.append_r_bytes(big);
    let mut inner = all_kinds::Inner::new(ctx);
    inner.set_label("r0");
    m.append_r_message(inner);

    m.insert_m_int32(-1, 1);
    m.insert_m_int32(2, -2);
    m.insert_m_int64(3, 4);
    m.insert_m_uint32(5, 6);
    m.insert_m_uint64(7, 8);
    m.insert_m_sint32(-9, 9);
    m.insert_m_sint64(-10, 10);
    m.insert_m_fixed32(11, 12);
    m.insert_m_fixed64(13, 14);
    m.insert_m_sfixed32(-15, 15);
    m.insert_m_sfixed64(-16, 16);
    m.insert_m_float("f", 1.25);
    m.insert_m_double("d", 2.5);
    m.insert_m_bool(true, false);
    m.insert_m_bool(false, true);
    m.insert_m_enum("e", t::Level::LEVEL_MAX);
    m.insert_m_string("k", "v");
    m.insert_m_string("a", "b");
    m.insert_m_bytes(1, big);
    let mut inner = all_kinds::Inner::new(ctx);
    inner.set_label("mv");
    m.insert_m_message("m", inner);

    m.set_c_text("chosen");
    m.set_between(61);
    m.set_o_int32(0); // explicit presence: sent although default
    m.set_o_string("");
    m.set_o_bytes(&b"ob"[..]);
    m.set_o_enum(t::Level::Unspecified);
    m.created_mut().set_seconds(1_700_000_000);
    m.created_mut().set_nanos(5);
    let mut d = wkt::Duration::new(ctx);
    d.set_seconds(3);
    m.append_durations(d);
    m.note_mut().set_level(2);
    m.note_mut().set_mood(other::Mood::Sad);
    m.set_far(u64::MAX - 1);
    m.set_very_far(big);
    m
}

fn check_view(v: &t::AllKindsView<'_>, big: &[u8]) {
    assert_eq!(v.f_int32(), -1);
    assert_eq!(v.f_int64(), -2);
    assert_eq!(v.f_uint32(), u32::MAX);
    assert_eq!(v.f_uint64(), u64::MAX);
    assert_eq!(v.f_sint32(), i32::MIN);
    assert_eq!(v.f_sint64(), i64::MIN);
    assert_eq!(v.f_fixed32(), 7);
    assert_eq!(v.f_fixed64(), 8);
    assert_eq!(v.f_sfixed32(), -9);
    assert_eq!(v.f_sfixed64(), -10);
    assert_eq!(v.f_float(), 1.5);
    assert_eq!(v.f_double(), -2.25);
    assert!(v.f_bool());
    assert_eq!(t::Level::try_from(v.f_enum()), Ok(t::Level::Negative));
    assert_eq!(v.f_string().unwrap(), "héllo");
    assert_eq!(v.f_bytes(), big);
    let inner = v.f_message().unwrap();
    assert_eq!(inner.label().unwrap(), "inner");
    assert_eq!(inner.parent().unwrap().f_int32(), 42);
    assert_eq!(inner.children().count(), 1);

    assert_eq!(v.r_int32().iter().collect::<Vec<_>>(), [1, -1]);
    assert_eq!(v.r_int64().iter().collect::<Vec<_>>(), [i64::MAX]);
    assert_eq!(v.r_uint32().iter().collect::<Vec<_>>(), [3]);
    assert_eq!(v.r_uint64().iter().collect::<Vec<_>>(), [4]);
    assert_eq!(v.r_sint32().iter().collect::<Vec<_>>(), [-5]);
    assert_eq!(v.r_sint64().iter().collect::<Vec<_>>(), [-6]);
    assert_eq!(v.r_fixed32().iter().collect::<Vec<_>>(), [7]);
    assert_eq!(v.r_fixed64().iter().collect::<Vec<_>>(), [8]);
    assert_eq!(v.r_sfixed32().iter().collect::<Vec<_>>(), [-9]);
    assert_eq!(v.r_sfixed64().iter().collect::<Vec<_>>(), [-10]);
    assert_eq!(v.r_float().iter().collect::<Vec<_>>(), [0.5]);
    assert_eq!(v.r_double().iter().collect::<Vec<_>>(), [f64::MAX]);
    assert_eq!(v.r_bool().iter().collect::<Vec<_>>(), [true, false]);
    assert_eq!(v.r_enum().iter().collect::<Vec<_>>(), [1, 99]);
    assert_eq!(
        v.r_string().strs().collect::<Result<Vec<_>, _>>().unwrap(),
        ["a", ""]
    );
    assert_eq!(v.r_bytes().iter().collect::<Vec<_>>(), [&b"x"[..], big]);
    let labels: Vec<_> = v.r_message().map(|i| i.label().unwrap()).collect();
    assert_eq!(labels, ["r0"]);

    assert_eq!(v.m_int32().collect::<Vec<_>>(), [(-1, 1), (2, -2)]);
    assert_eq!(v.m_int64().collect::<Vec<_>>(), [(3, 4)]);
    assert_eq!(v.m_uint32().collect::<Vec<_>>(), [(5, 6)]);
    assert_eq!(v.m_uint64().collect::<Vec<_>>(), [(7, 8)]);
    assert_eq!(v.m_sint32().collect::<Vec<_>>(), [(-9, 9)]);
    assert_eq!(v.m_sint64().collect::<Vec<_>>(), [(-10, 10)]);
    assert_eq!(v.m_fixed32().collect::<Vec<_>>(), [(11, 12)]);
    assert_eq!(v.m_fixed64().collect::<Vec<_>>(), [(13, 14)]);
    assert_eq!(v.m_sfixed32().collect::<Vec<_>>(), [(-15, 15)]);
    assert_eq!(v.m_sfixed64().collect::<Vec<_>>(), [(-16, 16)]);
    assert_eq!(v.m_float().unwrap().collect::<Vec<_>>(), [("f", 1.25)]);
    assert_eq!(v.m_double().unwrap().collect::<Vec<_>>(), [("d", 2.5)]);
    assert_eq!(v.m_bool().collect::<Vec<_>>(), [(false, true), (true, false)]);
    assert_eq!(v.m_enum().unwrap().collect::<Vec<_>>(), [("e", 2)]);
    assert_eq!(
        v.m_string().unwrap().collect::<Vec<_>>(),
        [("a", "b"), ("k", "v")]
    );
    assert_eq!(v.m_bytes().collect::<Vec<_>>(), [(1, big)]);
    let mm: Vec<_> = v
        .m_message()
        .unwrap()
        .map(|(k, val)| (k, val.unwrap().label().unwrap()))
        .collect();
    assert_eq!(mm, [("m", "mv")]);

    assert!(v.has_c_text());
    assert!(!v.has_c_number());
    assert_eq!(v.c_text().unwrap(), "chosen");
    assert_eq!(v.c_number(), 0);
    assert_eq!(v.between(), 61);
    assert!(v.has_o_int32() && v.has_o_string() && v.has_o_bytes() && v.has_o_enum());
    assert_eq!(v.o_int32(), 0);
    assert_eq!(v.o_string().unwrap(), "");
    assert_eq!(v.o_bytes(), b"ob");
    let created = v.created().unwrap();
    assert_eq!((created.seconds(), created.nanos()), (1_700_000_000, 5));
    assert_eq!(v.durations().map(|d| d.seconds()).collect::<Vec<_>>(), [3]);
    let note = v.note().unwrap();
    assert_eq!(note.level(), 2);
    assert_eq!(note.text().unwrap(), "hello"); // proto2 default, absent on the wire
    assert_eq!(note.ratio(), -0.25);
    assert_eq!(note.big(), i64::MIN);
    assert!(!note.has_text());
    assert_eq!(other::Mood::try_from(note.mood()), Ok(other::Mood::Sad));
    assert_eq!(v.far(), u64::MAX - 1);
    assert_eq!(v.very_far(), big);
}

#[test]
fn every_kind_round_trips_copied() {
    let ctx = Context::copy_only();
    let big = vec![0xabu8; BIG];
    let m = full(ctx, &big);
    let bytes = m.to_vec().unwrap();
    assert_eq!(m.layout().zero_copy_count, 0);
    let v = t::AllKinds::decode(&bytes).unwrap();
    check_view(&v, &big);
    // Echo: to_message then encode gives the same bytes.
    let echo = v.to_message(ctx).unwrap();
    assert_eq!(echo.to_vec().unwrap(), bytes);
}

#[test]
fn every_kind_round_trips_with_zero_copy_fields() {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let ctx = Context::new(pool.clone());
    let big = pool.copy_from(&[0x5au8; BIG]).unwrap();
    let m = full(&ctx, &big);
    assert!(m.f_bytes_hybrid().is_zero_copy());
    assert!(m.very_far_hybrid().is_zero_copy());
    assert!(m.r_bytes()[1].is_zero_copy());
    assert!(!m.r_bytes()[0].is_zero_copy());
    let layout = m.layout();
    assert_eq!(layout.zero_copy_count, 4); // f_bytes, r_bytes[1], m_bytes[1], very_far
    let bytes = m.to_vec().unwrap();
    let v = t::AllKinds::decode(&bytes).unwrap();
    check_view(&v, &big);

    // Received into the pool: the echo references the received buffer for large fields.
    let received = pool.copy_from(&bytes).unwrap();
    let v = t::AllKinds::decode_shared(&received).unwrap();
    check_view(&v, &big);
    let echo = v.to_message(&ctx).unwrap();
    assert!(echo.f_bytes_hybrid().is_zero_copy());
    assert_eq!(echo.layout().zero_copy_count, 4);
    assert_eq!(echo.to_vec().unwrap(), bytes);
}

/// docs/wire-format.md section 5: proto3 implicit-presence defaults are compared bitwise. +0.0
/// is omitted; -0.0 and a NaN with a payload are written, and read back bit for bit; a
/// present +0.0 written by `DynamicMessage` reads exactly like an absent field.
#[test]
fn float_defaults_are_compared_bitwise() {
    let ctx = Context::copy_only();
    let empty = t::AllKinds::new(ctx).to_vec().unwrap();
    let nan = f64::from_bits(0x7ff8_0000_dead_beef);
    for (value, sent) in [(0.0, false), (-0.0, true), (nan, true)] {
        let mut m = t::AllKinds::new(ctx);
        m.set_f_double(value);
        let bytes = m.to_vec().unwrap();
        assert_eq!(bytes != empty, sent, "{value:?} sent");
        let v = t::AllKinds::decode(&bytes).unwrap();
        assert_eq!(v.f_double().to_bits(), value.to_bits(), "{value:?} read back");
    }
    let mut d = DynamicMessage::new(&t::ALL_KINDS_DESC);
    d.set(12, Value::F64(0.0)).unwrap();
    let bytes = d.to_vec().unwrap();
    assert_ne!(bytes, empty, "DynamicMessage writes a default it was given");
    let v = t::AllKinds::decode(&bytes).unwrap();
    assert_eq!(v.f_double().to_bits(), 0, "a present +0.0 reads as the default");
    assert_eq!(
        v.to_message(ctx).unwrap().to_vec().unwrap(),
        empty,
        "and is not sent again"
    );
}

#[test]
fn defaults_are_not_sent_and_read_back_as_defaults() {
    let ctx = Context::copy_only();
    let mut m = t::AllKinds::new(ctx);
    m.set_f_int32(0);
    m.set_f_string("");
    m.set_f_float(0.0);
    let bytes = m.to_vec().unwrap();
    assert_eq!(bytes, t::AllKinds::new(ctx).to_vec().unwrap());
    let v = t::AllKinds::decode(&bytes).unwrap();
    assert_eq!(v.f_int32(), 0);
    assert!(!v.has_o_int32());
    assert!(v.f_message().is_none());
    assert_eq!(v.r_int32().len(), 0);
    assert_eq!(v.m_int32().count(), 0);
    // -0.0 is not the default bit pattern: sent.
    m.set_f_float(-0.0);
    let v_bytes = m.to_vec().unwrap();
    assert!(
        t::AllKinds::decode(&v_bytes)
            .unwrap()
            .f_float()
            .is_sign_negative()
    );
}

#[test]
fn oneof_is_one_enum_and_members_replace_each_other() {
    let ctx = Context::copy_only();
    let mut m = t::AllKinds::new(ctx);
    m.set_c_number(5);
    assert!(m.has_c_number());
    m.set_c_local(all_kinds::Local::One);
    assert!(!m.has_c_number());
    assert!(matches!(m.choice(), Some(all_kinds::Choice::CLocal(1))));
    let mut inner = all_kinds::Inner::new(ctx);
    inner.set_label("x");
    m.set_choice(all_kinds::Choice::CInner(Box::new(inner)));
    let bytes = m.to_vec().unwrap();
    let v = t::AllKinds::decode(&bytes).unwrap();
    assert!(v.has_c_inner() && !v.has_c_local());
    assert_eq!(v.c_inner().unwrap().label().unwrap(), "x");
    m.clear_choice();
    assert!(m.choice().is_none());
}

#[test]
fn proto2_required_and_defaults() {
    let ctx = Context::copy_only();
    let note = other::Note::new(ctx);
    assert_eq!(note.text(), "hello");
    assert_eq!(note.mood(), other::Mood::Grumpy as i32);
    assert_eq!(note.ratio(), -0.25);
    // `level` is required: encoding a message without it fails (it used to encode, then be
    // rejected by every decoder).
    let err = note.to_vec().unwrap_err();
    assert!(
        matches!(&err, ferry::EncodeError::MissingRequired { field } if field.ends_with(".level")),
        "{err}"
    );
    let mut note = other::Note::new(ctx);
    note.set_level(0);
    let bytes = note.to_vec().unwrap();
    let v = other::Note::decode(&bytes).unwrap();
    assert_eq!((v.level(), v.text().unwrap(), v.mood()), (0, "hello", 2));
}

#[test]
fn enums_aliases_negative_and_unknown() {
    assert_eq!(t::Level::LEVEL_MAX, t::Level::High);
    assert_eq!(t::Level::from_i32(-5), Some(t::Level::Negative));
    assert_eq!(t::Level::try_from(7), Err(7));
    assert_eq!(i32::from(t::Level::High), 2);
    assert_eq!(t::Level::default(), t::Level::Unspecified);
    assert_eq!(t::Level::Low.as_str_name(), "LEVEL_LOW");
    assert_eq!(other::Mood::from_i32(-1), Some(other::Mood::Sad));
}

#[test]
fn recursion_direct_and_mutual() {
    let ctx = Context::copy_only();
    let mut head = t::Node::new(ctx);
    head.set_value(1);
    head.next_mut().set_value(2);
    head.next_mut().next_mut().set_value(3);
    let bytes = head.to_vec().unwrap();
    let v = t::Node::decode(&bytes).unwrap();
    let values: Vec<i64> = std::iter::successors(Some(v), |n| n.next())
        .map(|n| n.value())
        .collect();
    assert_eq!(values, [1, 2, 3]);

    let mut ping = t::Ping::new(ctx);
    ping.pong_mut().ping_mut().set_n(9);
    let bytes = ping.to_vec().unwrap();
    let v = t::Ping::decode(&bytes).unwrap();
    assert_eq!(v.pong().unwrap().ping().unwrap().n(), 9);
}

#[test]
fn awkward_names() {
    let ctx = Context::copy_only();
    let mut a = t::Awkward::new(ctx);
    a.set_type(1);
    a.set_self_("me");
    a.set_foo_bar(3);
    a.set_match(true);
    a.set_len(5);
    a.set_to_string("s");
    a.set_from_parts(&b"p"[..]);
    a.set_new_2(9);
    a.set_set_type_2(10);
    let bytes = a.to_vec().unwrap();
    let v = t::Awkward::decode(&bytes).unwrap();
    assert_eq!(v.r#type(), 1);
    assert_eq!(v.self_().unwrap(), "me");
    assert_eq!(v.foo_bar(), 3);
    assert!(v.r#match());
    assert_eq!(v.len(), 5);
    assert_eq!(v.to_string().unwrap(), "s");
    assert_eq!(v.from_parts(), b"p");
    assert_eq!(v.new_2(), 9);
    assert_eq!(v.set_type_2(), 10);

    let mut s = t::Self_::new(ctx);
    s.set_crate_(1);
    assert_eq!(t::Self_::decode(&s.to_vec().unwrap()).unwrap().crate_(), 1);
    let mut ty = t::Type::new(ctx);
    ty.set_super_(2);
    assert_eq!(t::Type::decode(&ty.to_vec().unwrap()).unwrap().super_(), 2);

    // Names that collide after case conversion get numbered in declaration order.
    let mut c = other::Collide::new(ctx);
    c.set_foo_bar(1);
    c.set_foo_bar_2(2);
    c.set_foo_bar_3(3);
    let cb = c.to_vec().unwrap();
    let v = other::Collide::decode(&cb).unwrap();
    assert_eq!((v.foo_bar(), v.foo_bar_2(), v.foo_bar_3()), (1, 2, 3));
    let _ = other::Collide2::new(ctx);
}

#[test]
fn map_lookup_by_str() {
    let ctx = Context::copy_only();
    let mut m = t::AllKinds::new(ctx);
    m.insert_m_string("k", "v");
    let key = String::from("k");
    assert_eq!(m.m_string_get(&key).map(|v| v.as_str()), Some("v"));
    assert!(m.m_string_get("nope").is_none());
    assert_eq!(m.m_int32().get(&1), None);
}

#[test]
fn services_are_described() {
    assert_eq!(t::echo_service::NAME, "ferry.test.Echo");
    assert_eq!(
        t::echo_service::METHODS,
        &[
            // FNV-1a of "/ferry.test.Echo/Say", ".../SayLater", ..., folded to 16 bits
            // (computed outside Ferry).
            ("Say", 42441, "ferry.test.SayRequest", "ferry.test.SayResponse"),
            (
                "SayLater",
                55552,
                "ferry.test.SayRequest",
                "ferry.test.SayResponse"
            ),
            (
                "Annotate",
                13778,
                "ferry.test.other.Note",
                "ferry.test.other.Note"
            ),
            (
                "Describe",
                48760,
                "ferry.test.AllKinds",
                "ferry.test.AllKinds.Inner"
            ),
        ]
    );
    assert_eq!(
        [
            t::echo_service::SAY,
            t::echo_service::SAY_LATER,
            t::echo_service::ANNOTATE,
            t::echo_service::DESCRIBE
        ],
        [42441, 55552, 13778, 48760]
    );
}

/// Generated descriptors decode what generated types encode exactly like `DynamicMessage`.
#[test]
fn generated_and_dynamic_agree_on_bytes() {
    let ctx = Context::copy_only();
    let big = vec![1u8; BIG];
    let m = full(ctx, &big);
    let bytes = m.to_vec().unwrap();

    // Generated bytes -> dynamic message (through the generated static) -> same bytes.
    let view = View::decode(&bytes, &t::ALL_KINDS_DESC, &Limits::default()).unwrap();
    let dynamic = DynamicMessage::from_view(&view, ctx).unwrap();
    let dyn_bytes = dynamic.to_vec().unwrap();
    assert!(dyn_bytes == bytes, "dynamic re-encoding differs");

    // Dynamic bytes -> generated view -> generated message -> same bytes.
    let back = t::AllKinds::decode(&dyn_bytes).unwrap().to_message(ctx).unwrap();
    assert!(
        back.to_vec().unwrap() == dyn_bytes,
        "generated re-encoding differs"
    );
    check_view(&t::AllKinds::decode(&dyn_bytes).unwrap(), &big);

    // A dynamic message built field by field encodes like the generated one.
    let mut d = DynamicMessage::new(&t::AWKWARD_DESC);
    d.set(1, Value::I32(7)).unwrap();
    d.set(5, Value::Bool(true)).unwrap();
    let mut a = t::Awkward::new(ctx);
    a.set_type(7);
    a.set_match(true);
    assert_eq!(d.to_vec().unwrap(), a.to_vec().unwrap());
}

/// The same with zero-copy fields: both paths reference the received pool buffer.
#[test]
fn generated_and_dynamic_agree_with_zero_copy_fields() {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let ctx = Context::new(pool.clone());
    let big = pool.copy_from(&[2u8; BIG]).unwrap();
    let m = full(&ctx, &big);
    let bytes = m.to_vec().unwrap();
    let received = pool.copy_from(&bytes).unwrap();

    let view = View::decode_shared(&received, &t::ALL_KINDS_DESC, &Limits::default()).unwrap();
    let dynamic = DynamicMessage::from_view(&view, &ctx).unwrap();
    let generated = t::AllKinds::decode_shared(&received)
        .unwrap()
        .to_message(&ctx)
        .unwrap();
    assert_eq!(dynamic.layout(), generated.layout());
    assert_eq!(generated.layout().zero_copy_count, 4);
    let (d, g) = (dynamic.to_vec().unwrap(), generated.to_vec().unwrap());
    assert!(d == g && g == bytes, "zero-copy re-encodings differ");
}

/// Field 7 of `Awkward` as `bytes`, to put invalid UTF-8 where the schema has a string.
static AWKWARD_AS_BYTES: ferry::wire::MessageDesc = ferry::wire::MessageDesc::new(
    "ferry.test.Awkward",
    &[ferry::wire::FieldDesc {
        name: "to_string",
        number: 7,
        kind: ferry::wire::Kind::Bytes,
        label: ferry::wire::Label::Optional,
        oneof: None,
    }],
    false,
);

#[test]
fn invalid_utf8_is_an_error_not_a_panic() {
    let ctx = Context::copy_only();
    let mut d = DynamicMessage::new(&AWKWARD_AS_BYTES);
    d.set(
        7,
        Value::Bytes(ferry::HybridBytes::from_vec(vec![b'o', b'k', 0xff])),
    )
    .unwrap();
    let bad = d.to_vec().unwrap();
    let v = t::Awkward::decode(&bad).unwrap();
    let err = v.to_string().unwrap_err();
    assert!(matches!(
        err.kind(),
        ferry::wire::DecodeErrorKind::InvalidUtf8 { valid_up_to: 2 }
    ));
    assert!(v.to_message(ctx).is_err());
}

/// Generated setters and a `DynamicMessage` built independently, field by field, encode the
/// same bytes, including the proto3 rule that implicit-presence fields holding their default
/// are not sent (a presence bug in either path makes the bytes differ).
#[test]
fn generated_and_independently_built_dynamic_encode_identically() {
    use ferry::HybridBytes;
    use ferry::wire::List;
    let ctx = Context::copy_only();

    // Defaults set explicitly: nothing is sent, as for an empty message.
    let mut g = t::AllKinds::new(ctx);
    g.set_f_int32(0);
    g.set_f_uint64(0);
    g.set_f_bool(false);
    g.set_f_double(0.0);
    g.set_f_string("");
    assert_eq!(
        g.to_vec().unwrap(),
        DynamicMessage::new(&t::ALL_KINDS_DESC).to_vec().unwrap()
    );

    // Values set: the same entries, in the same order, either way.
    let mut g = t::AllKinds::new(ctx);
    g.set_f_int32(-1);
    g.set_f_uint64(u64::MAX);
    g.set_f_sint32(i32::MIN);
    g.set_f_double(-0.0);
    g.set_f_bool(true);
    g.set_f_enum(t::Level::Negative);
    g.set_f_string("héllo");
    g.append_r_int32(1);
    g.append_r_int32(-1);
    let mut d = DynamicMessage::new(&t::ALL_KINDS_DESC);
    d.set(1, Value::I32(-1)).unwrap();
    d.set(4, Value::U64(u64::MAX)).unwrap();
    d.set(5, Value::I32(i32::MIN)).unwrap();
    d.set(12, Value::F64(-0.0)).unwrap();
    d.set(13, Value::Bool(true)).unwrap();
    d.set(14, Value::I32(t::Level::Negative as i32)).unwrap();
    d.set(15, Value::Bytes(HybridBytes::new("héllo".as_bytes(), ctx)))
        .unwrap();
    d.set(21, Value::List(List::I32(vec![1, -1]))).unwrap();
    assert!(
        g.to_vec().unwrap() == d.to_vec().unwrap(),
        "generated and dynamic bytes differ"
    );
}

/// Generated readers (`to_message`, map accessors) reported a read-time error, such as a
/// string that is not UTF-8 in a nested message or in a map key, with the innermost field only
/// (`Node.name`); the path now starts at the root message, as for validation errors.
#[test]
fn generated_readers_name_the_whole_path_of_read_time_errors() {
    use ferry_codegen_tests::golden::tree::ferry::golden::tree::Node;
    let ctx = Context::copy_only();
    let node = |name: &'static str| {
        let mut n = Node::new(ctx);
        n.set_name(name);
        n
    };
    let spoil = |root: &Node<'_>| {
        let mut bytes = root.to_vec().unwrap();
        let at = bytes.windows(4).position(|w| w == b"BAD!").unwrap();
        bytes[at + 1] = 0xff;
        bytes
    };
    let path = |e: &ferry::wire::DecodeError| e.path().collect::<Vec<_>>().join(" > ");

    // A map value's string, two messages down: Node.children[0].by_name["k"].name.
    let mut child = node("c");
    child.insert_by_name("k", node("BAD!"));
    let mut root = node("r");
    root.append_children(child);
    let bytes = spoil(&root);
    let err = Node::decode(&bytes).unwrap().to_message(ctx).unwrap_err();
    assert_eq!(
        path(&err),
        "ferry.golden.tree.Node.children > ferry.golden.tree.Node.by_name > \
         ferry.golden.tree.Node.ByNameEntry.value > ferry.golden.tree.Node.name"
    );

    // A map key, through `to_message` and through the map accessor.
    let mut root = node("r");
    root.insert_by_name("BAD!", node("v"));
    let bytes = spoil(&root);
    let view = Node::decode(&bytes).unwrap();
    let key_path = "ferry.golden.tree.Node.by_name > ferry.golden.tree.Node.ByNameEntry.key";
    assert_eq!(path(&view.to_message(ctx).unwrap_err()), key_path);
    assert_eq!(path(&view.by_name().err().unwrap()), key_path);
}
