//! Fuzz target `xdp_frame`: a frame from the wire (what the AF_XDP driver's RX ring hands
//! over) through `ferry_dgram::frame::parse`, the only door for a received frame.
//!
//! Nothing may panic. A frame that parses has its payload inside the frame, and the headers
//! `write_headers` makes for the same addresses and payload parse back to them (with the
//! sender's UDP checksum 0, a frame of ours differs from the input only where the input had
//! options, a checksum, padding, or another identification or TTL).
#![no_main]

use ferry_dgram::frame::{HEADERS_LEN, parse, write_headers};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|frame: &[u8]| {
    let Ok(datagram) = parse(frame) else { return };
    let start = datagram.payload.as_ptr() as usize - frame.as_ptr() as usize;
    assert!(start >= HEADERS_LEN && start + datagram.payload.len() <= frame.len());
    let mut ours = [0u8; HEADERS_LEN];
    write_headers(&mut ours, &datagram.addresses, datagram.payload.len()).expect("a parsed payload fits");
    let rebuilt = [&ours[..], datagram.payload].concat();
    let again = parse(&rebuilt).expect("our own frame parses");
    assert_eq!(again.addresses, datagram.addresses);
    assert_eq!(again.payload, datagram.payload);
});
