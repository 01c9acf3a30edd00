//! `BufMut` and `SharedBuf` behaviour: writing, freezing, cloning, slicing, lifetime.

mod common;

use common::{all_bytes, assert_no_leaks, small_pool};

#[test]
fn bufmut_writes_and_reads() {
    let pool = small_pool();
    let mut buf = pool.alloc(10).unwrap();
    assert_eq!((buf.len(), buf.capacity()), (0, 64));
    buf.extend_from_slice(b"hello");
    buf.extend_from_slice(b", world");
    assert_eq!(&*buf, b"hello, world");
    buf[0] = b'H';
    assert_eq!(buf.as_ref(), b"Hello, world");

    assert!(buf.try_extend_from_slice(&[0; 53]).is_err());
    assert_eq!(buf.len(), 12, "a failed extend changes nothing");
    buf.try_extend_from_slice(&[b'!'; 52]).unwrap();
    assert_eq!(buf.len(), 64);
    assert!(buf.try_extend_from_slice(b"").is_ok());
    assert!(buf.try_extend_from_slice(b"x").is_err());
}

#[test]
fn capacity_mut_then_set_len() {
    let pool = small_pool();
    let mut buf = pool.alloc(100).unwrap();
    let capacity = buf.capacity();
    let spare = buf.capacity_mut();
    assert_eq!(spare.len(), capacity);
    spare[..4].copy_from_slice(b"abcd");
    buf.set_len(4);
    assert_eq!(&*buf, b"abcd");
    buf.set_len(capacity);
    buf.set_len(0);
    assert!(buf.is_empty());
}

#[test]
#[should_panic(expected = "exceeds capacity")]
fn set_len_past_capacity_panics() {
    let pool = small_pool();
    let mut buf = pool.alloc(64).unwrap();
    buf.set_len(65);
}

#[test]
#[should_panic(expected = "exceed capacity")]
fn extend_past_capacity_panics() {
    let pool = small_pool();
    let mut buf = pool.alloc(64).unwrap();
    buf.extend_from_slice(&[0; 65]);
}

#[test]
fn reused_slot_shows_old_bytes_not_garbage() {
    let pool = small_pool();
    drop(pool.copy_from(&[0xEE; 64]).unwrap());
    let mut buf = pool.alloc(64).unwrap();
    assert!(buf.is_empty(), "a new buffer starts empty");
    assert!(all_bytes(buf.capacity_mut(), 0xEE), "initialized, not zeroed");
}

#[test]
fn freeze_clone_slice() {
    let pool = small_pool();
    let buf = pool.copy_from(b"0123456789").unwrap();
    assert_eq!(buf.ref_count(), 1);
    let clone = buf.clone();
    assert_eq!(buf.ref_count(), 2);
    assert_eq!(clone.as_ptr(), buf.as_ptr());

    assert_eq!(&*buf.slice(2..5), b"234");
    assert_eq!(&*buf.slice(..3), b"012");
    assert_eq!(&*buf.slice(7..), b"789");
    assert_eq!(&*buf.slice(..=1), b"01");
    assert_eq!(&*buf.slice(..), b"0123456789");
    let empty = buf.slice(10..);
    assert!(empty.is_empty());
    assert_eq!(
        empty.as_ptr(),
        buf[10..].as_ptr(),
        "an empty slice at the end keeps its place"
    );
    assert_eq!(buf.ref_count(), 3, "temporaries dropped, `empty` holds one");
    let nested = buf.slice(2..8).slice(1..3);
    assert_eq!(&*nested, b"34");
    drop((buf, clone, empty, nested));
    assert_no_leaks(&pool);
}

#[test]
#[should_panic(expected = "out of range")]
fn slice_past_end_panics() {
    let pool = small_pool();
    let buf = pool.copy_from(b"abc").unwrap();
    let _ = buf.slice(2..4);
}

#[test]
#[should_panic(expected = "greater than end")]
fn decreasing_slice_panics() {
    let pool = small_pool();
    let buf = pool.copy_from(b"abc").unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    let _ = buf.slice(2..1);
}

#[test]
fn slice_ref_checks_containment() {
    let pool = small_pool();
    let buf = pool.copy_from(b"key=value").unwrap();
    let value = buf.slice_ref(&buf[4..]).unwrap();
    assert_eq!(&*value, b"value");
    assert_eq!(value.as_ptr(), buf[4..].as_ptr());
    assert!(buf.slice_ref(&buf[9..]).unwrap().is_empty());

    let part = buf.slice(0..3);
    assert!(
        part.slice_ref(&buf[2..5]).is_none(),
        "runs past the end of `part`"
    );
    assert!(part.slice_ref(&buf[4..]).is_none(), "starts past `part`");
    assert!(
        buf.slice_ref(b"key").is_none(),
        "equal bytes elsewhere do not count"
    );
    let other = pool.copy_from(b"key=value").unwrap();
    assert!(buf.slice_ref(&other).is_none());
    assert_eq!(buf.ref_count(), 3, "buf, value, part");
}

#[test]
fn dropping_the_original_keeps_clones_intact() {
    let pool = small_pool();
    let mut buf = pool.alloc(64).unwrap();
    buf.extend_from_slice(b"survives its first owner");
    let first = buf.freeze();
    let clone = first.slice(0..8);
    drop(first);
    // Allocations that could reuse the slot must not get it while `clone` lives.
    let others: Vec<_> = (0..8).map(|i| pool.copy_from(&[i; 64]).unwrap()).collect();
    assert!(others.iter().all(|o| o.as_ptr() != clone.as_ptr()));
    assert_eq!(&*clone, b"survives");
    assert_eq!(clone.ref_count(), 1);
    assert_eq!(pool.stats().buffers_outstanding(), 9);
    drop((clone, others));
    assert_no_leaks(&pool);
}

#[test]
fn dropped_bufmut_returns_its_slot() {
    let pool = small_pool();
    let buf = pool.alloc(64).unwrap();
    assert_eq!(pool.stats().buffers_outstanding(), 1);
    drop(buf);
    assert_no_leaks(&pool);
}

#[test]
fn into_bytes_keeps_data_alive_until_dropped() {
    let pool = small_pool();
    let buf = pool.copy_from(b"handed to bytes").unwrap();
    let ptr = buf.as_ptr();
    let bytes = buf.slice(0..6).into_bytes();
    drop(buf);
    assert_eq!(&bytes[..], b"handed");
    assert_eq!(bytes.as_ptr(), ptr, "no copy");
    let bytes_clone = bytes.clone();
    let sub = bytes.slice(1..3);
    drop(bytes);
    assert_eq!(pool.stats().buffers_outstanding(), 1);
    assert_eq!(&bytes_clone[..], b"handed");
    drop(bytes_clone);
    assert_eq!(&sub[..], b"an");
    drop(sub);
    assert_no_leaks(&pool);
}

#[test]
fn debug_output_names_the_buffer() {
    let pool = small_pool();
    let buf = pool.copy_from(b"abc").unwrap();
    let text = format!("{buf:?}");
    assert!(text.contains("len: 3") && text.contains("ref_count: 1"), "{text}");
    assert!(format!("{:?}", pool.alloc(1).unwrap()).contains("capacity: 64"));
    assert!(format!("{pool:?}").starts_with("Pool"));
}

/// `try_into_mut`: the whole slot back for writing only while no other handle exists; a
/// buffer being written again is not recoverable, and its memory is the same slot.
#[test]
fn try_into_mut_only_for_the_last_handle() {
    let pool = small_pool();
    let mut buf = pool.alloc(100).unwrap();
    buf.extend_from_slice(b"hello, world");
    let slot = buf.as_ptr();
    let shared = buf.freeze();
    let world = shared.slice(7..12);
    let recovered = pool.recover(&shared[0..5]).unwrap();
    let shared = shared.try_into_mut().unwrap_err();
    drop(recovered);
    let shared = shared.try_into_mut().unwrap_err();
    drop(shared);
    // The last handle is a slice: the whole slot comes back, empty.
    let mut again = world.try_into_mut().unwrap();
    assert_eq!((again.len(), again.as_ptr()), (0, slot));
    assert!(
        pool.recover(&again.capacity_mut()[..5]).is_none(),
        "being written"
    );
    again.extend_from_slice(b"bye");
    assert_eq!(&*again.freeze(), b"bye");
    assert_no_leaks(&pool);
}
