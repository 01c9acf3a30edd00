//! `Pool::recover`: positive and negative cases reachable from safe code. Cases that need a
//! raw address (freed slot, unused region, ranges running out of a slot or the reservation)
//! are unit tests in `src/pool.rs`.

mod common;

use common::{REGION, assert_no_leaks, small_pool};

#[test]
fn recovers_exact_sub_range_and_counts_it() {
    let pool = small_pool();
    let buf = pool.copy_from(b"header|payload|trailer").unwrap();
    assert_eq!(buf.ref_count(), 1);

    let field = &buf[7..14];
    let recovered = pool.recover(field).expect("inside a live buffer");
    assert_eq!(&*recovered, b"payload");
    assert_eq!(recovered.as_ptr(), field.as_ptr(), "same bytes, not a copy");
    assert_eq!(recovered.len(), field.len());
    assert_eq!(buf.ref_count(), 2, "recover adds one reference");

    let whole = pool.recover(&buf).unwrap();
    assert_eq!(&*whole, &*buf);
    assert_eq!(buf.ref_count(), 3);

    drop(buf);
    assert_eq!(&*recovered, b"payload", "a recovered handle keeps the slot alive");
    assert_eq!(recovered.ref_count(), 2);
    drop((recovered, whole));
    assert_no_leaks(&pool);
}

#[test]
fn recovers_from_slices_and_clones() {
    let pool = small_pool();
    let buf = pool.copy_from(&[7; 300]).unwrap();
    let part = buf.slice(100..200);
    let again = pool.recover(&part[10..20]).unwrap();
    assert_eq!(again.as_ptr(), buf[110..120].as_ptr());
    assert_eq!(buf.ref_count(), 3);
}

#[test]
fn refuses_heap_and_static_memory() {
    let pool = small_pool();
    let heap = vec![1u8; 64];
    assert!(pool.recover(&heap).is_none());
    assert!(pool.recover(b"static").is_none());
    let on_stack = [0u8; 16];
    assert!(pool.recover(&on_stack).is_none());
}

#[test]
fn refuses_another_pools_buffer() {
    let pool = small_pool();
    let other = small_pool();
    let buf = other.copy_from(b"not yours").unwrap();
    assert!(pool.recover(&buf).is_none());
    assert_eq!(buf.ref_count(), 1);
}

#[test]
fn refuses_a_buffer_still_being_written() {
    let pool = small_pool();
    let mut buf = pool.alloc(64).unwrap();
    buf.extend_from_slice(b"not frozen yet");
    assert!(pool.recover(&buf).is_none(), "a BufMut's bytes may still change");
    let frozen = buf.freeze();
    assert!(pool.recover(&frozen).is_some());
}

#[test]
fn refuses_empty_slices() {
    let pool = small_pool();
    let buf = pool.copy_from(b"abc").unwrap();
    assert!(pool.recover(&buf[1..1]).is_none());
    assert_eq!(buf.ref_count(), 1);
}

#[test]
fn adjacent_slots_recover_separately() {
    let pool = small_pool();
    let a = pool.copy_from(&[1; 64]).unwrap();
    let b = pool.copy_from(&[2; 64]).unwrap();
    let (lo, hi) = if a.as_ptr() < b.as_ptr() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert_eq!(lo.as_ptr().addr() + 64, hi.as_ptr().addr(), "slots are packed");
    assert_eq!(pool.recover(&lo[63..]).unwrap()[0], lo[0]);
    assert_eq!(pool.recover(&hi[..1]).unwrap()[0], hi[0]);
    assert_eq!((a.ref_count(), b.ref_count()), (1, 1), "temporaries dropped");
}

#[test]
fn largest_class_recovers() {
    let pool = small_pool();
    let buf = pool.copy_from(&vec![3; REGION]).unwrap();
    let tail = pool.recover(&buf[REGION - 1..]).unwrap();
    assert_eq!(&*tail, &[3]);
}

#[test]
fn is_shared_answers_like_recover_without_counting() {
    let pool = common::small_pool();
    let buf = pool.copy_from(&[9u8; 100]).unwrap();
    assert!(pool.is_shared(&buf[10..20]));
    assert_eq!(buf.ref_count(), 1);
    assert!(!pool.is_shared(&[9u8; 100]), "heap memory");
    assert!(!pool.is_shared(&buf[..0]), "empty");
    let mut unique = pool.alloc(64).unwrap();
    unique.extend_from_slice(&[1; 64]);
    assert!(!pool.is_shared(&unique), "still being written");
    let frozen = unique.freeze();
    assert!(pool.is_shared(&frozen));
}
