//! Fuzz target `protobuf_decode`: a peer's protobuf bytes through `ferry-reflect`'s codec, as
//! every message type of the codegen test schema (`ferry.test.AllKinds` covers every field
//! kind, maps, oneofs and recursion).
//!
//! Decoding must never panic; what decodes must encode, and the encoding must decode to the
//! same message and encode to the same bytes (a canonical form is a fixed point).
#![no_main]

use std::sync::OnceLock;

use ferry::Context;
use ferry_reflect::Schema;
use ferry_reflect::protobuf::{self, ProtobufLimits};
use libfuzzer_sys::fuzz_target;

fn schema() -> &'static (Schema, Vec<String>) {
    static SCHEMA: OnceLock<(Schema, Vec<String>)> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/ferry-codegen-tests/proto");
        let schema = Schema::load(&[dir.join("ferry/test/all.proto"), dir.join("ferry/test/other.proto")], &[&dir])
            .expect("the codegen test schema loads");
        let names = schema
            .pool()
            .all_messages()
            .filter(|m| m.package_name().starts_with("ferry.test") && !m.is_map_entry())
            .map(|m| m.full_name().to_string())
            .collect();
        (schema, names)
    })
}

/// Depth and size bounds that keep single runs fast.
const LIMITS: ProtobufLimits = ProtobufLimits {
    max_depth: 32,
    max_len: 1 << 20,
};

fuzz_target!(|data: &[u8]| {
    let (schema, names) = schema();
    let ctx = Context::copy_only();
    // The first byte picks the message type.
    let Some((&pick, input)) = data.split_first() else { return };
    let name = &names[usize::from(pick) % names.len()];
    let md = schema.descriptor(name).expect("listed");
    let desc = schema.message(name).expect("listed");
    let Ok(message) = protobuf::decode(&md, desc, input, ctx, &LIMITS) else {
        return;
    };
    let bytes = protobuf::encode(&md, &message);
    let again = protobuf::decode(&md, desc, &bytes, ctx, &ProtobufLimits::default())
        .unwrap_or_else(|e| panic!("{name}: our own encoding does not decode: {e}"));
    assert!(again == message, "{name}: re-decoded message differs");
    assert!(protobuf::encode(&md, &again) == bytes, "{name}: encoding is not a fixed point");
});
