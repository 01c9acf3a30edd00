//! Zero-copy guarantees: gather entries point at the original memory, decoded views point into
//! the received buffer, referenced memory outlives the application's handle, nothing leaks.

mod common;
use common::pool;
use ferry_wire::{Message as _, MessageView as _};
use std::io::IoSlice;

use ferry_buf::SharedBuf;
use ferry_wire::iovecs;
use ferry_wire::sample::Record;
use ferry_wire::{Context, HybridBytes, Outgoing};

fn contains(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    i >= o && i + inner.len() <= o + outer.len()
}

#[test]
fn large_pool_field_is_a_gather_entry_at_the_original_bytes() {
    let pool = pool();
    let ctx = Context::new(pool.clone());
    // The store's value: one pool buffer holding several values; we reference a slice of it.
    let store = pool.copy_from(&[0xabu8; 16 << 10]).unwrap();
    let value = &store[1024..1024 + 8192];

    let mut rec = Record::new(&ctx);
    rec.set_key(&b"key:1"[..]);
    rec.append_field(value);
    rec.append_field(&store[..100]); // below the threshold: copied
    assert!(rec.fields()[0].is_zero_copy());
    assert!(!rec.fields()[1].is_zero_copy());

    let layout = rec.layout();
    assert_eq!(layout.zero_copy_count, 1);
    assert_eq!(layout.zero_copy_len, 8192);
    let mut head = vec![0u8; layout.head_len];
    rec.write_head(&layout, &mut head).unwrap();
    let mut held = Vec::new();
    rec.zero_copy_bufs(&mut held).unwrap();
    let mut iov: Vec<IoSlice<'_>> = Vec::new();
    iovecs(&head, &held, &mut iov);
    assert_eq!(iov.len(), 2);
    assert_eq!(
        iov[1].as_ptr(),
        value.as_ptr(),
        "the gather entry is the original memory"
    );
    assert_eq!(iov[1].len(), value.len());
    // The head holds the copied key and the 100-byte field, not the 8 KiB value.
    assert!(layout.head_len < 512, "head is {} bytes", layout.head_len);
}

#[test]
fn decoded_fields_point_into_the_received_buffer() {
    let pool = pool();
    let ctx = Context::new(pool.clone());
    let big = pool.copy_from(&[7u8; 4096]).unwrap();
    let mut rec = Record::new(&ctx);
    rec.set_key(&b"k"[..]);
    rec.append_field(big.clone());
    let received: SharedBuf = pool.copy_from(&rec.to_vec().unwrap()).unwrap();

    let view = Record::decode_shared(&received).unwrap();
    let field = view.fields().get(0).unwrap();
    assert_eq!(field, &big[..]);
    assert!(
        contains(&received, field),
        "view reads the received buffer in place"
    );
    assert!(contains(&received, view.key()));
    let shared = view.fields().shared(0).unwrap();
    assert_eq!(shared.as_ptr(), field.as_ptr());
    assert_eq!(
        received.ref_count(),
        2,
        "the sub-buffer holds the received buffer"
    );
    drop(shared);
    assert_eq!(received.ref_count(), 1);
}

#[test]
fn echo_reuses_received_memory_for_untouched_large_fields() {
    let pool = pool();
    let ctx = Context::new(pool.clone());
    let mut rec = Record::new(&ctx);
    rec.set_key(&b"request"[..]);
    rec.append_field(pool.copy_from(&[1u8; 2048]).unwrap());
    rec.append_field(pool.copy_from(&[2u8; 2048]).unwrap());
    let received = pool.copy_from(&rec.to_vec().unwrap()).unwrap();
    drop(rec);

    let view = Record::decode_shared(&received).unwrap();
    let mut reply = view.to_message(&ctx).unwrap();
    reply.set_key(&b"reply"[..]);
    let mut held = Vec::new();
    reply.zero_copy_bufs(&mut held).unwrap();
    assert_eq!(held.len(), 2);
    for (b, original) in held.iter().zip(view.fields().iter()) {
        assert_eq!(
            b.as_ptr(),
            original.as_ptr(),
            "sent from the received buffer, not copied"
        );
    }
    let bytes = reply.to_vec().unwrap();
    let back = Record::decode(&bytes).unwrap();
    assert_eq!(back.key(), b"reply");
    assert_eq!(back.fields().get(1).unwrap(), &[2u8; 2048][..]);
}

#[test]
fn referenced_memory_outlives_the_application_handle() {
    let pool = pool();
    let start = pool.stats();
    {
        let ctx = Context::new(pool.clone());
        let mut value = pool.alloc(4096).unwrap();
        value.extend_from_slice(&[0x5a; 4096]);
        let value = value.freeze();
        let ptr = value.as_ptr();
        let mut rec = Record::new(&ctx);
        rec.append_field(HybridBytes::from_shared(value, &ctx));
        // The application's handle is gone (moved and dropped with nothing else holding it) ...
        assert_eq!(
            pool.stats().buffers_outstanding(),
            start.buffers_outstanding() + 1
        );
        // ... a new allocation of the same class must not reuse that memory while the message lives.
        let other = pool.alloc(4096).unwrap();
        assert_ne!(other.as_ptr(), ptr);
        drop(other);
        let mut held = Vec::new();
        rec.zero_copy_bufs(&mut held).unwrap();
        drop(rec);
        // The send still holds it: the bytes are intact.
        assert_eq!(held[0].as_ptr(), ptr);
        assert!(held[0].iter().all(|&b| b == 0x5a));
        drop(held);
    }
    let end = pool.stats();
    assert_eq!(
        end.buffers_outstanding(),
        start.buffers_outstanding(),
        "every buffer returned to the pool"
    );
    assert_eq!(end.bytes_outstanding(), start.bytes_outstanding());
}

#[test]
fn threshold_decides_once_at_set_time() {
    let pool = pool();
    let data = pool.copy_from(&[3u8; 1000]).unwrap();
    let always = Context::new(pool.clone()).with_threshold(usize::MAX);
    let zero = Context::new(pool.clone()).with_threshold(0);
    let default = Context::new(pool.clone());
    assert!(!HybridBytes::new(&data, &always).is_zero_copy());
    assert!(HybridBytes::new(&data, &zero).is_zero_copy());
    assert!(HybridBytes::new(&data, &default).is_zero_copy());
    assert!(!HybridBytes::new(&data[..511], &default).is_zero_copy());
    assert!(HybridBytes::new(&data[..512], &default).is_zero_copy());
    // Heap memory is never referenced, whatever the threshold.
    let heap = vec![3u8; 1000];
    assert!(!HybridBytes::new(&heap, &zero).is_zero_copy());
    // Transient data below the threshold is copied into the arena now.
    let arena = ferry_wire::Arena::new();
    let tmp = vec![9u8; 10];
    let h = HybridBytes::copy_in(&tmp, &arena, &default);
    drop(tmp);
    assert_eq!(h.as_slice(), &[9u8; 10]);
}

#[test]
fn borrowed_pool_values_are_referenced_without_touching_the_refcount() {
    let pool = pool();
    let ctx = Context::new(pool.clone());
    let store = pool.copy_from(&[4u8; 4096]).unwrap();
    let mut rec = Record::new(&ctx);
    rec.append_field(&store[..]);
    assert!(rec.fields()[0].is_zero_copy());
    assert_eq!(
        store.ref_count(),
        1,
        "the borrow keeps the buffer alive; no count taken"
    );
    let mut gather = Vec::new();
    rec.for_each_zero_copy(&mut |b| gather.push(b.as_ptr()));
    assert_eq!(gather, [store.as_ptr()]);
    // A send that must outlive the borrow takes counted references.
    let mut held = Vec::new();
    rec.zero_copy_bufs(&mut held).unwrap();
    assert_eq!(store.ref_count(), 2);
    drop(rec);
    drop(store);
    assert!(
        held[0].iter().all(|&b| b == 4),
        "the held reference keeps the bytes"
    );
}

#[test]
fn unfrozen_pool_memory_is_copied_not_referenced() {
    let pool = pool();
    let ctx = Context::new(pool.clone()).with_threshold(0);
    let mut buf = pool.alloc(1024).unwrap();
    buf.extend_from_slice(&[1u8; 1024]);
    // Still a unique, writable BufMut: not shared, so a message must copy it.
    assert!(!HybridBytes::new(&buf, &ctx).is_zero_copy());
    let frozen = buf.freeze();
    assert!(HybridBytes::new(&frozen, &ctx).is_zero_copy());
}
