//! Fuzz target `grpc_message`: a request body as the offload engine reads it from a gRPC
//! client (ferry-offload's `framing`): deframed from chunks of any size, as a unary request's
//! one message and as a stream's messages, then inflated under `grpc-encoding` with the size
//! limit. The first byte picks the encoding, the second the chunk size; the rest is the body.
//!
//! Nothing may panic; a message read is at most the limit; the engine's own framing of the
//! messages (as answers, in the same encoding) reads back to the same bytes; and a body read
//! as one message reads as a stream of just that message.
#![no_main]

use bytes::Bytes;
use ferry_offload::framing::{Deframer, Encoding, OneMessage, frame};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 64 << 10;

fn read(body: &[u8], chunk: usize, encoding: Encoding) -> Option<Bytes> {
    let mut deframer = OneMessage::new(LIMIT);
    for piece in body.chunks(chunk) {
        deframer.push(Bytes::copy_from_slice(piece)).ok()?;
    }
    deframer.finish().ok()?.decompress(encoding, LIMIT).ok()
}

/// Every message of `body`, taken as the engine takes a stream's (a chunk pushed only when no
/// whole message is buffered).
fn read_stream(body: &[u8], chunk: usize, encoding: Encoding) -> Option<Vec<Bytes>> {
    let mut deframer = Deframer::new(LIMIT);
    let mut messages = Vec::new();
    for piece in body.chunks(chunk) {
        deframer.push(Bytes::copy_from_slice(piece));
        while let Some(frame) = deframer.next_frame().ok()? {
            messages.push(frame.decompress(encoding, LIMIT).ok()?);
        }
        assert!(deframer.buffered() < 5 + LIMIT, "more than one incomplete message buffered");
    }
    deframer.finish().ok()?;
    Some(messages)
}

fuzz_target!(|data: &[u8]| {
    let Some((&[pick, chunk], body)) = data.split_first_chunk::<2>() else { return };
    let encoding = [Encoding::Identity, Encoding::Gzip, Encoding::Deflate][usize::from(pick % 3)];
    let chunk = usize::from(chunk).max(1);
    let one = read(body, chunk, encoding);
    if let Some(message) = &one {
        assert!(message.len() <= LIMIT);
        let again = read(&frame(message, encoding), chunk, encoding).expect("the engine's own framing reads");
        assert_eq!(&again, message);
        assert_eq!(read_stream(body, chunk, encoding), Some(vec![message.clone()]));
    }
    let Some(messages) = read_stream(body, chunk, encoding) else { return };
    assert!(messages.iter().all(|m| m.len() <= LIMIT));
    let framed: Vec<u8> = messages.iter().flat_map(|m| frame(m, encoding).to_vec()).collect();
    assert_eq!(read_stream(&framed, chunk, encoding), Some(messages));
});
