//! Fuzz target `metrics_http`: a peer's request bytes through the metrics endpoint's sans-IO
//! half (`ferry_rpc::http`): the head is found as the endpoint finds it, read by read (the
//! first byte of the input sets the read size), and routed; the answer is always a framed
//! HTTP response. Nothing may panic, and a head found is a prefix of the input that ends in a
//! blank line.
#![no_main]

use ferry_rpc::http::{head_end, route};
use ferry_rpc::{Metrics, http::Answer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else { return };
    let step = usize::from(step).max(1);
    let metrics = Metrics::new(&[("/f.S/M", 1)]);
    let mut len = 0;
    while len < input.len() {
        let from = len.saturating_sub(3);
        len = (len + step).min(input.len());
        if let Some(end) = head_end(&input[..len], from) {
            assert!(end <= len);
            let head = &input[..end];
            assert!(head.ends_with(b"\n\n") || head.ends_with(b"\n\r\n"));
            let response = route(head).response(&metrics);
            assert!(response.starts_with(b"HTTP/1.1 "));
            return;
        }
    }
    let response = Answer::BadRequest.response(&metrics);
    assert!(response.starts_with(b"HTTP/1.1 400"));
});
