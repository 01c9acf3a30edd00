//! Fuzz target `shm_blocks`: a peer's shared memory through ferry-shm's sans-IO block protocol
//! (`ferry::shm::proto::Endpoint`), the parser of ring entries, block preambles and message
//! headers.
//!
//! The first byte chooses the credits, the second which received messages are held and which
//! released at once; the rest is the peer's whole region, its control area (a ring of 8
//! entries) at offset 0 and blocks at multiples of 1024. Whatever the bytes, the endpoint must
//! not panic, every message it hands out must lie in the region, it must never count more
//! received blocks than its credits allow, and every error must be one a peer can cause (a
//! protocol violation, or the closed word). Ferry messages found are validated and read in
//! place as a `Record` (the `decode` target covers the validator itself).
#![no_main]

mod common;

use ferry::sample::RECORD;
use ferry::shm::proto::{Endpoint, Setup, Shared};
use ferry::transport::TransportError;
use ferry::{Limits, View};
use libfuzzer_sys::fuzz_target;

const RING: usize = 8;

/// The peer's region (fixed bytes: what it holds when this side looks) and this side's
/// control area.
struct Memory<'a> {
    region: &'a [u8],
    own: Vec<u64>,
}

impl Shared for Memory<'_> {
    fn load(&self, offset: usize) -> Option<u64> {
        if offset % 8 != 0 {
            return None;
        }
        let word = self.region.get(offset..offset.checked_add(8)?)?;
        Some(u64::from_le_bytes(word.try_into().expect("8 bytes")))
    }

    fn copy_out(&self, offset: usize, out: &mut [u8]) -> Option<()> {
        out.copy_from_slice(self.region.get(offset..offset.checked_add(out.len())?)?);
        Some(())
    }

    fn peer_len(&self) -> usize {
        self.region.len()
    }

    fn store(&mut self, offset: usize, value: u64) {
        self.own[offset / 8] = value;
    }

    fn fence(&self) {}
}

fn peer_caused(e: &TransportError) -> bool {
    matches!(e, TransportError::Frame { .. } | TransportError::Closed)
}

fuzz_target!(|data: &[u8]| {
    let [credits, keep, region @ ..] = data else { return };
    let mut mem = Memory {
        region,
        own: vec![0; (192 + 8 * RING) / 8],
    };
    let setup = Setup {
        block_size: 1024,
        block_messages: 8,
        credits: 1 + u32::from(*credits % 4),
        ring: RING,
        peer_control: 0,
        peer_never_sleeps: false,
    };
    let Ok(mut ep) = Endpoint::new(common::pool(), setup, &mem) else {
        assert!(region.len() < 192 + 8 * RING, "a region that holds the control area is accepted");
        return;
    };
    let limits = Limits {
        max_message_len: 1 << 20,
        max_depth: 16,
        max_elements: 1 << 12,
    };
    let mut held = Vec::new();
    let mut n = 0u32;
    for _ in 0..3 {
        match ep.poll(&mut mem) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                assert!(peer_caused(&e), "poll: {e}");
                return;
            }
        }
        assert!(ep.stats().blocks_received <= u64::from(setup.credits), "beyond the credits");
        loop {
            let m = match ep.next(&mem) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    assert!(peer_caused(&e), "next: {e}");
                    return;
                }
            };
            let payload = region.get(m.offset..m.offset + m.len).expect("a message inside the region");
            if m.ferry {
                if let Ok(view) = View::decode_at(region, m.offset, &RECORD, &limits) {
                    let _ = view.bytes(1).map(<[u8]>::len);
                    let _ = view.bytes_list(2).iter().map(<[u8]>::len).sum::<usize>();
                }
            } else {
                std::hint::black_box(payload);
            }
            if keep >> (n % 8) & 1 == 1 {
                held.push(m);
            }
            n += 1;
        }
        // Releases become acknowledgements in this side's ring.
        held.truncate(held.len() / 2);
        if let Err(e) = ep.publish_acks(&mut mem) {
            assert!(peer_caused(&e), "publish_acks: {e}");
            return;
        }
    }
});
