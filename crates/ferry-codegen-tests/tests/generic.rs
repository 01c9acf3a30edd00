//! Code generic over the `Message` trait works for every message type of the schema: random
//! contents (built for the type's descriptor) are encoded, decoded as the generated type,
//! turned back into a generated message and encoded again, to the same bytes.

use ferry::wire::DynamicMessage;
use ferry::{Context, Message, MessageView, Outgoing, Pool, PoolConfig};
use ferry_codegen_tests::generated::ferry::test::{self as t, all_kinds, other};
use ferry_codegen_tests::generated::google::protobuf as wkt;
use ferry_testkit::{Builder, Rng};

/// Random messages per type.
const CASES: u64 = 40;

/// Encodes random contents of `M`'s descriptor, decodes them as `M`, rebuilds an `M` from the
/// view and checks that it encodes to the same bytes; returns how many cases had fields.
fn round_trips<'a, M: Message<'a>>(pool: &Pool) -> u64 {
    // Copy-only: the bytes of an encoding do not depend on what was referenced.
    let ctx = Context::copy_only();
    let mut non_empty = 0;
    for seed in 1..=CASES {
        let mut b = Builder {
            rng: Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            pool,
            ctx,
        };
        let dynamic: DynamicMessage<'_> = b.message(M::desc(), 0);
        let bytes = dynamic
            .to_vec()
            .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", M::desc().name));
        non_empty += u64::from(!bytes.is_empty() && dynamic.iter().next().is_some());
        let view = M::decode(&bytes).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", M::desc().name));
        let typed = view
            .to_message(ctx)
            .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", M::desc().name));
        let again = typed.to_vec().unwrap();
        assert!(
            again == bytes,
            "{} seed {seed}: re-encoding differs",
            M::desc().name
        );
        // The untyped view underneath reads the same message.
        let back = DynamicMessage::from_view(view.view(), ctx).unwrap();
        assert_eq!(back, dynamic, "{} seed {seed}", M::desc().name);
    }
    non_empty
}

#[test]
fn every_message_type_round_trips_through_generic_code() {
    let pool = Pool::new(PoolConfig {
        region_size: 1 << 20,
        max_bytes: 64 << 20,
        ..PoolConfig::default()
    })
    .unwrap();
    let counts = [
        ("AllKinds", round_trips::<t::AllKinds<'_>>(&pool)),
        ("AllKinds.Inner", round_trips::<all_kinds::Inner<'_>>(&pool)),
        ("Awkward", round_trips::<t::Awkward<'_>>(&pool)),
        ("Self", round_trips::<t::Self_<'_>>(&pool)),
        ("Type", round_trips::<t::Type<'_>>(&pool)),
        ("Node", round_trips::<t::Node<'_>>(&pool)),
        ("Ping", round_trips::<t::Ping<'_>>(&pool)),
        ("Pong", round_trips::<t::Pong<'_>>(&pool)),
        ("T", round_trips::<t::T<'_>>(&pool)),
        ("SayRequest", round_trips::<t::SayRequest<'_>>(&pool)),
        ("SayResponse", round_trips::<t::SayResponse<'_>>(&pool)),
        ("other.Note", round_trips::<other::Note<'_>>(&pool)),
        ("other.Collide", round_trips::<other::Collide<'_>>(&pool)),
        ("other.Collide2", round_trips::<other::Collide2<'_>>(&pool)),
        ("Duration", round_trips::<wkt::Duration<'_>>(&pool)),
        ("Timestamp", round_trips::<wkt::Timestamp<'_>>(&pool)),
    ];
    // Every generated type is listed: the generated code implements `Message` once per type.
    let generated = include_str!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));
    assert_eq!(
        generated.matches("::ferry::wire::Message<'a> for").count(),
        counts.len(),
        "a message type of the schema is missing from this test"
    );
    for (name, non_empty) in counts {
        assert!(non_empty > 0, "{name}: every random case was empty");
    }
}
