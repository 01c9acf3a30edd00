//! Fuzz target `rpc_frames`: a peer's frames through ferry-rpc's sans-IO sessions, both sides.
//!
//! The input is a sequence of frames, each: a byte choosing the receiving side (client or
//! server) and how far time moves, the method (2 bytes), the flags, the call id (one byte: ids
//! collide often), and a raw payload (a length byte, 255 meaning a Ferry message and 254 a long
//! payload whose u16 LE length follows, so metadata can reach its limits; a Ferry message
//! counts 16 KiB per unit of its call id against a stream's window). The client has started a
//! few unary calls and opened a few streams first, so answers and stream frames find calls;
//! every message either side accepts is consumed at once, so windows are granted back.
//! Whatever arrives, neither side may panic, every frame is accepted or refused with a typed
//! error (after which that side stops, as its driver would close), and the server never holds
//! more calls than its limit. A metadata payload that `parse` accepts is within the limits,
//! and re-encodes to the same bytes.
#![no_main]

use std::time::{Duration, Instant};

use ferry::transport::Meta;
use ferry_rpc::session::{Client, ClientConfig, ClientEvent, Event, Server, ServerConfig};
use ferry_rpc::wire::{self, Frame, MAX_METADATA_BYTES, MAX_METADATA_ENTRIES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut now = Instant::now();
    let mut client = Client::new(ClientConfig { window: 6 });
    let mut server = Server::new(ServerConfig { max_in_flight: 3 });
    for method in 0..3 {
        let timeout = (method == 1).then(|| Duration::from_millis(5));
        client.start(method, timeout, now, ()).expect("room in the window");
        client.open(method, timeout, now, ()).expect("room in the window");
    }
    let (mut client_open, mut server_open) = (true, true);
    let mut rest = data;
    while let [side, m0, m1, flags, id, len, tail @ ..] = rest {
        let (raw_len, tail) = match (*len, tail) {
            (254, [l0, l1, tail @ ..]) => (usize::from(u16::from_le_bytes([*l0, *l1])), tail),
            (254, _) => break,
            (len, tail) => (usize::from(len), tail),
        };
        let (raw, tail) = if *len == 255 {
            (None, tail)
        } else {
            let Some((raw, tail)) = tail.split_at_checked(raw_len) else {
                break;
            };
            (Some(raw), tail)
        };
        rest = tail;
        now += Duration::from_millis(u64::from(side >> 1));
        let meta = Meta {
            kind: u16::from_le_bytes([*m0, *m1]),
            flags: *flags,
            request_id: u64::from(*id),
        };
        let len = raw.map_or(usize::from(*id) << 14, <[u8]>::len);
        if let Ok(
            Frame::Metadata { metadata, .. }
            | Frame::Headers { metadata, .. }
            | Frame::Trailers { metadata, .. },
        ) = wire::parse(meta, raw)
        {
            assert!(metadata.len() <= MAX_METADATA_ENTRIES);
            assert!(metadata.encoded_len() <= MAX_METADATA_BYTES);
            assert_eq!(
                Some(&metadata.encode()[..]),
                raw,
                "metadata re-encodes as it came"
            );
        }
        if side & 1 == 0 {
            if client_open {
                let got = client.on_frame(meta, raw, len);
                if let Ok(Some(ClientEvent::Message { id })) = got {
                    let _ = client.consumed(id, len);
                }
                client_open = got.is_ok();
                let _ = client.expire(now);
            }
        } else if server_open {
            let got = server.on_frame(meta, raw, len, now);
            if let Ok(Some(Event::Message { id })) = got {
                let _ = server.consumed(id, len);
            }
            server_open = got.is_ok();
            let _ = server.expire(now);
            assert!(server.in_flight() <= 3, "the server's limit");
        }
    }
    let _ = client.lost();
    let _ = server.lost();
    assert_eq!(client.in_flight(), 0);
    assert_eq!(server.in_flight(), 0);
});
