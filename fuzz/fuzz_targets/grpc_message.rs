//! Fuzz target `grpc_message`: a unary request's body as the offload engine reads it from a
//! gRPC client (ferry-offload's `framing`): deframed from chunks of any size, then inflated
//! under `grpc-encoding` with the size limit. The first byte picks the encoding, the second the
//! chunk size; the rest is the body.
//!
//! Nothing may panic; a message read is at most the limit; and the engine's own framing of it
//! (as an answer, in the same encoding) reads back to the same bytes.
#![no_main]

use bytes::Bytes;
use ferry_offload::framing::{Encoding, OneMessage, frame};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 64 << 10;

fn read(body: &[u8], chunk: usize, encoding: Encoding) -> Option<Bytes> {
    let mut deframer = OneMessage::new(LIMIT);
    for piece in body.chunks(chunk) {
        deframer.push(Bytes::copy_from_slice(piece)).ok()?;
    }
    deframer.finish().ok()?.decompress(encoding, LIMIT).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&[pick, chunk], body)) = data.split_first_chunk::<2>() else { return };
    let encoding = [Encoding::Identity, Encoding::Gzip, Encoding::Deflate][usize::from(pick % 3)];
    let chunk = usize::from(chunk).max(1);
    let Some(message) = read(body, chunk, encoding) else { return };
    assert!(message.len() <= LIMIT);
    let again = read(&frame(&message, encoding), chunk, encoding).expect("the engine's own framing reads");
    assert_eq!(again, message);
});
