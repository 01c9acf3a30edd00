//! Regression: a `Schema` leaked every descriptor it built (`Box::leak`), so a server that
//! reloads its schemas grew by the size of its schemas on every reload.
//!
//! A counting global allocator tracks the live heap bytes of each thread; loading, using and
//! dropping a schema many times must bring the test thread's back to where they were. Per
//! thread, because the harness's own thread allocates too (its bookkeeping of the running
//! test), whenever the scheduler lets it: on a busy machine, while this test measures.
// The counting allocator forwards to `System`: the only unsafe code here.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ferry_reflect::{Schema, json, protobuf};
use ferry_wire::{Context, DynamicMessage, Limits, Outgoing, Value, View};

thread_local! {
    /// Heap bytes this thread allocated and has not freed (a `const` cell: using it allocates
    /// nothing, and it has no destructor).
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Adds `n` to this thread's live bytes.
fn count(n: isize) {
    LIVE.with(|live| live.set(live.get() + n));
}

/// This thread's live heap bytes.
fn live() -> isize {
    LIVE.with(Cell::get)
}

struct Counting;

// SAFETY: every call is forwarded to `System` with the caller's arguments; the counter is
// only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const PROTO: &str = r#"syntax = "proto3"; package t;
import "google/protobuf/timestamp.proto";
message Node {
  int32 value = 1;
  Node next = 2;
  repeated Node children = 3;
  map<string, Node> by_name = 4;
  google.protobuf.Timestamp at = 5;
  oneof pick { string name = 6; bytes blob = 7; }
}
"#;

/// Loads the schema, uses its descriptors the ways a gateway does (dynamic message, encode,
/// view, JSON, protobuf), drops it all. Returns this thread's live bytes while the schema was
/// alive.
fn load_use_drop(dir: &std::path::Path) -> isize {
    let schema = Schema::load(&[dir.join("node.proto")], &[dir]).unwrap();
    let desc = schema.message("t.Node").unwrap();
    let md = schema.descriptor("t.Node").unwrap();
    let mut inner = DynamicMessage::new(desc);
    inner.set(1, Value::I32(-5)).unwrap();
    let mut outer = DynamicMessage::new(desc);
    outer.set(2, Value::Message(inner)).unwrap();
    let bytes = outer.to_vec().unwrap();
    let view = View::decode(&bytes, desc, &Limits::default()).unwrap();
    let back = DynamicMessage::from_view(&view, Context::copy_only()).unwrap();
    assert!(back == outer);
    let mut text = String::new();
    json::to_json(&md, &back, &mut text);
    let parsed = json::from_json(&md, desc, &serde_json::from_str(&text).unwrap()).unwrap();
    assert!(parsed == outer);
    let wire = protobuf::encode(&md, &back);
    let again = protobuf::decode(&md, desc, &wire, Context::copy_only(), &Default::default()).unwrap();
    assert!(again == outer);
    live()
}

#[test]
fn reloading_a_schema_frees_its_descriptors() {
    const RELOADS: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("node.proto"), PROTO).unwrap();
    // Once first: process-wide lazy state (the copy-only context, protox's built-in files)
    // is allocated on first use and kept.
    load_use_drop(dir.path());

    let baseline = live();
    let mut alive = 0;
    for _ in 0..RELOADS {
        alive = load_use_drop(dir.path());
    }
    let after = live();
    // The counter sees the schema (pool and descriptors) while it lives...
    assert!(
        alive - baseline > 4096,
        "a live schema holds {} bytes",
        alive - baseline
    );
    // ...and nothing of it once it is dropped.
    assert_eq!(
        after - baseline,
        0,
        "{RELOADS} reloads left {} bytes allocated",
        after - baseline
    );
}
