//! What a one-thread event loop that drives many connections relies on: any frame can be
//! viewed as a Ferry message, as over TCP (a message sent contiguously with `send_payload`
//! too). Each side's pool must have every buffer back once its connection is dropped (checked
//! by `run_pair`).
mod common;

use common::{limits, pattern, run_pair};
use ferry_shm::{ShmConfig, ShmConnection};
use ferry_transport::{Meta, Payload, Received, TransportError};
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Context, Outgoing};

/// A Ferry message sent as raw bytes (its header segment and zero-copy values gathered, or
/// `to_vec`'s contiguous copy) is viewed by the receiver, through `ShmFrame::view` and the
/// transport interface's `Received::view`, with its fields intact; raw bytes that are not a
/// message are a decode error.
#[test]
fn a_ferry_message_sent_as_a_payload_is_viewed() {
    let big = pattern(4096, 3);
    let expected = big.clone();
    run_pair(
        "view-payload",
        ShmConfig::default(),
        ShmConfig::default(),
        move |mut conn: ShmConnection| {
            let value = conn.pool().copy_from(&big).unwrap();
            let ctx = Context::new(conn.pool().clone());
            let mut r = Record::new(&ctx);
            r.set_key(&b"gathered"[..]);
            r.append_field(&value[..]);
            r.append_field(&b"small"[..]);
            let layout = r.layout();
            assert_eq!(layout.zero_copy_count, 1, "the large field is a zero-copy value");
            let mut head = vec![0u8; layout.head_len];
            r.write_head(&layout, &mut head).unwrap();
            let mut parts = Vec::new();
            r.zero_copy_bufs(&mut parts).unwrap();
            conn.send_payload(
                Meta::new(1, 0),
                Payload::Gather {
                    head: &head,
                    parts: &parts,
                },
            )
            .unwrap();
            r.set_key(&b"contiguous"[..]);
            conn.send_payload(Meta::new(2, 1), Payload::Bytes(&r.to_vec().unwrap()))
                .unwrap();
            conn.send_payload(Meta::new(3, 2), Payload::Bytes(&[0xff; 13]))
                .unwrap();
            drop(parts);
            conn.wait_idle().unwrap();
        },
        move |mut conn: ShmConnection| {
            for key in [&b"gathered"[..], b"contiguous"] {
                let f = conn.recv().unwrap();
                assert!(!f.is_message(), "sent with send_payload");
                for view in [
                    f.view(&RECORD, &limits()).unwrap(),
                    Received::view(&f, &RECORD, &limits()).unwrap(),
                ] {
                    assert_eq!(view.bytes(1), Some(key));
                    let fields = view.bytes_list(2);
                    assert_eq!(fields.len(), 2);
                    assert!(fields.get(0) == Some(&expected[..]), "the large field differs");
                    assert_eq!(fields.get(1), Some(&b"small"[..]));
                }
            }
            let f = conn.recv().unwrap();
            assert!(
                f.view(&RECORD, &limits()).is_err(),
                "13 bytes of 0xff are no record"
            );
            drop(f);
            // Acknowledge everything, then see the sender close once it is idle.
            conn.flush().unwrap();
            assert!(matches!(conn.recv(), Err(TransportError::Closed)));
        },
    );
}
