//! Fuzz target `raft_codec`: untrusted bytes through ferry-kv's Raft codec, as a node reads its
//! peers' messages (AppendEntries with its commands, votes, a snapshot stream's header and
//! every answer) and its own stored records (log entries, votes, log ids, snapshots).
//!
//! The first byte picks the decoder (and, for AppendEntries, how many commands come beside the
//! body); the rest is the input. Nothing may panic, and whatever decodes re-encodes to bytes
//! that decode again and re-encode the same (a canonical form).
#![no_main]

mod common;

use ferry_kv::raft::codec::{self, CopyIn};
use libfuzzer_sys::fuzz_target;

fn copy_in(b: &[u8]) -> Result<ferry_buf::SharedBuf, String> {
    common::pool().copy_from(b).map_err(|e| e.to_string())
}

/// `encode(decode(bytes))`, if it decodes, checked to be a fixed point.
fn canonical<T>(
    bytes: &[u8],
    decode: impl Fn(&[u8]) -> Result<T, codec::CodecError>,
    encode: impl Fn(&T) -> Vec<u8>,
) {
    let Ok(v) = decode(bytes) else { return };
    let once = encode(&v);
    let again = decode(&once).expect("what was encoded decodes");
    assert_eq!(encode(&again), once, "the encoding is canonical");
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let copy: CopyIn<'_> = &copy_in;
    match pick % 10 {
        0 => {
            // AppendEntries: the body, and 0 to 3 commands cut from its end.
            let n = (pick as usize / 10) % 4;
            let cut = bytes.len().saturating_sub(8 * n);
            let (body, tail) = bytes.split_at(cut);
            let commands: Vec<&[u8]> = tail.chunks(8).collect();
            if let Ok(rpc) = codec::decode_append(body, commands.iter().copied(), copy) {
                let (body, commands) = codec::encode_append(&rpc);
                let parts: Vec<&[u8]> = commands.iter().map(|c| &c[..]).collect();
                let again = codec::decode_append(&body, parts.iter().copied(), copy).expect("re-encoded");
                assert_eq!(codec::encode_append(&again).0, body, "the encoding is canonical");
            }
        }
        1 => canonical(
            bytes,
            codec::decode_append_response,
            codec::encode_append_response,
        ),
        2 => canonical(bytes, codec::decode_vote_request, codec::encode_vote_request),
        3 => canonical(bytes, codec::decode_vote_response, codec::encode_vote_response),
        4 => canonical(bytes, codec::decode_snapshot_header, codec::encode_snapshot_header),
        5 => canonical(
            bytes,
            codec::decode_snapshot_response,
            codec::encode_snapshot_response,
        ),
        6 => canonical(bytes, |b| codec::decode_entry(b, copy), codec::encode_entry),
        7 => canonical(bytes, codec::decode_vote, codec::encode_vote),
        8 => canonical(bytes, codec::decode_log_id, codec::encode_log_id),
        _ => {
            let _ = codec::entry_log_id(bytes);
            let mut w = codec::SnapshotWriter::default();
            if codec::read_snapshot(bytes, |key, kind, parts| {
                w.add(key, kind, parts);
                Ok(())
            })
            .is_ok()
            {
                assert_eq!(w.finish(), bytes, "a snapshot that reads writes back the same");
            }
        }
    }
});
