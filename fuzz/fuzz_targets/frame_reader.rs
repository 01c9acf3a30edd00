//! Fuzz target `frame_reader`: a peer's byte stream through ferry-net's sans-IO frame reader.
//!
//! The first bytes choose the reader's limits (and when its reads turn exact) and how the
//! stream is cut into reads (as a socket would: any split, headers and payloads cut anywhere);
//! the rest is the stream. The reader must never panic, every frame it hands up must respect
//! the limits, and the frames, re-serialized, must be exactly the stream's first bytes: nothing
//! dropped, duplicated or reordered. An error must be one a peer can cause (a bad header), and end of input must be
//! reported as `Closed` exactly when it falls between frames.
#![no_main]

mod common;

use ferry::net::frame::HEADER_LEN;
use ferry::net::{Config, FrameReader, TransportError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [limits, read_buf, cuts @ .., ] = data else { return };
    let cut_count = usize::from(cuts.first().copied().unwrap_or(0) % 16);
    let Some((cuts, stream)) = cuts.get(1..).and_then(|c| c.split_at_checked(cut_count)) else {
        return;
    };
    let config = Config {
        max_frame_len: 1 << (4 + limits % 14),
        read_buf: 16 + usize::from(*read_buf) * 8,
        // Exact reads from every frame, from 64 B, only for frames too long for a read buffer,
        // or the default.
        exact_read_min: [0, 64, usize::MAX, Config::default().exact_read_min][usize::from(limits / 14 % 4)],
        ..Config::default()
    };
    let mut reader = FrameReader::new(common::pool(), &config);
    let mut rebuilt = Vec::with_capacity(stream.len());
    let mut sizes = cuts.iter().map(|&c| usize::from(c) + 1).cycle();
    let mut at = 0;
    loop {
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => {
                    let len = frame.header().len as usize;
                    assert!(len <= config.max_frame_len, "frame of {len} over the limit");
                    assert_eq!(frame.payload().len(), len, "payload length is the header's");
                    rebuilt.extend_from_slice(&frame.header().to_bytes());
                    rebuilt.extend_from_slice(frame.payload());
                }
                Ok(None) => break,
                Err(TransportError::Frame { offset, .. }) => {
                    assert_eq!(offset, rebuilt.len() as u64, "error at the bad header");
                    assert_eq!(&stream[..rebuilt.len()], &rebuilt[..]);
                    return;
                }
                Err(e) => panic!("error a peer cannot cause: {e}"),
            }
        }
        assert_eq!(&stream[..rebuilt.len()], &rebuilt[..], "frames are the stream's bytes");
        if at == stream.len() {
            break;
        }
        let mut targets = reader.read_targets().expect("pool has room");
        let want = sizes.next().unwrap_or(usize::MAX).min(stream.len() - at);
        let mut n = 0;
        for target in targets.slices() {
            let take = target.len().min(want - n);
            target[..take].copy_from_slice(&stream[at + n..at + n + take]);
            n += take;
        }
        assert!(n > 0, "read targets are never both empty");
        reader.filled(n);
        at += n;
    }
    match reader.eof() {
        TransportError::Closed => assert_eq!(rebuilt.len(), stream.len(), "Closed only between frames"),
        TransportError::Truncated { received, expected } => {
            assert!(rebuilt.len() < stream.len());
            assert_eq!(received, stream.len() - rebuilt.len(), "truncation counts the rest");
            assert!(received < expected.max(HEADER_LEN + 1));
        }
        e => panic!("unexpected end-of-stream error: {e}"),
    }
});
