//! Fuzz target `flatbuffers`: a peer's FlatBuffers bytes through what a `ferry-flatbuffers`
//! receiver does with them: the stock verifier (`flatbuffers::root`, as `read_frame` and the
//! RPC adapter's `FlatRequest::root` call it) for the interop schema's root type, plain and
//! size-prefixed, then, for bytes it accepts, every field read (`unpack`, the object API) and
//! the nested FlatBuffer verified on its own (the generated `nested_nested_flatbuffer` reads it
//! unchecked) and read too.
//!
//! Nothing may panic: the verifier must refuse what the readers could not read safely. What it
//! accepts must also be built again by the zFlatBuffers builder through the generated `pack`
//! (over small blocks), into a message the verifier accepts and that rebuilds to the same bytes
//! (bytes, not objects: a fuzzed float may be NaN).
#![no_main]

use ferry_flatbuffers_tests::interop::{self, RootT};
use flatbuffers::{FlatBufferBuilder, PoolAllocator};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn pool() -> &'static ferry_buf::Pool {
    static POOL: OnceLock<ferry_buf::Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        ferry_buf::Pool::new(ferry_buf::PoolConfig {
            max_bytes: 256 << 20,
            ..ferry_buf::PoolConfig::default()
        })
        .expect("a pool")
    })
}

/// The object, built by the zFlatBuffers builder over small blocks (so it splices many).
fn build(object: &RootT) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new_in(PoolAllocator::with_first_block(pool(), 64).max_block_size(256));
    let packed = object.pack(&mut fbb);
    fbb.finish(packed, None);
    fbb.finished_message().to_vec()
}

/// Reads every field of a verified root, and rebuilds it with the zFlatBuffers builder.
fn read_and_rebuild(root: interop::Root<'_>) {
    let object: RootT = root.unpack();
    if let Some(nested) = root.nested() {
        if let Ok(item) = flatbuffers::root::<interop::Item>(nested.bytes()) {
            let _ = item.unpack();
        }
    }
    let bytes = build(&object);
    let again = flatbuffers::root::<interop::Root>(&bytes).expect("a rebuilt message verifies");
    assert_eq!(build(&again.unpack()), bytes, "the rebuilt message rebuilds the same");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(root) = flatbuffers::root::<interop::Root>(data) {
        read_and_rebuild(root);
    }
    if let Ok(root) = flatbuffers::size_prefixed_root::<interop::Root>(data) {
        read_and_rebuild(root);
    }
});
